/*
  Forward, backward (VJP) and JVP of a sequential Net over a batch.

    act[0] = X,  act[l+1] = layer_l(act[l]; theta_l),  Y = act[L]
    backward: dact[L] = dY,  dact[l] = J_l^T dact[l+1],  grad_l += J_theta_l^T dact[l+1]
    jvp:      dact[0] = dX,  dact[l+1] = J_l dact[l] + J_theta_l dtheta_l

  Every act/dact is a Vec distributed like the batch: n local samples, sample-major.
*/
#include <petnet/private/netimpl.h>

/* (Re)build the workspace when the batch layout changes: X must hold a whole number of samples on each rank. */
PetscErrorCode NetSetUpWorkspace_Private(Net net, Vec X)
{
  PetscInt nx, Nx, insize, n, N;
  MPI_Comm comm = PetscObjectComm((PetscObject)net);
  char     shape[64];

  PetscFunctionBegin;
  PetscCall(NetSetUp(net));
  /* The fast path, without the reduction below: X has the very layout of the last input (which act[0] keeps alive).
     Vecs share a PetscLayout only through collective calls (VecDuplicate()), so this holds on every rank or on none,
     and that layout was checked when it was first seen. */
  if (net->act && net->act[0]) {
    PetscLayout map, last;

    PetscCall(VecGetLayout(X, &map));
    PetscCall(VecGetLayout(net->act[0], &last));
    if (map == last) PetscFunctionReturn(0);
  }
  PetscCall(VecGetLocalSize(X, &nx));
  PetscCall(VecGetSize(X, &Nx));
  PetscCall(PetNetShapeSize(&net->in, &insize));
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  /* Decided together, since a rank may keep its local size while others change theirs, and the rebuild is collective:
     flag[0] = a rank whose input is not whole samples (or -1), flag[1] = whether any rank's layout changed. */
  {
    PetscMPIInt rank, flag[2];

    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    flag[0] = nx % insize ? rank : -1;
    flag[1] = (nx != net->nlocal * insize || Nx != net->nglobal * insize) ? 1 : 0;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, flag, 2, MPI_INT, MPI_MAX, comm));
    PetscCheck(nx % insize == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
               "Input batch has %" PetscInt_FMT " local entries on rank %d, not a multiple of the sample size %" PetscInt_FMT
               " (input shape %s): give every rank whole samples (NetCreateVecs() makes such Vecs), or fix -net_input_shape to match the data",
               nx, rank, insize, shape);
    PetscCheck(flag[0] < 0, comm, PETSC_ERR_ARG_SIZ,
               "Input batch on rank %d does not hold whole samples of size %" PetscInt_FMT " (input shape %s): give every rank whole samples (NetCreateVecs() makes such Vecs), or fix -net_input_shape to match the data", flag[0], insize, shape);
    if (!flag[1]) PetscFunctionReturn(0); /* the same layout as the last batch: keep the workspace */
  }
  n = nx / insize;
  N = Nx / insize;
  PetscCall(NetResetWorkspace_Private(net));
  PetscCall(PetscMalloc1(net->nlayers + 1, &net->act));
  PetscCall(PetscMalloc1(net->nlayers + 1, &net->dact));
  for (PetscInt l = 0; l <= net->nlayers; l++) {
    PetscInt size = l ? net->layers[l - 1]->outsize : insize;

    PetscCall(VecCreateMPI(comm, n * size, PETSC_DETERMINE, &net->act[l]));
    PetscCall(VecDuplicate(net->act[l], &net->dact[l]));
  }
  net->nlocal  = n;
  net->nglobal = N;
  PetscFunctionReturn(0);
}

/*@
  NetGetBatchSize - the local and global number of samples of the last batch seen.
@*/
PetscErrorCode NetGetBatchSize(Net net, PetscInt *n, PetscInt *N)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (n) *n = net->nlocal;
  if (N) *N = net->nglobal;
  PetscFunctionReturn(0);
}

