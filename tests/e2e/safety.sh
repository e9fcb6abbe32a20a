#!/bin/bash
# safety.sh - a write-back never loses or mixes data: not beside another
# writer, not at a failure in the middle of a commit, not after a refusal.
#
#   faults        each step of a commit fails in turn (an LD_PRELOAD shim,
#                 tests/tools/faultshim.c): the close says so, the file
#                 reads as stored, the reason is logged once and names the
#                 file, the next edit of another file commits, a remount
#                 shows exactly that; a failure nobody could be told of
#                 (at a release) makes the daemon exit 8
#   enospc        a commit that does not fit on a small tmpfs
#   others        another program appends to the container, or renames a
#                 file over it, while a commit is under way (held by the
#                 shim at fsync, and at the swap itself): its bytes survive
#                 and the edit is refused with EBUSY
#   two opens     a writable open that never wrote closes while another
#                 is half way through writing the file: nothing is
#                 committed until the writer closes (a data item and a
#                 Sketchy Maze chunk grid)
#   unreadable    entries whose content cannot be made read EIO, whatever
#                 size they showed, with a line in the log
#   sed -i        a reader beside an editor that renames over a file never
#                 sees the name go away
#   extract       never writes through a link in the target directory
#   names         control characters in names from a container are escaped
#   gzip bomb     a small gzip level followed by a mass of spaces is
#                 refused without taking that mass in memory

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
: "${FAULTSHIM:=$SRC_ROOT/build/tests/libfaultshim.so}"
[ -f "$FAULTSHIM" ] || die "FAULTSHIM=$FAULTSHIM is not built"
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"
# The shim comes before the sanitizer runtime in a sanitized daemon.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"

W=$TMP/w
mkdir -p "$W"
"$MKDATAFILE" gen "$W/base.map" --data 4 --payload 20K --items 3 --seed 5 || die "mkdatafile failed"
printf 'a new item 0\n' > "$W/new0"
printf 'another new item 1\n' > "$W/new1"


# stop_shim MNT: unmounts; STATUS receives the daemon's exit status and
# DLOG its stderr.
stop_shim()
{
	local m
	m=$(realpath -- "$1")
	DLOG=${SV_LOG[$m]}
	stop_daemon "$m" clean
	STATUS=$?
}

# ---- faults at each step of a commit ------------------------------------

# One step: NAME MATCH ERRNO-NAME EXPECTED-CLOSE
fault_step()
{
	local name=$1 match=$2 ename=$3 want=$4 label="fault at $1 ($2)"
	local d=$W/fault-$name
	rm -rf -- "$d"
	mkdir -p "$d/m"
	cp -- "$W/base.map" "$d/c.map"
	local errno
	errno=$("$PYTHON" -c "import errno; print(errno.$ename)")
	mount_shim "$d/c.map" "$d/m" SVF_ARM="$d/arm" SVF_FAIL="$name" SVF_MATCH="$match" \
		SVF_ERRNO="$errno" || return
	cp -- "$d/m/data/00000.bin" "$d/stored0"
	cp -- "$d/m/data/00001.bin" "$d/stored1"
	touch "$d/arm"
	expect_eq "$label: close() of the edit says why" "$want" \
		"$(py_write "$d/m/data/00000.bin" "$W/new0")"
	check "$label: the shim failed the call" test ! -e "$d/arm"
	expect_same_file "$label: the file reads as stored" "$d/stored0" "$d/m/data/00000.bin"
	expect_eq "$label: the log names the file once" 1 \
		"$(grep -c '^[^ ]* not written data/00000\.bin: ' "$d/m/.savefs/log")"
	expect_eq "$label: an edit of another file then commits" ok \
		"$(py_write "$d/m/data/00001.bin" "$W/new1")"
	stop_shim "$d/m"
	expect_eq "$label: the daemon exits 0" 0 "$STATUS"
	check "$label: nothing is left beside the container" \
		test -z "$(find "$d" -maxdepth 1 -name '.c.map.savefs-*')"
	mount_sv "$d/c.map" "$d/m" || return
	expect_same_file "$label: after a remount, the failed edit is not there" \
		"$d/stored0" "$d/m/data/00000.bin"
	expect_same_file "$label: after a remount, the other edit is" \
		"$W/new1" "$d/m/data/00001.bin"
	umount_sv "$d/m"
}

