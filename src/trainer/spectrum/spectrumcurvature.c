/*
  Curvature spectra of a symmetric operator H (the Net's Hessian or Gauss-Newton matrix, or the user's): the top
  eigenvalues with SLEPc's EPS, Hutchinson's trace estimate, and the spectral density by stochastic Lanczos quadrature.

  Stochastic Lanczos quadrature (Golub & Meurant; Ubaru, Chen & Saad 2017; Ghorbani, Krishnan & Xiao 2019). For a unit
  probe v, k Lanczos steps give V_k = [v_1 .. v_k] (v_1 = v) and the tridiagonal T_k = V_k^T H V_k:

      alpha_j = v_j^T H v_j,   beta_j v_{j+1} = H v_j - alpha_j v_j - beta_{j-1} v_{j-1}    (then reorthogonalised)

  With T_k = Q diag(theta) Q^T (LAPACK dsteqr), v^T f(H) v ~ sum_i tau_i f(theta_i), tau_i = Q[0][i]^2: a k-node Gauss
  quadrature of the spectral measure of H seen from v. Averaged over m Rademacher probes z (v = z/|z|), the nodes and
  weights tau_i/m approximate the eigenvalue density of H (its measure sums to 1), and N sum_i tau_i theta_i = z^T H z
  is also Hutchinson's sample of the trace. Full reorthogonalisation (classical Gram-Schmidt, twice: VecMDot and
  VecMAXPY against the whole basis) keeps the basis orthogonal to round-off, so no ghost copies of converged
  eigenvalues appear; its cost, O(k^2 N) per probe, is small next to k Hessian-vector products.
*/
#include <petnet/private/spectrumimpl.h>
#include <petscblaslapack.h>

/* The operator behind the counting shell (spectrum.c) */
static PetscErrorCode SpectrumGetCountedOperator_Private(Spectrum sp, Mat *Hc)
{
  Mat H;

  PetscFunctionBegin;
  PetscCall(SpectrumGetOperator(sp, &H));
  *Hc = sp->Hc;
  PetscFunctionReturn(0);
}