/*@
  NetCreateVecs - input and output batch Vecs for n local samples (either may be NULL).
@*/
PetscErrorCode NetCreateVecs(Net net, PetscInt n, Vec *X, Vec *Y)
{
  PetscInt    insize, outsize;
  PetNetShape out;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCall(PetNetShapeSize(&net->in, &insize));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  if (X) PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), n * insize, PETSC_DETERMINE, X));
  if (Y) PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), n * outsize, PETSC_DETERMINE, Y));
  PetscFunctionReturn(0);
}

/* G (a gradient or a parameter direction) must be laid out like the parameter Vec */
static PetscErrorCode NetCheckParameterLayout_Private(Net net, Vec G, const char name[])
{
  PetscInt n, N, m;

  PetscFunctionBegin;
  PetscCall(VecGetSize(G, &N));
  PetscCall(VecGetLocalSize(G, &n));
  PetscCall(VecGetLocalSize(net->theta, &m));
  PetscCheck(N == net->nparams, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_SIZ, "%s has %" PetscInt_FMT " entries but the Net has %" PetscInt_FMT " parameters: create it with NetCreateParameterVec()", name, N, net->nparams);
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s has %" PetscInt_FMT " local entries but this rank owns %" PetscInt_FMT " parameters: create it with NetCreateParameterVec()", name, n, m);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckCompatible_Private(Net net, Vec v, PetscInt l, const char name[])
{
  PetscInt n, m;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetLocalSize(net->act[l], &m));
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s has %" PetscInt_FMT " local entries, expected %" PetscInt_FMT " (%" PetscInt_FMT " samples of the batch of the last NetForward)", name, n, m, net->nlocal);
  PetscFunctionReturn(0);
}

/*@
  NetForward - Y = f(X; theta). The Net keeps every intermediate (the linearization point for backward, jvp and the
  Jacobian shells). Y may be NULL.
@*/
PetscErrorCode NetForward(Net net, Vec X, Vec Y)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  PetscCall(NetSetUpWorkspace_Private(net, X));
  if (Y) PetscCall(NetCheckCompatible_Private(net, Y, net->nlayers, "Output vector"));
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  /* The input is the first layer's linearization point: keep a reference rather than a copy (a copy of a large batch
     costs as much as a small layer), and check in backward and jvp that nobody changed it in between. */
  if (X != net->act[0]) {
    PetscCall(PetscObjectReference((PetscObject)X));
    PetscCall(VecDestroy(&net->act[0]));
    net->act[0] = X;
  }
  PetscCall(PetscObjectStateGet((PetscObject)X, &net->input_state));
  {
    const PetscScalar *theta;

    PetscCall(VecGetArrayRead(net->theta_rep, &theta));
    for (PetscInt l = 0; l < net->nlayers; l++) {
      const PetscScalar *x;
      PetscScalar       *y;

      PetscCall(VecGetArrayRead(net->act[l], &x));
      PetscCall(VecGetArrayWrite(net->act[l + 1], &y));
      PetscCall(LayerForwardArray(net->layers[l], net->nlocal, theta + net->poff[l], x, y));
      PetscCall(VecRestoreArrayWrite(net->act[l + 1], &y));
      PetscCall(VecRestoreArrayRead(net->act[l], &x));
    }
    PetscCall(VecRestoreArrayRead(net->theta_rep, &theta));
  }
  net->forwarded = PETSC_TRUE;
  if (Y) PetscCall(VecCopy(net->act[net->nlayers], Y));
  if (net->testjacobian && !net->intest) {
    net->testjacobian = PETSC_FALSE; /* once */
    PetscCall(NetTestJacobian(net, X, NULL, NULL, NULL));
  }
  PetscFunctionReturn(0);
}

/* The input of the last NetForward must be unchanged: it is the linearization point of the first layer */
PetscErrorCode NetCheckInputUnchanged_Private(Net net)
{
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)net->act[0], &state));
  PetscCheck(state == net->input_state, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "The input Vec of the last NetForward() was modified before the derivative was taken: the Net keeps a reference to it (not a copy), so keep it unchanged until NetBackward()/NetJVP(), or call NetForward() again");
  PetscFunctionReturn(0);
}

