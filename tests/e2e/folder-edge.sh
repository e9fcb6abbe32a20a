#!/bin/bash
# folder-edge.sh - a save folder's edges, as its users and a reliability
# trial met them: symbolic links shown as links and never followed by the
# daemon (rm -rf of a link to a directory outside, a link to the folder's
# parent); FIFOs, sockets and devices shown as themselves and never opened;
# damaged containers passing through as the files they are; files and
# directories made through a shared mount belonging to their maker; rm -r
# of a container as one act; mv -T of one container onto another; a real
# .savefs and commits' leftovers hidden; names with a newline; two mounts
# of one folder; max_open bounding descriptors under a walk of 300
# containers; times of the folder and of a container's directory kept.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

for t in "$MKSBDB" "$MKDATAFILE" "$MKRECORDING"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done
need_python
[ -e /dev/fuse ] && command -v fusermount3 > /dev/null || skip "no FUSE here (/dev/fuse, fusermount3)"

F=$TMP/f
M=$TMP/m
mkdir -p "$F/maps" "$F/storage" "$F/recs" "$TMP/outside"
"$MKDATAFILE" map "$F/maps/a.map" --seed 1 > /dev/null || die mkdatafile
"$MKDATAFILE" map "$F/maps/b.map" --seed 2 > /dev/null || die mkdatafile
"$MKSBDB" world "$F/storage/w.world" -s 2 -e 2 -S 5 > /dev/null || die mksbdb
"$MKRECORDING" segmented "$F/recs/live" -n 120 --quiet || die mkrecording
echo keep > "$TMP/outside/keep.txt"
echo outside > "$TMP/outside.txt"

# ---- symbolic links: shown as links, never followed by the daemon --------
ln -s ../outside "$F/tdir"
ln -s "$TMP/outside.txt" "$F/out.txt"
ln -s .. "$F/up"
ln -s maps/a.map "$F/latest.map"
ln -s "$F/maps/b.map" "$TMP/outside/b.map"
ln -s "$TMP/outside/b.map" "$F/maps/far.map"
# ---- FIFOs, sockets, devices ----
mkfifo "$F/pipe"
"$PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$F/sock"
[ "$(id -u)" = 0 ] && mknod "$F/null" c 1 3
# ---- damaged containers ----
cp "$F/storage/w.world" "$F/storage/cut.world"
truncate -s $(($(stat -c %s "$F/storage/w.world") / 2)) "$F/storage/cut.world"
head -c 5000 "$F/maps/a.map" > "$F/maps/cut.map"
cp "$F/storage/cut.world" "$TMP/cut.world.orig"
# ---- a real .savefs, a commit's leftover, a name with a newline ----
mkdir "$F/.savefs"
echo '{"fake": true}' > "$F/.savefs/info"
cp "$F/maps/a.map" "$F/maps/.a.map.savefs-Ab12Cd"
cp "$F/maps/a.map" "$F/maps/.b.map.savefs-Zz99Yy"
nl_name=$'two\nlines.txt'
echo newline > "$F/$nl_name"

# One leftover held locked, as a commit under way holds its own: hidden,
# but not removed.
# (The subshell becomes the sleep, which a kill ends with its lock; a sleep
# under flock would outlive it, holding the test's output open.)
(exec 9< "$F/maps/.b.map.savefs-Zz99Yy" && flock 9 && exec sleep 600) > /dev/null 2>&1 &
locker=$!
sleep 0.2

mount_sv "$F" "$M" || die "mount of the folder"

expect_eq "a link to a directory outside is a link" "symbolic link ../outside" \
	"$(stat -c %F "$M/tdir") $(readlink "$M/tdir")"
expect_eq "a link to a file outside is a link" "symbolic link" "$(stat -c %F "$M/out.txt")"
expect_eq "a link to a container outside is a link, not a container" "symbolic link" \
	"$(stat -c %F "$M/maps/far.map")"
