/*
  avgpool: the mean over each window, per channel (PyTorch's AvgPool2d on (h, w, c) samples, AvgPool3d on (d, h, w, c)
  ones, with count_include_pad = True: padded taps count as zeros, the divisor is always the window's size kd kh kw).
  A linear map A, so jvp = A dx and backward = A^T dy. The window is seen as a volume (a 2-D one has depth 1, window.h).

    x   [n][D][H][W][C]
    y   [n][Do][Ho][Wo][C]     y[s][od][oh][ow][c] = sum over the window of x[s][id][ih][iw][c] / (kd kh kw)

  The kernel is written once (avgpoolkernels.h) for double and float values (single precision: forwardsingle,
  backwardsingle, jvpsingle).
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

static PetscErrorCode LayerForward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, PETSC_FALSE, x, NULL, NULL, y));
  PetscFunctionReturn(0);
}

/* dx = A^T dy: each output's cotangent spread evenly over its window */
static PetscErrorCode LayerBackward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  PetscCall(AvgPoolApply(layer, n, PETSC_TRUE, NULL, dx, dy, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, PETSC_FALSE, dx, NULL, NULL, dy));
  PetscFunctionReturn(0);
}

/* the same on float values (layerimpl.h: a Net at low precision); no parameters */
static PetscErrorCode LayerForwardSingle_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApplySingle(layer, n, PETSC_FALSE, x, NULL, NULL, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  PetscCall(AvgPoolApplySingle(layer, n, PETSC_TRUE, NULL, dx, dy, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApplySingle(layer, n, PETSC_FALSE, dx, NULL, NULL, dy));
  PetscFunctionReturn(0);
}

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
  layer->ops->forwardsingle  = LayerForwardSingle_AvgPool;
  layer->ops->backwardsingle = LayerBackwardSingle_AvgPool;
  layer->ops->jvpsingle      = LayerJVPSingle_AvgPool;
  layer->ops->forget         = LayerForget_AvgPool;
  layer->sozero              = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset          = LayerResetPool_Private;
  layer->ops->destroy        = LayerDestroyPool_Private;
  PetscFunctionReturn(0);
}
