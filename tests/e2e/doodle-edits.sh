#!/bin/bash
# doodle-edits.sh - edits of Sketchy Maze levels and a doodad through the
# mount with ordinary tools (sed -i, ex, cp, shell redirection, rm), on
# small levels made by mkdoodle at test time.
#
# After every edit, in the mount and again after an unmount and a remount:
#   - the edited .txt reads back as written (its grid rows: the # header is
#     savefs's), or the chunk is gone with its .bin and .png;
#   - nothing but the edited chunk's files (and preview.png) changed in the
#     tree (type, size, sha256 and path of every node);
#   - every text grid equals the independent decoder's (ddecode.py) view
#     of the container on disk;
# and in the container itself (python3 zipfile / json): an edited chunk is
# stored as RLE (a .bin member starting with 01; in a v1/v2 file, a JSON
# chunk {"type":0,"data":{...}}) and every other member is stored as
# before, byte for byte.  Refused edits (a bad level.json, a bad code in a
# grid, a read-only mount) leave the container as it was.  In a levelpack,
# an edit of a nested drawing rewrites that drawing only.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"

# The tree is drawn in small chunks so that grids are easy to write.
SIZE=16
ROW_DOTS=$(printf "%${SIZE}s" '' | tr ' ' .)
ZIP_ARGS="--chunks mixed --size $SIZE --count 8 --negative --dense-every 2 --assets 2 --palette 8 --seed 31"

# ---- helpers ------------------------------------------------------------------

# zipx CMD CONTAINER [ARGS]: looks into a container with Python only.  A
# CONTAINER (or BEFORE) named PACK!MEMBER is a member of a zip.
#   members C      one line per zip member, in stored order: name, CRC,
#                  compressed and plain size, method, sha256 of the stored
#                  (compressed) bytes, the first plain byte in hex, sha256
#                  of the plain bytes; then the same for the members of a
#                  zip member that is a zip itself (a levelpack's nested
#                  levels), named PACKMEMBER!MEMBER
#   read C NAME    the member's bytes on stdout (exit 1 if there is none);
#                  for a v1/v2 file, an attached file of the "files" map
#   root C         the root JSON (any container), keys sorted, one line
#   rootcmp C BEFORE KEY
#                  C's root JSON's KEY; then "same" if the root JSONs of C
#                  and BEFORE are the same but for KEY, else "differs"
#   jcheck C BEFORE KEY
#                  for v1/v2 files: "same" if C and BEFORE are the same JSON
#                  but for chunks.chunks[KEY], else "differs"; then "ok" if
#                  C's chunks.chunks[KEY] is {"type": 0, "data": {"x,y":
#                  int, ...}}, "none" if there is none, else what it is
#   inspect C DIR BEFORE KEY
#                  runs ddecode.py's main on C into DIR and prints
#                  "ddecode STATUS", then for a zip what members prints, for
#                  a v1/v2 file what jcheck prints: one python run, as
#                  starting python is slow on a busy host
zipx()
{
	"$PYTHON" - "$DDECODE" "$@" <<'PY'
import gzip, hashlib, io, json, re, struct, sys, zipfile

def root(data):
    if data[:2] == b'\x1f\x8b':
        return json.loads(gzip.decompress(data))
    if data[:2] == b'PK':
        z = zipfile.ZipFile(io.BytesIO(data))
        names = z.namelist()
        return json.loads(z.read('level.json' if 'level.json' in names else 'doodad.json'))
    return json.loads(data)

def members(data, prefix=''):
    z = zipfile.ZipFile(io.BytesIO(data))
    nested = []
    for i in z.infolist():
        h = data[i.header_offset:i.header_offset + 30]
        n, e = struct.unpack('<HH', h[26:30])
        start = i.header_offset + 30 + n + e
        raw = data[start:start + i.compress_size]
        plain = z.read(i.filename)
        print(prefix + i.filename, '%08x' % i.CRC, i.compress_size, i.file_size,
              i.compress_type, hashlib.sha256(raw).hexdigest(), plain[:1].hex() or '-',
              hashlib.sha256(plain).hexdigest())
        if plain[:4] == b'PK\x03\x04':
            nested.append((i.filename, plain))
    for name, plain in nested:
        members(plain, prefix + name + '!')

def jcheck(data, before, key):
    r, b = root(data), root(before)
    ch = r['chunks']['chunks'].pop(key, None)
    b['chunks']['chunks'].pop(key, None)
    print('same' if r == b else 'differs')
    ok = (isinstance(ch, dict) and set(ch) == {'type', 'data'} and ch['type'] == 0
          and isinstance(ch['data'], dict) and ch['data']
          and all(re.fullmatch(r'-?[0-9]+,-?[0-9]+', k) and type(v) is int
                  for k, v in ch['data'].items()))
    print('ok' if ok else 'none' if ch is None else json.dumps(ch)[:200])

def load(path):
    """A file's bytes; PACK!MEMBER is a member of a zip."""
    import os
    if '!' in path and not os.path.exists(path):
        pack, member = path.split('!', 1)
        return zipfile.ZipFile(pack).read(member)
    return open(path, 'rb').read()

ddecode, cmd, c = sys.argv[1:4]
data = load(c)
if cmd == 'members':
    members(data)
elif cmd == 'read' and data[:2] != b'PK':
    import base64
    f = root(data).get('files', {}).get(sys.argv[4])
    if f is None:
        sys.exit(1)
    sys.stdout.buffer.write(base64.b64decode(f['data']))
elif cmd == 'read':
    z = zipfile.ZipFile(io.BytesIO(data))
    if sys.argv[4] not in z.namelist():
        sys.exit(1)
    sys.stdout.buffer.write(z.read(sys.argv[4]))
elif cmd == 'rootcmp':
    r, b, key = root(data), root(open(sys.argv[4], 'rb').read()), sys.argv[5]
    print(r.get(key))
    r.pop(key, None)
    b.pop(key, None)
    print('same' if r == b else 'differs')
elif cmd == 'root':
    print(json.dumps(root(data), sort_keys=True))
elif cmd == 'jcheck':
    jcheck(data, load(sys.argv[4]), sys.argv[5])
elif cmd == 'inspect':
    import importlib.util, os, shutil
    out = sys.argv[4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    spec = importlib.util.spec_from_file_location('ddecode', ddecode)
    dd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dd)
    print('ddecode', dd.main(['ddecode.py', c, out]))
    sys.stdout.flush()
    if data[:2] == b'PK':
        members(data)
    else:
        jcheck(data, open(sys.argv[5], 'rb').read(), sys.argv[6])
PY
}

