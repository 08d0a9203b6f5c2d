/*
  The Hessian TAO's Newton-type solvers (nls, ntr, ntl and the bound-constrained bnls, bntr, bntl) ask for: the
  Gauss-Newton operator or the exact Hessian (-trainer_hessian gn|exact, LossCreateNetHessian()) of the full-batch
  training loss, taken over the whole training set or, with -trainer_hessian_samples S, over S samples drawn afresh
  at every outer iteration (Hessian-free Newton-CG, Martens 2010: the gradient is the full one, the curvature a
  sub-sample's). The draw depends only on the seed and the iteration, never on the number of ranks: the chosen global
  sample numbers are sorted and each rank keeps those it holds, so the sub-sample is the same batch in the same order.
  With -trainer_hessian_pc kfac the conjugate-gradient solves are preconditioned by K-FAC (PetNetPCSetKFAC()), whose
  statistics come from a gradient pass over the Hessian's samples at every outer iteration.
*/
#include <petnet/private/trainerimpl.h>
#include <petnetoptim.h>

/* The S sample numbers of outer iteration `it` out of N, sorted (a partial Fisher-Yates shuffle, the same on every rank) */
static PetscErrorCode TrainerDrawSubsample_Private(Trainer tr, PetscInt N, PetscInt S, PetscInt it, PetscInt idx[])
{
  PetscRandom rnd;
  PetscInt   *perm;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(N, &perm));
  for (PetscInt i = 0; i < N; i++) perm[i] = i;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)(tr->hessianseed + 7919 * (unsigned long)it)));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt i = 0; i < S; i++) {
    PetscReal u;
    PetscInt  j, t;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    j       = i + PetscMin((PetscInt)(u * (N - i)), N - i - 1);
    t       = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscArraycpy(idx, perm, S));
  PetscCall(PetscSortInt(S, idx));
  PetscCall(PetscFree(perm));
  PetscFunctionReturn(0);
}

/* Xh, Th of nlocal samples on this rank, kept from the last call when no rank's size changed (VecCreateMPI() is collective) */
static PetscErrorCode TrainerEnsureSubsampleVecs_Private(Trainer tr, PetscInt nlocal, PetscInt nin, PetscInt tsize)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscInt    m    = -1;
  PetscMPIInt change;

  PetscFunctionBegin;
  if (tr->Xh) PetscCall(VecGetLocalSize(tr->Xh, &m));
  change = m != nlocal * nin;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &change, 1, MPI_INT, MPI_MAX, comm));
  if (!change) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&tr->Xh));
  PetscCall(VecDestroy(&tr->Th));
  PetscCall(VecCreateMPI(comm, nlocal * nin, PETSC_DETERMINE, &tr->Xh));
  PetscCall(VecCreateMPI(comm, nlocal * tsize, PETSC_DETERMINE, &tr->Th));
  PetscFunctionReturn(0);
}

/* Xh, Th = the sub-sample of outer iteration it: each rank copies the chosen samples it holds */
static PetscErrorCode TrainerSetSubsample_Private(Trainer tr, PetscInt it)
{
  Vec                Xall, Tall;
  const PetscScalar *x, *t;
  PetscScalar       *xs, *ts;
  PetscInt           nin, tsize, N, S = tr->hessiansamples, rstart, rend, *idx, nmine = 0, first = -1;
  PetNetShape        in;

  PetscFunctionBegin;
  PetscCall(DatasetGetAll(tr->train, &Xall, &Tall));
  PetscCall(DatasetGetTargetSize(tr->train, &tsize));
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetSize(Xall, &N));
  N /= nin;
  PetscCall(VecGetOwnershipRange(Xall, &rstart, &rend));
  rstart /= nin;
  rend /= nin;
  PetscCall(PetscMalloc1(S, &idx));
  PetscCall(TrainerDrawSubsample_Private(tr, N, S, it, idx));
  for (PetscInt i = 0; i < S; i++)
    if (idx[i] >= rstart && idx[i] < rend) {
      if (first < 0) first = i;
      nmine++;
    }
  PetscCall(TrainerEnsureSubsampleVecs_Private(tr, nmine, nin, tsize));
  PetscCall(VecGetArrayRead(Xall, &x));
  PetscCall(VecGetArrayRead(Tall, &t));
  PetscCall(VecGetArrayWrite(tr->Xh, &xs));
  PetscCall(VecGetArrayWrite(tr->Th, &ts));
  for (PetscInt k = 0; k < nmine; k++) {
    PetscInt s = idx[first + k] - rstart;

    PetscCall(PetscArraycpy(xs + k * nin, x + s * nin, nin));
    PetscCall(PetscArraycpy(ts + k * tsize, t + s * tsize, tsize));
  }
  PetscCall(VecRestoreArrayWrite(tr->Th, &ts));
  PetscCall(VecRestoreArrayWrite(tr->Xh, &xs));
  PetscCall(VecRestoreArrayRead(Tall, &t));
  PetscCall(VecRestoreArrayRead(Xall, &x));
  PetscCall(PetscFree(idx));
  PetscFunctionReturn(0);
}

