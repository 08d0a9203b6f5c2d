/* PetNet's optimizers as TAO types: their registration (one line each), their log event, and the finalizer. */
#include "optimimpl.h"

PETSC_INTERN PetscErrorCode TaoCreate_SGD(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_Adam(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_AdamW(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_RMSprop(Tao);

static PetscBool PetNetTaoPackageInitialized = PETSC_FALSE;
static PetscBool PetNetTaoRegisterAllCalled  = PETSC_FALSE;

/*@C
  PetNetTaoRegisterAll - registers the TAO types sgd, adam, adamw and rmsprop. Idempotent; called from
  PetNetTaoInitializePackage().

  Level: developer

.seealso: `PetNetTaoInitializePackage()`, `TaoRegister()`
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
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoFinalizePackage - forgets the registration (TAO frees its own registry); called from PetscFinalize().

  Level: developer

.seealso: `PetNetTaoInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode PetNetTaoFinalizePackage(void)
{
  PetscFunctionBegin;
  PetNetTaoRegisterAllCalled  = PETSC_FALSE;
  PetNetTaoPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoInitializePackage - registers PetNet's TAO types (sgd, adam, adamw, rmsprop) and the log event of their
  updates, PetNetOptUpdate. Idempotent; called from TrainerCreate(). Call it (or PetNetInitializePackage()) before
  TaoSetType() or TaoSetFromOptions() on a Tao that no Trainer owns.

  Level: intermediate

.seealso: `PetNetTaoRegisterAll()`, `PetNetInitializePackage()`, `TaoSetType()`
@*/
PetscErrorCode PetNetTaoInitializePackage(void)
{
  PetscFunctionBegin;
  if (PetNetTaoPackageInitialized) PetscFunctionReturn(0);
  PetNetTaoPackageInitialized = PETSC_TRUE;
  PetscCall(TaoInitializePackage()); /* TAO's registry, which PETSc's finalizer frees, must exist before we add to it */
  PetscCall(PetscLogEventRegister("PetNetOptUpdate", TAO_CLASSID, &TAOOPTIM_Update));
  PetscCall(PetNetTaoRegisterAll());
  PetscCall(PetscRegisterFinalize(PetNetTaoFinalizePackage));
  PetscFunctionReturn(0);
}
