#include "mesh.h"

/* The random series of sample s: a's and b's coefficients (K x K each) from seed s alone */
static PetscErrorCode SampleCoefficients(PetscInt K, PetscInt s, PetscReal ca[], PetscReal cb[])
{
  PetscRandom rnd;
  PetscReal   na = 0;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -PetscSqrtReal(3.0), PetscSqrtReal(3.0))); /* unit variance */
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)(1000003 * s + 17)));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt p = 0; p < K; p++)
    for (PetscInt q = 0; q < K; q++) {
      PetscReal w = 1.0 / (1 + p * p + q * q), xi;

      PetscCall(PetscRandomGetValueReal(rnd, &xi));
      ca[p * K + q] = w * xi;
      PetscCall(PetscRandomGetValueReal(rnd, &xi));
      cb[p * K + q] = w * xi;
      na += w * w * ((p ? 0.5 : 1.0) * (q ? 0.5 : 1.0)); /* the mean square of w cos(p pi x) cos(q pi y) */
    }
  for (PetscInt i = 0; i < K * K; i++) {
    ca[i] /= PetscSqrtReal(na);
    cb[i] /= PetscSqrtReal(na);
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

static PetscReal Series(PetscInt K, const PetscReal c[], PetscReal x, PetscReal y)
{
  PetscReal v = 0;

  for (PetscInt p = 0; p < K; p++)
    for (PetscInt q = 0; q < K; q++) v += c[p * K + q] * PetscCosReal(p * PETSC_PI * x) * PetscCosReal(q * PETSC_PI * y);
  return v;
}

/* P1 on the triangle (x0, x1, x2): Ke = k area grad phi_i . grad phi_j, returns the area */
static PetscReal ElementStiffness(const PetscScalar x[6], PetscReal k, PetscScalar Ke[9])
{
  const PetscReal det   = (x[2] - x[0]) * (x[5] - x[1]) - (x[4] - x[0]) * (x[3] - x[1]);
  const PetscReal gx[3] = {(x[3] - x[5]) / det, (x[5] - x[1]) / det, (x[1] - x[3]) / det};
  const PetscReal gy[3] = {(x[4] - x[2]) / det, (x[0] - x[4]) / det, (x[2] - x[0]) / det};
  const PetscReal area  = 0.5 * PetscAbsReal(det);

  for (PetscInt i = 0; i < 3; i++)
    for (PetscInt j = 0; j < 3; j++) Ke[i * 3 + j] = k * area * (gx[i] * gx[j] + gy[i] * gy[j]);
  return area;
}

/* Assemble K (and the load) for the series ca, cb; with G also the graph operator's pattern, every edge 1 */
static PetscErrorCode Assemble(MeshProblem *mp, const PetscReal ca[], const PetscReal cb[], Mat G)
{
  DM           cdm;
  Vec          coords;
  PetscSection csec;

  PetscFunctionBegin;
  PetscCall(DMGetCoordinateDM(mp->dm, &cdm));
  PetscCall(DMGetLocalSection(cdm, &csec));
  PetscCall(DMGetCoordinatesLocal(mp->dm, &coords));
  PetscCall(MatZeroEntries(mp->A));
  PetscCall(VecZeroEntries(mp->bl));
  for (PetscInt c = mp->cStart; c < mp->cEnd; c++) {
    PetscScalar *x    = NULL, Ke[9], fe[3], ones[9];
    PetscReal    kbar = 0, area;
    PetscInt     n;

    PetscCall(DMPlexVecGetClosure(cdm, csec, coords, c, &n, &x));
    PetscCheck(n == 6, PETSC_COMM_SELF, PETSC_ERR_SUP, "bin/mesh_surrogate needs a 2-D triangular mesh: cell %" PetscInt_FMT " has %" PetscInt_FMT " coordinates, not 6", c, n);
    for (PetscInt i = 0; i < 3; i++) kbar += PetscExpReal(mp->sigma * Series(mp->K, ca, x[2 * i], x[2 * i + 1])) / 3;
    area = ElementStiffness(x, kbar, Ke);
    for (PetscInt i = 0; i < 3; i++) fe[i] = area / 3 * (1 + mp->famp * Series(mp->K, cb, x[2 * i], x[2 * i + 1]));
    PetscCall(DMPlexVecRestoreClosure(cdm, csec, coords, c, &n, &x));
    PetscCall(DMPlexMatSetClosure(mp->dm, NULL, NULL, mp->A, c, Ke, ADD_VALUES));
    PetscCall(DMPlexVecSetClosure(mp->dm, NULL, mp->bl, c, fe, ADD_VALUES));
    if (G) {
      for (PetscInt i = 0; i < 9; i++) ones[i] = 1;
      PetscCall(DMPlexMatSetClosure(mp->dm, NULL, NULL, G, c, ones, INSERT_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(mp->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(mp->A, MAT_FINAL_ASSEMBLY));
  PetscCall(VecZeroEntries(mp->b));
  PetscCall(DMLocalToGlobal(mp->dm, mp->bl, ADD_VALUES, mp->b));
  PetscFunctionReturn(0);
}

/*
  An unstructured triangulation of the unit square on rank 0 (Debian's PETSc has no 2-D mesh generator, so no simplex
  DMPlexCreateBoxMesh()): an n x n grid of squares, each cut along a diagonal drawn at random, and the interior vertices
  moved at random by up to 0.3 h in each direction (seeded: the same mesh on every run). Vertex degrees range from 2 to 8.
*/
#define MESH_MAX_FACES 4096 /* 33.5 million triangles */

static PetscErrorCode CreateTriangulation(MPI_Comm comm, PetscInt n, DM *dm)
{
  PetscMPIInt rank;
  PetscInt    nv = 0, nc = 0, *cells = NULL;
  PetscReal  *xy = NULL;
  PetscRandom rnd;

  PetscFunctionBegin;
  /* rank 0 builds the whole triangulation before it is distributed: bound it (and its 3 x 2 n^2 cell entries) first */
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_faces %" PetscInt_FMT ": the triangulation needs at least 2 squares per side", n);
  PetscCheck(n <= MESH_MAX_FACES, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_faces %" PetscInt_FMT ": at most %d squares per side are built (on one rank, before distribution); refine further with -dm_refine", n, MESH_MAX_FACES);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    const PetscReal h = 1.0 / n;

    nv = (n + 1) * (n + 1);
    nc = 2 * n * n;
    PetscCall(PetscMalloc2(3 * nc, &cells, 2 * nv, &xy));
    PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -0.3 * h, 0.3 * h));
    PetscCall(PetscRandomSetSeed(rnd, 12345));
    PetscCall(PetscRandomSeed(rnd));
    for (PetscInt j = 0; j <= n; j++)
      for (PetscInt i = 0; i <= n; i++) {
        PetscReal dx, dy;

        PetscCall(PetscRandomGetValueReal(rnd, &dx));
        PetscCall(PetscRandomGetValueReal(rnd, &dy));
        xy[2 * (j * (n + 1) + i)]     = i * h + (i > 0 && i < n ? dx : 0);
        xy[2 * (j * (n + 1) + i) + 1] = j * h + (j > 0 && j < n ? dy : 0);
      }
    for (PetscInt j = 0; j < n; j++)
      for (PetscInt i = 0; i < n; i++) {
        const PetscInt v00 = j * (n + 1) + i, v10 = v00 + 1, v01 = v00 + n + 1, v11 = v01 + 1, c = 2 * (j * n + i);
        PetscReal      r;

        PetscCall(PetscRandomGetValueReal(rnd, &r));
        if (r > 0) { /* diagonal v00 - v11; counterclockwise triangles */
          PetscInt t[6] = {v00, v10, v11, v00, v11, v01};
          PetscCall(PetscArraycpy(cells + 3 * c, t, 6));
        } else { /* diagonal v10 - v01 */
          PetscInt t[6] = {v00, v10, v01, v10, v11, v01};
          PetscCall(PetscArraycpy(cells + 3 * c, t, 6));
        }
      }
    PetscCall(PetscRandomDestroy(&rnd));
  }
  PetscCall(DMPlexCreateFromCellListPetsc(comm, 2, nc, nv, 3, PETSC_TRUE, cells, 2, xy, dm));
  PetscCall(PetscFree2(cells, xy));
  PetscFunctionReturn(0);
}

/*
  The mesh (the triangulation above, distributed by PETSc's partitioner, then -dm_refine and the other -dm_ options), one dof per vertex, the stiffness pattern, the graph operator and the KSP (prefix -solve_; default cg
  with BoomerAMG, relative tolerance 1e-12 so that the data agree across rank counts to round-off)
*/
PetscErrorCode MeshProblemCreate(MPI_Comm comm, PetscInt faces, PetscInt K, PetscReal sigma, PetscReal famp, MeshProblem *mp)
{
  DM           dmdist;
  PetscSection sec, gsec;
  PetscInt     pStart, pEnd, nb = 0;
  Vec          d;
  PetscReal   *ca, *cb;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(mp, sizeof(*mp)));
  mp->K     = K;
  mp->sigma = sigma;
  mp->famp  = famp;
  PetscCall(CreateTriangulation(comm, faces, &mp->dm));
  PetscCall(DMPlexDistribute(mp->dm, 0, NULL, &dmdist));
  if (dmdist) {
    PetscCall(DMDestroy(&mp->dm));
    mp->dm = dmdist;
  }
  PetscCall(DMSetFromOptions(mp->dm));
  PetscCall(DMViewFromOptions(mp->dm, NULL, "-mesh_dm_view"));
  PetscCall(DMPlexGetDepthStratum(mp->dm, 0, &mp->vStart, &mp->vEnd));
  PetscCall(DMPlexGetHeightStratum(mp->dm, 0, &mp->cStart, &mp->cEnd));

  /* One dof per vertex; the global section numbers the owned vertices */
  PetscCall(DMPlexGetChart(mp->dm, &pStart, &pEnd));
  PetscCall(PetscSectionCreate(comm, &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) PetscCall(PetscSectionSetDof(sec, v, 1));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(mp->dm, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMGetGlobalSection(mp->dm, &gsec));
  PetscCall(DMCreateGlobalVector(mp->dm, &mp->b));
  PetscCall(DMCreateLocalVector(mp->dm, &mp->bl));
  PetscCall(VecDuplicate(mp->b, &mp->u));
  PetscCall(VecGetLocalSize(mp->b, &mp->m));
  PetscCall(VecGetSize(mp->b, &mp->N));
  PetscCall(VecGetOwnershipRange(mp->b, &mp->rstart, NULL));

  /* The owned vertices: their rows, coordinates, and which lie on the boundary */
  {
    DM                 cdm;
    PetscSection       csec;
    Vec                coords;
    const PetscScalar *x;

    PetscCall(DMGetCoordinateDM(mp->dm, &cdm));
    PetscCall(DMGetLocalSection(cdm, &csec));
    PetscCall(DMGetCoordinatesLocal(mp->dm, &coords));
    PetscCall(VecGetArrayRead(coords, &x));
    PetscCall(PetscMalloc2(2 * mp->m, &mp->xy, mp->m, &mp->bnd));
    for (PetscInt v = mp->vStart; v < mp->vEnd; v++) {
      PetscInt g, off;

      PetscCall(PetscSectionGetOffset(gsec, v, &g));
      if (g < 0) continue; /* a ghost */
      PetscCall(PetscSectionGetOffset(csec, v, &off));
      mp->xy[2 * (g - mp->rstart)]     = PetscRealPart(x[off]);
      mp->xy[2 * (g - mp->rstart) + 1] = PetscRealPart(x[off + 1]);
    }
    PetscCall(VecRestoreArrayRead(coords, &x));
    for (PetscInt i = 0; i < mp->m; i++) {
      const PetscReal px = mp->xy[2 * i], py = mp->xy[2 * i + 1], eps = 1e-10;

      if (px < eps || px > 1 - eps || py < eps || py > 1 - eps) mp->bnd[nb++] = mp->rstart + i;
    }
    mp->nbnd = nb;
  }

  /* The stiffness pattern (vertices sharing a triangle) and G on it, assembled once with k = 1 */
  PetscCall(DMCreateMatrix(mp->dm, &mp->A));
  PetscCall(MatSetOption(mp->A, MAT_KEEP_NONZERO_PATTERN, PETSC_TRUE));
  PetscCall(MatDuplicate(mp->A, MAT_DO_NOT_COPY_VALUES, &mp->G));
  PetscCall(PetscCalloc2(K * K, &ca, K * K, &cb));
  PetscCall(Assemble(mp, ca, cb, mp->G));
  PetscCall(PetscFree2(ca, cb));
  PetscCall(MatAssemblyBegin(mp->G, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(mp->G, MAT_FINAL_ASSEMBLY));
  PetscCall(VecDuplicate(mp->b, &d));
  PetscCall(MatGetRowSum(mp->G, d));
  PetscCall(VecSqrtAbs(d));
  PetscCall(VecReciprocal(d));
  PetscCall(MatDiagonalScale(mp->G, d, d));
  PetscCall(VecDestroy(&d));

  PetscCall(KSPCreate(comm, &mp->ksp));
  PetscCall(KSPSetOptionsPrefix(mp->ksp, "solve_"));
  PetscCall(KSPSetType(mp->ksp, KSPCG));
  PetscCall(KSPSetTolerances(mp->ksp, 1e-12, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
  {
    PC pc;

    PetscCall(KSPGetPC(mp->ksp, &pc));
    PetscCall(PCSetType(pc, PCHYPRE));
  }
  PetscCall(KSPSetFromOptions(mp->ksp));
  PetscFunctionReturn(0);
}

/*
  Sample s: assemble, impose u = 0 on the boundary (the rows and columns of the boundary vertices become the identity's,
  the load there 0), solve. Gives the owned vertices' log k, f and u in row order (any may be NULL).
*/
PetscErrorCode MeshProblemSolve(MeshProblem *mp, PetscInt s, PetscScalar logk[], PetscScalar f[], PetscScalar u[])
{
  PetscReal         *ca, *cb;
  KSPConvergedReason reason;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(mp->K * mp->K, &ca, mp->K * mp->K, &cb));
  PetscCall(SampleCoefficients(mp->K, s, ca, cb));
  for (PetscInt i = 0; i < mp->m; i++) {
    if (logk) logk[i] = mp->sigma * Series(mp->K, ca, mp->xy[2 * i], mp->xy[2 * i + 1]);
    if (f) f[i] = 1 + mp->famp * Series(mp->K, cb, mp->xy[2 * i], mp->xy[2 * i + 1]);
  }
  if (u) {
    const PetscScalar *a;

    PetscCall(Assemble(mp, ca, cb, NULL));
    PetscCall(VecZeroEntries(mp->u));
    PetscCall(MatZeroRowsColumns(mp->A, mp->nbnd, mp->bnd, 1.0, mp->u, mp->b));
    PetscCall(KSPSetOperators(mp->ksp, mp->A, mp->A));
    PetscCall(KSPSolve(mp->ksp, mp->b, mp->u));
    PetscCall(KSPGetConvergedReason(mp->ksp, &reason));
    PetscCheck(reason > 0, PetscObjectComm((PetscObject)mp->ksp), PETSC_ERR_NOT_CONVERGED, "The solve of sample %" PetscInt_FMT " did not converge (%s): change -solve_ksp_type or -solve_pc_type", s, KSPConvergedReasons[reason]);
    PetscCall(VecGetArrayRead(mp->u, &a));
    PetscCall(PetscArraycpy(u, a, mp->m));
    PetscCall(VecRestoreArrayRead(mp->u, &a));
  }
  PetscCall(PetscFree2(ca, cb));
  PetscFunctionReturn(0);
}

PetscErrorCode MeshProblemDestroy(MeshProblem *mp)
{
  PetscFunctionBegin;
  PetscCall(KSPDestroy(&mp->ksp));
  PetscCall(MatDestroy(&mp->A));
  PetscCall(MatDestroy(&mp->G));
  PetscCall(VecDestroy(&mp->b));
  PetscCall(VecDestroy(&mp->bl));
  PetscCall(VecDestroy(&mp->u));
  PetscCall(PetscFree2(mp->xy, mp->bnd));
  PetscCall(DMDestroy(&mp->dm));
  PetscFunctionReturn(0);
}

/*
  S copies of G side by side (the block diagonal I_S (x) G), laid out so that a rank's rows are its m rows of G for
  sample 0, then for sample 1, ...: row (s, i) of a rank whose G rows start at r0 is S r0 + s m + i. A Net's batch of
  S samples' nodes, [s][i][channel] on each rank, is then one full batch on this operator.
*/
PetscErrorCode MeshStackOperator(Mat G, PetscInt S, Mat *GS)
{
  const PetscInt *ranges;
  PetscInt        rs, re, m, *dnz, *onz;
  MPI_Comm        comm;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetComm((PetscObject)G, &comm));
  PetscCall(MatGetOwnershipRanges(G, &ranges));
  PetscCall(MatGetOwnershipRange(G, &rs, &re));
  m = re - rs;
  PetscCall(PetscMalloc2(S * m, &dnz, S * m, &onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt *cols;
    PetscInt        nc, nd = 0;

    PetscCall(MatGetRow(G, i, &nc, &cols, NULL));
    for (PetscInt k = 0; k < nc; k++) nd += cols[k] >= rs && cols[k] < re;
    for (PetscInt s = 0; s < S; s++) {
      dnz[s * m + i - rs] = nd;
      onz[s * m + i - rs] = nc - nd;
    }
    PetscCall(MatRestoreRow(G, i, &nc, &cols, NULL));
  }
  PetscCall(MatCreateAIJ(comm, S * m, S * m, PETSC_DETERMINE, PETSC_DETERMINE, 0, dnz, 0, onz, GS));
  PetscCall(PetscFree2(dnz, onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc, *scols;

    PetscCall(MatGetRow(G, i, &nc, &cols, &vals));
    PetscCall(PetscMalloc1(nc, &scols));
    for (PetscInt s = 0; s < S; s++) {
      PetscInt row = S * rs + s * m + i - rs;

      for (PetscInt k = 0; k < nc; k++) {
        PetscInt r = 0;

        while (cols[k] >= ranges[r + 1]) r++; /* the column's owner */
        scols[k] = S * ranges[r] + s * (ranges[r + 1] - ranges[r]) + cols[k] - ranges[r];
      }
      PetscCall(MatSetValues(*GS, 1, &row, nc, scols, vals, INSERT_VALUES));
    }
    PetscCall(PetscFree(scols));
    PetscCall(MatRestoreRow(G, i, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(*GS, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*GS, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}
