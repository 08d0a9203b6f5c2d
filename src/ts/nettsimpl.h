/* Private to src/ts: helpers shared by the TS glue. */
#pragma once

#include <petnet/private/netimpl.h>
#include <petnetts.h>
#include <petsc/private/tsimpl.h>

/* Explicit TS types integrate du/dt = G(t,u) from the RHS form alone; every other type gets the implicit form. */
PETSC_INTERN PetscErrorCode NetTSIsExplicitType_Private(TS, PetscBool *);
PETSC_INTERN PetscErrorCode TSTrajectoryCreate_Checkpoint(TSTrajectory, TS);
PETSC_INTERN PetscErrorCode LayerCreate_ODE(Layer);
