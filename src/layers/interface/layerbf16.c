/*
  The layer kernels on the stored bfloat16 values themselves (a Net at -net_precision bfloat16), for a kind that has
  them (Layer.ops forwardbf16, backwardmaskbf16, jvpbf16: maxpool, and dense, conv2d and conv3d on oneDNN's
  bfloat16 matmuls and convolutions, Layer.bf16onednn): its passes read and write the bfloat16 arrays
  of the value store with no float copy of the batch, each entry the bits its float kernel would give on the widened
  values, rounded once (bf16impl.h). The Net's plain executor calls these where the kind has them
  (NetSetBFloat16Kernels(), netexec.c); elsewhere the float entries of layersingle.c run on float copies.

    x [n][in], y [n][out], dx, dy   bfloat16 (uint16_t), as the Net stores them
    theta [p], dtheta [p]           double (backward accumulates), as at every precision
*/
#include <petnet/private/layerimpl.h>

/* y = act(f(x)) (act NULL: f(x)) on bfloat16 values */
PetscErrorCode LayerForwardBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  PetscFunctionBegin;
  PetscCheck(LayerHasBF16(layer), PetscObjectComm((PetscObject)layer), PETSC_ERR_PLIB, "Layer %" PetscInt_FMT " has no bfloat16 kernels: ask LayerHasBF16() first", layer->index);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, forwardbf16, act, n, theta, x, y);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_FORWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* dx = act'(x) J^T dy (act NULL: J^T dy; dx NULL: skipped), dtheta += J_theta^T dy, on bfloat16 values */
PetscErrorCode LayerBackwardBF16(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  PetscCheck(LayerHasBF16(layer), PetscObjectComm((PetscObject)layer), PETSC_ERR_PLIB, "Layer %" PetscInt_FMT " has no bfloat16 kernels: ask LayerHasBF16() first", layer->index);
  if (!layer->nparams) dtheta = NULL;
  if (!dx && !dtheta && n && !layer->collective) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, backwardmaskbf16, act, n, theta, x, y, dy, dx, dtheta);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_BACKWARD], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* dy = J (dx, dtheta) (dx NULL: zero) on bfloat16 values */
PetscErrorCode LayerJVPBF16(Layer layer, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dx, const PetscScalar *dtheta, uint16_t *dy)
{
  PetscFunctionBegin;
  PetscCheck(LayerHasBF16(layer), PetscObjectComm((PetscObject)layer), PETSC_ERR_PLIB, "Layer %" PetscInt_FMT " has no bfloat16 kernels: ask LayerHasBF16() first", layer->index);
  if (!layer->nparams) dtheta = NULL;
  PetscCall(PetscLogEventBegin(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscUseTypeMethod(layer, jvpbf16, n, theta, x, y, dx, dtheta, dy);
  PetscCall(PetscLogEventEnd(layer->event[LAYER_PHASE_JVP], layer, 0, 0, 0));
  PetscFunctionReturn(0);
}
