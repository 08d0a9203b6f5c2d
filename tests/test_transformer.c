static const char help[] = "The transformer layers' own checks (layernorm, rmsnorm, embedding) beyond the Net's derivative tests:\n"
                           "  default: embedding on one rank's arrays: forward copies the table's rows exactly, the table gradient equals\n"
                           "    a dense one-hot reference (onehot^T dy) to 1e-14 and accumulates, dx is zero, the jvp ignores an input\n"
                           "    tangent, the dot-product identity of the table's Jacobian to 1e-14, float kernels against double (1e-6);\n"
                           "    then the same bits at -net_threads 1 and 2 for embedding's scatter-add and for layernorm's and rmsnorm's\n"
                           "    forward, input cotangent and parameter gradient (batches large enough for several parts);\n"
                           "  -net: a Net embedding:V:E,layernorm,rmsnorm,dense:3 on ids that depend on the global sample only; prints\n"
                           "    |Y| and the gradient of 0.5 |Y|^2 (the same on any number of ranks: expected outputs);\n"
                           "  -error range|fraction|negative|v0|e0|layernorm_e0: the refusal under test.\n";

#include <petnet.h>
#include "testutil.h"

#define V_SMALL 11
#define E_SMALL 5
#define T_SMALL 6

static PetscErrorCode CreateLayer(MPI_Comm comm, const char kind[], const char args[], PetNetShape in, Layer *layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate(comm, layer));
  PetscCall(LayerSetType(*layer, kind));
  if (args) PetscCall(LayerSetArguments(*layer, args));
  PetscCall(LayerSetInputShape(*layer, &in));
  PetscCall(LayerSetUp(*layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode FillRandom(PetscRandom rnd, PetscInt n, PetscScalar a[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscRandomGetValue(rnd, &a[i]));
  PetscFunctionReturn(0);
}

/* ids with many repeats: (7 p + 3) mod V */
static void FillIds(PetscInt P, PetscInt V, PetscScalar ids[])
{
  for (PetscInt p = 0; p < P; p++) ids[p] = (PetscScalar)((7 * p + 3) % V);
}

static PetscReal MaxAbsDiff(PetscInt n, const PetscScalar a[], const PetscScalar b[])
{
  PetscReal m = 0.0;

  for (PetscInt i = 0; i < n; i++) m = PetscMax(m, PetscAbsScalar(a[i] - b[i]));
  return m;
}

static PetscReal MaxAbs(PetscInt n, const PetscScalar a[])
{
  PetscReal m = 0.0;

  for (PetscInt i = 0; i < n; i++) m = PetscMax(m, PetscAbsScalar(a[i]));
  return m;
}

static PetscErrorCode TestEmbedding(PetscRandom rnd)
{
  const PetscInt n = 4, V = V_SMALL, E = E_SMALL, T = T_SMALL, P = n * T;
  PetNetShape    in = {1, {T}};
  Layer          layer;
  PetscScalar   *ids, *W, *y, *dy, *dW, *ref, *onehot, *dx, *u, *yu, *yu2;
  float         *idsf, *yf, *dyf;
  PetscScalar   *dWf;
  PetscReal      err, dot1 = 0.0, dot2 = 0.0;

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, "embedding", "11:5", in, &layer));
  PetscCall(PetscMalloc5(P, &ids, V * E, &W, P * E, &y, P * E, &dy, V * E, &dW));
  PetscCall(PetscMalloc6(V * E, &ref, P * V, &onehot, P, &dx, V * E, &u, P * E, &yu, P * E, &yu2));
  PetscCall(PetscMalloc4(P, &idsf, P * E, &yf, P * E, &dyf, V * E, &dWf));
  FillIds(P, V, ids);
  PetscCall(FillRandom(rnd, V * E, W));
  PetscCall(FillRandom(rnd, P * E, dy));
  PetscCall(FillRandom(rnd, V * E, u));

  /* forward: the rows, exactly */
  PetscCall(LayerForwardArray(layer, n, W, ids, y));
  err = 0.0;
  for (PetscInt p = 0; p < P; p++)
    for (PetscInt e = 0; e < E; e++) err = PetscMax(err, PetscAbsScalar(y[p * E + e] - W[(PetscInt)ids[p] * E + e]));
  PetscCheck(err == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding forward is not the table's rows: error %g", (double)err);

  /* backward against onehot^T dy, a dense reference */
  for (PetscInt i = 0; i < P * V; i++) onehot[i] = 0.0;
  for (PetscInt p = 0; p < P; p++) onehot[p * V + (PetscInt)ids[p]] = 1.0;
  for (PetscInt v = 0; v < V; v++)
    for (PetscInt e = 0; e < E; e++) {
      PetscScalar s = 0.0;

      for (PetscInt p = 0; p < P; p++) s += onehot[p * V + v] * dy[p * E + e];
      ref[v * E + e] = s;
    }
  for (PetscInt i = 0; i < V * E; i++) dW[i] = 0.0;
  for (PetscInt p = 0; p < P; p++) dx[p] = 1.0;
  PetscCall(LayerBackwardArray(layer, n, W, ids, y, dy, dx, dW));
  err = MaxAbsDiff(V * E, dW, ref) / MaxAbs(V * E, ref);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding table gradient against the one-hot reference: relative error %g > 1e-14", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: table gradient against onehot^T dy, relative error %.1e (<= 1e-14)\n", (double)err));
  PetscCheck(MaxAbs(P, dx) == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding: the ids' cotangent is not zero");
  /* it accumulates */
  PetscCall(LayerBackwardArray(layer, n, W, ids, y, dy, NULL, dW));
  for (PetscInt i = 0; i < V * E; i++) ref[i] *= 2.0;
  err = MaxAbsDiff(V * E, dW, ref) / MaxAbs(V * E, ref);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding backward does not accumulate into dtheta: relative error %g", (double)err);

  /* jvp: the rows of the tangent, whatever the input tangent; the dot-product identity <J u, dy> = <u, J^T dy> */
  PetscCall(LayerJVPArray(layer, n, W, ids, y, NULL, u, yu));
  for (PetscInt p = 0; p < P; p++) dx[p] = 0.25 * p;
  PetscCall(LayerJVPArray(layer, n, W, ids, y, dx, u, yu2));
  PetscCheck(MaxAbsDiff(P * E, yu, yu2) == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding jvp depends on the input tangent");
  for (PetscInt i = 0; i < P * E; i++) dot1 += yu[i] * dy[i];
  for (PetscInt i = 0; i < V * E; i++) dot2 += u[i] * ref[i] / 2.0;
  err = PetscAbsReal(dot1 - dot2) / PetscMax(PetscAbsReal(dot1), 1e-300);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding dot-product test: %g > 1e-14", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: dot-product identity of the table's Jacobian %.1e (<= 1e-14); dx = 0; jvp ignores the input tangent\n", (double)err));

  /* float kernels against double */
  for (PetscInt p = 0; p < P; p++) idsf[p] = (float)ids[p];
  for (PetscInt i = 0; i < P * E; i++) dyf[i] = (float)dy[i];
  {
    const float *xs[1]  = {idsf};
    float       *dxs[1] = {NULL};

    PetscCall(LayerForwardSingle(layer, n, W, xs, yf));
    err = 0.0;
    for (PetscInt i = 0; i < P * E; i++) err = PetscMax(err, PetscAbsReal((PetscReal)yf[i] - y[i]));
    PetscCheck(err <= 1e-6 * MaxAbs(P * E, y), PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding single forward against double: %g", (double)err);
    for (PetscInt i = 0; i < V * E; i++) dWf[i] = 0.0;
    PetscCall(LayerBackwardSingle(layer, n, W, xs, yf, dyf, dxs, dWf));
    for (PetscInt i = 0; i < V * E; i++) ref[i] /= 2.0;
    err = MaxAbsDiff(V * E, dWf, ref) / MaxAbs(V * E, ref);
    PetscCheck(err <= 1e-6, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding single table gradient against double: relative error %g > 1e-6", (double)err);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: float forward and table gradient against double, relative error <= 1e-6\n"));
  PetscCall(PetscFree5(ids, W, y, dy, dW));
  PetscCall(PetscFree6(ref, onehot, dx, u, yu, yu2));
  PetscCall(PetscFree4(idsf, yf, dyf, dWf));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* forward, dx and dtheta of a layer at 1 and 2 threads: the same bits */
static PetscErrorCode TestThreads(PetscRandom rnd, const char kind[], const char args[], PetNetShape in, PetscInt n, PetscBool ids)
{
  Layer        layer;
  PetscInt     insize, outsize, np;
  PetscScalar *x, *theta, *dy, *y[2], *dx[2], *dtheta[2];

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, kind, args, in, &layer));
  PetscCall(PetNetShapeSize(&in, &insize));
  {
    PetNetShape out;

    PetscCall(LayerGetOutputShape(layer, &out));
    PetscCall(PetNetShapeSize(&out, &outsize));
  }
  PetscCall(LayerGetNumParameters(layer, &np));
  PetscCall(PetscMalloc3(n * insize, &x, np, &theta, n * outsize, &dy));
  PetscCall(PetscMalloc6(n * outsize, &y[0], n * outsize, &y[1], n * insize, &dx[0], n * insize, &dx[1], np, &dtheta[0], np, &dtheta[1]));
  if (ids)
    FillIds(n * insize, 2048, x);
  else
    PetscCall(FillRandom(rnd, n * insize, x));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, n * outsize, dy));
  for (PetscInt t = 0; t < 2; t++) {
    PetscCall(PetNetSetNumThreads(t + 1));
    for (PetscInt i = 0; i < np; i++) dtheta[t][i] = 0.5;
    PetscCall(LayerForwardArray(layer, n, theta, x, y[t]));
    PetscCall(LayerBackwardArray(layer, n, theta, x, y[t], dy, dx[t], dtheta[t]));
  }
  PetscCall(PetNetSetNumThreads(1));
  if (ids) { /* the table gradient of the large case (several parts of rows) against a plain loop over the positions */
    PetNetShape  out;
    PetscInt     E;
    PetscScalar *ref;
    PetscReal    err;

    PetscCall(LayerGetOutputShape(layer, &out));
    E = out.dim[out.ndim - 1];
    PetscCall(PetscMalloc1(np, &ref));
    for (PetscInt i = 0; i < np; i++) ref[i] = 0.5;
    for (PetscInt p = 0; p < n * insize; p++)
      for (PetscInt e = 0; e < E; e++) ref[(PetscInt)x[p] * E + e] += dy[p * E + e];
    err = MaxAbsDiff(np, dtheta[0], ref) / MaxAbs(np, ref);
    PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the table gradient of %" PetscInt_FMT " rows against a plain scatter-add: relative error %g > 1e-14", kind, np / E, (double)err);
    PetscCall(PetscFree(ref));
  }
  PetscCheck(!memcmp(y[0], y[1], sizeof(PetscScalar) * n * outsize), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: forward differs between 1 and 2 threads", kind);
  PetscCheck(!memcmp(dx[0], dx[1], sizeof(PetscScalar) * n * insize), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: dx differs between 1 and 2 threads", kind);
  PetscCheck(!memcmp(dtheta[0], dtheta[1], sizeof(PetscScalar) * np), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the parameter gradient differs between 1 and 2 threads", kind);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "%-10s %" PetscInt_FMT " samples: forward, dx and the parameter gradient the same bits at 1 and 2 threads\n", kind, n));
  PetscCall(PetscFree3(x, theta, dy));
  PetscCall(PetscFree6(y[0], y[1], dx[0], dx[1], dtheta[0], dtheta[1]));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* a Net on ids that depend on the global sample index only: the same numbers on any number of ranks */
static PetscErrorCode TestNet(void)
{
  const PetscInt T = 5, nglobal = 6;
  PetNetShape    in = {1, {T}};
  Net            net;
  Vec            X, Y, G;
  PetscInt       lo, hi;
  PetscScalar   *x;
  PetscReal      ny, ng;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "embedding:9:4,layernorm,tanh,rmsnorm,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  {
    PetscMPIInt size, rank;
    PetscInt    nlocal;

    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    nlocal = nglobal / size + (rank < nglobal % size ? 1 : 0);
    PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  }
  PetscCall(VecGetOwnershipRange(X, &lo, &hi));
  PetscCall(VecGetArray(X, &x));
  for (PetscInt i = lo; i < hi; i++) x[i - lo] = (PetscScalar)((5 * i + 2) % 9);
  PetscCall(VecRestoreArray(X, &x));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Y, NORM_2, &ny));
  {
    Vec theta;

    PetscCall(NetGetParameters(net, &theta));
    PetscCall(VecDuplicate(theta, &G));
  }
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, Y, NULL, G)); /* the gradient of 0.5 |Y|^2 */
  PetscCall(VecNorm(G, NORM_2, &ng));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "embedding:9:4,layernorm,tanh,rmsnorm,dense:3 on %" PetscInt_FMT " sequences of %" PetscInt_FMT " ids: |Y| %.10e |G| %.10e\n", nglobal, T, (double)ny, (double)ng));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  char        error[64] = "";
  PetscBool   net       = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-net", &net, NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  if (error[0]) {
    PetNetShape in = {1, {T_SMALL}};
    Layer       layer;
    PetscScalar ids[T_SMALL], W[V_SMALL * E_SMALL], y[T_SMALL * E_SMALL];
    PetscBool   isrange, isfraction, isnegative, isv0, ise0, isln;

    PetscCall(PetscStrcmp(error, "range", &isrange));
    PetscCall(PetscStrcmp(error, "fraction", &isfraction));
    PetscCall(PetscStrcmp(error, "negative", &isnegative));
    PetscCall(PetscStrcmp(error, "v0", &isv0));
    PetscCall(PetscStrcmp(error, "e0", &ise0));
    PetscCall(PetscStrcmp(error, "layernorm_e0", &isln));
    if (isv0) PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "0:4", in, &layer));
    if (ise0) PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "11:0", in, &layer));
    if (isln) {
      PetNetShape bad = {2, {4, 0}};

      PetscCall(CreateLayer(PETSC_COMM_WORLD, "layernorm", NULL, bad, &layer));
    }
    PetscCheck(isrange || isfraction || isnegative, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-error %s: no such case (range, fraction, negative, v0, e0, layernorm_e0), or it was not refused", error);
    PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "11:5", in, &layer));
    PetscCall(LayerSetIndex(layer, 0));
    FillIds(T_SMALL, V_SMALL, ids);
    for (PetscInt i = 0; i < V_SMALL * E_SMALL; i++) W[i] = i;
    ids[4] = isrange ? V_SMALL : isfraction ? 2.5 : -1.0;
    PetscCall(LayerForwardArray(layer, 1, W, ids, y));
    PetscCall(LayerDestroy(&layer));
  } else if (net) {
    PetscCall(TestNet());
  } else {
    PetNetShape seq = {2, {32, 8}}, ids = {1, {16}};

    PetscCall(TestEmbedding(rnd));
    PetscCall(TestThreads(rnd, "embedding", "2048:8", ids, 64, PETSC_TRUE));
    PetscCall(TestThreads(rnd, "layernorm", NULL, seq, 128, PETSC_FALSE));
    PetscCall(TestThreads(rnd, "rmsnorm", NULL, seq, 128, PETSC_FALSE));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
