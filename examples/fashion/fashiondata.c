#include "fashiondata.h"

/*
  FashionCreateDatasets - the training set (prefix train_, shuffled) and the test set (prefix test_) of the IDX files
  in dir, each with its options read (-train_dataset_limit, -train_dataset_augment_flip, -test_dataset_limit, ...)

  The files are dir/train-images-idx3-ubyte.gz, dir/train-labels-idx1-ubyte.gz, dir/t10k-images-idx3-ubyte.gz and
  dir/t10k-labels-idx1-ubyte.gz; they are read at DatasetSetUp() (the Trainer's set-up), not here.
*/
PetscErrorCode FashionCreateDatasets(MPI_Comm comm, const char dir[], Dataset *train, Dataset *test)
{
  const char *split[2] = {"train", "t10k"}, *prefix[2] = {"train_", "test_"};
  Dataset    *ds[2] = {train, test};

  PetscFunctionBegin;
  for (int k = 0; k < 2; k++) {
    char images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];

    PetscCall(DatasetCreate(comm, ds[k]));
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*ds[k], prefix[k]));
    PetscCall(DatasetSetType(*ds[k], DATASETIDX));
    PetscCall(PetscSNPrintf(images, sizeof(images), "%s/%s-images-idx3-ubyte.gz", dir, split[k]));
    PetscCall(PetscSNPrintf(labels, sizeof(labels), "%s/%s-labels-idx1-ubyte.gz", dir, split[k]));
    PetscCall(DatasetIDXSetFiles(*ds[k], images, labels));
    if (!k) PetscCall(DatasetSetShuffle(*ds[k], PETSC_TRUE)); /* the training set: a new order every epoch */
    PetscCall(DatasetSetFromOptions(*ds[k]));
  }
  PetscFunctionReturn(0);
}
