/*
  avgpool: the mean over each window, per channel (PyTorch's AvgPool2d on (h, w, c) samples, AvgPool3d on (d, h, w, c)
  ones, with count_include_pad = True: padded taps count as zeros, the divisor is always the window's size kd kh kw).
  A linear map A, so jvp = A dx and backward = A^T dy. The window is seen as a volume (a 2-D one has depth 1, window.h).

    x   [n][D][H][W][C]
    y   [n][Do][Ho][Wo][C]     y[s][od][oh][ow][c] = sum over the window of x[s][id][ih][iw][c] / (kd kh kw)
*/
#include "../pool/pool.h"

typedef struct {
  LayerWindow win; /* first: the shared pooling settings cast layer->data to LayerWindow */
} Layer_AvgPool;

/* y = A x (forward = false), or x += A^T y (the adjoint; x zeroed first by the caller) */
static PetscErrorCode AvgPoolApply(Layer layer, PetscInt n, PetscBool adjoint, const PetscScalar *xin, PetscScalar *xout, const PetscScalar *yin, PetscScalar *yout)
{
  LayerWindowVolume v;

  PetscFunctionBegin;
  PetscCall(LayerPoolCheckRunnable_Private(layer));
  LayerWindowGetVolume(&((Layer_AvgPool *)layer->data)->win, &v);
  {
    const PetscInt    D = v.in[0], H = v.in[1], W = v.in[2], C = layer->in.dim[layer->in.ndim - 1];
    const PetscScalar scale = 1.0 / (v.k[0] * v.k[1] * v.k[2]);

    const PetscInt nout = v.out[0] * v.out[1] * v.out[2] * C;

    /* samples on threads: each sample's sums are the same with any number of threads */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (n > 1 && (PetscLogDouble)n * nout > 4096)
    for (PetscInt s = 0; s < n; s++) {
      PetscScalar       *ys = adjoint ? NULL : yout + s * nout;
      const PetscScalar *yi = adjoint ? yin + s * nout : NULL;

      for (PetscInt od = 0; od < v.out[0]; od++) {
        const PetscInt d0 = v.t0[0][od], d1 = v.t1[0][od], id = od * v.step[0] - v.pad[0];

        for (PetscInt oh = 0; oh < v.out[1]; oh++) {
          const PetscInt h0 = v.t0[1][oh], h1 = v.t1[1][oh], ih = oh * v.step[1] - v.pad[1];

          for (PetscInt ow = 0; ow < v.out[2]; ow++) {
            const PetscInt w0 = v.t0[2][ow], w1 = v.t1[2][ow], iw = ow * v.step[2] - v.pad[2];

            if (!adjoint) {
              for (PetscInt c = 0; c < C; c++) ys[c] = 0.0;
              for (PetscInt kd = d0; kd < d1; kd++)
                for (PetscInt kh = h0; kh < h1; kh++) {
                  const PetscScalar *xr = xin + (((s * D + id + kd) * H + ih + kh) * W + iw + w0) * C;

                  for (PetscInt i = 0; i < (w1 - w0) * C; i += C)
                    for (PetscInt c = 0; c < C; c++) ys[c] += xr[i + c];
                }
              for (PetscInt c = 0; c < C; c++) ys[c] *= scale;
              ys += C;
            } else {
              for (PetscInt kd = d0; kd < d1; kd++)
                for (PetscInt kh = h0; kh < h1; kh++) {
                  PetscScalar *xr = xout + (((s * D + id + kd) * H + ih + kh) * W + iw + w0) * C;

                  for (PetscInt i = 0; i < (w1 - w0) * C; i += C)
                    for (PetscInt c = 0; c < C; c++) xr[i + c] += scale * yi[c];
                }
              yi += C;
            }
          }
        }
      }
    }
  }
  PetscCall(PetscLogFlops((adjoint ? 2.0 : 1.0) * n * layer->outsize * (v.k[0] * v.k[1] * v.k[2] + (adjoint ? 0 : 1))));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, PETSC_FALSE, x, NULL, NULL, y));
  PetscFunctionReturn(0);
}

/* dx = A^T dy: each output's cotangent spread evenly over its window */
static PetscErrorCode LayerBackward_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  PetscCall(AvgPoolApply(layer, n, PETSC_TRUE, NULL, dx, dy, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_AvgPool(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(AvgPoolApply(layer, n, PETSC_FALSE, dx, NULL, NULL, dy));
  PetscFunctionReturn(0);
}

/* Grid mode, an overlapped halo exchange: forward keeps nothing of its input */
static PetscErrorCode LayerForget_AvgPool(Layer layer)
{
  PetscFunctionBegin;
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
  layer->ops->forget   = LayerForget_AvgPool;
  layer->sozero        = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->reset    = LayerResetPool_Private;
  layer->ops->destroy  = LayerDestroyPool_Private;
  PetscFunctionReturn(0);
}
