/*
  upsample's sources and weights (PyTorch's formulas, upsample.h), their tables, and the kernels. Layouts:
    x  [n][D][H][W][C]    y  [n][Do][Ho][Wo][C]     (D = Do = 1 for (h, w, c) samples)
  off0[d][o], off1[d][o]: element offsets, in a sample of x, of the sources of output index o along dim d (0: depth,
  1: height, 2: width); l0, l1 their weights (linear mode). The innermost loop of every kernel runs over the C
  contiguous channels of one output point; the tables take every test out of it.
*/
#include "upsample.h"

/*
  PyTorch's nearest_idx(): floor(o * (float)(1/s)) in single precision, clamped to the last input (upsample.h).
  The special cases s = 1 and s = 2 are PyTorch's own (output size equal to, or twice, the input size).
*/
void UpsampleSourceNearest(PetscInt64 o, PetscInt64 N, PetscInt s, PetscInt64 *i)
{
  PetscInt64 src;

  if (s == 1)
    src = o;
  else if (s == 2)
    src = o >> 1;
  else {
    const float scale = (float)(1.0 / s), product = (float)o * scale;

    src = (PetscInt64)floorf(product);
  }
  *i = PetscMin(src, N - 1);
}

/*
  PyTorch's area_pixel_compute_source_index() (align_corners=False) and compute_source_index_and_lambda() in double:
  the two inputs o reads and their weights; at the last input both sources are that input (the edge clamps).
*/
void UpsampleSourceLinear(PetscInt64 o, PetscInt64 N, PetscInt s, PetscInt64 *i0, PetscInt64 *i1, PetscReal *l0, PetscReal *l1)
{
  const double ratio = 1.0 / s;
  double       r;

  if (s == 1) {
    *i0 = *i1 = o;
    *l0       = 1.0;
    *l1       = 0.0;
    return;
  }
  r   = ratio * ((double)o + 0.5) - 0.5;
  r   = r < 0.0 ? 0.0 : r;
  *i0 = (PetscInt64)r;
  *i1 = *i0 + (*i0 < N - 1 ? 1 : 0);
  *l1 = PetscMin(PetscMax(r - (double)*i0, 0.0), 1.0);
  *l0 = 1.0 - *l1;
}

PetscErrorCode UpsampleResetTables(Layer layer)
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < UPSAMPLE_MAX_DIM; d++) PetscCall(PetscFree4(up->off0[d], up->off1[d], up->l0[d], up->l1[d]));
  PetscCall(PetscFree(up->work));
  PetscFunctionReturn(0);
}

/*
  The tables of a set-up layer (up->nsd, s, in, out, C; up->nblock for a block of a global grid). Output index j of a
  block is the global index olo + j of a grid of N inputs; its sources are global indices, shifted by the box's ilo.
*/
PetscErrorCode UpsampleSetUpTables(Layer layer)
{
  Layer_Upsample *up    = (Layer_Upsample *)layer->data;
  const PetscInt  first = UPSAMPLE_MAX_DIM - up->nsd; /* the first real spatial dim (1 for 2-D samples) */
  PetscInt        stride[UPSAMPLE_MAX_DIM];

  PetscFunctionBegin;
  stride[2] = up->C;
  stride[1] = up->in[2] * up->C;
  stride[0] = up->in[1] * up->in[2] * up->C;
  for (PetscInt d = 0; d < UPSAMPLE_MAX_DIM; d++) {
    const PetscInt   b    = d - first; /* the dim's index among the block's nsd dims */
    const PetscInt64 N    = up->nblock && b >= 0 ? up->N[b] : up->in[d];
    const PetscInt64 olo  = up->nblock && b >= 0 ? up->olo[b] : 0;
    const PetscInt64 ilo  = up->nblock && b >= 0 ? up->ilo[b] : 0;
    const PetscInt   nout = up->out[d];

    PetscCall(PetscMalloc4(nout, &up->off0[d], nout, &up->off1[d], nout, &up->l0[d], nout, &up->l1[d]));
    for (PetscInt j = 0; j < nout; j++) {
      PetscInt64 i0, i1;
      PetscReal  l0 = 1.0, l1 = 0.0;

      if (b < 0)
        i0 = i1 = 0; /* the depth of a 2-D sample */
      else if (up->mode == LAYER_UPSAMPLE_NEAREST) {
        UpsampleSourceNearest(olo + j, N, up->s[d], &i0);
        i1 = i0;
      } else
        UpsampleSourceLinear(olo + j, N, up->s[d], &i0, &i1, &l0, &l1);
      i0 -= ilo;
      i1 -= ilo;
      PetscCheck(i0 >= 0 && i1 < up->in[d], PETSC_COMM_SELF, PETSC_ERR_PLIB, "upsample layer %" PetscInt_FMT ": output %" PetscInt64_FMT " along dim %" PetscInt_FMT " reads input %" PetscInt64_FMT ", outside its box of %" PetscInt_FMT, layer->index,
                 olo + j, b, i0 < 0 ? i0 + ilo : i1 + ilo, up->in[d]);
      up->off0[d][j] = (PetscInt)i0 * stride[d];
      up->off1[d][j] = (PetscInt)i1 * stride[d];
      up->l0[d][j]   = l0;
      up->l1[d][j]   = l1;
    }
  }
  if (up->mode == LAYER_UPSAMPLE_LINEAR) PetscCall(PetscMalloc1(PETNET_THREAD_PARTS * up->in[2] * up->C, &up->work)); /* a row per thread part */
  PetscFunctionReturn(0);
}

