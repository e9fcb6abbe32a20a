#!/bin/bash
# starbound.sh - Starbound databases and SBVJ01 files mounted for real.
#
#   - files from mksbdb (tile versions 416, 417, 418 with root tiles,
#     OpenStarbound trailers, a 256-byte block size with a two-level index,
#     free-index chains from several commits, a leaf of 20+ blocks, Celestial2
#     with hashed keys, SBVJ01) and the shared sample: every record, tile
#     field and entity equals the independent reader's (sbdecode.py), and
#     the tree equals its golden listing;
#   - ordinary tools: grep -rw for a material across .tsv, diff -r between
#     two versions of a world;
#   - edits: sed -i of a tile (.tsv) and of a grid cell (.txt), of an
#     entity's parameter, an entity moved to another sector and one whose
#     uniqueId goes (the unique index follows), cp onto a key, > to a new
#     key, rm of a key, metadata and SBVJ01 edited; after each the file
#     passes every rule of the game's loader and reads back as written;
#   - refusals with their reasons: a collision of 9, a root tile at 416, a
#     grid cell not in the legend, a bad entity; universe.lock held by a
#     server; a root another program flipped since the mount (the tree is
#     read again);
#   - space: 100 successive edits reuse freed blocks (the file stops
#     growing);
#   - crashes: the daemon killed at each step of a commit leaves the old
#     tree (before the flip) or the new one (after it).

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKSBDB" ] || die "MKSBDB=$MKSBDB is not an executable (build first)"
SBDECODE="$SRC_ROOT/tests/tools/sbdecode.py"
W=$TMP/w
mkdir -p "$W"
M=$TMP/mnt

# same_as_decoder DESC FILE: the whole tree (savefs extract) equals the
# independent reader's, record by record.
same_as_decoder()
{
	rm -rf -- "$TMP/x"
	sv extract "$2" "$TMP/x" || { fail "$1: savefs extract $2 failed"; return 1; }
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" "$SBDECODE" compare "$2" "$TMP/x" > "$TMP/cmp.out" 2>&1; then
		fail "$1: savefs and the independent reader differ on $2:"
		head -n 20 "$TMP/cmp.out" | sed 's/^/    /'
		return 1
	fi
}



# ---- fixtures and the independent reader ----------------------------------
"$MKSBDB" world "$W/v416.world" -c 3 || die "mksbdb world"
"$MKSBDB" world "$W/v417.world" -v 417 -o -S 2 || die "mksbdb world -v 417"
# shellcheck source=tests/golden/starbound/fixtures.sh
. "$SRC_ROOT/tests/golden/starbound/fixtures.sh"
make_sb_golden "$W" || die "mksbdb world -v 418"
"$MKSBDB" celestial "$W/universe.chunks" -n 300 || die "mksbdb celestial"
"$MKSBDB" sbvj01 "$W/tester.player" -o || die "mksbdb sbvj01"
for f in v416.world v417.world v418.world universe.chunks tester.player; do
	decoder_ok "fixture $f" "$W/$f" --exact
	same_as_decoder "fixture $f" "$W/$f"
done
# What the fixtures are made to hold.
"$PYTHON" "$SBDECODE" check "$W/v418.world" > "$TMP/v418.check"
check "v418.world has a two-level index" grep -q 'levels=2' "$TMP/v418.check"
check "v416.world has a leaf of 20+ blocks" "$PYTHON" - "$W/v416.world" << 'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
bs = struct.unpack(">I", d[8:12])[0]
alt = d[32] != 0
fh, ds, root, leaf = struct.unpack(">IqI?", d[50 if alt else 33:][:17])
nb = (ds - 512) // bs
nxt = {}
for b in range(nb):
    blk = d[512 + b * bs:512 + (b + 1) * bs]
    if blk[:2] == b"LL":
        nxt[b] = struct.unpack(">I", blk[-4:])[0]
heads = set(nxt) - set(nxt.values())
best = 0
for h in heads:
    n, b = 0, h
    while b in nxt and n < 10000:
        n, b = n + 1, nxt[b]
    best = max(best, n)
