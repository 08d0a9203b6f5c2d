/*
  convtranspose2d: settings (OUT[:K[:STRIDE[:PAD]]] and named output_padding=, dilation=, groups=, bias=;
  -convtranspose2d_* options), set-up of the shapes and of the convolutions' im2col geometry, initialisation, PyTorch tensor
  names, the layer's operations and the public setters. Layouts, formulas and kernels: convtranspose2d.h and
  convtranspose2dkernels.c.
*/
#include "convtranspose2d.h"
#include "../pool/window.h"

/* a pair setting of a 2-D window ("3", "3x5"), through the shared window parser */
static PetscErrorCode CTParsePair(MPI_Comm comm, const char name[], const char str[], PetscInt pair[2])
{
  PetscInt v[3] = {0, 0, 0}, n = 0;

  PetscFunctionBegin;
  PetscCall(LayerWindowParse(comm, name, str, 2, v, &n));
  pair[0] = v[0];
  pair[1] = v[1];
  PetscFunctionReturn(0);
}

static const char *const CTWindowNames[] = {"kernel", "stride", "padding", "output padding", "dilation"};

static PetscInt *CTWindowPair(Layer_ConvTranspose2d *ct, PetscInt which)
{
  PetscInt *pairs[] = {ct->k, ct->stride, ct->pad, ct->outpad, ct->dilation};

  return pairs[which];
}