expect_eq "a link inside the folder, followed by the kernel, reaches the container" \
	"$(ls "$M/maps/a.map")" "$(ls "$M/latest.map/")"
check "a link to the folder's parent lists it (no deadlock)" timeout 30 ls "$M/up/" > /dev/null
check "and the mount through it" timeout 30 stat -c '' "$M/up/m/.savefs/info"
rm -rf "$M/tdir" || fail "rm -rf of a link"
check "rm -rf removed the link" test ! -e "$F/tdir" -a ! -L "$F/tdir"
check "and nothing of what it pointed to" test -f "$TMP/outside/keep.txt"
ln -s some/where "$M/newlink" || fail "ln -s through the mount"
expect_eq "a new link is a real link" "some/where" "$(readlink "$F/newlink")"
expect_eq "savefs ls shows links, FIFOs and sockets as they are" \
	"lrwxrwxrwx 10 newlink -> some/where|prw-r--r-- 0 pipe|srwxr-xr-x 0 sock" \
	"$(sv ls -l "$F" | awk '$3 == "newlink" || $3 == "pipe" || $3 == "sock"' | sed 's/  */ /g' | tr '\n' '|' | sed 's/|$//')"
sv extract "$F" "$TMP/x" > /dev/null 2> "$TMP/x.err"
expect_eq "extract makes links and FIFOs as they are, and says what it leaves out" \
	"some/where fifo|savefs: sock: a socket, not extracted" \
	"$(readlink "$TMP/x/newlink") $(stat -c %F "$TMP/x/pipe")|$(grep sock "$TMP/x.err")"

expect_eq "a FIFO is a FIFO" "fifo" "$(stat -c %F "$M/pipe")"
expect_eq "a socket is a socket" "socket" "$(stat -c %F "$M/sock")"
if [ -e "$F/null" ]; then
	expect_eq "a device is a device, its number kept" "character special file 1,3" \
		"$(stat -c '%F %t,%T' "$M/null")"
fi
# Twelve readers of the FIFO wait in the kernel, not in the daemon.
readers=()
for _ in $(seq 12); do
	timeout 60 cat "$M/pipe" > /dev/null 2>&1 &
	readers+=($!)
done
sleep 0.5
check "the mount answers while twelve readers wait on a FIFO" timeout 30 cmp -s \
	<(sv cat "$F/maps/a.map" map/settings.cfg) "$M/maps/a.map/map/settings.cfg"
kill "${readers[@]}" 2> /dev/null
wait "${readers[@]}" 2> /dev/null

# ---- damaged containers pass through -------------------------------------
expect_eq "a world cut short is a plain file" "regular file" "$(stat -c %F "$M/storage/cut.world")"
expect_eq "a map cut short is a plain file" "regular file" "$(stat -c %F "$M/maps/cut.map")"
expect_same_file "its bytes read as they are" "$F/storage/cut.world" "$M/storage/cut.world"
"$PYTHON" -c 'import json, sys
j = json.load(open(sys.argv[1]))
for u in j["unreadable"]:
    print(u["path"], u["format"], u["error"])' "$M/.savefs/info" > "$TMP/unreadable"
expect_eq "/.savefs/info says which and why" \
	"maps/cut.map datafile datafile: byte 28: sections end at $(($(stat -c %s "$F/maps/a.map") + 0)) but the file is 5000 bytes|storage/cut.world btreedb5 btree: byte 54:" \
	"$(sed -E 's/ \(item_size.*//; s/(byte 54:).*/\1/' "$TMP/unreadable" | tr '\n' '|' | sed 's/|$//')"
