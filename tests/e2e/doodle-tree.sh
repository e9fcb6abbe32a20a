#!/bin/bash
# doodle-tree.sh - Sketchy Maze levels, doodads and a levelpack made at test
# time by mkdoodle (tests/golden/doodle/fixtures.sh: every container
# version, every chunk encoding, negative, sparse and dense chunks, palettes
# of 70, 300 and 4000 colours, a three-layer doodad, a levelpack with a
# nested gzip and a nested zip level), browsed with ordinary tools:
#   - the tree (type, size, sha256 and path of every node) equals its golden
#     listing in tests/golden/doodle/ (tests/golden/update.sh);
#   - every text grid equals the independent decoder's (ddecode.py);
#   - stat sizes, taken before anything is read, equal the bytes read;
#   - every .png is a PNG (signature; `file`, with the chunk's size);
#   - /.savefs/info names the format, the container version and the kind;
#   - grep -rl over the grid rows finds the chunks the decoder says;
#   - diff -r of two versions of a level shows the one edited chunk only;
#   - a levelpack's nested levels show the trees they show mounted alone.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/golden/doodle/fixtures.sh
. "$GOLDEN/doodle/fixtures.sh"

need_fuse
need_python
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"

g="$TMP/fx"
make_doodles "$g" || die "mkdoodle failed"

# Deterministic: the goldens hold checksums of what it makes.
make_doodles "$TMP/again" || die "mkdoodle failed (second run)"
for f in $DOODLE_FIXTURES; do
	check "mkdoodle is deterministic: $f twice" \
		cmp "$(doodle_file "$g" "$f")" "$(doodle_file "$TMP/again" "$f")"
done

# info_fields FILE KEY...: the values of keys of a JSON file (a dotted KEY
# goes down: counts.chunks), tab-separated; a JSON error is a failure.
info_fields()
{
	"$PYTHON" - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for k in sys.argv[2:]:
    v = d
    for part in k.split('.'):
        v = v.get(part) if isinstance(v, dict) else None
    out.append(str(v))
print('\t'.join(out))
PY
}

# check_sizes LABEL DIR SIZES: SIZES ("SIZE PATH" lines, from stat before
# any read) agrees with the number of bytes cat reads from each file.
check_sizes()
{
	local p
	(cd -- "$2" && find . -path ./.savefs -prune -o -type f -printf '%P\0' |
		while IFS= read -r -d '' p; do
			printf '%s %s\n' "$(cat -- "$p" | wc -c)" "$p"
		done) | sort -k 2 > "$TMP/sizes.read"
	sort -k 2 "$3" > "$TMP/sizes.stat"
	expect_same_text "$1: stat sizes (before any read, ---) differ from the bytes read (+++)" \
		"$TMP/sizes.stat" "$TMP/sizes.read"
}

PNG_SIG='89 50 4e 47 0d 0a 1a 0a'

