static const char help[] = "Nets on DMDA fields (include/petnetdmda.h).\n"
                           "  -case apply     NetDMDAForward on a 2-D DMDA (dof 3 -> dof 4): the field gathered in natural order equals a\n"
                           "                  one-rank Net applied to the gathered input (<= 1e-14), on any number of ranks\n"
                           "  -case jacobian  J = A + dN/dU (NetDMDACreateJacobian, A a 5-point stencil from DMCreateMatrix): dot-product\n"
                           "                  test, central finite differences of G(U) = A U + N(U), and a Newton solve of G(U) = b with J\n"
                           "                  and the preconditioner built from A alone\n"
                           "  -case ts        NetDMDATSSetRHS + NetTSSetUserRHS (diffusion) on a 2-D DMDA: TSAdjointSolve gradients with\n"
                           "                  respect to u0 and theta against finite differences, rk 4 and cn (preconditioned by shift I - A),\n"
                           "                  a pointwise MLP and a grid-distributed CNN (dmconv2d)\n"
                           "  -case conv      the dmconv2d layer: grid-distributed on 2-D DMDAs (zero padding, periodic) equal to conv2d (or to itself)\n"
                           "                  on one rank with the same weights (<= 1e-13), on batches equal to conv2d; dot-product and finite-\n"
                           "                  difference tests of every Jacobian (NetTestJacobian); -conv_algorithm auto, im2col or taps\n"
                           "  -case wrongdof  a Net whose input size is not the DMDA's dof (error test)\n"
                           "  -case badkernel dmconv2d:4:4, an even kernel (error test)\n"
                           "Random fields are drawn in the DMDA's natural ordering: the same on any number of ranks.\n";

#include <petnetdmda.h>

/* v (a global Vec of da) = entries of one random stream in the natural ordering: the same field on any number of ranks */
static PetscErrorCode FillRandomField(DM da, Vec v, unsigned long seed)
{
  Vec          natural;
  PetscRandom  rnd;
  PetscInt     N, rstart, rend;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(DMDACreateNaturalVector(da, &natural));
  PetscCall(VecGetSize(natural, &N));
  PetscCall(VecGetOwnershipRange(natural, &rstart, &rend));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetArrayWrite(natural, &a));
  for (PetscInt i = 0; i < N; i++) {
    PetscReal r;

    PetscCall(PetscRandomGetValueReal(rnd, &r));
    if (i >= rstart && i < rend) a[i - rstart] = 2.0 * r - 1.0;
  }
  PetscCall(VecRestoreArrayWrite(natural, &a));
  PetscCall(DMDANaturalToGlobalBegin(da, natural, INSERT_VALUES, v));
  PetscCall(DMDANaturalToGlobalEnd(da, natural, INSERT_VALUES, v));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&natural));
  PetscFunctionReturn(0);
}

