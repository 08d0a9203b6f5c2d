/*
  dense in single precision (a Net at -net_precision single or bfloat16, layerimpl.h): the GEMMs of dense.c in float
  (sgemm) on float values; the parameters and their gradient stay double.

    x [n][in], y [n][out] float; theta = [W, b] double, rounded once per forward into thetaf = [Wf, bf] (kept for the
    backward and jvp that follow at the same point)
    forward   Y  = f(Wf^T X + bf 1^T)  sgemm('T','N', out, n, in); the bias and the activation f its owner fused (if
                                       any) in each part's output pass
    backward  dX = Wf dY               sgemm('N','N', in, n, out)
              dW += X dY^T             sgemm('N','T', in, out, n) into workf (float), each part's block added into the
                                       double dW in its output pass
              db += dY 1               summed in double
    jvp       dY = Wf^T dX + dWf^T X + dbf 1^T     (the direction dtheta rounded to float in workf)

  Threads as in dense.c: each GEMM cut into parts along its larger outer dimension, never the inner one, the parts
  from the sizes alone; so the same bits at any thread count. The rounding of the parameters to float runs on the
  threads too (elementwise).
*/
#include "dense.h"
#include <cblas.h>

/* the float parameters (and a float work array) for nparams entries */
static PetscErrorCode DenseSingleWorkspace(Layer layer)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (dense->nf == layer->nparams) PetscFunctionReturn(0);
  PetscCall(PetscFree2(dense->thetaf, dense->workf));
  PetscCall(PetscMalloc2(layer->nparams, &dense->thetaf, layer->nparams, &dense->workf));
  dense->nf = layer->nparams;
  PetscFunctionReturn(0);
}

/*
  What a GEMM's part does to its block of C (columns of m entries, ldc apart) while the block is in cache, in float as
  dense.c's DenseEpilogue in double: forward's output pass (C += bf 1^T, then the activation the owner fused,
  LayerFusedActivateSingle()), and the weight gradient's (acc += C into the double dW, laid out like C)
*/
typedef struct {
  Layer        layer;
  const float *bias; /* [m] or NULL */
  PetscBool    activate;
  PetscScalar *acc; /* double, ldc apart like C, or NULL */
} DenseEpilogueSingle;

static PetscErrorCode DenseEpilogueSingleApply(const DenseEpilogueSingle *ep, PetscInt i0, PetscInt i1, PetscInt j0, PetscInt j1, float *C, PetscInt ldc)
{
  PetscErrorCode ierr = 0;

  for (PetscInt j = j0; j < j1 && !ierr; j++) { /* in a thread: no PetscCall, the error goes back to the caller */
    float *c = C + (size_t)j * ldc + i0;

    if (ep->bias)
      for (PetscInt i = i0; i < i1; i++) c[i - i0] += ep->bias[i];
    if (ep->activate) ierr = LayerFusedActivateSingle(ep->layer, i1 - i0, c);
    if (ep->acc) {
      PetscScalar *a = ep->acc + (size_t)j * ldc + i0;

      for (PetscInt i = 0; i < i1 - i0; i++) a[i] += c[i];
    }
  }
  return ierr;
}

