/*
  The second-order adjoint of a Net (forward-over-reverse): the tangent of the backward pass along the tangent of the
  forward pass. With the tangents of the last NetJVP() (xdot_v for every value v, thetadot), the cotangent dY of the
  output and its tangent dYdot, nodes in reverse order:

    bar[in]   += J_in^T bar[k+1]                                         (the first-order adjoint of dY)
    bard[in]  += J_in^T bard[k+1]     + d/de[J_in   (.)^T] bar[k+1]       (its tangent)
    Hv        += J_theta^T bard[k+1]  + d/de[J_theta(.)^T] bar[k+1]

  where d/de[.] is each layer's curvature term along (xdot, thetadot) (LayerSOBackwardArray()). For a loss f(Y) with
  dY = f'(Y) and dYdot = f''(Y) J thetadot, Hv is the exact Hessian-vector product d^2 f(Y(theta))/dtheta^2 thetadot.
  The bar pass does not depend on the direction: it is kept for further products at the same point with the same dY.
  Fan-out (a value used by several nodes) sums cotangents through dsum[], as in NetBackward().
*/
#include <petnet/private/netimpl.h>

/*@
  NetHasSecondOrder - whether every node of the Net has the second-order kernel that exact Hessian-vector products
  (NetSecondOrderBackward()) need

  Not collective

  Input Parameter:
. net - the Net, set up

  Output Parameters:
+ has   - PETSC_TRUE if every node has one
- first - the first node without one, or -1 (NULL if not wanted)

  Level: intermediate

.seealso: `NetSecondOrderBackward()`, `LayerHasSecondOrder()`, `LossCreateNetHessian()`
@*/
PetscErrorCode NetHasSecondOrder(Net net, PetscBool *has, PetscInt *first)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidBoolPointer(has, 2);
  *has = PETSC_TRUE;
  if (first) *first = -1;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    PetscBool h;

    PetscCall(LayerHasSecondOrder(net->layers[k], &h));
    if (!h) {
      *has = PETSC_FALSE;
      if (first) *first = k;
      break;
    }
  }
  PetscFunctionReturn(0);
}

/* Refuses a Net with a node that has no second-order kernel, naming it */
static PetscErrorCode NetCheckSecondOrder_Private(Net net)
{
  PetscBool has;
  PetscInt  k;

  PetscFunctionBegin;
  PetscCall(NetHasSecondOrder(net, &has, &k));
  PetscCheck(has, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "Node %s (layer kind %s) has no second-order kernel, so the Net has no exact Hessian-vector products: use the Gauss-Newton operator (-trainer_hessian gn, -spectrum_hessian gn, LOSS_HESSIAN_GN), which needs only first derivatives",
             net->nodes[k].name, ((PetscObject)net->layers[k])->type_name);
  PetscFunctionReturn(0);
}

/* The workspace of the two reverse passes, like act[] (allocated on the first second-order product of a batch layout) */
static PetscErrorCode NetSetUpSecondOrder_Private(Net net)
{
  PetscFunctionBegin;
  if (net->bar) PetscFunctionReturn(0);
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->bar));
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->bard));
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    PetscCall(VecDuplicate(net->act[v], &net->bar[v]));
    PetscCall(VecDuplicate(net->act[v], &net->bard[v]));
  }
  PetscFunctionReturn(0);
}

