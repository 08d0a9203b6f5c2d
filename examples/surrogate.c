static const char help[] = "A surrogate of a PETSc KSP solve: learn the map from a field to the solution of a 2-D elliptic problem.\n"
                           "Problem on the unit square, u = 0 on the boundary, n x n interior points (5-point finite differences, KSP):\n"
                           "  -surrogate_problem source       -div(k grad u) = f, k(x,y) = 1 + 0.5 sin(2 pi x) cos(2 pi y) fixed; input f\n"
                           "                                   (a random sine series), output u   (the cnn's default)\n"
                           "  -surrogate_problem coefficient  -div(k grad u) = 1, input log k (a random sine series), output u (the unet's default)\n"
                           "  -surrogate_modes K              sine modes per direction of the random fields (default 4)\n"
                           "Sample s is drawn from seed s: the same data on any number of ranks. Inputs and targets are each scaled by one\n"
                           "constant (their RMS over the training samples). Reports the mean relative L2 error on the held-out samples and the\n"
                           "time per sample of the surrogate (NetForward) against the KSP solve it replaces.\n"
                           "-surrogate_model cnn (default): a small CNN on (n, n, 1) ending in a dense layer with n^2 outputs (-net_layers;\n"
                           "  Glorot-uniform weights), trained by the Trainer, batch-distributed over the samples (-tao_*, -trainer_*; default\n"
                           "  adam, lr 2e-3 with a cosine decay, batch 16, 50 epochs). Every rank solves its own samples on one rank.\n"
                           "  -surrogate_grid n  a multiple of 8 (default 32); -surrogate_train N, -surrogate_test M (default 384 and 64)\n"
                           "  KSP: cg + icc, rtol 1e-10 (-ksp_*, -pc_*)\n"
                           "-surrogate_model unet: a U-Net in grid mode on the n x n field of a DMDA split over all ranks (spatial\n"
                           "  parallelism; examples/surrogate/unet.c): the KSP solves each sample on that DMDA, the Net holds each rank's block\n"
                           "  of every field; default -net_graph: stride-4 and stride-2 convolutions down to n/32, linear upsampling back, skips\n"
                           "  by concatenation (give your own with -net_graph). MSE over the grid points, adam with a cosine decay, one TAO\n"
                           "  iteration per mini-batch (-tao_* for the rest).\n"
                           "  -surrogate_grid n       a multiple of 32 for the default U-Net (default 256)\n"
                           "  -surrogate_train N      training fields (default 512); -surrogate_test M held-out fields (default 32)\n"
                           "  -surrogate_batch nf     fields per mini-batch, the same on every rank (default 2)\n"
                           "  -surrogate_epochs E     passes over the training fields (default 36)\n"
                           "  -surrogate_lr lr        adam's learning rate (default 2e-3)\n"
                           "  -surrogate_coordinates  the points' x and y as two more input channels\n"
                           "  -surrogate_monitor      a line per epoch: training and held-out loss, held-out error\n"
                           "  KSP: cg + algebraic multigrid (BoomerAMG, or GAMG without hypre), rtol 1e-10 (-ksp_*, -pc_*)\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnettrainer.h>
#include "surrogate/problem.h"
#include "surrogate/unet.h"

typedef enum { SURROGATE_MODEL_CNN, SURROGATE_MODEL_UNET } SurrogateModelType;
static const char *const SurrogateModelTypes[] = {"cnn", "unet", "SurrogateModelType", "SURROGATE_MODEL_", NULL};

