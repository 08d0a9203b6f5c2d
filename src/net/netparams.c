/*
  Parameters of a Net: one flat Vec theta, distributed over the communicator, layer l owning the index range
  [poff[l], poff[l+1]). Each rank computes with a full replicated copy (theta_rep), refreshed by the broadcast
  whenever theta changes (tracked with the PETSc object state), and returns gradients by the sum-reduce.
*/
#include <petnet/private/netimpl.h>

PetscErrorCode NetGetNumParameters(Net net, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  *n = net->nparams;
  PetscFunctionReturn(0);
}

/*@
  NetGetParameters - the distributed parameter Vec (borrowed). Changing its values changes the network.
@*/
PetscErrorCode NetGetParameters(Net net, Vec *theta)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  *theta = net->theta;
  PetscFunctionReturn(0);
}

/*@
  NetSetParameters - copies theta (same layout as NetCreateParameterVec()) into the network's parameters.
@*/
PetscErrorCode NetSetParameters(Net net, Vec theta)
{
  PetscInt n, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(theta, VEC_CLASSID, 2);
  PetscCall(NetSetUp(net));
  PetscCall(VecGetSize(theta, &N));
  PetscCall(VecGetLocalSize(theta, &n));
  PetscCheck(N == net->nparams, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_SIZ, "Parameter vector has %" PetscInt_FMT " entries but the Net has %" PetscInt_FMT " parameters", N, net->nparams);
  if (theta != net->theta) PetscCall(VecCopy(theta, net->theta));
  PetscFunctionReturn(0);
}

PetscErrorCode NetCreateParameterVec(Net net, Vec *v)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCall(VecDuplicate(net->theta, v));
  PetscFunctionReturn(0);
}

/*@
  NetGetLayerParameterRange - layer l's parameters are entries [start, end) of the parameter Vec.
@*/
PetscErrorCode NetGetLayerParameterRange(Net net, PetscInt l, PetscInt *start, PetscInt *end)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCheck(l >= 0 && l < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", l, net->nlayers);
  if (start) *start = net->poff[l];
  if (end) *end = net->poff[l + 1];
  PetscFunctionReturn(0);
}

/*@
  NetGetParameterBroadcast - the operator B: theta -> one full copy per rank (MatMultTranspose: sum-reduce). Borrowed.
@*/
PetscErrorCode NetGetParameterBroadcast(Net net, Mat *B)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  *B = net->bcast;
  PetscFunctionReturn(0);
}

/*@
  NetInitializeParameters - draws the initial parameters from -net_seed. Every rank draws the full vector from the
  same sequential stream, so the result does not depend on the number of ranks. The draw goes through a scratch
  copy (not theta_rep, which still holds the point of the last forward pass for NetBackward and NetJVP).
@*/
PetscErrorCode NetInitializeParameters(Net net)
{
  PetscRandom  rnd;
  PetscScalar *rep, *theta;
  PetscInt     rstart, rend;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, net->seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetArrayWrite(net->grad_rep, &rep));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerInitializeParameters(net->layers[l], rnd, rep + net->poff[l]));
  PetscCall(VecGetOwnershipRange(net->theta, &rstart, &rend));
  PetscCall(VecGetArrayWrite(net->theta, &theta));
  PetscCall(PetscArraycpy(theta, rep + rstart, rend - rstart));
  PetscCall(VecRestoreArrayWrite(net->theta, &theta));
  PetscCall(VecRestoreArrayWrite(net->grad_rep, &rep));
  PetscCall(PetscRandomDestroy(&rnd));
  net->theta_rep_valid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Refresh the replicated copy if theta changed since the last broadcast. */
PetscErrorCode NetUpdateReplicatedParameters_Private(Net net)
{
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &state));
  if (net->theta_rep_valid && state == net->theta_state) PetscFunctionReturn(0);
  PetscCall(MatMult(net->bcast, net->theta, net->theta_rep));
  net->theta_state     = state;
  net->theta_rep_valid = PETSC_TRUE;
  PetscFunctionReturn(0);
}
