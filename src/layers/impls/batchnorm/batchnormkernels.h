/*
  batchnorm's forward, backward and jvp on one element type, included once per type by batchnorm.c:
    BN_T        PetscScalar or float: the values x, y, dx, dy
    BN_NAME(f)  f or fSingle
  The parameters, the statistics (mu, s), the running statistics and every sum are double for both types: the sums
  over positions are double reductions of the BN_T values (BatchNormPartSums), in the same parts and with the same MPI
  reductions, so that single precision changes only the elementwise passes, which run in BN_T with the per-channel
  coefficients rounded to BN_T once per pass (BatchNormSetCoefficients):  out = A v + B xhat + D,  xhat = (x - mu) s.
*/

/*
  sums[k C + c] = the sums of kind (X, DEV2 or V) over the P positions (1 or 2 terms per channel), each part of the
  positions into its own row of bn->partsums, the rows then added in part order: the same bits for any number of
  threads
*/
static void BN_NAME(BatchNormPartSums)(Layer_BatchNorm *bn, BatchNormSumKind kind, PetscInt P, const BN_T *x, const BN_T *v, PetscScalar *sums)
{
  const PetscInt C = bn->C, nterms = kind == BATCHNORM_SUM_V ? 2 : 1;
  const PetscInt nparts = PetNetThreadParts(P, PetscMax(1, BATCHNORM_PART_VALUES / PetscMax(C, 1)));

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscScalar *ps = bn->partsums + (size_t)part * 5 * C;
    PetscInt     p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    for (PetscInt c = 0; c < nterms * C; c++) ps[c] = 0.0;
    for (PetscInt p = p0; p < p1; p++) {
      const BN_T *xp = x + (size_t)p * C;

      if (kind == BATCHNORM_SUM_X)
        for (PetscInt c = 0; c < C; c++) ps[c] += xp[c];
      else if (kind == BATCHNORM_SUM_DEV2)
        for (PetscInt c = 0; c < C; c++) {
          const PetscScalar d = xp[c] - bn->mean[c];

          ps[c] += d * d;
        }
      else
        for (PetscInt c = 0; c < C; c++) {
          const PetscScalar vc = v[(size_t)p * C + c];

          ps[c] += vc;
          ps[C + c] += vc * ((xp[c] - bn->mean[c]) * bn->invstd[c]);
        }
    }
  }
  for (PetscInt c = 0; c < nterms * C; c++) sums[c] = bn->partsums[c];
  for (PetscInt part = 1; part < nparts; part++)
    for (PetscInt c = 0; c < nterms * C; c++) sums[c] += bn->partsums[(size_t)part * 5 * C + c];
}

/* mean, var (biased) and invstd from the global batch (training) or the running statistics (evaluation) */
static PetscErrorCode BN_NAME(BatchNormStatistics)(Layer layer, PetscInt n, const BN_T *x)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt   C = bn->C, P = n * bn->m;
  MPI_Comm         comm = PetscObjectComm((PetscObject)layer);
  PetscScalar     *sums = bn->sums, *rmean = layer->buffers, *rvar = layer->buffers + C;
  PetscReal        M;

  PetscFunctionBegin;
  bn->batchstats = layer->training;
  layer->coupled = bn->batchstats; /* the batch's mean and variance enter every sample's output */
  if (!bn->batchstats) {
    for (PetscInt c = 0; c < C; c++) {
      bn->mean[c]   = rmean[c];
      bn->var[c]    = rvar[c];
      bn->invstd[c] = 1.0 / PetscSqrtScalar(rvar[c] + bn->eps);
    }
    PetscFunctionReturn(0);
  }
  /* two passes (mean, then squared deviations) for accuracy */
  BN_NAME(BatchNormPartSums)(bn, BATCHNORM_SUM_X, P, x, NULL, sums);
  sums[C] = (PetscScalar)P;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, C + 1, MPIU_SCALAR, MPIU_SUM, comm));
  M = PetscRealPart(sums[C]);
  PetscCheck(M > 1, comm, PETSC_ERR_ARG_SIZ, "batchnorm in training mode needs more than one value per channel in the batch, but the batch has %g: use a larger batch or NetSetTraining(net, PETSC_FALSE)", (double)M);
  for (PetscInt c = 0; c < C; c++) bn->mean[c] = sums[c] / M;
  BN_NAME(BatchNormPartSums)(bn, BATCHNORM_SUM_DEV2, P, x, NULL, sums);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, C, MPIU_SCALAR, MPIU_SUM, comm));
  for (PetscInt c = 0; c < C; c++) {
    bn->var[c]    = sums[c] / M;
    bn->invstd[c] = 1.0 / PetscSqrtScalar(bn->var[c] + bn->eps);
  }
  bn->count = M;
  if (!layer->frozen) {
    bn->nbatches++;
    for (PetscInt c = 0; c < C; c++) {
      rmean[c] = (1.0 - bn->momentum) * rmean[c] + bn->momentum * bn->mean[c];
      rvar[c]  = (1.0 - bn->momentum) * rvar[c] + bn->momentum * sums[c] / (M - 1.0);
    }
  }
  PetscCall(PetscLogFlops(4.0 * P * C + 8.0 * C));
  PetscFunctionReturn(0);
}

