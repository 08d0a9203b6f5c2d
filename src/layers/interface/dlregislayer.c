/* Layer package: the class id, the registry of kinds (each kind with its log events), and the finalizer. */
#include <petnet/private/layerimpl.h>

PetscClassId LAYER_CLASSID;

static PetscBool LayerPackageInitialized = PETSC_FALSE;

/*@C
  LayerFinalizePackage - frees the registry of layer kinds; called from PetscFinalize().

  Level: developer

.seealso: `LayerInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode LayerFinalizePackage(void)
{
  PetscFunctionBegin;
  PetscCall(PetscFunctionListDestroy(&LayerList));
  LayerRegisterAllCalled  = PETSC_FALSE;
  LayerPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  LayerInitializePackage - registers the Layer class and the built-in layer kinds, each with its log events
  "kind:Forward", "kind:Backward" and "kind:JVP". Idempotent; called from LayerCreate() and LayerRegister().

  Level: developer

.seealso: `LayerRegister()`, `LayerRegisterAll()`, `NetInitializePackage()`, `PetNetInitializePackage()`
@*/
PetscErrorCode LayerInitializePackage(void)
{
  PetscFunctionBegin;
  if (LayerPackageInitialized) PetscFunctionReturn(0);
  LayerPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("Layer", &LAYER_CLASSID));
  PetscCall(LayerRegisterAll());
  PetscCall(PetscRegisterFinalize(LayerFinalizePackage));
  PetscFunctionReturn(0);
}
