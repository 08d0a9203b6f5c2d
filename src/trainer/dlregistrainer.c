/* Trainer package: the class id, the log events, and the finalizer. The Trainer ties together every package below it. */
#include <petnet/private/trainerimpl.h>
#include <petnetspectrum.h>

PetscClassId  TRAINER_CLASSID;
PetscLogEvent TRAINER_Epoch, TRAINER_Evaluate;

static PetscBool TrainerPackageInitialized = PETSC_FALSE;

/*@C
  TrainerFinalizePackage - forgets that the Trainer package was initialized; called from PetscFinalize().

  Not collective

  Notes:
  TrainerInitializePackage() registers it with PetscRegisterFinalize(), so that a later TrainerInitializePackage()
  (after PetscFinalize() and PetscInitialize() again) registers the class and its events anew.

  Level: developer

.seealso: `TrainerInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode TrainerFinalizePackage(void)
{
  PetscFunctionBegin;
  TrainerPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  TrainerInitializePackage - registers the Trainer class and its log events (TrainerEpoch, TrainerEvaluate), after the
  packages a Trainer uses: Net, Loss, Dataset and PetNet's TAO types. Idempotent; called from TrainerCreate().

  Not collective

  Notes:
  Registers TrainerFinalizePackage() to be called by PetscFinalize().

  Level: developer

.seealso: `NetInitializePackage()`, `LossInitializePackage()`, `DatasetInitializePackage()`,
          `PetNetTaoInitializePackage()`, `PetNetInitializePackage()`, `TrainerFinalizePackage()`
@*/
PetscErrorCode TrainerInitializePackage(void)
{
  PetscFunctionBegin;
  if (TrainerPackageInitialized) PetscFunctionReturn(0);
  TrainerPackageInitialized = PETSC_TRUE;
  PetscCall(NetInitializePackage());
  PetscCall(LossInitializePackage());
  PetscCall(DatasetInitializePackage());
  PetscCall(PetNetTaoInitializePackage());
  PetscCall(SpectrumInitializePackage());
  PetscCall(PetscClassIdRegister("Trainer", &TRAINER_CLASSID));
  PetscCall(PetscLogEventRegister("TrainerEpoch", TRAINER_CLASSID, &TRAINER_Epoch));
  PetscCall(PetscLogEventRegister("TrainerEvaluate", TRAINER_CLASSID, &TRAINER_Evaluate));
  PetscCall(PetscRegisterFinalize(TrainerFinalizePackage));
  PetscFunctionReturn(0);
}
