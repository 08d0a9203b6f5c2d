static const char help[] = "The sequence plumbing of issue 32, checked on one rank's arrays:\n"
                           "  -case dense: dense:N:tokens on n samples (T, E) gives the same bits as plain dense:N on n T samples (E)\n"
                           "    (forward, input cotangent, parameter gradient, jvp, second-order backward; double and float), and\n"
                           "    on samples (1, E) the same bits as dense:N on (E);\n"
                           "  -case position: position:6:sinusoidal on (4, 6) adds sin(t / 10000^(2i/E)), cos(...) to 1e-15; position:6 on\n"
                           "    (4, 6) adds the first 4 rows of its table, its gradient the sum of dy over the samples in those rows and\n"
                           "    zero in the last 2, dx = dy, the jvp dx + dW; float kernels against double (1e-6);\n"
                           "  -case position_long: position:3 on (4, 6) must be refused (an _error test).\n";

#include <petnet.h>
#include "testutil.h"

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

/* what a layer computes at one point, in double and in float: y, dx, dtheta (from 0.5), jvp, sobackward's dxdot and dthetadot */
typedef struct {
  PetscScalar *y, *dx, *dtheta, *jvp, *dxdot, *dthetadot;
  float       *yf, *dxf, *jvpf;
  PetscScalar *dthetaf;
} DenseResults;

static PetscErrorCode DenseRun(Layer layer, PetscInt n, PetscInt nx, PetscInt ny, PetscInt np, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, const PetscScalar *u, const PetscScalar *v, DenseResults *r)
{
  float *xf, *dyf, *uf;

  PetscFunctionBegin;
  PetscCall(PetscMalloc6(ny, &r->y, nx, &r->dx, np, &r->dtheta, ny, &r->jvp, nx, &r->dxdot, np, &r->dthetadot));
  PetscCall(PetscMalloc4(ny, &r->yf, nx, &r->dxf, ny, &r->jvpf, np, &r->dthetaf));
  PetscCall(PetscMalloc3(nx, &xf, ny, &dyf, nx, &uf));
  for (PetscInt i = 0; i < np; i++) r->dtheta[i] = r->dthetaf[i] = 0.5;
  PetscCall(PetscArrayzero(r->dxdot, nx));
  PetscCall(PetscArrayzero(r->dthetadot, np));
  PetscCall(LayerForwardArray(layer, n, theta, x, r->y));
  PetscCall(LayerBackwardArray(layer, n, theta, x, r->y, dy, r->dx, r->dtheta));
  PetscCall(LayerJVPArray(layer, n, theta, x, r->y, u, v, r->jvp));
  PetscCall(LayerSOBackwardArray(layer, n, theta, x, r->y, u, v, r->jvp, dy, r->dxdot, r->dthetadot));
  for (PetscInt i = 0; i < nx; i++) xf[i] = (float)x[i];
  for (PetscInt i = 0; i < nx; i++) uf[i] = (float)u[i];
  for (PetscInt i = 0; i < ny; i++) dyf[i] = (float)dy[i];
  {
    const float *xs[1] = {xf}, *us[1] = {uf};
    float       *dxs[1] = {r->dxf};

    PetscCall(LayerForwardSingle(layer, n, theta, xs, r->yf));
    PetscCall(LayerBackwardSingle(layer, n, theta, xs, r->yf, dyf, dxs, r->dthetaf));
    PetscCall(LayerJVPSingle(layer, n, theta, xs, r->yf, us, v, r->jvpf));
  }
  PetscCall(PetscFree3(xf, dyf, uf));
  PetscFunctionReturn(0);
}

static PetscErrorCode DenseFree(DenseResults *r)
{
  PetscFunctionBegin;
  PetscCall(PetscFree6(r->y, r->dx, r->dtheta, r->jvp, r->dxdot, r->dthetadot));
  PetscCall(PetscFree4(r->yf, r->dxf, r->jvpf, r->dthetaf));
  PetscFunctionReturn(0);
}

/* every array of a and b the same bits */
static PetscErrorCode DenseCompare(const char what[], const DenseResults *a, const DenseResults *b, PetscInt nx, PetscInt ny, PetscInt np)
{
  const struct {
    const char *name;
    const void *a, *b;
    size_t      bytes;
  } arrays[] = {
      {"forward", a->y, b->y, sizeof(PetscScalar) * ny},   {"input cotangent", a->dx, b->dx, sizeof(PetscScalar) * nx},          {"parameter gradient", a->dtheta, b->dtheta, sizeof(PetscScalar) * np},
      {"jvp", a->jvp, b->jvp, sizeof(PetscScalar) * ny},   {"second-order dxdot", a->dxdot, b->dxdot, sizeof(PetscScalar) * nx}, {"second-order dthetadot", a->dthetadot, b->dthetadot, sizeof(PetscScalar) * np},
      {"float forward", a->yf, b->yf, sizeof(float) * ny}, {"float input cotangent", a->dxf, b->dxf, sizeof(float) * nx},        {"float parameter gradient", a->dthetaf, b->dthetaf, sizeof(PetscScalar) * np},
      {"float jvp", a->jvpf, b->jvpf, sizeof(float) * ny},
  };

  PetscFunctionBegin;
  for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) PetscCheck(!memcmp(arrays[i].a, arrays[i].b, arrays[i].bytes), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the %s differs", what, arrays[i].name);
  PetscFunctionReturn(0);
}

