/*
  layernorm's and rmsnorm's forward, backward and jvp on one element type, included once per type by layernorm.c:
    LN_T        PetscScalar or float: the values x, y, dx, dy
    LN_NAME(f)  f or fSingle
  The parameters, the statistics of each position (mu, s) and every sum are double for both types: the float values
  are widened as they are read, each position's sums and elementwise results computed in double and rounded once as
  they are written. So single precision changes only the rounding of what is stored between layers.

  Layout (layernorm.c): x, y [P][E] with P = n m positions, each normalised over its own E values; c = 1 for layernorm
  (the mean removed), 0 for rmsnorm.
*/

/*
  forward: per position p, mu = c mean(x), s = 1 / sqrt(mean((x - mu)^2) + eps), xhat = (x - mu) s,
    y = gamma xhat + beta   (affine; rmsnorm has no beta)      y = xhat   (noaffine)
  mu and s kept for backward, jvp and sobackward at this point. Positions are independent: parts of positions on the
  threads, the same bits at any thread count.
*/
static PetscErrorCode LN_NAME(LayerForward_Norm)(Layer layer, PetscInt n, const PetscScalar *theta, const LN_T *x, LN_T *y)
{
  Layer_Norm        *ln = (Layer_Norm *)layer->data;
  const PetscInt     E = ln->E, P = n * ln->m;
  const PetscScalar *gamma = ln->affine ? theta : NULL, *beta = ln->affine && ln->center ? theta + E : NULL;
  const PetscReal    c = ln->center ? 1.0 : 0.0, eps = ln->eps;

  PetscFunctionBegin;
  PetscCall(NormReserve(layer, P));
  ln->fromonednn = PETSC_FALSE; /* this forward's statistics are mean and invstd */
  {
    PetscScalar *mean = ln->mean, *invstd = ln->invstd;

    const PetscInt nparts = PetNetThreadParts(P, LAYERNORM_PART_POSITIONS(E));

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
    for (PetscInt part = 0; part < nparts; part++) {
      PetscInt p0, p1;

      PetNetThreadPart(P, nparts, part, &p0, &p1);
      for (PetscInt p = p0; p < p1; p++) {
        const LN_T *xp = x + (size_t)p * E;
        LN_T       *yp = y + (size_t)p * E;
        PetscScalar mu = 0.0, var = 0.0, s;

        if (c != 0.0) {
          for (PetscInt e = 0; e < E; e++) mu += (PetscScalar)xp[e];
          mu /= E;
        }
        for (PetscInt e = 0; e < E; e++) {
          const PetscScalar d = (PetscScalar)xp[e] - mu;

          var += d * d;
        }
        s         = 1.0 / PetscSqrtScalar(var / E + eps);
        mean[p]   = mu;
        invstd[p] = s;
        for (PetscInt e = 0; e < E; e++) {
          const PetscScalar xh = ((PetscScalar)xp[e] - mu) * s;

          yp[e] = (LN_T)(gamma ? gamma[e] * xh + (beta ? beta[e] : 0.0) : xh);
        }
      }
    }
  }
  PetscCall(PetscLogFlops(7.0 * P * E));
  PetscFunctionReturn(0);
}

