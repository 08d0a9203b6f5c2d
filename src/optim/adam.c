/*
  adam and adamw, as torch.optim.Adam and torch.optim.AdamW. Per entry, at update t = 1, 2, ... (t = step + 1):

    adam:   d = g + wd x                  adamw:  x = x (1 - lr wd),  d = g        (decoupled weight decay)
    m = beta1 m + (1 - beta1) d
    v = beta2 v + (1 - beta2) d^2
    vmax = max(vmax, v)                   (amsgrad only; the denominator then uses vmax)
    x = x - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

  eps is added after the bias correction of sqrt(v), as PyTorch does.
  State: exp_avg (m), exp_avg_sq (v), max_exp_avg_sq (vmax, amsgrad only).
*/
#include "optimimpl.h"

typedef struct {
  PetscReal beta1, beta2, eps;
  PetscBool amsgrad;
  PetscBool decoupled;  /* adamw */
  Vec       m, v, vmax; /* borrowed from the Tao_Optim state */
} Tao_Adam;

static PetscErrorCode TaoOptimCreateState_Adam(Tao tao)
{
  Tao_Adam *adam = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (!adam->m) PetscCall(TaoOptimGetStateVec_Private(tao, "exp_avg", &adam->m));
  if (!adam->v) PetscCall(TaoOptimGetStateVec_Private(tao, "exp_avg_sq", &adam->v));
  if (adam->amsgrad && !adam->vmax) PetscCall(TaoOptimGetStateVec_Private(tao, "max_exp_avg_sq", &adam->vmax));
  PetscFunctionReturn(0);
}

