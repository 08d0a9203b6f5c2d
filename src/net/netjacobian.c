/*
  Jacobians as MATSHELLs, for TS, TAO and SLEPc: MatMult applies the JVP, MatMultTranspose the VJP, at the
  linearization point of the last NetForward. The shells point at their Net without holding a reference
  (the Net owns them); they are rebuilt when the batch layout changes.

    NetGetJacobian     J   : dX (batch, input shape)  -> dY (batch, output shape)
    NetGetJacobianP    J_p : dtheta (parameter Vec)   -> dY
    LayerGetJacobian   J_l : layer l's input          -> layer l's output
    LayerGetJacobianP  J_pl: layer l's own parameters (a distributed Vec of p_l entries) -> layer l's output
*/
#include <petnet/private/netimpl.h>

static PetscErrorCode MatMult_NetJacobian(Mat J, Vec dX, Vec dY)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetJVP(net, dX, NULL, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetJacobian(Mat J, Vec dY, Vec dX)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetBackward(net, dY, dX, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_NetJacobianP(Mat J, Vec dtheta, Vec dY)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetJVP(net, NULL, dtheta, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetJacobianP(Mat J, Vec dY, Vec G)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckForwarded_Private(Net net, const char caller[])
{
  PetscFunctionBegin;
  PetscCheck(net && net->forwarded, net ? PetscObjectComm((PetscObject)net) : PETSC_COMM_SELF, PETSC_ERR_ORDER, "Call NetForward() on a batch before %s(): the Jacobian is taken at the last forward pass", caller);
  PetscFunctionReturn(0);
}

/*@
  NetGetJacobian - the input Jacobian at the last forward pass, a MATSHELL owned by the Net.
@*/
PetscErrorCode NetGetJacobian(Net net, Mat *J)
{
  PetscInt m, n, M, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckForwarded_Private(net, "NetGetJacobian"));
  if (!net->J) {
    PetscCall(VecGetLocalSize(net->act[net->nlayers], &m));
    PetscCall(VecGetSize(net->act[net->nlayers], &M));
    PetscCall(VecGetLocalSize(net->act[0], &n));
    PetscCall(VecGetSize(net->act[0], &N));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), m, n, M, N, net, &net->J));
    PetscCall(MatShellSetOperation(net->J, MATOP_MULT, (void (*)(void))MatMult_NetJacobian));
    PetscCall(MatShellSetOperation(net->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetJacobian));
    PetscCall(MatShellSetVecType(net->J, VECMPI));
  }
  *J = net->J;
  PetscFunctionReturn(0);
}

