/*
  dense: y = x W^T + b, one GEMM over the local batch.

    x      [m][in]     row-major (sample-major)
    W      [out][in]   row-major, as PyTorch's Linear.weight
    b      [out]       (absent with -dense_bias 0)
    y      [m][out]
    theta  = [W, b]    (out*in + out entries; out*in without the bias)

  The rows: plain dense:N flattens a sample, m = n samples, in = the sample's size, output shape (N).
  dense:N:tokens (-dense_tokens) acts on the last dimension at each position, as PyTorch's nn.Linear on (n, T, E):
  a sample (..., E) -> (..., N), m = n T rows (T the product of the other dims), in = E. On a sample (E), T = 1 and
  the two are the same layer, the same bits.

  In column-major BLAS terms x is X (in x m), W is Wc = W^T (in x out), y is Y (out x m):
    forward   Y  = Wc^T X + b 1^T       dgemm('T','N', out, m, in)
    backward  dX = Wc dY                dgemm('N','N', in, m, out)
              dWc += X dY^T             dgemm('N','T', in, out, m)    (dW accumulates)
              db  += dY 1               (sum over rows)
    jvp       dY = Wc^T dX + dWc^T X + db 1^T

  Single precision (a Net at -net_precision single or bfloat16): the same kernels on float values (densekernels.h,
  included once per element type), sgemm for dgemm; theta stays double, rounded once per forward into Wf, bf (kept for
  the backward and jvp that follow at the same point); dW += X dY^T is formed in float part by part and added into the
  double dW in the part's output pass; db is summed in double.

  Output passes (LayerGemm()'s epilogue, ../../interface/layergemm.h): forward adds the bias to each GEMM part's block
  of Y while it is in cache, and applies there an activation its caller passes (forwardact: Y = f(Wc^T X
  + b 1^T)); backward multiplies each part's block of dX by the derivative of an activation fused before it
  (backwardmask: dX = f'(X) Wc dY). The same operations in the same order as the separate passes, so the same bits.

  Backend: every GEMM's epilogue carries layer->gemm, which its Net sets (NetSetBackend(): oneDNN's matmul at single
  and bfloat16, the bias fused; sgemm where oneDNN has no fast kernel; include/petnet/private/onednnimpl.h).

  Threads: each GEMM is cut into parts along the larger of its two outer dimensions (LayerGemm()), the parts from the
  sizes alone and never along the inner dimension, so the results are the same bits for any number of threads; a
  small double GEMM runs as plain loops without a parallel region, and on a batch of at most 64 rows (a pipeline's
  micro-batch) the forward and input-gradient GEMMs run on PetNet's thin AVX-512 kernels, which read W where it lies
  instead of packing it on every call as BLAS does (LayerSetGemmThinRows()).
*/
#include "dense.h"
#include "../../interface/layergemm.h"

