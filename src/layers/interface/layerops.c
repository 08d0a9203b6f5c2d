/* Layer kernels on local arrays, wrapped in one log event per kind and phase (e.g. "dense:Forward"). */
#include <petnet/private/layerimpl.h>

static const char *const LayerPhaseNames[LAYER_NUM_PHASES] = {"Forward", "Backward", "JVP", "SOBackward"};

/* Registers the log events "kind:Forward", "kind:Backward" and "kind:JVP" of a layer kind (from LayerRegister()). */
PetscErrorCode LayerRegisterEvents_Private(LayerType type)
{
  PetscFunctionBegin;
  for (int p = 0; p < LAYER_NUM_PHASES; p++) {
    char          name[128];
    PetscLogEvent event;

    PetscCall(PetscSNPrintf(name, sizeof(name), "%s:%s", type, LayerPhaseNames[p]));
    PetscCall(PetscLogEventRegister(name, LAYER_CLASSID, &event));
  }
  PetscFunctionReturn(0);
}

/* The log events of a registered layer kind, one per phase (from LayerSetType()). */
PetscErrorCode LayerGetEvents_Private(LayerType type, PetscLogEvent event[])
{
  PetscFunctionBegin;
  for (int p = 0; p < LAYER_NUM_PHASES; p++) {
    char name[128];

    PetscCall(PetscSNPrintf(name, sizeof(name), "%s:%s", type, LayerPhaseNames[p]));
    PetscCall(PetscLogEventGetId(name, &event[p]));
    PetscCheck(event[p] >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "No log event %s: layer kind %s was not registered with LayerRegister()", name, type);
  }
  PetscFunctionReturn(0);
}

/*@
  LayerInitializeParameters - fills a layer's parameter block with its kind's initial values

  Collective (it sets the layer up if needed)

  Input Parameters:
+ layer - the layer
- rnd   - the random generator to draw from (uniform on [0, 1)); the same sequential stream on every rank gives the
          same parameters on every rank

  Output Parameter:
. theta - the layer's parameters, LayerGetNumParameters() entries (untouched if it has none)

  Notes:
  dense draws its weights as LayerDenseSetInitialization() says (LayerInitializeWeights()) and zeroes its biases;
  batchnorm starts with gamma = 1 and beta = 0; an ode layer initialises its inner Net's layers in turn from rnd; a kind
  without an initialisation of its own gets zeros. NetInitializeParameters() calls this for every node in order.

  Level: developer

.seealso: `NetInitializeParameters()`, `LayerInitializeWeights()`, `LayerDenseSetInitialization()`, `LayerGetNumParameters()`
@*/
PetscErrorCode LayerInitializeParameters(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  PetscFunctionBegin;
  PetscCall(LayerSetUp(layer));
  if (!layer->nparams) PetscFunctionReturn(0);
  if (layer->ops->initialize)
    PetscUseTypeMethod(layer, initialize, rnd, theta);
  else
    PetscCall(PetscArrayzero(theta, layer->nparams));
  PetscFunctionReturn(0);
}

/*@C
  LayerForwardArray - y[n][out] = f(x[n][in]; theta) on this rank's n samples.

  Collective (some kinds reduce over the layer's communicator: batchnorm and dropout in training mode, ode)

  Input Parameters:
+ layer - the layer, set up, with one input
. n     - the number of local samples (a rank with none still calls, with NULL arrays, for the collective kinds)
. theta - the layer's own parameters, LayerGetNumParameters() entries (NULL if it has none)
- x     - the input, n * (input size) entries, sample-major and channels last

  Output Parameter:
. y - the output, n * (output size) entries

  Notes:
  The kind keeps what its derivatives need: LayerBackwardArray() and LayerJVPArray() follow with the same n, theta, x
  and y, the linearization point. The call is logged in the event "<kind>:Forward". Joins (add, concat) take
  LayerForwardArrays().

  Level: developer

.seealso: `LayerBackwardArray()`, `LayerJVPArray()`, `LayerForwardArrays()`, `NetForward()`
@*/
PetscErrorCode LayerForwardArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, forward, n, theta, x, y);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  LayerForwardAct - forward of a layer with one input, followed by the activation act applied in the layer's own output
  pass: y = act(f(x; theta)), the same bits as LayerForwardArray() then act's forward. t is PETSC_SCALAR (x, y double)
  or PETSC_FLOAT (x, y float, LayerForwardSingle()). The kind must offer it (ops forwardact or forwardactsingle, and
  act the matching activate): its owner checks that before choosing to call it.
