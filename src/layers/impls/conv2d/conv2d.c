/*
  conv2d: its algorithm (im2col or Winograd), its set-up, options and view, and the layer's operations, which choose
  between the kernel families (layouts, formulas and the file of each in conv2d.h). Settings, set-up, initialisation
  and tensors are the convolution base's (../conv/conv.c); the public setters below reach them. The layer knows no Net
  mode: on a DMDA its Net runs a batch-mode copy of it on each rank's box (src/net/netspatial.c).

    LayerForward_Conv2d    y = conv(x; W) + b          Conv2dForward_Winograd | ConvForward_Batch
    LayerBackward_Conv2d   dx, dtheta += J^T dy         Conv2dBackward_Winograd | ConvBackward_Batch
    LayerJVP_Conv2d        dy = J_x dx + J_theta dtheta Conv2dJVP_Winograd | ConvJVP_Batch
    LayerSOBackward_Conv2d dxdot += J_x(Wdot)^T dy,     Conv2dSOBackward_Winograd | ConvSOBackward_Batch
                           dWdot += J_W(xdot)^T dy
  Single precision: forwardsingle, backwardsingle, jvpsingle run oneDNN's convolution primitives where the Net's
  backend is onednn and oneDNN has kernels for the shape (../conv/convonednn.c), else Conv2d*Single_Winograd
  (conv2dwinograd.c, on float) where the double path uses Winograd, else the base's float im2col kernels
  (ConvForwardSingle_Batch, ...; ../conv/convbatch.c on float).
*/
#include "conv2d.h"

const char *const Conv2dAlgorithms[] = {"auto", "im2col", "winograd", "taps", "Conv2dAlgorithm", "CONV2D_ALGORITHM_", NULL};

/*
  The algorithms (layouts and costs in conv2d.h):
    im2col    im2col + GEMM; applies to all
    winograd  F(2x2, 3x3); applies to 3x3, stride-1, undilated, ungrouped convolutions, elsewhere im2col is used
    taps      one GEMM per kernel tap and output row (../conv/convtaps.h); applies to ungrouped convolutions of stride 1
              along the rows, elsewhere im2col is used
  auto takes taps for large samples with long rows (at least CONV_TAPS_MIN_PIXELS output points, rows of at least
  CONV_TAPS_MIN_WIDTH): a rank's box of a field on a DMDA, one sample too large for a chunk of im2col's or Winograd's
  workspace, where taps read the input in place (measured 1.7x faster than either on a 1024^2 field of 8 channels).
  Elsewhere it takes Winograd where it applies and there are enough input channels for its 16 GEMMs (inner dimension
  Cin) to be efficient; with 1 to 3 input channels im2col's single GEMM (inner dimension 9 Cin) is faster.
*/
static void Conv2dChooseAlgorithm(Layer_Conv2d *conv, PetscBool *usetaps)
{
  const LayerConv   *c        = &conv->base;
  const LayerWindow *w        = &c->win;
  const PetscBool    winograd = (PetscBool)(w->k[0] == 3 && w->k[1] == 3 && w->step[0] == 1 && w->step[1] == 1 && w->dilation[0] == 1 && w->dilation[1] == 1 && c->groups == 1);

  const PetscBool taps = ConvTapsApplies(c);

  *usetaps = PETSC_FALSE;
  switch (conv->algorithm) {
  case CONV2D_ALGORITHM_IM2COL:
    conv->wg.on = PETSC_FALSE;
    break;
  case CONV2D_ALGORITHM_WINOGRAD:
    conv->wg.on = winograd;
    break;
  case CONV2D_ALGORITHM_TAPS:
    conv->wg.on = PETSC_FALSE;
    *usetaps    = taps;
    break;
  case CONV2D_ALGORITHM_AUTO:
    *usetaps    = (PetscBool)(taps && !c->pointwise && w->out[1] >= CONV_TAPS_MIN_WIDTH && c->pixels >= CONV_TAPS_MIN_PIXELS);
    conv->wg.on = (PetscBool)(!*usetaps && winograd && c->cin >= CONV2D_WINOGRAD_MIN_CHANNELS);
    break;
  }
}

