/* Layer package: the class id, the registry of kinds (each kind with its log events), and the finalizer. */
#include "layergemm.h"
#include <petnet/private/layerimpl.h>

PetscClassId LAYER_CLASSID;

static PetscBool LayerPackageInitialized = PETSC_FALSE;

/*@C
  LayerFinalizePackage - frees the registry of layer kinds; called from PetscFinalize().

  Not collective

  Notes:
  The registry holds every kind: the built-in ones, the ode kind of the TS package and those added with
  LayerRegister(). It also forgets that the package and the built-in kinds were registered, so that they are
  registered anew after PetscInitialize() is called again. Registered by LayerInitializePackage() with
  PetscRegisterFinalize(); you do not call it yourself.

  Level: developer

.seealso: `LayerInitializePackage()`, `LayerRegisterAll()`, `PetscFinalize()`
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

  Not collective

  Notes:
  In order: the class id "Layer", the built-in kinds (LayerRegisterAll()), the finalizer LayerFinalizePackage() and
  -petnet_gemm_thin_rows (the largest number of columns, a batch's rows, of a double GEMM that PetNet's AVX-512 thin
  kernels compute instead of BLAS: LayerSetGemmThinRows()).
  The Layer package is the first above sys in the dependency chain
  sys <- layers <- net <- (loss, ts, optim, data) <- trainer, so it initializes no other PetNet package;
  NetInitializePackage() initializes it first. The ode kind is registered later, by the TS package
  (NetTSRegisterAll()).

  Level: developer

.seealso: `LayerRegister()`, `LayerRegisterAll()`, `LayerFinalizePackage()`, `NetInitializePackage()`,
          `PetNetInitializePackage()`
@*/
PetscErrorCode LayerInitializePackage(void)
{
  PetscFunctionBegin;
  if (LayerPackageInitialized) PetscFunctionReturn(0);
  LayerPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("Layer", &LAYER_CLASSID));
  PetscCall(LayerRegisterAll());
  PetscCall(PetscRegisterFinalize(LayerFinalizePackage));
  {
    PetscInt  rows = LayerGemmThinRows;
    PetscBool set;

    PetscCall(PetscOptionsGetInt(NULL, NULL, "-petnet_gemm_thin_rows", &rows, &set));
    if (set) PetscCall(LayerSetGemmThinRows(rows));
  }
  PetscFunctionReturn(0);
}
