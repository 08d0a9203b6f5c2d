static const char help[] = "The mesh message-passing layer (mpnn) on a DMPlex: a perturbed n x n triangulation of the unit square (vertices\n"
                           "  moved by up to 0.3 h, diagonals varying), built on rank 0 and distributed by PETSc's partitioner. The Net\n"
                           "  (-net_layers, default below) runs on several distributions of the same mesh (the simple partitioner, PTScotch, a\n"
                           "  shifted shell partition with the last rank empty) and on a renumbering of its vertices; its output, input\n"
                           "  cotangent, parameter gradient, JVP and second-order adjoint (input part and Hessian-vector product) must equal\n"
                           "  those of the same Net on one rank with the whole mesh (to <= 1e-12 relative), compared in the natural vertex\n"
                           "  order (a vertex is known by its grid position). Then NetTestJacobian (dot products <= 1e-12, finite differences\n"
                           "  <= 1e-6) and central differences of the backward pass against the second-order adjoint (<= 1e-6).\n"
                           "Options: -faces n (default 5), -channels C (default 3), -copies S (a batch of S copies of the mesh, each its own\n"
                           "  data: [copy][vertex][channel] on each rank), -chunk k (the Net over all ranks passes k messages per GEMM,\n"
                           "  the reference 512), -error nodm|size|coords|sf|comm|dim|interp (stop with that\n"
                           "  error).\n";

#include <petnet.h>
#include <petscdmplex.h>
#include <petscsf.h>
#include "testutil.h"

#define DEFAULT_LAYERS "mpnn:5:hidden=4,tanh,dense:3,mpnn:2"

typedef struct {
  PetscInt n, N, C, S; /* squares per side, vertices, input channels, copies of the mesh in a batch */
  PetscInt off;        /* the first copy's number: its data are those of copy off of a larger batch */
} Mesh;

static PetscInt GCD(PetscInt a, PetscInt b)
{
  while (b) {
    PetscInt t = a % b;

    a = b;
    b = t;
  }
  return a;
}

/* Deterministic tables, the same on every rank count: which = 0 input, 1 output cotangent, 2 input tangent */
static PetscScalar Table(PetscInt u, PetscInt c, PetscInt which)
{
  return PetscSinReal(0.37 * u + 1.1 * c + 0.7 * which + 0.1) + 0.25 * PetscCosReal(1.3 * u * (which + 1) + 0.5 * c);
}

/*
  The triangulation on rank 0 of comm (all of it, not distributed): grid vertex u = j (n + 1) + i is the mesh's vertex
  perm[u] (perm NULL: u), at (i h, j h) moved by up to 0.3 h inside; interpolated (edges), with coordinates
*/
static PetscErrorCode CreateMesh(MPI_Comm comm, const Mesh *g, const PetscInt perm[], PetscBool interpolate, DM *dm)
{
  PetscMPIInt rank;
  PetscInt    nv = 0, nc = 0, n = g->n, *cells = NULL;
  PetscReal  *xy = NULL;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    const PetscReal h = 1.0 / n;

    nv = g->N;
    nc = 2 * n * n;
    PetscCall(PetscMalloc2(3 * nc, &cells, 2 * nv, &xy));
    for (PetscInt j = 0; j <= n; j++)
      for (PetscInt i = 0; i <= n; i++) {
        PetscInt u = j * (n + 1) + i, l = perm ? perm[u] : u;

        xy[2 * l]     = i * h + (i > 0 && i < n ? 0.3 * h * PetscSinReal(1.7 * u + 0.3) : 0);
        xy[2 * l + 1] = j * h + (j > 0 && j < n ? 0.3 * h * PetscCosReal(2.3 * u + 1.0) : 0);
      }
    for (PetscInt j = 0; j < n; j++)
      for (PetscInt i = 0; i < n; i++) {
        PetscInt v00 = j * (n + 1) + i, v10 = v00 + 1, v01 = v00 + n + 1, v11 = v01 + 1, c = 2 * (j * n + i);
        PetscInt t[2][6] = {{v00, v10, v11, v00, v11, v01}, {v00, v10, v01, v10, v11, v01}};

        for (PetscInt k = 0; k < 6; k++) cells[3 * c + k] = perm ? perm[t[(i + 2 * j) % 3 == 0][k]] : t[(i + 2 * j) % 3 == 0][k];
      }
  }
  PetscCall(DMPlexCreateFromCellListPetsc(comm, 2, nc, nv, 3, interpolate, cells, 2, xy, dm));
  PetscCall(PetscFree2(cells, xy));
  PetscFunctionReturn(0);
}