/*
  One reverse pass over node k's inputs: opens the array each input's cotangent goes to (target[v] for the first
  contribution to v, dsum[v] for the others), or NULL where none is wanted (the Net's input without dX).
*/
static PetscErrorCode NetOpenInputCotangents_Private(Net net, PetscInt k, Vec *target, PetscBool wantinput, const PetscBool seeded[], PetscBool summed[], PetscScalar *dx[])
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nd->nin; i++) {
    PetscInt v = nd->in[i] + 1;

    dx[i]     = NULL;
    summed[i] = PETSC_FALSE;
    if (v == 0 && !wantinput) continue;
    summed[i] = seeded[v];
    /* the curvature term accumulates: a fresh target must start from what backward writes, so open it read-write */
    PetscCall(VecGetArray(summed[i] ? net->dsum[v] : target[v], &dx[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCloseInputCotangents_Private(Net net, PetscInt k, Vec *target, const PetscBool summed[], PetscScalar *dx[])
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nd->nin; i++) {
    PetscInt v = nd->in[i] + 1;

    if (!dx[i]) continue;
    PetscCall(VecRestoreArray(summed[i] ? net->dsum[v] : target[v], &dx[i]));
    if (summed[i]) PetscCall(VecAXPY(target[v], 1.0, net->dsum[v]));
  }
  PetscFunctionReturn(0);
}

/* The curvature term of node k into the open input arrays dxd[] and the node's gradient array hvk; th, thd: the node's
   parameters and their direction as its kernel takes them */
static PetscErrorCode NetNodeSOBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *thd, const PetscScalar *dy, PetscScalar *dxd[], PetscScalar *hvk)
{
  const NetNode     *nd    = &net->nodes[k];
  Layer              layer = net->layers[k];
  const PetscScalar *x, *xdot = NULL, *y, *ydot = NULL;

  PetscFunctionBegin;
  if (layer->sozero && !nd->mp && (!nd->sp || nd->nin > 1)) PetscFunctionReturn(0); /* a spatial join (add, concat) is linear too */
  PetscCheck(nd->nin == 1, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s (layer kind %s) takes %" PetscInt_FMT " inputs and has no second-order kernel for them: use the Gauss-Newton operator", nd->name, ((PetscObject)layer)->type_name,
             nd->nin);
  PetscCall(VecGetArrayRead(net->act[nd->in[0] + 1], &x));
  PetscCall(VecGetArrayRead(net->act[k + 1], &y));
  if (!net->tanzero[nd->in[0] + 1]) PetscCall(VecGetArrayRead(net->dact[nd->in[0] + 1], &xdot));
  if (!net->tanzero[k + 1]) PetscCall(VecGetArrayRead(net->dact[k + 1], &ydot));
  if (nd->mp)
    PetscCall(NetModelSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd[0], hvk));
  else if (nd->sp)
    PetscCall(NetSpatialSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd[0], hvk));
  else
    PetscCall(LayerSOBackwardArray(layer, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd[0], hvk));
  if (ydot) PetscCall(VecRestoreArrayRead(net->dact[k + 1], &ydot));
  if (xdot) PetscCall(VecRestoreArrayRead(net->dact[nd->in[0] + 1], &xdot));
  PetscCall(VecRestoreArrayRead(net->act[k + 1], &y));
  PetscCall(VecRestoreArrayRead(net->act[nd->in[0] + 1], &x));
  PetscFunctionReturn(0);
}

