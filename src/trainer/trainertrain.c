/* The training loop: epochs of TaoSolve, evaluation, progress lines, early stopping, checkpoints, divergence. */
#include <petnet/private/trainerimpl.h>
#include <signal.h>
#include <unistd.h>

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
  The Net is put in evaluation mode (dropout off, batchnorm running statistics) and back in its previous mode. A
  Dataset whose normalisation is not set takes the Net's (NetGetInputNormalization()), as in TrainerPredict().

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
  if (ds != tr->train && ds != tr->test) PetscCall(TrainerMatchNormalization_Private(tr, ds)); /* those two: at TrainerSetUp() */
  PetscCall(DatasetSetUp(ds));
  if (ds != tr->train && ds != tr->test) { /* those two: at TrainerSetUp() */
    PetscCall(TrainerCheckNormalization_Private(tr, ds, tr->train, "evaluated", PETSC_FALSE));
    PetscCall(TrainerCheckSampleShape_Private(tr, ds, "evaluated", "give data of the shape the Net was trained on"));
    PetscCall(TrainerCheckTargetSize_Private(tr, ds, "evaluated"));
  }
  PetscCall(PetscLogEventBegin(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscCall(NetGetTraining(tr->net, &training));
  PetscCall(NetSetTraining(tr->net, PETSC_FALSE));
  PetscCall(DatasetGetNumClasses(ds, &classes));
  PetscCall(TrainerAccumulate_Private(tr, ds, &f, NULL, classes ? &correct : NULL, NULL));
  PetscCall(NetSetTraining(tr->net, training));
  PetscCall(DatasetGetSize(ds, &N));
  if (loss) *loss = f;
  if (acc) *acc = classes && N ? (PetscReal)correct / N : -1.0;
  PetscCall(PetscLogEventEnd(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  Divergence, checked at the end of every epoch before anything is written: a NaN or Inf loss (in any batch, or TAO's
  TAO_DIVERGED_NAN), or an epoch's training loss above divergencefactor times the best training loss of the run (the
  first objective value, then the epochs'). Losses that explode but stay finite (1e21 ... 1e40) are caught by the
  second test. The diverged state is flagged so that TrainerSaveCheckpoint() never writes it over a good checkpoint.
*/
static PetscErrorCode TrainerCheckDivergence_Private(Trainer tr, PetscInt epoch)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)tr);
  TaoConvergedReason reason;
  PetscReal          ref = PetscMax(tr->besttrainloss, PETSC_SMALL);
  char               what[256], advice[512];

  PetscFunctionBegin;
  PetscCall(TaoGetConvergedReason(tr->tao, &reason));
  if (tr->diverged || reason == TAO_DIVERGED_NAN || PetscIsInfOrNanReal(tr->trainloss))
    PetscCall(PetscSNPrintf(what, sizeof(what), "the loss became NaN or Inf in epoch %" PetscInt_FMT, epoch));
  else if (tr->divergencefactor > 0 && tr->besttrainloss < PETSC_MAX_REAL && tr->trainloss > tr->divergencefactor * ref)
    PetscCall(PetscSNPrintf(what, sizeof(what), "the training loss of epoch %" PetscInt_FMT ", %g, is more than %g times the best so far, %g (-trainer_divergence_factor)", epoch, (double)tr->trainloss, (double)tr->divergencefactor,
                            (double)tr->besttrainloss));
  else {
    tr->besttrainloss = PetscMin(tr->besttrainloss, tr->trainloss);
    PetscFunctionReturn(0);
  }
  tr->divergedstate = PETSC_TRUE;
  { /* in a population the trainer is replaced by its partner's model at the next tournament instead */
    PetscBool handled;

    PetscCall(TrainerPopulationDiverged_Private(tr, what, &handled));
    if (handled) PetscFunctionReturn(0);
  }
  if (tr->lastcheckpoint >= 0 && tr->checkpoint[0])
    PetscCall(PetscSNPrintf(advice, sizeof(advice), "The last good checkpoint, %s (end of epoch %" PetscInt_FMT "), was kept: resume from it with -trainer_restart %s and a smaller learning rate", tr->checkpoint, tr->lastcheckpoint, tr->checkpoint));
  else
    PetscCall(PetscSNPrintf(advice, sizeof(advice),
                            "No checkpoint was written before%s%s. Lower the learning rate (e.g. -tao_adam_lr), check the data for NaN, and write checkpoints with -trainer_checkpoint FILE -trainer_checkpoint_every 1 to keep the last good state",
                            tr->checkpoint[0] ? "; the checkpoint file, untouched, is " : "", tr->checkpoint));
  SETERRQ(comm, PETSC_ERR_NOT_CONVERGED, "Training diverged: %s. %s", what, advice);
}

static PetscErrorCode TrainerEvaluateTest_Private(Trainer tr)
{
  PetscFunctionBegin;
  if (tr->test) PetscCall(TrainerEvaluate(tr, tr->test, &tr->testloss, &tr->testacc));
  PetscFunctionReturn(0);
}

/*
  Testing aids (-trainer_fail_after_epoch N, -trainer_fail_after_step N, -trainer_fail_rank R): once every rank has
  reached the point (the end of epoch N, its checkpoint, when one is due, complete and renamed; or the run's N-th
  mini-batch update applied, in the middle of an epoch, long after the last checkpoint), rank R kills itself with
  SIGKILL, as a lost node or the kernel's OOM killer would: no error handler, no MPI_Finalize, no flush but the line
  it prints. mpiexec then ends the other ranks. What survives is what a real failure leaves: the last complete
  checkpoint (share/petnet-run restarts from it). option and value name the aid in that line.
*/
PetscErrorCode TrainerInjectFailure_Private(Trainer tr, const char option[], PetscInt value)
{
  MPI_Comm    comm;
  PetscMPIInt rank, size;

  PetscFunctionBegin;
  PetscCall(TrainerPopulationGetJobComm_Private(tr, &comm)); /* in a population: every trainer's checkpoint complete, R a rank of the job */
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCheck(tr->failrank < size, comm, PETSC_ERR_ARG_OUTOFRANGE, "-trainer_fail_rank %" PetscInt_FMT " does not exist: this run has ranks 0 to %d", tr->failrank, size - 1);
  PetscCallMPI(MPI_Barrier(comm));
  if (rank == tr->failrank) {
    PetscCall(PetscInfo(tr, "%s %" PetscInt_FMT ": killing rank %d\n", option, value, rank));
    if (tr->failstep == value) /* mid-epoch: say where, so that a test can tell it from an end of epoch */
      PetscCall(PetscFPrintf(PETSC_COMM_SELF, stdout, "%s %" PetscInt_FMT ": killing rank %d after batch %" PetscInt_FMT " of %" PetscInt_FMT " of epoch %" PetscInt_FMT " (the last checkpoint is of epoch %" PetscInt_FMT ")\n", option, value, rank,
                             tr->ibatch, tr->nbatches, tr->epoch + 1, tr->lastcheckpoint));
    (void)fflush(stdout);
    (void)kill(getpid(), SIGKILL);
  }
  PetscFunctionReturn(0);
}

/* -trainer_fail_after_step N, checked before the first epoch: a mini-batch run, N inside an epoch of this run */
static PetscErrorCode TrainerCheckFailStep_Private(Trainer tr)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)tr);

  PetscFunctionBegin;
  if (tr->failstep < 0) PetscFunctionReturn(0);
  PetscCheck(tr->minibatch, comm, PETSC_ERR_ARG_INCOMP, "-trainer_fail_after_step %" PetscInt_FMT " needs mini-batch training: in full-batch mode an epoch is one update, so fail at an epoch's end with -trainer_fail_after_epoch", tr->failstep);
  PetscCheck(tr->failstep % tr->nbatches != 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-trainer_fail_after_step %" PetscInt_FMT " is the last update of epoch %" PetscInt_FMT " (%" PetscInt_FMT " batches per epoch): give a step inside an epoch (not a multiple of %" PetscInt_FMT
             "), or fail at that epoch's end with -trainer_fail_after_epoch %" PetscInt_FMT,
             tr->failstep, tr->failstep / tr->nbatches, tr->nbatches, tr->nbatches, tr->failstep / tr->nbatches);
  PetscCheck(tr->failstep < (PetscInt64)tr->epochs * tr->nbatches, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-trainer_fail_after_step %" PetscInt_FMT " is beyond this run's %" PetscInt_FMT " updates (%" PetscInt_FMT " epochs of %" PetscInt_FMT " batches): give a step from 1 to %" PetscInt64_FMT, tr->failstep, tr->epochs * tr->nbatches,
             tr->epochs, tr->nbatches, (PetscInt64)tr->epochs * tr->nbatches - 1);
  PetscFunctionReturn(0);
}

