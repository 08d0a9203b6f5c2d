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
  least 1); as many whole samples as fit (at most n) when one sample does. One column buffer per thread. Reallocated
  only when a chunk needs more rows than the buffers hold (nalloc) or there are more threads, so that a smaller last
  batch or a bigger evaluation batch costs nothing.
*/
PetscErrorCode ConvGetWorkspace_Batch(Layer layer, PetscInt n)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  const PetscInt Wo = conv->im2col.out[2], nw = conv->nout * conv->kg, nthreads = PetNetThreads();
  PetscLogDouble perrow, limit = conv->maxworkspace * 1024.0 * 1024.0, fit;
  PetscInt       chunk;

  PetscFunctionBegin;
  perrow = (PetscLogDouble)Wo * ((conv->pointwise ? conv->cin : conv->ktot) + conv->nout) * sizeof(PetscScalar);
  fit    = PetscMax(1.0, PetscFloorReal(limit / perrow));
  if (fit >= conv->rows) /* whole samples */
    chunk = conv->rows * (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscFloorReal(fit / conv->rows));
  else
    chunk = (PetscInt)fit;
  if (chunk <= conv->nalloc && nthreads <= conv->nthreads) {
    if (chunk != conv->chunk) conv->colx = NULL;
    conv->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(ConvResetWorkspace_Batch(layer));
  conv->chunk    = chunk;
  conv->nalloc   = chunk;
  conv->nthreads = nthreads;
  conv->colsize  = conv->pointwise ? 0 : (size_t)chunk * Wo * conv->ktot;
  PetscCall(PetscMalloc4(nthreads * conv->colsize, &conv->col, 2 * nw, &conv->wt, PETNET_THREAD_PARTS * nw, &conv->dwpart, PETNET_THREAD_PARTS * conv->nout, &conv->dbpart));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvResetWorkspace_Batch(Layer layer)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree4(conv->col, conv->wt, conv->dwpart, conv->dbpart));
  conv->chunk    = 0;
  conv->nalloc   = 0;
  conv->nthreads = 0;
  conv->colsize  = 0;
  conv->colx     = NULL;
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
  acc_g += col_g dy_g^T, each group: acc is dW. With few taps (Kg < Cout/G, e.g. the first layer on 1-channel images)
  OpenBLAS is much faster on the transposed product dWt_g += dy_g col_g^T: then acc is dW^T per group (conv->dwpart),
  added into dW by ConvAddWeightsTranspose.
*/
static PetscErrorCode ConvGemmWeights(const LayerConv *conv, PetscInt P, const PetscScalar *col, const PetscScalar *dy, PetscScalar *acc)
{
  ConvBLAS    b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(ConvBLASSizes(conv, P, &b));
  for (PetscInt g = 0; g < conv->groups; g++) {
    if (conv->dwtransposed)
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.cog, &b.kg, &b.P, &one, dy + g * conv->cog, &b.nout, col + g * conv->kg, &b.ktot, &one, acc + g * conv->cog * conv->kg, &b.cog));
    else
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.kg, &b.cog, &b.P, &one, col + g * conv->kg, &b.ktot, dy + g * conv->cog, &b.nout, &one, acc + g * conv->cog * conv->kg, &b.kg));
  }
  PetscFunctionReturn(0);
}

/* dW += dWt^T, per group: a weight gradient accumulated transposed (conv->dwtransposed) */
static void ConvAddWeightsTranspose(const LayerConv *conv, const PetscScalar *dWt, PetscScalar *dW)
{
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
  dx += col2im(W dy) for the rows [R0, R1) (P points), the input part of backward and of sobackward, through the
  thread's column buffer buf; dx is the whole batch's, zeroed by the caller where backward overwrites it (rows of
  different chunks of a sample add into the same input points). 1x1: dx's rows are the output's, written (add false)
  or added to by the GEMM itself. The caller forgets col(x) (conv->colx) after its loop.
*/
static PetscErrorCode ConvInputCotangent_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt P, const PetscScalar *W, const PetscScalar *dy, PetscBool add, PetscScalar *buf, PetscScalar *dx)
{
  PetscFunctionBegin;
  if (conv->pointwise)
    PetscCall(ConvGemmInput(conv, P, W, dy, add ? 1.0 : 0.0, dx + (size_t)R0 * conv->im2col.out[2] * conv->cin));
  else {
    PetscCall(ConvGemmInput(conv, P, W, dy, 0.0, buf));
    PetscCall(ConvCol2imAdd_Batch(conv, insize, R0, R1, buf, dx));
  }
  PetscFunctionReturn(0);
}

/*
  col(x) for the rows [R0, R1) of a batch of R rows into the thread's buffer buf: x itself (1x1), the col already
  computed at x, or a fresh im2col. Only a chunk that is the whole batch (which runs alone, in thread 0's buffer)
  reads or records conv->colx; the callers of a loop of several chunks forget it before the loop.
*/
static PetscErrorCode ConvColumns(LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt R, const PetscScalar *x, PetscScalar *buf, const PetscScalar **col)
{
  const PetscBool whole = (PetscBool)(R0 == 0 && R1 == R && buf == conv->col);

  PetscFunctionBegin;
  if (conv->pointwise) {
    *col = x + (size_t)R0 * conv->im2col.out[2] * conv->cin;
    PetscFunctionReturn(0);
  }
  if (!whole || conv->colx != x) {
    PetscCall(ConvIm2col_Batch(conv, insize, R0, R1, x, buf));
    if (whole) conv->colx = x;
  }
  *col = buf;
  PetscFunctionReturn(0);
}

