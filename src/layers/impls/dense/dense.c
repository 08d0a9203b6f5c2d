/*
  dense: y = x W^T + b, one GEMM over the local batch.

    x      [n][in]     row-major (sample-major)
    W      [out][in]   row-major, as PyTorch's Linear.weight
    b      [out]       (absent with -dense_bias 0)
    y      [n][out]
    theta  = [W, b]    (out*in + out entries; out*in without the bias)

  In column-major BLAS terms x is X (in x n), W is Wc = W^T (in x out), y is Y (out x n):
    forward   Y  = Wc^T X + b 1^T       dgemm('T','N', out, n, in)
    backward  dX = Wc dY                dgemm('N','N', in, n, out)
              dWc += X dY^T             dgemm('N','T', in, out, n)    (dW accumulates)
              db  += dY 1               (sum over samples)
    jvp       dY = Wc^T dX + dWc^T X + db 1^T

  Output passes: forward adds the bias to each GEMM part's block of Y while it is in cache, and applies there the
  activation its owner fused after it (layer->fuseact: Y = f(Wc^T X + b 1^T)); backward multiplies each part's block
  of dX by the derivative of an activation fused before it (layer->fusemask: dX = f'(X) Wc dY). The same operations in
  the same order as the separate passes, so the same bits.

  Threads: each GEMM is cut into parts along the larger of its two outer dimensions (DenseGemm): one GEMM per part,
  single-threaded BLAS inside each thread. The parts depend only on the sizes, and no part sums into another's
  entries (the inner dimension is never cut), so the results are the same bits for any number of threads.

  Small GEMMs (m n k <= DENSE_SMALL_GEMM multiply-adds, e.g. the 20 x 2 by 2 x 50 products of the spiral's neural ODE)
  run as plain loops (DenseGemmSmall) and without a parallel region: there BLAS's call, argument checks and operand
  packing, and OpenMP's team set-up, cost more than the arithmetic. Which path a GEMM takes depends only on its sizes.
*/
#include "dense.h"
#include <petscblaslapack.h>

static PetscErrorCode LayerSetUp_Dense(Layer layer)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in;

  PetscFunctionBegin;
  if (dense->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "dense layer %" PetscInt_FMT " has no number of outputs: write dense:N in -net_layers (e.g. dense:128), or give -%sdense_outputs N, or call LayerDenseSetOutputSize()",
            layer->index, prefix ? prefix : "");
  }
  PetscCall(PetNetShapeSize(&layer->in, &in));
  layer->out.ndim   = 1;
  layer->out.dim[0] = dense->nout;
  /* (in + 1) * out in 64-bit: a count that does not fit a PetscInt is refused here, before anything is allocated */
  PetscCheck(((PetscInt64)in + 1) * dense->nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "dense layer %" PetscInt_FMT " (dense:%" PetscInt_FMT " on %" PetscInt_FMT " inputs) would have %" PetscInt64_FMT " parameters, more than a PetscInt holds (%" PetscInt_FMT
             "): give it fewer outputs, or shrink its input (pooling, smaller layers before it)",
             layer->index, dense->nout, in, ((PetscInt64)in + 1) * dense->nout, (PetscInt)PETSC_MAX_INT);
  layer->nparams = dense->nout * in + (dense->bias ? dense->nout : 0);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Dense(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = layer->insize, out = dense->nout, nw = in * out;

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, dense->init, dense->initstd, in, out, nw, theta));
  if (dense->bias) PetscCall(PetscArrayzero(theta + nw, out));
  PetscFunctionReturn(0);
}

/* at most this many multiply-adds (m n k): plain loops instead of BLAS */
#define DENSE_SMALL_GEMM 32768

/* entry (l, j) of op(B) */
static inline PetscScalar DenseOpB(PetscBool transb, const PetscScalar *B, PetscInt ldb, PetscInt l, PetscInt j)
{
  return transb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
}

