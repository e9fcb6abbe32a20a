#!/usr/bin/env python3
"""Writes the near-miss corpus: files that look a little like a container
savefs reads and are not one.  Every format must leave each alone: `savefs
info FILE` exits 4 (unknown format) with the message in FILE.msg, where
FILE stands for the path given.  tests/e2e/nearmiss.sh runs them, and two
directories it makes itself (an empty one, one of unrelated files).

    make.py            writes the files here
    make.py --check    says which files differ from what it would write
"""
import gzip
import io
import os
import struct
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'bad'))
import badlib  # noqa: E402

UNKNOWN = 'savefs: FILE: not a container savefs knows (see --formats)'
NOT_DRAWING = 'savefs: FILE: doodle: the root JSON has no "version" with "chunks" or ' \
    '"layers": not a drawing'


def gz(data):
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode='wb', mtime=0) as f:
        f.write(data)
    return out.getvalue()


def text_zip():
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
        for name, text in (('readme.txt', 'notes, not a drawing\n'),
                           ('notes/todo.txt', 'nothing here\n')):
            z.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), text)
    return out.getvalue()


def padded(head, at=None, tail=b'', size=512):
    b = bytearray(size)
    b[:len(head)] = head
    if at is not None:
        b[at:at + len(tail)] = tail
    return bytes(b)


def recording(version):
    # The magic, another format version, then what a version 4 header
    # would hold (a world version of 16 bytes, lengths of 0).
    return b'HCRP' + struct.pack('>h', version) + bytes(18) + b'\x10' + b'1.21.4-rc3-abcde' + \
        bytes(40)


def variants():
    yield 'plain-object.json', UNKNOWN, \
        b'{\n  "order": ["a1b2"],\n  "chatHistory": ["hello", "/help"]\n}\n'
    yield 'plain-array.json', UNKNOWN, b'[{"version": 1, "chunks": {}}]\n'
    yield 'version-only.json', NOT_DRAWING, b'{"version": 1, "name": "a settings file"}\n'
    yield 'text.zip', 'savefs: FILE: doodle: zip holds no level.json, doodad.json or ' \
        'index.json: not a drawing', text_zip()
    yield 'plain-object.json.gz', UNKNOWN, gz(b'{"order": [], "chatHistory": []}\n')
    yield 'version-only.json.gz', NOT_DRAWING, gz(b'{"version": 2, "players": []}\n')
    yield 'sbsf-btdb.db', UNKNOWN, padded(b'SBSF', 0x20, b'BTDB')
    yield 'sbbf03-btreedb4.db', UNKNOWN, padded(b'SBBF03', 0x20, b'BTreeDB4')
    yield 'btreedb4.db', UNKNOWN, padded(b'BTreeDB4', 8, b'\x00\x00\x08\x00World2')
    yield 'datafile-magic.map', UNKNOWN, b'DATA'
    yield 'zeros.bin', UNKNOWN, bytes(256)
    yield 'recording-v3.hcrp', UNKNOWN, recording(3)
    yield 'recording-v5.hcrp', UNKNOWN, recording(5)


def files():
    for name, msg, data in variants():
        yield name, data
        yield name + '.msg', (msg + '\n').encode()


if __name__ == '__main__':
    sys.exit(badlib.main(HERE, files))
