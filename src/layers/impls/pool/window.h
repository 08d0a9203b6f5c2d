/*
  Sliding windows over (h, w, c) channels-last samples: the geometry of maxpool and avgpool (pool.h), which
  conv2d shares (its batch mode; ../conv2d/conv2d.h).

  Along each spatial dimension d (0 = h, 1 = w), output index o reads the input at
      i(o, t) = o * step[d] - pad[d] + t * dilation[d],   t = 0 .. k[d]-1  (the kernel taps)
  and the output size is  out[d] = floor((in[d] + 2 pad[d] - dilation[d] (k[d] - 1) - 1) / step[d]) + 1  (PyTorch),
  step[d] = stride[d], or k[d] when stride[d] is 0.
  Taps that fall in the padding are the contiguous range outside [t0[d][o], t1[d][o]); the kernels loop over the
  valid range only, so no per-element bounds test is needed.
*/
#pragma once

#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt  k[2], stride[2], pad[2], dilation[2]; /* stride 0 means "equal to the kernel" (the pools' default) */
  PetscInt  step[2];                              /* the stride in effect, set by LayerWindowSetUp() */
  PetscInt  in[2], out[2];                        /* spatial sizes (h, w), set by LayerWindowSetUp() */
  PetscInt *t0[2], *t1[2];                        /* valid taps [t0, t1) for each output index along each dimension */
} LayerWindow;

PETSC_INTERN PetscErrorCode LayerWindowParsePair(MPI_Comm, const char[], const char[], PetscInt[2]);
PETSC_INTERN PetscErrorCode LayerWindowPairToString(const PetscInt[2], size_t, char[]);
PETSC_INTERN PetscErrorCode LayerWindowSetUp(Layer, LayerWindow *);
PETSC_INTERN PetscErrorCode LayerWindowReset(LayerWindow *);