/* The end of epoch 'epoch' (1-based), in both modes: divergence check, test evaluation, progress line, checkpoint,
   early stopping (*stop). The Net holds the epoch's parameters and tr->trainloss its training loss. */
static PetscErrorCode TrainerEndEpoch_Private(Trainer tr, PetscInt epoch, PetscReal seconds, PetscInt samples, PetscBool *stop)
{
  PetscLogDouble now;

  PetscFunctionBegin;
  *stop = PETSC_FALSE;
  PetscCall(TrainerCheckDivergence_Private(tr, epoch));
  tr->epoch = epoch;
  PetscCall(TrainerPopulationTournament_Private(tr, epoch)); /* a population's tournament, when its interval says so */
  PetscCall(TrainerEvaluateTest_Private(tr));
  PetscCall(PetscTime(&now));
  PetscCall(TrainerMonitor_Private(tr, tr->epoch, seconds, samples, now - tr->tstart));
  PetscCall(TrainerPopulationMonitor_Private(tr, tr->epoch));
  PetscCall(TrainerMonitorSharpness_Private(tr, tr->epoch));
  if (tr->checkpoint[0] && tr->checkpointevery > 0 && tr->epoch % tr->checkpointevery == 0) PetscCall(TrainerSaveCheckpoint(tr, tr->checkpoint));
  if (tr->epoch == tr->failafter) PetscCall(TrainerInjectFailure_Private(tr, "-trainer_fail_after_epoch", tr->failafter));
  if (tr->test && tr->patience > 0) {
    if (tr->testloss < tr->besttestloss) {
      tr->besttestloss = tr->testloss;
      tr->badepochs    = 0;
    } else if (++tr->badepochs >= tr->patience) {
      PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tr), "early stopping: the test loss has not improved for %" PetscInt_FMT " epochs (best %.6f)\n", tr->patience, (double)tr->besttestloss));
      *stop = PETSC_TRUE;
    }
  }
  PetscFunctionReturn(0);
}

