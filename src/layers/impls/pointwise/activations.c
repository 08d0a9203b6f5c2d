/* The elementwise activations: f, f' and (for the smooth kinds) f'' for each kind. */
#include "pointwise.h"
#include <petnet/private/mathimpl.h>
#include <stdint.h>
#include <string.h>

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

/*
  tanh: f' = 1 - y^2, f'' = -2 y (1 - y^2).

  In double precision, computed here rather than by libm: libm's tanh is a call per entry (half the run time of the
  spiral example), while this is branch-free arithmetic that the compiler inlines and vectorizes. With t = |x|,
      -2t = k ln2 + r  (|r| <= ln2/2),  s = 2^k,  e^r = (R + r)/(R - r)  with  R = r coth(r/2),
      tanh t = (1 - s e^r)/(1 + s e^r) = N/D,   N = (1 - s) R - (1 + s) r,   D = (1 + s) R - (1 - s) r.
  For k = 0, N = -2r exactly, so small t keeps full relative accuracy; for k <= -3 (t > 0.86, tanh t > 0.7) the result
  is 1 - 2 s (R + r)/D (N = D - 2 s (R + r)), which avoids the rounding of N. R is even in r, with the series
  r coth(r/2) = 2 + sum_n 2 B_2n r^2n/(2n)!  (Bernoulli numbers),  truncated after r^12 (error < 2^-57 for |r| <= ln2/2).
  Against long double tanhl: at most 3.7 ulp over 2e7 inputs (libm: 2.2 ulp; tests/test_tanh.c checks <= 4 ulp); tanh t
  rounds to 1 for t >= 20.
*/
#if defined(PETSC_USE_REAL_DOUBLE) && !defined(PETSC_USE_COMPLEX)
static inline double TanhDouble(double x)
{
  const double   ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33; /* ln2 = ln2hi + ln2lo, k ln2hi exact */
  const double   invln2 = 0x1.71547652b82fep0, shifter = 0x1.8p52, one = 1.0;
  const double   t       = PetscAbsReal(x);
  const uint64_t inrange = -(uint64_t) !(t >= 20.0); /* all ones unless tanh rounds to 1 (NaN stays in range) */
  double         y, kd, r, z, R, s, D, w;
  uint64_t       bits, onebits, far;

  y  = -2.0 * PetNetSelectDouble(inrange, t, 20.0);
  kd = y * invln2 + shifter; /* k = round(y / ln2) in the low bits of kd */
  memcpy(&bits, &kd, sizeof(bits));
  kd -= shifter;
  far = -(uint64_t)(kd < -2.5);
  r   = (y - kd * ln2hi) - kd * ln2lo;
  memcpy(&onebits, &one, sizeof(onebits));
  bits = (bits << 52) + onebits; /* s = 2^k: k in the exponent field */
  memcpy(&s, &bits, sizeof(s));
  z = r * r;
  R = -691.0 / 653837184000.0;
  R = R * z + 1.0 / 23950080.0;
  R = R * z - 1.0 / 604800.0;
  R = R * z + 1.0 / 15120.0;
  R = R * z - 1.0 / 360.0;
  R = R * z + 1.0 / 6.0;
  R = 2.0 + R * z;
  D = (1.0 + s) * R - (1.0 - s) * r;
  w = PetNetSelectDouble(far, 2.0 * s * (R + r), (1.0 - s) * R - (1.0 + s) * r) / D;
  w = PetNetSelectDouble(far, 1.0 - w, w);
  return copysign(PetNetSelectDouble(inrange, w, 1.0), x);
}
#endif

static inline PetscScalar Tanh(PetscScalar x, PetscReal a)
{
#if defined(PETSC_USE_REAL_DOUBLE) && !defined(PETSC_USE_COMPLEX)
  return TanhDouble(x);
#else
  return PetscTanhScalar(x);
#endif
}
static inline PetscScalar DTanh(PetscScalar x, PetscScalar y, PetscReal a)
{
  return 1.0 - y * y;
}
static inline PetscScalar D2Tanh(PetscScalar x, PetscScalar y, PetscReal a)
{
  return -2.0 * y * (1.0 - y * y);
}

