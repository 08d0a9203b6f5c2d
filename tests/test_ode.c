static const char help[] = "Neural ODEs through TSAdjoint.\n"
                           "  -case layer   the ode layer in a Net: gradients of L = <w, Net(x)> with respect to x and theta against\n"
                           "                central finite differences (<= 1e-6) for rk 1fe 2a 3 3bs 4, beuler, cn, theta 0.7 (midpoint and\n"
                           "                endpoint), fixed and adaptive steps; dot-product tests of every Jacobian shell (NetTestJacobian);\n"
                           "                prints L and the gradient norms (the same on any number of ranks)\n"
                           "  -case helper  NetTSSetRHS on a user TS with a user part g(u) = D u (an assembled tridiagonal matrix,\n"
                           "                then a diffusion stencil on a DMDA with dof 2 whose grid points are the Net's batch):\n"
                           "                TSAdjointSolve gradients against finite differences, explicit (rk 4) and implicit (cn, beuler with\n"
                           "                the assembled preconditioner shift I - D under Jacobi / block Jacobi)\n"
                           "  -case series  NetTSTimeSeriesGradient at observation times between steps, against finite differences\n"
                           "  -case run     build a Net from -net_layers / -net_input_shape, one forward and backward (error tests)\n"
                           "                (-series_checkpoint K: with the checkpoint trajectory keeping at most K solutions)\n"
                           "  -case checkpoint  gradients with -ts_trajectory_type checkpoint and at most K solutions in memory equal\n"
                           "                the stored trajectory's (rk 4 with K = 1, 3, 6; rk 3bs adaptive, cn, theta endpoint; 30+ steps)\n"
                           "  -case batches  batch sizes N, N-1, N in turn (the layer rebuilds its TS objects); the second N repeats the first\n"
                           "  -case saveload  NetSave/NetLoad of a Net with an ode layer (its spec carries the inner Net), then views\n"
                           "  -case formswitch  NetTSSetRHS on an rk TS, then TSSetFromOptions (give -ts_type cn: refused)\n"
                           "  -config a,b   only these configurations of -case layer (names as printed)\n"
                           "  -nsamples N   global batch (default 4)\n";

#include <petnet.h>
#include <petnetts.h>
#include <petscdmda.h>
#include "testutil.h"

/* v = the entries rstart..rend-1 of one sequential stream: the same global vector on any number of ranks */
static PetscErrorCode FillRandom(Vec v, unsigned long seed)
{
  PetscRandom  rnd;
  PetscInt     N, rstart, rend;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetSize(v, &N));
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < N; i++) {
    PetscReal r;

    PetscCall(PetscRandomGetValueReal(rnd, &r));
    if (i >= rstart && i < rend) a[i - rstart] = 2.0 * r - 1.0;
  }
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

