static const char help[] = "Single-precision kernels of dense, the activations, conv2d, conv3d, batchnorm, maxpool and avgpool, and the converting\n"
                           "fallback of a kind without its own (flatten) (LayerForwardSingle(), LayerBackwardSingle(),\n"
                           "LayerJVPSingle()) against the double kernels on the same values (inputs and cotangents that are exact floats):\n"
                           "  1. every output within its bound of the double result (below),\n"
                           "  2. the dot-product test of the float JVP against the float backward, <= 1e-5 relative,\n"
                           "  3. the same bits at 1, 2 and 3 threads (PetNetSetNumThreads()),\n"
                           "  4. batchnorm: the running statistics a training pass leaves, single against double,\n"
                           "  5. maxpool: both precisions against a reference written here (PyTorch's definition, padding as -infinity,\n"
                           "     the first maximum in window order on ties): y and jvp the same values, dx = 0; dx[argmax] += dy in output\n"
                           "     order, the same values in each precision (dx arrays start as garbage: every entry must be written).\n"
                           "Bound: with u = 2^-24 (float's unit round-off), a result that is a sum of K float products or terms is within\n"
                           "  50 u sqrt(K) max|reference|  (max over the whole output)\n"
                           "of the double result, K per output: conv y K = taps Cin/G (+ 1 bias), jvp twice that; conv dx K = taps Cout/G;\n"
                           "conv dW, db K = the global points summed (local samples x output pixels); dense as conv with one tap (y K = in + 1,\n"
                           "dx K = out, dW K = the global samples); activations and dropout K = 1 (in double, rounded once); flatten exact; avgpool\n"
                           "(float kernels, sums in float) y K = taps, dx K = the windows that overlap a point;\n"
                           "batchnorm K = 16 (elementwise passes on\n"
                           "statistics reduced in double); maxpool y and jvp: exact (0), dx K = the windows that overlap a point.\n"
                           "conv2d cases with 3x3 stride-1 kernels on 4 or more channels run Winograd F(2x2,3x3) in both precisions; conv cases with\n"
                           "taps Cin <= 32 and one group the direct float kernel (-conv2d_single_direct_max_k).\n"
                           "Options: -nlocal N (samples per rank, default 5), -only KIND (the cases whose spec starts so: conv, dense, ...).\n";

#include <petnet.h>
#include <petnet/private/layerimpl.h>
#include "testutil.h"

#define UNIT_ROUNDOFF (1.0 / 16777216.0) /* 2^-24 */

typedef struct {
  const char *spec;                /* kind:arguments */
  const char *shape;               /* input shape of a sample */
  PetscBool   training;            /* batchnorm: batch statistics */
  PetscReal   Ky, Kdx, Kdth, Kjvp; /* the K of each bound (0: exact; < 0: computed from the layer, see Bounds) */
  PetscBool   winograd;            /* conv2d: Winograd F(2x2,3x3) expected (-conv2d_algorithm auto), in both precisions */
  PetscBool   direct;              /* conv2d, conv3d: the direct float kernel expected (taps Cin <= 32, one group; convdirectsingle.c) */
} SingleCase;

