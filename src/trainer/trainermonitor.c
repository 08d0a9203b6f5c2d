/*
  Trainer monitors, after PETSc's (-ksp_monitor, -tao_monitor): a list of callbacks run in order at the end of every
  epoch (in full-batch mode every TAO iteration), each with a context and its destroy routine. The built-in ones take a
  PetscViewerAndFormat:

    -trainer_monitor ascii[:file]          TrainerMonitorDefault(): the progress line (the default, on stdout)
    -trainer_monitor csv[:file]            TrainerMonitorCSV(): a header, then one row per epoch
    -trainer_monitor ascii:file:ascii_csv  the same, in PETSc's spelling
    -trainer_monitor draw                  TrainerMonitorDraw(): PetscDrawLG curves (-draw_type x, null, image)
    -trainer_monitor ascii,csv:m.csv       several at once (a comma-separated list)
    -trainer_monitor 0 (or false, no)      none

  Every epoch's metrics are also kept (tr->history) for -trainer_monitor_plot (trainerplot.c).
*/
#include <petnet/private/trainerimpl.h>
#include <petnetoptim.h>
#include <petscdraw.h>
#include <errno.h>
#include <stdlib.h>

/*@C
  TrainerMonitorSet - adds a function that the Trainer calls at the end of every epoch

  Logically collective on tr

  Input Parameters:
+ tr       - the Trainer
. monitor  - the function: monitor(Trainer tr, PetscInt epoch, const TrainerMetrics *metrics, void *ctx)
. ctx      - its context (may be NULL)
- destroy  - a routine that destroys the context when the Trainer is destroyed or the monitors cancelled (may be
             NULL)

  Calling sequence of monitor:
$ PetscErrorCode monitor(Trainer tr, PetscInt epoch, const TrainerMetrics *metrics, void *ctx)
+ tr      - the Trainer
. epoch   - the epoch just completed, 1-based (those before a restart counted); 0 when TrainerTrain() only evaluates
. metrics - the epoch's losses, accuracy, learning rate, times and throughput (TrainerMetrics)
- ctx     - the context

  Options Database Keys:
+ -trainer_monitor [ascii,csv,draw][:file] - the built-in monitors (a comma-separated list), see TrainerSetFromOptions()
- -trainer_monitor 0                       - no monitor (TrainerMonitorCancel())

  Notes:
  Monitors run in the order they were added, after the test evaluation and before the checkpoint of the epoch; at most
  10. Adding a monitor already set (same function, context and destroy routine) does nothing; adding a built-in one
  with a PetscViewerAndFormat of the same viewer and format as one already set destroys the new context and does
  nothing else. The built-in TrainerMonitorDefault(), TrainerMonitorCSV() and
  TrainerMonitorDraw() take a PetscViewerAndFormat (PetscViewerAndFormatCreate(), destroyed by
  PetscViewerAndFormatDestroy()). Unless -trainer_monitor is given or TrainerMonitorCancel() called, TrainerSetUp()
  adds TrainerMonitorDefault() on standard output after the monitors set here. TrainerSetFromOptions() with
  -trainer_monitor 0 cancels every monitor set before it (TrainerMonitorCancel()): set yours after it to keep them. The same metrics are available after
  training from TrainerGetMetrics().

  Level: intermediate

.seealso: `TrainerMonitorCancel()`, `TrainerMonitorDefault()`, `TrainerMonitorCSV()`, `TrainerMonitorDraw()`,
          `TrainerGetMetrics()`, `TrainerMetrics`, `TrainerSetFromOptions()`
@*/
PetscErrorCode TrainerMonitorSet(Trainer tr, PetscErrorCode (*monitor)(Trainer, PetscInt, const TrainerMetrics *, void *), void *ctx, PetscErrorCode (*destroy)(void **))
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidFunction(monitor, 2);
  /* as PetscMonitorCompare(), except that the very same context is left alone (PETSc's would destroy it) */
  for (PetscInt i = 0; i < tr->nmonitors; i++) {
    if (tr->monitor[i] != monitor || tr->monitordestroy[i] != destroy) continue;
    if (tr->monitorctx[i] == ctx) PetscFunctionReturn(0);
    if (destroy == (PetscErrorCode(*)(void **))PetscViewerAndFormatDestroy) {
      PetscViewerAndFormat *old = (PetscViewerAndFormat *)tr->monitorctx[i], *vf = (PetscViewerAndFormat *)ctx;

      if (old->viewer == vf->viewer && old->format == vf->format) { /* a duplicate: drop the new one */
        PetscCall(PetscViewerAndFormatDestroy(&vf));
        PetscFunctionReturn(0);
      }
    }
  }
  PetscCheck(tr->nmonitors < TRAINER_MAX_MONITORS, PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_OUTOFRANGE, "Too many Trainer monitors: at most %d", TRAINER_MAX_MONITORS);
  tr->monitor[tr->nmonitors]        = monitor;
  tr->monitorctx[tr->nmonitors]     = ctx;
  tr->monitordestroy[tr->nmonitors] = destroy;
  tr->nmonitors++;
  PetscFunctionReturn(0);
}

