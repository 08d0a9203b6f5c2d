/* Lazy package initialization: class ids, registries, finalizer. Called from every XxxCreate. */
#include <petnet/private/netimpl.h>
#include <petnet/private/lossimpl.h>
#include <petnetoptim.h>
#include <petnetts.h>

PetscClassId LAYER_CLASSID, NET_CLASSID, LOSS_CLASSID;

static PetscBool PetNetPackageInitialized = PETSC_FALSE;

/*@C
  PetNetFinalizePackage - frees the registries of layer kinds and losses, so that a later PetNetInitializePackage()
  starts afresh; PetscFinalize() calls it (PetNetInitializePackage() registers it with PetscRegisterFinalize())

  Not collective

  Level: developer

.seealso: `PetNetInitializePackage()`, `LayerRegister()`
@*/
PetscErrorCode PetNetFinalizePackage(void)
{
  PetscFunctionBegin;
  PetscCall(PetscFunctionListDestroy(&LayerList));
  PetscCall(PetscFunctionListDestroy(&LossList));
  LayerRegisterAllCalled   = PETSC_FALSE;
  LossRegisterAllCalled    = PETSC_FALSE;
  PetNetPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetInitializePackage - registers the PetNet classes (Layer, Net, Loss), the built-in layer kinds, the losses,
  PetNet's TAO optimizers and the TS package (the ode layer kind, the checkpoint trajectory). Idempotent.

  Not collective

  Notes:
  NetCreate(), LayerCreate(), LayerRegister() and the other constructors call it, so a program rarely needs to.

  Level: developer

.seealso: `PetNetFinalizePackage()`, `LayerRegisterAll()`, `PetNetTaoRegisterAll()`, `NetTSRegisterAll()`
@*/
PetscErrorCode PetNetInitializePackage(void)
{
  PetscFunctionBegin;
  if (PetNetPackageInitialized) PetscFunctionReturn(0);
  PetNetPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("Layer", &LAYER_CLASSID));
  PetscCall(PetscClassIdRegister("Net", &NET_CLASSID));
  PetscCall(PetscClassIdRegister("Loss", &LOSS_CLASSID));
  PetscCall(LayerRegisterAll());
  PetscCall(LossRegisterAll());
  PetscCall(PetNetTaoRegisterAll());
  PetscCall(NetTSRegisterAll());
  PetscCall(PetscRegisterFinalize(PetNetFinalizePackage));
  PetscFunctionReturn(0);
}
