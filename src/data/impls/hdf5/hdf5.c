/*
  hdf5: an HDF5 file (-dataset_file) with two datasets read by VecLoad() through PetscViewerHDF5:
    inputs  (-dataset_hdf5_inputs, default "inputs"):   [N][F] (2-D, as VecView() writes a Vec of block size F), or
                                                        [N*F] with the shape from -dataset_sample_shape;
    targets (-dataset_hdf5_targets, default "targets"): [N] class labels or [N][tsize]; "none": the file has inputs
                                                        only, to predict (DatasetHasTargets(), TrainerPredict()).
  The per-sample shape comes from -dataset_sample_shape, else from a string attribute "sample_shape" of the inputs
  dataset (e.g. "28x28x1"), else it is flat (F from the second dimension). -dataset_hdf5_group selects a group.

  Before PETSc's VecLoad() sees the file (it trusts the file: a 3-D dataset corrupts the heap), rank 0 inspects it
  with the HDF5 library alone: the file opens, each dataset exists, holds numbers, has 1 or 2 nonzero dimensions whose
  product PETSc can address, and its stored bytes can hold its shape; the "sample_shape" attribute is one string. The
  verdict is broadcast, so a bad file is one collective error, on every rank at once, that names the file and the
  dataset.
*/
#include <petnet/private/datasetimpl.h>
#include <petscviewerhdf5.h>
#include <hdf5.h>

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

/* What rank 0 found in the file; broadcast as bytes */
typedef struct {
  int      bad;          /* 0: the file can be loaded; else message[] says why */
  PetscInt ndims[2];     /* inputs, targets */
  PetscInt dims[2][2];   /* [dataset][dimension] */
  int      hasshape;     /* the inputs carry a "sample_shape" attribute, in shape[] */
  char     shape[64];    /* its text */
  char     message[768]; /* the error, naming the file and the dataset */
} DatasetHDF5Info;

/* "dataset \"name\"" or "dataset \"group/name\"" into path (for H5Dopen2) */
static void DatasetHDF5Path(const char group[], const char name[], size_t len, char path[])
{
  if (group && group[0] && strcmp(group, "/"))
    (void)PetscSNPrintf(path, len, "%s/%s", group, name);
  else
    (void)PetscSNPrintf(path, len, "%s", name);
}

/* The "sample_shape" attribute of did as text: fixed-length or variable-length string, one element */
static int DatasetHDF5ReadShapeAttribute(hid_t did, const char file[], const char path[], DatasetHDF5Info *info)
{
  hid_t    aid, atype, space, memtype = -1;
  hssize_t npoints;
  int      bad = 0;

  if (H5Aexists(did, "sample_shape") <= 0) return 0;
  aid   = H5Aopen(did, "sample_shape", H5P_DEFAULT);
  atype = aid >= 0 ? H5Aget_type(aid) : -1;
  space = aid >= 0 ? H5Aget_space(aid) : -1;
  if (aid < 0 || atype < 0 || space < 0) bad = 1;
  npoints = bad ? 0 : H5Sget_simple_extent_npoints(space);
  if (!bad && (H5Tget_class(atype) != H5T_STRING || npoints != 1)) bad = 1;
  if (!bad && H5Tis_variable_str(atype) > 0) {
    char *str = NULL;

    memtype = H5Tcopy(H5T_C_S1);
    if (memtype < 0 || H5Tset_size(memtype, H5T_VARIABLE) < 0 || H5Tset_cset(memtype, H5Tget_cset(atype)) < 0 || H5Aread(aid, memtype, &str) < 0 || !str)
      bad = 1;
    else
      (void)PetscStrncpy(info->shape, str, sizeof(info->shape));
    if (str) H5free_memory(str);
  } else if (!bad) {
    size_t size = H5Tget_size(atype);
    char   buf[256];

    memtype = H5Tcopy(atype);
    if (size == 0 || size >= sizeof(buf) || memtype < 0 || H5Aread(aid, memtype, buf) < 0)
      bad = 1;
    else {
      buf[size] = 0;
      (void)PetscStrncpy(info->shape, buf, sizeof(info->shape));
    }
  }
  if (memtype >= 0) H5Tclose(memtype);
  if (space >= 0) H5Sclose(space);
  if (atype >= 0) H5Tclose(atype);
  if (aid >= 0) H5Aclose(aid);
  if (bad)
    (void)PetscSNPrintf(info->message, sizeof(info->message), "The attribute \"sample_shape\" of the dataset \"%s\" in the HDF5 file \"%s\" is not one short string such as \"28x28x1\": fix it, or give -dataset_sample_shape", path, file);
  else
    info->hasshape = 1;
  return bad;
}

