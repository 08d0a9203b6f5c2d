/*
  The taps algorithm of a convolution (convtaps.c): no im2col, one GEMM per kernel tap and output row. For a row of Wo
  output points and a tap (kd, kh, kw) the points the tap reaches inside the input read a contiguous run of input
  points (stride 1 along the fastest dim), so the tap is one GEMM with the tap's Cin x Cout block of the weights:

    x      [n][D][H][W][Cin]     y [n][Do][Ho][Wo][Cout]   (no D in 2-D)
    W      [Cout][taps][Cin]     one group; wt [taps][Cin][Cout] its transposed copy (column-major Cout x Cin per tap)
    forward   y_row[q0:q1]  += W_t^T x_src       dgemm('N','N', Cout, nq, Cin) on wt
    backward  dW_t          += x_src dy_row^T    dgemm('N','T', Cin, Cout, nq), over output rows
              dx_row        += W_t dy_src        dgemm('N','N', Cin, nr, Cout), over INPUT rows (a gather: each input
                                                 row is written by one thread, from the output rows that read it)
    jvp       dy_row         = W_t^T dx_src + dW_t^T x_src (+ db)
    sobackward  dWdot_t += xdot_src dy_row^T,  dxdot_row += Wdot_t dy_src
  Taps in the padding are skipped by narrowing [q0, q1) or the row. Taps move KD KH KW times less memory than im2col
  and need no workspace beyond wt, which matters for large samples with few channels (a rank's box of a field on a
  DMDA, src/net/netspatial.c); im2col and Winograd make fewer, larger GEMMs, which matters for small images.

  Threads: forward and jvp write disjoint output rows; the input cotangent, disjoint input rows; the weight gradient
  is summed over parts of the output rows (PetNetThreadParts(), from the sizes alone) in part order: the same bits at
  any thread count.
*/
#pragma once

#include "conv.h"

typedef struct {
  PetscBool    on;     /* the layer uses taps */
  PetscScalar *wt;     /* [2][taps][Cin][Cout]: W and a direction (jvp's dW) transposed per tap */
  PetscScalar *dwpart; /* [PETNET_THREAD_PARTS][Cout Kg + Cout]: each part's weight and bias gradient */
} ConvTaps;

#define CONV_TAPS_MIN_WIDTH  32   /* auto: taps for output rows of at least this many points ... */
#define CONV_TAPS_MIN_PIXELS 4096 /* ... in samples of at least this many output points (a field's box, not an image) */

PETSC_INTERN PetscBool      ConvTapsApplies(const LayerConv *);
PETSC_INTERN PetscErrorCode ConvTapsSetUp(Layer, ConvTaps *);
PETSC_INTERN PetscErrorCode ConvTapsReset(ConvTaps *);
PETSC_INTERN PetscErrorCode ConvForward_Taps(Layer, ConvTaps *, Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvBackward_Taps(Layer, ConvTaps *, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvJVP_Taps(Layer, ConvTaps *, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvSOBackward_Taps(Layer, ConvTaps *, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
