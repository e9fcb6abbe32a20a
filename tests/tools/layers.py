#!/usr/bin/env python3
"""layers.py - checks that the core's files call only downward.

    layers.py CORE_DIR

Reads the layers from the comment at the top of CORE_DIR/internal.h (the
lines of "The core in layers, bottom up"), finds which file defines each
sv_* function of the core, and reports every call from a file into a file
of a higher layer, or into another file of its own layer (files of one
layer are peers only when the layer names a folder: the helpers, the
sources, the tree; the formats too, but a format family never calls
another's: fmt/teeworlds/ is not fmt/starbound/'s to use).  Exit 0 if there is none, 1 with the list otherwise.
"""
import os
import re
import sys


def layers(core):
    text = open(os.path.join(core, "internal.h")).read()
    start = text.index("The core in layers, bottom up")
    end = text.index(" * Locks.", start)
    order = []  # (layer index, pattern of files)
    for line in text[start:end].splitlines()[1:]:
        body = line[2:].strip() if line.startswith(" *") else ""
        if not body:
            continue
        names = re.findall(r"\b([a-z0-9_]+\.c|[a-z]+/)", body)
        head = body.split()[0]
        if re.match(r"^([a-z0-9_]+\.c|[a-z]+/)$", head) or head in ("helpers", "sources"):
            order.append(names)
        elif order:
            order[-1].extend(names)
    table = {}
    for i, names in enumerate(order):
        for n in names:
            table[n] = i
    return table


def layer_of(path, table):
    if path.startswith("fmt/"):
        return table.get("fmt/")
    base = os.path.basename(path)
    folder = os.path.dirname(path)
    if base in table and (not folder or folder + "/" not in table):
        return table[base]
    if folder and folder + "/" in table:
        return table[folder + "/"]
    return table.get(base)


def main():
    core = sys.argv[1]
    table = layers(core)
    files = []
    dirs = ["", "source", "codec", "tree"]
    dirs += ["fmt/" + fam for fam in sorted(os.listdir(os.path.join(core, "fmt")))]
    for d in dirs:
        for f in sorted(os.listdir(os.path.join(core, d) if d else core)):
            if f.endswith(".c"):
                files.append(os.path.join(d, f) if d else f)
    defs = {}
    bodies = {}
    for f in files:
        s = open(os.path.join(core, f)).read()
        s = re.sub(r"/\*.*?\*/", "", s, flags=re.S)
        bodies[f] = s
        for m in re.finditer(r"^[a-z][\w \*]*?\b(sv_\w+)\(", s, re.M):
            defs.setdefault(m.group(1), f)
    missing = [f for f in files if layer_of(f, table) is None]
    if missing:
        print("layers.py: files internal.h does not place: " + ", ".join(missing))
        return 1
    bad = []
    for f in files:
        lf = layer_of(f, table)
        # The helpers call one another (their layer is a list of files).
        peers = os.path.dirname(f) != "" or lf == table.get("util.c")
        for name in sorted(set(re.findall(r"\b(sv_\w+)\(", bodies[f]))):
            d = defs.get(name)
            if not d or d == f:
                continue
            ld = layer_of(d, table)
            if f.startswith("fmt/") and d.startswith("fmt/") and \
                    os.path.dirname(f) != os.path.dirname(d):
                bad.append("%s calls %s (%s), another family's" % (f, name, d))
                continue
            if ld > lf or (ld == lf and not peers):
                bad.append("%s calls %s (%s), a layer %s" %
                           (f, name, d, "above" if ld > lf else "beside"))
    for b in bad:
        print(b)
    print("layers.py: %d files in %d layers, %d calls upward or sideways" %
          (len(files), len(set(table.values())), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
