/*
  maxpool: the maximum over each window, per channel (PyTorch's MaxPool2d on (h, w, c) samples, MaxPool3d on
  (d, h, w, c) ones; padding acts as -infinity). The window is seen as a volume (a 2-D one has depth 1, window.h).

    x       [n][D][H][W][C]
    y       [n][Do][Ho][Wo][C]
    argmax  [n][Do][Ho][Wo][C]   int32_t: offset within its sample's x of the maximum, saved by forward (the first
                                 maximum in window order on ties); set-up checks that a sample's size fits

    forward   y[j]  = x[argmax[j]]
    backward  dx    = 0;  dx[argmax[j]] += dy[j]      (no parameters); when its owner fused the activation f before
              it (relu -> maxpool: relu's backward pass is gone), dy is first multiplied by f' at the outputs,
              f'(y[j]) = f'(x[argmax[j]]), a quarter of dx's entries for 2x2 windows; the same values as masking dx
              (up to the sign of a zero)
    jvp       dy[j] = dx[argmax[j]]

  Tiled windows (step = kernel, no padding: the windows do not overlap and lie inside the input, as in maxpool:2), the
  common case, have their own kernels (maxpoolkernels.h): forward keeps each window's maximum in registers, vectorized
  over the channels; backward writes each dx entry once (0 + dy at the argmax, 0 elsewhere, then the rows and columns
  no window covers) instead of zeroing dx and scattering. The same argmax, y and dx bits as the general kernels.

  Single precision (a Net at -net_precision single): the same kernels on floats (maxpoolkernels.h, a typed template),
  hence the same argmax on the same values; backward and jvp as above on floats.

  Threads: samples in parallel (a window lies in one sample: backward's scatter-add of a sample touches only its own
  dx, in the same order whatever the thread count).
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
  PetscInt    nwork;
  int32_t    *argmax; /* offsets within a sample: half the memory traffic of a PetscInt64 global index */
  PetscBool   tiled;  /* step = kernel, no padding: the tiled kernels */
  int32_t    *tap;    /* tiled: each tap's offset in x from its window's first point, in window order */
  void       *gmask;  /* a fused activation: each thread's masked dy of one sample (double or float) */
  size_t      ngmask; /* its bytes */
} Layer_MaxPool;

/*
  The tiled kernels are compiled for AVX-512 and AVX2 too, picked at load time (GCC's function multi-versioning; the
  baseline build targets x86-64-v2, whose vectors hold 4 floats): selects and compares only, the same bits anywhere.
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MAXPOOL_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MAXPOOL_TARGET_CLONES
#endif
/* a window's loop over the channels, inlined into each clone with its constant tap count */
#if defined(__GNUC__)
#define MAXPOOL_INLINE inline __attribute__((always_inline))
#else
#define MAXPOOL_INLINE inline
#endif

/* the kernels, in double and in float (maxpoolkernels.h) */
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