*/
PetscErrorCode LayerForwardAct(Layer layer, Layer act, PetscDataType t, PetscInt n, const PetscScalar *theta, const void *x, void *y)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  if (t == PETSC_FLOAT)
    PetscUseTypeMethod(layer, forwardactsingle, act, n, theta, (const float *)x, (float *)y);
  else
    PetscUseTypeMethod(layer, forwardact, act, n, theta, (const PetscScalar *)x, (PetscScalar *)y);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  LayerBackwardMask - backward of a layer with one input whose input x is the output of the activation act, with act's
  derivative applied in the layer's own output pass: dx = act'(x) J_x^T dy, dtheta += J_theta^T dy; the same bits as
  LayerBackwardArray() then act's backward. t as in LayerForwardAct().
*/
PetscErrorCode LayerBackwardMask(Layer layer, Layer act, PetscDataType t, PetscInt n, const PetscScalar *theta, const void *x, const void *y, const void *dy, void *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n && !layer->collective) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  if (t == PETSC_FLOAT)
    PetscUseTypeMethod(layer, backwardmasksingle, act, n, theta, (const float *)x, (const float *)y, (const float *)dy, (float *)dx, dtheta);
  else
    PetscUseTypeMethod(layer, backwardmask, act, n, theta, (const PetscScalar *)x, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *)dx, dtheta);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerBackwardArray - the vector-Jacobian product at the point (theta, x, y): dx = J_x^T dy (if dx),
  dtheta += J_theta^T dy (if dtheta).

  Collective (some kinds reduce over the layer's communicator, e.g. batchnorm in training mode)

  Input Parameters:
+ layer - the layer, after LayerForwardArray() at this point
. n     - the number of local samples
. theta - the layer's own parameters (NULL if it has none)
. x     - the input of the forward pass
. y     - its output
- dy    - the output cotangent, n * (output size) entries

  Output Parameters:
+ dx     - the input cotangent, n * (input size) entries, overwritten; NULL to skip
- dtheta - the parameter cotangent, LayerGetNumParameters() entries, ACCUMULATED into (zero it first for
           J_theta^T dy alone); NULL to skip; ignored by a layer without parameters

  Notes:
  dtheta receives this rank's samples' contribution only: a Net adds up the ranks' contributions with the transpose of
  its parameter broadcast. With nothing asked for (dx and dtheta NULL) a rank with samples returns at once. Logged in
  the event "<kind>:Backward".

  Level: developer

.seealso: `LayerForwardArray()`, `LayerJVPArray()`, `LayerBackwardArrays()`, `NetBackward()`
@*/
PetscErrorCode LayerBackwardArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n && !layer->collective) PetscFunctionReturn(0); /* a rank with no samples (NULL arrays) still joins collective kernels (batchnorm) */
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, backward, n, theta, x, y, dy, dx, dtheta);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerSOBackwardArray - the curvature term of the layer's second-order adjoint at the point (theta, x, y): the
  derivative of LayerBackwardArray()'s outputs along the tangent (xdot, thetadot), with the cotangent dy held fixed.

  Collective (some kinds reduce over the layer's communicator, e.g. batchnorm in training mode)

  Input Parameters:
+ layer    - the layer, after LayerForwardArray() at this point
. n        - the number of local samples
. theta    - the layer's own parameters (NULL if it has none)
. x        - the input of the forward pass
. y        - its output
. xdot     - the input tangent, or NULL (zero)
. thetadot - the parameter tangent, or NULL (zero)
. ydot     - the output tangent J_x xdot + J_theta thetadot (LayerJVPArray()), or NULL when both tangents are zero
- dy       - the output cotangent held fixed

  Output Parameters:
+ dxdot     - accumulates d/de [J_x(x + e xdot, theta + e thetadot)^T dy] (NULL: skipped)
- dthetadot - accumulates d/de [J_theta(x + e xdot, theta + e thetadot)^T dy] (NULL: skipped)

  Notes:
  The tangent of the whole adjoint (forward-over-reverse) is LayerBackwardArray() of the cotangent's own tangent plus
  this term; NetSecondOrderBackward() adds the two for every node. A kind whose term is identically zero (linear in
  (x, theta) together, or piecewise linear) returns at once. Logged in the event "<kind>:SOBackward".

  Level: developer

.seealso: `LayerHasSecondOrder()`, `LayerBackwardArray()`, `LayerJVPArray()`, `NetSecondOrderBackward()`
@*/
PetscErrorCode LayerSOBackwardArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                    PetscScalar *dxdot, PetscScalar *dthetadot)
{
  PetscFunctionBegin;
  if (layer->sozero) PetscFunctionReturn(0);
  PetscCheck(layer->ops->sobackward, PetscObjectComm((PetscObject)layer), PETSC_ERR_SUP, "Layer %" PetscInt_FMT " (kind %s) has no second-order kernel, so no exact Hessian-vector products: use the Gauss-Newton operator (-trainer_hessian gn)",
             layer->index, ((PetscObject)layer)->type_name);
  if (!layer->nparams) thetadot = dthetadot = NULL;
  if (!xdot && !thetadot && n && !layer->collective) PetscFunctionReturn(0); /* zero tangent: zero term (an empty rank still joins collective kernels) */
  if (!dxdot && !dthetadot && n && !layer->collective) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_SOBACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, sobackward, n, theta, x, y, xdot, thetadot, ydot, dy, dxdot, dthetadot);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_SOBACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@
  LayerHasSecondOrder - whether the layer's kind computes the curvature term of its second-order adjoint
  (LayerSOBackwardArray()), which exact Hessian-vector products need

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. has - PETSC_TRUE if it does (or the term is identically zero for the kind)

  Notes:
  Every built-in kind has it: dense, conv2d (every kernel family and grid mode), gcn, sage, mpnn, tanh, sigmoid, gelu, softplus and
  batchnorm compute it; identity, relu, leakyrelu, the pools, flatten, dropout, add and concat have a zero term. The ode
  kind has none (the Gauss-Newton operator needs none).

  Level: developer

