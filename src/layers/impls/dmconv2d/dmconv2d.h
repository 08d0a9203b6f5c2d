/*
  dmconv2d: a 2-D convolution (cross-correlation, stride 1, "same" output size) that works on two layouts.

  Grid-distributed (a DMDA given with LayerDMConv2dSetDM(), e.g. by NetDMDASetUp()): the tensor is ONE field on the
  DMDA's 2-D grid, each rank holding its block of grid points; a sample is a grid point, input shape (Cin), output
  shape (Cout). The halo exchange is DMGlobalToLocal() on a DMDA like the user's (same grid, same ownership) with
  dof Cin and a box stencil of the kernel's radius; its adjoint is DMLocalToGlobal() with ADD_VALUES. Taps outside a
  non-periodic grid read zero (zero padding), a periodic grid wraps around.
  Batch-distributed (no DMDA): the samples are whole (H, W, Cin) images, zero padded: PyTorch's
  Conv2d(padding = K/2) in channels-last.

  Both go through the same kernels, on a block of output points and an array holding at least those points plus the
  kernel's radius around them (the ghosted local array, or the sample itself):

    x      [gym][gxm][Cin]     the input around the block (DMDA local array, or one sample)
    y      [ym][xm][Cout]      the block's output
    W      [Cout][KH][KW][Cin] (PyTorch: [Cout][Cin][KH][KW]; torch = ours.permute(0, 3, 1, 2)), the same as conv2d's
    b      [Cout]              (absent with bias 0)
    theta  = [W, b]

  Two algorithms (-dmconv2d_algorithm). im2col: over chunks of rows of the block, col [P][KH][KW][Cin], then one GEMM
  per chunk (column-major: col is K x P with K = KH KW Cin, Wc = W^T is K x Cout):
    forward   y    = Wc^T col(x) + b                         dgemm('T','N')
    backward  dWc += col(x) dy^T,  db += dy 1               dgemm('N','T')
              dcol = Wc dy;  dx (ghosted) += col2im(dcol)    dgemm('N','N'), then a scatter-add
    jvp       dy   = Wc^T col(dx) + dWc^T col(x) + db
  taps: no im2col; for each row of the block and each kernel tap, the points the tap reaches read a contiguous run of
  the input, so the tap is one GEMM with its Cin x Cout block of Wc (dmconv2dkernels.c). It moves KH KW times less
  memory than im2col, which matters with few channels; im2col makes fewer, larger GEMMs, which matters on narrow
  blocks. auto: taps when the block rows have at least 32 points.
*/
#pragma once

#include <petnet/private/layerimpl.h>
#include <petnetdmda.h>
#include <petscblaslapack.h>

/* A block of output points and the input array that surrounds it */
typedef struct {
  PetscInt  xs, ys, xm, ym;     /* output points (global grid indices): [xs, xs + xm) x [ys, ys + ym) */
  PetscInt  gxs, gys, gxm, gym; /* the input array holds the points [gxs, gxs + gxm) x [gys, gys + gym) */
  PetscInt  M, N;               /* the grid: M points along x (fastest), N along y */
  PetscBool periodic[2];        /* along x, y: a tap outside the grid wraps (read from the ghosts) or reads zero */
} DMConv2dBlock;

typedef struct {
  PetscInt               nout, k[2]; /* Cout; kernel KH (along y, rows) x KW (along x), both odd */
  PetscBool              bias;
  LayerInitType          init;
  PetscReal              initstd;
  DM                     dm; /* the user's DMDA (grid mode), or NULL (batch mode) */
  LayerDMConv2dAlgorithm algorithm;

  /* set up from the input shape */
  PetscInt      cin, ktot;  /* Cin, KH KW Cin */
  DM            dmin;       /* grid mode: the halo exchange's DMDA (dof Cin, box stencil of the kernel radius) */
  DMConv2dBlock block;      /* grid mode: this rank's block; batch mode: one sample */
  Vec           xg, xl, dl; /* grid mode: a global Vec whose array is placed, the ghosted input and its derivative */
  PetscBool     taps;       /* the tap algorithm is in use (else im2col) */
  PetscInt      chunkrows;  /* rows of the block per im2col chunk */
  PetscScalar  *col;        /* im2col: [chunkrows xm][KH][KW][Cin] */
  PetscScalar  *wt;         /* taps: the weights and a weight direction as [tap][Cin][Cout], twice K Cout */
} Layer_DMConv2d;

/* On one block: forward(theta, x, y), backward(theta, x, dy, dx += , dtheta +=), jvp(theta, x, dx, dtheta, dy) */
PETSC_INTERN PetscErrorCode DMConv2dForwardIm2col_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode DMConv2dBackwardIm2col_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode DMConv2dJVPIm2col_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode DMConv2dForwardTaps_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode DMConv2dBackwardTaps_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode DMConv2dJVPTaps_Private(Layer, const DMConv2dBlock *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
