/* Trainer: lifecycle, options, viewing. */
#include <petnet/private/trainerimpl.h>
#include <petsc/private/taoimpl.h> /* max_it_changed: did the user set -tao_max_it? */
#include <petnetoptim.h>
#include <stdlib.h>

const char *const TrainerModes[] = {"auto", "minibatch", "fullbatch", "TrainerMode", "TRAINER_MODE_", NULL};

/*@
  TrainerCreate - creates a Trainer, the driver that trains a Net on a Dataset by minimising a Loss with a TAO solver

  Collective

  Input Parameter:
. comm - the communicator of the Trainer and of its Tao

  Output Parameter:
. trainer - the new Trainer: no Net, Loss or Datasets yet; a Tao of type adam; 10 epochs, the Dataset's batch size,
            evaluation chunks of 1000 samples, mode auto, a progress line per epoch and one every 10 s within an
            epoch, no early stopping, divergence factor 1e3, no checkpoint

  Notes:
  Give it a Net (TrainerSetNet()), a Loss (TrainerSetLoss()) and a training Dataset, optionally an evaluation Dataset
  (TrainerSetDatasets()); read the options with TrainerSetFromOptions(); then TrainerTrain() (which calls
  TrainerSetUp()) and TrainerGetResults(). Initializes the Trainer package (TrainerInitializePackage()) if needed.

  Level: beginner

.seealso: `TrainerSetNet()`, `TrainerSetLoss()`, `TrainerSetDatasets()`, `TrainerSetFromOptions()`, `TrainerTrain()`,
          `TrainerGetTao()`, `TrainerDestroy()`
@*/
PetscErrorCode TrainerCreate(MPI_Comm comm, Trainer *trainer)
{
  Trainer tr;

  PetscFunctionBegin;
  PetscValidPointer(trainer, 2);
  PetscCall(TrainerInitializePackage());
  PetscCall(PetscHeaderCreate(tr, TRAINER_CLASSID, "Trainer", "Training driver", "Trainer", comm, TrainerDestroy, TrainerView));
  tr->epochs           = 10;
  tr->batchsize        = 0; /* keep the Dataset's */
  tr->evalbatchsize    = 1000;
  tr->taoits           = -1;
  tr->newtonsteps      = 1;
  tr->monitordefault   = PETSC_TRUE;
  tr->progressinterval = 10.0;
  tr->patience         = 0;
  tr->besttestloss     = PETSC_MAX_REAL;
  tr->lastcheckpoint   = -1;
  tr->failafter        = -1;
  tr->failstep         = -1;
  tr->testloss         = PETSC_MAX_REAL;
  tr->testacc          = -1;
  tr->divergencefactor = 1e3;
  tr->besttrainloss    = PETSC_MAX_REAL;
  tr->sharpnesssamples = 512;
  PetscCall(PetscStrncpy(tr->gnuplot, "gnuplot", sizeof(tr->gnuplot)));
  PetscCall(TaoCreate(comm, &tr->tao));
  PetscCall(TaoSetType(tr->tao, TAOADAM));
  PetscCall(PetscObjectChangeTypeName((PetscObject)tr, "default"));
  *trainer = tr;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetNet - sets the Net to train

  Logically collective

  Input Parameters:
+ tr  - the Trainer
- net - the Net; the Trainer takes a reference to it (destroy yours when you no longer need it)

  Notes:
  Releases the Net set before, if any. Set it before TrainerSetUp(), which runs once: it gives the Net the training
  data's sample shape when the Net has no input shape, sets the Net up and hands its parameters to TAO. The Net keeps
  its own options prefix (NetSetOptionsPrefix()).

  Level: beginner

.seealso: `TrainerGetNet()`, `TrainerSetLoss()`, `TrainerSetDatasets()`, `TrainerSetUp()`, `NetCreate()`
@*/
PetscErrorCode TrainerSetNet(Trainer tr, Net net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscCall(PetscObjectReference((PetscObject)net));
  PetscCall(NetDestroy(&tr->net));
  tr->net = net;
  PetscFunctionReturn(0);
}

/*@
  TrainerGetNet - gets the Net the Trainer trains

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameter:
. net - the Net (borrowed: no reference is taken, do not destroy it), or NULL if none was set

  Level: beginner

.seealso: `TrainerSetNet()`, `TrainerGetTao()`
@*/
PetscErrorCode TrainerGetNet(Trainer tr, Net *net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  *net = tr->net;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetLoss - sets the Loss that training minimises and evaluation reports

  Logically collective

  Input Parameters:
+ tr   - the Trainer
- loss - the Loss; the Trainer takes a reference to it (destroy yours when you no longer need it)

  Notes:
  Releases the Loss set before, if any. Set it before TrainerSetUp(), which runs once and sets the Loss up. The Loss
  keeps its own options prefix (LossSetOptionsPrefix()).

  Level: beginner

.seealso: `TrainerSetNet()`, `TrainerSetDatasets()`, `TrainerSetUp()`, `LossCreate()`
@*/
PetscErrorCode TrainerSetLoss(Trainer tr, Loss loss)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 2);
  PetscCall(PetscObjectReference((PetscObject)loss));
  PetscCall(LossDestroy(&tr->loss));
  tr->loss = loss;
  PetscFunctionReturn(0);
}

/* A Dataset given to the Trainer without an options prefix gets the Trainer's prefix followed by "train_" (or
   "test_"), so that -train_dataset_limit and the like reach it; the Trainer then reads its options in
   TrainerSetFromOptions(). A Dataset the Trainer named follows later changes of the Trainer's prefix; one with the
   user's own prefix is left alone. */
static PetscErrorCode TrainerPrefixDataset_Private(Trainer tr, Dataset ds, const char role[], PetscBool *named)
{
  const char *prefix;
  char        full[256];

  PetscFunctionBegin;
  if (!ds) PetscFunctionReturn(0);
  PetscCall(DatasetGetOptionsPrefix(ds, &prefix));
  if (prefix && prefix[0] && !*named) PetscFunctionReturn(0);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)tr, &prefix));
  PetscCall(PetscSNPrintf(full, sizeof(full), "%s%s", prefix ? prefix : "", role));
  PetscCall(DatasetSetOptionsPrefix(ds, full));
  *named = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetDatasets - the training set and the evaluation (test or validation) set.

  Logically collective

  Input Parameters:
+ tr    - the Trainer
. train - the training set
- test  - the evaluation set, or NULL

  Notes:
  A Dataset without an options prefix gets the Trainer's prefix followed by "train_" (or "test_"), and
  TrainerSetFromOptions() reads its options: -train_dataset_limit 1000, -test_dataset_limit 500, ... A Dataset with
  its own prefix keeps it.

  Level: beginner

.seealso: `TrainerSetFromOptions()`, `DatasetSetOptionsPrefix()`, `DatasetSetFromOptions()`
@*/
PetscErrorCode TrainerSetDatasets(Trainer tr, Dataset train, Dataset test)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(train, DATASET_CLASSID, 2);
  if (test) PetscValidHeaderSpecific(test, DATASET_CLASSID, 3);
  PetscCall(PetscObjectReference((PetscObject)train));
  if (test) PetscCall(PetscObjectReference((PetscObject)test));
  PetscCall(DatasetDestroy(&tr->train));
  PetscCall(DatasetDestroy(&tr->test));
  tr->train         = train;
  tr->test          = test;
  tr->trainprefixed = PETSC_FALSE;
  tr->testprefixed  = PETSC_FALSE;
  PetscCall(TrainerPrefixDataset_Private(tr, tr->train, "train_", &tr->trainprefixed));
  if (tr->test != tr->train) PetscCall(TrainerPrefixDataset_Private(tr, tr->test, "test_", &tr->testprefixed));
  PetscFunctionReturn(0);
}

/*@C
  TrainerSetOptionsPrefix - sets the prefix of the Trainer's options, and passes it to its Tao (as a KSP does to its
  PC) and to the Datasets the Trainer named: with prefix "a_", -a_trainer_epochs, -a_tao_type, -a_train_dataset_limit.

  Logically collective

  Input Parameters:
+ tr     - the Trainer
- prefix - the prefix (NULL or "" for none: -trainer_epochs, -tao_type, -train_dataset_limit)

  Notes:
  The Net and the Loss keep their own prefixes (NetSetOptionsPrefix(), LossSetOptionsPrefix()).

  Level: intermediate

.seealso: `TrainerAppendOptionsPrefix()`, `TrainerGetOptionsPrefix()`, `TrainerSetDatasets()`, `TaoSetOptionsPrefix()`
@*/
PetscErrorCode TrainerSetOptionsPrefix(Trainer tr, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)tr, prefix));
  PetscCall(TaoSetOptionsPrefix(tr->tao, prefix));
  if (tr->trainprefixed) PetscCall(TrainerPrefixDataset_Private(tr, tr->train, "train_", &tr->trainprefixed));
  if (tr->testprefixed) PetscCall(TrainerPrefixDataset_Private(tr, tr->test, "test_", &tr->testprefixed));
  PetscFunctionReturn(0);
}

/*@C
  TrainerAppendOptionsPrefix - appends to the prefix of the Trainer's options, and to that of its Tao and of the
  Datasets the Trainer named.

  Logically collective

  Input Parameters:
+ tr     - the Trainer
- prefix - the text to append

  Level: intermediate

.seealso: `TrainerSetOptionsPrefix()`, `TrainerGetOptionsPrefix()`
@*/
PetscErrorCode TrainerAppendOptionsPrefix(Trainer tr, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)tr, prefix));
  PetscCall(TaoAppendOptionsPrefix(tr->tao, prefix));
  if (tr->trainprefixed) PetscCall(TrainerPrefixDataset_Private(tr, tr->train, "train_", &tr->trainprefixed));
  if (tr->testprefixed) PetscCall(TrainerPrefixDataset_Private(tr, tr->test, "test_", &tr->testprefixed));
  PetscFunctionReturn(0);
}

/*@C
  TrainerGetOptionsPrefix - the prefix of the Trainer's options.

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameter:
. prefix - the prefix (NULL when none was set); owned by the Trainer

  Level: intermediate

.seealso: `TrainerSetOptionsPrefix()`, `TrainerAppendOptionsPrefix()`
@*/
PetscErrorCode TrainerGetOptionsPrefix(Trainer tr, const char *prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidPointer(prefix, 2);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)tr, prefix));
  PetscFunctionReturn(0);
}

/*@
  TrainerGetTao - gets the TAO solver that minimises the training loss: set its type and options with TaoSetType()/-tao_type

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameter:
. tao - the Tao (borrowed: no reference is taken, do not destroy it), created by TrainerCreate() with type adam

  Notes:
  The Tao shares the Trainer's options prefix (TrainerSetOptionsPrefix()), and TrainerSetFromOptions() calls
  TaoSetFromOptions() on it. TrainerSetUp() refuses the TAO types that need a Hessian or solve other problems, and in
  mode auto chooses mini-batch mode for PetNet's sgd, adam, adamw, rmsprop and kfac, full-batch mode for the others.

  Level: intermediate

.seealso: `TrainerCreate()`, `TrainerSetFromOptions()`, `TrainerSetUp()`, `TaoSetType()`, `TrainerGetNet()`
@*/
PetscErrorCode TrainerGetTao(Trainer tr, Tao *tao)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  *tao = tr->tao;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetEpochs - sets the number of epochs (passes over the training set) that TrainerTrain() runs

  Logically collective

  Input Parameters:
+ tr     - the Trainer
- epochs - the total number of epochs, >= 0 (default 10); 0 makes TrainerTrain() only set up and evaluate

  Options Database Key:
. -trainer_epochs <n> - the same, read by TrainerSetFromOptions()

  Notes:
  The count includes the epochs completed before a restart (-trainer_restart): TrainerTrain() runs only the remaining
  ones. In full-batch mode one epoch is one TAO iteration, and -tao_max_it (TaoSetMaximumIterations()), when the user
  gives it, replaces this count at TrainerSetUp(). In mini-batch mode TrainerSetUp() also makes epochs x batches per
  epoch the horizon of the learning-rate schedules (PetNetTaoSetLRHorizon()): set the count before it.

  Level: beginner

