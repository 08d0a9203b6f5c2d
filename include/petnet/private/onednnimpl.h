/*
  The oneDNN backend of the float GEMMs (src/sys/onednn.c): one CPU engine and one in-order stream, created at the first
  call, and a cache of matmul primitives keyed by (element type, transposes, sizes, leading dimensions, beta, bias,
  relu, threads), destroyed at PetscFinalize(). A cached entry records once whether oneDNN has a kernel worth running for its
  key: a matmul that oneDNN does not implement, or implements only by its reference loops ("ref:any", e.g. bfloat16 on
  a CPU without AVX-512), is recorded as native and the caller runs its own GEMM (LayerGemmSingle(): sgemm).

  Callers state the backend of each GEMM with PetNetGemmBackend (LayerGemmEpilogueSingle's backend: a Net sets it on
  its layers from NetSetBackend() and its precision):

    PETNET_GEMM_NATIVE        BLAS (sgemm), or PetNet's own loops
    PETNET_GEMM_ONEDNN_F32    oneDNN matmul on float operands, float accumulation
    PETNET_GEMM_ONEDNN_BF16   oneDNN matmul on bfloat16 operands (each rounded to nearest even from the float the
                              caller holds: exact for values stored in bfloat16), float accumulation and float output

  Convolutions (conv2d's float kernels, src/layers/impls/conv/convonednn.c) go through the same engine, stream, cache
  and scratchpad: forward (the bias fused, and beta dst added as a sum post-op), backward data and backward weights
  (with the bias gradient), keyed by (op, backend, PetNetOneDNNConvShape, beta, threads). PetNet's layouts, channels
  last, are oneDNN's tags:

    x, y, dx, dy   [n][H][W][C]          nhwc   (ndhwc in 3-D)
    W, dW          [Cout][KH][KW][Cg]    ohwi   (gohwi with G > 1: group g holds output channels g Cout/G ...)
    b, db          [Cout]                a

  The data are given to oneDNN as they lie. The weights are given to the primitive in the layout oneDNN picks for the
  shape (format any: its jit kernels block them, e.g. OIhw8i8o), through a reorder primitive cached with the
  convolution's (made once, run once per call: once per forward pass, not per sample); in bfloat16 the same reorder
  rounds W to bfloat16 and x, dy are rounded into this module's buffers.

  Average pooling (avgpool's float kernels) uses the same cache with the same key type (cin the channels, k the
  window): forward and backward primitives on f32 nhwc data (PetNetOneDNNAvgPoolAvailable(), PetNetOneDNNAvgPool()).
  Max pooling (maxpool's float kernels) likewise, its forward in training mode writing a workspace that its backward
  reads, held by the caller between the two: one index per output, u8 (s32 for windows of 256 taps or more) in the
  output's layout nhwc, the maximum's position in its window kh KW + kw, padded taps counted
  (PetNetOneDNNMaxPoolAvailable(), PetNetOneDNNMaxPool()).
  Layer normalization (layernorm's float passes; rmsnorm has none in oneDNN 2.6): data [P][E] f32 (tag ab), the
  statistics mean and variance [P] f32 written by the forward (training) and read by the backward, gamma and beta
  (oneDNN's scale and shift) [E] f32, their gradients overwritten (PetNetOneDNNLayerNormAvailable(),
  PetNetOneDNNLayerNorm()).
  Batch normalization (batchnorm's float passes): data channels last as batchnorm holds them, [n][positions][C] (tags
  nhwc, ndhwc; flat and (T, C) inputs as 1 x 1 x C and 1 x T x C), the statistics mean and biased variance [C] f32, written by the forward in training mode or
  given (oneDNN's use_global_stats: the running statistics, or statistics reduced over the ranks), gamma and beta [C]
  f32, their gradients overwritten (PetNetOneDNNBatchNormAvailable(), PetNetOneDNNBatchNorm()).
*/
#pragma once

#include <petscsys.h>
#include <stdint.h>

typedef enum { PETNET_GEMM_NATIVE, PETNET_GEMM_ONEDNN_F32, PETNET_GEMM_ONEDNN_BF16 } PetNetGemmBackend;

PETSC_INTERN PetscBool PetNetOneDNNAvailable(void);
/* ... + bias, then relu when asked (an eltwise post-op: dense's fused relu, netfuse.c) */
PETSC_INTERN PetscErrorCode PetNetOneDNNMatmul(PetNetGemmBackend, char, char, PetscInt, PetscInt, PetscInt, const float *, PetscInt, const float *, PetscInt, float, float *, PetscInt, const float *, PetscBool, PetscBool *);
/* G matmuls at once: A + g sa, B + g sb, C + g sc (einsum's groups; onednn.c) */
PETSC_INTERN PetscErrorCode PetNetOneDNNMatmulBatched(PetNetGemmBackend, PetscInt, char, char, PetscInt, PetscInt, PetscInt, const float *, PetscInt, PetscInt, const float *, PetscInt, PetscInt, float, float *, PetscInt, PetscInt, const float *,
                                                      PetscBool *);
