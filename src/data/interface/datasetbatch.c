/*
  Dataset: epochs and mini-batches.

  An epoch is an order of the N samples (a permutation, identical on every rank). Batch b is order[b*B .. b*B+nb),
  nb = min(B, N - b*B); rank r holds the contiguous part of it that PETSC_DECIDE gives r out of nb.

  Assembly. At the first batch of an epoch, one PetscSF (what a VecScatter is) over samples fetches every sample that
  this rank will use during the epoch but another rank stores, in the order of use, into a receive buffer: one round
  of communication per epoch, whose graph serves inputs and targets through MPI unit types of F and tsize scalars.
  Each DatasetGetBatch() then copies its samples from the local storage or from that buffer into Vecs that are reused
  while the batch size repeats: no communication and no allocation per batch, and the batch lands in a small buffer
  that is still in cache when the network reads it. On one rank nothing is received.
*/
#include <petnet/private/datasetimpl.h>
#include <petnet/private/threadsimpl.h>
#include <petscsf.h>

/* Batch b holds nb samples, of which this rank gets n, starting at position start of the epoch order (PETSC_DECIDE split) */
static PetscErrorCode DatasetBatchRange_Private(Dataset ds, PetscInt b, PetscInt *nb, PetscInt *start, PetscInt *n)
{
  PetscInt    B, nbatches;
  PetscMPIInt rank, size;

  PetscFunctionBegin;
  PetscCall(DatasetGetNumBatches(ds, &nbatches));
  PetscCheck(b >= 0 && b < nbatches, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "Batch %" PetscInt_FMT " does not exist: this epoch has batches 0..%" PetscInt_FMT, b, nbatches - 1);
  PetscCall(DatasetGetBatchSize(ds, &B));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)ds), &rank));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ds), &size));
  *nb    = PetscMin(B, ds->N - b * B);
  *n     = *nb / size + (rank < *nb % size ? 1 : 0);
  *start = b * B + rank * (*nb / size) + PetscMin(rank, *nb % size);
  PetscFunctionReturn(0);
}

PetscErrorCode DatasetResetBatches_Private(Dataset ds)
{
  PetscFunctionBegin;
  for (int k = 0; k < 2; k++) {
    PetscCall(VecDestroy(&ds->batch[k].X));
    PetscCall(VecDestroy(&ds->batch[k].T));
    ds->batch[k].n = 0;
  }
  PetscCall(PetscFree(ds->source));
  PetscCall(PetscFree(ds->recvx));
  PetscCall(PetscFree(ds->recvt));
  ds->nepoch = ds->nrecv = 0;
  ds->epochready         = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  DatasetBeginEpoch - draws the sample order of an epoch

  Collective on ds

  Input Parameters:
+ ds    - the Dataset (set up if needed)
- epoch - the epoch number, the same on every rank

  Notes:
  With shuffling the order is a Fisher-Yates permutation of 0..N-1 from a PETSCRAND48 generator seeded with
  seed + epoch, computed alike on every rank, so the global order does not depend on the number of ranks; without
  shuffling it is the file order. Without a call, the order is that of epoch 0.

  Level: beginner

.seealso: `DatasetGetEpoch()`, `DatasetGetBatch()`, `DatasetSetShuffle()`, `DatasetSetSeed()`
@*/
PetscErrorCode DatasetBeginEpoch(Dataset ds, PetscInt epoch)
{
  PetscInt *order;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, epoch, 2);
  PetscCall(DatasetSetUp(ds));
  PetscCall(PetscLogEventBegin(DATASET_Epoch, ds, 0, 0, 0));
  if (!ds->order) PetscCall(PetscMalloc1(ds->N, &ds->order));
  order = ds->order;
  for (PetscInt i = 0; i < ds->N; i++) order[i] = i;
  if (ds->shuffle) {
    if (!ds->rand) {
      PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &ds->rand));
      PetscCall(PetscRandomSetType(ds->rand, PETSCRAND48));
    }
    PetscCall(PetscRandomSetSeed(ds->rand, ds->seed + (unsigned long)epoch));
    PetscCall(PetscRandomSeed(ds->rand));
    for (PetscInt i = ds->N - 1; i > 0; i--) {
      PetscReal u;
      PetscInt  j, swap;

      PetscCall(PetscRandomGetValueReal(ds->rand, &u)); /* u in [0, 1): j uniform in 0..i */
      j        = PetscMin((PetscInt)(u * (PetscReal)(i + 1)), i);
      swap     = order[i];
      order[i] = order[j];
      order[j] = swap;
    }
  }
  ds->epoch      = epoch;
  ds->epochready = PETSC_FALSE;
  PetscCall(PetscLogEventEnd(DATASET_Epoch, ds, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@
  DatasetGetEpoch - gets the epoch whose order is in effect

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameter:
. epoch - the number given to the last DatasetBeginEpoch() (0 after DatasetSetUp())

  Level: intermediate

.seealso: `DatasetBeginEpoch()`
@*/
PetscErrorCode DatasetGetEpoch(Dataset ds, PetscInt *epoch)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(epoch, 2);
  *epoch = ds->epoch;
  PetscFunctionReturn(0);
}

/* recv (leaves, [n][unit]) = the samples of src (roots, stored [nlocal][unit]) that the graph names */
static PetscErrorCode DatasetFetch_Private(PetscSF sf, PetscInt unitsize, Vec src, PetscScalar *recv)
{
  MPI_Datatype       unit;
  const PetscScalar *s;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Type_contiguous((PetscMPIInt)unitsize, MPIU_SCALAR, &unit));
  PetscCallMPI(MPI_Type_commit(&unit));
  PetscCall(VecGetArrayRead(src, &s));
  PetscCall(PetscSFBcastBegin(sf, unit, s, recv, MPI_REPLACE));
  PetscCall(PetscSFBcastEnd(sf, unit, s, recv, MPI_REPLACE));
  PetscCall(VecRestoreArrayRead(src, &s));
  PetscCallMPI(MPI_Type_free(&unit));
  PetscFunctionReturn(0);
}

