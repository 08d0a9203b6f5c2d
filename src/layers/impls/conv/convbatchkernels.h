/*
  Batch mode of conv2d and conv3d on one element type (layouts and formulas in conv.h, the chunks and parts in
  convbatch.c), included once per type by convbatch.c:
    CONV_T                the values' type: PetscScalar, or float (a Net at -net_precision single or bfloat16)
    CONV_NAME(f)          f itself, or fSingle
    CONV_BATCH_NAME(f)    f_Batch, or fSingle_Batch (the entries conv.h declares)
    CONV_WORK(conv)       the type's workspace, &conv->dbl or &conv->sgl (ConvWork, ConvWorkSingle)
    CONV_DIRECT           1: the direct kernels of convdirectsingle.c where ConvDirectSingle() says (float only)
  and, from convbatch.c, the type's CONV_NAME(ConvParameters)() and CONV_NAME(ConvDirection)(): the weights a pass
  uses (theta itself, or rounded to float by forward and kept for backward and jvp at the same point) and jvp's
  direction (W^T of dtheta per group, in the workspace's dwt, and db).
  The parameters and their gradient stay double: the weight gradient of each chunk goes through LayerGemm()'s
  accumulation into double (in place on PetscScalar), the bias gradient is summed in double.
*/

/* The workspace for batches of n samples (convbatch.c: chunks of rows fitting -conv<N>d_max_workspace) */
static PetscErrorCode CONV_NAME(ConvGetWorkspace)(Layer layer, PetscInt n)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  CONV_WORK_T   *s    = CONV_WORK(conv);
  const PetscInt Wo = conv->im2col.out[2], nw = conv->nout * conv->kg, nthreads = PetNetThreads();
  PetscInt       chunk;

  PetscFunctionBegin;
  if (!s->w) { /* the parameters in this type: w, b, wt, dwt, db */
    PetscCall(PetscMalloc1(3 * nw + 2 * conv->nout, &s->w));
    s->b   = s->w + nw;
    s->wt  = s->b + conv->nout;
    s->dwt = s->wt + nw;
    s->db  = s->dwt + nw;
  }
  chunk = ConvChunkRows(conv, n, sizeof(CONV_T));
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

PetscErrorCode CONV_BATCH_NAME(ConvResetWorkspace)(Layer layer)
{
  CONV_WORK_T *s = CONV_WORK((LayerConv *)layer->data);

  PetscFunctionBegin;
  PetscCall(PetscFree2(s->col, s->dwchunk));
  PetscCall(PetscFree2(s->dwpart, s->dbpart));
  PetscCall(PetscFree(s->w));
  PetscCall(PetscMemzero(s, sizeof(*s)));
  PetscFunctionReturn(0);
}

/* Wt_g = W_g^T for each group: Wt [G][Kg][Cout/G] (column-major Cout/G x Kg, ld Cout/G), so that forward is an 'N','N' GEMM */
static void CONV_NAME(ConvTransposeWeights)(const LayerConv *conv, const PetscScalar *W, CONV_T *Wt)
{
  for (PetscInt g = 0; g < conv->groups; g++, W += conv->cog * conv->kg, Wt += conv->cog * conv->kg)
    for (PetscInt o = 0; o < conv->cog; o++)
      for (PetscInt j = 0; j < conv->kg; j++) Wt[o + conv->cog * j] = (CONV_T)W[o * conv->kg + j];
}

/* col = im2col(x) of the batch's output rows [R0, R1): col [(R1 - R0) Wo][G Kg] (convim2col.c) */
static PetscErrorCode CONV_NAME(ConvIm2col_Batch)(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const CONV_T *x, CONV_T *col)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);
    PetscErrorCode ierr = CONV_NAME(ConvIm2colRows)(&conv->im2col, r0, r1, x + (size_t)s * insize, col);

    if (ierr) return ierr;
    col += (r1 - r0) * rowsize;
  }
  return 0;
}

/* dx += col2im(dcol) of the batch's output rows [R0, R1): the adjoint of ConvIm2col_Batch */
static PetscErrorCode CONV_NAME(ConvCol2imAdd_Batch)(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const CONV_T *col, CONV_T *dx)
{
  const PetscInt rows    = conv->rows;
  const size_t   rowsize = (size_t)conv->im2col.out[2] * conv->ktot;

  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);
    PetscErrorCode ierr = CONV_NAME(ConvCol2imRowsAdd)(&conv->im2col, r0, r1, col, dx + (size_t)s * insize);

    if (ierr) return ierr;
    col += (r1 - r0) * rowsize;
  }
  return 0;
}

