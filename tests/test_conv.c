static const char help[] = "Tests of the convolutional layer kinds (conv2d, conv3d, maxpool, avgpool, globalavgpool, flatten, dropout, batchnorm):\n"
                           "  1. NetTestJacobian on small Nets: dot-product tests <= 1e-12, finite differences <= 1e-6, training and evaluation mode;\n"
                           "  2. outputs, input and parameter gradients against PyTorch (share/reference/conv_reference.py) to 1e-12;\n"
                           "  3. dropout: rate, scaling, identity in evaluation mode, the same mask on any number of ranks;\n"
                           "  4. a Net with batchnorm and dropout on a batch that leaves the last rank without samples;\n"
                           "  5. with -dims 3, instead: 1. and 2. for conv3d and 3-D pooling on (d, h, w, c) volumes, and the grid-mode hooks of\n"
                           "     the windowed kinds (fielddim set-up, getwindow, setpadding: an unpadded copy on the zero-padded input is the layer).\n"
                           "Options: -nlocal N (samples per rank), -dims 2|3, -reference FILE, -pytorch_only (only 2., e.g. on another reference\n"
                           "file), -error_spec LIST and -error_shape SHAPE (only build that Net: for the error tests).\n";

#include <petnet.h>
#include <petnet/private/layerimpl.h>
#include "testutil.h"

/* ------------------------------------------------------------------------------------------- 1. Jacobian tests */

typedef struct {
  const char *spec;
  PetscBool   training;
} JacobianCase;

static const JacobianCase jcases[] = {
    {"conv2d:4", PETSC_TRUE},
    {"conv2d:4:3:2:1", PETSC_TRUE},
    {"conv2d:4:2x3:1:1x0:bias=0", PETSC_TRUE},
    {"conv2d:6:3:1:2:dilation=2:groups=3", PETSC_TRUE},
    {"conv2d:6:3:2x1:1:dilation=1x2:groups=3,conv2d:4:1", PETSC_TRUE},
    {"conv2d:3:1:1:0:groups=3", PETSC_TRUE},
    {"conv2d:4:1:2", PETSC_TRUE},
    {"maxpool:2", PETSC_TRUE},
    {"maxpool:3:2:1", PETSC_TRUE},
    {"maxpool:2x3:1", PETSC_TRUE},
    {"avgpool:2", PETSC_TRUE},
    {"avgpool:3:2:1", PETSC_TRUE},
    {"globalavgpool,dense:3", PETSC_TRUE},
    {"flatten,dense:3", PETSC_TRUE},
    {"batchnorm", PETSC_TRUE},
    {"batchnorm", PETSC_FALSE},
    {"dense:7,batchnorm,tanh", PETSC_TRUE},
    {"dropout:0.3", PETSC_TRUE},
    {"dropout:0.3", PETSC_FALSE},
    {"conv2d:4,dropout:0.5,flatten,dense:3", PETSC_TRUE},
    {"conv2d:4:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:3", PETSC_TRUE},
    {"conv2d:4:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:3", PETSC_FALSE},
    {"conv2d:4:3:1:1,maxpool:2,relu,conv2d:6:3:1:1:groups=2,batchnorm,tanh,avgpool:2:1,globalavgpool,dense:3", PETSC_TRUE},
};

static PetscErrorCode CreateNet(MPI_Comm comm, const char spec[], const char shape[], Net *net)
{
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(NetCreate(comm, net));
  PetscCall(NetSetLayers(*net, spec));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetSeed(*net, 7));
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* 3-D: conv3d (strided, padded, anisotropic, dilated and grouped, positional D:G, no bias, 1x1x1) and 3-D pools on a
   4x5x4x2 volume, and small 3-D CNNs */
