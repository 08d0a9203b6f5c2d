/*
  The part of PetNet's TAO optimizers that every kind shares: the solver loop, set-up, options, view, the state
  Vecs and the setters that apply to all kinds. A kind (sgd.c, adam.c, rmsprop.c) fills TaoOptimOps and calls
  TaoCreate_Optim_Private from its TaoCreate_Xxx.
*/
#include "optimimpl.h"

PetscLogEvent TAOOPTIM_Update;

/* The sum of squares of entries [i0, i1) (OPTIM_TARGET_CLONES, as adam.c's update); eight accumulators, so that the
   loop vectorizes without reassociating */
static OPTIM_TARGET_CLONES PetscReal TaoOptimSumSquares(PetscInt i0, PetscInt i1, const PetscScalar *restrict g)
{
  PetscReal s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  PetscInt  i    = i0;

  for (; i + 8 <= i1; i += 8)
    for (PetscInt k = 0; k < 8; k++) s[k] += PetscRealPart(g[i + k] * PetscConj(g[i + k]));
  for (; i < i1; i++) s[0] += PetscRealPart(g[i] * PetscConj(g[i]));
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/*
  ||g||_2 for the monitor, the Inf/NaN check and the convergence test, on PetNet's threads: the sums of squares of
  fixed parts (from the size alone) added in part order, then over the ranks; the same bits at any thread count. A sum
  that overflows (entries beyond 1e154) is left to VecNorm(), which scales.
*/
static PetscErrorCode TaoOptimGradientNorm(Vec g, PetscReal *gnorm)
{
  const PetscScalar *a;
  PetscReal          part[PETNET_THREAD_PARTS], local = 0, sum;
  PetscInt           n, nparts;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(g, &n));
  nparts = PetNetThreadParts(n, OPTIM_THREAD_MIN);
  PetscCall(VecGetArrayRead(g, &a));
  if (nparts == 1)
    part[0] = TaoOptimSumSquares(0, n, a);
  else {
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
    for (PetscInt p = 0; p < nparts; p++) {
      PetscInt i0, i1;

      PetNetThreadPart(n, nparts, p, &i0, &i1);
      part[p] = TaoOptimSumSquares(i0, i1, a);
    }
  }
  PetscCall(VecRestoreArrayRead(g, &a));
  for (PetscInt p = 0; p < nparts; p++) local += part[p];
  PetscCall(MPIU_Allreduce(&local, &sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)g)));
  PetscCall(PetscLogFlops(2.0 * n));
  if (PetscIsInfReal(sum))
    PetscCall(VecNorm(g, NORM_2, gnorm));
  else
    *gnorm = PetscSqrtReal(sum);
  PetscFunctionReturn(0);
}