/* c = beta c + s (beta = 0: c is not read, as in BLAS) */
static inline PetscScalar DenseBetaAdd(PetscScalar beta, PetscScalar c, PetscScalar s)
{
  return beta == 0.0 ? s : beta * c + s;
}

/*
  op(A) = A with M <= 4 rows (M a constant once inlined): each column of C is summed in registers, over l in order.
  Four columns at a time: a column's sum is a chain of k dependent additions, and four independent chains keep the
  adders busy where one would wait on each addition's latency (the spiral's 2 x 50 by 50 x 20 products); each entry
  of C is still summed in the same order, so the same bits.
*/
static inline void DenseGemmSmallRowsN(const PetscInt M, PetscBool transb, PetscInt n, PetscInt k, const PetscScalar *restrict A, PetscInt lda, const PetscScalar *restrict B, PetscInt ldb, PetscScalar beta, PetscScalar *restrict C, PetscInt ldc)
{
  PetscInt j = 0;

  for (; j + 4 <= n; j += 4) {
    PetscScalar acc[4][4] = {{0.0}};

    for (PetscInt l = 0; l < k; l++) {
      for (PetscInt q = 0; q < 4; q++) {
        const PetscScalar blj = DenseOpB(transb, B, ldb, l, j + q);

        for (PetscInt i = 0; i < M; i++) acc[q][i] += A[i + (size_t)l * lda] * blj;
      }
    }
    for (PetscInt q = 0; q < 4; q++)
      for (PetscInt i = 0; i < M; i++) C[i + (size_t)(j + q) * ldc] = DenseBetaAdd(beta, C[i + (size_t)(j + q) * ldc], acc[q][i]);
  }
  for (; j < n; j++) {
    PetscScalar acc[4] = {0.0, 0.0, 0.0, 0.0};

    for (PetscInt l = 0; l < k; l++) {
      const PetscScalar blj = DenseOpB(transb, B, ldb, l, j);

      for (PetscInt i = 0; i < M; i++) acc[i] += A[i + (size_t)l * lda] * blj;
    }
    for (PetscInt i = 0; i < M; i++) C[i + (size_t)j * ldc] = DenseBetaAdd(beta, C[i + (size_t)j * ldc], acc[i]);
  }
}

/* op(A) = A^T with an inner dimension K <= 4 (a constant once inlined): column j of op(B) is held in registers */
static inline void DenseGemmSmallInnerT(const PetscInt K, PetscBool transb, PetscInt m, PetscInt n, const PetscScalar *restrict A, PetscInt lda, const PetscScalar *restrict B, PetscInt ldb, PetscScalar beta, PetscScalar *restrict C, PetscInt ldc)
{
  for (PetscInt j = 0; j < n; j++) {
    PetscScalar b[4];

    for (PetscInt l = 0; l < K; l++) b[l] = DenseOpB(transb, B, ldb, l, j);
    for (PetscInt i = 0; i < m; i++) {
      PetscScalar sum = 0.0;

      for (PetscInt l = 0; l < K; l++) sum += A[l + (size_t)i * lda] * b[l];
      C[i + (size_t)j * ldc] = DenseBetaAdd(beta, C[i + (size_t)j * ldc], sum);
    }
  }
}

