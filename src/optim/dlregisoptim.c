/* PetNet's optimizers as TAO types: their registration (one line each), their log event, and the finalizer. */
#include "optimimpl.h"
#include "kfacimpl.h"

PETSC_INTERN PetscErrorCode TaoCreate_SGD(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_Adam(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_AdamW(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_RMSprop(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_KFAC(Tao);

static PetscBool PetNetTaoPackageInitialized = PETSC_FALSE;
static PetscBool PetNetTaoRegisterAllCalled  = PETSC_FALSE;

/*@C
  PetNetTaoRegisterAll - registers the TAO types sgd, adam, adamw, rmsprop and kfac. Idempotent; called from
  PetNetTaoInitializePackage().

  Not collective

  Notes:
  It initializes the package first (PetNetTaoInitializePackage(), and with it TAO's registry) and then adds
  `TAOSGD`, `TAOADAM`, `TAOADAMW`, `TAORMSPROP` and `TAOKFAC` with TaoRegister(), after which TaoSetType() and -tao_type know
  them.

  Level: developer

.seealso: `PetNetTaoInitializePackage()`, `TaoRegister()`, `TaoSetType()`
@*/
PetscErrorCode PetNetTaoRegisterAll(void)
{
  PetscFunctionBegin;
  if (PetNetTaoRegisterAllCalled) PetscFunctionReturn(0);
  PetNetTaoRegisterAllCalled = PETSC_TRUE;
  PetscCall(PetNetTaoInitializePackage());
  PetscCall(TaoRegister(TAOSGD, TaoCreate_SGD));
  PetscCall(TaoRegister(TAOADAM, TaoCreate_Adam));
  PetscCall(TaoRegister(TAOADAMW, TaoCreate_AdamW));
  PetscCall(TaoRegister(TAORMSPROP, TaoCreate_RMSprop));
  PetscCall(TaoRegister(TAOKFAC, TaoCreate_KFAC));
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoFinalizePackage - forgets the registration (TAO frees its own registry); called from PetscFinalize().

  Not collective

  Notes:
  So PetNet's TAO types are registered anew after PetscInitialize() is called again. Registered by
  PetNetTaoInitializePackage() with PetscRegisterFinalize(); you do not call it yourself.

  Level: developer

.seealso: `PetNetTaoInitializePackage()`, `PetNetTaoRegisterAll()`, `PetscFinalize()`
@*/
PetscErrorCode PetNetTaoFinalizePackage(void)
{
  PetscFunctionBegin;
  PetNetTaoRegisterAllCalled  = PETSC_FALSE;
  PetNetTaoPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoInitializePackage - registers PetNet's TAO types (sgd, adam, adamw, rmsprop, kfac) and the log events of
  their updates, PetNetOptUpdate, and of K-FAC's factors (PetNetKFACStats, PetNetKFACInvert, PetNetKFACApply). Idempotent; called from TrainerCreate(). Call it (or PetNetInitializePackage()) before
  TaoSetType() or TaoSetFromOptions() on a Tao that no Trainer owns.

  Not collective

  Notes:
  In order: PETSc's TAO package (TaoInitializePackage(), whose registry PETSc's finalizer frees), the log event
  PetNetOptUpdate of the Tao class, the types (PetNetTaoRegisterAll()) and the finalizer PetNetTaoFinalizePackage().
  The optimizers need no other PetNet package, so none is initialized first. In the dependency chain
  sys <- layers <- net <- (loss, ts, optim, data) <- trainer the optim package sits above net, and
  TrainerInitializePackage() (from TrainerCreate()) initializes it.

  Level: intermediate

.seealso: `PetNetTaoRegisterAll()`, `PetNetTaoFinalizePackage()`, `PetNetInitializePackage()`,
          `TrainerInitializePackage()`, `TaoSetType()`
@*/
PetscErrorCode PetNetTaoInitializePackage(void)
{
  PetscFunctionBegin;
  if (PetNetTaoPackageInitialized) PetscFunctionReturn(0);
  PetNetTaoPackageInitialized = PETSC_TRUE;
  PetscCall(TaoInitializePackage()); /* TAO's registry, which PETSc's finalizer frees, must exist before we add to it */
  PetscCall(PetscLogEventRegister("PetNetOptUpdate", TAO_CLASSID, &TAOOPTIM_Update));
  PetscCall(PetscLogEventRegister("PetNetKFACStats", TAO_CLASSID, &PETNET_KFACStatistics));
  PetscCall(PetscLogEventRegister("PetNetKFACInvert", TAO_CLASSID, &PETNET_KFACInvert));
  PetscCall(PetscLogEventRegister("PetNetKFACApply", TAO_CLASSID, &PETNET_KFACApply));
  PetscCall(PetNetTaoRegisterAll());
  PetscCall(PetscRegisterFinalize(PetNetTaoFinalizePackage));
  PetscFunctionReturn(0);
}
