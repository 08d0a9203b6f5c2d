/*
  Thin double GEMMs on AVX-512 (layergemm.h): C = op(A) B + beta C, column-major, with few columns n (the rows of a batch
  or a pipeline's micro-batch: n <= LayerSetGemmThinRows(), default 64) and op(A) = A^T or A, A the large operand (a
  dense layer's weight). BLAS packs the whole of A on every call, which a thin call cannot amortize (OpenBLAS takes 1.3
  to 1.5 times a 256-row batch's time per flop on a pipeline stage's 32-row micro-batches, docs/benchmarks.md); these
  kernels read A where it lies, once a call, and B (n columns, small) is packed once for all the threads' parts
  (LayerGemmThinPack(), into a buffer kept until PetscFinalize()).

    TN   C(j, i) = sum_p A(p, j) B(p, i)     dense's forward Y = Wc^T X: column j of A (a row of W) contiguous in p
         blocks of R rows j by 8 NV columns i in R NV registers (R x NV = 16 x 1, 12 x 2, 6 x 4 for n <= 8, 16, 64):
         per p, the packed B(p, i0 : i0 + 8 NV) (NV loads) times A(p, j) broadcast from R columns of A (R sequential
         streams, prefetched 64 entries ahead and on into the next block's columns); B packed k x 8 NV a block of
         columns. (Cutting p into chunks of 256, each chunk's sums added to C, measured 37 against 67 GFlop/s at 32
         columns: a block's entries of C lie ldc apart, likely in one set of the L1 cache with A's streams.)
    NN   C(p, i) = sum_q A(p, q) B(q, i)     dense's input gradient dX = Wc dY: column q of A contiguous in p
         blocks of 16 rows p by 12 columns i in 24 registers: per q, A(p0 : p0 + 16, q) (2 loads, masked at the last
         rows) times B(q, i) broadcast from the packed B (k x n rounded up to 12); q in chunks of THIN_QC, C's block
         carried across them (A's THIN_QC columns' rows p0 : p0 + 16 stay in L1 while the column blocks reuse them), the
         panel two ahead prefetched by the first column block (THIN_QC streams, too many for the hardware's prefetchers)

  Every entry of C is one chain of fused multiply-adds over the inner index in order (TN: from 0, then added to beta C;
  NN: from beta C), so its bits depend on the sizes alone: not on the block it falls in, the threads' parts
  (LayerGemm() cuts C's rows, never the inner index) or the kernel's shape. They differ from BLAS's dgemm in the last
  bits only (another order of the same sums; OpenBLAS's own kernels sum in chunks of 256).

  Where the CPU has no AVX-512 (valgrind included: it has none), for other shapes and in GEMMs called from inside a
  parallel region (not threaded: no PETSc call for the buffer), LayerGemm() calls BLAS.
*/
#include "layergemm.h"

/* the largest n on these kernels (0: none): LayerSetGemmThinRows(), -petnet_gemm_thin_rows */
PetscInt LayerGemmThinRows = 64;

/*@
  LayerSetGemmThinRows - sets the widest double GEMM (in columns: a batch's or micro-batch's rows) that the layers run
  on PetNet's thin AVX-512 kernels instead of BLAS

  Not collective

  Input Parameter:
. rows - 0 (BLAS for every GEMM) to 64 (the default)

  Options Database Key:
. -petnet_gemm_thin_rows <rows> - the same, read once when the Layer package initializes

  Notes:
  A dense layer's forward (y = x W^T) and input gradient (dx = dy W) on a batch of at most rows samples, and any other
  layer's double GEMM of that thin shape (LayerGemm()), run on kernels that read the weight where it lies and pack
  only the thin operand; BLAS repacks the whole weight on every call, which a thin call cannot amortize (a pipeline's
  micro-batches: `-net_microbatches`). They need AVX-512 (`PetNetGetCPUFeatures()`); elsewhere BLAS runs. Each entry
  is one ordered chain of fused multiply-adds, so the results are the same bits at any number of threads, and differ
  from BLAS's in the last bits only. The weight gradient (X dY^T, thin in its inner dimension) stays on BLAS.

  The setting is the process's, shared by every Net; single and bfloat16 GEMMs are not affected (sgemm, oneDNN).

  Level: developer

.seealso: `LayerGetGemmThinRows()`, `PetNetSetNumThreads()`, `PetNetGetBLASInfo()`
@*/
PetscErrorCode LayerSetGemmThinRows(PetscInt rows)
{
  PetscFunctionBegin;
  PetscCheck(rows >= 0 && rows <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The thin GEMMs' rows (-petnet_gemm_thin_rows) must be between 0 (BLAS for every double GEMM) and 64 (the thin kernels' widest), not %" PetscInt_FMT, rows);
  LayerGemmThinRows = rows;
  PetscFunctionReturn(0);
}

