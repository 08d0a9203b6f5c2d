/*
  crossentropy: softmax followed by the negative log-likelihood of integer labels.
    y [n][c] logits, t [n] labels in {0..c-1}   (an output (T, V) per sample: n T rows of c = V, T labels a sample)
    loss_s = logsumexp(y_s) - (1 - a) y_s[t_s] - (a/c) sum_k y_s[k]     (log-sum-exp shifted by max_k y_s[k]: never
                                                                         overflows; a the label smoothing, 0 by default)
    dy_s   = softmax(y_s) - (1 - a) onehot(t_s) - a/c
    H_s v  = p * v - p (p . v),  p = softmax(y_s)                        (the smoothing term is linear in y)
  PyTorch's cross_entropy(label_smoothing=a): the target (1 - a) onehot + a/c. A label equal to the ignore index
  (default -100, PyTorch's) has loss 0, a zero row in dy and in H v, and does not count in the mean, which divides by
  the global number of the other labels (counted(), LossEvaluate()).
*/
#include <petnet/private/lossimpl.h>
#include <petnet/private/mathimpl.h>

/*
  e[k] = exp(y[k] - m) over a row of c logits: PetNet's own exp (petnet/private/mathimpl.h, 1 ulp against libm,
  branch-free so that gcc vectorises the loop), compiled also for AVX-512 and AVX2 and picked at load time, with
  fp-contract=off so that every clone rounds as the baseline does (the same bits on any CPU, as the pointwise layers).
  A row of 2048 tokens x 114 characters took 1.7 ms with libm's exp one entry at a time (5% of bin/charlm's step).
*/
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CROSSENTROPY_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define CROSSENTROPY_TARGET_CLONES
#endif

static CROSSENTROPY_TARGET_CLONES void CrossEntropyExpRow(PetscInt c, const PetscScalar *restrict y, PetscReal m, PetscScalar *restrict e)
{
  for (PetscInt k = 0; k < c; k++) e[k] = PetNetExpDouble(PetscRealPart(y[k]) - m);
}

/* z = sum_k exp(y[k] - m), the exponentials written to e (c entries) or, e NULL, to chunks of a buffer; the sum in k's order */
static PetscReal CrossEntropyExpSum(PetscInt c, const PetscScalar *y, PetscReal m, PetscScalar *e)
{
  PetscScalar buf[256];
  PetscReal   z = 0;

  for (PetscInt k0 = 0; k0 < c; k0 += e ? c : 256) {
    const PetscInt n = e ? c : PetscMin(256, c - k0);
    PetscScalar   *r = e ? e : buf;

    CrossEntropyExpRow(n, y + k0, m, r);
    for (PetscInt k = 0; k < n; k++) z += PetscRealPart(r[k]);
  }
  return z;
}

typedef struct {
  PetscInt  ignore;    /* a label equal to it counts nowhere */
  PetscReal smoothing; /* a in [0, 1) */
} Loss_CrossEntropy;

static PetscErrorCode LossCount_CrossEntropy(Loss loss, PetscInt Ny, PetscInt Nt, PetscInt *N)
{
  PetscFunctionBegin;
  PetscCheck(Nt > 0 ? Ny % Nt == 0 : Ny == 0, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_SIZ,
             "crossentropy loss: the output has %" PetscInt_FMT " entries, not a whole number of classes for the %" PetscInt_FMT " labels of the target: the target must hold one integer label per sample", Ny, Nt);
  *N = Nt;
  PetscFunctionReturn(0);
}

static inline PetscBool Ignored_Private(const Loss_CrossEntropy *ce, PetscScalar t)
{
  return (PetscBool)(PetscRealPart(t) == (PetscReal)ce->ignore);
}

