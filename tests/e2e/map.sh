#!/bin/bash
# map.sh - the map view (map/) of Teeworlds/DDNet maps, with DDNet's own
# tools (Debian's ddnet-tools) as the judges.
#
#   - every generated map (mkdatafile map: DDNet, Teeworlds 0.7 runs,
#     DDRace's 17- and 22-int tilemaps, a version 3 container) and every
#     shared sample: the tree equals its golden listing and the independent
#     decoder (mapdecode.py); DDNet's map loader (map_diff) loads them;
#   - map_extract gives the same PNGs, pixel for pixel, as map/images/, and
#     the same sounds; config_retrieve the same settings as settings.cfg;
#   - edits through the mount, each followed by map_diff between the old
#     and the new map (exactly the changed tiles, nothing else), map_resave
#     and the loader rules: a tile with sed -i, physics cells, an image with
#     cp, a setting with >>, a layer's colour and size, an envelope, quads,
#     sources, a group, info; a 0.7 layer stays run-encoded;
#   - the raw and the map views agree after a commit through either;
#   - refusals with their reasons: what DDNet's loader refuses, malformed
#     grids and JSON, a name too long for its ints, a file that is not a
#     PNG or not Ogg; the map is unchanged after each.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
: "${DDNET_TOOLS:=/usr/lib/x86_64-linux-gnu/ddnet}"
[ -x "$DDNET_TOOLS/map_diff" ] ||
	skip "DDNet's tools are not installed ($DDNET_TOOLS/map_diff; Debian package ddnet-tools)"
W=$TMP/w
mkdir -p "$W"
M=$TMP/mnt
export HOME=$TMP/home # map_resave writes under ~/.local/share/ddnet
mkdir -p "$HOME/.local/share/ddnet"

# ---- DDNet's tools -------------------------------------------------------

# ddnet_diff OLD NEW: map_diff's findings, one per line ("[layer:name] XxY:
# ..."); fails when DDNet's loader refuses either map.
ddnet_diff()
{
	(cd "$TMP" && "$DDNET_TOOLS/map_diff" "$1" "$2") > "$TMP/map_diff.out" 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || grep -q 'error opening map\|different tile layers\|different layer numbers' "$TMP/map_diff.out"; then
		echo "map_diff failed ($rc): $(grep -v 'loading' "$TMP/map_diff.out" | tail -3)"
		return 1
	fi
	grep -o 'map_compare: .*' "$TMP/map_diff.out" | sed 's/^map_compare: //'
	return 0
}

# expect_diff DESC OLD NEW EXPECTED: map_diff reports exactly EXPECTED.
expect_diff()
{
	local got
	got=$(ddnet_diff "$2" "$3") || { fail "$1: $got"; return 1; }
	expect_eq "$1: map_diff" "$4" "$got"
}

# resaves DESC MAP: map_resave loads MAP and writes it again.
resaves()
{
	rm -f "$HOME/.local/share/ddnet/resaved.map"
	CHECKS=$((CHECKS + 1))
	if ! (cd "$(dirname "$2")" && "$DDNET_TOOLS/map_resave" "$(basename "$2")" resaved.map) \
		> "$TMP/resave.out" 2>&1 || [ ! -s "$HOME/.local/share/ddnet/resaved.map" ]; then
		fail "$1: map_resave cannot load $2: $(grep -v loading "$TMP/resave.out" | tail -2)"
		return 1
	fi
}

# loader_ok DESC MAP: the independent decoder's loader rules and map view.
loader_ok()
{
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" "$MAPDECODE" --loader "$2" > "$TMP/loader.out" 2>&1; then
		fail "$1: DDNet's loader rules refuse $2: $(cat "$TMP/loader.out")"
		return 1
	fi
	rm -rf -- "$TMP/x"
	sv extract "$2" "$TMP/x" > /dev/null || { fail "$1: savefs extract failed"; return 1; }
	check_decoder "$2" "$TMP/x"
}



# refused DESC LOGTEXT CMD...: CMD fails with EINVAL, the log says why, and
# the map on disk is unchanged.
refused()
{
	local desc=$1 text=$2
	shift 2
	cp -- "$C" "$W/before.map"
	write_fails "$desc" "Invalid argument" "$@"
	log_has "$desc" "$text"
	check "$desc: the map is unchanged" cmp -s "$W/before.map" "$C"
}

