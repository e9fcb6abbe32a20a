#!/usr/bin/env python3
"""Writes the malformed and the odd-but-tolerated NetHack 4 game logs
(.nhgame) of this directory.

Each log is built here from the format notes (shared/formats/nethack4.md)
with Python's base64 and zlib only (no savefs code): the three header
lines, backups and diffs (beta3 diffs encoded by the MRU bit-stream rules
of the notes, beta1 and beta2 by their word layouts) and the short lines.
The output depends only on this script.  For each variant NAME:

  NAME.nhgame  the log
  NAME.msg     the exact one-line message (no file: none)
  NAME.how     what happens, in one of these forms:
                 fails: savefs info exits 5
                     opening (and mounting) fails with the message, a
                     header problem: "nethack: line N (byte B): ..."
                 mounts: states/000007.sav reads EIO (savefs cat exits 7)
                     the log opens; reading that file fails with EIO and
                     the message; "also: PATH" lines name other files that
                     fail the same way (the diff itself, the states after
                     it); "warns: MSG" lines name what /.savefs/info's
                     warnings hold as well (a malformed line)
                 mounts: transcript.txt reads OK, info warns the message
                 mounts: transcript.txt reads OK, log is empty
                     tolerated input: the log opens and every file reads;
                     the warnings of /.savefs/info hold the message (a
                     malformed line: it shows as kind "bad" in the
                     transcript), or the log holds nothing
  NAME.expect  (with "reads OK") the exact bytes PATH reads: the
               transcript, rendered here from the notes at the top of
               core/fmt/nethack/nethack.c (one line per log line: number, time,
               kind, content), or the log up to its last newline, or a
               state made by a diff

The messages are the ones the code gives; tests/unit/test_bad.c checks every
variant in-process and through the command line.

  make.py           (re)writes every file here
  make.py --check   exits 1 if a file here differs from what would be written
  make.py --corpus DIR   writes a few well-formed logs (fuzzing seeds) to DIR
"""
import base64
import datetime
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# The plumbing the three make.py share (tests/data/bad/badlib.py); no
# bytecode, so that no __pycache__ lands in the tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import badlib  # noqa: E402

FAILS = 'fails: savefs info exits 5'
START = 1700000000 * 1000000 + 123456   # microseconds since the epoch


def eio(path, *also, warns=()):
    return '\n'.join(['mounts: %s reads EIO (savefs cat exits 7)' % path] +
                     ['also: %s' % a for a in also] + ['warns: %s' % w for w in warns])


def ok(path, what):
    return 'mounts: %s reads OK, %s' % (path, what)


# ---- payloads ------------------------------------------------------------------

def b64(data):
    return base64.b64encode(data).decode()


def plain(data):
    """A payload: base64 of the raw bytes."""
    return b64(data)


def packed(data, stated=None):
    """A payload: "$<len>$" and base64 of a zlib stream (stated: another len)."""
    n = len(data) if stated is None else stated
    return '$%d$%s' % (n, b64(zlib.compress(data, 9)))


# ---- diffs ---------------------------------------------------------------------

# beta3 commands: table index, arg1 minimum bits, arg2 bits.
CMDS = {'copyedit': (0, 12, 2), 'copy': (1, 6, 0), 'edit': (2, 4, 0), 'seek': (3, 8, 0),
        'wider': (4, 0, 0), 'eof': (5, 12, 0), 'coord': (6, 1, 3), 'erase': (7, 7, 3),
        'increment': (8, 12, 0), 'copyedit1': (9, 4, 0), 'eof_crc32': (10, 12, 32)}


def bits_of(v, n):
    return [(v >> (n - 1 - k)) & 1 for k in range(n)]


def mru_code(mru, c):
    """The code of command c (w ones, a zero, w+1 bits), c moved to the front."""
    idx = mru.index(c)
    w = 0 if idx < 2 else 1 if idx < 6 else 2
    v = idx - (0, 2, 6)[w]
    mru.remove(c)
    mru.insert(0, c)
    return [1] * w + [0] + bits_of(v, w + 1)


