#!/bin/bash
# writeback.sh - edits through the mount with ordinary tools, on a copy of
# a generated map and of one real sample.
#
# Every edit is made twice: on the mounted file and on a plain copy of its
# bytes, with the same command.  Then:
#   - the mounted file reads back as the plain copy, byte for byte, and its
#     stat size agrees;
#   - the rest of the tree is unchanged: the listing (type, size, sha256 and
#     path of every node) before and after differs only in the edited paths
#     and header.json;
#   - after an unmount and a remount the same holds, and the container on
#     disk, read by the independent decoder, matches the mount.
# Refused edits (an item that is not int32s, removing a data item, a
# read-only mount, a container changed on disk) must leave the container
# as it was.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# This suite edits the raw view, garbage included: map/ (another view of
# the same items, tested in map.sh) is left out of its listings and checks.
TREE_PRUNE=./map
MAP_CHECK=no

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"

# ---- one edit ------------------------------------------------------------

# snap: the listing every later step compares with.
snap()
{
	tree_listing "$M" > "$W/before.tree" || fail "$LABEL: cannot list the mount"
}

# edit DESC REL SNIPPET: runs SNIPPET (shell; the file is "$F") on a plain
# copy of REL's current bytes, then on REL in the mount, then verifies.
edit()
{
	local desc="$LABEL: $1" rel=$2 snippet=$3
	local x="$W/expect/${rel##*/}"
	rm -rf -- "$W/expect"
	mkdir -p -- "$W/expect"
	if [ -e "$M/$rel" ]; then
		cp -- "$M/$rel" "$x" || fail "$desc: cannot copy $rel out of the mount"
	fi
	(F=$x; eval "$snippet") > "$W/expect.err" 2>&1 ||
		fail "$desc: the command fails on a plain file too: $(cat "$W/expect.err")"
	CHECKS=$((CHECKS + 1))
	(F=$M/$rel; eval "$snippet") > "$W/op.err" 2>&1
	local rc=$?
	if [ $rc -ne 0 ]; then
		fail "$desc: '$snippet' on the mount exited with $rc: $(cat "$W/op.err")"
	fi
	verify "$1" "$rel" "$rel=$x"
}

