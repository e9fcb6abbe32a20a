# lib.sh - the harness every end-to-end test sources.
#
# The tests mount for real (savefs -f in the background) and look at the
# mount with ordinary tools only.  This file gives them:
#   mount_sv CONTAINER MNT [savefs options]  mount, wait (bounded) for
#                               MNT/.savefs/info, remember it for cleanup
#   umount_sv MNT               clean unmount; fails the test if the daemon
#                               did not exit 0 or its stderr holds a
#                               sanitizer report
#   sv ARGS...                  the savefs command line, stderr checked the
#                               same way
#   check / expect_eq / expect_same_file / fail / skip / finish
#   tree_listing DIR            the golden-style listing of a tree
#   check_golden NAME LISTING   compare with tests/golden/datafile/NAME.tree
#   check_decoder CONTAINER DIR compare a tree with tests/tools/dfdecode.py
#
# Whatever happens (a failed check, die, a signal, a plain `exit`), the
# EXIT trap unmounts everything (fusermount3 -u -z), stops the daemons it
# started (by pid), checks their stderr for sanitizer reports, and removes
# the scratch directory.  Exit status: 0 pass, 1 fail, 77 skip (meson).
#
# Paths come from the environment (meson sets them); the defaults let a
# script run by hand from the source tree after `ninja -C build`.
# SV_KEEP=1 keeps the scratch directory (daemon logs, listings) for a look.

set -u
set -o pipefail
export LC_ALL=C

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_ROOT=$(cd "$E2E_DIR/../.." && pwd)
: "${SAVEFS:=$SRC_ROOT/build/fs/savefs}"
: "${MKDATAFILE:=$SRC_ROOT/build/tests/mkdatafile}"
: "${SAMPLES:=$SRC_ROOT/../shared/samples}"
: "${DFDECODE:=$SRC_ROOT/tests/tools/dfdecode.py}"
: "${MAPDECODE:=$SRC_ROOT/tests/tools/mapdecode.py}"
: "${SBDECODE:=$SRC_ROOT/tests/tools/sbdecode.py}"
: "${GOLDEN:=$SRC_ROOT/tests/golden}"
: "${PYTHON:=python3}"
# Seconds to wait for a mount to appear and for a daemon to exit.
: "${SV_WAIT:=60}"

TEST_NAME=$(basename "$0" .sh)
FAILS=0
CHECKS=0
declare -A SV_PID=()   # mount point -> daemon pid
declare -A SV_LOG=()   # mount point -> daemon stderr
declare -A SV_ARGS=()  # mount point -> "container<TAB>options" for remount
SV_NLOG=0

TMP=$(mktemp -d "${TMPDIR:-/tmp}/savefs-$TEST_NAME.XXXXXX") || exit 1
# The persistent index of the mounts and commands run here: their own.
export XDG_CACHE_HOME=$TMP/cache

# ---- reporting ---------------------------------------------------------

fail()
{
	FAILS=$((FAILS + 1))
	printf 'FAIL: %s\n' "$*"
}

# A failure after which the test cannot go on.
die()
{
	fail "$*"
	exit 1
}

# skip REASON: the test cannot run here (a tool or a device missing).
# Under SAVEFS_TEST_STRICT=1 (CI, where scripts/test installed them all)
# that is a failure: a run without FUSE, nginx or radosgw must not pass.
skip()
{
	if [ "${SAVEFS_TEST_STRICT:-0}" = 1 ]; then
		printf 'FAIL: %s (SAVEFS_TEST_STRICT=1: nothing may be skipped for lack of it)\n' "$*"
		exit 1
	fi
	printf 'SKIP: %s\n' "$*"
	exit 77
}

# skip_samples REASON: the real sample files are not here; they are not
# part of the project, so even a strict run skips.
skip_samples()
{
	printf 'SKIP: %s\n' "$*"
	exit 77
}

