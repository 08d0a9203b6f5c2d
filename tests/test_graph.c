static const char help[] = "Tests of Nets written as graphs (NetSetGraph(), -net_graph) and of the join layers add and concat:\n"
                           "  1. a graph that spells out a residual block equals the layer list with residual(F|P), given the same\n"
                           "     parameters: outputs, input and parameter gradients, JVPs bit for bit;\n"
                           "  2. NetTestJacobian on graphs with fan-out (of the input and of nodes), add of two and three inputs, concat of\n"
                           "     images along channels (a U-Net skip), batchnorm and dropout in branches: dot-product tests of the whole Net\n"
                           "     and of every node's shells <= 1e-12, finite differences <= 1e-6, training and evaluation mode;\n"
                           "  3. add and concat against their definition on the stored activations (exact);\n"
                           "  4. NetGetSpec -> NetSetGraph rebuilds the same graph (also with a residual entry), NetView shows it;\n"
                           "  5. NetSave/NetLoad (binary, HDF5) of a graph: the same outputs, tensors named after the nodes.\n"
                           "Options: -nlocal N (samples per rank), -error_graph GRAPH -error_shape SHAPE (only build that Net: error tests).\n";

#include <petnet.h>
#include <petnet/private/netimpl.h>
#include <petscviewerhdf5.h>
#include "testutil.h"

static PetscErrorCode CreateNet(MPI_Comm comm, const char spec[], const char shape[], Net *net)
{
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(NetCreate(comm, net));
  if (strchr(spec, ';'))
    PetscCall(NetSetGraph(*net, spec));
  else
    PetscCall(NetSetLayers(*net, spec));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetSeed(*net, 5));
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* A Vec with values in [-2, 2) from a fixed seed (a parallel PetscRandom: the same global values on any rank count) */
static PetscErrorCode RandomFill(Vec v, PetscInt seed)
{
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PetscObjectComm((PetscObject)v), &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* max |a - b| */
static PetscErrorCode MaxDiff(Vec a, Vec b, PetscReal *d)
{
  Vec w;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(a, &w));
  PetscCall(VecWAXPY(w, -1.0, a, b));
  PetscCall(VecNorm(w, NORM_INFINITY, d));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------ 1. a graph equals its residual list */
static PetscErrorCode TestResidualEquivalence(PetscInt nlocal)
{
  const char *list[]  = {"dense:5,residual(dense:7,tanh,dense:5),sigmoid,residual(dense:4,gelu,dense:3|dense:3),dense:2", "conv2d:3:3:1:1,residual(conv2d:3:3:1:1,batchnorm,relu,conv2d:3:3:1:1|conv2d:3:1,batchnorm),relu,flatten,dense:2"};
  const char *graph[] = {"a = dense:5; f0 = dense:7; f1 = tanh; f2 = dense:5; r = add <- f2, a; s = sigmoid; g0 = dense:4 <- s; g1 = gelu; g2 = dense:3; p = dense:3 <- s; r2 = add <- g2, p; out = dense:2;",
                         "c = conv2d:3:3:1:1; f0 = conv2d:3:3:1:1; f1 = batchnorm; f2 = relu; f3 = conv2d:3:3:1:1; p0 = conv2d:3:1 <- c; p1 = batchnorm; r = add <- f3, p1; a = relu; fl = flatten; out = dense:2;"};
  const char *shape[] = {"6", "5x4x2"};

  PetscFunctionBegin;
  for (PetscInt c = 0; c < 2; c++) {
    Net       A, B;
    Vec       X, YA, YB, dY, dXA, dXB, GA, GB, theta, dth, JA, JB;
    PetscReal d[4];

    PetscCall(CreateNet(PETSC_COMM_WORLD, list[c], shape[c], &A));
    PetscCall(CreateNet(PETSC_COMM_WORLD, graph[c], shape[c], &B));
    PetscCall(NetGetParameters(A, &theta));
    PetscCall(NetSetParameters(B, theta)); /* the same layout: F's nodes, P's nodes, the join */
    PetscCall(NetCreateVecs(A, nlocal, &X, &YA));
    PetscCall(VecDuplicate(YA, &YB));
    PetscCall(VecDuplicate(YA, &dY));
    PetscCall(VecDuplicate(X, &dXA));
    PetscCall(VecDuplicate(X, &dXB));
    PetscCall(NetCreateParameterVec(A, &GA));
    PetscCall(VecDuplicate(GA, &GB));
    PetscCall(VecDuplicate(GA, &dth));
    PetscCall(VecDuplicate(YA, &JA));
    PetscCall(VecDuplicate(YA, &JB));
    PetscCall(RandomFill(X, 1));
    PetscCall(RandomFill(dY, 2));
    PetscCall(RandomFill(dth, 3));
    PetscCall(NetForward(A, X, YA));
    PetscCall(NetForward(B, X, YB));
    PetscCall(VecZeroEntries(GA));
    PetscCall(VecZeroEntries(GB));
    PetscCall(NetBackward(A, dY, dXA, GA));
    PetscCall(NetBackward(B, dY, dXB, GB));
    PetscCall(NetJVP(A, X, dth, JA));
    PetscCall(NetJVP(B, X, dth, JB));
    PetscCall(MaxDiff(YA, YB, &d[0]));
    PetscCall(MaxDiff(dXA, dXB, &d[1]));
    PetscCall(MaxDiff(GA, GB, &d[2]));
    PetscCall(MaxDiff(JA, JB, &d[3]));
    PetscCheck(d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "graph and list differ: output %g, dX %g, gradient %g, JVP %g", (double)d[0], (double)d[1], (double)d[2], (double)d[3]);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "graph = list %s: outputs, input and parameter gradients, JVP identical\n", list[c]));
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&YA));
    PetscCall(VecDestroy(&YB));
    PetscCall(VecDestroy(&dY));
    PetscCall(VecDestroy(&dXA));
    PetscCall(VecDestroy(&dXB));
    PetscCall(VecDestroy(&GA));
    PetscCall(VecDestroy(&GB));
    PetscCall(VecDestroy(&dth));
    PetscCall(VecDestroy(&JA));
    PetscCall(VecDestroy(&JB));
    PetscCall(NetDestroy(&A));
    PetscCall(NetDestroy(&B));
  }
  PetscFunctionReturn(0);
}