/*@
  TrainerMonitorCancel - removes every monitor of the Trainer, the default progress line included

  Logically collective on tr

  Input Parameter:
. tr - the Trainer

  Options Database Key:
. -trainer_monitor 0 - the same from the options (also false, no, off)

  Notes:
  The destroy routines given to TrainerMonitorSet() are called on the contexts.

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerSetFromOptions()`
@*/
PetscErrorCode TrainerMonitorCancel(Trainer tr)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerMonitorDestroy_Private(tr));
  tr->monitordefault = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerMonitorDestroy_Private(Trainer tr)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < tr->nmonitors; i++)
    if (tr->monitordestroy[i]) PetscCall((*tr->monitordestroy[i])(&tr->monitorctx[i]));
  tr->nmonitors      = 0;
  tr->progressviewer = NULL;
  PetscFunctionReturn(0);
}

/*@
  TrainerGetMetrics - the metrics of the last epoch completed, those the monitors received

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameter:
. metrics - the epoch, losses, accuracy, learning rate, times and throughput (TrainerMetrics)

  Notes:
  Before any epoch: epoch 0, training loss 0, test loss PETSC_MAX_REAL, accuracy -1 and the rest 0. The losses and the
  accuracy are those of TrainerGetResults().

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerGetResults()`, `TrainerMetrics`
@*/
PetscErrorCode TrainerGetMetrics(Trainer tr, TrainerMetrics *metrics)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidPointer(metrics, 2);
  *metrics = tr->metrics;
  PetscFunctionReturn(0);
}

/* The learning rate of the epoch's last update: PetNet's optimizers compute it from their schedule; TAO's line-search
   types report their last step length; others NaN. */
static PetscErrorCode TrainerGetLearningRate_Private(Trainer tr, PetscReal *lr)
{
  PetscErrorCode (*f)(void) = NULL;
  TaoLineSearch ls          = NULL;

  PetscFunctionBegin;
  *lr = (PetscReal)NAN;
  PetscCall(PetscObjectQueryFunction((PetscObject)tr->tao, "PetNetTaoComputeLearningRate_C", &f));
  if (f) {
    PetscInt step;

    PetscCall(PetNetTaoGetState(tr->tao, NULL, NULL, &step));
    PetscCall(PetNetTaoComputeLearningRate(tr->tao, PetscMax(step - 1, 0), lr));
  } else if (!tr->minibatch) {
    PetscCall(TaoGetLineSearch(tr->tao, &ls));
    if (ls) PetscCall(TaoLineSearchGetStepLength(ls, lr));
  }
  PetscFunctionReturn(0);
}

