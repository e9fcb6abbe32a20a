#!/bin/bash
# folder.sh - save folders on the command line: a generated Starbound
# storage/ (two worlds, a .bak copy of one, a player, a plain JSON
# metadata file), a maps folder and a recordings folder (a compacted file
# and a live directory).  `savefs ls/cat/extract/info FOLDER` show the
# folder as it is, each container claimed by its content as a directory
# holding its tree (the same bytes as the container opened alone), its raw
# bytes at NAME/.savefs/container, and everything else passing through;
# `grep -r` over an extract finds which world holds a named chest.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

for t in "$MKSBDB" "$MKDATAFILE" "$MKRECORDING"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done
need_python

F=$TMP/saves
mkdir -p "$F/storage/universe" "$F/storage/player" "$F/maps/sub" "$F/recs" "$F/empty"
"$MKSBDB" world "$F/storage/universe/a.world" -s 2 -e 2 -S 5 > /dev/null || die mksbdb
"$MKSBDB" world "$F/storage/universe/b.world" -s 2 -e 2 -S 7 > /dev/null || die mksbdb
# One record only b.world holds (committed as the game would).
"$MKSBDB" put "$F/storage/universe/b.world" 0900000000 'the chest named Mjolnir' || die mksbdb
cp "$F/storage/universe/a.world" "$F/storage/universe/a.world.bak"
"$MKSBDB" sbvj01 "$F/storage/player/p1.player" > /dev/null || die mksbdb
printf '{"a": 1}\n' > "$F/storage/metadata"
printf 'not a map\n' > "$F/maps/readme.txt"
"$MKDATAFILE" map "$F/maps/one.map" > /dev/null || die mkdatafile
"$MKDATAFILE" map "$F/maps/sub/two.map" --flavour tw07 > /dev/null 2>&1 ||
	"$MKDATAFILE" map "$F/maps/sub/two.map" > /dev/null || die mkdatafile
"$MKRECORDING" compacted "$F/recs/run.hcrp" -n 150 --quiet || die mkrecording
"$MKRECORDING" segmented "$F/recs/live" -n 150 --quiet || die mkrecording

# ---- the folder as it is, containers as directories --------------------
expect_eq "the top level" "empty maps recs storage" "$(sv ls "$F" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "a world, its .bak copy and the other world are containers (claimed by content)" \
	"d a.world/|d a.world.bak/|d b.world/" \
	"$(sv ls -l "$F" storage/universe | awk '{ print substr($1, 1, 1), $3 }' | tr '\n' '|' | sed 's/|$//')"
expect_eq "a plain JSON file and a text file pass through" \
	"-rw-r--r-- 9 metadata|-rw-r--r-- 10 readme.txt" \
	"$( (sv ls -l "$F" storage; sv ls -l "$F" maps) | grep -v '^d' | awk '{ print $1, $2, $3 }' | tr '\n' '|' | sed 's/|$//')"
expect_eq "a recording directory and a compacted recording are containers" "live run.hcrp" \
	"$(sv ls -l "$F" recs | awk '/^d/ { print $3 }' | tr -d / | tr '\n' ' ' | sed 's/ $//')"

# Each container's tree is the one it shows alone.
for c in storage/universe/a.world storage/player/p1.player maps/one.map maps/sub/two.map \
	recs/run.hcrp recs/live; do
	expect_same_text "$c: the tree in the folder is the container's own" \
		<(sv ls -R "$F/$c") <(sv ls -R "$F" "$c" | sed "s|^$c/||")
done
expect_same_file "a world's entity sector through the folder" \
	<(sv cat "$F/storage/universe/b.world" world/entities/0,0.json) \
	<(sv cat "$F" storage/universe/b.world/world/entities/0,0.json)
expect_same_file "a map's settings through the folder" \
	<(sv cat "$F/maps/one.map" map/info.json) <(sv cat "$F" maps/one.map/map/info.json)
expect_same_file "a live recording's chunk text through the folder" \
	<(sv cat "$F/recs/live" chunks/000001.txt) <(sv cat "$F" recs/live/chunks/000001.txt)

# ---- raw bytes: NAME/.savefs/container --------------------------------------
expect_eq "a container's /.savefs/ holds its raw form (first), its info and its log" "container info log" \
	"$(sv ls -a "$F" storage/universe/a.world/.savefs | tr '\n' ' ' | sed 's/ $//')"