# container_kind FILE: zip, gzip or json, by its first bytes.
container_kind()
{
	case $(head -c 2 -- "$1" | od -An -tx1 | tr -d ' \n') in
	504b) echo zip ;;
	1f8b) echo gzip ;;
	7b*) echo json ;;
	*) echo unknown ;;
	esac
}

# rows CHAR [N]: N (default SIZE) rows of SIZE times CHAR.
rows()
{
	local r i
	r=$(printf "%${SIZE}s" '' | tr ' ' "$1")
	for ((i = 0; i < ${2:-$SIZE}; i++)); do
		printf '%s\n' "$r"
	done
}

# setup LABEL FILE [savefs options]: a copy of FILE in a fresh work
# directory, mounted; sets W, C, M.
setup()
{
	LABEL=$1
	W="$TMP/$LABEL"
	mkdir -p -- "$W"
	C="$W/c.${2##*.}"
	M="$W/mnt"
	cp -- "$2" "$C" || die "$LABEL: cannot copy $2"
	shift 2
	mount_sv "$C" "$M" "$@" || return 1
	tree_listing "$M" > "$W/before.tree" || fail "$LABEL: cannot list the mount"
	cp -- "$C" "$W/container.before"
	inspect "$LABEL" "$W/before.tree"
	if [ "$(container_kind "$C")" = zip ]; then
		cp -- "$W/after.members" "$W/before.members"
	else
		: > "$W/before.members"
	fi
}

# snap [MEMBERS]: the tree listing, the container's bytes and members that
# every later step compares with (MEMBERS: a zipx members listing of the
# container as it is now, to save a python run).
snap()
{
	tree_listing "$M" > "$W/before.tree" || fail "$LABEL: cannot list the mount"
	cp -- "$C" "$W/container.before"
	if [ -n "${1:-}" ]; then
		cp -- "$1" "$W/before.members"
	elif [ "$(container_kind "$C")" = zip ]; then
		zipx members "$C" > "$W/before.members" || fail "$LABEL: python zipfile cannot read $C"
	else
		: > "$W/before.members"
	fi
}

# chunk_of REL: "chunks/L/X,Y" for REL = chunks/L/X,Y.txt (or .bin).
chunk_of()
{
	printf '%s\n' "${1%.*}"
}

# tree_changes DESC MUST MAY: the paths that differ between before.tree and
# after.tree include every path in MUST and are all in MUST or MAY.
tree_changes()
{
	local desc=$1
	listing_paths "$W/before.tree" "$W/after.tree" > "$W/changed.got"
	# shellcheck disable=SC2086 # lists of paths
	printf '%s\n' $2 | grep . | sort -u > "$W/changed.must"
	# shellcheck disable=SC2086
	printf '%s\n' $2 $3 | grep . | sort -u > "$W/changed.may"
	CHECKS=$((CHECKS + 1))
	if [ -n "$(comm -23 "$W/changed.must" "$W/changed.got")" ] ||
		[ -n "$(comm -13 "$W/changed.may" "$W/changed.got")" ]; then
		fail "$desc: the paths that changed are not the expected ones"
		printf '    must change: %s\n    may change:  %s\n    changed:     %s\n' \
			"$(tr '\n' ' ' < "$W/changed.must")" "$3" "$(tr '\n' ' ' < "$W/changed.got")"
		return 1
	fi
	return 0
}

# members_kept DESC NAME...: every member of the container but NAME... is
# stored as it was at the last snap (name, CRC, sizes, method, stored
# bytes), and $ROOT_NAME is still the last member.  The members are read
# into after.members unless INSPECTED is set (inspect has put them there).
members_kept()
{
	local desc=$1 n f
	shift
	if [ -z "${INSPECTED:-}" ]; then
		zipx members "$C" > "$W/after.members" ||
			{ fail "$desc: python zipfile cannot read $C"; return 1; }
	fi
	for f in before after; do
		cp -- "$W/$f.members" "$W/$f.kept"
		for n in "$@"; do
			awk -v n="$n" '$1 != n' "$W/$f.kept" > "$W/kept.tmp" && mv -- "$W/kept.tmp" "$W/$f.kept"
		done
		sort -o "$W/$f.kept" "$W/$f.kept"
	done
	expect_same_text "$desc: the other members are stored as before (--- before, +++ after)" \
		"$W/before.kept" "$W/after.kept"
	expect_eq "$desc: the root JSON is the last member" "$ROOT_NAME" \
		"$(tail -n 1 "$W/after.members" | cut -d ' ' -f 1)"
}

# member_rle NAME DESC [MEMBERS]: the member exists and is an RLE chunk
# (01 first), in MEMBERS (a zipx members listing; default: made now).
member_rle()
{
	local first
	if [ -n "${3:-}" ]; then
		first=$(awk -v n="$1" '$1 == n { print $7 }' "$3")
	else
		first=$(zipx members "$C" | awk -v n="$1" '$1 == n { print $7 }')
	fi
	expect_eq "$2: $1 is stored as RLE (first byte 01)" 01 "${first:-no such member}"
}

# inspect DESC LISTING [KEY]: the decoder's view of the container in
# $TMP/ddecoded, compared with the mount (LISTING, its tree_listing), and
# for a zip its members in after.members, for a v1/v2 file jcheck's answer
# for chunk KEY in jcheck.out.
inspect()
{
	zipx inspect "$C" "$TMP/ddecoded" "$W/container.before" "${3:-0,0}" > "$W/inspect.out" \
		2> "$W/inspect.err"
	if [ "$(head -n 1 "$W/inspect.out")" != "ddecode 0" ]; then
		fail "$1: the independent decoder rejects $C: $(cat "$W/inspect.err")"
	fi
	check_ddecode "$C" "$M" "$2" "$TMP/ddecoded"
	if [ "$(container_kind "$C")" = zip ]; then
		tail -n +2 "$W/inspect.out" > "$W/after.members"
	else
		tail -n +2 "$W/inspect.out" > "$W/jcheck.out"
	fi
}

