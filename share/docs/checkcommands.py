#!/usr/bin/env python3
"""Check that the commands of PetNet's manual still work: no option a command shows is one its program ignores.

Every command line in a fenced code block of README.md, docs/manual/*.md and docs/benchmarks.md that runs a program of the build tree
(`bin/...`, optionally after `$ `, environment settings `VAR=value` and `mpiexec -n N`; `\\` continues a line) is
run from a scratch folder (with bin/, share/ and tests/ linked in, so relative paths work and the files the commands
write land there), in the order of the chapters, with

  - the options the manual gives, then the program's "small sizes" below (PETSc keeps the last value of an option,
    so these win: one short epoch, a few samples, a small grid), then -options_left;
  - at most 2 ranks (the manual's -n N if smaller).

A command fails the check when it exits non-zero or when -options_left reports an option *the manual gave* as never
used (a misspelt option, one the program no longer reads, one that does not apply to that configuration). Options
of the small sizes that a configuration does not read are not the manual's fault and are ignored. Commands with a
placeholder in capitals (share/models/NAME.opts, -n N, FILE), that read a test's output (tests/out/...), or that load a
model no earlier command wrote (-net_load from_torch.h5, written by a Python block) are listed as skipped.

Commands that name a common file (mlp.h5 written by one, loaded by the next) form a group that runs in the manual's
order in a scratch folder of its own; the groups run side by side, --jobs at a time (default 2: most of a command's
time is Open MPI's and PETSc's start-up, which leaves the cores idle). A command that reads a file another writes
without naming it would be reported skipped or failed here, never passed unchecked.

Usage: share/docs/checkcommands.py [--root DIR] [--list] [--keep] [--jobs N] [FILE.md ...]
  --list   print the commands found (and what would run), run nothing
  --keep   keep the scratch folders (their paths are printed)
  --jobs   how many groups of commands run at once (1: one after the other)
Prints one line per command (ok / FAIL / skipped) and "commands: N run, M failed, K skipped"; exits 1 when M > 0.
Python 3 standard library only.
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

CHAPTERS = ["getting-started", "networks", "training", "saving-loading", "python", "parallelism", "simulations",
            "second-order", "precision-speed", "reliability", "transformers"]

# Options that make each program's run small (appended after the manual's options: they override its sizes).
SMALL = {
    "bin/fashion": "-trainer_epochs 1 -train_dataset_limit 128 -test_dataset_limit 64 -tao_max_it 1",
    "bin/predict": "-predict_dataset_limit 128",
    "bin/tests/test_sequence": "-input_shape 64 -memory_ratio 0",
    "bin/vit": "-trainer_epochs 1 -train_dataset_limit 128 -test_dataset_limit 64 -tao_max_it 1",
    "bin/graphring": "",
    "bin/spiral": "-spiral_iterations 10",
    "bin/charlm": "-charlm_iterations 2 -charlm_val_windows 4",
    "bin/rober": "-rober_iterations 2",
    "bin/hybrid_rd": "-tao_max_it 2",
    "bin/surrogate": "-surrogate_train 4 -surrogate_test 2 -surrogate_epochs 1 -surrogate_grid 32 -trainer_epochs 1",
    "bin/cosmo3d": "-cosmo3d_grid 8 -cosmo3d_iterations 2 -cosmo3d_test 2 -cosmo3d_batch 2 -cosmo3d_samples 4",
    "bin/mesh_surrogate": "-mesh_faces 6 -mesh_train 2 -mesh_test 1 -mesh_multiscale 2 -tao_max_it 1",
    "bin/mesh_hybrid": "-mesh_faces 6 -tao_max_it 1 -rd_final_time 0.1 -rd_snapshots 2 -rd_train 1 -rd_test 1",
    "bin/spectrum": "-spectrum_samples 8 -spectrum_k 2 -spectrum_probes 2 -spectrum_slq_probes 1 "
                    "-spectrum_lanczos_steps 4 -spectrum_jacobian_samples 1 -spectrum_ode_max_states 2",
    "bin/bench_parallel": "-net_layers dense:64,relu,dense:10 -bench_steps 1",
    "bin/bench_dmconv": "-bench_grid 64",
    "bin/bench_single": "-bench_batch 4 -bench_repeat 1",
    "bin/bench_backend": "-bench_batch 2 -bench_repeat 1",
    "bin/bench_conv3d": "-bench_size 8 -bench_repeat 1",
    "bin/bench_dgemm": "",
    "bin/bench_trajectory": "-bench_steps 40 -bench_batch 20",
    "bin/tests/test_tour": "-train_dataset_limit 256 -test_dataset_limit 128 -trainer_epochs 1",
    "bin/tests/test_meshpartition": "",
    "bin/tests/test_jacobiandiag": "",
    "bin/tests/test_spatial": "",
    "bin/tests/test_netoptions": "",
}
PLACEHOLDER = re.compile(r"(^|[/=_.])[A-Z][A-Z0-9_]*($|[/.:])")  # NAME.opts, FILE, N, MODE, ...
MAX_RANKS = 2
ROOT = "."


def commands(md):
    """(line number, command text) of each command of a build-tree program in md's code blocks."""
    out, fence, lines = [], False, open(md, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fence = not fence
            i += 1
            continue
        start = i
        text = line
        while fence and text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        if not fence:
            continue
        text = text.strip()
        if text.startswith("$ "):
            text = text[2:]
        words = text.split()
        k = 0
        while k < len(words) and re.match(r"^[A-Z_][A-Z0-9_]*=", words[k]):
            k += 1
        if k < len(words) and words[k] in ("mpiexec", "env"):
            pass
        elif not (k < len(words) and words[k].startswith("bin/")):
            continue
        out.append((start + 1, text))
    return out


def parse(text):
    """(env, ranks, program, args, manual option names) of a command; raises ValueError if it cannot run."""
    words = shlex.split(text, comments=True)
    if "|" in words:  # bin/fashion ... -net_view | grep fused: the program's part
        words = words[:words.index("|")]
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if words and words[0] == "env":  # env -u VAR ... VAR=value program
        words.pop(0)
        while words and (words[0] == "-u" or re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]) or
                         (words[0].isupper() and words[0] != words[0].lower())):
            w = words.pop(0)
            if "=" in w:
                k, v = w.split("=", 1)
                env[k] = v
    ranks = 1
    if words and words[0] == "mpiexec":
        words.pop(0)
        while words and not words[0].startswith("bin/"):
            w = words.pop(0)
            if w in ("-n", "-np"):
                n = words.pop(0)
                if not n.isdigit():
                    raise ValueError("rank count %s is a placeholder" % n)
                ranks = int(n)
            elif w in ("--bind-to", "--map-by"):
                words.pop(0)
    if not words or not words[0].startswith("bin/"):
        raise ValueError("no bin/ program")
    program, args = words[0], words[1:]
    for w in args:
        if PLACEHOLDER.search(w) and not w.startswith("-"):
            raise ValueError("placeholder %s" % w)
    options = {a[1:] for a in args if re.match(r"^-[a-zA-Z]", a)}
    for a in args:
        if a.startswith("tests/out/") and not os.path.exists(os.path.join(ROOT, a)):
            raise ValueError("needs %s, which a test writes (tests/run predict)" % a)
    return env, ranks, program, args, options


