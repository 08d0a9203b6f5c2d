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
  wg->chunk    = 0;
  wg->nalloc   = 0;
  wg->nthreads = 0;
  wg->Vx       = NULL;
  PetscFunctionReturn(0);
}

/* The calling thread's buffers: V, M and scratch (max(Cin, Cout) entries written but never read) */
typedef struct {
  PetscScalar *V, *M, *scratch;
} WinogradThread;

static inline WinogradThread WinogradThreadBuffers(const Layer_Conv2d *conv)
{
  const Conv2dWinograd *wg   = &conv->wg;
  const int             t    = PetNetThreadId();
  const PetscInt        nmax = PetscMax(conv->base.cin, conv->base.nout);
  WinogradThread        b;

  b.V       = wg->V + (size_t)t * wg->vsize;
  b.M       = wg->M + (size_t)t * wg->msize;
  b.scratch = wg->zeros + (size_t)(1 + t) * nmax;
  return b;
}

/* the 16 input pointers of tile (a, b) of sample xs: the patch rows and columns, or zeros where they fall in the padding */
static inline void WinogradPatch(const Layer_Conv2d *conv, const PetscScalar *xs, PetscInt a, PetscInt b, const PetscScalar *zeros, const PetscScalar *d[16])
{
  const PetscInt H = conv->base.win.in[0], W = conv->base.win.in[1], cin = conv->base.cin;

  for (PetscInt i = 0; i < 4; i++) {
    const PetscInt ih = 2 * a - conv->base.win.pad[0] + i;

    for (PetscInt j = 0; j < 4; j++) {
      const PetscInt iw = 2 * b - conv->base.win.pad[1] + j;

      d[4 * i + j] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xs + ((size_t)ih * W + iw) * cin : zeros;
    }
  }
}

/* the 4 output pointers of tile (a, b) of sample ys, or scratch for outputs past the image (odd Ho or Wo) */
static inline void WinogradOutputTile(const Layer_Conv2d *conv, PetscScalar *ys, PetscInt a, PetscInt b, PetscScalar *scratch, PetscScalar *out[4])
{
  const PetscInt Ho = conv->base.win.out[0], Wo = conv->base.win.out[1];

  for (PetscInt i = 0; i < 2; i++)
    for (PetscInt j = 0; j < 2; j++) out[2 * i + j] = (2 * a + i < Ho && 2 * b + j < Wo) ? ys + ((size_t)(2 * a + i) * Wo + 2 * b + j) * conv->base.nout : scratch;
}

/* V = B^T d B for the ns samples of x: V[xi][t][c] */
CONV2D_SIMD_CLONES static void WinogradInput(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *x, PetscScalar *V)
{
  const PetscInt cin = conv->base.cin, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1];
  const size_t   plane = (size_t)ns * TH * TW * cin; /* distance between two xi */
  PetscInt       t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    const PetscScalar *xs = x + (size_t)s * conv->base.win.in[0] * conv->base.win.in[1] * cin;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        const PetscScalar          *d[16];
        PetscScalar *PETSC_RESTRICT v = V + (size_t)t * cin;

        WinogradPatch(conv, xs, a, b, conv->wg.zeros, d);
#pragma GCC ivdep
        for (PetscInt c = 0; c < cin; c++) {
          PetscScalar r[4][4];

          for (PetscInt j = 0; j < 4; j++) { /* B^T d: combine rows */
            r[0][j] = d[j][c] - d[8 + j][c];
            r[1][j] = d[4 + j][c] + d[8 + j][c];
            r[2][j] = d[8 + j][c] - d[4 + j][c];
            r[3][j] = d[4 + j][c] - d[12 + j][c];
          }
          for (PetscInt i = 0; i < 4; i++) { /* (B^T d) B: combine columns */
            v[(4 * i + 0) * plane + c] = r[i][0] - r[i][2];
            v[(4 * i + 1) * plane + c] = r[i][1] + r[i][2];
            v[(4 * i + 2) * plane + c] = r[i][2] - r[i][1];
            v[(4 * i + 3) * plane + c] = r[i][1] - r[i][3];
          }
        }
      }
    }
  }
}

