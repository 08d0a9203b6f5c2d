static const char help[] = "The second-order adjoint of every built-in layer kind (LayerSOBackwardArray(), the curvature term of exact\n"
                           "Hessian-vector products) against central finite differences of LayerBackwardArray():\n"
                           "  (dxdot, dthetadot) = d/de [J_x^T dy, J_theta^T dy] at (x + e xdot, theta + e thetadot), dy fixed,\n"
                           "  FD = [backward(x + h xdot, theta + h thetadot) - backward(x - h xdot, theta - h thetadot)] / 2h, h = 1e-5,\n"
                           "for random x, theta, xdot, thetadot, dy and three tangents: (xdot, thetadot), (xdot, 0), (0, thetadot).\n"
                           "Asserts, per case: relative error <= 1e-6 over all ranks (input part and parameter part); that the\n"
                           "kernel accumulates (dxdot, dthetadot start random); that skipping one output (NULL) leaves the other as it\n"
                           "was; that backward and jvp at the linearization point give the same results after the call (cached state);\n"
                           "and that LayerHasSecondOrder() is true for every registered kind but ode.\n"
                           "Options: -nlocal N (samples per rank, batch mode), -h H (the finite-difference step), -only TEXT (only the cases\n"
                           "whose name contains TEXT, and no check of the registered kinds), -ode (only: the error of an ode layer, which has no\n"
                           "second-order kernel).\n";

#include <petnet.h>
#include "testutil.h"

typedef enum {
  SO_BATCH,      /* samples split over the ranks */
  SO_EMPTY_LAST, /* the same, the last rank without samples (collective kinds) */
} SOLayout;

typedef struct {
  const char *kind, *args; /* LayerSetType(), LayerSetArguments() (NULL: none) */
  const char *shape;       /* the input shape */
  PetscBool   training;
  const char *options; /* options of this layer only (PetscObjectSetOptions()), or NULL */
  SOLayout    layout;
  const char *name;   /* what the line says */
  const char *expect; /* LayerView() says this (the algorithm in use), or NULL */
  const char *shape2; /* a second input of this shape (a bilinear join: einsum of two operands), or NULL */
} SOCase;

