static const char help[] = "Learn the rate constants of the stiff Robertson kinetics through TSAdjoint with an implicit integrator.\n"
                           "  truth       y1' = -k1 y1 + k3 y2 y3,  y2' = k1 y1 - k2 y2^2 - k3 y2 y3,  y3' = k2 y2^2,\n"
                           "              k = (0.04, 3e7, 1e4), y(0) = (1, 0, 0); observations log-spaced in [1e-5, 100] from an accurate\n"
                           "              adaptive 5th-order implicit Runge-Kutta solve (ARKIMEX 5, fully implicit; -data_ts_* options)\n"
                           "  model       the same mass-action structure with the three log-rates p = log k as the trained parameters,\n"
                           "              started a factor F away from the truth (F k1, k2 / F, F k3)\n"
                           "  loss        mean over observations of sum_c ((y_c - d_c) / s_c)^2, s = (1, 1e-4, 1) (y2 is ~1e-5)\n"
                           "  integrator  cn through the implicit form (-ts_type cn|beuler|theta), fixed steps on a log grid with\n"
                           "              -rober_substeps steps per observation interval; gradient by NetTSTimeSeriesGradient (TSAdjoint\n"
                           "              through MATSHELL Jacobians, segment by segment); optimizer TAO (-tao_type, default lmvm)\n"
                           "  explicit    the same loss and gradient with rk 4 on the same steps, at the start and at the true rates:\n"
                           "              the stiff system is unstable there (Inf/NaN)\n"
                           "  -rober_observations M (default 40)  -rober_substeps K (default 8)  -rober_iterations N (default 100)\n"
                           "  -rober_start_factor F (default 3)   -rober_test_gradient: check the gradient against finite differences first\n"
                           "Ends with: summary: ... final_loss=... k1=... k2=... k3=... max_rel_err=... explicit_diverged=0|1\n";

/*
  The right-hand side f(y; p) = sum_r exp(p_r) m_r(y) S_r with monomials m = (y1, y2^2, y2 y3) and stoichiometric
  columns S_1 = (-1, 1, 0), S_2 = (0, -1, 1), S_3 = (1, -1, 0). TS receives

    explicit types (rk)   RHS form       G = f,  dG/dy = J_f (MATSHELL),  dG/dp = f_p (MATSHELL)
    implicit types        implicit form  F = ydot - f,  dF/dy + shift dF/dydot = shift I - J_f (MATSHELL, with the
                                         assembled 3x3 shift I - J_f as the preconditioner matrix: PCLU),  dF/dp = -f_p

  TSAdjoint applies the shells (MatMult, MatMultTranspose) at the state of the last Jacobian request, kept in the
  context. The system has three unknowns: every rank solves it whole (PETSC_COMM_SELF) and rank 0 prints.
*/
#include <petnet.h>
#include <petnetts.h>
#include <petnetoptim.h>

static const PetscReal TrueRates[3] = {0.04, 3.0e7, 1.0e4};
static const PetscReal Scale[3]     = {1.0, 1.0e-4, 1.0};

typedef struct {
  Vec       p;        /* the log-rates: the parameters (columns of dF/dp) */
  PetscReal k[3];     /* exp(p) at the linearization point */
  PetscReal y[3];     /* the state of the last Jacobian request */
  PetscReal shift;    /* implicit form: the shift of the last IJacobian */
  PetscBool implicit; /* which form the shells apply */
  Mat       J, JP, P; /* shells and the assembled preconditioner matrix */
} Rober;

static PetscErrorCode GetRates(Rober *ctx, PetscReal k[3])
{
  const PetscScalar *p;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(ctx->p, &p));
  for (PetscInt r = 0; r < 3; r++) k[r] = PetscExpReal(PetscRealPart(p[r]));
  PetscCall(VecRestoreArrayRead(ctx->p, &p));
  PetscFunctionReturn(0);
}

