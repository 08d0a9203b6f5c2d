/*
  Batch mode of conv2d and conv3d, im2col + GEMM (layouts and formulas in conv.h), chunk by chunk of output rows.

  The batch's output rows are numbered R = s rows + r (sample s, row r = od Ho + oh of the sample); a chunk is a range
  [R0, R1) of them, whole samples when one fits in the workspace, else part of one. Its P = (R1 - R0) Wo output points
  are consecutive in y, so each GEMM writes y (and reads dy) in place. A 1x1(x1), stride-1, unpadded convolution needs
  no im2col: col is x itself (its rows are the output's). Backward recomputes col(x) chunk by chunk, except when one
  chunk holds the whole batch: then forward's is kept (conv->colx). Whatever else writes col (the input GEMM of
  backward, jvp's col(dx), sobackward's col(xdot)) forgets it.
*/
#include "conv.h"

/*
  The workspace for batches of n samples: chunk = the output rows whose columns and outputs fit in maxworkspace MB (at
  least 1); as many whole samples as fit (at most n) when one sample does. Reallocated only when a chunk needs more rows
  than the buffers hold (nalloc), so that a smaller last batch or a bigger evaluation batch costs nothing.
*/
PetscErrorCode ConvGetWorkspace_Batch(Layer layer, PetscInt n)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  const PetscInt Wo = conv->im2col.out[2], nw = conv->nout * conv->kg;
  PetscLogDouble perrow, limit                = conv->maxworkspace * 1024.0 * 1024.0, fit;
  PetscInt       chunk;

  PetscFunctionBegin;
  perrow = (PetscLogDouble)Wo * ((conv->pointwise ? conv->cin : conv->ktot) + conv->nout) * sizeof(PetscScalar);
  fit    = PetscMax(1.0, PetscFloorReal(limit / perrow));
  if (fit >= conv->rows) /* whole samples */
    chunk = conv->rows * (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscFloorReal(fit / conv->rows));
  else
    chunk = (PetscInt)fit;
  if (chunk <= conv->nalloc) {
    if (chunk != conv->chunk) conv->colx = NULL;
    conv->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(ConvResetWorkspace_Batch(layer));
  conv->chunk  = chunk;
  conv->nalloc = chunk;
  PetscCall(PetscMalloc3(conv->pointwise ? 0 : (size_t)chunk * Wo * conv->ktot, &conv->col, 2 * nw, &conv->wt, nw, &conv->wdt));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvResetWorkspace_Batch(Layer layer)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree3(conv->col, conv->wt, conv->wdt));
  conv->chunk  = 0;
  conv->nalloc = 0;
  conv->colx   = NULL;
  PetscFunctionReturn(0);
}

/* col = im2col(x) of the batch's output rows [R0, R1): col [(R1 - R0) Wo][G Kg] (convim2col.c) */
static PetscErrorCode ConvIm2col_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const PetscScalar *x, PetscScalar *col)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  PetscFunctionBegin;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    PetscCall(ConvIm2colRows(&conv->im2col, r0, r1, x + (size_t)s * insize, col));
    col += (r1 - r0) * rowsize;
  }
  PetscFunctionReturn(0);
}

/* dx += col2im(dcol) of the batch's output rows [R0, R1): the adjoint of ConvIm2col_Batch */
static PetscErrorCode ConvCol2imAdd_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const PetscScalar *col, PetscScalar *dx)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  PetscFunctionBegin;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    PetscCall(ConvCol2imRowsAdd(&conv->im2col, r0, r1, col, dx + (size_t)s * insize));
    col += (r1 - r0) * rowsize;
  }
  PetscFunctionReturn(0);
}

/* BLAS sizes of one chunk of P output points */
typedef struct {
  PetscBLASInt P, cog, kg, ktot, nout;
} ConvBLAS;

static PetscErrorCode ConvBLASSizes(const LayerConv *conv, PetscInt P, ConvBLAS *b)
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
static void ConvTransposeWeights(const LayerConv *conv, const PetscScalar *W, PetscScalar *Wt)
{
  for (PetscInt g = 0; g < conv->groups; g++, W += conv->cog * conv->kg, Wt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) Wt[o + conv->cog * j] = W[o * conv->kg + j];
}

/* y_g = Wt_g col_g + beta y_g, each group: y is [P][Cout], col [P][G Kg] */
static PetscErrorCode ConvGemmOutput(const LayerConv *conv, PetscInt P, const PetscScalar *Wt, const PetscScalar *col, PetscScalar beta, PetscScalar *y)
{
  ConvBLAS    b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(ConvBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &b.cog, &b.P, &b.kg, &one, Wt + g * conv->cog * conv->kg, &b.cog, col + g * conv->kg, &b.ktot, &beta, y + g * conv->cog, &b.nout));
  PetscFunctionReturn(0);
}