# verify_tree DESC MUST MAY [KEY]: the tree changed in MUST (and maybe MAY)
# only; after a remount the tree is the same and agrees with the decoder
# (inspect DESC KEY).
verify_tree()
{
	local desc=$1
	tree_listing "$M" > "$W/after.tree" || fail "$desc: cannot list the mount"
	tree_changes "$desc" "$2" "$3"
	remount_sv "$M" || die "$desc: cannot remount"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "$desc: the tree after a remount differs from the tree before it" \
		"$W/after.tree" "$W/after2.tree"
	inspect "$desc" "$W/after2.tree" "${4:-}"
}

# verify_chunk DESC REL WANT: REL (chunks/L/X,Y.txt or .bin) was just
# written; WANT holds the grid rows the chunk must now have (all dots: the
# chunk must be gone).  Checks the mount, a remount, the decoder and the
# container; then takes a new snap.
verify_chunk()
{
	local desc="$LABEL: $1" rel=$2 want=$3 base layer key gone='' i
	base=$(chunk_of "$rel")
	layer=${base#chunks/}
	layer=${layer%%/*}
	key=${base##*/}
	grep -q '[^.]' "$want" || gone=1
	local must="$base.txt $base.png $base.bin" may=
	# A chunk that never was (an empty grid written to a new name) leaves
	# the tree as it was.
	[ -n "$gone" ] && ! grep -q " $base.txt\$" "$W/before.tree" && must=
	[ "$layer" = 0 ] && may=preview.png
	for i in 1 2; do
		if [ -n "$gone" ]; then
			check "$desc: $base.txt is gone" test ! -e "$M/$base.txt"
			check "$desc: $base.bin is gone" test ! -e "$M/$base.bin"
			check "$desc: $base.png is gone" test ! -e "$M/$base.png"
			# shellcheck disable=SC2010 # ls is what is tested
			ls "$M/chunks/$layer" | grep -q "^${key}\." &&
				fail "$desc: ls still lists $key.*"
		else
			grep -v '^#' -- "$M/$base.txt" > "$W/got.grid"
			expect_same_text "$desc: the grid rows of $base.txt (--- written, +++ read back)" \
				"$want" "$W/got.grid"
			expect_eq "$desc: stat size of $base.txt" "$(cat -- "$M/$base.txt" | wc -c)" \
				"$(stat -c %s -- "$M/$base.txt")"
		fi
		[ $i = 2 ] && break
		verify_tree "$desc" "$must" "$may" "$key"
		desc="$desc (after a remount)"
	done
	# The decoder's view of the container.
	if [ -n "$gone" ]; then
		check "$desc: ddecode.py finds no chunk $base" test ! -e "$TMP/ddecoded/$base.txt"
	else
		grep -v '^#' -- "$TMP/ddecoded/$base.txt" > "$W/dec.grid" 2> /dev/null
		expect_same_text "$desc: the grid ddecode.py reads from the container (--- written)" \
			"$want" "$W/dec.grid"
	fi
	local members=
	case $(container_kind "$C") in
	zip)
		INSPECTED=1 members_kept "$desc" "$base.bin" "$base.json"
		members="$W/after.members"
		if [ -n "$gone" ]; then
			check "$desc: no member $base.bin" \
				test -z "$(awk -v n="$base.bin" '$1 == n' "$members")"
		else
			member_rle "$base.bin" "$desc" "$members"
		fi
		check "$desc: no member $base.json" \
			test -z "$(awk -v n="$base.json" '$1 == n' "$members")"
		;;
	json | gzip)
		expect_eq "$desc: the container's kind" "$KIND" "$(container_kind "$C")"
		local jc
		mapfile -t jc < "$W/jcheck.out"
		expect_eq "$desc: the other chunks and keys are as before" same "${jc[0]:-}"
		expect_eq "$desc: chunks.chunks[\"$key\"] is {\"type\":0,\"data\":{...}}" \
			"$([ -n "$gone" ] && echo none || echo ok)" "${jc[1]:-}"
		;;
	*)
		fail "$desc: the container is no longer a Sketchy Maze file"
		;;
	esac
	snap "$members"
}

# edit DESC REL SNIPPET: runs SNIPPET (shell; the file is "$F") on a plain
# copy of REL and on REL in the mount, then verify_chunk with the plain
# copy's grid rows.  A plain copy whose comment lines are savefs's header
# as it was must read back whole, byte for byte.
edit()
{
	local desc=$1 rel=$2 snippet=$3 x="$W/plain"
	rm -f -- "$x" "$W/plain.header"
	if [ -e "$M/$rel" ]; then
		cp -- "$M/$rel" "$x" || fail "$LABEL: $desc: cannot copy $rel out of the mount"
		grep '^#' -- "$x" > "$W/plain.header"
	fi
	(F=$x; eval "$snippet") > "$W/expect.err" 2>&1 ||
		fail "$LABEL: $desc: the command fails on a plain file too: $(cat "$W/expect.err")"
	CHECKS=$((CHECKS + 1))
	# shellcheck disable=SC2034 # F is the snippet's
	(F=$M/$rel; eval "$snippet") > "$W/op.err" 2>&1 ||
		fail "$LABEL: $desc: '$snippet' on the mount failed: $(cat "$W/op.err")"
	grep -v '^#' -- "$x" | tr -d '\r' > "$W/want.grid"
	if [ -e "$W/plain.header" ] && grep '^#' -- "$x" | cmp -s - "$W/plain.header"; then
		expect_same_file "$LABEL: $desc: $rel reads back whole" "$x" "$M/$rel"
	fi
	verify_chunk "$desc" "$rel" "$W/want.grid"
}



# chunks_in LAYER [DRAWING]: the chunks of a layer ("x,y" lines); DRAWING
# is a directory of a levelpack's mount (levels/<name>).
chunks_in()
{
	(cd "$M/${2:+$2/}chunks/$1" && ls -- *.txt | sed 's/\.txt$//')
}

EX=
if command -v ex > /dev/null; then
	EX="ex"