/*
  The update of entries [i0, i1), compiled also for AVX-512 and AVX2 (picked at load time), whose 8- and 4-wide square
  roots and divisions make it several times faster than the baseline's 2-wide ones; fp-contract=off keeps every
  operation rounded as the baseline rounds it (no fused multiply-adds), so the bits are the same on any CPU, and the
  entries are independent, so the same at any thread count. amsgrad is a separate loop, so that both vectorize.
  The loops vectorize only when sqrt need not set errno (-fno-math-errno, in the makefile's CFLAGS; an optimize
  attribute does not do it): otherwise each sqrt keeps a branch to the library call and the clones run scalar code,
  8x slower (0.24 s of a 0.75 s MLP epoch, measured).
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__NO_MATH_ERRNO__)
#warning "adam.c compiled without -fno-math-errno: the Adam update will not vectorize"
#endif
static OPTIM_TARGET_CLONES void AdamKernel(PetscInt i0, PetscInt i1, PetscReal b1, PetscReal b2, PetscReal eps, PetscReal stepsize, PetscReal bc2sqrt, PetscReal l2, PetscReal shrink, const PetscScalar *restrict g, PetscScalar *restrict x,
                                           PetscScalar *restrict m, PetscScalar *restrict v, PetscScalar *restrict vmax)
{
  if (vmax) {
    for (PetscInt i = i0; i < i1; i++) {
      PetscScalar d = g[i] + l2 * x[i], vhat;

      x[i] *= shrink;
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * (d * d);
      vhat = vmax[i] = PetscMax(vmax[i], v[i]);
      x[i] -= stepsize * (m[i] / (PetscSqrtScalar(vhat) / bc2sqrt + eps));
    }
    return;
  }
  for (PetscInt i = i0; i < i1; i++) {
    PetscScalar d = g[i] + l2 * x[i];

    x[i] *= shrink;
    m[i] = b1 * m[i] + (1 - b1) * d;
    v[i] = b2 * v[i] + (1 - b2) * (d * d);
    x[i] -= stepsize * (m[i] / (PetscSqrtScalar(v[i]) / bc2sqrt + eps));
  }
}

static PetscErrorCode TaoOptimUpdate_Adam(Tao tao, PetscReal lr)
{
  Tao_Optim         *opt  = (Tao_Optim *)tao->data;
  Tao_Adam          *adam = (Tao_Adam *)opt->data;
  const PetscReal    b1 = adam->beta1, b2 = adam->beta2, eps = adam->eps, t = (PetscReal)(opt->step + 1);
  const PetscReal    stepsize = lr / (1 - PetscPowReal(b1, t)), bc2sqrt = PetscSqrtReal(1 - PetscPowReal(b2, t));
  const PetscReal    l2 = adam->decoupled ? 0.0 : opt->weightdecay, shrink = adam->decoupled ? 1 - lr * opt->weightdecay : 1.0;
  const PetscBool    amsgrad = adam->amsgrad;
  const PetscScalar *g;
  PetscScalar       *x, *m, *v, *vmax = NULL;
  PetscInt           n, nparts;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(tao->solution, &n));
  PetscCall(VecGetArray(tao->solution, &x));
  PetscCall(VecGetArrayRead(tao->gradient, &g));
  PetscCall(VecGetArray(adam->m, &m));
  PetscCall(VecGetArray(adam->v, &v));
  if (amsgrad) PetscCall(VecGetArray(adam->vmax, &vmax));
  nparts = PetNetThreadParts(n, OPTIM_THREAD_MIN);
  if (nparts == 1)
    AdamKernel(0, n, b1, b2, eps, stepsize, bc2sqrt, l2, shrink, g, x, m, v, amsgrad ? vmax : NULL);
  else {
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
    for (PetscInt p = 0; p < nparts; p++) {
      PetscInt i0, i1;

      PetNetThreadPart(n, nparts, p, &i0, &i1);
      AdamKernel(i0, i1, b1, b2, eps, stepsize, bc2sqrt, l2, shrink, g, x, m, v, amsgrad ? vmax : NULL);
    }
  }
  if (amsgrad) PetscCall(VecRestoreArray(adam->vmax, &vmax));
  PetscCall(VecRestoreArray(adam->v, &v));
  PetscCall(VecRestoreArray(adam->m, &m));
  PetscCall(VecRestoreArrayRead(tao->gradient, &g));
  PetscCall(VecRestoreArray(tao->solution, &x));
  PetscCall(PetscLogFlops((14.0 + (amsgrad ? 1.0 : 0.0)) * n));
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoAdamSetBetas_Adam(Tao tao, PetscReal beta1, PetscReal beta2)
{
  Tao_Adam *adam = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(beta1 >= 0 && beta1 < 1, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "beta1 (-tao_%s_beta1) must be in [0, 1), not %g", ((PetscObject)tao)->type_name, (double)beta1);
  PetscCheck(beta2 >= 0 && beta2 < 1, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "beta2 (-tao_%s_beta2) must be in [0, 1), not %g", ((PetscObject)tao)->type_name, (double)beta2);
  adam->beta1 = beta1;
  adam->beta2 = beta2;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoAdamSetEpsilon_Adam(Tao tao, PetscReal eps)
{
  Tao_Adam *adam = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCheck(eps >= 0, PetscObjectComm((PetscObject)tao), PETSC_ERR_ARG_OUTOFRANGE, "eps (-tao_%s_eps) must be >= 0, not %g", ((PetscObject)tao)->type_name, (double)eps);
  adam->eps = eps;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoAdamGetBetas_Adam(Tao tao, PetscReal *beta1, PetscReal *beta2)
{
  Tao_Adam *ctx = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (beta1) *beta1 = ctx->beta1;
  if (beta2) *beta2 = ctx->beta2;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoAdamGetEpsilon_Adam(Tao tao, PetscReal *eps)
{
  Tao_Adam *ctx = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  if (eps) *eps = ctx->eps;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetTaoAdamSetAMSGrad_Adam(Tao tao, PetscBool amsgrad)
{
  PetscFunctionBegin;
  ((Tao_Adam *)((Tao_Optim *)tao->data)->data)->amsgrad = amsgrad;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimSetFromOptions_Adam(Tao tao, PetscOptionItems *PetscOptionsObject)
{
  Tao_Adam *adam  = (Tao_Adam *)((Tao_Optim *)tao->data)->data;
  PetscReal beta1 = adam->beta1, beta2 = adam->beta2, eps = adam->eps;
  char      name[64];

  PetscFunctionBegin;
  PetscCall(TaoOptimOptionName_Private(tao, "beta1", sizeof(name), name));
  PetscCall(PetscOptionsReal(name, "Decay of the first-moment average", "PetNetTaoAdamSetBetas", beta1, &beta1, NULL));
  PetscCall(TaoOptimOptionName_Private(tao, "beta2", sizeof(name), name));
  PetscCall(PetscOptionsReal(name, "Decay of the second-moment average", "PetNetTaoAdamSetBetas", beta2, &beta2, NULL));
  PetscCall(PetNetTaoAdamSetBetas(tao, beta1, beta2));
  PetscCall(TaoOptimOptionName_Private(tao, "eps", sizeof(name), name));
  PetscCall(PetscOptionsReal(name, "Added to the bias-corrected sqrt(v) in the denominator", "PetNetTaoAdamSetEpsilon", eps, &eps, NULL));
  PetscCall(PetNetTaoAdamSetEpsilon(tao, eps));
  PetscCall(TaoOptimOptionName_Private(tao, "amsgrad", sizeof(name), name));
  PetscCall(PetscOptionsBool(name, "Use the running maximum of v (AMSGrad)", "PetNetTaoAdamSetAMSGrad", adam->amsgrad, &adam->amsgrad, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimView_Adam(Tao tao, PetscViewer viewer)
{
  Tao_Adam *adam = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "beta1 %g, beta2 %g, eps %g%s%s\n", (double)adam->beta1, (double)adam->beta2, (double)adam->eps, adam->amsgrad ? ", amsgrad" : "", adam->decoupled ? ", decoupled weight decay" : ""));
  PetscFunctionReturn(0);
}

/* For a checkpoint: this kind's settings that shape the updates (PetNetTaoGetSettings()) */
static PetscErrorCode TaoOptimSettings_Adam(Tao tao, PetNetTaoSettings *s)
{
  Tao_Adam *adam = (Tao_Adam *)((Tao_Optim *)tao->data)->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(s->hypername[0], "beta1", sizeof(s->hypername[0])));
  s->hyper[0] = adam->beta1;
  PetscCall(PetscStrncpy(s->hypername[1], "beta2", sizeof(s->hypername[1])));
  s->hyper[1] = adam->beta2;
  PetscCall(PetscStrncpy(s->hypername[2], "eps", sizeof(s->hypername[2])));
  s->hyper[2] = adam->eps;
  PetscCall(PetscStrncpy(s->hypername[3], "amsgrad", sizeof(s->hypername[3])));
  s->hyper[3] = adam->amsgrad ? 1.0 : 0.0;
  s->nhyper   = 4;
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoOptimDestroy_Adam(Tao tao)
{
  Tao_Optim *opt = (Tao_Optim *)tao->data;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetBetas_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetEpsilon_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetAMSGrad_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamGetBetas_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamGetEpsilon_C", NULL));
  PetscCall(PetscFree(opt->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode TaoCreate_AdamKind(Tao tao, PetscBool decoupled)
{
  Tao_Optim *opt;
  Tao_Adam  *adam;

  PetscFunctionBegin;
  PetscCall(PetscNew(&opt));
  PetscCall(PetscNew(&adam));
  adam->beta1             = 0.9;
  adam->beta2             = 0.999;
  adam->eps               = 1e-8;
  adam->decoupled         = decoupled;
  opt->data               = adam;
  opt->ops.setfromoptions = TaoOptimSetFromOptions_Adam;
  opt->ops.view           = TaoOptimView_Adam;
  opt->ops.createstate    = TaoOptimCreateState_Adam;
  opt->ops.update         = TaoOptimUpdate_Adam;
  opt->ops.destroy        = TaoOptimDestroy_Adam;
  opt->ops.settings       = TaoOptimSettings_Adam;
  tao->data               = opt;
  PetscCall(TaoCreate_Optim_Private(tao, 1e-3, decoupled ? 1e-2 : 0.0));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetBetas_C", PetNetTaoAdamSetBetas_Adam));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetEpsilon_C", PetNetTaoAdamSetEpsilon_Adam));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamSetAMSGrad_C", PetNetTaoAdamSetAMSGrad_Adam));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamGetBetas_C", PetNetTaoAdamGetBetas_Adam));
  PetscCall(PetscObjectComposeFunction((PetscObject)tao, "PetNetTaoAdamGetEpsilon_C", PetNetTaoAdamGetEpsilon_Adam));
  PetscFunctionReturn(0);
}

