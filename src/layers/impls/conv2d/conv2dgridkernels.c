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

  Threads (include/petnet/private/threadsimpl.h): both algorithms cut the block's rows into grid.nparts parts, fixed at
  set-up from the block's size alone (at least CONV2D_GRID_PART_MIN_POINTS points and KH - 1 rows each), and
  PetNet's threads take whole parts; im2col's chunks run inside a part, each thread in its own col buffer. Forward and
  jvp write disjoint rows of y. Backward: each part accumulates its dW and db in its own buffer (grid.dwpart; with one
  part, dW and db themselves), added to dW and db in part order after the loop. dx (the ghosted array) is shared: the
  rows a part writes, [s0, s1 + KH - 1) in the ghosted array, overlap its neighbours', so the even parts run first
  and the odd parts after them; within each phase no two parts touch the same entry, and every entry receives its
  contributions in an order fixed by the parts. The same bits at any thread count.
*/
#include "conv2d.h"

/* y[p][o] = b[o] for the np points of a run (the start of GEMMs with beta = 1) */
static inline void Conv2dGridFillBias(PetscInt np, PetscInt nout, const PetscScalar *b, PetscScalar *y)
{
  for (PetscInt p = 0; p < np; p++)
    for (PetscInt o = 0; o < nout; o++) y[p * nout + o] = b[o];
}

/* the calling thread's im2col buffer */
static inline PetscScalar *Conv2dGridThreadCol(const Layer_Conv2d *conv)
{
  return conv->grid.col + (size_t)PetNetThreadId() * conv->grid.chunkrows * conv->grid.block.xm * conv->base.kg;
}

/* The BLAS sizes of the kernels, checked once outside the parallel regions: the largest point count of a GEMM (a
   chunk of im2col, a row of taps) then casts safely inside */
static PetscErrorCode Conv2dGridBLASSizes(const Layer_Conv2d *conv, PetscBLASInt *bK, PetscBLASInt *bout, PetscBLASInt *bcin)
{
  const Conv2dGridBlock *bk = &conv->grid.block;
  PetscBLASInt           bmax;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(conv->base.kg, bK));
  PetscCall(PetscBLASIntCast(conv->base.nout, bout));
  PetscCall(PetscBLASIntCast(conv->base.cin, bcin));
  PetscCall(PetscBLASIntCast(PetscMax(1, conv->grid.chunkrows) * bk->xm, &bmax));
  PetscFunctionReturn(0);
}

/*
  The weight and bias accumulators of part p: with one part, dW and db themselves; else the part's zeroed buffers in
  grid.dwpart, added by Conv2dGridAddParts() (a NULL dW or db stays NULL)
*/
static inline void Conv2dGridPartAccumulators(const Layer_Conv2d *conv, PetscInt p, PetscScalar *dW, PetscScalar *db, PetscScalar **accW, PetscScalar **accb)
{
  const PetscInt nw = conv->base.kg * conv->base.nout;
  PetscScalar   *part;

  *accW = dW;
  *accb = db;
  if (conv->grid.nparts == 1) return;
  part = conv->grid.dwpart + (size_t)p * (nw + conv->base.nout);
  if (dW) {
    *accW = part;
    for (PetscInt i = 0; i < nw; i++) part[i] = 0.0;
  }
  if (db) {
    *accb = part + nw;
    for (PetscInt o = 0; o < conv->base.nout; o++) part[nw + o] = 0.0;
  }
}

/* dW += the parts' weight gradients, db += their bias gradients, in part order (after the parallel loop) */
static void Conv2dGridAddParts(const Layer_Conv2d *conv, PetscScalar *dW, PetscScalar *db)
{
  const PetscInt nw = conv->base.kg * conv->base.nout, nout = conv->base.nout;

  if (conv->grid.nparts == 1) return;
  for (PetscInt p = 0; p < conv->grid.nparts; p++) {
    const PetscScalar *part = conv->grid.dwpart + (size_t)p * (nw + nout);

    if (dW)
      for (PetscInt i = 0; i < nw; i++) dW[i] += part[i];
    if (db)
      for (PetscInt o = 0; o < nout; o++) db[o] += part[nw + o];
  }
}