/* Winograd's workspaces (double and float) and the taps' state: what set-up chooses and sizes */
static PetscErrorCode Conv2dResetKernels(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(Conv2dResetWorkspace_Winograd(layer));
  PetscCall(Conv2dResetWorkspaceSingle_Winograd(layer));
  PetscCall(ConvTapsReset(&((Layer_Conv2d *)layer->data)->taps));
  PetscFunctionReturn(0);
}

/*
  The float ops (a Net at single or bfloat16): on oneDNN's convolution primitives where the Net asks for it and oneDNN
  has kernels for the shape (../conv/convonednn.c), else Winograd where the double path uses it, else the base's
  im2col (or direct) float kernels. The choice is made per call from (backend, batch size), the same for forward,
  backward and jvp at one point.
*/
static PetscErrorCode LayerForwardActSingle_Conv2d(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvForwardActSingle_OneDNN(layer, act, n, theta, x, y));
  else if (((Layer_Conv2d *)layer->data)->wg.on)
    PetscCall(Conv2dForwardActSingle_Winograd(layer, act, n, theta, x, y));
  else
    PetscCall(ConvForwardActSingle_Batch(layer, act, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForwardSingle_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(LayerForwardActSingle_Conv2d(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvBackwardSingle_OneDNN(layer, n, theta, x, y, dy, dx, dtheta));
  else if (((Layer_Conv2d *)layer->data)->wg.on)
    PetscCall(Conv2dBackwardSingle_Winograd(layer, n, theta, x, y, dy, dx, dtheta));
  else
    PetscCall(ConvBackwardSingle_Batch(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscBool dnn;

  PetscFunctionBegin;
  PetscCall(ConvOneDNNApplies(layer, n, &dnn));
  if (dnn)
    PetscCall(ConvJVPSingle_OneDNN(layer, n, theta, x, y, dx, dtheta, dy));
  else if (((Layer_Conv2d *)layer->data)->wg.on)
    PetscCall(Conv2dJVPSingle_Winograd(layer, n, theta, x, y, dx, dtheta, dy));
  else
    PetscCall(ConvJVPSingle_Batch(layer, n, theta, x, y, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_Conv2d(Layer layer)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;
  PetscBool     usetaps;

  PetscFunctionBegin;
  PetscCall(Conv2dResetKernels(layer));
  conv->wg.on = PETSC_FALSE;
  PetscCall(LayerSetUpConv_Private(layer)); /* (H, W, Cin) samples; or point form */
  if (layer->fielddim) PetscFunctionReturn(0);
  conv->wg.tiles[0] = (conv->base.win.out[0] + 1) / 2;
  conv->wg.tiles[1] = (conv->base.win.out[1] + 1) / 2;
  Conv2dChooseAlgorithm(conv, &usetaps);
  if (usetaps) PetscCall(ConvTapsSetUp(layer, &conv->taps));
  /* single precision: oneDNN where the Net asks for it, else Winograd where double uses it, else the base's im2col */
  layer->ops->forwardsingle    = LayerForwardSingle_Conv2d;
  layer->ops->forwardactsingle = LayerForwardActSingle_Conv2d;
  layer->ops->backwardsingle   = LayerBackwardSingle_Conv2d;
  layer->ops->jvpsingle        = LayerJVPSingle_Conv2d;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Conv2d(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(Conv2dResetKernels(layer));
  PetscCall(LayerResetConv_Private(layer));
  PetscFunctionReturn(0);
}

/*
  The layer's operations choose the kernels: Winograd F(2x2, 3x3) (conv2dwinograd.c) or im2col + GEMM
  (../conv/convbatch.c). The two compute the same function of the same theta. A layer in point form (layer->fielddim)
  has no kernels (LayerConvCheckRunnable_Private()): a copy of it in batch form runs on a box of the field.
*/
/* y = act(conv(x; W) + b), act an activation passed by the caller (NULL: none), applied in each kernel's output pass */
static PetscErrorCode LayerForwardAct_Conv2d(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (!n)
    PetscFunctionReturn(0);
  else if (conv->taps.on)
    PetscCall(ConvForward_Taps(layer, &conv->taps, act, n, theta, x, y));
  else if (conv->wg.on)
    PetscCall(Conv2dForwardAct_Winograd(layer, act, n, theta, x, y));
  else
    PetscCall(ConvForwardAct_Batch(layer, act, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LayerForwardAct_Conv2d(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (!n)
    PetscFunctionReturn(0);
  else if (conv->taps.on)
    PetscCall(ConvBackward_Taps(layer, &conv->taps, n, theta, x, dy, dx, dtheta));
  else if (conv->wg.on)
    PetscCall(Conv2dBackward_Winograd(layer, n, theta, x, y, dy, dx, dtheta));
  else
    PetscCall(ConvBackward_Batch(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (!n)
    PetscFunctionReturn(0);
  else if (conv->taps.on)
    PetscCall(ConvJVP_Taps(layer, &conv->taps, n, theta, x, dx, dtheta, dy));
  else if (conv->wg.on)
    PetscCall(Conv2dJVP_Winograd(layer, n, theta, x, y, dx, dtheta, dy));
  else
    PetscCall(ConvJVP_Batch(layer, n, theta, x, y, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

/*
  The curvature term: backward is bilinear in (W, x), so its derivative along (xdot, Wdot) is backward's own input part
  with Wdot for W and weight part with xdot for x; the bias gradient sum dy is constant (no term, dthetadot's bias
  entries untouched). The kernels write their scratch buffers (im2col/Winograd columns) and forget the
  columns of x kept by forward, so that later backward and jvp calls at the point recompute them.
*/
static PetscErrorCode LayerSOBackward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                             PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (!n)
    PetscFunctionReturn(0);
  else if (conv->taps.on)
    PetscCall(ConvSOBackward_Taps(layer, &conv->taps, n, xdot, thetadot, dy, dxdot, dthetadot));
  else if (conv->wg.on)
    PetscCall(Conv2dSOBackward_Winograd(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
  else
    PetscCall(ConvSOBackward_Batch(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Conv2d(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Conv2d   *conv      = (Layer_Conv2d *)layer->data;
  Conv2dAlgorithm algorithm = conv->algorithm;
  PetscBool       set, workspace;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "2-D convolution layer options");
  PetscCall(LayerSetFromOptionsConv_Private(layer, PetscOptionsObject, &workspace));
  if (workspace) {
    PetscCall(Conv2dResetWorkspace_Winograd(layer));
    PetscCall(Conv2dResetWorkspaceSingle_Winograd(layer));
  }
  PetscCall(PetscOptionsEnum("-conv2d_algorithm", "auto, im2col, winograd (F(2x2,3x3) where it applies: 3x3, stride 1, no dilation, one group), or taps (one GEMM per kernel tap and row: one group, stride 1 along the rows); im2col elsewhere", "",
                             Conv2dAlgorithms, (PetscEnum)conv->algorithm, (PetscEnum *)&algorithm, &set));
  if (set && algorithm != conv->algorithm) {
    if (layer->setupcalled) PetscCall(LayerReset(layer));
    conv->algorithm = algorithm;
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Conv2d(Layer layer, PetscViewer viewer)
{
  Layer_Conv2d *conv    = (Layer_Conv2d *)layer->data;
  char          std[64] = "";

  PetscFunctionBegin;
  PetscCall(LayerViewConv_Private(layer, viewer));
  if (conv->base.init == LAYER_INIT_NORMAL) PetscCall(PetscSNPrintf(std, sizeof(std), " (std %g)", (double)conv->base.initstd));
  if (layer->setupcalled && layer->fielddim) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s\n", LayerInitTypes[conv->base.init], std));
    PetscCall(PetscViewerASCIIPrintf(viewer, "point form on a %" PetscInt_FMT "-D field: (channels) -> (output channels)\n", layer->fielddim));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s, algorithm %s%s, chunks of samples in %.2f MB of workspace\n", LayerInitTypes[conv->base.init], std, Conv2dAlgorithms[conv->algorithm],
                                   !layer->setupcalled             ? ""
                                   : conv->taps.on                 ? " (taps: one GEMM per kernel tap and row)"
                                   : conv->wg.on                   ? " (Winograd F(2x2,3x3))"
                                   : conv->base.pointwise          ? " (1x1: GEMM on the input)"
                                   : ConvDirectSingle(&conv->base) ? " (im2col + GEMM; single precision: direct)"
                                                                   : " (im2col + GEMM)",
                                   (double)conv->base.maxworkspace));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Conv2d(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(Conv2dResetKernels(layer));
  PetscCall(LayerDestroyConv_Private(layer));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetOutputChannels - sets the number of output channels of a conv2d layer

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
- nout  - the number of output channels Cout, > 0

  Options Database Key:
. -<prefix>conv2d_outputs <n> - the same from the options (LayerSetFromOptions())

  Notes:
  A conv2d layer needs it (there is no default): set-up fails without. The compact form gives it first, conv2d:OUT
  (LayerSetArguments()). It must be a multiple of the number of groups (LayerConv2dSetGroups()). The output shape is
  (Ho, Wo, nout) on (H, W, Cin) images, (nout) at each grid point of a Net in grid mode (NetSetGrid()); the parameters are
  the weights W, nout x KH KW Cin/groups entries stored [Cout][KH][KW][Cg], then the bias, nout entries.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetGroups()`, `LayerConv2dSetBias()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerConv2dSetOutputChannels(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetOutputChannels_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetKernel - sets the kernel size KH x KW of a conv2d layer (default 3x3)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
. kh    - the kernel height (along the rows), > 0
- kw    - the kernel width (along the columns), > 0

  Options Database Key:
. -<prefix>conv2d_kernel <K or KHxKW> - the same from the options, one value for both dimensions or a pair HxW (LayerSetFromOptions())

  Notes:
  The compact form is conv2d:OUT:K (K as 3 or 3x5). In batch mode the layer convolves (H, W, Cin) images;
  a 3x3 kernel with stride 1, dilation 1 and one group is computed by Winograd F(2x2, 3x3) when there are at least
  4 input channels (-conv2d_algorithm auto, the default), every other case by im2col + GEMM.
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerConv2dSetStride()`, `LayerConv2dSetPadding()`, `LayerConv2dSetDilation()`, `LayerConv2dSetOutputChannels()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  const PetscInt v[2] = {kh, kw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_KERNEL, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetStride - sets the stride SH x SW of a conv2d layer (default 1x1)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
. sh    - the stride along the rows, > 0
- sw    - the stride along the columns, > 0

  Options Database Key:
. -<prefix>conv2d_stride <S or SHxSW> - the same from the options, one value for both dimensions or a pair HxW (LayerSetFromOptions())

  Notes:
  The compact form is conv2d:OUT:K:STRIDE. A stride other than 1 rules out Winograd (im2col + GEMM is used).
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetPadding()`, `LayerConv2dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  const PetscInt v[2] = {sh, sw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_STRIDE, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetPadding - sets the zero padding PH x PW on each side of a conv2d layer's input (default 0)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
. ph    - the padding above and below, >= 0
- pw    - the padding left and right, >= 0

  Options Database Key:
. -<prefix>conv2d_padding <P or PHxPW> - the same from the options, one value for both dimensions or a pair HxW (LayerSetFromOptions())

  Notes:
  The compact form is conv2d:OUT:K:STRIDE:PAD. Taps in the padding read zero (PyTorch's padding_mode zeros); with
  stride 1, dilation 1 and an odd kernel K, padding K/2 keeps the image size. In a Net on a DMDA (NetSetGrid(),
  NetDMDASetUp()) the taps off a non-periodic grid read zero and those off a periodic grid wrap around.
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetStride()`, `LayerConv2dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  const PetscInt v[2] = {ph, pw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_PADDING, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetDilation - sets the spacing DH x DW of the kernel taps of a conv2d layer (default 1x1)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
. dh    - the spacing of the taps along the rows, > 0
- dw    - the spacing of the taps along the columns, > 0

  Options Database Key:
. -<prefix>conv2d_dilation <D or DHxDW> - the same from the options, one value for both dimensions or a pair HxW (LayerSetFromOptions())

  Notes:
  The compact form is the named setting dilation=D (e.g. conv2d:32:3:1:2:dilation=2). A kernel of K taps then spans
  D (K - 1) + 1 input points. A dilation other than 1 rules out Winograd (im2col + GEMM is used).
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetStride()`, `LayerConv2dSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetDilation(Layer layer, PetscInt dh, PetscInt dw)
{
  const PetscInt v[2] = {dh, dw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_DILATION, 2, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetGroups - sets the number of groups of a conv2d layer: grouped convolution (default 1)

  Logically collective

  Input Parameters:
+ layer  - a conv2d layer (layers of other kinds ignore the call)
- groups - the number of groups G, > 0

  Options Database Key:
. -<prefix>conv2d_groups <G> - the same from the options (LayerSetFromOptions())

  Notes:
  The input channels Cin and the output channels Cout are split into G groups of Cin/G and Cout/G; each group of
  outputs is convolved with its own group of inputs only (PyTorch's groups; G = Cin = Cout is a depthwise convolution).
  G must divide both, which set-up checks. The weights are Cout x KH KW Cin/G entries. The compact form is the named
  setting groups=G. More than one group rules out Winograd (im2col + GEMM is used).

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetOutputChannels()`, `LayerConv2dSetKernel()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetGroups(Layer layer, PetscInt groups)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetGroups_C", (Layer, PetscInt), (layer, groups));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetBias - sets whether a conv2d layer adds a bias per output channel (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
- bias  - `PETSC_TRUE` to add a bias b[Cout] after the convolution, `PETSC_FALSE` for none

  Options Database Key:
. -<prefix>conv2d_bias <bool> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is the named setting bias=0 or bias=1. The bias, when present, follows the weights in the layer's
  parameters and starts at zero. A convolution followed by batchnorm usually goes without.

  Changing it on a layer that is set up resets the layer (its number of parameters changes); in a Net that is set up,
  call NetReset() afterwards (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetOutputChannels()`, `LayerConv2dSetInitialization()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetInitialization - sets how the weights of a conv2d layer start (the bias starts at zero)

  Logically collective

  Input Parameters:
+ layer - a conv2d layer (layers of other kinds ignore the call)
. init  - `LAYER_INIT_KAIMING` (the default), `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS`
- std   - the standard deviation of `LAYER_INIT_NORMAL` (default 0.01)

  Options Database Keys:
+ -<prefix>conv2d_init <kaiming,xavier,normal,zeros> - the distribution
- -<prefix>conv2d_init_std <std>                     - the standard deviation of normal, >= 0

  Notes:
  Takes effect at the next initialisation of the parameters (NetSetUp(), NetInitializeParameters()), as PyTorch's
  kaiming_normal_ / xavier_uniform_ with fan-in Cin/groups KH KW and fan-out Cout KH KW (LayerInitializeWeights()).
  It does not reset the layer.

  Level: intermediate

.seealso: `LayerConv2dSetOutputChannels()`, `LayerConv2dSetBias()`, `LayerInitializeWeights()`, `NetInitializeParameters()`
@*/
PetscErrorCode LayerConv2dSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

/* A node of a grid, an overlapped halo exchange (src/net/netspatial.c): the box changed after forward, so backward recomputes im2col's columns
   and Winograd's V(x) */
static PetscErrorCode LayerForget_Conv2d(Layer layer)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  conv->base.dbl.colx = NULL;
  conv->base.sgl.colx = NULL;
  conv->wg.dbl.Vx     = NULL;
  conv->wg.sgl.Vx     = NULL;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Conv2d(Layer layer)
{
  Layer_Conv2d *conv;

  PetscFunctionBegin;
  PetscCall(LayerCreateConv_Private(layer, sizeof(Layer_Conv2d), 2));
  conv                       = (Layer_Conv2d *)layer->data;
  conv->algorithm            = CONV2D_ALGORITHM_AUTO;
  layer->ops->setup          = LayerSetUp_Conv2d;
  layer->ops->forward        = LayerForward_Conv2d;
  layer->ops->forwardact     = LayerForwardAct_Conv2d; /* an activation on each chunk of its output (layerimpl.h); in float: set-up */
  layer->ops->backward       = LayerBackward_Conv2d;
  layer->ops->jvp            = LayerJVP_Conv2d;
  layer->ops->sobackward     = LayerSOBackward_Conv2d;
  layer->ops->setfromoptions = LayerSetFromOptions_Conv2d;
  layer->ops->view           = LayerView_Conv2d;
  layer->ops->reset          = LayerReset_Conv2d;
  layer->ops->forget         = LayerForget_Conv2d;
  layer->ops->destroy        = LayerDestroy_Conv2d;
  PetscFunctionReturn(0);
}
