/*
  hdf5: an HDF5 file (-dataset_file) with two datasets read by VecLoad() through PetscViewerHDF5:
    inputs  (-dataset_hdf5_inputs, default "inputs"):   [N][F] (2-D, as VecView() writes a Vec of block size F), or
                                                        [N*F] with the shape from -dataset_sample_shape;
    targets (-dataset_hdf5_targets, default "targets"): [N] class labels or [N][tsize].
  The per-sample shape comes from -dataset_sample_shape, else from a string attribute "sample_shape" of the inputs
  dataset (e.g. "28x28x1"), else it is flat (F from the second dimension). -dataset_hdf5_group selects a group.
*/
#include <petnet/private/datasetimpl.h>
#include <petscviewerhdf5.h>

typedef struct {
  char *inputs, *targets, *group;
} Dataset_HDF5;

static PetscErrorCode DatasetHDF5SetNames_HDF5(Dataset ds, const char inputs[], const char targets[])
{
  Dataset_HDF5 *h5 = (Dataset_HDF5 *)ds->data;
  char         *in, *tg;
  PetscBool     same_in, same_tg;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(h5->inputs, inputs ? inputs : h5->inputs, &same_in));
  PetscCall(PetscStrcmp(h5->targets, targets ? targets : h5->targets, &same_tg));
  if (same_in && same_tg) PetscFunctionReturn(0);
  PetscCall(PetscStrallocpy(inputs ? inputs : h5->inputs, &in));
  PetscCall(PetscStrallocpy(targets ? targets : h5->targets, &tg));
  PetscCall(PetscFree(h5->inputs));
  PetscCall(PetscFree(h5->targets));
  h5->inputs  = in;
  h5->targets = tg;
  PetscCall(DatasetReset(ds));
  PetscFunctionReturn(0);
}

/* Loads the dataset called name into a new Vec (PETSc's layout); what ("inputs") is for the error message */
static PetscErrorCode DatasetHDF5LoadVec(Dataset ds, PetscViewer viewer, const char name[], const char what[], const char option[], Vec *v)
{
  PetscBool has;

  PetscFunctionBegin;
  PetscCall(PetscViewerHDF5HasDataset(viewer, name, &has));
  PetscCheck(has, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_UNEXPECTED, "The HDF5 file \"%s\" has no dataset \"%s\" for the %s: name it with %s", ds->file, name, what, option);
  PetscCall(VecCreate(PetscObjectComm((PetscObject)ds), v));
  PetscCall(PetscObjectSetName((PetscObject)*v, name));
  PetscCall(VecLoad(*v, viewer));
  PetscFunctionReturn(0);
}

