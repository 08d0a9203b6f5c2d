/*
  concat: the join of branches along the last dimension (channels),  y = [x_1, ..., x_k]  (U-Net skip connections).

    x_i  [n][p][c_i]  every input has the same leading shape p (e.g. h x w) and its own channel count c_i
    y    [n][p][C]    C = c_1 + ... + c_k; the channels of input i sit at offset o_i = c_1 + ... + c_{i-1}
    forward  y[s][p][o_i + c]  = x_i[s][p][c]
    backward dx_i[s][p][c]     = dy[s][p][o_i + c]
    jvp      dy[s][p][o_i + c] = dx_i[s][p][c]      (a NULL dx_i is zero)
  The float passes (single, bfloat16) are the same copies on float entries.
*/
#include <petnet/private/layerimpl.h>

static PetscErrorCode LayerSetUp_Concat(Layer layer)
{
  const PetNetShape *a = &layer->ins[0];
  char               sa[64], sb[64], node[320];

  PetscFunctionBegin;
  layer->out = *a;
  for (PetscInt k = 1; k < layer->nin; k++) {
    const PetNetShape *b    = &layer->ins[k];
    PetscBool          same = (PetscBool)(a->ndim == b->ndim);

    for (PetscInt d = 0; same && d < a->ndim - 1; d++) same = (PetscBool)(a->dim[d] == b->dim[d]);
    if (!same) {
      PetscCall(PetNetShapeToString(a, sizeof(sa), sa));
      PetscCall(PetNetShapeToString(b, sizeof(sb), sb));
      PetscCall(LayerGetNodeDescription_Private(layer, sizeof(node), node));
      SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
              "%s: concat joins along the last dimension (channels), so every other dimension must agree, but input 1 is %s and input %" PetscInt_FMT " is %s: resample one branch (pooling, a strided conv2d) to the other's grid", node, sa, k + 1, sb);
    }
    layer->out.dim[a->ndim - 1] += b->dim[b->ndim - 1];
  }
  PetscFunctionReturn(0);
}

/* The copy between input k and its slot of y: P points of c_k channels each, at channel offset o of C, entries of es
   bytes (double, or float for the float passes: copies, so the same values in either) */
static void ConcatCopyBytes(size_t es, PetscInt P, PetscInt ck, PetscInt C, PetscInt o, const void *src, void *dst, PetscBool toy)
{
  const char *s = (const char *)src;
  char       *d = (char *)dst;

  for (PetscInt p = 0; p < P; p++) {
    if (toy)
      memcpy(d + (p * C + o) * es, s + p * ck * es, ck * es);
    else
      memcpy(d + p * ck * es, s + (p * C + o) * es, ck * es);
  }
}

static void ConcatCopy(PetscInt P, PetscInt ck, PetscInt C, PetscInt o, const PetscScalar *src, PetscScalar *dst, PetscBool toy)
{
  ConcatCopyBytes(sizeof(PetscScalar), P, ck, C, o, src, dst, toy);
}

static PetscErrorCode LayerForward_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], PetscScalar *y)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++) ConcatCopy(P, layer->ins[k].dim[d], C, o, x[k], y, PETSC_TRUE);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *dy, PetscScalar *const dx[], PetscScalar *dtheta)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++)
    if (dx[k]) ConcatCopy(P, layer->ins[k].dim[d], C, o, dy, dx[k], PETSC_FALSE);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *const dx[], const PetscScalar *dtheta, PetscScalar *dy)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++) {
    const PetscInt ck = layer->ins[k].dim[d];

    if (dx[k])
      ConcatCopy(P, ck, C, o, dx[k], dy, PETSC_TRUE);
    else
      for (PetscInt p = 0; p < P; p++) PetscCall(PetscArrayzero(dy + p * C + o, ck));
  }
  PetscFunctionReturn(0);
}

/* the float passes: the same copies on float entries */
static PetscErrorCode LayerForwardSingle_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], float *y)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++) ConcatCopyBytes(sizeof(float), P, layer->ins[k].dim[d], C, o, x[k], y, PETSC_TRUE);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *dy, float *const dx[], PetscScalar *dtheta)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++)
    if (dx[k]) ConcatCopyBytes(sizeof(float), P, layer->ins[k].dim[d], C, o, dy, dx[k], PETSC_FALSE);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Concat(Layer layer, PetscInt n, const PetscScalar *theta, const float *const x[], const float *y, const float *const dx[], const PetscScalar *dtheta, float *dy)
{
  const PetscInt d = layer->out.ndim - 1, C = layer->out.dim[d], P = n * (layer->outsize / C);

  PetscFunctionBegin;
  for (PetscInt k = 0, o = 0; k < layer->nin; o += layer->ins[k].dim[d], k++) {
    const PetscInt ck = layer->ins[k].dim[d];

    if (dx[k])
      ConcatCopyBytes(sizeof(float), P, ck, C, o, dx[k], dy, PETSC_TRUE);
    else
      for (PetscInt p = 0; p < P; p++) PetscCall(PetscArrayzero(dy + p * C + o, ck));
  }
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Concat(Layer layer)
{
  PetscFunctionBegin;
  layer->mininputs            = 2;
  layer->maxinputs            = PETSC_MAX_INT;
  layer->ops->setup           = LayerSetUp_Concat;
  layer->ops->forwardn        = LayerForward_Concat;
  layer->ops->backwardn       = LayerBackward_Concat;
  layer->ops->jvpn            = LayerJVP_Concat;
  layer->ops->forwardnsingle  = LayerForwardSingle_Concat;
  layer->ops->backwardnsingle = LayerBackwardSingle_Concat;
  layer->ops->jvpnsingle      = LayerJVPSingle_Concat;
  layer->sozero               = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  PetscFunctionReturn(0);
}
