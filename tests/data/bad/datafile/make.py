#!/usr/bin/env python3
"""Writes the malformed datafiles of this directory.

A small valid version 4 datafile is built here from the format notes with
struct and zlib only (no savefs code), and each bad variant is derived from
it by patching bytes.  For each variant NAME:

  NAME.map   the file
  NAME.msg   the exact one-line message savefs gives for it
  NAME.how   what happens, in one of two forms:
               fails: savefs info exits 5
                   the header is malformed: opening (and mounting) fails;
                   `savefs info NAME.map` prints "savefs: <msg>" on stderr
               mounts: data/00002.bin reads EIO (savefs cat exits 7)
                   the container opens; reading that one file fails with
                   EIO; `savefs cat NAME.map data/00002.bin` exits 7 and
                   prints "savefs: data/00002.bin: <msg>" on stderr

The messages are the ones the code gives; tests/unit/test_bad.c checks
every variant in-process and through the command line.

  make.py           (re)writes every file here
  make.py --check   exits 1 if a file here differs from what would be written
"""
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# The plumbing the three make.py share (tests/data/bad/badlib.py); no
# bytecode, so that no __pycache__ lands in the tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import badlib  # noqa: E402


def ints(*v):
    return struct.pack('<%di' % len(v), *v)


class Layout:
    """A version 4 datafile and the offsets of its fields."""

    def __init__(self, items=None, raw=None):
        # (type, id, payload)
        self.items = items or [
            (0, 0, ints(1)),
            (1, 0, ints(1, -1, -1, -1, -1)),
            (5, 0, ints(3, 2, 0, 7)),
            (5, 1, ints(3, 2, 1)),
        ]
        self.raw = raw or [b'first data item\n',
                           b'second data item: ' + bytes(range(64)) * 4,
                           b'third data item, long enough that a cut stream yields part of it\n']
        self.z = [zlib.compress(r, 9) for r in self.raw]
        types = []
        for t, _, _ in self.items:
            if not types or types[-1][0] != t:
                types.append([t, 0])
            types[-1][1] += 1
        start = 0
        type_tab = b''
        for t, n in types:
            type_tab += ints(t, start, n)
            start += n
        item_sec = b''
        item_offs = []
        for t, i, p in self.items:
            item_offs.append(len(item_sec))
            item_sec += ints(t << 16 | i, len(p)) + p
        data_sec = b''
        data_offs = []
        for z in self.z:
            data_offs.append(len(data_sec))
            data_sec += z
        index = (type_tab + ints(*item_offs) + ints(*data_offs) +
                 ints(*[len(r) for r in self.raw]))
        total = 36 + len(index) + len(item_sec) + len(data_sec)
        size = total - 16
        header = b'DATA' + ints(4, size, size - len(data_sec), len(types),
                                len(self.items), len(self.raw), len(item_sec),
                                len(data_sec))
        self.bytes = header + index + item_sec + data_sec
        assert len(self.bytes) == total
        # Where things are.
        self.ntypes = len(types)
        self.item_size = len(item_sec)
        self.data_size = len(data_sec)
        self.item_offs = item_offs
        self.data_offs = data_offs
        self.at_item_offs = 36 + len(type_tab)
        self.at_data_offs = self.at_item_offs + 4 * len(self.items)
        self.at_data_sizes = self.at_data_offs + 4 * len(self.raw)
        self.items_base = self.at_data_sizes + 4 * len(self.raw)
        self.data_base = self.items_base + len(item_sec)


def patch(b, off, fmt, *v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, *v)
    return bytes(b)


