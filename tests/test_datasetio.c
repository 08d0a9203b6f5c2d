static const char help[] = "Dataset kinds on small synthetic files written here (into -dir, default tests/out), whose every value is a\n"
                           "known function of (sample, entry):\n"
                           "  -case idx [-gz]                 IDX images and labels, plain or gzip\n"
                           "  -case binary [-form mat|vec] [-labels]   PETSc binary: inputs as a Mat N x F or a Vec, then the targets\n"
                           "  -case hdf5 [-names]             HDF5 datasets inputs/targets (shape from an attribute) or x/y\n"
                           "  -case memory [-layout decide|rank0]       user Vecs, referenced or copied\n"
                           "Each checks N, the shape, the classes, every stored sample, and every batch of two shuffled epochs and one\n"
                           "in file order against the function, and that each epoch visits every sample once.\n"
                           "  -case augment                   4x4 images 1..16 shifted (-dataset_augment_shift 1) and flipped: every transform\n"
                           "                                  of a hand-written table found among 40 epochs of draws gives exactly its values\n"
                           "  -case error -error missing|magic|truncated|truncatedgz|count|label|type|notargets|hdf5name|shape|vecshape|\n"
                           "                     gzcrc|gzheader|gzbomb|binrows|bincols|hdf5rank3|hdf5trunc|label255|labelfrac|targetnan|inputinf|limit\n"
                           "                                  writes a bad input and must stop with a clear error.\n";

#include <petnet.h>
#include <petnetdataset.h>
#include <petscviewerhdf5.h>
#include <petscdmda.h>
#include <zlib.h>
#include <unistd.h>

#define NSAMPLES 50
static char        dir[PETSC_MAX_PATH_LEN] = "tests/out";
static int         nranks;                      /* in the file names, so runs at different sizes do not collide */
static PetscBool   regression;                  /* targets of 2 entries instead of labels */
static PetscInt    idxrows = 4, idxcols = 3;    /* idx samples: 4 x 3 bytes */
static PetNetShape synthshape = {3, {3, 2, 2}}; /* binary, hdf5, memory samples: 3 x 2 x 2 */
static PetscInt    badsample  = -1;             /* >= 0: the synthetic target of this sample is badvalue */
static PetscReal   badvalue;
static PetscInt    badinput = -1; /* >= 0: the synthetic input 2 of this sample is Inf */

/* ------------------------------------------------------------------------------------------------------------ */
/* The data: idx bytes, and real values for the other kinds */

static unsigned char IDXByte(PetscInt i, PetscInt j)
{
  return (unsigned char)((7 * i + 13 * j + 3) % 256);
}
static unsigned char IDXLabel(PetscInt i)
{
  return (unsigned char)(i % 10);
}
static PetscReal SynthInput(PetscInt i, PetscInt j, PetscInt F)
{
  if (i == badinput && j == 2) return (PetscReal)INFINITY;
  return PetscSinReal(0.37 * (i * F + j) + 0.1) + 1e-3 * i;
}
static PetscReal SynthTarget(PetscInt i, PetscInt k)
{
  if (i == badsample) return badvalue;
  return regression ? PetscCosReal(0.5 * i + k) : (PetscReal)(i % 3);
}

typedef struct {
  PetscBool idx;      /* bytes (else synthetic reals) */
  PetscInt  F, tsize; /* entries per sample and target */
  PetscReal a, b;     /* the Dataset's normalization x -> a x + b */
} Truth;

static PetscReal TrueInput(const Truth *tr, PetscInt i, PetscInt j)
{
  return tr->a * (tr->idx ? (PetscReal)IDXByte(i, j) : SynthInput(i, j, tr->F)) + tr->b;
}
static PetscReal TrueTarget(const Truth *tr, PetscInt i, PetscInt k)
{
  return tr->idx ? (PetscReal)IDXLabel(i) : SynthTarget(i, k);
}

static PetscErrorCode GetTruth(Dataset ds, PetscBool idx, Truth *tr)
{
  PetNetShape shape;
  PetscReal   scale, mean, std;

  PetscFunctionBegin;
  tr->idx = idx;
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(PetNetShapeSize(&shape, &tr->F));
  PetscCall(DatasetGetTargetSize(ds, &tr->tsize));
  PetscCall(DatasetGetNormalization(ds, &scale, &mean, &std));
  tr->a = scale / std;
  tr->b = -mean / std;
  PetscFunctionReturn(0);
}

