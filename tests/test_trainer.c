static const char help[] = "Trainer tests on synthetic data held in memory Datasets.\n"
                           "  -case ranks    : per-iteration losses and final parameters on PETSC_COMM_WORLD equal those of the same\n"
                           "                   training done alone on PETSC_COMM_SELF (to 1e-12), for a mini-batch and a full-batch optimizer\n"
                           "  -case restart  : 2 epochs + checkpoint + resume to 4 epochs == 4 uninterrupted epochs (bit for bit)\n"
                           "  -case gradient : the full-batch objective's gradient against central finite differences (<= 1e-6)\n"
                           "  -case zero     : -trainer_epochs 0 only evaluates\n"
                           "  -case early    : early stopping stops before the last epoch on unlearnable test labels\n"
                           "  -case nan      : a loss that turns NaN in epoch 3 stops training with an error; the checkpoint of epoch 2 stays\n"
                           "  -case resume   : loads the checkpoint left by -case nan and checks it is the epoch-2 state\n"
                           "  -case explode  : as nan, but the loss is multiplied by 1e30 (finite): -trainer_divergence_factor catches it\n"
                           "  -case resume   : with -ckpt FILE, the checkpoint left by -case explode\n"
                           "  -case evalonly : -trainer_epochs 0 on a Net with batchnorm changes neither the saved model nor the test loss\n"
                           "  -case fullbatch: lmvm without a TAO budget runs -trainer_epochs iterations (one epoch each); a full-batch\n"
                           "                   restart runs only the remaining ones; a user -tao_max_it counts the epochs\n"
                           "  -case corrupt  : -corrupt flip|truncate|epochneg|epochbig|history|runsection|v1|v2|v3|v4|v5|kfacblock|kfactruncate|kfachuge|none damages\n"
                           "                   checkpoint (fixing its checksum for the epoch cases); loading must fail naming the file, except\n"
                           "                   v1..v5 (old formats) and none, which load; -corrupt_tao kfac writes it with K-FAC (format 6: its\n"
                           "                   factors, compared after the load; a format-5 file restarts them, counters 0 and -1)\n"
                           "  -case prefix   : TrainerSetOptionsPrefix(a_) reaches the Tao and the training Dataset the Trainer named\n"
                           "                   (a_train_), not a Dataset with its own prefix (mine_); run with -a_tao_type lmvm\n"
                           "                   -a_trainer_epochs 0 -a_train_dataset_limit 40 -mine_dataset_limit 30\n"
                           "  -case iterate  : adam's solution is the Net's parameter Vec, lmvm's a copy; a Tao retyped to nm after\n"
                           "                   TrainerSetUp() (it evaluates at simplex points, not at its solution) is refused\n";

#include <petnet.h>
#include <petnettrainer.h>
#include <math.h>
#include <stdio.h>
#include <zlib.h>

#define NFEAT    5
#define NCLASS   3
#define NSAMPLES 100

