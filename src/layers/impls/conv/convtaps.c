/*
  The taps algorithm of a convolution: layouts, GEMMs and threads in convtaps.h.
*/
#include "convtaps.h"

/* The geometry in three dims, slowest first (a 2-D layer has a depth of one point), and the BLAS sizes */
typedef struct {
  PetscInt     in[3], out[3], k[3], step[3], pad[3], dil[3];
  PetscInt     cin, cout, K, ntaps, rows, inrows; /* K = taps Cin; output and input rows (Do Ho, D H) of a sample */
  PetscBLASInt bcin, bcout, bK;
} ConvTapsGeometry;

static PetscErrorCode ConvTapsGetGeometry(const LayerConv *conv, ConvTapsGeometry *g)
{
  const LayerWindow *w   = &conv->win;
  const PetscInt     off = 3 - conv->nsd;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < 3; d++) {
    const PetscBool real = (PetscBool)(d >= off);

    g->in[d]   = real ? w->in[d - off] : 1;
    g->out[d]  = real ? w->out[d - off] : 1;
    g->k[d]    = real ? w->k[d - off] : 1;
    g->step[d] = real ? w->step[d - off] : 1;
    g->pad[d]  = real ? w->pad[d - off] : 0;
    g->dil[d]  = real ? w->dilation[d - off] : 1;
  }
  g->cin    = conv->cin;
  g->cout   = conv->nout;
  g->K      = conv->kg;
  g->ntaps  = g->k[0] * g->k[1] * g->k[2];
  g->rows   = g->out[0] * g->out[1];
  g->inrows = g->in[0] * g->in[1];
  PetscCall(PetscBLASIntCast(g->cin, &g->bcin));
  PetscCall(PetscBLASIntCast(g->cout, &g->bcout));
  PetscCall(PetscBLASIntCast(g->K, &g->bK));
  {
    PetscBLASInt brun;

    PetscCall(PetscBLASIntCast(PetscMax(g->in[2], g->out[2]), &brun)); /* the longest run of a GEMM fits a BLAS int */
  }
  PetscFunctionReturn(0);
}

/* One group and stride 1 along the fastest dim: a tap then reads a contiguous run of each input row */
PetscBool ConvTapsApplies(const LayerConv *conv)
{
  return (PetscBool)(conv->groups == 1 && conv->win.step[conv->nsd - 1] == 1);
}

