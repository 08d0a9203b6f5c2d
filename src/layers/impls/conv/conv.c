/*
  The convolution base shared by conv2d and conv3d (layout of the kinds in conv.h): the compact arguments
  OUT[:K[:STRIDE[:PAD[:D[:G]]]]] and the named dilation=, groups=, bias=; the options -<kind>_*; the view; set-up of
  the shapes (batch mode and nodes of a grid); initialisation; the PyTorch tensors; the grid-mode ops getwindow and
  setpadding; the methods behind the public LayerConv2dSet...() and LayerConv3dSet...() (conv2d.c, conv3d.c).
*/
#include "conv.h"

static const char *const ConvSettingNames[] = {"kernel", "stride", "padding", "dilation"};

/* "2d" or "3d": the public functions' names of the kind, LayerConv2dSetKernel() ... */
static const char *ConvDims(const LayerConv *conv)
{
  return conv->nsd == 3 ? "3d" : "2d";
}

static PetscErrorCode LayerConvSetOutputChannels_Conv(Layer layer, PetscInt nout)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s output channels must be positive, not %" PetscInt_FMT, ((PetscObject)layer)->type_name, nout);
  if (layer->setupcalled && nout != conv->nout) PetscCall(LayerReset(layer));
  conv->nout = nout;
  PetscFunctionReturn(0);
}

/* which: kernel, stride, padding or dilation, n values (1: the same along every dim, or nsd) */
static PetscErrorCode LayerConvSetWindow_Conv(Layer layer, LayerWindowSetting which, PetscInt n, const PetscInt v[])
{
  LayerConv *conv = (LayerConv *)layer->data;
  char       str[64];

  PetscFunctionBegin;
  PetscCall(LayerWindowToString(v, n, sizeof(str), str));
  PetscCheck(n == 1 || n == conv->nsd, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s %s %s: give one value or %" PetscInt_FMT " (e.g. %s)", ((PetscObject)layer)->type_name, ConvSettingNames[which], str, conv->nsd,
             conv->nsd == 3 ? "3 or 3x3x5" : "3 or 3x5");
  for (PetscInt d = 0; d < n; d++)
    PetscCheck(which == LAYER_WINDOW_PADDING ? v[d] >= 0 : v[d] > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s %s must be %s, not %s", ((PetscObject)layer)->type_name, ConvSettingNames[which],
               which == LAYER_WINDOW_PADDING ? "non-negative" : "positive", str);
  PetscCall(LayerWindowSet(layer, &conv->win, which, n, v));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvSetGroups_Conv(Layer layer, PetscInt groups)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCheck(groups > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s groups must be positive, not %" PetscInt_FMT, ((PetscObject)layer)->type_name, groups);
  if (layer->setupcalled && groups != conv->groups) PetscCall(LayerReset(layer));
  conv->groups = groups;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvSetBias_Conv(Layer layer, PetscBool bias)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != conv->bias) PetscCall(LayerReset(layer));
  conv->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConvSetInitialization_Conv(Layer layer, LayerInitType init, PetscReal std)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  conv->init    = init;
  conv->initstd = std;
  PetscFunctionReturn(0);
}

