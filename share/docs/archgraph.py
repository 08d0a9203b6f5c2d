#!/usr/bin/env python3
"""Draw the layers of PetNet's library from its #include graph, into docs/architecture.md.

Each folder of src/ (sys, layers, net, loss, ts, optim, data, trainer; the umbrella src/*.c and petnet.h as "all") uses
another when one of its files (.c or .h in src/, also in sub-folders, or one of its headers in include/) includes a
header of that folder: a public header of include/ or a
private one of include/petnet/private/ (which folder each belongs to is share/docs/layering.py's table), or a header
that sits in that folder of src/. A folder's level is 0 when it uses no other folder, else one more than the highest
level it uses: the drawing lists the folders from the top level down, each with the folders it uses and how many
#include lines say so. The drawing goes into docs/architecture.md between the lines
<!-- archgraph: begin --> and <!-- archgraph: end -->.

Usage: share/docs/archgraph.py            rewrite the drawing in docs/architecture.md
       share/docs/archgraph.py --check    exit 1 (and print both) if the committed drawing differs from the generated one
       share/docs/archgraph.py --dot      print the graph in Graphviz's DOT language
Options: --root DIR (default: this script's ../..). Python 3 standard library only.
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layering import PUBLIC, PRIVATE  # noqa: E402  (the header -> folder table, shared with the layering check)

BEGIN, END = "<!-- archgraph: begin -->", "<!-- archgraph: end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def folder_of_source(root, path):
    rel = os.path.relpath(path, os.path.join(root, "src")).split(os.sep)
    return rel[0] if len(rel) > 1 else "all"


def graph(root):
    """{folder: Counter(used folder -> #include lines)}, and the headers that belong to no known folder."""
    root = os.path.abspath(root)
    uses, unknown = collections.defaultdict(collections.Counter), set()
    files = []
    for top in ("include", "src"):
        for d, _, names in sorted(os.walk(os.path.join(root, top))):
            if os.path.relpath(d, root).startswith(os.path.join("src", "sys", "hdf5check")):
                continue  # a separate program, not part of the library
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    for f in files:
        d = os.path.dirname(f)
        if os.path.relpath(f, root).startswith("include"):
            user = PUBLIC.get(os.path.basename(f)) or PRIVATE.get(os.path.basename(f))
            if user is None:
                unknown.add(os.path.relpath(f, root))
                continue
        else:
            user = folder_of_source(root, f)
        uses[user]  # a folder that uses nothing still appears
        for inc in INCLUDE.findall(open(f, errors="replace").read()):
            local = os.path.normpath(os.path.join(d, inc))
            if os.path.exists(local) and local.startswith(os.path.join(root, "src") + os.sep):
                used = folder_of_source(root, local)
            elif inc.startswith("petnet"):
                name = os.path.basename(inc)
                used = PUBLIC.get(name) or PRIVATE.get(name)
                if used is None:
                    unknown.add(inc)
                    continue
            else:
                continue  # PETSc, SLEPc, the C library
            if used != user:
                uses[user][used] += 1
    return uses, unknown


def levels(uses):
    level = {}

    def visit(f, stack=()):
        if f in stack:
            raise SystemExit("archgraph: a cycle of includes: %s" % " -> ".join(stack + (f,)))
        if f not in level:
            level[f] = 1 + max((visit(u, stack + (f,)) for u in uses.get(f, {})), default=-1)
        return level[f]

    for f in list(uses):
        visit(f)
    return level


def drawing(uses):
    level = levels(uses)
    out = ["```", "level  folder             uses (the folder, and how many #include lines of this folder name its headers)"]
    for f in sorted(level, key=lambda f: (-level[f], f)):
        used = ", ".join("%s %d" % (u, n) for u, n in sorted(uses[f].items(), key=lambda x: (-level[x[0]], x[0])))
        name = "src/" + f if f != "all" else "petnet.h, src/*.c"
        out.append("%-6d %-18s %s" % (level[f], name, used or "(PETSc only)"))
    out.append("```")
    return "\n".join(out)


def dot(uses):
    out = ["digraph petnet {", "  rankdir=BT;"]
    for f in sorted(uses):
        for u, n in sorted(uses[f].items()):
            out.append('  "%s" -> "%s" [label="%d"];' % (f, u, n))
    out.append("}")
    return "\n".join(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Draw PetNet's layers from its #include graph into docs/architecture.md.")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--dot", action="store_true")
    args = ap.parse_args()
    uses, unknown = graph(args.root)
    if unknown:
        print("archgraph: headers of no known folder (add them to share/docs/layering.py): %s" % ", ".join(sorted(unknown)))
        return 1
    if args.dot:
        print(dot(uses))
        return 0
    doc = os.path.join(args.root, "docs", "architecture.md")
    text = open(doc, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        print("archgraph: %s lacks the markers %s and %s" % (doc, BEGIN, END))
        return 1
    head, rest = text.split(BEGIN, 1)
    committed, tail = rest.split(END, 1)
    new = drawing(uses)
    if args.check:
        if committed.strip("\n") != new:
            print("docs/architecture.md's drawing differs from the #include graph; run share/docs/archgraph.py and commit.")
            print("committed:\n%s\ngenerated:\n%s" % (committed.strip("\n"), new))
            return 1
        print("archgraph: the drawing in docs/architecture.md is the #include graph (%d folders)" % len(uses))
        return 0
    open(doc, "w", encoding="utf-8").write(head + BEGIN + "\n" + new + "\n" + END + tail)
    print("archgraph: wrote the drawing into %s" % os.path.relpath(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
