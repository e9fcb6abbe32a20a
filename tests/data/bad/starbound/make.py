#!/usr/bin/env python3
"""Writes the malformed Starbound databases and SBVJ01 files of this
directory.

Each file is built here from the format notes (shared/formats/starbound.md)
with Python's struct and zlib only (no savefs code): a 512-byte header, then
blocks laid out by hand, so that each variant breaks exactly one rule.  The
output depends only on this script.  For each variant NAME:

  NAME.world   the container (.player for SBVJ01 files)
  NAME.msg     the exact one-line message
  NAME.how     what happens (tests/unit/test_bad.c):
                 fails: savefs info exits 5
                     opening (and mounting) fails with the message
                 mounts: PATH reads EIO (savefs cat exits 7)
                     the database opens; PATH (and each "also:" path, other
                     views of the same record) reads EIO with the message
                 mounts: PATH reads OK, info warns the message
                     tolerated: every file reads, /.savefs/info warns

  make.py           (re)writes every file here
  make.py --check   exits 1 if a file here differs from what would be written
  make.py --corpus DIR   writes a few well-formed databases (fuzzing seeds)
"""
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import badlib  # noqa: E402

FAILS = 'fails: savefs info exits 5'
BS = 2048
NONE = 0xFFFFFFFF


def vlq(n):
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(out))


def header(nblocks, root, leaf=True, ks=5, bs=BS, free=NONE, cid=b'World4', alt=0):
    h = bytearray(512)
    h[0:8] = b'BTreeDB5'
    h[8:12] = struct.pack('>I', bs)
    h[12:12 + len(cid)] = cid
    h[28:32] = struct.pack('>I', ks)
    h[32] = alt
    info = struct.pack('>IqI?', free, 512 + nblocks * bs, root, leaf)
    h[33:50] = info
    h[50:67] = info
    return bytes(h)