/*@
  NetSecondOrderBackward - the second-order adjoint at the last forward pass, along the tangents of the last NetJVP():
  given the output cotangent dY and its tangent dYdot, accumulates the tangent of the parameter gradient into Hv
  (and gives the tangent of the input cotangent).

  Collective

  Input Parameters:
+ net   - the Net, after NetForward() and then NetJVP() (whose tangents it uses: call nothing else in between)
. dY    - the output cotangent (for a loss f: df/dY)
- dYdot - its tangent along the JVP's direction (for a loss: (d^2 f/dY^2) dY_jvp, LossHessianMult()), or NULL (zero)

  Output Parameters:
+ dXdot - the tangent of the input cotangent (overwritten), or NULL
- Hv    - accumulates the tangent of J_theta^T dY, laid out like the parameter Vec (NetBackward()'s gradient); for
          a loss, d^2 f(Y(theta))/dtheta^2 v when the JVP's direction was (dX = NULL, dtheta = v)

  Notes:
  Every node's kind needs a second-order kernel (NetHasSecondOrder()); the ode kind has none, and the error says so.
  The first-order cotangents of dY are kept: further products at the same point with the same dY cost one JVP and
  one backward pass each (about three forward passes in all, against two for the Gauss-Newton product).

  Level: advanced

.seealso: `NetJVP()`, `NetBackward()`, `LayerSOBackwardArray()`, `LossCreateNetHessian()`, `NetHasSecondOrder()`
@*/
PetscErrorCode NetSecondOrderBackward(Net net, Vec dY, Vec dYdot, Vec dXdot, Vec Hv)
{
  const PetscScalar *theta, *thetadot = NULL;
  PetscScalar       *hv = NULL, *stack[NET_MAX_STACK_INPUTS], **dx = stack;
  Vec                tdir = net->tandtheta ? net->tandthetavec : NULL;
  PetscBool         *seeded, *summed;
  PetscInt           maxin = 0;
  PetscObjectState   state;
  PetscBool          barcached;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 2);
  PetscCall(NetCheckDoublePrecision_Private(net, "NetSecondOrderBackward()"));
  PetscCheck(net->forwarded, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetSecondOrderBackward() differentiates at the last forward pass, and there is none: call NetForward(), then NetJVP() along the direction");
  PetscCheck(net->tanvalid, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER,
             "NetSecondOrderBackward() needs the tangents of a NetJVP() at the last forward pass (and NetBackward() in between overwrites them): call NetJVP() along the direction first");
  PetscCall(NetCheckSecondOrder_Private(net));
  PetscCall(NetCheckInputUnchanged_Private(net));
  PetscCall(NetCheckParametersUnchanged_Private(net, "NetSecondOrderBackward"));
  {
    PetscInt n, m;

    PetscCall(VecGetLocalSize(dY, &n));
    PetscCall(VecGetLocalSize(net->act[net->nlayers], &m));
    PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Output cotangent dY has %" PetscInt_FMT " local entries, expected %" PetscInt_FMT, n, m);
    if (dYdot) {
      PetscCall(VecGetLocalSize(dYdot, &n));
      PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Output cotangent tangent dYdot has %" PetscInt_FMT " local entries, expected %" PetscInt_FMT, n, m);
    }
    if (dXdot) {
      PetscCall(VecGetLocalSize(dXdot, &n));
      PetscCall(VecGetLocalSize(net->act[0], &m));
      PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Input tangent dXdot has %" PetscInt_FMT " local entries, expected %" PetscInt_FMT, n, m);
    }
  }
  PetscCall(NetSetUpSecondOrder_Private(net));
  PetscCall(PetscObjectStateGet((PetscObject)dY, &state));
  barcached = (PetscBool)(net->barY == dY && net->barYstate == state && net->barforward == net->nforward);
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  if (maxin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(maxin, &dx));
  PetscCall(PetscCalloc2(net->nlayers + 1, &seeded, maxin, &summed));
  if (!barcached) PetscCall(VecCopy(dY, net->bar[net->nlayers]));
  if (dYdot)
    PetscCall(VecCopy(dYdot, net->bard[net->nlayers]));
  else
    PetscCall(VecZeroEntries(net->bard[net->nlayers]));
  seeded[net->nlayers] = PETSC_TRUE;
  PetscCall(NetGetGradientArray_Private(net, Hv, &hv)); /* G's own on one rank, else grad_rep (netpmap.c) */
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  if (tdir && net->dtheta_rep) PetscCall(VecGetArrayRead(net->dtheta_rep, &thetadot));
  for (PetscInt k = net->nlayers - 1; k >= 0; k--) {
    const NetNode     *nd = &net->nodes[k];
    const PetscScalar *dy, *th, *thd;
    PetscScalar       *hvk;

    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    /* the first-order pass: the cotangents of dY (no parameter part) */
    if (!barcached) {
      PetscCall(NetOpenInputCotangents_Private(net, k, net->bar, PETSC_FALSE, seeded, summed, dx)); /* bar[0] is never read */
      PetscCall(VecGetArrayRead(net->bar[k + 1], &dy));
      PetscCall(NetNodeBackwardArrays_Private(net, k, th, dy, dx, NULL));
      PetscCall(VecRestoreArrayRead(net->bar[k + 1], &dy));
      PetscCall(NetCloseInputCotangents_Private(net, k, net->bar, summed, dx));
    }
    /* its tangent: backward of bard, plus the curvature term along the forward tangents with bar held fixed */
    PetscCall(NetNodeGetParameters_Private(net, k, tdir, thetadot, &thd));
    PetscCall(NetNodeGetGradient_Private(net, k, hv, (PetscBool)(Hv != NULL), &hvk));
    PetscCall(NetOpenInputCotangents_Private(net, k, net->bard, (PetscBool)(dXdot != NULL), seeded, summed, dx));
    PetscCall(VecGetArrayRead(net->bard[k + 1], &dy));
    PetscCall(NetNodeBackwardArrays_Private(net, k, th, dy, dx, hvk));
    PetscCall(VecRestoreArrayRead(net->bard[k + 1], &dy));
    PetscCall(VecGetArrayRead(net->bar[k + 1], &dy));
    PetscCall(NetNodeSOBackward_Private(net, k, th, thd, dy, dx, hvk));
    PetscCall(VecRestoreArrayRead(net->bar[k + 1], &dy));
    PetscCall(NetCloseInputCotangents_Private(net, k, net->bard, summed, dx));
    PetscCall(NetNodeRestoreGradient_Private(net, k, Hv, &hvk));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &thd));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    for (PetscInt i = 0; i < nd->nin; i++) seeded[nd->in[i] + 1] = PETSC_TRUE;
  }
  if (thetadot) PetscCall(VecRestoreArrayRead(net->dtheta_rep, &thetadot));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(PetscFree2(seeded, summed));
  if (dx != stack) PetscCall(PetscFree(dx));
  net->barY       = dY;
  net->barYstate  = state;
  net->barforward = net->nforward;
  if (dXdot) PetscCall(VecCopy(net->bard[0], dXdot));
  PetscCall(NetRestoreGradientArray_Private(net, Hv, &hv));
  PetscFunctionReturn(0);
}
