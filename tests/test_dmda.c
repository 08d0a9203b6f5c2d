static const char help[] = "Nets on DMDA fields (include/petnetdmda.h).\n"
                           "  -case apply     NetDMDAForward on a 2-D DMDA (dof 3 -> dof 4): the field gathered in natural order equals a\n"
                           "                  one-rank Net applied to the gathered input (<= 1e-14), on any number of ranks\n"
                           "  -case jacobian  J = A + dN/dU (NetDMDACreateJacobian, A a 5-point stencil from DMCreateMatrix): dot-product\n"
                           "                  test, central finite differences of G(U) = A U + N(U), and a Newton solve of G(U) = b with J\n"
                           "                  and the preconditioner built from A alone\n"
                           "  -case ts        NetDMDATSSetRHS + NetTSSetUserRHS (diffusion) on a 2-D DMDA: TSAdjointSolve gradients with\n"
                           "                  respect to u0 and theta against finite differences, rk 4 and cn (preconditioned by shift I - A),\n"
                           "                  a pointwise MLP and a CNN of conv2d layers in grid mode (halo exchanges inside the TS)\n"
                           "  -case conv      conv2d in grid mode on 2-D DMDAs: derivative tests (NetTestJacobian: dot-product and finite\n"
                           "                  differences of every Jacobian), then the output against the same parameters on one rank:\n"
                           "                  zero padding, the same Net back in batch mode on the gathered field as one image (<= 1e-13);\n"
                           "                  periodic, the same Net on a one-rank DMDA; -layer<l>_conv2d_algorithm on the boxes\n"
                           "  -case view      NetView and LayerView of a CNN in grid mode\n"
                           "  -case keep      a saved Net loaded and handed to every DMDA entry point keeps its parameters to the bit,\n"
                           "                  and a Jacobian taken before still applies; a grid-mode CNN given another DMDA keeps its values\n"
                           "  -case wrongdof  a Net whose input size is not the DMDA's dof (error test)\n"
                           "  -case badconv   -conv_layers SPEC on a 2-D (or -conv_dim 3) DMDA, or (-conv_dim 0) on samples of shape (2) (error tests)\n"
                           "Random fields are drawn in the DMDA's natural ordering: the same on any number of ranks.\n";

#include <petnet.h>
#include <petnetdmda.h>
#include "testutil.h"

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

static PetscErrorCode CheckTS(TSType type, const char layers[])
{
  const PetscReal h = 1e-5;
  DM              da;
  Net             net;
  TS              ts;
  DiffusionCtx    user;
  Vec             u0, w, v, p, lambda, mu, theta, theta0, uh;
  PetscReal       L, errx = 0, errp = 0;
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

  PetscCall(CheckTSLinearFunctionalFD(ts, u0, w, v, theta, theta0, p, h, lambda, mu, uh, &L, &errx, &errp));
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

/* *net on comm with the given layers and input shape (NULL: set by NetDMDASetUp(net, da)); the layers' options
   (-layer<l>_conv2d_algorithm, ...) apply, on a DMDA to the copies that convolve each rank's box */
static PetscErrorCode CreateNet(MPI_Comm comm, const char layers[], const char shape[], DM da, Net *net)
{
  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  PetscCall(NetSetLayers(*net, layers));
  PetscCall(NetSetSeed(*net, 17));
  if (shape) {
    PetNetShape in;

    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetInputShape(*net, &in));
  }
  PetscCall(NetSetFromOptions(*net));
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

/* max |a - b| / max |b| over the n entries of two arrays */
static PetscReal MaxRelativeDifference(PetscInt n, const PetscScalar *a, const PetscScalar *b)
{
  PetscReal d = 0, nb = 0;

  for (PetscInt i = 0; i < n; i++) {
    d  = PetscMax(d, PetscAbsScalar(a[i] - b[i]));
    nb = PetscMax(nb, PetscAbsScalar(b[i]));
  }
  return nb > 0 ? d / nb : d;
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
  PetscCall(PetscInfo(NULL, "conv grid %s: dot-product error %g, finite-difference error %g\n", what, (double)doterr, (double)fderr));
  PetscFunctionReturn(0);
}

/*
  The same Net, back in batch mode (no DMDA, input shape (N, M, dof)) with the same parameters, on the gathered input
  field Uall as one image on rank 0: its output must be the gathered grid-mode output Yall. *diff: the relative max.
*/
static PetscErrorCode CheckSameNetOnBatch(Net net, PetscInt M, PetscInt N, PetscInt dof, Vec Uall, Vec Yall, PetscReal *diff)
{
  Vec                theta, saved, X, Y;
  PetNetShape        in = {3, {N, M, dof}};
  PetscInt           nl, n, nx, ny;
  PetscMPIInt        rank;
  const PetscScalar *u, *ygrid, *ybatch;
  PetscScalar       *x;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &saved));
  PetscCall(VecCopy(theta, saved));
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt l = 0; l < nl; l++) { /* the Net in grid mode on the DMDA, and so is the inner Net of an ode layer */
    Layer     layer;
    DM        dm;
    PetscBool isode;
    Net       inner;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERODE, &isode));
    if (!isode) continue;
    PetscCall(LayerODEGetNet(layer, &inner));
    PetscCall(NetGetGrid(inner, &dm));
    PetscCheck(dm, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The inner Net of ode layer %" PetscInt_FMT " is not in grid mode after NetDMDASetUp()", l);
  }
  {
    DM dm;

    PetscCall(NetGetGrid(net, &dm));
    PetscCheck(dm, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "A Net with convolutions is not in grid mode after NetDMDASetUp()");
  }
  PetscCall(NetConv2dSetDM(net, NULL));  /* deprecated, as NetSetGrid(net, NULL) for this Net and the ode's inner Nets */
  PetscCall(NetSetInputShape(net, &in)); /* lays the Net out anew (and initialises new parameters) */
  PetscCall(NetSetUp(net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecCopy(saved, theta));
  n = rank ? 0 : 1;
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecGetLocalSize(X, &nx));
  PetscCall(VecGetArrayRead(Uall, &u));
  PetscCall(VecGetArrayWrite(X, &x));
  PetscCall(PetscArraycpy(x, u, nx));
  PetscCall(VecRestoreArrayWrite(X, &x));
  PetscCall(VecRestoreArrayRead(Uall, &u));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecGetLocalSize(Y, &ny));
  PetscCall(VecGetArrayRead(Yall, &ygrid));
  PetscCall(VecGetArrayRead(Y, &ybatch));
  *diff = MaxRelativeDifference(ny, ygrid, ybatch);
  PetscCall(VecRestoreArrayRead(Y, &ybatch));
  PetscCall(VecRestoreArrayRead(Yall, &ygrid));
  PetscCallMPI(MPI_Bcast(diff, 1, MPIU_REAL, 0, PETSC_COMM_WORLD));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&saved));
  PetscFunctionReturn(0);
}

