#!/bin/bash
# daemon.sh - the daemon's behaviour around the commit path: clean stops by
# signal (a relative mount point, in the foreground and daemonised), modes
# and owners from the container and enforced for other users, a second
# read-write mount and a busy mount point refused, files the container
# does not take named when discarded, per-file mtimes, a read-only mount
# said in /.savefs/info, counts and modes as the mount shows them.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"

W=$TMP/w
mkdir -p "$W"
"$MKDATAFILE" gen "$W/base.map" --data 4 --payload 10K --items 3 --seed 8 || die "mkdatafile failed"
printf 'an edit\n' > "$W/edit"

# wait_gone PID: waits (bounded) for a process to end; its status in RC.
wait_gone()
{
	local i
	for i in $(seq 1200); do
		kill -0 "$1" 2> /dev/null || break
		sleep 0.05
	done
	RC=255
	kill -0 "$1" 2> /dev/null && return 1
	wait "$1" 2> /dev/null
	RC=$?
	return 0
}

# ---- stops by signal, with a relative mount point ---------------------------------

for sig in INT TERM; do
	d=$W/stop-$sig
	mkdir -p "$d/m"
	cp -- "$W/base.map" "$d/c.map"
	# A background job of a script ignores SIGINT unless told otherwise.
	(cd "$d" && exec env --default-signal=INT "$SAVEFS" -f c.map m 2> daemon.log) &
	pid=$!
	for i in $(seq 1200); do [ -e "$d/m/.savefs/info" ] && break; sleep 0.05; done
	check "SIG$sig: mounted" test -e "$d/m/.savefs/info"
	# An edit still open when the signal comes: it is pending.
	"$PYTHON" - "$d/m/data/00001.bin" "$d/held" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'pending edit\n')
open(sys.argv[2], 'w').close()
time.sleep(3)
PY
	holder=$!
	for i in $(seq 1200); do [ -e "$d/held" ] && break; sleep 0.05; done
	kill -"$sig" "$pid"
	wait_gone "$pid"
	expect_eq "SIG$sig on savefs -f: exit status" 0 "$RC"
	check "SIG$sig: no mount is left (dead or alive)" sh -c "! grep -q ' $d/m ' /proc/mounts"
	check "SIG$sig: the mount point is an empty directory again" test -z "$(ls -A "$d/m")"
	expect_eq "SIG$sig: the pending edit was committed" "pending edit" \
		"$(sv cat "$d/c.map" data/00001.bin)"
	kill "$holder" 2> /dev/null
	wait "$holder" 2> /dev/null
done

# A daemonised savefs (it leaves the working directory) stopped by SIGTERM.
d=$W/stop-daemon
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
(cd "$d" && "$SAVEFS" c.map m) || fail "daemonised mount failed"
check "daemonised: mounted" test -e "$d/m/.savefs/info"
py_write "$d/m/data/00002.bin" "$W/edit" > /dev/null
pid=$(pgrep -f "^$SAVEFS c.map m$" | head -1)
check "daemonised: its pid is found" test -n "$pid"
[ -n "$pid" ] && kill -TERM "$pid"
for i in $(seq 1200); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
check "daemonised, SIGTERM: the daemon is gone" sh -c "! kill -0 $pid 2> /dev/null"
check "daemonised, SIGTERM: no mount is left" sh -c "! grep -q ' $d/m ' /proc/mounts"
expect_same_file "daemonised, SIGTERM: the edit is in the container" "$W/edit" \
	<(sv cat "$d/c.map" data/00002.bin)

# ---- modes and owners; other users -------------------------------------------------