.seealso: `LayerSOBackwardArray()`, `NetSecondOrderBackward()`
@*/
PetscErrorCode LayerHasSecondOrder(Layer layer, PetscBool *has)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidBoolPointer(has, 2);
  *has = (layer->sozero || layer->ops->sobackward || layer->ops->sobackwardn) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  LayerJVPArray - the Jacobian-vector product at the point (theta, x, y): dy = J_x dx + J_theta dtheta; a NULL dx or
  dtheta counts as zero.

  Collective (some kinds reduce over the layer's communicator, e.g. batchnorm in training mode)

  Input Parameters:
+ layer  - the layer, after LayerForwardArray() at this point
. n      - the number of local samples
. theta  - the layer's own parameters (NULL if it has none)
. x      - the input of the forward pass
. y      - its output
. dx     - the input tangent, n * (input size) entries, or NULL (zero)
- dtheta - the parameter tangent, LayerGetNumParameters() entries, or NULL (zero)

  Output Parameter:
. dy - the output tangent, n * (output size) entries, overwritten (zeroed when both tangents are NULL)

  Notes:
  Logged in the event "<kind>:JVP".

  Level: developer

.seealso: `LayerForwardArray()`, `LayerBackwardArray()`, `LayerJVPArrays()`, `NetJVP()`
@*/
PetscErrorCode LayerJVPArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n && !layer->collective) { /* a rank with no samples (NULL arrays) still joins collective kernels (batchnorm) */
    PetscCall(PetscArrayzero(dy, n * layer->outsize));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, jvp, n, theta, x, y, dx, dtheta, dy);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  The same kernels for any number of inputs: x[k] is input k ([n][in_k]), dx[k] its tangent or cotangent. A layer of
  one input runs its forward/backward/jvp on x[0]; a join (add, concat) its forwardn/backwardn/jvpn.