static PetscErrorCode ConvTranspose2dReset(Layer layer)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  for (int d = 0; d < 2; d++) PetscCall(PetscFree2(ct->t0[d], ct->t1[d]));
  PetscCall(PetscFree(ct->col));
  PetscCall(PetscFree(ct->dwpart));
  ct->chunk = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_ConvTranspose2d(Layer layer)
{
  Layer_ConvTranspose2d *ct   = (Layer_ConvTranspose2d *)layer->data;
  MPI_Comm               comm = PetscObjectComm((PetscObject)layer);
  char                   shape[64];
  PetscInt64             nparams;
  PetscReal              chunk;

  PetscFunctionBegin;
  PetscCall(ConvTranspose2dReset(layer));
  if (ct->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "convtranspose2d layer %" PetscInt_FMT " has no number of output channels: write convtranspose2d:OUT in -net_layers (e.g. convtranspose2d:16:2:2), or give -%sconvtranspose2d_outputs OUT", layer->index,
            prefix ? prefix : "");
  }
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 3, comm, PETSC_ERR_ARG_SIZ,
             "convtranspose2d layer %" PetscInt_FMT " has input shape %s: it takes (height, width, channels) samples; put it before the flatten (or dense layer) that flattens them, or give -net_input_shape HxWxC", layer->index, shape);
  ct->cin = layer->in.dim[2];
  PetscCheck(ct->cin % ct->groups == 0 && ct->nout % ct->groups == 0, comm, PETSC_ERR_ARG_INCOMP,
             "convtranspose2d layer %" PetscInt_FMT ": groups (%" PetscInt_FMT ") must divide the input channels (%" PetscInt_FMT ") and the output channels (%" PetscInt_FMT ")", layer->index, ct->groups, ct->cin, ct->nout);
  for (int d = 0; d < 2; d++) {
    PetscInt64 out;

    PetscCheck(ct->outpad[d] < PetscMax(ct->stride[d], ct->dilation[d]), comm, PETSC_ERR_ARG_OUTOFRANGE,
               "convtranspose2d layer %" PetscInt_FMT ": output_padding %" PetscInt_FMT " must be smaller than the stride %" PetscInt_FMT " or the dilation %" PetscInt_FMT
               " (as in PyTorch): it only picks among the output sizes that give the same input size",
               layer->index, ct->outpad[d], ct->stride[d], ct->dilation[d]);
    ct->in[d] = layer->in.dim[d];
    out       = (PetscInt64)(ct->in[d] - 1) * ct->stride[d] - 2 * (PetscInt64)ct->pad[d] + (PetscInt64)ct->dilation[d] * (ct->k[d] - 1) + ct->outpad[d] + 1;
    PetscCheck(out >= 1 && out <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "convtranspose2d layer %" PetscInt_FMT ": on input %s the output would have %" PetscInt64_FMT " %s (stride %" PetscInt_FMT ", padding %" PetscInt_FMT ", kernel %" PetscInt_FMT ", dilation %" PetscInt_FMT "): reduce the padding",
               layer->index, shape, out, d ? "columns" : "rows", ct->stride[d], ct->pad[d], ct->k[d], ct->dilation[d]);
    ct->out[d] = (PetscInt)out;
    /* the taps of input index o that land inside the output: o s - p + t dil in [0, out) */
    PetscCall(PetscMalloc2(ct->in[d], &ct->t0[d], ct->in[d], &ct->t1[d]));
    for (PetscInt o = 0; o < ct->in[d]; o++) {
      PetscInt first = ct->k[d], last = -1;

      for (PetscInt t = 0; t < ct->k[d]; t++) {
        const PetscInt64 i = (PetscInt64)o * ct->stride[d] - ct->pad[d] + (PetscInt64)t * ct->dilation[d];

        if (i >= 0 && i < ct->out[d]) {
          first = PetscMin(first, t);
          last  = t;
        }
      }
      ct->t0[d][o] = last < 0 ? 0 : first;
      ct->t1[d][o] = last < 0 ? 0 : last + 1;
    }
  }
  ct->cig  = ct->cin / ct->groups;
  ct->cog  = ct->nout / ct->groups;
  ct->kg   = ct->k[0] * ct->k[1] * ct->cog;
  ct->ktot = ct->groups * ct->kg;
  nparams  = (PetscInt64)ct->cin * ct->k[0] * ct->k[1] * ct->cog + (ct->bias ? ct->nout : 0);
  PetscCheck(nparams <= PETSC_MAX_INT && (PetscInt64)ct->in[0] * ct->in[1] * ct->k[0] * ct->k[1] * ct->nout <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "convtranspose2d layer %" PetscInt_FMT " (%" PetscInt_FMT " outputs, kernel %" PetscInt_FMT "x%" PetscInt_FMT ") on input %s is larger than the largest PetscInt: make it smaller", layer->index, ct->nout, ct->k[0], ct->k[1], shape);
  layer->nparams = (PetscInt)nparams;
  ct->geom       = (ConvIm2col){
            .out      = {1, ct->in[0], ct->in[1]},
            .k        = {1, ct->k[0], ct->k[1]},
            .step     = {1, ct->stride[0], ct->stride[1]},
            .dilation = {1, ct->dilation[0], ct->dilation[1]},
            .origin   = {0, -ct->pad[0], -ct->pad[1]},
            .ld       = {0, ct->out[1] * ct->nout},
            .cin      = ct->nout,
            .cg       = ct->cog,
            .groups   = ct->groups,
            .t0       = {NULL, ct->t0[0], ct->t0[1]},
            .t1       = {NULL, ct->t1[0], ct->t1[1]},
  };
  ConvIm2colSetFlatDepth(&ct->geom);
  chunk     = PetscFloorReal(ct->maxworkspace * 1024 * 1024 / ((PetscReal)ct->in[0] * ct->in[1] * ct->ktot * sizeof(PetscScalar)));
  ct->chunk = (PetscInt)PetscMax(1.0, PetscMin(chunk, 1024.0));
  PetscCall(PetscMalloc1((size_t)ct->chunk * ct->in[0] * ct->in[1] * ct->ktot, &ct->col));
  PetscCall(PetscMalloc1((size_t)PETNET_THREAD_PARTS * (ct->cin * ct->kg + ct->nout), &ct->dwpart));
  layer->out.dim[0] = ct->out[0];
  layer->out.dim[1] = ct->out[1];
  layer->out.dim[2] = ct->nout;
  PetscFunctionReturn(0);
}

/*
  Weights as conv2d's (-convtranspose2d_init kaiming, xavier, normal, zeros) with fan_in the number of products summed
  into an output value, Cin/G KH KW / (SH SW) on average (at least 1), and fan_out = Cout/G KH KW; bias zero.
*/
static PetscErrorCode LayerInitialize_ConvTranspose2d(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_ConvTranspose2d *ct     = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         nw     = ct->cin * ct->kg;
  const PetscReal        fanin  = PetscMax(1.0, (PetscReal)ct->cig * ct->k[0] * ct->k[1] / ((PetscReal)ct->stride[0] * ct->stride[1]));
  const PetscReal        fanout = (PetscReal)ct->kg;

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, ct->init, ct->initstd, fanin, fanout, nw, theta));
  if (ct->bias) PetscCall(PetscArrayzero(theta + nw, ct->nout));
  PetscFunctionReturn(0);
}