/*
  Per channel, over the local values of v: sums[c] = sum v, sums[C + c] = sum v xhat (the parameter gradient of a
  cotangent v). Then with batch statistics, means[] = the same sums over the global batch divided by M, which enter the
  Jacobian through mu and var (zero otherwise). Reduces in training mode even when v is NULL (zeros) so that every
  rank takes part in the collective.
*/
static PetscErrorCode BN_NAME(BatchNormSums)(Layer layer, PetscInt n, const BN_T *x, const BN_T *v, PetscScalar *means)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt   C = bn->C, P = n * bn->m;
  PetscScalar     *sums = bn->sums;

  PetscFunctionBegin;
  for (PetscInt c = 0; c < 2 * C; c++) sums[c] = 0.0;
  if (v) {
    BN_NAME(BatchNormPartSums)(bn, BATCHNORM_SUM_V, P, x, v, sums);
    PetscCall(PetscLogFlops(5.0 * P * C));
  }
  for (PetscInt c = 0; c < 2 * C; c++) means[c] = 0.0;
  if (bn->batchstats) {
    PetscCall(MPIU_Allreduce(sums, means, 2 * C, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)layer)));
    for (PetscInt c = 0; c < 2 * C; c++) means[c] /= bn->count;
  }
  PetscFunctionReturn(0);
}

/* the coefficients of a pass in BN_T, [5C]: mu, s, A (0 when NULL), B, D (double, rounded once) */
static const BN_T *BN_NAME(BatchNormSetCoefficients)(Layer_BatchNorm *bn, const PetscScalar *A, const PetscScalar *B, const PetscScalar *D)
{
  const PetscInt C  = bn->C;
  BN_T          *co = (BN_T *)bn->tcoef;

  for (PetscInt c = 0; c < C; c++) {
    co[c]         = (BN_T)bn->mean[c];
    co[C + c]     = (BN_T)bn->invstd[c];
    co[2 * C + c] = A ? (BN_T)A[c] : (BN_T)0;
    co[3 * C + c] = (BN_T)B[c];
    co[4 * C + c] = (BN_T)D[c];
  }
  return co;
}

/*
  out = A v + B xhat + D per channel, xhat = (x - mu) s, from the coefficients co [5C] (mu, s, A, B, D): the shape of
  the forward (v NULL, B = gamma, D = beta), the backward and the jvp. Block by block of positions, so that act, an
  activation passed with the forward call (or NULL), runs on the block just written, in cache.
*/
static PetscErrorCode BN_NAME(BatchNormAffine)(Layer layer, PetscInt P, const BN_T *co, const BN_T *x, const BN_T *v, BN_T *out, Layer act)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt   C = bn->C, nblocks = (P + BATCHNORM_BLOCK_POSITIONS - 1) / BATCHNORM_BLOCK_POSITIONS;
  const BN_T      *mu = co, *s = co + C, *A = co + 2 * C, *B = co + 3 * C, *D = co + 4 * C;
  PetscErrorCode   err = 0;

  PetscFunctionBegin;
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if ((PetscLogDouble)P * C > BATCHNORM_PART_VALUES)
  for (PetscInt k = 0; k < nblocks; k++) {
    const PetscInt p0 = k * BATCHNORM_BLOCK_POSITIONS, p1 = PetscMin(p0 + BATCHNORM_BLOCK_POSITIONS, P);

    if (v) {
      for (PetscInt p = p0; p < p1; p++)
        for (PetscInt c = 0; c < C; c++) out[(size_t)p * C + c] = A[c] * v[(size_t)p * C + c] + B[c] * ((x[(size_t)p * C + c] - mu[c]) * s[c]) + D[c];
    } else {
      for (PetscInt p = p0; p < p1; p++)
        for (PetscInt c = 0; c < C; c++) out[(size_t)p * C + c] = B[c] * ((x[(size_t)p * C + c] - mu[c]) * s[c]) + D[c];
    }
    PetNetThreadsSetError(&err, BN_NAME(LayerActivate)(act, (p1 - p0) * C, out + (size_t)p0 * C));
  }
  PetNetThreadsCheck(err, "batchnorm forward");
  PetscFunctionReturn(0);
}