/* Full batch: TAO calls this monitor after every iteration (and once before the first, its == 0); iteration its of
   the running TaoSolve ends epoch epochstart + its. */
PetscErrorCode TrainerFullBatchMonitor_Private(Tao tao, void *ctx)
{
  Trainer        tr = (Trainer)ctx;
  PetscInt       its, N;
  PetscReal      f;
  PetscLogDouble now;
  PetscBool      stop;

  PetscFunctionBegin;
  PetscCall(TaoGetSolutionStatus(tao, &its, &f, NULL, NULL, NULL, NULL));
  if (its == 0) {
    if (tr->besttrainloss == PETSC_MAX_REAL && !PetscIsInfOrNanReal(f)) tr->besttrainloss = f;
    PetscFunctionReturn(0);
  }
  PetscCall(NetSetParameters(tr->net, tr->theta)); /* the accepted iterate, not the last trial point */
  PetscCall(DatasetGetSize(tr->train, &N));
  PetscCall(PetscTime(&now));
  tr->trainloss = f;
  PetscCall(TrainerEndEpoch_Private(tr, tr->epochstart + its, now - tr->tepoch, N, &stop));
  PetscCall(PetscTime(&tr->tepoch));
  if (stop) PetscCall(TaoSetConvergedReason(tao, TAO_CONVERGED_USER));
  PetscFunctionReturn(0);
}

/*
  Mini-batch mode: trains on batches tr->ibatch .. nbatches - 1 of the epoch, one TaoSolve() whose update hook draws
  them (TrainerNextBatch_Private()); for the Newton-type types one TaoSolve() of -trainer_newton_steps iterations per
  batch, on that batch's loss, which stays fixed during the solve (the line search or trust region and the Hessian see
  one function): sub-sampled Newton-CG. Stops early on a NaN or Inf loss (tr->diverged) or TAO's own stop.
*/
static PetscErrorCode TrainerRunBatches_Private(Trainer tr)
{
  PetscFunctionBegin;
  if (!tr->needhessian) {
    PetscCall(TaoSetMaximumIterations(tr->tao, tr->nbatches - tr->ibatch));
    PetscCall(TaoSolve(tr->tao));
  } else {
    PetscCall(TaoSetMaximumIterations(tr->tao, tr->newtonsteps));
    while (tr->ibatch < tr->nbatches && !tr->diverged) {
      PetscCall(TrainerNextBatch_Private(tr->tao, tr->ibatch, tr));
      PetscCall(TaoSolve(tr->tao));
    }
  }
  PetscFunctionReturn(0);
}