def variants():
    L = Layout()
    B = L.bytes
    n = len(B)
    hdr = 'fails: savefs info exits 5'

    def entry(i):
        return 'mounts: data/%05d.bin reads EIO (savefs cat exits 7)' % i

    out = []

    # The header itself is cut short.
    out.append(('truncated-header', B[:20], hdr,
                'datafile: byte 20: truncated header: the file ends here, a header is 36 bytes'))

    # An unsupported version.
    out.append(('version-5', patch(B, 4, '<i', 5), hdr,
                'datafile: byte 4: version 5 is not supported (only 3 and 4)'))

    # Absurd and negative counts and sizes in the header.
    absurd = 0x7fffffff
    out.append(('absurd-num-items', patch(B, 20, '<i', absurd), hdr,
                'datafile: byte 20: num_items %d needs %d bytes of index, past the end of '
                'the file (%d bytes)' % (absurd, 4 * absurd, n)))
    out.append(('negative-num-data', patch(B, 24, '<i', -1), hdr,
                'datafile: byte 24: num_data is negative (-1)'))
    out.append(('negative-data-size', patch(B, 32, '<i', -5), hdr,
                'datafile: byte 32: data_size is negative (-5)'))

    # The sections do not end where the file does.
    out.append(('trailing-garbage', B + b'garbage', hdr,
                'datafile: byte 28: sections end at %d but the file is %d bytes (item_size '
                '%d, data_size %d)' % (n, n + 7, L.item_size, L.data_size)))
    out.append(('size-field-wrong', patch(B, 8, '<i', n - 16 + 8), hdr,
                'datafile: byte 8: size field %d does not match the file (%d expected)'
                % (n - 16 + 8, n - 16)))

    # Item offsets and sizes: each message names the field that is wrong.
    bad_off = L.item_size + 100
    out.append(('item-offset-past-end', patch(B, L.at_item_offs, '<i', bad_off), hdr,
                'datafile: byte %d: item 0: offset %d lies outside the items section '
                '(%d bytes)' % (L.at_item_offs, bad_off, L.item_size)))
    out.append(('item-offset-negative', patch(B, L.at_item_offs, '<i', -4), hdr,
                'datafile: byte %d: item 0: offset -4 lies outside the items section '
                '(%d bytes)' % (L.at_item_offs, L.item_size)))
    out.append(('item-offsets-out-of-order',
                patch(B, L.at_item_offs + 8, '<i', L.item_offs[1] + 4), hdr,
                'datafile: byte %d: item 2: offset %d is inside item 1, which starts at %d'
                % (L.at_item_offs + 8, L.item_offs[1] + 4, L.item_offs[1])))
    room = L.item_offs[2] - L.item_offs[1] - 8
    out.append(('item-payload-too-big',
                patch(B, L.items_base + L.item_offs[1] + 4, '<i', 400), hdr,
                'datafile: byte %d: item 1: payload size 400 does not fit before the next '
                'item (%d bytes there)' % (L.items_base + L.item_offs[1] + 4, room)))
    out.append(('item-payload-negative',
                patch(B, L.items_base + L.item_offs[1] + 4, '<i', -8), hdr,
                'datafile: byte %d: item 1: payload size -8 is negative (%d bytes there)'
                % (L.items_base + L.item_offs[1] + 4, room)))
    out.append(('item-payload-not-int32s',
                patch(B, L.items_base + L.item_offs[1] + 4, '<i', 6), hdr,
                'datafile: byte %d: item 1: payload size 6 is not a multiple of 4 (%d bytes '
                'there)' % (L.items_base + L.item_offs[1] + 4, room)))

    # Data items: the container mounts, the one file reads EIO.
    out.append(('data-offset-past-end',
                patch(B, L.at_data_offs, '<i', L.data_size + 100), entry(0),
                'datafile: data item 0: offset %d lies outside the data section (%d bytes)'
                % (L.data_size + 100, L.data_size)))
    out.append(('data-offset-negative', patch(B, L.at_data_offs, '<i', -1), entry(0),
                'datafile: data item 0: offset -1 lies outside the data section (%d bytes)'
                % L.data_size))
    out.append(('negative-raw-size', patch(B, L.at_data_sizes + 4, '<i', -1), entry(1),
                'datafile: data item 1: uncompressed size -1 is negative'))
    short = len(L.raw[1]) - 10
    out.append(('inflates-past-size', patch(B, L.at_data_sizes + 4, '<i', short), entry(1),
                'datafile: data item 1: inflates past its declared size of %d bytes' % short))
    long_ = len(L.raw[1]) + 10
    out.append(('inflates-short', patch(B, L.at_data_sizes + 4, '<i', long_), entry(1),
                'datafile: data item 1: inflates to %d bytes, not the declared %d'
                % (len(L.raw[1]), long_)))
    out.append(('not-zlib', patch(B, L.data_base + L.data_offs[1], '<2B', 0x12, 0x34), entry(1),
                'datafile: data item 1: not a zlib stream'))
    end1 = L.data_base + L.data_offs[2]
    out.append(('zlib-bad-checksum', patch(B, end1 - 1, '<B', B[end1 - 1] ^ 0xff), entry(1),
                'datafile: data item 1: corrupt zlib stream (incorrect data check)'))
    # The last data item's stream is cut short: the file ends 6 bytes
    # early, with size and data_size to match.
    cut = B[:-6]
    cut = patch(cut, 8, '<i', n - 6 - 16)
    cut = patch(cut, 32, '<i', L.data_size - 6)
    lastd = len(L.raw) - 1
    out.append(('zlib-truncated', cut, entry(lastd),
                'datafile: data item %d: zlib stream ends early after %d of %d bytes'
                % (lastd, truncated_output(L.z[lastd][:-6], len(L.raw[lastd])),
                   len(L.raw[lastd]))))
    # A later data item's offset is broken: only that item reads EIO.
    out.append(('data-offset-later-past-end',
                patch(B, L.at_data_offs + 8, '<i', L.data_size + 100), entry(2),
                'datafile: data item 2: offset %d lies outside the data section (%d bytes)'
                % (L.data_size + 100, L.data_size)))
    # The last stream lacks only its 4-byte checksum.
    cut = B[:-4]
    cut = patch(cut, 8, '<i', n - 4 - 16)
    cut = patch(cut, 32, '<i', L.data_size - 4)
    out.append(('zlib-no-checksum', cut, entry(lastd),
                'datafile: data item %d: zlib stream is cut short: its end and checksum '
                'are missing' % lastd))
    return out


def name_ints(s, n):
    """A name packed in n ints (4 characters an int, each + 128)."""
    b = s.encode() + bytes(4 * n - len(s))
    return [struct.unpack('>i', bytes((c + 128) & 255 for c in b[4 * i:4 * i + 4]))[0]
            for i in range(n)]


