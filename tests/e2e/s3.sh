#!/bin/bash
# s3.sh - containers in an S3 store: Ceph's RADOS Gateway on a one-node
# cluster, started here on loopback ports (rgw.sh).  Containers made by the
# project's writers are put in a bucket; each, mounted from its s3:// place,
# shows the tree its local file shows, byte for byte.  A level edited
# through the mount is uploaded whole with If-Match (in parts above the
# part size) and the store then holds what the edit made; a world and a
# NetHack log are read-only there, and the mount says why.  Another writer
# between the last check and the upload gets a 412: the commit is refused,
# its object kept.  Credentials from the environment, from
# ~/.aws/credentials by profile, and a wrong secret, a missing bucket or
# key and an unreachable store: a message and an exit code.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/e2e/rgw.sh
. "$(dirname "$0")/rgw.sh"

need_fuse
need_python
rgw_need
for t in "$MKDATAFILE" "$MKSBDB" "$MKRECORDING" "$MKDOODLE" "$MKNHGAME"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done

trap 'rgw_stop; _sv_cleanup' EXIT
rgw_start "$TMP/rgw"

# The user's credentials, as the usual variables give them.
export AWS_ACCESS_KEY_ID=$RGW_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET
export AWS_ENDPOINT_URL=$RGW_ENDPOINT
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION
export HOME="$TMP/home"
mkdir -p "$HOME"

expect_eq "a bucket made" 200 "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$RGW_ENDPOINT/saves")"

src="$TMP/src"
mkdir -p "$src"
"$MKDATAFILE" gen "$src/arena.map" --data 6 --payload 30K --items 4 --seed 5 > /dev/null ||
	die "mkdatafile failed"
"$MKDOODLE" level "$src/castle.level" --container zip --chunks rle --count 3000 --seed 1 \
	> /dev/null || die "mkdoodle failed"
"$MKSBDB" world "$src/world.world" > /dev/null || die "mksbdb world failed"
"$MKNHGAME" "$src/game.nhgame" --turns 2000 --seed 1 > /dev/null || die "mknhgame failed"
"$MKRECORDING" compacted "$src/run.hcrp" -n 40000 -k 20 -e 1 -z 3 --quiet ||
	die "mkrecording failed"
for f in arena.map castle.level world.world game.nhgame run.hcrp; do
	expect_eq "$f put in the bucket" 200 \
		"$(s3curl -o /dev/null -w '%{http_code}' -T "$src/$f" "$RGW_ENDPOINT/saves/$f")"
done

# source_field MNT KEY: /.savefs/info's source.KEY.
source_field()
{
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["source"][sys.argv[2]])' \
		"$1/.savefs/info" "$2"
}

# ---- each format: the same tree as its local file ----
for f in arena.map castle.level world.world game.nhgame run.hcrp; do
	mount_sv "s3://saves/$f" "$TMP/remote-$f" -o noindex || continue
	mount_sv "$src/$f" "$TMP/local-$f" -o ro,noindex || { umount_sv "$TMP/remote-$f"; continue; }
	M="$TMP/remote-$f"
	expect_eq "$f: the source" "S3 object" "$(source_field "$M" kind)"
	case $f in
	world.world)
		expect_eq "$f: read-only" True "$(json_field "$M/.savefs/info" read_only)"
		log_has "$f: why read-only" "s3://saves/$f: an S3 object is written only whole, and a btreedb5 container is changed in place: mounted read-only" ;;
	game.nhgame)
		expect_eq "$f: read-only" True "$(json_field "$M/.savefs/info" read_only)"
		log_has "$f: why read-only" "s3://saves/$f: an S3 object is written only whole, and a nethack container is grown by appending: mounted read-only" ;;
	*)
		expect_eq "$f: writable" False "$(json_field "$M/.savefs/info" read_only)" ;;
	esac
	same_trees "$f" "$TMP/local-$f" "$M" 5
	umount_sv "$TMP/local-$f"
	umount_sv "$TMP/remote-$f"
done

# ---- a segmented recording under a prefix ----
"$MKRECORDING" segmented "$src/seg" -n 20000 -k 20 -e 1 -z 3 --quiet || die "mkrecording failed"
for f in "$src/seg"/*; do
	s3curl -o /dev/null -T "$f" "$RGW_ENDPOINT/saves/runs/seg/${f##*/}" || die "cannot put $f"
