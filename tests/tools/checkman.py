#!/usr/bin/env python3
"""checkman.py SAVEFS MANPAGE [COMPLETION [SOURCE_ROOT]]: the man page, `SAVEFS
--help` and the bash completion name the same things.

- every option and exit code --help lists is in the man page (roff, hyphens
  escaped), and every command of its usage in the man page's SYNOPSIS;
- with COMPLETION: every -o key of --help is a key the completion offers, and
  every key it offers is one --help names (as -o KEY, or among the FUSE options
  it passes on); every command of --help's usage is a command it offers;
- with SOURCE_ROOT: every environment variable the sources read (getenv) is in
  the man page's ENVIRONMENT section."""
import glob
import os
import re
import subprocess
import sys

savefs, man = sys.argv[1], sys.argv[2]
comp = sys.argv[3] if len(sys.argv) > 3 else None
root = sys.argv[4] if len(sys.argv) > 4 else None
help_text = subprocess.run([savefs, '--help'], capture_output=True, text=True,
                           check=True).stdout
page = open(man).read().replace('\\-', '-').replace('\\ ', ' ')
page = re.sub(r'\\f[BIRP]', '', page)


def section(name):
    parts = page.split('.SH ' + name)
    return parts[1].split('\n.SH')[0] if len(parts) > 1 else ''


# Options: "-f", "--formats", "-o cache=SIZE" -> "cache=", "-o upgrade" -> "upgrade".
opts = set(re.findall(r'(?<![\w-])(--?[a-zA-Z][\w-]*)', help_text.split('exit codes:')[0]))
keys = {m.group(1) for m in re.finditer(r'-o ([a-z0-9_]+=?)', help_text)}
opts |= keys
opts.discard('-o')
missing = sorted(o for o in opts if o.lstrip('-') and
                 not re.search(r'(?<![\w-])' + re.escape(o), page))
codes = re.findall(r'^  (\d+)  ', help_text.split('exit codes:')[1], re.M)
sect = section('EXIT STATUS')
missing += ['exit code ' + c for c in codes if not re.search(r'^\.B ' + c + r'$', sect, re.M)]
# Commands: "savefs ls ...", "savefs mounts".
usage = help_text.split('\n\n')[0]
commands = sorted(set(re.findall(r'^\s*(?:usage:)?\s*savefs ([a-z][a-z-]*)', usage, re.M)))
synopsis = section('SYNOPSIS')
missing += ['command ' + c for c in commands
            if not re.search(r'^\.B savefs ' + re.escape(c) + r'$', synopsis, re.M)]
checked = '%d options, %d exit codes and %d commands' % (len(opts), len(codes), len(commands))

if comp:
    text = open(comp).read()
    m = re.search(r"local okeys='([^']*)'", text)
    offered = set(m.group(1).split()) if m else set()
    fuse = re.search(r'other FUSE mount options \(([^)]*)\)', help_text, re.S)
    fuse_keys = set(re.findall(r'([a-z_]+=?)', fuse.group(1))) if fuse else set()
    missing += ['-o %s in the completion' % k for k in sorted(keys - offered)]
    missing += ['-o %s (offered by the completion) in --help' % k
                for k in sorted(offered - keys - fuse_keys)]
    m = re.search(r"compgen -W '((?:[a-z]+ )+[a-z]+)' -- \"\$cur\"\)\)\n\tfi", text)
    verbs = set(m.group(1).split()) if m else set()
    missing += ['command %s in the completion' % c for c in commands if c not in verbs]
    checked += ', %d -o keys of the completion' % len(offered)

if root:
    env = set()
    for f in glob.glob(os.path.join(root, '*', '**', '*.c'), recursive=True):
        if '/tests/' in f or '/bench/' in f:
            continue
        text = open(f, errors='replace').read()
        env |= set(re.findall(r'(?:getenv|aws_file)\("([A-Z_0-9]+)"', text))
    envsect = section('ENVIRONMENT')
    missing += ['environment variable %s in ENVIRONMENT' % v for v in sorted(env)
                if not re.search(r'(?<![\w$])' + v + r'(?!\w)', envsect)]
    checked += ', %d environment variables' % len(env)

if missing:
    print('not in %s: %s' % (man, ', '.join(missing)))
    sys.exit(1)
print('%s agree in %s' % (checked, man))