for c in storage/universe/a.world maps/sub/two.map recs/run.hcrp storage/player/p1.player; do
	expect_same_file "$c/.savefs/container is the file" "$F/$c" <(sv cat "$F" "$c/.savefs/container")
done
expect_eq "a recording directory's raw form is its directory, nothing in it claimed" \
	"$(cd "$F/recs/live" && ls -l | awk 'NR > 1 { print substr($1, 1, 1), $5, $9 }')" \
	"$(sv ls -l "$F" recs/live/.savefs/container | awk '{ print substr($1, 1, 1), $2, $3 }')"
expect_same_file "a member of a recording directory, raw" "$F/recs/live/preamble.dat" \
	<(sv cat "$F" recs/live/.savefs/container/preamble.dat)
expect_same_file "a passthrough file is the file" "$F/storage/metadata" <(sv cat "$F" storage/metadata)

# ---- info: containers per format, what was not claimed ----------------------
sv info "$F" > "$TMP/info.json"
expect_eq "info: containers per format and the unclaimed" \
	'8 {"btreedb5": 3, "datafile": 2, "recording": 2, "sbvj01": 1} ["maps/readme.txt", "storage/metadata"]' \
	"$($PYTHON -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(j["containers"], json.dumps(dict(sorted(j["per_format"].items()))), json.dumps(j["unclaimed"]))' "$TMP/info.json")"
expect_eq "info: each container with its format and warnings" \
	"maps/one.map datafile 0|maps/sub/two.map datafile 0|recs/live recording 0|recs/run.hcrp recording 0|storage/player/p1.player sbvj01 0|storage/universe/a.world btreedb5 0|storage/universe/a.world.bak btreedb5 0|storage/universe/b.world btreedb5 0" \
	"$($PYTHON -c 'import json, sys
j = json.load(open(sys.argv[1]))
print("|".join("%s %s %d" % (c["path"], c["format"], len(c["warnings"])) for c in j["each"]))' "$TMP/info.json")"

# ---- extract, and grep across containers ----------------------------------------
sv extract "$F" "$TMP/out" || fail "extract of the folder"
expect_same_text "extract writes the tree ls shows (but the containers' own /.savefs/)" \
	<(sv ls -R "$F" | grep -v '/\.savefs' | sed 's|/$||' | sort) \
	<(cd "$TMP/out" && find . -mindepth 1 | sed 's|^\./||' | sort)
expect_same_file "an extracted passthrough file" "$F/storage/metadata" "$TMP/out/storage/metadata"
expect_eq "grep -rl finds the one world that holds the chest" \
	"storage/universe/b.world/keys/0900000000" \
	"$(cd "$TMP/out" && grep -rl 'chest named Mjolnir' . | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//')"