done
M="$TMP/remote-seg"
mount_sv "s3://saves/runs/seg/" "$M" -o noindex || die "cannot mount the prefix"
mount_sv "$src/seg" "$TMP/local-seg" -o ro,noindex || die "cannot mount the local recording"
expect_eq "the prefix: the source" "S3 prefix" "$(source_field "$M" kind)"
expect_eq "the prefix: writable" False "$(json_field "$M/.savefs/info" read_only)"
same_trees "segmented recording" "$TMP/local-seg" "$M" 5
# Its size: the members the listing names (ListObjectsV2), each stat'ed.
expect_eq "the prefix: its members' size" "$(json_field "$TMP/local-seg/.savefs/info" container_size)" \
	"$(json_field "$M/.savefs/info" container_size)"
umount_sv "$TMP/local-seg"
# Its metadata edited: the preamble object replaced (If-Match), the
# segments untouched.
s3curl -o "$TMP/seg.before" "$RGW_ENDPOINT/saves/runs/seg/segment-000.dat"
check "sed -i on the prefix's metadata.snbt" \
	sed -i 's/"mkrecording"/"the long way round"/' "$M/metadata.snbt"
expect_eq "metadata.snbt after the edit" "$(printf '{\n    map: "the long way round"\n}')" \
	"$(cat "$M/metadata.snbt")"
umount_sv "$M"
s3curl -o "$TMP/pre.after" "$RGW_ENDPOINT/saves/runs/seg/preamble.dat"
grep -q "the long way round" "$TMP/pre.after" || fail "the preamble in the store: not the edited one"
s3curl -o "$TMP/seg.after" "$RGW_ENDPOINT/saves/runs/seg/segment-000.dat"
cmp -s "$TMP/seg.before" "$TMP/seg.after" || fail "a segment changed by the metadata's edit"
# ---- a recording being written under a prefix, followed ----
# Its members but `finished` put; then another writer's new preamble (its
# metadata changed) and `finished`: the mount follows (a listing every 2 s
# tells a member replaced or added) and shows both.
cp -r "$src/seg" "$TMP/live"
rm -f "$TMP/live/finished"
for f in "$TMP/live"/*; do
	s3curl -o /dev/null -T "$f" "$RGW_ENDPOINT/saves/runs/live/${f##*/}" || die "cannot put $f"
done
M="$TMP/remote-live"
mount_sv "s3://saves/runs/live/" "$M" -o noindex || die "cannot mount the live prefix"
expect_eq "live prefix: not finished" '  "finished": false,' "$(grep '"finished"' "$M/header.json")"
mount_sv "$TMP/live" "$TMP/live-edit" -o noindex || die "cannot mount the local copy"
sed -i 's/"mkrecording"/"written elsewhere"/' "$TMP/live-edit/metadata.snbt" ||
	fail "the local copy's metadata edit failed"
umount_sv "$TMP/live-edit"
: > "$TMP/live/finished"
for f in preamble.dat finished; do
	s3curl -o /dev/null -T "$TMP/live/$f" "$RGW_ENDPOINT/saves/runs/live/$f" || die "cannot put $f"
done
for _ in $(seq 600); do
	grep -q '"finished": true' "$M/header.json" 2> /dev/null && break
	sleep 0.1
done
expect_eq "live prefix: finished, followed" '  "finished": true,' "$(grep '"finished"' "$M/header.json")"
expect_eq "live prefix: the other writer's metadata" \
	"$(printf '{\n    map: "written elsewhere"\n}')" "$(cat "$M/metadata.snbt")"
umount_sv "$M"
expect_exit "a prefix with nothing under it" 3 \
	"savefs: s3://saves/nothing/: no object under this prefix" \
	"$SAVEFS" s3://saves/nothing/ "$TMP/mnt-none"
expect_exit "a prefix in a bucket that does not exist" 3 \
	"savefs: s3://nosuchbucket/runs/: 404 (NoSuchBucket: no such bucket)" \
	"$SAVEFS" s3://nosuchbucket/runs/ "$TMP/mnt-none"