/*
  dW_g += col_g dy_g^T, each group. With few taps (Kg < Cout/G, e.g. the first layer on 1-channel images) OpenBLAS is
  much faster on the transposed product dWt_g += dy_g col_g^T, accumulated in conv->wdt and added by ConvAddWeightsTranspose.
*/
static PetscErrorCode ConvGemmWeights(const LayerConv *conv, PetscInt P, const PetscScalar *col, const PetscScalar *dy, PetscScalar *dW)
{
  ConvBLAS    b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(ConvBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) {
    if (conv->dwtransposed)
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.cog, &b.kg, &b.P, &one, dy + g * conv->cog, &b.nout, col + g * conv->kg, &b.ktot, &one, conv->wdt + g * conv->cog * conv->kg, &b.cog));
    else
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.kg, &b.cog, &b.P, &one, col + g * conv->kg, &b.ktot, dy + g * conv->cog, &b.nout, &one, dW + g * conv->cog * conv->kg, &b.kg));
  }
  PetscFunctionReturn(0);
}

/* dW += wdt^T, per group, when the weight gradient was accumulated transposed (conv->dwtransposed) */
static void ConvAddWeightsTranspose(const LayerConv *conv, PetscScalar *dW)
{
  const PetscScalar *dWt = conv->wdt;

  if (!conv->dwtransposed) return;
  for (PetscInt g = 0; g < conv->groups; g++, dW += conv->cog * conv->kg, dWt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) dW[o * conv->kg + j] += dWt[o + conv->cog * j];
}

/* dcol_g = W_g dy_g + beta dcol_g, each group */
static PetscErrorCode ConvGemmInput(const LayerConv *conv, PetscInt P, const PetscScalar *W, const PetscScalar *dy, PetscScalar beta, PetscScalar *dcol)
{
  ConvBLAS    b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(ConvBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &b.kg, &b.P, &b.cog, &one, W + g * conv->cog * conv->kg, &b.kg, dy + g * conv->cog, &b.nout, &beta, dcol + g * conv->kg, &b.ktot));
  PetscFunctionReturn(0);
}

/*
  dx += col2im(W dy) for the rows [R0, R1) (P points), the input part of backward and of sobackward; dx is the whole
  batch's, zeroed by the caller where backward overwrites it (rows of different chunks add into the same input points).
  1x1: dx's rows are the output's, written (add false) or added to by the GEMM itself.
*/
static PetscErrorCode ConvInputCotangent_Batch(LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt P, const PetscScalar *W, const PetscScalar *dy, PetscBool add, PetscScalar *dx)
{
  PetscFunctionBegin;
  if (conv->pointwise)
    PetscCall(ConvGemmInput(conv, P, W, dy, add ? 1.0 : 0.0, dx + (size_t)R0 * conv->im2col.out[2] * conv->cin));
  else {
    conv->colx = NULL; /* the columns now hold W dy, not col(x) */
    PetscCall(ConvGemmInput(conv, P, W, dy, 0.0, conv->col));
    PetscCall(ConvCol2imAdd_Batch(conv, insize, R0, R1, conv->col, dx));
  }
  PetscFunctionReturn(0);
}

/* col(x) for the rows [R0, R1) of a batch of R rows: x itself (1x1), the col already computed at x, or a fresh im2col
   (remembered as col(x) when the chunk is the whole batch) */
static PetscErrorCode ConvColumns(LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt R, const PetscScalar *x, const PetscScalar **col)
{
  PetscFunctionBegin;
  if (conv->pointwise) {
    *col = x + (size_t)R0 * conv->im2col.out[2] * conv->cin;
    PetscFunctionReturn(0);
  }
  if (conv->colx != x) {
    PetscCall(ConvIm2col_Batch(conv, insize, R0, R1, x, conv->col));
    conv->colx = R0 == 0 && R1 == R ? x : NULL;
  }
  *col = conv->col;
  PetscFunctionReturn(0);
}

/* y[p][o] = b[o], the start of the forward GEMM with beta = 1 */
static void ConvFillBias(PetscInt P, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  for (PetscInt p = 0; p < P; p++, y += nout)
    for (PetscInt o = 0; o < nout; o++) y[o] = b[o];
}

