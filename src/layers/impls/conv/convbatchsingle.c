/*
  Batch mode of conv2d and conv3d in single precision: im2col + sgemm on float values, with the parameters in double
  (the contract of forwardsingle, backwardsingle and jvpsingle in layerimpl.h). The chunks of output rows, the parts of
  the batch and the GEMMs are those of the double kernels (convbatch.c; layouts and formulas in conv.h), with

    forward   w = float(W), b_f = float(b) (kept in conv->sgl for backward and jvp at the same point),
              y_g = Wt_g col_g (+ b_f)                                    sgemm('N','N')
              y = f(y) on the chunk, for an activation f its owner fused (LayerFusedActivateSingle())
    backward  dWc_g = col_g dy_g^T (one chunk, float)                      sgemm('N','T') (transposed when dwtransposed)
              dWpart += dWc (double), dbpart += sum_p dy (double);  dtheta += the parts in part order (double)
              dcol_g = W_g dy_g ;  dx = col2im(dcol)                       sgemm('N','N'), then col2im in float
    jvp       dy_g = Wt_g col(dx)_g + float(dW)^T_g col(x)_g (+ float(db))

  With few taps Cin (ConvDirectSingle(): one group, taps Cin <= -conv<N>d_single_direct_max_k) forward's y and
  backward's dWc (as dW^T, and with it the chunk's db in float) come from the direct kernels of convdirectsingle.c on
  the same chunks instead of im2col + sgemm; the fused activation, the double accumulation and dx are as above.

  The float rounding of a weight-gradient sum is that of one chunk (at most -conv<N>d_max_workspace MB of columns);
  the chunks, parts and ranks add in double. The results are the same bits for any number of threads (parts of whole
  samples, chunks in order within a part, parts added in part order).
*/
#include "conv.h"
#include <cblas.h>

/* C = alpha op(A) op(B) + beta C in float, column-major (BLAS's sgemm through CBLAS) */
static PetscErrorCode ConvSgemm(const char *ta, const char *tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, const float *B, PetscInt ldb, float beta, float *C, PetscInt ldc)
{
  PetscBLASInt bm, bn, bk, blda, bldb, bldc;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(m, &bm));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(k, &bk));
  PetscCall(PetscBLASIntCast(lda, &blda));
  PetscCall(PetscBLASIntCast(ldb, &bldb));
  PetscCall(PetscBLASIntCast(ldc, &bldc));
  cblas_sgemm(CblasColMajor, ta[0] == 'T' ? CblasTrans : CblasNoTrans, tb[0] == 'T' ? CblasTrans : CblasNoTrans, bm, bn, bk, 1.0f, A, blda, B, bldb, beta, C, bldc);
  PetscFunctionReturn(0);
}

PetscErrorCode ConvResetSingle_Batch(Layer layer)
{
  ConvSingle *s = &((LayerConv *)layer->data)->sgl;

  PetscFunctionBegin;
  PetscCall(PetscFree2(s->col, s->dwchunk));
  PetscCall(PetscFree2(s->dwpart, s->dbpart));
  PetscCall(PetscFree(s->w));
  PetscCall(PetscMemzero(s, sizeof(*s)));
  PetscFunctionReturn(0);
}

