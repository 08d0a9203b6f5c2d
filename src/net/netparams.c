/*
  Parameters of a Net: one flat Vec theta, distributed over the communicator, layer l owning the index range
  [poff[l], poff[l+1]). In replicated mode each rank computes with a full replicated copy (theta_rep), refreshed by
  the broadcast whenever theta changes (tracked with the PETSc object state), and returns gradients by the
  sum-reduce; in sharded and model modes each node gathers what its kernel needs (netpmap.c).
*/
#include <petnet/private/netimpl.h>

/*@
  NetGetNumParameters - gets the number of parameters of the Net, all layers together

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net

  Output Parameter:
. n - the number of parameters, the global size of the parameter Vec

  Level: beginner

.seealso: `NetGetParameters()`, `NetGetLayerParameterRange()`, `LayerGetNumParameters()`
@*/
PetscErrorCode NetGetNumParameters(Net net, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  *n = net->nparams;
  PetscFunctionReturn(0);
}

/*@
  NetGetParameters - the distributed parameter Vec of the Net (borrowed). Changing its values changes the network.

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net

  Output Parameter:
. theta - the parameter Vec (do not destroy it); layer (node) l owns the entries given by NetGetLayerParameterRange()

  Notes:
  Every rank computes with a full copy of theta, refreshed by the broadcast whenever theta's object state has changed
  (any Vec operation on it, VecRestoreArray() included). This is the Vec TAO optimises and TSAdjoint differentiates.

  Level: beginner

.seealso: `NetSetParameters()`, `NetCreateParameterVec()`, `NetGetLayerParameterRange()`, `NetGetParameterBroadcast()`
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
  NetSetParameters - copies theta into the network's parameters

  Collective (it sets the Net up if needed)

  Input Parameters:
+ net   - the Net
- theta - the values, laid out like the parameter Vec (NetCreateParameterVec()); the parameter Vec itself is accepted
          and left as it is

  Level: intermediate

.seealso: `NetGetParameters()`, `NetCreateParameterVec()`, `NetInitializeParameters()`
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

/*@
  NetCreateParameterVec - creates a Vec laid out like the parameter Vec, e.g. for a gradient or a parameter direction

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net

  Output Parameter:
. v - the new Vec, its values not set (destroy it with VecDestroy())

  Level: intermediate

.seealso: `NetGetParameters()`, `NetBackward()`, `NetJVP()`, `NetCreateVecs()`
@*/
PetscErrorCode NetCreateParameterVec(Net net, Vec *v)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCall(VecDuplicate(net->theta, v));
  PetscFunctionReturn(0);
}

/*@
  NetGetLayerParameterRange - layer (node) l's parameters are entries [start, end) of the parameter Vec

  Collective (it sets the Net up if needed)

  Input Parameters:
+ net - the Net
- l   - the node, 0 <= l < NetGetNumLayers()

  Output Parameters:
+ start - the global index of its first parameter, or NULL
- end   - one past its last (start when it has none), or NULL

  Notes:
  In that block the layer's kind lays out its tensors (dense: W then b); its kernels receive exactly these entries.

  Level: intermediate

.seealso: `NetGetParameters()`, `NetGetLayer()`, `LayerGetNumParameters()`, `NetGetLayerJacobianP()`
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
  NetGetParameterBroadcast - the operator B: theta -> one full copy per rank (MatMultTranspose: the sum-reduce of
  per-rank vectors back to the owned slices). Borrowed.

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net

  Output Parameter:
. B - the broadcast (do not destroy it), a MATSHELL of size (P * number of ranks) x P for P parameters: columns laid out
      like the parameter Vec, each rank owning P rows, its full copy

  Notes:
  The Net refreshes its replicated copy with MatMult(B, ...) and sums the ranks' gradients with MatMultTranspose(B, ...);
  results do not depend on the number of ranks beyond round-off.

  Level: advanced

.seealso: `NetGetParameters()`, `PetNetBroadcastCreate()`, `NetBackward()`
@*/
PetscErrorCode NetGetParameterBroadcast(Net net, Mat *B)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCheck(net->bcast, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONGSTATE, "With -net_parallel %s no rank holds a full copy of the parameters, so the Net has no parameter broadcast: use -net_parallel replicated",
             NetParallelTypes[net->parallel]);
  *B = net->bcast;
  PetscFunctionReturn(0);
}

/*@
  NetInitializeParameters - draws the initial parameters from the Net's seed. Every rank draws the full vector from the
  same sequential stream, so the result does not depend on the number of ranks. The draw goes through a scratch
  copy (not the replicated parameters, which still hold the point of the last forward pass for NetBackward() and NetJVP()).

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net

  Options Database Key:
. -net_seed <seed> - the seed (NetSetSeed(), NetSetFromOptions())

  Notes:
  Each node initialises its block in turn (LayerInitializeParameters()). NetSetUp() calls this; call it again to draw
  anew, e.g. after NetSetSeed().

  Level: intermediate

.seealso: `NetSetSeed()`, `LayerInitializeParameters()`, `LayerDenseSetInitialization()`, `NetSetParameters()`
@*/
PetscErrorCode NetInitializeParameters(Net net)
{
  PetscRandom  rnd;
  PetscScalar *theta, *buf;
  PetscInt     rstart, rend, most = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, net->seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetOwnershipRange(net->theta, &rstart, &rend));
  PetscCall(VecGetArrayWrite(net->theta, &theta));
  /* node by node through a scratch block (one node's parameters, not the whole vector), keeping the owned part */
  for (PetscInt l = 0; l < net->nlayers; l++) most = PetscMax(most, net->layers[l]->nparams);
  PetscCall(PetscMalloc1(most, &buf));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    PetscInt s = PetscMax(net->poff[l], rstart), e = PetscMin(net->poff[l + 1], rend);

    PetscCall(LayerInitializeParameters(net->layers[l], rnd, buf));
    if (s < e) PetscCall(PetscArraycpy(theta + s - rstart, buf + s - net->poff[l], e - s));
  }
  PetscCall(PetscFree(buf));
  PetscCall(VecRestoreArrayWrite(net->theta, &theta));
  PetscCall(PetscRandomDestroy(&rnd));
  net->theta_rep_valid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Refresh the replicated copy if theta changed since the last broadcast. */
PetscErrorCode NetUpdateReplicatedParameters_Private(Net net)
{
  PetscObjectState state;

  PetscFunctionBegin;
  if (!net->theta_rep) PetscFunctionReturn(0); /* no node reads a replicated copy */
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &state));
  if (net->theta_rep_valid && state == net->theta_state) PetscFunctionReturn(0);
  PetscCall(MatMult(net->bcast, net->theta, net->theta_rep));
  net->theta_state     = state;
  net->theta_rep_valid = PETSC_TRUE;
  PetscFunctionReturn(0);
}