/*
  C = op(A) op(B) + beta C as BLAS's dgemm with alpha = 1 (column-major; op(A) m x k, op(B) k x n; beta = 0: C is not
  read), in loops the compiler unrolls and vectorizes:
    op(A) = A      column j of C gathers the columns of A (axpy over the contiguous rows; in registers when m <= 4)
    op(A) = A^T    C(i, j) is the dot product of columns i of A and j of op(B), in four partial sums (a fixed order)
                   (column j of op(B) in registers when k <= 4)
  Compiled also for AVX2 (4 doubles a vector instead of 2), picked at load time on CPUs that have it, as the pointwise
  kernels are: AVX2 without FMA rounds every operation as the baseline code does, the same bits on any CPU. (An AVX-512
  clone, without FMA contraction, measured no faster on the spiral: these loops are too short for 8-wide vectors.)
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define DENSE_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DENSE_TARGET_CLONES
#endif
static DENSE_TARGET_CLONES void DenseGemmSmall(PetscBool transa, PetscBool transb, PetscInt m, PetscInt n, PetscInt k, const PetscScalar *restrict A, PetscInt lda, const PetscScalar *restrict B, PetscInt ldb, PetscScalar beta,
                                               PetscScalar *restrict C, PetscInt ldc)
{
  if (!transa) {
    switch (m) {
    case 1:
      DenseGemmSmallRowsN(1, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 2:
      DenseGemmSmallRowsN(2, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 3:
      DenseGemmSmallRowsN(3, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 4:
      DenseGemmSmallRowsN(4, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    default:
      break;
    }
    for (PetscInt j = 0; j < n; j++) {
      PetscScalar *restrict c = C + (size_t)j * ldc;

      if (beta == 0.0)
        for (PetscInt i = 0; i < m; i++) c[i] = 0.0;
      else if (beta != 1.0)
        for (PetscInt i = 0; i < m; i++) c[i] *= beta;
      for (PetscInt l = 0; l < k; l++) {
        const PetscScalar blj         = DenseOpB(transb, B, ldb, l, j);
        const PetscScalar *restrict a = A + (size_t)l * lda;

        for (PetscInt i = 0; i < m; i++) c[i] += a[i] * blj;
      }
    }
    return;
  }
  switch (k) {
  case 1:
    DenseGemmSmallInnerT(1, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 2:
    DenseGemmSmallInnerT(2, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 3:
    DenseGemmSmallInnerT(3, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 4:
    DenseGemmSmallInnerT(4, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  default:
    break;
  }
  for (PetscInt j = 0; j < n; j++) {
    for (PetscInt i = 0; i < m; i++) {
      const PetscScalar *restrict a = A + (size_t)i * lda;
      PetscScalar acc[4]            = {0.0, 0.0, 0.0, 0.0};
      PetscInt    l                 = 0;

      if (!transb) {
        const PetscScalar *restrict b = B + (size_t)j * ldb;

        for (; l + 4 <= k; l += 4)
          for (PetscInt q = 0; q < 4; q++) acc[q] += a[l + q] * b[l + q];
      }
      for (; l < k; l++) acc[0] += a[l] * DenseOpB(transb, B, ldb, l, j);
      C[i + (size_t)j * ldc] = DenseBetaAdd(beta, C[i + (size_t)j * ldc], (acc[0] + acc[1]) + (acc[2] + acc[3]));
    }
  }
}

/*
  What a GEMM's part does to its block of C (columns of m entries, ldc apart) while the block is in cache: the output
  pass of forward (C += b 1^T, then the fused activation of the layer, LayerFusedActivate()) and of backward (C *= f'(ref),
  the fused activation's derivative at the layer's input ref, laid out like C; LayerFusedMask())
*/
typedef struct {
  Layer              layer;
  const PetscScalar *bias; /* [m] or NULL */
  PetscBool          activate;
  const PetscScalar *ref; /* the mask's reference (x, ldc apart), or NULL: no mask */
} DenseEpilogue;

static PetscErrorCode DenseEpilogueApply(const DenseEpilogue *ep, PetscInt i0, PetscInt i1, PetscInt j0, PetscInt j1, PetscScalar *C, PetscInt ldc)
{
  PetscErrorCode ierr = 0;

  for (PetscInt j = j0; j < j1 && !ierr; j++) { /* in a thread: no PetscCall, the error goes back to the caller */
    PetscScalar *c = C + (size_t)j * ldc + i0;

    if (ep->bias)
      for (PetscInt i = i0; i < i1; i++) c[i - i0] += ep->bias[i];
    if (ep->activate) ierr = LayerFusedActivate(ep->layer, i1 - i0, c);
    if (ep->ref && !ierr) ierr = LayerFusedMask(ep->layer, i1 - i0, ep->ref + (size_t)j * ldc + i0, c);
  }
  return ierr;
}

