#!/usr/bin/env python3
"""PetNet manual pages: check them and build the API reference from them.

Every function declared PETSC_EXTERN in include/*.h (not include/petnet/private) is public. Its manual page is the
PETSc-style comment directly above its definition in src/:

  /*@                                   (or /*@C when it takes strings or function pointers)
    NetForward - applies the network: Y = f(X; theta)

    Collective on net                   (Collective, Not collective or Logically collective, "on x" optional)

    Input Parameters:
  + net - the Net
  - X   - input batch

    Output Parameter:
  . Y - output batch

    Options Database Key:               (where the function reads options)
  . -net_view - ...

    Level: beginner

  .seealso: `NetBackward()`, `NetJVP()` (or "See Also: NetBackward(), NetJVP()")
  @*/

A page is complete when it has that first line, a collectivity line, "Input Parameter(s):" when the function has
inputs, "Output Parameter(s):" when it has outputs (non-const pointer arguments other than void * contexts; the
handle of a Destroy counts as an input), every argument listed in one of those two sections, "Level:" and a non-empty
See Also. "Synopsis:", "Notes:" and "Options Database Key(s):" are optional sections.

Usage:
  share/docs/manpages.py             write docs/api/ (index.md and one page per header)
  share/docs/manpages.py --check     print every public function lacking a complete manual page; exit 1 if any
  share/docs/manpages.py --list      print every public function and the state of its page
  share/docs/manpages.py --man DIR   write one man page per function, DIR/NAME.3 (make install: PREFIX/share/man/man3)
Options: --root DIR (the repository, default: this script's ../..), --out DIR (default: ROOT/docs/api).
Python 3 standard library only.
"""
import argparse
import os
import re
import sys

COLLECTIVITY = re.compile(r"^\s*(Collective|Not\s+[Cc]ollective|Logically\s+[Cc]ollective|Neighbor-wise\s+[Cc]ollective)\b")
SECTION = re.compile(r"^\s*(Synopsis|Input Parameters?|Output Parameters?|Options Database Keys?|Notes?|Level|See Also|Example|Developer Notes?|Fortran Notes?)\s*:(.*)$")
SEEALSO = re.compile(r"^\s*\.seealso:\s*(.*)$")
LIST_ITEM = re.compile(r"^\s*([+.-])\s+(.*)$")


class Function:
    def __init__(self, name, header, decl):
        self.name = name
        self.header = header  # e.g. petnetnet.h
        self.decl = decl  # the declaration line in the header
        self.source = None  # file of the definition, relative to the root
        self.line = 0
        self.signature = None  # the definition's prototype, one line
        self.params = []  # [(type, name)]
        self.page = None  # raw comment text, None when missing
        self.sections = {}
        self.problems = []


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def public_functions(root):
    """Functions declared PETSC_EXTERN in include/*.h, in header order."""
    funcs = []
    inc = os.path.join(root, "include")
    for h in sorted(os.listdir(inc)):
        if not h.endswith(".h"):
            continue
        text = strip_comments(open(os.path.join(inc, h)).read())
        for m in re.finditer(r"PETSC_EXTERN\s+([^;()]*?)\b(\w+)\s*\(([^;]*?)\)\s*;", text):
            funcs.append(Function(m.group(2), h, " ".join(m.group(0).split())))
    return funcs


def split_params(plist):
    """[(type, name)] of a C parameter list; function-pointer parameters are kept whole."""
    plist = " ".join(plist.split())
    if plist in ("", "void"):
        return []
    parts, depth, cur = [], 0, ""
    for ch in plist:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    out = []
    for p in parts:
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)
        if fp:
            out.append((p, fp.group(1)))
            continue
        m = re.match(r"^(.*?)(\w+)\s*((?:\[\s*\w*\s*\])*)$", p)
        out.append((m.group(1).strip() + (" " + m.group(3) if m.group(3) else ""), m.group(2)) if m else (p, p))
    return out


def is_output(func, ptype, pname):
    """A non-const pointer or array argument, other than a void * context or the handle a Destroy frees; a pointer to a
    pointer to const (const char **name) is an output: the function writes the pointer."""
    if "(" in ptype or (ptype.startswith("const ") and ptype.count("*") < 2) or re.match(r"^void\s*\*$", ptype):
        return False
    if not ("*" in ptype or "[" in ptype):
        return False
    if func.name.endswith("Destroy") and func.params and pname == func.params[0][1]:
        return False
    return True


