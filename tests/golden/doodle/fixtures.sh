# shellcheck shell=bash
# fixtures.sh - the generated Sketchy Maze fixtures whose golden listings
# live beside this file (NAME.tree).  Sourced by tests/e2e/doodle-tree.sh,
# tests/e2e/doodle-edits.sh and tests/golden/update.sh, after lib.sh.
#
# mkdoodle is deterministic for given arguments (pixels from a seeded
# generator, fixed zip member times), so the files are made at test time
# and never committed.  make_doodles DIR writes DIR/NAME.level,
# DIR/NAME.doodad or DIR/NAME.levelpack for every line below:
#
#   v1-json          v1: one JSON object, inline chunks and base64 files
#   v2-gzip          v2: gzip of the same
#   zip-rle          zip, .bin type 1 (RLE) members
#   zip-map          zip, .bin type 0 (map accessor) members
#   zip-json         zip, .json members
#   zip-mixed        zip, rle/map/json members in turn
#   zip-descriptors  zip with data descriptors (flag 8), as Go writes
#   zip-inline       zip with the chunks inline in level.json
#   zip-quirks       odd colours and names, indices past the palette, RLE
#                    streams one pixel short
#   pal-70           70 colours: two characters a cell
#   pal-300          300 colours: an RGBA PNG
#   pal-4000         a doodad of 4000 colours: three characters a cell
#   doodad-3         a three-layer doodad
#   pack             a levelpack: v2-gzip (nested gzip) and zip-mixed
#                    (nested zip) levels and the doodad-3 doodad
# Most have chunks at negative coordinates, sparse chunks (a few strokes)
# and dense ones (--dense-every).

# NAME KIND MKDOODLE-ARGUMENTS (a pack's arguments name other fixtures)
DOODLE_TABLE='
v1-json         level  --container json --count 6 --negative --dense-every 3 --palette 12 --assets 2 --seed 11
v2-gzip         level  --container gzip --count 4 --negative --dense-every 2 --seed 12
zip-rle         level  --chunks rle --count 6 --negative --dense-every 2 --assets 3 --seed 13
zip-map         level  --chunks map --count 4 --negative --seed 14
zip-json        level  --chunks json --count 4 --dense-every 2 --seed 15
zip-mixed       level  --chunks mixed --count 6 --negative --dense-every 2 --assets 1 --seed 16
zip-descriptors level  --chunks mixed --descriptors --count 4 --negative --assets 2 --seed 17
zip-inline      level  --chunks mixed --inline --count 4 --negative --dense-every 2 --seed 18
zip-quirks      level  --chunks mixed --odd-palette --bad-pixels --short-rle --count 4 --seed 19
pal-70          level  --palette 70 --count 4 --negative --dense-every 1 --seed 20
pal-300         level  --palette 300 --size 32 --count 2 --dense-every 1 --seed 21
pal-4000        doodad --palette 4000 --size 16 --layers 1 --dense-every 1 --seed 22
doodad-3        doodad --layers 3 --palette 10 --dense-every 2 --seed 23
pack            pack   v2-gzip zip-mixed --doodad doodad-3
'
# shellcheck disable=SC2034 # used by the scripts that source this file
DOODLE_FIXTURES=$(awk 'NF { print $1 }' <<< "$DOODLE_TABLE" | tr '\n' ' ')

# doodle_ext KIND: the file name extension of a fixture of that kind.
doodle_ext()
{
	case $1 in
	level) echo level ;;
	doodad) echo doodad ;;
	pack) echo levelpack ;;
	esac
}

# doodle_file DIR NAME: the path make_doodles gave fixture NAME.
doodle_file()
{
	local kind
	kind=$(awk -v n="$2" '$1 == n { print $2 }' <<< "$DOODLE_TABLE")
	[ -n "$kind" ] || return 1
	printf '%s/%s.%s\n' "$1" "$2" "$(doodle_ext "$kind")"
}

# make_doodles DIR: writes every fixture into DIR.
make_doodles()
{
	local d=$1 name kind args a out
	mkdir -p -- "$d" || return 1
	while read -r name kind args; do
		[ -n "$name" ] || continue
		out="$d/$name.$(doodle_ext "$kind")"
		if [ "$kind" = pack ]; then
			local files=()
			for a in $args; do
				case $a in
				--*) files+=("$a") ;;
				*) files+=("$(doodle_file "$d" "$a")") ;;
				esac
			done
			"$MKDOODLE" pack "$out" "${files[@]}" || return 1
		else
			# shellcheck disable=SC2086 # the arguments are words
			"$MKDOODLE" "$kind" "$out" $args || return 1
		fi
	done <<< "$DOODLE_TABLE"
}
