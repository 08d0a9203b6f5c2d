/* Loss: a scalar objective of the network output and a target, averaged over the global batch. */
#pragma once

#include <petnetnet.h>

typedef struct _p_Loss *Loss;

typedef const char *LossType;
#define LOSSCROSSENTROPY "crossentropy" /* softmax + negative log-likelihood on integer labels; target: one label per sample */
#define LOSSMSE          "mse"          /* mean over all entries of (y - t)^2; target: same shape as the output */
#define LOSSL1           "l1"           /* mean over all entries of |y - t|; target: same shape as the output */

PETSC_EXTERN PetscClassId      LOSS_CLASSID;
PETSC_EXTERN PetscFunctionList LossList;

PETSC_EXTERN PetscErrorCode LossInitializePackage(void);
PETSC_EXTERN PetscErrorCode LossFinalizePackage(void);
PETSC_EXTERN PetscErrorCode LossCreate(MPI_Comm, Loss *);
PETSC_EXTERN PetscErrorCode LossSetType(Loss, LossType);
PETSC_EXTERN PetscErrorCode LossGetType(Loss, LossType *);
PETSC_EXTERN PetscErrorCode LossSetOptionsPrefix(Loss, const char[]);
PETSC_EXTERN PetscErrorCode LossAppendOptionsPrefix(Loss, const char[]);
PETSC_EXTERN PetscErrorCode LossGetOptionsPrefix(Loss, const char *[]);
PETSC_EXTERN PetscErrorCode LossSetFromOptions(Loss);
PETSC_EXTERN PetscErrorCode LossSetUp(Loss);
PETSC_EXTERN PetscErrorCode LossView(Loss, PetscViewer);
PETSC_EXTERN PetscErrorCode LossDestroy(Loss *);
PETSC_EXTERN PetscErrorCode LossRegister(const char[], PetscErrorCode (*)(Loss));
PETSC_EXTERN PetscErrorCode LossRegisterAll(void);

/* f = mean loss over the global batch; dY = df/dY (may be NULL). Y: outputs (sample-major), T: targets. */
PETSC_EXTERN PetscErrorCode LossEvaluate(Loss, Vec, Vec, PetscReal *, Vec);
PETSC_EXTERN PetscErrorCode LossNetForwardBackward(Loss, Net, Vec, Vec, Vec, PetscReal *, Vec, Vec);
/* HV = (d^2 f / dY^2) V at the last evaluated Y (for Gauss-Newton products). */
PETSC_EXTERN PetscErrorCode LossHessianMult(Loss, Vec, Vec);
/* Number of samples of the global batch whose arg-max output equals the integer label in T. */
PETSC_EXTERN PetscErrorCode LossCountCorrect(Loss, Vec, Vec, PetscInt *);
/* crossentropy: a label that counts nowhere (default -100), label smoothing a in [0, 1) (PyTorch's) */
PETSC_EXTERN PetscErrorCode LossCrossEntropySetIgnoreIndex(Loss, PetscInt);
PETSC_EXTERN PetscErrorCode LossCrossEntropyGetIgnoreIndex(Loss, PetscBool *, PetscInt *);
PETSC_EXTERN PetscErrorCode LossCrossEntropySetLabelSmoothing(Loss, PetscReal);
PETSC_EXTERN PetscErrorCode LossCrossEntropyGetLabelSmoothing(Loss, PetscBool *, PetscReal *);

/*
  Curvature of the mean loss f(theta) = Loss(Net(X; theta), T) over a batch, as a MATSHELL on the parameter layout
  (NetCreateParameterVec()), at the Net's current parameters:
    LOSS_HESSIAN_GN     the generalised Gauss-Newton G = J_theta^T (d^2 Loss/dY^2) J_theta (symmetric positive semi-definite)
    LOSS_HESSIAN_EXACT  the exact Hessian d^2 f/dtheta^2 (forward-over-reverse: NetJVP, NetSecondOrderBackward)
*/
typedef enum { LOSS_HESSIAN_GN, LOSS_HESSIAN_EXACT } LossHessianType;
PETSC_EXTERN const char *const LossHessianTypes[];

PETSC_EXTERN PetscErrorCode LossCreateNetHessian(Loss, Net, LossHessianType, Mat *);
PETSC_EXTERN PetscErrorCode LossNetHessianSetBatch(Mat, Vec, Vec);     /* X, T (referenced) */
PETSC_EXTERN PetscErrorCode LossNetHessianSetChunkSize(Mat, PetscInt); /* local samples per pass (default: the whole batch) */
PETSC_EXTERN PetscErrorCode LossNetHessianGetType(Mat, LossHessianType *);
PETSC_EXTERN PetscErrorCode LossNetHessianSetDamping(Mat, PetscReal); /* H + lambda I */
