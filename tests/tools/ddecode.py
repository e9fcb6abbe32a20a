#!/usr/bin/env python3
"""An independent Sketchy Maze (doodle) decoder for the tests: written from
the format notes (shared/formats/doodle.md) and the text grid layout that
core/fmt/sketchy/doodle.h documents, with Python's json, gzip, zipfile and base64
only, sharing no code with savefs.

ddecode.py FILE OUTDIR   writes OUTDIR/chunks/<layer>/<x>,<y>.txt, the text
                         grid of every chunk, as savefs shows it; for a
                         .levelpack, OUTDIR/levels/<name>/chunks/... for
                         each nested level and OUTDIR/doodads/<name>/...
                         for each doodad (<name>: the member's file name
                         without its extension).
ddecode.py FILE --list   prints "layer x y" for every chunk (a levelpack:
                         "levels/<name> layer x y"), sorted by layer, then
                         x, then y.

Containers: v1 JSON, v2 gzip of it, zip (level.json or doodad.json with
chunks/<layer>/<x>,<y>.bin or .json members, or chunks inline in the root
JSON), .levelpack (index.json, levels/*).  Where a chunk exists in more than
one form, the .bin member wins over the .json member over the inline entry,
as in the game.  Keys of the root and chunk JSON are matched
case-insensitively (the last match in the text wins, as Go's decoder does).

Chunks:  .bin is uvarint type, then type 0 (map accessor: zigzag x, zigzag y,
uvarint index, absolute world coordinates, a partial triple at the end
ignored) or type 1 (RLE: uvarint index, uvarint run, 0xFFFF empty; runs
clamped at the chunk's end, a short stream leaves the rest empty).  A JSON
chunk is {"type": 0, "data": {"x,y": index}} (absolute coordinates) or
"data" a base64 string of map-accessor bytes.  An index past the palette is
shown as '?'; coordinates outside the chunk are ignored.

The text grid of chunk (cx, cy) of layer L, size S, palette of n swatches:

  # chunk CX,CY layer L size S
  # pixels X0..X1 x Y0..Y1, W character(s) each, top row first
  # <W dots>  empty
  # <code>  <colour>  <name>        one line per swatch ("  <name>" left
                                    out when the name is empty)
  S lines of S cells of W characters

W is 1 for n <= 62, 2 for n <= 3844, else 3; the code of index i is i in
base 62 (0-9a-zA-Z) padded with '0' to W; empty is W dots, a bad index W
question marks.  Colours: #rrggbb, or #rrggbbaa when alpha is not ff;
input #rgb/#rgba/#rrggbb/#rrggbbaa, anything else black (#000000).
Control characters (bytes below 0x20 and 0x7f) in names are shown as '?'.

A file that cannot be decoded exits 1 with a one-line reason; a chunk that
cannot be decoded is reported on stderr, skipped, and makes the exit
status 1 once the others are written.
"""
import base64
import binascii
import gzip
import io
import json
import os
import re
import sys
import zipfile
import zlib

EMPTY = 0xFFFF
BAD = -1
MAX_SIZE = 4096
MAX_PALETTE = 0xFFFE
DIGITS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
XY = re.compile(r'^(-?[0-9]+),(-?[0-9]+)$')
MEMBER = re.compile(r'^chunks/([0-9]+)/(-?[0-9]+),(-?[0-9]+)\.(bin|json)$')


class Bad(Exception):
    pass


class Obj:
    """A JSON object: its pairs in document order, looked up
    case-insensitively (the last match wins)."""

    def __init__(self, pairs):
        self.pairs = pairs

    def get(self, key, default=None):
        k = key.lower()
        for name, value in reversed(self.pairs):
            if name.lower() == k:
                return value
        return default

    def exact(self):
        """The pairs by exact key, the last one winning, in first order."""
        out = {}
        for name, value in self.pairs:
            out[name] = value
        return out


def parse_json(data, what):
    try:
        text = data.decode('utf-8')
        return json.loads(text, object_pairs_hook=Obj)
    except (UnicodeDecodeError, ValueError) as e:
        raise Bad('%s: not JSON: %s' % (what, e))


