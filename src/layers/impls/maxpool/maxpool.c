/*
  maxpool: the maximum over each window, per channel (PyTorch's MaxPool2d on (h, w, c) samples, MaxPool3d on
  (d, h, w, c) ones, with their dilation; padding acts as -infinity). The window is seen as a volume (a 2-D one has
  depth 1, window.h); tap t along a dim reads o step - pad + t dilation.

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
  hence the same argmax on the same values; backward and jvp as above on floats. bfloat16 (a Net at -net_precision
  bfloat16): the same kernels on the stored bfloat16 values, compared widened, with no float copy of the batch; the
  backward's sums and fused mask in float, one sample at a time (MaxPoolBackwardMaskBF16()): the bits of the float
  kernels on widened copies, rounded (NetSetBFloat16Kernels()). oneDNN's max pooling does not run at bfloat16.

  Threads: samples in parallel (a window lies in one sample: backward's scatter-add of a sample touches only its own
  dx, in the same order whatever the thread count).

  oneDNN (a Net at single or bfloat16 with -net_backend onednn: layer->gemm, and -maxpool_onednn: off by default,
  since oneDNN 2.6's jit:avx2 max pooling on nhwc data took 5-6x the time of the tiled kernels below on this AVX2
  machine, docs/benchmarks.md; the results are the same bits either way, ties included): a batch-mode layer, 2-D or
  3-D, dilated or not, whose shape oneDNN takes (forward and backward, decided per batch size once, -info) runs its
  float forward as oneDNN's max pooling in training mode, which writes a workspace, and its float backward as
  oneDNN's max pooling backward, which reads it:

    ws      [n][Do][Ho][Wo][C]   u8 (s32 for windows of 256 taps or more): the maximum's tap in its window,
                                 (kd KH + kh) KW + kw (kd = 0 in 2-D), padded taps counted (onednnimpl.h)

  oneDNN has no jvp of a max pooling: the jvp (and any native pass after a oneDNN forward: the double passes) runs
  the kernels below on argmax decoded from ws (MaxPoolArgmaxFromWorkspace(), once per forward), so the jvp selects
  the tangent at the very taps the forward and backward chose. Ties: oneDNN 2.6's jit kernel (jit:avx2 here) keeps
  the first maximum in window order (a later tap replaces it only when strictly greater), the native rule, so both
  give the same argmax on the same values, ties included (onednn_maxpool_ties_*). Its running maximum starts at
  -FLT_MAX, not at the first tap: a NaN never wins (native keeps a NaN first tap), and a window of only -infinity
  names its first tap (padded or not) with y = -infinity. A fused activation (relu -> maxpool) masks dy at the outputs
  (the whole batch, in pool->gbatch) before oneDNN's backward.
*/
#include "../pool/pool.h"
#include <petnet/private/onednnimpl.h>

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
  PetscInt    nwork;
  int32_t    *argmax; /* offsets within a sample: half the memory traffic of a PetscInt64 global index */
  PetscBool   tiled;  /* step = kernel, no padding: the tiled kernels */
  int32_t    *tap;    /* tiled: each tap's offset in x from its window's first point, in window order */
  void       *gmask;  /* a fused activation: each thread's masked dy of one sample (double or float) */
  size_t      ngmask; /* its bytes */
  PetscBool   fromws; /* the last forward ran on oneDNN: its indices are in ws, argmax is not yet decoded from them */
  void       *ws;     /* oneDNN's workspace of the last forward (nwork samples, wsbytes per output) */
  size_t      nws;    /* its bytes */
  PetscInt    wsbytes;
  float      *gbatch;  /* oneDNN with a fused activation: the masked dy of the batch */
  size_t      ngbatch; /* its floats */
  PetscBool   onednn;  /* -maxpool_onednn: the float passes on oneDNN when the Net's backend is onednn */
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
  pool->fromws = PETSC_FALSE; /* a native forward writes argmax itself */
  *C           = layer->in.dim[layer->in.ndim - 1];
  PetscFunctionReturn(0);
}

