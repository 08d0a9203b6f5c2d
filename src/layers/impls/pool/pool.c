/*
  The pooling base shared by maxpool and avgpool (layout of the kinds in pool.h): compact arguments K[:STRIDE[:PAD]]
  (maxpool also K:STRIDE:PAD:DILATION), options -<kind>_kernel, -<kind>_stride, -<kind>_padding (and -maxpool_dilation), the viewer, set-up of the (Ho, Wo, C) or (Do, Ho, Wo, C) output
  shape, the grid-mode ops getwindow and setpadding, and the public LayerPoolSet...() setters. Each kind's data struct starts with a LayerWindow (window.h), so the shared code casts
  layer->data to it; the kinds add their forward/backward/jvp.
*/
#include "pool.h"
#include <petnet/private/onednnimpl.h>

/* The stride in effect (0 means "equal to the kernel", PyTorch's default) and how many values it has */
static void PoolResolveStride(const LayerWindow *win, PetscInt stride[3], PetscInt *n)
{
  PetscBool zero = PETSC_FALSE;

  for (int d = 0; d < 3; d++) {
    stride[d] = win->stride[d] ? win->stride[d] : win->k[d];
    zero      = (PetscBool)(zero || !win->stride[d]);
  }
  *n = zero ? PetscMax(win->given[LAYER_WINDOW_KERNEL], win->given[LAYER_WINDOW_STRIDE]) : win->given[LAYER_WINDOW_STRIDE];
}

/* The dims a view shows: those of the set-up window, else as many as the settings give (at least 2) */
static PetscInt PoolViewDims(const LayerWindow *win)
{
  PetscInt n = 2;

  for (int w = 0; w < 3; w++) n = PetscMax(n, win->given[w]);
  return win->nsd ? win->nsd : n;
}

/* A pool kind with a dilation: maxpool (PyTorch's MaxPool2d/3d have one, AvgPool2d/3d none), as its create said */
static PetscBool PoolHasDilation(Layer layer)
{
  return ((const LayerWindow *)layer->data)->dilates;
}