check "and the log" grep -q 'storage/cut.world: a btreedb5 container that cannot be opened' "$M/.savefs/log"
for tool in "grep -r -l gravity" "cp -r" "tar -cf" "rsync -a"; do
	rm -rf "$TMP/copy" "$TMP/copy.tar"
	case $tool in
	grep*) timeout 120 grep -r -l gravity "$M" > /dev/null 2> "$TMP/tool.err" ;;
	cp*) timeout 120 cp -r "$M" "$TMP/copy" 2> "$TMP/tool.err" ;;
	tar*) timeout 120 tar -cf "$TMP/copy.tar" -C "$M" --exclude=./pipe --exclude=./sock --exclude=./null . 2> "$TMP/tool.err" ;;
	rsync*) timeout 120 rsync -a --exclude=/pipe --exclude=/sock --exclude=/null "$M/" "$TMP/copy/" 2> "$TMP/tool.err" ;;
	esac
	rc=$?
	# cp -r of a FIFO, a socket and a device: cp says it cannot (they are
	# what they are); nothing about the damaged containers.
	grep -v -e "'$M/pipe'" -e "'$M/sock'" -e "'$M/null'" "$TMP/tool.err" > "$TMP/tool.rest"
	expect_eq "$tool over the folder: nothing fails for the damaged saves" "" "$(cat "$TMP/tool.rest")"
	case $tool in grep* | tar* | rsync*) expect_eq "$tool: exit 0" 0 "$rc" ;; esac
done
expect_same_file "cp -r rescued the cut world as it is" "$TMP/cut.world.orig" "$TMP/copy/storage/cut.world"
mv "$M/storage/cut.world" "$M/storage/cut.world.bad" || fail "mv of a damaged save"
expect_same_file "renamed" "$TMP/cut.world.orig" "$F/storage/cut.world.bad"
rm "$M/storage/cut.world.bad" || fail "rm of a damaged save"
check "removed" test ! -e "$F/storage/cut.world.bad"

# ---- hidden: a real .savefs, commits' leftovers -----------------------------
expect_eq "the root lists .savefs once" 1 "$(ls -a "$M" | grep -cx .savefs)"
expect_eq "its info is the mount's" "$F" "$(json_field "$M/.savefs/info" folder)"
expect_eq "a commit's leftovers are not listed" "a.map b.map cut.map far.map" \
	"$(ls -a "$M/maps" | grep -v '^\.\.\?$' | tr '\n' ' ' | sed 's/ $//')"
check "the one nobody held is removed at the first look" test ! -e "$F/maps/.a.map.savefs-Ab12Cd"
check "the one a commit holds stays" test -e "$F/maps/.b.map.savefs-Zz99Yy"
check "the log says what was removed" grep -q 'maps/.a.map.savefs-Ab12Cd: removed, left by a commit that did not finish' "$M/.savefs/log"
kill "$locker" 2> /dev/null
wait "$locker" 2> /dev/null
rm -f "$F/maps/.b.map.savefs-Zz99Yy"

# ---- a name with a newline ------------------------------------------------------
expect_eq "a name with a newline is listed and reads" "newline" \
	"$("$PYTHON" -c 'import os, sys
names = os.listdir(sys.argv[1])
n = [x for x in names if "\n" in x]
print(open(os.path.join(sys.argv[1], n[0])).read().strip() if n == [sys.argv[2]] else names)' "$M" "$nl_name")"

# ---- rm -r of a container: one act -------------------------------------------------
cp "$F/maps/b.map" "$F/maps/gone.map"
rm -r "$M/maps/gone.map" 2> "$TMP/rm.err"
expect_eq "rm -r of a container: exit 0" 0 "$?"
expect_eq "and nothing said" "" "$(cat "$TMP/rm.err")"
check "the container's file is gone" test ! -e "$F/maps/gone.map"
check "and so is its directory" test ! -e "$M/maps/gone.map"
expect_eq "the other containers stay" "a.map b.map cut.map far.map" "$(ls "$M/maps" | tr '\n' ' ' | sed 's/ $//')"
(cd "$F/recs/live" && sha256sum -- *) > "$TMP/live.before"
rm -r "$M/recs/live" 2> /dev/null
expect_eq "rm -r of a directory container is refused" 1 "$?"
expect_same_text "and removes nothing of it, not one chunk" "$TMP/live.before" \
	<(cd "$F/recs/live" && sha256sum -- *)