/* f = f(y; k) */
static void MassAction(const PetscReal k[3], const PetscScalar y[3], PetscScalar f[3])
{
  const PetscScalar r1 = k[0] * y[0], r2 = k[1] * y[1] * y[1], r3 = k[2] * y[1] * y[2];

  f[0] = -r1 + r3;
  f[1] = r1 - r2 - r3;
  f[2] = r2;
}

/* the 3x3 Jacobian J_f (row-major) at (y, k) */
static void MassActionJacobian(const PetscReal k[3], const PetscReal y[3], PetscReal J[9])
{
  J[0] = -k[0];
  J[1] = k[2] * y[2];
  J[2] = k[2] * y[1];
  J[3] = k[0];
  J[4] = -2.0 * k[1] * y[1] - k[2] * y[2];
  J[5] = -k[2] * y[1];
  J[6] = 0.0;
  J[7] = 2.0 * k[1] * y[1];
  J[8] = 0.0;
}

/* the 3x3 f_p = df/dp (row-major): column r = k_r m_r(y) S_r */
static void MassActionJacobianP(const PetscReal k[3], const PetscReal y[3], PetscReal JP[9])
{
  const PetscReal r1 = k[0] * y[0], r2 = k[1] * y[1] * y[1], r3 = k[2] * y[1] * y[2];

  JP[0] = -r1;
  JP[1] = 0.0;
  JP[2] = r3;
  JP[3] = r1;
  JP[4] = -r2;
  JP[5] = -r3;
  JP[6] = 0.0;
  JP[7] = r2;
  JP[8] = 0.0;
}

static PetscErrorCode RoberRHSFunction(TS ts, PetscReal t, Vec Y, Vec G, void *vctx)
{
  Rober             *ctx = (Rober *)vctx;
  PetscReal          k[3];
  const PetscScalar *y;
  PetscScalar       *g;

  PetscFunctionBegin;
  PetscCall(GetRates(ctx, k));
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayWrite(G, &g));
  MassAction(k, y, g);
  PetscCall(VecRestoreArrayWrite(G, &g));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(0);
}

static PetscErrorCode RoberIFunction(TS ts, PetscReal t, Vec Y, Vec Ydot, Vec F, void *vctx)
{
  PetscFunctionBegin;
  PetscCall(RoberRHSFunction(ts, t, Y, F, vctx));
  PetscCall(VecAYPX(F, -1.0, Ydot));
  PetscFunctionReturn(0);
}

/* Keep (y, k) as the linearization point of the shells */
static PetscErrorCode RoberLinearize(Rober *ctx, Vec Y)
{
  const PetscScalar *y;

  PetscFunctionBegin;
  PetscCall(GetRates(ctx, ctx->k));
  PetscCall(VecGetArrayRead(Y, &y));
  for (PetscInt c = 0; c < 3; c++) ctx->y[c] = PetscRealPart(y[c]);
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(0);
}

static PetscErrorCode RoberRHSJacobian(TS ts, PetscReal t, Vec Y, Mat A, Mat B, void *vctx)
{
  PetscFunctionBegin;
  PetscCall(RoberLinearize((Rober *)vctx, Y));
  PetscFunctionReturn(0);
}

