#!/bin/bash
# nethack.sh - NetHack 4 game logs mounted for real.
#
#   - the real logs of ../shared/samples/nethack4 (when present): header
#     fields, lines by kind, every state equal to the independent decoder's
#     (nhdecode.py), grep over transcript.txt;
#   - logs from mknhgame with beta1, beta2, beta3 and mixed diffs, many
#     backups, a bones line, recovery count 3: every states/ file equals the
#     writer's own truth (--states), every save equals the state before it;
#   - appends with >>: valid lines land (a diff's state appears), invalid
#     ones are refused with EINVAL and change nothing; a torn tail is
#     recovered first; an unfinished line is refused at close;
#   - a second process appending while mounted: its lines appear within a
#     second; a game holding its read lock is asked to let go and to lock
#     again (nhlockgame.py); the daemon survives SIGRTMIN+0..4;
#   - rewind by truncate to a line start (recovery count + 1), and every
#     other truncation refused; a read-only mount refuses appends.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKNHGAME" ] || die "MKNHGAME=$MKNHGAME is not an executable (build first)"
NHDECODE="$SRC_ROOT/tests/tools/nhdecode.py"
LOCKGAME="$SRC_ROOT/tests/tools/nhlockgame.py"

# line_off FILE N: the byte offset where line N starts.
line_off()
{
	head -n $(($2 - 1)) -- "$1" | wc -c
}

# kind_counts LOG: "kind count" lines by the first character of each body
# line, counted here with awk (not savefs).
kind_counts()
{
	awk 'BEGIN {
		split("* ~ + P D K Y M O L B Q", c, " ")
		split("backup diff time getpos getdir key yesno menu objmenu text bones gameover", k, " ")
		for (i in c) kind[c[i]] = k[i]
	}
	NR > 3 {
		f = substr($0, 1, 1)
		if (f in kind) n[kind[f]]++
		else if (f ~ /[a-z]/) n["command"]++
		else n["bad"]++
	}
	END { for (x in n) print x, n[x] }' "$1" | sort
}

info_counts()
{
	"$PYTHON" -c 'import json,sys
for k, v in sorted(json.load(open(sys.argv[1]))["kinds"].items()): print(k, v)' "$1"
}

# check_states LOG MNT TRUTH: every states/ file (and save) equals TRUTH's.
check_states()
{
	local log=$1 m=$2 truth=$3 name
	expect_eq "$log: states listed" "$(ls "$truth")" "$(ls "$m/states")"
	CHECKS=$((CHECKS + 1))
	diff -r "$truth" "$m/states" > "$TMP/states.diff" 2>&1 ||
		{ fail "$log: states differ from the truth"; head -5 "$TMP/states.diff"; }
	for name in $(ls "$m/saves"); do
		expect_same_file "$log: saves/$name is the state of its line" \
			"$truth/$name" "$m/saves/$name"
	done
}

# ---- the real logs --------------------------------------------------------------

if [ -d "$SAMPLES/nethack4" ]; then
	for f in "$SAMPLES"/nethack4/*.nhgame; do
		n=$(basename "$f" .nhgame)
		cp "$f" "$TMP/$n.nhgame"
		chmod 644 "$TMP/$n.nhgame"
		m="$TMP/m-$n"
		mount_sv "$TMP/$n.nhgame" "$m" || continue
		expect_eq "$n: version" 4.003.000 "$(json_field "$m/header.json" version)"
		expect_eq "$n: recovery count" 1 "$(json_field "$m/header.json" recovery_count)"
		expect_eq "$n: status" "$(cut -c8-11 "$f" | head -1)" \
			"$(json_field "$m/header.json" status)"
		expect_eq "$n: status line" "$(sed -n '2s/^ *//p' "$f")" \
			"$(json_field "$m/header.json" status_line)"
		expect_eq "$n: player name" "$(sed -n 3p "$f" | cut -d' ' -f4 | base64 -d)" \
			"$(json_field "$m/header.json" player_name)"
		expect_eq "$n: lines by kind" "$(kind_counts "$f")" "$(info_counts "$m/.savefs/info")"
		expect_eq "$n: transcript lines" "$(wc -l < "$f")" "$(wc -l < "$m/transcript.txt")"
		expect_eq "$n: transcript size" "$(stat -c %s "$m/transcript.txt")" \
			"$(cat "$m/transcript.txt" | wc -c)"
		expect_same_file "$n: log is the file" "$f" "$m/log"
		rm -rf "$TMP/truth"
		check "$n: nhdecode.py decodes it" "$PYTHON" "$NHDECODE" states "$f" "$TMP/truth"
		check_states "$n" "$m" "$TMP/truth"
		expect_eq "$n: diffs" "$(grep -c '^~' "$f")" "$(ls "$m/diffs" | wc -l)"
		umount_sv "$m"
	done
	m="$TMP/m-saved"
	mount_sv "$TMP/nh4-4.3.0_saved_barbarian.nhgame" "$m" && {
		expect_eq "grep finds the engraving" \
			'000062 2026-11-22T05:23:04.557558Z text     "Elbereth"' \
			"$(grep -h Elbereth "$m/transcript.txt")"
		expect_eq "grep -r over the mount finds the limit" \
			"$m/transcript.txt:000116 2026-11-22T05:23:35.817928Z command  search: limit 20" \
			"$(grep -r 'limit 20' "$m")"
		umount_sv "$m"
	}