/* X, T: samples first .. first + N - 1, split over the ranks as the Dataset splits them (PETSC_DECIDE) */
static PetscErrorCode MakeSamples(SurrogateSolver *sv, PetscInt first, PetscInt N, Vec *X, Vec *T, PetscLogDouble *seconds)
{
  const PetscInt n2     = sv->n * sv->n;
  PetscInt       nlocal = PETSC_DECIDE, start;
  PetscScalar   *x, *y;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &nlocal, &N));
  PetscCallMPI(MPI_Scan(&nlocal, &start, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  start -= nlocal;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nlocal * n2, N * n2, X));
  PetscCall(VecDuplicate(*X, T));
  PetscCall(VecGetArrayWrite(*X, &x));
  PetscCall(VecGetArrayWrite(*T, &y));
  *seconds = 0;
  for (PetscInt s = 0; s < nlocal; s++) PetscCall(SurrogateSolverSolve(sv, first + start + s, x + s * n2, y + s * n2, seconds));
  PetscCall(VecRestoreArrayWrite(*T, &y));
  PetscCall(VecRestoreArrayWrite(*X, &x));
  PetscFunctionReturn(0);
}

/* mean over the samples of |y_s - t_s| / |t_s| (n2 entries per sample) */
static PetscErrorCode MeanRelativeError(Vec Y, Vec T, PetscInt n2, PetscReal *err)
{
  const PetscScalar *y, *t;
  PetscInt           nlocal, N;
  PetscReal          sum = 0.0;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(Y, &nlocal));
  PetscCall(VecGetSize(Y, &N));
  nlocal /= n2;
  N /= n2;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt s = 0; s < nlocal; s++) {
    PetscReal d = 0.0, r = 0.0;

    for (PetscInt i = 0; i < n2; i++) {
      d += PetscSqr(PetscRealPart(y[s * n2 + i] - t[s * n2 + i]));
      r += PetscSqr(PetscRealPart(t[s * n2 + i]));
    }
    sum += PetscSqrtReal(d / r);
  }
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  *err = sum / N;
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  SurrogateSolver      sv;
  SurrogateProblemType problem = SURROGATE_PROBLEM_SOURCE;
  SurrogateModelType   model   = SURROGATE_MODEL_CNN;
  SurrogateUNetOptions uopt    = {.nf = SURROGATE_UNET_BATCH, .epochs = SURROGATE_UNET_EPOCHS, .lr = SURROGATE_UNET_LR, .coordinates = PETSC_FALSE, .monitor = PETSC_FALSE};
  PetscInt             n = 32, K = 4, Ntrain = 384, Ntest = 64, epochs, nparams, nlocal;
  PetscMPIInt          size;
  Vec                  Xtrain, Ttrain, Xtest, Ttest, Ytest;
  PetscReal            scale, trainloss, testloss, testacc, seconds, err, errtrain;
  PetscLogDouble       tdata, tksp, t0, t1, tnet;
  Dataset              train, test;
  Net                  net;
  Loss                 loss;
  Trainer              trainer;
  Tao                  tao;
  TaoType              taotype;
  PetNetShape          shape;
  char                 layers[512];

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Surrogate of a KSP solve", NULL);
  PetscCall(PetscOptionsEnum("-surrogate_model", "The network: a CNN with a dense head, or a U-Net on the distributed field", NULL, SurrogateModelTypes, (PetscEnum)model, (PetscEnum *)&model, NULL));
  if (model == SURROGATE_MODEL_UNET) { /* its own defaults: issue 12's coefficient problem on a large grid */
    problem = SURROGATE_PROBLEM_COEFFICIENT;
    n       = SURROGATE_UNET_GRID;
    Ntrain  = SURROGATE_UNET_TRAIN;
    Ntest   = SURROGATE_UNET_TEST;
  }
  PetscCall(PetscOptionsEnum("-surrogate_problem", "The input field: the source f or the coefficient log k", NULL, SurrogateProblemTypes, (PetscEnum)problem, (PetscEnum *)&problem, NULL));
  PetscCall(PetNetOptionsInt("-surrogate_grid", "Interior points per direction", NULL, n, &n, NULL));
  PetscCall(PetNetOptionsInt("-surrogate_modes", "Sine modes per direction of the random fields", NULL, K, &K, NULL));
  PetscCall(PetNetOptionsInt("-surrogate_train", "Training samples", NULL, Ntrain, &Ntrain, NULL));
  PetscCall(PetNetOptionsInt("-surrogate_test", "Held-out samples", NULL, Ntest, &Ntest, NULL));
  if (model == SURROGATE_MODEL_UNET) {
    PetscCall(PetNetOptionsInt("-surrogate_batch", "unet: fields per mini-batch", NULL, uopt.nf, &uopt.nf, NULL));
    PetscCall(PetNetOptionsInt("-surrogate_epochs", "unet: passes over the training fields", NULL, uopt.epochs, &uopt.epochs, NULL));
    PetscCall(PetscOptionsReal("-surrogate_lr", "unet: adam's learning rate (cosine decay to 0)", NULL, uopt.lr, &uopt.lr, NULL));
    PetscCall(PetscOptionsBool("-surrogate_coordinates", "unet: the points' x and y as two more input channels", NULL, uopt.coordinates, &uopt.coordinates, NULL));
    PetscCall(PetscOptionsBool("-surrogate_monitor", "unet: a line per epoch (training and held-out loss, held-out error)", NULL, uopt.monitor, &uopt.monitor, NULL));
  }
  PetscOptionsEnd();
  PetscCheck(K >= 1 && Ntrain >= 1 && Ntest >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "Give -surrogate_modes, -surrogate_train and -surrogate_test >= 1");
  if (model == SURROGATE_MODEL_UNET) {
    PetscCheck(n >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-surrogate_grid %" PetscInt_FMT " must be positive", n);
    uopt.problem = problem;
    uopt.n       = n;
    uopt.K       = K;
    uopt.Ntrain  = Ntrain;
    uopt.Ntest   = Ntest;
    PetscCall(SurrogateUNetRun(&uopt));
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCheck(n >= 8 && n % 8 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-surrogate_grid %" PetscInt_FMT ": give a multiple of 8 (the CNN pools three times), at least 8", n);

  /* data: KSP solves, each rank its own samples; the test samples follow the training ones */
  PetscCall(SurrogateSolverCreate(PETSC_COMM_SELF, problem, n, K, NULL, &sv));
  PetscCall(PetscTime(&t0));
  PetscCall(MakeSamples(&sv, 0, Ntrain, &Xtrain, &Ttrain, &tksp));
  PetscCall(PetscTime(&t1));
  tdata = t1 - t0;
  PetscCall(MakeSamples(&sv, Ntrain, Ntest, &Xtest, &Ttest, &tksp));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &tksp, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD)); /* total KSP time of the test samples */
  /* inputs and targets scaled by the RMS of the training ones (rel_error does not depend on it) */
  PetscCall(VecNorm(Xtrain, NORM_2, &scale));
  scale /= PetscSqrtReal((PetscReal)Ntrain * n * n);
  PetscCall(VecScale(Xtrain, 1.0 / scale));
  PetscCall(VecScale(Xtest, 1.0 / scale));
  PetscCall(VecNorm(Ttrain, NORM_2, &scale));
  scale /= PetscSqrtReal((PetscReal)Ntrain * n * n);
  PetscCall(VecScale(Ttrain, 1.0 / scale));
  PetscCall(VecScale(Ttest, 1.0 / scale));

  shape.ndim   = 3;
  shape.dim[0] = n;
  shape.dim[1] = n;
  shape.dim[2] = 1;
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &train));
  PetscCall(DatasetSetOptionsPrefix(train, "train_"));
  PetscCall(DatasetSetType(train, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(train, &shape, Xtrain, n * n, Ttrain));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetBatchSize(train, 16));
  PetscCall(DatasetSetFromOptions(train));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &test));
  PetscCall(DatasetSetOptionsPrefix(test, "test_"));
  PetscCall(DatasetSetType(test, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(test, &shape, Xtest, n * n, Ttest));
  PetscCall(DatasetSetFromOptions(test));

  /* the CNN: three conv + pool blocks (n -> n/8), then dense layers to the n^2 values of the solution */
  PetscCall(PetscSNPrintf(layers, sizeof(layers), "conv2d:8:3:1:1,relu,avgpool:2,conv2d:16:3:1:1,relu,avgpool:2,conv2d:16:3:1:1,relu,avgpool:2,flatten,dense:128,relu,dense:%" PetscInt_FMT, n * n));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetInputShape(net, &shape));
  PetscCall(NetSetSeed(net, 1));
  PetscCall(NetSetFromOptions(net));
  {
    PetscInt nl;

    /* Glorot-uniform weights unless -layer<l>_conv2d_init / _dense_init say otherwise: the Kaiming default (for deep
       ReLU classifiers) trains this regression several times slower */
    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer       layer;
      const char *prefix;
      PetscBool   set;

      PetscCall(NetGetLayer(net, l, &layer));
      PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
      PetscCall(PetscOptionsHasName(NULL, prefix, "-conv2d_init", &set));
      if (!set) PetscCall(LayerConv2dSetInitialization(layer, LAYER_INIT_XAVIER, 0.0));
      PetscCall(PetscOptionsHasName(NULL, prefix, "-dense_init", &set));
      if (!set) PetscCall(LayerDenseSetInitialization(layer, LAYER_INIT_XAVIER, 0.0));
    }
  }
  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetType(loss, LOSSMSE));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(TrainerCreate(PETSC_COMM_WORLD, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test));
  PetscCall(TrainerGetTao(trainer, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(PetNetTaoSetLearningRate(tao, 2e-3));
  PetscCall(PetNetTaoSetLRSchedule(tao, PETNET_LR_COSINE));
  PetscCall(TrainerSetEpochs(trainer, 50));
  PetscCall(TrainerSetFromOptions(trainer));
  PetscCall(TrainerTrain(trainer));
  PetscCall(TrainerGetResults(trainer, &epochs, &trainloss, &testloss, &testacc, &seconds));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(NetGetNumParameters(net, &nparams));

  /* held-out error, and the surrogate's time on the test batch */
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(VecGetLocalSize(Xtest, &nlocal));
  PetscCall(NetCreateVecs(net, nlocal / (n * n), NULL, &Ytest));
  PetscCall(NetForward(net, Xtest, Ytest)); /* warm-up: workspace for this batch size */
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t0));
  PetscCall(NetForward(net, Xtest, Ytest));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t1));
  tnet = t1 - t0;
  PetscCall(MeanRelativeError(Ytest, Ttest, n * n, &err));
  PetscCall(VecDestroy(&Ytest));
  {
    Vec Ytrain;

    PetscCall(VecGetLocalSize(Xtrain, &nlocal));
    PetscCall(NetCreateVecs(net, nlocal / (n * n), NULL, &Ytrain));
    PetscCall(NetForward(net, Xtrain, Ytrain));
    PetscCall(MeanRelativeError(Ytrain, Ttrain, n * n, &errtrain));
    PetscCall(VecDestroy(&Ytrain));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mean relative L2 error: held-out %.6e, training %.6e\n", (double)err, (double)errtrain));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "time per sample: KSP solve %.4f ms (one rank, summed over ranks / samples), surrogate %.4f ms (%d rank(s), test batch of %" PetscInt_FMT ")\n", 1e3 * tksp / Ntest, 1e3 * tnet / Ntest, size, Ntest));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "summary: model=surrogate_%s grid=%" PetscInt_FMT "x%" PetscInt_FMT " ranks=%d params=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " optimizer=%s epochs=%" PetscInt_FMT
                        " train_loss=%.6e test_loss=%.6e rel_error=%.6e rel_error_train=%.6e train_time_s=%.2f data_time_s=%.2f ksp_ms_per_sample=%.4f surrogate_ms_per_sample=%.4f",
                        SurrogateProblemTypes[problem], n, n, size, nparams, Ntrain, Ntest, taotype, epochs, (double)trainloss, (double)testloss, (double)err, (double)errtrain, (double)seconds, (double)tdata, 1e3 * tksp / Ntest, 1e3 * tnet / Ntest));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }

  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(VecDestroy(&Xtrain));
  PetscCall(VecDestroy(&Ttrain));
  PetscCall(VecDestroy(&Xtest));
  PetscCall(VecDestroy(&Ttest));
  PetscCall(SurrogateSolverDestroy(&sv));
  PetscCall(PetscFinalize());
  return 0;
}
