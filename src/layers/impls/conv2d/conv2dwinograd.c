/*
  Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped convolutions (Lavin and Gray, "Fast Algorithms for
  Convolutional Neural Networks", 2016). A 2x2 output tile y of a channel pair (k, c) is, from the 4x4 input patch d
  under it and the 3x3 filter g,
      y = A^T [ (G g G^T) .* (B^T d B) ] A,
      B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],  A^T = [1 1 1 0; 0 1 -1 -1]
  and the sum over c of the 16 products .* is, for each of the 16 positions xi = 4 i + j, one GEMM over all tiles.

  Tiles: TH x TW = ceil(Ho/2) x ceil(Wo/2) per sample; tile (a, b) covers the outputs (2a.., 2b..) and reads the input
  patch at rows 2a - ph .. 2a - ph + 3, columns 2b - pw .. 2b - pw + 3. Input outside the image is the zero padding;
  outputs past Ho or Wo (odd sizes) are computed and dropped. For a chunk of T tiles (whole samples):
    V   [16][T][Cin]     V_xi = (B^T d B)_xi            column-major Cin x T,    ld Cin
    U   [16][Cout][Cin]  U_xi = (G g G^T)_xi            column-major Cin x Cout, ld Cin
    Ut  [16][Cin][Cout]  U_xi^T                         column-major Cout x Cin, ld Cout
    M   [16][T][Cout]    M_xi = Ut_xi V_xi              column-major Cout x T,   ld Cout    dgemm('N','N')
    y = A^T M A (+ b)
  backward is the transpose of each step, in reverse:
    dM = A dy A^T,  db += sum dy
    dU_xi += V_xi dM_xi^T                               dgemm('N','T'), then dW += G^T dU G
    dV_xi  = U_xi dM_xi                                 dgemm('N','N'), then dx = sum over the patches of B dV B^T
  sobackward (backward is bilinear in (W, x); db = sum dy depends on neither): backward's steps with the tangents,
    dU_xi += V(xdot)_xi dM_xi^T, dWdot += G^T dU G      the weight steps with V(xdot) for V(x)
    dV_xi  = U(Wdot)_xi dM_xi,   dxdot += B dV B^T      the input steps with U(Wdot) for U(W), added to dxdot
  U is kept in both layouts so that both products of the chunk loop are 'N','N' GEMMs (OpenBLAS's fastest for
  these shapes). Chunks are small (a few samples, -conv2d_max_workspace) so that V and M stay in cache.
  Every transform works on whole channel vectors (channels-last), so its inner loop runs over contiguous channels.
  The 16 GEMMs of Cout x Cin x tiles replace im2col's Cout x 9 Cin x pixels one: 2.25 times fewer multiplications; and
  backward is the exact transpose of forward (same transforms, transposed), so the adjoint identity holds to round-off.
  The workspace (V, M, U, Ut, dU in chunks of samples, conv->wg) is Conv2dGetWorkspace_Winograd()'s, below.

  Threads (../../../../include/petnet/private/threadsimpl.h): forward and jvp run their chunks in parallel, each
  thread with its own V, M and scratch; backward and sobackward cut the batch into parts of whole samples
  (PetNetThreadParts(n, 1)), each part running its chunks in order into its own dU and bias sums, which are added in
  part order at the end. The results are the same bits for any number of threads.

  Files: the transforms, the GEMM loop and the thread buffers are conv2dwinogradkernels.h's, included here on double
  (dgemm) and in conv2dwinogradsingle.c on float (sgemm: single precision, the same algorithm); this file holds the
  double workspace and passes, and the weight-gradient steps both precisions share in double (part accumulators,
  their sum in part order, dW += G^T dU G).
*/
#include "conv2d.h"

