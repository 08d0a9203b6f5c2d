/*
  sgd: stochastic gradient descent with momentum, Nesterov momentum, dampening and weight decay, as torch.optim.SGD.
  Per entry, with g the gradient, wd the weight decay, mu the momentum, tau the dampening:

    d = g + wd x
    if mu != 0:  b = d                        at the first update (PyTorch seeds the buffer undamped)
                 b = mu b + (1 - tau) d       afterwards
                 d = d + mu b   (Nesterov)   or   d = b
    x = x - lr d

  State: momentum_buffer (only with momentum).
*/
#include "optimimpl.h"

typedef struct {
  PetscReal momentum, dampening;
  PetscBool nesterov;
  Vec       buf; /* borrowed from the Tao_Optim state */
} Tao_SGD;

static PetscErrorCode TaoOptimCheck_SGD(Tao tao)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(!sgd->nesterov || (sgd->momentum > 0 && sgd->dampening == 0), PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_INCOMP,
             "Nesterov momentum requires a momentum > 0 and zero dampening (as in PyTorch): set -tao_sgd_momentum (now %g) and -tao_sgd_dampening 0 (now %g), or drop -tao_sgd_nesterov", (double)sgd->momentum, (double)sgd->dampening);
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimCreateState_SGD(Tao tao)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (sgd->momentum != 0 && !sgd->buf) PetscCall(TaoOptimGetStateVec_Private(tao, "momentum_buffer", &sgd->buf));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimUpdate_SGD(Tao tao, PetscReal lr)
{
  Tao_Optim         *opt = (Tao_Optim *)tao->data;
  Tao_SGD           *sgd = (Tao_SGD *)opt->data;
  const PetscReal    wd = opt->weightdecay, mu = sgd->momentum, tau = sgd->dampening;
  const PetscBool    first = opt->step == 0, nesterov = sgd->nesterov, usebuf = mu != 0;
  const PetscScalar *g;
  PetscScalar       *x, *b = NULL;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(tao->solution, &n));
  PetscCall(VecGetArray(tao->solution, &x));
  PetscCall(VecGetArrayRead(tao->gradient, &g));
  if (usebuf) PetscCall(VecGetArray(sgd->buf, &b));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > OPTIM_THREAD_MIN)
  for (PetscInt i = 0; i < n; i++) {
    PetscScalar d = g[i] + wd * x[i];

    if (usebuf) {
      b[i] = first ? d : mu * b[i] + (1 - tau) * d;
      d    = nesterov ? d + mu * b[i] : b[i];
    }
    x[i] -= lr * d;
  }
  if (usebuf) PetscCall(VecRestoreArray(sgd->buf, &b));
  PetscCall(VecRestoreArrayRead(tao->gradient, &g));
  PetscCall(VecRestoreArray(tao->solution, &x));
  PetscCall(PetscLogFlops((4.0 + (usebuf ? 3.0 : 0.0) + (nesterov ? 2.0 : 0.0)) * n));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSGDSetMomentum_SGD(Tao tao, PetscReal momentum)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(momentum >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The sgd momentum (-tao_sgd_momentum) must be >= 0, not %g", (double)momentum);
  sgd->momentum = momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSGDSetDampening_SGD(Tao tao, PetscReal dampening)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(dampening >= 0 && dampening <= 1, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "The sgd dampening (-tao_sgd_dampening) must be in [0, 1], not %g", (double)dampening);
  sgd->dampening = dampening;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSGDGetMomentum_SGD(Tao tao, PetscReal *momentum)
{
  PetscFunctionBegin;
  *momentum = ((Tao_SGD *)((Tao_Optim *)tao->data)->data)->momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSGDGetDampening_SGD(Tao tao, PetscReal *dampening)
{
  PetscFunctionBegin;
  *dampening = ((Tao_SGD *)((Tao_Optim *)tao->data)->data)->dampening;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoSGDSetNesterov_SGD(Tao tao, PetscBool nesterov)
{
  PetscFunctionBegin;
  ((Tao_SGD *)((Tao_Optim *)tao->data)->data)->nesterov = nesterov;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimSetFromOptions_SGD(Tao tao, PetscOptionItems *PetscOptionsObject)
{
  Tao_SGD  *sgd      = (Tao_SGD *)((Tao_Optim *)tao->data)->data;
  PetscReal momentum = sgd->momentum, dampening = sgd->dampening;

  PetscFunctionBegin;
  PetscCall(PetscOptionsReal("-tao_sgd_momentum", "Momentum factor (0: none)", "PetNetTaoSGDSetMomentum", momentum, &momentum, NULL));
  PetscCall(PetNetTaoSGDSetMomentum(tao, momentum));
  PetscCall(PetscOptionsReal("-tao_sgd_dampening", "Dampening of the momentum", "PetNetTaoSGDSetDampening", dampening, &dampening, NULL));
  PetscCall(PetNetTaoSGDSetDampening(tao, dampening));
  PetscCall(PetscOptionsBool("-tao_sgd_nesterov", "Nesterov momentum", "PetNetTaoSGDSetNesterov", sgd->nesterov, &sgd->nesterov, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimView_SGD(Tao tao, PetscViewer viewer)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (sgd->momentum == 0)
    PetscCall(PetscViewerASCIIPrintf(viewer, "momentum: none\n"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "momentum %g%s, dampening %g\n", (double)sgd->momentum, sgd->nesterov ? " (Nesterov)" : "", (double)sgd->dampening));
  PetscFunctionReturn(0);
}

/* For a checkpoint: this kind's settings that shape the updates (PetNetTaoGetSettings()) */
static PetscErrorCode TaoOptimSettings_SGD(Tao tao, PetNetTaoSettings *s)
{
  Tao_SGD *sgd = (Tao_SGD *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(s->hypername[0], "momentum", sizeof(s->hypername[0])));
  s->hyper[0] = sgd->momentum;
  PetscCall(PetscStrncpy(s->hypername[1], "dampening", sizeof(s->hypername[1])));
  s->hyper[1] = sgd->dampening;
  PetscCall(PetscStrncpy(s->hypername[2], "nesterov", sizeof(s->hypername[2])));
  s->hyper[2] = sgd->nesterov ? 1.0 : 0.0;
  s->nhyper   = 3;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimDestroy_SGD(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetDampening_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetNesterov_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDGetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDGetDampening_C", NULL));
  PetscCall(PetscFree(opt->data));
  PetscFunctionReturn(0);
}

/*MC
  TAOSGD - "sgd": stochastic gradient descent as torch.optim.SGD.

  Options:
+ -tao_sgd_lr <1e-3>           - learning rate
. -tao_sgd_momentum <0>        - momentum factor
. -tao_sgd_dampening <0>       - dampening of the momentum
. -tao_sgd_nesterov            - Nesterov momentum (needs momentum > 0 and no dampening)
- -tao_sgd_weight_decay <0>    - L2 weight decay added to the gradient

  Level: beginner
M*/
PETSC_INTERN PetscErrorCode TaoCreate_SGD(Tao tao)
{
  Tao_Optim *opt;
  Tao_SGD   *sgd;

  PetscFunctionBegin;
  PetscCall(PetscNew(&opt));
  PetscCall(PetscNew(&sgd));
  opt->data               = sgd;
  opt->ops.setfromoptions = TaoOptimSetFromOptions_SGD;
  opt->ops.view           = TaoOptimView_SGD;
  opt->ops.check          = TaoOptimCheck_SGD;
  opt->ops.createstate    = TaoOptimCreateState_SGD;
  opt->ops.update         = TaoOptimUpdate_SGD;
  opt->ops.destroy        = TaoOptimDestroy_SGD;
  opt->ops.settings       = TaoOptimSettings_SGD;
  tao->data               = opt;
  PetscCall(TaoCreate_Optim_Private(tao, 1e-3, 0.0));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetMomentum_C", PetNetTaoSGDSetMomentum_SGD));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetDampening_C", PetNetTaoSGDSetDampening_SGD));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDSetNesterov_C", PetNetTaoSGDSetNesterov_SGD));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDGetMomentum_C", PetNetTaoSGDGetMomentum_SGD));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoSGDGetDampening_C", PetNetTaoSGDGetDampening_SGD));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSGDSetMomentum - sets the momentum factor of sgd

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type sgd (other types ignore the call)
- momentum - the momentum factor mu, >= 0 (0: plain SGD, no momentum buffer)

  Options Database Key:
. -tao_sgd_momentum <0> - the momentum factor

  Notes:
  b = mu b + (1 - dampening) d, seeded with b = d at the first update, as torch.optim.SGD.

  Level: beginner

.seealso: `TAOSGD`, `PetNetTaoSGDSetDampening()`, `PetNetTaoSGDSetNesterov()`, `PetNetTaoSetLearningRate()`
@*/
PetscErrorCode PetNetTaoSGDSetMomentum(Tao tao, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, momentum, 2);
  PetscTryMethod(tao, "PetNetTaoSGDSetMomentum_C", (Tao, PetscReal), (tao, momentum));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSGDGetMomentum - gets the momentum factor of sgd

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd (any other type is an error)

  Output Parameter:
. momentum - the momentum factor mu (0: no momentum)

  Level: intermediate

.seealso: `TAOSGD`, `PetNetTaoSGDSetMomentum()`, `PetNetTaoSGDGetDampening()`
@*/
PetscErrorCode PetNetTaoSGDGetMomentum(Tao tao, PetscReal *momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(momentum, 2);
  PetscUseMethod(tao, "PetNetTaoSGDGetMomentum_C", (Tao, PetscReal *), (tao, momentum));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSGDSetDampening - sets the dampening of sgd's momentum, b = mu b + (1 - dampening) d

  Logically collective on tao

  Input Parameters:
+ tao       - the Tao, of type sgd (other types ignore the call)
- dampening - the dampening, in [0, 1]

  Options Database Key:
. -tao_sgd_dampening <0> - the dampening

  Level: intermediate

.seealso: `TAOSGD`, `PetNetTaoSGDSetMomentum()`, `PetNetTaoSGDSetNesterov()`
@*/
PetscErrorCode PetNetTaoSGDSetDampening(Tao tao, PetscReal dampening)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, dampening, 2);
  PetscTryMethod(tao, "PetNetTaoSGDSetDampening_C", (Tao, PetscReal), (tao, dampening));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSGDGetDampening - gets the dampening of sgd's momentum

  Not collective

  Input Parameter:
. tao - the Tao, of type sgd (any other type is an error)

  Output Parameter:
. dampening - the dampening, in [0, 1]

  Level: intermediate

.seealso: `TAOSGD`, `PetNetTaoSGDSetDampening()`, `PetNetTaoSGDGetMomentum()`
@*/
PetscErrorCode PetNetTaoSGDGetDampening(Tao tao, PetscReal *dampening)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(dampening, 2);
  PetscUseMethod(tao, "PetNetTaoSGDGetDampening_C", (Tao, PetscReal *), (tao, dampening));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoSGDSetNesterov - turns Nesterov momentum of sgd on or off, d = d + mu b

  Logically collective on tao

  Input Parameters:
+ tao      - the Tao, of type sgd (other types ignore the call)
- nesterov - `PETSC_TRUE` for Nesterov momentum

  Options Database Key:
. -tao_sgd_nesterov - Nesterov momentum

  Notes:
  As in PyTorch, Nesterov momentum needs a momentum > 0 and zero dampening; TaoSolve() refuses other settings.

  Level: intermediate

.seealso: `TAOSGD`, `PetNetTaoSGDSetMomentum()`, `PetNetTaoSGDSetDampening()`
@*/
PetscErrorCode PetNetTaoSGDSetNesterov(Tao tao, PetscBool nesterov)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveBool(tao, nesterov, 2);
  PetscTryMethod(tao, "PetNetTaoSGDSetNesterov_C", (Tao, PetscBool), (tao, nesterov));
  PetscFunctionReturn(0);
}
