"""Training from petsc4py Vecs: memory Datasets built in Python (a point inside or outside a circle, from a
low-discrepancy sequence indexed by the global sample number, so the data do not depend on the ranks), a Trainer with
Adam from options; the test loss must fall and the test accuracy reach 0.9. Also getBatch(), getAll() and evaluate()."""
from common import PETSc, petnet, comm, check


def circle(first, n):
    """Memory Dataset of samples first .. first+n-1: x in [-1,1)^2, label 1 inside the circle of radius 0.7."""
    size, rank = comm.size, comm.rank
    ns = n // size + (1 if rank < n % size else 0)
    start = sum(n // size + (1 if r < n % size else 0) for r in range(rank))
    X = PETSc.Vec().createMPI((2 * ns, 2 * n), comm=comm)
    T = PETSc.Vec().createMPI((ns, n), comm=comm)
    xs, ts = [], []
    for g in range(first + start, first + start + ns):
        x0, x1 = (g * 0.7548776662) % 1.0 * 2 - 1, (g * 0.5698402910) % 1.0 * 2 - 1
        xs += [x0, x1]
        ts.append(1.0 if x0 * x0 + x1 * x1 < 0.49 else 0.0)
    X.setArray(xs)
    T.setArray(ts)
    ds = petnet.Dataset().create(comm, "memory")
    ds.setMemoryData((2,), X, T)  # referenced by the Dataset: X and T may go
    return ds


def main():
    train, test = circle(0, 512), circle(512, 256)
    net = petnet.Net().create(comm, spec="dense:16,tanh,dense:2", input_shape=(2,))
    net.setSeed(1)
    loss = petnet.Loss().create(comm, "crossentropy")
    trainer = petnet.Trainer().create(comm)
    trainer.setNet(net)
    trainer.setLoss(loss)
    trainer.setDatasets(train, test)
    trainer.setFromOptions()  # -tao_type adam -tao_adam_lr 0.05 -trainer_epochs 8 -trainer_batch_size 64 in the suite
    trainer.setUp()  # sets the Datasets up
    check(train.getType() == "memory" and train.getSize() == 512 and train.getSampleShape() == (2,), "the Dataset")
    tao, same = trainer.getTao(), trainer.getNet()  # borrowed C objects in new wrappers, one reference each
    check(tao.getType() == "adam" and same.handle == net.handle and net.getRefCount() == 3, "getTao(), getNet()")
    del same
    check(net.getRefCount() == 2, "a wrapper's reference goes with it")
    X, T = train.getAll()
    check(X.getSize() == 1024 and T.getSize() == 512, "getAll(): %d, %d" % (X.getSize(), T.getSize()))
    loss0, acc0 = trainer.evaluate(test)
    r = trainer.train()
    loss1, acc1 = trainer.evaluate(test)
    check(abs(loss1 - r.test_loss) <= 1e-12 and abs(acc1 - r.test_accuracy) <= 1e-12, "evaluate() = results")
    check(loss1 < 0.5 * loss0 and acc1 >= 0.9, "training: test loss %g -> %g, accuracy %g" % (loss0, loss1, acc1))
    PETSc.Sys.Print("memory Datasets: %d epochs, test loss %.4f -> below half, accuracy %.4f -> at least 0.9" %
                    (r.epochs, loss0, acc0))
    PETSc.Sys.Print("summary: train_loss=%.6f test_loss=%.6f test_accuracy=%.4f" %
                    (r.train_loss, r.test_loss, r.test_accuracy))


main()
