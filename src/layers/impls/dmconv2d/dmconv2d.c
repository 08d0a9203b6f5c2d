/* dmconv2d: the layer kind (set-up, the two layouts, options); the kernels are in dmconv2dkernels.c. See dmconv2d.h. */
#include "dmconv2d.h"

const char *const LayerDMConv2dAlgorithms[] = {"auto", "im2col", "taps", "LayerDMConv2dAlgorithm", "LAYER_DMCONV2D_ALGORITHM_", NULL};

/* The kernels of the algorithm in use, on one block */
static PetscErrorCode DMConv2dForward_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (((Layer_DMConv2d *)layer->data)->taps)
    PetscCall(DMConv2dForwardTaps_Private(layer, bk, theta, x, y));
  else
    PetscCall(DMConv2dForwardIm2col_Private(layer, bk, theta, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode DMConv2dBackward_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (((Layer_DMConv2d *)layer->data)->taps)
    PetscCall(DMConv2dBackwardTaps_Private(layer, bk, theta, x, dy, dx, dtheta));
  else
    PetscCall(DMConv2dBackwardIm2col_Private(layer, bk, theta, x, dy, dx, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode DMConv2dJVP_Private(Layer layer, const DMConv2dBlock *bk, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (((Layer_DMConv2d *)layer->data)->taps)
    PetscCall(DMConv2dJVPTaps_Private(layer, bk, theta, x, dx, dtheta, dy));
  else
    PetscCall(DMConv2dJVPIm2col_Private(layer, bk, theta, x, dx, dtheta, dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&dc->xg));
  PetscCall(VecDestroy(&dc->xl));
  PetscCall(VecDestroy(&dc->dl));
  PetscCall(DMDestroy(&dc->dmin));
  PetscCall(PetscFree(dc->col));
  PetscCall(PetscFree(dc->wt));
  PetscFunctionReturn(0);
}

/* Grid mode: the halo-exchange DMDA (the user's grid and ownership, dof Cin, box stencil of the kernel radius) */
static PetscErrorCode LayerSetUpGrid_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc   = (Layer_DMConv2d *)layer->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)layer);
  PetscInt        dim, M, N, m, n, xs, ys, xm, ym, gxs, gys, gxm, gym;
  const PetscInt *lx, *ly;
  DMBoundaryType  bx, by;
  PetscBool       isdmda;
  PetscMPIInt     cmp;
  char            shape[64];

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)dc->dm, DMDA, &isdmda));
  PetscCheck(isdmda, comm, PETSC_ERR_ARG_WRONG, "dmconv2d layer %" PetscInt_FMT ": LayerDMConv2dSetDM() needs a DMDA", layer->index);
  PetscCallMPI(MPI_Comm_compare(comm, PetscObjectComm((PetscObject)dc->dm), &cmp));
  PetscCheck(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, comm, PETSC_ERR_ARG_NOTSAMECOMM, "dmconv2d layer %" PetscInt_FMT ": the DMDA must live on the Net's communicator", layer->index);
  PetscCall(DMDAGetInfo(dc->dm, &dim, &M, &N, NULL, &m, &n, NULL, NULL, NULL, &bx, &by, NULL, NULL));
  PetscCheck(dim == 2, comm, PETSC_ERR_ARG_WRONG, "dmconv2d layer %" PetscInt_FMT " convolves a 2-D grid, but its DMDA is %" PetscInt_FMT "-D: create it with DMDACreate2d()", layer->index, dim);
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 1, comm, PETSC_ERR_ARG_INCOMP, "dmconv2d layer %" PetscInt_FMT " with a DMDA takes one grid point as a sample: its input shape must be (channels), not %s (NetDMDASetUp() sets the Net's input shape to the DMDA's dof)",
             layer->index, shape);
  PetscCheck(dc->k[0] <= N && dc->k[1] <= M, comm, PETSC_ERR_ARG_OUTOFRANGE, "dmconv2d layer %" PetscInt_FMT ": the %" PetscInt_FMT "x%" PetscInt_FMT " kernel is larger than the %" PetscInt_FMT " x %" PetscInt_FMT " grid", layer->index, dc->k[0],
             dc->k[1], N, M);
  dc->cin = layer->in.dim[0];
  PetscCall(DMDAGetOwnershipRanges(dc->dm, &lx, &ly, NULL));
  PetscCall(DMDACreate2d(comm, bx, by, DMDA_STENCIL_BOX, M, N, m, n, dc->cin, PetscMax(dc->k[0], dc->k[1]) / 2, lx, ly, &dc->dmin));
  PetscCall(DMSetUp(dc->dmin));
  PetscCall(DMDAGetCorners(dc->dmin, &xs, &ys, NULL, &xm, &ym, NULL));
  PetscCall(DMDAGetGhostCorners(dc->dmin, &gxs, &gys, NULL, &gxm, &gym, NULL));
  dc->block = (DMConv2dBlock){xs, ys, xm, ym, gxs, gys, gxm, gym, M, N, {bx == DM_BOUNDARY_PERIODIC, by == DM_BOUNDARY_PERIODIC}};
  PetscCall(VecCreateMPIWithArray(comm, dc->cin, xm * ym * dc->cin, PETSC_DECIDE, NULL, &dc->xg));
  PetscCall(DMCreateLocalVector(dc->dmin, &dc->xl));
  PetscCall(VecDuplicate(dc->xl, &dc->dl));
  layer->out.ndim   = 1;
  layer->out.dim[0] = dc->nout;
  PetscFunctionReturn(0);
}

