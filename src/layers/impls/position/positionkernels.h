/*
  position's forward, backward and jvp on one element type, included once per type by position.c:
    POS_T        PetscScalar or float: the values x, y, dx, dy
    POS_NAME(f)  f or fSingle
  The table P [T'][E] (PositionTable(): the learned rows of theta, or the fixed sinusoidal ones) and the parameter
  gradient are double for both types; a float pass rounds the table's entries it adds and widens the cotangents it sums.
*/

/* y[s][t][e] = x[s][t][e] + P[t][e] */
static PetscErrorCode POS_NAME(LayerForward_Position)(Layer layer, PetscInt n, const PetscScalar *theta, const POS_T *x, POS_T *y)
{
  const PetscInt     m = layer->insize;
  const PetscScalar *P = PositionTable(layer, theta);

  PetscFunctionBegin;
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < m; i++) y[(size_t)s * m + i] = x[(size_t)s * m + i] + (POS_T)P[i];
  PetscCall(PetscLogFlops((PetscLogDouble)n * m));
  PetscFunctionReturn(0);
}

/* dx = dy; dW[t0 + t][e] += sum_s dy[s][t][e] (learned table: ACCUMULATES, over the samples in order) */
static PetscErrorCode POS_NAME(LayerBackward_Position)(Layer layer, PetscInt n, const PetscScalar *theta, const POS_T *x, const POS_T *y, const POS_T *dy, POS_T *dx, PetscScalar *dtheta)
{
  const PetscInt m = layer->insize;

  PetscFunctionBegin;
  if (dx) PetscCall(PetscArraycpy(dx, dy, (size_t)n * m));
  if (dtheta && layer->nparams) {
    PetscScalar *dW = PositionGradient(layer, dtheta); /* the rows [t0, t0 + T') */

    for (PetscInt s = 0; s < n; s++)
      for (PetscInt i = 0; i < m; i++) dW[i] += (PetscScalar)dy[(size_t)s * m + i];
    PetscCall(PetscLogFlops((PetscLogDouble)n * m));
  }
  PetscFunctionReturn(0);
}

/* dy = dx + dW[t][e] (each term when given; the fixed table has no dW) */
static PetscErrorCode POS_NAME(LayerJVP_Position)(Layer layer, PetscInt n, const PetscScalar *theta, const POS_T *x, const POS_T *y, const POS_T *dx, const PetscScalar *dtheta, POS_T *dy)
{
  const PetscInt m = layer->insize;

  PetscFunctionBegin;
  if (dx)
    PetscCall(PetscArraycpy(dy, dx, (size_t)n * m));
  else
    PetscCall(PetscArrayzero(dy, (size_t)n * m));
  if (dtheta && layer->nparams) {
    const PetscScalar *dW = PositionTable(layer, dtheta); /* the rows [t0, t0 + T') of the direction */

    for (PetscInt s = 0; s < n; s++)
      for (PetscInt i = 0; i < m; i++) dy[(size_t)s * m + i] += (POS_T)dW[i];
    PetscCall(PetscLogFlops((PetscLogDouble)n * m));
  }
  PetscFunctionReturn(0);
}