/* Deterministic synthetic classification data: x_i in [-1,1]^5, label from a fixed linear rule (or scrambled). */
static PetscErrorCode MakeData(MPI_Comm comm, PetscBool scramble, Dataset *ds)
{
  Vec         X, T;
  PetNetShape shape = {1, {NFEAT}};
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  /* all samples on the first rank; the Dataset redistributes */
  PetscCall(VecCreateMPI(comm, rank ? 0 : NSAMPLES * NFEAT, PETSC_DETERMINE, &X));
  PetscCall(VecCreateMPI(comm, rank ? 0 : NSAMPLES, PETSC_DETERMINE, &T));
  if (!rank) {
    PetscScalar *x, *t;

    PetscCall(VecGetArray(X, &x));
    PetscCall(VecGetArray(T, &t));
    for (PetscInt s = 0; s < NSAMPLES; s++) {
      PetscReal score[NCLASS] = {0, 0, 0};
      PetscInt  best          = 0;

      for (PetscInt f = 0; f < NFEAT; f++) x[s * NFEAT + f] = PetscSinReal(1.7 * s + 2.3 * f + 0.1 * s * f);
      for (PetscInt c = 0; c < NCLASS; c++)
        for (PetscInt f = 0; f < NFEAT; f++) score[c] += PetscCosReal(c + 3.0 * f) * PetscRealPart(x[s * NFEAT + f]);
      for (PetscInt c = 1; c < NCLASS; c++)
        if (score[c] > score[best]) best = c;
      t[s] = scramble ? (PetscScalar)((s * 7) % NCLASS) : (PetscScalar)best;
    }
    PetscCall(VecRestoreArray(X, &x));
    PetscCall(VecRestoreArray(T, &t));
  }
  PetscCall(DatasetCreate(comm, ds));
  PetscCall(DatasetSetType(*ds, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(*ds, &shape, X, 1, T));
  PetscCall(DatasetSetBatchSize(*ds, 16));
  PetscCall(DatasetSetShuffle(*ds, PETSC_TRUE));
  PetscCall(DatasetSetSeed(*ds, 3));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

typedef struct {
  PetscInt  n;
  PetscReal f[1024];
} History;

static PetscErrorCode RecordLoss(Tao tao, void *ctx)
{
  History  *h = (History *)ctx;
  PetscReal f;

  PetscFunctionBegin;
  PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
  if (h->n < 1024) h->f[h->n++] = f;
  PetscFunctionReturn(0);
}

static const char *Spec     = "dense:8,tanh,dense:3"; /* the Net of MakeTrainer() */
static PetscBool   SetMaxIt = PETSC_TRUE;             /* MakeTrainer() gives full-batch types a budget of 6 */

/* A Trainer on comm: Net Spec (seed 5), crossentropy, the given TAO type, epochs; prefix for options */
static PetscErrorCode MakeTrainer(MPI_Comm comm, TaoType type, PetscInt epochs, PetscBool scrambletest, Trainer *tr)
{
  Dataset train, test;
  Net     net;
  Loss    loss;
  Tao     tao;

  PetscFunctionBegin;
  PetscCall(MakeData(comm, PETSC_FALSE, &train));
  PetscCall(MakeData(comm, scrambletest, &test));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, Spec));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(TrainerCreate(comm, tr));
  PetscCall(TrainerSetNet(*tr, net));
  PetscCall(TrainerSetLoss(*tr, loss));
  PetscCall(TrainerSetDatasets(*tr, train, test));
  PetscCall(TrainerSetEpochs(*tr, epochs));
  PetscCall(TrainerGetTao(*tr, &tao));
  PetscCall(TaoSetType(tao, type));
  PetscCall(PetNetTaoSetLearningRate(tao, 0.05));
  if (SetMaxIt) PetscCall(TaoSetMaximumIterations(tao, 6)); /* full-batch types; the mini-batch ones run epochs x batches */
  PetscCall(TrainerSetFromOptions(*tr));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(NetDestroy(&net));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* The Net's parameters gathered on every rank (caller destroys) */
static PetscErrorCode GatherParameters(Trainer tr, Vec *all)
{
  Net        net;
  Vec        theta;
  VecScatter sc;

  PetscFunctionBegin;
  PetscCall(TrainerGetNet(tr, &net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecScatterCreateToAll(theta, &sc, all));
  PetscCall(VecScatterBegin(sc, theta, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, theta, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sc));
  PetscFunctionReturn(0);
}

static PetscErrorCode RelativeDifference(Vec a, Vec b, PetscReal *d)
{
  Vec       w;
  PetscReal na, nd;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(a, &w));
  PetscCall(VecWAXPY(w, -1.0, a, b));
  PetscCall(VecNorm(w, NORM_INFINITY, &nd));
  PetscCall(VecNorm(a, NORM_INFINITY, &na));
  *d = nd / na;
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

/* Train, and return the loss history and the gathered final parameters */
static PetscErrorCode TrainOn(MPI_Comm comm, TaoType type, PetscInt epochs, History *h, Vec *params)
{
  Trainer tr;
  Tao     tao;

  PetscFunctionBegin;
  PetscCall(MakeTrainer(comm, type, epochs, PETSC_FALSE, &tr));
  PetscCall(TrainerGetTao(tr, &tao));
  h->n = 0;
  PetscCall(TaoSetMonitor(tao, RecordLoss, h, NULL));
  PetscCall(TrainerTrain(tr));
  PetscCall(GatherParameters(tr, params));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseRanks(void)
{
  const TaoType types[] = {TAOADAM, TAOSGD, TAOLMVM, TAOBNCG, TAOBQNLS};

  PetscFunctionBegin;
  for (int k = 0; k < 5; k++) {
    static History hw, hs;
    Vec            pw, ps;
    PetscReal      d, worst = 0;

    PetscCall(TrainOn(PETSC_COMM_WORLD, types[k], 2, &hw, &pw));
    PetscCall(TrainOn(PETSC_COMM_SELF, types[k], 2, &hs, &ps));
    PetscCheck(hw.n == hs.n && hw.n > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: %" PetscInt_FMT " iterations on the world communicator, %" PetscInt_FMT " alone", types[k], hw.n, hs.n);
    for (PetscInt i = 0; i < hw.n; i++) worst = PetscMax(worst, PetscAbsReal(hw.f[i] - hs.f[i]) / PetscAbsReal(hs.f[i]));
    PetscCall(RelativeDifference(ps, pw, &d));
    PetscCheck(worst <= 1e-12 && d <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: losses differ by %g, parameters by %g (relative) between ranks and one rank", types[k], (double)worst, (double)d);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-6s %3" PetscInt_FMT " iterations: same losses and parameters on all ranks as alone (<= 1e-12)\n", types[k], hw.n));
    PetscCall(VecDestroy(&pw));
    PetscCall(VecDestroy(&ps));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseRestart(void)
{
  Trainer   tr;
  Vec       p4, p22;
  PetscReal d;
  PetscBool exists;

  PetscFunctionBegin;
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 4, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(GatherParameters(tr, &p4));
  PetscCall(TrainerDestroy(&tr));

  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 2, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerSaveCheckpoint(tr, "tests/out/trainer_restart.ckpt"));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(PetscTestFile("tests/out/trainer_restart.ckpt", 'r', &exists));
  PetscCheck(exists, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "checkpoint not written");

  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 4, PETSC_FALSE, &tr));
  PetscCall(TrainerLoadCheckpoint(tr, "tests/out/trainer_restart.ckpt"));
  PetscCall(TrainerTrain(tr));
  PetscCall(GatherParameters(tr, &p22));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(RelativeDifference(p4, p22, &d));
  PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "resumed training differs from uninterrupted training by %g", (double)d);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "2 epochs + checkpoint + 2 resumed epochs == 4 epochs, bit for bit\n"));
  PetscCall(VecDestroy(&p4));
  PetscCall(VecDestroy(&p22));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseGradient(void)
{
  Trainer     tr;
  Tao         tao;
  Vec         x, g, v, xh;
  PetscReal   f, fp, fm, h = 1e-6, err;
  PetscScalar gv;
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 1, PETSC_FALSE, &tr));
  PetscCall(TrainerSetUp(tr));
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoGetSolution(tao, &x));
  PetscCall(VecDuplicate(x, &g));
  PetscCall(VecDuplicate(x, &v));
  PetscCall(VecDuplicate(x, &xh));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1, 1));
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(TaoComputeObjectiveAndGradient(tao, x, &f, g));
  PetscCall(VecDot(g, v, &gv));
  PetscCall(VecWAXPY(xh, h, v, x));
  PetscCall(TaoComputeObjective(tao, xh, &fp));
  PetscCall(VecWAXPY(xh, -h, v, x));
  PetscCall(TaoComputeObjective(tao, xh, &fm));
  err = PetscAbsReal((fp - fm) / (2 * h) - PetscRealPart(gv)) / PetscAbsReal(PetscRealPart(gv));
  PetscCheck(err <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "full-batch gradient: finite-difference error %g", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "full-batch objective: gradient matches central finite differences (<= 1e-6)\n"));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&g));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&xh));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseZero(void)
{
  Trainer   tr;
  PetscInt  epochs;
  PetscReal trainloss, testloss, acc;

  PetscFunctionBegin;
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 0, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetResults(tr, &epochs, &trainloss, &testloss, &acc, NULL));
  /* train and test sets hold the same samples: the same untrained loss */
  PetscCheck(epochs == 0 && PetscAbsReal(trainloss - testloss) <= 1e-14 * trainloss && acc >= 0 && acc <= 1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-trainer_epochs 0: epochs %" PetscInt_FMT " train %g test %g acc %g", epochs, (double)trainloss,
             (double)testloss, (double)acc);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "0 epochs: evaluation only, untrained loss %.6f\n", (double)trainloss));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseEarly(void)
{
  Trainer  tr;
  PetscInt epochs;

  PetscFunctionBegin;
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 50, PETSC_TRUE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(epochs < 50, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "early stopping did not stop: %" PetscInt_FMT " epochs", epochs);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "early stopping stopped before the last epoch\n"));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

