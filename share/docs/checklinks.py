#!/usr/bin/env python3
"""Check the relative links of PetNet's Markdown: README.md, tests/README.md and docs/**/*.md.

Every link [text](target) and image ![alt](target) outside code (fenced blocks and `inline code`) whose target is not
a URL (http:, https:, mailto:) must name a file or folder that exists, relative to the Markdown file; a #anchor must be
the anchor GitHub gives one of the target's headings (lowercase, punctuation other than - and _ dropped, spaces as -,
a repeated heading gets -1, -2, ...). A link to a line (file.c#L10) only needs the file.

Usage: share/docs/checklinks.py [--root DIR] [FILE.md ...]   (default: the files above). Prints each broken link as
FILE:LINE: target: reason, and "links: N checked, M broken"; exits 1 when M > 0. Python 3 standard library only.
"""
import argparse
import os
import re
import sys

LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(line):
    """The line without its `inline code` spans (a link inside code is not a link)."""
    return re.sub(r"(`+)(.+?)\1", "", line)


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading counts by its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and _
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found, fence = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else HEADING.match(line)
                if m:
                    s = slug(m.group(2))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else "%s-%d" % (s, n))
        cache[path] = found
    return cache[path]


def check(root, md):
    errors, count, fence = [], 0, False
    with open(md, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for m in LINK.finditer(strip_code(line)):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            count += 1
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            rel = os.path.relpath(md, root)
            if not os.path.exists(where):
                errors.append("%s:%d: %s: no such file" % (rel, i, target))
                continue
            if anchor and not re.match(r"^L\d+", anchor):
                if not where.endswith(".md") or os.path.isdir(where):
                    errors.append("%s:%d: %s: an anchor into a file that is not Markdown" % (rel, i, target))
                elif anchor not in anchors(where):
                    errors.append("%s:%d: %s: no heading with anchor #%s in %s" % (rel, i, target, anchor,
                                                                                     os.path.relpath(where, root)))
    return count, errors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Check the relative links and anchors of PetNet's Markdown files.")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files]
    if not files:
        files = [os.path.join(root, "README.md"), os.path.join(root, "tests", "README.md")]
        for d, _, names in os.walk(os.path.join(root, "docs")):
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
        files = [f for f in files if os.path.exists(f)]
    total, broken = 0, []
    for md in sorted(files):
        n, errors = check(root, md)
        total += n
        broken += errors
    for e in broken:
        print(e)
    print("links: %d checked in %d files, %d broken" % (total, len(files), len(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
