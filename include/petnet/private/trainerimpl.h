/* Private: the Trainer object. */
#pragma once

#include <petnettrainer.h>
#include <petnetloss.h>
#include <petnetspectrum.h>
#include <petsc/private/petscimpl.h>

PETSC_EXTERN PetscLogEvent TRAINER_Epoch, TRAINER_Evaluate;

/* A population (population.c): this Trainer is trainer k of K on its sub-communicator of the job's communicator */
typedef struct _n_TrainerPopulation *TrainerPopulation;

struct _p_Trainer {
  PETSCHEADER(int); /* no operations: one kind of Trainer */
  Net       net;
  Loss      loss;
  Dataset   train, test;
  PetscBool trainprefixed, testprefixed; /* the Trainer gave the Dataset its prefix ("train_", "test_") */
  Tao       tao;
  Vec       theta; /* TAO's solution: the Net's parameters are set from it at every evaluation (a line search
                      evaluates trial points, so the Net's own Vec cannot be the solution) */
  TrainerMode mode;
  PetscBool   minibatch; /* resolved mode */
  PetscBool   setupcalled;

  PetscInt  epochs, epoch;    /* epochs to run; epochs completed */
  PetscInt  batchsize;        /* -trainer_batch_size, passed to the training Dataset */
  PetscInt  evalbatchsize;    /* chunk size for evaluation and full-batch objectives */
  PetscInt  nbatches, ibatch; /* batches per epoch; next batch of this epoch */
  Vec       X, T, Y, dY;      /* current batch (borrowed from the Dataset), output and its cotangent */
  PetscBool batchcounted;     /* the current batch's loss is in the epoch's statistics */

  /* statistics of the running epoch */
  PetscReal epochloss;
  PetscInt  epochsamples;
  PetscBool diverged;      /* a loss of this epoch was NaN or Inf */
  PetscBool divergedstate; /* the parameters are those of a diverged epoch: never written to a checkpoint */

  /* divergence: an epoch's training loss above divergencefactor x besttrainloss (0: only NaN/Inf) */
  PetscReal divergencefactor;
  PetscReal besttrainloss; /* smallest training loss of the run: the first objective value, then the epochs' */

  /* full batch: one epoch is one TAO iteration; the budget is -trainer_epochs unless the user set -tao_max_it */
  PetscBool      taomaxitset;
  PetscInt       epochstart; /* tr->epoch when the running TaoSolve began */
  PetscInt       taoits;     /* iterations of the last full-batch TaoSolve (-1: none yet) */
  PetscLogDouble tstart;     /* start of the running TrainerTrain() */

  /* Newton-type TAO types: the curvature operator TAO asks for (trainerhessian.c) */
  PetscBool       needhessian;    /* the TAO type calls TaoSetHessian()'s callback */
  LossHessianType hessiantype;    /* -trainer_hessian gn|exact */
  PetscInt        hessiansamples; /* -trainer_hessian_samples S: a fresh sub-sample per outer iteration (0: all) */
  PetscInt        hessianchunk;   /* -trainer_hessian_chunk: local samples per pass (0: all at once) */
  PetscInt        hessianseed, hessianevals;
  PetscReal       hessiandamping; /* -trainer_hessian_damping lambda: H + lambda I */
  PetscInt        newtonsteps;    /* mini-batch mode: TAO iterations per batch (-trainer_newton_steps) */
  PetscBool       hessiankfac;    /* -trainer_hessian_pc kfac: K-FAC (PetNetPCSetKFAC()) preconditions the Newton-CG solves */
  PC              kfacpc;         /* ... that PC (borrowed from the Tao's KSP) */
  Mat             H;
  Vec             Xh, Th; /* the current sub-sample */

  /* results */
  PetscReal trainloss, testloss, testacc, traintime;
  PetscReal besttestloss;
  PetscInt  patience, badepochs;

  /* checkpoints */
  char      checkpoint[PETSC_MAX_PATH_LEN], restart[PETSC_MAX_PATH_LEN];
  PetscInt  checkpointevery;
  PetscInt  lastcheckpoint;
  PetscBool trainlossrestored;   /* trainloss is the last epoch's, from the checkpoint (format 3): not evaluated again */
  PetscInt  failafter, failrank; /* testing aid (-trainer_fail_after_epoch N, -trainer_fail_rank R): SIGKILL rank R after epoch N */
  PetscInt  failstep;            /* testing aid (-trainer_fail_after_step N): SIGKILL rank R once the run's N-th mini-batch update is
                                    applied, inside an epoch (N not a multiple of the batches per epoch); never in a restarted run */