# The command line reads the same place.
cmp -s <("$SAVEFS" cat s3://saves/castle.level chunks/0/0,0.txt) \
	<("$SAVEFS" cat "$src/castle.level" chunks/0/0,0.txt) ||
	fail "savefs cat of s3://saves/castle.level: other bytes than the local file's"

# ---- write-back: one PUT with If-Match ----
# edit_chunk MNT: the first pixel of chunks/0/0,0.txt's first row set to
# colour 1, with sed -i (a new file renamed over the old one).
edit_chunk()
{
	local t="$1/chunks/0/0,0.txt" l
	l=$(grep -c '^#' "$t")
	sed -i "$((l + 1))s/^./$2/" "$t"
}
M="$TMP/edit"
mount_sv "s3://saves/castle.level" "$M" -o noindex || die "cannot mount castle.level"
CHECKS=$((CHECKS + 1))
edit_chunk "$M" 1 || fail "the edit of castle.level failed: $(tail -n 2 "$M/.savefs/log")"
log_has "the commit" "committed s3://saves/castle.level"
cp -- "$M/chunks/0/0,0.txt" "$TMP/edited.txt"
umount_sv "$M"
s3curl -o "$TMP/castle.after" "$RGW_ENDPOINT/saves/castle.level" || fail "cannot get castle.level"
cmp -s "$TMP/edited.txt" <("$SAVEFS" cat "$TMP/castle.after" chunks/0/0,0.txt) ||
	fail "castle.level in the store: not the edited chunk"
"$PYTHON" -c 'import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)' \
	"$TMP/castle.after" || fail "castle.level in the store: not a sound zip"
cmp -s "$TMP/castle.after" "$src/castle.level" && fail "castle.level in the store: unchanged"
# The other chunks are as they were.
"$SAVEFS" extract "$TMP/castle.after" "$TMP/after.x" > /dev/null || fail "extract after"
"$SAVEFS" extract "$src/castle.level" "$TMP/before.x" > /dev/null || fail "extract before"
check_ddecode "$TMP/castle.after" "$TMP/after.x"
expect_eq "chunks that differ after the edit" "chunks/0/0,0.bin chunks/0/0,0.png chunks/0/0,0.txt" \
	"$(cd "$TMP" && diff -rq before.x after.x | sed 's|^Files before.x/\([^ ]*\) and .*|\1|' |
		grep '^chunks/' | sort | tr '\n' ' ' | sed 's/ $//')"

# ---- a folder of containers under a prefix ----
# The same folder on disk and under s3://saves/folder/: two maps (one a
# level deeper), a level, a text file that passes through, and the
# segmented recording as a prefix of its own.
fold="$TMP/fold"
mkdir -p "$fold/sub" "$fold/runs"
cp "$src/arena.map" "$fold/arena.map"
"$MKDOODLE" level "$fold/castle.level" --container zip --chunks rle --count 200 --seed 4 \
	> /dev/null || die "mkdoodle failed"
"$MKDATAFILE" gen "$fold/sub/other.map" --data 3 --payload 4K --items 2 --seed 9 > /dev/null ||
	die "mkdatafile failed"
printf 'a note beside the saves\n' > "$fold/notes.txt"
"$MKRECORDING" segmented "$fold/runs/seg" -n 2000 -k 20 -e 1 -z 3 --quiet ||
	die "mkrecording failed"
(cd "$fold" && find . -type f -printf '%P\n') | while read -r f; do
	s3curl -o /dev/null -T "$fold/$f" "$RGW_ENDPOINT/saves/folder/$f" || exit 1
done || die "cannot put the folder"
M="$TMP/remote-fold"
mount_sv "s3://saves/folder/" "$M" -o noindex || die "cannot mount the prefix as a folder"
mount_sv "$fold" "$TMP/local-fold" -o ro,noindex || die "cannot mount the local folder"
expect_eq "the folder's listing" "$(ls -F "$TMP/local-fold")" "$(ls -F "$M")"
expect_eq "sub/ listed" "other.map/" "$(ls -F "$M/sub")"
# Every file alike but each container's .savefs/info, which names its place.
tree_listing "$TMP/local-fold" | grep -v '/\.savefs/info$' > "$TMP/fold.want" ||
	fail "cannot list the local folder"
tree_listing "$M" | grep -v '/\.savefs/info$' > "$TMP/fold.got" || fail "cannot list the prefix"
[ "$(wc -l < "$TMP/fold.want")" -gt 100 ] || fail "the folder: too few entries listed"
expect_same_text "a folder on a prefix: every name, size and file's bytes" "$TMP/fold.want" \
	"$TMP/fold.got"
expect_eq "the folder's info: its place" "s3://saves/folder/" "$(json_field "$M/.savefs/info" folder)"
expect_eq "the folder's info: what passes through" '["notes.txt"]' \
	"$(json_field "$M/.savefs/info" unclaimed)"
expect_eq "a map's raw bytes under its name" "$(sha256sum < "$fold/arena.map")" \
	"$(sha256sum < "$M/arena.map/.savefs/container")"
expect_eq "the map's source" "S3 object" \
	"$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["source"]["kind"])' \
	"$M/arena.map/.savefs/info")"
