/*
  avgpool's kernel and its forward, backward and jvp on one element type, included once per type by avgpool.c:
    AVGPOOL_T        PetscScalar or float: the values x, y, dx, dy
    AVGPOOL_NAME(f)  f or fSingle
  AvgPoolApply: y = A x (forward), or x += A^T y (the adjoint), on n samples; the sums in AVGPOOL_T, in window order
  (float: the layer's single-precision kernels, a Net at -net_precision single or bfloat16). No parameters: theta and
  dtheta are never read.
*/
static PetscErrorCode AVGPOOL_NAME(AvgPoolApply)(Layer layer, PetscInt n, PetscBool adjoint, const AVGPOOL_T *xin, AVGPOOL_T *xout, const AVGPOOL_T *yin, AVGPOOL_T *yout)
{
  LayerWindowVolume v;

  PetscFunctionBegin;
  PetscCall(LayerPoolCheckRunnable_Private(layer));
  LayerWindowGetVolume(&((Layer_AvgPool *)layer->data)->win, &v);
  {
    const PetscInt  D = v.in[0], H = v.in[1], W = v.in[2], C = layer->in.dim[layer->in.ndim - 1];
    const AVGPOOL_T scale = (AVGPOOL_T)(1.0 / (v.k[0] * v.k[1] * v.k[2]));

    const PetscInt nout = v.out[0] * v.out[1] * v.out[2] * C;

    /* samples on threads: each sample's sums are the same with any number of threads */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (n > 1 && (PetscLogDouble)n * nout > 4096)
    for (PetscInt s = 0; s < n; s++) {
      AVGPOOL_T       *ys = adjoint ? NULL : yout + s * nout;
      const AVGPOOL_T *yi = adjoint ? yin + s * nout : NULL;

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
                  const AVGPOOL_T *xr = xin + (((s * D + id + kd) * H + ih + kh) * W + iw + w0) * C;

                  for (PetscInt i = 0; i < (w1 - w0) * C; i += C)
                    for (PetscInt c = 0; c < C; c++) ys[c] += xr[i + c];
                }
              for (PetscInt c = 0; c < C; c++) ys[c] *= scale;
              ys += C;
            } else {
              for (PetscInt kd = d0; kd < d1; kd++)
                for (PetscInt kh = h0; kh < h1; kh++) {
                  AVGPOOL_T *xr = xout + (((s * D + id + kd) * H + ih + kh) * W + iw + w0) * C;

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

/* y = A x */
static PetscErrorCode AVGPOOL_NAME(LayerForward_AvgPool)(Layer layer, PetscInt n, const PetscScalar *theta, const AVGPOOL_T *x, AVGPOOL_T *y)
{
  PetscFunctionBegin;
  PetscCall(AVGPOOL_NAME(AvgPoolApply)(layer, n, PETSC_FALSE, x, NULL, NULL, y));
  PetscFunctionReturn(0);
}

/* dx = A^T dy: each output's cotangent spread evenly over its window (nothing when dx is not asked for) */
static PetscErrorCode AVGPOOL_NAME(LayerBackward_AvgPool)(Layer layer, PetscInt n, const PetscScalar *theta, const AVGPOOL_T *x, const AVGPOOL_T *y, const AVGPOOL_T *dy, AVGPOOL_T *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(PetscArrayzero(dx, (size_t)n * layer->insize));
  PetscCall(AVGPOOL_NAME(AvgPoolApply)(layer, n, PETSC_TRUE, NULL, dx, dy, NULL));
  PetscFunctionReturn(0);
}

/* dy = A dx (linear: the tangent goes through the forward map) */
static PetscErrorCode AVGPOOL_NAME(LayerJVP_AvgPool)(Layer layer, PetscInt n, const PetscScalar *theta, const AVGPOOL_T *x, const AVGPOOL_T *y, const AVGPOOL_T *dx, const PetscScalar *dtheta, AVGPOOL_T *dy)
{
  PetscFunctionBegin;
  PetscCall(AVGPOOL_NAME(AvgPoolApply)(layer, n, PETSC_FALSE, dx, NULL, NULL, dy));
  PetscFunctionReturn(0);
}
