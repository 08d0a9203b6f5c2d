/* conv2d: settings, shapes, initialisation, PyTorch tensor names, and the choice between batch mode (kernels in
   conv2dkernels.c and winograd.c) and grid mode on a DMDA (grid.c, gridkernels.c). */
#include "conv2d.h"

const char *const Conv2dAlgorithms[] = {"auto", "im2col", "winograd", "Conv2dAlgorithm", "CONV2D_ALGORITHM_", NULL};

/*
  The algorithms (layouts and costs in conv2d.h):
    im2col    im2col + GEMM; applies to all
    winograd  F(2x2, 3x3); applies to 3x3, stride-1, undilated, ungrouped convolutions, elsewhere im2col is used
  auto takes Winograd where it applies and there are enough input channels for its 16 GEMMs (inner dimension Cin) to
  be efficient; with 1 to 3 input channels im2col's single GEMM (inner dimension 9 Cin) is faster.
*/
static void Conv2dChooseAlgorithm(Layer_Conv2d *conv)
{
  const LayerWindow *w        = &conv->win;
  const PetscBool    winograd = (PetscBool)(w->k[0] == 3 && w->k[1] == 3 && w->step[0] == 1 && w->step[1] == 1 && w->dilation[0] == 1 && w->dilation[1] == 1 && conv->groups == 1);

  switch (conv->algorithm) {
  case CONV2D_ALGORITHM_IM2COL:
    conv->winograd = PETSC_FALSE;
    break;
  case CONV2D_ALGORITHM_WINOGRAD:
    conv->winograd = winograd;
    break;
  case CONV2D_ALGORITHM_AUTO:
    conv->winograd = (PetscBool)(winograd && conv->cin >= CONV2D_WINOGRAD_MIN_CHANNELS);
    break;
  }
  /* with few taps, OpenBLAS is much faster on the transposed weight-gradient product (see Conv2dGemmWeights) */
  conv->dwtransposed = (PetscBool)(!conv->winograd && conv->kg < conv->cog);
}

static PetscErrorCode LayerSetUp_Conv2d(Layer layer)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;
  LayerWindow  *win  = &conv->win;
  MPI_Comm      comm = PetscObjectComm((PetscObject)layer);

  PetscFunctionBegin;
  if (conv->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "conv2d layer %" PetscInt_FMT " has no number of output channels: write conv2d:OUT in -net_layers (e.g. conv2d:32), or give -%sconv2d_outputs OUT, or call LayerConv2dSetOutputChannels()", layer->index,
            prefix ? prefix : "");
  }
  PetscCall(LayerResetWorkspace_Conv2d(layer));
  PetscCall(Conv2dGridReset_Private(layer));
  if (conv->grid.dm)
    PetscCall(Conv2dGridCheck_Private(layer)); /* grid mode: (Cin) at each point of a DMDA */
  else {
    char shape[64];

    PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
    PetscCheck(layer->in.ndim != 1, comm, PETSC_ERR_ARG_SIZ,
               "conv2d layer %" PetscInt_FMT " has input shape %s: it convolves (height, width, channels) samples (give -net_input_shape HxWxC), or the fields of a 2-D DMDA whose grid points are the samples (NetDMDASetUp(), LayerConv2dSetDM())",
               layer->index, shape);
    PetscCall(LayerWindowSetUp(layer, win)); /* batch mode: (H, W, Cin) samples */
  }
  conv->cin = layer->in.dim[layer->in.ndim - 1];
  PetscCheck(conv->cin % conv->groups == 0 && conv->nout % conv->groups == 0, comm, PETSC_ERR_ARG_INCOMP, "conv2d groups (%" PetscInt_FMT ") must divide the input channels (%" PetscInt_FMT ") and the output channels (%" PetscInt_FMT ")",
             conv->groups, conv->cin, conv->nout);
  conv->cg   = conv->cin / conv->groups;
  conv->cog  = conv->nout / conv->groups;
  conv->kg   = win->k[0] * win->k[1] * conv->cg;
  conv->ktot = conv->groups * conv->kg;
  PetscCheck((PetscInt64)conv->nout * (win->k[0] * (PetscInt64)win->k[1] * conv->cg + 1) <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "conv2d layer %" PetscInt_FMT " (%" PetscInt_FMT " outputs, kernel %" PetscInt_FMT "x%" PetscInt_FMT ", %" PetscInt_FMT " inputs per group) would have more than %d parameters, the largest PetscInt: make it smaller", layer->index,
             conv->nout, win->k[0], win->k[1], conv->cg, PETSC_MAX_INT);
  layer->nparams = conv->nout * conv->kg + (conv->bias ? conv->nout : 0);
  if (conv->grid.dm) {
    PetscCall(Conv2dGridSetUp_Private(layer));
    PetscFunctionReturn(0);
  }
  conv->pixels      = win->out[0] * win->out[1];
  conv->pointwise   = (PetscBool)(win->k[0] == 1 && win->k[1] == 1 && win->step[0] == 1 && win->step[1] == 1 && win->pad[0] == 0 && win->pad[1] == 0);
  conv->tiles[0]    = (win->out[0] + 1) / 2;
  conv->tiles[1]    = (win->out[1] + 1) / 2;
  layer->out.ndim   = 3;
  layer->out.dim[0] = win->out[0];
  layer->out.dim[1] = win->out[1];
  layer->out.dim[2] = conv->nout;
  Conv2dChooseAlgorithm(conv);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Conv2d(Layer layer)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerResetWorkspace_Conv2d(layer));
  PetscCall(Conv2dGridReset_Private(layer));
  PetscCall(LayerWindowReset(&conv->win));
  PetscFunctionReturn(0);
}

