/*
  idx: MNIST-family datasets, an images file and a labels file in the IDX format, gzip-compressed or plain.

  Images [N][rows][cols] unsigned bytes -> samples of shape rows x cols x 1 (channels last), scaled to [0, 1] by
  default (scale 1/255); [N][f] and [N][h][w][c] files are read too. Labels [N] -> targets of one entry, the class
  number. Every rank reads only its block of samples.
*/
#include "idxfile.h"

typedef struct {
  char *images, *labels;                                              /* -dataset_idx_images, -dataset_idx_labels */
  char *dir, *split;                                                  /* -dataset_idx_dir, -dataset_idx_split: DIR/split-images-idx3-ubyte[.gz] */
  char  imagefile[PETSC_MAX_PATH_LEN], labelfile[PETSC_MAX_PATH_LEN]; /* the files read by the last load */
} Dataset_IDX;

/* *dst = a copy of src (which may be *dst itself); tells whether it changed */
static PetscErrorCode DatasetIDXSetString(char **dst, const char src[], PetscBool *changed)
{
  char     *copy;
  PetscBool same;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(*dst, src, &same));
  if (!same) {
    PetscCall(PetscStrallocpy(src, &copy));
    PetscCall(PetscFree(*dst));
    *dst = copy;
  }
  *changed = (PetscBool)(*changed || !same);
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetIDXSetFiles_IDX(Dataset ds, const char images[], const char labels[])
{
  Dataset_IDX *idx     = (Dataset_IDX *)ds->data;
  PetscBool    changed = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(DatasetIDXSetString(&idx->images, images, &changed));
  PetscCall(DatasetIDXSetString(&idx->labels, labels, &changed));
  if (changed) PetscCall(DatasetReset(ds));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetIDXSetDirectory_IDX(Dataset ds, const char dir[], const char split[])
{
  Dataset_IDX *idx     = (Dataset_IDX *)ds->data;
  PetscBool    changed = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(DatasetIDXSetString(&idx->dir, dir, &changed));
  PetscCall(DatasetIDXSetString(&idx->split, split, &changed));
  if (changed) PetscCall(DatasetReset(ds));
  PetscFunctionReturn(0);
}

/* DIR/split-kind-ubyte.gz, or without .gz when only the uncompressed file exists */
static PetscErrorCode DatasetIDXDirectoryFile(const char dir[], const char split[], const char kind[], size_t len, char file[])
{
  PetscBool gz, plain;
  char      name[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(name, sizeof(name), "%s/%s-%s-ubyte", dir, split, kind));
  PetscCall(PetscSNPrintf(file, len, "%s.gz", name));
  PetscCall(PetscTestFile(file, 'r', &gz));
  PetscCall(PetscTestFile(name, 'r', &plain));
  if (!gz && plain) PetscCall(PetscStrncpy(file, name, len));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetIDXResolveFiles(Dataset ds)
{
  Dataset_IDX *idx   = (Dataset_IDX *)ds->data;
  const char  *split = idx->split ? idx->split : "train";

  PetscFunctionBegin;
  if (idx->images)
    PetscCall(PetscStrncpy(idx->imagefile, idx->images, sizeof(idx->imagefile)));
  else if (idx->dir)
    PetscCall(DatasetIDXDirectoryFile(idx->dir, split, "images-idx3", sizeof(idx->imagefile), idx->imagefile));
  else
    SETERRQ(PetscObjectComm((PetscObject)ds), PETSC_ERR_USER_INPUT,
            "The idx dataset has no files: give -dataset_idx_images FILE -dataset_idx_labels FILE, or -dataset_idx_dir DIR -dataset_idx_split train|t10k (Fashion-MNIST: -dataset_idx_dir /usr/share/datasets/fashion-mnist)");
  if (idx->labels)
    PetscCall(PetscStrncpy(idx->labelfile, idx->labels, sizeof(idx->labelfile)));
  else if (idx->dir)
    PetscCall(DatasetIDXDirectoryFile(idx->dir, split, "labels-idx1", sizeof(idx->labelfile), idx->labelfile));
  else
    SETERRQ(PetscObjectComm((PetscObject)ds), PETSC_ERR_USER_INPUT, "The idx dataset has images \"%s\" but no labels: give -dataset_idx_labels FILE", idx->imagefile);
  PetscFunctionReturn(0);
}

/* Reads this rank's samples from the two files, which the caller closes (also on error) */
static PetscErrorCode DatasetIDXRead(Dataset ds, IDXFile *images, IDXFile *labels)
{
  Dataset_IDX *idx  = (Dataset_IDX *)ds->data;
  MPI_Comm     comm = PetscObjectComm((PetscObject)ds);
  PetNetShape  shape;
  PetscScalar *x, *t;
  PetscBool    xok, tok;
  PetscInt     failed;
  PetscMPIInt  rank, size;

  PetscFunctionBegin;
  PetscCall(DatasetIDXResolveFiles(ds));
  PetscCall(IDXFileOpen(ds, idx->imagefile, "images", 2, 4, images));
  PetscCall(IDXFileOpen(ds, idx->labelfile, "labels", 1, 1, labels));
  PetscCheck(images->dims[0] == labels->dims[0], comm, PETSC_ERR_FILE_UNEXPECTED, "The images file \"%s\" holds %" PetscInt_FMT " images but the labels file \"%s\" holds %" PetscInt_FMT " labels: they must match", images->name, images->dims[0],
             labels->name, labels->dims[0]);
  shape.ndim = images->ndims - 1;
  for (PetscInt d = 1; d < images->ndims; d++) shape.dim[d - 1] = images->dims[d];
  if (images->ndims == 3) shape.dim[shape.ndim++] = 1; /* [rows][cols] -> rows x cols x 1 channel */
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy(labels->name, &ds->tsource));
  PetscCall(PetscFree(ds->xsource));
  PetscCall(PetscStrallocpy(images->name, &ds->xsource));
  PetscCall(DatasetSetSizes_Private(ds, images->dims[0], &shape, 1));
  PetscCall(DatasetCheckStorage_Private(ds, images->name, "images", (PetscInt64)ds->N * ds->F));
  PetscCall(DatasetCreateStorage_Private(ds));

  /* the last rank, whose block is the nearest to the end of the files, reads them to the end: CRC checked */
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(VecGetArrayWrite(ds->inputs, &x));
  PetscCall(IDXFileReadSamples(images, ds->offset + ds->map->rstart, ds->map->n, (PetscBool)(rank == size - 1), x, &xok));
  PetscCall(VecRestoreArrayWrite(ds->inputs, &x));
  PetscCall(VecGetArrayWrite(ds->targets, &t));
  PetscCall(IDXFileReadSamples(labels, ds->offset + ds->map->rstart, ds->map->n, (PetscBool)(rank == size - 1), t, &tok));
  PetscCall(VecRestoreArrayWrite(ds->targets, &t));
  failed = (xok ? 0 : 1) | (tok ? 0 : 2);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &failed, 1, MPIU_INT, MPI_BOR, comm));
  PetscCheck(!(failed & 1), comm, PETSC_ERR_FILE_READ, "Reading the images file \"%s\" failed: its compressed data is corrupt or truncated, or fails the gzip CRC-32 check", idx->imagefile);
  PetscCheck(!(failed & 2), comm, PETSC_ERR_FILE_READ, "Reading the labels file \"%s\" failed: its compressed data is corrupt or truncated, or fails the gzip CRC-32 check", idx->labelfile);
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_IDX(Dataset ds)
{
  IDXFile        images, labels;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(&images, sizeof(images)));
  PetscCall(PetscMemzero(&labels, sizeof(labels)));
  ierr = DatasetIDXRead(ds, &images, &labels);
  PetscCall(IDXFileClose(&images)); /* also on error: a refused file leaves nothing open */
  PetscCall(IDXFileClose(&labels));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/* The split -help shows as the default: the one set, else the prefix of the images file set directly
   (".../t10k-images-idx3-ubyte.gz": t10k, as a program's test set), else train */