def parse_xy(s):
    """A chunk or pixel key "x,y": decimal, optional '-', within int32."""
    m = XY.match(s) if isinstance(s, str) else None
    if not m:
        return None
    x, y = int(m.group(1)), int(m.group(2))
    if not all(-2 ** 31 <= v < 2 ** 31 for v in (x, y)):
        return None
    return x, y


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# ---- varints -------------------------------------------------------------

class Short(Exception):
    """The data ended inside a varint."""


def uvarint(p, pos):
    v = 0
    for k in range(10):
        if pos + k >= len(p):
            raise Short()
        b = p[pos + k]
        if k == 9 and b > 1:
            raise Bad('varint at byte %d overflows 64 bits' % pos)
        v |= (b & 0x7f) << (7 * k)
        if b < 0x80:
            return v, pos + k + 1
    raise Bad('varint at byte %d is longer than 10 bytes' % pos)


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


# ---- chunks --------------------------------------------------------------

class Grid:
    def __init__(self, size, cx, cy):
        self.size = size
        self.x0, self.y0 = cx * size, cy * size
        self.px = [EMPTY] * (size * size)

    def put(self, x, y, index, npal):
        """A pixel at absolute world coordinates; outside: ignored."""
        dx, dy = x - self.x0, y - self.y0
        if 0 <= dx < self.size and 0 <= dy < self.size:
            self.px[dy * self.size + dx] = index if 0 <= index < npal else BAD


def map_decode(p, pos, npal, g):
    while pos < len(p):
        try:
            zx, pos = uvarint(p, pos)
            zy, pos = uvarint(p, pos)
            index, pos = uvarint(p, pos)
        except Short:
            return  # a partial triple at the end
        g.put(unzigzag(zx), unzigzag(zy), index, npal)


def rle_decode(p, pos, npal, g):
    total, at = g.size * g.size, 0
    while pos < len(p) and at < total:
        try:
            index, pos = uvarint(p, pos)
            run, pos = uvarint(p, pos)
        except Short:
            break  # a partial pair at the end
        v = EMPTY if index == 0xFFFF else index if index < npal else BAD
        run = min(run, total - at)  # clamped, never trusted
        g.px[at:at + run] = [v] * run
        at += run
    # The rest (a short stream) stays empty.


def bin_decode(p, npal, g):
    if not p:
        raise Bad('empty chunk')
    try:
        kind, pos = uvarint(p, 0)
    except Short:
        raise Bad('truncated chunk type')
    if kind == 0:
        map_decode(p, pos, npal, g)
    elif kind == 1:
        rle_decode(p, pos, npal, g)
    else:
        raise Bad('unknown chunk type %d' % kind)