/* at bfloat16 on operands already bfloat16 (a layer's bfloat16 kernels): float C, or bfloat16 C (m x n, ldc m, beta 0) */
PETSC_INTERN PetscErrorCode PetNetOneDNNMatmulBF16(char, char, PetscInt, PetscInt, PetscInt, const uint16_t *, PetscInt, const uint16_t *, PetscInt, float, float *, PetscInt, const float *, PetscBool, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNMatmulBF16Out(char, char, PetscInt, PetscInt, PetscInt, const uint16_t *, PetscInt, const uint16_t *, PetscInt, uint16_t *, const float *, PetscBool, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNVersion(char *, size_t);
/* a convolution's geometry (the key of its primitives, with the op, backend, beta and threads); zero what is unused */
typedef struct {
  PetscInt  nsd;                     /* spatial dims: 2 or 3 */
  PetscInt  n, cin, cout, groups;    /* samples, input and output channels, groups */
  PetscInt  in[3], out[3];           /* spatial sizes, slowest first (h, w or d, h, w) */
  PetscInt  k[3], stride[3], pad[3]; /* kernel, stride, padding before each dim (after: what out[] implies) */
  PetscInt  dilation[3];             /* 1: none (PetNet's and PyTorch's convention, oneDNN's plus 1) */
  PetscBool bias;
  PetscBool relu;  /* a convolution's forward: relu as a post-op after the bias and the sum (a relu fused after it); else 0 */
  PetscBool out16; /* a convolution's forward or backward data at bfloat16: its output (y, dx) in bfloat16, not float */
} PetNetOneDNNConvShape;

PETSC_INTERN PetscErrorCode PetNetOneDNNConvProbe(PetNetGemmBackend, char *, size_t);
PETSC_INTERN PetscErrorCode PetNetOneDNNPoolProbe(PetNetGemmBackend, char *, size_t);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvAvailable(PetNetGemmBackend, const PetNetOneDNNConvShape *, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvForward(PetNetGemmBackend, const PetNetOneDNNConvShape *, const float *, const float *, const float *, float, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvBackwardData(PetNetGemmBackend, const PetNetOneDNNConvShape *, const float *, const float *, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvBackwardWeights(PetNetGemmBackend, const PetNetOneDNNConvShape *, const float *, const float *, float *, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvForwardBF16(const PetNetOneDNNConvShape *, const uint16_t *, const float *, const float *, float, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvBackwardDataBF16(const PetNetOneDNNConvShape *, const float *, const uint16_t *, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvBackwardWeightsBF16(const PetNetOneDNNConvShape *, const uint16_t *, const uint16_t *, float *, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvForwardBF16Out(const PetNetOneDNNConvShape *, const uint16_t *, const float *, const float *, uint16_t *);
PETSC_INTERN PetscErrorCode PetNetOneDNNConvBackwardDataBF16Out(const PetNetOneDNNConvShape *, const float *, const uint16_t *, uint16_t *);
/* oneDNN has bfloat16 convolutions and matmuls on this CPU (asked once) */
PETSC_INTERN PetscErrorCode PetNetOneDNNHasBF16(PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNFloatScratch(size_t, float **);
PETSC_INTERN PetscErrorCode PetNetOneDNNAvgPoolAvailable(PetNetGemmBackend, const PetNetOneDNNConvShape *, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNAvgPool(const PetNetOneDNNConvShape *, PetscBool, float *, float *);
PETSC_INTERN PetscErrorCode PetNetOneDNNMaxPoolAvailable(PetNetGemmBackend, const PetNetOneDNNConvShape *, PetscBool *, PetscInt *);
PETSC_INTERN PetscErrorCode PetNetOneDNNMaxPool(const PetNetOneDNNConvShape *, PetscBool, float *, float *, void *);
PETSC_INTERN PetscErrorCode PetNetOneDNNLayerNormAvailable(PetNetGemmBackend, PetscInt, PetscInt, PetscBool, float, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNLayerNorm(PetscBool, PetscInt, PetscInt, PetscBool, float, void *const *);
PETSC_INTERN PetscErrorCode PetNetOneDNNBatchNormAvailable(PetNetGemmBackend, PetscInt, PetscInt, const PetscInt[], PetscBool, float, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNBatchNorm(PetscBool, PetscBool, PetscInt, PetscInt, const PetscInt[], float, void *const *);
PETSC_INTERN PetscErrorCode PetNetOneDNNProbe(PetNetGemmBackend, PetscInt, PetscInt, PetscInt, char *, size_t);