/*
  The workspace for batches of n samples: chunk = the samples whose V and M fit in maxworkspace MB (at least 1, at
  most n). Reallocated only when a chunk needs more samples than the buffers hold (nalloc), so that a smaller last batch
  or a bigger evaluation batch costs nothing.
*/
PetscErrorCode Conv2dGetWorkspace_Winograd(Layer layer, PetscInt n)
{
  Layer_Conv2d   *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinograd *wg   = &conv->wg;
  PetscLogDouble  persample, limit = conv->base.maxworkspace * 1024.0 * 1024.0;
  PetscInt        chunk, tps = wg->tiles[0] * wg->tiles[1], nu = 16 * conv->base.nout * conv->base.cin, nmax = PetscMax(conv->base.cin, conv->base.nout), nthreads = PetNetThreads();

  PetscFunctionBegin;
  persample = 16.0 * tps * (conv->base.cin + conv->base.nout) * sizeof(PetscScalar);
  chunk     = (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscMax(1.0, PetscFloorReal(limit / persample)));
  if (chunk <= wg->nalloc && nthreads <= wg->nthreads) {
    if (chunk != wg->chunk) wg->Vx = NULL;
    wg->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(Conv2dResetWorkspace_Winograd(layer));
  wg->chunk    = chunk;
  wg->nalloc   = chunk;
  wg->nthreads = nthreads;
  wg->vsize    = (size_t)chunk * tps * 16 * conv->base.cin;
  wg->msize    = (size_t)chunk * tps * 16 * conv->base.nout;
  PetscCall(PetscMalloc7(nthreads * wg->vsize, &wg->V, nthreads * wg->msize, &wg->M, nu, &wg->U, 2 * nu, &wg->Ut, PETNET_THREAD_PARTS * nu, &wg->dU, (1 + nthreads) * nmax, &wg->zeros, PETNET_THREAD_PARTS * conv->base.nout, &wg->dbpart));
  PetscCall(PetscArrayzero(wg->zeros, nmax));
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dResetWorkspace_Winograd(Layer layer)
{
  Conv2dWinograd *wg = &((Layer_Conv2d *)layer->data)->wg;

  PetscFunctionBegin;
  PetscCall(PetscFree7(wg->V, wg->M, wg->U, wg->Ut, wg->dU, wg->zeros, wg->dbpart));
  PetscCall(Conv2dResetWorkspaceSingle_Winograd(layer)); /* and the float one (conv2dwinogradsingle.c) */
  wg->chunk    = 0;
  wg->nalloc   = 0;
  wg->nthreads = 0;
  wg->Vx       = NULL;
  PetscFunctionReturn(0);
}

/* C = A B + beta C in double (dgemm through PETSc's BLAS), for the kernels below */
static inline void WinogradDgemm(const char *ta, const char *tb, PetscBLASInt m, PetscBLASInt n, PetscBLASInt k, const PetscScalar *A, PetscBLASInt lda, const PetscScalar *B, PetscBLASInt ldb, PetscScalar beta, PetscScalar *C, PetscBLASInt ldc)
{
  const PetscScalar one = 1.0;

  BLASgemm_(ta, tb, &m, &n, &k, &one, A, &lda, B, &ldb, &beta, C, &ldc);
}

/* the kernels in double (conv2dwinogradkernels.h) */
#define WINOGRAD_T        PetscScalar
#define WINOGRAD_NAME(f)  f
#define WINOGRAD_WS(conv) (&(conv)->wg)
#define WINOGRAD_GEMM     WinogradDgemm
#include "conv2dwinogradkernels.h"
#undef WINOGRAD_T
#undef WINOGRAD_NAME
#undef WINOGRAD_WS
#undef WINOGRAD_GEMM

/* dW[k][p][q][c] += sum over xi = (i, j) of G[i][p] G[j][q] dU[xi][k][c]: the transpose of WinogradWeights */
void Conv2dWinogradWeightsTranspose_Private(const Layer_Conv2d *conv, const PetscScalar *dU, PetscScalar *dW)
{
  const PetscInt cin = conv->base.cin, cout = conv->base.nout;
  const size_t   plane = (size_t)cout * cin;

  for (PetscInt k = 0; k < cout; k++) {
    PetscScalar *dg = dW + (size_t)k * 9 * cin;

    for (PetscInt i = 0; i < 4; i++)
      for (PetscInt j = 0; j < 4; j++) {
        const PetscScalar *du = dU + (4 * i + j) * plane + (size_t)k * cin;

        for (PetscInt p = 0; p < 3; p++)
          for (PetscInt q = 0; q < 3; q++) {
            const PetscReal gij = WinogradG[i][p] * WinogradG[j][q];

            if (gij == 0.0) continue;
            for (PetscInt c = 0; c < cin; c++) dg[(3 * p + q) * cin + c] += gij * du[c];
          }
      }
  }
}

/* y = conv(x; W) + b, the chunks of samples in parallel */
PetscErrorCode Conv2dForward_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  const PetscScalar *b    = conv->base.bias ? theta + conv->base.nout * conv->base.kg : NULL;
  const PetscInt     tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  PetscInt           nchunks;
  PetscErrorCode     err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Winograd(layer, n));
  WinogradWeights(conv, theta, conv->wg.U, conv->wg.Ut);
  conv->wg.Vx = NULL; /* x may hold new values at the same address */
  nchunks     = (n + conv->wg.chunk - 1) / conv->wg.chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt       s0 = c * conv->wg.chunk, ns = PetscMin(conv->wg.chunk, n - s0);
    const WinogradThread t = WinogradThreadBuffers(conv);

    WinogradColumns(conv, s0, ns, n, x, layer->insize, t.V);
    PetNetThreadsSetError(&err, WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, ns * tps, conv->wg.Ut, t.V, t.M, 0.0, NULL));
    WinogradOutput(conv, ns, t.M, b, PETSC_FALSE, t.scratch, y + (size_t)s0 * layer->outsize);
    PetNetThreadsSetError(&err, LayerFusedActivate(layer, ns * layer->outsize, y + (size_t)s0 * layer->outsize)); /* while the chunk is in cache */
  }
  PetNetThreadsCheck(err, "conv2d winograd forward");
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n)));
  PetscFunctionReturn(0);
}