/* forward: y = conv(x; W) + b, chunk by chunk of rows; col(x) is kept for backward when one chunk holds the batch */
PetscErrorCode ConvForward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W = theta, *b = conv->bias ? theta + conv->nout * conv->kg : NULL;
  const PetscInt     R = n * conv->rows, Wo = conv->im2col.out[2];

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  ConvTransposeWeights(conv, W, conv->wt);
  conv->colx = NULL; /* x may hold new values at the same address */
  for (PetscInt R0 = 0; R0 < R; R0 += conv->chunk) {
    PetscInt           R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    const PetscScalar *col = NULL;
    PetscScalar       *ys  = y + (size_t)R0 * Wo * conv->nout;

    PetscCall(ConvColumns(conv, layer->insize, R0, R1, R, x, &col));
    if (b) ConvFillBias(P, conv->nout, b, ys);
    PetscCall(ConvGemmOutput(conv, P, conv->wt, col, b ? 1.0 : 0.0, ys));
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (b ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

/* backward: dW += col(x) dy^T, db += sum_p dy; dx = col2im(W dy) */
PetscErrorCode ConvBackward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W    = theta;
  const PetscInt     nout = conv->nout, R = n * conv->rows, Wo = conv->im2col.out[2];

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (dtheta && conv->dwtransposed) PetscCall(PetscArrayzero(conv->wdt, nout * conv->kg));
  if (dx && !conv->pointwise) PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  for (PetscInt R0 = 0; R0 < R; R0 += conv->chunk) {
    PetscInt           R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    const PetscScalar *dys = dy + (size_t)R0 * Wo * nout, *col = NULL;

    if (dtheta) {
      PetscCall(ConvColumns(conv, layer->insize, R0, R1, R, x, &col));
      PetscCall(ConvGemmWeights(conv, P, col, dys, dtheta));
      if (conv->bias) {
        PetscScalar *db = dtheta + nout * conv->kg;

        for (PetscInt p = 0; p < P; p++)
          for (PetscInt o = 0; o < nout; o++) db[o] += dys[p * nout + o];
      }
    }
    if (dx) PetscCall(ConvInputCotangent_Batch(conv, layer->insize, R0, R1, P, W, dys, PETSC_FALSE, dx));
  }
  if (dtheta) ConvAddWeightsTranspose(conv, dtheta);
  if (dtheta) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->bias ? 1.0 * n * conv->pixels * nout : 0.0)));
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->pointwise ? 0.0 : 1.0 * n * conv->pixels * conv->ktot)));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(dx; W) + conv(x; dW) + db */
PetscErrorCode ConvJVP_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W    = theta;
  const PetscInt     nout = conv->nout, R = n * conv->rows, Wo = conv->im2col.out[2];

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (dtheta) ConvTransposeWeights(conv, dtheta, conv->wt);
  if (dx) ConvTransposeWeights(conv, W, conv->wt + nout * conv->kg);
  for (PetscInt R0 = 0; R0 < R; R0 += conv->chunk) {
    PetscInt     R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    PetscScalar *dys = dy + (size_t)R0 * Wo * nout, beta = 0.0;

    if (dtheta) {
      const PetscScalar *col = NULL;

      if (conv->bias) {
        ConvFillBias(P, nout, dtheta + nout * conv->kg, dys);
        beta = 1.0;
      }
      PetscCall(ConvColumns(conv, layer->insize, R0, R1, R, x, &col));
      PetscCall(ConvGemmOutput(conv, P, conv->wt, col, beta, dys));
      beta = 1.0;
    }
    if (dx) {
      const PetscScalar *col = NULL;

      if (conv->pointwise)
        col = dx + (size_t)R0 * Wo * conv->cin;
      else {
        conv->colx = NULL;
        PetscCall(ConvIm2col_Batch(conv, layer->insize, R0, R1, dx, conv->col));
        col = conv->col;
      }
      PetscCall(ConvGemmOutput(conv, P, conv->wt + nout * conv->kg, col, beta, dys));
    }
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * nout : 0.0)));
  PetscFunctionReturn(0);
}

/*
  sobackward: dWdot += col(xdot) dy^T (if dWdot and xdot), dxdot += col2im(Wdot dy) (if dxdot and Wdot). The bias
  gradient sum_p dy does not depend on (x, W): its term is zero and dWdot's bias entries are left alone.
*/
PetscErrorCode ConvSOBackward_Batch(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  const PetscInt nout = conv->nout, R = n * conv->rows, Wo = conv->im2col.out[2];
  PetscBool      doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (doW && conv->dwtransposed) PetscCall(PetscArrayzero(conv->wdt, nout * conv->kg));
  for (PetscInt R0 = 0; R0 < R; R0 += conv->chunk) {
    PetscInt           R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    const PetscScalar *dys = dy + (size_t)R0 * Wo * nout;

    if (doW) {
      const PetscScalar *col = NULL;

      if (conv->pointwise)
        col = xdot + (size_t)R0 * Wo * conv->cin;
      else {
        conv->colx = NULL; /* col(xdot) replaces col(x) */
        PetscCall(ConvIm2col_Batch(conv, layer->insize, R0, R1, xdot, conv->col));
        col = conv->col;
      }
      PetscCall(ConvGemmWeights(conv, P, col, dys, dWdot));
    }
    if (dox) PetscCall(ConvInputCotangent_Batch(conv, layer->insize, R0, R1, P, Wdot, dys, PETSC_TRUE, dxdot));
  }
  if (doW) ConvAddWeightsTranspose(conv, dWdot);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((doW ? 1 : 0) + (dox ? 1 : 0)) + (dox && !conv->pointwise ? 1.0 * n * conv->pixels * conv->ktot : 0.0)));
  PetscFunctionReturn(0);
}