/*
  OUT[:K[:STRIDE[:PAD[:D[:G]]]]] then any of dilation=D, groups=G, bias=0|1; K, STRIDE, PAD, D as 3 (the same along every
  dim) or one value per dim (3x5 for conv2d, 3x3x5 for conv3d)
*/
static PetscErrorCode LayerSetArguments_Conv(Layer layer, const char args[])
{
  LayerConv  *conv = (LayerConv *)layer->data;
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  char        copy[256], *field, *saveptr = NULL, name[64];
  PetscInt    npositional = 0, v[3], n;

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "%s:%.64s... is longer than %zu characters: give at most OUT:K:STRIDE:PAD:DILATION:GROUPS and the named settings", kind, args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr)) {
    char     *value = strchr(field, '='), *end;
    long      lv;
    PetscInt  position = -1; /* of a positional field: 0 OUT, 1 K, 2 STRIDE, 3 PAD, 4 DILATION, 5 GROUPS */
    PetscBool isdil = PETSC_FALSE, isgroups = PETSC_FALSE, isbias = PETSC_FALSE;

    if (value) {
      *value++ = 0;
      PetscCall(PetscStrcmp(field, "dilation", &isdil));
      PetscCall(PetscStrcmp(field, "groups", &isgroups));
      PetscCall(PetscStrcmp(field, "bias", &isbias));
      PetscCheck(isdil || isgroups || isbias, comm, PETSC_ERR_ARG_WRONG, "%s: unknown setting \"%s\" in \"%s\"; the named settings are dilation=, groups= and bias=", kind, field, args);
    } else {
      PetscCheck(npositional < 6, comm, PETSC_ERR_ARG_WRONG, "%s takes at most OUT:K:STRIDE:PAD:DILATION:GROUPS before the named settings (e.g. %s:32:3:1:1:groups=2), not \"%s\"", kind, kind, args);
      value    = field;
      position = npositional++;
      isdil    = (PetscBool)(position == 4);
      isgroups = (PetscBool)(position == 5);
    }
    if (position == 0) {
      lv = strtol(value, &end, 10);
      PetscCheck(end != value && !*end && lv > 0 && lv <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "%s: the number of output channels must be a positive integer (e.g. %s:32), not \"%s\"", kind, kind, value);
      PetscCall(LayerConvSetOutputChannels_Conv(layer, (PetscInt)lv));
    } else if (isgroups || isbias) {
      lv = strtol(value, &end, 10);
      PetscCheck(end != value && !*end && lv >= PETSC_MIN_INT && lv <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "%s: %s takes an integer, not \"%s\"", kind, isgroups ? "groups" : "bias", value);
      if (isgroups)
        PetscCall(LayerConvSetGroups_Conv(layer, (PetscInt)lv));
      else
        PetscCall(LayerConvSetBias_Conv(layer, lv ? PETSC_TRUE : PETSC_FALSE));
    } else { /* kernel, stride, padding or dilation */
      const LayerWindowSetting which = isdil ? LAYER_WINDOW_DILATION : position == 1 ? LAYER_WINDOW_KERNEL : position == 2 ? LAYER_WINDOW_STRIDE : LAYER_WINDOW_PADDING;

      PetscCall(PetscSNPrintf(name, sizeof(name), "The %s %s", kind, ConvSettingNames[which]));
      PetscCall(LayerWindowParse(comm, name, value, conv->nsd, v, &n));
      PetscCall(LayerConvSetWindow_Conv(layer, which, n, v));
    }
  }
  PetscFunctionReturn(0);
}

/* OUT:K:STRIDE:PAD, then the named settings that differ from their defaults */
static PetscErrorCode LayerGetArguments_Conv(Layer layer, size_t len, char args[])
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const LayerWindow *w    = &conv->win;
  char               k[32], s[32], p[32], d[32];
  size_t             used;
  PetscBool          dilated = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(LayerWindowToString(w->k, w->given[LAYER_WINDOW_KERNEL], sizeof(k), k));
  PetscCall(LayerWindowToString(w->stride, w->given[LAYER_WINDOW_STRIDE], sizeof(s), s));
  PetscCall(LayerWindowToString(w->pad, w->given[LAYER_WINDOW_PADDING], sizeof(p), p));
  PetscCall(LayerWindowToString(w->dilation, w->given[LAYER_WINDOW_DILATION], sizeof(d), d));
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%s:%s:%s", conv->nout, k, s, p));
  PetscCall(PetscStrlen(args, &used));
  for (PetscInt i = 0; i < conv->nsd; i++) dilated = (PetscBool)(dilated || w->dilation[i] != 1);
  if (dilated) {
    PetscCall(PetscSNPrintf(args + used, len - used, ":dilation=%s", d));
    PetscCall(PetscStrlen(args, &used));
  }
  if (conv->groups != 1) {
    PetscCall(PetscSNPrintf(args + used, len - used, ":groups=%" PetscInt_FMT, conv->groups));
    PetscCall(PetscStrlen(args, &used));
  }
  if (!conv->bias) PetscCall(PetscSNPrintf(args + used, len - used, ":bias=0"));
  PetscFunctionReturn(0);
}