def beta3(cmds):
    """cmds: (name, arg1, arg2, literal bytes); "wider" prefixes are added
    where arg1 needs them.  Returns the diff, header 01 43 first."""
    out = bytearray(b'\x01\x43')
    mru = list(range(12))
    for name, a1, a2, lit in cmds:
        num, amin, a2n = CMDS[name]
        for widen in range(8):
            m = list(mru)
            bits = []
            for _ in range(widen):
                bits += mru_code(m, CMDS['wider'][0])
            bits += mru_code(m, num) + bits_of(a2, a2n)
            have = (8 - len(bits) % 8) % 8
            while have < amin + 8 * widen:
                have += 8
            if (name == 'seek' and -(1 << (have - 1)) <= a1 < 1 << (have - 1)) or \
                    (name != 'seek' and 0 <= a1 < 1 << have):
                break
        else:
            raise ValueError('arg1 %d too large' % a1)
        mru[:] = m
        bits += bits_of(a1 & ((1 << have) - 1), have)
        assert len(bits) % 8 == 0
        out += bytes(int(''.join(map(str, bits[k:k + 8])), 2) for k in range(0, len(bits), 8))
        out += lit
    return bytes(out)


def patch_diff(old, at, new_bytes):
    """A beta3 diff that rewrites old[at:at+len(new_bytes)] (1..16 bytes):
    copy, edit, then eof_crc32 copying the rest; and the new save."""
    k = len(new_bytes)
    new = old[:at] + new_bytes + old[at + k:]
    d = beta3([('copy', at, 0, b''), ('edit', k - 1, 0, new_bytes),
               ('eof_crc32', len(old) - at - k, zlib.crc32(new), b'')])
    return d, new


def beta1(words_and_literals):
    """Old format: (cmd, n, literal) words, little-endian; 00 00 ends it."""
    out = bytearray()
    for cmd, n, lit in words_and_literals:
        w = {'seek': 0, 'edit': 2, 'copy': 3}[cmd] << 14 | (n & 0x3FFF)
        out += bytes([w & 0xFF, w >> 8]) + lit
    return bytes(out + b'\0\0')


def beta2_copy_edit(copy, lit):
    """beta2: a 2-byte copy-then-edit word (copy < 8192, 1..4 literals)."""
    w = (len(lit) - 1) << 13 | copy
    return bytes([w >> 8, w & 0xFF]) + lit


def beta2_large_copy(copy):
    w = 0x80000000 | copy
    return w.to_bytes(4, 'big')


# ---- saves ---------------------------------------------------------------------

def save_bytes(n, seed):
    """A made-up save: the engine's format is an opaque blob to savefs."""
    out = bytearray()
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(0 if i % 5 == 0 else (x >> 16) & 0xFF)
    return bytes(out)


SAVE0 = save_bytes(200, 1)
SAVE1 = save_bytes(240, 2)


# ---- the log -------------------------------------------------------------------

class Backup:
    """A backup line; ptr None: what a writer puts there (the first
    backup: the latest backup's offset; later ones: the previous one's)."""

    def __init__(self, payload, ptr=None):
        self.payload, self.ptr = payload, ptr


def header(status='save', count=0, statusline='(new game)', start=START, mode=0,
           name=b'Tester', words=('Val', 'hum', 'fem', 'law')):
    l1 = 'NHGAME %s %08x 4.003.000\n' % (status, count)
    l2 = statusline.rjust(78) + '\n'
    l3 = '%x 0 %d %s %s\n' % (start, mode, b64(name), ' '.join(words))
    return (l1 + l2 + l3).encode()


class Log:
    def __init__(self, body, tail=b'', **hdr):
        self.hdr_kw = hdr
        self.head = header(**hdr)
        self.body = body
        # Offsets first: a backup line's length does not depend on its number.
        offs, at = [], len(self.head)
        for item in body:
            offs.append(at)
            at += len(self.text(item, 0)) + 1
        self.offs = offs
        backups = [i for i, item in enumerate(body) if isinstance(item, Backup)]
        lines = []
        for i, item in enumerate(body):
            ptr = 0
            if isinstance(item, Backup):
                k = backups.index(i)
                auto = offs[backups[-1]] if k == 0 else offs[backups[k - 1]]
                ptr = auto if item.ptr is None else item.ptr
            lines.append(self.text(item, ptr))
        self.lines = lines
        self.data = self.head + b''.join(l + b'\n' for l in lines) + tail

    @staticmethod
    def text(item, ptr):
        if isinstance(item, Backup):
            return ('*%08x %s' % (ptr, item.payload)).encode()
        return item if isinstance(item, bytes) else item.encode()

    def line(self, i):
        """The line number of body item i."""
        return 4 + i

    def off(self, i):
        return self.offs[i]

    def shown(self):
        """The log as the tree's log file shows it: up to the last newline."""
        return self.data[:self.data.rfind(b'\n') + 1]


# ---- the transcript (core/fmt/nethack/nethack.c: transcript_line) ----------------------

