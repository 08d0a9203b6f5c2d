/* Dataset package: class id, log events, the registry of kinds, and the finalizer. */
#include <petnet/private/datasetimpl.h>

PetscClassId      DATASET_CLASSID;
PetscLogEvent     DATASET_Read, DATASET_Epoch, DATASET_Batch;
PetscFunctionList DatasetList              = NULL;
PetscBool         DatasetRegisterAllCalled = PETSC_FALSE;

static PetscBool DatasetPackageInitialized = PETSC_FALSE;

PETSC_INTERN PetscErrorCode DatasetCreate_IDX(Dataset);
PETSC_INTERN PetscErrorCode DatasetCreate_Binary(Dataset);
PETSC_INTERN PetscErrorCode DatasetCreate_HDF5(Dataset);
PETSC_INTERN PetscErrorCode DatasetCreate_Memory(Dataset);

/*@C
  DatasetRegisterAll - registers the built-in Dataset kinds idx, binary, hdf5 and memory

  Not collective

  Notes:
  Idempotent; called by DatasetInitializePackage().

  Level: developer

.seealso: `DatasetRegister()`, `DatasetInitializePackage()`
@*/
PetscErrorCode DatasetRegisterAll(void)
{
  PetscFunctionBegin;
  if (DatasetRegisterAllCalled) PetscFunctionReturn(0);
  DatasetRegisterAllCalled = PETSC_TRUE;
  PetscCall(DatasetRegister(DATASETIDX, DatasetCreate_IDX));
  PetscCall(DatasetRegister(DATASETBINARY, DatasetCreate_Binary));
  PetscCall(DatasetRegister(DATASETHDF5, DatasetCreate_HDF5));
  PetscCall(DatasetRegister(DATASETMEMORY, DatasetCreate_Memory));
  PetscFunctionReturn(0);
}

/*@C
  DatasetRegister - adds a Dataset kind

  Not collective

  Input Parameters:
+ name   - the kind's name, for DatasetSetType() and -dataset_type
- create - the function that makes a Dataset of that kind: fills its ops (load, ...) and data

  Notes:
  The private header include/petnet/private/datasetimpl.h gives the contract of the ops; src/data/impls/memory is a
  short example.

  Level: advanced

.seealso: `DatasetSetType()`, `DatasetRegisterAll()`
@*/
PetscErrorCode DatasetRegister(const char name[], PetscErrorCode (*create)(Dataset))
{
  PetscFunctionBegin;
  PetscCall(DatasetInitializePackage());
  PetscCall(PetscFunctionListAdd(&DatasetList, name, create));
  PetscFunctionReturn(0);
}

/*@C
  DatasetFinalizePackage - frees the registry of Dataset kinds

  Not collective

  Notes:
  Called from PetscFinalize(), registered by DatasetInitializePackage().

  Level: developer

.seealso: `DatasetInitializePackage()`
@*/
PetscErrorCode DatasetFinalizePackage(void)
{
  PetscFunctionBegin;
  PetscCall(PetscFunctionListDestroy(&DatasetList));
  DatasetRegisterAllCalled  = PETSC_FALSE;
  DatasetPackageInitialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  DatasetInitializePackage - registers the Dataset class, its log events and its kinds

  Not collective

  Notes:
  Log events DatasetRead, DatasetEpoch and DatasetBatch. Idempotent; called by DatasetCreate() and DatasetRegister().

  Level: developer

.seealso: `DatasetFinalizePackage()`, `DatasetRegisterAll()`, `DatasetCreate()`
@*/
PetscErrorCode DatasetInitializePackage(void)
{
  PetscFunctionBegin;
  if (DatasetPackageInitialized) PetscFunctionReturn(0);
  DatasetPackageInitialized = PETSC_TRUE;
  PetscCall(PetscClassIdRegister("Dataset", &DATASET_CLASSID));
  PetscCall(PetscLogEventRegister("DatasetRead", DATASET_CLASSID, &DATASET_Read));
  PetscCall(PetscLogEventRegister("DatasetEpoch", DATASET_CLASSID, &DATASET_Epoch));
  PetscCall(PetscLogEventRegister("DatasetBatch", DATASET_CLASSID, &DATASET_Batch));
  PetscCall(DatasetRegisterAll());
  PetscCall(PetscRegisterFinalize(DatasetFinalizePackage));
  PetscFunctionReturn(0);
}