/* The shell is shift I - J_f; the preconditioner matrix gets its entries */
static PetscErrorCode RoberIJacobian(TS ts, PetscReal t, Vec Y, Vec Ydot, PetscReal shift, Mat A, Mat B, void *vctx)
{
  Rober       *ctx = (Rober *)vctx;
  PetscReal    J[9];
  PetscScalar *b;
  PetscInt     lda;

  PetscFunctionBegin;
  PetscCall(RoberLinearize(ctx, Y));
  ctx->shift = shift;
  MassActionJacobian(ctx->k, ctx->y, J);
  PetscCall(MatDenseGetLDA(B, &lda));
  PetscCall(MatDenseGetArrayWrite(B, &b)); /* column-major */
  for (PetscInt i = 0; i < 3; i++)
    for (PetscInt j = 0; j < 3; j++) b[i + j * lda] = (i == j ? shift : 0.0) - J[3 * i + j];
  PetscCall(MatDenseRestoreArrayWrite(B, &b));
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode RoberRHSJacobianP(TS ts, PetscReal t, Vec Y, Mat A, void *vctx)
{
  PetscFunctionBegin;
  PetscCall(RoberLinearize((Rober *)vctx, Y));
  PetscFunctionReturn(0);
}

static PetscErrorCode RoberIJacobianP(TS ts, PetscReal t, Vec Y, Vec Ydot, PetscReal shift, Mat A, void *vctx)
{
  PetscFunctionBegin;
  PetscCall(RoberLinearize((Rober *)vctx, Y));
  PetscFunctionReturn(0);
}

/* out = M in or M^T in for the 3x3 row-major M, then (implicit form) out = shift in - out or -out */
static PetscErrorCode Apply3x3(const PetscReal M[9], PetscBool transpose, PetscReal shift, PetscBool implicit, Vec in, Vec out)
{
  const PetscScalar *x;
  PetscScalar       *y;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(in, &x));
  PetscCall(VecGetArrayWrite(out, &y));
  for (PetscInt i = 0; i < 3; i++) {
    PetscScalar s = 0.0;

    for (PetscInt j = 0; j < 3; j++) s += (transpose ? M[3 * j + i] : M[3 * i + j]) * x[j];
    y[i] = implicit ? shift * x[i] - s : s;
  }
  PetscCall(VecRestoreArrayWrite(out, &y));
  PetscCall(VecRestoreArrayRead(in, &x));
  PetscCall(PetscLogFlops(21.0));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_RoberJ(Mat A, Vec x, Vec y)
{
  Rober    *ctx;
  PetscReal J[9];

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  MassActionJacobian(ctx->k, ctx->y, J);
  PetscCall(Apply3x3(J, PETSC_FALSE, ctx->shift, ctx->implicit, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_RoberJ(Mat A, Vec x, Vec y)
{
  Rober    *ctx;
  PetscReal J[9];

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  MassActionJacobian(ctx->k, ctx->y, J);
  PetscCall(Apply3x3(J, PETSC_TRUE, ctx->shift, ctx->implicit, x, y));
  PetscFunctionReturn(0);
}

/* dF/dp = -f_p in the implicit form (shift 0 in Apply3x3 gives -M x), dG/dp = f_p in the RHS form */
static PetscErrorCode MatMult_RoberJP(Mat A, Vec x, Vec y)
{
  Rober    *ctx;
  PetscReal JP[9];

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  MassActionJacobianP(ctx->k, ctx->y, JP);
  PetscCall(Apply3x3(JP, PETSC_FALSE, 0.0, ctx->implicit, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_RoberJP(Mat A, Vec x, Vec y)
{
  Rober    *ctx;
  PetscReal JP[9];

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  MassActionJacobianP(ctx->k, ctx->y, JP);
  PetscCall(Apply3x3(JP, PETSC_TRUE, 0.0, ctx->implicit, x, y));
  PetscFunctionReturn(0);
}

/*
  A TS for the model with log-rates p: the type decides the form. prefix: options prefix (NULL for the training TS).
  Implicit solves: Newton with GMRES on the shell, preconditioned by LU of the assembled 3x3, to tight tolerances
  (the adjoint is only as exact as these solves).
*/
static PetscErrorCode CreateModelTS(Vec p, const char type[], const char prefix[], TS *ts, Rober **rober)
{
  Rober *ctx;
  PetscBool explicit;

  PetscFunctionBegin;
  PetscCall(PetscNew(&ctx));
  PetscCall(PetscObjectReference((PetscObject)p));
  ctx->p = p;
  PetscCall(TSCreate(PETSC_COMM_SELF, ts));
  PetscCall(TSSetOptionsPrefix(*ts, prefix));
  PetscCall(TSSetProblemType(*ts, TS_NONLINEAR));
  PetscCall(TSSetType(*ts, type));
  PetscCall(PetscObjectTypeCompare((PetscObject)*ts, TSRK, &explicit));
  if (explicit) PetscCall(TSRKSetType(*ts, TSRK4));
  PetscCall(TSSetFromOptions(*ts));
  PetscCall(PetscObjectTypeCompare((PetscObject)*ts, TSRK, &explicit));
  ctx->implicit = explicit ? PETSC_FALSE : PETSC_TRUE;
  PetscCall(MatCreateShell(PETSC_COMM_SELF, 3, 3, 3, 3, ctx, &ctx->J));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT, (void (*)(void))MatMult_RoberJ));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_RoberJ));
  PetscCall(MatCreateShell(PETSC_COMM_SELF, 3, 3, 3, 3, ctx, &ctx->JP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT, (void (*)(void))MatMult_RoberJP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_RoberJP));
  if (ctx->implicit) {
    SNES snes;
    KSP  ksp;
    PC   pc;

    PetscCall(MatCreateSeqDense(PETSC_COMM_SELF, 3, 3, NULL, &ctx->P));
    PetscCall(TSSetIFunction(*ts, NULL, RoberIFunction, ctx));
    PetscCall(TSSetIJacobian(*ts, ctx->J, ctx->P, RoberIJacobian, ctx));
    PetscCall(TSSetIJacobianP(*ts, ctx->JP, RoberIJacobianP, ctx));
    PetscCall(TSGetSNES(*ts, &snes));
    PetscCall(SNESSetTolerances(snes, 1e-14, 1e-10, 1e-14, 50, PETSC_DEFAULT));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetType(ksp, KSPGMRES));
    PetscCall(KSPSetTolerances(ksp, 1e-14, 1e-30, PETSC_DEFAULT, 10));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCLU));
  } else {
    PetscCall(TSSetRHSFunction(*ts, NULL, RoberRHSFunction, ctx));
    PetscCall(TSSetRHSJacobian(*ts, ctx->J, ctx->J, RoberRHSJacobian, ctx));
    PetscCall(TSSetRHSJacobianP(*ts, ctx->JP, RoberRHSJacobianP, ctx));
  }
  PetscCall(TSSetFromOptions(*ts)); /* again: the solver options now that the form is set */
  *rober = ctx;
  PetscFunctionReturn(0);
}

