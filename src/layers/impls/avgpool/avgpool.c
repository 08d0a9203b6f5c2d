/*
  avgpool: the mean over each window, per channel (PyTorch's AvgPool2d on (h, w, c) samples, AvgPool3d on (d, h, w, c)
  ones, with count_include_pad = True: padded taps count as zeros, the divisor is always the window's size kd kh kw;
  no dilation, as PyTorch's).
  A linear map A, so jvp = A dx and backward = A^T dy. The window is seen as a volume (a 2-D one has depth 1, window.h).

    x   [n][D][H][W][C]
    y   [n][Do][Ho][Wo][C]     y[s][od][oh][ow][c] = sum over the window of x[s][id][ih][iw][c] / (kd kh kw)

  The kernel and the forward, backward and jvp around it are written once (avgpoolkernels.h) for double and float
  values (float: forwardsingle, backwardsingle, jvpsingle, a Net at -net_precision single or bfloat16; with
  -net_backend onednn they run oneDNN's average pooling where it takes the shape, below).
*/
#include "../pool/pool.h"
#include <petnet/private/onednnimpl.h>
#include <string.h>

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

/*
  The float passes on oneDNN (a Net at single or bfloat16 with -net_backend onednn: layer->gemm): average pooling
  primitives with padding counted (oneDNN's avg_include_padding, as here) on the whole batch, nhwc as PetNet holds
  it (ndhwc for volumes), from the cache of src/sys/onednn.c; forward, backward (dx overwritten) and jvp (forward on
  dx). A batch-mode layer, 2-D or 3-D, whose shape oneDNN takes (both directions, decided per batch size once, -info)
  runs them there; else the kernels above. The sums are oneDNN's (another order than the window order above:
  round-off apart).
*/
static PetscErrorCode AvgPoolOneDNN(Layer layer, PetscInt n, PetNetOneDNNConvShape *sh, PetscBool *on)
{
  PetscFunctionBegin;
  PetscCall(LayerPoolOneDNNKey_Private(layer, n, sh, on));
  if (*on) PetscCall(PetNetOneDNNAvgPoolAvailable(layer->gemm, sh, on));
  PetscFunctionReturn(0);
}

/* y = A x */
static PetscErrorCode LayerForwardSingle_AvgPoolOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetNetOneDNNConvShape sh;
  PetscBool             on;

  PetscFunctionBegin;
  PetscCall(AvgPoolOneDNN(layer, n, &sh, &on));
  if (on)
    PetscCall(PetNetOneDNNAvgPool(&sh, PETSC_FALSE, (float *)x, y));
  else
    PetscCall(LayerForward_AvgPoolSingle(layer, n, theta, x, y));
  PetscFunctionReturn(0);
}

/* dx = A^T dy (overwritten; nothing when dx is not asked for) */
static PetscErrorCode LayerBackwardSingle_AvgPoolOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetNetOneDNNConvShape sh;
  PetscBool             on;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(AvgPoolOneDNN(layer, n, &sh, &on));
  if (on)
    PetscCall(PetNetOneDNNAvgPool(&sh, PETSC_TRUE, dx, (float *)dy));
  else
    PetscCall(LayerBackward_AvgPoolSingle(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

/* dy = A dx */
static PetscErrorCode LayerJVPSingle_AvgPoolOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetNetOneDNNConvShape sh;
  PetscBool             on;

  PetscFunctionBegin;
  PetscCall(AvgPoolOneDNN(layer, n, &sh, &on));
  if (on)
    PetscCall(PetNetOneDNNAvgPool(&sh, PETSC_FALSE, (float *)dx, dy));
  else
    PetscCall(LayerJVP_AvgPoolSingle(layer, n, theta, x, y, dx, dtheta, dy));
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
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_AvgPool), PETSC_FALSE));
  layer->ops->setup          = LayerSetUpPool_Private;
  layer->ops->forward        = LayerForward_AvgPool;
  layer->ops->backward       = LayerBackward_AvgPool;
  layer->ops->jvp            = LayerJVP_AvgPool;
  layer->ops->forwardsingle  = LayerForwardSingle_AvgPoolOneDNN; /* oneDNN where the Net asks for it, else LayerForward_AvgPoolSingle */
  layer->ops->backwardsingle = LayerBackwardSingle_AvgPoolOneDNN;
  layer->ops->jvpsingle      = LayerJVPSingle_AvgPoolOneDNN;
  layer->ops->forget         = LayerForget_AvgPool;
  layer->sozero              = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset          = LayerResetPool_Private;
  layer->ops->destroy        = LayerDestroyPool_Private;
  PetscFunctionReturn(0);
}
