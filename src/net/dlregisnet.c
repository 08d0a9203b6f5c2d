/* Net package: the class id and the finalizer. A Net is made of layers, so the Layer package comes first. */
#include <petnet/private/netimpl.h>

PetscClassId NET_CLASSID;

static PetscBool NetPackageInitialized = PETSC_FALSE;

/*@C
  NetFinalizePackage - forgets that the Net package was initialized; called from PetscFinalize().

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

  Level: developer

.seealso: `LayerInitializePackage()`, `PetNetInitializePackage()`
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
