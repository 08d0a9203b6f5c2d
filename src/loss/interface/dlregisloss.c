/* Loss package: the class id, the registry of losses (each with its log event "Loss:name"), and the finalizer. */
#include <petnet/private/lossimpl.h>

PetscClassId      LOSS_CLASSID;
PetscFunctionList LossList              = NULL;
PetscBool         LossRegisterAllCalled = PETSC_FALSE;

static PetscBool LossPackageInitialized = PETSC_FALSE;

PETSC_INTERN PetscErrorCode LossCreate_CrossEntropy(Loss);
PETSC_INTERN PetscErrorCode LossCreate_MSE(Loss);
PETSC_INTERN PetscErrorCode LossCreate_L1(Loss);

/*@C
  LossRegisterAll - registers the built-in losses crossentropy, mse and l1. Idempotent; called from
  LossInitializePackage().

  Not collective

  Notes:
  Each goes through LossRegister(), which also registers its log event ("Loss:crossentropy", "Loss:mse",
  "Loss:l1"). Register your own losses with LossRegister().

  Level: developer

.seealso: `LossRegister()`, `LossInitializePackage()`, `LossSetType()`
@*/
PetscErrorCode LossRegisterAll(void)
{
  PetscFunctionBegin;
  if (LossRegisterAllCalled) PetscFunctionReturn(0);
  LossRegisterAllCalled = PETSC_TRUE;
  PetscCall(LossRegister(LOSSCROSSENTROPY, LossCreate_CrossEntropy));
  PetscCall(LossRegister(LOSSMSE, LossCreate_MSE));
  PetscCall(LossRegister(LOSSL1, LossCreate_L1));
  PetscFunctionReturn(0);
}

/*@C
  LossFinalizePackage - frees the registry of losses; called from PetscFinalize().

  Not collective

  Notes:
  It also forgets that the package and the built-in losses were registered, so that they are registered anew after
  PetscInitialize() is called again. Registered by LossInitializePackage() with PetscRegisterFinalize(); you do not
  call it yourself.

  Level: developer

.seealso: `LossInitializePackage()`, `LossRegisterAll()`, `PetscFinalize()`
@*/
PetscErrorCode LossFinalizePackage(void)
{
  PetscFunctionBegin;
  PetscCall(PetscFunctionListDestroy(&LossList));
  LossRegisterAllCalled  = PETSC_FALSE;
  LossPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  LossInitializePackage - registers the Loss class and the built-in losses, each with its log event "Loss:name".
  Idempotent; called from LossCreate() and LossRegister().

  Not collective

  Notes:
  In order: the class id "Loss", the built-in losses (LossRegisterAll(): crossentropy, mse, l1) and the finalizer
  LossFinalizePackage(). A Loss works on Vecs only, so no other PetNet package is initialized first. In the
  dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer the Loss package sits above net, and
  TrainerInitializePackage() (so PetNetInitializePackage()) initializes it.

  Level: developer

.seealso: `LossRegister()`, `LossRegisterAll()`, `LossFinalizePackage()`, `TrainerInitializePackage()`,
          `PetNetInitializePackage()`
@*/
PetscErrorCode LossInitializePackage(void)
{
  PetscFunctionBegin;
  if (LossPackageInitialized) PetscFunctionReturn(0);
  LossPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("Loss", &LOSS_CLASSID));
  PetscCall(LossRegisterAll());
  PetscCall(PetscRegisterFinalize(LossFinalizePackage));
  PetscFunctionReturn(0);
}
