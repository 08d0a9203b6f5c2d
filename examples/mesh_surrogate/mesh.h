/*
  The data of bin/mesh_surrogate: -div(k grad u) = f on the unit square (built in) or on the 2-D domain of a Gmsh file
  (-mesh_file, e.g. share/meshes/lshape.msh), u = 0 on the whole boundary, on an unstructured triangular mesh (a DMPlex
  distributed by PETSc's partitioner), P1 finite elements assembled with DMPlex closures.

    k(x,y) = exp(a(x,y))     a = sigma * sum_{p,q<K} xi_pq cos(p pi x) cos(q pi y) / (1 + p^2 + q^2), normalised
    f(x,y) = 1 + famp * b(x,y)  b the same kind of series with its own coefficients
  The coefficients of sample s come from seed s alone and the fields are evaluated at the vertices' coordinates, so a
  sample is the same function on any number of ranks and any partition. On a triangle the stiffness uses the mean of
  k at its three vertices, the load is lumped (f at a vertex times a third of the area).

  A node is a mesh vertex. The owned vertices are numbered as the DM's global section numbers them (rows rstart ..
  rstart + m - 1 of every Mat and Vec here), so the stiffness K, the graph operator G and the node features share one
  row layout. G = D^-1/2 (Adj + I) D^-1/2, Adj the vertices' edges, D its row sums.
*/
#pragma once

#include <petscdmplex.h>
#include <petscksp.h>

typedef struct {
  DM         dm;
  PetscInt   vStart, vEnd, cStart, cEnd;
  PetscInt   m, N, rstart;                    /* owned vertices, all vertices, first global row */
  PetscInt   ncells;                          /* all triangles (no overlap: each on one rank) */
  PetscReal *xy;                              /* [m][2]: coordinates of the owned vertices, in row order */
  PetscInt   nbnd, *bnd;                      /* the owned boundary vertices' global rows */
  PetscBool *onbnd;                           /* [m]: owned vertex i on the boundary */
  PetscBool  fromfile;                        /* read from a Gmsh file (else the built-in square) */
  char       where[PETSC_MAX_PATH_LEN + 128]; /* "bin/mesh_hybrid -mesh_file F" or "... the built-in mesh (-mesh_faces N)": for messages */
  PetscInt   K;                               /* modes per direction of the random fields */
  PetscReal  sigma, famp;                     /* standard deviation of log k; amplitude of f's variation */
  Mat        A, G;                            /* stiffness with the boundary rows and columns replaced by the identity; graph operator */
  Vec        b, u, bl;                        /* load, solution (global), load (local) */
  KSP        ksp;
} MeshProblem;

PetscErrorCode MeshProblemCreate(MPI_Comm, const char[], PetscInt, PetscInt, PetscReal, PetscReal, MeshProblem *);
PetscErrorCode MeshProblemBoundaryWeight(MeshProblem *, PetscScalar[]);
PetscErrorCode MeshProblemSolve(MeshProblem *, PetscInt, PetscScalar[], PetscScalar[], PetscScalar[]);
PetscErrorCode MeshProblemDestroy(MeshProblem *);
PetscErrorCode MeshStackOperator(Mat, PetscInt, Mat *);
