/* Reading MNIST-family IDX files (gzip or plain) for the idx Dataset kind. */
#pragma once

#include <petnet/private/datasetimpl.h>
#include <zlib.h>

/*
  IDX layout (big-endian): bytes 0,1 = 0; byte 2 = data type (0x08: unsigned byte, the only one read here);
  byte 3 = number of dimensions d; then d 32-bit sizes; then the data, row-major.
    images 0x00000803: [N][rows][cols]      labels 0x00000801: [N]
*/
typedef struct {
  char       name[PETSC_MAX_PATH_LEN];
  gzFile     gz;
  PetscInt   ndims;
  PetscInt   dims[4];    /* dims[0] = number of samples */
  PetscInt64 header;     /* bytes before the data: 4 + 4 d */
  PetscInt64 samplesize; /* bytes per sample: product of dims[1..] */
} IDXFile;

PETSC_INTERN PetscErrorCode IDXFileOpen(Dataset, const char[], const char[], PetscInt, PetscInt, IDXFile *);
PETSC_INTERN PetscErrorCode IDXFileReadSamples(IDXFile *, PetscInt, PetscInt, PetscBool, PetscScalar *, PetscBool *);
PETSC_INTERN PetscErrorCode IDXFileClose(IDXFile *);
