/* Lazy package initialization: class ids, registries, finalizer. Called from every XxxCreate. */
#include <petnet/private/netimpl.h>
#include <petnet/private/lossimpl.h>
#include <petnetoptim.h>
#include <petnetts.h>

PetscClassId LAYER_CLASSID, NET_CLASSID, LOSS_CLASSID;

static PetscBool PetNetPackageInitialized = PETSC_FALSE;

/*@C
  PetNetFinalizePackage - frees the registries; called from PetscFinalize().
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
  PetNetInitializePackage - registers the PetNet classes, layer kinds and losses. Idempotent.
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