.seealso: `TrainerSetFromOptions()`, `TrainerTrain()`, `TrainerGetResults()`, `TrainerSetUp()`
@*/
PetscErrorCode TrainerSetEpochs(Trainer tr, PetscInt epochs)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCheck(epochs >= 0, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "Number of epochs must be >= 0, not %" PetscInt_FMT, epochs);
  tr->epochs = epochs;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetFromOptions - reads the Trainer's options, those of the Datasets it named and those of its Tao

  Collective on tr

  Input Parameter:
. tr - the Trainer

  Options Database Keys:
+ -trainer_epochs <n>                  - epochs (0: set up, evaluate and stop); in full-batch mode one epoch is one TAO
                                         iteration, and -tao_max_it, when given, overrides it
. -trainer_batch_size <b>              - global mini-batch size (0: the Dataset's)
. -trainer_eval_batch_size <n>         - samples per chunk of evaluations and full-batch objectives
. -trainer_mode <auto,minibatch,fullbatch> - how TAO sees the training loss
. -trainer_patience <p>                - early stopping after p epochs without a better test loss (0: never)
. -trainer_divergence_factor <f>       - stop when an epoch's training loss exceeds f times the best so far (0: only NaN/Inf)
. -trainer_checkpoint <file>           - checkpoint file, written atomically
. -trainer_checkpoint_every <N>        - every N epochs (0: only at the end)
. -trainer_restart <file>              - resume from this checkpoint
. -trainer_fail_after_epoch <N>       - testing aid: once epoch N (and its checkpoint) has ended on every rank, a rank
                                         kills itself with SIGKILL, as a failure would (-1: never; share/petnet-run
                                         restarts such a job)
. -trainer_fail_after_step <N>        - testing aid: once the run's N-th mini-batch update (counted from the first
                                         epoch's first batch) is applied, inside an epoch, a rank kills itself with
                                         SIGKILL (-1: never; N must not end an epoch; a restarted run does not fail)
. -trainer_fail_rank <R>               - ... that rank (default 0)
. -trainer_monitor [ascii,csv,draw][:file] - monitors at the end of every epoch (default: ascii, the progress line on
                                         standard output): ascii:file, csv[:file] or ascii:file:ascii_csv (one row of
                                         metrics per epoch), draw (PetscDrawLG curves), a comma-separated list of them
                                         (ascii,csv:metrics.csv), or 0 (false, no, off) for none (TrainerMonitorSet())
. -trainer_monitor_plot <file.png>     - the training curves as a PNG at the end of TrainerTrain() (TrainerPlotCurves())
. -trainer_monitor_plot_gnuplot <prog> - the gnuplot program that draws it (default gnuplot)
. -trainer_progress_interval <s>       - seconds between progress lines within an epoch (0: never)
. -trainer_monitor_sharpness <N>       - every N epochs, the largest eigenvalue of the loss's Hessian (0: never)
. -trainer_sharpness_samples <n>       - ... over the first n training samples (default 512); -trainer_spectrum_* set it up
. -trainer_hessian <gn,exact>          - the curvature Newton-type TAO types (nls, ntr, ntl, bnls, bntr, bntl) get:
                                         Gauss-Newton (default) or the exact Hessian
. -trainer_hessian_samples <S>         - the Hessian over S training samples drawn afresh at every outer iteration
                                         (Hessian-free Newton-CG; 0: all samples)
. -trainer_hessian_chunk <n>           - local samples per pass of a Hessian product (0: all at once)
. -trainer_hessian_seed <s>            - seed of those draws
. -trainer_hessian_damping <lambda>    - Newton steps solve (H + lambda I) p = -g (Tikhonov damping; default 0)
. -trainer_newton_steps <k>            - mini-batch mode with a Newton-type TAO type: each batch is a TaoSolve() of k
                                         iterations on that batch's loss (sub-sampled Newton-CG; default 1)
- -trainer_hessian_pc <default,kfac>   - kfac: precondition the Newton-CG solves with K-FAC, its statistics taken from
                                         the Hessian's samples at every outer iteration (PetNetPCSetKFAC())

  Notes:
  Counts are read in 64-bit: a negative count or one beyond the PetscInt range is an error naming the option.

  Level: beginner

.seealso: `TrainerSetUp()`, `TrainerTrain()`, `TrainerSetEpochs()`, `TrainerSetOptionsPrefix()`
@*/
PetscErrorCode TrainerSetFromOptions(Trainer tr)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)tr);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)tr);
  PetscCall(PetNetOptionsBoundedInt("-trainer_epochs", "Epochs to train (0: set up, evaluate and stop); full batch: TAO iterations", "TrainerSetEpochs", tr->epochs, &tr->epochs, NULL, 0));
  PetscCall(PetNetOptionsBoundedInt("-trainer_batch_size", "Global mini-batch size (sets the training Dataset's batch size; 0: the Dataset's)", "DatasetSetBatchSize", tr->batchsize, &tr->batchsize, NULL, 0));
  PetscCall(PetNetOptionsBoundedInt("-trainer_eval_batch_size", "Samples per chunk in evaluation and full-batch objectives", "TrainerEvaluate", tr->evalbatchsize, &tr->evalbatchsize, NULL, 1));
  PetscCall(PetscOptionsEnum("-trainer_mode", "minibatch (PetNet's stochastic TAO types), fullbatch (any TAO type), or auto", "TrainerSetFromOptions", TrainerModes, (PetscEnum)tr->mode, (PetscEnum *)&tr->mode, NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_patience", "Early stopping: stop after this many epochs without a better test loss (0: never)", "TrainerTrain", tr->patience, &tr->patience, NULL, 0));
  PetscCall(PetscOptionsReal("-trainer_divergence_factor", "Stop with an error when an epoch's training loss exceeds this multiple of the best so far (0: only NaN/Inf)", "TrainerTrain", tr->divergencefactor, &tr->divergencefactor, NULL));
  PetscCheck(tr->divergencefactor == 0 || tr->divergencefactor > 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-trainer_divergence_factor %g: give a factor > 1 (e.g. 1e3), or 0 to stop only on NaN or Inf", (double)tr->divergencefactor);
  PetscCall(PetscOptionsString("-trainer_checkpoint", "Checkpoint file, written atomically", "TrainerSaveCheckpoint", tr->checkpoint, tr->checkpoint, sizeof(tr->checkpoint), NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_checkpoint_every", "Write the checkpoint every N epochs (0: only at the end)", "TrainerSaveCheckpoint", tr->checkpointevery, &tr->checkpointevery, NULL, 0));
  PetscCall(PetscOptionsString("-trainer_restart", "Resume from this checkpoint", "TrainerLoadCheckpoint", tr->restart, tr->restart, sizeof(tr->restart), NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_fail_after_epoch", "Testing aid: kill a rank with SIGKILL after epoch N (and its checkpoint) ends, as a failure would (-1: never)", "TrainerTrain", tr->failafter, &tr->failafter, NULL, -1));
  PetscCall(PetNetOptionsBoundedInt("-trainer_fail_after_step", "Testing aid: kill a rank with SIGKILL once the run's N-th mini-batch update is applied, inside an epoch (-1: never; not in a restarted run)", "TrainerTrain", tr->failstep,
                                    &tr->failstep, NULL, -1));
  PetscCall(PetNetOptionsBoundedInt("-trainer_fail_rank", "Testing aid: the rank -trainer_fail_after_epoch or -trainer_fail_after_step kills", "TrainerTrain", tr->failrank, &tr->failrank, NULL, 0));
  {
    char      value[PETSC_MAX_PATH_LEN + 64] = "ascii", option[256];
    PetscBool set;

    PetscCall(PetscOptionsString("-trainer_monitor", "Monitors at the end of every epoch: ascii[:file] (progress line), csv[:file] or ascii:file:ascii_csv (metrics), draw (curves), a comma-separated list, or 0", "TrainerMonitorSet", value, value,
                                 sizeof(value), &set));
    PetscCall(PetscSNPrintf(option, sizeof(option), "-%strainer_monitor", PetscOptionsObject->prefix ? PetscOptionsObject->prefix : ""));
    if (set) PetscCall(TrainerMonitorSetFromOptions_Private(tr, option, value));
  }
  PetscCall(PetscOptionsString("-trainer_monitor_plot", "Write the training curves to this PNG file at the end of training (gnuplot)", "TrainerPlotCurves", tr->plot, tr->plot, sizeof(tr->plot), NULL));
  PetscCall(PetscOptionsString("-trainer_monitor_plot_gnuplot", "The gnuplot program of -trainer_monitor_plot", "TrainerPlotCurves", tr->gnuplot, tr->gnuplot, sizeof(tr->gnuplot), NULL));
  PetscCall(PetscOptionsReal("-trainer_progress_interval", "Seconds between progress lines within an epoch (0: never)", "TrainerTrain", tr->progressinterval, &tr->progressinterval, NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_monitor_sharpness", "Print the largest Hessian eigenvalue every N epochs (0: never; -trainer_spectrum_* set its Spectrum)", "TrainerTrain", tr->sharpnessevery, &tr->sharpnessevery, NULL, 0));
  PetscCall(PetNetOptionsBoundedInt("-trainer_sharpness_samples", "Training samples of the sharpness monitor's Hessian", "TrainerTrain", tr->sharpnesssamples, &tr->sharpnesssamples, NULL, 1));
  PetscCheck(tr->progressinterval >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-trainer_progress_interval %g: give a number of seconds >= 0 (0: no progress lines within an epoch)", (double)tr->progressinterval);
  PetscCall(PetscOptionsEnum("-trainer_hessian", "Curvature for Newton-type TAO types (nls, ntr, ...): gn (Gauss-Newton) or exact", "LossCreateNetHessian", LossHessianTypes, (PetscEnum)tr->hessiantype, (PetscEnum *)&tr->hessiantype, NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_hessian_samples", "Hessian over this many training samples, drawn afresh at every outer iteration (0: all)", "TrainerSetFromOptions", tr->hessiansamples, &tr->hessiansamples, NULL, 0));
  PetscCall(PetNetOptionsBoundedInt("-trainer_hessian_chunk", "Local samples per pass of a Hessian product (0: all at once)", "LossNetHessianSetChunkSize", tr->hessianchunk, &tr->hessianchunk, NULL, 0));
  PetscCall(PetscOptionsReal("-trainer_hessian_damping", "Damping lambda of the Hessian: Newton steps solve (H + lambda I) p = -g", "LossNetHessianSetDamping", tr->hessiandamping, &tr->hessiandamping, NULL));
  PetscCheck(tr->hessiandamping >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-trainer_hessian_damping %g: give a damping >= 0 (e.g. 1e-3)", (double)tr->hessiandamping);
  PetscCall(PetNetOptionsBoundedInt("-trainer_newton_steps", "Mini-batch mode with a Newton-type TAO type: TAO iterations per batch", "TrainerTrain", tr->newtonsteps, &tr->newtonsteps, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-trainer_hessian_seed", "Seed of the Hessian's sub-samples", "TrainerSetFromOptions", tr->hessianseed, &tr->hessianseed, NULL, 0));
  {
    const char *const pcs[] = {"default", "kfac"};
    PetscInt          pc    = tr->hessiankfac ? 1 : 0;

    PetscCall(PetscOptionsEList("-trainer_hessian_pc", "Preconditioner of the Newton-CG solves: the KSP's own (default) or K-FAC from the Hessian's samples", "PetNetPCSetKFAC", pcs, 2, pcs[pc], &pc, NULL));
    tr->hessiankfac = pc == 1 ? PETSC_TRUE : PETSC_FALSE;
  }
  PetscCall(TrainerPopulationSetFromOptions_Private(tr, PetscOptionsObject)); /* -trainer_population_*, -trainer_tournament_* */
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)tr, PetscOptionsObject));
  PetscOptionsEnd();
  /* the Datasets the Trainer named (TrainerSetDatasets()) read their prefixed options here; the others were
     configured by their owner */
  if (tr->trainprefixed) PetscCall(DatasetSetFromOptions(tr->train));
  if (tr->testprefixed) PetscCall(DatasetSetFromOptions(tr->test));
  PetscCall(TaoSetFromOptions(tr->tao));
  PetscFunctionReturn(0);
}

/* The TAO types that train a Net: PetNet's stochastic ones, TAO's own that need only the objective and gradient, and
   the Newton-type ones, which get the curvature operator of -trainer_hessian */
#define TRAINER_TAO_TYPES_THAT_WORK "sgd, adam, adamw, rmsprop, kfac (mini-batch) or lmvm, blmvm, bqnls, bqnkls, bqnktr, bqnktl, cg, bncg, owlqn, bmrm, nm, nls, ntr, ntl, bnls, bntr, bntl (full batch)"

/* Refuses the TAO types that cannot minimise the training loss with what the Trainer gives TAO; notes the Newton ones */
static PetscErrorCode TrainerCheckTaoType_Private(Trainer tr)
{
  TaoType   type;
  PetscBool hessian, other;

  PetscFunctionBegin;
  PetscCall(TaoGetType(tr->tao, &type));
  /* Newton and trust-region types call the Hessian (TaoSetHessian()): the Trainer gives them -trainer_hessian's */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &tr->needhessian, TAONLS, TAONTR, TAONTL, TAOBNLS, TAOBNTR, TAOBNTL, ""));
  /* these need a Hessian as an assembled matrix (sub-matrices of it) or solve quadratic, constrained or
     complementarity problems */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &hessian, TAOTRON, TAOGPCG, TAOBQPIP, TAOIPM, TAOPDIPM, ""));
  PetscCheck(!hessian, PetscObjectComm((PetscObject)tr), PETSC_ERR_SUP, "TAO type %s needs an assembled Hessian or solves a quadratic or constrained problem, and the Trainer's Hessian is a matrix-free operator: use -tao_type %s", type,
             TRAINER_TAO_TYPES_THAT_WORK);
  /* these solve least-squares (residual), constrained or complementarity problems */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &other, TAOPOUNDERS, TAOBRGN, TAOLCL, TAOSSILS, TAOSSFLS, TAOASILS, TAOASFLS, TAOADMM, TAOALMM, ""));
  PetscCheck(!other, PetscObjectComm((PetscObject)tr), PETSC_ERR_SUP, "TAO type %s solves least-squares, constrained or complementarity problems, not the training loss: use -tao_type %s", type, TRAINER_TAO_TYPES_THAT_WORK);
  PetscFunctionReturn(0);
}

/* -trainer_view_net TYPE:FILE[:FORMAT[:MODE]] is used after training: a FILE that cannot be written is reported at
   set-up, naming the option, rather than after hours of training */
static PetscErrorCode TrainerViewNetCheck_Private(Trainer tr)
{
  char      value[PETSC_MAX_PATH_LEN + 64], option[256];
  char     *file, *end;
  PetscBool flg;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(((PetscObject)tr)->options, ((PetscObject)tr)->prefix, "-trainer_view_net", value, sizeof(value), &flg));
  if (!flg) PetscFunctionReturn(0);
  file = strchr(value, ':');
  if (!file || !file[1]) PetscFunctionReturn(0); /* standard output */
  file++;
  end = strchr(file, ':');
  if (end) *end = 0;
  if (!file[0]) PetscFunctionReturn(0);
  PetscCall(PetscSNPrintf(option, sizeof(option), "-%strainer_view_net", ((PetscObject)tr)->prefix ? ((PetscObject)tr)->prefix : ""));
  PetscCall(PetNetCheckWritableFile(PetscObjectComm((PetscObject)tr), file, option));
  PetscFunctionReturn(0);
}

/*@
  TrainerSetUp - checks that the pieces fit (data shape vs Net input, every label a class of the outputs), chooses mini-batch or full-batch
  mode from the TAO type, and connects the objective to TAO.

  Collective on tr

  Input Parameter:
. tr - the Trainer, with a Net, a Loss and a training Dataset

  Notes:
  Runs once. In full-batch mode one epoch is one TAO iteration: -trainer_epochs becomes TAO's budget unless the user
  gave one (-tao_max_it, TaoSetMaximumIterations()), which then counts the epochs. A -trainer_checkpoint file is
  checked here (a writable directory, a regular file or none; stale temporary files of dead runs removed), so that
  an unwritable checkpoint is reported before any training. -trainer_restart is loaded last.

  The input normalisation: a training Dataset that sets none takes the one the Net records (a loaded model's); the
  Net then records the training Dataset's (NetSetInputNormalization(), saved with the model), and a test Dataset
  that sets none takes it too. A Dataset that sets a different one keeps it, with a warning.

  Level: intermediate

.seealso: `TrainerSetFromOptions()`, `TrainerTrain()`, `TrainerLoadCheckpoint()`, `PetNetCheckWritableFile()`, `NetSetInputNormalization()`, `TrainerPredict()`
@*/
PetscErrorCode TrainerSetUp(Trainer tr)
{
  PetNetShape out;
  PetscInt    outsize;
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  Vec         theta;
  PetscBool   stochastic;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  if (tr->setupcalled) PetscFunctionReturn(0);
  PetscCheck(tr->net && tr->loss && tr->train, comm, PETSC_ERR_ORDER, "Give the Trainer a Net, a Loss and a training Dataset before TrainerSetUp()");
  PetscCall(TrainerCheckTaoType_Private(tr));
  if (tr->batchsize) PetscCall(DatasetSetBatchSize(tr->train, tr->batchsize));
  /* the input normalisation: a Net loaded with one gives it to a training Dataset that sets none; the Net then records
     the training Dataset's (saved with it), which a test Dataset that sets none takes too */
  PetscCall(TrainerMatchNormalization_Private(tr, tr->train));
  {
    PetscReal scale, mean, std;

    PetscCall(DatasetGetNormalization(tr->train, &scale, &mean, &std));
    PetscCall(NetSetInputNormalization(tr->net, scale, mean, std));
  }
  if (tr->test) PetscCall(TrainerMatchNormalization_Private(tr, tr->test));
  PetscCall(DatasetSetUp(tr->train));
  if (tr->population) PetscCall(TrainerPopulationSetUpData_Private(tr)); /* the trainer's shard and tournament set */
  if (tr->test) PetscCall(DatasetSetUp(tr->test));
  PetscCall(TrainerCheckNormalization_Private(tr, tr->train, NULL, "training", PETSC_FALSE)); /* a loaded Net's, if it set none */
  if (tr->test) PetscCall(TrainerCheckNormalization_Private(tr, tr->test, tr->train, "test", PETSC_FALSE));
  for (PetscInt k = 0; k < 2; k++) {
    Dataset   ds      = k ? tr->test : tr->train;
    PetscBool targets = PETSC_TRUE;

    if (ds) PetscCall(DatasetHasTargets(ds, &targets));
    PetscCheck(targets, comm, PETSC_ERR_ARG_WRONG, "The %s Dataset has no targets (-%sdataset_hdf5_targets none): a Dataset of inputs only can be predicted (bin/predict, TrainerPredict()), not trained on or evaluated", k ? "test" : "training",
               ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "");
  }
  if (tr->test && tr->test != tr->train) { /* the test set is evaluated as stored (DatasetGetAll()): augmenting it would do nothing */
    PetscInt  shift;
    PetscBool flip;

    PetscCall(DatasetGetAugmentation(tr->test, &shift, &flip));
    PetscCheck(!shift && !flip, comm, PETSC_ERR_ARG_INCOMP,
               "The test Dataset asks for augmentation (shifts up to %" PetscInt_FMT
               " pixels, %s), but the Trainer evaluates the test set as stored: give -%sdataset_augment_shift and -%sdataset_augment_flip to the training set only (-train_dataset_augment_shift 2 -train_dataset_augment_flip)",
               shift, flip ? "flips" : "no flips", ((PetscObject)tr->test)->prefix ? ((PetscObject)tr->test)->prefix : "", ((PetscObject)tr->test)->prefix ? ((PetscObject)tr->test)->prefix : "");
  }
  PetscCall(TrainerCheckSampleShape_Private(tr, tr->train, "training", "fix -net_input_shape or the data"));
  if (tr->test) PetscCall(TrainerCheckSampleShape_Private(tr, tr->test, "test", "give the test data the training data's shape"));
  PetscCall(NetSetUp(tr->net));
  PetscCall(NetGetOutputShape(tr->net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(LossSetUp(tr->loss));
  PetscCall(TrainerCheckTargetSize_Private(tr, tr->train, "training"));
  if (tr->test) PetscCall(TrainerCheckTargetSize_Private(tr, tr->test, "test"));
  {
    PetscBool isce;

    PetscCall(PetscObjectTypeCompare((PetscObject)tr->loss, LOSSCROSSENTROPY, &isce));
    if (isce) PetscCall(DatasetCheckLabels(tr->train, outsize)); /* names the labels' file and the bad sample in it */
    if (isce && tr->test) PetscCall(DatasetCheckLabels(tr->test, outsize));
  }
  /* PetNet's stochastic types take one mini-batch per iteration; TAO's own types need a deterministic objective */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &stochastic, "sgd", "adam", "adamw", "rmsprop", "kfac", ""));
  if (tr->mode == TRAINER_MODE_AUTO)
    tr->minibatch = stochastic;
  else
    tr->minibatch = tr->mode == TRAINER_MODE_MINIBATCH ? PETSC_TRUE : PETSC_FALSE;
  if (tr->minibatch) { /* a graph layer's samples are the nodes of its operator, all of them, in its row order */
    PetscInt nl;

    PetscCall(NetGetNumLayers(tr->net, &nl));
    for (PetscInt k = 0; k < nl; k++) {
      Layer layer;
      PetscErrorCode (*graph)(Layer, Mat *) = NULL, (*mesh)(Layer, DM *) = NULL;
      char spec[256];

      PetscCall(NetGetLayer(tr->net, k, &layer));
      PetscCall(PetscObjectQueryFunction((PetscObject)layer, "LayerGraphGetOperator_C", &graph));
      PetscCall(PetscObjectQueryFunction((PetscObject)layer, "LayerMeshGetDM_C", &mesh)); /* mpnn: its nodes are a mesh's vertices */
      if (!graph && !mesh) continue;
      PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
      SETERRQ(comm, PETSC_ERR_SUP,
              "Layer %" PetscInt_FMT " of the Net (%s) is a graph layer: its samples are the nodes of its sparse operator (or the vertices of its mesh), all of them in the operator's row order (the mesh's global order), which shuffled mini-batches "
              "are not. Train it full batch (-trainer_mode fullbatch, or a TAO type such as "
              "lmvm; with the Dataset's samples in the operator's row order, split over the ranks like its rows, and -trainer_eval_batch_size at least the nodes of a rank), or in a loop of your own (examples/graphring.c)",
              k, spec);
    }
  }
  /* The optimizer's iterate. PetNet's stochastic types evaluate the objective only at their solution and update it in
     place, so their solution is the Net's parameter Vec itself: no copy into the Net per step. TAO's own types try
     other points (line searches) while the Net must keep the accepted one: they get a copy. */
  PetscCall(NetGetParameters(tr->net, &theta));
  if (stochastic) {
    PetscCall(PetscObjectReference((PetscObject)theta));
    tr->theta = theta;
  } else {
    PetscCall(VecDuplicate(theta, &tr->theta));
    PetscCall(VecCopy(theta, tr->theta));
  }
  PetscCall(TaoSetSolution(tr->tao, tr->theta));
  PetscCall(PetNetTaoKFACSetNet(tr->tao, tr->net)); /* kfac reads its curvature from the Net's passes; other types ignore it */
  if (tr->minibatch) {
    PetscCall(TaoSetObjectiveAndGradient(tr->tao, NULL, TrainerObjectiveMiniBatch_Private, tr));
    /* Newton-type types solve each batch's loss on its own (TrainerTrain()); the others draw a batch per iteration */
    if (!tr->needhessian) PetscCall(TaoSetUpdate(tr->tao, TrainerNextBatch_Private, tr));
  } else
    PetscCall(TaoSetObjectiveAndGradient(tr->tao, NULL, TrainerObjectiveFullBatch_Private, tr));
  PetscCall(DatasetGetNumBatches(tr->train, &tr->nbatches));
  if (tr->minibatch) {
    /* one TaoSolve per epoch: schedules (cosine) span the whole training, not one epoch */
    PetscInt64 steps = (PetscInt64)tr->epochs * tr->nbatches;

    PetscCheck(steps <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "-trainer_epochs %" PetscInt_FMT " x %" PetscInt_FMT " batches per epoch = %" PetscInt64_FMT " optimizer steps, more than %" PetscInt_FMT ": train fewer epochs or use larger batches (-trainer_batch_size)", tr->epochs, tr->nbatches,
               steps, (PetscInt)PETSC_MAX_INT);
    PetscCall(PetNetTaoSetLRHorizon(tr->tao, (PetscInt)steps));
  } else {
    /* full batch: one epoch is one TAO iteration, so -trainer_epochs is TAO's budget unless the user gave one
       (-tao_max_it or TaoSetMaximumIterations()), which then counts the epochs */
    tr->taomaxitset = tr->tao->max_it_changed;
    if (tr->taomaxitset && tr->epochs > 0 && tr->epochs != tr->tao->max_it) {
      PetscCall(PetscInfo(tr, "Full batch: -tao_max_it %" PetscInt_FMT " replaces -trainer_epochs %" PetscInt_FMT " (one epoch is one TAO iteration)\n", tr->tao->max_it, tr->epochs));
      tr->epochs = tr->tao->max_it;
    }
    /* the schedules span the whole training, not the TaoSolve of a restart's remaining epochs (its max_it) */
    PetscCall(PetNetTaoSetLRHorizon(tr->tao, tr->epochs));
    PetscCall(TaoSetMonitor(tr->tao, TrainerFullBatchMonitor_Private, tr, NULL));
  }
  PetscCheck(tr->needhessian || !tr->hessiankfac, comm, PETSC_ERR_ARG_INCOMP, "-trainer_hessian_pc kfac preconditions the Newton-type TAO types (nls, ntr, ntl, bnls, bntr, bntl); for K-FAC as the optimizer give -tao_type kfac");
  if (tr->needhessian) {
    TaoType type;

    PetscCall(TaoGetType(tr->tao, &type));
    PetscCall(TrainerSetUpHessian_Private(tr));
  }
  if (tr->checkpoint[0]) {
    /* a checkpoint that cannot be written is reported now, not after the first epoch */
    PetscCall(PetNetRemoveStaleTemporaryFiles(comm, tr->checkpoint));
    PetscCall(PetNetCheckWritableFile(comm, tr->checkpoint, "-trainer_checkpoint"));
  }
  PetscCall(TrainerPlotCheck_Private(tr));    /* a plot that cannot be written is reported now, not after training */
  PetscCall(TrainerViewNetCheck_Private(tr)); /* and so is -trainer_view_net's file */
  if (tr->population) PetscCall(TrainerPopulationSetUp_Private(tr));
  PetscCall(TrainerMonitorSetUp_Private(tr));
  tr->setupcalled = PETSC_TRUE;
  if (tr->restart[0]) {
    PetscCall(TrainerLoadCheckpoint(tr, tr->restart));
    if (tr->population) PetscCall(TrainerPopulationRestart_Private(tr)); /* every trainer at the same epoch, the tournaments counted */
  }
  PetscCall(PetscObjectViewFromOptions((PetscObject)tr, NULL, "-trainer_view_pre"));
  PetscFunctionReturn(0);
}

/*@
  TrainerView - prints the Trainer's settings: TAO type, mode, epochs (and how many are completed), batches per epoch,
  divergence test, early stopping and checkpoint; after TrainerTrain() the final state (epochs run, final losses,
  accuracy and learning rate, TAO iterations); then the views of its Net, Loss, Datasets and Tao (with TAO's
  iteration count and convergence reason after training)

  Collective

  Input Parameters:
+ tr     - the Trainer
- viewer - an ASCII viewer, or NULL for standard output on the Trainer's communicator; other viewer types print nothing

  Options Database Keys:
+ -trainer_view [viewer]     - view at the end of TrainerTrain(), as PETSc views a solver at the end of a solve
- -trainer_view_pre [viewer] - view at the end of TrainerSetUp(), before training

  Notes:
  The mode and the batches per epoch are resolved by TrainerSetUp(): view the Trainer after it.

  Level: beginner

.seealso: `TrainerSetUp()`, `TrainerSetFromOptions()`, `NetView()`, `LossView()`, `DatasetView()`, `TaoView()`
@*/
PetscErrorCode TrainerView(Trainer tr, PetscViewer viewer)
{
  PetscBool isascii;
  TaoType   type;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)tr), &viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)tr, viewer));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(TaoGetType(tr->tao, &type));
  PetscCall(PetscViewerASCIIPrintf(viewer, "optimizer %s, %s mode, epochs %" PetscInt_FMT " (completed %" PetscInt_FMT ")\n", type, tr->minibatch ? "minibatch" : "fullbatch", tr->epochs, tr->epoch));
  if (tr->minibatch)
    PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " batches per epoch\n", tr->nbatches));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "one epoch is one TAO iteration\n"));
  if (tr->divergencefactor > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer, "divergence: an epoch's training loss above %g times the best so far, or NaN/Inf\n", (double)tr->divergencefactor));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "divergence: a NaN or Inf loss\n"));
  if (tr->patience) PetscCall(PetscViewerASCIIPrintf(viewer, "early stopping after %" PetscInt_FMT " epochs without improvement of the test loss\n", tr->patience));
  if (tr->checkpoint[0]) PetscCall(PetscViewerASCIIPrintf(viewer, "checkpoint %s every %" PetscInt_FMT " epochs\n", tr->checkpoint, tr->checkpointevery));
  PetscCall(TrainerPopulationView_Private(tr, viewer));
  if (tr->nhistory) { /* after TrainerTrain(): the final state, each line printed at once (the viewer indents every call) */
    const TrainerMetrics *m = &tr->metrics;
    char                  line[256], part[128];

    PetscCall(PetscViewerASCIIPrintf(viewer, "trained: %" PetscInt_FMT " epochs completed (%" PetscInt_FMT " monitored), %.2f s\n", tr->epoch, tr->nhistory, (double)tr->traintime));
    PetscCall(PetscSNPrintf(line, sizeof(line), "final train_loss %.6f", (double)tr->trainloss));
    if (tr->test) {
      PetscCall(PetscSNPrintf(part, sizeof(part), "  test_loss %.6f  test_acc %.4f", (double)tr->testloss, (double)tr->testacc));
      PetscCall(PetscStrlcat(line, part, sizeof(line)));
    }
    if (!PetscIsNanReal(m->learning_rate)) {
      PetscCall(PetscSNPrintf(part, sizeof(part), "  learning_rate %g", (double)m->learning_rate));
      PetscCall(PetscStrlcat(line, part, sizeof(line)));
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s\n", line));
    if (!tr->minibatch && tr->taoits >= 0) PetscCall(PetscViewerASCIIPrintf(viewer, "full batch: %" PetscInt_FMT " TAO iterations in the last TrainerTrain()\n", tr->taoits));
  }
  if (tr->nmonitors) PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " monitor%s\n", tr->nmonitors, tr->nmonitors > 1 ? "s" : ""));
  if (tr->plot[0]) PetscCall(PetscViewerASCIIPrintf(viewer, "training curves to %s (gnuplot: %s)\n", tr->plot, tr->gnuplot));
  if (tr->net) PetscCall(NetView(tr->net, viewer));
  if (tr->loss) PetscCall(LossView(tr->loss, viewer));
  if (tr->train) PetscCall(DatasetView(tr->train, viewer));
  if (tr->test) PetscCall(DatasetView(tr->test, viewer));
  PetscCall(TaoView(tr->tao, viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@
  TrainerDestroy - destroys a Trainer once its last reference is gone: its Tao and parameter Vec, and its references to
  the Net, the Loss and the Datasets

  Collective

  Input Parameter:
. tr - the Trainer (or a pointer to NULL: nothing is done); set to NULL

  Notes:
  The Net, the Loss and the Datasets survive while you hold references to them.

  Level: beginner

.seealso: `TrainerCreate()`, `TrainerSetNet()`, `TrainerSetLoss()`, `TrainerSetDatasets()`
@*/
PetscErrorCode TrainerDestroy(Trainer *tr)
{
  PetscFunctionBegin;
  if (!*tr) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*tr, TRAINER_CLASSID, 1);
  if (--((PetscObject)(*tr))->refct > 0) {
    *tr = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(TaoDestroy(&(*tr)->tao));
  PetscCall(MatDestroy(&(*tr)->H));
  PetscCall(VecDestroy(&(*tr)->Xh));
  PetscCall(VecDestroy(&(*tr)->Th));
  PetscCall(VecDestroy(&(*tr)->theta));
  PetscCall(NetDestroy(&(*tr)->net));
  PetscCall(LossDestroy(&(*tr)->loss));
  PetscCall(DatasetDestroy(&(*tr)->train));
  PetscCall(DatasetDestroy(&(*tr)->test));
  PetscCall(VecDestroy(&(*tr)->Y));
  PetscCall(VecDestroy(&(*tr)->dY));
  PetscCall(SpectrumDestroy(&(*tr)->sharpness));
  PetscCall(TrainerPopulationDestroy_Private(*tr));
  PetscCall(TrainerMonitorDestroy_Private(*tr));
  PetscCall(PetscFree((*tr)->history));
  PetscCall(PetscHeaderDestroy(tr));
  PetscFunctionReturn(0);
}

/*@
  TrainerGetResults - gets the results of the last TrainerTrain()

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameters:
+ epochs    - the epochs completed, those before a restart included; fewer than requested after early stopping
              (may be NULL)
. trainloss - the training loss of the last epoch: in mini-batch mode the mean loss of its batches, in full-batch mode
              TAO's objective at the last iterate; with nothing left to train (-trainer_epochs 0, or every epoch done)
              the mean loss over the training set in evaluation mode (may be NULL)
. testloss  - the mean loss over the evaluation Dataset at the end of training, PETSC_MAX_REAL without one (may be
              NULL)
. testacc   - the accuracy on the evaluation Dataset at the end of training (the fraction of samples whose arg-max
              output equals the label); -1 without one or for regression data (may be NULL)
- seconds   - the wall-clock seconds the last TrainerTrain() that ran epochs spent in them, 0 if none ran; in mini-batch
              mode the epochs' optimisation only, in full-batch mode the whole TaoSolve(), test evaluations and
              checkpoints included (may be NULL)

  Notes:
  Before any TrainerTrain() the values are those of a new Trainer: 0 epochs, training loss 0, test loss
  PETSC_MAX_REAL, accuracy -1, 0 seconds (after TrainerLoadCheckpoint() the epochs are those of the checkpoint).

  Level: beginner

.seealso: `TrainerTrain()`, `TrainerEvaluate()`, `TrainerSetEpochs()`
@*/
PetscErrorCode TrainerGetResults(Trainer tr, PetscInt *epochs, PetscReal *trainloss, PetscReal *testloss, PetscReal *testacc, PetscReal *seconds)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  if (epochs) *epochs = tr->epoch;
  if (trainloss) *trainloss = tr->trainloss;
  if (testloss) *testloss = tr->testloss;
  if (testacc) *testacc = tr->testacc;
  if (seconds) *seconds = tr->traintime;
  PetscFunctionReturn(0);
}