fault_step mkostemp .c.map.savefs- EIO "close EIO"
fault_step fchmod .c.map.savefs- EIO "close EIO"
fault_step write .c.map.savefs- EIO "close EIO"
fault_step copy_file_range .c.map.savefs- EIO "close EIO"
fault_step fsync .c.map.savefs- EIO "close EIO"
fault_step open "$W/fault-open" EIO "close EIO"
fault_step stat /c.map EIO "close EBUSY"
fault_step renameat2 /c.map EIO "close EIO"
fault_step lstat .c.map.savefs- EIO "close EBUSY"
fault_step flock /c.map EIO "close EIO"
fault_step write .c.map.savefs- ENOSPC "close ENOSPC"

# The directory's sync after the swap: the old file is put back.
d=$W/fault-dirsync
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
cp -- "$W/base.map" "$d/orig.map"
mount_shim "$d/c.map" "$d/m" SVF_ARM="$d/arm" SVF_FAIL=fsync SVF_MATCH="$d" SVF_NTH=2 || die "mount failed"
touch "$d/arm"
expect_eq "a failed sync of the directory fails the close" "close EIO" \
	"$(py_write "$d/m/data/00000.bin" "$W/new0")"
check "after a failed sync of the directory, the old file is back" cmp -s "$d/orig.map" "$d/c.map"
stop_shim "$d/m"
expect_eq "after a failed sync of the directory, the daemon exits 0" 0 "$STATUS"

# A commit that fails at a release, where no close can say so: the
# daemon says it on stderr and exits 8.
d=$W/fault-release
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
mount_shim "$d/c.map" "$d/m" SVF_ARM="$d/arm" SVF_FAIL=fsync SVF_MATCH=.c.map.savefs- SVF_KEEP=1 ||
	die "mount failed"
touch "$d/arm"
: > "$d/m/data/00002.bin"
# The release that commits comes after the shell's close returned.
for i in $(seq 1200); do grep -q 'not written data/00002.bin' "$d/m/.savefs/log" && break; sleep 0.05; done
rm -f -- "$d/arm"
stop_shim "$d/m"
expect_eq "a failed commit at a release: the daemon exits 8" 8 "$STATUS"
check "the daemon says which file was not written" grep -q \
	"^savefs: data/00002.bin: not written: fsync $d/.c.map.savefs-.*: Input/output error\$" "$DLOG"
check "and that an edit was lost" grep -q '^savefs: 1 edit(s) could not be written (see above)$' "$DLOG"
check "the container is as it was" cmp -s "$W/base.map" "$d/c.map"

# ---- a disk that is full --------------------------------------------------

d=$W/enospc
mkdir -p "$d/fs"
if mount -t tmpfs -o size=256k tmpfs "$d/fs" 2> "$d/mount.err"; then
	mkdir -p "$d/m"
	"$MKDATAFILE" gen "$d/fs/c.map" --data 2 --payload 40K --items 2 --seed 2 ||
		fail "mkdatafile on the tmpfs failed"
	cp -- "$d/fs/c.map" "$d/orig.map"
	mount_sv "$d/fs/c.map" "$d/m" || die "mount on the tmpfs failed"
	head -c 400000 /dev/urandom > "$d/big"
	cp -- "$d/m/data/00000.bin" "$d/stored0"
	expect_eq "an edit that does not fit: close fails with ENOSPC" "close ENOSPC" \
		"$(py_write "$d/m/data/00000.bin" "$d/big")"
	expect_same_file "the file that did not fit reads as stored" "$d/stored0" "$d/m/data/00000.bin"
	check "the full disk is named in the log" grep -q \
		"not written data/00000.bin: .*No space left on device" "$d/m/.savefs/log"
	expect_eq "a small edit of another file then commits" ok \
		"$(py_write "$d/m/data/00001.bin" "$W/new1")"
	umount_sv "$d/m"
	check "nothing is left on the tmpfs" test -z "$(find "$d/fs" -name '.c.map.savefs-*')"
	mount_sv "$d/fs/c.map" "$d/m" || die "remount failed"
	expect_same_file "after a remount: the big edit is not there" "$d/stored0" "$d/m/data/00000.bin"
	expect_same_file "after a remount: the small edit is" "$W/new1" "$d/m/data/00001.bin"
	umount_sv "$d/m"
	umount "$d/fs"