/*@
  LayerGetGemmThinRows - gets the widest double GEMM that the layers run on PetNet's thin AVX-512 kernels

  Not collective

  Output Parameter:
. rows - the setting (`LayerSetGemmThinRows()`), 0 when none runs there

  Level: developer

.seealso: `LayerSetGemmThinRows()`
@*/
PetscErrorCode LayerGetGemmThinRows(PetscInt *rows)
{
  PetscFunctionBegin;
  PetscValidIntPointer(rows, 1);
  *rows = LayerGemmThinRows;
  PetscFunctionReturn(0);
}

/* B packed once a GEMM (LayerGemmThinPack()), for every part: grown to the largest, freed by PetscFinalize() */
static double *ThinPacked;
static size_t  ThinPackedSize;

static PetscErrorCode LayerGemmThinFinalize(void)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(ThinPacked));
  ThinPackedSize = 0;
  PetscFunctionReturn(0);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>

#define THIN_QC   256 /* NN: the inner chunk (A's THIN_QC columns' rows p0 : p0 + 16 in L1, 32 KiB) */
#define THIN_ATTR __attribute__((target("avx512f")))

/* TN's lanes: 8 NV columns a block, NV = 1, 2, 4 for n <= 8, 16, 64 */
static inline int LayerGemmThinTNLanes(PetscInt n)
{
  return n <= 8 ? 8 : n <= 16 ? 16 : 32;
}

