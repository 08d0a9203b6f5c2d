/*
  Dataset: a source of (input, target) mini-batches, sharded over the ranks.

  SetUp reads the source: every rank reads ONLY its contiguous block of samples (PETSC_DECIDE split of N) into
    inputs  [nlocal][sample]  (sample = h*w*c entries, channels last; PetNetShape)
    targets [nlocal][tsize]   (tsize = 1 for class labels, stored as PetscScalar class numbers)
  and normalizes the inputs: x -> (scale x - mean) / std.

  An epoch is a permutation of 0..N-1 drawn from (seed + epoch) with a PETSCRAND48 PetscRandom, identical on every
  rank, so the global sample order does not depend on the number of ranks (identity without -dataset_shuffle).
  Batch b is the samples perm[b*B .. min((b+1)*B, N)); rank r holds a contiguous part of it, split like
  PETSC_DECIDE splits the batch size. The batch is gathered from the owning ranks with a VecScatter.

  Typical use (TrainerSetDatasets() gives a Dataset without a prefix the prefix "train_" or "test_", and
  TrainerSetFromOptions() reads its options: -train_dataset_limit 1000, -test_dataset_batch_size 500, ...):
    DatasetCreate(comm, &ds); DatasetSetFromOptions(ds); DatasetSetUp(ds);
    for (epoch ...) { DatasetBeginEpoch(ds, epoch); for (b < nbatches) DatasetGetBatch(ds, b, &X, &T); ... }
*/
#pragma once

#include <petnetsys.h>

typedef struct _p_Dataset *Dataset;

typedef const char *DatasetType;
#define DATASETIDX    "idx"    /* MNIST-family IDX files, gzip or plain (-dataset_idx_images, -dataset_idx_labels) */
#define DATASETBINARY "binary" /* PETSc binary file: a Mat (samples x features) or Vec, then a Vec of targets */
#define DATASETHDF5   "hdf5"   /* HDF5 datasets "inputs" and "targets" (names selectable; targets "none": inputs only) */
#define DATASETMEMORY "memory" /* user-supplied Vecs */

PETSC_EXTERN PetscClassId      DATASET_CLASSID;
PETSC_EXTERN PetscFunctionList DatasetList;

PETSC_EXTERN PetscErrorCode DatasetInitializePackage(void);
PETSC_EXTERN PetscErrorCode DatasetFinalizePackage(void);
PETSC_EXTERN PetscErrorCode DatasetRegisterAll(void);
PETSC_EXTERN PetscErrorCode DatasetRegister(const char[], PetscErrorCode (*)(Dataset));

PETSC_EXTERN PetscErrorCode DatasetCreate(MPI_Comm, Dataset *);
PETSC_EXTERN PetscErrorCode DatasetSetType(Dataset, DatasetType);
PETSC_EXTERN PetscErrorCode DatasetGetType(Dataset, DatasetType *);
PETSC_EXTERN PetscErrorCode DatasetSetOptionsPrefix(Dataset, const char[]);
PETSC_EXTERN PetscErrorCode DatasetAppendOptionsPrefix(Dataset, const char[]);
PETSC_EXTERN PetscErrorCode DatasetGetOptionsPrefix(Dataset, const char *[]);
PETSC_EXTERN PetscErrorCode DatasetSetFromOptions(Dataset);
PETSC_EXTERN PetscErrorCode DatasetSetUp(Dataset); /* reads the data: each rank only its share of the samples */
PETSC_EXTERN PetscErrorCode DatasetView(Dataset, PetscViewer);
PETSC_EXTERN PetscErrorCode DatasetViewFromOptions(Dataset, PetscObject, const char[]);
PETSC_EXTERN PetscErrorCode DatasetReset(Dataset); /* frees the data read by SetUp; the settings stay */
PETSC_EXTERN PetscErrorCode DatasetDestroy(Dataset *);

/* Kind-specific sources (each sets the kind if none is set yet; ignored by other kinds) */
PETSC_EXTERN PetscErrorCode DatasetIDXSetFiles(Dataset, const char[], const char[]);                /* images, labels */
PETSC_EXTERN PetscErrorCode DatasetIDXSetDirectory(Dataset, const char[], const char[]);            /* DIR, split "train" or "t10k": DIR/split-images-idx3-ubyte[.gz] */
PETSC_EXTERN PetscErrorCode DatasetFileSetName(Dataset, const char[]);                              /* binary and hdf5: -dataset_file */
PETSC_EXTERN PetscErrorCode DatasetHDF5SetNames(Dataset, const char[], const char[]);               /* -dataset_hdf5_inputs, -dataset_hdf5_targets */
PETSC_EXTERN PetscErrorCode DatasetMemorySetData(Dataset, const PetNetShape *, Vec, PetscInt, Vec); /* inputs [N][sample] and targets [N][tsize] */

