"""What the make.py of each tests/data/bad/<fmt>/ directory shares: writing
its files, or (--check) saying which ones differ from what it would write.

It lives here, not in a format directory: tests/unit/test_bad.c takes every
other regular file there for a container.  A make.py imports it with this
directory on sys.path and bytecode off, so that no __pycache__ is left in
the tree:

    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.dirname(HERE))
    import badlib
"""
import os
import sys


def write(here, files, check):
    """Writes each (name, bytes) of files into the directory here, or with
    check only compares them with what is there.  Either way it names on
    stderr each file that differs, and each file here that files does not
    write (other than make.py and dot files).  Returns the exit status: 1
    if check found such a file, else 0."""
    stale = 0
    want = set()
    for name, data in files:
        assert name not in want, name
        want.add(name)
        path = os.path.join(here, name)
        if check:
            try:
                with open(path, 'rb') as f:
                    same = f.read() == data
            except OSError:
                same = False
            if not same:
                print('make.py: %s is out of date' % name, file=sys.stderr)
                stale += 1
        else:
            with open(path, 'wb') as f:
                f.write(data)
    # A file left from a variant that no longer exists is stale too.
    for name in sorted(os.listdir(here)):
        if name not in want and name != 'make.py' and not name.startswith('.') and \
                os.path.isfile(os.path.join(here, name)):
            print('make.py: %s is not written by make.py' % name, file=sys.stderr)
            stale += check
    return 1 if stale else 0


def main(here, files):
    """The command line of a make.py: no argument writes every file, --check
    only checks them (see write()).  files: a function giving the (name,
    bytes) pairs.  Returns the exit status."""
    return write(here, files(), sys.argv[1:] == ['--check'])
