#!/bin/bash
# diff.sh - savefs diff A B on generated pairs: its output is diff -ru's of
# the two trees savefs extract writes (the same hunks, "Only in", "Binary
# files ... differ"; no timestamps), exactly; --name-only and --stat;
# exit 0 same, 1 different, 2 trouble; two save folders; and records
# whose stored bytes are equal are skipped unread: a data item damaged
# alike in both (reading it fails) is not read, so the diff does not fail.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
command -v diff > /dev/null || skip "diff(1) is missing"
W=$(realpath -- "$TMP")/w
mkdir -p "$W/x"
cd "$W" || die "cannot cd"

# gnu A B: diff -ru of the extracted trees, as savefs diff writes it (no
# "diff -ru" lines, no timestamps).
gnu()
{
	rm -rf -- "$W/x/$1" "$W/x/$2"
	"$SAVEFS" extract "$1" "$W/x/$1" > /dev/null || fail "savefs extract $1"
	"$SAVEFS" extract "$2" "$W/x/$2" > /dev/null || fail "savefs extract $2"
	(cd "$W/x" && diff -ru "$1" "$2") | sed '/^diff -ru /d; s/^\(---\|+++\) \([^\t]*\)\t.*$/\1 \2/'
}

# edit C PATH SED: PATH in container C changed through a mount, by sed.
edit()
{
	mount_sv "$W/$1" "$W/m" || die "cannot mount $1"
	sed -i "$3" "$W/m/$2" || fail "sed -i on $1/$2"
	umount_sv "$W/m"
}

# ---- a map, one tile and the info changed ----
"$MKDATAFILE" map a.map --size 60x30 --seed 3 > /dev/null || die "mkdatafile failed"
cp a.map b.map
edit b.map map/groups/01-Game/04-Game/tiles.txt '5s/^010 .../000 001/'
edit b.map map/info.json 's/"author": "[^"]*"/"author": "someone else"/'
"$SAVEFS" diff a.map b.map > "$W/out" 2> "$W/err"
expect_eq "a map against its edit: exit 1" 1 $?
expect_eq "nothing on stderr" "" "$(cat "$W/err")"
gnu a.map b.map > "$W/want"
expect_same_text "a map against its edit: diff -ru's output of the extracted trees" "$W/want" "$W/out"
check "the tile's line is in it" grep -q '^+\.\.\. 001 ' "$W/out"
check "the author's" grep -qF '+  "author": "someone else",' "$W/out"
expect_eq "--name-only: the files that differ" \
	"data/00000.bin data/00016.bin header.json map/game.png map/groups/01-Game/04-Game/tiles.txt map/info.json " \
	"$("$SAVEFS" diff --name-only a.map b.map | tr '\n' ' ')"
"$SAVEFS" diff --stat a.map b.map > "$W/out"
expect_eq "--stat: exit 1" 1 $?
expect_eq "--stat: a line a directory, then the totals" \
" data/ | 2 files, +0 -0
 ./ | 1 file, +2 -2
 map/ | 2 files, +1 -1
 map/groups/01-Game/04-Game/ | 1 file, +1 -1
 6 files changed in 4 directories, +4 -4 lines; $(($("$SAVEFS" ls -R a.map | grep -cE '^(items|data)/.*\.bin$') - 2)) unchanged records skipped unread" \
	"$(cat "$W/out")"
"$SAVEFS" diff a.map a.map > "$W/out"
expect_eq "a map against itself: exit 0" 0 $?
expect_eq "and says nothing" "" "$(cat "$W/out")"
cp a.map c.map
"$SAVEFS" diff a.map c.map > /dev/null
expect_eq "a map against a copy: exit 0" 0 $?

# ---- a level: a chunk changed, one added ----
"$MKDOODLE" level l1.level --container zip --size 16 --count 3 --seed 4 > /dev/null || die "mkdoodle failed"
cp l1.level l2.level
mount_sv "$W/l2.level" "$W/m" || die "cannot mount l2.level"
first=$(cd "$W/m/chunks/0" && ls -- *.txt | head -n 1)
# (The first pixel of the first row: '.' empty, else a swatch's digit.)
sed -i '0,/^[^#]/{/^[^#]/{s/^\./0/;t;s/^./\./}}' "$W/m/chunks/0/$first" || fail "sed -i on a chunk"
umount_sv "$W/m"
"$SAVEFS" diff l1.level l2.level > "$W/out" 2> "$W/err"
expect_eq "a level against its edit: exit 1" 1 $?
gnu l1.level l2.level > "$W/want"
expect_same_text "a level against its edit: diff -ru's output" "$W/want" "$W/out"