# Its own files are the store's: read-only, and the mount says why.
printf 'x\n' > "$TMP/x"
expect_eq "a new file in the folder" "open EROFS" "$(py_write "$M/new.txt" "$TMP/x" create)"
expect_eq "notes.txt written" "open EROFS" "$(py_write "$M/notes.txt" "$TMP/x")"
mkdir "$M/newdir" 2> "$TMP/err" && fail "mkdir in the folder succeeded"
expect_eq "a directory made" "mkdir: cannot create directory '$M/newdir': Read-only file system" \
	"$(cat "$TMP/err")"
rm "$M/notes.txt" 2> "$TMP/err" && fail "rm in the folder succeeded"
expect_eq "notes.txt removed" "rm: cannot remove '$M/notes.txt': Read-only file system" \
	"$(cat "$TMP/err")"
expect_eq "notes.txt as it was" "a note beside the saves" "$(cat "$M/notes.txt")"
# A container in it is written as one alone: the level edited, uploaded.
CHECKS=$((CHECKS + 1))
edit_chunk "$M/castle.level" 3 ||
	fail "the edit of the folder's level failed: $(tail -n 2 "$M/castle.level/.savefs/log")"
cp -- "$M/castle.level/chunks/0/0,0.txt" "$TMP/folder-edited.txt"
umount_sv "$M"
umount_sv "$TMP/local-fold"
s3curl -o "$TMP/folder-level.after" "$RGW_ENDPOINT/saves/folder/castle.level"
cmp -s "$TMP/folder-edited.txt" <("$SAVEFS" cat "$TMP/folder-level.after" chunks/0/0,0.txt) ||
	fail "the folder's level in the store: not the edited chunk"
cmp -s "$TMP/folder-level.after" "$fold/castle.level" && fail "the folder's level: unchanged"
"$SAVEFS" extract "$TMP/folder-level.after" "$TMP/folder-level.x" > /dev/null ||
	fail "extract the folder's level"
check_ddecode "$TMP/folder-level.after" "$TMP/folder-level.x"

# ---- a folder of maps: what it costs in requests ----
# Counted by the bench's proxy (no delay added).  Three maps without
# images and one of 630 KB with one: the mount looks at the prefix (a key
# of its listing; no recording's preamble there; the folder's own look),
# the listing names the maps with their ETags and sizes (each map opens on
# that version, with no request).  A map's tree is read in pieces: its
# first 16 KB (header and items), then the names it shows that lie past
# them, in one round (22 KB into each map, and the image's name at 457 KB
# in m4: a piece of 4 KB each).  grep -r through every map's view then
# takes each map whole at its view's first read.
mkdir -p "$TMP/maps"
for i in 1 2 3; do
	"$MKDATAFILE" map "$TMP/maps/m$i.map" --size "$((100 * i))x$((50 * i))" --seed "$i" \
		> /dev/null || die "mkdatafile map failed"
done
"$MKDATAFILE" map "$TMP/maps/m4.map" --size 300x170 --images 1 --image-size 384 --seed 4 \
	> /dev/null || die "mkdatafile map failed"
[ "$(stat -c %s "$TMP/maps/m4.map")" -gt 262144 ] || die "m4.map within 256 KB (the fixture changed?)"
msize=0
for i in 1 2 3 4; do
	s3curl -o /dev/null -T "$TMP/maps/m$i.map" "$RGW_ENDPOINT/saves/maps/m$i.map" ||
		die "cannot put m$i.map"
	msize=$((msize + $(stat -c %s "$TMP/maps/m$i.map")))
