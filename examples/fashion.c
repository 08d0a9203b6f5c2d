static const char help[] = "Train a network on Fashion-MNIST (the packaged IDX files) and report the test accuracy.\n"
                           "The model is an options file, e.g. -options_file share/models/mlp.opts. Datasets use prefixes train_ and test_\n"
                           "(-train_dataset_limit 1000); the Net reads -net_*, the optimizer -tao_*, the Trainer -trainer_*.\n"
                           "-net_save FILE saves the trained Net (.h5: HDF5); bin/predict -net_load FILE evaluates it.\n"
                           "-trainer_population K trains K trainers on K equal parts of the ranks, with tournaments (the manual's Population training).\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnettrainer.h>
#include "fashion/fashiondata.h"

int main(int argc, char **argv)
{
  MPI_Comm    comm, world;
  Dataset     train, test;
  Net         net;
  Loss        loss;
  Trainer     trainer;
  Tao         tao;
  TaoType     taotype;
  char        dir[PETSC_MAX_PATH_LEN] = "/usr/share/datasets/fashion-mnist", model[64] = "model";
  PetscInt    epochs, nparams, Ntrain, Ntest;
  PetscReal   trainloss, testloss, testacc, seconds;
  PetscMPIInt size;
  PetscInt    K;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  world = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(world, &size));
  /* a population (-trainer_population K): every object of this program lives on this rank's trainer's ranks */
  PetscCall(TrainerPopulationSplit(world, NULL, &comm, NULL, &K));
  PetscOptionsBegin(world, NULL, "Fashion-MNIST example", NULL);
  PetscCall(PetscOptionsString("-fashion_dir", "Folder with the IDX files", NULL, dir, dir, sizeof(dir), NULL));
  PetscCall(PetscOptionsString("-fashion_model_name", "Name printed in the summary", NULL, model, model, sizeof(model), NULL));
  PetscOptionsEnd();

  PetscCall(FashionCreateDatasets(comm, dir, &train, &test));

  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "dense:256,relu,dense:128,relu,dense:10"));
  PetscCall(NetSetFromOptions(net));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));

  PetscCall(TrainerCreate(comm, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test));
  if (K > 1) PetscCall(TrainerSetPopulation(trainer, world));
  PetscCall(TrainerSetFromOptions(trainer));
  PetscCall(TrainerTrain(trainer));
  PetscCall(TrainerGetResults(trainer, &epochs, &trainloss, &testloss, &testacc, &seconds));
  /* in a population the summary's losses and sample count are trainer 0's, test_accuracy the winner's */
  if (K > 1) PetscCall(TrainerPopulationGetResults(trainer, NULL, NULL, NULL, &testacc));

  PetscCall(TrainerGetTao(trainer, &tao));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(DatasetGetSize(train, &Ntrain));
  PetscCall(DatasetGetSize(test, &Ntest));
  PetscCall(PetscPrintf(world,
                        "summary: model=%s optimizer=%s epochs=%" PetscInt_FMT " params=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " ranks=%d train_loss=%.6f test_loss=%.6f test_accuracy=%.4f train_time_s=%.2f",
                        model, taotype, epochs, nparams, Ntrain, Ntest, size, (double)trainloss, (double)testloss, (double)testacc, (double)seconds));
  { /* full batch: how many TAO iterations (Newton, quasi-Newton steps) the run took */
    PetscInt its;

    PetscCall(TrainerGetTaoIterations(trainer, &its));
    if (its >= 0) PetscCall(PetscPrintf(world, " tao_iterations=%" PetscInt_FMT, its));
  }
  { /* the threads of each process (-net_threads) */
    PetscInt nthreads;

    PetscCall(PetNetGetNumThreads(&nthreads));
    PetscCall(PetscPrintf(world, " threads=%" PetscInt_FMT, nthreads));
  }
  { /* the precision of the values inside the Net (-net_precision; parameters and gradients are double) */
    NetPrecision precision;

    PetscCall(NetGetPrecision(net, &precision));
    PetscCall(PetscPrintf(world, " precision=%s", NetPrecisions[precision]));
  }
  { /* who runs the float GEMMs (-net_backend; double is always native) */
    NetBackend backend;

    PetscCall(NetGetBackend(net, &backend));
    PetscCall(PetscPrintf(world, " backend=%s", NetBackends[backend]));
  }
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(world, " blas_core=%s", blascore));
  }
  if (K > 1) { /* the population: trainers, models taken in tournaments, the winner and its learning rate */
    PetscInt  winner, exchanges;
    PetscReal lr;

    PetscCall(TrainerPopulationGetResults(trainer, &winner, &exchanges, &lr, NULL));
    PetscCall(PetscPrintf(world, " population=%" PetscInt_FMT " exchanges=%" PetscInt_FMT " winner=%" PetscInt_FMT " winner_lr=%g", K, exchanges, winner, (double)lr));
  }
  PetscCall(PetscPrintf(world, "\n"));

  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCallMPI(MPI_Comm_free(&comm));
  PetscCall(PetscFinalize());
  return 0;
}