# expect_contents DESC REL=FILE|REL=- ...
expect_contents()
{
	local desc=$1 spec rel want
	shift
	for spec in "$@"; do
		rel=${spec%%=*}
		want=${spec#*=}
		if [ "$want" = - ]; then
			CHECKS=$((CHECKS + 1))
			if [ -e "$M/$rel" ]; then
				fail "$desc: $rel still exists"
			fi
			ls "$(dirname "$M/$rel")" | grep -qx "${rel##*/}" &&
				fail "$desc: $rel is still listed by ls"
		else
			expect_same_file "$desc: $rel reads back" "$want" "$M/$rel"
			expect_eq "$desc: stat size of $rel" "$(stat -c %s -- "$want")" \
				"$(stat -c %s -- "$M/$rel" 2>&1)"
		fi
	done
}

# verify DESC "CHANGED PATHS" [REL=FILE|REL=-]...: the contents given, in the
# mount now and after a remount; nothing but CHANGED PATHS (and header.json)
# differs from the last snapshot; the decoder agrees with the container.
verify()
{
	local desc="$LABEL: $1" changed=$2
	shift 2
	expect_contents "$desc" "$@"
	tree_listing "$M" > "$W/after.tree" || fail "$desc: cannot list the mount"
	listing_paths "$W/before.tree" "$W/after.tree" | grep -vx 'header\.json' > "$W/changed.got"
	printf '%s\n' $changed | grep . | sort -u > "$W/changed.want"
	expect_same_text "$desc: the paths that changed (only these and header.json may)" \
		"$W/changed.want" "$W/changed.got"
	if [ -s "$W/changed.got" ] && ! cmp -s "$W/changed.want" "$W/changed.got"; then
		diff "$W/before.tree" "$W/after.tree" | head -n 20 | sed 's/^/    /'
	fi
	remount_sv "$M" || die "$desc: cannot remount"
	expect_contents "$desc (after a remount)" "$@"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "$desc: the tree after a remount differs from the tree before it" \
		"$W/after.tree" "$W/after2.tree"
	check_decoder "$C" "$M" "$W/after2.tree"
	cp -- "$W/after2.tree" "$W/before.tree"
}


# The edits that add and remove entries, and sed -i: the end of the edit
# sequence of suite (variables as set there).
edits_tail()
{
	# Removing an item; adding a data item and an item.
	check "$LABEL: rm $ic succeeds" rm -- "$M/$ic"
	verify "rm of an item" "$ic" "$ic=-"
	n=$(printf 'data/%05d.bin' "$ndata")
	edit "> creates the next data item" "$n" 'printf "a new data item\n" > "$F"'
	check "$LABEL: $n is listed last in data/" \
		test "$(ls "$M/data" | tail -1)" = "${n#data/}"
	edit "> creates an item" "items/$layer/00099.bin" \
		'printf "\007\000\000\000\010\000\000\000" > "$F"'

	# An editor-style rename: sed -i writes a temporary file beside the
	# file and renames it over it.
	edit "> text into a data file" data/00003.bin 'printf "hello world\n" > "$F"'
	edit "sed -i on a data file" data/00003.bin 'sed -i s/world/there/ "$F"'
	ls -a "$M/data" | grep -v '^\.\{1,2\}$' | grep -v '^[0-9]\{5\}\.bin$' > "$W/strays"
	[ -s "$W/strays" ] && fail "$LABEL: data/ holds stray files after sed -i: $(cat "$W/strays")"
}

# ---- the whole suite on one container -------------------------------------

suite()
{
	LABEL=$1
	W="$TMP/$LABEL"
	mkdir -p -- "$W"
	C="$W/c.map"
	M="$W/mnt"
	cp -- "$2" "$C" && chmod u+w "$C" || die "$LABEL: cannot copy $2"
	mount_sv "$C" "$M" || return
	snap
	check_decoder "$C" "$M"

	local layer ia ib ic big ndata n
	layer=$(cd "$M/items" && ls -d 5-* | head -1)
	[ -n "$layer" ] || { fail "$LABEL: no items/5-*/ directory"; return; }
	mapfile -t its < <(ls "$M/items/$layer")
	[ "${#its[@]}" -ge 3 ] || { fail "$LABEL: fewer than 3 layer items"; return; }
	ia="items/$layer/${its[0]}"
	ib="items/$layer/${its[1]}"
	ic="items/$layer/${its[2]}"
	ndata=$(ls "$M/data" | wc -l)
	[ "$ndata" -ge 8 ] || { fail "$LABEL: fewer than 8 data items"; return; }
	# The largest data item not otherwise used below.
	big=data/$(cd "$M/data" && find . -name '*.bin' ! -name '0000[0-3].bin' \
		! -name '0000[56].bin' -printf '%s %f\n' | sort -n | tail -1 | cut -d ' ' -f 2)

	head -c 300000 /dev/urandom > "$W/random"
	edit "cp onto a data file" data/00000.bin 'cp -- "$W/random" "$F"'
	edit "> onto a data file" data/00002.bin 'printf "redirected\n" > "$F"'
	edit ">> onto a data file" data/00001.bin 'printf "appended" >> "$F"'
	edit "> onto an item (12 bytes)" "$ib" \
		'printf "\001\000\000\000\002\000\000\000\377\377\377\377" > "$F"'
	n=$(stat -c %s "$M/$ia")
	edit "dd conv=notrunc: 4 bytes in the middle of an item" "$ia" \
		"printf WXYZ | dd of=\"\$F\" bs=1 seek=$((n / 8 * 4)) conv=notrunc status=none"
	n=$(stat -c %s "$M/$big")
	edit "dd conv=notrunc: 4 bytes in the middle of a data file" "$big" \
		"printf WXYZ | dd of=\"\$F\" bs=1 seek=$((n / 2 + 1)) conv=notrunc status=none"
	n=$(stat -c %s "$M/data/00005.bin")
	edit "truncate -s: shrink a data file" data/00005.bin "truncate -s $((n / 2)) \"\$F\""
	edit "truncate -s: grow a data file" data/00006.bin 'truncate -s +3000 "$F"'
	edit "truncate -s 0 a data file" data/00003.bin 'truncate -s 0 "$F"'

	if [ "${3:-}" = edits ]; then
		edits_tail
		umount_sv "$M"
		return
	fi

	# Refused: an item that is not a list of int32s.
	cp -- "$C" "$W/container.before"
	cp -- "$M/$ia" "$W/ia.before"
	printf abc > "$W/abc"
	expect_eq "$LABEL: close() after writing 3 bytes to $ia" "close EINVAL" \
		"$(py_write "$M/$ia" "$W/abc")"
	expect_same_file "$LABEL: $ia after a refused write" "$W/ia.before" "$M/$ia"
	grep -qF "refused $ia: datafile: an item is a list of int32: its size must be a multiple of 4 bytes, not 3" \
		"$M/.savefs/log" || fail "$LABEL: .savefs/log has no refusal line for $ia"
	printf abc | dd of="$M/$ib" status=none 2> "$W/dd.err"
	expect_eq "$LABEL: dd of 3 bytes onto an item: exit status" 1 "$?"
	grep -q 'Invalid argument' "$W/dd.err" ||
		fail "$LABEL: dd's error does not say 'Invalid argument': $(cat "$W/dd.err")"
	# bash ignores the error close() returns, but the item is kept all the same.
	printf abc > "$M/$ia"
	expect_same_file "$LABEL: $ia after printf abc > it" "$W/ia.before" "$M/$ia"
	unchanged "refused item writes"
	expect_same_file "$LABEL: $ia after a refused write (after a remount)" "$W/ia.before" "$M/$ia"

	# Refused: a data item cannot be removed.
	rm -- "$M/data/00003.bin" 2> "$W/rm.err"
	expect_eq "$LABEL: rm data/00003.bin: exit status" 1 "$?"
	grep -q 'Operation not permitted' "$W/rm.err" ||
		fail "$LABEL: rm data/00003.bin does not fail with EPERM: $(cat "$W/rm.err")"
	unchanged "rm of a data item"

	# header.json is a view; entries cannot be renamed; a file that is no
	# entry lives in memory only.
	printf x > "$W/x"
	expect_eq "$LABEL: header.json written with other bytes: refused at close" "close EPERM" \
		"$(py_write "$M/header.json" "$W/x")"
	mv -- "$M/data/00002.bin" "$M/data/renamed.bin" 2> "$W/mv.err" &&
		fail "$LABEL: mv of a data item succeeded"
	grep -q 'Operation not permitted' "$W/mv.err" ||
		fail "$LABEL: mv of a data item does not fail with EPERM: $(cat "$W/mv.err")"
	printf 'scratch\n' > "$M/scratch.txt"
	expect_eq "$LABEL: a scratch file in the mount reads back" scratch "$(cat "$M/scratch.txt")"
	check "$LABEL: a scratch file leaves the container as it was" \
		cmp -s "$W/container.before" "$C"
	remount_sv "$M" || die "$LABEL: cannot remount"
	check "$LABEL: a scratch file is gone after a remount" test ! -e "$M/scratch.txt"
	unchanged "header.json, mv and a scratch file"

	edits_tail
	umount_sv "$M"

	# A read-only mount.
	cp -- "$C" "$W/container.before"
	mount_sv "$C" "$M" -o ro || return
	snap
	cp -- "$W/random" "$M/data/00000.bin" 2> "$W/ro.err"
	expect_eq "$LABEL: cp onto a data file in a read-only mount: exit status" 1 "$?"
	grep -q 'Read-only file system' "$W/ro.err" ||
		fail "$LABEL: cp in a read-only mount: no 'Read-only file system': $(cat "$W/ro.err")"
	rm -f -- "$W/ro.err"
	{ printf '\001\000\000\000' > "$M/$ia"; } 2> "$W/ro.err" &&
		fail "$LABEL: > onto an item in a read-only mount succeeded"
	grep -q 'Read-only file system' "$W/ro.err" ||
		fail "$LABEL: > in a read-only mount: no 'Read-only file system': $(cat "$W/ro.err")"
	rm -f -- "$M/$ia" 2> /dev/null && fail "$LABEL: rm of an item in a read-only mount succeeded"
	unchanged "writes to a read-only mount"
	umount_sv "$M"

	# A touch of the container changes its times, not its bytes: the
	# next commit goes ahead.
	mount_sv "$C" "$M" || return
	touch -d "@$(($(date +%s) + 5))" "$C"
	expect_eq "$LABEL: close() after a write, the container touched meanwhile" \
		"ok" "$(py_write "$M/data/00000.bin" "$W/abc")"
	expect_same_file "$LABEL: the edit after a touch reads back" "$W/abc" "$M/data/00000.bin"
	check "$LABEL: the log says the container was only touched" \
		grep -q "$C was touched (its times changed, not its bytes): edits go on" "$M/.savefs/log"
	umount_sv "$M"
	cp -- "$C" "$W/container.orig"

	# The container changed in place by another program, which put its
	# mtime back: the ctime tells.  The commit fails with EBUSY, the file
	# on disk stays as that program left it, and the edit is dropped.
	mount_sv "$C" "$M" || return
	local mtime
	mtime=$(stat -c %y -- "$C")
	printf 'Z' | dd of="$C" bs=1 seek=$(($(stat -c %s -- "$C") - 1)) conv=notrunc status=none
	touch -d "$mtime" -- "$C"
	cp -- "$C" "$W/container.before"
	cp -- "$M/data/00001.bin" "$W/stored1"
	expect_eq "$LABEL: close() after a write, the container changed meanwhile" \
		"close EBUSY" "$(py_write "$M/data/00001.bin" "$W/abc")"
	check "$LABEL: the changed container is left as it is" cmp -s "$W/container.before" "$C"
	check "$LABEL: .savefs/log says the container was changed" grep -q \
		"not written data/00001.bin: $C was changed by another program since it was read: not overwritten" \
		"$M/.savefs/log"
	expect_same_file "$LABEL: the refused file reads as stored" "$W/stored1" "$M/data/00001.bin"
	umount_sv "$M"
	check "$LABEL: the changed container is left as it is after the unmount" \
		cmp -s "$W/container.before" "$C"
	cp -- "$W/container.orig" "$C"

	mount_sv "$C" "$M" || return
	"$MKDATAFILE" gen "$W/other.map" --data 3 --payload 1K --seed 9 || die "mkdatafile failed"
	cat -- "$W/other.map" > "$C"
	expect_eq "$LABEL: close() after a write, the container rewritten meanwhile" \
		"close EBUSY" "$(py_write "$M/data/00002.bin" "$W/abc")"
	check "$LABEL: the rewritten container is left as the other program wrote it" cmp -s "$W/other.map" "$C"
	umount_sv "$M"
	check "$LABEL: the rewritten container is left as the other program wrote it after the unmount" \
		cmp -s "$W/other.map" "$C"
}

# Names of repeated ids stay as they were across commits: the second
# UUID-index item with id 65534 is 65534~2.bin before and after an edit
# elsewhere, in the same mount and after a remount.
dup_names()
{
	LABEL=duplicates
	W="$TMP/$LABEL"
	mkdir -p -- "$W"
	C="$W/c.map"
	M="$W/mnt"
	cp -- "$TMP/gen/gen-v4-dup.map" "$C" || die "cannot copy gen-v4-dup.map"
	mount_sv "$C" "$M" || return
	snap
	local u="$M/items/65535-uuid-index"
	expect_eq "$LABEL: items/65535-uuid-index/ before an edit" "65534.bin 65534~2.bin" \
		"$(ls "$u" | tr '\n' ' ' | sed 's/ $//')"
	cp -- "$u/65534.bin" "$W/uuid1"
	edit "> onto a data file" data/00002.bin 'printf "redirected\n" > "$F"'
	expect_eq "$LABEL: items/65535-uuid-index/ after an edit and a remount" \
		"65534.bin 65534~2.bin" "$(ls "$u" | tr '\n' ' ' | sed 's/ $//')"
	printf 'again' > "$M/data/00002.bin"
	expect_eq "$LABEL: items/65535-uuid-index/ right after an edit (same mount)" \
		"65534.bin 65534~2.bin" "$(ls "$u" | tr '\n' ' ' | sed 's/ $//')"
	expect_same_file "$LABEL: 65534~2.bin after an edit" "$W/uuid1" "$u/65534~2.bin"
	umount_sv "$M"
}

make_generated "$TMP/gen" || die "mkdatafile failed"
# The edits run on maps without repeated ids: dup_names checks those.
# shellcheck disable=SC2086
"$MKDATAFILE" gen "$TMP/gen/plain-v4.map" ${GEN_ARGS/--dup-uuid/} || die "mkdatafile failed"
"$MKDATAFILE" convert "$TMP/gen/plain-v4.map" "$TMP/gen/plain-v3.map" --version 3 ||
	die "mkdatafile failed"
suite generated "$TMP/gen/plain-v4.map"
suite generated-v3 "$TMP/gen/plain-v3.map" edits
dup_names

real="$SAMPLES/teeworlds/${SV_WB_SAMPLE:-tw-2008-dm1-crude-size-header}.map"
if [ -f "$real" ]; then
	suite sample "$real"
else
	echo "note: $real not found (../shared/samples): the real-sample half is skipped"
fi
finish
