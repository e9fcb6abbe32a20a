#!/usr/bin/env python3
"""An independent reader of Starbound BTreeDB5 databases and SBVJ01 files,
written from the format notes (shared/formats/starbound.md) and the game's
loader rules, sharing no code with savefs.  Used by the tests to check what
savefs shows and what it writes.

    sbdecode.py check FILE [--exact]
                                    every rule the game's loader enforces; exit 1
                                    with the reason on the first broken one;
                                    --exact: the file ends at the device size
    sbdecode.py dump FILE DIR       writes the tree savefs should show for FILE
                                    (keys, world views, celestial, data.json)
                                    into DIR, for diff -r against a mount
    sbdecode.py compare FILE DIR    compares DIR (savefs extract of FILE) with this reader:
                                    every key byte for byte, every .tsv byte for byte,
                                    every JSON view value for value; names exactly
    sbdecode.py records FILE        one line per record: hex key, length, sha1
                                    of the inflated value
"""
import hashlib
import json
import os
import math
import struct
import sys
import zlib


class Bad(Exception):
    pass


# ---- primitives -------------------------------------------------------------

class R:
    def __init__(self, b, off=0):
        self.b, self.o = b, off

    def take(self, n):
        if self.o + n > len(self.b):
            raise Bad("runs past the end at byte %d" % self.o)
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def f32(self):
        return struct.unpack(">f", self.take(4))[0]

    def vlq(self):
        v = 0
        for i in range(10):
            c = self.u8()
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                if v >= 1 << 64:
                    raise Bad("VLQ over 64 bits")
                return v
        raise Bad("VLQ of more than 10 bytes")

    def svlq(self):
        u = self.vlq()
        return -(u >> 1) - 1 if u & 1 else u >> 1

    def string(self):
        return self.take(self.vlq()).decode("utf-8")

    def left(self):
        return len(self.b) - self.o


def sbon(r, depth=0):
    if depth > 512:
        raise Bad("nested too deep")
    t = r.u8()
    if t in (0, 1):
        return None
    if t == 2:
        b = r.take(8)
        d = struct.unpack(">d", b)[0]
        # JSON has no NaN or infinity: savefs shows them by their bits.
        return d if d == d and abs(d) != float("inf") else {"$double": b.hex()}
    if t == 3:
        return r.u8() != 0
    if t == 4:
        return r.svlq()
    if t == 5:
        return r.string()
    if t == 6:
        return [sbon(r, depth + 1) for _ in range(r.vlq())]
    if t == 7:
        return sbon_map(r, depth)
    raise Bad("unknown SBON type %d" % t)


def sbon_map(r, depth=0):
    o = {}
    for _ in range(r.vlq()):
        k = r.string()
        if k in o:
            raise Bad("key twice")
        o[k] = sbon(r, depth + 1)
    return o


def vjson(r):
    o = {"id": r.string()}
    if r.u8():
        o["version"] = r.u32()
    o["content"] = sbon(r)
    return o


def trailer(r, o):
    """OpenStarbound's sub-version trailer after a versioned value."""
    if not r.left():
        return
    if r.u32() != 1:
        raise Bad("a trailer that is not sub-versioning 1")
    m = sbon_map(r)
    if list(m) == ["subVersions"] and isinstance(m["subVersions"], dict):
        o["subversions"] = m["subVersions"]
    else:
        o["trailer"] = m


# ---- the B-tree ----------------------------------------------------------------

