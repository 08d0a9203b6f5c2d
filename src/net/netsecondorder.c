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

/*
  One reverse pass over node k's inputs: opens the array each input's cotangent goes to (slot s of v for the first
  contribution to v, its fan-out sum for the others), or NULL where none is wanted (the Net's input without dX). The
  second-order adjoint computes in double: in low precision the store widens every array and rounds it back.
*/
static PetscErrorCode NetOpenInputCotangents_Private(Net net, PetscInt k, NetSlot s, PetscBool wantinput, const PetscBool seeded[], PetscBool summed[], void *dx[])
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
    PetscCall(NetStore(net)->get(net, summed[i] ? NET_SLOT_SUM : s, v, NET_READWRITE, NET_ELEM_DOUBLE, &dx[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCloseInputCotangents_Private(Net net, PetscInt k, NetSlot s, PetscBool wantinput, const PetscBool summed[], void *dx[])
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nd->nin; i++) {
    PetscInt v = nd->in[i] + 1;

    if (v == 0 && !wantinput) continue;
    PetscCall(NetStore(net)->restore(net, summed[i] ? NET_SLOT_SUM : s, v, NET_READWRITE, NET_ELEM_DOUBLE, &dx[i]));
    if (summed[i]) PetscCall(NetStore(net)->addsum(net, s, v));
  }
  PetscFunctionReturn(0);
}

/* The curvature term of a join that has one (a bilinear einsum: each input's term pairs dy with the other inputs'
   tangents): its values and tangents in double, the layer's kernel on the node's samples. A join whose inputs are
   joined point by point runs in the plain executor (a join of a grid whose inputs share the ownership too); one whose
   inputs the spatial executor repartitions first is not supported here yet. */
static PetscErrorCode NetNodeSOBackwardJoin_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *thd, const PetscScalar *dy, PetscScalar *dxd[], PetscScalar *hvk)
{
  const NetStoreOps *store = NetStore(net);
  const NetNode     *nd    = &net->nodes[k];
  Layer              layer = net->layers[k];
  void              *xs[NET_MAX_STACK_INPUTS], *xds[NET_MAX_STACK_INPUTS], *y, *ydot = NULL;

  PetscFunctionBegin;
  PetscCheck(nd->exec == &NetExecPlain && nd->nin <= NET_MAX_STACK_INPUTS, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "Node %s (layer kind %s) joins %" PetscInt_FMT " inputs that grid mode repartitions before they meet: its second-order term runs only where the inputs meet point by point (the same ownership); use the Gauss-Newton operator", nd->name,
             ((PetscObject)layer)->type_name, nd->nin);
  for (PetscInt i = 0; i < nd->nin; i++) {
    const PetscInt v = nd->in[i] + 1;

    xds[i] = NULL;
    PetscCall(store->get(net, NET_SLOT_VALUE, v, NET_READ, NET_ELEM_DOUBLE, &xs[i]));
    if (!net->tanzero[v]) PetscCall(store->get(net, NET_SLOT_TANGENT, v, NET_READ, NET_ELEM_DOUBLE, &xds[i]));
  }
  PetscCall(store->get(net, NET_SLOT_VALUE, k + 1, NET_READ, NET_ELEM_DOUBLE, &y));
  if (!net->tanzero[k + 1]) PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, &ydot));
  PetscCall(LayerSOBackwardArrays(layer, NetNodeCount(net, k), th, (const PetscScalar *const *)xs, (const PetscScalar *)y, (const PetscScalar *const *)xds, thd, (const PetscScalar *)ydot, dy, dxd, hvk));
  if (ydot) PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, &ydot));
  PetscCall(store->restore(net, NET_SLOT_VALUE, k + 1, NET_READ, NET_ELEM_DOUBLE, &y));
  for (PetscInt i = nd->nin - 1; i >= 0; i--) {
    const PetscInt v = nd->in[i] + 1;

    if (xds[i]) PetscCall(store->restore(net, NET_SLOT_TANGENT, v, NET_READ, NET_ELEM_DOUBLE, &xds[i]));
    PetscCall(store->restore(net, NET_SLOT_VALUE, v, NET_READ, NET_ELEM_DOUBLE, &xs[i]));
  }
  PetscFunctionReturn(0);
}

/* The curvature term of node k into the open input arrays dxd[] and the node's gradient array hvk; th, thd: the node's
   parameters and their direction as its kernel takes them */
