"""Shared start of the Python tests: petsc4py initialised from the command line (the runner's -malloc_debug
-malloc_dump reach PETSc), then the petnet module of this tree (share/python)."""
import os
import sys

import petsc4py

petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "share", "python"))
import petnet  # noqa: E402,F401

comm = PETSc.COMM_WORLD
opts = PETSc.Options()


def check(cond, what):
    """Fails the test (a Python exception, exit code 1) unless cond holds."""
    if not cond:
        raise AssertionError(what)


def random_vec(v, seed):
    """Fills v with uniform values in [-1, 1) from a PETSc Random of this seed (the stream depends on the ranks)."""
    rnd = PETSc.Random().create(v.getComm())
    rnd.setInterval((-1.0, 1.0))
    rnd.setSeed(seed)
    v.setRandom(rnd)
    rnd.destroy()
    return v


def formula_vec(v, a):
    """Sets v[i] = sin(a (i + 1)) by global index i: the same global values on any number of ranks."""
    import math

    lo, hi = v.getOwnershipRange()
    v.setArray([math.sin(a * (i + 1)) for i in range(lo, hi)])
    return v
