/*
  The layers' GEMM entries, LayerGemm() on PetscScalar and LayerGemmSingle() on float (contract in layergemm.h): one
  template (layergemmkernels.h) included once per element type, with the type's BLAS call; the float one may hand a
  threaded GEMM to oneDNN (src/sys/onednn.c) when its caller's epilogue asks for it.
*/
#include "layergemm.h"
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
#include "layergemmkernels.h"
#undef LAYER_GEMM_T
#undef LAYER_GEMM_NAME
#undef LAYER_GEMM_SMALL
#undef LAYER_GEMM_ONEDNN
#define LAYER_GEMM_T       float
#define LAYER_GEMM_NAME(f) f##Single
#define LAYER_GEMM_SMALL   0
#define LAYER_GEMM_ONEDNN  1
#include "layergemmkernels.h"
#undef LAYER_GEMM_T
#undef LAYER_GEMM_NAME
#undef LAYER_GEMM_SMALL
#undef LAYER_GEMM_ONEDNN
