/*
  The kernels of Winograd F(2x2, 3x3) (conv2dwinograd.c: the algorithm, layouts and formulas) on one element type,
  included once per type (PETSc's way of templating in C, as ../conv/convim2colkernels.h):
    WINOGRAD_T        the element type of the values x, y, V, M, U: PetscScalar or float (single precision), both
                      instantiated in conv2dwinograd.c
    WINOGRAD_NAME(f)  the name of f for that type: f itself, or fSingle
    WINOGRAD_WS(conv) the type's workspace: &conv->wg.dbl or &conv->wg.sgl (Conv2dWinogradWork, ...Single)
    WINOGRAD_ENTRY(f) the name of an entry (conv2d.h) for that type: f_Winograd or fSingle_Winograd
    WINOGRAD_DB_IN_TRANSFORM  1: backward sums db inside the transform of dy (double); 0: in a pass of its own into
                      the double db (float: summed inside the float transform, the widening would cost more than it)
  and, from conv2dwinograd.c, the type's WINOGRAD_NAME(WinogradBias)() (the bias or its tangent as this type).
  Same transforms, same loops and order, same GEMMs (LayerGemm()) for both types. The parameters and their gradient are
  double for both: the weight transform computes each entry of G g G^T in double and rounds it once to WINOGRAD_T, and
  the weight products add into double accumulators.
*/
#ifndef CONV2D_WINOGRAD_KERNELS_ONCE
#define CONV2D_WINOGRAD_KERNELS_ONCE
static const PetscReal WinogradG[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};

/* The 16 GEMMs of one chunk of T tiles; the operand layouts are in conv2dwinograd.c's opening comment */
typedef enum {
  WINOGRAD_GEMM_OUTPUT,  /* M_xi = Ut_xi V_xi */
  WINOGRAD_GEMM_WEIGHTS, /* dU_xi = V_xi dM_xi^T + beta dU_xi */
  WINOGRAD_GEMM_INPUT    /* dV_xi = U_xi dM_xi */
} WinogradGemm;

/* flops of one pass of 16 GEMMs over n samples */
static inline PetscLogDouble WinogradGemmFlops(const Layer_Conv2d *conv, PetscInt n)
{
  return 2.0 * 16 * n * conv->wg.tiles[0] * conv->wg.tiles[1] * conv->base.cin * conv->base.nout;
}
#endif

/* The calling thread's buffers: V, M and scratch (max(Cin, Cout) entries written but never read) */
typedef struct {
  WINOGRAD_T *V, *M, *scratch;
} WINOGRAD_NAME(WinogradThread);

static inline WINOGRAD_NAME(WinogradThread) WINOGRAD_NAME(WinogradThreadBuffers)(const Layer_Conv2d *conv)
{
  const int      t    = PetNetThreadId();
  const PetscInt nmax = PetscMax(conv->base.cin, conv->base.nout);
  WINOGRAD_NAME(WinogradThread) b;

  b.V       = WINOGRAD_WS(conv)->V + (size_t)t * WINOGRAD_WS(conv)->vsize;
  b.M       = WINOGRAD_WS(conv)->M + (size_t)t * WINOGRAD_WS(conv)->msize;
  b.scratch = WINOGRAD_WS(conv)->zeros + (size_t)(1 + t) * nmax;
  return b;
}

/* the 16 input pointers of tile (a, b) of sample xs: the patch rows and columns, or zeros where they fall in the padding */
static inline void WINOGRAD_NAME(WinogradPatch)(const Layer_Conv2d *conv, const WINOGRAD_T *xs, PetscInt a, PetscInt b, const WINOGRAD_T *zeros, const WINOGRAD_T *d[16])
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
static inline void WINOGRAD_NAME(WinogradOutputTile)(const Layer_Conv2d *conv, WINOGRAD_T *ys, PetscInt a, PetscInt b, WINOGRAD_T *scratch, WINOGRAD_T *out[4])
{
  const PetscInt Ho = conv->base.win.out[0], Wo = conv->base.win.out[1];

  for (PetscInt i = 0; i < 2; i++)
    for (PetscInt j = 0; j < 2; j++) out[2 * i + j] = (2 * a + i < Ho && 2 * b + j < Wo) ? ys + ((size_t)(2 * a + i) * Wo + 2 * b + j) * conv->base.nout : scratch;
}

