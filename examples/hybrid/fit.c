/* The training machinery of bin/hybrid_rd and bin/mesh_hybrid: see fit.h for the layout of a HybridGrid */
#include <petsctime.h>
#include "fit.h"

/*
  The defaults both programs start from: FitzHugh-Nagumo as in PDEBench's 2-D diffusion-reaction problem (Du 1e-3,
  Dv 5e-3, k 5e-3), random initial conditions of size 0.5, 4 training trajectories of 5 snapshots over T = 2.5, fitted
  by multiple shooting, the loss printed every 10 iterations. ops and ctx: the program's grid.
*/
PetscErrorCode HybridProblemSetDefaults(HybridProblem *hp, const HybridGridOps *ops, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(PetscMemzero(hp, sizeof(*hp)));
  hp->Du        = 1e-3;
  hp->Dv        = 5e-3;
  hp->k         = 5e-3;
  hp->amplitude = 0.5;
  hp->T         = 2.5;
  hp->nobs      = 5;
  hp->ntrain    = 4;
  hp->shooting  = PETSC_TRUE;
  hp->monitor   = 10;
  hp->ops       = ops;
  hp->ctx       = ctx;
  PetscFunctionReturn(0);
}

/* The shared -rd_* options; call it inside the program's PetscOptionsBegin/PetscOptionsEnd block */
PetscErrorCode HybridProblemSetFromOptions(PetscOptionItems *PetscOptionsObject, HybridProblem *hp)
{
  PetscFunctionBegin;
  PetscCall(PetscOptionsReal("-rd_final_time", "Length of a trajectory", NULL, hp->T, &hp->T, NULL));
  PetscCall(PetNetOptionsInt("-rd_snapshots", "Snapshots per trajectory", NULL, hp->nobs, &hp->nobs, NULL));
  PetscCall(PetNetOptionsInt("-rd_train", "Training trajectories", NULL, hp->ntrain, &hp->ntrain, NULL));
  PetscCall(PetscOptionsReal("-rd_amplitude", "Size of the random initial conditions", NULL, hp->amplitude, &hp->amplitude, NULL));
  PetscCall(PetscOptionsReal("-rd_Du", "Diffusivity of u", NULL, hp->Du, &hp->Du, NULL));
  PetscCall(PetscOptionsReal("-rd_Dv", "Diffusivity of v", NULL, hp->Dv, &hp->Dv, NULL));
  PetscCall(PetscOptionsReal("-rd_k", "Constant k of the reaction", NULL, hp->k, &hp->k, NULL));
  PetscCall(PetscOptionsBool("-rd_shooting", "Fit every snapshot interval from the observed snapshot (multiple shooting) instead of whole trajectories", NULL, hp->shooting, &hp->shooting, NULL));
  PetscCall(PetNetOptionsInt("-rd_monitor", "Print the loss every K iterations (0: never)", NULL, hp->monitor, &hp->monitor, NULL));
  PetscFunctionReturn(0);
}

/*
  The default time step: explicit rk 4 is stable for dt |lambda| <= 2.78, |lambda| up to diffusion (a bound on the
  spectral radius of the grid's A) plus about 3 from the reaction; the largest such step with a whole number of steps
  per snapshot interval.
*/
PetscErrorCode HybridProblemSetTimeStep(HybridProblem *hp, PetscReal diffusion)
{
  const PetscReal dtmax = 2.5 / (diffusion + 3), interval = hp->T / hp->nobs;

  PetscFunctionBegin;
  hp->dt = interval / PetscCeilReal(interval / dtmax);
  PetscFunctionReturn(0);
}

/* A grid of P copies: the common fields, then the program's create (dm, A) */
PetscErrorCode HybridGridCreate(HybridProblem *hp, PetscInt P, HybridGrid *grid)
{
  PetscFunctionBegin;
  PetscCall(PetscMemzero(grid, sizeof(*grid)));
  grid->problem = hp;
  grid->P       = P;
  PetscCall(hp->ops->create(grid));
  PetscFunctionReturn(0);
}

PetscErrorCode HybridGridDestroy(HybridGrid *grid)
{
  PetscFunctionBegin;
  PetscCall(MatDestroy(&grid->A));
  PetscCall(DMDestroy(&grid->dm));
  PetscFunctionReturn(0);
}