static PetscInt LocalSamples(PetscInt N)
{
  PetscMPIInt rank, size;

  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  return N / size + (rank < N % size ? 1 : 0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* case layer */

typedef struct {
  const char *name;
  const char *options; /* for the ode layer's TS, prefix <net prefix>layer0_ode_ */
  PetscBool   implicit, adaptive;
} Config;

static const Config configs[] = {
    {"rk1fe", "-ts_type rk -ts_rk_type 1fe", PETSC_FALSE, PETSC_FALSE},
    {"rk2a", "-ts_type rk -ts_rk_type 2a", PETSC_FALSE, PETSC_FALSE},
    {"rk3", "-ts_type rk -ts_rk_type 3", PETSC_FALSE, PETSC_FALSE},
    {"rk3bs", "-ts_type rk -ts_rk_type 3bs", PETSC_FALSE, PETSC_FALSE},
    {"rk4", "-ts_type rk -ts_rk_type 4", PETSC_FALSE, PETSC_FALSE},
    {"beuler", "-ts_type beuler", PETSC_TRUE, PETSC_FALSE},
    {"cn", "-ts_type cn", PETSC_TRUE, PETSC_FALSE},
    {"theta0.7", "-ts_type theta -ts_theta_theta 0.7", PETSC_TRUE, PETSC_FALSE},
    {"theta0.7end", "-ts_type theta -ts_theta_theta 0.7 -ts_theta_endpoint", PETSC_TRUE, PETSC_FALSE},
    {"rk3bs-adapt", "-ts_type rk -ts_rk_type 3bs -ts_adapt_type basic -ts_rtol 1e-2 -ts_atol 1e-2", PETSC_FALSE, PETSC_TRUE},
    {"rk2a-adapt", "-ts_type rk -ts_rk_type 2a -ts_adapt_type basic -ts_rtol 1e-2 -ts_atol 1e-2", PETSC_FALSE, PETSC_TRUE},
    {"cn-adapt", "-ts_type cn -ts_adapt_type basic -ts_rtol 1e-2 -ts_atol 1e-2", PETSC_TRUE, PETSC_TRUE},
};

/* options "-a b -c" under prefix p */
static PetscErrorCode SetPrefixedOptions(const char prefix[], const char options[])
{
  char *copy, *tok, *save = NULL;

  PetscFunctionBegin;
  PetscCall(PetscStrallocpy(options, &copy));
  tok = strtok_r(copy, " ", &save);
  while (tok) {
    char  name[256], *next = strtok_r(NULL, " ", &save);
    char *value = NULL;

    PetscCall(PetscSNPrintf(name, sizeof(name), "-%s%s", prefix, tok + 1));
    if (next && next[0] != '-') {
      value = next;
      next  = strtok_r(NULL, " ", &save);
    }
    PetscCall(PetscOptionsSetValue(NULL, name, value));
    tok = next;
  }
  PetscCall(PetscFree(copy));
  PetscFunctionReturn(0);
}

/* L = <w, Net(x)> */
static PetscErrorCode LayerLoss(Net net, Vec X, Vec Y, Vec w, PetscReal *L)
{
  PetscScalar d;

  PetscFunctionBegin;
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecDot(Y, w, &d));
  *L = PetscRealPart(d);
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckLayerConfig(const Config *c, PetscInt k, PetscInt N)
{
  const PetscReal  h  = 1e-5;
  PetNetShape      in = {1, {3}};
  Net              net;
  Layer            layer;
  char             prefix[64], inner[80];
  Vec              X, Y, w, dX, G, v, p, theta, theta0, Xh;
  PetscReal        L = 0, Lp = 0, Lm = 0, errx, errp, dot, fd, nG, ndX;
  PetscScalar      gx, gp;
  PetscInt         nsteps;
  const PetscReal *times;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "c%" PetscInt_FMT "_", k));
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "%slayer0_ode_", prefix));
  PetscCall(SetPrefixedOptions(inner, c->options));
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "-%slayer0_ode_net_layers", prefix));
  PetscCall(PetscOptionsSetValue(NULL, inner, "dense:6,tanh,dense:3"));
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "-%slayer0_ode_ts_max_time", prefix));
  PetscCall(PetscOptionsSetValue(NULL, inner, "0.4"));
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "-%slayer0_ode_ts_dt", prefix));
  PetscCall(PetscOptionsSetValue(NULL, inner, "0.1"));

  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)net, prefix));
  PetscCall(NetSetLayers(net, "ode"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 3));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetLayer(net, 0, &layer));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &X, &Y));
  PetscCall(VecDuplicate(Y, &w));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(VecDuplicate(X, &v));
  PetscCall(VecDuplicate(X, &Xh));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(VecDuplicate(G, &p));
  PetscCall(VecDuplicate(G, &theta0));
  PetscCall(FillRandom(X, 11));
  PetscCall(FillRandom(w, 12));
  PetscCall(FillRandom(v, 13));
  PetscCall(FillRandom(p, 14));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecScale(theta, 2.0)); /* a less trivial flow than the initial weights */
  PetscCall(VecCopy(theta, theta0));

  /* adjoint gradient */
  PetscCall(LayerLoss(net, X, Y, w, &L));
  PetscCall(LayerODEGetTimeSteps(layer, &nsteps, &times));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, w, dX, G));
  PetscCall(VecDot(dX, v, &gx));
  PetscCall(VecDot(G, p, &gp));
  PetscCall(VecNorm(G, NORM_2, &nG));
  PetscCall(VecNorm(dX, NORM_2, &ndX));
  if (c->adaptive) {
    PetscBool uneven = PETSC_FALSE;

    for (PetscInt i = 1; i < nsteps; i++)
      if (PetscAbsReal((times[i + 1] - times[i]) - (times[1] - times[0])) > 1e-3 * times[1]) uneven = PETSC_TRUE;
    PetscCheck(uneven, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the adaptive run took even steps; the test needs a real adaptive sequence", c->name);
    PetscCall(LayerODESetReplaySteps(layer, PETSC_TRUE)); /* finite differences of the map with the steps taken */
  }

  /* central finite differences along v (input) and p (parameters) */
  PetscCall(VecWAXPY(Xh, h, v, X));
  PetscCall(LayerLoss(net, Xh, Y, w, &Lp));
  PetscCall(VecWAXPY(Xh, -h, v, X));
  PetscCall(LayerLoss(net, Xh, Y, w, &Lm));
  errx = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gx));
  PetscCall(VecWAXPY(theta, h, p, theta0));
  PetscCall(LayerLoss(net, X, Y, w, &Lp));
  PetscCall(VecWAXPY(theta, -h, p, theta0));
  PetscCall(LayerLoss(net, X, Y, w, &Lm));
  PetscCall(VecCopy(theta0, theta));
  errp = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gp));
  PetscCheck(errx <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: input gradient differs from finite differences by %g (relative)", c->name, (double)errx);
  PetscCheck(errp <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: parameter gradient differs from finite differences by %g (relative)", c->name, (double)errp);

  /* Jacobian shells of the Net and of the layer: dot-product and finite-difference tests (replaying the steps) */
  {
    PetscViewer quiet;

    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
  }
  PetscCheck(dot <= (c->implicit ? 1e-9 : 1e-12), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g", c->name, (double)dot);
  PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: Jacobian finite-difference error %g", c->name, (double)fd);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-12s steps %3" PetscInt_FMT "  L % .8e  |dL/dx| %.8e  |dL/dtheta| %.8e  fd ok\n", c->name, nsteps, (double)L, (double)ndX, (double)nG));
  PetscCall(PetscInfo(NULL, "%s: fd errors x %g theta %g, dot %g, jacobian fd %g\n", c->name, (double)errx, (double)errp, (double)dot, (double)fd));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&Xh));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&theta0));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* case helper: du/dt = N(u) + D u on a user TS, D tridiagonal over the whole state (a diffusion-like coupling) */