elif command -v vim > /dev/null; then
	EX="vim -e"
fi

mkdir -p -- "$TMP/fx"
fx="$TMP/fx"
# shellcheck disable=SC2086
"$MKDOODLE" level "$fx/zip.level" $ZIP_ARGS || die "mkdoodle failed"
"$MKDOODLE" level "$fx/v1.level" --container json --size $SIZE --count 4 --negative \
	--dense-every 2 --assets 2 --seed 32 || die "mkdoodle failed"
"$MKDOODLE" level "$fx/v2.level" --container gzip --size $SIZE --count 4 --negative \
	--seed 33 || die "mkdoodle failed"
"$MKDOODLE" level "$fx/inline.level" --inline --chunks mixed --size $SIZE --count 4 \
	--seed 34 || die "mkdoodle failed"
"$MKDOODLE" doodad "$fx/d.doodad" --layers 3 --size $SIZE --seed 35 || die "mkdoodle failed"
"$MKDOODLE" pack "$fx/p.levelpack" "$fx/v2.level" "$fx/zip.level" || die "mkdoodle failed"

# ---- a zip level: the text grid with every tool ---------------------------------

ROOT_NAME=level.json
KIND=zip
setup zip "$fx/zip.level" || die "zip: cannot mount"
mapfile -t ch < <(chunks_in 0)
[ "${#ch[@]}" -eq 8 ] || die "zip: expected 8 chunks, found ${#ch[@]}: ${ch[*]}"
# The chunks stored as .json members, and as type 0 / type 1 .bin members.
mapfile -t json_ch < <(sed -n 's#^chunks/0/\(.*\)\.json .*#\1#p' "$W/before.members")
[ "${#json_ch[@]}" -ge 1 ] || die "zip: no chunk is a .json member (the fixture changed?)"
J=${json_ch[0]}
others=()
for k in "${ch[@]}"; do
	[ "$k" = "$J" ] || others+=("$k")
done
A=${others[0]} B=${others[1]} Cc=${others[2]} D=${others[3]} E=${others[4]} G=${others[5]}
H=$(grep -c '^#' "$M/chunks/0/$A.txt")

r3=$(printf "%${SIZE}s" '' | tr ' ' 3)
edit "sed -i: one row of $A" "chunks/0/$A.txt" "sed -i '$((H + 3))s/.*/$r3/' \"\$F\""
# dd conv=notrunc: two cells of row 2 overwritten in place.
edit "dd conv=notrunc: two cells of $A" "chunks/0/$A.txt" \
	'printf 77 | dd of="$F" bs=1 seek=$(($(grep "^#" "$F" | wc -c) + (SIZE + 1) + 3)) conv=notrunc status=none'
# Comment lines are ignored wherever they are.
edit "sed -i: a row of $A and a comment line among the rows" "chunks/0/$A.txt" \
	"sed -i -e '$((H + 4))s/.*/$r3/' -e '$((H + 8))i # a note among the rows' \"\$F\""
if [ -n "$EX" ]; then
	r4=$(printf "%${SIZE}s" '' | tr ' ' 4)
	edit "$EX: rows 2 and 9 of $B" "chunks/0/$B.txt" \
		"$EX -s -c '$((H + 2))s/.*/$r4/' -c '$((H + 9))s/^../77/' -c wq \"\$F\""
else
	echo "SKIP (one check): neither ex nor vim is installed: no editor edit"
fi
# A prepared grid without the header: a diagonal of 5s, the rest empty.
for ((i = 0; i < SIZE; i++)); do
	printf '%s5%s\n' "${ROW_DOTS:0:i}" "${ROW_DOTS:i+1}"
done > "$W/diag.txt"
edit "cp of a prepared grid (no header) onto $Cc" "chunks/0/$Cc.txt" 'cp -- "$W/diag.txt" "$F"'
edit "sed > onto $D (CRLF line ends)" "chunks/0/$D.txt" \
	"{ rows 1 3; rows . $((SIZE - 3)); } | sed 's/\$/\\r/'"' > "$F"'
# The chunk stored as a .json member: edited, it becomes an RLE .bin.
edit "printf > onto $J (a .json member)" "chunks/0/$J.txt" \
	'{ rows 2 4; rows 0 $((SIZE - 4)); } > "$F"'
check "zip: no chunk member ${J}.json is left" test -z "$(grep "^chunks/0/$J.json " "$W/before.members")"

# A new chunk, a removed one, one made empty.
edit "printf > creates chunks/0/9,9.txt" chunks/0/9,9.txt '{ rows . 5; rows 6 1; rows . $((SIZE - 6)); } > "$F"'
check "zip: rm chunks/0/$E.txt" rm -- "$M/chunks/0/$E.txt"
rows . > "$W/empty.grid"
verify_chunk "rm of $E.txt" "chunks/0/$E.txt" "$W/empty.grid"
edit "an all-empty grid onto $G" "chunks/0/$G.txt" 'rows . > "$F"'
edit "printf > of an all-empty grid creates nothing" chunks/0/-5,-5.txt 'rows . > "$F"'

# A new chunk written as a map-accessor .bin (type 0, absolute coordinates:
# zigzag x, zigzag y, index): pixels (49,50) colour 3 and (53,48) colour 6
# of chunk 3,3, stored as RLE.
check "zip: printf > of a map-accessor chunks/0/3,3.bin" \
	eval 'printf "\000\142\144\003\152\140\006" > "$M/chunks/0/3,3.bin"'
{ printf '.....6%s\n' "${ROW_DOTS:6}"; printf '%s\n' "$ROW_DOTS"; printf '.3%s\n' "${ROW_DOTS:2}";
	rows . $((SIZE - 3)); } > "$W/t0.grid"
verify_chunk "a map-accessor .bin creates chunk 3,3" chunks/0/3,3.txt "$W/t0.grid"

# A .bin copied onto another chunk's: the same pixels at its own place.
# ($A's .bin is RLE since its edit: RLE positions are implicit.)
grep -v '^#' "$M/chunks/0/$A.txt" > "$W/a.grid"
check "zip: cp $A.bin onto $B.bin" cp -- "$M/chunks/0/$A.bin" "$M/chunks/0/$B.bin"
verify_chunk "cp of $A.bin onto $B.bin" "chunks/0/$B.txt" "$W/a.grid"
expect_same_file "zip: $B.bin is now $A.bin's bytes" "$M/chunks/0/$A.bin" "$M/chunks/0/$B.bin"