/* *all = the field v of da in natural ordering, a sequential Vec on every rank */
static PetscErrorCode GatherNatural(DM da, Vec v, Vec *all)
{
  Vec        natural;
  VecScatter scatter;

  PetscFunctionBegin;
  PetscCall(DMDACreateNaturalVector(da, &natural));
  PetscCall(DMDAGlobalToNaturalBegin(da, v, INSERT_VALUES, natural));
  PetscCall(DMDAGlobalToNaturalEnd(da, v, INSERT_VALUES, natural));
  PetscCall(VecScatterCreateToAll(natural, &scatter, all));
  PetscCall(VecScatterBegin(scatter, natural, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, natural, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(VecDestroy(&natural));
  PetscFunctionReturn(0);
}

/* A Net on PETSC_COMM_SELF with the same layers and parameters as net */
static PetscErrorCode CreateSelfCopy(Net net, Net *copy)
{
  char        spec[1024];
  PetNetShape in;
  Vec         theta, all, mine;
  VecScatter  scatter;

  PetscFunctionBegin;
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetCreate(PETSC_COMM_SELF, copy));
  PetscCall(NetSetLayers(*copy, spec));
  PetscCall(NetSetInputShape(*copy, &in));
  PetscCall(NetSetUp(*copy));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecScatterCreateToAll(theta, &scatter, &all));
  PetscCall(VecScatterBegin(scatter, theta, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, theta, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(NetGetParameters(*copy, &mine));
  PetscCall(VecCopy(all, mine));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(VecDestroy(&all));
  PetscFunctionReturn(0);
}

/* case apply ---------------------------------------------------------------------------------------------------- */
static PetscErrorCode CheckApply(void)
{
  DM          da, da4;
  Net         net, self;
  Vec         U, F, Uall, Fall, Fself;
  PetscReal   diff, nrm;
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, 13, 11, PETSC_DECIDE, PETSC_DECIDE, 3, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDACreateCompatibleDMDA(da, 4, &da4));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:6,tanh,dense:4"));
  PetscCall(NetSetSeed(net, 3));
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(NetGetInputShape(net, &in));
  PetscCheck(in.ndim == 1 && in.dim[0] == 3, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetDMDASetUp() set the input shape to %" PetscInt_FMT " dims, first %" PetscInt_FMT ", not (3)", in.ndim, in.dim[0]);
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(DMCreateGlobalVector(da4, &F));
  PetscCall(FillRandomField(da, U, 11));
  PetscCall(NetDMDAForward(net, da, U, F));

  /* the same Net on one rank, over the whole field in natural order */
  PetscCall(CreateSelfCopy(net, &self));
  PetscCall(GatherNatural(da, U, &Uall));
  PetscCall(GatherNatural(da4, F, &Fall));
  PetscCall(VecDuplicate(Fall, &Fself));
  PetscCall(NetForward(self, Uall, Fself));
  PetscCall(VecNorm(Fself, NORM_INFINITY, &nrm));
  PetscCall(VecAXPY(Fself, -1.0, Fall));
  PetscCall(VecNorm(Fself, NORM_INFINITY, &diff));
  PetscCheck(diff <= 1e-14 * nrm, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetDMDAForward differs from the one-rank Net by %g (max |F| %g)", (double)diff, (double)nrm);
  PetscCall(VecNorm(F, NORM_2, &nrm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "apply: 13x11 grid, dof 3 -> 4, |F| = %.10e, equal to the one-rank Net\n", (double)nrm));
  PetscCall(VecDestroy(&Fself));
  PetscCall(VecDestroy(&Fall));
  PetscCall(VecDestroy(&Uall));
  PetscCall(NetDestroy(&self));
  PetscCall(VecDestroy(&F));
  PetscCall(VecDestroy(&U));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da4));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* case jacobian ------------------------------------------------------------------------------------------------- */

/* A = -Laplacian, 5-point, per component, zero outside the grid (SPD) */
static PetscErrorCode CreateNegativeLaplacian(DM da, Mat *A)
{
  PetscInt xs, ys, xm, ym, M, N, dof;

  PetscFunctionBegin;
  PetscCall(DMDAGetInfo(da, NULL, &M, &N, NULL, NULL, NULL, NULL, &dof, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMCreateMatrix(da, A));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++)
      for (PetscInt c = 0; c < dof; c++) {
        MatStencil  row = {.j = j, .i = i, .c = c}, col[5];
        PetscScalar v[5];
        PetscInt    n = 0;

        col[n].j = j, col[n].i = i, col[n].c = c, v[n++] = 4.0;
        if (i > 0) col[n].j = j, col[n].i = i - 1, col[n].c = c, v[n++] = -1.0;
        if (i < M - 1) col[n].j = j, col[n].i = i + 1, col[n].c = c, v[n++] = -1.0;
        if (j > 0) col[n].j = j - 1, col[n].i = i, col[n].c = c, v[n++] = -1.0;
        if (j < N - 1) col[n].j = j + 1, col[n].i = i, col[n].c = c, v[n++] = -1.0;
        PetscCall(MatSetValuesStencil(*A, 1, &row, n, col, v, INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

typedef struct {
  DM  da;
  Net net;
  Mat A;
  Vec b, work;
} SteadyCtx;

/* G(U) = A U + N(U) - b */
static PetscErrorCode SteadyResidual(SNES snes, Vec U, Vec G, void *vctx)
{
  SteadyCtx *ctx = (SteadyCtx *)vctx;

  PetscFunctionBegin;
  PetscCall(NetDMDAForward(ctx->net, ctx->da, U, G));
  PetscCall(MatMultAdd(ctx->A, U, G, G));
  PetscCall(VecAXPY(G, -1.0, ctx->b));
  PetscFunctionReturn(0);
}

/* J = A + dN/dU at U: the shell follows the Net's last forward pass, so relinearize there */
static PetscErrorCode SteadyJacobian(SNES snes, Vec U, Mat J, Mat P, void *vctx)
{
  SteadyCtx *ctx = (SteadyCtx *)vctx;

  PetscFunctionBegin;
  PetscCall(NetDMDAForward(ctx->net, ctx->da, U, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckJacobian(void)
{
  const PetscReal     h = 1e-6;
  SteadyCtx           ctx;
  Mat                 J;
  Vec                 U, V, W, JV, JTW, Gp, Gm;
  PetscScalar         d1, d2;
  PetscReal           nJV, nW, fd, err, gnorm;
  SNES                snes;
  SNESConvergedReason reason;
  PetscInt            its;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 12, 10, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, &ctx.da));
  PetscCall(DMSetUp(ctx.da));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &ctx.net));
  PetscCall(NetSetLayers(ctx.net, "dense:8,tanh,dense:2"));
  PetscCall(NetSetSeed(ctx.net, 5));
  PetscCall(NetDMDASetUp(ctx.net, ctx.da));
  PetscCall(CreateNegativeLaplacian(ctx.da, &ctx.A));
  PetscCall(MatScale(ctx.A, 100.0)); /* -Laplacian / h^2, h = 0.1: G(U) = b is then well posed for any small Net */
  PetscCall(DMCreateGlobalVector(ctx.da, &U));
  PetscCall(VecDuplicate(U, &V));
  PetscCall(VecDuplicate(U, &W));
  PetscCall(VecDuplicate(U, &JV));
  PetscCall(VecDuplicate(U, &JTW));
  PetscCall(VecDuplicate(U, &Gp));
  PetscCall(VecDuplicate(U, &Gm));
  PetscCall(VecDuplicate(U, &ctx.b));
  PetscCall(VecDuplicate(U, &ctx.work));
  PetscCall(FillRandomField(ctx.da, U, 1));
  PetscCall(FillRandomField(ctx.da, V, 2));
  PetscCall(FillRandomField(ctx.da, W, 3));
  PetscCall(FillRandomField(ctx.da, ctx.b, 4));
  PetscCall(VecZeroEntries(ctx.work));
  PetscCall(NetDMDACreateJacobian(ctx.net, ctx.da, ctx.A, &J));

  /* central differences of G first: every evaluation moves the Net's linearization point */
  PetscCall(VecWAXPY(ctx.work, h, V, U));
  PetscCall(SteadyResidual(NULL, ctx.work, Gp, &ctx));
  PetscCall(VecWAXPY(ctx.work, -h, V, U));
  PetscCall(SteadyResidual(NULL, ctx.work, Gm, &ctx));
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecScale(Gp, 1.0 / (2 * h)));
  PetscCall(NetDMDAForward(ctx.net, ctx.da, U, NULL));
  PetscCall(MatMult(J, V, JV));
  PetscCall(MatMultTranspose(J, W, JTW));
  PetscCall(VecDot(JV, W, &d1));
  PetscCall(VecDot(V, JTW, &d2));
  PetscCall(VecNorm(JV, NORM_2, &nJV));
  PetscCall(VecNorm(W, NORM_2, &nW));
  err = PetscAbsScalar(d1 - d2) / (nJV * nW);
  PetscCheck(err <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Dot-product test of A + dN/dU fails: |<Jv,w> - <v,J^T w>| / (|Jv||w|) = %g", (double)err);
  PetscCall(VecAXPY(Gp, -1.0, JV));
  PetscCall(VecNorm(Gp, NORM_2, &fd));
  fd /= nJV;
  PetscCheck(fd <= 1e-7, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Finite differences of A U + N(U) differ from J v by %g (relative)", (double)fd);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian: dot-product test ok, finite differences ok\n"));
  PetscCall(PetscInfo(NULL, "jacobian: adjoint %g, fd %g\n", (double)err, (double)fd));

  /* Newton on A U + N(U) = b: the Net's term matrix-free, the preconditioner from A alone */
  PetscCall(SNESCreate(PETSC_COMM_WORLD, &snes));
  PetscCall(SNESSetFunction(snes, NULL, SteadyResidual, &ctx));
  PetscCall(SNESSetJacobian(snes, J, ctx.A, SteadyJacobian, &ctx));
  PetscCall(SNESSetTolerances(snes, 1e-12, 1e-10, PETSC_DEFAULT, 20, PETSC_DEFAULT));
  {
    KSP ksp;
    PC  pc;

    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetType(ksp, KSPGMRES));
    PetscCall(KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_DEFAULT, 200));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCJACOBI));
  }
  PetscCall(SNESSetFromOptions(snes));
  PetscCall(VecZeroEntries(U));
  PetscCall(SNESSolve(snes, NULL, U));
  PetscCall(SNESGetConvergedReason(snes, &reason));
  PetscCall(SNESGetIterationNumber(snes, &its));
  PetscCall(SteadyResidual(snes, U, Gp, &ctx));
  PetscCall(VecNorm(Gp, NORM_2, &gnorm));
  PetscCheck(reason > 0 && gnorm <= 1e-9 && its <= 6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Newton with J = A + dN/dU: %s after %" PetscInt_FMT " iterations, |G| = %g", SNESConvergedReasons[reason], its, (double)gnorm);
  PetscCall(VecNorm(U, NORM_2, &gnorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian: Newton on A U + N(U) = b converged in at most 6 iterations, |U| = %.8e\n", (double)gnorm));
  PetscCall(SNESDestroy(&snes));

  PetscCall(MatDestroy(&J));
  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&V));
  PetscCall(VecDestroy(&W));
  PetscCall(VecDestroy(&JV));
  PetscCall(VecDestroy(&JTW));
  PetscCall(VecDestroy(&Gp));
  PetscCall(VecDestroy(&Gm));
  PetscCall(VecDestroy(&ctx.b));
  PetscCall(VecDestroy(&ctx.work));
  PetscCall(MatDestroy(&ctx.A));
  PetscCall(NetDestroy(&ctx.net));
  PetscCall(DMDestroy(&ctx.da));
  PetscFunctionReturn(0);
}

/* case ts ------------------------------------------------------------------------------------------------------- */

typedef struct {
  Mat D; /* diffusion: -0.05 x the negative Laplacian */
} DiffusionCtx;

static PetscErrorCode Diffusion(TS ts, PetscReal t, Vec u, Vec G, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(MatMult(((DiffusionCtx *)ctx)->D, u, G));
  PetscFunctionReturn(0);
}

/* L = <w, u(T)> and, if lambda, its gradients by TSAdjointSolve */
static PetscErrorCode SolveTS(TS ts, Vec u0, Vec w, PetscReal *L, Vec lambda, Vec mu)
{
  Vec          u;
  PetscScalar  d;
  TSTrajectory tj;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(u0, &u));
  PetscCall(VecCopy(u0, u));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectoryReset(tj));
  PetscCall(TSSetTime(ts, 0.0));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetTimeStep(ts, 0.1));
  PetscCall(TSSolve(ts, u));
  PetscCall(VecDot(u, w, &d));
  *L = PetscRealPart(d);
  if (lambda) {
    Vec lam[1] = {lambda}, m[1] = {mu};

    PetscCall(VecCopy(w, lambda));
    PetscCall(VecZeroEntries(mu));
    PetscCall(TSSetCostGradients(ts, 1, lam, m));
    PetscCall(TSAdjointSolve(ts));
    PetscCall(TSAdjointReset(ts));
  }
  PetscCall(VecDestroy(&u));
  PetscFunctionReturn(0);
}