def find_definitions(root, funcs):
    byname = {f.name: f for f in funcs}
    src = os.path.join(root, "src")
    for dirpath, _, files in sorted(os.walk(src)):
        for fn in sorted(files):
            if not fn.endswith(".c"):
                continue
            path = os.path.join(dirpath, fn)
            text = open(path).read()
            for m in re.finditer(r"^(?:PETSC_EXTERN\s+)?(?:PetscErrorCode|PetscBool)\s+(\w+)\s*\(([^;{]*?)\)\s*\{", text, flags=re.M):
                f = byname.get(m.group(1))
                if not f or f.source:
                    continue
                f.source = os.path.relpath(path, root)
                f.line = text.count("\n", 0, m.start()) + 1
                f.signature = " ".join(m.group(0)[:-1].split())
                f.params = split_params(m.group(2))
                f.page = comment_above(text, m.start())


def comment_above(text, pos):
    """The /*@ ... @*/ comment that ends right above pos (only white space in between), else None."""
    before = text[:pos].rstrip()
    if not before.endswith("@*/"):
        return None
    start = before.rfind("/*@")
    if start < 0:
        return None
    body = before[start + 3 : -3]
    if body.startswith("C"):
        body = body[1:]
    return body


def parse_page(f):
    """Split the page into a summary and sections; record what is missing."""
    lines = f.page.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    secs = {"summary": "", "collectivity": "", "body": []}
    first = []
    i = 0
    while i < len(lines) and lines[i].strip():
        first.append(lines[i].strip())
        i += 1
    head = " ".join(first)
    m = re.match(r"^(\w+)\s+-\s+(.*)$", head)
    if m and m.group(1) == f.name:
        secs["summary"] = m.group(2).strip()
    else:
        f.problems.append('first line is not "%s - summary"' % f.name)
    current = "body"
    for line in lines[i:]:
        if not secs["collectivity"] and COLLECTIVITY.match(line) and current == "body":
            secs["collectivity"] = line.strip()
            continue
        sm = SECTION.match(line)
        see = SEEALSO.match(line)
        if see:
            current = "See Also"
            secs.setdefault(current, []).append(see.group(1))
            continue
        if sm:
            current = sm.group(1)
            current = {"Input Parameter": "Input Parameters", "Output Parameter": "Output Parameters", "Options Database Key": "Options Database Keys", "Note": "Notes"}.get(current, current)
            secs.setdefault(current, [])
            if sm.group(2).strip():
                secs[current].append(sm.group(2).strip())
            continue
        secs.setdefault(current, []).append(line.rstrip())
    f.sections = secs
    return secs


def items(lines):
    """[(key, description)] of a '+ key - text' / '. key - text' / '- key - text' list."""
    out = []
    for line in lines or []:
        m = LIST_ITEM.match(line)
        if m:
            km = re.match(r"^(.*?)\s+-\s+(.*)$", m.group(2))
            if km:
                out.append([km.group(1).strip(), km.group(2).strip()])
            else:
                out.append([m.group(2).strip(), ""])
        elif out and line.strip():
            out[-1][1] += " " + line.strip()
    return out


def check(f):
    if not f.source:
        f.problems.append("no definition found in src/")
        return
    if f.page is None:
        f.problems.append("no manual page (/*@ ... @*/ directly above the definition)")
        return
    s = parse_page(f)
    if not s["collectivity"]:
        f.problems.append("no collectivity line (Collective / Not collective / Logically collective)")
    outputs = [n for t, n in f.params if is_output(f, t, n)]
    inputs = [n for t, n in f.params if n not in outputs]
    documented = set()
    for sec in ("Input Parameters", "Output Parameters"):
        for key, _ in items(s.get(sec)):
            documented.update(k.strip() for k in key.split(","))
    if inputs and "Input Parameters" not in s:
        f.problems.append('no "Input Parameter(s):"')
    if outputs and "Output Parameters" not in s:
        f.problems.append('no "Output Parameter(s):"')
    undocumented = [n for _, n in f.params if n not in documented]
    if undocumented and ("Input Parameters" in s or "Output Parameters" in s):
        f.problems.append("arguments not listed: " + ", ".join(undocumented))
    if not "".join(s.get("Level", [])).strip():
        f.problems.append('no "Level:"')
    if not "".join(s.get("See Also", [])).strip():
        f.problems.append('no "See Also:" / ".seealso:"')


# ---------------------------------------------------------------------------------------------------------------
# Markdown output


def header_overview(root, h):
    """The header's opening block comment (its overview), if any."""
    text = open(os.path.join(root, "include", h)).read()
    m = re.match(r"\s*/\*(.*?)\*/", text, flags=re.S)
    if not m:
        return ""
    lines = m.group(1).split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return "\n".join(l[indent:].rstrip() for l in lines)


