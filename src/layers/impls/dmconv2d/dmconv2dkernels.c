/* dmconv2d kernels on one block of output points (see dmconv2d.h): im2col over chunks of rows with one GEMM per chunk,
   or one GEMM per kernel tap and row (the tap algorithm, below). */
#include "dmconv2d.h"

/* Offset in the input array of the point (si, sj), or -1 if the tap falls outside a non-periodic grid (reads zero) */
static inline PetscInt DMConv2dSource(const DMConv2dBlock *bk, PetscInt si, PetscInt sj, PetscInt cin)
{
  if (!bk->periodic[0] && (si < 0 || si >= bk->M)) return -1;
  if (!bk->periodic[1] && (sj < 0 || sj >= bk->N)) return -1;
  return ((sj - bk->gys) * bk->gxm + (si - bk->gxs)) * cin;
}

/* col[p][KH][KW][Cin] = the receptive fields of the points of rows [r0, r1) of the block */
static PetscErrorCode DMConv2dIm2Col(Layer_DMConv2d *dc, const DMConv2dBlock *bk, PetscInt r0, PetscInt r1, const PetscScalar *x, PetscScalar *col)
{
  const PetscInt cin = dc->cin, kh = dc->k[0], kw = dc->k[1], ry = kh / 2, rx = kw / 2;

  PetscFunctionBegin;
  for (PetscInt r = r0; r < r1; r++)
    for (PetscInt q = 0; q < bk->xm; q++) {
      const PetscInt i = bk->xs + q, j = bk->ys + r;

      for (PetscInt a = 0; a < kh; a++, col += kw * cin) {
        const PetscInt first = DMConv2dSource(bk, i - rx, j + a - ry, cin), last = DMConv2dSource(bk, i + rx, j + a - ry, cin);

        if (first >= 0 && last >= 0)
          PetscCall(PetscArraycpy(col, x + first, kw * cin)); /* the kernel row is one contiguous run */
        else
          for (PetscInt b = 0; b < kw; b++) {
            const PetscInt src = DMConv2dSource(bk, i + b - rx, j + a - ry, cin);

            if (src >= 0)
              PetscCall(PetscArraycpy(col + b * cin, x + src, cin));
            else
              PetscCall(PetscArrayzero(col + b * cin, cin));
          }
      }
    }
  PetscFunctionReturn(0);
}

/* dx += col2im(col): the transpose of DMConv2dIm2Col (taps outside a non-periodic grid are dropped) */
static PetscErrorCode DMConv2dCol2Im(Layer_DMConv2d *dc, const DMConv2dBlock *bk, PetscInt r0, PetscInt r1, const PetscScalar *col, PetscScalar *dx)
{
  const PetscInt cin = dc->cin, kh = dc->k[0], kw = dc->k[1], ry = kh / 2, rx = kw / 2;

  PetscFunctionBegin;
  for (PetscInt r = r0; r < r1; r++)
    for (PetscInt q = 0; q < bk->xm; q++) {
      const PetscInt i = bk->xs + q, j = bk->ys + r;

      for (PetscInt a = 0; a < kh; a++)
        for (PetscInt b = 0; b < kw; b++, col += cin) {
          const PetscInt src = DMConv2dSource(bk, i + b - rx, j + a - ry, cin);

          if (src >= 0)
            for (PetscInt c = 0; c < cin; c++) dx[src + c] += col[c];
        }
    }
  PetscFunctionReturn(0);
}

/* y[p][o] += b[o] for the np points of a chunk */
static PetscErrorCode DMConv2dAddBias(PetscInt np, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt p = 0; p < np; p++)
    for (PetscInt o = 0; o < nout; o++) y[p * nout + o] += b[o];
  PetscFunctionReturn(0);
}

/* y = W * x + b on the block; x is the input array around it */
PetscErrorCode DMConv2dForwardIm2col_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout;
  const PetscScalar *W = theta, one = 1.0, zero = 0.0;
  PetscBLASInt       bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += dc->chunkrows) {
    const PetscInt r1 = PetscMin(bk->ym, r0 + dc->chunkrows), np = (r1 - r0) * bk->xm;
    PetscScalar   *yc = y + r0 * bk->xm * nout;

    PetscCall(PetscBLASIntCast(np, &bnp));
    PetscCall(DMConv2dIm2Col(dc, bk, r0, r1, x, dc->col));
    PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, dc->col, &bK, &zero, yc, &bout));
    if (dc->bias) PetscCall(DMConv2dAddBias(np, nout, W + K * nout, yc));
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

