/*
  Neural ODEs and Nets inside PETSc time integrators (TS), trained through TSAdjoint.

  NetTSSetRHS      makes a Net the right-hand side of any TS:  du/dt = N(u; theta)  [+ g(t, u), NetTSSetUserRHS()].
                   u is a batch Vec: its local part is n samples of the Net's input shape, e.g. a DMDA Vec with dof = c
                   is a batch of grid points with c features, so a learned pointwise term needs no copy.
                   Explicit methods (rk, ...) get the RHS form: TSSetRHSFunction, TSSetRHSJacobian (the Net's input
                   Jacobian, a MATSHELL: MatMult = JVP, MatMultTranspose = VJP) and TSSetRHSJacobianP (dN/dtheta).
                   Implicit methods (beuler, cn, theta, ...) get the implicit form F = udot - N(u) [- g]: TSSetIFunction,
                   TSSetIJacobian (a shell applying shift x - J x and its transpose), TSSetIJacobianP (-dN/dtheta).
                   The form follows the TS type when NetTSSetRHS() is called: set the type first (TSSetType() or
                   TSSetFromOptions()); a later -ts_type of the other family is refused with an error.
                   The parameters are the Net's distributed parameter Vec (NetGetParameters()): the mu of
                   TSSetCostGradients() and the parameter gradient of TSAdjointSolve() have that layout.
  NetTSCheckAdjoint refuses, with an error naming the option to change, the integrators whose discrete adjoint is
                   missing or wrong in this PETSc: every type but rk, theta, beuler and cn; with PETSc < 3.21.4 the RK
                   tableaus with a zero weight b_i (5dp, 5f, 5bs) whose parameter gradients are wrong.
  NetTSTimeSeriesGradient  L = sum_i l_i(u(t_i)) over observation times: one forward solve that lands on every t_i,
                   then the adjoint segment by segment (TSAdjointSetSteps()), adding dl_i/du to lambda between segments.
  Layer "ode"      y = u(T), u(0) = x, du/dt = f(u; theta) with f an inner Net (LAYERODE, registered by the TS package). Compact:
                   ode, ode:T, ode(f) or ode(T|f), e.g. ode(0.5|dense:32,tanh,dense:4); or by options:
                   -<layer prefix>ode_net_layers dense:32,tanh,dense:4   the inner Net (prefix <layer prefix>ode_)
                   -<layer prefix>ode_ts_type rk -<layer prefix>ode_ts_rk_type 4 -<layer prefix>ode_ts_dt 0.1 ...
                   forward = TSSolve (trajectory in memory), backward = TSAdjointSolve, jvp = the tangent system
                   integrated with the same method and the same steps (exact derivative of the discrete solution map).
  TSTRAJECTORYCHECKPOINT  a TSTrajectory that keeps at most K solutions in memory (-ts_trajectory_type checkpoint
                   -ts_trajectory_max_cps_ram K) and recomputes the steps in between during the adjoint: evenly spread
                   checkpoints from the forward solve, binomial (revolve) placement of new ones in the free slots.
*/
#pragma once

#include <petnetnet.h>
#include <petscts.h>

#define LAYERODE "ode" /* ode[:T]: y = u(T), du/dt = f(u) with f an inner Net (-<prefix>ode_net_layers) */

/* Net as (part of) the right-hand side of a TS */
PETSC_EXTERN PetscErrorCode NetTSSetRHS(TS, Net, Vec);
PETSC_EXTERN PetscErrorCode NetTSSetUserRHS(TS, PetscErrorCode (*)(TS, PetscReal, Vec, Vec, void *), Mat, PetscErrorCode (*)(TS, PetscReal, Vec, Mat, void *), void *);
PETSC_EXTERN PetscErrorCode NetTSGetNet(TS, Net *);
PETSC_EXTERN PetscErrorCode NetTSGetImplicit(TS, PetscBool *);

/* Adjoint support */
PETSC_EXTERN PetscErrorCode NetTSCheckAdjoint(TS);
PETSC_EXTERN PetscErrorCode NetTSSetSaveTrajectory(TS);

/*
  NetTSObservationFn - loss of the observation i at time t: *l = l_i(u) and dldu = dl_i/du (same layout as u;
  fill every entry). Called once per observation, in increasing time, during the forward solve.
*/
typedef PetscErrorCode (*NetTSObservationFn)(TS, PetscInt, PetscReal, Vec, PetscReal *, Vec, void *);
PETSC_EXTERN PetscErrorCode NetTSTimeSeriesGradient(TS, Vec, PetscInt, const PetscReal[], NetTSObservationFn, void *, PetscReal *, Vec, Vec);

/* The ode layer */
PETSC_EXTERN PetscErrorCode LayerODESetFinalTime(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerODEGetFinalTime(Layer, PetscReal *);
PETSC_EXTERN PetscErrorCode LayerODEGetNet(Layer, Net *);
PETSC_EXTERN PetscErrorCode LayerODEGetTS(Layer, TS *);
PETSC_EXTERN PetscErrorCode LayerODEGetTimeSteps(Layer, PetscInt *, const PetscReal *[]);
PETSC_EXTERN PetscErrorCode LayerODESetReplaySteps(Layer, PetscBool);

/* Bounded-memory checkpointing */
#define TSTRAJECTORYCHECKPOINT "checkpoint"
PETSC_EXTERN PetscErrorCode NetTSInitializePackage(void);
PETSC_EXTERN PetscErrorCode NetTSFinalizePackage(void);
PETSC_EXTERN PetscErrorCode NetTSRegisterAll(void);
PETSC_EXTERN PetscErrorCode TSTrajectoryCheckpointSetMaxCheckpoints(TSTrajectory, PetscInt);
PETSC_EXTERN PetscErrorCode TSTrajectoryCheckpointGetStats(TSTrajectory, PetscInt *, PetscInt *);
