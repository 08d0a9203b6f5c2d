/*
  conv2d in grid mode (conv2dgrid.h): the requirements, set-up and view, the layer's operations on the rank's block,
  and the public functions that give a conv2d layer its DMDA. A field is the local part of a global Vec of the DMDA
  (x [ym][xm][Cin]); the kernels (conv2dgridkernels.c) read its ghosted copy xl [gym][gxm][Cin].

    forward   xl = DMGlobalToLocal(x);   y = kernels(theta, xl)
    backward  xl = DMGlobalToLocal(x) (for dtheta);   dl = 0, dl += J_x^T dy, dtheta += J_theta^T dy;
              dx = DMLocalToGlobal(dl, ADD_VALUES)       (the adjoint of the halo exchange)
    jvp       dl = DMGlobalToLocal(dx);   dy = J_x dl + J_theta dtheta
    sobackward  xl = DMGlobalToLocal(xdot);   dWdot += J_W(xl)^T dy                 (backward's weight part at xdot)
                dl = 0, dl += J_x(Wdot)^T dy;   dxdot += DMLocalToGlobal(dl, ADD_VALUES)   (its input part with Wdot)
  xl is no cached state: backward and jvp exchange x again. The halo exchanges run on the calling thread, the kernels
  on PetNet's threads (conv2dgridkernels.c; set-up fixes their parts, Conv2dGridGetWorkspace() a col buffer per thread).
*/
#include "conv2d.h"

const char *const LayerConv2dGridAlgorithms[] = {"auto", "im2col", "taps", "LayerConv2dGridAlgorithm", "LAYER_CONV2D_GRID_ALGORITHM_", NULL};

/*
  Grid mode keeps the grid: one output point per input point, each computed from its own neighbourhood. That is the
  batch layer with stride 1, dilation 1, one group, an odd kernel and "same" padding K/2, written the same way.
*/
PetscErrorCode Conv2dCheck_Grid(Layer layer)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  const LayerWindow *w    = &conv->base.win;
  MPI_Comm           comm = PetscObjectComm((PetscObject)layer);
  PetscInt           dim, M, N, k[2], pad[2];
  PetscBool          isdmda;
  PetscMPIInt        cmp;
  char               shape[64], have[256], want[128], kernel[32], padding[32];

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)conv->grid.dm, DMDA, &isdmda));
  PetscCheck(isdmda, comm, PETSC_ERR_ARG_WRONG, "conv2d layer %" PetscInt_FMT ": LayerConv2dSetDM() needs a DMDA, not a DM of type %s", layer->index, ((PetscObject)conv->grid.dm)->type_name);
  PetscCallMPI(MPI_Comm_compare(comm, PetscObjectComm((PetscObject)conv->grid.dm), &cmp));
  PetscCheck(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, comm, PETSC_ERR_ARG_NOTSAMECOMM, "conv2d layer %" PetscInt_FMT ": the DMDA must live on the Net's communicator", layer->index);
  PetscCall(DMDAGetInfo(conv->grid.dm, &dim, &M, &N, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCheck(dim == 2, comm, PETSC_ERR_ARG_WRONG,
             "conv2d layer %" PetscInt_FMT " on a DMDA convolves a 2-D grid, but this DMDA is %" PetscInt_FMT "-D: create it with DMDACreate2d() (on 1-D and 3-D DMDAs, use layers that act point by point, such as dense)", layer->index, dim);
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 1, comm, PETSC_ERR_ARG_INCOMP,
             "conv2d layer %" PetscInt_FMT
             " on a DMDA takes one grid point as a sample: its input shape must be (channels), not %s (NetDMDASetUp() sets the Net's input shape to the DMDA's dof; LayerConv2dSetDM(layer, NULL) returns to (height, width, channels) images)",
             layer->index, shape);
  for (int d = 0; d < 2; d++) {
    k[d]   = w->k[d] % 2 ? w->k[d] : w->k[d] + 1;
    pad[d] = k[d] / 2;
  }
  if (w->k[0] != k[0] || w->k[1] != k[1] || w->pad[0] != pad[0] || w->pad[1] != pad[1] || w->stride[0] != 1 || w->stride[1] != 1 || w->dilation[0] != 1 || w->dilation[1] != 1 || conv->base.groups != 1) {
    PetscCall(LayerWindowToString(k, 2, sizeof(kernel), kernel));
    PetscCall(LayerWindowToString(pad, 2, sizeof(padding), padding));
    PetscCall(PetscSNPrintf(want, sizeof(want), "conv2d:%" PetscInt_FMT ":%s:1:%s%s", conv->base.nout, kernel, padding, conv->base.bias ? "" : ":bias=0"));
    PetscCall(LayerGetSpec(layer, sizeof(have), have));
    SETERRQ(comm, PETSC_ERR_ARG_INCOMP, "conv2d layer %" PetscInt_FMT " on a DMDA keeps the grid: it needs stride 1, dilation 1, groups 1, an odd kernel K and padding K/2 (write %s), not %s", layer->index, want, have);
  }
  PetscCheck(w->k[0] <= N && w->k[1] <= M, comm, PETSC_ERR_ARG_OUTOFRANGE, "conv2d layer %" PetscInt_FMT ": the %" PetscInt_FMT "x%" PetscInt_FMT " kernel is larger than the %" PetscInt_FMT " x %" PetscInt_FMT " grid", layer->index, w->k[0], w->k[1],
             N, M);
  PetscFunctionReturn(0);
}