*/

/*@C
  LayerForwardArrays - y[n][out] = f(x_0, ..., x_{nin-1}; theta) on this rank's n samples.

  Collective (some kinds reduce over the ranks, e.g. batch normalisation)

  Input Parameters:
+ layer - the layer, set up
. n     - the number of local samples
. theta - the layer's own parameters (NULL if it has none)
- x     - the nin input arrays, x[k] of n * (size of input k) entries

  Output Parameter:
. y - the output array, n * (output size) entries

  Level: developer

.seealso: `LayerForwardArray()`, `LayerBackwardArrays()`, `LayerJVPArrays()`
@*/
PetscErrorCode LayerForwardArrays(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], PetscScalar *y)
{
  PetscFunctionBegin;
  if (!layer->ops->forwardn) {
    PetscCall(LayerForwardArray(layer, n, theta, x[0], y));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, forwardn, n, theta, x, y);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerBackwardArrays - dx[k] = J_k^T dy for every k with dx[k] not NULL; dtheta += J_theta^T dy (if dtheta).

  Collective

  Input Parameters:
+ layer  - the layer, after LayerForwardArrays() at the same point
. n      - the number of local samples
. theta  - the layer's own parameters
. x      - the nin input arrays of the forward pass
. y      - its output
- dy     - the output cotangent

  Output Parameters:
+ dx     - the nin input cotangents (overwritten; a NULL entry is skipped)
- dtheta - the parameter cotangent, accumulated into (NULL: skipped)

  Level: developer

.seealso: `LayerBackwardArray()`, `LayerForwardArrays()`
@*/
PetscErrorCode LayerBackwardArrays(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *dy, PetscScalar *const dx[], PetscScalar *dtheta)
{
  PetscBool any = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->ops->backwardn) {
    PetscCall(LayerBackwardArray(layer, n, theta, x[0], y, dy, dx[0], dtheta));
    PetscFunctionReturn(0);
  }
  if (!layer->nparams) dtheta = NULL;
  for (PetscInt k = 0; k < layer->nin; k++) any = (PetscBool)(any || dx[k]);
  if (!any && !dtheta && n) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, backwardn, n, theta, x, y, dy, dx, dtheta);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerJVPArrays - dy = sum_k J_k dx[k] + J_theta dtheta; a NULL dx[k] or dtheta counts as zero.

  Collective

  Input Parameters:
+ layer  - the layer, after LayerForwardArrays() at the same point
. n      - the number of local samples
. theta  - the layer's own parameters
. x      - the nin input arrays of the forward pass
. y      - its output
. dx     - the nin input tangents (NULL entries are zero)
- dtheta - the parameter tangent (NULL: zero)

  Output Parameter:
. dy - the output tangent

  Level: developer

.seealso: `LayerJVPArray()`, `LayerForwardArrays()`
@*/
PetscErrorCode LayerJVPArrays(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *const dx[], const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscBool any = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->ops->jvpn) {
    PetscCall(LayerJVPArray(layer, n, theta, x[0], y, dx[0], dtheta, dy));
    PetscFunctionReturn(0);
  }
  if (!layer->nparams) dtheta = NULL;
  for (PetscInt k = 0; k < layer->nin; k++) any = (PetscBool)(any || dx[k]);
  if (!any && !dtheta && n) {
    PetscCall(PetscArrayzero(dy, n * layer->outsize));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, jvpn, n, theta, x, y, dx, dtheta, dy);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerSOBackwardArrays - the curvature term of the second-order adjoint of a layer of several inputs (a join): the
  derivative of LayerBackwardArrays()'s outputs along the input tangents xdot[k], with the cotangent dy held fixed.

  Collective

  Input Parameters:
+ layer    - the layer, after LayerForwardArrays() (and LayerJVPArrays()) at this point
. n        - the number of local samples
. theta    - the layer's own parameters (NULL if it has none)
. x        - the nin input arrays of the forward pass
. y        - its output
. xdot     - the nin input tangents (NULL entries are zero)
. thetadot - the parameter tangent (NULL: zero)
. ydot     - the JVP's output at this point along (xdot, thetadot), or NULL
- dy       - the output cotangent

  Output Parameters:
+ dxdot     - the nin tangents of the input cotangents, ACCUMULATED into (NULL entries skipped)
- dthetadot - the tangent of the parameter cotangent, accumulated into (NULL: skipped)

  Notes:
  A layer of one input runs LayerSOBackwardArray() on x[0]; a join whose term is zero (add, concat: linear) returns at
  once. A bilinear join (einsum of two operands) has dxdot[a] += the backward of operand a with the other operand
  replaced by its tangent. Logged in the event "<kind>:SOBackward".

  Level: developer

.seealso: `LayerSOBackwardArray()`, `LayerBackwardArrays()`, `NetSecondOrderBackward()`
@*/
PetscErrorCode LayerSOBackwardArrays(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *const xdot[], const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                     PetscScalar *const dxdot[], PetscScalar *dthetadot)
{
  PetscBool anyin = PETSC_FALSE, anyout = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->ops->sobackwardn) {
    PetscCall(LayerSOBackwardArray(layer, n, theta, x[0], y, xdot[0], thetadot, ydot, dy, dxdot[0], dthetadot));
    PetscFunctionReturn(0);
  }
  if (layer->sozero) PetscFunctionReturn(0);
  if (!layer->nparams) thetadot = dthetadot = NULL;
  for (PetscInt k = 0; k < layer->nin; k++) {
    anyin  = (PetscBool)(anyin || xdot[k]);
    anyout = (PetscBool)(anyout || dxdot[k]);
  }
  if ((!anyin && !thetadot) || (!anyout && !dthetadot)) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_SOBACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, sobackwardn, n, theta, x, y, xdot, thetadot, ydot, dy, dxdot, dthetadot);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_SOBACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerGetTensors - the named tensors of a layer (parameters and buffers), at most LAYER_MAX_TENSORS.
@*/
PetscErrorCode LayerGetTensors(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  PetscFunctionBegin;
  PetscCall(LayerSetUp(layer));
  *n = 0;
  if (layer->ops->tensors)
    PetscUseTypeMethod(layer, tensors, n, info);
  else if (layer->nparams) {
    PetscCall(LayerTensorSet_Private(&info[0], "weight", 0, LAYER_TENSOR_SAME, 1, &layer->nparams));
    *n = 1;
  }
  PetscFunctionReturn(0);
}

/*
  LayerTensorSet_Private - describes one tensor of a layer's parameters for its kind's tensors op: its state_dict name,
  its offset in theta, how PetNet orders its values against PyTorch's (layout), and its shape in PyTorch's layout,
  ndim dims; its size is their product. Not a buffer, no sign constraint (set those fields after).
*/
PetscErrorCode LayerTensorSet_Private(LayerTensorInfo *t, const char name[], PetscInt offset, LayerTensorLayout layout, PetscInt ndim, const PetscInt dims[])
{
  PetscFunctionBegin;
  PetscCall(PetscMemzero(t, sizeof(*t)));
  PetscCall(PetscStrncpy(t->name, name, sizeof(t->name)));
  t->offset = offset;
  t->layout = layout;
  t->ndim   = ndim;
  t->size   = 1;
  for (PetscInt d = 0; d < ndim; d++) {
    t->dims[d] = dims[d];
    t->size *= dims[d];
  }
  PetscFunctionReturn(0);
}
