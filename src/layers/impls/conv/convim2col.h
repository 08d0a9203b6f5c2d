/*
  im2col and its adjoint col2im on channels-last sources with two or three spatial dims, shared by conv2d and conv3d
  (convbatch.c: a sample [H][W][Cin] or [D][H][W][Cin]) and K-FAC's patches (../conv2d/conv2dpatches.c). All read a
  channels-last source through the same geometry; only the origin, the strides of the source and the valid taps differ.

  Dims are (d, h, w), slowest first; a 2-D geometry has a depth of one point and one tap (ConvIm2colSetFlatDepth()).
  Output point (od, oh, ow) reads for its kernel tap (kd, kh, kw) the source point
      id = od step[0] + origin[0] + kd dilation[0],  ih = oh step[1] + origin[1] + kh dilation[1],
      iw = ow step[2] + origin[2] + kw dilation[2]
  at x + id ld[0] + ih ld[1] + iw Cin, channels g Cg .. (g + 1) Cg - 1 for group g, or reads zero when the tap is
  outside the valid range [t0[d][o], t1[d][o]) along a dim d (the zero padding). For a sample: origin = -pad,
  ld = (H W Cin, W Cin) (scalars per plane, row), t0 and t1 the window's (LayerWindow).

  A row is the out[2] output points of one (od, oh): row r = od out[1] + oh, r in [0, out[0] out[1]).
    col     [P][G][KD][KH][KW][Cg]    P = the output points of rows [r0, r1), row-major (KD = 1 in 2-D)
    im2col  col = the receptive fields of x                               (col overwritten)
    col2im  dx += the sum of each receptive field's dcol at its points    (the adjoint; taps outside are dropped)
*/
#pragma once

#include "../pool/window.h"

typedef struct {
  PetscInt        out[3], k[3], step[3], dilation[3];
  PetscInt        origin[3]; /* source coordinates (plane, row, column) of tap (0, 0, 0) of output point (0, 0, 0) */
  PetscInt        ld[2];     /* scalars between two source planes, two source rows */
  PetscInt        cin, cg, groups;
  const PetscInt *t0[3], *t1[3]; /* valid taps [t0, t1) of each output plane (d = 0), row (1) and column (2) */
} ConvIm2col;

PETSC_INTERN void           ConvIm2colSetFlatDepth(ConvIm2col *);
PETSC_INTERN void           ConvIm2colSetWindow(ConvIm2col *, const LayerWindow *, PetscInt, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode ConvIm2colRows(const ConvIm2col *, PetscInt, PetscInt, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvCol2imRowsAdd(const ConvIm2col *, PetscInt, PetscInt, const PetscScalar *, PetscScalar *);
/* the same on float values (single precision, batch mode): the same loops, entry for entry */
PETSC_INTERN PetscErrorCode ConvIm2colRowsSingle(const ConvIm2col *, PetscInt, PetscInt, const float *, float *);
PETSC_INTERN PetscErrorCode ConvCol2imRowsAddSingle(const ConvIm2col *, PetscInt, PetscInt, const float *, float *);