/* Distribute dm: partitioner simple, ptscotch, or shell (cells shifted by a third, the last rank empty) */
static PetscErrorCode Distribute(const Mesh *g, const char type[], DM *dm)
{
  PetscPartitioner part;
  DM               dist;
  PetscBool        shell;
  PetscMPIInt      size, rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)*dm), &size));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)*dm), &rank));
  PetscCall(DMPlexGetPartitioner(*dm, &part));
  PetscCall(PetscPartitionerSetType(part, type));
  PetscCall(PetscStrcmp(type, PETSCPARTITIONERSHELL, &shell));
  if (shell) {
    PetscInt nc = rank ? 0 : 2 * g->n * g->n, *sizes, *points, parts = size > 1 ? size - 1 : 1;

    PetscCall(PetscCalloc2(size, &sizes, nc, &points));
    for (PetscInt r = 0; r < parts && nc; r++) sizes[r] = nc / parts + (r < nc % parts);
    for (PetscInt c = 0; c < nc; c++) points[c] = (c + nc / 3) % nc;
    PetscCall(PetscPartitionerShellSetPartition(part, size, sizes, points));
    PetscCall(PetscFree2(sizes, points));
  }
  PetscCall(DMPlexDistribute(*dm, 0, NULL, &dist));
  if (dist) {
    PetscCall(DMDestroy(dm));
    *dm = dist;
  }
  PetscFunctionReturn(0);
}