/*
  argmax from oneDNN's workspace after a forward on oneDNN (nothing otherwise): the tap t = (kd KH + kh) KW + kw of
  output (od, oh, ow, c) is the input point (od step - pad + kd dilation, oh step - pad + kh dilation, ow step - pad +
  kw dilation, c) of its sample (each dim's own step, pad and dilation; a 2-D window is a volume whose leading dim has
  one point and one tap, kd = od = 0); once per forward
*/
static PetscErrorCode MaxPoolArgmaxFromWorkspace(Layer layer)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    out = layer->outsize, n = pool->nwork;
  LayerWindowVolume v;

  PetscFunctionBegin;
  if (!pool->fromws) PetscFunctionReturn(0);
  LayerWindowGetVolume(&pool->win, &v);
  {
    const PetscInt       H = v.in[1], W = v.in[2], Do = v.out[0], Ho = v.out[1], Wo = v.out[2], KH = v.k[1], KW = v.k[2], C = layer->in.dim[layer->in.ndim - 1];
    const unsigned char *w8  = pool->wsbytes == 1 ? (const unsigned char *)pool->ws : NULL;
    const int32_t       *w32 = pool->wsbytes == 4 ? (const int32_t *)pool->ws : NULL;

#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (n > 1 && n * out > 4096)
    for (PetscInt s = 0; s < n; s++) {
      int32_t *am = pool->argmax + (size_t)s * out;

      for (PetscInt od = 0, j = 0; od < Do; od++)
        for (PetscInt oh = 0; oh < Ho; oh++)
          for (PetscInt ow = 0; ow < Wo; ow++)
            for (PetscInt c = 0; c < C; c++, j++) {
              const PetscInt t  = w8 ? (PetscInt)w8[(size_t)s * out + j] : (PetscInt)w32[(size_t)s * out + j];
              const PetscInt id = od * v.step[0] - v.pad[0] + (t / (KH * KW)) * v.dilation[0];
              const PetscInt ih = oh * v.step[1] - v.pad[1] + ((t / KW) % KH) * v.dilation[1];
              const PetscInt iw = ow * v.step[2] - v.pad[2] + (t % KW) * v.dilation[2];

              am[j] = (int32_t)(((id * H + ih) * W + iw) * C + c);
            }
    }
  }
  pool->fromws = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* each thread's scratch of the backward's bytes per sample (pool->gmask) */
static PetscErrorCode MaxPoolScratch(Layer_MaxPool *pool, size_t bytes)
{
  const size_t need = (size_t)PetNetThreads() * bytes;

  PetscFunctionBegin;
  if (need <= pool->ngmask) PetscFunctionReturn(0);
  PetscCall(PetscFree(pool->gmask));
  PetscCall(PetscMalloc(need, &pool->gmask));
  pool->ngmask = need;
  PetscFunctionReturn(0);
}

/* each thread's scratch of one sample's masked dy (bytes per thread), for the mask of an activation passed with the
   call (backwardmask), taken at the outputs y (which the caller then passes) */
static PetscErrorCode MaxPoolMaskScratch(Layer_MaxPool *pool, PetscInt n, const void *y, size_t bytes)
{
  PetscFunctionBegin;
  PetscCheck(y || !n, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "maxpool backward with an activation's mask needs the forward's output y");
  PetscCall(MaxPoolScratch(pool, bytes));
  PetscFunctionReturn(0);
}

/* the kernels and the layer's passes, in double and in float (maxpoolkernels.h) */
#define MAXPOOL_GT(a, b) ((a) > (b))
#define MAXPOOL_T        PetscScalar
#define MAXPOOL_NAME(f)  f
#include "maxpoolkernels.h"
#undef MAXPOOL_T
#undef MAXPOOL_NAME
#define MAXPOOL_T       float
#define MAXPOOL_NAME(f) f##Single
#include "maxpoolkernels.h"
#undef MAXPOOL_T
#undef MAXPOOL_NAME
#undef MAXPOOL_GT
#define MAXPOOL_GT(a, b) (PetNetBF16ToFloat(a) > PetNetBF16ToFloat(b))
#define MAXPOOL_BF16
#define MAXPOOL_T       uint16_t
#define MAXPOOL_NAME(f) f##BF16
#include "maxpoolkernels.h"
#undef MAXPOOL_T
#undef MAXPOOL_NAME
#undef MAXPOOL_BF16
#undef MAXPOOL_GT

/* forward at bfloat16: no activation is fused after a maxpool (it has no forwardact) */
static PetscErrorCode MaxPoolForwardActBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  PetscFunctionBegin;
  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_SUP, "maxpool layer %" PetscInt_FMT ": no activation is applied in its forward pass", layer->index);
  PetscCall(MaxPoolForwardBF16(layer, n, theta, x, y));
  PetscFunctionReturn(0);
}

