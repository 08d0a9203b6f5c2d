/* Net package: the class id and the finalizer. A Net is made of layers, so the Layer package comes first. */
#include <petnet/private/netimpl.h>

PetscClassId NET_CLASSID;

static PetscBool NetPackageInitialized = PETSC_FALSE;

/*@C
  NetFinalizePackage - forgets that the Net package was initialized; called from PetscFinalize().

  Not collective

  Notes:
  The Net package has no registry to free. Registered by NetInitializePackage() with PetscRegisterFinalize(); you do
  not call it yourself.

  Level: developer

.seealso: `NetInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode NetFinalizePackage(void)
{
  PetscFunctionBegin;
  NetPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetInitializePackage - registers the Net class, after the Layer package (LayerInitializePackage()). Idempotent;
  called from NetCreate().

  Not collective

  Notes:
  In order: the Layer package (a Net is made of layers), the class id "Net" and the finalizer NetFinalizePackage().
  In the dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer the loss, ts, optim and data
  packages sit above it; NetTSInitializePackage() and TrainerInitializePackage() initialize it first.

  Level: developer

.seealso: `LayerInitializePackage()`, `NetFinalizePackage()`, `NetCreate()`, `PetNetInitializePackage()`
@*/
PetscErrorCode NetInitializePackage(void)
{
  PetscFunctionBegin;
  if (NetPackageInitialized) PetscFunctionReturn(0);
  NetPackageInitialized = PETSC_TRUE;
  PetscCall(LayerInitializePackage());
  PetscCall(PetscClassIdRegister("Net", &NET_CLASSID));
  PetscCall(PetscRegisterFinalize(NetFinalizePackage));
  PetscFunctionReturn(0);
}
