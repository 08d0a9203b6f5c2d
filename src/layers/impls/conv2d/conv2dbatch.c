/*
  conv2d in batch mode, im2col + GEMM (x, y, W, b as in conv2d.h), chunk by chunk of ns samples, and the workspace of
  batch mode (also Winograd's).

    col    [P][G][KH][KW][Cg]   P = ns Ho Wo: row p is the receptive field of pixel p, group by group (conv2dim2col.c)
    Wt     [G][Kg][Cout/G]      W^T per group (Kg = KH KW Cg), so that forward is an 'N','N' GEMM
  In column-major BLAS terms col is a (G Kg) x P matrix, y a Cout x P matrix and the weights of group g a Kg x (Cout/G)
  matrix Wg; one GEMM per group and chunk:
    forward   y_g    = Wg^T col_g (+ b)          dgemm('N','N') on Wt
    backward  dWg   += col_g dy_g^T              dgemm('N','T') (as dWg^T += dy_g col_g^T, in wdt, when Kg < Cout/G)
              db    += sum_p dy
              dcol_g = Wg dy_g ;  dx = col2im(dcol)   dgemm('N','N'), then the scatter-add of conv2dim2col.c
    jvp       dy_g   = Wg^T col(dx)_g + dWg^T col(x)_g (+ db)
    sobackward (backward is bilinear in (W, x), and its db is independent of both)
              dWdotg += col(xdot)_g dy_g^T       backward's weight GEMM with xdot for x
              dxdot  += col2im(Wdotg dy_g)       backward's input GEMM with Wdot for W, added to dxdot
  A 1x1, stride-1, unpadded convolution needs no im2col: col is x itself. Backward recomputes col(x) chunk by chunk,
  except when one chunk holds the whole batch: then forward's is kept (conv->colx). Whatever else writes col (the input
  GEMM of backward, jvp's col(dx), sobackward's col(xdot)) forgets it.
*/
#include "conv2d.h"

/*
  The workspace for batches of n samples: chunk = the samples whose buffers fit in maxworkspace MB (at least 1, at most
  n), counting the output chunk too since the GEMM writes it. Reallocated only when a chunk needs more samples than the
  buffers hold (nalloc), so that a smaller last batch or a bigger evaluation batch costs nothing.
*/
PetscErrorCode Conv2dGetWorkspace_Batch(Layer layer, PetscInt n)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  PetscLogDouble persample, limit = conv->maxworkspace * 1024.0 * 1024.0;
  PetscInt       chunk, tps = conv->tiles[0] * conv->tiles[1], nw = conv->nout * conv->kg, nu = 16 * conv->nout * conv->cin, nmax = PetscMax(conv->cin, conv->nout);
  size_t         ncol;

  PetscFunctionBegin;
  if (conv->winograd)
    persample = 16.0 * tps * (conv->cin + conv->nout);
  else
    persample = (PetscLogDouble)conv->pixels * ((conv->pointwise ? conv->cin : conv->ktot) + conv->nout);
  persample *= sizeof(PetscScalar);
  chunk = (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscMax(1.0, PetscFloorReal(limit / persample)));
  if (chunk <= conv->nalloc) {
    if (chunk != conv->chunk) conv->colx = NULL;
    conv->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(Conv2dResetWorkspace_Batch(layer));
  conv->chunk  = chunk;
  conv->nalloc = chunk;
  if (conv->winograd) {
    ncol = (size_t)chunk * tps * 16 * conv->cin;
    PetscCall(PetscMalloc5((size_t)chunk * tps * 16 * conv->nout, &conv->wm, nu, &conv->wu, 2 * nu, &conv->wt, nu, &conv->wdt, 2 * nmax, &conv->zeros));
    PetscCall(PetscArrayzero(conv->zeros, nmax));
  } else {
    ncol = conv->pointwise ? 0 : (size_t)chunk * conv->pixels * conv->ktot;
    PetscCall(PetscMalloc2(2 * nw, &conv->wt, nw, &conv->wdt));
  }
  PetscCall(PetscMalloc1(ncol, &conv->col));
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dResetWorkspace_Batch(Layer layer)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(conv->col));
  if (conv->wm)
    PetscCall(PetscFree5(conv->wm, conv->wu, conv->wt, conv->wdt, conv->zeros));
  else
    PetscCall(PetscFree2(conv->wt, conv->wdt));
  conv->chunk  = 0;
  conv->nalloc = 0;
  conv->colx   = NULL;
  PetscFunctionReturn(0);
}

