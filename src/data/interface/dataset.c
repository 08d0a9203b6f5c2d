/* Dataset: lifecycle, options, settings, queries and viewing. */
#include <petnet/private/datasetimpl.h>
#include <stdlib.h>

/*@
  DatasetCreate - creates a Dataset, a source of (input, target) mini-batches sharded over the ranks

  Collective

  Input Parameter:
. comm - the communicator over which the samples are distributed

  Output Parameter:
. dataset - the new Dataset: batch size 128, no shuffle, seed 0, no limit, the kind's default normalization

  Notes:
  Pick its kind with DatasetSetType() or -dataset_type (idx, binary, hdf5, memory); without one, DatasetSetUp() picks
  hdf5 or binary from the file name (DatasetFileSetName()), else idx.

  Level: beginner

.seealso: `DatasetSetType()`, `DatasetSetFromOptions()`, `DatasetSetUp()`, `DatasetGetBatch()`, `DatasetDestroy()`
@*/
PetscErrorCode DatasetCreate(MPI_Comm comm, Dataset *dataset)
{
  Dataset ds;

  PetscFunctionBegin;
  PetscValidPointer(dataset, 2);
  PetscCall(DatasetInitializePackage());
  PetscCall(PetscHeaderCreate(ds, DATASET_CLASSID, "Dataset", "Source of mini-batches", "Dataset", comm, DatasetDestroy, DatasetView));
  ds->limit        = PETSC_DETERMINE;
  ds->batchsize    = 128;
  ds->shuffle      = PETSC_FALSE;
  ds->seed         = 0;
  ds->scale        = 1.0;
  ds->mean         = 0.0;
  ds->std          = 1.0;
  ds->defaultscale = 1.0;
  ds->nclassesset  = PETSC_DETERMINE;
  *dataset         = ds;
  PetscFunctionReturn(0);
}

/*@C
  DatasetSetType - sets the kind of source of a Dataset

  Collective on ds

  Input Parameters:
+ ds   - the Dataset
- type - `DATASETIDX`, `DATASETBINARY`, `DATASETHDF5`, `DATASETMEMORY`, or a kind added with DatasetRegister()

  Options Database Key:
. -dataset_type <idx,binary,hdf5,memory> - the kind

  Notes:
  Changing the kind frees the data read and the previous kind's settings (idx file names, hdf5 dataset names, user
  Vecs); the common settings, -dataset_file included, stay.

  Level: beginner

.seealso: `DatasetGetType()`, `DatasetRegister()`, `DatasetCreate()`, `DatasetSetFromOptions()`
@*/
PetscErrorCode DatasetSetType(Dataset ds, DatasetType type)
{
  PetscErrorCode (*create)(Dataset);
  PetscBool match;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidCharPointer(type, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)ds, type, &match));
  if (match) PetscFunctionReturn(0);
  PetscCall(PetscFunctionListFind(DatasetList, type, &create));
  PetscCheck(create, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_UNKNOWN_TYPE, "Unknown dataset type \"%s\": use -dataset_type idx, binary, hdf5 or memory, or register your own with DatasetRegister()", type);
  PetscCall(DatasetReset(ds));
  PetscTryTypeMethod(ds, destroy);
  PetscCall(PetscMemzero(ds->ops, sizeof(struct _DatasetOps)));
  ds->data         = NULL;
  ds->defaultscale = 1.0;
  PetscCall(PetscObjectChangeTypeName((PetscObject)ds, type));
  PetscCall((*create)(ds));
  PetscFunctionReturn(0);
}

/*@C
  DatasetGetType - gets the kind of source of a Dataset

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. type - the kind, NULL when none is set yet

  Level: beginner

.seealso: `DatasetSetType()`
@*/
PetscErrorCode DatasetGetType(Dataset ds, DatasetType *type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidPointer(type, 2);
  *type = ((PetscObject)ds)->type_name;
  PetscFunctionReturn(0);
}

/*@C
  DatasetSetOptionsPrefix - sets the prefix of all the Dataset's options

  Logically collective on ds

  Input Parameters:
+ ds     - the Dataset
- prefix - the prefix, e.g. "train_" for -train_dataset_limit (no leading '-')

  Level: intermediate

.seealso: `DatasetAppendOptionsPrefix()`, `DatasetSetFromOptions()`, `TrainerSetDatasets()`
@*/
PetscErrorCode DatasetSetOptionsPrefix(Dataset ds, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)ds, prefix));
  PetscFunctionReturn(0);
}

