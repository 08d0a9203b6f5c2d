/*
  The data of bin/surrogate: a 2-D elliptic problem on the unit square, u = 0 on the boundary, n x n interior points
  (5-point finite differences), solved by KSP on a DMDA over any communicator.

    source       -div(k grad u) = f, k(x,y) = 1 + 0.5 sin(2 pi x) cos(2 pi y) fixed; input f (a random sine series)
    coefficient  -div(k grad u) = 1; input log k (a random sine series); k at a cell face is the mean of its two points

  Sample s's input field is a sine series with coefficients drawn from seed s alone, evaluated at each rank's points:
  the same field on any number of ranks and any decomposition. Point (i, j) lies at x = (i + 1)/(n + 1),
  y = (j + 1)/(n + 1); a rank's block is its DMDA block, x fastest.
*/
#pragma once

#include <petscdmda.h>
#include <petscksp.h>

typedef enum { SURROGATE_PROBLEM_SOURCE, SURROGATE_PROBLEM_COEFFICIENT } SurrogateProblemType;
extern const char *const SurrogateProblemTypes[];

typedef struct {
  SurrogateProblemType problem;
  PetscInt             n, K; /* interior points per direction; sine modes per direction */
  DM                   da;   /* n x n, dof 1, star stencil of width 1 */
  Mat                  A;
  KSP                  ksp;
  Vec                  b, u, logk; /* logk: the coefficient problem's input with its ghost points (a local Vec) */
} SurrogateSolver;

PetscErrorCode SurrogateSolverCreate(MPI_Comm, SurrogateProblemType, PetscInt, PetscInt, PCType, SurrogateSolver *);
PetscErrorCode SurrogateSolverSolve(SurrogateSolver *, PetscInt, PetscScalar[], PetscScalar[], PetscLogDouble *);
PetscErrorCode SurrogateSolverDestroy(SurrogateSolver *);
