#!/bin/bash
# truth.sh - after a commit every view tells the truth, and times mean what
# they say.
#
#   - a commit through one view of a Starbound record drops the kernel's
#     cache of every other view of it before close() returns: the mount
#     then shows what a fresh `savefs cat` of the file shows, and a later
#     edit through another view keeps the first (the sequence that used to
#     write old tiles back);
#   - a file's mtime moves exactly when its bytes change, for every file of
#     the tree, after edits of each family (Starbound .tsv, .txt and entity
#     views; a Sketchy Maze chunk; a map tile; a recording's metadata);
#   - writing a file's own bytes back commits nothing: the container keeps
#     its inode, size and mtime;
#   - times set with touch -d and by rsync -a hold for the life of the
#     mount: a second rsync -a of a backup onto the mount sends nothing;
#   - every real in every JSON view is the shortest decimal that reads
#     back to the same double (generated world and player, the samples).

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
command -v rsync > /dev/null || skip "rsync is not installed"
for t in "$MKSBDB" "$MKDOODLE" "$MKDATAFILE" "$MKRECORDING"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done
W=$TMP/w
mkdir -p "$W"
M=$TMP/mnt

# container_id FILE: what tells that a file was not touched.
container_id()
{
	stat -c '%i %s %.9Y' -- "$1"
}

# mount_is_fresh DESC CONTAINER: the mounted tree equals what a new
# process reads from the container now (savefs extract), file for file.
mount_is_fresh()
{
	rm -rf -- "$TMP/fresh"
	sv extract "$2" "$TMP/fresh" || { fail "$1: savefs extract failed"; return 1; }
	CHECKS=$((CHECKS + 1))
	if ! diff -r --exclude=.savefs -- "$TMP/fresh" "$M" > "$TMP/fresh.diff" 2>&1; then
		fail "$1: the mount shows other bytes than the container holds"
		head -n 10 "$TMP/fresh.diff" | sed 's/^/    /'
		return 1
	fi
}

# ---- Starbound: a stale view must not undo an edit -----------------------
"$MKSBDB" world "$W/w.world" -c 3 || die "mksbdb world"
mount_sv "$W/w.world" "$M" || die "mount"
T=$M/world/tiles/0,0
K=$M/keys/0100000000
snap_tree "$M" "$TMP/s0"
cat "$T.txt" "$T.png" "$K" > /dev/null
expect_eq "tile (0,0) before" "1" "$(awk -F'\t' 'NR == 3 { print $3 }' "$T.tsv")"
check "sed -i of a .tsv line commits" sed -i '3s/^0\t0\t1\t/0\t0\t7\t/' "$T.tsv"
# No wait, no direct I/O: the cached views must already be gone.
sv cat "$W/w.world" world/tiles/0,0.txt > "$TMP/fresh.txt"
expect_same_file "the .txt read before the .tsv edit shows it at once" "$TMP/fresh.txt" "$T.txt"
sv cat "$W/w.world" world/tiles/0,0.png > "$TMP/fresh.png"
expect_same_file "the .png shows it at once" "$TMP/fresh.png" "$T.png"
sv cat "$W/w.world" keys/0100000000 > "$TMP/fresh.key"
expect_same_file "keys/0100000000 shows it at once" "$TMP/fresh.key" "$K"
mount_is_fresh "after the .tsv edit" "$W/w.world"
snap_tree "$M" "$TMP/s1"
times_follow_bytes "after the .tsv edit" "$TMP/s0" "$TMP/s1"
expect_eq "what the .tsv edit changed" \
	"./header.json ./keys/0100000000 ./preview.png ./world/tiles/0,0.png ./world/tiles/0,0.tsv ./world/tiles/0,0.txt" \
	"$(changed_files "$TMP/s0" "$TMP/s1" | tr '\n' ' ' | sed 's/ $//')"

