/* PetNet system: shapes, version, the parameter broadcast, atomic files. */
#pragma once

#include <petscsys.h>
#include <petscvec.h>
#include <petscmat.h>

/* The version, defined here only: the makefile reads it for libpetnet.so.MAJOR.MINOR.SUBMINOR (soname libpetnet.so.MAJOR),
   petnet.pc and petnet_variables */
#define PETNET_VERSION_MAJOR    0
#define PETNET_VERSION_MINOR    1
#define PETNET_VERSION_SUBMINOR 0

/*
  PetNetShape - the shape of ONE sample, channels-last.

  ndim = 1: (f)             flat features
  ndim = 3: (h, w, c)       an image or grid block; c is the fastest index, as in a DMDA with dof = c
  ndim = 4: (d, h, w, c)    a volume (conv3d, 3-D pooling); d is the slowest index, text "DxHxWxC"
  ndim = 2 or 5             a sequence (T, E), or an intermediate shape of the tensor-shape kinds (reshape, permute,
                            einsum: a ViT's patches (h/p, p, w/p, p, c)); the binary model format holds input shapes of
                            at most 4 dims (netiobinary.c), HDF5 any

  A batch is a Vec whose local part is n consecutive samples: [n][h][w][c] (or [n][f], [n][d][h][w][c]).
*/
#define PETNET_MAX_DIM 5
typedef struct {
  PetscInt ndim;
  PetscInt dim[PETNET_MAX_DIM];
} PetNetShape;

PETSC_EXTERN PetscErrorCode PetNetShapeSize(const PetNetShape *, PetscInt *);
PETSC_EXTERN PetscErrorCode PetNetShapeToString(const PetNetShape *, size_t, char[]);
PETSC_EXTERN PetscErrorCode PetNetShapeFromString(const char[], PetNetShape *);
PETSC_EXTERN PetscBool      PetNetShapeEqual(const PetNetShape *, const PetNetShape *);
PETSC_EXTERN PetscErrorCode PetNetShapeCheck(MPI_Comm, const PetNetShape *, const char[]);

/* The broadcast of a distributed parameter Vec to a replicated copy on every rank, as one operator.
   Its transpose is the sum-reduce of per-rank gradients back to the owned slices. */
PETSC_EXTERN PetscErrorCode PetNetBroadcastCreate(Vec, Mat *, Vec *);

/* Atomic file replacement: write to a temporary name, then rename into place (collective). */
PETSC_EXTERN PetscErrorCode PetNetTemporaryFileName(MPI_Comm, const char[], size_t, char[]);
PETSC_EXTERN PetscErrorCode PetNetCommitFile(MPI_Comm, const char[], const char[]);
PETSC_EXTERN PetscErrorCode PetNetRemoveTemporaryFile(const char[]);
PETSC_EXTERN PetscErrorCode PetNetCheckWritableFile(MPI_Comm, const char[], const char[]);
PETSC_EXTERN PetscErrorCode PetNetRemoveStaleTemporaryFiles(MPI_Comm, const char[]);
/* Writes that fail on one rank end every rank with the same error (src/sys/writeagree.c) */
PETSC_EXTERN PetscErrorCode PetNetWriteAgree(MPI_Comm, PetscErrorCode, int, const char[], const char[]);
PETSC_EXTERN PetscErrorCode PetNetWriteAgreeReason(MPI_Comm, const char[], const char[], const char[]);
PETSC_EXTERN PetscErrorCode PetNetWriteCheckViewer(PetscViewer);
PETSC_EXTERN PetscErrorCode PetNetFaultInjectWrite(MPI_Comm, PetscBool *);
PETSC_EXTERN PetscErrorCode PetNetCheckHDF5File(MPI_Comm, const char[], const char[], PetscBool);

/* Integer options read in 64 bits and checked against a range, with an error naming the option (src/sys/options.c):
   PETSc 3.18's PetscOptionsInt() keeps the low 32 bits of 4294967304. The same arguments as PETSc's functions. */
PETSC_EXTERN PetscErrorCode PetNetOptionsInt_Private(PetscOptionItems *, const char[], const char[], const char[], PetscInt, PetscInt *, PetscBool *, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode PetNetOptionsGetInt(PetscOptions, const char[], const char[], PetscInt *, PetscBool *);
#define PetNetOptionsInt(opt, text, man, current, value, set)              PetNetOptionsInt_Private(PetscOptionsObject, opt, text, man, current, value, set, PETSC_MIN_INT, PETSC_MAX_INT)
#define PetNetOptionsBoundedInt(opt, text, man, current, value, set, lo)   PetNetOptionsInt_Private(PetscOptionsObject, opt, text, man, current, value, set, lo, PETSC_MAX_INT)
#define PetNetOptionsRangeInt(opt, text, man, current, value, set, lo, hi) PetNetOptionsInt_Private(PetscOptionsObject, opt, text, man, current, value, set, lo, hi)

/* PetNet's data directory (models/, meshes/): PREFIX/share/petnet when installed, share/ in the build tree */
PETSC_EXTERN PetscErrorCode PetNetGetDataFile(const char[], size_t, char[]);

/* Threads of one process (OpenMP): -net_threads */
PETSC_EXTERN PetscErrorCode PetNetSetNumThreads(PetscInt);
PETSC_EXTERN PetscErrorCode PetNetGetNumThreads(PetscInt *);

/* The BLAS and the CPU in view (src/sys/cpuinfo.c): the BLAS's name and kernels, the CPU's vector and matrix units, the
   OPENBLAS_CORETYPE that would run faster kernels, one line for views, and the once-per-job warning */
PETSC_EXTERN PetscErrorCode PetNetGetBLASInfo(const char **, const char **);
PETSC_EXTERN PetscErrorCode PetNetGetCPUFeatures(const char **);
PETSC_EXTERN PetscErrorCode PetNetGetBLASCoreAdvice(const char **);
PETSC_EXTERN PetscErrorCode PetNetBLASView(PetscViewer);
PETSC_EXTERN PetscErrorCode PetNetBLASCheck(MPI_Comm);

/* Distributed tensors: layouts over a grid of ranks, and the data movements between them as operators */
#include <petnetlayout.h>
