#!/bin/bash
# readme.sh - the README's examples, run as it prints them: the example of
# each family (on containers the project's writers make under the names
# the README uses) and the save folder's (the folder's path standing for
# the Steam one).  Each line exits 0, and what it did is checked: the
# edits are in the containers after the unmount, the greps find what they
# name.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
for v in MKDOODLE MKNHGAME MKSBDB MKRECORDING; do
	[ -x "${!v:-}" ] || skip "$v is not built"
done

# block MARKER: the lines of the README's first ``` block after MARKER.
block()
{
	awk -v m="$1" 'index($0, m) { on = 1 }
		on && /^```/ { if (inblock) exit; inblock = 1; next }
		inblock && NF { print }' "$SRC_ROOT/README.md"
}

# savefs as the README runs it: a mount goes through mount_sv (in the
# foreground, stopped at the end), a command is the binary.
savefs()
{
	case $1 in
	ls | cat | extract | info) "$SAVEFS" "$@" ;;
	*) mount_sv "$@" ;;
	esac
}

export HOME=$TMP/home
W=$TMP/work
mkdir -p "$HOME" "$W/recordings" "$W/storage/universe" "$W/storage/player"
cd "$W" || die "cd $W"
"$MKDOODLE" level castle.level --container zip --count 4 > /dev/null || die mkdoodle
"$SAVEFS" cat castle.level preview.png > splash.png || die "a PNG to copy in"
"$MKDATAFILE" map ctf5.map --seed 3 > /dev/null || die mkdatafile
"$MKNHGAME" run.nhgame --turns 200 > /dev/null || die mknhgame
"$MKSBDB" world homeworld.world > /dev/null || die mksbdb
"$MKRECORDING" segmented recordings/run-42 > /dev/null || die mkrecording
cp homeworld.world storage/universe/a.world
"$MKSBDB" world storage/universe/b.world -S 2 > /dev/null || die mksbdb
echo 'no chest here' > storage/universe/notes.txt
cp castle.level storage/player/

# run LINE: one README line, its output in $TMP/out.N.
N=0
run()
{
	N=$((N + 1))
	CHECKS=$((CHECKS + 1))
	(eval "$1") > "$TMP/out.$N" 2>&1
	local rc=$?
	[ "$rc" -eq 0 ] || { fail "README line \`$1\` exited $rc:"; sed 's/^/    /' "$TMP/out.$N"; }
}

# ---- one example per family -----------------------------------------------------------
mapfile -t LINES < <(block 'One example per family')
expect_eq "the README has its family examples" 16 "${#LINES[@]}"
"$SAVEFS" cat castle.level chunks/0/0,0.txt | sed '/^#/!s/1/./g' > "$TMP/chunk.after" || die "the chunk before"
check "the chunk has colour 1 to clear" sh -c "! \"\$SAVEFS\" cat castle.level chunks/0/0,0.txt | cmp -s - '$TMP/chunk.after'"
for l in "${LINES[@]}"; do
	case $l in
	savefs\ *) eval "$l" || fail "README line \`$l\` did not mount" ;;
	*) run "$l" ;;
	esac
done
expect_same_file "the chunk as the sed left it, through the mount" "$TMP/chunk.after" ~/level/chunks/0/0,0.txt
expect_same_file "the attached file" splash.png ~/level/assets/splash.png
expect_eq "the map's tile grids the grep counted" \
	"$(grep -c 0 ~/map/map/groups/*/*/tiles.txt | wc -l)" "$(wc -l < "$TMP/out.5")"
expect_eq "the last state" "$(ls ~/game/states | tail -1)" "$(cat "$TMP/out.7")"
expect_eq "the world's entities holding a chest" "$(cd ~/world/world/entities && grep -l woodenchest -- *.json | wc -l)" \
	"$(wc -l < "$TMP/out.9")"
check "a chest is found" test -s "$TMP/out.9"
expect_eq "tick 137's state" 137 "$(json_field "$TMP/out.10" tick)"
for m in ~/level ~/map ~/game ~/world ~/rec; do
	umount_sv "$m"
done
"$SAVEFS" cat castle.level chunks/0/0,0.txt > "$TMP/chunk.stored"
expect_same_file "the chunk, in the level's file" "$TMP/chunk.after" "$TMP/chunk.stored"
"$SAVEFS" cat castle.level assets/splash.png > "$TMP/splash.stored"
expect_same_file "the attached file, in the level's file" splash.png "$TMP/splash.stored"
expect_eq "the setting, in the map's file" "sv_gravity 0.5" \
	"$("$SAVEFS" cat ctf5.map map/settings.cfg | tail -1)"

# ---- a save folder ------------------------------------------------------------------------
mapfile -t LINES < <(block 'asks every world of a save' | sed "s|~/.local/share/Steam/.../storage|$W/storage|")
expect_eq "the README has its folder example" 3 "${#LINES[@]}"
eval "${LINES[0]}" || fail "README line \`${LINES[0]}\` did not mount"
run "${LINES[1]}"
check "a world holds a chest" grep -q "^$HOME/saves/universe/a.world/" "$TMP/out.$N"
check "both worlds answer" grep -q '/b.world/' "$TMP/out.$N"
check "the text file is asked too, and holds none" sh -c "! grep -q notes.txt '$TMP/out.$N'"
run "${LINES[2]}"
expect_eq "the folder's info counts its containers" 3 \
	"$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["containers"])' "$TMP/out.$N")"
umount_sv ~/saves
finish
