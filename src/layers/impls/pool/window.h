/*
  Sliding windows over channels-last samples with nsd spatial dims, (h, w, c) (nsd = 2) or (d, h, w, c) (nsd = 3): the
  geometry of maxpool and avgpool (pool.h), which conv2d and conv3d share (their batch mode; ../conv/conv.h).

  Spatial dims are numbered slowest first: 0 = h, 1 = w when nsd = 2; 0 = d, 1 = h, 2 = w when nsd = 3. Along each
  dim d, output index o reads the input at
      i(o, t) = o * step[d] - pad[d] + t * dilation[d],   t = 0 .. k[d]-1  (the kernel taps)
  and the output size is  out[d] = floor((in[d] + 2 pad[d] - dilation[d] (k[d] - 1) - 1) / step[d]) + 1  (PyTorch),
  step[d] = stride[d], or k[d] when stride[d] is 0.
  Taps that fall in the padding are the contiguous range outside [t0[d][o], t1[d][o]); the kernels loop over the
  valid range only, so no per-element bounds test is needed.

  The settings (kernel, stride, padding, dilation) are each given as one value, the same along every spatial dim
  (stored in all three entries), or as one value per dim (2 or 3 of them: "3x5", "2x3x3"); given[] records how many.
  A kind with a fixed nsd (conv2d, conv3d) accepts 1 or nsd values; the pools take theirs from the input, and set-up
  checks that each setting has 1 or nsd values.

  The kernels see a window through LayerWindowVolume (LayerWindowGetVolume()): always three dims, a 2-D window with a
  leading dim of size 1 and one tap, so that one loop nest serves (h, w, c) and (d, h, w, c).
*/
#pragma once

#include <petnet/private/layerimpl.h>

#define LAYER_WINDOW_MAX_DIM 3

typedef enum { LAYER_WINDOW_KERNEL, LAYER_WINDOW_STRIDE, LAYER_WINDOW_PADDING, LAYER_WINDOW_DILATION } LayerWindowSetting;

typedef struct {
  PetscInt  k[3], stride[3], pad[3], dilation[3]; /* stride 0 means "equal to the kernel" (the pools' default) */
  PetscInt  given[4];                             /* values given of each LayerWindowSetting: 1 (all dims alike), 2 or 3 */
  PetscInt  nsd;                                  /* spatial dims, set by LayerWindowSetUp(); 0 before */
  PetscInt  step[3];                              /* the stride in effect, set by LayerWindowSetUp() */
  PetscInt  in[3], out[3];                        /* spatial sizes, slowest first, set by LayerWindowSetUp() */
  PetscInt *t0[3], *t1[3];                        /* valid taps [t0, t1) for each output index along each dim */
  PetscBool dilates;                              /* a pooling kind with a dilation setting (maxpool, not avgpool) */
} LayerWindow;

/* A window as three dims (a 2-D window with a leading dim of one point and one tap): what the kernels loop over */
typedef struct {
  PetscInt        in[3], out[3], k[3], step[3], pad[3], dilation[3];
  const PetscInt *t0[3], *t1[3];
} LayerWindowVolume;

PETSC_INTERN PetscErrorCode LayerWindowParse(MPI_Comm, const char[], const char[], PetscInt, PetscInt[3], PetscInt *);
PETSC_INTERN PetscErrorCode LayerWindowToString(const PetscInt[], PetscInt, size_t, char[]);
PETSC_INTERN PetscErrorCode LayerWindowToFullString(const PetscInt[], PetscInt, size_t, char[]);
PETSC_INTERN PetscErrorCode LayerWindowSet(Layer, LayerWindow *, LayerWindowSetting, PetscInt, const PetscInt[]);
PETSC_INTERN PetscInt      *LayerWindowGetSetting(LayerWindow *, LayerWindowSetting);
PETSC_INTERN PetscErrorCode LayerWindowSetUp(Layer, LayerWindow *, PetscInt, const PetscInt[]);
PETSC_INTERN PetscErrorCode LayerWindowGetWindow(Layer, const LayerWindow *, PetscInt, PetscInt *, PetscInt[], PetscInt[], PetscInt[], PetscInt[]);
PETSC_INTERN void           LayerWindowGetVolume(const LayerWindow *, LayerWindowVolume *);
PETSC_INTERN PetscErrorCode LayerWindowReset(LayerWindow *);
