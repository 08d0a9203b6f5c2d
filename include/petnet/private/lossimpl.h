/* Private: the Loss object. */
#pragma once

#include <petnetloss.h>
#include <petsc/private/petscimpl.h>

PETSC_EXTERN PetscBool LossRegisterAllCalled;

/*
  Kernels over the local batch; Y and T are local arrays, ny and nt their local lengths.
    evaluate(ny, y, nt, t, &sum, dy): sum = this rank's SUM of per-entry (or per-sample) losses;
                                      dy = d(sum)/dy (unscaled); the caller divides by the global count.
    count():  the global count the mean divides by, from the global lengths (samples or entries).
    hessmult(ny, y, nt, t, v, hv):    hv = d^2(sum)/dy^2 v (unscaled).
    counted(nt, t, &n):               optional: how many of this rank's targets count in the mean (crossentropy:
                                      the labels other than its ignore index); the mean then divides by their sum
                                      over the ranks, taken at LossEvaluate() and kept (N) for LossHessianMult().
*/
struct _LossOps {
  PetscErrorCode (*setfromoptions)(Loss, PetscOptionItems *);
  PetscErrorCode (*count)(Loss, PetscInt, PetscInt, PetscInt *);
  PetscErrorCode (*evaluate)(Loss, PetscInt, const PetscScalar *, PetscInt, const PetscScalar *, PetscReal *, PetscScalar *);
  PetscErrorCode (*hessmult)(Loss, PetscInt, const PetscScalar *, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
  PetscErrorCode (*counted)(Loss, PetscInt, const PetscScalar *, PetscInt *);
  PetscErrorCode (*view)(Loss, PetscViewer);
  PetscErrorCode (*destroy)(Loss);
};

struct _p_Loss {
  PETSCHEADER(struct _LossOps);
  PetscBool     setupcalled;
  Vec           Y, T; /* last evaluation point (referenced), for LossHessianMult */
  PetscInt      N;    /* the global count the last LossEvaluate() divided by */
  PetscLogEvent event;
  void         *data;
};
