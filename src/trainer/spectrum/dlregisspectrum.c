/* Spectrum package: the class id, the log events, and the finalizer. */
#include <petnet/private/spectrumimpl.h>
#include <petnetts.h>

PetscClassId  SPECTRUM_CLASSID;
PetscLogEvent SPECTRUM_Eigenvalues, SPECTRUM_Trace, SPECTRUM_Density, SPECTRUM_Jacobian, SPECTRUM_Weights, SPECTRUM_ODE;

static PetscBool SpectrumPackageInitialized = PETSC_FALSE;

/*@C
  SpectrumFinalizePackage - forgets that the Spectrum package was initialized; called from PetscFinalize().

  Not collective

  Notes:
  SpectrumInitializePackage() registers it with PetscRegisterFinalize(), so that a later SpectrumInitializePackage()
  (after PetscFinalize() and PetscInitialize() again) registers the class and its events anew.

  Level: developer

.seealso: `SpectrumInitializePackage()`, `PetscFinalize()`
@*/
PetscErrorCode SpectrumFinalizePackage(void)
{
  PetscFunctionBegin;
  SpectrumPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  SpectrumInitializePackage - registers the Spectrum class and its log events (SpectrumEigs, SpectrumTrace,
  SpectrumDensity, SpectrumJacobian, SpectrumWeights, SpectrumODE), after the packages a Spectrum uses: Net, Loss,
  Dataset and the TS extensions (the ode layer). Idempotent; called from SpectrumCreate() and
  TrainerInitializePackage().

  Not collective

  Notes:
  Registers SpectrumFinalizePackage() to be called by PetscFinalize(). SLEPc's own classes (EPS, SVD) initialize
  themselves when their first object is created.

  Level: developer

.seealso: `NetInitializePackage()`, `LossInitializePackage()`, `DatasetInitializePackage()`, `NetTSInitializePackage()`,
          `SpectrumFinalizePackage()`, `SpectrumCreate()`
@*/
PetscErrorCode SpectrumInitializePackage(void)
{
  PetscFunctionBegin;
  if (SpectrumPackageInitialized) PetscFunctionReturn(0);
  SpectrumPackageInitialized = PETSC_TRUE;
  PetscCall(NetInitializePackage());
  PetscCall(LossInitializePackage());
  PetscCall(DatasetInitializePackage());
  PetscCall(NetTSInitializePackage());
  PetscCall(PetscClassIdRegister("Spectrum", &SPECTRUM_CLASSID));
  PetscCall(PetscLogEventRegister("SpectrumEigs", SPECTRUM_CLASSID, &SPECTRUM_Eigenvalues));
  PetscCall(PetscLogEventRegister("SpectrumTrace", SPECTRUM_CLASSID, &SPECTRUM_Trace));
  PetscCall(PetscLogEventRegister("SpectrumDensity", SPECTRUM_CLASSID, &SPECTRUM_Density));
  PetscCall(PetscLogEventRegister("SpectrumJacobian", SPECTRUM_CLASSID, &SPECTRUM_Jacobian));
  PetscCall(PetscLogEventRegister("SpectrumWeights", SPECTRUM_CLASSID, &SPECTRUM_Weights));
  PetscCall(PetscLogEventRegister("SpectrumODE", SPECTRUM_CLASSID, &SPECTRUM_ODE));
  PetscCall(PetscRegisterFinalize(SpectrumFinalizePackage));
  PetscFunctionReturn(0);
}