static PetscReal RelErr(PetscReal a, PetscReal b)
{
  return PetscAbsReal(a - b) / PetscMax(PetscAbsReal(b), 1e-12);
}

static PetscErrorCode CheckTS(TSType type, const char layers[])
{
  const PetscReal h = 1e-5;
  DM              da;
  Net             net;
  TS              ts;
  DiffusionCtx    user;
  Vec             u0, w, v, p, lambda, mu, theta, theta0, uh;
  PetscReal       L, Lp, Lm, errx, errp;
  PetscScalar     gx, gp;
  PetscBool       implicit;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 9, 8, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(CreateNegativeLaplacian(da, &user.D));
  PetscCall(MatScale(user.D, -0.05));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetSeed(net, 9));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetType(ts, type));
  if (!strcmp(type, TSRK)) PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetMaxTime(ts, 0.5));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(NetDMDATSSetRHS(ts, da, net));
  PetscCall(NetTSSetUserRHS(ts, Diffusion, user.D, NULL, &user));
  PetscCall(NetTSGetImplicit(ts, &implicit));
  if (implicit) { /* GMRES on the shell, preconditioned by shift I - D (assembled): block Jacobi + ILU */
    SNES snes;
    KSP  ksp;
    PC   pc;

    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESSetTolerances(snes, 1e-12, 1e-12, PETSC_DEFAULT, 50, PETSC_DEFAULT));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetTolerances(ksp, 1e-13, 1e-15, PETSC_DEFAULT, 500));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCBJACOBI));
  }
  PetscCall(NetTSSetSaveTrajectory(ts));
  PetscCall(TSSetFromOptions(ts));

  PetscCall(DMCreateGlobalVector(da, &u0));
  PetscCall(VecDuplicate(u0, &w));
  PetscCall(VecDuplicate(u0, &v));
  PetscCall(VecDuplicate(u0, &uh));
  PetscCall(VecDuplicate(u0, &lambda));
  PetscCall(NetCreateParameterVec(net, &mu));
  PetscCall(VecDuplicate(mu, &p));
  PetscCall(VecDuplicate(mu, &theta0));
  PetscCall(FillRandomField(da, u0, 21));
  PetscCall(FillRandomField(da, w, 22));
  PetscCall(FillRandomField(da, v, 23));
  PetscCall(VecSetRandom(p, NULL));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecCopy(theta, theta0));

  PetscCall(SolveTS(ts, u0, w, &L, lambda, mu));
  PetscCall(VecDot(lambda, v, &gx));
  PetscCall(VecDot(mu, p, &gp));
  PetscCall(VecWAXPY(uh, h, v, u0));
  PetscCall(SolveTS(ts, uh, w, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(uh, -h, v, u0));
  PetscCall(SolveTS(ts, uh, w, &Lm, NULL, NULL));
  errx = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gx));
  PetscCall(VecWAXPY(theta, h, p, theta0));
  PetscCall(SolveTS(ts, u0, w, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(theta, -h, p, theta0));
  PetscCall(SolveTS(ts, u0, w, &Lm, NULL, NULL));
  PetscCall(VecCopy(theta0, theta));
  errp = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gp));
  PetscCheck(errx <= 1e-6 && errp <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetDMDATSSetRHS + diffusion, %s: finite-difference errors %g (state) %g (parameters)", type, (double)errx, (double)errp);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "ts %-3s %s form, %s: L = %.8e, dL/du0 and dL/dtheta agree with finite differences\n", type, implicit ? "implicit" : "RHS", layers, (double)L));
  PetscCall(PetscInfo(NULL, "ts %s: fd errors %g %g\n", type, (double)errx, (double)errp));
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&u0));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&uh));
  PetscCall(VecDestroy(&lambda));
  PetscCall(VecDestroy(&mu));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&theta0));
  PetscCall(NetDestroy(&net));
  PetscCall(MatDestroy(&user.D));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* case conv ----------------------------------------------------------------------------------------------------- */

