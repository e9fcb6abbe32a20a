#!/bin/bash
# inplace.sh - failures inside a Starbound commit in place (copy-on-write
# blocks, a root written, a flip), made with the fault shim:
#   - a full disk (ENOSPC on a block write, or at the sync after the file
#     grew): close() says ENOSPC, the mount
#     and the file keep the old tree, the file keeps its size, and the next
#     edit of another file commits (savefs's own failed attempt is not
#     taken for another program's change);
#   - the sync after the flip fails: the flip is put back, so close()'s
#     EIO is true: the file holds the old tree, as the mount shows.
# After each, the file passes the independent reader's loader rules.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKSBDB" ] || die "MKSBDB=$MKSBDB is not an executable (build first)"
: "${FAULTSHIM:=$SRC_ROOT/build/tests/libfaultshim.so}"
[ -f "$FAULTSHIM" ] || die "FAULTSHIM=$FAULTSHIM is not built"
# The shim comes before the sanitizer runtime in a sanitized daemon.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"
SBDECODE="$SRC_ROOT/tests/tools/sbdecode.py"
W=$TMP/w
mkdir -p "$W"


# edited SRC DST N: DST is SRC with its first "version" set to N.
edited()
{
	sed "0,/\"version\": [0-9]*/s//\"version\": $3/" "$1" > "$2"
}

loader_ok()
{
	CHECKS=$((CHECKS + 1))
	"$PYTHON" "$SBDECODE" check "$2" > "$TMP/dec.out" 2>&1 ||
		fail "$1: the independent reader rejects the file: $(head -3 "$TMP/dec.out")"
}

# fault NAME SVF-SETTINGS... : one run; EXPECT is what close() says.
fault()
{
	local label=$1 want=$2
	shift 2
	local d=$W/$label
	mkdir -p "$d"
	"$MKSBDB" world "$d/w.world" -c 3 || die "mksbdb"
	local M=$d/m
	mount_shim "$d/w.world" "$M" SVF_ARM="$d/arm" SVF_MATCH=w.world "$@" || return
	local A B
	A=$(cd "$M/world/entities" && ls | sed -n 1p)
	B=$(cd "$M/world/entities" && ls | sed -n 2p)
	cp "$M/world/entities/$A" "$d/a0"
	cp "$M/world/entities/$B" "$d/b0"
	edited "$d/a0" "$d/a1" 7
	edited "$d/b0" "$d/b1" 8
	local size
	size=$(stat -c %s "$d/w.world")
	touch "$d/arm"
	expect_eq "$label: close() of the edit says" "$want" \
		"$(py_write "$M/world/entities/$A" "$d/a1")"
	check "$label: the shim acted" test ! -e "$d/arm"
	expect_same_file "$label: the mount shows the old entities" "$d/a0" "$M/world/entities/$A"
	log_has "$label: the log says the file was read again" \
		"was read again after the failed commit"
	expect_eq "$label: the file keeps its size" "$size" "$(stat -c %s "$d/w.world")"
	loader_ok "$label: after the failure" "$d/w.world"
	expect_eq "$label: an edit of another sector then commits" ok \
		"$(py_write "$M/world/entities/$B" "$d/b1")"
	local m
	m=$(realpath -- "$M")
	stop_daemon "$m" clean
	expect_eq "$label: the daemon exits 0" 0 "$?"
	loader_ok "$label: after the second edit" "$d/w.world"
	mount_sv "$d/w.world" "$M" || return
	expect_same_file "$label: after a remount, the failed edit is not there" \
		"$d/a0" "$M/world/entities/$A"
	expect_same_file "$label: after a remount, the other edit is" "$d/b1" "$M/world/entities/$B"
	umount_sv "$M"
}

# ---- the game's lock, and another writer ------------------------------------

