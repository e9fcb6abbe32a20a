#!/usr/bin/env python3
"""Writes the malformed replay recordings of this directory.

Each file is built here from the format notes (shared/formats/recording.md)
with Python's struct and the zstd command only (no savefs code): a 256-byte
header, the metadata, the index and zstd frames laid out by hand, so that
each variant breaks exactly one rule.  For each variant NAME:

  NAME.hcrp    the recording (compacted)
  NAME.msg     the exact one-line message
  NAME.how     what happens (tests/unit/test_bad.c):
                 fails: savefs info exits 5
                     opening (and mounting) fails with the message
                 mounts: PATH reads EIO (savefs cat exits 7)
                     the recording opens; PATH (and each "also:" path, the
                     other views of the same chunk) reads EIO
                 mounts: PATH reads OK, info warns the message
                     what can be decoded is shown, the rest as hex, and
                     /.savefs/info warns

  make.py           (re)writes every file here
  make.py --check   exits 1 if a file here differs from what would be written
"""
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import badlib  # noqa: E402

FAILS = 'fails: savefs info exits 5'


def vi(v):
    v &= 0xFFFFFFFF
    out = b''
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def zstd(data, size=True):
    # From a pipe the command knows the size only when told it.
    args = ['zstd', '-q', '-c', '-3'] + (['--stream-size=%d' % len(data)] if size
                                          else ['--no-content-size'])
    return subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True).stdout


def ticks(first, n, events=b'', count=0):
    """n tick records from `first`, the first holding `events`."""
    out = vi(first) + struct.pack('>h', count) + events
    for t in range(first + 1, first + n):
        out += vi(t) + struct.pack('>h', 0)
    return out


SPAWN = vi(8) + vi(0) + vi(155) + struct.pack('>dddff', 0.5, 64.0, 0.5, 0.0, 0.0)
META = b'\x0a\x00'


def rec(chunks, version=4, wv=16, meta=META, meta_len=None, index_len=None, tick_count=None,
        chunk_count=None, dictionary=0, offsets=None, extra_index=b''):
    """chunks: (ticks, stored bytes, decompressed length) each."""
    entries = []
    start = 0
    for n, data, ulen in chunks:
        entries.append((start, n, data, ulen))
        start += n
    parts = [vi(s) + vi(n) + b'\x01' + b'\0' * 8 + vi(len(d)) + vi(u) for s, n, d, u in entries]
    head = 256 + len(meta)
    o = head + sum(len(p) for p in parts) + len(extra_index)
    idx = b''
    for i, ((s, n, d, u), p) in enumerate(zip(entries, parts)):
        k = len(vi(s) + vi(n)) + 1
        off = offsets[i] if offsets else o
        idx += p[:k] + struct.pack('>q', off) + p[k + 8:]
        o += len(d)
    idx += extra_index
    h = b'HCRP' + struct.pack('>hh', version, 0) + bytes(range(16)) + struct.pack('>b', wv)
    h += bytes(min(max(wv, 0), 32)) + struct.pack(
        '>qhiiiii', 1786000000000, dictionary, len(meta) if meta_len is None else meta_len,
        len(idx) if index_len is None else index_len, start if tick_count is None else tick_count,
        len(entries) if chunk_count is None else chunk_count, 4671)
    return h.ljust(256, b'\0') + meta + idx + b''.join(d for _, _, d, _ in entries)


def good(first=0, n=100, events=SPAWN, count=1):
    p = ticks(first, n, events, count)
    return (n, zstd(p), len(p))


def eio(i):
    return ('mounts: chunks/%06d.bin reads EIO (savefs cat exits 7)\n' % i +
            'also: chunks/%06d.txt\nalso: at/%08d.json\n' % (i, 100 * i))


