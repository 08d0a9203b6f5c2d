/*
  convtranspose2d's kernels, chunk by chunk of samples: one GEMM per group, then col2im (forward, jvp), or im2col then
  GEMMs (backward, sobackward). Layouts and the BLAS mapping in convtranspose2d.h.
*/
#include "convtranspose2d.h"

typedef struct {
  PetscBLASInt P, cin, cig, kg, ktot;
} CTBLAS;

static PetscErrorCode CTBLASSizes(const Layer_ConvTranspose2d *ct, PetscInt P, CTBLAS *b)
{
  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(P, &b->P));
  PetscCall(PetscBLASIntCast(ct->cin, &b->cin));
  PetscCall(PetscBLASIntCast(ct->cig, &b->cig));
  PetscCall(PetscBLASIntCast(ct->kg, &b->kg));
  PetscCall(PetscBLASIntCast(ct->ktot, &b->ktot));
  PetscFunctionReturn(0);
}

/* col_g = Wg x_g + beta col_g, each group (x: P pixels [P][Cin]) */
static PetscErrorCode CTGemmColumns(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *W, const PetscScalar *x, PetscScalar beta, PetscScalar *col)
{
  CTBLAS      b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(CTBLASSizes(ct, P, &b));
  for (PetscInt g = 0; g < ct->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &b.kg, &b.P, &b.cig, &one, W + g * ct->cig * ct->kg, &b.kg, x + g * ct->cig, &b.cin, &beta, col + g * ct->kg, &b.ktot));
  PetscCall(PetscLogFlops(2.0 * P * ct->kg * ct->cin));
  PetscFunctionReturn(0);
}

/* dx_g = Wg^T dcol_g + beta dx_g, each group */
static PetscErrorCode CTGemmInput(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *W, const PetscScalar *dcol, PetscScalar beta, PetscScalar *dx)
{
  CTBLAS      b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(CTBLASSizes(ct, P, &b));
  for (PetscInt g = 0; g < ct->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &b.cig, &b.P, &b.kg, &one, W + g * ct->cig * ct->kg, &b.kg, dcol + g * ct->kg, &b.ktot, &beta, dx + g * ct->cig, &b.cin));
  PetscCall(PetscLogFlops(2.0 * P * ct->kg * ct->cin));
  PetscFunctionReturn(0);
}

/* dWg += dcol_g x_g^T, each group */
static PetscErrorCode CTGemmWeights(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *dcol, const PetscScalar *x, PetscScalar *dW)
{
  CTBLAS      b;
  PetscScalar one = 1.0;

  PetscFunctionBegin;
  PetscCall(CTBLASSizes(ct, P, &b));
  for (PetscInt g = 0; g < ct->groups; g++) PetscCallBLAS("BLASgemm", BLASgemm_("N", "T", &b.kg, &b.cig, &b.P, &one, dcol + g * ct->kg, &b.ktot, x + g * ct->cig, &b.cin, &one, dW + g * ct->cig * ct->kg, &b.kg));
  PetscCall(PetscLogFlops(2.0 * P * ct->kg * ct->cin));
  PetscFunctionReturn(0);
}

/* y = col2im(col) for ns samples (y overwritten), then y += b if b */
static PetscErrorCode CTCol2im(const Layer_ConvTranspose2d *ct, PetscInt ns, PetscInt outsize, const PetscScalar *col, const PetscScalar *b, PetscScalar *y)
{
  const size_t   colsize = (size_t)ct->in[0] * ct->in[1] * ct->ktot;
  const PetscInt C       = ct->nout;

  PetscFunctionBegin;
  PetscCall(PetscArrayzero(y, (size_t)ns * outsize));
  for (PetscInt s = 0; s < ns; s++) PetscCall(ConvCol2imRowsAdd(&ct->geom, 0, ct->in[0], col + s * colsize, y + (size_t)s * outsize));
  if (b)
    for (PetscInt p = 0; p < ns * ct->out[0] * ct->out[1]; p++, y += C)
      for (PetscInt c = 0; c < C; c++) y[c] += b[c];
  PetscCall(PetscLogFlops(1.0 * ns * (colsize + (b ? outsize : 0))));
  PetscFunctionReturn(0);
}

