/*
  add: the join of branches of one shape,  y = x_1 + ... + x_k  (k >= 2 inputs; the join of a residual block).

    x_i, y   [n][size]   every input has the output's shape
    forward  y  = sum_i x_i
    backward dx_i = dy          for every input whose cotangent is asked for
    jvp      dy = sum_i dx_i    (a NULL dx_i is zero)

  In float (single, bfloat16): the same passes on float values, each sum of k >= 2 terms formed in double and rounded
  once, as the double kernels on widened copies would (so the same bits as that path, without the copies).
*/
#include <petnet/private/layerimpl.h>

static PetscErrorCode LayerSetUp_Add(Layer layer)
{
  char a[64], b[64], node[320];

  PetscFunctionBegin;
  for (PetscInt k = 1; k < layer->nin; k++) {
    if (PetNetShapeEqual(&layer->ins[k], &layer->ins[0])) continue;
    PetscCall(PetNetShapeToString(&layer->ins[0], sizeof(a), a));
    PetscCall(PetNetShapeToString(&layer->ins[k], sizeof(b), b));
    PetscCall(LayerGetNodeDescription_Private(layer, sizeof(node), node));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
            "%s: add needs inputs of one shape, but input 1 is %s and input %" PetscInt_FMT " is %s: map one branch to the other's shape (e.g. a 1x1 conv2d or a dense layer), or join with concat", node, a, k + 1, b);
  }
  layer->out = layer->in;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Add(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], PetscScalar *y)
{
  const PetscInt m = n * layer->outsize;

  PetscFunctionBegin;
  PetscCall(PetscArraycpy(y, x[0], m));
  for (PetscInt k = 1; k < layer->nin; k++)
    for (PetscInt i = 0; i < m; i++) y[i] += x[k][i];
  PetscCall(PetscLogFlops((layer->nin - 1.0) * m));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Add(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *dy, PetscScalar *const dx[], PetscScalar *dtheta)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < layer->nin; k++)
    if (dx[k]) PetscCall(PetscArraycpy(dx[k], dy, n * layer->outsize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Add(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *const dx[], const PetscScalar *dtheta, PetscScalar *dy)
{
  const PetscInt m     = n * layer->outsize;
  PetscBool      first = PETSC_TRUE;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < layer->nin; k++) {
    if (!dx[k]) continue;
    if (first)
      PetscCall(PetscArraycpy(dy, dx[k], m));
    else
      for (PetscInt i = 0; i < m; i++) dy[i] += dx[k][i];
    first = PETSC_FALSE;
  }
  if (first) PetscCall(PetscArrayzero(dy, m));
  PetscFunctionReturn(0);
}

/* y[i] = (float) sum_k x[k][i] over the nk non-NULL arrays of x (zero when there is none), the sum in double */
static void AddSumSingle(PetscInt nk, const float *const x[], PetscInt m, float *y)
{
  const float *a[2] = {NULL, NULL};
  PetscInt     na   = 0;

  for (PetscInt k = 0; k < nk && na < 2; k++)
    if (x[k]) a[na++] = x[k];
  if (na == 0) {
    for (PetscInt i = 0; i < m; i++) y[i] = 0;
    return;
  }
  if (na == 1) {
    memcpy(y, a[0], (size_t)m * sizeof(float));
    return;
  }
  if (nk == 2) { /* two arrays: their float sum is the double sum rounded (double's 53 bits hold 2 x 24 + 2, so the double
                    rounding is innocuous), the same bits in one vectorized pass */
    const float *a0 = a[0], *a1 = a[1];

    for (PetscInt i = 0; i < m; i++) y[i] = a0[i] + a1[i];
    return;
  }
  for (PetscInt i = 0; i < m; i++) {
    PetscScalar sum   = 0;
    PetscBool   first = PETSC_TRUE;

    for (PetscInt k = 0; k < nk; k++) {
      if (!x[k]) continue;
      sum   = first ? (PetscScalar)x[k][i] : sum + (PetscScalar)x[k][i];
      first = PETSC_FALSE;
    }
    y[i] = (float)sum;
  }
}

static PetscErrorCode LayerForwardSingle_Add(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], float *y)
{
  const PetscInt m = n * layer->outsize;

  PetscFunctionBegin;
  AddSumSingle(layer->nin, x, m, y);
  PetscCall(PetscLogFlops((layer->nin - 1.0) * m));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Add(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *dy, float *const dx[], PetscScalar *dtheta)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < layer->nin; k++)
    if (dx[k]) PetscCall(PetscArraycpy(dx[k], dy, n * layer->outsize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Add(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *const dx[], const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  AddSumSingle(layer->nin, dx, n * layer->outsize, dy);
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Add(Layer layer)
{
  PetscFunctionBegin;
  layer->mininputs            = 2;
  layer->maxinputs            = PETSC_MAX_INT;
  layer->ops->setup           = LayerSetUp_Add;
  layer->ops->forwardn        = LayerForward_Add;
  layer->ops->backwardn       = LayerBackward_Add;
  layer->ops->jvpn            = LayerJVP_Add;
  layer->ops->forwardnsingle  = LayerForwardSingle_Add;
  layer->ops->backwardnsingle = LayerBackwardSingle_Add;
  layer->ops->jvpnsingle      = LayerJVPSingle_Add;
  layer->sozero               = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  PetscFunctionReturn(0);
}