/* dx = sum over the tiles of B dV B^T added into the tile's patch; dx (ns samples) is zeroed first unless add; scratch:
   the thread's */
CONV2D_SIMD_CLONES static void WinogradInputTranspose(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *dV, PetscBool add, PetscScalar *scratch, PetscScalar *dx)
{
  const PetscInt cin = conv->base.cin, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], insize = conv->base.win.in[0] * conv->base.win.in[1] * cin;
  const size_t   plane = (size_t)ns * TH * TW * cin;
  PetscInt       t     = 0;

  if (!add)
    for (size_t i = 0; i < (size_t)ns * insize; i++) dx[i] = 0.0;
  for (PetscInt s = 0; s < ns; s++) {
    PetscScalar *dxs = dx + (size_t)s * insize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        const PetscScalar *v = dV + (size_t)t * cin;
        PetscScalar       *d[16];

        /* padding taps go to scratch, whose contents are never read */
        WinogradPatch(conv, dxs, a, b, scratch, (const PetscScalar **)d);
#pragma GCC ivdep
        for (PetscInt c = 0; c < cin; c++) {
          PetscScalar r[4][4];

          for (PetscInt i = 0; i < 4; i++) { /* dV B^T: combine columns */
            const PetscScalar v0 = v[(4 * i + 0) * plane + c], v1 = v[(4 * i + 1) * plane + c], v2 = v[(4 * i + 2) * plane + c], v3 = v[(4 * i + 3) * plane + c];

            r[i][0] = v0;
            r[i][1] = v1 - v2 + v3;
            r[i][2] = v1 + v2 - v0;
            r[i][3] = -v3;
          }
          for (PetscInt j = 0; j < 4; j++) { /* B (dV B^T): combine rows, add into the patch */
            d[j][c] += r[0][j];
            d[4 + j][c] += r[1][j] - r[2][j] + r[3][j];
            d[8 + j][c] += r[1][j] + r[2][j] - r[0][j];
            d[12 + j][c] -= r[3][j];
          }
        }
      }
    }
  }
}

/* y (= or +=) A^T M A + b for the ns samples of y; b may be NULL; scratch: the thread's */
CONV2D_SIMD_CLONES static void WinogradOutput(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *M, const PetscScalar *bias, PetscBool add, PetscScalar *scratch, PetscScalar *y)
{
  const PetscInt     cout = conv->base.nout, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], outsize = conv->base.pixels * cout;
  const size_t       plane = (size_t)ns * TH * TW * cout;
  const PetscScalar *b     = bias ? bias : conv->wg.zeros;
  PetscInt           t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    PetscScalar *ys = y + (size_t)s * outsize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt bb = 0; bb < TW; bb++, t++) {
        const PetscScalar *m = M + (size_t)t * cout;
        PetscScalar       *o[4];

        WinogradOutputTile(conv, ys, a, bb, scratch, o);
#pragma GCC ivdep
        for (PetscInt k = 0; k < cout; k++) {
          PetscScalar r[2][4], y00, y01, y10, y11;

          for (PetscInt j = 0; j < 4; j++) { /* A^T M: combine rows */
            const PetscScalar m0 = m[(0 + j) * plane + k], m1 = m[(4 + j) * plane + k], m2 = m[(8 + j) * plane + k], m3 = m[(12 + j) * plane + k];

            r[0][j] = m0 + m1 + m2;
            r[1][j] = m1 - m2 - m3;
          }
          y00 = r[0][0] + r[0][1] + r[0][2] + b[k];
          y01 = r[0][1] - r[0][2] - r[0][3] + b[k];
          y10 = r[1][0] + r[1][1] + r[1][2] + b[k];
          y11 = r[1][1] - r[1][2] - r[1][3] + b[k];
          if (add) {
            o[0][k] += y00;
            o[1][k] += y01;
            o[2][k] += y10;
            o[3][k] += y11;
          } else {
            o[0][k] = y00;
            o[1][k] = y01;
            o[2][k] = y10;
            o[3][k] = y11;
          }
        }
      }
    }
  }
}

