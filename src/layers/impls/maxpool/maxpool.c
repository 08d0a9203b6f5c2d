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

/* the kernels and the layer's passes, in double and in float (maxpoolkernels.h) */
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
  layer->ops->forward            = MaxPoolForward;
  layer->ops->backwardmask       = MaxPoolBackwardMask; /* an activation's derivative on each sample of dx (layerimpl.h) */
  layer->ops->backwardmasksingle = MaxPoolBackwardMaskSingle;
  layer->ops->backward           = MaxPoolBackward;
  layer->ops->jvp                = MaxPoolJVP;
  layer->ops->forwardsingle      = MaxPoolForwardSingle;
  layer->ops->backwardsingle     = MaxPoolBackwardSingle;
  layer->ops->jvpsingle          = MaxPoolJVPSingle;
  layer->sozero                  = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset              = LayerReset_MaxPool;
  layer->ops->destroy            = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
