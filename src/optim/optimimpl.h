/*
  Private: what PetNet's TAO optimizers share. optim.c holds the solver loop, set-up, view, options and the state
  for all of them; each kind (sgd.c, adam.c, rmsprop.c) supplies only its settings and its update of x.
*/
#pragma once

#include <petnetoptim.h>
#include <petsc/private/taoimpl.h>
#include <petnet/private/threadsimpl.h>

/* entries above which an update runs on PetNet's threads (elementwise: the same bits for any number of threads) */
#define OPTIM_THREAD_MIN 32768

/* the optimizers' loops over the entries, compiled also for AVX-512 and AVX2 (picked at load time) with fp-contract
   off: every operation rounded as the baseline rounds it (no fused multiply-adds), the same bits on any CPU */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define OPTIM_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define OPTIM_TARGET_CLONES
#endif

/* The learning-rate schedule (schedule.c); see include/petnetoptim.h for the formulas. */
typedef struct {
  PetNetLRScheduleType type;
  PetscInt             stepsize;  /* step: multiply by gamma every stepsize updates */
  PetscReal            gamma;     /* step: the factor */
  PetscInt             cosineits; /* cosine: total updates, warm-up included; 0 = the Tao's max_it */
  PetscReal            lrmin;     /* cosine: the final learning rate */
  PetscInt             warmup;    /* linear warm-up updates; 0 = none */
} PetNetLRSchedule;

PETSC_INTERN PetscErrorCode PetNetLRScheduleInitialize(PetNetLRSchedule *);
PETSC_INTERN PetscErrorCode PetNetLRScheduleSetFromOptions(PetscOptionItems *, PetNetLRSchedule *);
PETSC_INTERN PetscErrorCode PetNetLRScheduleCheck(MPI_Comm, const PetNetLRSchedule *, PetscInt);
PETSC_INTERN PetscErrorCode PetNetLRScheduleEvaluate(const PetNetLRSchedule *, PetscReal, PetscInt, PetscInt, PetscReal *);
PETSC_INTERN PetscErrorCode PetNetLRScheduleView(const PetNetLRSchedule *, PetscInt, PetscViewer);

#define TAOOPTIM_MAX_STATE 4

/* What a kind implements */
typedef struct {
  PetscErrorCode (*setfromoptions)(Tao, PetscOptionItems *);
  PetscErrorCode (*view)(Tao, PetscViewer);
  PetscErrorCode (*check)(Tao);                         /* are the settings consistent? called before every solve */
  PetscErrorCode (*createstate)(Tao);                   /* get the state Vecs the settings need (TaoOptimGetStateVec_Private) */
  PetscErrorCode (*update)(Tao, PetscReal);             /* x <- x - lr * (...) from tao->gradient; one pass over the local arrays */
  PetscErrorCode (*destroy)(Tao);                       /* free data and the kind's composed functions */
  PetscErrorCode (*settings)(Tao, PetNetTaoSettings *); /* the kind's hyperparameters (nhyper, names, values) */
} TaoOptimOps;

typedef struct {
  TaoOptimOps      ops;
  PetscReal        lr;          /* base learning rate, before the schedule */
  PetscReal        weightdecay; /* L2 added to the gradient (sgd, adam, rmsprop) or decoupled (adamw) */
  PetNetLRSchedule schedule;
  PetscInt         horizon;                   /* total updates of the whole training (PetNetTaoSetLRHorizon); 0 = the Tao's max_it */
  PetscInt         step;                      /* updates applied so far, over all solves: bias correction and schedule */
  PetscInt         nstate;                    /* state Vecs, each a VecDuplicate of the solution, zero at creation */
  Vec              state[TAOOPTIM_MAX_STATE]; /* owned here; kinds keep borrowed handles */
  void            *data;                      /* the kind's settings and handles */
} Tao_Optim;

PETSC_INTERN PetscLogEvent TAOOPTIM_Update;

/* The default length of a schedule: the whole training when the driver said it, else this solve's max_it */
#define TaoOptimHorizon(tao, opt) ((opt)->horizon > 0 ? (opt)->horizon : (tao)->max_it)

PETSC_INTERN PetscErrorCode TaoCreate_Optim_Private(Tao, PetscReal, PetscReal);
PETSC_INTERN PetscErrorCode TaoOptimGetStateVec_Private(Tao, const char[], Vec *);
PETSC_INTERN PetscErrorCode TaoOptimOptionName_Private(Tao, const char[], size_t, char[]);