/*MC
  TAOADAM - "adam": Adam as torch.optim.Adam (weight decay as an L2 term added to the gradient).

  Options:
+ -tao_adam_lr <1e-3>          - learning rate
. -tao_adam_beta1 <0.9>        - decay of the first moment
. -tao_adam_beta2 <0.999>      - decay of the second moment
. -tao_adam_eps <1e-8>         - added to the bias-corrected sqrt(v)
. -tao_adam_amsgrad            - AMSGrad variant
- -tao_adam_weight_decay <0>   - L2 weight decay added to the gradient

  Level: beginner
M*/
PETSC_INTERN PetscErrorCode TaoCreate_Adam(Tao tao)
{
  PetscFunctionBegin;
  PetscCall(TaoCreate_AdamKind(tao, PETSC_FALSE));
  PetscFunctionReturn(0);
}

/*MC
  TAOADAMW - "adamw": AdamW as torch.optim.AdamW, with decoupled weight decay x <- x (1 - lr wd).
  The same options as adam with the prefix -tao_adamw_; -tao_adamw_weight_decay defaults to 1e-2.

  Level: beginner
M*/
PETSC_INTERN PetscErrorCode TaoCreate_AdamW(Tao tao)
{
  PetscFunctionBegin;
  PetscCall(TaoCreate_AdamKind(tao, PETSC_TRUE));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoAdamSetBetas - sets the decays of the first and second moment averages of adam and adamw

  Logically collective on tao

  Input Parameters:
+ tao   - the Tao, of type adam or adamw (other types ignore the call)
. beta1 - decay of the first moment, in [0, 1)
- beta2 - decay of the second moment, in [0, 1)

  Options Database Keys:
+ -tao_adam_beta1 <0.9>   - beta1 (-tao_adamw_beta1 for adamw)
- -tao_adam_beta2 <0.999> - beta2 (-tao_adamw_beta2 for adamw)

  Level: intermediate

.seealso: `TAOADAM`, `TAOADAMW`, `PetNetTaoAdamSetEpsilon()`, `PetNetTaoAdamSetAMSGrad()`
@*/
PetscErrorCode PetNetTaoAdamSetBetas(Tao tao, PetscReal beta1, PetscReal beta2)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, beta1, 2);
  PetscValidLogicalCollectiveReal(tao, beta2, 3);
  PetscTryMethod(tao, "PetNetTaoAdamSetBetas_C", (Tao, PetscReal, PetscReal), (tao, beta1, beta2));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoAdamSetEpsilon - sets eps of adam and adamw, added to the bias-corrected sqrt(v) in the denominator

  Logically collective on tao

  Input Parameters:
+ tao - the Tao, of type adam or adamw (other types ignore the call)
- eps - eps, >= 0

  Options Database Key:
. -tao_adam_eps <1e-8> - eps (-tao_adamw_eps for adamw)

  Level: intermediate

.seealso: `TAOADAM`, `TAOADAMW`, `PetNetTaoAdamSetBetas()`
@*/
PetscErrorCode PetNetTaoAdamSetEpsilon(Tao tao, PetscReal eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveReal(tao, eps, 2);
  PetscTryMethod(tao, "PetNetTaoAdamSetEpsilon_C", (Tao, PetscReal), (tao, eps));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoAdamSetAMSGrad - turns the AMSGrad variant of adam and adamw on or off

  Logically collective on tao

  Input Parameters:
+ tao     - the Tao, of type adam or adamw (other types ignore the call)
- amsgrad - `PETSC_TRUE` to divide by the running maximum of v (state Vec max_exp_avg_sq)

  Options Database Key:
. -tao_adam_amsgrad - AMSGrad (-tao_adamw_amsgrad for adamw)

  Level: intermediate

.seealso: `TAOADAM`, `TAOADAMW`, `PetNetTaoAdamSetBetas()`, `PetNetTaoGetState()`
@*/
PetscErrorCode PetNetTaoAdamSetAMSGrad(Tao tao, PetscBool amsgrad)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidLogicalCollectiveBool(tao, amsgrad, 2);
  PetscTryMethod(tao, "PetNetTaoAdamSetAMSGrad_C", (Tao, PetscBool), (tao, amsgrad));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoAdamGetBetas - gets the decays of the first and second moment averages of adam and adamw

  Not collective

  Input Parameter:
. tao - the Tao, of type adam or adamw (any other type is an error)

  Output Parameters:
+ beta1 - decay of the first moment, in [0, 1) (may be NULL)
- beta2 - decay of the second moment, in [0, 1) (may be NULL)

  Level: intermediate

.seealso: `TAOADAM`, `PetNetTaoAdamSetBetas()`, `PetNetTaoAdamGetEpsilon()`
@*/
PetscErrorCode PetNetTaoAdamGetBetas(Tao tao, PetscReal *beta1, PetscReal *beta2)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  if (beta1) PetscValidRealPointer(beta1, 2);
  if (beta2) PetscValidRealPointer(beta2, 3);
  PetscUseMethod(tao, "PetNetTaoAdamGetBetas_C", (Tao, PetscReal *, PetscReal *), (tao, beta1, beta2));
  PetscFunctionReturn(0);
}

/*@
  PetNetTaoAdamGetEpsilon - gets eps of adam and adamw

  Not collective

  Input Parameter:
. tao - the Tao, of type adam or adamw (any other type is an error)

  Output Parameter:
. eps - eps, added to the bias-corrected sqrt(v)

  Level: intermediate

.seealso: `TAOADAM`, `PetNetTaoAdamSetEpsilon()`, `PetNetTaoAdamGetBetas()`
@*/
PetscErrorCode PetNetTaoAdamGetEpsilon(Tao tao, PetscReal *eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tao, TAO_CLASSID, 1);
  PetscValidRealPointer(eps, 2);
  PetscUseMethod(tao, "PetNetTaoAdamGetEpsilon_C", (Tao, PetscReal *), (tao, eps));
  PetscFunctionReturn(0);
}
