/* Private to src/ts: helpers shared by the TS glue. */
#pragma once

#include <petnet/private/netimpl.h>
#include <petnetts.h>
#include <petsc/private/tsimpl.h>

/*
  Where the TS glue last linearized a Net (NetTSSetRHS()'s Jacobian shells, the ode layer's tangent system): the Net's
  input workspace right after NetForward(u), and the states of it and of the parameters that prove the Net is still
  there. NetTSForwardAt_Private() runs a forward pass at u only when they do not; act0 = NULL forces one.
*/
typedef struct {
  Vec              act0;
  PetscObjectState act0state, thetastate;
} NetTSPoint;
PETSC_INTERN PetscErrorCode NetTSForwardAt_Private(Net, Vec, NetTSPoint *);

/* Explicit TS types integrate du/dt = G(t,u) from the RHS form alone; every other type gets the implicit form. */
PETSC_INTERN PetscErrorCode NetTSIsExplicitType_Private(TS, PetscBool *);
PETSC_INTERN PetscErrorCode TSTrajectoryCreate_Checkpoint(TSTrajectory, TS);
PETSC_INTERN PetscErrorCode LayerCreate_ODE(Layer);
