/*
  PetNetLayout: how a tensor is split over the ranks, and the data movements between layouts as linear operators.

  A tensor of global shape dims[0..ndim-1] (dims[0] = samples; channels-last, the last dim fastest) lives on a
  Cartesian grid of ranks gdims[0..ngrid-1] whose product is the communicator size; a rank's grid coordinates are
  the row-major digits of its rank, rank = ((c0*g1 + c1)*g2 + c2)... Each tensor dim is either not split or split
  along exactly one grid axis, with ownership sizes per coordinate along that axis (uneven and zero allowed). A grid
  axis that splits no dim is a replication axis: the ranks along it hold copies of the same block, and the copy at
  coordinate 0 along every replication axis is the canonical one. A Vec in a layout holds, on each rank, that
  rank's block row-major. Sizes and offsets are 64-bit; a block must fit a PetscInt.

  Two layouts come ready-made: PetNetLayoutCreateSampleSplit() (a batch split by samples, a Net's batch Vec) and
  PetNetLayoutCreateFromDMDA() (a DMDA global Vec with dof c: the tensor (1, [P,] N, M, c) split along y (and z) and x
  by the DMDA's ownership ranges on its m x n (x p) grid of ranks).

  The operators (MATSHELLs over a PetscSF; MatMult moves data, MatMultTranspose is its exact adjoint):
    PetNetRedistributeCreate(from, to)   y = R x: every entry of to's blocks copied from from's canonical copy
    PetNetSumReduceCreate(partial, to)   y = S x: to's canonical copy gets the sum over partial's replicas
    PetNetAllReduceCreate(L)             y = A x: every replica gets the sum over the replicas (A = A^T)
    PetNetHaloCreate(L, lo, hi)          y = H x: this rank's block grown by lo/hi per dim, zero outside the tensor
    PetNetHaloCreateConv(in, out, ...)   y = H x: the box of in that this rank's block of out reads in a convolution
*/
#pragma once

#include <petscvec.h>
#include <petscmat.h>
#include <petscdm.h>

/* The largest number of tensor dims and of grid axes of a layout */
#define PETNET_LAYOUT_MAX_DIM  5
#define PETNET_LAYOUT_MAX_GRID 6

typedef struct _p_PetNetLayout *PetNetLayout;

PETSC_EXTERN PetscClassId PETNETLAYOUT_CLASSID;

PETSC_EXTERN PetscErrorCode PetNetSysInitializePackage(void);
PETSC_EXTERN PetscErrorCode PetNetSysFinalizePackage(void);

PETSC_EXTERN PetscErrorCode PetNetLayoutCreate(MPI_Comm, PetNetLayout *);
PETSC_EXTERN PetscErrorCode PetNetLayoutSetShape(PetNetLayout, PetscInt, const PetscInt64[]);
PETSC_EXTERN PetscErrorCode PetNetLayoutSetGrid(PetNetLayout, PetscInt, const PetscMPIInt[]);
PETSC_EXTERN PetscErrorCode PetNetLayoutSetSplit(PetNetLayout, PetscInt, PetscInt, const PetscInt64[]);
PETSC_EXTERN PetscErrorCode PetNetLayoutSetUp(PetNetLayout);
PETSC_EXTERN PetscErrorCode PetNetLayoutGetLocalSize(PetNetLayout, PetscInt *);
PETSC_EXTERN PetscErrorCode PetNetLayoutGetBlock(PetNetLayout, PetscInt64[], PetscInt64[]);
PETSC_EXTERN PetscErrorCode PetNetLayoutCreateVec(PetNetLayout, Vec *);
PETSC_EXTERN PetscErrorCode PetNetLayoutView(PetNetLayout, PetscViewer);
PETSC_EXTERN PetscErrorCode PetNetLayoutDestroy(PetNetLayout *);
PETSC_EXTERN PetscErrorCode PetNetLayoutCreateSampleSplit(MPI_Comm, PetscInt, const PetscInt64[], PetscInt, PetNetLayout *);
PETSC_EXTERN PetscErrorCode PetNetLayoutCreateFromDMDA(DM, PetNetLayout *);

PETSC_EXTERN PetscErrorCode PetNetRedistributeCreate(PetNetLayout, PetNetLayout, Mat *);
PETSC_EXTERN PetscErrorCode PetNetSumReduceCreate(PetNetLayout, PetNetLayout, Mat *);
PETSC_EXTERN PetscErrorCode PetNetAllReduceCreate(PetNetLayout, Mat *);
PETSC_EXTERN PetscErrorCode PetNetHaloCreate(PetNetLayout, const PetscInt64[], const PetscInt64[], Mat *);
PETSC_EXTERN PetscErrorCode PetNetHaloCreateConv(PetNetLayout, PetNetLayout, const PetscInt[], const PetscInt[], const PetscInt[], Mat *);
