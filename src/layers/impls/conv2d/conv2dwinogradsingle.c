/*
  Winograd F(2x2, 3x3) in single precision (a Net at -net_precision single): the algorithm, tiles, chunks and threads of
  conv2dwinograd.c (formulas and layouts there) with its transforms on float values (conv2dwinogradkernels.h, included
  here on float) and sgemm for the 16 products, the parameters double (the contract of forwardsingle, backwardsingle
  and jvpsingle in layerimpl.h):

    forward   U = float(G W G^T) (each entry in double, rounded once), b_f = float(b)
              V = B^T x B,  M_xi = Ut_xi V_xi (sgemm),  y = A^T M A + b_f
    backward  dM = A dy A^T (float),  db += sum dy (in double, a pass over dy of its own)
              dUc_xi = V_xi dM_xi^T (sgemm, one chunk, float), added into the part's double dU;
              dW += G^T (dU_0 + dU_1 + ...) G in double, parts in part order (conv2dwinograd.c's, on double)
              dV_xi = U_xi dM_xi (sgemm),  dx = sum over the patches of B dV B^T (float)
    jvp       dy = A^T (U(dW)^t V(x)) A + float(db) + A^T (U(W)^t V(dx)) A, U(dW) = float(G dW G^T)

  The float rounding of a weight-gradient sum is that of one chunk (a few samples' tiles, -conv2d_max_workspace MB of
  V and M); the chunks, parts and ranks add in double, as in the float im2col kernels (../conv/convbatchsingle.c).
  The same bits for any number of threads: parts of whole samples (PetNetThreadParts(n, 1), from sizes only), chunks
  in order within a part, parts added in part order. No sobackward: low precision refuses second-order passes
  (../../../net/netprecision.c).
*/
#include "conv2d.h"
#include <cblas.h>

