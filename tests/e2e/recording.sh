#!/bin/bash
# recording.sh - replay recordings, one compacted file or a segmented
# directory, mounted for real.
#
#   - the synthetic samples of ../shared/samples/recording (when present):
#     every view of both layouts equal to the independent decoder's
#     (rcdecode.py: header, index, metadata, every chunk's payload and text,
#     the timeline, the state at every chunk start and at random ticks);
#   - the mount with ordinary tools: the listing, timeline.txt equal to the
#     chunks' text in order, grep of an event across chunks/*.txt, any tick
#     opened by name under at/ (and the listing unchanged by it), both
#     event tables;
#   - compacted.hcrp of a segmented recording copied with cp: the copy
#     mounts, and every chunk's view equals the directory's;
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
[ -d "$R" ] || skip "$R not found"
COMP="$R/SYNTHETIC-compacted.hcrp"

# expect_exit DESC CODE MESSAGE CMD...: exit code and the whole stderr.
expect_exit()
{
	local desc=$1 code=$2 msg=$3
	shift 3
	"$@" > /dev/null 2> "$TMP/err" < /dev/null
	expect_eq "$desc: exit code" "$code" "$?"
	expect_eq "$desc: message" "$msg" "$(cat "$TMP/err")"
	san_check "$desc" "$TMP/err"
}
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
mount_sv "$SEG" "$M" || die "cannot mount $SEG"
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
check "writes are refused (read-only sample)" \
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

# ---- refusals ----------------------------------------------------------
mkdir -p "$TMP/notrec"
echo hello > "$TMP/notrec/readme"
expect_exit "a directory that is no recording" 4 \
	"savefs: $TMP/notrec: is a directory, and not one savefs knows (see --formats)" \
	"$SAVEFS" info "$TMP/notrec"
for v in 3 5; do
	cp "$COMP" "$TMP/v$v.hcrp"
	printf "\\x00\\x0$v" | dd of="$TMP/v$v.hcrp" bs=1 seek=4 conv=notrunc 2> /dev/null
	expect_exit "format version $v" 5 \
		"savefs: $TMP/v$v.hcrp: recording: byte 4: format version $v; savefs reads version 4" \
		"$SAVEFS" info "$TMP/v$v.hcrp"
done
expect_exit "an unknown event table" 2 \
	"savefs: events=other: the event tables are builtin and parkour" \
	"$SAVEFS" info -o events=other "$COMP"

finish
