/*
  Learning-rate schedules shared by the PetNet optimizers, as closed forms of t = updates applied so far:

    warm-up (t < W)  lr (t + 1) / W                    the first update already moves; the W-th uses lr
    then, t' = t - W:
      constant       lr
      step           lr gamma^floor(t' / S)            PyTorch StepLR
      cosine         lr_min + (lr - lr_min) (1 + cos(pi t' / (T - W))) / 2, and lr_min for t' >= T - W
                                                       PyTorch CosineAnnealingLR(T_max = T - W), held at the end
*/
#include "optimimpl.h"

const char *const PetNetLRScheduleTypes[] = {"constant", "step", "cosine", "PetNetLRScheduleType", "PETNET_LR_", NULL};

PetscErrorCode PetNetLRScheduleInitialize(PetNetLRSchedule *s)
{
  PetscFunctionBegin;
  s->type      = PETNET_LR_CONSTANT;
  s->stepsize  = 0;
  s->gamma     = 0.1;
  s->cosineits = 0;
  s->lrmin     = 0.0;
  s->warmup    = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetLRScheduleSetFromOptions(PetscOptionItems *PetscOptionsObject, PetNetLRSchedule *s)
{
  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Learning-rate schedule (PetNet optimizers)");
  PetscCall(PetscOptionsEnum("-tao_lr_schedule", "Learning-rate schedule", "PetNetTaoSetLRSchedule", PetNetLRScheduleTypes, (PetscEnum)s->type, (PetscEnum *)&s->type, NULL));
  PetscCall(PetNetOptionsInt("-tao_lr_step_size", "step: multiply the learning rate by gamma every this many updates", "PetNetTaoSetLRStep", s->stepsize, &s->stepsize, NULL));
  PetscCall(PetscOptionsReal("-tao_lr_gamma", "step: the factor", "PetNetTaoSetLRStep", s->gamma, &s->gamma, NULL));
  PetscCall(PetNetOptionsInt("-tao_lr_cosine_iterations", "cosine: updates (warm-up included) to reach lr_min; 0 = the Tao's max_it", "PetNetTaoSetLRCosine", s->cosineits, &s->cosineits, NULL));
  PetscCall(PetscOptionsReal("-tao_lr_min", "cosine: the final learning rate", "PetNetTaoSetLRCosine", s->lrmin, &s->lrmin, NULL));
  PetscCall(PetNetOptionsInt("-tao_lr_warmup", "updates of linear warm-up before the schedule; 0 = none", "PetNetTaoSetLRWarmup", s->warmup, &s->warmup, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

/* maxit: the Tao's max_it, the default length of the cosine */
PetscErrorCode PetNetLRScheduleCheck(MPI_Comm comm, const PetNetLRSchedule *s, PetscInt maxit)
{
  PetscInt T = s->cosineits > 0 ? s->cosineits : maxit;

  PetscFunctionBegin;
  PetscCheck(s->warmup >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-tao_lr_warmup must be >= 0, not %" PetscInt_FMT, s->warmup);
  PetscCheck(s->cosineits >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-tao_lr_cosine_iterations must be >= 0 (0: the Tao's max_it), not %" PetscInt_FMT, s->cosineits);
  PetscCheck(s->lrmin >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-tao_lr_min must be >= 0, not %g", (double)s->lrmin);
  PetscCheck(s->gamma > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-tao_lr_gamma must be > 0, not %g", (double)s->gamma);
  if (s->type == PETNET_LR_STEP) PetscCheck(s->stepsize > 0, comm, PETSC_ERR_ARG_WRONG, "The step learning-rate schedule needs its period: give -tao_lr_step_size N (N > 0) or call PetNetTaoSetLRStep()");
  if (s->type == PETNET_LR_COSINE)
    PetscCheck(T > s->warmup, comm, PETSC_ERR_ARG_WRONG, "The cosine schedule runs over %" PetscInt_FMT " updates, which must exceed the %" PetscInt_FMT " warm-up updates: raise -tao_lr_cosine_iterations (or -tao_max_it) or lower -tao_lr_warmup", T,
               s->warmup);
  PetscFunctionReturn(0);
}

/* The learning rate of update t (t = 0 for the first update); lr is the base learning rate */
PetscErrorCode PetNetLRScheduleEvaluate(const PetNetLRSchedule *s, PetscReal lr, PetscInt t, PetscInt maxit, PetscReal *lrt)
{
  PetscInt W = s->warmup, tp = t - s->warmup, T = s->cosineits > 0 ? s->cosineits : maxit;

  PetscFunctionBegin;
  if (t < W) {
    *lrt = lr * (PetscReal)(t + 1) / (PetscReal)W;
    PetscFunctionReturn(0);
  }
  switch (s->type) {
  case PETNET_LR_CONSTANT:
    *lrt = lr;
    break;
  case PETNET_LR_STEP:
    *lrt = lr * PetscPowReal(s->gamma, (PetscReal)(tp / s->stepsize));
    break;
  case PETNET_LR_COSINE:
    if (tp >= T - W)
      *lrt = s->lrmin;
    else
      *lrt = s->lrmin + 0.5 * (lr - s->lrmin) * (1.0 + PetscCosReal(PETSC_PI * (PetscReal)tp / (PetscReal)(T - W)));
    break;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetLRScheduleView(const PetNetLRSchedule *s, PetscInt maxit, PetscViewer viewer)
{
  char   line[256];
  size_t len;

  PetscFunctionBegin;
  /* one PetscViewerASCIIPrintf per line: each call is indented */
  PetscCall(PetscSNPrintf(line, sizeof(line), "learning-rate schedule: %s", PetNetLRScheduleTypes[s->type]));
  PetscCall(PetscStrlen(line, &len));
  switch (s->type) {
  case PETNET_LR_CONSTANT:
    break;
  case PETNET_LR_STEP:
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, ", times %g every %" PetscInt_FMT " updates", (double)s->gamma, s->stepsize));
    break;
  case PETNET_LR_COSINE:
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " to %g at update %" PetscInt_FMT "%s", (double)s->lrmin, s->cosineits > 0 ? s->cosineits : maxit, s->cosineits > 0 ? "" : " (the default length: the whole training, or the Tao's max_it)"));
    break;
  }
  PetscCall(PetscStrlen(line, &len));
  if (s->warmup > 0) PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, ", after %" PetscInt_FMT " updates of linear warm-up", s->warmup));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s\n", line));
  PetscFunctionReturn(0);
}