/* C = A B + beta C in float (sgemm through CBLAS), column-major, for the kernels below */
static inline void WinogradSgemm(const char *ta, const char *tb, PetscBLASInt m, PetscBLASInt n, PetscBLASInt k, const float *A, PetscBLASInt lda, const float *B, PetscBLASInt ldb, float beta, float *C, PetscBLASInt ldc)
{
  cblas_sgemm(CblasColMajor, ta[0] == 'T' ? CblasTrans : CblasNoTrans, tb[0] == 'T' ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* the kernels in float (conv2dwinogradkernels.h) */
#define WINOGRAD_T        float
#define WINOGRAD_NAME(f)  f##Single
#define WINOGRAD_WS(conv) (&(conv)->wgs)
#define WINOGRAD_GEMM     WinogradSgemm
#include "conv2dwinogradkernels.h"
#undef WINOGRAD_T
#undef WINOGRAD_NAME
#undef WINOGRAD_WS
#undef WINOGRAD_GEMM

PetscErrorCode Conv2dResetWorkspaceSingle_Winograd(Layer layer)
{
  Conv2dWinogradSingle *s = &((Layer_Conv2d *)layer->data)->wgs;

  PetscFunctionBegin;
  PetscCall(PetscFree7(s->V, s->M, s->U, s->Ut, s->dUc, s->b, s->zeros));
  PetscCall(PetscFree2(s->dU, s->dbpart));
  PetscCall(PetscMemzero(s, sizeof(*s)));
  PetscFunctionReturn(0);
}

/* The float workspace for batches of n samples, as Conv2dGetWorkspace_Winograd() (chunks of whole samples whose V and M fit) */
static PetscErrorCode Conv2dGetWorkspaceSingle_Winograd(Layer layer, PetscInt n)
{
  Layer_Conv2d         *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinogradSingle *s    = &conv->wgs;
  PetscLogDouble        persample, limit = conv->base.maxworkspace * 1024.0 * 1024.0;
  PetscInt              chunk, tps = conv->wg.tiles[0] * conv->wg.tiles[1], nout = conv->base.nout, nu = 16 * nout * conv->base.cin, nmax = PetscMax(conv->base.cin, nout), nthreads = PetNetThreads();

  PetscFunctionBegin;
  persample = 16.0 * tps * (conv->base.cin + nout) * sizeof(float);
  chunk     = (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscMax(1.0, PetscFloorReal(limit / persample)));
  if (chunk <= s->nalloc && nthreads <= s->nthreads) {
    if (chunk != s->chunk) s->Vx = NULL;
    s->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(Conv2dResetWorkspaceSingle_Winograd(layer));
  s->chunk    = chunk;
  s->nalloc   = chunk;
  s->nthreads = nthreads;
  s->vsize    = (size_t)chunk * tps * 16 * conv->base.cin;
  s->msize    = (size_t)chunk * tps * 16 * nout;
  PetscCall(PetscMalloc7(nthreads * s->vsize, &s->V, nthreads * s->msize, &s->M, nu, &s->U, 2 * nu, &s->Ut, (size_t)nthreads * nu, &s->dUc, nout, &s->b, (1 + nthreads) * nmax, &s->zeros));
  PetscCall(PetscMalloc2((size_t)PETNET_THREAD_PARTS * nu, &s->dU, (size_t)PETNET_THREAD_PARTS * nout, &s->dbpart));
  for (PetscInt i = 0; i < nmax; i++) s->zeros[i] = 0.0f;
  PetscFunctionReturn(0);
}

/* b_f = float(b), or zeros without a bias */
static void WinogradBiasSingle(const Layer_Conv2d *conv, const PetscScalar *theta, float *b)
{
  for (PetscInt o = 0; o < conv->base.nout; o++) b[o] = conv->base.bias ? (float)theta[conv->base.nout * conv->base.kg + o] : 0.0f;
}

/* db += the sum of dy over P output points, in double (a pass of its own: summed inside the float transform, the
   widening would cost more than the transform) */
static void WinogradBiasGradientSingle(const Layer_Conv2d *conv, PetscInt P, const float *dy, PetscScalar *db)
{
  const PetscInt nout = conv->base.nout;

  for (PetscInt q = 0; q < P; q++, dy += nout)
    for (PetscInt o = 0; o < nout; o++) db[o] += dy[o];
}

/* y = conv(x; W) + b in float, the chunks of samples in parallel */
PetscErrorCode Conv2dForwardSingle_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_Conv2d         *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinogradSingle *s    = &conv->wgs;
  const PetscInt        tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  PetscInt              nchunks;
  PetscErrorCode        err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(Conv2dGetWorkspaceSingle_Winograd(layer, n));
  WinogradWeightsSingle(conv, theta, s->U, s->Ut);
  WinogradBiasSingle(conv, theta, s->b);
  s->Vx   = NULL; /* x may hold new values at the same address */
  nchunks = (n + s->chunk - 1) / s->chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt             s0 = c * s->chunk, ns = PetscMin(s->chunk, n - s0);
    const WinogradThreadSingle t = WinogradThreadBuffersSingle(conv);

    WinogradColumnsSingle(conv, s0, ns, n, x, layer->insize, t.V);
    PetNetThreadsSetError(&err, WinogradGemmsSingle(conv, WINOGRAD_GEMM_OUTPUT, ns * tps, s->Ut, t.V, t.M, 0.0f, NULL));
    WinogradOutputSingle(conv, ns, t.M, s->b, PETSC_FALSE, t.scratch, y + (size_t)s0 * layer->outsize);
    PetNetThreadsSetError(&err, LayerFusedActivateSingle(layer, ns * layer->outsize, y + (size_t)s0 * layer->outsize)); /* while the chunk is in cache */
  }
  PetNetThreadsCheck(err, "conv2d winograd forward (single)");
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n)));
  PetscFunctionReturn(0);
}