d=$W/perm
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
chmod 0640 "$d/c.map"
mount_sv "$d/c.map" "$d/m" || die "mount failed"
expect_eq "a 0640 container: a file's mode" "-rw-r----- 0:0" "$(stat -c '%A %u:%g' "$d/m/data/00000.bin")"
expect_eq "a 0640 container: a view's mode" "-r--r-----" "$(stat -c %A "$d/m/header.json")"
expect_eq "a 0640 container: a directory's mode" "drwxr-x---" "$(stat -c %A "$d/m/data")"
umount_sv "$d/m"
# savefs ls opens the container read-only: it shows what a read-only mount
# shows, every file and directory.
mount_sv "$d/c.map" "$d/m" -o ro || die "mount failed"
expect_eq "savefs ls -lR shows the modes a read-only mount shows" \
	"$(cd "$d/m" && find . -mindepth 1 -path ./.savefs -prune -o -printf '%M %P\n' | sort)" \
	"$(sv ls -lR "$d/c.map" | awk '{ p = $3; sub(/\/$/, "", p); print $1, p }' | sort)"
umount_sv "$d/m"

if id nobody > /dev/null 2>&1 && command -v runuser > /dev/null; then
	chmod 0600 "$d/c.map"
	mount_sv "$d/c.map" "$d/m" -o allow_other || die "mount failed"
	chmod 0755 "$W" "$d" "$TMP"
	out=$(runuser -u nobody -- cat "$d/m/data/00000.bin" 2>&1 > /dev/null)
	expect_eq "allow_other, a 0600 container: another user cannot read" \
		"cat: $d/m/data/00000.bin: Permission denied" "$out"
	out=$(runuser -u nobody -- sh -c "printf x > '$d/m/data/00000.bin'" 2>&1)
	check "allow_other, a 0600 container: another user cannot write ($out)" \
		sh -c "echo '$out' | grep -q 'Permission denied'"
	umount_sv "$d/m"
	chmod 0644 "$d/c.map"
	mount_sv "$d/c.map" "$d/m" -o allow_other || die "mount failed"
	check "allow_other, a 0644 container: another user reads" \
		runuser -u nobody -- sh -c "cat '$d/m/data/00000.bin' > /dev/null"
	out=$(runuser -u nobody -- sh -c "printf x > '$d/m/data/00000.bin'" 2>&1)
	check "allow_other, a 0644 container: another user cannot write ($out)" \
		sh -c "echo '$out' | grep -q 'Permission denied'"
	umount_sv "$d/m"
	check "another user changed nothing" cmp -s "$W/base.map" "$d/c.map"
else
	fail "no user nobody or no runuser: other users cannot be tried"
fi

# ---- a second mount ----------------------------------------------------------------

d=$W/second
mkdir -p "$d/m" "$d/m2"
cp -- "$W/base.map" "$d/c.map"
mount_sv "$d/c.map" "$d/m" || die "mount failed"
"$SAVEFS" -f "$d/c.map" "$d/m2" > /dev/null 2> "$d/err" < /dev/null
expect_eq "a second read-write mount: exit 3" 3 "$?"
expect_eq "a second read-write mount: the message" \
	"savefs: $d/c.map: mounted read-write by another savefs (or locked by another program): unmount that first, or mount with -o ro" \
	"$(cat "$d/err")"
mount_sv "$d/c.map" "$d/m2" -o ro || fail "a read-only second mount failed"
check "a read-only second mount reads" cmp -s <(cat "$d/m/data/00000.bin") "$d/m2/data/00000.bin"
umount_sv "$d/m2"
"$SAVEFS" -f -o ro "$W/base.map" "$d/m" > /dev/null 2> "$d/err" < /dev/null
expect_eq "a mount over a busy mount point: exit 6" 6 "$?"
expect_eq "a mount over a busy mount point: the message" \
	"savefs: cannot mount on $d/m: something is mounted there already (unmount it first: fusermount3 -u $d/m)" \
	"$(cat "$d/err")"

# ---- files the container does not take ---------------------------------------------

printf 'notes\n' > "$d/m/notes.txt"
check "the log says a file is kept in memory only" grep -q \
	"notes.txt is not a name the container takes: it is kept in memory only, and discarded at unmount unless it is renamed onto an entry" \
	"$d/m/.savefs/log"
log=${SV_LOG[$(realpath "$d/m")]}
umount_sv "$d/m"
check "at unmount, the daemon names the discarded file" grep -qx \
	"savefs: notes.txt was not part of the container and was discarded" "$log"

# ---- per-file times ------------------------------------------------------------------

