/*
  PetNet's first-order optimizers, registered as TAO types: sgd, adam, adamw, rmsprop; and kfac, natural-gradient
  descent preconditioned by the Kronecker-factored Fisher of a Net's layers (src/optim/kfac.c), which shares their
  loop, schedules, weight decay and checkpointed step count.

  They are ordinary Tao solvers: TaoSetType(tao, TAOADAM) or -tao_type adam, TaoSetSolution, an objective-and-gradient
  callback, TaoSolve. The update formulas are those of PyTorch's torch.optim.SGD, Adam, AdamW and RMSprop (same
  order of operations, bias correction, eps placement); tests/test_optim.c checks them against PyTorch to 1e-12.

  One solver iteration k (k = 0, 1, ... within one TaoSolve):
    1. the update hook set with TaoSetUpdate(tao, hook, ctx) is called with k: a trainer draws mini-batch k here;
    2. f and g are evaluated at x_k (TaoComputeObjectiveAndGradient): the loss and gradient of that batch;
    3. Inf or NaN in f or g stops with TAO_DIVERGED_NAN, before x is touched;
    4. TAO's monitors see (k, f, ||g||, step = learning rate of this update): -tao_monitor line k is f(x_k) of batch k;
    5. x_{k+1} = update(x_k, g, optimizer state, lr); tao->niter = k + 1;
    6. TAO's convergence test: -tao_max_it N gives exactly N updates and N batches, -tao_gatol tests ||g|| of the
       batch just used. (gatol and grtol default to 0 for these types: a stochastic gradient norm is no measure of
       convergence; set them explicitly to stop on it. There is no limit on function evaluations.)

  Optimizer state (moments) is made by VecDuplicate of the solution, so it is distributed like the parameters.
  It is allocated once (TaoSetUp) and kept across TaoSolve calls, together with the count of updates applied
  (PyTorch's state['step'], used by the bias correction and by the learning-rate schedule): calling TaoSolve again
  continues training. PetNetTaoGetState / PetNetTaoSetStep save and restore it for checkpoints.

  Learning-rate schedules, shared by all five types (t = updates applied so far, lr = the base learning rate):
    constant   lr
    step       lr * gamma^floor(t' / S)                                   (-tao_lr_step_size S, -tao_lr_gamma)
    cosine     lr_min + (lr - lr_min) (1 + cos(pi t' / (T - W))) / 2,     lr_min once t' >= T - W
               (-tao_lr_cosine_iterations T, default the horizon of PetNetTaoSetLRHorizon
                                                                          (the Trainer: epochs x batches), else the Tao's max_it; -tao_lr_min)
    warm-up    lr (t + 1) / W for t < W, then the schedule above with t' = t - W   (-tao_lr_warmup W)
  T counts the warm-up, so the cosine reaches lr_min after T updates in total.

  Call PetNetTaoInitializePackage() (or PetNetInitializePackage(), or create a Trainer) before TaoSetType/TaoSetFromOptions
  so the types exist.
*/
#pragma once

#include <petsctao.h>
#include <petnetnet.h>

#define TAOSGD     "sgd"
#define TAOADAM    "adam"
#define TAOADAMW   "adamw"
#define TAORMSPROP "rmsprop"
#define TAOKFAC    "kfac"

typedef enum { PETNET_LR_CONSTANT, PETNET_LR_STEP, PETNET_LR_COSINE } PetNetLRScheduleType;
PETSC_EXTERN const char *const PetNetLRScheduleTypes[];

PETSC_EXTERN PetscErrorCode PetNetTaoInitializePackage(void);
PETSC_EXTERN PetscErrorCode PetNetTaoFinalizePackage(void);
PETSC_EXTERN PetscErrorCode PetNetTaoRegisterAll(void);