/* Batch mode: (H, W, Cin) samples, each its own zero-padded grid */
static PetscErrorCode LayerSetUpBatch_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;
  PetscInt        H, W;
  char            shape[64];

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 3, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_INCOMP,
             "dmconv2d layer %" PetscInt_FMT " without a DMDA convolves (height, width, channels) samples, not %s: give -net_input_shape HxWxC, or a DMDA with LayerDMConv2dSetDM() (or NetDMDASetUp())", layer->index, shape);
  H = layer->in.dim[0];
  W = layer->in.dim[1];
  PetscCheck(dc->k[0] <= H && dc->k[1] <= W, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "dmconv2d layer %" PetscInt_FMT ": the %" PetscInt_FMT "x%" PetscInt_FMT " kernel is larger than the %" PetscInt_FMT "x%" PetscInt_FMT " input", layer->index, dc->k[0], dc->k[1], H, W);
  dc->cin           = layer->in.dim[2];
  dc->block         = (DMConv2dBlock){0, 0, W, H, 0, 0, W, H, W, H, {PETSC_FALSE, PETSC_FALSE}};
  layer->out        = layer->in;
  layer->out.dim[2] = dc->nout;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dc->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "dmconv2d layer %" PetscInt_FMT " has no number of output channels: write dmconv2d:OUT[:K] in -net_layers (e.g. dmconv2d:16:3), or give -%sdmconv2d_outputs", layer->index,
            prefix ? prefix : "");
  }
  PetscCall(LayerReset_DMConv2d(layer));
  if (dc->dm)
    PetscCall(LayerSetUpGrid_DMConv2d(layer));
  else
    PetscCall(LayerSetUpBatch_DMConv2d(layer));
  dc->ktot       = dc->k[0] * dc->k[1] * dc->cin;
  layer->nparams = dc->nout * dc->ktot + (dc->bias ? dc->nout : 0);
  dc->taps       = dc->algorithm == LAYER_DMCONV2D_ALGORITHM_TAPS || (dc->algorithm == LAYER_DMCONV2D_ALGORITHM_AUTO && dc->block.xm >= 32) ? PETSC_TRUE : PETSC_FALSE;
  if (dc->taps)
    PetscCall(PetscMalloc1(2 * dc->ktot * dc->nout, &dc->wt));
  else { /* im2col in chunks of about 2 MB: the GEMM then reads col from cache */
    dc->chunkrows = PetscMax(1, PetscMin(dc->block.ym, (1 << 18) / PetscMax(1, dc->block.xm * dc->ktot)));
    PetscCall(PetscMalloc1(dc->chunkrows * dc->block.xm * dc->ktot, &dc->col));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_DMConv2d(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;
  const PetscInt  nw = dc->nout * dc->ktot;

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, dc->init, dc->initstd, dc->ktot, dc->k[0] * dc->k[1] * dc->nout, nw, theta));
  if (dc->bias) PetscCall(PetscArrayzero(theta + nw, dc->nout));
  PetscFunctionReturn(0);
}

/* Grid mode: this rank's n points are the local part of a global Vec of the halo DMDA */
static PetscErrorCode DMConv2dCheckPoints_Private(Layer layer, PetscInt n)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(n == dc->block.xm * dc->block.ym, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "dmconv2d layer %" PetscInt_FMT ": this rank holds %" PetscInt_FMT " samples but owns %" PetscInt_FMT " x %" PetscInt_FMT " points of the DMDA: give the Net one global Vec of the DMDA (a field), as NetDMDAForward() does", layer->index,
             n, dc->block.xm, dc->block.ym);
  PetscFunctionReturn(0);
}

