#!/usr/bin/env python3
"""pngread.py - a small, independent PNG decoder for the tests: any colour
type and bit depth of 8 (and palettes of 1-8 bits), no interlacing.

  pngread.py FILE         prints "WIDTH HEIGHT SHA256-of-RGBA"
  import: read_rgba(bytes) -> (width, height, rgba bytes)
"""
import hashlib
import struct
import sys
import zlib


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_rgba(data):
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, plte, trns = 8, bytearray(), None, None
    w = h = depth = ctype = None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if interlace:
                raise ValueError('interlaced PNGs are not read here')
        elif kind == b'PLTE':
            plte = body
        elif kind == b'tRNS':
            trns = body
        elif kind == b'IDAT':
            idat += body
        elif kind == b'IEND':
            break
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    if depth != 8 and ctype != 3:
        raise ValueError('only 8-bit samples are read here')
    bpp_bits = chans * depth
    stride = (w * bpp_bits + 7) // 8
    bpp = max(1, bpp_bits // 8)
    raw = zlib.decompress(bytes(idat))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 255
        rows.append(line)
        prev = line
    out = bytearray()
    for line in rows:
        if ctype == 6:
            out += line
        elif ctype == 2:
            for x in range(w):
                out += line[3 * x:3 * x + 3] + b'\xff'
        elif ctype == 0:
            for x in range(w):
                out += bytes([line[x]] * 3) + b'\xff'
        elif ctype == 4:
            for x in range(w):
                out += bytes([line[2 * x]] * 3) + bytes([line[2 * x + 1]])
        else:
            for x in range(w):
                bit = x * depth
                v = (line[bit // 8] >> (8 - depth - bit % 8)) & ((1 << depth) - 1)
                if 3 * v + 3 > len(plte):
                    raise ValueError('palette index %d past the palette' % v)
                alpha = trns[v] if trns is not None and v < len(trns) else 255
                out += plte[3 * v:3 * v + 3] + bytes([alpha])
    return w, h, bytes(out)


if __name__ == '__main__':
    for path in sys.argv[1:]:
        with open(path, 'rb') as fh:
            w, h, px = read_rgba(fh.read())
        print(w, h, hashlib.sha256(px).hexdigest())
