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
  The loops, side by side (x, y, dx, dy, xdot, dxdot: [n][size]; no parameters), on the entries [i0, i1):
    forward     y[i]      = f(x[i])
    backward    dx[i]     = f'(x[i]) dy[i]
    jvp         dy[i]     = f'(x[i]) dx[i]
    sobackward  dxdot[i] += f''(x[i]) xdot[i] dy[i]     (d/de of backward at x + e xdot, dy fixed; ACCUMULATES)
  Each kind instantiates them with its own functions (POINTWISE_KERNELS, POINTWISE_SINGLE_KERNELS, POINTWISE_SOKERNEL),
  so the compiler inlines f, f' and f'' into the loop instead of calling through a pointer per entry. The
  piecewise-linear kinds (identity, relu, leakyrelu) have f'' = 0 away from their kink and no sobackward: they set the
  layer's sozero.

  Threads: POINTWISE_BLOCKS cuts the entries into blocks (of at least POINTWISE_BLOCK entries) run on PetNet's threads;
  elementwise, so the same bits for any number of threads. The parallel loop is written in each kind's kernel, where f
  is a function's name (in a loop of inline functions taking f, OpenMP's outlined body would call f through a
  pointer), and one block runs without a parallel region (so that a cloned kernel keeps its AVX2 loop).
*/
#define POINTWISE_BLOCK 16384

/* CALL on the blocks [i0, i1) of the N entries: on PetNet's threads when there are several */
#define POINTWISE_BLOCKS(N, CALL) PETNET_THREAD_BLOCKS(N, POINTWISE_BLOCK, CALL)

/*
  The three kernels of one kind, with F and DF inlined, on values of type T (PetscScalar: LayerForward_Kind, ...;
  float: LayerForwardSingle_Kind, ...). POINTWISE_KERNELS_CLONED also compiles the double forward loop for AVX-512 and
  AVX2, picked at load time on CPUs that have them (GCC's function multi-versioning; the baseline build targets
  x86-64-v2, whose vectors hold 2 doubles, not 8 or 4). GCC's AVX-512 target includes FMA, and GCC would fuse a * b + c
  into one rounding there: fp-contract=off keeps every operation rounded as the baseline code rounds it, so the
  results are the same bits on any CPU.

  Single precision (layerimpl.h: float values, a Net at -net_precision single): each entry is widened to double for f
  and f' and its result rounded once to float. The elementwise layers move memory, they do not compute much: reading
  and writing floats halves their traffic, and the double arithmetic in registers costs nothing measurable, so the
  kinds share f and f' with double precision and every result is f correctly rounded (to within double's error). In
  place (x == y) works: each entry is read before it is written.
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define POINTWISE_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define POINTWISE_TARGET_CLONES
#endif
#define POINTWISE_KERNELS(Kind, F, DF)        POINTWISE_KERNELS_T(Kind, F, DF, PetscScalar, , )
#define POINTWISE_KERNELS_CLONED(Kind, F, DF) POINTWISE_KERNELS_T(Kind, F, DF, PetscScalar, , POINTWISE_TARGET_CLONES)
#define POINTWISE_SINGLE_KERNELS(Kind, F, DF) POINTWISE_KERNELS_T(Kind, F, DF, float, Single, )
#define POINTWISE_KERNELS_T(Kind, F, DF, T, Single, FORWARD_ATTRIBUTE)                                                                                                      \
  static FORWARD_ATTRIBUTE PetscErrorCode LayerForward##Single##_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const T *x, T *y)                                \
  {                                                                                                                                                                         \
    Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;                                                                                                                   \
    const PetscInt   N  = n * layer->insize;                                                                                                                                \
    const PetscReal  a  = pw->alpha;                                                                                                                                        \
                                                                                                                                                                            \
    POINTWISE_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) y[i] = (T)F((PetscScalar)x[i], a));                                                                              \
    return PetscLogFlops(pw->flops_f * N);                                                                                                                                  \
  }                                                                                                                                                                         \
  static PetscErrorCode LayerBackward##Single##_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const T *x, const T *y, const T *dy, T *dx, PetscScalar *dtheta)  \
  {                                                                                                                                                                         \
    Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;                                                                                                                   \
    const PetscInt   N  = n * layer->insize;                                                                                                                                \
    const PetscReal  a  = pw->alpha;                                                                                                                                        \
                                                                                                                                                                            \
    if (!dx) return 0;                                                                                                                                                      \
    POINTWISE_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dx[i] = (T)(DF((PetscScalar)x[i], (PetscScalar)y[i], a) * dy[i]));                                               \
    return PetscLogFlops((pw->flops_df + 1) * N);                                                                                                                           \
  }                                                                                                                                                                         \
  static PetscErrorCode LayerJVP##Single##_##Kind(Layer layer, PetscInt n, const PetscScalar *theta, const T *x, const T *y, const T *dx, const PetscScalar *dtheta, T *dy) \
  {                                                                                                                                                                         \
    Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;                                                                                                                   \
    const PetscInt   N  = n * layer->insize;                                                                                                                                \
    const PetscReal  a  = pw->alpha;                                                                                                                                        \
                                                                                                                                                                            \
    POINTWISE_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dy[i] = (T)(DF((PetscScalar)x[i], (PetscScalar)y[i], a) * dx[i]));                                               \
    return PetscLogFlops((pw->flops_df + 1) * N);                                                                                                                           \
  }

#define POINTWISE_SET_SINGLE_KERNELS(layer, Kind)              \
  do {                                                         \
    (layer)->ops->forwardsingle  = LayerForwardSingle_##Kind;  \
    (layer)->ops->backwardsingle = LayerBackwardSingle_##Kind; \
    (layer)->ops->jvpsingle      = LayerJVPSingle_##Kind;      \
  } while (0)

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
    Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;                                                                                                                                                                                           \
    const PetscInt   N  = n * layer->insize;                                                                                                                                                                                                        \
    const PetscReal  a  = pw->alpha;                                                                                                                                                                                                                \
                                                                                                                                                                                                                                                    \
    if (!xdot || !dxdot) return 0;                                                                                                                                                                                                                  \
    POINTWISE_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dxdot[i] += D2F(x[i], y[i], a) * xdot[i] * dy[i]);                                                                                                                                       \
    return PetscLogFlops((pw->flops_d2f + 3) * N);                                                                                                                                                                                                  \
  }
#define POINTWISE_SET_SOKERNEL(layer, Kind, FLOPS)                          \
  do {                                                                      \
    (layer)->ops->sobackward                      = LayerSOBackward_##Kind; \
    ((Layer_Pointwise *)(layer)->data)->flops_d2f = (FLOPS);                \
  } while (0)

PETSC_INTERN PetscErrorCode LayerPointwiseSetParameter_Private(Layer, const char[], PetscReal);