sys.exit(0 if best >= 20 else 1)
EOF
check "v418.world has root tiles" grep -q $'\t[0-9]*,[0-9]*$' <(sv cat "$W/v418.world" world/tiles/0,0.tsv)
check "v417.world keeps OpenStarbound's trailers" grep -q '"subversions"' <(sv cat "$W/v417.world" world/entities/0,0.json)
check "celestial chunks are named by their coordinate" test "$(sv ls "$W/universe.chunks" celestial | grep -c '^-\?[0-9]*,-\?[0-9]*\.json$')" = 300

# ---- the persistent index: a universe's names kept between mounts ------------
export XDG_CACHE_HOME=$TMP/index-cache
IDX=$XDG_CACHE_HOME/savefs
U=$W/index.chunks
"$MKSBDB" celestial "$U" -n 200 > /dev/null || die "mksbdb celestial"
sv ls -o noindex "$U" celestial > "$TMP/cel.want"
expect_eq "-o noindex keeps nothing" "" "$(ls -A "$IDX" 2> /dev/null)"
# A mount's info counts celestial/ without naming its chunks (naming
# inflates every one, and keeps a record).
mount_sv "$U" "$M" -o ro || die "mount of the universe"
check "info read" grep -q '"files": ' "$M/.savefs/info"
expect_eq "info names no chunk (no record kept)" "" "$(ls -A "$IDX" 2> /dev/null)"
umount_sv "$M"
expect_same_text "the first listing (names from inside the chunks)" "$TMP/cel.want" <(sv ls "$U" celestial)
expect_eq "one record kept" 1 "$(ls "$IDX" | wc -l)"
rec=$IDX/$(ls "$IDX")
touch -d '2001-01-01' "$rec"
rec_ino=$(stat -c %i "$rec")
expect_same_text "the second listing, from the record" "$TMP/cel.want" <(sv ls "$U" celestial)
# Used, not made again: its time of use moved, and it is the same file (a
# record made again is a new file renamed into place).
check "the record was used (its time of use moved)" test "$(stat -c %Y "$rec")" -gt 978307200
expect_eq "the record was not made again" "$rec_ino" "$(stat -c %i "$rec")"
# Damaged: ignored, the names found again, the record made again whole.
truncate -s 100 "$rec"
expect_same_text "a damaged record: listed the long way" "$TMP/cel.want" <(sv ls "$U" celestial)
check "and the record made again" test "$(stat -c %s "$rec")" -gt 100
# The universe changed (another chunk): never the old names.
"$MKSBDB" celestial "$U" -n 201 > /dev/null || die "mksbdb celestial"
sv ls -o noindex "$U" celestial > "$TMP/cel.want2"
check "the changed universe lists another set of names" \
	sh -c '! cmp -s "$1" "$2"' _ "$TMP/cel.want" "$TMP/cel.want2"
expect_same_text "a changed universe: its own names" "$TMP/cel.want2" <(sv ls "$U" celestial)
# Through a mount.
mount_sv "$U" "$M" || die "mount of the universe"
expect_same_text "the mount lists what the record says" <(LC_ALL=C sort "$TMP/cel.want2") \
	<(ls "$M/celestial" | LC_ALL=C sort)
umount_sv "$M"

if [ -f "$SAMPLES/starbound/go-starbound_test.world" ]; then
	decoder_ok "sample" "$SAMPLES/starbound/go-starbound_test.world"
	same_as_decoder "sample" "$SAMPLES/starbound/go-starbound_test.world"
	rm -rf -- "$TMP/xs"
	sv extract "$SAMPLES/starbound/go-starbound_test.world" "$TMP/xs"
	tree_listing "$TMP/xs" > "$TMP/sample.tree"
	expect_same_text "sample: the tree differs from its golden listing" \
		"$GOLDEN/starbound/go-starbound_test.tree" "$TMP/sample.tree"
else
	printf 'note: %s absent: the shared sample is not checked\n' "$SAMPLES/starbound"
fi