/* The true model: F = A U + R(U) with R the FitzHugh-Nagumo reaction, pointwise on the local block ([...][u, v]) */
static PetscErrorCode TrueRHS(TS ts, PetscReal t, Vec U, Vec F, void *ctx)
{
  HybridGrid        *grid = (HybridGrid *)ctx;
  const PetscReal    k    = grid->problem->k;
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
  PetscCall(MatMult(((HybridGrid *)ctx)->A, U, G));
  PetscFunctionReturn(0);
}

/*
  A TS with the examples' integrator defaults (rk 4, problem->dt), overridable by -ts_*. The true model's TS gets no
  DM: a TS keeps its right-hand side in its DM, so two TS on one DM would share it.
*/
static PetscErrorCode CreateTS(HybridGrid *grid, PetscBool usedm, TS *ts)
{
  PetscFunctionBegin;
  PetscCall(TSCreate(PETSC_COMM_WORLD, ts));
  if (usedm) PetscCall(TSSetDM(*ts, grid->dm));
  PetscCall(TSSetType(*ts, TSRK));
  PetscCall(TSRKSetType(*ts, TSRK4));
  PetscCall(TSSetTimeStep(*ts, grid->problem->dt));
  PetscCall(TSSetMaxSteps(*ts, 100000));
  PetscCall(TSSetExactFinalTime(*ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetFromOptions(*ts));
  PetscFunctionReturn(0);
}

/* The true model on a grid: du/dt = A u + R(u) */
PetscErrorCode HybridCreateTrueTS(HybridGrid *grid, TS *ts)
{
  PetscFunctionBegin;
  PetscCall(CreateTS(grid, PETSC_FALSE, ts));
  PetscCall(TSSetRHSFunction(*ts, NULL, TrueRHS, grid));
  PetscFunctionReturn(0);
}

/*
  The hybrid model on a grid: du/dt = A u + N(u; theta), the Net applied at every point of every copy (attached by the
  program's setnetrhs). The TS's Jacobian is the shell J_N + A, its parameter Jacobian J_theta N.
*/
PetscErrorCode HybridCreateTS(HybridGrid *grid, Net net, TS *ts)
{
  PetscFunctionBegin;
  PetscCall(CreateTS(grid, PETSC_TRUE, ts));
  PetscCall(grid->problem->ops->setnetrhs(grid, net, *ts));
  PetscCall(NetTSSetUserRHS(*ts, DiffusionRHS, grid->A, NULL, grid));
  PetscFunctionReturn(0);
}

/* snap[i] = u(times[i]) from u(0) = u0 (i < nobs), one TSSolve per interval; the TS saves no trajectory */
PetscErrorCode HybridSimulate(TS ts, Vec u0, PetscInt nobs, const PetscReal times[], Vec snap[])
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
PetscErrorCode HybridFitCreate(HybridProblem *hp, Net net, HybridFit *fit)
{
  const PetscInt       P   = hp->shooting ? hp->ntrain * hp->nobs : hp->ntrain;
  const HybridGridOps *ops = hp->ops;
  PetscInt            *traj, N;
  PetscReal           *times;
  TS                   truets;
  Vec                  u, *snap;

  PetscFunctionBegin;
  fit->problem = hp;
  fit->net     = net;
  PetscCall(HybridGridCreate(hp, P, &fit->grid));
  PetscCall(PetscMalloc2(P, &traj, hp->nobs, &times));
  for (PetscInt s = 0; s < P; s++) traj[s] = hp->shooting ? s / hp->nobs : s;
  for (PetscInt i = 0; i < hp->nobs; i++) times[i] = hp->T * (i + 1) / hp->nobs;
  PetscCall(DMCreateGlobalVector(fit->grid.dm, &fit->start));
  PetscCall(VecDuplicate(fit->start, &u));
  PetscCall(ops->initialconditions(&fit->grid, traj, u));
  PetscCall(HybridCreateTrueTS(&fit->grid, &truets));
  PetscCall(VecDuplicateVecs(u, hp->nobs, &snap));
  PetscCall(HybridSimulate(truets, u, hp->nobs, times, snap));
  if (hp->shooting) {
    PetscBool *pick;

    fit->nfit = 1;
    PetscCall(PetscMalloc1(1, &fit->fit));
    fit->fit[0] = hp->T / hp->nobs;
    PetscCall(VecDuplicateVecs(u, 1, &fit->target));
    PetscCall(PetscMalloc1(P, &pick));
    for (PetscInt i = 0; i <= hp->nobs; i++) { /* copies (s, i) start at t_i; copies (s, i - 1) end there */
      Vec ui = i ? snap[i - 1] : u;

      for (PetscInt s = 0; s < P; s++) pick[s] = s % hp->nobs == i ? PETSC_TRUE : PETSC_FALSE;
      PetscCall(ops->copyslices(&fit->grid, pick, ui, fit->start));
      for (PetscInt s = 0; s < P; s++) pick[s] = s % hp->nobs == i - 1 ? PETSC_TRUE : PETSC_FALSE;
      PetscCall(ops->copyslices(&fit->grid, pick, ui, fit->target[0]));
    }
    PetscCall(PetscFree(pick));
  } else {
    fit->nfit = hp->nobs;
    PetscCall(PetscMalloc1(hp->nobs, &fit->fit));
    PetscCall(PetscArraycpy(fit->fit, times, hp->nobs));
    PetscCall(VecCopy(u, fit->start));
    PetscCall(VecDuplicateVecs(u, hp->nobs, &fit->target));
    for (PetscInt i = 0; i < hp->nobs; i++) PetscCall(VecCopy(snap[i], fit->target[i]));
  }
  PetscCall(VecGetSize(fit->start, &N));
  fit->weight = 1.0 / ((PetscReal)N * fit->nfit);
  PetscCall(HybridCreateTS(&fit->grid, net, &fit->ts));
  PetscCall(NetTSSetSaveTrajectory(fit->ts));
  PetscCall(NetCreateParameterVec(net, &fit->grad));
  PetscCall(VecDestroyVecs(hp->nobs, &snap));
  PetscCall(VecDestroy(&u));
  PetscCall(TSDestroy(&truets));
  PetscCall(PetscFree2(traj, times));
  PetscFunctionReturn(0);
}

PetscErrorCode HybridFitDestroy(HybridFit *fit)
{
  PetscFunctionBegin;
  PetscCall(TSDestroy(&fit->ts));
  PetscCall(VecDestroy(&fit->grad));
  PetscCall(VecDestroyVecs(fit->nfit, &fit->target));
  PetscCall(VecDestroy(&fit->start));
  PetscCall(PetscFree(fit->fit));
  PetscCall(HybridGridDestroy(&fit->grid));
  PetscFunctionReturn(0);
}

/* l_i = weight/2 |u - target_i|^2 */
static PetscErrorCode Observe(TS ts, PetscInt i, PetscReal t, Vec u, PetscReal *l, Vec dldu, void *ctx)
{
  HybridFit *fit = (HybridFit *)ctx;
  PetscReal  nrm;

  PetscFunctionBegin;
  PetscCall(VecWAXPY(dldu, -1.0, fit->target[i], u));
  PetscCall(VecNorm(dldu, NORM_2, &nrm));
  *l = 0.5 * fit->weight * nrm * nrm;
  PetscCall(VecScale(dldu, fit->weight));
  PetscFunctionReturn(0);
}

/* TAO's objective and gradient (ctx: the HybridFit): f = the misfit of all training copies, g = df/dtheta, one
   forward solve and one adjoint solve */
PetscErrorCode HybridFitFormFunctionGradient(Tao tao, Vec x, PetscReal *f, Vec g, void *ctx)
{
  HybridFit *fit = (HybridFit *)ctx;
  Vec        theta;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(fit->net, &theta));
  PetscCall(VecCopy(x, theta));
  PetscCall(NetTSTimeSeriesGradient(fit->ts, fit->start, fit->nfit, fit->fit, Observe, fit, f, NULL, g));
  PetscFunctionReturn(0);
}

