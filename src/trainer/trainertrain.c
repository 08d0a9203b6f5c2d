/* The training loop: epochs of TaoSolve, evaluation, progress lines, early stopping, checkpoints, divergence. */
#include <petnet/private/trainerimpl.h>

/*@
  TrainerEvaluate - computes the mean loss and the accuracy of the Net on a Dataset, in evaluation mode

  Collective on tr

  Input Parameters:
+ tr - the Trainer (set up if needed)
- ds - the Dataset (set up if needed), e.g. the test set

  Output Parameters:
+ loss - the mean loss over all samples (may be NULL)
- acc  - the fraction of samples whose arg-max output equals the label; -1 for regression data (may be NULL)

  Options Database Key:
. -trainer_eval_batch_size <n> - samples per chunk of the evaluation (read by TrainerSetFromOptions())

  Notes:
  The Net is put in evaluation mode (dropout off, batchnorm running statistics) and back in its previous mode.

  Level: beginner

.seealso: `TrainerTrain()`, `TrainerGetResults()`, `NetSetTraining()`, `LossCountCorrect()`
@*/
PetscErrorCode TrainerEvaluate(Trainer tr, Dataset ds, PetscReal *loss, PetscReal *acc)
{
  PetscBool training;
  PetscInt  correct, N, classes;
  PetscReal f;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 2);
  PetscCall(TrainerSetUp(tr));
  PetscCall(DatasetSetUp(ds));
  PetscCall(PetscLogEventBegin(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscCall(NetGetTraining(tr->net, &training));
  PetscCall(NetSetTraining(tr->net, PETSC_FALSE));
  PetscCall(DatasetGetNumClasses(ds, &classes));
  PetscCall(TrainerAccumulate_Private(tr, ds, &f, NULL, classes ? &correct : NULL));
  PetscCall(NetSetTraining(tr->net, training));
  PetscCall(DatasetGetSize(ds, &N));
  if (loss) *loss = f;
  if (acc) *acc = classes && N ? (PetscReal)correct / N : -1.0;
  PetscCall(PetscLogEventEnd(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscFunctionReturn(0);
}

static PetscErrorCode TrainerCheckDivergence_Private(Trainer tr, PetscInt epoch)
{
  TaoConvergedReason reason;

  PetscFunctionBegin;
  PetscCall(TaoGetConvergedReason(tr->tao, &reason));
  if (!tr->diverged && reason != TAO_DIVERGED_NAN) PetscFunctionReturn(0);
  if (tr->lastcheckpoint >= 0)
    SETERRQ(PetscObjectComm((PetscObject)tr), PETSC_ERR_NOT_CONVERGED,
            "Training diverged: the loss became NaN or Inf in epoch %" PetscInt_FMT ". The last good checkpoint, %s (end of epoch %" PetscInt_FMT "), was kept: resume from it with -trainer_restart %s and a smaller learning rate", epoch + 1,
            tr->checkpoint, tr->lastcheckpoint, tr->checkpoint);
  SETERRQ(PetscObjectComm((PetscObject)tr), PETSC_ERR_NOT_CONVERGED,
          "Training diverged: the loss became NaN or Inf in epoch %" PetscInt_FMT ". Lower the learning rate (e.g. -tao_adam_lr), check the data for NaN, and write checkpoints with -trainer_checkpoint FILE to keep the last good state", epoch + 1);
}

static PetscErrorCode TrainerPrintEpoch_Private(Trainer tr, PetscInt epoch, PetscReal seconds, PetscInt samples, PetscLogDouble elapsed)
{
  PetscFunctionBegin;
  if (!tr->monitor) PetscFunctionReturn(0);
  PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tr), "epoch %3" PetscInt_FMT "/%" PetscInt_FMT "  train_loss %.6f", epoch, tr->epochs, (double)tr->trainloss));
  if (tr->test) PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tr), "  test_loss %.6f  test_acc %.4f", (double)tr->testloss, (double)tr->testacc));
  PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tr), "  samples/s %.0f  elapsed %.2fs\n", seconds > 0 ? samples / seconds : 0.0, (double)elapsed));
  PetscFunctionReturn(0);
}

static PetscErrorCode TrainerEvaluateTest_Private(Trainer tr)
{
  PetscFunctionBegin;
  if (tr->test) PetscCall(TrainerEvaluate(tr, tr->test, &tr->testloss, &tr->testacc));
  PetscFunctionReturn(0);
}

