/*
  The GEMM of the layers' kernels, one entry per element type (layergemm.c, from the template layergemmkernels.h):

    LayerGemm()        C = op(A) op(B) + beta C on PetscScalar (BLAS's dgemm, alpha = 1, column-major)
    LayerGemmSingle()  the same on float (sgemm)

  followed by an epilogue on each block of C while the block is in cache, in this order:

    bias      C(i, j) += bias[i]                                  (forward's bias, jvp's db)
    activate  C = f(C), the activation act passed with the layer's call (forwardact, layerimpl.h: LayerActivate())
    mask      C(i, j) *= f'(mask(i, j)), the derivative of the activation act passed with the call (backwardmask) at the
              layer's input (LayerMask()), mask laid out like C
    acc       the weight gradient's accumulation into DOUBLE: acc(i, j) += C(i, j), acc laid out like C. On
              PetscScalar the GEMM accumulates into acc itself (beta 1; C and beta are not used), the order of the
              double kernels; on float C is the chunk's product (beta 0 is the caller's usual choice), added in double.

  threaded: the GEMM is cut into parts of rows of C (when m > n) or of columns, at least 16 each and LAYER_GEMM_PART_FLOPS
  of work, run on PetNet's threads, one BLAS call and the epilogue per part; the inner dimension is never cut and the
  parts depend on the sizes alone, so the results are the same bits for any number of threads. A small double GEMM
  (m n k <= 32768 multiply-adds) runs as plain loops without a parallel region instead (the spiral's 20 x 2 by 2 x 50
  products: BLAS's call, checks and packing and OpenMP's team cost more than the arithmetic); float keeps sgemm there.
  Thin: a threaded double GEMM of few columns n (a batch's or a micro-batch's rows: 1 <= n <= LayerSetGemmThinRows()'s
  64 by default, m > n, m and k >= 16) with op(B) = B runs on PetNet's AVX-512 kernels instead of BLAS where the CPU
  has AVX-512 (layergemmthin.c): B packed once (LayerGemmThinPack(), a kept buffer), the parts reading A where it
  lies; BLAS repacks the whole of A (a layer's weight) on every call, which a thin call cannot amortize. Each entry
  one ordered chain of FMAs: the same bits at any thread count, BLAS's within the last bits.
  Not threaded: one BLAS call and the epilogue, in the calling thread: a kernel that runs its own chunks on the
  threads (batch convolution, Winograd) calls it so from inside its parallel region. There the entry calls no PETSc
  function and returns an error code, as threadsimpl.h asks.

  LayerGemmBF16(): LayerGemmSingle() on the bfloat16 values of a layer's bfloat16 kernels (a Net at bfloat16 on
  oneDNN's bfloat16 backend): A, B and the mask bfloat16 as stored, read by oneDNN's matmul as they are; C float, or
  bfloat16 (whole, overwritten, not accumulated); the same bits as LayerGemmSingle() on the widened values, rounded.

  LayerGemmBatched(), LayerGemmBatchedSingle(): G such GEMMs whose operands lie sa, sb, sc apart (einsum's groups of
  (sample, batch letters)), with an epilogue of its backend only: on float with a oneDNN backend one batched oneDNN
  matmul for all groups; otherwise many groups in parts on the threads (one unthreaded GEMM each), few groups each a
  threaded GEMM.

  backend (float only; the epilogue's last field, zero = native when a caller leaves it out): a threaded float GEMM
  with backend PETNET_GEMM_ONEDNN_F32 or _BF16 runs as one oneDNN matmul on PetNet's threads (bias fused in it, the
  other epilogue steps after it, part by part on the threads), unless oneDNN has no fast kernel for its shape and
  type: that key falls back, once and for all, to sgemm as above (include/petnet/private/onednnimpl.h). oneDNN picks
  the instruction set from the CPU (AMX, AVX-512 BF16, AVX-512, AVX2) and its own blocking: its results are the same
  bits for the same threads, not across thread counts. The double entry ignores backend.
*/
#pragma once

#include <petnet/private/layerimpl.h>
#include <petnet/private/onednnimpl.h>

/* flops of a GEMM below which it is not cut: a part's GEMM should outweigh packing its operands */
#define LAYER_GEMM_PART_FLOPS 4.0e6

#define LAYER_GEMM_EPILOGUE(T)                                                                            \
  struct {                                                                                                \
    Layer             act;     /* an activation: C = f(C) without mask; C *= f'(mask) with it; or NULL */ \
    const T          *bias;    /* [m], or NULL */                                                         \
    const T          *mask;    /* where f' is taken (ldc apart, like C), or NULL */                       \
    PetscScalar      *acc;     /* add C into this double array (ldc apart, like C), or NULL */            \
    PetNetGemmBackend backend; /* float: who computes op(A) op(B) (above); native when left out */        \
  }
typedef LAYER_GEMM_EPILOGUE(PetscScalar) LayerGemmEpilogue;
typedef LAYER_GEMM_EPILOGUE(float) LayerGemmEpilogueSingle;

PETSC_INTERN PetscErrorCode LayerGemm(PetscBool, char, char, PetscInt, PetscInt, PetscInt, const PetscScalar *, PetscInt, const PetscScalar *, PetscInt, PetscScalar, PetscScalar *, PetscInt, const LayerGemmEpilogue *);
PETSC_INTERN PetscErrorCode LayerGemmSingle(PetscBool, char, char, PetscInt, PetscInt, PetscInt, const float *, PetscInt, const float *, PetscInt, float, float *, PetscInt, const LayerGemmEpilogueSingle *);
/* threaded, on bfloat16 A, B (float copies Af, Bf for the native fallback, or NULL) and mask; float C, or bfloat16 C16 */
PETSC_INTERN PetscErrorCode LayerGemmBF16(char, char, PetscInt, PetscInt, PetscInt, const uint16_t *, const float *, PetscInt, const uint16_t *, const float *, PetscInt, const uint16_t *, float, float *, uint16_t *, PetscInt,
                                          const LayerGemmEpilogueSingle *);
/* G GEMMs at once, C + g sc = op(A + g sa) op(B + g sb) + beta (C + g sc) (einsum's groups): the epilogue's backend only */
PETSC_INTERN PetscErrorCode LayerGemmBatched(PetscInt, char, char, PetscInt, PetscInt, PetscInt, const PetscScalar *, PetscInt, PetscInt, const PetscScalar *, PetscInt, PetscInt, PetscScalar, PetscScalar *, PetscInt, PetscInt,
                                             const LayerGemmEpilogue *);
/* the thin double GEMMs on AVX-512 (layergemmthin.c): whether a whole GEMM's sizes take them, and one part's run */
PETSC_INTERN PetscInt       LayerGemmThinRows;
PETSC_INTERN PetscBool      LayerGemmThinUse(char, char, PetscInt, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode LayerGemmThinPack(char, PetscInt, PetscInt, const double *, PetscInt, const double **);
PETSC_INTERN void           LayerGemmThin(char, PetscInt, PetscInt, PetscInt, const double *, PetscInt, const double *, double, double *, PetscInt);
PETSC_INTERN PetscErrorCode LayerGemmBatchedSingle(PetscInt, char, char, PetscInt, PetscInt, PetscInt, const float *, PetscInt, PetscInt, const float *, PetscInt, PetscInt, float, float *, PetscInt, PetscInt, const LayerGemmEpilogueSingle *);
