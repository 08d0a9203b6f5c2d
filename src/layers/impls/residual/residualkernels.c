/*
  residual: forward, backward and jvp, driving the inner layers' array kernels (each logs its own event and flops).

    forward   y  = F(x) + x                    or  F(x) + P(x)
    backward  dx = J_F^T dy + dy               or  J_F^T dy + J_P^T dy
              dtheta_F += J_thetaF^T dy,  dtheta_P += J_thetaP^T dy   (accumulate)
    jvp       dy = J_F dx + J_thetaF dtheta_F + dx     or  ... + J_P dx + J_thetaP dtheta_P

  x, y, dx, dy are [n][size], sample-major; a branch is a chain of inner layers whose intermediates live in the
  workspace act/dact (see residual.h). The inner kernels are called on every rank even with n = 0 (NULL arrays),
  as the Net does, so that collective kernels (batchnorm in training mode) stay matched.
*/
#include "residual.h"

PetscErrorCode ResidualResetWorkspace(Layer layer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(res->work));
  for (PetscInt b = 0; b < 2; b++) PetscCall(PetscFree2(res->act[b], res->dact[b]));
  res->dxs    = NULL;
  res->nlocal = -1;
  PetscFunctionReturn(0);
}

/* act[b][l], dact[b][l]: n * out_l entries each; dxs: n * in. One allocation, rebuilt when n changes. */
static PetscErrorCode ResidualSetUpWorkspace(Layer layer, PetscInt n)
{
  Layer_Residual *res   = (Layer_Residual *)layer->data;
  PetscInt        total = n * layer->insize, offset = 0;

  PetscFunctionBegin;
  if (n == res->nlocal) PetscFunctionReturn(0);
  PetscCall(ResidualResetWorkspace(layer));
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) total += 2 * n * br->layers[l]->outsize;
    PetscCall(PetscMalloc2(br->nlayers, &res->act[b], br->nlayers, &res->dact[b]));
  }
  PetscCall(PetscMalloc1(total, &res->work));
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      PetscInt size = n * br->layers[l]->outsize;

      res->act[b][l]  = n ? res->work + offset : NULL;
      res->dact[b][l] = n ? res->work + offset + size : NULL;
      offset += 2 * size;
    }
  }
  res->dxs    = n ? res->work + offset : NULL;
  res->nlocal = n;
  PetscFunctionReturn(0);
}

/* The inner layers follow the residual layer's mode (training, derivative test) and read its buffers */
static PetscErrorCode ResidualPushState(Layer layer)
{
  Layer_Residual *res    = (Layer_Residual *)layer->data;
  PetscBool       intest = (PetscBool)(layer->net && layer->net->intest);

  PetscFunctionBegin;
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    br->training = layer->training;
    br->intest   = intest;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      Layer inner = br->layers[l];

      inner->training = layer->training;
      if (inner->nbuffers) PetscCall(PetscArraycpy(inner->buffers, layer->buffers + res->boff[b][l], inner->nbuffers));
    }
  }
  PetscFunctionReturn(0);
}

/* After a forward pass: the inner layers' buffers (e.g. updated running statistics) back into the residual layer's */
static PetscErrorCode ResidualPullBuffers(Layer layer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      Layer inner = br->layers[l];

      if (inner->nbuffers) PetscCall(PetscArraycpy(layer->buffers + res->boff[b][l], inner->buffers, inner->nbuffers));
    }
  }
  PetscFunctionReturn(0);
}

/* act[b][l] = layer_l(act[b][l-1]), act[b][-1] = x; the branch output is act[b][L-1] */
static PetscErrorCode ResidualBranchForward(Layer layer, PetscInt b, PetscInt n, const PetscScalar *theta, const PetscScalar *x)
{
  Layer_Residual    *res = (Layer_Residual *)layer->data;
  Net                br  = res->branch[b];
  const PetscScalar *in  = x;

  PetscFunctionBegin;
  for (PetscInt l = 0; l < br->nlayers; l++) {
    PetscCall(LayerForwardArray(br->layers[l], n, theta + res->poff[b][l], in, res->act[b][l]));
    in = res->act[b][l];
  }
  PetscFunctionReturn(0);
}

/* From the cotangent dy of the branch output: dx = J_b^T dy (skipped if dx is NULL), dtheta += J_thetab^T dy (if dtheta) */
static PetscErrorCode ResidualBranchBackward(Layer layer, PetscInt b, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;
  Net             br  = res->branch[b];
  const PetscInt  L   = br->nlayers;

  PetscFunctionBegin;
  for (PetscInt l = L - 1; l >= 0; l--) {
    const PetscScalar *in   = l ? res->act[b][l - 1] : x;
    const PetscScalar *dout = l == L - 1 ? dy : res->dact[b][l];
    PetscScalar       *din  = l ? res->dact[b][l - 1] : dx;

    PetscCall(LayerBackwardArray(br->layers[l], n, theta + res->poff[b][l], in, res->act[b][l], dout, din, dtheta ? dtheta + res->poff[b][l] : NULL));
  }
  PetscFunctionReturn(0);
}