/* Checks dataset k (0 inputs, 1 targets) of the open file; what ("inputs"), option ("-dataset_hdf5_inputs") for messages */
static int DatasetHDF5InspectDataset(hid_t fid, const char file[], const char group[], const char name[], const char what[], const char option[], int k, DatasetHDF5Info *info)
{
  char        path[PETSC_MAX_PATH_LEN], found[128] = "", expected[64];
  hid_t       did = -1, tid = -1, sid = -1, plist = -1;
  hsize_t     dims[H5S_MAX_RANK], storage;
  int         ndims = 0, bad = 0, nfilters = 0;
  H5T_class_t cls;
  double      elements = 1, needed;

  DatasetHDF5Path(group, name, sizeof(path), path);
  (void)PetscSNPrintf(expected, sizeof(expected), "%s", k ? "[N] or [N][tsize]" : "[N][F], or [N*F] with -dataset_sample_shape");
  if (H5Lexists(fid, path, H5P_DEFAULT) <= 0 || (did = H5Dopen2(fid, path, H5P_DEFAULT)) < 0) {
    (void)PetscSNPrintf(info->message, sizeof(info->message), "The HDF5 file \"%s\" has no dataset \"%s\" for the %s: name it with %s%s", file, path, what, option, group ? " (and -dataset_hdf5_group)" : "");
    return 1;
  }
  tid = H5Dget_type(did);
  sid = H5Dget_space(did);
  cls = tid >= 0 ? H5Tget_class(tid) : H5T_NO_CLASS;
  if (sid >= 0 && H5Sget_simple_extent_type(sid) == H5S_SIMPLE) ndims = H5Sget_simple_extent_dims(sid, dims, NULL);
  if (ndims > 0)
    for (int d = 0; d < ndims; d++) {
      size_t len = strlen(found);

      (void)PetscSNPrintf(found + len, sizeof(found) - len, "[%llu]", (unsigned long long)dims[d]);
      elements *= (double)dims[d];
    }
  else
    (void)PetscStrncpy(found, "scalar (no dimensions)", sizeof(found));
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
    (void)PetscSNPrintf(info->message, sizeof(info->message), "The dataset \"%s\" (%s) in the HDF5 file \"%s\" does not hold numbers (integers or floating point): store the %s as numbers", path, what, file, what);
    bad = 1;
  } else if (ndims < 1 || ndims > 2) {
    (void)PetscSNPrintf(info->message, sizeof(info->message),
                        "The dataset \"%s\" (%s) in the HDF5 file \"%s\" has shape %s, %d dimensions, but the %s must be %s: reshape it (in h5py: x.reshape(len(x), -1)) and give the sample shape with a \"sample_shape\" attribute such as \"28x28x1\"",
                        path, what, file, found, ndims, what, expected);
    bad = 1;
  } else if (elements == 0) {
    (void)PetscSNPrintf(info->message, sizeof(info->message), "The dataset \"%s\" (%s) in the HDF5 file \"%s\" has shape %s: it holds no samples", path, what, file, found);
    bad = 1;
  } else if (elements > PETSC_MAX_INT) {
    (void)PetscSNPrintf(info->message, sizeof(info->message), "The dataset \"%s\" (%s) in the HDF5 file \"%s\" has shape %s, %.0f entries: more than PETSc's 32-bit indices address (%d)", path, what, file, found, elements, PETSC_MAX_INT);
    bad = 1;
  }
  if (!bad) {
    /* the stored bytes must be able to hold the shape: uncompressed, all of it; deflated, at most 1032:1 */
    plist    = H5Dget_create_plist(did);
    nfilters = plist >= 0 ? H5Pget_nfilters(plist) : 0;
    storage  = H5Dget_storage_size(did);
    needed   = elements * (double)H5Tget_size(tid);
    if (nfilters ? needed > 1032.0 * (double)storage + 1048576.0 : (double)storage < needed) {
      (void)PetscSNPrintf(info->message, sizeof(info->message),
                          "The dataset \"%s\" (%s) in the HDF5 file \"%s\" has shape %s, %.0f bytes, but only %llu bytes of it are stored: the file is truncated or corrupt, or the dataset was never completely written", path, what, file, found,
                          needed, (unsigned long long)storage);
      bad = 1;
    }
  }
  if (!bad) {
    info->ndims[k] = ndims;
    for (int d = 0; d < ndims; d++) info->dims[k][d] = (PetscInt)dims[d];
    if (!k) bad = DatasetHDF5ReadShapeAttribute(did, file, path, info);
  }
  if (plist >= 0) H5Pclose(plist);
  if (sid >= 0) H5Sclose(sid);
  if (tid >= 0) H5Tclose(tid);
  H5Dclose(did);
  return bad;
}