# The .txt edit that used to write the old tiles back: the bottom
# foreground row is the 32nd grid row; its second cell becomes '0'.
first=$(grep -n -v '^#' "$T.txt" | head -1 | cut -d: -f1)
row=$((first + 31))
legend0=$(grep '^# 0 = ' "$T.txt" | sed 's/^# 0 = //')
check "sed -i of a .txt cell commits" sed -i "${row}s/^\\(.\\)./\\10/" "$T.txt"
expect_eq "the .tsv edit is still there" "7" "$(awk -F'\t' 'NR == 3 { print $3 }' "$T.tsv")"
expect_eq "the .txt edit is in the .tsv" "$legend0" "$(awk -F'\t' 'NR == 4 { print $3 }' "$T.tsv")"
mount_is_fresh "after the .txt edit" "$W/w.world"
snap_tree "$M" "$TMP/s2"
times_follow_bytes "after the .txt edit" "$TMP/s1" "$TMP/s2"
remount_sv "$M" || die "remount"
expect_eq "after a remount, the .tsv edit" "7" "$(awk -F'\t' 'NR == 3 { print $3 }' "$T.tsv")"
expect_eq "after a remount, the .txt edit" "$legend0" "$(awk -F'\t' 'NR == 4 { print $3 }' "$T.tsv")"
snap_tree "$M" "$TMP/s3"