/* the column buffer of the calling thread */
static inline PetscScalar *ConvThreadBuffer(const LayerConv *conv)
{
  return conv->col + (size_t)PetNetThreadId() * conv->colsize;
}

/* y[p][o] = b[o], the start of the forward GEMM with beta = 1 */
static void ConvFillBias(PetscInt P, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  for (PetscInt p = 0; p < P; p++, y += nout)
    for (PetscInt o = 0; o < nout; o++) y[o] = b[o];
}

/* forward: y = conv(x; W) + b, the chunks of rows in parallel; col(x) is kept for backward when one chunk holds the batch */
PetscErrorCode ConvForward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W = theta, *b = conv->bias ? theta + conv->nout * conv->kg : NULL;
  PetscInt           R = n * conv->rows, Wo = conv->im2col.out[2], nchunks;
  PetscErrorCode     err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  ConvTransposeWeights(conv, W, conv->wt);
  conv->colx = NULL; /* x may hold new values at the same address */
  nchunks    = (R + conv->chunk - 1) / conv->chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt           R0 = c * conv->chunk, R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    const PetscScalar *col = NULL;
    PetscScalar       *ys  = y + (size_t)R0 * Wo * conv->nout;
    PetscErrorCode     ierr;

    ierr = ConvColumns(conv, layer->insize, R0, R1, R, x, ConvThreadBuffer(conv), &col);
    if (b) ConvFillBias(P, conv->nout, b, ys);
    if (!ierr) ierr = ConvGemmOutput(conv, P, conv->wt, col, b ? 1.0 : 0.0, ys);
    if (!ierr) ierr = LayerFusedActivate(layer, P * conv->nout, ys); /* an activation its owner fused, while the chunk is in cache */
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv forward");
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (b ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

/*
  The gradients' accumulators of part p of nparts: with one part and dW's own layout, dtheta itself (dW and db); else
  the part's buffers, zeroed here and added by ConvAddParts
*/
static void ConvPartAccumulators(const LayerConv *conv, PetscInt nparts, PetscInt p, PetscScalar *dtheta, PetscScalar **acc, PetscScalar **db)
{
  const PetscInt nw = conv->nout * conv->kg;

  if (nparts == 1 && !conv->dwtransposed) {
    *acc = dtheta;
    *db  = conv->bias ? dtheta + nw : NULL;
    return;
  }
  *acc = conv->dwpart + (size_t)p * nw;
  *db  = conv->bias ? conv->dbpart + (size_t)p * conv->nout : NULL;
  for (PetscInt i = 0; i < nw; i++) (*acc)[i] = 0.0;
  if (*db)
    for (PetscInt o = 0; o < conv->nout; o++) (*db)[o] = 0.0;
}

/* dtheta += the parts' gradients, in part order (nothing when the single part accumulated into dtheta); bias: add db */
static void ConvAddParts(const LayerConv *conv, PetscInt nparts, PetscBool bias, PetscScalar *dtheta)
{
  const PetscInt nw = conv->nout * conv->kg;

  if (nparts == 1 && !conv->dwtransposed) return;
  for (PetscInt p = 0; p < nparts; p++) {
    const PetscScalar *acc = conv->dwpart + (size_t)p * nw;

    if (conv->dwtransposed)
      ConvAddWeightsTranspose(conv, acc, dtheta);
    else
      for (PetscInt i = 0; i < nw; i++) dtheta[i] += acc[i];
    if (bias)
      for (PetscInt o = 0; o < conv->nout; o++) dtheta[nw + o] += conv->dbpart[(size_t)p * conv->nout + o];
  }
}

/* backward: dW += col(x) dy^T, db += sum_p dy; dx = col2im(W dy): parts of whole samples in parallel, chunks in order */
PetscErrorCode ConvBackward_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W    = theta;
  const PetscInt     nout = conv->nout, rows = conv->rows, R = n * rows, Wo = conv->im2col.out[2], nparts = PetNetThreadParts(n, 1);
  PetscErrorCode     err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (nparts > 1 || R > conv->chunk) conv->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt       s0, s1;
    PetscScalar   *buf = ConvThreadBuffer(conv), *acc = NULL, *db = NULL;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) ConvPartAccumulators(conv, nparts, p, dtheta, &acc, &db);
    if (dx && !conv->pointwise)
      for (size_t i = (size_t)s0 * layer->insize; i < (size_t)s1 * layer->insize; i++) dx[i] = 0.0;
    for (PetscInt R0 = s0 * rows; R0 < s1 * rows && !ierr; R0 += conv->chunk) {
      PetscInt           R1 = PetscMin(R0 + conv->chunk, s1 * rows), P = (R1 - R0) * Wo;
      const PetscScalar *dys = dy + (size_t)R0 * Wo * nout, *col = NULL;

      if (dtheta) {
        ierr = ConvColumns(conv, layer->insize, R0, R1, R, x, buf, &col);
        if (!ierr) ierr = ConvGemmWeights(conv, P, col, dys, acc);
        if (db)
          for (PetscInt q = 0; q < P; q++)
            for (PetscInt o = 0; o < nout; o++) db[o] += dys[q * nout + o];
      }
      if (dx && !ierr) ierr = ConvInputCotangent_Batch(conv, layer->insize, R0, R1, P, W, dys, PETSC_FALSE, buf, dx);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv backward");
  if (dx && !conv->pointwise) conv->colx = NULL; /* the columns now hold W dy, not col(x) */
  if (dtheta) ConvAddParts(conv, nparts, conv->bias, dtheta);
  if (dtheta) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->bias ? 1.0 * n * conv->pixels * nout : 0.0)));
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->pointwise ? 0.0 : 1.0 * n * conv->pixels * conv->ktot)));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(dx; W) + conv(x; dW) + db, the chunks in parallel */
PetscErrorCode ConvJVP_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const PetscScalar *W    = theta;
  const PetscInt     nout = conv->nout, R = n * conv->rows, Wo = conv->im2col.out[2];
  PetscInt           nchunks;
  PetscErrorCode     err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (dtheta) ConvTransposeWeights(conv, dtheta, conv->wt);
  if (dx) ConvTransposeWeights(conv, W, conv->wt + nout * conv->kg);
  nchunks = (R + conv->chunk - 1) / conv->chunk;
  if (nchunks > 1) conv->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt       R0 = c * conv->chunk, R1 = PetscMin(R0 + conv->chunk, R), P = (R1 - R0) * Wo;
    PetscScalar   *dys = dy + (size_t)R0 * Wo * nout, beta = 0.0, *buf = ConvThreadBuffer(conv);
    PetscErrorCode ierr = 0;

    if (dtheta) {
      const PetscScalar *col = NULL;

      if (conv->bias) {
        ConvFillBias(P, nout, dtheta + nout * conv->kg, dys);
        beta = 1.0;
      }
      ierr = ConvColumns(conv, layer->insize, R0, R1, R, x, buf, &col);
      if (!ierr) ierr = ConvGemmOutput(conv, P, conv->wt, col, beta, dys);
      beta = 1.0;
    }
    if (dx && !ierr) {
      const PetscScalar *col = buf;

      if (conv->pointwise)
        col = dx + (size_t)R0 * Wo * conv->cin;
      else
        ierr = ConvIm2col_Batch(conv, layer->insize, R0, R1, dx, buf);
      if (!ierr) ierr = ConvGemmOutput(conv, P, conv->wt + nout * conv->kg, col, beta, dys);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv jvp");
  if (dx && !conv->pointwise) conv->colx = NULL; /* the columns now hold col(dx) */
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * nout : 0.0)));
  PetscFunctionReturn(0);
}

