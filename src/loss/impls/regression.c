/*
  Regression losses, mean over every entry of the global batch (PyTorch's reduction="mean"):
    mse: (y - t)^2,  dy = 2 (y - t),  H v = 2 v
    l1 : |y - t|,    dy = sign(y - t) (0 at y = t),  H v = 0
  y and t have the same layout.
*/
#include <petnet/private/lossimpl.h>

static PetscErrorCode LossCount_Entries(Loss loss, PetscInt Ny, PetscInt Nt, PetscInt *N)
{
  PetscFunctionBegin;
  PetscCheck(Ny == Nt, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_SIZ,
             "%s loss: the target has %" PetscInt_FMT " entries but the output has %" PetscInt_FMT ": the target must have the output's shape (create it with VecDuplicate() of the Net's output)", ((PetscObject)loss)->type_name, Nt, Ny);
  *N = Ny;
  PetscFunctionReturn(0);
}

static PetscErrorCode LossEvaluate_MSE(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, PetscReal *sum, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCheck(ny == nt, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "mse loss: local target size %" PetscInt_FMT " differs from local output size %" PetscInt_FMT ": distribute both alike", nt, ny);
  *sum = 0;
  for (PetscInt i = 0; i < ny; i++) {
    PetscScalar d = y[i] - t[i];

    *sum += PetscRealPart(d * d);
    if (dy) dy[i] = 2.0 * d;
  }
  PetscCall(PetscLogFlops(4.0 * ny));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossHessianMult_MSE(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, const PetscScalar *v, PetscScalar *hv)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < ny; i++) hv[i] = 2.0 * v[i];
  PetscFunctionReturn(0);
}

static PetscErrorCode LossEvaluate_L1(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, PetscReal *sum, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCheck(ny == nt, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "l1 loss: local target size %" PetscInt_FMT " differs from local output size %" PetscInt_FMT ": distribute both alike", nt, ny);
  *sum = 0;
  for (PetscInt i = 0; i < ny; i++) {
    PetscReal d = PetscRealPart(y[i] - t[i]);

    *sum += PetscAbsReal(d);
    if (dy) dy[i] = d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
  }
  PetscCall(PetscLogFlops(2.0 * ny));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossHessianMult_L1(Loss loss, PetscInt ny, const PetscScalar *y, PetscInt nt, const PetscScalar *t, const PetscScalar *v, PetscScalar *hv)
{
  PetscFunctionBegin;
  PetscCall(PetscArrayzero(hv, ny));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LossCreate_MSE(Loss loss)
{
  PetscFunctionBegin;
  loss->ops->count    = LossCount_Entries;
  loss->ops->evaluate = LossEvaluate_MSE;
  loss->ops->hessmult = LossHessianMult_MSE;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LossCreate_L1(Loss loss)
{
  PetscFunctionBegin;
  loss->ops->count    = LossCount_Entries;
  loss->ops->evaluate = LossEvaluate_L1;
  loss->ops->hessmult = LossHessianMult_L1;
  PetscFunctionReturn(0);
}