/* dx (the array around the block) += J_x^T dy if dx; dtheta += J_theta^T dy if dtheta (then x is needed) */
PetscErrorCode DMConv2dBackwardIm2col_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout;
  const PetscScalar *W = theta, one = 1.0, zero = 0.0;
  PetscBLASInt       bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += dc->chunkrows) {
    const PetscInt     r1 = PetscMin(bk->ym, r0 + dc->chunkrows), np = (r1 - r0) * bk->xm;
    const PetscScalar *dyc = dy + r0 * bk->xm * nout;

    PetscCall(PetscBLASIntCast(np, &bnp));
    if (dtheta) {
      PetscCall(DMConv2dIm2Col(dc, bk, r0, r1, x, dc->col));
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &bK, &bout, &bnp, &one, dc->col, &bK, dyc, &bout, &one, dtheta, &bK));
      if (dc->bias)
        for (PetscInt p = 0; p < np; p++)
          for (PetscInt o = 0; o < nout; o++) dtheta[K * nout + o] += dyc[p * nout + o];
    }
    if (dx) {
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bK, &bnp, &bout, &one, W, &bK, dyc, &bout, &zero, dc->col, &bK));
      PetscCall(DMConv2dCol2Im(dc, bk, r0, r1, dc->col, dx));
    }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta on the block (dx: the array around the block; either may be NULL; x needed with dtheta) */
PetscErrorCode DMConv2dJVPIm2col_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout;
  const PetscScalar *W = theta, one = 1.0, zero = 0.0;
  PetscBLASInt       bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += dc->chunkrows) {
    const PetscInt r1 = PetscMin(bk->ym, r0 + dc->chunkrows), np = (r1 - r0) * bk->xm;
    PetscScalar   *dyc  = dy + r0 * bk->xm * nout;
    PetscScalar    beta = zero;

    PetscCall(PetscBLASIntCast(np, &bnp));
    if (dx) {
      PetscCall(DMConv2dIm2Col(dc, bk, r0, r1, dx, dc->col));
      PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, dc->col, &bK, &zero, dyc, &bout));
      beta = one;
    }
    if (dtheta) {
      PetscCall(DMConv2dIm2Col(dc, bk, r0, r1, x, dc->col));
      PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, dtheta, &bK, dc->col, &bK, &beta, dyc, &bout));
      if (dc->bias) PetscCall(DMConv2dAddBias(np, nout, dtheta + K * nout, dyc));
    }
    if (!dx && !dtheta) PetscCall(PetscArrayzero(dyc, np * nout));
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/*
  The tap algorithm: no im2col. For each row of the block and each kernel tap (a, b), the output points the tap reaches
  inside the grid read a contiguous run of source points, so the tap is one GEMM with the tap's (Cin x Cout) block of
  the weights (rows (a KW + b) Cin .. of Wc, leading dimension K):
    forward   y_row[q0:q1]  += W_ab^T x_src          dgemm('T','N', Cout, nq, Cin)
    backward  dW_ab         += x_src dy_row^T        dgemm('N','T', Cin, Cout, nq)
              dx_src        += W_ab dy_row           dgemm('N','N', Cin, nq, Cout)
  Taps outside a non-periodic grid are skipped (zero padding) by narrowing [q0, q1) or the row.
*/

/* The points [q0, q1) of block row r that tap (a, b) reaches in the grid, and the offset of the first one's source */
static inline PetscBool DMConv2dTapRange(Layer_DMConv2d *dc, const DMConv2dBlock *bk, PetscInt a, PetscInt b, PetscInt r, PetscInt *q0, PetscInt *q1, PetscInt *src)
{
  const PetscInt rx = dc->k[1] / 2, ry = dc->k[0] / 2, sj = bk->ys + r + a - ry;

  if (!bk->periodic[1] && (sj < 0 || sj >= bk->N)) return PETSC_FALSE;
  *q0 = 0;
  *q1 = bk->xm;
  if (!bk->periodic[0]) {
    *q0 = PetscMax(0, rx - b - bk->xs);
    *q1 = PetscMin(bk->xm, bk->M + rx - b - bk->xs);
  }
  if (*q1 <= *q0) return PETSC_FALSE;
  *src = ((sj - bk->gys) * bk->gxm + (bk->xs + *q0 + b - rx - bk->gxs)) * dc->cin;
  return PETSC_TRUE;
}