/* ----------------------------------------------------------------------------------------- 2. Jacobian tests */
static PetscErrorCode TestJacobians(PetscInt nlocal)
{
  struct {
    const char *graph, *shape;
    PetscBool   training;
  } cases[] = {
      {"a = dense:6; b = tanh; c = dense:6; s = add <- c, a; t = concat <- s, input; out = dense:3;", "5", PETSC_TRUE},
      {"h = dense:5; p = tanh <- h; q = sigmoid <- h; r = softplus <- h; s = add <- p, q, r; out = dense:2 <- s;", "4", PETSC_TRUE},
      {"x1 = dense:4 <- input; x2 = dense:3 <- input; x3 = gelu <- input; cat = concat <- x3, x1, x2; bn = batchnorm; d = dropout:0.3; out = dense:2;", "5", PETSC_TRUE},
      {"x1 = dense:4 <- input; x2 = dense:3 <- input; x3 = gelu <- input; cat = concat <- x3, x1, x2; bn = batchnorm; d = dropout:0.3; out = dense:2;", "5", PETSC_FALSE},
      /* a small U-Net: down by a strided convolution, back by concatenating the skip with the upsampled (here: same-grid) path */
      {"e1 = conv2d:3:3:1:1; a1 = tanh; e2 = conv2d:4:3:1:1; a2 = relu; cat = concat <- a2, a1, input; d1 = conv2d:3:3:1:1; bn = batchnorm; a3 = tanh; "
       "r = residual(conv2d:3:3:1:1,tanh); gap = globalavgpool; out = dense:2;",
       "6x5x2", PETSC_TRUE},
  };

  PetscFunctionBegin;
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    Net         net;
    Vec         X;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(CreateNet(PETSC_COMM_WORLD, cases[c].graph, cases[c].shape, &net));
    PetscCall(NetSetTraining(net, cases[c].training));
    PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
    PetscCall(RandomFill(X, 11));
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12 && fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product %g (<= 1e-12), finite differences %g (<= 1e-6)", cases[c].graph, (double)dot, (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian %-10s %s: dot-product %.1e <= 1e-12, finite differences %.1e <= 1e-6\n", cases[c].training ? "training" : "evaluation", cases[c].graph, (double)dot, (double)fd));
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(VecDestroy(&X));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* -------------------------------------------------------------------------- 3. add and concat by definition */
static PetscErrorCode TestJoinsByDefinition(PetscInt nlocal)
{
  Net                net;
  Vec                X, Y;
  const PetscScalar *a, *b, *x, *s, *cat;
  PetscInt           n;
  PetscReal          err = 0;

  PetscFunctionBegin;
  /* nodes: 0 a (3x3x2), 1 b = tanh(input) (3x3x2), 2 s = a + b + input, 3 cat = [a, input, s] (3x3x6), 4 out */
  PetscCall(CreateNet(PETSC_COMM_WORLD, "a = conv2d:2:3:1:1; b = tanh <- input; s = add <- a, b, input; cat = concat <- a, input, s; out = globalavgpool;", "3x3x2", &net));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(RandomFill(X, 4));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetGetBatchSize(net, &n, NULL));
  PetscCall(VecGetArrayRead(net->act[0], &x));
  PetscCall(VecGetArrayRead(net->act[1], &a));
  PetscCall(VecGetArrayRead(net->act[2], &b));
  PetscCall(VecGetArrayRead(net->act[3], &s));
  PetscCall(VecGetArrayRead(net->act[4], &cat));
  for (PetscInt p = 0; p < n * 9; p++)
    for (PetscInt c = 0; c < 2; c++) {
      err = PetscMax(err, PetscAbsScalar(s[2 * p + c] - (a[2 * p + c] + b[2 * p + c] + x[2 * p + c])));
      err = PetscMax(err, PetscAbsScalar(cat[6 * p + c] - a[2 * p + c]));
      err = PetscMax(err, PetscAbsScalar(cat[6 * p + 2 + c] - x[2 * p + c]));
      err = PetscMax(err, PetscAbsScalar(cat[6 * p + 4 + c] - s[2 * p + c]));
    }
  PetscCall(VecRestoreArrayRead(net->act[4], &cat));
  PetscCall(VecRestoreArrayRead(net->act[3], &s));
  PetscCall(VecRestoreArrayRead(net->act[2], &b));
  PetscCall(VecRestoreArrayRead(net->act[1], &a));
  PetscCall(VecRestoreArrayRead(net->act[0], &x));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &err, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  PetscCheck(err == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "add/concat differ from their definition by %g", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "joins: add of three inputs and concat [a, input, s] along channels exactly as defined\n"));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------ 4. spec and view */