/* col = im2col(x) of ns samples, sample by sample: col [ns Ho Wo][G Kg] (conv2dim2col.c) */
static PetscErrorCode Conv2dIm2col_Batch(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *x, PetscScalar *col)
{
  const size_t insize = (size_t)conv->win.in[0] * conv->win.in[1] * conv->cin, colsize = (size_t)conv->pixels * conv->ktot;

  PetscFunctionBegin;
  for (PetscInt s = 0; s < ns; s++) PetscCall(Conv2dIm2colRows(&conv->im2col, 0, conv->win.out[0], x + s * insize, col + s * colsize));
  PetscFunctionReturn(0);
}

/* dx = col2im(dcol) of ns samples (dx overwritten, or added to if add): the adjoint of Conv2dIm2col_Batch */
static PetscErrorCode Conv2dCol2im_Batch(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *col, PetscBool add, PetscScalar *dx)
{
  const size_t insize = (size_t)conv->win.in[0] * conv->win.in[1] * conv->cin, colsize = (size_t)conv->pixels * conv->ktot;

  PetscFunctionBegin;
  if (!add) PetscCall(PetscArrayzero(dx, ns * insize));
  for (PetscInt s = 0; s < ns; s++) PetscCall(Conv2dCol2imRowsAdd(&conv->im2col, 0, conv->win.out[0], col + s * colsize, dx + s * insize));
  PetscFunctionReturn(0);
}

/* BLAS sizes of one chunk of P output pixels */
typedef struct {
  PetscBLASInt P, cog, kg, ktot, nout;
} Conv2dBLAS;

static PetscErrorCode Conv2dBLASSizes(const Layer_Conv2d *conv, PetscInt P, Conv2dBLAS *b)
{
  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(P, &b->P));
  PetscCall(PetscBLASIntCast(conv->cog, &b->cog));
  PetscCall(PetscBLASIntCast(conv->kg, &b->kg));
  PetscCall(PetscBLASIntCast(conv->ktot, &b->ktot));
  PetscCall(PetscBLASIntCast(conv->nout, &b->nout));
  PetscFunctionReturn(0);
}

/* Wt_g = W_g^T for each group: Wt [G][Kg][Cout/G] (column-major Cout/G x Kg, ld Cout/G), so that forward is an 'N','N' GEMM */
static void Conv2dTransposeWeights(const Layer_Conv2d *conv, const PetscScalar *W, PetscScalar *Wt)
{
  for (PetscInt g = 0; g < conv->groups; g++, W += conv->cog * conv->kg, Wt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) Wt[o + conv->cog * j] = W[o * conv->kg + j];
}

/* y_g = Wt_g col_g + beta y_g, each group: y is [P][Cout], col [P][G Kg] */
static PetscErrorCode Conv2dGemmOutput(const Layer_Conv2d *conv, PetscInt P, const PetscScalar *Wt, const PetscScalar *col, PetscScalar beta, PetscScalar *y)
{
  Conv2dBLAS  b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(Conv2dBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &b.cog, &b.P, &b.kg, &one, Wt + g * conv->cog * conv->kg, &b.cog, col + g * conv->kg, &b.ktot, &beta, y + g * conv->cog, &b.nout));
  PetscFunctionReturn(0);
}

/*
  dW_g += col_g dy_g^T, each group. With few taps (Kg < Cout/G, e.g. the first layer on 1-channel images) OpenBLAS is
  much faster on the transposed product dWt_g += dy_g col_g^T, accumulated in conv->wdt and added by Conv2dAddWeightsTranspose.
*/
static PetscErrorCode Conv2dGemmWeights(const Layer_Conv2d *conv, PetscInt P, const PetscScalar *col, const PetscScalar *dy, PetscScalar *dW)
{
  Conv2dBLAS  b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(Conv2dBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) {
    if (conv->dwtransposed)
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.cog, &b.kg, &b.P, &one, dy + g * conv->cog, &b.nout, col + g * conv->kg, &b.ktot, &one, conv->wdt + g * conv->cog * conv->kg, &b.cog));
    else
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.kg, &b.cog, &b.P, &one, col + g * conv->kg, &b.ktot, dy + g * conv->cog, &b.nout, &one, dW + g * conv->cog * conv->kg, &b.kg));
  }
  PetscFunctionReturn(0);
}