# ---- mounted ------------------------------------------------------------------
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	M=$TMP/mnt
	mount_sv "$F" "$M" -o max_open=2 || die "mount of the folder"
	expect_same_text "the mount shows the tree savefs ls shows" \
		<(sv ls -R -a "$F" | sed 's|/$||' | sort) \
		<(cd "$M" && find . -mindepth 1 | sed 's|^\./||' | sort)
	# Every file of every container read through the mount, two open at a
	# time: the same bytes as the extract (made with containers alone).
	expect_eq "diff -r of the mount against the extract" "" \
		"$(diff -r -x .savefs "$TMP/out" "$M" 2>&1 | head -5)"
	expect_eq "grep -rl through the mount" "$M/storage/universe/b.world/keys/0900000000" \
		"$(grep -rl 'chest named Mjolnir' "$M" 2>/dev/null)"
	expect_same_file "the raw bytes through the mount" "$F/maps/one.map" "$M/maps/one.map/.savefs/container"
	expect_eq "/.savefs/info counts the containers" "8" \
		"$($PYTHON -c 'import json, sys; print(json.load(open(sys.argv[1]))["containers"])' "$M/.savefs/info")"
	# ---- edits: in two containers, committed each under its own checks ----
	cp "$F/storage/universe/a.world" "$TMP/a.before"
	sed -i 's/"a chest"/"the chest of the folder"/' "$M/storage/universe/b.world/world/entities/0,0.json" ||
		fail "an edit of a world's entities through the folder"
	echo 'sv_gravity 0.3' >> "$M/maps/one.map/map/settings.cfg" || fail "an append to a map's settings"
	decoder_ok "b.world after its edit through the folder" "$F/storage/universe/b.world" --exact
	check "the independent reader finds the edit in b.world" grep -q '"the chest of the folder"' \
		<("$PYTHON" "$SBDECODE" dump "$F/storage/universe/b.world" "$TMP/bdump" > /dev/null &&
		  cat "$TMP/bdump/world/entities/0,0.json")
	expect_same_file "a.world, not edited, is byte for byte as it was" "$TMP/a.before" "$F/storage/universe/a.world"
	expect_eq "the map's settings as the container alone reads them" 'sv_gravity 0.3' \
		"$(sv cat "$F/maps/one.map" map/settings.cfg | tail -n 1)"
	check_decoder "$F/maps/one.map" "$M/maps/one.map"
	game_loads "the map after its edit through the folder" "$F/maps/one.map"
	# A second edit of the same container goes on from the first (the
	# container's own commit is not taken for another program's: it is not
	# opened again, so its files keep their inode numbers).
	# (ls -i: the number the listing gives now, not one the kernel kept.)
	ino=$(ls -i "$M/maps/one.map/map" | awk '$2 == "info.json" { print $1 }')
	sed -i 's/sv_gravity 0.3/sv_gravity 0.25/' "$M/maps/one.map/map/settings.cfg" ||
		fail "a second edit of the map"
	expect_eq "the second edit over the first" 'sv_gravity 0.25' \
		"$(sv cat "$F/maps/one.map" map/settings.cfg | tail -n 1)"
	expect_eq "the container was not opened again for its own commit" "$ino" \
		"$(ls -i "$M/maps/one.map/map" | awk '$2 == "info.json" { print $1 }')"
	game_loads "the map after the second edit" "$F/maps/one.map"
	# A refusal is the container's, in its own log.
	expect_eq "a refused edit fails at close" "Invalid argument" \
		"$($PYTHON -c 'import sys
try:
    with open(sys.argv[1], "w") as f:
        f.write("{ nope")
