/* Trainer: lifecycle, options, viewing. */
#include <petnet/private/trainerimpl.h>
#include <petnetoptim.h>

const char *const TrainerModes[] = {"auto", "minibatch", "fullbatch", "TrainerMode", "TRAINER_MODE_", NULL};

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
  tr->monitor          = PETSC_TRUE;
  tr->progressinterval = 10.0;
  tr->patience         = 0;
  tr->besttestloss     = PETSC_MAX_REAL;
  tr->lastcheckpoint   = -1;
  tr->testloss         = PETSC_MAX_REAL;
  tr->testacc          = -1;
  PetscCall(TaoCreate(comm, &tr->tao));
  PetscCall(TaoSetType(tr->tao, TAOADAM));
  PetscCall(PetscObjectChangeTypeName((PetscObject)tr, "default"));
  *trainer = tr;
  PetscFunctionReturn(0);
}

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

PetscErrorCode TrainerGetNet(Trainer tr, Net *net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  *net = tr->net;
  PetscFunctionReturn(0);
}

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
  TrainerGetTao - the TAO solver (borrowed): set its type and options with TaoSetType()/-tao_type.
@*/
PetscErrorCode TrainerGetTao(Trainer tr, Tao *tao)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  *tao = tr->tao;
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerSetEpochs(Trainer tr, PetscInt epochs)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCheck(epochs >= 0, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "Number of epochs must be >= 0, not %" PetscInt_FMT, epochs);
  tr->epochs = epochs;
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerSetFromOptions(Trainer tr)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)tr);
  PetscCall(PetscOptionsInt("-trainer_epochs", "Epochs to train (0: set up, evaluate and stop)", "TrainerSetEpochs", tr->epochs, &tr->epochs, NULL));
  PetscCheck(tr->epochs >= 0, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "-trainer_epochs must be >= 0, not %" PetscInt_FMT, tr->epochs);
  PetscCall(PetscOptionsInt("-trainer_batch_size", "Global mini-batch size (sets the training Dataset's batch size)", "DatasetSetBatchSize", tr->batchsize, &tr->batchsize, NULL));
  PetscCheck(tr->batchsize >= 0, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "-trainer_batch_size must be positive, not %" PetscInt_FMT, tr->batchsize);
  PetscCall(PetscOptionsInt("-trainer_eval_batch_size", "Samples per chunk in evaluation and full-batch objectives", "TrainerEvaluate", tr->evalbatchsize, &tr->evalbatchsize, NULL));
  PetscCheck(tr->evalbatchsize > 0, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "-trainer_eval_batch_size must be positive, not %" PetscInt_FMT, tr->evalbatchsize);
  PetscCall(PetscOptionsEnum("-trainer_mode", "minibatch (PetNet's stochastic TAO types), fullbatch (any TAO type), or auto", "TrainerSetFromOptions", TrainerModes, (PetscEnum)tr->mode, (PetscEnum *)&tr->mode, NULL));
  PetscCall(PetscOptionsInt("-trainer_patience", "Early stopping: stop after this many epochs without a better test loss (0: never)", "TrainerTrain", tr->patience, &tr->patience, NULL));
  PetscCall(PetscOptionsString("-trainer_checkpoint", "Checkpoint file, written atomically", "TrainerSaveCheckpoint", tr->checkpoint, tr->checkpoint, sizeof(tr->checkpoint), NULL));
  PetscCall(PetscOptionsInt("-trainer_checkpoint_every", "Write the checkpoint every N epochs (0: only at the end)", "TrainerSaveCheckpoint", tr->checkpointevery, &tr->checkpointevery, NULL));
  PetscCall(PetscOptionsString("-trainer_restart", "Resume from this checkpoint", "TrainerLoadCheckpoint", tr->restart, tr->restart, sizeof(tr->restart), NULL));
  PetscCall(PetscOptionsBool("-trainer_monitor", "Print one progress line per epoch", "TrainerTrain", tr->monitor, &tr->monitor, NULL));
  PetscCall(PetscOptionsReal("-trainer_progress_interval", "Seconds between progress lines within an epoch (0: never)", "TrainerTrain", tr->progressinterval, &tr->progressinterval, NULL));
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)tr, PetscOptionsObject));
  PetscOptionsEnd();
  /* the Datasets the Trainer named (TrainerSetDatasets()) read their prefixed options here; the others were
     configured by their owner */
  if (tr->trainprefixed) PetscCall(DatasetSetFromOptions(tr->train));
  if (tr->testprefixed) PetscCall(DatasetSetFromOptions(tr->test));
  PetscCall(TaoSetFromOptions(tr->tao));
  PetscFunctionReturn(0);
}