static const JacobianCase jcases3d[] = {
    {"conv3d:3", PETSC_TRUE},
    {"conv3d:4:3:2:1", PETSC_TRUE},
    {"conv3d:4:2x3x2:1x2x1:1x0x1:bias=0", PETSC_TRUE},
    {"conv3d:4:3:1:2:2:2", PETSC_TRUE},
    {"conv3d:4:2:2x1x1:0:dilation=1x2x1:groups=2:bias=0", PETSC_TRUE},
    {"conv3d:3:1", PETSC_TRUE},
    {"conv3d:4:1:2", PETSC_TRUE},
    {"maxpool:2", PETSC_TRUE},
    {"maxpool:3:2:1", PETSC_TRUE},
    {"maxpool:2x1x2:1", PETSC_TRUE},
    {"avgpool:2", PETSC_TRUE},
    {"avgpool:3:2:1", PETSC_TRUE},
    {"avgpool:2x2x1:1:1x1x0", PETSC_TRUE},
    {"globalavgpool,dense:3", PETSC_TRUE},
    {"flatten,dense:3", PETSC_TRUE},
    {"batchnorm", PETSC_TRUE},
    {"conv3d:4:3:1:1,batchnorm,relu,maxpool:2,globalavgpool,dense:3", PETSC_TRUE},
    {"conv3d:4:3:1:1,batchnorm,tanh,avgpool:2:1,flatten,dense:3", PETSC_FALSE},
};

static PetscErrorCode TestJacobians(PetscInt nlocal, PetscInt dims)
{
  const JacobianCase *cases  = dims == 3 ? jcases3d : jcases;
  const size_t        ncases = dims == 3 ? sizeof(jcases3d) / sizeof(jcases3d[0]) : sizeof(jcases) / sizeof(jcases[0]);
  const char         *shape  = dims == 3 ? "4x5x4x2" : "6x5x3";

  PetscFunctionBegin;
  for (size_t k = 0; k < ncases; k++) {
    Net         net;
    Vec         X;
    PetscRandom rnd;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(CreateNet(PETSC_COMM_WORLD, cases[k].spec, shape, &net));
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
    PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
    PetscCall(PetscRandomSetSeed(rnd, 11));
    PetscCall(PetscRandomSeed(rnd));
    PetscCall(VecSetRandom(X, rnd));
    if (!cases[k].training) { /* evaluation mode after two training passes: non-trivial running statistics */
      PetscCall(NetForward(net, X, NULL));
      PetscCall(VecScale(X, 0.5));
      PetscCall(VecShift(X, 0.3));
      PetscCall(NetForward(net, X, NULL));
      PetscCall(NetSetTraining(net, PETSC_FALSE));
    }
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g > 1e-12", cases[k].spec, (double)dot);
    PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference error %g > 1e-6", cases[k].spec, (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian %-40s %-10s dot-product ok, finite differences ok\n", cases[k].spec, cases[k].training ? "training" : "evaluation"));
    PetscCall(VecDestroy(&X));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------- 2. PyTorch cross-check */

/* v[i] = a sin(b (offset + i) + c) or a cos(...) over the local entries of v (offset: global index of the first) */
static PetscErrorCode FillPattern(Vec v, PetscReal a, PetscReal b, PetscReal c, PetscBool cosine)
{
  PetscInt     lo, hi;
  PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &lo, &hi));
  PetscCall(VecGetArrayWrite(v, &x));
  for (PetscInt i = lo; i < hi; i++) x[i - lo] = a * (cosine ? PetscCosReal(b * i + c) : PetscSinReal(b * i + c));
  PetscCall(VecRestoreArrayWrite(v, &x));
  PetscFunctionReturn(0);
}

