#!/usr/bin/env python3
"""An independent NetHack 4.3 game log (.nhgame) decoder for the tests:
written from the format notes (shared/formats/nethack4.md) with Python's
base64 and zlib only, sharing no code with savefs or tests/tools/mknhgame.c.

nhdecode.py header FILE          the header fields, one "name: value" a line
nhdecode.py lines FILE           one line per log line: number, byte offset,
                                 kind and what it holds (payload sizes, a
                                 diff's format and commands)
nhdecode.py check FILE           parses every line, applies every diff to the
                                 save before it, checks every eof_crc32 and
                                 the backup pointers; prints a summary
                                 (line kinds, diff formats, beta3 commands
                                 used, payload forms) and exits 1 at the
                                 first problem, naming the line
nhdecode.py states FILE DIR      writes DIR/<line>.sav, the save after every
                                 backup and diff line (<line>: its 1-based
                                 line number in 6 digits)
nhdecode.py applyline PREV LINEFILE OUT
                                 LINEFILE holds one `~` line: applies it to
                                 the save PREV and writes OUT; or one `*`
                                 line: writes its save to OUT (PREV unused)

The file: line 1 `NHGAME <save|done> <8 hex> 4.003.000`, line 2 exactly 78
characters right-justified, line 3 `<hex start> 0 <mode> <base64 name>
<role> <race> <gender> <alignment>`, then body lines decided by their first
character (* ~ a-z + P D K Y M O L B Q).  Bytes after the last newline are
an unfinished write: reported, not read.

Payloads: base64 with padding, or `$<len>$` and base64 of a zlib stream
that inflates to exactly <len> bytes.

Diffs build the new save from the previous one with a read position `pos`
(starts at 0; edits advance it too; a seek subtracts its argument):
  4.3-beta1  no header; little-endian 16-bit words, top 2 bits the command
             (0 seek, 14-bit signed; 2 edit n; 3 copy n; 1 invalid), 00 00
             ends.
  4.3-beta2  header 01 40; big-endian: 0eexxxxx xxxxxxxx copy 13 bits then
             edit e+1; 100 4-byte copy 25 bits then edit 4 bits; 101 4-byte
             edit 29 bits; 111 2-byte seek 13 bits signed; 110 4-byte seek
             29 bits signed; 00 00 ends.
  4.3-beta3  header 01 43; an MSB-first bit stream of commands coded by
             their place in a most-recently-used list (table order at the
             start): w one bits and a zero, then w+1 bits v, index
             2+4+...+2^w + v; `wider` adds 8 bits to the next command's
             arg1; then arg2's fixed bits, then arg1: the rest of the byte
             plus whole bytes up to at least its minimum; literal bytes
             follow byte-aligned.
A diff must end with its end marker and nothing after it.
"""
import base64
import binascii
import os
import re
import sys
import zlib

ROW = 85  # beta3 coord stride


class Bad(Exception):
    """Malformed input; the message says where and why."""


# ---- payloads ------------------------------------------------------------------

B64 = re.compile(r'^[A-Za-z0-9+/]*={0,2}$')


def payload(text, what='payload'):
    """Decodes a payload; returns (bytes, compressed)."""
    compressed = text.startswith('$')
    body = text
    size = None
    if compressed:
        m = re.match(r'^\$(0|[1-9][0-9]*)\$', text)
        if not m:
            raise Bad('%s: bad "$len$" prefix' % what)
        size = int(m.group(1))
        body = text[m.end():]
    if len(body) % 4 or not B64.match(body):
        raise Bad('%s: not base64' % what)
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as e:
        raise Bad('%s: not base64 (%s)' % (what, e))
    if not compressed:
        return raw, False
    z = zlib.decompressobj()
    try:
        out = z.decompress(raw, size + 1) if size else z.decompress(raw)
    except zlib.error as e:
        raise Bad('%s: corrupt zlib stream (%s)' % (what, e))
    if not z.eof or z.unused_data or z.unconsumed_tail:
        raise Bad('%s: the zlib stream does not end where the payload does' % what)
    if len(out) != size:
        raise Bad('%s: inflates to %d bytes, not %d' % (what, len(out), size))
    return out, True