/*
  Mini-batch mode: Xh, Th = S samples of the current batch (all of it when S is 0 or larger): those at the global
  positions floor(i N / S), i < S, of the batch's order, spread over the ranks as the batch is and the same samples
  whatever the number of ranks.
*/
static PetscErrorCode TrainerSetBatchSubsample_Private(Trainer tr)
{
  const PetscScalar *x, *t;
  PetscScalar       *xs, *ts;
  PetscInt           nin, n, nt, rstart, N, S, tsize, first, last;
  PetNetShape        in;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetLocalSize(tr->X, &n));
  PetscCall(VecGetLocalSize(tr->T, &nt));
  PetscCall(VecGetSize(tr->X, &N));
  PetscCall(VecGetOwnershipRange(tr->X, &rstart, NULL));
  n /= nin;
  N /= nin;
  rstart /= nin;
  tsize = n ? nt / n : 0;
  S     = (tr->hessiansamples > 0 && tr->hessiansamples < N) ? tr->hessiansamples : N;
  /* the i with rstart <= floor(i N / S) < rstart + n: i in [ceil(rstart S / N), ceil((rstart + n) S / N)) */
  first = (PetscInt)(((PetscInt64)rstart * S + N - 1) / PetscMax(N, 1));
  last  = (PetscInt)(((PetscInt64)(rstart + n) * S + N - 1) / PetscMax(N, 1));
  PetscCall(TrainerEnsureSubsampleVecs_Private(tr, last - first, nin, tsize));
  PetscCall(VecGetArrayRead(tr->X, &x));
  PetscCall(VecGetArrayRead(tr->T, &t));
  PetscCall(VecGetArrayWrite(tr->Xh, &xs));
  PetscCall(VecGetArrayWrite(tr->Th, &ts));
  for (PetscInt i = first; i < last; i++) {
    PetscInt s = (PetscInt)((PetscInt64)i * N / S) - rstart;

    PetscCall(PetscArraycpy(xs + (i - first) * nin, x + s * nin, nin));
    PetscCall(PetscArraycpy(ts + (i - first) * tsize, t + s * tsize, tsize));
  }
  PetscCall(VecRestoreArrayWrite(tr->Th, &ts));
  PetscCall(VecRestoreArrayWrite(tr->Xh, &xs));
  PetscCall(VecRestoreArrayRead(tr->T, &t));
  PetscCall(VecRestoreArrayRead(tr->X, &x));
  PetscFunctionReturn(0);
}

/* -trainer_hessian_pc kfac: K-FAC's statistics of the Hessian's samples X, T at the current parameters, from forward
   and backward passes of the mean loss in chunks of -trainer_hessian_chunk local samples (all at once without) */
static PetscErrorCode TrainerKFACStatistics_Private(Trainer tr, Vec X, Vec T)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)tr);
  const PetscScalar *x, *t;
  PetscInt           nin, tsize, nlocal, nmax, B, nchunks;
  PetNetShape        in;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(DatasetGetTargetSize(tr->train, &tsize));
  PetscCall(VecGetLocalSize(X, &nlocal));
  nlocal /= nin;
  PetscCall(MPIU_Allreduce(&nlocal, &nmax, 1, MPIU_INT, MPI_MAX, comm));
  B       = tr->hessianchunk > 0 ? tr->hessianchunk : PetscMax(nmax, 1);
  nchunks = (nmax + B - 1) / B;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt  start = PetscMin(c * B, nlocal), n = PetscMin(B, nlocal - start);
    Vec       Xc, Tc;
    PetscReal f;

    PetscCall(VecCreateMPIWithArray(comm, 1, n * nin, PETSC_DETERMINE, x + start * nin, &Xc));
    PetscCall(VecCreateMPIWithArray(comm, 1, n * tsize, PETSC_DETERMINE, t + start * tsize, &Tc));
    PetscCall(TrainerEnsureWorkVecs_Private(tr, Xc));
    PetscCall(NetForward(tr->net, Xc, tr->Y));
    PetscCall(LossEvaluate(tr->loss, tr->Y, Tc, &f, tr->dY));
    PetscCall(NetBackward(tr->net, tr->dY, NULL, NULL));
    if (c < nchunks - 1)
      PetscCall(PetNetPCKFACAddStatistics(tr->kfacpc));
    else
      PetscCall(PetNetPCKFACUpdateStatistics(tr->kfacpc));
    PetscCall(VecDestroy(&Xc));
    PetscCall(VecDestroy(&Tc));
  }
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscFunctionReturn(0);
}

