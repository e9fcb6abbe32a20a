#!/usr/bin/env python3
"""An independent datafile decoder for the tests: written from the format
notes with Python's struct and zlib, sharing no code with savefs.

dfdecode.py FILE OUTDIR   writes items/<type>/<id>.bin payloads (type dirs
                          named by number only) and data/<index>.bin
                          (inflated), so that a savefs tree can be compared
                          with it file by file.
"""
import os
import struct
import sys
import zlib


def decode(path):
    d = open(path, 'rb').read()
    magic, ver, size, swap, nt, ni, nd, isz, dsz = struct.unpack_from('<4s8i', d, 0)
    assert magic in (b'DATA', b'ATAD') and ver in (3, 4), 'not a datafile'
    p = 36 + 12 * nt
    ioff = struct.unpack_from('<%di' % ni, d, p); p += 4 * ni
    doff = struct.unpack_from('<%di' % nd, d, p); p += 4 * nd
    dsizes = None
    if ver == 4:
        dsizes = struct.unpack_from('<%di' % nd, d, p); p += 4 * nd
    items_at, data_at = p, p + isz
    items = []
    for o in ioff:
        tid, sz = struct.unpack_from('<2i', d, items_at + o)
        items.append(((tid >> 16) & 0xffff, tid & 0xffff,
                      d[items_at + o + 8:items_at + o + 8 + sz]))
    data = []
    for i, o in enumerate(doff):
        end = doff[i + 1] if i + 1 < nd else dsz
        raw = d[data_at + o:data_at + end]
        if ver == 4:
            raw = zlib.decompress(raw) if raw else b''
            assert len(raw) == dsizes[i], 'size table mismatch'
        data.append(raw)
    return items, data


def main():
    items, data = decode(sys.argv[1])
    out = sys.argv[2]
    seen = {}
    for t, i, payload in items:
        dirn = os.path.join(out, 'items', str(t))
        os.makedirs(dirn, exist_ok=True)
        k = seen.get((t, i), 0) + 1
        seen[(t, i)] = k
        name = '%05d.bin' % i if k == 1 else '%05d~%d.bin' % (i, k)
        open(os.path.join(dirn, name), 'wb').write(payload)
    os.makedirs(os.path.join(out, 'data'), exist_ok=True)
    for i, raw in enumerate(data):
        open(os.path.join(out, 'data', '%05d.bin' % i), 'wb').write(raw)


if __name__ == '__main__':
    main()
