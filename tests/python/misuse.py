"""Misuse of the Python module ends in a Python exception that says what to pass, never in SEGV, SIGFPE or a silently
truncated argument: None or a numpy array where a Vec goes, calls after destroy(), a zero, negative or malformed input
shape, a spec that is not a string, an unknown precision or parallel mode, integers beyond a PetscInt (createVecs(2**40)
used to be truncated by ctypes into empty Vecs), a thin-GEMM width past 64 (setGemmThinRows(65): C's check names the
option). The C check of NetSetInputShape() is reached directly too (a zero shape refused as such, not by SIGFPE in the
first forward pass). Then Trainer.train() without a test set reports
None for what it did not measure, and Trainer.predict() returns the outputs of every sample of a Dataset."""
import ctypes

import numpy
from common import PETSc, petnet, comm, check


def expect(what, exc, fn, *phrases):
    try:
        fn()
    except exc as e:
        for p in phrases:
            check(p in str(e), "%s: %r lacks %r" % (what, str(e), p))
        PETSc.Sys.Print("%s: %s carries %s" % (what, exc.__name__, " and ".join(repr(p) for p in phrases)))
        return
    except Exception as e:  # another kind of exception than the one that says what to pass
        raise AssertionError("%s: %s (%s) instead of %s" % (what, type(e).__name__, e, exc.__name__))
    raise AssertionError(what + ": no exception")


