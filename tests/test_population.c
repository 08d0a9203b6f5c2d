static const char help[] = "Population training (src/trainer/population.c) on the Fashion-MNIST IDX files.\n"
                           "  -case exchange : K = 2 trainers, trainer 0 with learning rate 0 (-trainer_population_init lr:0:...:lin):\n"
                           "                   after the tournament of epoch 1 both hold trainer 1's model, bit for bit (parameters, and\n"
                           "                   the buffers: the test losses in evaluation mode are equal); -layers LIST sets the Net\n"
                           "  -case twin     : K = 2 trainers without a tournament before the end (-trainer_tournament_interval larger\n"
                           "                   than -trainer_epochs); each equals, to round-off, the same trainer run alone on its\n"
                           "                   ranks on its shard (DatasetSetOffset(), DatasetSetLimit()); with -trainer_population_data\n"
                           "                   shared, on the whole set: two identical trainers, whose tournaments all end in a\n"
                           "                   tie, so that with -trainer_tournament_unit steps the tournaments inside the epochs\n"
                           "                   must leave training as it is without them\n"
                           "  -case batches  : trainer k with batch size 20 + 10 k and -trainer_tournament_unit steps: refused\n"
                           "  -case hyper    : K trainers (-trainer_population K) with -trainer_population_init/explore: each trainer's\n"
                           "                   hyperparameters read back with the public getters (PetNetTaoSGDGetMomentum(), ...,\n"
                           "                   LossCrossEntropyGetLabelSmoothing()) after TrainerSetUp() (the init spread) and after\n"
                           "                   training (the values the last tournament line printed, explore steps included);\n"
                           "                   with -trainer_population_monitor FILE, rank 0 prints the CSV's rows\n"
                           "  -case subset   : DatasetCreateSubset() of a set-up Dataset holds the same values as a Dataset of the\n"
                           "                   same file with an offset and a limit, bit for bit\n"
                           "Options: -dir (the IDX folder), -limit N (training samples), -tsamples Nt (the tournament set)\n";

#include <petnet.h>
#include <petnettrainer.h>

static char     dir[PETSC_MAX_PATH_LEN] = "/usr/share/datasets/fashion-mnist", layers[256] = "dense:16,relu,dense:10";
static PetscInt batchsize = 20;

/* A small MLP trained with adam, batch 20, 2 epochs (the options may change them); prefix: the Trainer's options prefix;
   lossout (may be NULL): a reference to the Loss */
static PetscErrorCode CreateTrainer(MPI_Comm comm, const char prefix[], PetscInt limit, PetscInt offset, Trainer *tr, Loss *lossout)
{
  Dataset train, test;
  Net     net;
  Loss    loss;
  Tao     tao;

  PetscFunctionBegin;
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetIDXSetDirectory(train, dir, "train"));
  PetscCall(DatasetSetLimit(train, limit));
  if (offset) PetscCall(DatasetSetOffset(train, offset));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetSeed(train, 1));
  PetscCall(DatasetSetBatchSize(train, batchsize));
  PetscCall(DatasetCreate(comm, &test));
  PetscCall(DatasetIDXSetDirectory(test, dir, "t10k"));
  PetscCall(DatasetSetLimit(test, 200));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetSeed(net, 3));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(TrainerCreate(comm, tr));
  if (prefix) PetscCall(TrainerSetOptionsPrefix(*tr, prefix));
  PetscCall(TrainerSetEpochs(*tr, 2));
  PetscCall(TrainerGetTao(*tr, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(TrainerSetNet(*tr, net));
  PetscCall(TrainerSetLoss(*tr, loss));
  PetscCall(TrainerSetDatasets(*tr, train, test));
  PetscCall(NetDestroy(&net));
  if (lossout) {
    PetscCall(PetscObjectReference((PetscObject)loss));
    *lossout = loss;
  }
  PetscCall(LossDestroy(&loss));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscFunctionReturn(0);
}

/* the largest |a_i - b_i| / max(1, |a_i|) over this rank's entries of two Vecs of one layout, over comm */
static PetscErrorCode MaxRelDiff(MPI_Comm comm, PetscInt n, const PetscScalar *a, const PetscScalar *b, PetscReal *d, PetscBool *bitwise)
{
  PetscInt same = 1;

  PetscFunctionBegin;
  *d = 0;
  for (PetscInt i = 0; i < n; i++) {
    *d = PetscMax(*d, PetscAbsScalar(a[i] - b[i]) / PetscMax(1.0, PetscAbsScalar(a[i])));
    if (memcmp(&a[i], &b[i], sizeof(PetscScalar))) same = 0;
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, d, 1, MPIU_REAL, MPI_MAX, comm));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &same, 1, MPIU_INT, MPI_MIN, comm));
  *bitwise = same ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* One line per trainer, in trainer order (rank 0 of each prints): every real hyperparameter of its optimizer and loss,
   read with the public getters, printed as the tournament line prints them (%.6g) */
