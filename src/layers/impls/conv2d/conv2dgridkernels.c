/*
  conv2d in grid mode: the kernels on this rank's block of output points (layouts in conv2dgrid.h)

    x, dx  [gym][gxm][Cin]      the ghosted input and its derivative (dx accumulated, summed on the owners after)
    y, dy  [ym][xm][Cout]       the block's output
    W      [Cout][KH][KW][Cin]  as column-major Wc = W^T, K x Cout with K = KH KW Cin;  b [Cout]

  im2col, over chunks of rows (col and the chunk's output within -conv2d_max_workspace MB):
    col    [P][KH][KW][Cin]     the receptive fields of the chunk's P points (../conv/convim2col.c; zero off the grid)
    forward   y    = Wc^T col(x) + b                        dgemm('T','N')
    backward  dWc += col(x) dy^T,  db += dy 1               dgemm('N','T')   (the weight and bias parts asked for separately:
                                                                               sobackward takes the first alone, with xdot)
              dcol = Wc dy;  dx += col2im(dcol)             dgemm('N','N'), then the scatter-add
    jvp       dy   = Wc^T col(dx) + dWc^T col(x) + db
  taps: no im2col. For each row of the block and each kernel tap (a, b), the points the tap reaches inside the grid
  read a contiguous run of source points, so the tap is one GEMM with the tap's (Cin x Cout) block W_ab of Wc
  (rows (a KW + b) Cin .., leading dimension K):
    forward   y_row[q0:q1]  += W_ab^T x_src              dgemm('N','N', Cout, nq, Cin) on the transposed copy wt
    backward  dW_ab         += x_src dy_row^T            dgemm('N','T', Cin, Cout, nq)
              dx_src        += W_ab dy_row               dgemm('N','N', Cin, nq, Cout)
    jvp       dy_row[q0:q1]  = W_ab^T dx_src + dW_ab^T x_src (+ db)
  Taps outside a non-periodic grid are skipped (zero padding) by narrowing [q0, q1) or the row. Taps move KH KW times
  less memory than im2col, which matters with few channels; im2col makes fewer, larger GEMMs, which matters on narrow
  blocks.
*/
#include "conv2d.h"

/* y[p][o] += b[o] for the np points of a chunk */
static PetscErrorCode Conv2dGridAddBias(PetscInt np, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt p = 0; p < np; p++)
    for (PetscInt o = 0; o < nout; o++) y[p * nout + o] += b[o];
  PetscFunctionReturn(0);
}

/* y = W * x + b on the block */
PetscErrorCode Conv2dGridForward_Im2col(Layer layer, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows;
  const PetscScalar     *W = theta, one = 1.0, zero = 0.0;
  PetscScalar           *col = conv->grid.col;
  PetscBLASInt           bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += rows) {
    const PetscInt r1 = PetscMin(bk->ym, r0 + rows), np = (r1 - r0) * bk->xm;
    PetscScalar   *yc = y + r0 * bk->xm * nout;

    PetscCall(PetscBLASIntCast(np, &bnp));
    PetscCall(ConvIm2colRows(&conv->base.im2col, r0, r1, x, col));
    PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, col, &bK, &zero, yc, &bout));
    if (conv->base.bias) PetscCall(Conv2dGridAddBias(np, nout, W + K * nout, yc));
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

/* dx (ghosted) += J_x^T dy if dx; dW += J_W^T dy if dW (then x is needed); db += J_b^T dy if db */
PetscErrorCode Conv2dGridBackward_Im2col(Layer layer, const PetscScalar *W, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dW, PetscScalar *db)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows;
  const PetscScalar      one = 1.0, zero = 0.0;
  PetscScalar           *col = conv->grid.col;
  PetscBLASInt           bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += rows) {
    const PetscInt     r1 = PetscMin(bk->ym, r0 + rows), np = (r1 - r0) * bk->xm;
    const PetscScalar *dyc = dy + r0 * bk->xm * nout;

    PetscCall(PetscBLASIntCast(np, &bnp));
    if (dW) {
      PetscCall(ConvIm2colRows(&conv->base.im2col, r0, r1, x, col));
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &bK, &bout, &bnp, &one, col, &bK, dyc, &bout, &one, dW, &bK));
    }
    if (db)
      for (PetscInt p = 0; p < np; p++)
        for (PetscInt o = 0; o < nout; o++) db[o] += dyc[p * nout + o];
    if (dx) {
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bK, &bnp, &bout, &one, W, &bK, dyc, &bout, &zero, col, &bK));
      PetscCall(ConvCol2imRowsAdd(&conv->base.im2col, r0, r1, col, dx));
    }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dW ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta on the block (dx ghosted; either may be NULL; x needed with dtheta) */
