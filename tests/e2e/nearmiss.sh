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
for d in empty other; do
	expect_exit "savefs info of a directory ($d)" 4 \
		"savefs: $TMP/$d: is a directory, and not one savefs knows (see --formats)" \
		"$SAVEFS" info "$TMP/$d"
done
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	mkdir -p "$TMP/mnt"
	expect_exit "a mount of a plain JSON file" 4 - "$SAVEFS" -f "$NEAR/plain-object.json" "$TMP/mnt"
	check "nothing is mounted" sh -c "! grep -q ' $TMP/mnt ' /proc/mounts"
fi
finish
