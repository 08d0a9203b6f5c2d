/*
  The kernels of Winograd F(2x2, 3x3) (conv2dwinograd.c: the algorithm, layouts and formulas) on one element type,
  included once per type (PETSc's way of templating in C, as ../conv/convim2colkernels.h):
    WINOGRAD_T        the element type of the values x, y, V, M, U: PetscScalar (conv2dwinograd.c) or float
                      (conv2dwinogradsingle.c, single precision)
    WINOGRAD_NAME(f)  the name of f for that type: f itself, or fSingle
    WINOGRAD_WS(conv) the type's workspace (V, M, U, Ut, zeros, Vx, vsize, msize): &conv->wg or &conv->wgs
    WINOGRAD_GEMM     C = A B + beta C on that type, column-major, BLAS's arguments by value (dgemm or sgemm)
  Same transforms, same loops and order for both types. The parameters are double for both: the weight transform
  computes each entry of G g G^T in double and rounds it once to WINOGRAD_T.
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

/* the 16 products of one kind (U is Ut for WINOGRAD_GEMM_OUTPUT); sizes T, Cin, Cout; beta: the weight products' (1: add
   into dU, 0: overwrite it) */
static void WINOGRAD_NAME(WinogradGemmLoop)(WinogradGemm which, PetscBLASInt T, PetscBLASInt cin, PetscBLASInt cout, const WINOGRAD_T *U, WINOGRAD_T *V, WINOGRAD_T *M, WINOGRAD_T beta, WINOGRAD_T *dU)
{
  const size_t vplane = (size_t)T * cin, mplane = (size_t)T * cout, uplane = (size_t)cout * cin;

  for (PetscInt xi = 0; xi < 16; xi++) {
    switch (which) {
    case WINOGRAD_GEMM_OUTPUT:
      WINOGRAD_GEMM("N", "N", cout, T, cin, U + xi * uplane, cout, V + xi * vplane, cin, 0.0, M + xi * mplane, cout);
      break;
    case WINOGRAD_GEMM_WEIGHTS:
      WINOGRAD_GEMM("N", "T", cin, cout, T, V + xi * vplane, cin, M + xi * mplane, cout, beta, dU + xi * uplane, cin);
      break;
    case WINOGRAD_GEMM_INPUT:
      WINOGRAD_GEMM("N", "N", cin, T, cout, U + xi * uplane, cin, M + xi * mplane, cout, 0.0, V + xi * vplane, cin);
      break;
    }
  }
}

/* One PetscCallBLAS around the 16 products, so that its memory check (with -malloc_debug) runs once, not 16 times */
static PetscErrorCode WINOGRAD_NAME(WinogradGemms)(const Layer_Conv2d *conv, WinogradGemm which, PetscInt T, const WINOGRAD_T *U, WINOGRAD_T *V, WINOGRAD_T *M, WINOGRAD_T beta, WINOGRAD_T *dU)
{
  PetscBLASInt bT, bcin, bcout;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(T, &bT));
  PetscCall(PetscBLASIntCast(conv->base.cin, &bcin));
  PetscCall(PetscBLASIntCast(conv->base.nout, &bcout));
  PetscCallBLAS("BLASgemm", WINOGRAD_NAME(WinogradGemmLoop)(which, bT, bcin, bcout, U, V, M, beta, dU));
  PetscFunctionReturn(0);
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
