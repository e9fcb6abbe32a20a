#!/bin/bash
# install.sh - `meson install` into a DESTDIR puts the savefs binary and
# its man page savefs(1) in place, and the man page documents every option
# and exit code `savefs --help` lists.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_python
[ -n "${BUILD_ROOT:-}" ] || die "BUILD_ROOT is not set (meson sets it)"
dest=$TMP/dest
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$dest" > "$TMP/install.log" 2>&1 ||
	die "meson install failed: $(cat "$TMP/install.log")"
prefix=$(meson introspect "$BUILD_ROOT" --buildoptions |
	"$PYTHON" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
mandir=$(meson introspect "$BUILD_ROOT" --buildoptions |
	"$PYTHON" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "mandir"))')
bin="$dest$prefix/bin/savefs"
man="$dest$prefix/$mandir/man1/savefs.1"
check "the binary is installed at $bin" test -x "$bin"
check "the man page is installed at $man" test -f "$man"
expect_eq "the installed binary runs" "savefs $("$SAVEFS" --version | cut -d' ' -f2)" "$("$bin" --version)"
check "the installed man page is the one in the tree" cmp -s "$SRC_ROOT/doc/savefs.1" "$man"
check "the man page has every option and exit code of --help" \
	"$PYTHON" "$SRC_ROOT/tests/tools/checkman.py" "$bin" "$man"
if command -v man > /dev/null; then
	check "man renders the page" sh -c "MANWIDTH=80 man -l '$man' > '$TMP/man.txt' 2> '$TMP/man.err'"
	check "the rendered page has no warnings" test ! -s "$TMP/man.err"
fi
finish