/* K < 0: from the layer (conv: -1 taps Cin/G + 1, -2 taps Cout/G, -3 global points, -4 jvp's 2 taps Cin/G + 1) */
static const SingleCase cases[] = {
    {"conv2d:4:3:1:1", "6x5x3", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},
    {"conv2d:6:3:2:1:bias=0", "7x6x2", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},
    {"conv2d:6:2x3:1x2:0:groups=3", "5x7x6", PETSC_FALSE, -1, -2, -3, -4},
    {"conv2d:4:3:1:2:dilation=2", "6x6x2", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},
    {"conv2d:5:1", "3x4x3", PETSC_FALSE, -1, -2, -3, -4},
    {"conv2d:32:3:1:1", "8x8x1", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},                    /* few taps: direct in float, the transposed weight GEMM in double */
    {"conv2d:8:3:2:1", "7x6x2", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},                     /* direct: stride, padding, a block of 8 channels */
    {"conv2d:43:2x3:2x1:1x2:dilation=2x1", "7x6x1", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE}, /* direct: blocks of 32 and 8 channels and 3 floats */
    {"conv3d:5:2:2:1", "4x5x3x1", PETSC_FALSE, -1, -2, -3, -4, PETSC_FALSE, PETSC_TRUE},                   /* direct in 3-D */
    {"conv2d:8:3", "6x6x8", PETSC_FALSE, -1, -2, -3, -4, PETSC_TRUE},                                      /* Winograd in both precisions */
    {"conv2d:8:3:1:1", "6x5x4", PETSC_FALSE, -1, -2, -3, -4, PETSC_TRUE},                                  /* Winograd: odd height, padding */
    {"conv2d:6:3:1:0", "7x7x4", PETSC_FALSE, -1, -2, -3, -4, PETSC_TRUE},                                  /* Winograd: odd output 5x5, no padding */
    {"conv3d:3:3:1:1", "4x4x3x2", PETSC_FALSE, -1, -2, -3, -4},
    {"batchnorm", "4x3x5", PETSC_TRUE, 16, 16, 16, 16},
    {"batchnorm", "4x3x5", PETSC_FALSE, 16, 16, 16, 16},
    {"batchnorm", "7", PETSC_TRUE, 16, 16, 16, 16},
    {"maxpool:2", "6x6x3", PETSC_FALSE, 0, 1, 0, 0},
    {"maxpool:3:2:1", "7x6x2", PETSC_FALSE, 0, 4, 0, 0},
    {"maxpool:2", "4x4x4x2", PETSC_FALSE, 0, 1, 0, 0},
    {"maxpool:2", "7x5x3", PETSC_FALSE, 0, 1, 0, 0},       /* tiled windows: a row and a column no window covers */
    {"maxpool:3x2", "7x5x4", PETSC_FALSE, 0, 1, 0, 0},     /* tiled, 6 taps (the tap loop not unrolled) */
    {"maxpool:2", "5x4x5x2", PETSC_FALSE, 0, 1, 0, 0},     /* tiled volume: a plane and a column uncovered */
    {"maxpool:2x2x1", "3x4x4x3", PETSC_FALSE, 0, 1, 0, 0}, /* tiled volume, 4 taps over depth and rows */
    {"dense:7", "5", PETSC_FALSE, -1, -2, -3, -4},
    {"dense:6:bias=0", "3x4", PETSC_FALSE, -1, -2, -3, -4},
    {"dense:40", "300", PETSC_FALSE, -1, -2, -3, -4}, /* GEMMs cut into parts for the threads */
    {"relu", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"leakyrelu:0.1", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"identity", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"tanh", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"sigmoid", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"gelu", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"softplus", "4x3", PETSC_FALSE, 1, 1, 0, 1},
    {"flatten", "3x2x2", PETSC_FALSE, 0, 0, 0, 0},
    {"dropout:0.4", "4x3", PETSC_TRUE, 1, 1, 0, 1}, /* frozen: the float and double passes draw the same mask */
    {"dropout:0.4", "4x3", PETSC_FALSE, 0, 0, 0, 0},
    {"avgpool:2", "4x4x3", PETSC_FALSE, 4, 1, 0, 4},     /* its float kernels (avgpoolkernels.h): sums of the window's 4 taps */
    {"avgpool:3:2:1", "7x6x2", PETSC_FALSE, 9, 4, 0, 9}, /* overlapping, padded windows: dx sums up to 4 of them */
};

/* uniform exact floats in [lo, hi), ties made likely for maxpool by rounding to multiples of 1/8 when coarse */
static PetscErrorCode RandomFloats(PetscRandom rnd, PetscInt N, PetscReal lo, PetscReal hi, PetscBool coarse, float *f, PetscScalar *d)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < N; i++) {
    PetscScalar r;

    PetscCall(PetscRandomGetValue(rnd, &r));
    r    = lo + (hi - lo) * r;
    f[i] = coarse ? (float)(PetscFloorReal(8.0 * r + 0.5) / 8.0) : (float)r;
    if (d) d[i] = f[i];
  }
  PetscFunctionReturn(0);
}