/* -<kind>_<setting> "A", "AxB" or "AxBxC" */
static PetscErrorCode ConvOptionsWindow(Layer layer, PetscOptionItems *PetscOptionsObject, LayerWindowSetting which, const char text[], const char man[])
{
  LayerConv *conv = (LayerConv *)layer->data;
  PetscInt  *s    = LayerWindowGetSetting(&conv->win, which), v[3], n;
  char       opt[64], value[64];
  PetscBool  set;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_%s", ((PetscObject)layer)->type_name, ConvSettingNames[which]));
  PetscCall(LayerWindowToString(s, conv->win.given[which], sizeof(value), value));
  PetscCall(PetscOptionsString(opt, text, man, value, value, sizeof(value), &set));
  if (set) {
    PetscCall(LayerWindowParse(PetscObjectComm((PetscObject)layer), opt, value, conv->nsd, v, &n));
    PetscCall(LayerConvSetWindow_Conv(layer, which, n, v));
  }
  PetscFunctionReturn(0);
}

/*
  The options of both kinds, -<kind>_outputs, _kernel, _stride, _padding, _dilation, _groups, _bias, _init, _init_std,
  _max_workspace and _single_direct_max_k, inside the kind's PetscOptionsHeadBegin(); workspace: whether -<kind>_max_workspace was given
*/
PetscErrorCode LayerSetFromOptionsConv_Private(Layer layer, PetscOptionItems *PetscOptionsObject, PetscBool *workspace)
{
  LayerConv  *conv = (LayerConv *)layer->data;
  const char *kind = ((PetscObject)layer)->type_name, *dims = ConvDims(conv);
  PetscInt    nout = conv->nout, groups = conv->groups;
  PetscBool   bias = conv->bias, set;
  char        opt[64], text[128], man[64];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_outputs", kind));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetOutputChannels", dims));
  PetscCall(PetNetOptionsInt(opt, "Number of output channels", man, nout, &nout, &set));
  if (set) PetscCall(LayerConvSetOutputChannels_Conv(layer, nout));
  PetscCall(PetscSNPrintf(text, sizeof(text), "Kernel size, K or %s", conv->nsd == 3 ? "KDxKHxKW" : "KHxKW"));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetKernel", dims));
  PetscCall(ConvOptionsWindow(layer, PetscOptionsObject, LAYER_WINDOW_KERNEL, text, man));
  PetscCall(PetscSNPrintf(text, sizeof(text), "Stride, S or %s", conv->nsd == 3 ? "SDxSHxSW" : "SHxSW"));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetStride", dims));
  PetscCall(ConvOptionsWindow(layer, PetscOptionsObject, LAYER_WINDOW_STRIDE, text, man));
  PetscCall(PetscSNPrintf(text, sizeof(text), "Zero padding, P or %s", conv->nsd == 3 ? "PDxPHxPW" : "PHxPW"));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetPadding", dims));
  PetscCall(ConvOptionsWindow(layer, PetscOptionsObject, LAYER_WINDOW_PADDING, text, man));
  PetscCall(PetscSNPrintf(text, sizeof(text), "Dilation, D or %s", conv->nsd == 3 ? "DDxDHxDW" : "DHxDW"));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetDilation", dims));
  PetscCall(ConvOptionsWindow(layer, PetscOptionsObject, LAYER_WINDOW_DILATION, text, man));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_groups", kind));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetGroups", dims));
  PetscCall(PetNetOptionsInt(opt, "Number of groups (divides the input and output channels)", man, groups, &groups, &set));
  if (set) PetscCall(LayerConvSetGroups_Conv(layer, groups));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_bias", kind));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetBias", dims));
  PetscCall(PetscOptionsBool(opt, "Add a bias per output channel", man, bias, &bias, &set));
  if (set) PetscCall(LayerConvSetBias_Conv(layer, bias));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_init", kind));
  PetscCall(PetscSNPrintf(man, sizeof(man), "LayerConv%sSetInitialization", dims));
  PetscCall(PetscOptionsEnum(opt, "Weight initialisation", man, LayerInitTypes, (PetscEnum)conv->init, (PetscEnum *)&conv->init, NULL));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_init_std", kind));
  PetscCall(PetscSNPrintf(text, sizeof(text), "Standard deviation for -%s_init normal", kind));
  PetscCall(PetscOptionsReal(opt, text, man, conv->initstd, &conv->initstd, NULL));
  PetscCheck(conv->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s must be non-negative, not %g", opt, (double)conv->initstd);
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_max_workspace", kind));
  PetscCall(
      PetscOptionsReal(opt, "Workspace in MB of one chunk of output rows (im2col buffers; conv2d: also Winograd's and, on a DMDA, of one chunk of rows): the batch is processed chunk by chunk", "", conv->maxworkspace, &conv->maxworkspace, workspace));
  PetscCheck(conv->maxworkspace > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s must be positive, not %g", opt, (double)conv->maxworkspace);
  if (*workspace) PetscCall(ConvResetWorkspace_Batch(layer));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_single_direct_max_k", kind));
  PetscCall(PetNetOptionsInt(opt, "Single precision: convolve directly, without im2col, when taps x input channels <= this (one group, not 1x1); 0: always im2col + GEMM", "", conv->directmaxk, &conv->directmaxk, NULL));
  PetscCheck(conv->directmaxk >= 0 && conv->directmaxk <= CONV_DIRECT_MAX_K, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s must be in [0, %d] (0: always im2col + GEMM), not %" PetscInt_FMT, opt, CONV_DIRECT_MAX_K,
             conv->directmaxk);
  PetscFunctionReturn(0);
}

/* "outputs 8, kernel 3x3, stride 1x1, padding 0x0, dilation 1x1, groups 1, bias": the settings, all dims */
PetscErrorCode LayerViewConv_Private(Layer layer, PetscViewer viewer)
{
  LayerConv         *conv = (LayerConv *)layer->data;
  const LayerWindow *w    = &conv->win;
  char               k[64], s[64], p[64], d[64];

  PetscFunctionBegin;
  PetscCall(LayerWindowToFullString(w->k, conv->nsd, sizeof(k), k));
  PetscCall(LayerWindowToFullString(w->stride, conv->nsd, sizeof(s), s));
  PetscCall(LayerWindowToFullString(w->pad, conv->nsd, sizeof(p), p));
  PetscCall(LayerWindowToFullString(w->dilation, conv->nsd, sizeof(d), d));
  PetscCall(PetscViewerASCIIPrintf(viewer, "outputs %" PetscInt_FMT ", kernel %s, stride %s, padding %s, dilation %s, groups %" PetscInt_FMT ", %s\n", conv->nout, k, s, p, d, conv->groups, conv->bias ? "bias" : "no bias"));
  PetscFunctionReturn(0);
}

/* Set-up needs the number of output channels (there is no default) */
PetscErrorCode LayerConvCheckOutputs_Private(Layer layer)
{
  LayerConv  *conv = (LayerConv *)layer->data;
  const char *prefix, *kind = ((PetscObject)layer)->type_name;

  PetscFunctionBegin;
  if (conv->nout > 0) PetscFunctionReturn(0);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s layer %" PetscInt_FMT " has no number of output channels: write %s:OUT in -net_layers (e.g. %s:32), or give -%s%s_outputs OUT, or call LayerConv%sSetOutputChannels()", kind,
          layer->index, kind, kind, prefix ? prefix : "", kind, ConvDims(conv));
}