/* Reads "NAME COUNT" then COUNT numbers; checks the name and that COUNT matches v's global size */
static PetscErrorCode ReadBlock(FILE *fp, const char casename[], const char expect[], Vec v, PetscReal **values)
{
  char     name[64];
  PetscInt count, N;

  PetscFunctionBegin;
  PetscCheck(fscanf(fp, "%63s %" PetscInt_FMT, name, &count) == 2, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: reference file truncated before %s", casename, expect);
  PetscCheck(!strcmp(name, expect), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: expected the %s block in the reference file, found %s", casename, expect, name);
  PetscCall(VecGetSize(v, &N));
  PetscCheck(count == N, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: reference %s has %" PetscInt_FMT " values, PetNet %" PetscInt_FMT, casename, expect, count, N);
  PetscCall(PetscMalloc1(count, values));
  for (PetscInt i = 0; i < count; i++) PetscCheck(fscanf(fp, "%lf", &(*values)[i]) == 1, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: reference %s truncated", casename, expect);
  PetscFunctionReturn(0);
}

/* max |v - ref| / max |ref| over the global Vec, ref read from the file (every rank reads the whole block) */
static PetscErrorCode CompareBlock(FILE *fp, const char casename[], const char block[], Vec v, PetscReal *err)
{
  PetscReal         *ref, diff = 0, scale = 0, maxdiff;
  const PetscScalar *x;
  PetscInt           lo, hi, N;

  PetscFunctionBegin;
  PetscCall(ReadBlock(fp, casename, block, v, &ref));
  PetscCall(VecGetSize(v, &N));
  PetscCall(VecGetOwnershipRange(v, &lo, &hi));
  PetscCall(VecGetArrayRead(v, &x));
  for (PetscInt i = lo; i < hi; i++) diff = PetscMax(diff, PetscAbsReal(PetscRealPart(x[i - lo]) - ref[i]));
  for (PetscInt i = 0; i < N; i++) scale = PetscMax(scale, PetscAbsReal(ref[i]));
  PetscCall(VecRestoreArrayRead(v, &x));
  PetscCall(PetscFree(ref));
  PetscCall(MPIU_Allreduce(&diff, &maxdiff, 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)v)));
  *err = N ? maxdiff / PetscMax(scale, PETSC_SMALL) : 0.0;
  PetscCheck(*err <= 1e-12, PetscObjectComm((PetscObject)v), PETSC_ERR_PLIB, "%s: %s differs from PyTorch by %g (relative to its largest entry) > 1e-12", casename, block, (double)*err);
  PetscFunctionReturn(0);
}

static PetscErrorCode TestAgainstPyTorch(const char filename[])
{
  FILE *fp;
  char  line[1024];

  PetscFunctionBegin;
  PetscCall(PetscFOpen(PETSC_COMM_SELF, filename, "r", &fp));
  PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot open %s: run tests from the repository root or give -reference", filename);
  PetscCheck(fgets(line, sizeof(line), fp), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s is empty", filename);
  while (1) {
    char        word[16], name[64], spec[512], shape[64];
    PetscInt    nglobal, nlocal = PETSC_DECIDE, train, evalafter;
    Net         net;
    Vec         X, Y, dY, dX, theta, G;
    PetscReal   ey, edx, edth, eeval = 0;
    PetscMPIInt size;

    if (fscanf(fp, "%15s", word) != 1) break;
    PetscCheck(!strcmp(word, "case"), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: expected 'case', found %s", filename, word);
    PetscCheck(fscanf(fp, "%63s %511s %63s %" PetscInt_FMT " %" PetscInt_FMT " %" PetscInt_FMT, name, spec, shape, &nglobal, &train, &evalafter) == 6, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: malformed case line", filename);
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCheck(nglobal >= size, PETSC_COMM_WORLD, PETSC_ERR_SUP, "The reference cases have %" PetscInt_FMT " samples: run on at most that many ranks", nglobal);
    PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &nlocal, &nglobal));
    PetscCall(CreateNet(PETSC_COMM_WORLD, spec, shape, &net));
    PetscCall(NetSetTraining(net, train ? PETSC_TRUE : PETSC_FALSE));
    PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
    PetscCall(VecDuplicate(Y, &dY));
    PetscCall(VecDuplicate(X, &dX));
    PetscCall(NetGetParameters(net, &theta));
    PetscCall(VecDuplicate(theta, &G));
    PetscCall(FillPattern(theta, 0.5, 1.3, 0.2, PETSC_FALSE));
    PetscCall(FillPattern(X, 1.0, 0.7, 0.3, PETSC_FALSE));
    PetscCall(FillPattern(dY, 1.0, 0.9, 0.4, PETSC_TRUE));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecZeroEntries(G));
    PetscCall(NetBackward(net, dY, dX, G));
    PetscCall(CompareBlock(fp, name, "y", Y, &ey));
    PetscCall(CompareBlock(fp, name, "dx", dX, &edx));
    PetscCall(CompareBlock(fp, name, "dtheta", G, &edth));
    if (evalafter) {
      PetscCall(NetSetTraining(net, PETSC_FALSE));
      PetscCall(NetForward(net, X, Y));
      PetscCall(CompareBlock(fp, name, "yeval", Y, &eeval));
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "pytorch  %-22s %-48s y, dx, dtheta%s agree to 1e-12\n", name, spec, evalafter ? ", eval-mode y" : ""));
    PetscCall(PetscInfo(NULL, "%s: errors y %g dx %g dtheta %g eval %g\n", name, (double)ey, (double)edx, (double)edth, (double)eeval));
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&Y));
    PetscCall(VecDestroy(&dX));
    PetscCall(VecDestroy(&dY));
    PetscCall(VecDestroy(&G));
    PetscCall(NetDestroy(&net));
  }
  PetscCall(PetscFClose(PETSC_COMM_SELF, fp));
  PetscFunctionReturn(0);
}