typedef struct {
  Mat D;
} UserCtx;

static PetscErrorCode UserRHS(TS ts, PetscReal t, Vec u, Vec G, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(MatMult(((UserCtx *)ctx)->D, u, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreateTridiagonal(Vec u, Mat *D)
{
  PetscInt n, N, rs, re;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(u, &n));
  PetscCall(VecGetSize(u, &N));
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, n, n, N, N, 3, NULL, 2, NULL, D));
  PetscCall(MatGetOwnershipRange(*D, &rs, &re));
  for (PetscInt i = rs; i < re; i++) {
    if (i > 0) PetscCall(MatSetValue(*D, i, i - 1, 0.5, INSERT_VALUES));
    PetscCall(MatSetValue(*D, i, i, -1.0, INSERT_VALUES));
    if (i < N - 1) PetscCall(MatSetValue(*D, i, i + 1, 0.5, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*D, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*D, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/*
  A reaction-diffusion system on a periodic 1-D DMDA with dof = 2: du/dt = nu Laplacian(u) + N(u). The DMDA global
  Vec is the Net's batch of grid points (input shape 2), D comes from DMCreateMatrix() and MatSetValuesStencil().
*/
static PetscErrorCode CreateDMDA(PetscInt M, DM *da, Vec *u0, Mat *D)
{
  const PetscReal nu = 0.3;
  PetscInt        xs, xm;

  PetscFunctionBegin;
  PetscCall(DMDACreate1d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, M, 2, 1, NULL, da));
  PetscCall(DMSetUp(*da));
  PetscCall(DMCreateGlobalVector(*da, u0));
  PetscCall(DMCreateMatrix(*da, D));
  PetscCall(DMDAGetCorners(*da, &xs, NULL, NULL, &xm, NULL, NULL));
  for (PetscInt i = xs; i < xs + xm; i++)
    for (PetscInt c = 0; c < 2; c++) {
      MatStencil  row = {.i = i, .c = c}, col[3] = {{.i = i - 1, .c = c}, {.i = i, .c = c}, {.i = i + 1, .c = c}};
      PetscScalar v[3] = {nu, -2 * nu, nu};

      PetscCall(MatSetValuesStencil(*D, 1, &row, 3, col, v, INSERT_VALUES));
    }
  PetscCall(MatAssemblyBegin(*D, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*D, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckHelper(const char type[], const char pctype[], PetscInt N, PetscBool dmda)
{
  const PetscReal h  = 1e-5;
  PetNetShape     in = {1, {3}};
  DM              da = NULL;
  Net             net;
  TS              ts;
  UserCtx         user;
  Vec             u0, w, v, p, lambda, mu, theta, theta0, uh;
  PetscReal       L = 0, errx = 0, errp = 0;
  PetscBool       implicit;

  PetscFunctionBegin;
  if (dmda) in.dim[0] = 2;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, dmda ? "dense:5,tanh,dense:2" : "dense:5,tanh,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(NetSetUp(net));
  if (dmda)
    PetscCall(CreateDMDA(3 * N, &da, &u0, &user.D));
  else
    PetscCall(NetCreateVecs(net, LocalSamples(N), &u0, NULL));
  PetscCall(VecDuplicate(u0, &w));
  PetscCall(VecDuplicate(u0, &v));
  PetscCall(VecDuplicate(u0, &uh));
  PetscCall(VecDuplicate(u0, &lambda));
  PetscCall(NetCreateParameterVec(net, &mu));
  PetscCall(VecDuplicate(mu, &p));
  PetscCall(VecDuplicate(mu, &theta0));
  PetscCall(FillRandom(u0, 21));
  PetscCall(FillRandom(w, 22));
  PetscCall(FillRandom(v, 23));
  PetscCall(FillRandom(p, 24));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecCopy(theta, theta0));
  if (!dmda) PetscCall(CreateTridiagonal(u0, &user.D));

  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  if (da) PetscCall(TSSetDM(ts, da));
  PetscCall(TSSetType(ts, type));
  if (!strcmp(type, TSRK)) PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetMaxTime(ts, 0.5));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(NetTSSetRHS(ts, net, u0));
  PetscCall(NetTSSetUserRHS(ts, UserRHS, user.D, NULL, &user));
  PetscCall(NetTSGetImplicit(ts, &implicit));
  if (implicit) {
    SNES snes;
    KSP  ksp;
    PC   pc;

    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESSetTolerances(snes, 1e-12, 1e-12, PETSC_DEFAULT, 50, PETSC_DEFAULT));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetTolerances(ksp, 1e-13, 1e-15, PETSC_DEFAULT, 500));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, pctype));
  }
  PetscCall(NetTSSetSaveTrajectory(ts));
  PetscCall(TSSetFromOptions(ts));

  PetscCall(CheckTSLinearFunctionalFD(ts, u0, w, v, theta, theta0, p, h, lambda, mu, uh, &L, &errx, &errp));
  PetscCheck(errx <= 1e-6 && errp <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetTSSetRHS + user part, %s: finite-difference errors %g (state) %g (parameters)", type, (double)errx, (double)errp);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "helper %-6s %-7s %s form%s  L % .8e  fd ok\n", type, implicit ? pctype : "", implicit ? "implicit" : "RHS", dmda ? ", DMDA dof 2" : "", (double)L));
  PetscCall(PetscInfo(NULL, "helper %s: fd errors %g %g\n", type, (double)errx, (double)errp));
  PetscCall(TSDestroy(&ts));
  PetscCall(DMDestroy(&da));
  PetscCall(MatDestroy(&user.D));
  PetscCall(VecDestroy(&u0));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&uh));
  PetscCall(VecDestroy(&lambda));
  PetscCall(VecDestroy(&mu));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&theta0));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* case series: l_i = 0.5 |u(t_i) - target_i|^2 at observation times that are not multiples of the step */