# An entity sector against its keys/ record.
E=$(cd "$M/world/entities" && ls | head -1)
EK=$M/keys/02$(printf '%04x%04x' "${E%%,*}" "$(basename "${E#*,}" .json)")
cat "$EK" > /dev/null
check "an entity edit commits" sed -i '0,/"version": [0-9]*/s//"version": 9/' "$M/world/entities/$E"
sv cat "$W/w.world" "keys/${EK##*/}" > "$TMP/fresh.ent"
expect_same_file "keys/ of the entity sector shows the edit at once" "$TMP/fresh.ent" "$EK"
mount_is_fresh "after the entity edit" "$W/w.world"
snap_tree "$M" "$TMP/s4"
times_follow_bytes "after the entity edit" "$TMP/s3" "$TMP/s4"

# ---- identical bytes commit nothing --------------------------------------
before=$(container_id "$W/w.world")
cat "$T.txt" > "$TMP/same.txt"
check "writing a .txt's own bytes back" sh -c "cat '$TMP/same.txt' > '$T.txt'"
cp "$K" "$TMP/same.key"
check "cp of a key's own bytes onto it" cp "$TMP/same.key" "$K"
check "sed -i that changes nothing" sed -i 's/^x/x/' "$T.tsv"
expect_eq "the container was not touched" "$before" "$(container_id "$W/w.world")"
snap_tree "$M" "$TMP/s5"
expect_same_text "no file's bytes or mtime moved" "$TMP/s4" "$TMP/s5"
check "nothing was committed" sh -c "! grep -q committed '$M/.savefs/log' || \
	[ \"\$(grep -c committed '$M/.savefs/log')\" = 1 ]"

# ---- times set by a client ------------------------------------------------
check "touch -d" touch -d '2001-02-03 04:05:06.25 UTC' "$T.tsv"
expect_eq "stat shows the time touch set" "981173106.250000000" "$(stat -c '%.9Y' "$T.tsv")"
check "touch -d of a directory" touch -d '2002-01-01 00:00:00 UTC' "$M/world"
expect_eq "a directory keeps it too" "1009843200" "$(stat -c '%Y' "$M/world")"
expect_eq "the container was not touched by touch" "$before" "$(container_id "$W/w.world")"
rm -rf -- "$TMP/backup"
check "rsync -a of the mount to a backup" rsync -a --exclude=/.savefs "$M/" "$TMP/backup/"
# The backup's times moved (as a restore from an older backup would have).
find "$TMP/backup" -type f -exec touch -d '2003-03-03 03:03:03 UTC' {} +
check "rsync -a of the backup onto the mount" rsync -a --exclude=/.savefs "$TMP/backup/" "$M/"
check "a second rsync -a sends nothing" sh -c "rsync -a --stats --exclude=/.savefs \
	'$TMP/backup/' '$M/' | grep -q '^Number of regular files transferred: 0\$'"
expect_eq "the restore of identical bytes did not touch the container" "$before" \
	"$(container_id "$W/w.world")"
expect_eq "the times the restore set" "1046660583" "$(stat -c '%Y' "$T.png")"
# A later change of bytes moves the time again.
check "an edit after touch" sed -i '3s/^0\t0\t7\t/0\t0\t8\t/' "$T.tsv"
check "the edited file's time is new" test "$(stat -c '%Y' "$T.tsv")" -gt 1046660583
check "its other views' times are new" test "$(stat -c '%Y' "$T.txt")" -gt 1046660583
expect_eq "an unchanged view keeps the time set" "1046660583" \
	"$(stat -c '%Y' "$M/world/metadata.json")"
umount_sv "$M"

# ---- the other families: mtimes follow bytes -----------------------------
# edit_and_compare NAME CONTAINER COMMAND: mounts, snapshots, runs the edit
# (with $M set), checks the mount against the container and the times.
edit_and_compare()
{
	mount_sv "$2" "$M" || return 1
	snap_tree "$M" "$TMP/a"
	check "$1: the edit" env M="$M" sh -c "$3"
	mount_is_fresh "$1" "$2"
	snap_tree "$M" "$TMP/b"
	times_follow_bytes "$1" "$TMP/a" "$TMP/b"
	CHECKS=$((CHECKS + 1))
	[ -n "$(changed_files "$TMP/a" "$TMP/b")" ] || fail "$1: the edit changed nothing"
	umount_sv "$M"
}

"$MKDOODLE" level "$W/a.level" --count 4 --seed 3 > /dev/null || die "mkdoodle"
edit_and_compare "Sketchy Maze chunk" "$W/a.level" \
	'f=$(ls "$M"/chunks/0/*.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^./0/" "$f"'
"$MKDATAFILE" map "$W/m.map" --flavour ddnet --seed 2 || die "mkdatafile map"
edit_and_compare "map tile" "$W/m.map" \
	'f=$(find "$M/map/groups" -name tiles.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^.../010/" "$f"'
"$MKRECORDING" compacted "$W/r.hcrp" -n 300 -e 3 -s 3 -z 3 || die "mkrecording"
edit_and_compare "recording metadata" "$W/r.hcrp" \
	'printf "{name:\"changed\"}\n" > "$M/metadata.snbt"'

# ---- shortest decimals in JSON views ---------------------------------------
# shortest_json DESC DIR: no number in DIR's .json files has more
# significant digits than the shortest that reads back to its double.
shortest_json()
{
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" - "$2" > "$TMP/short.out" 2>&1 << 'PY'
import os, re, sys
bad = 0
num = re.compile(r'(?<![\w."])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w"])')
def sig(t):
    m = t.lstrip('-').split('e')[0].split('E')[0].replace('.', '').lstrip('0')
    return len(m.rstrip('0')) or 1
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        if not f.endswith('.json'):
            continue
        text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
        for t in num.findall(text):
            if '.' not in t and 'e' not in t.lower():
                continue
            if sig(t) > sig(repr(float(t))):
                print('%s: %s, where %s reads back the same' % (f, t, repr(float(t))))
                bad += 1
                if bad > 5:
                    sys.exit(1)
sys.exit(1 if bad else 0)
PY
	then
		fail "$1: a JSON view holds a longer decimal than needed"
		sed 's/^/    /' "$TMP/short.out"
		return 1
	fi
}
"$MKSBDB" sbvj01 "$W/p.player" -o || die "mksbdb sbvj01"
for f in w.world p.player; do
	rm -rf -- "$TMP/x"
	sv extract "$W/$f" "$TMP/x" || fail "extract $f"
	shortest_json "generated $f" "$TMP/x"
done
if [ -d "$SAMPLES/starbound" ]; then
	for f in "$SAMPLES"/starbound/*; do
		rm -rf -- "$TMP/x"
		sv extract "$f" "$TMP/x" || fail "extract $f"
		shortest_json "sample $(basename "$f")" "$TMP/x"
	done
	S=$(ls "$SAMPLES"/starbound/*.world | head -1)
	sv cat "$S" world/entities/0,17.json > "$TMP/e.json"
	check "the sample's 2689.0080113 is shown so" grep -q '2689\.0080113,\?$' "$TMP/e.json"
else
	printf 'SKIP (part): ../shared/samples/starbound is absent: the sample checks are left out\n'
fi

finish
