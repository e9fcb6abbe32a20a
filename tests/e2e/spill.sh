#!/bin/bash
# spill.sh - indexes that leave the heap (-o spill=SIZE): a container of
# each format whose index grows with its entries (a NetHack log's line
# table, a universe's key table and celestial names, a recording's chunk
# table, a level's zip directory and chunk tables), made by the project's
# writers, mounted with its indexes on the heap and with every one of them
# in a file (-o spill=4K): the same tree, every file's bytes the same;
# /.savefs/info says what left the heap; a level's commit through the
# spilled mount writes what the heap's does.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
for t in "$MKNHGAME" "$MKSBDB" "$MKRECORDING" "$MKDOODLE"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done

g="$TMP/gen"
mkdir -p "$g"
"$MKNHGAME" "$g/game.nhgame" --turns 3000 --seed 1 > /dev/null || die "mknhgame failed"
"$MKSBDB" celestial "$g/universe.chunks" -n 2000 > /dev/null || die "mksbdb failed"
"$MKRECORDING" compacted "$g/run.hcrp" -n 40000 -k 20 -e 1 -z 3 --quiet || die "mkrecording failed"
"$MKDOODLE" level "$g/big.level" --container zip --chunks rle --count 2000 --seed 1 \
	> /dev/null || die "mkdoodle failed"

# spilled MNT KEY: /.savefs/info's spilled.KEY.
spilled()
{
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["spilled"][sys.argv[2]])' \
		"$1/.savefs/info" "$2"
}

for f in game.nhgame universe.chunks run.hcrp big.level; do
	heap="$TMP/heap-$f" file="$TMP/file-$f"
	# Read-only: one container is mounted twice at once.
	mount_sv "$g/$f" "$heap" -o ro,noindex || continue
	mount_sv "$g/$f" "$file" -o ro,noindex,spill=4K || { umount_sv "$heap"; continue; }
	expect_eq "$f: nothing leaves the heap at the default (1M)" 0 "$(spilled "$heap" arrays)"
	n=$(spilled "$file" arrays)
	[ "$n" -ge 1 ] || fail "$f: -o spill=4K: no index left the heap ($n arrays)"
	same_trees "$f" "$heap" "$file" 2000
	[ "$(spilled "$file" sheds)" -ge 1 ] || fail "$f: the spilled arrays were never shed"
	grep -q unreadable "$TMP/$f.got" && fail "$f: a file of the spilled mount is unreadable"
	umount_sv "$file"
	umount_sv "$heap"
done

# A commit: a chunk's grid copied onto another's (a .txt's header names its
# own chunk: left out), through each mount; the two levels then show the
# same tree.
cp -- "$g/big.level" "$TMP/a.level"
cp -- "$g/big.level" "$TMP/b.level"
for x in a b; do
	m="$TMP/commit-$x"
	if [ $x = a ]; then mount_sv "$TMP/$x.level" "$m" -o noindex || continue
	else mount_sv "$TMP/$x.level" "$m" -o noindex,spill=4K || continue; fi
	mapfile -t ch < <(cd "$m/chunks/0" && ls -- *.txt | head -3)
	grep -v '^#' "$m/chunks/0/${ch[0]}" > "$TMP/grid-$x"
	check "$x: ${ch[0]}'s grid written onto ${ch[2]}" \
		sh -c 'cat "$1" > "$2"' - "$TMP/grid-$x" "$m/chunks/0/${ch[2]}"
	expect_same_text "$x: ${ch[2]}'s grid reads back as ${ch[0]}'s" "$TMP/grid-$x" \
		<(grep -v '^#' "$m/chunks/0/${ch[2]}")
	umount_sv "$m"
	mount_sv "$TMP/$x.level" "$m" -o noindex || continue
	tree_listing "$m" > "$TMP/commit-$x.tree" || fail "$x: cannot list the level after the commit"
	expect_same_text "$x: after a remount, ${ch[2]}'s grid is ${ch[0]}'s" "$TMP/grid-$x" \
		<(grep -v '^#' "$m/chunks/0/${ch[2]}")
	umount_sv "$m"
done
cmp -s "$g/big.level" "$TMP/b.level" && fail "the commit through the spilled mount wrote nothing"
expect_same_text "the level committed through the spilled mount shows what the heap's does" \
	"$TMP/commit-a.tree" "$TMP/commit-b.tree"
finish