/* A loss that is crossentropy until its evaluation number 'nanafter', NaN afterwards: registered like any user loss */
static PetscInt  NaNAfter = 14, Evaluations = 0;
static PetscBool Explode = PETSC_FALSE; /* multiply by 1e30 (finite) instead of NaN */
static PetscErrorCode (*CrossEntropyEvaluate)(Loss, PetscInt, const PetscScalar *, PetscInt, const PetscScalar *, PetscReal *, PetscScalar *);

#include <petnet/private/lossimpl.h>
static PetscErrorCode LossEvaluate_NaNAfter(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, PetscReal *sum, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(CrossEntropyEvaluate(loss, ny, y, nt, t, sum, dy));
  if (++Evaluations > NaNAfter) *sum = Explode ? *sum * 1e30 : (PetscReal)NAN;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossCreate_NaNAfter(Loss loss)
{
  PetscErrorCode (*create)(Loss);

  PetscFunctionBegin;
  PetscCall(PetscFunctionListFind(LossList, LOSSCROSSENTROPY, &create));
  PetscCall((*create)(loss));
  CrossEntropyEvaluate = loss->ops->evaluate;
  loss->ops->evaluate  = LossEvaluate_NaNAfter;
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseNaN(void)
{
  Trainer tr;
  Loss    loss;

  PetscFunctionBegin;
  PetscCall(LossRegister("nanafter", LossCreate_NaNAfter));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 5, PETSC_FALSE, &tr));
  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetType(loss, "nanafter"));
  PetscCall(TrainerSetLoss(tr, loss));
  PetscCall(LossDestroy(&loss));
  /* 7 batches of training + 1 evaluation of the test set per epoch: the 20th evaluation is in epoch 3 */
  NaNAfter = 19;
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseResume(void)
{
  Trainer  tr;
  PetscInt epochs;
  char     file[PETSC_MAX_PATH_LEN] = "tests/out/trainer_nan.ckpt";

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ckpt", file, sizeof(file), NULL));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 2, PETSC_FALSE, &tr));
  PetscCall(TrainerLoadCheckpoint(tr, file));
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(epochs == 2, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the kept checkpoint is from epoch %" PetscInt_FMT ", expected 2", epochs);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "the checkpoint kept after divergence is the state after epoch 2\n"));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

/* rank 0 compares two files byte for byte */
static PetscErrorCode SameFiles(const char a[], const char b[], PetscBool *same)
{
  PetscMPIInt rank;
  int         eq = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (!rank) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int   ca = 0, cb = 0;

    eq = fa && fb;
    while (eq && (ca = getc(fa)) == (cb = getc(fb)) && ca != EOF) {}
    eq = eq && ca == cb;
    if (fa) fclose(fa);
    if (fb) fclose(fb);
  }
  PetscCallMPI(MPI_Bcast(&eq, 1, MPI_INT, 0, PETSC_COMM_WORLD));
  *same = eq ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseEvalOnly(void)
{
  Trainer   tr;
  Net       net;
  Dataset   test;
  PetscReal before, after;
  PetscBool same;

  PetscFunctionBegin;
  Spec = "dense:8,batchnorm,tanh,dense:3";
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 0, PETSC_FALSE, &tr));
  PetscCall(MakeData(PETSC_COMM_WORLD, PETSC_TRUE, &test));
  PetscCall(TrainerSetUp(tr));
  PetscCall(TrainerGetNet(tr, &net));
  PetscCall(NetSave(net, "tests/out/trainer_evalonly_before.bin"));
  PetscCall(TrainerEvaluate(tr, test, &before, NULL));
  PetscCall(TrainerTrain(tr));
  PetscCall(NetSave(net, "tests/out/trainer_evalonly_after.bin"));
  PetscCall(TrainerEvaluate(tr, test, &after, NULL));
  PetscCall(SameFiles("tests/out/trainer_evalonly_before.bin", "tests/out/trainer_evalonly_after.bin", &same));
  PetscCheck(same && before == after, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-trainer_epochs 0 changed the model: saved files %s, test loss %.17g before, %.17g after", same ? "identical" : "differ", (double)before, (double)after);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "0 epochs with batchnorm: saved model and test loss (%.6f) unchanged\n", (double)after));
  PetscCall(DatasetDestroy(&test));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseFullBatch(void)
{
  Trainer   tr;
  Tao       tao;
  PetscInt  its, epochs;
  PetscReal loss0, loss;

  PetscFunctionBegin;
  SetMaxIt = PETSC_FALSE;
  /* no -tao_max_it: -trainer_epochs 4 is the budget, not TAO's 2000 */
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 0, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetResults(tr, NULL, &loss0, NULL, NULL, NULL));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 4, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoGetIterationNumber(tao, &its));
  PetscCall(TrainerGetResults(tr, &epochs, &loss, NULL, NULL, NULL));
  PetscCheck(its == 4 && epochs == 4 && loss < loss0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "lmvm, -trainer_epochs 4: %" PetscInt_FMT " iterations, %" PetscInt_FMT " epochs, loss %g from %g", its, epochs, (double)loss, (double)loss0);
  PetscCall(TrainerDestroy(&tr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "full batch: 4 epochs = 4 lmvm iterations, loss %.6f -> %.6f\n", (double)loss0, (double)loss));
  /* restart after 2 epochs: only the 2 remaining iterations run */
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 2, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerSaveCheckpoint(tr, "tests/out/trainer_fullbatch.ckpt"));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 4, PETSC_FALSE, &tr));
  PetscCall(TrainerLoadCheckpoint(tr, "tests/out/trainer_fullbatch.ckpt"));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoGetIterationNumber(tao, &its));
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(its == 2 && epochs == 4, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "full-batch restart at epoch 2 of 4: %" PetscInt_FMT " iterations, %" PetscInt_FMT " epochs", its, epochs);
  PetscCall(TrainerDestroy(&tr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "full batch: restart at epoch 2 of 4 runs 2 iterations\n"));
  /* a budget the user gave (TaoSetMaximumIterations(6)) counts the epochs */
  SetMaxIt = PETSC_TRUE;
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOLMVM, 2, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(epochs == 6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "full batch with a TAO budget of 6: %" PetscInt_FMT " epochs", epochs);
  PetscCall(TrainerDestroy(&tr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "full batch: the user's TAO budget (6) counts the epochs\n"));
  PetscFunctionReturn(0);
}