# ---- fixtures and samples ------------------------------------------------
make_generated "$W/gen" || die "mkdatafile failed"
for f in $MAP_FIXTURES; do
	c="$W/gen/$f.map"
	mount_sv "$c" "$M" || continue
	tree_listing "$M" > "$TMP/$f.tree" || fail "$f: cannot list the mount"
	check_golden "$f" "$TMP/$f.tree"
	check_decoder "$c" "$M" "$TMP/$f.tree"
	check "$f: no warnings" grep -q '"warnings": \[\]' "$M/.savefs/info"
	umount_sv "$M"
	loader_ok "$f" "$c"
	resaves "$f" "$c"
	# map_diff opens it and finds every tile layer equal to itself (DDNet
	# 16's map_diff reads a 0.7 layer's runs as plain tiles: the loader
	# rules above stand in for it there).
	[ "$f" = gen-map-tw07 ] || expect_diff "$f: map_diff reads it" "$c" "$c" ""
done
check "gen-map-tw07 stores its layers as runs" \
	"$PYTHON" -c 'import sys; s, n = map(int, sys.argv[1].split()); sys.exit(not s < n)' \
	"$("$PYTHON" "$MAPDECODE" --runs "$W/gen/gen-map-tw07.map" 2)"

# extracted_same DESC MAP: map_extract's images and sounds are map/'s.
extracted_same()
{
	local x="$TMP/extract" n base
	rm -rf -- "$x" "$TMP/sv"
	mkdir -p -- "$x"
	(cd "$TMP" && "$DDNET_TOOLS/map_extract" "$2" "$x") > /dev/null 2>&1 ||
		{ fail "$1: map_extract failed"; return 1; }
	sv extract "$2" "$TMP/sv" > /dev/null || { fail "$1: savefs extract failed"; return 1; }
	local want have
	want=$(cd "$x" && ls | sort | tr '\n' ' ')
	have=$( (cd "$TMP/sv/map" 2> /dev/null && ls images/*.png sounds/*.opus 2> /dev/null) |
		sed -E 's#^(images|sounds)/[0-9]+-##' | sort | tr '\n' ' ')
	expect_eq "$1: map_extract's files vs map/images and map/sounds" "$want" "$have"
	for n in "$TMP"/sv/map/images/*.png; do
		[ -e "$n" ] || continue
		base=$(basename "$n" | sed -E 's/^[0-9]+-//')
		expect_eq "$1: $base pixel for pixel" "$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$x/$base" | cut -d' ' -f1-3)" \
			"$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$n" | cut -d' ' -f1-3)"
	done
	for n in "$TMP"/sv/map/sounds/*.opus; do
		[ -e "$n" ] || continue
		base=$(basename "$n" | sed -E 's/^[0-9]+-//')
		check "$1: $base byte for byte" cmp -s "$x/$base" "$n"
	done
}

for f in gen-map-ddnet gen-map-tw07; do
	extracted_same "$f" "$W/gen/$f.map"
done
(cd "$W/gen" && "$DDNET_TOOLS/config_retrieve" gen-map-ddnet.map) > /dev/null 2>&1
expect_same_file "gen-map-ddnet: config_retrieve vs settings.cfg" "$W/gen/gen-map-ddnet.cfg" \
	<(sv cat "$W/gen/gen-map-ddnet.map" map/settings.cfg)

if [ -d "$SAMPLES/teeworlds" ]; then
	for s in "$SAMPLES"/teeworlds/*.map; do
		name=$(basename "$s" .map)
		extracted_same "$name" "$s"
		case $name in *prototype*) continue ;; esac
		expect_diff "$name: map_diff reads it" "$s" "$s" ""
	done
else
	echo "note: $SAMPLES/teeworlds not found: map_extract on the samples skipped"
fi

# ---- edits of a DDNet map ------------------------------------------------
C=$W/edit.map
cp -- "$W/gen/gen-map-ddnet.map" "$C"
mount_sv "$C" "$M" || die "cannot mount $C"
G=$M/map/groups/01-Game
snap() { cp -- "$C" "$W/old.map"; }

# A tile with sed -i: row 5 (line 8 of tiles.txt), cells 3 and 4.
snap
old=$("$PYTHON" "$MAPDECODE" --tiles "$C" 4 | sed -n 6p | cut -d' ' -f3,4)
sed -i '8s/^\([^ ]* [^ ]* \)[^ ]* [^ ]*/\1030 091/' "$G/04-Game/tiles.txt"
expect_eq "tiles.txt shows the edit" "030 091" "$(sed -n 8p "$G/04-Game/tiles.txt" | cut -d' ' -f3,4)"
o3=${old%% *}
o4=${old##* }
# (map_diff 16.4 prints the old tile's flags on both sides, and numbers
# layers by their count.)
f3=$(cut -d: -f2 <<< "$o3")
f4=$(cut -d: -f2 <<< "$o4")
expect_diff "one game tile edited" "$W/old.map" "$C" \
"[11:Game] 2x5: (index: ${o3%%:*}, flags: $f3) != (index: 3, flags: $f3)
[11:Game] 3x5: (index: ${o4%%:*}, flags: $f4) != (index: 9, flags: $f4)"
expect_eq "the decoder reads the two tiles" "3:0:0:0 9:1:0:0" \
	"$("$PYTHON" "$MAPDECODE" --tiles "$C" 4 | sed -n 6p | cut -d' ' -f3,4)"
loader_ok "after a tile edit" "$C"
resaves "after a tile edit" "$C"

# Physics cells: tele (number, type) and speedup (force, max, type, angle).
# map_diff 16.4 compares the layers' tile arrays (data) only: a physics
# layer's own array is checked with the decoder, and map_diff must see no
# change (the tile array DDNet keeps for old clients stays as it was).
snap
sed -i '3s/^[^ ]*/0a1a/' "$G/06-Tele/tele.txt"
sed -i '4s/^[^ ]* [^ ]*/.......... 0510020168/' "$G/07-Speedup/speedup.txt"
expect_eq "speedup.txt shows the edit" "0510020168" "$(sed -n 4p "$G/07-Speedup/speedup.txt" | cut -d' ' -f2)"
expect_diff "physics cells edited: the tile arrays are untouched" "$W/old.map" "$C" ""
expect_eq "the decoder reads the tele cell" "10:26" \
	"$("$PYTHON" "$MAPDECODE" --tiles "$C" 6 | head -1 | cut -d' ' -f1)"
expect_eq "the decoder reads the speedup cells (force, max, type, pad, angle LE)" \
	"0:0:0:0:0:0 5:16:2:0:104:1" \
	"$("$PYTHON" "$MAPDECODE" --tiles "$C" 7 | sed -n 2p | cut -d' ' -f1,2)"
loader_ok "after physics edits" "$C"

# An image with cp: a 20 x 10 PNG (paletted, filtered) onto images/00-deco.png.
"$PYTHON" - "$TMP/new.png" <<'EOF'
import struct, sys, zlib
w, h = 20, 10
def chunk(t, b):
    return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b))
rows = [bytes((x * 7 + y) % 4 for x in range(w)) for y in range(h)]
# even rows unfiltered, odd rows with the Sub filter
raw = b''.join(b'\x00' + r if y % 2 == 0 else
               b'\x01' + bytes((r[i] - (r[i - 1] if i else 0)) & 255 for i in range(w))
               for y, r in enumerate(rows))
png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 3, 0, 0, 0))
       + chunk(b'PLTE', bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9]))
       + chunk(b'tRNS', bytes([255, 128, 0])) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