# A FIFO named universe.lock: refused at once with the reason; the mount
# keeps answering.
d=$W/fifo
mkdir -p "$d"
"$MKSBDB" world "$d/w.world" -c 1 || die "mksbdb"
mkfifo "$d/universe.lock"
M=$d/m
mount_sv "$d/w.world" "$M" || die "mount"
E=$(cd "$M/world/entities" && ls | sed -n 1p)
edited "$M/world/entities/$E" "$d/e1" 5
py_write "$M/world/entities/$E" "$d/e1" > "$d/result" &
writer=$!
for _ in $(seq 600); do kill -0 "$writer" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$writer" 2> /dev/null; then
	fail "a FIFO for universe.lock: the commit hangs on it"
	(: > "$d/universe.lock") &  # a writer lets it go
fi
wait "$writer"
expect_eq "a FIFO for universe.lock: the edit is refused" "close EPERM" "$(cat "$d/result")"
log_has "a FIFO for universe.lock: the reason" "universe.lock is not a regular file (a FIFO)"
check "a FIFO for universe.lock: listings answer" timeout 60 ls "$M/world"
check "a FIFO for universe.lock: the log answers" timeout 60 cat "$M/.savefs/log"
umount_sv "$M"

# A universe's directory without a lock: savefs creates it and holds it;
# a ship in player/ takes ../universe/universe.lock, which a running game
# holds: refused.
d=$W/tree
mkdir -p "$d/universe" "$d/player"
"$MKSBDB" world "$d/universe/w.world" -c 1 || die "mksbdb"
"$MKSBDB" world "$d/player/s.shipworld" -c 1 || die "mksbdb"
: > "$d/universe/universe.dat"
M=$d/m
mount_sv "$d/universe/w.world" "$M" || die "mount"
E=$(cd "$M/world/entities" && ls | sed -n 1p)
edited "$M/world/entities/$E" "$d/e1" 5
expect_eq "a universe without its lock: the edit commits" ok \
	"$(py_write "$M/world/entities/$E" "$d/e1")"
check "a universe without its lock: savefs made universe.lock" test -f "$d/universe/universe.lock"
umount_sv "$M"
"$PYTHON" -c 'import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close(); time.sleep(60)' "$d/universe/universe.lock" "$d/held" &
game=$!
for _ in $(seq 600); do [ -e "$d/held" ] && break; sleep 0.1; done
mount_sv "$d/player/s.shipworld" "$M" || die "mount"
E=$(cd "$M/world/entities" && ls | sed -n 1p)
edited "$M/world/entities/$E" "$d/e2" 6
expect_eq "a ship while the game holds ../universe/universe.lock: refused" "close EBUSY" \
	"$(py_write "$M/world/entities/$E" "$d/e2")"
log_has "the reason names the lock" "the game or a server holds $d/player/../universe/universe.lock"
umount_sv "$M"
kill "$game" 2> /dev/null
wait "$game" 2> /dev/null

# Another program that saves without the lock while savefs's blocks are
# written (held before their sync): its header and its blocks stay, and
# nothing is flipped over them.
d=$W/race
mkdir -p "$d"
"$MKSBDB" world "$d/w.world" -c 3 || die "mksbdb"
M=$d/m
mount_shim "$d/w.world" "$M" SVF_ARM="$d/arm" SVF_MATCH=w.world SVF_PAUSE=fdatasync \
	SVF_DIR="$d" || die "mount"
E=$(cd "$M/world/entities" && ls | sed -n 1p)
cp "$M/world/entities/$E" "$d/e0"
edited "$d/e0" "$d/e1" 7
touch "$d/arm"
py_write "$M/world/entities/$E" "$d/e1" > "$d/result" &
writer=$!
for _ in $(seq 600); do [ -e "$d/reached" ] && break; sleep 0.1; done
check "the commit was held before its sync" test -e "$d/reached"
# The other program: a block at the end, and its root written in the
# inactive slot (bytes 33..49), as a save that has not flipped yet.
"$PYTHON" - "$d/w.world" << 'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(0, 2)
    f.write(b'\x55' * 2048)
    f.seek(40)
    f.write(b'\x01\x02\x03')