/* The end of an epoch (1-based; 0: evaluation only): fills tr->metrics, keeps them for the plot, runs the monitors */
PetscErrorCode TrainerMonitor_Private(Trainer tr, PetscInt epoch, PetscReal seconds, PetscInt samples, PetscLogDouble elapsed)
{
  TrainerMetrics *m = &tr->metrics;

  PetscFunctionBegin;
  m->epoch         = epoch;
  m->epochs        = tr->epochs;
  m->train_loss    = tr->trainloss;
  m->test_loss     = tr->test ? tr->testloss : PETSC_MAX_REAL;
  m->test_accuracy = tr->test ? tr->testacc : -1;
  m->epoch_time    = seconds;
  m->elapsed       = elapsed;
  m->samples       = samples;
  m->samples_per_s = seconds > 0 ? samples / seconds : 0.0;
  m->restored      = PETSC_FALSE;
  PetscCall(TrainerGetLearningRate_Private(tr, &m->learning_rate));
  if (tr->nhistory == tr->maxhistory) {
    TrainerMetrics *h;

    tr->maxhistory = PetscMax(16, 2 * tr->maxhistory);
    PetscCall(PetscMalloc1(tr->maxhistory, &h));
    if (tr->nhistory) PetscCall(PetscArraycpy(h, tr->history, tr->nhistory));
    PetscCall(PetscFree(tr->history));
    tr->history = h;
  }
  tr->history[tr->nhistory++] = *m;
  for (PetscInt i = 0; i < tr->nmonitors; i++) PetscCall((*tr->monitor[i])(tr, epoch, m, tr->monitorctx[i]));
  PetscFunctionReturn(0);
}

/* After a restart (checkpoint format 4): the epochs before it, as the run that wrote the checkpoint monitored them, go
   to this run's monitors first, so that a CSV file or a plot of the restarted run covers all its epochs. A restart from
   the final checkpoint evaluates that epoch again (TrainerTrain()): its restored record gives way to the evaluation. */
PetscErrorCode TrainerMonitorReplay_Private(Trainer tr)
{
  PetscInt n = tr->nrestored;

  PetscFunctionBegin;
  tr->nrestored = 0;
  if (n && tr->epoch >= tr->epochs && tr->history[n - 1].epoch == tr->epoch) {
    n--;
    tr->nhistory = n;
  }
  for (PetscInt k = 0; k < n; k++) {
    TrainerMetrics m = tr->history[k];

    m.epochs = tr->epochs;
    for (PetscInt i = 0; i < tr->nmonitors; i++) PetscCall((*tr->monitor[i])(tr, m.epoch, &m, tr->monitorctx[i]));
  }
  PetscFunctionReturn(0);
}