/*
  One iteration per mini-batch, in this order (see include/petnetoptim.h):
  update hook (draws batch k) -> f, g at x_k -> Inf/NaN check -> monitor -> x_{k+1} -> niter = k+1 -> convergence test.
  The loop never evaluates at x_{k+1} before the next hook, so N iterations use exactly N batches.
  Nothing computed in an iteration is used in the next but the state Vecs and the step: the hook may overwrite the
  solution, the state Vecs, the step and lr, wd (a population's tournament between steps, src/trainer/population.c),
  and the iteration then runs from what it finds, as a fresh TaoSolve() from there would.
*/
static PetscErrorCode TaoSolve_Optim(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;
  PetscReal  f, gnorm, lr;

  PetscFunctionBegin;
  if (tao->XL || tao->XU || tao->ops->computebounds) PetscCall(PetscInfo(tao, "Variable bounds are ignored by the %s optimizer\n", ((PetscObject)tao)->type_name));
  PetscCall(PetNetLRScheduleCheck(PetscObjectComm((PetscObject)tao), &opt->schedule, TaoOptimHorizon(tao, opt)));
  if (opt->ops.check) PetscCall(opt->ops.check(tao));
  PetscCall(opt->ops.createstate(tao));
  tao->reason = tao->max_it > 0 ? TAO_CONTINUE_ITERATING : TAO_DIVERGED_MAXITS; /* -tao_max_it 0: no update */
  while (tao->reason == TAO_CONTINUE_ITERATING) {
    PetscTryTypeMethod(tao, update, tao->niter, tao->user_update);
    PetscCall(TaoComputeObjectiveAndGradient(tao, tao->solution, &f, tao->gradient));
    PetscCall(TaoOptimGradientNorm(tao->gradient, &gnorm));
    if (PetscIsInfOrNanReal(f) || PetscIsInfOrNanReal(gnorm)) {
      PetscCall(PetscInfo(tao, "Objective %g or gradient norm %g is Inf or NaN at iteration %" PetscInt_FMT ": stopping before the update\n", (double)f, (double)gnorm, tao->niter));
      tao->reason = TAO_DIVERGED_NAN;
      break;
    }
    PetscCall(PetNetLRScheduleEvaluate(&opt->schedule, opt->lr, opt->step, TaoOptimHorizon(tao, opt), &lr));
    PetscCall(TaoLogConvergenceHistory(tao, f, gnorm, 0.0, tao->ksp_its));
    PetscCall(TaoMonitor(tao, tao->niter, f, gnorm, 0.0, lr));
    PetscCall(PetscLogEventBegin(TAOOPTIM_Update, tao, 0, 0, 0));
    PetscCall(opt->ops.update(tao, lr));
    PetscCall(PetscLogEventEnd(TAOOPTIM_Update, tao, 0, 0, 0));
    opt->step++;
    tao->niter++;
    PetscUseTypeMethod(tao, convergencetest, tao->cnvP);
  }
  PetscFunctionReturn(0);
}

/* Runs once (TaoSetUp is guarded): the state made here survives later TaoSolve calls. */
static PetscErrorCode TaoSetUp_Optim(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  if (!tao->gradient) PetscCall(VecDuplicate(tao->solution, &tao->gradient));
  PetscCall(opt->ops.createstate(tao));
  PetscFunctionReturn(0);
}

/* The state Vec called name (PyTorch's state key), created zero on first request. */
PetscErrorCode TaoOptimGetStateVec_Private(Tao tao, const char name[], Vec *v)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;
  PetscBool  same;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < opt->nstate; i++) {
    PetscCall(PetscStrcmp(((PetscObject)opt->state[i])->name, name, &same));
    if (same) {
      *v = opt->state[i];
      PetscFunctionReturn(0);
    }
  }
  PetscCheck(opt->nstate < TAOOPTIM_MAX_STATE, PetscObjectComm((PetscObject)tao), PETSC_ERR_PLIB, "More than %d optimizer state vectors", TAOOPTIM_MAX_STATE);
  PetscCheck(tao->solution, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_WRONGSTATE, "Call TaoSetSolution() before setting up the %s optimizer", ((PetscObject)tao)->type_name);
  PetscCall(VecDuplicate(tao->solution, &opt->state[opt->nstate]));
  PetscCall(VecZeroEntries(opt->state[opt->nstate]));
  PetscCall(PetscObjectSetName((PetscObject)opt->state[opt->nstate], name));
  *v = opt->state[opt->nstate++];
  PetscFunctionReturn(0);
}

