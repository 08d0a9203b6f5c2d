static const char help[] = "Graph layers on a DMPlex mesh do not depend on its partition: the mesh of bin/mesh_surrogate (examples/mesh_surrogate/\n"
                           "  mesh.c; default the Gmsh L-shape share/meshes/lshape.msh) is built and distributed twice, by two PETSc partitioners\n"
                           "  (-partitioners A,B; default simple,ptscotch), and one Net (-net_layers, default below) runs on the vertices' graph\n"
                           "  operator G = D^-1/2 (Adj + I) D^-1/2 of each. Node features and output cotangents are functions of the vertex\n"
                           "  coordinates, so both runs see the same data in different row orders. The outputs, input cotangents (vertex by\n"
                           "  vertex, matched by coordinates) and the parameter gradient must agree to 1e-12 relative; with more than one rank\n"
                           "  the two partitions must differ (else the test proves nothing). Prints a partition-independent digest: norms and\n"
                           "  the values at the first vertices in (x, y) order.\n"
                           "Options: -mesh_file F (\"\" for the built-in square of -mesh_faces N), -partitioners A,B, -net_layers.\n";

#include <petnet.h>
#include "../examples/mesh_surrogate/mesh.h"

#define DEFAULT_LAYERS "sage:4,tanh,gcn:3,tanh,sage:2"
#define C_IN           3

/* One run, gathered on rank 0 in (x, y) order: rec[N][nrec + 1] = x, y, Y[nout], dX[C_IN], the owning rank */
typedef struct {
  PetscInt   N, nrec;
  PetscReal *rec;
  Vec        G; /* the parameter gradient */
} Run;

/* qsort's order of two records: by x, then y */
static int CompareXY(const void *a, const void *b)
{
  const PetscReal *p = (const PetscReal *)a, *q = (const PetscReal *)b;

  if (p[0] != q[0]) return p[0] < q[0] ? -1 : 1;
  if (p[1] != q[1]) return p[1] < q[1] ? -1 : 1;
  return 0;
}

/* Features and cotangents: smooth functions of the coordinates */
static PetscScalar Feature(PetscReal x, PetscReal y, PetscInt c)
{
  return c == 0 ? PetscSinReal(3 * x + 1.7 * y) : c == 1 ? PetscCosReal(2 * x - y) * x : y * y - 0.3;
}
static PetscScalar Cotangent(PetscReal x, PetscReal y, PetscInt c)
{
  return PetscCosReal(4 * x + c) * PetscSinReal(2.5 * y + 0.5 * c);
}