/*
  The im2col geometry of the block (../conv/convim2col.h, a 2-D one: depth 1): output point (r, q) of the block, tap (a, b), reads the grid point
  (xs + q - KW/2 + b, ys + r - KH/2 + a), found in the ghosted array at row ys + r - KH/2 + a - gys, column
  xs + q - KW/2 + b - gxs. A periodic grid wraps in the ghosts (all taps valid); otherwise taps off the grid read zero.
*/
static PetscErrorCode Conv2dGridSetUpIm2col(Layer_Conv2d *conv)
{
  Conv2dGrid            *grid = &conv->grid;
  const Conv2dGridBlock *bk   = &grid->block;
  const PetscInt         kh = conv->base.win.k[0], kw = conv->base.win.k[1], ry = kh / 2, rx = kw / 2;

  PetscFunctionBegin;
  PetscCall(PetscMalloc4(bk->ym, &grid->t0[0], bk->ym, &grid->t1[0], bk->xm, &grid->t0[1], bk->xm, &grid->t1[1]));
  for (PetscInt r = 0; r < bk->ym; r++) {
    grid->t0[0][r] = bk->periodic[1] ? 0 : PetscMax(0, ry - bk->ys - r);
    grid->t1[0][r] = PetscMax(grid->t0[0][r], bk->periodic[1] ? kh : PetscMin(kh, bk->N + ry - bk->ys - r));
  }
  for (PetscInt q = 0; q < bk->xm; q++) {
    grid->t0[1][q] = bk->periodic[0] ? 0 : PetscMax(0, rx - bk->xs - q);
    grid->t1[1][q] = PetscMax(grid->t0[1][q], bk->periodic[0] ? kw : PetscMin(kw, bk->M + rx - bk->xs - q));
  }
  conv->base.im2col = (ConvIm2col){
      .out      = {1, bk->ym, bk->xm},
      .k        = {1, kh, kw},
      .step     = {1, 1, 1},
      .dilation = {1, 1, 1},
      .origin   = {0, bk->ys - bk->gys - ry, bk->xs - bk->gxs - rx},
      .ld       = {0, bk->gxm * conv->base.cin},
      .cin      = conv->base.cin,
      .cg       = conv->base.cin,
      .groups   = 1,
      .t0       = {NULL, grid->t0[0], grid->t0[1]},
      .t1       = {NULL, grid->t1[0], grid->t1[1]},
  };
  ConvIm2colSetFlatDepth(&conv->base.im2col);
  PetscFunctionReturn(0);
}

