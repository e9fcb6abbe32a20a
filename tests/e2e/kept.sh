#!/bin/bash
# kept.sh - views and their sizes kept between mounts, under
# $XDG_CACHE_HOME/savefs/: a second mount serves them without building them
# (counted by /.savefs/info's "kept"), and never after the container
# changed (its bytes with the size and time put back; replaced by another
# program); a damaged, cut-short or foreign cache file is ignored and the
# view built again; two mounts filling the cache at once; -o noindex keeps
# nothing; a save folder's containers too.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"
[ -x "$MKSBDB" ] || die "MKSBDB=$MKSBDB is not an executable (build first)"
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"

STORE=$XDG_CACHE_HOME/savefs
M=$TMP/m


# read_all MNT: every file's bytes (into a listing, without the warm pass).
read_all()
{
	TREE_WARM=no tree_listing "$1"
}

# Two levels of one size, the same but for one byte of the title (a v1
# level is one JSON object, stored as it is).
"$MKDOODLE" level "$TMP/a.level" --container json --chunks map --count 12 --seed 3 \
	--title Alpha1 > /dev/null || die "mkdoodle failed"
"$MKDOODLE" level "$TMP/b.level" --container json --chunks map --count 12 --seed 3 \
	--title Alpha2 > /dev/null || die "mkdoodle failed"
expect_eq "the two levels have one size" "$(stat -c %s "$TMP/a.level")" "$(stat -c %s "$TMP/b.level")"
check "the two levels differ" sh -c "! cmp -s '$TMP/a.level' '$TMP/b.level'"
cp -- "$TMP/a.level" "$TMP/c.level"

# ---- cold, then warm ----
mount_sv "$TMP/c.level" "$M" || die "cannot mount c.level"
expect_eq "cold: no size read from the disk before a look" 0 "$(kept_count "$M" sizes_read)"
ls -lR "$M" > /dev/null
built_ls=$(kept_count "$M" views_built)
[ "$built_ls" -gt 0 ] || fail "cold: ls -lR built no view to size it (built $built_ls)"
read_all "$M" > "$TMP/cold.tree"
built=$(kept_count "$M" views_built)
expect_eq "cold: every view built was stored" "$built" "$(kept_count "$M" views_stored)"
expect_eq "cold: none past the level's budget" 0 "$(kept_count "$M" views_unkept)"
expect_eq "cold: no view read from the disk" 0 "$(kept_count "$M" views_read)"
umount_sv "$M"
check "the sizes record and the views are on disk" test -d "$STORE/views"
nviews=$(find "$STORE/views" -type f | wc -l)
expect_eq "one view record per view built" "$built" "$nviews"

mount_sv "$TMP/c.level" "$M" || die "cannot mount c.level again"
ls -lR "$M" > /dev/null
expect_eq "warm: ls -lR built no view" 0 "$(kept_count "$M" views_built)"
expect_eq "warm: the sizes ls -lR needed came from the disk" "$built_ls" "$(kept_count "$M" sizes_read)"
du -s "$M" > /dev/null
find "$M" -size +1k > /dev/null
expect_eq "warm: du and find -size built no view" 0 "$(kept_count "$M" views_built)"
read_all "$M" > "$TMP/warm.tree"
expect_same_text "warm: the same tree, every byte" "$TMP/cold.tree" "$TMP/warm.tree"
expect_eq "warm: no view built" 0 "$(kept_count "$M" views_built)"
expect_eq "warm: every view read from the disk" "$built" "$(kept_count "$M" views_read)"
umount_sv "$M"

# ---- a commit carries what it left as it was ----
# The title changed through the mount: the views the commit did not
# change are not stored again, yet a remount builds none of them.
"$MKDOODLE" level "$TMP/e.level" --container zip --chunks rle --count 12 --seed 4 > /dev/null ||
	die "mkdoodle failed"
mount_sv "$TMP/e.level" "$M" || die "cannot mount e.level"
read_all "$M" > /dev/null
before=$(kept_count "$M" views_stored)
[ "$before" -gt 10 ] || fail "commit: only $before views stored at first"
sed -i 's/"title": "[^"]*"/"title": "Carried"/' "$M/level.json" || fail "commit: the edit failed"
read_all "$M" > "$TMP/e.tree"
grep -q '"Carried"' "$M/level.json" || fail "commit: level.json lacks the new title"
stored=$(( $(kept_count "$M" views_stored) - before ))
[ "$stored" -ge 1 ] && [ "$stored" -le 2 ] ||
	fail "commit: $stored views stored again after it (level.json, perhaps the preview: not all $before)"
