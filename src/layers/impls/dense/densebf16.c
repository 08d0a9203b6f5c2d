/*
  dense's bfloat16 kernels (Layer.ops forwardbf16, backwardmaskbf16, jvpbf16; src/layers/interface/layerbf16.c): the
  float kernels' GEMMs (densekernels.h, the mapping in dense.c) on the Net's stored bfloat16 values themselves, where
  its Net runs oneDNN's bfloat16 matmuls (Layer.bf16onednn), through LayerGemmBF16():

    forward   Y16  = round(f(W16^T X16 + bf))        W16 = thetaf rounded once here, kept for backward and jvp
    backward  dX16 = round(f'(X16) W16 dY16)          dW += X16 dY16^T (float, added in double), db += dY16 1
    jvp       dY16 = round(W16^T dX16 + dW16^T X16 + dbf)

  x, dx and dy go to oneDNN as they lie; W is rounded to bfloat16 once per forward (the float kernels have oneDNN
  round it at each GEMM). y (no activation, or a fused relu) and dx without a mask come out of oneDNN in bfloat16 where
  its first call of the key found them the float output's bits rounded (PetNetOneDNNMatmulBF16Out()); else the float
  output is rounded here. A key oneDNN falls back on runs sgemm on float copies (thetaf, the widened values), as the
  float kernels do. So every output is the bits of the float kernels on widened copies, rounded as the value store
  rounds (tests/test_precision.c compares them with -net_bfloat16_kernels false).
*/
#include "dense.h"
#include "../../interface/layergemm.h"

/* W16 = theta rounded to bfloat16 by forward (with thetaf, one pass), kept for the backward and jvp at the same point */
static PetscErrorCode DenseParametersBF16(Layer layer, const PetscScalar *theta, const char *op, const float **W, const uint16_t **W16)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (op[0] == 'f') {
    if (dense->n16 != layer->nparams) {
      PetscCall(PetscFree2(dense->theta16, dense->work16));
      PetscCall(PetscMalloc2(layer->nparams, &dense->theta16, layer->nparams, &dense->work16));
      dense->n16 = layer->nparams;
    }
    PetscCall(DenseRoundParameters(layer, theta, dense->theta16));
  }
  PetscCheck(dense->w16 && dense->nf == layer->nparams && dense->n16 == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the bfloat16 %s follows a bfloat16 forward at the same point (LayerForwardBF16())",
             layer->index, op);
  *W   = dense->thetaf;
  *W16 = dense->theta16;
  PetscFunctionReturn(0);
}

/*
  db[o0..o1) += sum over the m rows of dy[s][o], in double, s in order (the float kernels' order, so their bits);
  compiled also for AVX-512 and AVX2 (double adds: the same bits in any width), run on the threads by blocks of outputs
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
DenseBiasGradientBF16(PetscInt m, PetscInt out, PetscInt o0, PetscInt o1, const uint16_t *restrict dy, PetscScalar *restrict db)
{
  for (PetscInt s = 0; s < m; s++)
    for (PetscInt o = o0; o < o1; o++) db[o] += PetNetBF16ToFloat(dy[(size_t)s * out + o]);
}

/* y = act(W^T x + b) */
static PetscErrorCode DenseForwardActBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  Layer_Dense            *dense = (Layer_Dense *)layer->data;
  const PetscInt          in = dense->nin, out = dense->nout, m = n * dense->rows;
  const float            *W   = NULL;
  const uint16_t         *W16 = NULL;
  LayerGemmEpilogueSingle ep;

  PetscFunctionBegin;
  PetscCall(DenseParametersBF16(layer, theta, "forward", &W, &W16)); /* a rank without samples too */
  if (!n) PetscFunctionReturn(0);
  ep = (LayerGemmEpilogueSingle){act, dense->bias ? W + in * out : NULL, NULL, NULL, layer->gemm};
  PetscCall(LayerGemmBF16('T', 'N', out, m, in, W16, W, in, x, NULL, in, NULL, 0, NULL, y, out, &ep));
  PetscCall(PetscLogFlops(2.0 * m * in * out + m * out));
  PetscFunctionReturn(0);
}

