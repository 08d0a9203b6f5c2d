/*
  convtranspose2d: PyTorch's ConvTranspose2d on channels-last samples. It is the adjoint of the conv2d with the same
  kernel, stride, padding, dilation and groups that maps (Ho, Wo, Cout) images to (H, W, Cin) ones: its forward pass is
  that convolution's input gradient, im2col's adjoint col2im after a GEMM, and its backward pass is that convolution.

    x      [n][H][W][Cin]             layer input
    y      [n][Ho][Wo][Cout]          Ho = (H - 1) sh - 2 ph + dh (KH - 1) + oph + 1 (the same along w), oph the output
                                      padding (< max(stride, dilation), as PyTorch requires): extra rows at the end
    W      [Cin][KH][KW][Cog]         Cog = Cout / G (G groups, Cig = Cin / G): input channel i of group g = i / Cig
                                      feeds output channels g Cog .. (g + 1) Cog - 1. PyTorch stores [Cin][Cog][KH][KW]:
                                      the tensors() shape is PyTorch's, the data ours (torch = ours.permute(0, 3, 1, 2))
    b      [Cout]                     (absent with bias=0)
    theta  = [W, b]

    forward   y[s][ih sh - ph + kh dh][iw sw - pw + kw dw][g Cog + c] += W[i][kh][kw][c] x[s][ih][iw][i]  (i in group g;
              taps falling outside [0, Ho) x [0, Wo) are dropped), then y += b
    backward  dx = conv2d(dy; W) (the same sums read the other way), dW += the same sums with x and dy, db += sum dy
    jvp       dy = convT(dx; W) + convT(x; dW) + db
    sobackward  backward is bilinear in (W, x) and db depends on neither: dxdot += conv2d(dy; Wdot), dWdot += the
              weight sums with xdot for x

  In column-major BLAS terms, for a chunk of P input pixels: x is Cin x P (ld Cin), the weights of group g a Kg x Cig
  matrix Wg (Kg = KH KW Cog, ld Kg, at W + g Cig Kg), and col = [P][G][KH][KW][Cog] a (G Kg) x P matrix whose rows
  g Kg .. are group g's; the convolutions' im2col geometry (../conv/convim2col.h) reads the big image dy through the window
  of each input pixel (its "output pixel" there), col2im is its adjoint:
    forward   col_g = Wg x_g                      dgemm('N','N'),  y = col2im(col) (+ b)
    backward  dcol = im2col(dy);  dx_g = Wg^T dcol_g  dgemm('T','N'),  dWg += dcol_g x_g^T  dgemm('N','T'),  db += sum dy
    jvp       col_g = Wg dx_g + dWg x_g            two dgemm('N','N'), y = col2im(col) (+ db)
  The batch is processed in chunks of samples whose col fits in -convtranspose2d_max_workspace MB.
*/
#pragma once

#include "../conv/convim2col.h"
#include <petnet/private/layerimpl.h>
#include <petscblaslapack.h>

typedef struct {
  /* settings */
  PetscInt      nout, groups;
  PetscInt      k[2], stride[2], pad[2], outpad[2], dilation[2];
  PetscBool     bias;
  LayerInitType init;
  PetscReal     initstd;
  PetscReal     maxworkspace; /* MB of col per chunk of samples */

  /* set up */
  PetscInt     cin, cig, cog, kg, ktot; /* Cin, Cin/G, Cout/G, KH KW Cog, G Kg */
  PetscInt     in[2], out[2];           /* H, W and Ho, Wo */
  PetscInt    *t0[2], *t1[2];           /* valid taps of each input row (0) and column (1) into the output */
  ConvIm2col   geom;                    /* conv2d's im2col geometry on the output image, "output pixels" the input's */
  PetscInt     chunk;                   /* samples per chunk */
  PetscScalar *col;                     /* [chunk H W][G Kg], shared by the thread parts */
  PetscScalar *dwpart;                  /* [PETNET_THREAD_PARTS][Cin Kg + Cout]: the parts' weight and bias gradients */
} Layer_ConvTranspose2d;

PETSC_INTERN PetscErrorCode ConvTranspose2dForward(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvTranspose2dBackward(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvTranspose2dJVP(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvTranspose2dSOBackward(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