open(sys.argv[1], 'wb').write(png)
EOF
snap
cp "$TMP/new.png" "$M/map/images/00-deco.png"
expect_diff "an image replaced: no tile changes" "$W/old.map" "$C" ""
expect_eq "images.json: the new size" "20 10" \
	"$("$PYTHON" -c 'import json,sys; i=json.load(open(sys.argv[1]))[0]; print(i["width"], i["height"])' "$M/map/images.json")"
extracted_same "after cp of an image" "$C"
expect_eq "map_extract: the PNG's pixels" "$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$TMP/new.png")" \
	"$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$TMP/extract/deco.png")"
resaves "after an image" "$C"
# A 16-bit grey + alpha PNG (libpng takes any colour type and depth): the
# image holds its 8-bit RGBA.
"$PYTHON" - "$TMP/grey16.png" "$TMP/grey16.want" <<'EOF'
import hashlib, struct, sys, zlib
w, h = 5, 3
def chunk(t, b):
    return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b))
px = [[(x * 0x3000 + y * 0x1111, 0xffff if x % 2 else 0x8080) for x in range(w)] for y in range(h)]
raw = b''.join(b'\0' + b''.join(struct.pack('>HH', g, a) for g, a in row) for row in px)
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n'
    + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 16, 4, 0, 0, 0))
    + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