/*
  C = op(A) op(B) + beta C (column-major, as BLAS; op(A) m x k, op(B) k x n), cut into parts of rows of C (when m > n:
  the rows of op(A)) or of columns (the columns of op(B)), at least 16 each and DENSE_PART_FLOPS of work, run on
  PetNet's threads; one GEMM per part, followed by the epilogue ep (or NULL) on the part's block of C
*/
static PetscErrorCode DenseGemm(const char *ta, const char *tb, PetscInt m, PetscInt n, PetscInt k, const PetscScalar *A, PetscInt lda, const PetscScalar *B, PetscInt ldb, PetscScalar beta, PetscScalar *C, PetscInt ldc, const DenseEpilogue *ep)
{
  const PetscBool   splitm = (PetscBool)(m > n);
  const PetscInt    dim = splitm ? m : n, other = splitm ? n : m;
  const PetscInt    minsize = PetscMax(16, (PetscInt)PetscCeilReal(DENSE_PART_FLOPS / (2.0 * PetscMax(other, 1) * PetscMax(k, 1)))), nparts = PetNetThreadParts(dim, minsize);
  const PetscScalar one = 1.0;
  PetscBLASInt      bm, bn, bk, blda, bldb, bldc;
  PetscErrorCode    err = 0;

  PetscFunctionBegin;
  if (!m || !n) PetscFunctionReturn(0);
  if ((PetscLogDouble)m * n * k <= DENSE_SMALL_GEMM) {
    DenseGemmSmall((PetscBool)(ta[0] != 'N'), (PetscBool)(tb[0] != 'N'), m, n, k, A, lda, B, ldb, beta, C, ldc);
    if (ep) PetscCall(DenseEpilogueApply(ep, 0, m, 0, n, C, ldc));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscBLASIntCast(m, &bm));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(k, &bk));
  PetscCall(PetscBLASIntCast(lda, &blda));
  PetscCall(PetscBLASIntCast(ldb, &bldb));
  PetscCall(PetscBLASIntCast(ldc, &bldc));
  if (nparts == 1) { /* no parallel region: an if(0) region still sets up a team */
    BLASgemm_(ta, tb, &bm, &bn, &bk, &one, A, &blda, B, &bldb, &beta, C, &bldc);
    if (ep) PetscCall(DenseEpilogueApply(ep, 0, m, 0, n, C, ldc));
    PetscFunctionReturn(0);
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt           j0, j1;
    PetscBLASInt       pm = bm, pn = bn;
    const PetscScalar *Ap = A, *Bp = B;
    PetscScalar       *Cp = C;

    PetNetThreadPart(dim, nparts, p, &j0, &j1);
    if (splitm) {
      pm = (PetscBLASInt)(j1 - j0);
      Ap = ta[0] == 'N' ? A + j0 : A + (size_t)j0 * lda;
      Cp = C + j0;
    } else {
      pn = (PetscBLASInt)(j1 - j0);
      Bp = tb[0] == 'N' ? B + (size_t)j0 * ldb : B + j0;
      Cp = C + (size_t)j0 * ldc;
    }
    BLASgemm_(ta, tb, &pm, &pn, &bk, &one, Ap, &blda, Bp, &bldb, &beta, Cp, &bldc);
    if (ep) PetNetThreadsSetError(&err, splitm ? DenseEpilogueApply(ep, j0, j1, 0, n, C, ldc) : DenseEpilogueApply(ep, 0, m, j0, j1, C, ldc));
  }
  PetNetThreadsCheck(err, "dense output pass");
  PetscFunctionReturn(0);
}

/* y[s][o] += b[o], samples in parallel (a small batch without a parallel region: even an if(0) region sets up a team) */
static void DenseAddBias(PetscInt n, PetscInt out, const PetscScalar *b, PetscScalar *y)
{
  if ((PetscLogDouble)n * out <= 65536) {
    for (PetscInt s = 0; s < n; s++)
      for (PetscInt o = 0; o < out; o++) y[(size_t)s * out + o] += b[o];
    return;
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided)
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt o = 0; o < out; o++) y[(size_t)s * out + o] += b[o];
}

