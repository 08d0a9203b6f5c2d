/*
  flatten: (h, w, c) -> (h w c), or (d, h, w, c) -> (d h w c), the identity on the data. Channels-last, so the
  features come in (h, w, c) order; PyTorch's nn.Flatten on NCHW gives (c, h, w) (on NCDHW (c, d, h, w)): a dense layer
  after flatten has its weight columns permuted relative to PyTorch's (share/reference/conv_reference.py shows the
  permutation; model files hold PyTorch's, src/net/netiotorch.c).

    forward y = x,  backward dx = dy,  jvp dy = dx

  on double, float and the stored bfloat16 values alike (a copy).
*/
#include <petnet/private/layerimpl.h>

static PetscErrorCode LayerSetUp_Flatten(Layer layer)
{
  PetscFunctionBegin;
  layer->out.ndim = 1;
  PetscCall(PetNetShapeSize(&layer->in, &layer->out.dim[0]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(PetscArraycpy(y, x, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(PetscArraycpy(dx, dy, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(PetscArraycpy(dy, dx, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

/* single precision (layerimpl.h): the same copies of float values */
static PetscErrorCode LayerForwardSingle_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(PetscArraycpy(y, x, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(PetscArraycpy(dx, dy, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  PetscCall(PetscArraycpy(dy, dx, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

/* bfloat16 (layerbf16.c): the same copies of the stored bfloat16 values, no float copy of the batch; no activation is
   fused into flatten (it has no forwardact or backwardmask of its own) */
static PetscErrorCode LayerForwardBF16_Flatten(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  PetscFunctionBegin;
  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_PLIB, "flatten layer %" PetscInt_FMT ": no activation is fused into it", layer->index);
  PetscCall(PetscArraycpy(y, x, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardBF16_Flatten(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_PLIB, "flatten layer %" PetscInt_FMT ": no activation's derivative is applied in its backward pass", layer->index);
  if (dx) PetscCall(PetscArraycpy(dx, dy, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPBF16_Flatten(Layer layer, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dx, const PetscScalar *dtheta, uint16_t *dy)
{
  PetscFunctionBegin;
  if (dx)
    PetscCall(PetscArraycpy(dy, dx, (size_t)n * layer->insize));
  else
    PetscCall(PetscArrayzero(dy, (size_t)n * layer->insize));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Flatten(Layer layer)
{
  PetscFunctionBegin;
  layer->ops->setup            = LayerSetUp_Flatten;
  layer->ops->forward          = LayerForward_Flatten;
  layer->ops->backward         = LayerBackward_Flatten;
  layer->ops->jvp              = LayerJVP_Flatten;
  layer->ops->forwardsingle    = LayerForwardSingle_Flatten;
  layer->ops->backwardsingle   = LayerBackwardSingle_Flatten;
  layer->ops->jvpsingle        = LayerJVPSingle_Flatten;
  layer->ops->forwardbf16      = LayerForwardBF16_Flatten;
  layer->ops->backwardmaskbf16 = LayerBackwardBF16_Flatten;
  layer->ops->jvpbf16          = LayerJVPBF16_Flatten;
  layer->sozero                = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  PetscFunctionReturn(0);
}