/* The ghosted local array of the field whose owned part is the array a: the halo exchange DMGlobalToLocal() */
static PetscErrorCode DMConv2dHaloExchange_Private(Layer_DMConv2d *dc, const PetscScalar *a, Vec local)
{
  PetscFunctionBegin;
  PetscCall(VecPlaceArray(dc->xg, a));
  PetscCall(DMGlobalToLocalBegin(dc->dmin, dc->xg, INSERT_VALUES, local));
  PetscCall(DMGlobalToLocalEnd(dc->dmin, dc->xg, INSERT_VALUES, local));
  PetscCall(VecResetArray(dc->xg));
  PetscFunctionReturn(0);
}

/* The array a = the owned part of the sum of the ghosted local contributions: DMLocalToGlobal() with ADD_VALUES */
static PetscErrorCode DMConv2dHaloAdjoint_Private(Layer_DMConv2d *dc, Vec local, PetscScalar *a)
{
  PetscFunctionBegin;
  PetscCall(VecPlaceArray(dc->xg, a));
  PetscCall(VecZeroEntries(dc->xg));
  PetscCall(DMLocalToGlobalBegin(dc->dmin, local, ADD_VALUES, dc->xg));
  PetscCall(DMLocalToGlobalEnd(dc->dmin, local, ADD_VALUES, dc->xg));
  PetscCall(VecResetArray(dc->xg));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_DMConv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dc->dm) {
    const PetscScalar *xl;

    PetscCall(DMConv2dCheckPoints_Private(layer, n));
    PetscCall(DMConv2dHaloExchange_Private(dc, x, dc->xl));
    PetscCall(VecGetArrayRead(dc->xl, &xl));
    PetscCall(DMConv2dForward_Private(layer, &dc->block, theta, xl, y));
    PetscCall(VecRestoreArrayRead(dc->xl, &xl));
  } else
    for (PetscInt s = 0; s < n; s++) PetscCall(DMConv2dForward_Private(layer, &dc->block, theta, x + s * layer->insize, y + s * layer->outsize));
  PetscFunctionReturn(0);
}

/*
  Grid mode: dtheta needs the ghosted input (exchanged again: backward may follow other forward passes of the Net), dx
  the ghosted cotangent, summed onto the owners.
*/
static PetscErrorCode LayerBackward_DMConv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dc->dm) {
    const PetscScalar *xl = NULL;
    PetscScalar       *dl = NULL;

    PetscCall(DMConv2dCheckPoints_Private(layer, n));
    if (dtheta) {
      PetscCall(DMConv2dHaloExchange_Private(dc, x, dc->xl));
      PetscCall(VecGetArrayRead(dc->xl, &xl));
    }
    if (dx) {
      PetscCall(VecZeroEntries(dc->dl));
      PetscCall(VecGetArray(dc->dl, &dl));
    }
    PetscCall(DMConv2dBackward_Private(layer, &dc->block, theta, xl, dy, dl, dtheta));
    if (dtheta) PetscCall(VecRestoreArrayRead(dc->xl, &xl));
    if (dx) {
      PetscCall(VecRestoreArray(dc->dl, &dl));
      PetscCall(DMConv2dHaloAdjoint_Private(dc, dc->dl, dx));
    }
  } else {
    if (dx) PetscCall(PetscArrayzero(dx, n * layer->insize));
    for (PetscInt s = 0; s < n; s++) PetscCall(DMConv2dBackward_Private(layer, &dc->block, theta, x + s * layer->insize, dy + s * layer->outsize, dx ? dx + s * layer->insize : NULL, dtheta));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_DMConv2d(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dc->dm) {
    const PetscScalar *xl = NULL, *dl = NULL;

    PetscCall(DMConv2dCheckPoints_Private(layer, n));
    if (dtheta) {
      PetscCall(DMConv2dHaloExchange_Private(dc, x, dc->xl));
      PetscCall(VecGetArrayRead(dc->xl, &xl));
    }
    if (dx) {
      PetscCall(DMConv2dHaloExchange_Private(dc, dx, dc->dl));
      PetscCall(VecGetArrayRead(dc->dl, &dl));
    }
    PetscCall(DMConv2dJVP_Private(layer, &dc->block, theta, xl, dl, dtheta, dy));
    if (dtheta) PetscCall(VecRestoreArrayRead(dc->xl, &xl));
    if (dx) PetscCall(VecRestoreArrayRead(dc->dl, &dl));
  } else
    for (PetscInt s = 0; s < n; s++) PetscCall(DMConv2dJVP_Private(layer, &dc->block, theta, x + s * layer->insize, dx ? dx + s * layer->insize : NULL, dtheta, dy + s * layer->outsize));
  PetscFunctionReturn(0);
}

