#!/bin/bash
# recipes.sh - the README's backup and restore lines, run exactly as it
# prints them (MNT standing for the mount point, run in a scratch
# directory), on a level, a map and a world: each exits 0; a restore after
# edits brings the tree back to the backup's bytes, and the container
# passes the game's loader rules (and DDNet's map_resave); a restore of an
# unchanged tree commits nothing.

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

# same_tree DESC DIR: the mount's files have DIR's bytes (but for the
# root's header.json: the container's layout, which restores leave out).
same_tree()
{
	CHECKS=$((CHECKS + 1))
	diff -rq --exclude=.savefs -- "$2" "$M" 2>&1 | grep -v "^Files $2/header.json and " \
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

finish
