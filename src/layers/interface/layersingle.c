/*
  The layer kernels on float values (a Net at -net_precision single or bfloat16): the kind's float kernels where it has
  them (forwardnsingle, backwardnsingle, jvpnsingle for any number of inputs: the joins einsum, add, concat; else
  forwardsingle, backwardsingle, jvpsingle for one input), otherwise its double kernels on double copies of the values.
  Every owner of a layer (the Net's plain, spatial and sequence executors, placed or not) calls these three entries, so
  a kind's float kernels are used wherever its node runs in float.

    x[k] [n][in_k] float, y [n][out] float                      the values, as the Net stores them
    theta [p] double, dtheta [p] double (backward accumulates)   the master parameters and their gradient

  The fallback converts exactly (float -> double is exact) and rounds the outputs once, so a kind without its own float
  kernels computes in double and only its outputs carry the float rounding: correct at every precision, not faster.
*/
#include <petnet/private/layerimpl.h>

/* the kind's float kernels take the input arrays (forwardnsingle...): they run for any number of inputs */
static inline PetscBool LayerHasSingleN_Private(Layer layer)
{
  return (PetscBool)(layer->ops->forwardnsingle && layer->ops->backwardnsingle && layer->ops->jvpnsingle);
}

/*@C
  LayerHasSingle - whether the layer's kind has its own single-precision kernels (otherwise LayerForwardSingle() and
  the others run its double kernels on converted copies).

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. has - PETSC_TRUE if the kind sets forwardnsingle, backwardnsingle and jvpnsingle (any number of inputs), or
        forwardsingle, backwardsingle and jvpsingle and the layer has one input

  Level: developer

.seealso: `LayerForwardSingle()`, `NetSetPrecision()`
@*/
PetscErrorCode LayerHasSingle(Layer layer, PetscBool *has)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  *has = (PetscBool)(LayerHasSingleN_Private(layer) || (layer->ops->forwardsingle && layer->ops->backwardsingle && layer->ops->jvpsingle && layer->nin == 1));
  PetscFunctionReturn(0);
}

/* double copies of nin float arrays of n samples (sizes[k] per sample); a NULL array stays NULL */
static PetscErrorCode LayerWiden_Private(PetscInt nin, PetscInt n, const PetscInt sizes[], const float *const f[], PetscScalar *d[])
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < nin; k++) {
    const PetscInt N = n * sizes[k];

    d[k] = NULL;
    if (!f[k]) continue;
    PetscCall(PetscMalloc1(N, &d[k]));
    for (PetscInt i = 0; i < N; i++) d[k][i] = f[k][i];
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerFreeWide_Private(PetscInt nin, PetscScalar *d[])
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < nin; k++) PetscCall(PetscFree(d[k]));
  PetscFunctionReturn(0);
}

static void LayerNarrow_Private(PetscInt N, const PetscScalar *d, float *f)
{
  for (PetscInt i = 0; i < N; i++) f[i] = (float)d[i];
}

/*@C
  LayerForwardSingle - y[n][out] = f(x_0, ..., x_{nin-1}; theta) on float values, with double parameters.

  Collective (as LayerForwardArrays())

  Input Parameters:
+ layer - the layer, set up
. n     - the number of local samples
. theta - the layer's own parameters in double (NULL if it has none)
- x     - the nin input arrays in float, x[k] of n * (size of input k) entries

  Output Parameter:
. y - the output in float, n * (output size) entries

  Note:
  A kind without its own float kernels (LayerHasSingle()) runs its double forward on double copies of the x[k] and
  rounds y; a join with them (einsum, add, concat) runs its float kernels on the nin arrays as they are.

  Level: developer

.seealso: `LayerBackwardSingle()`, `LayerJVPSingle()`, `LayerForwardArrays()`, `NetSetPrecision()`
@*/
PetscErrorCode LayerForwardSingle(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], float *y)
{
  PetscBool has;

  PetscFunctionBegin;
  PetscCall(LayerHasSingle(layer, &has));
  if (has) {
    PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
    if (LayerHasSingleN_Private(layer))
      PetscUseTypeMethod(layer, forwardnsingle, n, theta, x, y);
    else
      PetscUseTypeMethod(layer, forwardsingle, n, theta, x[0], y);
    PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  } else {
    PetscScalar **xd, *yd = NULL;

    PetscCall(PetscMalloc1(layer->nin, &xd));
    PetscCall(LayerWiden_Private(layer->nin, n, layer->insizes, x, xd));
    if (y) PetscCall(PetscMalloc1(n * layer->outsize, &yd));
    PetscCall(LayerForwardArrays(layer, n, theta, (const PetscScalar *const *)xd, yd));
    if (y) LayerNarrow_Private(n * layer->outsize, yd, y);
    PetscCall(PetscFree(yd));
    PetscCall(LayerFreeWide_Private(layer->nin, xd));
    PetscCall(PetscFree(xd));
  }
  PetscFunctionReturn(0);
}

