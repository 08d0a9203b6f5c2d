/*
  A Net applied to a DMDA field (include/petnetdmda.h): pointwise, and through conv2d layers in grid mode, as
  a convolution.

  The local part of a DMDA global Vec is the rank's block of grid points, [zm][ym][xm][dof] with the dof interlaced:
  exactly a batch of xm*ym*zm samples of shape (dof), sample-major and channels-last. The functions here only check
  that the Net and the field agree on that layout and hand the field to the Net; nothing is copied.
*/
#include <petnet/private/netimpl.h>
#include <petnetdmda.h>

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

/* Gives dm to every conv2d layer of net (the members of residual blocks are nodes of net too) and to every ode layer,
   which passes it on to its inner Net; *changed: some layer's DM changed. A layer of another kind ignores the call and
   keeps none, so only what a layer reports back counts as a change. */
static PetscErrorCode NetConv2dSetDM_Private(Net net, DM dm, PetscBool *changed)
{
  PetscFunctionBegin;
  *changed = PETSC_FALSE;
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer layer = net->layers[l];
    DM    old, now;

    PetscCall(LayerConv2dGetDM(layer, &old));
    PetscCall(LayerConv2dSetDM(layer, dm)); /* conv2d layers, and ode layers, which pass it on to their inner Net */
    PetscCall(LayerConv2dGetDM(layer, &now));
    if (old != now) *changed = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/*@
  NetConv2dSetDM - gives a 2-D DMDA to every conv2d layer of a Net, including those inside residual blocks and ODE
  layers (grid mode, LayerConv2dSetDM()), or with NULL returns them all to batches of (height, width, channels)
  images. NetDMDASetUp() calls it.

  Collective

  Input Parameters:
+ net - the Net
- dm  - the DMDA, or NULL

  Notes:
  The layers that are not conv2d (or ode) are left alone, and a Net none of whose layers changes mode is not touched:
  its parameters, buffers and Jacobian shells stay as they are. A set-up Net in which some layer changes mode is reset
  (NetReset()) and keeps its parameter values and layer buffers (batchnorm's running statistics) for the next
  NetSetUp(), which puts them back instead of initial values (the parameters have the same layout in both modes; a
  NetSetInputShape() in between means new parameters, and drops them). Jacobian shells taken before such a change are detached, since
  the sizes of the batch change with the mode. An ode layer hands the DMDA to the conv2d layers of its inner Net when
  it is set up.

  Level: intermediate

.seealso: `LayerConv2dSetDM()`, `NetDMDASetUp()`, `NetReset()`, `NetSetParameters()`
@*/
PetscErrorCode NetConv2dSetDM(Net net, DM dm)
{
  PetscBool    changed;
  Vec          keep;
  PetscScalar *buffers;
  PetscInt     nbuffers = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (dm) PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  PetscCall(NetConv2dSetDM_Private(net, dm, &changed));
  if (!changed || !net->setupcalled) PetscFunctionReturn(0);
  /* keep the values (a trained or loaded Net stays trained) for the next NetSetUp() */
  PetscCall(VecDuplicate(net->theta, &keep));
  PetscCall(VecCopy(net->theta, keep));
  for (PetscInt l = 0; l < net->nlayers; l++) nbuffers += net->layers[l]->nbuffers;
  PetscCall(PetscMalloc1(nbuffers, &buffers));
  for (PetscInt l = 0, o = 0; l < net->nlayers; o += net->layers[l]->nbuffers, l++) PetscCall(PetscArraycpy(buffers + o, net->layers[l]->buffers, net->layers[l]->nbuffers));
  PetscCall(NetReset(net));
  net->keeptheta    = keep;
  net->keepbuffers  = buffers;
  net->nkeepbuffers = nbuffers;
  PetscFunctionReturn(0);
}

/*@
  NetDMDASetUp - prepares a Net to act on the fields of a DMDA, a grid point being a sample: sets the input shape to
  (dof) unless one is set already (then its size must be dof), gives the DMDA to every conv2d layer, nested ones included (grid mode: a
  convolution of the distributed field, NetConv2dSetDM()), and sets the Net up.

  Collective

  Input Parameters:
+ net - the Net, with its layers
- da  - the DMDA; each grid point is a sample with dof features

  Notes:
  NetDMDAForward(), NetDMDACreateJacobian() and NetDMDATSSetRHS() call it; calling it again with the same DMDA
  changes nothing.

  Level: intermediate

.seealso: `NetDMDAForward()`, `NetConv2dSetDM()`, `NetSetInputShape()`, `NetSetUp()`
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
  /* conv2d layers convolve this grid; a layer that had another lays the Net out anew, keeping the parameter values */
  PetscCall(NetConv2dSetDM(net, da));
  PetscCall(NetSetUp(net));
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