/* Rank 0 inspects the file with the HDF5 library (its error printing off) and broadcasts what it found; collective */
static PetscErrorCode DatasetHDF5Inspect(Dataset ds, DatasetHDF5Info *info)
{
  Dataset_HDF5 *h5   = (Dataset_HDF5 *)ds->data;
  MPI_Comm      comm = PetscObjectComm((PetscObject)ds);
  PetscMPIInt   rank;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, sizeof(*info)));
  PetscCall(PetNetCheckHDF5File(comm, ds->file, "Dataset file", PETSC_TRUE)); /* HDF5 itself may crash or hang on damaged headers */
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (!rank) {
    H5E_auto2_t func;
    void       *data;
    hid_t       fid;

    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fid = H5Fopen(ds->file, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0) {
      info->bad = 1;
      (void)PetscSNPrintf(info->message, sizeof(info->message), "The file \"%s\" is not a readable HDF5 file: it is truncated or corrupt, or not HDF5 at all", ds->file);
    } else {
      info->bad = DatasetHDF5InspectDataset(fid, ds->file, h5->group, h5->inputs, "inputs", "-dataset_hdf5_inputs", 0, info);
      if (!info->bad && !ds->notargets) info->bad = DatasetHDF5InspectDataset(fid, ds->file, h5->group, h5->targets, "targets", "-dataset_hdf5_targets", 1, info);
      H5Fclose(fid);
    }
    H5Eset_auto2(H5E_DEFAULT, func, data);
  }
  PetscCallMPI(MPI_Bcast(info, sizeof(*info), MPI_BYTE, 0, comm));
  info->message[sizeof(info->message) - 1] = 0;
  info->shape[sizeof(info->shape) - 1]     = 0;
  PetscCheck(!info->bad, comm, PETSC_ERR_FILE_UNEXPECTED, "%s", info->message);
  PetscFunctionReturn(0);
}

/* Loads the dataset called name into a new Vec (PETSc's layout); what ("inputs") is for the error message */
static PetscErrorCode DatasetHDF5LoadVec(Dataset ds, PetscViewer viewer, const char name[], Vec *v)
{
  PetscFunctionBegin;
  PetscCall(VecCreate(PetscObjectComm((PetscObject)ds), v));
  PetscCall(PetscObjectSetName((PetscObject)*v, name));
  PetscCall(VecLoad(*v, viewer));
  PetscFunctionReturn(0);
}