d=$W/times
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
touch -d '2020-02-02 20:20:20' "$d/c.map"
mount_sv "$d/c.map" "$d/m" || die "mount failed"
expect_eq "an untouched file has the container's mtime" "2020-02-02 20:20:20" \
	"$(stat -c %y "$d/m/data/00003.bin" | cut -d. -f1)"
touch "$d/ref"
sleep 1.1
py_write "$d/m/data/00001.bin" "$W/edit" > /dev/null
expect_eq "find -newer: only what the commit changed" "./data/00001.bin ./header.json" \
	"$(cd "$d/m" && find . -path ./.savefs -prune -o -type f -newer "$d/ref" -print | sort | paste -sd' ')"
expect_eq "an untouched file keeps the container's old mtime after a commit" \
	"2020-02-02 20:20:20" "$(stat -c %y "$d/m/data/00003.bin" | cut -d. -f1)"
umount_sv "$d/m"

# ---- a container savefs cannot write -------------------------------------------------

d=$W/rofs
mkdir -p "$d/src" "$d/ro" "$d/m"
cp -- "$W/base.map" "$d/src/c.map"
if mount --bind "$d/src" "$d/ro" 2> /dev/null && mount -o remount,bind,ro "$d/ro" 2> /dev/null; then
	mount_sv "$d/ro/c.map" "$d/m" || die "mount failed"
	check "/.savefs/info warns that the mount is read-only" grep -q \
		"$d/ro/c.map cannot be written (Read-only file system): mounted read-only" "$d/m/.savefs/info"
	expect_eq "and says read_only" '"read_only": true,' "$(grep -o '"read_only": [a-z]*,' "$d/m/.savefs/info")"
	umount_sv "$d/m"
	umount "$d/ro"
else
	fail "cannot make a read-only bind mount for the read-only case"
	umount "$d/ro" 2> /dev/null
fi

# ---- counts as the mount shows them --------------------------------------------------

d=$W/counts
mkdir -p "$d/m"
"$MKDOODLE" level "$d/a.level" --count 3 --seed 1 > /dev/null || die "mkdoodle failed"
"$MKDOODLE" level "$d/b.level" --count 2 --seed 2 > /dev/null || die "mkdoodle failed"
"$MKDOODLE" pack "$d/p.levelpack" "$d/a.level" "$d/b.level" > /dev/null || die "mkdoodle failed"
info=$(sv info "$d/p.levelpack")
mount_sv "$d/p.levelpack" "$d/m" -o ro || die "mount failed"
files=$(cd "$d/m" && find . -mindepth 1 -path ./.savefs -prune -o -type f -print | wc -l)
dirs=$(cd "$d/m" && find . -mindepth 1 -path ./.savefs -prune -o -type d -print | wc -l)
expect_eq "savefs info counts the files the mount shows" "\"files\": $files," \
	"$(echo "$info" | grep -o '"files": [0-9]*,')"
expect_eq "savefs info counts the directories the mount shows" "\"directories\": $dirs," \
	"$(echo "$info" | grep -o '"directories": [0-9]*,')"
umount_sv "$d/m"

# ---- restoring a backup into a mount ---------------------------------------------------

# change_level MNT: edits, removes and adds entries of a mounted level.
change_level()
{
	local m=$1 a b
	a=$(cd "$m/chunks/0" && ls -- *.txt | head -1)
	b=$(cd "$m/chunks/0" && ls -- *.txt | sed -n 2p)
	sed -i '$s/./0/g' "$m/chunks/0/$a" || fail "restore: sed -i of a chunk failed"
	rm -- "$m/chunks/0/$b" || fail "restore: rm of a chunk failed"
	sed -i 's/"title": "[^"]*"/"title": "changed"/' "$m/level.json" || fail "restore: sed -i level.json failed"
	printf 'other bytes\n' > "$m/assets/screenshots/large.png"
}

# change_map MNT: edits and removes entries of a mounted map.
change_map()
{
	local m=$1
	printf '\007\000\000\000' > "$m/items/5-layer/00000.bin"
	printf 'new data\n' > "$m/data/00001.bin"
	rm -- "$m/items/5-layer/00001.bin" || fail "restore: rm of an item failed"
}