/* dx = act'(x) W dy (act: the activation that made x, or NULL), dtheta += (x dy^T, dy 1) */
static PetscErrorCode DenseBackwardMaskBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dx) {
    const float            *W   = NULL;
    const uint16_t         *W16 = NULL;
    LayerGemmEpilogueSingle ep  = {act, NULL, NULL, NULL, layer->gemm};

    PetscCall(DenseParametersBF16(layer, theta, "backward", &W, &W16));
    PetscCall(LayerGemmBF16('N', 'N', in, m, out, W16, W, in, dy, NULL, out, act ? x : NULL, 0, NULL, dx, in, &ep));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
  }
  if (dtheta) {
    PetscScalar            *db = dtheta + in * out;
    LayerGemmEpilogueSingle ep = {NULL, NULL, NULL, dtheta, layer->gemm}; /* dW += the float product, in double */

    PetscCheck(dense->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the bfloat16 backward follows a bfloat16 forward at the same point (LayerForwardBF16())", layer->index);
    PetscCall(LayerGemmBF16('N', 'T', in, out, m, x, NULL, in, dy, NULL, out, NULL, 0, dense->workf, NULL, in, &ep));
    if (dense->bias) PETNET_THREAD_BLOCKS(out, PetscMax(16, 65536 / m), DenseBiasGradientBF16(m, out, i0, i1, dy, db));
    PetscCall(PetscLogFlops(2.0 * m * in * out + m * out));
  }
  PetscFunctionReturn(0);
}

/* dy = W^T dx + dW^T x + db (the float sum in the oneDNN module's scratch, rounded once) */
static PetscErrorCode DenseJVPBF16(Layer layer, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dx, const PetscScalar *dtheta, uint16_t *dy)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;
  float         *dyf, beta = 0;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(PetNetOneDNNFloatScratch((size_t)m * out, &dyf));
  if (dx) {
    const float            *W   = NULL;
    const uint16_t         *W16 = NULL;
    LayerGemmEpilogueSingle ep  = {NULL, NULL, NULL, NULL, layer->gemm};

    PetscCall(DenseParametersBF16(layer, theta, "jvp", &W, &W16));
    PetscCall(LayerGemmBF16('T', 'N', out, m, in, W16, W, in, dx, NULL, in, NULL, 0, dyf, NULL, out, &ep));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
    beta = 1;
  }
  if (dtheta) {
    const float            *dW;
    LayerGemmEpilogueSingle ep;

    PetscCall(DenseDirectionSingle(layer, dtheta, &dW));
    PetscCheck(dense->n16 == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the bfloat16 jvp follows a bfloat16 forward at the same point (LayerForwardBF16())", layer->index);
    PetNetBF16Round(layer->nparams, dW, dense->work16);
    ep = (LayerGemmEpilogueSingle){NULL, dense->bias ? dW + in * out : NULL, NULL, NULL, layer->gemm}; /* + db 1^T */
    PetscCall(LayerGemmBF16('T', 'N', out, m, in, dense->work16, dW, in, x, NULL, in, NULL, beta, dyf, NULL, out, &ep));
    PetscCall(PetscLogFlops(2.0 * m * in * out + 2.0 * m * out));
  } else if (!dx)
    PetscCall(PetscArrayzero(dyf, (size_t)m * out));
  PetNetBF16Round(m * out, dyf, dy);
  PetscFunctionReturn(0);
}

/* the bfloat16 ops, which the Net runs where it runs oneDNN's bfloat16 matmuls (src/net/netbackend.c) */
PetscErrorCode DenseSetBF16(Layer layer)
{
  PetscFunctionBegin;
  layer->ops->forwardbf16      = DenseForwardActBF16;
  layer->ops->backwardmaskbf16 = DenseBackwardMaskBF16;
  layer->ops->jvpbf16          = DenseJVPBF16;
  layer->bf16onednn            = PETSC_TRUE;
  PetscFunctionReturn(0);
}
