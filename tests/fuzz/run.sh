#!/bin/sh
# run.sh - builds a fuzz target (tests/fuzz/fuzz_TARGET.c) with libFuzzer,
# ASan and UBSan, and runs it.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET] [LIBFUZZER-ARGS...]
#
# SECONDS defaults to 60.  TARGET is datafile (the default), doodle,
# doodle_chunk, or any NAME of tests/meson.build's fuzz_targets; it may
# also be given as FUZZ_TARGET=NAME (an argument starting with '-' is never
# a target).  The targets are built by meson in $FUZZ_BUILD (default
# build-fuzz/ under the source tree), configured with clang,
# -Dfuzzing=true and -Db_sanitize=address,undefined; FUZZ_CFLAGS (e.g.
# -DSKIP_FAR_JSON, to get past a known bug while it is being fixed) goes
# to the targets through -Dfuzz_cflags.  The fuzzer works on a copy of the
# seed corpus (tests/fuzz/corpus/TARGET) and the bad inputs of its format
# (tests/data/bad/FORMAT, FORMAT being TARGET up to its first '_': the
# containers there, not their .msg/.how/.expect or make.py) in $FUZZ_WORK
# (default build-fuzz/work): corpus/ for datafile, corpus-TARGET/ for the
# others.  The seeds in the tree are never modified.  Crashes, leaks and
# timeouts are saved in tests/fuzz/crashers/, which `meson test` replays
# (fuzz-replay-TARGET).  FUZZ_JOBS=N runs N fuzzing processes at once
# (default 1).  To go on after a crash, pass libFuzzer's
# -fork=1 -ignore_crashes=1 (each crash still lands in crashers/).
# To keep new small inputs that add coverage in the seed corpus:
#   build-fuzz/tests/fuzz_datafile -merge=1 tests/fuzz/corpus/datafile build-fuzz/work/corpus
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
target=${FUZZ_TARGET:-datafile}
case ${1:-} in
'' | -*) ;;
*) target=$1; shift ;;
esac
fbuild=${FUZZ_BUILD:-$top/build-fuzz}
work=${FUZZ_WORK:-$fbuild/work}
jobs=${FUZZ_JOBS:-1}

cd "$top"
if [ ! -f "tests/fuzz/fuzz_$target.c" ]; then
	echo "run.sh: no fuzz target $target (tests/fuzz/fuzz_$target.c is missing)" >&2
	exit 2
fi
fmt=${target%%_*}
if [ "$target" = datafile ]; then
	corpus=$work/corpus
else
	corpus=$work/corpus-$target
fi

# The fuzz build: configured once, its flags brought up to date each run.
cflags=$(printf '%s' "${FUZZ_CFLAGS:-}" | tr ' ' ',')
if [ ! -f "$fbuild/build.ninja" ]; then
	CC=${CC:-clang} meson setup "$fbuild" -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized "-Dfuzz_cflags=$cflags" >&2
else
	meson configure "$fbuild" "-Dfuzz_cflags=$cflags" >&2
fi
echo "run.sh: building fuzz_$target in $fbuild" >&2
ninja -C "$fbuild" "tests/fuzz_$target" >&2
bin=$fbuild/tests/fuzz_$target
mkdir -p "$corpus" "$here/crashers"

if [ -d "tests/fuzz/corpus/$target" ]; then
	for f in tests/fuzz/corpus/"$target"/*; do
		[ -f "$f" ] && cp -f "$f" "$corpus/"
	done
fi
if [ -d "tests/data/bad/$fmt" ]; then
	for f in tests/data/bad/"$fmt"/*; do
		case $f in *.msg | *.how | *.expect | *.py) continue ;; esac
		[ -f "$f" ] && cp -f "$f" "$corpus/"
	done
fi

echo "run.sh: fuzzing $target for $secs seconds ($jobs job(s)); crashers go to tests/fuzz/crashers/" >&2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
if [ "$jobs" -gt 1 ]; then
	# Each job logs to fuzz-N.log in the work directory.
	(cd "$work" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -jobs="$jobs" -workers="$jobs" \
		-artifact_prefix="$here/crashers/" "$@" "$corpus") || status=$?
else
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$here/crashers/" \
		"$@" "$corpus" || status=$?
fi
if [ "$status" -ne 0 ]; then
	echo "run.sh: the fuzzer stopped with status $status: see tests/fuzz/crashers/" >&2
fi
exit "$status"
