/* Private to the dense kind: its data (dense.c; the kernels of both element types in densekernels.h, bfloat16's in
   densebf16.c). */
#pragma once

#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt      nout;
  PetscBool     bias;
  PetscBool     same;   /* dense:E: as many outputs as the input's last dimension (nout set at set-up) */
  PetscBool     tokens; /* dense:N:tokens: applied to the last dimension at each position of a sample */
  PetscInt      nin;    /* the inputs of one GEMM row: the sample's size, or its last dimension E with tokens */
  PetscInt      rows;   /* GEMM rows per sample: 1, or the positions (the product of the other dims) with tokens */
  LayerInitType init;
  PetscReal     initstd;
  /* single precision: the parameters rounded to float by the last forward ([W, b], nparams entries),
     a float direction or gradient of the same size, and their capacity */
  float   *thetaf, *workf;
  PetscInt nf;
  /* bfloat16 kernels (densebf16.c): thetaf rounded to bfloat16 by their forward (w16 set; a float forward clears
     it), and a direction rounded by their jvp, n16 entries each (allocated by their first forward) */
  uint16_t *theta16, *work16;
  PetscInt  n16;
  PetscBool w16;
} Layer_Dense;

/* dense.c: the float parameters' rounding and the float direction of the float kernels (densekernels.h), which the
   bfloat16 ones share */
PETSC_INTERN PetscErrorCode DenseRoundParameters(Layer, const PetscScalar *, uint16_t *);
PETSC_INTERN PetscErrorCode DenseDirectionSingle(Layer, const PetscScalar *, const float **);
PETSC_INTERN PetscErrorCode DenseSetBF16(Layer);
