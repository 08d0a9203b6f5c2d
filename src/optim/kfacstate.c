/*
  The K-FAC state (kfacimpl.h) in a layout that depends neither on the rank count nor on the placement of the factors,
  for a checkpoint (src/trainer/checkpoint.c, format 6):

    counters[2]          nupdates (statistics updates so far; 0: the next update replaces the averages), ninverted (the
                         value of nupdates at the last inversion; -1: never, the next update inverts)
    blocks[4 nblocks]    per block, in the order of the Net's nodes and of a convolution's groups: node, group, na, nout
    factors              per block, in the same order: A (na x na), S (nout x nout), A^{-1}, S^{-1} (damped, as in use),
                         each full and column-major (all symmetric); sum over the blocks of 2 (na^2 + nout^2) entries

  The factors travel as a Vec on the Net's communicator whose entries all sit on rank 0: gathered from the ranks that
  hold each block (replicated placement: rank 0's own copy; owner placement: the block's owner), and scattered back to
  every rank that holds it, whatever placement and rank count the run that reads it has. With the counters and the
  optimizer's step the next updates refresh the statistics and the inverses when the uninterrupted run would, from
  the same matrices: the run continues to the bit on the same ranks.

  The statistics of passes not yet folded into the averages (PetNetKFACAddStatistics() between two updates) are not
  part of the state: it is taken between updates, where there are none (checked).
*/
#include "kfacimpl.h"

/* The entries of block b in the factors' layout */
static inline PetscInt64 KFACStateBlockEntries(const KFACBlock *b)
{
  return 2 * ((PetscInt64)b->na * b->na + (PetscInt64)b->nout * b->nout);
}

/* The layout of the state: the blocks' records, their offsets in the factors (nblocks + 1) and the factors' size */
static PetscErrorCode KFACStateLayout(PetNetKFAC kfac, PetscInt **blocks, PetscInt **offsets, PetscInt *n)
{
  PetscInt64 total = 0;

  PetscFunctionBegin;
  if (blocks) PetscCall(PetscMalloc1(4 * kfac->nblocks, blocks));
  if (offsets) PetscCall(PetscMalloc1(kfac->nblocks + 1, offsets));
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    const KFACBlock *b = &kfac->blocks[i];

    if (blocks) {
      (*blocks)[4 * i + 0] = b->node;
      (*blocks)[4 * i + 1] = b->group;
      (*blocks)[4 * i + 2] = b->na;
      (*blocks)[4 * i + 3] = b->nout;
    }
    if (offsets) (*offsets)[i] = (PetscInt)total;
    total += KFACStateBlockEntries(b);
    PetscCheck(total <= PETSC_MAX_INT, PetscObjectComm((PetscObject)kfac->net), PETSC_ERR_SUP,
               "K-FAC's factors and inverses hold %" PetscInt64_FMT " entries or more, more than one Vec of 32-bit PetscInt indices holds: they cannot be written to a checkpoint; use narrower layers or another optimizer for checkpointed runs",
               total);
  }
  if (offsets) (*offsets)[kfac->nblocks] = (PetscInt)total;
  *n = (PetscInt)total;
  PetscFunctionReturn(0);
}

/* whether this rank provides block b's entries to a gathered state: its owner, or rank 0 where every rank holds it */
static inline PetscBool KFACStateProvides(const KFACBlock *b, PetscMPIInt rank)
{
  return (PetscBool)(b->owner == rank || (b->owner < 0 && rank == 0));
}

/* The IS of the entries, in the factors' layout, of the blocks this rank provides (gather: one provider per block,
   its owner or rank 0 in the replicated placement) or receives (scatter: every rank that holds the block) */
static PetscErrorCode KFACStateIS(PetNetKFAC kfac, const PetscInt offsets[], PetscBool gather, PetscInt *nlocal, IS *is)
{
  PetscMPIInt rank;
  PetscInt    n = 0, *idx, c = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)kfac->net), &rank));
  for (int pass = 0; pass < 2; pass++) {
    for (PetscInt i = 0; i < kfac->nblocks; i++) {
      const KFACBlock *b    = &kfac->blocks[i];
      const PetscBool  mine = gather ? KFACStateProvides(b, rank) : b->held;

      if (!mine) continue;
      if (!pass)
        n += offsets[i + 1] - offsets[i];
      else
        for (PetscInt j = offsets[i]; j < offsets[i + 1]; j++) idx[c++] = j;
    }
    if (!pass) PetscCall(PetscMalloc1(n, &idx));
  }
  *nlocal = n;
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, n, idx, PETSC_OWN_POINTER, is));
  PetscFunctionReturn(0);
}