static PetscErrorCode LayerSetUp_Dense(Layer layer)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in;

  PetscFunctionBegin;
  if (dense->same) dense->nout = layer->in.dim[layer->in.ndim - 1]; /* dense:E */
  if (dense->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "dense layer %" PetscInt_FMT " has no number of outputs: write dense:N in -net_layers (e.g. dense:128), or give -%sdense_outputs N, or call LayerDenseSetOutputSize()",
            layer->index, prefix ? prefix : "");
  }
  PetscCall(PetNetShapeSize(&layer->in, &in));
  if (dense->tokens) { /* (..., E) -> (..., N): the rows are the positions, T = size / E */
    const PetscInt E = layer->in.dim[layer->in.ndim - 1];

    layer->out                          = layer->in;
    layer->out.dim[layer->out.ndim - 1] = dense->nout;
    /* T N in 64 bits: the output sample's size must fit a PetscInt */
    PetscCheck((PetscInt64)(in / E) * dense->nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
               "dense layer %" PetscInt_FMT " (dense:%" PetscInt_FMT ":tokens on %" PetscInt_FMT " positions) would have %" PetscInt64_FMT " outputs per sample, more than a PetscInt holds (%" PetscInt_FMT
               "): give it fewer outputs or shorter sequences",
               layer->index, dense->nout, in / E, (PetscInt64)(in / E) * dense->nout, (PetscInt)PETSC_MAX_INT);
    dense->rows = in / E;
    in          = E;
  } else {
    layer->out.ndim   = 1;
    layer->out.dim[0] = dense->nout;
    dense->rows       = 1;
  }
  /* (in + 1) * out in 64-bit: a count that does not fit a PetscInt is refused here, before anything is allocated */
  PetscCheck(((PetscInt64)in + 1) * dense->nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "dense layer %" PetscInt_FMT " (dense:%" PetscInt_FMT " on %" PetscInt_FMT " inputs) would have %" PetscInt64_FMT " parameters, more than a PetscInt holds (%" PetscInt_FMT
             "): give it fewer outputs, or shrink its input (pooling, smaller layers before it)",
             layer->index, dense->nout, in, ((PetscInt64)in + 1) * dense->nout, (PetscInt)PETSC_MAX_INT);
  dense->nin     = in;
  layer->nparams = dense->nout * in + (dense->bias ? dense->nout : 0);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Dense(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     in = dense->nin, out = dense->nout, nw = in * out; /* fan-in: a row's inputs (E with tokens) */

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, dense->init, dense->initstd, in, out, nw, theta));
  if (dense->bias) PetscCall(PetscArrayzero(theta + nw, out));
  PetscFunctionReturn(0);
}

/* the parameters a double pass uses: theta itself */
static PetscErrorCode DenseParameters(Layer layer, const PetscScalar *theta, const char *op, const PetscScalar **W)
{
  PetscFunctionBegin;
  *W = theta;
  PetscFunctionReturn(0);
}

static PetscErrorCode DenseDirection(Layer layer, const PetscScalar *dtheta, const PetscScalar **dW)
{
  PetscFunctionBegin;
  *dW = dtheta;
  PetscFunctionReturn(0);
}

/* double: LayerGemm() accumulates dW in dtheta itself */
static inline PetscScalar *DenseWork(Layer layer)
{
  return NULL;
}

/*
  a forward at single precision or bfloat16: theta rounded to float once, into thetaf = [Wf, bf] (allocated here), kept
  for the backward and jvp that follow at the same point, and to bfloat16 into t16 in the same pass when given (the
  bfloat16 kernels' W16, densebf16.c: w16 says whether theta16 is the last forward's); on the threads (elementwise)
*/
PetscErrorCode DenseRoundParameters(Layer layer, const PetscScalar *theta, uint16_t *t16)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (dense->nf != layer->nparams) {
    PetscCall(PetscFree2(dense->thetaf, dense->workf));
    PetscCall(PetscMalloc2(layer->nparams, &dense->thetaf, layer->nparams, &dense->workf));
    dense->nf = layer->nparams;
  }
  {
    float *thetaf = dense->thetaf;

    if (t16)
      PetNetBF16RoundDouble(layer->nparams, theta, thetaf, t16);
    else
      PETNET_THREAD_BLOCKS(layer->nparams, 16384, for (PetscInt i = i0; i < i1; i++) thetaf[i] = (float)theta[i]);
  }
  dense->w16 = (PetscBool)(t16 != NULL);
  PetscFunctionReturn(0);
}

/* single precision: forward (op "forward") rounds the parameters (DenseRoundParameters()); the others use them */
static PetscErrorCode DenseParametersSingle(Layer layer, const PetscScalar *theta, const char *op, const float **W)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (op[0] == 'f') PetscCall(DenseRoundParameters(layer, theta, NULL));
  PetscCheck(dense->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the single-precision %s follows a single-precision forward at the same point (LayerForwardSingle())", layer->index, op);
  *W = dense->thetaf;
  PetscFunctionReturn(0);
}