/* From the input channels (the last dim of the input shape) and the window's kernel: the groups and the parameter count */
PetscErrorCode LayerConvSetUpChannels_Private(Layer layer)
{
  LayerConv  *conv = (LayerConv *)layer->data;
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  PetscInt64  taps = 1;
  char        k[64];

  PetscFunctionBegin;
  conv->cin = layer->in.dim[layer->in.ndim - 1];
  PetscCheck(conv->cin % conv->groups == 0 && conv->nout % conv->groups == 0, comm, PETSC_ERR_ARG_INCOMP,
             "%s layer %" PetscInt_FMT ": groups (%" PetscInt_FMT ") must divide the input channels (%" PetscInt_FMT ") and the output channels (%" PetscInt_FMT ")", kind, layer->index, conv->groups, conv->cin, conv->nout);
  conv->cg  = conv->cin / conv->groups;
  conv->cog = conv->nout / conv->groups;
  for (PetscInt d = 0; d < conv->nsd; d++) taps *= conv->win.k[d];
  PetscCall(LayerWindowToFullString(conv->win.k, conv->nsd, sizeof(k), k));
  PetscCheck((PetscInt64)conv->nout * (taps * conv->cg + 1) <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "%s layer %" PetscInt_FMT " (%" PetscInt_FMT " outputs, kernel %s, %" PetscInt_FMT " inputs per group) would have more than %d parameters, the largest PetscInt: make it smaller", kind, layer->index, conv->nout, k, conv->cg,
             PETSC_MAX_INT);
  conv->kg       = (PetscInt)taps * conv->cg;
  conv->ktot     = conv->groups * conv->kg;
  layer->nparams = conv->nout * conv->kg + (conv->bias ? conv->nout : 0);
  PetscFunctionReturn(0);
}