/* *net on comm with the given layers and input shape (NULL: set by NetDMDASetUp(net, da)) */
static PetscErrorCode CreateNet(MPI_Comm comm, const char layers[], const char shape[], DM da, Net *net)
{
  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  PetscCall(NetSetLayers(*net, layers));
  PetscCall(NetSetSeed(*net, 17));
  {
    LayerDMConv2dAlgorithm algorithm = LAYER_DMCONV2D_ALGORITHM_AUTO;
    PetscInt               nl;

    PetscCall(PetscOptionsGetEnum(NULL, NULL, "-conv_algorithm", LayerDMConv2dAlgorithms, (PetscEnum *)&algorithm, NULL));
    PetscCall(NetGetNumLayers(*net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer layer;

      PetscCall(NetGetLayer(*net, l, &layer));
      PetscCall(LayerDMConv2dSetAlgorithm(layer, algorithm));
    }
  }
  if (shape) {
    PetNetShape in;

    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetInputShape(*net, &in));
  }
  if (da)
    PetscCall(NetDMDASetUp(*net, da));
  else
    PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* dst's parameters = src's (both Nets have the same parameter layout, on any communicators) */
static PetscErrorCode CopyParameters(Net src, Net dst)
{
  Vec                theta, all, mine;
  VecScatter         scatter;
  PetscInt           rstart, rend;
  const PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(src, &theta));
  PetscCall(VecScatterCreateToAll(theta, &scatter, &all));
  PetscCall(VecScatterBegin(scatter, theta, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, theta, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(NetGetParameters(dst, &mine));
  PetscCall(VecGetOwnershipRange(mine, &rstart, &rend));
  PetscCall(VecGetArrayRead(all, &a));
  for (PetscInt i = rstart; i < rend; i++) PetscCall(VecSetValue(mine, i, a[i], INSERT_VALUES));
  PetscCall(VecRestoreArrayRead(all, &a));
  PetscCall(VecAssemblyBegin(mine));
  PetscCall(VecAssemblyEnd(mine));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(VecDestroy(&all));
  PetscFunctionReturn(0);
}

/* max |a - b| / max |b| */
static PetscErrorCode MaxRelativeDifference(Vec a, Vec b, PetscReal *d)
{
  Vec       diff;
  PetscReal nb;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(a, &diff));
  PetscCall(VecWAXPY(diff, -1.0, b, a));
  PetscCall(VecNorm(diff, NORM_INFINITY, d));
  PetscCall(VecNorm(b, NORM_INFINITY, &nb));
  *d /= nb;
  PetscCall(VecDestroy(&diff));
  PetscFunctionReturn(0);
}

/* Dot-product and finite-difference tests of every Jacobian of net at X (the errors are not printed: they vary by rank) */
static PetscErrorCode CheckDerivatives(Net net, Vec X, const char what[])
{
  PetscViewer viewer;
  PetscReal   doterr, fderr;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &viewer));
  PetscCall(NetTestJacobian(net, X, viewer, &doterr, &fderr));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCheck(doterr <= 1e-12 && fderr <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product error %g, finite-difference error %g", what, (double)doterr, (double)fderr);
  PetscCall(PetscInfo(NULL, "%s: dot-product error %g, finite-difference error %g\n", what, (double)doterr, (double)fderr));
  PetscFunctionReturn(0);
}