# ---- mv -T of one container onto another ---------------------------------------------
cp "$F/maps/b.map" "$TMP/b.orig"
cat "$M/maps/a.map/map/info.json" > /dev/null # a.map open
mv -T "$M/maps/b.map" "$M/maps/a.map" || fail "mv -T of one container onto another"
expect_same_file "the container moved over the other" "$TMP/b.orig" "$F/maps/a.map"
expect_same_file "and shows its own tree" <(sv cat "$TMP/b.orig" map/game.png) "$M/maps/a.map/map/game.png"
# A client that holds a moved container (a shell in it) finds it under its
# new name at once, as a directory keeps its inode across a rename: the
# folder's entry moves with it.
cp "$F/maps/a.map" "$F/maps/held.map" || die "cp held.map"
sv cat "$F/maps/held.map" map/game.png > "$TMP/held.png" || die "sv cat held.map"
check "its game layer has bytes" test -s "$TMP/held.png"
expect_same_file "a shell inside a container mv moves reads on in it" "$TMP/held.png" \
	<(cd "$M/maps/held.map" && mv -T "$M/maps/held.map" "$M/maps/moved.map" && cat map/game.png)
expect_same_file "and the container is at its new name" "$TMP/held.png" \
	"$M/maps/moved.map/map/game.png"
check "and not at its old one" test ! -e "$M/maps/held.map"
rm -f "$F/maps/moved.map"
# The same for a directory moved with what is in it: a shell inside a
# container in it reads on.
mkdir "$F/held" && cp "$F/maps/a.map" "$F/held/in.map" || die "the held directory"
expect_same_file "a shell inside a container in a directory mv moves reads on" "$TMP/held.png" \
	<(cd "$M/held/in.map" && mv -T "$M/held" "$M/moved" && cat map/game.png)
expect_same_file "and it is under the directory's new name" "$TMP/held.png" \
	"$M/moved/in.map/map/game.png"
check "and the old name is gone" test ! -e "$M/held"
rm -r "$F/moved"
"$MKDATAFILE" map "$F/maps/b.map" --seed 2 > /dev/null || die mkdatafile

# ---- a copy of a container within the folder, as the README says -----------------------
cp "$M/maps/a.map/.savefs/container" "$M/maps/dup.map" || fail "cp NAME/.savefs/container NEW"
expect_same_file "the copy is the container's file" "$F/maps/a.map" "$F/maps/dup.map"
expect_eq "and shows as a container" "directory" "$(stat -c %F "$M/maps/dup.map")"
rm -r "$M/maps/dup.map" || fail "rm -r of the copy"

# ---- gio trash: in the folder's own directories, not inside a container ------------------
echo note > "$F/maps/note.txt"
gio trash "$M/maps/note.txt" || fail "gio trash of a file in the folder"
check "trashed into the real folder's .Trash" test -f "$F/.Trash-$(id -u)/files/note.txt"
check "and gone from its place" test ! -e "$F/maps/note.txt"
gio trash "$M/maps/a.map/map/settings.cfg" 2> /dev/null
expect_eq "gio trash inside a container is refused" 1 "$?"
check "and the view stays" test -f "$M/maps/a.map/map/settings.cfg"
rm -rf "$F/.Trash-$(id -u)"

# ---- times of the folder and of a container's directory ---------------------------------
touch -d '2001-02-03 04:05:06 UTC' "$M/maps/b.map" || fail "touch -d of a container's directory"
expect_eq "a container's directory keeps its time (the file's own untouched)" \
	"981173106 $(stat -c %Y "$F/maps/b.map")" \
	"$(stat -c %Y "$M/maps/b.map") $(stat -c %Y "$F/maps/b.map")"
check "its file is not the time set" test "$(stat -c %Y "$F/maps/b.map")" != 981173106
touch -d '2002-02-03 04:05:06 UTC' "$M" || fail "touch -d of the folder"
expect_eq "the folder's own time" "1012709106 1012709106" "$(stat -c %Y "$M") $(stat -c %Y "$F")"
umount_sv "$M"

