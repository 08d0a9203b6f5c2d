#!/usr/bin/env python3
"""The refusals of one mode by another that remain in src/ (issue 29: modes compose).

A refusal is a PetscCheck/SETERRQ with PETSC_ERR_SUP whose message names a parallel mode or a precision (-net_parallel,
-net_precision, grid mode, model-parallel, sharded, partition=, the forward cache, ...). The script prints each one
with its file and line, and fails when there are more than tests/expected/refusals.count says: a new mode must compose
with the others, or its refusal must be argued (and the count raised) in review. When there are fewer, it says so, so
that the count can come down with the change that removed one.

Usage: tests/refusals.py [--update]   (--update writes the current count)
"""
import os
import re
import sys

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
countfile = os.path.join(top, "tests", "expected", "refusals.count")
modes = re.compile(r"-net_parallel|-net_precision|grid mode|model.parallel|sharded|partition=|spatial|forward cache|"
                   r"-net_spatial|bfloat16|single precision|NetSetGrid|LayerConv2dSetDM", re.I)
check = re.compile(r"(PetscCheck|SETERRQ)\s*\(")


def refusals():
    found = []
    for root, _, files in os.walk(os.path.join(top, "src")):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            path = os.path.join(root, f)
            text = open(path, encoding="utf-8", errors="replace").read()
            for m in check.finditer(text):
                # the call up to its closing ");" (at most 1200 characters)
                end = text.find(");", m.end())
                call = text[m.start():end if end >= 0 else m.start() + 1200][:1200]
                if "PETSC_ERR_SUP" not in call or not modes.search(call):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                msg = re.search(r'"(.*?)"', call, re.S)
                found.append((os.path.relpath(path, top), line, (msg.group(1) if msg else "")[:110]))
    return found


def main():
    found = refusals()
    for path, line, msg in found:
        print("%s:%d: %s" % (path, line, msg))
    if len(sys.argv) > 1 and sys.argv[1] == "--update":
        open(countfile, "w").write("%d\n" % len(found))
        print("refusals: %d (written to %s)" % (len(found), os.path.relpath(countfile, top)))
        return 0
    allowed = int(open(countfile).read().split()[0])
    print("refusals: %d, allowed %d" % (len(found), allowed))
    if len(found) > allowed:
        print("FAILED: %d refusals of one mode by another, more than the %d allowed: make the new mode compose "
              "(executors, value stores), or give the mathematical reason and raise tests/expected/refusals.count"
              % (len(found), allowed))
        return 1
    if len(found) < allowed:
        print("note: fewer than allowed: lower tests/expected/refusals.count to %d (tests/refusals.py --update)" % len(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