/*
  A grid-distributed Net on a DMDA of M x N points against the same weights on one rank: either conv2d on the whole
  (N, M, dof) image (reference = a conv2d spec), or the same dmconv2d Net on a one-rank DMDA (periodic grids); then the
  derivative tests of the distributed Net.
*/
static PetscErrorCode CheckGridConv(const char layers[], const char reference[], PetscInt M, PetscInt N, PetscInt dof, DMBoundaryType bx, DMBoundaryType by)
{
  DM        da, daself = NULL;
  Net       net, self;
  Vec       U, Y, Uall, Yall, Yself;
  PetscReal diff, nrm;
  char      shape[64];

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, bx, by, DMDA_STENCIL_STAR, M, N, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(CreateNet(PETSC_COMM_WORLD, layers, NULL, da, &net));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(FillRandomField(da, U, 31));
  {
    PetNetShape out;
    DM          dy;

    PetscCall(NetGetOutputShape(net, &out));
    PetscCall(DMDACreateCompatibleDMDA(da, out.dim[0], &dy));
    PetscCall(DMCreateGlobalVector(dy, &Y));
    PetscCall(NetDMDAForward(net, da, U, Y));
    PetscCall(GatherNatural(dy, Y, &Yall));
    PetscCall(DMDestroy(&dy));
  }
  PetscCall(GatherNatural(da, U, &Uall));

  /* the one-rank reference on the gathered field */
  if (reference) {
    PetscCall(PetscSNPrintf(shape, sizeof(shape), "%" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT, N, M, dof));
    PetscCall(CreateNet(PETSC_COMM_SELF, reference, shape, NULL, &self));
  } else {
    PetscCall(DMDACreate2d(PETSC_COMM_SELF, bx, by, DMDA_STENCIL_STAR, M, N, 1, 1, dof, 1, NULL, NULL, &daself));
    PetscCall(DMSetUp(daself));
    PetscCall(CreateNet(PETSC_COMM_SELF, layers, NULL, daself, &self));
  }
  PetscCall(CopyParameters(net, self));
  PetscCall(VecDuplicate(Yall, &Yself));
  PetscCall(NetForward(self, Uall, Yself));
  PetscCall(MaxRelativeDifference(Yall, Yself, &diff));
  PetscCheck(diff <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA differs from %s on one rank by %g (relative)", layers, M, N, reference ? reference : "itself", (double)diff);
  PetscCall(VecNorm(Yall, NORM_2, &nrm));
  PetscCall(CheckDerivatives(net, U, layers));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "conv grid %-36s %2" PetscInt_FMT "x%-2" PetscInt_FMT " %-8s |y| = %.10e, equal to %s on one rank, derivatives ok\n", layers, M, N, DMBoundaryTypes[bx], (double)nrm, reference ? reference : "itself"));
  PetscCall(VecDestroy(&Yself));
  PetscCall(NetDestroy(&self));
  PetscCall(DMDestroy(&daself));
  PetscCall(VecDestroy(&Uall));
  PetscCall(VecDestroy(&Yall));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&U));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* The same layer on batches of (H, W, C) samples (no DMDA) against conv2d with the same weights, and its derivatives */
