/* The sys package: the class id of PetNetLayout, the one class at this level, and the finalizer. */
#include <petnet/private/layoutimpl.h>

PetscClassId  PETNETLAYOUT_CLASSID;
PetscLogEvent PETNETLAYOUT_Move;

static PetscBool PetNetSysPackageInitialized = PETSC_FALSE;

/*@C
  PetNetSysFinalizePackage - forgets that the sys package was initialized; called from PetscFinalize().

  Not collective

  Notes:
  Registered by PetNetSysInitializePackage() with PetscRegisterFinalize(); you do not call it yourself. After
  PetscInitialize() is called again the class id is registered anew.

  Level: developer

.seealso: `PetNetSysInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode PetNetSysFinalizePackage(void)
{
  PetscFunctionBegin;
  PetNetSysPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetSysInitializePackage - registers the classes of the sys level (PetNetLayout) and the log event
  "PetNetLayoutMove" (every application of a data-movement operator). Idempotent; called from PetNetLayoutCreate().

  Not collective

  Notes:
  sys is the bottom of the dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer: it initializes
  no other PetNet package.

  Level: developer

.seealso: `PetNetSysFinalizePackage()`, `PetNetLayoutCreate()`, `PetNetInitializePackage()`
@*/
PetscErrorCode PetNetSysInitializePackage(void)
{
  PetscFunctionBegin;
  if (PetNetSysPackageInitialized) PetscFunctionReturn(0);
  PetNetSysPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("PetNetLayout", &PETNETLAYOUT_CLASSID));
  PetscCall(PetscLogEventRegister("PetNetLayoutMove", PETNETLAYOUT_CLASSID, &PETNETLAYOUT_Move));
  PetscCall(PetscRegisterFinalize(PetNetSysFinalizePackage));
  PetscFunctionReturn(0);
}
