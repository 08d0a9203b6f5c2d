static const char help[] = "Evaluate a saved model on a dataset: the logits and predicted labels, the loss and the accuracy.\n"
                           "  -net_load FILE            the model (required), written by -net_save or NetSave() (.h5: HDF5, else PETSc binary)\n"
                           "  -predict_output FILE      write logits and labels: .h5 (datasets logits [N][classes], labels [N]) or .csv\n"
                           "  -predict_dataset_type T   idx (default: Fashion-MNIST's t10k split), binary or hdf5 (-predict_dataset_file F)\n"
                           "  -predict_dataset_idx_dir D, -predict_dataset_idx_split train|t10k, -predict_dataset_limit N, ...\n"
                           "  -predict_dataset_hdf5_targets none   an HDF5 file of inputs only: predictions without loss or accuracy\n"
                           "The inputs are normalised as the model was trained unless -predict_dataset_scale/mean/std say otherwise.\n"
                           "Ends with one line: summary: model=FILE samples=N ranks=R [test_loss=L test_accuracy=A] time_s=T\n";

#include <petnet.h>
#include <petnettrainer.h>

int main(int argc, char **argv)
{
  MPI_Comm       comm;
  Dataset        data;
  Net            net;
  Loss           loss;
  Trainer        trainer;
  Vec            Y;
  char           model[PETSC_MAX_PATH_LEN] = "", output[PETSC_MAX_PATH_LEN] = "";
  PetscBool      loadflg;
  PetscInt       N;
  PetscReal      testloss, testacc;
  PetscLogDouble t0, t1;
  PetscMPIInt    size;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-net_load", model, sizeof(model), &loadflg));
  PetscCheck(loadflg && model[0], comm, PETSC_ERR_USER_INPUT, "bin/predict needs a model: give -net_load FILE, a file written by -net_save (e.g. bin/fashion ... -net_save model.h5) or NetSave()");
  PetscOptionsBegin(comm, NULL, "Inference options", NULL);
  PetscCall(PetscOptionsString("-predict_output", "Write the logits and predicted labels to this file (.h5 or .csv)", "TrainerSavePredictions", output, output, sizeof(output), NULL));
  PetscOptionsEnd();

  /* the data: Fashion-MNIST's test split unless the options say otherwise (-predict_dataset_type hdf5 ...) */
  PetscCall(DatasetCreate(comm, &data));
  PetscCall(DatasetSetOptionsPrefix(data, "predict_"));
  PetscCall(DatasetIDXSetDirectory(data, "/usr/share/datasets/fashion-mnist", "t10k"));
  PetscCall(DatasetSetFromOptions(data));

  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetFromOptions(net)); /* -net_load */
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(TrainerCreate(comm, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetFromOptions(trainer)); /* -trainer_eval_batch_size */

  if (output[0]) PetscCall(PetNetCheckWritableFile(comm, output, "-predict_output")); /* before the work */
  PetscCall(PetscTime(&t0));                                                          /* time_s: reading the data, inference, writing the output */
  PetscCall(TrainerPredict(trainer, data, &Y, &testloss, &testacc));
  if (output[0]) PetscCall(TrainerSavePredictions(trainer, Y, output));
  PetscCall(PetscTime(&t1));
  PetscCall(DatasetGetSize(data, &N));
  PetscCall(PetscPrintf(comm, "summary: model=%s samples=%" PetscInt_FMT " ranks=%d", model, N, size));
  if (testacc >= 0)
    PetscCall(PetscPrintf(comm, " test_loss=%.6f test_accuracy=%.4f", (double)testloss, (double)testacc));
  else if (testloss >= 0) /* no loss: a Dataset of inputs only (-predict_dataset_hdf5_targets none) */
    PetscCall(PetscPrintf(comm, " test_loss=%.6f", (double)testloss));
  PetscCall(PetscPrintf(comm, " time_s=%.3f", (double)(t1 - t0)));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(VecDestroy(&Y));
  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&data));
  PetscCall(PetscFinalize());
  return 0;
}