# ---- a world: one entity sector changed ----
"$MKSBDB" world w1.world -c 1 > /dev/null || die "mksbdb failed"
cp w1.world w2.world
mount_sv "$W/w2.world" "$W/m" || die "cannot mount w2.world"
ent=$(cd "$W/m/world/entities" && ls -- *.json | head -n 1)
"$PYTHON" - "$W/m/world/entities/$ent" <<'PY' || fail "editing an entity sector"
import json, sys
p = sys.argv[1]
v = json.load(open(p))
v.append(v[0]) if isinstance(v, list) and v else None
json.dump(v, open(p, 'w'), indent=2)
PY
umount_sv "$W/m"
"$SAVEFS" diff w1.world w2.world > "$W/out" 2> "$W/err"
rc=$?
expect_eq "a world against its edit: exit 1" 1 "$rc"
gnu w1.world w2.world > "$W/want"
expect_same_text "a world against its edit: diff -ru's output" "$W/want" "$W/out"

# ---- two recordings: one ten ticks longer ----
"$MKRECORDING" compacted r1.hcrp -n 200 -e 3 -s 3 -z 3 > /dev/null || die "mkrecording failed"
"$MKRECORDING" compacted r2.hcrp -n 210 -e 3 -s 3 -z 3 > /dev/null || die "mkrecording failed"
"$SAVEFS" diff r1.hcrp r2.hcrp > "$W/out" 2> "$W/err"
expect_eq "two recordings: exit 1" 1 $?
gnu r1.hcrp r2.hcrp > "$W/want"
expect_same_text "two recordings: diff -ru's output" "$W/want" "$W/out"
check "the new ticks are in it" grep -q '^Only in r2.hcrp' "$W/out"

# ---- trouble: exit 2 ----
"$SAVEFS" diff a.map missing.map > /dev/null 2> "$W/err"
expect_eq "a missing side: exit 2" 2 $?
check "and why" grep -q '^savefs: missing.map: ' "$W/err"
"$SAVEFS" diff a.map l1.level > /dev/null 2> "$W/err"
expect_eq "two formats: exit 2" 2 $?
expect_eq "and why" "savefs: a.map is a datafile, l1.level a doodle: not one format" "$(cat "$W/err")"
"$SAVEFS" diff a.map > /dev/null 2> "$W/err"
expect_eq "one location: exit 2" 2 $?

# ---- two save folders ----
mkdir -p f1 f2
cp a.map f1/one.map
cp b.map f2/one.map
cp l1.level f1/gone.level
printf 'notes\n' > f2/notes.txt
"$SAVEFS" diff f1 f2 > "$W/out" 2> "$W/err"
expect_eq "two folders: exit 1" 1 $?
expect_eq "what only the first has" "Only in f1: gone.level" "$(grep '^Only in f1' "$W/out")"
expect_eq "what only the second has" "Only in f2: notes.txt" "$(grep '^Only in f2' "$W/out")"
check "the map's change, under its name" grep -qx -- '+++ f2/one.map/map/info.json' "$W/out"
"$SAVEFS" diff a.map b.map | sed 's|^--- a.map/|--- f1/one.map/|; s|^+++ b.map/|+++ f2/one.map/|; s|^Binary files a.map/\(.*\) and b.map/|Binary files f1/one.map/\1 and f2/one.map/|' \
	> "$W/want.map"
grep -v '^Only in' "$W/out" > "$W/got.map"
expect_same_text "the map's part: as the two maps' own diff" "$W/want.map" "$W/got.map"

# ---- records equal in both are skipped unread ----
# A data item whose stored stream is damaged alike in both files: reading
# its file fails, so the diff would exit 2 if it read it.
"$MKDATAFILE" gen g1.map --data 4 --payload 20K --items 3 --seed 5 > /dev/null || die "mkdatafile failed"
cp g1.map g2.map
printf 'another item\n' > "$W/new0"
mount_sv "$W/g2.map" "$W/m" || die "cannot mount g2.map"
cp "$W/new0" "$W/m/data/00000.bin" || fail "cp onto data/00000.bin"
umount_sv "$W/m"
damage()
{
	"$PYTHON" - "$1" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
(_, ver, size, swaplen, nt, ni, nd, isz, dsz) = struct.unpack('<4siiiiiiii', b[:36])
offs = 36 + 12 * nt + 4 * ni
doff = struct.unpack('<%di' % nd, b[offs:offs + 4 * nd])
base = offs + 8 * nd + isz
end = doff[3] if nd > 3 else dsz
at = base + (doff[2] + end) // 2
b[at:at + 16] = b'\xff' * 16
open(p, 'wb').write(b)
PY
}
damage g1.map || die "damage g1.map"
damage g2.map || die "damage g2.map"
"$SAVEFS" cat g1.map data/00002.bin > /dev/null 2>&1
expect_eq "the damaged data item cannot be read" 7 $?
"$SAVEFS" diff --name-only g1.map g2.map > "$W/out" 2> "$W/err"
expect_eq "the damaged item, alike in both, is skipped unread: exit 1, not 2" 1 $?
expect_eq "nothing on stderr" "" "$(cat "$W/err")"
expect_eq "what differs" "data/00000.bin header.json " "$(tr '\n' ' ' < "$W/out")"

finish
