/* Private to src/net: the gather of a node's parameters and the reduce-add of its gradient (netpmap.c) */
#pragma once

#include <petscvec.h>

typedef struct _n_NetParamMap *NetParamMap;

PETSC_INTERN PetscErrorCode NetParamMapCreate_Private(Vec, PetscInt, const PetscInt[], const PetscInt[], PetscInt, PetscInt, NetParamMap *);
PETSC_INTERN PetscErrorCode NetParamMapCreateOn_Private(Vec, MPI_Comm, PetscMPIInt, PetscInt, const PetscInt[], const PetscInt[], PetscInt, PetscInt, NetParamMap *);
PETSC_INTERN PetscErrorCode NetParamMapDestroy_Private(NetParamMap *);
PETSC_INTERN PetscErrorCode NetParamMapGather_Private(NetParamMap, Vec, PetscScalar[]);
PETSC_INTERN PetscErrorCode NetParamMapReduceAdd_Private(NetParamMap, PetscScalar[], Vec);