PetscErrorCode Conv2dGridJVP_Im2col(Layer layer, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows;
  const PetscScalar     *W = theta, one = 1.0, zero = 0.0;
  PetscScalar           *col = conv->grid.col;
  PetscBLASInt           bK, bout, bnp;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  for (PetscInt r0 = 0; r0 < bk->ym; r0 += rows) {
    const PetscInt r1 = PetscMin(bk->ym, r0 + rows), np = (r1 - r0) * bk->xm;
    PetscScalar   *dyc  = dy + r0 * bk->xm * nout;
    PetscScalar    beta = zero;

    PetscCall(PetscBLASIntCast(np, &bnp));
    if (dx) {
      PetscCall(ConvIm2colRows(&conv->base.im2col, r0, r1, dx, col));
      PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, col, &bK, &zero, dyc, &bout));
      beta = one;
    }
    if (dtheta) {
      PetscCall(ConvIm2colRows(&conv->base.im2col, r0, r1, x, col));
      PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bout, &bnp, &bK, &one, dtheta, &bK, col, &bK, &beta, dyc, &bout));
      if (conv->base.bias) PetscCall(Conv2dGridAddBias(np, nout, dtheta + K * nout, dyc));
    }
    if (!dx && !dtheta) PetscCall(PetscArrayzero(dyc, np * nout));
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------- taps (see the table above) */

/* The points [q0, q1) of block row r that tap (a, b) reaches in the grid, and the offset of the first one's source */
static inline PetscBool Conv2dGridTapRange(const Layer_Conv2d *conv, PetscInt a, PetscInt b, PetscInt r, PetscInt *q0, PetscInt *q1, PetscInt *src)
{
  const Conv2dGridBlock *bk = &conv->grid.block;
  const PetscInt         rx = conv->base.win.k[1] / 2, ry = conv->base.win.k[0] / 2, sj = bk->ys + r + a - ry;

  if (!bk->periodic[1] && (sj < 0 || sj >= bk->N)) return PETSC_FALSE;
  *q0 = 0;
  *q1 = bk->xm;
  if (!bk->periodic[0]) {
    *q0 = PetscMax(0, rx - b - bk->xs);
    *q1 = PetscMin(bk->xm, bk->M + rx - b - bk->xs);
  }
  if (*q1 <= *q0) return PETSC_FALSE;
  *src = ((sj - bk->gys) * bk->gxm + (bk->xs + *q0 + b - rx - bk->gxs)) * conv->base.cin;
  return PETSC_TRUE;
}

/* wt[tap][Cin][Cout] (column-major Cout x Cin per tap) = the weights W [Cout][tap Cin], so that the forward GEMMs of the
   taps are dgemm('N','N'): OpenBLAS runs its transposed-A case at half the speed for these short Cout x Cin blocks */
