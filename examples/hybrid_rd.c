static const char help[] = "A hybrid reaction-diffusion model: a PDE on a DMDA whose reaction term is a small MLP, trained through TSAdjointSolve and TAO.\n"
                           "True model (FitzHugh-Nagumo, the 2-D diffusion-reaction problem of PDEBench) on the periodic square [-1,1]^2:\n"
                           "    u_t = Du Lap u + u - u^3 - k - v,    v_t = Dv Lap v + u - v\n"
                           "Data: snapshots of trajectories of the true model from smooth random initial conditions (PETSc TS, rk 4).\n"
                           "Model: the same diffusion (an assembled 5-point stencil) + N(u, v; theta), an MLP applied at every grid point\n"
                           "(the DMDA field with dof 2 is the Net's batch: no copy). Loss: mean squared misfit at the snapshot times, each\n"
                           "snapshot interval integrated from the observed snapshot (multiple shooting; -rd_shooting 0: whole trajectories\n"
                           "from their initial condition). Gradient: NetTSTimeSeriesGradient (TSSolve, then TSAdjointSolve). Optimizer: any\n"
                           "TAO type (default lmvm). Reports the relative L2 error, over all snapshots, of the learned model's trajectory from\n"
                           "a held-out initial condition (integrated from u(0) alone). Options:\n"
                           "  -rd_grid M             grid points per direction (default 32)\n"
                           "  -rd_final_time T       length of a trajectory (default 2.5)\n"
                           "  -rd_snapshots S        snapshots per trajectory, evenly spaced in (0, T] (default 5)\n"
                           "  -rd_train N            training trajectories (default 4); one more is held out\n"
                           "  -rd_amplitude A        size of the random initial conditions (default 0.5)\n"
                           "  -rd_Du, -rd_Dv, -rd_k  the true model's coefficients (default 1e-3, 5e-3, 5e-3)\n"
                           "  -rd_monitor K          print the loss every K iterations (default 10; 0: never)\n"
                           "The MLP is -net_layers (default dense:16,tanh,dense:2), the integrator -ts_* (default rk 4 with the largest stable\n"
                           "step that divides the snapshot interval), the optimizer -tao_* (default lmvm, 60 iterations).\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnetdmda.h>
#include <petnetoptim.h>
#include <petsctao.h>
#include "hybrid/fit.h"

/*
  Every simulation here runs on a 3-D DMDA of M x M x P points (dof 2: u, v): P independent copies of the 2-D problem,
  one per z slice (the stencil couples no slices). The training machinery is examples/hybrid/fit.c; this file gives it
  the grid (HybridGridOps).
*/
typedef struct {
  HybridProblem hp; /* the settings shared with examples/hybrid/fit.c; hp.ctx is this AppCtx */
  PetscInt      M;
} AppCtx;

