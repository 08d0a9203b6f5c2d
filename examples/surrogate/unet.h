/*
  bin/surrogate -surrogate_model unet: a U-Net in grid mode (NetSetGrid()) on the n x n field of a DMDA split over all
  ranks, trained on KSP solutions (problem.h) with PetNet's adam through a Tao of its own (unet.c).
*/
#pragma once

#include "problem.h"

/* The default U-Net's total stride: a stride-4 and three stride-2 down-samplings (the grid must be a multiple of it) */
#define SURROGATE_UNET_STRIDE 32

/* The defaults of -surrogate_grid, _train, _test, _batch, _epochs and _lr with -surrogate_model unet */
#define SURROGATE_UNET_GRID   256
#define SURROGATE_UNET_TRAIN  512
#define SURROGATE_UNET_TEST   32
#define SURROGATE_UNET_BATCH  2
#define SURROGATE_UNET_EPOCHS 36
#define SURROGATE_UNET_LR     2e-3

/* The KSP's preconditioner on the large grid: algebraic multigrid (BoomerAMG when PETSc has hypre, else GAMG) */
#if defined(PETSC_HAVE_HYPRE)
#define SURROGATE_UNET_PC PCHYPRE
#else
#define SURROGATE_UNET_PC PCGAMG
#endif

typedef struct {
  SurrogateProblemType problem;
  PetscInt             n, K, Ntrain, Ntest;
  PetscInt             nf;          /* fields per mini-batch (every rank holds its block of each) */
  PetscInt             epochs;      /* passes over the training fields */
  PetscReal            lr;          /* adam's learning rate, with a cosine decay over the training */
  PetscBool            coordinates; /* add the points' x and y as input channels */
  PetscBool            monitor;     /* a line per epoch: training and held-out loss */
} SurrogateUNetOptions;

PetscErrorCode SurrogateUNetRun(const SurrogateUNetOptions *);