done
pport=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" "$SRC_ROOT/bench/delayproxy.py" "$pport" "${RGW_ENDPOINT##*:}" 0 "$TMP/proxy.count" &
proxy_pid=$!
wait_for "the delay proxy listening" "$PYTHON" -c \
	'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$pport"
counted() { cat "$TMP/proxy.count" 2> /dev/null || echo 0; }
counted_bytes() { cat "$TMP/proxy.count.bytes" 2> /dev/null || echo 0; }
M="$TMP/maps-mnt"
mount_sv "s3://saves/maps/" "$M" -o "noindex,s3_endpoint=http://127.0.0.1:$pport" ||
	die "cannot mount the maps' prefix"
expect_eq "the maps' prefix: requests at the mount" 3 "$(counted)"
expect_eq "the maps listed" "m1.map/ m2.map/ m3.map/ m4.map/" "$(ls -F "$M" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the maps' prefix: requests after the listing (one: names and sizes judge its entries)" 4 \
	"$(counted)"
before_bytes=$(counted_bytes)
ls -R "$M" > /dev/null
expect_eq "ls -R of the maps: a map's head, and its names past it in one round (m4's two apart)" \
	13 "$(counted)"
ls_bytes=$(($(counted_bytes) - before_bytes))
[ "$ls_bytes" -lt $((msize * 15 / 100)) ] ||
	fail "ls -R of the maps: $ls_bytes bytes sent of the maps' $msize, not under 15%"
for i in 1 2 3 4; do
	"$SAVEFS" ls -R "$TMP/maps/m$i.map" | sort > "$TMP/m$i.ls.local" || fail "savefs ls -R m$i.map"
	(cd "$M/m$i.map" && find . -mindepth 1 -path ./.savefs -prune -o \( -type d -printf '%P/\n' \) \
		-o -printf '%P\n' | sort) > "$TMP/m$i.ls.mount"
	expect_same_text "m$i.map: ls -R from pieces, as the whole file's" "$TMP/m$i.ls.local" \
		"$TMP/m$i.ls.mount"
done
grep -r -c -a tele "$M"/*/map/ > "$TMP/maps.grep"
[ $? -le 1 ] || fail "grep -r over the maps' views failed"
[ "$(wc -l < "$TMP/maps.grep")" -gt 20 ] || fail "grep -r: too few files"
expect_eq "the maps' prefix: requests after grep -r (a map whole each, at its view's first read)" \
	17 "$(counted)"
cat "$M"/*/.savefs/container > /dev/null
expect_eq "the maps' raw bytes read: no request more" 17 "$(counted)"
for i in 1 2 3 4; do
	expect_same_file "m$i.map: its raw bytes" "$TMP/maps/m$i.map" "$M/m$i.map/.savefs/container"
done
umount_sv "$M"
# Kept between mounts: the first mount keeps each map's blocks and views on
# disk; a second finds every map in the listing with the ETag and size it
# had, and asks the store for nothing but the listing.
rm -rf -- "$XDG_CACHE_HOME/savefs"
mount_sv "s3://saves/maps/" "$M" -o "s3_endpoint=http://127.0.0.1:$pport" ||
	die "cannot mount the maps' prefix (kept)"
grep -r -c -a tele "$M"/*/map/ > "$TMP/maps.cold.grep"
umount_sv "$M"
expect_same_text "the maps' grep -r, kept: as without" "$TMP/maps.grep" "$TMP/maps.cold.grep"
before=$(counted)
mount_sv "s3://saves/maps/" "$M" -o "s3_endpoint=http://127.0.0.1:$pport" ||
	die "cannot mount the maps' prefix (warm)"
at_mount=$(($(counted) - before))
expect_eq "the maps listed (warm)" "m1.map/ m2.map/ m3.map/ m4.map/" "$(ls -F "$M" | tr '\n' ' ' | sed 's/ $//')"
grep -r -c -a tele "$M"/*/map/ > "$TMP/maps.warm.grep"
expect_same_text "the maps' grep -r, warm: as cold" "$TMP/maps.grep" "$TMP/maps.warm.grep"
expect_eq "warm: the listing only, no object asked for (ls -F, grep -r)" 1 \
	"$(($(counted) - before - at_mount))"
expect_eq "warm: no view built" 0 "$(kept_count "$M" views_built)"
umount_sv "$M"
# A map put again (a new ETag): nothing kept is served for it.
"$MKDATAFILE" map "$TMP/maps/m2b.map" --size 200x100 --seed 22 > /dev/null || die "mkdatafile failed"
s3curl -o /dev/null -T "$TMP/maps/m2b.map" "$RGW_ENDPOINT/saves/maps/m2.map" || die "cannot put m2.map again"
mount_sv "s3://saves/maps/" "$M" -o "s3_endpoint=http://127.0.0.1:$pport" ||
	die "cannot mount the maps' prefix (one map new)"
expect_same_file "m2.map put again: its raw bytes are the new ones" "$TMP/maps/m2b.map" \
	"$M/m2.map/.savefs/container"
"$SAVEFS" extract "$TMP/maps/m2b.map" "$TMP/m2b.x" > /dev/null || fail "extract m2b.map"
expect_same_file "m2.map put again: its view is the new map's" \
	"$TMP/m2b.x/map/groups/01-Game/04-Game/tiles.txt" "$M/m2.map/map/groups/01-Game/04-Game/tiles.txt"
umount_sv "$M"
s3curl -o /dev/null -T "$TMP/maps/m2.map" "$RGW_ENDPOINT/saves/maps/m2.map" || die "cannot put m2.map back"
# Forty maps and a text file: a listing with sizes costs its one listing,
# not a request per entry.
for i in $(seq 10 49); do
	s3curl -o /dev/null -T "$TMP/maps/m1.map" "$RGW_ENDPOINT/saves/forty/m$i.map" ||
		die "cannot put forty/m$i.map"
done
printf 'notes\n' > "$TMP/notes.txt"
s3curl -o /dev/null -T "$TMP/notes.txt" "$RGW_ENDPOINT/saves/forty/notes.txt" ||
	die "cannot put forty/notes.txt"
M="$TMP/forty-mnt"
before=$(counted)
mount_sv "s3://saves/forty/" "$M" -o "noindex,s3_endpoint=http://127.0.0.1:$pport" ||
	die "cannot mount forty maps"
at_mount=$(($(counted) - before))
ls -l "$M" > "$TMP/forty.ls"
expect_eq "forty maps listed with ls -l: one request (the listing)" 1 \
	"$(($(counted) - before - at_mount))"
expect_eq "each a directory, judged by its name and size" 40 "$(grep -c '^d.* m[0-9]*\.map$' "$TMP/forty.ls")"
umount_sv "$M"
kill "$proxy_pid"
wait "$proxy_pid" 2> /dev/null
# A map edited on the store: DDNet's own loader judges the uploaded bytes.
: "${DDNET_TOOLS:=/usr/lib/x86_64-linux-gnu/ddnet}"
if [ -x "$DDNET_TOOLS/map_diff" ] && [ -x "$DDNET_TOOLS/map_resave" ]; then
	M="$TMP/map-edit"
	mount_sv "s3://saves/maps/m1.map" "$M" -o noindex || die "cannot mount m1.map"
	check "sed -i on a game tile of m1.map" \
		sed -i '8s/^\([^ ]* [^ ]* \)[^ ]* [^ ]*/\1030 091/' "$M/map/groups/01-Game/04-Game/tiles.txt"
	umount_sv "$M"
	mkdir -p "$TMP/dd-home/.local/share/ddnet" "$TMP/ddmap"
	s3curl -o "$TMP/ddmap/new.map" "$RGW_ENDPOINT/saves/maps/m1.map" || fail "cannot get m1.map"
	cp -- "$TMP/maps/m1.map" "$TMP/ddmap/old.map"
	expect_eq "m1.map on the store: map_diff against the old map" \
		"[11:Game] 2x5: (index: 0, flags: 0) != (index: 3, flags: 0)
[11:Game] 3x5: (index: 0, flags: 0) != (index: 9, flags: 0)" \
		"$(cd "$TMP/ddmap" && HOME=$TMP/dd-home "$DDNET_TOOLS/map_diff" old.map new.map 2>&1 |
			grep -o 'map_compare: .*' | sed 's/^map_compare: //')"
	CHECKS=$((CHECKS + 1))
	if ! (cd "$TMP/ddmap" && HOME=$TMP/dd-home "$DDNET_TOOLS/map_resave" new.map resaved.map) \
		> "$TMP/resave.out" 2>&1 || [ ! -s "$TMP/dd-home/.local/share/ddnet/resaved.map" ]; then
		fail "map_resave cannot load m1.map from the store: $(tail -n 2 "$TMP/resave.out")"
	fi
else
	printf 'note: DDNet tools absent (%s): the map edited on the store is not loaded by them\n' \
		"$DDNET_TOOLS"
fi

# ---- write-back in parts ----
"$MKDOODLE" level "$src/big.level" --container zip --chunks rle --count 70000 --seed 3 \
	> /dev/null || die "mkdoodle failed"
expect_eq "big.level put" 200 \
	"$(s3curl -o /dev/null -w '%{http_code}' -T "$src/big.level" "$RGW_ENDPOINT/saves/big.level")"
M="$TMP/big"
mount_sv "s3://saves/big.level" "$M" -o noindex,s3_part_size=5M || die "cannot mount big.level"
CHECKS=$((CHECKS + 1))
edit_chunk "$M" 2 || fail "the edit of big.level failed: $(tail -n 2 "$M/.savefs/log")"
cp -- "$M/chunks/0/0,0.txt" "$TMP/big-edited.txt"
# A second edit: the object the first left is the one If-Match names.
CHECKS=$((CHECKS + 1))
edit_chunk "$M" 3 || fail "the second edit of big.level failed: $(tail -n 2 "$M/.savefs/log")"
umount_sv "$M"
size=$(stat -c %s "$src/big.level")
parts=$(( (size + 5242879) / 5242880 ))
[ "$parts" -ge 2 ] || die "big.level is $size bytes: not above one part"
expect_eq "big.level's ETag: a multipart upload's of $parts parts" "-$parts" \
	"$(s3curl -I "$RGW_ENDPOINT/saves/big.level" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: "[0-9a-f]*\(-[0-9]*\)"$/\1/p')"
s3curl -o "$TMP/big.after" "$RGW_ENDPOINT/saves/big.level" || fail "cannot get big.level"
expect_eq "big.level's edited row" 3 \
	"$("$SAVEFS" cat "$TMP/big.after" chunks/0/0,0.txt | sed -n "$(( $(grep -c '^#' "$TMP/big-edited.txt") + 1 ))p" | cut -c1)"

# ---- another writer ----
# Before the commit: its check (a look) finds another object, and the
# edit is refused.
M="$TMP/race"
mount_sv "s3://saves/castle.level" "$M" -o noindex || die "cannot mount castle.level"
l=$(grep -c '^#' "$M/chunks/0/0,0.txt")
sed "$((l + 1))s/^./4/" "$M/chunks/0/0,0.txt" > "$TMP/mine.txt"
"$MKDOODLE" level "$TMP/other.level" --container zip --chunks rle --count 3000 --seed 9 \
	> /dev/null || die "mkdoodle failed"
s3curl -o /dev/null -T "$TMP/other.level" "$RGW_ENDPOINT/saves/castle.level"
write_fails "an edit after another writer" "Device or resource busy" \
	cp -- "$TMP/mine.txt" "$M/chunks/0/0,0.txt"
log_has "another writer: the reason" "s3://saves/castle.level was replaced by another file since it was read"
umount_sv "$M"
s3curl -o "$TMP/store.now" "$RGW_ENDPOINT/saves/castle.level"
cmp -s "$TMP/store.now" "$TMP/other.level" || fail "another writer: its object was not kept"

# Between the check and the upload (the commit held there): the upload's
# If-Match gets a 412, and the other writer's object is kept.
M="$TMP/race2"
rm -f -- "$TMP/go" "$TMP/go.at"
SAVEFS_TEST_WAIT_AT=upload-checked SAVEFS_TEST_WAIT_FILE="$TMP/go" \
	mount_sv "s3://saves/castle.level" "$M" -o noindex || die "cannot mount castle.level"
cp -- "$TMP/mine.txt" "$M/chunks/0/0,0.txt" 2> "$TMP/cp.err" &
cp_pid=$!
wait_for "the commit at its upload" test -e "$TMP/go.at"
"$MKDOODLE" level "$TMP/third.level" --container zip --chunks rle --count 3000 --seed 10 \
	> /dev/null || die "mkdoodle failed"
s3curl -o /dev/null -T "$TMP/third.level" "$RGW_ENDPOINT/saves/castle.level"
touch -- "$TMP/go"
CHECKS=$((CHECKS + 1))
if wait "$cp_pid"; then
	fail "an upload over another writer's object succeeded"
fi
grep -q "Device or resource busy" "$TMP/cp.err" || fail "412: cp's error: $(cat "$TMP/cp.err")"
log_has "412: the reason" "s3://saves/castle.level was changed by another writer since it was read (412 to If-Match "
umount_sv "$M"
s3curl -o "$TMP/store.now" "$RGW_ENDPOINT/saves/castle.level"
cmp -s "$TMP/store.now" "$TMP/third.level" || fail "412: the other writer's object was not kept"

# ---- the store gone mid-use, and back ----
M="$TMP/gone"
mount_sv "s3://saves/run.hcrp" "$M" -o noindex,cache=1M || die "cannot mount run.hcrp"
ls "$M/chunks" > "$TMP/chunks" || fail "cannot list chunks/"
last=$(tail -n 1 "$TMP/chunks")
rgw_gateway_stop
read_fails_eio "the store stopped" "$M/chunks/$last"
log_has "store stopped: the reason" "s3://saves/run.hcrp: Failed to connect to 127.0.0.1 port ${RGW_ENDPOINT##*:}"
rgw_gateway_start
cmp -s <(cat "$M/chunks/$last") <("$SAVEFS" cat "$src/run.hcrp" "chunks/$last") ||
	fail "chunks/$last: the store back, a wrong read"
umount_sv "$M"

# ---- credentials from a profile, and errors ----
mkdir -p "$HOME/.aws"
printf '[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n\n[tester]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$RGW_KEY" "$RGW_SECRET" > "$HOME/.aws/credentials"
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	AWS_PROFILE=tester "$SAVEFS" cat s3://saves/arena.map .savefs/info > /dev/null 2> "$TMP/err"
	echo "$?" > "$TMP/rc.profile"
	"$SAVEFS" ls -o s3_profile=tester s3://saves/arena.map > /dev/null 2>> "$TMP/err"
	echo "$?" >> "$TMP/rc.profile"
	"$SAVEFS" ls s3://saves/arena.map > /dev/null 2> "$TMP/err.default"
	echo "$?" >> "$TMP/rc.profile"
	AWS_PROFILE=nosuch "$SAVEFS" ls s3://saves/arena.map > /dev/null 2> "$TMP/err.nosuch"
	echo "$?" >> "$TMP/rc.profile"
)
expect_eq "AWS_PROFILE=tester, -o s3_profile=tester, default, a profile not there: exit codes" \
	"0 0 3 3" "$(tr '\n' ' ' < "$TMP/rc.profile" | sed 's/ $//')"
