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

/* Checkpoints: parameters, optimizer state, epoch, data order; written atomically. */
PETSC_EXTERN PetscErrorCode TrainerSaveCheckpoint(Trainer, const char[]);
PETSC_EXTERN PetscErrorCode TrainerLoadCheckpoint(Trainer, const char[]);
