/*
  conv2d: a 2-D convolution (cross-correlation, as PyTorch's Conv2d) on channels-last samples.

    x      [n][H][W][Cin]                 layer input
    y      [n][Ho][Wo][Cout]              layer output
    W      [Cout][KH][KW][Cg]             Cg = Cin / G input channels per group (G groups); output channel o is in
                                          group o / (Cout / G). PyTorch stores [Cout][Cg][KH][KW]: the tensors()
                                          shape is PyTorch's, the data is ours (torch = ours.permute(0, 3, 1, 2)).
    b      [Cout]                         (absent with -conv2d_bias 0)
    theta  = [W, b]

  im2col: col [P][G][KH][KW][Cg] with P = ns Ho Wo output pixels of a chunk of ns samples and Kg = KH KW Cg, so that
  row p of col is the receptive field of pixel p, group by group. In column-major BLAS terms col is a (G Kg) x P
  matrix, y a Cout x P matrix and the weights of group g a Kg x (Cout/G) matrix Wg; one GEMM per group and chunk:
    forward   y_g   = Wg^T col_g  (+ b)             dgemm('N','N') on a transposed copy of Wg
    backward  dWg  += col_g dy_g^T                  dgemm('N','T') (as dWg^T += dy_g col_g^T when Kg < Cout/G)
              dcol_g = Wg dy_g ;  dx = col2im(dcol) dgemm('N','N') then a scatter-add
    jvp       dy_g  = Wg^T col(dx)_g + dWg^T col(x)_g (+ db)
  Channels-last makes each kernel row of a receptive field a contiguous run of KW*Cin values (G = 1, no dilation).
  A 1x1, stride-1, unpadded convolution needs no im2col: col is x itself.

  3x3, stride-1, undilated, ungrouped convolutions use Winograd's F(2x2, 3x3) instead (conv2dwinograd.c): 16 GEMMs of
  Cout x Cin x tiles replace the Cout x 9 Cin x pixels one, 2.25 times fewer multiplications, and backward is the exact
  transpose of forward (same transforms, transposed), so the adjoint identity holds to round-off.

  Cache blocking: the batch is processed in chunks of samples whose workspace (col and the output chunk, or Winograd's
  V and M) fits in -conv2d_max_workspace MB (default 1, about a core's L2 cache), so that each GEMM reads what the
  transform before it just wrote from cache. Backward recomputes
  col(x) (or V(x)) chunk by chunk, except when one chunk holds the whole batch: then forward's is kept.

  Two layouts, one set of parameters: the above is batch mode (batch-distributed: each rank holds whole samples).
  Given a 2-D DMDA (LayerConv2dSetDM(), NetDMDASetUp()), the layer is in grid mode instead (conv2dgrid.h): the tensors are
  fields of the DMDA, a grid point a sample of shape (Cin), convolved after a halo exchange (conv2dgrid.c, conv2dgridkernels.c).
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
PETSC_INTERN PetscErrorCode Conv2dResetWorkspace_Batch(Layer);
PETSC_INTERN PetscErrorCode Conv2dGetWorkspace_Batch(Layer, PetscInt);

PETSC_INTERN PetscErrorCode Conv2dForward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dBackward_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVP_Winograd(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