static PetscErrorCode DatasetIDXDefaultSplit_Private(Dataset_IDX *idx, size_t len, char split[])
{
  const char *base, *end;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(split, idx->split ? idx->split : "train", len));
  if (idx->split || !idx->images) PetscFunctionReturn(0);
  base = strrchr(idx->images, '/');
  base = base ? base + 1 : idx->images;
  end  = strstr(base, "-images-idx3-ubyte");
  if (end && end > base && (size_t)(end - base) < len) PetscCall(PetscStrncpy(split, base, (size_t)(end - base) + 1));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetSetFromOptions_IDX(Dataset ds, PetscOptionItems *PetscOptionsObject)
{
  Dataset_IDX *idx = (Dataset_IDX *)ds->data;
  char         images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN], dir[PETSC_MAX_PATH_LEN], split[64], dflt[64];
  PetscBool    iset, lset, dset, sset;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Dataset idx (MNIST-family IDX files) options");
  PetscCall(PetscOptionsString("-dataset_idx_images", "IDX images file (gzip or plain)", "DatasetIDXSetFiles", idx->images ? idx->images : "", images, sizeof(images), &iset));
  PetscCall(PetscOptionsString("-dataset_idx_labels", "IDX labels file (gzip or plain)", "DatasetIDXSetFiles", idx->labels ? idx->labels : "", labels, sizeof(labels), &lset));
  if (iset || lset) PetscCall(DatasetIDXSetFiles_IDX(ds, iset ? images : idx->images, lset ? labels : idx->labels));
  PetscCall(PetscOptionsString("-dataset_idx_dir", "Directory of split-images-idx3-ubyte.gz and split-labels-idx1-ubyte.gz", "DatasetIDXSetDirectory", idx->dir ? idx->dir : "", dir, sizeof(dir), &dset));
  PetscCall(DatasetIDXDefaultSplit_Private(idx, sizeof(dflt), dflt));
  PetscCall(PetscOptionsString("-dataset_idx_split", "File name prefix in -dataset_idx_dir: train or t10k", "DatasetIDXSetDirectory", dflt, split, sizeof(split), &sset));
  if (dset || sset) PetscCall(DatasetIDXSetDirectory_IDX(ds, dset ? dir : idx->dir, sset ? split : idx->split));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetView_IDX(Dataset ds, PetscViewer viewer)
{
  Dataset_IDX *idx = (Dataset_IDX *)ds->data;

  PetscFunctionBegin;
  if (ds->setupcalled) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "images: %s\n", idx->imagefile));
    PetscCall(PetscViewerASCIIPrintf(viewer, "labels: %s\n", idx->labelfile));
  } else if (idx->images || idx->labels) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "images: %s\n", idx->images ? idx->images : "(not set)"));
    PetscCall(PetscViewerASCIIPrintf(viewer, "labels: %s\n", idx->labels ? idx->labels : "(not set)"));
  } else if (idx->dir)
    PetscCall(PetscViewerASCIIPrintf(viewer, "directory: %s, split: %s\n", idx->dir, idx->split ? idx->split : "train"));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetDestroy_IDX(Dataset ds)
{
  Dataset_IDX *idx = (Dataset_IDX *)ds->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(idx->images));
  PetscCall(PetscFree(idx->labels));
  PetscCall(PetscFree(idx->dir));
  PetscCall(PetscFree(idx->split));
  PetscCall(PetscFree(ds->data));
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetIDXSetFiles_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetIDXSetDirectory_C", NULL));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode DatasetCreate_IDX(Dataset ds)
{
  Dataset_IDX *idx;

  PetscFunctionBegin;
  PetscCall(PetscNew(&idx));
  ds->data                = idx;
  ds->defaultscale        = 1.0 / 255.0;
  ds->ops->load           = DatasetLoad_IDX;
  ds->ops->setfromoptions = DatasetSetFromOptions_IDX;
  ds->ops->view           = DatasetView_IDX;
  ds->ops->destroy        = DatasetDestroy_IDX;
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetIDXSetFiles_C", DatasetIDXSetFiles_IDX));
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetIDXSetDirectory_C", DatasetIDXSetDirectory_IDX));
  PetscFunctionReturn(0);
}