def missing_model(scratch, args):
    """A model file the command loads that no earlier command wrote (a Python block of the manual writes it)."""
    for k, a in enumerate(args[:-1]):
        if a in ("-net_load", "-spectrum_load") and not os.path.exists(os.path.join(scratch, args[k + 1])):
            return args[k + 1]
    return None


def smaller(small, args):
    """The small-size options, without those the manual already sets to a smaller number."""
    given = {}
    for k, a in enumerate(args[:-1]):
        if re.match(r"^-[a-zA-Z]", a):
            given[a] = args[k + 1]
    out = []
    for k in range(0, len(small) - 1, 2):
        opt, val = small[k], small[k + 1]
        try:
            if opt in given and float(given[opt]) <= float(val):
                continue
        except ValueError:
            pass
        out += [opt, val]
    return out


def files_named(text):
    """The names of the files a command reads or writes by name (mlp.h5, hdf5:v.h5, predictions.csv), not the
    program, its options, numbers, or the packaged inputs under share/ and tests/data/."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        words = text.split()
    names = set()
    for w in words:
        for part in w.split(":"):
            if (part and not part.startswith("-") and not part.startswith(("bin/", "share/", "tests/data/", "/usr/"))
                    and re.search(r"[A-Za-z_]\.[A-Za-z0-9]+$", part)):
                names.add(os.path.normpath(part))
    return names


def group_by_files(found):
    """The commands (indices into found) in groups, each in the manual's order: two commands that name a common
    file are in the same group (mlp.h5: the command that writes it, those that load it)."""
    parent = list(range(len(found)))

    def root_of(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    owner = {}
    for k, (md, n, t) in enumerate(found):
        for name in files_named(t):
            if name in owner:
                parent[root_of(k)] = root_of(owner[name])
            else:
                owner[name] = k
    groups = {}
    for k in range(len(found)):
        groups.setdefault(root_of(k), []).append(k)
    return sorted(groups.values(), key=lambda g: g[0])


def run(root, scratch, md, lineno, text, timeout, session=None):
    rel = "%s:%d" % (os.path.relpath(md, root), lineno)
    try:
        env_extra, ranks, program, args, options = parse(text)
    except ValueError as e:
        return "skipped", rel, text, str(e)
    model = missing_model(scratch, args)
    if model:
        return "skipped", rel, text, "loads %s, which no command before it wrote (a Python block does)" % model
    if not os.path.exists(os.path.join(root, program)):
        return "FAIL", rel, text, "%s does not exist (build with make -j2 all)" % program
    small = SMALL.get(program)
    if small is None:
        return "FAIL", rel, text, "no small sizes known for %s: add it to SMALL in share/docs/checkcommands.py" % program
    ranks = min(ranks, MAX_RANKS)
    cmd = [program] + args + smaller(shlex.split(small), args) + ["-options_left"]
    if ranks > 1 or program != "bin/tests/test_meshpartition":
        cmd = ["mpiexec", "-n", str(ranks)] + cmd
    env = dict(os.environ)
    env.update(env_extra)
    if session:  # the group's own Open MPI session folder: two mpiexec starting together race on one (orte_session_dir)
        env["OMPI_MCA_orte_tmpdir_base"] = session
    # as tests/run sets them (when run outside it): Open MPI as root, oversubscribed, shared memory only, unbound
    for k, v in (("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"), ("OMPI_MCA_plm", "isolated"),
                 ("OMPI_MCA_rmaps_base_oversubscribe", "yes"), ("OMPI_MCA_btl", "self,vader"),
                 ("OMPI_MCA_btl_vader_single_copy_mechanism", "none"), ("OMPI_MCA_hwloc_base_binding_policy", "none"),
                 ("OMPI_MCA_pml", "ob1"), ("HWLOC_COMPONENTS", "-pci,-opencl,-gl"),
                 ("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1")):
        env.setdefault(k, v)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        out, rc = p.stdout.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired:
        return "FAIL", rel, text, "took more than %d s with the small sizes" % timeout
    secs = time.time() - t0
    left = set(re.findall(r"Option left: name:-(\S+)", out))
    unused = sorted(left & options)
    if rc != 0:
        tail = [l for l in out.split("\n") if l.strip()][-6:]
        return "FAIL", rel, text, "exit %d:\n      %s" % (rc, "\n      ".join(tail))
    if unused:
        return "FAIL", rel, text, "options nothing read: %s" % ", ".join("-" + o for o in unused)
    return "ok", rel, text, "%.1f s" % secs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Run the manual's commands with small sizes and -options_left.")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    global ROOT
    ROOT = root
    files = [os.path.abspath(f) for f in args.files] or \
        [os.path.join(root, "README.md")] + [os.path.join(root, "docs", "manual", c + ".md") for c in CHAPTERS] + \
        [os.path.join(root, "docs", "benchmarks.md")]
    found = [(md, n, t) for md in files if os.path.exists(md) for n, t in commands(md)]
    if args.list:
        for md, n, t in found:
            print("%s:%d: %s" % (os.path.relpath(md, root), n, t))
        print("commands: %d found" % len(found))
        return 0
    groups = group_by_files(found)
    counts = {"ok": 0, "FAIL": 0, "skipped": 0}
    results = {}
    scratches = []

    def run_group(group):
        scratch = tempfile.mkdtemp(prefix="petnet-commands-")
        session = tempfile.mkdtemp(prefix="petnet-ompi-")
        scratches.append(scratch)
        for d in ("bin", "share", "tests", "lib", "include", "examples"):
            os.symlink(os.path.join(root, d), os.path.join(scratch, d))
        for k in group:
            md, n, t = found[k]
            results[k] = run(root, scratch, md, n, t, args.timeout, session)
        shutil.rmtree(session, ignore_errors=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f in [pool.submit(run_group, g) for g in groups]:
            f.result()
    for k in range(len(found)):
        status, rel, text, why = results[k]
        counts[status] += 1
        print("%-7s %s: %s\n        %s" % (status, rel, text if len(text) < 150 else text[:147] + "...", why))
    for scratch in scratches:
        if args.keep:
            print("scratch folder: %s" % scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print("commands: %d run, %d failed, %d skipped" % (counts["ok"] + counts["FAIL"], counts["FAIL"], counts["skipped"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
