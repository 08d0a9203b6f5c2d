/*
  NetForwardBackward(): the forward pass, the caller's output cotangent and the backward pass in one call. Without a
  1F1B pipeline it is NetForward(), the cotangent of every output row at once, then NetBackward(). With
  -net_pipeline_schedule 1f1b (netplace.c) it runs the 1F1B schedule: forward and backward steps of the stages
  interleaved, and the cotangent of micro-batch m asked for as soon as its output exists, so that a stage keeps only
  the values of the micro-batches in flight on it (at most S) instead of all M.
*/
#include <petnet/private/netimpl.h>

/* the output cotangent's Vec, made once for the workspace (NetResetWorkspace_Private() drops it with the layout) */
static PetscErrorCode NetGetOutputCotangentVec_Private(Net net, Vec *dY)
{
  PetscFunctionBegin;
  if (!net->fbdY) PetscCall(VecDuplicate(net->act[net->nlayers], &net->fbdY));
  *dY = net->fbdY;
  PetscFunctionReturn(0);
}

/*@C
  NetForwardBackward - the forward pass at X, the output cotangent from the caller, and the backward pass: dX = J_x^T dY,
  G += J_theta^T dY

  Collective

  Input Parameters:
+ net - the Net
. X   - the input batch
. fn  - the output cotangent: fn(net, r0, n, y, dy, ctx) writes dy[0 .. n * nout) for the rows r0 .. r0 + n - 1 of this
        rank's part of the output (y: their outputs, in double; nout: the output entries of a sample). It may be
        called several times with disjoint rows (once per micro-batch) and at different times on different ranks, so
        it must not communicate
- ctx - its context

  Output Parameters:
+ Y  - the output batch, or NULL
. dX - the input cotangent (overwritten), or NULL
- G  - the gradient, laid out like the parameter Vec, accumulated into, or NULL

  Notes:
  With -net_pipeline_schedule 1f1b (NetSetPipelineSchedule()) and more micro-batches than stages, each stage keeps the
  values of at most S micro-batches (PipeDream-flush) and NetBackward() after NetForward() is refused: take gradients
  with this call (LossNetForwardBackward() does it with a Loss). The gradient is the sum over the micro-batches, the
  same as GPipe's and as without a pipeline up to round-off. Everywhere else it is NetForward(), fn on all rows,
  NetBackward().

  Level: intermediate

.seealso: `NetForward()`, `NetBackward()`, `LossNetForwardBackward()`, `NetSetPipelineSchedule()`
@*/
PetscErrorCode NetForwardBackward(Net net, Vec X, PetscErrorCode (*fn)(Net, PetscInt, PetscInt, const PetscScalar[], PetscScalar[], void *), void *ctx, Vec Y, Vec dX, Vec G)
{
  NetWalk         fw, bw;
  PetscInt        n, nout;
  const PetscInt *sched;
  PetscBool       hit;
  Vec             dY = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  PetscCall(NetSetUp(net));
  PetscCall(NetPlaceGetForwardBackward_Private(net, &n, &sched));
  if (!n) { /* one forward walk, every row's cotangent, one backward walk */
    const PetscScalar *y;
    PetscScalar       *dy;
    PetscInt           nl;

    PetscCall(NetForward(net, X, Y));
    PetscCall(NetGetOutputCotangentVec_Private(net, &dY));
    nout = net->layers[net->nlayers - 1]->outsize;
    PetscCall(VecGetLocalSize(dY, &nl));
    PetscCall(VecGetArrayRead(net->act[net->nlayers], &y));
    PetscCall(VecGetArrayWrite(dY, &dy));
    PetscCall(fn(net, 0, nout ? nl / nout : 0, y, dy, ctx));
    PetscCall(VecRestoreArrayWrite(dY, &dy));
    PetscCall(VecRestoreArrayRead(net->act[net->nlayers], &y));
    PetscCall(NetBackward(net, dY, dX, G));
    PetscFunctionReturn(0);
  }
  /* 1F1B: the two walks open at once, their steps in the schedule's order */
  PetscCall(NetWalkForwardBegin_Private(net, X, &fw, &hit));
  PetscCall(NetWalkBackwardBegin_Private(net, NULL, dX, G, &bw));
  PetscCall(NetGetOutputCotangentVec_Private(net, &dY));
  PetscCall(VecZeroEntries(dY));
  for (PetscInt i = 0; i < n; i++) {
    const PetscInt kind = sched[3 * i], k = sched[3 * i + 1], m = sched[3 * i + 2];

    if (kind == 0)
      PetscCall(NetWalkForwardStep_Private(net, &fw, k, m));
    else if (kind == 1)
      PetscCall(NetPlaceOutputStep_Private(net, m, fn, ctx, dY));
    else
      PetscCall(NetWalkBackwardStep_Private(net, &bw, k, m));
  }
  PetscCall(NetWalkForwardEnd_Private(net, &fw, hit, NULL));
  if (Y) PetscCall(VecCopy(net->act[net->nlayers], Y));
  PetscCall(NetWalkBackwardEnd_Private(net, &bw));
  PetscFunctionReturn(0);
}