/*
  The double accumulators of part p of nparts, in the part buffers dUparts [parts][16][Cout][Cin] and dbparts
  [parts][Cout]: dU_p (zeroed) and the bias sums (db itself with one part, else the part's zeroed sums; NULL without
  db). Shared with the single-precision kernels (conv2dwinogradsingle.c), whose parts accumulate in double too.
*/
void Conv2dWinogradPartAccumulators_Private(const Layer_Conv2d *conv, PetscScalar *dUparts, PetscScalar *dbparts, PetscInt nparts, PetscInt p, PetscScalar *db, PetscScalar **dU, PetscScalar **dbp)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  *dU = dUparts + p * nu;
  for (size_t i = 0; i < nu; i++) (*dU)[i] = 0.0;
  *dbp = db && nparts > 1 ? dbparts + (size_t)p * conv->base.nout : db;
  if (*dbp && nparts > 1)
    for (PetscInt o = 0; o < conv->base.nout; o++) (*dbp)[o] = 0.0;
}

/* dW += G^T (dU_0 + dU_1 + ...) G and db += the parts' bias sums, in part order (dU_0 accumulates the others) */
void Conv2dWinogradAddParts_Private(const Layer_Conv2d *conv, PetscScalar *dUparts, const PetscScalar *dbparts, PetscInt nparts, PetscScalar *dW, PetscScalar *db)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  for (PetscInt p = 1; p < nparts; p++)
    for (size_t i = 0; i < nu; i++) dUparts[i] += dUparts[p * nu + i];
  Conv2dWinogradWeightsTranspose_Private(conv, dUparts, dW);
  if (db && nparts > 1)
    for (PetscInt p = 0; p < nparts; p++)
      for (PetscInt o = 0; o < conv->base.nout; o++) db[o] += dbparts[(size_t)p * conv->base.nout + o];
}