expect_eq "the default profile's unknown key" \
	"savefs: s3://saves/arena.map: 403 (InvalidAccessKeyId: the store knows no such access key)" \
	"$(cat "$TMP/err.default")"
expect_eq "a profile not there" \
	"savefs: s3://saves/arena.map: no profile nosuch in ~/.aws/credentials or ~/.aws/config" \
	"$(cat "$TMP/err.nosuch")"
AWS_SECRET_ACCESS_KEY=wrong expect_exit "a wrong secret" 3 \
	"savefs: s3://saves/arena.map: 403 (SignatureDoesNotMatch: the request's signature does not match: a wrong secret key)" \
	"$SAVEFS" s3://saves/arena.map "$TMP/mnt-none"
expect_exit "a bucket that does not exist" 3 \
	"savefs: s3://nosuchbucket/arena.map: 404 (NoSuchBucket: no such bucket)" \
	"$SAVEFS" s3://nosuchbucket/arena.map "$TMP/mnt-none"
expect_exit "a key that does not exist" 3 \
	"savefs: s3://saves/nothing.map: 404 (NoSuchKey: no such key in the bucket)" \
	"$SAVEFS" s3://saves/nothing.map "$TMP/mnt-none"
# A prefix named without its slash, where no key has that name: the prefix.
expect_eq "s3://saves/forty (no slash) is the prefix" "m10.map m11.map" \
	"$(sv ls s3://saves/forty | head -2 | tr '\n' ' ' | sed 's/ $//')"