/* y = U x, nearest: each output point copies its source point's C channels */
static void UpsampleNearest(const Layer_Upsample *up, PetscInt n, PetscInt insize, const PetscScalar *x, PetscScalar *y)
{
  const PetscInt C = up->C;

  for (PetscInt s = 0; s < n; s++, x += insize)
    for (PetscInt od = 0; od < up->out[0]; od++) {
      const PetscScalar *xd = x + up->off0[0][od];

      for (PetscInt oh = 0; oh < up->out[1]; oh++) {
        const PetscScalar *xh = xd + up->off0[1][oh];

        for (PetscInt ow = 0; ow < up->out[2]; ow++, y += C) {
          const PetscScalar *PETSC_RESTRICT xw = xh + up->off0[2][ow];
          PetscScalar *PETSC_RESTRICT       yw = y;

          for (PetscInt c = 0; c < C; c++) yw[c] = xw[c];
        }
      }
    }
}

/* y = U x, bilinear ((h, w, c) samples), in PyTorch's order: (x00 lw0 + x01 lw1) lh0 + (x10 lw0 + x11 lw1) lh1 */
static void UpsampleBilinear(const Layer_Upsample *up, PetscInt n, PetscInt insize, const PetscScalar *x, PetscScalar *y)
{
  const PetscInt C = up->C;

  for (PetscInt s = 0; s < n; s++, x += insize)
    for (PetscInt oh = 0; oh < up->out[1]; oh++) {
      const PetscScalar *x0 = x + up->off0[1][oh], *x1 = x + up->off1[1][oh];
      const PetscReal    lh0 = up->l0[1][oh], lh1 = up->l1[1][oh];

      for (PetscInt ow = 0; ow < up->out[2]; ow++, y += C) {
        const PetscInt                    w0 = up->off0[2][ow], w1 = up->off1[2][ow];
        const PetscReal                   lw0 = up->l0[2][ow], lw1 = up->l1[2][ow];
        const PetscScalar *PETSC_RESTRICT x00 = x0 + w0, *PETSC_RESTRICT x01 = x0 + w1, *PETSC_RESTRICT x10 = x1 + w0, *PETSC_RESTRICT x11 = x1 + w1;
        PetscScalar *PETSC_RESTRICT yw = y;

        for (PetscInt c = 0; c < C; c++) yw[c] = (x00[c] * lw0 + x01[c] * lw1) * lh0 + (x10[c] * lw0 + x11[c] * lw1) * lh1;
      }
    }
}