# 16 to 8 bits as libpng rounds (v * 255 + 32895) >> 16.
rgba = b''.join(bytes([(g * 255 + 32895) >> 16] * 3 + [(a * 255 + 32895) >> 16])
                for row in px for g, a in row)
open(sys.argv[2], 'w').write('%d %d %s\n' % (w, h, hashlib.sha256(rgba).hexdigest()))
EOF
cp "$TMP/grey16.png" "$M/map/images/02-light.png"
expect_same_file "a 16-bit grey PNG stored as 8-bit RGBA" "$TMP/grey16.want" \
	<("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$M/map/images/02-light.png")

# A setting with >>: config_retrieve reads it back; no tile changes.
snap
echo 'sv_test_setting 7' >> "$M/map/settings.cfg"
expect_diff "a setting added: no tile changes" "$W/old.map" "$C" ""
resaves "after a setting" "$C"
rm -f "$W/edit.cfg"
(cd "$W" && "$DDNET_TOOLS/config_retrieve" edit.map) > /dev/null 2>&1
expect_same_file "config_retrieve after >> settings.cfg" "$W/edit.cfg" "$M/map/settings.cfg"
expect_eq "settings.cfg: the last line" "sv_test_setting 7" "$(tail -1 "$M/map/settings.cfg")"

# A layer's colour: no tile changes; the raw item shows it (ints 7..10).
snap
"$PYTHON" - "$G/03-Deco/layer.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); j['color'] = [10, 20, 30, 40]
open(sys.argv[1], 'w').write(json.dumps(j))
EOF
expect_diff "a layer's colour: no tile changes" "$W/old.map" "$C" ""
resaves "after a colour" "$C"
expect_eq "items/5-layer/00003.bin ints 7..10" "10 20 30 40" \
	"$(od -A n -t d4 -j 28 -N 16 "$M/items/5-layer/00003.bin" | xargs)"
loader_ok "after a colour" "$C"

# A layer's size: tiles.txt follows, cropped at the right, extended below.
sed -n 3,42p "$G/05-Detail/tiles.txt" | cut -d' ' -f1-30 > "$TMP/detail.before"
"$PYTHON" - "$G/05-Detail/layer.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); j['width'] = 30; j['height'] = 50
open(sys.argv[1], 'w').write(json.dumps(j))
EOF
expect_eq "tiles.txt after a resize: rows" 50 "$(grep -vc '^#' "$G/05-Detail/tiles.txt")"
expect_eq "tiles.txt after a resize: cells a row" 30 "$(sed -n 3p "$G/05-Detail/tiles.txt" | wc -w)"
expect_same_file "tiles.txt after a resize: the kept part" "$TMP/detail.before" \
	<(sed -n 3,42p "$G/05-Detail/tiles.txt")
expect_eq "tiles.txt after a resize: the new rows are empty" "..." \
	"$(sed -n 43,52p "$G/05-Detail/tiles.txt" | tr ' ' '\n' | sort -u | xargs)"
loader_ok "after a resize" "$C"

# Envelope, quads, sources, group, info: each reads back and the raw
# items agree (the decoder compares every view with the items).
"$PYTHON" - "$M/map" <<'EOF'
import json, sys
m = sys.argv[1]
def edit(p, f):
    j = json.load(open(m + '/' + p)); f(j); open(m + '/' + p, 'w').write(json.dumps(j))
def env(j):
    j['points'][1]['values'][0] = 2.5
    j['points'].append({'time': 9000, 'curve': 'smooth', 'values': [1, 2, 3, 0.25]})
edit('envelopes/00-rotate.json', env)
def quads(j):
    j[0]['points'][0] = [-12.5, 7.0]
    j.append(dict(j[1]))
edit('groups/00-Background/00-Sky/quads.json', quads)
def src(j):
    j[1]['falloff'] = 33
