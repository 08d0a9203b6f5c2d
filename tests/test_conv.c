static const char help[] = "Tests of the convolutional layer kinds (conv2d, maxpool, avgpool, globalavgpool, flatten, dropout, batchnorm):\n"
                           "  1. NetTestJacobian on small Nets: dot-product tests <= 1e-12, finite differences <= 1e-6, training and evaluation mode;\n"
                           "  2. outputs, input and parameter gradients against PyTorch (share/reference/conv_reference.py) to 1e-12;\n"
                           "  3. dropout: rate, scaling, identity in evaluation mode, the same mask on any number of ranks;\n"
                           "  4. a Net with batchnorm and dropout on a batch that leaves the last rank without samples.\n"
                           "Options: -nlocal N (samples per rank), -reference FILE, -pytorch_only (only 2., e.g. on another reference file),\n"
                           "-error_spec LIST (only build that Net: for the error tests).\n";

#include <petnet.h>
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

static PetscErrorCode TestJacobians(PetscInt nlocal)
{
  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(jcases) / sizeof(jcases[0]); k++) {
    Net         net;
    Vec         X;
    PetscRandom rnd;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(CreateNet(PETSC_COMM_WORLD, jcases[k].spec, "6x5x3", &net));
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
    PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
    PetscCall(PetscRandomSetSeed(rnd, 11));
    PetscCall(PetscRandomSeed(rnd));
    PetscCall(VecSetRandom(X, rnd));
    if (!jcases[k].training) { /* evaluation mode after two training passes: non-trivial running statistics */
      PetscCall(NetForward(net, X, NULL));
      PetscCall(VecScale(X, 0.5));
      PetscCall(VecShift(X, 0.3));
      PetscCall(NetForward(net, X, NULL));
      PetscCall(NetSetTraining(net, PETSC_FALSE));
    }
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g > 1e-12", jcases[k].spec, (double)dot);
    PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference error %g > 1e-6", jcases[k].spec, (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian %-40s %-10s dot-product ok, finite differences ok\n", jcases[k].spec, jcases[k].training ? "training" : "evaluation"));
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

int main(int argc, char **argv)
{
  PetscInt  nlocal                        = 3;
  char      reference[PETSC_MAX_PATH_LEN] = "tests/expected/conv_reference.dat", errspec[256];
  PetscBool errtest, pytorchonly = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-reference", reference, sizeof(reference), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_spec", errspec, sizeof(errspec), &errtest));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-pytorch_only", &pytorchonly, NULL));
  if (errtest) { /* must fail in NetSetUp with a message naming the problem */
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, errspec, "6x5x3", &net));
    PetscCall(NetDestroy(&net));
  } else if (pytorchonly) {
    PetscCall(TestAgainstPyTorch(reference));
  } else {
    PetscCall(TestJacobians(nlocal));
    PetscCall(TestAgainstPyTorch(reference));
    PetscCall(TestDropout(nlocal));
    PetscCall(TestEmptyRank(nlocal));
  }
  PetscCall(PetscFinalize());
  return 0;
}