def arguments():
    net = petnet.Net().create(comm, spec="dense:2", input_shape=(3,))
    X, Y = net.createVecs(2)
    expect("setParameters(None)", TypeError, lambda: net.setParameters(None), "theta", "petsc4py Vec",
           "createParameterVec()")
    expect("forward(None, Y)", TypeError, lambda: net.forward(None, Y), "X", "petsc4py Vec")
    expect("forward(numpy, Y)", TypeError, lambda: net.forward(numpy.zeros(6), Y), "numpy.ndarray",
           "createWithArray")
    expect("forward(X, a Mat)", TypeError, lambda: net.forward(X, PETSc.Mat()), "Y", "petsc4py Vec", "Mat")
    expect("forward(X, an empty Vec)", ValueError, lambda: net.forward(X, PETSc.Vec()), "Y", "empty")
    expect("backward(None)", TypeError, lambda: net.backward(None), "dY", "petsc4py Vec")
    expect("jvp(X, None, None)", TypeError, lambda: net.jvp(X, None, None), "dY")
    expect("spec not a string", TypeError, lambda: petnet.Net().create(comm, spec=["dense:4"]), "spec",
           "a string", "dense:8,tanh,dense:1")
    expect("spec an int", TypeError, lambda: net.setLayers(4), "layers", "a string")
    expect("load(None)", TypeError, lambda: net.load(None), "filename", "a string")
    expect("setPrecision('quad')", ValueError, lambda: net.setPrecision("quad"), "'quad'", "'double'", "'single'",
           "'bfloat16'")
    expect("setParallel('x')", ValueError, lambda: net.setParallel("x"), "'replicated'", "'sharded'", "'model'",
           "'tensor'", "'sequence'", "'subgraph'")
    fresh = petnet.Net().create(comm, spec="dense:2", input_shape=(3,))  # every mode's name reads back (C's order)
    for mode in ["tensor", "sequence", "subgraph", "replicated"]:
        fresh.setParallel(mode)
        check(fresh.getParallel() == mode, "setParallel(%r) reads back %r" % (mode, fresh.getParallel()))
    fresh.destroy()
    expect("input_shape (0,0,0)", ValueError, lambda: petnet.Net().create(comm, spec="dense:4", input_shape=(0, 0, 0)),
           "input_shape", "at least 1")
    expect("input_shape 'axb'", ValueError, lambda: net.setInputShape("axb"), "'axb'", "28x28x1")
    expect("input_shape (-1,)", ValueError, lambda: net.setInputShape((-1,)), "-1", "at least 1")
    expect("input_shape 2.5", TypeError, lambda: net.setInputShape((2.5,)), "integers")
    expect("input_shape of 2^32 entries", ValueError, lambda: net.setInputShape((65536, 65536, 1)), "entries")
    expect("input_shape of 5 dimensions", ValueError, lambda: net.setInputShape((1, 2, 3, 4, 5)), "1 to 4")
    expect("createVecs(2**40)", ValueError, lambda: net.createVecs(2**40), "nlocal", "2147483647")
    expect("createVecs(-1)", ValueError, lambda: net.createVecs(-1), "nlocal", "at least 0")
    expect("createVecs(1e9 samples of 3)", ValueError, lambda: net.createVecs(10**9), "entries")
    expect("createVecs('4')", TypeError, lambda: net.createVecs("4"), "nlocal", "an integer")
    expect("setSeed(-1)", ValueError, lambda: net.setSeed(-1), "seed")
    expect("getLayerJacobian(2**40)", ValueError, lambda: net.getLayerJacobian(2**40), "layer")
    # the C check itself, below the Python one: a shape of zeros, as a C caller would pass it
    zero = petnet._Shape()
    zero.ndim = 3
    expect("NetSetInputShape(0x0x0) in C", petnet.Error, lambda: petnet._check(petnet._C["NetSetInputShape"](
        net.handle, ctypes.byref(zero))), "NetSetInputShape()", "every dimension must be at least 1")
    net.forward(X, Y)  # the Net is untouched by all of the above
    check(Y.getSize() == 4 * comm.size, "the Net still works")

    ds = petnet.Dataset().create(comm, "memory")
    expect("Dataset.setLimit(2**40)", ValueError, lambda: ds.setLimit(2**40), "limit", "2147483647")
    expect("Dataset.setBatchSize('8')", TypeError, lambda: ds.setBatchSize("8"), "batch", "an integer")
    expect("Dataset.setMemoryData(numpy)", TypeError, lambda: ds.setMemoryData((3,), numpy.zeros(3), None), "X",
           "petsc4py Vec")
    expect("Dataset.setSampleShape((0,))", ValueError, lambda: ds.setSampleShape((0,)), "at least 1")
    expect("Dataset.setType(1)", TypeError, lambda: ds.setType(1), "type", "a string")
    expect("Dataset.setNormalization('a', 0, 1)", TypeError, lambda: ds.setNormalization("a", 0, 1), "scale", "a number")
    loss = petnet.Loss().create(comm, "mse")
    expect("Loss.evaluate(None, T)", TypeError, lambda: loss.evaluate(None, Y), "Y", "petsc4py Vec")
    tr = petnet.Trainer().create(comm)
    expect("Trainer.setNet(a Loss)", TypeError, lambda: tr.setNet(loss), "net", "petnet.Net", "Loss")
    expect("Trainer.setEpochs(2**33)", ValueError, lambda: tr.setEpochs(2**33), "epochs")
    expect("Trainer.evaluate(None)", TypeError, lambda: tr.evaluate(None), "dataset", "petnet.Dataset")
    expect("setNumThreads(2**40)", ValueError, lambda: petnet.setNumThreads(2**40), "nthreads")
    expect("setGemmThinRows(65)", petnet.Error, lambda: petnet.setGemmThinRows(65), "-petnet_gemm_thin_rows", "not 65")
    expect("setGemmThinRows(-1)", ValueError, lambda: petnet.setGemmThinRows(-1), "rows")
    check(petnet.getGemmThinRows() == 64, "getGemmThinRows(): the default is 64, not %d" % petnet.getGemmThinRows())
    petnet.setGemmThinRows(0)
    check(petnet.getGemmThinRows() == 0, "setGemmThinRows(0) then getGemmThinRows(): %d" % petnet.getGemmThinRows())
    petnet.setGemmThinRows(64)
    for obj in (tr, loss, ds, net):
        obj.destroy()


def destroyed():
    net = petnet.Net().create(comm, spec="dense:2", input_shape=(3,))
    X, Y = net.createVecs(2)
    net.destroy()
    for name, fn in [("forward", lambda: net.forward(X, Y)), ("setParameters", lambda: net.setParameters(X)),
                     ("getSpec", net.getSpec), ("setUp", net.setUp), ("getNumParameters", net.getNumParameters),
                     ("getInputShape", net.getInputShape), ("createVecs", lambda: net.createVecs(1)),
                     ("getJacobian", net.getJacobian), ("save", lambda: net.save("tests/out/never.h5")),
                     ("setFromOptions", net.setFromOptions), ("setOptionsPrefix", lambda: net.setOptionsPrefix("a_")),
                     ("setInputShape", lambda: net.setInputShape((3,)))]:
        expect("Net.%s after destroy()" % name, ValueError, fn, "destroyed", "Net().create(")
    net.destroy()  # a second destroy() is no error, as in petsc4py
    loss, ds, tr = petnet.Loss().create(comm, "mse"), petnet.Dataset().create(comm), petnet.Trainer().create(comm)
    for obj in (loss, ds, tr):
        obj.destroy()
    expect("Loss.evaluate after destroy()", ValueError, lambda: loss.evaluate(Y, Y), "Loss", "destroyed")
    expect("Dataset.getSize after destroy()", ValueError, ds.getSize, "Dataset", "destroyed")
    expect("Trainer.train after destroy()", ValueError, tr.train, "Trainer", "destroyed")
    other = petnet.Net().create(comm, spec="dense:2", input_shape=(3,))
    expect("a destroyed Net as an argument", ValueError, lambda: petnet.Trainer().create(comm).setNet(net), "net",
           "destroyed")
    Z = X.duplicate()
    Z.destroy()
    expect("a destroyed Vec as an argument", ValueError, lambda: other.forward(Z, Y), "X", "empty")
    other.destroy()


