/* bin/cosmo3d's network side: a 3-D CNN in grid mode trained on Gaussian random fields (cosmo3dtrain.c) */
#pragma once

#include <petnet.h>
#include <petscdmda.h>
#include "cosmo3dfields.h"

typedef struct {
  PetscInt   N, channels;             /* grid edge, channels per point */
  PetscInt   nf;                      /* fields per group in a batch */
  PetscInt   iterations, test;        /* training steps, held-out fields */
  PetscInt   monitor;                 /* print every this many steps (0: never) */
  PetscInt64 seed;                    /* the data set's seed */
  PetscReal  logArange[2], nrange[2]; /* the prior */
  PetscInt   hessian;                 /* -cosmo3d_hessian: -1 none, else a LossHessianType (LOSS_HESSIAN_GN, _EXACT) */
  PetscInt   newtonsteps;             /* full-batch TAO types: iterations per batch (0: all of them on one batch) */
} Cosmo3dTrainOptions;

typedef struct {
  PetscReal   errA, errn;  /* mean |A_pred/A - 1| and |n_pred - n| / n over the held-out fields */
  PetscReal   train_loss;  /* the last batch's loss */
  PetscReal   first_loss;  /* the loss of the first evaluation (the first batch at the initial parameters) */
  PetscReal   train_time;  /* seconds of TaoSolve */
  PetscReal   step_time;   /* seconds of the last training step */
  PetscReal   peak_mem_mb; /* the largest peak resident memory of a rank, MB */
  PetscInt    iterations, nparams;
  PetscMPIInt ngroups;
} Cosmo3dTrainResults;

PetscErrorCode Cosmo3dTrain(const Cosmo3dTrainOptions *, Cosmo3dTrainResults *);