/*
  Where each sample this rank uses in the epoch comes from (source[]), and the samples stored elsewhere, fetched in
  the order of use with one PetscSF. Collective.
*/
static PetscErrorCode DatasetSetUpEpoch_Private(Dataset ds)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)ds);
  PetscInt    nbatches, nb, start, n, k = 0, *remote;
  PetscMPIInt size;
  PetscSF     sf;

  PetscFunctionBegin;
  PetscCall(DatasetCheckAugmentation_Private(ds));
  PetscCall(PetscLogEventBegin(DATASET_Epoch, ds, 0, 0, 0));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(DatasetGetNumBatches(ds, &nbatches));
  if (!ds->source) { /* nepoch depends on N, B and the ranks only */
    ds->nepoch = 0;
    for (PetscInt b = 0; b < nbatches; b++) {
      PetscCall(DatasetBatchRange_Private(ds, b, &nb, &start, &n));
      ds->nepoch += n;
    }
    PetscCall(PetscMalloc1(ds->nepoch, &ds->source));
  }
  PetscCall(PetscMalloc1(ds->nepoch, &remote));
  ds->nrecv = 0;
  for (PetscInt b = 0; b < nbatches; b++) {
    PetscCall(DatasetBatchRange_Private(ds, b, &nb, &start, &n));
    for (PetscInt i = 0; i < n; i++, k++) {
      PetscInt s = ds->order[start + i];

      if (s >= ds->map->rstart && s < ds->map->rend)
        ds->source[k] = s - ds->map->rstart;
      else {
        ds->source[k]       = -1 - ds->nrecv;
        remote[ds->nrecv++] = s;
      }
    }
  }
  PetscCall(PetscFree(ds->recvx));
  PetscCall(PetscFree(ds->recvt));
  if (size > 1) {
    PetscCall(PetscMalloc1(ds->nrecv * ds->F, &ds->recvx));
    PetscCall(PetscMalloc1(ds->nrecv * ds->tsize, &ds->recvt));
    PetscCall(PetscSFCreate(comm, &sf));
    PetscCall(PetscSFSetGraphLayout(sf, ds->map, ds->nrecv, NULL, PETSC_OWN_POINTER, remote));
    PetscCall(PetscSFSetUp(sf));
    PetscCall(DatasetFetch_Private(sf, ds->F, ds->inputs, ds->recvx));
    PetscCall(DatasetFetch_Private(sf, ds->tsize, ds->targets, ds->recvt));
    PetscCall(PetscSFDestroy(&sf));
  }
  PetscCall(PetscFree(remote));
  ds->epochready = PETSC_TRUE;
  PetscCall(PetscLogEventEnd(DATASET_Epoch, ds, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* The Vecs for a batch of nb samples (n on this rank); reused while the size repeats */
/* samples per part of a batch's gather */
#define DATASET_GATHER_BLOCK 16

/* rows i0 .. i1 of the batch (positions offset + i0 .. of this rank's samples of the epoch, global sample numbers
   samples[i]) into x and t: from this rank's storage (source s >= 0) or the samples fetched from other ranks (-1 - s);
   the inputs augmented when asked (a function of the global sample number: the same rows on any number of ranks) */
static void DatasetGatherRows(Dataset ds, PetscInt offset, const PetscInt *samples, PetscInt i0, PetscInt i1, const PetscScalar *xs, const PetscScalar *ts, PetscScalar *x, PetscScalar *t)
{
  const PetscInt  F = ds->F, tsize = ds->tsize;
  const PetscBool augment = DatasetIsAugmented_Private(ds);

  for (PetscInt i = i0; i < i1; i++) {
    const PetscInt     s  = ds->source[offset + i];
    const PetscScalar *xi = s >= 0 ? xs + s * F : ds->recvx + (-1 - s) * F;

    if (augment)
      DatasetAugmentSample_Private(ds, samples[i], xi, x + i * F);
    else
      memcpy(x + i * F, xi, (size_t)F * sizeof(PetscScalar));
    memcpy(t + i * tsize, s >= 0 ? ts + s * tsize : ds->recvt + (-1 - s) * tsize, (size_t)tsize * sizeof(PetscScalar));
  }
}

static PetscErrorCode DatasetGetBatchVecs_Private(Dataset ds, PetscInt nb, PetscInt n, Vec *X, Vec *T)
{
  PetscInt          B;
  DatasetBatchVecs *slot;

  PetscFunctionBegin;
  PetscCall(DatasetGetBatchSize(ds, &B));
  slot = &ds->batch[nb == B ? 0 : 1]; /* full batches, and the smaller last one */
  if (slot->n != nb) {
    MPI_Comm comm = PetscObjectComm((PetscObject)ds);

    PetscCall(VecDestroy(&slot->X));
    PetscCall(VecDestroy(&slot->T));
    PetscCall(VecCreate(comm, &slot->X));
    PetscCall(VecSetSizes(slot->X, n * ds->F, nb * ds->F));
    PetscCall(VecSetBlockSize(slot->X, ds->F));
    PetscCall(VecSetType(slot->X, VECSTANDARD));
    PetscCall(VecCreate(comm, &slot->T));
    PetscCall(VecSetSizes(slot->T, n * ds->tsize, nb * ds->tsize));
    PetscCall(VecSetBlockSize(slot->T, ds->tsize));
    PetscCall(VecSetType(slot->T, VECSTANDARD));
    PetscCall(PetscObjectSetName((PetscObject)slot->X, "batch inputs"));
    PetscCall(PetscObjectSetName((PetscObject)slot->T, "batch targets"));
    slot->n = nb;
  }
  *X = slot->X;
  *T = slot->T;
  PetscFunctionReturn(0);
}

/*@C
  DatasetGetBatchIndices - gets the sample numbers (positions in the source) of this rank's part of a batch

  Collective on ds

  Input Parameters:
+ ds - the Dataset (set up if needed)
- b  - the batch, 0 <= b < DatasetGetNumBatches()

  Output Parameters:
+ n       - the number of samples of batch b on this rank (may be NULL)
- indices - their sample numbers, in batch order (may be NULL); owned by the Dataset, changed by DatasetBeginEpoch()

  Level: advanced

.seealso: `DatasetGetBatch()`, `DatasetBeginEpoch()`
@*/
PetscErrorCode DatasetGetBatchIndices(Dataset ds, PetscInt b, PetscInt *n, const PetscInt *indices[])
{
  PetscInt nb, start, nlocal;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(DatasetSetUp(ds));
  PetscCall(DatasetBatchRange_Private(ds, b, &nb, &start, &nlocal));
  if (n) *n = nlocal;
  if (indices) *indices = ds->order + start;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetBatch - gets batch b of the current epoch, this rank's part of it

  Collective on ds

  Input Parameters:
+ ds - the Dataset (set up if needed)
- b  - the batch, 0 <= b < DatasetGetNumBatches()

  Output Parameters:
+ X - the inputs, local part [nlocal][sample] (may be NULL)
- T - the targets, local part [nlocal][tsize] (may be NULL)

  Notes:
  The batch holds samples order[b*B .. min((b+1)*B, N)) of the epoch, split over the ranks as PETSC_DECIDE would
  split them. The first batch of an epoch fetches, in one communication, every sample this rank will use and another
  rank stores; later batches only copy. The Vecs belong to the Dataset: do not destroy them; they are valid until the
  next DatasetGetBatch() and reused for every batch of the same size.

  Level: beginner

.seealso: `DatasetBeginEpoch()`, `DatasetGetNumBatches()`, `DatasetGetBatchIndices()`, `DatasetGetAll()`
@*/
PetscErrorCode DatasetGetBatch(Dataset ds, PetscInt b, Vec *X, Vec *T)
{
  PetscInt           nb, start, n, n0, offset;
  Vec                bx = NULL, bt = NULL;
  const PetscScalar *xs, *ts;
  PetscScalar       *x, *t;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(DatasetSetUp(ds));
  if (!ds->epochready) PetscCall(DatasetSetUpEpoch_Private(ds));
  PetscCall(PetscLogEventBegin(DATASET_Batch, ds, 0, 0, 0));
  PetscCall(DatasetBatchRange_Private(ds, 0, &nb, &start, &n0));
  PetscCall(DatasetBatchRange_Private(ds, b, &nb, &start, &n));
  offset = b * n0; /* every batch before b is full: this rank's part of each has as many samples as of batch 0 */
  PetscCall(DatasetGetBatchVecs_Private(ds, nb, n, &bx, &bt));
  PetscCall(VecGetArrayRead(ds->inputs, &xs));
  PetscCall(VecGetArrayRead(ds->targets, &ts));
  PetscCall(VecGetArrayWrite(bx, &x));
  PetscCall(VecGetArrayWrite(bt, &t));
  /* the gather, on PetNet's threads (rows scattered over the stored samples: bound by memory latency, two threads
     fetch twice as many rows at once); plain copies, so the same bits at any thread count */
  PETNET_THREAD_BLOCKS(n, DATASET_GATHER_BLOCK, DatasetGatherRows(ds, offset, ds->order + start, i0, i1, xs, ts, x, t));
  PetscCall(VecRestoreArrayWrite(bt, &t));
  PetscCall(VecRestoreArrayWrite(bx, &x));
  PetscCall(VecRestoreArrayRead(ds->targets, &ts));
  PetscCall(VecRestoreArrayRead(ds->inputs, &xs));
  PetscCall(PetscLogEventEnd(DATASET_Batch, ds, 0, 0, 0));
  if (X) *X = bx;
  if (T) *T = bt;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetAll - gets every sample, in source order, as one batch

  Collective on ds

  Input Parameter:
. ds - the Dataset (set up if needed)

  Output Parameters:
+ X - the inputs, local part [nlocal][sample] (may be NULL)
- T - the targets, local part [nlocal][tsize] (may be NULL)

  Notes:
  The Vecs are the Dataset's storage, split over the ranks as PETSC_DECIDE splits the samples: do not modify or
  destroy them. For full-batch training and evaluation.

  Level: intermediate

.seealso: `DatasetGetBatch()`, `DatasetGetLocalSize()`, `TrainerEvaluate()`
@*/
PetscErrorCode DatasetGetAll(Dataset ds, Vec *X, Vec *T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscCall(DatasetSetUp(ds));
  if (X) *X = ds->inputs;
  if (T) *T = ds->targets;
  PetscFunctionReturn(0);
}
