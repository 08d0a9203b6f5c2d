/* Trainer: ties a Net, a Loss and Datasets to a TAO solver; runs epochs, evaluates, monitors, checkpoints. */
#pragma once

#include <petsctao.h>
#include <petnetnet.h>
#include <petnetloss.h>
#include <petnetdataset.h>
#include <petnetoptim.h>

typedef struct _p_Trainer *Trainer;

/* How the objective is presented to TAO:
   minibatch: one TAO iteration per mini-batch (PetNet's sgd, adam, adamw, rmsprop), the batch drawn in TaoSetUpdate;
   fullbatch: the mean loss over the whole training set (TAO's types that need only the gradient: lmvm, blmvm, bqnls,
              bqnkls, bqnktr, bqnktl, cg, bncg, owlqn, bmrm, nm). The types that need a Hessian (nls, ntr, tron, bnls,
              ...) or solve other problems (brgn, pounders, the constrained ones) are refused at TrainerSetUp. */
typedef enum { TRAINER_MODE_AUTO, TRAINER_MODE_MINIBATCH, TRAINER_MODE_FULLBATCH } TrainerMode;
PETSC_EXTERN const char *const TrainerModes[];

PETSC_EXTERN PetscClassId TRAINER_CLASSID;

/* What a monitor receives at the end of every epoch (TrainerMonitorSet(), TrainerGetMetrics()). In full-batch mode an
   epoch is one TAO iteration. Unknown values: test_loss PETSC_MAX_REAL and test_accuracy -1 without an evaluation
   Dataset (accuracy also -1 for regression data), learning_rate NaN when the optimizer has none. */
typedef struct {
  PetscInt  epoch;         /* the epoch just completed, 1-based (epochs before a restart counted); 0: evaluation only */
  PetscInt  epochs;        /* the epochs TrainerTrain() was asked to reach (-trainer_epochs) */
  PetscReal train_loss;    /* as TrainerGetResults() */
  PetscReal test_loss;     /* mean loss over the evaluation Dataset after this epoch */
  PetscReal test_accuracy; /* fraction of evaluation samples whose arg-max output is the label */
  PetscReal learning_rate; /* PetNet's optimizers: the rate of the epoch's last update (schedule applied); TAO's types:
                              the last line-search step length */
  PetscReal epoch_time;    /* seconds of this epoch's optimisation */
  PetscReal elapsed;       /* seconds since the start of this TrainerTrain() */
  PetscInt  samples;       /* training samples this epoch processed */
  PetscReal samples_per_s; /* samples / epoch_time */
  PetscBool restored;      /* an epoch of the run before -trainer_restart, replayed from the checkpoint (format 4) */
} TrainerMetrics;

PETSC_EXTERN PetscErrorCode TrainerInitializePackage(void);
PETSC_EXTERN PetscErrorCode TrainerFinalizePackage(void);
PETSC_EXTERN PetscErrorCode TrainerCreate(MPI_Comm, Trainer *);
PETSC_EXTERN PetscErrorCode TrainerSetNet(Trainer, Net);
PETSC_EXTERN PetscErrorCode TrainerGetNet(Trainer, Net *);
PETSC_EXTERN PetscErrorCode TrainerSetLoss(Trainer, Loss);
PETSC_EXTERN PetscErrorCode TrainerSetDatasets(Trainer, Dataset, Dataset);
PETSC_EXTERN PetscErrorCode TrainerGetTao(Trainer, Tao *);
PETSC_EXTERN PetscErrorCode TrainerSetEpochs(Trainer, PetscInt);
PETSC_EXTERN PetscErrorCode TrainerSetOptionsPrefix(Trainer, const char[]);
PETSC_EXTERN PetscErrorCode TrainerAppendOptionsPrefix(Trainer, const char[]);
PETSC_EXTERN PetscErrorCode TrainerGetOptionsPrefix(Trainer, const char *[]);
PETSC_EXTERN PetscErrorCode TrainerSetFromOptions(Trainer);
PETSC_EXTERN PetscErrorCode TrainerSetUp(Trainer);
PETSC_EXTERN PetscErrorCode TrainerTrain(Trainer);
PETSC_EXTERN PetscErrorCode TrainerEvaluate(Trainer, Dataset, PetscReal *, PetscReal *);
/* Inference (predict.c): outputs [N][nout] in file order, loss and accuracy; the outputs and labels to .h5 or .csv */
PETSC_EXTERN PetscErrorCode TrainerPredict(Trainer, Dataset, Vec *, PetscReal *, PetscReal *);
PETSC_EXTERN PetscErrorCode TrainerSavePredictions(Trainer, Vec, const char[]);
PETSC_EXTERN PetscErrorCode TrainerView(Trainer, PetscViewer);
PETSC_EXTERN PetscErrorCode TrainerDestroy(Trainer *);

/* Results of the last TrainerTrain */
PETSC_EXTERN PetscErrorCode TrainerGetResults(Trainer, PetscInt *, PetscReal *, PetscReal *, PetscReal *, PetscReal *);
PETSC_EXTERN PetscErrorCode TrainerGetTaoIterations(Trainer, PetscInt *);
PETSC_EXTERN PetscErrorCode TrainerGetMetrics(Trainer, TrainerMetrics *);

/* Monitors: called at the end of every epoch (-trainer_monitor ascii|csv|draw[:file], TrainerMonitorSet()) */
PETSC_EXTERN PetscErrorCode TrainerMonitorSet(Trainer, PetscErrorCode (*)(Trainer, PetscInt, const TrainerMetrics *, void *), void *, PetscErrorCode (*)(void **));
PETSC_EXTERN PetscErrorCode TrainerMonitorCancel(Trainer);
PETSC_EXTERN PetscErrorCode TrainerMonitorDefault(Trainer, PetscInt, const TrainerMetrics *, PetscViewerAndFormat *);
PETSC_EXTERN PetscErrorCode TrainerMonitorCSV(Trainer, PetscInt, const TrainerMetrics *, PetscViewerAndFormat *);
PETSC_EXTERN PetscErrorCode TrainerMonitorDraw(Trainer, PetscInt, const TrainerMetrics *, PetscViewerAndFormat *);
PETSC_EXTERN PetscErrorCode TrainerPlotCurves(Trainer, const char[]);

/* Checkpoints: parameters, optimizer state, epoch, data order; written atomically. */
PETSC_EXTERN PetscErrorCode TrainerSaveCheckpoint(Trainer, const char[]);
PETSC_EXTERN PetscErrorCode TrainerLoadCheckpoint(Trainer, const char[]);

/* Population training (LTFB, population-based search): K trainers on K equal sub-communicators of the job's
   communicator, tournaments between random pairs at epoch ends (src/trainer/population.c) */
PETSC_EXTERN PetscErrorCode TrainerPopulationSplit(MPI_Comm, const char[], MPI_Comm *, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode TrainerSetPopulation(Trainer, MPI_Comm);
PETSC_EXTERN PetscErrorCode TrainerGetPopulation(Trainer, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode TrainerPopulationGetResults(Trainer, PetscInt *, PetscInt *, PetscReal *, PetscReal *);
