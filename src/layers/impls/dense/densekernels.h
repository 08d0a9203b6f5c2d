/*
  dense's forward, backward and jvp on one element type, included once per type by dense.c (formulas and the BLAS
  mapping there):
    DENSE_T        the values' type: PetscScalar, or float (a Net at -net_precision single or bfloat16)
    DENSE_NAME(f)  f itself, or fSingle
  and, from dense.c, the type's DENSE_NAME(DenseParameters)() (W, b: theta itself, or rounded to float by forward and
  kept for the backward and jvp that follow at the same point), DENSE_NAME(DenseDirection)() (dtheta, or rounded to
  float) and DENSE_NAME(DenseWork)() (where a float weight gradient is formed before the double accumulation).
  The parameters and their gradient stay double: dW += X dY^T through LayerGemm()'s accumulation into double.
*/
/* y = act(W^T x + b) (act: an activation passed by the caller, or NULL) */
static PetscErrorCode DENSE_NAME(DenseForwardAct)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const DENSE_T *x, DENSE_T *y)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;
  const DENSE_T *W = NULL;

  PetscFunctionBegin;
  PetscCall(DENSE_NAME(DenseParameters)(layer, theta, "forward", &W)); /* a rank without samples too: its backward may still be asked for */
  if (!n) PetscFunctionReturn(0);
  {
    /* the bias (and the activation) in the GEMM's output pass, part by part while the part is in cache */
    DENSE_NAME(LayerGemmEpilogue) ep = {act, dense->bias ? W + in * out : NULL, NULL, NULL, layer->gemm};

    PetscCall(DENSE_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', out, m, in, W, in, x, in, 0, y, out, &ep));
  }
  PetscCall(PetscLogFlops(2.0 * m * in * out + m * out));
  PetscFunctionReturn(0);
}

/* dx = act'(x) W dy (act: the activation that made x, passed by the caller, or NULL), dtheta += ... */
static PetscErrorCode DENSE_NAME(DenseBackwardMask)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const DENSE_T *x, const DENSE_T *y, const DENSE_T *dy, DENSE_T *dx, PetscScalar *dtheta)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;
  const DENSE_T *W = NULL;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dx) {
    DENSE_NAME(LayerGemmEpilogue) ep = {act, NULL, x, NULL, layer->gemm}; /* the activation before it: dx = f'(x) W^T dy */

    PetscCall(DENSE_NAME(DenseParameters)(layer, theta, "backward", &W));
    PetscCall(DENSE_NAME(LayerGemm)(PETSC_TRUE, 'N', 'N', in, m, out, W, in, dy, out, 0, dx, in, &ep));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
  }
  if (dtheta) {
    PetscScalar *db                  = dtheta + in * out;
    DENSE_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, dtheta, layer->gemm}; /* dW += each part's block, in double */

    PetscCall(DENSE_NAME(LayerGemm)(PETSC_TRUE, 'N', 'T', in, out, m, x, in, dy, out, 0, DENSE_NAME(DenseWork)(layer), in, &ep));
    if (dense->bias)
      for (PetscInt s = 0; s < m; s++)
        for (PetscInt o = 0; o < out; o++) db[o] += dy[s * out + o];
    PetscCall(PetscLogFlops(2.0 * m * in * out + m * out));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode DENSE_NAME(DenseForward)(Layer layer, PetscInt n, const PetscScalar *theta, const DENSE_T *x, DENSE_T *y)
{
  PetscFunctionBegin;
  PetscCall(DENSE_NAME(DenseForwardAct)(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode DENSE_NAME(DenseBackward)(Layer layer, PetscInt n, const PetscScalar *theta, const DENSE_T *x, const DENSE_T *y, const DENSE_T *dy, DENSE_T *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(DENSE_NAME(DenseBackwardMask)(layer, NULL, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode DENSE_NAME(DenseJVP)(Layer layer, PetscInt n, const PetscScalar *theta, const DENSE_T *x, const DENSE_T *y, const DENSE_T *dx, const PetscScalar *dtheta, DENSE_T *dy)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;
  const DENSE_T *W = NULL, *dW = NULL;
  DENSE_T        beta = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dx) {
    DENSE_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, NULL, layer->gemm};

    PetscCall(DENSE_NAME(DenseParameters)(layer, theta, "jvp", &W));
    PetscCall(DENSE_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', out, m, in, W, in, dx, in, 0, dy, out, &ep));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
    beta = 1;
  }
  if (dtheta) {
    PetscCall(DENSE_NAME(DenseDirection)(layer, dtheta, &dW));
    {
      DENSE_NAME(LayerGemmEpilogue) ep = {NULL, dense->bias ? dW + in * out : NULL, NULL, NULL, layer->gemm}; /* + db 1^T in the output pass */

      PetscCall(DENSE_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', out, m, in, dW, in, x, in, beta, dy, out, &ep));
    }
    PetscCall(PetscLogFlops(2.0 * m * in * out + 2.0 * m * out));
  }
  PetscFunctionReturn(0);
}