/* col = im2col(dy) of ns samples of the output image: the receptive field of each input pixel */
static PetscErrorCode CTIm2col(const Layer_ConvTranspose2d *ct, PetscInt ns, PetscInt outsize, const PetscScalar *dy, PetscScalar *col)
{
  const size_t colsize = (size_t)ct->in[0] * ct->in[1] * ct->ktot;

  PetscFunctionBegin;
  for (PetscInt s = 0; s < ns; s++) PetscCall(ConvIm2colRows(&ct->geom, 0, ct->in[0], dy + (size_t)s * outsize, col + s * colsize));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dForward(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_ConvTranspose2d *ct  = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix = ct->in[0] * ct->in[1], nw = ct->cin * ct->kg;

  PetscFunctionBegin;
  for (PetscInt s0 = 0; s0 < n; s0 += ct->chunk) {
    const PetscInt ns = PetscMin(ct->chunk, n - s0);

    PetscCall(CTGemmColumns(ct, ns * pix, theta, x + (size_t)s0 * layer->insize, 0.0, ct->col));
    PetscCall(CTCol2im(ct, ns, layer->outsize, ct->col, ct->bias ? theta + nw : NULL, y + (size_t)s0 * layer->outsize));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dBackward(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_ConvTranspose2d *ct  = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix = ct->in[0] * ct->in[1], nw = ct->cin * ct->kg, C = ct->nout;

  PetscFunctionBegin;
  for (PetscInt s0 = 0; s0 < n; s0 += ct->chunk) {
    const PetscInt ns = PetscMin(ct->chunk, n - s0);

    PetscCall(CTIm2col(ct, ns, layer->outsize, dy + (size_t)s0 * layer->outsize, ct->col));
    if (dx) PetscCall(CTGemmInput(ct, ns * pix, theta, ct->col, 0.0, dx + (size_t)s0 * layer->insize));
    if (dtheta) PetscCall(CTGemmWeights(ct, ns * pix, ct->col, x + (size_t)s0 * layer->insize, dtheta));
  }
  if (dtheta && ct->bias) {
    PetscScalar *db = dtheta + nw;

    for (PetscInt p = 0; p < n * ct->out[0] * ct->out[1]; p++, dy += C)
      for (PetscInt c = 0; c < C; c++) db[c] += dy[c];
    PetscCall(PetscLogFlops(1.0 * n * layer->outsize));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dJVP(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_ConvTranspose2d *ct  = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix = ct->in[0] * ct->in[1], nw = ct->cin * ct->kg;

  PetscFunctionBegin;
  if (!dx && !dtheta) {
    PetscCall(PetscArrayzero(dy, (size_t)n * layer->outsize));
    PetscFunctionReturn(0);
  }
  for (PetscInt s0 = 0; s0 < n; s0 += ct->chunk) {
    const PetscInt ns = PetscMin(ct->chunk, n - s0);

    if (dx) PetscCall(CTGemmColumns(ct, ns * pix, theta, dx + (size_t)s0 * layer->insize, 0.0, ct->col));
    if (dtheta) PetscCall(CTGemmColumns(ct, ns * pix, dtheta, x + (size_t)s0 * layer->insize, dx ? 1.0 : 0.0, ct->col));
    PetscCall(CTCol2im(ct, ns, layer->outsize, ct->col, dtheta && ct->bias ? dtheta + nw : NULL, dy + (size_t)s0 * layer->outsize));
  }
  PetscFunctionReturn(0);
}

/* dxdot += conv2d(dy; Wdot) and dWdot += the weight sums of dy with xdot: backward's parts with Wdot for W, xdot for x */
PetscErrorCode ConvTranspose2dSOBackward(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_ConvTranspose2d *ct    = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix   = ct->in[0] * ct->in[1];
  const PetscBool        input = (PetscBool)(dxdot && thetadot), weights = (PetscBool)(dthetadot && xdot);

  PetscFunctionBegin;
  if (!input && !weights) PetscFunctionReturn(0);
  for (PetscInt s0 = 0; s0 < n; s0 += ct->chunk) {
    const PetscInt ns = PetscMin(ct->chunk, n - s0);

    PetscCall(CTIm2col(ct, ns, layer->outsize, dy + (size_t)s0 * layer->outsize, ct->col));
    if (input) PetscCall(CTGemmInput(ct, ns * pix, thetadot, ct->col, 1.0, dxdot + (size_t)s0 * layer->insize));
    if (weights) PetscCall(CTGemmWeights(ct, ns * pix, ct->col, xdot + (size_t)s0 * layer->insize, dthetadot));
  }
  PetscFunctionReturn(0);
}