/* y = U x, trilinear ((d, h, w, c) samples): (bilinear of plane d0) ld0 + (bilinear of plane d1) ld1, as PyTorch */
static void UpsampleTrilinear(const Layer_Upsample *up, PetscInt n, PetscInt insize, const PetscScalar *x, PetscScalar *y)
{
  const PetscInt C = up->C;

  for (PetscInt s = 0; s < n; s++, x += insize)
    for (PetscInt od = 0; od < up->out[0]; od++) {
      const PetscScalar *xa = x + up->off0[0][od], *xb = x + up->off1[0][od];
      const PetscReal    ld0 = up->l0[0][od], ld1 = up->l1[0][od];

      for (PetscInt oh = 0; oh < up->out[1]; oh++) {
        const PetscInt  h0 = up->off0[1][oh], h1 = up->off1[1][oh];
        const PetscReal lh0 = up->l0[1][oh], lh1 = up->l1[1][oh];

        for (PetscInt ow = 0; ow < up->out[2]; ow++, y += C) {
          const PetscInt                    w0 = up->off0[2][ow], w1 = up->off1[2][ow];
          const PetscReal                   lw0 = up->l0[2][ow], lw1 = up->l1[2][ow];
          const PetscScalar *PETSC_RESTRICT a00 = xa + h0 + w0, *PETSC_RESTRICT a01 = xa + h0 + w1, *PETSC_RESTRICT a10 = xa + h1 + w0, *PETSC_RESTRICT a11 = xa + h1 + w1;
          const PetscScalar *PETSC_RESTRICT b00 = xb + h0 + w0, *PETSC_RESTRICT b01 = xb + h0 + w1, *PETSC_RESTRICT b10 = xb + h1 + w0, *PETSC_RESTRICT b11 = xb + h1 + w1;
          PetscScalar *PETSC_RESTRICT yw = y;

          for (PetscInt c = 0; c < C; c++) yw[c] = ((a00[c] * lw0 + a01[c] * lw1) * lh0 + (a10[c] * lw0 + a11[c] * lw1) * lh1) * ld0 + ((b00[c] * lw0 + b01[c] * lw1) * lh0 + (b10[c] * lw0 + b11[c] * lw1) * lh1) * ld1;
        }
      }
    }
}

/* Samples per thread part: at least about 32K output values each */
static PetscInt UpsampleParts(Layer layer, PetscInt n)
{
  return PetNetThreadParts(n, PetscMax(1, 32768 / PetscMax(1, layer->outsize)));
}