class DB:
    def __init__(self, data):
        self.d = data
        if data[:8] != b"BTreeDB5":
            raise Bad("not BTreeDB5")
        self.bs, = struct.unpack(">I", data[8:12])
        self.cid = data[12:28].rstrip(b"\0").decode()
        self.ks, = struct.unpack(">I", data[28:32])
        self.alt = data[32] != 0
        self.roots = []
        for at in (33, 50):
            fh, ds, root, leaf = struct.unpack(">IqI?", data[at:at + 17])
            self.roots.append((fh, ds, root, leaf))
        fh, ds, root, leaf = self.roots[1 if self.alt else 0]
        if ds < 512 or ds > len(data):
            raise Bad("device size %d outside the file" % ds)
        self.nblocks = (ds - 512) // self.bs
        self.maxp = (self.bs - 11) // (self.ks + 4) + 1
        self.seen = set()
        self.records = []
        self.index_blocks = 0
        self.leaf_blocks = 0
        self.depths = set()
        self.walk(root, leaf, 0)
        keys = [k for k, _ in self.records]
        if keys != sorted(keys) or len(set(keys)) != len(keys):
            raise Bad("keys out of order")
        self.free = []
        self.ff = []
        b = fh
        while b != 0xFFFFFFFF:
            if b >= self.nblocks or b in self.ff:
                raise Bad("free-index chain broken at %d" % b)
            blk = self.block(b)
            if blk[:2] != b"FF":
                raise Bad("block %d: not a free index" % b)
            nxt, cnt = struct.unpack(">II", blk[2:10])
            if cnt > self.bs // 4 - 10 + 7:
                raise Bad("free index %d too full" % b)
            self.ff.append(b)
            self.free += list(struct.unpack(">%dI" % cnt, blk[10:10 + 4 * cnt]))
            b = nxt
        for f in self.free + self.ff:
            if f in self.seen:
                raise Bad("block %d is free and in the tree" % f)
            if f >= self.nblocks:
                raise Bad("free block %d past the device" % f)

    def block(self, n):
        if n >= self.nblocks:
            raise Bad("block %d past the device size" % n)
        at = 512 + n * self.bs
        return self.d[at:at + self.bs]

    def visit(self, n, magic):
        if n in self.seen:
            raise Bad("block %d reached twice" % n)
        self.seen.add(n)
        b = self.block(n)
        if b[:2] != magic:
            raise Bad("block %d: expected %r" % (n, magic))
        return b

    def walk(self, n, leaf, depth):
        if depth > 64:
            raise Bad("too deep")
        if leaf:
            self.depths.add(depth)
            self.leaf(n)
            return
        b = self.visit(n, b"II")
        self.index_blocks += 1
        level, cnt, first = struct.unpack(">BII", b[2:11])
        if cnt + 1 > self.maxp:
            raise Bad("index %d: %d children, more than the game's %d" % (n, cnt + 1, self.maxp))
        kids = [first]
        for i in range(cnt):
            at = 11 + i * (self.ks + 4)
            kids.append(struct.unpack(">I", b[at + self.ks:at + self.ks + 4])[0])
        for k in kids:
            self.walk(k, level == 0, depth + 1)

    def leaf(self, n):
        last = self.visit(n, b"LL")
        self.leaf_blocks += 1
        data = bytearray(last[2:self.bs - 4])
        pos = 0

        def take(k):
            nonlocal pos, last
            while len(data) < pos + k:
                nxt, = struct.unpack(">I", last[self.bs - 4:])
                if nxt == 0xFFFFFFFF:
                    raise Bad("leaf %d: data ends early" % n)
                last = self.visit(nxt, b"LL")
                self.leaf_blocks += 1
                data.extend(last[2:self.bs - 4])
            v = bytes(data[pos:pos + k])
            pos += k
            return v

        def vlq():
            v = 0
            for _ in range(10):
                c = take(1)[0]
                v = (v << 7) | (c & 0x7F)
                if not c & 0x80:
                    return v
            raise Bad("VLQ too long")

        cnt, = struct.unpack(">I", take(4))
        for _ in range(cnt):
            k = take(self.ks)
            self.records.append((k, take(vlq())))


def inflate(v):
    d = zlib.decompressobj()
    out = d.decompress(v)
    if not d.eof or d.unused_data:
        raise Bad("not one whole zlib stream")
    return out


# ---- World4 views ------------------------------------------------------------------

COLS = ("x y fg fg_hue fg_colour fg_mod fg_mod_hue bg bg_hue bg_colour bg_mod bg_mod_hue "
        "liquid level pressure source collision dungeon biome env_biome transition root").split()


def shortest(f):
    if f != f:
        return "nan"
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    # The fewest significant digits that read back to the same float,
    # laid out as a person writes them: an exponent only below 1e-4 or
    # from 1e16 on ("1.5e-05", "1e+16").
    for p in range(1, 10):
        e = "%.*e" % (p - 1, f)
        if struct.unpack(">f", struct.pack(">f", float(e)))[0] == f:
            break
    mant, x = e.split("e")
    x = int(x)
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    if x < -4 or x >= 16:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + \
            "e%s%02d" % ("-" if x < 0 else "+", abs(x))
    elif x < 0:
        body = "0." + "0" * (-x - 1) + digits
    elif x + 1 >= len(digits):
        body = digits + "0" * (x + 1 - len(digits))
    else:
        body = digits[:x + 1] + "." + digits[x + 1:]
    return ("-" if neg else "") + body