/*@C
  DatasetIDXSetFiles - sets the IDX images and labels files an idx Dataset reads

  Logically collective on ds

  Input Parameters:
+ ds     - the Dataset; it becomes an idx Dataset if it has no kind yet (other kinds ignore the call)
. images - the images file, gzip-compressed or plain: [N][rows][cols] unsigned bytes (also [N][f], [N][h][w][c])
- labels - the labels file, gzip-compressed or plain: [N] class numbers

  Options Database Keys:
+ -dataset_idx_images <file> - the images file
- -dataset_idx_labels <file> - the labels file

  Notes:
  Images become samples of shape rows x cols x 1, scaled by 1/255 unless DatasetSetNormalization() says otherwise.
  Every rank reads only its block of samples. New names undo DatasetSetUp().

  Level: beginner

.seealso: `DatasetIDXSetDirectory()`, `DATASETIDX`, `DatasetSetNormalization()`, `DatasetSetUp()`
@*/
PetscErrorCode DatasetIDXSetFiles(Dataset ds, const char images[], const char labels[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (!((PetscObject)ds)->type_name) PetscCall(DatasetSetType(ds, DATASETIDX));
  PetscTryMethod(ds, "DatasetIDXSetFiles_C", (Dataset, const char[], const char[]), (ds, images, labels));
  PetscFunctionReturn(0);
}

/*@C
  DatasetIDXSetDirectory - reads an idx Dataset from a directory of the MNIST family

  Logically collective on ds

  Input Parameters:
+ ds    - the Dataset; it becomes an idx Dataset if it has no kind yet (other kinds ignore the call)
. dir   - the directory
- split - the file name prefix, "train" or "t10k"

  Options Database Keys:
+ -dataset_idx_dir <dir>             - the directory
- -dataset_idx_split <train,t10k>    - the prefix (default train)

  Notes:
  The files are dir/split-images-idx3-ubyte.gz and dir/split-labels-idx1-ubyte.gz, or the same names without .gz
  when only the plain files exist.

  Level: beginner

.seealso: `DatasetIDXSetFiles()`, `DATASETIDX`
@*/
PetscErrorCode DatasetIDXSetDirectory(Dataset ds, const char dir[], const char split[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (!((PetscObject)ds)->type_name) PetscCall(DatasetSetType(ds, DATASETIDX));
  PetscTryMethod(ds, "DatasetIDXSetDirectory_C", (Dataset, const char[], const char[]), (ds, dir, split));
  PetscFunctionReturn(0);
}
