/*
  The oneDNN backend of the float GEMMs (src/sys/onednn.c): one CPU engine and one in-order stream, created at the first
  call, and a cache of matmul primitives keyed by (element type, transposes, sizes, leading dimensions, beta, bias,
  threads), destroyed at PetscFinalize(). A cached entry records once whether oneDNN has a kernel worth running for its
  key: a matmul that oneDNN does not implement, or implements only by its reference loops ("ref:any", e.g. bfloat16 on
  a CPU without AVX-512), is recorded as native and the caller runs its own GEMM (LayerGemmSingle(): sgemm).

  Callers state the backend of each GEMM with PetNetGemmBackend (LayerGemmEpilogueSingle's backend: a Net sets it on
  its layers from NetSetBackend() and its precision):

    PETNET_GEMM_NATIVE        BLAS (sgemm), or PetNet's own loops
    PETNET_GEMM_ONEDNN_F32    oneDNN matmul on float operands, float accumulation
    PETNET_GEMM_ONEDNN_BF16   oneDNN matmul on bfloat16 operands (each rounded to nearest even from the float the
                              caller holds: exact for values stored in bfloat16), float accumulation and float output
*/
#pragma once

#include <petscsys.h>

typedef enum { PETNET_GEMM_NATIVE, PETNET_GEMM_ONEDNN_F32, PETNET_GEMM_ONEDNN_BF16 } PetNetGemmBackend;

PETSC_INTERN PetscBool      PetNetOneDNNAvailable(void);
PETSC_INTERN PetscErrorCode PetNetOneDNNMatmul(PetNetGemmBackend, char, char, PetscInt, PetscInt, PetscInt, const float *, PetscInt, const float *, PetscInt, float, float *, PetscInt, const float *, PetscBool *);
PETSC_INTERN PetscErrorCode PetNetOneDNNVersion(char *, size_t);
PETSC_INTERN PetscErrorCode PetNetOneDNNProbe(PetNetGemmBackend, PetscInt, PetscInt, PetscInt, char *, size_t);