/*@C
  TrainerMonitorDefault - prints the progress line of an epoch: epoch, training loss, test loss and accuracy,
  throughput and elapsed time

  Collective on tr

  Input Parameters:
+ tr      - the Trainer
. epoch   - the epoch just completed
- metrics - its metrics

  Output Parameter:
. vf - an ASCII viewer and format (PetscViewerAndFormatCreate()) that the line is written to; with format
       PETSC_VIEWER_ASCII_CSV the row of TrainerMonitorCSV() is written instead

  Options Database Key:
. -trainer_monitor [ascii[:file]] - this monitor, on standard output or in a file (the default: on standard output)

  Notes:
  The line reads "epoch   3/10  train_loss 0.412345  test_loss 0.431234  test_acc 0.8456  samples/s 51234  elapsed
  4.12s" (no test columns without an evaluation Dataset, no test_acc for a regression; "(restored)" at the end for
  an epoch run before -trainer_restart, replayed from the checkpoint). Use it with TrainerMonitorSet(tr, (PetscErrorCode
  (*)(Trainer, PetscInt, const TrainerMetrics *, void *))TrainerMonitorDefault, vf, (PetscErrorCode (*)(void
  **))PetscViewerAndFormatDestroy).

  In a file, each line is flushed and checked: a line that does not reach the file (a full disk, quota) is an error on
  every rank naming the file (PetNetWriteCheckViewer()), not a run that ends with 0 and an empty file.

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerMonitorCSV()`, `TrainerMonitorDraw()`, `TrainerMetrics`, `PetNetWriteCheckViewer()`
@*/
PetscErrorCode TrainerMonitorDefault(Trainer tr, PetscInt epoch, const TrainerMetrics *metrics, PetscViewerAndFormat *vf)
{
  char line[512], part[256];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidPointer(vf, 4);
  if (vf->format == PETSC_VIEWER_ASCII_CSV) {
    PetscCall(TrainerMonitorCSV(tr, epoch, metrics, vf));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscSNPrintf(line, sizeof(line), "epoch %3" PetscInt_FMT "/%" PetscInt_FMT "  train_loss %.6f", epoch, metrics->epochs, (double)metrics->train_loss));
  if (tr->test) { /* no accuracy for a regression (its accuracy is -1: unknown) */
    PetscCall(PetscSNPrintf(part, sizeof(part), "  test_loss %.6f", (double)metrics->test_loss));
    PetscCall(PetscStrlcat(line, part, sizeof(line)));
    if (metrics->test_accuracy >= 0) {
      PetscCall(PetscSNPrintf(part, sizeof(part), "  test_acc %.4f", (double)metrics->test_accuracy));
      PetscCall(PetscStrlcat(line, part, sizeof(line)));
    }
  }
  PetscCall(PetscSNPrintf(part, sizeof(part), "  samples/s %.0f  elapsed %.2fs%s\n", (double)metrics->samples_per_s, (double)metrics->elapsed, metrics->restored ? "  (restored)" : ""));
  PetscCall(PetscStrlcat(line, part, sizeof(line)));
  PetscCall(PetscViewerASCIIPrintf(vf->viewer, "%s", line));
  PetscCall(PetNetWriteCheckViewer(vf->viewer));
  PetscFunctionReturn(0);
}

/*@C
  TrainerMonitorCSV - writes the metrics of an epoch as a row of comma-separated values, after a header line the first
  time

  Collective on tr

  Input Parameters:
+ tr      - the Trainer
. epoch   - the epoch just completed
- metrics - its metrics

  Output Parameter:
. vf - an ASCII viewer and format (PetscViewerAndFormatCreate()) that the row is written to; its data field is set to
       mark the header as written

  Options Database Keys:
+ -trainer_monitor csv[:file]            - this monitor, on standard output or in a file
- -trainer_monitor ascii:file:ascii_csv  - the same, in PETSc's spelling of viewers

  Notes:
  The header is epoch,train_loss,test_loss,test_accuracy,learning_rate,epoch_time_s,elapsed_s,samples_per_s; one row
  per epoch follows (in full-batch mode per TAO iteration), the losses, the accuracy and the learning rate with 9
  significant digits. Unknown values are empty fields: the test columns without an evaluation Dataset (the accuracy
  also for regression data), the learning rate of an optimizer that has none. Python reads it with
  numpy.genfromtxt(file, delimiter=",", names=True) or pandas.read_csv(file).

  Each row is flushed to its file and checked: a row that does not reach it (a full disk, quota) is an error on every
  rank naming the file (PetNetWriteCheckViewer()), as in TrainerMonitorDefault().

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerMonitorDefault()`, `TrainerMonitorDraw()`, `TrainerMetrics`
@*/
PetscErrorCode TrainerMonitorCSV(Trainer tr, PetscInt epoch, const TrainerMetrics *metrics, PetscViewerAndFormat *vf)
{
  char testloss[32] = "", testacc[32] = "", lr[32] = "";

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidPointer(vf, 4);
  if (!vf->data) { /* a marker, never dereferenced nor freed (PetscViewerAndFormatDestroy() leaves data alone) */
    PetscCall(PetscViewerASCIIPrintf(vf->viewer, "epoch,train_loss,test_loss,test_accuracy,learning_rate,epoch_time_s,elapsed_s,samples_per_s\n"));
    vf->data = (void *)vf;
  }
  if (metrics->test_loss < PETSC_MAX_REAL) PetscCall(PetscSNPrintf(testloss, sizeof(testloss), "%.9g", (double)metrics->test_loss));
  if (metrics->test_accuracy >= 0) PetscCall(PetscSNPrintf(testacc, sizeof(testacc), "%.9g", (double)metrics->test_accuracy));
  if (!PetscIsNanReal(metrics->learning_rate)) PetscCall(PetscSNPrintf(lr, sizeof(lr), "%.9g", (double)metrics->learning_rate));
  PetscCall(PetscViewerASCIIPrintf(vf->viewer, "%" PetscInt_FMT ",%.9g,%s,%s,%s,%.4f,%.4f,%.1f\n", epoch, (double)metrics->train_loss, testloss, testacc, lr, (double)metrics->epoch_time, (double)metrics->elapsed, (double)metrics->samples_per_s));
  PetscCall(PetscViewerFlush(vf->viewer));
  PetscCall(PetNetWriteCheckViewer(vf->viewer));
  PetscFunctionReturn(0);
}

