"""NetSave / NetLoad from Python: a Net with a batchnorm layer (buffers) is saved in HDF5 and PETSc binary, loaded into
new Nets, which must have the same spec, input shape and parameters and give the same outputs bit for bit; the files
are written under tests/out and removed."""
import os

from common import PETSc, petnet, comm, check, formula_vec


def main():
    net = petnet.Net().create(comm, spec="dense:6,batchnorm,relu,dense:3", input_shape=(4,))
    net.setSeed(5)
    net.setUp()
    X, Y = net.createVecs(5)
    formula_vec(X, 0.3)
    net.setTraining(True)
    net.forward(X, Y)  # moves batchnorm's running statistics away from their start
    net.setTraining(False)
    net.forward(X, Y)
    for ext in ("h5", "bin"):
        name = "tests/out/python_saveload_%d.%s" % (comm.size, ext)
        net.save(name)
        other = petnet.Net().create(comm)
        other.load(name)
        check(other.getSpec() == net.getSpec() and other.getInputShape() == (4,), "spec " + other.getSpec())
        d = other.createParameterVec()
        other.getParameters().copy(d)
        d.axpy(-1.0, net.getParameters())
        other.setTraining(False)
        Y2 = Y.duplicate()
        other.forward(X, Y2)
        Y2.axpy(-1.0, Y)
        check(d.norm() == 0 and Y2.norm() == 0, "%s: parameters %g, outputs %g" % (ext, d.norm(), Y2.norm()))
        PETSc.Sys.Print("%s: %s, %d parameters, outputs equal after load" % (ext, other.getSpec(), other.getNumParameters()))
        other.destroy()
        comm.barrier()
        if comm.rank == 0:
            os.remove(name)
            if os.path.exists(name + ".info"):
                os.remove(name + ".info")
    PETSc.Sys.Print("saveload: ok")


main()