static const SOCase socases[] = {
    {"dense", "4", "5", PETSC_TRUE, NULL, SO_BATCH, "dense"},
    {"dense", "3", "2x3x2", PETSC_TRUE, NULL, SO_BATCH, "dense (3-D input)"},
    {"conv2d", "4", "6x5x3", PETSC_TRUE, "-conv2d_algorithm im2col", SO_BATCH, "conv2d 3x3 im2col", "(im2col + GEMM"},
    {"conv2d", "4:3:1:1", "6x5x3", PETSC_TRUE, "-conv2d_algorithm im2col -conv2d_max_workspace 0.002", SO_BATCH, "conv2d 3x3 im2col, chunks", "(im2col + GEMM"},
    {"conv2d", "5:3:1:1", "6x5x4", PETSC_TRUE, "-conv2d_algorithm winograd", SO_BATCH, "conv2d 3x3 winograd", "(Winograd F(2x2,3x3))"},
    {"conv2d", "5:3:1:2:bias=0", "6x5x4", PETSC_TRUE, "-conv2d_algorithm winograd -conv2d_max_workspace 0.004", SO_BATCH, "conv2d 3x3 winograd, chunks, no bias", "(Winograd F(2x2,3x3))"},
    {"conv2d", "4:3:2:1", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "conv2d strided"},
    {"conv2d", "6:3:1:2:dilation=2:groups=3", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "conv2d dilated, grouped"},
    {"conv2d", "6:2x3:2x1:1x0:dilation=1x2:groups=2", "6x5x4", PETSC_TRUE, NULL, SO_BATCH, "conv2d 2x3, strided, dilated, grouped"},
    {"conv2d", "4:1", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "conv2d 1x1 (col = x)", "(1x1: GEMM on the input)"},
    {"conv2d", "4:3x5:1:1x2", "6x7x3", PETSC_TRUE, "-conv2d_algorithm taps", SO_BATCH, "conv2d 3x5 taps", "(taps: one GEMM per kernel tap and row)"},
    {"conv2d", "5:3:2x1:2:dilation=2:bias=0", "7x6x2", PETSC_TRUE, "-conv2d_algorithm taps", SO_BATCH, "conv2d taps, strided rows, dilated, no bias", "(taps: one GEMM per kernel tap and row)"},
    {"conv2d", "8:2:1:1", "4x3x1", PETSC_TRUE, NULL, SO_BATCH, "conv2d 2x2, transposed dW (Kg < Cout)"},
    {"conv3d", "4", "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "conv3d 3x3x3", "vol2col + GEMM"},
    {"conv3d", "4:3:1:1", "4x5x4x2", PETSC_TRUE, "-conv3d_max_workspace 0.0002", SO_BATCH, "conv3d 3x3x3, chunks of a row", "vol2col + GEMM"},
    {"conv3d", "4:2x3x2:2x1x1:1:2:2:bias=0", "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "conv3d strided, dilated, grouped, no bias"},
    {"conv3d", "3:1", "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "conv3d 1x1x1 (col = x)", "1x1x1: GEMM on the input"},
    {"conv3d", "8:2:1:1", "3x3x2x1", PETSC_TRUE, NULL, SO_BATCH, "conv3d 2x2x2, transposed dW (Kg < Cout)"},
    {"identity", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "identity"},
    {"relu", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "relu"},
    {"leakyrelu", "0.1", "7", PETSC_TRUE, NULL, SO_BATCH, "leakyrelu"},
    {"tanh", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "tanh"},
    {"sigmoid", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "sigmoid"},
    {"gelu", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "gelu"},
    {"softplus", NULL, "7", PETSC_TRUE, NULL, SO_BATCH, "softplus"},
    {"batchnorm", NULL, "4x3x2", PETSC_TRUE, NULL, SO_BATCH, "batchnorm training (h, w, c)"},
    {"batchnorm", NULL, "5", PETSC_TRUE, NULL, SO_BATCH, "batchnorm training (f)"},
    {"batchnorm", NULL, "4x3x2", PETSC_TRUE, NULL, SO_EMPTY_LAST, "batchnorm training, last rank empty"},
    {"batchnorm", NULL, "4x3x2", PETSC_FALSE, NULL, SO_BATCH, "batchnorm evaluation"},
    {"maxpool", "2", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "maxpool"},
    {"maxpool", "3:2:1", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "maxpool 3:2:1"},
    {"avgpool", "3:2:1", "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "avgpool"},
    {"globalavgpool", NULL, "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "globalavgpool"},
    {"maxpool", "3:2:1", "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "maxpool 3-D"},
    {"avgpool", "2x3x2:1:1x1x0", "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "avgpool 3-D"},
    {"globalavgpool", NULL, "4x5x4x2", PETSC_TRUE, NULL, SO_BATCH, "globalavgpool 3-D"},
    {"batchnorm", NULL, "3x2x4x2", PETSC_TRUE, NULL, SO_BATCH, "batchnorm training (d, h, w, c)"},
    {"flatten", NULL, "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "flatten"},
    {"dropout", "0.3", "7", PETSC_TRUE, NULL, SO_BATCH, "dropout training"},
    {"dropout", "0.3", "7", PETSC_FALSE, NULL, SO_BATCH, "dropout evaluation"},
    {"add", NULL, "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "add"},
    {"concat", NULL, "6x5x3", PETSC_TRUE, NULL, SO_BATCH, "concat"},
    {"upsample", "2x3", "4x3x2", PETSC_TRUE, NULL, SO_BATCH, "upsample nearest"},
    {"upsample", "3x1x2:linear", "2x3x2x2", PETSC_TRUE, NULL, SO_BATCH, "upsample trilinear"},
    {"convtranspose2d", "4:3:2:1:output_padding=1", "4x3x2", PETSC_TRUE, NULL, SO_BATCH, "convtranspose2d strided"},
    {"convtranspose2d", "6:2:2x1:0:dilation=2:groups=3:bias=0", "3x3x3", PETSC_TRUE, "-convtranspose2d_max_workspace 0.0005", SO_BATCH, "convtranspose2d grouped, chunks"},
    {"layernorm", NULL, "4x6", PETSC_TRUE, NULL, SO_BATCH, "transformer layernorm (T, E)"},
    {"layernorm", "noaffine", "7", PETSC_TRUE, NULL, SO_BATCH, "transformer layernorm:noaffine (E)"},
    {"layernorm", "eps=0.5", "2x3x5", PETSC_FALSE, NULL, SO_BATCH, "transformer layernorm eps=0.5 (h, w, c)"},
    {"rmsnorm", NULL, "4x6", PETSC_TRUE, NULL, SO_BATCH, "transformer rmsnorm (T, E)"},
    {"rmsnorm", "noaffine:eps=1e-3", "3x5", PETSC_TRUE, NULL, SO_BATCH, "transformer rmsnorm:noaffine:eps=1e-3"},
    {"attention", "2", "5x4", PETSC_TRUE, "-attention_tile 2", SO_BATCH, "transformer attention:2 (T, E) = (5, 4), tile 2"},
    {"attention", "4:causal", "6x8", PETSC_TRUE, "-attention_tile 4", SO_BATCH, "transformer attention:4:causal, tile 4"},
    {"attention", "1:causal", "5x3", PETSC_TRUE, "-attention_tile 1", SO_BATCH, "transformer attention:1:causal, tile 1"},
    {"attention", "2:causal", "7x4", PETSC_TRUE, "-attention_dropout 0.3 -attention_tile 3", SO_BATCH, "transformer attention:2:causal, dropout 0.3 (training)"},
    {"attention", "2:rotary", "5x8", PETSC_TRUE, "-attention_tile 2", SO_BATCH, "transformer attention:2:rotary (d = 4), tile 2"},
    {"attention", "2:rotary:causal", "7x4", PETSC_TRUE, "-attention_tile 3 -attention_rotary_base 7", SO_BATCH, "transformer attention:2:causal:rotary (d = 2, base 7), tile 3"},
    {"reshape", "2x-1x3", "4x6", PETSC_TRUE, NULL, SO_BATCH, "tensorops reshape 2x-1x3"},
    {"permute", "2,0,1", "3x4x5", PETSC_TRUE, NULL, SO_BATCH, "tensorops permute 2,0,1", "dims in the order (2,0,1)"},
    {"einsum", "tij->jti", "3x4x5", PETSC_TRUE, NULL, SO_BATCH, "tensorops einsum tij->jti (one input)", "permutation"},
    {"einsum", "ij->i", "4x5", PETSC_TRUE, NULL, SO_BATCH, "tensorops einsum ij->i (one input)", "loop"},
    {"einsum", "bqd,bkd->bqk", "2x5x7", PETSC_TRUE, NULL, SO_BATCH, "tensorops einsum bqd,bkd->bqk GEMM", "forward GEMM", "2x6x7"},
    {"einsum", "ij,kj->ki", "5x6", PETSC_TRUE, NULL, SO_BATCH, "tensorops einsum ij,kj->ki GEMM permuted", "forward GEMM", "4x6"},
    {"einsum", "bqd,bkd->bqk", "2x5x7", PETSC_TRUE, "-einsum_path loop", SO_BATCH, "tensorops einsum bqd,bkd->bqk loop", "forward loop", "2x6x7"},
    {"einsum", "ij,j->ij", "4x5", PETSC_TRUE, NULL, SO_BATCH, "tensorops einsum ij,j->ij (elementwise)", "forward loop", "5"},
};

/* a[i] uniform on [lo, hi) from rnd */
static PetscErrorCode FillRandom(PetscRandom rnd, PetscInt n, PetscReal lo, PetscReal hi, PetscScalar a[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) {
    PetscReal r;

    PetscCall(PetscRandomGetValueReal(rnd, &r));
    a[i] = lo + (hi - lo) * r;
  }
  PetscFunctionReturn(0);
}

/* sqrt(sum over the ranks of |a - b|^2) (b NULL: zero) */
static PetscErrorCode NormDiff(MPI_Comm comm, PetscInt n, const PetscScalar a[], const PetscScalar b[], PetscReal *norm)
{
  PetscReal s = 0;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) {
    PetscScalar d = a[i] - (b ? b[i] : 0.0);

    s += PetscRealPart(d * PetscConj(d));
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &s, 1, MPIU_REAL, MPIU_SUM, comm));
  *norm = PetscSqrtReal(s);
  PetscFunctionReturn(0);
}

/*
  |a - b| / |b| over all ranks, |b| floored at 1e-8 |g|, g the first-order output of the same part (a curvature term
  that is zero, as for the piecewise-linear kinds, then compares absolutely)
*/
static PetscErrorCode RelativeError(MPI_Comm comm, PetscInt n, const PetscScalar a[], const PetscScalar b[], const PetscScalar g[], PetscReal *err, PetscReal *size)
{
  PetscReal diff, nb, ng;

  PetscFunctionBegin;
  PetscCall(NormDiff(comm, n, a, b, &diff));
  PetscCall(NormDiff(comm, n, b, NULL, &nb));
  PetscCall(NormDiff(comm, n, g, NULL, &ng));
  *err  = diff / PetscMax(nb, PetscMax(1e-8 * ng, PETSC_SMALL * PETSC_SMALL));
  *size = nb;
  PetscFunctionReturn(0);
}

/* LayerView() of the layer (printed by rank 0) contains text */
static PetscErrorCode CheckView(Layer layer, const char name[], const char text[])
{
  PetscBool found = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(TestLayerViewContains(layer, text, &found));
  PetscCheck(found, PetscObjectComm((PetscObject)layer), PETSC_ERR_PLIB, "%s: the layer's view does not say \"%s\" (the case does not test the kernels it means to)", name, text);
  PetscFunctionReturn(0);
}

/* The arrays of one case on this rank: n samples, nin inputs of insize each, out, p parameters */
typedef struct {
  PetscInt     n, nin, insize[2], out, p;
  PetscScalar *theta, *thetadot, *y, *dy, *ydot, *yh, *dtheta, *dthetadot, *dthetadot0, *fdtheta, *dthetap, *dthetam;
  PetscScalar *x[2], *xdot[2], *xh[2], *dx[2], *dxdot[2], *dxdot0[2], *fdx[2], *dxp[2], *dxm[2];
} SOArrays;

static PetscErrorCode SOArraysCreate(PetscInt n, PetscInt nin, const PetscInt insize[], PetscInt out, PetscInt p, SOArrays *a)
{
  PetscFunctionBegin;
  PetscCall(PetscMemzero(a, sizeof(*a)));
  a->n   = n;
  a->nin = nin;
  a->out = out;
  a->p   = p;
  PetscCall(PetscMalloc4(n * out, &a->y, n * out, &a->dy, n * out, &a->ydot, n * out, &a->yh));
  PetscCall(PetscCalloc5(p, &a->theta, p, &a->thetadot, p, &a->dtheta, p, &a->dthetadot, p, &a->dthetadot0));
  PetscCall(PetscCalloc3(p, &a->fdtheta, p, &a->dthetap, p, &a->dthetam));
  for (PetscInt k = 0; k < nin; k++) {
    const PetscInt N = n * insize[k];

    a->insize[k] = insize[k];
    PetscCall(PetscMalloc5(N, &a->x[k], N, &a->xdot[k], N, &a->xh[k], N, &a->dx[k], N, &a->dxdot[k]));
    PetscCall(PetscMalloc4(N, &a->dxdot0[k], N, &a->fdx[k], N, &a->dxp[k], N, &a->dxm[k]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode SOArraysDestroy(SOArrays *a)
{
  PetscFunctionBegin;
  PetscCall(PetscFree4(a->y, a->dy, a->ydot, a->yh));
  PetscCall(PetscFree5(a->theta, a->thetadot, a->dtheta, a->dthetadot, a->dthetadot0));
  PetscCall(PetscFree3(a->fdtheta, a->dthetap, a->dthetam));
  for (PetscInt k = 0; k < a->nin; k++) {
    PetscCall(PetscFree5(a->x[k], a->xdot[k], a->xh[k], a->dx[k], a->dxdot[k]));
    PetscCall(PetscFree4(a->dxdot0[k], a->fdx[k], a->dxp[k], a->dxm[k]));
  }
  PetscFunctionReturn(0);
}

/* y = f(x; theta) for one or several inputs */
static PetscErrorCode Forward(Layer layer, SOArrays *a, PetscScalar *const x[], const PetscScalar *theta, PetscScalar *y)
{
  PetscFunctionBegin;
  if (a->nin == 1)
    PetscCall(LayerForwardArray(layer, a->n, theta, x[0], y));
  else
    PetscCall(LayerForwardArrays(layer, a->n, theta, (const PetscScalar *const *)x, y));
  PetscFunctionReturn(0);
}

/* dx = J_x^T dy, dtheta = J_theta^T dy (zeroed first: backward accumulates it) */
static PetscErrorCode Backward(Layer layer, SOArrays *a, PetscScalar *const x[], const PetscScalar *theta, const PetscScalar *y, PetscScalar *const dx[], PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(PetscArrayzero(dtheta, a->p));
  if (a->nin == 1)
    PetscCall(LayerBackwardArray(layer, a->n, theta, x[0], y, a->dy, dx[0], a->p ? dtheta : NULL));
  else
    PetscCall(LayerBackwardArrays(layer, a->n, theta, (const PetscScalar *const *)x, y, a->dy, dx, a->p ? dtheta : NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode JVP(Layer layer, SOArrays *a, const PetscScalar *xdot0, const PetscScalar *thetadot, PetscScalar *ydot)
{
  PetscFunctionBegin;
  if (a->nin == 1)
    PetscCall(LayerJVPArray(layer, a->n, a->theta, a->x[0], a->y, xdot0, thetadot, ydot));
  else {
    const PetscScalar *xdot[2] = {xdot0 ? a->xdot[0] : NULL, xdot0 ? a->xdot[1] : NULL};

    PetscCall(LayerJVPArrays(layer, a->n, a->theta, (const PetscScalar *const *)a->x, a->y, xdot, thetadot, ydot));
  }
  PetscFunctionReturn(0);
}

/*
  One tangent (usex: xdot or zero, usetheta: thetadot or zero) at the point (a->x, a->theta), which forward, backward and
  jvp have just visited: the second-order term against central differences of backward, and its consistency checks.
  errx, errp: the relative errors of the input and parameter parts; sizex, sizep: the sizes of the FD terms.
*/
static PetscErrorCode CheckTangent(Layer layer, const char name[], SOArrays *a, PetscRandom rself, PetscReal h, PetscBool usex, PetscBool usetheta, PetscReal *errx, PetscReal *errp, PetscReal *sizex, PetscReal *sizep)
{
  MPI_Comm           comm     = PetscObjectComm((PetscObject)layer);
  const PetscScalar *xdot     = usex ? a->xdot[0] : NULL;
  const PetscScalar *thetadot = usetheta && a->p ? a->thetadot : NULL;
  PetscReal          e, s;

  PetscFunctionBegin;
  *errx = *errp = *sizex = *sizep = 0;
  /* the linearization point: forward, backward (kept in dx, dtheta), jvp along the tangent */
  PetscCall(Forward(layer, a, a->x, a->theta, a->y));
  PetscCall(Backward(layer, a, a->x, a->theta, a->y, a->dx, a->dtheta));
  PetscCall(JVP(layer, a, xdot, thetadot, a->ydot));

  /* the second-order term, accumulated into random starting values (kept in dxdot0, dthetadot0 to subtract); a join's
     term for every input (LayerSOBackwardArrays(): zero for the linear add and concat, dy paired with the other
     operand's tangent for a bilinear einsum) */
  for (PetscInt k = 0; k < a->nin; k++) {
    PetscCall(FillRandom(rself, a->n * a->insize[k], -1.0, 1.0, a->dxdot0[k]));
    PetscCall(PetscArraycpy(a->dxdot[k], a->dxdot0[k], a->n * a->insize[k]));
  }
  PetscCall(FillRandom(rself, a->p, -1.0, 1.0, a->dthetadot0));
  PetscCall(PetscArraycpy(a->dthetadot, a->dthetadot0, a->p));
  if (a->nin == 1)
    PetscCall(LayerSOBackwardArray(layer, a->n, a->theta, a->x[0], a->y, xdot, thetadot, a->ydot, a->dy, a->dxdot[0], a->p ? a->dthetadot : NULL));
  else {
    const PetscScalar *xdots[2] = {usex ? a->xdot[0] : NULL, usex ? a->xdot[1] : NULL};

    PetscCall(LayerSOBackwardArrays(layer, a->n, a->theta, (const PetscScalar *const *)a->x, a->y, xdots, thetadot, a->ydot, a->dy, a->dxdot, a->p ? a->dthetadot : NULL));
  }
  for (PetscInt k = 0; k < a->nin; k++)
    for (PetscInt i = 0; i < a->n * a->insize[k]; i++) a->dxdot[k][i] -= a->dxdot0[k][i];
  for (PetscInt i = 0; i < a->p; i++) a->dthetadot[i] -= a->dthetadot0[i];

  /* the point's cached state is still valid: backward and jvp there give what they gave before */
  PetscCall(Backward(layer, a, a->x, a->theta, a->y, a->dxp, a->dthetap));
  PetscCall(JVP(layer, a, xdot, thetadot, a->yh));
  for (PetscInt k = 0; k < a->nin; k++) {
    PetscCall(RelativeError(comm, a->n * a->insize[k], a->dxp[k], a->dx[k], a->dx[k], &e, &s));
    PetscCheck(e <= 1e-13, comm, PETSC_ERR_PLIB, "%s: backward at the linearization point changed after LayerSOBackwardArray() (input %" PetscInt_FMT ": relative difference %g)", name, k, (double)e);
  }
  PetscCall(RelativeError(comm, a->p, a->dthetap, a->dtheta, a->dtheta, &e, &s));
  PetscCheck(e <= 1e-13, comm, PETSC_ERR_PLIB, "%s: the parameter gradient at the linearization point changed after LayerSOBackwardArray() (relative difference %g)", name, (double)e);
  PetscCall(RelativeError(comm, a->n * a->out, a->yh, a->ydot, a->ydot, &e, &s));
  PetscCheck(e <= 1e-13, comm, PETSC_ERR_PLIB, "%s: jvp at the linearization point changed after LayerSOBackwardArray() (relative difference %g)", name, (double)e);

  /* NULL outputs are skipped and do not change the other one */
  if (a->p) {
    PetscCall(PetscArrayzero(a->dthetap, a->p));
    PetscCall(LayerSOBackwardArray(layer, a->n, a->theta, a->x[0], a->y, xdot, thetadot, a->ydot, a->dy, NULL, a->dthetap));
    PetscCall(RelativeError(comm, a->p, a->dthetap, a->dthetadot, a->dthetadot, &e, &s));
    PetscCheck(e <= 1e-13, comm, PETSC_ERR_PLIB, "%s: dthetadot with dxdot NULL differs from dthetadot with dxdot (relative difference %g)", name, (double)e);
    PetscCall(PetscArrayzero(a->dxp[0], a->n * a->insize[0]));
    PetscCall(LayerSOBackwardArray(layer, a->n, a->theta, a->x[0], a->y, xdot, thetadot, a->ydot, a->dy, a->dxp[0], NULL));
    PetscCall(RelativeError(comm, a->n * a->insize[0], a->dxp[0], a->dxdot[0], a->dxdot[0], &e, &s));
    PetscCheck(e <= 1e-13, comm, PETSC_ERR_PLIB, "%s: dxdot with dthetadot NULL differs from dxdot with dthetadot (relative difference %g)", name, (double)e);
  }

  /* central differences of backward along the tangent, dy fixed */
  for (int side = 0; side < 2; side++) {
    const PetscReal sh = side ? -h : h;

    for (PetscInt k = 0; k < a->nin; k++)
      for (PetscInt i = 0; i < a->n * a->insize[k]; i++) a->xh[k][i] = a->x[k][i] + (usex ? sh * a->xdot[k][i] : 0.0);
    for (PetscInt i = 0; i < a->p; i++) a->fdtheta[i] = a->theta[i] + (thetadot ? sh * thetadot[i] : 0.0);
    PetscCall(Forward(layer, a, a->xh, a->fdtheta, a->yh));
    PetscCall(Backward(layer, a, a->xh, a->fdtheta, a->yh, side ? a->dxm : a->dxp, side ? a->dthetam : a->dthetap));
  }
  for (PetscInt k = 0; k < a->nin; k++) {
    for (PetscInt i = 0; i < a->n * a->insize[k]; i++) a->fdx[k][i] = (a->dxp[k][i] - a->dxm[k][i]) / (2 * h);
    /* every input's term against its differences (zero for a linear join) */
    PetscCall(RelativeError(comm, a->n * a->insize[k], a->dxdot[k], a->fdx[k], a->dx[k], &e, &s));
    *errx  = PetscMax(*errx, e);
    *sizex = PetscMax(*sizex, s);
  }
  for (PetscInt i = 0; i < a->p; i++) a->fdtheta[i] = (a->dthetap[i] - a->dthetam[i]) / (2 * h);
  PetscCall(RelativeError(comm, a->p, a->dthetadot, a->fdtheta, a->dtheta, errp, sizep));
  PetscFunctionReturn(0);
}

/* The layer of case c on comm; n: this rank's samples; nin, insize: its
   inputs and their sizes (add and concat take two, concat's second with 2 channels; a case with shape2 two) */
static PetscErrorCode CreateCaseLayer(MPI_Comm comm, const SOCase *c, PetscInt nlocal, PetscOptions options, Layer *layer, PetscInt *n, PetscInt *nin, PetscInt insize[])
{
  PetNetShape in, ins[2];
  PetscMPIInt rank, size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetNetShapeFromString(c->shape, &in));
  PetscCall(LayerCreate(comm, layer));
  PetscCall(LayerSetType(*layer, c->kind));
  if (c->args) PetscCall(LayerSetArguments(*layer, c->args));
  if (c->options) {
    PetscCall(PetscOptionsInsertString(options, c->options));
    PetscCall(PetscObjectSetOptions((PetscObject)*layer, options));
  }
  PetscCall(LayerSetFromOptions(*layer));
  ins[0] = ins[1] = in;
  *nin            = !strcmp(c->kind, LAYERADD) || !strcmp(c->kind, LAYERCONCAT) || c->shape2 ? 2 : 1;
  if (!strcmp(c->kind, LAYERCONCAT)) ins[1].dim[ins[1].ndim - 1] = 2;
  if (c->shape2) PetscCall(PetNetShapeFromString(c->shape2, &ins[1]));
  PetscCall(LayerSetInputShapes(*layer, *nin, ins));
  for (PetscInt k = 0; k < *nin; k++) PetscCall(PetNetShapeSize(&ins[k], &insize[k]));
  *n = c->layout == SO_EMPTY_LAST && size > 1 && rank == size - 1 ? 0 : nlocal;
  PetscCall(LayerSetUp(*layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestCase(const SOCase *c, PetscInt nlocal, PetscReal h)
{
  MPI_Comm     comm = PETSC_COMM_WORLD;
  Layer        layer;
  PetscOptions options;
  PetscRandom  rself, rall;
  PetscMPIInt  rank;
  PetNetShape  out;
  PetscInt     n = 0, nin = 1, p, insize[2], outsize;
  SOArrays     a;
  PetscBool    has;
  PetscReal    errx[3], errp[3], sizex[3], sizep[3], worstx = 0, worstp = 0;
  char         params[64] = "params -";
  const char  *tangent[3] = {"(xdot, thetadot)", "(xdot, 0)", "(0, thetadot)"};

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscOptionsCreate(&options));
  PetscCall(CreateCaseLayer(comm, c, nlocal, options, &layer, &n, &nin, insize));
  PetscCall(LayerHasSecondOrder(layer, &has));
  PetscCheck(has, comm, PETSC_ERR_PLIB, "%s: LayerHasSecondOrder() is false", c->name);
  if (c->expect) PetscCall(CheckView(layer, c->name, c->expect)); /* the case tests the kernel family it means to */
  PetscCall(LayerGetOutputShape(layer, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(LayerGetNumParameters(layer, &p));
  PetscCall(SOArraysCreate(n, nin, insize, outsize, p, &a));

  /* samples and cotangents differ by rank; parameters and their tangent are the same on every rank (replicated) */
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rself));
  PetscCall(PetscRandomSetSeed(rself, 101 + 17 * (unsigned long)rank));
  PetscCall(PetscRandomSeed(rself));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rall));
  PetscCall(PetscRandomSetSeed(rall, 7));
  PetscCall(PetscRandomSeed(rall));
  for (PetscInt k = 0; k < nin; k++) {
    PetscCall(FillRandom(rself, n * insize[k], -1.0, 1.0, a.x[k]));
    PetscCall(FillRandom(rself, n * insize[k], -1.0, 1.0, a.xdot[k]));
  }
  PetscCall(FillRandom(rself, n * outsize, -1.0, 1.0, a.dy));
  PetscCall(FillRandom(rall, p, -1.0, 1.0, a.theta));
  PetscCall(FillRandom(rall, p, -1.0, 1.0, a.thetadot));

  PetscCall(LayerSetTraining(layer, c->training));
  if (!c->training && !strcmp(c->kind, LAYERBATCHNORM)) { /* evaluation mode with running statistics of two training passes */
    PetscCall(LayerSetTraining(layer, PETSC_TRUE));
    PetscCall(Forward(layer, &a, a.x, a.theta, a.y));
    for (PetscInt i = 0; i < n * insize[0]; i++) a.xh[0][i] = 0.5 * a.x[0][i] + 0.3;
    PetscCall(Forward(layer, &a, a.xh, a.theta, a.y));
    PetscCall(LayerSetTraining(layer, PETSC_FALSE));
  }
  PetscCall(LayerSetFrozen(layer, PETSC_TRUE)); /* one fixed map: the same dropout mask, no running statistics updated */

  for (int t = 0; t < 3; t++) {
    PetscCall(CheckTangent(layer, c->name, &a, rself, h, t != 2 ? PETSC_TRUE : PETSC_FALSE, t != 1 ? PETSC_TRUE : PETSC_FALSE, &errx[t], &errp[t], &sizex[t], &sizep[t]));
    worstx = PetscMax(worstx, errx[t]);
    worstp = PetscMax(worstp, errp[t]);
  }
  /* the worst relative error over the three tangents, and the size of the term along (xdot, thetadot) */
  if (p) PetscCall(PetscSNPrintf(params, sizeof(params), "params %8.2e (|term| %8.2e)", (double)worstp, (double)sizep[0]));
  PetscCall(PetscPrintf(comm, "%-40s input %8.2e (|term| %8.2e)  %s\n", c->name, (double)worstx, (double)sizex[0], params));
  for (int t = 0; t < 3; t++) {
    PetscCheck(errx[t] <= 1e-6, comm, PETSC_ERR_PLIB, "%s, tangent %s: the input part of the second-order term differs from finite differences by %g (relative) > 1e-6", c->name, tangent[t], (double)errx[t]);
    PetscCheck(errp[t] <= 1e-6, comm, PETSC_ERR_PLIB, "%s, tangent %s: the parameter part of the second-order term differs from finite differences by %g (relative) > 1e-6", c->name, tangent[t], (double)errp[t]);
  }

  PetscCall(SOArraysDestroy(&a));
  PetscCall(PetscRandomDestroy(&rself));
  PetscCall(PetscRandomDestroy(&rall));
  PetscCall(LayerDestroy(&layer));
  PetscCall(PetscOptionsDestroy(&options));
  PetscFunctionReturn(0);
}

/* A relu layer turned into tanh (LayerSetType()) has tanh's curvature term, not relu's zero one: dxdot = f''(x) xdot dy */
static PetscErrorCode TestChangeKind(void)
{
  Layer       layer;
  PetNetShape in   = {1, {3}};
  PetscScalar x[3] = {-0.7, 0.2, 1.1}, y[3], ones[3] = {1, 1, 1}, ydot[3], dxdot[3] = {0, 0, 0};
  PetscReal   err = 0;

  PetscFunctionBegin;
  PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
  PetscCall(LayerSetType(layer, LAYERRELU));
  PetscCall(LayerSetType(layer, LAYERTANH));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerSetUp(layer));
  PetscCall(LayerForwardArray(layer, 1, NULL, x, y));
  PetscCall(LayerJVPArray(layer, 1, NULL, x, y, ones, NULL, ydot));
  PetscCall(LayerSOBackwardArray(layer, 1, NULL, x, y, ones, NULL, ydot, ones, dxdot, NULL));
  for (int i = 0; i < 3; i++) err = PetscMax(err, RelErr(PetscRealPart(dxdot[i]), -2.0 * PetscTanhReal(PetscRealPart(x[i])) * (1.0 - PetscSqr(PetscTanhReal(PetscRealPart(x[i]))))));
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "relu turned into tanh: the second-order term is off by %g (relative)", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "relu turned into tanh (LayerSetType): dxdot = f''(x) xdot dy, relative error %8.2e\n", (double)err));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* The ode kind has no second-order kernel: LayerSOBackwardArray() says so (an error test) */
static PetscErrorCode TestODEError(void)
{
  Layer       layer;
  PetscScalar x = 0, dy = 0, xdot = 0, dxdot = 0;

  PetscFunctionBegin;
  PetscCall(LayerCreate(PETSC_COMM_WORLD, &layer));
  PetscCall(LayerSetType(layer, "ode"));
  PetscCall(LayerSOBackwardArray(layer, 1, NULL, &x, &x, &xdot, NULL, &x, &dy, &dxdot, NULL));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* Every registered kind has an exact second-order adjoint, except ode (Gauss-Newton only; out of scope) */
static PetscErrorCode TestRegisteredKinds(void)
{
  const char **names;
  int          nnames;

  PetscFunctionBegin;
  PetscCall(PetscFunctionListGet(LayerList, &names, &nnames));
  for (int i = 0; i < nnames && names[i]; i++) { /* the array ends with NULL, counted in nnames */
    Layer     layer;
    PetscBool has, isode;

    PetscCall(LayerCreate(PETSC_COMM_WORLD, &layer));
    PetscCall(LayerSetType(layer, names[i]));
    PetscCall(LayerHasSecondOrder(layer, &has));
    PetscCall(PetscStrcmp(names[i], "ode", &isode));
    PetscCheck(has || isode, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Layer kind %s has neither a second-order kernel nor sozero", names[i]);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "kind %-14s exact Hessian-vector products: %s\n", names[i], has ? "yes" : "no (Gauss-Newton only)"));
    PetscCall(LayerDestroy(&layer));
  }
  PetscCall(PetscFree(names));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  nlocal   = 3;
  PetscReal h        = 1e-5;
  char      only[64] = "";
  PetscBool ode      = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-h", &h, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-only", only, sizeof(only), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-ode", &ode, NULL));
  if (ode) {
    PetscCall(TestODEError());
    PetscCall(PetscFinalize());
    return 0;
  }
  for (size_t k = 0; k < sizeof(socases) / sizeof(socases[0]); k++)
    if (!only[0] || strstr(socases[k].name, only)) PetscCall(TestCase(&socases[k], nlocal, h));
  if (!only[0]) {
    PetscCall(TestRegisteredKinds());
    PetscCall(TestChangeKind());
  }
  PetscCall(PetscFinalize());
  return 0;
}
