/*
  globalavgpool: the mean over all positions of each channel (PyTorch's AdaptiveAvgPool2d(1), or AdaptiveAvgPool3d(1)
  on volumes, followed by flatten).

    x   [n][S][C]     S = H W positions of an (h, w, c) sample, D H W of a (d, h, w, c) one
    y   [n][C]        y[s][c] = sum_p x[s][p][c] / S
    backward  dx[s][p][c] = dy[s][c] / S        jvp  dy = the forward map applied to dx
*/
#include <petnet/private/layerimpl.h>

static PetscErrorCode LayerSetUp_GlobalAvgPool(Layer layer)
{
  char shape[64];

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  if (layer->fielddim) { /* point form: (channels) -> (channels), the mean over the field is its owner's */
    PetscCheck(layer->in.ndim == 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "globalavgpool in point form takes one point of a field, (channels), as a sample, not %s", shape);
    layer->out = layer->in;
    PetscFunctionReturn(0);
  }
  PetscCheck(layer->in.ndim == 3 || layer->in.ndim == 4, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
             "globalavgpool layer %" PetscInt_FMT " needs an (h, w, c) or (d, h, w, c) input, but its input shape is %s: give -net_input_shape HxWxC or DxHxWxC, or put it after a convolution", layer->index, shape);
  layer->out.ndim   = 1;
  layer->out.dim[0] = layer->in.dim[layer->in.ndim - 1];
  PetscFunctionReturn(0);
}

/* y = the mean over the positions; linear, so the jvp is the same map applied to dx */
static PetscErrorCode LayerForward_GlobalAvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const PetscInt    C = layer->outsize, HW = layer->insize / C;
  const PetscScalar scale = 1.0 / HW;

  PetscFunctionBegin;
  for (PetscInt s = 0; s < n; s++, y += C) {
    for (PetscInt c = 0; c < C; c++) y[c] = 0.0;
    for (PetscInt i = 0; i < HW; i++, x += C)
      for (PetscInt c = 0; c < C; c++) y[c] += x[c];
    for (PetscInt c = 0; c < C; c++) y[c] *= scale;
  }
  PetscCall(PetscLogFlops(1.0 * n * layer->insize + 1.0 * n * C));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_GlobalAvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  const PetscInt    C = layer->outsize, HW = layer->insize / C;
  const PetscScalar scale = 1.0 / HW;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  for (PetscInt s = 0; s < n; s++, dy += C)
    for (PetscInt i = 0; i < HW; i++, dx += C)
      for (PetscInt c = 0; c < C; c++) dx[c] = scale * dy[c];
  PetscCall(PetscLogFlops(1.0 * n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_GlobalAvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(LayerForward_GlobalAvgPool(layer, n, theta, dx, dy));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_GlobalAvgPool(Layer layer)
{
  PetscFunctionBegin;
  layer->ops->setup    = LayerSetUp_GlobalAvgPool;
  layer->ops->forward  = LayerForward_GlobalAvgPool;
  layer->ops->backward = LayerBackward_GlobalAvgPool;
  layer->ops->jvp      = LayerJVP_GlobalAvgPool;
  layer->sozero        = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  PetscFunctionReturn(0);
}