/* PyTorch's ConvTranspose2d: weight [Cin][Cout/G][KH][KW] (ours [Cin][KH][KW][Cout/G]: LAYER_TENSOR_CHANNELS_LAST), bias [Cout] */
static PetscErrorCode LayerTensors_ConvTranspose2d(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_ConvTranspose2d *ct   = (Layer_ConvTranspose2d *)layer->data;
  const PetscInt         w[4] = {ct->cin, ct->cog, ct->k[0], ct->k[1]};

  PetscFunctionBegin;
  PetscCall(LayerTensorSet_Private(&info[0], "weight", 0, LAYER_TENSOR_CHANNELS_LAST, 4, w));
  PetscCall(LayerTensorSet_Private(&info[1], "bias", ct->cin * ct->kg, LAYER_TENSOR_SAME, 1, &ct->nout));
  *n = ct->bias ? 2 : 1;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvTranspose2dSetOutputChannels_ConvTranspose2d(Layer layer, PetscInt nout)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "convtranspose2d output channels must be positive, not %" PetscInt_FMT, nout);
  if (layer->setupcalled && nout != ct->nout) PetscCall(LayerReset(layer));
  ct->nout = nout;
  PetscFunctionReturn(0);
}

/* which: 0 kernel, 1 stride, 2 padding, 3 output padding, 4 dilation */
static PetscErrorCode LayerConvTranspose2dSetWindow_ConvTranspose2d(Layer layer, PetscInt which, PetscInt a, PetscInt b)
{
  Layer_ConvTranspose2d *ct          = (Layer_ConvTranspose2d *)layer->data;
  PetscInt              *pair        = CTWindowPair(ct, which);
  const PetscBool        nonnegative = (PetscBool)(which == 2 || which == 3);

  PetscFunctionBegin;
  PetscCheck(nonnegative ? (a >= 0 && b >= 0) : (a > 0 && b > 0), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "convtranspose2d %s must be %s, not %" PetscInt_FMT "x%" PetscInt_FMT, CTWindowNames[which],
             nonnegative ? "non-negative" : "positive", a, b);
  if (layer->setupcalled && (a != pair[0] || b != pair[1])) PetscCall(LayerReset(layer));
  pair[0] = a;
  pair[1] = b;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvTranspose2dSetGroups_ConvTranspose2d(Layer layer, PetscInt groups)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(groups > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "convtranspose2d groups must be positive, not %" PetscInt_FMT, groups);
  if (layer->setupcalled && groups != ct->groups) PetscCall(LayerReset(layer));
  ct->groups = groups;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvTranspose2dSetBias_ConvTranspose2d(Layer layer, PetscBool bias)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != ct->bias) PetscCall(LayerReset(layer));
  ct->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvTranspose2dSetInitialization_ConvTranspose2d(Layer layer, LayerInitType init, PetscReal std)
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(std >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "convtranspose2d: the standard deviation of the initialisation must be non-negative, not %g", (double)std);
  ct->init    = init;
  ct->initstd = std;
  PetscFunctionReturn(0);
}

