#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every section of docs/design.md that the sources cite exists.

Code and documents point into design.md by number ("docs/design.md 5.8",
"design.md, 10.1", "design.md section 4", "[design.md](design.md) 5.9",
"design.md 7 and 11"): each number so cited, and each one listed right after
it, must be a heading of design.md ("## N." or "### N.M"), so renumbering a
section without its references fails here. Searched: runtime/, include/,
test/, bench/, examples/, docs/, .ci/, README.md and meson.build.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
with open(os.path.join(root, 'docs', 'design.md'), encoding='utf-8') as f:
    heads = set(re.findall(r'^#{2,3} (\d+(?:\.\d+)?)[. ]', f.read(), re.M))
SEP = r', | and | or |/'
NUM = r'\d+(?:\.\d+)?'
REF = re.compile(r'design\.md(?:\]\([^)]*\))?[ ,:]*(?:section |§ ?)?'
                 r'(' + NUM + r'(?:(?:' + SEP + r')' + NUM + r')*)')


def check(path, bad):
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        return
    for m in REF.finditer(text):
        for n in re.split(SEP, m.group(1)):
            n = n.rstrip('.')
            if n not in heads:
                line = text.count('\n', 0, m.start()) + 1
                bad.append(f'{os.path.relpath(path, root)}:{line}: design.md {n}')


bad = []
for d in ('runtime', 'include', 'test', 'bench', 'examples', 'docs', '.ci'):
    for dirpath, _, files in os.walk(os.path.join(root, d)):
        for name in files:
            check(os.path.join(dirpath, name), bad)
for name in ('README.md', 'meson.build'):
    check(os.path.join(root, name), bad)
if bad:
    print('references to no section of docs/design.md:', *bad, sep='\n  ')
    sys.exit(1)
print(f'{len(heads)} sections; every reference resolves')
