/*
  convtranspose2d's kernels, chunk by chunk of samples: one GEMM per group, then col2im (forward, jvp), or im2col then
  GEMMs (backward, sobackward). Layouts and the BLAS mapping in convtranspose2d.h.
  Threads: the batch is cut into parts (CTParts: from the sizes alone), each with its own share of the columns and,
  for the weight gradients, its own accumulators added in part order, so the results are the same at any thread count.
*/
#include "convtranspose2d.h"
#include "../../interface/layergemm.h"

/* col_g = Wg x_g + beta col_g, each group (x: P pixels [P][Cin]) */
static PetscErrorCode CTGemmColumns(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *W, const PetscScalar *x, PetscScalar beta, PetscScalar *col)
{
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < ct->groups && !ierr; g++) ierr = LayerGemm(PETSC_FALSE, 'N', 'N', ct->kg, P, ct->cig, W + g * ct->cig * ct->kg, ct->kg, x + g * ct->cig, ct->cin, beta, col + g * ct->kg, ct->ktot, NULL);
  return ierr;
}

/* dx_g = Wg^T dcol_g + beta dx_g, each group */
static PetscErrorCode CTGemmInput(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *W, const PetscScalar *dcol, PetscScalar beta, PetscScalar *dx)
{
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < ct->groups && !ierr; g++) ierr = LayerGemm(PETSC_FALSE, 'T', 'N', ct->cig, P, ct->kg, W + g * ct->cig * ct->kg, ct->kg, dcol + g * ct->kg, ct->ktot, beta, dx + g * ct->cig, ct->cin, NULL);
  return ierr;
}

