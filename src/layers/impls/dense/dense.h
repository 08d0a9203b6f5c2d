/* Private to the dense kind: its data (dense.c; the kernels of both element types in densekernels.h). */
#pragma once

#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt      nout;
  PetscBool     bias;
  LayerInitType init;
  PetscReal     initstd;
  /* single precision: the parameters rounded to float by the last forward ([W, b], nparams entries),
     a float direction or gradient of the same size, and their capacity */
  float   *thetaf, *workf;
  PetscInt nf;
} Layer_Dense;
