#!/usr/bin/env python3
"""An independent decoder of a Teeworlds/DDNet map's meaning, for the tests:
written from shared/formats/teeworlds.md and DDNet's loader rules, on top of
dfdecode.py's container reader, sharing no code with savefs.

mapdecode.py --check MAP DIR   compares DIR/map (a mount or `savefs
                               extract` of MAP) with what this decoder
                               makes of MAP: the same files; text files
                               byte for byte, JSON files as values, PNGs
                               pixel for pixel, sounds byte for byte.
mapdecode.py --loader MAP      applies DDNet's loader rules (map.cpp) to
                               MAP: exit 1 with the rule broken.
mapdecode.py --tiles MAP LAYER prints layer LAYER's tiles, one line per
                               row, "index:flags" cells (for edits' checks).
mapdecode.py --runs MAP LAYER  prints how many tiles layer LAYER stores
                               (version 4 runs) and how many it has.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dfdecode  # noqa: E402
import pngread  # noqa: E402

Bad = dfdecode.Bad
need = dfdecode.need

KINDS = {0: 'tiles', 1: 'game', 2: 'tele', 4: 'speedup', 8: 'front', 16: 'switch', 32: 'tune'}
TITLES = {'tiles': 'Tiles', 'game': 'Game', 'tele': 'Tele', 'speedup': 'Speedup',
          'front': 'Front', 'switch': 'Switch', 'tune': 'Tune', 'quads': 'Quads',
          'sounds': 'Sounds', 'sounds-old': 'Sounds', 'unknown': 'Layer'}
# grid file, bytes a tile, characters a cell, what a cell holds
GRIDS = {
    'tiles': ('tiles.txt', 4, 3, 'tile index (2 hex digits) and flags (1 hex digit: 1 x-flip, '
              '2 y-flip, 4 opaque, 8 rotate); ... = 0 0'),
    'tele': ('tele.txt', 2, 4, 'number and type (2 hex digits each); .... = 0 0'),
    'speedup': ('speedup.txt', 6, 10, 'force, max speed and type (2 hex digits each), angle '
                '(4 hex digits, int16); .......... = all 0'),
    'switch': ('switch.txt', 4, 8, 'number, type, flags and delay (2 hex digits each); '
               '........ = all 0'),
    'tune': ('tune.txt', 2, 4, 'number and type (2 hex digits each); .... = 0 0'),
}
PHYS_ORDER = ['tele', 'speedup', 'front', 'switch', 'tune']
CURVES = ['step', 'linear', 'slow', 'fast', 'smooth', 'bezier']
BEZIER_UUID = bytes.fromhex('3ab4f84dd9cc3c78b5850d6ccdb2e25c')


def unpack_name(ints):
    b = bytearray()
    for v in ints:
        v &= 0xffffffff
        for sh in (24, 16, 8, 0):
            b.append(((v >> sh) & 0xff) - 128 & 0xff)
    b[-1] = 0
    s = bytes(b).split(b'\0')[0]
    try:
        return s.decode('utf-8')
    except UnicodeDecodeError:
        return ''


def part(name, default):
    if not name:
        name = default
    s = ''.join('_' if c == '/' or ord(c) < 0x20 or c == '\x7f' else c for c in name)
    b = s.encode('utf-8')[:63]
    s = b.decode('utf-8', 'ignore')
    return '_' if s in ('.', '..') else s


def digits(n):
    k, v = 2, 100
    while n > v and k < 10:
        k, v = k + 1, v * 10
    return k


def fx(v):
    return v / 1024.0


class Map:
    def __init__(self, path):
        self.hdr, items, self.data = dfdecode.decode(path)
        self.items = items
        self.by = {}
        for t, i, p in items:
            self.by.setdefault(t, []).append((i, struct.unpack('<%di' % (len(p) // 4), p)))
        vers = [v for i, v in self.by.get(0, []) if i == 0]
        self.is_map = bool(vers) and len(vers[0]) >= 1 and vers[0][0] == 1
        # the extended type named by the bezier UUID
        self.bez = None
        for i, v in self.by.get(0xffff, []):
            if len(v) >= 4 and struct.pack('>4i', *v[:4]) == BEZIER_UUID and i in self.by:
                self.bez = self.by[i][0][1]

    def ints(self, t):
        return [v for _, v in self.by.get(t, [])]

    def string(self, idx):
        if idx == -1:
            return None
        need(0 <= idx < len(self.data), 'data index %d' % idx)
        b = self.data[idx]
        need(b and b[-1] == 0, 'data item %d is not a string' % idx)
        return b.split(b'\0')[0].decode('utf-8', 'replace')


def layers_of(m):
    """(group index, group ints, [(layer index, layer ints)]) of grouped layers."""
    lays = m.ints(5)
    out = []
    used = set()
    for g, gv in enumerate(m.ints(4)):
        need(len(gv) >= 7, 'group %d is truncated' % g)
        s, n = gv[5], gv[6]
        need(s >= 0 and n >= 0 and s + n <= len(lays), 'group %d uses layers past the end' % g)
        ls = []
        for k in range(s, s + n):
            need(k not in used, 'layer %d is in two groups' % k)
            used.add(k)
            ls.append((k, lays[k]))
        out.append((g, gv, ls))
    return out


def tile_layer(v):
    """The fields DDNet reads of a tile layer item."""
    n = len(v)
    need(n >= 15, 'tile layer of %d ints' % n)
    L = {'tver': v[3], 'w': v[4], 'h': v[5], 'flags': v[6], 'color': list(v[7:11]),
         'cenv': v[11], 'cenvoff': v[12], 'image': v[13], 'data': v[14]}
    need(2 <= L['tver'] <= 4, 'tile layer version %d' % L['tver'])
    phys = L['flags'] & 63
    need(phys & (phys - 1) == 0, 'two physics flags')
    L['kind'] = KINDS[phys]
    if L['tver'] >= 3:
        need(n >= 18, 'name cut short')
        L['name'] = unpack_name(v[15:18])
        at = 18
    else:
        L['name'] = None
        at = 15
    L['phys'] = {}
    for k, p in enumerate(PHYS_ORDER):
        L['phys'][p] = v[at + k] if at + k < n else -1
    return L


def grid_index(L):
    k = L['kind']
    if k in ('tiles', 'game'):
        return 'tiles', L['data']
    if k == 'front':
        return 'tiles', L['phys']['front']
    return k, L['phys'][k]


def expand(m, L, grid, idx):
    """width*height tiles of `grid`, as bytes, runs expanded."""
    fname, size, cw, _ = GRIDS[grid]
    n = L['w'] * L['h']
    need(0 <= idx < len(m.data), 'data index %d' % idx)
    raw = m.data[idx]
    if grid == 'tiles' and L['tver'] >= 4:
        out = bytearray()
        for k in range(0, len(raw) - 3, 4):
            need(raw[k + 3] == 0, 'a tile run has padding')
            out += bytes([raw[k], raw[k + 1], 0, 0]) * (raw[k + 2] + 1)
        need(len(out) >= 4 * n, 'runs give %d tiles of %d' % (len(out) // 4, n))
        need(len(out) - 4 * n < 4 * (raw[-2] + 1) if raw else True, 'runs past the end')
        return bytes(out[:4 * n])
    need(len(raw) >= size * n, 'data %d is short' % idx)
    if grid == 'tiles':
        for k in range(n):
            need(raw[4 * k + 2] == 0 and raw[4 * k + 3] == 0, 'skip or padding in version < 4')
    return raw[:size * n]


def grid_text(m, L, grid, idx, dname, gi, gname, ndig_grp):
    fname, size, cw, cell = GRIDS[grid]
    t = expand(m, L, grid, idx)
    lines = ['# layer %s in group %0*d-%s: %s, %d x %d, tilemap version %d'
             % (dname, ndig_grp, gi, gname, L['kind'], L['w'], L['h'], L['tver']),
             '# cell: ' + cell]
    for y in range(L['h']):
        row = []
        for x in range(L['w']):
            c = t[size * (y * L['w'] + x):size * (y * L['w'] + x + 1)]
            if grid == 'tiles':
                row.append('...' if c[0] == 0 and c[1] & 15 == 0 else '%02x%x' % (c[0], c[1] & 15))
            elif grid == 'speedup':
                f = (c[0], c[1], c[2], c[5], c[4])
                row.append('.' * 10 if not any(f) else ''.join('%02x' % b for b in f))
            else:
                row.append('.' * cw if not any(c) else c.hex())
        lines.append(' '.join(row))
    return ('\n'.join(lines) + '\n').encode()


COLOURS = {0: None, 1: 0x808080ff, 2: 0xc80000ff, 3: 0x3c3c5aff, 4: 0x5a5a3cff, 5: 0xa0a0c8ff,
           6: 0xa0a0c8ff, 66: 0xa0a0c8ff, 67: 0xa0a0c8ff, 9: 0x00a0ffff, 12: 0x0050c8ff,
           11: 0x96dcffff, 13: 0x96dcffff, 33: 0x00c800ff, 34: 0xffd700ff, 28: 0xff8000ff,
           60: 0x643200ff, 61: 0x643200ff, 62: 0x643200ff}
for _t in (10, 14, 15, 26, 27, 29, 30, 31, 63):
    COLOURS[_t] = 0xa000c8ff


def colour(t):
    if t in COLOURS:
        v = COLOURS[t]
    elif 35 <= t <= 59:
        v = 0x787800ff
    elif 192 <= t <= 194:
        v = 0x00ff00ff
    elif t >= 192:
        v = 0xffff00ff
    else:
        v = 0xff00ffff
    return bytes(4) if v is None else v.to_bytes(4, 'big')


def expected(path):
    """{relative path under map/: ('text'|'json'|'rgba'|'bytes'|'bad', value)}."""
    m = Map(path)
    if not m.is_map:
        return None
    out = {}
    info = m.ints(1)
    if info:
        iv = info[0]
        need(len(iv) >= 5, 'info item is short')
        out['info.json'] = ('json', {k: m.string(iv[1 + f]) for f, k in
                                     enumerate(['author', 'version', 'credits', 'license'])})
        cmds = b''
        if len(iv) >= 6 and iv[5] != -1:
            raw = m.data[iv[5]]
            cmds = b''.join(c + b'\n' for c in (raw[:-1] if raw.endswith(b'\0') else raw).split(b'\0'))
            if not raw:
                cmds = b''
        out['settings.cfg'] = ('bytes', cmds)
    else:
        # No info item (maps from before it): both shown empty, to be
        # written (an edit adds the item).
        out['info.json'] = ('json', {k: None for k in ['author', 'version', 'credits', 'license']})
        out['settings.cfg'] = ('bytes', b'')
    imgs = m.ints(2)
    nd = digits(len(imgs))
    ij = []
    for k, v in enumerate(imgs):
        name = m.string(v[4])
        ext = v[3]
        fmt = v[6] if v[0] >= 2 and len(v) >= 7 else 1
        e = {'index': k, 'name': name, 'width': v[1], 'height': v[2], 'embedded': not ext,
             'version': v[0], 'problem': None}
        if v[0] >= 2:
            e['format'] = fmt
        ij.append(e)
        if not ext:
            px = m.data[v[5]]
            n = v[1] * v[2]
            if fmt == 0:
                px = b''.join(px[3 * i:3 * i + 3] + b'\xff' for i in range(n))
            out['images/%0*d-%s.png' % (nd, k, part(name, 'image'))] = ('rgba', (v[1], v[2], px[:4 * n]))
    if imgs:
        out['images.json'] = ('json', ij)
    snds = m.ints(7)
    nd = digits(len(snds))
    for k, v in enumerate(snds):
        if not v[1]:
            out['sounds/%0*d-%s.opus' % (nd, k, part(m.string(v[2]), 'sound'))] = ('bytes', m.data[v[3]])
    envs = m.ints(3)
    pts = m.ints(6)
    pts = pts[0] if pts else ()
    pi = 22 if any(v[0] >= 3 for v in envs) else 6
    npts = len(pts) // pi
    bez = m.bez if m.bez is not None and pi == 6 and len(m.bez) == 16 * npts else None
    nd = digits(len(envs))
    for k, v in enumerate(envs):
        name = unpack_name(v[4:12]) if v[4] != -1 else ''
        o = {'name': name, 'version': v[0], 'channels': v[1]}
        if v[0] >= 2 and len(v) >= 13:
            o['synchronized'] = bool(v[12])
        plist = []
        for i in range(v[3]):
            q = pts[(v[2] + i) * pi:(v[2] + i + 1) * pi]
            p = {'time': q[0], 'curve': CURVES[q[1]] if 0 <= q[1] < 6 else q[1],
                 'values': [fx(x) for x in q[2:6]]}
            t = q[6:22] if pi == 22 else (bez[(v[2] + i) * 16:(v[2] + i + 1) * 16] if bez else None)
            if t is not None:
                p['bezier'] = {'in': [[t[c], fx(t[4 + c])] for c in range(4)],
                               'out': [[t[8 + c], fx(t[12 + c])] for c in range(4)]}
            plist.append(p)
        o['points'] = plist
        out['envelopes/%0*d-%s.json' % (nd, k, part(name, 'Envelope'))] = ('json', o)
    groups = layers_of(m)
    ndg = digits(len(groups))
    ndl = digits(len(m.ints(5)))
    game = front = None
    for g, gv, ls in groups:
        gname = unpack_name(gv[12:15]) if gv[0] >= 3 and len(gv) >= 15 else ''
        gdir = 'groups/%0*d-%s' % (ndg, g, part(gname, 'Group'))
        go = {'name': gname, 'version': gv[0], 'offset': [gv[1], gv[2]],
              'parallax': [gv[3], gv[4]]}
        if gv[0] >= 2 and len(gv) >= 12:
            go['clipping'] = {'enabled': bool(gv[7]), 'x': gv[8], 'y': gv[9], 'width': gv[10],
                              'height': gv[11]}
        names = []
        for k, lv in ls:
            lo = {}
            broken = None
            if lv[1] == 2:
                try:
                    L = tile_layer(lv)
                    if L['w'] < 2 or L['h'] < 2:
                        raise Bad('size')
                except Bad as e:
                    broken = str(e)
            if broken is not None:
                kind, title = 'unknown', ''
                lo = {'kind': 'unreadable', 'type': lv[1], 'ints': list(lv)}
                dname = '%0*d-%s' % (ndl, k, part(title, TITLES[kind]))
                names.append(dname)
                out[gdir + '/' + dname + '/layer.json'] = ('json-problem', lo)
                continue
            if lv[1] == 2:
                kind = L['kind']
                lo = {'kind': kind}
                if L['name'] is not None:
                    lo['name'] = L['name']
                lo.update({'detail': bool(lv[2] & 1), 'version': L['tver'], 'width': L['w'],
                           'height': L['h'], 'color': L['color'], 'color_envelope': L['cenv'],
                           'color_envelope_offset': L['cenvoff'], 'image': L['image']})
                title = L['name'] or ''
            elif lv[1] in (3, 9, 10):
                kind = {3: 'quads', 9: 'sounds-old', 10: 'sounds'}[lv[1]]
                named = len(lv) >= 10 and (kind != 'quads' or lv[3] >= 2)
                title = unpack_name(lv[7:10]) if named else ''
                lo = {'kind': kind}
                if named:
                    lo['name'] = title
                lo.update({'detail': bool(lv[2] & 1), 'version': lv[3],
                           ('quads' if kind == 'quads' else 'sources'): lv[4],
                           ('image' if kind == 'quads' else 'sound'): lv[6]})
            else:
                kind, title = 'unknown', ''
                lo = {'kind': kind, 'type': lv[1], 'ints': list(lv)}
            dname = '%0*d-%s' % (ndl, k, part(title, TITLES[kind]))
            names.append(dname)
            ldir = gdir + '/' + dname
            out[ldir + '/layer.json'] = ('json', lo)
            if lv[1] == 2:
                grid, idx = grid_index(L)
                out[ldir + '/' + GRIDS[grid][0]] = ('bytes', grid_text(
                    m, L, grid, idx, dname, g, part(gname, 'Group'), ndg))
                if kind == 'game':
                    game = L
                if kind == 'front' and front is None:
                    front = L
            elif kind in ('quads', 'sounds', 'sounds-old'):
                per = {'quads': 38, 'sounds': 13, 'sounds-old': 9}[kind]
                raw = m.data[lv[5]] if lv[4] else b''
                arr = []
                for i in range(lv[4]):
                    x = struct.unpack_from('<%di' % per, raw, 4 * per * i)
                    if kind == 'quads':
                        arr.append({'points': [[fx(x[2 * c]), fx(x[2 * c + 1])] for c in range(4)],
                                    'pivot': [fx(x[8]), fx(x[9])],
                                    'colors': [list(x[10 + 4 * c:14 + 4 * c]) for c in range(4)],
                                    'texcoords': [[fx(x[26 + 2 * c]), fx(x[27 + 2 * c])]
                                                  for c in range(4)],
                                    'position_envelope': x[34], 'position_envelope_offset': x[35],
                                    'color_envelope': x[36], 'color_envelope_offset': x[37]})
                    elif kind == 'sounds':
                        arr.append({'position': [fx(x[0]), fx(x[1])], 'loop': x[2], 'pan': x[3],
                                    'time_delay': x[4], 'falloff': x[5],
                                    'position_envelope': x[6], 'position_envelope_offset': x[7],
                                    'sound_envelope': x[8], 'sound_envelope_offset': x[9],
                                    'shape': x[10], 'size': [fx(x[11]), fx(x[12])]})
                    else:
                        arr.append({'position': [fx(x[0]), fx(x[1])], 'loop': x[2],
                                    'time_delay': x[3], 'falloff': x[4],
                                    'position_envelope': x[5], 'position_envelope_offset': x[6],
                                    'sound_envelope': x[7], 'sound_envelope_offset': x[8]})
                out[ldir + '/' + ('quads.json' if kind == 'quads' else 'sources.json')] = ('json', arr)
        go['layers'] = names
        out[gdir + '/group.json'] = ('json', go)
    if game is not None:
        gt = expand(m, game, 'tiles', game['data'])
        ft = None
        if front is not None and front['w'] * front['h'] >= game['w'] * game['h']:
            ft = expand(m, front, 'tiles', front['phys']['front'])
        px = bytearray()
        for i in range(game['w'] * game['h']):
            t = ft[4 * i] if ft and ft[4 * i] else gt[4 * i]
            px += colour(t)
        out['game.png'] = ('rgba', (game['w'], game['h'], bytes(px)))
    return out


def check(path, root):
    want = expected(path)
    base = os.path.join(root, 'map')
    if want is None:
        if os.path.exists(base):
            print('%s is not a map, but %s exists' % (path, base))
            return 1
        return 0
    have = set()
    for d, _, fs in os.walk(base):
        for f in fs:
            have.add(os.path.relpath(os.path.join(d, f), base))
    bad = []
    for p in sorted(set(want) | have):
        if p not in want:
            bad.append('%s: not expected' % p)
            continue
        if p not in have:
            bad.append('%s: missing' % p)
            continue
        kind, v = want[p]
        with open(os.path.join(base, p), 'rb') as fh:
            got = fh.read()
        if kind == 'bytes' and got != v:
            bad.append('%s: bytes differ (%d vs %d bytes)' % (p, len(got), len(v)))
        elif kind in ('json', 'json-problem'):
            try:
                g = json.loads(got)
            except ValueError as e:
                bad.append('%s: not JSON (%s)' % (p, e))
                continue
            if kind == 'json-problem' and isinstance(g, dict):
                g.pop('problem', None)
            if g != v:
                bad.append('%s: %s != %s' % (p, json.dumps(g)[:300], json.dumps(v)[:300]))
        elif kind == 'rgba':
            try:
                w, h, px = pngread.read_rgba(got)
            except Exception as e:  # noqa: BLE001
                bad.append('%s: not a PNG (%s)' % (p, e))
                continue
            if (w, h, px) != v:
                bad.append('%s: pixels differ (%dx%d vs %dx%d)' % (p, w, h, v[0], v[1]))
    for b in bad[:30]:
        print(b)
    if not bad:
        print('%d map files agree' % len(want))
    return 1 if bad else 0


def loader(path):
    """DDNet's CMap::Load checks (src/engine/shared/map.cpp)."""
    m = Map(path)
    need(m.is_map, 'map version item missing or not 1')
    groups = layers_of(m)
    game = None
    used = set()
    tls = []
    for g, gv, ls in groups:
        for k, lv in ls:
            need(len(lv) >= 3, 'layer %d truncated' % k)
            if lv[1] != 2:
                continue
            L = tile_layer(lv)
            need(L['w'] >= 2 and L['h'] >= 2, 'layer %d: size %dx%d' % (k, L['w'], L['h']))
            # (A physics layer's name, colour and detail flag DDNet resets
            # itself, with a debug line: not refusals.)
            if L['kind'] == 'tiles':
                need(all(0 <= c <= 255 for c in L['color']), 'layer %d: colour' % k)
            if L['kind'] == 'game':
                game = L
            tls.append((k, L))
    need(game is not None, 'game layer is missing')
    for k, L in tls:
        grid, idx = grid_index(L)
        need(0 <= idx < len(m.data), 'layer %d: tile data index %d is invalid' % (k, idx))
        need(idx not in used, 'layer %d: tile data index %d is not unique' % (k, idx))
        used.add(idx)
        if L['kind'] not in ('tiles', 'game'):
            need(L['w'] * L['h'] >= game['w'] * game['h'],
                 'physics layer %d is smaller than the game layer' % k)
            need(L['tver'] < 4, 'layer %d uses tile runs' % k)
        t = expand(m, L, grid, idx)
        if grid == 'speedup':
            need(all(t[6 * i + 3] == 0 for i in range(L['w'] * L['h'])),
                 'layer %d: speedup padding' % k)
    return 0


def main():
    a = sys.argv[1:]
    try:
        if len(a) == 3 and a[0] == '--check':
            return check(a[1], a[2])
        if len(a) == 2 and a[0] == '--loader':
            return loader(a[1])
        if len(a) == 3 and a[0] in ('--tiles', '--runs'):
            m = Map(a[1])
            lv = m.ints(5)[int(a[2])]
            L = tile_layer(lv)
            grid, idx = grid_index(L)
            if a[0] == '--runs':
                print(len(m.data[idx]) // GRIDS[grid][1], L['w'] * L['h'])
                return 0
            t = expand(m, L, grid, idx)
            size = GRIDS[grid][1]
            for y in range(L['h']):
                print(' '.join(':'.join(str(b) for b in t[size * (y * L['w'] + x):size * (y * L['w'] + x + 1)])
                               for x in range(L['w'])))
            return 0
    except Bad as e:
        print('mapdecode: %s: %s' % (a[1], e))
        return 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main())
