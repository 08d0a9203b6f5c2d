/*
  Forward, backward (VJP) and JVP of a Net over a batch: the one walk over the graph of layers.

    act[0] = X,  act[k+1] = node_k(act[in_k]; theta_k),     Y = act[L]          (nodes in topological order)
    backward, nodes in reverse:  dact[in] += J_k,in^T dact[k+1]   for each input of node k
                                 grad_k   += J_theta_k^T dact[k+1]
    jvp, nodes in order:         dact[k+1] = sum_in J_k,in dact[in] + J_theta_k dtheta_k

  A value used by several nodes (fan-out) gets the sum of their cotangents: the first writes dact[v] directly, the
  others write dsum[v] and add it in. Every act/dact is a Vec distributed like the batch: n local samples,
  sample-major. A node receives its parameters through NetNodeGetParameters_Private() and accumulates its gradient
  through NetNodeGetGradient_Private() (netpmap.c), the one place that knows where a node's parameters live: a slice
  of the replicated copy theta_rep (replicated mode), or its entries of theta gathered just before the node runs and
  freed after, the gradient reduce-scattered at once (sharded mode, and model-parallel nodes, which take only their
  block and run through NetModel*_Private()).
*/
#include <petnet/private/netimpl.h>

/* The samples of every value (counts[0..nlayers]) for n input samples on this rank: n everywhere in batch mode; in grid
   mode a node that coarsens, refines or leaves the grid changes them (NetSpatialOutputCount_Private()); in sequence
   mode n counts tokens (n T for n samples) and the values between the nodes hold the rank's token split. Collective in
   sequence mode. */
PetscErrorCode NetValueCounts_Private(Net net, PetscInt n, PetscInt counts[])
{
  PetscInt nf;

  PetscFunctionBegin;
  if (net->pl) { /* pipeline stages: the public split at both ends, each stage's split of the micro-batches between */
    PetscCall(NetPlaceCounts_Private(net, n, counts, (PetscBool)(counts == net->vlocal)));
    PetscFunctionReturn(0);
  }
  if (net->seq) { /* sequence mode: n T rows of the sample split at both ends, Ng tl tokens between (netsequence.c) */
    PetscCall(NetSequenceCounts_Private(net, n, counts));
    PetscFunctionReturn(0);
  }
  PetscCall(NetSpatialFields_Private(net, n, &nf)); /* grid mode: the fields of the batch */
  counts[0] = n;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetNode *nd = &net->nodes[k];
    const PetscInt m  = counts[nd->in[0] + 1];

    for (PetscInt i = 1; i < nd->nin && !nd->sp; i++) /* a spatial join moves its inputs to the first one's ownership */
      PetscCheck(counts[nd->in[i] + 1] == m, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s joins values of %" PetscInt_FMT " and %" PetscInt_FMT " samples on this rank: their grids differ", nd->name, m, counts[nd->in[i] + 1]);
    counts[k + 1] = m;
    if (nd->sp) PetscCall(NetSpatialOutputCount_Private(net, k, nf, &counts[k + 1]));
  }
  PetscFunctionReturn(0);
}

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
  PetscCall(PetscFree(net->vlocal));
  PetscCall(PetscMalloc1(net->nlayers + 1, &net->vlocal));
  PetscCall(NetValueCounts_Private(net, n * NetSequenceTokens_Private(net), net->vlocal)); /* n, except in grid mode (netspatial.c) and sequence mode (tokens) */
  PetscCall(NetModelValueEntries_Private(net));                                            /* the column blocks of tensor-parallel MLP pairs (netmodel.c) */
  {                                                                                        /* act, dact (and dsum where a value feeds several nodes) for n samples: each must fit a PetscInt, all in memory */
    PetscInt       largest = 0;
    PetscLogDouble bytes   = 0;

    PetscInt64 most, entries;
    PetscInt   es;

    PetscCall(NetPrecisionBytes_Private(net, &es)); /* the bytes of a stored value entry (NetSetPrecision()) */

    for (PetscInt k = 0; k < net->nlayers; k++) {
      if ((PetscInt64)NetValueEntries(net, k + 1, net->layers[k]->outsize) > (PetscInt64)NetValueEntries(net, largest + 1, net->layers[largest]->outsize)) largest = k;
      bytes += (PetscLogDouble)NetNodeStoredArrays(net, k) * es * (PetscLogDouble)NetValueEntries(net, k + 1, net->layers[k]->outsize);
    }
    entries = (PetscInt64)NetValueEntries(net, largest + 1, net->layers[largest]->outsize);
    PetscCall(MPIU_Allreduce(&entries, &most, 1, MPIU_INT64, MPI_MAX, comm));
    PetscCheck(most <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "A batch needs %" PetscInt64_FMT " entries on a rank for the output of node %s (%" PetscInt_FMT " per sample), more than a PetscInt holds: use fewer samples per rank (smaller batches, more ranks)", most, net->nodes[largest].name,
               net->layers[largest]->outsize);
    PetscCall(NetCheckMemory_Private(net, bytes, largest, "activations for this batch"));
  }
  PetscCall(NetResetWorkspace_Private(net));
  PetscCall(NetStore(net)->setup(net)); /* the values of the batch, in the Net's precision (netprecision.c) */
  net->nlocal = n;
  net->batchgen++;
  net->nglobal = N;
  PetscFunctionReturn(0);
}