/* The halo exchange's DMDA (the user's grid, boundary types and ownership; dof Cin; box stencil of the kernel radius),
   this rank's block, and the kernels' workspace. Called after Conv2dCheck_Grid() and with cin, kg set. */
PetscErrorCode Conv2dSetUp_Grid(Layer layer)
{
  Layer_Conv2d   *conv = (Layer_Conv2d *)layer->data;
  Conv2dGrid     *grid = &conv->grid;
  MPI_Comm        comm = PetscObjectComm((PetscObject)layer);
  PetscInt        M, N, m, n, xs, ys, xm, ym, gxs, gys, gxm, gym;
  const PetscInt *lx, *ly;
  DMBoundaryType  bx, by;

  PetscFunctionBegin;
  PetscCall(DMDAGetInfo(grid->dm, NULL, &M, &N, NULL, &m, &n, NULL, NULL, NULL, &bx, &by, NULL, NULL));
  PetscCall(DMDAGetOwnershipRanges(grid->dm, &lx, &ly, NULL));
  PetscCall(DMDACreate2d(comm, bx, by, DMDA_STENCIL_BOX, M, N, m, n, conv->base.cin, PetscMax(conv->base.win.k[0], conv->base.win.k[1]) / 2, lx, ly, &grid->dmin));
  PetscCall(DMSetUp(grid->dmin));
  PetscCall(DMDAGetCorners(grid->dmin, &xs, &ys, NULL, &xm, &ym, NULL));
  PetscCall(DMDAGetGhostCorners(grid->dmin, &gxs, &gys, NULL, &gxm, &gym, NULL));
  grid->block = (Conv2dGridBlock){xs, ys, xm, ym, gxs, gys, gxm, gym, M, N, {bx == DM_BOUNDARY_PERIODIC, by == DM_BOUNDARY_PERIODIC}};
  PetscCall(VecCreateMPIWithArray(comm, conv->base.cin, xm * ym * conv->base.cin, PETSC_DECIDE, NULL, &grid->xg));
  PetscCall(DMCreateLocalVector(grid->dmin, &grid->xl));
  PetscCall(VecDuplicate(grid->xl, &grid->dl));
  layer->out.ndim   = 1;
  layer->out.dim[0] = conv->base.nout;
  PetscCall(Conv2dGridSetUpIm2col(conv));

  grid->taps = (PetscBool)(grid->algorithm == LAYER_CONV2D_GRID_ALGORITHM_TAPS || (grid->algorithm == LAYER_CONV2D_GRID_ALGORITHM_AUTO && xm >= CONV2D_GRID_TAPS_MIN_WIDTH));
  if (grid->taps)
    PetscCall(PetscMalloc1(2 * conv->base.kg * conv->base.nout, &grid->wt));
  else { /* im2col in chunks of rows whose col and output fit in -conv2d_max_workspace MB: the GEMM then reads col from cache */
    const PetscReal points = conv->base.maxworkspace * 1024.0 * 1024.0 / (sizeof(PetscScalar) * (conv->base.kg + conv->base.nout));

    grid->chunkrows = PetscMax(1, (PetscInt)PetscMin((PetscReal)ym, PetscFloorReal(points / PetscMax(1, xm))));
  }
  /* the threads' parts of the block's rows (conv2dgridkernels.c): at least CONV2D_GRID_PART_MIN_POINTS points, and at
     least KH - 1 rows, so that the input cotangents of parts p and p + 2 touch disjoint rows of the ghosted array */
  grid->nparts = PetNetThreadParts(ym, PetscMax(conv->base.win.k[0] - 1, (CONV2D_GRID_PART_MIN_POINTS + xm - 1) / PetscMax(1, xm)));
  if (grid->nparts > 1) PetscCall(PetscMalloc1(grid->nparts * (conv->base.kg + 1) * conv->base.nout, &grid->dwpart));
  PetscCall(Conv2dGridGetWorkspace(layer));
  PetscFunctionReturn(0);
}