/* y_g = Wt_g col_g + beta y_g, each group: y is [P][Cout], col [P][G Kg] */
static PetscErrorCode CONV_NAME(ConvGemmOutput)(const LayerConv *conv, PetscInt P, const CONV_T *Wt, const CONV_T *col, CONV_T beta, CONV_T *y)
{
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < conv->groups && !ierr; g++) ierr = CONV_NAME(LayerGemm)(PETSC_FALSE, 'N', 'N', conv->cog, P, conv->kg, Wt + g * conv->cog * conv->kg, conv->cog, col + g * conv->kg, conv->ktot, beta, y + g * conv->cog, conv->nout, NULL);
  return ierr;
}

/*
  acc_g += col_g dy_g^T, each group, in double: acc is dW. With few taps (Kg < Cout/G, e.g. the first layer on 1-channel
  images) OpenBLAS is much faster on the transposed product dWt_g += dy_g col_g^T: then acc is dW^T per group
  (ConvAddParts() turns it back). dwc: the chunk's product in this type (LayerGemm()'s accumulation into double).
*/
static PetscErrorCode CONV_NAME(ConvGemmWeights)(const LayerConv *conv, PetscInt P, const CONV_T *col, const CONV_T *dy, CONV_T *dwc, PetscScalar *acc)
{
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < conv->groups && !ierr; g++) {
    const size_t off                = (size_t)g * conv->cog * conv->kg;
    CONV_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, acc + off};

    if (conv->dwtransposed)
      ierr = CONV_NAME(LayerGemm)(PETSC_FALSE, 'N', 'T', conv->cog, conv->kg, P, dy + g * conv->cog, conv->nout, col + g * conv->kg, conv->ktot, 0, dwc + off, conv->cog, &ep);
    else
      ierr = CONV_NAME(LayerGemm)(PETSC_FALSE, 'N', 'T', conv->kg, conv->cog, P, col + g * conv->kg, conv->ktot, dy + g * conv->cog, conv->nout, 0, dwc + off, conv->kg, &ep);
  }
  return ierr;
}

/*
  dx += col2im(W dy) for the rows [R0, R1) (P points), the input part of backward and of sobackward, through the
  thread's column buffer buf; dx is the whole batch's, zeroed by the caller where backward overwrites it (rows of
  different chunks of a sample add into the same input points). 1x1: dx's rows are the output's, written (add false)
  or added to by the GEMM itself. The caller forgets col(x) (colx) after its loop.
*/
static PetscErrorCode CONV_NAME(ConvInputCotangent_Batch)(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt P, const CONV_T *W, const CONV_T *dy, PetscBool add, CONV_T *buf, CONV_T *dx)
{
  CONV_T        *dcol = conv->pointwise ? dx + (size_t)R0 * conv->im2col.out[2] * conv->cin : buf;
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < conv->groups && !ierr; g++)
    ierr = CONV_NAME(LayerGemm)(PETSC_FALSE, 'N', 'N', conv->kg, P, conv->cog, W + g * conv->cog * conv->kg, conv->kg, dy + g * conv->cog, conv->nout, conv->pointwise && add ? 1 : 0, dcol + g * conv->kg, conv->ktot, NULL);
  if (!ierr && !conv->pointwise) ierr = CONV_NAME(ConvCol2imAdd_Batch)(conv, insize, R0, R1, buf, dx);
  return ierr;
}

/*
  col(x) for the rows [R0, R1) of a batch of R rows into the thread's buffer buf: x itself (1x1), the col already
  computed at x, or a fresh im2col. Only a chunk that is the whole batch (which runs alone, in thread 0's buffer)
  reads or records colx; the callers of a loop of several chunks forget it before the loop.
*/
static PetscErrorCode CONV_NAME(ConvColumns)(LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, PetscInt R, const CONV_T *x, CONV_T *buf, const CONV_T **col)
{
  CONV_WORK_T    *s     = CONV_WORK(conv);
  const PetscBool whole = (PetscBool)(R0 == 0 && R1 == R && buf == s->col);
  PetscErrorCode  ierr  = 0;

  if (conv->pointwise) {
    *col = x + (size_t)R0 * conv->im2col.out[2] * conv->cin;
    return 0;
  }
  if (!whole || s->colx != x) {
    ierr = CONV_NAME(ConvIm2col_Batch)(conv, insize, R0, R1, x, buf);
    if (whole) s->colx = x;
  }
  *col = buf;
  return ierr;
}