edit('groups/00-Background/01-Wind/sources.json', src)
def grp(j):
    j['parallax'] = [55, 66]
    j['name'] = 'Backdrop'
edit('groups/00-Background/group.json', grp)
def info(j):
    j['author'] = 'someone else'
    j['license'] = None
edit('info.json', info)
EOF
expect_eq "envelope: the new point" '9000 smooth [1.0, 2.0, 3.0, 0.25]' \
	"$("$PYTHON" -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][-1]; print(p["time"], p["curve"], p["values"])' "$M/map/envelopes/00-rotate.json")"
expect_eq "envelopes after it start later" 4 \
	"$(od -A n -t d4 -j 8 -N 4 "$M/items/3-envelope/00001.bin" | xargs)"
expect_eq "quads.json: 3 quads" 3 "$("$PYTHON" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$M/map/groups/00-Backdrop/00-Sky/quads.json")"
expect_eq "quads layer item: 3 quads" 3 "$(od -A n -t d4 -j 16 -N 4 "$M/items/5-layer/00000.bin" | xargs)"
expect_eq "the group's new name" "00-Backdrop" "$(ls "$M/map/groups" | head -1)"
expect_eq "info.json" '{"author": "someone else", "version": "1.2", "credits": "generated by mkdatafile", "license": null}' \
	"$("$PYTHON" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$M/map/info.json")"
loader_ok "after JSON edits" "$C"
resaves "after JSON edits" "$C"

# The raw view: a game tile written into data/ shows in tiles.txt.
gd=$(od -A n -t d4 -j 56 -N 4 "$M/items/5-layer/00004.bin" | xargs)
"$PYTHON" - "$M/data/$(printf %05d "$gd").bin" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[0:4] = bytes([0x2a, 3, 0, 0])
open(p, 'wb').write(b)
EOF
expect_eq "a raw edit shows in tiles.txt" "2a3" "$(sed -n 3p "$G/04-Game/tiles.txt" | cut -d' ' -f1)"
expect_eq "game.png follows (still a PNG)" "60 40" \
	"$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$M/map/game.png" | cut -d' ' -f1-2)"

# ---- refusals ---------------------------------------------------------------
# jcp FILE EXPR: cp of FILE's JSON with the Python statement EXPR applied to j.
jcp() {
	"$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); $2; json.dump(j, open(sys.argv[2], 'w'))" \
		"$1" "$TMP/edited.json" && cp "$TMP/edited.json" "$1"
}
printf '# x\n... ...\n' > "$TMP/short.txt"
refused "a grid of the wrong size" "2 cells, but the layer is 60 wide" cp "$TMP/short.txt" "$G/04-Game/tiles.txt"
refused "a bad cell" '"0g0" is not 3 hex digits or 3 dots' sed -i '5s/^[^ ]*/0g0/' "$G/04-Game/tiles.txt"
{ cat "$G/04-Game/tiles.txt"; sed -n 3p "$G/04-Game/tiles.txt"; } > "$TMP/long.txt"
refused "a row too many" "line 43: more than the layer's 40 rows" cp "$TMP/long.txt" "$G/04-Game/tiles.txt"
refused "a second game layer" "the map would have a second game layer" \
	jcp "$G/03-Deco/layer.json" "j.update(kind='game', name='Game', color=[255]*4)"
refused "a physics layer smaller than the game layer" \
	"layer 06-Tele would be smaller than the game layer (59 x 40 < 60 x 40; DDNet refuses it)" \
	jcp "$G/06-Tele/layer.json" "j['width']=59"
refused "a tele layer renamed" 'DDNet names a tele layer "Tele"' jcp "$G/06-Tele/layer.json" "j['name']='Teleporters'"
refused "a name too long for its ints" 'the name "abcdefghijkl" is 12 bytes; names here hold at most 11' \
	jcp "$G/03-Deco/layer.json" "j['name']='abcdefghijkl'"