/*@
  NetGetBatchSize - the local and global number of samples of the last batch seen.

  Not collective

  Input Parameter:
. net - the Net

  Output Parameters:
+ n - the samples on this rank, or NULL (-1 before the first batch)
- N - the samples on all ranks, or NULL

  Level: intermediate

.seealso: `NetForward()`, `NetCreateVecs()`
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
  NetCreateVecs - input and output batch Vecs for n local samples.

  Collective

  Input Parameters:
+ net - the Net
- n   - the number of samples on this rank

  Output Parameters:
+ X - an input batch, [n][input shape] on this rank, or NULL
- Y - an output batch, [n][output shape] on this rank, or NULL

  Level: beginner

.seealso: `NetForward()`, `NetCreateParameterVec()`
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
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "NetCreateVecs() needs a number of samples >= 0, not %" PetscInt_FMT, n);
  PetscCheck((PetscInt64)n * PetscMax(insize, outsize) <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "%" PetscInt_FMT " samples of %" PetscInt_FMT " inputs and %" PetscInt_FMT " outputs need more entries than a PetscInt holds: use fewer samples per rank", n, insize, outsize);
  if (X) PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), n * insize, PETSC_DETERMINE, X));
  if (Y) {
    PetscInt *counts;

    PetscCall(PetscMalloc1(net->nlayers + 1, &counts));
    PetscCall(NetValueCounts_Private(net, n * NetSequenceTokens_Private(net), counts)); /* in grid mode the output may have fewer samples than the input */
    PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), counts[net->nlayers] * net->layers[net->nlayers - 1]->outsize, PETSC_DETERMINE, Y));
    PetscCall(PetscFree(counts));
  }
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
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s has %" PetscInt_FMT " local entries, expected %" PetscInt_FMT " (%" PetscInt_FMT " samples of the batch of the last NetForward)", name, n, m, net->vlocal[l]);
  PetscFunctionReturn(0);
}

/* The arrays of node k's inputs in slot s (their values, or their tangents), in element type t, read access */
PetscErrorCode NetStoreGetInputs_Private(Net net, PetscInt k, NetSlot s, NetElem t, const void *x[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) PetscCall(NetStore(net)->get(net, s, net->nodes[k].in[i] + 1, NET_READ, t, (void **)&x[i]));
  PetscFunctionReturn(0);
}

PetscErrorCode NetStoreRestoreInputs_Private(Net net, PetscInt k, NetSlot s, NetElem t, const void *x[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) PetscCall(NetStore(net)->restore(net, s, net->nodes[k].in[i] + 1, NET_READ, t, (void **)&x[i]));
  PetscFunctionReturn(0);
}

/*@
  NetForward - Y = f(X; theta), keeping every intermediate: the linearization point of NetBackward(), NetJVP() and the
  Jacobian shells.

  Collective

  Input Parameters:
+ net - the Net
- X   - the input batch, whole samples on every rank (referenced, not copied: keep it unchanged until the derivatives
        at this point are taken)

  Output Parameter:
. Y - the output batch, or NULL

  Options Database Key:
. -net_test_jacobian - check the Jacobians at the first forward pass (NetTestJacobian())

  Level: beginner

.seealso: `NetBackward()`, `NetJVP()`, `NetGetJacobian()`, `NetCreateVecs()`
@*/
PetscErrorCode NetForward(Net net, Vec X, Vec Y)
{
  NetWalk         w;
  PetscInt        nsteps;
  const PetscInt *sched = NULL;
  PetscBool       hit   = PETSC_FALSE;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  PetscCall(NetWalkForwardBegin_Private(net, X, &w, &hit)); /* the workspace set up for X */
  if (Y) PetscCall(NetCheckCompatible_Private(net, Y, net->nlayers, "Output vector"));
  if (!hit) {
    nsteps = net->nlayers;
    /* the steps: every node once, in order; placed (netplace.c), the schedule's (node, micro-batch) pairs */
    if (net->pl) PetscCall(NetPlaceGetSchedule_Private(net, &nsteps, &sched));
    for (PetscInt step = 0; step < nsteps; step++) PetscCall(NetWalkForwardStep_Private(net, &w, sched ? sched[2 * step] : step, sched ? sched[2 * step + 1] : 0));
  }
  PetscCall(NetWalkForwardEnd_Private(net, &w, hit, Y));
  PetscFunctionReturn(0);
}

/*
  The forward walk in three parts (NetForward(), and NetForwardBackward()'s 1F1B schedule, which interleaves it with the
  backward walk): the workspace and the input set up; one step, node k on micro-batch m (0 without placement); the
  output kept. *hit: the forward cache holds this pass (no step runs).
*/
PetscErrorCode NetWalkForwardBegin_Private(Net net, Vec X, NetWalk *w, PetscBool *hit)
{
  PetscInt maxin = 0;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(w, sizeof(*w)));
  PetscCall(NetSetUpWorkspace_Private(net, X));
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &net->theta_fwd_state));
  /* The input is the first layer's linearization point: keep a reference rather than a copy (a copy of a large batch
     costs as much as a small layer), and check in backward and jvp that nobody changed it in between. */
  if (X != net->act[0]) {
    PetscCall(PetscObjectReference((PetscObject)X));
    PetscCall(VecDestroy(&net->act[0]));
    net->act[0] = X;
  }
  PetscCall(PetscObjectStateGet((PetscObject)X, &net->input_state));
  PetscCall(NetStore(net)->fromvec(net, X, NET_SLOT_VALUE, 0)); /* in double act[0] is X itself; else X rounded */
  *hit = PETSC_FALSE;
  if (net->fcache) PetscCall(NetForwardCacheLookup_Private(net, X, hit)); /* NetSetForwardCache(): this input and these parameters seen before? */
  if (*hit) PetscFunctionReturn(0);
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  w->x = w->xstack;
  if (maxin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(maxin, &w->x));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &w->theta));
  if (net->pl) PetscCall(NetPlaceForwardBegin_Private(net));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWalkForwardStep_Private(Net net, NetWalk *w, PetscInt k, PetscInt m)
{
  const PetscInt     p = net->nodes[k].fusedinto;
  const NetElem      t = NetNodeElem(net, k);
  const PetscScalar *th;
  void              *y;

  PetscFunctionBegin;
  PetscCall(NetStore(net)->nextnode(net));
  if (p >= 0 && net->nodes[p].fuseact == k) PetscFunctionReturn(0); /* an activation its producer applied (netfuse.c): the same value */
  if (net->pl) PetscCall(NetPlaceSetStep_Private(net, m));
  if (net->pl) PetscCall(NetPlaceForwardBefore_Private(net, k)); /* its inputs from earlier stages arrived */
  PetscCall(NetNodeGetParameters_Private(net, k, net->theta, w->theta, &th));
  PetscCall(NetStoreGetInputs_Private(net, k, NET_SLOT_VALUE, t, w->x));
  PetscCall(NetStore(net)->get(net, NET_SLOT_VALUE, k + 1, NET_WRITE, t, &y));
  PetscCall(net->nodes[k].exec->forward(net, k, t, th, w->x, y));
  PetscCall(NetStore(net)->restore(net, NET_SLOT_VALUE, k + 1, NET_WRITE, t, &y));
  PetscCall(NetStoreRestoreInputs_Private(net, k, NET_SLOT_VALUE, t, w->x));
  PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  if (net->pl) PetscCall(NetPlaceForwardAfter_Private(net, k)); /* its output sent on */
  PetscFunctionReturn(0);
}