/*@C
  TrainerMonitorDraw - draws the training curves with PetscDrawLG: training loss, and with an evaluation Dataset the
  test loss and the test accuracy, against the epoch

  Collective on tr

  Input Parameters:
+ tr      - the Trainer
. epoch   - the epoch just completed
- metrics - its metrics

  Output Parameter:
. vf - a draw viewer and format (PetscViewerDrawOpen(), PetscViewerAndFormatCreate()); the line graph is created at
       the first call in vf->lg and destroyed with vf (PetscViewerAndFormatDestroy())

  Options Database Keys:
+ -trainer_monitor draw - this monitor
- -draw_type <x,null,image> - where it draws: an X window (needs $DISPLAY), nowhere, or image files
                             (-draw_save name.ppm; Debian's PETSc saves ppm images only, no png)

  Notes:
  Without an X display ($DISPLAY unset) and without -draw_type, -trainer_monitor draw draws nothing (-draw_type null)
  instead of failing. For a PNG file use -trainer_monitor_plot.

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerMonitorDefault()`, `TrainerMonitorCSV()`, `TrainerPlotCurves()`
@*/
PetscErrorCode TrainerMonitorDraw(Trainer tr, PetscInt epoch, const TrainerMetrics *metrics, PetscViewerAndFormat *vf)
{
  PetscReal x[3], y[3];
  PetscInt  dim = tr->test ? 3 : 1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidPointer(vf, 4);
  if (!vf->lg) {
    PetscDraw         draw;
    PetscDrawAxis     axis;
    const char *const names[] = {"train loss", "test loss", "test accuracy"};

    PetscCall(PetscViewerDrawGetDraw(vf->viewer, 0, &draw));
    PetscCall(PetscDrawLGCreate(draw, dim, &vf->lg));
    PetscCall(PetscDrawLGSetLegend(vf->lg, names));
    PetscCall(PetscDrawLGSetUseMarkers(vf->lg, PETSC_TRUE));
    PetscCall(PetscDrawLGGetAxis(vf->lg, &axis));
    PetscCall(PetscDrawAxisSetLabels(axis, "Training", "epoch", "loss, accuracy"));
    PetscCall(PetscDrawLGSetFromOptions(vf->lg));
  }
  x[0] = x[1] = x[2] = (PetscReal)epoch;
  y[0]               = metrics->train_loss;
  y[1]               = metrics->test_loss;
  y[2]               = metrics->test_accuracy;
  PetscCall(PetscDrawLGAddPoint(vf->lg, x, y));
  PetscCall(PetscDrawLGDraw(vf->lg));
  PetscCall(PetscDrawLGSave(vf->lg));
  PetscFunctionReturn(0);
}

/* The file of an ascii or csv monitor: opened now (rank 0) so that a missing directory or a read-only file is an
   error naming the option, then handed to PetscViewerASCIIOpen() */