# ---- level.json ------------------------------------------------------------------

cp -- "$M/level.json" "$W/level.before"
check "zip: sed -i of the title in level.json" \
	sed -i 's/"title": "[^"]*"/"title": "Edited through savefs"/' "$M/level.json"
tree_listing "$M" > "$W/after.tree"
tree_changes "zip: sed -i of the title" level.json ""
remount_sv "$M" || die "zip: cannot remount"
sed 's/"title": "[^"]*"/"title": "Edited through savefs"/' "$W/level.before" > "$W/level.want"
expect_same_file "zip: level.json after sed -i of the title and a remount" "$W/level.want" "$M/level.json"
mapfile -t rc < <(zipx rootcmp "$C" "$W/container.before" title)
expect_eq "zip: the container's level.json has the new title" "Edited through savefs" "${rc[0]:-}"
expect_eq "zip: the container's level.json: the other keys as before" same "${rc[1]:-}"
members_kept "zip: level.json title" level.json
tree_listing "$M" > "$W/after2.tree"
expect_same_text "zip: the tree after the title edit and a remount" "$W/after.tree" "$W/after2.tree"
snap

# Refused: "title": 5.
sed 's/"title": "[^"]*"/"title": 5/' "$M/level.json" > "$W/bad.json"
expect_eq "zip: close() after writing \"title\": 5 to level.json" "close EINVAL" \
	"$(py_write "$M/level.json" "$W/bad.json")"
log_has "\"title\": 5" 'refused level.json: level.json: "title" must be a string'
cp -- "$W/bad.json" "$M/level.json" 2> "$W/cp.err"
expect_eq "zip: cp of a bad level.json: exit status" 1 "$?"
grep -q 'Invalid argument' "$W/cp.err" ||
	fail "zip: cp of a bad level.json does not fail with EINVAL: $(cat "$W/cp.err")"
printf '{"title": "unclosed' > "$W/bad2.json"
expect_eq "zip: close() after writing broken JSON to level.json" "close EINVAL" \
	"$(py_write "$M/level.json" "$W/bad2.json")"
log_has "broken JSON" "refused level.json: level.json: line 1, column"
unchanged "refused level.json edits"

# Refused: a code that is not in the palette (8 colours: 0-7).
{ rows . 2; printf 'Z%s\n' "${ROW_DOTS:1}"; rows . $((SIZE - 3)); } > "$W/badcode.txt"
expect_eq "zip: close() after writing a grid with code Z onto $A.txt" "close EINVAL" \
	"$(py_write "$M/chunks/0/$A.txt" "$W/badcode.txt")"
log_has "code Z" "refused chunks/0/$A.txt: line 3, column 1: index 61 is past the palette"
cp -- "$W/badcode.txt" "$M/chunks/0/$A.txt" 2> "$W/cp.err"
expect_eq "zip: cp of a grid with code Z: exit status" 1 "$?"
grep -q 'Invalid argument' "$W/cp.err" ||
	fail "zip: cp of a grid with code Z does not fail with EINVAL: $(cat "$W/cp.err")"
{ rows 1 3; } > "$W/short.txt"
expect_eq "zip: close() after writing a grid of 3 rows onto $A.txt" "close EINVAL" \
	"$(py_write "$M/chunks/0/$A.txt" "$W/short.txt")"
log_has "3 rows" "refused chunks/0/$A.txt: 3 rows, expected $SIZE"
expect_eq "zip: close() after writing a grid of code Z as a new chunk" "close EINVAL" \
	"$(py_write "$M/chunks/0/7,7.txt" "$W/badcode.txt" create)"
# Through a rename: sed -i's temporary file renamed over the .txt.
sed -i "$((H + 3))s/^./Z/" "$M/chunks/0/$A.txt" 2> "$W/sed.err"
expect_eq "zip: sed -i writing code Z: exit status" 4 "$?"
grep -q 'Invalid argument' "$W/sed.err" ||
	fail "zip: sed -i writing code Z does not fail with EINVAL: $(cat "$W/sed.err")"
if [ -n "$EX" ]; then
	$EX -s -c "$((H + 3))s/^./Z/" -c wq "$M/chunks/0/$A.txt" > /dev/null 2>&1 &&
		fail "zip: $EX writing code Z succeeded"
fi
ls -a "$M/chunks/0" | grep -v '^\.\{1,2\}$' | grep -v '^-\{0,1\}[0-9]*,-\{0,1\}[0-9]*\.\(txt\|bin\|png\)$' > "$W/strays"
expect_eq "zip: stray files in chunks/0/ after refused edits" "" "$(cat "$W/strays")"
unchanged "refused grids"
check "zip: the refused new chunk is not there after a remount" test ! -e "$M/chunks/0/7,7.txt"

# ---- attached files ----------------------------------------------------------------

printf 'a wallpaper added by cp\n' > "$W/new.txt"
check "zip: cp adds assets/wallpapers/new.txt" cp -- "$W/new.txt" "$M/assets/wallpapers/new.txt"
{ printf 'replaced by a redirection\n' > "$M/assets/wallpapers/w1.txt"; } 2> "$W/op.err" ||
	fail "zip: > onto assets/wallpapers/w1.txt failed: $(cat "$W/op.err")"
check "zip: rm assets/screenshots/large.png" rm -- "$M/assets/screenshots/large.png"
tree_listing "$M" > "$W/after.tree"
# assets/screenshots/ held large.png only: it may go with it.
tree_changes "zip: assets" "assets/wallpapers/new.txt assets/wallpapers/w1.txt assets/screenshots/large.png" \
	assets/screenshots