/*
  sobackward: dWdot += col(xdot) dy^T (if dWdot and xdot), dxdot += col2im(Wdot dy) (if dxdot and Wdot), parts of
  whole samples in parallel as in backward. The bias gradient sum_p dy does not depend on (x, W): its term is zero and
  dWdot's bias entries are left alone.
*/
PetscErrorCode ConvSOBackward_Batch(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  const PetscInt nout = conv->nout, rows = conv->rows, Wo = conv->im2col.out[2], nparts = PetNetThreadParts(n, 1);
  PetscBool      doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace_Batch(layer, n));
  if (!conv->pointwise) conv->colx = NULL; /* col(xdot) and W dy replace col(x) */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt       s0, s1;
    PetscScalar   *buf = ConvThreadBuffer(conv), *acc = NULL, *db = NULL;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (doW) ConvPartAccumulators(conv, nparts, p, dWdot, &acc, &db);
    for (PetscInt R0 = s0 * rows; R0 < s1 * rows && !ierr; R0 += conv->chunk) {
      PetscInt           R1 = PetscMin(R0 + conv->chunk, s1 * rows), P = (R1 - R0) * Wo;
      const PetscScalar *dys = dy + (size_t)R0 * Wo * nout;

      if (doW) {
        const PetscScalar *col = buf;

        if (conv->pointwise)
          col = xdot + (size_t)R0 * Wo * conv->cin;
        else
          ierr = ConvIm2col_Batch(conv, layer->insize, R0, R1, xdot, buf);
        if (!ierr) ierr = ConvGemmWeights(conv, P, col, dys, acc);
      }
      if (dox && !ierr) ierr = ConvInputCotangent_Batch(conv, layer->insize, R0, R1, P, Wdot, dys, PETSC_TRUE, buf, dxdot);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv sobackward");
  if (doW) ConvAddParts(conv, nparts, PETSC_FALSE, dWdot);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((doW ? 1 : 0) + (dox ? 1 : 0)) + (dox && !conv->pointwise ? 1.0 * n * conv->pixels * conv->ktot : 0.0)));
  PetscFunctionReturn(0);
}
