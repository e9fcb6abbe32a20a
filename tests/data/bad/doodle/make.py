#!/usr/bin/env python3
"""Writes the malformed and the odd-but-tolerated Sketchy Maze drawings of
this directory.

Each container is built here from the format notes (shared/formats/doodle.md)
with Python's json, gzip and zipfile only (no savefs code); a defect that
zipfile cannot make (a cut file, a wrong CRC, a directory offset past the
end, corrupt deflate data) is patched into its bytes afterwards.  Zip
members carry a fixed date, gzip a zero mtime: the output depends only on
this script.  For each variant NAME:

  NAME.level | NAME.doodad | NAME.levelpack    the container
  NAME.msg     the exact one-line message (no file: none)
  NAME.how     what happens, in one of these forms:
                 fails: savefs info exits 5
                     opening (and mounting) fails with the message;
                     `savefs info NAME.level` prints "savefs: <msg>"
                 mounts: chunks/0/0,0.txt reads EIO (savefs cat exits 7)
                     the container opens; reading that file fails with EIO
                     and the message; `savefs cat` of it exits 7 and prints
                     "savefs: chunks/0/0,0.txt: <msg>".  Further lines
                     "also: PATH" name other views of the same entry that
                     fail with the same message (a chunk's .png, say)
                 mounts: levels/bad lists EIO
                     the container opens; listing that (nested) directory
                     fails with EIO and the log says "cannot list
                     levels/bad: <msg>"
                 mounts: chunks/0/0,0.txt reads OK, log has the message
                 mounts: chunks/0/0,0.txt reads OK, info warns the message
                 mounts: chunks/0/0,0.txt reads OK, log is empty
                     tolerated input: the container opens and every file
                     reads; after reading them the log holds the message
                     (or, for "info warns", the warnings of /.savefs/info
                     hold it; for "log is empty", the log holds nothing)
  NAME.expect  (with "reads OK", when present) the exact bytes PATH reads:
               the text grid, rendered here from the notes in doodle.h

The messages are the ones the code gives; tests/unit/test_bad.c checks every
variant in-process and through the command line.

  make.py           (re)writes every file here
  make.py --check   exits 1 if a file here differs from what would be written
"""
import base64
import copy
import gzip
import io
import json
import os
import struct
import sys
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# The plumbing the three make.py share (tests/data/bad/badlib.py); no
# bytecode, so that no __pycache__ lands in the tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import badlib  # noqa: E402
EMPTY = 0xFFFF
DATE = (1980, 1, 1, 0, 0, 0)

FAILS = 'fails: savefs info exits 5'
# Not a drawing at all (someone else's zip): an unknown format.
UNKNOWN = 'fails: savefs info exits 4'


def eio(path, *also):
    return '\n'.join(['mounts: %s reads EIO (savefs cat exits 7)' % path] +
                     ['also: %s' % a for a in also])


def ok(path, what):
    return 'mounts: %s reads OK, %s' % (path, what)


# ---- encodings ---------------------------------------------------------------

def uvarint(v):
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def zigzag(v):
    return v * 2 if v >= 0 else -v * 2 - 1


def rle(runs):
    """A type 1 chunk: (index, run) pairs, EMPTY for an empty pixel."""
    return uvarint(1) + b''.join(uvarint(i) + uvarint(n) for i, n in runs)


def map_accessor(pixels):
    """A type 0 chunk: (x, y, index) with absolute coordinates."""
    return uvarint(0) + b''.join(uvarint(zigzag(x)) + uvarint(zigzag(y)) + uvarint(i)
                                 for x, y, i in pixels)


def grid_runs(rows):
    """The RLE runs of a grid given as strings: '.' empty, a digit an index."""
    flat = [EMPTY if c == '.' else int(c) for c in ''.join(rows)]
    runs = []
    for v in flat:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return [tuple(r) for r in runs]


def json_pixels(rows, cx, cy, size):
    """A JSON chunk's "data" map: absolute "x,y" keys."""
    data = {}
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            if ch != '.':
                data['%d,%d' % (cx * size + c, cy * size + r)] = int(ch)
    return data