typedef struct {
  Vec targets[4];
} SeriesCtx;

static PetscErrorCode Observe(TS ts, PetscInt i, PetscReal t, Vec u, PetscReal *l, Vec dldu, void *ctx)
{
  SeriesCtx *s = (SeriesCtx *)ctx;
  PetscReal  nrm;

  PetscFunctionBegin;
  PetscCall(VecWAXPY(dldu, -1.0, s->targets[i], u));
  PetscCall(VecNorm(dldu, NORM_2, &nrm));
  *l = 0.5 * nrm * nrm;
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckSeries(const char type[], PetscInt N)
{
  const PetscReal h        = 1e-5;
  const PetscReal times[4] = {0.0, 0.25, 0.43, 0.7};
  PetNetShape     in       = {1, {3}};
  Net             net;
  TS              ts;
  SeriesCtx       s;
  Vec             u0, v, p, gu, gp, theta, theta0, uh;
  PetscReal       L = 0, Lp = 0, Lm = 0, errx, errp, L2 = 0;
  PetscScalar     dx, dp;
  PetscBool       implicit;
  PetscInt        K = 0;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:5,tanh,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 9));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &u0, NULL));
  PetscCall(VecDuplicate(u0, &v));
  PetscCall(VecDuplicate(u0, &uh));
  PetscCall(VecDuplicate(u0, &gu));
  PetscCall(NetCreateParameterVec(net, &gp));
  PetscCall(VecDuplicate(gp, &p));
  PetscCall(VecDuplicate(gp, &theta0));
  for (PetscInt i = 0; i < 4; i++) {
    PetscCall(VecDuplicate(u0, &s.targets[i]));
    PetscCall(FillRandom(s.targets[i], 40 + i));
  }
  PetscCall(FillRandom(u0, 31));
  PetscCall(FillRandom(v, 32));
  PetscCall(FillRandom(p, 33));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecCopy(theta, theta0));

  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetType(ts, type));
  if (!strcmp(type, TSRK)) PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetTimeStep(ts, 0.1));
  PetscCall(NetTSSetRHS(ts, net, u0));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-series_checkpoint", &K, NULL));
  if (K) { /* bounded memory: the segmented adjoint recomputes from at most K solutions */
    TSTrajectory tj;

    PetscCall(NetTSSetSaveTrajectory(ts));
    PetscCall(TSGetTrajectory(ts, &tj));
    PetscCall(TSTrajectorySetType(tj, ts, TSTRAJECTORYCHECKPOINT));
    PetscCall(TSTrajectoryCheckpointSetMaxCheckpoints(tj, K));
  }
  PetscCall(NetTSGetImplicit(ts, &implicit));
  if (implicit) {
    SNES snes;
    KSP  ksp;

    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESSetTolerances(snes, 1e-12, 1e-12, PETSC_DEFAULT, 50, PETSC_DEFAULT));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetTolerances(ksp, 1e-13, 1e-15, PETSC_DEFAULT, 500));
  }
  PetscCall(TSSetFromOptions(ts));

  PetscCall(NetTSTimeSeriesGradient(ts, u0, 4, times, Observe, &s, &L, gu, gp));
  if (K) {
    TSTrajectory tj;
    PetscInt     maxcps, recomputed;

    PetscCall(TSGetTrajectory(ts, &tj));
    PetscCall(TSTrajectoryCheckpointGetStats(tj, &maxcps, &recomputed));
    PetscCheck(maxcps <= K && recomputed > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Checkpoint trajectory: %" PetscInt_FMT " solutions held (limit %" PetscInt_FMT "), %" PetscInt_FMT " steps recomputed", maxcps, K, recomputed);
  }
  PetscCall(NetTSTimeSeriesGradient(ts, u0, 4, times, Observe, &s, &L2, NULL, NULL)); /* the TS is restored: same value */
  PetscCheck(RelErr(L2, L) <= 1e-14, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "A second call gives L = %.16e, the first %.16e: the TS was not restored", (double)L2, (double)L);
  PetscCall(VecDot(gu, v, &dx));
  PetscCall(VecDot(gp, p, &dp));
  PetscCall(VecWAXPY(uh, h, v, u0));
  PetscCall(NetTSTimeSeriesGradient(ts, uh, 4, times, Observe, &s, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(uh, -h, v, u0));
  PetscCall(NetTSTimeSeriesGradient(ts, uh, 4, times, Observe, &s, &Lm, NULL, NULL));
  errx = RelErr((Lp - Lm) / (2 * h), PetscRealPart(dx));
  PetscCall(VecWAXPY(theta, h, p, theta0));
  PetscCall(NetTSTimeSeriesGradient(ts, u0, 4, times, Observe, &s, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(theta, -h, p, theta0));
  PetscCall(NetTSTimeSeriesGradient(ts, u0, 4, times, Observe, &s, &Lm, NULL, NULL));
  PetscCall(VecCopy(theta0, theta));
  errp = RelErr((Lp - Lm) / (2 * h), PetscRealPart(dp));
  PetscCheck(errx <= 1e-6 && errp <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetTSTimeSeriesGradient, %s: finite-difference errors %g (state) %g (parameters)", type, (double)errx, (double)errp);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "series %-4s 4 observations  L % .8e  fd ok\n", type, (double)L));
  PetscCall(PetscInfo(NULL, "series %s: fd errors %g %g\n", type, (double)errx, (double)errp));
  PetscCall(TSDestroy(&ts));
  for (PetscInt i = 0; i < 4; i++) PetscCall(VecDestroy(&s.targets[i]));
  PetscCall(VecDestroy(&u0));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&uh));
  PetscCall(VecDestroy(&gu));
  PetscCall(VecDestroy(&gp));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&theta0));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */

static PetscErrorCode RunFromOptions(PetscInt N)
{
  Net       net;
  Vec       X, Y, dX, G;
  PetscReal nrm;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &X, &Y));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(FillRandom(X, 1));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetBackward(net, Y, dX, G));
  PetscCall(VecNorm(G, NORM_2, &nrm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "|G| %.6e\n", (double)nrm));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/*
  Bounded-memory checkpointing: the gradients of an ode layer over 40 steps with at most K solutions in memory equal
  those of the store-everything trajectory (explicit methods to round-off, implicit ones to the solver tolerance), with
  recomputation and never more than K solutions held.
*/
static PetscErrorCode LayerGradient(const char prefix[], const Config *c, PetscInt K, PetscInt N, Vec *dX, Vec *G, PetscInt *nsteps, PetscInt *maxcps, PetscInt *recomputed)
{
  PetNetShape  in = {1, {3}};
  Net          net;
  Layer        layer;
  TS           ts;
  TSTrajectory tj;
  Vec          X, Y, w;
  char         inner[80], value[32];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "%slayer0_ode_", prefix));
  PetscCall(SetPrefixedOptions(inner, c->options));
  PetscCall(SetPrefixedOptions(inner, "-net_layers dense:6,tanh,dense:3 -ts_max_time 1.5 -ts_dt 0.05"));
  if (c->adaptive) PetscCall(SetPrefixedOptions(inner, "-ts_rtol 1e-6 -ts_atol 1e-6"));
  if (K) {
    PetscCall(PetscSNPrintf(value, sizeof(value), "%" PetscInt_FMT, K));
    PetscCall(SetPrefixedOptions(inner, "-ts_trajectory_type checkpoint"));
    PetscCall(PetscSNPrintf(inner, sizeof(inner), "-%slayer0_ode_ts_trajectory_max_cps_ram", prefix));
    PetscCall(PetscOptionsSetValue(NULL, inner, value));
  }
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)net, prefix));
  PetscCall(NetSetLayers(net, "ode"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 3));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &X, &Y));
  PetscCall(VecDuplicate(Y, &w));
  PetscCall(VecDuplicate(X, dX));
  PetscCall(NetCreateParameterVec(net, G));
  PetscCall(FillRandom(X, 11));
  PetscCall(FillRandom(w, 12));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(*G));
  PetscCall(NetBackward(net, w, *dX, *G));
  PetscCall(NetGetLayer(net, 0, &layer));
  PetscCall(LayerODEGetTS(layer, &ts));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectoryCheckpointGetStats(tj, maxcps, recomputed));
  PetscCall(LayerODEGetTimeSteps(layer, nsteps, NULL));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&w));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckCheckpoint(const Config *c, PetscInt K, PetscInt k, PetscInt N)
{
  Vec       dX0, G0, dX1, G1;
  PetscInt  maxcps, recomputed, nsteps;
  PetscReal ex, ep, nx, np;
  char      pa[32], pb[32];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(pa, sizeof(pa), "cpa%" PetscInt_FMT "_", k));
  PetscCall(PetscSNPrintf(pb, sizeof(pb), "cpb%" PetscInt_FMT "_", k));
  PetscCall(LayerGradient(pa, c, 0, N, &dX0, &G0, &nsteps, NULL, NULL));
  PetscCall(LayerGradient(pb, c, K, N, &dX1, &G1, &nsteps, &maxcps, &recomputed));
  PetscCall(VecNorm(dX0, NORM_2, &nx));
  PetscCall(VecNorm(G0, NORM_2, &np));
  PetscCall(VecAXPY(dX1, -1.0, dX0));
  PetscCall(VecAXPY(G1, -1.0, G0));
  PetscCall(VecNorm(dX1, NORM_2, &ex));
  PetscCall(VecNorm(G1, NORM_2, &ep));
  ex /= nx;
  ep /= np;
  PetscCheck(ex <= (c->implicit ? 1e-9 : 1e-13) && ep <= (c->implicit ? 1e-9 : 1e-13), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s with %" PetscInt_FMT " checkpoints: gradients differ from the stored trajectory's by %g (state), %g (parameters)", c->name,
             K, (double)ex, (double)ep);
  PetscCheck(maxcps <= K && maxcps > 0 && recomputed > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: %" PetscInt_FMT " solutions held (limit %" PetscInt_FMT "), %" PetscInt_FMT " steps recomputed", c->name, maxcps, K, recomputed);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-12s %3" PetscInt_FMT " steps, K = %" PetscInt_FMT ": at most %" PetscInt_FMT " solutions held, %4" PetscInt_FMT " steps recomputed, gradients agree with the stored trajectory\n", c->name, nsteps, K,
                        maxcps, recomputed));
  PetscCall(PetscInfo(NULL, "%s K %" PetscInt_FMT ": relative differences %g %g\n", c->name, K, (double)ex, (double)ep));
  PetscCall(VecDestroy(&dX0));
  PetscCall(VecDestroy(&G0));
  PetscCall(VecDestroy(&dX1));
  PetscCall(VecDestroy(&G1));
  PetscFunctionReturn(0);
}