expect_exit "a prefix without its slash under which nothing is: the key's 404" 3 \
	"savefs: s3://saves/nothing: 404 (NoSuchKey: no such key in the bucket)" \
	"$SAVEFS" s3://saves/nothing "$TMP/mnt-none"
# No credentials at all: said so, and where they were looked for.
mkdir -p "$TMP/nohome"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
	HOME="$TMP/nohome" "$SAVEFS" s3://saves/arena.map "$TMP/mnt-none" 2> "$TMP/err.anon"
expect_eq "no credentials: exit 3" 3 "$?"
expect_eq "no credentials: the message" \
	"savefs: s3://saves/arena.map: 403 (AccessDenied: access denied): no credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile default of ~/.aws/credentials and ~/.aws/config): the request went unsigned" \
	"$(cat "$TMP/err.anon")"
expect_exit "not a bucket's name" 2 \
	"savefs: s3://no_such!/x: not s3://BUCKET/KEY (a bucket's name is 1 to 63 letters, digits, '-', '.' and '_')" \
	"$SAVEFS" 's3://no_such!/x' "$TMP/mnt-none"
expect_exit "a part size below S3's least" 2 \
	"savefs: -o s3_part_size=1M: a size from 5M to 5G (an S3 multipart upload's part) (see savefs --help)" \
	"$SAVEFS" -o s3_part_size=1M s3://saves/arena.map "$TMP/mnt-none"
rgw_gateway_stop
expect_exit "an unreachable store" 3 - "$SAVEFS" s3://saves/arena.map "$TMP/mnt-none"
grep -q "^savefs: s3://saves/arena.map: Failed to connect to 127.0.0.1 port ${RGW_ENDPOINT##*:} after [0-9]* ms: Couldn't connect to server\$" "$TMP/err" ||
	fail "an unreachable store: the message: $(cat "$TMP/err")"

finish
