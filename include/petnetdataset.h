/* Dataset: a source of (input, target) mini-batches, sharded over the ranks. */
#pragma once

#include <petnetsys.h>

typedef struct _p_Dataset *Dataset;

typedef const char *DatasetType;
#define DATASETIDX    "idx"    /* MNIST-family IDX files, gzip or plain (-dataset_idx_images, -dataset_idx_labels) */
#define DATASETBINARY "binary" /* PETSc binary file: a Mat (samples x features) or Vec, then a Vec of targets */
#define DATASETHDF5   "hdf5"   /* HDF5 datasets "inputs" and "targets" (names selectable) */
#define DATASETMEMORY "memory" /* user-supplied Vecs */

PETSC_EXTERN PetscClassId      DATASET_CLASSID;
PETSC_EXTERN PetscFunctionList DatasetList;

PETSC_EXTERN PetscErrorCode DatasetInitializePackage(void);
PETSC_EXTERN PetscErrorCode DatasetCreate(MPI_Comm, Dataset *);
PETSC_EXTERN PetscErrorCode DatasetSetType(Dataset, DatasetType);
PETSC_EXTERN PetscErrorCode DatasetGetType(Dataset, DatasetType *);
PETSC_EXTERN PetscErrorCode DatasetSetFromOptions(Dataset);
PETSC_EXTERN PetscErrorCode DatasetSetUp(Dataset); /* reads the data: each rank only its share of the samples */
PETSC_EXTERN PetscErrorCode DatasetView(Dataset, PetscViewer);
PETSC_EXTERN PetscErrorCode DatasetViewFromOptions(Dataset, PetscObject, const char[]);
PETSC_EXTERN PetscErrorCode DatasetDestroy(Dataset *);
PETSC_EXTERN PetscErrorCode DatasetRegister(const char[], PetscErrorCode (*)(Dataset));

/* Kind-specific sources */
PETSC_EXTERN PetscErrorCode DatasetIDXSetFiles(Dataset, const char[], const char[]);    /* images, labels */
PETSC_EXTERN PetscErrorCode DatasetFileSetName(Dataset, const char[]);                 /* binary and hdf5 */
PETSC_EXTERN PetscErrorCode DatasetMemorySetData(Dataset, const PetNetShape *, Vec, PetscInt, Vec); /* inputs [N][sample] and targets [N][tsize] */

/* Settings (all also options with the dataset's prefix, e.g. -train_dataset_limit with prefix "train_") */
PETSC_EXTERN PetscErrorCode DatasetSetLimit(Dataset, PetscInt);        /* -dataset_limit N: use only the first N samples */
PETSC_EXTERN PetscErrorCode DatasetSetBatchSize(Dataset, PetscInt);    /* -dataset_batch_size B (global); the last batch may be smaller */
PETSC_EXTERN PetscErrorCode DatasetSetShuffle(Dataset, PetscBool);     /* -dataset_shuffle */
PETSC_EXTERN PetscErrorCode DatasetSetSeed(Dataset, unsigned long);    /* -dataset_seed */
PETSC_EXTERN PetscErrorCode DatasetSetNormalization(Dataset, PetscReal, PetscReal, PetscReal); /* x -> (scale x - mean)/std: -dataset_scale -dataset_mean -dataset_std */

/* Queries (after DatasetSetUp) */
PETSC_EXTERN PetscErrorCode DatasetGetSize(Dataset, PetscInt *);                /* global number of samples (after the limit) */
PETSC_EXTERN PetscErrorCode DatasetGetSampleShape(Dataset, PetNetShape *);     /* per-sample input shape, channels last */
PETSC_EXTERN PetscErrorCode DatasetGetTargetSize(Dataset, PetscInt *);         /* entries per target: 1 for class labels */
PETSC_EXTERN PetscErrorCode DatasetGetNumClasses(Dataset, PetscInt *);         /* 1 + largest label, or 0 for regression targets */
PETSC_EXTERN PetscErrorCode DatasetGetNumBatches(Dataset, PetscInt *);

/* Iteration. An epoch is a permutation of the samples drawn from (seed, epoch): the same global order on any number
   of ranks. Batch b is samples perm[b*B .. min((b+1)*B, N)), split over the ranks like PETSC_DECIDE would split them.
   X: [nlocal][sample] and T: [nlocal][tsize] are owned by the Dataset (valid until the next DatasetGetBatch). */
PETSC_EXTERN PetscErrorCode DatasetBeginEpoch(Dataset, PetscInt);
PETSC_EXTERN PetscErrorCode DatasetGetBatch(Dataset, PetscInt, Vec *, Vec *);
/* All samples in file order as one batch (for full-batch training and evaluation); owned by the Dataset. */
PETSC_EXTERN PetscErrorCode DatasetGetAll(Dataset, Vec *, Vec *);