/* TAO's monitor (ctx: the HybridFit): the loss every problem->monitor iterations */
PetscErrorCode HybridFitMonitor(Tao tao, void *ctx)
{
  HybridFit *fit = (HybridFit *)ctx;
  PetscInt   it;
  PetscReal  f, gnorm;

  PetscFunctionBegin;
  PetscCall(TaoGetSolutionStatus(tao, &it, &f, &gnorm, NULL, NULL, NULL));
  if (fit->problem->monitor > 0 && it % fit->problem->monitor == 0) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iteration %4" PetscInt_FMT "  loss %.6e  |grad| %.3e\n", it, (double)f, (double)gnorm));
  PetscFunctionReturn(0);
}

/*
  Trains the Net's parameters on the fit with TAO, from their current values: default lmvm, 60 iterations, keeping 20
  curvature pairs rather than PETSc's 5 (about half the iterations for this fit); -tao_* overrides. Leaves the solution
  in the Net; returns the Tao (for its status; the caller destroys it) and the wall time of TaoSolve.
*/
PetscErrorCode HybridFitTrain(HybridFit *fit, Tao *tao, PetscReal *seconds)
{
  Vec       x, theta;
  PetscReal t0, t1;
  PetscBool set;

  PetscFunctionBegin;
  PetscCall(TaoCreate(PETSC_COMM_WORLD, tao));
  PetscCall(TaoSetType(*tao, TAOLMVM));
  PetscCall(TaoSetMaximumIterations(*tao, 60));
  PetscCall(TaoSetTolerances(*tao, 1e-12, 0.0, 0.0));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-tao_lmvm_mat_lmvm_hist_size", &set));
  if (!set) PetscCall(PetscOptionsSetValue(NULL, "-tao_lmvm_mat_lmvm_hist_size", "20"));
  PetscCall(NetGetParameters(fit->net, &theta));
  PetscCall(VecDuplicate(theta, &x));
  PetscCall(VecCopy(theta, x));
  PetscCall(TaoSetSolution(*tao, x));
  PetscCall(VecDestroy(&x)); /* the Tao holds it */
  PetscCall(TaoSetObjectiveAndGradient(*tao, NULL, HybridFitFormFunctionGradient, fit));
  PetscCall(TaoSetMonitor(*tao, HybridFitMonitor, fit, NULL));
  PetscCall(TaoSetFromOptions(*tao));
  PetscCall(PetscTime(&t0));
  PetscCall(TaoSolve(*tao));
  PetscCall(PetscTime(&t1));
  PetscCall(TaoGetSolution(*tao, &x));
  PetscCall(VecCopy(x, theta));
  *seconds = t1 - t0;
  PetscFunctionReturn(0);
}

