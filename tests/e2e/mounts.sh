#!/bin/bash
# mounts.sh - savefs mounts lists this user's savefs mounts (mount point,
# location, format, pid, mode) and savefs umount ends them: the daemon's
# last commits waited for and its result said (exit 0, or its status and
# what it could not write), a busy mount left mounted, --all.
#
# Run in a mount namespace of its own: --all then unmounts this script's
# mounts and only copies of the others' (scripts running beside it), whose
# daemons go on.

if [ -z "${SV_MOUNTS_NS:-}" ]; then
	exec env SV_MOUNTS_NS=1 unshare -m --propagation private "$0" "$@"
fi

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
: "${FAULTSHIM:=$SRC_ROOT/build/tests/libfaultshim.so}"
[ -f "$FAULTSHIM" ] || die "FAULTSHIM=$FAULTSHIM is not built"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"

W=$(realpath -- "$TMP")/w
mkdir -p "$W/folder"
"$MKDATAFILE" gen "$W/c1.map" --data 4 --payload 20K --items 3 --seed 5 || die "mkdatafile failed"
"$MKDATAFILE" gen "$W/c3.map" --data 4 --payload 20K --items 3 --seed 6 || die "mkdatafile failed"
"$MKDATAFILE" gen "$W/folder/inside.map" --data 2 --payload 5K --items 2 --seed 7 ||
	die "mkdatafile failed"
printf 'a new item 0\n' > "$W/new0"

not() { ! "$@"; }

# ours: savefs mounts, this script's lines only.
ours() { "$SAVEFS" mounts | grep -F "$W/"; }

# reaped MNT: the daemon of MNT, ended by savefs umount, waited for; its
# exit status into STATUS.
reaped()
{
	local m=$1 pid=${SV_PID[$1]}
	unset "SV_PID[$m]"
	wait "$pid"
	STATUS=$?
	san_check "savefs daemon on $m" "${SV_LOG[$m]}"
}

M1=$W/m1
M2=$W/m2
M3=$W/m3
mount_sv "$W/c1.map" "$M1" || die "cannot mount c1.map"
mount_sv "$W/folder" "$M2" -o ro || die "cannot mount the folder"
expect_eq "savefs mounts: each mount, its location, format, pid and mode" \
	"$M1"$'\t'"$W/c1.map"$'\t'datafile$'\t'"${SV_PID[$M1]}"$'\t'rw$'\n'"$M2"$'\t'"$W/folder"$'\t'folder$'\t'"${SV_PID[$M2]}"$'\t'ro \
	"$(ours)"
"$SAVEFS" mounts extra > /dev/null 2> "$W/err"
expect_eq "savefs mounts takes no argument: exit 2" 2 $?
expect_eq "and says so" "savefs: mounts takes no argument (see savefs --help)" "$(cat "$W/err")"

# A mount in use stays mounted, and says so.
exec 3< "$M1/header.json"
"$SAVEFS" umount "$M1" > "$W/out" 2> "$W/err"
expect_eq "a busy mount: savefs umount exits 1" 1 $?
check "fusermount3's reason is passed on" grep -q 'Device or resource busy' "$W/err"
check "and savefs's own" grep -qxF "savefs: $M1: not unmounted" "$W/err"
check "it is still mounted" is_mounted "$M1"
exec 3<&-

# An edit, then the unmount: the daemon waited for, its result said.
cp -- "$W/new0" "$M1/data/00000.bin" || fail "cp onto data/00000.bin"
"$SAVEFS" umount "$M1" > "$W/out" 2> "$W/err"
expect_eq "savefs umount: exit 0" 0 $?
expect_eq "savefs umount: what it says" "$M1: unmounted, every edit written" "$(cat "$W/out")"
expect_eq "savefs umount: nothing on stderr" "" "$(cat "$W/err")"
check "it is unmounted" not is_mounted "$M1"
check "its daemon had ended when it returned" not kill -0 "${SV_PID[$M1]}" 2> /dev/null
reaped "$M1"
expect_eq "the daemon's own status" 0 "$STATUS"
"$SAVEFS" cat "$W/c1.map" data/00000.bin > "$W/got0"
expect_same_file "the edit is in the container" "$W/new0" "$W/got0"
expect_eq "savefs mounts: the one left" \
	"$M2"$'\t'"$W/folder"$'\t'folder$'\t'"${SV_PID[$M2]}"$'\t'ro "$(ours)"

# An edit that could not be written (its commit failed at a release, where
# no close could say so): savefs umount says what, and exits 8.
mount_shim "$W/c3.map" "$M3" SVF_ARM="$W/arm" SVF_FAIL=fsync SVF_MATCH=.c3.map.savefs- SVF_KEEP=1 ||
	die "cannot mount c3.map with the shim"
touch "$W/arm"
: > "$M3/data/00002.bin"
wait_for "the failed commit in the log" grep -q 'not written data/00002.bin' "$M3/.savefs/log"
rm -f -- "$W/arm"
"$SAVEFS" umount "$M3" > "$W/out" 2> "$W/err"
expect_eq "an edit not written: savefs umount exits 8" 8 $?
expect_eq "its first line" "savefs: $M3: unmounted; its daemon ended with status 8:" \
	"$(head -n 1 "$W/err")"
check "then the file and why" grep -q \
	"^  data/00002.bin: not written: fsync $W/.c3.map.savefs-.*: Input/output error\$" "$W/err"
reaped "$M3"
expect_eq "the daemon's own status" 8 "$STATUS"

# Not a savefs mount.
"$SAVEFS" umount "$W" > /dev/null 2> "$W/err"
expect_eq "not a savefs mount: exit 7" 7 $?
expect_eq "and says so" "savefs: $W: not a savefs mount" "$(cat "$W/err")"
"$SAVEFS" umount > /dev/null 2>&1
expect_eq "umount with nothing: exit 2" 2 $?

# --all: every mount of this user (here: ours, and copies of the others').
mount_sv "$W/c1.map" "$M1" || die "cannot mount c1.map again"
"$SAVEFS" umount --all > "$W/out" 2> "$W/err"
expect_eq "savefs umount --all: exit 0" 0 $?
check "it says each of ours" grep -qxF "$M1: unmounted, every edit written" "$W/out"
check "and the folder" grep -qxF "$M2: unmounted, every edit written" "$W/out"
reaped "$M1"
expect_eq "the first daemon's status" 0 "$STATUS"
reaped "$M2"
expect_eq "the folder's daemon's status" 0 "$STATUS"
expect_eq "savefs mounts: none of ours left" "" "$(ours)"
rundir=/tmp/savefs-$(id -u)
[ -d "/run/user/$(id -u)" ] && rundir=/run/user/$(id -u)/savefs
for m in "$M1" "$M2" "$M3"; do
	check "no note of a daemon left for $m" not grep -rqF "\"$m\"" "$rundir"
done

finish