PetscErrorCode NetWalkForwardEnd_Private(Net net, NetWalk *w, PetscBool hit, Vec Y)
{
  PetscFunctionBegin;
  if (!hit) {
    if (net->pl) PetscCall(NetPlaceForwardEnd_Private(net));
    PetscCall(NetStore(net)->nextnode(net));
    PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &w->theta));
    if (w->x != w->xstack) PetscCall(PetscFree(w->x));
    if (net->fcache) PetscCall(NetForwardCacheRecord_Private(net, net->act[0]));
  }
  PetscCall(NetStore(net)->tovec(net, NET_SLOT_VALUE, net->nlayers, net->act[net->nlayers])); /* in double the value itself */
  net->forwarded = PETSC_TRUE;
  net->tanvalid  = PETSC_FALSE;
  net->nforward++;
  if (Y) PetscCall(VecCopy(net->act[net->nlayers], Y));
  if (net->testjacobian && !net->intest) {
    net->testjacobian = PETSC_FALSE; /* once */
    PetscCall(NetTestJacobian(net, net->act[0], NULL, NULL, NULL));
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

/*
  Backward of node k from the cotangent dy of its output: the cotangent of each input i goes to dx[i] (overwritten; NULL
  to skip it) and dth (the node's gradient array, NetNodeGetGradient_Private(), or NULL) accumulates J_theta^T dy.
  th: the node's parameters (NetNodeGetParameters_Private()); dy, dx[i] arrays of element type t; the node's input and
  output values are taken from the store in that type. mask: the activation node fused before node k whose derivative
  its dx pass applies (NetBackward()'s walk: NetNode.fusemask; dx[0] is then that activation's input cotangent), or -1.
*/
PetscErrorCode NetNodeBackwardArrays_Private(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  const void *stack[NET_MAX_STACK_INPUTS], **x = stack;
  void       *y;

  PetscFunctionBegin;
  if (net->nodes[k].nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(net->nodes[k].nin, &x));
  PetscCall(NetStoreGetInputs_Private(net, k, NET_SLOT_VALUE, t, x));
  y = NULL;
  if (net->nodes[k].exec->needsy) PetscCall(NetStore(net)->get(net, NET_SLOT_VALUE, k + 1, NET_READ, t, &y));
  PetscCall(net->nodes[k].exec->backward(net, k, t, th, x, y, dy, dx, dth, mask));
  if (net->nodes[k].exec->needsy) PetscCall(NetStore(net)->restore(net, NET_SLOT_VALUE, k + 1, NET_READ, t, &y));
  PetscCall(NetStoreRestoreInputs_Private(net, k, NET_SLOT_VALUE, t, x));
  if (x != stack) PetscCall(PetscFree(x));
  PetscFunctionReturn(0);
}

/* JVP of node k: dy = sum_i J_i dx[i] + J_theta dth (NULL dx[i] or dth: zero); th, dth as the node's kernel takes them;
   dx[i], dy of element type t */
static PetscErrorCode NetNodeJVPArrays_Private(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const dx[], const PetscScalar *dth, void *dy)
{
  const void *stack[NET_MAX_STACK_INPUTS], **x = stack;
  void       *y;

  PetscFunctionBegin;
  if (net->nodes[k].nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(net->nodes[k].nin, &x));
  PetscCall(NetStoreGetInputs_Private(net, k, NET_SLOT_VALUE, t, x));
  y = NULL;
  if (net->nodes[k].exec->needsy) PetscCall(NetStore(net)->get(net, NET_SLOT_VALUE, k + 1, NET_READ, t, &y));
  PetscCall(net->nodes[k].exec->jvp(net, k, t, th, x, y, dx, dth, dy));
  if (net->nodes[k].exec->needsy) PetscCall(NetStore(net)->restore(net, NET_SLOT_VALUE, k + 1, NET_READ, t, &y));
  PetscCall(NetStoreRestoreInputs_Private(net, k, NET_SLOT_VALUE, t, x));
  if (x != stack) PetscCall(PetscFree(x));
  PetscFunctionReturn(0);
}

/*
  A node's own block (p_k entries, as its per-node Jacobian shells hold it) against the array its kernel takes: the
  same array, or (a model-parallel node) this rank's runs of it, copied out and added back.
*/
static PetscErrorCode NetNodeBlockToKernel_Private(Net net, PetscInt k, const PetscScalar *blk, PetscBool zero, PetscScalar **kth)
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  *kth = (PetscScalar *)blk;
  if (!blk || !nd->nruns) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1(nd->nplocal, kth));
  for (PetscInt i = 0, o = 0; i < nd->nruns; o += nd->runlen[i], i++) {
    if (zero)
      PetscCall(PetscArrayzero(*kth + o, nd->runlen[i]));
    else
      PetscCall(PetscArraycpy(*kth + o, blk + nd->runstart[i] - net->poff[k], nd->runlen[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetNodeKernelToBlock_Private(Net net, PetscInt k, PetscScalar *blk, PetscBool add, PetscScalar **kth)
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  if (*kth == blk || !nd->nruns) {
    *kth = NULL;
    PetscFunctionReturn(0);
  }
  if (add) {
    for (PetscInt i = 0, o = 0; i < nd->nruns; o += nd->runlen[i], i++) {
      PetscScalar *t = blk + nd->runstart[i] - net->poff[k];

      for (PetscInt j = 0; j < nd->runlen[i]; j++) t[j] += (*kth)[o + j];
    }
  }
  PetscCall(PetscFree(*kth));
  PetscFunctionReturn(0);
}

/*
  Node k alone at the stored point, for its Jacobian shells. dX holds the cotangents of its inputs end to end on each
  rank (input 0's n samples, then input 1's, ...) or is NULL; dtheta is node k's own block (a replicated Vec of p_k
  entries, accumulated into: a model-parallel node adds its own runs, and the shell's sum-reduce over ranks does the
  rest) or NULL.
*/
PetscErrorCode NetNodeBackward_Private(Net net, PetscInt k, Vec dY, Vec dX, Vec dtheta)
{
  const PetscScalar *theta, *dy, *th;
  PetscScalar       *stack[NET_MAX_STACK_INPUTS], **dx = stack, *base = NULL, *dth = NULL, *kdth;
  const PetscInt     nin = net->nodes[k].nin;

  PetscFunctionBegin;
  PetscCheck(!net->pl, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "The per-node Jacobians (NetGetLayerJacobian(), -net_test_jacobian) with -net_stages / -net_microbatches are not built yet (node %s): take them without stages",
             net->nodes[k].name);
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckParametersUnchanged_Private(net, "NetGetLayerJacobian"));
  if (nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(nin, &dx));
  if (dX) PetscCall(VecGetArrayWrite(dX, &base));
  for (PetscInt i = 0, off = 0; i < nin; off += NetValueEntries(net, net->nodes[k].in[i] + 1, net->layers[k]->insizes[i]), i++) dx[i] = base ? base + off : NULL;
  if (dtheta) PetscCall(VecGetArray(dtheta, &dth));
  PetscCall(NetNodeBlockToKernel_Private(net, k, dth, PETSC_TRUE, &kdth));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
  PetscCall(VecGetArrayRead(dY, &dy));
  PetscCall(NetStore(net)->nextnode(net)); /* the node's values in double: in low precision widened copies */
  PetscCall(NetNodeBackwardArrays_Private(net, k, NET_ELEM_DOUBLE, th, dy, (void *const *)dx, kdth, -1));
  PetscCall(NetStore(net)->nextnode(net));
  PetscCall(VecRestoreArrayRead(dY, &dy));
  PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(NetNodeKernelToBlock_Private(net, k, dth, PETSC_TRUE, &kdth));
  if (dtheta) PetscCall(VecRestoreArray(dtheta, &dth));
  if (dX) PetscCall(VecRestoreArrayWrite(dX, &base));
  if (dx != stack) PetscCall(PetscFree(dx));
  PetscFunctionReturn(0);
}

PetscErrorCode NetNodeJVP_Private(Net net, PetscInt k, Vec dX, Vec dtheta, Vec dY)
{
  const PetscScalar *theta, *stack[NET_MAX_STACK_INPUTS], **dx = stack, *base = NULL, *dth = NULL, *th;
  PetscScalar       *dy, *kdth;
  const PetscInt     nin = net->nodes[k].nin;

  PetscFunctionBegin;
  PetscCheck(!net->pl, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "The per-node Jacobians (NetGetLayerJacobian(), -net_test_jacobian) with -net_stages / -net_microbatches are not built yet (node %s): take them without stages",
             net->nodes[k].name);
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckParametersUnchanged_Private(net, "NetGetLayerJacobian"));
  if (nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(nin, &dx));
  if (dX) PetscCall(VecGetArrayRead(dX, &base));
  for (PetscInt i = 0, off = 0; i < nin; off += NetValueEntries(net, net->nodes[k].in[i] + 1, net->layers[k]->insizes[i]), i++) dx[i] = base ? base + off : NULL;
  if (dtheta) PetscCall(VecGetArrayRead(dtheta, &dth));
  PetscCall(NetNodeBlockToKernel_Private(net, k, dth, PETSC_FALSE, &kdth));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
  PetscCall(VecGetArrayWrite(dY, &dy));
  PetscCall(NetStore(net)->nextnode(net));
  PetscCall(NetNodeJVPArrays_Private(net, k, NET_ELEM_DOUBLE, th, (const void *const *)dx, kdth, dy));
  PetscCall(NetStore(net)->nextnode(net));
  PetscCall(VecRestoreArrayWrite(dY, &dy));
  PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(NetNodeKernelToBlock_Private(net, k, (PetscScalar *)dth, PETSC_FALSE, &kdth));
  if (dtheta) PetscCall(VecRestoreArrayRead(dtheta, &dth));
  if (dX) PetscCall(VecRestoreArrayRead(dX, &base));
  if (dx != stack) PetscCall(PetscFree(dx));
  PetscFunctionReturn(0);
}

/*@
  NetBackward - the VJP at the last forward pass: dX = J_x^T dY and G += J_theta^T dY.

  Collective

  Input Parameters:
+ net - the Net, after NetForward()
- dY  - the output cotangent

  Output Parameters:
+ dX - the input cotangent (overwritten), or NULL
- G  - the gradient, laid out like the parameter Vec, accumulated into (NetBackward() adds; zero it first), or NULL

  Level: beginner

  Note:
  The per-rank contributions to G are summed by the transpose of the parameter broadcast.

.seealso: `NetForward()`, `NetJVP()`, `NetGetJacobian()`, `NetGetJacobianP()`
@*/
PetscErrorCode NetBackward(Net net, Vec dY, Vec dX, Vec G)
{
  NetWalk         w;
  PetscInt        nsteps;
  const PetscInt *sched = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 2);
  PetscCall(NetWalkBackwardBegin_Private(net, dY, dX, G, &w));
  nsteps = net->nlayers;
  /* the steps in reverse: every node once; placed (netplace.c), the schedule's (node, micro-batch) pairs, whose fan-out
     sums are per micro-batch */
  if (net->pl) PetscCall(NetPlaceGetSchedule_Private(net, &nsteps, &sched));
  for (PetscInt step = nsteps - 1; step >= 0; step--) PetscCall(NetWalkBackwardStep_Private(net, &w, sched ? sched[2 * step] : step, sched ? sched[2 * step + 1] : 0));
  PetscCall(NetWalkBackwardEnd_Private(net, &w));
  PetscFunctionReturn(0);
}

