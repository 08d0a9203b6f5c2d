/*
  maxpool's kernels and its passes (at the end) on one element type, included once per type by maxpool.c:
    MAXPOOL_T        PetscScalar, float or uint16_t (bfloat16)
    MAXPOOL_NAME(f)  f, fSingle or fBF16
    MAXPOOL_GT(a, b) a > b on the values (bfloat16: on the widened values, the same comparison as on floats)
    MAXPOOL_BF16     defined for bfloat16: the backward pass is maxpool.c's (its sums and masks in float), the
                     tiled backward kernel writes g as it is (its caller made it 0 + g, rounded)
  Each works on one sample (the caller's loop over samples runs them on the threads); argmax holds, per output, the
  offset of its maximum within the sample's x (int32_t, maxpool.c). The same comparisons for both types and both
  loop nests, in window order with a strict >, so on the same values (a float is exactly a double) every kernel picks
  the same argmax, ties included (the first maximum in window order), and the same output (a NaN first tap stays the
  maximum, a later NaN never wins).

  General (any window: overlapping, padded, dilated): the taps in window order, each tap a pass over the channels
  updating the output's maximum and argmax in memory; tap t along a dim reads the input at o step - pad + t dilation.
  Tiled (Layer_MaxPool.tiled, set at set-up: step = kernel and no padding, so windows do not overlap and lie inside
  the input):
  forward keeps a window's running maximum in registers, the taps inside the loop over the channels (vectorized over
  them, the tap loop unrolled for the 2x1, 2x2, 2x2x2 and 3x3 windows); backward writes every dx entry once,
  dx = 0 + g at the argmax, 0 elsewhere (the bits of the general path's dx = 0; dx[argmax] += g), then zeroes the
  rows, columns and planes no window covers.
*/
static void MAXPOOL_NAME(MaxPoolForwardGeneral)(const LayerWindowVolume *vol, PetscInt C, const MAXPOOL_T *x, MAXPOOL_T *y, int32_t *argmax)
{
  const LayerWindowVolume v = *vol;
  const PetscInt          H = v.in[1], W = v.in[2], DD = v.dilation[0], DH = v.dilation[1], DW = v.dilation[2];
  MAXPOOL_T              *ys = y;
  int32_t                *as = argmax;

  for (PetscInt od = 0; od < v.out[0]; od++) {
    const PetscInt d0 = v.t0[0][od], d1 = v.t1[0][od], id = od * v.step[0] - v.pad[0];

    for (PetscInt oh = 0; oh < v.out[1]; oh++) {
      const PetscInt h0 = v.t0[1][oh], h1 = v.t1[1][oh], ih = oh * v.step[1] - v.pad[1];

      for (PetscInt ow = 0; ow < v.out[2]; ow++, ys += C, as += C) {
        const PetscInt w0 = v.t0[2][ow], w1 = v.t1[2][ow], iw = ow * v.step[2] - v.pad[2];
        const int32_t  first = (int32_t)((((id + d0 * DD) * H + ih + h0 * DH) * W + iw + w0 * DW) * C);

        /* no window is all padding (padding <= kernel/2), so the first valid tap starts the maximum */
        for (PetscInt c = 0; c < C; c++) {
          ys[c] = x[first + c];
          as[c] = first + (int32_t)c;
        }
        for (PetscInt kd = d0; kd < d1; kd++) {
          for (PetscInt kh = h0; kh < h1; kh++) {
            for (PetscInt kw = (kd == d0 && kh == h0 ? w0 + 1 : w0); kw < w1; kw++) {
              const int32_t                   off = (int32_t)((((id + kd * DD) * H + ih + kh * DH) * W + iw + kw * DW) * C);
              const MAXPOOL_T *PETSC_RESTRICT xt  = x + off;
              MAXPOOL_T *PETSC_RESTRICT       yt  = ys;
              int32_t *PETSC_RESTRICT         at  = as;

              for (PetscInt c = 0; c < C; c++) { /* branch-free with a bit mask, so that it vectorizes */
                const MAXPOOL_T val = xt[c], cur = yt[c];
                const int32_t   more = -(int32_t)MAXPOOL_GT(val, cur);

                yt[c] = MAXPOOL_GT(val, cur) ? val : cur;
                at[c] = (at[c] & ~more) | ((off + (int32_t)c) & more);
              }
            }
          }
        }
      }
    }
  }
}

/*
  One tiled window on the channels: y[c] = max over the K taps x[tap[t] + c] (tap[] the taps' offsets from the
  window's first point, in window order), argmax[c] = base + tap[t] + c for the first maximum; inlined with a
  constant K the tap loop unrolls and the channel loop vectorizes.
*/
static MAXPOOL_INLINE void MAXPOOL_NAME(MaxPoolWindowTiled)(PetscInt K, const int32_t *tap, PetscInt C, int32_t base, const MAXPOOL_T *PETSC_RESTRICT xw, MAXPOOL_T *PETSC_RESTRICT y, int32_t *PETSC_RESTRICT argmax)
{
  for (PetscInt c = 0; c < C; c++) {
    MAXPOOL_T m = xw[c];
    int32_t   a = base + (int32_t)c;

    for (PetscInt t = 1; t < K; t++) {
      const MAXPOOL_T val = xw[tap[t] + c];

      a = MAXPOOL_GT(val, m) ? base + tap[t] + (int32_t)c : a;
      m = MAXPOOL_GT(val, m) ? val : m;
    }
    y[c]      = m;
    argmax[c] = a;
  }
}