/*
  bfloat16 (Layer.ops forwardbf16..., layerbf16.c): forward and jvp are the kernels above on the stored values (they
  select entries: y and argmax the float kernels' on the widened values, bit for bit). Backward takes each sample's g
  in float (dy widened, times act'(y) in float when an activation is fused before it), then, for tiled windows, writes
  dx = round(0 + g) at each argmax and 0 elsewhere, and for other windows sums g into a float dx of the sample and
  rounds it: the float path's operations in its order, rounded where the store rounds them. Scratch per thread: g and
  y of one sample in float, g rounded, and (other windows) dx of one sample in float.
*/
static PetscErrorCode MaxPoolBackwardMaskBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize, N = n * out;
  const size_t      per = (3 * (size_t)out + (pool->tiled ? 0 : (size_t)in)) * sizeof(float); /* gf, yf, g16 (as many bytes as a float each: aligned), dxf */
  PetscErrorCode    err = 0;
  LayerWindowVolume v;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  PetscCheck(!act || y || !n, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "maxpool backward with an activation's mask needs the forward's output y");
  PetscCall(MaxPoolArgmaxFromWorkspace(layer)); /* after a forward on oneDNN */
  LayerWindowGetVolume(&pool->win, &v);
  PetscCall(MaxPoolScratch(pool, per));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t  *am = pool->argmax + (size_t)s * out;
    const uint16_t *g  = dy + (size_t)s * out;
    float          *gf = (float *)((char *)pool->gmask + (size_t)PetNetThreadId() * per), *yf = gf + out, *dxf = gf + 3 * out;
    uint16_t       *g16 = (uint16_t *)(yf + out);
    uint16_t       *dxs = dx + (size_t)s * in;

    for (PetscInt j = 0; j < out; j++) gf[j] = PetNetBF16ToFloat(g[j]);
    if (act) {
      for (PetscInt j = 0; j < out; j++) yf[j] = PetNetBF16ToFloat(y[(size_t)s * out + j]);
      PetNetThreadsSetError(&err, LayerMaskSingle(act, out, yf, gf));
    }
    if (pool->tiled) {
      for (PetscInt j = 0; j < out; j++) g16[j] = PetNetFloatToBF16(0.0f + gf[j]);
      MaxPoolBackwardTiledBF16(&v, pool->tap, layer->in.dim[layer->in.ndim - 1], g16, am, dxs);
    } else {
      for (PetscInt i = 0; i < in; i++) dxf[i] = 0;
      for (PetscInt j = 0; j < out; j++) dxf[am[j]] += gf[j];
      for (PetscInt i = 0; i < in; i++) dxs[i] = PetNetFloatToBF16(dxf[i]);
    }
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

/*
  The float passes on oneDNN (the header's comment): *on when the layer (2-D or 3-D, batch form, any dilation) takes
  oneDNN's max pooling for n samples, sh its key and *wsbytes its workspace's bytes per output
*/
static PetscErrorCode MaxPoolOneDNN(Layer layer, PetscInt n, PetNetOneDNNConvShape *sh, PetscBool *on, PetscInt *wsbytes)
{
  PetscFunctionBegin;
  *wsbytes = 0;
  *on      = PETSC_FALSE;
  if (!((Layer_MaxPool *)layer->data)->onednn) PetscFunctionReturn(0);
  PetscCall(LayerPoolOneDNNKey_Private(layer, n, sh, on));
  if (*on) PetscCall(PetNetOneDNNMaxPoolAvailable(layer->gemm, sh, on, wsbytes));
  PetscFunctionReturn(0);
}