/*
  The natural (grid) number of each owned vertex, in the DM's global order, for each of the S copies of the mesh in
  a batch: key[s m + i] = s N + (grid number of owned vertex i); *m = S (owned vertices)
*/
static PetscErrorCode VertexKeys(DM dm, const Mesh *g, PetscInt *m, PetscInt **key)
{
  DM                 dmc;
  PetscSection       sec, gsec, csec;
  PetscInt           pStart, pEnd, vStart, vEnd, rstart;
  Vec                v, coords;
  const PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(DMClone(dm, &dmc));
  PetscCall(DMPlexGetChart(dm, &pStart, &pEnd));
  PetscCall(DMPlexGetDepthStratum(dm, 0, &vStart, &vEnd));
  PetscCall(PetscSectionCreate(PetscObjectComm((PetscObject)dm), &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt p = vStart; p < vEnd; p++) PetscCall(PetscSectionSetDof(sec, p, 1));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(dmc, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMGetGlobalSection(dmc, &gsec));
  PetscCall(DMCreateGlobalVector(dmc, &v));
  PetscCall(VecGetLocalSize(v, m));
  PetscCall(VecGetOwnershipRange(v, &rstart, NULL));
  PetscCall(PetscMalloc1(g->S * *m, key));
  PetscCall(DMGetCoordinateSection(dm, &csec));
  PetscCall(DMGetCoordinatesLocal(dm, &coords));
  PetscCall(VecGetArrayRead(coords, &x));
  for (PetscInt p = vStart; p < vEnd; p++) {
    PetscInt off, coff;

    PetscCall(PetscSectionGetOffset(gsec, p, &off));
    if (off < 0) continue;
    PetscCall(PetscSectionGetOffset(csec, p, &coff));
    (*key)[off - rstart] = (PetscInt)PetscFloorReal(PetscRealPart(x[coff + 1]) * g->n + 0.5) * (g->n + 1) + (PetscInt)PetscFloorReal(PetscRealPart(x[coff]) * g->n + 0.5);
  }
  PetscCall(VecRestoreArrayRead(coords, &x));
  for (PetscInt s = 1; s < g->S; s++)
    for (PetscInt i = 0; i < *m; i++) (*key)[s * *m + i] = s * g->N + (*key)[i];
  for (PetscInt i = 0; i < *m; i++) (*key)[i] += g->off * g->N;
  *m *= g->S;
  PetscCall(VecDestroy(&v));
  PetscCall(DMDestroy(&dmc));
  PetscFunctionReturn(0);
}

/* v [local samples][dof] = Table(key, c, which) */
static PetscErrorCode FillNodes(Vec v, PetscInt dof, const PetscInt key[], PetscInt which)
{
  PetscScalar *a;
  PetscInt     n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < n / dof; i++)
    for (PetscInt c = 0; c < dof; c++) a[i * dof + c] = Table(key[i], c, which);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* d[0] = max |v - ref| over v's samples (ref [N][dof] in natural order), d[1] = max |ref| */
static PetscErrorCode CompareNodes(Vec v, PetscInt dof, const PetscInt key[], const PetscScalar *ref, PetscReal d[2])
{
  const PetscScalar *a;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = 0; i < n / dof; i++)
    for (PetscInt c = 0; c < dof; c++) {
      d[0] = PetscMax(d[0], PetscAbsScalar(a[i * dof + c] - ref[key[i] * dof + c]));
      d[1] = PetscMax(d[1], PetscAbsScalar(ref[key[i] * dof + c]));
    }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

typedef enum { R_Y, R_DX, R_G, R_JVP, R_DXDOT, R_HV, R_NUM } Result;
static const char *const ResultNames[] = {"output", "input cotangent", "parameter gradient", "JVP", "second-order input cotangent", "Hessian-vector product"};

typedef struct {
  Vec       X, Y, dY, dX, G, dXdir, dthdir, Yj, dXdot, Hv;
  PetscInt *key;
} Run;

/* Runs the Net on mesh dm and fills run's Vecs */
static PetscErrorCode RunNet(Net net, DM dm, const Mesh *g, PetscInt P, Run *run)
{
  PetscInt    m, nout;
  PetNetShape out;

  PetscFunctionBegin;
  PetscCall(NetGetOutputShape(net, &out));
  nout = out.dim[0];
  PetscCall(VertexKeys(dm, g, &m, &run->key));
  PetscCall(NetSetMeshDM(net, dm));
  PetscCall(NetCreateVecs(net, m, &run->X, &run->Y));
  PetscCall(VecDuplicate(run->Y, &run->dY));
  PetscCall(VecDuplicate(run->Y, &run->Yj));
  PetscCall(VecDuplicate(run->X, &run->dX));
  PetscCall(VecDuplicate(run->X, &run->dXdir));
  PetscCall(VecDuplicate(run->X, &run->dXdot));
  PetscCall(NetCreateParameterVec(net, &run->G));
  PetscCall(NetCreateParameterVec(net, &run->Hv));
  PetscCall(TestParameterDirection(net, P, &run->dthdir));
  PetscCall(FillNodes(run->X, g->C, run->key, 0));
  PetscCall(FillNodes(run->dY, nout, run->key, 1));
  PetscCall(FillNodes(run->dXdir, g->C, run->key, 2));
  PetscCall(NetForward(net, run->X, run->Y));
  PetscCall(VecZeroEntries(run->G));
  PetscCall(NetBackward(net, run->dY, run->dX, run->G));
  PetscCall(NetJVP(net, run->dXdir, run->dthdir, run->Yj));
  PetscCall(VecZeroEntries(run->Hv));
  PetscCall(NetSecondOrderBackward(net, run->dY, NULL, run->dXdot, run->Hv));
  PetscFunctionReturn(0);
}

static PetscErrorCode DestroyRun(Run *run)
{
  Vec *v = (Vec *)run;

  PetscFunctionBegin;
  for (size_t i = 0; i < 10; i++) PetscCall(VecDestroy(&v[i]));
  PetscCall(PetscFree(run->key));
  PetscFunctionReturn(0);
}

/* The results of one run in natural vertex order, whole, on every rank (the reference; the caller frees) */
static PetscErrorCode GatherNatural(Vec v, PetscInt dof, const PetscInt key[], PetscInt N, PetscScalar **all)
{
  const PetscScalar *a;
  PetscInt           n;
  PetscScalar       *loc;

  PetscFunctionBegin;
  PetscCall(PetscCalloc1(N * dof, &loc));
  PetscCall(PetscMalloc1(N * dof, all));
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = 0; i < n / dof; i++)
    for (PetscInt c = 0; c < dof; c++) loc[key[i] * dof + c] = a[i * dof + c];
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscCall(MPIU_Allreduce(loc, *all, (PetscMPIInt)(N * dof), MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)v)));
  PetscCall(PetscFree(loc));
  PetscFunctionReturn(0);
}