static MAXPOOL_TARGET_CLONES void MAXPOOL_NAME(MaxPoolForwardTiled)(const LayerWindowVolume *vol, const int32_t *tap, PetscInt C, const MAXPOOL_T *x, MAXPOOL_T *y, int32_t *argmax)
{
  const LayerWindowVolume v = *vol;
  const PetscInt          H = v.in[1], W = v.in[2], K = v.k[0] * v.k[1] * v.k[2];

  for (PetscInt od = 0; od < v.out[0]; od++) {
    for (PetscInt oh = 0; oh < v.out[1]; oh++) {
      for (PetscInt ow = 0; ow < v.out[2]; ow++, y += C, argmax += C) {
        const int32_t base = (int32_t)(((od * v.k[0] * H + oh * v.k[1]) * W + ow * v.k[2]) * C);

        if (K == 2)
          MAXPOOL_NAME(MaxPoolWindowTiled)(2, tap, C, base, x + base, y, argmax);
        else if (K == 4)
          MAXPOOL_NAME(MaxPoolWindowTiled)(4, tap, C, base, x + base, y, argmax);
        else if (K == 8)
          MAXPOOL_NAME(MaxPoolWindowTiled)(8, tap, C, base, x + base, y, argmax);
        else if (K == 9)
          MAXPOOL_NAME(MaxPoolWindowTiled)(9, tap, C, base, x + base, y, argmax);
        else
          MAXPOOL_NAME(MaxPoolWindowTiled)(K, tap, C, base, x + base, y, argmax);
      }
    }
  }
}

/* One tiled window of dx: dx[tap[t] + c] = (0 + g[c]) at the argmax, 0 elsewhere */
static MAXPOOL_INLINE void MAXPOOL_NAME(MaxPoolWindowTiledBackward)(PetscInt K, const int32_t *tap, PetscInt C, int32_t base, const MAXPOOL_T *PETSC_RESTRICT g, const int32_t *PETSC_RESTRICT argmax, MAXPOOL_T *PETSC_RESTRICT dxw)
{
  for (PetscInt c = 0; c < C; c++) {
#if defined(MAXPOOL_BF16)
    const MAXPOOL_T gc = g[c]; /* the caller's round(0 + g) */
#else
    const MAXPOOL_T gc = (MAXPOOL_T)0 + g[c]; /* as the general path's 0 + g: -0 becomes +0 */
#endif
    const int32_t t0 = argmax[c] - base - (int32_t)c;

    for (PetscInt t = 0; t < K; t++) dxw[tap[t] + c] = t0 == tap[t] ? gc : (MAXPOOL_T)0;
  }
}

/* dx of one sample from the (masked) output cotangent g, tiled windows: each entry written once */
static MAXPOOL_TARGET_CLONES void MAXPOOL_NAME(MaxPoolBackwardTiled)(const LayerWindowVolume *vol, const int32_t *tap, PetscInt C, const MAXPOOL_T *g, const int32_t *argmax, MAXPOOL_T *dx)
{
  const LayerWindowVolume v = *vol;
  const PetscInt          D = v.in[0], H = v.in[1], W = v.in[2], K = v.k[0] * v.k[1] * v.k[2];
  const PetscInt          Dc = v.out[0] * v.k[0], Hc = v.out[1] * v.k[1], Wc = v.out[2] * v.k[2]; /* the covered extent */

  for (PetscInt od = 0; od < v.out[0]; od++) {
    for (PetscInt oh = 0; oh < v.out[1]; oh++) {
      for (PetscInt ow = 0; ow < v.out[2]; ow++, g += C, argmax += C) {
        const int32_t base = (int32_t)(((od * v.k[0] * H + oh * v.k[1]) * W + ow * v.k[2]) * C);

        if (K == 2)
          MAXPOOL_NAME(MaxPoolWindowTiledBackward)(2, tap, C, base, g, argmax, dx + base);
        else if (K == 4)
          MAXPOOL_NAME(MaxPoolWindowTiledBackward)(4, tap, C, base, g, argmax, dx + base);
        else if (K == 8)
          MAXPOOL_NAME(MaxPoolWindowTiledBackward)(8, tap, C, base, g, argmax, dx + base);
        else if (K == 9)
          MAXPOOL_NAME(MaxPoolWindowTiledBackward)(9, tap, C, base, g, argmax, dx + base);
        else
          MAXPOOL_NAME(MaxPoolWindowTiledBackward)(K, tap, C, base, g, argmax, dx + base);
      }
    }
  }
  /* what no window covers: planes d >= Dc, rows h >= Hc, columns w >= Wc */
  for (PetscInt d = 0; d < D; d++) {
    for (PetscInt h = 0; h < H; h++) {
      MAXPOOL_T     *row = dx + ((d * H + h) * W) * C;
      const PetscInt w0  = d < Dc && h < Hc ? Wc : 0;

      for (PetscInt i = w0 * C; i < W * C; i++) row[i] = 0;
    }
  }
}

