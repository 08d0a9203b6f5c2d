#!/usr/bin/env python3
"""Checks that PetNet's dependencies run one way (docs/architecture.md):

    sys  <-  layers  <-  net  <-  (loss, ts, optim, data)  <-  trainer  <-  examples

A source file may include the headers (public or private) of its own folder and of folders to its left, never of a
folder to its right or beside it; and it may call a PETSC_INTERN function (a private function of another file) only if
that function is declared in a header it may include. Prints every violation with file and line; exits 1 if any.
Usage: share/docs/layering.py [--root DIR]"""
import os, re, sys

LEVEL = {'sys': 0, 'layers': 1, 'net': 2, 'loss': 3, 'ts': 3, 'optim': 3, 'data': 3, 'trainer': 4, 'all': 5}
# which folder each header belongs to
PUBLIC = {'petnetsys.h': 'sys', 'petnetlayout.h': 'sys', 'petnetlayer.h': 'layers', 'petnetnet.h': 'net', 'petnetloss.h': 'loss', 'petnetts.h': 'ts',
          'petnetdmda.h': 'ts', 'petnetoptim.h': 'optim', 'petnetdataset.h': 'data', 'petnettrainer.h': 'trainer', 'petnetspectrum.h': 'trainer', 'petnet.h': 'all'}
PRIVATE = {'layoutimpl.h': 'sys', 'threadsimpl.h': 'sys', 'layerimpl.h': 'layers', 'netimpl.h': 'net', 'lossimpl.h': 'loss', 'datasetimpl.h': 'data', 'trainerimpl.h': 'trainer', 'spectrumimpl.h': 'trainer'}


def may_use(user, used):
    """folder user may depend on folder used"""
    if user == used or used is None:
        return True
    if user == 'all':
        return True
    return LEVEL[used] < LEVEL[user] and not (LEVEL[used] == 3 and LEVEL[user] == 3)


def folder_of(path, root):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == 'src':
        return rel[1] if rel[1] in LEVEL else 'all'  # src/petnetinit.c: the umbrella over every package
    if rel[0] == 'include':
        name = rel[-1]
        return PUBLIC.get(name) or PRIVATE.get(name)
    return None


def main():
    root = '.'
    if '--root' in sys.argv:
        root = sys.argv[sys.argv.index('--root') + 1]
    files = []
    for top in ('src', 'include'):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, n) for n in names if n.endswith(('.c', '.h'))]
    inc = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
    intern = re.compile(r'PETSC_INTERN\s+[\w\s\*]+?\b(\w+)\s*\(')
    declared = {}  # PETSC_INTERN function -> the folder of the header (or file) that declares it
    for f in files:
        for m in intern.finditer(open(f, errors='replace').read()):
            declared.setdefault(m.group(1), folder_of(f, root) if f.endswith('.h') else ('file', f))
    bad = []
    for f in sorted(files):
        user = folder_of(f, root)
        if user is None:
            continue
        text = open(f, errors='replace').read()
        for i, line in enumerate(text.split('\n'), 1):
            m = inc.match(line)
            if not m:
                continue
            name = os.path.basename(m.group(1))
            used = PUBLIC.get(name) or PRIVATE.get(name)
            local = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            if '"' in line and os.path.exists(local):  # a header of a src folder, e.g. "../conv2d/window.h"
                used = folder_of(local, root)
            elif not m.group(1).startswith('petnet'):
                continue
            if not may_use(user, used):
                bad.append(f'{f}:{i}: {user} includes {m.group(1)} of {used}: dependencies run sys <- layers <- net <- (loss, ts, optim, data) <- trainer')
        for m in re.finditer(r'\b(\w+_Private)\s*\(', text):
            fn = m.group(1)
            where = declared.get(fn)
            if where is None or isinstance(where, tuple):
                continue  # static, or declared in a header of the file's own folder (src/.../x.h)
            if not may_use(user, where):
                line = text.count('\n', 0, m.start()) + 1
                bad.append(f'{f}:{line}: {user} calls {fn}, a private function of {where}')
    for b in sorted(set(bad)):
        print(b)
    print(f'layering: {len(files)} files, {len(set(bad))} violations')
    return 1 if bad else 0


if __name__ == '__main__':  # share/docs/archgraph.py imports the tables above
    sys.exit(main())