/* V = B^T d B for the ns samples of x: V[xi][t][c] */
CONV2D_SIMD_CLONES static void WINOGRAD_NAME(WinogradInput)(const Layer_Conv2d *conv, PetscInt ns, const WINOGRAD_T *x, WINOGRAD_T *V)
{
  const PetscInt cin = conv->base.cin, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1];
  const size_t   plane = (size_t)ns * TH * TW * cin; /* distance between two xi */
  PetscInt       t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    const WINOGRAD_T *xs = x + (size_t)s * conv->base.win.in[0] * conv->base.win.in[1] * cin;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        const WINOGRAD_T          *d[16];
        WINOGRAD_T *PETSC_RESTRICT v = V + (size_t)t * cin;

        WINOGRAD_NAME(WinogradPatch)(conv, xs, a, b, WINOGRAD_WS(conv)->zeros, d);
#pragma GCC ivdep
        for (PetscInt c = 0; c < cin; c++) {
          WINOGRAD_T r[4][4];

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
CONV2D_SIMD_CLONES static void WINOGRAD_NAME(WinogradInputTranspose)(const Layer_Conv2d *conv, PetscInt ns, const WINOGRAD_T *dV, PetscBool add, WINOGRAD_T *scratch, WINOGRAD_T *dx)
{
  const PetscInt cin = conv->base.cin, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], insize = conv->base.win.in[0] * conv->base.win.in[1] * cin;
  const size_t   plane = (size_t)ns * TH * TW * cin;
  PetscInt       t     = 0;

  if (!add)
    for (size_t i = 0; i < (size_t)ns * insize; i++) dx[i] = 0.0;
  for (PetscInt s = 0; s < ns; s++) {
    WINOGRAD_T *dxs = dx + (size_t)s * insize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        const WINOGRAD_T *v = dV + (size_t)t * cin;
        WINOGRAD_T       *d[16];

        /* padding taps go to scratch, whose contents are never read */
        WINOGRAD_NAME(WinogradPatch)(conv, dxs, a, b, scratch, (const WINOGRAD_T **)d);
#pragma GCC ivdep
        for (PetscInt c = 0; c < cin; c++) {
          WINOGRAD_T r[4][4];

          for (PetscInt i = 0; i < 4; i++) { /* dV B^T: combine columns */
            const WINOGRAD_T v0 = v[(4 * i + 0) * plane + c], v1 = v[(4 * i + 1) * plane + c], v2 = v[(4 * i + 2) * plane + c], v3 = v[(4 * i + 3) * plane + c];

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
CONV2D_SIMD_CLONES static void WINOGRAD_NAME(WinogradOutput)(const Layer_Conv2d *conv, PetscInt ns, const WINOGRAD_T *M, const WINOGRAD_T *bias, PetscBool add, WINOGRAD_T *scratch, WINOGRAD_T *y)
{
  const PetscInt    cout = conv->base.nout, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], outsize = conv->base.pixels * cout;
  const size_t      plane = (size_t)ns * TH * TW * cout;
  const WINOGRAD_T *b     = bias ? bias : WINOGRAD_WS(conv)->zeros;
  PetscInt          t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    WINOGRAD_T *ys = y + (size_t)s * outsize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt bb = 0; bb < TW; bb++, t++) {
        const WINOGRAD_T *m = M + (size_t)t * cout;
        WINOGRAD_T       *o[4];

        WINOGRAD_NAME(WinogradOutputTile)(conv, ys, a, bb, scratch, o);
#pragma GCC ivdep
        for (PetscInt k = 0; k < cout; k++) {
          WINOGRAD_T r[2][4], y00, y01, y10, y11;

          for (PetscInt j = 0; j < 4; j++) { /* A^T M: combine rows */
            const WINOGRAD_T m0 = m[(0 + j) * plane + k], m1 = m[(4 + j) * plane + k], m2 = m[(8 + j) * plane + k], m3 = m[(12 + j) * plane + k];

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
CONV2D_SIMD_CLONES static void WINOGRAD_NAME(WinogradOutputTranspose)(const Layer_Conv2d *conv, PetscInt ns, const WINOGRAD_T *dy, WINOGRAD_T *dM, WINOGRAD_T *scratch, WINOGRAD_T *db)
{
  const PetscInt cout = conv->base.nout, TH = conv->wg.tiles[0], TW = conv->wg.tiles[1], outsize = conv->base.pixels * cout;
  const size_t   plane = (size_t)ns * TH * TW * cout;
  WINOGRAD_T    *dbias = db ? db : scratch;
  PetscInt       t     = 0;

  for (PetscInt s = 0; s < ns; s++) {
    const WINOGRAD_T *dys = dy + (size_t)s * outsize;

    for (PetscInt a = 0; a < TH; a++) {
      for (PetscInt b = 0; b < TW; b++, t++) {
        WINOGRAD_T *m = dM + (size_t)t * cout;
        WINOGRAD_T *e[4];

        /* dy past the image reads zeros: the output pointers of the tile with zeros as the scratch (read only here) */
        WINOGRAD_NAME(WinogradOutputTile)(conv, (WINOGRAD_T *)dys, a, b, WINOGRAD_WS(conv)->zeros, e);
#pragma GCC ivdep
        for (PetscInt k = 0; k < cout; k++) {
          const WINOGRAD_T e00 = e[0][k], e01 = e[1][k], e10 = e[2][k], e11 = e[3][k];
          const WINOGRAD_T r[4][2] = {{e00, e01}, {e00 + e10, e01 + e11}, {e00 - e10, e01 - e11}, {-e10, -e11}}; /* A dy: rows */

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

/* U[xi][k][c] = (G g G^T)_xi with g = W[k][:][:][c] (double, each sum in double, then rounded once to the element type),
   and Ut[xi][c][k] the same (if Ut) */
static void WINOGRAD_NAME(WinogradWeights)(const Layer_Conv2d *conv, const PetscScalar *W, WINOGRAD_T *U, WINOGRAD_T *Ut)
{
  const PetscInt cin = conv->base.cin, cout = conv->base.nout;
  const size_t   plane = (size_t)cout * cin;

  for (PetscInt k = 0; k < cout; k++) {
    const PetscScalar *g = W + (size_t)k * 9 * cin;

    for (PetscInt i = 0; i < 4; i++)
      for (PetscInt j = 0; j < 4; j++) {
        WINOGRAD_T *u = U + (4 * i + j) * plane + (size_t)k * cin;

        for (PetscInt c = 0; c < cin; c++) {
          PetscScalar s = 0.0;

          for (PetscInt p = 0; p < 3; p++)
            for (PetscInt q = 0; q < 3; q++) {
              const PetscReal gij = WinogradG[i][p] * WinogradG[j][q];

              if (gij != 0.0) s += gij * g[(3 * p + q) * cin + c];
            }
          u[c] = (WINOGRAD_T)s;
        }
      }
  }
  if (Ut)
    for (PetscInt xi = 0; xi < 16; xi++)
      for (PetscInt k = 0; k < cout; k++)
        for (PetscInt c = 0; c < cin; c++) Ut[xi * plane + (size_t)c * cout + k] = U[xi * plane + (size_t)k * cin + c];
}

/*
  The 16 products of one kind (U is Ut for WINOGRAD_GEMM_OUTPUT) on a chunk of T tiles, one LayerGemm() each in the
  calling thread; the weight products add into the part's DOUBLE accumulator dU (in place on PetscScalar; on float
  each plane's product is formed in dUc, then added: LayerGemm()'s accumulation into double)
*/
static PetscErrorCode WINOGRAD_NAME(WinogradGemms)(const Layer_Conv2d *conv, WinogradGemm which, PetscInt T, const WINOGRAD_T *U, WINOGRAD_T *V, WINOGRAD_T *M, WINOGRAD_T *dUc, PetscScalar *dU)
{
  const PetscInt cin = conv->base.cin, cout = conv->base.nout;
  const size_t   vplane = (size_t)T * cin, mplane = (size_t)T * cout, uplane = (size_t)cout * cin;
  PetscErrorCode ierr = 0;

  for (PetscInt xi = 0; xi < 16 && !ierr; xi++) {
    switch (which) {
    case WINOGRAD_GEMM_OUTPUT:
      ierr = WINOGRAD_NAME(LayerGemm)(PETSC_FALSE, 'N', 'N', cout, T, cin, U + xi * uplane, cout, V + xi * vplane, cin, 0, M + xi * mplane, cout, NULL);
      break;
    case WINOGRAD_GEMM_WEIGHTS: {
      WINOGRAD_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, dU + xi * uplane};

      ierr = WINOGRAD_NAME(LayerGemm)(PETSC_FALSE, 'N', 'T', cin, cout, T, V + xi * vplane, cin, M + xi * mplane, cout, 0, dUc + xi * uplane, cin, &ep);
    } break;
    case WINOGRAD_GEMM_INPUT:
      ierr = WINOGRAD_NAME(LayerGemm)(PETSC_FALSE, 'N', 'N', cin, T, cout, U + xi * uplane, cin, M + xi * mplane, cout, 0, V + xi * vplane, cin, NULL);
      break;
    }
  }
  return ierr;
}

/*
  V(x) of samples [s0, s0 + ns) of n into the thread's V: kept from the last forward in thread 0's V when one chunk
  holds the batch (that chunk runs alone, on thread 0); the callers of a loop of several chunks forget Vx before it
*/
static void WINOGRAD_NAME(WinogradColumns)(Layer_Conv2d *conv, PetscInt s0, PetscInt ns, PetscInt n, const WINOGRAD_T *x, PetscInt insize, WINOGRAD_T *V)
{
  const PetscBool whole = (PetscBool)(ns == n && V == WINOGRAD_WS(conv)->V);

  if (whole && WINOGRAD_WS(conv)->Vx == x) return;
  WINOGRAD_NAME(WinogradInput)(conv, ns, x + (size_t)s0 * insize, V);
  if (whole) WINOGRAD_WS(conv)->Vx = x;
}

/*
  The workspace for batches of n samples: chunk = the samples whose V and M fit in maxworkspace MB (at least 1, at
  most n). Reallocated only when a chunk needs more samples than the buffers hold (nalloc) or there are more threads,
  so that a smaller last batch or a bigger evaluation batch costs nothing.
*/
static PetscErrorCode WINOGRAD_NAME(Conv2dGetWorkspace_Winograd)(Layer layer, PetscInt n)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  WINOGRAD_WORK *s    = WINOGRAD_WS(conv);
  PetscLogDouble persample, limit = conv->base.maxworkspace * 1024.0 * 1024.0;
  PetscInt       chunk, tps = conv->wg.tiles[0] * conv->wg.tiles[1], nout = conv->base.nout, nu = 16 * nout * conv->base.cin, nmax = PetscMax(conv->base.cin, nout), nthreads = PetNetThreads();

  PetscFunctionBegin;
  persample = 16.0 * tps * (conv->base.cin + nout) * sizeof(WINOGRAD_T);
  chunk     = (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscMax(1.0, PetscFloorReal(limit / persample)));
  if (chunk <= s->nalloc && nthreads <= s->nthreads) {
    if (chunk != s->chunk) s->Vx = NULL;
    s->chunk = chunk;
    PetscFunctionReturn(0);
  }
  PetscCall(WINOGRAD_ENTRY(Conv2dResetWorkspace)(layer));
  s->chunk    = chunk;
  s->nalloc   = chunk;
  s->nthreads = nthreads;
  s->vsize    = (size_t)chunk * tps * 16 * conv->base.cin;
  s->msize    = (size_t)chunk * tps * 16 * nout;
  PetscCall(PetscMalloc7(nthreads * s->vsize, &s->V, nthreads * s->msize, &s->M, nu, &s->U, 2 * nu, &s->Ut, (size_t)nthreads * nu, &s->dUc, nout, &s->b, (1 + nthreads) * nmax, &s->zeros));
  PetscCall(PetscMalloc2((size_t)PETNET_THREAD_PARTS * nu, &s->dU, (size_t)PETNET_THREAD_PARTS * nout, &s->dbpart));
  for (PetscInt i = 0; i < nmax; i++) s->zeros[i] = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode WINOGRAD_ENTRY(Conv2dResetWorkspace)(Layer layer)
{
  WINOGRAD_WORK *s = WINOGRAD_WS((Layer_Conv2d *)layer->data);

  PetscFunctionBegin;
  PetscCall(PetscFree7(s->V, s->M, s->U, s->Ut, s->dUc, s->b, s->zeros));
  PetscCall(PetscFree2(s->dU, s->dbpart));
  PetscCall(PetscMemzero(s, sizeof(*s)));
  PetscFunctionReturn(0);
}

/* y = f(conv(x; W) + b) with f = act (an activation passed by the caller; NULL: none), the chunks of samples in parallel */
PetscErrorCode WINOGRAD_ENTRY(Conv2dForwardAct)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const WINOGRAD_T *x, WINOGRAD_T *y)
{
  Layer_Conv2d     *conv = (Layer_Conv2d *)layer->data;
  WINOGRAD_WORK    *s    = WINOGRAD_WS(conv);
  const PetscInt    tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  const WINOGRAD_T *b;
  PetscInt          nchunks;
  PetscErrorCode    err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(WINOGRAD_NAME(Conv2dGetWorkspace_Winograd)(layer, n));
  WINOGRAD_NAME(WinogradWeights)(conv, theta, s->U, s->Ut);
  b       = WINOGRAD_NAME(WinogradBias)(conv, theta);
  s->Vx   = NULL; /* x may hold new values at the same address */
  nchunks = (n + s->chunk - 1) / s->chunk;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt s0 = c * s->chunk, ns = PetscMin(s->chunk, n - s0);
    const WINOGRAD_NAME(WinogradThread) t = WINOGRAD_NAME(WinogradThreadBuffers)(conv);

    WINOGRAD_NAME(WinogradColumns)(conv, s0, ns, n, x, layer->insize, t.V);
    PetNetThreadsSetError(&err, WINOGRAD_NAME(WinogradGemms)(conv, WINOGRAD_GEMM_OUTPUT, ns * tps, s->Ut, t.V, t.M, NULL, NULL));
    WINOGRAD_NAME(WinogradOutput)(conv, ns, t.M, b, PETSC_FALSE, t.scratch, y + (size_t)s0 * layer->outsize);
    PetNetThreadsSetError(&err, WINOGRAD_NAME(LayerActivate)(act, ns * layer->outsize, y + (size_t)s0 * layer->outsize)); /* while the chunk is in cache */
  }
  PetNetThreadsCheck(err, "conv2d winograd forward");
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n)));
  PetscFunctionReturn(0);
}

PetscErrorCode WINOGRAD_ENTRY(Conv2dForward)(Layer layer, PetscInt n, const PetscScalar *theta, const WINOGRAD_T *x, WINOGRAD_T *y)
{
  PetscFunctionBegin;
  PetscCall(WINOGRAD_ENTRY(Conv2dForwardAct)(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

/*
  dW += (conv in W)^T dy, db += sum dy (both in double), dx = (conv in x)^T dy: the transposed steps of forward, parts
  of samples in parallel
*/
PetscErrorCode WINOGRAD_ENTRY(Conv2dBackward)(Layer layer, PetscInt n, const PetscScalar *theta, const WINOGRAD_T *x, const WINOGRAD_T *y, const WINOGRAD_T *dy, WINOGRAD_T *dx, PetscScalar *dtheta)
{
  Layer_Conv2d  *conv = (Layer_Conv2d *)layer->data;
  WINOGRAD_WORK *s    = WINOGRAD_WS(conv);
  const PetscInt tps = conv->wg.tiles[0] * conv->wg.tiles[1], nparts = PetNetThreadParts(n, 1);
  const size_t   nu  = (size_t)16 * conv->base.nout * conv->base.cin;
  PetscScalar   *db  = dtheta && conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL;
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(WINOGRAD_NAME(Conv2dGetWorkspace_Winograd)(layer, n));
  if (dx) WINOGRAD_NAME(WinogradWeights)(conv, theta, s->U, NULL);
  if (nparts > 1 || n > s->chunk) s->Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const WINOGRAD_NAME(WinogradThread) t = WINOGRAD_NAME(WinogradThreadBuffers)(conv);
    WINOGRAD_T    *dUc                    = s->dUc + (size_t)PetNetThreadId() * nu;
    PetscScalar   *dU = NULL, *dbp = NULL;
    PetscInt       s0, s1;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (dtheta) Conv2dWinogradPartAccumulators_Private(conv, s->dU, s->dbpart, nparts, p, db, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += s->chunk) {
      const PetscInt    ns = PetscMin(s->chunk, s1 - c0), T = ns * tps;
      const WINOGRAD_T *dys = dy + (size_t)c0 * layer->outsize;

#if WINOGRAD_DB_IN_TRANSFORM
      WINOGRAD_NAME(WinogradOutputTranspose)(conv, ns, dys, t.M, t.scratch, dbp);
#else
      WINOGRAD_NAME(WinogradOutputTranspose)(conv, ns, dys, t.M, t.scratch, NULL);
      if (dbp)
        for (PetscInt q = 0; q < ns * conv->base.pixels; q++)
          for (PetscInt o = 0; o < conv->base.nout; o++) dbp[o] += dys[q * conv->base.nout + o];
#endif
      if (dtheta) {
        WINOGRAD_NAME(WinogradColumns)(conv, c0, ns, n, x, layer->insize, t.V);
        ierr = WINOGRAD_NAME(WinogradGemms)(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, dUc, dU);
      }
      if (dx && !ierr) {
        ierr = WINOGRAD_NAME(WinogradGemms)(conv, WINOGRAD_GEMM_INPUT, T, s->U, t.V, t.M, NULL, NULL); /* dV overwrites V(x) */
        WINOGRAD_NAME(WinogradInputTranspose)(conv, ns, t.V, PETSC_FALSE, t.scratch, dx + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd backward");
  if (dx) s->Vx = NULL;
  if (dtheta) Conv2dWinogradAddParts_Private(conv, s->dU, s->dbpart, nparts, dtheta, db);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = conv(x; dW) + db + conv(dx; W), the chunks in parallel */
PetscErrorCode WINOGRAD_ENTRY(Conv2dJVP)(Layer layer, PetscInt n, const PetscScalar *theta, const WINOGRAD_T *x, const WINOGRAD_T *y, const WINOGRAD_T *dx, const PetscScalar *dtheta, WINOGRAD_T *dy)
{
  Layer_Conv2d     *conv = (Layer_Conv2d *)layer->data;
  WINOGRAD_WORK    *s    = WINOGRAD_WS(conv);
  const PetscInt    tps  = conv->wg.tiles[0] * conv->wg.tiles[1];
  const size_t      nu   = (size_t)16 * conv->base.nout * conv->base.cin;
  const WINOGRAD_T *db   = NULL;
  PetscInt          nchunks;
  PetscErrorCode    err = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(WINOGRAD_NAME(Conv2dGetWorkspace_Winograd)(layer, n));
  if (dtheta) { /* conv(x; dW) + db: U(dW) in thread 0's dUc (free outside backward) */
    WINOGRAD_NAME(WinogradWeights)(conv, dtheta, s->dUc, s->Ut);
    db = WINOGRAD_NAME(WinogradBias)(conv, dtheta);
  }
  if (dx) WINOGRAD_NAME(WinogradWeights)(conv, theta, s->U, s->Ut + nu); /* conv(dx; W) */
  nchunks = (n + s->chunk - 1) / s->chunk;
  if (nchunks > 1) s->Vx = NULL;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nchunks > 1)
  for (PetscInt c = 0; c < nchunks; c++) {
    const PetscInt s0 = c * s->chunk, ns = PetscMin(s->chunk, n - s0), T = ns * tps;
    const WINOGRAD_NAME(WinogradThread) t = WINOGRAD_NAME(WinogradThreadBuffers)(conv);
    WINOGRAD_T    *dys                    = dy + (size_t)s0 * layer->outsize;
    PetscErrorCode ierr                   = 0;

    if (dtheta) {
      WINOGRAD_NAME(WinogradColumns)(conv, s0, ns, n, x, layer->insize, t.V);
      ierr = WINOGRAD_NAME(WinogradGemms)(conv, WINOGRAD_GEMM_OUTPUT, T, s->Ut, t.V, t.M, NULL, NULL);
      WINOGRAD_NAME(WinogradOutput)(conv, ns, t.M, db, PETSC_FALSE, t.scratch, dys);
    }
    if (dx && !ierr) {
      WINOGRAD_NAME(WinogradInput)(conv, ns, dx + (size_t)s0 * layer->insize, t.V);
      ierr = WINOGRAD_NAME(WinogradGemms)(conv, WINOGRAD_GEMM_OUTPUT, T, s->Ut + nu, t.V, t.M, NULL, NULL);
      WINOGRAD_NAME(WinogradOutput)(conv, ns, t.M, NULL, dtheta ? PETSC_TRUE : PETSC_FALSE, t.scratch, dys);
    }
    if (!dx && !dtheta)
      for (size_t i = 0; i < (size_t)ns * layer->outsize; i++) dys[i] = 0;
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd jvp");
  if (dx) s->Vx = NULL;
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dx ? 1 : 0) + (dtheta ? 1 : 0))));
  PetscFunctionReturn(0);
}
