/*
  maxpool: the maximum over each window, per channel (PyTorch's MaxPool2d on (h, w, c) samples, MaxPool3d on
  (d, h, w, c) ones; padding acts as -infinity). The window is seen as a volume (a 2-D one has depth 1, window.h).

    x       [n][D][H][W][C]
    y       [n][Do][Ho][Wo][C]
    argmax  [n][Do][Ho][Wo][C]   index into x of the maximum, saved by forward (the first maximum in window order on ties)

    forward   y[j]  = x[argmax[j]]
    backward  dx    = 0;  dx[argmax[j]] += dy[j]      (no parameters); then dx = f'(x) dx per sample, in cache, when its
              owner fused the activation f before it (relu -> maxpool: relu's backward pass is gone)
    jvp       dy[j] = dx[argmax[j]]

  Threads: samples in parallel (a window lies in one sample: backward's scatter-add of a sample touches only its own
  dx, in the same order whatever the thread count).
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
  PetscInt    nwork;
  PetscInt   *argmax;
} Layer_MaxPool;

static PetscErrorCode LayerForward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  LayerWindowVolume v;
  PetscInt         *argmax;

  PetscFunctionBegin;
  PetscCall(LayerPoolCheckRunnable_Private(layer));
  LayerWindowGetVolume(&pool->win, &v);
  if (n != pool->nwork) {
    PetscCall(PetscFree(pool->argmax));
    PetscCall(PetscMalloc1((size_t)n * layer->outsize, &pool->argmax));
    pool->nwork = n;
  }
  argmax = pool->argmax;
  {
    const PetscInt D = v.in[0], H = v.in[1], W = v.in[2], C = layer->in.dim[layer->in.ndim - 1], outsize = layer->outsize;

#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && n * outsize > 4096)
    for (PetscInt s = 0; s < n; s++) {
      PetscScalar *ys = y + (size_t)s * outsize;
      PetscInt    *as = argmax + (size_t)s * outsize;

      for (PetscInt od = 0; od < v.out[0]; od++) {
        const PetscInt d0 = v.t0[0][od], d1 = v.t1[0][od], id = od * v.step[0] - v.pad[0];

        for (PetscInt oh = 0; oh < v.out[1]; oh++) {
          const PetscInt h0 = v.t0[1][oh], h1 = v.t1[1][oh], ih = oh * v.step[1] - v.pad[1];

          for (PetscInt ow = 0; ow < v.out[2]; ow++, ys += C, as += C) {
            const PetscInt w0 = v.t0[2][ow], w1 = v.t1[2][ow], iw = ow * v.step[2] - v.pad[2];
            const PetscInt first = (((s * D + id + d0) * H + ih + h0) * W + iw + w0) * C;

            /* no window is all padding (padding <= kernel/2), so the first valid tap starts the maximum */
            for (PetscInt c = 0; c < C; c++) {
              ys[c] = x[first + c];
              as[c] = first + c;
            }
            for (PetscInt kd = d0; kd < d1; kd++) {
              for (PetscInt kh = h0; kh < h1; kh++) {
                for (PetscInt kw = (kd == d0 && kh == h0 ? w0 + 1 : w0); kw < w1; kw++) {
                  const PetscInt                    off = (((s * D + id + kd) * H + ih + kh) * W + iw + kw) * C;
                  const PetscScalar *PETSC_RESTRICT xt  = x + off;
                  PetscScalar *PETSC_RESTRICT       yt  = ys;
                  PetscInt *PETSC_RESTRICT          at  = as;

                  for (PetscInt c = 0; c < C; c++) { /* branch-free with a bit mask, so that it vectorizes */
                    const PetscScalar val = xt[c], cur = yt[c];
                    const PetscInt    more = -(PetscInt)(val > cur);

                    yt[c] = val > cur ? val : cur;
                    at[c] = (at[c] & ~more) | ((off + c) & more);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
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

static PetscErrorCode LayerReset_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  pool->nwork = 0;
  PetscCall(LayerResetPool_Private(layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_MaxPool(Layer layer)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(pool->argmax));
  PetscCall(LayerDestroyPool_Private(layer));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_MaxPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_MaxPool)));
  layer->ops->setup    = LayerSetUpPool_Private;
  layer->ops->forward  = LayerForward_MaxPool;
  layer->fusebackward  = PETSC_TRUE; /* applies a fused activation's derivative to each sample of dx (layerimpl.h) */
  layer->ops->backward = LayerBackward_MaxPool;
  layer->ops->jvp      = LayerJVP_MaxPool;
  layer->sozero        = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset    = LayerReset_MaxPool;
  layer->ops->destroy  = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