/*
  Set-up of batch mode, (H, W, Cin) -> (Ho, Wo, Cout) or (D, H, W, Cin) -> (Do, Ho, Wo, Cout) with the im2col geometry,
  or in point form (layer->fielddim, layerimpl.h): one point of a field, (Cin) -> (Cout), with its window described
  over the kind's own nsd dims (its owner compares them with its field's).
*/
PetscErrorCode LayerSetUpConv_Private(Layer layer)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  LayerWindow   *win  = &conv->win;
  MPI_Comm       comm = PetscObjectComm((PetscObject)layer);
  const char    *kind = ((PetscObject)layer)->type_name;
  const PetscInt nsd  = conv->nsd;
  char           shape[64];

  PetscFunctionBegin;
  PetscCall(LayerConvCheckOutputs_Private(layer));
  PetscCall(ConvResetWorkspace_Batch(layer));
  PetscCall(ConvResetWorkspaceSingle_Batch(layer));
  PetscCall(ConvResetOneDNN(layer));
  PetscCall(LayerConvSetSingle_Private(layer, PETSC_FALSE));
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  if (layer->fielddim) {
    PetscCheck(layer->in.ndim == 1, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT " is in point form (one point of a field is a sample): its input shape must be (channels), not %s", kind, layer->index, shape);
    PetscCall(LayerWindowSetUp(layer, win, nsd, NULL));
    PetscCall(LayerConvSetUpChannels_Private(layer));
    layer->out.ndim   = 1;
    layer->out.dim[0] = conv->nout;
    PetscFunctionReturn(0);
  }
  if (nsd == 2) {
    PetscCheck(layer->in.ndim != 1, comm, PETSC_ERR_ARG_SIZ,
               "%s layer %" PetscInt_FMT " has input shape %s: it convolves (height, width, channels) samples (give -net_input_shape HxWxC), or the fields of a 2-D DMDA whose grid points are the samples (NetDMDASetUp())", kind, layer->index, shape);
    PetscCheck(layer->in.ndim == 3, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT " has input shape %s: it convolves (height, width, channels) samples (give -net_input_shape HxWxC)%s", kind, layer->index, shape,
               layer->in.ndim == 4 ? "; for (depth, height, width, channels) volumes use conv3d" : "");
  } else
    PetscCheck(layer->in.ndim == 4, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT " has input shape %s: it convolves (depth, height, width, channels) samples (give -net_input_shape DxHxWxC, e.g. 16x32x32x4)%s", kind, layer->index, shape,
               layer->in.ndim == 3 ? "; for (height, width, channels) images use conv2d" : "");
  PetscCall(LayerWindowSetUp(layer, win, nsd, layer->in.dim));
  PetscCall(LayerConvSetUpChannels_Private(layer));
  /* im2col reads a sample through the window, taps in the padding reading zero (convim2col.h) */
  ConvIm2colSetWindow(&conv->im2col, win, conv->cin, conv->cg, conv->groups);
  conv->rows      = conv->im2col.out[0] * conv->im2col.out[1];
  conv->pixels    = conv->rows * conv->im2col.out[2];
  conv->pointwise = PETSC_TRUE;
  for (PetscInt d = 0; d < nsd; d++) conv->pointwise = (PetscBool)(conv->pointwise && win->k[d] == 1 && win->step[d] == 1 && win->pad[d] == 0);
  /* with few taps, OpenBLAS is much faster on the transposed weight-gradient product (convbatch.c) */
  conv->dwtransposed = (PetscBool)(conv->kg < conv->cog);
  layer->out.ndim    = nsd + 1;
  for (PetscInt d = 0; d < nsd; d++) layer->out.dim[d] = win->out[d];
  layer->out.dim[nsd] = conv->nout;
  PetscCall(LayerConvSetSingle_Private(layer, PETSC_TRUE)); /* float kernels in batch mode only */
  PetscFunctionReturn(0);
}