def tiles(v):
    r = R(v)
    gen, ver = r.vlq(), r.vlq()
    if ver not in (416, 417, 418):
        raise Bad("tile version %d" % ver)
    out = []
    for i in range(1024):
        t = {}
        for side in ("fg", "bg"):
            t[side] = r.u16()
            t[side + "_hue"] = r.u8()
            t[side + "_colour"] = r.u8()
            t[side + "_mod"] = r.u16()
            t[side + "_mod_hue"] = r.u8()
        t["liquid"] = r.u8()
        t["level"] = r.f32()
        t["pressure"] = r.f32()
        t["source"] = r.u8()
        t["collision"] = r.u8()
        if t["collision"] > 5:
            raise Bad("collision %d" % t["collision"])
        t["dungeon"] = r.u16()
        t["biome"] = r.u8()
        t["env_biome"] = r.u8()
        t["transition"] = r.u8() if ver >= 417 else None
        if ver >= 418:
            t["root"] = (struct.unpack(">ii", r.take(8)) if r.u8() else None)
        else:
            r.u8()
            t["root"] = None
        out.append(t)
    if r.left():
        raise Bad("bytes after the tiles")
    return gen, ver, out


def tsv(sx, sy, v):
    gen, ver, ts = tiles(v)
    lines = ["# " + "\t".join(COLS), "# version %d generation %d" % (ver, gen)]
    for i, t in enumerate(ts):
        f = [str(sx * 32 + i % 32), str(sy * 32 + i // 32)]
        for side in ("fg", "bg"):
            f += [str(t[side + k]) for k in ("", "_hue", "_colour", "_mod", "_mod_hue")]
        f += [str(t["liquid"]), shortest(t["level"]), shortest(t["pressure"]),
              "1" if t["source"] else "0", str(t["collision"]), str(t["dungeon"]),
              str(t["biome"]), str(t["env_biome"]),
              "-" if t["transition"] is None else ("1" if t["transition"] else "0"),
              "-" if t["root"] is None else "%d,%d" % t["root"]]
        lines.append("\t".join(f))
    return ("\n".join(lines) + "\n").encode()


def entities(v):
    r = R(v)
    ents = [vjson(r) for _ in range(r.vlq())]
    for e in ents:
        if not r.left():
            break
        trailer(r, e)
    if r.left():
        raise Bad("bytes after the entities")
    return ents


def metadata(v):
    r = R(v)
    w, h = r.u32(), r.u32()
    o = {"width": w, "height": h}
    o.update(vjson(r))
    trailer(r, o)
    if r.left():
        raise Bad("bytes after the metadata")
    return o


def vdoc(v):
    r = R(v)
    o = vjson(r)
    trailer(r, o)
    if r.left():
        raise Bad("bytes after the value")
    return o


def ubucket(v):
    r = R(v)
    o = {}
    for _ in range(r.vlq()):
        k = r.string()
        sx, sy = r.u16(), r.u16()
        x, y = r.f32(), r.f32()
        o[k] = {"sector": [sx, sy], "position": [x, y]}
    if r.left():
        raise Bad("bytes after a unique bucket")
    return o


def usector(v):
    r = R(v)
    a = [r.string() for _ in range(r.vlq())]
    if r.left():
        raise Bad("bytes after a sector's uniques")
    return a


def xxh32(data, seed=0):
    P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    M = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & M

    def rnd(acc, lane):
        return (rotl((acc + lane * P2) & M, 13) * P1) & M

    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 16 <= n:
            for j in range(4):
                v[j] = rnd(v[j], struct.unpack("<I", data[i + 4 * j:i + 4 * j + 4])[0])
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 4 <= n:
        h = (rotl((h + struct.unpack("<I", data[i:i + 4])[0] * P3) & M, 17) * P4) & M
        i += 4
    while i < n:
        h = (rotl((h + data[i] * P5) & M, 11) * P1) & M
        i += 1
    h ^= h >> 15
    h = (h * P2) & M
    h ^= h >> 13
    h = (h * P3) & M
    h ^= h >> 16
    return h


def check_world(db):
    """The loader's rules for World4 records, and the unique index's
    agreement with the entity sectors."""
    recs = {k: inflate(v) for k, v in db.records}
    sectors_uniques = {}
    for k, v in recs.items():
        t = k[0]
        if t == 0:
            metadata(v)
        elif t == 1:
            tiles(v)
        elif t == 2:
            ids = {}
            for e in entities(v):
                c = e["content"]
                if isinstance(c, dict) and isinstance(c.get("uniqueId"), str):
                    ids[c["uniqueId"]] = k[1:]
            if ids:
                sectors_uniques[k[1:]] = ids
        elif t == 3:
            for uid in ubucket(v):
                if struct.pack(">BI", 3, xxh32(uid.encode())) != k:
                    raise Bad("unique %r is in the wrong bucket" % uid)
        elif t == 4:
            usector(v)
    # Every entity with a unique id is listed in its sector's type-4 record
    # and in its type-3 bucket, at its sector.
    for sec, ids in sectors_uniques.items():
        listed = recs.get(b"\x04" + sec)
        if listed is None or set(ids) - set(usector(listed)):
            raise Bad("sector %r: unique ids %s not in its type-4 record" % (sec, sorted(ids)))
        for uid in ids:
            b = recs.get(struct.pack(">BI", 3, xxh32(uid.encode())))
            if b is None or uid not in ubucket(b):
                raise Bad("unique %r missing from its bucket" % uid)
            sx, sy = ubucket(b)[uid]["sector"]
            if struct.pack(">HH", sx, sy) != sec:
                raise Bad("unique %r indexed at another sector" % uid)


def sname(k):
    return "%d,%d" % struct.unpack(">HH", k[1:5])


def dump(path, out):
    data = open(path, "rb").read()
    if data[:6] == b"SBVJ01":
        o = vdoc(data[6:])
        write(out, "data.json", pretty(o))
        return
    db = DB(data)
    os.makedirs(os.path.join(out, "keys"), exist_ok=True)
    zl = db.cid in ("World4", "Celestial2")
    for k, v in db.records:
        raw = inflate(v) if zl or (v[:1] == b"\x78" and ok_zlib(v)) else v
        write(out, "keys/" + k.hex(), raw)
        if db.cid == "World4":
            t = k[0]
            if t == 0:
                write(out, "world/metadata.json", pretty(metadata(raw)))
            elif t == 1:
                write(out, "world/tiles/%s.tsv" % sname(k), tsv(*struct.unpack(">HH", k[1:5]), raw))
            elif t == 2:
                write(out, "world/entities/%s.json" % sname(k), pretty(entities(raw)))
        elif db.cid == "Celestial2":
            o = vdoc(raw)
            x, y = o["content"]["chunkIndex"]
            write(out, "celestial/%d,%d.json" % (x, y), pretty(o))


def compare(path, got):
    import tempfile
    with tempfile.TemporaryDirectory() as want:
        dump(path, want)
        bad = 0
        wanted = set()
        for root, _, files in os.walk(want):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), want)
                wanted.add(rel)
                g = os.path.join(got, rel)
                if not os.path.exists(g):
                    print("missing: %s" % rel)
                    bad += 1
                    continue
                a, b = open(os.path.join(want, rel), "rb").read(), open(g, "rb").read()
                same = json.loads(a) == json.loads(b) if rel.endswith(".json") else a == b
                if not same:
                    print("differs: %s" % rel)
                    bad += 1
        # Everything savefs shows beyond this reader's files is a view it
        # does not decode (the .txt grids, PNGs, header and uniques).
        for root, _, files in os.walk(got):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), got)
                if rel in wanted or rel.endswith((".txt", ".png")) or rel in (
                        "header.json", "world/uniques.json") or rel.startswith(".savefs"):
                    continue
                print("extra: %s" % rel)
                bad += 1
        print("%d files compared, %d problems" % (len(wanted), bad))
        return 1 if bad else 0