static PetscErrorCode TrainerMonitorOpenASCII_Private(Trainer tr, const char option[], const char file[], PetscViewer *viewer)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscMPIInt rank;
  int         err = 0;

  PetscFunctionBegin;
  if (!file[0]) {
    PetscCall(PetscViewerASCIIGetStdout(comm, viewer));
    PetscCall(PetscObjectReference((PetscObject)*viewer));
    PetscFunctionReturn(0);
  }
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    FILE *fp = fopen(file, "a");

    if (!fp)
      err = errno;
    else
      (void)fclose(fp);
  }
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
  PetscCheck(!err, comm, PETSC_ERR_FILE_OPEN, "%s: cannot write the monitor file %s: %s; check that its directory exists and is writable", option, file, strerror(err));
  PetscCall(PetscViewerASCIIOpen(comm, file, viewer));
  PetscFunctionReturn(0);
}

static PetscErrorCode TrainerMonitorAdd_Private(Trainer tr, PetscErrorCode (*monitor)(Trainer, PetscInt, const TrainerMetrics *, PetscViewerAndFormat *), PetscViewer viewer, PetscViewerFormat format)
{
  PetscViewerAndFormat *vf;

  PetscFunctionBegin;
  PetscCall(PetscViewerAndFormatCreate(viewer, format, &vf)); /* takes a reference to the viewer */
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(TrainerMonitorSet(tr, (PetscErrorCode(*)(Trainer, PetscInt, const TrainerMetrics *, void *))monitor, vf, (PetscErrorCode(*)(void **))PetscViewerAndFormatDestroy));
  PetscFunctionReturn(0);
}

/* -trainer_monitor VALUE: a logical value (none: on), or a comma-separated list of ascii[:file[:format]], csv[:file],
   draw. Called by TrainerSetFromOptions(); option is the option's full name for the messages. */