/* An ode layer whose compact spec holds the inner Net and T: NetSave/NetLoad rebuild it, outputs agree bitwise */
static PetscErrorCode SaveLoad(PetscInt N)
{
  PetNetShape in = {1, {3}};
  Net         net, net2;
  Vec         X, Y, Y2;
  PetscReal   nrm;
  char        spec[1024], spec2[1024], file[PETSC_MAX_PATH_LEN] = "ode_saveload.bin";
  PetscBool   same;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-file", file, sizeof(file), NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:3,ode(0.5|dense:6,tanh,dense:3),tanh"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 17));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &X, &Y));
  PetscCall(VecDuplicate(Y, &Y2));
  PetscCall(FillRandom(X, 5));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetSave(net, file));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net2));
  PetscCall(NetLoad(net2, file));
  PetscCall(NetGetSpec(net2, sizeof(spec2), spec2));
  PetscCall(PetscStrcmp(spec, spec2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Loaded spec %s differs from the saved %s", spec2, spec);
  PetscCall(NetForward(net2, X, Y2));
  PetscCall(VecAXPY(Y2, -1.0, Y));
  PetscCall(VecNorm(Y2, NORM_INFINITY, &nrm));
  PetscCheck(nrm == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The loaded Net's output differs by %g", (double)nrm);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "saved and loaded %s: outputs agree\n", spec));
  PetscCall(NetView(net2, NULL));
  {
    Layer layer;

    PetscCall(NetGetLayer(net2, 1, &layer));
    PetscCall(LayerView(layer, NULL));
  }
  if (!PetscGlobalRank) (void)remove(file);
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Y2));
  PetscCall(NetDestroy(&net));
  PetscCall(NetDestroy(&net2));
  PetscFunctionReturn(0);
}