static PetscErrorCode RoberDestroy(Rober **rober)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&(*rober)->p));
  PetscCall(MatDestroy(&(*rober)->J));
  PetscCall(MatDestroy(&(*rober)->JP));
  PetscCall(MatDestroy(&(*rober)->P));
  PetscCall(PetscFree(*rober));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */

typedef struct {
  PetscInt   nobs, substeps, ngrid;
  PetscReal *grid;  /* the TS lands on every grid time; observation i is grid point i * substeps */
  PetscReal *data;  /* data[3 i + c] */
  Vec        y0, p; /* the initial state, the trained log-rates */
  TS         ts;
  PetscInt   nevals;
  PetscReal  blowup; /* the first grid time with a state off the simplex y_c in [-1, 2] (or Inf/NaN); -1: none */
} Problem;

/* The data: an adaptive 5th-order ARK solve (fully implicit, rtol 1e-10, atol 1e-14) with the true rates, landing on
   the observations */
static PetscErrorCode GenerateData(Problem *pb)
{
  TS         ts;
  Rober     *ctx;
  Vec        p, y, *sols;
  PetscReal *span;
  PetscInt   nsols;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(pb->p, &p));
  for (PetscInt r = 0; r < 3; r++) PetscCall(VecSetValue(p, r, PetscLogReal(TrueRates[r]), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(p));
  PetscCall(VecAssemblyEnd(p));
  PetscCall(CreateModelTS(p, TSARKIMEX, "data_", &ts, &ctx));
  PetscCall(TSARKIMEXSetType(ts, TSARKIMEX5));
  PetscCall(TSARKIMEXSetFullyImplicit(ts, PETSC_TRUE));
  PetscCall(TSSetTolerances(ts, 1e-14, NULL, 1e-10, NULL));
  PetscCall(TSSetTimeStep(ts, 1e-8));
  PetscCall(TSSetMaxSteps(ts, 100000));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(PetscMalloc1(pb->nobs + 1, &span));
  span[0] = 0.0;
  for (PetscInt i = 0; i < pb->nobs; i++) span[i + 1] = pb->grid[i * pb->substeps];
  PetscCall(TSSetTimeSpan(ts, pb->nobs + 1, span));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(VecDuplicate(pb->y0, &y));
  PetscCall(VecCopy(pb->y0, y));
  PetscCall(TSSolve(ts, y));
  PetscCall(TSGetTimeSpanSolutions(ts, &nsols, &sols));
  PetscCheck(nsols == pb->nobs + 1, PETSC_COMM_SELF, PETSC_ERR_NOT_CONVERGED, "The data solve stopped after %" PetscInt_FMT " of %" PetscInt_FMT " observation times", nsols - 1, pb->nobs);
  for (PetscInt i = 0; i < pb->nobs; i++) {
    const PetscScalar *x;

    PetscCall(VecGetArrayRead(sols[i + 1], &x));
    for (PetscInt c = 0; c < 3; c++) pb->data[3 * i + c] = PetscRealPart(x[c]);
    PetscCall(VecRestoreArrayRead(sols[i + 1], &x));
  }
  PetscCall(PetscFree(span));
  PetscCall(VecDestroy(&y));
  PetscCall(TSDestroy(&ts));
  PetscCall(RoberDestroy(&ctx));
  PetscCall(VecDestroy(&p));
  PetscFunctionReturn(0);
}