/* OUT[:K[:STRIDE[:PAD]]] then any of output_padding=P, dilation=D, groups=G, bias=0|1; K, STRIDE, PAD, P, D as 3 or 3x5 */
static PetscErrorCode LayerSetArguments_ConvTranspose2d(Layer layer, const char args[])
{
  MPI_Comm comm = PetscObjectComm((PetscObject)layer);
  char     copy[256], *field, *saveptr = NULL;
  PetscInt npositional = 0, pair[2] = {0, 0};

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "convtranspose2d:%.64s... is longer than %zu characters: give at most OUT:K:STRIDE:PAD and the named settings", args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr)) {
    char *value = strchr(field, '=');

    if (value) {
      char     *end;
      long      v;
      PetscBool isoutpad, isdil, isgroups, isbias;

      *value++ = 0;
      PetscCall(PetscStrcmp(field, "output_padding", &isoutpad));
      PetscCall(PetscStrcmp(field, "dilation", &isdil));
      PetscCall(PetscStrcmp(field, "groups", &isgroups));
      PetscCall(PetscStrcmp(field, "bias", &isbias));
      PetscCheck(isoutpad || isdil || isgroups || isbias, comm, PETSC_ERR_ARG_WRONG, "convtranspose2d: unknown setting \"%s\" in \"%s\"; the named settings are output_padding=, dilation=, groups= and bias=", field, args);
      if (isoutpad || isdil) {
        PetscCall(CTParsePair(comm, isoutpad ? "The convtranspose2d output_padding" : "The convtranspose2d dilation", value, pair));
        PetscCall(LayerConvTranspose2dSetWindow_ConvTranspose2d(layer, isoutpad ? 3 : 4, pair[0], pair[1]));
        continue;
      }
      v = strtol(value, &end, 10);
      PetscCheck(end != value && !*end && v >= PETSC_MIN_INT && v <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "convtranspose2d: %s= takes an integer, not \"%s\"", field, value);
      if (isgroups)
        PetscCall(LayerConvTranspose2dSetGroups_ConvTranspose2d(layer, (PetscInt)v));
      else
        PetscCall(LayerConvTranspose2dSetBias_ConvTranspose2d(layer, v ? PETSC_TRUE : PETSC_FALSE));
      continue;
    }
    PetscCheck(npositional < 4, comm, PETSC_ERR_ARG_WRONG, "convtranspose2d takes at most OUT:K:STRIDE:PAD before the named settings (e.g. convtranspose2d:16:3:2:1:output_padding=1), not \"%s\"", args);
    if (npositional == 0) {
      char *end;
      long  nout = strtol(field, &end, 10);

      PetscCheck(end != field && !*end && nout > 0 && nout <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "convtranspose2d: the number of output channels must be a positive integer (e.g. convtranspose2d:16), not \"%s\"", field);
      PetscCall(LayerConvTranspose2dSetOutputChannels_ConvTranspose2d(layer, (PetscInt)nout));
    } else {
      PetscCall(CTParsePair(comm, npositional == 1 ? "The convtranspose2d kernel" : npositional == 2 ? "The convtranspose2d stride" : "The convtranspose2d padding", field, pair));
      PetscCall(LayerConvTranspose2dSetWindow_ConvTranspose2d(layer, npositional - 1, pair[0], pair[1]));
    }
    npositional++;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_ConvTranspose2d(Layer layer, size_t len, char args[])
{
  Layer_ConvTranspose2d *ct = (Layer_ConvTranspose2d *)layer->data;
  char                   k[32], s[32], p[32], text[32];
  size_t                 used;

  PetscFunctionBegin;
  PetscCall(LayerWindowToString(ct->k, 2, sizeof(k), k));
  PetscCall(LayerWindowToString(ct->stride, 2, sizeof(s), s));
  PetscCall(LayerWindowToString(ct->pad, 2, sizeof(p), p));
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%s:%s:%s", ct->nout, k, s, p));
  if (ct->outpad[0] || ct->outpad[1]) {
    PetscCall(LayerWindowToString(ct->outpad, 2, sizeof(text), text));
    PetscCall(PetscStrlen(args, &used));
    PetscCall(PetscSNPrintf(args + used, len - used, ":output_padding=%s", text));
  }
  if (ct->dilation[0] != 1 || ct->dilation[1] != 1) {
    PetscCall(LayerWindowToString(ct->dilation, 2, sizeof(text), text));
    PetscCall(PetscStrlen(args, &used));
    PetscCall(PetscSNPrintf(args + used, len - used, ":dilation=%s", text));
  }
  PetscCall(PetscStrlen(args, &used));
  if (ct->groups != 1) {
    PetscCall(PetscSNPrintf(args + used, len - used, ":groups=%" PetscInt_FMT, ct->groups));
    PetscCall(PetscStrlen(args, &used));
  }
  if (!ct->bias) PetscCall(PetscSNPrintf(args + used, len - used, ":bias=0"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_ConvTranspose2d(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_ConvTranspose2d *ct   = (Layer_ConvTranspose2d *)layer->data;
  PetscInt               nout = ct->nout, groups = ct->groups;
  PetscBool              bias = ct->bias, set;
  LayerInitType          init = ct->init;
  PetscReal              std = ct->initstd, mb = ct->maxworkspace;
  const char *const      opts[] = {"-convtranspose2d_kernel", "-convtranspose2d_stride", "-convtranspose2d_padding", "-convtranspose2d_output_padding", "-convtranspose2d_dilation"};
  const char *const      mans[] = {"LayerConvTranspose2dSetKernel", "LayerConvTranspose2dSetStride", "LayerConvTranspose2dSetPadding", "LayerConvTranspose2dSetOutputPadding", "LayerConvTranspose2dSetDilation"};

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "2-D transposed convolution layer options");
  PetscCall(PetNetOptionsInt("-convtranspose2d_outputs", "Number of output channels", "LayerConvTranspose2dSetOutputChannels", nout, &nout, &set));
  if (set) PetscCall(LayerConvTranspose2dSetOutputChannels_ConvTranspose2d(layer, nout));
  for (PetscInt w = 0; w < 5; w++) {
    PetscInt pair[2] = {0, 0};
    char     value[64], text[96];

    PetscCall(LayerWindowToString(CTWindowPair(ct, w), 2, sizeof(value), value));
    PetscCall(PetscSNPrintf(text, sizeof(text), "The %s, one value or a pair HxW", CTWindowNames[w]));
    PetscCall(PetscOptionsString(opts[w], text, mans[w], value, value, sizeof(value), &set));
    if (set) {
      PetscCall(CTParsePair(PetscObjectComm((PetscObject)layer), opts[w], value, pair));
      PetscCall(LayerConvTranspose2dSetWindow_ConvTranspose2d(layer, w, pair[0], pair[1]));
    }
  }
  PetscCall(PetNetOptionsInt("-convtranspose2d_groups", "Number of groups (divides the input and output channels)", "LayerConvTranspose2dSetGroups", groups, &groups, &set));
  if (set) PetscCall(LayerConvTranspose2dSetGroups_ConvTranspose2d(layer, groups));
  PetscCall(PetscOptionsBool("-convtranspose2d_bias", "Add a bias per output channel", "LayerConvTranspose2dSetBias", bias, &bias, &set));
  if (set) PetscCall(LayerConvTranspose2dSetBias_ConvTranspose2d(layer, bias));
  PetscCall(PetscOptionsEnum("-convtranspose2d_init", "Weight initialisation", "LayerConvTranspose2dSetInitialization", LayerInitTypes, (PetscEnum)init, (PetscEnum *)&init, NULL));
  PetscCall(PetscOptionsReal("-convtranspose2d_init_std", "Standard deviation for -convtranspose2d_init normal", "LayerConvTranspose2dSetInitialization", std, &std, NULL));
  PetscCall(LayerConvTranspose2dSetInitialization_ConvTranspose2d(layer, init, std));
  PetscCall(PetscOptionsReal("-convtranspose2d_max_workspace", "Workspace in MB of one chunk of samples (the columns): the batch is processed chunk by chunk", "", mb, &mb, &set));
  if (set) {
    PetscCheck(mb > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-convtranspose2d_max_workspace must be positive, not %g", (double)mb);
    if (layer->setupcalled && mb != ct->maxworkspace) PetscCall(LayerReset(layer));
    ct->maxworkspace = mb;
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_ConvTranspose2d(Layer layer, PetscViewer viewer)
{
  Layer_ConvTranspose2d *ct      = (Layer_ConvTranspose2d *)layer->data;
  char                   std[64] = "";

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "outputs %" PetscInt_FMT ", kernel %" PetscInt_FMT "x%" PetscInt_FMT ", stride %" PetscInt_FMT "x%" PetscInt_FMT ", padding %" PetscInt_FMT "x%" PetscInt_FMT ", output padding %" PetscInt_FMT "x%" PetscInt_FMT
                                   ", dilation %" PetscInt_FMT "x%" PetscInt_FMT ", groups %" PetscInt_FMT ", %s\n",
                                   ct->nout, ct->k[0], ct->k[1], ct->stride[0], ct->stride[1], ct->pad[0], ct->pad[1], ct->outpad[0], ct->outpad[1], ct->dilation[0], ct->dilation[1], ct->groups, ct->bias ? "bias" : "no bias"));
  if (ct->init == LAYER_INIT_NORMAL) PetscCall(PetscSNPrintf(std, sizeof(std), " (std %g)", (double)ct->initstd));
  PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s, GEMM + col2im in chunks of samples in %.2f MB of workspace\n", LayerInitTypes[ct->init], std, (double)ct->maxworkspace));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_ConvTranspose2d(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(ConvTranspose2dReset(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetOutputChannels_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetWindow_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetGroups_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetBias_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetInitialization_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* Defaults: kernel 3x3, stride 1, no padding or output padding, dilation 1, one group, bias, Kaiming normal weights */
PETSC_INTERN PetscErrorCode LayerCreate_ConvTranspose2d(Layer layer)
{
  Layer_ConvTranspose2d *ct;

  PetscFunctionBegin;
  PetscCall(PetscNew(&ct));
  ct->k[0] = ct->k[1] = 3;
  ct->stride[0] = ct->stride[1] = 1;
  ct->dilation[0] = ct->dilation[1] = 1;
  ct->groups                        = 1;
  ct->bias                          = PETSC_TRUE;
  ct->init                          = LAYER_INIT_KAIMING;
  ct->initstd                       = 0.01;
  ct->maxworkspace                  = 1.0;
  layer->data                       = ct;
  layer->ops->setarguments          = LayerSetArguments_ConvTranspose2d;
  layer->ops->getarguments          = LayerGetArguments_ConvTranspose2d;
  layer->ops->setfromoptions        = LayerSetFromOptions_ConvTranspose2d;
  layer->ops->setup                 = LayerSetUp_ConvTranspose2d;
  layer->ops->initialize            = LayerInitialize_ConvTranspose2d;
  layer->ops->forward               = ConvTranspose2dForward; /* (convtranspose2dkernels.c) */
  layer->ops->backward              = ConvTranspose2dBackward;
  layer->ops->jvp                   = ConvTranspose2dJVP;
  layer->ops->sobackward            = ConvTranspose2dSOBackward;
  layer->ops->tensors               = LayerTensors_ConvTranspose2d;
  layer->ops->view                  = LayerView_ConvTranspose2d;
  layer->ops->reset                 = ConvTranspose2dReset;
  layer->ops->destroy               = LayerDestroy_ConvTranspose2d;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetOutputChannels_C", LayerConvTranspose2dSetOutputChannels_ConvTranspose2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetWindow_C", LayerConvTranspose2dSetWindow_ConvTranspose2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetGroups_C", LayerConvTranspose2dSetGroups_ConvTranspose2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetBias_C", LayerConvTranspose2dSetBias_ConvTranspose2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConvTranspose2dSetInitialization_C", LayerConvTranspose2dSetInitialization_ConvTranspose2d));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetOutputChannels - sets the number of output channels of a convtranspose2d layer

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
- nout  - the number of output channels Cout, > 0, a multiple of the groups

  Options Database Key:
. -<prefix>convtranspose2d_outputs <n> - the same from the options (LayerSetFromOptions())

  Notes:
  A convtranspose2d layer needs it (there is no default). The compact form gives it first, convtranspose2d:OUT[:K[:STRIDE[:PAD]]]
  with the named settings output_padding=, dilation=, groups=, bias= (e.g. convtranspose2d:16:2:2 doubles H and W).
  The layer is PyTorch's ConvTranspose2d, the adjoint of a conv2d with the same settings: (H, W, Cin) images become
  (Ho, Wo, Cout) with Ho = (H - 1) stride - 2 padding + dilation (K - 1) + output_padding + 1 (the same along W). Its
  parameters are the weights, Cin x KH KW Cout/groups entries stored [Cin][KH][KW][Cout/G] (PyTorch's
  [Cin][Cout/G][KH][KW] in model files), then the bias, Cout entries.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetKernel()`, `LayerConvTranspose2dSetStride()`, `LayerConvTranspose2dSetPadding()`, `LayerConvTranspose2dSetOutputPadding()`, `LayerConv2dSetOutputChannels()`
@*/
PetscErrorCode LayerConvTranspose2dSetOutputChannels(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetOutputChannels_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetKernel - sets the kernel size KH x KW of a convtranspose2d layer (default 3x3)

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. kh    - the kernel height, > 0
- kw    - the kernel width, > 0

  Options Database Key:
. -<prefix>convtranspose2d_kernel <K or KHxKW> - the same from the options

  Notes:
  The compact form is convtranspose2d:OUT:K (K as 3 or 3x5). Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetOutputChannels()`, `LayerConvTranspose2dSetStride()`
@*/
PetscErrorCode LayerConvTranspose2dSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 0, kh, kw));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetStride - sets the stride SH x SW of a convtranspose2d layer (default 1x1): the factor by which
  it spreads its input over the output

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. sh    - the stride along the rows, > 0
- sw    - the stride along the columns, > 0

  Options Database Key:
. -<prefix>convtranspose2d_stride <S or SHxSW> - the same from the options

  Notes:
  The compact form is convtranspose2d:OUT:K:STRIDE. Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetKernel()`, `LayerConvTranspose2dSetOutputPadding()`
@*/
PetscErrorCode LayerConvTranspose2dSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 1, sh, sw));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetPadding - sets the padding PH x PW of a convtranspose2d layer (default 0): as in PyTorch, the
  rows and columns it removes from each side of the full output

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. ph    - the padding along the rows, >= 0
- pw    - the padding along the columns, >= 0

  Options Database Key:
. -<prefix>convtranspose2d_padding <P or PHxPW> - the same from the options

  Notes:
  The compact form is convtranspose2d:OUT:K:STRIDE:PAD. It is the padding of the conv2d whose adjoint the layer is.
  Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetOutputPadding()`, `LayerConvTranspose2dSetStride()`
@*/
PetscErrorCode LayerConvTranspose2dSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 2, ph, pw));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetOutputPadding - sets the output padding of a convtranspose2d layer (default 0): rows and
  columns added at the end of the output

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. oh    - the output padding along the rows, >= 0 and smaller than the stride or the dilation there
- ow    - the output padding along the columns, the same

  Options Database Key:
. -<prefix>convtranspose2d_output_padding <P or PHxPW> - the same from the options

  Notes:
  The compact form is the named setting output_padding=P (e.g. convtranspose2d:16:3:2:1:output_padding=1, which maps
  H to 2 H). A strided conv2d maps several input sizes to the same output size; the output padding picks among them,
  as PyTorch's output_padding. Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetPadding()`, `LayerConvTranspose2dSetStride()`
@*/
PetscErrorCode LayerConvTranspose2dSetOutputPadding(Layer layer, PetscInt oh, PetscInt ow)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 3, oh, ow));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetDilation - sets the dilation DH x DW of a convtranspose2d layer (default 1x1)

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. dh    - the dilation along the rows, > 0
- dw    - the dilation along the columns, > 0

  Options Database Key:
. -<prefix>convtranspose2d_dilation <D or DHxDW> - the same from the options

  Notes:
  The compact form is the named setting dilation=D. Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetKernel()`
@*/
PetscErrorCode LayerConvTranspose2dSetDilation(Layer layer, PetscInt dh, PetscInt dw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 4, dh, dw));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetGroups - sets the number of groups G of a convtranspose2d layer (default 1)

  Logically collective

  Input Parameters:
+ layer  - a convtranspose2d layer (layers of other kinds ignore the call)
- groups - G, > 0, dividing the input and the output channels

  Options Database Key:
. -<prefix>convtranspose2d_groups <G> - the same from the options

  Notes:
  The compact form is the named setting groups=G. Input channels g Cin/G .. (g + 1) Cin/G - 1 feed output channels
  g Cout/G .. (g + 1) Cout/G - 1 only. Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetOutputChannels()`
@*/
PetscErrorCode LayerConvTranspose2dSetGroups(Layer layer, PetscInt groups)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetGroups_C", (Layer, PetscInt), (layer, groups));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetBias - whether a convtranspose2d layer adds a bias per output channel (default yes)

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
- bias  - PETSC_TRUE to add one

  Options Database Key:
. -<prefix>convtranspose2d_bias <bool> - the same from the options

  Notes:
  The compact form is the named setting bias=0 (or bias=1). Changing it on a layer that is set up resets the layer.

  Level: intermediate

.seealso: `LayerConvTranspose2dSetOutputChannels()`
@*/
PetscErrorCode LayerConvTranspose2dSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerConvTranspose2dSetInitialization - how a convtranspose2d layer initialises its weights (the bias starts at zero)

  Logically collective

  Input Parameters:
+ layer - a convtranspose2d layer (layers of other kinds ignore the call)
. init  - `LAYER_INIT_KAIMING` (the default), `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS`
- std   - the standard deviation of `LAYER_INIT_NORMAL`

  Options Database Keys:
+ -<prefix>convtranspose2d_init <kaiming,xavier,normal,zeros> - the distribution
- -<prefix>convtranspose2d_init_std <std>                      - the standard deviation of normal

  Notes:
  The fan-in is the number of products summed into an output value, Cin/G KH KW / (SH SW) on average (at least 1), the
  fan-out Cout/G KH KW (LayerInitializeWeights()).

  Level: intermediate

.seealso: `LayerInitializeWeights()`, `LayerConv2dSetInitialization()`
@*/
PetscErrorCode LayerConvTranspose2dSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConvTranspose2dSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}