/* dM = A dy A^T for the ns samples of dy (outputs past the image count as zero); db += sum of dy if db; scratch: the thread's */
CONV2D_SIMD_CLONES static void WinogradOutputTranspose(const Layer_Conv2d *conv, PetscInt ns, const PetscScalar *dy, PetscScalar *dM, PetscScalar *scratch, PetscScalar *db)
{
  const PetscInt cout = conv->base.nout, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], outsize = conv->base.pixels * cout;
  const size_t   plane = (size_t)ns * TH * TW * cout;
  PetscScalar   *dbias = db ? db : scratch;
  PetscInt       t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    const PetscScalar *dys = dy + (size_t)s * outsize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        PetscScalar *m = dM + (size_t)t * cout;
        PetscScalar *e[4];

        /* dy past the image reads zeros: the output pointers of the tile with zeros as the scratch (read only here) */
        WinogradOutputTile(conv, (PetscScalar *)dys, a, b, conv->wg.zeros, e);
#pragma GCC ivdep
        for (PetscInt k = 0; k < cout; k++) {
          const PetscScalar e00 = e[0][k], e01 = e[1][k], e10 = e[2][k], e11 = e[3][k];
          const PetscScalar r[4][2] = {{e00, e01}, {e00 + e10, e01 + e11}, {e00 - e10, e01 - e11}, {-e10, -e11}}; /* A dy: rows */

          for (PetscInt i = 0; i < 4; i++) { /* (A dy) A^T: columns */
            m[(4 * i + 0) * plane + k] = r[i][0];
            m[(4 * i + 1) * plane + k] = r[i][0] + r[i][1];
            m[(4 * i + 2) * plane + k] = r[i][0] - r[i][1];
            m[(4 * i + 3) * plane + k] = -r[i][1];
          }
          dbias[k] += e00 + e01 + e10 + e11;
        }
      }
    }
  }
}

static const PetscReal WinogradG[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};

/* U[xi][k][c] = (G g G^T)_xi with g = W[k][:][:][c], and Ut[xi][c][k] the same (if Ut) */
static void WinogradWeights(const Layer_Conv2d *conv, const PetscScalar *W, PetscScalar *U, PetscScalar *Ut)
{
  const PetscInt cin = conv->base.cin, cout = conv->base.nout;
  const size_t   plane = (size_t)cout * cin;

  for (PetscInt k = 0; k < cout; k++) {
    const PetscScalar *g = W + (size_t)k * 9 * cin;

    for (PetscInt i = 0; i < 4; i++)
      for (PetscInt j = 0; j < 4; j++) {
        PetscScalar *u = U + (4 * i + j) * plane + (size_t)k * cin;

        for (PetscInt c = 0; c < cin; c++) u[c] = 0.0;
        for (PetscInt p = 0; p < 3; p++)
          for (PetscInt q = 0; q < 3; q++) {
            const PetscReal gij = WinogradG[i][p] * WinogradG[j][q];

            if (gij == 0.0) continue;
            for (PetscInt c = 0; c < cin; c++) u[c] += gij * g[(3 * p + q) * cin + c];
          }
      }
  }
  if (Ut)
    for (PetscInt xi = 0; xi < 16; xi++)
      for (PetscInt k = 0; k < cout; k++)
        for (PetscInt c = 0; c < cin; c++) Ut[xi * plane + (size_t)c * cout + k] = U[xi * plane + (size_t)k * cin + c];
}

/* dW[k][p][q][c] += sum over xi = (i, j) of G[i][p] G[j][q] dU[xi][k][c]: the transpose of WinogradWeights */
static void WinogradWeightsTranspose(const Layer_Conv2d *conv, const PetscScalar *dU, PetscScalar *dW)
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