/* the column buffer of the calling thread */
static inline CONV_T *CONV_NAME(ConvThreadBuffer)(const LayerConv *conv)
{
  return CONV_WORK(conv)->col + (size_t)PetNetThreadId() * CONV_WORK(conv)->colsize;
}

/* y[p][o] = b[o], the start of the forward GEMM with beta = 1 */
static void CONV_NAME(ConvFillBias)(PetscInt P, PetscInt nout, const CONV_T *b, CONV_T *y)
{
  for (PetscInt p = 0; p < P; p++, y += nout)
    for (PetscInt o = 0; o < nout; o++) y[o] = b[o];
}

/* forward: y = f(conv(x; W) + b) with f = act (an activation passed by the caller; NULL: none), the chunks of rows in
   parallel; col(x) is kept for backward when one chunk holds the batch */
PetscErrorCode CONV_BATCH_NAME(ConvForwardAct)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const CONV_T *x, CONV_T *y)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  CONV_WORK_T   *s    = CONV_WORK(conv);
  const PetscInt R = n * conv->rows, Wo = conv->im2col.out[2];
  const CONV_T  *W, *b;
  PetscInt       nchunks;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  PetscCall(CONV_NAME(ConvGetWorkspace)(layer, n));
  PetscCall(CONV_NAME(ConvParameters)(layer, theta, "forward", &W));
  b       = conv->bias ? W + conv->nout * conv->kg : NULL;
  s->colx = NULL; /* x may hold new values at the same address */
  if (!n) PetscFunctionReturn(0);
  nchunks = (R + s->chunk - 1) / s->chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt       R0 = c * s->chunk, R1 = PetscMin(R0 + s->chunk, R), P = (R1 - R0) * Wo;
    const CONV_T  *col = NULL;
    CONV_T        *ys  = y + (size_t)R0 * Wo * conv->nout;
    PetscErrorCode ierr;

#if CONV_DIRECT
    if (ConvDirectSingle(conv))
      ierr = ConvDirectOutputSingle_Batch(conv, layer->insize, R0, R1, x, s->wt, s->b, ys);
    else