/* The TaoSetHessian() callback: the curvature at theta (the sub-sample of this outer iteration) */
static PetscErrorCode TrainerHessian_Private(Tao tao, Vec theta, Mat H, Mat Hpre, void *ctx)
{
  Trainer  tr = (Trainer)ctx;
  PetscInt N;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(tr->net, theta));
  PetscCall(DatasetGetSize(tr->train, &N));
  if (tr->minibatch) { /* the current batch's loss (the batch itself), or S samples of it */
    PetscInt    Nb, nin;
    PetNetShape in;

    PetscCall(NetGetInputShape(tr->net, &in));
    PetscCall(PetNetShapeSize(&in, &nin));
    PetscCall(VecGetSize(tr->X, &Nb));
    if (tr->hessiansamples > 0 && tr->hessiansamples < Nb / nin) {
      PetscCall(TrainerSetBatchSubsample_Private(tr));
      PetscCall(LossNetHessianSetBatch(tr->H, tr->Xh, tr->Th));
    } else
      PetscCall(LossNetHessianSetBatch(tr->H, tr->X, tr->T));
    if (tr->kfacpc) PetscCall(TrainerKFACStatistics_Private(tr, tr->Xh, tr->Th));
  } else if (tr->hessiansamples > 0 && tr->hessiansamples < N) {
    PetscCall(TrainerSetSubsample_Private(tr, tr->hessianevals));
    PetscCall(LossNetHessianSetBatch(tr->H, tr->Xh, tr->Th));
    if (tr->kfacpc) PetscCall(TrainerKFACStatistics_Private(tr, tr->Xh, tr->Th));
  } else {
    Vec Xall, Tall;

    PetscCall(DatasetGetAll(tr->train, &Xall, &Tall));
    if (!tr->hessianevals) PetscCall(LossNetHessianSetBatch(tr->H, Xall, Tall));
    if (tr->kfacpc) PetscCall(TrainerKFACStatistics_Private(tr, Xall, Tall));
  }
  tr->hessianevals++;
  PetscFunctionReturn(0);
}

/* For the Newton-type TAO types: create the Hessian shell and hand it to TAO (from TrainerSetUp()) */
PetscErrorCode TrainerSetUpHessian_Private(Trainer tr)
{
  PetscFunctionBegin;
  PetscCall(LossCreateNetHessian(tr->loss, tr->net, tr->hessiantype, &tr->H));
  if (tr->hessianchunk > 0) PetscCall(LossNetHessianSetChunkSize(tr->H, tr->hessianchunk));
  PetscCall(LossNetHessianSetDamping(tr->H, tr->hessiandamping));
  PetscCall(TaoSetHessian(tr->tao, tr->H, tr->H, TrainerHessian_Private, tr));
  { /* the Hessian is matrix-free: nls, ntr and ntl would default to ILU on it, so they get no preconditioner unless
       the options name one (-tao_nls_pc_type lmvm, shell, ...); the bound-constrained types default to LMVM. Newton
       steps stop after 100 conjugate-gradient iterations unless the options say otherwise (-tao_nls_ksp_max_it) */
    KSP         ksp;
    PC          pc;
    const char *prefix;
    PetscBool   set, bnk;

    PetscCall(TaoGetKSP(tr->tao, &ksp));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &bnk, TAOBNLS, TAOBNTR, TAOBNTL, ""));
    PetscCheck(ksp || !tr->hessiankfac, PetscObjectComm((PetscObject)tr), PETSC_ERR_SUP, "-trainer_hessian_pc kfac preconditions the Krylov solves of a Newton-type TAO type, and this one has no KSP");
    if (ksp && tr->hessiankfac) { /* K-FAC, its statistics from the Hessian's samples (TrainerHessian_Private()) */
      PetscCall(KSPGetPC(ksp, &tr->kfacpc));
      PetscCall(PetNetPCSetKFAC(tr->kfacpc, tr->net));
    } else if (ksp && !bnk) {
      PetscCall(KSPGetOptionsPrefix(ksp, &prefix));
      PetscCall(PetscOptionsHasName(((PetscObject)ksp)->options, prefix, "-pc_type", &set));
      PetscCall(KSPGetPC(ksp, &pc));
      if (!set) PetscCall(PCSetType(pc, PCNONE));
    }
    if (ksp) { /* a Newton step is a truncated conjugate-gradient solve: KSP's default of 10,000 iterations is no cap */
      PetscCall(KSPGetOptionsPrefix(ksp, &prefix));
      PetscCall(PetscOptionsHasName(((PetscObject)ksp)->options, prefix, "-ksp_max_it", &set));
      if (!set) PetscCall(KSPSetTolerances(ksp, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 100));
    }
  }
  PetscFunctionReturn(0);
}