/*
  The state for a checkpoint: counters[2], blocks[4 nblocks] (PetscFree() it) and, when factors is not NULL, a new Vec
  of the factors, all on rank 0 (collective)
*/
PetscErrorCode PetNetKFACGetState(PetNetKFAC kfac, PetscInt counters[2], PetscInt *nblocks, PetscInt *blocks[], Vec *factors)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)kfac->net);
  PetscMPIInt  rank;
  PetscInt    *offsets, n, nlocal;
  IS           is;
  Vec          held;
  VecScatter   sct;
  PetscScalar *h;

  PetscFunctionBegin;
  PetscCheck(kfac->nsamples == 0, comm, PETSC_ERR_ORDER, "K-FAC holds the statistics of %" PetscInt_FMT " samples not yet folded into its averages: take its state between two updates", kfac->nsamples);
  counters[0] = kfac->nupdates;
  counters[1] = kfac->ninverted;
  *nblocks    = kfac->nblocks;
  PetscCall(KFACStateLayout(kfac, blocks, &offsets, &n));
  if (!factors) {
    PetscCall(PetscFree(offsets));
    PetscFunctionReturn(0);
  }
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecCreateMPI(comm, rank ? 0 : n, n, factors));
  PetscCall(KFACStateIS(kfac, offsets, PETSC_TRUE, &nlocal, &is));
  PetscCall(VecCreateMPI(comm, nlocal, PETSC_DETERMINE, &held));
  PetscCall(VecGetArrayWrite(held, &h));
  for (PetscInt i = 0, c = 0; i < kfac->nblocks; i++) {
    const KFACBlock *b  = &kfac->blocks[i];
    const size_t     na = (size_t)b->na * b->na, ns = (size_t)b->nout * b->nout;

    if (!KFACStateProvides(b, rank)) continue;
    PetscCall(PetscArraycpy(h + c, b->A, na));
    PetscCall(PetscArraycpy(h + c + na, b->S, ns));
    PetscCall(PetscArraycpy(h + c + na + ns, b->Ainv, na));
    PetscCall(PetscArraycpy(h + c + 2 * na + ns, b->Sinv, ns));
    c += 2 * (na + ns);
  }
  PetscCall(VecRestoreArrayWrite(held, &h));
  PetscCall(VecScatterCreate(held, NULL, *factors, is, &sct));
  PetscCall(VecScatterBegin(sct, held, *factors, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sct, held, *factors, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sct));
  PetscCall(VecDestroy(&held));
  PetscCall(ISDestroy(&is));
  PetscCall(PetscFree(offsets));
  PetscFunctionReturn(0);
}

/*
  Restores the state PetNetKFACGetState() gave (possibly on other ranks, in another placement): factors in its layout,
  distributed in any way; counters checked. The blocks' records are the caller's to compare with PetNetKFACGetState()'s
  before (they name the file).
*/
PetscErrorCode PetNetKFACSetState(PetNetKFAC kfac, const PetscInt counters[2], Vec factors)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)kfac->net);
  PetscInt          *offsets, n, N, nlocal;
  IS                 is;
  Vec                mine;
  VecScatter         sct;
  const PetscScalar *m;

  PetscFunctionBegin;
  PetscCheck(counters[0] >= 0 && counters[1] >= -1 && counters[1] <= counters[0], comm, PETSC_ERR_ARG_OUTOFRANGE, "K-FAC state: %" PetscInt_FMT " statistics updates with the inverses of update %" PetscInt_FMT " is impossible", counters[0],
             counters[1]);
  PetscCall(KFACStateLayout(kfac, NULL, &offsets, &n));
  PetscCall(VecGetSize(factors, &N));
  PetscCheck(N == n, comm, PETSC_ERR_ARG_SIZ, "K-FAC state: %" PetscInt_FMT " entries of factors, where this Net's blocks have %" PetscInt_FMT, N, n);
  PetscCall(KFACStateIS(kfac, offsets, PETSC_FALSE, &nlocal, &is));
  PetscCall(VecCreateMPI(comm, nlocal, PETSC_DETERMINE, &mine));
  PetscCall(VecScatterCreate(factors, is, mine, NULL, &sct));
  PetscCall(VecScatterBegin(sct, factors, mine, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sct, factors, mine, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(mine, &m));
  for (PetscInt i = 0, c = 0; i < kfac->nblocks; i++) {
    KFACBlock   *b  = &kfac->blocks[i];
    const size_t na = (size_t)b->na * b->na, ns = (size_t)b->nout * b->nout;

    if (!b->held) continue;
    PetscCall(PetscArraycpy(b->A, m + c, na));
    PetscCall(PetscArraycpy(b->S, m + c + na, ns));
    PetscCall(PetscArraycpy(b->Ainv, m + c + na + ns, na));
    PetscCall(PetscArraycpy(b->Sinv, m + c + 2 * na + ns, ns));
    c += 2 * (na + ns);
  }
  PetscCall(VecRestoreArrayRead(mine, &m));
  PetscCall(VecScatterDestroy(&sct));
  PetscCall(VecDestroy(&mine));
  PetscCall(ISDestroy(&is));
  PetscCall(PetscFree(offsets));
  kfac->nupdates  = counters[0];
  kfac->ninverted = counters[1];
  kfac->nsamples  = 0;
  PetscFunctionReturn(0);
}
