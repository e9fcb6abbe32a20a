#!/bin/bash
# recording.sh - replay recordings, one compacted file or a segmented
# directory, mounted for real.
#
#   - the synthetic samples of ../shared/samples/recording (when present):
#     every view of both layouts equal to the independent decoder's
#     (rcdecode.py: header, index, metadata, every chunk's payload and text,
#     the timeline, the state at every chunk start and at random ticks);
#   - golden listings (sizes and checksums) of generated recordings and of
#     the samples, as mounted;
#   - the mount with ordinary tools: the listing, timeline.txt equal to the
#     chunks' text in order, grep of an event across chunks/*.txt, any tick
#     opened by name under at/ (and the listing unchanged by it), both
#     event tables;
#   - compacted.hcrp of a segmented recording copied with cp: the copy
#     mounts, and every chunk's view equals the directory's;
#   - recordings from mkrecording (every event id, leftovers of a crashed
#     recorder, the built-in table) against the decoder;
#   - write-back: metadata.snbt with sed -i (the chunks untouched), bad SNBT
#     refused with its line and column (the file unchanged), rm of the last
#     chunk, of the first (ticks renumbered), of a middle one (refused); in
#     a directory, a new preamble by rename and segments never written;
#   - a recording followed while mkrecording writes it: the listing grows
#     commit by commit, tail -f timeline.txt sees every chunk;
#   - a directory that is no recording, and a recording of another version,
#     refused with their messages.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
need_samples
command -v zstd > /dev/null || skip "zstd is not installed"
RCDECODE="$SRC_ROOT/tests/tools/rcdecode.py"
R="$SAMPLES/recording"
[ -d "$R" ] || skip_samples "$R not found"
COMP="$R/SYNTHETIC-compacted.hcrp"

SEG="$R/SYNTHETIC-segmented"

# ---- both layouts against the independent decoder ----------------------
for rec in "$COMP" "$SEG"; do
	name=$(basename "$rec")
	rm -rf "$TMP/x"
	check "$name: extract" sv extract "$rec" "$TMP/x"
	check "$name: every view as the decoder has it" \
		env SAVEFS="$SAVEFS" "$PYTHON" "$RCDECODE" check "$rec" "$TMP/x" --ticks 40
	rm -rf "$TMP/x"
	check "$name: extract with the built-in events" sv extract -o events=builtin "$rec" "$TMP/x"
	check "$name: the built-in table decodes these events alike" \
		env SAVEFS="$SAVEFS" "$PYTHON" "$RCDECODE" check "$rec" "$TMP/x" --events builtin --ticks 5
done

# ---- every event id (the fuzz seeds, written from the format notes) -----
SEEDS="$TMP/seeds"
check "seed recordings written" "$PYTHON" "$SRC_ROOT/tests/fuzz/recording_seeds.py" "$SEEDS"
rm -rf "$TMP/x"
check "every event id: extract" sv extract "$SEEDS/recording/seed-one-chunk.hcrp" "$TMP/x"
check "every event id: as the decoder has it" \
	env SAVEFS="$SAVEFS" "$PYTHON" "$RCDECODE" check "$SEEDS/recording/seed-one-chunk.hcrp" \
	"$TMP/x" --ticks 3
sv cat -o events=builtin "$SEEDS/recording/seed-one-chunk.hcrp" chunks/000000.txt > "$TMP/builtin.txt"
expect_eq "built-in events: id 10 ends the decoding, the rest in hex" \
	"$(printf '2\t10\tundecoded\treason="an event id the event table does not have"')" \
	"$(grep undecoded "$TMP/builtin.txt" | sed "s/ at=.*//")"
expect_eq "built-in events: the text up to there as the decoder has it" \
	"$("$PYTHON" "$RCDECODE" text "$SEEDS/recording/seed-one-chunk.hcrp" 0 --events builtin)" \
	"$(cat "$TMP/builtin.txt")"

