#!/bin/bash
# generated.sh - maps made at test time by mkdatafile (never committed):
# a version 4 map with a repeated UUID-index id and an empty data item, and
# its version 3, "ATAD" and short-size ("crude") conversions.  Each is
# mounted and compared with its golden listing and the independent decoder;
# a conversion must show the same tree as its source except header.json,
# and header.json must show what was converted.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"

g="$TMP/gen"
make_generated "$g" || die "mkdatafile failed"

# Deterministic for a given seed, and the seed matters.
make_generated "$TMP/again" || die "mkdatafile failed (second run)"
for f in $GEN_FIXTURES; do
	check "mkdatafile is deterministic: $f.map twice" cmp "$g/$f.map" "$TMP/again/$f.map"
done
# shellcheck disable=SC2086
"$MKDATAFILE" gen "$TMP/seed2.map" ${GEN_ARGS/--seed 1/--seed 2} || die "mkdatafile gen failed"
cmp -s "$g/gen-v4-dup.map" "$TMP/seed2.map" && fail "mkdatafile --seed 2 made the same file as --seed 1"

# header_field FILE KEY: the value of "KEY": in a pretty-printed JSON file.
header_field()
{
	sed -n "s/^  \"$2\": \\(.*\\),\$/\\1/p" "$1" | head -1
}

for f in $GEN_FIXTURES; do
	c="$g/$f.map"
	m="$TMP/mnt-$f"
	mount_sv "$c" "$m" || continue
	tree_listing "$m" > "$TMP/$f.tree" || fail "$f: cannot list the mount"
	check_golden "$f" "$TMP/$f.tree"
	check_decoder "$c" "$m"
	cp -- "$m/header.json" "$TMP/$f.header.json"
	cp -- "$m/.savefs/info" "$TMP/$f.info"
	cp -- "$m/.savefs/log" "$TMP/$f.log"
	check "$f: .savefs/info is JSON" "$PYTHON" -m json.tool "$TMP/$f.info" > /dev/null
	check "$f: header.json is JSON" "$PYTHON" -m json.tool "$TMP/$f.header.json" > /dev/null

	# The repeated UUID-index id: both items, the second under a stable name.
	dup="$m/items/65535-uuid-index"
	check "$f: items/65535-uuid-index/65534.bin exists" test -f "$dup/65534.bin"
	check "$f: items/65535-uuid-index/65534~2.bin exists" test -f "$dup/65534~2.bin"
	expect_same_file "$f: the two UUID-index items have the same bytes" \
		"$dup/65534.bin" "$dup/65534~2.bin"
	expect_eq "$f: items/65535-uuid-index/ lists" "65534.bin 65534~2.bin" \
		"$(ls "$dup" | tr '\n' ' ' | sed 's/ $//')"
	check "$f: the extended type is named by its UUID" \
		test -d "$m/items/65534-mapitemtype-automapper-config@ddnet.tw"
	grep -q '65534~2.bin' "$TMP/$f.log" ||
		fail "$f: .savefs/log does not mention the renamed duplicate"

	# The empty data item.
	expect_eq "$f: data/00001.bin stat size" 0 "$(stat -c %s "$m/data/00001.bin")"
	expect_eq "$f: data/00001.bin bytes" 0 "$(wc -c < "$m/data/00001.bin")"

	# A read that starts in the middle of a large data item.
	size=$(stat -c %s "$m/data/00004.bin")
	dd if="$m/data/00004.bin" bs=1 skip=$((size / 2 - 3)) count=7 status=none > "$TMP/mid.mount"
	tail -c +$((size / 2 - 2)) "$m/data/00004.bin" | head -c 7 > "$TMP/mid.tail"
	expect_same_file "$f: 7 bytes from the middle of data/00004.bin (dd skip vs tail)" \
		"$TMP/mid.tail" "$TMP/mid.mount"

	umount_sv "$m"
	check "$f: the container is unchanged after a browse" cmp -s "$c" "$TMP/again/$f.map"
done

# Conversions: the same tree as the source except header.json.
grep -v ' header\.json$' "$TMP/gen-v4-dup.tree" > "$TMP/src.tree"
for f in gen-v3 gen-atad gen-crude; do
	grep -v ' header\.json$' "$TMP/$f.tree" > "$TMP/conv.tree"
	expect_same_text "$f: the tree differs from its source's (gen-v4-dup) besides header.json" \
		"$TMP/src.tree" "$TMP/conv.tree"
	cmp -s "$TMP/gen-v4-dup.header.json" "$TMP/$f.header.json" &&
		fail "$f: header.json is the same as its source's"
done

# header.json shows the version, magic and quirks; the independent decoder
# reads the same from the file.
# NAME VERSION MAGIC QUIRK-or-"" CRUDE
while read -r f ver magic crude quirk; do
	h="$TMP/$f.header.json"
	expect_eq "$f: header.json version" "$ver" "$(header_field "$h" version)"
	expect_eq "$f: header.json magic" "\"$magic\"" "$(header_field "$h" magic)"
	expect_eq "$f: .savefs/info format_version" "$ver" "$(header_field "$TMP/$f.info" format_version)"
	if [ "$quirk" = - ]; then
		grep -q '"quirks": \[\]' "$h" || fail "$f: header.json lists quirks; expected none"
	else
		grep -q "\"$quirk" "$h" || fail "$f: header.json does not list the quirk $quirk"
	fi
	hj=$("$PYTHON" "$DFDECODE" --header "$g/$f.map") || fail "$f: dfdecode --header failed"
	expect_eq "$f: decoder's view of the header" \
		"\"crude\": $crude, \"magic\": \"$magic\", \"version\": $ver" \
		"$(sed -E 's/.*("crude": [a-z]+).*("magic": "[A-Z]+").*("version": [0-9]+).*/\1, \2, \3/' <<< "$hj")"
	for k in num_items num_data item_size data_size size swaplen; do
		want=$(sed -E "s/.*\"$k\": (-?[0-9]+).*/\\1/" <<< "$hj")
		expect_eq "$f: header.json $k vs the decoder" "$want" "$(header_field "$h" "$k")"
	done
done <<'LIST'
gen-v4-dup 4 DATA false -
gen-v3 3 DATA false -
gen-atad 4 ATAD false atad-magic
gen-crude 4 DATA true crude-size
LIST
finish
