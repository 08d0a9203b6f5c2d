/*
  The objective TAO sees.

  minibatch: f(theta) = mean loss over the current mini-batch; TrainerNextBatch_Private (the TaoSetUpdate hook) draws
             batch k of the epoch's order before iteration k.
  fullbatch: f(theta) = mean loss over the whole training set, accumulated chunk by chunk:
             f = sum_c (n_c/N) f_c,  grad = sum_c (n_c/N) grad_c.
*/
#include <petnet/private/trainerimpl.h>
#include <petnet/private/threadsimpl.h>

/* Output and cotangent Vecs shaped like the Net's output for the batch X (rebuilt only when the batch layout changes) */
PetscErrorCode TrainerEnsureWorkVecs_Private(Trainer tr, Vec X)
{
  PetNetShape in, out;
  PetscInt    nin, nout, n, N, m = -1, M = -1;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(NetGetOutputShape(tr->net, &out));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(VecGetLocalSize(X, &n));
  PetscCall(VecGetSize(X, &N));
  n /= nin;
  N /= nin;
  if (tr->Y) {
    PetscCall(VecGetLocalSize(tr->Y, &m));
    PetscCall(VecGetSize(tr->Y, &M));
  }
  if (m == n * nout && M == N * nout) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&tr->Y));
  PetscCall(VecDestroy(&tr->dY));
  PetscCall(NetCreateVecs(tr->net, n, NULL, &tr->Y));
  PetscCall(VecDuplicate(tr->Y, &tr->dY));
  PetscFunctionReturn(0);
}

/* The TaoSetUpdate hook: draw batch k of this epoch; print a progress line every -trainer_progress_interval seconds.
   Before batch k, k updates of this epoch are applied: -trainer_fail_after_step N fails here, inside an epoch; then, in
   a population with -trainer_tournament_unit steps, the tournament due after the previous step runs (it may replace
   the solution and the optimizer's state: TrainerPopulationStep_Private()). */
PetscErrorCode TrainerNextBatch_Private(Tao tao, PetscInt it, void *ctx)
{
  Trainer        tr = (Trainer)ctx;
  PetscLogDouble now;

  PetscFunctionBegin;
  PetscCheck(tr->ibatch < tr->nbatches, PetscObjectComm((PetscObject)tr), PETSC_ERR_PLIB, "Asked for batch %" PetscInt_FMT " of an epoch of %" PetscInt_FMT, tr->ibatch, tr->nbatches);
  if (tr->failstep > 0 && tr->ibatch > 0 && (PetscInt64)tr->epoch * tr->nbatches + tr->ibatch == tr->failstep) PetscCall(TrainerInjectFailure_Private(tr, "-trainer_fail_after_step", tr->failstep));
  PetscCall(TrainerPopulationStep_Private(tr));
  PetscCall(DatasetGetBatch(tr->train, tr->ibatch, &tr->X, &tr->T));
  tr->ibatch++;
  tr->batchcounted = PETSC_FALSE;
  if (tr->progressviewer && tr->progressinterval > 0) {
    PetscCall(PetscTime(&now));
    if (now - tr->tlastprogress >= tr->progressinterval) {
      tr->tlastprogress = now;
      PetscCall(PetscViewerASCIIPrintf(tr->progressviewer, "  epoch %" PetscInt_FMT ": batch %" PetscInt_FMT "/%" PetscInt_FMT " (%.0f%%)  train_loss %.6f  %.1fs\n", tr->epoch + 1, tr->ibatch, tr->nbatches, 100.0 * tr->ibatch / tr->nbatches,
                                       tr->epochsamples ? (double)(tr->epochloss / tr->epochsamples) : 0.0, (double)(now - tr->tepoch)));
    }
  }
  PetscFunctionReturn(0);
}

