/*
  The pooling base shared by maxpool and avgpool (layout of the kinds in pool.h): compact arguments K[:STRIDE[:PAD]], options
  -<kind>_kernel, -<kind>_stride, -<kind>_padding, the viewer, set-up of the (Ho, Wo, C) output shape, and the public
  LayerPoolSet...() setters. Each kind's data struct starts with a LayerWindow (window.h), so the shared code casts
  layer->data to it; the kinds add their forward/backward/jvp.
*/
#include "pool.h"

/* stride 0 means "equal to the kernel" (PyTorch's default) */
static void PoolResolveStride(const LayerWindow *win, PetscInt stride[2])
{
  for (int d = 0; d < 2; d++) stride[d] = win->stride[d] ? win->stride[d] : win->k[d];
}

static PetscErrorCode LayerPoolSetKernel_Pool(Layer layer, PetscInt kh, PetscInt kw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(kh > 0 && kw > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s kernel must be positive, not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, kh, kw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->k[0] = kh;
  win->k[1] = kw;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerPoolSetStride_Pool(Layer layer, PetscInt sh, PetscInt sw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(sh >= 0 && sw >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s stride must be positive (or 0 for the kernel size), not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, sh, sw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->stride[0] = sh;
  win->stride[1] = sw;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerPoolSetPadding_Pool(Layer layer, PetscInt ph, PetscInt pw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(ph >= 0 && pw >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s padding must be non-negative, not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, ph, pw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->pad[0] = ph;
  win->pad[1] = pw;
  PetscFunctionReturn(0);
}

/* K[:STRIDE[:PAD]], each an integer or a pair HxW */
static PetscErrorCode LayerSetArguments_Pool(Layer layer, const char args[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  char        copy[256], *field, *saveptr = NULL;
  PetscInt    pair[2], i = 0;

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "%s:%.64s... is longer than %zu characters: give at most K:STRIDE:PAD", kind, args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr), i++) {
    PetscCheck(i < 3, comm, PETSC_ERR_ARG_WRONG, "%s takes at most K:STRIDE:PAD (e.g. %s:3:2:1), not \"%s\"", kind, kind, args);
    PetscCall(LayerWindowParsePair(comm, i == 0 ? "The pooling kernel" : i == 1 ? "The pooling stride" : "The pooling padding", field, pair));
    if (i == 0)
      PetscCall(LayerPoolSetKernel_Pool(layer, pair[0], pair[1]));
    else if (i == 1)
      PetscCall(LayerPoolSetStride_Pool(layer, pair[0], pair[1]));
    else
      PetscCall(LayerPoolSetPadding_Pool(layer, pair[0], pair[1]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Pool(Layer layer, size_t len, char args[])
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[2];
  char         k[32], s[32], p[32];

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscCall(LayerWindowPairToString(win->k, sizeof(k), k));
  PetscCall(LayerWindowPairToString(stride, sizeof(s), s));
  PetscCall(LayerWindowPairToString(win->pad, sizeof(p), p));
  if (win->pad[0] || win->pad[1])
    PetscCall(PetscSNPrintf(args, len, "%s:%s:%s", k, s, p));
  else if (stride[0] != win->k[0] || stride[1] != win->k[1])
    PetscCall(PetscSNPrintf(args, len, "%s:%s", k, s));
  else
    PetscCall(PetscSNPrintf(args, len, "%s", k));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Pool(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  LayerWindow *win  = (LayerWindow *)layer->data;
  const char  *kind = ((PetscObject)layer)->type_name;
  MPI_Comm     comm = PetscObjectComm((PetscObject)layer);
  PetscInt     stride[2], pair[2];
  char         opt[64], value[64];
  PetscBool    flg;

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscOptionsHeadBegin(PetscOptionsObject, "Pooling layer options");
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_kernel", kind));
  PetscCall(LayerWindowPairToString(win->k, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Window size, K or KHxKW", "LayerPoolSetKernel", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetKernel_Pool(layer, pair[0], pair[1]));
  }
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_stride", kind));
  PetscCall(LayerWindowPairToString(stride, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Stride, S or SHxSW (default: the kernel size)", "LayerPoolSetStride", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetStride_Pool(layer, pair[0], pair[1]));
  }
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_padding", kind));
  PetscCall(LayerWindowPairToString(win->pad, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Padding, P or PHxPW (at most half the kernel)", "LayerPoolSetPadding", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetPadding_Pool(layer, pair[0], pair[1]));
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Pool(Layer layer, PetscViewer viewer)
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[2];

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscCall(
      PetscViewerASCIIPrintf(viewer, "kernel %" PetscInt_FMT "x%" PetscInt_FMT ", stride %" PetscInt_FMT "x%" PetscInt_FMT ", padding %" PetscInt_FMT "x%" PetscInt_FMT "\n", win->k[0], win->k[1], stride[0], stride[1], win->pad[0], win->pad[1]));
  PetscFunctionReturn(0);
}

/* Output shape (ho, wo, c); as PyTorch, padding may be at most half the kernel so that no window is all padding. */
/* grid mode (netspatial.c): the window along (h, w), and a copy without padding */
static PetscErrorCode LayerGetWindow_Pool(Layer layer, PetscInt *nsd, PetscInt k[], PetscInt step[], PetscInt pad[], PetscInt dilation[])
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  *nsd = 2;
  for (int d = 0; d < 2; d++) {
    k[d]        = win->k[d];
    step[d]     = win->stride[d] ? win->stride[d] : win->k[d];
    pad[d]      = win->pad[d];
    dilation[d] = 1;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetPadding_Pool(Layer layer, PetscInt nsd, const PetscInt pad[])
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nsd == 2, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s pads 2 dims, not %" PetscInt_FMT, ((PetscObject)layer)->type_name, nsd);
  win->pad[0] = pad[0];
  win->pad[1] = pad[1];
  PetscFunctionReturn(0);
}

PetscErrorCode LayerSetUpPool_Private(Layer layer)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  if (layer->griddim) { /* a node of a Net on a grid: the Net runs a batch-mode copy on each box */
    char shape[64];

    PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
    PetscCheck(layer->griddim == 2 && layer->in.ndim == 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "%s on a %" PetscInt_FMT "-D grid: it pools 2-D grids and takes one grid point, (channels), as a sample, not %s",
               ((PetscObject)layer)->type_name, layer->griddim, shape);
    layer->out = layer->in;
    PetscFunctionReturn(0);
  }
  for (int d = 0; d < 2; d++) {
    PetscCheck(2 * win->pad[d] <= win->k[d], PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s: padding %" PetscInt_FMT " is more than half the kernel %" PetscInt_FMT ": reduce -%s_padding", ((PetscObject)layer)->type_name,
               win->pad[d], win->k[d], ((PetscObject)layer)->type_name);
    win->dilation[d] = 1;
  }
  PetscCall(LayerWindowSetUp(layer, win));
  layer->out.ndim   = 3;
  layer->out.dim[0] = win->out[0];
  layer->out.dim[1] = win->out[1];
  layer->out.dim[2] = layer->in.dim[2];
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
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetKernel_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetStride_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetPadding_C", NULL));
  PetscCall(LayerWindowReset((LayerWindow *)layer->data));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* size: the kind's data struct, which starts with a LayerWindow. Default window 2x2, stride = kernel, no padding. */
PetscErrorCode LayerCreatePool_Private(Layer layer, size_t size)
{
  LayerWindow *win;

  PetscFunctionBegin;
  PetscCall(PetscCalloc(size, &win));
  win->k[0] = win->k[1] = 2;
  win->dilation[0] = win->dilation[1] = 1;
  layer->data                         = win;
  layer->ops->setarguments            = LayerSetArguments_Pool;
  layer->ops->getwindow               = LayerGetWindow_Pool;
  layer->ops->setpadding              = LayerSetPadding_Pool;
  layer->ops->getarguments            = LayerGetArguments_Pool;
  layer->ops->setfromoptions          = LayerSetFromOptions_Pool;
  layer->ops->view                    = LayerView_Pool;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetKernel_C", LayerPoolSetKernel_Pool));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetStride_C", LayerPoolSetStride_Pool));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetPadding_C", LayerPoolSetPadding_Pool));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetKernel - sets the window KH x KW of a maxpool or avgpool layer (default 2x2)

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. kh    - the window height, > 0
- kw    - the window width, > 0

  Options Database Keys:
+ -<prefix>maxpool_kernel <K or KHxKW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_kernel <K or KHxKW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K or avgpool:K (K as 2 or 2x3). maxpool takes the maximum over each window,
  avgpool the mean. The stride defaults to the kernel size (non-overlapping windows, LayerPoolSetStride()).
  Along each of the two dimensions the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C).

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerPoolSetStride()`, `LayerPoolSetPadding()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerPoolSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetKernel_C", (Layer, PetscInt, PetscInt), (layer, kh, kw));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetStride - sets the stride SH x SW of a maxpool or avgpool layer

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. sh    - the stride along the rows, > 0, or 0 for the kernel height (the default)
- sw    - the stride along the columns, > 0, or 0 for the kernel width (the default)

  Options Database Keys:
+ -<prefix>maxpool_stride <S or SHxSW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_stride <S or SHxSW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE (or avgpool:K:STRIDE). A stride of 0, the default, means the kernel size, as
  in PyTorch; the layer's view and its compact form show the stride in effect.
  Along each of the two dimensions the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C).

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerPoolSetKernel()`, `LayerPoolSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetStride_C", (Layer, PetscInt, PetscInt), (layer, sh, sw));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetPadding - sets the implicit padding PH x PW on each side of the input of a maxpool or avgpool layer (default 0)

  Logically collective

  Input Parameters:
+ layer - a maxpool or avgpool layer (layers of other kinds ignore the call)
. ph    - the padding above and below, >= 0
- pw    - the padding left and right, >= 0

  Options Database Keys:
+ -<prefix>maxpool_padding <P or PHxPW> - the same from the options for a maxpool layer (LayerSetFromOptions())
- -<prefix>avgpool_padding <P or PHxPW> - the same for an avgpool layer

  Notes:
  The compact form is maxpool:K:STRIDE:PAD (or avgpool:K:STRIDE:PAD). maxpool pads with -infinity (padded taps never
  win); avgpool pads with zeros that count in the mean, whose divisor is always KH KW (PyTorch's
  count_include_pad = True). As in PyTorch the padding may be at most half the kernel, which set-up checks, so that
  no window lies in the padding only.
  Along each of the two dimensions the output size is floor((in + 2 padding - kernel) / stride) + 1; the channels
  are pooled separately, (H, W, C) -> (Ho, Wo, C).

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerPoolSetKernel()`, `LayerPoolSetStride()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerPoolSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetPadding_C", (Layer, PetscInt, PetscInt), (layer, ph, pw));
  PetscFunctionReturn(0);
}
