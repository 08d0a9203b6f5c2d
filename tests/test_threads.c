/*
  Results do not depend on the number of threads (-net_threads, PetNetSetNumThreads()): the same bits at 1, 2 and 3
  threads (3: parts that do not divide evenly among the threads).

  Layers (default): for each Net below, a fresh Net (same seed, so the same parameters, dropout masks and batch-norm
  statistics) at each thread count, in training mode, on the same batch of n samples: forward Y, backward (dX and the
  gradient G), jvp (dY along random dX and dtheta), and the second-order backward (dXdot and Hv) where every layer has
  one. Every entry at 2 and 3 threads must equal the one at 1 thread; prints the largest difference (0).
    -threads_batch n    samples in the batch (default 20: 8 parts of whole samples in the convolutions; the MLP
                        takes 32 n)
    -threads_max t      compare 2, ..., t threads with 1 (default 3)
  The chunking of the convolutions comes from the options (e.g. -layer0_conv2d_max_workspace 1e-3: chunks of part of a
  sample).

  Training (-threads_train): train the Net of the options (-net_layers, -tao_type, -trainer_batch_size, ...) on the
  first -train_dataset_limit images of the Fashion-MNIST test split at 1 and at 2 threads; the final parameters, the
  training loss and the test accuracy must be the same bits.
*/
#include <petnet.h>

/* the Nets, their input shapes and a factor on the batch: the MLP's 32 n samples cut its GEMMs, activations and batch
   statistics into several parts (each part needs some work: see dense.c, pointwise.h, batchnorm.c), and the last
   Net's 16 n its pooling, upsampling and transposed convolution */
static const struct {
  const char *spec, *shape;
  PetscInt    batchfactor;
} Nets[] = {
    {"conv2d:8:3:1:1,batchnorm,relu,maxpool:2,conv2d:16:3:1:1,batchnorm,relu,maxpool:2,flatten,dropout:0.3,dense:32,relu,dense:10", "28x28x1", 1},
    {"conv2d:6:3:2:1,conv2d:6:1,tanh,conv2d:4:3:1:0:groups=2,relu,flatten,dense:5", "12x12x3", 1},
    {"conv3d:4:3:1:1,relu,maxpool:2,flatten,dense:5", "6x6x6x2", 1},
    {"dense:128,relu,batchnorm,dense:48,tanh,dense:10", "784", 32},
    {"conv2d:4:3:1:1,avgpool:2,upsample:2:linear,convtranspose2d:3:2:2:0,relu,upsample:2,avgpool:4,flatten,dense:5", "12x12x2", 16},
};

/* the largest |a - b| over the entries (0 when both are NULL) */
static PetscErrorCode MaxDifference(Vec a, Vec b, PetscReal *diff)
{
  Vec d;

  PetscFunctionBegin;
  *diff = 0;
  if (!a) PetscFunctionReturn(0);
  PetscCall(VecDuplicate(a, &d));
  PetscCall(VecWAXPY(d, -1.0, a, b));
  PetscCall(VecNorm(d, NORM_INFINITY, diff));
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

/* Vecs the derivatives of one Net at one thread count */
#define NRESULTS 7
static const char *const ResultNames[NRESULTS] = {"Y", "dX", "G", "dY (jvp)", "dXdot", "Hv", "params"};

static PetscErrorCode RandomVec(Vec v, PetscRandom rnd)
{
  PetscFunctionBegin;
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecShift(v, -0.5));
  PetscFunctionReturn(0);
}