/* A rank without samples (a short last batch) still takes part in the collective kernels: batchnorm's reductions in
   forward, backward and jvp, dropout's global offsets. The last rank gets no samples. */
static PetscErrorCode TestEmptyRank(PetscInt nlocal)
{
  const char *spec = "conv2d:3:3:1:1,batchnorm,relu,dropout:0.2,maxpool:2,flatten,dense:2";
  Net         net;
  Vec         X;
  PetscRandom rnd;
  PetscReal   dot, fd;
  PetscViewer quiet;
  PetscMPIInt rank, size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  if (size == 1) PetscFunctionReturn(0);
  PetscCall(CreateNet(PETSC_COMM_WORLD, spec, "6x5x3", &net));
  PetscCall(NetCreateVecs(net, rank == size - 1 ? 0 : nlocal, &X, NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
  PetscCall(VecSetRandom(X, rnd));
  PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
  PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
  PetscCall(PetscViewerDestroy(&quiet));
  PetscCheck(dot <= 1e-12 && fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s with an empty rank: dot-product error %g, finite-difference error %g", spec, (double)dot, (double)fd);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "empty    %s with no samples on the last rank: dot-product ok, finite differences ok\n", spec));
  PetscCall(VecDestroy(&X));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------ 3. dropout */

/* Rate and scaling on ones; the parallel output equals, slice by slice, a one-rank Net's output on the global batch;
   a second pass draws a new mask; evaluation mode is the identity. */
static PetscErrorCode TestDropout(PetscInt nlocal)
{
  const PetscReal    p    = 0.3;
  const char        *spec = "dropout:0.3";
  Net                net, serial;
  Vec                X, Y, Y2, Xs, Ys;
  PetscInt           N, n, lo, hi, zeros = 0, bad = 0, same = 0, counts[3], sums[3];
  const PetscScalar *y, *y2, *ys;

  PetscFunctionBegin;
  PetscCall(CreateNet(PETSC_COMM_WORLD, spec, "10x10x8", &net));
  PetscCall(CreateNet(PETSC_COMM_SELF, spec, "10x10x8", &serial));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecDuplicate(Y, &Y2));
  PetscCall(VecSet(X, 1.0));
  PetscCall(VecGetSize(X, &N));
  PetscCall(VecGetLocalSize(X, &n));
  PetscCall(VecGetOwnershipRange(X, &lo, &hi));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, N, &Xs));
  PetscCall(VecDuplicate(Xs, &Ys));
  PetscCall(VecSet(Xs, 1.0));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetForward(serial, Xs, Ys));
  PetscCall(NetForward(net, X, Y2));
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(Y2, &y2));
  PetscCall(VecGetArrayRead(Ys, &ys));
  for (PetscInt i = 0; i < n; i++) {
    if (y[i] == 0.0)
      zeros++;
    else if (PetscAbsScalar(y[i] - 1.0 / (1.0 - p)) > 1e-15)
      bad++;
    if (y[i] != ys[lo + i]) bad++;
    if (y[i] == y2[i]) same++;
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(VecRestoreArrayRead(Y2, &y2));
  PetscCall(VecRestoreArrayRead(Ys, &ys));
  counts[0] = zeros;
  counts[1] = bad;
  counts[2] = same;
  PetscCall(MPIU_Allreduce(counts, sums, 3, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  PetscCheck(!sums[1], PETSC_COMM_WORLD, PETSC_ERR_PLIB, "dropout: %" PetscInt_FMT " entries neither 0 nor 1/(1-p), or different from the one-rank Net's", sums[1]);
  PetscCheck(PetscAbsReal((PetscReal)sums[0] / N - p) < 0.03, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "dropout: zeroed a fraction %g of the entries, expected %g", (double)sums[0] / N, (double)p);
  PetscCheck(sums[2] < 0.7 * N, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "dropout: the second pass reused the mask (%" PetscInt_FMT " of %" PetscInt_FMT " entries equal)", sums[2], N);
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecAXPY(Y, -1.0, X));
  {
    PetscReal norm;

    PetscCall(VecNorm(Y, NORM_INFINITY, &norm));
    PetscCheck(norm == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "dropout in evaluation mode is not the identity (error %g)", (double)norm);
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "dropout  rate within 0.03 of %g, scale 1/(1-p), same mask on any number of ranks, new mask per pass, identity in evaluation\n", (double)p));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Y2));
  PetscCall(VecDestroy(&Xs));
  PetscCall(VecDestroy(&Ys));
  PetscCall(NetDestroy(&net));
  PetscCall(NetDestroy(&serial));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------- 5. grid-mode hooks (3-D) */

