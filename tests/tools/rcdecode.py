#!/usr/bin/env python3
"""An independent reader of chunked replay recordings (format version 4),
written from the format notes (shared/formats/recording.md) and the
recorder's rules, sharing no code with savefs.  Used by the tests to check
what savefs shows.

  rcdecode.py check RECORDING TREE [--events builtin|parkour] [--ticks N]
      TREE is `savefs extract RECORDING TREE`'s output; checks header.json,
      index.tsv, metadata.snbt/.nbt, every chunk's .bin and .txt, the
      timeline, at/ for every chunk start and N random ticks (read with
      `savefs cat`, SAVEFS in the environment), and compacted.hcrp.
  rcdecode.py text RECORDING N      a chunk's text, as this reader makes it
  rcdecode.py state RECORDING TICK  the state at a tick
Exit 0 if everything matches, 1 with the differences otherwise.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys

HEADER = 256


def varint(p, off, limit=5):
    v = 0
    for i in range(limit):
        if off >= len(p):
            raise ValueError("cut short")
        b = p[off]
        off += 1
        v |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return v, off
    raise ValueError("too long")


def s32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def s64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


class Recording:
    def __init__(self, path):
        self.path = path
        self.segmented = os.path.isdir(path)
        if self.segmented:
            with open(os.path.join(path, "preamble.dat"), "rb") as f:
                self.pre = f.read()
            self.finished = os.path.exists(os.path.join(path, "finished"))
        else:
            with open(path, "rb") as f:
                self.data = f.read()
            self.pre = self.data
            self.finished = True
        h = self.pre[:HEADER]
        assert h[:4] == b"HCRP"
        self.version, self.flags = struct.unpack(">hh", h[4:8])
        self.world_id = h[8:24]
        wv = struct.unpack(">b", h[24:25])[0]
        assert 0 <= wv <= 32
        self.world_version = h[25:25 + wv]
        o = 25 + wv
        (self.timestamp, self.dictionary, self.meta_len, self.index_len, self.tick_count,
         self.chunk_count, self.data_version) = struct.unpack(">qhiiiii", h[o:o + 30])
        self.meta = self.pre[HEADER:HEADER + self.meta_len]
        off = HEADER + self.meta_len
        self.chunks = []
        for i in range(self.chunk_count):
            start, off = varint(self.pre, off)
            ticks, off = varint(self.pre, off)
            flags = self.pre[off]
            offset = struct.unpack(">q", self.pre[off + 1:off + 9])[0]
            off += 9
            clen, off = varint(self.pre, off)
            ulen, off = varint(self.pre, off)
            self.chunks.append(dict(start=start, ticks=ticks, flags=flags, offset=offset,
                                    clen=clen, ulen=ulen))
        assert off == HEADER + self.meta_len + self.index_len
        self.problems = self.loader_rules()

    def loader_rules(self):
        """What the recorder's own reader (ReplayHeader, ReplayPreamble,
        CompactedReplayReader) refuses; [] for a recording it loads."""
        bad = []
        if self.version != 4:
            bad.append("version %d, not 4" % self.version)
        if self.dictionary != 0:
            bad.append("dictionary %d, not 0" % self.dictionary)
        if min(self.meta_len, self.index_len, self.tick_count, self.chunk_count) < 0:
            bad.append("a negative length or count")
        end = HEADER + self.meta_len + self.index_len
        if self.segmented and len(self.pre) != end:
            bad.append("preamble of %d bytes, the header says %d" % (len(self.pre), end))
        try:
            meta, used = nbt(self.meta, 0)
            if meta[0] != 10 or used != self.meta_len:
                bad.append("metadata is not one compound of the stated length")
        except (ValueError, IndexError, struct.error):
            bad.append("metadata is not NBT")
        tick, seg, seg_next, prev_end = 0, -1, 0, end
        for i, c in enumerate(self.chunks):
            if c["start"] != tick or c["ticks"] <= 0:
                bad.append("chunk %d starts at %d with %d ticks, expected %d" %
                           (i, c["start"], c["ticks"], tick))
            if c["clen"] <= 0 or c["ulen"] <= 0:
                bad.append("chunk %d has an empty length" % i)
            tick += c["ticks"]
            o = c["offset"]
            if self.segmented:
                s, so = o >> 32, o & 0xFFFFFFFF
                if s < seg or s > seg + 1 or (s != seg and so != 0) or (s == seg and so != seg_next):
                    bad.append("chunk %d: segments not contiguous" % i)
                seg, seg_next = s, so + c["clen"]
            else:
                if o < prev_end or o + c["clen"] > len(self.data):
                    bad.append("chunk %d lies outside the file or overlaps" % i)
                prev_end = o + c["clen"]
        if tick != self.tick_count:
            bad.append("the header says %d ticks, the chunks hold %d" % (self.tick_count, tick))
        return bad

    def stored(self, i):
        c = self.chunks[i]
        if self.segmented:
            name = "segment-%03d.dat" % (c["offset"] >> 32)
            with open(os.path.join(self.path, name), "rb") as f:
                f.seek(c["offset"] & 0xFFFFFFFF)
                return f.read(c["clen"])
        return self.data[c["offset"]:c["offset"] + c["clen"]]

    def payload(self, i):
        out = subprocess.run(["zstd", "-d", "-c", "-q"], input=self.stored(i),
                             stdout=subprocess.PIPE, check=True).stdout
        assert len(out) == self.chunks[i]["ulen"]
        return out


# ---- numbers as text -------------------------------------------------------

def f32(v):
    return struct.unpack(">f", struct.pack(">f", v))[0]


def real(v, is_float=False):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "-Infinity" if v < 0 else "Infinity"
    for p in range(1, 18):
        s = "%.*e" % (p - 1, v)
        if (f32(float(s)) == v) if is_float else (float(s) == v):
            break
    mant, ex = s.split("e")
    x = int(ex)
    neg = mant.startswith("-")
    d = mant.lstrip("-").replace(".", "")
    sign = "-" if neg else ""
    if x < -4 or x >= 16:
        m = d[0] + ("." + d[1:] if len(d) > 1 else "")
        return "%s%se%s%02d" % (sign, m, "-" if x < 0 else "+", abs(x))
    if x < 0:
        return sign + "0." + "0" * (-x - 1) + d
    if x + 1 >= len(d):
        return sign + d + "0" * (x + 1 - len(d))
    return sign + d[:x + 1] + "." + d[x + 1:]


# ---- NBT --------------------------------------------------------------------

def mutf8(b):
    units, i = [], 0
    while i < len(b):
        c = b[i]
        if c < 0x80:
            units.append(c)
            i += 1
        elif c & 0xE0 == 0xC0:
            units.append((c & 0x1F) << 6 | (b[i + 1] & 0x3F))
            i += 2
        else:
            units.append((c & 0x0F) << 12 | (b[i + 1] & 0x3F) << 6 | (b[i + 2] & 0x3F))
            i += 3
    return "".join(chr(u) for u in units).encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def nbt_payload(p, off, t):
    if t in (1, 2, 3, 4):
        w = {1: 1, 2: 2, 3: 4, 4: 8}[t]
        v = int.from_bytes(p[off:off + w], "big", signed=True)
        return (t, v), off + w
    if t == 5:
        return (t, struct.unpack(">f", p[off:off + 4])[0]), off + 4
    if t == 6:
        return (t, struct.unpack(">d", p[off:off + 8])[0]), off + 8
    if t == 8:
        n = struct.unpack(">H", p[off:off + 2])[0]
        return (t, mutf8(p[off + 2:off + 2 + n])), off + 2 + n
    if t in (7, 11, 12):
        n = struct.unpack(">i", p[off:off + 4])[0]
        off += 4
        et = {7: 1, 11: 3, 12: 4}[t]
        items = []
        for _ in range(n):
            v, off = nbt_payload(p, off, et)
            items.append(v)
        return (t, items), off
    if t == 9:
        et = p[off]
        n = struct.unpack(">i", p[off + 1:off + 5])[0]
        off += 5
        items = []
        for _ in range(max(n, 0)):
            v, off = nbt_payload(p, off, et)
            items.append(v)
        return (t, items), off
    if t == 10:
        members = []
        while p[off] != 0:
            mt = p[off]
            n = struct.unpack(">H", p[off + 1:off + 3])[0]
            name = mutf8(p[off + 3:off + 3 + n])
            v, off = nbt_payload(p, off + 3 + n, mt)
            members.append((name, v))
        return (t, members), off + 1
    raise ValueError("tag %d" % t)


def nbt(p, off):
    t = p[off]
    if t == 0:
        return (0, None), off + 1
    return nbt_payload(p, off + 1, t)


def quote(s):
    out = ['"']
    esc = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b",
           "\f": "\\f"}
    for ch in s:
        o = ord(ch)
        if ch in esc:
            out.append(esc[ch])
        elif o < 0x20 or o == 0x7F or 0xD800 <= o < 0xE000:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def key(k):
    ok = k and all(c.isascii() and (c.isalnum() or c in "_.+-") for c in k)
    return k if ok else quote(k)


def snbt(v, pretty=False, depth=0):
    t, x = v
    ind = lambda d: "\n" + "    " * d
    if t == 0:
        return ""
    if t == 1:
        return "%db" % x
    if t == 2:
        return "%ds" % x
    if t == 3:
        return "%d" % x
    if t == 4:
        return "%dL" % x
    if t in (5, 6):
        s = real(x, t == 5)
        if not any(c in s for c in ".eNI"):
            s += ".0"
        return s + ("f" if t == 5 else "d")
    if t == 8:
        return quote(x)
    if t in (7, 11, 12):
        parts = [snbt(e) for e in x]
        sep = ", " if pretty else ","
        return "[%s;%s]" % ("BIL"[(7, 11, 12).index(t)],
                            (" " if pretty and parts else "") + sep.join(parts))
    if t == 9:
        if not x:
            return "[]"
        lines = pretty and x[0][0] in (7, 9, 10, 11, 12)
        parts = [snbt(e, pretty, depth + 1) for e in x]
        if lines:
            return "[" + ",".join(ind(depth + 1) + s for s in parts) + ind(depth) + "]"
        return "[" + (", " if pretty else ",").join(parts) + "]"
    if t == 10:
        if not x:
            return "{}"
        parts = [key(k) + (": " if pretty else ":") + snbt(e, pretty, depth + 1) for k, e in x]
        if pretty:
            return "{" + ",".join(ind(depth + 1) + s for s in parts) + ind(depth) + "}"
        return "{" + ",".join(parts) + "}"
    raise ValueError(t)


# ---- events -----------------------------------------------------------------

NAMES = ["delta_move", "absolute_move", "entity_state", "hand_animation", "item_use",
         "set_item", "held_slot", "set_block", "spawn_entity", "destroy_entity", "run_start",
         "checkpoint_reached", "checkpoint_reset", "run_end", "clear_ghost_blocks"]
RESET = ["lives", "reset_height", "timer", "manual", "forced", "liquid", "sneak", "turn",
         "sprint", "relog"]
END = ["finish", "reset"]


class Stop(Exception):
    pass


class Reader:
    def __init__(self, p):
        self.p, self.off = p, 0

    def vi(self):
        try:
            v, self.off = varint(self.p, self.off, 5)
        except ValueError:
            raise Stop("a VarInt that is malformed or cut short")
        return s32(v)

    def vl(self):
        try:
            v, self.off = varint(self.p, self.off, 10)
        except ValueError:
            raise Stop("a VarLong that is malformed or cut short")
        return s64(v)

    def raw(self, n):
        if len(self.p) - self.off < n:
            raise Stop("the event is cut short")
        b = self.p[self.off:self.off + n]
        self.off += n
        return b


def lp_vector(r):
    a = r.raw(1)[0]
    if a == 0:
        return 0.0, 0.0, 0.0
    b = r.raw(1)[0]
    c = int.from_bytes(r.raw(4), "big")
    packed = c << 16 | b << 8 | a
    scale = a & 3
    if a & 4:
        scale |= (r.vi() & 0xFFFFFFFF) << 2
    out = []
    for i in range(3):
        f = min(packed >> (3 + 15 * i) & 32767, 32766)
        out.append((f * 2.0 / 32766.0 - 1.0) * float(scale))
    return tuple(out)


def coord(r):
    u = r.vl() & ((1 << 64) - 1)
    q = (u >> 1) ^ -(u & 1)
    return q / 4096.0


def angle(r):
    s = struct.unpack(">h", r.raw(2))[0]
    return f32(s / (65536 / 360.0))


def event(r, k):
    e = {"kind": k}
    if k == 0:
        e["entity"] = r.vi()
        e["x"], e["y"], e["z"] = coord(r), coord(r), coord(r)
        e["yaw"], e["pitch"] = angle(r), angle(r)
        e["v"] = lp_vector(r)
    elif k in (1, 8):
        e["entity"] = r.vi()
        if k == 8:
            e["type"] = r.vi()
        e["x"], e["y"], e["z"] = struct.unpack(">ddd", r.raw(24))
        e["yaw"], e["pitch"] = struct.unpack(">ff", r.raw(8))
        if k == 1:
            e["v"] = lp_vector(r)
    elif k == 2:
        e["entity"], e["pose"], e["flags"] = r.vi(), r.vi(), r.raw(1)[0]
    elif k in (3, 6):
        e["entity"], e["a"] = r.vi(), r.vi()
    elif k == 4:
        e["entity"] = r.vi()
        e["hand"] = r.vi() if r.raw(1)[0] else None
    elif k == 5:
        e["entity"] = r.vi()
        n = r.vi()
        if n < 0 or n > (len(r.p) - r.off) // 2:
            raise Stop("a slot count larger than the bytes left")
        e["slots"] = []
        for _ in range(n):
            slot = r.vi()
            try:
                item, r.off = nbt(r.p, r.off)
            except (ValueError, IndexError, struct.error):
                raise Stop("an item's NBT is malformed")
            e["slots"].append((slot, item))
    elif k == 7:
        v = int.from_bytes(r.raw(8), "big")
        sv = s64(v)
        e["bx"] = sv >> 38
        e["by"] = s64(v << 52) >> 52
        e["bz"] = s64(v << 26) >> 38
        e["state"] = r.vi()
    elif k == 9:
        e["entity"] = r.vi()
    elif k == 11:
        n = r.vi()
        if n < 0 or n > len(r.p) - r.off:
            raise Stop("a string longer than the bytes left")
        e["name"] = r.raw(n).decode("utf-8", "surrogateescape")
        e["time"] = r.vl()
    elif k in (12, 13):
        e["reason"], e["time"] = r.vi(), r.vl()
    return e


def walk(p, table):
    """Yields ("tick", tick, count), ("event", tick, id, e) and at most one
    ("stop", tick, id, reason, offset)."""
    r = Reader(p)
    size = 10 if table == "builtin" else 15
    tick = 0
    eid = 0
    try:
        while r.off < len(p):
            t = r.vi()
            c = struct.unpack(">h", r.raw(2))[0]
            if t < 0 or c < 0:
                raise Stop("a negative tick" if t < 0 else "a negative event count")
            tick = t
            yield ("tick", t, c)
            for _ in range(c):
                at = r.off
                eid = r.vi()
                if eid < 0 or eid >= size:
                    r.off = at
                    raise Stop("an event id the event table does not have")
                try:
                    e = event(r, eid)
                except Stop:
                    r.off = at
                    raise
                yield ("event", t, eid, e)
    except Stop as s:
        yield ("stop", tick, eid, str(s), r.off)


def fields(e):
    k = e["kind"]
    if k in (0, 1):
        d = "d" if k == 0 else ""
        return "entity=%d %sx=%s %sy=%s %sz=%s yaw=%s pitch=%s vx=%s vy=%s vz=%s" % (
            e["entity"], d, real(e["x"]), d, real(e["y"]), d, real(e["z"]),
            real(e["yaw"], True), real(e["pitch"], True), real(e["v"][0]), real(e["v"][1]),
            real(e["v"][2]))
    if k == 8:
        return "entity=%d type=%d x=%s y=%s z=%s yaw=%s pitch=%s" % (
            e["entity"], e["type"], real(e["x"]), real(e["y"]), real(e["z"]),
            real(e["yaw"], True), real(e["pitch"], True))
    if k == 2:
        return "entity=%d pose=%d flags=0x%02x" % (e["entity"], e["pose"], e["flags"])
    if k == 3:
        return "entity=%d hand=%d" % (e["entity"], e["a"])
    if k == 6:
        return "entity=%d slot=%d" % (e["entity"], e["a"])
    if k == 4:
        return "entity=%d hand=%s" % (e["entity"], "none" if e["hand"] is None else e["hand"])
    if k == 5:
        return "entity=%d slots=%d" % (e["entity"], len(e["slots"])) + "".join(
            " slot%d=%s" % (s, snbt(item)) for s, item in e["slots"])
    if k == 7:
        return "x=%d y=%d z=%d state=%d" % (e["bx"], e["by"], e["bz"], e["state"])
    if k == 9:
        return "entity=%d" % e["entity"]
    if k == 11:
        return "name=%s time=%d" % (quote(e["name"]), e["time"])
    if k in (12, 13):
        names = RESET if k == 12 else END
        rs = names[e["reason"]] if 0 <= e["reason"] < len(names) else str(e["reason"])
        return "reason=%s time=%d" % (rs, e["time"])
    return ""


def text(p, table):
    out = []
    for item in walk(p, table):
        if item[0] == "tick":
            out.append("%d\ttick\t%d\n" % (item[1], item[2]))
        elif item[0] == "event":
            _, t, eid, e = item
            out.append("%d\t%d\t%s\t%s\n" % (t, eid, NAMES[e["kind"]], fields(e)))
        else:
            _, t, eid, why, off = item
            out.append('%d\t%d\tundecoded\treason="%s" at=%d bytes=%s\n' % (
                t, eid, why, off, p[off:].hex()))
    return "".join(out)


def state(p, table, tick):
    ents, ghosts, run = {}, {}, {}
    found = False
    for item in walk(p, table):
        if item[0] == "tick":
            if found and item[1] != tick:
                break
            if item[1] > tick:
                break
            found = item[1] == tick
            continue
        if item[0] == "stop":
            raise ValueError(item[3])
        _, t, eid, e = item
        k = e["kind"]
        if k in (0, 1, 2, 4, 5, 6, 8):
            x = ents.setdefault(e["entity"], dict(type=None, x=0.0, y=0.0, z=0.0, yaw=0.0,
                                                  pitch=0.0, pose=0, flags=0, slots={},
                                                  held=None, using=None))
        if k in (1, 8):
            if k == 8:
                x["type"] = e["type"]
            x.update(x=e["x"], y=e["y"], z=e["z"], yaw=e["yaw"], pitch=e["pitch"])
        elif k == 0:
            x["x"] += e["x"]
            x["y"] += e["y"]
            x["z"] += e["z"]
            x["yaw"], x["pitch"] = e["yaw"], e["pitch"]
        elif k == 2:
            x["pose"], x["flags"] = e["pose"], e["flags"]
        elif k == 4:
            x["using"] = e["hand"]
        elif k == 5:
            for s, item in e["slots"]:
                x["slots"][s] = snbt(item)
        elif k == 6:
            x["held"] = e["a"]
        elif k == 9:
            ents.pop(e["entity"], None)
        elif k == 7:
            ghosts[(e["bx"], e["by"], e["bz"])] = e["state"]
        elif k == 14:
            ghosts = {}
        elif k in (10, 11, 12, 13):
            r = {"tick": t}
            if k == 11:
                r["name"] = e["name"]
            if k in (12, 13):
                names = RESET if k == 12 else END
                r["reason"] = names[e["reason"]] if 0 <= e["reason"] < len(names) else e["reason"]
            if k >= 11:
                r["time"] = e["time"]
            run[["start", "checkpoint_reached", "checkpoint_reset", "end"][k - 10]] = r
    if not found:
        raise ValueError("no tick %d" % tick)
    num = lambda v, f=False: None if not math.isfinite(v) else json.loads(real(v, f))
    out = {"tick": tick, "entities": {}, "ghost_blocks": {}, "run": {}}
    for i in sorted(ents):
        x = ents[i]
        out["entities"][str(i)] = {
            "type": x["type"], "position": [num(x["x"]), num(x["y"]), num(x["z"])],
            "yaw": num(x["yaw"], True), "pitch": num(x["pitch"], True), "pose": x["pose"],
            "flags": x["flags"], "slots": {str(s): x["slots"][s] for s in sorted(x["slots"])},
            "held": x["held"], "using": x["using"]}
    for g in sorted(ghosts):
        out["ghost_blocks"]["%d,%d,%d" % g] = ghosts[g]
    for k in ("start", "checkpoint_reached", "checkpoint_reset", "end"):
        if k in run:
            out["run"][k] = run[k]
    return out


# ---- checking a tree --------------------------------------------------------

def check(rec, tree, table, nticks):
    bad = []

    def expect(what, got, want):
        if got != want:
            bad.append("%s: savefs shows %r, expected %r" % (what, got[:300] if isinstance(got, (str, bytes)) else got,
                                                                want[:300] if isinstance(want, (str, bytes)) else want))

    def read(name, mode="r"):
        with open(os.path.join(tree, name), mode) as f:
            return f.read()

    for p in rec.problems:
        bad.append("the recorder's reader would refuse it: " + p)
    h = json.loads(read("header.json"))
    wid = rec.world_id.hex()
    expect("header.json", {k: h.get(k) for k in (
        "magic", "version", "flags", "world_id", "world_version", "timestamp", "dictionary",
        "metadata_length", "index_length", "tick_count", "chunk_count", "data_version",
        "layout", "finished")},
        dict(magic="HCRP", version=rec.version, flags=rec.flags,
             world_id="%s-%s-%s-%s-%s" % (wid[:8], wid[8:12], wid[12:16], wid[16:20], wid[20:]),
             world_version=rec.world_version.hex(), timestamp=rec.timestamp,
             dictionary=rec.dictionary, metadata_length=rec.meta_len,
             index_length=rec.index_len, tick_count=rec.tick_count,
             chunk_count=rec.chunk_count, data_version=rec.data_version,
             layout="segmented" if rec.segmented else "compacted", finished=rec.finished))
    lines = ["# chunk\tstart\tticks\tsnapshot\tsegment\toffset\tcompressed\tdecompressed\n"]
    for i, c in enumerate(rec.chunks):
        seg = str(c["offset"] >> 32) if rec.segmented else "-"
        off = c["offset"] & 0xFFFFFFFF if rec.segmented else c["offset"]
        lines.append("%06d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\n" % (
            i, c["start"], c["ticks"], "yes" if c["flags"] & 1 else "no", seg, off, c["clen"],
            c["ulen"]))
    expect("index.tsv", read("index.tsv"), "".join(lines))
    expect("metadata.nbt", read("metadata.nbt", "rb"), rec.meta)
    meta, _ = nbt(rec.meta, 0)
    expect("metadata.snbt", read("metadata.snbt"), snbt(meta, True) + "\n")
    timeline = []
    starts = []
    for i, c in enumerate(rec.chunks):
        p = rec.payload(i)
        expect("chunks/%06d.bin" % i, read("chunks/%06d.bin" % i, "rb"), p)
        t = text(p, table)
        expect("chunks/%06d.txt" % i, read("chunks/%06d.txt" % i), t)
        timeline.append(t)
        starts.append(c["start"])
    expect("timeline.txt", read("timeline.txt"), "".join(timeline))
    expect("at/ listing", sorted(os.listdir(os.path.join(tree, "at"))),
           ["%08d.json" % s for s in starts])
    savefs = os.environ.get("SAVEFS")
    ticks = list(starts)
    rnd = random.Random(7)
    ticks += [rnd.randrange(rec.tick_count) for _ in range(nticks)] if rec.tick_count else []
    for t in ticks:
        i = max(j for j, c in enumerate(rec.chunks) if c["start"] <= t)
        want = state(rec.payload(i), table, t)
        if t in starts and t == rec.chunks[i]["start"]:
            got = json.loads(read("at/%08d.json" % t))
        elif savefs:
            got = json.loads(subprocess.run([savefs, "cat", "-o", "events=" + table, rec.path,
                                             "at/%d.json" % t], stdout=subprocess.PIPE,
                                            check=True).stdout)
        else:
            continue
        expect("at/%d.json" % t, got, want)
    if rec.segmented:
        comp = read("compacted.hcrp", "rb")
        expect("compacted.hcrp: header", comp[:HEADER], rec.pre[:HEADER])
        expect("compacted.hcrp: metadata", comp[HEADER:HEADER + rec.meta_len], rec.meta)
        at = len(rec.pre)
        for i, c in enumerate(rec.chunks):
            expect("compacted.hcrp: chunk %d" % i, comp[at:at + c["clen"]], rec.stored(i))
            at += c["clen"]
        expect("compacted.hcrp: size", len(comp), at)
    return bad


def main(argv):
    table = "parkour"
    if "--events" in argv:
        k = argv.index("--events")
        table = argv[k + 1]
        del argv[k:k + 2]
    nticks = 20
    if "--ticks" in argv:
        k = argv.index("--ticks")
        nticks = int(argv[k + 1])
        del argv[k:k + 2]
    if len(argv) == 3 and argv[0] == "check":
        bad = check(Recording(argv[1]), argv[2], table, nticks)
        for b in bad:
            print(b)
        return 1 if bad else 0
    if len(argv) == 3 and argv[0] == "text":
        sys.stdout.write(text(Recording(argv[1]).payload(int(argv[2])), table))
        return 0
    if len(argv) == 3 and argv[0] == "state":
        rec = Recording(argv[1])
        t = int(argv[2])
        i = max(j for j, c in enumerate(rec.chunks) if c["start"] <= t)
        print(json.dumps(state(rec.payload(i), table, t), indent=2))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
