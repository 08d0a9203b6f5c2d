static const char help[] = "Dataset on the packaged Fashion-MNIST IDX files, against numbers computed independently with Python (gzip + numpy).\n"
                           "  -case fmnist     the train set: N, shape, classes, pixel sums, first labels, class counts; one shuffled epoch\n"
                           "                   of batches covers every sample once, and its batch assembly time per batch\n"
                           "  -case batches    position-weighted checksums of every batch (same on 1, 2, 4 ranks; Python replays the\n"
                           "                   rand48 Fisher-Yates shuffle): two shuffled epochs and one in file order\n"
                           "  -case normalize  the first 2000 t10k images under -dataset_scale/-dataset_mean/-dataset_std (sum and sum of squares)\n"
                           "Dataset options (-dataset_idx_dir, -dataset_limit, ...) come from the command line; -prefix P makes them -P_dataset_...\n";

#include <petnet.h>
#include <petnetdataset.h>

/* Fashion-MNIST reference values (Python: gzip.open + numpy over the packaged files) */
#define TRAIN_PIXEL_SUM   3431114169LL   /* sum of all 60000 x 784 train bytes */
#define TRAIN_PIXEL_SUMSQ 631470052347LL /* sum of their squares */
#define T10K_2000_SUM     114763281.0    /* sum of the bytes of the first 2000 t10k images */
#define T10K_2000_SUMSQ   21035465445.0
static const PetscInt train_first_labels[12] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9};

static PetscErrorCode CheckClose(PetscReal got, PetscReal want, PetscReal rtol, const char what[])
{
  PetscFunctionBegin;
  PetscCheck(PetscAbsReal(got - want) <= rtol * PetscAbsReal(want), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s = %.15g, expected %.15g", what, (double)got, (double)want);
  PetscFunctionReturn(0);
}

/* Sum over the local samples of (k+1) sum_j (j % 13 + 1) x[k][j] and (k+1) t[k], k the position in the GLOBAL batch:
   order-sensitive, so two batches agree only if they hold the same samples in the same order. */
static PetscErrorCode BatchChecksum(Vec X, Vec T, PetscInt F, PetscReal *cx, PetscReal *ct)
{
  const PetscScalar *x, *t;
  PetscInt           lo, n;
  PetscReal          sums[2] = {0, 0};

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(T, &lo, NULL));
  PetscCall(VecGetLocalSize(T, &n));
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt k = 0; k < n; k++) {
    PetscReal s = 0;

    for (PetscInt j = 0; j < F; j++) s += (j % 13 + 1) * PetscRealPart(x[k * F + j]);
    sums[0] += (lo + k + 1) * s;
    sums[1] += (lo + k + 1) * PetscRealPart(t[k]);
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 2, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  *cx = sums[0];
  *ct = sums[1];
  PetscFunctionReturn(0);
}

/* Exact sums of the bytes behind inputs x = byte / 255 (and of their squares); every x must be such a byte */
static PetscErrorCode PixelSums(Vec X, PetscInt64 sums[2])
{
  const PetscScalar *x;
  PetscInt           n;
  PetscInt64         bad = 0;

  PetscFunctionBegin;
  sums[0] = sums[1] = 0;
  PetscCall(VecGetLocalSize(X, &n));
  PetscCall(VecGetArrayRead(X, &x));
  for (PetscInt i = 0; i < n; i++) {
    PetscReal  v    = 255.0 * PetscRealPart(x[i]);
    PetscInt64 byte = (PetscInt64)PetscFloorReal(v + 0.5);

    if (PetscAbsReal(v - (PetscReal)byte) > 1e-9 || byte < 0 || byte > 255) bad++;
    sums[0] += byte;
    sums[1] += byte * byte;
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 2, MPIU_INT64, MPI_SUM, PETSC_COMM_WORLD));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT64, MPI_SUM, PETSC_COMM_WORLD));
  PetscCheck(!bad, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%lld inputs are not of the form byte / 255", (long long)bad);
  PetscFunctionReturn(0);
}

/* counts[c] += number of targets equal to c over the global Vec T */
static PetscErrorCode CountLabels(Vec T, PetscInt nclasses, PetscInt counts[])
{
  const PetscScalar *t;
  PetscInt           n, local[16] = {0};

  PetscFunctionBegin;
  PetscCheck(nclasses <= 16, PETSC_COMM_WORLD, PETSC_ERR_SUP, "Test handles at most 16 classes");
  PetscCall(VecGetLocalSize(T, &n));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt i = 0; i < n; i++) local[(PetscInt)PetscRealPart(t[i])]++;
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, local, (PetscMPIInt)nclasses, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  for (PetscInt c = 0; c < nclasses; c++) counts[c] += local[c];
  PetscFunctionReturn(0);
}