# ---- the mount ---------------------------------------------------------
M="$TMP/m"
mount_sv "$SEG" "$M" -o ro || die "cannot mount $SEG"
expect_eq "root listing" "at chunks compacted.hcrp header.json index.tsv metadata.nbt metadata.snbt timeline.txt" \
	"$(ls "$M" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "chunks listing" "000000.bin 000000.txt 000001.bin 000001.txt 000002.bin 000002.txt" \
	"$(ls "$M/chunks" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "at/ lists the chunk starts" "00000000.json 00000100.json 00000200.json" \
	"$(ls "$M/at" | tr '\n' ' ' | sed 's/ $//')"
cat "$M"/chunks/*.txt > "$TMP/all.txt"
check "timeline.txt is every chunk's text in order" cmp "$TMP/all.txt" "$M/timeline.txt"
expect_eq "timeline.txt's size in stat" "$(wc -c < "$TMP/all.txt")" "$(stat -c %s "$M/timeline.txt")"
want=$(for i in 0 1 2; do "$PYTHON" "$RCDECODE" text "$SEG" $i; done | grep -c $'\thand_animation\t')
expect_eq "grep -c of an event across chunks/*.txt" "$want" \
	"$(cat "$M"/chunks/*.txt | grep -c $'\thand_animation\t')"
[ "$want" -gt 0 ] || fail "the sample has no hand_animation events to grep for"
"$PYTHON" "$RCDECODE" state "$SEG" 137 > "$TMP/137.want"
check "at/137.json opens by name" test -f "$M/at/137.json"
check "at/137.json is the decoder's state" \
	"$PYTHON" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
	"$TMP/137.want" "$M/at/137.json"
expect_eq "at/ still lists the chunk starts" "00000000.json 00000100.json 00000200.json" \
	"$(ls "$M/at" | tr '\n' ' ' | sed 's/ $//')"
check "at/250.json (past the last tick) does not exist" test ! -e "$M/at/250.json"
check "at/0007.json (a tick, zero-padded) opens" grep -q '"tick": 7,' "$M/at/0007.json"
expect_eq "header.json says finished" '  "finished": true,' "$(grep '"finished"' "$M/header.json")"
check "writes are refused (mounted -o ro)" \
	sh -c '! printf x 2> /dev/null >> "$1"' _ "$M/metadata.snbt"

# ---- compacted.hcrp: cp, mount the copy, compare ------------------------
check "cp compacted.hcrp" cp "$M/compacted.hcrp" "$TMP/copy.hcrp"
expect_eq "compacted.hcrp's size in stat" "$(stat -c %s "$TMP/copy.hcrp")" \
	"$(stat -c %s "$M/compacted.hcrp")"
M2="$TMP/m2"
mount_sv "$TMP/copy.hcrp" "$M2" || die "cannot mount the compacted copy"
check "the copy's chunks, text and states equal the directory's" \
	diff -r "$M/chunks" "$M2/chunks"
check "the copy's at/ equals the directory's" diff -r "$M/at" "$M2/at"
check "the copy's timeline and metadata" cmp "$M/timeline.txt" "$M2/timeline.txt"
check "the copy's metadata" cmp "$M/metadata.nbt" "$M2/metadata.nbt"
expect_eq "the copy is compacted" '  "layout": "compacted",' "$(grep '"layout"' "$M2/header.json")"
rm -rf "$TMP/x"
check "the copy: extract" sv extract "$TMP/copy.hcrp" "$TMP/x"
check "the copy: every view as the decoder has it" \
	env SAVEFS="$SAVEFS" "$PYTHON" "$RCDECODE" check "$TMP/copy.hcrp" "$TMP/x" --ticks 10
umount_sv "$M2"
umount_sv "$M"

# ---- generated recordings (mkrecording) --------------------------------
[ -x "$MKRECORDING" ] || die "MKRECORDING=$MKRECORDING is not an executable (build first)"
G="$TMP/gen"
mkdir -p "$G"
check "mkrecording compacted" "$MKRECORDING" compacted "$G/a.hcrp" -n 1000 -e 3 -s 3 -z 3
check "mkrecording segmented, with leftovers" \
	"$MKRECORDING" segmented "$G/seg" -n 1000 -e 3 -s 3 -S 3 --leftovers
check "mkrecording built-in events only" "$MKRECORDING" compacted "$G/b.hcrp" -n 300 -s 4 --builtin
decoded()
{
	rm -rf "$TMP/x"
	sv extract "$@" "$TMP/x" && env SAVEFS="$SAVEFS" "$PYTHON" "$RCDECODE" check \
		"${@: -1}" "$TMP/x" --ticks 25 ${EVENTS:+--events $EVENTS}
}
check "generated compacted: every view as the decoder has it" decoded "$G/a.hcrp"
check "generated segmented (a stale .preamble-*.tmp, a segment no preamble names)" \
	decoded "$G/seg"
EVENTS=builtin check "built-in events: every view as the decoder has it" \
	decoded -o events=builtin "$G/b.hcrp"

# The in-process baseline decodes under the directory it is given only.
expect_eq "bench-inproc: the files under chunks/ that end in .txt" 10 \
	"$(sv bench-inproc "$G/a.hcrp" chunks .txt | sed -n 's/^inproc: *\([0-9]*\) files.*/\1/p')"
# Read-ahead takes files whose size comes with their decode (chunks' text).
mount_sv "$G/a.hcrp" "$TMP/mra" -o ro || die "cannot mount $G/a.hcrp"
cat "$TMP"/mra/chunks/*.txt > /dev/null
check "cat chunks/*.txt: the read-ahead decoded some ahead of the reader" "$PYTHON" -c '
import json, sys
sys.exit(json.load(open(sys.argv[1]))["cache"]["read_ahead"] == 0)' "$TMP/mra/.savefs/info"
umount_sv "$TMP/mra"

# ---- golden listings: the mounted trees, sizes and checksums ------------
# shellcheck source=tests/golden/recording/fixtures.sh
. "$SRC_ROOT/tests/golden/recording/fixtures.sh"
make_rc_golden "$TMP/golden" || die "mkrecording failed"
for g in $RC_FIXTURES; do
	mount_sv "$TMP/golden/$g" "$TMP/mg" -o ro || continue
	tree_listing "$TMP/mg" > "$TMP/$g.tree"
	check_golden_in recording "$g" "$TMP/$g.tree"
	umount_sv "$TMP/mg"
done
for f in "$COMP" "$SEG"; do
	mount_sv "$f" "$TMP/mg" -o ro || continue
	tree_listing "$TMP/mg" > "$TMP/sample.tree"
	check_golden_in recording "$(basename "$f")" "$TMP/sample.tree"
	umount_sv "$TMP/mg"
done

# ---- write-back: a compacted file -------------------------------------
cp "$G/a.hcrp" "$G/a0.hcrp"
M3="$TMP/m3"
mount_sv "$G/a.hcrp" "$M3" || die "cannot mount $G/a.hcrp"
cat "$M3"/chunks/*.bin > "$TMP/bins.before"
check "sed -i on metadata.snbt" sed -i 's/"mkrecording"/"the long way round"/' "$M3/metadata.snbt"
expect_eq "metadata.snbt after the edit" "$(printf '{\n    map: "the long way round"\n}')" \
	"$(cat "$M3/metadata.snbt")"
cat "$M3"/chunks/*.bin > "$TMP/bins.after"
check "the chunks are as they were" cmp "$TMP/bins.before" "$TMP/bins.after"
expect_eq "header.json: the metadata's new length" '  "metadata_length": 28,' \
	"$(grep metadata_length "$M3/header.json")"
cp "$G/a.hcrp" "$G/a1.hcrp"
printf '{map: "x",\n  n: 300b}' > "$M3/metadata.snbt" 2> /dev/null
expect_eq "bad SNBT: the reason in the log" \
	"refused metadata.snbt: snbt: line 2, column 6: 300 is out of range for a byte" \
	"$(tail -n 1 "$M3/.savefs/log" | cut -d' ' -f2-)"
check "bad SNBT: the file is unchanged" cmp "$G/a1.hcrp" "$G/a.hcrp"
check "rm of a middle chunk is refused" sh -c '! rm "$1" 2> /dev/null' _ "$M3/chunks/000004.bin"
expect_eq "rm of a middle chunk: the reason in the log" \
	"refused to remove chunks/000004.bin: chunk 4: only the first or the last chunk can be removed (the ticks stay contiguous)" \
	"$(tail -n 1 "$M3/.savefs/log" | cut -d' ' -f2-)"
check "rm of the last chunk" rm "$M3/chunks/000009.txt"
expect_eq "the last chunk is gone" "000008.txt" "$(ls "$M3/chunks" | tail -n 1)"
expect_eq "tick count after the last chunk went" '  "tick_count": 900,' \
	"$(grep tick_count "$M3/header.json")"
cp "$M3/at/00000150.json" "$TMP/150.json"
tail -n +2 "$M3/chunks/000001.txt" | awk -F'\t' -v OFS='\t' '{ $1 = $1 - 100; print }' \
	> "$TMP/c1.shifted"
check "rm of the first chunk (the next opens with a snapshot)" rm "$M3/chunks/000000.bin"
expect_eq "tick count after the first chunk went" '  "tick_count": 800,' \
	"$(grep tick_count "$M3/header.json")"
expect_eq "the index starts at tick 0 again" "000000	0	100	yes" \
	"$(sed -n 2p "$M3/index.tsv" | cut -f1-4)"
check "the ticks are renumbered from 0, the events as they were" \
	cmp "$TMP/c1.shifted" <(tail -n +2 "$M3/chunks/000000.txt")
check "at/50.json is what at/150.json was" "$PYTHON" -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a["tick"] -= 100
for r in a["run"].values():
    r["tick"] -= 100
sys.exit(a != b)' "$TMP/150.json" "$M3/at/50.json"
umount_sv "$M3"
check "after the edits: every view as the decoder has it" decoded "$G/a.hcrp"

# ---- write-back: a segmented directory ----------------------------------
cp -a "$G/seg" "$G/seg0"
mount_sv "$G/seg" "$M3" || die "cannot mount $G/seg"
check "segmented: sed -i on metadata.snbt" \
	sed -i 's/"mkrecording"/"by rename"/' "$M3/metadata.snbt"
check "segmented: rm of the last chunk" rm "$M3/chunks/000009.bin"
check "segmented: rm of the first chunk is refused" \
	sh -c '! rm "$1" 2> /dev/null' _ "$M3/chunks/000000.txt"
expect_eq "segmented: rm of the first chunk: the reason" \
	"refused to remove chunks/000000.txt: chunk 0: it lies in segment-000.dat, and a recording's segments are never rewritten (trim a compacted copy: cp compacted.hcrp)" \
	"$(tail -n 1 "$M3/.savefs/log" | cut -d' ' -f2-)"
umount_sv "$M3"
for f in "$G"/seg0/segment-*.dat; do
	check "segmented: $(basename "$f") is as it was" cmp "$f" "$G/seg/$(basename "$f")"
done
expect_eq "segmented: no temporary file left" "" "$(ls -a "$G/seg" | grep '^\.preamble-' | grep -v leftover)"
check "segmented: after the edits, every view as the decoder has it" decoded "$G/seg"
expect_eq "segmented: the new metadata" '    map: "by rename"' \
	"$(sv cat "$G/seg" metadata.snbt | sed -n 2p)"

# ---- a preamble replaced while savefs commits its own ---------------------
# The recorder renames a new preamble in at the instant savefs swaps its own
# in (held there by the fault shim): savefs must give the recorder's back.
if [ -f "$FAULTSHIM" ]; then
	R2="$G/race"
	cp -a "$G/seg0" "$R2"
	d="$TMP/race"
	mkdir -p "$d" "$d/m"
	# The shim comes before the sanitizer runtime in a sanitized daemon.
	env ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
		LD_PRELOAD="$FAULTSHIM" SVF_ARM="$d/arm" SVF_PAUSE=renameat2 SVF_MATCH=preamble.dat \
		SVF_DIR="$d" "$SAVEFS" -f "$R2" "$d/m" 2> "$d/log" < /dev/null &
	shim=$!
	for _ in $(seq 1200); do [ -f "$d/m/.savefs/info" ] && break; sleep 0.05; done
	touch "$d/arm"
	(sed -i 's/"mkrecording"/"too late"/' "$d/m/metadata.snbt" 2> /dev/null; echo $? > "$d/rc") &
	editor=$!
	for _ in $(seq 200); do [ -e "$d/reached" ] && break; sleep 0.05; done
	check "race: the commit was held at its rename" test -e "$d/reached"
	cp "$R2/preamble.dat" "$R2/.preamble-recorder.tmp"
	mv "$R2/.preamble-recorder.tmp" "$R2/preamble.dat"
	theirs=$(stat -c %i "$R2/preamble.dat")
	touch "$d/go"
	wait "$editor"
	expect_eq "race: the edit fails" 4 "$(cat "$d/rc")"
	expect_eq "race: the recorder's preamble is in place" "$theirs" "$(stat -c %i "$R2/preamble.dat")"
	check "race: its content is the recorder's" cmp "$G/seg0/preamble.dat" "$R2/preamble.dat"
	expect_eq "race: the reason in the log" \
		"preamble.dat was replaced by another program since it was read: the edit is not applied" \
		"$(grep -o 'preamble.dat was replaced by another program.*' "$d/m/.savefs/log" | head -n 1)"
	expect_eq "race: no temporary file left" "" \
		"$(ls -a "$R2" | grep '^\.preamble-' | grep -v leftover)"
	fusermount3 -u "$d/m"
	wait "$shim"
	san_check "race: the daemon" "$d/log"
else
	printf 'note: FAULTSHIM=%s absent: the race with a recorder is not checked\n' "$FAULTSHIM"
fi

# ---- a recording being written -------------------------------------------
L="$G/live"
"$MKRECORDING" live "$L" -n 1600 -e 2 -S 1 -i 500 --leftovers --quiet &
writer=$!
for _ in $(seq 600); do [ -f "$L/preamble.dat" ] && break; sleep 0.1; done
mount_sv "$L" "$M3" || die "cannot mount the live recording"
tail -c +1 -f "$M3/timeline.txt" > "$TMP/tailed" 2> /dev/null &
tailer=$!
seen=() last=0 late=0
for _ in $(seq 1200); do
	n=$(ls "$M3/chunks" | wc -l)
	if [ "$n" != "$last" ]; then
		seen+=("$n")
		last=$n
	fi
	[ -f "$L/finished" ] && [ "$n" = 32 ] && break
	sleep 0.1
done
wait "$writer"
expect_eq "live: every chunk appeared" 32 "$(ls "$M3/chunks" | wc -l)"
[ "${#seen[@]}" -ge 5 ] || fail "live: the listing grew in ${#seen[@]} steps (${seen[*]}), not commit by commit"
CHECKS=$((CHECKS + 1))
# tail -f looks again every second: it has everything once it caught up.
for _ in $(seq 600); do
	cmp -s "$TMP/tailed" "$M3/timeline.txt" && break
	sleep 0.1
done
kill "$tailer" 2> /dev/null
wait "$tailer" 2> /dev/null
check "live: tail -f of timeline.txt saw every chunk's text" cmp "$TMP/tailed" "$M3/timeline.txt"
expect_eq "live: header.json says finished" '  "finished": true,' "$(grep '"finished"' "$M3/header.json")"
umount_sv "$M3"
check "live: the result as the decoder has it" decoded "$L"

# ---- info of a directory: the size is its members' ----------------------
expect_eq "info: a segmented recording's size is its files' total" \
	"  \"container_size\": $(find "$SEG" -maxdepth 1 -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')," \
	"$(sv info "$SEG" | grep '"container_size"')"

# ---- refusals ----------------------------------------------------------
mkdir -p "$TMP/notrec"
echo hello > "$TMP/notrec/readme"
expect_eq "a directory that is no recording is a folder, its file unclaimed" \
	'0 ["readme"]' "$(sv info "$TMP/notrec" | python3 -c 'import json, sys
j = json.load(sys.stdin)
print(j["containers"], json.dumps(j["unclaimed"]))')"
for v in 3 5; do
	cp "$COMP" "$TMP/v$v.hcrp"
	printf "\\x00\\x0$v" | dd of="$TMP/v$v.hcrp" bs=1 seek=4 conv=notrunc 2> /dev/null
	# Not claimed (another version is not a recording savefs reads) ...
	expect_exit "format version $v" 4 \
		"savefs: $TMP/v$v.hcrp: not a container savefs knows (see --formats)" \
		"$SAVEFS" info "$TMP/v$v.hcrp"
	# ... and, named, refused with the version it has.
	mkdir -p "$TMP/vm"
	expect_exit "format version $v, mounted with -o format=recording" 5 \
		"savefs: $TMP/v$v.hcrp: recording: byte 4: format version $v; savefs reads version 4" \
		"$SAVEFS" -f -o format=recording "$TMP/v$v.hcrp" "$TMP/vm"
done
expect_exit "an unknown event table" 2 \
	"savefs: events=other: the event tables are builtin and parkour" \
	"$SAVEFS" info -o events=other "$COMP"

# ---- a chunk's text made as it is read ----------------------------------------
# With a small cache every chunk is "big": each chunks/<n>.txt and the
# timeline are made piece by piece; they must read as with the whole
# decode (a default mount), at any offset, and so must an undecodable rest.
BADREC=$SRC_ROOT/tests/data/bad/recording
for rec in "$COMP" "$SEG" "$BADREC/unknown-event-id.hcrp" "$BADREC/event-cut-short.hcrp"; do
	name=$(basename "$rec")
	mount_sv "$rec" "$TMP/whole" -o ro || continue
	mount_sv "$rec" "$TMP/piece" -o ro,cache=64K || { umount_sv "$TMP/whole"; continue; }
	check "$name: streamed chunk text and timeline read as decoded whole" \
		diff -r "$TMP/whole/chunks" "$TMP/piece/chunks"
	check "$name: the timeline" cmp "$TMP/whole/timeline.txt" "$TMP/piece/timeline.txt"
	f=$(ls "$TMP/piece/chunks" | grep txt | tail -1)
	size=$(stat -c %s "$TMP/piece/chunks/$f")
	for at in 1 $((size / 3)) $((size - 5)); do
		expect_eq "$name: $f read at $at" \
			"$(dd if="$TMP/whole/chunks/$f" bs=1 skip="$at" count=40 2> /dev/null | od -c)" \
			"$(dd if="$TMP/piece/chunks/$f" bs=1 skip="$at" count=40 2> /dev/null | od -c)"
	done
	umount_sv "$TMP/piece"
	umount_sv "$TMP/whole"
done
# One chunk of 21 MB of payload (4 million empty ticks, 8 MB stored): its
# 58 MB of text is never held: savefs cat stays far below it.
"$PYTHON" - "$TMP/big.hcrp" "$BADREC/make.py" << 'PY'
import importlib.util, struct, sys
spec = importlib.util.spec_from_file_location("make", sys.argv[2])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
n = 4000000
payload = b''.join(m.vi(t) + b'\0\0' for t in range(n))
open(sys.argv[1], 'wb').write(m.rec([(n, m.zstd(payload), len(payload))]))
PY
/usr/bin/time -f '%M' -o "$TMP/big.rss" "$SAVEFS" cat "$TMP/big.hcrp" chunks/000000.txt \
	> "$TMP/big.txt" 2> "$TMP/big.err"
expect_eq "big chunk: savefs cat exits 0" "0" "$?"
expect_eq "big chunk: every tick line" "4000000" "$(wc -l < "$TMP/big.txt")"
expect_eq "big chunk: the text, as the ticks make it" \
	"$("$PYTHON" -c 'import hashlib, sys
h = hashlib.sha256()
for t in range(0, 4000000, 100000):
    h.update("".join("%d\ttick\t0\n" % u for u in range(t, t + 100000)).encode())
print(h.hexdigest())')" "$(sha256sum < "$TMP/big.txt" | cut -c1-64)"
rss=$(tail -n 1 "$TMP/big.rss")
check "big chunk: savefs cat of its 58 MB of text peaked at $rss kB, under 50 MB" \
	test "$rss" -lt 50000
mount_sv "$TMP/big.hcrp" "$TMP/bm" || die "mount"
# A stat does not wait for the decode a size needs: the size shows once
# the background has it (0 until then), and the text reads whole anyway.
check "big chunk: ls -l of the root answers" ls -l "$TMP/bm"
check "big chunk: read to its end at once" cmp "$TMP/big.txt" "$TMP/bm/chunks/000000.txt"
for _ in $(seq 1200); do
	[ "$(stat -c %s "$TMP/bm/chunks/000000.txt")" = "$(stat -c %s "$TMP/big.txt")" ] && break
	sleep 0.1
done
expect_eq "big chunk: its size in the mount, once found" "$(stat -c %s "$TMP/big.txt")" \
	"$(stat -c %s "$TMP/bm/chunks/000000.txt")"
expect_eq "big chunk: read in the middle through the mount" \
	"$(tail -c +30000001 "$TMP/big.txt" | head -c 64 | od -c)" \
	"$(dd if="$TMP/bm/chunks/000000.txt" bs=1M skip=30000000 iflag=skip_bytes count=1 2> /dev/null |
		head -c 64 | od -c)"
umount_sv "$TMP/bm"
# Past the decode limit: EIO, and the reason in the log.
mount_sv "$TMP/big.hcrp" "$TMP/bm" -o maxdecode=1M || die "mount"
write_fails "big chunk past -o maxdecode: its text" "Input/output error" \
	cat "$TMP/bm/chunks/000000.txt"
M=$TMP/bm log_has "big chunk past -o maxdecode: the reason" \
	"chunk 0: 21886336 bytes decompressed, more than the decode limit"
umount_sv "$TMP/bm"

finish