def variants():
    g = good()
    g2 = good(100)
    # Another format version is not claimed at all: tests/data/nearmiss.
    yield 'world-version-33', FAILS, \
        'recording: byte 24: world version length 33, not 0 to 32', rec([g], wv=33)
    yield 'dictionary-1', FAILS, \
        'recording: byte 49: dictionary 1; savefs reads recordings without one (0)', \
        rec([g], dictionary=1)
    yield 'metadata-length-disagrees', FAILS, \
        'recording: byte 256: the metadata takes 2 bytes, the header says 3', \
        rec([g], meta_len=3)
    yield 'index-length-disagrees', FAILS, \
        'recording: byte 258: the index of 1 chunks takes 15 bytes, the header says 16', \
        rec([g], index_len=16, extra_index=b'\0')
    d = rec([g], index_len=100000)
    yield 'lengths-past-the-end', FAILS, \
        'recording: byte 0: metadata 2 and index 100000 bytes lie past the end of the file ' \
        '(%d bytes)' % len(d), d
    yield 'negative-index-length', FAILS, \
        'recording: byte 51: a negative length or count (metadata 2, index -1, ticks 100, ' \
        'chunks 1)', rec([g], index_len=-1)
    yield 'offset-past-the-end', FAILS, \
        'recording: byte 258: chunk 0 at 5000+%d lies past the end of the file' % len(g[1]), \
        rec([g], offsets=[5000])
    yield 'offsets-overlap', FAILS, \
        'recording: byte 273: chunk 1 at 300+%d overlaps what comes before it' % len(g2[1]), \
        rec([g, g2], offsets=[288, 300])
    yield 'offset-into-the-index', FAILS, \
        'recording: byte 258: chunk 0 at 200+%d overlaps what comes before it' % len(g[1]), \
        rec([g], offsets=[200])
    yield 'ticks-do-not-sum', FAILS, \
        'recording: byte 59: the header says 300 ticks, the chunks hold 200', \
        rec([g, good(100)], tick_count=300)
    yield 'too-many-chunks', FAILS, \
        'recording: byte 63: 5 chunks cannot fit an index of 15 bytes', \
        rec([g], chunk_count=5)
    yield 'index-cut-short', FAILS, \
        'recording: byte 273: index entry 1 is malformed or cut short', \
        rec([g], chunk_count=2, index_len=16, extra_index=b'\x64')
    # ---- one chunk cannot be read: the rest of the recording can ----
    p = ticks(100, 100, SPAWN, 1)
    yield 'frame-size-disagrees', eio(1), \
        'chunk 1: the zstd frame says %d bytes, the index %d' % (len(p), len(p) + 5), \
        rec([g, (100, zstd(p), len(p) + 5)])
    yield 'frame-inflates-short', eio(1), \
        'chunk 1: inflates to %d bytes, the index says %d' % (len(p), len(p) + 5), \
        rec([g, (100, zstd(p, size=False), len(p) + 5)])
    yield 'not-a-frame', eio(1), 'chunk 1: not a zstd frame', \
        rec([g, (100, b'\x28\xb5\x2f\xfe' + bytes(40), 300)])
    # ---- events that cannot be decoded: shown as hex, info warns ----
    bad = ticks(0, 1, SPAWN, 1) + vi(1) + struct.pack('>h', 1) + vi(15) + b'\x01\x02\x03' + \
        ticks(2, 98)
    yield 'unknown-event-id', 'mounts: chunks/000000.txt reads OK, info warns the message', \
        'chunks/000000.txt: decoded up to byte %d: an event id the event table does not ' \
        'have (the rest is shown as hex)' % (len(ticks(0, 1, SPAWN, 1)) + 3), \
        rec([(100, zstd(bad), len(bad))])
    cut = ticks(0, 1, SPAWN, 1) + vi(1) + struct.pack('>h', 1) + vi(8) + vi(1) + vi(10) + \
        struct.pack('>dd', 1.0, 2.0)
    yield 'event-cut-short', 'mounts: chunks/000000.txt reads OK, info warns the message', \
        'chunks/000000.txt: decoded up to byte %d: the event is cut short (the rest is shown ' \
        'as hex)' % (len(ticks(0, 1, SPAWN, 1)) + 3), rec([(2, zstd(cut), len(cut))])


def files():
    for name, how, msg, data in variants():
        yield name + '.hcrp', data
        yield name + '.how', how.encode() if how.endswith('\n') else (how + '\n').encode()
        yield name + '.msg', (msg + '\n').encode()


if __name__ == '__main__':
    sys.exit(badlib.main(HERE, files))
