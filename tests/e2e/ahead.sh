#!/bin/bash
# ahead.sh - a walk over a save folder's containers met ahead: a reader
# going from one container to the next of a directory (a thumbnail pass:
# NAME/preview.png of each in turn) has the pool's workers open the next
# ones and build that file in each (counted by /.savefs/info's "ahead").
# The bytes are the ones a mount without read-ahead gives; under
# max_open=2 no more containers are open than that; a container replaced
# during the walk is read as it is now; an unmount during the walk ends
# the daemon cleanly.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKSBDB" ] || die "MKSBDB=$MKSBDB is not an executable (build first)"

M=$TMP/m
S=$TMP/saves
mkdir -p "$S"
for i in 0 1 2 3 4 5 6 7; do
	"$MKSBDB" world "$S/w$i.world" -W 3 -H 2 -s 8 -e 8 -S "$i" > /dev/null || die "mksbdb failed"
done
"$MKSBDB" world "$TMP/other.world" -W 3 -H 2 -s 8 -e 8 -S 40 > /dev/null || die "mksbdb failed"

# ahead_count MNT KEY: a count of /.savefs/info's "ahead".
ahead_count()
{
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["ahead"][sys.argv[2]])' \
		"$1/.savefs/info" "$2"
}

# built_ahead MNT: true once a file was built ahead.
built_ahead()
{
	[ "$(ahead_count "$1" built)" -ge 1 ]
}

# previews MNT OUT: every world's preview, in turn, into OUT (one file
# each, numbered).
previews()
{
	local i
	mkdir -p "$2"
	for i in 0 1 2 3 4 5 6 7; do
		cat -- "$1/w$i.world/preview.png" > "$2/$i.png" || fail "cannot read w$i.world/preview.png"
	done
}

# What a mount without read-ahead shows.
mount_sv "$S" "$M" -o readahead=0,noindex || die "cannot mount the folder"
previews "$M" "$TMP/plain"
expect_eq "readahead=0: no walk met ahead" 0 "$(ahead_count "$M" built)"
umount_sv "$M"
for i in 0 1 2 3 4 5 6 7; do
	[ -s "$TMP/plain/$i.png" ] || fail "w$i.world/preview.png is empty"
done

# ---- a walk ----
mount_sv "$S" "$M" -o noindex || die "cannot mount the folder"
cat -- "$M/w0.world/preview.png" "$M/w1.world/preview.png" > /dev/null
wait_for "after two containers in turn, the next one's preview built ahead" built_ahead "$M"
previews "$M" "$TMP/walk"
for i in 0 1 2 3 4 5 6 7; do
	expect_same_file "walk: w$i.world/preview.png" "$TMP/plain/$i.png" "$TMP/walk/$i.png"
done
[ "$(ahead_count "$M" workers)" -ge 1 ] || fail "no worker was started"
umount_sv "$M"

# ---- under max_open=2 ----
mount_sv "$S" "$M" -o noindex,max_open=2 || die "cannot mount the folder with max_open=2"
mkdir -p "$TMP/two"
ls "$M" > /dev/null
for i in 0 1 2 3 4 5 6 7; do
	cat -- "$M/w$i.world/preview.png" > "$TMP/two/$i.png" || fail "max_open=2: cannot read w$i"
done
expect_eq "max_open=2: the most containers open at once during the walk" 2 \
	"$(json_field "$M/.savefs/info" open_most)"
for i in 0 1 2 3 4 5 6 7; do
	expect_same_file "max_open=2: w$i.world/preview.png" "$TMP/plain/$i.png" "$TMP/two/$i.png"
done
umount_sv "$M"

# ---- a container replaced during the walk ----
mount_sv "$TMP/other.world" "$M" -o noindex || die "cannot mount other.world"
cat -- "$M/preview.png" > "$TMP/other.png"
umount_sv "$M"
cmp -s "$TMP/other.png" "$TMP/plain/4.png" && die "other.world's preview is w4's"
mount_sv "$S" "$M" -o noindex || die "cannot mount the folder"
cat -- "$M/w0.world/preview.png" "$M/w1.world/preview.png" "$M/w2.world/preview.png" > /dev/null
cp -- "$TMP/other.world" "$S/.w4.new" && mv -f -- "$S/.w4.new" "$S/w4.world"
wait_for "the replaced world is shown as it is now" \
	cmp -s "$M/w4.world/preview.png" "$TMP/other.png"
for i in 3 5 6 7; do
	cat -- "$M/w$i.world/preview.png" > "$TMP/r$i.png"
	expect_same_file "replaced: w$i.world/preview.png" "$TMP/plain/$i.png" "$TMP/r$i.png"
done
umount_sv "$M"
cp -- "$TMP/other.world" "$TMP/w4.kept"

# ---- an unmount during the walk ----
for round in 1 2 3; do
	mount_sv "$S" "$M" -o noindex || die "cannot mount the folder (round $round)"
	cat -- "$M/w0.world/preview.png" "$M/w1.world/preview.png" "$M/w2.world/preview.png" > /dev/null
	# Gone at once, its workers' jobs with it: the daemon ends, status 0.
	umount_sv "$M"
done

finish