/*
  The layer's passes on MAXPOOL_T values (the ops forward, backward, backwardmask, jvp and their *single entries): the
  same kernels, so the same argmax on the same values; backward adds dy in MAXPOOL_T in the same order and applies a
  fused activation's derivative at the outputs (MAXPOOL_NAME(LayerMask): activatemask or activatemasksingle).
*/
static PetscErrorCode MAXPOOL_NAME(MaxPoolForward)(Layer layer, PetscInt n, const PetscScalar *theta, const MAXPOOL_T *x, MAXPOOL_T *y)
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
      MAXPOOL_NAME(MaxPoolForwardTiled)(&v, pool->tap, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
    else
      MAXPOOL_NAME(MaxPoolForwardGeneral)(&v, C, x + (size_t)s * in, y + (size_t)s * out, pool->argmax + (size_t)s * out);
  }
  PetscCall(PetscLogFlops(1.0 * n * out * v.k[0] * v.k[1] * v.k[2]));
  PetscFunctionReturn(0);
}

#if !defined(MAXPOOL_BF16)
/* dx = J^T (act'(y) dy), act the activation before it passed by the caller (or NULL) */
static PetscErrorCode MAXPOOL_NAME(MaxPoolBackwardMask)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const MAXPOOL_T *x, const MAXPOOL_T *y, const MAXPOOL_T *dy, MAXPOOL_T *dx, PetscScalar *dtheta)
{
  Layer_MaxPool    *pool = (Layer_MaxPool *)layer->data;
  const PetscInt    in = layer->insize, out = layer->outsize, N = n * out;
  PetscErrorCode    err = 0;
  LayerWindowVolume v;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool backward on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  PetscCall(MaxPoolArgmaxFromWorkspace(layer)); /* after a forward on oneDNN */
  LayerWindowGetVolume(&pool->win, &v);
  if (act) PetscCall(MaxPoolMaskScratch(pool, n, y, (size_t)out * sizeof(MAXPOOL_T)));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t   *am  = pool->argmax + (size_t)s * out;
    const MAXPOOL_T *g   = dy + (size_t)s * out;
    MAXPOOL_T       *dxs = dx + (size_t)s * in;

    if (act) {
      /* the activation's derivative at a window's maximum x[argmax[j]] is its derivative at the window's output
         y[j], the same value: mask the sample's dy (a quarter of dx's entries for 2x2 windows, in cache) and scatter
         it, instead of masking all of dx; the same values (up to the sign of a zero) */
      MAXPOOL_T *gm = (MAXPOOL_T *)pool->gmask + (size_t)PetNetThreadId() * out;

      for (PetscInt j = 0; j < out; j++) gm[j] = g[j];
      PetNetThreadsSetError(&err, MAXPOOL_NAME(LayerMask)(act, out, y + (size_t)s * out, gm));
      g = gm;
    }
    if (pool->tiled)
      MAXPOOL_NAME(MaxPoolBackwardTiled)(&v, pool->tap, layer->in.dim[layer->in.ndim - 1], g, am, dxs);
    else {
      for (PetscInt i = 0; i < in; i++) dxs[i] = 0;
      for (PetscInt j = 0; j < out; j++) dxs[am[j]] += g[j];
    }
  }
  PetNetThreadsCheck(err, "maxpool backward");
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode MAXPOOL_NAME(MaxPoolBackward)(Layer layer, PetscInt n, const PetscScalar *theta, const MAXPOOL_T *x, const MAXPOOL_T *y, const MAXPOOL_T *dy, MAXPOOL_T *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(MAXPOOL_NAME(MaxPoolBackwardMask)(layer, NULL, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

#endif

/* dy[j] = dx[argmax[j]]; zero when dx is NULL (zero) */
static PetscErrorCode MAXPOOL_NAME(MaxPoolJVP)(Layer layer, PetscInt n, const PetscScalar *theta, const MAXPOOL_T *x, const MAXPOOL_T *y, const MAXPOOL_T *dx, const PetscScalar *dtheta, MAXPOOL_T *dy)
{
  Layer_MaxPool *pool = (Layer_MaxPool *)layer->data;
  const PetscInt in = layer->insize, out = layer->outsize, N = n * out;

  PetscFunctionBegin;
  PetscCheck(n == pool->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "maxpool jvp on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", n, pool->nwork);
  PetscCall(MaxPoolArgmaxFromWorkspace(layer)); /* after a forward on oneDNN */
  if (!dx) {
    for (PetscInt j = 0; j < N; j++) dy[j] = 0;
    PetscFunctionReturn(0);
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && N > 4096)
  for (PetscInt s = 0; s < n; s++) {
    const int32_t *am = pool->argmax + (size_t)s * out;

    for (PetscInt j = 0; j < out; j++) dy[(size_t)s * out + j] = dx[(size_t)s * in + am[j]];
  }
  PetscFunctionReturn(0);
}