/* y = the window maxima, oneDNN's workspace kept for the backward (argmax decoded from it only when asked) */
static PetscErrorCode MaxPoolForwardSingle_OneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_MaxPool        *pool = (Layer_MaxPool *)layer->data;
  PetNetOneDNNConvShape sh;
  PetscBool             on;
  PetscInt              wsbytes, C;
  LayerWindowVolume     v;

  PetscFunctionBegin;
  PetscCall(MaxPoolOneDNN(layer, n, &sh, &on, &wsbytes));
  if (!on) {
    PetscCall(MaxPoolForwardSingle(layer, n, theta, x, y));
    PetscFunctionReturn(0);
  }
  PetscCall(MaxPoolGetArgmax(layer, n, &v, &C));
  if ((size_t)n * layer->outsize * wsbytes > pool->nws) {
    PetscCall(PetscFree(pool->ws));
    pool->nws = (size_t)n * layer->outsize * wsbytes;
    PetscCall(PetscMalloc(pool->nws, &pool->ws));
  }
  PetscCall(PetNetOneDNNMaxPool(&sh, PETSC_FALSE, (float *)x, y, pool->ws));
  pool->fromws  = PETSC_TRUE;
  pool->wsbytes = wsbytes;
  PetscCall(PetscLogFlops(1.0 * n * layer->outsize * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

/* dx = J^T (act'(y) dy) (overwritten) on oneDNN's backward when the forward ran there, else the native kernels */
static PetscErrorCode MaxPoolBackwardMaskSingle_OneDNN(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_MaxPool        *pool = (Layer_MaxPool *)layer->data;
  const PetscInt        N    = n * layer->outsize;
  PetNetOneDNNConvShape sh;
  PetscBool             on;
  PetscInt              wsbytes;
  const float          *g = dy;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  if (!pool->fromws) {
    PetscCall(MaxPoolBackwardMaskSingle(layer, act, n, theta, x, y, dy, dx, dtheta));
    PetscFunctionReturn(0);
  }
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  PetscCall(MaxPoolOneDNN(layer, n, &sh, &on, &wsbytes));
  PetscCheck(on && wsbytes == pool->wsbytes, PETSC_COMM_SELF, PETSC_ERR_PLIB, "maxpool layer %" PetscInt_FMT ": its forward ran on oneDNN, its backward's key falls back to native", layer->index);
  if (act) {
    PetscCheck(y || !n, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "maxpool backward with an activation's mask needs the forward's output y");
    if ((size_t)N > pool->ngbatch) {
      PetscCall(PetscFree(pool->gbatch));
      PetscCall(PetscMalloc1(N, &pool->gbatch));
      pool->ngbatch = (size_t)N;
    }
    PetscCall(PetscArraycpy(pool->gbatch, dy, N));
    PetscCall(LayerMaskSingle(act, N, y, pool->gbatch));
    g = pool->gbatch;
  }
  PetscCall(PetNetOneDNNMaxPool(&sh, PETSC_TRUE, dx, (float *)g, pool->ws));
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode MaxPoolBackwardSingle_OneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (((Layer_MaxPool *)layer->data)->fromws)
    PetscCall(MaxPoolBackwardMaskSingle_OneDNN(layer, NULL, n, theta, x, y, dy, dx, dtheta));
  else
    PetscCall(MaxPoolBackwardSingle(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

/* the pools' options, and -maxpool_onednn (unprefixed: every maxpool layer; prefixed: this one) */
static PetscErrorCode LayerSetFromOptions_MaxPool(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerSetFromOptionsPool_Private(layer, PetscOptionsObject));
  /* -maxpool_onednn for every maxpool layer, the layer's own prefixed option (-layerN_maxpool_onednn) over it */
  PetscCall(PetscOptionsGetBool(((PetscObject)layer)->options, NULL, "-maxpool_onednn", &pool->onednn, NULL));
  PetscOptionsHeadBegin(PetscOptionsObject, "Max pooling options");
  PetscCall(PetscOptionsBool("-maxpool_onednn", "With -net_backend onednn at single or bfloat16: run the float passes (2-D and 3-D) on oneDNN's max pooling (the same results; slower than PetNet's kernels with oneDNN 2.6 on AVX2)", "NetSetBackend",
                             pool->onednn, &pool->onednn, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  PetscCall(PetscFree(pool->gmask));
  PetscCall(PetscFree(pool->tap));
  PetscCall(PetscFree(pool->ws));
  PetscCall(PetscFree(pool->gbatch));
  pool->nwork   = 0;
  pool->ngmask  = 0;
  pool->nws     = 0;
  pool->ngbatch = 0;
  pool->fromws  = PETSC_FALSE;
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
  PetscCall(PetscFree(pool->ws));
  PetscCall(PetscFree(pool->gbatch));
  PetscCall(LayerDestroyPool_Private(layer));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_MaxPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_MaxPool), PETSC_TRUE));
  layer->ops->setup              = LayerSetUp_MaxPool;
  layer->ops->setfromoptions     = LayerSetFromOptions_MaxPool;
  layer->ops->forward            = MaxPoolForward;
  layer->ops->backwardmask       = MaxPoolBackwardMask;              /* an activation's derivative on each sample of dx (layerimpl.h) */
  layer->ops->backwardmasksingle = MaxPoolBackwardMaskSingle_OneDNN; /* oneDNN after a forward there, else MaxPoolBackwardMaskSingle */
  layer->ops->backward           = MaxPoolBackward;
  layer->ops->jvp                = MaxPoolJVP;
  layer->ops->forwardsingle      = MaxPoolForwardSingle_OneDNN; /* oneDNN where the Net asks for it, else MaxPoolForwardSingle */
  layer->ops->backwardsingle     = MaxPoolBackwardSingle_OneDNN;
  layer->ops->jvpsingle          = MaxPoolJVPSingle;      /* oneDNN has none: the native gather at the forward's argmax */
  layer->ops->forwardbf16        = MaxPoolForwardActBF16; /* at bfloat16, on the stored values (layerbf16.c) */
  layer->ops->backwardmaskbf16   = MaxPoolBackwardMaskBF16;
  layer->ops->jvpbf16            = MaxPoolJVPBF16;
  layer->sozero                  = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset              = LayerReset_MaxPool;
  layer->ops->destroy            = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