/* y = gamma xhat + beta, then (in the same pass, block by block) act, an activation passed by the caller (or NULL) */
static PetscErrorCode BN_NAME(LayerForwardAct_BatchNorm)(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const BN_T *x, BN_T *y)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;

  PetscFunctionBegin;
  PetscCall(BN_NAME(BatchNormStatistics)(layer, n, x));
  PetscCall(BN_NAME(BatchNormAffine)(layer, n * bn->m, BN_NAME(BatchNormSetCoefficients)(bn, NULL, theta, theta + bn->C), x, NULL, y, act));
  PetscCall(PetscLogFlops(4.0 * n * bn->m * bn->C));
  PetscFunctionReturn(0);
}

static PetscErrorCode BN_NAME(LayerForward_BatchNorm)(Layer layer, PetscInt n, const PetscScalar *theta, const BN_T *x, BN_T *y)
{
  PetscFunctionBegin;
  PetscCall(BN_NAME(LayerForwardAct_BatchNorm)(layer, NULL, n, theta, x, y));
  PetscFunctionReturn(0);
}

/* dx = gamma s (dy - mean(dy) - xhat mean(xhat dy)) (the means only with batch statistics); dgamma += sum dy xhat, dbeta += sum dy */
static PetscErrorCode BN_NAME(LayerBackward_BatchNorm)(Layer layer, PetscInt n, const PetscScalar *theta, const BN_T *x, const BN_T *y, const BN_T *dy, BN_T *dx, PetscScalar *dtheta)
{
  Layer_BatchNorm   *bn    = (Layer_BatchNorm *)layer->data;
  const PetscInt     C     = bn->C;
  const PetscScalar *gamma = theta;
  PetscScalar       *means = bn->coef, *A = bn->coef + 2 * C, *B = bn->coef + 3 * C, *D = bn->coef + 4 * C;

  PetscFunctionBegin;
  PetscCall(BN_NAME(BatchNormSums)(layer, n, x, dy, means));
  if (dtheta) {
    for (PetscInt c = 0; c < C; c++) {
      dtheta[c] += bn->sums[C + c];
      dtheta[C + c] += bn->sums[c];
    }
  }
  if (dx) {
    for (PetscInt c = 0; c < C; c++) {
      A[c] = gamma[c] * bn->invstd[c];
      B[c] = -A[c] * means[C + c];
      D[c] = -A[c] * means[c];
    }
    PetscCall(BN_NAME(BatchNormAffine)(layer, n * bn->m, BN_NAME(BatchNormSetCoefficients)(bn, A, B, D), x, dy, dx, NULL));
    PetscCall(PetscLogFlops(6.0 * n * bn->m * C));
  }
  PetscFunctionReturn(0);
}

/* dy = gamma s (dx - mean(dx) - xhat mean(xhat dx)) + dgamma xhat + dbeta */
static PetscErrorCode BN_NAME(LayerJVP_BatchNorm)(Layer layer, PetscInt n, const PetscScalar *theta, const BN_T *x, const BN_T *y, const BN_T *dx, const PetscScalar *dtheta, BN_T *dy)
{
  Layer_BatchNorm   *bn    = (Layer_BatchNorm *)layer->data;
  const PetscInt     C     = bn->C;
  const PetscScalar *gamma = theta;
  PetscScalar       *means = bn->coef, *A = bn->coef + 2 * C, *B = bn->coef + 3 * C, *D = bn->coef + 4 * C;

  PetscFunctionBegin;
  PetscCall(BN_NAME(BatchNormSums)(layer, n, x, dx, means));
  for (PetscInt c = 0; c < C; c++) {
    A[c] = gamma[c] * bn->invstd[c];
    B[c] = (dtheta ? dtheta[c] : 0.0) - (dx ? A[c] * means[C + c] : 0.0);
    D[c] = (dtheta ? dtheta[C + c] : 0.0) - (dx ? A[c] * means[c] : 0.0);
  }
  PetscCall(BN_NAME(BatchNormAffine)(layer, n * bn->m, BN_NAME(BatchNormSetCoefficients)(bn, A, B, D), x, dx, dy, NULL));
  PetscCall(PetscLogFlops(6.0 * n * bn->m * C));
  PetscFunctionReturn(0);
}