# check DESC CMD [ARGS...]: runs the command; a non-zero status fails.
check()
{
	local desc=$1
	shift
	CHECKS=$((CHECKS + 1))
	"$@"
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$desc: not so (\`$*\` exited with status $rc)"
		return 1
	fi
	return 0
}

# expect_eq DESC EXPECTED ACTUAL
expect_eq()
{
	CHECKS=$((CHECKS + 1))
	if [ "$2" != "$3" ]; then
		fail "$1"
		printf '    expected: %s\n    actual:   %s\n' "$2" "$3"
		return 1
	fi
	return 0
}

# wait_for DESC CMD...: runs CMD every 0.1 s for up to 2 s until it succeeds
# (CMD is run each time: pass what it reads inside it, not as "$(...)").
wait_for()
{
	local desc=$1 i
	shift
	CHECKS=$((CHECKS + 1))
	for i in $(seq 300); do
		"$@" > /dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "$desc: not so within 30 s (\`$*\`)"
	return 1
}

# json_field FILE KEY: a top-level field of a JSON file.
json_field()
{
	"$PYTHON" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1" "$2"
}

# expect_same_file DESC EXPECTED_FILE ACTUAL_FILE: byte for byte.
expect_same_file()
{
	CHECKS=$((CHECKS + 1))
	if ! cmp -s -- "$2" "$3"; then
		fail "$1"
		local es as
		es=$(stat -c '%s bytes' -- "$2" 2> /dev/null || echo missing)
		as=$(stat -c '%s bytes' -- "$3" 2> /dev/null || echo missing)
		printf '    expected: %s, sha256 %s\n' "$es" \
			"$(sha256sum -- "$2" 2> /dev/null | cut -c1-64)"
		printf '    actual:   %s, sha256 %s (%s)\n' "$as" \
			"$(sha256sum -- "$3" 2> /dev/null | cut -c1-64)" "$3"
		printf '    %s\n' "$(cmp -- "$2" "$3" 2>&1 | head -1)"
		return 1
	fi
	return 0
}

# expect_same_text DESC EXPECTED_FILE ACTUAL_FILE: shows a diff.
expect_same_text()
{
	CHECKS=$((CHECKS + 1))
	if ! diff -u -- "$2" "$3" > "$TMP/diff.out" 2>&1; then
		fail "$1"
		head -n 40 "$TMP/diff.out" | sed 's/^/    /'
		return 1
	fi
	return 0
}

# A command the script runs that does not exist (a helper not defined
# here, a tool not installed) fails the test: bash would say so on stderr
# and go on with an empty result, and a check built on it could pass or
# be skipped unseen.  Bash runs this handler in a subshell: the failure is
# counted through a file.
command_not_found_handle()
{
	printf 'FAIL: no such command: %s\n' "$1" >&2
	printf '%s\n' "$1" >> "$TMP/.no-such-command"
	return 127
}

# Counts those failures (once).
_sv_unknown_commands()
{
	if [ -s "$TMP/.no-such-command" ]; then
		FAILS=$((FAILS + $(wc -l < "$TMP/.no-such-command")))
		: > "$TMP/.no-such-command"
	fi
}

# The end of a test script: the EXIT trap turns FAILS into the status.
finish()
{
	_sv_unknown_commands
	if [ "$FAILS" -gt 0 ]; then
		printf '%s: %d of %d checks failed\n' "$TEST_NAME" "$FAILS" "$CHECKS"
		exit 1
	fi
	printf '%s: %d checks passed\n' "$TEST_NAME" "$CHECKS"
	exit 0
}

# ---- sanitizer reports -------------------------------------------------

SAN_RE='ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer'

# san_check WHAT LOGFILE: fails if the log holds a sanitizer report.
san_check()
{
	if [ -s "$2" ] && grep -Eq "$SAN_RE" "$2"; then
		fail "sanitizer report from $1 (stderr: $2):"
		grep -E -A30 "$SAN_RE" "$2" | head -n 60 | sed 's/^/    /'
		return 1
	fi
	return 0
}

# sv ARGS...: runs the savefs command line; stdout is passed through, stderr
# is shown and checked for sanitizer reports; returns its exit status.
sv()
{
	local err="$TMP/cli.stderr"
	"$SAVEFS" "$@" 2> "$err"
	local rc=$?
	[ -s "$err" ] && cat "$err" >&2
	san_check "savefs $*" "$err"
	return $rc
}

# expect_exit DESC CODE MESSAGE CMD...: exit code and the whole stderr.
expect_exit()
{
	local desc=$1 code=$2 msg=$3
	shift 3
	"$@" > /dev/null 2> "$TMP/err" < /dev/null
	expect_eq "$desc: exit code" "$code" "$?"
	[ "$msg" = "-" ] || expect_eq "$desc: message" "$msg" "$(cat "$TMP/err")"
	san_check "$desc" "$TMP/err"
}

# write_fails DESC TEXT CMD...: CMD fails and its stderr holds TEXT.
write_fails()
{
	local desc=$1 want=$2
	shift 2
	CHECKS=$((CHECKS + 1))
	if "$@" 2> "$TMP/err.out"; then
		fail "$desc: \`$*\` succeeded"
		return 1
	fi
	if ! grep -q -- "$want" "$TMP/err.out"; then
		fail "$desc: expected \"$want\", got: $(cat "$TMP/err.out")"
		return 1
	fi
}

# log_has DESC TEXT: the log of the mount at $M holds a line with TEXT
# ($LABEL, when set, prefixes the message).
# read_fails_eio DESC FILE: reading FILE fails with EIO, within 120 s (a
# read of a remote container whose server is gone: no hang).
read_fails_eio()
{
	CHECKS=$((CHECKS + 1))
	if timeout 120 cat "$2" > /dev/null 2> "$TMP/err"; then
		fail "$1: $2 read"
	elif [ $? -eq 124 ]; then
		fail "$1: a read of $2 hung"
	else
		grep -q "Input/output error" "$TMP/err" || fail "$1: not EIO: $(cat "$TMP/err")"
	fi
}

log_has()
{
	CHECKS=$((CHECKS + 1))
	if ! grep -qF -- "$2" "$M/.savefs/log"; then
		fail "${LABEL:+$LABEL: }$1: the log lacks \"$2\":"
		tail -n 5 "$M/.savefs/log" | sed 's/^/    /'
		return 1
	fi
}

# ---- mounting ----------------------------------------------------------

is_mounted()
{
	grep -q " $(realpath -m -- "$1") fuse" /proc/mounts
}

# mount_sv CONTAINER MNT [savefs options...]
mount_sv()
{
	local c=$1 m=$2
	shift 2
	mkdir -p -- "$m" || die "cannot create mount point $m"
	m=$(realpath -- "$m")
	if [ -n "${SV_PID[$m]:-}" ]; then
		fail "mount_sv: $m is already mounted by this test"
		return 1
	fi
	SV_NLOG=$((SV_NLOG + 1))
	local log="$TMP/daemon.$SV_NLOG.log"
	"$SAVEFS" -f "$@" "$c" "$m" 2> "$log" < /dev/null &
	local pid=$!
	SV_PID[$m]=$pid
	SV_LOG[$m]=$log
	SV_ARGS[$m]="$c"$'\t'"$*"
	local tries=$((SV_WAIT * 20))
	while ! timeout 2 stat -c '' -- "$m/.savefs/info" > /dev/null 2>&1; do
		if ! kill -0 "$pid" 2> /dev/null; then
			wait "$pid"
			local rc=$?
			unset "SV_PID[$m]"
			fail "savefs exited with status $rc before $c was mounted on $m; its stderr:"
			sed 's/^/    /' "$log"
			san_check "savefs (mount of $c)" "$log"
			return 1
		fi
		tries=$((tries - 1))
		if [ "$tries" -le 0 ]; then
			fail "savefs did not mount $c on $m within ${SV_WAIT}s; its stderr:"
			sed 's/^/    /' "$log"
			stop_daemon "$m" lazy
			return 1
		fi
		sleep 0.05
	done
	return 0
}

# stop_daemon MNT clean|lazy: unmounts and waits (bounded) for the daemon;
# kills it by pid if it does not go.  Returns the daemon's exit status
# (255 if it had to be killed).  A daemon that is already gone is a failure.
stop_daemon()
{
	local m=$1 how=$2 pid=${SV_PID[$1]:-} rc
	[ -n "$pid" ] || return 0
	unset "SV_PID[$m]"
	if ! kill -0 "$pid" 2> /dev/null; then
		wait "$pid" 2> /dev/null
		rc=$?
		fail "savefs on $m exited by itself (status $rc) before it was unmounted; its stderr:"
		sed 's/^/    /' "${SV_LOG[$m]}"
		fusermount3 -u -z -- "$m" 2> /dev/null
		san_check "savefs daemon on $m" "${SV_LOG[$m]}"
		return $rc
	fi
	if [ "$how" = clean ]; then
		local _
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			fusermount3 -u -- "$m" 2> "$TMP/fusermount.err" && break
			is_mounted "$m" || break
			sleep 0.2
		done
		if is_mounted "$m"; then
			fail "fusermount3 -u $m failed: $(cat "$TMP/fusermount.err")"
			fusermount3 -u -z -- "$m" 2> /dev/null
		fi
	else
		fusermount3 -u -z -- "$m" 2> /dev/null
	fi
	local tries=$((SV_WAIT * 20))
	while kill -0 "$pid" 2> /dev/null && [ "$tries" -gt 0 ]; do
		sleep 0.05
		tries=$((tries - 1))
	done
	if kill -0 "$pid" 2> /dev/null; then
		[ "$how" = clean ] && fail "savefs (pid $pid) still running after unmounting $m"
		kill -TERM "$pid" 2> /dev/null
		sleep 0.5
		kill -KILL "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
		rc=255
	else
		wait "$pid" 2> /dev/null
		rc=$?
	fi
	san_check "savefs daemon on $m" "${SV_LOG[$m]}"
	return $rc
}

# umount_sv MNT: a clean unmount; the daemon must exit 0.
umount_sv()
{
	local m
	m=$(realpath -- "$1")
	stop_daemon "$m" clean
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "savefs on $m exited with status $rc; its stderr:"
		sed 's/^/    /' "${SV_LOG[$m]}"
		return 1
	fi
	return 0
}

# unchanged DESC: for the edit tests: nothing in the tree of mount $M nor
# the container $C changed since the snapshot ($W/before.tree and
# $W/container.before), in the mount and after a remount.  $LABEL prefixes
# the messages.
unchanged()
{
	local desc="$LABEL: $1"
	tree_listing "$M" > "$W/after.tree"
	expect_same_text "$desc: the tree changed" "$W/before.tree" "$W/after.tree"
	check "$desc: the container is unchanged on disk" cmp -s "$W/container.before" "$C"
	remount_sv "$M" || die "$desc: cannot remount"
	tree_listing "$M" > "$W/after2.tree"
	expect_same_text "$desc: the tree changed (after a remount)" "$W/before.tree" "$W/after2.tree"
}

# remount_sv MNT: unmount and mount the same container with the same options.
remount_sv()
{
	local m c opts
	m=$(realpath -- "$1")
	c=${SV_ARGS[$m]%%$'\t'*}
	opts=${SV_ARGS[$m]#*$'\t'}
	umount_sv "$m" || return 1
	# shellcheck disable=SC2086 # the options were split when first given
	mount_sv "$c" "$m" $opts
}

_sv_cleanup()
{
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	local m
	for m in "${!SV_PID[@]}"; do
		stop_daemon "$m" lazy
	done
	_sv_unknown_commands
	if [ "$FAILS" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; }; then
		rc=1
	fi
	if [ "$rc" -eq 1 ] && [ "$FAILS" -eq 0 ]; then
		printf 'FAIL: %s stopped early\n' "$TEST_NAME"
	fi
	# Never remove a tree that still has a mount in it.
	if grep -q " $TMP/" /proc/mounts; then
		printf 'warning: %s still has mounts; left in place\n' "$TMP"
	elif [ -n "${SV_KEEP:-}" ]; then
		printf 'scratch directory kept: %s\n' "$TMP"
	else
		rm -rf -- "$TMP"
	fi
	exit "$rc"
}
trap _sv_cleanup EXIT
trap 'fail "interrupted by a signal"; exit 1' INT TERM HUP

# ---- requirements ------------------------------------------------------

need_fuse()
{
	[ -x "$SAVEFS" ] || die "SAVEFS=$SAVEFS is not an executable (build first)"
	[ -c /dev/fuse ] || skip "/dev/fuse is not available"
	command -v fusermount3 > /dev/null || skip "fusermount3 is not installed"
}

# gzip_spaces FILE MIB: a gzip Sketchy Maze level, valid JSON, followed by
# MIB MiB of spaces: a few hundred KB that inflate past any limit.
gzip_spaces()
{
	"$PYTHON" - "$1" "$2" <<'PY'
import sys, zlib
c = zlib.compressobj(9, zlib.DEFLATED, 31)
out = open(sys.argv[1], 'wb')
out.write(c.compress(b'{"version": 1, "chunks": {"size": 8, "chunks": {}}, "palette": {"swatches": []}}'))
block = b' ' * (1 << 20)
for _ in range(int(sys.argv[2])):
    out.write(c.compress(block))
out.write(c.flush())
PY
}

# rss_bounded DESC FILE KB: the peak RSS /usr/bin/time wrote to FILE is
# under KB.  A ThreadSanitizer build's shadow memory is several times
# what it tracks, so there the bound is not checked (the plain and ASan
# builds check it) and a note says so.
rss_bounded()
{
	local rss
	rss=$(tail -n 1 "$2")
	if ldd "$SAVEFS" 2> /dev/null | grep libtsan > /dev/null; then # (grep -q under pipefail: ldd's SIGPIPE)
		printf 'note: %s: peak RSS %s kB not checked under ThreadSanitizer\n' "$1" "$rss"
		return 0
	fi
	check "$1 (peak RSS $rss kB)" test "$rss" -lt "$3"
}

need_samples()
{
	[ -d "$SAMPLES" ] || skip_samples "../shared/samples not found"
}

need_python()
{
	command -v "$PYTHON" > /dev/null || skip "$PYTHON is not installed"
}

# ---- tree listings -----------------------------------------------------

# tree_listing DIR: one line per node below DIR, except the root's .savefs:
#   d - - PATH                  a directory (its size depends on the host)
#   f SIZE SHA256 PATH          a file: SIZE from stat, SHA256 of its bytes
# sorted by path.  Fails if a file cannot be read.  TREE_PRUNE: a path
# ("./map") left out besides .savefs.
# same_trees DESC WANT GOT MIN: the trees under the mounts WANT and GOT
# list alike (names, sizes, every file's sha256), with more than MIN
# entries; the listings stay in $TMP/DESC.want and $TMP/DESC.got.
same_trees()
{
	local desc=$1 want=$2 got=$3 min=$4
	tree_listing "$want" > "$TMP/$desc.want" || fail "$desc: cannot list $want"
	tree_listing "$got" > "$TMP/$desc.got" || fail "$desc: cannot list $got"
	[ "$(wc -l < "$TMP/$desc.want")" -gt "$min" ] ||
		fail "$desc: only $(wc -l < "$TMP/$desc.want") entries listed (the fixture changed?)"
	expect_same_text "$desc: every name, size and file's bytes" "$TMP/$desc.want" "$TMP/$desc.got"
}

# tree_listing DIR: "f SIZE SHA256 PATH" for each file under DIR (d and ?
# lines for the rest), sorted by path.  When DIR is a mount of this test's
# (mount_sv), the listing is made twice: cold, then warm after a remount
# with the same options, where every view comes from what the first mount
# kept on disk (sizes and views: /.savefs/info's kept counts say none was
# built) and must list and read the same.  TREE_WARM=no lists once (a test
# that counts requests, or keeps the daemon it has), as does a call in a
# subshell.
tree_listing()
{
	local dir=$1 m rc=0
	_tree_listing_once "$dir" > /dev/null || rc=1
	cp -- "$TMP/listing.out" "$TMP/listing.cold"
	m=$(realpath -- "$dir" 2> /dev/null) || m=
	# (In a subshell, a pipe's or $(...)'s, the remount would be lost to
	# the test: listed once.)
	if [ "$rc" = 0 ] && [ "${TREE_WARM:-yes}" = yes ] && [ -n "$m" ] &&
	   [ -n "${SV_PID[$m]:-}" ] && [ "$BASHPID" = "$$" ]; then
		case ${SV_ARGS[$m]#*$'\t'} in
		*noindex*) ;;
		*) _tree_listing_warm "$dir" "$m" >&2 ;;
		esac
	fi
	cat -- "$TMP/listing.cold"
	return $rc
}

# (What the warm listing says goes to stderr: the caller's stdout is the
# listing.)
_tree_listing_warm()
{
	local dir=$1 m=$2 built
	remount_sv "$m" || { fail "tree_listing: cannot remount $m warm"; return 1; }
	_tree_listing_once "$dir" || return 1
	# (A container's own .savefs/info in a folder counts what its mount
	# did: not compared.)
	grep -v '/\.savefs/info$' "$TMP/listing.cold" > "$TMP/listing.cold-info"
	grep -v '/\.savefs/info$' "$TMP/listing.out" > "$TMP/listing.warm-info"
	expect_same_text "$m: the warm remount lists and reads differently from the cold mount" \
		"$TMP/listing.cold-info" "$TMP/listing.warm-info"
	# Built again: only views past their container's budget (none in
	# most tests' small containers).
	built=$(( $(kept_count "$m" views_built) - $(kept_count "$m" views_unkept) ))
	expect_eq "$m: views built by the warm remount that the cold one should have kept" 0 "$built"
}

# kept_count MNT FIELD: one of the counts under "kept" in MNT/.savefs/info
# (views and sizes kept between mounts).
kept_count()
{
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["kept"][sys.argv[2]])' \
		"$1/.savefs/info" "$2"
}

_tree_listing_once()
{
	local dir=$1 rc
	(
		cd -- "$dir" || exit 1
		find . -mindepth 1 \( -path ./.savefs -o -path "${TREE_PRUNE:-./.savefs}" \) -prune \
			-o -type f -print0 | xargs -0 -r sha256sum > "$TMP/listing.sha" || exit 1
		find . -mindepth 1 \( -path ./.savefs -o -path "${TREE_PRUNE:-./.savefs}" \) -prune -o \
			\( -type d -printf 'd - - %P\n' \) -o \
			\( -type f -printf 'f %s %P\n' \) -o -printf '? - - %P\n' \
			> "$TMP/listing.raw" || exit 1
	)
	rc=$?
	awk 'NR == FNR { p = substr($0, 67); sub(/^\.\//, "", p); h[p] = $1; next }
	     $1 != "f" { print; next }
	     { p = substr($0, length($1) + length($2) + 3)
	       print "f", $2, (p in h ? h[p] : "unreadable"), p }' \
		"$TMP/listing.sha" "$TMP/listing.raw" | sort -t ' ' -k 4 > "$TMP/listing.out"
	return $rc
}

# listing_paths A B: the paths whose lines differ between two listings.
listing_paths()
{
	diff -- "$1" "$2" | sed -n 's/^[<>] [^ ]* [^ ]* [^ ]* //p' | sort -u
}

# check_golden NAME LISTING: compares with $GOLDEN/datafile/NAME.tree.
check_golden()
{
	local g="$GOLDEN/datafile/$1.tree"
	if [ ! -f "$g" ]; then
		fail "no golden listing $g (run tests/golden/update.sh)"
		return 1
	fi
	expect_same_text "$1: the mounted tree differs from its golden listing $g" "$g" "$2"
}

# killed_during STEP LOCATION MNT CMD...: mounts LOCATION with its daemon set
# to die by SIGKILL at the commit step STEP, runs CMD (which commits), waits
# for the daemon and unmounts what it left; its exit status in KILLED_RC.
killed_during()
{
	local step=$1 c=$2 m=$3 pid
	shift 3
	SAVEFS_TEST_KILL_AT=$step mount_sv "$c" "$m" || die "cannot mount $c for the kill at $step"
	pid=${SV_PID[$(realpath "$m")]}
	"$@" 2> /dev/null
	wait "$pid" 2> /dev/null
	KILLED_RC=$?
	unset "SV_PID[$(realpath "$m")]"
	fusermount3 -u -z -- "$m" 2> /dev/null
}

# game_loads DESC CONTAINER: what savefs wrote passes the game's own loader
# rules: the independent decoders (mapdecode.py --loader, sbdecode.py
# check, ddecode.py), and DDNet's map_resave where installed.
: "${DDNET_TOOLS:=/usr/lib/x86_64-linux-gnu/ddnet}"
game_loads()
{
	CHECKS=$((CHECKS + 1))
	local out=$TMP/loader.out home=$TMP/ddnet-home
	case $2 in
	*.map)
		"$PYTHON" "$MAPDECODE" --loader "$2" > "$out" 2>&1 &&
			if [ -x "$DDNET_TOOLS/map_resave" ]; then
				# map_resave writes under ~/.local/share/ddnet.
				mkdir -p "$home/.local/share/ddnet"
				rm -f "$home/.local/share/ddnet/resaved.map"
				(cd "$(dirname "$2")" && HOME=$home "$DDNET_TOOLS/map_resave" \
					"$(basename "$2")" resaved.map) >> "$out" 2>&1 &&
					[ -s "$home/.local/share/ddnet/resaved.map" ]
			fi ;;
	*.world) "$PYTHON" "$SBDECODE" check "$2" > "$out" 2>&1 ;;
	*) rm -rf -- "$TMP/dd" && mkdir -p "$TMP/dd" && "$PYTHON" "$DDECODE" "$2" "$TMP/dd" > "$out" 2>&1 ;;
	esac || { fail "$1: the game's loader rules refuse $2: $(tail -3 "$out")"; return 1; }
}

# decoder_ok DESC FILE [--exact]: the Starbound file passes every loader
# rule of the independent reader.
decoder_ok()
{
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" "$SBDECODE" check "$2" ${3:-} > "$TMP/dec.out" 2>&1; then
		fail "$1: the independent reader rejects $2: $(cat "$TMP/dec.out")"
		return 1
	fi
}

# check_decoder CONTAINER DIR [LISTING]: every items/ and data/ file under
# DIR (a mount) equals what the independent decoder reads from CONTAINER,
# and neither has a file the other lacks.  Type directories "N-name" are
# compared with the decoder's "N".  LISTING, a tree_listing of DIR just
# made, saves reading the files again.
check_decoder()
{
	local c=$1 dir=$2 listing=${3:-} dec="$TMP/decoded"
	rm -rf -- "$dec"
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" "$DFDECODE" "$c" "$dec" > "$TMP/dfdecode.err" 2>&1; then
		fail "the independent decoder rejects $c: $(cat "$TMP/dfdecode.err")"
		return 1
	fi
	# "SHA256  PATH" lines, paths in the decoder's naming, sorted by path.
	if [ -n "$listing" ]; then
		awk '$1 == "f" && $4 ~ /^(items|data)\// { print $3 "  " substr($0, length($1) + length($2) + length($3) + 4) }' "$listing"
	else
		(cd -- "$dir" && find items data -type f -print0 | xargs -0 -r sha256sum)
	fi |
		sed -E 's#  items/([0-9]+)-[^/]*/#  items/\1/#' | sort -k 2 > "$TMP/dec.mount"
	(cd -- "$dec" && find items data -type f -print0 | xargs -0 -r sha256sum) |
		sort -k 2 > "$TMP/dec.want"
	if ! diff -u "$TMP/dec.want" "$TMP/dec.mount" > "$TMP/diff.out"; then
		fail "$c: files under $dir differ from the independent decoder's (--- decoder, +++ $dir; type dirs by number):"
		head -n 40 "$TMP/diff.out" | sed 's/^/    /'
		return 1
	fi
	# The map view, when the container is a map (MAP_CHECK=no: a suite
	# of the raw view that writes garbage into a map's items).
	[ "${MAP_CHECK:-yes}" = no ] && return 0
	CHECKS=$((CHECKS + 1))
	if ! "$PYTHON" "$MAPDECODE" --check "$c" "$dir" > "$TMP/mapdecode.out" 2>&1; then
		fail "$c: map/ under $dir differs from the independent map decoder's:"
		head -n 30 "$TMP/mapdecode.out" | sed 's/^/    /'
		return 1
	fi
	return 0
}

# ---- generated fixtures ------------------------------------------------

# The generated maps with their golden listings (mkdatafile is
# deterministic for a given --seed).  make_generated DIR writes them all:
#   gen-v4-dup.map   version 4, two UUID-index items with the same id,
#                    data item 1 empty, data items large enough to need
#                    several FUSE reads
#   gen-v3.map       the same converted to version 3 (raw data)
#   gen-atad.map     the same with the "ATAD" magic
#   gen-crude.map    the same with the old writers' short size fields
#   gen-map-*.map    maps (mkdatafile map): ddnet (every DDNet item and
#                    physics layer), tw07 (tilemap runs, version 3
#                    envelopes), legacy17 and legacy22 (DDRace's tilemaps
#                    and junk indices), ddnet-v3 (version 3 container,
#                    no settings)
GEN_FIXTURES="gen-v4-dup gen-v3 gen-atad gen-crude"
MAP_FIXTURES="gen-map-ddnet gen-map-tw07 gen-map-legacy17 gen-map-legacy22 gen-map-ddnet-v3"
GEN_ARGS="--data 8 --payload 600K --items 4 --dup-uuid --seed 1"

make_generated()
{
	local d=$1
	mkdir -p -- "$d"
	# shellcheck disable=SC2086
	"$MKDATAFILE" gen "$d/gen-v4-dup.map" $GEN_ARGS || return 1
	"$MKDATAFILE" convert "$d/gen-v4-dup.map" "$d/gen-v3.map" --version 3 || return 1
	"$MKDATAFILE" convert "$d/gen-v4-dup.map" "$d/gen-atad.map" --magic ATAD || return 1
	"$MKDATAFILE" convert "$d/gen-v4-dup.map" "$d/gen-crude.map" --crude || return 1
	local f
	for f in ddnet tw07 legacy17 legacy22; do
		"$MKDATAFILE" map "$d/gen-map-$f.map" --flavour "$f" --seed 2 || return 1
	done
	"$MKDATAFILE" map "$d/gen-map-ddnet-v3.map" --version 3 --no-settings --size 33x21 \
		--seed 3 || return 1
}

# ---- Sketchy Maze (doodle) helpers ------------------------------------------

: "${MKDOODLE:=$SRC_ROOT/build/tests/mkdoodle}"
: "${DDECODE:=$SRC_ROOT/tests/tools/ddecode.py}"

# check_golden_in FMT NAME LISTING: compares with $GOLDEN/FMT/NAME.tree
# (check_golden is check_golden_in datafile).
check_golden_in()
{
	local g="$GOLDEN/$1/$2.tree"
	if [ ! -f "$g" ]; then
		fail "no golden listing $g (run tests/golden/update.sh)"
		return 1
	fi
	expect_same_text "$2: the mounted tree differs from its golden listing $g" "$g" "$3"
}

# The text grids of a tree: chunks/<layer>/<x>,<y>.txt, and in a levelpack
# the same under levels/<name>/ and doodads/<name>/.
DOODLE_TXT_RE='^(levels/[^/]+/|doodads/[^/]+/)?chunks/[0-9]+/-?[0-9]+,-?[0-9]+\.txt$'

# check_ddecode CONTAINER DIR [LISTING [DECODED]]: every text grid under
# DIR (a mount or an extracted tree) equals what the independent decoder
# (tests/tools/ddecode.py) writes for CONTAINER, byte for byte, and neither
# has a chunk the other lacks.  LISTING, a tree_listing of DIR just made,
# saves reading the files again.  DECODED, a directory where the decoder
# has already written CONTAINER's grids (without an error), saves running
# it; otherwise its output is left in $TMP/ddecoded.
check_ddecode()
{
	local c=$1 dir=$2 listing=${3:-} dec=${4:-$TMP/ddecoded}
	CHECKS=$((CHECKS + 1))
	if [ -z "${4:-}" ]; then
		rm -rf -- "$dec"
		mkdir -p -- "$dec"
		if ! "$PYTHON" "$DDECODE" "$c" "$dec" > "$TMP/ddecode.err" 2>&1; then
			fail "the independent decoder rejects $c: $(cat "$TMP/ddecode.err")"
			return 1
		fi
	fi
	# "SHA256  PATH" lines, sorted by path.
	if [ -n "$listing" ]; then
		awk '$1 == "f" { print $3 "  " substr($0, length($1) + length($2) + length($3) + 4) }' "$listing"
	else
		(cd -- "$dir" && find . -path ./.savefs -prune -o -type f -name '*.txt' -printf '%P\0' |
			xargs -0 -r sha256sum)
	fi | awk -v re="$DOODLE_TXT_RE" '{ p = substr($0, 67) } p ~ re' | sort -k 2 > "$TMP/dd.mount"
	(cd -- "$dec" && find . -type f -printf '%P\0' | xargs -0 -r sha256sum) |
		sort -k 2 > "$TMP/dd.want"
	if ! diff -u "$TMP/dd.want" "$TMP/dd.mount" > "$TMP/diff.out"; then
		fail "$c: text grids under $dir differ from the independent decoder's (--- decoder, +++ $dir):"
		head -n 40 "$TMP/diff.out" | sed 's/^/    /'
		return 1
	fi
	return 0
}

# py_write PATH SRC [create]: writes SRC's bytes to PATH (O_TRUNC) and
# closes it; prints "ok" or the step and errno that failed ("close EINVAL").
py_write()
{
	"$PYTHON" - "$@" <<'PY'
import errno, os, sys
path, data = sys.argv[1], open(sys.argv[2], 'rb').read()
flags = os.O_WRONLY | os.O_TRUNC | (os.O_CREAT if sys.argv[3:] == ['create'] else 0)
step = 'open'
try:
    fd = os.open(path, flags, 0o644)
    step = 'write'
    os.write(fd, data)
    step = 'close'
    os.close(fd)
    print('ok')
except OSError as e:
    print(step, errno.errorcode.get(e.errno, e.errno))
PY
}

# ---- times that follow bytes --------------------------------------------

# snap_tree DIR OUT: for each file below DIR (not .savefs/), a line
# "PATH SHA256 MTIME" with the mtime in nanoseconds, sorted by path.  Every
# file is read, as a backup would read it.
snap_tree()
{
	(cd -- "$1" && find . -path ./.savefs -prune -o -type f -print0 |
		sort -z | while IFS= read -r -d '' f; do
			printf '%s %s %s\n' "$f" "$(sha256sum < "$f" | cut -c1-64)" \
				"$(stat -c '%.9Y' -- "$f")"
		done) > "$2"
}

# times_follow_bytes DESC BEFORE AFTER: between two snap_tree listings, a
# file's mtime moved exactly when its bytes changed (files in both).
times_follow_bytes()
{
	CHECKS=$((CHECKS + 1))
	local bad
	bad=$(join -j 1 <(sort "$2") <(sort "$3") | awk '
		{ sum = ($2 != $4); tim = ($3 != $5) }
		sum && !tim { print "    bytes changed, mtime did not: " $1 }
		!sum && tim { print "    bytes unchanged, mtime moved: " $1 }')
	if [ -n "$bad" ]; then
		fail "$1: mtimes do not follow bytes"
		printf '%s\n' "$bad" | head -n 20
		return 1
	fi
}

# changed_files BEFORE AFTER: the paths whose bytes differ, one a line.
changed_files()
{
	join -j 1 <(sort "$1") <(sort "$2") | awk '$2 != $4 { print $1 }'
}

# ---- the fault shim ------------------------------------------------------

# mount_shim C MNT VAR=VALUE... [-oOPTS]: mounts with the shim and those
# settings, and savefs options (registered as mount_sv does, for
# cleanup).  FAULTSHIM names the shim (tests/tools/faultshim.c).
mount_shim()
{
	local c=$1 m=$2 a
	shift 2
	local envs=() opts=()
	for a in "$@"; do
		case $a in
		-*) opts+=("$a") ;;
		*) envs+=("$a") ;;
		esac
	done
	mkdir -p -- "$m"
	m=$(realpath -- "$m")
	SV_NLOG=$((SV_NLOG + 1))
	local log="$TMP/daemon.$SV_NLOG.log"
	# The shim comes before the sanitizer runtime in a sanitized daemon.
	env ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
		LD_PRELOAD="$FAULTSHIM" "${envs[@]}" "$SAVEFS" -f "${opts[@]}" "$c" "$m" \
		2> "$log" < /dev/null &
	local pid=$!
	SV_PID[$m]=$pid
	SV_LOG[$m]=$log
	SV_ARGS[$m]="$c"$'\t'
	local tries=$((SV_WAIT * 20))
	while ! timeout 2 stat -c '' -- "$m/.savefs/info" > /dev/null 2>&1; do
		tries=$((tries - 1))
		if [ "$tries" -le 0 ] || ! kill -0 "$pid" 2> /dev/null; then
			fail "savefs with the shim did not mount $c; its stderr:"
			sed 's/^/    /' "$log"
			return 1
		fi
		sleep 0.05
	done
}