/* dW += wdt^T, per group, when the weight gradient was accumulated transposed (conv->dwtransposed) */
static void Conv2dAddWeightsTranspose(const Layer_Conv2d *conv, PetscScalar *dW)
{
  const PetscScalar *dWt = conv->wdt;

  if (!conv->dwtransposed) return;
  for (PetscInt g = 0; g < conv->groups; g++, dW += conv->cog * conv->kg, dWt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) dW[o * conv->kg + j] += dWt[o + conv->cog * j];
}

/* dcol_g = W_g dy_g + beta dcol_g, each group */
static PetscErrorCode Conv2dGemmInput(const Layer_Conv2d *conv, PetscInt P, const PetscScalar *W, const PetscScalar *dy, PetscScalar beta, PetscScalar *dcol)
{
  Conv2dBLAS  b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(Conv2dBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &b.kg, &b.P, &b.cog, &one, W + g * conv->cog * conv->kg, &b.kg, dy + g * conv->cog, &b.nout, &beta, dcol + g * conv->kg, &b.ktot));
  PetscFunctionReturn(0);
}

/* dx = col2im(W dy) for ns samples (P pixels), or dx += it (add): the input part of backward and of sobackward */
static PetscErrorCode Conv2dInputCotangent_Batch(Layer_Conv2d *conv, PetscInt ns, PetscInt P, const PetscScalar *W, const PetscScalar *dy, PetscBool add, PetscScalar *dx)
{
  PetscFunctionBegin;
  if (conv->pointwise)
    PetscCall(Conv2dGemmInput(conv, P, W, dy, add ? 1.0 : 0.0, dx));
  else {
    conv->colx = NULL; /* the columns now hold W dy, not col(x) */
    PetscCall(Conv2dGemmInput(conv, P, W, dy, 0.0, conv->col));
    PetscCall(Conv2dCol2im_Batch(conv, ns, conv->col, add, dx));
  }
  PetscFunctionReturn(0);
}

/* col(x) for samples [s0, s0 + ns) of n: x itself (1x1), the col already computed at x, or a fresh im2col
   (remembered as col(x) when the chunk is the whole batch) */
static PetscErrorCode Conv2dColumns(Layer_Conv2d *conv, PetscInt s0, PetscInt ns, PetscInt n, const PetscScalar *x, PetscInt insize, const PetscScalar **col)
{
  PetscFunctionBegin;
  if (conv->pointwise) {
    *col = x + (size_t)s0 * insize;
    PetscFunctionReturn(0);
  }
  if (conv->colx != x) {
    PetscCall(Conv2dIm2col_Batch(conv, ns, x + (size_t)s0 * insize, conv->col));
    conv->colx = ns == n ? x : NULL;
  }
  *col = conv->col;
  PetscFunctionReturn(0);
}

/* y[p][o] = b[o], the start of the forward GEMM with beta = 1 */
static void Conv2dFillBias(PetscInt P, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  for (PetscInt p = 0; p < P; p++, y += nout)
    for (PetscInt o = 0; o < nout; o++) y[o] = b[o];
}

