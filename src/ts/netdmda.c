/*
  A Net applied to a DMDA field (include/petnetdmda.h): pointwise, or, with convolutions, on the generic spatial
  engine (src/net/netspatial.c, NetSetGrid()).

  The local part of a DMDA global Vec is the rank's block of grid points, [zm][ym][xm][dof] with the dof interlaced:
  exactly a batch of xm*ym*zm samples of shape (dof), sample-major and channels-last, and exactly one field of grid
  mode's input. The functions here only check that the Net and the field agree on that layout, choose the mode and
  hand the field to the Net; nothing is copied.
*/
#include <petnet/private/netimpl.h>
#include <petnetdmda.h>
#include "ode/ode.h" /* NetDMDASetGrid_Private(), which ode layers call too */

static PetscErrorCode NetDMDACheckDM_Private(DM da, PetscInt *dof, PetscInt *npoints)
{
  PetscBool isdmda;
  PetscInt  xm, ym, zm;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(da, DM_CLASSID, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)da, DMDA, &isdmda));
  PetscCheck(isdmda, PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_WRONG, "The DM must be a DMDA (DMDACreate1d/2d/3d): its grid points are the Net's batch");
  PetscCall(DMDAGetInfo(da, NULL, NULL, NULL, NULL, NULL, NULL, NULL, dof, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, NULL, NULL, NULL, &xm, &ym, &zm));
  *npoints = xm * ym * zm;
  PetscFunctionReturn(0);
}

/* The Net's nodes that need the grid: windows (convolutions, pools) and scalings (upsampling); the members of residual
   blocks are nodes of the Net too. An ode layer's inner Net decides for itself (NetDMDASetGrid_Private()). */