def map_variant(tiles=None, image=None, img_name=b'light\0', author=b'me\0', tver=3,
                group_layers=(1, 0), flags=0, speedup=False):
    """A small DDNet map: an embedded 4 x 2 image, a game layer of 4 x 3
    (and a speedup layer), one group; pieces replaced to break them."""
    if tiles is None:
        tiles = bytes([1, 0, 0, 0] * 12)
    if image is None:
        image = bytes(range(32))
    raw = [img_name, image, tiles, author, bytes(12 * 4), bytes(12 * 6)]
    game = ints(0, 2, 0, tver, 4, 3, 1 | flags, 255, 255, 255, 255, -1, 0, -1, 2,
                *name_ints('Game', 3), -1, -1, -1, -1, -1)
    layers = [(5, 0, game)]
    if speedup:
        sp = ints(0, 2, 0, 3, 4, 3, 4, 255, 255, 255, 255, -1, 0, -1, 4,
                  *name_ints('Speedup', 3), -1, 5, -1, -1, -1)
        layers.append((5, 1, sp))
    items = [(0, 0, ints(1)),
             (1, 0, ints(1, 3, -1, -1, -1)),
             (2, 0, ints(1, 4, 2, 0, 0, 1)),
             (4, 0, ints(3, 0, 0, 100, 100, 0, 1, 0, 0, 0, 0, 0, *name_ints('Game', 3))),
             (4, 1, ints(3, 0, 0, 100, 100, group_layers[0], group_layers[1], 0, 0, 0, 0, 0,
                         *name_ints('More', 3)))] + layers
    return Layout(items, raw).bytes


def map_variants():
    """The map view's bad inputs: the map mounts, one view reads EIO."""
    def reads(path, *also):
        return 'mounts: %s reads EIO (savefs cat exits 7)' % path + ''.join(
            '\nalso: %s' % a for a in also)
    tiles = 'map/groups/00-Game/00-Game/tiles.txt'
    out = [
        ('map-image-data-short', map_variant(image=bytes(20)),
         reads('map/images/00-light.png'),
         'map: image 0: data item 1 holds 20 bytes, fewer than 4 x 2 x 4 = 32'),
        ('map-tiles-data-short', map_variant(tiles=bytes(40)), reads(tiles, 'map/game.png'),
         'map: layer 0: data item 2 holds 40 bytes, fewer than 4 x 3 tiles of 4 bytes'),
        # 0.7 runs: 5 stored tiles of 3 each make 15, past 4 x 3.
        ('map-runs-past-end', map_variant(tiles=bytes([1, 0, 2, 0] * 5), tver=4),
         reads(tiles, 'map/game.png'),
         'map: layer 0: a tile run goes past 4 x 3 tiles (stored tile 3 of 5)'),
        ('map-runs-short', map_variant(tiles=bytes([1, 0, 2, 0] * 3), tver=4),
         reads(tiles, 'map/game.png'),
         'map: layer 0: the tile runs give 9 tiles, fewer than 4 x 3'),
        ('map-runs-padding', map_variant(tiles=bytes([1, 0, 2, 0] * 2 + [1, 0, 2, 5] + [1, 0, 2, 0]),
                                         tver=4),
         reads(tiles, 'map/game.png'),
         'map: layer 0: stored tile 2 has padding 5 (must be 0)'),
        ('map-tile-padding',
         map_variant(tiles=bytes([1, 0, 0, 0] * 5 + [1, 0, 0, 7] + [1, 0, 0, 0] * 6)),
         reads(tiles, 'map/game.png'),
         'map: layer 0: tile 5 (x 1, y 1) has padding 7, which version 3 does not allow'),
        ('map-tile-skip',
         map_variant(tiles=bytes([1, 0, 0, 0] * 2 + [1, 0, 3, 0] + [1, 0, 0, 0] * 9)),
         reads(tiles, 'map/game.png'),
         'map: layer 0: tile 2 (x 2, y 0) has skip 3, which version 3 does not allow'),
        ('map-group-past-end', map_variant(group_layers=(1, 4)),
         reads('map/groups/01-More/group.json'),
         'map: group 1: layers 1 to 4, but the map has 1 layer'),
        ('map-image-name-unterminated', map_variant(img_name=b'light'),
         reads('map/images/00-image.png'),
         'map: image 0: its name: data item 0 is not a string: no terminating NUL'),
        ('map-info-unterminated', map_variant(author=b'me'), reads('map/info.json'),
         'map: info: author: data item 3 is not a string: no terminating NUL'),
    ]
    return out


def truncated_output(z, want):
    """How many bytes zlib gets out of a cut stream before it runs dry."""
    d = zlib.decompressobj()
    return len(d.decompress(z, want))


def files():
    for name, data, how, msg in variants() + map_variants():
        yield name + '.map', data
        yield name + '.msg', (msg + '\n').encode()
        yield name + '.how', (how + '\n').encode()


def main():
    return badlib.main(HERE, files)


if __name__ == '__main__':
    sys.exit(main())
