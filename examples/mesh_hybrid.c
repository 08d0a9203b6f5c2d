static const char help[] = "A hybrid reaction-diffusion model on an unstructured mesh: FitzHugh-Nagumo on a triangular DMPlex whose reaction term\n"
                           "is a small MLP applied at every vertex, trained through TSAdjointSolve and TAO (the DMPlex counterpart of bin/hybrid_rd).\n"
                           "True model on the unit square (no-flux boundary), P1 elements with a lumped mass matrix M and stiffness K:\n"
                           "    u_t = -Du M^-1 K u + u - u^3 - k - v,    v_t = -Dv M^-1 K v + u - v\n"
                           "Mesh: the perturbed triangulation of bin/mesh_surrogate (examples/mesh_surrogate/mesh.c), distributed by PETSc's\n"
                           "partitioner; (u, v) are 2 dofs per vertex, the diffusion an assembled MPIAIJ on the DM's global layout.\n"
                           "Data: snapshots of trajectories of the true model from smooth random initial conditions (PETSc TS, rk 4).\n"
                           "Model: the same diffusion + N(u, v; theta), an MLP applied at every vertex (a vertex is a sample of shape (2)).\n"
                           "Loss: mean squared misfit at the snapshot times, each snapshot interval integrated from the observed snapshot\n"
                           "(multiple shooting; -rd_shooting 0: whole trajectories). Gradient: NetTSTimeSeriesGradient (TSSolve, then\n"
                           "TSAdjointSolve); the TS Jacobian is the assembled diffusion + the Net's Jacobian shell. Optimizer: any TAO type\n"
                           "(default lmvm). Reports the relative L2 error, over all snapshots, of the learned model's trajectories from held-out\n"
                           "initial conditions (integrated from u(0) alone). Options:\n"
                           "  -mesh_faces N          squares per side of the triangulation, 2 triangles each (default 16), then -dm_refine\n"
                           "  -rd_final_time T       length of a trajectory (default 2.5)\n"
                           "  -rd_snapshots S        snapshots per trajectory, evenly spaced in (0, T] (default 5)\n"
                           "  -rd_train N            training trajectories (default 4)\n"
                           "  -rd_test N             held-out trajectories (default 4), from initial conditions the training never sees\n"
                           "  -rd_amplitude A        size of the random initial conditions (default 0.5)\n"
                           "  -rd_Du, -rd_Dv, -rd_k  the true model's coefficients (default 1e-3, 5e-3, 5e-3)\n"
                           "  -rd_test_jacobian      check the coupled Jacobian and the parameter Jacobian (dot-product, finite differences)\n"
                           "  -rd_monitor K          print the loss every K iterations (default 10; 0: never)\n"
                           "The MLP is -net_layers (default dense:16,tanh,dense:2), the integrator -ts_* (default rk 4 with the largest stable\n"
                           "step that divides the snapshot interval), the optimizer -tao_* (default lmvm, 60 iterations).\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnetoptim.h>
#include <petsctao.h>
#include <petsctime.h>
#include "mesh_surrogate/mesh.h"

/*
  Every simulation here is P independent copies of the problem on one mesh (the diffusion couples no copies): a DM
  with 2 P dofs per vertex, [vertex][copy][u, v] on each rank. Training integrates all its segments as ONE such system:
  one TS, one NetTSTimeSeriesGradient per gradient, and a Net batch of P x (owned vertices) samples of shape (2).
*/
typedef struct {
  PetscInt    faces;
  PetscReal   Du, Dv, k;
  PetscReal   amplitude; /* of the random initial conditions */
  PetscReal   T, dt;     /* dt: the default step, stable for rk 4, a whole number of steps per snapshot interval */
  PetscInt    nobs, ntrain, ntest;
  PetscBool   shooting, testjac;
  PetscInt    monitor;
  MeshProblem mp; /* the distributed mesh, one dof per vertex: its stiffness K (k = 1) and lumped mass */
  Mat         L;  /* -M^-1 K: the lumped-mass P1 Laplacian on one scalar field (rows of the DM's global section) */
} AppCtx;

/* One batch of P simulations: its DM (2 P dofs per vertex) and its diffusion operator */
typedef struct {
  AppCtx  *app;
  PetscInt P;
  DM       dm;
  Mat      A; /* Du L u, Dv L v in every copy */
} Grid;

/* What the training fits: each copy starts at start and is observed at the times fit[] against target[] */
typedef struct {
  AppCtx    *app;
  Grid       grid;
  TS         ts;
  Net        net;
  Vec        start, *target, grad;
  PetscInt   nfit;
  PetscReal *fit;
  PetscReal  weight; /* 1 / (entries of start x nfit): the loss is half the mean squared misfit */
} Fit;

