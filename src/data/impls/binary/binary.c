/*
  binary: a PETSc binary file (-dataset_file) holding
    1. the inputs, either a Mat N x F written with MatView() (sample i is row i), or a Vec of N*F entries written with
       VecView() together with -dataset_sample_shape;
    2. the targets, a Vec of N (class labels) or N*tsize entries written with VecView().
  PETSc's readers distribute the file; the samples are then copied into the Dataset's layout.
*/
#include <petnet/private/datasetimpl.h>
#include <petscviewer.h>
#include <sys/stat.h>

typedef struct {
  PetscBool matrix; /* the inputs were stored as a Mat (else a Vec); known after load */
} Dataset_Binary;

/*
  The file is read with PETSc's binary viewer, but not with MatLoad()/VecLoad(): their headers are trusted and their
  sparse Mat format writes where the file's column indices say. Here every size in a header is checked, in 64-bit
  arithmetic, against the bytes the file really holds before anything is allocated, and every row length and column
  index is checked before it is used. The layouts (PETSc binary, big-endian, 32-bit ints, 8-byte scalars):
    Mat: MAT_FILE_CLASSID M N nz, then nz == -1 (dense): M*N scalars, row-major;
                                  else: M row lengths, nz column indices, nz scalars (AIJ)
    Vec: VEC_FILE_CLASSID n, then n scalars
*/

/* The length of the file in bytes, the same on every rank */
static PetscErrorCode DatasetBinaryFileLength(Dataset ds, PetscInt64 *length)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)ds);
  PetscMPIInt rank;
  struct stat st;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *length = -1;
  if (!rank && !stat(ds->file, &st)) *length = (PetscInt64)st.st_size;
  PetscCallMPI(MPI_Bcast(length, 1, MPIU_INT64, 0, comm));
  PetscCheck(*length >= 0, comm, PETSC_ERR_FILE_READ, "Cannot stat the binary file \"%s\"", ds->file);
  PetscFunctionReturn(0);
}

/* An object of nbytes starting at offset must lie inside the file */
static PetscErrorCode DatasetBinaryCheckFits(Dataset ds, const char what[], PetscInt64 offset, PetscInt64 nbytes, PetscInt64 length)
{
  PetscFunctionBegin;
  PetscCheck(offset + nbytes <= length, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_UNEXPECTED,
             "The binary file \"%s\" declares %s (%" PetscInt64_FMT " bytes from byte %" PetscInt64_FMT "), but it holds only %" PetscInt64_FMT " bytes: the file is truncated or corrupt", ds->file, what, nbytes, offset, length);
  PetscFunctionReturn(0);
}

/* Every rank's flag, or-ed: a collective error when any rank found a bad entry */
static PetscErrorCode DatasetBinaryAnyBad(Dataset ds, PetscInt bad, PetscInt *anybad)
{
  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(&bad, anybad, 1, MPIU_INT, MPI_MAX, PetscObjectComm((PetscObject)ds)));
  PetscFunctionReturn(0);
}