/*
  The backward walk in three parts (NetBackward(), and NetForwardBackward()'s 1F1B schedule): the checks and the output
  cotangent dY taken (NULL: the schedule's loss steps write it, netplace.c); one step, node k on micro-batch m; the input
  cotangent and the gradient handed back.
*/
PetscErrorCode NetWalkBackwardBegin_Private(Net net, Vec dY, Vec dX, Vec G, NetWalk *w)
{
  PetscInt maxin = 0;

  PetscFunctionBegin;
  PetscCheck(net->forwarded || !dY, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetBackward() differentiates at the last forward pass, and there is none: call NetForward() on the batch first (NetSetTraining() also clears it)");
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckParametersUnchanged_Private(net, "NetBackward"));
  if (dY) PetscCall(NetCheckCompatible_Private(net, dY, net->nlayers, "Output cotangent dY"));
  if (dX) PetscCall(NetCheckCompatible_Private(net, dX, 0, "Input cotangent dX"));
  if (G) PetscCall(NetCheckParameterLayout_Private(net, G, "Gradient G"));
  w->dX = dX;
  w->G  = G;
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  w->dx = w->dstack;
  if (maxin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(maxin, &w->dx));
  /* seeded[v]: the cotangent of v holds a first contribution; summed[v]: input i of the node at hand writes the fan-out
     sum of v, to be added; wnodes: placed, the nodes whose parameter pass waits for the walk's end (in the same
     allocation) */
  PetscCall(PetscCalloc3(net->nlayers + 1, &w->seeded, maxin, &w->summed, net->pl ? net->nlayers : 0, &w->wnodes));
  w->nw         = 0;
  net->tanvalid = PETSC_FALSE; /* the tangent slot now holds cotangents, not the last JVP's tangents */
  if (dY) PetscCall(NetStore(net)->fromvec(net, dY, NET_SLOT_TANGENT, net->nlayers));
  w->seeded[net->nlayers] = PETSC_TRUE;
  PetscCall(NetGetGradientArray_Private(net, G, &w->grad)); /* G's own on one rank, else grad_rep (netpmap.c) */
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &w->btheta));
  if (net->pl) PetscCall(NetPlaceBackwardBegin_Private(net, (PetscBool)(dX != NULL), (PetscBool)(dY == NULL)));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWalkBackwardStep_Private(Net net, NetWalk *w, PetscInt k, PetscInt m)
{
  const NetStoreOps *store = NetStore(net);
  const NetNode     *nd    = &net->nodes[k];
  const NetElem      t     = NetNodeElem(net, k);
  const PetscScalar *th;
  void              *dy, **dx  = w->dx;
  PetscScalar       *gk, *grad = w->grad;
  PetscBool         *summed = w->summed, defer;
  Vec                G = w->G, dX = w->dX;

  PetscFunctionBegin;
  PetscCall(store->nextnode(net));
  if (nd->fusedback >= 0) PetscFunctionReturn(0); /* an activation whose consumer did its backward (netfuse.c) */
  if (net->pl) PetscCall(NetPlaceSetStep_Private(net, m));
  if (net->pl) PetscCall(NetPlaceBackwardBefore_Private(net, k)); /* the later stages' cotangents of its output arrived */
  for (PetscInt i = 0; i < nd->nin; i++) {
    PetscInt   v  = NetBackwardTarget(net, k, i); /* the input, or the input of a fused activation before node k */
    PetscBool *sd = net->pl ? NetPlaceSeeded_Private(net, v) : &w->seeded[v];

    dx[i]     = NULL;
    summed[i] = PETSC_FALSE;
    if (v == 0 && !dX) continue;                                  /* the input's cotangent is not asked for */
    if (net->pl && NetPlaceCrossing_Private(net, k, i)) continue; /* written to its move, sent back after (netplace.c) */
    summed[i] = *sd;
    PetscCall(store->get(net, summed[i] ? NET_SLOT_SUM : NET_SLOT_TANGENT, v, NET_WRITE, t, &dx[i]));
    *sd = PETSC_TRUE;
  }
  PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, t, &dy));
  /* placed (netplace.c): each micro-batch's pass computes the input cotangents the earlier stage waits for, and the
     parameter gradient is one pass over all the micro-batches at the walk's end, after the rank's last cotangent has
     been sent (a GEMM over the whole batch instead of M thin ones, run while the earlier stages still work:
     NetWalkBackwardEnd_Private()); a sharded stage's node (a map over its stage's ranks) then reduce-scatters its
     gradient once a backward pass, not once a micro-batch. With 1F1B, whose stages keep only a few micro-batches'
     values (NetPlaceKeepsAll_Private()), and for a layer that keeps state of its forward pass beyond its arrays (not
     Layer.actonly: it holds one micro-batch's, netplace.c), each micro-batch's pass takes its own; so does a node split
     over its stage's ranks (-net_parallel model: nd->mp, whose linearization point is one micro-batch's x'). The same
     on every rank of the node's stage: it does not depend on the rank's map or rows. */
  defer = (PetscBool)(net->pl && G && net->layers[k]->nparams && net->layers[k]->actonly && NetPlaceKeepsAll_Private(net) && !nd->mp && !nd->sp); /* a spatial stage's node: its batch is a micro-batch's fields */
  if (nd->pmap && G && net->layers[k]->gradfree && t == NET_ELEM_DOUBLE && !defer) {
    /* a node that gathers its parameters (sharded, or its block of a model-parallel split), of a kind whose parameter
       gradient does not read them (its double kernels promise it): the input part with the parameters, released
       before the gradient's buffer is taken (never both at once; none at all when the input's cotangent is not
       asked for). nd->bwdpart tells the executor which part runs. */
    PetscBool anydx                      = PETSC_FALSE;
    void     *nodx[NET_MAX_STACK_INPUTS] = {NULL};

    for (PetscInt i = 0; i < nd->nin; i++) anydx = (PetscBool)(anydx || NetBackwardTarget(net, k, i) || dX); /* not dx[i]: NULL on a rank without samples */
    if (anydx) {
      PetscCall(NetNodeGetParameters_Private(net, k, net->theta, w->btheta, &th));
      net->nodes[k].bwdpart = 1;
      PetscCall(NetNodeBackwardArrays_Private(net, k, t, th, dy, dx, NULL, nd->fusemask));
      PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    }
    PetscCheck(nd->nin <= NET_MAX_STACK_INPUTS, PETSC_COMM_SELF, PETSC_ERR_SUP, "A kind with parameters and more than %d inputs", NET_MAX_STACK_INPUTS);
    PetscCall(NetNodeGetGradient_Private(net, k, grad, PETSC_TRUE, &gk));
    net->nodes[k].bwdpart = anydx ? 2 : 0;
    PetscCall(NetNodeBackwardArrays_Private(net, k, t, NULL, dy, nodx, gk, nd->fusemask));
    net->nodes[k].bwdpart = 0;
    PetscCall(NetNodeRestoreGradient_Private(net, k, G, &gk));
  } else {
    PetscBool anydx = (PetscBool)!defer;

    /* deferred and no input cotangent asked for (the Net's first node without dX): nothing to do in this step, and a
       node of a sharded stage gathers nothing (the same on every rank of the stage) */
    for (PetscInt i = 0; i < nd->nin && !anydx; i++) anydx = (PetscBool)(NetBackwardTarget(net, k, i) || dX);
    if (anydx) {
      PetscCall(NetNodeGetParameters_Private(net, k, net->theta, w->btheta, &th));
      gk = NULL;
      if (!defer) PetscCall(NetNodeGetGradient_Private(net, k, grad, (PetscBool)(G != NULL), &gk));
      PetscCall(NetNodeBackwardArrays_Private(net, k, t, th, dy, dx, gk, nd->fusemask)); /* dx = f'(x) J^T dy in its pass (netfuse.c) */
      if (!defer) PetscCall(NetNodeRestoreGradient_Private(net, k, G, &gk));
      PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    }
    if (defer && m == 0) w->wnodes[w->nw++] = k; /* the node's last micro-batch: its parameter part over them all, at the walk's end */
  }
  PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, t, &dy));
  for (PetscInt i = 0; i < nd->nin; i++) {
    PetscInt v = NetBackwardTarget(net, k, i);

    if (v == 0 && !dX) continue;
    if (net->pl && NetPlaceCrossing_Private(net, k, i)) continue;
    PetscCall(store->restore(net, summed[i] ? NET_SLOT_SUM : NET_SLOT_TANGENT, v, NET_WRITE, t, &dx[i]));
    if (summed[i]) PetscCall(store->addsum(net, NET_SLOT_TANGENT, v));
  }
  if (net->pl) PetscCall(NetPlaceBackwardAfter_Private(net, k)); /* the cotangents of its inputs from earlier stages sent back */
  PetscFunctionReturn(0);
}