/* Layer l's backward at the stored point: dx = J^T dy (dx may be NULL), dtheta (replicated array or NULL) += ... */
PetscErrorCode NetLayerBackward_Private(Net net, PetscInt l, Vec dY, Vec dX, Vec dtheta)
{
  const PetscScalar *theta, *x, *y, *dy;
  PetscScalar       *dx = NULL, *dth = NULL;

  PetscFunctionBegin;
  if (l == 0) PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(VecGetArrayRead(net->theta_rep, &theta));
  PetscCall(VecGetArrayRead(net->act[l], &x));
  PetscCall(VecGetArrayRead(net->act[l + 1], &y));
  PetscCall(VecGetArrayRead(dY, &dy));
  if (dX) PetscCall(VecGetArrayWrite(dX, &dx));
  if (dtheta) PetscCall(VecGetArray(dtheta, &dth));
  PetscCall(LayerBackwardArray(net->layers[l], net->nlocal, theta + net->poff[l], x, y, dy, dx, dth));
  if (dtheta) PetscCall(VecRestoreArray(dtheta, &dth));
  if (dX) PetscCall(VecRestoreArrayWrite(dX, &dx));
  PetscCall(VecRestoreArrayRead(dY, &dy));
  PetscCall(VecRestoreArrayRead(net->act[l + 1], &y));
  PetscCall(VecRestoreArrayRead(net->act[l], &x));
  PetscCall(VecRestoreArrayRead(net->theta_rep, &theta));
  PetscFunctionReturn(0);
}

/* Layer l's jvp at the stored point: dy = J dx + J_theta dtheta (dX, dtheta: NULL means zero; dtheta has layer l's size) */
PetscErrorCode NetLayerJVP_Private(Net net, PetscInt l, Vec dX, Vec dtheta, Vec dY)
{
  const PetscScalar *theta, *x, *y, *dx = NULL, *dth = NULL;
  PetscScalar       *dy;

  PetscFunctionBegin;
  if (l == 0) PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(VecGetArrayRead(net->theta_rep, &theta));
  PetscCall(VecGetArrayRead(net->act[l], &x));
  PetscCall(VecGetArrayRead(net->act[l + 1], &y));
  if (dX) PetscCall(VecGetArrayRead(dX, &dx));
  if (dtheta) PetscCall(VecGetArrayRead(dtheta, &dth));
  PetscCall(VecGetArrayWrite(dY, &dy));
  PetscCall(LayerJVPArray(net->layers[l], net->nlocal, theta + net->poff[l], x, y, dx, dth, dy));
  PetscCall(VecRestoreArrayWrite(dY, &dy));
  if (dtheta) PetscCall(VecRestoreArrayRead(dtheta, &dth));
  if (dX) PetscCall(VecRestoreArrayRead(dX, &dx));
  PetscCall(VecRestoreArrayRead(net->act[l + 1], &y));
  PetscCall(VecRestoreArrayRead(net->act[l], &x));
  PetscCall(VecRestoreArrayRead(net->theta_rep, &theta));
  PetscFunctionReturn(0);
}