/*@C
  LayerBackwardSingle - dx[k] = J_k^T dy (float, for every k with dx[k] not NULL); dtheta += J_theta^T dy (double).

  Collective (as LayerBackwardArrays())

  Input Parameters:
+ layer - the layer, after LayerForwardSingle() at the same point
. n     - the number of local samples
. theta - the layer's own parameters in double
. x     - the nin input arrays of the forward pass (float)
. y     - its output (float)
- dy    - the output cotangent (float)

  Output Parameters:
+ dx     - the nin input cotangents in float (overwritten; a NULL entry is skipped)
- dtheta - the parameter cotangent in double, accumulated into (NULL: skipped)

  Level: developer

.seealso: `LayerForwardSingle()`, `LayerJVPSingle()`, `LayerBackwardArrays()`
@*/
PetscErrorCode LayerBackwardSingle(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *dy, float *const dx[], PetscScalar *dtheta)
{
  PetscBool has, any = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  for (PetscInt k = 0; k < layer->nin; k++) any = (PetscBool)(any || dx[k]);
  if (!any && !dtheta && n && !layer->collective) PetscFunctionReturn(0);
  PetscCall(LayerHasSingle(layer, &has));
  if (has) {
    PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
    if (LayerHasSingleN_Private(layer))
      PetscUseTypeMethod(layer, backwardnsingle, n, theta, x, y, dy, dx, dtheta);
    else
      PetscUseTypeMethod(layer, backwardsingle, n, theta, x[0], y, dy, dx[0], dtheta);
    PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  } else {
    PetscScalar **xd, **dxd, *yd[1], *dyd[1];
    PetscInt      outsize = layer->outsize;

    PetscCall(PetscMalloc2(layer->nin, &xd, layer->nin, &dxd));
    PetscCall(LayerWiden_Private(layer->nin, n, layer->insizes, x, xd));
    PetscCall(LayerWiden_Private(1, n, &outsize, &y, yd));
    PetscCall(LayerWiden_Private(1, n, &outsize, &dy, dyd));
    for (PetscInt k = 0; k < layer->nin; k++) {
      dxd[k] = NULL;
      if (dx[k]) PetscCall(PetscMalloc1(n * layer->insizes[k], &dxd[k]));
    }
    PetscCall(LayerBackwardArrays(layer, n, theta, (const PetscScalar *const *)xd, yd[0], dyd[0], dxd, dtheta));
    for (PetscInt k = 0; k < layer->nin; k++)
      if (dx[k]) LayerNarrow_Private(n * layer->insizes[k], dxd[k], dx[k]);
    PetscCall(LayerFreeWide_Private(layer->nin, dxd));
    PetscCall(LayerFreeWide_Private(1, dyd));
    PetscCall(LayerFreeWide_Private(1, yd));
    PetscCall(LayerFreeWide_Private(layer->nin, xd));
    PetscCall(PetscFree2(xd, dxd));
  }
  PetscFunctionReturn(0);
}

/*@C
  LayerJVPSingle - dy = sum_k J_k dx[k] + J_theta dtheta on float values; a NULL dx[k] or dtheta counts as zero.

  Collective (as LayerJVPArrays())

  Input Parameters:
+ layer  - the layer, after LayerForwardSingle() at the same point
. n      - the number of local samples
. theta  - the layer's own parameters in double
. x      - the nin input arrays of the forward pass (float)
. y      - its output (float)
. dx     - the nin input tangents in float (NULL entries are zero)
- dtheta - the parameter tangent in double (NULL: zero)

  Output Parameter:
. dy - the output tangent in float

  Level: developer

.seealso: `LayerForwardSingle()`, `LayerBackwardSingle()`, `LayerJVPArrays()`
@*/
PetscErrorCode LayerJVPSingle(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *const dx[], const PetscScalar *dtheta, float *dy)
{
  PetscBool has, any = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->nparams) dtheta = NULL;
  for (PetscInt k = 0; k < layer->nin; k++) any = (PetscBool)(any || dx[k]);
  if (!any && !dtheta && n && !layer->collective) {
    PetscCall(PetscArrayzero(dy, n * layer->outsize));
    PetscFunctionReturn(0);
  }
  PetscCall(LayerHasSingle(layer, &has));
  if (has) {
    PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
    if (LayerHasSingleN_Private(layer))
      PetscUseTypeMethod(layer, jvpnsingle, n, theta, x, y, dx, dtheta, dy);
    else
      PetscUseTypeMethod(layer, jvpsingle, n, theta, x[0], y, dx[0], dtheta, dy);
    PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  } else {
    PetscScalar **xd, **dxd, *yd[1], *dyd = NULL;
    PetscInt      outsize = layer->outsize;

    PetscCall(PetscMalloc2(layer->nin, &xd, layer->nin, &dxd));
    PetscCall(LayerWiden_Private(layer->nin, n, layer->insizes, x, xd));
    PetscCall(LayerWiden_Private(layer->nin, n, layer->insizes, dx, dxd));
    PetscCall(LayerWiden_Private(1, n, &outsize, &y, yd));
    if (dy) PetscCall(PetscMalloc1(n * layer->outsize, &dyd));
    PetscCall(LayerJVPArrays(layer, n, theta, (const PetscScalar *const *)xd, yd[0], (const PetscScalar *const *)dxd, dtheta, dyd));
    if (dy) LayerNarrow_Private(n * layer->outsize, dyd, dy);
    PetscCall(PetscFree(dyd));
    PetscCall(LayerFreeWide_Private(1, yd));
    PetscCall(LayerFreeWide_Private(layer->nin, dxd));
    PetscCall(LayerFreeWide_Private(layer->nin, xd));
    PetscCall(PetscFree2(xd, dxd));
  }
  PetscFunctionReturn(0);
}