/*@
  SpectrumComputeEigenvalues - the k largest eigenvalues of the operator (the Net's Hessian or Gauss-Newton matrix over
  the batch, or the user's) with SLEPc's EPS

  Collective

  Input Parameters:
+ sp - the Spectrum
- k  - how many, or PETSC_DEFAULT for -spectrum_k (default 5)

  Output Parameters:
+ nconv - how many converged (at most k), or NULL
- eig   - the converged eigenvalues, in EPS's order (largest first), array of k entries (may be NULL)

  Notes:
  EPS solves the Hermitian problem with Krylov-Schur for the largest algebraic eigenvalues, unless options say
  otherwise (-spectrum_eps_type power -spectrum_eps_largest_magnitude runs the power method, the way PyHessian
  computes the top eigenvalues); the tolerance is EPS's relative residual |H x - lambda x| / |lambda| (default 1e-8,
  -spectrum_eps_tol). The initial vector is a Rademacher probe, so the iteration is the same on any number of ranks.
  SpectrumView() prints the eigenvalues with their residuals, the iterations, the operator products and the time.

  Level: beginner

.seealso: `SpectrumGetEPS()`, `SpectrumComputeTrace()`, `SpectrumComputeDensity()`, `SpectrumView()`, `LossCreateNetHessian()`
@*/
PetscErrorCode SpectrumComputeEigenvalues(Spectrum sp, PetscInt k, PetscInt *nconv, PetscReal eig[])
{
  Mat            Hc = NULL;
  Vec            v0;
  PetscInt       n, applied;
  PetscBool      training;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidLogicalCollectiveInt(sp, k, 2);
  if (k == PETSC_DEFAULT || k == PETSC_DECIDE) k = sp->k;
  PetscCheck(k >= 1, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_OUTOFRANGE, "Number of eigenvalues %" PetscInt_FMT ": give at least 1", k);
  PetscCall(PetscLogEventBegin(SPECTRUM_Eigenvalues, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumBeginAnalysis_Private(sp, &training));
  PetscCall(SpectrumGetCountedOperator_Private(sp, &Hc));
  PetscCall(EPSSetOperators(sp->eps, Hc, NULL));
  PetscCall(EPSSetDimensions(sp->eps, k, PETSC_DEFAULT, PETSC_DEFAULT));
  if (sp->fromoptions) PetscCall(EPSSetFromOptions(sp->eps)); /* -spectrum_eps_nev, _ncv, _mpd win */
  {
    PetscBool   power;
    EPSWhich    which;
    const char *prefix;

    PetscCall(PetscObjectTypeCompare((PetscObject)sp->eps, EPSPOWER, &power));
    PetscCall(EPSGetWhichEigenpairs(sp->eps, &which));
    PetscCall(EPSGetOptionsPrefix(sp->eps, &prefix));
    PetscCheck(!power || which == EPS_LARGEST_MAGNITUDE || which == EPS_TARGET_MAGNITUDE, PetscObjectComm((PetscObject)sp), PETSC_ERR_SUP,
               "The power method (EPS power) finds the eigenvalues of largest magnitude only: add -%seps_largest_magnitude (they are the largest ones unless the operator has negative eigenvalues of larger magnitude)", prefix ? prefix : "");
  }
  PetscCall(MatCreateVecs(Hc, &v0, NULL));
  PetscCall(SpectrumRademacher_Private(sp, -1, v0));
  PetscCall(EPSSetInitialSpace(sp->eps, 1, &v0));
  applied = sp->napply;
  PetscCall(EPSSolve(sp->eps));
  PetscCall(VecDestroy(&v0));
  PetscCall(EPSGetConverged(sp->eps, &n));
  PetscCall(EPSGetIterationNumber(sp->eps, &sp->eigits));
  PetscCall(PetscFree2(sp->eig, sp->eigerr));
  PetscCall(PetscMalloc2(k, &sp->eig, k, &sp->eigerr));
  sp->neig  = k;
  sp->nconv = PetscMin(n, k);
  for (PetscInt i = 0; i < sp->nconv; i++) {
    PetscScalar re, im;

    PetscCall(EPSGetEigenvalue(sp->eps, i, &re, &im));
    PetscCall(EPSComputeError(sp->eps, i, EPS_ERROR_RELATIVE, &sp->eigerr[i]));
    sp->eig[i] = PetscRealPart(re);
    if (eig) eig[i] = sp->eig[i];
  }
  sp->eigapply = sp->napply - applied;
  PetscCall(SpectrumEndAnalysis_Private(sp, training));
  PetscCall(PetscTime(&t1));
  sp->eigtime = t1 - t0;
  if (nconv) *nconv = sp->nconv;
  PetscCall(PetscLogEventEnd(SPECTRUM_Eigenvalues, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@
  SpectrumComputeTrace - Hutchinson's estimate of the trace of the operator: the mean of z^T H z over Rademacher probes z

  Collective

  Input Parameters:
+ sp - the Spectrum
- m  - the number of probes (one operator product each), or PETSC_DEFAULT for -spectrum_probes (default 20)

  Output Parameters:
+ trace - the estimate, or NULL
- se    - its standard error, the standard deviation of the m samples over sqrt(m) (0 when m = 1), or NULL

  Notes:
  E[z^T H z] = tr(H) for z with independent +-1 entries; the variance is 2 (|H|_F^2 - sum_i H_ii^2), so the estimate
  is good when the diagonal dominates. The probes are those of SpectrumComputeDensity() with the same seed: entry i of
  probe j depends only on the seed, j and i, so the estimate is the same on any number of ranks.

  Level: beginner

.seealso: `SpectrumComputeDensity()`, `SpectrumSetSeed()`, `SpectrumComputeEigenvalues()`
@*/
PetscErrorCode SpectrumComputeTrace(Spectrum sp, PetscInt m, PetscReal *trace, PetscReal *se)
{
  Mat            Hc = NULL;
  Vec            z, Hz;
  PetscReal      sum = 0, sum2 = 0;
  PetscInt       applied;
  PetscBool      training;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidLogicalCollectiveInt(sp, m, 2);
  if (m == PETSC_DEFAULT || m == PETSC_DECIDE) m = sp->nprobes;
  PetscCheck(m >= 1, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_OUTOFRANGE, "Number of probes %" PetscInt_FMT ": give at least 1", m);
  PetscCall(PetscLogEventBegin(SPECTRUM_Trace, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumBeginAnalysis_Private(sp, &training));
  PetscCall(SpectrumGetCountedOperator_Private(sp, &Hc));
  PetscCall(MatCreateVecs(Hc, &z, &Hz));
  applied = sp->napply;
  for (PetscInt j = 0; j < m; j++) {
    PetscScalar s;

    PetscCall(SpectrumRademacher_Private(sp, j, z));
    PetscCall(MatMult(Hc, z, Hz));
    PetscCall(VecDot(Hz, z, &s));
    sum += PetscRealPart(s);
    sum2 += PetscRealPart(s) * PetscRealPart(s);
  }
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&Hz));
  sp->trace       = sum / m;
  sp->tracese     = m > 1 ? PetscSqrtReal(PetscMax(sum2 - m * sp->trace * sp->trace, 0) / (m - 1) / m) : 0;
  sp->traceprobes = m;
  sp->traceapply  = sp->napply - applied;
  sp->hastrace    = PETSC_TRUE;
  PetscCall(SpectrumEndAnalysis_Private(sp, training));
  PetscCall(PetscTime(&t1));
  sp->tracetime = t1 - t0;
  if (trace) *trace = sp->trace;
  if (se) *se = sp->tracese;
  PetscCall(PetscLogEventEnd(SPECTRUM_Trace, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* One probe's Lanczos process (see the top): alpha[0..*k), beta[0..*k - 1); *k drops below the steps asked for when
   the Krylov space is exhausted (beta negligible: the probe lies in an invariant subspace) */
static PetscErrorCode SpectrumLanczos_Private(Mat H, Vec v, PetscInt *k, Vec V[], PetscReal alpha[], PetscReal beta[], PetscScalar work[])
{
  PetscInt  steps = *k;
  PetscReal nrm, scale = 0;

  PetscFunctionBegin;
  PetscCall(VecNormalize(v, NULL));
  PetscCall(VecCopy(v, V[0]));
  for (PetscInt j = 0; j < steps; j++) {
    Vec w = V[j + 1];

    PetscCall(MatMult(H, V[j], w));
    /* w -= V[0..j] (V^T w), twice (classical Gram-Schmidt with reorthogonalisation): removes alpha_j v_j, beta_{j-1}
       v_{j-1} and the round-off components along the older vectors at once */
    for (PetscInt pass = 0; pass < 2; pass++) {
      PetscCall(VecMDot(w, j + 1, V, work));
      if (pass == 0)
        alpha[j] = PetscRealPart(work[j]);
      else
        alpha[j] += PetscRealPart(work[j]);
      for (PetscInt i = 0; i <= j; i++) work[i] = -work[i];
      PetscCall(VecMAXPY(w, j + 1, work, V));
    }
    scale = PetscMax(scale, PetscAbsReal(alpha[j]));
    PetscCall(VecNorm(w, NORM_2, &nrm));
    if (j == steps - 1) break;
    if (nrm <= 100 * PETSC_MACHINE_EPSILON * PetscMax(scale, nrm) || nrm == 0) {
      *k = j + 1;
      PetscFunctionReturn(0);
    }
    beta[j] = nrm;
    PetscCall(VecScale(w, 1.0 / nrm));
  }
  PetscFunctionReturn(0);
}

/*@
  SpectrumComputeDensity - the eigenvalue density of the operator by stochastic Lanczos quadrature: m Rademacher
  probes, k Lanczos steps each with full reorthogonalisation, the Gauss quadrature nodes and weights of each

  Collective

  Input Parameters:
+ sp - the Spectrum
. m  - the number of probes, or PETSC_DEFAULT for -spectrum_slq_probes (default 4)
- k  - the Lanczos steps per probe (operator products), or PETSC_DEFAULT for -spectrum_lanczos_steps (default 30)

  Output Parameters:
+ n       - the number of nodes (m k, fewer when a Krylov space is exhausted early), or NULL
. nodes   - the nodes, eigenvalues of each probe's tridiagonal matrix (array of m k entries, may be NULL)
- weights - their weights, summing to 1 (array of m k entries, may be NULL)

  Notes:
  The density is phi(t) = sum_i weights_i delta(t - nodes_i); SpectrumDensityEvaluate() smooths it with a Gaussian.
  Each probe's extreme nodes converge to the extreme eigenvalues first, so the support approximates [lambda_min,
  lambda_max]; N sum_i weights_i nodes_i is a trace estimate, equal to SpectrumComputeTrace()'s on the same probes.
  The tridiagonal matrices are diagonalised with LAPACK's dsteqr. The basis takes k + 1 vectors of the parameter
  layout.

  Level: intermediate

.seealso: `SpectrumDensityEvaluate()`, `SpectrumComputeTrace()`, `SpectrumComputeEigenvalues()`, `SpectrumView()`
@*/
PetscErrorCode SpectrumComputeDensity(Spectrum sp, PetscInt m, PetscInt k, PetscInt *n, PetscReal nodes[], PetscReal weights[])
{
  Mat            Hc = NULL;
  Vec           *V, v;
  PetscReal     *alpha, *beta, *Q, *lwork;
  PetscScalar   *work;
  PetscInt       N, count = 0, applied;
  PetscBool      training;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidLogicalCollectiveInt(sp, m, 2);
  PetscValidLogicalCollectiveInt(sp, k, 3);
  if (m == PETSC_DEFAULT || m == PETSC_DECIDE) m = sp->nslq;
  if (k == PETSC_DEFAULT || k == PETSC_DECIDE) k = sp->nsteps;
  PetscCheck(m >= 1 && k >= 1, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_OUTOFRANGE, "Stochastic Lanczos quadrature with %" PetscInt_FMT " probes of %" PetscInt_FMT " steps: give at least 1 of each", m, k);
  PetscCall(PetscLogEventBegin(SPECTRUM_Density, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumBeginAnalysis_Private(sp, &training));
  PetscCall(SpectrumGetCountedOperator_Private(sp, &Hc));
  PetscCall(MatGetSize(Hc, &N, NULL));
  k = PetscMin(k, N);
  PetscCall(MatCreateVecs(Hc, &v, NULL));
  PetscCall(VecDuplicateVecs(v, k + 1, &V));
  PetscCall(PetscMalloc5(k, &alpha, k, &beta, k * k, &Q, PetscMax(1, 2 * k - 2), &lwork, k + 1, &work));
  PetscCall(PetscFree2(sp->nodes, sp->weights));
  PetscCall(PetscMalloc2(m * k, &sp->nodes, m * k, &sp->weights));
  applied          = sp->napply;
  sp->densitytrace = 0;
  for (PetscInt j = 0; j < m; j++) {
    PetscInt     kj = k;
    PetscBLASInt bk, info;

    PetscCall(SpectrumRademacher_Private(sp, j, v));
    PetscCall(SpectrumLanczos_Private(Hc, v, &kj, V, alpha, beta, work));
    PetscCall(PetscBLASIntCast(kj, &bk));
    PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
    PetscCallBLAS("LAPACKsteqr", LAPACKREALsteqr_("I", &bk, alpha, beta, Q, &bk, lwork, &info));
    PetscCall(PetscFPTrapPop());
    PetscCheck(!info, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dsteqr failed on the Lanczos matrix of probe %" PetscInt_FMT ": info %d", j, (int)info);
    for (PetscInt i = 0; i < kj; i++) {
      sp->nodes[count]   = alpha[i];
      sp->weights[count] = Q[i * kj] * Q[i * kj] / m; /* first component of eigenvector i (column-major) */
      sp->densitytrace += N * sp->weights[count] * sp->nodes[count];
      count++;
    }
  }
  PetscCall(PetscFree5(alpha, beta, Q, lwork, work));
  PetscCall(VecDestroyVecs(k + 1, &V));
  PetscCall(VecDestroy(&v));
  sp->ndensity      = count;
  sp->densityprobes = m;
  sp->densitysteps  = k;
  sp->densityapply  = sp->napply - applied;
  if (n) *n = count;
  if (nodes) PetscCall(PetscArraycpy(nodes, sp->nodes, count));
  if (weights) PetscCall(PetscArraycpy(weights, sp->weights, count));
  PetscCall(SpectrumEndAnalysis_Private(sp, training));
  PetscCall(PetscTime(&t1));
  sp->densitytime = t1 - t0;
  PetscCall(PetscLogEventEnd(SPECTRUM_Density, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@
  SpectrumDensityEvaluate - a quadrature's density smoothed by a Gaussian: phi(t) = sum_i w_i g_sigma(t - x_i) with
  g_sigma the normal density of standard deviation sigma

  Not collective

  Input Parameters:
+ n       - the number of nodes
. nodes   - the nodes x_i (SpectrumComputeDensity())
. weights - their weights w_i
. sigma   - the width, > 0
. ngrid   - the number of points
- grid    - the points t

  Output Parameter:
. density - phi at each point (ngrid entries); it integrates to the sum of the weights

  Level: intermediate

.seealso: `SpectrumComputeDensity()`
@*/
PetscErrorCode SpectrumDensityEvaluate(PetscInt n, const PetscReal nodes[], const PetscReal weights[], PetscReal sigma, PetscInt ngrid, const PetscReal grid[], PetscReal density[])
{
  PetscFunctionBegin;
  PetscCheck(sigma > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Gaussian width %g: give sigma > 0", (double)sigma);
  for (PetscInt g = 0; g < ngrid; g++) {
    PetscReal phi = 0;

    for (PetscInt i = 0; i < n; i++) {
      PetscReal d = (grid[g] - nodes[i]) / sigma;

      phi += weights[i] * PetscExpReal(-0.5 * d * d);
    }
    density[g] = phi / (sigma * PetscSqrtReal(2 * PETSC_PI));
  }
  PetscFunctionReturn(0);
}