/* "-tao_<type>_<suffix>", e.g. -tao_adamw_beta1 */
PetscErrorCode TaoOptimOptionName_Private(Tao tao, const char suffix[], size_t len, char name[])
{
  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(name, len, "-tao_%s_%s", ((PetscObject)tao)->type_name, suffix));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoSetFromOptions_Optim(Tao tao, PetscOptionItems *PetscOptionsObject)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;
  char       title[64], name[64];
  PetscReal  lr = opt->lr, wd = opt->weightdecay;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(title, sizeof(title), "PetNet %s optimizer", ((PetscObject)tao)->type_name));
  PetscOptionsHeadBegin(PetscOptionsObject, title);
  PetscCall(TaoOptimOptionName_Private(tao, "lr", sizeof(name), name));
  PetscCall(PetscOptionsReal(name, "Learning rate (before the schedule)", "PetNetTaoSetLearningRate", lr, &lr, NULL));
  PetscCall(PetNetTaoSetLearningRate(tao, lr));
  PetscCall(TaoOptimOptionName_Private(tao, "weight_decay", sizeof(name), name));
  PetscCall(PetscOptionsReal(name, "Weight decay", "PetNetTaoSetWeightDecay", wd, &wd, NULL));
  PetscCall(PetNetTaoSetWeightDecay(tao, wd));
  PetscCall(opt->ops.setfromoptions(tao, PetscOptionsObject));
  PetscOptionsHeadEnd();
  PetscCall(PetNetLRScheduleSetFromOptions(PetscOptionsObject, &opt->schedule));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoView_Optim(Tao tao, PetscViewer viewer)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;
  PetscBool  isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "learning rate %g, weight decay %g\n", (double)opt->lr, (double)opt->weightdecay));
  PetscCall(opt->ops.view(tao, viewer));
  PetscCall(PetNetLRScheduleView(&opt->schedule, TaoOptimHorizon(tao, opt), viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer, "updates applied: %" PetscInt_FMT "\n", opt->step));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoDestroy_Optim(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(opt->ops.destroy(tao));
  for (PetscInt i = 0; i < opt->nstate; i++) PetscCall(VecDestroy(&opt->state[i]));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLearningRate_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLearningRate_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetWeightDecay_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRSchedule_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRStep_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRCosine_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRWarmup_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoComputeLearningRate_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetState_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetStep_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoResetState_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRHorizon_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetSettings_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetWeightDecay_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLRStep_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLRCosine_C", NULL));
  PetscCall(PetscFree(tao->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLearningRate_Optim(Tao tao, PetscReal lr)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCheck(lr >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The learning rate (-tao_%s_lr) must be >= 0, not %g", ((PetscObject)tao)->type_name, (double)lr);
  opt->lr = lr;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetLearningRate_Optim(Tao tao, PetscReal *lr)
{
  PetscFunctionBegin;
  *lr = ((Tao_Optim *)tao->data)->lr;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetWeightDecay_Optim(Tao tao, PetscReal wd)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCheck(wd >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The weight decay (-tao_%s_weight_decay) must be >= 0, not %g", ((PetscObject)tao)->type_name, (double)wd);
  opt->weightdecay = wd;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetWeightDecay_Optim(Tao tao, PetscReal *wd)
{
  Tao_Optim *ctx = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  if (wd) *wd = ctx->weightdecay;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetLRStep_Optim(Tao tao, PetscInt *stepsize, PetscReal *gamma)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  if (stepsize) *stepsize = opt->schedule.stepsize;
  if (gamma) *gamma = opt->schedule.gamma;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetLRCosine_Optim(Tao tao, PetscInt *its, PetscReal *lrmin)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  if (its) *its = opt->schedule.cosineits;
  if (lrmin) *lrmin = opt->schedule.lrmin;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLRSchedule_Optim(Tao tao, PetNetLRScheduleType type)
{
  PetscFunctionBegin;
  ((Tao_Optim *)tao->data)->schedule.type = type;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLRStep_Optim(Tao tao, PetscInt stepsize, PetscReal gamma)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCheck(stepsize > 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The step schedule's period must be > 0, not %" PetscInt_FMT, stepsize);
  PetscCheck(gamma > 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The step schedule's factor gamma must be > 0, not %g", (double)gamma);
  opt->schedule.stepsize = stepsize;
  opt->schedule.gamma    = gamma;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLRCosine_Optim(Tao tao, PetscInt its, PetscReal lrmin)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  if (its == PETSC_DEFAULT || its == PETSC_DECIDE) its = 0;
  PetscCheck(its >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The cosine schedule's length must be >= 0 (0: the Tao's max_it), not %" PetscInt_FMT, its);
  PetscCheck(lrmin >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The cosine schedule's final learning rate must be >= 0, not %g", (double)lrmin);
  opt->schedule.cosineits = its;
  opt->schedule.lrmin     = lrmin;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLRWarmup_Optim(Tao tao, PetscInt warmup)
{
  PetscFunctionBegin;
  PetscCheck(warmup >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The warm-up length must be >= 0, not %" PetscInt_FMT, warmup);
  ((Tao_Optim *)tao->data)->schedule.warmup = warmup;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoComputeLearningRate_Optim(Tao tao, PetscInt t, PetscReal *lr)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCheck(t >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The update index must be >= 0, not %" PetscInt_FMT, t);
  PetscCall(PetNetLRScheduleCheck(PetscObjectComm((PetscObject)tao), &opt->schedule, TaoOptimHorizon(tao, opt)));
  PetscCall(PetNetLRScheduleEvaluate(&opt->schedule, opt->lr, t, TaoOptimHorizon(tao, opt), lr));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetState_Optim(Tao tao, PetscInt *nvec, Vec **vecs, PetscInt *step)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(TaoSetUp(tao));
  PetscCall(opt->ops.createstate(tao));
  if (nvec) *nvec = opt->nstate;
  if (vecs) *vecs = opt->state;
  if (step) *step = opt->step;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetStep_Optim(Tao tao, PetscInt step)
{
  PetscFunctionBegin;
  PetscCheck(step >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The update count must be >= 0, not %" PetscInt_FMT, step);
  ((Tao_Optim *)tao->data)->step = step;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoResetState_Optim(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < opt->nstate; i++) PetscCall(VecZeroEntries(opt->state[i]));
  opt->step = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSetLRHorizon_Optim(Tao tao, PetscInt horizon)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCheck(horizon >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The schedule horizon must be >= 0 (0: the Tao's max_it), not %" PetscInt_FMT, horizon);
  opt->horizon = horizon;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoGetSettings_Optim(Tao tao, PetNetTaoSettings *s)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(s, sizeof(*s)));
  s->schedule    = opt->schedule.type;
  s->stepsize    = opt->schedule.stepsize;
  s->cosineits   = opt->schedule.cosineits;
  s->warmup      = opt->schedule.warmup;
  s->horizon     = TaoOptimHorizon(tao, opt);
  s->lr          = opt->lr;
  s->gamma       = opt->schedule.gamma;
  s->lrmin       = opt->schedule.lrmin;
  s->weightdecay = opt->weightdecay;
  if (opt->ops.settings) PetscCall(opt->ops.settings(tao, s));
  PetscFunctionReturn(0);
}

/* Called by TaoCreate_<Kind> after it has filled opt->ops and opt->data; lr and wd are PyTorch's defaults for the kind. */
PetscErrorCode TaoCreate_Optim_Private(Tao tao, PetscReal lr, PetscReal wd)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  opt->lr          = lr;
  opt->weightdecay = wd;
  opt->step        = 0;
  opt->nstate      = 0;
  PetscCall(PetNetLRScheduleInitialize(&opt->schedule));

  tao->ops->setup          = TaoSetUp_Optim;
  tao->ops->solve          = TaoSolve_Optim;
  tao->ops->view           = TaoView_Optim;
  tao->ops->setfromoptions = TaoSetFromOptions_Optim;
  tao->ops->destroy        = TaoDestroy_Optim;

  /* a stochastic gradient norm measures no convergence: stop on iterations unless the user asks */
  if (!tao->gatol_changed) tao->gatol = 0.0;
  if (!tao->grtol_changed) tao->grtol = 0.0;
  if (!tao->max_funcs_changed) tao->max_funcs = -1;

  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLearningRate_C", PetNetTaoSetLearningRate_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLearningRate_C", PetNetTaoGetLearningRate_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetWeightDecay_C", PetNetTaoSetWeightDecay_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRSchedule_C", PetNetTaoSetLRSchedule_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRStep_C", PetNetTaoSetLRStep_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRCosine_C", PetNetTaoSetLRCosine_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRWarmup_C", PetNetTaoSetLRWarmup_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoComputeLearningRate_C", PetNetTaoComputeLearningRate_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetState_C", PetNetTaoGetState_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetStep_C", PetNetTaoSetStep_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoResetState_C", PetNetTaoResetState_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSetLRHorizon_C", PetNetTaoSetLRHorizon_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetSettings_C", PetNetTaoGetSettings_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetWeightDecay_C", PetNetTaoGetWeightDecay_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLRStep_C", PetNetTaoGetLRStep_Optim));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoGetLRCosine_C", PetNetTaoGetLRCosine_Optim));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLearningRate - sets the base learning rate of a PetNet optimizer, before the schedule

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- lr  - the learning rate, >= 0

  Options Database Keys:
+ -tao_sgd_lr <1e-3>     - for sgd
. -tao_adam_lr <1e-3>    - for adam
. -tao_adamw_lr <1e-3>   - for adamw
- -tao_rmsprop_lr <1e-2> - for rmsprop

  Notes:
  The defaults are PyTorch's. The rate of update t is PetNetTaoComputeLearningRate() of the schedule.

  Level: beginner

.seealso: `PetNetTaoGetLearningRate()`, `PetNetTaoSetLRSchedule()`, `PetNetTaoComputeLearningRate()`, `TAOADAM`
@*/
PetscErrorCode PetNetTaoSetLearningRate(Tao tao, PetscReal lr)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, lr, 2);
  PetscTryMethod(tao, "PetNetTaoSetLearningRate_C", (Tao, PetscReal), (tao, lr));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoGetLearningRate - gets the base learning rate of a PetNet optimizer

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd, adam, adamw or rmsprop (any other type is an error)

  Output Parameter:
. lr - the learning rate before the schedule

  Level: beginner

.seealso: `PetNetTaoSetLearningRate()`, `PetNetTaoComputeLearningRate()`
@*/
PetscErrorCode PetNetTaoGetLearningRate(Tao tao, PetscReal *lr)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(lr, 2);
  PetscUseMethod(tao, "PetNetTaoGetLearningRate_C", (Tao, PetscReal *), (tao, lr));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetWeightDecay - sets the weight decay of a PetNet optimizer

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- wd  - the weight decay, >= 0

  Options Database Key:
. -tao_<type>_weight_decay <wd> - e.g. -tao_adamw_weight_decay; default 0, and 1e-2 for adamw (as PyTorch)

  Notes:
  sgd, adam and rmsprop add wd x to the gradient (an L2 penalty wd/2 |x|^2); adamw applies the decoupled decay
  x <- x (1 - lr wd).

  Level: beginner

.seealso: `PetNetTaoSetLearningRate()`, `TAOADAMW`
@*/
PetscErrorCode PetNetTaoSetWeightDecay(Tao tao, PetscReal wd)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, wd, 2);
  PetscTryMethod(tao, "PetNetTaoSetWeightDecay_C", (Tao, PetscReal), (tao, wd));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLRSchedule - sets the learning-rate schedule of a PetNet optimizer

  Logically collective on tao

  Input Parameters:
+ tao  - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- type - `PETNET_LR_CONSTANT`, `PETNET_LR_STEP` or `PETNET_LR_COSINE`

  Options Database Key:
. -tao_lr_schedule <constant,step,cosine> - the schedule

  Notes:
  The formulas are at the top of include/petnetoptim.h. A warm-up (PetNetTaoSetLRWarmup()) precedes any schedule.

  Level: intermediate

.seealso: `PetNetTaoSetLRStep()`, `PetNetTaoSetLRCosine()`, `PetNetTaoSetLRWarmup()`, `PetNetTaoComputeLearningRate()`
@*/
PetscErrorCode PetNetTaoSetLRSchedule(Tao tao, PetNetLRScheduleType type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(tao, type, 2);
  PetscTryMethod(tao, "PetNetTaoSetLRSchedule_C", (Tao, PetNetLRScheduleType), (tao, type));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLRStep - sets the step schedule: the learning rate is multiplied by gamma every stepsize updates

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
. stepsize - the period in updates, > 0
- gamma    - the factor, > 0

  Options Database Keys:
+ -tao_lr_step_size <S>  - the period
- -tao_lr_gamma <0.1>    - the factor

  Notes:
  lr_t = lr gamma^floor(t' / S), t' the updates after the warm-up (PyTorch's StepLR). Takes effect with
  PetNetTaoSetLRSchedule(tao, PETNET_LR_STEP).

  Level: intermediate

.seealso: `PetNetTaoSetLRSchedule()`, `PetNetTaoSetLRWarmup()`, `PetNetTaoComputeLearningRate()`
@*/
PetscErrorCode PetNetTaoSetLRStep(Tao tao, PetscInt stepsize, PetscReal gamma)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveInt(tao, stepsize, 2);
  PetscValidLogicalCollectiveReal(tao, gamma, 3);
  PetscTryMethod(tao, "PetNetTaoSetLRStep_C", (Tao, PetscInt, PetscReal), (tao, stepsize, gamma));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLRCosine - sets the cosine schedule: the learning rate decays to lrmin after its updates in total

  Logically collective on tao

  Input Parameters:
+ tao   - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
. its   - the number of updates, warm-up included; 0, `PETSC_DEFAULT` or `PETSC_DECIDE`: the horizon of
          PetNetTaoSetLRHorizon(), else the Tao's max_it
- lrmin - the final learning rate, >= 0

  Options Database Keys:
+ -tao_lr_cosine_iterations <T> - the length
- -tao_lr_min <0>               - the final learning rate

  Notes:
  lr_t = lrmin + (lr - lrmin) (1 + cos(pi t' / (T - W))) / 2 with t' = t - W after a warm-up of W updates, and lrmin
  once t' >= T - W. Takes effect with PetNetTaoSetLRSchedule(tao, PETNET_LR_COSINE).

  Level: intermediate

.seealso: `PetNetTaoSetLRSchedule()`, `PetNetTaoSetLRHorizon()`, `PetNetTaoSetLRWarmup()`, `PetNetTaoComputeLearningRate()`
@*/
PetscErrorCode PetNetTaoSetLRCosine(Tao tao, PetscInt its, PetscReal lrmin)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveInt(tao, its, 2);
  PetscValidLogicalCollectiveReal(tao, lrmin, 3);
  PetscTryMethod(tao, "PetNetTaoSetLRCosine_C", (Tao, PetscInt, PetscReal), (tao, its, lrmin));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLRWarmup - sets a linear warm-up of the learning rate, lr (t + 1) / warmup for the first warmup updates

  Logically collective on tao

  Input Parameters:
+ tao    - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- warmup - the number of warm-up updates, >= 0 (0: none)

  Options Database Key:
. -tao_lr_warmup <0> - the number of warm-up updates

  Notes:
  After the warm-up the schedule runs on t' = t - warmup.

  Level: intermediate

.seealso: `PetNetTaoSetLRSchedule()`, `PetNetTaoSetLRCosine()`, `PetNetTaoComputeLearningRate()`
@*/
PetscErrorCode PetNetTaoSetLRWarmup(Tao tao, PetscInt warmup)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveInt(tao, warmup, 2);
  PetscTryMethod(tao, "PetNetTaoSetLRWarmup_C", (Tao, PetscInt), (tao, warmup));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoComputeLearningRate - computes the learning rate the optimizer uses for update t

  Collective on tao

  Input Parameters:
+ tao - the Tao, of type sgd, adam, adamw or rmsprop (any other type is an error)
- t   - the update index, >= 0 (0 is the first update)

  Output Parameter:
. lr - the learning rate of that update: the base rate, warm-up and schedule applied

  Notes:
  Checks the schedule's settings first (the same check as TaoSolve()), so an invalid setting is an error here too.

  Level: intermediate

.seealso: `PetNetTaoSetLearningRate()`, `PetNetTaoSetLRSchedule()`, `PetNetTaoSetLRWarmup()`, `PetNetTaoSetLRHorizon()`
@*/
PetscErrorCode PetNetTaoComputeLearningRate(Tao tao, PetscInt t, PetscReal *lr)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(lr, 3);
  PetscUseMethod(tao, "PetNetTaoComputeLearningRate_C", (Tao, PetscInt, PetscReal *), (tao, t, lr));
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoGetState - gets the optimizer state for a checkpoint: the moment Vecs and the number of updates applied

  Collective on tao

  Input Parameter:
. tao - the Tao; its solution must be set (TaoSetSolution()), it is set up if needed

  Output Parameters:
+ nvec - the number of state Vecs (may be NULL)
. vecs - the state Vecs, borrowed, distributed like the solution and named by their PyTorch state keys
         (momentum_buffer, exp_avg, exp_avg_sq, max_exp_avg_sq, square_avg, grad_avg) (may be NULL)
- step - the number of updates applied so far (may be NULL)

  Notes:
  To restore, get the Vecs of a freshly set-up Tao with the same settings, copy the saved values into them and call
  PetNetTaoSetStep(). For a Tao type that is not a PetNet optimizer: no Vecs and step 0.

  Level: advanced

.seealso: `PetNetTaoSetStep()`, `PetNetTaoResetState()`, `TrainerSaveCheckpoint()`, `TrainerLoadCheckpoint()`
@*/
PetscErrorCode PetNetTaoGetState(Tao tao, PetscInt *nvec, Vec **vecs, PetscInt *step)
{
  PetscErrorCode (*f)(Tao, PetscInt *, Vec **, PetscInt *);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)tao, "PetNetTaoGetState_C", &f));
  if (f)
    PetscCall((*f)(tao, nvec, vecs, step));
  else {
    if (nvec) *nvec = 0;
    if (vecs) *vecs = NULL;
    if (step) *step = 0;
  }
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetStep - sets the number of updates already applied, to resume from a checkpoint

  Logically collective on tao

  Input Parameters:
+ tao  - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- step - the number of updates, >= 0

  Notes:
  The count drives the bias correction of adam/adamw, the learning-rate schedule and whether sgd seeds its momentum
  buffer at the next update (PyTorch's state['step']).

  Level: advanced

.seealso: `PetNetTaoGetState()`, `PetNetTaoResetState()`, `TrainerLoadCheckpoint()`
@*/
PetscErrorCode PetNetTaoSetStep(Tao tao, PetscInt step)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveInt(tao, step, 2);
  PetscTryMethod(tao, "PetNetTaoSetStep_C", (Tao, PetscInt), (tao, step));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoResetState - zeroes the optimizer's moments and update count, so the next TaoSolve() starts training afresh

  Logically collective on tao

  Input Parameter:
. tao - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)

  Level: intermediate

.seealso: `PetNetTaoGetState()`, `PetNetTaoSetStep()`
@*/
PetscErrorCode PetNetTaoResetState(Tao tao)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscTryMethod(tao, "PetNetTaoResetState_C", (Tao), (tao));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSetLRHorizon - sets the number of updates of the whole training, the default length of the cosine schedule

  Logically collective on tao

  Input Parameters:
+ tao     - the Tao, of type sgd, adam, adamw or rmsprop (other types ignore the call)
- horizon - the updates of all TaoSolve() calls together, >= 0; 0 (the default) means the Tao's max_it

  Notes:
  Used when -tao_lr_cosine_iterations is not given. A Trainer, which runs one TaoSolve() per epoch, sets it to
  epochs x batches.

  Level: developer

.seealso: `PetNetTaoSetLRCosine()`, `PetNetTaoComputeLearningRate()`, `TrainerSetUp()`
@*/
PetscErrorCode PetNetTaoSetLRHorizon(Tao tao, PetscInt horizon)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscTryMethod(tao, "PetNetTaoSetLRHorizon_C", (Tao, PetscInt), (tao, horizon));
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoGetSettings - gets what defines the rest of a run of a PetNet optimizer besides its state Vecs: the base
  learning rate, weight decay, schedule (with its length as resolved) and the kind's own hyperparameters

  Not collective

  Input Parameter:
. tao - the Tao

  Output Parameters:
+ isoptim  - PETSC_TRUE for sgd, adam, adamw, rmsprop and kfac (PetNet's optimizers); PETSC_FALSE for other TAO types,
             whose settings are then left zero
- settings - the settings (PetNetTaoSettings in include/petnetoptim.h); hypername[k] is the option suffix of hyper[k]
             (-tao_adam_beta1 for "beta1" of adam)

  Notes:
  TrainerSaveCheckpoint() writes them (format 5) and TrainerLoadCheckpoint() compares them with the restarted run's,
  so that a restart continues the run that wrote the checkpoint or says what differs.

  Level: developer

.seealso: `PetNetTaoGetState()`, `PetNetTaoSetLRHorizon()`, `TrainerSaveCheckpoint()`, `TrainerLoadCheckpoint()`
@*/
PetscErrorCode PetNetTaoGetSettings(Tao tao, PetscBool *isoptim, PetNetTaoSettings *settings)
{
  PetscErrorCode (*f)(Tao, PetNetTaoSettings *);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidBoolPointer(isoptim, 2);
  PetscValidPointer(settings, 3);
  PetscCall(PetscObjectQueryFunction((PetscObject)tao, "PetNetTaoGetSettings_C", &f));
  *isoptim = f ? PETSC_TRUE : PETSC_FALSE;
  if (f)
    PetscCall((*f)(tao, settings));
  else
    PetscCall(PetscMemzero(settings, sizeof(*settings)));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoGetWeightDecay - gets the weight decay of a PetNet optimizer

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd, adam, adamw, rmsprop or kfac (any other type is an error)

  Output Parameter:
. wd - the weight decay

  Level: intermediate

.seealso: `PetNetTaoSetWeightDecay()`, `PetNetTaoGetLearningRate()`
@*/
PetscErrorCode PetNetTaoGetWeightDecay(Tao tao, PetscReal *wd)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(wd, 2);
  PetscUseMethod(tao, "PetNetTaoGetWeightDecay_C", (Tao, PetscReal *), (tao, wd));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoGetLRStep - gets the period and factor of the step learning-rate schedule of a PetNet optimizer

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd, adam, adamw, rmsprop or kfac (any other type is an error)

  Output Parameters:
+ stepsize - the period S in updates (may be NULL)
- gamma    - the factor gamma applied every S updates (may be NULL)

  Level: intermediate

.seealso: `PetNetTaoSetLRStep()`, `PetNetTaoSetLRSchedule()`
@*/
PetscErrorCode PetNetTaoGetLRStep(Tao tao, PetscInt *stepsize, PetscReal *gamma)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscUseMethod(tao, "PetNetTaoGetLRStep_C", (Tao, PetscInt *, PetscReal *), (tao, stepsize, gamma));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoGetLRCosine - gets the length and final rate of the cosine learning-rate schedule of a PetNet optimizer

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd, adam, adamw, rmsprop or kfac (any other type is an error)

  Output Parameters:
+ its   - the length in updates as set (0: the horizon, PetNetTaoSetLRHorizon(), else the Tao's max_it) (may be NULL)
- lrmin - the final learning rate (may be NULL)

  Level: intermediate

.seealso: `PetNetTaoSetLRCosine()`, `PetNetTaoSetLRSchedule()`
@*/
PetscErrorCode PetNetTaoGetLRCosine(Tao tao, PetscInt *its, PetscReal *lrmin)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscUseMethod(tao, "PetNetTaoGetLRCosine_C", (Tao, PetscInt *, PetscReal *), (tao, its, lrmin));
  PetscFunctionReturn(0);
}
