/*
  ode: a neural ODE block,  y = u(T)  where  u(0) = x,  du/dt = f(u; theta),  f an inner Net (input shape = output shape).

    x, y    [n][size]  the local batch of the outer Net; wrapped into the TS state Vec (n samples on this rank)
    theta   [p]        the inner Net's parameters (a slice of the outer Net's replicated parameter array); the inner Net
                       keeps them as its own distributed Vec, this rank writing its owned range

  forward   TSSolve from x, trajectory kept in memory (TSTRAJECTORYMEMORY unless -<prefix>ode_ts_trajectory_type says
            otherwise). The times of the steps taken are recorded.
  backward  TSAdjointSolve with lambda(T) = dy: dx = lambda(0), dtheta += mu (TSAdjoint's parameter gradient, in the
            inner Net's parameter layout; each rank adds the part it owns, the outer sum-reduce adds the ranks up).
            The adjoint consumes the trajectory: a second backward at the same point first re-runs the forward solve
            with the recorded steps.
  jvp       the tangent system  d/dt [u; v] = [f(u); J_f(u) v + J_theta(u) dtheta],  [u; v](0) = [x; dx],  integrated by
            a second TS of the same type and tableau over the recorded steps: a Runge-Kutta or theta method applied to
            the tangent system is the exact derivative of the same method applied to u' = f(u), so dy = v(T) is the
            exact JVP of the discrete solution map (implicit methods: up to the nonlinear solver tolerance; their
            Newton matrix is block diagonal, diag(shift I - J_f, shift I - J_f), a shell).

  Adaptive steps: the derivatives are those of the solution map for the steps taken (step sizes are not
  differentiated). Replay mode (LayerODESetReplaySteps(), -<prefix>ode_replay_steps, and automatically inside
  NetTestJacobian()) makes later forward passes reuse the recorded step sizes, so finite differences see the same
  discrete map.
*/
#pragma once

#include "../nettsimpl.h"
#include <petnetts.h>
#include <petnetdmda.h>
#include <petsc/private/tsimpl.h>

PETSC_INTERN PetscErrorCode NetDMDASetGrid_Private(Net, DM); /* ../netdmda.c: the Net on a DMDA (grid mode if it has windows) */

typedef struct {
  Net       net;         /* f */
  TS        ts;          /* forward and adjoint */
  PetscReal T, dt0;      /* final time and first step, read from the TS at setup */
  PetscBool fromoptions; /* LayerSetFromOptions() was called: the inner Net and TS read their options at setup */
  PetscBool configured;  /* the inner objects have their prefixes and options */
  PetscBool replay;      /* user request: forward passes reuse the recorded steps */
  char     *spec;        /* the inner Net's layer list from the compact arguments, applied at set-up */
  DM        dm;          /* the DMDA of the outer Net's fields (NetDMDASetUp()): the inner Net's grid, given at set-up */
  DM        dmin;        /* ... with dof the layer's input channels (DMDACreateCompatibleDMDA()), the inner Net's DMDA */
  PetscBool dmset;

  /* objects for a local batch of n samples (n = -1: none) */
  PetscInt n;
  Vec      U;                /* TS state */
  Vec      lambda[1], mu[1]; /* adjoint variables (TSSetCostGradients keeps the arrays) */
  Vec      dth;              /* a parameter direction in the inner Net's layout (jvp) */

  /* tangent system for jvp: state W = [u; v] (local layout: this rank's u, then its v) */
  TS         tts;
  Vec        W, Wu, Wv, Gu, Gv; /* Wu, Wv, Gu, Gv: wrappers of the halves of W and of a function value G */
  Vec        jvpdth;            /* dth or NULL during a tangent solve */
  Mat        tJ;                /* implicit methods: Newton's matrix of the tangent system (a shell) */
  Vec        ulin;              /* ... taken at the u half ulin of a state */
  NetTSPoint lin;               /* the inner Net's forward pass at ulin (../nettsimpl.h) */
  PetscReal  shift;

  /* the step sequence of the last recorded forward pass: times[0] < ... < times[nsteps] */
  PetscInt   nsteps, maxtimes;
  PetscReal *times;
  PetscBool  recording, replaying;
  PetscBool  trajvalid; /* the TS holds the trajectory of a forward pass at the current parameters */
} Layer_ODE;

PETSC_INTERN PetscErrorCode LayerForward_ODE(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerBackward_ODE(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVP_ODE(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerODEResetBatch_Private(Layer);
PETSC_INTERN PetscErrorCode LayerODEMonitor_Private(TS, PetscInt, PetscReal, Vec, void *);
PETSC_INTERN PetscErrorCode LayerODEPreStep_Private(TS);