/* Changing batch sizes rebuild the layer's TS objects: gradients at batch N again equal the first ones bitwise */
static PetscErrorCode Batches(PetscInt N)
{
  PetNetShape in = {1, {3}};
  Net         net;
  Vec         G[3];
  PetscInt    sizes[3] = {N, N - 1, N};
  PetscReal   d;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "ode(0.3|dense:4,tanh,dense:3)"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  for (PetscInt b = 0; b < 3; b++) {
    Vec X, Y, dX;

    PetscCall(NetCreateVecs(net, LocalSamples(sizes[b]), &X, &Y));
    PetscCall(VecDuplicate(X, &dX));
    PetscCall(NetCreateParameterVec(net, &G[b]));
    PetscCall(FillRandom(X, 3));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecZeroEntries(G[b]));
    PetscCall(NetBackward(net, Y, dX, G[b]));
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&Y));
    PetscCall(VecDestroy(&dX));
  }
  PetscCall(VecAXPY(G[2], -1.0, G[0]));
  PetscCall(VecNorm(G[2], NORM_INFINITY, &d));
  PetscCheck(d == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "After batches of %" PetscInt_FMT " and %" PetscInt_FMT " samples the gradient changed by %g", N, N - 1, (double)d);
  PetscCall(VecNorm(G[1], NORM_2, &d));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "batches %" PetscInt_FMT ", %" PetscInt_FMT ", %" PetscInt_FMT ": |G(%" PetscInt_FMT ")| %.8e, G(%" PetscInt_FMT ") reproduced\n", sizes[0], sizes[1], sizes[2], sizes[1], (double)d, N));
  for (PetscInt b = 0; b < 3; b++) PetscCall(VecDestroy(&G[b]));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* NetTSSetRHS chose the RHS form for rk; -ts_type cn afterwards must be refused, not integrated wrongly */
