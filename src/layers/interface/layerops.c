/* Layer kernels on local arrays, wrapped in one log event per kind and phase (e.g. "dense:Forward"). */
#include <petnet/private/layerimpl.h>

static const char *const LayerPhaseNames[LAYER_NUM_PHASES] = {"Forward", "Backward", "JVP"};

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
@*/
PetscErrorCode LayerForwardArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, forward, n, theta, x, y);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerBackwardArray - dx = J_x^T dy (if dx), dtheta += J_theta^T dy (if dtheta), at the point (theta, x, y).
@*/
PetscErrorCode LayerBackwardArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n) PetscFunctionReturn(0); /* a rank with no samples (NULL arrays) still joins collective kernels (batchnorm) */
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, backward, n, theta, x, y, dy, dx, dtheta);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  LayerJVPArray - dy = J_x dx + J_theta dtheta at the point (theta, x, y); a NULL dx or dtheta counts as zero.
@*/
PetscErrorCode LayerJVPArray(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n) { /* a rank with no samples (NULL arrays) still joins collective kernels (batchnorm) */
    PetscCall(PetscArrayzero(dy, n * layer->outsize));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, jvp, n, theta, x, y, dx, dtheta, dy);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
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
    PetscCall(PetscMemzero(&info[0], sizeof(info[0])));
    PetscCall(PetscStrcpy(info[0].name, "weight"));
    info[0].size    = layer->nparams;
    info[0].ndim    = 1;
    info[0].dims[0] = layer->nparams;
    *n              = 1;
  }
  PetscFunctionReturn(0);
}