/*@C
  DatasetAppendOptionsPrefix - appends to the prefix of all the Dataset's options

  Logically collective on ds

  Input Parameters:
+ ds     - the Dataset
- prefix - the text to append (no leading '-')

  Level: intermediate

.seealso: `DatasetSetOptionsPrefix()`, `DatasetSetFromOptions()`
@*/
PetscErrorCode DatasetAppendOptionsPrefix(Dataset ds, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)ds, prefix));
  PetscFunctionReturn(0);
}

/*@C
  DatasetGetOptionsPrefix - the prefix of the Dataset's options ("train_" for -train_dataset_limit).

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. prefix - the prefix (NULL when none was set); owned by the Dataset

  Level: intermediate

.seealso: `DatasetSetOptionsPrefix()`, `DatasetAppendOptionsPrefix()`, `TrainerSetDatasets()`
@*/
PetscErrorCode DatasetGetOptionsPrefix(Dataset ds, const char *prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidPointer(prefix, 2);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)ds, prefix));
  PetscFunctionReturn(0);
}

/* The kind a Dataset gets when none was chosen: a file name picks hdf5 (.h5, .hdf5) or binary, otherwise idx. */
static PetscErrorCode DatasetDefaultType_Private(Dataset ds, DatasetType *type)
{
  PetscBool h5 = PETSC_FALSE, hdf5 = PETSC_FALSE;

  PetscFunctionBegin;
  *type = DATASETIDX;
  if (!ds->file) PetscFunctionReturn(0);
  PetscCall(PetscStrendswith(ds->file, ".h5", &h5));
  PetscCall(PetscStrendswith(ds->file, ".hdf5", &hdf5));
  *type = (h5 || hdf5) ? DATASETHDF5 : DATASETBINARY;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetFromOptions - sets the kind and settings of a Dataset from the options database

  Collective on ds

  Input Parameter:
. ds - the Dataset

  Options Database Keys:
+ -dataset_type <idx,binary,hdf5,memory> - the kind (default: from -dataset_file's name, else idx)
. -dataset_file <file>               - PETSc binary or HDF5 file (binary and hdf5 kinds)
. -dataset_limit <n>                 - use only the first n samples (-1: all)
. -dataset_offset <0>                - start at this sample of the source (samples offset .. offset + limit - 1)
. -dataset_batch_size <128>          - global mini-batch size (-1: all samples in one batch)
. -dataset_shuffle                   - draw a new sample order every epoch
. -dataset_seed <0>                  - seed of the shuffle (epoch e uses seed + e)
. -dataset_scale <s>                 - inputs x -> (s x - mean) / std (idx default 1/255, else 1)
. -dataset_mean <0>                  - see -dataset_scale
. -dataset_std <1>                   - see -dataset_scale
. -dataset_sample_shape <784|28x28x1> - per-sample input shape, channels last
- -dataset_num_classes <C>           - labels must be integers in [0, C); 0: regression targets

  Notes:
  All with the Dataset's prefix; the kind adds its own (-dataset_idx_images, -dataset_hdf5_inputs, ...).

  Level: beginner

.seealso: `DatasetSetType()`, `DatasetSetUp()`, `DatasetSetOptionsPrefix()`, `DatasetView()`
@*/
PetscErrorCode DatasetSetFromOptions(Dataset ds)
{
  char        type[256], file[PETSC_MAX_PATH_LEN], shape[64] = "";
  DatasetType deftype;
  PetscInt    limit = ds->limit, offset = ds->offset, bs = ds->batchsize, seed = (PetscInt)ds->seed, nclasses = ds->nclassesset;
  PetscReal   scale, mean = ds->mean, std = ds->std;
  PetscBool   flg, shuffle = ds->shuffle, set, sset = PETSC_FALSE, mset = PETSC_FALSE, dset = PETSC_FALSE;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)ds);
  PetscCall(PetscOptionsString("-dataset_file", "PETSc binary or HDF5 file holding the inputs and targets", "DatasetFileSetName", ds->file ? ds->file : "", file, sizeof(file), &flg));
  if (flg) PetscCall(DatasetFileSetName(ds, file));
  PetscCall(DatasetDefaultType_Private(ds, &deftype));
  PetscCall(PetscOptionsFList("-dataset_type", "Kind of dataset", "DatasetSetType", DatasetList, ((PetscObject)ds)->type_name ? ((PetscObject)ds)->type_name : deftype, type, sizeof(type), &flg));
  if (flg)
    PetscCall(DatasetSetType(ds, type));
  else if (!((PetscObject)ds)->type_name)
    PetscCall(DatasetSetType(ds, deftype));
  scale = ds->scaleset ? ds->scale : ds->defaultscale;
  PetscCall(PetNetOptionsInt("-dataset_limit", "Use only the first N samples of the source (-1: all)", "DatasetSetLimit", limit, &limit, &flg));
  if (flg) PetscCall(DatasetSetLimit(ds, limit));
  PetscCall(PetNetOptionsInt("-dataset_offset", "Start at this sample of the source (then the limit)", "DatasetSetOffset", offset, &offset, &flg));
  if (flg) PetscCall(DatasetSetOffset(ds, offset));
  PetscCall(PetNetOptionsInt("-dataset_batch_size", "Global mini-batch size (-1: all samples in one batch)", "DatasetSetBatchSize", bs, &bs, &flg));
  if (flg) PetscCall(DatasetSetBatchSize(ds, bs));
  PetscCall(PetscOptionsBool("-dataset_shuffle", "Draw a new sample order every epoch", "DatasetSetShuffle", shuffle, &shuffle, &flg));
  if (flg) PetscCall(DatasetSetShuffle(ds, shuffle));
  PetscCall(PetNetOptionsInt("-dataset_seed", "Seed of the shuffle (epoch e uses seed + e)", "DatasetSetSeed", seed, &seed, &flg));
  PetscCheck(!flg || seed >= 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The shuffle seed (-%sdataset_seed) must be non-negative, not %" PetscInt_FMT, ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", seed);
  if (flg) PetscCall(DatasetSetSeed(ds, (unsigned long)seed));
  PetscCall(PetscOptionsReal("-dataset_scale", "Inputs x -> (scale x - mean) / std (idx default 1/255)", "DatasetSetNormalization", scale, &scale, &sset));
  PetscCall(PetscOptionsReal("-dataset_mean", "Inputs x -> (scale x - mean) / std", "DatasetSetNormalization", mean, &mean, &mset));
  PetscCall(PetscOptionsReal("-dataset_std", "Inputs x -> (scale x - mean) / std", "DatasetSetNormalization", std, &std, &dset));
  if (sset || mset || dset) PetscCall(DatasetSetNormalization(ds, sset ? scale : (ds->scaleset ? ds->scale : PETSC_DEFAULT), mean, std));
  if (ds->shapeset.ndim) PetscCall(PetNetShapeToString(&ds->shapeset, sizeof(shape), shape));
  PetscCall(PetscOptionsString("-dataset_sample_shape", "Per-sample input shape, e.g. 784, 28x28x1 (h x w x c) or 16x32x32x4 (d x h x w x c)", "DatasetSetSampleShape", shape, shape, sizeof(shape), &set));
  if (set) {
    PetNetShape s;

    PetscCall(PetNetShapeFromString(shape, &s));
    PetscCall(DatasetSetSampleShape(ds, &s));
  }
  {
    PetscInt  shift = ds->augshift;
    PetscBool flip  = ds->augflip, sflg, fflg;

    PetscCall(PetNetOptionsInt("-dataset_augment_shift", "Batches translate image samples by up to this many pixels, zero fill (0: no shift)", "DatasetSetAugmentation", shift, &shift, &sflg));
    PetscCall(PetscOptionsBool("-dataset_augment_flip", "Batches flip image samples left-right at random", "DatasetSetAugmentation", flip, &flip, &fflg));
    if (sflg || fflg) PetscCall(DatasetSetAugmentation(ds, shift, flip));
  }
  PetscCall(PetNetOptionsInt("-dataset_num_classes", "Number of classes C (labels checked to lie in [0,C)); 0: regression targets", "DatasetSetNumClasses", nclasses, &nclasses, &flg));
  if (flg) PetscCall(DatasetSetNumClasses(ds, nclasses));
  PetscTryTypeMethod(ds, setfromoptions, PetscOptionsObject);
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)ds, PetscOptionsObject));
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}