refused "a physics layer's colour" "a front layer's colour is 255 255 255 255" jcp "$G/08-Front/layer.json" "j['color']=[1,2,3,4]"
refused "an unknown field" 'this layer has no field "colour"' jcp "$G/03-Deco/layer.json" "j['colour']=1"
refused "an envelope with 5 channels" '"channels" is 5, outside 1 to 4' jcp "$M/map/envelopes/02-volume.json" "j['channels']=5"
refused "a group's layers" '"layers" lists the group' jcp "$G/group.json" "j['layers']=j['layers'][:2]"
refused "not a PNG" "not a PNG the PNG library can read" cp "$TMP/short.txt" "$M/map/images/02-light.png"
refused "not Ogg" "not an Ogg stream" cp "$TMP/new.png" "$M/map/sounds/00-wind.opus"
printf '{' > "$TMP/bad.json"
refused "bad JSON" "info.json: line 1, column 1" cp "$TMP/bad.json" "$M/map/info.json"
write_fails "game.png is read-only" "Operation not permitted" cp "$TMP/new.png" "$M/map/game.png"
umount_sv "$M"
loader_ok "after the refusals" "$C"

# A sound written through the mount: map_extract gives its bytes back.
mount_sv "$C" "$M" || die "cannot mount $C"
printf 'OggS\0\2 a new sound, as stored' > "$TMP/new.opus"
cp "$TMP/new.opus" "$M/map/sounds/00-wind.opus"
expect_same_file "a sound reads back" "$TMP/new.opus" "$M/map/sounds/00-wind.opus"
expect_eq "the sound item's size field follows" "$(stat -c %s "$TMP/new.opus")" \
	"$(od -A n -t d4 -j 16 -N 4 "$M/items/7-sound/00000.bin" | xargs)"
extracted_same "after cp of a sound" "$C"
check "map_extract: the sound's bytes" cmp -s "$TMP/new.opus" "$TMP/extract/wind.opus"
umount_sv "$M"
loader_ok "after a sound" "$C"
resaves "after a sound" "$C"

# Settings onto a map whose info item has none: DDNet's config_retrieve
# reads them from the map savefs wrote.
C=$W/nosettings.map
cp -- "$W/gen/gen-map-ddnet-v3.map" "$C"
mount_sv "$C" "$M" || die "cannot mount $C"
expect_eq "no settings yet" 0 "$(stat -c %s "$M/map/settings.cfg")"
printf 'sv_gravity 0.25\ntune_zone 2 gravity 1\n' > "$TMP/settings.cfg"
cp "$TMP/settings.cfg" "$M/map/settings.cfg"
expect_eq "the info item gains its settings int" 24 "$(stat -c %s "$M/items/1-info/00000.bin")"
umount_sv "$M"
rm -f "$W/nosettings.cfg"
(cd "$W" && "$DDNET_TOOLS/config_retrieve" nosettings.map) > /dev/null 2>&1
expect_same_file "config_retrieve reads the settings added" "$TMP/settings.cfg" "$W/nosettings.cfg"
loader_ok "after settings added" "$C"
resaves "after settings added" "$C"

# A map with no info item at all (maps older than it): info.json and
# settings.cfg show empty, and writing them adds the item DDNet's editor
# writes, never a file kept in memory and dropped at unmount.
C=$W/noinfo.map
"$MKDATAFILE" map "$C" --no-info --seed 4 || die "mkdatafile --no-info failed"
check "the generated map has no info item" sh -c "! '$SAVEFS' ls '$C' items | grep -q info"
mount_sv "$C" "$M" || die "cannot mount $C"
expect_eq "no info item: info.json shows nulls" \
	'{"author": null, "version": null, "credits": null, "license": null}' \
	"$("$PYTHON" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$M/map/info.json")"
expect_eq "no info item: settings.cfg is empty" 0 "$(stat -c %s "$M/map/settings.cfg")"
cp "$M/map/info.json" "$TMP/same.json"
cp "$TMP/same.json" "$M/map/info.json"
check "writing back the same info adds nothing" sh -c "! ls '$M/items' | grep -q info"
check "echo > settings.cfg" sh -c "echo 'sv_gravity 0.5' > '$M/map/settings.cfg'"
check "echo > info.json" sh -c "echo '{\"author\": \"me\", \"version\": null, \"credits\": null, \"license\": \"CC0\"}' > '$M/map/info.json'"
expect_eq "the info item is added: version 1, four strings, settings" 24 \
	"$(stat -c %s "$M/items/1-info/00000.bin")"