PY
cp "$d/w.world" "$d/theirs"
touch "$d/go"
wait "$writer"
expect_eq "another writer during the commit: refused" "close EBUSY" "$(cat "$d/result")"
check "its bytes are left as it made them" cmp -s "$d/theirs" "$d/w.world"
log_has "the reason" "another program wrote to the database during the commit"
stop_daemon "$(realpath -- "$M")" clean

# ---- a recording directory: the sync after the preamble's rename fails -------
# The old preamble is put back: the close's EIO is true, the mount and the
# directory keep the old metadata.
d=$W/rec
mkdir -p "$d"
"$MKRECORDING" segmented "$d/seg" -n 300 -e 3 -s 3 -S 2 || die "mkrecording"
cp "$d/seg/preamble.dat" "$d/preamble0"
M=$d/m
# Counted: the new preamble's fsync (1), the directory's (2).
mount_shim "$d/seg" "$M" SVF_ARM="$d/arm" SVF_MATCH=/seg SVF_FAIL=fsync SVF_NTH=2 || die "mount"
cp "$M/metadata.snbt" "$d/meta0"
printf '{name:"changed"}\n' > "$d/meta1"
touch "$d/arm"
expect_eq "recording: the directory's sync fails: close says" "close EIO" \
	"$(py_write "$M/metadata.snbt" "$d/meta1")"
check "recording: the shim acted" test ! -e "$d/arm"
check "recording: the old preamble is back" cmp -s "$d/preamble0" "$d/seg/preamble.dat"
expect_same_file "recording: the mount shows the old metadata" "$d/meta0" "$M/metadata.snbt"
log_has "recording: the log says it is as it was" "(preamble.dat is as it was)"
check "recording: no temporary file is left" test -z "$(find "$d/seg" -name '*.tmp')"
expect_eq "recording: the next edit commits" ok "$(py_write "$M/metadata.snbt" "$d/meta1")"
stop_daemon "$(realpath -- "$M")" clean
mount_sv "$d/seg" "$M" || die "mount"
check "recording: after a remount, the second edit" grep -q '"changed"' "$M/metadata.snbt"
umount_sv "$M"

# ---- a listing never waits for a stream's size ---------------------------------
# The decode that sizes timeline.txt is held (its first read of a chunk);
# ls -l of the root, and of timeline.txt itself, answer meanwhile.
d=$W/lsl
mkdir -p "$d"
"$MKRECORDING" compacted "$d/r.hcrp" -n 300 -e 3 -s 3 -z 3 || die "mkrecording"
M=$d/m
mount_shim "$d/r.hcrp" "$M" SVF_ARM="$d/arm" SVF_MATCH=r.hcrp SVF_PAUSE=pread \
	SVF_DIR="$d" || die "mount"
touch "$d/arm"
check "ls -l of a recording's root answers while its timeline is being sized" \
	timeout 15 ls -l "$M"
for _ in $(seq 600); do [ -e "$d/reached" ] && break; sleep 0.1; done
check "the decode that sizes it is held" test -e "$d/reached"
check "stat of timeline.txt answers meanwhile" timeout 15 stat "$M/timeline.txt"
check "ls -l of the root again" timeout 15 ls -l "$M"
touch "$d/go"
check "timeline.txt reads whole" cmp <(sv cat "$d/r.hcrp" timeline.txt) "$M/timeline.txt"
stop_daemon "$(realpath -- "$M")" clean

fault enospc "close ENOSPC" SVF_FAIL=pwrite SVF_ERRNO=28
# A full disk found at the sync, after the file grew (delayed allocation).
fault enospc-sync "close ENOSPC" SVF_FAIL=fdatasync SVF_NTH=1 SVF_ERRNO=28
fault flip-sync "close EIO" SVF_FAIL=fdatasync SVF_NTH=3
finish
