/*
  maxpool: the maximum over each window, per channel (PyTorch's MaxPool2d on (h, w, c) samples, MaxPool3d on
  (d, h, w, c) ones; padding acts as -infinity). The window is seen as a volume (a 2-D one has depth 1, window.h).

    x       [n][D][H][W][C]
    y       [n][Do][Ho][Wo][C]
    argmax  [n][Do][Ho][Wo][C]   index into x of the maximum, saved by forward (the first maximum in window order on ties)

    forward   y[j]  = x[argmax[j]]
    backward  dx    = 0;  dx[argmax[j]] += dy[j]      (no parameters); then dx = f'(x) dx per sample, in cache, when its
              owner fused the activation f before it (relu -> maxpool: relu's backward pass is gone); in single
              precision the mask is taken on dy at the outputs instead, f'(y[j]) = f'(x[argmax[j]]), before the scatter
    jvp       dy[j] = dx[argmax[j]]

  Single precision (a Net at -net_precision single): the same forward loop nest on floats (maxpoolkernels.h, a typed
  template), hence the same argmax on the same values; backward and jvp as above on floats.

  Threads: samples in parallel (a window lies in one sample: backward's scatter-add of a sample touches only its own
  dx, in the same order whatever the thread count).
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
  PetscInt    nwork;
  PetscInt   *argmax;
  float      *gmask; /* single precision, a fused activation: each thread's masked dy of one sample */
  PetscInt    ngmask;
} Layer_MaxPool;

/* the forward loop nest, in double and in float (maxpoolkernels.h) */
#define MAXPOOL_T       PetscScalar
#define MAXPOOL_NAME(f) f
#include "maxpoolkernels.h"
#undef MAXPOOL_T
#undef MAXPOOL_NAME
#define MAXPOOL_T       float
#define MAXPOOL_NAME(f) f##Single
#include "maxpoolkernels.h"
#undef MAXPOOL_T
#undef MAXPOOL_NAME

/* argmax for n samples */
static PetscErrorCode MaxPoolGetArgmax(Layer layer, PetscInt n, LayerWindowVolume *v, PetscInt *C)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerPoolCheckRunnable_Private(layer));
  LayerWindowGetVolume(&pool->win, v);
  if (n != pool->nwork) {
    PetscCall(PetscFree(pool->argmax));
    PetscCall(PetscMalloc1((size_t)n * layer->outsize, &pool->argmax));
    pool->nwork = n;
  }
  *C = layer->in.dim[layer->in.ndim - 1];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  LayerWindowVolume v;
  PetscInt          C;

  PetscFunctionBegin;
  PetscCall(MaxPoolGetArgmax(layer, n, &v, &C));
  MaxPoolForwardKernel(&v, n, C, layer->outsize, x, y, ((Layer_MaxPool *)layer->data)->argmax);
  PetscCall(PetscLogFlops(1.0 * n * layer->outsize * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;
  PetscErrorCode err  = 0;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const PetscInt *am = pool->argmax;

    for (size_t i = (size_t)s * layer->insize; i < (size_t)(s + 1) * layer->insize; i++) dx[i] = 0.0;
    for (PetscInt j = s * layer->outsize; j < (s + 1) * layer->outsize; j++) dx[am[j]] += dy[j];
    /* an activation its owner fused before it (relu -> maxpool): dx = f'(x) dx on the sample just written */
    PetNetThreadsSetError(&err, LayerFusedMask(layer, layer->insize, x + (size_t)s * layer->insize, dx + (size_t)s * layer->insize));
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (N > 4096)
  for (PetscInt j = 0; j < N; j++) dy[j] = dx[pool->argmax[j]];
  PetscFunctionReturn(0);
}

/*
  Single precision (float values; layerimpl.h): the same loops on floats, so the same argmax as the double kernels on
  the same values; backward adds dy in float (in the same order) and applies a fused activation's derivative as the
  double backward does (activatemasksingle), jvp copies.
*/
static PetscErrorCode LayerForwardSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  LayerWindowVolume v;
  PetscInt          C;

  PetscFunctionBegin;
  PetscCall(MaxPoolGetArgmax(layer, n, &v, &C));
  MaxPoolForwardKernelSingle(&v, n, C, layer->outsize, x, y, ((Layer_MaxPool *)layer->data)->argmax);
  PetscCall(PetscLogFlops(1.0 * n * layer->outsize * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;
  PetscErrorCode err  = 0;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  if (layer->fusemask && y && (size_t)PetNetThreads() * layer->outsize > (size_t)pool->ngmask) {
    PetscCall(PetscFree(pool->gmask));
    pool->ngmask = PetNetThreads() * layer->outsize;
    PetscCall(PetscMalloc1(pool->ngmask, &pool->gmask));
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const PetscInt *am = pool->argmax;
    const PetscInt  j0 = s * layer->outsize;

    for (size_t i = (size_t)s * layer->insize; i < (size_t)(s + 1) * layer->insize; i++) dx[i] = 0.0f;
    if (layer->fusemask && y) {
      /* the fused activation's derivative at a window's maximum x[argmax[j]] is its derivative at the window's output
         y[j], the same value: mask the sample's dy (a quarter of dx's entries for 2x2 windows, in cache) and scatter
         it, instead of masking all of dx; the same values (up to the sign of a zero) */
      float *g = pool->gmask + (size_t)PetNetThreadId() * layer->outsize;

      for (PetscInt j = 0; j < layer->outsize; j++) g[j] = dy[j0 + j];
      PetNetThreadsSetError(&err, LayerFusedMaskSingle(layer, layer->outsize, y + j0, g));
      for (PetscInt j = 0; j < layer->outsize; j++) dx[am[j0 + j]] += g[j];
      continue;
    }
    for (PetscInt j = j0; j < j0 + layer->outsize; j++) dx[am[j]] += dy[j];
    PetNetThreadsSetError(&err, LayerFusedMaskSingle(layer, layer->insize, x + (size_t)s * layer->insize, dx + (size_t)s * layer->insize));
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  if (!dx) {
    for (PetscInt j = 0; j < N; j++) dy[j] = 0.0f;
    PetscFunctionReturn(0);
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (N > 4096)
  for (PetscInt j = 0; j < N; j++) dy[j] = dx[pool->argmax[j]];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  PetscCall(PetscFree(pool->gmask));
  pool->nwork  = 0;
  pool->ngmask = 0;
  PetscCall(LayerResetPool_Private(layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  PetscCall(PetscFree(pool->gmask));
  PetscCall(LayerDestroyPool_Private(layer));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_MaxPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_MaxPool)));
  layer->ops->setup          = LayerSetUpPool_Private;
  layer->ops->forward        = LayerForward_MaxPool;
  layer->fusebackward        = PETSC_TRUE; /* applies a fused activation's derivative to each sample of dx (layerimpl.h) */
  layer->fusebackwardsingle  = PETSC_TRUE; /* in single precision too */
  layer->ops->backward       = LayerBackward_MaxPool;
  layer->ops->jvp            = LayerJVP_MaxPool;
  layer->ops->forwardsingle  = LayerForwardSingle_MaxPool;
  layer->ops->backwardsingle = LayerBackwardSingle_MaxPool;
  layer->ops->jvpsingle      = LayerJVPSingle_MaxPool;
  layer->sozero              = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset          = LayerReset_MaxPool;
  layer->ops->destroy        = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