/*
  The Net at the optimizer's point theta. With PetNet's stochastic types the optimizer's solution is the Net's own
  parameter Vec (TrainerSetUp()): nothing to copy, and any other point would overwrite the solution, so it is refused.
*/
static PetscErrorCode TrainerSetParameters_Private(Trainer tr, Vec theta)
{
  Vec params;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(tr->net, &params));
  PetscCheck(theta == params || tr->theta != params, PetscObjectComm((PetscObject)tr), PETSC_ERR_ORDER,
             "The optimizer evaluated the loss away from its solution, which for PetNet's types (sgd, adam, adamw, rmsprop, kfac) is the Net's parameter Vec: choose the Tao type (-tao_type) before TrainerSetUp() and do not change it after");
  PetscCall(NetSetParameters(tr->net, theta));
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerObjectiveMiniBatch_Private(Tao tao, Vec theta, PetscReal *f, Vec G, void *ctx)
{
  Trainer     tr = (Trainer)ctx;
  PetscInt    N, nin;
  PetNetShape in;

  PetscFunctionBegin;
  if (!tr->X) PetscCall(TrainerNextBatch_Private(tao, 0, tr));
  PetscCall(TrainerSetParameters_Private(tr, theta));
  PetscCall(TrainerEnsureWorkVecs_Private(tr, tr->X));
  PetscCall(PetNetVecZero_Private(G));                                                   /* VecZeroEntries() on PetNet's threads */
  PetscCall(LossNetForwardBackward(tr->loss, tr->net, tr->X, tr->T, tr->Y, f, NULL, G)); /* forward, loss, backward (1F1B: interleaved) */
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetSize(tr->X, &N));
  N /= nin;
  if (PetscIsInfOrNanReal(*f))
    tr->diverged = PETSC_TRUE;
  else if (tr->besttrainloss == PETSC_MAX_REAL)
    tr->besttrainloss = *f; /* the divergence test's first reference */
  if (!tr->batchcounted) {  /* the batch's first evaluation (a Newton step evaluates it again in its line search) */
    tr->epochloss += *f * N;
    tr->epochsamples += N;
    tr->batchcounted = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/*
  Mean loss over every sample of ds (file order), and optionally its gradient (G, overwritten), the number of correct
  arg-max predictions and the Net's outputs (Yall: [nlocal][nout], this rank's samples of ds in file order). Works in chunks of at most evalbatchsize local samples per rank, viewing the Dataset's arrays in
  place; every rank takes part in every chunk (a rank out of samples passes an empty chunk).
*/
PetscErrorCode TrainerAccumulate_Private(Trainer tr, Dataset ds, PetscReal *f, Vec G, PetscInt *correct, Vec Yall)
{
  MPI_Comm            comm = PetscObjectComm((PetscObject)tr);
  Vec                 Xall, Tall;
  const PetscScalar  *x, *t;
  PetscInt            nin, tsize, nlocal, nmax, N, nchunks, B = tr->evalbatchsize;
  PetNetShape         in;
  PetscBool           targets;
  NetPipelineSchedule schedule;
  Vec                 Gc = NULL; /* 1F1B: a chunk's gradient */

  PetscFunctionBegin;
  PetscCall(NetGetPipelineSchedule(tr->net, &schedule));
  PetscCall(DatasetHasTargets(ds, &targets));
  PetscCheck(targets || (!G && !correct), comm, PETSC_ERR_ARG_WRONG, "The Dataset has no targets (-dataset_hdf5_targets none): it can only be predicted (bin/predict, TrainerPredict()), not trained on or scored");
  PetscCall(DatasetGetAll(ds, &Xall, &Tall));
  PetscCall(DatasetGetTargetSize(ds, &tsize));
  PetscCall(NetGetInputShape(tr->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetLocalSize(Xall, &nlocal));
  nlocal /= nin;
  PetscCall(VecGetSize(Xall, &N));
  N /= nin;
  PetscCall(MPIU_Allreduce(&nlocal, &nmax, 1, MPIU_INT, MPI_MAX, comm));
  nchunks = (nmax + B - 1) / B;
  *f      = 0;
  if (correct) *correct = 0;
  if (G) PetscCall(VecZeroEntries(G));
  PetscCall(VecGetArrayRead(Xall, &x));
  PetscCall(VecGetArrayRead(Tall, &t));
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt  start = PetscMin(c * B, nlocal), n = PetscMin(B, nlocal - start), Nc, cc;
    Vec       X, T;
    PetscReal fc;

    PetscCall(VecCreateMPIWithArray(comm, 1, n * nin, PETSC_DETERMINE, x + start * nin, &X));
    PetscCall(VecCreateMPIWithArray(comm, 1, n * tsize, PETSC_DETERMINE, t + start * tsize, &T));
    PetscCall(VecGetSize(X, &Nc));
    Nc /= nin;
    PetscCall(TrainerEnsureWorkVecs_Private(tr, X));
    if (G && schedule == NET_PIPELINE_1F1B) { /* 1F1B: the chunk's loss inside the pipeline's walk, its gradient weighed after */
      if (!Gc) PetscCall(VecDuplicate(G, &Gc));
      PetscCall(VecZeroEntries(Gc));
      PetscCall(LossNetForwardBackward(tr->loss, tr->net, X, T, tr->Y, &fc, NULL, Gc));
      PetscCall(VecAXPY(G, (PetscReal)Nc / N, Gc));
      *f += fc * Nc / N;
    } else {
      PetscCall(NetForward(tr->net, X, tr->Y));
      if (targets) {
        PetscCall(LossEvaluate(tr->loss, tr->Y, T, &fc, G ? tr->dY : NULL));
        *f += fc * Nc / N;
      }
      if (G) {
        PetscCall(VecScale(tr->dY, (PetscReal)Nc / N));
        PetscCall(NetBackward(tr->net, tr->dY, NULL, G));
      }
    }
    if (correct) {
      PetscCall(LossCountCorrect(tr->loss, tr->Y, T, &cc));
      *correct += cc;
    }
    if (Yall) {
      const PetscScalar *y;
      PetscScalar       *yall;
      PetscInt           m;

      PetscCall(VecGetLocalSize(tr->Y, &m));
      PetscCall(VecGetArrayRead(tr->Y, &y));
      PetscCall(VecGetArray(Yall, &yall));
      PetscCall(PetscArraycpy(yall + start * (m / PetscMax(n, 1)), y, m));
      PetscCall(VecRestoreArray(Yall, &yall));
      PetscCall(VecRestoreArrayRead(tr->Y, &y));
    }
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&T));
  }
  PetscCall(VecRestoreArrayRead(Tall, &t));
  PetscCall(VecRestoreArrayRead(Xall, &x));
  PetscCall(VecDestroy(&Gc));
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerObjectiveFullBatch_Private(Tao tao, Vec theta, PetscReal *f, Vec G, void *ctx)
{
  Trainer tr = (Trainer)ctx;

  PetscFunctionBegin;
  PetscCall(TrainerSetParameters_Private(tr, theta));
  PetscCall(TrainerAccumulate_Private(tr, tr->train, f, G, NULL, NULL));
  /* a NaN at a line-search trial point is not divergence: TrainerFullBatchMonitor_Private() judges accepted iterates */
  tr->epochloss    = *f;
  tr->epochsamples = 1;
  PetscFunctionReturn(0);
}