def page_title(h):
    base = h[:-2]
    return {"petnetsys": "System (shapes, broadcast, files)", "petnetdmda": "Nets on DMDA fields", "petnetts": "Neural ODEs and TS", "petnetoptim": "Optimizers (TAO types)"}.get(base, base.replace("petnet", "").capitalize() or "PetNet")


def md_escape(s):
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def linkify(text, where):
    """Turn `Name()` / Name() into links to the function's entry."""

    def repl(m):
        name = m.group(1)
        if name in where:
            return "[`%s()`](%s#%s)" % (name, where[name], name.lower())
        return "`%s()`" % name

    return re.sub(r"`?\b(\w+)\(\)`?", repl, text)


def render_function(f, where, root_rel):
    out = ["## %s" % f.name, ""]
    if f.page is None:
        out += ["*No manual page yet.*", ""]
    else:
        s = f.sections
        if s.get("summary"):
            out += [linkify(md_escape(s["summary"]), where), ""]
    sig = f.signature or f.decl.replace("PETSC_EXTERN ", "")
    out += ["```c", sig + ";", "```", ""]
    if f.page is not None:
        s = f.sections
        if s.get("collectivity"):
            out += ["*%s*" % s["collectivity"], ""]
        for sec in ("Input Parameters", "Output Parameters", "Options Database Keys"):
            its = items(s.get(sec))
            if its:
                out += ["**%s**" % sec, ""]
                out += ["- `%s` - %s" % (k, linkify(md_escape(d), where)) for k, d in its]
                out.append("")
        for sec in ("body", "Notes", "Example", "Developer Notes"):
            text = "\n".join(s.get(sec, [])).strip("\n")
            if text.strip():
                if sec != "body":
                    out += ["**%s**" % sec, ""]
                out += ["```", dedent(text), "```", ""]
        level = " ".join(s.get("Level", [])).strip()
        if level:
            out += ["**Level:** %s" % level, ""]
        see = " ".join(x.strip() for x in s.get("See Also", [])).strip()
        if see:
            out += ["**See also:** " + linkify(see.replace("`", ""), where), ""]
    if f.source:
        out += ["Defined in [`%s`](%s/%s)." % (f.source, root_rel, f.source), ""]
    if f.problems:
        out += ["*Manual page incomplete:* %s." % "; ".join(f.problems).replace("*", "\\*"), ""]
    return out


def dedent(text):
    lines = text.split("\n")
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return "\n".join(l[indent:] for l in lines)


def write_docs(root, out, funcs):
    os.makedirs(out, exist_ok=True)
    root_rel = os.path.relpath(root, out)
    headers = []
    for f in funcs:
        if f.header not in headers:
            headers.append(f.header)
    where = {f.name: f.header[:-2] + ".md" for f in funcs}
    for h in headers:
        fs = [f for f in funcs if f.header == h]
        lines = ["# %s (`%s`)" % (page_title(h), h), "", "[Index](index.md)", ""]
        ov = header_overview(root, h)
        if ov:
            lines += ["```", ov, "```", ""]
        lines += ["| function | summary |", "|---|---|"]
        for f in fs:
            lines.append("| [`%s`](#%s) | %s |" % (f.name, f.name.lower(), md_escape(f.sections.get("summary", "")) if f.page else "*no manual page*"))
        lines.append("")
        for f in fs:
            lines += render_function(f, where, root_rel)
        with open(os.path.join(out, h[:-2] + ".md"), "w") as fp:
            fp.write("\n".join(lines).rstrip() + "\n")
    complete = sum(1 for f in funcs if not f.problems)
    lines = ["# PetNet API reference", "", "Generated by `make docs` (`share/docs/manpages.py`) from the manual pages (`/*@ ... @*/`) in `src/`.", "%d public functions, %d with a complete manual page." % (len(funcs), complete), "", "Headers:", ""]
    for h in headers:
        lines.append("- [%s](%s) (`%s`, %d functions)" % (page_title(h), h[:-2] + ".md", h, sum(1 for f in funcs if f.header == h)))
    lines += ["", "| function | header | summary |", "|---|---|---|"]
    for f in sorted(funcs, key=lambda f: f.name.lower()):
        summary = md_escape(f.sections.get("summary", "")) if f.page else "*no manual page*"
        lines.append("| [`%s`](%s#%s) | `%s` | %s |" % (f.name, where[f.name], f.name.lower(), f.header, summary))
    with open(os.path.join(out, "index.md"), "w") as fp:
        fp.write("\n".join(lines) + "\n")
    # remove pages of headers that no longer exist
    for fn in os.listdir(out):
        if fn.endswith(".md") and fn != "index.md" and fn[:-3] + ".h" not in headers:
            os.remove(os.path.join(out, fn))