def leaf_blocks(stream, first, bs=BS):
    """A leaf's stream over blocks first, first + 1, ..."""
    room = bs - 6
    n = max(1, -(-len(stream) // room))
    out = b''
    for i in range(n):
        part = stream[i * room:(i + 1) * room]
        nxt = first + i + 1 if i + 1 < n else NONE
        out += b'LL' + part.ljust(room, b'\0') + struct.pack('>I', nxt)
    return out


def leaf_stream(records, count=None):
    s = struct.pack('>I', len(records) if count is None else count)
    for k, v in records:
        s += k + vlq(len(v)) + v
    return s


def db(records, **kw):
    """A database whose root is one leaf (block 0)."""
    blocks = leaf_blocks(leaf_stream(records), 0)
    return header(len(blocks) // BS, 0, **kw) + blocks


def sstr(s):
    b = s.encode()
    return vlq(len(b)) + b


def vjson(name, version, sbon):
    return sstr(name) + b'\x01' + struct.pack('>I', version) + sbon


def tiles(version=416, count=1024, extra=b''):
    tile = (struct.pack('>HBBHB', 1, 0, 0, 65535, 0) * 2 +
            struct.pack('>BffB', 0, 0.0, 0.0, 0) + struct.pack('>BHBB', 5, 65535, 0, 0))
    tile += b'\0' if version == 416 else b'\0\0'
    return vlq(0) + vlq(version) + tile * count + extra


def z(b):
    return zlib.compress(b)


def key(t, x=0, y=0):
    return struct.pack('>BHH', t, x, y)


META = z(struct.pack('>II', 64, 64) + vjson('WorldMetadata', 20, b'\x07\x00'))


def world(*records):
    return db(sorted([(key(0), META)] + list(records)))


def eio(path, *also):
    return ('mounts: %s reads EIO (savefs cat exits 7)\n' % path +
            ''.join('also: %s\n' % a for a in also))


def variants():
    # ---- the tree itself: the open fails ----
    yield 'key-size-0', FAILS, 'btree: byte 28: key size 0 does not fit a block of 2048 bytes', \
        db([], ks=0)
    yield 'key-size-past-block', FAILS, \
        'btree: byte 28: key size 3000 does not fit a block of 2048 bytes', db([], ks=3000)
    yield 'root-past-device', FAILS, \
        'btree: byte 45: root block 7 is past the device size (1 blocks)', \
        header(1, 7) + leaf_blocks(leaf_stream([]), 0)
    yield 'device-past-file', FAILS, \
        'btree: byte 37: device size 6656 is not within the file (2560 bytes)', \
        header(3, 0) + leaf_blocks(leaf_stream([]), 0)
    # A leaf whose chain comes back to its first block.
    stream = leaf_stream([(key(2), b'x' * 5000)])
    blocks = bytearray(leaf_blocks(stream, 0))
    blocks[2 * BS - 4:2 * BS] = struct.pack('>I', 0)
    yield 'leaf-chain-cycle', FAILS, \
        'btree: block 0: reached twice (a cycle, or two parents)', header(3, 0) + bytes(blocks)
    # An index whose second child is itself.
    index = b'II' + struct.pack('>BII', 0, 1, 1) + key(5) + struct.pack('>I', 0)
    yield 'index-cycle', FAILS, 'btree: block 0: reached twice (a cycle, or two parents)', \
        header(2, 0, leaf=False) + index.ljust(BS, b'\0') + leaf_blocks(leaf_stream([]), 1)
    index = b'II' + struct.pack('>BII', 0, 1, 1) + key(5) + struct.pack('>I', 9)
    yield 'child-past-device', FAILS, 'btree: block 9: past the device size (2 blocks)', \
        header(2, 0, leaf=False) + index.ljust(BS, b'\0') + leaf_blocks(leaf_stream([]), 1)
    bad = bytearray(leaf_blocks(leaf_stream([]), 0))
    bad[0:2] = b'XX'
    yield 'wrong-block-magic', FAILS, 'btree: block 0: a leaf block was expected, not 58 58', \
        header(1, 0) + bytes(bad)
    index = b'II' + struct.pack('>BII', 0, 0xFFFFFFFF, 1)
    yield 'absurd-index-count', FAILS, \
        'btree: block 0: 4294967295 keys do not fit the block', \
        header(2, 0, leaf=False) + index.ljust(BS, b'\0') + leaf_blocks(leaf_stream([]), 1)
    # Four billion records claimed; the first fills the block, the chain
    # ends there.
    yield 'absurd-leaf-count', FAILS, "btree: block 0: the leaf's data ends early", \
        header(1, 0) + leaf_blocks(leaf_stream([(key(2), b'v' * 2031)], count=0xFFFFFFFF), 0)
    s = struct.pack('>I', 1) + key(2) + b'\xff' * 11
    yield 'vlq-over-10-bytes', FAILS, 'btree: block 0: a length of more than 64 bits', \
        header(1, 0) + leaf_blocks(s, 0)
    yield 'keys-out-of-order', FAILS, 'btree: block 0: keys out of order', \
        db([(key(2), z(b'\0')), (key(1), z(b'\0'))])
    # ---- one record is bad: the database opens, its views read EIO ----
    yield 'sector-byte-short', eio('world/tiles/0,0.tsv', 'world/tiles/0,0.txt',
                                   'world/tiles/0,0.png'), \
        'record 0100000000: sector: tile 1023 (byte 30693): the sector ends early', \
        world((key(1), z(tiles()[:-1])))
    yield 'sector-byte-long', eio('world/tiles/0,0.tsv', 'world/tiles/0,0.txt',
                                  'world/tiles/0,0.png'), \
        'record 0100000000: sector: bytes after the last tile (1)', \
        world((key(1), z(tiles(extra=b'\0'))))
    yield 'sector-version-419', eio('world/tiles/0,0.tsv', 'world/tiles/0,0.txt',
                                    'world/tiles/0,0.png'), \
        'record 0100000000: sector: version 419 is not one the game reads (416, 417, 418)', \
        world((key(1), z(tiles(version=419))))
    # Ten megabytes of zeros in 10 KB: refused at a sector's largest size.
    yield 'zlib-bomb', eio('world/tiles/0,0.tsv', 'world/tiles/0,0.txt',
                           'world/tiles/0,0.png', 'keys/0100000000'), \
        'record 0100000000: inflates past the limit of 39956 bytes', \
        world((key(1), zlib.compress(b'\0' * (10 << 20), 9)))
    yield 'not-zlib', eio('world/entities/0,0.json', 'keys/0200000000'), \
        'record 0200000000: not a zlib stream', world((key(2), b'\x01\x02\x03'))
    # SBON nested a million arrays deep, in a few kilobytes.
    deep = vlq(1) + vjson('ObjectEntity', 1, b'\x06\x01' * 1000000 + b'\x01')
    yield 'sbon-million-deep', eio('world/entities/0,0.json'), \
        'record 0200000000: byte 1045: nested too deep', world((key(2), z(deep)))
    yield 'sbon-vlq-over-10-bytes', eio('world/entities/0,0.json'), \
        'record 0200000000: byte 0: a number of more than 10 bytes', \
        world((key(2), z(b'\x80' * 11 + b'\x00')))
    yield 'absurd-entity-count', eio('world/entities/0,0.json'), \
        'record 0200000000: byte 0: 1000000 entities in 5 bytes', \
        world((key(2), z(vlq(1000000) + b'\0\0')))
    # A string of 64 MiB + 1 in 65 KB: more than one value may hold.
    big = vlq(1) + vjson('ObjectEntity', 1, b'\x05' + vlq((64 << 20) + 1) + b'A' * ((64 << 20) + 1))
    yield 'sbon-string-past-limit', eio('world/entities/0,0.json'), \
        'record 0200000000: byte 20: a string of 67108865 bytes, more than the 67108864 one ' \
        'value may hold', world((key(2), z(big)))
    # ---- tolerated ----
    ff = b'FF' + struct.pack('>II', 0, 0)
    yield 'free-chain-cycle', 'mounts: world/tiles/0,0.tsv reads OK, info warns the message\n', \
        'btree: block 1: the free-index chain comes back to it: the database reads, but ' \
        'cannot be written', \
        header(2, 0, free=1) + leaf_blocks(leaf_stream([(key(1), z(tiles()))]), 0)[:BS] + \
        (b'FF' + struct.pack('>II', 1, 0)).ljust(BS, b'\0')
    del ff
    # A unique index entry whose position is not a number (all bits set:
    # a NaN): shown bit for bit, not refused as if memory ran out.
    bucket = vlq(1) + sstr('boss') + struct.pack('>HH', 0, 0) + b'\xff' * 8
    nan = {'index': {'boss': {'sector': [0, 0], 'position': [{'$float': 'ffffffff'},
                                                                {'$float': 'ffffffff'}],
                              'bucket': '0300000000'}}, 'sectors': {}}
    yield 'unique-position-nan', 'mounts: world/uniques.json reads OK, log is empty\n', '', \
        world((key(3), z(bucket))), '.world', (json.dumps(nan, indent=2) + '\n').encode()
    # ---- SBVJ01 ----
    yield 'sbvj01-after-magic', FAILS, 'sbvj01: byte 6: the file ends after its magic', \
        b'SBVJ01', '.player'
    yield 'sbvj01-bad-trailer', eio('data.json'), \
        'sbvj01: after the magic, byte 28: a trailer that is not sub-versioning 1', \
        b'SBVJ01' + vjson('PlayerEntity', 30, b'\x07\x01' + sstr('name') + b'\x05' +
                          sstr('x')) + struct.pack('>I', 2), '.player'


def files():
    for v in variants():
        name, how, msg, data = v[:4]
        ext = v[4] if len(v) > 4 else '.world'
        yield name + ext, data
        yield name + '.how', how.encode() if how.endswith('\n') else (how + '\n').encode()
        if msg:
            yield name + '.msg', (msg + '\n').encode()
        if len(v) > 5:
            yield name + '.expect', v[5]


def corpus(d):
    """Seeds for the fuzz target: small, well formed, varied."""
    os.makedirs(d, exist_ok=True)
    seeds = {
        'empty.world': db([]),
        'world.world': world((key(1), z(tiles())), (key(2), z(vlq(0)))),
        'chain.world': db([(key(2), z(b'x' * 9000))]),
        'player.player': b'SBVJ01' + vjson('PlayerEntity', 1, b'\x07\x00'),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--corpus':
        corpus(sys.argv[2])
        return 0
    return badlib.main(HERE, files)


if __name__ == '__main__':
    sys.exit(main())
