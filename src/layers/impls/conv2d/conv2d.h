/*
  conv2d: a 2-D convolution (cross-correlation, as PyTorch's Conv2d) on channels-last samples. The layouts, formulas and
  settings are those of the convolution base it shares with conv3d (../conv/conv.h), with nsd = 2:

    x      [n][H][W][Cin]        y  [n][Ho][Wo][Cout]
    W      [Cout][KH][KW][Cg]    PyTorch [Cout][Cg][KH][KW] (torch = ours.permute(0, 3, 1, 2))
    b      [Cout]                theta = [W, b]

  One set of parameters and two kernel families; LayerForward/Backward/JVP/SOBackward_Conv2d (conv2d.c) choose:
    ../conv/convbatch.c     im2col + one GEMM per group, chunk by chunk of output rows: any kernel, stride, padding, dilation
    conv2dwinograd.c        Winograd F(2x2, 3x3): 3x3, stride-1, undilated, ungrouped, from CONV2D_WINOGRAD_MIN_CHANNELS
                            input channels (-conv2d_algorithm auto|im2col|winograd)
    conv2dwinogradkernels.h its transforms, GEMMs and passes, templated on the element type (double and float)
    ../conv/convtaps.c      taps: one GEMM per kernel tap and output row, no im2col: one group, stride 1 along the
                            rows; auto takes it for large samples with long rows (a rank's box of a field on a DMDA)
  shared:
    ../conv/convim2col.c    im2col and col2im, parameterised by the source's origin and strides
    ../conv/conv.c          settings, options, set-up, initialisation, PyTorch tensor names
    conv2d.c                the kind: its algorithm, set-up, public setters
    conv2dpatches.c         the public calls of the receptive fields of a batch (LayerConv2dGetPatches(), for K-FAC)
  A Net on a DMDA (NetSetGrid(), NetDMDASetUp()) runs a batch-mode copy of the layer on each rank's box of the field
  (src/net/netspatial.c); the node itself, layer->fielddim set (point form), is the base's (Cin) -> (Cout) and is never run.

  Cache blocking: the batch is processed in chunks (of output rows for im2col, of samples for Winograd) whose workspace
  fits in -conv2d_max_workspace MB (default 1, about a core's L2 cache), so that each GEMM reads what the transform
  before it just wrote from cache.
*/
#pragma once

#include "../conv/conv.h"
#include "../conv/convtaps.h"

typedef enum { CONV2D_ALGORITHM_AUTO, CONV2D_ALGORITHM_IM2COL, CONV2D_ALGORITHM_WINOGRAD, CONV2D_ALGORITHM_TAPS } Conv2dAlgorithm;
PETSC_INTERN const char *const Conv2dAlgorithms[];
#define CONV2D_WINOGRAD_MIN_CHANNELS 4 /* auto: Winograd from this many input channels */

/*
  The build targets baseline x86-64 (SSE2 vectors of 2 doubles); the Winograd transforms, loops over contiguous
  channels, also get AVX2 and AVX-512 versions, chosen at load time for the machine that runs them (GCC's function
  multi-versioning; measured 15% faster on the whole layer on an AVX-512 machine).
*/
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#define CONV2D_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CONV2D_SIMD_CLONES
#endif

/*
  Winograd F(2x2, 3x3)'s workspace on one element type T, for nalloc samples and nthreads threads (layouts in
  conv2dwinograd.c); the kernels (conv2dwinogradkernels.h) use the same names on both types
*/
#define CONV2D_WINOGRAD_WORK(T)                                                                                                                           \
  struct {                                                                                                                                                \
    PetscInt     nalloc, chunk; /* samples the buffers hold, samples per chunk of the current batch */                                                    \
    PetscInt     nthreads;      /* threads the per-thread buffers serve */                                                                                \
    size_t       vsize, msize;  /* values of one thread's V and M */                                                                                      \
    T           *V;             /* [threads][16][chunk tiles][Cin]; thread 0's is V(x) of the last forward when Vx == x */                                \
    T           *M;             /* [threads][16][chunk tiles][Cout] */                                                                                    \
    T           *U, *Ut;        /* [16][Cout][Cin] and [16][Cin][Cout], twice (jvp needs those of W and dW) */                                            \
    T           *dUc;           /* [threads][16][Cout][Cin]: float, one chunk's weight products; jvp: U(dW) */                                            \
    T           *b;             /* [Cout]: float, the bias (forward) or its tangent (jvp) */                                                              \
    T           *zeros;         /* max(Cin, Cout) zeros (the padding), then as many scratch entries per thread */                                         \
    PetscScalar *dU, *dbpart;   /* [PETNET_THREAD_PARTS][16][Cout][Cin], [PETNET_THREAD_PARTS][Cout]: each part's weight and bias gradients, in double */ \
    const T     *Vx;                                                                                                                                      \
  }
typedef CONV2D_WINOGRAD_WORK(PetscScalar) Conv2dWinogradWork;
typedef CONV2D_WINOGRAD_WORK(float) Conv2dWinogradWorkSingle;

typedef struct {
  PetscBool                on;       /* F(2x2, 3x3) in use */
  PetscInt                 tiles[2]; /* 2x2 output tiles per sample along h and w */
  Conv2dWinogradWork       dbl;      /* the workspace in double */
  Conv2dWinogradWorkSingle sgl;      /* and in single precision */
} Conv2dWinograd;

typedef struct {
  LayerConv       base;      /* first: the shared convolution code casts layer->data to LayerConv (../conv/conv.h) */
  Conv2dAlgorithm algorithm; /* as requested; auto picks Winograd where it applies */
  Conv2dWinograd  wg;        /* Winograd, in double and in single precision */
  ConvTaps        taps;      /* one GEMM per kernel tap and row (../conv/convtaps.c) */
} Layer_Conv2d;

PETSC_INTERN PetscErrorCode Conv2dForward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dForwardAct_Winograd(Layer, Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dBackward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVP_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dSOBackward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dResetWorkspace_Winograd(Layer);
PETSC_INTERN void           Conv2dWinogradWeightsTranspose_Private(const Layer_Conv2d *, const PetscScalar *, PetscScalar *);
PETSC_INTERN void           Conv2dWinogradPartAccumulators_Private(const Layer_Conv2d *, PetscScalar *, PetscScalar *, PetscInt, PetscInt, PetscScalar *, PetscScalar **, PetscScalar **);
PETSC_INTERN void           Conv2dWinogradAddParts_Private(const Layer_Conv2d *, PetscScalar *, const PetscScalar *, PetscInt, PetscScalar *, PetscScalar *);
/* the same in single precision (float values, double parameters; layerimpl.h) */
PETSC_INTERN PetscErrorCode Conv2dForwardSingle_Winograd(Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode Conv2dForwardActSingle_Winograd(Layer, Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode Conv2dBackwardSingle_Winograd(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVPSingle_Winograd(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
PETSC_INTERN PetscErrorCode Conv2dResetWorkspaceSingle_Winograd(Layer);