/*
  dW += (conv in W)^T dy, db += sum dy (both in double), dx = (conv in x)^T dy (float): the transposed steps of forward,
  parts of samples in parallel
*/
PetscErrorCode Conv2dBackwardSingle_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_Conv2d         *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinogradSingle *s    = &conv->wgs;
  const PetscInt        tps = conv->wg.tiles[0] * conv->wg.tiles[1], nparts = PetNetThreadParts(n, 1);
  const size_t          nu  = (size_t)16 * conv->base.nout * conv->base.cin;
  PetscScalar          *db  = dtheta && conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL;
  PetscErrorCode        err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(Conv2dGetWorkspaceSingle_Winograd(layer, n));
  if (dx) WinogradWeightsSingle(conv, theta, s->U, NULL);
  if (nparts > 1 || n > s->chunk) s->Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const WinogradThreadSingle t   = WinogradThreadBuffersSingle(conv);
    float                     *dUc = s->dUc + (size_t)PetNetThreadId() * nu;
    PetscScalar               *dU = NULL, *dbp = NULL;
    PetscInt                   s0, s1;
    PetscErrorCode             ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) Conv2dWinogradPartAccumulators_Private(conv, s->dU, s->dbpart, nparts, p, db, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += s->chunk) {
      const PetscInt ns = PetscMin(s->chunk, s1 - c0), T = ns * tps;

      WinogradOutputTransposeSingle(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, NULL);
      if (dbp) WinogradBiasGradientSingle(conv, ns * conv->base.pixels, dy + (size_t)c0 * layer->outsize, dbp);
      if (dtheta) {
        WinogradColumnsSingle(conv, c0, ns, n, x, layer->insize, t.V);
        ierr = WinogradGemmsSingle(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, 0.0f, dUc);
        for (size_t i = 0; i < nu; i++) dU[i] += dUc[i]; /* the chunk's float products into the part's double sum */
      }
      if (dx && !ierr) {
        ierr = WinogradGemmsSingle(conv, WINOGRAD_GEMM_INPUT, T, s->U, t.V, t.M, 0.0f, NULL); /* dV overwrites V(x) */
        WinogradInputTransposeSingle(conv, ns, t.V, PETSC_FALSE, t.scratch, dx + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd backward (single)");
  if (dx) s->Vx = NULL;
  if (dtheta) Conv2dWinogradAddParts_Private(conv, s->dU, s->dbpart, nparts, dtheta, db);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = conv(x; dW) + db + conv(dx; W) in float (dW, db rounded to float), the chunks in parallel */
PetscErrorCode Conv2dJVPSingle_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  Layer_Conv2d         *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinogradSingle *s    = &conv->wgs;
  const PetscInt        tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  const size_t          nu   = (size_t)16 * conv->base.nout * conv->base.cin;
  PetscInt              nchunks;
  PetscErrorCode        err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(Conv2dGetWorkspaceSingle_Winograd(layer, n));
  if (dtheta) { /* conv(x; dW) + db: U(dW) in thread 0's dUc (free outside backward) */
    WinogradWeightsSingle(conv, dtheta, s->dUc, s->Ut);
    WinogradBiasSingle(conv, dtheta, s->b);
  }
  if (dx) WinogradWeightsSingle(conv, theta, s->U, s->Ut + nu); /* conv(dx; W) */
  nchunks = (n + s->chunk - 1) / s->chunk;
  if (nchunks > 1) s->Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt             s0 = c * s->chunk, ns = PetscMin(s->chunk, n - s0), T = ns * tps;
    const WinogradThreadSingle t    = WinogradThreadBuffersSingle(conv);
    float                     *dys  = dy + (size_t)s0 * layer->outsize;
    PetscErrorCode             ierr = 0;

    if (dtheta) {
      WinogradColumnsSingle(conv, s0, ns, n, x, layer->insize, t.V);
      ierr = WinogradGemmsSingle(conv, WINOGRAD_GEMM_OUTPUT, T, s->Ut, t.V, t.M, 0.0f, NULL);
      WinogradOutputSingle(conv, ns, t.M, s->b, PETSC_FALSE, t.scratch, dys);
    }
    if (dx && !ierr) {
      WinogradInputSingle(conv, ns, dx + (size_t)s0 * layer->insize, t.V);
      ierr = WinogradGemmsSingle(conv, WINOGRAD_GEMM_OUTPUT, T, s->Ut + nu, t.V, t.M, 0.0f, NULL);
      WinogradOutputSingle(conv, ns, t.M, NULL, dtheta ? PETSC_TRUE : PETSC_FALSE, t.scratch, dys);
    }
    if (!dx && !dtheta)
      for (size_t i = 0; i < (size_t)ns * layer->outsize; i++) dys[i] = 0.0f;
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd jvp (single)");
  if (dx) s->Vx = NULL;
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}
