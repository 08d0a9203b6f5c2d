/*
  The float kernels of a convolution on oneDNN (a Net at -net_precision single or bfloat16 with -net_backend onednn:
  layer->gemm, src/net/netbackend.c), one primitive per op from the cache of src/sys/onednn.c, on the whole batch:

    forward    y = f(conv(x; W) + b)                 convolution forward, the bias fused; f (forwardact) after it
    backward   dx = conv^T(dy; W)                    convolution backward data (dx overwritten)
               dW += sum x (x) dy, db += sum dy      convolution backward weights and bias in float, added in double
    jvp        dy = conv(x; dW) + db + conv(dx; W)   two forwards, the second adding into the first (a sum post-op)

  The layouts are the base's (conv.h), which are oneDNN's: x, y [n][H][W][C] nhwc, W [Cout][KH][KW][Cg] ohwi (gohwi
  with groups); no data are copied or reordered but the weights, once per call, into the layout oneDNN's kernel
  picks (a reorder primitive cached with the convolution's). Forward rounds W and b to float once and keeps them
  (ConvOneDNN w, b) for backward and jvp at the same point, as the native float kernels do.

  A layer runs all its ops on oneDNN or none (ConvOneDNNApplies(), decided per batch size at the first call and
  recorded by -info): a shape that oneDNN refuses or would run only with its reference loops (bfloat16 on a CPU
  without AVX-512) runs the layer's native float kernels (Winograd, im2col + sgemm, or direct) for forward, backward
  and jvp alike, so a backward never meets another kernel's forward state. conv2d and conv3d take this path: conv3d's
  float ops are the base's (ConvForwardActSingle_Default() below: oneDNN, else im2col + sgemm or direct), conv2d's its
  own (oneDNN, else Winograd, else the base's).
  oneDNN's results are the same bits for the same threads and ranks; its weight gradient is summed over the whole
  batch in float, then added in double (the native kernels add each chunk's in double).
  At bfloat16 the same ops also run on the Net's stored bfloat16 values themselves (the bfloat16 kernels below:
  forwardbf16, backwardmaskbf16, jvpbf16), with no float copy of their inputs.
*/
#include "conv.h"
#include <petnet/private/onednnimpl.h>
#include <string.h>

/* the key of the layer's primitives at n samples (onednnimpl.h); bias as the layer's */
static void ConvOneDNNShape(const LayerConv *conv, PetscInt n, PetNetOneDNNConvShape *sh)
{
  const LayerWindow *w = &conv->win;

  memset(sh, 0, sizeof(*sh));
  sh->nsd    = conv->nsd;
  sh->n      = n;
  sh->cin    = conv->cin;
  sh->cout   = conv->nout;
  sh->groups = conv->groups;
  sh->bias   = conv->bias;
  for (PetscInt d = 0; d < conv->nsd; d++) {
    sh->in[d]       = w->in[d];
    sh->out[d]      = w->out[d];
    sh->k[d]        = w->k[d];
    sh->stride[d]   = w->step[d];
    sh->pad[d]      = w->pad[d];
    sh->dilation[d] = w->dilation[d];
  }
}

/*
  *on: the layer's float ops at n samples run on oneDNN: its Net asks for it (layer->gemm), the layer is a batch-mode
  one (2-D or 3-D), and oneDNN has kernels for all its ops at this shape (PetNetOneDNNConvAvailable(), cached)
*/
PetscErrorCode ConvOneDNNApplies(Layer layer, PetscInt n, PetscBool *on)
{
  LayerConv            *conv = (LayerConv *)layer->data;
  PetNetOneDNNConvShape sh;

  PetscFunctionBegin;
  *on = PETSC_FALSE;
  if (layer->gemm == PETNET_GEMM_NATIVE || layer->fielddim || !n) PetscFunctionReturn(0);
  /* oneDNN's dims are 64-bit; the batch's values must fit PetNet's sizes as the native kernels' do */
  PetscCheck((PetscInt64)n * layer->insize <= PETSC_MAX_INT && (PetscInt64)n * layer->outsize <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "%s layer %" PetscInt_FMT ": %" PetscInt_FMT " samples of %" PetscInt_FMT " -> %" PetscInt_FMT " values overflow PetscInt: use smaller batches (-trainer_batch_size)", ((PetscObject)layer)->type_name, layer->index, n, layer->insize,
             layer->outsize);
  ConvOneDNNShape(conv, n, &sh);
  PetscCall(PetNetOneDNNConvAvailable(layer->gemm, &sh, on));
  PetscFunctionReturn(0);
}