/* dy = J_b dx + J_thetab dtheta at the branch output (dx, dtheta: NULL means zero) */
static PetscErrorCode ResidualBranchJVP(Layer layer, PetscInt b, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Residual    *res = (Layer_Residual *)layer->data;
  Net                br  = res->branch[b];
  const PetscInt     L   = br->nlayers;
  const PetscScalar *din = dx;

  PetscFunctionBegin;
  for (PetscInt l = 0; l < L; l++) {
    const PetscScalar *in   = l ? res->act[b][l - 1] : x;
    PetscScalar       *dout = l == L - 1 ? dy : res->dact[b][l];

    PetscCall(LayerJVPArray(br->layers[l], n, theta + res->poff[b][l], in, res->act[b][l], din, dtheta ? dtheta + res->poff[b][l] : NULL, dout));
    din = dout;
  }
  PetscFunctionReturn(0);
}

/* y[n][out] = F(x) + x, or F(x) + P(x) */
PetscErrorCode LayerForward_Residual(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Residual    *res = (Layer_Residual *)layer->data;
  Net                P   = res->branch[RESIDUAL_P];
  const PetscInt     m   = n * layer->outsize;
  const PetscScalar *f, *s;

  PetscFunctionBegin;
  PetscCall(ResidualSetUpWorkspace(layer, n));
  PetscCall(ResidualPushState(layer));
  PetscCall(ResidualBranchForward(layer, RESIDUAL_F, n, theta, x));
  if (P) PetscCall(ResidualBranchForward(layer, RESIDUAL_P, n, theta, x));
  f = res->act[RESIDUAL_F][res->branch[RESIDUAL_F]->nlayers - 1];
  s = P ? res->act[RESIDUAL_P][P->nlayers - 1] : x;
  for (PetscInt i = 0; i < m; i++) y[i] = f[i] + s[i];
  PetscCall(PetscLogFlops(m));
  PetscCall(ResidualPullBuffers(layer));
  PetscFunctionReturn(0);
}

/* dx = J_F^T dy + dy (or + J_P^T dy) if dx; dtheta = [dtheta_F, dtheta_P] += the parameter cotangents if dtheta */
PetscErrorCode LayerBackward_Residual(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;
  const PetscInt  m   = n * layer->insize;

  PetscFunctionBegin;
  PetscCheck(res->nlocal == n, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "residual backward with %" PetscInt_FMT " samples, but the last forward had %" PetscInt_FMT ": call the forward pass on this batch first", n, res->nlocal);
  PetscCall(ResidualBranchBackward(layer, RESIDUAL_F, n, theta, x, dy, dx, dtheta));
  if (res->branch[RESIDUAL_P]) {
    PetscCall(ResidualBranchBackward(layer, RESIDUAL_P, n, theta, x, dy, dx ? res->dxs : NULL, dtheta));
    if (dx)
      for (PetscInt i = 0; i < m; i++) dx[i] += res->dxs[i];
  } else if (dx)
    for (PetscInt i = 0; i < m; i++) dx[i] += dy[i];
  if (dx) PetscCall(PetscLogFlops(m));
  PetscFunctionReturn(0);
}

/* dy = J_F dx + J_thetaF dtheta_F + dx (or + J_P dx + J_thetaP dtheta_P); dx, dtheta: NULL means zero */
PetscErrorCode LayerJVP_Residual(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;
  Net             P   = res->branch[RESIDUAL_P];
  const PetscInt  m   = n * layer->outsize;

  PetscFunctionBegin;
  PetscCheck(res->nlocal == n, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "residual jvp with %" PetscInt_FMT " samples, but the last forward had %" PetscInt_FMT ": call the forward pass on this batch first", n, res->nlocal);
  PetscCall(ResidualBranchJVP(layer, RESIDUAL_F, n, theta, x, dx, dtheta, dy));
  if (P) {
    const PetscScalar *s = res->dact[RESIDUAL_P][P->nlayers - 1];

    PetscCall(ResidualBranchJVP(layer, RESIDUAL_P, n, theta, x, dx, dtheta, res->dact[RESIDUAL_P][P->nlayers - 1]));
    for (PetscInt i = 0; i < m; i++) dy[i] += s[i];
    PetscCall(PetscLogFlops(m));
  } else if (dx) {
    for (PetscInt i = 0; i < m; i++) dy[i] += dx[i];
    PetscCall(PetscLogFlops(m));
  }
  PetscFunctionReturn(0);
}