def dumps(obj):
    return json.dumps(obj, separators=(',', ':')).encode()


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def make_zip(members):
    """members: (name, bytes[, deflate]) in order; stored unless deflate."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        for m in members:
            name, data = m[0], m[1]
            deflate = len(m) > 2 and m[2]
            zi = zipfile.ZipInfo(name, date_time=DATE)
            zi.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            zi.create_system = 3
            z.writestr(zi, data, compresslevel=9 if deflate else None)
    return buf.getvalue()


def zip_layout(data):
    """name -> offsets of a member's local header, central record, data."""
    end = data.rfind(b'PK\5\6')
    n, cd_size, cd_off = struct.unpack_from('<HII', data, end + 10)
    out = {'': {'end': end, 'cd_off': cd_off, 'cd_size': cd_size}}
    at = cd_off
    for _ in range(n):
        (crc, csize, usize, nl, el, cl) = struct.unpack_from('<IIIHHH', data, at + 16)
        lho, = struct.unpack_from('<I', data, at + 42)
        name = data[at + 46:at + 46 + nl].decode()
        lnl, lel = struct.unpack_from('<HH', data, lho + 26)
        out[name] = {'local': lho, 'central': at, 'data': lho + 30 + lnl + lel,
                     'crc': crc, 'csize': csize}
        at += 46 + nl + el + cl
    return out


def patch(b, off, fmt, *v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, *v)
    return bytes(b)


def set_crc(data, name, crc):
    m = zip_layout(data)[name]
    data = patch(data, m['local'] + 14, '<I', crc)
    return patch(data, m['central'] + 16, '<I', crc)


# ---- the text grid (doodle.h: sv_doodle_text_render) -------------------------

def text_grid(palette, rows, cx, cy, size, layer=0, bad=None):
    """palette: [(colour '#rrggbb[aa]', name)]; rows: '.' empty, a digit an
    index, '?' an index past the palette."""
    n = len(palette)
    w = 1 if n <= 62 else 2 if n <= 62 * 62 else 3
    x0, y0 = cx * size, cy * size
    out = ['# chunk %d,%d layer %d size %d' % (cx, cy, layer, size),
           '# pixels %d..%d x %d..%d, %d character(s) each, top row first'
           % (x0, x0 + size - 1, y0, y0 + size - 1, w),
           '# %s  empty' % ('.' * w)]
    digits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
    for i, (colour, name) in enumerate(palette):
        code = ''
        for _ in range(w):
            code = digits[i % 62] + code
            i //= 62
        out.append('# %s  %s%s' % (code, colour, '  ' + name if name else ''))
    out += [''.join(c * w for c in row) for row in rows]
    return ('\n'.join(out) + '\n').encode()


# ---- the drawings -------------------------------------------------------------

SWATCHES = [
    {'name': 'solid', 'color': '#000000', 'pattern': 'noise.png', 'solid': True},
    {'name': 'fire', 'color': '#ff0000', 'pattern': 'marker.png', 'fire': True},
    {'name': 'water', 'color': '#0000ff', 'pattern': 'bubbles.png', 'water': True},
]
LEGEND = [('#000000', 'solid'), ('#ff0000', 'fire'), ('#0000ff', 'water')]
SIZE = 4
# Chunk 0,0 and chunk 1,0 of every level here.
GRID0 = ['0...', '.11.', '..2.', '0000']
GRID1 = ['2222', '....', '....', '....']
SCREENSHOT = bytes(range(40))  # stands for assets/screenshots/large.png


def level_root(size=SIZE, inline=None, files=None, swatches=None):
    """A level's root JSON, keys in the game's order."""
    return {
        'version': 1, 'gameVersion': '0.14.1', 'title': 'Bad input', 'author': 'savefs',
        'locked': False, 'files': files if files is not None else {}, 'passwd': '',
        'uuid': '00000000-0000-4000-8000-000000000000',
        'rules': {'difficulty': 0, 'survival': False},
        'chunks': {'size': size, 'chunks': inline if inline is not None else {}},
        'palette': {'swatches': swatches if swatches is not None else SWATCHES},
        'pageType': 2, 'boundedWidth': 64, 'boundedHeight': 64,
        'wallpaper': 'notebook.png', 'scroll': '0,0', 'actors': {},
        'saveDoodads': False, 'saveBuiltins': False,
    }


def doodad_root(layers=None):
    return {
        'version': 1, 'gameVersion': '0.14.1', 'title': 'Bad doodad', 'author': 'savefs',
        'locked': False, 'files': {}, 'hidden': False,
        'palette': {'swatches': SWATCHES},
        'size': {'X': 0, 'Y': 0, 'W': SIZE, 'H': SIZE}, 'script': '',
        'hitbox': {'X': 0, 'Y': 0, 'W': SIZE, 'H': SIZE},
        'layers': layers if layers is not None else
        [{'name': 'main', 'chunks': {'size': SIZE, 'chunks': {}}}],
        'data': {}, 'options': {},
    }


