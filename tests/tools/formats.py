#!/usr/bin/env python3
"""formats.py - every registered format has the places a format needs.

    formats.py SAVEFS SOURCE_ROOT

Lists the registered formats (SAVEFS --formats) and checks each against
tests/formats.tsv: a row for it, its fuzz target, a bad-input folder with
inputs in it, its e2e script (each also run by tests/meson.build), the independent decoder (or game tool) it
is judged by, its MIME type in data/savefs.xml, and its family named in
doc/formats.md and doc/savefs.1.  A row for a format not registered is
refused too.  Exit 0, or 1 with every gap.
"""
import os
import subprocess
import sys


def main():
    savefs, root = sys.argv[1], sys.argv[2]
    out = subprocess.run([savefs, "--formats"], capture_output=True, text=True, check=True).stdout
    registered = [line.split()[0] for line in out.splitlines() if line.strip()]
    rows = {}
    for line in open(os.path.join(root, "tests", "formats.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        f = line.rstrip("\n").split("\t")
        rows[f[0]] = f
    gaps = []
    mime = open(os.path.join(root, "data", "savefs.xml")).read()
    build = open(os.path.join(root, "tests", "meson.build")).read()

    def registered_in(table, key):
        """Whether tests/meson.build's dict or list `table` holds key."""
        start = build.find(table)
        end = build.find("}" if table.endswith("{") else "]", start)
        return start >= 0 and f"'{key}'" in build[start:end]
    docs = {p: open(os.path.join(root, p)).read() for p in ("doc/formats.md", "doc/savefs.1")}
    for name in registered:
        row = rows.get(name)
        if not row:
            gaps.append(f"{name}: no row in tests/formats.tsv")
            continue
        if len(row) != 7:
            gaps.append(f"{name}: its row has {len(row)} fields, not 7")
            continue
        _, fuzz, bad, e2e, judge, mtype, family = row
        need = [
            (f"tests/fuzz/fuzz_{fuzz}.c", "its fuzz target"),
            (f"tests/e2e/{e2e}", "its e2e script"),
            (judge, "the decoder it is judged by"),
        ]
        for path, what in need:
            if not os.path.isfile(os.path.join(root, path)):
                gaps.append(f"{name}: {what}, {path}, is missing")
        for table, key, what in (("fuzz_targets = {", fuzz, "fuzz target"),
                                 ("e2e_tests = {", e2e[:-3], "e2e script"),
                                 ("foreach f : [", bad, "bad-input folder")):
            if not registered_in(table, key):
                gaps.append(f"{name}: its {what} {key} is not run (tests/meson.build)")
        bad_dir = os.path.join(root, "tests", "data", "bad", bad)
        if not os.path.isdir(bad_dir) or not any(n.endswith(".msg") for n in os.listdir(bad_dir)):
            gaps.append(f"{name}: no bad inputs in tests/data/bad/{bad}")
        if f'<mime-type type="{mtype}">' not in mime:
            gaps.append(f"{name}: MIME type {mtype} is not in data/savefs.xml")
        for path, text in docs.items():
            if family not in text:
                gaps.append(f"{name}: {path} does not name {family}")
    for name in rows:
        if name not in registered:
            gaps.append(f"{name}: in tests/formats.tsv but not registered")
    for g in gaps:
        print("formats.py: " + g)
    if not gaps:
        print(f"formats.py: {len(registered)} formats, each with its fuzz target, bad inputs, "
              "e2e script, decoder, MIME type and docs")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