PetscErrorCode ConvTapsSetUp(Layer layer, ConvTaps *taps)
{
  const LayerConv *conv = (const LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCall(ConvTapsReset(taps));
  PetscCall(PetscMalloc2(2 * (size_t)conv->kg * conv->nout, &taps->wt, (size_t)PETNET_THREAD_PARTS * (conv->kg + 1) * conv->nout, &taps->dwpart));
  taps->on = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTapsReset(ConvTaps *taps)
{
  PetscFunctionBegin;
  PetscCall(PetscFree2(taps->wt, taps->dwpart));
  taps->on = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* wt[t][c][o] = W[o][t][c] */
static void ConvTapsTranspose(const ConvTapsGeometry *g, const PetscScalar *W, PetscScalar *wt)
{
  for (PetscInt t = 0; t < g->ntaps; t++)
    for (PetscInt c = 0; c < g->cin; c++)
      for (PetscInt o = 0; o < g->cout; o++) wt[(t * g->cin + c) * g->cout + o] = W[o * g->K + t * g->cin + c];
}

/* The input index of output index o and tap t along dim d, and whether it lies inside the input */
static inline PetscBool ConvTapsInside(const ConvTapsGeometry *g, PetscInt d, PetscInt o, PetscInt t, PetscInt *i)
{
  *i = o * g->step[d] - g->pad[d] + t * g->dil[d];
  return (PetscBool)(*i >= 0 && *i < g->in[d]);
}

/* The output points [q0, q1) of a row that tap kw reaches inside the input row, the first one reading input point q0 + sh */
static inline PetscBool ConvTapsRun(const ConvTapsGeometry *g, PetscInt kw, PetscInt *q0, PetscInt *q1, PetscInt *sh)
{
  *sh = kw * g->dil[2] - g->pad[2];
  *q0 = PetscMax(0, -*sh);
  *q1 = PetscMin(g->out[2], g->in[2] - *sh);
  return (PetscBool)(*q1 > *q0);
}

/* yr (one output row u, [Wo][Cout]) += the sum over the taps of wt_t^T x_src, x the sample's input */
static void ConvTapsRow(const ConvTapsGeometry *g, PetscInt u, const PetscScalar *wt, const PetscScalar *x, PetscScalar *yr)
{
  const PetscInt    od = u / g->out[1], oh = u % g->out[1];
  const PetscScalar one = 1.0;

  for (PetscInt kd = 0; kd < g->k[0]; kd++) {
    PetscInt id;

    if (!ConvTapsInside(g, 0, od, kd, &id)) continue;
    for (PetscInt kh = 0; kh < g->k[1]; kh++) {
      PetscInt           ih;
      const PetscScalar *xrow;

      if (!ConvTapsInside(g, 1, oh, kh, &ih)) continue;
      xrow = x + (size_t)(id * g->in[1] + ih) * g->in[2] * g->cin;
      for (PetscInt kw = 0; kw < g->k[2]; kw++) {
        const PetscInt t = (kd * g->k[1] + kh) * g->k[2] + kw;
        PetscInt       q0, q1, sh;
        PetscBLASInt   bnq;

        if (!ConvTapsRun(g, kw, &q0, &q1, &sh)) continue;
        bnq = (PetscBLASInt)(q1 - q0);
        BLASgemm_("N", "N", &g->bcout, &bnq, &g->bcin, &one, wt + (size_t)t * g->cin * g->cout, &g->bcout, xrow + (q0 + sh) * g->cin, &g->bcin, &one, yr + q0 * g->cout, &g->bcout);
      }
    }
  }
}

/* the output rows of n samples start as b (or zero), then gather the taps of x with wt and (if x2) of x2 with wt2 */
static void ConvTapsOutput(const ConvTapsGeometry *g, PetscInt n, PetscInt insize, const PetscScalar *b, const PetscScalar *wt, const PetscScalar *x, const PetscScalar *wt2, const PetscScalar *x2, PetscScalar *y)
{
  const PetscInt U = n * g->rows, nparts = PetNetThreadParts(U, 1);

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt u0, u1;

    PetNetThreadPart(U, nparts, p, &u0, &u1);
    for (PetscInt u = u0; u < u1; u++) {
      const PetscInt s  = u / g->rows;
      PetscScalar   *yr = y + (size_t)u * g->out[2] * g->cout;

      for (PetscInt q = 0; q < g->out[2]; q++)
        for (PetscInt o = 0; o < g->cout; o++) yr[q * g->cout + o] = b ? b[o] : 0.0;
      if (x) ConvTapsRow(g, u % g->rows, wt, x + (size_t)s * insize, yr);
      if (x2) ConvTapsRow(g, u % g->rows, wt2, x2 + (size_t)s * insize, yr);
    }
  }
}

/* dW += x dy^T (and db += sum dy) over the output rows of n samples, in parts added in part order */
static void ConvTapsWeights(const ConvTapsGeometry *g, ConvTaps *taps, PetscInt n, PetscInt insize, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dW, PetscScalar *db)
{
  const PetscInt U = n * g->rows, nparts = PetNetThreadParts(U, 1), nw = g->K * g->cout, stride = nw + g->cout;

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const PetscScalar one  = 1.0;
    PetscScalar      *accW = dW, *accb = db;
    PetscInt          u0, u1;

    if (nparts > 1) {
      accW = taps->dwpart + (size_t)p * stride;
      accb = db ? accW + nw : NULL;
      for (PetscInt i = 0; i < stride; i++) accW[i] = 0.0;
    }
    PetNetThreadPart(U, nparts, p, &u0, &u1);
    for (PetscInt u = u0; u < u1; u++) {
      const PetscInt     s = u / g->rows, od = (u % g->rows) / g->out[1], oh = (u % g->rows) % g->out[1];
      const PetscScalar *dyr = dy + (size_t)u * g->out[2] * g->cout, *xs = x + (size_t)s * insize;

      if (accb)
        for (PetscInt q = 0; q < g->out[2]; q++)
          for (PetscInt o = 0; o < g->cout; o++) accb[o] += dyr[q * g->cout + o];
      for (PetscInt kd = 0; kd < g->k[0]; kd++) {
        PetscInt id;

        if (!ConvTapsInside(g, 0, od, kd, &id)) continue;
        for (PetscInt kh = 0; kh < g->k[1]; kh++) {
          PetscInt           ih;
          const PetscScalar *xrow;

          if (!ConvTapsInside(g, 1, oh, kh, &ih)) continue;
          xrow = xs + (size_t)(id * g->in[1] + ih) * g->in[2] * g->cin;
          for (PetscInt kw = 0; kw < g->k[2]; kw++) {
            const PetscInt t = (kd * g->k[1] + kh) * g->k[2] + kw;
            PetscInt       q0, q1, sh;
            PetscBLASInt   bnq;

            if (!ConvTapsRun(g, kw, &q0, &q1, &sh)) continue;
            bnq = (PetscBLASInt)(q1 - q0);
            BLASgemm_("N", "T", &g->bcin, &g->bcout, &bnq, &one, xrow + (q0 + sh) * g->cin, &g->bcin, dyr + q0 * g->cout, &g->bcout, &one, accW + t * g->cin, &g->bK);
          }
        }
      }
    }
  }
  if (nparts > 1)
    for (PetscInt p = 0; p < nparts; p++) {
      const PetscScalar *part = taps->dwpart + (size_t)p * stride;

      for (PetscInt i = 0; i < nw; i++) dW[i] += part[i];
      if (db)
        for (PetscInt o = 0; o < g->cout; o++) db[o] += part[nw + o];
    }
}

/* The output index o along dim d that reads input index i through tap t, if there is one */
static inline PetscBool ConvTapsReader(const ConvTapsGeometry *g, PetscInt d, PetscInt i, PetscInt t, PetscInt *o)
{
  const PetscInt a = i + g->pad[d] - t * g->dil[d];

  if (a < 0 || a % g->step[d]) return PETSC_FALSE;
  *o = a / g->step[d];
  return (PetscBool)(*o < g->out[d]);
}

/* dx (= when zero, else +=) W dy gathered over the input rows of n samples: each input row from the output rows and
   taps that read it */
static void ConvTapsInput(const ConvTapsGeometry *g, PetscInt n, PetscInt insize, PetscInt outsize, const PetscScalar *W, const PetscScalar *dy, PetscBool zero, PetscScalar *dx)
{
  const PetscInt V = n * g->inrows, nparts = PetNetThreadParts(V, 1);

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const PetscScalar one = 1.0;
    PetscInt          v0, v1;

    PetNetThreadPart(V, nparts, p, &v0, &v1);
    for (PetscInt v = v0; v < v1; v++) {
      const PetscInt     s = v / g->inrows, id = (v % g->inrows) / g->in[1], ih = (v % g->inrows) % g->in[1];
      PetscScalar       *dxr = dx + (size_t)s * insize + (size_t)(id * g->in[1] + ih) * g->in[2] * g->cin;
      const PetscScalar *dys = dy + (size_t)s * outsize;

      if (zero)
        for (PetscInt i = 0; i < g->in[2] * g->cin; i++) dxr[i] = 0.0;
      for (PetscInt kd = 0; kd < g->k[0]; kd++) {
        PetscInt od;

        if (!ConvTapsReader(g, 0, id, kd, &od)) continue;
        for (PetscInt kh = 0; kh < g->k[1]; kh++) {
          PetscInt           oh;
          const PetscScalar *dyr;

          if (!ConvTapsReader(g, 1, ih, kh, &oh)) continue;
          dyr = dys + (size_t)(od * g->out[1] + oh) * g->out[2] * g->cout;
          for (PetscInt kw = 0; kw < g->k[2]; kw++) {
            const PetscInt t = (kd * g->k[1] + kh) * g->k[2] + kw;
            PetscInt       q0, q1, sh;
            PetscBLASInt   bnq;

            if (!ConvTapsRun(g, kw, &q0, &q1, &sh)) continue;
            bnq = (PetscBLASInt)(q1 - q0);
            BLASgemm_("N", "N", &g->bcin, &bnq, &g->bcout, &one, W + t * g->cin, &g->bK, dyr + q0 * g->cout, &g->bcout, &one, dxr + (q0 + sh) * g->cin, &g->bcin);
          }
        }
      }
    }
  }
}