/* sigmoid: 1/(1+e^-x), f' = y (1 - y), f'' = y (1 - y) (1 - 2 y); written to never overflow */
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
static inline PetscScalar D2Sigmoid(PetscScalar x, PetscScalar y, PetscReal a)
{
  return y * (1.0 - y) * (1.0 - 2.0 * y);
}

/*
  gelu (exact, erf form, PyTorch's approximate='none'): f = x Phi(x), f' = Phi(x) + x phi(x), f'' = (2 - x^2) phi(x)
  (phi' = -x phi), with Phi(x) = (1 + erf(x/sqrt 2))/2 and phi(x) = e^(-x^2/2)/sqrt(2 pi).

  erf and exp are PetNet's own (petnet/private/mathimpl.h), in double for double values and in float for float ones:
  libm's erf is a call per entry, which made gelu's pass 12 ns a value (docs/benchmarks.md); these vectorize. The
  passes are written once for both types in gelukernels.h. In float, f is computed in float arithmetic (erf within 2
  ulp of erff), not widened to double as the other kinds' float kernels are: the float loop runs 8 entries a vector.
*/
#define GELU_T       PetscScalar
#define GELU_NAME(f) f
#define GELU_ERF(x)  PetNetErfDouble(x)
#define GELU_EXP(x)  PetNetExpDouble(x)
#define GELU_SECOND_ORDER
#include "gelukernels.h"
#undef GELU_T
#undef GELU_NAME
#undef GELU_ERF
#undef GELU_EXP
#undef GELU_SECOND_ORDER
#define GELU_T       float
#define GELU_NAME(f) f##Single
#define GELU_ERF(x)  PetNetErfFloat(x)
#define GELU_EXP(x)  PetNetExpFloat(x)
#define GELU_BF16
#include "gelukernels.h"
#undef GELU_T
#undef GELU_NAME
#undef GELU_ERF
#undef GELU_EXP
#undef GELU_BF16

/* f and f' for the kind's record (LayerCreatePointwise_Private()) */
static PetscScalar GELU(PetscScalar x, PetscReal a)
{
  return GELUValue(x);
}
static PetscScalar DGELU(PetscScalar x, PetscScalar y, PetscReal a)
{
  return GELUSlope(x);
}

/* softplus: log(1 + e^x) computed stably (no beta, no threshold), f' = sigmoid(x), f'' = sigmoid(x) sigmoid(-x): the
   product of two stable sigmoids keeps its relative accuracy where sigmoid(x) (1 - sigmoid(x)) would round to 0 */
static inline PetscScalar Softplus(PetscScalar x, PetscReal a)
{
  return (x > 0 ? x : 0.0) + log1p(PetscExpScalar(-PetscAbsScalar(x)));
}
static inline PetscScalar DSoftplus(PetscScalar x, PetscScalar y, PetscReal a)
{
  return Sigmoid(x, a);
}
static inline PetscScalar D2Softplus(PetscScalar x, PetscScalar y, PetscReal a)
{
  return Sigmoid(x, a) * Sigmoid(-x, a);
}

POINTWISE_KERNELS(Identity, Identity, DIdentity)
POINTWISE_KERNELS(ReLU, ReLU, DReLU)
POINTWISE_KERNELS(LeakyReLU, LeakyReLU, DLeakyReLU)
POINTWISE_KERNELS_CLONED(Tanh, Tanh, DTanh)
POINTWISE_KERNELS(Sigmoid, Sigmoid, DSigmoid)
POINTWISE_KERNELS(Softplus, Softplus, DSoftplus)
POINTWISE_SINGLE_KERNELS(Identity, Identity, DIdentity)
POINTWISE_SINGLE_KERNELS(LeakyReLU, LeakyReLU, DLeakyReLU)
POINTWISE_SINGLE_KERNELS(Tanh, Tanh, DTanh)
POINTWISE_SINGLE_KERNELS(Sigmoid, Sigmoid, DSigmoid)
POINTWISE_SINGLE_KERNELS(Softplus, Softplus, DSoftplus)
POINTWISE_SOKERNEL(Tanh, D2Tanh)
POINTWISE_SOKERNEL(Sigmoid, D2Sigmoid)
POINTWISE_SOKERNEL(Softplus, D2Softplus)