def engine_would_compress(raw):
    """The engine's rule: compressed when "$len$" plus the zlib stream
    (compress2, level 9) is shorter than the raw bytes."""
    return len('$%d$' % len(raw)) + len(zlib.compress(raw, 9)) < len(raw)


# ---- diffs ---------------------------------------------------------------------

class State:
    """The reader's state over one diff."""

    def __init__(self, base, diff):
        self.base = base
        self.d = diff
        self.pos = 0
        self.out = bytearray()

    def copy(self, n, at):
        if n == 0:
            return
        if self.pos < 0:
            raise Bad('diff byte %d: copy of %d bytes from before the start (pos %d)'
                      % (at, n, self.pos))
        if self.pos + n > len(self.base):
            raise Bad('diff byte %d: copy of %d bytes past the end of the previous save '
                      '(pos %d of %d)' % (at, n, self.pos, len(self.base)))
        self.out += self.base[self.pos:self.pos + n]
        self.pos += n

    def literal(self, i, n, at):
        if i + n > len(self.d):
            raise Bad('diff byte %d: %d literal bytes run past the end of the diff' % (at, n))
        self.out += self.d[i:i + n]
        self.pos += n
        return i + n

    def seek(self, s, at):
        self.pos -= s
        if self.pos < 0:
            raise Bad('diff byte %d: seek to before the start (pos %d)' % (at, self.pos))

    def base_byte(self, k, at):
        p = self.pos + k
        if p < 0 or p >= len(self.base):
            raise Bad('diff byte %d: adjusts byte %d of a %d-byte previous save'
                      % (at, p, len(self.base)))
        return self.base[p]


def apply_beta1(base, d, stats):
    s = State(base, d)
    i = 0
    while True:
        if i + 2 > len(d):
            raise Bad('diff byte %d: ends without its end marker' % i)
        w = d[i] | d[i + 1] << 8
        at = i
        i += 2
        if w == 0:
            break
        cmd, n = w >> 14, w & 0x3fff
        if n in (0x3fff, 0x2000, 0x1fff):
            key = 'beta1 run at the 14-bit limit'
            stats[key] = stats.get(key, 0) + 1
        if cmd == 0:
            s.seek(n - 0x4000 if n & 0x2000 else n, at)
            stats['beta1 seek'] = stats.get('beta1 seek', 0) + 1
        elif cmd == 2:
            i = s.literal(i, n, at)
            stats['beta1 edit'] = stats.get('beta1 edit', 0) + 1
        elif cmd == 3:
            s.copy(n, at)
            stats['beta1 copy'] = stats.get('beta1 copy', 0) + 1
        else:
            raise Bad('diff byte %d: invalid beta1 command 1' % at)
    if i != len(d):
        raise Bad('diff byte %d: %d bytes after the end marker' % (i, len(d) - i))
    return bytes(s.out), False


def apply_beta2(base, d, stats):
    s = State(base, d)
    i = 2

    def word(k):
        if i + k > len(d):
            raise Bad('diff byte %d: ends inside a %d-byte command' % (i, k))
        return int.from_bytes(d[i:i + k], 'big')

    while True:
        at = i
        w = word(2)
        copy = edit = seek = 0
        if w == 0:
            i += 2
            break
        top = w >> 13
        if not w & 0x8000:
            copy, edit = w & 0x1fff, (w >> 13 & 3) + 1
            i += 2
            name = 'copyedit'
        elif top == 4:
            x = word(4)
            copy, edit = x & 0x1ffffff, x >> 25 & 0xf
            i += 4
            name = 'large copyedit'
        elif top == 5:
            edit = word(4) & 0x1fffffff
            i += 4
            name = 'large edit' if edit != 1 else 'large edit of 1 (a0 00 00 01)'
        elif top == 7:
            seek = w & 0x1fff
            seek = seek - 0x2000 if seek & 0x1000 else seek
            i += 2
            name = 'seek'
        else:
            x = word(4) & 0x1fffffff
            seek = x - 0x20000000 if x & 0x10000000 else x
            i += 4
            name = 'large seek'
        stats['beta2 ' + name] = stats.get('beta2 ' + name, 0) + 1
        if seek:
            s.seek(seek, at)
        s.copy(copy, at)
        i = s.literal(i, edit, at)
    if i != len(d):
        raise Bad('diff byte %d: %d bytes after the end marker' % (i, len(d) - i))
    return bytes(s.out), False