umount_sv "$M"
mount_sv "$TMP/e.level" "$M" || die "cannot mount e.level after its commit"
read_all "$M" > "$TMP/e.warm"
expect_same_text "commit, warm: the same tree" "$TMP/e.tree" "$TMP/e.warm"
expect_eq "commit, warm: no view built" 0 "$(kept_count "$M" views_built)"
umount_sv "$M"

# ---- changed: the same size and mtime, other bytes (same inode) ----
touch -r "$TMP/c.level" "$TMP/when"
cat -- "$TMP/b.level" > "$TMP/c.level"
touch -r "$TMP/when" "$TMP/c.level"
expect_eq "changed in place: the mtime put back" "$(stat -c %Y.%y "$TMP/when")" \
	"$(stat -c %Y.%y "$TMP/c.level")"
mount_sv "$TMP/c.level" "$M" || die "cannot mount the changed c.level"
read_all "$M" > "$TMP/changed.tree"
expect_eq "changed in place: no size from the disk" 0 "$(kept_count "$M" sizes_read)"
expect_eq "changed in place: no view from the disk" 0 "$(kept_count "$M" views_read)"
check "changed in place: level.json shows the new title" grep -q '"Alpha2"' "$M/level.json"
umount_sv "$M"
mount_sv "$TMP/b.level" "$TMP/mb" || die "cannot mount b.level"
read_all "$TMP/mb" > "$TMP/b.tree"
umount_sv "$TMP/mb"
expect_same_text "changed in place: the tree is the new level's" "$TMP/b.tree" "$TMP/changed.tree"

# ---- replaced by another program (a new file renamed over it) ----
cp -- "$TMP/a.level" "$TMP/c.new"
touch -r "$TMP/c.level" "$TMP/c.new"
mv -- "$TMP/c.new" "$TMP/c.level"
mount_sv "$TMP/c.level" "$M" || die "cannot mount the replaced c.level"
read_all "$M" > "$TMP/replaced.tree"
expect_eq "replaced: no view from the disk" 0 "$(kept_count "$M" views_read)"
expect_same_text "replaced: the tree is the new file's" "$TMP/cold.tree" "$TMP/replaced.tree"
umount_sv "$M"

# ---- damaged, cut short, foreign ----
# Every view record of the container as it is now gets one of three
# harms in turn: a byte of its payload flipped, cut short, or another
# record's bytes.
mapfile -t recs < <(find "$STORE/views" -type f | sort)
[ "${#recs[@]}" -ge 6 ] || fail "only ${#recs[@]} view records"
for ((k = 0; k < ${#recs[@]}; k++)); do
	r=${recs[$k]}
	case $((k % 3)) in
	0) "$PYTHON" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-1]^=0x55; open(p,"wb").write(b)' "$r" ;;
	1) truncate -s -3 -- "$r" ;;
	2) cat -- "${recs[$(((k + 1) % ${#recs[@]}))]}" > "$r" ;;
	esac
done
mount_sv "$TMP/c.level" "$M" || die "cannot mount c.level over a damaged cache"
read_all "$M" > "$TMP/damaged.tree"
expect_same_text "damaged cache: the same tree, every byte" "$TMP/cold.tree" "$TMP/damaged.tree"
expect_eq "damaged cache: no view read from a damaged record" 0 "$(kept_count "$M" views_read)"
expect_eq "damaged cache: each view built again and stored" "$(kept_count "$M" views_built)" \
	"$(kept_count "$M" views_stored)"
umount_sv "$M"
mount_sv "$TMP/c.level" "$M" || die "cannot mount c.level after the rebuild"
read_all "$M" > "$TMP/rebuilt.tree"
expect_same_text "after the rebuild: the same tree" "$TMP/cold.tree" "$TMP/rebuilt.tree"
expect_eq "after the rebuild: no view built" 0 "$(kept_count "$M" views_built)"
umount_sv "$M"