# ---- files made through a shared mount belong to their maker --------------------------
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
	chmod 711 "$TMP"
	S=$TMP/shared
	mkdir -p "$S/pub"
	chmod 1777 "$S/pub"
	"$MKDATAFILE" map "$S/pub/m.map" --seed 3 > /dev/null
	mount_sv "$S" "$TMP/sm" -o allow_other || die "mount with allow_other"
	as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups sh -c "umask 002; $1"; }
	check "another user makes a file" as_nobody "echo a > '$TMP/sm/pub/n.txt'"
	check "and appends to it" as_nobody "echo b >> '$TMP/sm/pub/n.txt'"
	expect_eq "it is theirs, with their umask" "nobody $(id -gn nobody) 664 a b" \
		"$(stat -c '%U %G %a' "$S/pub/n.txt") $(tr '\n' ' ' < "$S/pub/n.txt" | sed 's/ $//')"
	check "a directory" as_nobody "mkdir '$TMP/sm/pub/d' && echo c > '$TMP/sm/pub/d/x'"
	expect_eq "theirs too" "nobody 775 nobody" \
		"$(stat -c '%U %a' "$S/pub/d") $(stat -c %U "$S/pub/d/x")"
	check "a link" as_nobody "ln -s n.txt '$TMP/sm/pub/l'"
	expect_eq "theirs too" "nobody" "$(stat -c %U "$S/pub/l")"
	umount_sv "$TMP/sm"
	chmod 700 "$TMP"
else
	printf 'SKIP (part): not root, or no user nobody: owners of files made by others\n'
fi

# ---- two mounts of one folder ------------------------------------------------------------
mount_sv "$F" "$M" || die "the first mount"
mount_sv "$F" "$TMP/m2" || die "the second mount"
echo 'sv_gravity 0.7' >> "$M/maps/b.map/map/settings.cfg" || fail "an edit through the first"
expect_same_file "the second reads a container the first holds" \
	"$M/maps/b.map/map/settings.cfg" "$TMP/m2/maps/b.map/map/settings.cfg"
expect_eq "where it is read-only, and says why" \
	"true $F/maps/b.map: held read-write by another savefs mount: read-only here" \
	"$("$PYTHON" -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(str(j["read_only"]).lower(), j["warnings"][0])' "$TMP/m2/maps/b.map/.savefs/info")"
write_fails "a write through the second" "Read-only file system" \
	sh -c "echo x >> '$TMP/m2/maps/b.map/map/settings.cfg'"
umount_sv "$TMP/m2"
# Another program changes a container between a read and a commit: the
# edit is refused, and the refusal says the folder shows the new file.
"$PYTHON" - "$M/maps/b.map/map/settings.cfg" "$F/maps/b.map" "$F/maps/a.map" \
	"$M/maps/b.map/.savefs/log" > "$TMP/refused" <<'PY'
import errno, os, shutil, sys
log = open(sys.argv[4])  # the log of the container the edit is made in
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'sv_gravity 0.9\n')
shutil.copyfile(sys.argv[3], sys.argv[2])  # the other program
try:
    os.close(fd)
    print('ok')
except OSError as e:
    print('close', errno.errorcode[e.errno])
print(log.read())
PY
expect_eq "an edit over another program's change is refused" "close EBUSY" "$(head -1 "$TMP/refused")"
check "and says the folder shows the file as it is now" \
	grep -q "was changed by another program since it was read: not overwritten, the edit is dropped (the folder shows the file as it is now at its next look)" \
	"$TMP/refused" || sed 's/^/    /' "$TMP/refused"
umount_sv "$M"

