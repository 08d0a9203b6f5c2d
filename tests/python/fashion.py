"""bin/fashion (examples/fashion.c) written with the petnet module: the same Datasets (idx, prefixes train_ and test_),
Net, Loss and Trainer from the same options, and the same summary line, which tests/expected compares with the C
program's on the same options (python_fashion_* and python_fashion_c in tests/python.suite share their numbers)."""
from common import PETSc, petnet, comm, opts


def dataset(prefix, split, directory):
    ds = petnet.Dataset().create(comm, "idx")
    ds.setOptionsPrefix(prefix)
    ds.setIDXFiles("%s/%s-images-idx3-ubyte.gz" % (directory, split), "%s/%s-labels-idx1-ubyte.gz" % (directory, split))
    return ds


def main():
    directory = opts.getString("fashion_dir", "/usr/share/datasets/fashion-mnist")
    model = opts.getString("fashion_model_name", "model")
    train = dataset("train_", "train", directory)
    train.setShuffle(True)
    train.setFromOptions()
    test = dataset("test_", "t10k", directory)
    test.setFromOptions()
    net = petnet.Net().create(comm, spec="dense:256,relu,dense:128,relu,dense:10")
    net.setFromOptions()
    loss = petnet.Loss().create(comm, "crossentropy")
    loss.setFromOptions()
    trainer = petnet.Trainer().create(comm)
    trainer.setNet(net)
    trainer.setLoss(loss)
    trainer.setDatasets(train, test)
    trainer.setFromOptions()
    r = trainer.train()
    PETSc.Sys.Print("summary: model=%s optimizer=%s epochs=%d params=%d train_samples=%d test_samples=%d ranks=%d "
                    "train_loss=%.6f test_loss=%.6f test_accuracy=%.4f train_time_s=%.2f threads=%d precision=%s backend=%s "
                    "blas_core=%s" %
                    (model, trainer.getTao().getType(), r.epochs, net.getNumParameters(), train.getSize(),
                     test.getSize(), comm.size, r.train_loss, r.test_loss, r.test_accuracy, r.seconds,
                     petnet.getNumThreads(), net.getPrecision(), net.getBackend(), petnet.getBLASInfo()[1]))


main()