else
	fail "cannot mount a tmpfs for the full-disk case: $(cat "$d/mount.err")"
fi

# ---- another program during a commit ---------------------------------------

# held_commit STEP MATCH ACTION: a commit held before STEP while ACTION
# (shell, on $C) runs; the close gets EBUSY, the other program's file is
# left as it made it.
held_commit()
{
	local step=$1 match=$2 action=$3 label="$4"
	local d=$W/held-$step-$5
	mkdir -p "$d/m"
	C=$d/c.map
	cp -- "$W/base.map" "$C"
	mount_shim "$C" "$d/m" SVF_ARM="$d/arm" SVF_PAUSE="$step" SVF_MATCH="$match" \
		SVF_DIR="$d" || return
	cp -- "$d/m/data/00000.bin" "$d/stored0"
	touch "$d/arm"
	py_write "$d/m/data/00000.bin" "$W/new0" > "$d/result" &
	local writer=$! i
	for i in $(seq 200); do
		[ -e "$d/reached" ] && break
		sleep 0.05
	done
	check "$label: the commit was held" test -e "$d/reached"
	eval "$action"
	cp -- "$C" "$d/theirs"
	touch "$d/go"
	wait "$writer"
	expect_eq "$label: the edit is refused" "close EBUSY" "$(cat "$d/result")"
	check "$label: the other program's file is left as it made it" cmp -s "$d/theirs" "$C"
	check "$label: the log says what happened" grep -q "$6" "$d/m/.savefs/log"
	expect_same_file "$label: the file reads as it was" "$d/stored0" "$d/m/data/00000.bin"
	stop_shim "$d/m"
}

held_commit fsync .c.map.savefs- 'printf "more" >> "$C"' \
	"an append while the new file is written" append \
	"was changed by another program while the new file was written"
held_commit fsync .c.map.savefs- 'cp -- "$W/base.map" "$C.x" && printf x >> "$C.x" && mv -- "$C.x" "$C"' \
	"a rename over it while the new file is written" renamed \
	"was replaced by another file while the new file was written"
held_commit renameat2 /c.map 'printf "more" >> "$C"' \
	"an append in the last instant before the swap" late-append \
	"was changed by another program as it was being replaced"
held_commit renameat2 /c.map 'cp -- "$W/base.map" "$C.x" && printf x >> "$C.x" && mv -- "$C.x" "$C"' \
	"a rename over it in the last instant before the swap" late-rename \
	"was changed by another program as it was being replaced"

# ---- two opens of one file ----------------------------------------------------

# A: read-write, never writes; B: O_TRUNC, writes half, A closes (the
# container must not change), B writes the rest and closes.  $1 the
# container, $2 file, $3 new content.
two_opens()
{
	"$PYTHON" - "$@" <<'PY'
import os, sys, time
container, path, new = sys.argv[1], sys.argv[2], open(sys.argv[3], 'rb').read()
before = open(container, 'rb').read()
a = os.open(path, os.O_RDWR)
b = os.open(path, os.O_WRONLY | os.O_TRUNC)
half = len(new) // 2
os.write(b, new[:half])
os.close(a)
time.sleep(0.5)   # a release is answered after close() returns
same = open(container, 'rb').read() == before
os.write(b, new[half:])
try:
    os.close(b)
    print('ok' if same else 'A committed B\'s half')
except OSError as e:
    print('close', e.strerror)
PY
}

d=$W/two
mkdir -p "$d/m"
cp -- "$W/base.map" "$d/c.map"
mount_sv "$d/c.map" "$d/m" || die "mount failed"
head -c 30000 /dev/urandom > "$d/new"
cp -- "$d/c.map" "$d/before"
expect_eq "two opens of a data item: B's close succeeds" ok "$(two_opens "$d/c.map" "$d/m/data/00003.bin" "$d/new")"
expect_same_file "two opens of a data item: B's whole content reads back" "$d/new" "$d/m/data/00003.bin"
remount_sv "$d/m" || die "remount failed"
expect_same_file "two opens of a data item: B's whole content is in the container" \
	"$d/new" "$d/m/data/00003.bin"