/* y = W * x + b on the block: the parts in parallel, chunks of rows inside a part */
PetscErrorCode Conv2dGridForward_Im2col(Layer layer, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows, nparts = conv->grid.nparts;
  const PetscScalar     *W = theta, *b = conv->base.bias ? theta + K * nout : NULL;
  PetscBLASInt           bK, bout, bcin;
  PetscErrorCode         err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGridGetWorkspace(layer));
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscScalar   *col = Conv2dGridThreadCol(conv);
    PetscInt       s0, s1;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
    for (PetscInt r0 = s0; r0 < s1 && !ierr; r0 += rows) {
      const PetscInt     r1 = PetscMin(s1, r0 + rows), np = (r1 - r0) * bk->xm;
      const PetscBLASInt bnp = (PetscBLASInt)np;
      const PetscScalar  one = 1.0, beta = b ? 1.0 : 0.0;
      PetscScalar       *yc = y + (size_t)r0 * bk->xm * nout;

      ierr = ConvIm2colRows(&conv->base.im2col, r0, r1, x, col);
      if (b) Conv2dGridFillBias(np, nout, b, yc);
      if (!ierr) BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, col, &bK, &beta, yc, &bout);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d grid forward (im2col)");
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

/*
  dx (ghosted) += J_x^T dy if dx; dW += J_W^T dy if dW (then x is needed); db += J_b^T dy if db. The parts run in
  parallel in two phases, even then odd, when dx is asked for (see the top of the file); dW and db per part.
*/
PetscErrorCode Conv2dGridBackward_Im2col(Layer layer, const PetscScalar *W, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dW, PetscScalar *db)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows, nparts = conv->grid.nparts, nphases = dx ? 2 : 1;
  PetscBLASInt           bK, bout, bcin;
  PetscErrorCode         err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGridGetWorkspace(layer));
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
  for (PetscInt phase = 0; phase < nphases; phase++) {
    const PetscInt nrun = (nparts - phase + nphases - 1) / nphases; /* the parts phase, phase + nphases, ... */

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nrun > 1)
    for (PetscInt i = 0; i < nrun; i++) {
      const PetscInt p   = phase + i * nphases;
      PetscScalar   *col = Conv2dGridThreadCol(conv), *accW, *accb;
      PetscInt       s0, s1;
      PetscErrorCode ierr = 0;

      PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
      Conv2dGridPartAccumulators(conv, p, dW, db, &accW, &accb);
      for (PetscInt r0 = s0; r0 < s1 && !ierr; r0 += rows) {
        const PetscInt     r1 = PetscMin(s1, r0 + rows), np = (r1 - r0) * bk->xm;
        const PetscBLASInt bnp = (PetscBLASInt)np;
        const PetscScalar *dyc = dy + (size_t)r0 * bk->xm * nout, one = 1.0, zero = 0.0;

        if (accW) {
          ierr = ConvIm2colRows(&conv->base.im2col, r0, r1, x, col);
          if (!ierr) BLASgemm_("N", "T", &bK, &bout, &bnp, &one, col, &bK, dyc, &bout, &one, accW, &bK);
        }
        if (accb)
          for (PetscInt q = 0; q < np; q++)
            for (PetscInt o = 0; o < nout; o++) accb[o] += dyc[q * nout + o];
        if (dx && !ierr) {
          BLASgemm_("N", "N", &bK, &bnp, &bout, &one, W, &bK, dyc, &bout, &zero, col, &bK);
          ierr = ConvCol2imRowsAdd(&conv->base.im2col, r0, r1, col, dx);
        }
      }
      PetNetThreadsSetError(&err, ierr);
    }
  }
  PetNetThreadsCheck(err, "conv2d grid backward (im2col)");
  Conv2dGridAddParts(conv, dW, db);
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dW ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta on the block (dx ghosted; either may be NULL; x needed with dtheta): parts in parallel */
PetscErrorCode Conv2dGridJVP_Im2col(Layer layer, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, rows = conv->grid.chunkrows, nparts = conv->grid.nparts;
  const PetscScalar     *W = theta, *db = dtheta && conv->base.bias ? dtheta + K * nout : NULL;
  PetscBLASInt           bK, bout, bcin;
  PetscErrorCode         err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGridGetWorkspace(layer));
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscScalar   *col = Conv2dGridThreadCol(conv);
    PetscInt       s0, s1;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
    for (PetscInt r0 = s0; r0 < s1 && !ierr; r0 += rows) {
      const PetscInt     r1 = PetscMin(s1, r0 + rows), np = (r1 - r0) * bk->xm;
      const PetscBLASInt bnp = (PetscBLASInt)np;
      const PetscScalar  one = 1.0;
      PetscScalar       *dyc = dy + (size_t)r0 * bk->xm * nout, beta = 0.0;

      if (dx) {
        ierr = ConvIm2colRows(&conv->base.im2col, r0, r1, dx, col);
        if (!ierr) BLASgemm_("T", "N", &bout, &bnp, &bK, &one, W, &bK, col, &bK, &beta, dyc, &bout);
        beta = 1.0;
      }
      if (dtheta && !ierr) {
        ierr = ConvIm2colRows(&conv->base.im2col, r0, r1, x, col);
        if (!ierr) BLASgemm_("T", "N", &bout, &bnp, &bK, &one, dtheta, &bK, col, &bK, &beta, dyc, &bout);
        if (db)
          for (PetscInt q = 0; q < np; q++)
            for (PetscInt o = 0; o < nout; o++) dyc[q * nout + o] += db[o];
      }
      if (!dx && !dtheta)
        for (PetscInt i = 0; i < np * nout; i++) dyc[i] = 0.0;
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d grid jvp (im2col)");
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

/* y_row += sum over the taps (a, b) of wt_ab^T x_src, for row r of the block (yr: its output) */
static inline void Conv2dGridTapsRow(const Layer_Conv2d *conv, PetscInt r, const PetscScalar *wt, const PetscScalar *x, PetscBLASInt bout, PetscBLASInt bcin, PetscScalar *yr)
{
  const PetscInt    nout = conv->base.nout, cin = conv->base.cin, kh = conv->base.win.k[0], kw = conv->base.win.k[1];
  const PetscScalar one = 1.0;

  for (PetscInt a = 0; a < kh; a++)
    for (PetscInt b = 0; b < kw; b++) {
      PetscInt     q0, q1, src;
      PetscBLASInt bnq;

      if (!Conv2dGridTapRange(conv, a, b, r, &q0, &q1, &src)) continue;
      bnq = (PetscBLASInt)(q1 - q0);
      BLASgemm_("N", "N", &bout, &bnq, &bcin, &one, wt + (a * kw + b) * cin * nout, &bout, x + src, &bcin, &one, yr + q0 * nout, &bout);
    }
}

/* the output rows [s0, s1) of the block start as the bias b (or zero) */
static inline void Conv2dGridStartRows(const Layer_Conv2d *conv, PetscInt s0, PetscInt s1, const PetscScalar *b, PetscScalar *y)
{
  const PetscInt np = (s1 - s0) * conv->grid.block.xm, nout = conv->base.nout;
  PetscScalar   *ys = y + (size_t)s0 * conv->grid.block.xm * nout;

  if (b)
    Conv2dGridFillBias(np, nout, b, ys);
  else
    for (PetscInt i = 0; i < np * nout; i++) ys[i] = 0.0;
}

PetscErrorCode Conv2dGridForward_Taps(Layer layer, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, nparts = conv->grid.nparts;
  const PetscScalar     *b = conv->base.bias ? theta + K * nout : NULL;
  PetscBLASInt           bK, bout, bcin;

  PetscFunctionBegin;
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
  PetscCall(Conv2dGridTransposeTaps(conv, theta, conv->grid.wt));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt s0, s1;

    PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
    Conv2dGridStartRows(conv, s0, s1, b, y);
    for (PetscInt r = s0; r < s1; r++) Conv2dGridTapsRow(conv, r, conv->grid.wt, x, bout, bcin, y + (size_t)r * bk->xm * nout);
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout));
  PetscFunctionReturn(0);
}