# The sizes records damaged (each a byte of its payload): no size from
# them, the right sizes.
nsizes=$("$PYTHON" - "$STORE" <<'EOF'
import os, sys
n = 0
for name in os.listdir(sys.argv[1]):
    p = os.path.join(sys.argv[1], name)
    if not os.path.isfile(p):
        continue
    b = bytearray(open(p, "rb").read())
    # The record's header: "what" is its last 32 bytes (160 in all).
    if len(b) > 160 and b[128:160].rstrip(b"\0") == b"sizes":
        b[-5] ^= 1
        open(p, "wb").write(b)
        n += 1
print(n)
EOF
)
[ "$nsizes" -ge 1 ] || fail "no sizes record in $STORE"
mount_sv "$TMP/c.level" "$M" || die "cannot mount c.level over a damaged sizes record"
ls -lR "$M" > /dev/null
expect_eq "damaged sizes record: no size read from it" 0 "$(kept_count "$M" sizes_read)"
read_all "$M" > "$TMP/sizes.tree"
expect_same_text "damaged sizes record: the same tree" "$TMP/cold.tree" "$TMP/sizes.tree"
umount_sv "$M"

# ---- two mounts filling the cache at once ----
rm -rf -- "$STORE"
"$MKSBDB" world "$TMP/w.world" > /dev/null || die "mksbdb failed"
mount_sv "$TMP/w.world" "$TMP/m1" -o ro || die "cannot mount w.world"
mount_sv "$TMP/w.world" "$TMP/m2" -o ro || die "cannot mount w.world twice"
# (Each listing in a directory of its own: tree_listing's files are $TMP's.)
mkdir -p "$TMP/t1" "$TMP/t2"
(TMP=$TMP/t1 read_all "$TMP/m1" > "$TMP/w1.tree") &
lister=$!
(TMP=$TMP/t2 read_all "$TMP/m2" > "$TMP/w2.tree")
wait "$lister" || fail "two mounts at once: the first listing failed"
expect_same_text "two mounts at once: the same tree" "$TMP/w1.tree" "$TMP/w2.tree"
umount_sv "$TMP/m1"
umount_sv "$TMP/m2"
mount_sv "$TMP/w.world" "$M" || die "cannot mount w.world warm"
read_all "$M" > "$TMP/w3.tree"
expect_same_text "after two mounts at once: the same tree" "$TMP/w1.tree" "$TMP/w3.tree"
expect_eq "after two mounts at once: no view built" 0 "$(kept_count "$M" views_built)"
[ "$(kept_count "$M" views_read)" -gt 0 ] || fail "after two mounts at once: no view read from the disk"
umount_sv "$M"

# ---- -o noindex keeps nothing ----
rm -rf -- "$STORE"
mount_sv "$TMP/w.world" "$M" -o noindex || die "cannot mount w.world -o noindex"
read_all "$M" > /dev/null
expect_eq "noindex: nothing stored" 0 "$(kept_count "$M" views_stored)"
umount_sv "$M"
check "noindex: no store made" test ! -e "$STORE/views"