def training():
    n = 64
    ns = n // comm.size
    X = PETSc.Vec().createMPI((2 * ns, PETSc.DETERMINE), comm=comm)
    T = PETSc.Vec().createMPI((ns, PETSc.DETERMINE), comm=comm)
    lo = T.getOwnershipRange()[0]
    xs = [((g * 0.7548776662) % 1.0 * 2 - 1, (g * 0.5698402910) % 1.0 * 2 - 1) for g in range(lo, lo + ns)]
    X.setArray([v for x in xs for v in x])
    T.setArray([1.0 if x0 * x0 + x1 * x1 < 0.49 else 0.0 for x0, x1 in xs])
    train = petnet.Dataset().create(comm, "memory")
    train.setMemoryData((2,), X, T)
    net = petnet.Net().create(comm, spec="dense:8,tanh,dense:2", input_shape=(2,))
    net.setSeed(1)
    loss = petnet.Loss().create(comm, "crossentropy")
    tr = petnet.Trainer().create(comm)
    tr.setNet(net)
    tr.setLoss(loss)
    tr.setDatasets(train)  # no test set
    tr.setEpochs(2)
    tr.setFromOptions()
    r = tr.train()
    check(r.epochs == 2 and r.train_loss > 0, "trained: %r" % (r,))
    check(r.test_loss is None and r.test_accuracy is None, "without a test set: %r" % (r,))
    PETSc.Sys.Print("train() without a test set: test_loss=%r test_accuracy=%r" % (r.test_loss, r.test_accuracy))
    p = tr.predict(train)
    check(isinstance(p.outputs, PETSc.Vec) and p.outputs.getSize() == 2 * n, "predict(): outputs [N][2]")
    f, a = tr.evaluate(train)
    check(abs(p.loss - f) <= 1e-12 and abs(p.accuracy - a) <= 1e-12, "predict() = evaluate(): %r %r" % (p, (f, a)))
    Yn = PETSc.Vec().createMPI((2 * ns, PETSc.DETERMINE), comm=comm)
    net.forward(X, Yn)  # the same outputs, sample by sample, as a forward pass (evaluation mode: no dropout here)
    check((Yn - p.outputs).norm() <= 1e-12 * max(1.0, Yn.norm()), "predict() outputs = forward()")
    PETSc.Sys.Print("predict(): %d outputs, loss %.6f = evaluate(), accuracy %.4f" % (p.outputs.getSize(), p.loss,
                                                                                     p.accuracy))
    # regression targets: no accuracy is measured
    mse = petnet.Loss().create(comm, "mse")
    R = PETSc.Vec().createMPI((2 * ns, PETSc.DETERMINE), comm=comm)
    R.set(0.5)
    reg = petnet.Dataset().create(comm, "memory")
    reg.setMemoryData((2,), X, R, 2)
    tr2 = petnet.Trainer().create(comm)
    tr2.setNet(net)
    tr2.setLoss(mse)
    tr2.setDatasets(reg)  # evaluate() sets the Trainer up, which needs a training Dataset
    p2 = tr2.predict(reg)
    f2, a2 = tr2.evaluate(reg)
    check(p2.accuracy is None and a2 is None and p2.loss >= 0, "regression: accuracy None: %r, %r" % (p2, a2))
    PETSc.Sys.Print("regression: predict() and evaluate() give accuracy None")
    for obj in (p.outputs, p2.outputs, tr, tr2, reg, train, net, loss, mse, X, T, R, Yn):
        obj.destroy()


arguments()
destroyed()
training()
PETSc.Sys.Print("misuse: ok")
