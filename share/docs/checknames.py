#!/usr/bin/env python3
"""Check that the PetNet functions the documentation names exist.

In README.md, tests/README.md and docs/**/*.md (not docs/api, which make docs generates from the code), every name
written as a call, Name( or `Name()`, that starts with one of PetNet's class prefixes (Net, Layer, Loss, Dataset,
Trainer, Spectrum, PetNet, Cosmo3dField) must be a function the code defines or declares: a name followed by "(" in
the C sources and headers of src/, include/, examples/, tests/ and bench/. A renamed or removed function then fails
the check instead of lingering in the manual. Names with "MyKind" are the developers' guide's example of a new kind.

Usage: share/docs/checknames.py [--root DIR]. Prints FILE:LINE: Name for each unknown name and a count; exits 1 if any.
Python 3 standard library only.
"""
import argparse
import os
import re
import sys

PREFIX = r"(?:Net|Layer|Loss|Dataset|Trainer|Spectrum|PetNet|Cosmo3dField)"
DOC_CALL = re.compile(r"\b(" + PREFIX + r"[A-Z0-9]\w*)\s*\(")
CODE_CALL = re.compile(r"\b(\w+)\s*\(")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Check that the functions the docs name exist in the code.")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    root = os.path.abspath(ap.parse_args().root)
    known = set()
    for top in ("src", "include", "examples", "tests", "bench"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    known.update(CODE_CALL.findall(open(os.path.join(d, n), errors="replace").read()))
    docs = [os.path.join(root, "README.md"), os.path.join(root, "tests", "README.md")]
    for d, dirs, names in os.walk(os.path.join(root, "docs")):
        dirs[:] = [x for x in dirs if os.path.join(d, x) != os.path.join(root, "docs", "api")]
        docs += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    unknown, count = [], 0
    for md in docs:
        if not os.path.exists(md):
            continue
        for i, line in enumerate(open(md, encoding="utf-8"), 1):
            for name in DOC_CALL.findall(line):
                count += 1
                if name not in known and "MyKind" not in name:  # the developers' guide's example kind
                    unknown.append("%s:%d: %s" % (os.path.relpath(md, root), i, name))
    for u in unknown:
        print(u)
    print("names: %d calls of PetNet functions in the docs, %d unknown to the code" % (count, len(unknown)))
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