/* dW += J_W^T dy, db += J_b^T dy, dx += J_x^T dy (each if not NULL): parts in parallel, in two phases with dx */
PetscErrorCode Conv2dGridBackward_Taps(Layer layer, const PetscScalar *W, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dW, PetscScalar *db)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, cin = conv->base.cin, kh = conv->base.win.k[0], kw = conv->base.win.k[1], nparts = conv->grid.nparts, nphases = dx ? 2 : 1;
  PetscBLASInt           bK, bout, bcin;

  PetscFunctionBegin;
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
  for (PetscInt phase = 0; phase < nphases; phase++) {
    const PetscInt nrun = (nparts - phase + nphases - 1) / nphases; /* the parts phase, phase + nphases, ... */

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nrun > 1)
    for (PetscInt i = 0; i < nrun; i++) {
      const PetscInt    p   = phase + i * nphases;
      const PetscScalar one = 1.0;
      PetscScalar      *accW, *accb;
      PetscInt          s0, s1;

      PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
      Conv2dGridPartAccumulators(conv, p, dW, db, &accW, &accb);
      for (PetscInt r = s0; r < s1; r++) {
        const PetscScalar *dyr = dy + (size_t)r * bk->xm * nout;

        if (accb)
          for (PetscInt q = 0; q < bk->xm; q++)
            for (PetscInt o = 0; o < nout; o++) accb[o] += dyr[q * nout + o];
        for (PetscInt a = 0; a < kh; a++)
          for (PetscInt c = 0; c < kw; c++) {
            const PetscInt tap = (a * kw + c) * cin;
            PetscInt       q0, q1, src;
            PetscBLASInt   bnq;

            if (!Conv2dGridTapRange(conv, a, c, r, &q0, &q1, &src)) continue;
            bnq = (PetscBLASInt)(q1 - q0);
            if (accW) BLASgemm_("N", "T", &bcin, &bout, &bnq, &one, x + src, &bcin, dyr + q0 * nout, &bout, &one, accW + tap, &bK);
            if (dx) BLASgemm_("N", "N", &bcin, &bnq, &bout, &one, W + tap, &bK, dyr + q0 * nout, &bout, &one, dx + src, &bcin);
          }
      }
    }
  }
  Conv2dGridAddParts(conv, dW, db);
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dW ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta: the tap GEMMs of dx with W and of x with dW, parts in parallel */
PetscErrorCode Conv2dGridJVP_Taps(Layer layer, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const Layer_Conv2d    *conv = (Layer_Conv2d *)layer->data;
  const Conv2dGridBlock *bk   = &conv->grid.block;
  const PetscInt         K = conv->base.kg, nout = conv->base.nout, nparts = conv->grid.nparts;
  const PetscScalar     *db = dtheta && conv->base.bias ? dtheta + K * nout : NULL;
  PetscScalar           *wt = conv->grid.wt, *dwt = conv->grid.wt + K * nout;
  PetscBLASInt           bK, bout, bcin;

  PetscFunctionBegin;
  PetscCall(Conv2dGridBLASSizes(conv, &bK, &bout, &bcin));
  if (dx) PetscCall(Conv2dGridTransposeTaps(conv, theta, wt));
  if (dtheta) PetscCall(Conv2dGridTransposeTaps(conv, dtheta, dwt));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt s0, s1;

    PetNetThreadPart(bk->ym, nparts, p, &s0, &s1);
    Conv2dGridStartRows(conv, s0, s1, db, dy);
    for (PetscInt r = s0; r < s1; r++) {
      PetscScalar *dyr = dy + (size_t)r * bk->xm * nout;

      if (dx) Conv2dGridTapsRow(conv, r, wt, dx, bout, bcin, dyr);
      if (dtheta) Conv2dGridTapsRow(conv, r, dwt, x, bout, bcin, dyr);
    }
  }
  PetscCall(PetscLogFlops(2.0 * bk->xm * bk->ym * K * nout * ((dtheta ? 1 : 0) + (dx ? 1 : 0))));
  PetscFunctionReturn(0);
}