static PetscErrorCode LayerForward_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Dense       *dense = (Layer_Dense *)layer->data;
  PetscInt           in = layer->insize, out = layer->outsize;
  const PetscScalar *W = theta, *b = theta + in * out;

  DenseEpilogue ep = {layer, dense->bias ? b : NULL, (PetscBool)(layer->fuseact != NULL), NULL};

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  /* the bias (and a fused activation) in the GEMM's output pass, part by part while the part is in cache */
  PetscCall(DenseGemm("T", "N", out, n, in, W, in, x, in, 0.0, y, out, ep.bias || ep.activate ? &ep : NULL));
  PetscCall(PetscLogFlops(2.0 * n * in * out + n * out));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Dense       *dense = (Layer_Dense *)layer->data;
  PetscInt           in = layer->insize, out = layer->outsize;
  const PetscScalar *W = theta;

  PetscFunctionBegin;
  if (dx && n) {
    DenseEpilogue ep = {layer, NULL, PETSC_FALSE, x}; /* a fused activation before this layer: dx = f'(x) W^T dy */

    PetscCall(DenseGemm("N", "N", in, n, out, W, in, dy, out, 0.0, dx, in, layer->fusemask ? &ep : NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
  }
  if (dtheta && n) {
    PetscScalar *dW = dtheta, *db = dtheta + in * out;

    PetscCall(DenseGemm("N", "T", in, out, n, x, in, dy, out, 1.0, dW, in, NULL));
    if (dense->bias)
      for (PetscInt s = 0; s < n; s++)
        for (PetscInt o = 0; o < out; o++) db[o] += dy[s * out + o];
    PetscCall(PetscLogFlops(2.0 * n * in * out + n * out));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Dense       *dense = (Layer_Dense *)layer->data;
  PetscInt           in = layer->insize, out = layer->outsize;
  const PetscScalar *W    = theta;
  PetscScalar        beta = 0.0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dx) {
    PetscCall(DenseGemm("T", "N", out, n, in, W, in, dx, in, 0.0, dy, out, NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
    beta = 1.0;
  }
  if (dtheta) {
    const PetscScalar *dW = dtheta, *db = dtheta + in * out;

    PetscCall(DenseGemm("T", "N", out, n, in, dW, in, x, in, beta, dy, out, NULL));
    if (dense->bias) DenseAddBias(n, out, db, dy);
    PetscCall(PetscLogFlops(2.0 * n * in * out + 2.0 * n * out));
  }
  PetscFunctionReturn(0);
}

/* sobackward: backward is bilinear in (W, x) and dy: dxdot += Wdot dy, dWdot += xdot dy^T; the bias term is zero */
static PetscErrorCode LayerSOBackward_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                            PetscScalar *dxdot, PetscScalar *dthetadot)
{
  PetscInt in = layer->insize, out = layer->outsize;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dxdot && thetadot) {
    PetscCall(DenseGemm("N", "N", in, n, out, thetadot, in, dy, out, 1.0, dxdot, in, NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
  }
  if (dthetadot && xdot) {
    PetscCall(DenseGemm("N", "T", in, out, n, xdot, in, dy, out, 1.0, dthetadot, in, NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
  }
  PetscFunctionReturn(0);
}

/* PyTorch Linear: weight [out][in] (our layout; the Net permutes in when it comes from a flattened (h, w, c) tensor), bias [out] */
static PetscErrorCode LayerTensors_Dense(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = layer->insize, out = layer->outsize;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, 2 * sizeof(info[0])));
  PetscCall(PetscStrcpy(info[0].name, "weight"));
  info[0].size    = in * out;
  info[0].ndim    = 2;
  info[0].dims[0] = out;
  info[0].dims[1] = in;
  info[0].layout  = LAYER_TENSOR_FEATURES;
  PetscCall(PetscStrcpy(info[1].name, "bias"));
  info[1].offset  = in * out;
  info[1].size    = out;
  info[1].ndim    = 1;
  info[1].dims[0] = out;
  *n              = dense->bias ? 2 : 1;
  PetscFunctionReturn(0);
}

/* N[:bias=0|1] */
static PetscErrorCode LayerSetArguments_Dense(Layer layer, const char args[])
{
  char     *end;
  long      nout = strtol(args, &end, 10);
  PetscBool bias = PETSC_TRUE;

  PetscFunctionBegin;
  if (end != args && *end == ':') {
    PetscCheck(!strcmp(end + 1, "bias=0") || !strcmp(end + 1, "bias=1"), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"dense:%s\": after the number of outputs dense takes only bias=0 or bias=1, e.g. dense:128:bias=0", args);
    bias = (PetscBool)(end[6] == '1');
    end += strlen(end);
  }
  PetscCheck(end != args && !*end && nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"dense:%s\": dense takes one positive integer, its number of outputs, e.g. dense:128 (and optionally :bias=0)", args);
  PetscCheck(nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dense:%s: the number of outputs is more than %d, the largest PetscInt", args, PETSC_MAX_INT);
  PetscCall(LayerDenseSetOutputSize(layer, (PetscInt)nout));
  PetscCall(LayerDenseSetBias(layer, bias));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Dense(Layer layer, size_t len, char args[])
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s", dense->nout, dense->bias ? "" : ":bias=0"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Dense(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     nout  = dense->nout;
  PetscBool    bias  = dense->bias, set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Dense layer options");
  PetscCall(PetNetOptionsInt("-dense_outputs", "Number of outputs", "LayerDenseSetOutputSize", nout, &nout, NULL));
  if (nout != dense->nout) PetscCall(LayerDenseSetOutputSize(layer, nout));
  PetscCall(PetscOptionsBool("-dense_bias", "Add a bias per output", "LayerDenseSetBias", bias, &bias, &set));
  if (set) PetscCall(LayerDenseSetBias(layer, bias));
  PetscCall(PetscOptionsEnum("-dense_init", "Weight initialisation", "LayerDenseSetInitialization", LayerInitTypes, (PetscEnum)dense->init, (PetscEnum *)&dense->init, NULL));
  PetscCall(PetscOptionsReal("-dense_init_std", "Standard deviation for -dense_init normal", "LayerDenseSetInitialization", dense->initstd, &dense->initstd, NULL));
  PetscCheck(dense->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-dense_init_std must be non-negative, not %g", (double)dense->initstd);
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Dense(Layer layer, PetscViewer viewer)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "outputs %" PetscInt_FMT "%s, initialisation %s", dense->nout, dense->bias ? "" : " (no bias)", LayerInitTypes[dense->init]));
  if (dense->init == LAYER_INIT_NORMAL) PetscCall(PetscViewerASCIIPrintf(viewer, " (std %g)", (double)dense->initstd));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Dense(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetOutputSize_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetInitialization_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetBias_C", NULL));
  PetscCall(PetscFree2(((Layer_Dense *)layer->data)->thetaf, ((Layer_Dense *)layer->data)->workf));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetOutputSize_Dense(Layer layer, PetscInt nout)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dense layer outputs must be positive, not %" PetscInt_FMT, nout);
  if (layer->setupcalled && nout != dense->nout) PetscCall(LayerReset(layer));
  dense->nout = nout;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetBias_Dense(Layer layer, PetscBool bias)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != dense->bias) PetscCall(LayerReset(layer));
  dense->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetInitialization_Dense(Layer layer, LayerInitType init, PetscReal std)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  dense->init    = init;
  dense->initstd = std;
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetOutputSize - the number of outputs of a dense layer, y = x W^T + b

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
- nout  - the number of outputs, > 0

  Options Database Key:
. -<prefix>dense_outputs <n> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dense:N (LayerSetArguments()). A dense layer needs it: set-up fails without. Changing it on a
  layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards (NetSetFromOptions() does
  so itself for -dense_outputs). The layer's parameters are W, nout x (input size) entries, then b, nout entries.

  Level: beginner

.seealso: `LayerDenseSetInitialization()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerDenseSetOutputSize(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDenseSetOutputSize_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetInitialization - how the weights start (the bias starts at zero); std is used by LAYER_INIT_NORMAL.

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
. init  - `LAYER_INIT_KAIMING` (the default), `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS`
- std   - the standard deviation of `LAYER_INIT_NORMAL` (default 0.01)

  Options Database Keys:
+ -<prefix>dense_init <kaiming,xavier,normal,zeros> - the distribution
- -<prefix>dense_init_std <std>                     - the standard deviation of normal

  Notes:
  Takes effect at the next initialisation of the parameters (NetSetUp(), NetInitializeParameters()), with fan-in the
  layer's input size and fan-out its number of outputs (LayerInitializeWeights()).

  Level: intermediate

.seealso: `LayerDenseSetOutputSize()`, `LayerInitializeWeights()`, `NetInitializeParameters()`
@*/
PetscErrorCode LayerDenseSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDenseSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetBias - sets whether a dense layer adds a bias per output (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
- bias  - `PETSC_TRUE` for y = x W^T + b, `PETSC_FALSE` for y = x W^T

  Options Database Key:
. -<prefix>dense_bias <bool> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dense:N:bias=0. Without the bias the layer's parameters are W alone. Changing it on a layer that
  is set up resets the layer. A model-parallel node (LayerSetPartition()) uses it for its blocks: only the ranks of
  the first input block add the bias.

  Level: intermediate

.seealso: `LayerDenseSetOutputSize()`, `LayerConv2dSetBias()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerDenseSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidLogicalCollectiveBool(layer, bias, 2);
  PetscTryMethod(layer, "LayerDenseSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Dense(Layer layer)
{
  Layer_Dense *dense;

  PetscFunctionBegin;
  PetscCall(PetscNew(&dense));
  dense->bias                = PETSC_TRUE;
  dense->init                = LAYER_INIT_KAIMING;
  dense->initstd             = 0.01;
  layer->data                = dense;
  layer->ops->setup          = LayerSetUp_Dense;
  layer->ops->initialize     = LayerInitialize_Dense;
  layer->ops->forward        = LayerForward_Dense;
  layer->ops->backward       = LayerBackward_Dense;
  layer->gradfree            = PETSC_TRUE; /* dW = x^T dy, db = sum dy: W is not read */
  layer->actonly             = PETSC_TRUE; /* backward and jvp read x (and theta) alone */
  layer->fuseforward         = PETSC_TRUE; /* an activation after it in forward's output pass, one before it in dx's */
  layer->fuseforwardsingle   = PETSC_TRUE; /* forward's in single precision too (densesingle.c) */
  layer->fusebackward        = PETSC_TRUE;
  layer->ops->jvp            = LayerJVP_Dense;
  layer->ops->forwardsingle  = LayerForwardSingle_Dense; /* densesingle.c */
  layer->ops->backwardsingle = LayerBackwardSingle_Dense;
  layer->ops->jvpsingle      = LayerJVPSingle_Dense;
  layer->ops->sobackward     = LayerSOBackward_Dense;
  layer->ops->tensors        = LayerTensors_Dense;
  layer->ops->setarguments   = LayerSetArguments_Dense;
  layer->ops->getarguments   = LayerGetArguments_Dense;
  layer->ops->setfromoptions = LayerSetFromOptions_Dense;
  layer->ops->view           = LayerView_Dense;
  layer->ops->destroy        = LayerDestroy_Dense;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetOutputSize_C", LayerDenseSetOutputSize_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetInitialization_C", LayerDenseSetInitialization_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetBias_C", LayerDenseSetBias_Dense));
  PetscFunctionReturn(0);
}
