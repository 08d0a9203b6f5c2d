/*
  im2col and its adjoint col2im, shared by batch mode (conv2dbatch.c: a sample [H][W][Cin]) and grid mode
  (conv2dgridkernels.c: the ghosted block [gym][gxm][Cin] of a DMDA field). Both read a channels-last source array
  through the same geometry; only the origin, the row stride and the valid taps differ.

  Output pixel (oh, ow), oh in [0, out[0]), ow in [0, out[1]), reads for its kernel tap (kh, kw) the source pixel
      ih = oh step[0] + origin[0] + kh dilation[0],   iw = ow step[1] + origin[1] + kw dilation[1]
  at x + ih ld + iw Cin, channels g Cg .. (g + 1) Cg - 1 for group g, or reads zero when the tap is outside the valid
  range [t0[0][oh], t1[0][oh]) x [t0[1][ow], t1[1][ow]) (the zero padding).
                                   batch mode                      grid mode
    origin                         -pad                            (ys - gys - KH/2, xs - gxs - KW/2)
    ld (scalars per source row)    W Cin                           gxm Cin
    t0, t1                         the window's (LayerWindow)      the taps inside a non-periodic grid (all if periodic)

    col     [P][G][KH][KW][Cg]    P = the output pixels of rows [r0, r1), row-major (oh, ow)
    im2col  col = the receptive fields of x                               (col overwritten)
    col2im  dx += the sum of each receptive field's dcol at its pixels    (the adjoint; taps outside are dropped)
*/
#pragma once

#include <petscsys.h>

typedef struct {
  PetscInt        out[2], k[2], step[2], dilation[2];
  PetscInt        origin[2]; /* source coordinates (row, column) of tap (0, 0) of output pixel (0, 0) */
  PetscInt        ld;        /* scalars between two source rows */
  PetscInt        cin, cg, groups;
  const PetscInt *t0[2], *t1[2]; /* valid taps [t0, t1) of each output row (d = 0) and column (d = 1) */
} Conv2dIm2col;

PETSC_INTERN PetscErrorCode Conv2dIm2colRows(const Conv2dIm2col *, PetscInt, PetscInt, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode Conv2dCol2imRowsAdd(const Conv2dIm2col *, PetscInt, PetscInt, const PetscScalar *, PetscScalar *);
