/*
  conv2d: a 2-D convolution (cross-correlation, as PyTorch's Conv2d) on channels-last samples.

    x      [n][H][W][Cin]                 layer input
    y      [n][Ho][Wo][Cout]              layer output
    W      [Cout][KH][KW][Cg]             Cg = Cin / G input channels per group (G groups); output channel o is in
                                          group o / (Cout / G). PyTorch stores [Cout][Cg][KH][KW]: the tensors()
                                          shape is PyTorch's, the data is ours (torch = ours.permute(0, 3, 1, 2)).
    b      [Cout]                         (absent with -conv2d_bias 0)
    theta  = [W, b]

    forward   y[s][oh][ow][o]  = b[o] + sum_{kh,kw,c} W[o][kh][kw][c] x[s][oh sh - ph + kh dh][ow sw - pw + kw dw][g Cg + c]
    backward  dW += the same sum with x against dy,  db += sum over pixels of dy,  dx = its transpose applied to dy
    jvp       dy = conv(dx; W) + conv(x; dW) + db
    sobackward  backward is bilinear in (W, x) and db = sum dy depends on neither, so along (xdot, Wdot, bdot):
              dWdot += backward's dW with xdot for x,   dxdot += backward's dx with Wdot for W,   dbdot += 0

  One set of parameters, two layouts and three kernel families, each in its own file; LayerForward/Backward/JVP/
  SOBackward_Conv2d (conv2d.c) choose:
    batch mode (each rank holds whole samples):
      conv2dbatch.c       im2col + one GEMM per group, chunk by chunk of samples: any kernel, stride, padding, dilation
      conv2dwinograd.c    Winograd F(2x2, 3x3): 3x3, stride-1, undilated, ungrouped, from CONV2D_WINOGRAD_MIN_CHANNELS
                          input channels (-conv2d_algorithm auto|im2col|winograd)
    grid mode (a 2-D DMDA given by LayerConv2dSetDM() or NetDMDASetUp(); conv2dgrid.h): the tensors are fields of the
    DMDA, a grid point a sample of shape (Cin), convolved on each rank's block after a halo exchange
      conv2dgrid.c        set-up, the halo exchange and its adjoint, the public LayerConv2dSetDM()
      conv2dgridkernels.c im2col + GEMM on chunks of rows, or one GEMM per kernel tap and row
    shared:
      conv2dim2col.c      im2col and col2im of batch and grid mode, parameterised by the source's origin and strides
      conv2d.c            settings, options, set-up, initialisation, PyTorch tensor names
      conv2dpatches.c     the receptive fields of a batch as a public operation (LayerConv2dGetPatches(), for K-FAC)
  Sliding-window geometry (kernel, stride, padding, dilation, valid taps) is the pools' LayerWindow (../pool/window.h).

  Cache blocking: the batch is processed in chunks of samples (grid mode: of rows) whose workspace fits in
  -conv2d_max_workspace MB (default 1, about a core's L2 cache), so that each GEMM reads what the transform before it
  just wrote from cache.
*/
#pragma once

#include "../pool/window.h"
#include "conv2dim2col.h"
#include "conv2dgrid.h"
#include <petscblaslapack.h>

typedef enum { CONV2D_ALGORITHM_AUTO, CONV2D_ALGORITHM_IM2COL, CONV2D_ALGORITHM_WINOGRAD } Conv2dAlgorithm;
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

typedef struct {
  LayerWindow     win;    /* kernel, stride, padding, dilation; valid tap ranges */
  PetscInt        nout;   /* Cout */
  PetscInt        groups; /* G */
  PetscBool       bias;
  LayerInitType   init;
  PetscReal       initstd;
  PetscReal       maxworkspace; /* MB: the workspace of one chunk of samples (cache blocking) */
  Conv2dAlgorithm algorithm;    /* as requested; auto picks Winograd where it applies */

  /* set up from the input shape */
  PetscInt  cin, cg, cog, kg, ktot, pixels; /* Cin, Cin/G, Cout/G, KH KW Cg, G Kg, Ho Wo */
  PetscBool pointwise;                      /* 1x1, stride 1, no padding: col = x */
  PetscBool winograd;                       /* F(2x2, 3x3) in use */
  PetscBool dwtransposed;                   /* the weight gradient is accumulated transposed, in wdt */
  PetscInt  tiles[2];                       /* Winograd: 2x2 output tiles per sample along h and w */

  /* workspace for nalloc samples; col holds im2col(x) (or V(x)) of the last forward when colx == x */
  PetscInt     nalloc, chunk; /* samples the buffers hold, samples per chunk of the current batch */
  PetscScalar *col;           /* im2col: [chunk P][G Kg];  Winograd: V [16][chunk tiles][Cin] */
  PetscScalar *wm;            /* Winograd: M [16][chunk tiles][Cout] */
  PetscScalar *wu;            /* Winograd: U [16][Cout][Cin] */
  PetscScalar *wt;            /* the weights as the forward GEMM reads them, twice (jvp needs those of W and dW):
                                 Winograd Ut [16][Cin][Cout]; im2col W^T per group [G][Kg][Cout/G] */
  PetscScalar *wdt;           /* the weight-gradient GEMM's accumulator: Winograd dU [16][Cout][Cin];
                                 im2col dW^T per group when Kg < Cout/G */
  PetscScalar       *zeros;   /* Winograd: max(Cin, Cout) zeros (the padding), and as many scratch entries */
  const PetscScalar *colx;

  Conv2dIm2col im2col; /* the im2col geometry of either mode: the batch window, or the grid block */
  Conv2dGrid   grid;   /* grid mode (grid.dm set): the DMDA, its halo exchange and the block kernels' workspace */
} Layer_Conv2d;

PETSC_INTERN PetscErrorCode Conv2dForward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dBackward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVP_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dSOBackward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dResetWorkspace_Batch(Layer);
PETSC_INTERN PetscErrorCode Conv2dGetWorkspace_Batch(Layer, PetscInt);

PETSC_INTERN PetscErrorCode LayerConv2dGetPatchLayout_Conv2d(Layer, PetscInt *, PetscInt *, PetscInt *, PetscBool *);
PETSC_INTERN PetscErrorCode LayerConv2dGetPatches_Conv2d(Layer, PetscInt, const PetscScalar *, PetscScalar *);

PETSC_INTERN PetscErrorCode Conv2dForward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dBackward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVP_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dSOBackward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