# ---- max_open bounds descriptors under a walk ----------------------------------------------
W=$TMP/many
mkdir -p "$W"
for i in $(seq 100 399); do cp "$F/maps/b.map" "$W/m$i.map"; done
mount_sv "$W" "$TMP/mw" -o max_open=4 || die "mount of 300 maps"
pid=${SV_PID[$(realpath "$TMP/mw")]}
# Fewer descriptors than containers: every container open at once would not fit.
prlimit --pid "$pid" --nofile=128:128 || fail "prlimit"
grep -r -l 'sv_gravity' "$TMP/mw" > "$TMP/found" 2> "$TMP/grep.err"
expect_eq "grep -r over 300 maps with 128 descriptors: exit 0" 0 "$?"
expect_eq "every map's settings found" 300 "$(grep -c 'map/settings.cfg$' "$TMP/found")"
expect_eq "nothing failed" "" "$(head -3 "$TMP/grep.err")"
expect_eq "open containers after the walk: max_open" 4 \
	"$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["open"])' "$TMP/mw/.savefs/info")"
check "the daemon holds few descriptors" test "$(ls "/proc/$pid/fd" | wc -l)" -le 40
umount_sv "$TMP/mw"
# ---- kill -9 while an entry's invalidation is waiting ------------------------------
# A lookup held inside the daemon keeps its directory's lock in the kernel;
# an invalidation of an entry there waits for it.  Were it waiting in the
# kernel, a kill -9 would leave a thread stuck there: the process never
# exits, the mount never goes, its readers hang.
if [ -n "${FAULTSHIM:-}" ]; then
	K=$TMP/kill9
	mkdir -p "$K/f/d"
	"$MKDATAFILE" map "$K/f/d/x.map" --seed 5 > /dev/null || die mkdatafile
	mount_shim "$K/f" "$K/m" SVF_ARM="$K/arm" SVF_MATCH=d/x.map SVF_PAUSE=stat SVF_DIR="$K" ||
		die "mount with the shim"
	km=$(realpath "$K/m")
	pid=${SV_PID[$km]}
	# The connection's number (the mount's minor), read while it answers.
	conn=$(awk -v m="$km" '$5 == m { split($3, a, ":"); print a[2] }' /proc/self/mountinfo)
	ls "$K/m/d" > /dev/null # d followed
	touch "$K/arm"
	touch "$K/f/d/x.map" # judged again at the next look
	# A stat the kernel answers from what it holds (the listing's entry,
	# kept a second) never reaches the daemon: one goes out every 2 s
	# until one is held there.
	lookers=()
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		timeout -s KILL 120 stat "$K/m/d/x.map" > /dev/null 2>&1 &
		lookers+=($!)
		for _ in $(seq 40); do [ -e "$K/reached" ] && break; sleep 0.05; done
		[ -e "$K/reached" ] && break
	done
	check "a lookup is held in the daemon" test -e "$K/reached"
	touch "$K/f/d/new" # the folder is told of an entry of d: invalidated
	sleep 1
	kill -KILL "$pid"
	for _ in $(seq 400); do
		[ "$(ls "/proc/$pid/task" 2> /dev/null | wc -l)" -le 1 ] && break
		sleep 0.05
	done
	check "killed, every thread of the daemon is gone (none stuck in the kernel)" \
		test "$(ls "/proc/$pid/task" 2> /dev/null | wc -l)" -le 1
	if [ "$(ls "/proc/$pid/task" 2> /dev/null | wc -l)" -gt 1 ]; then
		# Stuck: the connection aborted by hand, so that the test ends.
		mountpoint -q /sys/fs/fuse/connections || mount -t fusectl none /sys/fs/fuse/connections
		[ -n "$conn" ] && echo 1 > "/sys/fs/fuse/connections/$conn/abort"
	fi
	wait "$pid" 2> /dev/null
	unset "SV_PID[$km]"
	check "the mount is not connected" sh -c "! timeout -s KILL 20 stat '$km/.savefs' 2> /dev/null"
	kill -KILL "${lookers[@]}" 2> /dev/null
	wait "${lookers[@]}" 2> /dev/null
	fusermount3 -u -z "$km" 2> /dev/null
fi
finish