check "two opens of a data item: no half item was ever refused" \
	test -z "$(grep -v 'committed' "$d/m/.savefs/log")"
umount_sv "$d/m"

"$MKDOODLE" level "$d/l.level" --container zip --chunks rle --count 2 --size 32 --seed 3 ||
	die "mkdoodle failed"
mount_sv "$d/l.level" "$d/lm" || die "mount failed"
grid=$(cd "$d/lm" && find chunks -name '*.txt' | sort | head -1)
cp -- "$d/lm/$grid" "$d/grid"
# The grid with its first pixel row changed to palette colour 1.
"$PYTHON" - "$d/grid" "$d/grid.new" <<'PY'
import sys
lines = open(sys.argv[1]).read().split('\n')
body = [i for i, l in enumerate(lines) if l and not l.startswith('#')]
lines[body[0]] = '1' * len(lines[body[0]])
open(sys.argv[2], 'w').write('\n'.join(lines))
PY
expect_eq "two opens of a chunk grid: B's close succeeds" ok "$(two_opens "$d/l.level" "$d/lm/$grid" "$d/grid.new")"
expect_same_file "two opens of a chunk grid: B's grid reads back" "$d/grid.new" "$d/lm/$grid"
remount_sv "$d/lm" || die "remount failed"
expect_same_file "two opens of a chunk grid: B's grid is in the container" "$d/grid.new" "$d/lm/$grid"
umount_sv "$d/lm"

# An open whose edit was dropped cannot write on top of the stored file.
mount_sv "$d/c.map" "$d/m" || die "mount failed"
out=$("$PYTHON" - "$d/m" <<'PY'
import os, sys
m = sys.argv[1]
fd = os.open(m + '/items/5-layer/00000.bin', os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'abc')          # not int32s: the fsync is refused
try:
    os.fsync(fd)
    r1 = 'ok'
except OSError as e:
    r1 = e.strerror
try:
    os.write(fd, b'\0' * 5)    # would make 8 bytes of int32s on the stored item
    r2 = 'ok'
except OSError as e:
    r2 = e.strerror
try:
    os.close(fd)
    r3 = 'ok'
except OSError as e:
    r3 = e.strerror
print(r1, '/', r2, '/', r3)
PY
)
expect_eq "after a refused fsync, the open's next write fails" \
	"Invalid argument / Input/output error / ok" "$out"
umount_sv "$d/m"
sv cat "$W/base.map" items/5-layer/00000.bin > "$d/item0.base"
sv cat "$d/c.map" items/5-layer/00000.bin > "$d/item0.now"
check "the refused open changed nothing" cmp -s "$d/item0.base" "$d/item0.now"

# ---- NetHack appends beside other writers -----------------------------------------

: "${MKNHGAME:=$SRC_ROOT/build/tests/mknhgame}"
d=$W/nh
mkdir -p "$d"
g=$d/g.nhgame
"$MKNHGAME" "$g" --turns 8 --seed 3 || die "mknhgame failed"

# Another program appends without the lock while savefs is about to
# write (held after its checks): savefs's line lands after it, nothing of
# the other program's is written over.
mount_shim "$g" "$d/m" SVF_ARM="$d/arm" SVF_PAUSE=pwritev2 SVF_MATCH=/g.nhgame SVF_DIR="$d" ||
	die "mount failed"
touch "$d/arm"
(printf 'search L7\n' >> "$d/m/log"; echo $? > "$d/rc") &
writer=$!
for i in $(seq 200); do [ -e "$d/reached" ] && break; sleep 0.05; done
check "the append was held" test -e "$d/reached"
printf 'search L9\n' >> "$g"
touch "$d/go"
wait "$writer"
expect_eq "the held append succeeds" 0 "$(cat "$d/rc")"
expect_eq "both lines are there, the other program's first" "search L9|search L7" \
	"$(tail -2 "$g" | paste -sd'|')"
check "the log says the lines landed after the other program's" grep -q \
	"these lines follow its lines" "$d/m/.savefs/log"
stop_shim "$d/m"