/*@
  NetBackward - the VJP at the last forward pass: dX = J_x^T dY (if dX), G += J_theta^T dY (if G; accumulates).
  G has the layout of the parameter Vec; the per-rank contributions are summed by the broadcast's transpose.
@*/
PetscErrorCode NetBackward(Net net, Vec dY, Vec dX, Vec G)
{
  const PetscScalar *theta, *x, *y, *dy;
  PetscScalar       *grad = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 2);
  PetscCheck(net->forwarded, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetBackward() differentiates at the last forward pass, and there is none: call NetForward() on the batch first (NetSetTraining() also clears it)");
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckCompatible_Private(net, dY, net->nlayers, "Output cotangent dY"));
  if (dX) PetscCall(NetCheckCompatible_Private(net, dX, 0, "Input cotangent dX"));
  if (G) PetscCall(NetCheckParameterLayout_Private(net, G, "Gradient G"));
  PetscCall(VecCopy(dY, net->dact[net->nlayers]));
  if (G) {
    PetscCall(VecZeroEntries(net->grad_rep));
    PetscCall(VecGetArray(net->grad_rep, &grad));
  }
  PetscCall(VecGetArrayRead(net->theta_rep, &theta));
  for (PetscInt l = net->nlayers - 1; l >= 0; l--) {
    PetscScalar *dx = NULL;

    PetscCall(VecGetArrayRead(net->act[l], &x));
    PetscCall(VecGetArrayRead(net->act[l + 1], &y));
    PetscCall(VecGetArrayRead(net->dact[l + 1], &dy));
    if (l > 0 || dX) PetscCall(VecGetArrayWrite(net->dact[l], &dx));
    PetscCall(LayerBackwardArray(net->layers[l], net->nlocal, theta + net->poff[l], x, y, dy, dx, grad ? grad + net->poff[l] : NULL));
    if (dx) PetscCall(VecRestoreArrayWrite(net->dact[l], &dx));
    PetscCall(VecRestoreArrayRead(net->dact[l + 1], &dy));
    PetscCall(VecRestoreArrayRead(net->act[l + 1], &y));
    PetscCall(VecRestoreArrayRead(net->act[l], &x));
  }
  PetscCall(VecRestoreArrayRead(net->theta_rep, &theta));
  if (dX) PetscCall(VecCopy(net->dact[0], dX));
  if (G) {
    PetscCall(VecRestoreArray(net->grad_rep, &grad));
    PetscCall(MatMultTransposeAdd(net->bcast, net->grad_rep, G, G));
  }
  PetscFunctionReturn(0);
}

/*@
  NetJVP - dY = J_x dX + J_theta dtheta at the last forward pass; dX or dtheta may be NULL (zero).
@*/
PetscErrorCode NetJVP(Net net, Vec dX, Vec dtheta, Vec dY)
{
  const PetscScalar *theta, *x, *y, *dx, *dth = NULL;
  PetscScalar       *dy;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 4);
  PetscCheck(net->forwarded, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetJVP() differentiates at the last forward pass, and there is none: call NetForward() on the batch first (NetSetTraining() also clears it)");
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckCompatible_Private(net, dY, net->nlayers, "Output tangent dY"));
  if (dtheta) PetscCall(NetCheckParameterLayout_Private(net, dtheta, "Parameter direction dtheta"));
  if (dX) {
    PetscCall(NetCheckCompatible_Private(net, dX, 0, "Input tangent dX"));
    PetscCall(VecCopy(dX, net->dact[0]));
  }
  if (dtheta) {
    PetscCall(MatMult(net->bcast, dtheta, net->dtheta_rep));
    PetscCall(VecGetArrayRead(net->dtheta_rep, &dth));
  }
  PetscCall(VecGetArrayRead(net->theta_rep, &theta));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    PetscCall(VecGetArrayRead(net->act[l], &x));
    PetscCall(VecGetArrayRead(net->act[l + 1], &y));
    dx = NULL;
    if (l > 0 || dX) PetscCall(VecGetArrayRead(net->dact[l], &dx));
    PetscCall(VecGetArrayWrite(net->dact[l + 1], &dy));
    PetscCall(LayerJVPArray(net->layers[l], net->nlocal, theta + net->poff[l], x, y, dx, dth ? dth + net->poff[l] : NULL, dy));
    PetscCall(VecRestoreArrayWrite(net->dact[l + 1], &dy));
    if (dx) PetscCall(VecRestoreArrayRead(net->dact[l], &dx));
    PetscCall(VecRestoreArrayRead(net->act[l + 1], &y));
    PetscCall(VecRestoreArrayRead(net->act[l], &x));
  }
  PetscCall(VecRestoreArrayRead(net->theta_rep, &theta));
  if (dtheta) PetscCall(VecRestoreArrayRead(net->dtheta_rep, &dth));
  PetscCall(VecCopy(net->dact[net->nlayers], dY));
  PetscFunctionReturn(0);
}
