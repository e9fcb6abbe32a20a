#!/usr/bin/env python3
"""Writes the seed inputs of the recording, rcchunk and snbt fuzz targets
(tests/fuzz/corpus/{recording,rcchunk,snbt}) from the format notes: every
event id, a snapshot, item NBT, negative block positions, an LP vector with
the scale continuation; compressed with the zstd command."""
import os
import struct
import subprocess
import sys


def varint(v, bits):
    """LEB128 of v taken as an unsigned number of `bits` bits."""
    v &= (1 << bits) - 1
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def vi(v):
    return varint(v, 32)


def vl(v):
    return varint(v, 64)


def tick(t, evs):
    return vi(t) + struct.pack(">h", len(evs)) + b"".join(evs)


def main(top):
    spawn = vi(8) + vi(0) + vi(155) + struct.pack(">dddff", 0.5, 64, 0.5, 0, 0)
    item = (vi(5) + vi(0) + vi(1) + vi(36) + bytes([10]) + b"\x08\x00\x02id" +
            struct.pack(">H", 15) + b"minecraft:stone" + b"\x01\x00\x05count\x03" + b"\x00")
    absm = (vi(1) + vi(0) + struct.pack(">dddff", 0.5, 64, 0.5, 90, 0) + bytes([0x05, 0x12]) +
            struct.pack(">I", 0x12345678) + vi(3))
    pos = ((-5 & 0x3FFFFFF) << 38) | ((7 & 0x3FFFFFF) << 12) | (70 & 0xFFF)
    blk = vi(7) + struct.pack(">Q", pos) + vi(1)
    delta = vi(0) + vi(0) + vl(884 << 1) + vl(1) + vl(0) + struct.pack(">hh", 100, -20) + b"\x00"
    run = [vi(10), vi(11) + vi(3) + b"cp1" + vl(1234), vi(12) + vi(3) + vl(2000),
           vi(13) + vi(0) + vl(5000), vi(14)]
    payload = (tick(0, [spawn, item, absm, blk]) +
               tick(1, [delta, vi(2) + vi(0) + vi(5) + bytes([2]), vi(3) + vi(0) + vi(1)]) +
               tick(2, run + [vi(4) + vi(0) + b"\x01" + vi(1), vi(6) + vi(0) + vi(3),
                              vi(9) + vi(0)]))

    def put(d, name, data):
        os.makedirs(os.path.join(top, d), exist_ok=True)
        with open(os.path.join(top, d, name), "wb") as f:
            f.write(data)

    put("rcchunk", "seed-all-events", payload)
    put("rcchunk", "seed-unknown-id", tick(0, [vi(15) + b"\x01\x02"]))
    comp = subprocess.run(["zstd", "-q", "-c", "-3"], input=payload, stdout=subprocess.PIPE,
                          check=True).stdout
    meta = b"\x0a\x08\x00\x03map" + struct.pack(">H", 4) + b"test" + b"\x00"

    def rec(chunks):
        entries, start = [], 0
        for ticks, c, u in chunks:
            entries.append((start, ticks, c, u))
            start += ticks
        parts = [vi(s) + vi(t) + b"\x01" + b"\0" * 8 + vi(len(c)) + vi(u)
                 for s, t, c, u in entries]
        o = 256 + len(meta) + sum(len(p) for p in parts)
        idx = b""
        for (s, t, c, u), p in zip(entries, parts):
            k = len(vi(s) + vi(t)) + 1
            idx += p[:k] + struct.pack(">q", o) + p[k + 8:]
            o += len(c)
        h = (b"HCRP" + struct.pack(">hh", 4, 0) + bytes(range(16)) + bytes([16]) + bytes(16) +
             struct.pack(">qhiiiii", 1786000000000, 0, len(meta), len(idx), start, len(entries),
                         4671))
        return h.ljust(256, b"\0") + meta + idx + b"".join(c for _, c, _ in chunks)

    put("recording", "seed-one-chunk.hcrp", rec([(3, comp, len(payload))]))
    put("recording", "seed-two-chunks.hcrp", rec([(3, comp, len(payload))] * 2))
    put("snbt", "seed-text", b'{\n    a: 1b,\n    "b c": [1, 2],\n    d: [I; 1, 2],\n'
        b'    e: "x\\u0000y",\n    f: 1.5f,\n    g: -1e+16d,\n    h: [{}, {k: 1L}]\n}\n')
    put("snbt", "seed-nbt", meta)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus"))