/* The per-sample shape: -dataset_sample_shape, else the "sample_shape" attribute, else flat: [N][F] gives F, [N] gives 1 */
static PetscErrorCode DatasetHDF5SampleShape(Dataset ds, const DatasetHDF5Info *info, PetNetShape *shape)
{
  PetscFunctionBegin;
  if (ds->shapeset.ndim)
    *shape = ds->shapeset;
  else if (info->hasshape)
    PetscCall(PetNetShapeFromString(info->shape, shape));
  else {
    shape->ndim   = 1;
    shape->dim[0] = info->ndims[0] == 2 ? info->dims[0][1] : 1;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_HDF5(Dataset ds)
{
  Dataset_HDF5   *h5   = (Dataset_HDF5 *)ds->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)ds);
  PetscViewer     viewer;
  Vec             xall = NULL, tall = NULL;
  PetNetShape     shape;
  PetscInt        nx, nt, F, N, size;
  DatasetHDF5Info info;
  PetscErrorCode  ierr;
  char            s[64];

  PetscFunctionBegin;
  PetscCheck(ds->file, comm, PETSC_ERR_USER_INPUT, "The hdf5 dataset has no file: give -dataset_file FILE or call DatasetFileSetName()");
  PetscCall(DatasetCheckFile_Private(ds, ds->file, "HDF5"));
  PetscCall(PetscStrcmp(h5->targets, "none", &ds->notargets)); /* inputs only, for inference */
  PetscCall(DatasetHDF5Inspect(ds, &info));
  /* the sizes, from the inspected shapes (each product <= PETSC_MAX_INT), before anything is read */
  nx = info.dims[0][0] * (info.ndims[0] == 2 ? info.dims[0][1] : 1);
  nt = ds->notargets ? 0 : info.dims[1][0] * (info.ndims[1] == 2 ? info.dims[1][1] : 1);
  PetscCall(DatasetHDF5SampleShape(ds, &info, &shape));
  PetscCall(PetNetShapeSize(&shape, &F));
  PetscCall(PetNetShapeToString(&shape, sizeof(s), s));
  PetscCheck(F > 0 && nx % F == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The inputs \"%s\" in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of samples of shape %s: set -dataset_sample_shape", h5->inputs, ds->file, nx, s);
  N = nx / F;
  if (ds->notargets) nt = N; /* inputs only: one zero target a sample, which nothing reads */
  PetscCheck(nt % N == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The targets \"%s\" in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of entries for each of the %" PetscInt_FMT " samples of shape %s", h5->targets, ds->file, nt, N, s);
  PetscCall(DatasetCheckStorage_Private(ds, ds->file, "inputs", nx));
  if (!ds->notargets) PetscCall(DatasetCheckStorage_Private(ds, ds->file, "targets", nt));

  PetscCall(PetscViewerHDF5Open(comm, ds->file, FILE_MODE_READ, &viewer));
  if (h5->group) PetscCall(PetscViewerHDF5PushGroup(viewer, h5->group));
  ierr = DatasetHDF5LoadVec(ds, viewer, h5->inputs, &xall);
  if (!ierr && !ds->notargets) ierr = DatasetHDF5LoadVec(ds, viewer, h5->targets, &tall);
  if (!ierr && ds->notargets) ierr = VecCreateMPI(comm, PETSC_DECIDE, nt, &tall); /* zeros */
  PetscCall(PetscViewerDestroy(&viewer));                                         /* also on error: nothing left open */
  if (ierr) {
    PetscCall(VecDestroy(&xall));
    PetscCall(VecDestroy(&tall));
  }
  PetscCall(ierr);
  PetscCall(VecGetSize(xall, &size));
  PetscCheck(size == nx, comm, PETSC_ERR_PLIB, "VecLoad() read %" PetscInt_FMT " inputs from \"%s\", not the %" PetscInt_FMT " inspected", size, ds->file, nx);
  PetscCall(VecGetSize(tall, &size));
  PetscCheck(size == nt, comm, PETSC_ERR_PLIB, "VecLoad() read %" PetscInt_FMT " targets from \"%s\", not the %" PetscInt_FMT " inspected", size, ds->file, nt);
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->tsource));
  PetscCall(PetscFree(ds->xsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->xsource));
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