def ok_zlib(v):
    try:
        inflate(v)
        return True
    except Exception:
        return False


def pretty(o):
    return (json.dumps(o, indent=2, ensure_ascii=False) + "\n").encode()


def write(out, rel, b):
    p = os.path.join(out, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(b)


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    try:
        if cmd == "check":
            data = open(path, "rb").read()
            if data[:6] == b"SBVJ01":
                vdoc(data[6:])
                print("ok SBVJ01")
                return 0
            db = DB(data)
            if len(db.depths) > 1:
                raise Bad("leaves at different depths")
            if db.cid == "World4":
                check_world(db)
            ds = db.roots[1 if db.alt else 0][1]
            # The game cuts a longer file to the device size on open (a
            # commit that stopped leaves blocks past it); after a finished
            # commit (--exact) the two are equal.
            if ds != len(data) and "--exact" in sys.argv[3:]:
                raise Bad("device size %d, file %d bytes" % (ds, len(data)))
            print("ok %s records=%d index=%d leaves=%d free=%d levels=%d" % (
                db.cid, len(db.records), db.index_blocks, db.leaf_blocks,
                len(db.free), max(db.depths) if db.depths else 0))
        elif cmd == "dump":
            dump(path, sys.argv[3])
        elif cmd == "compare":
            return compare(path, sys.argv[3])
        elif cmd == "records":
            db = DB(open(path, "rb").read())
            zl = db.cid in ("World4", "Celestial2")
            for k, v in db.records:
                raw = inflate(v) if zl else v
                print(k.hex(), len(raw), hashlib.sha1(raw).hexdigest())
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Bad as e:
        print("bad: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