PETSC_INTERN PetscErrorCode LayerCreate_Identity(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Identity, DIdentity, 0, 0));
  POINTWISE_SET_KERNELS(layer, Identity);
  POINTWISE_SET_SINGLE_KERNELS(layer, Identity);
  layer->sozero = PETSC_TRUE; /* piecewise linear: no curvature term */
  PetscFunctionReturn(0);
}

/* relu fused into a neighbour's pass (layerimpl.h): relu(relu(x)) = relu(x) and relu'(relu(x)) = relu'(x) (both 1 where
   x > 0, 0 elsewhere), so its node may read its output for its input; the same expressions as forward and backward */
static POINTWISE_TARGET_CLONES void ReLUInPlace(PetscInt N, PetscScalar *y)
{
  for (PetscInt i = 0; i < N; i++) y[i] = ReLU(y[i], 0);
}

static POINTWISE_TARGET_CLONES void ReLUMask(PetscInt N, const PetscScalar *restrict y, PetscScalar *restrict d)
{
  for (PetscInt i = 0; i < N; i++) d[i] = DReLU(y[i], y[i], 0) * d[i];
}

/* (cloned for AVX-512 and AVX2 as the float loops below: selects and products, the same bits on any CPU) */
static PetscErrorCode LayerActivate_ReLU(Layer layer, PetscInt N, PetscScalar *y)
{
  ReLUInPlace(N, y);
  return 0;
}

static PetscErrorCode LayerActivateMask_ReLU(Layer layer, PetscInt N, const PetscScalar *y, PetscScalar *d)
{
  ReLUMask(N, y, d);
  return 0;
}