static PetscErrorCode FormSwitch(PetscInt N)
{
  PetNetShape in = {1, {3}};
  Net         net;
  TS          ts;
  Vec         u0;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, LocalSamples(N), &u0, NULL));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(NetTSSetRHS(ts, net, u0));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSolve(ts, u0));
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&u0));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char     testcase[32] = "layer", only[256] = "";
  PetscInt N = 4;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-config", only, sizeof(only), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &N, NULL));
  if (!strcmp(testcase, "layer")) {
    for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); k++) {
      char      list[258];
      char      name[64];
      PetscBool chosen;

      PetscCall(PetscSNPrintf(list, sizeof(list), ",%s,", only));
      PetscCall(PetscSNPrintf(name, sizeof(name), ",%s,", configs[k].name));
      chosen = (PetscBool)(!only[0] || strstr(list, name));
      if (chosen) PetscCall(CheckLayerConfig(&configs[k], (PetscInt)k, N));
    }
  } else if (!strcmp(testcase, "helper")) {
    PetscCall(CheckHelper(TSRK, NULL, N, PETSC_FALSE));
    PetscCall(CheckHelper(TSCN, PCJACOBI, N, PETSC_FALSE));
    PetscCall(CheckHelper(TSBEULER, PCBJACOBI, N, PETSC_FALSE));
    PetscCall(CheckHelper(TSRK, NULL, N, PETSC_TRUE));
    PetscCall(CheckHelper(TSCN, PCBJACOBI, N, PETSC_TRUE));
  } else if (!strcmp(testcase, "series")) {
    char type[32] = "";

    PetscCall(PetscOptionsGetString(NULL, NULL, "-series_type", type, sizeof(type), NULL));
    if (type[0])
      PetscCall(CheckSeries(type, N));
    else {
      PetscCall(CheckSeries(TSRK, N));
      PetscCall(CheckSeries(TSCN, N));
    }
  } else if (!strcmp(testcase, "checkpoint")) {
    const struct {
      const char *config;
      PetscInt    K;
    } runs[] = {
        {"rk4", 1}, {"rk4", 3}, {"rk4", 6}, {"rk3bs-adapt", 3}, {"cn", 3}, {"theta0.7end", 5},
    };

    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++)
      for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); k++)
        if (!strcmp(configs[k].name, runs[r].config)) PetscCall(CheckCheckpoint(&configs[k], runs[r].K, (PetscInt)r, N));
  } else if (!strcmp(testcase, "batches")) {
    PetscCall(Batches(N));
  } else if (!strcmp(testcase, "formswitch")) {
    PetscCall(FormSwitch(N));
  } else if (!strcmp(testcase, "saveload")) {
    PetscCall(SaveLoad(N));
  } else if (!strcmp(testcase, "run")) {
    PetscCall(RunFromOptions(N));
  } else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s: layer, helper, series, checkpoint, batches, run, saveload or formswitch", testcase);
  PetscCall(PetscFinalize());
  return 0;
}
