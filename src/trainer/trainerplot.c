/*
  Training curves as a PNG file (-trainer_monitor_plot curves.png): at the end of TrainerTrain() rank 0 pipes a gnuplot
  script, with every epoch's metrics inline, into gnuplot (Debian package gnuplot-nox; pngcairo terminal). Two panels:
  training and test loss (left), test accuracy (right). Debian's PETSc has no libpng, so PetscDraw cannot write PNG.
  The file is written under a temporary name and renamed into place, as checkpoints are. TrainerSetUp() checks first
  that the file can be written and gnuplot runs, so neither is found missing after training.
*/
#include <petnet/private/trainerimpl.h>
#include <stdio.h>
#include <sys/wait.h>

/* Rank 0 runs "'gnuplot' --version"; the error, raised on every rank, names the option and what to do */
PetscErrorCode TrainerPlotCheck_Private(Trainer tr)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscMPIInt rank;
  int         status = 0;
  char        cmd[PETSC_MAX_PATH_LEN + 64];

  PetscFunctionBegin;
  if (!tr->plot[0]) PetscFunctionReturn(0);
  PetscCheck(!strchr(tr->plot, '\'') && !strchr(tr->plot, '\n'), comm, PETSC_ERR_ARG_WRONG, "-trainer_monitor_plot %s: the file name must not contain a quote or a newline", tr->plot);
  PetscCheck(!strchr(tr->gnuplot, '\''), comm, PETSC_ERR_ARG_WRONG, "-trainer_monitor_plot_gnuplot %s: the program's path must not contain a quote", tr->gnuplot);
  PetscCall(PetNetCheckWritableFile(comm, tr->plot, "-trainer_monitor_plot"));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    PetscCall(PetscSNPrintf(cmd, sizeof(cmd), "'%s' --version > /dev/null 2>&1", tr->gnuplot));
    status = system(cmd);
    status = status == -1 ? 127 : (WIFEXITED(status) ? WEXITSTATUS(status) : 128);
  }
  PetscCallMPI(MPI_Bcast(&status, 1, MPI_INT, 0, comm));
  PetscCheck(status == 0, comm, PETSC_ERR_SUP,
             "-trainer_monitor_plot %s needs gnuplot, but \"%s --version\" failed (exit status %d%s): install it (apt-get install gnuplot-nox), give its path with -trainer_monitor_plot_gnuplot, or write the metrics with -trainer_monitor csv:FILE "
             "and plot them yourself",
             tr->plot, tr->gnuplot, status, status == 127 ? ", program not found" : "");
  PetscFunctionReturn(0);
}

/*@C
  TrainerPlotCurves - writes the training curves of the epochs run so far as a PNG image: training and test loss, and
  test accuracy, against the epoch

  Collective on tr

  Input Parameters:
+ tr       - the Trainer
- filename - the PNG file; written atomically (a temporary file renamed into place)

  Options Database Keys:
+ -trainer_monitor_plot <file.png>       - TrainerTrain() calls TrainerPlotCurves() at its end (TrainerSetUp() checks
                                           the file and gnuplot first)
- -trainer_monitor_plot_gnuplot <program> - the gnuplot program (default "gnuplot", from Debian's gnuplot-nox)

  Notes:
  Rank 0 pipes a script with the data inline into gnuplot (pngcairo terminal, 900x360 pixels, about 30 KB). The
  epochs are those every TrainerTrain() of this Trainer ran (the metrics its monitors received, TrainerMetrics); in
  full-batch mode one per TAO iteration. Without an evaluation Dataset only the training loss is drawn. A missing
  gnuplot or a failed plot is an error naming the option.

  Level: intermediate

.seealso: `TrainerMonitorSet()`, `TrainerMonitorCSV()`, `TrainerMonitorDraw()`, `TrainerTrain()`
@*/
PetscErrorCode TrainerPlotCurves(Trainer tr, const char filename[])
{
  MPI_Comm    comm;
  PetscMPIInt rank;
  int         status = 0;
  char        tmp[PETSC_MAX_PATH_LEN], cmd[PETSC_MAX_PATH_LEN + 32];
  PetscBool   hastest, hasacc = PETSC_FALSE;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidCharPointer(filename, 2);
  comm = PetscObjectComm((PetscObject)tr);
  PetscCheck(!strchr(filename, '\'') && !strchr(filename, '\n'), comm, PETSC_ERR_ARG_WRONG, "Plot file %s: the name must not contain a quote or a newline", filename);
  PetscCheck(tr->nhistory > 0, comm, PETSC_ERR_ORDER, "No epoch to plot in %s: call TrainerPlotCurves() after TrainerTrain()", filename);
  hastest = tr->test ? PETSC_TRUE : PETSC_FALSE;
  for (PetscInt i = 0; i < tr->nhistory; i++)
    if (tr->history[i].test_accuracy >= 0) hasacc = PETSC_TRUE;
  PetscCall(PetNetTemporaryFileName(comm, filename, sizeof(tmp), tmp));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    FILE *fp;

    PetscCall(PetscSNPrintf(cmd, sizeof(cmd), "'%s'", tr->gnuplot[0] ? tr->gnuplot : "gnuplot"));
    fp = popen(cmd, "w");
    if (!fp)
      status = 127;
    else {
      fprintf(fp, "set terminal pngcairo size 900,360 font 'sans,10'\nset output '%s'\n", tmp);
      fprintf(fp, "$d << EOD\n");
      for (PetscInt i = 0; i < tr->nhistory; i++) {
        const TrainerMetrics *m = &tr->history[i];

        fprintf(fp, "%" PetscInt_FMT " %.9g %.9g %.9g\n", m->epoch, (double)m->train_loss, hastest ? (double)m->test_loss : 0.0, (double)m->test_accuracy);
      }
      fprintf(fp, "EOD\n");
      fprintf(fp, "set grid\nset xlabel 'epoch'\nset format x '%%.0f'\n");
      if (tr->history[tr->nhistory - 1].epoch - tr->history[0].epoch <= 20) fprintf(fp, "set xtics 1\n");
      if (hasacc) fprintf(fp, "set multiplot layout 1,2\n");
      fprintf(fp, "set title 'loss'\nset key top right\n");
      if (hastest)
        fprintf(fp, "plot $d using 1:2 with linespoints pt 7 lw 2 title 'train', $d using 1:3 with linespoints pt 5 lw 2 title 'test'\n");
      else
        fprintf(fp, "plot $d using 1:2 with linespoints pt 7 lw 2 title 'train'\n");
      if (hasacc) fprintf(fp, "set title 'test accuracy'\nset key bottom right\nplot $d using 1:4 with linespoints pt 7 lw 2 lc 3 title 'test accuracy'\nunset multiplot\n");
      status = pclose(fp);
      status = status == -1 ? 127 : (WIFEXITED(status) ? WEXITSTATUS(status) : 128);
      if (status) (void)remove(tmp);
    }
  }
  PetscCallMPI(MPI_Bcast(&status, 1, MPI_INT, 0, comm));
  PetscCheck(status == 0, comm, PETSC_ERR_LIB, "Could not write the training curves to %s (-trainer_monitor_plot): %s exited with status %d (its messages are above); check that it is gnuplot with the pngcairo terminal (Debian's gnuplot-nox)",
             filename, tr->gnuplot, status);
  PetscCall(PetNetCommitFile(comm, tmp, filename));
  PetscFunctionReturn(0);
}