/*@
  NetGetJacobianP - the parameter Jacobian at the last forward pass, a MATSHELL owned by the Net.
@*/
PetscErrorCode NetGetJacobianP(Net net, Mat *J)
{
  PetscInt m, n, M;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckForwarded_Private(net, "NetGetJacobianP"));
  if (!net->JP) {
    PetscCall(VecGetLocalSize(net->act[net->nlayers], &m));
    PetscCall(VecGetSize(net->act[net->nlayers], &M));
    PetscCall(VecGetLocalSize(net->theta, &n));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), m, n, M, net->nparams, net, &net->JP));
    PetscCall(MatShellSetOperation(net->JP, MATOP_MULT, (void (*)(void))MatMult_NetJacobianP));
    PetscCall(MatShellSetOperation(net->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetJacobianP));
    PetscCall(MatShellSetVecType(net->JP, VECMPI));
  }
  *J = net->JP;
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_LayerJacobian(Mat J, Vec dX, Vec dY)
{
  Layer layer;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &layer));
  PetscCall(NetLayerJVP_Private(layer->net, layer->index, dX, NULL, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_LayerJacobian(Mat J, Vec dY, Vec dX)
{
  Layer layer;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &layer));
  PetscCall(NetLayerBackward_Private(layer->net, layer->index, dY, dX, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_LayerJacobianP(Mat J, Vec dtheta, Vec dY)
{
  Layer layer;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &layer));
  PetscCall(MatMult(layer->pbcast, dtheta, layer->ptheta_rep));
  PetscCall(NetLayerJVP_Private(layer->net, layer->index, NULL, layer->ptheta_rep, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_LayerJacobianP(Mat J, Vec dY, Vec G)
{
  Layer layer;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &layer));
  PetscCall(VecZeroEntries(layer->ptheta_rep));
  PetscCall(NetLayerBackward_Private(layer->net, layer->index, dY, NULL, layer->ptheta_rep));
  PetscCall(MatMultTranspose(layer->pbcast, layer->ptheta_rep, G));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerResetJacobians_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(MatDestroy(&layer->J));
  PetscCall(MatDestroy(&layer->JP));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerCheckInNet_Private(Layer layer, const char caller[])
{
  PetscFunctionBegin;
  PetscCheck(layer->net, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "%s() needs a layer inside a Net: the Net holds the linearization point (add the layer with NetAddLayer())", caller);
  PetscCall(NetCheckForwarded_Private(layer->net, caller));
  PetscFunctionReturn(0);
}

/*@
  LayerGetJacobian - the Jacobian of one layer with respect to its input, at its Net's last forward pass (owned by the layer).
@*/
PetscErrorCode LayerGetJacobian(Layer layer, Mat *J)
{
  Net      net;
  PetscInt m, n, M, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCall(LayerCheckInNet_Private(layer, "LayerGetJacobian"));
  net = layer->net;
  if (!layer->J) {
    PetscCall(VecGetLocalSize(net->act[layer->index + 1], &m));
    PetscCall(VecGetSize(net->act[layer->index + 1], &M));
    PetscCall(VecGetLocalSize(net->act[layer->index], &n));
    PetscCall(VecGetSize(net->act[layer->index], &N));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)layer), m, n, M, N, layer, &layer->J));
    PetscCall(MatShellSetOperation(layer->J, MATOP_MULT, (void (*)(void))MatMult_LayerJacobian));
    PetscCall(MatShellSetOperation(layer->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_LayerJacobian));
    PetscCall(MatShellSetVecType(layer->J, VECMPI));
  }
  *J = layer->J;
  PetscFunctionReturn(0);
}

/*@
  LayerGetJacobianP - the Jacobian of one layer with respect to its own parameters (owned by the layer).
  Its column space is a distributed Vec of the layer's p_l parameters (MatCreateVecs gives one).
@*/
PetscErrorCode LayerGetJacobianP(Layer layer, Mat *J)
{
  Net      net;
  PetscInt m, M, n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCall(LayerCheckInNet_Private(layer, "LayerGetJacobianP"));
  PetscCheck(layer->nparams > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Layer %" PetscInt_FMT " (%s) has no parameters", layer->index, ((PetscObject)layer)->type_name);
  net = layer->net;
  if (!layer->ptheta) {
    PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)layer), PETSC_DECIDE, layer->nparams, &layer->ptheta));
    PetscCall(PetNetBroadcastCreate(layer->ptheta, &layer->pbcast, &layer->ptheta_rep));
  }
  if (!layer->JP) {
    PetscCall(VecGetLocalSize(net->act[layer->index + 1], &m));
    PetscCall(VecGetSize(net->act[layer->index + 1], &M));
    PetscCall(VecGetLocalSize(layer->ptheta, &n));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)layer), m, n, M, layer->nparams, layer, &layer->JP));
    PetscCall(MatShellSetOperation(layer->JP, MATOP_MULT, (void (*)(void))MatMult_LayerJacobianP));
    PetscCall(MatShellSetOperation(layer->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_LayerJacobianP));
    PetscCall(MatShellSetVecType(layer->JP, VECMPI));
  }
  *J = layer->JP;
  PetscFunctionReturn(0);
}