/* Rank 0 rewrites the crc32 trailer of a (version 2) checkpoint after a deliberate change */
static void FixChecksum(unsigned char *buf, long n)
{
  uLong crc = crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(n - 4));

  for (int i = 0; i < 4; i++) buf[n - 4 + i] = (unsigned char)(crc >> (24 - 8 * i));
}

static PetscInt HeaderInt(const unsigned char *buf, int i)
{
  unsigned long long v = 0;

  for (size_t b = 0; b < sizeof(PetscInt); b++) v = (v << 8) | buf[i * sizeof(PetscInt) + b];
  return sizeof(PetscInt) == 4 ? (PetscInt)(int32_t)(uint32_t)v : (PetscInt)(int64_t)v;
}

static void SetHeaderInt(unsigned char *buf, int i, PetscInt v)
{
  for (size_t b = 0; b < sizeof(PetscInt); b++) buf[i * sizeof(PetscInt) + b] = (unsigned char)((unsigned long long)v >> (8 * (sizeof(PetscInt) - 1 - b)));
}

static PetscErrorCode CaseCorrupt(void)
{
  Trainer     tr;
  char        mode[32] = "flip", file[PETSC_MAX_PATH_LEN] = "tests/out/trainer_corrupt.ckpt";
  PetscMPIInt rank;
  PetscBool   v1, v2, v3, v4, v5, iskfac;
  Vec         saved, loaded, fsaved = NULL;
  PetscReal   d;
  char        taotype[16] = "adam";
  PetscInt    counters[2], nblocks;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-corrupt", mode, sizeof(mode), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ckpt", file, sizeof(file), NULL));
  PetscCall(PetscStrcmp(mode, "v1", &v1));
  PetscCall(PetscStrcmp(mode, "v2", &v2));
  PetscCall(PetscStrcmp(mode, "v3", &v3));
  PetscCall(PetscStrcmp(mode, "v4", &v4));
  PetscCall(PetscStrcmp(mode, "v5", &v5));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-corrupt_tao", taotype, sizeof(taotype), NULL));
  PetscCall(PetscStrcmp(taotype, TAOKFAC, &iskfac));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, taotype, 2, PETSC_FALSE, &tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerSaveCheckpoint(tr, file));
  PetscCall(GatherParameters(tr, &saved));
  if (iskfac) { /* K-FAC's state as it was saved, all on rank 0 */
    Tao tao;

    PetscCall(TrainerGetTao(tr, &tao));
    PetscCall(PetNetTaoKFACGetState(tao, counters, &nblocks, NULL, &fsaved));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "saved K-FAC state: %" PetscInt_FMT " statistics updates, inverses of update %" PetscInt_FMT ", %" PetscInt_FMT " blocks\n", counters[0], counters[1], nblocks));
  }
  PetscCall(TrainerDestroy(&tr));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (!rank) {
    FILE          *f = fopen(file, "rb");
    long           n;
    unsigned char *buf;
    PetscBool      match;

    PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "cannot open %s", file);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    PetscCall(PetscMalloc1(n, &buf));
    PetscCheck(fread(buf, 1, n, f) == (size_t)n, PETSC_COMM_SELF, PETSC_ERR_FILE_READ, "cannot read %s", file);
    fclose(f);
    if (PetscStrcmp(mode, "flip", &match), match)
      buf[n / 2] ^= 0x10; /* inside the parameters */
    else if (PetscStrcmp(mode, "truncate", &match), match)
      n -= 100;
    else if (PetscStrcmp(mode, "epochneg", &match), match) {
      SetHeaderInt(buf, 2, -5);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "epochbig", &match), match) {
      SetHeaderInt(buf, 2, 1000);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "history", &match), match) { /* the first history record (version 4) made epoch 0 */
      long isz = (long)sizeof(PetscInt), len = 0;

      for (size_t b = 0; b < sizeof(PetscInt); b++) len = (len << 8) | buf[7 * sizeof(PetscInt) + b];
      SetHeaderInt(buf + 15 * isz + len + 3 * sizeof(PetscReal) + 2 * isz, 0, 0);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "runsection", &match), match) { /* version 5's run section announces more layers than the Net has */
      long isz = (long)sizeof(PetscInt), len = 0, nhist = 0;

      for (size_t b = 0; b < sizeof(PetscInt); b++) len = (len << 8) | buf[7 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) nhist = (nhist << 8) | buf[8 * sizeof(PetscInt) + b];
      SetHeaderInt(buf + 15 * isz + len + 3 * sizeof(PetscReal) + 2 * isz + nhist * (2 * isz + 7 * (long)sizeof(PetscReal)), 12, 7);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "kfacblock", &match), match) { /* version 6's K-FAC section: block 0's A one order larger */
      long isz = (long)sizeof(PetscInt), nk = HeaderInt(buf, 12), ns = HeaderInt(buf, 14), ksz = (nk + 2) * isz + ns * (long)sizeof(PetscScalar);

      PetscCheck(nk > 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "-corrupt kfacblock needs -corrupt_tao kfac");
      SetHeaderInt(buf + n - 4 - ksz, 5, HeaderInt(buf + n - 4 - ksz, 5) + 1);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "kfactruncate", &match), match) { /* the last 100 bytes of the factors gone, the checksum fixed */
      memmove(buf + n - 104, buf + n - 4, 4);
      n -= 100;
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "kfachuge", &match), match) { /* the header's count of K-FAC factor entries beyond 2^32 */
      SetHeaderInt(buf, 13, 1);
      FixChecksum(buf, n);
    } else if (PetscStrcmp(mode, "none", &match), match) {
    } else if (v1 || v2 || v3 || v4 || v5) {
      long isz = (long)sizeof(PetscInt), nk = HeaderInt(buf, 12), ns = HeaderInt(buf, 14), ksz = nk ? (nk + 2) * isz + ns * (long)sizeof(PetscScalar) : 0;

      /* version 6 to version 5: without the K-FAC section (before the checksum) and its 3 lengths in the header */
      memmove(buf + n - 4 - ksz, buf + n - 4, 4);
      n -= ksz;
      memmove(buf + 12 * isz, buf + 15 * isz, n - 15 * isz);
      n -= 3 * isz;
      SetHeaderInt(buf, 1, 5);
      FixChecksum(buf, n);
    } else
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "unknown -corrupt %s", mode);
    if (v1 || v2 || v3 || v4) {
      /* version 5 to version 4: without the run section's lengths (3 integers after the history count) and the run
         section (after the history) */
      long isz = (long)sizeof(PetscInt), len = 0, nh = 0, ni = 0, nr = 0, nc = 0, before, runsz;

      for (size_t b = 0; b < sizeof(PetscInt); b++) len = (len << 8) | buf[7 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) nh = (nh << 8) | buf[8 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) ni = (ni << 8) | buf[9 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) nr = (nr << 8) | buf[10 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) nc = (nc << 8) | buf[11 * sizeof(PetscInt) + b];
      before = 12 * isz + len + 3 * (long)sizeof(PetscReal) + 2 * isz + nh * (2 * isz + 7 * (long)sizeof(PetscReal)); /* the run section's offset */
      runsz  = ni * isz + nr * (long)sizeof(PetscReal) + nc;
      memmove(buf + before, buf + before + runsz, n - (before + runsz));
      n -= runsz;
      memmove(buf + 9 * isz, buf + 12 * isz, n - 12 * isz);
      n -= 3 * isz;
      SetHeaderInt(buf, 1, 4);
      FixChecksum(buf, n);
    }
    if (v1 || v2 || v3) { /* version 4 has after the 8-integer header the count of history records, n, and
                                    after the spec 3 reals (best test and training losses, the last training loss), 2
                                    integers (batch size, samples) and the history (2n integers, 7n reals); version 3
                                    lacks the count and the history; version 2 has the first 2 reals only, version 1 the
                                    first only and no checksum */
      long isz = (long)sizeof(PetscInt), spec = 8 * isz, len = 0, nhist = 0, hist, run = 3 * sizeof(PetscReal) + 2 * isz;

      for (size_t b = 0; b < sizeof(PetscInt); b++) len = (len << 8) | buf[7 * sizeof(PetscInt) + b];
      for (size_t b = 0; b < sizeof(PetscInt); b++) nhist = (nhist << 8) | buf[8 * sizeof(PetscInt) + b];
      PetscCheck(nhist == 2, PETSC_COMM_SELF, PETSC_ERR_PLIB, "a version 4 checkpoint after 2 epochs holds %ld history records", nhist);
      hist = nhist * (2 * isz + 7 * (long)sizeof(PetscReal));
      memmove(buf + spec, buf + spec + isz, len + run); /* to version 3: no count, no history */
      memmove(buf + spec + len + run, buf + spec + isz + len + run + hist, n - (spec + isz + len + run + hist));
      n -= isz + hist;
      SetHeaderInt(buf, 1, 3);
      if (v1 || v2) {
        long keep = (v1 ? 1 : 2) * sizeof(PetscReal);

        SetHeaderInt(buf, 1, v1 ? 1 : 2);
        memmove(buf + spec + len + keep, buf + spec + len + run, n - (spec + len + run));
        n -= run - keep;
      }
      if (v1)
        n -= 4;
      else
        FixChecksum(buf, n);
    }
    f = fopen(file, "wb");
    PetscCheck(f && fwrite(buf, 1, n, f) == (size_t)n, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "cannot write %s", file);
    fclose(f);
    PetscCall(PetscFree(buf));
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, taotype, 4, PETSC_FALSE, &tr));
  PetscCall(TrainerLoadCheckpoint(tr, file)); /* the error the _error tests expect, except v1 */
  PetscCall(GatherParameters(tr, &loaded));
  PetscCall(RelativeDifference(saved, loaded, &d));
  PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "checkpoint %s (%s) loaded parameters differing by %g", file, mode, (double)d);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "checkpoint %s: the parameters load unchanged\n", mode));
  if (iskfac) { /* format 6: the state as saved, bit for bit; format 5: none (the first update starts the factors) */
    Tao       tao;
    Vec       f;
    PetscBool same;

    PetscCall(TrainerGetTao(tr, &tao));
    PetscCall(PetNetTaoKFACGetState(tao, counters, &nblocks, NULL, &f));
    PetscCall(VecEqual(fsaved, f, &same));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "loaded K-FAC state: %" PetscInt_FMT " statistics updates, inverses of update %" PetscInt_FMT ", %" PetscInt_FMT " blocks, factors and inverses %s\n", counters[0], counters[1], nblocks,
                          same ? "as saved" : "not as saved"));
    PetscCall(VecDestroy(&f));
    PetscCall(TrainerTrain(tr)); /* the remaining epochs run from what was loaded */
  }
  PetscCall(VecDestroy(&fsaved));
  PetscCall(VecDestroy(&saved));
  PetscCall(VecDestroy(&loaded));
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