/*
  The pools' set-up, then what maxpool's kernels need: a sample's size within int32_t (argmax), and for tiled windows
  the taps' offsets
*/
static PetscErrorCode LayerSetUp_MaxPool(Layer layer)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  LayerWindowVolume v;
  PetscInt64        size = 1;
  PetscInt          C, K, t = 0;
  char              shape[64];

  PetscFunctionBegin;
  PetscCall(LayerSetUpPool_Private(layer));
  if (layer->fielddim) PetscFunctionReturn(0); /* point form has no kernels (LayerPoolCheckRunnable_Private()) */
  for (PetscInt d = 0; d < layer->in.ndim; d++) size *= layer->in.dim[d];
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(size <= INT32_MAX, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "maxpool layer %" PetscInt_FMT ": a sample of shape %s has %" PetscInt64_FMT " entries, more than the %" PRId32
             " its argmax (offsets within a sample, 32-bit) can index: pool smaller samples, or split each sample into boxes (point form on a field)",
             layer->index, shape, size, INT32_MAX);
  LayerWindowGetVolume(&pool->win, &v);
  pool->tiled = PETSC_TRUE;
  for (PetscInt d = 0; d < 3; d++) pool->tiled = (PetscBool)(pool->tiled && v.step[d] == v.k[d] && !v.pad[d] && (v.dilation[d] == 1 || v.k[d] == 1));
  PetscCall(PetscFree(pool->tap));
  if (!pool->tiled) PetscFunctionReturn(0);
  C = layer->in.dim[layer->in.ndim - 1];
  K = v.k[0] * v.k[1] * v.k[2];
  PetscCall(PetscMalloc1(K, &pool->tap));
  for (PetscInt kd = 0; kd < v.k[0]; kd++)
    for (PetscInt kh = 0; kh < v.k[1]; kh++)
      for (PetscInt kw = 0; kw < v.k[2]; kw++) pool->tap[t++] = (int32_t)(((kd * v.in[1] + kh) * v.in[2] + kw) * C);
  PetscFunctionReturn(0);
}

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
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize;
  LayerWindowVolume v;
  PetscInt          C;

  PetscFunctionBegin;
  PetscCall(MaxPoolGetArgmax(layer, n, &v, &C));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && n * out > 4096)
  for (PetscInt s = 0; s < n; s++) {
    if (pool->tiled)
      MaxPoolForwardTiled(&v, pool->tap, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
    else
      MaxPoolForwardGeneral(&v, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
  }
  PetscCall(PetscLogFlops(1.0 * n * out * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

/* each thread's scratch of one sample's masked dy (bytes per thread), for the mask of an activation passed with the
   call (backwardmask), taken at the outputs y (which the caller then passes) */
static PetscErrorCode MaxPoolMaskScratch(Layer_MaxPool *pool, PetscInt n, const void *y, size_t bytes)
{
  const size_t need = (size_t)PetNetThreads() * bytes;

  PetscFunctionBegin;
  PetscCheck(y || !n, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "maxpool backward with an activation's mask needs the forward's output y");
  if (need <= pool->ngmask) PetscFunctionReturn(0);
  PetscCall(PetscFree(pool->gmask));
  PetscCall(PetscMalloc(need, &pool->gmask));
  pool->ngmask = need;
  PetscFunctionReturn(0);
}

/* dx = J^T (act'(y) dy), act the activation before it passed by the caller (or NULL) */
static PetscErrorCode LayerBackwardMask_MaxPool(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize, N = n * out;
  PetscErrorCode    err = 0;
  LayerWindowVolume v;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  LayerWindowGetVolume(&pool->win, &v);
  if (act) PetscCall(MaxPoolMaskScratch(pool, n, y, (size_t)out * sizeof(PetscScalar)));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t     *am  = pool->argmax + (size_t)s * out;
    const PetscScalar *dys = dy + (size_t)s * out;
    PetscScalar       *dxs = dx + (size_t)s * in;

    if (act) { /* the activation before it (relu -> maxpool): masked at the outputs */
      PetscScalar *gm = (PetscScalar *)pool->gmask + (size_t)PetNetThreadId() * out;

      for (PetscInt j = 0; j < out; j++) gm[j] = dys[j];
      PetNetThreadsSetError(&err, LayerMask(act, out, y + (size_t)s * out, gm));
      dys = gm;
    }
    if (pool->tiled)
      MaxPoolBackwardTiled(&v, pool->tap, layer->in.dim[layer->in.ndim - 1], dys, am, dxs);
    else {
      for (PetscInt i = 0; i < in; i++) dxs[i] = 0.0;
      for (PetscInt j = 0; j < out; j++) dxs[am[j]] += dys[j];
    }
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(LayerBackwardMask_MaxPool(layer, NULL, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt in = layer->insize, out = layer->outsize, N = n * out;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t *am = pool->argmax + (size_t)s * out;

    for (PetscInt j = 0; j < out; j++) dy[(size_t)s * out + j] = dx[(size_t)s * in + am[j]];
  }
  PetscFunctionReturn(0);
}

/*
  Single precision (float values; layerimpl.h): the same kernels on floats, so the same argmax as the double kernels on
  the same values; backward adds dy in float (in the same order) and applies a fused activation's derivative as the
  double backward does (activatemasksingle), jvp copies.
*/
static PetscErrorCode LayerForwardSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize;
  LayerWindowVolume v;
  PetscInt          C;

  PetscFunctionBegin;
  PetscCall(MaxPoolGetArgmax(layer, n, &v, &C));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && n * out > 4096)
  for (PetscInt s = 0; s < n; s++) {
    if (pool->tiled)
      MaxPoolForwardTiledSingle(&v, pool->tap, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
    else
      MaxPoolForwardGeneralSingle(&v, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
  }
  PetscCall(PetscLogFlops(1.0 * n * out * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardMaskSingle_MaxPool(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize, N = n * out;
  PetscErrorCode    err = 0;
  LayerWindowVolume v;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  LayerWindowGetVolume(&pool->win, &v);
  if (act) PetscCall(MaxPoolMaskScratch(pool, n, y, (size_t)out * sizeof(float)));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t *am  = pool->argmax + (size_t)s * out;
    const float   *g   = dy + (size_t)s * out;
    float         *dxs = dx + (size_t)s * in;

    if (act) {
      /* the activation's derivative at a window's maximum x[argmax[j]] is its derivative at the window's output
         y[j], the same value: mask the sample's dy (a quarter of dx's entries for 2x2 windows, in cache) and scatter
         it, instead of masking all of dx; the same values (up to the sign of a zero) */
      float *gm = (float *)pool->gmask + (size_t)PetNetThreadId() * out;

      for (PetscInt j = 0; j < out; j++) gm[j] = g[j];
      PetNetThreadsSetError(&err, LayerMaskSingle(act, out, y + (size_t)s * out, gm));
      g = gm;
    }
    if (pool->tiled)
      MaxPoolBackwardTiledSingle(&v, pool->tap, layer->in.dim[layer->in.ndim - 1], g, am, dxs);
    else {
      for (PetscInt i = 0; i < in; i++) dxs[i] = 0.0f;
      for (PetscInt j = 0; j < out; j++) dxs[am[j]] += g[j];
    }
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(LayerBackwardMaskSingle_MaxPool(layer, NULL, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt in = layer->insize, out = layer->outsize, N = n * out;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  if (!dx) {
    for (PetscInt j = 0; j < N; j++) dy[j] = 0.0f;
    PetscFunctionReturn(0);
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t *am = pool->argmax + (size_t)s * out;

    for (PetscInt j = 0; j < out; j++) dy[(size_t)s * out + j] = dx[(size_t)s * in + am[j]];
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  PetscCall(PetscFree(pool->gmask));
  PetscCall(PetscFree(pool->tap));
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
  PetscCall(PetscFree(pool->tap));
  PetscCall(LayerDestroyPool_Private(layer));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_MaxPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_MaxPool)));
  layer->ops->setup              = LayerSetUp_MaxPool;
  layer->ops->forward            = LayerForward_MaxPool;
  layer->ops->backwardmask       = LayerBackwardMask_MaxPool; /* an activation's derivative on each sample of dx (layerimpl.h) */
  layer->ops->backwardmasksingle = LayerBackwardMaskSingle_MaxPool;
  layer->ops->backward           = LayerBackward_MaxPool;
  layer->ops->jvp                = LayerJVP_MaxPool;
  layer->ops->forwardsingle      = LayerForwardSingle_MaxPool;
  layer->ops->backwardsingle     = LayerBackwardSingle_MaxPool;
  layer->ops->jvpsingle          = LayerJVPSingle_MaxPool;
  layer->sozero                  = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset              = LayerReset_MaxPool;
  layer->ops->destroy            = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
