"""tests/install/netforward.c in Python, run by tests/install.sh against the installed module
(PYTHONPATH=PREFIX/share/petnet/python): it must load PREFIX/lib/libpetnet.so and print the C program's line."""
import os
import sys

import petsc4py

petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402
import petnet  # noqa: E402

prefix = os.environ["PETNET_TEST_PREFIX"]
if not os.path.realpath(petnet.library).startswith(os.path.realpath(prefix) + os.sep):
    raise SystemExit("petnet: loaded %s, not the library installed in %s" % (petnet.library, prefix))
comm = PETSc.COMM_WORLD
net = petnet.Net().create(comm, spec="dense:3,tanh,dense:1", input_shape=(4,))
net.setFromOptions()
net.setUp()
net.getParameters().set(0.1)
X, Y = net.createVecs(8 // comm.size)
lo, hi = X.getOwnershipRange()
X.setArray([0.1 * (i // 4 + 1) * (i % 4 + 1) for i in range(lo, hi)])
net.forward(X, Y)
PETSc.Sys.Print("sum of outputs: %.10f" % Y.sum())
X.destroy(), Y.destroy(), net.destroy()