/* The two layouts share the parameters; each has its kernels: grid mode in grid.c, batch mode in conv2dkernels.c */
static PetscErrorCode LayerForward_Conv2dDispatch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (((Layer_Conv2d *)layer->data)->grid.dm)
    PetscCall(Conv2dGridForward_Private(layer, n, theta, x, y));
  else
    PetscCall(LayerForward_Conv2d(layer, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Conv2dDispatch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (((Layer_Conv2d *)layer->data)->grid.dm)
    PetscCall(Conv2dGridBackward_Private(layer, n, theta, x, dy, dx, dtheta));
  else
    PetscCall(LayerBackward_Conv2d(layer, n, theta, x, y, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Conv2dDispatch(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (((Layer_Conv2d *)layer->data)->grid.dm)
    PetscCall(Conv2dGridJVP_Private(layer, n, theta, x, dx, dtheta, dy));
  else
    PetscCall(LayerJVP_Conv2d(layer, n, theta, x, y, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

/* Weights as PyTorch's kaiming_normal_ / xavier_uniform_ with fan_in = Cg KH KW, fan_out = Cout KH KW; bias zero */
static PetscErrorCode LayerInitialize_Conv2d(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Conv2d *conv   = (Layer_Conv2d *)layer->data;
  PetscInt      nw     = conv->nout * conv->kg;
  PetscReal     fanin  = (PetscReal)conv->kg;
  PetscReal     fanout = (PetscReal)conv->nout * conv->win.k[0] * conv->win.k[1];

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, conv->init, conv->initstd, fanin, fanout, nw, theta));
  if (conv->bias) PetscCall(PetscArrayzero(theta + nw, conv->nout));
  PetscFunctionReturn(0);
}

/*
  PyTorch Conv2d: weight [Cout][Cg][KH][KW], bias [Cout]. The shape reported is PyTorch's; the data is stored
  [Cout][KH][KW][Cg], so torch_weight = ours.reshape(Cout, KH, KW, Cg).permute(0, 3, 1, 2)
  (share/reference/conv_reference.py does this).
*/
static PetscErrorCode LayerTensors_Conv2d(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, 2 * sizeof(info[0])));
  PetscCall(PetscStrcpy(info[0].name, "weight"));
  info[0].size    = conv->nout * conv->kg;
  info[0].ndim    = 4;
  info[0].dims[0] = conv->nout;
  info[0].dims[1] = conv->cg;
  info[0].dims[2] = conv->win.k[0];
  info[0].dims[3] = conv->win.k[1];
  *n              = 1;
  if (conv->bias) {
    PetscCall(PetscStrcpy(info[1].name, "bias"));
    info[1].offset  = conv->nout * conv->kg;
    info[1].size    = conv->nout;
    info[1].ndim    = 1;
    info[1].dims[0] = conv->nout;
    *n              = 2;
  }
  PetscFunctionReturn(0);
}

/* OUT[:K[:STRIDE[:PAD]]] then any of dilation=D, groups=G, bias=0|1; K, STRIDE, PAD, D as 3 or 3x5 */
static PetscErrorCode LayerSetArguments_Conv2d(Layer layer, const char args[])
{
  MPI_Comm comm = PetscObjectComm((PetscObject)layer);
  char     copy[256], *field, *saveptr = NULL;
  PetscInt npositional = 0, pair[2];

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "conv2d:%.64s... is longer than %zu characters: give at most OUT:K:STRIDE:PAD and the named settings", args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr)) {
    char *value = strchr(field, '=');

    if (value) {
      char     *end;
      long      v;
      PetscBool isdil, isgroups, isbias;

      *value++ = 0;
      PetscCall(PetscStrcmp(field, "dilation", &isdil));
      PetscCall(PetscStrcmp(field, "groups", &isgroups));
      PetscCall(PetscStrcmp(field, "bias", &isbias));
      PetscCheck(isdil || isgroups || isbias, comm, PETSC_ERR_ARG_WRONG, "conv2d: unknown setting \"%s\" in \"%s\"; the named settings are dilation=, groups= and bias=", field, args);
      if (isdil) {
        PetscCall(LayerWindowParsePair(comm, "The conv2d dilation", value, pair));
        PetscCall(LayerConv2dSetDilation(layer, pair[0], pair[1]));
        continue;
      }
      v = strtol(value, &end, 10);
      PetscCheck(end != value && !*end && v >= PETSC_MIN_INT && v <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "conv2d: %s= takes an integer, not \"%s\"", field, value);
      if (isgroups)
        PetscCall(LayerConv2dSetGroups(layer, (PetscInt)v));
      else
        PetscCall(LayerConv2dSetBias(layer, v ? PETSC_TRUE : PETSC_FALSE));
      continue;
    }
    PetscCheck(npositional < 4, comm, PETSC_ERR_ARG_WRONG, "conv2d takes at most OUT:K:STRIDE:PAD before the named settings (e.g. conv2d:32:3:1:1:groups=2), not \"%s\"", args);
    if (npositional == 0) {
      char *end;
      long  nout = strtol(field, &end, 10);

      PetscCheck(end != field && !*end && nout > 0 && nout <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG, "conv2d: the number of output channels must be a positive integer (e.g. conv2d:32), not \"%s\"", field);
      PetscCall(LayerConv2dSetOutputChannels(layer, (PetscInt)nout));
    } else {
      PetscCall(LayerWindowParsePair(comm, npositional == 1 ? "The conv2d kernel" : npositional == 2 ? "The conv2d stride" : "The conv2d padding", field, pair));
      if (npositional == 1)
        PetscCall(LayerConv2dSetKernel(layer, pair[0], pair[1]));
      else if (npositional == 2)
        PetscCall(LayerConv2dSetStride(layer, pair[0], pair[1]));
      else
        PetscCall(LayerConv2dSetPadding(layer, pair[0], pair[1]));
    }
    npositional++;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Conv2d(Layer layer, size_t len, char args[])
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;
  char          k[32], s[32], p[32], d[32];
  size_t        used;

  PetscFunctionBegin;
  PetscCall(LayerWindowPairToString(conv->win.k, sizeof(k), k));
  PetscCall(LayerWindowPairToString(conv->win.stride, sizeof(s), s));
  PetscCall(LayerWindowPairToString(conv->win.pad, sizeof(p), p));
  PetscCall(LayerWindowPairToString(conv->win.dilation, sizeof(d), d));
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%s:%s:%s", conv->nout, k, s, p));
  PetscCall(PetscStrlen(args, &used));
  if (conv->win.dilation[0] != 1 || conv->win.dilation[1] != 1) {
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

/* -conv2d_<name> "A" or "AxB" */
static PetscErrorCode Conv2dOptionsPair(Layer layer, PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscInt pair[2], PetscBool *set)
{
  char value[64];

  PetscFunctionBegin;
  PetscCall(LayerWindowPairToString(pair, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, text, man, value, value, sizeof(value), set));
  if (*set) PetscCall(LayerWindowParsePair(PetscObjectComm((PetscObject)layer), opt, value, pair));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Conv2d(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Conv2d            *conv = (Layer_Conv2d *)layer->data;
  PetscInt                 nout = conv->nout, groups = conv->groups, pair[2];
  PetscBool                bias          = conv->bias, set;
  Conv2dAlgorithm          algorithm     = conv->algorithm;
  LayerConv2dGridAlgorithm gridalgorithm = conv->grid.algorithm;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "2-D convolution layer options");
  PetscCall(PetscOptionsInt("-conv2d_outputs", "Number of output channels", "LayerConv2dSetOutputChannels", nout, &nout, &set));
  if (set) PetscCall(LayerConv2dSetOutputChannels(layer, nout));
  PetscCall(PetscArraycpy(pair, conv->win.k, 2));
  PetscCall(Conv2dOptionsPair(layer, PetscOptionsObject, "-conv2d_kernel", "Kernel size, K or KHxKW", "LayerConv2dSetKernel", pair, &set));
  if (set) PetscCall(LayerConv2dSetKernel(layer, pair[0], pair[1]));
  PetscCall(PetscArraycpy(pair, conv->win.stride, 2));
  PetscCall(Conv2dOptionsPair(layer, PetscOptionsObject, "-conv2d_stride", "Stride, S or SHxSW", "LayerConv2dSetStride", pair, &set));
  if (set) PetscCall(LayerConv2dSetStride(layer, pair[0], pair[1]));
  PetscCall(PetscArraycpy(pair, conv->win.pad, 2));
  PetscCall(Conv2dOptionsPair(layer, PetscOptionsObject, "-conv2d_padding", "Zero padding, P or PHxPW", "LayerConv2dSetPadding", pair, &set));
  if (set) PetscCall(LayerConv2dSetPadding(layer, pair[0], pair[1]));
  PetscCall(PetscArraycpy(pair, conv->win.dilation, 2));
  PetscCall(Conv2dOptionsPair(layer, PetscOptionsObject, "-conv2d_dilation", "Dilation, D or DHxDW", "LayerConv2dSetDilation", pair, &set));
  if (set) PetscCall(LayerConv2dSetDilation(layer, pair[0], pair[1]));
  PetscCall(PetscOptionsInt("-conv2d_groups", "Number of groups (divides the input and output channels)", "LayerConv2dSetGroups", groups, &groups, &set));
  if (set) PetscCall(LayerConv2dSetGroups(layer, groups));
  PetscCall(PetscOptionsBool("-conv2d_bias", "Add a bias per output channel", "LayerConv2dSetBias", bias, &bias, &set));
  if (set) PetscCall(LayerConv2dSetBias(layer, bias));
  PetscCall(PetscOptionsEnum("-conv2d_init", "Weight initialisation", "LayerConv2dSetInitialization", LayerInitTypes, (PetscEnum)conv->init, (PetscEnum *)&conv->init, NULL));
  PetscCall(PetscOptionsReal("-conv2d_init_std", "Standard deviation for -conv2d_init normal", "LayerConv2dSetInitialization", conv->initstd, &conv->initstd, NULL));
  PetscCheck(conv->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-conv2d_init_std must be non-negative, not %g", (double)conv->initstd);
  PetscCall(PetscOptionsEnum("-conv2d_algorithm", "auto, im2col, or winograd (F(2x2,3x3) where it applies: 3x3, stride 1, no dilation, one group; im2col elsewhere)", "", Conv2dAlgorithms, (PetscEnum)conv->algorithm, (PetscEnum *)&algorithm, &set));
  if (set && algorithm != conv->algorithm) {
    if (layer->setupcalled) PetscCall(LayerReset(layer));
    conv->algorithm = algorithm;
  }
  PetscCall(PetscOptionsReal("-conv2d_max_workspace", "Workspace in MB of one chunk of samples (im2col or Winograd buffers; on a DMDA, of one chunk of rows): the batch is processed chunk by chunk", "", conv->maxworkspace, &conv->maxworkspace, &set));
  PetscCheck(conv->maxworkspace > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-conv2d_max_workspace must be positive, not %g", (double)conv->maxworkspace);
  if (set) {
    PetscCall(LayerResetWorkspace_Conv2d(layer));
    if (conv->grid.dm && layer->setupcalled) PetscCall(LayerReset(layer)); /* grid mode sizes its im2col chunks at set-up */
  }
  PetscCall(PetscOptionsEnum("-conv2d_grid_algorithm", "On a DMDA (grid mode): auto, im2col, or taps (one GEMM per kernel tap and row)", "LayerConv2dSetGridAlgorithm", LayerConv2dGridAlgorithms, (PetscEnum)gridalgorithm, (PetscEnum *)&gridalgorithm,
                             &set));
  if (set) PetscCall(LayerConv2dSetGridAlgorithm(layer, gridalgorithm));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Conv2d(Layer layer, PetscViewer viewer)
{
  Layer_Conv2d      *conv    = (Layer_Conv2d *)layer->data;
  const LayerWindow *w       = &conv->win;
  char               std[64] = "";

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "outputs %" PetscInt_FMT ", kernel %" PetscInt_FMT "x%" PetscInt_FMT ", stride %" PetscInt_FMT "x%" PetscInt_FMT ", padding %" PetscInt_FMT "x%" PetscInt_FMT ", dilation %" PetscInt_FMT "x%" PetscInt_FMT
                                   ", groups %" PetscInt_FMT ", %s\n",
                                   conv->nout, w->k[0], w->k[1], w->stride[0], w->stride[1], w->pad[0], w->pad[1], w->dilation[0], w->dilation[1], conv->groups, conv->bias ? "bias" : "no bias"));
  if (conv->init == LAYER_INIT_NORMAL) PetscCall(PetscSNPrintf(std, sizeof(std), " (std %g)", (double)conv->initstd));
  if (conv->grid.dm) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s\n", LayerInitTypes[conv->init], std));
    PetscCall(Conv2dGridView_Private(layer, viewer));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "initialisation %s%s, algorithm %s%s, chunks of samples in %.2f MB of workspace\n", LayerInitTypes[conv->init], std, Conv2dAlgorithms[conv->algorithm],
                                   !layer->setupcalled ? ""
                                   : conv->winograd    ? " (Winograd F(2x2,3x3))"
                                   : conv->pointwise   ? " (1x1: GEMM on the input)"
                                                       : " (im2col + GEMM)",
                                   (double)conv->maxworkspace));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Conv2d(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerReset_Conv2d(layer));
  PetscCall(DMDestroy(&((Layer_Conv2d *)layer->data)->grid.dm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetOutputChannels_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetWindow_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetGroups_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetBias_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetInitialization_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetGridAlgorithm_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConv2dSetOutputChannels_Conv2d(Layer layer, PetscInt nout)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "conv2d output channels must be positive, not %" PetscInt_FMT, nout);
  if (layer->setupcalled && nout != conv->nout) PetscCall(LayerReset(layer));
  conv->nout = nout;
  PetscFunctionReturn(0);
}

/* which: 0 kernel, 1 stride, 2 padding, 3 dilation */
static PetscErrorCode LayerConv2dSetWindow_Conv2d(Layer layer, PetscInt which, PetscInt a, PetscInt b)
{
  Layer_Conv2d *conv   = (Layer_Conv2d *)layer->data;
  PetscInt     *pair   = which == 0 ? conv->win.k : which == 1 ? conv->win.stride : which == 2 ? conv->win.pad : conv->win.dilation;
  const char   *name[] = {"kernel", "stride", "padding", "dilation"};

  PetscFunctionBegin;
  PetscCheck(which == 2 ? (a >= 0 && b >= 0) : (a > 0 && b > 0), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "conv2d %s must be %s, not %" PetscInt_FMT "x%" PetscInt_FMT, name[which], which == 2 ? "non-negative" : "positive", a,
             b);
  if (layer->setupcalled && (a != pair[0] || b != pair[1])) PetscCall(LayerReset(layer));
  pair[0] = a;
  pair[1] = b;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConv2dSetGroups_Conv2d(Layer layer, PetscInt groups)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(groups > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "conv2d groups must be positive, not %" PetscInt_FMT, groups);
  if (layer->setupcalled && groups != conv->groups) PetscCall(LayerReset(layer));
  conv->groups = groups;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConv2dSetBias_Conv2d(Layer layer, PetscBool bias)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != conv->bias) PetscCall(LayerReset(layer));
  conv->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerConv2dSetInitialization_Conv2d(Layer layer, LayerInitType init, PetscReal std)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  conv->init    = init;
  conv->initstd = std;
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetOutputChannels - the number of output channels of a conv2d layer.
@*/
PetscErrorCode LayerConv2dSetOutputChannels(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetOutputChannels_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetKernel - the kernel size kh x kw of a conv2d layer (default 3x3).
@*/
PetscErrorCode LayerConv2dSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 0, kh, kw));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetStride - the stride of a conv2d layer (default 1x1).
@*/
PetscErrorCode LayerConv2dSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 1, sh, sw));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetPadding - the zero padding on each side of a conv2d layer's input (default 0).
@*/
PetscErrorCode LayerConv2dSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 2, ph, pw));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetDilation - the spacing of the kernel taps of a conv2d layer (default 1).
@*/
PetscErrorCode LayerConv2dSetDilation(Layer layer, PetscInt dh, PetscInt dw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 3, dh, dw));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetGroups - grouped convolution: channels split in groups convolved separately (default 1).
@*/
PetscErrorCode LayerConv2dSetGroups(Layer layer, PetscInt groups)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetGroups_C", (Layer, PetscInt), (layer, groups));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetBias - whether a conv2d layer adds a bias per output channel (default PETSC_TRUE).
@*/
PetscErrorCode LayerConv2dSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetInitialization - how the weights start (the bias starts at zero); std is used by LAYER_INIT_NORMAL.
@*/
PetscErrorCode LayerConv2dSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Conv2d(Layer layer)
{
  Layer_Conv2d *conv;

  PetscFunctionBegin;
  PetscCall(PetscNew(&conv));
  conv->win.k[0] = conv->win.k[1] = 3;
  conv->win.stride[0] = conv->win.stride[1] = 1;
  conv->win.dilation[0] = conv->win.dilation[1] = 1;
  conv->groups                                  = 1;
  conv->bias                                    = PETSC_TRUE;
  conv->init                                    = LAYER_INIT_KAIMING;
  conv->initstd                                 = 0.01;
  conv->maxworkspace                            = 1.0;
  conv->algorithm                               = CONV2D_ALGORITHM_AUTO;
  layer->data                                   = conv;
  layer->ops->setup                             = LayerSetUp_Conv2d;
  layer->ops->initialize                        = LayerInitialize_Conv2d;
  layer->ops->forward                           = LayerForward_Conv2dDispatch;
  layer->ops->backward                          = LayerBackward_Conv2dDispatch;
  layer->ops->jvp                               = LayerJVP_Conv2dDispatch;
  layer->ops->tensors                           = LayerTensors_Conv2d;
  layer->ops->setarguments                      = LayerSetArguments_Conv2d;
  layer->ops->getarguments                      = LayerGetArguments_Conv2d;
  layer->ops->setfromoptions                    = LayerSetFromOptions_Conv2d;
  layer->ops->view                              = LayerView_Conv2d;
  layer->ops->reset                             = LayerReset_Conv2d;
  layer->ops->destroy                           = LayerDestroy_Conv2d;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetOutputChannels_C", LayerConv2dSetOutputChannels_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetWindow_C", LayerConv2dSetWindow_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetGroups_C", LayerConv2dSetGroups_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetBias_C", LayerConv2dSetBias_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetInitialization_C", LayerConv2dSetInitialization_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetDM_C", LayerConv2dSetDM_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetDM_C", LayerConv2dGetDM_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dSetGridAlgorithm_C", LayerConv2dSetGridAlgorithm_Conv2d));
  PetscFunctionReturn(0);
}