/* Settings (all also options with the dataset's prefix, e.g. -train_dataset_limit with prefix "train_") */
PETSC_EXTERN PetscErrorCode DatasetSetLimit(Dataset, PetscInt);  /* -dataset_limit N: use only the first N samples */
PETSC_EXTERN PetscErrorCode DatasetSetOffset(Dataset, PetscInt); /* -dataset_offset S: start at sample S of the source (then the limit) */
PETSC_EXTERN PetscErrorCode DatasetGetOffset(Dataset, PetscInt *);
PETSC_EXTERN PetscErrorCode DatasetSetBatchSize(Dataset, PetscInt); /* -dataset_batch_size B (global); the last batch may be smaller; PETSC_DETERMINE: one batch of all samples */
PETSC_EXTERN PetscErrorCode DatasetGetBatchSize(Dataset, PetscInt *);
PETSC_EXTERN PetscErrorCode DatasetSetShuffle(Dataset, PetscBool);                             /* -dataset_shuffle */
PETSC_EXTERN PetscErrorCode DatasetSetSeed(Dataset, unsigned long);                            /* -dataset_seed */
PETSC_EXTERN PetscErrorCode DatasetSetNormalization(Dataset, PetscReal, PetscReal, PetscReal); /* x -> (scale x - mean)/std: -dataset_scale -dataset_mean -dataset_std */
PETSC_EXTERN PetscErrorCode DatasetGetNormalization(Dataset, PetscReal *, PetscReal *, PetscReal *);
PETSC_EXTERN PetscErrorCode DatasetIsNormalizationSet(Dataset, PetscBool *);     /* set by the user (else the kind's default, or the Net's at evaluation) */
PETSC_EXTERN PetscErrorCode DatasetSetSampleShape(Dataset, const PetNetShape *); /* -dataset_sample_shape 28x28x1: reshape, or give the shape a flat source lacks */
PETSC_EXTERN PetscErrorCode DatasetSetNumClasses(Dataset, PetscInt);             /* -dataset_num_classes C: labels must be integers in [0, C); 0: regression targets */
/* Augmentation of image samples (h x w x c) in DatasetGetBatch(), drawn per (seed, epoch, sample): -dataset_augment_shift S, -dataset_augment_flip */
PETSC_EXTERN PetscErrorCode DatasetSetAugmentation(Dataset, PetscInt, PetscBool);
PETSC_EXTERN PetscErrorCode DatasetGetAugmentation(Dataset, PetscInt *, PetscBool *);
PETSC_EXTERN PetscErrorCode DatasetGetSampleTransform(Dataset, PetscInt, PetscInt, PetscInt *, PetscInt *, PetscBool *); /* epoch, sample -> dy, dx, flip */

/* Queries (after DatasetSetUp) */
PETSC_EXTERN PetscErrorCode DatasetGetSize(Dataset, PetscInt *);           /* global number of samples (after the limit) */
PETSC_EXTERN PetscErrorCode DatasetGetLocalSize(Dataset, PetscInt *);      /* samples stored on this rank */
PETSC_EXTERN PetscErrorCode DatasetGetSampleShape(Dataset, PetNetShape *); /* per-sample input shape, channels last */
PETSC_EXTERN PetscErrorCode DatasetGetTargetSize(Dataset, PetscInt *);     /* entries per target: 1 for class labels */
PETSC_EXTERN PetscErrorCode DatasetGetNumClasses(Dataset, PetscInt *);     /* declared, else 1 + largest label when tsize is 1 and all targets are integers >= 0, else 0 */
PETSC_EXTERN PetscErrorCode DatasetGetNumBatches(Dataset, PetscInt *);
PETSC_EXTERN PetscErrorCode DatasetHasTargets(Dataset, PetscBool *); /* PETSC_FALSE: inputs only (hdf5, -dataset_hdf5_targets none), for inference */
PETSC_EXTERN PetscErrorCode DatasetCheckLabels(Dataset, PetscInt);   /* every target one integer label in [0, C): errors name the file and the sample */

/* Iteration. An epoch is a permutation of the samples drawn from (seed, epoch): the same global order on any number
   of ranks. Batch b is samples perm[b*B .. min((b+1)*B, N)), split over the ranks like PETSC_DECIDE would split them.
   X: [nlocal][sample] and T: [nlocal][tsize] are owned by the Dataset (valid until the next DatasetGetBatch, and
   reused when the batch size is unchanged). Without DatasetBeginEpoch() the order is that of epoch 0. */
PETSC_EXTERN PetscErrorCode DatasetBeginEpoch(Dataset, PetscInt);
PETSC_EXTERN PetscErrorCode DatasetGetEpoch(Dataset, PetscInt *);
PETSC_EXTERN PetscErrorCode DatasetGetBatch(Dataset, PetscInt, Vec *, Vec *);
PETSC_EXTERN PetscErrorCode DatasetGetBatchIndices(Dataset, PetscInt, PetscInt *, const PetscInt *[]); /* this rank's sample numbers (file order) in batch b */
/* All samples in file order as one batch (for full-batch training and evaluation); owned by the Dataset, do not modify. */
PETSC_EXTERN PetscErrorCode DatasetGetAll(Dataset, Vec *, Vec *);
/* Samples first .. first + n - 1 (file order, as normalised) of a set-up Dataset as a new memory Dataset (e.g. a held-out set) */
PETSC_EXTERN PetscErrorCode DatasetCreateSubset(Dataset, PetscInt, PetscInt, Dataset *);