static PetscErrorCode NetDMDAIsSpatial_Private(Net net, PetscBool *spatial)
{
  PetscFunctionBegin;
  *spatial = PETSC_FALSE;
  for (PetscInt l = 0; l < net->nlayers; l++)
    if (net->layers[l]->ops->getwindow || net->layers[l]->ops->getscale) *spatial = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  Lays net out on the DMDA dm, or back in batch mode with NULL: a Net with windowed nodes goes to grid mode on dm (the
  generic spatial engine, NetSetGrid()), a pointwise one stays in batch mode (its batch is the rank's grid points), and
  every ode layer gets dm for its inner Net, which does the same at the ode's set-up. A Net whose layout changes is
  laid out anew and keeps its parameter values and layer buffers (batchnorm's running statistics), which have the same
  layout in both modes; a Net whose layout does not change is left alone, with its Jacobian shells. With dm NULL a Net
  in grid mode is reset (its input shape is then that of images). NetDMDASetUp(), NetConv2dSetDM() and the ode layer
  (ode.c) call it.
*/
PetscErrorCode NetDMDASetGrid_Private(Net net, DM dm)
{
  PetscBool    spatial, changed = PETSC_FALSE;
  DM           target;
  Vec          keep = NULL;
  PetscScalar *buffers;
  PetscInt     nbuffers = 0;

  PetscFunctionBegin;
  for (PetscInt l = 0; l < net->nlayers; l++) { /* ode layers: the DMDA of their inner Net */
    Layer layer = net->layers[l];
    DM    old = NULL, now = NULL;

    PetscTryMethod(layer, "LayerODEGetDM_C", (Layer, DM *), (layer, &old));
    PetscTryMethod(layer, "LayerODESetDM_C", (Layer, DM), (layer, dm));
    PetscTryMethod(layer, "LayerODEGetDM_C", (Layer, DM *), (layer, &now));
    if (old != now) changed = PETSC_TRUE;
  }
  PetscCall(NetDMDAIsSpatial_Private(net, &spatial));
  target = spatial ? dm : NULL;
  if (target != net->grid) changed = PETSC_TRUE;
  if (!changed) PetscFunctionReturn(0);
  if (!net->setupcalled || !dm) { /* back to batch mode: the caller gives the input shape of images (NetSetInputShape()) */
    if (target != net->grid) PetscCall(NetSetGrid(net, target));
    PetscFunctionReturn(0);
  }
  /* keep the values (a trained or loaded Net stays trained) across the new layout */
  PetscCall(VecDuplicate(net->theta, &keep));
  PetscCall(VecCopy(net->theta, keep));
  for (PetscInt l = 0; l < net->nlayers; l++) nbuffers += net->layers[l]->nbuffers;
  PetscCall(PetscMalloc1(nbuffers, &buffers));
  for (PetscInt l = 0, o = 0; l < net->nlayers; o += net->layers[l]->nbuffers, l++) PetscCall(PetscArraycpy(buffers + o, net->layers[l]->buffers, net->layers[l]->nbuffers));
  PetscCall(NetReset(net));
  if (target != net->grid) PetscCall(NetSetGrid(net, target));
  PetscCall(NetSetUp(net));
  PetscCall(NetSetParameters(net, keep));
  {
    PetscInt now = 0;

    for (PetscInt l = 0; l < net->nlayers; l++) now += net->layers[l]->nbuffers;
    PetscCheck(now == nbuffers, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The layers hold %" PetscInt_FMT " buffer values in the new layout and had %" PetscInt_FMT, now, nbuffers);
  }
  for (PetscInt l = 0, o = 0; l < net->nlayers; o += net->layers[l]->nbuffers, l++) PetscCall(PetscArraycpy(net->layers[l]->buffers, buffers + o, net->layers[l]->nbuffers));
  PetscCall(PetscFree(buffers));
  PetscCall(VecDestroy(&keep));
  PetscFunctionReturn(0);
}

/*@
  NetConv2dSetDM - deprecated: lays a Net out on a DMDA as NetDMDASetUp() does (without setting its input shape), or
  with NULL returns it to batch mode

  Collective

  Input Parameters:
+ net - the Net
- dm  - the DMDA, or NULL

  Notes:
  Deprecated since the generic spatial engine runs every Net on a DMDA: conv2d has no grid mode of its own. Use
  NetDMDASetUp() to lay a Net out on a DMDA, NetSetGrid(net, NULL) to return it to batch mode. A Net with
  convolutions, pools or upsamplings is put in grid mode on dm (NetSetGrid()); a pointwise Net is left in batch mode
  (its batch is the rank's grid points); ode layers hand dm to their inner Nets, which do the same. A set-up Net whose
  layout changes keeps its parameter values and layer buffers; one whose layout does not change is not touched.

  Level: deprecated

.seealso: `NetDMDASetUp()`, `NetSetGrid()`, `NetGetGrid()`
@*/
PetscErrorCode NetConv2dSetDM(Net net, DM dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (dm) PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  PetscCall(NetDMDASetGrid_Private(net, dm));
  PetscFunctionReturn(0);
}

/*@
  NetDMDASetUp - prepares a Net to act on the fields of a DMDA, a grid point being a sample: sets the input shape to
  (dof) unless one is set already (then its size must be dof), puts a Net with convolutions, pools or upsamplings in
  grid mode on the DMDA (NetSetGrid(): each rank computes its block after a halo exchange), and sets the Net up.

  Collective

  Input Parameters:
+ net - the Net, with its layers
- da  - the DMDA; each grid point is a sample with dof features

  Notes:
  NetDMDAForward(), NetDMDACreateJacobian() and NetDMDATSSetRHS() call it; calling it again with the same DMDA
  changes nothing. A Net that only acts point by point (dense, activations, batchnorm) stays in batch mode: its batch
  is the rank's grid points, on a DMDA of any dimension. A Net with windowed layers runs on the generic spatial engine
  (a 2-D or 3-D DMDA); its output must lie on the same grid (convolutions of stride 1 with "same" padding: conv2d:C:K:1:K/2),
  so that N maps a field to a field. Along a periodic dim of the DMDA the windows wrap around; along the others they
  read zeros beyond the field, as the batch-mode layers' padding does, so a model trained on zero-padded images computes
  the same function on a field. ode layers hand the DMDA to their inner Nets. A set-up Net whose layout changes keeps its
  parameter values and layer buffers; one whose layout does not change is not touched (its Jacobians stay valid).

  Level: intermediate

.seealso: `NetDMDAForward()`, `NetSetGrid()`, `NetSetInputShape()`, `NetSetUp()`
@*/
PetscErrorCode NetDMDASetUp(Net net, DM da)
{
  PetscInt    dof, npoints, insize;
  PetNetShape in;
  char        shape[64];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetDMDACheckDM_Private(da, &dof, &npoints));
  PetscCall(NetGetInputShape(net, &in));
  if (!in.ndim) {
    in.ndim   = 1;
    in.dim[0] = dof;
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeToString(&in, sizeof(shape), shape));
  PetscCheck(insize == dof, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP,
             "The Net's input shape %s has %" PetscInt_FMT " entries but the DMDA has dof = %" PetscInt_FMT ": a grid point is one sample, so give the Net input shape %" PetscInt_FMT " (or leave it unset)", shape, insize, dof, dof);
  PetscCall(NetDMDASetGrid_Private(net, da));
  PetscCall(NetSetUp(net));
  PetscCall(NetSpatialCheckKeepsGrid_Private(net, "NetDMDASetUp()"));
  PetscFunctionReturn(0);
}

/* v must be a global Vec of a DMDA whose grid points carry bs entries each */
static PetscErrorCode NetDMDACheckVec_Private(Vec v, PetscInt npoints, PetscInt bs, const char name[])
{
  PetscInt n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCheck(n == npoints * bs, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "%s has %" PetscInt_FMT " local entries but this rank owns %" PetscInt_FMT " grid points of %" PetscInt_FMT " entries: use a global Vec of the DMDA (DMCreateGlobalVector()) with dof = %" PetscInt_FMT, name, n, npoints, bs, bs);
  PetscFunctionReturn(0);
}

/*@
  NetDMDAForward - F = N(U) at every grid point: U is a field of the DMDA (dof = the Net's input size), F a field of
  the same grid with dof = the Net's output size (the same DMDA when they are equal, else e.g.
  DMDACreateCompatibleDMDA()). F may be NULL.

  Collective

  Input Parameters:
+ net - the Net
. da  - the DMDA (NetDMDASetUp() is applied to it)
- U   - a global Vec of the DMDA

  Output Parameter:
. F - a global Vec of a DMDA of the same grid with dof = the Net's output size, or NULL

  Notes:
  U is not copied: the Net keeps a reference to it as the linearization point of NetBackward(), NetJVP() and the
  Jacobian shells, so leave it unchanged until they are done.

  Level: intermediate

.seealso: `NetDMDASetUp()`, `NetForward()`, `NetDMDACreateJacobian()`
@*/
PetscErrorCode NetDMDAForward(Net net, DM da, Vec U, Vec F)
{
  PetscInt    dof, npoints, outsize;
  PetNetShape out;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(U, VEC_CLASSID, 3);
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(NetDMDACheckDM_Private(da, &dof, &npoints));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(NetDMDACheckVec_Private(U, npoints, dof, "The field U"));
  if (F) {
    PetscValidHeaderSpecific(F, VEC_CLASSID, 4);
    PetscCall(NetDMDACheckVec_Private(F, npoints, outsize, "The output field F"));
  }
  PetscCall(NetForward(net, U, F));
  PetscFunctionReturn(0);
}

typedef struct {
  Net net;
  Mat A; /* the simulation's part (may be NULL) */
} NetDMDAJacobian;

/* y = dN/dU x + A x */
static PetscErrorCode MatMult_NetDMDAJacobian(Mat J, Vec x, Vec y)
{
  NetDMDAJacobian *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetJVP(ctx->net, x, NULL, y));
  if (ctx->A) PetscCall(MatMultAdd(ctx->A, x, y, y));
  PetscFunctionReturn(0);
}

/* x = (dN/dU)^T y + A^T y */
static PetscErrorCode MatMultTranspose_NetDMDAJacobian(Mat J, Vec y, Vec x)
{
  NetDMDAJacobian *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetBackward(ctx->net, y, x, NULL));
  if (ctx->A) PetscCall(MatMultTransposeAdd(ctx->A, y, x, x));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_NetDMDAJacobian(Mat J)
{
  NetDMDAJacobian *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetDestroy(&ctx->net));
  PetscCall(MatDestroy(&ctx->A));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

/*@
  NetDMDACreateJacobian - the Jacobian of G(U) = A U + N(U) with N the Net applied pointwise to the DMDA's fields:
  J = A + dN/dU, a MATSHELL whose MatMult is A x + the Net's JVP and MatMultTranspose is A^T y + the Net's VJP.

  Collective

  Input Parameters:
+ net - the Net; J is taken at its last forward pass (NetDMDAForward()), whenever J is applied
. da  - the DMDA
- A   - the simulation's own Jacobian (e.g. DMCreateMatrix() with a stencil operator), or NULL for dN/dU alone; its
        rows must be laid out like N(U) and its columns like U. J keeps a reference, so A may change in between.

  Output Parameter:
. J - the shell (destroy it with MatDestroy()); it keeps a reference to the Net

  Notes:
  For Newton on a steady hybrid problem (SNES) or a user implicit TS: A keeps its entries, so it (or a shifted copy)
  is the preconditioner matrix, while the learned term stays matrix-free. Inside NetTSSetRHS() the TS glue builds the
  same sum itself (NetTSSetUserRHS()).

  Level: intermediate

.seealso: `NetDMDAForward()`, `NetGetJacobian()`, `NetTSSetUserRHS()`, `NetDMDASetUp()`
@*/
PetscErrorCode NetDMDACreateJacobian(Net net, DM da, Mat A, Mat *J)
{
  NetDMDAJacobian *ctx;
  PetscInt         dof, npoints, outsize, m, n, M, N;
  PetNetShape      out;
  VecType          vtype;
  MPI_Comm         comm;

  PetscFunctionBegin;
  PetscValidPointer(J, 4);
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(NetDMDACheckDM_Private(da, &dof, &npoints));
  comm = PetscObjectComm((PetscObject)net);
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  m = npoints * outsize;
  n = npoints * dof;
  PetscCall(MPIU_Allreduce(&m, &M, 1, MPIU_INT, MPI_SUM, comm));
  PetscCall(MPIU_Allreduce(&n, &N, 1, MPIU_INT, MPI_SUM, comm));
  if (A) {
    PetscInt am, an;

    PetscValidHeaderSpecific(A, MAT_CLASSID, 3);
    PetscCall(MatGetLocalSize(A, &am, &an));
    PetscCheck(am == m && an == n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
               "The matrix A is %" PetscInt_FMT " x %" PetscInt_FMT " on this rank but the Net maps %" PetscInt_FMT " local entries to %" PetscInt_FMT ": create it with DMCreateMatrix() on the DMDA (its output must have dof = %" PetscInt_FMT ")", am,
               an, n, m, dof);
    PetscCall(PetscObjectReference((PetscObject)A));
  }
  PetscCall(PetscNew(&ctx));
  PetscCall(PetscObjectReference((PetscObject)net));
  ctx->net = net;
  ctx->A   = A;
  PetscCall(MatCreateShell(comm, m, n, M, N, ctx, J));
  PetscCall(MatShellSetOperation(*J, MATOP_MULT, (void (*)(void))MatMult_NetDMDAJacobian));
  PetscCall(MatShellSetOperation(*J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetDMDAJacobian));
  PetscCall(MatShellSetOperation(*J, MATOP_DESTROY, (void (*)(void))MatDestroy_NetDMDAJacobian));
  PetscCall(DMGetVecType(da, &vtype));
  PetscCall(MatShellSetVecType(*J, vtype));
  PetscFunctionReturn(0);
}

/*@
  NetDMDATSSetRHS - the Net as the right-hand side of a TS on a DMDA, applied at every grid point: du/dt = N(u; theta).
  Sets the TS's DM and calls NetTSSetRHS() with the DMDA's layout (see there: set the TS type first).

  Collective

  Input Parameters:
+ ts  - the TS
. da  - the DMDA of the state u
- net - the Net, mapping dof features to dof features

  Notes:
  Add the simulation's own terms g(t, u) (e.g. diffusion) and their assembled Jacobian with NetTSSetUserRHS(): the TS
  then integrates du/dt = g(t, u) + N(u) and TSAdjointSolve() differentiates both.

  Level: intermediate

.seealso: `NetTSSetRHS()`, `NetTSSetUserRHS()`, `NetDMDASetUp()`, `NetDMDACreateJacobian()`
@*/
PetscErrorCode NetDMDATSSetRHS(TS ts, DM da, Net net)
{
  Vec u;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(TSSetDM(ts, da));
  PetscCall(DMGetGlobalVector(da, &u));
  PetscCall(NetTSSetRHS(ts, net, u));
  PetscCall(DMRestoreGlobalVector(da, &u));
  PetscFunctionReturn(0);
}