/*@
  DatasetSetUp - reads the source, each rank only its share of the samples, normalizes the inputs and finds the
  number of classes

  Collective on ds

  Input Parameter:
. ds - the Dataset

  Options Database Key:
. -dataset_view - prints the Dataset once it is set up

  Notes:
  Runs once: a later call does nothing until a setting that changes what is read (file, limit, shape, normalization,
  classes) or DatasetReset() undoes it. Draws the order of epoch 0. The queries (DatasetGetSize(), ...) need it;
  DatasetGetBatch() calls it.

  Level: beginner

.seealso: `DatasetSetFromOptions()`, `DatasetReset()`, `DatasetGetBatch()`, `DatasetView()`
@*/
PetscErrorCode DatasetSetUp(Dataset ds)
{
  DatasetType type;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (ds->setupcalled) PetscFunctionReturn(0);
  if (!((PetscObject)ds)->type_name) {
    PetscCall(DatasetDefaultType_Private(ds, &type));
    PetscCall(DatasetSetType(ds, type));
  }
  PetscCall(PetscLogEventBegin(DATASET_Read, ds, 0, 0, 0));
  PetscUseTypeMethod(ds, load);
  PetscCheck(ds->map && ds->inputs && ds->targets, PetscObjectComm((PetscObject)ds), PETSC_ERR_PLIB, "Dataset kind %s did not load its samples", ((PetscObject)ds)->type_name);
  PetscCall(DatasetCheckFinite_Private(ds));
  PetscCall(DatasetNormalize_Private(ds));
  if (ds->notargets)
    ds->nclasses = 0;
  else
    PetscCall(DatasetFindClasses_Private(ds));
  PetscCall(PetscLogEventEnd(DATASET_Read, ds, 0, 0, 0));
  ds->setupcalled = PETSC_TRUE;
  PetscCall(DatasetBeginEpoch(ds, 0));
  PetscCall(DatasetViewFromOptions(ds, NULL, "-dataset_view"));
  PetscFunctionReturn(0);
}

