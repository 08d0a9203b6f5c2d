/*
  conv3d: a 3-D convolution (cross-correlation, as PyTorch's Conv3d) of (d, h, w, c) channels-last volumes, batch mode.
  The layouts, formulas, settings and kernels are those of the convolution base it shares with conv2d
  (../conv/conv.h), with nsd = 3:

    x      [n][D][H][W][Cin]           y  [n][Do][Ho][Wo][Cout]
    W      [Cout][KD][KH][KW][Cg]      Cg = Cin / G; PyTorch [Cout][Cg][KD][KH][KW] (torch = ours.permute(0, 4, 1, 2, 3))
    b      [Cout]                      theta = [W, b]

    forward   y = conv(x; W) + b                      vol2col (the N-d im2col, ../conv/convim2col.c) + one GEMM per group
    backward  dW += col(x) dy^T, db += sum dy,        dx = col2im(W dy)
    jvp       dy = conv(dx; W) + conv(x; dW) + db
    sobackward  bilinear in (W, x): dWdot += col(xdot) dy^T, dxdot += col2im(Wdot dy); the bias term is zero

  The batch is processed in chunks of output rows (the Wo points of one (od, oh)), as many as fit with their columns
  and outputs in -conv3d_max_workspace MB: a 32^3 volume's columns with a 3x3x3 kernel over 4 channels take 28 MB, so a
  chunk is a slab of the volume, and the column buffer stays bounded whatever the sample.
  In point form (layer->fielddim, layerimpl.h) the layer is (Cin) -> (Cout); a copy of it in batch form runs on each box.
*/
#include "../conv/conv.h"

typedef struct {
  LayerConv base; /* first: the shared convolution code casts layer->data to LayerConv */
} Layer_Conv3d;

