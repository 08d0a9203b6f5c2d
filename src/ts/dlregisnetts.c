/* PetNet's TS extensions: the registration of the checkpoint trajectory and of the ode layer kind, and the finalizer. */
#include "nettsimpl.h"

static PetscBool NetTSPackageInitialized = PETSC_FALSE;
static PetscBool NetTSRegisterAllCalled  = PETSC_FALSE;

/*@C
  NetTSRegisterAll - registers the TSTrajectory type TSTRAJECTORYCHECKPOINT ("checkpoint") and the layer kind
  LAYERODE ("ode"). Idempotent; PETSc's own
  TSTrajectory registry is freed at PetscFinalize(), so the registration is redone after a re-initialization.

  Level: developer

.seealso: `NetTSInitializePackage()`, `TSTrajectoryRegister()`
@*/
PetscErrorCode NetTSRegisterAll(void)
{
  PetscFunctionBegin;
  if (NetTSRegisterAllCalled) PetscFunctionReturn(0);
  NetTSRegisterAllCalled = PETSC_TRUE;
  PetscCall(NetTSInitializePackage());
  PetscCall(TSTrajectoryRegister(TSTRAJECTORYCHECKPOINT, TSTrajectoryCreate_Checkpoint));
  PetscCall(LayerRegister(LAYERODE, LayerCreate_ODE));
  PetscFunctionReturn(0);
}

/*@C
  NetTSFinalizePackage - forgets the registration (PETSc frees the TSTrajectory registry); called from PetscFinalize().

  Level: developer

.seealso: `NetTSInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode NetTSFinalizePackage(void)
{
  PetscFunctionBegin;
  NetTSRegisterAllCalled  = PETSC_FALSE;
  NetTSPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetTSInitializePackage - registers PetNet's TS extensions (the TSTrajectory type TSTRAJECTORYCHECKPOINT), after the
  Net package. Idempotent; called from NetTSSetRHS() and the other entry points of the TS interface.

  Level: developer

.seealso: `NetTSRegisterAll()`, `NetInitializePackage()`, `PetNetInitializePackage()`
@*/
PetscErrorCode NetTSInitializePackage(void)
{
  PetscFunctionBegin;
  if (NetTSPackageInitialized) PetscFunctionReturn(0);
  NetTSPackageInitialized = PETSC_TRUE;
  PetscCall(NetInitializePackage());
  PetscCall(TSInitializePackage()); /* so that PETSc's finalizer frees the TSTrajectory registry we add to */
  PetscCall(NetTSRegisterAll());
  PetscCall(PetscRegisterFinalize(NetTSFinalizePackage));
  PetscFunctionReturn(0);
}