/*@
  DatasetView - prints the kind, source, sizes, batching and normalization of a Dataset

  Collective on ds

  Input Parameters:
+ ds     - the Dataset
- viewer - an ASCII viewer (NULL: standard output of the Dataset's communicator); other viewers print nothing

  Level: beginner

.seealso: `DatasetViewFromOptions()`, `DatasetSetUp()`
@*/
PetscErrorCode DatasetView(Dataset ds, PetscViewer viewer)
{
  PetscBool isascii;
  char      shape[64];
  PetscReal scale = ds->scaleset ? ds->scale : ds->defaultscale;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)ds), &viewer));
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)ds, viewer));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscTryTypeMethod(ds, view, viewer);
  if (ds->setupcalled) {
    PetscInt nbatches;

    PetscCall(PetNetShapeToString(&ds->shape, sizeof(shape), shape));
    PetscCall(DatasetGetNumBatches(ds, &nbatches));
    if (ds->offset > 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "samples: %" PetscInt_FMT " (%" PetscInt_FMT " to %" PetscInt_FMT " of %" PetscInt_FMT ")\n", ds->N, ds->offset, ds->offset + ds->N - 1, ds->nsource));
    else if (ds->N < ds->nsource)
      PetscCall(PetscViewerASCIIPrintf(viewer, "samples: %" PetscInt_FMT " (the first of %" PetscInt_FMT ")\n", ds->N, ds->nsource));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "samples: %" PetscInt_FMT "\n", ds->N));
    PetscCall(PetscViewerASCIIPrintf(viewer, "sample shape: %s, target size: %" PetscInt_FMT ", classes: %" PetscInt_FMT "%s\n", shape, ds->tsize, ds->nclasses, ds->nclasses ? "" : " (regression)"));
    PetscCall(PetscViewerASCIIPrintf(viewer, "batch size: %" PetscInt_FMT " (%" PetscInt_FMT " batches)\n", ds->batchsize > 0 ? PetscMin(ds->batchsize, ds->N) : ds->N, nbatches));
  } else {
    if (ds->limit > 0) PetscCall(PetscViewerASCIIPrintf(viewer, "limit: %" PetscInt_FMT " samples\n", ds->limit));
    if (ds->offset > 0) PetscCall(PetscViewerASCIIPrintf(viewer, "offset: sample %" PetscInt_FMT "\n", ds->offset));
    if (ds->batchsize > 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "batch size: %" PetscInt_FMT "\n", ds->batchsize));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "batch size: all samples\n"));
  }
  if (ds->shuffle)
    PetscCall(PetscViewerASCIIPrintf(viewer, "shuffle: yes, seed %lu (epoch e uses seed + e)\n", ds->seed));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "shuffle: no (file order)\n"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "normalization: x -> (%.6g x - %.6g) / %.6g\n", (double)scale, (double)ds->mean, (double)ds->std));
  if (ds->augshift > 0 || ds->augflip) PetscCall(PetscViewerASCIIPrintf(viewer, "augmentation of the batches: shifts up to %" PetscInt_FMT " pixels, %s (seed %lu)\n", ds->augshift, ds->augflip ? "random left-right flips" : "no flips", ds->seed));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@C
  DatasetViewFromOptions - views a Dataset when an option asks for it

  Collective on ds

  Input Parameters:
+ ds   - the Dataset
. obj  - an object whose prefix is used instead, or NULL
- name - the option, e.g. "-dataset_view"

  Level: intermediate

.seealso: `DatasetView()`, `PetscObjectViewFromOptions()`
@*/
PetscErrorCode DatasetViewFromOptions(Dataset ds, PetscObject obj, const char name[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(PetscObjectViewFromOptions((PetscObject)ds, obj, name));
  PetscFunctionReturn(0);
}

/*@
  DatasetReset - frees the samples read by DatasetSetUp() and the batch workspace; the kind and settings stay

  Collective on ds

  Input Parameter:
. ds - the Dataset

  Notes:
  The next DatasetSetUp() reads the source again. Vecs obtained from DatasetGetBatch() or DatasetGetAll() are invalid
  afterwards.

  Level: intermediate

.seealso: `DatasetSetUp()`, `DatasetDestroy()`
@*/
PetscErrorCode DatasetReset(Dataset ds)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(DatasetResetBatches_Private(ds));
  PetscCall(VecDestroy(&ds->inputs));
  PetscCall(VecDestroy(&ds->targets));
  PetscCall(PetscLayoutDestroy(&ds->map));
  PetscCall(PetscFree(ds->order));
  PetscCall(PetscRandomDestroy(&ds->rand));
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscFree(ds->xsource));
  ds->N = ds->nsource = ds->F = ds->tsize = ds->nclasses = 0;
  ds->notargets                                          = PETSC_FALSE;
  ds->epoch                                              = 0;
  ds->setupcalled                                        = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  DatasetDestroy - destroys a Dataset when its last reference goes

  Collective on ds

  Input Parameter:
. ds - the Dataset; set to NULL

  Level: beginner

