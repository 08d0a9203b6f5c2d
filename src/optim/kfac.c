/*
  kfac: natural-gradient descent with K-FAC, the Kronecker-factored Fisher of the dense, conv2d and conv3d layers of a Net
  (Martens and Grosse 2015; Grosse and Martens 2016 for convolutions; the factors in kfacfactors.c). Update t, with g
  the gradient of the mini-batch just evaluated, lr the scheduled learning rate, wd the weight decay, mu the momentum:

    A, S  <- decay (A, S) + (1 - decay) (this batch's factors)         at t = 0, s, 2s, ... (-tao_kfac_stat_every s, default
                                                                       1: every update); the first batch as it is
    (A + pi sqrt(lambda) I)^{-1}, (S + sqrt(lambda)/pi I)^{-1}         at t = 0, k, 2k, ... (-tao_kfac_inverse_every k)
    p = F^{-1} g                                                       per block S^{-1} G A^{-1}, bias in the last column of G
    p <- nu p,  nu = min(1, sqrt(kappa / (lr^2 |p.g|)))                KL clipping (Ba, Grosse, Martens 2017), kappa > 0
    d = p + wd x
    if mu != 0:  b = d at the first update, b = mu b + d afterwards;   d = b
    x = x - lr d

  Weight decay and momentum act on the preconditioned direction, as torch.optim.SGD applied to the preconditioned
  gradient does in the usual K-FAC implementations. The statistics come from the pass that computed g: the objective
  must run NetForward() and NetBackward() of the mean loss over its mini-batch on the Net given to
  PetNetTaoKFACSetNet() (a Trainer's objective does). State: momentum_buffer (only with momentum); the factors are
  part of a checkpoint since format 6 (PetNetTaoKFACGetState(), kfacstate.c): the averages, the inverses in use and
  the counters nupdates and ninverted, so that a restart refreshes them at the updates the uninterrupted run would
  (tests trainer_resume_kfac_2, _history_2, _21, _sharded_2, _sharded_12, _stages_2). Without them (a format 1-5
  checkpoint) a restart's first update rebuilds the factors from its batch alone (nupdates == 0) and inverts them
  (ninverted < 0).
*/
#include "optimimpl.h"
#include "kfacimpl.h"

typedef struct {
  Net        net;
  PetNetKFAC kfac;
  PetscReal  damping, decay, klclip, momentum;
  PetscInt   statevery, inverseevery;
  PetscBool  uncoveredgradient;
  Vec        buf; /* borrowed from the Tao_Optim state */
  Vec        p;   /* the preconditioned gradient */
} Tao_KFAC;

