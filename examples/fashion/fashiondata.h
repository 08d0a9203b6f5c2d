/* The packaged Fashion-MNIST as a Trainer's two Datasets: shared by bin/fashion and bin/vit */
#pragma once

#include <petnetdataset.h>

PetscErrorCode FashionCreateDatasets(MPI_Comm, const char[], Dataset *, Dataset *);
