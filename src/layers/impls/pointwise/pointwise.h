/* Shared implementation of the elementwise layers: y_i = f(x_i), shape preserved, no parameters. */
#pragma once

#include <petnet/private/layerimpl.h>

/* f(x) and f'(x) given both x and y = f(x) (each kind uses whichever is cheaper). */
typedef PetscScalar (*PointwiseFunction)(PetscScalar x, PetscReal alpha);
typedef PetscScalar (*PointwiseDerivative)(PetscScalar x, PetscScalar y, PetscReal alpha);

typedef struct {
  PointwiseFunction   f;
  PointwiseDerivative df;
  PetscReal           alpha; /* a kind's one setting, e.g. the negative slope of leakyrelu */
  const char         *alphaname;
  PetscLogDouble      flops_f, flops_df;
} Layer_Pointwise;

PETSC_INTERN PetscErrorCode LayerCreatePointwise_Private(Layer, PointwiseFunction, PointwiseDerivative, PetscLogDouble, PetscLogDouble);
PETSC_INTERN PetscErrorCode LayerPointwiseSetParameter_Private(Layer, const char[], PetscReal);