/*
  C = op(A) op(B) + beta C in float (column-major, as BLAS; op(A) m x k, op(B) k x n), cut into parts of rows of C
  (when m > n) or of columns, run on PetNet's threads; one sgemm per part, followed by the epilogue ep (or NULL) on the
  part's block of C
*/
static PetscErrorCode DenseSgemm(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, const float *B, PetscInt ldb, float beta, float *C, PetscInt ldc, const DenseEpilogueSingle *ep)
{
  const PetscBool splitm = (PetscBool)(m > n);
  const PetscInt  dim = splitm ? m : n, other = splitm ? n : m;
  const PetscInt  minsize = PetscMax(16, (PetscInt)PetscCeilReal(DENSE_PART_FLOPS / (2.0 * PetscMax(other, 1) * PetscMax(k, 1)))), nparts = PetNetThreadParts(dim, minsize);
  PetscErrorCode  err = 0;

  PetscFunctionBegin;
  if (!m || !n) PetscFunctionReturn(0);
  PetscCheck(m <= PETSC_BLAS_INT_MAX && n <= PETSC_BLAS_INT_MAX && k <= PETSC_BLAS_INT_MAX && lda <= PETSC_BLAS_INT_MAX && ldb <= PETSC_BLAS_INT_MAX && ldc <= PETSC_BLAS_INT_MAX, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "A dense GEMM of %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " is too large for BLAS's integers", m, n, k);
  if (nparts == 1) { /* no parallel region: an if(0) region still sets up a team */
    cblas_sgemm(CblasColMajor, ta == 'T' ? CblasTrans : CblasNoTrans, tb == 'T' ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
    if (ep) PetscCall(DenseEpilogueSingleApply(ep, 0, m, 0, n, C, ldc));
    PetscFunctionReturn(0);
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt     j0, j1, pm = m, pn = n;
    const float *Ap = A, *Bp = B;
    float       *Cp = C;

    PetNetThreadPart(dim, nparts, p, &j0, &j1);
    if (splitm) {
      pm = j1 - j0;
      Ap = ta == 'N' ? A + j0 : A + (size_t)j0 * lda;
      Cp = C + j0;
    } else {
      pn = j1 - j0;
      Bp = tb == 'N' ? B + (size_t)j0 * ldb : B + j0;
      Cp = C + (size_t)j0 * ldc;
    }
    cblas_sgemm(CblasColMajor, ta == 'T' ? CblasTrans : CblasNoTrans, tb == 'T' ? CblasTrans : CblasNoTrans, (int)pm, (int)pn, (int)k, 1.0f, Ap, (int)lda, Bp, (int)ldb, beta, Cp, (int)ldc);
    if (ep) PetNetThreadsSetError(&err, splitm ? DenseEpilogueSingleApply(ep, j0, j1, 0, n, C, ldc) : DenseEpilogueSingleApply(ep, 0, m, j0, j1, C, ldc));
  }
  PetNetThreadsCheck(err, "dense output pass (single)");
  PetscFunctionReturn(0);
}

/* dst = float(src), on PetNet's threads */
static void DenseRoundParameters(PetscInt N, const PetscScalar *src, float *dst)
{
  PETNET_THREAD_BLOCKS(N, 16384, for (PetscInt i = i0; i < i1; i++) dst[i] = (float)src[i]);
}

PetscErrorCode LayerForwardSingle_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = layer->insize, out = layer->outsize;

  DenseEpilogueSingle ep = {layer, NULL, (PetscBool)(layer->fuseact != NULL), NULL};

  PetscFunctionBegin;
  PetscCall(DenseSingleWorkspace(layer));
  DenseRoundParameters(layer->nparams, theta, dense->thetaf); /* a rank without samples too: its backward may still be asked for */
  if (!n) PetscFunctionReturn(0);
  ep.bias = dense->bias ? dense->thetaf + in * out : NULL; /* in each part's output pass, with a fused activation */
  PetscCall(DenseSgemm('T', 'N', out, n, in, dense->thetaf, in, x, in, 0.0f, y, out, ep.bias || ep.activate ? &ep : NULL));
  PetscCall(PetscLogFlops(2.0 * n * in * out + n * out));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerBackwardSingle_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = layer->insize, out = layer->outsize;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCheck(dense->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the single-precision backward follows a single-precision forward at the same point (LayerForwardSingle())", layer->index);
  if (dx) {
    PetscCall(DenseSgemm('N', 'N', in, n, out, dense->thetaf, in, dy, out, 0.0f, dx, in, NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
  }
  if (dtheta) {
    PetscScalar        *db = dtheta + in * out;
    DenseEpilogueSingle ep = {layer, NULL, PETSC_FALSE, dtheta}; /* dW += each part's block, while it is in cache */

    PetscCall(DenseSgemm('N', 'T', in, out, n, x, in, dy, out, 0.0f, dense->workf, in, &ep));
    if (dense->bias)
      for (PetscInt s = 0; s < n; s++)
        for (PetscInt o = 0; o < out; o++) db[o] += dy[s * out + o];
    PetscCall(PetscLogFlops(2.0 * n * in * out + n * out + in * out));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode LayerJVPSingle_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = layer->insize, out = layer->outsize;
  float        beta = 0.0f;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCheck(dense->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the single-precision jvp follows a single-precision forward at the same point (LayerForwardSingle())", layer->index);
  if (dx) {
    PetscCall(DenseSgemm('T', 'N', out, n, in, dense->thetaf, in, dx, in, 0.0f, dy, out, NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out));
    beta = 1.0f;
  }
  if (dtheta) {
    float *dthf = dense->workf;

    for (PetscInt i = 0; i < layer->nparams; i++) dthf[i] = (float)dtheta[i];
    if (beta == 0.0f) PetscCall(PetscArrayzero(dy, n * out)); /* the bias pass below adds */
    DenseEpilogueSingle ep = {layer, dense->bias ? dthf + in * out : NULL, PETSC_FALSE, NULL};

    PetscCall(DenseSgemm('T', 'N', out, n, in, dthf, in, x, in, 1.0f, dy, out, ep.bias ? &ep : NULL));
    PetscCall(PetscLogFlops(2.0 * n * in * out + 2.0 * n * out));
  }
  PetscFunctionReturn(0);
}