static PetscErrorCode GatherAll(Vec v, PetscScalar **all)
{
  VecScatter         sc;
  Vec                w;
  const PetscScalar *a;
  PetscInt           N;

  PetscFunctionBegin;
  PetscCall(VecScatterCreateToAll(v, &sc, &w));
  PetscCall(VecScatterBegin(sc, v, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, v, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetSize(w, &N));
  PetscCall(PetscMalloc1(N, all));
  PetscCall(VecGetArrayRead(w, &a));
  PetscCall(PetscArraycpy(*all, a, N));
  PetscCall(VecRestoreArrayRead(w, &a));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

static PetscErrorCode CompareRun(MPI_Comm comm, const char what[], const Mesh *g, PetscInt nout, Run *run, PetscScalar *ref[])
{
  PetscReal d[2 * R_NUM] = {0}, all[2 * R_NUM];

  PetscFunctionBegin;
  PetscCall(CompareNodes(run->Y, nout, run->key, ref[R_Y], d + 2 * R_Y));
  PetscCall(CompareNodes(run->dX, g->C, run->key, ref[R_DX], d + 2 * R_DX));
  PetscCall(TestCompareOwned(run->G, ref[R_G], d + 2 * R_G));
  PetscCall(CompareNodes(run->Yj, nout, run->key, ref[R_JVP], d + 2 * R_JVP));
  PetscCall(CompareNodes(run->dXdot, g->C, run->key, ref[R_DXDOT], d + 2 * R_DXDOT));
  PetscCall(TestCompareOwned(run->Hv, ref[R_HV], d + 2 * R_HV));
  PetscCall(MPIU_Allreduce(d, all, 2 * R_NUM, MPIU_REAL, MPIU_MAX, comm));
  for (PetscInt r = 0; r < R_NUM; r++) {
    PetscReal rel = all[2 * r] / PetscMax(all[2 * r + 1], 1e-300);

    PetscCheck(all[2 * r + 1] > 0 && rel <= 1e-12, comm, PETSC_ERR_PLIB, "%s: the %s differs from the one-rank reference by %g relative (max |ref| %g)", what, ResultNames[r], (double)rel, (double)all[2 * r + 1]);
  }
  PetscCall(PetscPrintf(comm, "%-60s agrees with the reference to <= 1e-12 (output, cotangents, gradient, JVP, second order)\n", what));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreateNet(MPI_Comm comm, const Mesh *g, Net *net)
{
  PetNetShape in = {1, {g->C}};
  PetscBool   set;

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  if (!set) PetscCall(NetSetLayers(*net, DEFAULT_LAYERS));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetFromOptions(*net));
  PetscFunctionReturn(0);
}

/* Each -error case stops with the error a user would see */
static PetscErrorCode RunError(const char error[], const Mesh *g)
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  Net         net;
  DM          dm;
  Vec         X, Y;
  PetscInt    m, *key;
  PetscMPIInt rank, size;
  PetscBool   is;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscStrcmp(error, "dim", &is));
  if (is) PetscCall(PetscOptionsSetValue(NULL, "-net_layers", "mpnn:4:dim=3"));
  PetscCall(CreateNet(comm, g, &net));
  PetscCall(NetSetUp(net)); /* the layers set up without a mesh: it is needed only to apply them */
  PetscCall(PetscStrcmp(error, "interp", &is));
  PetscCall(CreateMesh(comm, g, NULL, (PetscBool)!is, &dm));
  PetscCall(Distribute(g, PETSCPARTITIONERSIMPLE, &dm));
  if (is) PetscCall(NetSetMeshDM(net, dm)); /* a mesh without edges */
  PetscCall(PetscStrcmp(error, "comm", &is));
  if (is) { /* each rank's own whole mesh: no ghost exchange between the ranks */
    DM self;

    PetscCall(CreateMesh(PETSC_COMM_SELF, g, NULL, PETSC_TRUE, &self));
    PetscCall(NetSetMeshDM(net, self));
  }
  PetscCall(PetscStrcmp(error, "sf", &is));
  if (is) { /* a clone of the distributed mesh whose point SF has no graph */
    DM      c;
    PetscSF sf;

    PetscCall(DMClone(dm, &c));
    PetscCall(PetscSFCreate(comm, &sf));
    PetscCall(DMSetPointSF(c, sf));
    PetscCall(NetSetMeshDM(net, c));
  }
  PetscCall(PetscStrcmp(error, "coords", &is));
  if (is) { /* the same topology without coordinates */
    DM       c;
    PetscInt dim;

    PetscCall(DMGetDimension(dm, &dim));
    PetscCall(DMPlexCreate(comm, &c));
    PetscCall(DMSetDimension(c, dim));
    PetscCall(NetSetMeshDM(net, c));
  }
  PetscCall(PetscStrcmp(error, "nodm", &is));
  if (!is) PetscCall(NetSetMeshDM(net, dm));
  PetscCall(VertexKeys(dm, g, &m, &key));
  PetscCall(PetscStrcmp(error, "size", &is));
  if (is) m += (rank == 0) - (rank == size - 1) + (size == 1);
  PetscCall(NetCreateVecs(net, m, &X, &Y));
  PetscCall(NetForward(net, X, Y));
  SETERRQ(comm, PETSC_ERR_PLIB, "-error %s: no error was raised", error);
}