static PetscErrorCode RunPartition(MPI_Comm comm, const char file[], PetscInt faces, const char partitioner[], Net net, PetscInt nout, Run *run)
{
  MeshProblem        mp;
  Vec                X, Y, dY, dX;
  PetscScalar       *x, *dy;
  const PetscScalar *y, *dx;
  PetscReal         *loc;
  PetscMPIInt        rank, size, *counts = NULL, *displs = NULL, nloc;
  const PetscInt     nr = 2 + nout + C_IN;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsSetValue(NULL, "-petscpartitioner_type", partitioner));
  PetscCall(MeshProblemCreate(comm, file, faces, 1, 0.0, 0.0, &mp));
  PetscCall(NetSetGraphOperator(net, mp.G));
  PetscCall(NetCreateVecs(net, mp.m, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(VecGetArrayWrite(X, &x));
  PetscCall(VecGetArrayWrite(dY, &dy));
  for (PetscInt i = 0; i < mp.m; i++) {
    for (PetscInt c = 0; c < C_IN; c++) x[i * C_IN + c] = Feature(mp.xy[2 * i], mp.xy[2 * i + 1], c);
    for (PetscInt c = 0; c < nout; c++) dy[i * nout + c] = Cotangent(mp.xy[2 * i], mp.xy[2 * i + 1], c);
  }
  PetscCall(VecRestoreArrayWrite(X, &x));
  PetscCall(VecRestoreArrayWrite(dY, &dy));
  PetscCall(NetCreateParameterVec(net, &run->G));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetBackward(net, dY, dX, run->G));

  /* records of the owned vertices, gathered and sorted by coordinates on rank 0 */
  PetscCall(PetscMalloc1(mp.m * (nr + 1), &loc));
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(dX, &dx));
  for (PetscInt i = 0; i < mp.m; i++) {
    PetscReal *r = loc + i * (nr + 1);

    r[0] = mp.xy[2 * i];
    r[1] = mp.xy[2 * i + 1];
    for (PetscInt c = 0; c < nout; c++) r[2 + c] = PetscRealPart(y[i * nout + c]);
    for (PetscInt c = 0; c < C_IN; c++) r[2 + nout + c] = PetscRealPart(dx[i * C_IN + c]);
    r[nr] = rank;
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(VecRestoreArrayRead(dX, &dx));
  run->N    = mp.N;
  run->nrec = nr;
  PetscCall(PetscMPIIntCast(mp.m * (nr + 1), &nloc));
  if (rank == 0) PetscCall(PetscMalloc2(size, &counts, size, &displs));
  if (rank == 0) PetscCall(PetscMalloc1(mp.N * (nr + 1), &run->rec));
  PetscCallMPI(MPI_Gather(&nloc, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
  if (rank == 0)
    for (PetscMPIInt r = 0; r < size; r++) displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
  PetscCallMPI(MPI_Gatherv(loc, nloc, MPIU_REAL, run->rec, counts, displs, MPIU_REAL, 0, comm));
  if (rank == 0) {
    qsort(run->rec, (size_t)mp.N, sizeof(PetscReal) * (size_t)(nr + 1), CompareXY);
    PetscCall(PetscFree2(counts, displs));
  }
  PetscCall(PetscFree(loc));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dX));
  PetscCall(MeshProblemDestroy(&mp));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm    comm;
  char        file[PETSC_MAX_PATH_LEN] = "share/meshes/lshape.msh", *parts[2] = {NULL, NULL};
  PetscInt    faces = 6, nparts = 2, nout;
  PetscBool   set;
  PetscMPIInt rank, size;
  Net         net;
  PetNetShape in, out;
  Run         run[2];
  PetscReal   dmax[2] = {0, 0}, amax[2] = {0, 0}, ng, dg, nrm[2] = {0, 0};
  PetscInt    moved = 0;

  PetscFunctionBeginUser;
  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-mesh_file", file, sizeof(file), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-mesh_faces", &faces, NULL));
  PetscCall(PetscOptionsGetStringArray(NULL, NULL, "-partitioners", parts, &nparts, &set));
  if (!set) {
    PetscCall(PetscStrallocpy("simple", &parts[0]));
    PetscCall(PetscStrallocpy("ptscotch", &parts[1]));
  } else
    PetscCheck(nparts == 2, comm, PETSC_ERR_ARG_WRONG, "-partitioners takes two partitioner types, e.g. simple,ptscotch");

  PetscCall(NetCreate(comm, &net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  if (!set) PetscCall(NetSetLayers(net, DEFAULT_LAYERS));
  in.ndim   = 1;
  in.dim[0] = C_IN;
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 11));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetOutputShape(net, &out));
  nout = out.dim[0];

  for (PetscInt k = 0; k < 2; k++) PetscCall(RunPartition(comm, file, faces, parts[k], net, nout, &run[k]));

  /* the parameter gradients (the same parameter layout in both runs) */
  PetscCall(VecNorm(run[0].G, NORM_2, &ng));
  PetscCall(VecAXPY(run[1].G, -1.0, run[0].G));
  PetscCall(VecNorm(run[1].G, NORM_2, &dg));
  if (rank == 0) {
    const PetscInt nr = run[0].nrec, st = nr + 1;

    for (PetscInt i = 0; i < run[0].N; i++) {
      const PetscReal *a = run[0].rec + i * st, *b = run[1].rec + i * st;

      PetscCheck(a[0] == b[0] && a[1] == b[1], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Vertex %" PetscInt_FMT " in (x, y) order is at (%g, %g) under %s but (%g, %g) under %s: the two meshes differ", i, (double)a[0], (double)a[1], parts[0], (double)b[0],
                 (double)b[1], parts[1]);
      for (PetscInt c = 2; c < nr; c++) {
        const PetscInt w = c < 2 + nout ? 0 : 1; /* outputs, input cotangents */

        dmax[w] = PetscMax(dmax[w], PetscAbsReal(a[c] - b[c]));
        amax[w] = PetscMax(amax[w], PetscAbsReal(a[c]));
        nrm[w] += a[c] * a[c];
      }
      moved += a[nr] != b[nr];
    }
  }
  PetscCallMPI(MPI_Bcast(dmax, 2, MPIU_REAL, 0, comm));
  PetscCallMPI(MPI_Bcast(amax, 2, MPIU_REAL, 0, comm));
  PetscCallMPI(MPI_Bcast(&moved, 1, MPIU_INT, 0, comm));
  PetscCall(PetscPrintf(comm, "mesh %s: %" PetscInt_FMT " vertices; partitioners %s and %s; Net %" PetscInt_FMT " -> %" PetscInt_FMT " channels per vertex\n", file[0] ? file : "(built-in square)", run[0].N, parts[0], parts[1], (PetscInt)C_IN, nout));
  PetscCall(PetscPrintf(comm, "digest: |Y| %.10e |dX| %.10e |dtheta| %.10e\n", (double)PetscSqrtReal(nrm[0]), (double)PetscSqrtReal(nrm[1]), (double)ng));
  if (rank == 0)
    for (PetscInt i = 0; i < 3; i++) {
      const PetscReal *a = run[0].rec + i * (run[0].nrec + 1);

      PetscCall(PetscPrintf(PETSC_COMM_SELF, "vertex (%.6f, %.6f): Y[0] %.10e dX[0] %.10e\n", (double)a[0], (double)a[1], (double)a[2], (double)a[2 + nout]));
    }
  PetscCheck(size == 1 || moved > 0, comm, PETSC_ERR_PLIB, "The partitioners %s and %s gave the same partition on %d ranks: the comparison proves nothing", parts[0], parts[1], size);
  PetscCheck(dmax[0] <= 1e-12 * amax[0] && dmax[1] <= 1e-12 * amax[1] && dg <= 1e-12 * ng, comm, PETSC_ERR_PLIB, "The two partitions give different results: outputs %g, input cotangents %g, parameter gradient %g (relative; bound 1e-12)",
             (double)(dmax[0] / amax[0]), (double)(dmax[1] / amax[1]), (double)(dg / ng));
  PetscCall(PetscPrintf(comm, "the two partitions agree to 1e-12 relative: outputs, input cotangents, parameter gradient\n"));

  for (PetscInt k = 0; k < 2; k++) {
    if (rank == 0) PetscCall(PetscFree(run[k].rec));
    PetscCall(VecDestroy(&run[k].G));
    PetscCall(PetscFree(parts[k]));
  }
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
