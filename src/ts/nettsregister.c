/* Registration of PetNet's TS extensions (called lazily from every entry point of src/ts and the ode layer). */
#include "nettsimpl.h"

static PetscBool NetTSRegisterAllCalled = PETSC_FALSE;

static PetscErrorCode NetTSFinalize_Private(void)
{
  PetscFunctionBegin;
  NetTSRegisterAllCalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetTSRegisterAll - registers PetNet's TSTrajectory type TSTRAJECTORYCHECKPOINT ("checkpoint") and the layer kind LAYERODE

  Not collective

  Notes:
  Idempotent. PETSc frees its TSTrajectory registry at PetscFinalize(), so the registration is redone after a
  re-initialization. Called by PetNetInitializePackage(), NetTSSetRHS() and NetTSSetSaveTrajectory().

  Level: developer

.seealso: `TSTRAJECTORYCHECKPOINT`, `PetNetInitializePackage()`, `NetTSSetSaveTrajectory()`
@*/
PetscErrorCode NetTSRegisterAll(void)
{
  PetscFunctionBegin;
  if (NetTSRegisterAllCalled) PetscFunctionReturn(0);
  NetTSRegisterAllCalled = PETSC_TRUE;
  PetscCall(TSInitializePackage()); /* so that PETSc's finalizer frees the TSTrajectory registry we add to */
  PetscCall(TSTrajectoryRegister(TSTRAJECTORYCHECKPOINT, TSTrajectoryCreate_Checkpoint));
  PetscCall(LayerRegister(LAYERODE, LayerCreate_ODE));
  PetscCall(PetscRegisterFinalize(NetTSFinalize_Private));
  PetscFunctionReturn(0);
}