static PetscErrorCode TestDense(PetscRandom rnd)
{
  const PetscInt E = 37, N = 29, T = 11, n = 9, rows = n * T; /* a GEMM large enough to be cut into parts */
  PetNetShape    flat = {1, {E}}, seq = {2, {T, E}}, one = {2, {1, E}};
  Layer          plain, tokens, single;
  PetscInt       np, np2;
  PetscScalar   *theta, *v, *x, *u, *dy;
  DenseResults   rp, rt, r1;

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, "dense", "29", flat, &plain));
  PetscCall(CreateLayer(PETSC_COMM_SELF, "dense", "29:tokens", seq, &tokens));
  PetscCall(CreateLayer(PETSC_COMM_SELF, "dense", "29:tokens", one, &single));
  PetscCall(LayerGetNumParameters(plain, &np));
  PetscCall(LayerGetNumParameters(tokens, &np2));
  PetscCheck(np == np2 && np == N * E + N, PETSC_COMM_SELF, PETSC_ERR_PLIB, "dense:29:tokens on (11, 37) has %" PetscInt_FMT " parameters, dense:29 on (37) %" PetscInt_FMT ": both should have N E + N = %" PetscInt_FMT, np2, np, N * E + N);
  {
    PetNetShape out;

    PetscCall(LayerGetOutputShape(tokens, &out));
    PetscCheck(out.ndim == 2 && out.dim[0] == T && out.dim[1] == N, PETSC_COMM_SELF, PETSC_ERR_PLIB, "dense:29:tokens on (11, 37) should give (11, 29)");
  }
  PetscCall(PetscMalloc5(np, &theta, np, &v, rows * E, &x, rows * E, &u, rows * N, &dy));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, np, v));
  PetscCall(FillRandom(rnd, rows * E, x));
  PetscCall(FillRandom(rnd, rows * E, u));
  PetscCall(FillRandom(rnd, rows * N, dy));
  PetscCall(DenseRun(plain, rows, rows * E, rows * N, np, theta, x, dy, u, v, &rp));
  PetscCall(DenseRun(tokens, n, rows * E, rows * N, np, theta, x, dy, u, v, &rt));
  PetscCall(DenseRun(single, rows, rows * E, rows * N, np, theta, x, dy, u, v, &r1));
  PetscCall(DenseCompare("dense:29:tokens on 9 samples (11, 37) against dense:29 on 99 samples (37)", &rt, &rp, rows * E, rows * N, np));
  PetscCall(DenseCompare("dense:29:tokens on 99 samples (1, 37) against dense:29 on 99 samples (37)", &r1, &rp, rows * E, rows * N, np));
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "dense:29:tokens on (11, 37) and on (1, 37): forward, dx, dtheta, jvp, second-order backward, in double and float, the same bits as dense:29 on (37) row by row\n"));
  PetscCall(DenseFree(&rp));
  PetscCall(DenseFree(&rt));
  PetscCall(DenseFree(&r1));
  PetscCall(PetscFree5(theta, v, x, u, dy));
  PetscCall(LayerDestroy(&plain));
  PetscCall(LayerDestroy(&tokens));
  PetscCall(LayerDestroy(&single));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestPosition(PetscRandom rnd)
{
  const PetscInt T = 6, Tp = 4, E = 6, n = 3, m = Tp * E;
  PetNetShape    in = {2, {Tp, E}};
  Layer          sinus, learned;
  PetscInt       np;
  PetscScalar    x[3 * 24], y[3 * 24], dy[3 * 24], dx[3 * 24], ref[3 * 24], theta[36], dtheta[36], v[36];
  float          xf[3 * 24], yf[3 * 24], dyf[3 * 24], dxf[3 * 24];
  PetscReal      err = 0;

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, "position", "6:sinusoidal", in, &sinus));
  PetscCall(LayerGetNumParameters(sinus, &np));
  PetscCheck(np == 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6:sinusoidal has %" PetscInt_FMT " parameters, not 0", np);
  PetscCall(PetscArrayzero(x, n * m));
  PetscCall(LayerForwardArray(sinus, n, NULL, x, y));
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt t = 0; t < Tp; t++)
      for (PetscInt i = 0; i < E / 2; i++) { /* "Attention is all you need", 3.5 */
        const PetscReal angle = t / PetscPowReal(10000.0, 2.0 * i / E);

        err = PetscMax(err, PetscAbsScalar(y[s * m + t * E + 2 * i] - PetscSinReal(angle)));
        err = PetscMax(err, PetscAbsScalar(y[s * m + t * E + 2 * i + 1] - PetscCosReal(angle)));
      }
  PetscCheck(err <= 1e-15, PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6:sinusoidal: the table differs from sin/cos(t / 10000^(2i/E)) by %g > 1e-15", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "position:6:sinusoidal on (4, 6): the table of sin/cos(t / 10000^(2i/E)) to %.1e (<= 1e-15)\n", (double)err));

  PetscCall(CreateLayer(PETSC_COMM_SELF, "position", "6", in, &learned));
  PetscCall(LayerGetNumParameters(learned, &np));
  PetscCheck(np == T * E, PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6 on (4, 6) has %" PetscInt_FMT " parameters, not T E = 36", np);
  PetscCall(FillRandom(rnd, n * m, x));
  PetscCall(FillRandom(rnd, n * m, dy));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, np, v));
  PetscCall(LayerForwardArray(learned, n, theta, x, y));
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < m; i++) PetscCheck(y[s * m + i] == x[s * m + i] + theta[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6: y != x + W at sample %" PetscInt_FMT ", entry %" PetscInt_FMT, s, i);
  for (PetscInt i = 0; i < np; i++) dtheta[i] = 0.5;
  PetscCall(LayerBackwardArray(learned, n, theta, x, y, dy, dx, dtheta));
  PetscCheck(!memcmp(dx, dy, sizeof(PetscScalar) * n * m), PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6: dx != dy");
  for (PetscInt i = 0; i < np; i++) {
    PetscScalar sum = 0.5;

    if (i < m)
      for (PetscInt s = 0; s < n; s++) sum += dy[s * m + i];
    PetscCheck(PetscAbsScalar(dtheta[i] - sum) <= 1e-15, PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6: dW[%" PetscInt_FMT "] = %g, the sum of dy over the samples (from 0.5) is %g", i, (double)dtheta[i], (double)sum);
  }
  PetscCall(LayerJVPArray(learned, n, theta, x, y, x, v, ref)); /* dy = dx + dW[t] with dx = x */
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < m; i++) PetscCheck(ref[s * m + i] == x[s * m + i] + v[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6: jvp != dx + dW at sample %" PetscInt_FMT ", entry %" PetscInt_FMT, s, i);
  /* float */
  for (PetscInt i = 0; i < n * m; i++) {
    xf[i]  = (float)x[i];
    dyf[i] = (float)dy[i];
  }
  {
    const float *xs[1]  = {xf};
    float       *dxs[1] = {dxf};

    PetscCall(LayerForwardSingle(learned, n, theta, xs, yf));
    for (PetscInt i = 0; i < np; i++) v[i] = 0.5;
    PetscCall(LayerBackwardSingle(learned, n, theta, xs, yf, dyf, dxs, v));
  }
  err = 0;
  for (PetscInt i = 0; i < n * m; i++) err = PetscMax(err, PetscAbsReal((PetscReal)yf[i] - PetscRealPart(y[i])) / 4);
  for (PetscInt i = 0; i < np; i++) err = PetscMax(err, PetscAbsScalar(v[i] - dtheta[i]) / 4);
  PetscCheck(err <= 1e-6, PETSC_COMM_SELF, PETSC_ERR_PLIB, "position:6: float forward or gradient against double: %g > 1e-6", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "position:6 on (4, 6): y = x + W[:4], dx = dy, dW = sum of dy (rows 4, 5 untouched), jvp = dx + dW; float against double <= 1e-6\n"));
  PetscCall(LayerDestroy(&sinus));
  PetscCall(LayerDestroy(&learned));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  char        which[64] = "dense";
  PetscBool   isdense, isposition, islong;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", which, sizeof(which), NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 23));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscStrcmp(which, "dense", &isdense));
  PetscCall(PetscStrcmp(which, "position", &isposition));
  PetscCall(PetscStrcmp(which, "position_long", &islong));
  if (isdense)
    PetscCall(TestDense(rnd));
  else if (isposition)
    PetscCall(TestPosition(rnd));
  else if (islong) {
    PetNetShape in = {2, {4, 6}};
    Layer       layer;

    PetscCall(CreateLayer(PETSC_COMM_WORLD, "position", "3", in, &layer));
    PetscCall(LayerDestroy(&layer));
  } else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-case %s: no such case (dense, position, position_long)", which);
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
