/*
  conv2d in grid mode: the layer's tensors are fields of a 2-D DMDA (LayerConv2dSetDM(), e.g. by NetDMDASetUp()).

  A field is ONE image distributed over the ranks, each holding its block of grid points; a grid point is a sample,
  input shape (Cin), output shape (Cout). Grid mode takes the convolutions that keep the grid: stride 1, dilation 1,
  one group, an odd kernel and padding (KH/2, KW/2), i.e. exactly the batch layer conv2d:OUT:K:1:K/2. Taps outside a
  non-periodic grid read zero, as the batch layer's zero padding does, so a model trained on (H, W, Cin) images
  computes the same function on a field; on a periodic grid the taps wrap around.

  The halo exchange is DMGlobalToLocal() on a DMDA like the user's (same grid, boundary types and ownership) with
  dof Cin and a box stencil of the kernel's radius; its adjoint is DMLocalToGlobal() with ADD_VALUES. The kernels
  (conv2dgridkernels.c) work on the rank's block of output points and the ghosted local array around it:

    x      [gym][gxm][Cin]     the ghosted input (DMDA local array: the block plus the kernel's radius)
    y      [ym][xm][Cout]      the block's output (the local part of a global Vec, x fastest)
    W      [Cout][KH][KW][Cin] the batch layer's weights (groups 1): the same theta works in both modes
    b      [Cout]              (absent with -conv2d_bias 0)
    theta  = [W, b]

  KH runs along y (rows of the block), KW along x. Two algorithms (-conv2d_grid_algorithm, conv2dgridkernels.c):
  im2col (the shared conv2dim2col.c on the ghosted array) + one GEMM per chunk of rows, or taps (one GEMM per kernel tap
  and row, no im2col); auto takes taps when the block rows have at least CONV2D_GRID_TAPS_MIN_WIDTH points. Both run on
  PetNet's threads (-net_threads) over parts of the block's rows fixed at set-up (nparts below): the same bits at any
  thread count (the parts and backward's two phases: conv2dgridkernels.c).
*/
#pragma once

#include <petnet/private/layerimpl.h>
#include <petscdmda.h>

#define CONV2D_GRID_TAPS_MIN_WIDTH  32
#define CONV2D_GRID_PART_MIN_POINTS 256 /* the threads' parts of the block: at least this many output points each */

/* This rank's block of output points and the ghosted array around it */
typedef struct {
  PetscInt  xs, ys, xm, ym;     /* output points (global grid indices): [xs, xs + xm) x [ys, ys + ym) */
  PetscInt  gxs, gys, gxm, gym; /* the ghosted array holds the points [gxs, gxs + gxm) x [gys, gys + gym) */
  PetscInt  M, N;               /* the grid: M points along x (fastest), N along y */
  PetscBool periodic[2];        /* along x, y: a tap outside the grid wraps (read from the ghosts) or reads zero */
} Conv2dGridBlock;

typedef struct {
  DM                       dm;        /* the user's DMDA: grid mode; NULL: batch mode */
  LayerConv2dGridAlgorithm algorithm; /* as requested */

  /* set up from the input shape and the DMDA */
  DM              dmin;          /* the halo exchange's DMDA: dof Cin, box stencil of the kernel radius */
  Conv2dGridBlock block;         /* this rank's block */
  Vec             xg;            /* a global Vec of dmin whose array is placed (the layer's input or its derivative) */
  Vec             xl, dl;        /* the ghosted input and the ghosted derivative (jvp's dx, backward's dx) */
  PetscBool       taps;          /* the tap algorithm is in use (else im2col) */
  PetscInt        chunkrows;     /* im2col: rows of the block per chunk */
  PetscScalar    *col;           /* im2col: [threads][chunkrows xm][KH][KW][Cin], one buffer per thread */
  PetscScalar    *wt;            /* taps: the weights and a weight direction as [tap][Cin][Cout], twice K Cout */
  PetscInt       *t0[2], *t1[2]; /* im2col: the taps inside the grid, [t0, t1), of each block row (0) and column (1) */
  PetscInt        nparts;        /* parts of the block's rows the kernels' threads take (from the block's size alone) */
  PetscInt        nthreads;      /* im2col: the threads col has buffers for (Conv2dGridGetWorkspace()) */
  PetscScalar    *dwpart;        /* with several parts: each part's weight and bias gradient, [nparts][K Cout + Cout] */
} Conv2dGrid;

/* conv2dgrid.c: requirements, set-up, view, and the layer's forward/backward/jvp/sobackward on the rank's n grid points */
PETSC_INTERN PetscErrorCode Conv2dCheck_Grid(Layer);
PETSC_INTERN PetscErrorCode Conv2dSetUp_Grid(Layer);
PETSC_INTERN PetscErrorCode Conv2dReset_Grid(Layer);
PETSC_INTERN PetscErrorCode Conv2dGridGetWorkspace(Layer);
PETSC_INTERN PetscErrorCode Conv2dView_Grid(Layer, PetscViewer);
PETSC_INTERN PetscErrorCode Conv2dForward_Grid(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dBackward_Grid(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dJVP_Grid(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dSOBackward_Grid(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerConv2dSetDM_Conv2d(Layer, DM);
PETSC_INTERN PetscErrorCode LayerConv2dGetDM_Conv2d(Layer, DM *);
PETSC_INTERN PetscErrorCode LayerConv2dSetGridAlgorithm_Conv2d(Layer, LayerConv2dGridAlgorithm);

/* conv2dgridkernels.c, on the block: forward(theta, x, y), backward(W, x, dy, dx +=, dW +=, db +=), jvp(theta, x, dx,
   dtheta, dy) with x and dx the ghosted arrays (NULL outputs are skipped) */
PETSC_INTERN PetscErrorCode Conv2dGridForward_Im2col(Layer, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dGridBackward_Im2col(Layer, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dGridJVP_Im2col(Layer, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dGridForward_Taps(Layer, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dGridBackward_Taps(Layer, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dGridJVP_Taps(Layer, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
