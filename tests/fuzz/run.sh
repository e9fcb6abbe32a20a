#!/bin/sh
# run.sh - builds the datafile fuzz target with libFuzzer, ASan and UBSan
# straight from the core sources, and runs it.
#
#   tests/fuzz/run.sh [SECONDS] [LIBFUZZER-ARGS...]
#
# SECONDS defaults to 60.  The fuzzer works on a copy of the seed corpus
# (tests/fuzz/corpus/datafile) and the bad inputs (tests/data/bad/datafile)
# in $FUZZ_WORK (default build-fuzz/ under the source tree); the seeds in
# the tree are never modified.  Crashes, leaks and timeouts are saved in
# tests/fuzz/crashers/, which `meson test` replays (fuzz-replay-datafile).
# FUZZ_JOBS=N runs N fuzzing processes at once (default 1).  CC defaults to
# clang; BUILD (default build) is a configured meson build dir, for config.h.
# To keep new small inputs that add coverage in the seed corpus:
#   build-fuzz/fuzz_datafile -merge=1 tests/fuzz/corpus/datafile build-fuzz/corpus
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
cc=${CC:-clang}
build=${BUILD:-build}
work=${FUZZ_WORK:-$top/build-fuzz}
jobs=${FUZZ_JOBS:-1}

cd "$top"
case $build in /*) ;; *) build=$top/$build ;; esac
if [ ! -f "$build/config.h" ]; then
	echo "run.sh: $build/config.h is missing: run meson setup $build first" >&2
	exit 2
fi

# The core sources, as core/meson.build lists them.
srcs=$(sed -n "/core_src *= *files(/,/)/p" core/meson.build |
	grep -o "'[^']*\.c'" | tr -d "'" | sed 's|^|core/|')
libs="-lz -ljansson -lpthread"
for p in libzstd libzip; do
	if pkg-config --exists $p 2>/dev/null; then
		libs="$libs $(pkg-config --libs $p)"
	fi
done

mkdir -p "$work/corpus" "$here/crashers"
bin=$work/fuzz_datafile
echo "run.sh: building $bin from $(echo $srcs | tr '\n' ' ')" >&2
# shellcheck disable=SC2086
$cc -g -O1 -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -Icore -I. -I"$build" \
	tests/fuzz/fuzz_datafile.c $srcs $libs -o "$bin"

cp -f tests/fuzz/corpus/datafile/* "$work/corpus/"
cp -f tests/data/bad/datafile/*.map "$work/corpus/"

echo "run.sh: fuzzing for $secs seconds ($jobs job(s)); crashers go to tests/fuzz/crashers/" >&2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
if [ "$jobs" -gt 1 ]; then
	# Each job logs to fuzz-N.log in the work directory.
	(cd "$work" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -jobs="$jobs" -workers="$jobs" \
		-artifact_prefix="$here/crashers/" "$@" "$work/corpus") || status=$?
else
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$here/crashers/" \
		"$@" "$work/corpus" || status=$?
fi
if [ "$status" -ne 0 ]; then
	echo "run.sh: the fuzzer stopped with status $status: see tests/fuzz/crashers/" >&2
fi
exit "$status"