remount_sv "$M" || die "zip: cannot remount"
printf 'replaced by a redirection\n' > "$W/w1.txt"
expect_same_file "zip: assets/wallpapers/new.txt after a remount" "$W/new.txt" "$M/assets/wallpapers/new.txt"
expect_same_file "zip: assets/wallpapers/w1.txt after a remount" "$W/w1.txt" "$M/assets/wallpapers/w1.txt"
check "zip: assets/screenshots/large.png is gone after a remount" test ! -e "$M/assets/screenshots/large.png"
tree_listing "$M" > "$W/after2.tree"
expect_same_text "zip: the tree after the asset edits and a remount" "$W/after.tree" "$W/after2.tree"
inspect "zip: assets" "$W/after2.tree"
# member_sha NAME: the sha256 of a member's plain bytes, from after.members.
member_sha()
{
	awk -v n="$1" '$1 == n { print $8 }' "$W/after.members"
}
expect_eq "zip: the container's assets/wallpapers/new.txt" "$(sha256sum < "$W/new.txt" | cut -c1-64)" \
	"$(member_sha assets/wallpapers/new.txt)"
expect_eq "zip: the container's assets/wallpapers/w1.txt" "$(sha256sum < "$W/w1.txt" | cut -c1-64)" \
	"$(member_sha assets/wallpapers/w1.txt)"
expect_eq "zip: the container holds no assets/screenshots/large.png" "" \
	"$(member_sha assets/screenshots/large.png)"
INSPECTED=1 members_kept "zip: assets" assets/wallpapers/new.txt assets/wallpapers/w1.txt \
	assets/screenshots/large.png
umount_sv "$M"

# ---- -o ro -------------------------------------------------------------------------

setup ro "$W/c.level" -o ro || die "ro: cannot mount"
t="chunks/0/$A.txt"
{ rows 1 > "$M/$t"; } 2> "$W/ro.err" && fail "ro: > onto $t succeeded"
grep -q 'Read-only file system' "$W/ro.err" || fail "ro: > onto $t: no EROFS: $(cat "$W/ro.err")"
expect_eq "ro: open() of $t for writing" "open EROFS" "$(py_write "$M/$t" "$TMP/zip/diag.txt")"
expect_eq "ro: creating chunks/0/8,8.txt" "open EROFS" \
	"$(py_write "$M/chunks/0/8,8.txt" "$TMP/zip/diag.txt" create)"
cp -- "$M/chunks/0/$A.bin" "$M/chunks/0/$B.bin" 2> "$W/ro.err" && fail "ro: cp onto a .bin succeeded"
grep -q 'Read-only file system' "$W/ro.err" || fail "ro: cp onto a .bin: no EROFS: $(cat "$W/ro.err")"
rm -f -- "$M/$t" 2> "$W/ro.err" && fail "ro: rm $t succeeded"
grep -q 'Read-only file system' "$W/ro.err" || fail "ro: rm $t: no EROFS: $(cat "$W/ro.err")"
sed -i 's/Edited/Again/' "$M/level.json" 2> "$W/ro.err" && fail "ro: sed -i level.json succeeded"
grep -q 'Read-only file system' "$W/ro.err" || fail "ro: sed -i level.json: no EROFS: $(cat "$W/ro.err")"
rm -f -- "$M/assets/wallpapers/w1.txt" 2> "$W/ro.err" && fail "ro: rm of an asset succeeded"
grep -q 'Read-only file system' "$W/ro.err" || fail "ro: rm of an asset: no EROFS: $(cat "$W/ro.err")"
unchanged "writes to a read-only mount"
umount_sv "$M"

# ---- a levelpack: its nested drawings are edited, the pack is rewritten ------------

ROOT_NAME=index.json
setup pack "$fx/p.levelpack" || die "pack: cannot mount"
mapfile -t nz < <(chunks_in 0 levels/zip)
mapfile -t nv < <(chunks_in 0 levels/v2)
if [ "${#nz[@]}" -lt 2 ] || [ "${#nv[@]}" -lt 2 ]; then
	die "pack: the nested levels have too few chunks"
fi
# The members listing ends with the nested zip level's: its level.json.
ROOT_NAME='levels/zip.level!level.json'

# A chunk of the nested zip level: that level is written anew, its other
# members and the pack's other members are stored as they were.
t=levels/zip/chunks/0/${nz[0]}
n="levels/zip.level!chunks/0/${nz[0]}"
{ rows 5 2; rows . $((SIZE - 2)); } > "$W/pk.grid"
check "pack: cp onto $t.txt" cp -- "$W/pk.grid" "$M/$t.txt"
tree_listing "$M" > "$W/after.tree"
tree_changes "pack: cp onto $t.txt" "$t.txt $t.png $t.bin" levels/zip/preview.png
remount_sv "$M" || die "pack: cannot remount"
tree_listing "$M" > "$W/after2.tree"
expect_same_text "pack: the tree after a remount" "$W/after.tree" "$W/after2.tree"
inspect "pack: cp onto $t.txt" "$W/after2.tree"
grep -v '^#' "$M/$t.txt" > "$W/got.grid"
expect_same_text "pack: the grid of $t.txt after a remount" "$W/pk.grid" "$W/got.grid"
INSPECTED=1 members_kept "pack: cp onto $t.txt" levels/zip.level "$n.bin" "$n.json"
member_rle "$n.bin" "pack: cp onto $t.txt" "$W/after.members"
snap "$W/after.members"

# A chunk of the nested gzip level removed: that level stays gzip.
t=levels/v2/chunks/0/${nv[0]}
check "pack: rm $t.txt" rm -- "$M/$t.txt"
tree_listing "$M" > "$W/after.tree"
tree_changes "pack: rm $t.txt" "$t.txt $t.png $t.bin" levels/v2/preview.png
remount_sv "$M" || die "pack: cannot remount"
tree_listing "$M" > "$W/after2.tree"
expect_same_text "pack: the tree after a remount" "$W/after.tree" "$W/after2.tree"
inspect "pack: rm $t.txt" "$W/after2.tree"
check "pack: $t.txt is gone after a remount" test ! -e "$M/$t.txt"
INSPECTED=1 members_kept "pack: rm $t.txt" levels/v2.level
expect_eq "pack: levels/v2.level is still gzip (first byte)" 1f \
	"$(awk '$1 == "levels/v2.level" { print $7 }' "$W/after.members")"