/* The 16 GEMMs of one chunk of T tiles; the operand layouts are in the comment at the top */
typedef enum {
  WINOGRAD_GEMM_OUTPUT,  /* M_xi = Ut_xi V_xi */
  WINOGRAD_GEMM_WEIGHTS, /* dU_xi += V_xi dM_xi^T */
  WINOGRAD_GEMM_INPUT    /* dV_xi = U_xi dM_xi */
} WinogradGemm;

/* the 16 products of one kind (U is Ut for WINOGRAD_GEMM_OUTPUT); sizes T, Cin, Cout */
static void WinogradGemmLoop(WinogradGemm which, PetscBLASInt T, PetscBLASInt cin, PetscBLASInt cout, const PetscScalar *U, PetscScalar *V, PetscScalar *M, PetscScalar *dU)
{
  const PetscScalar one = 1.0, zero = 0.0;
  const size_t      vplane = (size_t)T * cin, mplane = (size_t)T * cout, uplane = (size_t)cout * cin;

  for (PetscInt xi = 0; xi < 16; xi++) {
    switch (which) {
    case WINOGRAD_GEMM_OUTPUT:
      BLASgemm_("N", "N", &cout, &T, &cin, &one, U + xi * uplane, &cout, V + xi * vplane, &cin, &zero, M + xi * mplane, &cout);
      break;
    case WINOGRAD_GEMM_WEIGHTS:
      BLASgemm_("N", "T", &cin, &cout, &T, &one, V + xi * vplane, &cin, M + xi * mplane, &cout, &one, dU + xi * uplane, &cin);
      break;
    case WINOGRAD_GEMM_INPUT:
      BLASgemm_("N", "N", &cin, &T, &cout, &one, U + xi * uplane, &cin, M + xi * mplane, &cout, &zero, V + xi * vplane, &cin);
      break;
    }
  }
}

/* One PetscCallBLAS around the 16 products, so that its memory check (with -malloc_debug) runs once, not 16 times */
static PetscErrorCode WinogradGemms(const Layer_Conv2d *conv, WinogradGemm which, PetscInt T, const PetscScalar *U, PetscScalar *V, PetscScalar *M, PetscScalar *dU)
{
  PetscBLASInt bT, bcin, bcout;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(T, &bT));
  PetscCall(PetscBLASIntCast(conv->base.cin, &bcin));
  PetscCall(PetscBLASIntCast(conv->base.nout, &bcout));
  PetscCallBLAS("BLASgemm", WinogradGemmLoop(which, bT, bcin, bcout, U, V, M, dU));
  PetscFunctionReturn(0);
}

/* flops of one pass of 16 GEMMs over n samples */
static PetscLogDouble WinogradGemmFlops(const Layer_Conv2d *conv, PetscInt n)
{
  return 2.0 * 16 * n * conv->wg.tiles[0] * conv->wg.tiles[1] * conv->base.cin * conv->base.nout;
}

/*
  V(x) of samples [s0, s0 + ns) of n into the thread's V: kept from the last forward in thread 0's V when one chunk
  holds the batch (that chunk runs alone, on thread 0); the callers of a loop of several chunks forget Vx before it
*/
static void WinogradColumns(Layer_Conv2d *conv, PetscInt s0, PetscInt ns, PetscInt n, const PetscScalar *x, PetscInt insize, PetscScalar *V)
{
  const PetscBool whole = (PetscBool)(ns == n && V == conv->wg.V);

  if (whole && conv->wg.Vx == x) return;
  WinogradInput(conv, ns, x + (size_t)s0 * insize, V);
  if (whole) conv->wg.Vx = x;
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
    PetNetThreadsSetError(&err, WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, ns * tps, conv->wg.Ut, t.V, t.M, NULL));
    WinogradOutput(conv, ns, t.M, b, PETSC_FALSE, t.scratch, y + (size_t)s0 * layer->outsize);
    PetNetThreadsSetError(&err, LayerFusedActivate(layer, ns * layer->outsize, y + (size_t)s0 * layer->outsize)); /* while the chunk is in cache */
  }
  PetNetThreadsCheck(err, "conv2d winograd forward");
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n)));
  PetscFunctionReturn(0);
}

