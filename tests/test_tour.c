static const char help[] = "The README's C tour (\"A short tour\"), compiled as written: the lines between the TOUR markers are the\n"
                           "README's code block verbatim (tests/tourcheck keeps them equal). Ends with one line\n"
                           "summary: epochs=... train_samples=... test_samples=... train_batches=... test_accuracy=...\n"
                           "so that the suite checks that the options of the README's tables took effect.\n";

/* TOUR BEGIN */
#include <petnettrainer.h>

Net     net;
Loss    loss;
Dataset train, test;
Trainer trainer;

/* TOUR PAUSE */

int main(int argc, char **argv)
{
  PetscInt  epochs, ntrain, ntest, nbatches;
  PetscReal testacc;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  /* TOUR RESUME */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:256,relu,dense:128,relu,dense:10")); /* or -net_layers ... */
  PetscCall(NetSetFromOptions(net));                                      /* -layer0_dense_init xavier, -net_seed 3, ... */

  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &train)); /* kinds: idx, binary, hdf5, memory */
  PetscCall(DatasetIDXSetDirectory(train, "/usr/share/datasets/fashion-mnist", "train"));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &test));
  PetscCall(DatasetIDXSetDirectory(test, "/usr/share/datasets/fashion-mnist", "t10k"));

  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss)); /* -loss_type crossentropy|mse|l1 */

  PetscCall(TrainerCreate(PETSC_COMM_WORLD, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test)); /* prefixes train_ and test_: -train_dataset_limit */
  PetscCall(TrainerSetFromOptions(trainer));           /* -tao_type adam -tao_adam_lr 1e-3 -trainer_epochs 10 */
  PetscCall(TrainerTrain(trainer));
  /* TOUR END */

  PetscCall(TrainerGetResults(trainer, &epochs, NULL, NULL, &testacc, NULL));
  PetscCall(DatasetGetSize(train, &ntrain));
  PetscCall(DatasetGetSize(test, &ntest));
  PetscCall(DatasetGetNumBatches(train, &nbatches));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: epochs=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " train_batches=%" PetscInt_FMT " test_accuracy=%.4f\n", epochs, ntrain, ntest, nbatches, (double)testacc));
  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(PetscFinalize());
  return 0;
}