/* TN on R rows by NV vectors of 8 columns (constants once inlined): the sums over all of p of C(j0 : j0 + R, i0 : i0 + 8 NV), into t */
static inline THIN_ATTR __attribute__((always_inline)) void LayerGemmThinTNBlock(const int R, const int NV, PetscInt k, const double *const *a, PetscInt lda, const double *bt, double *t)
{
  __m512d c[16][4];

#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < NV; w++) c[r][w] = _mm512_setzero_pd();
  for (PetscInt p = 0; p < k; p++, bt += 8 * NV) {
    __m512d b[4];

    if ((p & 7) == 0) /* 64 entries ahead in the rows, then into the next block's rows (a prefetch past A is harmless) */
#pragma GCC unroll 16
      for (int r = 0; r < R; r++) _mm_prefetch((const char *)(p + 64 < k ? a[r] + p + 64 : a[r] + (size_t)R * lda + (p + 64 - k)), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int w = 0; w < NV; w++) b[w] = _mm512_loadu_pd(bt + 8 * w);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const __m512d s = _mm512_set1_pd(a[r][p]);

#pragma GCC unroll 4
      for (int w = 0; w < NV; w++) c[r][w] = _mm512_fmadd_pd(s, b[w], c[r][w]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int w = 0; w < NV; w++) _mm512_store_pd(t + 32 * r + 8 * w, c[r][w]);
}

static inline THIN_ATTR __attribute__((always_inline)) void LayerGemmThinTNKernel(const int R, const int NV, PetscInt m, PetscInt n, PetscInt k, const double *A, PetscInt lda, const double *bt, double beta, double *C, PetscInt ldc)
{
  double t[16 * 32] __attribute__((aligned(64)));

  for (PetscInt i0 = 0; i0 < n; i0 += 8 * NV, bt += (size_t)k * 8 * NV) {
    const PetscInt ni = PetscMin(8 * NV, n - i0);

    for (PetscInt j0 = 0; j0 < m; j0 += R) {
      const double *a[16];

      for (int r = 0; r < R; r++) a[r] = A + (size_t)PetscMin(j0 + r, m - 1) * lda; /* past m: a copy of the last row */
      LayerGemmThinTNBlock(R, NV, k, a, lda, bt, t);
      for (PetscInt r = 0; r < R && j0 + r < m; r++)
        for (PetscInt i = 0; i < ni; i++) {
          double *c = C + j0 + r + (size_t)(i0 + i) * ldc;

          *c = (beta == 0 ? 0 : beta * *c) + t[32 * r + i];
        }
    }
  }
}

static THIN_ATTR void LayerGemmThinTN(PetscInt m, PetscInt n, PetscInt k, const double *A, PetscInt lda, const double *bt, double beta, double *C, PetscInt ldc)
{
  switch (LayerGemmThinTNLanes(n)) {
  case 8:
    LayerGemmThinTNKernel(16, 1, m, n, k, A, lda, bt, beta, C, ldc);
    break;
  case 16:
    LayerGemmThinTNKernel(12, 2, m, n, k, A, lda, bt, beta, C, ldc);
    break;
  default:
    LayerGemmThinTNKernel(6, 4, m, n, k, A, lda, bt, beta, C, ldc);
  }
}

static THIN_ATTR void LayerGemmThinNN(PetscInt m, PetscInt n, PetscInt k, const double *A, PetscInt lda, const double *bt, double beta, double *C, PetscInt ldc)
{
  const PetscInt nb = (n + 11) / 12 * 12;

  for (PetscInt q0 = 0; q0 < k; q0 += THIN_QC) {
    const PetscInt qc = PetscMin(THIN_QC, k - q0);

    for (PetscInt p0 = 0; p0 < m; p0 += 16) {
      const PetscInt    rows = PetscMin(16, m - p0);
      const __mmask8    m0 = (__mmask8)(rows >= 8 ? 0xff : (1u << rows) - 1), m1 = (__mmask8)(rows >= 16 ? 0xff : rows > 8 ? (1u << (rows - 8)) - 1 : 0);
      const PetscScalar b0 = q0 ? 1 : beta;

      for (PetscInt i0 = 0; i0 < n; i0 += 12) {
        const PetscInt ni = PetscMin(12, n - i0);
        const double  *a = A + p0 + (size_t)q0 * lda, *b = bt + (size_t)q0 * nb + i0;
        __m512d        c[12][2];

#pragma GCC unroll 12
        for (int r = 0; r < 12; r++) { /* columns past ni: zeros, never stored */
          const double *cc = C + p0 + (size_t)(i0 + r) * ldc;

          c[r][0] = c[r][1] = _mm512_setzero_pd();
          if (b0 != 0 && r < ni) {
            c[r][0] = _mm512_maskz_loadu_pd(m0, cc);
            c[r][1] = _mm512_maskz_loadu_pd(m1, cc + 8);
            if (b0 != 1) {
              c[r][0] = _mm512_mul_pd(_mm512_set1_pd(b0), c[r][0]);
              c[r][1] = _mm512_mul_pd(_mm512_set1_pd(b0), c[r][1]);
            }
          }
        }
        for (PetscInt q = 0; q < qc; q++, a += lda, b += nb) {
          const __m512d a0 = _mm512_maskz_loadu_pd(m0, a), a1 = _mm512_maskz_loadu_pd(m1, a + 8);

          if (i0 == 0) { /* the panel two ahead: A's THIN_QC columns are as many streams, too many for the hardware */
            _mm_prefetch((const char *)(a + 32), _MM_HINT_T0);
            _mm_prefetch((const char *)(a + 40), _MM_HINT_T0);
          }
#pragma GCC unroll 12
          for (int r = 0; r < 12; r++) {
            const __m512d s = _mm512_set1_pd(b[r]);

            c[r][0] = _mm512_fmadd_pd(s, a0, c[r][0]);
            c[r][1] = _mm512_fmadd_pd(s, a1, c[r][1]);
          }
        }
#pragma GCC unroll 12
        for (int r = 0; r < 12; r++) {
          double *cc = C + p0 + (size_t)(i0 + r) * ldc;

          if (r < ni) {
            _mm512_mask_storeu_pd(cc, m0, c[r][0]);
            _mm512_mask_storeu_pd(cc + 8, m1, c[r][1]);
          }
        }
      }
    }
  }
}

/* whether C = op(A) op(B) + beta C of these sizes runs here (decided on the whole GEMM, before any cut into parts) */
PetscBool LayerGemmThinUse(char ta, char tb, PetscInt m, PetscInt n, PetscInt k)
{
  static int avx512 = -1;

  if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return (PetscBool)(avx512 && tb == 'N' && n >= 1 && n <= LayerGemmThinRows && m > n && m >= 16 && k >= 16);
}

/*
  B (k x n, ldb apart) packed for op(A) = A^T (ta 'T'): blocks of LayerGemmThinTNLanes(n) columns, each k rows of its
  lanes (zeros past n); for op(A) = A: k rows of n columns rounded up to 12 (zeros past n). Into the kept buffer.
*/
PetscErrorCode LayerGemmThinPack(char ta, PetscInt n, PetscInt k, const double *B, PetscInt ldb, const double **bt)
{
  const PetscInt L = ta == 'N' ? 12 : LayerGemmThinTNLanes(n), lanes = (n + L - 1) / L * L; /* n rounded up to blocks */
  const size_t   size = (size_t)lanes * k;
  double        *w;

  PetscFunctionBegin;
  if (size > ThinPackedSize) {
    if (!ThinPackedSize) PetscCall(PetscRegisterFinalize(LayerGemmThinFinalize));
    PetscCall(PetscFree(ThinPacked));
    PetscCall(PetscMalloc1(size, &ThinPacked)); /* PETSc aligns to 16 bytes at least: the loads are unaligned below */
    ThinPackedSize = size;
  }
  w = ThinPacked;
  if (ta == 'N') {
    for (PetscInt q = 0; q < k; q++)
      for (PetscInt i = 0; i < lanes; i++) w[(size_t)q * lanes + i] = i < n ? B[q + (size_t)i * ldb] : 0;
  } else {
    for (PetscInt i0 = 0; i0 < n; i0 += L, w += (size_t)k * L)
      for (PetscInt p = 0; p < k; p++)
        for (PetscInt i = 0; i < L; i++) w[(size_t)p * L + i] = i0 + i < n ? B[p + (size_t)(i0 + i) * ldb] : 0;
  }
  *bt = ThinPacked;
  PetscFunctionReturn(0);
}

/* rows [0, m) of C = op(A) B + beta C on the kernels above, B packed by LayerGemmThinPack() (a part of the GEMM) */
void LayerGemmThin(char ta, PetscInt m, PetscInt n, PetscInt k, const double *A, PetscInt lda, const double *bt, double beta, double *C, PetscInt ldc)
{
  if (ta == 'N')
    LayerGemmThinNN(m, n, k, A, lda, bt, beta, C, ldc);
  else
    LayerGemmThinTN(m, n, k, A, lda, bt, beta, C, ldc);
}
#else
PetscBool LayerGemmThinUse(char ta, char tb, PetscInt m, PetscInt n, PetscInt k)
{
  return PETSC_FALSE;
}

PetscErrorCode LayerGemmThinPack(char ta, PetscInt n, PetscInt k, const double *B, PetscInt ldb, const double **bt)
{
  PetscFunctionBegin;
  *bt = NULL;
  PetscFunctionReturn(0);
}

void LayerGemmThin(char ta, PetscInt m, PetscInt n, PetscInt k, const double *A, PetscInt lda, const double *bt, double beta, double *C, PetscInt ldc)
{
}
#endif