DIRS = ['W', 'NW', 'N', 'NE', 'E', 'SE', 'S', 'SW', 'up', 'down', 'self']
MODES = ['normal', 'explore', 'wizard', 'set-seed']


def iso(t):
    sec, us = divmod(t, 1000000)
    d = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=sec)
    return d.strftime('%Y-%m-%dT%H:%M:%S') + '.%06dZ' % us


def quoted(b):
    out = '"'
    for ch in b:
        if ch in b'"\\':
            out += '\\' + chr(ch)
        elif 0x20 <= ch < 0x7f:
            out += chr(ch)
        elif ch == 10:
            out += '\\n'
        elif ch == 9:
            out += '\\t'
        else:
            out += '\\x%02x' % ch
    return out + '"'


def char(ch):
    if ch in (ord("'"), ord('\\')):
        return "'\\%c'" % ch
    if 0x20 <= ch < 0x7f:
        return "'%c'" % ch
    return "'\\x%02x'" % ch


def payload_size(p):
    if p.startswith('$'):
        return int(p[1:p.index('$', 1)]), ' compressed'
    return len(base64.b64decode(p)), ''


def unnul(b):
    return b[:-1] if b and b[-1] == 0 else b


def content(line, bad):
    """(kind, content, delta) of a body line; bad: the reason when the test
    means it to be malformed (the renderer does not judge lines)."""
    s = line.decode('latin-1')
    if bad:
        return 'bad', bad, 0
    k = s[0]
    if k == '*':
        n, z = payload_size(s[10:])
        return 'backup', 'save %d bytes%s, pointer %s' % (n, z, s[1:9]), 0
    if k == '~':
        n, z = payload_size(s[1:])
        return 'diff', 'diff %d bytes%s' % (n, z), 0
    if k == '+':
        d = int(s[1:], 16)
        return 'time', '+%d.%06d s' % divmod(d, 1000000), d
    if k == 'P':
        if s == 'P!':
            return 'getpos', 'cancelled', 0
        x, y = s[1:-1].split(',')
        return 'getpos', '%d,%d key %s' % (int(x), int(y), char(ord(s[-1]))), 0
    if k == 'D':
        v = int(s[1:])
        return 'getdir', 'cancelled' if v < 0 else DIRS[v], 0
    if k == 'K':
        code, _, cnt = s[1:].partition(',')
        out = code
        if 0x20 <= int(code) < 0x7f:
            out += ' ' + char(int(code))
        if cnt:
            out += ', count %d' % int(cnt)
        return 'key', out, 0
    if k == 'Y':
        return 'yesno', char(ord(s[1])), 0
    if k in 'MO':
        kind = 'menu' if k == 'M' else 'objmenu'
        if s[1:] == '!':
            return kind, 'cancelled', 0
        if s[1:] == '':
            return kind, 'nothing', 0
        parts = []
        for item in s[1:].split(':'):
            ident, _, cnt = item.partition(',')
            parts.append('%d' % (int(ident, 16) - 4) + (' x%d' % int(cnt) if cnt else ''))
        return kind, ', '.join(parts), 0
    if k == 'L':
        t = base64.b64decode(s[1:])
        return 'text', 'cancelled' if t == b'\x1b' else quoted(unnul(t)), 0
    if k == 'B':
        if s == 'B!':
            return 'bones', 'none found', 0
        n, z = payload_size(s[1:])
        return 'bones', 'bones file %d bytes%s' % (n, z), 0
    if k == 'Q':
        return 'gameover', '', 0
    # A command and its arguments.
    words = s.split(' ')
    out = words[0]
    for j, a in enumerate(words[1:]):
        out += ': ' if j == 0 else ', '
        if a[0] == 'D':
            v = int(a[1:])
            out += 'direction ' + ('none' if v < 0 else DIRS[v])
        elif a[0] == 'P':
            x, y = a[1:].split(',')
            out += 'position %d,%d' % (int(x), int(y))
        elif a[0] in 'IS':
            out += ('item ' if a[0] == 'I' else 'spell ') + char(ord(a[1]))
        elif a[0] == 'T':
            out += 'text ' + quoted(unnul(base64.b64decode(a[1:])))
        elif a[0] == 'L':
            out += 'limit %d' % int(a[1:])
    return 'command', out, 0


def tline(n, t, kind, text):
    return '%06d %s %-8s%s\n' % (n, iso(t), kind, ' ' + text if text else '')


