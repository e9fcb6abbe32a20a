#!/usr/bin/env python3
"""An independent datafile decoder for the tests: written from the format
notes (shared/formats/teeworlds.md) with Python's struct and zlib, sharing
no code with savefs.

dfdecode.py FILE OUTDIR   writes items/<type>/<id>.bin payloads (type dirs
                          named by number only; a repeated id gets "~2",
                          "~3", ... in file order) and data/<index>.bin
                          (inflated), so that a savefs tree can be compared
                          with it file by file.
dfdecode.py --header FILE prints the header as one JSON object: magic,
                          version, the counts, and "crude" (size and swaplen
                          short by 4 * num_data, as old writers left them).

Every offset and length is checked; a file that does not follow the format
exits 1 with a one-line reason, so a container savefs wrote that another
reader would reject fails the test that decodes it.
"""
import json
import os
import struct
import sys
import zlib


class Bad(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Bad(what)


def ints(d, off, n, what):
    need(off >= 0 and off + 4 * n <= len(d), '%s runs past the end of the file' % what)
    return struct.unpack_from('<%di' % n, d, off)


def decode(path):
    """Returns (header dict, items [(type, id, payload)], data [bytes])."""
    d = open(path, 'rb').read()
    need(len(d) >= 36, 'truncated header: %d bytes' % len(d))
    magic = d[:4]
    need(magic in (b'DATA', b'ATAD'), 'bad magic %r' % magic)
    ver, size, swap, nt, ni, nd, isz, dsz = struct.unpack_from('<8i', d, 4)
    need(ver in (3, 4), 'version %d' % ver)
    for name, v in (('num_item_types', nt), ('num_items', ni), ('num_data', nd),
                    ('item_size', isz), ('data_size', dsz)):
        need(v >= 0, '%s is negative (%d)' % (name, v))
    p = 36
    types = [ints(d, p + 12 * k, 3, 'item type table') for k in range(nt)]
    p += 12 * nt
    ioff = ints(d, p, ni, 'item offsets'); p += 4 * ni
    doff = ints(d, p, nd, 'data offsets'); p += 4 * nd
    dsizes = None
    if ver == 4:
        dsizes = ints(d, p, nd, 'data sizes'); p += 4 * nd
    items_at, data_at = p, p + isz
    need(data_at + dsz == len(d),
         'sections end at %d, the file is %d bytes' % (data_at + dsz, len(d)))
    crude = False
    if size != len(d) - 16:
        need(ver == 4 and nd > 0 and size + 4 * nd == len(d) - 16,
             'size field %d, file is %d bytes' % (size, len(d)))
        crude = True
    need(swap == size - dsz, 'swaplen %d is not size - data_size (%d)' % (swap, size - dsz))
    # The type table must describe the items as they lie in the file.
    start = 0
    for t, s, n in types:
        need(0 <= t <= 0xffff and s == start and n >= 0, 'item type table entry %d' % t)
        start += n
    need(start == ni, 'item type table counts %d items, header %d' % (start, ni))

    items = []
    for k, o in enumerate(ioff):
        end = ioff[k + 1] if k + 1 < ni else isz
        need(0 <= o and o + 8 <= end <= isz, 'item %d: offsets %d..%d' % (k, o, end))
        tid, sz = struct.unpack_from('<Ii', d, items_at + o)
        need(sz >= 0 and sz % 4 == 0 and o + 8 + sz == end,
             'item %d: payload size %d in %d bytes' % (k, sz, end - o - 8))
        items.append(((tid >> 16) & 0xffff, tid & 0xffff,
                      d[items_at + o + 8:items_at + o + 8 + sz]))
    for t, s, n in types:
        need(all(it[0] == t for it in items[s:s + n]), 'type %d: items out of place' % t)

    data = []
    for k, o in enumerate(doff):
        end = doff[k + 1] if k + 1 < nd else dsz
        need(0 <= o <= end <= dsz, 'data %d: offsets %d..%d' % (k, o, end))
        raw = d[data_at + o:data_at + end]
        if ver == 4:
            need(dsizes[k] >= 0, 'data %d: negative size' % k)
            if raw or dsizes[k]:
                z = zlib.decompressobj()
                try:
                    out = z.decompress(raw)
                except zlib.error as e:
                    raise Bad('data %d: %s' % (k, e))
                need(z.eof and not z.unused_data, 'data %d: not one whole zlib stream' % k)
                raw = out
            need(len(raw) == dsizes[k],
                 'data %d: inflates to %d bytes, the size table says %d'
                 % (k, len(raw), dsizes[k]))
        data.append(raw)

    hdr = {
        'magic': magic.decode('ascii'), 'version': ver, 'size': size, 'swaplen': swap,
        'num_item_types': nt, 'num_items': ni, 'num_data': nd,
        'item_size': isz, 'data_size': dsz, 'crude': crude,
    }
    return hdr, items, data


def write_tree(items, data, out):
    seen = {}
    os.makedirs(os.path.join(out, 'items'), exist_ok=True)
    for t, i, payload in items:
        dirn = os.path.join(out, 'items', str(t))
        os.makedirs(dirn, exist_ok=True)
        k = seen.get((t, i), 0) + 1
        seen[(t, i)] = k
        name = '%05d.bin' % i if k == 1 else '%05d~%d.bin' % (i, k)
        with open(os.path.join(dirn, name), 'wb') as f:
            f.write(payload)
    os.makedirs(os.path.join(out, 'data'), exist_ok=True)
    for i, raw in enumerate(data):
        with open(os.path.join(out, 'data', '%05d.bin' % i), 'wb') as f:
            f.write(raw)


def main():
    args = sys.argv[1:]
    try:
        if len(args) == 2 and args[0] == '--header':
            hdr, _, _ = decode(args[1])
            print(json.dumps(hdr, sort_keys=True))
        elif len(args) == 2:
            _, items, data = decode(args[0])
            write_tree(items, data, args[1])
        else:
            sys.stderr.write('usage: dfdecode.py FILE OUTDIR | --header FILE\n')
            return 2
    except Bad as e:
        sys.stderr.write('dfdecode: %s: %s\n' % (args[-1] if args[0] == '--header' else args[0], e))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