/* The TAO types that train a Net: PetNet's stochastic ones, and TAO's own that need only the objective and gradient */
#define TRAINER_TAO_TYPES_THAT_WORK "sgd, adam, adamw, rmsprop (mini-batch) or lmvm, blmvm, bqnls, bqnkls, bqnktr, bqnktl, cg, bncg, owlqn, bmrm, nm (full batch)"

/* Refuses the TAO types that cannot minimise the training loss with what the Trainer gives TAO (objective and gradient) */
static PetscErrorCode TrainerCheckTaoType_Private(Trainer tr)
{
  TaoType   type;
  PetscBool hessian, other;

  PetscFunctionBegin;
  PetscCall(TaoGetType(tr->tao, &type));
  /* Newton, trust-region and interior-point types call the Hessian (TaoSetHessian()), which PetNet does not provide yet */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &hessian, TAONLS, TAONTR, TAONTL, TAOTRON, TAOBNLS, TAOBNTR, TAOBNTL, TAOGPCG, TAOBQPIP, TAOIPM, TAOPDIPM, ""));
  PetscCheck(!hessian, PetscObjectComm((PetscObject)tr), PETSC_ERR_SUP, "TAO type %s needs a Hessian, which the Trainer does not provide: use -tao_type %s", type, TRAINER_TAO_TYPES_THAT_WORK);
  /* these solve least-squares (residual), constrained or complementarity problems */
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &other, TAOPOUNDERS, TAOBRGN, TAOLCL, TAOSSILS, TAOSSFLS, TAOASILS, TAOASFLS, TAOADMM, TAOALMM, ""));
  PetscCheck(!other, PetscObjectComm((PetscObject)tr), PETSC_ERR_SUP, "TAO type %s solves least-squares, constrained or complementarity problems, not the training loss: use -tao_type %s", type, TRAINER_TAO_TYPES_THAT_WORK);
  PetscFunctionReturn(0);
}