/* The mesh and the scalar Laplacian L = -M^-1 K (no-flux boundary: the rows of K sum to zero) */
static PetscErrorCode MeshCreate(AppCtx *app)
{
  Vec mass;

  PetscFunctionBegin;
  /* K = 1 mode, sigma = 0, famp = 0: the stiffness with k = 1 and the load with f = 1, i.e. the lumped mass */
  PetscCall(MeshProblemCreate(PETSC_COMM_WORLD, app->faces, 1, 0.0, 0.0, &app->mp));
  PetscCall(MatDuplicate(app->mp.A, MAT_COPY_VALUES, &app->L));
  PetscCall(VecDuplicate(app->mp.b, &mass));
  PetscCall(VecCopy(app->mp.b, mass));
  PetscCall(VecReciprocal(mass));
  PetscCall(VecScale(mass, -1.0));
  PetscCall(MatDiagonalScale(app->L, mass, NULL));
  PetscCall(VecDestroy(&mass));
  PetscFunctionReturn(0);
}

static PetscErrorCode MeshDestroy(AppCtx *app)
{
  PetscFunctionBegin;
  PetscCall(MatDestroy(&app->L));
  PetscCall(MeshProblemDestroy(&app->mp));
  PetscFunctionReturn(0);
}

/* max_i sum_j |L_ij| (Gershgorin: a bound on the spectral radius of L) */
static PetscErrorCode LaplacianBound(Mat L, PetscReal *bound)
{
  PetscInt  rs, re;
  PetscReal mx = 0;

  PetscFunctionBegin;
  PetscCall(MatGetOwnershipRange(L, &rs, &re));
  for (PetscInt i = rs; i < re; i++) {
    const PetscScalar *v;
    PetscInt           nc;
    PetscReal          s = 0;

    PetscCall(MatGetRow(L, i, &nc, NULL, &v));
    for (PetscInt j = 0; j < nc; j++) s += PetscAbsScalar(v[j]);
    PetscCall(MatRestoreRow(L, i, &nc, NULL, &v));
    mx = PetscMax(mx, s);
  }
  PetscCall(MPIU_Allreduce(&mx, bound, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

/*
  The DM of P copies: the mesh's DM with 2 P dofs per vertex. Its global section numbers the owned vertices in the same
  order as the scalar one, so dof (vertex g, copy s, field c) is global row 2 P g + 2 s + c, g the vertex's row of L.
  A = L (x) I_P (x) diag(Du, Dv) assembled on those rows.
*/
static PetscErrorCode GridCreate(AppCtx *app, PetscInt P, Grid *grid)
{
  const PetscInt bs = 2 * P;
  MeshProblem   *mp = &app->mp;
  PetscSection   sec, gsec, gsec1;
  PetscInt       pStart, pEnd, rs, re, *dnz, *onz;

  PetscFunctionBegin;
  grid->app = app;
  grid->P   = P;
  PetscCall(DMClone(mp->dm, &grid->dm));
  PetscCall(DMPlexGetChart(grid->dm, &pStart, &pEnd));
  PetscCall(PetscSectionCreate(PETSC_COMM_WORLD, &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) PetscCall(PetscSectionSetDof(sec, v, bs));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(grid->dm, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMGetGlobalSection(grid->dm, &gsec));
  PetscCall(DMGetGlobalSection(mp->dm, &gsec1));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) {
    PetscInt g, g1;

    PetscCall(PetscSectionGetOffset(gsec, v, &g));
    PetscCall(PetscSectionGetOffset(gsec1, v, &g1));
    if (g1 >= 0) PetscCheck(g == bs * g1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Vertex %" PetscInt_FMT ": global offset %" PetscInt_FMT " with %" PetscInt_FMT " dofs, not %" PetscInt_FMT " x %" PetscInt_FMT, v, g, bs, bs, g1);
  }

  PetscCall(MatGetOwnershipRange(app->L, &rs, &re));
  PetscCall(PetscMalloc2(bs * (re - rs), &dnz, bs * (re - rs), &onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt *cols;
    PetscInt        nc, nd = 0;

    PetscCall(MatGetRow(app->L, i, &nc, &cols, NULL));
    for (PetscInt j = 0; j < nc; j++) nd += cols[j] >= rs && cols[j] < re;
    for (PetscInt d = 0; d < bs; d++) {
      dnz[bs * (i - rs) + d] = nd;
      onz[bs * (i - rs) + d] = nc - nd;
    }
    PetscCall(MatRestoreRow(app->L, i, &nc, &cols, NULL)); /* sets nc to 0 */
  }
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, bs * (re - rs), bs * (re - rs), PETSC_DETERMINE, PETSC_DETERMINE, 0, dnz, 0, onz, &grid->A));
  PetscCall(PetscFree2(dnz, onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc, *bcols;
    PetscScalar       *bvals;

    PetscCall(MatGetRow(app->L, i, &nc, &cols, &vals));
    PetscCall(PetscMalloc2(nc, &bcols, nc, &bvals));
    for (PetscInt d = 0; d < bs; d++) {
      const PetscReal D   = d % 2 ? app->Dv : app->Du;
      PetscInt        row = bs * i + d;

      for (PetscInt j = 0; j < nc; j++) {
        bcols[j] = bs * cols[j] + d;
        bvals[j] = D * vals[j];
      }
      PetscCall(MatSetValues(grid->A, 1, &row, nc, bcols, bvals, INSERT_VALUES));
    }
    PetscCall(PetscFree2(bcols, bvals));
    PetscCall(MatRestoreRow(app->L, i, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(grid->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(grid->A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode GridDestroy(Grid *grid)
{
  PetscFunctionBegin;
  PetscCall(MatDestroy(&grid->A));
  PetscCall(DMDestroy(&grid->dm));
  PetscFunctionReturn(0);
}

/* The true model: F = A U + R(U) with R the FitzHugh-Nagumo reaction, pointwise on the local block */
static PetscErrorCode TrueRHS(TS ts, PetscReal t, Vec U, Vec F, void *ctx)
{
  Grid              *grid = (Grid *)ctx;
  const PetscReal    k    = grid->app->k;
  const PetscScalar *u;
  PetscScalar       *f;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(MatMult(grid->A, U, F));
  PetscCall(VecGetLocalSize(U, &n));
  PetscCall(VecGetArrayRead(U, &u));
  PetscCall(VecGetArray(F, &f));
  for (PetscInt p = 0; p < n / 2; p++) {
    const PetscScalar a = u[2 * p], b = u[2 * p + 1];

    f[2 * p] += a - a * a * a - k - b;
    f[2 * p + 1] += a - b;
  }
  PetscCall(VecRestoreArray(F, &f));
  PetscCall(VecRestoreArrayRead(U, &u));
  PetscFunctionReturn(0);
}

/* The hybrid model's own part: g(u) = A u (the Net adds the learned reaction) */
static PetscErrorCode DiffusionRHS(TS ts, PetscReal t, Vec U, Vec G, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(MatMult(((Grid *)ctx)->A, U, G));
  PetscFunctionReturn(0);
}

/*
  Copy s of U gets the initial condition of trajectory traj[s]: each component is, with (x', y') = (2x - 1, 2y - 1),
    amplitude sum_{|kx|,|ky| <= 2} (a cos(pi (kx x' + ky y')) + b sin(pi (kx x' + ky y'))) / (1 + kx^2 + ky^2)
  (bin/hybrid_rd's fields on [-1,1]^2 mapped to the unit square), a, b uniform in [-1, 1] from a stream seeded by the
  trajectory number, evaluated at the vertices' coordinates: the same field on any number of ranks and any partition.
*/
static PetscErrorCode InitialConditions(Grid *grid, const PetscInt traj[], Vec U)
{
  const PetscInt K = 2, nk = 2 * K + 1, P = grid->P;
  AppCtx        *app = grid->app;
  PetscScalar   *u;
  PetscRandom    rnd;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(VecGetArrayWrite(U, &u));
  for (PetscInt s = 0; s < P; s++) {
    PetscReal coef[2][5][5][2];

    PetscCall(PetscRandomSetSeed(rnd, 1000 + (unsigned long)traj[s]));
    PetscCall(PetscRandomSeed(rnd));
    for (PetscInt c = 0; c < 2; c++)
      for (PetscInt a = 0; a < nk; a++)
        for (PetscInt b = 0; b < nk; b++)
          for (PetscInt q = 0; q < 2; q++) PetscCall(PetscRandomGetValueReal(rnd, &coef[c][a][b][q]));
    for (PetscInt i = 0; i < app->mp.m; i++) {
      const PetscReal x = 2 * app->mp.xy[2 * i] - 1, y = 2 * app->mp.xy[2 * i + 1] - 1;

      for (PetscInt c = 0; c < 2; c++) {
        PetscReal sum = 0.0;

        for (PetscInt a = 0; a < nk; a++)
          for (PetscInt b = 0; b < nk; b++) {
            const PetscReal kx = a - K, ky = b - K, phase = PETSC_PI * (kx * x + ky * y);

            sum += (coef[c][a][b][0] * PetscCosReal(phase) + coef[c][a][b][1] * PetscSinReal(phase)) / (1.0 + kx * kx + ky * ky);
          }
        u[2 * (P * i + s) + c] = app->amplitude * sum;
      }
    }
  }
  PetscCall(VecRestoreArrayWrite(U, &u));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* dst = src on the copies s with pick[s] (same grid; [vertex][copy][u, v]) */
static PetscErrorCode CopySlices(Grid *grid, const PetscBool pick[], Vec src, Vec dst)
{
  const PetscInt     P = grid->P;
  const PetscScalar *x;
  PetscScalar       *y;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(src, &x));
  PetscCall(VecGetArray(dst, &y));
  for (PetscInt i = 0; i < grid->app->mp.m; i++)
    for (PetscInt s = 0; s < P; s++)
      if (pick[s]) {
        y[2 * (P * i + s)]     = x[2 * (P * i + s)];
        y[2 * (P * i + s) + 1] = x[2 * (P * i + s) + 1];
      }
  PetscCall(VecRestoreArray(dst, &y));
  PetscCall(VecRestoreArrayRead(src, &x));
  PetscFunctionReturn(0);
}

/*
  A TS with this example's integrator defaults (rk 4, app->dt), overridable by -ts_*. The true model's TS gets no DM:
  a TS keeps its right-hand side in its DM, so two TS on one DM would share it.
*/
static PetscErrorCode CreateTS(Grid *grid, PetscBool usedm, TS *ts)
{
  PetscFunctionBegin;
  PetscCall(TSCreate(PETSC_COMM_WORLD, ts));
  if (usedm) PetscCall(TSSetDM(*ts, grid->dm));
  PetscCall(TSSetType(*ts, TSRK));
  PetscCall(TSRKSetType(*ts, TSRK4));
  PetscCall(TSSetTimeStep(*ts, grid->app->dt));
  PetscCall(TSSetMaxSteps(*ts, 100000));
  PetscCall(TSSetExactFinalTime(*ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetFromOptions(*ts));
  PetscFunctionReturn(0);
}

/*
  The hybrid model on a grid: du/dt = A u + N(u; theta), the Net applied at every vertex of every copy (the DM's global
  Vec is a batch of samples of shape (2)). The TS's Jacobian is the shell J_N + A, its parameter Jacobian J_theta N.
*/
static PetscErrorCode CreateHybridTS(Grid *grid, Net net, TS *ts)
{
  Vec u;

  PetscFunctionBegin;
  PetscCall(CreateTS(grid, PETSC_TRUE, ts));
  PetscCall(DMGetGlobalVector(grid->dm, &u));
  PetscCall(NetTSSetRHS(*ts, net, u));
  PetscCall(DMRestoreGlobalVector(grid->dm, &u));
  PetscCall(NetTSSetUserRHS(*ts, DiffusionRHS, grid->A, NULL, grid));
  PetscFunctionReturn(0);
}

/* snap[i] = u(times[i]) from u(0) = u0 (i < nobs), one TSSolve per interval; the TS saves no trajectory */
static PetscErrorCode Simulate(TS ts, Vec u0, PetscInt nobs, const PetscReal times[], Vec snap[])
{
  Vec       u;
  PetscReal dt;

  PetscFunctionBegin;
  PetscCall(TSGetTimeStep(ts, &dt));
  PetscCall(VecDuplicate(u0, &u));
  PetscCall(VecCopy(u0, u));
  PetscCall(TSSetTime(ts, 0.0));
  PetscCall(TSSetStepNumber(ts, 0));
  for (PetscInt i = 0; i < nobs; i++) {
    PetscCall(TSSetMaxTime(ts, times[i]));
    PetscCall(TSSolve(ts, u));
    PetscCall(VecCopy(u, snap[i]));
  }
  PetscCall(TSSetTime(ts, 0.0));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetTimeStep(ts, dt));
  PetscCall(VecDestroy(&u));
  PetscFunctionReturn(0);
}

/*
  The training problem. Multiple shooting: copy (s, i), s < ntrain, i < nobs, starts at the true state of trajectory
  s at t_i (t_0 = 0) and is observed once, after one snapshot interval, against the true state at t_{i+1}. Whole
  trajectories: copy s starts at the initial condition and is observed at every snapshot time. The truth comes from
  the true model on the same grid (all copies of a trajectory integrated together).
*/
static PetscErrorCode FitCreate(AppCtx *app, Net net, Fit *fit)
{
  const PetscInt P = app->shooting ? app->ntrain * app->nobs : app->ntrain;
  PetscInt      *traj, N;
  PetscReal     *times;
  TS             truets;
  Vec            u, *snap;

  PetscFunctionBegin;
  fit->app = app;
  fit->net = net;
  PetscCall(GridCreate(app, P, &fit->grid));
  PetscCall(PetscMalloc2(P, &traj, app->nobs, &times));
  for (PetscInt s = 0; s < P; s++) traj[s] = app->shooting ? s / app->nobs : s;
  for (PetscInt i = 0; i < app->nobs; i++) times[i] = app->T * (i + 1) / app->nobs;
  PetscCall(DMCreateGlobalVector(fit->grid.dm, &fit->start));
  PetscCall(VecDuplicate(fit->start, &u));
  PetscCall(InitialConditions(&fit->grid, traj, u));
  PetscCall(CreateTS(&fit->grid, PETSC_FALSE, &truets));
  PetscCall(TSSetRHSFunction(truets, NULL, TrueRHS, &fit->grid));
  PetscCall(VecDuplicateVecs(u, app->nobs, &snap));
  PetscCall(Simulate(truets, u, app->nobs, times, snap));
  if (app->shooting) {
    PetscBool *pick;

    fit->nfit = 1;
    PetscCall(PetscMalloc1(1, &fit->fit));
    fit->fit[0] = app->T / app->nobs;
    PetscCall(VecDuplicateVecs(u, 1, &fit->target));
    PetscCall(PetscMalloc1(P, &pick));
    for (PetscInt i = 0; i <= app->nobs; i++) { /* copies (s, i) start at t_i; copies (s, i - 1) end there */
      Vec ui = i ? snap[i - 1] : u;

      for (PetscInt s = 0; s < P; s++) pick[s] = s % app->nobs == i ? PETSC_TRUE : PETSC_FALSE;
      PetscCall(CopySlices(&fit->grid, pick, ui, fit->start));
      for (PetscInt s = 0; s < P; s++) pick[s] = s % app->nobs == i - 1 ? PETSC_TRUE : PETSC_FALSE;
      PetscCall(CopySlices(&fit->grid, pick, ui, fit->target[0]));
    }
    PetscCall(PetscFree(pick));
  } else {
    fit->nfit = app->nobs;
    PetscCall(PetscMalloc1(app->nobs, &fit->fit));
    PetscCall(PetscArraycpy(fit->fit, times, app->nobs));
    PetscCall(VecCopy(u, fit->start));
    PetscCall(VecDuplicateVecs(u, app->nobs, &fit->target));
    for (PetscInt i = 0; i < app->nobs; i++) PetscCall(VecCopy(snap[i], fit->target[i]));
  }
  PetscCall(VecGetSize(fit->start, &N));
  fit->weight = 1.0 / ((PetscReal)N * fit->nfit);
  PetscCall(CreateHybridTS(&fit->grid, net, &fit->ts));
  PetscCall(NetTSSetSaveTrajectory(fit->ts));
  PetscCall(NetCreateParameterVec(net, &fit->grad));
  PetscCall(VecDestroyVecs(app->nobs, &snap));
  PetscCall(VecDestroy(&u));
  PetscCall(TSDestroy(&truets));
  PetscCall(PetscFree2(traj, times));
  PetscFunctionReturn(0);
}

static PetscErrorCode FitDestroy(Fit *fit)
{
  PetscFunctionBegin;
  PetscCall(TSDestroy(&fit->ts));
  PetscCall(VecDestroy(&fit->grad));
  PetscCall(VecDestroyVecs(fit->nfit, &fit->target));
  PetscCall(VecDestroy(&fit->start));
  PetscCall(PetscFree(fit->fit));
  PetscCall(GridDestroy(&fit->grid));
  PetscFunctionReturn(0);
}

/* l_i = weight/2 |u - target_i|^2 */
static PetscErrorCode Observe(TS ts, PetscInt i, PetscReal t, Vec u, PetscReal *l, Vec dldu, void *ctx)
{
  Fit      *fit = (Fit *)ctx;
  PetscReal nrm;

  PetscFunctionBegin;
  PetscCall(VecWAXPY(dldu, -1.0, fit->target[i], u));
  PetscCall(VecNorm(dldu, NORM_2, &nrm));
  *l = 0.5 * fit->weight * nrm * nrm;
  PetscCall(VecScale(dldu, fit->weight));
  PetscFunctionReturn(0);
}

/* f = the misfit of all training copies, g = df/dtheta: one forward solve and one adjoint solve */
static PetscErrorCode FormFunctionGradient(Tao tao, Vec x, PetscReal *f, Vec g, void *ctx)
{
  Fit *fit = (Fit *)ctx;
  Vec  theta;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(fit->net, &theta));
  PetscCall(VecCopy(x, theta));
  PetscCall(NetTSTimeSeriesGradient(fit->ts, fit->start, fit->nfit, fit->fit, Observe, fit, f, NULL, g));
  PetscFunctionReturn(0);
}

static PetscErrorCode Monitor(Tao tao, void *ctx)
{
  Fit      *fit = (Fit *)ctx;
  PetscInt  it;
  PetscReal f, gnorm;

  PetscFunctionBegin;
  PetscCall(TaoGetSolutionStatus(tao, &it, &f, &gnorm, NULL, NULL, NULL));
  if (fit->app->monitor > 0 && it % fit->app->monitor == 0) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iteration %4" PetscInt_FMT "  loss %.6e  |grad| %.3e\n", it, (double)f, (double)gnorm));
  PetscFunctionReturn(0);
}

/*
  The relative L2 error, over all snapshots and all copies of the grid, of the trajectories of ts from the initial
  conditions of trajectories first, first + 1, ... (one per copy, all integrated together)
*/
static PetscErrorCode TrajectoryError(AppCtx *app, Grid *grid, TS truets, TS ts, PetscInt first, PetscReal *err, PetscReal *seconds)
{
  PetscReal *times, num = 0.0, den = 0.0, t0, t1;
  Vec        u0, *truth, *model;
  PetscInt  *traj;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(app->nobs, &times, grid->P, &traj));
  for (PetscInt s = 0; s < grid->P; s++) traj[s] = first + s;
  for (PetscInt i = 0; i < app->nobs; i++) times[i] = app->T * (i + 1) / app->nobs;
  PetscCall(DMCreateGlobalVector(grid->dm, &u0));
  PetscCall(InitialConditions(grid, traj, u0));
  PetscCall(VecDuplicateVecs(u0, app->nobs, &truth));
  PetscCall(VecDuplicateVecs(u0, app->nobs, &model));
  PetscCall(Simulate(truets, u0, app->nobs, times, truth));
  PetscCall(PetscTime(&t0));
  PetscCall(Simulate(ts, u0, app->nobs, times, model));
  PetscCall(PetscTime(&t1));
  for (PetscInt i = 0; i < app->nobs; i++) {
    PetscReal d, n;

    PetscCall(VecNorm(truth[i], NORM_2, &n));
    PetscCall(VecAXPY(model[i], -1.0, truth[i]));
    PetscCall(VecNorm(model[i], NORM_2, &d));
    num += d * d;
    den += n * n;
  }
  *err = PetscSqrtReal(num / den);
  if (seconds) *seconds = t1 - t0;
  PetscCall(VecDestroyVecs(app->nobs, &model));
  PetscCall(VecDestroyVecs(app->nobs, &truth));
  PetscCall(VecDestroy(&u0));
  PetscCall(PetscFree2(times, traj));
  PetscFunctionReturn(0);
}

/*
  -rd_test_jacobian: checks the coupled right-hand side Jacobian J = A + J_N (the assembled diffusion plus the Net's
  shell, as the TS receives it) at the training start state u, for random v, w:
    adjoint  |<J v, w> - <v, J^T w>| / (|J v| |w|)
    finite   |J v - (G(u + h v) - G(u - h v)) / (2 h)| / |J v|,  G the TS right-hand side, h = 1e-6
  and the parameter Jacobian J_theta the same way (G as a function of theta).
*/
static PetscErrorCode TestJacobian(Fit *fit)
{
  TS              ts = fit->ts;
  Mat             J, JP;
  Vec             u = fit->start, v, w, Jv, JTw, up, Gp, Gm, theta, p, q, JTq;
  PetscRandom     rnd;
  PetscScalar     a, b;
  PetscReal       nJv, nw, nd, adj, fd, adjp, fdp;
  const PetscReal h = 1e-6;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 5));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecDuplicate(u, &v));
  PetscCall(VecDuplicate(u, &w));
  PetscCall(VecDuplicate(u, &Jv));
  PetscCall(VecDuplicate(u, &JTw));
  PetscCall(VecDuplicate(u, &up));
  PetscCall(VecDuplicate(u, &Gp));
  PetscCall(VecDuplicate(u, &Gm));
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecSetRandom(w, rnd));
  PetscCall(TSSetUp(ts));
  PetscCall(TSGetRHSJacobian(ts, &J, NULL, NULL, NULL));
  PetscCall(TSComputeRHSJacobian(ts, 0.0, u, J, J));
  PetscCall(MatMult(J, v, Jv));
  PetscCall(MatMultTranspose(J, w, JTw));
  PetscCall(VecDot(Jv, w, &a));
  PetscCall(VecDot(v, JTw, &b));
  PetscCall(VecNorm(Jv, NORM_2, &nJv));
  PetscCall(VecNorm(w, NORM_2, &nw));
  adj = PetscAbsScalar(a - b) / (nJv * nw);
  PetscCall(VecWAXPY(up, h, v, u));
  PetscCall(TSComputeRHSFunction(ts, 0.0, up, Gp));
  PetscCall(VecWAXPY(up, -h, v, u));
  PetscCall(TSComputeRHSFunction(ts, 0.0, up, Gm));
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecScale(Gp, 0.5 / h));
  PetscCall(TSComputeRHSJacobian(ts, 0.0, u, J, J));
  PetscCall(MatMult(J, v, Jv));
  PetscCall(VecAXPY(Gp, -1.0, Jv));
  PetscCall(VecNorm(Gp, NORM_2, &nd));
  fd = nd / nJv;

  /* the parameter Jacobian: dG/dtheta p against central differences in theta; adjoint with q */
  PetscCall(NetGetParameters(fit->net, &theta));
  PetscCall(VecDuplicate(theta, &p));
  PetscCall(VecDuplicate(theta, &JTq));
  PetscCall(VecDuplicate(u, &q));
  PetscCall(VecSetRandom(p, rnd));
  PetscCall(VecSetRandom(q, rnd));
  PetscCall(TSGetRHSJacobianP(ts, &JP, NULL, NULL));
  PetscCall(TSComputeRHSJacobianP(ts, 0.0, u, JP));
  PetscCall(MatMult(JP, p, Jv));
  PetscCall(MatMultTranspose(JP, q, JTq));
  PetscCall(VecDot(Jv, q, &a));
  PetscCall(VecDot(p, JTq, &b));
  PetscCall(VecNorm(Jv, NORM_2, &nJv));
  PetscCall(VecNorm(q, NORM_2, &nw));
  adjp = PetscAbsScalar(a - b) / (nJv * nw);
  PetscCall(VecAXPY(theta, h, p));
  PetscCall(TSComputeRHSFunction(ts, 0.0, u, Gp));
  PetscCall(VecAXPY(theta, -2 * h, p));
  PetscCall(TSComputeRHSFunction(ts, 0.0, u, Gm));
  PetscCall(VecAXPY(theta, h, p));
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecScale(Gp, 0.5 / h));
  PetscCall(TSComputeRHSJacobianP(ts, 0.0, u, JP));
  PetscCall(MatMult(JP, p, Jv));
  PetscCall(VecAXPY(Gp, -1.0, Jv));
  PetscCall(VecNorm(Gp, NORM_2, &nd));
  fdp = nd / nJv;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian test: adjoint %.1e, finite difference %.1e; parameter jacobian: adjoint %.1e, finite difference %.1e\n", (double)adj, (double)fd, (double)adjp, (double)fdp));
  PetscCheck(adj < 1e-12 && fd < 1e-6 && adjp < 1e-12 && fdp < 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The coupled Jacobian failed its test (bounds: adjoint 1e-12, finite difference 1e-6)");
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&q));
  PetscCall(VecDestroy(&JTq));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&Jv));
  PetscCall(VecDestroy(&JTw));
  PetscCall(VecDestroy(&up));
  PetscCall(VecDestroy(&Gp));
  PetscCall(VecDestroy(&Gm));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  AppCtx             app;
  Grid               grid, gridtrain; /* the held-out trajectories, and training trajectory 0, for evaluation */
  Fit                fit;
  Net                net;
  TS                 truets, ts, truetrain, tstrain;
  Tao                tao;
  Vec                x, theta;
  PetscReal          err0, errtrain, err, loss, t0, t1, tsolve, bound;
  PetscInt           nparams, its, insize;
  PetscMPIInt        size;
  TaoType            taotype;
  TaoConvergedReason reason;
  PetNetShape        in;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, rmsprop, ...) for TaoSetType and -tao_type */
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscMemzero(&app, sizeof(app)));
  app.faces     = 16;
  app.Du        = 1e-3;
  app.Dv        = 5e-3;
  app.k         = 5e-3;
  app.amplitude = 0.5;
  app.T         = 2.5;
  app.nobs      = 5;
  app.ntrain    = 4;
  app.ntest     = 4;
  app.shooting  = PETSC_TRUE;
  app.monitor   = 10;
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Hybrid reaction-diffusion example on a DMPlex mesh", NULL);
  PetscCall(PetscOptionsInt("-mesh_faces", "Squares per side of the triangulation (2 triangles each) before -dm_refine", NULL, app.faces, &app.faces, NULL));
  PetscCall(PetscOptionsReal("-rd_final_time", "Length of a trajectory", NULL, app.T, &app.T, NULL));
  PetscCall(PetscOptionsInt("-rd_snapshots", "Snapshots per trajectory", NULL, app.nobs, &app.nobs, NULL));
  PetscCall(PetscOptionsInt("-rd_train", "Training trajectories", NULL, app.ntrain, &app.ntrain, NULL));
  PetscCall(PetscOptionsInt("-rd_test", "Held-out trajectories", NULL, app.ntest, &app.ntest, NULL));
  PetscCall(PetscOptionsReal("-rd_amplitude", "Size of the random initial conditions", NULL, app.amplitude, &app.amplitude, NULL));
  PetscCall(PetscOptionsReal("-rd_Du", "Diffusivity of u", NULL, app.Du, &app.Du, NULL));
  PetscCall(PetscOptionsReal("-rd_Dv", "Diffusivity of v", NULL, app.Dv, &app.Dv, NULL));
  PetscCall(PetscOptionsReal("-rd_k", "Constant k of the reaction", NULL, app.k, &app.k, NULL));
  PetscCall(PetscOptionsBool("-rd_shooting", "Fit every snapshot interval from the observed snapshot (multiple shooting) instead of whole trajectories", NULL, app.shooting, &app.shooting, NULL));
  PetscCall(PetscOptionsBool("-rd_test_jacobian", "Check the coupled Jacobian (diffusion + Net shell) and the parameter Jacobian: dot-product and finite-difference tests", NULL, app.testjac, &app.testjac, NULL));
  PetscCall(PetscOptionsInt("-rd_monitor", "Print the loss every K iterations (0: never)", NULL, app.monitor, &app.monitor, NULL));
  PetscOptionsEnd();
  PetscCheck(app.faces >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_faces %" PetscInt_FMT ": the triangulation needs at least 2 squares per side", app.faces);
  PetscCheck(app.nobs >= 1 && app.ntrain >= 1 && app.ntest >= 1 && app.T > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "Give -rd_snapshots >= 1, -rd_train >= 1, -rd_test >= 1 and -rd_final_time > 0");
  PetscCheck(app.Du >= 0 && app.Dv >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-rd_Du %g and -rd_Dv %g: diffusivities must be >= 0", (double)app.Du, (double)app.Dv);
  PetscCall(MeshCreate(&app));
  PetscCall(LaplacianBound(app.L, &bound));
  {
    /* explicit rk 4 is stable for dt |lambda| <= 2.78: |lambda| up to max(Du, Dv) |L| from diffusion, about 3 from the reaction */
    const PetscReal dtmax = 2.5 / (PetscMax(app.Du, app.Dv) * bound + 3), interval = app.T / app.nobs;

    app.dt = interval / PetscCeilReal(interval / dtmax);
  }

  /* the MLP reaction term (a vertex is a sample of shape (2)), the training problem, a single simulation for evaluation */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:16,tanh,dense:2"));
  PetscCall(NetSetSeed(net, 7));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetGetInputShape(net, &in));
  if (!in.ndim) {
    in.ndim   = 1;
    in.dim[0] = 2;
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCheck(insize == 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "The Net's input has %" PetscInt_FMT " entries, but a vertex carries 2 (u, v): give the Net input shape 2 (or leave it unset)", insize);
  PetscCall(NetSetUp(net));
  PetscCall(FitCreate(&app, net, &fit));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(GridCreate(&app, app.ntest, &grid));
  PetscCall(CreateTS(&grid, PETSC_FALSE, &truets));
  PetscCall(TSSetRHSFunction(truets, NULL, TrueRHS, &grid));
  PetscCall(CreateHybridTS(&grid, net, &ts));
  PetscCall(GridCreate(&app, 1, &gridtrain));
  PetscCall(CreateTS(&gridtrain, PETSC_FALSE, &truetrain));
  PetscCall(TSSetRHSFunction(truetrain, NULL, TrueRHS, &gridtrain));
  PetscCall(CreateHybridTS(&gridtrain, net, &tstrain));
  PetscCall(TrajectoryError(&app, &grid, truets, ts, app.ntrain, &err0, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mesh: %" PetscInt_FMT " vertices, %d ranks; dt %.4e (|L| <= %.4e); %" PetscInt_FMT " parameters\n", app.mp.N, size, (double)app.dt, (double)bound, nparams));

  if (app.testjac) PetscCall(TestJacobian(&fit));

  /* train theta through TSAdjointSolve and TAO */
  PetscCall(TaoCreate(PETSC_COMM_WORLD, &tao));
  PetscCall(TaoSetType(tao, TAOLMVM));
  PetscCall(TaoSetMaximumIterations(tao, 60));
  PetscCall(TaoSetTolerances(tao, 1e-12, 0.0, 0.0));
  {
    PetscBool set;

    /* lmvm keeps 20 curvature pairs here rather than PETSc's 5 (as bin/hybrid_rd) */
    PetscCall(PetscOptionsHasName(NULL, NULL, "-tao_lmvm_mat_lmvm_hist_size", &set));
    if (!set) PetscCall(PetscOptionsSetValue(NULL, "-tao_lmvm_mat_lmvm_hist_size", "20"));
  }
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &x));
  PetscCall(VecCopy(theta, x));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &fit));
  PetscCall(TaoSetMonitor(tao, Monitor, &fit, NULL));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(PetscTime(&t0));
  PetscCall(TaoSolve(tao));
  PetscCall(PetscTime(&t1));
  PetscCall(TaoGetSolutionStatus(tao, &its, &loss, NULL, NULL, NULL, &reason));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(VecCopy(x, theta));

  /* the learned model from the held-out initial condition (and from a training one) */
  PetscCall(TrajectoryError(&app, &gridtrain, truetrain, tstrain, 0, &errtrain, NULL));
  PetscCall(TrajectoryError(&app, &grid, truets, ts, app.ntrain, &err, &tsolve));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "TAO %s: %" PetscInt_FMT " iterations, %s\n", taotype, its, TaoConvergedReasons[reason]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "relative L2 error of the trajectories: held-out (%" PetscInt_FMT " initial conditions) %.6e (untrained model %.6e), training trajectory 0 %.6e\n", app.ntest, (double)err, (double)err0, (double)errtrain));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "summary: model=mesh_hybrid_fhn ranks=%d nodes=%" PetscInt_FMT " params=%" PetscInt_FMT " trajectories=%" PetscInt_FMT " test=%" PetscInt_FMT " snapshots=%" PetscInt_FMT " optimizer=%s iterations=%" PetscInt_FMT
                        " loss=%.6e rel_error=%.6e rel_error_untrained=%.6e train_time_s=%.2f solve_time_s=%.4f\n",
                        size, app.mp.N, nparams, app.ntrain, app.ntest, app.nobs, taotype, its, (double)loss, (double)err, (double)err0, (double)(t1 - t0), (double)tsolve));

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&x));
  PetscCall(TSDestroy(&ts));
  PetscCall(TSDestroy(&truets));
  PetscCall(TSDestroy(&tstrain));
  PetscCall(TSDestroy(&truetrain));
  PetscCall(GridDestroy(&gridtrain));
  PetscCall(GridDestroy(&grid));
  PetscCall(FitDestroy(&fit));
  PetscCall(NetDestroy(&net));
  PetscCall(MeshDestroy(&app));
  PetscCall(PetscFinalize());
  return 0;
}