# ---- the tree, against its golden listing -----------------------------------
mount_sv "$W/v418.world" "$M" -o ro || die "cannot mount v418.world"
tree_listing "$M" > "$TMP/v418.tree"
G="$GOLDEN/starbound/v418.tree"
if [ -f "$G" ]; then
	expect_same_text "v418.world: the tree differs from $G" "$G" "$TMP/v418.tree"
else
	fail "no golden listing $G (run tests/golden/update.sh)"
fi
expect_eq "header.json: records, as the reader counts them" "$(sed -n 's/.* records=\([0-9]*\) .*/\1/p' "$TMP/v418.check")" "$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"])' "$M/header.json")"
# grep -rw for a material id: the lines the reader counts.
n_grep=$(grep -rhw --include='*.tsv' -- '^[0-9]*	[0-9]*	7' "$M/world/tiles" | wc -l)
n_want=$("$PYTHON" "$SBDECODE" dump "$W/v418.world" "$TMP/d418" && cat "$TMP"/d418/world/tiles/*.tsv | awk -F'\t' '$3 == 7' | wc -l)
expect_eq "grep -rw finds every tile of material 7" "$n_want" "$n_grep"
check "a .txt grid names its materials" grep -q '^# [0-9a-zA-Z] = 7$' "$M/world/tiles/0,0.txt"
umount_sv "$M"

# ---- edits ----------------------------------------------------------------
C=$W/edit.world
cp "$W/v418.world" "$C"
cp "$C" "$W/before.world"
mount_sv "$C" "$M" || die "cannot mount $C"
# A tile: the first tile's foreground material becomes 12.
sed -i '3s/^\([0-9]*\t[0-9]*\t\)[0-9]*/\112/' "$M/world/tiles/1,0.tsv"
check "sed -i of a tile" test "$(sed -n 3p "$M/world/tiles/1,0.tsv" | cut -f3)" = 12
# A grid cell: the top-left foreground cell becomes the first legend entry.
g=$(sed -n 's/^# \(.\) = [0-9]*$/\1/p' "$M/world/tiles/2,0.txt" | sed -n 2p)
fgrow=$(grep -n '^# foreground$' "$M/world/tiles/2,0.txt" | cut -d: -f1)
sed -i "$((fgrow + 1))s/^./$g/" "$M/world/tiles/2,0.txt"
mat=$(sed -n "s/^# $g = \([0-9]*\)$/\1/p" "$M/world/tiles/2,0.txt")
check "sed -i of a grid cell reaches the .tsv" test "$(awk -F'\t' 'NR > 2 && $1 == 64 && $2 == 31 { print $3 }' "$M/world/tiles/2,0.tsv")" = "$mat"
# An entity's parameter.
sed -i 's/"a chest"/"an edited chest"/' "$M/world/entities/0,0.json"
check "sed -i of an entity parameter" grep -q '"an edited chest"' "$M/world/entities/0,0.json"
# cp onto a key, > to a new key, rm of a key.
k1=$(ls "$M/keys" | sed -n 3p)
k2=$(ls "$M/keys" | sed -n 4p)
cp "$M/keys/$k1" "$M/keys/$k2"
expect_same_file "cp onto a key" "$M/keys/$k1" "$M/keys/$k2"
printf 'hello starbound' > "$M/keys/0500010002"
expect_eq "> to a new key" "hello starbound" "$(cat "$M/keys/0500010002")"
rm "$M/keys/0500010002"
check "rm of a key" test ! -e "$M/keys/0500010002"
umount_sv "$M"
decoder_ok "after the edits" "$C" --exact
same_as_decoder "after the edits" "$C"
check "the tile edit is in the file" test "$(sv cat "$C" world/tiles/1,0.tsv | sed -n 3p | cut -f3)" = 12
check "the entity edit is in the file" grep -q '"an edited chest"' <(sv cat "$C" world/entities/0,0.json)

# diff -r between the two versions: exactly the edited records' files.
mount_sv "$W/before.world" "$TMP/m1" -o ro || die "mount before"
mount_sv "$C" "$M" -o ro || die "mount after"
diff -rq "$TMP/m1" "$M" 2> /dev/null | sed "s#$TMP/m1/##; s# and .*##; s#^Files ##; s#^Only in $M/keys: #new keys/#" |
	sort > "$TMP/diff.list"
{
	echo "header.json"
	echo "keys/$k2"
	echo "keys/0100010000"
	echo "keys/0100020000"
	echo "keys/0200000000"
	echo "preview.png"
} | sort > "$TMP/diff.want"
# The copied key's views changed too (it is a tile or entity sector or
# other); keep the keys' and header lines, and check the views apart.
grep -E '^(header\.json|keys/|preview\.png)' "$TMP/diff.list" > "$TMP/diff.keys"
expect_same_text "diff -r names the edited records" "$TMP/diff.want" "$TMP/diff.keys"
check "diff -r shows the tile's .tsv" grep -qx 'world/tiles/1,0.tsv' "$TMP/diff.list"
check "diff -r shows the entity sector" grep -qx 'world/entities/0,0.json' "$TMP/diff.list"
umount_sv "$M"
umount_sv "$TMP/m1"

# ---- entities and the unique index ------------------------------------------
mount_sv "$C" "$M" || die "cannot mount $C"
uid=$("$PYTHON" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["index"])[0])' "$M/world/uniques.json")
src=$("$PYTHON" -c 'import json,sys; i=json.load(open(sys.argv[1]))["index"][sys.argv[2]]; print("%d,%d" % tuple(i["sector"]))' "$M/world/uniques.json" "$uid")
dst=3,1
[ "$src" = "$dst" ] && dst=3,2
# Move the entity with that uniqueId to sector $dst (its position too).
"$PYTHON" - "$M/world/entities/$src.json" "$M/world/entities/$dst.json" "$uid" "$dst" << 'EOF' || fail "moving an entity"
import json, sys
a, b, uid, dst = sys.argv[1:]
src = json.load(open(a))
dest = json.load(open(b)) if __import__("os").path.exists(b) else []
moved = [e for e in src if e["content"].get("uniqueId") == uid]
src = [e for e in src if e["content"].get("uniqueId") != uid]
dx, dy = map(int, dst.split(","))
for e in moved:
    e["content"]["tilePosition"] = [dx * 32 + 3, dy * 32 + 4]