/* dWg += dcol_g x_g^T, each group */
static PetscErrorCode CTGemmWeights(const Layer_ConvTranspose2d *ct, PetscInt P, const PetscScalar *dcol, const PetscScalar *x, PetscScalar *dW)
{
  PetscErrorCode ierr = 0;

  for (PetscInt g = 0; g < ct->groups && !ierr; g++) ierr = LayerGemm(PETSC_FALSE, 'N', 'T', ct->kg, ct->cig, P, dcol + g * ct->kg, ct->ktot, x + g * ct->cig, ct->cin, 1.0, dW + g * ct->cig * ct->kg, ct->kg, NULL);
  return ierr;
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

/* the parts of a batch of n samples, and the samples per chunk of a part (the parts share the chunk's columns) */
static void CTParts(const Layer_ConvTranspose2d *ct, PetscInt n, PetscInt *nparts, PetscInt *pc)
{
  *nparts = PetscMin(PetNetThreadParts(n, 1), ct->chunk);
  *pc     = ct->chunk / *nparts;
}

/* the columns of part p */
static PetscScalar *CTPartColumns(const Layer_ConvTranspose2d *ct, PetscInt p, PetscInt pc)
{
  return ct->col + (size_t)p * pc * ct->in[0] * ct->in[1] * ct->ktot;
}

/*
  The weight (and bias) accumulators of part p: dtheta itself with one part; else the part's own, zeroed, added into
  dtheta afterwards by CTAddParts
*/
static PetscScalar *CTPartAccumulators(const Layer_ConvTranspose2d *ct, PetscInt nparts, PetscInt p, PetscInt nacc, PetscScalar *dtheta)
{
  PetscScalar *acc;

  if (nparts == 1) return dtheta;
  acc = ct->dwpart + (size_t)p * nacc;
  for (PetscInt i = 0; i < nacc; i++) acc[i] = 0.0;
  return acc;
}

static void CTAddParts(const Layer_ConvTranspose2d *ct, PetscInt nparts, PetscInt nacc, PetscScalar *dtheta)
{
  if (nparts == 1) return;
  for (PetscInt p = 0; p < nparts; p++)
    for (PetscInt i = 0; i < nacc; i++) dtheta[i] += ct->dwpart[(size_t)p * nacc + i];
}

/* y = col2im(W x) + b (forward), or dy = col2im(W dx + dW x) + db (jvp: W2 = dW, x2 = x, either term optional) */
static PetscErrorCode CTColumnsToImage(Layer layer, PetscInt n, const PetscScalar *W1, const PetscScalar *x1, const PetscScalar *W2, const PetscScalar *x2, const PetscScalar *b, PetscScalar *y)
{
  Layer_ConvTranspose2d *ct  = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix = ct->in[0] * ct->in[1];
  PetscInt               nparts, pc;
  PetscErrorCode         err = 0;

  PetscFunctionBegin;
  CTParts(ct, n, &nparts, &pc);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscScalar   *col = CTPartColumns(ct, p, pc);
    PetscInt       s0, s1;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    for (PetscInt a = s0; a < s1 && !ierr; a += pc) {
      const PetscInt ns = PetscMin(pc, s1 - a);

      if (W1) ierr = CTGemmColumns(ct, ns * pix, W1, x1 + (size_t)a * layer->insize, 0.0, col);
      if (W2 && !ierr) ierr = CTGemmColumns(ct, ns * pix, W2, x2 + (size_t)a * layer->insize, W1 ? 1.0 : 0.0, col);
      if (!ierr) ierr = CTCol2im(ct, ns, layer->outsize, col, b, y + (size_t)a * layer->outsize);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "convtranspose2d");
  PetscCall(PetscLogFlops(((W1 ? 2.0 : 0.0) + (W2 ? 2.0 : 0.0)) * n * pix * ct->kg * ct->cin + 1.0 * n * ((PetscReal)pix * ct->ktot + (b ? layer->outsize : 0))));
  PetscFunctionReturn(0);
}

/*
  From im2col(dy): dx = W^T dcol (beta 0, backward) or dx += (sobackward), and dW += dcol xw^T (xw = x or xdot); db += sum dy
  (dbias). Parts of samples on threads, the weight sums per part then in part order.
*/
static PetscErrorCode CTImageToColumns(Layer layer, PetscInt n, const PetscScalar *dy, const PetscScalar *W, PetscScalar beta, PetscScalar *dx, const PetscScalar *xw, PetscBool dbias, PetscScalar *dtheta)
{
  Layer_ConvTranspose2d *ct  = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         pix = ct->in[0] * ct->in[1], nw = ct->cin * ct->kg, C = ct->nout, nacc = nw + (dbias ? C : 0);
  PetscInt               nparts, pc;
  PetscErrorCode         err = 0;

  PetscFunctionBegin;
  CTParts(ct, n, &nparts, &pc);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscScalar   *col = CTPartColumns(ct, p, pc), *acc = dtheta ? CTPartAccumulators(ct, nparts, p, nacc, dtheta) : NULL;
    PetscInt       s0, s1;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    for (PetscInt a = s0; a < s1 && !ierr; a += pc) {
      const PetscInt ns = PetscMin(pc, s1 - a);

      ierr = CTIm2col(ct, ns, layer->outsize, dy + (size_t)a * layer->outsize, col);
      if (dx && !ierr) ierr = CTGemmInput(ct, ns * pix, W, col, beta, dx + (size_t)a * layer->insize);
      if (acc && !ierr) ierr = CTGemmWeights(ct, ns * pix, col, xw + (size_t)a * layer->insize, acc);
    }
    if (acc && dbias) {
      const PetscScalar *g = dy + (size_t)s0 * layer->outsize;

      for (PetscInt q = 0; q < (s1 - s0) * ct->out[0] * ct->out[1]; q++, g += C)
        for (PetscInt c = 0; c < C; c++) acc[nw + c] += g[c];
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "convtranspose2d");
  if (dtheta) CTAddParts(ct, nparts, nacc, dtheta);
  PetscCall(PetscLogFlops(((dx ? 2.0 : 0.0) + (dtheta ? 2.0 : 0.0)) * n * pix * ct->kg * ct->cin + (dbias ? 1.0 * n * layer->outsize : 0.0)));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dForward(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(CTColumnsToImage(layer, n, theta, x, NULL, NULL, ct->bias ? theta + ct->cin * ct->kg : NULL, y));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dBackward(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  if (!dx && !dtheta) PetscFunctionReturn(0);
  PetscCall(CTImageToColumns(layer, n, dy, theta, 0.0, dx, x, (PetscBool)(dtheta && ct->bias), dtheta));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvTranspose2dJVP(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  if (!dx && !dtheta) {
    PetscCall(PetscArrayzero(dy, (size_t)n * layer->outsize));
    PetscFunctionReturn(0);
  }
  PetscCall(CTColumnsToImage(layer, n, dx ? theta : NULL, dx, dtheta, x, dtheta && ct->bias ? dtheta + ct->cin * ct->kg : NULL, dy));
  PetscFunctionReturn(0);
}

/* dxdot += conv2d(dy; Wdot) and dWdot += the weight sums of dy with xdot: backward's parts with Wdot for W, xdot for x */
PetscErrorCode ConvTranspose2dSOBackward(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                         PetscScalar *dxdot, PetscScalar *dthetadot)
{
  const PetscBool input = (PetscBool)(dxdot && thetadot), weights = (PetscBool)(dthetadot && xdot);

  PetscFunctionBegin;
  if (!input && !weights) PetscFunctionReturn(0);
  PetscCall(CTImageToColumns(layer, n, dy, thetadot, 1.0, input ? dxdot : NULL, xdot, PETSC_FALSE, weights ? dthetadot : NULL));
  PetscFunctionReturn(0);
}