/* A placed node's parameter pass over all its micro-batches (deferred by NetWalkBackwardStep_Private()); a node of a
   sharded stage reduce-scatters its gradient here, once, and gathers its parameters only for a kind whose parameter
   part reads them (not Layer.gradfree, or not in double) */
static PetscErrorCode NetWalkBackwardParameters(Net net, NetWalk *w, PetscInt k)
{
  const NetStoreOps *store = NetStore(net);
  const NetNode     *nd    = &net->nodes[k];
  const NetElem      t     = NetNodeElem(net, k);
  const PetscScalar *th;
  void              *dy, *nodx[NET_MAX_STACK_INPUTS] = {NULL};
  PetscScalar       *gk;

  PetscFunctionBegin;
  PetscCheck(nd->nin <= NET_MAX_STACK_INPUTS, PETSC_COMM_SELF, PETSC_ERR_SUP, "A kind with parameters and more than %d inputs", NET_MAX_STACK_INPUTS);
  PetscCall(store->nextnode(net));
  PetscCall(NetPlaceSetStep_Private(net, -1));
  PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, t, &dy));
  th = NULL;
  if (!(nd->pmap && net->layers[k]->gradfree && t == NET_ELEM_DOUBLE)) PetscCall(NetNodeGetParameters_Private(net, k, net->theta, w->btheta, &th));
  PetscCall(NetNodeGetGradient_Private(net, k, w->grad, PETSC_TRUE, &gk));
  PetscCall(NetNodeBackwardArrays_Private(net, k, t, th, dy, nodx, gk, nd->fusemask));
  PetscCall(NetNodeRestoreGradient_Private(net, k, w->G, &gk));
  if (th) PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, t, &dy));
  PetscCall(NetPlaceSetStep_Private(net, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWalkBackwardEnd_Private(Net net, NetWalk *w)
{
  PetscFunctionBegin;
  /* the deferred parameter passes, once every cotangent has been sent: the earlier stages' last micro-batch does not
     wait for this stage's weight gradients (it did when each ran at its node's last micro-batch: the stages' parameter
     passes then ran one after the other instead of side by side) */
  for (PetscInt i = 0; i < w->nw; i++) PetscCall(NetWalkBackwardParameters(net, w, w->wnodes[i]));
  if (net->pl) PetscCall(NetPlaceBackwardEnd_Private(net));
  PetscCall(NetStore(net)->nextnode(net));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &w->btheta));
  PetscCall(PetscFree3(w->seeded, w->summed, w->wnodes));
  if (w->dx != w->dstack) PetscCall(PetscFree(w->dx));
  if (w->dX) PetscCall(NetStore(net)->tovec(net, NET_SLOT_TANGENT, 0, w->dX));
  PetscCall(NetRestoreGradientArray_Private(net, w->G, &w->grad));
  PetscFunctionReturn(0);
}