/*
  backward: per position, with g = gamma dy (dy when noaffine), a = mean(g), b = mean(g xhat):
    dx = s (g - c a - xhat b)
    dgamma += sum_p dy xhat,  dbeta += sum_p dy    (ACCUMULATES; over the local positions, the Net sums the ranks)
  One loop over parts of positions: each part writes its own rows of dx and its own row of partsums [2E], the rows
  then added in part order, so that dtheta has the same bits for any number of threads.
*/
static PetscErrorCode LN_NAME(LayerBackward_Norm)(Layer layer, PetscInt n, const PetscScalar *theta, const LN_T *x, const LN_T *y, const LN_T *dy, LN_T *dx, PetscScalar *dtheta)
{
  Layer_Norm        *ln = (Layer_Norm *)layer->data;
  const PetscInt     E = ln->E, P = n * ln->m, nparts = PetNetThreadParts(P, LAYERNORM_PART_POSITIONS(E));
  const PetscScalar *gamma = ln->affine ? theta : NULL, *mean = ln->mean, *invstd = ln->invstd;
  const PetscReal    c      = ln->center ? 1.0 : 0.0;
  const PetscBool    dparam = (PetscBool)(dtheta && ln->affine);
  const PetscInt     nterms = ln->center ? 2 : 1; /* dgamma (and dbeta) */

  PetscFunctionBegin;
  PetscCheck(!dx || !ln->affine || gamma, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s layer %" PetscInt_FMT ": the input's cotangent needs the parameters (theta is NULL)", ((PetscObject)layer)->type_name, layer->index);
  if (!dx && !dparam) PetscFunctionReturn(0);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscScalar *ps = ln->partsums + (size_t)part * 2 * E;
    PetscInt     p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    if (dparam)
      for (PetscInt e = 0; e < nterms * E; e++) ps[e] = 0.0;
    for (PetscInt p = p0; p < p1; p++) {
      const LN_T       *xp = x + (size_t)p * E, *dyp = dy + (size_t)p * E;
      const PetscScalar mu = mean[p], s = invstd[p];

      if (dparam) {
        for (PetscInt e = 0; e < E; e++) ps[e] += (PetscScalar)dyp[e] * (((PetscScalar)xp[e] - mu) * s);
        if (ln->center)
          for (PetscInt e = 0; e < E; e++) ps[E + e] += (PetscScalar)dyp[e];
      }
      if (dx) {
        LN_T       *dxp = dx + (size_t)p * E;
        PetscScalar a = 0.0, b = 0.0;

        for (PetscInt e = 0; e < E; e++) {
          const PetscScalar g = (gamma ? gamma[e] : 1.0) * (PetscScalar)dyp[e];

          a += g;
          b += g * (((PetscScalar)xp[e] - mu) * s);
        }
        a = c * a / E;
        b /= E;
        for (PetscInt e = 0; e < E; e++) {
          const PetscScalar g = (gamma ? gamma[e] : 1.0) * (PetscScalar)dyp[e];

          dxp[e] = (LN_T)(s * (g - a - (((PetscScalar)xp[e] - mu) * s) * b));
        }
      }
    }
  }
  if (dparam)
    for (PetscInt part = 0; part < nparts; part++)
      for (PetscInt e = 0; e < nterms * E; e++) dtheta[e] += ln->partsums[(size_t)part * 2 * E + e];
  PetscCall(PetscLogFlops((dx ? 9.0 : 0.0) * P * E + (dparam ? 4.0 : 0.0) * P * E));
  PetscFunctionReturn(0);
}

/*
  jvp: per position, with t = dx (zero when NULL), r = mean(t), q = mean(xhat t):
    xhat' = s (t - c r - xhat q)      (the normalisation's derivative: s' = -s^2 q moves xhat by -xhat q)
    dy    = gamma xhat' + dgamma xhat + dbeta
*/
static PetscErrorCode LN_NAME(LayerJVP_Norm)(Layer layer, PetscInt n, const PetscScalar *theta, const LN_T *x, const LN_T *y, const LN_T *dx, const PetscScalar *dtheta, LN_T *dy)
{
  Layer_Norm        *ln = (Layer_Norm *)layer->data;
  const PetscInt     E = ln->E, P = n * ln->m;
  const PetscScalar *gamma = ln->affine ? theta : NULL, *mean = ln->mean, *invstd = ln->invstd;
  const PetscScalar *dgamma = ln->affine && dtheta ? dtheta : NULL, *dbeta = ln->affine && ln->center && dtheta ? dtheta + E : NULL;
  const PetscReal    c = ln->center ? 1.0 : 0.0;

  PetscFunctionBegin;
  PetscCheck(!dx || !ln->affine || gamma, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s layer %" PetscInt_FMT ": the jvp needs the parameters (theta is NULL)", ((PetscObject)layer)->type_name, layer->index);
  const PetscInt nparts = PetNetThreadParts(P, LAYERNORM_PART_POSITIONS(E));

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscInt p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    for (PetscInt p = p0; p < p1; p++) {
      const LN_T       *xp  = x + (size_t)p * E;
      LN_T             *dyp = dy + (size_t)p * E;
      const PetscScalar mu = mean[p], s = invstd[p];
      PetscScalar       r = 0.0, q = 0.0;

      if (dx) {
        const LN_T *tp = dx + (size_t)p * E;

        for (PetscInt e = 0; e < E; e++) {
          r += (PetscScalar)tp[e];
          q += (((PetscScalar)xp[e] - mu) * s) * (PetscScalar)tp[e];
        }
        r = c * r / E;
        q /= E;
      }
      for (PetscInt e = 0; e < E; e++) {
        const PetscScalar xh = ((PetscScalar)xp[e] - mu) * s;
        PetscScalar       v  = 0.0;

        if (dx) v = (gamma ? gamma[e] : 1.0) * (s * ((PetscScalar)dx[(size_t)p * E + e] - r - xh * q));
        if (dgamma) v += dgamma[e] * xh;
        if (dbeta) v += dbeta[e];
        dyp[e] = (LN_T)v;
      }
    }
  }
  PetscCall(PetscLogFlops(10.0 * P * E));
  PetscFunctionReturn(0);
}
