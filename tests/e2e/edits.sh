#!/bin/bash
# edits.sh - edits that overlap or fail: each close commits only its own
# file (a half-written file elsewhere is neither committed nor blamed), a
# removal whose commit fails leaves the entry in place, a write over a
# limit leaves the file as it was, and the next data index past 99999
# still appends.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
c="$TMP/c.map"
"$MKDATAFILE" gen "$c" --data 6 --payload 30K --items 4 --seed 5 || die "mkdatafile"
m="$TMP/m"
mount_sv "$c" "$m" || die "mount failed"
cp "$m/data/00002.bin" "$TMP/orig2"
cp "$m/items/5-layer/00003.bin" "$TMP/orig-item3"

# Writer A leaves an item half-written (6 bytes, not a multiple of 4)
# while writer B replaces a data file and a third removes an item.
head -c 1000 /dev/urandom > "$TMP/b.bin"
out=$("$PYTHON" - "$m" "$TMP/b.bin" <<'PY'
import os, subprocess, sys
m, b = sys.argv[1], sys.argv[2]
a = os.open(m + '/items/5-layer/00000.bin', os.O_WRONLY | os.O_TRUNC)
os.write(a, b'\x01\x02\x03\x04\x05\x06')
r1 = subprocess.run(['cp', b, m + '/data/00001.bin'], capture_output=True, text=True)
r2 = subprocess.run(['rm', m + '/items/5-layer/00002.bin'], capture_output=True, text=True)
os.write(a, bytes(range(58)))
try:
    os.close(a)
    r3 = 'ok'
except OSError as e:
    r3 = e.strerror
print(r1.returncode, r1.stderr.strip() or '-', r2.returncode, r2.stderr.strip() or '-', r3)
PY
)
expect_eq "B's cp, the rm and A's close all succeed" "0 - 0 - ok" "$out"
remount_sv "$m" || die "remount failed"
expect_same_file "B's data file landed" "$TMP/b.bin" "$m/data/00001.bin"
printf '\001\002\003\004\005\006' > "$TMP/a.bin"
"$PYTHON" -c 'import sys; sys.stdout.buffer.write(bytes(range(58)))' >> "$TMP/a.bin"
expect_same_file "A's item landed whole" "$TMP/a.bin" "$m/items/5-layer/00000.bin"
check "the removed item is gone" test ! -e "$m/items/5-layer/00002.bin"

# A removal whose commit fails (the container changed on disk) leaves
# the entry where it was.
cp -p -- "$c" "$c.other" && mv -- "$c.other" "$c"
out=$(rm "$m/items/5-layer/00003.bin" 2>&1)
expect_eq "rm fails when the container was replaced on disk" \
	"rm: cannot remove '$m/items/5-layer/00003.bin': Device or resource busy" "$out"
expect_same_file "the item is still listed and reads" "$TMP/orig-item3" "$m/items/5-layer/00003.bin"
check "the log says why" grep -q "$c was replaced by another file since it was read: not overwritten" "$m/.savefs/log"
umount_sv "$m"
mount_sv "$c" "$m" -o maxedit=1K || die "mount failed"
expect_same_file "the item is still in the container" "$TMP/orig-item3" "$m/items/5-layer/00003.bin"

# A write over -o maxedit fails and leaves the file as it was.
head -c 2000 /dev/urandom > "$TMP/big.bin"
out=$(cp "$TMP/big.bin" "$m/data/00002.bin" 2>&1)
expect_eq "cp over maxedit fails" "cp: error writing '$m/data/00002.bin': File too large" "$out"
remount_sv "$m" || die "remount failed"
expect_same_file "the data file is as it was" "$TMP/orig2" "$m/data/00002.bin"
umount_sv "$m"

# A file replaced by rename (sed -i, editors) or removed while open keeps
# working for its open descriptors, as an unlinked file does.
mount_sv "$c" "$m" || die "mount failed"
out=$("$PYTHON" - "$m" <<'PY'
import os, sys
m = sys.argv[1]
orig = open(m + '/data/00003.bin', 'rb').read()
fd = os.open(m + '/data/00003.bin', os.O_RDONLY)
head = os.pread(fd, 100, 0)
open(m + '/tmp.new', 'wb').write(b'new content')
os.rename(m + '/tmp.new', m + '/data/00003.bin')
rest, off = b'', 100
while True:
    b = os.pread(fd, 65536, off)
    if not b:
        break
    rest += b
    off += len(b)
st = os.fstat(fd)
os.close(fd)
r1 = head + rest == orig and st.st_size == len(orig) and st.st_nlink == 0
t = os.open(m + '/scratch', os.O_RDWR | os.O_CREAT)
os.write(t, b'hello')
os.unlink(m + '/scratch')
os.write(t, b' world')
r2 = os.pread(t, 100, 0) == b'hello world' and os.fstat(t).st_size == 11
os.close(t)
fd = os.open(m + '/items/5-layer/00001.bin', os.O_RDONLY)
before = os.pread(fd, 100, 0)
os.unlink(m + '/items/5-layer/00001.bin')
r3 = os.pread(fd, 100, 0) == before
os.close(fd)
print(r1, r2, r3, open(m + '/data/00003.bin', 'rb').read().decode())
PY
)
expect_eq "old content for the open fd; temp and item usable after removal" \
	"True True True new content" "$out"
remount_sv "$m" || die "remount failed"
expect_eq "the renamed file landed" "new content" "$(cat "$m/data/00003.bin")"
check "the removed item is gone" test ! -e "$m/items/5-layer/00001.bin"
umount_sv "$m"

# Past 99999 data items, the next index still appends.
h="$TMP/h.map"
"$MKDATAFILE" gen "$h" --data 100000 --payload 400K --items 1 --seed 6 || die "mkdatafile"
mount_sv "$h" "$m" || die "mount failed"
check "the last data file is 99999" test -e "$m/data/99999.bin"
echo hello > "$m/data/100000.bin"
remount_sv "$m" || die "remount failed"
expect_eq "data/100000.bin was appended" "hello" "$(cat "$m/data/100000.bin")"
umount_sv "$m"
expect_eq "the container has 100001 data items" "100001" \
	"$(sv info "$h" | sed -n 's/^ *"data": \([0-9]*\),$/\1/p')"
finish