/*
  The relative L2 error, over all snapshots and all copies of the grid, of the trajectories of ts from the initial
  conditions of trajectories first, first + 1, ... (one per copy, all integrated together); truets integrates the true
  model on the same grid. seconds (optional): the time of ts's simulation.
*/
PetscErrorCode HybridTrajectoryError(HybridGrid *grid, TS truets, TS ts, PetscInt first, PetscReal *err, PetscReal *seconds)
{
  HybridProblem *hp = grid->problem;
  PetscReal     *times, num = 0.0, den = 0.0, t0, t1;
  Vec            u0, *truth, *model;
  PetscInt      *traj;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(hp->nobs, &times, grid->P, &traj));
  for (PetscInt s = 0; s < grid->P; s++) traj[s] = first + s;
  for (PetscInt i = 0; i < hp->nobs; i++) times[i] = hp->T * (i + 1) / hp->nobs;
  PetscCall(DMCreateGlobalVector(grid->dm, &u0));
  PetscCall(hp->ops->initialconditions(grid, traj, u0));
  PetscCall(VecDuplicateVecs(u0, hp->nobs, &truth));
  PetscCall(VecDuplicateVecs(u0, hp->nobs, &model));
  PetscCall(HybridSimulate(truets, u0, hp->nobs, times, truth));
  PetscCall(PetscTime(&t0));
  PetscCall(HybridSimulate(ts, u0, hp->nobs, times, model));
  PetscCall(PetscTime(&t1));
  for (PetscInt i = 0; i < hp->nobs; i++) {
    PetscReal d, n;

    PetscCall(VecNorm(truth[i], NORM_2, &n));
    PetscCall(VecAXPY(model[i], -1.0, truth[i]));
    PetscCall(VecNorm(model[i], NORM_2, &d));
    num += d * d;
    den += n * n;
  }
  *err = PetscSqrtReal(num / den);
  if (seconds) *seconds = t1 - t0;
  PetscCall(VecDestroyVecs(hp->nobs, &model));
  PetscCall(VecDestroyVecs(hp->nobs, &truth));
  PetscCall(VecDestroy(&u0));
  PetscCall(PetscFree2(times, traj));
  PetscFunctionReturn(0);
}