/* l_j = (1/nobs) sum_c ((y_c - d_c) / s_c)^2 at the grid points that are observations, 0 between them */
static PetscErrorCode Observe(TS ts, PetscInt j, PetscReal t, Vec Y, PetscReal *l, Vec dldy, void *vctx)
{
  Problem           *pb = (Problem *)vctx;
  const PetscScalar *y;
  PetscScalar       *g;

  PetscFunctionBegin;
  *l = 0.0;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayWrite(dldy, &g));
  for (PetscInt c = 0; c < 3; c++) {
    const PetscReal yc = PetscRealPart(y[c]);

    if (pb->blowup < 0 && (PetscIsInfOrNanReal(yc) || yc < -1.0 || yc > 2.0)) pb->blowup = t;
    g[c] = 0.0;
    if (j % pb->substeps == 0) {
      const PetscReal e = PetscRealPart(y[c] - pb->data[3 * (j / pb->substeps) + c]) / Scale[c];

      *l += e * e / pb->nobs;
      g[c] = 2.0 * e / (Scale[c] * pb->nobs);
    }
  }
  PetscCall(VecRestoreArrayWrite(dldy, &g));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(0);
}

/* The loss and its gradient with respect to the log-rates: one forward solve over the grid and the adjoint */
static PetscErrorCode LossAndGradient(Problem *pb, TS ts, PetscReal *f, Vec G)
{
  PetscFunctionBegin;
  pb->blowup = -1.0;
  PetscCall(NetTSTimeSeriesGradient(ts, pb->y0, pb->ngrid, pb->grid, Observe, pb, f, NULL, G));
  pb->nevals++;
  PetscFunctionReturn(0);
}

static PetscErrorCode Objective(Tao tao, Vec p, PetscReal *f, Vec G, void *vctx)
{
  Problem *pb = (Problem *)vctx;

  PetscFunctionBegin;
  PetscCall(VecCopy(p, pb->p)); /* the TS callbacks read pb->p; p is the Tao's own Vec (a line search may pass a trial point) */
  PetscCall(LossAndGradient(pb, pb->ts, f, G));
  PetscFunctionReturn(0);
}

