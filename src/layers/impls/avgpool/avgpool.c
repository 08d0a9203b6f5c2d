/*
  avgpool: the mean over each kh x kw window, per channel (PyTorch's AvgPool2d with count_include_pad = True:
  padded taps count as zeros, the divisor is always kh kw). A linear map A, so jvp = A dx and backward = A^T dy.

    x   [n][H][W][C]
    y   [n][Ho][Wo][C]     y[s][oh][ow][c] = sum over the window of x[s][ih][iw][c] / (kh kw)
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
} Layer_AvgPool;

/* y = A x */
static PetscErrorCode AvgPoolApply(Layer layer, PetscInt n, const PetscScalar *x, PetscScalar *y)
{
  const LayerWindow *win = &((Layer_AvgPool *)layer->data)->win;
  const PetscInt     H = win->in[0], W = win->in[1], Ho = win->out[0], Wo = win->out[1], C = layer->in.dim[2];
  const PetscInt     sh = win->step[0], sw = win->step[1], ph = win->pad[0], pw = win->pad[1];
  const PetscScalar  scale = 1.0 / (win->k[0] * win->k[1]);

  PetscFunctionBegin;
  for (PetscInt s = 0; s < n; s++) {
    for (PetscInt oh = 0; oh < Ho; oh++) {
      const PetscInt h0 = win->t0[0][oh], h1 = win->t1[0][oh], ih = oh * sh - ph;

      for (PetscInt ow = 0; ow < Wo; ow++, y += C) {
        const PetscInt w0 = win->t0[1][ow], w1 = win->t1[1][ow], iw = ow * sw - pw;

        for (PetscInt c = 0; c < C; c++) y[c] = 0.0;
        for (PetscInt kh = h0; kh < h1; kh++) {
          const PetscScalar *xr = x + ((s * H + ih + kh) * W + iw + w0) * C;

          for (PetscInt i = 0; i < (w1 - w0) * C; i += C)
            for (PetscInt c = 0; c < C; c++) y[c] += xr[i + c];
        }
        for (PetscInt c = 0; c < C; c++) y[c] *= scale;
      }
    }
  }
  PetscCall(PetscLogFlops(1.0 * n * layer->outsize * (win->k[0] * win->k[1] + 1)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, x, y));
  PetscFunctionReturn(0);
}

/* dx = A^T dy: each output's cotangent spread evenly over its window */
static PetscErrorCode LayerBackward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  const LayerWindow *win = &((Layer_AvgPool *)layer->data)->win;
  const PetscInt     H = win->in[0], W = win->in[1], Ho = win->out[0], Wo = win->out[1], C = layer->in.dim[2];
  const PetscInt     sh = win->step[0], sw = win->step[1], ph = win->pad[0], pw = win->pad[1];
  const PetscScalar  scale = 1.0 / (win->k[0] * win->k[1]);

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  for (PetscInt s = 0; s < n; s++) {
    for (PetscInt oh = 0; oh < Ho; oh++) {
      const PetscInt h0 = win->t0[0][oh], h1 = win->t1[0][oh], ih = oh * sh - ph;

      for (PetscInt ow = 0; ow < Wo; ow++, dy += C) {
        const PetscInt w0 = win->t0[1][ow], w1 = win->t1[1][ow], iw = ow * sw - pw;

        for (PetscInt kh = h0; kh < h1; kh++) {
          PetscScalar *xr = dx + ((s * H + ih + kh) * W + iw + w0) * C;

          for (PetscInt i = 0; i < (w1 - w0) * C; i += C)
            for (PetscInt c = 0; c < C; c++) xr[i + c] += scale * dy[c];
        }
      }
    }
  }
  PetscCall(PetscLogFlops(2.0 * n * layer->outsize * win->k[0] * win->k[1]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, dx, dy));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_AvgPool(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreatePool_Private(layer, sizeof(Layer_AvgPool)));
  layer->ops->setup    = LayerSetUpPool_Private;
  layer->ops->forward  = LayerForward_AvgPool;
  layer->ops->backward = LayerBackward_AvgPool;
  layer->ops->jvp      = LayerJVP_AvgPool;
  layer->sozero        = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset    = LayerResetPool_Private;
  layer->ops->destroy  = LayerDestroyPool_Private;
  PetscFunctionReturn(0);
}