.seealso: `DatasetCreate()`, `DatasetReset()`
@*/
PetscErrorCode DatasetDestroy(Dataset *ds)
{
  PetscFunctionBegin;
  if (!*ds) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*ds, DATASET_CLASSID, 1);
  if (--((PetscObject)(*ds))->refct > 0) {
    *ds = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(DatasetReset(*ds));
  PetscTryTypeMethod(*ds, destroy);
  PetscCall(PetscFree((*ds)->file));
  PetscCall(PetscHeaderDestroy(ds));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Settings. Those that change what SetUp reads (file, limit, shape, normalization, classes) undo the SetUp. */

/*@C
  DatasetFileSetName - sets the PETSc binary or HDF5 file a binary or hdf5 Dataset reads

  Logically collective on ds

  Input Parameters:
+ ds   - the Dataset
- file - the file name; a Dataset without a kind becomes hdf5 for .h5 and .hdf5 files, else binary

  Options Database Key:
. -dataset_file <file> - the file

  Notes:
  A new name undoes DatasetSetUp(). The idx and memory kinds ignore it.

  Level: beginner

.seealso: `DatasetSetType()`, `DatasetHDF5SetNames()`, `DatasetSetFromOptions()`
@*/
PetscErrorCode DatasetFileSetName(Dataset ds, const char file[])
{
  PetscBool same;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidCharPointer(file, 2);
  PetscCall(PetscStrcmp(ds->file, file, &same));
  if (same) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  PetscCall(PetscFree(ds->file));
  PetscCall(PetscStrallocpy(file, &ds->file));
  PetscFunctionReturn(0);
}

/*@
  DatasetSetLimit - uses only the first n samples of the source

  Logically collective on ds

  Input Parameters:
+ ds - the Dataset
- n  - the number of samples, > 0; `PETSC_DETERMINE` (-1) means all; other values are refused

  Options Database Key:
. -dataset_limit <n> - the limit

  Notes:
  A new limit undoes DatasetSetUp(); only the samples kept are read.

  Level: beginner

.seealso: `DatasetGetSize()`, `DatasetSetFromOptions()`
@*/
PetscErrorCode DatasetSetLimit(Dataset ds, PetscInt n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, n, 2);
  PetscCheck(n > 0 || n == PETSC_DETERMINE, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The dataset limit (-%sdataset_limit) must be a positive number of samples, or -1 for all of them, not %" PetscInt_FMT,
             ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", n);
  if (n == ds->limit) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  ds->limit = n;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetOffset - starts at sample `offset` of the source: the Dataset holds samples offset, offset + 1, ... (up to
  the limit, DatasetSetLimit())

  Logically collective on ds

  Input Parameters:
+ ds     - the Dataset
- offset - the first sample used, >= 0 (default 0); it must lie inside the source, which DatasetSetUp() checks

  Options Database Key:
. -dataset_offset <s> - the offset

  Notes:
  With the limit, a Dataset is the contiguous range of samples [offset, offset + limit) of its source: a shard of a
  training set (a population's trainer, TrainerSetPopulation()), or a validation range. Only those samples are read. A
  new offset undoes DatasetSetUp(). Sample numbers (DatasetGetBatchIndices()) count from the offset.

  Level: intermediate

.seealso: `DatasetSetLimit()`, `DatasetGetOffset()`, `DatasetCreateSubset()`, `DatasetGetSize()`
@*/
PetscErrorCode DatasetSetOffset(Dataset ds, PetscInt offset)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, offset, 2);
  PetscCheck(offset >= 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The dataset offset (-%sdataset_offset) must be a sample number >= 0, not %" PetscInt_FMT, ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", offset);
  if (offset == ds->offset) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  ds->offset = offset;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetOffset - gets the first sample of the source the Dataset uses

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. offset - the offset (0 unless DatasetSetOffset() or -dataset_offset set one)

  Level: intermediate

.seealso: `DatasetSetOffset()`, `DatasetSetLimit()`
@*/
PetscErrorCode DatasetGetOffset(Dataset ds, PetscInt *offset)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(offset, 2);
  *offset = ds->offset;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetBatchSize - sets the global mini-batch size; the last batch of an epoch may be smaller

  Logically collective on ds

  Input Parameters:
+ ds - the Dataset
- bs - the batch size, > 0; `PETSC_DETERMINE` (-1) means one batch of all samples; other values are refused

  Options Database Key:
. -dataset_batch_size <128> - the batch size

  Notes:
  Each batch is split over the ranks as PETSC_DECIDE would split it. Frees the batch workspace, not the samples.

  Level: beginner

.seealso: `DatasetGetBatchSize()`, `DatasetGetNumBatches()`, `DatasetGetBatch()`
@*/
PetscErrorCode DatasetSetBatchSize(Dataset ds, PetscInt bs)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, bs, 2);
  PetscCheck(bs > 0 || bs == PETSC_DETERMINE, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The batch size (-%sdataset_batch_size) must be a positive number of samples, or -1 for all samples in one batch, not %" PetscInt_FMT,
             ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", bs);
  if (bs == ds->batchsize) PetscFunctionReturn(0);
  PetscCall(DatasetResetBatches_Private(ds));
  ds->batchsize = bs;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetBatchSize - gets the global size of all but the last batch of an epoch

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. bs - the batch size; after DatasetSetUp() at most the number of samples, and that number for "all samples"
       (before it, `PETSC_DETERMINE` for "all samples")

  Level: beginner

.seealso: `DatasetSetBatchSize()`, `DatasetGetNumBatches()`
@*/
PetscErrorCode DatasetGetBatchSize(Dataset ds, PetscInt *bs)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(bs, 2);
  *bs = ds->batchsize;
  if (ds->setupcalled) *bs = ds->batchsize > 0 ? PetscMin(ds->batchsize, ds->N) : ds->N;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetShuffle - draws a new sample order every epoch, or keeps the file order

  Logically collective on ds

  Input Parameters:
+ ds      - the Dataset
- shuffle - `PETSC_TRUE` to shuffle

  Options Database Key:
. -dataset_shuffle - shuffle

  Notes:
  Takes effect at the next DatasetBeginEpoch().

  Level: beginner

.seealso: `DatasetSetSeed()`, `DatasetBeginEpoch()`
@*/
PetscErrorCode DatasetSetShuffle(Dataset ds, PetscBool shuffle)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveBool(ds, shuffle, 2);
  ds->shuffle = shuffle;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetSeed - sets the seed of the shuffle: epoch e uses seed + e

  Logically collective on ds

  Input Parameters:
+ ds   - the Dataset
- seed - the seed, the same on every rank

  Options Database Key:
. -dataset_seed <0> - the seed

  Notes:
  Takes effect at the next DatasetBeginEpoch().

  Level: intermediate

.seealso: `DatasetSetShuffle()`, `DatasetBeginEpoch()`
@*/
PetscErrorCode DatasetSetSeed(Dataset ds, unsigned long seed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  ds->seed = seed;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetNormalization - sets the normalization of the inputs, x -> (scale x - mean) / std

  Logically collective on ds

  Input Parameters:
+ ds    - the Dataset
. scale - the scale; `PETSC_DEFAULT` keeps the kind's default (1/255 for idx bytes, 1 otherwise)
. mean  - the mean subtracted after scaling
- std   - the standard deviation divided by, > 0

  Options Database Keys:
+ -dataset_scale <s>  - the scale
. -dataset_mean <0>   - the mean
- -dataset_std <1>    - the standard deviation

  Notes:
  A change undoes DatasetSetUp(). A Dataset whose normalization is not set takes the one a trained or loaded Net
  records when the Trainer evaluates the Net on it (TrainerEvaluate(), TrainerPredict(); see DatasetIsNormalizationSet()).

  Level: beginner

.seealso: `DatasetGetNormalization()`, `DatasetIsNormalizationSet()`, `DatasetSetFromOptions()`, `NetSetInputNormalization()`
@*/
PetscErrorCode DatasetSetNormalization(Dataset ds, PetscReal scale, PetscReal mean, PetscReal std)
{
  PetscBool scaleset = (PetscBool)(scale != (PetscReal)PETSC_DEFAULT);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveReal(ds, mean, 3);
  PetscValidLogicalCollectiveReal(ds, std, 4);
  PetscCheck(std > 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The normalization std must be positive, not %.6g", (double)std);
  ds->normset     = PETSC_TRUE;
  ds->normfromnet = PETSC_FALSE;
  if (scaleset == ds->scaleset && (!scaleset || scale == ds->scale) && mean == ds->mean && std == ds->std) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  ds->scaleset = scaleset;
  ds->scale    = scaleset ? scale : 1.0;
  ds->mean     = mean;
  ds->std      = std;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetNormalization - gets the normalization x -> (scale x - mean) / std in effect

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameters:
+ scale - the scale, the kind's default unless one was set (may be NULL)
. mean  - the mean (may be NULL)
- std   - the standard deviation (may be NULL)

  Level: intermediate

.seealso: `DatasetSetNormalization()`
@*/
PetscErrorCode DatasetGetNormalization(Dataset ds, PetscReal *scale, PetscReal *mean, PetscReal *std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (scale) *scale = ds->scaleset ? ds->scale : ds->defaultscale;
  if (mean) *mean = ds->mean;
  if (std) *std = ds->std;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetSampleShape - sets the per-sample input shape, channels last

  Logically collective on ds

  Input Parameters:
+ ds    - the Dataset
- shape - the shape, (f), (h, w, c) or (d, h, w, c)

  Options Database Key:
. -dataset_sample_shape <784|28x28x1> - the shape

  Notes:
  With a source that has a shape of its own (idx images, an hdf5 attribute) it must hold as many entries and reshapes
  (28x28x1 -> 784); it gives a flat source its shape. A change undoes DatasetSetUp().

  Level: intermediate

.seealso: `DatasetGetSampleShape()`, `PetNetShapeFromString()`
@*/
PetscErrorCode DatasetSetSampleShape(Dataset ds, const PetNetShape *shape)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidPointer(shape, 2);
  if (shape->ndim) PetscCall(PetNetShapeCheck(PetscObjectComm((PetscObject)ds), shape, "DatasetSetSampleShape()"));
  if (PetNetShapeEqual(shape, &ds->shapeset)) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  ds->shapeset = *shape;
  PetscFunctionReturn(0);
}

/*@
  DatasetSetNumClasses - declares the number of classes of the targets

  Logically collective on ds

  Input Parameters:
+ ds       - the Dataset
- nclasses - C > 0: every target must be one integer label in [0, C) (checked at DatasetSetUp()); 0: regression
             targets; `PETSC_DETERMINE` (-1, the default): inferred; other negative values are refused

  Options Database Key:
. -dataset_num_classes <C> - the number of classes

  Notes:
  Inferred, the number is 1 + the largest label when every target is a single non-negative integer, else 0.

  Level: intermediate

.seealso: `DatasetGetNumClasses()`, `LossCountCorrect()`
@*/
PetscErrorCode DatasetSetNumClasses(Dataset ds, PetscInt nclasses)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, nclasses, 2);
  PetscCheck(nclasses >= 0 || nclasses == PETSC_DETERMINE, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The number of classes (-%sdataset_num_classes) must be positive, 0 for regression targets, or -1 to infer it, not %" PetscInt_FMT,
             ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", nclasses);
  if (nclasses == ds->nclassesset) PetscFunctionReturn(0);
  PetscCall(DatasetReset(ds));
  ds->nclassesset = nclasses;
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Queries */

#define DatasetCheckSetUp(ds, fname) PetscCheck((ds)->setupcalled, PetscObjectComm((PetscObject)(ds)), PETSC_ERR_ORDER, "Call DatasetSetUp() before %s()", fname)

/*@
  DatasetGetSize - gets the global number of samples, after the limit

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. n - the number of samples

  Level: beginner

.seealso: `DatasetGetLocalSize()`, `DatasetSetLimit()`, `DatasetSetUp()`
@*/
PetscErrorCode DatasetGetSize(Dataset ds, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(n, 2);
  DatasetCheckSetUp(ds, "DatasetGetSize");
  *n = ds->N;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetLocalSize - gets the number of samples stored on this rank

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. n - this rank's contiguous block of the samples (PETSC_DECIDE split)

  Level: intermediate

.seealso: `DatasetGetSize()`, `DatasetGetAll()`
@*/
PetscErrorCode DatasetGetLocalSize(Dataset ds, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(n, 2);
  DatasetCheckSetUp(ds, "DatasetGetLocalSize");
  *n = ds->map->n;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetSampleShape - gets the per-sample input shape, channels last

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. shape - the shape: the source's, or the one set with DatasetSetSampleShape()

  Level: beginner

.seealso: `DatasetSetSampleShape()`, `NetSetInputShape()`
@*/
PetscErrorCode DatasetGetSampleShape(Dataset ds, PetNetShape *shape)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidPointer(shape, 2);
  DatasetCheckSetUp(ds, "DatasetGetSampleShape");
  *shape = ds->shape;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetTargetSize - gets the number of entries of one target

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. tsize - entries per target: 1 for class labels

  Level: intermediate

.seealso: `DatasetGetNumClasses()`, `DatasetGetBatch()`
@*/
PetscErrorCode DatasetGetTargetSize(Dataset ds, PetscInt *tsize)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(tsize, 2);
  DatasetCheckSetUp(ds, "DatasetGetTargetSize");
  *tsize = ds->tsize;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetNumClasses - gets the number of classes of the targets

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. nclasses - the declared number; else 1 + the largest label when every target is a single non-negative integer;
             else 0 (regression targets)

  Level: beginner

.seealso: `DatasetSetNumClasses()`, `DatasetGetTargetSize()`
@*/
PetscErrorCode DatasetGetNumClasses(Dataset ds, PetscInt *nclasses)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(nclasses, 2);
  DatasetCheckSetUp(ds, "DatasetGetNumClasses");
  *nclasses = ds->nclasses;
  PetscFunctionReturn(0);
}

/*@
  DatasetHasTargets - whether the Dataset's source has targets (labels or regression values)

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. has - PETSC_FALSE for a source of inputs only (an hdf5 Dataset with -dataset_hdf5_targets none), whose targets are
        zeros: it can be predicted (TrainerPredict()), not trained on or scored

  Level: intermediate

.seealso: `DatasetHDF5SetNames()`, `TrainerPredict()`, `DatasetGetTargetSize()`
@*/
PetscErrorCode DatasetHasTargets(Dataset ds, PetscBool *has)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidBoolPointer(has, 2);
  DatasetCheckSetUp(ds, "DatasetHasTargets");
  *has = ds->notargets ? PETSC_FALSE : PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetNumBatches - gets the number of batches of an epoch

  Not collective

  Input Parameter:
. ds - the Dataset, set up

  Output Parameter:
. nbatches - ceil(N / B), 1 when the batch is all samples

  Level: beginner

.seealso: `DatasetGetBatch()`, `DatasetSetBatchSize()`, `DatasetGetSize()`
@*/
PetscErrorCode DatasetGetNumBatches(Dataset ds, PetscInt *nbatches)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(nbatches, 2);
  DatasetCheckSetUp(ds, "DatasetGetNumBatches");
  *nbatches = ds->batchsize > 0 ? (ds->N + ds->batchsize - 1) / ds->batchsize : 1;
  PetscFunctionReturn(0);
}

/*@
  DatasetIsNormalizationSet - tells whether the normalization of the inputs was set, by DatasetSetNormalization() or
  one of the options -dataset_scale, -dataset_mean, -dataset_std

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. set - PETSC_TRUE if it was set; PETSC_FALSE if the kind's default is in effect (x -> x / 255 for idx, else x)

  Notes:
  The Trainer gives a Dataset whose normalization is not set the one the Net was trained with
  (NetGetInputNormalization()) before evaluating the Net on it.

  Level: intermediate

.seealso: `DatasetSetNormalization()`, `DatasetGetNormalization()`, `NetGetInputNormalization()`, `TrainerPredict()`
@*/
PetscErrorCode DatasetIsNormalizationSet(Dataset ds, PetscBool *set)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidBoolPointer(set, 2);
  *set = ds->normset;
  PetscFunctionReturn(0);
}