/* The inputs stored as a Mat M x N (header read, M, N > 0): its rows into a Vec [nrows_local][N], split PETSC_DECIDE */
static PetscErrorCode DatasetBinaryReadMat(Dataset ds, PetscViewer viewer, PetscInt M, PetscInt N, PetscInt nz, PetscInt64 *offset, PetscInt64 length, Vec *xall)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)ds);
  PetscInt     m = PETSC_DECIDE, Mg = M, bad = 0, anybad;
  PetscInt64   entries = (PetscInt64)M * N, nbytes;
  PetscScalar *x;
  char         what[128];

  PetscFunctionBegin;
  PetscCheck(nz == -1 || (nz >= 0 && nz <= entries), comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" declares a Mat of %" PetscInt_FMT " x %" PetscInt_FMT " with %" PetscInt_FMT " nonzeros: the header is corrupt", ds->file, M, N, nz);
  nbytes = nz == -1 ? entries * (PetscInt64)sizeof(PetscScalar) : (PetscInt64)M * 4 + (PetscInt64)nz * (4 + (PetscInt64)sizeof(PetscScalar));
  PetscCall(PetscSNPrintf(what, sizeof(what), "a Mat of %" PetscInt_FMT " x %" PetscInt_FMT " inputs", M, N));
  PetscCall(DatasetBinaryCheckFits(ds, what, *offset, nbytes, length));
  /* a sparse (AIJ) Mat is expanded to dense storage: refuse one that would grow more than 1024-fold, as a hostile header
     (8 rows of 67 million columns, no nonzeros) would */
  PetscCheck(nz == -1 || entries <= 1024 * (PetscInt64)PetscMax(nz, 1), comm, PETSC_ERR_FILE_UNEXPECTED,
             "The binary file \"%s\" holds a sparse Mat of %" PetscInt_FMT " x %" PetscInt_FMT " with only %" PetscInt_FMT " nonzeros: PetNet stores inputs dense, so write them as a dense Mat (MatConvert() to MATDENSE before MatView())", ds->file, M,
             N, nz);
  PetscCall(DatasetCheckStorage_Private(ds, ds->file, "inputs", entries));
  PetscCall(PetscSplitOwnership(comm, &m, &Mg));
  PetscCall(VecCreateMPI(comm, m * N, PETSC_DETERMINE, xall));
  PetscCall(VecGetArrayWrite(*xall, &x));
  if (nz == -1)
    PetscCall(PetscViewerBinaryReadAll(viewer, x, m * N, PETSC_DETERMINE, M * N, PETSC_SCALAR));
  else {
    PetscInt    *rlens, *cols, lnz = 0;
    PetscScalar *vals;
    PetscInt64   sum = 0;

    PetscCall(PetscMalloc1(m, &rlens));
    PetscCall(PetscViewerBinaryReadAll(viewer, rlens, m, PETSC_DETERMINE, M, PETSC_INT));
    for (PetscInt i = 0; i < m; i++) {
      if (rlens[i] < 0 || rlens[i] > N) bad = 1;
      sum += rlens[i];
    }
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_INT64, MPI_SUM, comm));
    PetscCall(DatasetBinaryAnyBad(ds, bad, &anybad));
    if (anybad || sum != nz) {
      PetscCall(PetscFree(rlens));
      PetscCall(VecRestoreArrayWrite(*xall, &x));
      PetscCall(VecDestroy(xall));
      SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" holds a Mat of %" PetscInt_FMT " x %" PetscInt_FMT " whose row lengths are not in 0..%" PetscInt_FMT " or do not add up to its %" PetscInt_FMT " nonzeros: the file is corrupt",
              ds->file, M, N, N, nz);
    }
    for (PetscInt i = 0; i < m; i++) lnz += rlens[i];
    PetscCall(PetscMalloc2(lnz, &cols, lnz, &vals));
    PetscCall(PetscViewerBinaryReadAll(viewer, cols, lnz, PETSC_DETERMINE, nz, PETSC_INT));
    PetscCall(PetscViewerBinaryReadAll(viewer, vals, lnz, PETSC_DETERMINE, nz, PETSC_SCALAR));
    for (PetscInt k = 0; k < lnz; k++)
      if (cols[k] < 0 || cols[k] >= N) bad = 1;
    PetscCall(DatasetBinaryAnyBad(ds, bad, &anybad));
    if (!anybad) {
      PetscCall(PetscArrayzero(x, m * N));
      for (PetscInt i = 0, k = 0; i < m; i++)
        for (PetscInt j = 0; j < rlens[i]; j++, k++) x[i * N + cols[k]] = vals[k];
    }
    PetscCall(PetscFree(rlens));
    PetscCall(PetscFree2(cols, vals));
    if (anybad) {
      PetscCall(VecRestoreArrayWrite(*xall, &x));
      PetscCall(VecDestroy(xall));
    }
    PetscCheck(!anybad, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" holds a Mat of %" PetscInt_FMT " x %" PetscInt_FMT " with column indices outside 0..%" PetscInt_FMT ": the file is corrupt", ds->file, M, N, N - 1);
  }
  PetscCall(VecRestoreArrayWrite(*xall, &x));
  *offset += nbytes;
  PetscFunctionReturn(0);
}

/* A Vec of n entries (header read) into a new Vec split PETSC_DECIDE; what: "targets" */
static PetscErrorCode DatasetBinaryReadVec(Dataset ds, PetscViewer viewer, const char what[], PetscInt n, PetscInt64 *offset, PetscInt64 length, Vec *v)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)ds);
  PetscInt     nlocal;
  PetscInt64   nbytes = (PetscInt64)n * (PetscInt64)sizeof(PetscScalar);
  PetscScalar *a;
  char         desc[128];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(desc, sizeof(desc), "a Vec of %" PetscInt_FMT " %s", n, what));
  PetscCall(DatasetBinaryCheckFits(ds, desc, *offset, nbytes, length));
  PetscCall(DatasetCheckStorage_Private(ds, ds->file, what, n));
  PetscCall(VecCreateMPI(comm, PETSC_DECIDE, n, v));
  PetscCall(VecGetLocalSize(*v, &nlocal));
  PetscCall(VecGetArrayWrite(*v, &a));
  PetscCall(PetscViewerBinaryReadAll(viewer, a, nlocal, PETSC_DETERMINE, n, PETSC_SCALAR));
  PetscCall(VecRestoreArrayWrite(*v, &a));
  *offset += nbytes;
  PetscFunctionReturn(0);
}

/* The header of the next object: its class id and up to 3 sizes; *count ints were there */
static PetscErrorCode DatasetBinaryReadHeader(PetscViewer viewer, PetscInt n, PetscInt header[], PetscInt *count, PetscInt64 *offset)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryRead(viewer, header, n, count, PETSC_INT));
  *offset += 4 * (PetscInt64)*count;
  PetscFunctionReturn(0);
}