static PetscErrorCode TaoOptimCheck_KFAC(Tao tao)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;
  PetscInt  N, nparams;

  PetscFunctionBegin;
  PetscCheck(kf->net, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_WRONGSTATE,
             "The kfac optimizer preconditions with the curvature of a Net's layers and has no Net: call PetNetTaoKFACSetNet() (a Trainer does so in TrainerSetUp()), or use -tao_type adam or sgd");
  PetscCall(NetGetNumParameters(kf->net, &nparams));
  PetscCall(VecGetSize(tao->solution, &N));
  PetscCheck(N == nparams, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_INCOMP,
             "The kfac optimizer's solution has %" PetscInt_FMT " entries, but its Net has %" PetscInt_FMT " parameters: the solution must be the parameters of the Net given to PetNetTaoKFACSetNet()", N, nparams);
  if (kf->kfac) { /* the factors are placed for the Net's parallel mode and groups of ranks: new ones place them anew */
    NetParallelType parallel;
    PetscBool       groups;

    PetscCall(NetGetParallel(kf->net, &parallel));
    PetscCall(PetNetKFACNetOnGroups(kf->net, &groups));
    if (parallel != kf->kfac->parallel || groups != kf->kfac->groups) PetscCall(PetNetKFACDestroy(&kf->kfac));
  }
  if (!kf->kfac) PetscCall(PetNetKFACCreate(kf->net, kf->uncoveredgradient, "-tao_kfac_uncovered_gradient", &kf->kfac));
  PetscCall(PetNetKFACSetDamping(kf->kfac, kf->damping));
  PetscCall(PetNetKFACSetDecay(kf->kfac, kf->decay));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimCreateState_KFAC(Tao tao)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (kf->momentum != 0 && !kf->buf) PetscCall(TaoOptimGetStateVec_Private(tao, "momentum_buffer", &kf->buf));
  if (!kf->p) PetscCall(VecDuplicate(tao->solution, &kf->p));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimUpdate_KFAC(Tao tao, PetscReal lr)
{
  Tao_Optim         *opt = (Tao_Optim *)tao->data;
  Tao_KFAC          *kf  = (Tao_KFAC *)opt->data;
  const PetscReal    wd = opt->weightdecay, mu = kf->momentum;
  const PetscBool    first = opt->step == 0, usebuf = mu != 0;
  const PetscScalar *p;
  PetscScalar       *x, *b = NULL, pg;
  PetscReal          nu = 1.0;
  PetscInt           n;

  PetscFunctionBegin;
  if (kf->kfac->nupdates == 0 || opt->step % kf->statevery == 0) PetscCall(PetNetKFACUpdateStatistics(kf->kfac));
  if (kf->kfac->ninverted < 0 || opt->step % kf->inverseevery == 0) PetscCall(PetNetKFACInvert(kf->kfac));
  PetscCall(PetNetKFACApply(kf->kfac, tao->gradient, kf->p));
  if (kf->klclip > 0 && lr > 0) {
    PetscCall(VecDot(kf->p, tao->gradient, &pg));
    if (PetscAbsScalar(pg) > 0) nu = PetscMin(1.0, PetscSqrtReal(kf->klclip / (lr * lr * PetscAbsScalar(pg))));
  }
  PetscCall(VecGetLocalSize(tao->solution, &n));
  PetscCall(VecGetArray(tao->solution, &x));
  PetscCall(VecGetArrayRead(kf->p, &p));
  if (usebuf) PetscCall(VecGetArray(kf->buf, &b));
  for (PetscInt i = 0; i < n; i++) {
    PetscScalar d = nu * p[i] + wd * x[i];

    if (usebuf) {
      b[i] = first ? d : mu * b[i] + d;
      d    = b[i];
    }
    x[i] -= lr * d;
  }
  if (usebuf) PetscCall(VecRestoreArray(kf->buf, &b));
  PetscCall(VecRestoreArrayRead(kf->p, &p));
  PetscCall(VecRestoreArray(tao->solution, &x));
  PetscCall(PetscLogFlops((5.0 + (usebuf ? 2.0 : 0.0)) * n));
  PetscFunctionReturn(0);
}