open(b, "w").write(json.dumps(dest + moved, indent=2))
open(a, "w").write(json.dumps(src, indent=2))
EOF
now=$("$PYTHON" -c 'import json,sys; i=json.load(open(sys.argv[1]))["index"][sys.argv[2]]; print("%d,%d %g,%g" % (tuple(i["sector"]) + tuple(i["position"])))' "$M/world/uniques.json" "$uid")
d1=${dst%,*}
d2=${dst#*,}
expect_eq "the moved entity is indexed at its new sector" "$dst $((d1 * 32 + 3)),$((d2 * 32 + 4))" "$now"
# Drop another uniqueId from its entity: it leaves the index.
uid2=$("$PYTHON" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["index"])[1])' "$M/world/uniques.json")
src2=$("$PYTHON" -c 'import json,sys; i=json.load(open(sys.argv[1]))["index"][sys.argv[2]]; print("%d,%d" % tuple(i["sector"]))' "$M/world/uniques.json" "$uid2")
sed -i "s/\"uniqueId\": \"$uid2\"/\"uniqueId\": null/" "$M/world/entities/$src2.json"
check "an entity's uniqueId removed leaves the index" test "$("$PYTHON" -c 'import json,sys; print(sys.argv[2] in json.load(open(sys.argv[1]))["index"])' "$M/world/uniques.json" "$uid2")" = False
umount_sv "$M"
decoder_ok "after the entity edits (types 3 and 4 agree with the sectors)" "$C" --exact

# ---- metadata and SBVJ01 ----------------------------------------------------
mount_sv "$C" "$M" || die "cannot mount $C"
sed -i 's/"threatLevel": 3/"threatLevel": 7/' "$M/world/metadata.json"
check "metadata edited" grep -q '"threatLevel": 7' "$M/world/metadata.json"
write_fails "metadata without a width" "Invalid argument" \
	sh -c "sed '/\"width\"/d' '$M/world/metadata.json' > '$TMP/meta.json' && cp '$TMP/meta.json' '$M/world/metadata.json'"
