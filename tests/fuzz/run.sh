#!/bin/sh
# run.sh - builds a fuzz target (tests/fuzz/fuzz_TARGET.c) with libFuzzer,
# ASan and UBSan straight from the core sources, and runs it.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET] [LIBFUZZER-ARGS...]
#
# SECONDS defaults to 60.  TARGET is datafile (the default), doodle,
# doodle_chunk, or any NAME with a tests/fuzz/fuzz_NAME.c; it may also be
# given as FUZZ_TARGET=NAME (an argument starting with '-' is never a
# target).  The fuzzer works on a copy of the seed corpus
# (tests/fuzz/corpus/TARGET) and the bad inputs of its format
# (tests/data/bad/FORMAT, FORMAT being TARGET up to its first '_': the
# containers there, not their .msg/.how/.expect or make.py) in $FUZZ_WORK
# (default build-fuzz/ under the source tree): corpus/ for datafile,
# corpus-TARGET/ for the others.  The seeds in the tree are never modified.
# Crashes, leaks and timeouts are saved in tests/fuzz/crashers/, which
# `meson test` replays (fuzz-replay-TARGET).  FUZZ_JOBS=N runs N fuzzing
# processes at once (default 1).  CC defaults to clang; BUILD (default
# build) is a configured meson build dir, for config.h; FUZZ_CFLAGS adds
# compiler flags (e.g. -fno-sanitize=... to get past a known bug while it
# is being fixed).  To go on after a crash, pass libFuzzer's
# -fork=1 -ignore_crashes=1 (each crash still lands in crashers/).
# To keep new small inputs that add coverage in the seed corpus:
#   build-fuzz/fuzz_datafile -merge=1 tests/fuzz/corpus/datafile build-fuzz/corpus
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
cc=${CC:-clang}
build=${BUILD:-build}
work=${FUZZ_WORK:-$top/build-fuzz}
jobs=${FUZZ_JOBS:-1}

cd "$top"
src=tests/fuzz/fuzz_$target.c
if [ ! -f "$src" ]; then
	echo "run.sh: no fuzz target $target ($src is missing)" >&2
	exit 2
fi
case $build in /*) ;; *) build=$top/$build ;; esac
if [ ! -f "$build/config.h" ]; then
	echo "run.sh: $build/config.h is missing: run meson setup $build first" >&2
	exit 2
fi
fmt=${target%%_*}
if [ "$target" = datafile ]; then
	corpus=$work/corpus
else
	corpus=$work/corpus-$target
fi

# The core sources, as core/meson.build lists them.
srcs=$(sed -n "/core_src *= *files(/,/)/p" core/meson.build |
	grep -o "'[^']*\.c'" | tr -d "'" | sed 's|^|core/|')
libs="-lz -ljansson -lpthread"
for p in libzstd libzip libxxhash libpng; do
	if pkg-config --exists $p 2>/dev/null; then
		libs="$libs $(pkg-config --libs $p)"
	fi
done

# Sources a target names on a " * Built with: FILE..." line of its comment.
extra=$(sed -n 's/^ \* Built with: //p' "$src")

mkdir -p "$corpus" "$here/crashers"
bin=$work/fuzz_$target
echo "run.sh: building $bin from $src $(echo $srcs | tr '\n' ' ')" >&2
# shellcheck disable=SC2086
$cc -g -O1 -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer ${FUZZ_CFLAGS:-} -Icore -I. -I"$build" \
	"$src" $extra $srcs $libs -o "$bin"

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
