/*
  avgpool: the mean over each window, per channel (PyTorch's AvgPool2d on (h, w, c) samples, AvgPool3d on (d, h, w, c)
  ones, with count_include_pad = True: padded taps count as zeros, the divisor is always the window's size kd kh kw).
  A linear map A, so jvp = A dx and backward = A^T dy. The window is seen as a volume (a 2-D one has depth 1, window.h).

    x   [n][D][H][W][C]
    y   [n][Do][Ho][Wo][C]     y[s][od][oh][ow][c] = sum over the window of x[s][id][ih][iw][c] / (kd kh kw)

  The kernel and the forward, backward and jvp around it are written once (avgpoolkernels.h) for double and float
  values (float: forwardsingle, backwardsingle, jvpsingle, a Net at -net_precision single or bfloat16).
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
} Layer_AvgPool;

#define AVGPOOL_T       PetscScalar
#define AVGPOOL_NAME(f) f
#include "avgpoolkernels.h"
#undef AVGPOOL_T
#undef AVGPOOL_NAME
#define AVGPOOL_T       float
#define AVGPOOL_NAME(f) f##Single
#include "avgpoolkernels.h"
#undef AVGPOOL_T
#undef AVGPOOL_NAME

/* Grid mode, an overlapped halo exchange: forward keeps nothing of its input */
static PetscErrorCode LayerForget_AvgPool(Layer layer)
{
  PetscFunctionBegin;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_AvgPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_AvgPool)));
  layer->ops->setup          = LayerSetUpPool_Private;
  layer->ops->forward        = LayerForward_AvgPool;
  layer->ops->backward       = LayerBackward_AvgPool;
  layer->ops->jvp            = LayerJVP_AvgPool;
  layer->ops->forwardsingle  = LayerForward_AvgPoolSingle;
  layer->ops->backwardsingle = LayerBackward_AvgPoolSingle;
  layer->ops->jvpsingle      = LayerJVP_AvgPoolSingle;
  layer->ops->forget         = LayerForget_AvgPool;
  layer->sozero              = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset          = LayerResetPool_Private;
  layer->ops->destroy        = LayerDestroyPool_Private;
  PetscFunctionReturn(0);
}