/* the direction dtheta rounded to float, in workf */
PetscErrorCode DenseDirectionSingle(Layer layer, const PetscScalar *dtheta, const float **dW)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCheck(dense->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": the single-precision jvp follows a single-precision forward at the same point (LayerForwardSingle())", layer->index);
  for (PetscInt i = 0; i < layer->nparams; i++) dense->workf[i] = (float)dtheta[i];
  *dW = dense->workf;
  PetscFunctionReturn(0);
}

/* float: each part's dW block is formed in workf, then added into the double dW */
static inline float *DenseWorkSingle(Layer layer)
{
  return ((Layer_Dense *)layer->data)->workf;
}

#define DENSE_T       PetscScalar
#define DENSE_NAME(f) f
#include "densekernels.h"
#undef DENSE_T
#undef DENSE_NAME
#define DENSE_T       float
#define DENSE_NAME(f) f##Single
#include "densekernels.h"
#undef DENSE_T
#undef DENSE_NAME

/* sobackward: backward is bilinear in (W, x) and dy: dxdot += Wdot dy, dWdot += xdot dy^T; the bias term is zero */
static PetscErrorCode LayerSOBackward_Dense(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                            PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, m = n * dense->rows;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (dxdot && thetadot) {
    PetscCall(LayerGemm(PETSC_TRUE, 'N', 'N', in, m, out, thetadot, in, dy, out, 1.0, dxdot, in, NULL));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
  }
  if (dthetadot && xdot) {
    PetscCall(LayerGemm(PETSC_TRUE, 'N', 'T', in, out, m, xdot, in, dy, out, 1.0, dthetadot, in, NULL));
    PetscCall(PetscLogFlops(2.0 * m * in * out));
  }
  PetscFunctionReturn(0);
}

/* PyTorch Linear: weight [out][in] (our layout; the Net permutes in when it comes from a flattened (h, w, c) tensor;
   with tokens in is the last dimension E, which nothing permutes), bias [out] */
static PetscErrorCode LayerTensors_Dense(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Dense   *dense = (Layer_Dense *)layer->data;
  const PetscInt in = dense->nin, out = dense->nout, w[2] = {out, in};

  PetscFunctionBegin;
  PetscCall(LayerTensorSet_Private(&info[0], "weight", 0, dense->tokens ? LAYER_TENSOR_SAME : LAYER_TENSOR_FEATURES, 2, w));
  PetscCall(LayerTensorSet_Private(&info[1], "bias", in * out, LAYER_TENSOR_SAME, 1, &out));
  *n = dense->bias ? 2 : 1;
  PetscFunctionReturn(0);
}