/* a loss for printing: inf or nan spelled out (PETSc's %g appends a '.') */
static PetscErrorCode FormatLoss(PetscReal f, size_t len, char str[])
{
  PetscFunctionBegin;
  if (PetscIsNanReal(f))
    PetscCall(PetscStrncpy(str, "nan", len));
  else if (PetscIsInfReal(f))
    PetscCall(PetscStrncpy(str, "inf", len));
  else
    PetscCall(PetscSNPrintf(str, len, "%.6e", (double)f));
  PetscFunctionReturn(0);
}

static PetscErrorCode SetLogRates(Vec p, const PetscReal k[3], const PetscReal factor[3])
{
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetArrayWrite(p, &a));
  for (PetscInt r = 0; r < 3; r++) a[r] = PetscLogReal(k[r] * factor[r]);
  PetscCall(VecRestoreArrayWrite(p, &a));
  PetscFunctionReturn(0);
}

/* The adjoint gradient against central finite differences in each log-rate (error if off by more than 1e-6) */
static PetscErrorCode CheckGradient(Problem *pb)
{
  const PetscReal    h = 1e-6;
  Vec                G, p0;
  PetscReal          f, fp, fm, maxerr = 0.0;
  const PetscScalar *g;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(pb->p, &G));
  PetscCall(VecDuplicate(pb->p, &p0));
  PetscCall(VecCopy(pb->p, p0));
  PetscCall(LossAndGradient(pb, pb->ts, &f, G));
  PetscCall(VecGetArrayRead(G, &g));
  for (PetscInt r = 0; r < 3; r++) {
    PetscReal fd, err;

    PetscCall(VecCopy(p0, pb->p));
    PetscCall(VecSetValue(pb->p, r, h, ADD_VALUES));
    PetscCall(VecAssemblyBegin(pb->p));
    PetscCall(VecAssemblyEnd(pb->p));
    PetscCall(LossAndGradient(pb, pb->ts, &fp, NULL));
    PetscCall(VecSetValue(pb->p, r, -2.0 * h, ADD_VALUES));
    PetscCall(VecAssemblyBegin(pb->p));
    PetscCall(VecAssemblyEnd(pb->p));
    PetscCall(LossAndGradient(pb, pb->ts, &fm, NULL));
    fd     = (fp - fm) / (2 * h);
    err    = PetscAbsReal(fd - PetscRealPart(g[r])) / PetscMax(PetscAbsReal(fd), 1e-12);
    maxerr = PetscMax(maxerr, err);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "gradient check: dL/dlog k%" PetscInt_FMT " % .8e  finite difference % .8e\n", r + 1, (double)PetscRealPart(g[r]), (double)fd));
  }
  PetscCall(VecRestoreArrayRead(G, &g));
  PetscCall(VecCopy(p0, pb->p));
  PetscCall(PetscInfo(NULL, "gradient check: largest relative difference %g\n", (double)maxerr));
  PetscCheck(maxerr <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The adjoint gradient differs from central finite differences by %g (relative)", (double)maxerr);
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&p0));
  PetscFunctionReturn(0);
}

