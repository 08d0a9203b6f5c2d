/* Private to the dense kind: its data (dense.c; the kernels of both element types in densekernels.h). */
#pragma once

#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt      nout;
  PetscBool     bias;
  PetscBool     tokens; /* dense:N:tokens: applied to the last dimension at each position of a sample */
  PetscInt      nin;    /* the inputs of one GEMM row: the sample's size, or its last dimension E with tokens */
  PetscInt      rows;   /* GEMM rows per sample: 1, or the positions (the product of the other dims) with tokens */
  LayerInitType init;
  PetscReal     initstd;
  /* single precision: the parameters rounded to float by the last forward ([W, b], nparams entries),
     a float direction or gradient of the same size, and their capacity */
  float   *thetaf, *workf;
  PetscInt nf;
} Layer_Dense;