def transcript(log, bad=None):
    """bad: {body index: reason} for the lines meant to be malformed."""
    bad = bad or {}
    h = log.hdr_kw
    t = h.get('start', START)
    status = h.get('status', 'save')
    words = h.get('words', ('Val', 'hum', 'fem', 'law'))
    out = tline(1, t, 'header', '%s, recovery count %d, version 4.003.000'
                % (status, h.get('count', 0)))
    out += tline(2, t, 'status', quoted(h.get('statusline', '(new game)').lstrip(' ').encode()))
    out += tline(3, t, 'start', 'player %s, %s, mode %s'
                 % (quoted(h.get('name', b'Tester')), ' '.join(words), MODES[h.get('mode', 0)]))
    for i, line in enumerate(log.lines):
        kind, text, delta = content(line, bad.get(i))
        t += delta
        out += tline(log.line(i), t, kind, text)
    return out.encode()


def warn(log, i, why):
    return 'nethack: line %d (byte %d): %s' % (log.line(i), log.off(i), why)


# ---- the logs ------------------------------------------------------------------

D1, S1 = patch_diff(SAVE0, 17, b'\x07\x08\x09')      # SAVE0 -> S1
D2, S2 = patch_diff(S1, 150, b'abcdefghijklmnop')   # S1 -> S2
D3, S3 = patch_diff(SAVE1, 3, b'\xff')              # SAVE1 -> S3


def game(extra=(), tail_lines=()):
    """A short game: backup, welcome, a turn or two, then extra lines (body
    items), a last turn, then tail_lines."""
    return ([Backup(packed(SAVE0)), 'welcome', '+409b', '~' + plain(D1)] + list(extra) +
            ['move D4', '+2a852b', '~' + plain(D2)] + list(tail_lines))


def all_kinds():
    """Every kind of line, each well formed."""
    text = b64(b'Elbereth\0')
    return [Backup(packed(SAVE0)), 'welcome', '+409b', '~' + plain(D1),
            'move D0', '+c50c8', '~' + plain(D2),
            'travel P12,7', 'P3,4.', 'P!', 'D-1', 'D8', 'D10',
            'K27', 'K65,12', 'Yy', "Y'", 'M!', 'M', 'M5:a:14', 'O!', 'O', 'O6,2:7',
            'L' + text, 'L' + b64(b'\x1b'), 'B!', 'B' + plain(b'bones!'),
            'engrave I- T' + text + ' L40', 'cast Sa D9', 'wait',
            Backup(plain(SAVE1)), '+1', '~' + packed(D3), 'Q']