static PetscErrorCode NetNodeSOBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *thd, const PetscScalar *dy, PetscScalar *dxd[], PetscScalar *hvk)
{
  const NetStoreOps *store = NetStore(net);
  const NetNode     *nd    = &net->nodes[k];
  Layer              layer = net->layers[k];
  void              *x, *xdot = NULL, *y, *ydot = NULL;
  const PetscInt     v = nd->in[0] + 1;

  PetscFunctionBegin;
  PetscCheck(nd->nin == 1 || layer->sozero || layer->ops->sobackwardn, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s (layer kind %s) takes %" PetscInt_FMT " inputs and has no second-order kernel for them: use the Gauss-Newton operator",
             nd->name, ((PetscObject)layer)->type_name, nd->nin);
  if (nd->nin > 1 && layer->sozero) PetscFunctionReturn(0); /* a linear join (add, concat) */
  if (nd->nin > 1) {                                        /* a bilinear join (einsum of two operands) */
    PetscCall(NetNodeSOBackwardJoin_Private(net, k, th, thd, dy, dxd, hvk));
    PetscFunctionReturn(0);
  }
  PetscCall(store->get(net, NET_SLOT_VALUE, v, NET_READ, NET_ELEM_DOUBLE, &x));
  PetscCall(store->get(net, NET_SLOT_VALUE, k + 1, NET_READ, NET_ELEM_DOUBLE, &y));
  if (!net->tanzero[v]) PetscCall(store->get(net, NET_SLOT_TANGENT, v, NET_READ, NET_ELEM_DOUBLE, &xdot));
  if (!net->tanzero[k + 1]) PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, &ydot));
  PetscCall(nd->exec->sobackward(net, k, th, (const PetscScalar *)x, (const PetscScalar *)y, (const PetscScalar *)xdot, thd, (const PetscScalar *)ydot, dy, dxd[0], hvk));
  if (ydot) PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, &ydot));
  if (xdot) PetscCall(store->restore(net, NET_SLOT_TANGENT, v, NET_READ, NET_ELEM_DOUBLE, &xdot));
  PetscCall(store->restore(net, NET_SLOT_VALUE, k + 1, NET_READ, NET_ELEM_DOUBLE, &y));
  PetscCall(store->restore(net, NET_SLOT_VALUE, v, NET_READ, NET_ELEM_DOUBLE, &x));
  PetscFunctionReturn(0);
}