# check_pngs LABEL DIR: every .png under DIR starts with the PNG signature,
# and `file` calls it PNG image data; a chunk's is size x size pixels.
check_pngs()
{
	local p sig desc size n=0 bad=0
	while IFS= read -r -d '' p; do
		n=$((n + 1))
		sig=$(head -c 8 -- "$2/$p" | od -An -tx1 | tr -s ' ' | sed 's/^ //; s/ $//')
		if [ "$sig" != "$PNG_SIG" ]; then
			fail "$1: $p does not start with the PNG signature: $sig"
			bad=$((bad + 1))
			continue
		fi
		[ -n "$HAVE_FILE" ] || continue
		desc=$(file -b -- "$2/$p")
		case $desc in
		"PNG image data"*) ;;
		*)
			fail "$1: file says $p is: $desc"
			bad=$((bad + 1))
			continue
			;;
		esac
		case $p in
		*chunks/*)
			size=$(sed -n '1s/^# chunk .* size \([0-9]*\)$/\1/p' -- "$2/${p%.png}.txt")
			case $desc in
			"PNG image data, $size x $size,"*) ;;
			*)
				fail "$1: $p is not $size x $size: $desc"
				bad=$((bad + 1))
				;;
			esac
			;;
		esac
	done < <(cd -- "$2" && find . -path ./.savefs -prune -o -type f -name '*.png' -printf '%P\0')
	CHECKS=$((CHECKS + 1))
	[ "$n" -gt 0 ] || fail "$1: no .png files"
	[ "$bad" -eq 0 ]
}

HAVE_FILE=
if command -v file > /dev/null; then
	HAVE_FILE=1
else
	echo "note: file(1) is not installed: PNGs are checked by their signature only"
fi

# ---- every fixture: golden listing, decoder, sizes, PNGs, info ----------------

for f in $DOODLE_FIXTURES; do
	c=$(doodle_file "$g" "$f")
	m="$TMP/mnt-$f"
	mount_sv "$c" "$m" || continue
	# Sizes first, before any file is read.
	(cd -- "$m" && find . -path ./.savefs -prune -o -type f -printf '%s %P\n') > "$TMP/$f.sizes"
	tree_listing "$m" > "$TMP/$f.tree" || fail "$f: cannot list the mount"
	check_golden_in doodle "$f" "$TMP/$f.tree"
	check_ddecode "$c" "$m" "$TMP/$f.tree"
	check_sizes "$f" "$m" "$TMP/$f.sizes"
	check_pngs "$f" "$m"

	cp -- "$m/.savefs/info" "$TMP/$f.info"
	case $f in
	v1-*) ver="v1 (JSON)" ;;
	v2-*) ver="v2 (gzip JSON)" ;;
	*) ver="zip (v3/v3.1/v4)" ;;
	esac
	case $c in
	*.level) kind=level ;;
	*.doodad) kind=doodad ;;
	*) kind=levelpack ;;
	esac
	# One python run per fixture: starting python is slow on a busy host.
	IFS=$'\t' read -r got_format got_ver got_kind got_chunks got_pal got_stored < <(
		info_fields "$TMP/$f.info" format format_version kind counts.chunks counts.palette \
			counts.chunks_bin counts.chunks_json_member counts.chunks_inline)
	expect_eq "$f: .savefs/info format" doodle "$got_format"
	expect_eq "$f: .savefs/info format_version" "$ver" "$got_ver"
	expect_eq "$f: .savefs/info kind" "$kind" "$got_kind"
	if [ "$kind" != levelpack ]; then
		expect_eq "$f: .savefs/info counts.chunks (vs ddecode.py's chunks)" \
			"$(find "$TMP/ddecoded" -name '*.txt' | wc -l)" "$got_chunks"
		npal=$(sed -n 's/.*--palette \([0-9]*\).*/\1/p' <<< "$(grep "^$f " <<< "$DOODLE_TABLE")")
		expect_eq "$f: .savefs/info counts.palette" "${npal:-8}" "$got_pal"
	fi
	# How the chunks are stored: .bin members, .json members, inline.
	stored=
	case $f in
	v1-json) stored="0 0 6" ;;
	zip-rle) stored="6 0 0" ;;
	zip-json) stored="0 4 0" ;;
	zip-mixed) stored="4 2 0" ;;
	zip-inline) stored="0 0 4" ;;
	esac
	[ -z "$stored" ] || expect_eq "$f: .savefs/info counts of chunks as .bin members, .json members, inline" \
		"$stored" "$(tr '\t' ' ' <<< "$got_stored")"
	umount_sv "$m"
	check "$f: the container is unchanged after a browse" \
		cmp -s "$c" "$(doodle_file "$TMP/again" "$f")"
done

# ---- grep -rl over the grid rows --------------------------------------------

