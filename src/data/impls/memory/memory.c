/*
  memory: samples the user already holds in Vecs (DatasetMemorySetData): inputs [N][sample] and targets [N][tsize],
  sample-major in global order, in any parallel layout. The Vecs are referenced, not copied, when they already have
  the Dataset's layout (PETSC_DECIDE split of the samples), no limit cuts them and the normalization is the
  identity; otherwise the Dataset works on a copy and the user's Vecs are never modified.
*/
#include <petnet/private/datasetimpl.h>

typedef struct {
  PetNetShape shape;
  PetscInt    tsize;
  Vec         X, T;
  PetscBool   copied; /* the last load copied (some of) the Vecs */
} Dataset_Memory;

static PetscErrorCode DatasetMemorySetData_Memory(Dataset ds, const PetNetShape *shape, Vec X, PetscInt tsize, Vec T)
{
  Dataset_Memory *mem = (Dataset_Memory *)ds->data;

  PetscFunctionBegin;
  PetscCall(PetscObjectReference((PetscObject)X));
  PetscCall(PetscObjectReference((PetscObject)T));
  PetscCall(VecDestroy(&mem->X));
  PetscCall(VecDestroy(&mem->T));
  mem->X     = X;
  mem->T     = T;
  mem->shape = *shape;
  mem->tsize = tsize;
  PetscCall(DatasetReset(ds));
  PetscFunctionReturn(0);
}

/* *dst = src itself when its local part is exactly this rank's samples (on every rank), else a copy in that layout */
static PetscErrorCode DatasetMemoryUse(Dataset ds, Vec src, PetscInt bs, PetscBool mustcopy, Vec *dst, PetscBool *copied)
{
  PetscInt n, fits;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(src, &n));
  fits = !mustcopy && ds->offset == 0 && ds->N == ds->nsource && n == ds->map->n * bs;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &fits, 1, MPIU_INT, MPI_MIN, PetscObjectComm((PetscObject)ds)));
  if (fits) {
    PetscCall(PetscObjectReference((PetscObject)src));
    *dst = src;
  } else {
    PetscCall(DatasetCopySamples_Private(ds, src, bs, dst));
    *copied = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetLoad_Memory(Dataset ds)
{
  Dataset_Memory *mem  = (Dataset_Memory *)ds->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)ds);
  PetscInt        F, nx, nt, N;
  PetscBool       identity;
  char            s[64];

  PetscFunctionBegin;
  PetscCheck(mem->X && mem->T, comm, PETSC_ERR_ORDER, "The memory dataset has no data: call DatasetMemorySetData() before DatasetSetUp()");
  PetscCall(PetNetShapeSize(&mem->shape, &F));
  PetscCall(PetNetShapeToString(&mem->shape, sizeof(s), s));
  PetscCall(VecGetSize(mem->X, &nx));
  PetscCall(VecGetSize(mem->T, &nt));
  PetscCheck(F > 0 && nx % F == 0, comm, PETSC_ERR_ARG_SIZ, "The inputs Vec has %" PetscInt_FMT " entries, not a whole number of samples of shape %s", nx, s);
  N = nx / F;
  PetscCheck(mem->tsize > 0 && nt == N * mem->tsize, comm, PETSC_ERR_ARG_SIZ, "The targets Vec has %" PetscInt_FMT " entries, but %" PetscInt_FMT " samples with %" PetscInt_FMT " target entries each need %" PetscInt_FMT, nt, N, mem->tsize,
             N * mem->tsize);
  PetscCall(PetscFree(ds->tsource));
  PetscCall(PetscStrallocpy("the targets Vec of DatasetMemorySetData()", &ds->tsource));
  PetscCall(DatasetSetSizes_Private(ds, N, &mem->shape, mem->tsize));
  PetscCall(DatasetNormalizationIsIdentity_Private(ds, &identity));
  mem->copied = PETSC_FALSE;
  PetscCall(DatasetMemoryUse(ds, mem->X, ds->F, (PetscBool)!identity, &ds->inputs, &mem->copied));
  PetscCall(DatasetMemoryUse(ds, mem->T, ds->tsize, PETSC_FALSE, &ds->targets, &mem->copied));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetView_Memory(Dataset ds, PetscViewer viewer)
{
  Dataset_Memory *mem = (Dataset_Memory *)ds->data;

  PetscFunctionBegin;
  if (ds->setupcalled)
    PetscCall(PetscViewerASCIIPrintf(viewer, "user Vecs (%s)\n", mem->copied ? "copied into the dataset's layout" : "referenced"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "user Vecs: %s\n", mem->X ? "set" : "not set"));
  PetscFunctionReturn(0);
}

static PetscErrorCode DatasetDestroy_Memory(Dataset ds)
{
  Dataset_Memory *mem = (Dataset_Memory *)ds->data;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&mem->X));
  PetscCall(VecDestroy(&mem->T));
  PetscCall(PetscFree(ds->data));
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetMemorySetData_C", NULL));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode DatasetCreate_Memory(Dataset ds)
{
  Dataset_Memory *mem;

  PetscFunctionBegin;
  PetscCall(PetscNew(&mem));
  ds->data         = mem;
  ds->ops->load    = DatasetLoad_Memory;
  ds->ops->view    = DatasetView_Memory;
  ds->ops->destroy = DatasetDestroy_Memory;
  PetscCall(PetscObjectComposeFunction((PetscObject)ds, "DatasetMemorySetData_C", DatasetMemorySetData_Memory));
  PetscFunctionReturn(0);
}

/*@
  DatasetMemorySetData - gives a memory Dataset its samples as user Vecs

  Collective on ds

  Input Parameters:
+ ds    - the Dataset; it becomes a memory Dataset if it has no kind yet (other kinds ignore the call)
. shape - the per-sample input shape, channels last
. X     - the inputs, N samples sample-major in global order ([N][sample], N * size entries), any parallel layout
. tsize - the number of entries of one target (1 for class labels)
- T     - the targets, [N][tsize] in the same order

  Notes:
  Both Vecs are referenced and never modified: they are used as they are when their layout is the Dataset's
  (PETSC_DECIDE split of the samples), no limit cuts them and the normalization is the identity; otherwise the
  Dataset works on a copy. Undoes DatasetSetUp().

  Level: beginner

.seealso: `DATASETMEMORY`, `DatasetSetUp()`, `DatasetGetAll()`
@*/
PetscErrorCode DatasetMemorySetData(Dataset ds, const PetNetShape *shape, Vec X, PetscInt tsize, Vec T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidPointer(shape, 2);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 3);
  PetscValidLogicalCollectiveInt(ds, tsize, 4);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 5);
  if (!((PetscObject)ds)->type_name) PetscCall(DatasetSetType(ds, DATASETMEMORY));
  PetscTryMethod(ds, "DatasetMemorySetData_C", (Dataset, const PetNetShape *, Vec, PetscInt, Vec), (ds, shape, X, tsize, T));
  PetscFunctionReturn(0);
}
