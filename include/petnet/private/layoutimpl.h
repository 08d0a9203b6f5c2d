/* Private: the PetNetLayout object, and the one routine every data-movement operator is built from. */
#pragma once

#include <petnetlayout.h>
#include <petscsf.h>
#include <petsc/private/petscimpl.h>

/* the log event of every application of a data-movement operator (MatMult and friends of the shells) */
PETSC_EXTERN PetscLogEvent PETNETLAYOUT_Move;

typedef struct _PetNetLayoutOps *PetNetLayoutOps;
struct _PetNetLayoutOps {
  PetscErrorCode (*view)(PetNetLayout, PetscViewer);
};

/*
  For tensor dim d: axis[d] is the grid axis splitting it (-1: not split) and offset[d][0..gdims[axis[d]]] the
  ownership ranges along it (offset[d][c] .. offset[d][c+1] belongs to grid coordinate c; {0, dims[d]} when not split).
  usersizes[d] keeps what PetNetLayoutSetSplit() was given (NULL: even split) until PetNetLayoutSetUp() checks it.
*/
struct _p_PetNetLayout {
  PETSCHEADER(struct _PetNetLayoutOps);
  PetscInt    ndim;
  PetscInt64  dims[PETNET_LAYOUT_MAX_DIM];
  PetscInt    ngrid;
  PetscMPIInt gdims[PETNET_LAYOUT_MAX_GRID];
  PetscMPIInt coord[PETNET_LAYOUT_MAX_GRID]; /* this rank's grid coordinates */
  PetscInt    axis[PETNET_LAYOUT_MAX_DIM];
  PetscBool   splitset[PETNET_LAYOUT_MAX_DIM];
  PetscInt64 *usersizes[PETNET_LAYOUT_MAX_DIM];
  PetscInt64 *offset[PETNET_LAYOUT_MAX_DIM];
  PetscInt64  start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM]; /* this rank's block */
  PetscInt    nlocal;
  PetscBool   canonical; /* this rank holds the canonical copy (coordinate 0 along every replication axis) */
  PetscBool   setupcalled;
};

/*
  The star forest that reads a box of L: leaves are the entries of the box [lo[d], hi[d]) (global coordinates,
  row-major over the box, last dim fastest), roots are L's local entries; each leaf inside the tensor is connected
  to the entry of the canonical copy holding it, a leaf outside (padding) to nothing. *boxsize is the number of
  entries of the box (the leaf space; more than the SF's leaves when there is padding). Built from the ownership
  ranges alone, with no communication, in O(box entries). L must be set up.
*/
PETSC_INTERN PetscErrorCode PetNetLayoutCreateBoxSF_Private(PetNetLayout, const PetscInt64[], const PetscInt64[], PetscSF *, PetscInt *);
/* ... its graph alone (nleaves, ilocal or NULL, iremote, as PetscSFSetGraph() takes them; the caller frees ilocal and
   iremote), for a caller that keeps part of it: no star forest is set up (20 bytes a box entry instead of about 40) */
PETSC_INTERN PetscErrorCode PetNetLayoutCreateBoxGraph_Private(PetNetLayout, const PetscInt64[], const PetscInt64[], PetscInt *, PetscInt **, PetscSFNode **, PetscInt *);

/*
  The MATSHELL of an SF: forward (PETSC_FALSE) y = bcast(x), roots -> leaves, with its adjoint the sum-reduce; or
  reverse (PETSC_TRUE) y = reduce(x), leaves -> roots, with its adjoint the bcast. boxsize is the size of the leaf
  space (PetNetLayoutCreateBoxSF_Private()). Takes over the reference to sf.
*/
PETSC_INTERN PetscErrorCode PetNetSFShellCreate_Private(PetscSF, PetscInt, PetscBool, Mat *);

/* Both layouts set up, on the same communicator, with the same number of dims; errors name caller and arguments */
PETSC_INTERN PetscErrorCode PetNetLayoutCheckPair_Private(PetNetLayout, PetNetLayout, const char[], const char[], const char[]);

/* An error naming caller unless L is set up */
PETSC_INTERN PetscErrorCode PetNetLayoutCheckSetUp_Private(PetNetLayout, const char[]);