/* The end of TrainerTrain(), as the end of a PETSc solve: the plot, then the views of the final state */
static PetscErrorCode TrainerEndTrain_Private(Trainer tr)
{
  PetscBool winner;

  PetscFunctionBegin;
  PetscCall(TrainerPopulationFinish_Private(tr, &winner)); /* in a population: the winner, who alone saves and views */
  if (!winner) {                                           /* the other trainers' Nets must not write -net_save either, not even at NetDestroy() */
    PetscCall(NetSetSaveFile(tr->net, NULL));
    PetscFunctionReturn(0);
  }
  PetscCall(NetSaveFromOptions(tr->net)); /* -net_save */
  if (tr->plot[0]) PetscCall(TrainerPlotCurves(tr, tr->plot));
  PetscCall(PetscObjectViewFromOptions((PetscObject)tr, NULL, "-trainer_view"));
  PetscCall(NetViewFromOptions(tr->net, (PetscObject)tr, "-trainer_view_net"));
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
. -trainer_divergence_factor <f>    - stop when an epoch's training loss exceeds f times the best so far (0: NaN/Inf only)
. -trainer_checkpoint <file>        - write a checkpoint (see -trainer_checkpoint_every) and at the end
. -trainer_checkpoint_every <N>     - every N epochs
. -net_save <file>                  - save the trained Net there when training ends (NetSaveFromOptions())
. -trainer_monitor [ascii,csv,draw][:file] - monitors at the end of every epoch (default: the progress line)
. -trainer_progress_interval <s>    - seconds between progress lines within an epoch (0: never)
. -trainer_monitor_plot <file.png>  - the training curves as a PNG at the end (TrainerPlotCurves())
. -trainer_view [viewer]            - view the Trainer at the end: epochs run, final losses and accuracy, TAO's state
- -trainer_view_net [viewer]        - view the trained Net at the end: its table (ascii), or the model itself with a
                                      binary or HDF5 viewer (as NetSave()), e.g. -trainer_view_net binary:trained.petnet

  Notes:
  In mini-batch mode each epoch is one TaoSolve() of as many iterations as batches, the batch drawn in the TAO update
  hook; for the Newton-type TAO types (nls, ntr, ...) each batch is a TaoSolve() of its own (-trainer_newton_steps
  iterations), so that the loss stays fixed during a Newton step. In full-batch mode one epoch is one TAO iteration on the mean training loss: a single TaoSolve() runs at most
  -trainer_epochs iterations (-tao_max_it, when the user gives it, replaces -trainer_epochs), and every iteration ends
  an epoch as in mini-batch mode (progress line, test evaluation, checkpoint, early stopping). A full-batch restart
  starts TAO afresh (a quasi-Newton memory is not in the checkpoint). After a restart only the epochs after the
  checkpoint run; the monitors first receive the earlier epochs' metrics from the checkpoint (format 4), so that their
  files and the plot cover the whole run.

  A NaN or Inf loss, or an epoch's training loss above -trainer_divergence_factor (default 1e3) times the best so
  far, stops training with an error naming the last good checkpoint, which is kept: a diverged state is never
  written. -trainer_epochs 0 evaluates in evaluation mode and changes nothing. The results are available from TrainerGetResults(). The options above are read by
  TrainerSetFromOptions().

  Level: beginner

.seealso: `TrainerSetUp()`, `TrainerEvaluate()`, `TrainerGetResults()`, `TrainerSaveCheckpoint()`, `TrainerSetEpochs()`
@*/
PetscErrorCode TrainerTrain(Trainer tr)
{
  PetscLogDouble t1, ttrain = 0;
  PetscBool      stop = PETSC_FALSE;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCall(PetscTime(&tr->tstart));
  PetscCall(TrainerMonitorReplay_Private(tr)); /* after a restart: the epochs before it */
  if (tr->epochs == 0 || tr->epoch >= tr->epochs) {
    /* evaluate only, in evaluation mode: batchnorm's running statistics must not move. After a restart from the final
       checkpoint (format 3) the training loss is the last epoch's, as the run that wrote it reported it */
    if (!tr->trainlossrestored || tr->epochs == 0) PetscCall(TrainerEvaluate(tr, tr->train, &tr->trainloss, NULL));
    PetscCall(TrainerEvaluateTest_Private(tr));
    PetscCall(TrainerMonitor_Private(tr, tr->epoch, 0, 0, 0));
    PetscCall(TrainerEndTrain_Private(tr));
    PetscFunctionReturn(0);
  }
  tr->divergedstate = PETSC_FALSE;
  PetscCall(TrainerCheckFailStep_Private(tr));
  if (!tr->minibatch) {
    /* full batch: one TaoSolve of at most the remaining epochs' iterations; TrainerFullBatchMonitor_Private() ends
       every epoch (= iteration) */
    tr->diverged   = PETSC_FALSE;
    tr->epochstart = tr->epoch;
    tr->tepoch     = tr->tstart;
    PetscCall(TaoSetMaximumIterations(tr->tao, tr->epochs - tr->epoch));
    PetscCall(PetscLogEventBegin(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TaoSolve(tr->tao));
    PetscCall(PetscLogEventEnd(TRAINER_Epoch, tr, 0, 0, 0));
    PetscCall(TaoGetIterationNumber(tr->tao, &tr->taoits));
    if (!tr->diverged && tr->epoch < tr->epochstart + tr->taoits) {
      /* PetNet's own optimizers (sgd, adam, ...) monitor before each update, so TAO never called the monitor after the
         last one: end that epoch here, with the objective at the final iterate (a run of -trainer_epochs 5 reported
         epochs=4) */
      PetscReal f;
      PetscInt  N;
      PetscBool stop;

      PetscCall(TaoComputeObjective(tr->tao, tr->theta, &f));
      PetscCall(NetSetParameters(tr->net, tr->theta));
      PetscCall(DatasetGetSize(tr->train, &N));
      PetscCall(PetscTime(&t1));
      tr->trainloss = f;
      PetscCall(TrainerEndEpoch_Private(tr, tr->epochstart + tr->taoits, t1 - tr->tepoch, N, &stop));
    }
    PetscCall(PetscTime(&t1));
    ttrain = t1 - tr->tstart;
    PetscCall(TrainerCheckDivergence_Private(tr, tr->epoch + 1));
    PetscCall(NetSetParameters(tr->net, tr->theta));
    if (tr->epoch == tr->epochstart) { /* TAO stopped before its first iteration (converged at the start) */
      PetscCall(TrainerEvaluate(tr, tr->train, &tr->trainloss, NULL));
      PetscCall(TrainerEvaluateTest_Private(tr));
    }
  } else {
    for (PetscInt e = tr->epoch; e < tr->epochs && !stop; e++) {
      PetscLogDouble ts, te;

      PetscCall(PetscTime(&ts));
      tr->tepoch = tr->tlastprogress = ts;
      PetscCall(DatasetBeginEpoch(tr->train, e));
      tr->ibatch       = 0;
      tr->X            = NULL;
      tr->epochloss    = 0;
      tr->epochsamples = 0;
      tr->diverged     = PETSC_FALSE;
      PetscCall(PetscLogEventBegin(TRAINER_Epoch, tr, 0, 0, 0));
      PetscCall(TrainerRunBatches_Private(tr));
      /* a population's trainer with tournaments between steps passes the steps its stopped solve left, taking part in
         their tournaments, and trains on if one gave it a partner's model */
      for (PetscBool resume = PETSC_TRUE; resume && tr->ibatch < tr->nbatches;) {
        PetscCall(TrainerPopulationSkipSteps_Private(tr, &resume));
        if (resume) PetscCall(TrainerRunBatches_Private(tr));
      }
      PetscCall(PetscLogEventEnd(TRAINER_Epoch, tr, 0, 0, 0));
      PetscCall(NetSetParameters(tr->net, tr->theta));
      PetscCall(PetscTime(&te));
      ttrain += te - ts;
      tr->trainloss = tr->epochsamples ? tr->epochloss / tr->epochsamples : 0.0;
      PetscCall(TrainerEndEpoch_Private(tr, e + 1, te - ts, tr->epochsamples, &stop));
    }
  }
  tr->traintime = ttrain;
  if (tr->checkpoint[0] && tr->lastcheckpoint != tr->epoch) PetscCall(TrainerSaveCheckpoint(tr, tr->checkpoint));
  PetscCall(TrainerEndTrain_Private(tr));
  PetscFunctionReturn(0);
}

/*@
  TrainerGetTaoIterations - the number of TAO iterations of the last TrainerTrain() in full-batch mode

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameter:
. its - the iterations TAO took (one per epoch; fewer if it converged or stopped early), or -1 in mini-batch mode,
        where every mini-batch is one iteration, and before any full-batch training

  Level: intermediate

.seealso: `TrainerTrain()`, `TrainerGetResults()`, `TrainerGetTao()`
@*/
PetscErrorCode TrainerGetTaoIterations(Trainer tr, PetscInt *its)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidIntPointer(its, 2);
  *its = tr->minibatch ? -1 : tr->taoits;
  PetscFunctionReturn(0);
}