/* The DMDA of P slices and A = Du Lap u, Dv Lap v in every slice (5-point, periodic) */
static PetscErrorCode GridCreate(HybridGrid *grid)
{
  AppCtx         *app = (AppCtx *)grid->problem->ctx;
  const PetscReal h   = 2.0 / app->M;
  PetscInt        xs, ys, zs, xm, ym, zm;

  PetscFunctionBegin;
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, app->M, app->M, grid->P, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL, NULL, &grid->dm));
  PetscCall(DMSetUp(grid->dm));
  PetscCall(DMDASetFieldName(grid->dm, 0, "u"));
  PetscCall(DMDASetFieldName(grid->dm, 1, "v"));
  /* row (i, j, s, c) = D_c (u(i-1,j) + u(i+1,j) + u(i,j-1) + u(i,j+1) - 4 u(i,j)) / h^2 in slice s */
  PetscCall(DMCreateMatrix(grid->dm, &grid->A));
  PetscCall(DMDAGetCorners(grid->dm, &xs, &ys, &zs, &xm, &ym, &zm));
  for (PetscInt s = zs; s < zs + zm; s++)
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++)
        for (PetscInt c = 0; c < 2; c++) {
          const PetscReal D      = (c == 0 ? app->hp.Du : app->hp.Dv) / (h * h);
          MatStencil      row    = {.k = s, .j = j, .i = i, .c = c};
          MatStencil      col[5] = {{.k = s, .j = j - 1, .i = i, .c = c}, {.k = s, .j = j, .i = i - 1, .c = c}, {.k = s, .j = j, .i = i, .c = c}, {.k = s, .j = j, .i = i + 1, .c = c}, {.k = s, .j = j + 1, .i = i, .c = c}};
          PetscScalar     v[5]   = {D, D, -4 * D, D, D};

          PetscCall(MatSetValuesStencil(grid->A, 1, &row, 5, col, v, INSERT_VALUES));
        }
  PetscCall(MatAssemblyBegin(grid->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(grid->A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/*
  Slice s of U gets the initial condition of trajectory traj[s]: each component is
    amplitude sum_{|kx|,|ky| <= 2} (a cos(pi (kx x + ky y)) + b sin(pi (kx x + ky y))) / (1 + kx^2 + ky^2)
  (a standard deviation of about the amplitude), a, b uniform in [-1, 1] from a stream seeded by the trajectory number
  and evaluated at the global grid coordinates: the same field on any number of ranks.
*/
static PetscErrorCode InitialConditions(HybridGrid *grid, const PetscInt traj[], Vec U)
{
  const PetscInt  K = 2, nk = 2 * K + 1;
  AppCtx         *app = (AppCtx *)grid->problem->ctx;
  PetscInt        xs, ys, zs, xm, ym, zm;
  PetscScalar ****u;
  PetscRandom     rnd;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(DMDAGetCorners(grid->dm, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMDAVecGetArrayDOFWrite(grid->dm, U, &u));
  for (PetscInt s = zs; s < zs + zm; s++) {
    PetscReal coef[2][5][5][2];

    PetscCall(PetscRandomSetSeed(rnd, 1000 + (unsigned long)traj[s]));
    PetscCall(PetscRandomSeed(rnd));
    for (PetscInt c = 0; c < 2; c++)
      for (PetscInt a = 0; a < nk; a++)
        for (PetscInt b = 0; b < nk; b++)
          for (PetscInt q = 0; q < 2; q++) PetscCall(PetscRandomGetValueReal(rnd, &coef[c][a][b][q]));
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++) {
        const PetscReal x = -1.0 + 2.0 * i / app->M, y = -1.0 + 2.0 * j / app->M;

        for (PetscInt c = 0; c < 2; c++) {
          PetscReal sum = 0.0;

          for (PetscInt a = 0; a < nk; a++)
            for (PetscInt b = 0; b < nk; b++) {
              const PetscReal kx = a - K, ky = b - K, phase = PETSC_PI * (kx * x + ky * y);

              sum += (coef[c][a][b][0] * PetscCosReal(phase) + coef[c][a][b][1] * PetscSinReal(phase)) / (1.0 + kx * kx + ky * ky);
            }
          u[s][j][i][c] = app->hp.amplitude * sum;
        }
      }
  }
  PetscCall(DMDAVecRestoreArrayDOFWrite(grid->dm, U, &u));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* dst = src on the slices s with pick[s] (same grid) */
static PetscErrorCode CopySlices(HybridGrid *grid, const PetscBool pick[], Vec src, Vec dst)
{
  PetscInt           zs, zm, slice;
  const PetscScalar *x;
  PetscScalar       *y;

  PetscFunctionBegin;
  PetscCall(DMDAGetCorners(grid->dm, NULL, NULL, &zs, NULL, NULL, &zm));
  PetscCall(VecGetLocalSize(src, &slice));
  slice /= zm; /* a rank's block holds whole slices' worth of its x-y block: [z][y][x][c] */
  PetscCall(VecGetArrayRead(src, &x));
  PetscCall(VecGetArray(dst, &y));
  for (PetscInt s = zs; s < zs + zm; s++)
    if (pick[s]) PetscCall(PetscArraycpy(y + (s - zs) * slice, x + (s - zs) * slice, slice));
  PetscCall(VecRestoreArray(dst, &y));
  PetscCall(VecRestoreArrayRead(src, &x));
  PetscFunctionReturn(0);
}

/* The Net as the right-hand side: the DMDA field with dof 2 is the Net's batch (no copy) */
static PetscErrorCode SetNetRHS(HybridGrid *grid, Net net, TS ts)
{
  PetscFunctionBegin;
  PetscCall(NetDMDATSSetRHS(ts, grid->dm, net));
  PetscFunctionReturn(0);
}

static const HybridGridOps GridOps = {GridCreate, InitialConditions, CopySlices, SetNetRHS};

int main(int argc, char **argv)
{
  AppCtx             app;
  HybridProblem     *hp = &app.hp;
  HybridGrid         grid; /* one simulation, for evaluation */
  HybridFit          fit;
  Net                net;
  TS                 truets, ts;
  Tao                tao;
  PetscReal          err0, errtrain, err, loss, ttrain, tsolve;
  PetscInt           nparams, its;
  PetscMPIInt        size;
  TaoType            taotype;
  TaoConvergedReason reason;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, rmsprop, ...) for TaoSetType and -tao_type */
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscMemzero(&app, sizeof(app)));
  app.M = 32;
  PetscCall(HybridProblemSetDefaults(hp, &GridOps, &app));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Hybrid reaction-diffusion example", NULL);
  PetscCall(PetNetOptionsInt("-rd_grid", "Grid points per direction", NULL, app.M, &app.M, NULL));
  PetscCall(HybridProblemSetFromOptions(PetscOptionsObject, hp));
  PetscOptionsEnd();
  PetscCheck(app.M >= 8, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-rd_grid %" PetscInt_FMT " is too coarse: give at least 8", app.M);
  PetscCheck(hp->nobs >= 1 && hp->ntrain >= 1 && hp->T > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "Give -rd_snapshots >= 1, -rd_train >= 1 and -rd_final_time > 0");
  {
    const PetscReal h = 2.0 / app.M;

    PetscCall(HybridProblemSetTimeStep(hp, 8 * PetscMax(hp->Du, hp->Dv) / (h * h))); /* the 5-point Laplacian's bound */
  }

  /* the MLP reaction term, the training problem, and a single simulation for evaluation */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:16,tanh,dense:2"));
  PetscCall(NetSetSeed(net, 7));
  PetscCall(NetSetFromOptions(net));
  PetscCall(HybridFitCreate(hp, net, &fit));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(HybridGridCreate(hp, 1, &grid));
  PetscCall(HybridCreateTrueTS(&grid, &truets));
  PetscCall(HybridCreateTS(&grid, net, &ts));
  PetscCall(HybridTrajectoryError(&grid, truets, ts, hp->ntrain, &err0, NULL));

  /* train theta through TSAdjointSolve and TAO */
  PetscCall(HybridFitTrain(&fit, &tao, &ttrain));
  PetscCall(TaoGetSolutionStatus(tao, &its, &loss, NULL, NULL, NULL, &reason));
  PetscCall(TaoGetType(tao, &taotype));

  /* the learned model from the held-out initial condition (and from a training one) */
  PetscCall(HybridTrajectoryError(&grid, truets, ts, 0, &errtrain, NULL));
  PetscCall(HybridTrajectoryError(&grid, truets, ts, hp->ntrain, &err, &tsolve));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "TAO %s: %" PetscInt_FMT " iterations, %s\n", taotype, its, TaoConvergedReasons[reason]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "relative L2 error of the trajectory: held-out %.6e (untrained model %.6e), training trajectory 0 %.6e\n", (double)err, (double)err0, (double)errtrain));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "summary: model=hybrid_fhn grid=%" PetscInt_FMT "x%" PetscInt_FMT " ranks=%d params=%" PetscInt_FMT " trajectories=%" PetscInt_FMT " snapshots=%" PetscInt_FMT " optimizer=%s iterations=%" PetscInt_FMT
                        " loss=%.6e rel_error=%.6e rel_error_untrained=%.6e train_time_s=%.2f solve_time_s=%.4f",
                        app.M, app.M, size, nparams, hp->ntrain, hp->nobs, taotype, its, (double)loss, (double)err, (double)err0, (double)ttrain, (double)tsolve));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(TSDestroy(&ts));
  PetscCall(TSDestroy(&truets));
  PetscCall(HybridGridDestroy(&grid));
  PetscCall(HybridFitDestroy(&fit));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