/* The per-sample shape: -dataset_sample_shape, else the "sample_shape" attribute, else flat with the Vec's block size */
static PetscErrorCode DatasetHDF5SampleShape(Dataset ds, PetscViewer viewer, Vec xall, PetNetShape *shape)
{
  Dataset_HDF5 *h5 = (Dataset_HDF5 *)ds->data;
  PetscBool     has;
  PetscInt      bs;

  PetscFunctionBegin;
  if (ds->shapeset.ndim) {
    *shape = ds->shapeset;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerHDF5HasAttribute(viewer, h5->inputs, "sample_shape", &has));
  if (has) {
    char *str = NULL;

    PetscCall(PetscViewerHDF5ReadAttribute(viewer, h5->inputs, "sample_shape", PETSC_STRING, NULL, &str));
    PetscCall(PetNetShapeFromString(str, shape));
    PetscCall(PetscFree(str));
    PetscFunctionReturn(0);
  }
  PetscCall(VecGetBlockSize(xall, &bs));
  shape->ndim   = 1;
  shape->dim[0] = bs;
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_HDF5(Dataset ds)
{
  Dataset_HDF5 *h5   = (Dataset_HDF5 *)ds->data;
  MPI_Comm      comm = PetscObjectComm((PetscObject)ds);
  PetscViewer   viewer;
  Vec           xall, tall;
  PetNetShape   shape;
  PetscInt      nx, nt, F, N;
  char          s[64];

  PetscFunctionBegin;
  PetscCheck(ds->file, comm, PETSC_ERR_USER_INPUT, "The hdf5 dataset has no file: give -dataset_file FILE or call DatasetFileSetName()");
  PetscCall(DatasetCheckFile_Private(ds, ds->file, "HDF5"));
  PetscCall(PetscViewerHDF5Open(comm, ds->file, FILE_MODE_READ, &viewer));
  if (h5->group) PetscCall(PetscViewerHDF5PushGroup(viewer, h5->group));
  PetscCall(DatasetHDF5LoadVec(ds, viewer, h5->inputs, "inputs", "-dataset_hdf5_inputs", &xall));
  PetscCall(DatasetHDF5LoadVec(ds, viewer, h5->targets, "targets", "-dataset_hdf5_targets", &tall));
  PetscCall(DatasetHDF5SampleShape(ds, viewer, xall, &shape));
  if (h5->group) PetscCall(PetscViewerHDF5PopGroup(viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecGetSize(xall, &nx));
  PetscCall(VecGetSize(tall, &nt));
  PetscCall(PetNetShapeSize(&shape, &F));
  PetscCall(PetNetShapeToString(&shape, sizeof(s), s));
  PetscCheck(nx % F == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The inputs \"%s\" in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of samples of shape %s: set -dataset_sample_shape", h5->inputs, ds->file, nx, s);
  N = nx / F;
  PetscCheck(N > 0 && nt > 0 && nt % N == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The targets \"%s\" in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of entries for each of the %" PetscInt_FMT " samples of shape %s", h5->targets, ds->file,
             nt, N, s);
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->tsource));
  PetscCall(DatasetSetSizes_Private(ds, N, &shape, nt / N));
  PetscCall(DatasetCopySamples_Private(ds, xall, ds->F, &ds->inputs));
  PetscCall(DatasetCopySamples_Private(ds, tall, ds->tsize, &ds->targets));
  PetscCall(VecDestroy(&xall));
  PetscCall(VecDestroy(&tall));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetSetFromOptions_HDF5(Dataset ds, PetscOptionItems *PetscOptionsObject)
{
  Dataset_HDF5 *h5 = (Dataset_HDF5 *)ds->data;
  char          inputs[256], targets[256], group[256];
  PetscBool     iset, tset, gset, same = PETSC_TRUE;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Dataset hdf5 options");
  PetscCall(PetscOptionsString("-dataset_hdf5_inputs", "Name of the HDF5 dataset of inputs", "DatasetHDF5SetNames", h5->inputs, inputs, sizeof(inputs), &iset));
  PetscCall(PetscOptionsString("-dataset_hdf5_targets", "Name of the HDF5 dataset of targets", "DatasetHDF5SetNames", h5->targets, targets, sizeof(targets), &tset));
  if (iset || tset) PetscCall(DatasetHDF5SetNames_HDF5(ds, iset ? inputs : NULL, tset ? targets : NULL));
  PetscCall(PetscOptionsString("-dataset_hdf5_group", "HDF5 group holding the datasets", "", h5->group ? h5->group : "/", group, sizeof(group), &gset));
  if (gset) PetscCall(PetscStrcmp(h5->group ? h5->group : "/", group, &same));
  if (gset && !same) {
    PetscCall(PetscFree(h5->group));
    PetscCall(PetscStrallocpy(group, &h5->group));
    PetscCall(DatasetReset(ds));
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetView_HDF5(Dataset ds, PetscViewer viewer)
{
  Dataset_HDF5 *h5 = (Dataset_HDF5 *)ds->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "file: %s\n", ds->file ? ds->file : "(not set)"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "datasets: inputs \"%s\", targets \"%s\"%s%s\n", h5->inputs, h5->targets, h5->group ? " in group " : "", h5->group ? h5->group : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetDestroy_HDF5(Dataset ds)
{
  Dataset_HDF5 *h5 = (Dataset_HDF5 *)ds->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(h5->inputs));
  PetscCall(PetscFree(h5->targets));
  PetscCall(PetscFree(h5->group));
  PetscCall(PetscFree(ds->data));
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetHDF5SetNames_C", NULL));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode DatasetCreate_HDF5(Dataset ds)
{
  Dataset_HDF5 *h5;

  PetscFunctionBegin;
  PetscCall(PetscNew(&h5));
  PetscCall(PetscStrallocpy("inputs", &h5->inputs));
  PetscCall(PetscStrallocpy("targets", &h5->targets));
  ds->data                = h5;
  ds->ops->load           = DatasetLoad_HDF5;
  ds->ops->setfromoptions = DatasetSetFromOptions_HDF5;
  ds->ops->view           = DatasetView_HDF5;
  ds->ops->destroy        = DatasetDestroy_HDF5;
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetHDF5SetNames_C", DatasetHDF5SetNames_HDF5));
  PetscFunctionReturn(0);
}

/*@C
  DatasetHDF5SetNames - sets the names of the HDF5 datasets holding the inputs and the targets

  Logically collective on ds

  Input Parameters:
+ ds      - the Dataset; it becomes an hdf5 Dataset if it has no kind yet (other kinds ignore the call)
. inputs  - the inputs dataset, [N][F], or [N*F] with -dataset_sample_shape (NULL keeps the name; default "inputs")
- targets - the targets dataset, [N] class labels or [N][tsize] (NULL keeps the name; default "targets")

  Options Database Keys:
+ -dataset_hdf5_inputs <inputs>   - the inputs dataset
. -dataset_hdf5_targets <targets> - the targets dataset
- -dataset_hdf5_group </>         - the HDF5 group holding both

  Notes:
  The file is set with DatasetFileSetName() or -dataset_file. The per-sample shape comes from -dataset_sample_shape,
  else from a string attribute "sample_shape" of the inputs dataset, else it is flat. A change undoes DatasetSetUp().

  Level: intermediate

.seealso: `DatasetFileSetName()`, `DATASETHDF5`
@*/
PetscErrorCode DatasetHDF5SetNames(Dataset ds, const char inputs[], const char targets[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (!((PetscObject)ds)->type_name) PetscCall(DatasetSetType(ds, DATASETHDF5));
  PetscTryMethod(ds, "DatasetHDF5SetNames_C", (Dataset, const char[], const char[]), (ds, inputs, targets));
  PetscFunctionReturn(0);
}
