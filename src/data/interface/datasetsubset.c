/* Dataset: a contiguous range of a set-up Dataset's samples as a Dataset of its own (a held-out set). */
#include <petnet/private/datasetimpl.h>

/*
  The subset copies the values, not the file: samples first .. first + n - 1 of ds in file order, as ds holds them
  (already normalised), laid out over the ranks as PETSC_DECIDE splits n,
    X [nlocal][F], T [nlocal][tsize],
  fetched with one VecScatter from ds's storage (DatasetGetAll()). The new Dataset is of kind memory with the identity
  normalisation (the values are normalised once, by ds) and ds's number of classes (a small subset may miss a class).
*/

/*@
  DatasetCreateSubset - creates a Dataset holding a contiguous range of another Dataset's samples

  Collective on ds

  Input Parameters:
+ ds    - the Dataset (set up if needed)
. first - the first sample of the range (file order, counted from ds's offset), 0 <= first
- n     - the number of samples, first + n <= the size of ds

  Output Parameter:
. sub - the new Dataset, of kind memory, on ds's communicator, set up

  Notes:
  The subset holds the values ds holds, normalised by ds: its normalisation is the identity and its number of classes
  that of ds. It has no prefix and keeps ds's batch size. A Trainer takes a population trainer's tournament set out of
  its shard this way (TrainerSetPopulation()); to train on the rest, give ds an offset and a limit
  (DatasetSetOffset(), DatasetSetLimit()), which read only those samples again.

  Level: intermediate

.seealso: `DatasetSetOffset()`, `DatasetSetLimit()`, `DatasetMemorySetData()`, `DatasetGetAll()`
@*/
PetscErrorCode DatasetCreateSubset(Dataset ds, PetscInt first, PetscInt n, Dataset *sub)
{
  MPI_Comm   comm;
  Vec        X, T, Xs, Ts;
  IS         isx, ist;
  VecScatter sx, st;
  PetscInt   nlocal = PETSC_DECIDE, rstart;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, first, 2);
  PetscValidLogicalCollectiveInt(ds, n, 3);
  PetscValidPointer(sub, 4);
  comm = PetscObjectComm((PetscObject)ds);
  PetscCall(DatasetSetUp(ds));
  PetscCheck(first >= 0 && n > 0 && (PetscInt64)first + n <= ds->N, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "A subset of samples %" PetscInt_FMT " to %" PetscInt64_FMT " does not fit in the Dataset%s%s, which holds %" PetscInt_FMT " samples: give 0 <= first and 0 < n <= %" PetscInt_FMT " - first", first, (PetscInt64)first + n - 1,
             ((PetscObject)ds)->prefix ? " with prefix " : "", ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", ds->N, ds->N);
  PetscCall(DatasetGetAll(ds, &X, &T));
  PetscCall(PetscSplitOwnership(comm, &nlocal, &n));
  PetscCallMPI(MPI_Scan(&nlocal, &rstart, 1, MPIU_INT, MPI_SUM, comm));
  rstart -= nlocal;
  PetscCall(VecCreateMPI(comm, nlocal * ds->F, n * ds->F, &Xs));
  PetscCall(VecCreateMPI(comm, nlocal * ds->tsize, n * ds->tsize, &Ts));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, nlocal * ds->F, (first + rstart) * ds->F, 1, &isx));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, nlocal * ds->tsize, (first + rstart) * ds->tsize, 1, &ist));
  PetscCall(VecScatterCreate(X, isx, Xs, NULL, &sx));
  PetscCall(VecScatterCreate(T, ist, Ts, NULL, &st));
  PetscCall(VecScatterBegin(sx, X, Xs, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sx, X, Xs, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterBegin(st, T, Ts, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(st, T, Ts, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sx));
  PetscCall(VecScatterDestroy(&st));
  PetscCall(ISDestroy(&isx));
  PetscCall(ISDestroy(&ist));

  PetscCall(DatasetCreate(comm, sub));
  PetscCall(DatasetSetType(*sub, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(*sub, &ds->shape, Xs, ds->tsize, Ts));
  PetscCall(DatasetSetNormalization(*sub, 1.0, 0.0, 1.0));
  PetscCall(DatasetSetNumClasses(*sub, ds->nclasses));
  PetscCall(DatasetSetBatchSize(*sub, ds->batchsize));
  PetscCall(DatasetSetUp(*sub));
  PetscCall(VecDestroy(&Xs));
  PetscCall(VecDestroy(&Ts));
  PetscFunctionReturn(0);
}
