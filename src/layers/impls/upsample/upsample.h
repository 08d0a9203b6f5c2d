/*
  upsample: nearest or (bi/tri)linear upsampling by integer factors, channels last; PyTorch's
  nn.Upsample(scale_factor=S, mode='nearest' | 'bilinear' | 'trilinear', align_corners=False).

    x  [n][D][H][W][C]            input; 2-D samples (H, W, C) are the case D = 1 (nsd = 2 spatial dims)
    y  [n][Do][Ho][Wo][C]         Do = D sd, Ho = H sh, Wo = W sw (batch mode; a grid block has its own sizes)

  Along each spatial dim, output index o reads (global indices, N inputs along the dim, factor s; PyTorch's formulas
  and arithmetic, so that the results agree with it to the last bit of the sources and weights):
    nearest   i(o) = min(floor(float(o) * float(1/s)), N - 1)   (o / 2 for s = 2, o for s = 1; float as PyTorch's
              kernel computes it: for s >= 41 it differs from o / s at some o, and PyTorch's answer is kept)
    linear    r = max((1/s) (o + 1/2) - 1/2, 0)  (double),  i0 = floor(r),  i1 = i0 + (i0 < N - 1),
              lambda1 = min(r - i0, 1),  lambda0 = 1 - lambda1     (i1 = i0 at the last input: the edges clamp)
  and, nested over the dims as PyTorch nests them (slowest dim outermost; x_ab = x[i_a along h][i_b along w]):
    bilinear  y = (x00 lw0 + x01 lw1) lh0 + (x10 lw0 + x11 lw1) lh1
    trilinear y = (bilinear of plane d0) ld0 + (bilinear of plane d1) ld1
  The map is linear in x, with no parameters:
    forward   y = U x
    backward  dx = U^T dy: zero, then each output scatters dy times its weights into the points it reads (ADDS)
    jvp       dy = U dx
  Set-up turns the sources into element offsets per output index and dim (off0, off1) and the weights into tables
  (l0, l1), so that the kernels' innermost loop runs over the C contiguous channels without a test.

  Grid mode: on a Net over a 2-D or 3-D grid (layer->fielddim > 0, point form) the layer's shapes are (C) and the Net runs local
  copies of it on each rank's block: getscale gives the factors, gridbox the input box an output block reads, and
  setgridblock makes a copy compute exactly one output block [olo, ohi) of the upsampling of a global grid N from the
  input box [ilo, ihi) (its input shape is the box, its output shape the block). The tables of such a copy are those
  of the global grid, shifted by ilo: its outputs equal the global layer's bit for bit.
*/
#pragma once

#include <petnet/private/layerimpl.h>

#define UPSAMPLE_MAX_DIM 3

typedef struct {
  /* settings */
  PetscInt          nscale;                  /* factors given: 1 (the same along every spatial dim) or one per dim */
  PetscInt          scale[UPSAMPLE_MAX_DIM]; /* as given, slowest dim first */
  LayerUpsampleMode mode;
  /* an output block of a global grid (setgridblock; nblock = 0: the whole sample) */
  PetscInt   nblock;
  PetscInt64 N[UPSAMPLE_MAX_DIM], ilo[UPSAMPLE_MAX_DIM], ihi[UPSAMPLE_MAX_DIM], olo[UPSAMPLE_MAX_DIM], ohi[UPSAMPLE_MAX_DIM];
  /* set up; dims padded to 3 with a leading dim of size 1 for 2-D samples */
  PetscInt     nsd;                                             /* spatial dims, 2 or 3 */
  PetscInt     s[UPSAMPLE_MAX_DIM];                             /* the factor along each dim */
  PetscInt     in[UPSAMPLE_MAX_DIM], out[UPSAMPLE_MAX_DIM];     /* the sample's spatial sizes */
  PetscInt     C;                                               /* channels */
  PetscInt    *off0[UPSAMPLE_MAX_DIM], *off1[UPSAMPLE_MAX_DIM]; /* per output index: element offsets of the sources in a sample (nearest: off0) */
  PetscReal   *l0[UPSAMPLE_MAX_DIM], *l1[UPSAMPLE_MAX_DIM];     /* linear: the weights of off0 and off1 */
  PetscScalar *work;                                            /* linear backward: one input row [W][C] per thread part */
} Layer_Upsample;

PETSC_INTERN void           UpsampleSourceNearest(PetscInt64, PetscInt64, PetscInt, PetscInt64 *);
PETSC_INTERN void           UpsampleSourceLinear(PetscInt64, PetscInt64, PetscInt, PetscInt64 *, PetscInt64 *, PetscReal *, PetscReal *);
PETSC_INTERN PetscErrorCode UpsampleSetUpTables(Layer);
PETSC_INTERN PetscErrorCode UpsampleResetTables(Layer);
PETSC_INTERN PetscErrorCode LayerForward_Upsample(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerBackward_Upsample(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVP_Upsample(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