/* The explicit integrator on the same steps: loss and gradient at p; diverged if either is not finite */
static PetscErrorCode ExplicitRun(Problem *pb, Vec p, PetscReal *f, PetscBool *diverged, PetscReal *blowup)
{
  TS        ts;
  Rober    *ctx;
  Vec       G;
  PetscReal gnorm;

  PetscFunctionBegin;
  PetscCall(CreateModelTS(p, TSRK, "explicit_", &ts, &ctx));
  PetscCall(TSSetTimeStep(ts, 1e3)); /* every step is cut to the next grid time */
  PetscCall(VecDuplicate(p, &G));
  PetscCall(LossAndGradient(pb, ts, f, G));
  PetscCall(VecNorm(G, NORM_2, &gnorm));
  *diverged = (PetscIsInfOrNanReal(*f) || PetscIsInfOrNanReal(gnorm)) ? PETSC_TRUE : PETSC_FALSE;
  *blowup   = pb->blowup;
  PetscCall(VecDestroy(&G));
  PetscCall(TSDestroy(&ts));
  PetscCall(RoberDestroy(&ctx));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  const PetscReal    one[3] = {1.0, 1.0, 1.0};
  PetscReal          factor = 3.0, start[3];
  Problem            pb;
  Rober             *ctx;
  Tao                tao;
  Vec                x;
  TaoConvergedReason reason;
  PetscInt           iterations = 100, niter;
  PetscReal          f0, f, fe0, fe1, k[3], maxerr = 0.0, blow0, blow1;
  char               sf0[32], sf[32], sratio[32], sfe0[32], sfe1[32];
  PetscBool          div0, div1, testgradient = PETSC_FALSE;
  const PetscScalar *p;
  PetscLogDouble     t0, t1;
  char               tstype[64] = TSCN;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, rmsprop, ...) for TaoSetType and -tao_type */
  PetscCall(PetscMemzero(&pb, sizeof(pb)));
  pb.nobs     = 40;
  pb.substeps = 8;
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Robertson kinetics", NULL);
  PetscCall(PetNetOptionsInt("-rober_observations", "Observation times, log-spaced in [1e-5, 100]", NULL, pb.nobs, &pb.nobs, NULL));
  PetscCall(PetNetOptionsInt("-rober_substeps", "Time steps between observations (a log grid)", NULL, pb.substeps, &pb.substeps, NULL));
  PetscCall(PetNetOptionsInt("-rober_iterations", "Optimizer iterations", NULL, iterations, &iterations, NULL));
  PetscCall(PetscOptionsReal("-rober_start_factor", "Start from the rates (F k1, k2 / F, F k3)", NULL, factor, &factor, NULL));
  PetscCall(PetscOptionsBool("-rober_test_gradient", "Check the adjoint gradient at the starting rates against finite differences", NULL, testgradient, &testgradient, NULL));
  PetscCall(PetscOptionsString("-ts_type", "The training integrator (implicit: beuler, cn, theta)", "TSSetType", tstype, tstype, sizeof(tstype), NULL));
  PetscOptionsEnd();
  start[0] = factor;
  start[1] = 1.0 / factor;
  start[2] = factor;
  PetscCheck(pb.nobs >= 2 && pb.substeps >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "Give -rober_observations >= 2 and -rober_substeps >= 1");

  /* the grid: log-spaced from 1e-5 to 100, substeps intervals per observation interval (the TS starts at 0) */
  pb.ngrid = (pb.nobs - 1) * pb.substeps + 1;
  PetscCall(PetscMalloc2(pb.ngrid, &pb.grid, 3 * pb.nobs, &pb.data));
  for (PetscInt j = 0; j < pb.ngrid; j++) pb.grid[j] = 1e-5 * PetscPowReal(10.0, 7.0 * j / (pb.ngrid - 1));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 3, &pb.y0));
  PetscCall(VecSetValue(pb.y0, 0, 1.0, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(pb.y0));
  PetscCall(VecAssemblyEnd(pb.y0));
  PetscCall(VecDuplicate(pb.y0, &pb.p));
  PetscCall(GenerateData(&pb));

  /* the implicit model, from rates a factor F off */
  PetscCall(SetLogRates(pb.p, TrueRates, start));
  PetscCall(CreateModelTS(pb.p, tstype, NULL, &pb.ts, &ctx));
  PetscCall(TSSetTimeStep(pb.ts, 1e3)); /* every step is cut to the next grid time */
  if (testgradient) PetscCall(CheckGradient(&pb));
  PetscCall(TaoCreate(PETSC_COMM_SELF, &tao));
  PetscCall(TaoSetType(tao, TAOLMVM));
  PetscCall(VecDuplicate(pb.p, &x));
  PetscCall(VecCopy(pb.p, x));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, Objective, &pb));
  PetscCall(TaoSetMaximumIterations(tao, iterations));
  PetscCall(TaoSetTolerances(tao, 0.0, 0.0, 1e-8)); /* |g| <= 1e-8 |g0|: below, the solver tolerances are the noise */
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(PetscTime(&t0));
  PetscCall(LossAndGradient(&pb, pb.ts, &f0, NULL));
  if (PetscIsInfOrNanReal(f0)) { /* e.g. -ts_type rk: nothing to train from */
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "The loss at the starting rates is not finite with %s: not training\n", tstype));
    niter  = 0;
    f      = f0;
    reason = TAO_DIVERGED_NAN;
  } else {
    PetscCall(TaoSolve(tao));
    PetscCall(TaoGetSolutionStatus(tao, &niter, &f, NULL, NULL, NULL, &reason));
    PetscCall(VecCopy(x, pb.p));
  }
  PetscCall(PetscTime(&t1));
  PetscCall(VecGetArrayRead(pb.p, &p));
  for (PetscInt r = 0; r < 3; r++) {
    k[r]   = PetscExpReal(PetscRealPart(p[r]));
    maxerr = PetscMax(maxerr, PetscAbsReal(k[r] - TrueRates[r]) / TrueRates[r]);
  }
  PetscCall(VecRestoreArrayRead(pb.p, &p));

  /* the explicit integrator on the same steps, at the starting rates and at the true ones */
  {
    Vec pe;

    PetscCall(VecDuplicate(pb.p, &pe));
    PetscCall(SetLogRates(pe, TrueRates, start));
    PetscCall(ExplicitRun(&pb, pe, &fe0, &div0, &blow0));
    PetscCall(SetLogRates(pe, TrueRates, one));
    PetscCall(ExplicitRun(&pb, pe, &fe1, &div1, &blow1));
    PetscCall(VecDestroy(&pe));
  }
  PetscCall(FormatLoss(f0, sizeof(sf0), sf0));
  PetscCall(FormatLoss(f, sizeof(sf), sf));
  PetscCall(FormatLoss(f / f0, sizeof(sratio), sratio));
  PetscCall(FormatLoss(fe0, sizeof(sfe0), sfe0));
  PetscCall(FormatLoss(fe1, sizeof(sfe1), sfe1));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %" PetscInt_FMT " steps per solve: loss %s -> %s in %" PetscInt_FMT " iterations (%s, %" PetscInt_FMT " loss+gradient evaluations)\n", tstype, pb.ngrid, sf0, sf, niter, TaoConvergedReasons[reason],
                        pb.nevals));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "rates: k1 %.6e (true %.2e)  k2 %.6e (true %.2e)  k3 %.6e (true %.2e)\n", (double)k[0], (double)TrueRates[0], (double)k[1], (double)TrueRates[1], (double)k[2], (double)TrueRates[2]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "rk 4 on the same steps: loss %s at the starting rates (state off the simplex from t = %.3e), %s at the true rates (from t = %.3e)\n", sfe0, (double)blow0, sfe1, (double)blow1));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "summary: integrator=%s steps=%" PetscInt_FMT " iterations=%" PetscInt_FMT " initial_loss=%s final_loss=%s loss_ratio=%s k1=%.6e k2=%.6e k3=%.6e max_rel_err=%.3e explicit_loss=%s explicit_diverged=%d train_time_s=%.3f",
                        tstype, pb.ngrid, niter, sf0, sf, sratio, (double)k[0], (double)k[1], (double)k[2], (double)maxerr, sfe0, (div0 && div1) ? 1 : 0, (double)(t1 - t0)));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&x));
  PetscCall(TSDestroy(&pb.ts));
  PetscCall(RoberDestroy(&ctx));
  PetscCall(VecDestroy(&pb.y0));
  PetscCall(VecDestroy(&pb.p));
  PetscCall(PetscFree2(pb.grid, pb.data));
  PetscCall(PetscFinalize());
  return 0;
}
