/* Shared implementation of the elementwise layers: y_i = f(x_i), shape preserved, no parameters. */
#pragma once

#include <petnet/private/layerimpl.h>

/* f(x), and f'(x) and f''(x) given both x and y = f(x) (each kind uses whichever is cheaper). */
typedef PetscScalar (*PointwiseFunction)(PetscScalar x, PetscReal alpha);
typedef PetscScalar (*PointwiseDerivative)(PetscScalar x, PetscScalar y, PetscReal alpha);

typedef struct {
  PointwiseFunction   f;
  PointwiseDerivative df;
  PetscReal           alpha; /* a kind's one setting, e.g. the negative slope of leakyrelu */
  const char         *alphaname;
  PetscLogDouble      flops_f, flops_df, flops_d2f;
} Layer_Pointwise;

PETSC_INTERN PetscErrorCode LayerCreatePointwise_Private(Layer, PointwiseFunction, PointwiseDerivative, PetscLogDouble, PetscLogDouble);

/*
  The loops, side by side (x, y, dx, dy, xdot, dxdot: [n][size]; no parameters):
    forward     y[i]      = f(x[i])
    backward    dx[i]     = f'(x[i]) dy[i]
    jvp         dy[i]     = f'(x[i]) dx[i]
    sobackward  dxdot[i] += f''(x[i]) xdot[i] dy[i]     (d/de of backward at x + e xdot, dy fixed; ACCUMULATES)
  Each loop runs over its entries on PetNet's threads (blocks of entries, elementwise: the same bits for any number of
  threads) when there are more than POINTWISE_THREAD_MIN of them.
  They are static inline with f, f' and f'' as arguments: each kind instantiates them with its own functions
  (POINTWISE_KERNELS, POINTWISE_SOKERNEL), so the compiler inlines f, f' and f'' into the loop instead of calling
  through a pointer per entry. The piecewise-linear kinds (identity, relu, leakyrelu) have f'' = 0 away from their kink
  and no sobackward: they set the layer's sozero.
*/
#define POINTWISE_THREAD_MIN 32768

static inline PetscErrorCode PointwiseForward(Layer layer, PetscInt n, const PetscScalar *x, PetscScalar *y, PointwiseFunction f)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;
  const PetscReal  a  = pw->alpha;

  PetscFunctionBegin;
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(static) if (N > POINTWISE_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) y[i] = f(x[i], a);
  PetscCall(PetscLogFlops(pw->flops_f * N));
  PetscFunctionReturn(0);
}

static inline PetscErrorCode PointwiseBackward(Layer layer, PetscInt n, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PointwiseDerivative df)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;
  const PetscReal  a  = pw->alpha;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(static) if (N > POINTWISE_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) dx[i] = df(x[i], y[i], a) * dy[i];
  PetscCall(PetscLogFlops((pw->flops_df + 1) * N));
  PetscFunctionReturn(0);
}

static inline PetscErrorCode PointwiseJVP(Layer layer, PetscInt n, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, PetscScalar *dy, PointwiseDerivative df)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;
  const PetscReal  a  = pw->alpha;

  PetscFunctionBegin;
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(static) if (N > POINTWISE_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) dy[i] = df(x[i], y[i], a) * dx[i];
  PetscCall(PetscLogFlops((pw->flops_df + 1) * N));
  PetscFunctionReturn(0);
}

static inline PetscErrorCode PointwiseSOBackward(Layer layer, PetscInt n, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *dy, PetscScalar *dxdot, PointwiseDerivative d2f)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;
  const PetscReal  a  = pw->alpha;

  PetscFunctionBegin;
  if (!xdot || !dxdot) PetscFunctionReturn(0);
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(static) if (N > POINTWISE_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) dxdot[i] += d2f(x[i], y[i], a) * xdot[i] * dy[i];
  PetscCall(PetscLogFlops((pw->flops_d2f + 3) * N));
  PetscFunctionReturn(0);
}

/*
  The three kernels of one kind, with F and DF inlined. POINTWISE_KERNELS_CLONED also compiles the forward loop for
  AVX2, picked at load time on CPUs that have it (GCC's function multi-versioning; the baseline build targets
  x86-64-v2, whose vectors hold 2 doubles, not 4). AVX2 without FMA rounds every operation as the baseline code does,
  so the results are the same bits on any CPU.
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define POINTWISE_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define POINTWISE_TARGET_CLONES
#endif
#define POINTWISE_KERNELS(Kind, F, DF)        POINTWISE_KERNELS_ATTR(Kind, F, DF, )
#define POINTWISE_KERNELS_CLONED(Kind, F, DF) POINTWISE_KERNELS_ATTR(Kind, F, DF, POINTWISE_TARGET_CLONES)
#define POINTWISE_KERNELS_ATTR(Kind, F, DF, FORWARD_ATTRIBUTE)                                                                                                                                            \
  static FORWARD_ATTRIBUTE PetscErrorCode LayerForward_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)                                                    \
  {                                                                                                                                                                                                       \
    return PointwiseForward(layer, n, x, y, F);                                                                                                                                                           \
  }                                                                                                                                                                                                       \
  static PetscErrorCode LayerBackward_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)  \
  {                                                                                                                                                                                                       \
    return PointwiseBackward(layer, n, x, y, dy, dx, DF);                                                                                                                                                 \
  }                                                                                                                                                                                                       \
  static PetscErrorCode LayerJVP_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy) \
  {                                                                                                                                                                                                       \
    return PointwiseJVP(layer, n, x, y, dx, dy, DF);                                                                                                                                                      \
  }

#define POINTWISE_SET_KERNELS(layer, Kind)         \
  do {                                             \
    (layer)->ops->forward  = LayerForward_##Kind;  \
    (layer)->ops->backward = LayerBackward_##Kind; \
    (layer)->ops->jvp      = LayerJVP_##Kind;      \
  } while (0)

/* The second-order kernel of a kind with a curvature term, with D2F = f'' inlined; POINTWISE_SET_SOKERNEL installs it
   (FLOPS: the flops of one f'') */
#define POINTWISE_SOKERNEL(Kind, D2F)                                                                                                                                                                                                               \
  static PetscErrorCode LayerSOBackward_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy, \
                                               PetscScalar *dxdot, PetscScalar *dthetadot)                                                                                                                                                          \
  {                                                                                                                                                                                                                                                 \
    return PointwiseSOBackward(layer, n, x, y, xdot, dy, dxdot, D2F);                                                                                                                                                                               \
  }
#define POINTWISE_SET_SOKERNEL(layer, Kind, FLOPS)                          \
  do {                                                                      \
    (layer)->ops->sobackward                      = LayerSOBackward_##Kind; \
    ((Layer_Pointwise *)(layer)->data)->flops_d2f = (FLOPS);                \
  } while (0)

PETSC_INTERN PetscErrorCode LayerPointwiseSetParameter_Private(Layer, const char[], PetscReal);