/*
  The second-order adjoint of a placed Net (netplace.c): the backward walk's schedule of steps (node k, micro-batch m) in
  reverse, each node's bar and bard passes on its rows of m. An input from another group is written to its move's
  buffer and sent back after the pass (NetPlaceSOSendBack_Private()); an input of the node's own group opens the store's
  slot as above, its fan-out seeded per micro-batch. The parameter parts accumulate micro-batch by micro-batch.
  The bar pass is not kept between calls here (the output move's buffer holds bar and bard in turn).
*/
static PetscErrorCode NetSecondOrderBackwardPlaced_Private(Net net, PetscBool wantinput, Vec Hv, PetscScalar *hv, const PetscScalar *theta, const PetscScalar *thetadot, Vec tdir)
{
  const NetStoreOps *store = NetStore(net);
  void              *stack[NET_MAX_STACK_INPUTS], **dx = stack;
  PetscBool          summed[NET_MAX_STACK_INPUTS];
  PetscInt           nsteps;
  const PetscInt    *sched;

  PetscFunctionBegin;
  PetscCall(NetPlaceSOBegin_Private(net));
  PetscCall(NetPlaceGetSchedule_Private(net, &nsteps, &sched));
  for (PetscInt step = nsteps - 1; step >= 0; step--) {
    const PetscInt     k = sched[2 * step], m = sched[2 * step + 1];
    const NetNode     *nd   = &net->nodes[k];
    const PetscBool    last = (PetscBool)(k == net->nlayers - 1);
    const PetscScalar *th, *thd;
    void              *dy;
    PetscScalar       *hvk;

    PetscCheck(nd->nin <= NET_MAX_STACK_INPUTS, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s takes %" PetscInt_FMT " inputs: the placed second-order adjoint takes at most %d", nd->name, nd->nin, NET_MAX_STACK_INPUTS);
    PetscCheck(nd->nin == 1 || net->layers[k]->sozero, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
               "Node %s (layer kind %s) joins %" PetscInt_FMT " inputs with a curvature term of its own, which the placed second-order adjoint does not run yet: use the Gauss-Newton operator (-trainer_hessian gn), or drop the placement", nd->name,
               ((PetscObject)net->layers[k])->type_name, nd->nin);
    PetscCall(store->nextnode(net));
    PetscCall(NetPlaceSetStep_Private(net, m));
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    for (PetscInt pass = 0; pass < 2; pass++) { /* 0: bar, the cotangents of dY; 1: bard, their tangent, and Hv */
      const NetSlot   s    = pass ? NET_SLOT_BARD : NET_SLOT_BAR;
      const PetscBool want = (PetscBool)(pass && wantinput);

      if (last) PetscCall(NetPlaceSOOutput_Private(net, s)); /* dY's bar or bard rows to the last node's stage */
      PetscCall(NetPlaceSOWantInput_Private(net, want));
      for (PetscInt i = 0; i < nd->nin; i++) { /* the inputs of the node's own group: the store's slot, seeded per micro-batch */
        const PetscInt v = nd->in[i] + 1;

        dx[i]     = NULL;
        summed[i] = PETSC_FALSE;
        if ((v == 0 && !want) || NetPlaceCrossing_Private(net, k, i)) continue;
        summed[i] = *NetPlaceSeeded_Private(net, v);
        PetscCall(store->get(net, summed[i] ? NET_SLOT_SUM : s, v, NET_READWRITE, NET_ELEM_DOUBLE, &dx[i]));
      }
      hvk = NULL;
      if (pass) PetscCall(NetNodeGetParameters_Private(net, k, tdir, thetadot, &thd));
      if (pass) PetscCall(NetNodeGetGradient_Private(net, k, hv, (PetscBool)(Hv != NULL), &hvk));
      PetscCall(store->get(net, s, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
      PetscCall(NetNodeBackwardArrays_Private(net, k, NET_ELEM_DOUBLE, th, dy, dx, hvk, -1));
      PetscCall(store->restore(net, s, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
      if (pass) { /* the curvature term along the forward tangents, bar held fixed */
        if (last) PetscCall(NetPlaceSOOutput_Private(net, NET_SLOT_BAR));
        PetscCall(store->get(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
        PetscCall(NetNodeSOBackward_Private(net, k, th, thd, (const PetscScalar *)dy, (PetscScalar **)dx, hvk));
        PetscCall(store->restore(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
        PetscCall(NetNodeRestoreGradient_Private(net, k, Hv, &hvk));
        PetscCall(NetNodeRestoreParameters_Private(net, k, &thd));
      }
      for (PetscInt i = 0; i < nd->nin; i++) {
        const PetscInt v = nd->in[i] + 1;

        if ((v == 0 && !want) || NetPlaceCrossing_Private(net, k, i)) continue;
        PetscCall(store->restore(net, summed[i] ? NET_SLOT_SUM : s, v, NET_READWRITE, NET_ELEM_DOUBLE, &dx[i]));
        if (summed[i]) PetscCall(store->addsum(net, s, v));
      }
      PetscCall(NetPlaceSOSendBack_Private(net, k, s, want, pass)); /* the other groups' inputs: sent back, put in */
    }
    for (PetscInt i = 0; i < nd->nin; i++)
      if (!NetPlaceCrossing_Private(net, k, i)) *NetPlaceSeeded_Private(net, nd->in[i] + 1) = PETSC_TRUE;
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  }
  PetscCall(store->nextnode(net));
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
  const NetStoreOps *store = NetStore(net);
  const PetscScalar *theta, *thetadot = NULL;
  PetscScalar       *hv = NULL;
  void              *stack[NET_MAX_STACK_INPUTS], **dx = stack;
  Vec                tdir = net->tandtheta ? net->tandthetavec : NULL;
  PetscBool         *seeded, *summed;
  PetscInt           maxin = 0;
  PetscObjectState   state;
  PetscBool          barcached;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dY, VEC_CLASSID, 2);
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
  PetscCall(PetscObjectStateGet((PetscObject)dY, &state));
  barcached = (PetscBool)(!net->pl && net->barY == dY && net->barYstate == state && net->barforward == net->nforward);
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  if (maxin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(maxin, &dx));
  PetscCall(PetscCalloc2(net->nlayers + 1, &seeded, maxin, &summed));
  if (!barcached) PetscCall(store->fromvec(net, dY, NET_SLOT_BAR, net->nlayers));
  if (dYdot)
    PetscCall(store->fromvec(net, dYdot, NET_SLOT_BARD, net->nlayers));
  else {
    void *z;

    PetscCall(store->get(net, NET_SLOT_BARD, net->nlayers, NET_WRITE, NET_ELEM_DOUBLE, &z));
    PetscCall(PetscArrayzero((PetscScalar *)z, net->vlocal[net->nlayers] * net->layers[net->nlayers - 1]->outsize));
    PetscCall(store->restore(net, NET_SLOT_BARD, net->nlayers, NET_WRITE, NET_ELEM_DOUBLE, &z));
  }
  seeded[net->nlayers] = PETSC_TRUE;
  PetscCall(NetGetGradientArray_Private(net, Hv, &hv)); /* G's own on one rank, else grad_rep (netpmap.c) */
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  if (tdir && net->dtheta_rep) PetscCall(VecGetArrayRead(net->dtheta_rep, &thetadot));
  if (net->pl) PetscCall(NetSecondOrderBackwardPlaced_Private(net, (PetscBool)(dXdot != NULL), Hv, hv, theta, thetadot, tdir)); /* placed: the steps of its schedule */
  for (PetscInt k = net->pl ? -1 : net->nlayers - 1; k >= 0; k--) {
    const NetNode     *nd = &net->nodes[k];
    const PetscScalar *th, *thd;
    void              *dy;
    PetscScalar       *hvk;

    PetscCall(store->nextnode(net));
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    /* the first-order pass: the cotangents of dY (no parameter part) */
    if (!barcached) {
      PetscCall(NetOpenInputCotangents_Private(net, k, NET_SLOT_BAR, PETSC_FALSE, seeded, summed, dx)); /* bar[0] is never read */
      PetscCall(store->get(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
      PetscCall(NetNodeBackwardArrays_Private(net, k, NET_ELEM_DOUBLE, th, dy, dx, NULL, -1));
      PetscCall(store->restore(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
      PetscCall(NetCloseInputCotangents_Private(net, k, NET_SLOT_BAR, PETSC_FALSE, summed, dx));
      PetscCall(store->nextnode(net));
    }
    /* its tangent: backward of bard, plus the curvature term along the forward tangents with bar held fixed */
    PetscCall(NetNodeGetParameters_Private(net, k, tdir, thetadot, &thd));
    PetscCall(NetNodeGetGradient_Private(net, k, hv, (PetscBool)(Hv != NULL), &hvk));
    PetscCall(NetOpenInputCotangents_Private(net, k, NET_SLOT_BARD, (PetscBool)(dXdot != NULL), seeded, summed, dx));
    PetscCall(store->get(net, NET_SLOT_BARD, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
    PetscCall(NetNodeBackwardArrays_Private(net, k, NET_ELEM_DOUBLE, th, dy, dx, hvk, -1));
    PetscCall(store->restore(net, NET_SLOT_BARD, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
    PetscCall(store->get(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
    PetscCall(NetNodeSOBackward_Private(net, k, th, thd, (const PetscScalar *)dy, (PetscScalar **)dx, hvk));
    PetscCall(store->restore(net, NET_SLOT_BAR, k + 1, NET_READ, NET_ELEM_DOUBLE, &dy));
    PetscCall(NetCloseInputCotangents_Private(net, k, NET_SLOT_BARD, (PetscBool)(dXdot != NULL), summed, dx));
    PetscCall(NetNodeRestoreGradient_Private(net, k, Hv, &hvk));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &thd));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    for (PetscInt i = 0; i < nd->nin; i++) seeded[nd->in[i] + 1] = PETSC_TRUE;
  }
  PetscCall(store->nextnode(net));
  if (thetadot) PetscCall(VecRestoreArrayRead(net->dtheta_rep, &thetadot));
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(PetscFree2(seeded, summed));
  if (dx != stack) PetscCall(PetscFree(dx));
  net->barY       = dY;
  net->barYstate  = state;
  net->barforward = net->nforward;
  if (dXdot) PetscCall(store->tovec(net, NET_SLOT_BARD, 0, dXdot));
  PetscCall(NetRestoreGradientArray_Private(net, Hv, &hv));
  PetscFunctionReturn(0);
}
