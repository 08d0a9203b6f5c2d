/* Private: the Dataset object and the contract every dataset kind keeps. */
#pragma once

#include <petnetdataset.h>
#include <petsc/private/petscimpl.h>

PETSC_EXTERN PetscBool     DatasetRegisterAllCalled;
PETSC_EXTERN PetscLogEvent DATASET_Read, DATASET_Epoch, DATASET_Batch;

/*
  A kind reads its source in one op, called by DatasetSetUp():

  load(ds): 1. find how many samples the source holds (nsource), its per-sample shape and target size;
            2. DatasetSetSizes_Private(ds, nsource, &shape, tsize): applies the limit and the user's sample shape,
               and lays the N samples out over the ranks (ds->map, PETSC_DECIDE);
            3. fill ds->inputs [nlocal][F] and ds->targets [nlocal][tsize] with the RAW values of this rank's
               samples ds->map->rstart .. rend-1, which are samples ds->offset + rstart .. of the source: either DatasetCreateStorage_Private() and write the arrays (reading
               only this rank's block), or DatasetCopySamples_Private() from Vecs holding the whole source.
            The interface then normalizes the inputs and infers the number of classes. A kind that references user
            Vecs (memory) copies them instead when the normalization is not the identity.
*/
struct _DatasetOps {
  PetscErrorCode (*setfromoptions)(Dataset, PetscOptionItems *);
  PetscErrorCode (*load)(Dataset);
  PetscErrorCode (*view)(Dataset, PetscViewer);
  PetscErrorCode (*destroy)(Dataset);
};

/* The Vecs of one batch size, kept so that equal-size batches reuse them (full batches and the smaller last one). */
typedef struct {
  PetscInt n; /* global number of samples; 0: unused */
  Vec      X, T;
} DatasetBatchVecs;

struct _p_Dataset {
  PETSCHEADER(struct _DatasetOps);

  /* settings */
  char         *file;      /* binary, hdf5: -dataset_file */
  PetscInt      limit;     /* PETSC_DETERMINE: every sample of the source (from the offset on) */
  PetscInt      offset;    /* the first sample of the source used: samples offset .. offset + limit - 1 (DatasetSetOffset()) */
  PetscInt      batchsize; /* global; PETSC_DETERMINE: one batch of all samples */
  PetscBool     shuffle;
  unsigned long seed;
  PetscReal     scale, mean, std; /* x -> (scale x - mean) / std */
  PetscBool     scaleset;         /* PETSC_FALSE: use the kind's defaultscale (1/255 for idx bytes, 1 otherwise) */
  PetscReal     defaultscale;
  PetscBool     normset;     /* DatasetSetNormalization() was called (an option -dataset_scale/mean/std was given) */
  PetscBool     normfromnet; /* that normalisation was taken from a Net (TrainerPredict(), a test set): checked against the data */
  PetscInt      nclassesset; /* PETSC_DETERMINE: inferred; 0: regression; C > 0: labels checked to lie in [0, C) */
  PetNetShape   shapeset;    /* ndim 0: the source's shape */
  PetscInt      augshift;    /* -dataset_augment_shift S: batches translate images by up to S pixels (datasetaugment.c) */
  PetscBool     augflip;     /* -dataset_augment_flip: batches flip images left-right at random */

  /* what SetUp found */
  PetscBool   setupcalled;
  PetscInt    nsource;    /* samples in the source */
  PetscInt    N;          /* samples used (after the offset and the limit) */
  PetNetShape shape;      /* per-sample input shape */
  PetscInt    F, tsize;   /* entries per sample and per target */
  PetscInt    nclasses;   /* 0: regression targets */
  PetscBool   notargets;  /* the source has inputs only (hdf5 with -dataset_hdf5_targets none): targets are zeros, for inference */
  char       *tsource;    /* where the targets come from (a file name), for error messages; set by the kind */
  char       *xsource;    /* where the inputs come from (a file name), for error messages; set by the kind */
  PetscReal   xmin, xmax; /* the smallest and largest input as read, before the normalisation (DatasetSetUp()) */
  PetscLayout map;        /* the N samples over the ranks (block size 1, PETSC_DECIDE) */
  Vec         inputs;     /* [nlocal][F], file order */
  Vec         targets;    /* [nlocal][tsize], file order */

  /* iteration */
  PetscInt    epoch;
  PetscInt   *order; /* [N]: the sample numbers of this epoch in batch order, identical on every rank */
  PetscRandom rand;  /* PETSCRAND48 on PETSC_COMM_SELF, reseeded with seed + epoch */

  /* Assembling batches. At the first batch of an epoch, one PetscSF (the engine of VecScatter) fetches every sample
     that this rank will need during the epoch but does not store, in the order of use, into recvx/recvt. A batch is
     then copied sample by sample from the local storage or from that buffer: no communication, no allocation. */
  PetscBool        epochready; /* source and recvx/recvt match the current order */
  PetscInt         nepoch;     /* samples of this rank over all the batches of an epoch */
  PetscInt        *source;     /* [nepoch]: s >= 0: local sample s of inputs/targets; s < 0: sample -1-s of recvx/recvt */
  PetscInt         nrecv;
  PetscScalar     *recvx, *recvt; /* [nrecv][F], [nrecv][tsize] */
  DatasetBatchVecs batch[2];

  void *data;
};

/* Helpers for the kinds (src/data/interface/datasetload.c) */
PETSC_INTERN PetscErrorCode DatasetSetSizes_Private(Dataset, PetscInt, const PetNetShape *, PetscInt);
PETSC_INTERN PetscErrorCode DatasetCreateStorage_Private(Dataset);
PETSC_INTERN PetscErrorCode DatasetCopySamples_Private(Dataset, Vec, PetscInt, Vec *);
PETSC_INTERN PetscErrorCode DatasetNormalizationIsIdentity_Private(Dataset, PetscBool *);
PETSC_INTERN PetscErrorCode DatasetNormalize_Private(Dataset);
PETSC_INTERN PetscErrorCode DatasetFindClasses_Private(Dataset);
PETSC_INTERN PetscErrorCode DatasetResetBatches_Private(Dataset);
PETSC_INTERN PetscErrorCode DatasetCheckFile_Private(Dataset, const char[], const char[]);
PETSC_INTERN PetscErrorCode DatasetCheckStorage_Private(Dataset, const char[], const char[], PetscInt64);
PETSC_INTERN PetscErrorCode DatasetCheckFinite_Private(Dataset);
/* Augmentation of the batches (src/data/interface/datasetaugment.c) */
PETSC_INTERN PetscBool      DatasetIsAugmented_Private(Dataset);
PETSC_INTERN PetscErrorCode DatasetCheckAugmentation_Private(Dataset);
PETSC_INTERN void           DatasetAugmentSample_Private(Dataset, PetscInt, const PetscScalar *, PetscScalar *);