# An unlocked appender in a loop beside appends through the mount: every
# line of both lands once, whole.
mount_sv "$g" "$d/m" || die "mount failed"
lines0=$(wc -l < "$g")
(for i in $(seq 100); do printf 'search L%d\n' $((i + 1000)) >> "$g"; done) &
other=$!
ok=0
# An append refused because the other program got there first (EBUSY)
# is tried again, as often as that takes while the other one runs.
for i in $(seq 100); do
	for try in $(seq 1000); do
		if printf 'search L%d\n' $((i + 2000)) >> "$d/m/log" 2> /dev/null; then
			ok=$((ok + 1))
			break
		fi
	done
done
wait "$other"
expect_eq "every append through the mount landed" 100 "$ok"
expect_eq "the log has every line of both writers" $((lines0 + 200)) "$(wc -l < "$g")"
expect_eq "each line once" 200 \
	"$(tail -n 200 "$g" | grep -cE '^search L[12][0-9]{3}$' | sort -u)"
expect_eq "no line twice" 200 "$(tail -n 200 "$g" | sort -u | wc -l)" ||
	{ tail -n 200 "$g" | sort | uniq -d | sed 's/^/    twice: /'
	  (seq 1001 1100; seq 2001 2100) | sed 's/^/search L/' | sort > "$d/want"
	  tail -n 200 "$g" | sort -u | comm -23 "$d/want" - | sed 's/^/    missing: /'
	  grep -v committed "$d/m/.savefs/log" | tail -n 5 | sed 's/^/    log: /'; }

# A program holding a plain fcntl write lock (not a game) is waited for,
# never sent the game's signals (they would kill it).
"$PYTHON" - "$g" "$d/holder" <<'PY' &
import fcntl, os, sys, time
f = open(sys.argv[1], 'a')
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], 'w').write('locked\n')
time.sleep(1.5)
fcntl.lockf(f, fcntl.LOCK_UN)
open(sys.argv[2], 'a').write('done\n')
PY
holder=$!
for i in $(seq 100); do [ -s "$d/holder" ] && break; sleep 0.02; done
start=$(date +%s%N)
check "an append beside a write-lock holder succeeds" sh -c "printf 'search L3\n' >> '$d/m/log'"
waited=$((($(date +%s%N) - start) / 1000000))
wait "$holder"
expect_eq "the write-lock holder was not killed" 0 "$?"
expect_eq "the write-lock holder ran to its end" "locked done" "$(paste -sd' ' "$d/holder")"
check "the append waited for the lock (${waited} ms)" test "$waited" -ge 500
expect_eq "the line landed" "search L3" "$(tail -1 "$g")"

# An open file description's lock (l_pid -1): waited for too.
rm -f -- "$d/holder"
"$PYTHON" - "$g" "$d/holder" <<'PY' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fl = struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, fl)
open(sys.argv[2], 'w').write('locked\n')
time.sleep(1)
os.close(fd)
PY
holder=$!
for i in $(seq 100); do [ -s "$d/holder" ] && break; sleep 0.02; done
check "an append beside an OFD lock holder succeeds" sh -c "printf 'search L4\n' >> '$d/m/log'"
wait "$holder"
expect_eq "the OFD lock holder was not killed" 0 "$?"
expect_eq "that line landed" "search L4" "$(tail -1 "$g")"

# One 8-byte write across a page boundary: all of it, or nothing.
size=$(stat -c %s "$g")
pad=$(( (4093 - size % 4096 + 4096) % 4096 ))
[ "$pad" -lt 100 ] && pad=$((pad + 4096))
"$PYTHON" - "$d/m/log" "$pad" <<'PY'
import os, sys
path, pad = sys.argv[1], int(sys.argv[2])
a = (pad - 11 * (pad % 10)) // 10   # lines of 10 bytes, then of 11
b = pad % 10
with open(path, 'a') as f:
    for _ in range(a):
        f.write('search L5\n'); f.flush()
    for _ in range(b):
        f.write('search L55\n'); f.flush()