# A code some chunks hold and others do not, in the decoder's view; grep
# over the mount must name the same files.  '^[^#]' skips the legend.
f=zip-rle
c=$(doodle_file "$g" "$f")
dec="$TMP/grep-dec"
"$PYTHON" "$DDECODE" "$c" "$dec" || fail "ddecode.py $c failed"
total=$(find "$dec/chunks" -name '*.txt' | wc -l)
code=
for x in 0 1 2 3 4 5 6 7; do
	n=$(grep -rlE "^[^#].*$x" "$dec/chunks" | wc -l)
	if [ "$n" -gt 0 ] && [ "$n" -lt "$total" ]; then
		code=$x
		break
	fi
done
if [ -z "$code" ]; then
	fail "$f: no palette code that only some chunks hold (the fixture changed?)"
else
	m="$TMP/mnt-$f"
	mount_sv "$c" "$m" -o ro || die "$f: cannot mount"
	(cd "$dec" && grep -rlE "^[^#].*$code" chunks | sort) > "$TMP/grep.want"
	(cd "$m" && grep -rlE --include='*.txt' "^[^#].*$code" chunks | sort) > "$TMP/grep.got"
	expect_same_text "$f: grep -rl for code $code over the grid rows (--- decoder, +++ mount)" \
		"$TMP/grep.want" "$TMP/grep.got"
	(cd "$dec" && grep -rcE "^[^#].*$code" chunks | sort) > "$TMP/grep.want"
	(cd "$m" && grep -rcE --include='*.txt' "^[^#].*$code" chunks | sort) > "$TMP/grep.got"
	expect_same_text "$f: grep -rc for code $code: rows per chunk (--- decoder, +++ mount)" \
		"$TMP/grep.want" "$TMP/grep.got"
	umount_sv "$m"
fi

# ---- diff -r between two versions of a level --------------------------------

# b.level is a.level with two rows of chunk 0,0 changed through a mount.
# The rows are of colour 0, so the new RLE holds a 00 byte and diff calls
# the .bin binary (GNU diff looks for a NUL byte).
w="$TMP/versions"
mkdir -p -- "$w"
cp -- "$(doodle_file "$g" zip-rle)" "$w/a.level"
cp -- "$w/a.level" "$w/b.level"
mount_sv "$w/b.level" "$w/mb" || die "cannot mount b.level"
t=chunks/0/0,0.txt
cp -- "$w/mb/$t" "$w/old.txt"
h=$(grep -c '^#' "$w/old.txt")
size=$(sed -n '1s/^# chunk .* size \([0-9]*\)$/\1/p' "$w/old.txt")
row=$(printf "%${size}s" '' | tr ' ' 0)
cp -- "$w/old.txt" "$w/new.txt"
sed -i "$((h + 5)),$((h + 6))s/.*/$row/" "$w/new.txt"
cmp -s "$w/old.txt" "$w/new.txt" && die "the edit changes nothing in $t (the fixture changed?)"
check "sed -i on $t in b.level's mount" sed -i "$((h + 5)),$((h + 6))s/.*/$row/" "$w/mb/$t"
expect_same_file "$t after sed -i" "$w/new.txt" "$w/mb/$t"
umount_sv "$w/mb"
mount_sv "$w/a.level" "$w/A" -o ro || die "cannot mount a.level"
mount_sv "$w/b.level" "$w/B" -o ro || die "cannot mount b.level"
(cd "$w" && diff -r A/chunks B/chunks) > "$w/diff.got"
expect_eq "diff -r of the two versions' chunks/: exit status" 1 "$?"
{
	echo "Binary files A/chunks/0/0,0.bin and B/chunks/0/0,0.bin differ"
	echo "Binary files A/chunks/0/0,0.png and B/chunks/0/0,0.png differ"
	echo "diff -r A/chunks/0/0,0.txt B/chunks/0/0,0.txt"
	diff "$w/old.txt" "$w/new.txt"
} > "$w/diff.want"
expect_same_text "diff -r of the two versions' chunks/ shows the two rows of 0,0 only" \
	"$w/diff.want" "$w/diff.got"
expect_eq "the changed rows are rows 5 and 6 of the grid" \
	"$((h + 5)),$((h + 6))c$((h + 5)),$((h + 6))" "$(sed -n 4p "$w/diff.got")"