/*
  Whether the layer offers its single-precision kernels (convbatch.c, on float): in batch form only (a layer in point
  form has no kernels)
*/
PetscErrorCode LayerConvSetSingle_Private(Layer layer, PetscBool on)
{
  PetscFunctionBegin;
  layer->ops->forwardsingle    = on ? ConvForwardSingle_Default : NULL;
  layer->ops->forwardactsingle = on ? ConvForwardActSingle_Default : NULL;
  layer->ops->backwardsingle   = on ? ConvBackwardSingle_Default : NULL;
  layer->ops->jvpsingle        = on ? ConvJVPSingle_Default : NULL;
  PetscCall(ConvSetBF16_OneDNN(layer, on)); /* and its bfloat16 ops on oneDNN (convonednn.c) */
  PetscFunctionReturn(0);
}

/* Weights as PyTorch's kaiming_normal_ / xavier_uniform_ with fan_in = Cg K, fan_out = Cout K (K the taps); bias zero */
static PetscErrorCode LayerInitialize_Conv(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  LayerConv *conv   = (LayerConv *)layer->data;
  PetscInt   nw     = conv->nout * conv->kg;
  PetscReal  fanin  = (PetscReal)conv->kg;
  PetscReal  fanout = (PetscReal)conv->nout * (conv->kg / conv->cg);

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, conv->init, conv->initstd, fanin, fanout, nw, theta));
  if (conv->bias) PetscCall(PetscArrayzero(theta + nw, conv->nout));
  PetscFunctionReturn(0);
}