static PetscErrorCode CreateLayer(const char spec[], const char shape[], PetscInt fielddim, Layer *layer)
{
  char        kind[32], *colon;
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(kind, spec, sizeof(kind)));
  colon = strchr(kind, ':');
  if (colon) *colon = 0;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(LayerCreate(PETSC_COMM_SELF, layer));
  PetscCall(LayerSetType(*layer, kind));
  if (colon) PetscCall(LayerSetArguments(*layer, strchr(spec, ':') + 1));
  PetscCall(LayerSetIndex(*layer, 0));
  (*layer)->fielddim = fielddim; /* point form, as a Net on a grid sets it before set-up (layerimpl.h) */
  PetscCall(LayerSetInputShape(*layer, &in));
  PetscCall(LayerSetUp(*layer));
  PetscFunctionReturn(0);
}

typedef struct {
  const char *spec, *shape; /* a batch-mode layer and a sample shape */
  PetscInt    fielddim, nsd, k[3], step[3], pad[3], dilation[3];
} GridCase;

static const GridCase gcases[] = {
    {"conv2d:5:3:2:1", "6x5x4", 2, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
    {"conv3d:5:3x3x1:1:1x1x0:dilation=2x1x1", "6x5x4x4", 3, 3, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, {2, 1, 1}},
    {"conv3d:6:3:2:1:1:2:bias=0", "5x5x4x4", 3, 3, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}},
    {"maxpool:3:2:1", "5x5x4x4", 3, 3, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}},
    {"avgpool:2x3:1x2", "6x5x4", 2, 2, {2, 3}, {1, 2}, {0, 0}, {1, 1}},
    {"avgpool:2", "6x5x4", 3, 3, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}},
};