/* forward: y = conv(x; W) + b, chunk by chunk of samples; col(x) is kept for backward when one chunk holds the batch */
PetscErrorCode Conv2dForward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  const PetscScalar *W = theta, *b = conv->bias ? theta + conv->nout * conv->kg : NULL;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Batch(layer, n));
  Conv2dTransposeWeights(conv, W, conv->wt);
  conv->colx = NULL; /* x may hold new values at the same address */
  for (PetscInt s0 = 0; s0 < n; s0 += conv->chunk) {
    PetscInt           ns = PetscMin(conv->chunk, n - s0), P = ns * conv->pixels;
    const PetscScalar *col = NULL;
    PetscScalar       *ys  = y + (size_t)s0 * layer->outsize;

    PetscCall(Conv2dColumns(conv, s0, ns, n, x, layer->insize, &col));
    if (b) Conv2dFillBias(P, conv->nout, b, ys);
    PetscCall(Conv2dGemmOutput(conv, P, conv->wt, col, b ? 1.0 : 0.0, ys));
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (b ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

/* backward: dW += col(x) dy^T, db += sum_p dy; dx = col2im(W dy) */
PetscErrorCode Conv2dBackward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  const PetscScalar *W    = theta;
  PetscInt           nout = conv->nout;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Batch(layer, n));
  if (dtheta && conv->dwtransposed) PetscCall(PetscArrayzero(conv->wdt, nout * conv->kg));
  for (PetscInt s0 = 0; s0 < n; s0 += conv->chunk) {
    PetscInt           ns = PetscMin(conv->chunk, n - s0), P = ns * conv->pixels;
    const PetscScalar *dys = dy + (size_t)s0 * layer->outsize, *col = NULL;

    if (dtheta) {
      PetscCall(Conv2dColumns(conv, s0, ns, n, x, layer->insize, &col));
      PetscCall(Conv2dGemmWeights(conv, P, col, dys, dtheta));
      if (conv->bias) {
        PetscScalar *db = dtheta + nout * conv->kg;

        for (PetscInt p = 0; p < P; p++)
          for (PetscInt o = 0; o < nout; o++) db[o] += dys[p * nout + o];
      }
    }
    if (dx) PetscCall(Conv2dInputCotangent_Batch(conv, ns, P, W, dys, PETSC_FALSE, dx + (size_t)s0 * layer->insize));
  }
  if (dtheta) Conv2dAddWeightsTranspose(conv, dtheta);
  if (dtheta) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->bias ? 1.0 * n * conv->pixels * nout : 0.0)));
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->pointwise ? 0.0 : 1.0 * n * conv->pixels * conv->ktot)));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(dx; W) + conv(x; dW) + db */
PetscErrorCode Conv2dJVP_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  const PetscScalar *W    = theta;
  PetscInt           nout = conv->nout;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Batch(layer, n));
  if (dtheta) Conv2dTransposeWeights(conv, dtheta, conv->wt);
  if (dx) Conv2dTransposeWeights(conv, W, conv->wt + nout * conv->kg);
  for (PetscInt s0 = 0; s0 < n; s0 += conv->chunk) {
    PetscInt     ns = PetscMin(conv->chunk, n - s0), P = ns * conv->pixels;
    PetscScalar *dys = dy + (size_t)s0 * layer->outsize, beta = 0.0;

    if (dtheta) {
      const PetscScalar *col = NULL;

      if (conv->bias) {
        Conv2dFillBias(P, nout, dtheta + nout * conv->kg, dys);
        beta = 1.0;
      }
      PetscCall(Conv2dColumns(conv, s0, ns, n, x, layer->insize, &col));
      PetscCall(Conv2dGemmOutput(conv, P, conv->wt, col, beta, dys));
      beta = 1.0;
    }
    if (dx) {
      const PetscScalar *col = dx + (size_t)s0 * layer->insize;

      if (!conv->pointwise) {
        conv->colx = NULL;
        PetscCall(Conv2dIm2col_Batch(conv, ns, col, conv->col));
        col = conv->col;
      }
      PetscCall(Conv2dGemmOutput(conv, P, conv->wt + nout * conv->kg, col, beta, dys));
    }
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * nout : 0.0)));
  PetscFunctionReturn(0);
}

/*
  sobackward: dWdot += col(xdot) dy^T (if dWdot and xdot), dxdot += col2im(Wdot dy) (if dxdot and Wdot). The bias
  gradient sum_p dy does not depend on (x, W): its term is zero and dWdot's bias entries are left alone.
*/
PetscErrorCode Conv2dSOBackward_Batch(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  const PetscInt nout = conv->nout;
  PetscBool      doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Batch(layer, n));
  if (doW && conv->dwtransposed) PetscCall(PetscArrayzero(conv->wdt, nout * conv->kg));
  for (PetscInt s0 = 0; s0 < n; s0 += conv->chunk) {
    PetscInt           ns = PetscMin(conv->chunk, n - s0), P = ns * conv->pixels;
    const PetscScalar *dys = dy + (size_t)s0 * layer->outsize;

    if (doW) {
      const PetscScalar *col = xdot + (size_t)s0 * layer->insize;

      if (!conv->pointwise) {
        conv->colx = NULL; /* col(xdot) replaces col(x) */
        PetscCall(Conv2dIm2col_Batch(conv, ns, col, conv->col));
        col = conv->col;
      }
      PetscCall(Conv2dGemmWeights(conv, P, col, dys, dWdot));
    }
    if (dox) PetscCall(Conv2dInputCotangent_Batch(conv, ns, P, Wdot, dys, PETSC_TRUE, dxdot + (size_t)s0 * layer->insize));
  }
  if (doW) Conv2dAddWeightsTranspose(conv, dWdot);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((doW ? 1 : 0) + (dox ? 1 : 0)) + (dox && !conv->pointwise ? 1.0 * n * conv->pixels * conv->ktot : 0.0)));
  PetscFunctionReturn(0);
}
