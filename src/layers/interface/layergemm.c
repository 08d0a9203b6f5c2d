/*
  The layers' GEMM entries, LayerGemm() on PetscScalar and LayerGemmSingle() on float (contract in layergemm.h): one
  template (layergemmkernels.h) included once per element type, with the type's BLAS call; the float one may hand a
  threaded GEMM to oneDNN (src/sys/onednn.c) when its caller's epilogue asks for it.
*/
#include "layergemm.h"
#include <petnet/private/bf16impl.h>
#include <petscblaslapack.h>
#include <cblas.h>

/* the small-GEMM loops are compiled also for AVX2, picked at load time (layergemmkernels.h) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define LAYER_GEMM_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LAYER_GEMM_TARGET_CLONES
#endif

/* C = op(A) op(B) + beta C, alpha = 1, column-major; the sizes fit BLAS's integers (checked by the caller) */
static inline void LayerGemmBLAS(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const PetscScalar *A, PetscInt lda, const PetscScalar *B, PetscInt ldb, PetscScalar beta, PetscScalar *C, PetscInt ldc)
{
  const PetscScalar  one = 1.0;
  const PetscBLASInt bm = (PetscBLASInt)m, bn = (PetscBLASInt)n, bk = (PetscBLASInt)k, blda = (PetscBLASInt)lda, bldb = (PetscBLASInt)ldb, bldc = (PetscBLASInt)ldc;

  BLASgemm_(&ta, &tb, &bm, &bn, &bk, &one, A, &blda, B, &bldb, &beta, C, &bldc);
}

