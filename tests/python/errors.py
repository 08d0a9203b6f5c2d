"""PETSc errors become Python exceptions (petnet.Error, a petsc4py.PETSc.Error) that carry PETSc's message, and the
program goes on: a bad layer spec, a bad graph, a missing model file, a Vec of the wrong size; then a Net still works.
What is printed is compared with tests/expected/python_errors_*.out."""
from common import PETSc, petnet, comm, check


def expect_error(what, fn, *phrases):
    try:
        fn()
    except petnet.Error as e:
        check(isinstance(e, PETSc.Error) and e.ierr != 0, "a PETSc error code")
        for p in phrases:
            check(p in e.message and p in str(e), "%s: %r lacks %r" % (what, e.message, p))
        PETSc.Sys.Print("%s: petnet.Error %d carries %s" % (what, e.ierr, " and ".join(repr(p) for p in phrases)))
        return
    raise AssertionError(what + ": no exception")


def main():
    expect_error("bad layer", lambda: petnet.Net().create(comm, spec="dense:3,blah"), 'Unknown layer kind "blah"')
    expect_error("bad graph", lambda: petnet.Net().create(comm, spec="a = dense:3 <- nowhere;"), "nowhere")
    expect_error("missing file", lambda: petnet.Net().create(comm).load("tests/out/no-such-model.h5"),
                 "tests/out/no-such-model.h5")
    net = petnet.Net().create(comm, spec="dense:2", input_shape=(3,))
    net.setUp()
    X, Y = net.createVecs(2)
    Z = PETSc.Vec().createMPI((4, PETSc.DECIDE), comm=comm)  # 4 entries on every rank: each one fails (collectively)
    expect_error("wrong size", lambda: net.forward(Z, Y), "not a multiple of the sample size 3")
    expect_error("Jacobian first", lambda: net.getJacobian(), "NetForward")
    net.forward(X, Y)
    check(net.getJacobian().getSize() == (2 * 2 * comm.size, 3 * 2 * comm.size), "the Net still works")
    PETSc.Sys.Print("errors: ok")


main()