/* X [n][F], T [n][tsize] hold the samples samples[0..n) (local) */
static PetscErrorCode CheckSamples(const Truth *tr, Vec X, Vec T, PetscInt n, const PetscInt samples[], const char what[])
{
  const PetscScalar *x, *t;
  PetscInt           nx, nt;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(X, &nx));
  PetscCall(VecGetLocalSize(T, &nt));
  PetscCheck(nx == n * tr->F && nt == n * tr->tsize, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: local sizes %" PetscInt_FMT ", %" PetscInt_FMT " for %" PetscInt_FMT " samples", what, nx, nt, n);
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt r = 0; r < n; r++) {
    for (PetscInt j = 0; j < tr->F; j++) {
      PetscReal want = TrueInput(tr, samples[r], j);
      PetscCheck(PetscAbsReal(PetscRealPart(x[r * tr->F + j]) - want) <= 1e-14 * (1 + PetscAbsReal(want)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: sample %" PetscInt_FMT " entry %" PetscInt_FMT " is %.17g, expected %.17g", what, samples[r], j,
                 (double)PetscRealPart(x[r * tr->F + j]), (double)want);
    }
    for (PetscInt k = 0; k < tr->tsize; k++)
      PetscCheck(PetscRealPart(t[r * tr->tsize + k]) == TrueTarget(tr, samples[r], k), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: target %" PetscInt_FMT " of sample %" PetscInt_FMT " is %g, expected %g", what, k, samples[r],
                 (double)PetscRealPart(t[r * tr->tsize + k]), (double)TrueTarget(tr, samples[r], k));
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscFunctionReturn(0);
}

/* The stored samples (DatasetGetAll) are the first N of the source, in file order, split like PETSC_DECIDE */
static PetscErrorCode CheckAll(Dataset ds, const Truth *tr)
{
  Vec      X, T;
  PetscInt N, n = PETSC_DECIDE, start, *samples;

  PetscFunctionBegin;
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCallMPI(MPI_Scan(&n, &start, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  start -= n;
  PetscCall(PetscMalloc1(n, &samples));
  for (PetscInt i = 0; i < n; i++) samples[i] = start + i;
  PetscCall(DatasetGetAll(ds, &X, &T));
  PetscCall(CheckSamples(tr, X, T, n, samples, "DatasetGetAll"));
  PetscCall(PetscFree(samples));
  PetscFunctionReturn(0);
}

/* Every batch of the epoch holds the samples DatasetGetBatchIndices names, with the right global size; the epoch
   visits every sample once; returns how many positions of the order differ from the file order. */
static PetscErrorCode CheckEpoch(Dataset ds, const Truth *tr, PetscInt epoch, PetscInt *moved)
{
  PetscInt N, B, nbatches, *seen, count = 0;
  Vec      X, T;
  char     what[64];

  PetscFunctionBegin;
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(DatasetGetBatchSize(ds, &B));
  PetscCall(DatasetGetNumBatches(ds, &nbatches));
  PetscCheck(nbatches == (N + B - 1) / B, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " batches for N %" PetscInt_FMT " and B %" PetscInt_FMT, nbatches, N, B);
  PetscCall(PetscCalloc1(N, &seen));
  PetscCall(DatasetBeginEpoch(ds, epoch));
  for (PetscInt b = 0; b < nbatches; b++) {
    const PetscInt *samples;
    PetscInt        n, nb;

    PetscCall(DatasetGetBatch(ds, b, &X, &T));
    PetscCall(DatasetGetBatchIndices(ds, b, &n, &samples));
    PetscCall(VecGetSize(T, &nb));
    PetscCheck(nb == PetscMin(B, N - b * B) * tr->tsize, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Batch %" PetscInt_FMT " has %" PetscInt_FMT " target entries", b, nb);
    PetscCall(PetscSNPrintf(what, sizeof(what), "epoch %" PetscInt_FMT " batch %" PetscInt_FMT, epoch, b));
    PetscCall(CheckSamples(tr, X, T, n, samples, what));
    for (PetscInt r = 0; r < n; r++) seen[samples[r]]++;
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, seen, (PetscMPIInt)N, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  for (PetscInt i = 0; i < N; i++) PetscCheck(seen[i] == 1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Epoch %" PetscInt_FMT " used sample %" PetscInt_FMT " %" PetscInt_FMT " times", epoch, i, seen[i]);
  /* the global order: batch b, rank-major parts; compare with the file order */
  for (PetscInt b = 0; b < nbatches; b++) {
    const PetscInt *samples;
    PetscInt        n, first = 0;

    PetscCall(DatasetGetBatchIndices(ds, b, &n, &samples));
    PetscCallMPI(MPI_Scan(&n, &first, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
    first -= n;
    for (PetscInt r = 0; r < n; r++) count += samples[r] != b * B + first + r;
  }
  PetscCall(MPIU_Allreduce(&count, moved, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  PetscCall(PetscFree(seen));
  PetscFunctionReturn(0);
}

/* Shared by every kind: sizes, stored samples, two shuffled epochs and one in file order */
static PetscErrorCode CheckDataset(Dataset ds, PetscBool idx, PetscInt nsource)
{
  Truth       tr;
  PetscInt    N, nclasses, moved[3], limit = PETSC_DETERMINE;
  PetNetShape shape;
  char        s[64];

  PetscFunctionBegin;
  PetscCall(DatasetSetUp(ds));
  PetscCall(GetTruth(ds, idx, &tr));
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(DatasetGetNumClasses(ds, &nclasses));
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-dataset_limit", &limit, NULL));
  PetscCheck(N == (limit > 0 ? PetscMin(limit, nsource) : nsource), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "N = %" PetscInt_FMT " with limit %" PetscInt_FMT " of %" PetscInt_FMT, N, limit, nsource);
  PetscCheck(nclasses == (idx ? 10 : regression ? 0 : 3), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " classes", nclasses);
  if (nclasses) PetscCall(DatasetCheckLabels(ds, nclasses)); /* every label a class: must pass */
  PetscCall(CheckAll(ds, &tr));
  PetscCall(DatasetSetShuffle(ds, PETSC_TRUE));
  PetscCall(CheckEpoch(ds, &tr, 0, &moved[0]));
  PetscCall(CheckEpoch(ds, &tr, 1, &moved[1]));
  PetscCall(DatasetSetShuffle(ds, PETSC_FALSE));
  PetscCall(CheckEpoch(ds, &tr, 2, &moved[2]));
  PetscCheck(moved[0] > N / 2 && moved[1] > N / 2 && moved[2] == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Samples out of file order: %" PetscInt_FMT ", %" PetscInt_FMT " (shuffled), %" PetscInt_FMT " (not)", moved[0], moved[1], moved[2]);
  PetscCall(PetNetShapeToString(&shape, sizeof(s), s));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "N %" PetscInt_FMT " shape %s targets %" PetscInt_FMT " classes %" PetscInt_FMT ": all samples, 2 shuffled epochs and 1 in file order exact\n", N, s, tr.tsize, nclasses));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Writers (rank 0 writes, the others wait) */

static PetscErrorCode WriteIDX(const char path[], const char *gz, PetscInt ndims, const PetscInt dims[], PetscInt magicdims, size_t nbytes, const unsigned char data[])
{
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (!rank) {
    gzFile        f            = gzopen(path, gz ? gz : "wT");
    unsigned char head[4 + 16] = {0, 0, 0x08, (unsigned char)magicdims};

    PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s", path);
    for (PetscInt d = 0; d < ndims; d++)
      for (int k = 0; k < 4; k++) head[4 + 4 * d + k] = (unsigned char)(dims[d] >> (8 * (3 - k)));
    PetscCheck(gzwrite(f, head, (unsigned)(4 + 4 * ndims)) == 4 + 4 * ndims && (!nbytes || gzwrite(f, data, (unsigned)nbytes) == (int)nbytes), PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s", path);
    PetscCheck(gzclose(f) == Z_OK, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot close %s", path);
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

static unsigned char labelvalue = 12; /* the bad label WriteIDXPair writes */
static PetscBool     storedgz   = PETSC_FALSE;

/* images [nimages][rows][cols] (of which only nwritten are written) and labels [nlabels] (label i for sample i, but
   labelvalue for sample badlabel) */
static PetscErrorCode WriteIDXPair(const char name[], PetscBool gz, PetscInt nimages, PetscInt nwritten, PetscInt nlabels, PetscInt badlabel, char images[], char labels[])
{
  unsigned char *pix, *lab;
  PetscInt       dims[3] = {nimages, idxrows, idxcols}, F = idxrows * idxcols;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(images, PETSC_MAX_PATH_LEN, "%s/%s%d-images-idx3-ubyte%s", dir, name, nranks, gz ? ".gz" : ""));
  PetscCall(PetscSNPrintf(labels, PETSC_MAX_PATH_LEN, "%s/%s%d-labels-idx1-ubyte%s", dir, name, nranks, gz ? ".gz" : ""));
  PetscCall(PetscMalloc2(nwritten * F, &pix, nlabels, &lab));
  for (PetscInt i = 0; i < nwritten; i++)
    for (PetscInt j = 0; j < F; j++) pix[i * F + j] = IDXByte(i, j);
  for (PetscInt i = 0; i < nlabels; i++) lab[i] = IDXLabel(i);
  if (badlabel >= 0 && badlabel < nlabels) lab[badlabel] = labelvalue;
  /* gzip level 0 (stored blocks) for the CRC case: a changed byte is then caught by the CRC alone */
  PetscCall(WriteIDX(images, gz ? (storedgz ? "wb0" : "wb") : NULL, 3, dims, 3, (size_t)(nwritten * F), pix));
  PetscCall(WriteIDX(labels, gz ? (storedgz ? "wb0" : "wb") : NULL, 1, &nlabels, 1, (size_t)nlabels, lab));
  PetscCall(PetscFree2(pix, lab));
  PetscFunctionReturn(0);
}

/* The synthetic inputs as a Vec of block size F, split by samples, and the targets */
static PetscErrorCode CreateSynthVecs(PetscInt N, PetscInt nlocal, Vec *X, Vec *T)
{
  PetscInt     F, tsize = regression ? 2 : 1, start;
  PetscScalar *x, *t;

  PetscFunctionBegin;
  PetscCall(PetNetShapeSize(&synthshape, &F));
  PetscCall(VecCreate(PETSC_COMM_WORLD, X));
  PetscCall(VecSetSizes(*X, nlocal == PETSC_DECIDE ? PETSC_DECIDE : nlocal * F, N * F));
  PetscCall(VecSetBlockSize(*X, F));
  PetscCall(VecSetFromOptions(*X));
  PetscCall(VecGetOwnershipRange(*X, &start, NULL));
  start /= F;
  PetscCall(VecGetLocalSize(*X, &nlocal));
  nlocal /= F;
  PetscCall(VecCreate(PETSC_COMM_WORLD, T));
  PetscCall(VecSetSizes(*T, nlocal * tsize, N * tsize));
  PetscCall(VecSetBlockSize(*T, tsize));
  PetscCall(VecSetFromOptions(*T));
  PetscCall(VecGetArrayWrite(*X, &x));
  PetscCall(VecGetArrayWrite(*T, &t));
  for (PetscInt i = 0; i < nlocal; i++) {
    for (PetscInt j = 0; j < F; j++) x[i * F + j] = SynthInput(start + i, j, F);
    for (PetscInt k = 0; k < tsize; k++) t[i * tsize + k] = SynthTarget(start + i, k);
  }
  PetscCall(VecRestoreArrayWrite(*X, &x));
  PetscCall(VecRestoreArrayWrite(*T, &t));
  PetscCall(PetscObjectSetName((PetscObject)*X, "inputs"));
  PetscCall(PetscObjectSetName((PetscObject)*T, "targets"));
  PetscFunctionReturn(0);
}

/* form "mat": a dense Mat N x F then the targets; "vec": the inputs Vec then the targets; "none": the Mat only */
static PetscErrorCode WriteBinary(const char path[], const char form[])
{
  PetscViewer viewer;
  Vec         X, T;
  PetscInt    F, rstart, rend;
  PetscBool   ismat, isnone;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(form, "mat", &ismat));
  PetscCall(PetscStrcmp(form, "none", &isnone));
  PetscCall(CreateSynthVecs(NSAMPLES, PETSC_DECIDE, &X, &T));
  PetscCall(PetNetShapeSize(&synthshape, &F));
  PetscCall(PetscViewerCreate(PETSC_COMM_WORLD, &viewer));
  PetscCall(PetscViewerSetType(viewer, PETSCVIEWERBINARY));
  PetscCall(PetscViewerFileSetMode(viewer, FILE_MODE_WRITE));
  PetscCall(PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE));
  PetscCall(PetscViewerFileSetName(viewer, path));
  if (ismat || isnone) {
    Mat A;

    PetscCall(MatCreateDense(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, NSAMPLES, F, NULL, &A));
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    for (PetscInt i = rstart; i < rend; i++)
      for (PetscInt j = 0; j < F; j++) PetscCall(MatSetValue(A, i, j, SynthInput(i, j, F), INSERT_VALUES));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatView(A, viewer));
    PetscCall(MatDestroy(&A));
  } else
    PetscCall(VecView(X, viewer));
  if (!isnone) PetscCall(VecView(T, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

/* datasets "inputs" [N][F] (block size F) with a "sample_shape" attribute and "targets"; and "x" (flat) and "y" */
static PetscErrorCode WriteHDF5(const char path[])
{
  PetscViewer viewer;
  Vec         X, T, x;
  char        shape[64];

  PetscFunctionBegin;
  PetscCall(CreateSynthVecs(NSAMPLES, PETSC_DECIDE, &X, &T));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, path, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(X, viewer));
  PetscCall(PetNetShapeToString(&synthshape, sizeof(shape), shape));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, "inputs", "sample_shape", PETSC_STRING, shape));
  PetscCall(VecView(T, viewer));
  PetscCall(VecDuplicate(X, &x)); /* the same values without a block size: a flat dataset */
  PetscCall(VecCopy(X, x));
  PetscCall(VecSetBlockSize(x, 1));
  PetscCall(PetscObjectSetName((PetscObject)x, "x"));
  PetscCall(VecView(x, viewer));
  PetscCall(PetscObjectSetName((PetscObject)T, "y"));
  PetscCall(VecView(T, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

/* Rank 0 overwrites n bytes at offset of the file (offset < 0: from the end); the others wait */
static PetscErrorCode PatchFile(const char path[], long offset, const unsigned char bytes[], size_t n)
{
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (!rank) {
    FILE *f = fopen(path, "r+b");

    PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot open %s", path);
    PetscCheck(!fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET) && fwrite(bytes, 1, n, f) == n, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot patch %s", path);
    fclose(f);
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

/* Rank 0 cuts the file to its first fraction of bytes */
static PetscErrorCode TruncateFile(const char path[], double fraction)
{
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (!rank) {
    FILE *f = fopen(path, "rb");
    long  n;

    PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fclose(f);
    PetscCheck(!truncate(path, (off_t)(n * fraction)), PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot truncate %s", path);
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

/* An HDF5 file whose "inputs" are 3-D, [10][4][3] (a DMDA's Vec), with fine "targets" */
static PetscErrorCode WriteHDF5Rank3(const char path[])
{
  PetscViewer viewer;
  DM          da;
  Vec         X, T;

  PetscFunctionBegin;
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 3, 4, 10, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &X));
  PetscCall(VecSet(X, 0.5));
  PetscCall(PetscObjectSetName((PetscObject)X, "inputs"));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 10, &T));
  PetscCall(VecSet(T, 1.0));
  PetscCall(PetscObjectSetName((PetscObject)T, "targets"));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, path, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(X, viewer));
  PetscCall(VecView(T, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Cases */

static PetscErrorCode TestIDX(void)
{
  Dataset   ds;
  PetscBool gz = PETSC_FALSE;
  char      images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-gz", &gz, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-stored", &storedgz, NULL));
  PetscCall(WriteIDXPair(gz ? "data_idx_gz" : "data_idx_plain", gz, NSAMPLES, NSAMPLES, NSAMPLES, -1, images, labels));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(DatasetIDXSetFiles(ds, images, labels));
  PetscCall(DatasetSetFromOptions(ds));
  PetscCall(CheckDataset(ds, PETSC_TRUE, NSAMPLES));
  PetscCall(DatasetDestroy(&ds));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestBinary(void)
{
  Dataset ds;
  char    form[8] = "mat", path[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-form", form, sizeof(form), NULL));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_binary_%s%d.bin", dir, form, nranks));
  PetscCall(WriteBinary(path, form));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(DatasetFileSetName(ds, path));
  PetscCall(DatasetSetFromOptions(ds)); /* the .bin name picks the binary kind */
  PetscCall(CheckDataset(ds, PETSC_FALSE, NSAMPLES));
  PetscCall(DatasetDestroy(&ds));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestHDF5(void)
{
  Dataset   ds;
  PetscBool names = PETSC_FALSE;
  char      path[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-names", &names, NULL));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_hdf5_%d.h5", dir, nranks));
  PetscCall(WriteHDF5(path));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(DatasetFileSetName(ds, path)); /* the .h5 name picks the hdf5 kind */
  if (names) {
    PetscCall(DatasetSetType(ds, DATASETHDF5));
    PetscCall(DatasetHDF5SetNames(ds, "x", "y"));
    PetscCall(DatasetSetSampleShape(ds, &synthshape));
  }
  PetscCall(DatasetSetFromOptions(ds));
  PetscCall(CheckDataset(ds, PETSC_FALSE, NSAMPLES));
  PetscCall(DatasetDestroy(&ds));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestMemory(void)
{
  Dataset     ds;
  Vec         X, T, dX, dT;
  char        layout[16] = "decide";
  PetscBool   rank0, identity, referenced;
  PetscMPIInt rank;
  PetscReal   scale, mean, std, norm0, norm1;
  PetscInt    N, F, nx, fits, ndecide = PETSC_DECIDE, Nsource = NSAMPLES;

  PetscFunctionBegin;
  PetscCall(PetNetShapeSize(&synthshape, &F));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-layout", layout, sizeof(layout), NULL));
  PetscCall(PetscStrcmp(layout, "rank0", &rank0));
  PetscCall(CreateSynthVecs(NSAMPLES, rank0 ? (rank ? 0 : NSAMPLES) : PETSC_DECIDE, &X, &T));
  PetscCall(VecNorm(X, NORM_2, &norm0));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(DatasetMemorySetData(ds, &synthshape, X, regression ? 2 : 1, T));
  PetscCall(DatasetSetFromOptions(ds));
  PetscCall(CheckDataset(ds, PETSC_FALSE, NSAMPLES));
  /* referenced exactly when nothing forces a copy: same layout, no limit, identity normalization */
  PetscCall(DatasetGetAll(ds, &dX, &dT));
  PetscCall(DatasetGetNormalization(ds, &scale, &mean, &std));
  identity   = (PetscBool)(scale == 1 && mean == 0 && std == 1);
  referenced = (PetscBool)(dX == X);
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &ndecide, &Nsource));
  PetscCall(VecGetLocalSize(X, &nx));
  fits = nx == ndecide * F;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &fits, 1, MPIU_INT, MPI_MIN, PETSC_COMM_WORLD));
  PetscCheck(referenced == (PetscBool)(fits && identity && N == NSAMPLES), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The user Vec was %s", referenced ? "referenced although it had to be copied" : "copied although it could be referenced");
  PetscCall(VecNorm(X, NORM_2, &norm1));
  PetscCheck(norm0 == norm1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Dataset modified the user's inputs");
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "user Vecs %s\n", referenced ? "referenced" : "copied"));
  PetscCall(DatasetDestroy(&ds));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

/*
  Augmentation on 4x4x1 images whose pixel (y, x) is 4y + x + 1:

     1  2  3  4
     5  6  7  8
     9 10 11 12
    13 14 15 16

  Each sample's draw (DatasetGetSampleTransform()) is looked up in a table of transforms whose results are written out
  below by hand (0 is the fill, a raw 0); the batch row must hold exactly those values, normalised like the data.
  Every transform of the table must occur among the draws of 40 epochs of 4 samples (18 transforms are possible).
*/
static PetscErrorCode TestAugment(void)
{
  static const struct {
    PetscInt  dy, dx;
    PetscBool flip;
    PetscReal out[16];
  } table[] = {
      {0, 0, PETSC_FALSE, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},  /* identity */
      {1, 0, PETSC_FALSE, {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},      /* down 1 */
      {-1, 0, PETSC_FALSE, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0}}, /* up 1 */
      {0, -1, PETSC_FALSE, {2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12, 0, 14, 15, 16, 0}},  /* left 1 */
      {1, 1, PETSC_FALSE, {0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11}},       /* down 1, right 1 */
      {0, 0, PETSC_TRUE, {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13}},   /* flip */
      {0, 1, PETSC_TRUE, {0, 4, 3, 2, 0, 8, 7, 6, 0, 12, 11, 10, 0, 16, 15, 14}},    /* flip, right 1 */
      {-1, -1, PETSC_TRUE, {7, 6, 5, 0, 11, 10, 9, 0, 15, 14, 13, 0, 0, 0, 0, 0}},   /* flip, up 1, left 1 */
  };
  const PetscInt     ntable = (PetscInt)(sizeof(table) / sizeof(table[0])), N = 4, F = 16;
  PetNetShape        shape = {3, {4, 4, 1}};
  Dataset            ds;
  Vec                X, T, BX;
  PetscScalar       *x, *t;
  const PetscScalar *bx;
  const PetscInt    *samples;
  PetscInt           hits[8] = {0}, start, nlocal, n;
  PetscReal          scale, mean, std;

  PetscFunctionBegin;
  PetscCall(VecCreate(PETSC_COMM_WORLD, &X));
  PetscCall(VecSetSizes(X, PETSC_DECIDE, N * F));
  PetscCall(VecSetBlockSize(X, F));
  PetscCall(VecSetFromOptions(X));
  PetscCall(VecCreate(PETSC_COMM_WORLD, &T));
  PetscCall(VecSetSizes(T, PETSC_DECIDE, N));
  PetscCall(VecSetFromOptions(T));
  PetscCall(VecGetOwnershipRange(T, &start, NULL));
  PetscCall(VecGetLocalSize(T, &nlocal));
  PetscCall(VecGetArrayWrite(X, &x));
  PetscCall(VecGetArrayWrite(T, &t));
  for (PetscInt i = 0; i < nlocal; i++) {
    for (PetscInt j = 0; j < F; j++) x[i * F + j] = j + 1;
    t[i] = start + i;
  }
  PetscCall(VecRestoreArrayWrite(X, &x));
  PetscCall(VecRestoreArrayWrite(T, &t));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(DatasetMemorySetData(ds, &shape, X, 1, T));
  PetscCall(DatasetSetBatchSize(ds, N));
  PetscCall(DatasetSetShuffle(ds, PETSC_TRUE)); /* a sample's place in the batch is not its number */
  PetscCall(DatasetSetAugmentation(ds, 1, PETSC_TRUE));
  PetscCall(DatasetSetFromOptions(ds));
  PetscCall(DatasetGetNormalization(ds, &scale, &mean, &std));
  for (PetscInt e = 0; e < 40; e++) {
    PetscCall(DatasetBeginEpoch(ds, e));
    PetscCall(DatasetGetBatch(ds, 0, &BX, NULL));
    PetscCall(DatasetGetBatchIndices(ds, 0, &n, &samples));
    PetscCall(VecGetArrayRead(BX, &bx));
    for (PetscInt i = 0; i < n; i++) {
      PetscInt  dy, dx;
      PetscBool flip;

      PetscCall(DatasetGetSampleTransform(ds, e, samples[i], &dy, &dx, &flip));
      PetscCheck(PetscAbsInt(dy) <= 1 && PetscAbsInt(dx) <= 1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Sample %" PetscInt_FMT " of epoch %" PetscInt_FMT " drew a shift (%" PetscInt_FMT ", %" PetscInt_FMT ") beyond 1", samples[i], e, dy, dx);
      for (PetscInt k = 0; k < ntable; k++) {
        if (table[k].dy != dy || table[k].dx != dx || table[k].flip != flip) continue;
        for (PetscInt j = 0; j < F; j++) {
          const PetscReal want = (scale * table[k].out[j] - mean) / std;

          PetscCheck(PetscRealPart(bx[i * F + j]) == want, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Sample %" PetscInt_FMT " of epoch %" PetscInt_FMT " (dy %" PetscInt_FMT ", dx %" PetscInt_FMT ", flip %d): pixel %" PetscInt_FMT " is %g, expected %g",
                     samples[i], e, dy, dx, (int)flip, j, (double)PetscRealPart(bx[i * F + j]), (double)want);
        }
        hits[k]++;
      }
    }
    PetscCall(VecRestoreArrayRead(BX, &bx));
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, hits, 8, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  for (PetscInt k = 0; k < ntable; k++) {
    PetscCheck(hits[k] > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Transform %" PetscInt_FMT " of the table (dy %" PetscInt_FMT ", dx %" PetscInt_FMT ", flip %d) was never drawn in 40 epochs", k, table[k].dy, table[k].dx, (int)table[k].flip);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "transform dy %2" PetscInt_FMT " dx %2" PetscInt_FMT " flip %d: drawn %" PetscInt_FMT " times, every value as written\n", table[k].dy, table[k].dx, (int)table[k].flip, hits[k]));
  }
  PetscCall(DatasetDestroy(&ds));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

/* Each error case writes a bad input (or gives a bad option) and sets the Dataset up: it must fail with a clear error */
static PetscErrorCode TestError(void)
{
  Dataset   ds;
  char      error[32] = "", images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN], path[PETSC_MAX_PATH_LEN];
  PetscBool is;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), NULL));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  PetscCall(PetscStrcmp(error, "missing", &is));
  if (is) {
    PetscCall(PetscSNPrintf(images, sizeof(images), "%s/data_missing-images-idx3-ubyte.gz", dir));
    PetscCall(DatasetIDXSetFiles(ds, images, images));
  }
  PetscCall(PetscStrcmp(error, "magic", &is));
  if (is) { /* a labels file given as the images */
    PetscCall(WriteIDXPair("data_magic", PETSC_TRUE, 10, 10, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, labels, labels));
  }
  PetscCall(PetscStrcmp(error, "truncated", &is));
  if (is) { /* the header announces 10 images, the plain file holds 5 */
    PetscCall(WriteIDXPair("data_truncated", PETSC_FALSE, 10, 5, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "truncatedgz", &is));
  if (is) { /* the same, gzip-compressed */
    PetscCall(WriteIDXPair("data_truncatedgz", PETSC_TRUE, 10, 5, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "count", &is));
  if (is) { /* 10 images, 9 labels */
    PetscCall(WriteIDXPair("data_count", PETSC_TRUE, 10, 10, 9, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "label", &is));
  if (is) { /* label 12 at sample 7, with 10 classes declared */
    PetscCall(WriteIDXPair("data_label", PETSC_TRUE, 10, 10, 10, 7, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
    PetscCall(DatasetSetNumClasses(ds, 10));
  }
  PetscCall(PetscStrcmp(error, "shape", &is));
  if (is) { /* 4 x 3 images, -dataset_sample_shape 10x10 */
    PetNetShape bad = {2, {10, 10}};

    PetscCall(WriteIDXPair("data_shape", PETSC_TRUE, 10, 10, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
    PetscCall(DatasetSetSampleShape(ds, &bad));
  }
  PetscCall(PetscStrcmp(error, "notargets", &is));
  if (is) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_notargets%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "none"));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "vecshape", &is));
  if (is) { /* inputs stored as a Vec, no sample shape given */
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_vecshape%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "vec"));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "hdf5name", &is));
  if (is) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_hdf5name%d.h5", dir, nranks));
    PetscCall(WriteHDF5(path));
    PetscCall(DatasetFileSetName(ds, path));
    PetscCall(DatasetHDF5SetNames(ds, "pixels", NULL));
  }
  PetscCall(PetscStrcmp(error, "gzcrc", &is));
  if (is) { /* one byte changed in the middle of stored (uncompressed) gzip data: only the CRC-32 can tell */
    unsigned char byte = 0xA5;

    storedgz = PETSC_TRUE;
    PetscCall(WriteIDXPair("data_gzcrc", PETSC_TRUE, 100000, 100000, 100000, -1, images, labels)); /* 1.2 MB: more than zlib buffers */
    PetscCall(PatchFile(images, 18 + 16 + 80000 * idxrows * idxcols, &byte, 1));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
    PetscCall(DatasetSetLimit(ds, 5)); /* only the start is needed: the CRC must still be checked */
  }
  PetscCall(PetscStrcmp(error, "gzheader", &is));
  if (is) { /* the gzip header's compression method byte damaged */
    unsigned char byte = 0x07;

    PetscCall(WriteIDXPair("data_gzheader", PETSC_TRUE, 10, 10, 10, -1, images, labels));
    PetscCall(PatchFile(images, 2, &byte, 1));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "gzbomb", &is));
  if (is) { /* a small gzip file whose header claims 100 million images */
    PetscCall(WriteIDXPair("data_gzbomb", PETSC_TRUE, 100000000, 10, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "binrows", &is));
  if (is) { /* a binary file whose Mat header claims 2^31-1 rows */
    unsigned char rows[4] = {0x7f, 0xff, 0xff, 0xff};

    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_binrows%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "mat"));
    PetscCall(PatchFile(path, 4, rows, 4));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "bincols", &is));
  if (is) { /* the Mat's (AIJ format) column index of entry 5 made huge */
    unsigned char col[4] = {0x7f, 0xff, 0xff, 0xff};

    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_bincols%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "mat"));
    PetscCall(PatchFile(path, 16 + 4 * NSAMPLES + 4 * 5, col, 4));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "hdf5rank3", &is));
  if (is) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_hdf5rank3_%d.h5", dir, nranks));
    PetscCall(WriteHDF5Rank3(path));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "hdf5trunc", &is));
  if (is) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_hdf5trunc%d.h5", dir, nranks));
    PetscCall(WriteHDF5(path));
    PetscCall(TruncateFile(path, 0.5));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "label255", &is));
  if (is) { /* label 255 at sample 33, for a Net of 10 classes */
    labelvalue = 255;
    PetscCall(WriteIDXPair("data_label255_", PETSC_TRUE, NSAMPLES, NSAMPLES, NSAMPLES, 33, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(PetscStrcmp(error, "labelfrac", &is));
  if (is) { /* target 2.5 at sample 17 */
    badsample = 17;
    badvalue  = 2.5;
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_labelfrac%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "mat"));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "targetnan", &is));
  if (is) { /* target NaN at sample 23 */
    badsample = 23;
    badvalue  = (PetscReal)NAN;
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_targetnan%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "mat"));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "inputinf", &is));
  if (is) { /* input Inf at sample 29: the message names the file */
    badinput = 29;
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/data_inputinf%d.bin", dir, nranks));
    PetscCall(WriteBinary(path, "mat"));
    PetscCall(DatasetFileSetName(ds, path));
  }
  PetscCall(PetscStrcmp(error, "limit", &is));
  if (is) { /* -dataset_limit on the command line */
    PetscCall(WriteIDXPair("data_limit", PETSC_TRUE, 10, 10, 10, -1, images, labels));
    PetscCall(DatasetIDXSetFiles(ds, images, labels));
  }
  PetscCall(DatasetSetFromOptions(ds)); /* error "type" comes from -dataset_type on the command line */
  PetscCall(DatasetSetUp(ds));
  PetscCall(PetscStrcmp(error, "label255", &is));
  if (is) PetscCall(DatasetCheckLabels(ds, 10));
  PetscCall(PetscStrcmp(error, "labelfrac", &is));
  if (is) PetscCall(DatasetCheckLabels(ds, 3));
  PetscCall(DatasetDestroy(&ds));
  SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Error case \"%s\" did not fail", error);
}

int main(int argc, char **argv)
{
  char testcase[32] = "idx";

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-dir", dir, sizeof(dir), NULL));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &nranks));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-regression", &regression, NULL));
  if (!strcmp(testcase, "idx"))
    PetscCall(TestIDX());
  else if (!strcmp(testcase, "binary"))
    PetscCall(TestBinary());
  else if (!strcmp(testcase, "hdf5"))
    PetscCall(TestHDF5());
  else if (!strcmp(testcase, "memory"))
    PetscCall(TestMemory());
  else if (!strcmp(testcase, "augment"))
    PetscCall(TestAugment());
  else if (!strcmp(testcase, "error"))
    PetscCall(TestError());
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s", testcase);
  PetscCall(PetscFinalize());
  return 0;
}