static PetscErrorCode PrintHyper(MPI_Comm world, Trainer tr, Loss loss, PetscInt k, const char when[])
{
  Tao         tao;
  const char *type;
  PetscReal   v[4];
  PetscBool   has, sgd, adam, rmsprop, kfac;
  PetscMPIInt trank;
  char        line[512];
  size_t      len;

  PetscFunctionBegin;
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoGetType(tao, &type));
  PetscCall(PetNetTaoGetLearningRate(tao, &v[0]));
  PetscCall(PetNetTaoGetWeightDecay(tao, &v[1]));
  PetscCall(PetscSNPrintf(line, sizeof(line), "%s, trainer %" PetscInt_FMT " (%s): lr %.6g wd %.6g", when, k, type, (double)v[0], (double)v[1]));
  PetscCall(PetscStrlen(line, &len));
  PetscCall(PetscObjectTypeCompare((PetscObject)tao, TAOSGD, &sgd));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tao, &adam, TAOADAM, TAOADAMW, ""));
  PetscCall(PetscObjectTypeCompare((PetscObject)tao, TAORMSPROP, &rmsprop));
  PetscCall(PetscObjectTypeCompare((PetscObject)tao, TAOKFAC, &kfac));
  if (sgd) {
    PetscCall(PetNetTaoSGDGetMomentum(tao, &v[0]));
    PetscCall(PetNetTaoSGDGetDampening(tao, &v[1]));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " momentum %.6g dampening %.6g", (double)v[0], (double)v[1]));
  } else if (adam) {
    PetscCall(PetNetTaoAdamGetBetas(tao, &v[0], &v[1]));
    PetscCall(PetNetTaoAdamGetEpsilon(tao, &v[2]));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " beta1 %.6g beta2 %.6g eps %.6g", (double)v[0], (double)v[1], (double)v[2]));
  } else if (rmsprop) {
    PetscCall(PetNetTaoRMSpropGetAlpha(tao, &v[0]));
    PetscCall(PetNetTaoRMSpropGetEpsilon(tao, &v[1]));
    PetscCall(PetNetTaoRMSpropGetMomentum(tao, &v[2]));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " alpha %.6g eps %.6g momentum %.6g", (double)v[0], (double)v[1], (double)v[2]));
  } else if (kfac) {
    PetscCall(PetNetTaoKFACGetDamping(tao, &v[0]));
    PetscCall(PetNetTaoKFACGetStatDecay(tao, &v[1]));
    PetscCall(PetNetTaoKFACGetMomentum(tao, &v[2]));
    PetscCall(PetNetTaoKFACGetKLClip(tao, &v[3]));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " damping %.6g stat_decay %.6g momentum %.6g kl_clip %.6g", (double)v[0], (double)v[1], (double)v[2], (double)v[3]));
  }
  PetscCall(PetNetTaoGetLRStep(tao, NULL, &v[0]));
  PetscCall(PetNetTaoGetLRCosine(tao, NULL, &v[1]));
  PetscCall(PetscStrlen(line, &len));
  PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " gamma %.6g lr_min %.6g", (double)v[0], (double)v[1]));
  PetscCall(LossCrossEntropyGetLabelSmoothing(loss, &has, &v[0]));
  PetscCall(PetscStrlen(line, &len));
  if (has) PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " smoothing %.6g", (double)v[0]));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)tr), &trank));
  if (trank == 0) PetscCall(PetscSynchronizedPrintf(world, "%s\n", line));
  PetscCall(PetscSynchronizedFlush(world, PETSC_STDOUT));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char        tcase[32] = "exchange";
  PetscInt    limit = 400, tsamples = 50, k, K;
  MPI_Comm    world, sub;
  PetscMPIInt size, rank;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  world = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(world, &size));
  PetscCallMPI(MPI_Comm_rank(world, &rank));
  PetscOptionsBegin(world, NULL, "test_population", NULL);
  PetscCall(PetscOptionsString("-case", "exchange, twin, hyper, subset or batches", NULL, tcase, tcase, sizeof(tcase), NULL));
  PetscCall(PetscOptionsString("-dir", "IDX folder", NULL, dir, dir, sizeof(dir), NULL));
  PetscCall(PetscOptionsString("-layers", "the Net's layer list", NULL, layers, layers, sizeof(layers), NULL));
  PetscCall(PetscOptionsInt("-limit", "training samples", NULL, limit, &limit, NULL));
  PetscCall(PetscOptionsInt("-tsamples", "tournament samples", NULL, tsamples, &tsamples, NULL));
  PetscOptionsEnd();

  if (!strcmp(tcase, "subset")) { /* a subset of a Dataset == the same file with an offset and a limit */
    Dataset            a, b, s;
    Vec                X, T, Xs, Ts;
    PetscInt           first = 123, n = 77, nx, nt;
    PetscReal          dx, dt;
    PetscBool          bx, bt;
    const PetscScalar *x, *xs, *t, *ts;

    PetscCall(DatasetCreate(world, &a));
    PetscCall(DatasetIDXSetDirectory(a, dir, "train"));
    PetscCall(DatasetSetLimit(a, 300));
    PetscCall(DatasetSetOffset(a, 50));
    PetscCall(DatasetCreateSubset(a, first, n, &s));
    PetscCall(DatasetCreate(world, &b));
    PetscCall(DatasetIDXSetDirectory(b, dir, "train"));
    PetscCall(DatasetSetOffset(b, 50 + first));
    PetscCall(DatasetSetLimit(b, n));
    PetscCall(DatasetSetUp(b));
    PetscCall(DatasetGetAll(b, &X, &T));
    PetscCall(DatasetGetAll(s, &Xs, &Ts));
    PetscCall(VecGetLocalSize(X, &nx));
    PetscCall(VecGetLocalSize(T, &nt));
    PetscCall(VecGetArrayRead(X, &x));
    PetscCall(VecGetArrayRead(Xs, &xs));
    PetscCall(VecGetArrayRead(T, &t));
    PetscCall(VecGetArrayRead(Ts, &ts));
    PetscCall(MaxRelDiff(world, nx, x, xs, &dx, &bx));
    PetscCall(MaxRelDiff(world, nt, t, ts, &dt, &bt));
    PetscCall(VecRestoreArrayRead(X, &x));
    PetscCall(VecRestoreArrayRead(Xs, &xs));
    PetscCall(VecRestoreArrayRead(T, &t));
    PetscCall(VecRestoreArrayRead(Ts, &ts));
    PetscCall(DatasetGetSize(s, &nx));
    PetscCall(PetscPrintf(world, "subset of %" PetscInt_FMT " samples from %" PetscInt_FMT ": inputs identical %s, labels identical %s\n", nx, first, bx ? "yes" : "no", bt ? "yes" : "no"));
    PetscCheck(bx && bt, world, PETSC_ERR_PLIB, "the subset differs from the offset Dataset (inputs %g, labels %g)", (double)dx, (double)dt);
    PetscCall(DatasetDestroy(&a));
    PetscCall(DatasetDestroy(&b));
    PetscCall(DatasetDestroy(&s));
    PetscCall(PetscFinalize());
    return 0;
  }

  PetscCall(TrainerPopulationSplit(world, NULL, &sub, &k, &K));
  PetscCheck(K == 2 || !strcmp(tcase, "hyper"), world, PETSC_ERR_ARG_WRONG, "run with -trainer_population 2");
  if (!strcmp(tcase, "exchange")) { /* both trainers hold trainer 1's model after the tournament */
    Trainer            tr;
    Vec                theta;
    PetscInt           n, exchanges, winner;
    PetscScalar       *other;
    const PetscScalar *a;
    PetscReal          d;
    PetscBool          bitwise;
    PetscMPIInt        partner = (PetscMPIInt)((1 - k) * (size / 2) + rank % (size / 2)), m;
    PetscInt           same;

    PetscCall(CreateTrainer(sub, NULL, limit, 0, &tr, NULL));
    PetscCall(TrainerSetPopulation(tr, world));
    PetscCall(TrainerSetFromOptions(tr));
    PetscCall(TrainerTrain(tr));
    PetscCall(TrainerPopulationGetResults(tr, &winner, &exchanges, NULL, NULL));
    {
      Net net;

      PetscCall(TrainerGetNet(tr, &net));
      PetscCall(NetGetParameters(net, &theta));
    }
    PetscCall(VecGetLocalSize(theta, &n));
    PetscCall(PetscMPIIntCast(n, &m));
    PetscCall(PetscMalloc1(n, &other));
    PetscCall(VecGetArrayRead(theta, &a));
    PetscCallMPI(MPI_Sendrecv(a, m, MPIU_SCALAR, partner, 0, other, m, MPIU_SCALAR, partner, 0, world, MPI_STATUS_IGNORE));
    PetscCall(MaxRelDiff(world, n, a, other, &d, &bitwise));
    PetscCall(VecRestoreArrayRead(theta, &a));
    { /* the test loss in evaluation mode: the same bits only if the buffers (batchnorm's running statistics) moved too */
      PetscReal testloss, ptestloss;

      PetscCall(TrainerGetResults(tr, NULL, NULL, &testloss, NULL, NULL));
      PetscCallMPI(MPI_Sendrecv(&testloss, 1, MPIU_REAL, partner, 1, &ptestloss, 1, MPIU_REAL, partner, 1, world, MPI_STATUS_IGNORE));
      same = testloss == ptestloss ? 1 : 0;
      PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &same, 1, MPIU_INT, MPI_MIN, world));
    }
    PetscCall(PetscPrintf(world, "exchanges %" PetscInt_FMT ", winner %" PetscInt_FMT ", the two trainers' parameters identical bit for bit: %s, test losses identical: %s\n", exchanges, winner, bitwise ? "yes" : "no", same ? "yes" : "no"));
    PetscCheck(bitwise && same && exchanges == 1, world, PETSC_ERR_PLIB, "after the tournament the trainers differ (max relative difference %g, test losses the same: %d) or %" PetscInt_FMT " exchanges, not 1", (double)d, (int)same, exchanges);
    PetscCall(PetscFree(other));
    PetscCall(TrainerDestroy(&tr));
  } else if (!strcmp(tcase, "twin")) { /* a trainer of the population == the same trainer alone on its shard */
    Trainer            tr, alone;
    Net                net, netalone;
    Vec                theta, thetaalone;
    PetscInt           n, S = limit / 2, offset, epochs;
    char               data[32] = "disjoint";
    PetscReal          loss, lossalone, d;
    PetscBool          bitwise;
    const PetscScalar *a, *b;

    PetscCall(CreateTrainer(sub, NULL, limit, 0, &tr, NULL));
    PetscCall(TrainerSetPopulation(tr, world));
    PetscCall(TrainerSetFromOptions(tr));
    PetscCall(TrainerTrain(tr));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-trainer_population_data", data, sizeof(data), NULL));
    if (!strcmp(data, "shared")) S = limit; /* every trainer on the whole set */
    offset = !strcmp(data, "shared") ? 0 : k * S;
    PetscCall(CreateTrainer(sub, "alone_", S - tsamples, offset, &alone, NULL));
    PetscCall(TrainerSetFromOptions(alone));
    PetscCall(TrainerTrain(alone));
    PetscCall(TrainerGetResults(tr, &epochs, &loss, NULL, NULL, NULL));
    PetscCall(TrainerGetResults(alone, NULL, &lossalone, NULL, NULL, NULL));
    PetscCall(TrainerGetNet(tr, &net));
    PetscCall(TrainerGetNet(alone, &netalone));
    PetscCall(NetGetParameters(net, &theta));
    PetscCall(NetGetParameters(netalone, &thetaalone));
    PetscCall(VecGetLocalSize(theta, &n));
    PetscCall(VecGetArrayRead(theta, &a));
    PetscCall(VecGetArrayRead(thetaalone, &b));
    PetscCall(MaxRelDiff(world, n, a, b, &d, &bitwise));
    PetscCall(VecRestoreArrayRead(theta, &a));
    PetscCall(VecRestoreArrayRead(thetaalone, &b));
    lossalone = PetscAbsReal(loss - lossalone) / PetscAbsReal(loss);
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &lossalone, 1, MPIU_REAL, MPI_MAX, world));
    PetscCall(PetscPrintf(world, "after %" PetscInt_FMT " epochs each trainer equals its twin trained alone: parameters to 1e-12 %s, training loss to 1e-12 %s\n", epochs, d <= 1e-12 ? "yes" : "no", lossalone <= 1e-12 ? "yes" : "no"));
    PetscCheck(d <= 1e-12 && lossalone <= 1e-12, world, PETSC_ERR_PLIB, "a trainer differs from its twin: parameters by %g, training loss by %g (relative)", (double)d, (double)lossalone);
    PetscCall(TrainerDestroy(&tr));
    PetscCall(TrainerDestroy(&alone));
  } else if (!strcmp(tcase, "hyper")) { /* the population's values reach the optimizer and the loss */
    Trainer tr;
    Loss    loss;

    PetscCall(CreateTrainer(sub, NULL, limit, 0, &tr, &loss));
    PetscCall(TrainerSetPopulation(tr, world));
    PetscCall(TrainerSetFromOptions(tr));
    PetscCall(TrainerSetUp(tr));
    PetscCall(PrintHyper(world, tr, loss, k, "after set-up"));
    PetscCall(TrainerTrain(tr));
    PetscCall(PrintHyper(world, tr, loss, k, "after training"));
    { /* -trainer_population_monitor FILE (one file): its rows, a column for each hyperparameter searched after lr */
      char      csv[PETSC_MAX_PATH_LEN], row[1024];
      PetscBool set;
      FILE     *fp;

      PetscCall(PetscOptionsGetString(NULL, NULL, "-trainer_population_monitor", csv, sizeof(csv), &set));
      if (set && rank == 0) {
        PetscCall(PetscFOpen(PETSC_COMM_SELF, csv, "r", &fp));
        while (fgets(row, sizeof(row), fp)) PetscCall(PetscPrintf(PETSC_COMM_SELF, "csv: %s", row));
        PetscCall(PetscFClose(PETSC_COMM_SELF, fp));
      }
    }
    PetscCall(LossDestroy(&loss));
    PetscCall(TrainerDestroy(&tr));
  } else if (!strcmp(tcase, "batches")) { /* trainers that take different numbers of steps per epoch */
    Trainer tr;

    batchsize = 20 + 10 * k;
    PetscCall(CreateTrainer(sub, NULL, limit, 0, &tr, NULL));
    PetscCall(TrainerSetPopulation(tr, world));
    PetscCall(TrainerSetFromOptions(tr));
    PetscCall(TrainerSetUp(tr));
    PetscCall(TrainerDestroy(&tr));
  } else
    SETERRQ(world, PETSC_ERR_ARG_WRONG, "unknown -case %s", tcase);
  PetscCallMPI(MPI_Comm_free(&sub));
  PetscCall(PetscFinalize());
  return 0;
}