/* the float buffers of ConvOneDNN (conv.h), once per set-up */
static PetscErrorCode ConvOneDNNGetWork(LayerConv *conv)
{
  ConvOneDNN    *s  = &conv->dnn;
  const PetscInt nw = conv->nout * conv->kg;

  PetscFunctionBegin;
  if (!s->w) {
    PetscCall(PetscMalloc1(2 * (size_t)nw + 2 * (size_t)conv->nout, &s->w));
    s->b  = s->w + nw;
    s->dw = s->b + conv->nout;
    s->db = s->dw + nw;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode ConvResetOneDNN(Layer layer)
{
  ConvOneDNN *s = &((LayerConv *)layer->data)->dnn;

  PetscFunctionBegin;
  PetscCall(PetscFree(s->w));
  PetscCall(PetscMemzero(s, sizeof(*s)));
  PetscFunctionReturn(0);
}

/* v (n values) = theta rounded to float */
static void ConvOneDNNToFloat(PetscInt n, const PetscScalar *theta, float *v)
{
  for (PetscInt i = 0; i < n; i++) v[i] = (float)theta[i];
}

/* forward: y = f(conv(x; W) + b), W and b rounded to float and kept; f a relu: the primitive's post-op; another f on
   each sample's output, samples in parallel; x and y float, or bfloat16 (bf16: the bfloat16 kernels below; another f
   than relu on a float y in the oneDNN module's scratch, rounded after) */
static PetscErrorCode ConvForwardAct_OneDNN(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const void *x, PetscBool bf16, void *y)
{
  LayerConv            *conv = (LayerConv *)layer->data;
  ConvOneDNN           *s    = &conv->dnn;
  const PetscInt        nw = conv->nout * conv->kg, outsize = layer->outsize;
  PetNetOneDNNConvShape sh;
  PetscErrorCode        err  = 0;
  PetscBool             relu = PETSC_FALSE;
  float                *yf   = (float *)y;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNGetWork(conv));
  ConvOneDNNToFloat(nw, theta, s->w);
  if (conv->bias) ConvOneDNNToFloat(conv->nout, theta + nw, s->b);
  s->wset = PETSC_TRUE;
  if (!n) PetscFunctionReturn(0);
  ConvOneDNNShape(conv, n, &sh);
  if (act && act->isrelu) { /* a fused relu as the primitive's post-op, where oneDNN has that primitive */
    sh.relu = PETSC_TRUE;
    PetscCall(PetNetOneDNNConvAvailable(layer->gemm, &sh, &relu));
    sh.relu = relu;
  }
  if (bf16 && (!act || relu)) /* bfloat16 out of oneDNN: the float output's bits rounded (onednn.c) */
    PetscCall(PetNetOneDNNConvForwardBF16Out(&sh, (const uint16_t *)x, s->w, conv->bias ? s->b : NULL, (uint16_t *)y));
  else if (bf16) {
    PetscCall(PetNetOneDNNFloatScratch((size_t)n * outsize, &yf));
    PetscCall(PetNetOneDNNConvForwardBF16(&sh, (const uint16_t *)x, s->w, conv->bias ? s->b : NULL, 0, yf));
  } else
    PetscCall(PetNetOneDNNConvForward(layer->gemm, &sh, (const float *)x, s->w, conv->bias ? s->b : NULL, 0, yf));
  if (act && !relu) {
#pragma omp parallel for num_threads(PetNetThreads()) schedule(static) if (n > 1)
    for (PetscInt i = 0; i < n; i++) PetNetThreadsSetError(&err, LayerActivateSingle(act, outsize, yf + (size_t)i * outsize));
    PetNetThreadsCheck(err, "conv forward's activation");
    if (bf16) PetNetBF16Round(n * outsize, yf, (uint16_t *)y);
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (conv->bias ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvForwardActSingle_OneDNN(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(ConvForwardAct_OneDNN(layer, act, n, theta, x, PETSC_FALSE, y));
  PetscFunctionReturn(0);
}

/* the float W of the last forward, for backward and jvp at the same point */
static PetscErrorCode ConvOneDNNCheckForward(Layer layer, const char *op)
{
  PetscFunctionBegin;
  PetscCheck(((LayerConv *)layer->data)->dnn.wset, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT ": single-precision %s on oneDNN before any single-precision forward pass: call LayerForwardSingle() first, at the same point",
             ((PetscObject)layer)->type_name, layer->index, op);
  PetscFunctionReturn(0);
}

/* backward: dx = conv^T(dy; W) (overwritten), dtheta += (dW, db) of the batch (float out of oneDNN, added in double);
   x, dy and dx float, or bfloat16 (in16: dx out of oneDNN as the float output's bits rounded, onednn.c) */
static PetscErrorCode ConvBackward_OneDNN(Layer layer, PetscInt n, const void *x, const void *dy, PetscBool in16, void *dx, PetscScalar *dtheta)
{
  LayerConv            *conv = (LayerConv *)layer->data;
  ConvOneDNN           *s    = &conv->dnn;
  const PetscInt        nw   = conv->nout * conv->kg;
  PetNetOneDNNConvShape sh;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(ConvOneDNNCheckForward(layer, "backward"));
  ConvOneDNNShape(conv, n, &sh);
  if (dx && in16)
    PetscCall(PetNetOneDNNConvBackwardDataBF16Out(&sh, s->w, (const uint16_t *)dy, (uint16_t *)dx));
  else if (dx)
    PetscCall(PetNetOneDNNConvBackwardData(layer->gemm, &sh, s->w, (const float *)dy, (float *)dx));
  if (dtheta) {
    if (in16)
      PetscCall(PetNetOneDNNConvBackwardWeightsBF16(&sh, (const uint16_t *)x, (const uint16_t *)dy, s->dw, conv->bias ? s->db : NULL));
    else
      PetscCall(PetNetOneDNNConvBackwardWeights(layer->gemm, &sh, (const float *)x, (const float *)dy, s->dw, conv->bias ? s->db : NULL));
    for (PetscInt i = 0; i < nw; i++) dtheta[i] += s->dw[i];
    if (conv->bias)
      for (PetscInt o = 0; o < conv->nout; o++) dtheta[nw + o] += s->db[o];
    PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout + (conv->bias ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  }
  if (dx) PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvBackwardSingle_OneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(ConvBackward_OneDNN(layer, n, x, dy, PETSC_FALSE, dx, dtheta));
  PetscFunctionReturn(0);
}

/* jvp: dy = conv(x; dW) + db (dtheta rounded to float), then dy += conv(dx; W) (a sum post-op); zero without either;
   x and dx float, or bfloat16 (in16), dy float */
static PetscErrorCode ConvJVP_OneDNN(Layer layer, PetscInt n, const void *x, const void *dx, PetscBool in16, const PetscScalar *dtheta, float *dy)
{
  LayerConv            *conv = (LayerConv *)layer->data;
  ConvOneDNN           *s    = &conv->dnn;
  const PetscInt        nw   = conv->nout * conv->kg;
  PetNetOneDNNConvShape sh;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscCall(ConvOneDNNCheckForward(layer, "jvp"));
  ConvOneDNNShape(conv, n, &sh);
  if (dtheta) {
    ConvOneDNNToFloat(nw, dtheta, s->dw);
    if (conv->bias) ConvOneDNNToFloat(conv->nout, dtheta + nw, s->db);
    if (in16)
      PetscCall(PetNetOneDNNConvForwardBF16(&sh, (const uint16_t *)x, s->dw, conv->bias ? s->db : NULL, 0, dy));
    else
      PetscCall(PetNetOneDNNConvForward(layer->gemm, &sh, (const float *)x, s->dw, conv->bias ? s->db : NULL, 0, dy));
  } else
    PetscCall(PetscArrayzero(dy, (size_t)n * layer->outsize)); /* the sum below adds into zero (its primitive is the only one without bias) */
  if (dx) {
    sh.bias = PETSC_FALSE;
    if (in16)
      PetscCall(PetNetOneDNNConvForwardBF16(&sh, (const uint16_t *)dx, s->w, NULL, 1, dy));
    else
      PetscCall(PetNetOneDNNConvForward(layer->gemm, &sh, (const float *)dx, s->w, NULL, 1, dy));
  }
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * conv->nout * ((dx ? 1 : 0) + (dtheta ? 1 : 0)) + (dx && dtheta ? 1.0 * n * conv->pixels * conv->nout : 0.0)));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvJVPSingle_OneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  PetscCall(ConvJVP_OneDNN(layer, n, x, dx, PETSC_FALSE, dtheta, dy));
  PetscFunctionReturn(0);
}

/*
  bfloat16 (Layer.ops forwardbf16, backwardmaskbf16, jvpbf16; src/layers/interface/layerbf16.c), where the layer's Net
  runs oneDNN's bfloat16 convolutions (Layer.bf16onednn): the ops above on the Net's stored bfloat16 values with no
  float copy of their inputs. x, dx and dy go to oneDNN's bfloat16 primitives as they are (the float ops round their
  widened copies into the same values). y (with a relu or no activation after it) and dx come out in bfloat16, the
  float output's bits rounded as the value store rounds (bf16impl.h): written by oneDNN itself where the first call of
  the shape found its bfloat16 output to be exactly that, else rounded by PetNet (PetNetOneDNNConvForwardBF16Out(),
  src/sys/onednn.c); the jvp's output, and y with another activation, come out in float into the oneDNN module's float
  scratch (PetNetOneDNNFloatScratch(), one for every layer) and are rounded here. So the same bits as the float ops on
  widened copies. A batch
  size whose shape oneDNN refuses (ConvOneDNNApplies()) runs the layer's float ops on widened copies.
*/

/* a float copy of N bfloat16 values (NULL for NULL), for the fallback */
static PetscErrorCode ConvWidenBF16(PetscInt N, const uint16_t *b, float **f)
{
  PetscFunctionBegin;
  *f = NULL;
  if (!b) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1(N, f));
  PetNetBF16Widen(N, b, *f);
  PetscFunctionReturn(0);
}

static PetscErrorCode ConvForwardActBF16_OneDNN(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  const PetscInt N = n * layer->outsize;
  PetscBool      dnn;
  float         *yf, *xf;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (!dnn) { /* this batch size falls back: the float ops on widened copies */
    PetscCall(ConvWidenBF16(n * layer->insize, x, &xf));
    PetscCall(PetscMalloc1(N, &yf));
    PetscUseTypeMethod(layer, forwardactsingle, act, n, theta, xf, yf);
    PetNetBF16Round(N, yf, y);
    PetscCall(PetscFree(yf));
    PetscCall(PetscFree(xf));
    PetscFunctionReturn(0);
  }
  PetscCall(ConvForwardAct_OneDNN(layer, act, n, theta, x, PETSC_TRUE, y));
  PetscFunctionReturn(0);
}

/* dx = J^T dy (act: no activation is fused before a convolution: it has no backwardmask), dtheta += */
static PetscErrorCode ConvBackwardMaskBF16_OneDNN(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  const PetscInt Nin = n * layer->insize, Nout = n * layer->outsize;
  PetscBool      dnn;
  float         *dxf = NULL;

  PetscFunctionBegin;
  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_SUP, "%s layer %" PetscInt_FMT ": no activation's derivative is applied in its backward pass", ((PetscObject)layer)->type_name, layer->index);
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (!dnn) {
    float *xf, *yf, *dyf;

    PetscCall(ConvWidenBF16(Nin, x, &xf));
    PetscCall(ConvWidenBF16(Nout, y, &yf));
    PetscCall(ConvWidenBF16(Nout, dy, &dyf));
    if (dx) PetscCall(PetscMalloc1(Nin, &dxf));
    PetscUseTypeMethod(layer, backwardsingle, n, theta, xf, yf, dyf, dxf, dtheta);
    if (dx) PetNetBF16Round(Nin, dxf, dx);
    PetscCall(PetscFree(dxf));
    PetscCall(PetscFree(dyf));
    PetscCall(PetscFree(yf));
    PetscCall(PetscFree(xf));
    PetscFunctionReturn(0);
  }
  PetscCall(ConvBackward_OneDNN(layer, n, x, dy, PETSC_TRUE, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode ConvJVPBF16_OneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dx, const PetscScalar *dtheta, uint16_t *dy)
{
  const PetscInt N = n * layer->outsize;
  PetscBool      dnn;
  float         *dyf;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (!dnn) {
    float *xf, *yf, *dxf;

    PetscCall(ConvWidenBF16(n * layer->insize, x, &xf));
    PetscCall(ConvWidenBF16(N, y, &yf));
    PetscCall(ConvWidenBF16(n * layer->insize, dx, &dxf));
    PetscCall(PetscMalloc1(N, &dyf));
    PetscUseTypeMethod(layer, jvpsingle, n, theta, xf, yf, dxf, dtheta, dyf);
    PetNetBF16Round(N, dyf, dy);
    PetscCall(PetscFree(dyf));
    PetscCall(PetscFree(dxf));
    PetscCall(PetscFree(yf));
    PetscCall(PetscFree(xf));
    PetscFunctionReturn(0);
  }
  PetscCall(PetNetOneDNNFloatScratch((size_t)N, &dyf));
  PetscCall(ConvJVP_OneDNN(layer, n, x, dx, PETSC_TRUE, dtheta, dyf));
  PetNetBF16Round(N, dyf, dy);
  PetscFunctionReturn(0);
}

/* the bfloat16 ops of a batch-mode convolution (or none: point form), which its Net runs where oneDNN has them */
PetscErrorCode ConvSetBF16_OneDNN(Layer layer, PetscBool on)
{
  PetscFunctionBegin;
  layer->ops->forwardbf16      = on ? ConvForwardActBF16_OneDNN : NULL;
  layer->ops->backwardmaskbf16 = on ? ConvBackwardMaskBF16_OneDNN : NULL;
  layer->ops->jvpbf16          = on ? ConvJVPBF16_OneDNN : NULL;
  layer->bf16onednn            = on;
  PetscFunctionReturn(0);
}

/*
  The base's float ops (LayerConvSetSingle_Private()): oneDNN's primitives where the layer's Net asks for them and oneDNN
  has kernels for the shape at this batch size, else the batch kernels (im2col + sgemm, or direct); the choice is the
  same for forward, backward and jvp at one point
*/
PetscErrorCode ConvForwardActSingle_Default(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvForwardActSingle_OneDNN(layer, act, n, theta, x, y));
  else
    PetscCall(ConvForwardActSingle_Batch(layer, act, n, theta, x, y));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvForwardSingle_Default(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(ConvForwardActSingle_Default(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvBackwardSingle_Default(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvBackwardSingle_OneDNN(layer, n, theta, x, y, dy, dx, dtheta));
  else
    PetscCall(ConvBackwardSingle_Batch(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

PetscErrorCode ConvJVPSingle_Default(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvJVPSingle_OneDNN(layer, n, theta, x, y, dx, dtheta, dy));
  else
    PetscCall(ConvJVPSingle_Batch(layer, n, theta, x, y, dx, dtheta, dy));
  PetscFunctionReturn(0);
}