/*
  PyTorch Conv2d/Conv3d: weight [Cout][Cg][KH][KW] or [Cout][Cg][KD][KH][KW], bias [Cout]. The shape reported is
  PyTorch's; the data is stored [Cout][KH][KW][Cg] or [Cout][KD][KH][KW][Cg] (LAYER_TENSOR_CHANNELS_LAST), so
  torch_weight = ours.reshape(Cout, K..., Cg).permute(0, nsd + 1, 1, ..., nsd) (share/reference/conv_reference.py does
  this; the model files hold torch_weight).
*/
static PetscErrorCode LayerTensors_Conv(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  LayerConv *conv                    = (LayerConv *)layer->data;
  PetscInt   w[LAYER_TENSOR_MAX_DIM] = {conv->nout, conv->cg};

  PetscFunctionBegin;
  for (PetscInt d = 0; d < conv->nsd; d++) w[2 + d] = conv->win.k[d];
  PetscCall(LayerTensorSet_Private(&info[0], "weight", 0, LAYER_TENSOR_CHANNELS_LAST, conv->nsd + 2, w));
  PetscCall(LayerTensorSet_Private(&info[1], "bias", conv->nout * conv->kg, LAYER_TENSOR_SAME, 1, &conv->nout));
  *n = conv->bias ? 2 : 1;
  PetscFunctionReturn(0);
}

/* Grid mode (layerimpl.h): the window along the kind's nsd dims, slowest first */
static PetscErrorCode LayerGetWindow_Conv(Layer layer, PetscInt *nsd, PetscInt k[], PetscInt step[], PetscInt pad[], PetscInt dilation[])
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerWindowGetWindow(layer, &conv->win, conv->nsd, nsd, k, step, pad, dilation));
  PetscFunctionReturn(0);
}

/* Grid mode: the zero padding of the kind's nsd dims (a Net's copy on a rank's box pads nothing: the halo does) */
static PetscErrorCode LayerSetPadding_Conv(Layer layer, PetscInt nsd, const PetscInt pad[])
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nsd == conv->nsd, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_INCOMP, "%s layer %" PetscInt_FMT " has %" PetscInt_FMT " spatial dims, not %" PetscInt_FMT ": give its padding along each of them", ((PetscObject)layer)->type_name,
             layer->index, conv->nsd, nsd);
  PetscCall(LayerConvSetWindow_Conv(layer, LAYER_WINDOW_PADDING, nsd, pad));
  PetscFunctionReturn(0);
}

/* Grid mode, an overlapped halo exchange: the box changed after forward, so backward recomputes its columns */
static PetscErrorCode LayerForget_Conv(Layer layer)
{
  PetscFunctionBegin;
  ((LayerConv *)layer->data)->dbl.colx = NULL;
  ((LayerConv *)layer->data)->sgl.colx = NULL;
  PetscFunctionReturn(0);
}

PetscErrorCode LayerResetConv_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(ConvResetWorkspace_Batch(layer));
  PetscCall(ConvResetWorkspaceSingle_Batch(layer));
  PetscCall(ConvResetOneDNN(layer));
  PetscCall(LayerWindowReset(&((LayerConv *)layer->data)->win));
  PetscFunctionReturn(0);
}

/* LayerConv2dGetPatchLayout() and LayerConv3dGetPatchLayout(): how the weights of each group multiply the patches */
static PetscErrorCode LayerConvGetPatchLayout_Conv(Layer layer, PetscInt *groups, PetscInt *kg, PetscInt *pixels, PetscBool *bias)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT " has no patch layout before it is set up: call LayerSetUp() (or NetSetUp()) first", ((PetscObject)layer)->type_name, layer->index);
  if (groups) *groups = conv->groups;
  if (kg) *kg = conv->kg;
  if (pixels) *pixels = conv->pixels;
  if (bias) *bias = conv->bias;
  PetscFunctionReturn(0);
}

/* LayerConv2dGetPatches() and LayerConv3dGetPatches(): col [n P][G][KD][KH][KW][Cg] (no KD in 2-D), sample by sample
   with the im2col of batch mode (convim2col.c), taps in the padding zero */
