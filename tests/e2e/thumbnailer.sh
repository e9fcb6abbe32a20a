#!/bin/bash
# thumbnailer.sh - savefs-thumbnailer run as a file manager runs it: the
# Exec line of data/savefs.thumbnailer, %s the size, %i the file, %o the
# output.  Every family with a preview gives a PNG within the size that is
# not blank (a small picture scaled up by a whole factor, pixel for
# pixel; a big one scaled down); a family without one, the near-miss
# corpus and every bad input give no output and no crash (exit 1, or 0
# with a good PNG for a bad input that still has a preview); a gzip bomb
# is refused within its memory bound.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_python
: "${THUMBNAILER:=$SRC_ROOT/build/cli/savefs-thumbnailer}"
[ -x "$THUMBNAILER" ] || die "THUMBNAILER=$THUMBNAILER is not an executable (build first)"
ENTRY=$SRC_ROOT/data/savefs.thumbnailer
PNGREAD=$SRC_ROOT/tests/tools/pngread.py

W=$TMP/w
mkdir -p "$W"

# thumb SIZE INPUT OUTPUT: the entry's Exec line, its fields filled in as
# the freedesktop thumbnailer spec has them; its exit status.
thumb()
{
	local exec arg args=()
	exec=$(sed -n 's/^Exec=//p' "$ENTRY")
	for arg in $exec; do
		case $arg in
		%s) args+=("$1") ;;
		%i) args+=("$2") ;;
		%o) args+=("$3") ;;
		*) args+=("$arg") ;;
		esac
	done
	PATH=$(dirname "$THUMBNAILER"):$PATH "${args[@]}" 2> "$W/thumb.err"
}

# png_facts FILE: "WIDTH HEIGHT COLOURS" of a PNG (COLOURS: distinct RGBA
# values, at most 3 told apart).
png_facts()
{
	"$PYTHON" - "$1" "$PNGREAD" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location('pngread', sys.argv[2])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
w, h, rgba = m.read_rgba(open(sys.argv[1], 'rb').read())
seen = set()
for i in range(0, len(rgba), 4):
    seen.add(bytes(rgba[i:i + 4]))
    if len(seen) > 2:
        break
print(w, h, len(seen))
PY
}