/* a fresh Net from spec at nthreads threads: the results of forward, backward, jvp and the second-order backward */
static PetscErrorCode LayerResults(const char *spec, const char *shape, PetscInt n, PetscInt nthreads, Vec res[NRESULTS])
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  Net         net;
  PetNetShape in;
  PetscRandom rnd;
  Vec         X, dY, dXt, dth, theta;
  PetscBool   so;
  PetscInt    first;

  PetscFunctionBegin;
  PetscCall(PetNetSetNumThreads(nthreads));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, spec));
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 7));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetTraining(net, PETSC_TRUE));
  PetscCall(NetSetUp(net));
  PetscCall(PetscRandomCreate(comm, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 3));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(NetCreateVecs(net, n, &X, &res[0]));
  PetscCall(RandomVec(X, rnd));
  PetscCall(NetForward(net, X, res[0]));
  PetscCall(VecDuplicate(res[0], &dY));
  PetscCall(RandomVec(dY, rnd));
  PetscCall(VecDuplicate(X, &res[1]));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &res[2]));
  PetscCall(VecZeroEntries(res[2]));
  PetscCall(NetBackward(net, dY, res[1], res[2]));
  PetscCall(VecDuplicate(X, &dXt));
  PetscCall(RandomVec(dXt, rnd));
  PetscCall(VecDuplicate(theta, &dth));
  PetscCall(RandomVec(dth, rnd));
  PetscCall(VecDuplicate(res[0], &res[3]));
  PetscCall(NetJVP(net, dXt, dth, res[3]));
  PetscCall(NetHasSecondOrder(net, &so, &first));
  if (so) {
    PetscCall(VecDuplicate(X, &res[4]));
    PetscCall(VecDuplicate(theta, &res[5]));
    PetscCall(VecZeroEntries(res[5]));
    PetscCall(NetSecondOrderBackward(net, dY, NULL, res[4], res[5]));
  } else
    res[4] = res[5] = NULL;
  PetscCall(VecDuplicate(theta, &res[6]));
  PetscCall(VecCopy(theta, res[6]));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dXt));
  PetscCall(VecDestroy(&dth));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestLayers(PetscInt n, PetscInt tmax)
{
  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(Nets) / sizeof(Nets[0]); k++) {
    Vec       ref[NRESULTS], other[NRESULTS];
    PetscReal worst = 0;

    const PetscInt ns = n * Nets[k].batchfactor;

    PetscCall(LayerResults(Nets[k].spec, Nets[k].shape, ns, 1, ref));
    for (PetscInt t = 2; t <= tmax; t++) {
      PetscCall(LayerResults(Nets[k].spec, Nets[k].shape, ns, t, other));
      for (PetscInt r = 0; r < NRESULTS; r++) {
        PetscReal d;

        PetscCall(MaxDifference(ref[r], other[r], &d));
        PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %s: %s at %" PetscInt_FMT " threads differs from 1 thread by %g", Nets[k].spec, Nets[k].shape, ResultNames[r], t, (double)d);
        worst = PetscMax(worst, d);
        PetscCall(VecDestroy(&other[r]));
      }
    }
    for (PetscInt r = 0; r < NRESULTS; r++) PetscCall(VecDestroy(&ref[r]));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s (%s, %" PetscInt_FMT " samples): forward, backward, jvp, second order at 2 to %" PetscInt_FMT " threads against 1: max difference %g\n", Nets[k].spec, Nets[k].shape, ns, tmax, (double)worst));
  }
  PetscFunctionReturn(0);
}

/* train the Net of the options on the test split's first images at nthreads threads: parameters, loss and accuracy */
static PetscErrorCode TrainResults(PetscInt nthreads, Vec *params, PetscReal *trainloss, PetscReal *testacc)
{
  MPI_Comm  comm = PETSC_COMM_WORLD;
  Dataset   train, test;
  Net       net;
  Loss      loss;
  Trainer   trainer;
  Vec       theta;
  PetscInt  epochs;
  PetscReal testloss, seconds;
  char      images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetNetSetNumThreads(nthreads));
  PetscCall(PetscSNPrintf(images, sizeof(images), "%s/t10k-images-idx3-ubyte.gz", "/usr/share/datasets/fashion-mnist"));
  PetscCall(PetscSNPrintf(labels, sizeof(labels), "%s/t10k-labels-idx1-ubyte.gz", "/usr/share/datasets/fashion-mnist"));
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetSetOptionsPrefix(train, "train_"));
  PetscCall(DatasetSetType(train, DATASETIDX));
  PetscCall(DatasetIDXSetFiles(train, images, labels));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetFromOptions(train));
  PetscCall(DatasetCreate(comm, &test));
  PetscCall(DatasetSetOptionsPrefix(test, "test_"));
  PetscCall(DatasetSetType(test, DATASETIDX));
  PetscCall(DatasetIDXSetFiles(test, images, labels));
  PetscCall(DatasetSetFromOptions(test));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(TrainerCreate(comm, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test));
  PetscCall(TrainerSetFromOptions(trainer));
  PetscCall(TrainerTrain(trainer));
  PetscCall(TrainerGetResults(trainer, &epochs, trainloss, &testloss, testacc, &seconds));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, params));
  PetscCall(VecCopy(theta, *params));
  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestTraining(void)
{
  Vec       p1, p2;
  PetscReal l1, l2, a1, a2, d, norm;

  PetscFunctionBegin;
  PetscCall(TrainResults(1, &p1, &l1, &a1));
  PetscCall(TrainResults(2, &p2, &l2, &a2));
  PetscCall(MaxDifference(p1, p2, &d));
  PetscCall(VecNorm(p1, NORM_INFINITY, &norm));
  PetscCheck(d == 0 && l1 == l2 && a1 == a2, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "training at 2 threads differs from 1 thread: parameters by %g, loss %.17g against %.17g, accuracy %.17g against %.17g", (double)d, (double)l1, (double)l2, (double)a1,
             (double)a2);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "training at 1 and 2 threads: train_loss %.6f and %.6f, test_accuracy %.4f and %.4f, parameters (max %.3f) differ by at most %g\n", (double)l1, (double)l2, (double)a1, (double)a2, (double)norm, (double)d));
  PetscCall(VecDestroy(&p1));
  PetscCall(VecDestroy(&p2));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  n = 20, tmax = 3;
  PetscBool train = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-threads_batch", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-threads_max", &tmax, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-threads_train", &train, NULL));
  if (train)
    PetscCall(TestTraining());
  else
    PetscCall(TestLayers(n, tmax));
  PetscCall(PetscFinalize());
  return 0;
}