static inline void LayerGemmBLASSingle(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, const float *B, PetscInt ldb, float beta, float *C, PetscInt ldc)
{
  cblas_sgemm(CblasColMajor, ta == 'N' ? CblasNoTrans : CblasTrans, tb == 'N' ? CblasNoTrans : CblasTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

#define LAYER_GEMM_T       PetscScalar
#define LAYER_GEMM_NAME(f) f
#define LAYER_GEMM_SMALL   1
#define LAYER_GEMM_ONEDNN  0
#define LAYER_GEMM_THIN    1
#include "layergemmkernels.h"
#undef LAYER_GEMM_T
#undef LAYER_GEMM_NAME
#undef LAYER_GEMM_SMALL
#undef LAYER_GEMM_ONEDNN
#undef LAYER_GEMM_THIN
#define LAYER_GEMM_T       float
#define LAYER_GEMM_NAME(f) f##Single
#define LAYER_GEMM_SMALL   0
#define LAYER_GEMM_ONEDNN  1
#define LAYER_GEMM_THIN    0
#include "layergemmkernels.h"
#undef LAYER_GEMM_T
#undef LAYER_GEMM_NAME
#undef LAYER_GEMM_SMALL
#undef LAYER_GEMM_ONEDNN
#undef LAYER_GEMM_THIN

/* acc[0..m) += c (double += float: the same bits in any vector width), compiled also for AVX-512 and AVX2 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
GemmAccumulateSingle(PetscInt m, const float *restrict c, PetscScalar *restrict acc)
{
  for (PetscInt i = 0; i < m; i++) acc[i] += c[i];
}

/*
  the rest of a bfloat16 GEMM's epilogue on the columns [j0, j1) of its float C, after oneDNN's matmul (which added the
  bias and applied a relu without a mask, relu): the activation, or its derivative at the bfloat16 mask widened in
  pieces on the stack, and the accumulation; elementwise, so the bits of LayerGemmSingle()'s epilogue on the widened
  mask. In a thread: an error code, no PetscCall.
*/
static PetscErrorCode GemmEpilogueBF16(const LayerGemmEpilogueSingle *ep, PetscBool relu, const uint16_t *mask, PetscInt m, PetscInt j0, PetscInt j1, float *C, PetscInt ldc)
{
  PetscErrorCode ierr = 0;

  for (PetscInt j = j0; j < j1 && !ierr; j++) {
    float *c = C + (size_t)j * ldc;

    if (ep->act && !mask && !relu) ierr = LayerActivateSingle(ep->act, m, c);
    if (ep->act && mask) {
      float x[256];

      for (PetscInt i = 0; i < m && !ierr; i += 256) {
        const PetscInt len = PetscMin(256, m - i);

        for (PetscInt l = 0; l < len; l++) x[l] = PetNetBF16ToFloat(mask[(size_t)j * ldc + i + l]);
        ierr = LayerMaskSingle(ep->act, len, x, c + i);
      }
    }
    if (ep->acc && !ierr) GemmAccumulateSingle(m, c, ep->acc + (size_t)j * ldc);
  }
  return ierr;
}

/* a float copy of the rows x cols bfloat16 matrix X (ld apart, the gaps too) for the native fallback; NULL if empty */
static PetscErrorCode LayerGemmWidenBF16(PetscInt rows, PetscInt cols, const uint16_t *X, PetscInt ld, float **f)
{
  const PetscInt span = rows && cols ? ld * (cols - 1) + rows : 0;

  PetscFunctionBegin;
  *f = NULL;
  if (!span) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1(span, f));
  PetNetBF16Widen(span, X, *f);
  PetscFunctionReturn(0);
}

/*
  LayerGemmSingle() on the bfloat16 values of a layer's bfloat16 kernels (layergemm.h), threaded, the epilogue's
  backend oneDNN's bfloat16: oneDNN's matmul reads A and B as they are (PetNetOneDNNMatmulBF16(): the key the float
  entry would use on their widened values, so the same bits) and writes C in float, or C16 in bfloat16 (the float C's
  bits rounded: PetNetOneDNNMatmulBF16Out(), or PetNet rounds); mask, where the epilogue's activation takes its
  derivative, in bfloat16. Where the key falls back to native, LayerGemmSingle() runs on float copies: Af and Bf when
  given (a layer's float weights, whose rounding the float entry would have done inside oneDNN), else A and B widened.
*/
PetscErrorCode LayerGemmBF16(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const uint16_t *A, const float *Af, PetscInt lda, const uint16_t *B, const float *Bf, PetscInt ldb, const uint16_t *mask, float beta, float *C, uint16_t *C16,
                             PetscInt ldc, const LayerGemmEpilogueSingle *ep)
{
  LayerGemmEpilogueSingle e    = {NULL, NULL, NULL, NULL, PETNET_GEMM_NATIVE};
  PetscBool               relu = PETSC_FALSE, done = PETSC_FALSE;
  float                  *Cf = C;

  PetscFunctionBegin;
  if (ep) e = *ep;
  PetscCheck(e.backend == PETNET_GEMM_ONEDNN_BF16 && !e.mask, PETSC_COMM_SELF, PETSC_ERR_PLIB, "LayerGemmBF16(): a GEMM of bfloat16 kernels runs on oneDNN's bfloat16 backend, with its mask in bfloat16");
  PetscCheck(!C16 || (ldc == m && beta == 0 && !e.acc), PETSC_COMM_SELF, PETSC_ERR_PLIB, "LayerGemmBF16(): a bfloat16 output is whole (ldc = m), overwritten (beta 0) and not accumulated");
  if (!m || !n) PetscFunctionReturn(0);
  relu = (PetscBool)(e.act && !mask && e.act->isrelu);
  if (k && C16 && (!e.act || relu) && !mask) {
    PetscCall(PetNetOneDNNMatmulBF16Out(ta, tb, m, n, k, A, lda, B, ldb, C16, e.bias, relu, &done));
    if (done) PetscFunctionReturn(0);
  }
  if (C16) PetscCall(PetNetOneDNNFloatScratch((size_t)m * n, &Cf));
  if (k) PetscCall(PetNetOneDNNMatmulBF16(ta, tb, m, n, k, A, lda, B, ldb, beta, Cf, ldc, e.bias, relu, &done));
  if (done && ((e.act && !relu) || e.acc)) {
    PetscErrorCode err = 0;

    PETNET_THREAD_BLOCKS(n, PetscMax(1, 16384 / m), PetNetThreadsSetError(&err, GemmEpilogueBF16(&e, relu, mask, m, i0, i1, Cf, ldc)));
    PetNetThreadsCheck(err, "a layer's bfloat16 GEMM output pass");
  } else if (!done) { /* the float entry's native path, on float copies */
    float *a = NULL, *b = NULL, *x = NULL;

    if (!Af) PetscCall(LayerGemmWidenBF16(ta == 'N' ? m : k, ta == 'N' ? k : m, A, lda, &a));
    if (!Bf) PetscCall(LayerGemmWidenBF16(tb == 'N' ? k : n, tb == 'N' ? n : k, B, ldb, &b));
    if (mask) PetscCall(LayerGemmWidenBF16(m, n, mask, ldc, &x));
    e.mask = x;
    PetscCall(LayerGemmSingle(PETSC_TRUE, ta, tb, m, n, k, Af ? Af : a, lda, Bf ? Bf : b, ldb, beta, Cf, ldc, &e));
    PetscCall(PetscFree(x));
    PetscCall(PetscFree(b));
    PetscCall(PetscFree(a));
  }
  if (C16) PetNetBF16Round(m * n, Cf, C16);
  PetscFunctionReturn(0);
}