static PetscErrorCode CheckBatchConv(const char layers[], const char reference[], const char shape[], PetscInt nsamples)
{
  Net       net, ref;
  Vec       X, Y, Yref;
  PetscInt  n = PETSC_DECIDE;
  PetscReal diff, nrm;

  PetscFunctionBegin;
  PetscCall(CreateNet(PETSC_COMM_WORLD, layers, shape, NULL, &net));
  PetscCall(CreateNet(PETSC_COMM_WORLD, reference, shape, NULL, &ref));
  PetscCall(CopyParameters(net, ref));
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &nsamples));
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(Y, &Yref));
  PetscCall(VecSetRandom(X, NULL));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetForward(ref, X, Yref));
  PetscCall(MaxRelativeDifference(Y, Yref, &diff));
  PetscCheck(diff <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on batches differs from %s by %g (relative)", layers, reference, (double)diff);
  PetscCall(CheckDerivatives(net, X, layers));
  PetscCall(VecNorm(Y, NORM_2, &nrm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "conv batch %-36s %s x %" PetscInt_FMT ": equal to %s, derivatives ok\n", layers, shape, nsamples, reference));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yref));
  PetscCall(NetDestroy(&net));
  PetscCall(NetDestroy(&ref));
  PetscFunctionReturn(0);
}