/*
  A Net of conv2d layers in grid mode on an M x N DMDA: its derivative tests, then its output against the same
  parameters on one rank: on a non-periodic grid, the same Net back in batch mode on the gathered field as one
  zero-padded (N, M, dof) image; on a periodic grid (which batch mode does not have), the same Net on a one-rank DMDA.
*/
static PetscErrorCode CheckGridConv(const char layers[], PetscInt M, PetscInt N, PetscInt dof, DMBoundaryType bx, DMBoundaryType by)
{
  const PetscBool periodic = (PetscBool)(bx == DM_BOUNDARY_PERIODIC || by == DM_BOUNDARY_PERIODIC);
  DM              da, dy;
  Net             net;
  Vec             U, Y, Uall, Yall;
  PetscReal       diff, nrm;
  PetNetShape     out;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, bx, by, DMDA_STENCIL_STAR, M, N, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(CreateNet(PETSC_COMM_WORLD, layers, NULL, da, &net));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(FillRandomField(da, U, 31));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(DMDACreateCompatibleDMDA(da, out.dim[0], &dy));
  PetscCall(DMCreateGlobalVector(dy, &Y));
  PetscCall(NetDMDAForward(net, da, U, Y));
  PetscCall(GatherNatural(dy, Y, &Yall));
  PetscCall(GatherNatural(da, U, &Uall));
  PetscCall(CheckDerivatives(net, U, layers));
  if (!periodic)
    PetscCall(CheckSameNetOnBatch(net, M, N, dof, Uall, Yall, &diff));
  else {
    DM  daself;
    Net self;
    Vec Yself;

    PetscCall(DMDACreate2d(PETSC_COMM_SELF, bx, by, DMDA_STENCIL_STAR, M, N, 1, 1, dof, 1, NULL, NULL, &daself));
    PetscCall(DMSetUp(daself));
    PetscCall(CreateNet(PETSC_COMM_SELF, layers, NULL, daself, &self));
    PetscCall(CopyParameters(net, self));
    PetscCall(VecDuplicate(Yall, &Yself));
    PetscCall(NetForward(self, Uall, Yself));
    {
      const PetscScalar *a, *b;
      PetscInt           n;

      PetscCall(VecGetLocalSize(Yall, &n));
      PetscCall(VecGetArrayRead(Yall, &a));
      PetscCall(VecGetArrayRead(Yself, &b));
      diff = MaxRelativeDifference(n, a, b);
      PetscCall(VecRestoreArrayRead(Yself, &b));
      PetscCall(VecRestoreArrayRead(Yall, &a));
    }
    PetscCall(VecDestroy(&Yself));
    PetscCall(NetDestroy(&self));
    PetscCall(DMDestroy(&daself));
  }
  PetscCheck(diff <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA differs from %s on one rank by %g (relative)", layers, M, N, periodic ? "itself" : "batch mode", (double)diff);
  PetscCall(PetscInfo(NULL, "conv grid %s: %s differs by %g (relative max)\n", layers, periodic ? "itself on one rank" : "batch mode on one image", (double)diff));
  PetscCall(VecNorm(Yall, NORM_2, &nrm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "conv grid %-62s %2" PetscInt_FMT "x%-2" PetscInt_FMT " %-8s |y| = %.10e, equal to %s, derivatives ok\n", layers, M, N, DMBoundaryTypes[bx], (double)nrm,
                        periodic ? "itself on one rank" : "batch mode on the gathered image"));
  PetscCall(VecDestroy(&Uall));
  PetscCall(VecDestroy(&Yall));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&U));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&dy));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* case view: NetView of a CNN in grid mode (each node's grids) and LayerView of its convolutions (nodes of a grid) */
static PetscErrorCode ViewGridConv(void)
{
  DM       da;
  Net      net;
  PetscInt nl;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR, 40, 12, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(CreateNet(PETSC_COMM_WORLD, "conv2d:4:3:1:1,tanh,conv2d:2:5x3:1:2x1:bias=0", NULL, da, &net));
  PetscCall(NetView(net, PETSC_VIEWER_STDOUT_WORLD));
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer layer;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerView(layer, PETSC_VIEWER_STDOUT_WORLD));
  }
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* case badconv: a Net (-conv_layers) on a DMDA of dimension -conv_dim, or with -conv_dim 0 on samples of shape (2) and
   no DMDA (error tests) */