except OSError as e:
    print(e.strerror)' "$M/maps/one.map/map/info.json")"
	check "and says why in that container's log" grep -q 'info.json' "$M/maps/one.map/.savefs/log"
	# ---- files that pass through: the real file system's -------------------
	echo "first" > "$M/storage/notes.txt" || fail "a new file in the folder"
	expect_eq "a new file is a real file" "first" "$(cat "$F/storage/notes.txt")"
	echo "second" >> "$M/storage/notes.txt"
	expect_eq "appended" "first second" "$(tr '\n' ' ' < "$F/storage/notes.txt" | sed 's/ $//')"
	chmod 600 "$M/storage/notes.txt"
	expect_eq "its mode, kept by the real file and shown" "600 600" \
		"$(stat -c %a "$F/storage/notes.txt") $(stat -c %a "$M/storage/notes.txt")"
	touch -d '2001-02-03 04:05:06 UTC' "$M/storage/notes.txt"
	expect_eq "its times" "981173106 981173106" \
		"$(stat -c %Y "$F/storage/notes.txt") $(stat -c %Y "$M/storage/notes.txt")"
	mv "$M/storage/notes.txt" "$M/storage/player/notes.txt" || fail "a rename in the folder"
	expect_eq "renamed on the real file system" "no yes" \
		"$(test -e "$F/storage/notes.txt" && echo yes || echo no) $(test -e "$F/storage/player/notes.txt" && echo yes || echo no)"
	truncate -s 3 "$M/storage/player/notes.txt"
	expect_eq "truncated" "fir" "$(cat "$F/storage/player/notes.txt")"
	mkdir "$M/storage/backups" && cp "$M/storage/metadata" "$M/storage/backups/" || fail "mkdir and cp"
	expect_same_file "a copy into a new directory" "$F/storage/metadata" "$F/storage/backups/metadata"
	rm "$M/storage/player/notes.txt" "$M/storage/backups/metadata" && rmdir "$M/storage/backups" ||
		fail "removals"
	expect_eq "removed from the real file system" "metadata player universe" \
		"$(ls "$F/storage" | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "rename(2) between a container and the folder: EXDEV (mv copies)" "18" \
		"$($PYTHON -c 'import os, sys
try:
    os.rename(sys.argv[1], sys.argv[2])
except OSError as e:
    print(e.errno)' "$M/storage/metadata" "$M/maps/one.map/map/metadata")"
	expect_eq "the raw form is read-only" "Permission denied" \
		"$( (echo x >> "$M/maps/one.map/.savefs/container") 2>&1 | sed 's/.*: //')"
	# A container copied in through the mount becomes a directory once
	# written (never claimed half written).
	cp "$F/maps/one.map" "$M/maps/copy.map" || fail "cp of a map into the folder"
	expect_eq "the copy is a container" "d" "$(stat -c %F "$M/maps/copy.map" | cut -c1)"
	expect_same_file "with the map's settings" <(sv cat "$F/maps/one.map" map/settings.cfg) \
		"$M/maps/copy.map/map/settings.cfg"
	rm "$M/maps/copy.map/.savefs/container" || fail "a container removed by its raw file"
	check "and gone from the folder" test ! -e "$F/maps/copy.map"
	# The folder followed: a container added, one removed, one replaced.
	"$MKDATAFILE" map "$F/maps/three.map" --flavour legacy17 > /dev/null 2>&1 ||
		cp "$F/maps/one.map" "$F/maps/three.map"
	expect_eq "a container added appears" "one.map readme.txt sub three.map" \
		"$(ls "$M/maps" | tr '\n' ' ' | sed 's/ $//')"
	expect_same_text "and shows its tree" <(sv ls -R "$F/maps/three.map" | sed 's|/$||' | sort) \
		<(cd "$M/maps/three.map" && find . -mindepth 1 -not -path './.savefs*' | sed 's|^\./||' | sort)
	rm "$F/maps/three.map"
	expect_eq "a container removed goes" "one.map readme.txt sub" "$(ls "$M/maps" | tr '\n' ' ' | sed 's/ $//')"
	before=$(cat "$M/storage/universe/a.world/world/entities/0,0.json")
	# A file of it held open (not read yet) keeps reading the old file, whole.
	exec 8< "$M/storage/universe/a.world/world/entities/1,0.json"
	cp "$F/storage/universe/b.world" "$F/storage/universe/a.world.new"
	mv "$F/storage/universe/a.world.new" "$F/storage/universe/a.world"
	expect_same_file "a container replaced is read again whole" \
		<(sv cat "$F/storage/universe/b.world" keys/0900000000) "$M/storage/universe/a.world/keys/0900000000"
	expect_same_file "every view of it is the new file's" \
		<(sv cat "$F/storage/universe/b.world" world/metadata.json) \
		"$M/storage/universe/a.world/world/metadata.json"
	check "which is not what it showed before" test "$before" != "$(cat "$M/storage/universe/a.world/world/entities/0,0.json")"
	# Past the attributes' 1 s: cat's fstat of it is a GETATTR without
	# its handle (it was refused as stale, and cat read nothing).
	sleep 1.2
	cat <&8 > "$TMP/old-open.json" 2> "$TMP/old-open.err"
	exec 8<&-
	expect_same_file "a file open before the replacement reads the old container's bytes" \
		<(sv cat "$F/storage/universe/a.world.bak" world/entities/1,0.json) "$TMP/old-open.json"
	# Rewritten in place (the same inode, as Starbound writes its worlds):
	# read again too (it was refused: the old container still held its
	# claim on the file).
	ino=$(stat -c %i "$F/storage/universe/a.world")
	"$MKSBDB" world "$F/storage/universe/a.world" -s 2 -e 2 -S 9 > /dev/null || die mksbdb
	expect_eq "the world rewritten in place keeps its inode" "$ino" "$(stat -c %i "$F/storage/universe/a.world")"
	expect_same_file "a container rewritten in place is read again" \
		<(sv cat "$F/storage/universe/a.world" world/entities/0,0.json) \
		"$M/storage/universe/a.world/world/entities/0,0.json"
	umount_sv "$M"
fi

# ---- kill -9 during one container's commit ---------------------------------------
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	K=$TMP/kill
	M3=$TMP/mnt3
	for step in synced flipped; do
		rm -rf "$K"
		mkdir -p "$K/universe"
		"$MKSBDB" world "$K/universe/a.world" -s 2 -e 2 -S 5 > /dev/null || die mksbdb
		"$MKSBDB" world "$K/universe/b.world" -s 2 -e 2 -S 7 > /dev/null || die mksbdb
		"$MKDATAFILE" map "$K/one.map" > /dev/null || die mkdatafile
		cp "$K/universe/a.world" "$TMP/ka.world"
		cp "$K/one.map" "$TMP/kone.map"
		cp "$K/universe/b.world" "$TMP/kb.world"
		# Another container in use while it happens.
		killed_during "$step" "$K" "$M3" sh -c 'cat "$1/one.map/map/settings.cfg" > /dev/null &&
			sed -i "s/\"a chest\"/\"crashed\"/" "$1/universe/b.world/world/entities/0,0.json"' _ "$M3"
		expect_eq "killed at $step in one container: the daemon died by SIGKILL" 137 "$KILLED_RC"
		decoder_ok "b.world, killed at $step" "$K/universe/b.world"
		if [ "$step" = flipped ]; then
			check "killed after the flip: the new tree" \
				grep -q '"crashed"' <(sv cat "$K/universe/b.world" world/entities/0,0.json)
		else
			expect_same_file "killed at $step: the old tree" \
				<(sv cat "$TMP/kb.world" world/entities/0,0.json) \
				<(sv cat "$K/universe/b.world" world/entities/0,0.json)
		fi
		expect_same_file "killed at $step: the other world untouched" "$TMP/ka.world" "$K/universe/a.world"
		expect_same_file "killed at $step: the map untouched" "$TMP/kone.map" "$K/one.map"
		expect_eq "killed at $step: nothing else left in the folder" "one.map universe a.world b.world" \
			"$(ls "$K" | tr '\n' ' ')$(ls "$K/universe" | tr '\n' ' ' | sed 's/ $//')"
	done
fi

# ---- one container's open or commit never holds up another's calls --------------
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null && [ -n "${FAULTSHIM:-}" ]; then
	P=$TMP/pause
	mkdir -p "$P/f/universe" "$P/f/held"
	"$MKSBDB" world "$P/f/universe/a.world" -s 2 -e 2 -S 5 > /dev/null || die mksbdb
	"$MKSBDB" world "$P/f/held/b.world" -s 2 -e 2 -S 7 > /dev/null || die mksbdb
	"$MKDATAFILE" map "$P/f/one.map" > /dev/null || die mkdatafile
	# b.world's first read is held (its sniff or its open), with one
	# container at most open: the others are looked at, opened and closed
	# meanwhile.  (b.world is in a directory of its own: the kernel lets
	# one lookup at a time into a directory wait for another's.)
	rm -f "$P/reached" "$P/go"
	mount_shim "$P/f" "$P/m" -omax_open=1 SVF_ARM="$P/arm" SVF_MATCH=b.world \
		SVF_PAUSE=pread SVF_DIR="$P" || die "mount with the shim"
	touch "$P/arm"
	cat "$P/m/held/b.world/world/metadata.json" > "$P/b.json" 2>&1 &
	reader=$!
	for _ in $(seq 600); do [ -e "$P/reached" ] && break; sleep 0.05; done
	check "b.world's read is held" test -e "$P/reached"
	check "another container reads meanwhile" timeout 20 cmp -s \
		<(sv cat "$P/f/one.map" map/settings.cfg) "$P/m/one.map/map/settings.cfg"
	check "and a world beside it" timeout 20 cat "$P/m/universe/a.world/world/metadata.json"
	touch "$P/go"
	wait "$reader"
	expect_same_file "b.world reads once let go" \
		<(sv cat "$P/f/held/b.world" world/metadata.json) "$P/b.json"
	umount_sv "$P/m"
	# A commit held before its sync (holding its container's lock): the
	# folder lists, the other world opens (closing an idle container past
	# max_open) and reads.
	rm -f "$P/reached" "$P/go"
	mount_shim "$P/f" "$P/m" -omax_open=1 SVF_ARM="$P/arm" SVF_MATCH=b.world \
		SVF_PAUSE=fdatasync SVF_DIR="$P" || die "mount with the shim"
	sed 's/"a chest"/"held chest"/' "$P/m/held/b.world/world/entities/0,0.json" > "$P/e1"
	touch "$P/arm"
	py_write "$P/m/held/b.world/world/entities/0,0.json" "$P/e1" > "$P/result" &
	writer=$!
	for _ in $(seq 600); do [ -e "$P/reached" ] && break; sleep 0.05; done
	check "b.world's commit is held" test -e "$P/reached"
	check "the folder lists meanwhile" timeout 20 ls -l "$P/m/universe"
	check "another world opens and reads meanwhile" timeout 20 cmp -s \
		<(sv cat "$P/f/universe/a.world" world/entities/0,0.json) \
		"$P/m/universe/a.world/world/entities/0,0.json"
	touch "$P/go"
	wait "$writer"
	expect_eq "the held commit then lands" "ok" "$(cat "$P/result")"
	umount_sv "$P/m"
	game_loads "b.world after the held commit" "$P/f/held/b.world"
	check "with the edit" grep -q '"held chest"' <(sv cat "$P/f/held/b.world" world/entities/0,0.json)
fi

# ---- max_open=2 over a walk of 20 containers ----------------------------------------
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	W=$TMP/many
	mkdir -p "$W"
	for i in $(seq 10 29); do
		"$MKRECORDING" compacted "$W/r$i.hcrp" -n $((i * 7)) -s "$i" --quiet || die mkrecording
	done
	M2=$TMP/mnt2
	mount_sv "$W" "$M2" -o max_open=2 || die "mount of 20 recordings"
	# Twice through, in two orders: every container opened, closed and
	# opened again, each file the bytes the container shows alone.
	bad=0
	for pass in 1 2; do
		for i in $(if [ $pass = 1 ]; then seq 10 29; else seq 29 -1 10; fi); do
			cmp -s <(sv cat "$W/r$i.hcrp" timeline.txt) "$M2/r$i.hcrp/timeline.txt" ||
				bad=$((bad + 1))
			cmp -s <(sv cat "$W/r$i.hcrp" index.tsv) "$M2/r$i.hcrp/index.tsv" ||
				bad=$((bad + 1))
		done
	done
	expect_eq "max_open=2: 80 files of 20 containers read right" 0 "$bad"
	# A file held open keeps its container open past the cap: read it after
	# a walk through all the others, once every container is idle (unused
	# for 2 s: the wait is that threshold's, not a race's).
	exec 7< "$M2/r10.hcrp/chunks/000000.txt"
	sleep 2.5
	for i in $(seq 11 29); do cat "$M2/r$i.hcrp/index.tsv" > /dev/null; done
	cat <&7 > "$TMP/held.txt" 2> "$TMP/held.err"
	exec 7<&-
	expect_same_text "a file held open through the walk still reads" \
		<(sv cat "$W/r10.hcrp" chunks/000000.txt) "$TMP/held.txt"
	# The cap holds: after the walk (every container used in the last 2 s
	# stays), once all are idle, one more use closes idle ones down to
	# max_open.
	sleep 2.5
	cat "$M2/r11.hcrp/index.tsv" > /dev/null
	expect_eq "max_open=2: open containers after a walk of 20, once idle" "2 2" \
		"$($PYTHON -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(j["open"], j["max_open"])' "$M2/.savefs/info")"
	umount_sv "$M2"
fi

# ---- errors --------------------------------------------------------------------
# A folder extracted or mounted into itself would read what it writes (the
# extract went on writing out/out/out/...), or serve its own mount.
mkdir -p "$F/maps/out" "$F/maps/mnt"
expect_exit "extract into the folder itself" 2 "savefs: $F/maps/out: inside the folder $F: extract it elsewhere" \
	"$SAVEFS" extract "$F" "$F/maps/out"
expect_eq "and wrote nothing" "" "$(ls -A "$F/maps/out")"
expect_exit "a mount inside the folder" 2 "savefs: $F/maps/mnt: inside the folder $F: mount it elsewhere" \
	"$SAVEFS" "$F" "$F/maps/mnt"
rmdir "$F/maps/out" "$F/maps/mnt"
expect_exit "a path that is not there" 7 "savefs: storage/nothing: No such file or directory" \
	"$SAVEFS" ls "$F" storage/nothing
expect_exit "cat of a container is cat of a directory" 7 "savefs: maps/one.map: is a directory" \
	"$SAVEFS" cat "$F" maps/one.map
finish
