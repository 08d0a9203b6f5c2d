/*
  conv2d: a 2-D convolution (cross-correlation, as PyTorch's Conv2d) on channels-last samples.

    x      [n][H][W][Cin]                 layer input
    y      [n][Ho][Wo][Cout]              layer output
    W      [Cout][KH][KW][Cg]             Cg = Cin / G input channels per group (G groups); output channel o is in
                                          group o / (Cout / G). PyTorch stores [Cout][Cg][KH][KW]: the tensors()
                                          shape is PyTorch's, the data is ours (torch = ours.permute(0, 3, 1, 2)).
    b      [Cout]                         (absent with -conv2d_bias 0)
    theta  = [W, b]

  im2col: col [P][G][KH][KW][Cg] with P = n Ho Wo output pixels and Kg = KH KW Cg, so that row p of col is the
  receptive field of pixel p, group by group. In column-major BLAS terms col is a (G Kg) x P matrix, y a Cout x P
  matrix and the weights of group g a Kg x (Cout/G) matrix Wg; one GEMM per group over the whole batch:
    forward   y_g   = Wg^T col_g  (+ b)             dgemm('T','N')
    backward  dWg  += col_g y_g^T                   dgemm('N','T')
              dcol_g = Wg dy_g ;  dx = col2im(dcol) dgemm('N','N') then a scatter-add
    jvp       dy_g  = Wg^T col(dx)_g + dWg^T col(x)_g (+ db)
  Channels-last makes each kernel row of a receptive field a contiguous run of KW*Cin values (G = 1, no dilation).
  A 1x1, stride-1, unpadded convolution needs no im2col: col is x itself.
*/
#pragma once

#include "window.h"
#include <petscblaslapack.h>

typedef struct {
  LayerWindow   win;    /* kernel, stride, padding, dilation; valid tap ranges */
  PetscInt      nout;   /* Cout */
  PetscInt      groups; /* G */
  PetscBool     bias;
  LayerInitType init;
  PetscReal     initstd;
  PetscReal     maxworkspace; /* MB: above this the im2col buffer covers only a chunk of the samples */

  /* set up from the input shape */
  PetscInt  cin, cg, cog, kg, ktot, pixels; /* Cin, Cin/G, Cout/G, KH KW Cg, G Kg, Ho Wo */
  PetscBool pointwise;                      /* 1x1, stride 1, no padding: col = x */

  /* workspace, sized for the batch size nwork; col holds im2col(x) of the last forward when colx == x */
  PetscInt           nwork, chunk; /* samples per im2col chunk */
  PetscScalar       *col;
  const PetscScalar *colx;
} Layer_Conv2d;

PETSC_INTERN PetscErrorCode LayerForward_Conv2d(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerBackward_Conv2d(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVP_Conv2d(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerResetWorkspace_Conv2d(Layer);