/* The replicated copy of a parameter direction for the nodes' kernels: dtheta broadcast into dtheta_rep (created on the
   first JVP along parameters), its array in *dth (restore dtheta_rep's array after); NULL without dtheta or when no node
   reads the replicated copy */
PetscErrorCode NetGetReplicatedDirection_Private(Net net, Vec dtheta, const PetscScalar **dth)
{
  PetscFunctionBegin;
  *dth = NULL;
  if (!dtheta || !net->theta_rep) PetscFunctionReturn(0);
  if (!net->dtheta_rep) PetscCall(VecDuplicate(net->theta_rep, &net->dtheta_rep));
  PetscCall(MatMult(net->bcast, dtheta, net->dtheta_rep));
  PetscCall(VecGetArrayRead(net->dtheta_rep, dth));
  PetscFunctionReturn(0);
}

/*@
  NetJVP - the JVP at the last forward pass: dY = J_x dX + J_theta dtheta.

  Collective

  Input Parameters:
+ net    - the Net, after NetForward()
. dX     - the input tangent, or NULL (zero)
- dtheta - the parameter tangent, laid out like the parameter Vec, or NULL (zero)

  Output Parameter:
. dY - the output tangent

  Level: beginner

.seealso: `NetForward()`, `NetBackward()`, `NetGetJacobian()`
@*/
PetscErrorCode NetJVP(Net net, Vec dX, Vec dtheta, Vec dY)
{
  const NetStoreOps *store = NetStore(net);
  const PetscScalar *theta, *dth                        = NULL;
  const void        *xstack[NET_MAX_STACK_INPUTS], **dx = xstack;
  PetscBool         *zero;
  PetscInt           maxin = 0, nsteps = net->nlayers;
  const PetscInt    *sched = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 4);
  net->tanvalid = PETSC_FALSE;
  PetscCheck(net->forwarded, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetJVP() differentiates at the last forward pass, and there is none: call NetForward() on the batch first (NetSetTraining() also clears it)");
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckParametersUnchanged_Private(net, "NetJVP"));
  PetscCall(NetCheckCompatible_Private(net, dY, net->nlayers, "Output tangent dY"));
  if (dtheta) PetscCall(NetCheckParameterLayout_Private(net, dtheta, "Parameter direction dtheta"));
  if (dX) PetscCall(NetCheckCompatible_Private(net, dX, 0, "Input tangent dX"));
  if (dX) PetscCall(store->fromvec(net, dX, NET_SLOT_TANGENT, 0));
  PetscCall(NetGetReplicatedDirection_Private(net, dtheta, &dth));
  /* the direction of the parameters, kept for NetSecondOrderBackward() (nodes with a map gather it again there) */
  if (dtheta) PetscCall(PetscObjectReference((PetscObject)dtheta));
  PetscCall(VecDestroy(&net->tandthetavec));
  net->tandthetavec = dtheta;
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  if (maxin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(maxin, &dx));
  /* zero[v]: the tangent of value v is zero (a NULL array for the kernels, no pass over memory, no move); the same on
     every rank, since it depends on the graph and on dX, dtheta being given */
  if (!net->tanzero) PetscCall(PetscMalloc1(net->nlayers + 1, &net->tanzero));
  zero    = net->tanzero; /* kept for NetSecondOrderBackward() */
  zero[0] = dX ? PETSC_FALSE : PETSC_TRUE;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    zero[k + 1] = (PetscBool)(!dtheta || !net->layers[k]->nparams);
    for (PetscInt i = 0; i < net->nodes[k].nin; i++) zero[k + 1] = (PetscBool)(zero[k + 1] && zero[net->nodes[k].in[i] + 1]);
  }
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  /* the steps: every node once, in order; placed (netplace.c), the forward walk's (node, micro-batch) pairs, the
     tangents moved between the groups like the values */
  if (net->pl) PetscCall(NetPlaceGetSchedule_Private(net, &nsteps, &sched));
  if (net->pl) PetscCall(NetPlaceJVPBegin_Private(net, zero[0]));
  for (PetscInt step = 0; step < nsteps; step++) {
    const PetscInt     k  = sched ? sched[2 * step] : step;
    const NetNode     *nd = &net->nodes[k];
    const NetElem      t  = NetNodeElem(net, k);
    void              *dy;
    const PetscScalar *th, *dthk;

    PetscCall(store->nextnode(net));
    if (net->pl) PetscCall(NetPlaceSetStep_Private(net, sched[2 * step + 1]));
    if (net->pl) PetscCall(NetPlaceJVPBefore_Private(net, k, zero)); /* its inputs' tangents from other groups arrived */
    for (PetscInt i = 0; i < nd->nin; i++) {
      PetscInt v = nd->in[i] + 1;

      dx[i] = NULL;
      if (!zero[v]) PetscCall(store->get(net, NET_SLOT_TANGENT, v, NET_READ, t, (void **)&dx[i]));
    }
    PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_WRITE, t, &dy));
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    PetscCall(NetNodeGetParameters_Private(net, k, dtheta, dth, &dthk));
    PetscCall(NetNodeJVPArrays_Private(net, k, t, th, dx, dthk, dy));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &dthk));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_WRITE, t, &dy));
    for (PetscInt i = 0; i < nd->nin; i++)
      if (!zero[nd->in[i] + 1]) PetscCall(store->restore(net, NET_SLOT_TANGENT, nd->in[i] + 1, NET_READ, t, (void **)&dx[i]));
    if (net->pl) PetscCall(NetPlaceJVPAfter_Private(net, k, zero)); /* its output's tangent sent on */
  }
  if (net->pl) PetscCall(NetPlaceJVPEnd_Private(net));
  PetscCall(store->nextnode(net));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  if (dx != xstack) PetscCall(PetscFree(dx));
  if (dth) PetscCall(VecRestoreArrayRead(net->dtheta_rep, &dth));
  PetscCall(store->tovec(net, NET_SLOT_TANGENT, net->nlayers, dY));
  net->tanvalid  = PETSC_TRUE;
  net->tandtheta = dtheta ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetGetNodeArraysRead - the values of a node's (first) input and the cotangent of its output at the last NetForward()
  and NetBackward(), in double whatever the Net's precision, for methods that read a network's intermediates (K-FAC's
  statistics, the spectra of ode layers)

  Not collective

  Input Parameters:
+ net - the Net, after NetForward() (and NetBackward() for dy)
- k   - the node

  Output Parameters:
+ n  - the samples of node k's input on this rank (placed: its rows of the node's group, below), or NULL
. x  - its input values, [n][input size], or NULL if not wanted
- dy - the cotangent of its output from the last NetBackward(), [n][output size] (in grid mode the output's own count), or
       NULL if not wanted

  Notes:
  The arrays are the Net's own in double precision and widened copies in single and bfloat16; they stay valid until
  NetRestoreNodeArraysRead(), which must come before any other call on the Net. Read them, do not write.

  On a placed Net (-net_stages, -net_microbatches, entry@s, entry@ranks=a:b, -net_parallel subgraph) they are node k's
  rows in the layout of its group of ranks, as it computed them: every micro-batch's rows this rank holds, micro-batch
  after micro-batch (n their count), read from the buffers of the moves where its input comes from another group or its
  output goes to the caller; a rank outside the group gets n = 0 and NULL arrays. Each sample is on exactly one rank, so
  sums over the rows and then over the Net's ranks (K-FAC's factors) are those of the unplaced Net. With
  -net_pipeline_schedule 1f1b a stage keeps only some micro-batches' values, and this is refused.

  Level: developer

.seealso: `NetRestoreNodeArraysRead()`, `NetForward()`, `NetBackward()`, `NetSetPrecision()`, `NetSetStages()`, `NetGetNodeRanks()`
@*/
PetscErrorCode NetGetNodeArraysRead(Net net, PetscInt k, PetscInt *n, const PetscScalar **x, const PetscScalar **dy)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(net->forwarded, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetGetNodeArraysRead() reads the last forward pass, and there is none: call NetForward() first");
  PetscCheck(k >= 0 && k < net->nlayers, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has nodes 0 to %" PetscInt_FMT, k, net->nlayers - 1);
  /* a value kept as the column block of a tensor-parallel MLP pair (netmodel.c) is not [n][size] on this rank */
  PetscCheck(!net->ventries || ((!x || !net->ventries[net->nodes[k].in[0] + 1]) && (!dy || !net->ventries[k + 1])), PETSC_COMM_SELF, PETSC_ERR_SUP,
             "NetGetNodeArraysRead() hands out a node's values split by samples, but node %s %s the column block of a tensor-parallel MLP pair (each rank holds its columns of all samples of its group; no rank holds its samples whole): run what "
             "reads node values (K-FAC: -tao_type kfac, -trainer_hessian_pc kfac) with -net_parallel model or sharded, which keep every value split by samples",
             net->nodes[k].name, x && net->ventries[net->nodes[k].in[0] + 1] ? "reads" : "writes");
  PetscCall(NetStore(net)->nextnode(net));
  if (net->pl) { /* placed: the node's rows in its group's layout, some from the moves' buffers (netplace.c) */
    PetscCall(NetPlaceGetNodeArrays_Private(net, k, n, x, dy));
    PetscFunctionReturn(0);
  }
  if (n) *n = NetNodeCount(net, k);
  if (x) PetscCall(NetStore(net)->get(net, NET_SLOT_VALUE, net->nodes[k].in[0] + 1, NET_READ, NET_ELEM_DOUBLE, (void **)x));
  if (dy) PetscCall(NetStore(net)->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, (void **)dy));
  PetscFunctionReturn(0);
}

/*@C
  NetRestoreNodeArraysRead - gives back the arrays of NetGetNodeArraysRead()

  Not collective

  Input Parameters:
+ net - the Net
- k   - the node

  Output Parameters:
+ n  - as given to NetGetNodeArraysRead() (may be NULL)
. x  - the input values (set to NULL), or NULL
- dy - the output cotangent (set to NULL), or NULL

  Level: developer

.seealso: `NetGetNodeArraysRead()`
@*/
PetscErrorCode NetRestoreNodeArraysRead(Net net, PetscInt k, PetscInt *n, const PetscScalar **x, const PetscScalar **dy)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->pl)
    PetscCall(NetPlaceRestoreNodeArrays_Private(net, k, x, dy));
  else {
    if (dy) PetscCall(NetStore(net)->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, (void **)dy));
    if (x) PetscCall(NetStore(net)->restore(net, NET_SLOT_VALUE, net->nodes[k].in[0] + 1, NET_READ, NET_ELEM_DOUBLE, (void **)x));
  }
  PetscCall(NetStore(net)->nextnode(net));
  PetscFunctionReturn(0);
}