mapfile -t jc < <(zipx jcheck "$C!levels/v2.level" "$W/container.before!levels/v2.level" "${nv[0]}")
expect_eq "pack: levels/v2.level: the other chunks and keys are as before" same "${jc[0]:-}"
expect_eq "pack: levels/v2.level: chunk ${nv[0]} is gone" none "${jc[1]:-}"
snap "$W/after.members"

# index.json is read-only; drawings cannot be added or removed.
printf '{}\n' > "$W/empty.json"
expect_eq "pack: index.json written with other bytes: refused at close" "close EPERM" \
	"$(py_write "$M/index.json" "$W/empty.json")"
rmdir -- "$M/levels/v2" 2> /dev/null && fail "pack: rmdir levels/v2 succeeded"
mkdir -- "$M/levels/new" 2> /dev/null && fail "pack: mkdir levels/new succeeded"
cp -- "$fx/v2.level" "$M/levels/" 2> /dev/null
unchanged "pack: index.json, rmdir and mkdir in levels/"
check "pack: a level copied into levels/ is not kept" test ! -e "$M/levels/v2.level"
umount_sv "$M"
ROOT_NAME=level.json

# ---- v1 JSON and v2 gzip stay what they are --------------------------------------------

for v in v1 v2; do
	ROOT_NAME=level.json
	KIND=json
	[ $v = v2 ] && KIND=gzip
	setup "$v" "$fx/$v.level" || continue
	mapfile -t ch < <(chunks_in 0)
	edit "printf > onto ${ch[0]}" "chunks/0/${ch[0]}.txt" '{ rows 3 2; rows . $((SIZE - 2)); } > "$F"'
	edit "sed -i on ${ch[1]}" "chunks/0/${ch[1]}.txt" "sed -i '\$s/^./1/' \"\$F\""
	edit "printf > creates chunks/0/9,9.txt" chunks/0/9,9.txt '{ rows 2 1; rows . $((SIZE - 1)); } > "$F"'
	check "$v: rm chunks/0/${ch[2]}.txt" rm -- "$M/chunks/0/${ch[2]}.txt"
	verify_chunk "rm of ${ch[2]}.txt" "chunks/0/${ch[2]}.txt" "$TMP/zip/empty.grid"
	check "$v: the file is still parsed by python's json (after a gunzip for v2)" \
		"$PYTHON" -c 'import gzip,json,sys; d=open(sys.argv[1],"rb").read(); json.loads(gzip.decompress(d) if d[:2]==b"\x1f\x8b" else d)' "$C"
	if [ $v = v1 ]; then
		expect_eq "v1: the file starts with {" "{" "$(head -c 1 "$C")"
		# An attached file in the "files" map.
		printf 'v1 wallpaper, replaced\n' > "$W/wall.txt"
		check "v1: cp onto assets/wallpapers/w1.txt" cp -- "$W/wall.txt" "$M/assets/wallpapers/w1.txt"
		remount_sv "$M" || die "v1: cannot remount"
		expect_same_file "v1: assets/wallpapers/w1.txt after a remount" "$W/wall.txt" "$M/assets/wallpapers/w1.txt"
		expect_eq "v1: the container's files map holds the new bytes" "v1 wallpaper, replaced" \
			"$(zipx read "$C" assets/wallpapers/w1.txt)"
		expect_eq "v1: the file starts with { after an asset edit" "{" "$(head -c 1 "$C")"
	fi
	# level.json: the title lands, the rest (chunks and files included)
	# stays as it was.
	cp -- "$C" "$W/container.before"
	check "$v: sed -i of the title in level.json" \
		sed -i 's/"title": "[^"]*"/"title": "A new title"/' "$M/level.json"
	remount_sv "$M" || die "$v: cannot remount"
	grep -q '"title": "A new title"' "$M/level.json" ||
		fail "$v: level.json does not show the new title after a remount"
	mapfile -t rc < <(zipx rootcmp "$C" "$W/container.before" title)
	expect_eq "$v: the container's title" "A new title" "${rc[0]:-}"
	expect_eq "$v: the container's other keys, chunks and files as before" same "${rc[1]:-}"
	if [ $v = v1 ]; then
		expect_eq "v1: the file starts with { after a title edit" "{" "$(head -c 1 "$C")"
	else
		expect_eq "v2: the file starts with 1f 8b" 1f8b "$(head -c 2 "$C" | od -An -tx1 | tr -d ' \n')"
	fi
	umount_sv "$M"
done

# ---- -o upgrade: v1 and v2 become zips, a zip's chunks all RLE ----------------------------

for v in v1 v2 zip; do
	ROOT_NAME=level.json
	KIND=zip
	setup "up-$v" "$fx/$v.level" -o upgrade || continue
	mapfile -t ch < <(chunks_in 0)
	t="chunks/0/${ch[0]}.txt"
	{ rows 5 1; rows . $((SIZE - 1)); } > "$W/up.grid"
	check "up-$v: cp onto $t" cp -- "$W/up.grid" "$M/$t"
	expect_eq "up-$v: the container is a zip after an edit" zip "$(container_kind "$C")"
	tree_listing "$M" > "$W/after.tree"
	# In a zip, the .bin of a map-accessor chunk becomes RLE.
	may=preview.png
	[ $v = zip ] && may="$may $(printf 'chunks/0/%s.bin ' "${ch[@]}")"
	tree_changes "up-$v: an edit with -o upgrade" \
		"chunks/0/${ch[0]}.txt chunks/0/${ch[0]}.png chunks/0/${ch[0]}.bin" "$may"
	remount_sv "$M" || die "up-$v: cannot remount"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "up-$v: the tree after a remount" "$W/after.tree" "$W/after2.tree"
	inspect "up-$v: an edit with -o upgrade" "$W/after2.tree"
	cp -- "$W/after.members" "$W/up.members"
	grep -v '^#' "$M/$t" > "$W/got.grid"
	expect_same_text "up-$v: the grid of $t" "$W/up.grid" "$W/got.grid"
	expect_eq "up-$v: level.json is the last member" level.json "$(tail -n 1 "$W/up.members" | cut -d ' ' -f 1)"
	printf 'chunks/0/%s.bin\n' "${ch[@]}" | sort > "$W/up.want"
	grep '^chunks/' "$W/up.members" | cut -d ' ' -f 1 | sort > "$W/up.got"
	expect_same_text "up-$v: a .bin member per chunk, nothing else under chunks/" "$W/up.want" "$W/up.got"
	for k in "${ch[@]}"; do
		member_rle "chunks/0/$k.bin" "up-$v" "$W/up.members"
	done
	# The attached files became members, with the bytes the mount shows.
	while IFS= read -r -d '' a; do
		expect_eq "up-$v: member $a holds the bytes of the mount's $a" \
			"$(sha256sum < "$M/$a" | cut -c1-64)" \
			"$(awk -v n="$a" '$1 == n { print $8 }' "$W/up.members")"
	done < <(cd "$M" && find assets -type f -print0)
	if [ $v = zip ]; then
		mapfile -t old < <(awk '$1 ~ /^chunks\// { print $1 }' "$W/before.members")
		INSPECTED=1 members_kept "up-zip: an edit with -o upgrade" "${old[@]}" \
			$(printf 'chunks/0/%s.bin ' "${ch[@]}")
	fi
	zipx root "$C" | grep -qF '"chunks": {"chunks": {}, ' ||
		fail "up-$v: level.json holds chunks inline: $(zipx root "$C" | head -c 300)"
	umount_sv "$M"