static PetscErrorCode CheckLabels_Private(Loss loss, PetscInt ny, PetscInt nt, const PetscScalar *t, PetscInt *c)
{
  Loss_CrossEntropy *ce = (Loss_CrossEntropy *)loss->data;

  PetscFunctionBegin;
  PetscCheck(nt > 0 ? ny % nt == 0 : ny == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "crossentropy loss: %" PetscInt_FMT " local outputs are not a whole number of classes for %" PetscInt_FMT " labels: the target must hold one integer label per sample",
             ny, nt);
  *c = nt ? ny / nt : 0;
  for (PetscInt s = 0; s < nt; s++) {
    PetscReal l = PetscRealPart(t[s]);

    if (Ignored_Private(ce, t[s])) continue;
    PetscCheck(l >= 0 && l < *c && l == PetscFloorReal(l), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "crossentropy loss: the label of local sample %" PetscInt_FMT " is %g, but labels must be integer class indices in [0, %" PetscInt_FMT ") for an output of %" PetscInt_FMT " classes, or the ignore index %" PetscInt_FMT
               " (-loss_ignore_index): fix the targets, or make the last layer's size the number of classes",
               s, (double)l, *c, *c, ce->ignore);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LossEvaluate_CrossEntropy(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, PetscReal *sum, PetscScalar *dy)
{
  Loss_CrossEntropy *ce = (Loss_CrossEntropy *)loss->data;
  const PetscReal    a  = ce->smoothing;
  PetscInt           c;

  PetscFunctionBegin;
  PetscCall(CheckLabels_Private(loss, ny, nt, t, &c));
  *sum = 0;
  for (PetscInt s = 0; s < nt; s++) {
    const PetscScalar *ys = y + s * c;
    PetscInt           lbl;
    PetscReal          m = PetscRealPart(ys[0]), z = 0, ysum = 0;

    if (Ignored_Private(ce, t[s])) {
      if (dy) PetscCall(PetscArrayzero(dy + s * c, c));
      continue;
    }
    lbl = (PetscInt)PetscRealPart(t[s]);
    for (PetscInt k = 1; k < c; k++) m = PetscMax(m, PetscRealPart(ys[k]));
    z = CrossEntropyExpSum(c, ys, m, dy ? dy + s * c : NULL); /* the exponentials kept for the gradient, each taken once */
    if (a == 0)
      *sum += m + PetscLogReal(z) - PetscRealPart(ys[lbl]); /* without smoothing: the same operations as always */
    else {
      for (PetscInt k = 0; k < c; k++) ysum += PetscRealPart(ys[k]);
      *sum += m + PetscLogReal(z) - (1 - a) * PetscRealPart(ys[lbl]) - (a / c) * ysum;
    }
    if (dy) {
      for (PetscInt k = 0; k < c; k++) dy[s * c + k] /= z;
      if (a == 0)
        dy[s * c + lbl] -= 1.0;
      else {
        for (PetscInt k = 0; k < c; k++) dy[s * c + k] -= a / c;
        dy[s * c + lbl] -= 1 - a;
      }
    }
  }
  PetscCall(PetscLogFlops(5.0 * ny));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossHessianMult_CrossEntropy(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, const PetscScalar *v, PetscScalar *hv)
{
  Loss_CrossEntropy *ce = (Loss_CrossEntropy *)loss->data;
  PetscInt           c;

  PetscFunctionBegin;
  PetscCall(CheckLabels_Private(loss, ny, nt, t, &c));
  for (PetscInt s = 0; s < nt; s++) {
    const PetscScalar *ys = y + s * c, *vs = v + s * c;
    PetscScalar       *hs = hv + s * c;
    PetscReal          m = PetscRealPart(ys[0]), z = 0;
    PetscScalar        pv = 0;

    if (Ignored_Private(ce, t[s])) {
      PetscCall(PetscArrayzero(hs, c));
      continue;
    }
    for (PetscInt k = 1; k < c; k++) m = PetscMax(m, PetscRealPart(ys[k]));
    for (PetscInt k = 0; k < c; k++) z += hs[k] = PetscExpReal(PetscRealPart(ys[k]) - m);
    for (PetscInt k = 0; k < c; k++) {
      hs[k] /= z; /* p_k */
      pv += hs[k] * vs[k];
    }
    for (PetscInt k = 0; k < c; k++) hs[k] = hs[k] * (vs[k] - pv);
  }
  PetscFunctionReturn(0);
}

/* the labels of this rank that count in the mean: those other than the ignore index */
static PetscErrorCode LossCounted_CrossEntropy(Loss loss, PetscInt nt, const PetscScalar *t, PetscInt *n)
{
  Loss_CrossEntropy *ce = (Loss_CrossEntropy *)loss->data;

  PetscFunctionBegin;
  *n = 0;
  for (PetscInt s = 0; s < nt; s++) *n += Ignored_Private(ce, t[s]) ? 0 : 1;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossSetFromOptions_CrossEntropy(Loss loss, PetscOptionItems *PetscOptionsObject)
{
  Loss_CrossEntropy *ce     = (Loss_CrossEntropy *)loss->data;
  PetscInt           ignore = ce->ignore;
  PetscReal          a      = ce->smoothing;
  PetscBool          set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Cross-entropy loss options");
  PetscCall(PetscOptionsInt("-loss_ignore_index", "A label that counts neither in the sum nor in the mean's count (PyTorch's ignore_index)", "LossCrossEntropySetIgnoreIndex", ignore, &ignore, &set));
  if (set) PetscCall(LossCrossEntropySetIgnoreIndex(loss, ignore));
  PetscCall(PetscOptionsReal("-loss_label_smoothing", "Label smoothing a in [0, 1): the target (1 - a) onehot + a/classes", "LossCrossEntropySetLabelSmoothing", a, &a, &set));
  if (set) PetscCall(LossCrossEntropySetLabelSmoothing(loss, a));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LossView_CrossEntropy(Loss loss, PetscViewer viewer)
{
  Loss_CrossEntropy *ce = (Loss_CrossEntropy *)loss->data;
  PetscBool          ascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  /* only what differs from the defaults, so that the views of existing runs stay as they were */
  if (ce->ignore != -100) PetscCall(PetscViewerASCIIPrintf(viewer, "  ignore index %" PetscInt_FMT "\n", ce->ignore));
  if (ce->smoothing != 0) PetscCall(PetscViewerASCIIPrintf(viewer, "  label smoothing %g\n", (double)ce->smoothing));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossCrossEntropySetIgnoreIndex_CrossEntropy(Loss loss, PetscInt ignore)
{
  PetscFunctionBegin;
  ((Loss_CrossEntropy *)loss->data)->ignore = ignore;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossCrossEntropyGetIgnoreIndex_CrossEntropy(Loss loss, PetscInt *ignore)
{
  PetscFunctionBegin;
  *ignore = ((Loss_CrossEntropy *)loss->data)->ignore;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossCrossEntropySetLabelSmoothing_CrossEntropy(Loss loss, PetscReal a)
{
  PetscFunctionBegin;
  PetscCheck(a >= 0 && a < 1, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_OUTOFRANGE, "crossentropy loss: label smoothing %g is outside [0, 1): give -loss_label_smoothing a with 0 <= a < 1 (e.g. 0.1; 0 is none)", (double)a);
  ((Loss_CrossEntropy *)loss->data)->smoothing = a;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossCrossEntropyGetLabelSmoothing_CrossEntropy(Loss loss, PetscReal *a)
{
  PetscFunctionBegin;
  *a = ((Loss_CrossEntropy *)loss->data)->smoothing;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossDestroy_CrossEntropy(Loss loss)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropySetIgnoreIndex_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropyGetIgnoreIndex_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropySetLabelSmoothing_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropyGetLabelSmoothing_C", NULL));
  PetscCall(PetscFree(loss->data));
  PetscFunctionReturn(0);
}

/*@
  LossCrossEntropySetIgnoreIndex - sets the label that a crossentropy loss ignores, as PyTorch's ignore_index

  Logically collective

  Input Parameters:
+ loss   - a crossentropy Loss (losses of other types ignore the call)
- ignore - the label to ignore (default -100)

  Options Database Key:
. -loss_ignore_index <I> - the same from the options (LossSetFromOptions(), with the Loss's prefix)

  Notes:
  A label equal to it counts neither in the sum nor in the count the mean divides by, which is the number of the other
  labels over all ranks; its rows of the gradient and of LossHessianMult() are zero, and LossCountCorrect() skips it.
  A batch whose labels are all ignored has loss 0 and a zero gradient. Useful for per-token losses on padded
  sequences: give the padding positions the label I. The other labels must still be classes in [0, V).

  Level: intermediate

.seealso: `LossCrossEntropySetLabelSmoothing()`, `LossCrossEntropyGetIgnoreIndex()`, `LossEvaluate()`, `LossCountCorrect()`
@*/
PetscErrorCode LossCrossEntropySetIgnoreIndex(Loss loss, PetscInt ignore)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidLogicalCollectiveInt(loss, ignore, 2);
  PetscTryMethod(loss, "LossCrossEntropySetIgnoreIndex_C", (Loss, PetscInt), (loss, ignore));
  PetscFunctionReturn(0);
}

/*@
  LossCrossEntropyGetIgnoreIndex - the label that a crossentropy loss ignores

  Not collective

  Input Parameter:
. loss - a Loss

  Output Parameters:
+ has    - whether the loss ignores a label (`PETSC_TRUE` for crossentropy), or NULL
- ignore - the ignored label (left unset when has is `PETSC_FALSE`)

  Level: intermediate

.seealso: `LossCrossEntropySetIgnoreIndex()`, `LossCountCorrect()`
@*/
PetscErrorCode LossCrossEntropyGetIgnoreIndex(Loss loss, PetscBool *has, PetscInt *ignore)
{
  PetscErrorCode (*f)(Loss, PetscInt *) = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)loss, "LossCrossEntropyGetIgnoreIndex_C", &f));
  if (has) *has = f ? PETSC_TRUE : PETSC_FALSE;
  if (f) PetscCall((*f)(loss, ignore));
  PetscFunctionReturn(0);
}

/*@
  LossCrossEntropySetLabelSmoothing - sets the label smoothing of a crossentropy loss, as PyTorch's label_smoothing

  Logically collective

  Input Parameters:
+ loss - a crossentropy Loss (losses of other types ignore the call)
- a    - the smoothing, 0 <= a < 1 (default 0: none)

  Options Database Key:
. -loss_label_smoothing <a> - the same from the options (LossSetFromOptions(), with the Loss's prefix)

  Notes:
  The target of a label t over V classes becomes (1 - a) onehot(t) + a/V: the loss per label is logsumexp(y) -
  (1 - a) y[t] - (a/V) sum_k y[k], its gradient softmax(y) - (1 - a) onehot(t) - a/V, and its Hessian (LossHessianMult())
  that of logsumexp, unchanged (the smoothing term is linear in y). Ignored labels (LossCrossEntropySetIgnoreIndex())
  stay out of it.

  Level: intermediate

.seealso: `LossCrossEntropySetIgnoreIndex()`, `LossEvaluate()`, `LossHessianMult()`
@*/
PetscErrorCode LossCrossEntropySetLabelSmoothing(Loss loss, PetscReal a)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidLogicalCollectiveReal(loss, a, 2);
  PetscTryMethod(loss, "LossCrossEntropySetLabelSmoothing_C", (Loss, PetscReal), (loss, a));
  PetscFunctionReturn(0);
}

/*@
  LossCrossEntropyGetLabelSmoothing - the label smoothing of a crossentropy loss

  Not collective

  Input Parameter:
. loss - a Loss

  Output Parameters:
+ has - whether the loss has a label smoothing (`PETSC_TRUE` for crossentropy), or NULL
- a   - the smoothing, 0 <= a < 1 (left unset when has is `PETSC_FALSE`)

  Level: intermediate

.seealso: `LossCrossEntropySetLabelSmoothing()`, `LossCrossEntropyGetIgnoreIndex()`
@*/
PetscErrorCode LossCrossEntropyGetLabelSmoothing(Loss loss, PetscBool *has, PetscReal *a)
{
  PetscErrorCode (*f)(Loss, PetscReal *) = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)loss, "LossCrossEntropyGetLabelSmoothing_C", &f));
  if (has) *has = f ? PETSC_TRUE : PETSC_FALSE;
  if (f) {
    PetscValidRealPointer(a, 3);
    PetscCall((*f)(loss, a));
  }
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LossCreate_CrossEntropy(Loss loss)
{
  Loss_CrossEntropy *ce;

  PetscFunctionBegin;
  PetscCall(PetscNew(&ce));
  ce->ignore                = -100;
  ce->smoothing             = 0;
  loss->data                = ce;
  loss->ops->count          = LossCount_CrossEntropy;
  loss->ops->evaluate       = LossEvaluate_CrossEntropy;
  loss->ops->hessmult       = LossHessianMult_CrossEntropy;
  loss->ops->counted        = LossCounted_CrossEntropy;
  loss->ops->setfromoptions = LossSetFromOptions_CrossEntropy;
  loss->ops->view           = LossView_CrossEntropy;
  loss->ops->destroy        = LossDestroy_CrossEntropy;
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropySetIgnoreIndex_C", LossCrossEntropySetIgnoreIndex_CrossEntropy));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropyGetIgnoreIndex_C", LossCrossEntropyGetIgnoreIndex_CrossEntropy));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropySetLabelSmoothing_C", LossCrossEntropySetLabelSmoothing_CrossEntropy));
  PetscCall(PetscObjectComposeFunction((PetscObject)loss, "LossCrossEntropyGetLabelSmoothing_C", LossCrossEntropyGetLabelSmoothing_CrossEntropy));
  PetscFunctionReturn(0);
}
