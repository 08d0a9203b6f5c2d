/* Registers PetNet's optimizers as TAO types: one line each. Called from PetNetInitializePackage(). */
#include "optimimpl.h"

PETSC_INTERN PetscErrorCode TaoCreate_SGD(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_Adam(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_AdamW(Tao);
PETSC_INTERN PetscErrorCode TaoCreate_RMSprop(Tao);

static PetscBool PetNetTaoRegisterAllCalled = PETSC_FALSE;

static PetscErrorCode PetNetTaoFinalize_Private(void)
{
  PetscFunctionBegin;
  PetNetTaoRegisterAllCalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoRegisterAll - registers PetNet's TAO types sgd, adam, adamw and rmsprop, and the log event of their updates

  Not collective

  Notes:
  Also registers the event PetNetOptUpdate shown by -log_view. Idempotent; called by PetNetInitializePackage(), so
  creating any PetNet object first makes -tao_type adam work.

  Level: developer

.seealso: `PetNetInitializePackage()`, `TAOSGD`, `TAOADAM`, `TAOADAMW`, `TAORMSPROP`
@*/
PetscErrorCode PetNetTaoRegisterAll(void)
{
  PetscFunctionBegin;
  if (PetNetTaoRegisterAllCalled) PetscFunctionReturn(0);
  PetNetTaoRegisterAllCalled = PETSC_TRUE;
  PetscCall(TaoRegister(TAOSGD, TaoCreate_SGD));
  PetscCall(TaoRegister(TAOADAM, TaoCreate_Adam));
  PetscCall(TaoRegister(TAOADAMW, TaoCreate_AdamW));
  PetscCall(TaoRegister(TAORMSPROP, TaoCreate_RMSprop));
  PetscCall(PetscLogEventRegister("PetNetOptUpdate", TAO_CLASSID, &TAOOPTIM_Update));
  PetscCall(PetscRegisterFinalize(PetNetTaoFinalize_Private));
  PetscFunctionReturn(0);
}