def variants():
    out = []

    def add(name, data, how, msg, expect=None):
        out.append((name, data, how, msg, expect))

    # -- The header: the log does not open. --
    good = header()
    l1, l2, l3 = good.split(b'\n')[:3]
    body = Log(game()).data[len(good):]

    def hdr_fail(name, data, line, byte, why):
        add(name, data, FAILS, 'nethack: line %d (byte %d): %s' % (line, byte, why))

    shape = 'not "NHGAME <status> <count> <version>" in 31 bytes'
    hdr_fail('line1-not-nhgame', b'NHGAME game over, see you soon\n' + l2 + b'\n' + l3 +
             b'\n' + body, 1, 0, shape)
    hdr_fail('line1-short', b'NHGAME save 00000000 4.3.0\n' + l2 + b'\n' + l3 + b'\n' + body,
             1, 0, shape)
    hdr_fail('line1-long', b'NHGAME save 00000000 4.003.0000\n' + l2 + b'\n' + l3 + b'\n' +
             body, 1, 0, shape)
    hdr_fail('line1-no-spaces', b'NHGAME save-00000000-4.003.000\n' + good[31:] + body,
             1, 0, shape)
    hdr_fail('status-live', b'NHGAME live' + good[11:] + body, 1, 7,
             'the status is neither "save" nor "done"')
    hdr_fail('status-upper-case', b'NHGAME SAVE' + good[11:] + body, 1, 7,
             'the status is neither "save" nor "done"')
    hdr_fail('count-not-hex', good[:12] + b'0000000g' + good[20:] + body, 1, 12,
             'the recovery count is not 8 hex digits')
    hdr_fail('count-minus', good[:12] + b'-0000001' + good[20:] + body, 1, 12,
             'the recovery count is not 8 hex digits')
    hdr_fail('version-space', good[:21] + b'4.003 000' + good[30:] + body, 1, 21,
             'the version is not 9 printable characters')
    hdr_fail('line2-77', good[:31] + b' ' * 67 + b'(new game)\n' + l3 + b'\n' + body,
             2, 31, 'the status line is not 78 characters')
    hdr_fail('line2-79', good[:31] + b' ' * 69 + b'(new game)\n' + l3 + b'\n' + body,
             2, 31, 'the status line is not 78 characters')
    s = bytearray(good)
    s[31 + 70] = 0xe9
    hdr_fail('line2-non-ascii', bytes(s) + body, 2, 101, 'a control or non-ASCII byte')
    s = bytearray(good)
    s[31] = 0x09
    hdr_fail('line2-tab', bytes(s) + body, 2, 31, 'a control or non-ASCII byte')
    fields = 'not "<start> 0 <mode> <name> <role> <race> <gender> <alignment>"'
    pre = good[:110]
    hdr_fail('line3-7-fields', pre + b'%x 0 0 VGVzdGVy Val hum fem\n' % START + body,
             3, 110, fields)
    hdr_fail('line3-9-fields', pre + b'%x 0 0 VGVzdGVy Val hum fem law x\n' % START + body,
             3, 110, fields)
    hdr_fail('line3-two-spaces', pre + b'%x 0 0  VGVzdGVy Val hum fem law\n' % START + body,
             3, 110, fields)
    hdr_fail('line3-start-not-hex', pre + b'12:30 0 0 VGVzdGVy Val hum fem law\n' + body,
             3, 110, fields)
    start = b'%x ' % START
    at = 110 + len(start)
    modes = 'the play mode is not 0, 1, 2 or 3 after a 0'
    hdr_fail('mode-4', pre + start + b'0 4 VGVzdGVy Val hum fem law\n' + body, 3, at, modes)
    hdr_fail('mode-minus-1', pre + start + b'0 -1 VGVzdGVy Val hum fem law\n' + body,
             3, at, modes)
    hdr_fail('mode-word', pre + start + b'0 wizard VGVzdGVy Val hum fem law\n' + body,
             3, at, modes)
    hdr_fail('mode-after-1', pre + start + b'1 0 VGVzdGVy Val hum fem law\n' + body,
             3, at, modes)
    hdr_fail('name-not-base64', pre + start + b'0 0 VGVz!Gwy Val hum fem law\n' + body,
             3, at + 4, 'the player name is not base64')
    hdr_fail('name-base64-length', pre + start + b'0 0 VGVzdGV Val hum fem law\n' + body,
             3, at + 4, 'the player name is not base64')
    words = 'role, race, gender and alignment are not 3-letter words'
    hdr_fail('role-4-letters', pre + start + b'0 0 VGVzdGVy Valk hum fem law\n' + body,
             3, at + 13, words)
    hdr_fail('role-digit', pre + start + b'0 0 VGVzdGVy V4l hum fem law\n' + body,
             3, at + 13, words)
    hdr_fail('alignment-2-letters', pre + start + b'0 0 VGVzdGVy Val hum fem la\n' + body,
             3, at + 13, words)
    hdr_fail('ends-in-line1', good[:20], 1, 0, 'the file ends inside the header')
    hdr_fail('ends-after-line1', good[:31], 2, 31, 'the file ends inside the header')
    hdr_fail('ends-in-line2', good[:60], 2, 31, 'the file ends inside the header')
    hdr_fail('ends-in-line3', good[:-1], 3, 110, 'the file ends inside the header')
    hdr_fail('ends-after-line2', good[:110], 3, 110, 'the file ends inside the header')
    hdr_fail('line3-too-long', pre + start + b'0 0 ' + b'QUFB' * 2100 + b' Val hum fem law\n',
             3, 110, 'the line is too long')

    # -- Malformed short lines: the log mounts, the line shows as "bad" in
    # the transcript and /.savefs/info warns about it. --
    def bad_line(name, line, why):
        log = Log(game(extra=['+10', line]))
        i = 5
        add(name, log.data, ok('transcript.txt', 'info warns the message'),
            warn(log, i, why), transcript(log, {i: why}))

    bad_line('unknown-kind-hash', '#a comment', 'a line of an unknown kind')
    bad_line('unknown-kind-upper', 'Xyzzy', 'a line of an unknown kind')
    bad_line('empty-line', '', 'an empty line')
    bad_line('control-byte', 'K\x0127', 'a control or non-ASCII byte')
    bad_line('time-not-hex', '+12g4', 'a time line is not +<hex digits>')
    bad_line('time-empty', '+', 'a time line is not +<hex digits>')
    bad_line('time-17-digits', '+' + '1' * 17, 'a time line is not +<hex digits>')
    bad_line('getdir-11', 'D11', 'a getdir line is not D<-1..10>')
    bad_line('getdir-minus-2', 'D-2', 'a getdir line is not D<-1..10>')
    bad_line('getdir-word', 'DN', 'a getdir line is not D<-1..10>')
    bad_line('getpos-no-key', 'P3,4', 'a getpos line is not P! or P<x>,<y><key>')
    bad_line('getpos-negative', 'P-3,4.', 'a getpos line is not P! or P<x>,<y><key>')
    bad_line('key-not-number', 'Kx', 'a key line is not K<code> or K<code>,<count>')
    bad_line('key-negative-count', 'K65,-1', 'a key line is not K<code> or K<code>,<count>')
    bad_line('yesno-two', 'Yyn', 'a yes/no line is not Y<char>')
    menu = 'a menu line is not M!, M or :-joined hex ids'
    bad_line('menu-id-below-4', 'M3', menu)
    bad_line('menu-id-not-hex', 'M5:g', menu)
    bad_line('menu-empty-id', 'M5::6', menu)
    objmenu = 'an object menu line is not O!, O or :-joined hex ids with counts'
    bad_line('objmenu-bad-count', 'O6,x', objmenu)
    bad_line('objmenu-id-below-4', 'O2,1', objmenu)
    bad_line('text-not-base64', 'LRWxi!XJ', 'a text line is not L<base64>')
    bad_line('bones-bang-more', 'B!x', 'a bones line is not "B!" or B<payload>')
    bad_line('gameover-more', 'Qx', 'a game-over line is not Q')
    bad_line('command-name-upper', 'moVe D4', 'a command name that is not lower-case letters')
    bad_line('command-dir-12', 'move D12', 'a direction argument is not D<-1..10>')
    bad_line('command-arg-unknown', 'apply Q5', 'a command argument of an unknown kind')
    bad_line('command-arg-empty', 'apply  Ia', 'an empty command argument')
    bad_line('command-pos-no-comma', 'travel P12', 'a position argument is not P<x>,<y>')
    bad_line('command-item-two', 'apply Iab', 'an item or spell argument is not one character')
    bad_line('command-text-not-base64', 'name T!!!!', 'a text argument is not T<base64>')
    bad_line('command-limit-word', 'pray Lten', 'a limit argument is not L<number>')

    # Far into the log: the transcript is made again from checkpoints (one
    # every 256 lines).
    log = Log(game(extra=['wait', '+3e8'] * 200 + ['D12']))
    i = 4 + 400
    why = 'a getdir line is not D<-1..10>'
    add('far-line-bad', log.data, ok('transcript.txt', 'info warns the message'),
        warn(log, i, why), transcript(log, {i: why}))

    # -- Backups' numbers: a hint and a chain, warned about. --
    def two_backups(first_ptr=None, second_ptr=None):
        return Log([Backup(packed(SAVE0), first_ptr), 'welcome', '+409b', '~' + plain(D1),
                    Backup(plain(SAVE1), second_ptr), '+10', '~' + plain(D3)])
    log = two_backups()
    chain = two_backups(second_ptr=log.off(0) + 1)
    add('backup-chain-broken', chain.data, ok('transcript.txt', 'info warns the message'),
        'nethack: line %d: the backup\'s number %08x is not the previous backup\'s offset %d'
        % (chain.line(4), chain.off(0) + 1, chain.off(0)), transcript(chain))
    hint = two_backups(first_ptr=log.off(0))
    add('backup-first-not-latest', hint.data, ok('transcript.txt', 'info warns the message'),
        'nethack: line %d: the first backup\'s number %08x does not point at the latest '
        'backup (line %d, byte %d): only a hint, not followed'
        % (hint.line(0), hint.off(0), hint.line(4), hint.off(4)), transcript(hint))

    # -- A torn tail: the log shows up to the last newline. --
    torn = Log(game(), tail=b'move D2\n+5\n~A')
    add('torn-tail', torn.data, ok('log', 'info warns the message'),
        'nethack: 2 bytes after the last newline (an unfinished write): not shown',
        torn.shown())
    torn2 = Log(game(), tail=b'~' + plain(D1)[:10].encode())
    add('torn-tail-transcript', torn2.data, ok('transcript.txt', 'info warns the message'),
        'nethack: 11 bytes after the last newline (an unfinished write): not shown',
        transcript(torn2))

    # -- Well formed, quiet. --
    log = Log(all_kinds(), status='done', count=3, statusline='killed by a jackal',
              mode=2, name='Zoë "the" \\ one'.encode(), words=('Wiz', 'elf', 'mal', 'cha'))
    add('all-kinds', log.data, ok('transcript.txt', 'log is empty'), '', transcript(log))
    add('all-kinds-state', log.data, ok('states/%06d.sav' % log.line(32), 'log is empty'),
        '', S3)
    add('all-kinds-log', log.data, ok('log', 'log is empty'), '', log.shown())
    # The older diff formats, one after the other.
    b1 = beta1([('copy', 10, b''), ('edit', 2, b'\xaa\xbb'), ('copy', 100, b''),
                ('seek', 20, b''), ('copy', 5, b'')])
    n1 = SAVE0[:10] + b'\xaa\xbb' + SAVE0[12:112] + SAVE0[92:97]
    # beta2: copy 3 + edit 4, a large copy of 50, seek back 5 (111 00000
    # 00000101), copy 1 + edit 1.
    b2 = (b'\x01\x40' + beta2_copy_edit(3, b'\x01\x02\x03\x04') +
          beta2_large_copy(50) + bytes([0xE0, 0x05]) + beta2_copy_edit(1, b'z') + b'\0\0')
    n2 = n1[:3] + b'\x01\x02\x03\x04' + n1[7:57] + n1[52:53] + b'z'
    old = Log([Backup(plain(SAVE0)), 'welcome', '+1', '~' + plain(b1), 'wait', '+2',
               '~' + packed(b2)])
    add('old-diff-formats', old.data, ok('states/%06d.sav' % old.line(6), 'log is empty'),
        '', n2)
    add('old-diff-beta1', old.data, ok('states/%06d.sav' % old.line(3), 'log is empty'),
        '', n1)

    # -- Backups and diffs that do not decode or apply: their files read EIO. --
    def entry(name, log, msg, paths, warns=()):
        add(name, log.data, eio(*paths, warns=warns), msg)

    def last_diff(payload, msg, name, applies=False):
        """A last diff that does not decode (its diff and its state fail)
        or, with applies, does not apply (its state fails)."""
        log = Log(game(tail_lines=['wait', '+1', payload]))
        n = log.line(len(log.lines) - 1)
        paths = ['states/%06d.sav' % n] + ([] if applies else ['diffs/%06d.mdiff' % n])
        entry(name, log, msg % {'n': n}, paths[::-1])

    last_diff('~AUMQ!AAA', 'line %(n)d: payload: byte 4: not base64', 'diff-not-base64')
    last_diff('~AUMQEA==AAAA', 'line %(n)d: payload: byte 6: \'=\' before the end',
              'diff-pad-inside')
    log = Log(game(tail_lines=['wait', '+1', '~AUMQEAa2zB']))
    n = log.line(len(log.lines) - 1)
    entry('diff-base64-length', log, 'line %d is malformed (see /.savefs/info)' % n,
          ['diffs/%06d.mdiff' % n, 'states/%06d.sav' % n],
          warns=[warn(log, len(log.lines) - 1,
                      "a diff's payload is not base64 or $length$base64")])
    d, _ = patch_diff(S2, 0, b'x')
    last_diff('~' + packed(d, len(d) + 5),
              'line %%(n)d: payload: stated length %d but the stream inflates to %d bytes'
              % (len(d) + 5, len(d)), 'diff-stated-length-long')
    last_diff('~' + packed(d, len(d) - 1),
              'line %%(n)d: payload: stated length %d but the stream inflates to more'
              % (len(d) - 1), 'diff-stated-length-short')
    z = zlib.compress(d, 9)
    # 07: a final block of type 3, which does not exist.
    last_diff('~$%d$%s' % (len(d), b64(z[:2] + b'\x07' + z[3:])),
              'line %(n)d: payload: corrupt zlib stream (invalid block type)',
              'diff-corrupt-zlib')
    # Without its Adler-32: every byte is out, the stream is not over.
    last_diff('~$%d$%s' % (len(d), b64(z[:-4])),
              'line %%(n)d: payload: the zlib stream is cut short after %d bytes' % len(d),
              'diff-zlib-cut')
    # Applying: a copy past the end of the previous save, a wrong CRC, no end.
    far = beta3([('eof_crc32', len(S2) + 100, 0, b'')])
    last_diff('~' + plain(far),
              'line %%(n)d: diff byte 2: eof_crc32 of %d bytes past the end of the '
              'previous save (pos 0 of %d)' % (len(S2) + 100, len(S2)), 'diff-copy-past-end',
              applies=True)
    crc = zlib.crc32(S2)
    wrong = beta3([('eof_crc32', len(S2), crc ^ 0x10, b'')])
    last_diff('~' + plain(wrong),
              'line %%(n)d: diff byte 2: the new save\'s crc32 is %08x, not %08x'
              % (crc, crc ^ 0x10), 'diff-crc-mismatch', applies=True)
    noend = beta3([('copy', 5, 0, b''), ('edit', 0, 0, b'!')])
    last_diff('~' + plain(noend),
              'line %(n)d: diff byte 5: the diff ends without its end marker',
              'diff-no-end-marker', applies=True)
    # After a diff that does not apply, a new backup starts again: the
    # states after it read.
    log = Log(game(tail_lines=['wait', '+1', '~' + plain(far), Backup(plain(SAVE1)),
                               'search', '+2', '~' + plain(D3)]))
    n = log.line(9)
    entry('diff-fails-then-backup', log,
          'line %d: diff byte 2: eof_crc32 of %d bytes past the end of the previous save '
          '(pos 0 of %d)' % (n, len(S2) + 100, len(S2)), ['states/%06d.sav' % n])
    # A diff in the middle fails: every state after it fails the same way.
    crc1 = zlib.crc32(S1)
    wrong1 = beta3([('eof_crc32', len(S1), crc1 ^ 1, b'')])
    log = Log(game(extra=['+3', '~' + plain(wrong1)]))
    n = log.line(5)
    entry('diff-fails-midway', log,
          'line %d: diff byte 2: the new save\'s crc32 is %08x, not %08x'
          % (n, crc1, crc1 ^ 1),
          ['states/%06d.sav' % n, 'states/%06d.sav' % log.line(8)])
    # A diff before any backup: its state cannot be made.
    log = Log(['~' + plain(D1), Backup(plain(SAVE0)), 'welcome', '+1', '~' + plain(D1)])
    entry('diff-before-backup', log, 'line 4: a diff with no backup before it',
          ['states/000004.sav'], warns=['nethack: line 4: a diff before any backup'])
    # A backup whose payload does not decode: its save and every state
    # made from it.
    log = Log([Backup(packed(SAVE0, 300)), 'welcome', '+1', '~' + plain(D1)])
    entry('backup-stated-length', log,
          'line 4: payload: stated length 300 but the stream inflates to %d bytes'
          % len(SAVE0), ['saves/000004.sav', 'states/000004.sav', 'states/000007.sav'])
    log = Log([Backup(plain(SAVE0)[:-4] + 'AA*A'), 'welcome', '+1', '~' + plain(D1)])
    entry('backup-not-base64', log,
          'line 4: payload: byte %d: not base64' % (len(plain(SAVE0)) - 2),
          ['saves/000004.sav', 'states/000004.sav', 'states/000007.sav'])
    # A backup line that is not "*<8 hex> <payload>": malformed, warned.
    log = Log(game(tail_lines=['+1', '*0000zz00 ' + plain(SAVE1)]))
    i = len(log.lines) - 1
    n = log.line(i)
    entry('backup-number-not-hex', log, 'line %d is malformed (see /.savefs/info)' % n,
          ['saves/%06d.sav' % n, 'states/%06d.sav' % n],
          warns=[warn(log, i, 'a backup line is not "*<8 hex digits> <payload>"')])
    return out


def files():
    for name, data, how, msg, expect in variants():
        yield name + '.nhgame', data
        if msg:
            yield name + '.msg', (msg + '\n').encode()
        yield name + '.how', (how + '\n').encode()
        if expect is not None:
            yield name + '.expect', expect


def corpus(d):
    """Seeds for the fuzz target: small, well formed, varied."""
    os.makedirs(d, exist_ok=True)
    logs = {
        'game.nhgame': Log(game()).data,
        'all-kinds.nhgame': Log(all_kinds(), status='done', mode=1).data,
        'two-backups.nhgame': Log([Backup(packed(SAVE0)), 'welcome', '+409b',
                                   '~' + plain(D1), Backup(plain(SAVE1)), '+10',
                                   '~' + packed(D3)]).data,
        'header-only.nhgame': header(),
        'torn.nhgame': Log(game(), tail=b'move D2\n+5\n~AUMQ').data,
        'many-lines.nhgame': Log(game(extra=['wait', '+3e8'] * 300)).data,
    }
    for name, data in logs.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--corpus':
        corpus(sys.argv[2])
        return 0
    return badlib.main(HERE, files)


if __name__ == '__main__':
    sys.exit(main())