log_has "metadata without a width" 'world metadata needs "width" and "height"'
umount_sv "$M"
cp "$W/tester.player" "$W/edit.player"
mount_sv "$W/edit.player" "$M" || die "cannot mount edit.player"
sed -i 's/"Tester"/"Renamed"/' "$M/data.json"
umount_sv "$M"
decoder_ok "SBVJ01 after an edit" "$W/edit.player"
check "SBVJ01 edit landed" grep -q '"Renamed"' <(sv cat "$W/edit.player" data.json)
check "SBVJ01 keeps its trailer" grep -q '"subversions"' <(sv cat "$W/edit.player" data.json)

# ---- refusals ---------------------------------------------------------------
cp "$C" "$W/refuse.world"
C=$W/refuse.world
mount_sv "$C" "$M" || die "cannot mount $C"
cp "$C" "$W/container.before"
sed '3s/^\(\([^\t]*\t\)\{16\}\)[0-9]*/\19/' "$M/world/tiles/0,0.tsv" > "$TMP/bad.tsv"
write_fails "a collision of 9" "Invalid argument" cp "$TMP/bad.tsv" "$M/world/tiles/0,0.tsv"
log_has "a collision of 9" "line 3: collision must be 0 (null) to 5 (block)"
awk 'done == 0 && /^[^#]/ { $0 = "Q" substr($0, 2); done = 1 } { print }' "$M/world/tiles/0,0.txt" > "$TMP/bad.txt"
write_fails "a grid cell not in the legend" "Invalid argument" cp "$TMP/bad.txt" "$M/world/tiles/0,0.txt"
log_has "a grid cell not in the legend" "column 1: 'Q' is not in the legend"
printf '[{"id": "ObjectEntity", "content": {"uniqueId": "nowhere"}}]\n' > "$TMP/bad.json"
write_fails "an entity with a uniqueId and no position" "Invalid argument" cp "$TMP/bad.json" "$M/world/entities/0,0.json"
log_has "an entity with a uniqueId and no position" "entity 0 has a uniqueId but no position"
umount_sv "$M"
check "refused edits leave the file as it was" cmp -s "$W/container.before" "$C"
# A root tile at version 416.
cp "$W/v416.world" "$W/r416.world"
mount_sv "$W/r416.world" "$M" || die "cannot mount r416.world"
sed '3s/-$/1,2/' "$M/world/tiles/0,0.tsv" > "$TMP/bad.tsv"
write_fails "a root tile at 416" "Invalid argument" cp "$TMP/bad.tsv" "$M/world/tiles/0,0.tsv"
log_has "a root tile at 416" "line 3: a root needs a sector of version 418"
# The game holds universe.lock: nothing is written.
: > "$W/universe.lock"
cp "$W/r416.world" "$W/container.before"
flock -x "$W/universe.lock" sleep 5 &
lockpid=$!
sleep 0.3
write_fails "universe.lock held" "Device or resource busy" sh -c "sed -i 's/\"a chest\"/\"x\"/' '$M/world/entities/0,0.json'"
log_has "universe.lock held" "a world is not written while it runs"
kill "$lockpid" 2> /dev/null
wait "$lockpid" 2> /dev/null
rm -f "$W/universe.lock"
check "nothing written while universe.lock is held" cmp -s "$W/container.before" "$W/r416.world"
# Another program commits (a root flip) while mounted: the edit is refused,
# and the mount shows the file as the other program left it.
ls "$M/keys" > /dev/null
"$MKSBDB" put "$W/r416.world" 0600000000 "from another program" || fail "mksbdb put"
write_fails "a root flipped by another program" "Device or resource busy" sh -c "sed -i 's/\"a chest\"/\"y\"/' '$M/world/entities/0,0.json'"
log_has "a root flipped by another program" "was read again"
expect_eq "the other program's record shows after the refusal" "from another program" "$(cat "$M/keys/0600000000" 2> /dev/null)"
sed -i 's/"a chest"/"z"/' "$M/world/entities/0,0.json"
check "the next edit lands on the other program's tree" grep -q '"z"' "$M/world/entities/0,0.json"
umount_sv "$M"
decoder_ok "after the other program's commit and ours" "$W/r416.world" --exact
expect_eq "both commits are in the file" "from another program" "$(sv cat "$W/r416.world" keys/0600000000)"

