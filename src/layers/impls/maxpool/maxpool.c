/*
  maxpool: the maximum over each kh x kw window, per channel (PyTorch's MaxPool2d; padding acts as -infinity).

    x       [n][H][W][C]
    y       [n][Ho][Wo][C]
    argmax  [n][Ho][Wo][C]   index into x of the maximum, saved by forward (the first maximum in window order on ties)

    forward   y[j]  = x[argmax[j]]
    backward  dx    = 0;  dx[argmax[j]] += dy[j]      (no parameters)
    jvp       dy[j] = dx[argmax[j]]
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
  PetscInt    nwork;
  PetscInt   *argmax;
} Layer_MaxPool;

static PetscErrorCode LayerForward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_MaxPool     *pool = (Layer_MaxPool *)layer->data;
  const LayerWindow *win  = &pool->win;
  const PetscInt     H = win->in[0], W = win->in[1], Ho = win->out[0], Wo = win->out[1], C = layer->in.dim[2];
  const PetscInt     sh = win->step[0], sw = win->step[1], ph = win->pad[0], pw = win->pad[1];
  PetscInt          *argmax;

  PetscFunctionBegin;
  if (n != pool->nwork) {
    PetscCall(PetscFree(pool->argmax));
    PetscCall(PetscMalloc1((size_t)n * layer->outsize, &pool->argmax));
    pool->nwork = n;
  }
  argmax = pool->argmax;
  for (PetscInt s = 0; s < n; s++) {
    for (PetscInt oh = 0; oh < Ho; oh++) {
      const PetscInt h0 = win->t0[0][oh], h1 = win->t1[0][oh], ih = oh * sh - ph;

      for (PetscInt ow = 0; ow < Wo; ow++, y += C, argmax += C) {
        const PetscInt w0 = win->t0[1][ow], w1 = win->t1[1][ow], iw = ow * sw - pw;
        const PetscInt first = ((s * H + ih + h0) * W + iw + w0) * C;

        /* no window is all padding (padding <= kernel/2), so the first valid tap starts the maximum */
        for (PetscInt c = 0; c < C; c++) {
          y[c]      = x[first + c];
          argmax[c] = first + c;
        }
        for (PetscInt kh = h0; kh < h1; kh++) {
          for (PetscInt kw = (kh == h0 ? w0 + 1 : w0); kw < w1; kw++) {
            const PetscInt                    off = ((s * H + ih + kh) * W + iw + kw) * C;
            const PetscScalar *PETSC_RESTRICT xt  = x + off;
            PetscScalar *PETSC_RESTRICT       yt  = y;
            PetscInt *PETSC_RESTRICT          at  = argmax;

            for (PetscInt c = 0; c < C; c++) { /* branch-free with a bit mask, so that it vectorizes */
              const PetscScalar v = xt[c], cur = yt[c];
              const PetscInt    more = -(PetscInt)(v > cur);

              yt[c] = v > cur ? v : cur;
              at[c] = (at[c] & ~more) | ((off + c) & more);
            }
          }
        }
      }
    }
  }
  PetscCall(PetscLogFlops(1.0 * n * layer->outsize * win->k[0] * win->k[1]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  for (PetscInt j = 0; j < N; j++) dx[pool->argmax[j]] += dy[j];
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_MaxPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt N    = n * layer->outsize;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
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
  layer->ops->backward = LayerBackward_MaxPool;
  layer->ops->jvp      = LayerJVP_MaxPool;
  layer->sozero        = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset    = LayerReset_MaxPool;
  layer->ops->destroy  = LayerDestroy_MaxPool;
  PetscFunctionReturn(0);
}
