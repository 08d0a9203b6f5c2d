/* The elementwise activations: f and f' for each kind. */
#include "pointwise.h"

/* identity */
static inline PetscScalar Identity(PetscScalar x, PetscReal a)
{
  return x;
}
static inline PetscScalar DIdentity(PetscScalar x, PetscScalar y, PetscReal a)
{
  return 1.0;
}

/* relu: max(x, 0); f'(0) = 0 as in PyTorch */
static inline PetscScalar ReLU(PetscScalar x, PetscReal a)
{
  return x > 0 ? x : 0.0;
}
static inline PetscScalar DReLU(PetscScalar x, PetscScalar y, PetscReal a)
{
  return x > 0 ? 1.0 : 0.0;
}

/* leakyrelu: x for x > 0, a x otherwise (a = negative slope, default 0.01) */
static inline PetscScalar LeakyReLU(PetscScalar x, PetscReal a)
{
  return x > 0 ? x : a * x;
}
static inline PetscScalar DLeakyReLU(PetscScalar x, PetscScalar y, PetscReal a)
{
  return x > 0 ? 1.0 : a;
}

/* tanh: f' = 1 - y^2 */
static inline PetscScalar Tanh(PetscScalar x, PetscReal a)
{
  return PetscTanhScalar(x);
}
static inline PetscScalar DTanh(PetscScalar x, PetscScalar y, PetscReal a)
{
  return 1.0 - y * y;
}

/* sigmoid: 1/(1+e^-x), f' = y (1 - y); written to never overflow */
static inline PetscScalar Sigmoid(PetscScalar x, PetscReal a)
{
  if (x >= 0)
    return 1.0 / (1.0 + PetscExpScalar(-x));
  else {
    PetscScalar e = PetscExpScalar(x);
    return e / (1.0 + e);
  }
}
static inline PetscScalar DSigmoid(PetscScalar x, PetscScalar y, PetscReal a)
{
  return y * (1.0 - y);
}

/* gelu (exact, erf form): x Phi(x), f' = Phi(x) + x phi(x) */
static inline PetscScalar GELU(PetscScalar x, PetscReal a)
{
  return 0.5 * x * (1.0 + erf(x / PETSC_SQRT2));
}
static inline PetscScalar DGELU(PetscScalar x, PetscScalar y, PetscReal a)
{
  return 0.5 * (1.0 + erf(x / PETSC_SQRT2)) + x * PetscExpScalar(-0.5 * x * x) / PetscSqrtReal(2.0 * PETSC_PI);
}

/* softplus: log(1 + e^x) computed stably, f' = sigmoid(x) */
static inline PetscScalar Softplus(PetscScalar x, PetscReal a)
{
  return (x > 0 ? x : 0.0) + log1p(PetscExpScalar(-PetscAbsScalar(x)));
}
static inline PetscScalar DSoftplus(PetscScalar x, PetscScalar y, PetscReal a)
{
  return Sigmoid(x, a);
}

POINTWISE_KERNELS(Identity, Identity, DIdentity)
POINTWISE_KERNELS(ReLU, ReLU, DReLU)
POINTWISE_KERNELS(LeakyReLU, LeakyReLU, DLeakyReLU)
POINTWISE_KERNELS(Tanh, Tanh, DTanh)
POINTWISE_KERNELS(Sigmoid, Sigmoid, DSigmoid)
POINTWISE_KERNELS(GELU, GELU, DGELU)
POINTWISE_KERNELS(Softplus, Softplus, DSoftplus)

PETSC_INTERN PetscErrorCode LayerCreate_Identity(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Identity, DIdentity, 0, 0));
  POINTWISE_SET_KERNELS(layer, Identity);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_ReLU(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, ReLU, DReLU, 1, 1));
  POINTWISE_SET_KERNELS(layer, ReLU);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_LeakyReLU(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, LeakyReLU, DLeakyReLU, 2, 1));
  POINTWISE_SET_KERNELS(layer, LeakyReLU);
  PetscCall(LayerPointwiseSetParameter_Private(layer, "slope", 0.01));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Tanh(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Tanh, DTanh, 20, 2));
  POINTWISE_SET_KERNELS(layer, Tanh);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Sigmoid(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Sigmoid, DSigmoid, 20, 2));
  POINTWISE_SET_KERNELS(layer, Sigmoid);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_GELU(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, GELU, DGELU, 25, 30));
  POINTWISE_SET_KERNELS(layer, GELU);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Softplus(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Softplus, DSoftplus, 25, 20));
  POINTWISE_SET_KERNELS(layer, Softplus);
  PetscFunctionReturn(0);
}

/*@
  LayerLeakyReLUSetSlope - the slope of a leakyrelu layer for negative inputs.
@*/
PetscErrorCode LayerLeakyReLUSetSlope(Layer layer, PetscReal slope)
{
  PetscBool match;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERLEAKYRELU, &match));
  if (match) ((Layer_Pointwise *)layer->data)->alpha = slope;
  PetscFunctionReturn(0);
}