PetscErrorCode TrainerMonitorSetFromOptions_Private(Trainer tr, const char option[], const char value[])
{
  MPI_Comm          comm = PetscObjectComm((PetscObject)tr);
  const char *const on[] = {"", "1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
  char list[PETSC_MAX_PATH_LEN + 64], *item, *next;

  PetscFunctionBegin;
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(off); i++) {
    PetscBool match;

    PetscCall(PetscStrcasecmp(value, off[i], &match));
    if (match) {
      PetscCall(TrainerMonitorCancel(tr));
      PetscFunctionReturn(0);
    }
  }
  tr->monitordefault = PETSC_FALSE; /* the value lists every monitor the options ask for */
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(on); i++) {
    PetscBool match;

    PetscCall(PetscStrcasecmp(value, on[i], &match));
    if (match) value = "ascii";
  }
  PetscCall(PetscStrncpy(list, value, sizeof(list)));
  for (item = list; item; item = next) {
    char             *file = NULL, *fmt = NULL, *extra = NULL;
    PetscBool         isascii, iscsv, isdraw;
    PetscViewerFormat format = PETSC_VIEWER_DEFAULT;
    PetscViewer       viewer;

    next = strchr(item, ',');
    if (next) *next++ = 0;
    file = strchr(item, ':');
    if (file) {
      *file++ = 0;
      fmt     = strchr(file, ':');
      if (fmt) {
        *fmt++ = 0;
        extra  = strchr(fmt, ':');
      }
    }
    PetscCall(PetscStrcmp(item, "ascii", &isascii));
    PetscCall(PetscStrcmp(item, "csv", &iscsv));
    PetscCall(PetscStrcmp(item, "draw", &isdraw));
    PetscCheck(
        isascii || iscsv || isdraw, comm, PETSC_ERR_ARG_UNKNOWN_TYPE,
        "%s %s: unknown monitor \"%s\"; give ascii[:file] (the progress line), csv[:file] or ascii:file:ascii_csv (one row of metrics per epoch), draw (PetscDrawLG curves), a comma-separated list of them (ascii,csv:metrics.csv), or 0 for none",
        option, value, item);
    PetscCheck(!extra, comm, PETSC_ERR_ARG_WRONG, "%s %s: too many fields in \"%s\"; write ascii[:file[:format]] or csv[:file]", option, value, item);
    PetscCheck(!isdraw || ((!file || !file[0]) && !fmt), comm, PETSC_ERR_ARG_WRONG, "%s %s: draw takes no file; choose where it draws with -draw_type (x, null, image) and write a PNG with -trainer_monitor_plot FILE", option, value);
    PetscCheck(!iscsv || !fmt, comm, PETSC_ERR_ARG_WRONG, "%s %s: csv takes a file only (csv:metrics.csv), not a format", option, value);
    if (fmt && fmt[0]) {
      PetscBool found;
      PetscEnum f;

      PetscCall(PetscEnumFind(PetscViewerFormats, fmt, &f, &found));
      PetscCheck(found && ((PetscViewerFormat)f == PETSC_VIEWER_ASCII_CSV || (PetscViewerFormat)f == PETSC_VIEWER_DEFAULT), comm, PETSC_ERR_ARG_WRONG,
                 "%s %s: format \"%s\" is not one the Trainer's monitor writes; use ascii_csv (or no format for the progress line)", option, value, fmt);
      format = (PetscViewerFormat)f;
    }
    if (isdraw) {
      PetscBool drawtype;

      PetscCall(PetscViewerDrawOpen(comm, NULL, "PetNet training", PETSC_DECIDE, PETSC_DECIDE, 500, 400, &viewer));
      /* headless (no $DISPLAY) and no -draw_type: draw nothing, quietly, rather than fail to open an X window */
      PetscCall(PetscOptionsHasName(NULL, NULL, "-draw_type", &drawtype));
      if (!drawtype && (!getenv("DISPLAY") || !getenv("DISPLAY")[0])) {
        PetscCall(PetscInfo(tr, "No $DISPLAY and no -draw_type: %s draw draws nothing (-draw_type null)\n", option));
        PetscCall(PetscViewerDrawSetDrawType(viewer, PETSC_DRAW_NULL));
      }
      PetscCall(TrainerMonitorAdd_Private(tr, TrainerMonitorDraw, viewer, PETSC_VIEWER_DEFAULT));
    } else {
      PetscCall(TrainerMonitorOpenASCII_Private(tr, option, file ? file : "", &viewer));
      if (iscsv || format == PETSC_VIEWER_ASCII_CSV)
        PetscCall(TrainerMonitorAdd_Private(tr, TrainerMonitorCSV, viewer, PETSC_VIEWER_ASCII_CSV));
      else
        PetscCall(TrainerMonitorAdd_Private(tr, TrainerMonitorDefault, viewer, PETSC_VIEWER_DEFAULT));
    }
  }
  PetscFunctionReturn(0);
}

/* At TrainerSetUp(): the default progress line on stdout unless -trainer_monitor or TrainerMonitorCancel() said
   otherwise; the lines within an epoch (-trainer_progress_interval) go to the first progress-line monitor's viewer */
PetscErrorCode TrainerMonitorSetUp_Private(Trainer tr)
{
  PetscFunctionBegin;
  if (tr->monitordefault) {
    PetscViewer viewer;

    PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)tr), &viewer));
    PetscCall(PetscObjectReference((PetscObject)viewer));
    PetscCall(TrainerMonitorAdd_Private(tr, TrainerMonitorDefault, viewer, PETSC_VIEWER_DEFAULT));
    tr->monitordefault = PETSC_FALSE;
  }
  tr->progressviewer = NULL;
  for (PetscInt i = 0; i < tr->nmonitors && !tr->progressviewer; i++) {
    PetscViewerAndFormat *vf = (PetscViewerAndFormat *)tr->monitorctx[i];

    if (tr->monitor[i] == (PetscErrorCode(*)(Trainer, PetscInt, const TrainerMetrics *, void *))TrainerMonitorDefault && vf->format != PETSC_VIEWER_ASCII_CSV) tr->progressviewer = vf->viewer;
  }
  PetscFunctionReturn(0);
}
