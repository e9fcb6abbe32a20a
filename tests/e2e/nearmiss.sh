#!/bin/bash
# nearmiss.sh - files that look a little like a container and are not one
# (tests/data/nearmiss, written by its make.py): every format leaves them
# alone, so `savefs info` exits 4 (unknown format) with the exact message,
# and so does a mount; also an empty directory and a directory of
# unrelated files.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

NEAR=$SRC_ROOT/tests/data/nearmiss
n=0
for f in "$NEAR"/*; do
	case $f in *.msg | */make.py) continue ;; esac
	n=$((n + 1))
	want=$(sed "s|FILE|$f|" "$f.msg")
	expect_exit "savefs info $(basename "$f")" 4 "$want" "$SAVEFS" info "$f"
done
expect_eq "the corpus has its 13 files" 13 "$n"

mkdir -p "$TMP/empty" "$TMP/other/sub"
printf 'a log\n' > "$TMP/other/server.log"
printf '{"order": []}\n' > "$TMP/other/metadata"
# A directory no format claims is a save folder: nothing in these is.
expect_eq "savefs info of an empty directory: a folder of nothing" \
	"0 [] {}" "$(sv info "$TMP/empty" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(j["containers"], json.dumps(j["unclaimed"]), json.dumps(j["per_format"]))')"
expect_eq "savefs info of a directory of other files: none claimed" \
	'0 ["metadata", "server.log"]' "$(sv info "$TMP/other" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(j["containers"], json.dumps(j["unclaimed"]))')"
# Every near miss, in a folder: none is claimed, each passes through.
mkdir -p "$TMP/folder"
for f in "$NEAR"/*; do
	case $f in *.msg | */make.py) continue ;; esac
	cp "$f" "$TMP/folder/"
done
expect_eq "a folder of the near misses: nothing claimed" \
	"$(cd "$TMP/folder" && ls | sed 's|^|-|')" "$(sv ls -l "$TMP/folder" | awk '{ print substr($1, 1, 1) $3 }')"
expect_same_text "a near miss passes through byte for byte" "$NEAR/plain-object.json" \
	<(sv cat "$TMP/folder" plain-object.json)
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	mkdir -p "$TMP/mnt"
	expect_exit "a mount of a plain JSON file" 4 - "$SAVEFS" -f "$NEAR/plain-object.json" "$TMP/mnt"
	check "nothing is mounted" sh -c "! grep -q ' $TMP/mnt ' /proc/mounts"
fi
finish