PY
expect_eq "the log ends 3 bytes before a page's end" 4093 $(($(stat -c %s "$g") % 4096))
out=$("$PYTHON" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print(os.write(fd, b"+abcdef\n"))
os.close(fd)' "$d/m/log")
expect_eq "an 8-byte line across a page's end is written whole" 8 "$out"
expect_eq "and lands whole" "+abcdef" "$(tail -1 "$g")"
umount_sv "$d/m"

# ---- entries that cannot be made read EIO ---------------------------------------

BAD=$SRC_ROOT/tests/data/bad
# expect_eio MNT PATH: cat fails with EIO, stat and cp too, and the log says why.
expect_eio()
{
	local m=$1 p=$2
	local out
	out=$(cat -- "$m/$p" 2>&1 > /dev/null)
	expect_eq "$p: cat fails with EIO" "cat: $m/$p: Input/output error" "$out"
	out=$(cp -- "$m/$p" "$TMP/copied" 2>&1)
	check "$p: cp fails too" test -n "$out"
	check "$p: the log has a line for it" grep -q "read $p: " "$m/.savefs/log"
}

d=$W/eio
mkdir -p "$d"
mount_sv "$BAD/nethack/backup-not-base64.nhgame" "$d/nh" -o ro || die "mount failed"
expect_eio "$d/nh" states/000004.sav
expect_eio "$d/nh" states/000007.sav
expect_eio "$d/nh" states/000007.sav # again: remembered, same answer
umount_sv "$d/nh"
mount_sv "$BAD/doodle/json-chunk-not-json.level" "$d/dd" -o ro || die "mount failed"
bin=$(cd "$d/dd" && find chunks -name '*.bin' | sort | head -1)
ls -l "$d/dd/$bin" > /dev/null
expect_eio "$d/dd" "$bin"
umount_sv "$d/dd"

# ---- a reader beside sed -i -------------------------------------------------------

d=$W/sed
mkdir -p "$d/m"
"$MKDOODLE" level "$d/l.level" --container zip --count 2 --size 16 --seed 4 || die "mkdoodle failed"
mount_sv "$d/l.level" "$d/m" || die "mount failed"
"$PYTHON" - "$d/m/level.json" > "$d/reader" <<'PY' &
import errno, os, sys, time
end = time.time() + 3
n = 0
errors = {}
while time.time() < end:
    try:
        open(sys.argv[1], 'rb').read()
    except OSError as e:
        name = errno.errorcode.get(e.errno, str(e.errno))
        errors[name] = errors.get(name, 0) + 1
    n += 1
print(','.join('%s:%d' % kv for kv in sorted(errors.items())) or 'none', n)
PY
reader=$!
edits=0
while kill -0 "$reader" 2> /dev/null; do
	sed -i 's/"title": "[^"]*"/"title": "edit '"$edits"'"/' "$d/m/level.json" || break
	edits=$((edits + 1))
done
wait "$reader"
read -r errors reads < "$d/reader"
expect_eq "a reader beside $edits sed -i meets no error (of $reads reads)" none "$errors"
check "sed -i ran" test "$edits" -gt 5
umount_sv "$d/m"

# ---- extract and hard links --------------------------------------------------------

d=$W/extract
mkdir -p "$d/out/data" "$d/elsewhere"
printf 'mine\n' > "$d/elsewhere/precious"
ln "$d/elsewhere/precious" "$d/out/data/00000.bin"
sv extract --force "$W/base.map" "$d/out" 2> /dev/null
expect_eq "extract does not write through a hard link in the target" "mine" \
	"$(cat "$d/elsewhere/precious")"
expect_eq "extract's file is its own" "$(sv cat "$W/base.map" data/00000.bin | sha256sum)" \
	"$(sha256sum < "$d/out/data/00000.bin")"

# ---- control characters in names ---------------------------------------------------

d=$W/names
mkdir -p "$d"
"$MKDOODLE" level "$d/l.level" --container json --assets 1 --seed 6 || die "mkdoodle failed"
"$PYTHON" - "$d/l.level" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
files = j['files']
k = next(iter(files))
files['assets/bad\nname\x1b[31m.txt'] = files.pop(k)
json.dump(j, open(p, 'w'))
PY
expect_eq "a name with control characters is listed escaped, one line" \
	'assets/bad\x0aname\x1b[31m.txt' "$(sv ls -R "$d/l.level" | grep '^assets/bad')"
mount_sv "$d/l.level" "$d/m" -o ro || die "mount failed"
expect_eq "in the mount, the name is escaped too" 'bad\x0aname\x1b[31m.txt' "$(ls "$d/m/assets")"
umount_sv "$d/m"

# ---- two other programs during a swap -------------------------------------------------

# Version A is renamed over the container as savefs's exchange is about to
# run, version B once the exchange took A out: savefs must not swap back
# (B would be displaced, then removed).  B stays, A is kept beside it.
d=$W/third
mkdir -p "$d"
C=$d/c.map
cp -- "$W/base.map" "$C"
cp -- "$W/base.map" "$d/A"
printf 'A' >> "$d/A"
cp -- "$W/base.map" "$d/B"
printf 'BB' >> "$d/B"
mount_shim "$C" "$d/m" SVF_ARM="$d/arm" SVF_PAUSE=renameat2 SVF_NTH=1,2 SVF_MATCH=c.map \
	SVF_DIR="$d" || die "mount failed"
touch "$d/arm"
py_write "$d/m/data/00000.bin" "$W/new0" > "$d/result" &
writer=$!
for i in $(seq 200); do [ -e "$d/reached" ] && break; sleep 0.05; done
check "the exchange was held" test -e "$d/reached"
cp -- "$d/A" "$d/A.tmp" && mv -- "$d/A.tmp" "$C"
touch "$d/go"
for i in $(seq 200); do [ -e "$d/reached2" ] && break; sleep 0.05; done
check "the exchange back was held" test -e "$d/reached2"
cp -- "$d/B" "$d/B.tmp" && mv -- "$d/B.tmp" "$C"
touch "$d/go2"
wait "$writer"
expect_eq "the edit is refused" "close EBUSY" "$(cat "$d/result")"
check "B, the newest, is at the container's path" cmp -s "$d/B" "$C"
kept=$(find "$d" -maxdepth 1 -name '.c.map.savefs-displaced-*')
check "A is kept beside it" cmp -s "$d/A" "$kept"
check "the log says both" grep -q "replaced twice by other programs.*kept as .*savefs-displaced-" \
	"$d/m/.savefs/log"
check "nothing else is left beside it" test "$(find "$d" -maxdepth 1 -name '.c.map.savefs-*' |
	wc -l)" = 1