/* The prefixes as the suite line sets them: -a_tao_type lmvm -a_trainer_epochs 0 -a_train_dataset_limit 40
   -mine_dataset_limit 30 */
static PetscErrorCode CasePrefix(void)
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  Dataset     train, test;
  Net         net;
  Loss        loss;
  Trainer     tr;
  Tao         tao;
  const char *prefix;
  PetscBool   match;
  PetscInt    ntrain, ntest, epochs;

  PetscFunctionBegin;
  PetscCall(MakeData(comm, PETSC_FALSE, &train));
  PetscCall(MakeData(comm, PETSC_FALSE, &test));
  PetscCall(DatasetSetOptionsPrefix(test, "mine_"));
  PetscCall(DatasetSetFromOptions(test));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "dense:8,tanh,dense:3"));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetOptionsPrefix(loss, "b_"));
  PetscCall(LossAppendOptionsPrefix(loss, "c_"));
  PetscCall(LossGetOptionsPrefix(loss, &prefix));
  PetscCall(PetscStrcmp(prefix, "b_c_", &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "Loss prefix %s, expected b_c_", prefix);
  PetscCall(LossSetFromOptions(loss));
  PetscCall(TrainerCreate(comm, &tr));
  PetscCall(TrainerSetNet(tr, net));
  PetscCall(TrainerSetLoss(tr, loss));
  PetscCall(TrainerSetDatasets(tr, train, test));
  PetscCall(TrainerSetOptionsPrefix(tr, "a_")); /* after TrainerSetDatasets: the named Dataset follows */
  PetscCall(TrainerGetOptionsPrefix(tr, &prefix));
  PetscCall(PetscStrcmp(prefix, "a_", &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "Trainer prefix %s, expected a_", prefix);
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoGetOptionsPrefix(tao, &prefix));
  PetscCall(PetscStrcmp(prefix, "a_", &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "Tao prefix %s, expected a_ (the Trainer's)", prefix);
  PetscCall(DatasetGetOptionsPrefix(train, &prefix));
  PetscCall(PetscStrcmp(prefix, "a_train_", &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "training Dataset prefix %s, expected a_train_", prefix);
  PetscCall(DatasetGetOptionsPrefix(test, &prefix));
  PetscCall(PetscStrcmp(prefix, "mine_", &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "test Dataset prefix %s, expected its own mine_", prefix);
  PetscCall(TrainerSetFromOptions(tr));
  PetscCall(TrainerTrain(tr));
  PetscCall(PetscObjectTypeCompare((PetscObject)tao, TAOLMVM, &match));
  PetscCheck(match, comm, PETSC_ERR_PLIB, "-a_tao_type lmvm did not reach the Tao");
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(epochs == 0, comm, PETSC_ERR_PLIB, "-a_trainer_epochs 0 gave %" PetscInt_FMT " epochs", epochs);
  PetscCall(DatasetGetSize(train, &ntrain));
  PetscCall(DatasetGetSize(test, &ntest));
  PetscCheck(ntrain == 40 && ntest == 30, comm, PETSC_ERR_PLIB, "%" PetscInt_FMT " training and %" PetscInt_FMT " test samples, expected 40 and 30", ntrain, ntest);
  PetscCall(PetscPrintf(comm, "prefixes: a_ reaches the Tao (lmvm), the Trainer (0 epochs) and its a_train_ Dataset (40 samples); mine_ kept (30)\n"));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(NetDestroy(&net));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* Which Vec the optimizer iterates on (TrainerSetUp()), and the refusal of a point away from a shared solution */
static PetscErrorCode CaseIterate(void)
{
  Trainer  tr;
  Tao      tao;
  Net      net;
  Vec      x, theta;
  TaoType  types[] = {TAOADAM, TAOLMVM};
  PetscInt epochs;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < 2; i++) {
    PetscCall(MakeTrainer(PETSC_COMM_WORLD, types[i], 1, PETSC_FALSE, &tr));
    PetscCall(TrainerSetUp(tr));
    PetscCall(TrainerGetTao(tr, &tao));
    PetscCall(TrainerGetNet(tr, &net));
    PetscCall(TaoGetSolution(tao, &x));
    PetscCall(NetGetParameters(net, &theta));
    PetscCheck((x == theta) == (i == 0), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the solution %s the Net's parameter Vec", types[i], x == theta ? "is" : "is not");
    PetscCall(TrainerTrain(tr));
    PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: %s, epochs trained: %" PetscInt_FMT "\n", types[i], i == 0 ? "iterates on the Net's parameter Vec" : "iterates on a copy", epochs));
    PetscCall(TrainerDestroy(&tr));
  }
  PetscCall(MakeTrainer(PETSC_COMM_WORLD, TAOADAM, 1, PETSC_FALSE, &tr));
  PetscCall(TrainerSetUp(tr));
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoSetType(tao, TAONM));
  PetscCall(TrainerTrain(tr)); /* refused: nm tries points that are not its solution */
  PetscCall(TrainerDestroy(&tr));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      name[64] = "ranks";
  PetscBool match;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", name, sizeof(name), NULL));
  if (PetscStrcmp(name, "ranks", &match), match)
    PetscCall(CaseRanks());
  else if (PetscStrcmp(name, "restart", &match), match)
    PetscCall(CaseRestart());
  else if (PetscStrcmp(name, "gradient", &match), match)
    PetscCall(CaseGradient());
  else if (PetscStrcmp(name, "zero", &match), match)
    PetscCall(CaseZero());
  else if (PetscStrcmp(name, "early", &match), match)
    PetscCall(CaseEarly());
  else if (PetscStrcmp(name, "nan", &match), match)
    PetscCall(CaseNaN());
  else if (PetscStrcmp(name, "explode", &match), match) {
    Explode = PETSC_TRUE;
    PetscCall(CaseNaN());
  } else if (PetscStrcmp(name, "evalonly", &match), match)
    PetscCall(CaseEvalOnly());
  else if (PetscStrcmp(name, "fullbatch", &match), match)
    PetscCall(CaseFullBatch());
  else if (PetscStrcmp(name, "corrupt", &match), match)
    PetscCall(CaseCorrupt());
  else if (PetscStrcmp(name, "resume", &match), match)
    PetscCall(CaseResume());
  else if (PetscStrcmp(name, "prefix", &match), match)
    PetscCall(CasePrefix());
  else if (PetscStrcmp(name, "iterate", &match), match)
    PetscCall(CaseIterate());
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_UNKNOWN_TYPE, "Unknown -case %s", name);
  PetscCall(PetscFinalize());
  return 0;
}