def level_zip(chunk0=None, chunk0_name='chunks/0/0,0.bin', root=None, deflate0=False,
              extra=()):
    """A zip level as the game writes it: chunks, files, the root last."""
    members = []
    if chunk0 is not False:
        members.append((chunk0_name, rle(grid_runs(GRID0)) if chunk0 is None else chunk0,
                        deflate0))
    members.append(('chunks/0/1,0.bin', rle(grid_runs(GRID1))))
    members += list(extra)
    members.append(('assets/screenshots/large.png', SCREENSHOT, True))
    members.append(('level.json', dumps(level_root() if root is None else root), True))
    return make_zip(members)


def inline_chunk(rows, cx=0, cy=0, size=SIZE):
    return {'type': 0, 'data': json_pixels(rows, cx, cy, size)}


def level_v1(inline=None, files=None, **kw):
    if inline is None:
        inline = {'0,0': inline_chunk(GRID0), '1,0': inline_chunk(GRID1, 1)}
    return dumps(level_root(inline=inline, files=files, **kw))


# ---- the variants -------------------------------------------------------------

def variants():
    out = []

    def add(name, ext, data, how, msg='', expect=None):
        out.append((name, ext, data, how, msg, expect))

    good = level_zip()

    # -- The container itself: opening fails. --
    add('zip-truncated', 'level', good[:len(good) // 2], FAILS,
        'doodle: zip: no end of central directory record (not a zip file, or truncated)')
    add('zip-tiny', 'level', good[:12], FAILS,
        'doodle: zip: no end of central directory record (not a zip file, or truncated)')
    L = zip_layout(good)['']
    add('zip-directory-past-end', 'level', patch(good, L['end'] + 16, '<I', len(good) + 100),
        FAILS, 'doodle: zip: byte %d: central directory lies outside the file' % L['end'])
    add('zip-directory-size-past-end', 'level',
        patch(good, L['end'] + 12, '<I', L['cd_size'] + 1000), FAILS,
        'doodle: zip: byte %d: central directory lies outside the file' % L['end'])
    add('zip-too-many-entries', 'level', patch(patch(good, L['end'] + 8, '<H', 0xFFFF),
                                               L['end'] + 10, '<H', 0xFFFF), FAILS,
        'doodle: zip: byte %d: 65535 entries cannot fit in a central directory of %d bytes'
        % (L['end'], L['cd_size']))
    add('zip-no-root', 'level', make_zip([('chunks/0/0,0.bin', rle(grid_runs(GRID0))),
                                          ('readme.txt', b'no drawing here\n')]), UNKNOWN,
        'doodle: zip holds no level.json, doodad.json or index.json: not a drawing')
    # A name that is almost right is still not the root.
    add('zip-root-misnamed', 'level', make_zip([('Level.json', dumps(level_root()))]), UNKNOWN,
        'doodle: zip holds no level.json, doodad.json or index.json: not a drawing')

    bad_json = dumps(level_root())[:40]
    add('json-unparseable', 'level', bad_json, FAILS,
        'doodle: JSON: byte 40: premature end of input near \'"tit\'')
    add('gzip-json-unparseable', 'level', gz(bad_json), FAILS,
        'doodle: gzip content: byte 40: premature end of input near \'"tit\'')
    add('zip-json-unparseable', 'level', make_zip([('level.json', bad_json, True)]), FAILS,
        'doodle: level.json: byte 40: premature end of input near \'"tit\'')
    add('json-trailing-garbage', 'level', dumps(level_root()) + b'}', FAILS,
        'doodle: JSON: byte %d: end of file expected near \'}\'' % (len(dumps(level_root())) + 1))
    add('zip-root-not-object', 'level', make_zip([('level.json', b'[1, 2, 3]', True)]), FAILS,
        'doodle: level.json: not a JSON object')
    add('zip-doodad-not-object', 'doodad',
        make_zip([('doodad.json', dumps([doodad_root()]), True)]), FAILS,
        'doodle: doodad.json: not a JSON object')
    # jansson itself refuses a bare value at the top.
    add('zip-index-scalar', 'levelpack', make_zip([('index.json', b'42', True)]), FAILS,
        'doodle: index.json: byte 2: \'[\' or \'{\' expected near \'42\'')
    root_crc = zip_layout(good)['level.json']['crc']
    add('zip-root-bad-crc', 'level', set_crc(good, 'level.json', root_crc ^ 0xFFFFFFFF), FAILS,
        'doodle: zip: level.json: CRC mismatch (stored 0x%08x, computed 0x%08x)'
        % (root_crc ^ 0xFFFFFFFF, root_crc))

    z = gz(level_v1())
    # Deflate data from byte 10 on: its first block header says "type 3".
    add('gzip-corrupt', 'level', z[:10] + b'\xff' + z[11:], FAILS,
        'doodle: gzip: invalid block type at byte 11')
    add('gzip-truncated', 'level', z[:len(z) - 30], FAILS,
        'doodle: gzip: truncated after %d bytes' % (len(z) - 30))
    add('gzip-trailing-garbage', 'level', z + b'junk', FAILS,
        'doodle: gzip: 4 bytes after the end of the stream')

    def sized(size):
        r = level_root()
        r['chunks']['size'] = size
        return dumps(r)
    add('chunk-size-0', 'level', sized(0), FAILS,
        'doodle: level.json: chunk size 0 is out of range (1..4096)')
    add('chunk-size-100000', 'level', level_zip(root=json.loads(sized(100000))), FAILS,
        'doodle: level.json: chunk size 100000 is out of range (1..4096)')
    add('chunk-size-negative', 'level', gz(sized(-128)), FAILS,
        'doodle: level.json: chunk size -128 is out of range (1..4096)')
    add('chunk-size-string', 'level', sized('128'), FAILS,
        'doodle: level.json: chunk size is not an integer')
    add('chunk-size-float', 'level', sized(128.0), FAILS,
        'doodle: level.json: chunk size is not an integer')

    def doodad_zip(root):
        return make_zip([('chunks/0/0,0.bin', rle(grid_runs(GRID0))),
                         ('doodad.json', dumps(root), True)])
    r = doodad_root()
    r['layers'] = {'name': 'main', 'chunks': {'size': SIZE, 'chunks': {}}}
    add('doodad-layers-not-array', 'doodad', doodad_zip(r), FAILS,
        'doodle: doodad.json: "layers" is not a non-empty array')
    add('doodad-layers-empty', 'doodad', doodad_zip(doodad_root(layers=[])), FAILS,
        'doodle: doodad.json: "layers" is not a non-empty array')
    add('doodad-layer-size-0', 'doodad',
        doodad_zip(doodad_root(layers=[{'name': 'main', 'chunks': {'size': 0}}])), FAILS,
        'doodle: doodad.json: chunk size 0 is out of range (1..4096)')
    add('doodad-too-many-layers', 'doodad', doodad_zip(doodad_root(layers=[0] * 4097)), FAILS,
        'doodle: doodad.json: 4097 layers, more than 4096')

    r = level_root()
    r['palette'] = {'swatches': {'0': SWATCHES[0]}}
    add('palette-swatches-not-array', 'level', dumps(r), FAILS,
        'doodle: level.json: palette: "swatches" is not an array')
    add('zip-palette-swatches-not-array', 'level', level_zip(root=r), FAILS,
        'doodle: level.json: palette: "swatches" is not an array')
    r = level_root()
    r['palette'] = ['#000000']
    add('palette-not-object', 'level', level_zip(root=r), FAILS,
        'doodle: level.json: palette: not an object')

    # -- Entries: the container mounts, one entry reads EIO. --
    add('chunk-type-7', 'level', level_zip(chunk0=uvarint(7) + b'\x00\x10'),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png'), 'chunk type 7 not supported')
    add('chunk-empty-bin', 'level', level_zip(chunk0=b''),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png'), 'empty chunk')
    add('chunk-varint-too-long', 'level',
        level_zip(chunk0=rle([(0, 1)]) + b'\xff' * 10 + b'\x01'),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png'), 'byte 3: varint longer than 64 bits')
    z = level_zip(deflate0=True)
    m = zip_layout(z)['chunks/0/0,0.bin']
    add('chunk-corrupt-deflate', 'level', patch(z, m['data'], '<B', 0xff),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'zip: chunks/0/0,0.bin: corrupt deflate data (invalid block type)')
    crc = zip_layout(good)['chunks/0/0,0.bin']['crc']
    add('chunk-bad-crc', 'level', set_crc(good, 'chunks/0/0,0.bin', crc ^ 1),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'zip: chunks/0/0,0.bin: CRC mismatch (stored 0x%08x, computed 0x%08x)' % (crc ^ 1, crc))
    crc = zip_layout(good)['assets/screenshots/large.png']['crc']
    add('asset-bad-crc', 'level', set_crc(good, 'assets/screenshots/large.png', crc ^ 0x100),
        eio('assets/screenshots/large.png'),
        'zip: assets/screenshots/large.png: CRC mismatch (stored 0x%08x, computed 0x%08x)'
        % (crc ^ 0x100, crc))
    add('json-chunk-not-json', 'level',
        level_zip(chunk0=b'{"type": 0, "data": {"0,0": 1,}}', chunk0_name='chunks/0/0,0.json'),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'doodle: chunks/0/0,0.json: byte 31: string or \'}\' expected near \'}\'')
    add('json-chunk-not-object', 'level',
        level_zip(chunk0=b'[0, 1]', chunk0_name='chunks/0/0,0.json'),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'doodle: chunks/0/0,0.json: not a JSON object')
    add('inline-chunk-type-3', 'level',
        level_v1(inline={'0,0': {'type': 3, 'data': {'0,0': 1}},
                         '1,0': inline_chunk(GRID1, 1)}),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'chunk type 3 not supported')
    add('inline-chunk-no-data', 'level',
        level_v1(inline={'0,0': {'type': 0}, '1,0': inline_chunk(GRID1, 1)}),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'chunk has no "data" object or string')
    add('inline-chunk-bad-base64', 'level',
        level_v1(inline={'0,0': {'type': 0, 'data': 'AAA*'}, '1,0': inline_chunk(GRID1, 1)}),
        eio('chunks/0/0,0.txt', 'chunks/0/0,0.png', 'chunks/0/0,0.bin'),
        'base64: byte 3: \'*\' is not base64')
    add('inline-file-not-base64', 'level',
        level_v1(files={'assets/notes.txt': {'data': 'bm90ZXMK'},
                        'assets/broken.txt': {'data': 'not base64!'}}),
        eio('assets/broken.txt'), 'base64: byte 10: \'!\' is not base64')

    # -- Tolerated: mounts and reads; the log says what was tolerated. --
    top = ['0000', '....', '....', '....']
    add('rle-run-too-long', 'level', level_zip(chunk0=rle([(0, 4), (EMPTY, 30)])),
        ok('chunks/0/0,0.txt', 'log has the message'),
        'chunks/0/0,0: RLE runs go 18 pixel(s) past the end of the chunk: cut off',
        text_grid(LEGEND, top, 0, 0, SIZE))
    add('rle-one-pixel-short', 'level',
        level_zip(chunk0=rle(grid_runs(GRID0)[:-1] + [(0, 3)])),
        ok('chunks/0/0,0.txt', 'log is empty'), '',
        text_grid(LEGEND, GRID0[:3] + ['000.'], 0, 0, SIZE))
    add('rle-many-pixels-short', 'level', level_zip(chunk0=rle([(0, 4), (EMPTY, 2)])),
        ok('chunks/0/0,0.txt', 'log has the message'),
        'chunks/0/0,0: RLE stream 10 pixels short: the rest left empty',
        text_grid(LEGEND, top, 0, 0, SIZE))
    add('rle-index-past-palette', 'level',
        level_zip(chunk0=rle([(0, 1), (7, 2), (EMPTY, 13)])),
        ok('chunks/0/0,0.txt', 'log has the message'),
        "chunks/0/0,0: 2 pixel(s) with an index past the palette (3 colours): shown as '?'",
        text_grid(LEGEND, ['0??.', '....', '....', '....'], 0, 0, SIZE))
    add('map-pixel-outside', 'level',
        level_zip(chunk0=map_accessor([(0, 0, 1), (100, 3, 2), (3, 3, 2)])),
        ok('chunks/0/0,0.txt', 'log has the message'),
        'chunks/0/0,0: 1 pixel(s) outside the chunk: ignored',
        text_grid(LEGEND, ['1...', '....', '....', '...2'], 0, 0, SIZE))
    add('map-partial-record', 'level',
        level_zip(chunk0=map_accessor([(1, 1, 0)]) + uvarint(zigzag(2))),
        ok('chunks/0/0,0.txt', 'log has the message'),
        'chunks/0/0,0: a partial record at the end: ignored',
        text_grid(LEGEND, ['....', '.0..', '....', '....'], 0, 0, SIZE))
    inline = {'0,0': inline_chunk(GRID0), 'a,b': inline_chunk(GRID1, 1)}
    add('chunk-key-not-xy', 'level', level_v1(inline=inline),
        ok('chunks/0/0,0.txt', 'info warns the message'),
        'chunk key "a,b" in layer 0 is not "x,y": kept, not shown',
        text_grid(LEGEND, GRID0, 0, 0, SIZE))
    short = [dict(s, color=c) for s, c in zip(SWATCHES, ['#000', '#F00', '#00f8'])]
    add('colours-short-form', 'level', level_zip(root=level_root(swatches=short)),
        ok('chunks/0/0,0.txt', 'log is empty'), '',
        text_grid([('#000000', 'solid'), ('#ff0000', 'fire'), ('#0000ff88', 'water')],
                  GRID0, 0, 0, SIZE))
    # The game matches keys without regard to case; real files rely on it.
    upper = {'Version': 1, 'Title': 'Upper case', 'Chunks': {
        'Size': SIZE, 'Chunks': {'0,0': {'Type': 0, 'Data': json_pixels(GRID0, 0, 0, SIZE)}}},
        'Palette': {'Swatches': [{'Name': n, 'Color': c} for c, n in LEGEND]}}
    add('keys-upper-case', 'level', dumps(upper), ok('chunks/0/0,0.txt', 'log is empty'), '',
        text_grid(LEGEND, GRID0, 0, 0, SIZE))
    dd = {'Version': 1, 'Title': 'Upper case doodad', 'Palette': {'Swatches': SWATCHES},
          'Size': {'X': 0, 'Y': 0, 'W': SIZE, 'H': SIZE},
          'Layers': [{'Name': 'main', 'Chunks': {'Size': SIZE, 'Chunks': {}}}]}
    add('keys-upper-case-doodad', 'doodad',
        make_zip([('chunks/0/0,0.bin', rle(grid_runs(GRID0))), ('doodad.json', dumps(dd))]),
        ok('chunks/0/0,0.txt', 'log is empty'), '', text_grid(LEGEND, GRID0, 0, 0, SIZE))
    neg = ['.1..', '....', '2...', '...0']
    add('negative-chunk', 'level',
        level_v1(inline={'-1,-2': inline_chunk(neg, -1, -2), '0,0': inline_chunk(GRID0)}),
        ok('chunks/0/-1,-2.txt', 'log is empty'), '', text_grid(LEGEND, neg, -1, -2, SIZE))
    add('negative-chunk-rle', 'level',
        level_zip(chunk0=rle(grid_runs(neg)), chunk0_name='chunks/0/-3,-1.bin'),
        ok('chunks/0/-3,-1.txt', 'log is empty'), '', text_grid(LEGEND, neg, -3, -1, SIZE))

    # -- Levelpacks: a nested level that does not open. --
    def pack(nested):
        index = {'title': 'Bad pack', 'description': '', 'author': 'savefs',
                 'created': '2024-01-01T00:00:00Z', 'freeLevels': 1,
                 'levels': [{'title': n, 'author': 'savefs', 'filename': n}
                            for n, _ in nested]}
        return make_zip([('levels/' + n, d, True) for n, d in nested] +
                        [('index.json', dumps(index), True)])
    add('pack-nested-unparseable', 'levelpack',
        pack([('good.level', level_zip()), ('bad.level', gz(bad_json))]),
        'mounts: levels/bad lists EIO',
        'doodle: gzip content: byte 40: premature end of input near \'"tit\'')
    add('pack-in-pack', 'levelpack',
        pack([('good.level', level_zip()), ('inner.level', pack([('x.level', level_zip())]))]),
        'mounts: levels/inner lists EIO', 'doodle: a levelpack inside a levelpack')
    return out


def files():
    for name, ext, data, how, msg, expect in variants():
        yield '%s.%s' % (name, ext), data
        if msg:
            yield name + '.msg', (msg + '\n').encode()
        yield name + '.how', (how + '\n').encode()
        if expect is not None:
            yield name + '.expect', expect


def main():
    return badlib.main(HERE, files)


if __name__ == '__main__':
    sys.exit(main())