stop_shim "$d/m"

# ---- a gzip bomb of spaces -----------------------------------------------------------

d=$W/bomb
mkdir -p "$d"
gzip_spaces "$d/bomb.level" 2048 || die "cannot make the gzip bomb" # 2 GiB of spaces
/usr/bin/time -f '%M' -o "$d/rss" "$SAVEFS" info "$d/bomb.level" > /dev/null 2> "$d/err"
rc=$?
expect_eq "the gzip bomb is refused as malformed (exit 5)" 5 "$rc"
expect_eq "its message" "savefs: $d/bomb.level: doodle: gzip: more than 1073741824 bytes" "$(cat "$d/err")"
rss_bounded "the gzip bomb cost at most 200 MB" "$d/rss" 200000

# A small gzip level whose title is 400 MB: one JSON value may hold a
# sixteenth of -o maxdecode (64 MiB); the title is refused there, never
# held (twice, as the parser would).
"$PYTHON" - "$d/title.level" <<'PY'
import sys, zlib
c = zlib.compressobj(9, zlib.DEFLATED, 31)
out = open(sys.argv[1], 'wb')
out.write(c.compress(b'{"version": 1, "title": "'))
block = b'A' * (1 << 24)
for _ in range(25):       # 400 MiB of title
    out.write(c.compress(block))
out.write(c.compress(b'", "chunks": {"size": 8, "chunks": {}}}'))
out.write(c.flush())
PY
/usr/bin/time -f '%M' -o "$d/rss" "$SAVEFS" info "$d/title.level" > /dev/null 2> "$d/err"
expect_eq "a 400 MB title is refused (exit 5)" 5 "$?"
expect_eq "its message" "savefs: $d/title.level: doodle: gzip content: byte 67108889: a string of more than 67108864 bytes (the most one JSON value may hold: a sixteenth of -o maxdecode)" "$(cat "$d/err")"
rss_bounded "the 400 MB title cost at most 300 MB" "$d/rss" 300000

finish