/* dW += (conv in W)^T dy, db += sum dy, dx = (conv in x)^T dy: the transposed steps of forward, parts of samples in parallel */
PetscErrorCode Conv2dBackward_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  const PetscInt tps = conv->wg.tiles[0] * conv->wg.tiles[1], nparts = PetNetThreadParts(n, 1);
  PetscScalar   *db  = dtheta && conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Winograd(layer, n));
  if (dx) WinogradWeights(conv, theta, conv->wg.U, NULL);
  if (nparts > 1 || n > conv->wg.chunk) conv->wg.Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const WinogradThread t  = WinogradThreadBuffers(conv);
    PetscScalar         *dU = NULL, *dbp = NULL;
    PetscInt             s0, s1;
    PetscErrorCode       ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) Conv2dWinogradPartAccumulators_Private(conv, conv->wg.dU, conv->wg.dbpart, nparts, p, db, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += conv->wg.chunk) {
      const PetscInt ns = PetscMin(conv->wg.chunk, s1 - c0), T = ns * tps;

      WinogradOutputTranspose(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, dbp);
      if (dtheta) {
        WinogradColumns(conv, c0, ns, n, x, layer->insize, t.V);
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, 1.0, dU);
      }
      if (dx && !ierr) {
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_INPUT, T, conv->wg.U, t.V, t.M, 0.0, NULL); /* dV overwrites V(x) */
        WinogradInputTranspose(conv, ns, t.V, PETSC_FALSE, t.scratch, dx + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd backward");
  if (dx) conv->wg.Vx = NULL;
  if (dtheta) Conv2dWinogradAddParts_Private(conv, conv->wg.dU, conv->wg.dbpart, nparts, dtheta, db);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = conv(x; dW) + db + conv(dx; W), the chunks in parallel */
PetscErrorCode Conv2dJVP_Winograd(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  const PetscInt tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  PetscScalar   *dUw  = conv->wg.dU; /* U(dW): the first part's accumulator is free outside backward */
  PetscInt       nchunks;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Winograd(layer, n));
  if (dtheta) WinogradWeights(conv, dtheta, dUw, conv->wg.Ut);                                           /* conv(x; dW) */
  if (dx) WinogradWeights(conv, theta, conv->wg.U, conv->wg.Ut + 16 * conv->base.nout * conv->base.cin); /* conv(dx; W) */
  nchunks = (n + conv->wg.chunk - 1) / conv->wg.chunk;
  if (nchunks > 1) conv->wg.Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt       s0 = c * conv->wg.chunk, ns = PetscMin(conv->wg.chunk, n - s0), T = ns * tps;
    const WinogradThread t    = WinogradThreadBuffers(conv);
    PetscScalar         *dys  = dy + (size_t)s0 * layer->outsize;
    PetscErrorCode       ierr = 0;

    if (dtheta) {
      WinogradColumns(conv, s0, ns, n, x, layer->insize, t.V);
      ierr = WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, T, conv->wg.Ut, t.V, t.M, 0.0, NULL);
      WinogradOutput(conv, ns, t.M, conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL, PETSC_FALSE, t.scratch, dys);
    }
    if (dx && !ierr) {
      WinogradInput(conv, ns, dx + (size_t)s0 * layer->insize, t.V);
      ierr = WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, T, conv->wg.Ut + 16 * conv->base.nout * conv->base.cin, t.V, t.M, 0.0, NULL);
      WinogradOutput(conv, ns, t.M, NULL, dtheta ? PETSC_TRUE : PETSC_FALSE, t.scratch, dys);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd jvp");
  if (dx) conv->wg.Vx = NULL;
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/*
  sobackward: dWdot += (conv in W at xdot)^T dy, dxdot += (conv in x with Wdot)^T dy, parts of samples in parallel as
  in backward; no bias term (db = sum dy)
*/
PetscErrorCode Conv2dSOBackward_Winograd(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  Layer_Conv2d   *conv = (Layer_Conv2d *)layer->data;
  const PetscInt  tps = conv->wg.tiles[0] * conv->wg.tiles[1], nparts = PetNetThreadParts(n, 1);
  const PetscBool doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);
  PetscErrorCode  err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Winograd(layer, n));
  if (dox) WinogradWeights(conv, Wdot, conv->wg.U, NULL);
  conv->wg.Vx = NULL; /* V(xdot) and dV replace V(x) */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const WinogradThread t  = WinogradThreadBuffers(conv);
    PetscScalar         *dU = NULL, *dbp = NULL;
    PetscInt             s0, s1;
    PetscErrorCode       ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (doW) Conv2dWinogradPartAccumulators_Private(conv, conv->wg.dU, conv->wg.dbpart, nparts, p, NULL, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += conv->wg.chunk) {
      const PetscInt ns = PetscMin(conv->wg.chunk, s1 - c0), T = ns * tps;

      WinogradOutputTranspose(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, NULL);
      if (doW) {
        WinogradInput(conv, ns, xdot + (size_t)c0 * layer->insize, t.V);
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, 1.0, dU);
      }
      if (dox && !ierr) {
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_INPUT, T, conv->wg.U, t.V, t.M, 0.0, NULL);
        WinogradInputTranspose(conv, ns, t.V, PETSC_TRUE, t.scratch, dxdot + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd sobackward");
  if (doW) Conv2dWinogradAddParts_Private(conv, conv->wg.dU, conv->wg.dbpart, nparts, dWdot, NULL);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dox ? 1 : 0) + (doW ? 1 : 0))));
  PetscFunctionReturn(0);
}
