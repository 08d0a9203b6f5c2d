/*
  crossentropy: softmax followed by the negative log-likelihood of integer labels.
    y [n][c] logits, t [n] labels in {0..c-1}
    loss_s = logsumexp(y_s) - y_s[t_s]            (log-sum-exp shifted by max_k y_s[k]: never overflows)
    dy_s   = softmax(y_s) - onehot(t_s)
    H_s v  = p * v - p (p . v),  p = softmax(y_s)
  The mean divides by the global number of samples.
*/
#include <petnet/private/lossimpl.h>

static PetscErrorCode LossCount_CrossEntropy(Loss loss, PetscInt Ny, PetscInt Nt, PetscInt *N)
{
  PetscFunctionBegin;
  PetscCheck(Nt > 0 ? Ny % Nt == 0 : Ny == 0, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_SIZ,
             "crossentropy loss: the output has %" PetscInt_FMT " entries, not a whole number of classes for the %" PetscInt_FMT " labels of the target: the target must hold one integer label per sample", Ny, Nt);
  *N = Nt;
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckLabels_Private(PetscInt ny, PetscInt nt, const PetscScalar *t, PetscInt *c)
{
  PetscFunctionBegin;
  PetscCheck(nt > 0 ? ny % nt == 0 : ny == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "crossentropy loss: %" PetscInt_FMT " local outputs are not a whole number of classes for %" PetscInt_FMT " labels: the target must hold one integer label per sample",
             ny, nt);
  *c = nt ? ny / nt : 0;
  for (PetscInt s = 0; s < nt; s++) {
    PetscReal l = PetscRealPart(t[s]);

    PetscCheck(l >= 0 && l < *c && l == PetscFloorReal(l), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "crossentropy loss: the label of local sample %" PetscInt_FMT " is %g, but labels must be integer class indices in [0, %" PetscInt_FMT ") for an output of %" PetscInt_FMT
               " classes: fix the targets, or make the last layer's size the number of classes",
               s, (double)l, *c, *c);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LossEvaluate_CrossEntropy(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, PetscReal *sum, PetscScalar *dy)
{
  PetscInt c;

  PetscFunctionBegin;
  PetscCall(CheckLabels_Private(ny, nt, t, &c));
  *sum = 0;
  for (PetscInt s = 0; s < nt; s++) {
    const PetscScalar *ys  = y + s * c;
    PetscInt           lbl = (PetscInt)PetscRealPart(t[s]);
    PetscReal          m = PetscRealPart(ys[0]), z = 0;

    for (PetscInt k = 1; k < c; k++) m = PetscMax(m, PetscRealPart(ys[k]));
    for (PetscInt k = 0; k < c; k++) z += PetscExpReal(PetscRealPart(ys[k]) - m);
    *sum += m + PetscLogReal(z) - PetscRealPart(ys[lbl]);
    if (dy) {
      for (PetscInt k = 0; k < c; k++) dy[s * c + k] = PetscExpReal(PetscRealPart(ys[k]) - m) / z;
      dy[s * c + lbl] -= 1.0;
    }
  }
  PetscCall(PetscLogFlops(5.0 * ny));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossHessianMult_CrossEntropy(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, const PetscScalar *v, PetscScalar *hv)
{
  PetscInt c;

  PetscFunctionBegin;
  PetscCall(CheckLabels_Private(ny, nt, t, &c));
  for (PetscInt s = 0; s < nt; s++) {
    const PetscScalar *ys = y + s * c, *vs = v + s * c;
    PetscScalar       *hs = hv + s * c;
    PetscReal          m = PetscRealPart(ys[0]), z = 0;
    PetscScalar        pv = 0;

    for (PetscInt k = 1; k < c; k++) m = PetscMax(m, PetscRealPart(ys[k]));
    for (PetscInt k = 0; k < c; k++) z += PetscExpReal(PetscRealPart(ys[k]) - m);
    for (PetscInt k = 0; k < c; k++) {
      hs[k] = PetscExpReal(PetscRealPart(ys[k]) - m) / z; /* p_k */
      pv += hs[k] * vs[k];
    }
    for (PetscInt k = 0; k < c; k++) hs[k] = hs[k] * (vs[k] - pv);
  }
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LossCreate_CrossEntropy(Loss loss)
{
  PetscFunctionBegin;
  loss->ops->count    = LossCount_CrossEntropy;
  loss->ops->evaluate = LossEvaluate_CrossEntropy;
  loss->ops->hessmult = LossHessianMult_CrossEntropy;
  PetscFunctionReturn(0);
}