/* PyTorch Conv2d: weight [Cout][Cin][KH][KW] (ours is [Cout][KH][KW][Cin]), bias [Cout] */
static PetscErrorCode LayerTensors_DMConv2d(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, 2 * sizeof(info[0])));
  PetscCall(PetscStrcpy(info[0].name, "weight"));
  info[0].size    = dc->nout * dc->ktot;
  info[0].ndim    = 4;
  info[0].dims[0] = dc->nout;
  info[0].dims[1] = dc->cin;
  info[0].dims[2] = dc->k[0];
  info[0].dims[3] = dc->k[1];
  *n              = 1;
  if (dc->bias) {
    PetscCall(PetscStrcpy(info[1].name, "bias"));
    info[1].offset  = dc->nout * dc->ktot;
    info[1].size    = dc->nout;
    info[1].ndim    = 1;
    info[1].dims[0] = dc->nout;
    *n              = 2;
  }
  PetscFunctionReturn(0);
}

/* K as 3 or 3x5 (odd) */
static PetscErrorCode DMConv2dParseKernel_Private(Layer layer, const char *s, PetscInt k[2])
{
  char *end;
  long  a = strtol(s, &end, 10), b = a;

  PetscFunctionBegin;
  if (*end == 'x') b = strtol(end + 1, &end, 10);
  PetscCheck(end != s && !*end && a > 0 && b > 0 && a % 2 && b % 2, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "dmconv2d kernel \"%s\": give an odd size, e.g. 3 or 3x5 (the output has the input's size)", s);
  k[0] = (PetscInt)a;
  k[1] = (PetscInt)b;
  PetscFunctionReturn(0);
}