/* case wrongdof ------------------------------------------------------------------------------------------------- */
static PetscErrorCode WrongDof(void)
{
  DM          da;
  Net         net;
  PetNetShape in = {1, {3}};

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 6, 6, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char testcase[32] = "apply";

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  if (!strcmp(testcase, "apply"))
    PetscCall(CheckApply());
  else if (!strcmp(testcase, "jacobian"))
    PetscCall(CheckJacobian());
  else if (!strcmp(testcase, "ts")) {
    PetscCall(CheckTS(TSRK, "dense:5,tanh,dense:2"));
    PetscCall(CheckTS(TSCN, "dense:5,tanh,dense:2"));
    PetscCall(CheckTS(TSRK, "dmconv2d:4:3,tanh,dmconv2d:2:3")); /* a learned nonlocal term: halo exchanges inside TS */
  } else if (!strcmp(testcase, "conv")) {
    PetscCall(CheckGridConv("dmconv2d:4:3", "conv2d:4:3:1:1", 17, 13, 3, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("dmconv2d:4:5x3", "conv2d:4:5x3:1:2x1", 17, 13, 3, DM_BOUNDARY_GHOSTED, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("dmconv2d:5:3,tanh,dmconv2d:2:5", "conv2d:5:3:1:1,tanh,conv2d:2:5:1:2", 19, 16, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("dmconv2d:5:3,tanh,dmconv2d:2:3x5", NULL, 19, 16, 2, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC));
    PetscCall(CheckGridConv("dmconv2d:3:3,dense:4,tanh,dmconv2d:1:3", NULL, 18, 15, 2, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_NONE));
    PetscCall(CheckBatchConv("dmconv2d:4:3", "conv2d:4:3:1:1", "9x7x3", 5));
    PetscCall(CheckBatchConv("dmconv2d:5:5x3,relu,dmconv2d:2:3", "conv2d:5:5x3:1:2x1,relu,conv2d:2:3:1:1", "8x10x2", 3));
  } else if (!strcmp(testcase, "badkernel")) {
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, "dmconv2d:4:4", "8x8x1", NULL, &net));
    PetscCall(NetDestroy(&net));
  } else if (!strcmp(testcase, "wrongdof"))
    PetscCall(WrongDof());
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s: apply, jacobian, ts, conv, wrongdof or badkernel", testcase);
  PetscCall(PetscFinalize());
  return 0;
}
