#!/bin/sh
# make-corpus.sh - writes the seed corpora for the datafile, doodle and
# nethack fuzz targets; first the datafile one
# (tests/fuzz/corpus/datafile/): small valid files from the project's own
# writer (mkdatafile), plus one built with Python's struct and zlib that has
# the rarer item types: an unknown UUID type, an extended type without an
# index item, a plain unknown type, a duplicate UUID index item, an empty
# item and an empty data item.  The bad inputs (tests/data/bad/datafile)
# are seeds too: run.sh and the replay test use them from there.  Files
# named by a SHA-1 are small inputs the fuzzer found that add coverage,
# kept with `build-fuzz/fuzz_datafile -merge=1 tests/fuzz/corpus/datafile
# DIR...` (after tests/fuzz/run.sh); this script leaves them alone.
#
#   tests/fuzz/make-corpus.sh [BUILD]      BUILD defaults to build
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
m=${1:-$top/build}/tests/mkdatafile
c=$top/tests/fuzz/corpus/datafile
mkdir -p "$c"
"$m" gen "$c/v4-small.map" --data 4 --payload 2K --items 3 --seed 1
"$m" gen "$c/v3.map" --data 4 --payload 2K --items 3 --version 3 --seed 2
"$m" gen "$c/atad.map" --data 4 --payload 2K --items 3 --magic ATAD --seed 3
"$m" gen "$c/crude.map" --data 4 --payload 2K --items 3 --crude --seed 4
"$m" gen "$c/dup-uuid.map" --data 4 --payload 2K --items 3 --dup-uuid --seed 5
"$m" gen "$c/v3-atad.map" --data 3 --payload 1K --items 2 --version 3 --magic ATAD --seed 6
"$m" gen "$c/no-data.map" --data 0 --items 1 --seed 7
"$m" gen "$c/many-items.map" --data 2 --payload 512 --items 40 --seed 8
# Maps of every item version the map view reads (mkdatafile map).
for f in ddnet tw07 legacy17 legacy22; do
	"$m" map "$c/map-$f.map" --flavour $f --small --size 8x5 --seed 9
done
python3 - "$c/ext-types.map" <<'PY'
import struct, sys, zlib
def ints(*v): return struct.pack('<%di' % len(v), *v)
def uuid_ints(u):  # each int's big-endian bytes are 4 UUID bytes
    return b''.join(struct.pack('<I', int.from_bytes(u[k:k + 4], 'big')) for k in range(0, 16, 4))
items = sorted([
    (0, 0, ints(1)), (5, 0, ints(3, 2, 0)), (5, 3, b''),
    (200, 1, ints(7, 8)),
    (0x8001, 0, ints(1, 2, 3)),            # named by an unknown UUID
    (0x8002, 5, ints(4)),                  # extended, no index item
    (0xFFFE, 0, ints(1, 0, 0, 0)),         # the automapper config type
    (0xFFFF, 0x8001, uuid_ints(bytes(range(16)))),
    (0xFFFF, 0xFFFE, uuid_ints(bytes.fromhex('3e1b2716178c39789bd9b11ae0410dd8'))),
    (0xFFFF, 0xFFFE, uuid_ints(bytes.fromhex('3e1b2716178c39789bd9b11ae0410dd8'))),
], key=lambda t: t[0])
raw = [b'', b'some data', bytes(300)]
z = [zlib.compress(r) for r in raw]
types = []
for t, _, _ in items:
    if not types or types[-1][0] != t: types.append([t, 0])
    types[-1][1] += 1
tab, start = b'', 0
for t, n in types:
    tab += ints(t, start, n); start += n
isec, ioffs = b'', []
for t, i, p in items:
    ioffs.append(len(isec)); isec += struct.pack('<Ii', t << 16 | i, len(p)) + p
dsec, doffs = b'', []
for x in z:
    doffs.append(len(dsec)); dsec += x
index = tab + ints(*ioffs) + ints(*doffs) + ints(*[len(r) for r in raw])
size = 36 + len(index) + len(isec) + len(dsec) - 16
hdr = b'DATA' + ints(4, size, size - len(dsec), len(types), len(items), len(raw), len(isec), len(dsec))
open(sys.argv[1], 'wb').write(hdr + index + isec + dsec)
PY

# The doodle target's seeds (tests/fuzz/corpus/doodle/): one small drawing
# of each container version and chunk encoding, from mkdoodle.  The
# doodle_chunk target's seeds are single chunk encodings, text grids and
# JSON chunks written by hand; they are kept as they are.
d=${1:-$top/build}/tests/mkdoodle
c=$top/tests/fuzz/corpus/doodle
mkdir -p "$c"
o="--size 8 --palette 6"
"$d" level "$c/v1-json.level" --container json --chunks json --count 3 --negative $o
"$d" level "$c/v1-map64.level" --container json --chunks map --count 2 --palette 64 --size 8
"$d" level "$c/v1-odd.level" --container json --count 2 --odd-palette --bad-pixels --size 8
"$d" level "$c/v2-mixed.level" --container gzip --chunks mixed --count 3 $o
"$d" level "$c/zip-rle.level" --chunks rle --count 3 $o
"$d" level "$c/zip-map.level" --chunks map --count 3 $o
"$d" level "$c/zip-json.level" --chunks json --count 3 $o
"$d" level "$c/zip-dense.level" --chunks rle --count 2 --dense-every 1 $o
"$d" level "$c/zip-descriptors.level" --chunks mixed --count 3 --descriptors $o
"$d" level "$c/zip-inline.level" --inline --chunks json --count 2 $o
"$d" level "$c/zip-odd.level" --count 2 --odd-palette --bad-pixels --short-rle $o
"$d" level "$c/zip-palette-100.level" --count 2 --palette 100 --size 8
"$d" level "$c/zip-size-1.level" --count 4 --size 1 --palette 3
"$d" level "$c/zip-mixed-negative-assets.level" --chunks mixed --count 4 --negative \
	--assets 2 $o
"$d" doodad "$c/doodad-zip.doodad" --layers 2 --size 8 --palette 4
"$d" doodad "$c/doodad-zip-3-map.doodad" --layers 3 --chunks map --size 8 --palette 4
"$d" doodad "$c/doodad-json.doodad" --container json --layers 2 --size 8 --palette 4
"$d" doodad "$c/doodad-gzip-map.doodad" --container gzip --chunks map --layers 2 --size 8 \
	--palette 4
"$d" pack "$c/pack.levelpack" "$c/zip-rle.level" "$c/v2-mixed.level" \
	--doodad "$c/doodad-zip.doodad"
"$d" pack "$c/pack-descriptors.levelpack" "$c/zip-map.level" --descriptors

# The nethack target's seeds (tests/fuzz/corpus/nethack/): a few small,
# well-formed game logs from the bad-input generator there, which builds
# logs from the format notes (its bad inputs are seeds too, from there).
python3 "$top/tests/data/bad/nethack/make.py" --corpus "$top/tests/fuzz/corpus/nethack"