/* max|a - b| and max|b|, over all ranks */
static PetscErrorCode MaxDiff(MPI_Comm comm, PetscInt N, const float *a, const PetscScalar *b, PetscReal *diff, PetscReal *scale)
{
  PetscReal m[2] = {0, 0};

  PetscFunctionBegin;
  for (PetscInt i = 0; i < N; i++) {
    m[0] = PetscMax(m[0], PetscAbsReal((PetscReal)a[i] - b[i]));
    m[1] = PetscMax(m[1], PetscAbsReal(b[i]));
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, m, 2, MPIU_REAL, MPIU_MAX, comm));
  *diff  = m[0];
  *scale = m[1];
  PetscFunctionReturn(0);
}

static PetscErrorCode Check(MPI_Comm comm, const char *spec, const char *what, PetscReal K, PetscReal diff, PetscReal scale)
{
  const PetscReal tol = 50.0 * UNIT_ROUNDOFF * PetscSqrtReal(K);

  PetscFunctionBegin;
  PetscCheck(diff <= tol * scale, comm, PETSC_ERR_PLIB, "%s: %s differs from double by %g, above 50 u sqrt(%g) = %g of its size %g", spec, what, (double)diff, (double)K, (double)tol, (double)scale);
  PetscFunctionReturn(0);
}

/*
  The bound's K of a case entry; K < 0: from the convolution's sizes, for N global samples, with kb = nparams / Cout
  (= taps Cin/G, + 1 with a bias): -1 y: kb; -2 dx: kb Cout / Cin (= taps Cout/G, + Cout/Cin); -3 dW, db: N Ho Wo;
  -4 jvp: 2 kb
*/
static PetscErrorCode CaseK(Layer layer, PetscReal code, PetscInt N, PetscReal *K)
{
  const PetscInt cout = layer->out.dim[layer->out.ndim - 1], cin = layer->in.dim[layer->in.ndim - 1];
  PetscReal      kb = (PetscReal)(layer->nparams / cout);

  PetscFunctionBegin;
  *K = code;
  if (code == -1)
    *K = kb;
  else if (code == -2)
    *K = PetscMax(1.0, kb * cout / cin);
  else if (code == -3)
    *K = (PetscReal)N * (layer->outsize / cout);
  else if (code == -4)
    *K = 2.0 * kb;
  PetscFunctionReturn(0);
}

/* the float results of a case at the current thread count */
typedef struct {
  float       *y, *dx, *jy;
  PetscScalar *dth;
} SingleResults;

static PetscErrorCode RunSingle(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *dy, const float *vx, const PetscScalar *vth, SingleResults *r)
{
  float *dxs[1] = {r->dx};

  PetscFunctionBegin;
  PetscCall(LayerForwardSingle(layer, n, theta, &x, r->y));
  for (PetscInt i = 0; i < n * layer->insize; i++) r->dx[i] = 7.0f; /* garbage: backward writes every entry */
  for (PetscInt i = 0; i < layer->nparams; i++) r->dth[i] = 0.0;
  PetscCall(LayerBackwardSingle(layer, n, theta, &x, r->y, dy, dxs, r->dth));
  PetscCall(LayerJVPSingle(layer, n, theta, &x, r->y, &vx, vth, r->jy));
  PetscFunctionReturn(0);
}

/*
  maxpool by its definition (PyTorch's MaxPool2d/3d; padding as -infinity, the first maximum in window order on
  ties), on n samples of the layer's (h, w, c) or (d, h, w, c) shape: y and jy = the selected x and vx, dx = 0;
  dx[argmax[j]] += dy[j] in output order, summed in float (dxf) and in double (dxd)
*/
static PetscErrorCode MaxPoolReference(Layer layer, PetscInt n, const float *x, const float *dy, const float *vx, float *y, float *jy, float *dxf, PetscScalar *dxd)
{
  PetscInt nsd, k[3], step[3], pad[3], dil[3], in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, K[3] = {1, 1, 1}, S[3] = {1, 1, 1}, P[3] = {0, 0, 0}, C, j = 0;

  PetscFunctionBegin;
  PetscCall(layer->ops->getwindow(layer, &nsd, k, step, pad, dil));
  for (PetscInt d = 0; d < nsd; d++) { /* as three dims, a 2-D window with a leading dim of one point */
    in[3 - nsd + d]  = layer->in.dim[d];
    out[3 - nsd + d] = layer->out.dim[d];
    K[3 - nsd + d]   = k[d];
    S[3 - nsd + d]   = step[d];
    P[3 - nsd + d]   = pad[d];
  }
  C = layer->in.dim[nsd];
  for (PetscInt i = 0; i < n * layer->insize; i++) {
    dxf[i] = 0.0f;
    dxd[i] = 0.0;
  }
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt od = 0; od < out[0]; od++)
      for (PetscInt oh = 0; oh < out[1]; oh++)
        for (PetscInt ow = 0; ow < out[2]; ow++)
          for (PetscInt c = 0; c < C; c++, j++) {
            PetscInt best = -1;

            for (PetscInt kd = 0; kd < K[0]; kd++)
              for (PetscInt kh = 0; kh < K[1]; kh++)
                for (PetscInt kw = 0; kw < K[2]; kw++) {
                  const PetscInt id = od * S[0] - P[0] + kd, ih = oh * S[1] - P[1] + kh, iw = ow * S[2] - P[2] + kw;
                  PetscInt       i;

                  if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                  i = s * layer->insize + ((id * in[1] + ih) * in[2] + iw) * C + c;
                  if (best < 0 || x[i] > x[best]) best = i;
                }
            y[j]  = x[best];
            jy[j] = vx[best];
            dxf[best] += dy[j];
            dxd[best] += (PetscScalar)dy[j];
          }
  PetscFunctionReturn(0);
}