/* Shared by sgd, adam, adamw, rmsprop (ignored by other Tao types) */
PETSC_EXTERN PetscErrorCode PetNetTaoSetLearningRate(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoGetLearningRate(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSetWeightDecay(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoGetWeightDecay(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSetLRSchedule(Tao, PetNetLRScheduleType);
PETSC_EXTERN PetscErrorCode PetNetTaoSetLRStep(Tao, PetscInt, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoGetLRStep(Tao, PetscInt *, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSetLRCosine(Tao, PetscInt, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoGetLRCosine(Tao, PetscInt *, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSetLRWarmup(Tao, PetscInt);
PETSC_EXTERN PetscErrorCode PetNetTaoSetLRHorizon(Tao, PetscInt);
PETSC_EXTERN PetscErrorCode PetNetTaoComputeLearningRate(Tao, PetscInt, PetscReal *);

/* Checkpointing: the state Vecs (named as PyTorch's state keys: momentum_buffer, exp_avg, exp_avg_sq, max_exp_avg_sq,
   square_avg, grad_avg) are borrowed; write into them to restore. */
PETSC_EXTERN PetscErrorCode PetNetTaoGetState(Tao, PetscInt *, Vec **, PetscInt *);
PETSC_EXTERN PetscErrorCode PetNetTaoSetStep(Tao, PetscInt);
PETSC_EXTERN PetscErrorCode PetNetTaoResetState(Tao);

/* What defines the rest of a run of a PetNet optimizer besides its state Vecs (PetNetTaoGetSettings()): a checkpoint
   keeps it, a restart compares it (TrainerLoadCheckpoint()) */
#define PETNET_TAO_MAX_HYPER 8
typedef struct {
  PetNetLRScheduleType schedule;
  PetscInt             stepsize, cosineits, warmup; /* as set: cosineits 0 means the horizon below */
  PetscInt             horizon;                     /* the schedule's default length in updates as resolved (the driver's
                                                       PetNetTaoSetLRHorizon(), else the Tao's max_it) */
  PetscReal lr, gamma, lrmin, weightdecay;
  PetscInt  nhyper; /* the kind's own settings, option -tao_<type>_<hypername[k]> = hyper[k] (flags 0 or 1) */
  char      hypername[PETNET_TAO_MAX_HYPER][24];
  PetscReal hyper[PETNET_TAO_MAX_HYPER];
} PetNetTaoSettings;
PETSC_EXTERN PetscErrorCode PetNetTaoGetSettings(Tao, PetscBool *, PetNetTaoSettings *);

/* sgd */
PETSC_EXTERN PetscErrorCode PetNetTaoSGDSetMomentum(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoSGDGetMomentum(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSGDSetDampening(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoSGDGetDampening(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoSGDSetNesterov(Tao, PetscBool);

/* adam and adamw */
PETSC_EXTERN PetscErrorCode PetNetTaoAdamSetBetas(Tao, PetscReal, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoAdamGetBetas(Tao, PetscReal *, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoAdamSetEpsilon(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoAdamGetEpsilon(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoAdamSetAMSGrad(Tao, PetscBool);

/* rmsprop */
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropSetAlpha(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropSetEpsilon(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropSetMomentum(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropSetCentered(Tao, PetscBool);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropGetAlpha(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropGetEpsilon(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoRMSpropGetMomentum(Tao, PetscReal *);

/* kfac: natural-gradient descent with the Kronecker-factored Fisher (K-FAC) of the Net's dense and conv2d layers. It
   reads the factor statistics from the forward and backward pass of the objective, so it needs that Net (a Trainer
   gives it). The same inverse is a preconditioner for Krylov solves with the Net's curvature (PetNetPCSetKFAC()). */
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetNet(Tao, Net);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetDamping(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetStatDecay(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetUpdateFrequency(Tao, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetMomentum(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetKLClip(Tao, PetscReal);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetUncoveredGradient(Tao, PetscBool);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetDamping(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetStatDecay(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetMomentum(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetKLClip(Tao, PetscReal *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetFactorEntries(Tao, PetscInt64 *, PetscInt64 *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACGetState(Tao, PetscInt[2], PetscInt *, PetscInt *[], Vec *);
PETSC_EXTERN PetscErrorCode PetNetTaoKFACSetState(Tao, const PetscInt[2], Vec);
PETSC_EXTERN PetscErrorCode PetNetPCSetKFAC(PC, Net);
PETSC_EXTERN PetscErrorCode PetNetPCKFACUpdateStatistics(PC);
PETSC_EXTERN PetscErrorCode PetNetPCKFACAddStatistics(PC);
PETSC_EXTERN PetscErrorCode PetNetPCKFACGetFactorEntries(PC, PetscInt64 *, PetscInt64 *);