/*
  The accumulators of part p of nparts: dU_p (zeroed) and the bias sums (db itself with one part, else the part's
  zeroed sums; NULL without db)
*/
static void WinogradPartAccumulators(Layer_Conv2d *conv, PetscInt nparts, PetscInt p, PetscScalar *db, PetscScalar **dU, PetscScalar **dbp)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  *dU = conv->wg.dU + p * nu;
  for (size_t i = 0; i < nu; i++) (*dU)[i] = 0.0;
  *dbp = db && nparts > 1 ? conv->wg.dbpart + (size_t)p * conv->base.nout : db;
  if (*dbp && nparts > 1)
    for (PetscInt o = 0; o < conv->base.nout; o++) (*dbp)[o] = 0.0;
}

/* dW += G^T (dU_0 + dU_1 + ...) G and db += the parts' bias sums, in part order (dU_0 accumulates the others) */
static void WinogradAddParts(Layer_Conv2d *conv, PetscInt nparts, PetscScalar *dW, PetscScalar *db)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  for (PetscInt p = 1; p < nparts; p++)
    for (size_t i = 0; i < nu; i++) conv->wg.dU[i] += conv->wg.dU[p * nu + i];
  WinogradWeightsTranspose(conv, conv->wg.dU, dW);
  if (db && nparts > 1)
    for (PetscInt p = 0; p < nparts; p++)
      for (PetscInt o = 0; o < conv->base.nout; o++) db[o] += conv->wg.dbpart[(size_t)p * conv->base.nout + o];
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
    if (dtheta) WinogradPartAccumulators(conv, nparts, p, db, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += conv->wg.chunk) {
      const PetscInt ns = PetscMin(conv->wg.chunk, s1 - c0), T = ns * tps;

      WinogradOutputTranspose(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, dbp);
      if (dtheta) {
        WinogradColumns(conv, c0, ns, n, x, layer->insize, t.V);
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, dU);
      }
      if (dx && !ierr) {
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_INPUT, T, conv->wg.U, t.V, t.M, NULL); /* dV overwrites V(x) */
        WinogradInputTranspose(conv, ns, t.V, PETSC_FALSE, t.scratch, dx + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd backward");
  if (dx) conv->wg.Vx = NULL;
  if (dtheta) WinogradAddParts(conv, nparts, dtheta, db);
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
      ierr = WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, T, conv->wg.Ut, t.V, t.M, NULL);
      WinogradOutput(conv, ns, t.M, conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL, PETSC_FALSE, t.scratch, dys);
    }
    if (dx && !ierr) {
      WinogradInput(conv, ns, dx + (size_t)s0 * layer->insize, t.V);
      ierr = WinogradGemms(conv, WINOGRAD_GEMM_OUTPUT, T, conv->wg.Ut + 16 * conv->base.nout * conv->base.cin, t.V, t.M, NULL);
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
    if (doW) WinogradPartAccumulators(conv, nparts, p, NULL, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += conv->wg.chunk) {
      const PetscInt ns = PetscMin(conv->wg.chunk, s1 - c0), T = ns * tps;

      WinogradOutputTranspose(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, NULL);
      if (doW) {
        WinogradInput(conv, ns, xdot + (size_t)c0 * layer->insize, t.V);
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, dU);
      }
      if (dox && !ierr) {
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_INPUT, T, conv->wg.U, t.V, t.M, NULL);
        WinogradInputTranspose(conv, ns, t.V, PETSC_TRUE, t.scratch, dxdot + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd sobackward");
  if (doW) WinogradAddParts(conv, nparts, dWdot, NULL);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dox ? 1 : 0) + (doW ? 1 : 0))));
  PetscFunctionReturn(0);
}