/* wt[tap][Cout][Cin] (column-major Cout x Cin per tap) = the weights W [Cout][tap Cin], so that the forward GEMMs of the
   taps are dgemm('N','N'): OpenBLAS runs its transposed-A case at half the speed for these short Cout x Cin blocks */
static PetscErrorCode DMConv2dTransposeTaps(Layer_DMConv2d *dc, const PetscScalar *W, PetscScalar *wt)
{
  const PetscInt K = dc->ktot, nout = dc->nout, cin = dc->cin, ntaps = dc->k[0] * dc->k[1];

  PetscFunctionBegin;
  for (PetscInt t = 0; t < ntaps; t++)
    for (PetscInt c = 0; c < cin; c++)
      for (PetscInt o = 0; o < nout; o++) wt[(t * cin + c) * nout + o] = W[o * K + t * cin + c];
  PetscFunctionReturn(0);
}

PetscErrorCode DMConv2dForwardTaps_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout, cin = dc->cin;
  const PetscScalar *W = theta, one = 1.0;
  PetscBLASInt       bK, bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  PetscCall(DMConv2dTransposeTaps(dc, W, dc->wt));
  for (PetscInt r = 0; r < bk->ym; r++) {
    PetscScalar *yr = y + r * bk->xm * nout;

    if (dc->bias)
      for (PetscInt q = 0; q < bk->xm; q++) PetscCall(PetscArraycpy(yr + q * nout, W + K * nout, nout));
    else
      PetscCall(PetscArrayzero(yr, bk->xm * nout));
    for (PetscInt a = 0; a < dc->k[0]; a++)
      for (PetscInt b = 0; b < dc->k[1]; b++) {
        PetscInt q0, q1, src;

        if (!DMConv2dTapRange(dc, bk, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, dc->wt + (a * dc->k[1] + b) * cin * nout, &bout, x + src, &bcin, &one, yr + q0 * nout, &bout));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

PetscErrorCode DMConv2dBackwardTaps_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout, cin = dc->cin;
  const PetscScalar *W = theta, one = 1.0;
  PetscBLASInt       bK, bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  for (PetscInt r = 0; r < bk->ym; r++) {
    const PetscScalar *dyr = dy + r * bk->xm * nout;

    if (dtheta && dc->bias)
      for (PetscInt q = 0; q < bk->xm; q++)
        for (PetscInt o = 0; o < nout; o++) dtheta[K * nout + o] += dyr[q * nout + o];
    for (PetscInt a = 0; a < dc->k[0]; a++)
      for (PetscInt b = 0; b < dc->k[1]; b++) {
        const PetscInt tap = (a * dc->k[1] + b) * cin;
        PetscInt       q0, q1, src;

        if (!DMConv2dTapRange(dc, bk, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        if (dtheta) PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &bcin, &bout, &bnq, &one, x + src, &bcin, dyr + q0 * nout, &bout, &one, dtheta + tap, &bK));
        if (dx) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bcin, &bnq, &bout, &one, W + tap, &bK, dyr + q0 * nout, &bout, &one, dx + src, &bcin));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

PetscErrorCode DMConv2dJVPTaps_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_DMConv2d    *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt     K = dc->ktot, nout = dc->nout, cin = dc->cin;
  const PetscScalar *W = theta, one = 1.0;
  PetscBLASInt       bK, bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  if (dx) PetscCall(DMConv2dTransposeTaps(dc, W, dc->wt));
  if (dtheta) PetscCall(DMConv2dTransposeTaps(dc, dtheta, dc->wt + K * nout));
  for (PetscInt r = 0; r < bk->ym; r++) {
    PetscScalar *dyr = dy + r * bk->xm * nout;

    if (dtheta && dc->bias)
      for (PetscInt q = 0; q < bk->xm; q++) PetscCall(PetscArraycpy(dyr + q * nout, dtheta + K * nout, nout));
    else
      PetscCall(PetscArrayzero(dyr, bk->xm * nout));
    for (PetscInt a = 0; a < dc->k[0]; a++)
      for (PetscInt b = 0; b < dc->k[1]; b++) {
        const PetscInt tap = (a * dc->k[1] + b) * cin * nout;
        PetscInt       q0, q1, src;

        if (!DMConv2dTapRange(dc, bk, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        if (dx) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, dc->wt + tap, &bout, dx + src, &bcin, &one, dyr + q0 * nout, &bout));
        if (dtheta) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, dc->wt + K * nout + tap, &bout, x + src, &bcin, &one, dyr + q0 * nout, &bout));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}
