/* Private to src/net/netio*.c: what the binary and HDF5 formats share. */
#pragma once

#include <petnet/private/netimpl.h>

/* Binary files start with this class id: the bytes "PNET" (PETSc binary files are big-endian). */
#define NET_FILE_CLASSID 0x504E4554
/* Bump when the layout changes; readers refuse versions they do not know.
   1: no checksums (still read).  2: a CRC-32 of every tensor (NetIOChecksum_Private()), verified on load.
   3: HDF5 holds every tensor in PyTorch's layout and shape (netiotorch.c) and num_batches_tracked; binary keeps
      PetNet's layout; both record the input normalisation (scale, mean, std) the Net was trained with.
   4: a CRC-32 of the header too (layer list, input shape, counts, grid, normalisation: NetIOHeaderChecksum_Private()),
      and the number of spatial dims of the grid a Net trained in grid mode ran on (NetSetGrid(); 0: batch mode).
      4 is no single bit flip away from 1, 2 or 3: a damaged version field cannot pass a file off as one without it. */
#define NET_FILE_VERSION 4
/* The first version whose header carries a checksum */
#define NET_FILE_VERSION_HEADER_CRC 4
/* A layer list a binary file holds when its length cannot be checked against the file's (MPI-IO): 16 MB */
#define NET_MAX_SPEC_UNCHECKED (1 << 24)

PETSC_INTERN PetscErrorCode NetWrite_Binary(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetRead_Binary(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetWrite_HDF5(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetRead_HDF5(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetLoad_HDF5(Net, const char[]);

PETSC_INTERN PetscErrorCode NetIOFileName_Private(PetscViewer, const char **);
PETSC_INTERN PetscErrorCode NetIOCheckVersion_Private(Net, const char[], PetscInt);
PETSC_INTERN PetscErrorCode NetIOSetArchitecture_Private(Net, const char[], const char[], const PetNetShape *, PetscInt);
PETSC_INTERN PetscErrorCode NetIOCheckCounts_Private(Net, const char[], PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetIOGetNumBuffers_Private(Net, PetscInt *);
PETSC_INTERN PetscErrorCode NetIOFailForTesting_Private(Net, const char[]);
PETSC_INTERN PetscErrorCode NetIOGetSpec_Private(Net, char **);
PETSC_INTERN PetscErrorCode NetIOTensorName_Private(Net, PetscInt, const LayerTensorInfo *, size_t, char[]);
PETSC_INTERN PetscErrorCode NetIOChecksum_Private(PetscInt, const PetscScalar *, PetscInt64 *);
PETSC_INTERN PetscErrorCode NetIOHeaderChecksum_Private(const char[], const PetNetShape *, PetscInt, PetscInt, PetscInt, PetscBool, const PetscReal[], PetscInt64 *);
PETSC_INTERN PetscErrorCode NetIOGetGridDimension_Private(Net, PetscInt *);
PETSC_INTERN PetscErrorCode NetIOGridInputShape_Private(Net, const char[], PetscInt, PetNetShape *);
PETSC_INTERN PetscErrorCode NetIOCheckHeader_Private(Net, const char[], PetscInt, const char[], const PetNetShape *, PetscInt, PetscInt, PetscInt, PetscBool, const PetscReal[], PetscInt64);
PETSC_INTERN PetscErrorCode NetIOCheckTensorRanges_Private(Net, const char[]);
PETSC_INTERN PetscErrorCode NetIOSetNormalization_Private(Net, const char[], PetscBool, const PetscReal[]);
PETSC_INTERN PetscErrorCode NetIOFeatureOrigins_Private(Net, PetscInt **);
PETSC_INTERN PetscErrorCode NetIOToTorch_Private(const LayerTensorInfo *, const PetscInt[2], const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetIOFromTorch_Private(const LayerTensorInfo *, const PetscInt[2], const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetIOCheckTensor_Private(Net, const char[], const char[], PetscInt, const PetscScalar *, PetscBool, PetscInt64);
