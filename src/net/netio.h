/* Private to src/net/netio*.c: what the binary and HDF5 formats share. */
#pragma once

#include <petnet/private/netimpl.h>

/* Binary files start with this class id: the bytes "PNET" (PETSc binary files are big-endian). */
#define NET_FILE_CLASSID 0x504E4554
/* Bump when the layout changes; readers refuse versions they do not know. */
#define NET_FILE_VERSION 1
/* Longest compact layer list a file may hold. */
#define NET_MAX_SPEC 8192

PETSC_INTERN PetscErrorCode NetWrite_Binary(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetRead_Binary(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetWrite_HDF5(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetRead_HDF5(Net, PetscViewer);

PETSC_INTERN PetscErrorCode NetIOFileName_Private(PetscViewer, const char **);
PETSC_INTERN PetscErrorCode NetIOCheckVersion_Private(Net, const char[], PetscInt);
PETSC_INTERN PetscErrorCode NetIOSetArchitecture_Private(Net, const char[], const char[], const PetNetShape *);
PETSC_INTERN PetscErrorCode NetIOCheckCounts_Private(Net, const char[], PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetIOGetNumBuffers_Private(Net, PetscInt *);
PETSC_INTERN PetscErrorCode NetIOFailForTesting_Private(Net, const char[]);