static PetscErrorCode TestSpec(void)
{
  Net  net;
  char spec[4096];

  PetscFunctionBegin;
  PetscCall(CreateNet(PETSC_COMM_WORLD, " stem=Conv2d(4:3:1:1) ;a = relu ;b = conv2d:4:3:1:1<-a; sum = ADD <- b,stem; blk = residual(conv2d:4:3:1:1,tanh|conv2d:4:1) <- sum; cat = concat <- blk, input; out = conv2d:1:1; ", "5x5x3", &net));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "spec: %s\n", spec));
  PetscCall(CheckSpecRoundTrip(net));
  PetscCall(NetView(net, PETSC_VIEWER_STDOUT_WORLD));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------- 5. save and load */
static PetscErrorCode TestSaveLoad(PetscInt nlocal)
{
  const char *ext[] = {"petnet", "h5"};
  Net         net;
  Vec         X, Y, Y2;
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(CreateNet(PETSC_COMM_WORLD, "stem = conv2d:3:3:1:1; bn = batchnorm; a = relu; b = conv2d:3:3:1:1; s = add <- b, stem; cat = concat <- s, input; gap = globalavgpool; out = dense:2;", "4x4x2", &net));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecDuplicate(Y, &Y2));
  PetscCall(RandomFill(X, 8));
  PetscCall(NetForward(net, X, NULL)); /* training mode: running statistics move */
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetForward(net, X, Y));
  for (PetscInt e = 0; e < 2; e++) {
    Net       loaded;
    char      file[PETSC_MAX_PATH_LEN], spec[2][4096];
    PetscReal d;

    PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/graph_%d.%s", size, ext[e]));
    PetscCall(NetSave(net, file));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &loaded));
    PetscCall(NetLoad(loaded, file));
    PetscCall(NetSetTraining(loaded, PETSC_FALSE));
    PetscCall(NetForward(loaded, X, Y2));
    PetscCall(MaxDiff(Y, Y2, &d));
    PetscCall(NetGetSpec(net, sizeof(spec[0]), spec[0]));
    PetscCall(NetGetSpec(loaded, sizeof(spec[1]), spec[1]));
    PetscCheck(d == 0 && !strcmp(spec[0], spec[1]), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: loaded graph differs (outputs by %g; spec %s vs %s)", file, (double)d, spec[1], spec[0]);
    if (e == 1) {
      PetscViewer h5;
      PetscBool   has[3];

      PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &h5));
      PetscCall(PetscViewerHDF5HasDataset(h5, "stem.weight", &has[0]));
      PetscCall(PetscViewerHDF5HasDataset(h5, "bn.running_var", &has[1]));
      PetscCall(PetscViewerHDF5HasDataset(h5, "out.bias", &has[2]));
      PetscCall(PetscViewerDestroy(&h5));
      PetscCheck(has[0] && has[1] && has[2], PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s lacks a tensor named after its node", file);
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "save/load (%s): same graph, outputs identical%s\n", ext[e], e ? "; datasets stem.weight, bn.running_var, out.bias present" : ""));
    PetscCall(NetDestroy(&loaded));
  }
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Y2));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  nlocal         = 3;
  char      errgraph[4096] = "", errshape[64] = "4";
  PetscBool errtest;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_graph", errgraph, sizeof(errgraph), &errtest));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_shape", errshape, sizeof(errshape), NULL));
  if (errtest) { /* the error tests: building this Net must fail */
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, errgraph, errshape, &net));
    PetscCall(NetDestroy(&net));
  } else {
    PetscCall(TestResidualEquivalence(nlocal));
    PetscCall(TestJacobians(nlocal));
    PetscCall(TestJoinsByDefinition(nlocal));
    PetscCall(TestSpec());
    PetscCall(TestSaveLoad(nlocal));
  }
  PetscCall(PetscFinalize());
  return 0;
}