PetscErrorCode ConvForward_Taps(Layer layer, ConvTaps *taps, Layer act, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const LayerConv *conv = (const LayerConv *)layer->data;
  ConvTapsGeometry g;

  PetscFunctionBegin;
  PetscCall(ConvTapsGetGeometry(conv, &g));
  ConvTapsTranspose(&g, theta, taps->wt);
  ConvTapsOutput(&g, n, layer->insize, conv->bias ? theta + g.K * g.cout : NULL, taps->wt, x, NULL, NULL, y);
  PetscCall(LayerActivate(act, n * layer->outsize, y)); /* the activation passed by the caller, or none */
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * g.K * g.cout));
  PetscFunctionReturn(0);
}

/* dx = J_x^T dy (when dx), dtheta += J_theta^T dy (when dtheta) */
PetscErrorCode ConvBackward_Taps(Layer layer, ConvTaps *taps, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  const LayerConv *conv = (const LayerConv *)layer->data;
  ConvTapsGeometry g;

  PetscFunctionBegin;
  PetscCall(ConvTapsGetGeometry(conv, &g));
  if (dtheta) ConvTapsWeights(&g, taps, n, layer->insize, x, dy, dtheta, conv->bias ? dtheta + g.K * g.cout : NULL);
  if (dx) ConvTapsInput(&g, n, layer->insize, layer->outsize, theta, dy, PETSC_TRUE, dx);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * g.K * g.cout * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta (either may be NULL) */
PetscErrorCode ConvJVP_Taps(Layer layer, ConvTaps *taps, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const LayerConv *conv = (const LayerConv *)layer->data;
  ConvTapsGeometry g;
  PetscScalar     *dwt = taps->wt + (size_t)conv->kg * conv->nout;

  PetscFunctionBegin;
  PetscCall(ConvTapsGetGeometry(conv, &g));
  if (dx) ConvTapsTranspose(&g, theta, taps->wt);
  if (dtheta) ConvTapsTranspose(&g, dtheta, dwt);
  ConvTapsOutput(&g, n, layer->insize, dtheta && conv->bias ? dtheta + g.K * g.cout : NULL, taps->wt, dx, dwt, dtheta ? x : NULL, dy);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * g.K * g.cout * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dWdot += J_W(xdot)^T dy, dxdot += J_x(Wdot)^T dy (conv.h); the bias entries of dWdot are untouched */
PetscErrorCode ConvSOBackward_Taps(Layer layer, ConvTaps *taps, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  const LayerConv *conv = (const LayerConv *)layer->data;
  ConvTapsGeometry g;

  PetscFunctionBegin;
  PetscCall(ConvTapsGetGeometry(conv, &g));
  if (dWdot && xdot) ConvTapsWeights(&g, taps, n, layer->insize, xdot, dy, dWdot, NULL);
  if (dxdot && Wdot) ConvTapsInput(&g, n, layer->insize, layer->outsize, Wdot, dy, PETSC_FALSE, dxdot);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * g.K * g.cout * ((dxdot && Wdot ? 1 : 0) + (dWdot && xdot ? 1 : 0))));
  PetscFunctionReturn(0);
}
