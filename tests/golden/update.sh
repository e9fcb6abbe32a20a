#!/bin/bash
# update.sh - regenerates the golden listings in tests/golden/datafile/,
# tests/golden/doodle/, tests/golden/starbound/ and tests/golden/recording/.
#
#   tests/golden/update.sh            (after ninja -C build)
#
# For every real sample in ../shared/samples/teeworlds/*.map, every
# generated map (tests/e2e/lib.sh: make_generated) and every generated
# Sketchy Maze fixture (tests/golden/doodle/fixtures.sh: make_doodles), the
# tree is written out with `savefs extract` and listed as the end-to-end
# tests list a mount: one line per node, "d - - PATH" or "f SIZE SHA256
# PATH", sorted by path, without .savefs.  The listings hold sizes and
# checksums only, never the samples' bytes.  A tree whose files disagree
# with the independent decoder (tests/tools/dfdecode.py for items/ and
# data/, tests/tools/ddecode.py for the chunks' text grids) is not written.
#
# Review the diff before committing: a changed listing means savefs shows
# a container differently than before.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
# shellcheck source=tests/golden/doodle/fixtures.sh
. "$(dirname "$0")/doodle/fixtures.sh"
# shellcheck source=tests/golden/starbound/fixtures.sh
. "$(dirname "$0")/starbound/fixtures.sh"
# shellcheck source=tests/golden/recording/fixtures.sh
. "$(dirname "$0")/recording/fixtures.sh"
: "${MKSBDB:=$SRC_ROOT/build/tests/mksbdb}"
: "${MKRECORDING:=$SRC_ROOT/build/tests/mkrecording}"

[ -x "$SAVEFS" ] || die "SAVEFS=$SAVEFS is not an executable (build first)"
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
[ -x "$MKDOODLE" ] || die "MKDOODLE=$MKDOODLE is not an executable (build first)"
need_python
out="$GOLDEN/datafile"
mkdir -p -- "$out"
decoder=check_decoder

# golden NAME CONTAINER: writes $out/NAME.tree if the tree passes $decoder.
golden()
{
	local x="$TMP/x/$1"
	rm -rf -- "$x"
	mkdir -p -- "$TMP/x"
	if ! sv extract "$2" "$x"; then
		fail "$1: savefs extract failed"
		return
	fi
	"$decoder" "$2" "$x" || return
	tree_listing "$x" > "$TMP/new.tree" || {
		fail "$1: cannot list $x"
		return
	}
	if cmp -s "$TMP/new.tree" "$out/$1.tree"; then
		echo "unchanged $out/$1.tree"
	else
		cp -- "$TMP/new.tree" "$out/$1.tree"
		echo "wrote     $out/$1.tree"
	fi
}

if [ -d "$SAMPLES/teeworlds" ]; then
	for f in "$SAMPLES"/teeworlds/*.map; do
		[ -e "$f" ] || continue
		golden "$(basename "$f" .map)" "$f"
	done
else
	echo "note: $SAMPLES/teeworlds not found: sample listings left as they are"
fi

make_generated "$TMP/gen" || die "mkdatafile failed"
for g in $GEN_FIXTURES $MAP_FIXTURES; do
	golden "$g" "$TMP/gen/$g.map"
done

out="$GOLDEN/doodle"
decoder=check_ddecode
make_doodles "$TMP/doodle" || die "mkdoodle failed"
for g in $DOODLE_FIXTURES; do
	golden "$g" "$(doodle_file "$TMP/doodle" "$g")"
done
out="$GOLDEN/starbound"
decoder=check_sbdecode
check_sbdecode()
{
	check "$1: savefs and the independent reader agree" \
		"$PYTHON" "$SRC_ROOT/tests/tools/sbdecode.py" compare "$1" "$2"
}
make_sb_golden "$TMP/sb" || die "mksbdb failed"
for g in $SB_FIXTURES; do
	golden "$g" "$TMP/sb/$g.world"
done
if [ -f "$SAMPLES/starbound/go-starbound_test.world" ]; then
	golden go-starbound_test "$SAMPLES/starbound/go-starbound_test.world"
fi
out="$GOLDEN/recording"
decoder=check_rcdecode
check_rcdecode()
{
	check "$1: savefs and the independent reader agree" \
		env SAVEFS="$SAVEFS" "$PYTHON" "$SRC_ROOT/tests/tools/rcdecode.py" check "$1" "$2"
}
make_rc_golden "$TMP/rc" || die "mkrecording failed"
for g in $RC_FIXTURES; do
	golden "$g" "$TMP/rc/$g"
done
for f in "$SAMPLES"/recording/SYNTHETIC-*; do
	[ -e "$f" ] && golden "$(basename "$f")" "$f"
done
finish
