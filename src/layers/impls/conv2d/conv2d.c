/*
  conv2d: settings (OUT[:K[:STRIDE[:PAD]]] and named dilation=, groups=, bias=; -conv2d_* options), set-up of the shapes
  and of the algorithm, initialisation, PyTorch tensor names, and the layer's operations, which choose between the
  kernel families (layouts, formulas and the file of each in conv2d.h):

    LayerForward_Conv2d    y = conv(x; W) + b          Conv2dForward_Grid | Conv2dForward_Winograd | Conv2dForward_Batch
    LayerBackward_Conv2d   dx, dtheta += J^T dy         Conv2dBackward_Grid | ..._Winograd | ..._Batch
    LayerJVP_Conv2d        dy = J_x dx + J_theta dtheta Conv2dJVP_Grid | ..._Winograd | ..._Batch
    LayerSOBackward_Conv2d dxdot += J_x(Wdot)^T dy,     Conv2dSOBackward_Grid | ..._Winograd | ..._Batch
                           dWdot += J_W(xdot)^T dy
*/
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

/* grid mode (netspatial.c): the window along (h, w), and a copy without padding */
static PetscErrorCode LayerGetWindow_Conv2d(Layer layer, PetscInt *nsd, PetscInt k[], PetscInt step[], PetscInt pad[], PetscInt dilation[])
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  *nsd = 2;
  for (int d = 0; d < 2; d++) {
    k[d]        = conv->win.k[d];
    step[d]     = conv->win.stride[d] ? conv->win.stride[d] : conv->win.k[d];
    pad[d]      = conv->win.pad[d];
    dilation[d] = conv->win.dilation[d];
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetPadding_Conv2d(Layer layer, PetscInt nsd, const PetscInt pad[])
{
  PetscFunctionBegin;
  PetscCheck(nsd == 2, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "conv2d pads 2 dims, not %" PetscInt_FMT, nsd);
  PetscCall(LayerConv2dSetPadding(layer, pad[0], pad[1]));
  PetscFunctionReturn(0);
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
  PetscCall(Conv2dResetWorkspace_Batch(layer));
  PetscCall(Conv2dReset_Grid(layer));
  if (conv->grid.dm)
    PetscCall(Conv2dCheck_Grid(layer)); /* grid mode: (Cin) at each point of a DMDA */
  else if (layer->griddim) {            /* a node of a Net on a grid (netspatial.c): the Net runs a batch-mode copy on each box */
    char shape[64];

    PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
    PetscCheck(layer->griddim == 2, comm, PETSC_ERR_ARG_INCOMP, "conv2d layer %" PetscInt_FMT " convolves 2-D grids, but the Net's grid is %" PetscInt_FMT "-D: use conv3d on a 3-D DMDA", layer->index, layer->griddim);
    PetscCheck(layer->in.ndim == 1, comm, PETSC_ERR_ARG_SIZ, "conv2d layer %" PetscInt_FMT " on a grid takes one grid point, (channels), as a sample, not %s", layer->index, shape);
  } else {
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
    PetscCall(Conv2dSetUp_Grid(layer));
    PetscFunctionReturn(0);
  }
  if (layer->griddim) {
    layer->out.ndim   = 1;
    layer->out.dim[0] = conv->nout;
    PetscFunctionReturn(0);
  }
  /* im2col reads a sample [H][W][Cin] through the window, taps in the padding reading zero (conv2dim2col.h) */
  conv->im2col = (Conv2dIm2col){
      .out      = {win->out[0], win->out[1]},
      .k        = {win->k[0], win->k[1]},
      .step     = {win->step[0], win->step[1]},
      .dilation = {win->dilation[0], win->dilation[1]},
      .origin   = {-win->pad[0], -win->pad[1]},
      .ld       = win->in[1] * conv->cin,
      .cin      = conv->cin,
      .cg       = conv->cg,
      .groups   = conv->groups,
      .t0       = {win->t0[0], win->t0[1]},
      .t1       = {win->t1[0], win->t1[1]},
  };
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
  PetscCall(Conv2dResetWorkspace_Batch(layer));
  PetscCall(Conv2dReset_Grid(layer));
  PetscCall(LayerWindowReset(&conv->win));
  PetscFunctionReturn(0);
}

/*
  The layer's operations choose the kernels: grid mode (conv2dgrid.c: halo exchange, then im2col or taps on the rank's
  block), or batch mode with Winograd F(2x2, 3x3) (conv2dwinograd.c) or im2col + GEMM (conv2dbatch.c). The three
  compute the same function of the same theta.
*/
static PetscErrorCode LayerForward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  if (conv->grid.dm)
    PetscCall(Conv2dForward_Grid(layer, n, theta, x, y));
  else if (!n)
    PetscFunctionReturn(0);
  else if (conv->winograd)
    PetscCall(Conv2dForward_Winograd(layer, n, theta, x, y));
  else
    PetscCall(Conv2dForward_Batch(layer, n, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  if (conv->grid.dm)
    PetscCall(Conv2dBackward_Grid(layer, n, theta, x, dy, dx, dtheta));
  else if (!n)
    PetscFunctionReturn(0);
  else if (conv->winograd)
    PetscCall(Conv2dBackward_Winograd(layer, n, theta, x, dy, dx, dtheta));
  else
    PetscCall(Conv2dBackward_Batch(layer, n, theta, x, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  if (conv->grid.dm)
    PetscCall(Conv2dJVP_Grid(layer, n, theta, x, dx, dtheta, dy));
  else if (!n)
    PetscFunctionReturn(0);
  else if (conv->winograd)
    PetscCall(Conv2dJVP_Winograd(layer, n, theta, x, dx, dtheta, dy));
  else
    PetscCall(Conv2dJVP_Batch(layer, n, theta, x, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

/*
  The curvature term: backward is bilinear in (W, x), so its derivative along (xdot, Wdot) is backward's own input part
  with Wdot for W and weight part with xdot for x; the bias gradient sum dy is constant (no term, dthetadot's bias
  entries untouched). The kernels write their scratch buffers (im2col/Winograd columns, ghosted arrays) and forget the
  columns of x kept by forward, so that later backward and jvp calls at the point recompute them.
*/
static PetscErrorCode LayerSOBackward_Conv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                             PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Conv2d *conv = (Layer_Conv2d *)layer->data;

  PetscFunctionBegin;
  if (conv->grid.dm)
    PetscCall(Conv2dSOBackward_Grid(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
  else if (!n)
    PetscFunctionReturn(0);
  else if (conv->winograd)
    PetscCall(Conv2dSOBackward_Winograd(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
  else
    PetscCall(Conv2dSOBackward_Batch(layer, n, xdot, thetadot, dy, dxdot, dthetadot));
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
  [Cout][KH][KW][Cg] (LAYER_TENSOR_CHANNELS_LAST), so torch_weight = ours.reshape(Cout, KH, KW, Cg).permute(0, 3, 1, 2)
  (share/reference/conv_reference.py does this; the model files hold torch_weight).
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
  info[0].layout  = LAYER_TENSOR_CHANNELS_LAST;
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
    PetscCall(Conv2dResetWorkspace_Batch(layer));
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
    PetscCall(Conv2dView_Grid(layer, viewer));
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
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetPatchLayout_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetPatches_C", NULL));
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
  (Ho, Wo, nout) on (H, W, Cin) images, (nout) at each grid point in grid mode (LayerConv2dSetDM()); the parameters are
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
  4 input channels (-conv2d_algorithm auto, the default), every other case by im2col + GEMM. In grid mode
  (LayerConv2dSetDM()) the kernel must be odd in both dimensions, with padding KH/2 x KW/2.
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: beginner

.seealso: `LayerConv2dSetStride()`, `LayerConv2dSetPadding()`, `LayerConv2dSetDilation()`, `LayerConv2dSetOutputChannels()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 0, kh, kw));
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
  The compact form is conv2d:OUT:K:STRIDE. A stride other than 1 rules out Winograd (im2col + GEMM is used) and
  grid mode (LayerConv2dSetDM()), which needs stride 1.
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetPadding()`, `LayerConv2dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 1, sh, sw));
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
  stride 1, dilation 1 and an odd kernel K, padding K/2 keeps the image size. Grid mode (LayerConv2dSetDM()) needs exactly
  KH/2 x KW/2; there the taps off a non-periodic grid read zero and those off a periodic grid wrap around.
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetStride()`, `LayerConv2dSetDilation()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 2, ph, pw));
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
  D (K - 1) + 1 input points. A dilation other than 1 rules out Winograd (im2col + GEMM is used) and grid mode
  (LayerConv2dSetDM()).
  Along each of the two dimensions the output size is (PyTorch's)
    out = floor((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1.

  Changing it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerConv2dSetKernel()`, `LayerConv2dSetStride()`, `LayerConv2dSetPadding()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerConv2dSetDilation(Layer layer, PetscInt dh, PetscInt dw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetWindow_C", (Layer, PetscInt, PetscInt, PetscInt), (layer, 3, dh, dw));
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
  setting groups=G. More than one group rules out Winograd (im2col + GEMM is used) and grid mode (LayerConv2dSetDM()).

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
  layer->ops->getwindow                         = LayerGetWindow_Conv2d;
  layer->ops->setpadding                        = LayerSetPadding_Conv2d;
  layer->ops->initialize                        = LayerInitialize_Conv2d;
  layer->ops->forward                           = LayerForward_Conv2d;
  layer->ops->backward                          = LayerBackward_Conv2d;
  layer->ops->jvp                               = LayerJVP_Conv2d;
  layer->ops->sobackward                        = LayerSOBackward_Conv2d;
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
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetPatchLayout_C", LayerConv2dGetPatchLayout_Conv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerConv2dGetPatches_C", LayerConv2dGetPatches_Conv2d));
  PetscFunctionReturn(0);
}