# fitted W H SIZE: the size savefs-thumbnailer gives a W x H picture.
fitted()
{
	"$PYTHON" -c 'import sys
w, h, s = map(int, sys.argv[1:])
big = max(w, h)
if big <= s // 2:
    k = s // big; print(w * k, h * k)
elif big <= s:
    print(w, h)
else:
    print(max(1, w * s // big), max(1, h * s // big))' "$@"
}

check "the entry runs savefs-thumbnailer" grep -qx 'TryExec=savefs-thumbnailer' "$ENTRY"
expect_eq "the entry's MIME types: those whose containers have a preview" \
	"application/x-sketchymaze-drawing;application/x-sketchymaze-level;application/x-sketchymaze-doodad;application/x-sketchymaze-levelpack;application/x-teeworlds-map;application/x-starbound-btreedb;" \
	"$(sed -n 's/^MimeType=//p' "$ENTRY")"

# ---- every family with a preview ----
"$MKDOODLE" level "$W/z.level" --container zip > /dev/null || die "mkdoodle failed"
"$MKDOODLE" level "$W/j.level" --container json > /dev/null || die "mkdoodle failed"
"$MKDOODLE" doodad "$W/d.doodad" > /dev/null || die "mkdoodle failed"
"$MKDOODLE" pack "$W/p.levelpack" "$W/z.level" > /dev/null || die "mkdoodle failed"
"$MKDATAFILE" map "$W/a.map" --size 100x50 --seed 1 > /dev/null || die "mkdatafile failed"
"$MKDATAFILE" map "$W/big.map" --size 600x300 --seed 2 > /dev/null || die "mkdatafile failed"
"$MKSBDB" world "$W/a.world" -c 1 > /dev/null || die "mksbdb failed"
for f in z.level:preview.png j.level:preview.png d.doodad:preview.png \
	p.levelpack:levels/z/preview.png a.map:map/game.png big.map:map/game.png \
	a.world:preview.png; do
	file=${f%%:*} pic=${f#*:}
	"$SAVEFS" cat "$W/$file" "$pic" > "$W/$file.pic.png" || fail "savefs cat $file $pic"
	read -r pw ph _ <<< "$(png_facts "$W/$file.pic.png")"
	for size in 128 256; do
		rm -f -- "$W/out.png"
		thumb "$size" "$W/$file" "$W/out.png"
		expect_eq "$file at $size: exit 0" 0 $?
		read -r w h colours <<< "$(png_facts "$W/out.png" 2> /dev/null)"
		expect_eq "$file at $size: the preview's $pw x $ph fitted" "$(fitted "$pw" "$ph" "$size")" "$w $h"
		check "$file at $size: not blank ($colours colours)" test "${colours:-0}" -gt 1
	done
done
# A small picture scaled up: each pixel a k x k square of the preview's.
thumb 256 "$W/a.map" "$W/up.png"
expect_eq "a.map scaled up by 2: the game layer's pixels, each four times" \
	"$("$PYTHON" - "$W/a.map.pic.png" "$PNGREAD" <<'PY'
import hashlib, importlib.util, sys
spec = importlib.util.spec_from_file_location('pngread', sys.argv[2])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
w, h, rgba = m.read_rgba(open(sys.argv[1], 'rb').read())
out = bytearray()
for y in range(h * 2):
    for x in range(w * 2):
        i = ((y // 2) * w + x // 2) * 4
        out += rgba[i:i + 4]
print(w * 2, h * 2, hashlib.sha256(bytes(out)).hexdigest())
PY
)" "$("$PYTHON" "$PNGREAD" "$W/up.png")"

# ---- no preview, no output ----
"$MKNHGAME" "$W/a.nhgame" --turns 10 > /dev/null || die "mknhgame failed"
"$MKRECORDING" compacted "$W/a.hcrp" -n 100 -e 3 -s 3 -z 3 > /dev/null || die "mkrecording failed"
"$MKSBDB" sbvj01 "$W/a.player" > /dev/null || die "mksbdb failed"
for file in a.nhgame a.hcrp a.player; do
	rm -f -- "$W/out.png"
	thumb 128 "$W/$file" "$W/out.png"
	expect_eq "$file (no preview): exit 1" 1 $?
	expect_eq "$file: what it says" "savefs-thumbnailer: $W/$file: no preview in it" "$(cat "$W/thumb.err")"
	check "$file: no output" test ! -e "$W/out.png"
done
check "nothing left beside the output" test -z "$(find "$W" -name 'out.png.savefs-*')"

# ---- the near-miss corpus and every bad input: no output, no crash ----
n=0
for f in "$SRC_ROOT"/tests/data/nearmiss/*; do
	case $f in *.msg | */make.py) continue ;; esac
	rm -f -- "$W/out.png"
	thumb 128 "$f" "$W/out.png"
	rc=$?
	expect_eq "near miss $(basename "$f"): exit 1" 1 "$rc"
	check "near miss $(basename "$f"): no output" test ! -e "$W/out.png"
	n=$((n + 1))
done
expect_eq "the near misses tried" 13 "$n"
n=0
for f in "$SRC_ROOT"/tests/data/bad/*/*; do
	case $f in *.msg | *.how | *.py) continue ;; esac
	rm -f -- "$W/out.png"
	thumb 128 "$f" "$W/out.png"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		read -r w h _ <<< "$(png_facts "$W/out.png" 2> /dev/null)"
		check "bad input $f: exit 0 with a PNG within 128 ($w x $h)" \
			test "${w:-0}" -ge 1 -a "${w:-0}" -le 128 -a "${h:-0}" -ge 1 -a "${h:-0}" -le 128
	else
		expect_eq "bad input $f: exit 1 (never a crash)" 1 "$rc"
		check "bad input $f: no output" test ! -e "$W/out.png"
	fi
	n=$((n + 1))
done
check "the bad inputs tried ($n)" test "$n" -gt 100

# ---- a gzip bomb: refused within its bounds ----
rm -f -- "$W/out.png"
gzip_spaces "$W/bomb.level" 512 || die "cannot make the gzip bomb"
/usr/bin/time -f '%M' -o "$W/rss" "$THUMBNAILER" -s 128 "$W/bomb.level" "$W/out.png" 2> "$W/err"
rc=$?
expect_eq "the gzip bomb: exit 1" 1 "$rc"
expect_eq "its message" "savefs-thumbnailer: $W/bomb.level: doodle: gzip: more than 134217728 bytes" \
	"$(head -n 1 "$W/err")"
check "the gzip bomb: no output" test ! -e "$W/out.png"
SAVEFS=$THUMBNAILER rss_bounded "the gzip bomb cost at most 200 MB" "$W/rss" 200000

finish