#endif
    {
      ierr = CONV_NAME(ConvColumns)(conv, layer->insize, R0, R1, R, x, CONV_NAME(ConvThreadBuffer)(conv), &col);
      if (b) CONV_NAME(ConvFillBias)(P, conv->nout, b, ys);
      if (!ierr) ierr = CONV_NAME(ConvGemmOutput)(conv, P, s->wt, col, b ? 1 : 0, ys);
    }
    if (!ierr) ierr = CONV_NAME(LayerActivate)(act, P * conv->nout, ys); /* the activation, while the chunk is in cache */
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv forward");
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (b ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

#if CONV_DIRECT
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
#endif

/* backward: dW += col(x) dy^T, db += sum_p dy (in double); dx = col2im(W dy): parts of whole samples in parallel, chunks in order */
PetscErrorCode CONV_BATCH_NAME(ConvForward)(Layer layer, PetscInt n, const PetscScalar *theta, const CONV_T *x, CONV_T *y)
{
  PetscFunctionBegin;
  PetscCall(CONV_BATCH_NAME(ConvForwardAct)(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

PetscErrorCode CONV_BATCH_NAME(ConvBackward)(Layer layer, PetscInt n, const PetscScalar *theta, const CONV_T *x, const CONV_T *y, const CONV_T *dy, CONV_T *dx, PetscScalar *dtheta)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  CONV_WORK_T   *s    = CONV_WORK(conv);
  const PetscInt nout = conv->nout, nw = nout * conv->kg, rows = conv->rows, R = n * rows, Wo = conv->im2col.out[2], nparts = PetNetThreadParts(n, 1);
  const CONV_T  *W   = NULL;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(CONV_NAME(ConvGetWorkspace)(layer, n));
  if (dx) PetscCall(CONV_NAME(ConvParameters)(layer, theta, "backward", &W));
  if (nparts > 1 || R > s->chunk) s->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt       s0, s1;
    CONV_T        *buf = CONV_NAME(ConvThreadBuffer)(conv), *dwc = s->dwchunk + (size_t)PetNetThreadId() * (nw + nout);
    PetscScalar   *acc = NULL, *db = NULL;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) ConvPartAccumulators(conv, nparts, p, s->dwpart, s->dbpart, dtheta, &acc, &db);
    if (dx && !conv->pointwise)
      for (size_t i = (size_t)s0 * layer->insize; i < (size_t)s1 * layer->insize; i++) dx[i] = 0;
    for (PetscInt R0 = s0 * rows; R0 < s1 * rows && !ierr; R0 += s->chunk) {
      PetscInt      R1 = PetscMin(R0 + s->chunk, s1 * rows), P = (R1 - R0) * Wo;
      const CONV_T *dys = dy + (size_t)R0 * Wo * nout, *col = NULL;

#if CONV_DIRECT
      if (dtheta && ConvDirectSingle(conv)) { /* dW^T and db of the chunk in float, added in double */
        float *dbc = dwc + nw;

        ierr = ConvDirectWeightsSingle_Batch(conv, layer->insize, R0, R1, x, dys, dwc, db ? dbc : NULL);
        if (!ierr) ConvAddDirectWeightsSingle(conv, dwc, acc);
        if (!ierr && db)
          for (PetscInt o = 0; o < nout; o++) db[o] += dbc[o];
      } else
#endif
          if (dtheta) {
        ierr = CONV_NAME(ConvColumns)(conv, layer->insize, R0, R1, R, x, buf, &col);
        if (!ierr) ierr = CONV_NAME(ConvGemmWeights)(conv, P, col, dys, dwc, acc);
        if (db)
          for (PetscInt q = 0; q < P; q++)
            for (PetscInt o = 0; o < nout; o++) db[o] += dys[q * nout + o];
      }
      if (dx && !ierr) ierr = CONV_NAME(ConvInputCotangent_Batch)(conv, layer->insize, R0, R1, P, W, dys, PETSC_FALSE, buf, dx);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv backward");
  if (dx && !conv->pointwise) s->colx = NULL; /* the columns now hold W dy, not col(x) */
  if (dtheta) ConvAddParts(conv, nparts, s->dwpart, s->dbpart, conv->bias, dtheta);
  if (dtheta) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->bias ? 1.0 * n * conv->pixels * nout : 0.0)));
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout + (conv->pointwise ? 0.0 : 1.0 * n * conv->pixels * conv->ktot)));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(dx; W) + conv(x; dW) + db, the chunks in parallel */
PetscErrorCode CONV_BATCH_NAME(ConvJVP)(Layer layer, PetscInt n, const PetscScalar *theta, const CONV_T *x, const CONV_T *y, const CONV_T *dx, const PetscScalar *dtheta, CONV_T *dy)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  CONV_WORK_T   *s    = CONV_WORK(conv);
  const PetscInt nout = conv->nout, R = n * conv->rows, Wo = conv->im2col.out[2];
  const CONV_T  *W = NULL, *db = NULL;
  PetscInt       nchunks;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(CONV_NAME(ConvGetWorkspace)(layer, n));
  if (dtheta) PetscCall(CONV_NAME(ConvDirection)(layer, dtheta, &db));
  if (dx) PetscCall(CONV_NAME(ConvParameters)(layer, theta, "jvp", &W));
  nchunks = (R + s->chunk - 1) / s->chunk;
  if (nchunks > 1) s->colx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt       R0 = c * s->chunk, R1 = PetscMin(R0 + s->chunk, R), P = (R1 - R0) * Wo;
    CONV_T        *dys = dy + (size_t)R0 * Wo * nout, beta = 0, *buf = CONV_NAME(ConvThreadBuffer)(conv);
    PetscErrorCode ierr = 0;

    if (dtheta) {
      const CONV_T *col = NULL;

      if (db) {
        CONV_NAME(ConvFillBias)(P, nout, db, dys);
        beta = 1;
      }
      ierr = CONV_NAME(ConvColumns)(conv, layer->insize, R0, R1, R, x, buf, &col);
      if (!ierr) ierr = CONV_NAME(ConvGemmOutput)(conv, P, s->dwt, col, beta, dys);
      beta = 1;
    }
    if (dx && !ierr) {
      const CONV_T *col = buf;

      if (conv->pointwise)
        col = dx + (size_t)R0 * Wo * conv->cin;
      else
        ierr = CONV_NAME(ConvIm2col_Batch)(conv, layer->insize, R0, R1, dx, buf);
      if (!ierr) ierr = CONV_NAME(ConvGemmOutput)(conv, P, s->wt, col, beta, dys);
    }
    if (!dx && !dtheta)
      for (size_t i = 0; i < (size_t)P * nout; i++) dys[i] = 0;
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv jvp");
  if (dx && !conv->pointwise) s->colx = NULL; /* the columns now hold col(dx) */
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * nout : 0.0)));
  PetscFunctionReturn(0);
}
