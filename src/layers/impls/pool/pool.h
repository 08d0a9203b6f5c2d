/*
  The pooling base class of maxpool and avgpool (pool.c): both are sliding windows (window.h) with the same settings.
  A pooling kind's data struct starts with a LayerWindow, which the shared code reaches by casting layer->data:

    typedef struct { LayerWindow win; ...the kind's own state... } Layer_MaxPool;

  LayerCreatePool_Private() allocates it (size: the kind's struct) and installs the compact arguments K[:STRIDE[:PAD]],
  the options -<kind>_kernel, -<kind>_stride, -<kind>_padding, the viewer, the LayerPoolSet...() methods and the
  grid-mode ops getwindow and setpadding; the kind adds setup = LayerSetUpPool_Private (output (Ho, Wo, C) or
  (Do, Ho, Wo, C), or (C) in point form), its forward/backward/jvp, reset and destroy. The kernels loop over the
  window as a volume (LayerWindowGetVolume()): one loop nest for 2-D and 3-D pooling.
*/
#pragma once

#include "window.h"
#include <petnet/private/onednnimpl.h>

PETSC_INTERN PetscErrorCode LayerCreatePool_Private(Layer, size_t, PetscBool);
PETSC_INTERN PetscErrorCode LayerSetUpPool_Private(Layer);
PETSC_INTERN PetscErrorCode LayerSetFromOptionsPool_Private(Layer, PetscOptionItems *);
PETSC_INTERN PetscErrorCode LayerPoolCheckRunnable_Private(Layer);
PETSC_INTERN PetscErrorCode LayerPoolOneDNNKey_Private(Layer, PetscInt, PetNetOneDNNConvShape *, PetscBool *);
PETSC_INTERN PetscErrorCode LayerResetPool_Private(Layer);
PETSC_INTERN PetscErrorCode LayerDestroyPool_Private(Layer);