else
	printf 'skipping the real logs: %s/nethack4 not found\n' "$SAMPLES"
fi

# ---- generated logs -----------------------------------------------------------------

for d in beta1 beta2 beta3 mixed; do
	g="$TMP/gen-$d.nhgame"
	rm -rf "$TMP/truth-$d"
	check "mknhgame --diff $d" "$MKNHGAME" "$g" --diff "$d" --turns 60 --backup-every 12 \
		--bones --seed 7 --states "$TMP/truth-$d"
	m="$TMP/m-$d"
	mount_sv "$g" "$m" || continue
	check_states "$d" "$m" "$TMP/truth-$d"
	expect_eq "$d: lines by kind" "$(kind_counts "$g")" "$(info_counts "$m/.savefs/info")"
	expect_eq "$d: backups" "$(grep -c '^\*' "$g")" "$(ls "$m/saves" | wc -l)"
	expect_eq "$d: transcript lines" "$(wc -l < "$g")" "$(wc -l < "$m/transcript.txt")"
	expect_eq "$d: no warnings" "[]" "$(json_field "$m/.savefs/info" warnings)"
	umount_sv "$m"
done

# ---- entries made when used, let go when the kernel forgets them --------------------

g="$TMP/gen-beta3.nhgame"
m="$TMP/m-nodes"
if mount_sv "$g" "$m" -o ro; then
	nodes() { json_field "$m/.savefs/info" nodes; }
	states=$(grep -c '^[*~]' "$g")
	base=$(nodes)
	expect_eq "states/ lists every backup and diff" "$states" "$(ls "$m/states" | wc -l)"
	expect_eq "a listing makes no node per entry" "$base" "$(nodes)"
	expect_eq "info counts the files the mount shows" \
		"$(find "$m" -mindepth 1 -path "$m/.savefs" -prune -o -type f -print | wc -l)" \
		"$(json_field "$m/.savefs/info" files)"
	first=$(ls "$m/states" | head -1)
	cat "$m"/states/* > /dev/null
	held=$(nodes)
	check "reading the states made their nodes ($base -> $held)" test "$held" -ge $((base + states))
	expect_same_file "a state read again is the same" "$TMP/truth-beta3/$first" "$m/states/$first"
	if [ -w /proc/sys/vm/drop_caches ]; then
		# The kernel drops its unused entries and inodes and forgets
		# them: their nodes go.
		gone() { sync; echo 2 > /proc/sys/vm/drop_caches; [ "$(nodes)" -lt "$held" ]; }
		wait_for "the nodes of forgotten entries go" gone
		expect_same_file "a state looked up again reads the same" \
			"$TMP/truth-beta3/$first" "$m/states/$first"
		check_states beta3-again "$m" "$TMP/truth-beta3"
	else
		printf 'skipping the forget checks: /proc/sys/vm/drop_caches is not writable\n'
	fi
	umount_sv "$m"
fi

# ---- the scan kept between mounts (the persistent index) ----------------------------

export XDG_CACHE_HOME=$TMP/index-cache
IDX=$XDG_CACHE_HOME/savefs
g="$TMP/idx.nhgame"
cp "$TMP/gen-mixed.nhgame" "$g"
# A line of no known kind: a warning the scan finds, which the record keeps.
sed -i '20s/^/Zq/' "$g"
# info_of [OPTS] LOG: savefs info without what changes from run to run.
info_of()
{
	sv info "$@" | "$PYTHON" -c 'import json,sys
d = json.load(sys.stdin)
for k in ("cache", "fingerprinted", "nodes", "spilled"): d.pop(k, None)
print(json.dumps(d, indent=1, sort_keys=True))'
}
info_of -o noindex "$g" > "$TMP/info.want"
sv extract -o noindex "$g" "$TMP/x-want" > /dev/null
check "the log warns of its bad line" grep -q 'line 20 (byte [0-9]*): a line of an unknown kind' "$TMP/info.want"
expect_eq "-o noindex keeps nothing" "" "$(ls -A "$IDX" 2> /dev/null)"
expect_same_text "the first scan" "$TMP/info.want" <(info_of "$g")
expect_eq "one record kept" 1 "$(ls "$IDX" | wc -l)"
rec=$IDX/$(ls "$IDX")
touch -d '2001-01-01' "$rec"
rec_ino=$(stat -c %i "$rec")
expect_same_text "the second open, from the record: the same info and warnings" \
	"$TMP/info.want" <(info_of "$g")
sv extract "$g" "$TMP/x-rec" > /dev/null
check "the second open, from the record: the same files" diff -r "$TMP/x-want" "$TMP/x-rec"
check "the record was used (its time of use moved)" test "$(stat -c %Y "$rec")" -gt 978307200
expect_eq "the record was not made again" "$rec_ino" "$(stat -c %i "$rec")"
truncate -s 100 "$rec"
expect_same_text "a damaged record: scanned again" "$TMP/info.want" <(info_of "$g")
check "and the record made again" test "$(stat -c %s "$rec")" -gt 100
echo search >> "$g"
info_of -o noindex "$g" > "$TMP/info.want2"
check "the log with a line more has other info" \
	sh -c '! cmp -s "$1" "$2"' _ "$TMP/info.want" "$TMP/info.want2"
expect_same_text "a changed log: its own scan" "$TMP/info.want2" <(info_of "$g")
m="$TMP/m-idx"
if mount_sv "$g" "$m" -o ro; then
	check_states idx-mount "$m" "$TMP/truth-mixed"
	umount_sv "$m"
fi
unset XDG_CACHE_HOME

# ---- a big log: its details found on first need ----------------------------------------
# (a log over 8 MB: the open reads its entries; the running time, the
# transcript, the kinds and other lines' warnings wait for a reader)

g="$TMP/big.nhgame"
check "mknhgame --size 9000000" "$MKNHGAME" "$g" --size 9000000 --backup-every 50 --seed 5
# A command line far in made a line of no known kind (its size kept, so
# that every offset after it stays): a warning only the details find.
bad=$(awk 'NR > 300 && /^[a-z]/ { print NR; exit }' "$g")
sed -i "${bad}s/^./Z/" "$g"
export XDG_CACHE_HOME=$TMP/index-big
info_of -o noindex "$g" > "$TMP/big.want"
sv cat -o noindex "$g" transcript.txt > "$TMP/big.transcript"
check "the details' warning" grep -q "line $bad (byte [0-9]*): a line of an unknown kind" "$TMP/big.want"
expect_eq "the transcript has a line per line" "$(wc -l < "$g")" "$(wc -l < "$TMP/big.transcript")"
m="$TMP/m-big"
if mount_sv "$g" "$m"; then
	expect_eq "states listed before the details" "$(grep -c '^[*~]' "$g")" "$(ls "$m/states" | wc -l)"
	expect_same_file "the transcript, read whole" "$TMP/big.transcript" "$m/transcript.txt"
	expect_eq "its size once read" "$(stat -c %s "$TMP/big.transcript")" \
		"$(stat -c %s "$m/transcript.txt")"
	"$PYTHON" -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in ("cache", "fingerprinted", "nodes", "read_only", "spilled"): d.pop(k, None)
print(json.dumps(d, indent=1, sort_keys=True))' "$m/.savefs/info" > "$TMP/big.mounted"
	expect_same_text "the mount's info: the same kinds and warnings" \
		<(grep -v '"read_only"' "$TMP/big.want") "$TMP/big.mounted"
	check "an append after the details" sh -c "echo 'search L5' >> '$m/log'"
	expect_eq "the transcript shows it" "command  search: limit 5" \
		"$(tail -1 "$m/transcript.txt" | cut -d' ' -f3-)"
	umount_sv "$m"
fi
# The appended line is in the file: its record, made at the mount's
# details, is stale; a fresh look makes another, which a second open uses.
info_of -o noindex "$g" > "$TMP/big.want2"
expect_same_text "a first open with the index" "$TMP/big.want2" <(info_of "$g")
expect_same_text "a second open, from the record" "$TMP/big.want2" <(info_of "$g")
expect_eq "the record kept" 1 "$(ls "$XDG_CACHE_HOME/savefs" | wc -l)"
unset XDG_CACHE_HOME

g="$TMP/rec.nhgame"
check "mknhgame --recovery 3 --done" "$MKNHGAME" "$g" --recovery 3 --done --turns 5
m="$TMP/m-rec"
if mount_sv "$g" "$m"; then
	expect_eq "recovery count 3" 3 "$(json_field "$m/header.json" recovery_count)"
	expect_eq "status done" done "$(json_field "$m/header.json" status)"
	expect_eq "the game is over" gameover "$(tail -1 "$m/transcript.txt" | awk '{print $3}')"
	echo search >> "$m/log" 2> "$TMP/err"
	expect_eq "nothing follows a Q line" "Invalid argument" "$(sed 's/.*: //' "$TMP/err")"
	umount_sv "$m"
fi

# ---- appending ------------------------------------------------------------------------

g="$TMP/app.nhgame"
check "mknhgame for appends" "$MKNHGAME" "$g" --turns 8 --seed 3
cp "$g" "$TMP/app.orig"
m="$TMP/m-app"
mount_sv "$g" "$m" || die "cannot mount $g"
lines=$(wc -l < "$g")

check "a command appends" sh -c "echo 'search L5' >> '$m/log'"
expect_eq "the file grew by that line" "search L5" "$(tail -1 "$g")"
expect_eq "the transcript shows it" \
	"$(printf '%06d' $((lines + 1))) command  search: limit 5" \
	"$(tail -1 "$m/transcript.txt" | cut -d' ' -f1,3-)"
expect_eq "the log's size follows" "$(stat -c %s "$g")" "$(stat -c %s "$m/log")"

cp "$g" "$TMP/before"
for bad in 'Zbad' 'search X1' '+12g' 'D11' 'M2' '~@@@@' '*00000000 AAAA' 'L%%%%'; do
	printf '%s\n' "$bad" >> "$m/log" 2> "$TMP/err"
	expect_eq "'$bad' is refused" "Invalid argument" "$(sed 's/.*: //' "$TMP/err")"
done
expect_same_file "refused lines change nothing" "$TMP/before" "$g"
check "the log says why (unknown kind)" grep -q "refused log: line $((lines + 2)): a line of an unknown kind" "$m/.savefs/log"
check "the log says why (argument)" grep -q "a command argument of an unknown kind" "$m/.savefs/log"

# Two lines in one write: both land, or (one bad) neither.
printf 'search\nZbad\n' > "$TMP/two"
cat "$TMP/two" >> "$m/log" 2> /dev/null && fail "a write with a bad line was accepted"
expect_same_file "a write with a bad line appends nothing" "$TMP/before" "$g"
printf 'search\n+1f\n' > "$TMP/two"
check "two lines in one write" sh -c "cat '$TMP/two' >> '$m/log'"
expect_eq "both landed" "search+1f" "$(tail -2 "$g" | tr -d '\n')"

# A diff line: made by mknhgame from the last state to a new save.
last=$(ls "$m/states" | tail -1)
cp "$m/states/$last" "$TMP/prev.sav"
head -c 300 /dev/urandom > "$TMP/extra"
cat "$TMP/prev.sav" "$TMP/extra" > "$TMP/next.sav"
"$MKNHGAME" diffline "$TMP/prev.sav" "$TMP/next.sav" > "$TMP/diff.line" ||
	fail "mknhgame diffline failed"
check "a diff line appends" sh -c "cat '$TMP/diff.line' >> '$m/log'"
n=$(wc -l < "$g")
expect_same_file "its state is the new save" "$TMP/next.sav" "$m/states/$(printf '%06d' "$n").sav"
# A diff made from another save of the same size does not give the save
# its CRC was made for.
{ printf X; tail -c +2 "$TMP/next.sav"; } > "$TMP/other.sav"
cmp -s "$TMP/other.sav" "$TMP/next.sav" && { printf Y; tail -c +2 "$TMP/next.sav"; } > "$TMP/other.sav"
{ cat "$TMP/other.sav"; printf zz; } > "$TMP/other2.sav"
"$MKNHGAME" diffline "$TMP/other.sav" "$TMP/other2.sav" > "$TMP/stale.line"
cp "$g" "$TMP/before"
cat "$TMP/stale.line" >> "$m/log" 2> /dev/null &&
	fail "a diff that does not apply to the last state was appended"
expect_same_file "the stale diff changed nothing" "$TMP/before" "$g"
check "the log says the diff does not apply" grep -q "the diff does not apply to the last save" "$m/.savefs/log"

# An unfinished line is refused when the file is closed.
# (dd reports an error at close; a shell's >> does not look.)
printf 'sear' | dd of="$m/log" oflag=append conv=notrunc status=none 2> "$TMP/err" &&
	fail "an unfinished line was accepted at close"
expect_eq "dd is told at close" "dd: closing output file '$m/log': Invalid argument" "$(cat "$TMP/err")"
expect_same_file "the unfinished line changed nothing" "$TMP/before" "$g"
check "the log says why" grep -q "without a newline at the end" "$m/.savefs/log"
expect_eq "its size is back" "$(stat -c %s "$g")" "$(stat -c %s "$m/log")"

# A write that is not at the end.
printf 'X' | dd of="$m/log" bs=1 seek=100 conv=notrunc 2> /dev/null &&
	fail "a write inside the log was accepted"
expect_same_file "a write inside changed nothing" "$TMP/before" "$g"

# ---- another process appending, a game holding its lock ----------------------------------

echo search >> "$g"
wait_for "a line appended by another process shows" \
	sh -c "tail -1 '$m/transcript.txt' | cut -d' ' -f3- | grep -qx 'command  search'" ||
	{ tail -3 "$m/.savefs/log"; stat -c %s "$g" "$m/log"; tail -2 "$g"; }
wait_for "the log follows" sh -c "test \$(stat -c %s '$g') = \$(stat -c %s '$m/log')"
"$MKNHGAME" diffline "$m/states/$(ls "$m/states" | tail -1)" "$TMP/prev.sav" >> "$g"
n=$(wc -l < "$g")
wait_for "a diff appended by another process shows in states/" \
	cmp -s "$TMP/prev.sav" "$m/states/$(printf '%06d' "$n").sav"

rm -f "$TMP/report"
timeout 300 "$PYTHON" "$LOCKGAME" "$g" "$TMP/report" &
game=$!
wait_for "the game holds its lock" grep -q locked "$TMP/report"
check "an append while the game holds its read lock" sh -c "echo search >> '$m/log'" ||
	tail -3 "$m/.savefs/log"
expect_eq "the game was asked to let go, and told to lock again" \
	"released for ${SV_PID[$(realpath "$m")]}, relocked on signal" "$(sed -n 2p "$TMP/report")"
expect_eq "the line landed" search "$(tail -1 "$g")"
kill "$game"
wait "$game" 2> /dev/null

pid=${SV_PID[$(realpath "$m")]}
for k in 0 1 2 3 4; do
	kill -s "RTMIN+$k" "$pid"
	# (the daemon answers a queued +0/+1 with +4, which ends this kill)
	( /bin/kill -q 0 -s "RTMIN+$k" "$pid" & wait ) 2> /dev/null
done
check "the daemon survives SIGRTMIN+0..4" kill -0 "$pid"
check "and still reads" cat "$m/header.json" > /dev/null

# ---- rewind --------------------------------------------------------------------------------

n=$(wc -l < "$g")
cut_line=$((n - 5))
off=$(line_off "$g" "$cut_line")
truncate -s $((off + 1)) "$m/log" 2> /dev/null && fail "a truncation inside a line was accepted"
: > "$m/log" 2> /dev/null && fail "emptying the log was accepted"
expect_eq "refused truncations changed nothing" "$n" "$(wc -l < "$g")"
check "truncate to a line start rewinds" truncate -s "$off" "$m/log"
expect_eq "the file ends before that line" "$off" "$(stat -c %s "$g")"
expect_eq "the recovery count went up" "NHGAME save 00000002 4.003.000" "$(head -1 "$g")"
expect_eq "header.json follows" 2 "$(json_field "$m/header.json" recovery_count)"
expect_eq "the transcript follows" $((cut_line - 1)) "$(wc -l < "$m/transcript.txt")"
check "states past the cut are gone" test ! -e "$m/states/$(printf '%06d' "$n").sav"
umount_sv "$m"

# A rewind by another program (the game's own recovery): savefs starts over.
mount_sv "$g" "$m" || die "cannot mount $g again"
off=$(line_off "$g" $((cut_line - 3)))
printf 00000003 | dd of="$g" bs=1 seek=12 conv=notrunc status=none
truncate -s "$off" "$g"
wait_for "another program's rewind shows" \
	sh -c "test \$(wc -l < '$m/transcript.txt') = $((cut_line - 4))"
wait_for "header.json follows it" \
	sh -c "grep -q '\"recovery_count\": 3,' '$m/header.json'"
umount_sv "$m"

# ---- a torn tail, a read-only mount --------------------------------------------------------

g="$TMP/torn.nhgame"
check "mknhgame --torn" "$MKNHGAME" "$g" --turns 4 --torn
m="$TMP/m-torn"
mount_sv "$g" "$m" || die "cannot mount $g"
torn=$(($(stat -c %s "$g") - $(stat -c %s "$m/log")))
check "the torn tail is not shown" test "$torn" -gt 0
check "info warns of it" grep -q "after the last newline (an unfinished write)" "$m/.savefs/info"
check "an append recovers the tail first" sh -c "echo search >> '$m/log'"
expect_eq "the file was cut at its last newline, then appended" search "$(tail -1 "$g")"
expect_eq "with the recovery count up" "NHGAME save 00000002 4.003.000" "$(head -1 "$g")"
umount_sv "$m"

mount_sv "$g" "$m" -o ro || die "cannot mount $g read-only"
cp "$g" "$TMP/before"
{ echo search >> "$m/log"; } 2> "$TMP/err" && fail "a read-only mount took an append"
expect_eq "read-only: EROFS" "Read-only file system" "$(sed 's/.*: //' "$TMP/err")"
expect_same_file "read-only: unchanged" "$TMP/before" "$g"
umount_sv "$m"

# ---- files read one by one, far more than the budget's nodes ---------------------------------
# With -o cache=1M a mount keeps 4,096 nodes for its index directories' entries: past them each
# lookup has the kernel drop the oldest entry it holds, and the nodes follow back down.

g="$TMP/many.nhgame"
check "mknhgame --size 3000000" "$MKNHGAME" "$g" --size 3000000 --backup-every 50 \
	--save-size 4000 --seed 1
m="$TMP/m-many"
mount_sv "$g" "$m" || die "cannot mount $g"
n=$(ls "$m/diffs" | wc -l)
check "more diffs ($n) than 8,000" test "$n" -gt 8000
whole=$(cd "$m/diffs" && cat -- * | md5sum)
umount_sv "$m"
mount_sv "$g" "$m" -o cache=1M || die "cannot mount $g with -o cache=1M"
expect_eq "cat of every diff, 4,096 nodes" "$whole" "$(cd "$m/diffs" && cat -- * | md5sum)"
nodes_within() { test "$(json_field "$m/.savefs/info" nodes)" -le 4096; }
wait_for "the nodes are back within the budget" nodes_within
expect_eq "and again, dropped entries looked up anew" "$whole" \
	"$(cd "$m/diffs" && cat -- * | md5sum)"
wait_for "within the budget again" nodes_within
umount_sv "$m"

finish