/* The float workspace for batches of n samples, as ConvGetWorkspace_Batch() (chunks of rows fitting the workspace) */
static PetscErrorCode ConvGetWorkspaceSingle(Layer layer, PetscInt n)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  ConvSingle    *s    = &conv->sgl;
  const PetscInt Wo = conv->im2col.out[2], nw = conv->nout * conv->kg, nthreads = PetNetThreads();
  PetscLogDouble perrow, limit = conv->maxworkspace * 1024.0 * 1024.0, fit;
  PetscInt       chunk;

  PetscFunctionBegin;
  if (!s->w) { /* the parameters in float: w, b, wt, dwt, db */
    PetscCall(PetscMalloc1(3 * nw + 2 * conv->nout, &s->w));
    s->b   = s->w + nw;
    s->wt  = s->b + conv->nout;
    s->dwt = s->wt + nw;
    s->db  = s->dwt + nw;
  }
  perrow = (PetscLogDouble)Wo * ((conv->pointwise ? conv->cin : conv->ktot) + conv->nout) * sizeof(float);
  fit    = PetscMax(1.0, PetscFloorReal(limit / perrow));
  if (fit >= conv->rows)
    chunk = conv->rows * (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscFloorReal(fit / conv->rows));
  else
    chunk = (PetscInt)fit;
  if (chunk <= s->nalloc && nthreads <= s->nthreads) {
    if (chunk != s->chunk) s->colx = NULL;
    s->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscFree2(s->col, s->dwchunk));
  PetscCall(PetscFree2(s->dwpart, s->dbpart));
  s->chunk    = chunk;
  s->nalloc   = chunk;
  s->nthreads = nthreads;
  s->colsize  = conv->pointwise ? 0 : (size_t)chunk * Wo * conv->ktot;
  s->colx     = NULL;
  PetscCall(PetscMalloc2(nthreads * s->colsize, &s->col, (size_t)nthreads * (nw + conv->nout), &s->dwchunk));
  PetscCall(PetscMalloc2((size_t)PETNET_THREAD_PARTS * nw, &s->dwpart, (size_t)PETNET_THREAD_PARTS * conv->nout, &s->dbpart));
  PetscFunctionReturn(0);
}

/* Wt_g = W_g^T per group, [G][Kg][Cout/G] (as ConvTransposeWeights), from double weights W [Cout][Kg] */
static void ConvTransposeWeightsSingle(const LayerConv *conv, const PetscScalar *W, float *Wt)
{
  for (PetscInt g = 0; g < conv->groups; g++, W += conv->cog * conv->kg, Wt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) Wt[o + conv->cog * j] = (float)W[o * conv->kg + j];
}

/* col = im2col(x) of the batch's output rows [R0, R1) (as ConvIm2col_Batch) */
static PetscErrorCode ConvIm2colSingle_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const float *x, float *col)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  PetscFunctionBegin;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    PetscCall(ConvIm2colRowsSingle(&conv->im2col, r0, r1, x + (size_t)s * insize, col));
    col += (r1 - r0) * rowsize;
  }
  PetscFunctionReturn(0);
}

/* dx += col2im(dcol) of the rows [R0, R1) */
static PetscErrorCode ConvCol2imAddSingle_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const float *col, float *dx)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  PetscFunctionBegin;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    PetscCall(ConvCol2imRowsAddSingle(&conv->im2col, r0, r1, col, dx + (size_t)s * insize));
    col += (r1 - r0) * rowsize;
  }
  PetscFunctionReturn(0);
}

/* col(x) of the rows [R0, R1) in the thread's buffer buf (x itself for 1x1; kept from forward when one chunk is the batch) */
static PetscErrorCode ConvColumnsSingle(LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt R, const float *x, float *buf, const float **col)
{
  ConvSingle     *s     = &conv->sgl;
  const PetscBool whole = (PetscBool)(R0 == 0 && R1 == R && buf == s->col);

  PetscFunctionBegin;
  if (conv->pointwise) {
    *col = x + (size_t)R0 * conv->im2col.out[2] * conv->cin;
    PetscFunctionReturn(0);
  }
  if (!whole || s->colx != x) {
    PetscCall(ConvIm2colSingle_Batch(conv, insize, R0, R1, x, buf));
    if (whole) s->colx = x;
  }
  *col = buf;
  PetscFunctionReturn(0);
}

static inline float *ConvThreadBufferSingle(const LayerConv *conv)
{
  return conv->sgl.col + (size_t)PetNetThreadId() * conv->sgl.colsize;
}