/*
  A node of a grid (fielddim) is (channels) -> (output channels) with the parameters of the batch-mode layer, and
  describes its window (getwindow); a copy with its padding set to zero (setpadding), run on the input zero-padded by
  hand, is the layer (conv2d, conv3d, avgpool: its padding counts as zeros).
*/
static PetscErrorCode TestGridHooks(void)
{
  PetscFunctionBegin;
  for (size_t c = 0; c < sizeof(gcases) / sizeof(gcases[0]); c++) {
    const GridCase *g = &gcases[c];
    Layer           batch, node;
    PetNetShape     in, out;
    PetscInt        nb, nn, nsd, k[3], step[3], pad[3], dil[3];
    char            channels[16];
    PetscErrorCode  ierr = 0;

    PetscCall(CreateLayer(g->spec, g->shape, 0, &batch));
    PetscCall(LayerGetInputShape(batch, &in));
    PetscCall(PetscSNPrintf(channels, sizeof(channels), "%" PetscInt_FMT, in.dim[in.ndim - 1]));
    PetscCall(CreateLayer(g->spec, channels, g->fielddim, &node));
    PetscCall(LayerGetNumParameters(batch, &nb));
    PetscCall(LayerGetNumParameters(node, &nn));
    PetscCall(LayerGetOutputShape(batch, &in));
    PetscCall(LayerGetOutputShape(node, &out));
    PetscCheck(nb == nn && out.ndim == 1 && out.dim[0] == in.dim[in.ndim - 1], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s on a %" PetscInt_FMT "-D grid: %" PetscInt_FMT " parameters (batch mode %" PetscInt_FMT "), output of %" PetscInt_FMT " dims",
               g->spec, g->fielddim, nn, nb, out.ndim);
    PetscCall((*node->ops->getwindow)(node, &nsd, k, step, pad, dil));
    PetscCheck(nsd == g->nsd, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: getwindow gives %" PetscInt_FMT " dims, not %" PetscInt_FMT, g->spec, nsd, g->nsd);
    for (PetscInt d = 0; d < nsd; d++)
      PetscCheck(k[d] == g->k[d] && step[d] == g->step[d] && pad[d] == g->pad[d] && dil[d] == g->dilation[d], PETSC_COMM_SELF, PETSC_ERR_PLIB,
                 "%s: getwindow dim %" PetscInt_FMT ": kernel %" PetscInt_FMT " step %" PetscInt_FMT " padding %" PetscInt_FMT " dilation %" PetscInt_FMT, g->spec, d, k[d], step[d], pad[d], dil[d]);
    PetscCall((*batch->ops->getwindow)(batch, &nsd, k, step, pad, dil));
    PetscCheck(nsd == in.ndim - 1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: getwindow of the batch-mode layer gives %" PetscInt_FMT " dims", g->spec, nsd);
    { /* a node of a grid is not run itself (its Net runs a batch-mode copy on the rank's box): forward refuses */
      PetscScalar *theta, *x, *y;

      PetscCall(PetscCalloc3(PetscMax(nn, 1), &theta, 16, &x, 16, &y));
      PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
      ierr = LayerForwardArray(node, 1, theta, x, y);
      PetscCall(PetscPopErrorHandler());
      PetscCheck(ierr == PETSC_ERR_ORDER, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the forward pass of a node of a grid gave error %d, not PETSC_ERR_ORDER", g->spec, (int)ierr);
      PetscCall(PetscFree3(theta, x, y));
    }
    PetscCall(LayerDestroy(&node));

    /* the unpadded copy on the zero-padded input: the same output (maxpool pads with -infinity, not zeros) */
    if (!strstr(g->spec, "maxpool") && nsd == g->nsd) {
      Layer        copy;
      PetNetShape  xin, pin;
      PetscInt     np, nx, npx, ny, ny2, zero[3] = {0, 0, 0}, n = 2;
      PetscScalar *theta, *x, *xp, *y, *y2;
      PetscReal    diff = 0;
      char         padded[64];

      PetscCall(LayerGetInputShape(batch, &xin));
      pin = xin;
      for (PetscInt d = 0; d < nsd; d++) pin.dim[d] += 2 * pad[d];
      PetscCall(PetNetShapeToString(&pin, sizeof(padded), padded));
      PetscCall(CreateLayer(g->spec, padded, 0, &copy));
      PetscCall(LayerReset(copy));
      PetscCall((*copy->ops->setpadding)(copy, nsd, zero));
      PetscCall(LayerSetUp(copy));
      PetscCall(LayerGetNumParameters(copy, &np));
      PetscCall(PetNetShapeSize(&xin, &nx));
      PetscCall(PetNetShapeSize(&pin, &npx));
      PetscCall(LayerGetOutputShape(batch, &out));
      PetscCall(PetNetShapeSize(&out, &ny));
      PetscCall(LayerGetOutputShape(copy, &out));
      PetscCall(PetNetShapeSize(&out, &ny2));
      PetscCheck(ny == ny2, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the unpadded copy on %s gives %" PetscInt_FMT " outputs, the layer %" PetscInt_FMT, g->spec, padded, ny2, ny);
      PetscCall(PetscMalloc5(PetscMax(np, 1), &theta, n * nx, &x, n * npx, &xp, n * ny, &y, n * ny, &y2));
      for (PetscInt i = 0; i < np; i++) theta[i] = PetscSinReal(1.3 * i + 0.2);
      for (PetscInt i = 0; i < n * nx; i++) x[i] = PetscCosReal(0.7 * i + 0.3);
      PetscCall(PetscArrayzero(xp, n * npx));
      { /* xp = x zero-padded by pad[] along each spatial dim (a 2-D shape has depth 1) */
        const PetscInt lead = 3 - nsd, C = xin.dim[nsd];
        PetscInt       D[3] = {1, 1, 1}, P[3] = {0, 0, 0}, Dp[3];

        for (PetscInt d = 0; d < nsd; d++) {
          D[lead + d] = xin.dim[d];
          P[lead + d] = pad[d];
        }
        for (PetscInt d = 0; d < 3; d++) Dp[d] = D[d] + 2 * P[d];
        for (PetscInt s = 0; s < n; s++)
          for (PetscInt a = 0; a < D[0]; a++)
            for (PetscInt b = 0; b < D[1]; b++)
              for (PetscInt e = 0; e < D[2]; e++)
                for (PetscInt ch = 0; ch < C; ch++) xp[(((s * Dp[0] + a + P[0]) * Dp[1] + b + P[1]) * Dp[2] + e + P[2]) * C + ch] = x[(((s * D[0] + a) * D[1] + b) * D[2] + e) * C + ch];
      }
      PetscCall(LayerForwardArray(batch, n, theta, x, y));
      PetscCall(LayerForwardArray(copy, n, theta, xp, y2));
      for (PetscInt i = 0; i < n * ny; i++) diff = PetscMax(diff, PetscAbsScalar(y[i] - y2[i]));
      PetscCheck(diff <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the unpadded copy on the zero-padded input differs by %g", g->spec, (double)diff);
      PetscCall(PetscFree5(theta, x, xp, y, y2));
      PetscCall(LayerDestroy(&copy));
    }
    PetscCall(LayerDestroy(&batch));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "grid     %-40s node of a %" PetscInt_FMT "-D grid: (c) -> (c'), window, padding ok\n", g->spec, g->fielddim));
    /* in point form on a field of the other dimension: the layer sets up and describes its window over its own dims
       (conv2d 2, conv3d 3, a pool with a value per dim as many), or over the field's (a pool whose settings hold along
       every dim); the spatial executor compares them with its grid's and refuses a mismatch (spatial_*_on_2d_error) */
    {
      const PetscInt other = g->fielddim == 2 ? 3 : 2, expect = (strstr(g->spec, "pool") && !strchr(strchr(g->spec, ':'), 'x')) ? other : g->nsd;

      PetscCall(CreateLayer(g->spec, channels, other, &node));
      PetscCall((*node->ops->getwindow)(node, &nsd, k, step, pad, dil));
      PetscCheck(nsd == expect, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s in point form on a %" PetscInt_FMT "-D field: getwindow gives %" PetscInt_FMT " dims, not %" PetscInt_FMT, g->spec, other, nsd, expect);
      PetscCall(LayerDestroy(&node));
    }
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  nlocal = 3, dims = 2;
  char      reference[PETSC_MAX_PATH_LEN] = "", errspec[256], errshape[64] = "6x5x3";
  PetscBool errtest, pytorchonly = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-dims", &dims, NULL));
  PetscCheck(dims == 2 || dims == 3, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-dims must be 2 or 3, not %" PetscInt_FMT, dims);
  PetscCall(PetscStrcpy(reference, dims == 3 ? "tests/expected/conv3d_reference.dat" : "tests/expected/conv_reference.dat"));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-reference", reference, sizeof(reference), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_spec", errspec, sizeof(errspec), &errtest));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-pytorch_only", &pytorchonly, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_shape", errshape, sizeof(errshape), NULL));
  if (errtest) { /* must fail in NetSetUp with a message naming the problem */
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, errspec, errshape, &net));
    PetscCall(NetDestroy(&net));
  } else if (pytorchonly) {
    PetscCall(TestAgainstPyTorch(reference));
  } else if (dims == 3) {
    PetscCall(TestJacobians(nlocal, 3));
    PetscCall(TestAgainstPyTorch(reference));
    PetscCall(TestGridHooks());
  } else {
    PetscCall(TestJacobians(nlocal, 2));
    PetscCall(TestAgainstPyTorch(reference));
    PetscCall(TestDropout(nlocal));
    PetscCall(TestEmptyRank(nlocal));
  }
  PetscCall(PetscFinalize());
  return 0;
}