/* y = U x in the layer's mode, parts of the batch on threads (a sample's values do not depend on the parts); flops logged */
static PetscErrorCode UpsampleApply(Layer layer, PetscInt n, const PetscScalar *x, PetscScalar *y)
{
  Layer_Upsample *up     = (Layer_Upsample *)layer->data;
  const PetscInt  nparts = UpsampleParts(layer, n);

  PetscFunctionBegin;
  PetscCheck(!layer->fielddim, PETSC_COMM_SELF, PETSC_ERR_ORDER, "upsample layer %" PetscInt_FMT " is in point form (one point of a %" PetscInt_FMT "-D field): it has no kernels; run a copy of it in batch form on a box of the field (setgridblock)",
             layer->index, layer->fielddim);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (nparts > 1)
  for (PetscInt i = 0; i < nparts; i++) {
    PetscInt           s0, s1;
    const PetscScalar *xp;
    PetscScalar       *yp;

    PetNetThreadPart(n, nparts, i, &s0, &s1);
    xp = x + (size_t)s0 * layer->insize;
    yp = y + (size_t)s0 * layer->outsize;
    if (up->mode == LAYER_UPSAMPLE_NEAREST)
      UpsampleNearest(up, s1 - s0, layer->insize, xp, yp);
    else if (up->nsd == 2)
      UpsampleBilinear(up, s1 - s0, layer->insize, xp, yp);
    else
      UpsampleTrilinear(up, s1 - s0, layer->insize, xp, yp);
  }
  if (up->mode != LAYER_UPSAMPLE_NEAREST) PetscCall(PetscLogFlops((up->nsd == 2 ? 9.0 : 21.0) * n * layer->outsize));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerForward_Upsample(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(UpsampleApply(layer, n, x, y));
  PetscFunctionReturn(0);
}

/*
  dx = U^T dy: each output point adds dy times each of its weights into the points it reads. Nearest: one source,
  weight 1. Linear: the 2^nsd corners, weight the product of the dims' weights (at a clamped edge two corners are the
  same point and it receives both), summed one output row at a time (the w-level first, as the forward pass nests).
*/
static void UpsampleBackwardPart(const Layer_Upsample *up, PetscInt n, PetscInt insize, const PetscScalar *dy, PetscScalar *dx, PetscScalar *work)
{
  const PetscInt C = up->C, nd = up->nsd == 3 ? 2 : 1, row = up->in[2] * C;

  if (up->mode == LAYER_UPSAMPLE_NEAREST) {
    for (PetscInt s = 0; s < n; s++, dx += insize)
      for (PetscInt od = 0; od < up->out[0]; od++) {
        PetscScalar *xd = dx + up->off0[0][od];

        for (PetscInt oh = 0; oh < up->out[1]; oh++) {
          PetscScalar *xh = xd + up->off0[1][oh];

          for (PetscInt ow = 0; ow < up->out[2]; ow++, dy += C) {
            PetscScalar *PETSC_RESTRICT       xw = xh + up->off0[2][ow];
            const PetscScalar *PETSC_RESTRICT g  = dy;

            for (PetscInt c = 0; c < C; c++) xw[c] += g[c];
          }
        }
      }
    return;
  }
  /* linear, row by row of the output: the row's w-level scatter into one input row (work, in cache), then that row
     added into the 2 (2-D) or 4 (3-D) input rows the output row reads, weighted by the product of their weights */
  for (PetscInt s = 0; s < n; s++, dx += insize)
    for (PetscInt od = 0; od < up->out[0]; od++) {
      const PetscInt  doff[2] = {up->off0[0][od], up->off1[0][od]};
      const PetscReal ld[2]   = {up->l0[0][od], up->l1[0][od]};

      for (PetscInt oh = 0; oh < up->out[1]; oh++) {
        const PetscInt  hoff[2] = {up->off0[1][oh], up->off1[1][oh]};
        const PetscReal lh[2]   = {up->l0[1][oh], up->l1[1][oh]};

        for (PetscInt j = 0; j < row; j++) work[j] = 0.0;
        for (PetscInt ow = 0; ow < up->out[2]; ow++, dy += C) {
          const PetscReal             lw0 = up->l0[2][ow], lw1 = up->l1[2][ow];
          PetscScalar *PETSC_RESTRICT t0 = work + up->off0[2][ow], *PETSC_RESTRICT t1 = work + up->off1[2][ow];
          const PetscScalar *PETSC_RESTRICT g = dy;

          for (PetscInt c = 0; c < C; c++) t0[c] += lw0 * g[c];
          for (PetscInt c = 0; c < C; c++) t1[c] += lw1 * g[c];
        }
        for (PetscInt a = 0; a < nd; a++)
          for (PetscInt b = 0; b < 2; b++) {
            const PetscReal                   wgt = ld[a] * lh[b];
            PetscScalar *PETSC_RESTRICT       q   = dx + doff[a] + hoff[b];
            const PetscScalar *PETSC_RESTRICT t   = work;

            for (PetscInt j = 0; j < row; j++) q[j] += wgt * t[j];
          }
      }
    }
}

/*
  dx = U^T dy: each output point adds dy times each of its weights into the points it reads. Nearest: one source,
  weight 1. Linear: the 2^nsd corners, weight the product of the dims' weights (at a clamped edge two corners are the
  same point and it receives both), summed one output row at a time (the w-level first, as the forward pass nests).
  Parts of the batch on threads, each with its own row of work.
*/
PetscErrorCode LayerBackward_Upsample(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Upsample *up     = (Layer_Upsample *)layer->data;
  const PetscInt  insize = layer->insize, nd = up->nsd == 3 ? 2 : 1, row = up->in[2] * up->C, nparts = UpsampleParts(layer, n);

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(!layer->fielddim, PETSC_COMM_SELF, PETSC_ERR_ORDER, "upsample layer %" PetscInt_FMT " is in point form (one point of a %" PetscInt_FMT "-D field): it has no kernels; run a copy of it in batch form on a box of the field (setgridblock)",
             layer->index, layer->fielddim);
  PetscCall(PetscArrayzero(dx, (size_t)n * insize));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (nparts > 1)
  for (PetscInt i = 0; i < nparts; i++) {
    PetscInt s0, s1;

    PetNetThreadPart(n, nparts, i, &s0, &s1);
    UpsampleBackwardPart(up, s1 - s0, insize, dy + (size_t)s0 * layer->outsize, dx + (size_t)s0 * insize, up->work ? up->work + i * row : NULL);
  }
  if (up->mode == LAYER_UPSAMPLE_NEAREST)
    PetscCall(PetscLogFlops(1.0 * n * layer->outsize));
  else
    PetscCall(PetscLogFlops(4.0 * n * layer->outsize + 4.0 * nd * n * up->out[0] * up->out[1] * row));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerJVP_Upsample(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (dx)
    PetscCall(UpsampleApply(layer, n, dx, dy));
  else
    PetscCall(PetscArrayzero(dy, (size_t)n * layer->outsize));
  PetscFunctionReturn(0);
}
