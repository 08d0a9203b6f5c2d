static const char help[] = "Trainer monitors: a user callback set with TrainerMonitorSet() receives every epoch's metrics, in order,\n"
                           "and the last ones equal TrainerGetResults() and TrainerGetMetrics(); adding it twice calls it once; its\n"
                           "context is destroyed with the Trainer (-malloc_dump finds it otherwise). A built-in monitor\n"
                           "(TrainerMonitorCSV) set by hand, twice, writes its rows once to -csv FILE. Fashion-MNIST, dense:10; options as bin/fashion.\n";

#include <petnettrainer.h>

#define MAXEPOCHS 64

typedef struct {
  PetscInt       calls;
  PetscInt       epoch[MAXEPOCHS];
  TrainerMetrics metrics[MAXEPOCHS];
} UserMonitor;

static PetscErrorCode UserMonitorRecord(Trainer tr, PetscInt epoch, const TrainerMetrics *m, void *ctx)
{
  UserMonitor *user = (UserMonitor *)ctx;

  PetscFunctionBegin;
  PetscCheck(user->calls < MAXEPOCHS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "too many epochs for this test");
  PetscCheck(m->epoch == epoch, PETSC_COMM_SELF, PETSC_ERR_PLIB, "metrics->epoch %" PetscInt_FMT " != epoch %" PetscInt_FMT, m->epoch, epoch);
  user->epoch[user->calls]   = epoch;
  user->metrics[user->calls] = *m;
  user->calls++;
  PetscFunctionReturn(0);
}

static PetscErrorCode UserMonitorDestroy(void **ctx)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(*ctx));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm              comm;
  Net                   net;
  Loss                  loss;
  Dataset               train, test;
  Trainer               tr;
  UserMonitor          *user;
  TrainerMetrics        last;
  PetscViewer           csv;
  PetscViewerAndFormat *vf;
  PetscInt              epochs;
  PetscReal             trainloss, testloss, testacc;
  char                  csvfile[PETSC_MAX_PATH_LEN] = "tests/out/test_monitor.csv";
  PetscInt              lines                       = 0, calls;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "dense:10"));
  PetscCall(NetSetFromOptions(net));
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetIDXSetDirectory(train, "/usr/share/datasets/fashion-mnist", "train"));
  PetscCall(DatasetCreate(comm, &test));
  PetscCall(DatasetIDXSetDirectory(test, "/usr/share/datasets/fashion-mnist", "t10k"));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(TrainerCreate(comm, &tr));
  PetscCall(TrainerSetNet(tr, net));
  PetscCall(TrainerSetLoss(tr, loss));
  PetscCall(TrainerSetDatasets(tr, train, test));
  PetscCall(TrainerSetFromOptions(tr));

  PetscCall(PetscNew(&user));
  PetscCall(TrainerMonitorSet(tr, UserMonitorRecord, user, UserMonitorDestroy));
  PetscCall(TrainerMonitorSet(tr, UserMonitorRecord, user, UserMonitorDestroy)); /* identical: ignored */
  /* a built-in monitor by hand, twice: the second, a duplicate (same viewer and format), is destroyed at once */
  PetscCall(PetscOptionsGetString(NULL, NULL, "-csv", csvfile, sizeof(csvfile), NULL));
  PetscCall(PetscViewerASCIIOpen(comm, csvfile, &csv));
  for (PetscInt k = 0; k < 2; k++) {
    PetscCall(PetscViewerAndFormatCreate(csv, PETSC_VIEWER_ASCII_CSV, &vf));
    PetscCall(TrainerMonitorSet(tr, (PetscErrorCode(*)(Trainer, PetscInt, const TrainerMetrics *, void *))TrainerMonitorCSV, vf, (PetscErrorCode(*)(void **))PetscViewerAndFormatDestroy));
  }
  PetscCall(PetscViewerDestroy(&csv));
  PetscCall(TrainerTrain(tr));

  PetscCall(TrainerGetResults(tr, &epochs, &trainloss, &testloss, &testacc, NULL));
  PetscCall(TrainerGetMetrics(tr, &last));
  PetscCheck(user->calls == epochs, comm, PETSC_ERR_PLIB, "the monitor was called %" PetscInt_FMT " times for %" PetscInt_FMT " epochs", user->calls, epochs);
  for (PetscInt i = 0; i < user->calls; i++) PetscCheck(user->epoch[i] == i + 1, comm, PETSC_ERR_PLIB, "call %" PetscInt_FMT " got epoch %" PetscInt_FMT, i, user->epoch[i]);
  {
    const TrainerMetrics *m = &user->metrics[user->calls - 1];

    /* the same numbers, bit for bit */
    PetscCheck(m->train_loss == trainloss && m->test_loss == testloss && m->test_accuracy == testacc, comm, PETSC_ERR_PLIB, "the last metrics (%g %g %g) differ from TrainerGetResults() (%g %g %g)", (double)m->train_loss, (double)m->test_loss,
               (double)m->test_accuracy, (double)trainloss, (double)testloss, (double)testacc);
    PetscCheck(m->epoch == last.epoch && m->train_loss == last.train_loss && m->learning_rate == last.learning_rate && m->samples == last.samples, comm, PETSC_ERR_PLIB, "TrainerGetMetrics() differs from the monitor's last metrics");
    PetscCheck(m->epochs == epochs && m->samples > 0 && m->epoch_time > 0 && m->elapsed >= m->epoch_time && m->samples_per_s > 0, comm, PETSC_ERR_PLIB, "implausible counts or times");
  }
  for (PetscInt i = 0; i < user->calls; i++) {
    const TrainerMetrics *m = &user->metrics[i];

    PetscCall(PetscPrintf(comm, "user monitor: epoch %" PetscInt_FMT "/%" PetscInt_FMT " train_loss %.6f test_loss %.6f test_accuracy %.4f learning_rate %.6g samples %" PetscInt_FMT "\n", m->epoch, m->epochs, (double)m->train_loss,
                          (double)m->test_loss, (double)m->test_accuracy, (double)m->learning_rate, m->samples));
  }
  calls = user->calls;
  PetscCall(TrainerDestroy(&tr)); /* destroys the monitors' contexts (user too), and closes the CSV file */
  {                               /* the CSV file: a header and one row per epoch, written once (not twice) */
    PetscMPIInt rank;

    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    if (rank == 0) {
      FILE *fp = fopen(csvfile, "r");
      int   c;

      PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "no CSV file %s", csvfile);
      while ((c = fgetc(fp)) != EOF) lines += c == '\n';
      (void)fclose(fp);
    }
    PetscCallMPI(MPI_Bcast(&lines, 1, MPIU_INT, 0, comm));
    PetscCheck(lines == epochs + 1, comm, PETSC_ERR_PLIB, "%s has %" PetscInt_FMT " lines, not a header and %" PetscInt_FMT " rows", csvfile, lines, epochs);
  }
  PetscCall(PetscPrintf(comm, "summary: epochs=%" PetscInt_FMT " calls=%" PetscInt_FMT " csv_lines=%" PetscInt_FMT " train_loss=%.6f test_loss=%.6f test_accuracy=%.4f\n", epochs, calls, lines, (double)trainloss, (double)testloss, (double)testacc));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(PetscFinalize());
  return 0;
}