done

# ---- a zip with the chunks inline in level.json -----------------------------------------

ROOT_NAME=level.json
KIND=zip
if setup inline "$fx/inline.level"; then
	mapfile -t ch < <(chunks_in 0)
	t="chunks/0/${ch[0]}.txt"
	{ rows 6 2; rows . $((SIZE - 2)); } > "$W/in.grid"
	check "inline: cp onto $t" cp -- "$W/in.grid" "$M/$t"
	tree_listing "$M" > "$W/after.tree"
	tree_changes "inline: an edit" "chunks/0/${ch[0]}.txt chunks/0/${ch[0]}.png chunks/0/${ch[0]}.bin" \
		"preview.png"
	remount_sv "$M" || die "inline: cannot remount"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "inline: the tree after a remount" "$W/after.tree" "$W/after2.tree"
	inspect "inline: an edit" "$W/after2.tree"
	grep -v '^#' "$M/$t" > "$W/got.grid"
	expect_same_text "inline: the grid of $t" "$W/in.grid" "$W/got.grid"
	member_rle "chunks/0/${ch[0]}.bin" inline "$W/after.members"
	expect_eq "inline: level.json is the last member" level.json \
		"$(tail -n 1 "$W/after.members" | cut -d ' ' -f 1)"
	umount_sv "$M"
fi

# ---- a doodad: a chunk of layer 1 ---------------------------------------------------------

ROOT_NAME=doodad.json
KIND=zip
if setup doodad "$fx/d.doodad"; then
	edit "printf > onto layer 1's chunk" chunks/1/0,0.txt '{ rows 1 2; rows . $((SIZE - 2)); } > "$F"'
	edit "sed -i on layer 2's chunk" chunks/2/0,0.txt "sed -i '\$s/.*/$(printf "%${SIZE}s" '' | tr ' ' 2)/' \"\$F\""
	# Refused: a layer fewer, a chunk size changed.
	"$PYTHON" - "$M/doodad.json" "$W/one-layer.json" "$W/size.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = json.loads(json.dumps(d))
e['layers'].pop()
json.dump(e, open(sys.argv[2], 'w'), indent=2)
e = json.loads(json.dumps(d))
e['layers'][0]['chunks']['size'] += 1
json.dump(e, open(sys.argv[3], 'w'), indent=2)
PY
	expect_eq "doodad: close() after writing doodad.json with a layer fewer" "close EINVAL" \
		"$(py_write "$M/doodad.json" "$W/one-layer.json")"
	log_has "a layer fewer" 'doodad.json: "layers" must keep its 3 layer(s)'
	expect_eq "doodad: close() after writing doodad.json with another chunk size" "close EINVAL" \
		"$(py_write "$M/doodad.json" "$W/size.json")"
	log_has "another chunk size" "\"size\" must stay $SIZE"
	unchanged "refused doodad.json edits"
	umount_sv "$M"
fi

# ---- a palette that grows past 62 colours ---------------------------------------------------

# Every grid's cells become two characters wide: each .txt (and .png) has
# a new size, known to stat before it is read, and the chunks themselves
# are stored as they were.
"$MKDOODLE" level "$fx/p62.level" --palette 62 --size 8 --count 3 --negative --seed 36 ||
	die "mkdoodle failed"
ROOT_NAME=level.json
if setup p62 "$fx/p62.level"; then
	"$PYTHON" - "$M/level.json" "$W/p63.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d['palette']['swatches'].append({'name': 'the 63rd', 'color': '#123456', 'pattern': ''})
json.dump(d, open(sys.argv[2], 'w'), indent=2)
PY
	expect_eq "p62: writing level.json with a 63rd swatch" ok "$(py_write "$M/level.json" "$W/p63.json")"
	(cd "$M" && find . -path ./.savefs -prune -o -type f -printf '%s %P\n' | sort -k 2) > "$W/sizes.stat"
	(cd "$M" && find . -path ./.savefs -prune -o -type f -print | sort | while read -r p; do
		printf '%s %s\n' "$(cat -- "$p" | wc -c)" "${p#./}"
	done) > "$W/sizes.read"
	expect_same_text "p62: stat sizes after the palette grew (---) and the bytes read (+++)" \
		"$W/sizes.stat" "$W/sizes.read"
	bad=$(cd "$M/chunks/0" && grep -L '^# pixels .*, 2 character(s) each' -- *.txt)
	expect_eq "p62: .txt files whose header does not say 2 characters a cell" "" "$bad"
	tree_listing "$M" > "$W/after.tree"
	tree_changes "p62: a 63rd swatch" \
		"level.json $(cd "$M" && ls chunks/0/*.txt chunks/0/*.png | tr '\n' ' ')" preview.png
	remount_sv "$M" || die "p62: cannot remount"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "p62: the tree after a remount" "$W/after.tree" "$W/after2.tree"
	inspect "p62: a 63rd swatch" "$W/after2.tree"
	INSPECTED=1 members_kept "p62: a 63rd swatch" level.json
	umount_sv "$M"
fi
finish
