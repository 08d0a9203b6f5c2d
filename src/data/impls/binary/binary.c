/*
  binary: a PETSc binary file (-dataset_file) holding
    1. the inputs, either a Mat N x F written with MatView() (sample i is row i), or a Vec of N*F entries written with
       VecView() together with -dataset_sample_shape;
    2. the targets, a Vec of N (class labels) or N*tsize entries written with VecView().
  PETSc's readers distribute the file; the samples are then copied into the Dataset's layout.
*/
#include <petnet/private/datasetimpl.h>
#include <petscviewer.h>

typedef struct {
  PetscBool matrix; /* the inputs were stored as a Mat (else a Vec); known after load */
} Dataset_Binary;

/* The class id of the first object in the file (MAT_FILE_CLASSID, VEC_FILE_CLASSID, ...), or 0 for an empty file */
static PetscErrorCode DatasetBinaryPeek(Dataset ds, PetscInt *classid)
{
  PetscViewer viewer;
  PetscInt    count;

  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryOpen(PetscObjectComm((PetscObject)ds), ds->file, FILE_MODE_READ, &viewer));
  PetscCall(PetscViewerBinaryRead(viewer, classid, 1, &count, PETSC_INT));
  if (count < 1) *classid = 0;
  PetscCall(PetscViewerDestroy(&viewer));
  PetscFunctionReturn(0);
}

/* inputs stored as a dense Mat N x F: copy its rows into a Vec [nrows_local][F] (row-major, like a batch) */
static PetscErrorCode DatasetBinaryLoadMat(Dataset ds, PetscViewer viewer, PetscInt *N, PetscInt *F, Vec *xall)
{
  Mat                A;
  const PetscScalar *a;
  PetscScalar       *x;
  PetscInt           m, lda;

  PetscFunctionBegin;
  PetscCall(MatCreate(PetscObjectComm((PetscObject)ds), &A));
  PetscCall(MatSetType(A, MATDENSE));
  PetscCall(MatLoad(A, viewer));
  PetscCall(MatGetSize(A, N, F));
  PetscCall(MatGetLocalSize(A, &m, NULL));
  PetscCall(MatDenseGetLDA(A, &lda));
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)ds), m * *F, PETSC_DETERMINE, xall));
  PetscCall(MatDenseGetArrayRead(A, &a));
  PetscCall(VecGetArrayWrite(*xall, &x));
  for (PetscInt i = 0; i < m; i++) /* the local block of a dense Mat is column-major */
    for (PetscInt j = 0; j < *F; j++) x[i * *F + j] = a[i + j * lda];
  PetscCall(VecRestoreArrayWrite(*xall, &x));
  PetscCall(MatDenseRestoreArrayRead(A, &a));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* The targets Vec that follows the inputs: read its header ourselves so that a missing Vec gives a clear error */
static PetscErrorCode DatasetBinaryLoadTargets(Dataset ds, PetscViewer viewer, PetscInt N, Vec *tall, PetscInt *tsize)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)ds);
  PetscInt     header[2], count, n;
  PetscScalar *t;

  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryRead(viewer, header, 2, &count, PETSC_INT));
  PetscCheck(count == 2, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" ends after the inputs: write the targets with VecView() after them", ds->file);
  PetscCheck(header[0] == VEC_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "The object after the inputs in \"%s\" is not a Vec (class id %" PetscInt_FMT "): write the targets with VecView()", ds->file, header[0]);
  PetscCheck(header[1] > 0 && header[1] % N == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The targets in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of entries for each of the %" PetscInt_FMT " samples", ds->file, header[1], N);
  *tsize = header[1] / N;
  PetscCall(VecCreateMPI(comm, PETSC_DECIDE, header[1], tall));
  PetscCall(VecGetLocalSize(*tall, &n));
  PetscCall(VecGetArrayWrite(*tall, &t));
  PetscCall(PetscViewerBinaryReadAll(viewer, t, n, PETSC_DETERMINE, header[1], PETSC_SCALAR));
  PetscCall(VecRestoreArrayWrite(*tall, &t));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_Binary(Dataset ds)
{
  Dataset_Binary *bin  = (Dataset_Binary *)ds->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)ds);
  PetscViewer     viewer;
  PetscInt        classid, N = 0, F = 0, tsize = 0;
  PetNetShape     shape;
  Vec             xall, tall;

  PetscFunctionBegin;
  PetscCheck(ds->file, comm, PETSC_ERR_USER_INPUT, "The binary dataset has no file: give -dataset_file FILE or call DatasetFileSetName()");
  PetscCall(DatasetCheckFile_Private(ds, ds->file, "PETSc binary"));
  PetscCall(DatasetBinaryPeek(ds, &classid));
  PetscCheck(classid == MAT_FILE_CLASSID || classid == VEC_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" does not start with a PETSc Mat or Vec (class id %" PetscInt_FMT "): write the inputs with MatView() or VecView()",
             ds->file, classid);
  bin->matrix = (PetscBool)(classid == MAT_FILE_CLASSID);
  PetscCall(PetscViewerBinaryOpen(comm, ds->file, FILE_MODE_READ, &viewer));
  if (bin->matrix) {
    PetscCall(DatasetBinaryLoadMat(ds, viewer, &N, &F, &xall));
    shape.ndim   = 1;
    shape.dim[0] = F;
  } else {
    PetscInt size;

    PetscCheck(ds->shapeset.ndim, comm, PETSC_ERR_USER_INPUT, "The inputs in \"%s\" are a Vec: give the per-sample shape with -dataset_sample_shape (e.g. 28x28x1), or store them as a Mat N x F", ds->file);
    PetscCall(VecCreate(comm, &xall));
    PetscCall(VecLoad(xall, viewer));
    PetscCall(VecGetSize(xall, &size));
    shape = ds->shapeset;
    PetscCall(PetNetShapeSize(&shape, &F));
    PetscCheck(size % F == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The inputs Vec in \"%s\" has %" PetscInt_FMT " entries, not a whole number of samples of %" PetscInt_FMT " (-dataset_sample_shape)", ds->file, size, F);
    N = size / F;
  }
  PetscCheck(N > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" holds no samples", ds->file);
  PetscCall(DatasetBinaryLoadTargets(ds, viewer, N, &tall, &tsize));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->tsource));
  PetscCall(DatasetSetSizes_Private(ds, N, &shape, tsize));
  PetscCall(DatasetCopySamples_Private(ds, xall, ds->F, &ds->inputs));
  PetscCall(DatasetCopySamples_Private(ds, tall, ds->tsize, &ds->targets));
  PetscCall(VecDestroy(&xall));
  PetscCall(VecDestroy(&tall));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetView_Binary(Dataset ds, PetscViewer viewer)
{
  Dataset_Binary *bin = (Dataset_Binary *)ds->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "file: %s\n", ds->file ? ds->file : "(not set)"));
  if (ds->setupcalled) PetscCall(PetscViewerASCIIPrintf(viewer, "inputs stored as a %s\n", bin->matrix ? "Mat (samples x features)" : "Vec"));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetDestroy_Binary(Dataset ds)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(ds->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode DatasetCreate_Binary(Dataset ds)
{
  Dataset_Binary *bin;

  PetscFunctionBegin;
  PetscCall(PetscNew(&bin));
  ds->data         = bin;
  ds->ops->load    = DatasetLoad_Binary;
  ds->ops->view    = DatasetView_Binary;
  ds->ops->destroy = DatasetDestroy_Binary;
  PetscFunctionReturn(0);
}