static PetscErrorCode Conv2dGridTransposeTaps(const Layer_Conv2d *conv, const PetscScalar *W, PetscScalar *wt)
{
  const PetscInt K = conv->base.kg, nout = conv->base.nout, cin = conv->base.cin, ntaps = conv->base.win.k[0] * conv->base.win.k[1];

  PetscFunctionBegin;
  for (PetscInt t = 0; t < ntaps; t++)
    for (PetscInt c = 0; c < cin; c++)
      for (PetscInt o = 0; o < nout; o++) wt[(t * cin + c) * nout + o] = W[o * K + t * cin + c];
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dGridForward_Taps(Layer layer, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, cin = conv->base.cin, kh = conv->base.win.k[0], kw = conv->base.win.k[1];
  const PetscScalar     *W = theta, one = 1.0;
  PetscScalar           *wt = conv->grid.wt;
  PetscBLASInt           bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  PetscCall(Conv2dGridTransposeTaps(conv, W, wt));
  for (PetscInt r = 0; r < bk->ym; r++) {
    PetscScalar *yr = y + r * bk->xm * nout;

    if (conv->base.bias)
      for (PetscInt q = 0; q < bk->xm; q++) PetscCall(PetscArraycpy(yr + q * nout, W + K * nout, nout));
    else
      PetscCall(PetscArrayzero(yr, bk->xm * nout));
    for (PetscInt a = 0; a < kh; a++)
      for (PetscInt b = 0; b < kw; b++) {
        PetscInt q0, q1, src;

        if (!Conv2dGridTapRange(conv, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, wt + (a * kw + b) * cin * nout, &bout, x + src, &bcin, &one, yr + q0 * nout, &bout));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dGridBackward_Taps(Layer layer, const PetscScalar *W, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dW, PetscScalar *db)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, cin = conv->base.cin, kh = conv->base.win.k[0], kw = conv->base.win.k[1];
  const PetscScalar      one = 1.0;
  PetscBLASInt           bK, bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(K, &bK));
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  for (PetscInt r = 0; r < bk->ym; r++) {
    const PetscScalar *dyr = dy + r * bk->xm * nout;

    if (db)
      for (PetscInt q = 0; q < bk->xm; q++)
        for (PetscInt o = 0; o < nout; o++) db[o] += dyr[q * nout + o];
    for (PetscInt a = 0; a < kh; a++)
      for (PetscInt b = 0; b < kw; b++) {
        const PetscInt tap = (a * kw + b) * cin;
        PetscInt       q0, q1, src;

        if (!Conv2dGridTapRange(conv, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        if (dW) PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &bcin, &bout, &bnq, &one, x + src, &bcin, dyr + q0 * nout, &bout, &one, dW + tap, &bK));
        if (dx) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bcin, &bnq, &bout, &one, W + tap, &bK, dyr + q0 * nout, &bout, &one, dx + src, &bcin));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dW ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dGridJVP_Taps(Layer layer, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, cin = conv->base.cin, kh = conv->base.win.k[0], kw = conv->base.win.k[1];
  const PetscScalar     *W = theta, one = 1.0;
  PetscScalar           *wt = conv->grid.wt, *dwt = conv->grid.wt + K * nout;
  PetscBLASInt           bout, bcin, bnq;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(nout, &bout));
  PetscCall(PetscBLASIntCast(cin, &bcin));
  if (dx) PetscCall(Conv2dGridTransposeTaps(conv, W, wt));
  if (dtheta) PetscCall(Conv2dGridTransposeTaps(conv, dtheta, dwt));
  for (PetscInt r = 0; r < bk->ym; r++) {
    PetscScalar *dyr = dy + r * bk->xm * nout;

    if (dtheta && conv->base.bias)
      for (PetscInt q = 0; q < bk->xm; q++) PetscCall(PetscArraycpy(dyr + q * nout, dtheta + K * nout, nout));
    else
      PetscCall(PetscArrayzero(dyr, bk->xm * nout));
    for (PetscInt a = 0; a < kh; a++)
      for (PetscInt b = 0; b < kw; b++) {
        const PetscInt tap = (a * kw + b) * cin * nout;
        PetscInt       q0, q1, src;

        if (!Conv2dGridTapRange(conv, a, b, r, &q0, &q1, &src)) continue;
        PetscCall(PetscBLASIntCast(q1 - q0, &bnq));
        if (dx) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, wt + tap, &bout, dx + src, &bcin, &one, dyr + q0 * nout, &bout));
        if (dtheta) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, dwt + tap, &bout, x + src, &bcin, &one, dyr + q0 * nout, &bout));
      }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}