/* The factors exist from the first TaoSolve() on; a checkpoint may read or restore them before it (after TaoSetUp()) */
static PetscErrorCode TaoKFACGetFactors_Private(Tao tao, PetNetKFAC *kfac)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(tao->solution, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_WRONGSTATE, "The kfac optimizer's state needs its solution: call TaoSetSolution() (a Trainer does so in TrainerSetUp())");
  PetscCall(TaoOptimCheck_KFAC(tao));
  *kfac = kf->kfac;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACGetState_KFAC(Tao tao, PetscInt counters[2], PetscInt *nblocks, PetscInt *blocks[], Vec *factors)
{
  PetNetKFAC kfac = NULL;

  PetscFunctionBegin;
  PetscCall(TaoKFACGetFactors_Private(tao, &kfac));
  PetscCall(PetNetKFACGetState(kfac, counters, nblocks, blocks, factors));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetState_KFAC(Tao tao, const PetscInt counters[2], Vec factors)
{
  PetNetKFAC kfac = NULL;

  PetscFunctionBegin;
  PetscCall(TaoKFACGetFactors_Private(tao, &kfac));
  PetscCall(PetNetKFACSetState(kfac, counters, factors));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetNet_KFAC(Tao tao, Net net)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (net == kf->net) PetscFunctionReturn(0);
  PetscCall(PetscObjectReference((PetscObject)net));
  PetscCall(NetDestroy(&kf->net));
  PetscCall(PetNetKFACDestroy(&kf->kfac));
  kf->net = net;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetDamping_KFAC(Tao tao, PetscReal damping)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(damping > 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The K-FAC damping (-tao_kfac_damping) must be > 0, not %g", (double)damping);
  kf->damping = damping;
  if (kf->kfac) PetscCall(PetNetKFACSetDamping(kf->kfac, damping)); /* at once: a population may change it between two updates */
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetStatDecay_KFAC(Tao tao, PetscReal decay)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(decay >= 0 && decay < 1, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The K-FAC statistics decay (-tao_kfac_stat_decay) must be in [0, 1), not %g", (double)decay);
  kf->decay = decay;
  if (kf->kfac) PetscCall(PetNetKFACSetDecay(kf->kfac, decay));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetUpdateFrequency_KFAC(Tao tao, PetscInt statevery, PetscInt inverseevery)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (statevery == PETSC_DEFAULT) statevery = kf->statevery;
  if (inverseevery == PETSC_DEFAULT) inverseevery = kf->inverseevery;
  PetscCheck(statevery > 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "-tao_kfac_stat_every must be > 0 (1: every update), not %" PetscInt_FMT, statevery);
  PetscCheck(inverseevery > 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "-tao_kfac_inverse_every must be > 0 (1: every update), not %" PetscInt_FMT, inverseevery);
  kf->statevery    = statevery;
  kf->inverseevery = inverseevery;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetMomentum_KFAC(Tao tao, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscCheck(momentum >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The kfac momentum (-tao_kfac_momentum) must be >= 0, not %g", (double)momentum);
  ((Tao_KFAC *)((Tao_Optim *)tao->data)->data)->momentum = momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetKLClip_KFAC(Tao tao, PetscReal klclip)
{
  PetscFunctionBegin;
  PetscCheck(klclip >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The K-FAC KL clip (-tao_kfac_kl_clip) must be >= 0 (0: no clipping), not %g", (double)klclip);
  ((Tao_KFAC *)((Tao_Optim *)tao->data)->data)->klclip = klclip;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACGetDamping_KFAC(Tao tao, PetscReal *damping)
{
  Tao_KFAC *ctx = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (damping) *damping = ctx->damping;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACGetStatDecay_KFAC(Tao tao, PetscReal *decay)
{
  Tao_KFAC *ctx = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (decay) *decay = ctx->decay;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACGetMomentum_KFAC(Tao tao, PetscReal *momentum)
{
  Tao_KFAC *ctx = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (momentum) *momentum = ctx->momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACGetKLClip_KFAC(Tao tao, PetscReal *klclip)
{
  Tao_KFAC *ctx = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (klclip) *klclip = ctx->klclip;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoKFACSetUncoveredGradient_KFAC(Tao tao, PetscBool flg)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (flg != kf->uncoveredgradient) PetscCall(PetNetKFACDestroy(&kf->kfac)); /* rebuilt with the new blocks */
  kf->uncoveredgradient = flg;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimSetFromOptions_KFAC(Tao tao, PetscOptionItems *PetscOptionsObject)
{
  Tao_KFAC *kf      = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;
  PetscReal damping = kf->damping, decay = kf->decay, klclip = kf->klclip, momentum = kf->momentum;
  PetscInt  statevery = kf->statevery, every = kf->inverseevery;
  PetscBool uncovered = kf->uncoveredgradient;

  PetscFunctionBegin;
  PetscCall(PetscOptionsReal("-tao_kfac_damping", "Tikhonov damping lambda, split between the factors (sqrt(lambda) pi and sqrt(lambda)/pi)", "PetNetTaoKFACSetDamping", damping, &damping, NULL));
  PetscCall(PetNetTaoKFACSetDamping(tao, damping));
  PetscCall(PetscOptionsReal("-tao_kfac_stat_decay", "Decay of the running averages of the factors", "PetNetTaoKFACSetStatDecay", decay, &decay, NULL));
  PetscCall(PetNetTaoKFACSetStatDecay(tao, decay));
  PetscCall(PetNetOptionsInt("-tao_kfac_stat_every", "Fold the factors of the current batch into the averages every this many updates", "PetNetTaoKFACSetUpdateFrequency", statevery, &statevery, NULL));
  PetscCall(PetNetOptionsInt("-tao_kfac_inverse_every", "Recompute the damped inverses every this many updates", "PetNetTaoKFACSetUpdateFrequency", every, &every, NULL));
  PetscCall(PetNetTaoKFACSetUpdateFrequency(tao, statevery, every));
  PetscCall(PetscOptionsReal("-tao_kfac_momentum", "Momentum factor on the preconditioned direction (0: none)", "PetNetTaoKFACSetMomentum", momentum, &momentum, NULL));
  PetscCall(PetNetTaoKFACSetMomentum(tao, momentum));
  PetscCall(PetscOptionsReal("-tao_kfac_kl_clip", "Scale the step so that lr^2 p.g stays below this (0: no clipping)", "PetNetTaoKFACSetKLClip", klclip, &klclip, NULL));
  PetscCall(PetNetTaoKFACSetKLClip(tao, klclip));
  PetscCall(
      PetscOptionsBool("-tao_kfac_uncovered_gradient", "Step the parameters of layers K-FAC does not cover (batchnorm, ode, ...) along the plain gradient instead of refusing them", "PetNetTaoKFACSetUncoveredGradient", uncovered, &uncovered, NULL));
  PetscCall(PetNetTaoKFACSetUncoveredGradient(tao, uncovered));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimView_KFAC(Tao tao, PetscViewer viewer)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "damping %g, statistics decay %g, statistics every %" PetscInt_FMT " and inverses every %" PetscInt_FMT " updates\n", (double)kf->damping, (double)kf->decay, kf->statevery, kf->inverseevery));
  if (kf->momentum == 0)
    PetscCall(PetscViewerASCIIPrintf(viewer, "momentum: none\n"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "momentum %g\n", (double)kf->momentum));
  if (kf->klclip > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer, "KL clipping at %g\n", (double)kf->klclip));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "KL clipping: none\n"));
  if (kf->kfac)
    PetscCall(PetNetKFACView(kf->kfac, viewer));
  else if (!kf->net)
    PetscCall(PetscViewerASCIIPrintf(viewer, "no Net yet (PetNetTaoKFACSetNet())\n"));
  PetscFunctionReturn(0);
}

/* For a checkpoint: this kind's settings that shape the updates (PetNetTaoGetSettings()); the names are the options'
   suffixes (-tao_kfac_<name>) */
static PetscErrorCode TaoOptimSettings_KFAC(Tao tao, PetNetTaoSettings *s)
{
  Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;
  struct {
    const char *name;
    PetscReal   value;
  } hyper[] = {
      {"damping", kf->damping},
      {"stat_decay", kf->decay},
      {"stat_every", (PetscReal)kf->statevery},
      {"inverse_every", (PetscReal)kf->inverseevery},
      {"momentum", kf->momentum},
      {"kl_clip", kf->klclip},
      {"uncovered_gradient", kf->uncoveredgradient ? 1.0 : 0.0},
  };

  PetscFunctionBegin;
  s->nhyper = (PetscInt)(sizeof(hyper) / sizeof(hyper[0]));
  for (PetscInt k = 0; k < s->nhyper; k++) {
    PetscCall(PetscStrncpy(s->hypername[k], hyper[k].name, sizeof(s->hypername[k])));
    s->hyper[k] = hyper[k].value;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimDestroy_KFAC(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;
  Tao_KFAC  *kf  = (Tao_KFAC *)opt->data;

  PetscFunctionBegin;
  PetscCall(PetNetKFACDestroy(&kf->kfac));
  PetscCall(NetDestroy(&kf->net));
  PetscCall(VecDestroy(&kf->p));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetNet_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetDamping_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetStatDecay_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetUpdateFrequency_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetKLClip_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetUncoveredGradient_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetDamping_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetStatDecay_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetKLClip_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetState_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetState_C", NULL));
  PetscCall(PetscFree(opt->data));
  PetscFunctionReturn(0);
}

/*MC
  TAOKFAC - "kfac": natural-gradient descent preconditioned by K-FAC, the Kronecker-factored approximate Fisher of the
  dense, conv2d and conv3d layers of a Net (in batch mode), one update per mini-batch.

  Options:
+ -tao_kfac_lr <0.1>                 - learning rate (the schedules of -tao_lr_schedule apply)
. -tao_kfac_damping <1e-3>           - Tikhonov damping lambda, split between the two factors by their trace ratio
. -tao_kfac_stat_decay <0.95>        - decay of the running averages of the factors
. -tao_kfac_stat_every <1>          - fold the current batch's factors into the averages every this many updates
. -tao_kfac_inverse_every <10>       - recompute the damped inverses every this many updates
. -tao_kfac_momentum <0>             - momentum on the preconditioned direction
. -tao_kfac_kl_clip <0>              - KL clipping of the step (0: none)
. -tao_kfac_weight_decay <0>         - L2 weight decay added to the preconditioned direction
- -tao_kfac_uncovered_gradient       - step the parameters of other layer kinds (batchnorm, ode) along the plain gradient

  Notes:
  Needs the Net whose parameters are the solution (PetNetTaoKFACSetNet(); a Trainer gives it) and an objective that
  runs NetForward() and NetBackward() of the mean loss of the mini-batch on that Net, in one pass: a Trainer runs kfac
  in mini-batch mode (its default for this type); with -trainer_mode fullbatch its objective works in chunks and the
  statistics would be those of the last chunk. Factor statistics are summed over the ranks, so results do not depend
  on the number of ranks beyond round-off. With -net_parallel replicated every rank holds every factor; with
  -net_parallel sharded or model each block's factors are summed to, kept, inverted and applied by one rank, the one
  that owns the most of the block's weights, so that no rank holds all of them (PetNetTaoKFACGetFactorEntries()).

  Level: intermediate

.seealso: `PetNetTaoKFACSetNet()`, `PetNetPCSetKFAC()`, `TAOSGD`, `TAOADAM`
M*/
PETSC_INTERN PetscErrorCode TaoCreate_KFAC(Tao tao)
{
  Tao_Optim *opt;
  Tao_KFAC  *kf;

  PetscFunctionBegin;
  PetscCall(PetscNew(&opt));
  PetscCall(PetscNew(&kf));
  kf->damping             = 1e-3;
  kf->decay               = 0.95;
  kf->statevery           = 1;
  kf->inverseevery        = 10;
  opt->data               = kf;
  opt->ops.setfromoptions = TaoOptimSetFromOptions_KFAC;
  opt->ops.view           = TaoOptimView_KFAC;
  opt->ops.check          = TaoOptimCheck_KFAC;
  opt->ops.createstate    = TaoOptimCreateState_KFAC;
  opt->ops.update         = TaoOptimUpdate_KFAC;
  opt->ops.destroy        = TaoOptimDestroy_KFAC;
  opt->ops.settings       = TaoOptimSettings_KFAC;
  tao->data               = opt;
  PetscCall(TaoCreate_Optim_Private(tao, 0.1, 0.0));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetNet_C", PetNetTaoKFACSetNet_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetDamping_C", PetNetTaoKFACSetDamping_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetStatDecay_C", PetNetTaoKFACSetStatDecay_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetUpdateFrequency_C", PetNetTaoKFACSetUpdateFrequency_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetMomentum_C", PetNetTaoKFACSetMomentum_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetKLClip_C", PetNetTaoKFACSetKLClip_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetUncoveredGradient_C", PetNetTaoKFACSetUncoveredGradient_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetDamping_C", PetNetTaoKFACGetDamping_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetStatDecay_C", PetNetTaoKFACGetStatDecay_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetMomentum_C", PetNetTaoKFACGetMomentum_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetKLClip_C", PetNetTaoKFACGetKLClip_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACGetState_C", PetNetTaoKFACGetState_KFAC));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoKFACSetState_C", PetNetTaoKFACSetState_KFAC));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetNet - gives the kfac optimizer the Net whose parameters it trains and whose layers it preconditions

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type kfac (other types ignore the call)
- net - the Net; the Tao takes a reference to it. The Tao's solution must be laid out like its parameters.

  Notes:
  The Trainer calls it in TrainerSetUp() when the Tao is of type kfac. The objective given to the Tao must run
  NetForward() and NetBackward() of the mean loss of its mini-batch on this Net: the factor statistics are read from
  that pass. Every layer with parameters must be dense, conv2d or conv3d in batch mode, unless
  PetNetTaoKFACSetUncoveredGradient() allows others; the first TaoSolve() checks this.

  Level: intermediate

.seealso: `TAOKFAC`, `TrainerSetUp()`, `PetNetTaoKFACSetDamping()`, `PetNetTaoKFACSetUncoveredGradient()`
@*/
PetscErrorCode PetNetTaoKFACSetNet(Tao tao, Net net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscCheckSameComm(tao, 1, net, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetNet_C", (Tao, Net), (tao, net));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetDamping - sets the Tikhonov damping lambda of the kfac optimizer

  Logically collective on tao

  Input Parameters:
+ tao     - the Tao, of type kfac (other types ignore the call)
- damping - lambda > 0

  Options Database Key:
. -tao_kfac_damping <1e-3> - the damping

  Notes:
  Factored Tikhonov damping (Martens and Grosse 2015): the inverses are (A + pi sqrt(lambda) I)^{-1} and
  (S + sqrt(lambda)/pi I)^{-1} with pi = sqrt((tr A / dim A) / (tr S / dim S)). Larger values make the step closer to
  a gradient step of length lr/lambda.

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetUpdateFrequency()`, `PetNetTaoKFACSetStatDecay()`
@*/
PetscErrorCode PetNetTaoKFACSetDamping(Tao tao, PetscReal damping)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, damping, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetDamping_C", (Tao, PetscReal), (tao, damping));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetStatDecay - sets the decay of the running averages of the K-FAC factors

  Logically collective on tao

  Input Parameters:
+ tao   - the Tao, of type kfac (other types ignore the call)
- decay - in [0, 1): A <- decay A + (1 - decay) A_batch at every update (0: the last batch only)

  Options Database Key:
. -tao_kfac_stat_decay <0.95> - the decay

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetDamping()`, `PetNetTaoKFACSetUpdateFrequency()`
@*/
PetscErrorCode PetNetTaoKFACSetStatDecay(Tao tao, PetscReal decay)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, decay, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetStatDecay_C", (Tao, PetscReal), (tao, decay));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetUpdateFrequency - sets how often the kfac optimizer refreshes the statistics of its factors and
  recomputes their damped inverses

  Logically collective on tao

  Input Parameters:
+ tao          - the Tao, of type kfac (other types ignore the call)
. statevery    - the period of the statistics in updates, > 0 (`PETSC_DEFAULT`: unchanged): the current batch's factors
                 are folded into the running averages at updates 0, statevery, 2 statevery, ...
- inverseevery - the period of the inverses in updates, > 0 (`PETSC_DEFAULT`: unchanged): computed at updates 0,
                 inverseevery, 2 inverseevery, ...

  Options Database Keys:
+ -tao_kfac_stat_every <1>     - the period of the statistics
- -tao_kfac_inverse_every <10> - the period of the inverses

  Notes:
  The statistics cost about as much as the forward and backward pass of the batch (one symmetric rank-n update per
  factor, and a sum over the ranks per layer: to every rank in replicated mode, to the factor's owner in sharded and
  model modes); the inverses (a Cholesky factorization per factor, on every rank, or on its owner) cost the cube of
  the layer widths. Both are reused in between.

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetDamping()`, `PetNetTaoKFACSetStatDecay()`
@*/
PetscErrorCode PetNetTaoKFACSetUpdateFrequency(Tao tao, PetscInt statevery, PetscInt inverseevery)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveInt(tao, statevery, 2);
  PetscValidLogicalCollectiveInt(tao, inverseevery, 3);
  PetscTryMethod(tao, "PetNetTaoKFACSetUpdateFrequency_C", (Tao, PetscInt, PetscInt), (tao, statevery, inverseevery));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetMomentum - sets the momentum of the kfac optimizer, applied to the preconditioned direction

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type kfac (other types ignore the call)
- momentum - mu >= 0 (0: none, no momentum buffer)

  Options Database Key:
. -tao_kfac_momentum <0> - the momentum

  Notes:
  b = mu b + d, seeded with b = d at the first update, and x <- x - lr b, where d is the preconditioned (and clipped)
  gradient plus the weight decay term: torch.optim.SGD without dampening, applied to the K-FAC direction.

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoSGDSetMomentum()`, `PetNetTaoSetLearningRate()`
@*/
PetscErrorCode PetNetTaoKFACSetMomentum(Tao tao, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, momentum, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetMomentum_C", (Tao, PetscReal), (tao, momentum));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetKLClip - sets the KL clipping of the kfac optimizer's steps (Ba, Grosse and Martens 2017)

  Logically collective on tao

  Input Parameters:
+ tao    - the Tao, of type kfac (other types ignore the call)
- klclip - kappa >= 0 (0: no clipping)

  Options Database Key:
. -tao_kfac_kl_clip <0> - kappa

  Notes:
  The preconditioned gradient p is scaled by nu = min(1, sqrt(kappa / (lr^2 |p.g|))), so that the predicted change of
  the model's distribution, lr^2 p^T F p = lr^2 p.g, stays below kappa.

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetDamping()`
@*/
PetscErrorCode PetNetTaoKFACSetKLClip(Tao tao, PetscReal klclip)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, klclip, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetKLClip_C", (Tao, PetscReal), (tao, klclip));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACSetUncoveredGradient - lets the kfac optimizer train networks with layers K-FAC does not cover (batchnorm,
  ode), stepping their parameters along the plain gradient

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type kfac (other types ignore the call)
- flg - `PETSC_TRUE` to precondition only the dense, conv2d and conv3d layers (batch mode); `PETSC_FALSE` (the default) refuses such
        networks with an error that names the layer

  Options Database Key:
. -tao_kfac_uncovered_gradient - the same

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetNet()`
@*/
PetscErrorCode PetNetTaoKFACSetUncoveredGradient(Tao tao, PetscBool flg)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveBool(tao, flg, 2);
  PetscTryMethod(tao, "PetNetTaoKFACSetUncoveredGradient_C", (Tao, PetscBool), (tao, flg));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACGetFactorEntries - how many entries of the K-FAC factors this rank holds, and how many one copy of all of
  them has

  Not collective

  Input Parameter:
. tao - the Tao, of type kfac, after its first TaoSolve() (before it, and for other types, both counts are 0)

  Output Parameters:
+ held    - the entries of the factors A and S and of their damped inverses that this rank keeps
- onecopy - the entries of one copy of all of them (2 (na^2 + nout^2) per block)

  Notes:
  With -net_parallel replicated every rank holds a whole copy (held == onecopy); with -net_parallel sharded or model
  each block's factors live only on its owner, the rank that owns the most of the block's weights, so the held counts
  of the ranks add up to onecopy. Multiply by sizeof(PetscScalar) for bytes.

  Level: advanced

.seealso: `TAOKFAC`, `PetNetPCKFACGetFactorEntries()`, `NetSetParallel()`
@*/
PetscErrorCode PetNetTaoKFACGetFactorEntries(Tao tao, PetscInt64 *held, PetscInt64 *onecopy)
{
  PetscBool iskfac;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidPointer(held, 2);
  PetscValidPointer(onecopy, 3);
  *held = *onecopy = 0;
  PetscCall(PetscObjectTypeCompare((PetscObject)tao, TAOKFAC, &iskfac));
  if (!iskfac) PetscFunctionReturn(0);
  {
    Tao_KFAC *kf = (Tao_KFAC *)((Tao_Optim *)tao->data)->data;

    if (kf->kfac) PetscCall(PetNetKFACGetFactorEntries(kf->kfac, held, onecopy));
  }
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACGetDamping - gets the Tikhonov damping of kfac

  Not collective

  Input Parameter:
. tao - the Tao, of type kfac (any other type is an error)

  Output Parameter:
. damping - the Tikhonov damping lambda, > 0

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetDamping()`
@*/
PetscErrorCode PetNetTaoKFACGetDamping(Tao tao, PetscReal *damping)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(damping, 2);
  PetscUseMethod(tao, "PetNetTaoKFACGetDamping_C", (Tao, PetscReal *), (tao, damping));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACGetStatDecay - gets the decay of the running averages of kfac's factors

  Not collective

  Input Parameter:
. tao - the Tao, of type kfac (any other type is an error)

  Output Parameter:
. decay - the decay of the factors' running averages, in [0, 1)

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetStatDecay()`
@*/
PetscErrorCode PetNetTaoKFACGetStatDecay(Tao tao, PetscReal *decay)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(decay, 2);
  PetscUseMethod(tao, "PetNetTaoKFACGetStatDecay_C", (Tao, PetscReal *), (tao, decay));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACGetMomentum - gets the momentum factor of kfac

  Not collective

  Input Parameter:
. tao - the Tao, of type kfac (any other type is an error)

  Output Parameter:
. momentum - the momentum factor on the preconditioned direction (0: none)

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetMomentum()`
@*/
PetscErrorCode PetNetTaoKFACGetMomentum(Tao tao, PetscReal *momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(momentum, 2);
  PetscUseMethod(tao, "PetNetTaoKFACGetMomentum_C", (Tao, PetscReal *), (tao, momentum));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoKFACGetKLClip - gets the KL clipping bound of kfac

  Not collective

  Input Parameter:
. tao - the Tao, of type kfac (any other type is an error)

  Output Parameter:
. klclip - the KL clipping bound kappa (0: no clipping)

  Level: intermediate

.seealso: `TAOKFAC`, `PetNetTaoKFACSetKLClip()`
@*/
PetscErrorCode PetNetTaoKFACGetKLClip(Tao tao, PetscReal *klclip)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(klclip, 2);
  PetscUseMethod(tao, "PetNetTaoKFACGetKLClip_C", (Tao, PetscReal *), (tao, klclip));
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoKFACGetState - gets the kfac optimizer's factors, their inverses in use and the counters that decide when they
  are refreshed, in a layout independent of the rank count and of the factors' placement (for a checkpoint)

  Collective on tao

  Input Parameter:
. tao - the Tao, of type kfac (any other type is an error), set up (TaoSetUp()) with its Net (PetNetTaoKFACSetNet())

  Output Parameters:
+ counters - the statistics updates so far (0: the next update replaces the averages) and the value it had at the last
             inversion (-1: never; the next update inverts)
. nblocks  - the number of blocks: one per dense layer, one per group of a conv2d or conv3d layer
. blocks   - (optional) 4 integers per block, in the order of the Net's nodes: node, group, na (order of A), nout (order
             of S); free with PetscFree()
- factors  - (optional) a new Vec on the Tao's communicator, all its entries on rank 0: per block A, S, A^{-1}, S^{-1},
             each na x na or nout x nout, full and column-major (destroy it)

  Notes:
  The factors are gathered from the ranks that hold them (every rank, or each block's owner with -net_parallel sharded
  or model, or a placed Net). Called between two updates (a Trainer's checkpoint is written at the end of an epoch);
  before the first update the counters are 0 and -1 and the factors zero. At most 2^31 - 1 entries (32-bit PetscInt).

  Level: developer

.seealso: `PetNetTaoKFACSetState()`, `TAOKFAC`, `TrainerSaveCheckpoint()`, `PetNetTaoGetState()`
@*/
PetscErrorCode PetNetTaoKFACGetState(Tao tao, PetscInt counters[2], PetscInt *nblocks, PetscInt *blocks[], Vec *factors)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidIntPointer(counters, 2);
  PetscValidIntPointer(nblocks, 3);
  PetscUseMethod(tao, "PetNetTaoKFACGetState_C", (Tao, PetscInt[2], PetscInt *, PetscInt *[], Vec *), (tao, counters, nblocks, blocks, factors));
  PetscFunctionReturn(0);
}

/*@C
  PetNetTaoKFACSetState - restores the kfac optimizer's factors, inverses and counters from PetNetTaoKFACGetState()'s
  layout, possibly written by a run on another rank count or with another placement of the factors

  Collective on tao

  Input Parameters:
+ tao      - the Tao, of type kfac (any other type is an error), set up with its Net, whose blocks must be those the
             state was taken from (compare PetNetTaoKFACGetState()'s blocks first)
. counters - the statistics updates and the update of the last inversion (-1 <= counters[1] <= counters[0])
- factors  - the factors in PetNetTaoKFACGetState()'s layout, distributed in any way over the Tao's communicator

  Notes:
  Each rank keeps the blocks it holds in this run's placement. With the optimizer's step (PetNetTaoSetStep()) the next
  updates refresh the statistics and the inverses when the run the state came from would have.

  Level: developer

.seealso: `PetNetTaoKFACGetState()`, `TAOKFAC`, `TrainerLoadCheckpoint()`
@*/
PetscErrorCode PetNetTaoKFACSetState(Tao tao, const PetscInt counters[2], Vec factors)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidIntPointer(counters, 2);
  PetscValidHeaderSpecific(factors, VEC_CLASSID, 3);
  PetscUseMethod(tao, "PetNetTaoKFACSetState_C", (Tao, const PetscInt[2], Vec), (tao, counters, factors));
  PetscFunctionReturn(0);
}