  /* monitors (trainermonitor.c): called in order at the end of every epoch */
#define TRAINER_MAX_MONITORS 10
  PetscErrorCode (*monitor[TRAINER_MAX_MONITORS])(Trainer, PetscInt, const TrainerMetrics *, void *);
  void *monitorctx[TRAINER_MAX_MONITORS];
  PetscErrorCode (*monitordestroy[TRAINER_MAX_MONITORS])(void **);
  PetscInt        nmonitors;
  PetscBool       monitordefault; /* add TrainerMonitorDefault() on stdout at set-up (no -trainer_monitor, no cancel) */
  PetscViewer     progressviewer; /* borrowed: the first ascii monitor's viewer, for the lines within an epoch */
  TrainerMetrics  metrics;        /* of the last completed epoch */
  TrainerMetrics *history;        /* every epoch's metrics, for -trainer_monitor_plot */
  PetscInt        nhistory, maxhistory;
  PetscInt        nrestored;                   /* the first nrestored records came from a checkpoint: TrainerTrain() replays them to the monitors */
  char            plot[PETSC_MAX_PATH_LEN];    /* -trainer_monitor_plot: PNG written at the end of TrainerTrain() */
  char            gnuplot[PETSC_MAX_PATH_LEN]; /* -trainer_monitor_plot_gnuplot: the program */

  /* progress */
  PetscReal      progressinterval;
  PetscLogDouble tepoch, tlastprogress;

  /* sharpness monitor (trainersharpness.c): every sharpnessevery epochs, on the first sharpnesssamples samples */
  PetscInt sharpnessevery, sharpnesssamples;
  Spectrum sharpness;

  /* population training (population.c): NULL unless TrainerSetPopulation() */
  TrainerPopulation population;
};

PETSC_INTERN PetscErrorCode TrainerObjectiveMiniBatch_Private(Tao, Vec, PetscReal *, Vec, void *);
PETSC_INTERN PetscErrorCode TrainerObjectiveFullBatch_Private(Tao, Vec, PetscReal *, Vec, void *);
PETSC_INTERN PetscErrorCode TrainerNextBatch_Private(Tao, PetscInt, void *);
PETSC_INTERN PetscErrorCode TrainerInjectFailure_Private(Trainer, const char[], PetscInt);
PETSC_INTERN PetscErrorCode TrainerEnsureWorkVecs_Private(Trainer, Vec);
PETSC_INTERN PetscErrorCode TrainerAccumulate_Private(Trainer, Dataset, PetscReal *, Vec, PetscInt *, Vec);
PETSC_INTERN PetscErrorCode TrainerMatchNormalization_Private(Trainer, Dataset);
PETSC_INTERN PetscErrorCode TrainerCheckSampleShape_Private(Trainer, Dataset, const char[], const char[]);
PETSC_INTERN PetscErrorCode TrainerCheckTargetSize_Private(Trainer, Dataset, const char[]);
PETSC_INTERN PetscErrorCode TrainerCheckNormalization_Private(Trainer, Dataset, Dataset, const char[], PetscBool);
PETSC_INTERN PetscErrorCode TrainerFullBatchMonitor_Private(Tao, void *);
PETSC_INTERN PetscErrorCode TrainerSetUpHessian_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerMonitorSharpness_Private(Trainer, PetscInt);
PETSC_INTERN PetscErrorCode TrainerMonitor_Private(Trainer, PetscInt, PetscReal, PetscInt, PetscLogDouble);
PETSC_INTERN PetscErrorCode TrainerMonitorReplay_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerMonitorSetUp_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerMonitorSetFromOptions_Private(Trainer, const char[], const char[]);
PETSC_INTERN PetscErrorCode TrainerMonitorDestroy_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPlotCheck_Private(Trainer);
/* Population training (population.c) */
PETSC_INTERN PetscErrorCode TrainerPopulationSetFromOptions_Private(Trainer, PetscOptionItems *);
PETSC_INTERN PetscErrorCode TrainerPopulationSetUpData_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPopulationSetUp_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPopulationDiverged_Private(Trainer, const char[], PetscBool *);
PETSC_INTERN PetscErrorCode TrainerPopulationTournament_Private(Trainer, PetscInt);
PETSC_INTERN PetscErrorCode TrainerPopulationStep_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPopulationSkipSteps_Private(Trainer, PetscBool *);
PETSC_INTERN PetscErrorCode TrainerPopulationMonitor_Private(Trainer, PetscInt);
PETSC_INTERN PetscErrorCode TrainerPopulationFinish_Private(Trainer, PetscBool *);
PETSC_INTERN PetscErrorCode TrainerPopulationView_Private(Trainer, PetscViewer);
PETSC_INTERN PetscErrorCode TrainerPopulationDestroy_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPopulationRestoreHyper_Private(Trainer, const char[], PetscReal, PetscBool *);
PETSC_INTERN PetscErrorCode TrainerPopulationRestart_Private(Trainer);
PETSC_INTERN PetscErrorCode TrainerPopulationGetJobComm_Private(Trainer, MPI_Comm *);