def b64decode(s):
    t = ''.join(s.split())
    t = t.rstrip('=')
    if len(t) % 4 == 1:
        raise Bad('bad base64 length')
    try:
        return base64.b64decode(t + '=' * (-len(t) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise Bad('bad base64')


def json_chunk_decode(chunk, npal, g):
    if not isinstance(chunk, Obj):
        raise Bad('chunk is not a JSON object')
    kind = chunk.get('type', 0)
    if not is_int(kind):
        raise Bad('chunk type is not a number')
    if kind != 0:
        raise Bad('unknown chunk type %d' % kind)
    data = chunk.get('data')
    if isinstance(data, str):
        map_decode(b64decode(data), 0, npal, g)
    elif isinstance(data, Obj):
        for key, index in data.exact().items():
            xy = parse_xy(key)
            if xy is None or not is_int(index):
                continue
            g.put(xy[0], xy[1], index, npal)
    else:
        raise Bad('chunk has no data')


# ---- the palette and the text grid ----------------------------------------

def colour(s):
    """(r, g, b, a) of "#rgb", "#rgba", "#rrggbb", "#rrggbbaa"; else None."""
    if not isinstance(s, str) or not s.startswith('#'):
        return None
    h = s[1:]
    if len(h) not in (3, 4, 6, 8) or any(c not in '0123456789abcdefABCDEF' for c in h):
        return None
    if len(h) in (3, 4):
        v = [int(c, 16) * 17 for c in h]
    else:
        v = [int(h[i:i + 2], 16) for i in range(0, len(h), 2)]
    if len(v) == 3:
        v.append(255)
    return tuple(v)


def palette(root):
    pal = root.get('palette')
    if pal is None:
        return []
    if not isinstance(pal, Obj):
        raise Bad('palette is not an object')
    sw = pal.get('swatches')
    if sw is None:
        return []
    if not isinstance(sw, list):
        raise Bad('palette swatches is not an array')
    if len(sw) > MAX_PALETTE:
        raise Bad('palette has %d swatches' % len(sw))
    out = []
    for s in sw:
        name = s.get('name') if isinstance(s, Obj) else None
        c = colour(s.get('color')) if isinstance(s, Obj) else None
        raw = name.encode('utf-8') if isinstance(name, str) else b''
        shown = bytes(ord('?') if b < 0x20 or b == 0x7f else b for b in raw)
        r, gr, b, a = c if c else (0, 0, 0, 255)
        text = '#%02x%02x%02x' % (r, gr, b) + ('' if a == 255 else '%02x' % a)
        out.append((shown, text.encode()))
    return out


def cell_width(n):
    return 1 if n <= 62 else 2 if n <= 62 * 62 else 3


def code(i, w):
    s = ''
    for _ in range(w):
        s = DIGITS[i % 62] + s
        i //= 62
    return s


def render(pal, layer, cx, cy, g):
    w = cell_width(len(pal))
    s = g.size
    head = ['# chunk %d,%d layer %d size %d' % (cx, cy, layer, s),
            '# pixels %d..%d x %d..%d, %d character(s) each, top row first'
            % (g.x0, g.x0 + s - 1, g.y0, g.y0 + s - 1, w),
            '# %s  empty' % ('.' * w)]
    out = io.BytesIO()
    out.write(('\n'.join(head) + '\n').encode())
    codes = [code(i, w).encode() for i in range(len(pal))]
    for i, (name, col) in enumerate(pal):
        # An empty name leaves no trailing blanks.
        out.write(b'# ' + codes[i] + b'  ' + col + (b'  ' + name if name else b'') + b'\n')
    cells = {EMPTY: b'.' * w, BAD: b'?' * w}
    for y in range(s):
        row = g.px[y * s:(y + 1) * s]
        out.write(b''.join(cells[v] if v in cells else codes[v] for v in row) + b'\n')
    return out.getvalue()


# ---- containers -------------------------------------------------------------

def chunk_size(chunks, what):
    size = chunks.get('size', 128) if isinstance(chunks, Obj) else 128
    if not is_int(size) or not 0 < size <= MAX_SIZE:
        raise Bad('%s: bad chunk size %r' % (what, size))
    return size


def inline_chunks(chunks):
    """{(x, y): chunk JSON} of a chunks object's "chunks" map."""
    m = chunks.get('chunks') if isinstance(chunks, Obj) else None
    out = {}
    if isinstance(m, Obj):
        for key, value in m.exact().items():
            xy = parse_xy(key)
            if xy is not None:
                out[xy] = value
    return out


class Drawing:
    """A level or doodad: its palette, and per layer its chunk size and
    chunks {(x, y): ('bin', bytes) | ('json', JSON)}."""

    def __init__(self, root, members=None):
        if not isinstance(root, Obj):
            raise Bad('the root JSON is not an object')
        self.pal = palette(root)
        self.layers = []
        layers = root.get('layers')
        if isinstance(layers, list):  # a doodad
            for i, layer in enumerate(layers):
                ch = layer.get('chunks') if isinstance(layer, Obj) else None
                self.layers.append([chunk_size(ch, 'layer %d' % i),
                                    {xy: ('json', c) for xy, c in inline_chunks(ch).items()}])
        else:
            ch = root.get('chunks')
            self.layers.append([chunk_size(ch, 'chunks'),
                                {xy: ('json', c) for xy, c in inline_chunks(ch).items()}])
        # Members override inline chunks; .bin overrides .json.
        for rank in ('json', 'bin'):
            for name, data in (members or {}).items():
                m = MEMBER.match(name)
                if not m or m.group(4) != rank or str(int(m.group(1))) != m.group(1):
                    continue
                layer = int(m.group(1))
                xy = parse_xy('%s,%s' % (m.group(2), m.group(3)))
                if layer >= len(self.layers) or xy is None:
                    continue
                if rank == 'bin':
                    self.layers[layer][1][xy] = ('bin', data())
                else:
                    self.layers[layer][1][xy] = ('jsonmember', data)

    def chunks(self):
        for layer, (size, cs) in enumerate(self.layers):
            for (x, y) in sorted(cs):
                yield layer, x, y

    def text(self, layer, x, y):
        size, cs = self.layers[layer]
        kind, data = cs[(x, y)]
        g = Grid(size, x, y)
        n = len(self.pal)
        if kind == 'bin':
            bin_decode(data, n, g)
        elif kind == 'jsonmember':
            json_chunk_decode(parse_json(data(), 'chunk'), n, g)
        else:
            json_chunk_decode(data, n, g)
        return render(self.pal, layer, x, y, g)


def open_bytes(data, what):
    """A Drawing, or a list of (name, Drawing) for a levelpack."""
    if data[:2] == b'\x1f\x8b':
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise Bad('%s: bad gzip: %s' % (what, e))
        return Drawing(parse_json(data, what))
    if data[:4] == b'PK\x03\x04':
        try:
            z = zipfile.ZipFile(io.BytesIO(data))
            names = set(z.namelist())
        except (zipfile.BadZipFile, OSError) as e:
            raise Bad('%s: bad zip: %s' % (what, e))

        def reader(name):
            def read():
                try:
                    return z.read(name)
                except (zipfile.BadZipFile, OSError, zlib.error) as e:
                    raise Bad('%s: %s: %s' % (what, name, e))
            return read
        for root in ('level.json', 'doodad.json'):
            if root in names:
                members = {n: reader(n) for n in names if n.startswith('chunks/')}
                return Drawing(parse_json(reader(root)(), what + ': ' + root), members)
        if 'index.json' in names:
            out = []
            for top in ('levels/', 'doodads/'):
                for n in sorted(names):
                    base = n[len(top):]
                    if n.startswith(top) and base and '/' not in base:
                        name = base.rsplit('.', 1)[0] if '.' in base[1:] else base
                        out.append((top + name, open_bytes(reader(n)(), what + ': ' + n)))
            return out
        raise Bad('%s: a zip without level.json, doodad.json or index.json' % what)
    if data.lstrip()[:1] == b'{':
        return Drawing(parse_json(data, what))
    raise Bad('%s: not a Sketchy Maze file' % what)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    path = argv[1]
    try:
        with open(path, 'rb') as f:
            data = f.read()
        d = open_bytes(data, path)
    except (Bad, OSError) as e:
        print('ddecode: %s' % e, file=sys.stderr)
        return 1
    drawings = d if isinstance(d, list) else [(None, d)]
    failed = False
    if argv[2] == '--list':
        for name, dr in drawings:
            for layer, x, y in dr.chunks():
                print(('%s ' % name if name is not None else '') + '%d %d %d' % (layer, x, y))
        return 0
    for name, dr in drawings:
        top = argv[2] if name is None else os.path.join(argv[2], name)
        for layer, x, y in dr.chunks():
            where = 'chunks/%d/%d,%d' % (layer, x, y)
            try:
                text = dr.text(layer, x, y)
            except Bad as e:
                print('ddecode: %s: %s: %s' % (path if name is None else path + ': ' + name,
                                              where, e), file=sys.stderr)
                failed = True
                continue
            os.makedirs(os.path.join(top, 'chunks', str(layer)), exist_ok=True)
            with open(os.path.join(top, where + '.txt'), 'wb') as f:
                f.write(text)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