/*
  relu in float (a Net at low precision): the generic single-precision kernels (POINTWISE_SINGLE_KERNELS) compute f
  and f' dy in double and round, which for relu is exact: y = x or +0, and f' dy = dy or 0 dy (+-0, or NaN for an infinite dy). These loops compute
  the same values in float, as selects the compiler vectorizes (8 or 16 lanes in the clones) where the generic ones
  convert each entry to double and back: the same bits, about 4x faster on a 28x28x32 batch.
*/
static POINTWISE_TARGET_CLONES void ReLUSingleRange(PetscInt i0, PetscInt i1, const float *restrict x, float *restrict y)
{
  for (PetscInt i = i0; i < i1; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static POINTWISE_TARGET_CLONES void DReLUSingleRange(PetscInt i0, PetscInt i1, const float *restrict x, const float *restrict dy, float *restrict dx)
{
  for (PetscInt i = i0; i < i1; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f * dy[i];
}

/* in place (relu on its producer's value at low precision, or in its output pass: netfuse.c): one array, so that the
   loop vectorizes */
static POINTWISE_TARGET_CLONES void ReLUSingleRangeInPlace(PetscInt i0, PetscInt i1, float *y)
{
  for (PetscInt i = i0; i < i1; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

static POINTWISE_TARGET_CLONES void ReLUMaskSingle(PetscInt N, const float *restrict y, float *restrict d)
{
  for (PetscInt i = 0; i < N; i++) d[i] = y[i] > 0.0f ? d[i] : 0.0f * d[i];
}

static PetscErrorCode LayerForwardSingle_ReLUFloat(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  const PetscInt N = n * layer->insize;

  if (x == y)
    POINTWISE_BLOCKS(N, ReLUSingleRangeInPlace(i0, i1, y));
  else
    POINTWISE_BLOCKS(N, ReLUSingleRange(i0, i1, x, y));
  return PetscLogFlops(1.0 * N);
}

static PetscErrorCode LayerBackwardSingle_ReLUFloat(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  const PetscInt N = n * layer->insize;

  if (!dx) return 0;
  POINTWISE_BLOCKS(N, DReLUSingleRange(i0, i1, x, dy, dx));
  return PetscLogFlops(2.0 * N);
}

static PetscErrorCode LayerJVPSingle_ReLUFloat(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  const PetscInt N = n * layer->insize;

  POINTWISE_BLOCKS(N, DReLUSingleRange(i0, i1, x, dx, dy)); /* dy = relu'(x) dx, as the backward */
  return PetscLogFlops(2.0 * N);
}

/* relu in float in a producer's output pass (dense, conv2d, conv3d): as LayerForwardSingle_ReLUFloat in place */
static PetscErrorCode LayerActivateSingle_ReLU(Layer layer, PetscInt N, float *y)
{
  ReLUSingleRangeInPlace(0, N, y);
  return 0;
}

/* the fused mask in float (maxpool's backward pass): d = relu'(y) d, as LayerBackwardSingle_ReLUFloat */
static PetscErrorCode LayerActivateMaskSingle_ReLU(Layer layer, PetscInt N, const float *y, float *d)
{
  ReLUMaskSingle(N, y, d);
  return 0;
}

PETSC_INTERN PetscErrorCode LayerCreate_ReLU(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, ReLU, DReLU, 1, 1));
  POINTWISE_SET_KERNELS(layer, ReLU);
  layer->ops->forwardsingle      = LayerForwardSingle_ReLUFloat; /* the values of the generic float kernels, vectorized */
  layer->ops->backwardsingle     = LayerBackwardSingle_ReLUFloat;
  layer->ops->jvpsingle          = LayerJVPSingle_ReLUFloat;
  layer->sozero                  = PETSC_TRUE; /* piecewise linear: no curvature term */
  layer->isrelu                  = PETSC_TRUE; /* a oneDNN post-op where it is fused */
  layer->ops->activate           = LayerActivate_ReLU;
  layer->ops->activatemask       = LayerActivateMask_ReLU;
  layer->ops->activatesingle     = LayerActivateSingle_ReLU;
  layer->ops->activatemasksingle = LayerActivateMaskSingle_ReLU;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_LeakyReLU(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, LeakyReLU, DLeakyReLU, 2, 1));
  POINTWISE_SET_KERNELS(layer, LeakyReLU);
  POINTWISE_SET_SINGLE_KERNELS(layer, LeakyReLU);
  layer->sozero = PETSC_TRUE; /* piecewise linear: no curvature term */
  PetscCall(LayerPointwiseSetParameter_Private(layer, "slope", 0.01));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Tanh(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Tanh, DTanh, 20, 2));
  POINTWISE_SET_KERNELS(layer, Tanh);
  POINTWISE_SET_SINGLE_KERNELS(layer, Tanh);
  POINTWISE_SET_SOKERNEL(layer, Tanh, 3);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Sigmoid(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Sigmoid, DSigmoid, 20, 2));
  POINTWISE_SET_KERNELS(layer, Sigmoid);
  POINTWISE_SET_SINGLE_KERNELS(layer, Sigmoid);
  POINTWISE_SET_SOKERNEL(layer, Sigmoid, 4);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_GELU(Layer layer)
{
  Layer_Pointwise *pw;

  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, GELU, DGELU, 25, 30));
  layer->ops->forward          = LayerForward_GELU; /* gelukernels.h */
  layer->ops->backward         = LayerBackward_GELU;
  layer->ops->jvp              = LayerJVP_GELU;
  layer->ops->forwardsingle    = LayerForward_GELUSingle;
  layer->ops->backwardsingle   = LayerBackward_GELUSingle;
  layer->ops->jvpsingle        = LayerJVP_GELUSingle;
  layer->ops->forwardbf16      = LayerForwardBF16_GELU; /* on the stored values (gelukernels.h, layerbf16.c) */
  layer->ops->backwardmaskbf16 = LayerBackwardBF16_GELU;
  layer->ops->jvpbf16          = LayerJVPBF16_GELU;
  layer->ops->sobackward       = LayerSOBackward_GELU;
  pw                           = (Layer_Pointwise *)layer->data;
  pw->flops_d2f                = 25;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Softplus(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePointwise_Private(layer, Softplus, DSoftplus, 25, 20));
  POINTWISE_SET_KERNELS(layer, Softplus);
  POINTWISE_SET_SINGLE_KERNELS(layer, Softplus);
  POINTWISE_SET_SOKERNEL(layer, Softplus, 40);
  PetscFunctionReturn(0);
}

/*@
  LayerLeakyReLUSetSlope - the slope of a leakyrelu layer for negative inputs: y = x for x > 0, slope x otherwise.

  Logically collective

  Input Parameters:
+ layer - a leakyrelu layer (layers of other kinds ignore the call)
- slope - the slope (default 0.01, as PyTorch)

  Options Database Key:
. -<prefix>leakyrelu_slope <a> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is leakyrelu:A.

  Level: intermediate

.seealso: `LayerSetArguments()`, `LayerSetFromOptions()`
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