static PetscErrorCode TestTrainSet(Dataset ds)
{
  PetNetShape        shape, expect = {3, {28, 28, 1}};
  PetscInt           N, tsize, nclasses, nbatches, counts[10] = {0}, seen = 0, B, size;
  PetscInt64         bytesums[2], batchsums[2] = {0, 0};
  PetscReal          maxms;
  Vec                X, T;
  PetscLogDouble     t0, t1, elapsed = 0;
  const PetscScalar *t;
  PetscMPIInt        rank, nranks;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &nranks));
  PetscCall(PetscTime(&t0));
  PetscCall(DatasetSetUp(ds));
  PetscCall(PetscTime(&t1));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "read in %.2f s\n", t1 - t0));
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(DatasetGetTargetSize(ds, &tsize));
  PetscCall(DatasetGetNumClasses(ds, &nclasses));
  PetscCheck(N == 60000 && PetNetShapeEqual(&shape, &expect) && tsize == 1 && nclasses == 10, PETSC_COMM_WORLD, PETSC_ERR_PLIB,
             "Fashion-MNIST train: N %" PetscInt_FMT " tsize %" PetscInt_FMT " classes %" PetscInt_FMT ", expected 60000, 1, 10 and shape 28x28x1", N, tsize, nclasses);

  /* default normalization: pixels / 255 */
  PetscCall(DatasetGetAll(ds, &X, &T));
  PetscCall(PixelSums(X, bytesums));
  PetscCheck(bytesums[0] == TRAIN_PIXEL_SUM && bytesums[1] == TRAIN_PIXEL_SUMSQ, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Pixel sum %lld and sum of squares %lld, expected %lld and %lld", (long long)bytesums[0], (long long)bytesums[1],
             (long long)TRAIN_PIXEL_SUM, (long long)TRAIN_PIXEL_SUMSQ);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "N %" PetscInt_FMT " shape 28x28x1 classes %" PetscInt_FMT ", inputs = bytes / 255: byte sum %lld, sum of squares %lld\n", N, nclasses, (long long)bytesums[0], (long long)bytesums[1]));
  if (!rank) { /* the first samples are on rank 0 */
    PetscCall(VecGetArrayRead(T, &t));
    for (PetscInt i = 0; i < 12; i++) PetscCheck(PetscRealPart(t[i]) == train_first_labels[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Label %" PetscInt_FMT " is %g, expected %" PetscInt_FMT, i, (double)PetscRealPart(t[i]), train_first_labels[i]);
    PetscCall(VecRestoreArrayRead(T, &t));
  }
  PetscCall(CountLabels(T, 10, counts));
  for (PetscInt c = 0; c < 10; c++) PetscCheck(counts[c] == 6000, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Class %" PetscInt_FMT " has %" PetscInt_FMT " samples, expected 6000", c, counts[c]);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "first labels 9 0 0 3 0 2 7 2 5 5 0 9, 6000 samples in each of the 10 classes\n"));

  /* one shuffled epoch of 128-sample batches: every sample exactly once (same pixel sum, same class counts) */
  PetscCall(DatasetSetBatchSize(ds, 128));
  PetscCall(DatasetSetShuffle(ds, PETSC_TRUE));
  PetscCall(DatasetBeginEpoch(ds, 3));
  PetscCall(DatasetGetNumBatches(ds, &nbatches));
  PetscCheck(nbatches == 469, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " batches of 128, expected 469", nbatches);
  PetscCall(PetscArrayzero(counts, 10));
  for (PetscInt b = 0; b < nbatches; b++) {
    PetscCall(PetscTime(&t0));
    PetscCall(DatasetGetBatch(ds, b, &X, &T));
    PetscCall(PetscTime(&t1));
    elapsed += t1 - t0;
    PetscCall(VecGetSize(T, &B));
    PetscCall(PixelSums(X, bytesums));
    PetscCall(CountLabels(T, 10, counts));
    PetscCheck(B == (b < nbatches - 1 ? 128 : 60000 - 468 * 128), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Batch %" PetscInt_FMT " holds %" PetscInt_FMT " samples", b, B);
    PetscCall(VecGetSize(X, &size));
    PetscCheck(size == 784 * B, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Batch inputs hold %" PetscInt_FMT " entries", size);
    batchsums[0] += bytesums[0];
    batchsums[1] += bytesums[1];
    seen += B;
  }
  PetscCheck(seen == 60000, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The epoch visited %" PetscInt_FMT " samples", seen);
  PetscCheck(batchsums[0] == TRAIN_PIXEL_SUM && batchsums[1] == TRAIN_PIXEL_SUMSQ, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The epoch's batches hold pixel sums %lld and %lld, not those of the dataset", (long long)batchsums[0], (long long)batchsums[1]);
  for (PetscInt c = 0; c < 10; c++) PetscCheck(counts[c] == 6000, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Class %" PetscInt_FMT " seen %" PetscInt_FMT " times in the epoch, expected 6000", c, counts[c]);
  /* batch assembly must stay well under 1 ms on one rank  */
  maxms = 1.0;
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_batch_ms", &maxms, NULL));
  PetscCheck(nranks > 1 || elapsed / nbatches * 1e3 <= maxms, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Batch assembly took %.3f ms per batch, more than %g ms", elapsed / nbatches * 1e3, (double)maxms);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "shuffled epoch: 469 batches (last 96), every sample once; %.3f ms per batch\n", elapsed / nbatches * 1e3));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestBatches(Dataset ds)
{
  PetNetShape shape;
  PetscInt    F, nbatches, B, N;
  Vec         X, T;
  PetscReal   cx = 0, ct = 0;

  PetscFunctionBegin;
  PetscCall(DatasetSetUp(ds));
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(PetNetShapeSize(&shape, &F));
  PetscCall(DatasetGetBatchSize(ds, &B));
  PetscCall(DatasetGetNumBatches(ds, &nbatches));
  PetscCheck(nbatches == (N + B - 1) / B, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " batches", nbatches);
  for (PetscInt e = 0; e < 3; e++) {
    if (e == 2) PetscCall(DatasetSetShuffle(ds, PETSC_FALSE)); /* epoch 2: file order */
    PetscCall(DatasetBeginEpoch(ds, e));
    for (PetscInt b = 0; b < nbatches; b++) {
      PetscInt nb;

      PetscCall(DatasetGetBatch(ds, b, &X, &T));
      PetscCall(VecGetSize(T, &nb));
      PetscCheck(nb == PetscMin(B, N - b * B), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Batch %" PetscInt_FMT " holds %" PetscInt_FMT " samples", b, nb);
      PetscCall(BatchChecksum(X, T, F, &cx, &ct));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "epoch %" PetscInt_FMT " batch %" PetscInt_FMT " samples %" PetscInt_FMT " inputs %.10e targets %.10e\n", e, b, nb, (double)cx, (double)ct));
    }
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode TestNormalize(Dataset ds)
{
  PetscInt    N, F;
  PetNetShape shape;
  PetscReal   scale, mean, std, a, b, norm, n;
  PetscScalar sum;
  Vec         X;

  PetscFunctionBegin;
  PetscCall(DatasetSetUp(ds));
  PetscCall(DatasetGetSize(ds, &N));
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(PetNetShapeSize(&shape, &F));
  PetscCheck(N == 2000 && F == 784, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Run with -dataset_idx_split t10k -dataset_limit 2000");
  PetscCall(DatasetGetNormalization(ds, &scale, &mean, &std));
  a = scale / std;
  b = -mean / std;
  n = (PetscReal)N * F;
  PetscCall(DatasetGetAll(ds, &X, NULL));
  PetscCall(VecSum(X, &sum));
  PetscCall(VecNorm(X, NORM_2, &norm));
  /* x' = a x + b: sum x' = a S + n b, sum x'^2 = a^2 Q + 2 a b S + n b^2 */
  PetscCall(CheckClose(PetscRealPart(sum), a * T10K_2000_SUM + n * b, 1e-10, "sum of normalized inputs"));
  PetscCall(CheckClose(norm * norm, a * a * T10K_2000_SUMSQ + 2 * a * b * T10K_2000_SUM + n * b * b, 1e-10, "sum of squares of normalized inputs"));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "shape %" PetscInt_FMT "-d (%" PetscInt_FMT " entries), scale %g mean %g std %g: sum %.10e sum of squares %.10e\n", shape.ndim, F, (double)scale, (double)mean, (double)std, (double)PetscRealPart(sum),
                        (double)(norm * norm)));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Dataset ds;
  char    testcase[32] = "fmnist", prefix[32] = "";

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-prefix", prefix, sizeof(prefix), NULL));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &ds));
  if (prefix[0]) PetscCall(DatasetSetOptionsPrefix(ds, prefix)); /* as a Trainer does: -train_dataset_limit ... */
  PetscCall(DatasetIDXSetDirectory(ds, "/usr/share/datasets/fashion-mnist", "train"));
  PetscCall(DatasetSetFromOptions(ds));
  if (!strcmp(testcase, "fmnist"))
    PetscCall(TestTrainSet(ds));
  else if (!strcmp(testcase, "batches"))
    PetscCall(TestBatches(ds));
  else if (!strcmp(testcase, "normalize"))
    PetscCall(TestNormalize(ds));
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s", testcase);
  PetscCall(DatasetDestroy(&ds));
  PetscCall(PetscFinalize());
  return 0;
}