/* OUT[:K] */
static PetscErrorCode LayerSetArguments_DMConv2d(Layer layer, const char args[])
{
  char     copy[64], *colon, *end;
  long     nout;
  PetscInt k[2] = {3, 3};

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  colon = strchr(copy, ':');
  if (colon) *colon = 0;
  nout = strtol(copy, &end, 10);
  PetscCheck(end != copy && !*end && nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"dmconv2d:%s\": write dmconv2d:OUT[:K], e.g. dmconv2d:16 or dmconv2d:16:5 (K odd, or KHxKW)", args);
  if (colon) PetscCall(DMConv2dParseKernel_Private(layer, colon + 1, k));
  PetscCall(LayerDMConv2dSetOutputChannels(layer, (PetscInt)nout));
  PetscCall(LayerDMConv2dSetKernel(layer, k[0], k[1]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_DMConv2d(Layer layer, size_t len, char args[])
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dc->k[0] == dc->k[1])
    PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%" PetscInt_FMT, dc->nout, dc->k[0]));
  else
    PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%" PetscInt_FMT "x%" PetscInt_FMT, dc->nout, dc->k[0], dc->k[1]));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_DMConv2d(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_DMConv2d *dc   = (Layer_DMConv2d *)layer->data;
  PetscInt        nout = dc->nout;
  PetscBool       bias = dc->bias, flg;
  char            kernel[32];

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "dmconv2d layer options");
  PetscCall(PetscOptionsInt("-dmconv2d_outputs", "Output channels", "LayerDMConv2dSetOutputChannels", nout, &nout, NULL));
  if (nout != dc->nout) PetscCall(LayerDMConv2dSetOutputChannels(layer, nout));
  if (dc->k[0] == dc->k[1])
    PetscCall(PetscSNPrintf(kernel, sizeof(kernel), "%" PetscInt_FMT, dc->k[0]));
  else
    PetscCall(PetscSNPrintf(kernel, sizeof(kernel), "%" PetscInt_FMT "x%" PetscInt_FMT, dc->k[0], dc->k[1]));
  PetscCall(PetscOptionsString("-dmconv2d_kernel", "Kernel size, odd: K or KHxKW", "LayerDMConv2dSetKernel", kernel, kernel, sizeof(kernel), &flg));
  if (flg) {
    PetscInt k[2];

    PetscCall(DMConv2dParseKernel_Private(layer, kernel, k));
    PetscCall(LayerDMConv2dSetKernel(layer, k[0], k[1]));
  }
  PetscCall(PetscOptionsBool("-dmconv2d_bias", "Add a bias per output channel", "LayerDMConv2dSetBias", bias, &bias, NULL));
  if (bias != dc->bias) PetscCall(LayerDMConv2dSetBias(layer, bias));
  PetscCall(PetscOptionsEnum("-dmconv2d_init", "Weight initialisation", "LayerDMConv2dSetInitialization", LayerInitTypes, (PetscEnum)dc->init, (PetscEnum *)&dc->init, NULL));
  PetscCall(PetscOptionsEnum("-dmconv2d_algorithm", "Kernel algorithm", "LayerDMConv2dSetAlgorithm", LayerDMConv2dAlgorithms, (PetscEnum)dc->algorithm, (PetscEnum *)&dc->algorithm, &flg));
  if (flg && layer->setupcalled) PetscCall(LayerReset(layer));
  PetscCall(PetscOptionsReal("-dmconv2d_init_std", "Standard deviation for -dmconv2d_init normal", "LayerDMConv2dSetInitialization", dc->initstd, &dc->initstd, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_DMConv2d(Layer layer, PetscViewer viewer)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "outputs %" PetscInt_FMT ", kernel %" PetscInt_FMT "x%" PetscInt_FMT ", bias %s, initialisation %s, algorithm %s", dc->nout, dc->k[0], dc->k[1], PetscBools[dc->bias], LayerInitTypes[dc->init],
                                   LayerDMConv2dAlgorithms[dc->algorithm]));
  if (layer->setupcalled && dc->algorithm == LAYER_DMCONV2D_ALGORITHM_AUTO) PetscCall(PetscViewerASCIIPrintf(viewer, " (%s)", dc->taps ? "taps" : "im2col"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  if (dc->dm) {
    PetscInt M, N, m, n;

    PetscCall(DMDAGetInfo(dc->dm, NULL, &M, &N, NULL, &m, &n, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    PetscCall(PetscViewerASCIIPrintf(viewer, "grid-distributed: a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA on %" PetscInt_FMT " x %" PetscInt_FMT " ranks, halo exchange DMGlobalToLocal\n", M, N, m, n));
  } else
    PetscCall(PetscViewerASCIIPrintf(viewer, "batch-distributed: whole (height, width, channels) samples, zero padding\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerReset_DMConv2d(layer));
  PetscCall(DMDestroy(&dc->dm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dGetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetOutputChannels_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetKernel_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetBias_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetInitialization_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetAlgorithm_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetDM_DMConv2d(Layer layer, DM dm)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (dm == dc->dm) PetscFunctionReturn(0);
  if (dm) PetscCall(PetscObjectReference((PetscObject)dm));
  PetscCall(DMDestroy(&dc->dm));
  dc->dm = dm;
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dGetDM_DMConv2d(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  *dm = ((Layer_DMConv2d *)layer->data)->dm;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetOutputChannels_DMConv2d(Layer layer, PetscInt nout)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dmconv2d output channels must be positive, not %" PetscInt_FMT, nout);
  if (layer->setupcalled && nout != dc->nout) PetscCall(LayerReset(layer));
  dc->nout = nout;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetKernel_DMConv2d(Layer layer, PetscInt kh, PetscInt kw)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  PetscCheck(kh > 0 && kw > 0 && kh % 2 && kw % 2, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dmconv2d kernel %" PetscInt_FMT "x%" PetscInt_FMT ": give odd sizes (the output keeps the input's size)", kh, kw);
  if (layer->setupcalled && (kh != dc->k[0] || kw != dc->k[1])) PetscCall(LayerReset(layer));
  dc->k[0] = kh;
  dc->k[1] = kw;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetBias_DMConv2d(Layer layer, PetscBool bias)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && bias != dc->bias) PetscCall(LayerReset(layer));
  dc->bias = bias;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetAlgorithm_DMConv2d(Layer layer, LayerDMConv2dAlgorithm algorithm)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  if (layer->setupcalled && algorithm != dc->algorithm) PetscCall(LayerReset(layer));
  dc->algorithm = algorithm;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDMConv2dSetInitialization_DMConv2d(Layer layer, LayerInitType init, PetscReal std)
{
  Layer_DMConv2d *dc = (Layer_DMConv2d *)layer->data;

  PetscFunctionBegin;
  dc->init    = init;
  dc->initstd = std;
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetDM - makes a dmconv2d layer grid-distributed: its tensors are fields of this 2-D DMDA (each rank its
  block of grid points, a grid point a sample of shape (channels)), the halo exchange DMGlobalToLocal(). The DMDA's
  dof, stencil and stencil width do not matter (the layer makes its own with dof = its input channels); its grid,
  boundary types (periodic: wrap around; otherwise zero padding) and ownership ranges do. NULL returns to the
  batch-distributed layout. NetDMDASetUp() sets it on every dmconv2d layer of a Net. The layer keeps a reference.
@*/
PetscErrorCode LayerDMConv2dSetDM(Layer layer, DM dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (dm) PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  PetscTryMethod(layer, "LayerDMConv2dSetDM_C", (Layer, DM), (layer, dm));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dGetDM - the DMDA of a grid-distributed dmconv2d layer (borrowed), or NULL.
@*/
PetscErrorCode LayerDMConv2dGetDM(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  *dm = NULL;
  PetscTryMethod(layer, "LayerDMConv2dGetDM_C", (Layer, DM *), (layer, dm));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetOutputChannels - the number of output channels of a dmconv2d layer (-dmconv2d_outputs).
@*/
PetscErrorCode LayerDMConv2dSetOutputChannels(Layer layer, PetscInt nout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDMConv2dSetOutputChannels_C", (Layer, PetscInt), (layer, nout));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetKernel - the kernel size (odd) of a dmconv2d layer: kh along y (rows), kw along x (-dmconv2d_kernel).
@*/
PetscErrorCode LayerDMConv2dSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDMConv2dSetKernel_C", (Layer, PetscInt, PetscInt), (layer, kh, kw));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetBias - whether a dmconv2d layer adds a bias per output channel (default yes; -dmconv2d_bias).
@*/
PetscErrorCode LayerDMConv2dSetBias(Layer layer, PetscBool bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDMConv2dSetBias_C", (Layer, PetscBool), (layer, bias));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetInitialization - how the weights of a dmconv2d layer start (the bias starts at zero).
@*/
PetscErrorCode LayerDMConv2dSetInitialization(Layer layer, LayerInitType init, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDMConv2dSetInitialization_C", (Layer, LayerInitType, PetscReal), (layer, init, std));
  PetscFunctionReturn(0);
}

/*@
  LayerDMConv2dSetAlgorithm - how a dmconv2d layer computes (-dmconv2d_algorithm auto, im2col or taps); the results
  agree to round-off.
@*/
PetscErrorCode LayerDMConv2dSetAlgorithm(Layer layer, LayerDMConv2dAlgorithm algorithm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDMConv2dSetAlgorithm_C", (Layer, LayerDMConv2dAlgorithm), (layer, algorithm));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_DMConv2d(Layer layer)
{
  Layer_DMConv2d *dc;

  PetscFunctionBegin;
  PetscCall(PetscNew(&dc));
  dc->k[0]                   = 3;
  dc->k[1]                   = 3;
  dc->bias                   = PETSC_TRUE;
  dc->init                   = LAYER_INIT_KAIMING;
  dc->initstd                = 0.01;
  layer->data                = dc;
  layer->ops->setup          = LayerSetUp_DMConv2d;
  layer->ops->initialize     = LayerInitialize_DMConv2d;
  layer->ops->forward        = LayerForward_DMConv2d;
  layer->ops->backward       = LayerBackward_DMConv2d;
  layer->ops->jvp            = LayerJVP_DMConv2d;
  layer->ops->tensors        = LayerTensors_DMConv2d;
  layer->ops->setarguments   = LayerSetArguments_DMConv2d;
  layer->ops->getarguments   = LayerGetArguments_DMConv2d;
  layer->ops->setfromoptions = LayerSetFromOptions_DMConv2d;
  layer->ops->view           = LayerView_DMConv2d;
  layer->ops->reset          = LayerReset_DMConv2d;
  layer->ops->destroy        = LayerDestroy_DMConv2d;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetDM_C", LayerDMConv2dSetDM_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dGetDM_C", LayerDMConv2dGetDM_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetOutputChannels_C", LayerDMConv2dSetOutputChannels_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetKernel_C", LayerDMConv2dSetKernel_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetBias_C", LayerDMConv2dSetBias_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetInitialization_C", LayerDMConv2dSetInitialization_DMConv2d));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDMConv2dSetAlgorithm_C", LayerDMConv2dSetAlgorithm_DMConv2d));
  PetscFunctionReturn(0);
}