/* y = act(conv(x; W) + b), act an activation passed by the caller (NULL: none), applied to each chunk of rows */
static PetscErrorCode LayerForwardAct_Conv3d(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (n) PetscCall(ConvForwardAct_Batch(layer, act, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Conv3d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LayerForwardAct_Conv3d(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Conv3d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (n) PetscCall(ConvBackward_Batch(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Conv3d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (n) PetscCall(ConvJVP_Batch(layer, n, theta, x, y, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

/* The curvature term: backward is bilinear in (W, x); its bias part sum dy depends on neither (conv.h) */
static PetscErrorCode LayerSOBackward_Conv3d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                             PetscScalar *dxdot, PetscScalar *dthetadot)
{
  PetscFunctionBegin;
  PetscCall(LayerConvCheckRunnable_Private(layer));
  if (n) PetscCall(ConvSOBackward_Batch(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Conv3d(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  PetscBool workspace;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "3-D convolution layer options");
  PetscCall(LayerSetFromOptionsConv_Private(layer, PetscOptionsObject, &workspace));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Conv3d(Layer layer, PetscViewer viewer)
{
  LayerConv *conv    = (LayerConv *)layer->data;
  char       std[64] = "", work[128] = "";

  PetscFunctionBegin;
  PetscCall(LayerViewConv_Private(layer, viewer));
  if (conv->init == LAYER_INIT_NORMAL) PetscCall(PetscSNPrintf(std, sizeof(std), " (std %g)", (double)conv->initstd));
  if (layer->setupcalled && layer->fielddim)
    PetscCall(PetscSNPrintf(work, sizeof(work), ", point form on a %" PetscInt_FMT "-D field: (channels) -> (output channels)", layer->fielddim));
  else if (layer->setupcalled)
    PetscCall(PetscSNPrintf(work, sizeof(work), ", %s, chunks of output rows in %.2f MB of workspace",
                            conv->pointwise          ? "1x1x1: GEMM on the input"
                            : ConvDirectSingle(conv) ? "vol2col + GEMM (single precision: direct)"
                                                     : "vol2col + GEMM",
                            (double)conv->maxworkspace));
  PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s%s\n", LayerInitTypes[conv->init], std, work));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetOutputChannels - sets the number of output channels of a conv3d layer

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
- nout  - the number of output channels Cout, > 0

  Options Database Key:
. -<prefix>conv3d_outputs <n> - the same from the options (LayerSetFromOptions())

  Notes:
  A conv3d layer needs it (there is no default): set-up fails without. The compact form gives it first, conv3d:OUT
  (LayerSetArguments()). It must be a multiple of the number of groups (LayerConv3dSetGroups()). The output shape is
  (Do, Ho, Wo, nout) on (D, H, W, Cin) volumes; the parameters are the weights W, nout x KD KH KW Cin/groups entries
  stored [Cout][KD][KH][KW][Cg], then the bias, nout entries.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerConv3dSetKernel()`, `LayerConv3dSetGroups()`, `LayerConv3dSetBias()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerConv3dSetOutputChannels(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetOutputChannels_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetKernel - sets the kernel size KD x KH x KW of a conv3d layer (default 3x3x3)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
. kd    - the kernel depth, > 0
. kh    - the kernel height (along the rows), > 0
- kw    - the kernel width (along the columns), > 0

  Options Database Key:
. -<prefix>conv3d_kernel <K or KDxKHxKW> - the same from the options, one value for every dimension or a triple DxHxW (LayerSetFromOptions())

  Notes:
  The compact form is conv3d:OUT:K (K as 3 or 3x3x5). The layer convolves (D, H, W, Cin) volumes by vol2col + GEMM.
  Along each of the three dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerConv3dSetStride()`, `LayerConv3dSetPadding()`, `LayerConv3dSetDilation()`, `LayerConv3dSetOutputChannels()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetKernel(Layer layer, PetscInt kd, PetscInt kh, PetscInt kw)
{
  const PetscInt v[3] = {kd, kh, kw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_KERNEL, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetStride - sets the stride SD x SH x SW of a conv3d layer (default 1x1x1)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
. sd    - the stride along the depth, > 0
. sh    - the stride along the rows, > 0
- sw    - the stride along the columns, > 0

  Options Database Key:
. -<prefix>conv3d_stride <S or SDxSHxSW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is conv3d:OUT:K:STRIDE. Along each dimension the output size is
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Level: intermediate

.seealso: `LayerConv3dSetKernel()`, `LayerConv3dSetPadding()`, `LayerConv3dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetStride(Layer layer, PetscInt sd, PetscInt sh, PetscInt sw)
{
  const PetscInt v[3] = {sd, sh, sw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_STRIDE, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetPadding - sets the zero padding PD x PH x PW on each side of a conv3d layer's input (default 0)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
. pd    - the padding in front and behind, >= 0
. ph    - the padding above and below, >= 0
- pw    - the padding left and right, >= 0

  Options Database Key:
. -<prefix>conv3d_padding <P or PDxPHxPW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is conv3d:OUT:K:STRIDE:PAD. Taps in the padding read zero (PyTorch's padding_mode zeros); with
  stride 1, dilation 1 and an odd kernel K, padding K/2 keeps the volume's size.

  Level: intermediate

.seealso: `LayerConv3dSetKernel()`, `LayerConv3dSetStride()`, `LayerConv3dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetPadding(Layer layer, PetscInt pd, PetscInt ph, PetscInt pw)
{
  const PetscInt v[3] = {pd, ph, pw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_PADDING, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetDilation - sets the spacing DD x DH x DW of the kernel taps of a conv3d layer (default 1x1x1)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
. dd    - the spacing of the taps along the depth, > 0
. dh    - the spacing of the taps along the rows, > 0
- dw    - the spacing of the taps along the columns, > 0

  Options Database Key:
. -<prefix>conv3d_dilation <D or DDxDHxDW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is the fifth positional field or the named setting dilation=D (conv3d:8:3:1:2:2 and
  conv3d:8:3:1:2:dilation=2 are the same layer). A kernel of K taps then spans D (K - 1) + 1 input points.

  Level: intermediate

.seealso: `LayerConv3dSetKernel()`, `LayerConv3dSetStride()`, `LayerConv3dSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetDilation(Layer layer, PetscInt dd, PetscInt dh, PetscInt dw)
{
  const PetscInt v[3] = {dd, dh, dw};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetWindow_C", (Layer, LayerWindowSetting, PetscInt, const PetscInt[]), (layer, LAYER_WINDOW_DILATION, 3, v));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetGroups - sets the number of groups of a conv3d layer: grouped convolution (default 1)

  Logically collective

  Input Parameters:
+ layer  - a conv3d layer (layers of other kinds ignore the call)
- groups - the number of groups G, > 0

  Options Database Key:
. -<prefix>conv3d_groups <G> - the same from the options (LayerSetFromOptions())

  Notes:
  The input channels Cin and the output channels Cout are split into G groups of Cin/G and Cout/G; each group of
  outputs is convolved with its own group of inputs only (PyTorch's groups). G must divide both, which set-up checks.
  The compact form is the sixth positional field or the named setting groups=G.

  Level: intermediate

.seealso: `LayerConv3dSetOutputChannels()`, `LayerConv3dSetKernel()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetGroups(Layer layer, PetscInt groups)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetGroups_C", (Layer, PetscInt), (layer, groups));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetBias - sets whether a conv3d layer adds a bias per output channel (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
- bias  - `PETSC_TRUE` to add a bias b[Cout] after the convolution, `PETSC_FALSE` for none

  Options Database Key:
. -<prefix>conv3d_bias <bool> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is the named setting bias=0 or bias=1. The bias, when present, follows the weights in the layer's
  parameters and starts at zero.

  Level: intermediate

.seealso: `LayerConv3dSetOutputChannels()`, `LayerConv3dSetInitialization()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv3dSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dSetInitialization - sets how the weights of a conv3d layer start (the bias starts at zero)

  Logically collective

  Input Parameters:
+ layer - a conv3d layer (layers of other kinds ignore the call)
. init  - `LAYER_INIT_KAIMING` (the default), `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS`
- std   - the standard deviation of `LAYER_INIT_NORMAL` (default 0.01)

  Options Database Keys:
+ -<prefix>conv3d_init <kaiming,xavier,normal,zeros> - the distribution
- -<prefix>conv3d_init_std <std>                     - the standard deviation of normal, >= 0

  Notes:
  Takes effect at the next initialisation of the parameters, as PyTorch's kaiming_normal_ / xavier_uniform_ with
  fan-in Cin/groups KD KH KW and fan-out Cout KD KH KW (LayerInitializeWeights()).

  Level: intermediate

.seealso: `LayerConv3dSetOutputChannels()`, `LayerConv3dSetBias()`, `LayerInitializeWeights()`, `NetInitializeParameters()`
@*/
PetscErrorCode LayerConv3dSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv3dSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

/*@
  LayerConv3dGetPatchLayout - the shape of the patches (receptive fields) a conv3d layer's weights multiply

  Not collective

  Input Parameter:
. layer - a conv3d layer, set up

  Output Parameters:
+ groups - the number of groups G (may be NULL)
. kg     - the patch length of a group, KD KH KW Cin/G: each group's weights are Cout/G rows of kg entries (may be NULL)
. pixels - the output points of a sample, Do Ho Wo (1 on a node of a grid, where a sample is a grid point) (may be NULL)
- bias   - whether the layer adds a bias per output channel, stored after the weights (may be NULL)

  Notes:
  The layer's parameters are W [Cout][KD][KH][KW][Cin/G] followed by b [Cout] when bias is set; the rows of W of group
  g are g Cout/G .. (g + 1) Cout/G - 1. A Net that splits the layer's weights over ranks (`partition=`) cuts W by
  these rows (output channels) and, within each of the KD KH KW taps of a row, by input channels.

  Level: developer

.seealso: `LayerConv2dGetPatchLayout()`, `LayerConv3dSetGroups()`, `LayerConv3dSetBias()`, `NetSetNodePartition()`
@*/
PetscErrorCode LayerConv3dGetPatchLayout(Layer layer, PetscInt *groups, PetscInt *kg, PetscInt *pixels, PetscBool *bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerConv3dGetPatchLayout_C", (Layer, PetscInt *, PetscInt *, PetscInt *, PetscBool *), (layer, groups, kg, pixels, bias));
  PetscFunctionReturn(0);
}

/*@C
  LayerConv3dGetPatches - the receptive fields (vol2col) of a batch for a conv3d layer in batch mode: for every sample
  and output point, the entries of the input that each group's weights multiply

  Not collective

  Input Parameters:
+ layer - a conv3d layer, set up, in batch mode
. n     - the number of samples
- x     - the input, [n][D][H][W][Cin]

  Output Parameter:
. col - [n Do Ho Wo][G][KD][KH][KW][Cin/G], n Do Ho Wo G kg entries (LayerConv3dGetPatchLayout()), overwritten; taps in
        the padding are zero

  Notes:
  With W_g the weights of group g as a (Cout/G) x kg row-major matrix and col_g[p] the kg entries of group g of row p,
  the output at point p is y[p][g Cout/G + o] = b[g Cout/G + o] + (W_g col_g[p])[o], as for conv2d
  (LayerConv2dGetPatches(), the same code). K-FAC's factors of a conv3d layer are computed from these. A node of a
  grid (point form, NetSetGrid()) has no patches: its batch-mode copies on the ranks' boxes do.

  Level: developer

.seealso: `LayerConv3dGetPatchLayout()`, `LayerConv2dGetPatches()`, `LayerForwardArray()`
@*/
PetscErrorCode LayerConv3dGetPatches(Layer layer, PetscInt n, const PetscScalar x[], PetscScalar col[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The number of samples must be >= 0, not %" PetscInt_FMT, n);
  if (n) {
    PetscValidScalarPointer(x, 3);
    PetscValidScalarPointer(col, 4);
  }
  PetscUseMethod(layer, "LayerConv3dGetPatches_C", (Layer, PetscInt, const PetscScalar *, PetscScalar *), (layer, n, x, col));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Conv3d(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreateConv_Private(layer, sizeof(Layer_Conv3d), 3));
  layer->ops->setup          = LayerSetUpConv_Private;
  layer->ops->forward        = LayerForward_Conv3d;
  layer->ops->forwardact     = LayerForwardAct_Conv3d; /* an activation on each chunk (layerimpl.h); in float: LayerConvSetSingle_Private() */
  layer->ops->backward       = LayerBackward_Conv3d;
  layer->ops->jvp            = LayerJVP_Conv3d;
  layer->ops->sobackward     = LayerSOBackward_Conv3d;
  layer->ops->setfromoptions = LayerSetFromOptions_Conv3d;
  layer->ops->view           = LayerView_Conv3d;
  layer->ops->reset          = LayerResetConv_Private;
  layer->ops->destroy        = LayerDestroyConv_Private;
  PetscFunctionReturn(0);
}
