/* Private to the dense kind: its data, shared by the double kernels (dense.c) and the float ones (densesingle.c). */
#pragma once

#include <petnet/private/layerimpl.h>

/* flops of a GEMM below which it is not cut: a part's GEMM should outweigh packing its operands */
#define DENSE_PART_FLOPS 4.0e6

typedef struct {
  PetscInt      nout;
  PetscBool     bias;
  LayerInitType init;
  PetscReal     initstd;
  /* single precision (densesingle.c): the parameters rounded to float by the last forward ([W, b], nparams entries),
     a float direction or gradient of the same size, and their capacity */
  float   *thetaf, *workf;
  PetscInt nf;
} Layer_Dense;

PETSC_INTERN PetscErrorCode LayerForwardSingle_Dense(Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode LayerBackwardSingle_Dense(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVPSingle_Dense(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