/*@
  TrainerSetUp - checks that the pieces fit (data shape vs Net input, every label a class of the outputs), chooses mini-batch or full-batch
  mode from the TAO type, and connects the objective to TAO.
@*/
PetscErrorCode TrainerSetUp(Trainer tr)
{
  PetNetShape sample, netin, out;
  PetscInt    outsize;
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  Vec         theta;
  char        a[64], b[64];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  if (tr->setupcalled) PetscFunctionReturn(0);
  PetscCheck(tr->net && tr->loss && tr->train, comm, PETSC_ERR_ORDER, "Give the Trainer a Net, a Loss and a training Dataset before TrainerSetUp()");
  PetscCall(TrainerCheckTaoType_Private(tr));
  if (tr->batchsize) PetscCall(DatasetSetBatchSize(tr->train, tr->batchsize));
  PetscCall(DatasetSetUp(tr->train));
  if (tr->test) PetscCall(DatasetSetUp(tr->test));
  PetscCall(DatasetGetSampleShape(tr->train, &sample));
  PetscCall(NetGetInputShape(tr->net, &netin));
  if (!netin.ndim)
    PetscCall(NetSetInputShape(tr->net, &sample));
  else {
    PetscInt n1, n2;

    PetscCall(PetNetShapeSize(&sample, &n1));
    PetscCall(PetNetShapeSize(&netin, &n2));
    PetscCall(PetNetShapeToString(&sample, sizeof(a), a));
    PetscCall(PetNetShapeToString(&netin, sizeof(b), b));
    PetscCheck(n1 == n2, comm, PETSC_ERR_ARG_INCOMP, "The data samples have shape %s but the Net expects %s: fix -net_input_shape or the data", a, b);
  }
  PetscCall(NetSetUp(tr->net));
  PetscCall(NetGetOutputShape(tr->net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(LossSetUp(tr->loss));
  {
    PetscBool isce;

    PetscCall(PetscObjectTypeCompare((PetscObject)tr->loss, LOSSCROSSENTROPY, &isce));
    if (isce) PetscCall(DatasetCheckLabels(tr->train, outsize)); /* names the labels' file and the bad sample in it */
    if (isce && tr->test) PetscCall(DatasetCheckLabels(tr->test, outsize));
  }
  if (tr->mode == TRAINER_MODE_AUTO) {
    PetscBool stochastic;

    /* PetNet's stochastic types take one mini-batch per iteration; TAO's own types need a deterministic objective */
    PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->tao, &stochastic, "sgd", "adam", "adamw", "rmsprop", ""));
    tr->minibatch = stochastic;
  } else
    tr->minibatch = tr->mode == TRAINER_MODE_MINIBATCH ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(NetGetParameters(tr->net, &theta));
  PetscCall(VecDuplicate(theta, &tr->theta));
  PetscCall(VecCopy(theta, tr->theta));
  PetscCall(TaoSetSolution(tr->tao, tr->theta));
  if (tr->minibatch) {
    PetscCall(TaoSetObjectiveAndGradient(tr->tao, NULL, TrainerObjectiveMiniBatch_Private, tr));
    PetscCall(TaoSetUpdate(tr->tao, TrainerNextBatch_Private, tr));
  } else
    PetscCall(TaoSetObjectiveAndGradient(tr->tao, NULL, TrainerObjectiveFullBatch_Private, tr));
  PetscCall(DatasetGetNumBatches(tr->train, &tr->nbatches));
  /* one TaoSolve per epoch: schedules (cosine) span the whole training, not one epoch */
  if (tr->minibatch) PetscCall(PetNetTaoSetLRHorizon(tr->tao, tr->epochs * tr->nbatches));
  tr->setupcalled = PETSC_TRUE;
  if (tr->restart[0]) PetscCall(TrainerLoadCheckpoint(tr, tr->restart));
  PetscCall(PetscObjectViewFromOptions((PetscObject)tr, NULL, "-trainer_view"));
  PetscFunctionReturn(0);
}

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
  if (tr->minibatch) PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " batches per epoch\n", tr->nbatches));
  if (tr->patience) PetscCall(PetscViewerASCIIPrintf(viewer, "early stopping after %" PetscInt_FMT " epochs without improvement of the test loss\n", tr->patience));
  if (tr->checkpoint[0]) PetscCall(PetscViewerASCIIPrintf(viewer, "checkpoint %s every %" PetscInt_FMT " epochs\n", tr->checkpoint, tr->checkpointevery));
  if (tr->net) PetscCall(NetView(tr->net, viewer));
  if (tr->loss) PetscCall(LossView(tr->loss, viewer));
  if (tr->train) PetscCall(DatasetView(tr->train, viewer));
  if (tr->test) PetscCall(DatasetView(tr->test, viewer));
  PetscCall(TaoView(tr->tao, viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

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
  PetscCall(VecDestroy(&(*tr)->theta));
  PetscCall(NetDestroy(&(*tr)->net));
  PetscCall(LossDestroy(&(*tr)->loss));
  PetscCall(DatasetDestroy(&(*tr)->train));
  PetscCall(DatasetDestroy(&(*tr)->test));
  PetscCall(VecDestroy(&(*tr)->Y));
  PetscCall(VecDestroy(&(*tr)->dY));
  PetscCall(PetscHeaderDestroy(tr));
  PetscFunctionReturn(0);
}

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