# ---- space: freed blocks are reused ------------------------------------------
cp "$W/v416.world" "$W/grow.world"
mount_sv "$W/grow.world" "$M" || die "cannot mount grow.world"
sizes=()
for i in $(seq 1 100); do
	sed -i "s/\"description\": \"[^\"]*\"/\"description\": \"edit $i\"/" "$M/world/entities/1,0.json" ||
		{ fail "edit $i"; break; }
	[ $((i % 10)) -eq 0 ] && sizes+=("$(stat -c %s "$W/grow.world")")
done
umount_sv "$M"
printf 'file size after each 10 edits: %s\n' "${sizes[*]}"
expect_eq "the file stops growing (the last 50 edits)" "${sizes[5]}" "${sizes[9]}"
decoder_ok "after 100 edits" "$W/grow.world" --exact

# ---- a daemon (not -f) with a container past 16 MiB ----------------------------
# Its fingerprint is made by a worker thread, started when the container is
# opened, before the daemon forks: a thread running at the fork (inside the
# allocator, under a sanitizer) left the child waiting on its lock forever,
# and commits hung; the worker now finishes before the fork.
"$MKSBDB" world "$W/large.world" -s 1 -e 1 -L 40000000 || die "mksbdb large world"
check "the large world is past 16 MiB" test "$(stat -c %s "$W/large.world")" -gt $((16 << 20))
mkdir -p "$TMP/md"
"$SAVEFS" "$W/large.world" "$TMP/md" || fail "savefs (daemon) failed to mount"
for i in 1 2 3; do
	check "daemonised: edit $i commits" timeout 120 sed -i "s/\"a chest\"/\"daemon $i\"/" "$TMP/md/world/entities/0,0.json"
done
check "daemonised: the last edit is there" timeout 120 grep -q '"daemon 1"' "$TMP/md/world/entities/0,0.json"
fusermount3 -u "$TMP/md" || fusermount3 -u -z "$TMP/md"
decoder_ok "after the daemon's commits" "$W/large.world" --exact

# ---- crashes at every step of a commit ---------------------------------------
for step in blocks synced root flipped; do
	cp "$W/v416.world" "$W/crash.world"
	killed_during "$step" "$W/crash.world" "$M" sed -i 's/"a chest"/"crashed"/' "$M/world/entities/0,0.json"
	expect_eq "killed at $step: the daemon died by SIGKILL" 137 "$KILLED_RC"
	decoder_ok "killed at $step" "$W/crash.world"
	same_as_decoder "killed at $step" "$W/crash.world"
	if [ "$step" = flipped ]; then
		check "killed after the flip: the new tree" grep -q '"crashed"' <(sv cat "$W/crash.world" world/entities/0,0.json)
	else
		check "killed at $step: the old tree" grep -q '"a chest"' <(sv cat "$W/crash.world" world/entities/0,0.json)
		# The next commit goes on from the old tree.
		mount_sv "$W/crash.world" "$M" || die "remount after $step"
		sed -i 's/"a chest"/"after"/' "$M/world/entities/0,0.json"
		umount_sv "$M"
		decoder_ok "a commit after the crash at $step" "$W/crash.world" --exact
	fi
done

# A unique index entry whose position is not a number: uniques.json reads,
# through the mount too, at the size stat gives (it read as an empty file).
NAN=$SRC_ROOT/tests/data/bad/starbound/unique-position-nan
mount_sv "$NAN.world" "$TMP/nan" -o ro || die "mount"
expect_same_file "uniques.json with a NaN position, through the mount" "$NAN.expect" \
	"$TMP/nan/world/uniques.json"
expect_eq "its size in stat" "$(stat -c %s "$NAN.expect")" "$(stat -c %s "$TMP/nan/world/uniques.json")"
umount_sv "$TMP/nan"

finish