/* y_g = Wt_g col_g + beta y_g, each group (as ConvGemmOutput) */
static PetscErrorCode ConvGemmOutputSingle(const LayerConv *conv, PetscInt P, const float *Wt, const float *col, float beta, float *y)
{
  PetscFunctionBegin;
  for (PetscInt g = 0; g < conv->groups; g++) PetscCall(ConvSgemm("N", "N", conv->cog, P, conv->kg, Wt + g * conv->cog * conv->kg, conv->cog, col + g * conv->kg, conv->ktot, beta, y + g * conv->cog, conv->nout));
  PetscFunctionReturn(0);
}

/* y[p][o] = b[o] */
static void ConvFillBiasSingle(PetscInt P, PetscInt nout, const float *b, float *y)
{
  for (PetscInt p = 0; p < P; p++, y += nout)
    for (PetscInt o = 0; o < nout; o++) y[o] = b[o];
}

/* forward: y = conv(x; W) + b in float; keeps float(W), float(b) for backward and jvp */
PetscErrorCode ConvForwardSingle_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  LayerConv      *conv = (LayerConv *)layer->data;
  ConvSingle     *s    = &conv->sgl;
  const PetscInt  nw = conv->nout * conv->kg, R = n * conv->rows, Wo = conv->im2col.out[2];
  const PetscBool direct = ConvDirectSingle(conv);
  PetscInt        nchunks;
  PetscErrorCode  err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspaceSingle(layer, n));
  for (PetscInt i = 0; i < nw; i++) s->w[i] = (float)theta[i];
  for (PetscInt o = 0; o < conv->nout; o++) s->b[o] = conv->bias ? (float)theta[nw + o] : 0.0f;
  ConvTransposeWeightsSingle(conv, theta, s->wt);
  s->wset = PETSC_TRUE;
  s->colx = NULL; /* x may hold new values at the same address */
  if (!n) PetscFunctionReturn(0);
  nchunks = (R + s->chunk - 1) / s->chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt       R0 = c * s->chunk, R1 = PetscMin(R0 + s->chunk, R), P = (R1 - R0) * Wo;
    const float   *col = NULL;
    float         *ys  = y + (size_t)R0 * Wo * conv->nout;
    PetscErrorCode ierr;

    if (direct)
      ierr = ConvDirectOutputSingle_Batch(conv, layer->insize, R0, R1, x, s->wt, s->b, ys);
    else {
      ierr = ConvColumnsSingle(conv, layer->insize, R0, R1, R, x, ConvThreadBufferSingle(conv), &col);
      if (conv->bias) ConvFillBiasSingle(P, conv->nout, s->b, ys);
      if (!ierr) ierr = ConvGemmOutputSingle(conv, P, s->wt, col, conv->bias ? 1.0f : 0.0f, ys);
    }
    if (!ierr) ierr = LayerFusedActivateSingle(layer, P * conv->nout, ys); /* an activation its owner fused, while the chunk is in cache */
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv forward (single)");
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (conv->bias ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

static PetscErrorCode ConvCheckWeightsSingle(Layer layer, const char *op)
{
  PetscFunctionBegin;
  PetscCheck(((LayerConv *)layer->data)->sgl.wset, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT ": single-precision %s before any single-precision forward pass: call LayerForwardSingle() first, at the same point",
             ((PetscObject)layer)->type_name, layer->index, op);
  PetscFunctionReturn(0);
}

/*
  dWc = col dy^T of one chunk (float, overwritten) in dW's layout, or dW^T per group when dwtransposed (as
  ConvGemmWeights, with beta 0)
*/
static PetscErrorCode ConvGemmWeightsSingle(const LayerConv *conv, PetscInt P, const float *col, const float *dy, float *dWc)
{
  PetscFunctionBegin;
  for (PetscInt g = 0; g < conv->groups; g++) {
    if (conv->dwtransposed)
      PetscCall(ConvSgemm("N", "T", conv->cog, conv->kg, P, dy + g * conv->cog, conv->nout, col + g * conv->kg, conv->ktot, 0.0f, dWc + g * conv->cog * conv->kg, conv->cog));
    else
      PetscCall(ConvSgemm("N", "T", conv->kg, conv->cog, P, col + g * conv->kg, conv->ktot, dy + g * conv->cog, conv->nout, 0.0f, dWc + g * conv->cog * conv->kg, conv->kg));
  }
  PetscFunctionReturn(0);
}

/* dtheta += the parts' gradients in part order (dW^T per group turned back when dwtransposed; db if bias) */
static void ConvAddPartsSingle(const LayerConv *conv, PetscInt nparts, PetscScalar *dtheta)
{
  const PetscInt nw = conv->nout * conv->kg, kg = conv->kg, cog = conv->cog;

  for (PetscInt p = 0; p < nparts; p++) {
    const PetscScalar *acc = conv->sgl.dwpart + (size_t)p * nw;

    if (conv->dwtransposed) {
      for (PetscInt g = 0; g < conv->groups; g++)
        for (PetscInt o = 0; o < cog; o++)
          for (PetscInt j = 0; j < kg; j++) dtheta[(g * cog + o) * kg + j] += acc[g * cog * kg + o + cog * j];
    } else
      for (PetscInt i = 0; i < nw; i++) dtheta[i] += acc[i];
    if (conv->bias)
      for (PetscInt o = 0; o < conv->nout; o++) dtheta[nw + o] += conv->sgl.dbpart[(size_t)p * conv->nout + o];
  }
}

/* acc += the direct kernel's chunk gradient dwt [Kg][Cout] (G = 1), in acc's layout: dW^T when dwtransposed, else dW */
static void ConvAddDirectWeightsSingle(const LayerConv *conv, const float *dwt, PetscScalar *acc)
{
  const PetscInt nw = conv->nout * conv->kg, kg = conv->kg, nout = conv->nout;

  if (conv->dwtransposed)
    for (PetscInt i = 0; i < nw; i++) acc[i] += dwt[i];
  else
    for (PetscInt o = 0; o < nout; o++)
      for (PetscInt j = 0; j < kg; j++) acc[o * kg + j] += dwt[j * nout + o];
}

/* backward: dW += col(x) dy^T, db += sum dy (both in double, over float chunk products); dx = col2im(W dy) in float */
PetscErrorCode ConvBackwardSingle_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  LayerConv      *conv = (LayerConv *)layer->data;
  ConvSingle     *s    = &conv->sgl;
  const PetscInt  nout = conv->nout, nw = nout * conv->kg, rows = conv->rows, R = n * rows, Wo = conv->im2col.out[2], nparts = PetNetThreadParts(n, 1);
  const PetscBool direct = ConvDirectSingle(conv);
  PetscErrorCode  err    = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(ConvGetWorkspaceSingle(layer, n));
  if (dx) PetscCall(ConvCheckWeightsSingle(layer, "backward"));
  if (nparts > 1 || R > s->chunk) s->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt       s0, s1;
    float         *buf = ConvThreadBufferSingle(conv), *dwc = s->dwchunk + (size_t)PetNetThreadId() * (nw + nout), *dbc = dwc + nw;
    PetscScalar   *acc = s->dwpart + (size_t)p * nw, *db = s->dbpart + (size_t)p * nout;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) {
      for (PetscInt i = 0; i < nw; i++) acc[i] = 0.0;
      for (PetscInt o = 0; o < nout; o++) db[o] = 0.0;
    }
    if (dx && !conv->pointwise)
      for (size_t i = (size_t)s0 * layer->insize; i < (size_t)s1 * layer->insize; i++) dx[i] = 0.0f;
    for (PetscInt R0 = s0 * rows; R0 < s1 * rows && !ierr; R0 += s->chunk) {
      PetscInt     R1 = PetscMin(R0 + s->chunk, s1 * rows), P = (R1 - R0) * Wo;
      const float *dys = dy + (size_t)R0 * Wo * nout, *col = NULL;

      if (dtheta && direct) { /* dW^T and db of the chunk in float, added in double */
        ierr = ConvDirectWeightsSingle_Batch(conv, layer->insize, R0, R1, x, dys, dwc, conv->bias ? dbc : NULL);
        if (!ierr) ConvAddDirectWeightsSingle(conv, dwc, acc);
        if (!ierr && conv->bias)
          for (PetscInt o = 0; o < nout; o++) db[o] += dbc[o];
      } else if (dtheta) {
        ierr = ConvColumnsSingle(conv, layer->insize, R0, R1, R, x, buf, &col);
        if (!ierr) ierr = ConvGemmWeightsSingle(conv, P, col, dys, dwc);
        if (!ierr)
          for (PetscInt i = 0; i < nw; i++) acc[i] += dwc[i];
        if (conv->bias)
          for (PetscInt q = 0; q < P; q++)
            for (PetscInt o = 0; o < nout; o++) db[o] += dys[q * nout + o];
      }
      if (dx && !ierr) {
        float *dcol = conv->pointwise ? dx + (size_t)R0 * Wo * conv->cin : buf;

        for (PetscInt g = 0; g < conv->groups && !ierr; g++) ierr = ConvSgemm("N", "N", conv->kg, P, conv->cog, s->w + g * conv->cog * conv->kg, conv->kg, dys + g * conv->cog, nout, 0.0f, dcol + g * conv->kg, conv->ktot);
        if (!ierr && !conv->pointwise) ierr = ConvCol2imAddSingle_Batch(conv, layer->insize, R0, R1, buf, dx);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv backward (single)");
  if (dx && !conv->pointwise) s->colx = NULL; /* the columns now hold W dy */
  if (dtheta) ConvAddPartsSingle(conv, nparts, dtheta);
  if (dtheta) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->bias ? 1.0 * n * conv->pixels * nout : 0.0)));
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->pointwise ? 0.0 : 1.0 * n * conv->pixels * conv->ktot)));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(dx; W) + conv(x; dW) + db in float (dW, db rounded to float) */
PetscErrorCode ConvJVPSingle_Batch(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  ConvSingle    *s    = &conv->sgl;
  const PetscInt nout = conv->nout, nw = nout * conv->kg, R = n * conv->rows, Wo = conv->im2col.out[2];
  PetscInt       nchunks;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(ConvGetWorkspaceSingle(layer, n));
  if (dx) PetscCall(ConvCheckWeightsSingle(layer, "jvp"));
  if (dtheta) {
    ConvTransposeWeightsSingle(conv, dtheta, s->dwt);
    for (PetscInt o = 0; o < nout; o++) s->db[o] = conv->bias ? (float)dtheta[nw + o] : 0.0f;
  }
  nchunks = (R + s->chunk - 1) / s->chunk;
  if (nchunks > 1) s->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt       R0 = c * s->chunk, R1 = PetscMin(R0 + s->chunk, R), P = (R1 - R0) * Wo;
    float         *dys = dy + (size_t)R0 * Wo * nout, beta = 0.0f, *buf = ConvThreadBufferSingle(conv);
    PetscErrorCode ierr = 0;

    if (dtheta) {
      const float *col = NULL;

      if (conv->bias) {
        ConvFillBiasSingle(P, nout, s->db, dys);
        beta = 1.0f;
      }
      ierr = ConvColumnsSingle(conv, layer->insize, R0, R1, R, x, buf, &col);
      if (!ierr) ierr = ConvGemmOutputSingle(conv, P, s->dwt, col, beta, dys);
      beta = 1.0f;
    }
    if (dx && !ierr) {
      const float *col = buf;

      if (conv->pointwise)
        col = dx + (size_t)R0 * Wo * conv->cin;
      else
        ierr = ConvIm2colSingle_Batch(conv, layer->insize, R0, R1, dx, buf);
      if (!ierr) ierr = ConvGemmOutputSingle(conv, P, s->wt, col, beta, dys);
    }
    if (!dx && !dtheta)
      for (size_t i = 0; i < (size_t)P * nout; i++) dys[i] = 0.0f;
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv jvp (single)");
  if (dx && !conv->pointwise) s->colx = NULL; /* the columns now hold col(dx) */
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * nout : 0.0)));
  PetscFunctionReturn(0);
}
