/*
  rmsprop, as torch.optim.RMSprop. Per entry:

    d   = g + wd x
    s   = alpha s + (1 - alpha) d^2
    centered:  a = alpha a + (1 - alpha) d,   den = sqrt(s - a^2) + eps
    otherwise:                                den = sqrt(s) + eps
    momentum mu > 0:  b = mu b + d / den,  x = x - lr b
    otherwise:                             x = x - lr d / den

  State: square_avg (s), momentum_buffer (b, with momentum), grad_avg (a, centered); all start at zero.
*/
#include "optimimpl.h"

typedef struct {
  PetscReal alpha, eps, momentum;
  PetscBool centered;
  Vec       s, b, a; /* borrowed from the Tao_Optim state */
} Tao_RMSprop;

static PetscErrorCode TaoOptimCreateState_RMSprop(Tao tao)
{
  Tao_RMSprop *rms = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (!rms->s) PetscCall(TaoOptimGetStateVec_Private(tao, "square_avg", &rms->s));
  if (rms->momentum > 0 && !rms->b) PetscCall(TaoOptimGetStateVec_Private(tao, "momentum_buffer", &rms->b));
  if (rms->centered && !rms->a) PetscCall(TaoOptimGetStateVec_Private(tao, "grad_avg", &rms->a));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimUpdate_RMSprop(Tao tao, PetscReal lr)
{
  Tao_Optim         *opt = (Tao_Optim *)tao->data;
  Tao_RMSprop       *rms = (Tao_RMSprop *)opt->data;
  const PetscReal    wd = opt->weightdecay, alpha = rms->alpha, eps = rms->eps, mu = rms->momentum;
  const PetscBool    centered = rms->centered, usebuf = mu > 0;
  const PetscScalar *g;
  PetscScalar       *x, *s, *b = NULL, *a = NULL;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(tao->solution, &n));
  PetscCall(VecGetArray(tao->solution, &x));
  PetscCall(VecGetArrayRead(tao->gradient, &g));
  PetscCall(VecGetArray(rms->s, &s));
  if (usebuf) PetscCall(VecGetArray(rms->b, &b));
  if (centered) PetscCall(VecGetArray(rms->a, &a));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > OPTIM_THREAD_MIN)
  for (PetscInt i = 0; i < n; i++) {
    PetscScalar d = g[i] + wd * x[i], den;

    s[i] = alpha * s[i] + (1 - alpha) * (d * d);
    if (centered) {
      a[i] = alpha * a[i] + (1 - alpha) * d;
      den  = PetscSqrtScalar(s[i] - a[i] * a[i]) + eps;
    } else
      den = PetscSqrtScalar(s[i]) + eps;
    if (usebuf) {
      b[i] = mu * b[i] + d / den;
      x[i] -= lr * b[i];
    } else
      x[i] -= lr * (d / den);
  }
  if (centered) PetscCall(VecRestoreArray(rms->a, &a));
  if (usebuf) PetscCall(VecRestoreArray(rms->b, &b));
  PetscCall(VecRestoreArray(rms->s, &s));
  PetscCall(VecRestoreArrayRead(tao->gradient, &g));
  PetscCall(VecRestoreArray(tao->solution, &x));
  PetscCall(PetscLogFlops((10.0 + (centered ? 5.0 : 0.0) + (usebuf ? 2.0 : 0.0)) * n));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropSetAlpha_RMSprop(Tao tao, PetscReal alpha)
{
  PetscFunctionBegin;
  PetscCheck(alpha >= 0 && alpha <= 1, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The rmsprop smoothing constant (-tao_rmsprop_alpha) must be in [0, 1], not %g", (double)alpha);
  ((Tao_RMSprop *)((Tao_Optim *)tao->data)->data)->alpha = alpha;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropSetEpsilon_RMSprop(Tao tao, PetscReal eps)
{
  PetscFunctionBegin;
  PetscCheck(eps >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The rmsprop eps (-tao_rmsprop_eps) must be >= 0, not %g", (double)eps);
  ((Tao_RMSprop *)((Tao_Optim *)tao->data)->data)->eps = eps;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropSetMomentum_RMSprop(Tao tao, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscCheck(momentum >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The rmsprop momentum (-tao_rmsprop_momentum) must be >= 0, not %g", (double)momentum);
  ((Tao_RMSprop *)((Tao_Optim *)tao->data)->data)->momentum = momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropGetAlpha_RMSprop(Tao tao, PetscReal *alpha)
{
  Tao_RMSprop *ctx = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (alpha) *alpha = ctx->alpha;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropGetEpsilon_RMSprop(Tao tao, PetscReal *eps)
{
  Tao_RMSprop *ctx = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (eps) *eps = ctx->eps;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropGetMomentum_RMSprop(Tao tao, PetscReal *momentum)
{
  Tao_RMSprop *ctx = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (momentum) *momentum = ctx->momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoRMSpropSetCentered_RMSprop(Tao tao, PetscBool centered)
{
  PetscFunctionBegin;
  ((Tao_RMSprop *)((Tao_Optim *)tao->data)->data)->centered = centered;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimSetFromOptions_RMSprop(Tao tao, PetscOptionItems *PetscOptionsObject)
{
  Tao_RMSprop *rms   = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;
  PetscReal    alpha = rms->alpha, eps = rms->eps, momentum = rms->momentum;

  PetscFunctionBegin;
  PetscCall(PetscOptionsReal("-tao_rmsprop_alpha", "Smoothing constant of the squared-gradient average", "PetNetTaoRMSpropSetAlpha", alpha, &alpha, NULL));
  PetscCall(PetNetTaoRMSpropSetAlpha(tao, alpha));
  PetscCall(PetscOptionsReal("-tao_rmsprop_eps", "Added to the square root in the denominator", "PetNetTaoRMSpropSetEpsilon", eps, &eps, NULL));
  PetscCall(PetNetTaoRMSpropSetEpsilon(tao, eps));
  PetscCall(PetscOptionsReal("-tao_rmsprop_momentum", "Momentum factor (0: none)", "PetNetTaoRMSpropSetMomentum", momentum, &momentum, NULL));
  PetscCall(PetNetTaoRMSpropSetMomentum(tao, momentum));
  PetscCall(PetscOptionsBool("-tao_rmsprop_centered", "Normalise by the variance estimate, not the raw second moment", "PetNetTaoRMSpropSetCentered", rms->centered, &rms->centered, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimView_RMSprop(Tao tao, PetscViewer viewer)
{
  Tao_RMSprop *rms = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "alpha %g, eps %g, momentum %g%s\n", (double)rms->alpha, (double)rms->eps, (double)rms->momentum, rms->centered ? ", centered" : ""));
  PetscFunctionReturn(0);
}

/* For a checkpoint: this kind's settings that shape the updates (PetNetTaoGetSettings()) */
static PetscErrorCode TaoOptimSettings_RMSprop(Tao tao, PetNetTaoSettings *s)
{
  Tao_RMSprop *rms = (Tao_RMSprop *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(s->hypername[0], "alpha", sizeof(s->hypername[0])));
  s->hyper[0] = rms->alpha;
  PetscCall(PetscStrncpy(s->hypername[1], "eps", sizeof(s->hypername[1])));
  s->hyper[1] = rms->eps;
  PetscCall(PetscStrncpy(s->hypername[2], "momentum", sizeof(s->hypername[2])));
  s->hyper[2] = rms->momentum;
  PetscCall(PetscStrncpy(s->hypername[3], "centered", sizeof(s->hypername[3])));
  s->hyper[3] = rms->centered ? 1.0 : 0.0;
  s->nhyper   = 4;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimDestroy_RMSprop(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetAlpha_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetEpsilon_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetCentered_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetAlpha_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetEpsilon_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetMomentum_C", NULL));
  PetscCall(PetscFree(opt->data));
  PetscFunctionReturn(0);
}

/*MC
  TAORMSPROP - "rmsprop": RMSprop as torch.optim.RMSprop.

  Options:
+ -tao_rmsprop_lr <1e-2>          - learning rate
. -tao_rmsprop_alpha <0.99>       - smoothing constant
. -tao_rmsprop_eps <1e-8>         - added to the square root in the denominator
. -tao_rmsprop_momentum <0>       - momentum factor
. -tao_rmsprop_centered           - centered variant
- -tao_rmsprop_weight_decay <0>   - L2 weight decay added to the gradient

  Level: beginner
M*/
PETSC_INTERN PetscErrorCode TaoCreate_RMSprop(Tao tao)
{
  Tao_Optim   *opt;
  Tao_RMSprop *rms;

  PetscFunctionBegin;
  PetscCall(PetscNew(&opt));
  PetscCall(PetscNew(&rms));
  rms->alpha              = 0.99;
  rms->eps                = 1e-8;
  opt->data               = rms;
  opt->ops.setfromoptions = TaoOptimSetFromOptions_RMSprop;
  opt->ops.view           = TaoOptimView_RMSprop;
  opt->ops.createstate    = TaoOptimCreateState_RMSprop;
  opt->ops.update         = TaoOptimUpdate_RMSprop;
  opt->ops.destroy        = TaoOptimDestroy_RMSprop;
  opt->ops.settings       = TaoOptimSettings_RMSprop;
  tao->data               = opt;
  PetscCall(TaoCreate_Optim_Private(tao, 1e-2, 0.0));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetAlpha_C", PetNetTaoRMSpropSetAlpha_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetEpsilon_C", PetNetTaoRMSpropSetEpsilon_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetMomentum_C", PetNetTaoRMSpropSetMomentum_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropSetCentered_C", PetNetTaoRMSpropSetCentered_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetAlpha_C", PetNetTaoRMSpropGetAlpha_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetEpsilon_C", PetNetTaoRMSpropGetEpsilon_RMSprop));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoRMSpropGetMomentum_C", PetNetTaoRMSpropGetMomentum_RMSprop));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropSetAlpha - sets the smoothing constant of rmsprop's squared-gradient average

  Logically collective on tao

  Input Parameters:
+ tao   - the Tao, of type rmsprop (other types ignore the call)
- alpha - the smoothing constant, in [0, 1]

  Options Database Key:
. -tao_rmsprop_alpha <0.99> - the smoothing constant

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetEpsilon()`, `PetNetTaoRMSpropSetMomentum()`, `PetNetTaoRMSpropSetCentered()`
@*/
PetscErrorCode PetNetTaoRMSpropSetAlpha(Tao tao, PetscReal alpha)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, alpha, 2);
  PetscTryMethod(tao, "PetNetTaoRMSpropSetAlpha_C", (Tao, PetscReal), (tao, alpha));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropSetEpsilon - sets eps of rmsprop, added to the square root in the denominator

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type rmsprop (other types ignore the call)
- eps - eps, >= 0

  Options Database Key:
. -tao_rmsprop_eps <1e-8> - eps

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetAlpha()`
@*/
PetscErrorCode PetNetTaoRMSpropSetEpsilon(Tao tao, PetscReal eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, eps, 2);
  PetscTryMethod(tao, "PetNetTaoRMSpropSetEpsilon_C", (Tao, PetscReal), (tao, eps));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropSetMomentum - sets the momentum factor of rmsprop

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type rmsprop (other types ignore the call)
- momentum - the momentum factor, >= 0 (0: none; > 0 adds the state Vec momentum_buffer)

  Options Database Key:
. -tao_rmsprop_momentum <0> - the momentum factor

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetAlpha()`, `PetNetTaoRMSpropSetCentered()`
@*/
PetscErrorCode PetNetTaoRMSpropSetMomentum(Tao tao, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, momentum, 2);
  PetscTryMethod(tao, "PetNetTaoRMSpropSetMomentum_C", (Tao, PetscReal), (tao, momentum));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropSetCentered - turns the centered variant of rmsprop on or off

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type rmsprop (other types ignore the call)
- centered - `PETSC_TRUE` to normalise by the variance estimate (state Vec grad_avg) instead of the raw second moment

  Options Database Key:
. -tao_rmsprop_centered - the centered variant

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetAlpha()`, `PetNetTaoRMSpropSetMomentum()`
@*/
PetscErrorCode PetNetTaoRMSpropSetCentered(Tao tao, PetscBool centered)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveBool(tao, centered, 2);
  PetscTryMethod(tao, "PetNetTaoRMSpropSetCentered_C", (Tao, PetscBool), (tao, centered));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropGetAlpha - gets the smoothing constant alpha of rmsprop

  Not collective

  Input Parameter:
. tao - the Tao, of type rmsprop (any other type is an error)

  Output Parameter:
. alpha - the smoothing constant of the squared-gradient average, in [0, 1]

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetAlpha()`
@*/
PetscErrorCode PetNetTaoRMSpropGetAlpha(Tao tao, PetscReal *alpha)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(alpha, 2);
  PetscUseMethod(tao, "PetNetTaoRMSpropGetAlpha_C", (Tao, PetscReal *), (tao, alpha));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropGetEpsilon - gets eps of rmsprop

  Not collective

  Input Parameter:
. tao - the Tao, of type rmsprop (any other type is an error)

  Output Parameter:
. eps - eps, added to the square root in the denominator

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetEpsilon()`
@*/
PetscErrorCode PetNetTaoRMSpropGetEpsilon(Tao tao, PetscReal *eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(eps, 2);
  PetscUseMethod(tao, "PetNetTaoRMSpropGetEpsilon_C", (Tao, PetscReal *), (tao, eps));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoRMSpropGetMomentum - gets the momentum factor of rmsprop

  Not collective

  Input Parameter:
. tao - the Tao, of type rmsprop (any other type is an error)

  Output Parameter:
. momentum - the momentum factor (0: none)

  Level: intermediate

.seealso: `TAORMSPROP`, `PetNetTaoRMSpropSetMomentum()`
@*/
PetscErrorCode PetNetTaoRMSpropGetMomentum(Tao tao, PetscReal *momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(momentum, 2);
  PetscUseMethod(tao, "PetNetTaoRMSpropGetMomentum_C", (Tao, PetscReal *), (tao, momentum));
  PetscFunctionReturn(0);
}