static PetscErrorCode LayerConvGetPatches_Conv(Layer layer, PetscInt n, const PetscScalar *x, PetscScalar *col)
{
  LayerConv   *conv   = (LayerConv *)layer->data;
  const size_t insize = (size_t)layer->insize, colsize = (size_t)conv->pixels * conv->ktot;

  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT " has no patches before it is set up: call LayerSetUp() (or NetSetUp()) first", ((PetscObject)layer)->type_name, layer->index);
  PetscCall(LayerConvCheckRunnable_Private(layer));
  for (PetscInt s = 0; s < n; s++) PetscCall(ConvIm2colRows(&conv->im2col, 0, conv->rows, x + s * insize, col + s * colsize));
  PetscFunctionReturn(0);
}

/* A layer in point form (layer->fielddim) has no kernels: a copy of it in batch form runs on a box of the field */
PetscErrorCode LayerConvCheckRunnable_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCheck(!layer->fielddim, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT " is in point form (one point of a %" PetscInt_FMT "-D field): it has no kernels; run a copy of it in batch form on a box of the field",
             ((PetscObject)layer)->type_name, layer->index, layer->fielddim);
  PetscFunctionReturn(0);
}

/* The composed methods' names: LayerConv2dSetKernel() calls "LayerConv2dSetWindow_C", LayerConv3dSetKernel() "LayerConv3dSetWindow_C" */
static PetscErrorCode ConvComposeAll(Layer layer, PetscBool set)
{
  LayerConv *conv = (LayerConv *)layer->data;
  char       name[64];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sSetOutputChannels_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvSetOutputChannels_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sSetWindow_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvSetWindow_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sSetGroups_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvSetGroups_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sSetBias_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvSetBias_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sSetInitialization_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvSetInitialization_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sGetPatchLayout_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvGetPatchLayout_Conv : NULL));
  PetscCall(PetscSNPrintf(name, sizeof(name), "LayerConv%sGetPatches_C", ConvDims(conv)));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, name, set ? LayerConvGetPatches_Conv : NULL));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerDestroyConv_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerResetConv_Private(layer));
  PetscCall(ConvComposeAll(layer, PETSC_FALSE));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/*
  size: the kind's data struct, which starts with a LayerConv; nsd: 2 (conv2d) or 3 (conv3d). Defaults: kernel 3, stride
  1, no padding, dilation 1, one group, a bias, Kaiming initialisation, 1 MB of workspace per chunk.
*/
PetscErrorCode LayerCreateConv_Private(Layer layer, size_t size, PetscInt nsd)
{
  LayerConv *conv;

  PetscFunctionBegin;
  PetscCall(PetscCalloc(size, &conv));
  for (PetscInt d = 0; d < 3; d++) {
    conv->win.k[d]        = 3;
    conv->win.stride[d]   = 1;
    conv->win.dilation[d] = 1;
  }
  for (PetscInt w = 0; w < 4; w++) conv->win.given[w] = 1;
  conv->nsd                = nsd;
  conv->groups             = 1;
  conv->bias               = PETSC_TRUE;
  conv->init               = LAYER_INIT_KAIMING;
  conv->initstd            = 0.01;
  conv->maxworkspace       = 1.0;
  conv->directmaxk         = CONV_DIRECT_DEFAULT_K;
  layer->data              = conv;
  layer->ops->initialize   = LayerInitialize_Conv;
  layer->ops->tensors      = LayerTensors_Conv;
  layer->ops->setarguments = LayerSetArguments_Conv;
  layer->ops->getarguments = LayerGetArguments_Conv;
  layer->ops->getwindow    = LayerGetWindow_Conv;
  layer->ops->setpadding   = LayerSetPadding_Conv;
  layer->ops->forget       = LayerForget_Conv;
  PetscCall(ConvComposeAll(layer, PETSC_TRUE));
  PetscFunctionReturn(0);
}