/* N[:bias=0|1][:tokens], the words after N in any order; N may be E, the input's last dimension */
static PetscErrorCode LayerSetArguments_Dense(Layer layer, const char args[])
{
  char     *end;
  long      nout = strtol(args, &end, 10);
  PetscBool bias = PETSC_TRUE, tokens = PETSC_FALSE, same = PETSC_FALSE;

  PetscFunctionBegin;
  if (args[0] == 'E' && (args[1] == ':' || !args[1])) { /* dense:E */
    same = PETSC_TRUE;
    nout = 1;
    end  = (char *)args + 1;
  }
  while (end != args && *end == ':') {
    const char *word = end + 1;
    size_t      len  = strcspn(word, ":");

    if (len == 6 && (!strncmp(word, "bias=0", 6) || !strncmp(word, "bias=1", 6)))
      bias = (PetscBool)(word[5] == '1');
    else if (len == 6 && !strncmp(word, "tokens", 6))
      tokens = PETSC_TRUE;
    else
      SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"dense:%s\": after the number of outputs dense takes only bias=0, bias=1 and tokens, e.g. dense:128:bias=0 or dense:128:tokens", args);
    end = (char *)word + len;
  }
  PetscCheck(end != args && !*end && nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"dense:%s\": dense takes one positive integer, its number of outputs, e.g. dense:128 (and optionally :bias=0, :tokens)", args);
  PetscCheck(nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dense:%s: the number of outputs is more than %d, the largest PetscInt", args, PETSC_MAX_INT);
  PetscCall(LayerDenseSetOutputSize(layer, same ? PETSC_DECIDE : (PetscInt)nout));
  PetscCall(LayerDenseSetBias(layer, bias));
  PetscCall(LayerDenseSetTokens(layer, tokens));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Dense(Layer layer, size_t len, char args[])
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (dense->same)
    PetscCall(PetscSNPrintf(args, len, "E%s%s", dense->bias ? "" : ":bias=0", dense->tokens ? ":tokens" : ""));
  else
    PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s%s", dense->nout, dense->bias ? "" : ":bias=0", dense->tokens ? ":tokens" : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Dense(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;
  PetscInt     nout  = dense->nout;
  PetscBool    bias = dense->bias, tokens = dense->tokens, set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Dense layer options");
  PetscCall(PetNetOptionsInt("-dense_outputs", "Number of outputs", "LayerDenseSetOutputSize", nout, &nout, &set));
  if (set && (nout != dense->nout || dense->same)) PetscCall(LayerDenseSetOutputSize(layer, nout));
  PetscCall(PetscOptionsBool("-dense_bias", "Add a bias per output", "LayerDenseSetBias", bias, &bias, &set));
  if (set) PetscCall(LayerDenseSetBias(layer, bias));
  PetscCall(PetscOptionsBool("-dense_tokens", "Apply the layer to the last dimension at each position, (..., E) -> (..., N)", "LayerDenseSetTokens", tokens, &tokens, &set));
  if (set) PetscCall(LayerDenseSetTokens(layer, tokens));
  PetscCall(PetscOptionsEnum("-dense_init", "Weight initialisation", "LayerDenseSetInitialization", LayerInitTypes, (PetscEnum)dense->init, (PetscEnum *)&dense->init, NULL));
  PetscCall(PetscOptionsReal("-dense_init_std", "Standard deviation for -dense_init normal", "LayerDenseSetInitialization", dense->initstd, &dense->initstd, NULL));
  PetscCheck(dense->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-dense_init_std must be non-negative, not %g", (double)dense->initstd);
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Dense(Layer layer, PetscViewer viewer)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "outputs %" PetscInt_FMT "%s%s, initialisation %s", dense->nout, dense->bias ? "" : " (no bias)", dense->tokens ? " at each position (tokens)" : "", LayerInitTypes[dense->init]));
  if (dense->init == LAYER_INIT_NORMAL) PetscCall(PetscViewerASCIIPrintf(viewer, " (std %g)", (double)dense->initstd));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Dense(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetOutputSize_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetInitialization_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetBias_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetTokens_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseGetTokens_C", NULL));
  {
    Layer_Dense *dense = (Layer_Dense *)layer->data;

    PetscCall(PetscFree2(dense->thetaf, dense->workf));
    PetscCall(PetscFree2(dense->theta16, dense->work16));
  }
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetOutputSize_Dense(Layer layer, PetscInt nout)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0 || nout == PETSC_DECIDE, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dense layer outputs must be positive (or PETSC_DECIDE: as many as the input's last dimension), not %" PetscInt_FMT, nout);
  if (layer->setupcalled && (nout != dense->nout || dense->same != (nout == PETSC_DECIDE))) PetscCall(LayerReset(layer));
  dense->same = (PetscBool)(nout == PETSC_DECIDE);
  dense->nout = dense->same ? 0 : nout;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetBias_Dense(Layer layer, PetscBool bias)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != dense->bias) PetscCall(LayerReset(layer));
  dense->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetTokens_Dense(Layer layer, PetscBool tokens)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && tokens != dense->tokens) PetscCall(LayerReset(layer));
  dense->tokens = tokens;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseGetTokens_Dense(Layer layer, PetscBool *tokens, PetscInt *nin, PetscInt *rows)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  PetscCheck(layer->setupcalled || (!nin && !rows), PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "dense layer %" PetscInt_FMT ": its rows and their inputs are known after LayerSetUp() (NetSetUp())", layer->index);
  if (tokens) *tokens = dense->tokens;
  if (nin) *nin = dense->nin;
  if (rows) *rows = dense->rows;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDenseSetInitialization_Dense(Layer layer, LayerInitType init, PetscReal std)
{
  Layer_Dense *dense = (Layer_Dense *)layer->data;

  PetscFunctionBegin;
  dense->init    = init;
  dense->initstd = std;
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetOutputSize - the number of outputs of a dense layer, y = x W^T + b

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
- nout  - the number of outputs, > 0, or `PETSC_DECIDE` for as many as the input's last dimension (set at set-up)

  Options Database Key:
. -<prefix>dense_outputs <n> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dense:N (LayerSetArguments()), and dense:E for `PETSC_DECIDE` (e.g. dense:E:tokens, the last
  projection of a transformer's MLP, which gives back the width E it was given). A dense layer needs it: set-up fails without. Changing it on a
  layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards (NetSetFromOptions() does
  so itself for -dense_outputs). The layer's parameters are W, nout x (input size) entries, then b, nout entries.

  Level: beginner

.seealso: `LayerDenseSetInitialization()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerDenseSetOutputSize(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDenseSetOutputSize_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetInitialization - how the weights start (the bias starts at zero); std is used by LAYER_INIT_NORMAL.

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
. init  - `LAYER_INIT_KAIMING` (the default), `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS`
- std   - the standard deviation of `LAYER_INIT_NORMAL` (default 0.01)

  Options Database Keys:
+ -<prefix>dense_init <kaiming,xavier,normal,zeros> - the distribution
- -<prefix>dense_init_std <std>                     - the standard deviation of normal

  Notes:
  Takes effect at the next initialisation of the parameters (NetSetUp(), NetInitializeParameters()), with fan-in the
  layer's input size and fan-out its number of outputs (LayerInitializeWeights()).

  Level: intermediate

.seealso: `LayerDenseSetOutputSize()`, `LayerInitializeWeights()`, `NetInitializeParameters()`
@*/
PetscErrorCode LayerDenseSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDenseSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetBias - sets whether a dense layer adds a bias per output (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ layer - a dense layer (layers of other kinds ignore the call)
- bias  - `PETSC_TRUE` for y = x W^T + b, `PETSC_FALSE` for y = x W^T

  Options Database Key:
. -<prefix>dense_bias <bool> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dense:N:bias=0. Without the bias the layer's parameters are W alone. Changing it on a layer that
  is set up resets the layer. A copy of the layer computing one block of the weights (a block of W's columns) leaves
  the bias to the copy of the first block.

  Level: intermediate

.seealso: `LayerDenseSetOutputSize()`, `LayerConv2dSetBias()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerDenseSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidLogicalCollectiveBool(layer, bias, 2);
  PetscTryMethod(layer, "LayerDenseSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseSetTokens - sets whether a dense layer acts on the last dimension at each position of a sample (a token of
  a sequence), (..., E) -> (..., N), as PyTorch's nn.Linear on a tensor (n, T, E); or flattens the sample, (f) -> (N)
  (`PETSC_FALSE`, the default)

  Logically collective

  Input Parameters:
+ layer  - a dense layer (layers of other kinds ignore the call)
- tokens - `PETSC_TRUE` for y[t] = W x[t] + b at each of the T positions (T the product of the sample's other
           dimensions), `PETSC_FALSE` for y = W x + b on the flattened sample

  Options Database Key:
. -<prefix>dense_tokens <bool> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dense:N:tokens (with dense:N:bias=0:tokens for no bias). W is [N][E], E the last dimension of
  the input, shared by the positions, in PyTorch's nn.Linear layout; the output has the input's shape with its last
  dimension N. The kernels run one GEMM over the n T rows of the local batch. On a sample of one dimension (E) the
  layer is the plain dense layer. Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerDenseGetTokens()`, `LayerDenseSetOutputSize()`, `LayerDenseSetBias()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerDenseSetTokens(Layer layer, PetscBool tokens)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidLogicalCollectiveBool(layer, tokens, 2);
  PetscTryMethod(layer, "LayerDenseSetTokens_C", (Layer, PetscBool), (layer, tokens));
  PetscFunctionReturn(0);
}

/*@
  LayerDenseGetTokens - how a dense layer's GEMM sees a sample: whether it acts at each position (tokens), the inputs
  of one GEMM row and the rows per sample

  Not collective

  Input Parameter:
. layer - a dense layer

  Output Parameters:
+ tokens - whether it acts on the last dimension at each position (`LayerDenseSetTokens()`), or NULL
. nin    - the inputs of a row: the last dimension E with tokens, the sample's size without (after set-up), or NULL
- rows   - the rows per sample: the number of positions T with tokens, 1 without (after set-up), or NULL

  Notes:
  The weight W is [N][nin] and a batch of n samples is n rows x nin inputs: what a caller that forms statistics
  over the rows (K-FAC's factors) needs. Layers of other kinds leave the outputs unset.

  Level: developer

.seealso: `LayerDenseSetTokens()`, `LayerDenseSetOutputSize()`
@*/
PetscErrorCode LayerDenseGetTokens(Layer layer, PetscBool *tokens, PetscInt *nin, PetscInt *rows)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDenseGetTokens_C", (Layer, PetscBool *, PetscInt *, PetscInt *), (layer, tokens, nin, rows));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Dense(Layer layer)
{
  Layer_Dense *dense;

  PetscFunctionBegin;
  PetscCall(PetscNew(&dense));
  dense->bias            = PETSC_TRUE;
  dense->init            = LAYER_INIT_KAIMING;
  dense->initstd         = 0.01;
  layer->data            = dense;
  layer->ops->setup      = LayerSetUp_Dense;
  layer->ops->initialize = LayerInitialize_Dense;
  layer->ops->forward    = DenseForward;
  layer->ops->backward   = DenseBackward;
  layer->gradfree        = PETSC_TRUE; /* dW = x^T dy, db = sum dy: W is not read */
  layer->actonly         = PETSC_TRUE; /* backward and jvp read x (and theta) alone */
  /* an activation after it in forward's output pass, one before it in dx's, in double and float (densekernels.h) */
  layer->ops->forwardact         = DenseForwardAct;
  layer->ops->forwardactsingle   = DenseForwardActSingle;
  layer->ops->backwardmask       = DenseBackwardMask;
  layer->ops->backwardmasksingle = DenseBackwardMaskSingle;
  layer->ops->jvp                = DenseJVP;
  layer->ops->forwardsingle      = DenseForwardSingle;
  layer->ops->backwardsingle     = DenseBackwardSingle;
  layer->ops->jvpsingle          = DenseJVPSingle;
  PetscCall(DenseSetBF16(layer)); /* and on the stored bfloat16 values through oneDNN (densebf16.c) */
  layer->ops->sobackward     = LayerSOBackward_Dense;
  layer->ops->tensors        = LayerTensors_Dense;
  layer->ops->setarguments   = LayerSetArguments_Dense;
  layer->ops->getarguments   = LayerGetArguments_Dense;
  layer->ops->setfromoptions = LayerSetFromOptions_Dense;
  layer->ops->view           = LayerView_Dense;
  layer->ops->destroy        = LayerDestroy_Dense;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetOutputSize_C", LayerDenseSetOutputSize_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetInitialization_C", LayerDenseSetInitialization_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetBias_C", LayerDenseSetBias_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseSetTokens_C", LayerDenseSetTokens_Dense));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDenseGetTokens_C", LayerDenseGetTokens_Dense));
  PetscFunctionReturn(0);
}