/* which: LAYER_WINDOW_KERNEL, _STRIDE, _PADDING or _DILATION (maxpool only); n values in v (1: the same along every spatial dim) */
static PetscErrorCode LayerPoolSetWindow_Pool(Layer layer, LayerWindowSetting which, PetscInt n, const PetscInt v[])
{
  PetscFunctionBegin;
  if (which == LAYER_WINDOW_DILATION && !PoolHasDilation(layer)) {
    PetscBool ones = PETSC_TRUE;

    for (PetscInt d = 0; d < n; d++) ones = (PetscBool)(ones && v[d] == 1);
    PetscCheck(ones, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s layer %" PetscInt_FMT " has no dilation (PyTorch's AvgPool has none): use maxpool:K:STRIDE:PAD:DILATION, or a dilated conv2d/conv3d", ((PetscObject)layer)->type_name,
               layer->index);
  }
  PetscCall(LayerWindowSet(layer, (LayerWindow *)layer->data, which, n, v));
  PetscFunctionReturn(0);
}

/* K[:STRIDE[:PAD]] (maxpool: K[:STRIDE[:PAD[:DILATION]]]), each an integer, a pair HxW or a triple DxHxW */
static PetscErrorCode LayerSetArguments_Pool(Layer layer, const char args[])
{
  MPI_Comm                 comm    = PetscObjectComm((PetscObject)layer);
  const char              *kind    = ((PetscObject)layer)->type_name;
  const char              *most    = PoolHasDilation(layer) ? "K:STRIDE:PAD:DILATION" : "K:STRIDE:PAD";
  const PetscInt           max     = PoolHasDilation(layer) ? 4 : 3;
  const char *const        what[]  = {"The pooling kernel", "The pooling stride", "The pooling padding", "The pooling dilation"};
  const LayerWindowSetting which[] = {LAYER_WINDOW_KERNEL, LAYER_WINDOW_STRIDE, LAYER_WINDOW_PADDING, LAYER_WINDOW_DILATION};
  char                     copy[256], *field, *saveptr = NULL;
  PetscInt                 v[3], n, i                  = 0;

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "%s:%.64s... is longer than %zu characters: give at most %s", kind, args, sizeof(copy) - 1, most);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr), i++) {
    PetscCheck(i != 3 || max == 4, comm, PETSC_ERR_ARG_WRONG, "%s has no dilation (PyTorch's AvgPool has none), so it takes at most K:STRIDE:PAD, not \"%s\": drop the fourth value, or use maxpool:K:STRIDE:PAD:DILATION", kind, args);
    PetscCheck(i < max, comm, PETSC_ERR_ARG_WRONG, "%s takes at most %s (e.g. %s), not \"%s\"", kind, most, max == 4 ? "maxpool:3:1:1:2" : "avgpool:3:2:1", args);
    PetscCall(LayerWindowParse(comm, what[i], field, 0, v, &n));
    PetscCall(LayerPoolSetWindow_Pool(layer, which[i], n, v));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Pool(Layer layer, size_t len, char args[])
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[3], ns;
  PetscBool    padded = PETSC_FALSE, strided = PETSC_FALSE, dilated = PETSC_FALSE;
  char         k[32], s[32], p[32], dl[32];

  PetscFunctionBegin;
  PoolResolveStride(win, stride, &ns);
  for (int d = 0; d < 3; d++) {
    padded  = (PetscBool)(padded || win->pad[d]);
    strided = (PetscBool)(strided || stride[d] != win->k[d]);
    dilated = (PetscBool)(dilated || win->dilation[d] != 1);
  }
  PetscCall(LayerWindowToString(win->k, win->given[LAYER_WINDOW_KERNEL], sizeof(k), k));
  PetscCall(LayerWindowToString(stride, ns, sizeof(s), s));
  PetscCall(LayerWindowToString(win->pad, win->given[LAYER_WINDOW_PADDING], sizeof(p), p));
  PetscCall(LayerWindowToString(win->dilation, win->given[LAYER_WINDOW_DILATION], sizeof(dl), dl));
  if (dilated)
    PetscCall(PetscSNPrintf(args, len, "%s:%s:%s:%s", k, s, p, dl));
  else if (padded)
    PetscCall(PetscSNPrintf(args, len, "%s:%s:%s", k, s, p));
  else if (strided)
    PetscCall(PetscSNPrintf(args, len, "%s:%s", k, s));
  else
    PetscCall(PetscSNPrintf(args, len, "%s", k));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerSetFromOptionsPool_Private(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  LayerWindow             *win     = (LayerWindow *)layer->data;
  const char              *kind    = ((PetscObject)layer)->type_name;
  MPI_Comm                 comm    = PetscObjectComm((PetscObject)layer);
  const LayerWindowSetting which[] = {LAYER_WINDOW_KERNEL, LAYER_WINDOW_STRIDE, LAYER_WINDOW_PADDING, LAYER_WINDOW_DILATION};
  const char *const        names[] = {"kernel", "stride", "padding", "dilation"};
  const char *const        texts[] = {"Window size, K, KHxKW or KDxKHxKW", "Stride, S, SHxSW or SDxSHxSW (default: the kernel size)", "Padding, P, PHxPW or PDxPHxPW (at most half the kernel)",
                                      "Dilation, D, DHxDW or DDxDHxDW: the taps' spacing (1: side by side)"};
  const char *const        mans[]  = {"LayerPoolSetKernel", "LayerPoolSetStride", "LayerPoolSetPadding", "LayerPoolSetDilation"};
  const PetscInt           nset    = PoolHasDilation(layer) ? 4 : 3;
  PetscInt                 stride[3], ns, v[3], n;
  char                     opt[64], value[64];
  PetscBool                flg;

  PetscFunctionBegin;
  PoolResolveStride(win, stride, &ns);
  PetscOptionsHeadBegin(PetscOptionsObject, "Pooling layer options");
  for (PetscInt w = 0; w < nset; w++) {
    const PetscInt *shown[] = {win->k, stride, win->pad, win->dilation}, nshown[] = {win->given[LAYER_WINDOW_KERNEL], ns, win->given[LAYER_WINDOW_PADDING], win->given[LAYER_WINDOW_DILATION]};

    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_%s", kind, names[w]));
    PetscCall(LayerWindowToString(shown[w], nshown[w], sizeof(value), value));
    PetscCall(PetscOptionsString(opt, texts[w], mans[w], value, value, sizeof(value), &flg));
    if (flg) {
      PetscCall(LayerWindowParse(comm, opt, value, 0, v, &n));
      PetscCall(LayerPoolSetWindow_Pool(layer, which[w], n, v));
    }
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Pool(Layer layer, PetscViewer viewer)
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[3], ns, nsd = PoolViewDims(win);
  PetscBool    dilated = PETSC_FALSE;
  char         k[64], s[64], p[64], dl[80] = "";

  PetscFunctionBegin;
  PoolResolveStride(win, stride, &ns);
  for (int d = 0; d < 3; d++) dilated = (PetscBool)(dilated || win->dilation[d] != 1);
  PetscCall(LayerWindowToFullString(win->k, nsd, sizeof(k), k));
  PetscCall(LayerWindowToFullString(stride, nsd, sizeof(s), s));
  PetscCall(LayerWindowToFullString(win->pad, nsd, sizeof(p), p));
  if (dilated) { /* shown only when set: the views of undilated pools stay as they were */
    PetscCall(PetscStrncpy(dl, ", dilation ", sizeof(dl)));
    PetscCall(LayerWindowToFullString(win->dilation, nsd, sizeof(dl) - 11, dl + 11));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "kernel %s, stride %s, padding %s%s%s\n", k, s, p, dl, layer->setupcalled && layer->fielddim ? " (point form: pools a field)" : ""));
  PetscFunctionReturn(0);
}

/*
  Output shape (ho, wo, c) or (do, ho, wo, c); as PyTorch, padding may be at most half the kernel so that no window is
  all padding. In point form (layer->fielddim, layerimpl.h) the input is (c) and so is the output; the window spans as
  many dims as a setting has values, or fielddim when each has one.
*/
PetscErrorCode LayerSetUpPool_Private(Layer layer)
{
  LayerWindow *win  = (LayerWindow *)layer->data;
  MPI_Comm     comm = PetscObjectComm((PetscObject)layer);
  const char  *kind = ((PetscObject)layer)->type_name;
  PetscInt     nsd;
  char         shape[64];

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  if (layer->fielddim) {
    nsd = layer->fielddim;
    for (PetscInt w = 0; w < 4; w++)
      if (win->given[w] > 1) nsd = win->given[w]; /* a setting with several values says how many dims the window spans */
    PetscCheck(nsd == 2 || nsd == 3, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s layer %" PetscInt_FMT " pools windows of 2 or 3 spatial dims, not %" PetscInt_FMT, kind, layer->index, nsd);
    PetscCheck(layer->in.ndim == 1, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT " is in point form (one point of a field is a sample): its input shape must be (channels), not %s", kind, layer->index, shape);
  } else {
    PetscCheck(layer->in.ndim == 3 || layer->in.ndim == 4, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT " needs an (h, w, c) or (d, h, w, c) input, but its input shape is %s: give -net_input_shape HxWxC or DxHxWxC (e.g. 28x28x1 or 16x32x32x4)",
               kind, layer->index, shape);
    nsd = layer->in.ndim - 1;
  }
  for (int d = 0; d < nsd; d++) { PetscCheck(2 * win->pad[d] <= win->k[d], comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: padding %" PetscInt_FMT " is more than half the kernel %" PetscInt_FMT ": reduce -%s_padding", kind, win->pad[d], win->k[d], kind); }
  PetscCall(LayerWindowSetUp(layer, win, nsd, layer->fielddim ? NULL : layer->in.dim));
  if (layer->fielddim) PetscFunctionReturn(0); /* out = in = (channels) */
  layer->out.ndim = nsd + 1;
  for (int d = 0; d < nsd; d++) layer->out.dim[d] = win->out[d];
  layer->out.dim[nsd] = layer->in.dim[nsd];
  PetscFunctionReturn(0);
}

/* A layer in point form (layer->fielddim) has no kernels: a copy of it in batch form runs on a box of the field */
PetscErrorCode LayerPoolCheckRunnable_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCheck(!layer->fielddim, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT " is in point form (one point of a %" PetscInt_FMT "-D field): it has no kernels; run a copy of it in batch form on a box of the field",
             ((PetscObject)layer)->type_name, layer->index, layer->fielddim);
  PetscFunctionReturn(0);
}

/* Grid mode (layerimpl.h): the window of the set-up layer, nsd dims slowest first */
static PetscErrorCode LayerGetWindow_Pool(Layer layer, PetscInt *nsd, PetscInt k[], PetscInt step[], PetscInt pad[], PetscInt dilation[])
{
  PetscFunctionBegin;
  PetscCall(LayerWindowGetWindow(layer, (LayerWindow *)layer->data, 0, nsd, k, step, pad, dilation));
  PetscFunctionReturn(0);
}

/* Grid mode: the padding of nsd dims (a Net's copy of the layer on a rank's box pads nothing: the halo does) */
static PetscErrorCode LayerSetPadding_Pool(Layer layer, PetscInt nsd, const PetscInt pad[])
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nsd == 2 || nsd == 3, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s layer %" PetscInt_FMT ": padding of %" PetscInt_FMT " dims; pooling has 2 or 3", ((PetscObject)layer)->type_name, layer->index, nsd);
  PetscCall(LayerWindowSet(layer, win, LAYER_WINDOW_PADDING, nsd, pad));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerResetPool_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerWindowReset((LayerWindow *)layer->data));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerDestroyPool_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetWindow_C", NULL));
  PetscCall(LayerWindowReset((LayerWindow *)layer->data));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* size: the kind's data struct, which starts with a LayerWindow; dilates: the kind has a dilation setting. Default window 2
   along every dim, stride = kernel, no padding, no dilation. */
PetscErrorCode LayerCreatePool_Private(Layer layer, size_t size, PetscBool dilates)
{
  LayerWindow *win;

  PetscFunctionBegin;
  PetscCall(PetscCalloc(size, &win));
  for (int d = 0; d < 3; d++) {
    win->k[d]        = 2;
    win->dilation[d] = 1;
  }
  for (int w = 0; w < 4; w++) win->given[w] = 1;
  win->dilates               = dilates;
  layer->data                = win;
  layer->ops->setarguments   = LayerSetArguments_Pool;
  layer->ops->getarguments   = LayerGetArguments_Pool;
  layer->ops->setfromoptions = LayerSetFromOptionsPool_Private;
  layer->ops->view           = LayerView_Pool;
  layer->ops->getwindow      = LayerGetWindow_Pool;
  layer->ops->setpadding     = LayerSetPadding_Pool;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetWindow_C", LayerPoolSetWindow_Pool));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetKernel - sets the window KH x KW of a maxpool or avgpool layer on (h, w, c) samples (default 2 along every dim)

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. kh    - the window height, > 0
- kw    - the window width, > 0

  Options Database Keys:
+ -<prefix>maxpool_kernel <K, KHxKW or KDxKHxKW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_kernel <K, KHxKW or KDxKHxKW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K or avgpool:K (K as 2, 2x3 or 2x3x3). maxpool takes the maximum over each window,
  avgpool the mean. The stride defaults to the kernel size (non-overlapping windows, LayerPoolSetStride()).
  Along each spatial dimension the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C) and (D, H, W, C) -> (Do, Ho, Wo, C). A pool takes its spatial
  dimensions from its input: a setting with one value (or equal values, kh = kw) holds along every dimension, one
  with a value per dimension must match the input's (LayerPoolSetKernel3d() for volumes).

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerPoolSetKernel3d()`, `LayerPoolSetStride()`, `LayerPoolSetPadding()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerPoolSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  const PetscInt v[2] = {kh, kw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_KERNEL, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetStride - sets the stride SH x SW of a maxpool or avgpool layer on (h, w, c) samples

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. sh    - the stride along the rows, > 0, or 0 for the kernel height (the default)
- sw    - the stride along the columns, > 0, or 0 for the kernel width (the default)

  Options Database Keys:
+ -<prefix>maxpool_stride <S, SHxSW or SDxSHxSW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_stride <S, SHxSW or SDxSHxSW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE (or avgpool:K:STRIDE). A stride of 0, the default, means the kernel size, as
  in PyTorch; the layer's view and its compact form show the stride in effect.
  Along each spatial dimension the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C). LayerPoolSetStride3d() sets the stride of a 3-D pool.

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerPoolSetStride3d()`, `LayerPoolSetKernel()`, `LayerPoolSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  const PetscInt v[2] = {sh, sw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_STRIDE, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetPadding - sets the implicit padding PH x PW on each side of the input of a maxpool or avgpool layer on (h, w, c) samples (default 0)

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. ph    - the padding above and below, >= 0
- pw    - the padding left and right, >= 0

  Options Database Keys:
+ -<prefix>maxpool_padding <P, PHxPW or PDxPHxPW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_padding <P, PHxPW or PDxPHxPW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE:PAD (or avgpool:K:STRIDE:PAD). maxpool pads with -infinity (padded taps never
  win); avgpool pads with zeros that count in the mean, whose divisor is always the window's size KH KW (KD KH KW)
  (PyTorch's count_include_pad = True). As in PyTorch the padding may be at most half the kernel, which set-up checks,
  so that no window lies in the padding only.
  Along each spatial dimension the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C). LayerPoolSetPadding3d() sets the padding of a 3-D pool.

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerPoolSetPadding3d()`, `LayerPoolSetKernel()`, `LayerPoolSetStride()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  const PetscInt v[2] = {ph, pw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_PADDING, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetKernel3d - sets the window KD x KH x KW of a maxpool or avgpool layer on (d, h, w, c) samples: 3-D pooling

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. kd    - the window depth, > 0
. kh    - the window height, > 0
- kw    - the window width, > 0

  Options Database Keys:
+ -<prefix>maxpool_kernel <K or KDxKHxKW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_kernel <K or KDxKHxKW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:KDxKHxKW (e.g. maxpool:2x2x1); maxpool:2 pools 2 x 2 x 2 windows of a volume. The pools
  are PyTorch's MaxPool3d and AvgPool3d (count_include_pad = True): (D, H, W, C) -> (Do, Ho, Wo, C), each output size
  floor((in + 2 padding - kernel) / stride) + 1. Set-up refuses a window of three values on (h, w, c) samples.

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards.

  Level: intermediate

.seealso: `LayerPoolSetKernel()`, `LayerPoolSetStride3d()`, `LayerPoolSetPadding3d()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetKernel3d(Layer layer, PetscInt kd, PetscInt kh, PetscInt kw)
{
  const PetscInt v[3] = {kd, kh, kw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_KERNEL, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetStride3d - sets the stride SD x SH x SW of a maxpool or avgpool layer on (d, h, w, c) samples

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. sd    - the stride along the depth, > 0, or 0 for the kernel's (the default)
. sh    - the stride along the rows, > 0, or 0 for the kernel's
- sw    - the stride along the columns, > 0, or 0 for the kernel's

  Options Database Keys:
+ -<prefix>maxpool_stride <S or SDxSHxSW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_stride <S or SDxSHxSW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE (or avgpool:K:STRIDE), e.g. maxpool:3:2x2x1.

  Level: intermediate

.seealso: `LayerPoolSetKernel3d()`, `LayerPoolSetPadding3d()`, `LayerPoolSetStride()`
@*/
PetscErrorCode LayerPoolSetStride3d(Layer layer, PetscInt sd, PetscInt sh, PetscInt sw)
{
  const PetscInt v[3] = {sd, sh, sw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_STRIDE, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetPadding3d - sets the implicit padding PD x PH x PW on each side of the input of a maxpool or avgpool layer on (d, h, w, c) samples

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. pd    - the padding in front and behind, >= 0
. ph    - the padding above and below, >= 0
- pw    - the padding left and right, >= 0

  Options Database Keys:
+ -<prefix>maxpool_padding <P or PDxPHxPW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_padding <P or PDxPHxPW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE:PAD (or avgpool:K:STRIDE:PAD). As in 2-D, maxpool pads with -infinity, avgpool
  with zeros counted in the mean (divisor KD KH KW), and the padding may be at most half the kernel along each dim.

  Level: intermediate

.seealso: `LayerPoolSetKernel3d()`, `LayerPoolSetStride3d()`, `LayerPoolSetPadding()`
@*/
PetscErrorCode LayerPoolSetPadding3d(Layer layer, PetscInt pd, PetscInt ph, PetscInt pw)
{
  const PetscInt v[3] = {pd, ph, pw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_PADDING, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetDilation - sets the dilation DH x DW of a maxpool layer on (h, w, c) samples: the spacing of its window's taps (default 1)

  Logically collective

  Input Parameters:
+ layer - a maxpool layer (an avgpool layer refuses a dilation other than 1; layers of other kinds ignore the call)
. dh    - the spacing of the taps along the rows, > 0 (1: side by side)
- dw    - the spacing of the taps along the columns, > 0

  Options Database Key:
. -<prefix>maxpool_dilation <D, DHxDW or DDxDHxDW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is maxpool:K:STRIDE:PAD:DILATION (e.g. maxpool:3:1:1:2), PyTorch's MaxPool2d(K, STRIDE, PAD,
  DILATION): tap t of the window at output o reads the input at o STRIDE - PAD + t DILATION, and the output size is
  floor((in + 2 PAD - DILATION (K - 1) - 1) / STRIDE) + 1. The stride still defaults to the kernel size. avgpool has
  no dilation (PyTorch's AvgPool2d has none). LayerPoolSetDilation3d() sets the dilation of a 3-D pool.

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards.

  Level: intermediate

.seealso: `LayerPoolSetDilation3d()`, `LayerPoolSetKernel()`, `LayerPoolSetStride()`, `LayerPoolSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetDilation(Layer layer, PetscInt dh, PetscInt dw)
{
  const PetscInt v[2] = {dh, dw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_DILATION, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetDilation3d - sets the dilation DD x DH x DW of a maxpool layer on (d, h, w, c) samples

  Logically collective

  Input Parameters:
+ layer - a maxpool layer (an avgpool layer refuses a dilation other than 1; layers of other kinds ignore the call)
. dd    - the spacing of the taps along the depth, > 0 (1: side by side)
. dh    - the spacing along the rows, > 0
- dw    - the spacing along the columns, > 0

  Options Database Key:
. -<prefix>maxpool_dilation <D or DDxDHxDW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is maxpool:K:STRIDE:PAD:DILATION (e.g. maxpool:2:1:0:2x2x1), PyTorch's MaxPool3d with dilation.

  Level: intermediate

.seealso: `LayerPoolSetDilation()`, `LayerPoolSetKernel3d()`, `LayerPoolSetStride3d()`, `LayerPoolSetPadding3d()`
@*/
PetscErrorCode LayerPoolSetDilation3d(Layer layer, PetscInt dd, PetscInt dh, PetscInt dw)
{
  const PetscInt v[3] = {dd, dh, dw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_DILATION, 3, v));
  PetscFunctionReturn(0);
}

/*
  oneDNN's key of a pooling layer for n samples (avgpool's and maxpool's float passes): *expressible when oneDNN can
  take the layer at all (not the native backend, batch form, n > 0), sh then its key: 2-D (nhwc) or 3-D (ndhwc), the
  window's kernel, step, padding and dilation along each spatial dim, slowest first (PetNet's dilation: 1 = none)
*/
PetscErrorCode LayerPoolOneDNNKey_Private(Layer layer, PetscInt n, PetNetOneDNNConvShape *sh, PetscBool *expressible)
{
  const LayerWindow *w = (const LayerWindow *)layer->data;

  PetscFunctionBegin;
  *expressible = PETSC_FALSE;
  if (layer->gemm == PETNET_GEMM_NATIVE || (w->nsd != 2 && w->nsd != 3) || layer->fielddim || !n) PetscFunctionReturn(0);
  PetscCall(LayerPoolCheckRunnable_Private(layer));
  PetscCheck((PetscInt64)n * layer->insize <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT ": %" PetscInt_FMT " samples of %" PetscInt_FMT " values overflow PetscInt: use smaller batches (-trainer_batch_size)",
             ((PetscObject)layer)->type_name, layer->index, n, layer->insize);
  PetscCall(PetscMemzero(sh, sizeof(*sh)));
  sh->nsd    = w->nsd;
  sh->n      = n;
  sh->cin    = layer->in.dim[layer->in.ndim - 1];
  sh->cout   = sh->cin;
  sh->groups = 1;
  for (PetscInt d = 0; d < w->nsd; d++) {
    sh->in[d]       = w->in[d];
    sh->out[d]      = w->out[d];
    sh->k[d]        = w->k[d];
    sh->stride[d]   = w->step[d];
    sh->pad[d]      = w->pad[d];
    sh->dilation[d] = w->dilation[d];
  }
  *expressible = PETSC_TRUE;
  PetscFunctionReturn(0);
}