/* 5.: y and jy equal to the reference, dx too (== : up to the sign of a zero) */
static PetscErrorCode MaxPoolCheck(const char *spec, const char *prec, PetscInt ny, PetscInt nx, const float *yref, const float *jyref, const float *dxref, const PetscScalar *dxrefd, const float *yf, const float *jyf, const float *dxf,
                                   const PetscScalar *yd, const PetscScalar *jyd, const PetscScalar *dxd)
{
  PetscFunctionBegin;
  for (PetscInt j = 0; j < ny; j++) {
    PetscCheck(yf ? yf[j] == yref[j] : yd[j] == (PetscScalar)yref[j], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s in %s: y[%" PetscInt_FMT "] = %g, the reference's %g", spec, prec, j, yf ? (double)yf[j] : (double)yd[j], (double)yref[j]);
    PetscCheck(jyf ? jyf[j] == jyref[j] : jyd[j] == (PetscScalar)jyref[j], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s in %s: jvp dy[%" PetscInt_FMT "] = %g, the reference's %g", spec, prec, j, jyf ? (double)jyf[j] : (double)jyd[j], (double)jyref[j]);
  }
  for (PetscInt i = 0; i < nx; i++)
    PetscCheck(dxf ? dxf[i] == dxref[i] : dxd[i] == dxrefd[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s in %s: dx[%" PetscInt_FMT "] = %g, the reference's %g", spec, prec, i, dxf ? (double)dxf[i] : (double)dxd[i],
               dxf ? (double)dxref[i] : (double)dxrefd[i]);
  PetscFunctionReturn(0);
}

static PetscErrorCode TestCase(MPI_Comm comm, const SingleCase *c, PetscInt n, PetscRandom rnd, PetscRandom prnd)
{
  Layer         layer;
  PetNetShape   shape;
  char          kind[64], *colon;
  PetscInt      in, out, P, Nglobal;
  PetscBool     has, isbn, ispool;
  PetscScalar  *theta, *xd, *yd, *dyd, *dxd, *dthd, *vxd, *vth, *jyd;
  float        *xf, *dyf, *vxf;
  SingleResults r[3];
  PetscReal     diff, scale, K, dots[3];

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(kind, c->spec, sizeof(kind)));
  colon = strchr(kind, ':');
  if (colon) *colon = 0;
  PetscCall(LayerCreate(comm, &layer));
  PetscCall(LayerSetType(layer, kind));
  if (colon) PetscCall(LayerSetArguments(layer, colon + 1));
  PetscCall(PetNetShapeFromString(c->shape, &shape));
  PetscCall(LayerSetInputShape(layer, &shape));
  PetscCall(LayerSetFromOptions(layer));
  PetscCall(LayerSetUp(layer));
  PetscCall(LayerSetTraining(layer, c->training));
  PetscCall(LayerSetFrozen(layer, PETSC_TRUE)); /* the running statistics stay put while the two precisions compare */
  PetscCall(LayerHasSingle(layer, &has));
  if (!strcmp(kind, "conv2d")) { /* the algorithm the view reports (conv->wg.on, which picks the kernels of both precisions) */
    PetscBool found = PETSC_FALSE;

    PetscCall(TestLayerViewContains(layer, "(Winograd F(2x2,3x3))", &found));
    PetscCheck(found == c->winograd, comm, PETSC_ERR_PLIB, "%s on %s: Winograd %s, not expected", c->spec, c->shape, c->winograd ? "not used" : "used");
  }
  if (!strcmp(kind, "conv2d") || !strcmp(kind, "conv3d")) { /* the float kernel the view reports (ConvDirectSingle()) */
    PetscBool found = PETSC_FALSE;

    PetscCall(TestLayerViewContains(layer, "single precision: direct", &found));
    PetscCheck(found == c->direct, comm, PETSC_ERR_PLIB, "%s on %s: the direct float kernel %s, not expected", c->spec, c->shape, c->direct ? "not used" : "used");
  }
  PetscCall(PetscStrcmp(kind, "batchnorm", &isbn));
  PetscCall(PetscStrcmp(kind, "maxpool", &ispool));
  in  = layer->insize;
  out = layer->outsize;
  P   = layer->nparams;
  PetscCall(MPIU_Allreduce(&n, &Nglobal, 1, MPIU_INT, MPI_SUM, comm));

  PetscCall(PetscMalloc5(P + 1, &theta, (size_t)n * in + 1, &xd, (size_t)n * out + 1, &yd, (size_t)n * out + 1, &dyd, (size_t)n * in + 1, &dxd));
  PetscCall(PetscMalloc4(P + 1, &dthd, (size_t)n * in + 1, &vxd, P + 1, &vth, (size_t)n * out + 1, &jyd));
  PetscCall(PetscMalloc3((size_t)n * in + 1, &xf, (size_t)n * out + 1, &dyf, (size_t)n * in + 1, &vxf));
  for (PetscInt t = 0; t < 3; t++) PetscCall(PetscMalloc4((size_t)n * out + 1, &r[t].y, (size_t)n * in + 1, &r[t].dx, (size_t)n * out + 1, &r[t].jy, P + 1, &r[t].dth));

  for (PetscInt i = 0; i < P; i++) {
    PetscCall(PetscRandomGetValue(prnd, &theta[i])); /* the parameters and their tangent: the same on every rank */
    PetscCall(PetscRandomGetValue(prnd, &vth[i]));
    theta[i] = (isbn && i < P / 2) ? 0.5 + theta[i] : 2.0 * theta[i] - 1.0; /* batchnorm's gamma in [0.5, 1.5) */
    vth[i]   = 2.0 * vth[i] - 1.0;
  }
  if (isbn) /* running statistics away from the batch's, for evaluation mode */
    for (PetscInt ch = 0; ch < P / 2; ch++) {
      layer->buffers[ch]         = 0.1 * ch;
      layer->buffers[P / 2 + ch] = 0.5 + 0.25 * ch;
    }
  PetscCall(RandomFloats(rnd, n * in, isbn ? 1.0 : -1.0, isbn ? 3.0 : 1.0, ispool, xf, xd)); /* batchnorm: a mean away from 0 */
  PetscCall(RandomFloats(rnd, n * out, -1.0, 1.0, PETSC_FALSE, dyf, dyd));
  PetscCall(RandomFloats(rnd, n * in, -1.0, 1.0, PETSC_FALSE, vxf, vxd));

  /* the double kernels */
  {
    const PetscScalar *xs[1] = {xd}, *vs[1] = {vxd};
    PetscScalar       *dxs[1] = {dxd};

    PetscCall(LayerForwardArrays(layer, n, theta, xs, yd));
    for (PetscInt i = 0; i < n * in; i++) dxd[i] = 7.0; /* garbage: backward writes every entry */
    for (PetscInt i = 0; i < P; i++) dthd[i] = 0.0;
    PetscCall(LayerBackwardArrays(layer, n, theta, xs, yd, dyd, dxs, dthd));
    PetscCall(LayerJVPArrays(layer, n, theta, xs, yd, vs, vth, jyd));
  }
  /* the float kernels at 1, 2 and 3 threads */
  for (PetscInt t = 0; t < 3; t++) {
    PetscCall(PetNetSetNumThreads(t + 1));
    PetscCall(RunSingle(layer, n, theta, xf, dyf, vxf, vth, &r[t]));
  }
  PetscCall(PetNetSetNumThreads(1));

  /* 1. against double */
  PetscCall(CaseK(layer, c->Ky, Nglobal, &K));
  PetscCall(MaxDiff(comm, n * out, r[0].y, yd, &diff, &scale));
  PetscCall(Check(comm, c->spec, "forward y", K, diff, scale));
  PetscCall(CaseK(layer, c->Kdx, Nglobal, &K));
  PetscCall(MaxDiff(comm, n * in, r[0].dx, dxd, &diff, &scale));
  PetscCall(Check(comm, c->spec, "backward dx", K, diff, scale));
  PetscCall(CaseK(layer, c->Kjvp, Nglobal, &K));
  PetscCall(MaxDiff(comm, n * out, r[0].jy, jyd, &diff, &scale));
  PetscCall(Check(comm, c->spec, "jvp dy", K, diff, scale));
  if (P) { /* the parameter gradients: local sums (the Net adds the ranks'); compare the global sums */
    PetscScalar *g[2];
    PetscReal    m[2] = {0, 0};

    PetscCall(PetscMalloc2(P, &g[0], P, &g[1]));
    PetscCall(MPIU_Allreduce(r[0].dth, g[0], P, MPIU_SCALAR, MPIU_SUM, comm));
    PetscCall(MPIU_Allreduce(dthd, g[1], P, MPIU_SCALAR, MPIU_SUM, comm));
    for (PetscInt i = 0; i < P; i++) {
      m[0] = PetscMax(m[0], PetscAbsReal(g[0][i] - g[1][i]));
      m[1] = PetscMax(m[1], PetscAbsReal(g[1][i]));
    }
    PetscCall(CaseK(layer, c->Kdth, Nglobal, &K));
    PetscCall(Check(comm, c->spec, "backward dtheta", K, m[0], m[1]));
    PetscCall(PetscFree2(g[0], g[1]));
  }

  /* 2. dot-product test of the float kernels: <J v, w> = <v, J^T w> with v = (vx, vth), w = dy */
  dots[0] = dots[1] = dots[2] = 0;
  for (PetscInt i = 0; i < n * out; i++) dots[0] += (PetscReal)r[0].jy[i] * dyf[i];
  for (PetscInt i = 0; i < n * in; i++) dots[1] += (PetscReal)vxf[i] * r[0].dx[i];
  for (PetscInt i = 0; i < P; i++) dots[1] += vth[i] * r[0].dth[i];
  {
    PetscReal jn = 0, wn = 0;

    for (PetscInt i = 0; i < n * out; i++) {
      jn += (PetscReal)r[0].jy[i] * r[0].jy[i];
      wn += (PetscReal)dyf[i] * dyf[i];
    }
    dots[2] = jn;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, dots, 3, MPIU_REAL, MPIU_SUM, comm));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &wn, 1, MPIU_REAL, MPIU_SUM, comm));
    PetscCheck(PetscAbsReal(dots[0] - dots[1]) <= 1e-5 * PetscSqrtReal(dots[2] * wn), comm, PETSC_ERR_PLIB, "%s: float dot-product test <J v, w> = %.10g, <v, J^T w> = %.10g: relative %g > 1e-5", c->spec, (double)dots[0], (double)dots[1],
               (double)(PetscAbsReal(dots[0] - dots[1]) / PetscSqrtReal(dots[2] * wn)));
  }

  /* 3. the same bits at 1, 2, 3 threads */
  for (PetscInt t = 1; t < 3; t++) {
    PetscBool same = (PetscBool)(!memcmp(r[t].y, r[0].y, sizeof(float) * n * out) && !memcmp(r[t].dx, r[0].dx, sizeof(float) * n * in) && !memcmp(r[t].jy, r[0].jy, sizeof(float) * n * out) && !memcmp(r[t].dth, r[0].dth, sizeof(PetscScalar) * P));

    PetscCheck(same, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: single-precision results at %" PetscInt_FMT " threads differ from those at 1 thread", c->spec, t + 1);
  }

  /* 4. batchnorm in training mode: the running statistics one unfrozen pass leaves, from the same state */
  if (isbn && c->training) {
    PetscScalar       *saved, *after;
    const PetscScalar *xs[1]  = {xd};
    const float       *xfs[1] = {xf};
    PetscReal          m      = 0;

    PetscCall(PetscMalloc2(layer->nbuffers, &saved, layer->nbuffers, &after));
    PetscCall(PetscArraycpy(saved, layer->buffers, layer->nbuffers));
    PetscCall(LayerSetFrozen(layer, PETSC_FALSE));
    PetscCall(LayerForwardArrays(layer, n, theta, xs, yd));
    PetscCall(PetscArraycpy(after, layer->buffers, layer->nbuffers));
    PetscCall(PetscArraycpy(layer->buffers, saved, layer->nbuffers));
    PetscCall(LayerForwardSingle(layer, n, theta, xfs, r[0].y));
    for (PetscInt i = 0; i < layer->nbuffers; i++) m = PetscMax(m, PetscAbsReal(layer->buffers[i] - after[i]) / PetscAbsReal(after[i]));
    PetscCheck(m <= 1e-13, comm, PETSC_ERR_PLIB, "%s: running statistics after a single-precision pass differ from double's by %g relative (> 1e-13: both are double reductions of the same values)", c->spec, (double)m);
    PetscCall(PetscFree2(saved, after));
  }
  /* 5. maxpool against its definition, in both precisions */
  if (ispool) {
    float       *yref, *jyref, *dxref;
    PetscScalar *dxrefd;

    PetscCall(PetscMalloc4((size_t)n * out + 1, &yref, (size_t)n * out + 1, &jyref, (size_t)n * in + 1, &dxref, (size_t)n * in + 1, &dxrefd));
    PetscCall(MaxPoolReference(layer, n, xf, dyf, vxf, yref, jyref, dxref, dxrefd));
    PetscCall(MaxPoolCheck(c->spec, "single", n * out, n * in, yref, jyref, dxref, dxrefd, r[0].y, r[0].jy, r[0].dx, NULL, NULL, NULL));
    PetscCall(MaxPoolCheck(c->spec, "double", n * out, n * in, yref, jyref, dxref, dxrefd, NULL, NULL, NULL, yd, jyd, dxd));
    PetscCall(PetscFree4(yref, jyref, dxref, dxrefd));
  }
  PetscCall(PetscPrintf(comm, "%-28s %-8s %-9s single = double within the bounds, dot-product test, threads 1 2 3 alike\n", c->spec, c->shape, isbn ? (c->training ? "training" : "eval") : ""));

  for (PetscInt t = 0; t < 3; t++) PetscCall(PetscFree4(r[t].y, r[t].dx, r[t].jy, r[t].dth));
  PetscCall(PetscFree3(xf, dyf, vxf));
  PetscCall(PetscFree4(dthd, vxd, vth, jyd));
  PetscCall(PetscFree5(theta, xd, yd, dyd, dxd));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm    comm;
  PetscRandom rnd, prnd;
  PetscInt    nlocal = 5;
  PetscMPIInt rank;
  char        only[64] = "";

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-only", only, sizeof(only), NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 1234 + 17 * rank));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &prnd));
  PetscCall(PetscRandomSetSeed(prnd, 99));
  PetscCall(PetscRandomSeed(prnd));
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (only[0] && strncmp(cases[i].spec, only, strlen(only))) continue;
    PetscCall(TestCase(comm, &cases[i], nlocal, rnd, prnd));
  }
  { /* a node of a grid (grid mode) has no float kernels of its own: LayerForwardSingle() converts */
    Layer       node;
    PetNetShape ch = {1, {3}};
    PetscBool   has;

    PetscCall(LayerCreate(comm, &node));
    PetscCall(LayerSetType(node, LAYERCONV2D));
    PetscCall(LayerSetArguments(node, "4:3:1:1"));
    PetscCall(LayerSetInputShape(node, &ch));
    node->fielddim = 2;
    PetscCall(LayerSetUp(node));
    PetscCall(LayerHasSingle(node, &has));
    PetscCheck(!has, comm, PETSC_ERR_PLIB, "conv2d as a node of a grid offers float kernels: they are batch mode's");
    PetscCall(LayerDestroy(&node));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscRandomDestroy(&prnd));
  PetscCall(PetscFinalize());
  return 0;
}