# restore LABEL CONTAINER CHANGE HOW: backs the mounted tree up, changes
# it, restores it with HOW (tar or rsync), and checks every file of the
# backup reads as backed up, in the mount and after a remount.
restore()
{
	local label=$1 c=$2 change=$3 how=$4 d=$W/restore-$1-$4
	mkdir -p "$d/m" "$d/b"
	cp -- "$c" "$d/c${c##*/}"
	c=$d/c${c##*/}
	# A save older than the restore: rsync's quick check compares whole
	# seconds, and a change in the very second of the container's mtime,
	# at the same size, would be skipped (on any file system).
	touch -d '2020-01-01 12:00:00' "$c"
	mount_sv "$c" "$d/m" || return
	tree_listing "$d/m" > "$d/before.tree"
	if [ "$how" = tar ]; then
		tar -cf "$d/backup.tar" -C "$d/m" --exclude=./.savefs . || fail "$label: tar c failed"
	else
		rsync -a --exclude=.savefs "$d/m/" "$d/b/" || fail "$label: rsync to the backup failed"
	fi
	"$change" "$d/m"
	tree_listing "$d/m" > "$d/changed.tree"
	check "$label: the change changed the tree" sh -c "! cmp -s '$d/before.tree' '$d/changed.tree'"
	if [ "$how" = tar ]; then
		check "$label: tar --overwrite -xf restores without an error" \
			tar --overwrite -xf "$d/backup.tar" -C "$d/m"
	else
		# rsync goes through a directory's own files before its
		# subdirectories, so the views of the whole container are left
		# out: they follow from the entries restored.
		check "$label: rsync -a restores without an error" \
			rsync -a --exclude=/.savefs --exclude=/header.json --exclude=/preview.png \
			"$d/b/" "$d/m/"
	fi
	tree_listing "$d/m" > "$d/after.tree"
	expect_same_text "$label ($how): every file reads as backed up" "$d/before.tree" "$d/after.tree"
	remount_sv "$d/m" || return
	tree_listing "$d/m" > "$d/after2.tree"
	expect_same_text "$label ($how): and so after a remount" "$d/before.tree" "$d/after2.tree"
	# The restored container, read by the independent decoder.
	case $c in
	*.map) check_decoder "$c" "$d/m" "$d/after2.tree" ;;
	*.level) check_ddecode "$c" "$d/m" "$d/after2.tree" ;;
	esac
	umount_sv "$d/m"
}

"$MKDOODLE" level "$W/r.level" --container zip --count 4 --size 16 --assets 1 --seed 12 > /dev/null ||
	die "mkdoodle failed"
restore level "$W/r.level" change_level tar
restore level "$W/r.level" change_level rsync
restore map "$W/base.map" change_map tar
restore map "$W/base.map" change_map rsync

# A view written with other bytes than it shows is refused at close.
d=$W/view
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
mount_sv "$d/c.map" "$d/m" || die "mount failed"
cp -- "$d/m/header.json" "$d/header.json"
expect_eq "a view written with its own bytes: accepted" ok "$(py_write "$d/m/header.json" "$d/header.json")"
printf 'x\n' > "$d/x"
expect_eq "a view written with other bytes: refused at close" "close EPERM" \
	"$(py_write "$d/m/header.json" "$d/x")"
expect_same_file "the view is as it was" "$d/header.json" "$d/m/header.json"
check "the log says why" grep -q \
	"refused header.json: this file is a view of the container: it cannot be written, except with the very bytes it shows" \
	"$d/m/.savefs/log"
out=$(ln -- "$d/m/data/00000.bin" "$d/m/data/00000.bin~" 2>&1)
expect_eq "a hard link is refused" \
	"ln: failed to create hard link '$d/m/data/00000.bin~' => '$d/m/data/00000.bin': Operation not permitted" "$out"
umount_sv "$d/m"
check "the container is as it was" cmp -s "$W/base.map" "$d/c.map"

finish