static PetscErrorCode BadConv(void)
{
  char     layers[256] = "conv2d:4:3:2:1";
  PetscInt dim         = 2;
  DM       da;
  Net      net;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-conv_layers", layers, sizeof(layers), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-conv_dim", &dim, NULL));
  if (dim == 0) {
    PetscCall(CreateNet(PETSC_COMM_WORLD, layers, "2", NULL, &net));
    PetscCall(NetDestroy(&net));
    PetscFunctionReturn(0);
  }
  if (dim == 3)
    PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 6, 6, 6, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, NULL, &da));
  else
    PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 8, 8, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(CreateNet(PETSC_COMM_WORLD, layers, NULL, da, &net));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* case wrongdof ------------------------------------------------------------------------------------------------- */
/* case keep ----------------------------------------------------------------------------------------------------- */

/* the parameters of net equal those in ref to the bit */
static PetscErrorCode CheckSameParameters(Net net, Vec ref, const char what[])
{
  Vec       theta;
  PetscBool same;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecEqual(theta, ref, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s changed the Net's parameters", what);
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckKeep(void)
{
  DM          da, db;
  Net         net, loaded;
  Vec         ref, U, F, theta, x, y;
  Mat         J, JD;
  TS          ts;
  PetscReal   nrm;
  PetNetShape in   = {1, {3}};
  const char *file = "tests/out/dmda_keep.petnet";

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, 9, 7, PETSC_DECIDE, PETSC_DECIDE, 3, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  /* a pointwise closure, trained elsewhere (here: parameters drawn with another seed), saved and loaded */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:6,tanh,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 17));
  PetscCall(NetSetUp(net));
  PetscCall(NetSave(net, file));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &loaded));
  PetscCall(NetLoad(loaded, file));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &ref));
  PetscCall(VecCopy(theta, ref));
  PetscCall(NetDestroy(&net));
  PetscCall(CheckSameParameters(loaded, ref, "NetLoad()"));
  /* a Jacobian taken before the DMDA is given */
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(DMCreateGlobalVector(da, &F));
  PetscCall(FillRandomField(da, U, 5));
  PetscCall(NetForward(loaded, U, F));
  PetscCall(NetGetJacobian(loaded, &J)); /* the Net's own shell (borrowed) */
  PetscCall(NetDMDASetUp(loaded, da));
  PetscCall(CheckSameParameters(loaded, ref, "NetDMDASetUp()"));
  PetscCall(NetDMDAForward(loaded, da, U, F));
  PetscCall(CheckSameParameters(loaded, ref, "NetDMDAForward()"));
  PetscCall(NetDMDACreateJacobian(loaded, da, NULL, &JD));
  PetscCall(CheckSameParameters(loaded, ref, "NetDMDACreateJacobian()"));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(NetDMDATSSetRHS(ts, da, loaded));
  PetscCall(CheckSameParameters(loaded, ref, "NetDMDATSSetRHS()"));
  PetscCall(NetDMDAForward(loaded, da, U, F));
  PetscCall(MatCreateVecs(J, &x, &y));
  PetscCall(FillRandomField(da, x, 6));
  PetscCall(MatMult(J, x, y)); /* the Jacobian taken before still applies */
  PetscCall(VecNorm(y, NORM_2, &nrm));
  PetscCall(MatMult(JD, x, F));
  PetscCall(VecAXPY(F, -1.0, y));
  PetscCall(VecNorm(F, NORM_INFINITY, &nrm));
  PetscCheck(nrm == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Jacobian taken before the DMDA differs from NetDMDACreateJacobian()'s by %g", (double)nrm);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "keep: a loaded pointwise Net keeps its parameters through every DMDA entry point; its Jacobian applies\n"));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(TSDestroy(&ts));
  PetscCall(MatDestroy(&JD));
  PetscCall(VecDestroy(&ref));
  PetscCall(NetDestroy(&loaded));

  /* a CNN in grid mode given a DMDA of another size: laid out anew, with the same values */
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, 11, 8, PETSC_DECIDE, PETSC_DECIDE, 3, 1, NULL, NULL, &db));
  PetscCall(DMSetUp(db));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "conv2d:4:3:1:1,tanh,conv2d:3:3:1:1"));
  PetscCall(NetSetSeed(net, 4));
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &ref));
  PetscCall(VecSetRandom(ref, NULL));
  PetscCall(NetSetParameters(net, ref));
  PetscCall(NetDMDAForward(net, da, U, NULL));
  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&F));
  PetscCall(DMCreateGlobalVector(db, &U));
  PetscCall(FillRandomField(db, U, 7));
  PetscCall(NetDMDAForward(net, db, U, NULL));
  PetscCall(CheckSameParameters(net, ref, "NetDMDAForward() on another DMDA"));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "keep: a grid-mode CNN given another DMDA keeps its parameters\n"));
  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&ref));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&db));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

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

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  if (!strcmp(testcase, "apply"))
    PetscCall(CheckApply());
  else if (!strcmp(testcase, "jacobian"))
    PetscCall(CheckJacobian());
  else if (!strcmp(testcase, "ts")) {
    PetscCall(CheckTS(TSRK, "dense:5,tanh,dense:2"));
    PetscCall(CheckTS(TSCN, "dense:5,tanh,dense:2"));
    PetscCall(CheckTS(TSRK, "conv2d:4:3:1:1,tanh,conv2d:2:3:1:1")); /* a learned nonlocal term: halo exchanges inside TS */
  } else if (!strcmp(testcase, "conv")) {
    PetscCall(CheckGridConv("conv2d:4:3:1:1", 17, 13, 3, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("conv2d:4:3:1:2:dilation=2:groups=2,tanh,conv2d:2:3:1:1", 15, 12, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE)); /* any window that keeps the grid */
    PetscCall(CheckGridConv("conv2d:4:5x3:1:2x1", 17, 13, 3, DM_BOUNDARY_GHOSTED, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("conv2d:5:3:1:1,tanh,conv2d:2:5:1:2", 19, 16, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("conv2d:6:3:1:1,tanh,conv2d:4:3:1:1:bias=0,tanh,conv2d:2:1:1:0", 18, 14, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("conv2d:5:3:1:1,tanh,conv2d:2:3x5:1:1x2", 19, 16, 2, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC));
    PetscCall(CheckGridConv("conv2d:3:3:1:1,dense:4,tanh,conv2d:1:3:1:1", 18, 15, 2, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_NONE));
    /* conv2d layers nested in a residual block and in an ODE layer's right-hand side get the DMDA too */
    PetscCall(CheckGridConv("conv2d:3:3:1:1,residual(conv2d:3:3:1:1,tanh,conv2d:3:3:1:1),tanh,conv2d:2:3:1:1", 17, 14, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
    PetscCall(CheckGridConv("conv2d:3:3:1:1,ode(0.5|conv2d:3:3:1:1,tanh)", 16, 13, 2, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
  } else if (!strcmp(testcase, "view"))
    PetscCall(ViewGridConv());
  else if (!strcmp(testcase, "badconv"))
    PetscCall(BadConv());
  else if (!strcmp(testcase, "keep"))
    PetscCall(CheckKeep());
  else if (!strcmp(testcase, "wrongdof"))
    PetscCall(WrongDof());
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s: apply, jacobian, ts, conv, view, keep, wrongdof or badconv", testcase);
  PetscCall(PetscFinalize());
  return 0;
}
