#!/usr/bin/env python3
"""checkman.py SAVEFS MANPAGE: every option and every exit code that
`SAVEFS --help` lists is in the man page (roff, hyphens escaped)."""
import re
import subprocess
import sys

savefs, man = sys.argv[1], sys.argv[2]
help_text = subprocess.run([savefs, '--help'], capture_output=True, text=True,
                           check=True).stdout
page = open(man).read().replace('\\-', '-').replace('\\ ', ' ')
page = re.sub(r'\\f[BIRP]', '', page)
# Options: "-f", "--formats", "-o cache=SIZE" -> "cache=", "-o upgrade" -> "upgrade".
opts = set(re.findall(r'(?<![\w-])(--?[a-zA-Z][\w-]*)', help_text.split('exit codes:')[0]))
opts |= {m.group(1) for m in re.finditer(r'-o ([a-z0-9_]+=?)', help_text)}
opts.discard('-o')
missing = sorted(o for o in opts if o.lstrip('-') and
                 not re.search(r'(?<![\w-])' + re.escape(o), page))
codes = re.findall(r'^  (\d+)  ', help_text.split('exit codes:')[1], re.M)
sect = page.split('.SH EXIT STATUS')[1].split('.SH')[0] if '.SH EXIT STATUS' in page else ''
missing += ['exit code ' + c for c in codes if not re.search(r'^\.B ' + c + r'$', sect, re.M)]
if missing:
    print('not in %s: %s' % (man, ', '.join(missing)))
    sys.exit(1)
print('%d options and %d exit codes of --help are in %s' % (len(opts), len(codes), man))
