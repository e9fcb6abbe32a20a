#!/bin/bash
# recipes.sh - the README's backup and restore lines, run exactly as it
# prints them (MNT standing for the mount point, run in a scratch
# directory), on a level, a map and a world, and on a save folder holding
# all three: each exits 0; a restore after edits brings the tree back to
# the backup's bytes, and the container passes the game's loader rules
# (and DDNet's map_resave); a restore of an unchanged tree commits
# nothing, and a second rsync sends nothing.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
command -v rsync > /dev/null || skip "rsync is not installed"
command -v tar > /dev/null || skip "tar is not installed"
W=$TMP/w
mkdir -p "$W"
M=$TMP/mnt

# The lines of the README's first ```sh block after "Backing a mount's tree".
mapfile -t RECIPES < <(awk '
	/Backing a mount.s tree up/ { on = 1 }
	on && /^ *```sh/ { inblock = 1; next }
	inblock && /^ *```/ { exit }
	inblock { sub(/^ +/, ""); print }' "$SRC_ROOT/README.md")
expect_eq "the README has four recipe lines" 4 "${#RECIPES[@]}"
BACKUP_TAR=${RECIPES[0]}
RESTORE_TAR=${RECIPES[1]}
BACKUP_RSYNC=${RECIPES[2]}
RESTORE_RSYNC=${RECIPES[3]}

# recipe DESC LINE: runs a README line in $TMP/run with MNT the mount.
recipe()
{
	local line=${2//MNT/$M}
	CHECKS=$((CHECKS + 1))
	(cd "$TMP/run" && eval "$line") > "$TMP/recipe.out" 2>&1
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$1: \`$2\` exited with $rc"
		head -n 10 "$TMP/recipe.out" | sed 's/^/    /'
		return 1
	fi
}

# same_tree DESC DIR: the mount's files have DIR's bytes (but for each
# container's header.json: its layout, which restores leave out).
same_tree()
{
	CHECKS=$((CHECKS + 1))
	diff -rq --exclude=.savefs -- "$2" "$M" 2>&1 | grep -v "^Files .*/header.json and " \
		> "$TMP/tree.diff"
	if [ -s "$TMP/tree.diff" ]; then
		fail "$1: the mount differs from the backup"
		head -n 10 "$TMP/tree.diff" | sed 's/^/    /'
		return 1
	fi
}

# round DESC CONTAINER EDIT: backs up with both tools, restores the
# unchanged tree (nothing committed), edits, restores with tar, edits
# again, restores with rsync.
round()
{
	local desc=$1 c=$2 edit=$3
	rm -rf -- "$TMP/run"
	mkdir -p "$TMP/run"
	mount_sv "$c" "$M" || return 1
	recipe "$desc: tar backup" "$BACKUP_TAR"
	recipe "$desc: rsync backup" "$BACKUP_RSYNC"
	check "$desc: the tar backup has no .savefs" \
		sh -c "! tar tf '$TMP/run/backup.tar' | grep -q savefs"
	mkdir -p "$TMP/ref"
	rm -rf -- "$TMP/ref"/*
	tar xf "$TMP/run/backup.tar" -C "$TMP/ref"
	local id
	id=$(stat -c '%i %s %.9Y' -- "$c")
	recipe "$desc: tar restore of an unchanged tree" "$RESTORE_TAR"
	recipe "$desc: rsync restore of an unchanged tree" "$RESTORE_RSYNC"
	expect_eq "$desc: restoring the unchanged tree left the container as it was" \
		"$id" "$(stat -c '%i %s %.9Y' -- "$c")"
	# rsync compares whole seconds: each edit lands in a second of its own.
	sleep 1.1
	check "$desc: edit 1" env M="$M" sh -c "$edit"
	recipe "$desc: tar restore" "$RESTORE_TAR"
	same_tree "$desc: after the tar restore" "$TMP/ref"
	game_loads "$desc: after the tar restore" "$c"
	sleep 1.1
	check "$desc: edit 2" env M="$M" sh -c "$edit"
	recipe "$desc: rsync restore" "$RESTORE_RSYNC"
	same_tree "$desc: after the rsync restore" "$TMP/ref"
	game_loads "$desc: after the rsync restore" "$c"
	umount_sv "$M"
	mount_sv "$c" "$M" || return 1
	same_tree "$desc: after a remount" "$TMP/ref"
	umount_sv "$M"
}

"$MKDOODLE" level "$W/a.level" --container zip --count 4 --seed 3 --assets 1 > /dev/null ||
	die "mkdoodle"
round "level" "$W/a.level" \
	'f=$(ls "$M"/chunks/0/*.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^./0/" "$f"'
"$MKDATAFILE" map "$W/m.map" --flavour ddnet --seed 2 || die "mkdatafile map"
round "map" "$W/m.map" \
	'f=$(find "$M/map/groups" -name tiles.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^.../010/" "$f"'
"$MKSBDB" world "$W/w.world" -c 3 || die "mksbdb world"
round "world" "$W/w.world" \
	'sed -i "3s/^0\t0\t[0-9]*\t/0\t0\t7\t/" "$M/world/tiles/0,0.tsv"'

# ---- a save folder: the same lines, every container in it at once ----
F=$TMP/folder
mkdir -p "$F/maps" "$F/universe"
cp "$W/a.level" "$F/a.level"
cp "$W/m.map" "$F/maps/m.map"
cp "$W/w.world" "$F/universe/w.world"
echo "notes" > "$F/notes.txt"
rm -rf -- "$TMP/run"
mkdir -p "$TMP/run"
mount_sv "$F" "$M" -o max_open=2 || die "cannot mount the folder"
recipe "folder: tar backup" "$BACKUP_TAR"
recipe "folder: rsync backup" "$BACKUP_RSYNC"
check "folder: the tar backup has no .savefs (neither the folder's nor a container's)" \
	sh -c "! tar tf '$TMP/run/backup.tar' | grep -q savefs"
rm -rf -- "$TMP/ref"
mkdir -p "$TMP/ref"
tar xf "$TMP/run/backup.tar" -C "$TMP/ref"
ids() { stat -c '%i %s %.9Y' -- "$F/a.level" "$F/maps/m.map" "$F/universe/w.world"; }
before=$(ids)
recipe "folder: tar restore of an unchanged tree" "$RESTORE_TAR"
recipe "folder: rsync restore of an unchanged tree" "$RESTORE_RSYNC"
expect_eq "folder: restoring the unchanged tree left the containers as they were" \
	"$before" "$(ids)"
sleep 1.1
check "folder: edits in three containers" env M="$M" sh -c '
	f=$(ls "$M"/a.level/chunks/0/*.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^./0/" "$f" &&
	f=$(find "$M/maps/m.map/map/groups" -name tiles.txt | head -1); l=$(grep -n -v "^#" "$f" | head -1 | cut -d: -f1); sed -i "${l}s/^.../010/" "$f" &&
	sed -i "3s/^0\t0\t[0-9]*\t/0\t0\t7\t/" "$M/universe/w.world/world/tiles/0,0.tsv"'
recipe "folder: rsync restore" "$RESTORE_RSYNC"
same_tree "folder: after the rsync restore" "$TMP/ref"
for c in a.level maps/m.map universe/w.world; do
	game_loads "folder: $c after the rsync restore" "$F/$c"
done
# Settled: the containers' directories keep the times rsync gave them (a
# second rsync would set them again, and again, were they not kept).
line=${RESTORE_RSYNC//MNT/$M}
(cd "$TMP/run" && eval "${line/rsync -a/rsync -a -i}") > "$TMP/again.out" 2>&1
expect_eq "folder: a second rsync restore sets no container directory's time again" "" \
	"$(grep -E ' (a\.level|maps/m\.map|universe/w\.world)/$' "$TMP/again.out")"
sleep 1.1
check "folder: an edit again" env M="$M" sh -c \
	'sed -i "3s/^0\t0\t[0-9]*\t/0\t0\t5\t/" "$M/universe/w.world/world/tiles/0,0.tsv"'
recipe "folder: tar restore" "$RESTORE_TAR"
same_tree "folder: after the tar restore" "$TMP/ref"
game_loads "folder: the world after the tar restore" "$F/universe/w.world"
umount_sv "$M"

finish