/* Reads the inputs (a Mat or a Vec) and the targets Vec: *xall, *tall hold N samples of shape and targets of tsize */
static PetscErrorCode DatasetBinaryRead(Dataset ds, PetscViewer viewer, PetscInt *N, PetNetShape *shape, PetscInt *tsize, Vec *xall, Vec *tall)
{
  Dataset_Binary *bin       = (Dataset_Binary *)ds->data;
  MPI_Comm        comm      = PetscObjectComm((PetscObject)ds);
  PetscInt        header[4] = {0, 0, 0, 0}, count, F, nt;
  PetscInt64      offset    = 0, length;

  PetscFunctionBegin;
  PetscCall(DatasetBinaryFileLength(ds, &length));
  PetscCall(DatasetBinaryReadHeader(viewer, 1, header, &count, &offset));
  if (count < 1) header[0] = 0;
  PetscCheck(header[0] == MAT_FILE_CLASSID || header[0] == VEC_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" does not start with a PETSc Mat or Vec (class id %" PetscInt_FMT "): write the inputs with MatView() or VecView()",
             ds->file, header[0]);
  bin->matrix = (PetscBool)(header[0] == MAT_FILE_CLASSID);
  PetscCall(DatasetBinaryReadHeader(viewer, bin->matrix ? 3 : 1, header + 1, &count, &offset));
  PetscCheck(count == (bin->matrix ? 3 : 1), comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" ends inside the header of its inputs: the file is truncated", ds->file);
  if (bin->matrix) {
    *N = header[1];
    F  = header[2];
    PetscCheck(*N > 0 && F > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" holds a Mat of %" PetscInt_FMT " x %" PetscInt_FMT ": the inputs need at least one sample (row) of at least one entry", ds->file, *N, F);
    PetscCall(DatasetBinaryReadMat(ds, viewer, *N, F, header[3], &offset, length, xall));
    shape->ndim   = 1;
    shape->dim[0] = F;
  } else {
    PetscInt size = header[1];

    PetscCheck(ds->shapeset.ndim, comm, PETSC_ERR_USER_INPUT, "The inputs in \"%s\" are a Vec: give the per-sample shape with -dataset_sample_shape (e.g. 28x28x1), or store them as a Mat N x F", ds->file);
    PetscCheck(size > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" holds an inputs Vec of %" PetscInt_FMT " entries: the file is corrupt or holds no samples", ds->file, size);
    *shape = ds->shapeset;
    PetscCall(PetNetShapeSize(shape, &F));
    PetscCheck(size % F == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The inputs Vec in \"%s\" has %" PetscInt_FMT " entries, not a whole number of samples of %" PetscInt_FMT " (-dataset_sample_shape)", ds->file, size, F);
    *N = size / F;
    PetscCall(DatasetBinaryReadVec(ds, viewer, "inputs", size, &offset, length, xall));
  }
  /* the targets Vec that follows */
  PetscCall(DatasetBinaryReadHeader(viewer, 2, header, &count, &offset));
  nt = header[1];
  PetscCheck(count == 2, comm, PETSC_ERR_FILE_UNEXPECTED, "The binary file \"%s\" ends after the inputs: write the targets with VecView() after them", ds->file);
  PetscCheck(header[0] == VEC_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "The object after the inputs in \"%s\" is not a Vec (class id %" PetscInt_FMT "): write the targets with VecView()", ds->file, header[0]);
  PetscCheck(nt > 0 && nt % *N == 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The targets in \"%s\" hold %" PetscInt_FMT " entries, not a whole number of entries for each of the %" PetscInt_FMT " samples", ds->file, nt, *N);
  *tsize = nt / *N;
  PetscCall(DatasetBinaryReadVec(ds, viewer, "targets", nt, &offset, length, tall));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_Binary(Dataset ds)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)ds);
  PetscViewer    viewer;
  PetscInt       N = 0, tsize = 0;
  PetNetShape    shape;
  Vec            xall = NULL, tall = NULL;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCheck(ds->file, comm, PETSC_ERR_USER_INPUT, "The binary dataset has no file: give -dataset_file FILE or call DatasetFileSetName()");
  PetscCall(DatasetCheckFile_Private(ds, ds->file, "PETSc binary"));
  PetscCall(PetscViewerBinaryOpen(comm, ds->file, FILE_MODE_READ, &viewer));
  ierr = DatasetBinaryRead(ds, viewer, &N, &shape, &tsize, &xall, &tall);
  PetscCall(PetscViewerDestroy(&viewer)); /* also on error: a refused file leaves nothing open */
  if (ierr) {
    PetscCall(VecDestroy(&xall));
    PetscCall(VecDestroy(&tall));
  }
  PetscCall(ierr);
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->tsource));
  PetscCall(PetscFree(ds->xsource));
  PetscCall(PetscStrallocpy(ds->file, &ds->xsource));
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