int main(int argc, char **argv)
{
  MPI_Comm     comm;
  Mesh         g = {5, 36, 3, 1, 0};
  PetscInt     P, nout, *perm, a = 7, chunk;
  PetscScalar *ref[R_NUM];
  char         error[64] = "";
  PetscBool    flg;
  PetscMPIInt  size;
  Net          net, seq;
  DM           dm;
  Run          run;
  PetNetShape  out;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-faces", &g.n, NULL));
  g.N = (g.n + 1) * (g.n + 1);
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-channels", &g.C, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-copies", &g.S, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), &flg));
  if (flg) PetscCall(RunError(error, &g));

  /* The reference: the Net on each rank alone, with the whole mesh, one copy at a time (the gradients of a batch of
     copies are the sums of theirs) */
  PetscCall(CreateNet(PETSC_COMM_SELF, &g, &seq));
  PetscCall(NetGetNumParameters(seq, &P));
  PetscCall(TestSetParameters(seq, P));
  PetscCall(NetGetOutputShape(seq, &out));
  nout = out.dim[0];
  PetscCall(CreateMesh(PETSC_COMM_SELF, &g, NULL, PETSC_TRUE, &dm));
  for (PetscInt s = 0; s < g.S; s++) {
    Mesh         gs = g;
    PetscScalar *one[R_NUM];
    PetscInt     len[R_NUM] = {g.S * g.N * nout, g.S * g.N * g.C, P, g.S * g.N * nout, g.S * g.N * g.C, P};

    gs.S   = 1;
    gs.off = s;
    PetscCall(RunNet(seq, dm, &gs, P, &run));
    PetscCall(GatherNatural(run.Y, nout, run.key, g.S * g.N, &one[R_Y]));
    PetscCall(GatherNatural(run.dX, g.C, run.key, g.S * g.N, &one[R_DX]));
    PetscCall(GatherAll(run.G, &one[R_G]));
    PetscCall(GatherNatural(run.Yj, nout, run.key, g.S * g.N, &one[R_JVP]));
    PetscCall(GatherNatural(run.dXdot, g.C, run.key, g.S * g.N, &one[R_DXDOT]));
    PetscCall(GatherAll(run.Hv, &one[R_HV]));
    for (PetscInt r = 0; r < R_NUM; r++) {
      if (!s) PetscCall(PetscCalloc1(len[r], &ref[r]));
      for (PetscInt i = 0; i < len[r]; i++) ref[r][i] += one[r][i];
      PetscCall(PetscFree(one[r]));
    }
    PetscCall(DestroyRun(&run));
  }
  PetscCall(DMDestroy(&dm));
  PetscCall(NetDestroy(&seq));

  /* The Net over all ranks on three distributions of the mesh and on renumbered vertices; one Net (a new mesh keeps
     the parameters) */
  while (GCD(a, g.N) != 1) a++; /* u -> a u + 3 mod N is then a bijection */
  PetscCall(PetscMalloc1(g.N, &perm));
  for (PetscInt u = 0; u < g.N; u++) perm[u] = (a * u + 3) % g.N;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-chunk", &chunk, &flg));
  if (flg) { /* the Net over all ranks cuts its edge loops into chunks of that many messages (the reference: 512) */
    char opt[64], val[32];

    PetscCall(PetscSNPrintf(val, sizeof(val), "%" PetscInt_FMT, chunk));
    for (PetscInt k = 0; k < 8; k++) {
      PetscCall(PetscSNPrintf(opt, sizeof(opt), "-layer%" PetscInt_FMT "_mpnn_chunk", k));
      PetscCall(PetscOptionsSetValue(NULL, opt, val));
    }
  }
  PetscCall(CreateNet(comm, &g, &net));
  PetscCall(TestSetParameters(net, P));
  for (PetscInt mode = 0; mode < 4; mode++) {
    const char *types[] = {PETSCPARTITIONERSIMPLE, PETSCPARTITIONERPTSCOTCH, PETSCPARTITIONERSHELL, PETSCPARTITIONERSIMPLE};
    const char *names[] = {"simple partitioner", "PTScotch partitioner", "shifted shell partition, last rank empty", "renumbered vertices"};
    char        what[128];

    PetscCall(CreateMesh(comm, &g, mode == 3 ? perm : NULL, PETSC_TRUE, &dm));
    PetscCall(Distribute(&g, types[mode], &dm));
    PetscCall(RunNet(net, dm, &g, P, &run));
    {
      PetscInt m[2], mm[2];

      PetscCall(VecGetLocalSize(run.X, &m[0]));
      m[0] /= g.C * g.S;
      m[1] = -m[0];
      PetscCall(MPIU_Allreduce(m, mm, 2, MPIU_INT, MPI_MIN, comm));
      PetscCall(PetscSNPrintf(what, sizeof(what), "%d rank(s), %s (%" PetscInt_FMT "..%" PetscInt_FMT " vertices a rank)", size, names[mode], mm[0], -mm[1]));
    }
    PetscCall(CompareRun(comm, what, &g, nout, &run, ref));
    if (mode == 0) { /* derivative checks: every Jacobian shell, finite differences, the second-order adjoint */
      PetscReal   doterr, fderr, errx = 1, errp = 1;
      PetscViewer quiet;

      PetscCall(PetscViewerASCIIOpen(comm, "/dev/null", &quiet));
      PetscCall(NetTestJacobian(net, run.X, quiet, &doterr, &fderr));
      PetscCall(PetscViewerDestroy(&quiet));
      PetscCheck(doterr <= 1e-12 && fderr <= 1e-6, comm, PETSC_ERR_PLIB, "NetTestJacobian: dot-product error %g (<= 1e-12), finite differences %g (<= 1e-6)", (double)doterr, (double)fderr);
      PetscCall(PetscPrintf(comm, "NetTestJacobian (Net and every layer): dot products <= 1e-12, finite differences <= 1e-6\n"));
      PetscCall(CheckSecondOrderFD(net, run.X, run.dXdir, run.dthdir, run.dY, run.dXdot, run.Hv, run.G, &errx, &errp));
      PetscCheck(errx <= 1e-6 && errp <= 1e-6, comm, PETSC_ERR_PLIB, "second-order adjoint against differences of the backward pass: input part %g, Hessian-vector product %g (<= 1e-6)", (double)errx, (double)errp);
      PetscCall(PetscPrintf(comm, "second-order adjoint: central differences of the backward pass agree to <= 1e-6\n"));
    }
    PetscCall(DestroyRun(&run));
    PetscCall(DMDestroy(&dm));
  }
  PetscCall(PetscFree(perm));
  for (PetscInt r = 0; r < R_NUM; r++) PetscCall(PetscFree(ref[r]));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