# ---- views many times their container ----
# A map of 600x600 tiles: its grids as text are thirty times the file, past
# the budget of the map's size four times and 4 MB as built, within it as
# stored (a zstd frame each where that saves an eighth).  A cache that
# holds them all: each view is built (cold) or read back (warm) once, so
# the counts below count views, not a view again after it was evicted.
"$MKDATAFILE" map "$TMP/wide.map" --size 600x600 --seed 5 > /dev/null || die "mkdatafile failed"
rm -rf -- "$STORE"
mount_sv "$TMP/wide.map" "$M" -o cache=512M || die "cannot mount wide.map"
read_all "$M" > "$TMP/wide.cold"
views=$(du -sb --apparent-size --exclude=.savefs "$M" | cut -f1)
built=$(kept_count "$M" views_built)
expect_eq "wide map, cold: every view built was stored" "$built" "$(kept_count "$M" views_stored)"
expect_eq "wide map, cold: none past its budget" 0 "$(kept_count "$M" views_unkept)"
umount_sv "$M"
map=$(stat -c %s "$TMP/wide.map")
[ "$views" -gt $((map * 4 + 4194304)) ] || fail "wide map: its views ($views bytes) fit the budget as built"
on_disk=$(find "$STORE/views" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
[ "$on_disk" -lt $((views / 4)) ] || fail "wide map: $on_disk bytes on disk for $views of views"
mount_sv "$TMP/wide.map" "$M" -o cache=512M || die "cannot mount wide.map again"
read_all "$M" > "$TMP/wide.warm"
expect_same_text "wide map, warm: the same tree, every byte" "$TMP/wide.cold" "$TMP/wide.warm"
expect_eq "wide map, warm: no view built" 0 "$(kept_count "$M" views_built)"
expect_eq "wide map, warm: every view read from the disk" "$built" "$(kept_count "$M" views_read)"
umount_sv "$M"

# ---- the views' cap ----
# 256 KB (SAVEFS_TEST_VIEWS_CAP), a quarter of it for each container: six
# levels fill it.  The cap is looked at each sixteenth of it stored, so the
# records never hold more than the cap, a sixteenth and a view.
views_bytes() {
	find "$STORE/views" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'
}
rm -rf -- "$STORE"
mkdir -p "$TMP/six"
for i in 1 2 3 4 5 6; do
	"$MKDOODLE" level "$TMP/six/l$i.level" --container zip --chunks rle --count 100 --seed "$i" \
		> /dev/null || die "mkdoodle failed"
done
SAVEFS_TEST_VIEWS_CAP=262144 mount_sv "$TMP/six" "$M" || die "cannot mount the six levels"
peak=0 k=0
for f in "$M"/*.level/chunks/*/*.txt "$M"/*.level/chunks/*/*.png; do
	cat -- "$f" > /dev/null
	k=$((k + 1))
	[ $((k % 25)) = 0 ] || continue
	now=$(views_bytes)
	[ "$now" -gt "$peak" ] && peak=$now
done
stored=$(kept_count "$M" views_stored)
unkept=$(kept_count "$M" views_unkept)
umount_sv "$M"
[ "$unkept" -gt 0 ] || fail "cap: no view past a level's budget (the levels grew small?)"
most=$(find "$STORE/views" -type f -printf '%s\n' | sort -n | tail -n 1)
left=$(find "$STORE/views" -type f | wc -l)
[ "$left" -lt "$stored" ] || fail "cap: $stored views stored, $left left: none went for the cap"
[ "$peak" -le $((262144 + 262144 / 16 + most)) ] ||
	fail "cap: the views directory held $peak bytes (cap 262144)"
[ "$(views_bytes)" -le $((262144 + 262144 / 16 + most)) ] ||
	fail "cap: the views directory holds more than its cap"

# ---- a container whose decodes say something ----
# (A quirk ignored, in the log: each mount decodes, and says it again.)
q="$TMP/quirk.level"
cp -- "$(dirname "$0")/../data/bad/doodle/map-pixel-outside.level" "$q"
for round in cold warm; do
	mount_sv "$q" "$M" || die "cannot mount the quirky level"
	read_all "$M" > /dev/null
	check "$round: the log says the quirk" grep -q 'chunks/0/0,0: 1 pixel(s) outside the chunk: ignored' "$M/.savefs/log"
	[ "$round" = cold ] || expect_eq "warm: nothing kept is served for it" 0 "$(kept_count "$M" views_read)"
	umount_sv "$M"
done

# ---- a save folder's containers ----
mkdir -p "$TMP/saves/sub"
cp -- "$TMP/a.level" "$TMP/saves/one.level"
cp -- "$TMP/w.world" "$TMP/saves/sub/w.world"
mount_sv "$TMP/saves" "$M" || die "cannot mount the folder"
read_all "$M" | grep -v '/\.savefs/info$' > "$TMP/folder.cold"
[ "$(kept_count "$M" views_stored)" -gt 0 ] || fail "folder: no view stored"
umount_sv "$M"
mount_sv "$TMP/saves" "$M" || die "cannot mount the folder again"
ls -lR "$M" > /dev/null
du -s "$M" > /dev/null
expect_eq "folder, warm: ls -lR and du built no view" 0 "$(kept_count "$M" views_built)"
read_all "$M" | grep -v '/\.savefs/info$' > "$TMP/folder.warm"
expect_same_text "folder, warm: the same tree" "$TMP/folder.cold" "$TMP/folder.warm"
expect_eq "folder, warm: no view built" 0 "$(kept_count "$M" views_built)"
umount_sv "$M"

finish