(cd "$w" && diff -r A B > /dev/null 2>&1)
expect_eq "diff -r of the two whole trees: exit status" 1 "$?"
(cd "$w" && diff -rq -x .savefs A B) | sed 's/^Files \(.*\) and .* differ$/\1/' > "$w/differ.got"
printf '%s\n' A/chunks/0/0,0.bin A/chunks/0/0,0.png A/chunks/0/0,0.txt A/preview.png > "$w/differ.want"
expect_same_text "diff -rq of the two whole trees: the files that differ" \
	"$w/differ.want" "$w/differ.got"
umount_sv "$w/A"
umount_sv "$w/B"

# ---- a layer's chunks: listed from the chunk table, given with their nodes --------

# chunks/<layer>/ is listed from the chunk table; a listing (readdirplus)
# gives the kernel each view with its node, so that reading it costs no
# lookup, and the nodes go when the kernel forgets them.
c=$(doodle_file "$g" zip-rle)
m="$TMP/mnt-nodes"
if mount_sv "$c" "$m" -o ro; then
	nodes() { json_field "$m/.savefs/info" nodes; }
	base=$(nodes)
	views=$(ls "$m/chunks/0" | wc -l)
	expect_eq "zip-rle: chunks/0 lists three views a chunk" \
		"$((3 * $(info_fields "$m/.savefs/info" counts.chunks)))" "$views"
	expect_eq "zip-rle: the listing gave every view with its node" "$((base + views))" "$(nodes)"
	(cd "$m/chunks/0" && sha256sum -- *) > "$TMP/nodes.sums"
	expect_eq "zip-rle: reading the views made no other node" "$((base + views))" "$(nodes)"
	if [ -w /proc/sys/vm/drop_caches ]; then
		gone() { sync; echo 2 > /proc/sys/vm/drop_caches; [ "$(nodes)" -lt "$((base + views))" ]; }
		wait_for "zip-rle: the nodes of forgotten views go" gone
		check "zip-rle: the views read the same after they were forgotten" \
			sh -c 'cd "$1" && sha256sum -c --quiet "$2"' sh "$m/chunks/0" "$TMP/nodes.sums"
	else
		printf 'skipping the forget checks: /proc/sys/vm/drop_caches is not writable\n'
	fi
	umount_sv "$m"
fi

# ---- the levelpack ------------------------------------------------------------

p="$TMP/mnt-pack"
mount_sv "$(doodle_file "$g" pack)" "$p" -o ro || die "cannot mount the levelpack"
expect_eq "ls levels/ of the levelpack" "v2-gzip zip-mixed" "$(ls "$p/levels" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "ls doodads/ of the levelpack" "doodad-3" "$(ls "$p/doodads" | tr '\n' ' ' | sed 's/ $//')"
check "the levelpack's index.json is JSON" "$PYTHON" -m json.tool "$p/index.json" > /dev/null
for n in levels/v2-gzip levels/zip-mixed doodads/doodad-3; do
	name=${n#*/}
	d="$TMP/alone-$name"
	mount_sv "$(doodle_file "$g" "$name")" "$d" -o ro || continue
	root=level.json
	[ "${n%%/*}" = doodads ] && root=doodad.json
	diff -r -- "$d/chunks" "$p/$n/chunks" > "$TMP/pack.diff" 2>&1
	expect_eq "levelpack $n: diff -r of chunks/ with $name mounted alone: exit status" 0 "$?" ||
		head -n 20 "$TMP/pack.diff" | sed 's/^/    /'
	expect_same_file "levelpack $n: $root as when mounted alone" "$d/$root" "$p/$n/$root"
	diff -r -x .savefs -- "$d" "$p/$n" > "$TMP/pack.diff" 2>&1
	expect_eq "levelpack $n: diff -r of the whole tree with $name mounted alone: exit status" 0 "$?" ||
		head -n 20 "$TMP/pack.diff" | sed 's/^/    /'
	umount_sv "$d"
done
umount_sv "$p"
finish
