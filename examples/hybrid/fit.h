/*
  The training machinery shared by bin/hybrid_rd (a DMDA) and bin/mesh_hybrid (a DMPlex mesh): FitzHugh-Nagumo
    u_t = Du Lap u + u - u^3 - k - v,    v_t = Dv Lap v + u - v
  whose reaction the hybrid model replaces by an MLP N(u, v; theta) applied at every grid point, trained through
  NetTSTimeSeriesGradient (TSSolve, then TSAdjointSolve) and TAO.

  Every simulation runs on a HybridGrid of P independent copies of the 2-D problem (the diffusion couples no copies):
  a DM with 2 dofs (u, v) per point and copy, interleaved, and the diffusion A assembled on the DM's global rows.
  Training integrates all its segments as ONE such system: one TS, one NetTSTimeSeriesGradient per gradient.
  The program supplies what depends on its grid through a HybridGridOps table (the grid of P copies, the initial
  conditions, copying chosen copies, attaching the Net to a TS); this module does the rest: the true and the
  diffusion right-hand sides, the TS, the simulations, the training problem (multiple shooting or whole trajectories),
  its loss and gradient, and the relative error of the learned trajectories.
*/
#pragma once

#include <petnet.h>
#include <petsctao.h>

typedef struct _HybridGrid HybridGrid;

/* What a program implements for its grid; each gets the HybridGrid with problem, P and ctx set */
typedef struct {
  PetscErrorCode (*create)(HybridGrid *);                                   /* set dm (2 P dofs per point) and A */
  PetscErrorCode (*initialconditions)(HybridGrid *, const PetscInt[], Vec); /* copy s of U: trajectory traj[s] */
  PetscErrorCode (*copyslices)(HybridGrid *, const PetscBool[], Vec, Vec);  /* dst = src on the copies s with pick[s] */
  PetscErrorCode (*setnetrhs)(HybridGrid *, Net, TS);                       /* the Net as the TS's right-hand side */
} HybridGridOps;

/* The settings both programs share, and the program's grid implementation */
typedef struct {
  PetscReal            Du, Dv, k; /* the true model's coefficients */
  PetscReal            amplitude; /* of the random initial conditions */
  PetscReal            T, dt;     /* dt: the default step, stable for rk 4, a whole number of steps per snapshot interval */
  PetscInt             nobs, ntrain;
  PetscBool            shooting;
  PetscInt             monitor;
  const HybridGridOps *ops;
  void                *ctx; /* the program's own data, for its ops */
} HybridProblem;

/* One batch of P simulations: its DM and its diffusion operator */
struct _HybridGrid {
  HybridProblem *problem;
  PetscInt       P;
  DM             dm;
  Mat            A; /* Du Lap u, Dv Lap v in every copy */
};

/* What the training fits: each copy starts at start and is observed at the times fit[] against target[] */
typedef struct {
  HybridProblem *problem;
  HybridGrid     grid;
  TS             ts;
  Net            net;
  Vec            start, *target, grad;
  PetscInt       nfit;
  PetscReal     *fit;
  PetscReal      weight; /* 1 / (entries of start x nfit): the loss is half the mean squared misfit */
} HybridFit;

PetscErrorCode HybridProblemSetDefaults(HybridProblem *, const HybridGridOps *, void *);
PetscErrorCode HybridProblemSetFromOptions(PetscOptionItems *, HybridProblem *);
PetscErrorCode HybridProblemSetTimeStep(HybridProblem *, PetscReal);
PetscErrorCode HybridGridCreate(HybridProblem *, PetscInt, HybridGrid *);
PetscErrorCode HybridGridDestroy(HybridGrid *);
PetscErrorCode HybridCreateTrueTS(HybridGrid *, TS *);
PetscErrorCode HybridCreateTS(HybridGrid *, Net, TS *);
PetscErrorCode HybridSimulate(TS, Vec, PetscInt, const PetscReal[], Vec[]);
PetscErrorCode HybridFitCreate(HybridProblem *, Net, HybridFit *);
PetscErrorCode HybridFitDestroy(HybridFit *);
PetscErrorCode HybridFitFormFunctionGradient(Tao, Vec, PetscReal *, Vec, void *);
PetscErrorCode HybridFitMonitor(Tao, void *);
PetscErrorCode HybridFitTrain(HybridFit *, Tao *, PetscReal *);
PetscErrorCode HybridTrajectoryError(HybridGrid *, TS, TS, PetscInt, PetscReal *, PetscReal *);