# ---------------------------------------------------------------------------------------------------------------
# man(1) pages, section 3 (make install puts them in PREFIX/share/man/man3, where `man NetCreate` finds them)


def roff(s):
    """Text safe for troff: backslashes doubled, a leading dot or quote escaped."""
    s = s.replace("\\", "\\e")
    return "\\&" + s if s[:1] in (".", "'") else s


def render_man(f, version):
    s = f.sections
    out = ['.TH %s 3 "" "PetNet %s" "PetNet Library Functions"' % (f.name, version), ".SH NAME",
           "%s \\- %s" % (f.name, roff(s.get("summary", "").rstrip("."))), ".SH SYNOPSIS", ".nf",
           roff("#include <%s>" % f.header), "", roff((f.signature or f.decl.replace("PETSC_EXTERN ", "")) + ";"), ".fi"]
    if s.get("collectivity"):
        out += [".PP", roff(s["collectivity"])]
    for sec in ("Input Parameters", "Output Parameters", "Options Database Keys"):
        its = items(s.get(sec))
        if its:
            out.append(".SH " + sec.upper())
            for k, d in its:
                out += [".TP", ".B " + roff(k), roff(d)]
    for sec in ("body", "Notes", "Example", "Developer Notes"):
        text = "\n".join(s.get(sec, [])).strip("\n")
        if text.strip():
            out += [".SH " + ("DESCRIPTION" if sec == "body" else sec.upper()), ".nf"]
            out += [roff(l) for l in dedent(text).split("\n")]
            out.append(".fi")
    level = " ".join(s.get("Level", [])).strip()
    if level:
        out += [".SH LEVEL", roff(level)]
    see = " ".join(x.strip() for x in s.get("See Also", [])).strip().replace("`", "")
    if see:
        out += [".SH SEE ALSO", roff(re.sub(r"\b(\w+)\(\)", r"\1(3)", see))]
    if f.source:
        out += [".SH LOCATION", roff(f.source)]
    return "\n".join(out) + "\n"


def write_man(root, out, funcs):
    """One page NAME.3 per public function with a manual page; returns how many."""
    os.makedirs(out, exist_ok=True)
    sys_h = open(os.path.join(root, "include", "petnetsys.h")).read()
    version = ".".join(re.search(r"#define\s+PETNET_VERSION_%s\s+(\d+)" % k, sys_h).group(1) for k in ("MAJOR", "MINOR", "SUBMINOR"))
    n = 0
    for f in funcs:
        if f.page is None:
            continue
        with open(os.path.join(out, f.name + ".3"), "w") as fp:
            fp.write(render_man(f, version))
        n += 1
    return n


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Check PetNet's manual pages and write the API reference (docs/api/).")
    ap.add_argument("--check", action="store_true", help="print the functions lacking a complete manual page; exit 1 if any")
    ap.add_argument("--list", action="store_true", help="print every public function with the state of its page")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--out", default=None)
    ap.add_argument("--man", default=None, metavar="DIR", help="write man pages (NAME.3) into DIR instead of docs/api")
    args = ap.parse_args()
    funcs = public_functions(args.root)
    find_definitions(args.root, funcs)
    for f in funcs:
        check(f)
    bad = [f for f in funcs if f.problems]
    if args.list:
        for f in funcs:
            print("%-40s %-28s %s" % (f.name, f.source or "-", "ok" if not f.problems else "; ".join(f.problems)))
    if args.check:
        for f in sorted(bad, key=lambda f: (f.source or "", f.line)):
            where = "%s:%d" % (f.source, f.line) if f.source else "include/" + f.header
            print("%s: %s: %s" % (where, f.name, "; ".join(f.problems)))
        print("manual pages: %d of %d public functions complete, %d missing or incomplete" % (len(funcs) - len(bad), len(funcs), len(bad)))
        return 1 if bad else 0
    if args.man:
        n = write_man(args.root, args.man, funcs)
        print("wrote %d man pages into %s" % (n, args.man))
        return 0
    if not args.list:
        out = args.out or os.path.join(args.root, "docs", "api")
        write_docs(args.root, out, funcs)
        print("wrote %s: %d public functions, %d with a complete manual page" % (os.path.relpath(out), len(funcs), len(funcs) - len(bad)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
