#!/usr/bin/env python3
"""Checks that PetNet's dependencies run one way (docs/architecture.md):

    sys  <-  layers  <-  net  <-  (loss, ts, optim, data)  <-  trainer  <-  examples

A source file may include the headers (public or private) of its own folder and of folders to its left, never of a
folder to its right or beside it; and it may call a PETSC_INTERN function (a private function of another file) only if
that function is declared in a header it may include.

Layers know no Net mode (docs/architecture.md): how a node runs over the ranks (its partition, the grid, the fused
activation) is the Net's. So no file of src/layers (nor the Layer's private header) names a Net's mode state (the
fields griddim, partition[], fuseact, fusemask, fuseforward..., LayerSetPartition()) nor says in a message what a Net
does ("NetSetGrid", "partition=", "on a grid", "node of a ..."); and src/optim reads the Net through its public calls
only (no netimpl.h). Prints every violation with file and line; exits 1 if any.
Usage: share/docs/layering.py [--root DIR] [--selftest]
--selftest: plants each forbidden line in a copy of src/ and include/ and checks that it is reported (the check can fail)."""
import os, re, sys

LEVEL = {'sys': 0, 'layers': 1, 'net': 2, 'loss': 3, 'ts': 3, 'optim': 3, 'data': 3, 'trainer': 4, 'all': 5}
# which folder each header belongs to
PUBLIC = {'petnetsys.h': 'sys', 'petnetlayout.h': 'sys', 'petnetlayer.h': 'layers', 'petnetnet.h': 'net', 'petnetloss.h': 'loss', 'petnetts.h': 'ts',
          'petnetdmda.h': 'ts', 'petnetoptim.h': 'optim', 'petnetdataset.h': 'data', 'petnettrainer.h': 'trainer', 'petnetspectrum.h': 'trainer', 'petnet.h': 'all'}
PRIVATE = {'layoutimpl.h': 'sys', 'threadsimpl.h': 'sys', 'mathimpl.h': 'sys', 'onednnimpl.h': 'sys', 'bf16impl.h': 'sys', 'layerimpl.h': 'layers', 'netimpl.h': 'net', 'lossimpl.h': 'loss', 'datasetimpl.h': 'data', 'trainerimpl.h': 'trainer', 'spectrumimpl.h': 'trainer'}


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


# what src/layers may not name: the Net's mode state, in code (comments and strings aside) and in its messages
MODE_CODE = re.compile(r'\bgriddim\b|->\s*partition\b|\bpartition\s*\[|\bfuse(act|mask|forward|backward|dinto|dback)\w*|\bLayerFused\w*|\bLayer[SG]etPartition\b')
MODE_TEXT = re.compile(r'NetSetGrid|partition=|on a grid|node of an? ')
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def mode_violations(root, files):
    """src/layers naming a Net mode, src/optim including netimpl.h (see the module's doc)"""
    bad = []
    for f in sorted(files):
        rel = os.path.relpath(f, root).replace(os.sep, '/')
        text = open(f, errors='replace').read()
        if rel.startswith('src/optim/'):
            for i, line in enumerate(text.split('\n'), 1):
                if re.match(r'\s*#\s*include\s*[<"].*netimpl\.h[>"]', line):
                    bad.append(f'{f}:{i}: src/optim includes the Net\'s private header: read the Net through its public calls (NetGetNodeArraysRead(), NetGetLayer(), ...)')
        if not (rel.startswith('src/layers/') or rel == 'include/petnet/private/layerimpl.h'):
            continue
        code = COMMENT.sub(lambda m: '\n' * m.group(0).count('\n'), text)  # keep the line numbers
        for i, line in enumerate(code.split('\n'), 1):
            for t in STRING.findall(line):
                m = MODE_TEXT.search(t)
                if m:
                    bad.append(f'{f}:{i}: a layer\'s message says what a Net does ("{m.group(0)}"): refuse it in the Net\'s executor (src/net), naming the node')
            m = MODE_CODE.search(STRING.sub('""', line))
            if m:
                bad.append(f'{f}:{i}: a layer names a Net\'s mode state ({m.group(0)}): partition, grid and fusion belong to the Net\'s node (netimpl.h)')
    return bad


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
    bad += mode_violations(root, files)
    for b in sorted(set(bad)):
        print(b)
    print(f'layering: {len(files)} files, {len(set(bad))} violations')
    return 1 if bad else 0


# (file, line appended) pairs that each must make the check fail; selftest() plants them one at a time
PLANTS = [
    ('include/petnet/private/layerimpl.h', 'struct _p_Planted { PetscInt griddim; };'),
    ('src/layers/impls/dense/dense.c', 'static PetscInt Planted(Layer layer) { return layer->partition[0]; }'),
    ('src/layers/impls/dense/dense.c', 'static PetscBool Planted(Layer layer) { return layer->fuseforward; }'),
    ('src/layers/impls/conv/conv.c', 'static const char *planted = "conv2d layer 3 is in a Net on a grid (NetSetGrid())";'),
    ('src/layers/impls/graph/graph.c', 'static const char *planted = "cannot have its weights split over ranks (partition=)";'),
    ('src/layers/impls/pool/pool.c', '#include <petnet/private/netimpl.h>'),
    ('src/optim/kfacimpl.h', '#include <petnet/private/netimpl.h>'),
]


def selftest(root):
    import shutil, subprocess, tempfile
    failures = 0
    for path, line in PLANTS:
        with tempfile.TemporaryDirectory() as tmp:
            for top in ('src', 'include'):
                shutil.copytree(os.path.join(root, top), os.path.join(tmp, top), ignore=shutil.ignore_patterns('*.o', '*.d'))
            with open(os.path.join(tmp, path), 'a') as f:
                f.write('\n' + line + '\n')
            r = subprocess.run([sys.executable, os.path.abspath(__file__), '--root', tmp], capture_output=True, text=True)
            caught = r.returncode != 0 and path in r.stdout
            print(f'{"caught" if caught else "MISSED"}: {path}: {line}')
            failures += not caught
    print(f'layering selftest: {len(PLANTS) - failures} of {len(PLANTS)} planted violations caught')
    return 1 if failures else 0


if __name__ == '__main__':  # share/docs/archgraph.py imports the tables above
    sys.exit(selftest(sys.argv[sys.argv.index('--root') + 1] if '--root' in sys.argv else '.') if '--selftest' in sys.argv else main())