check "nothing was kept in memory only" sh -c "! grep -q 'kept in memory only' '$M/.savefs/log'"
nlog=${SV_LOG[$(realpath "$M")]}
umount_sv "$M"
check "nothing was discarded at unmount" sh -c "! grep -q 'discarded' '$nlog'"
expect_eq "after a remount: info.json" '{"author": "me", "version": null, "credits": null, "license": "CC0"}' \
	"$(sv cat "$C" map/info.json | "$PYTHON" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))')"
expect_eq "after a remount: settings.cfg" "sv_gravity 0.5" "$(sv cat "$C" map/settings.cfg)"
rm -f "$W/noinfo.cfg"
(cd "$W" && "$DDNET_TOOLS/config_retrieve" noinfo.map) > /dev/null 2>&1
expect_eq "config_retrieve reads the settings of the info item added" "sv_gravity 0.5" \
	"$(cat "$W/noinfo.cfg" 2> /dev/null)"
loader_ok "after the info item added" "$C"
resaves "after the info item added" "$C"
if [ -f "$SAMPLES/teeworlds/ddnet-ctf2-tilemap-v2-legacy-17ints.map" ]; then
	C=$W/ctf2.map
	cp -- "$SAMPLES/teeworlds/ddnet-ctf2-tilemap-v2-legacy-17ints.map" "$C"
	cp -- "$C" "$W/ctf2.orig"
	mount_sv "$C" "$M" || die "cannot mount $C"
	echo 'sv_gravity 0.5' > "$M/map/settings.cfg"
	umount_sv "$M"
	expect_eq "ctf2 (no info item): settings.cfg kept" "sv_gravity 0.5" "$(sv cat "$C" map/settings.cfg)"
	expect_diff "ctf2: no tile changed" "$W/ctf2.orig" "$C" ""
	loader_ok "ctf2 after settings" "$C"
	resaves "ctf2 after settings" "$C"
else
	printf 'SKIP (part): the ctf2 sample is not in %s\n' "$SAMPLES/teeworlds"
fi

# ---- a Teeworlds 0.7 map: tile runs written back as runs ---------------------
C=$W/tw07.map
cp -- "$W/gen/gen-map-tw07.map" "$C"
mount_sv "$C" "$M" || die "cannot mount $C"
sed -i '4s/^[^ ]* [^ ]*/ff1 ff1/' "$M/map/groups/01-Game/02-Game/tiles.txt"
expect_eq "0.7 tiles.txt shows the edit" "ff1 ff1" "$(sed -n 4p "$M/map/groups/01-Game/02-Game/tiles.txt" | cut -d' ' -f1-2)"
umount_sv "$M"
expect_eq "0.7 game layer: row 1 as the decoder reads it" "255:1:0:0 255:1:0:0" \
	"$("$PYTHON" "$MAPDECODE" --tiles "$C" 2 | sed -n 2p | cut -d' ' -f1-2)"
check "0.7 game layer: still runs" \
	"$PYTHON" -c 'import sys; s, n = map(int, sys.argv[1].split()); sys.exit(not s < n)' \
	"$("$PYTHON" "$MAPDECODE" --runs "$C" 2)"
expect_eq "0.7 tilemap version kept" 4 "$(sv cat "$C" items/5-layer/00002.bin | od -A n -t d4 -j 12 -N 4 | xargs)"
loader_ok "0.7 after an edit" "$C"
resaves "0.7 after an edit" "$C"

# ---- a real map ---------------------------------------------------------------
if [ -f "$SAMPLES/teeworlds/ddnet-gold_mine-garbage-physics-indices.map" ]; then
	C=$W/gold.map
	cp -- "$SAMPLES/teeworlds/ddnet-gold_mine-garbage-physics-indices.map" "$C"
	cp -- "$C" "$W/gold.orig"
	mount_sv "$C" "$M" || die "cannot mount $C"
	sed -i '10s/^010 010 010/020 030 010/' "$M/map/groups/01-Game/03-Game/tiles.txt"
	echo 'sv_gold 1' >> "$M/map/settings.cfg"
	umount_sv "$M"
	expect_diff "gold_mine: two tiles" "$W/gold.orig" "$C" \
"[18:Game] 0x7: (index: 1, flags: 0) != (index: 2, flags: 0)
[18:Game] 1x7: (index: 1, flags: 0) != (index: 3, flags: 0)"
	loader_ok "gold_mine after edits" "$C"
	resaves "gold_mine after edits" "$C"
fi
finish