# beta3: name, arg1 minimum bits, arg2 bits, arg1 signed
B3 = [('copyedit', 12, 2, False), ('copy', 6, 0, False), ('edit', 4, 0, False),
      ('seek', 8, 0, True), ('wider', 0, 0, False), ('eof', 12, 0, False),
      ('coord', 1, 3, False), ('erase', 7, 3, False), ('increment', 12, 0, False),
      ('copyedit1', 4, 0, False), ('eof_crc32', 12, 32, False), ('rle', 2, 0, False)]
DX = [-1, -1, 0, 1, 1, 1, 0, -1]
DY = [0, -1, -1, -1, 0, 1, 1, 1]


def apply_beta3(base, d, stats):
    s = State(base, d)
    mru = list(range(len(B3)))
    cb = 0
    bit = 16  # bit position in d

    def read(n):
        nonlocal bit
        if (bit + n + 7) // 8 > len(d):
            raise Bad('diff byte %d: ends inside a command' % (bit // 8))
        v = 0
        for _ in range(n):
            v = v << 1 | (d[bit >> 3] >> (7 - (bit & 7)) & 1)
            bit += 1
        return v

    while True:
        if bit // 8 >= len(d):
            raise Bad('diff byte %d: ends without eof or eof_crc32' % (bit // 8))
        at = bit // 8
        widen = 0
        while True:
            w = 0
            while read(1):
                w += 1
                if w > 2:
                    raise Bad('diff byte %d: unknown command code' % at)
            idx = (1 << (w + 1)) - 2 + read(w + 1)
            if idx >= len(B3):
                raise Bad('diff byte %d: unknown command %d' % (at, idx))
            cmd = mru.pop(idx)
            mru.insert(0, cmd)
            if B3[cmd][0] != 'wider':
                break
            widen += 1
        name, lo, n2, signed = B3[cmd]
        if name == 'rle':
            raise Bad('diff byte %d: rle, which is never written' % at)
        arg2 = read(n2)
        need = lo + 8 * widen
        n1 = (8 - bit % 8) % 8
        while n1 < need:
            n1 += 8
        arg1 = read(n1)
        if signed and n1 and arg1 >> (n1 - 1):
            arg1 -= 1 << n1
        assert bit % 8 == 0
        i = bit // 8
        key = 'beta3 ' + name
        stats[key] = stats.get(key, 0) + 1
        if widen:
            stats['beta3 wider'] = stats.get('beta3 wider', 0) + widen
        if widen > 1:
            stats['beta3 command widened twice or more'] = \
                stats.get('beta3 command widened twice or more', 0) + 1
        if name == 'copyedit':
            s.copy(arg1, at)
            i = s.literal(i, arg2 + 1, at)
        elif name == 'copy':
            s.copy(arg1, at)
            cb = len(s.out)
        elif name == 'edit':
            i = s.literal(i, arg1 + 1, at)
        elif name == 'seek':
            s.seek(arg1, at)
        elif name in ('eof', 'eof_crc32'):
            s.copy(arg1, at)
            bit = i * 8
            break
        elif name == 'coord':
            r = (len(s.out) - cb) % ROW
            s.copy(arg1 * ROW + (ROW - r if r else 0), at)
            dx, dy = DX[arg2], DY[arg2]
            if dy == 0:
                s.out.append((s.base_byte(0, at) + dx) & 0xff)
                s.pos += 1
            else:
                x, y = s.base_byte(0, at), s.base_byte(1, at)
                s.out += bytes(((x + dx) & 0xff, (y + dy) & 0xff))
                s.pos += 2
        elif name == 'erase':
            s.copy(arg1, at)
            s.out += bytes(arg2 + 3)
            s.pos += arg2 + 3
        elif name == 'increment':
            s.copy(arg1, at)
            s.out.append((s.base_byte(0, at) + 1) & 0xff)
            s.pos += 1
        elif name == 'copyedit1':
            s.copy(arg1, at)
            i = s.literal(i, 1, at)
        bit = i * 8
    i = bit // 8
    if i != len(d):
        raise Bad('diff byte %d: %d bytes after the end marker' % (i, len(d) - i))
    out = bytes(s.out)
    if name == 'eof_crc32':
        crc = zlib.crc32(out) & 0xffffffff
        if crc != arg2:
            raise Bad('diff byte %d: eof_crc32 %08x, the output has %08x' % (at, arg2, crc))
        return out, True
    return out, False


def diff_format(d):
    if len(d) >= 2 and d[0] == 1 and d[1] == 0x43:
        return 3
    if len(d) >= 2 and d[0] == 1 and d[1] == 0x40:
        return 2
    return 1


def apply_diff(base, d, stats):
    """Returns (new save, format, crc checked)."""
    f = diff_format(d)
    out, crc = (apply_beta1, apply_beta2, apply_beta3)[f - 1](base, d, stats)
    return out, f, crc


# ---- the log ---------------------------------------------------------------------

LINE1 = re.compile(r'^NHGAME (save|done) ([0-9a-f]{8}) ([0-9]+\.[0-9]{3}\.[0-9]{3})$')
LINE3 = re.compile(r'^([0-9a-f]+) ([0-9a-f]+) ([0-9]+) (\S+) ([A-Za-z]{3}) ([A-Za-z]{3}) '
                   r'([A-Za-z]{3}) ([A-Za-z]{3})$')
PAY = r'(?:\$[0-9]+\$)?[A-Za-z0-9+/]*={0,2}'
ARG = r'(?:D-?[0-9]+|P[0-9]+,[0-9]+|I.|T' + PAY + r'|S.|L[0-9]+)'
KINDS = [
    ('backup', re.compile(r'^\*([0-9a-f]{8}) (' + PAY + r')$')),
    ('diff', re.compile(r'^~(' + PAY + r')$')),
    ('command', re.compile(r'^([a-z][a-z0-9_]*)((?: ' + ARG + r')*)$')),
    ('time', re.compile(r'^\+([0-9a-f]+)$')),
    ('getpos', re.compile(r'^P(!|[0-9]+,[0-9]+[.,:;])$')),
    ('getdir', re.compile(r'^D(-?[0-9]+)$')),
    ('key', re.compile(r'^K(-?[0-9]+)(?:,([0-9]+))?$')),
    ('yn', re.compile(r'^Y(.)$')),
    ('menu', re.compile(r'^M(!|(?:[0-9a-f]+(?::[0-9a-f]+)*)?)$')),
    ('objmenu', re.compile(r'^O(!|(?:[0-9a-f]+(?:,[0-9]+)?(?::[0-9a-f]+(?:,[0-9]+)?)*)?)$')),
    ('text', re.compile(r'^L(' + PAY + r')$')),
    ('bones', re.compile(r'^B(!|' + PAY + r')$')),
    ('quit', re.compile(r'^Q$')),
]
FIRST = {'*': 'backup', '~': 'diff', '+': 'time', 'P': 'getpos', 'D': 'getdir', 'K': 'key',
         'Y': 'yn', 'M': 'menu', 'O': 'objmenu', 'L': 'text', 'B': 'bones', 'Q': 'quit'}
PATTERN = dict(KINDS)


class Line:
    def __init__(self, number, offset, text):
        self.number, self.offset, self.text = number, offset, text
        self.kind = None
        self.info = ''


class Log:
    def __init__(self, path):
        with open(path, 'rb') as f:
            data = f.read()
        end = data.rfind(b'\n') + 1
        self.tail = data[end:]
        self.size = len(data)
        try:
            text = data[:end].decode('ascii')
        except UnicodeDecodeError as e:
            raise Bad('byte %d: not ASCII' % e.start)
        self.lines = []
        off = 0
        for n, t in enumerate(text.split('\n')[:-1], 1):
            self.lines.append(Line(n, off, t))
            off += len(t) + 1
        if len(self.lines) < 3:
            raise Bad('fewer than three complete lines: no header')
        l1, l2, l3 = (x.text for x in self.lines[:3])
        m = LINE1.match(l1)
        if not m or len(l1) + 1 != 31:
            raise Bad('line 1: not "NHGAME <save|done> <8 hex> <version>": %r' % l1)
        self.status, self.recovery, self.version = m.group(1), int(m.group(2), 16), m.group(3)
        if self.version != '4.003.000':
            raise Bad('line 1: version %s, not 4.003.000' % self.version)
        if len(l2) != 78:
            raise Bad('line 2: %d characters, not 78' % len(l2))
        if not l2.strip() or l2[-1] == ' ':
            raise Bad('line 2: not right-justified text: %r' % l2)
        self.game_state = l2.lstrip(' ')
        m = LINE3.match(l3)
        if not m:
            raise Bad('line 3: not "<start> 0 <mode> <name> <role> <race> <gender> <align>": %r'
                      % l3)
        if m.group(2) != '0' or not re.match(r'^(0|[1-9][0-9]*)$', m.group(3)):
            raise Bad('line 3: bad fields: %r' % l3)
        self.start = int(m.group(1), 16)
        self.mode = int(m.group(3))
        self.name = payload(m.group(4), 'line 3: name')[0]
        self.role, self.race, self.gender, self.align = m.groups()[4:]
        for ln in self.lines[3:]:
            self.classify(ln)

    @staticmethod
    def classify(ln):
        t = ln.text
        if not t:
            raise Bad('line %d: empty' % ln.number)
        kind = 'command' if 'a' <= t[0] <= 'z' else FIRST.get(t[0])
        if not kind:
            raise Bad('line %d: unknown line kind %r' % (ln.number, t[0]))
        m = PATTERN[kind].match(t)
        if not m:
            raise Bad('line %d: malformed %s line: %r' % (ln.number, kind, t[:80]))
        ln.kind, ln.m = kind, m
        if kind == 'getdir' and not -1 <= int(m.group(1)) <= 10:
            raise Bad('line %d: direction %s out of -1..10' % (ln.number, m.group(1)))
        if kind == 'command':
            for a in m.group(2).split(' ')[1:]:
                if a[0] == 'T':
                    s = payload(a[1:], 'line %d: T argument' % ln.number)[0]
                    if not s.endswith(b'\0'):
                        raise Bad('line %d: T argument without its NUL' % ln.number)
        if kind == 'text':
            s = payload(m.group(1), 'line %d' % ln.number)[0]
            if not s.endswith(b'\0'):
                raise Bad('line %d: text without its NUL' % ln.number)


def walk(log, stats, on_state=None):
    """Applies the body in order; on_state(line, save) after each backup and
    diff line.  Checks pointers, CRCs, the first-line rules and Q."""
    save = None
    backups = []
    quit_at = None
    prev_kind = None
    for ln in log.lines[3:]:
        if quit_at is not None:
            raise Bad('line %d: after the Q line (line %d)' % (ln.number, quit_at))
        k = ln.kind
        stats['line ' + k] = stats.get('line ' + k, 0) + 1
        if prev_kind is None and k != 'backup':
            raise Bad('line %d: the body starts with a %s line, not a backup' % (ln.number, k))
        prev_kind = k
        if k == 'backup':
            ptr = int(ln.m.group(1), 16)
            save, comp = payload(ln.m.group(2), 'line %d' % ln.number)
            note_payload(stats, save, comp)
            if backups and ptr != backups[-1][1]:
                raise Bad('line %d: backup points at %d, the previous backup is at %d'
                          % (ln.number, ptr, backups[-1][1]))
            backups.append((ln.number, ln.offset, ptr))
            ln.info = 'save %d bytes%s, points at %d' % (len(save), ' (z)' if comp else '', ptr)
        elif k == 'diff':
            if save is None:
                raise Bad('line %d: a diff before any backup' % ln.number)
            d, comp = payload(ln.m.group(1), 'line %d' % ln.number)
            note_payload(stats, d, comp)
            local = {}
            try:
                save, fmt, crc = apply_diff(save, d, local)
            except Bad as e:
                raise Bad('line %d: %s' % (ln.number, e))
            for key, v in local.items():
                stats[key] = stats.get(key, 0) + v
            stats['diff beta%d' % fmt] = stats.get('diff beta%d' % fmt, 0) + 1
            if crc:
                stats['diff crc checked'] = stats.get('diff crc checked', 0) + 1
            ln.info = 'beta%d, %d bytes%s -> save %d bytes%s: %s' % (
                fmt, len(d), ' (z)' if comp else '', len(save), ', crc ok' if crc else '',
                ' '.join('%s %d' % (key.split(' ', 1)[1], v) for key, v in sorted(local.items())))
        elif k == 'bones' and ln.m.group(1) != '!':
            b, comp = payload(ln.m.group(1), 'line %d' % ln.number)
            note_payload(stats, b, comp)
            ln.info = 'bones %d bytes%s' % (len(b), ' (z)' if comp else '')
        elif k == 'quit':
            quit_at = ln.number
        if k in ('backup', 'diff') and on_state:
            on_state(ln, save)
    if backups:
        first_ptr = backups[0][2]
        if first_ptr != backups[-1][1]:
            raise Bad('line %d: the first backup points at %d, the latest backup is at %d'
                      % (backups[0][0], first_ptr, backups[-1][1]))
    if (log.status == 'done') != (quit_at is not None):
        raise Bad('line 1: status %s but %s' % (log.status, 'a Q line' if quit_at
                                                 else 'no Q line'))
    return save


def note_payload(stats, raw, comp):
    stats['payload compressed' if comp else 'payload plain'] = \
        stats.get('payload compressed' if comp else 'payload plain', 0) + 1
    if comp != engine_would_compress(raw):
        stats['payload form unlike the engine rule'] = \
            stats.get('payload form unlike the engine rule', 0) + 1


# ---- verbs -------------------------------------------------------------------------

def verb_header(path):
    log = Log(path)
    print('status: %s' % log.status)
    print('recovery: %d' % log.recovery)
    print('version: %s' % log.version)
    print('game_state: %s' % log.game_state)
    print('start_us: %d' % log.start)
    print('mode: %d' % log.mode)
    print('name: %s' % log.name.decode('latin-1'))
    print('role: %s\nrace: %s\ngender: %s\nalignment: %s' % (log.role, log.race, log.gender,
                                                             log.align))
    print('lines: %d' % len(log.lines))
    print('unfinished: %d bytes' % len(log.tail))


def verb_lines(path):
    log = Log(path)
    walk(log, {})
    for ln in log.lines[3:]:
        info = ln.info or (ln.text if len(ln.text) <= 60 else ln.text[:57] + '...')
        print('%d %d %s %s' % (ln.number, ln.offset, ln.kind, info))
    if log.tail:
        print('unfinished %d bytes' % len(log.tail))


def verb_check(path):
    log = Log(path)
    stats = {}
    save = walk(log, stats)
    print('%s: ok: %s, %d lines, save %d bytes at the end%s' % (
        path, log.status, len(log.lines), len(save) if save is not None else 0,
        ', %d unfinished bytes' % len(log.tail) if log.tail else ''))
    for key in sorted(stats):
        print('  %s: %d' % (key, stats[key]))


def verb_states(path, outdir):
    log = Log(path)
    os.makedirs(outdir, exist_ok=True)

    def write(ln, save):
        with open(os.path.join(outdir, '%06d.sav' % ln.number), 'wb') as f:
            f.write(save)

    walk(log, {}, write)


def verb_applyline(prev, linefile, out):
    with open(linefile, 'rb') as f:
        text = f.read().decode('ascii')
    if text.endswith('\n'):
        text = text[:-1]
    if '\n' in text:
        raise Bad('%s: more than one line' % linefile)
    ln = Line(1, 0, text)
    Log.classify(ln)
    if ln.kind == 'backup':
        save = payload(ln.m.group(2))[0]
    elif ln.kind == 'diff':
        with open(prev, 'rb') as f:
            base = f.read()
        save = apply_diff(base, payload(ln.m.group(1))[0], {})[0]
    else:
        raise Bad('%s: a %s line, not a backup or diff' % (linefile, ln.kind))
    with open(out, 'wb') as f:
        f.write(save)


def main(argv):
    verbs = {'header': (verb_header, 1), 'lines': (verb_lines, 1), 'check': (verb_check, 1),
             'states': (verb_states, 2), 'applyline': (verb_applyline, 3)}
    if len(argv) < 2 or argv[1] not in verbs or len(argv) - 2 != verbs[argv[1]][1]:
        sys.stderr.write(__doc__.split('\n\n')[1] + '\n')
        return 2
    try:
        verbs[argv[1]][0](*argv[2:])
    except Bad as e:
        sys.stderr.write('nhdecode: %s: %s\n' % (argv[2], e))
        return 1
    except BrokenPipeError:
        sys.stderr.close()  # the reader stopped early (| head): not an error
        return 0
    except OSError as e:
        sys.stderr.write('nhdecode: %s\n' % e)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