/*@
  TrainerTrain - trains the Net: runs the remaining epochs, evaluating on the test set after each

  Collective on tr

  Input Parameter:
. tr - the Trainer (set up if needed)

  Options Database Keys:
+ -trainer_epochs <n>               - epochs; 0 only sets up and evaluates
. -trainer_patience <p>             - stop after p epochs without a better test loss (0: never)
. -trainer_checkpoint <file>        - write a checkpoint (see -trainer_checkpoint_every) and at the end
. -trainer_checkpoint_every <N>     - every N epochs
. -trainer_monitor                  - one progress line per epoch
- -trainer_progress_interval <s>    - seconds between progress lines within an epoch (0: never)

  Notes:
  In mini-batch mode each epoch is one TaoSolve() of as many iterations as batches, the batch drawn in the TAO update
  hook; in full-batch mode one TaoSolve() (-tao_max_it iterations) minimizes the mean training loss. After a restart
  only the epochs after the checkpoint run. A NaN or Inf loss stops training with an error naming the last good
  checkpoint, which is kept. The results are available from TrainerGetResults(). The options above are read by
  TrainerSetFromOptions().

  Level: beginner

.seealso: `TrainerSetUp()`, `TrainerEvaluate()`, `TrainerGetResults()`, `TrainerSaveCheckpoint()`, `TrainerSetEpochs()`
@*/
PetscErrorCode TrainerTrain(Trainer tr)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)tr);
  PetscLogDouble t0, t1, ttrain = 0;
  PetscInt       N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCall(DatasetGetSize(tr->train, &N));
  PetscCall(PetscTime(&t0));
  if (tr->epochs == 0 || tr->epoch >= tr->epochs) {
    PetscCall(TrainerAccumulate_Private(tr, tr->train, &tr->trainloss, NULL, NULL));
    PetscCall(TrainerEvaluateTest_Private(tr));
    PetscCall(TrainerPrintEpoch_Private(tr, tr->epoch, 0, 0, 0));
    PetscFunctionReturn(0);
  }
  if (!tr->minibatch) {
    /* full batch: one TAO solve on the mean training loss; -tao_max_it bounds the iterations */
    tr->diverged = PETSC_FALSE;
    PetscCall(PetscLogEventBegin(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TaoSolve(tr->tao));
    PetscCall(PetscLogEventEnd(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TrainerCheckDivergence_Private(tr, 0));
    PetscCall(NetSetParameters(tr->net, tr->theta));
    PetscCall(PetscTime(&t1));
    ttrain = t1 - t0;
    PetscCall(TrainerAccumulate_Private(tr, tr->train, &tr->trainloss, NULL, NULL));
    PetscCall(TrainerEvaluateTest_Private(tr));
    tr->epoch = tr->epochs;
    {
      PetscInt its;

      PetscCall(TaoGetIterationNumber(tr->tao, &its));
      PetscCall(PetscTime(&t1));
      PetscCall(TrainerPrintEpoch_Private(tr, tr->epoch, ttrain, its * N, t1 - t0));
    }
    tr->traintime = ttrain;
    if (tr->checkpoint[0]) PetscCall(TrainerSaveCheckpoint(tr, tr->checkpoint));
    PetscFunctionReturn(0);
  }
  for (PetscInt e = tr->epoch; e < tr->epochs; e++) {
    PetscLogDouble ts, te;

    PetscCall(PetscTime(&ts));
    tr->tepoch = tr->tlastprogress = ts;
    PetscCall(DatasetBeginEpoch(tr->train, e));
    tr->ibatch       = 0;
    tr->X            = NULL;
    tr->epochloss    = 0;
    tr->epochsamples = 0;
    tr->diverged     = PETSC_FALSE;
    PetscCall(TaoSetMaximumIterations(tr->tao, tr->nbatches));
    PetscCall(PetscLogEventBegin(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TaoSolve(tr->tao));
    PetscCall(PetscLogEventEnd(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TrainerCheckDivergence_Private(tr, e));
    PetscCall(NetSetParameters(tr->net, tr->theta));
    PetscCall(PetscTime(&te));
    ttrain += te - ts;
    tr->trainloss = tr->epochsamples ? tr->epochloss / tr->epochsamples : 0.0;
    tr->epoch     = e + 1;
    PetscCall(TrainerEvaluateTest_Private(tr));
    PetscCall(PetscTime(&t1));
    PetscCall(TrainerPrintEpoch_Private(tr, tr->epoch, te - ts, tr->epochsamples, t1 - t0));
    if (tr->checkpoint[0] && tr->checkpointevery > 0 && tr->epoch % tr->checkpointevery == 0) PetscCall(TrainerSaveCheckpoint(tr, tr->checkpoint));
    if (tr->test && tr->patience > 0) {
      if (tr->testloss < tr->besttestloss) {
        tr->besttestloss = tr->testloss;
        tr->badepochs    = 0;
      } else if (++tr->badepochs >= tr->patience) {
        PetscCall(PetscPrintf(comm, "early stopping: the test loss has not improved for %" PetscInt_FMT " epochs (best %.6f)\n", tr->patience, (double)tr->besttestloss));
        break;
      }
    }
  }
  tr->traintime = ttrain;
  if (tr->checkpoint[0] && tr->lastcheckpoint != tr->epoch) PetscCall(TrainerSaveCheckpoint(tr, tr->checkpoint));
  PetscFunctionReturn(0);
}