/* im2col's column buffers, one per thread of PetNetThreads(): reallocated (outside the kernels' parallel regions) when
   there are more threads than buffers */
PetscErrorCode Conv2dGridGetWorkspace(Layer layer)
{
  Layer_Conv2d  *conv     = (Layer_Conv2d *)layer->data;
  Conv2dGrid    *grid     = &conv->grid;
  const PetscInt nthreads = PetNetThreads();

  PetscFunctionBegin;
  if (grid->taps || nthreads <= grid->nthreads) PetscFunctionReturn(0);
  PetscCall(PetscFree(grid->col));
  PetscCall(PetscMalloc1((size_t)nthreads * grid->chunkrows * grid->block.xm * conv->base.kg, &grid->col));
  grid->nthreads = nthreads;
  PetscFunctionReturn(0);
}

/* Forgets what Conv2dSetUp_Grid() made; the DMDA and the algorithm stay */
PetscErrorCode Conv2dReset_Grid(Layer layer)
{
  Conv2dGrid *grid = &((Layer_Conv2d *)layer->data)->grid;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&grid->xg));
  PetscCall(VecDestroy(&grid->xl));
  PetscCall(VecDestroy(&grid->dl));
  PetscCall(DMDestroy(&grid->dmin));
  PetscCall(PetscFree(grid->col));
  PetscCall(PetscFree(grid->wt));
  PetscCall(PetscFree(grid->dwpart));
  PetscCall(PetscFree4(grid->t0[0], grid->t1[0], grid->t0[1], grid->t1[1]));
  grid->taps      = PETSC_FALSE;
  grid->chunkrows = 0;
  grid->nparts    = 0;
  grid->nthreads  = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dView_Grid(Layer layer, PetscViewer viewer)
{
  Conv2dGrid *grid = &((Layer_Conv2d *)layer->data)->grid;
  PetscInt    M, N, m, n;
  char        inuse[64] = "";

  PetscFunctionBegin;
  if (layer->setupcalled && grid->taps)
    PetscCall(PetscSNPrintf(inuse, sizeof(inuse), " (taps: one GEMM per kernel tap and row)"));
  else if (layer->setupcalled)
    PetscCall(PetscSNPrintf(inuse, sizeof(inuse), " (im2col + GEMM on chunks of %" PetscInt_FMT " rows)", grid->chunkrows));
  PetscCall(PetscViewerASCIIPrintf(viewer, "grid algorithm %s%s\n", LayerConv2dGridAlgorithms[grid->algorithm], inuse));
  PetscCall(DMDAGetInfo(grid->dm, NULL, &M, &N, NULL, &m, &n, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(PetscViewerASCIIPrintf(viewer, "grid-distributed: a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA on %" PetscInt_FMT " x %" PetscInt_FMT " ranks, halo exchange DMGlobalToLocal\n", M, N, m, n));
  PetscFunctionReturn(0);
}

/* This rank's n samples must be its points of the DMDA: the local part of one global Vec (a field) */
static PetscErrorCode Conv2dGridCheckPoints(Layer layer, PetscInt n)
{
  const Conv2dGridBlock *bk = &((Layer_Conv2d *)layer->data)->grid.block;

  PetscFunctionBegin;
  PetscCheck(n == bk->xm * bk->ym, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "conv2d layer %" PetscInt_FMT " on a DMDA: this rank holds %" PetscInt_FMT " samples but owns %" PetscInt_FMT " x %" PetscInt_FMT " points of the DMDA: give the Net one global Vec of the DMDA (a field), as NetDMDAForward() does",
             layer->index, n, bk->xm, bk->ym);
  PetscFunctionReturn(0);
}

/* local = the ghosted array of the field whose owned part is the array a: the halo exchange DMGlobalToLocal() */
static PetscErrorCode Conv2dGridHaloExchange(Conv2dGrid *grid, const PetscScalar *a, Vec local)
{
  PetscFunctionBegin;
  PetscCall(VecPlaceArray(grid->xg, a));
  PetscCall(DMGlobalToLocalBegin(grid->dmin, grid->xg, INSERT_VALUES, local));
  PetscCall(DMGlobalToLocalEnd(grid->dmin, grid->xg, INSERT_VALUES, local));
  PetscCall(VecResetArray(grid->xg));
  PetscFunctionReturn(0);
}

/* a (= or += if add) the owned part of the sum of the ghosted contributions in local: its adjoint, DMLocalToGlobal()
   with ADD_VALUES */
static PetscErrorCode Conv2dGridHaloAdjoint(Conv2dGrid *grid, Vec local, PetscBool add, PetscScalar *a)
{
  PetscFunctionBegin;
  PetscCall(VecPlaceArray(grid->xg, a));
  if (!add) PetscCall(VecZeroEntries(grid->xg));
  PetscCall(DMLocalToGlobalBegin(grid->dmin, local, ADD_VALUES, grid->xg));
  PetscCall(DMLocalToGlobalEnd(grid->dmin, local, ADD_VALUES, grid->xg));
  PetscCall(VecResetArray(grid->xg));
  PetscFunctionReturn(0);
}

/* y = conv(x) on the rank's block: halo exchange, then the kernels on the ghosted input */
PetscErrorCode Conv2dForward_Grid(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Conv2dGrid        *grid = &((Layer_Conv2d *)layer->data)->grid;
  const PetscScalar *xl;

  PetscFunctionBegin;
  PetscCall(Conv2dGridCheckPoints(layer, n));
  PetscCall(Conv2dGridHaloExchange(grid, x, grid->xl));
  PetscCall(VecGetArrayRead(grid->xl, &xl));
  if (grid->taps)
    PetscCall(Conv2dGridForward_Taps(layer, theta, xl, y));
  else
    PetscCall(Conv2dGridForward_Im2col(layer, theta, xl, y));
  PetscCall(VecRestoreArrayRead(grid->xl, &xl));
  PetscFunctionReturn(0);
}

/*
  dx = J_x^T dy, dtheta += J_theta^T dy. dtheta needs the ghosted input (exchanged again: the Net may have run other
  forward passes since); dx is accumulated in the ghosted array, then summed onto the owners.
*/
PetscErrorCode Conv2dBackward_Grid(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Conv2d      *conv = (Layer_Conv2d *)layer->data;
  Conv2dGrid        *grid = &conv->grid;
  const PetscScalar *xl   = NULL;
  PetscScalar       *dl = NULL, *db = dtheta && conv->base.bias ? dtheta + conv->base.nout * conv->base.kg : NULL;

  PetscFunctionBegin;
  PetscCall(Conv2dGridCheckPoints(layer, n));
  if (dtheta) {
    PetscCall(Conv2dGridHaloExchange(grid, x, grid->xl));
    PetscCall(VecGetArrayRead(grid->xl, &xl));
  }
  if (dx) {
    PetscCall(VecZeroEntries(grid->dl));
    PetscCall(VecGetArray(grid->dl, &dl));
  }
  if (grid->taps)
    PetscCall(Conv2dGridBackward_Taps(layer, theta, xl, dy, dl, dtheta, db));
  else
    PetscCall(Conv2dGridBackward_Im2col(layer, theta, xl, dy, dl, dtheta, db));
  if (dtheta) PetscCall(VecRestoreArrayRead(grid->xl, &xl));
  if (dx) {
    PetscCall(VecRestoreArray(grid->dl, &dl));
    PetscCall(Conv2dGridHaloAdjoint(grid, grid->dl, PETSC_FALSE, dx));
  }
  PetscFunctionReturn(0);
}

/* dWdot += J_W(xdot)^T dy (weights only: the bias term is zero), dxdot += J_x(Wdot)^T dy: backward's kernels with the
   tangents, the ghosted xdot in xl and the input part summed onto the owners' dxdot */
PetscErrorCode Conv2dSOBackward_Grid(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  Conv2dGrid     *grid = &((Layer_Conv2d *)layer->data)->grid;
  const PetscBool doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);

  PetscFunctionBegin;
  PetscCall(Conv2dGridCheckPoints(layer, n));
  if (doW) {
    const PetscScalar *xl;

    PetscCall(Conv2dGridHaloExchange(grid, xdot, grid->xl));
    PetscCall(VecGetArrayRead(grid->xl, &xl));
    if (grid->taps)
      PetscCall(Conv2dGridBackward_Taps(layer, NULL, xl, dy, NULL, dWdot, NULL));
    else
      PetscCall(Conv2dGridBackward_Im2col(layer, NULL, xl, dy, NULL, dWdot, NULL));
    PetscCall(VecRestoreArrayRead(grid->xl, &xl));
  }
  if (dox) {
    PetscScalar *dl;

    PetscCall(VecZeroEntries(grid->dl));
    PetscCall(VecGetArray(grid->dl, &dl));
    if (grid->taps)
      PetscCall(Conv2dGridBackward_Taps(layer, Wdot, NULL, dy, dl, NULL, NULL));
    else
      PetscCall(Conv2dGridBackward_Im2col(layer, Wdot, NULL, dy, dl, NULL, NULL));
    PetscCall(VecRestoreArray(grid->dl, &dl));
    PetscCall(Conv2dGridHaloAdjoint(grid, grid->dl, PETSC_TRUE, dxdot));
  }
  PetscFunctionReturn(0);
}

/* dy = J_x dx + J_theta dtheta: dx is exchanged like the input; dtheta needs the ghosted input */
PetscErrorCode Conv2dJVP_Grid(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Conv2dGrid        *grid = &((Layer_Conv2d *)layer->data)->grid;
  const PetscScalar *xl = NULL, *dl = NULL;

  PetscFunctionBegin;
  PetscCall(Conv2dGridCheckPoints(layer, n));
  if (dtheta) {
    PetscCall(Conv2dGridHaloExchange(grid, x, grid->xl));
    PetscCall(VecGetArrayRead(grid->xl, &xl));
  }
  if (dx) {
    PetscCall(Conv2dGridHaloExchange(grid, dx, grid->dl));
    PetscCall(VecGetArrayRead(grid->dl, &dl));
  }
  if (grid->taps)
    PetscCall(Conv2dGridJVP_Taps(layer, theta, xl, dl, dtheta, dy));
  else
    PetscCall(Conv2dGridJVP_Im2col(layer, theta, xl, dl, dtheta, dy));
  if (dtheta) PetscCall(VecRestoreArrayRead(grid->xl, &xl));
  if (dx) PetscCall(VecRestoreArrayRead(grid->dl, &dl));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerConv2dSetDM_Conv2d(Layer layer, DM dm)
{
  Conv2dGrid *grid = &((Layer_Conv2d *)layer->data)->grid;

  PetscFunctionBegin;
  if (dm == grid->dm) PetscFunctionReturn(0);
  if (dm) PetscCall(PetscObjectReference((PetscObject)dm));
  PetscCall(DMDestroy(&grid->dm));
  grid->dm = dm;
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerConv2dGetDM_Conv2d(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  *dm = ((Layer_Conv2d *)layer->data)->grid.dm;
  PetscFunctionReturn(0);
}

PetscErrorCode LayerConv2dSetGridAlgorithm_Conv2d(Layer layer, LayerConv2dGridAlgorithm algorithm)
{
  Conv2dGrid *grid = &((Layer_Conv2d *)layer->data)->grid;

  PetscFunctionBegin;
  if (layer->setupcalled && grid->dm && algorithm != grid->algorithm) PetscCall(LayerReset(layer));
  grid->algorithm = algorithm;
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetDM - puts a conv2d layer in grid mode on a 2-D DMDA, or with NULL returns it to batch mode

  Logically collective

  Input Parameters:
+ layer - the layer: conv2d, or ode (which passes the DMDA on to its inner conv2d layers); other kinds ignore the call
- dm    - a 2-D DMDA on the layer's communicator, or NULL

  Notes:
  In grid mode the layer's tensors are fields of this DMDA: each rank holds its block of grid points, a grid point is a
  sample of shape (channels), and the block is convolved after a halo exchange with DMGlobalToLocal() (backward sums
  the ghost contributions onto their owners with DMLocalToGlobal(), ADD_VALUES). The input shape of the layer must then
  be (Cin), and the n samples of each rank its points of the DMDA (the local part of one global Vec).

  The layer must keep the grid: stride 1, dilation 1, one group, an odd kernel K and padding K/2 (conv2d:OUT:K:1:K/2).
  It then has the parameters of the same layer on batches of (height, width, channels) images, so that weights trained
  on images apply to fields. The DMDA's dof, stencil type and width do not matter (the layer makes its own DMDA with dof
  its input channels and a box stencil of the kernel's radius); its grid, boundary types (periodic: the taps wrap
  around; otherwise zero padding) and ownership ranges do. Set-up checks all of this. How each rank convolves its block
  is LayerConv2dSetGridAlgorithm().

  NetDMDASetUp() and NetConv2dSetDM() set it on every conv2d layer of a Net. The layer keeps a reference to dm.
  Giving another DMDA (or NULL) to a layer that is set up resets the layer; in a Net that is set up, call NetReset()
  afterwards (NetConv2dSetDM() does so).

  Level: intermediate

.seealso: `LayerConv2dGetDM()`, `LayerConv2dSetGridAlgorithm()`, `NetConv2dSetDM()`, `NetDMDASetUp()`, `DMDACreate2d()`
@*/
PetscErrorCode LayerConv2dSetDM(Layer layer, DM dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (dm) PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  PetscTryMethod(layer, "LayerConv2dSetDM_C", (Layer, DM), (layer, dm));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dGetDM - gets the DMDA of a conv2d layer in grid mode

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. dm - the DMDA given by LayerConv2dSetDM() (borrowed: do not destroy it), or NULL in batch mode or when the layer is
       neither conv2d nor ode

  Level: intermediate

.seealso: `LayerConv2dSetDM()`, `NetConv2dSetDM()`, `NetDMDASetUp()`
@*/
PetscErrorCode LayerConv2dGetDM(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidPointer(dm, 2);
  *dm = NULL;
  PetscTryMethod(layer, "LayerConv2dGetDM_C", (Layer, DM *), (layer, dm));
  PetscFunctionReturn(0);
}

/*@
  LayerConv2dSetGridAlgorithm - sets how a conv2d layer in grid mode convolves its block of the DMDA

  Logically collective

  Input Parameters:
+ layer     - a conv2d layer (layers of other kinds ignore the call)
- algorithm - `LAYER_CONV2D_GRID_ALGORITHM_AUTO` (the default), `LAYER_CONV2D_GRID_ALGORITHM_IM2COL` or
              `LAYER_CONV2D_GRID_ALGORITHM_TAPS`

  Options Database Key:
. -<prefix>conv2d_grid_algorithm <auto,im2col,taps> - the same from the options (LayerSetFromOptions())

  Notes:
  im2col gathers the ghosted input of chunks of rows of the block (as many as fit in -conv2d_max_workspace MB) and
  multiplies each chunk with one GEMM; taps does one GEMM per kernel tap and row of the block, with no im2col buffer;
  auto takes taps when the rows of the rank's block have at least 32 points, else im2col. The results agree to
  round-off. Batch mode (no DMDA, LayerConv2dSetDM()) ignores it.

  Changing it on a layer in grid mode that is set up resets the layer.

  Level: advanced

.seealso: `LayerConv2dSetDM()`, `LayerConv2dGetDM()`, `NetDMDASetUp()`
@*/
PetscErrorCode LayerConv2dSetGridAlgorithm(Layer layer, LayerConv2dGridAlgorithm algorithm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerConv2dSetGridAlgorithm_C", (Layer, LayerConv2dGridAlgorithm), (layer, algorithm));
  PetscFunctionReturn(0);
}
