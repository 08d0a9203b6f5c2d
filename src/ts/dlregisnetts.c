/* PetNet's TS extensions: the registration of the checkpoint trajectory and of the ode layer kind, and the finalizer. */
#include "nettsimpl.h"

static PetscBool NetTSPackageInitialized = PETSC_FALSE;
static PetscBool NetTSRegisterAllCalled  = PETSC_FALSE;

/*@C
  NetTSRegisterAll - registers the TSTrajectory type TSTRAJECTORYCHECKPOINT ("checkpoint") and the layer kind
  LAYERODE ("ode"). Idempotent; PETSc's own
  TSTrajectory registry is freed at PetscFinalize(), so the registration is redone after a re-initialization.

  Not collective

  Notes:
  It initializes the package first (NetTSInitializePackage()). The ode kind goes through LayerRegister(), which
  registers its log events "ode:Forward", "ode:Backward" and "ode:JVP"; layer lists (-net_layers, -net_graph) know
  it only after this.

  Level: developer

.seealso: `NetTSInitializePackage()`, `TSTrajectoryRegister()`, `LayerRegister()`
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

  Not collective

  Notes:
  The ode layer kind goes with the Layer registry (LayerFinalizePackage()). Registered by NetTSInitializePackage()
  with PetscRegisterFinalize(); you do not call it yourself.

  Level: developer

.seealso: `NetTSInitializePackage()`, `NetTSRegisterAll()`, `PetscFinalize()`
@*/
PetscErrorCode NetTSFinalizePackage(void)
{
  PetscFunctionBegin;
  NetTSRegisterAllCalled  = PETSC_FALSE;
  NetTSPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetTSInitializePackage - registers PetNet's TS extensions (the TSTrajectory type TSTRAJECTORYCHECKPOINT and the
  layer kind LAYERODE), after the Net package. Idempotent; called from NetTSSetRHS() and the other entry points of
  the TS interface.

  Not collective

  Notes:
  In order: the Net package (NetInitializePackage(), which initializes the Layer package), PETSc's TS package
  (TSInitializePackage(), so that PETSc's finalizer frees the TSTrajectory registry this adds to), the extensions
  (NetTSRegisterAll()) and the finalizer NetTSFinalizePackage(). In the dependency chain
  sys <- layers <- net <- (loss, ts, optim, data) <- trainer the ts package sits above net. Call it (or
  PetNetInitializePackage()) before a layer list that uses the ode kind.

  Level: developer

.seealso: `NetTSRegisterAll()`, `NetTSFinalizePackage()`, `NetInitializePackage()`, `PetNetInitializePackage()`,
          `NetTSSetRHS()`
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
