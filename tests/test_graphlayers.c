static const char help[] = "Graph layers (gcn, sage) on a distributed sparse operator: a W x H grid graph with asymmetric weights (so that a\n"
                           "  missing transpose shows), assembled as MATMPIAIJ over the ranks. The Net (-net_layers, default below) is run on\n"
                           "  several row partitionings of the same graph (even, uneven, reversed, one rank empty) and on a renumbering of its\n"
                           "  nodes; its output, input cotangent, parameter gradient, JVP and second-order adjoint (input part and Hessian-vector\n"
                           "  product) must equal those of the same Net on one rank with a MATSEQAIJ (to <= 1e-12 relative), the renumbered run\n"
                           "  permuted alike. Then NetTestJacobian (dot products <= 1e-12, finite differences <= 1e-6) and central differences\n"
                           "  of the backward pass against the second-order adjoint (<= 1e-6).\n"
                           "Options: -grid W,H (default 6,5), -channels C (default 3), -copies k (also run k copies of every node, [node][copy],\n"
                           "  against one copy on A (x) I_k), -error nooperator|size|count|copies|type|changed|square (stop with\n"
                           "  that error).\n";

#include <petnet.h>
#include "testutil.h"

#define DEFAULT_LAYERS "sage:5,tanh,gcn:4,dense:3,gcn:2:bias=0"

typedef struct {
  PetscInt W, H, N, C; /* grid, nodes, input channels */
} Graph;

/* The weight of the edge u -> v (row u, column v): asymmetric, self loops included */
static PetscScalar Weight(PetscInt u, PetscInt v)
{
  return u == v ? 0.5 : 0.15 + 0.05 * ((3 * u + 7 * v) % 5);
}

/* Deterministic tables, the same on every rank count: which = 0 input, 1 output cotangent, 2 input tangent */
static PetscScalar Table(PetscInt u, PetscInt c, PetscInt which)
{
  return PetscSinReal(0.37 * u + 1.1 * c + 0.7 * which + 0.1) + 0.25 * PetscCosReal(1.3 * u * (which + 1) + 0.5 * c);
}

static PetscInt GCD(PetscInt a, PetscInt b)
{
  while (b) {
    PetscInt t = a % b;

    a = b;
    b = t;
  }
  return a;
}

/* Local rows of each rank for a partition: 0 even (PETSC_DECIDE), 1 uneven (1, 2, 3, ...), 2 reversed, 3 the last rank empty */
static PetscErrorCode LocalRows(MPI_Comm comm, PetscInt N, PetscInt mode, PetscInt *m)
{
  PetscMPIInt size, rank;
  PetscInt    w = 0, left = N;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (mode == 0 || size == 1) {
    *m = PETSC_DECIDE;
    PetscCall(PetscSplitOwnership(comm, m, &N));
    PetscFunctionReturn(0);
  }
  if (mode == 3) {
    *m = rank == size - 1 ? 0 : N / (size - 1) + (rank < N % (size - 1));
    PetscFunctionReturn(0);
  }
  for (PetscMPIInt r = 0; r < size; r++) w += r + 1;
  for (PetscMPIInt r = 0; r < size; r++) {
    PetscInt share = mode == 1 ? r + 1 : size - r, mr = r == size - 1 ? left : PetscMax(1, (N * share) / w);

    left -= mr;
    if (r == rank) *m = mr;
  }
  PetscFunctionReturn(0);
}

/*
  The grid graph's operator with m local rows; perm (or NULL) renumbers the nodes: node u is row perm[u]. pinv[r] is the
  node of row r (NULL: r itself).
*/
static PetscErrorCode BuildOperator(MPI_Comm comm, const Graph *g, PetscInt m, const PetscInt perm[], const PetscInt pinv[], Mat *A)
{
  PetscInt rs, re;

  PetscFunctionBegin;
  PetscCall(MatCreateAIJ(comm, m, m, g->N, g->N, 5, NULL, 4, NULL, A));
  PetscCall(MatGetOwnershipRange(*A, &rs, &re));
  for (PetscInt r = rs; r < re; r++) {
    PetscInt    u = pinv ? pinv[r] : r, i = u % g->W, j = u / g->W, nb[5], cols[5], k = 0;
    PetscScalar vals[5];

    nb[k++] = u;
    if (i > 0) nb[k++] = u - 1;
    if (i < g->W - 1) nb[k++] = u + 1;
    if (j > 0) nb[k++] = u - g->W;
    if (j < g->H - 1) nb[k++] = u + g->W;
    for (PetscInt e = 0; e < k; e++) {
      cols[e] = perm ? perm[nb[e]] : nb[e];
      vals[e] = Weight(u, nb[e]);
    }
    PetscCall(MatSetValues(*A, 1, &r, k, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* v [local rows][dof] = Table(node of the row, c, which) */
static PetscErrorCode FillNodes(Vec v, PetscInt rs, PetscInt dof, const PetscInt pinv[], PetscInt which)
{
  PetscScalar *a;
  PetscInt     n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < n / dof; i++)
    for (PetscInt c = 0; c < dof; c++) a[i * dof + c] = Table(pinv ? pinv[rs + i] : rs + i, c, which);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* d[0] = max |v - ref| over v's rows (ref [N][dof] in node order), d[1] = max |ref| */
static PetscErrorCode CompareNodes(Vec v, PetscInt rs, PetscInt dof, const PetscInt pinv[], const PetscScalar *ref, PetscReal d[2])
{
  const PetscScalar *a;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = 0; i < n / dof; i++)
    for (PetscInt c = 0; c < dof; c++) {
      PetscInt u = pinv ? pinv[rs + i] : rs + i;

      d[0] = PetscMax(d[0], PetscAbsScalar(a[i * dof + c] - ref[u * dof + c]));
      d[1] = PetscMax(d[1], PetscAbsScalar(ref[u * dof + c]));
    }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

/* What a run computes: forward, backward, JVP along (input tangent, parameter direction), second-order adjoint */
typedef enum { R_Y, R_DX, R_G, R_JVP, R_DXDOT, R_HV, R_NUM } Result;
static const char *const ResultNames[] = {"output", "input cotangent", "parameter gradient", "JVP", "second-order input cotangent", "Hessian-vector product"};

typedef struct {
  Vec X, Y, dY, dX, G, dXdir, dthdir, Yj, dXdot, Hv;
} Run;

/* Runs the Net on operator A (node of row r: pinv[r]), k copies of each node ([node][copy]: sample k r + s gets the
   tables' row k r + s), and fills run's Vecs */
static PetscErrorCode RunNet(Net net, Mat A, const Graph *g, PetscInt P, const PetscInt pinv[], PetscInt k, Run *run)
{
  PetscInt    m, rs, re, nout;
  PetNetShape out;

  PetscFunctionBegin;
  PetscCall(NetGetOutputShape(net, &out));
  nout = out.dim[0];
  PetscCall(MatGetLocalSize(A, &m, NULL));
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  PetscCall(NetSetGraphOperator(net, A));
  PetscCall(NetCreateVecs(net, k * m, &run->X, &run->Y));
  PetscCall(VecDuplicate(run->Y, &run->dY));
  PetscCall(VecDuplicate(run->Y, &run->Yj));
  PetscCall(VecDuplicate(run->X, &run->dX));
  PetscCall(VecDuplicate(run->X, &run->dXdir));
  PetscCall(VecDuplicate(run->X, &run->dXdot));
  PetscCall(NetCreateParameterVec(net, &run->G));
  PetscCall(NetCreateParameterVec(net, &run->Hv));
  PetscCall(TestParameterDirection(net, P, &run->dthdir));
  PetscCall(FillNodes(run->X, k * rs, g->C, pinv, 0));
  PetscCall(FillNodes(run->dY, k * rs, nout, pinv, 1));
  PetscCall(FillNodes(run->dXdir, k * rs, g->C, pinv, 2));
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
  for (size_t i = 0; i < sizeof(*run) / sizeof(Vec); i++) PetscCall(VecDestroy(&v[i]));
  PetscFunctionReturn(0);
}

/* Ak = A (x) I_k: row k r + s holds row r of A on the columns k c + s */
static PetscErrorCode KronIdentity(Mat A, PetscInt k, Mat *Ak)
{
  PetscInt m, M, rs, re;

  PetscFunctionBegin;
  PetscCall(MatGetLocalSize(A, &m, NULL));
  PetscCall(MatGetSize(A, &M, NULL));
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  PetscCall(MatCreateAIJ(PetscObjectComm((PetscObject)A), k * m, k * m, k * M, k * M, 5, NULL, 4, NULL, Ak));
  for (PetscInt r = rs; r < re; r++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc, kc[5];

    PetscCall(MatGetRow(A, r, &nc, &cols, &vals));
    for (PetscInt s = 0; s < k; s++) {
      PetscInt row = k * r + s;

      for (PetscInt e = 0; e < nc; e++) kc[e] = k * cols[e] + s;
      PetscCall(MatSetValues(*Ak, 1, &row, nc, kc, vals, INSERT_VALUES));
    }
    PetscCall(MatRestoreRow(A, r, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(*Ak, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*Ak, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* k copies of every node on A against one copy on A (x) I_k: every result of the runs equal to <= 1e-13 relative */
static PetscErrorCode CompareCopies(MPI_Comm comm, Net net, const Graph *g, PetscInt P, PetscInt k)
{
  Mat       A, Ak;
  Run       rk, r1;
  PetscInt  mloc;
  PetscReal worst = 0;

  PetscFunctionBegin;
  PetscCall(LocalRows(comm, g->N, 1, &mloc));
  PetscCall(BuildOperator(comm, g, mloc, NULL, NULL, &A));
  PetscCall(KronIdentity(A, k, &Ak));
  PetscCall(RunNet(net, Ak, g, P, NULL, 1, &r1));
  PetscCall(RunNet(net, A, g, P, NULL, k, &rk));
  for (size_t i = 0; i < sizeof(rk) / sizeof(Vec); i++) {
    Vec       a = ((Vec *)&rk)[i], b = ((Vec *)&r1)[i];
    PetscReal nd, nb;

    PetscCall(VecAXPY(a, -1.0, b));
    PetscCall(VecNorm(a, NORM_INFINITY, &nd));
    PetscCall(VecNorm(b, NORM_INFINITY, &nb));
    worst = PetscMax(worst, nd / PetscMax(nb, PETSC_SMALL));
  }
  PetscCheck(worst <= 1e-13, comm, PETSC_ERR_PLIB, "%" PetscInt_FMT " copies of each node on A differ from A (x) I_k by %g (> 1e-13)", k, (double)worst);
  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT " copies of each node ([node][copy]) equal one copy on A (x) I_k: all results to <= 1e-13\n", k));
  { /* and the Jacobian shells with copies (the input rebuilt: the comparison above overwrote rk's Vecs) */
    PetscReal   doterr, fderr;
    PetscViewer quiet;

    PetscCall(DestroyRun(&rk));
    PetscCall(RunNet(net, A, g, P, NULL, k, &rk));
    PetscCall(PetscViewerASCIIOpen(comm, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, rk.X, quiet, &doterr, &fderr));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(doterr <= 1e-12 && fderr <= 1e-6, comm, PETSC_ERR_PLIB, "NetTestJacobian with %" PetscInt_FMT " copies: dot-product error %g (<= 1e-12), finite differences %g (<= 1e-6)", k, (double)doterr, (double)fderr);
    PetscCall(PetscPrintf(comm, "NetTestJacobian with %" PetscInt_FMT " copies of each node: dot products <= 1e-12, finite differences <= 1e-6\n", k));
  }
  PetscCall(DestroyRun(&rk));
  PetscCall(DestroyRun(&r1));
  PetscCall(MatDestroy(&Ak));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* The worst relative difference of a parallel run from the reference (ref: each result in full, node order) */
static PetscErrorCode CompareRun(MPI_Comm comm, const char what[], Mat A, const Graph *g, PetscInt nout, const PetscInt pinv[], Run *run, PetscScalar *ref[])
{
  PetscReal d[2 * R_NUM] = {0}, all[2 * R_NUM];
  PetscInt  rs, re;

  PetscFunctionBegin;
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  PetscCall(CompareNodes(run->Y, rs, nout, pinv, ref[R_Y], d + 2 * R_Y));
  PetscCall(CompareNodes(run->dX, rs, g->C, pinv, ref[R_DX], d + 2 * R_DX));
  PetscCall(TestCompareOwned(run->G, ref[R_G], d + 2 * R_G));
  PetscCall(CompareNodes(run->Yj, rs, nout, pinv, ref[R_JVP], d + 2 * R_JVP));
  PetscCall(CompareNodes(run->dXdot, rs, g->C, pinv, ref[R_DXDOT], d + 2 * R_DXDOT));
  PetscCall(TestCompareOwned(run->Hv, ref[R_HV], d + 2 * R_HV));
  PetscCall(MPIU_Allreduce(d, all, 2 * R_NUM, MPIU_REAL, MPIU_MAX, comm));
  for (PetscInt r = 0; r < R_NUM; r++) {
    PetscReal rel = all[2 * r] / PetscMax(all[2 * r + 1], 1e-300);

    PetscCheck(all[2 * r + 1] > 0 && rel <= 1e-12, comm, PETSC_ERR_PLIB, "%s: the %s differs from the one-rank MATSEQAIJ reference by %g relative (max |ref| %g)", what, ResultNames[r], (double)rel, (double)all[2 * r + 1]);
  }
  PetscCall(PetscPrintf(comm, "%-34s agrees with the reference to <= 1e-12 (output, cotangents, gradient, JVP, second order)\n", what));
  PetscFunctionReturn(0);
}

/* The whole of a Vec on every rank (a copy the caller frees) */
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

static PetscErrorCode CreateNet(MPI_Comm comm, const Graph *g, Net *net)
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
static PetscErrorCode RunError(const char error[], const Graph *g)
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  Net         net;
  Mat         A;
  Vec         X, Y;
  PetscInt    m;
  PetscMPIInt rank, size;
  PetscBool   is;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(CreateNet(comm, g, &net));
  PetscCall(NetSetUp(net)); /* the layers set up without an operator: it is needed only to apply them */
  PetscCall(LocalRows(comm, g->N, 0, &m));
  PetscCall(BuildOperator(comm, g, m, NULL, NULL, &A));
  PetscCall(PetscStrcmp(error, "type", &is));
  if (is) { /* a dense matrix: refused by LayerGraphSetOperator() */
    Mat D;

    PetscCall(MatConvert(A, MATDENSE, MAT_INITIAL_MATRIX, &D));
    PetscCall(NetSetGraphOperator(net, D));
  }
  PetscCall(PetscStrcmp(error, "square", &is));
  if (is) { /* rows and columns split differently */
    Mat B;

    PetscCall(MatCreateAIJ(comm, rank == 0 ? m + 1 : m - (rank == 1), m, PETSC_DETERMINE, g->N, 1, NULL, 1, NULL, &B));
    PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
    PetscCall(NetSetGraphOperator(net, B));
  }
  PetscCall(PetscStrcmp(error, "nooperator", &is));
  if (!is) PetscCall(NetSetGraphOperator(net, A));
  PetscCall(PetscStrcmp(error, "size", &is));
  /* size: a batch that is not A's rows (rank 0 one node more, the last rank one less: the same global count on 2+ ranks) */
  if (is) m += (rank == 0) - (rank == size - 1) + (size == 1);
  PetscCall(PetscStrcmp(error, "count", &is));
  if (is) m += rank == 0; /* count: one node more in all than A has */
  PetscCall(PetscStrcmp(error, "copies", &is));
  if (is) m *= rank == 0 ? 2 : 3; /* copies: 2 copies of each node on rank 0, 3 on the others */
  PetscCall(NetCreateVecs(net, m, &X, &Y));
  PetscCall(FillNodes(X, 0, g->C, NULL, 0));
  PetscCall(NetForward(net, X, Y));
  PetscCall(PetscStrcmp(error, "changed", &is));
  if (is) { /* the simulation changes A between the forward pass and the derivatives */
    PetscCall(MatScale(A, 2.0));
    PetscCall(NetBackward(net, Y, X, NULL));
  }
  SETERRQ(comm, PETSC_ERR_PLIB, "-error %s: no error was raised", error);
}

int main(int argc, char **argv)
{
  MPI_Comm     comm;
  Graph        g       = {6, 5, 30, 3};
  PetscInt     dims[2] = {6, 5}, nd = 2, P, nout, mloc, *perm, *pinv, a = 7, copies = 1;
  PetscScalar *ref[R_NUM];
  char         error[64] = "";
  PetscBool    flg;
  PetscMPIInt  size;
  Net          net, seq;
  Mat          A;
  Run          run;
  PetNetShape  out;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-grid", dims, &nd, &flg));
  g.W = dims[0];
  g.H = !flg || nd > 1 ? dims[1] : 1;
  g.N = g.W * g.H;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-channels", &g.C, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-copies", &copies, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), &flg));
  if (flg) PetscCall(RunError(error, &g));

  /* The reference: the Net on each rank alone, the whole graph as a MATSEQAIJ */
  PetscCall(CreateNet(PETSC_COMM_SELF, &g, &seq));
  PetscCall(NetGetNumParameters(seq, &P));
  PetscCall(TestSetParameters(seq, P));
  PetscCall(BuildOperator(PETSC_COMM_SELF, &g, g.N, NULL, NULL, &A));
  PetscCall(RunNet(seq, A, &g, P, NULL, 1, &run));
  PetscCall(GatherAll(run.Y, &ref[R_Y]));
  PetscCall(GatherAll(run.dX, &ref[R_DX]));
  PetscCall(GatherAll(run.G, &ref[R_G]));
  PetscCall(GatherAll(run.Yj, &ref[R_JVP]));
  PetscCall(GatherAll(run.dXdot, &ref[R_DXDOT]));
  PetscCall(GatherAll(run.Hv, &ref[R_HV]));
  PetscCall(DestroyRun(&run));
  PetscCall(MatDestroy(&A));
  PetscCall(NetDestroy(&seq));

  /* The Net over all ranks: four row partitions of the graph, one Net (new operators keep the parameters) */
  PetscCall(CreateNet(comm, &g, &net));
  PetscCall(TestSetParameters(net, P));
  PetscCall(NetGetOutputShape(net, &out));
  nout = out.dim[0];
  for (PetscInt mode = 0; mode < 4; mode++) {
    const char *names[] = {"even rows", "uneven rows", "reversed uneven rows", "last rank without nodes"};
    char        what[64];

    if (mode == 3 && size == 1) continue;
    PetscCall(LocalRows(comm, g.N, mode, &mloc));
    PetscCall(BuildOperator(comm, &g, mloc, NULL, NULL, &A));
    PetscCall(RunNet(net, A, &g, P, NULL, 1, &run));
    PetscCall(PetscSNPrintf(what, sizeof(what), "%d rank(s), %s", size, names[mode]));
    PetscCall(CompareRun(comm, what, A, &g, nout, NULL, &run, ref));
    PetscCall(DestroyRun(&run));
    PetscCall(MatDestroy(&A));
  }

  /* Permutation equivariance: node u renumbered perm[u] = (a u + 3) mod N; the outputs move with their nodes */
  while (GCD(a, g.N) != 1) a++;
  PetscCall(PetscMalloc2(g.N, &perm, g.N, &pinv));
  for (PetscInt u = 0; u < g.N; u++) {
    perm[u]       = (a * u + 3) % g.N;
    pinv[perm[u]] = u;
  }
  PetscCall(LocalRows(comm, g.N, 1, &mloc));
  PetscCall(BuildOperator(comm, &g, mloc, perm, pinv, &A));
  PetscCall(RunNet(net, A, &g, P, pinv, 1, &run));
  PetscCall(CompareRun(comm, "renumbered nodes", A, &g, nout, pinv, &run, ref));
  PetscCall(DestroyRun(&run));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFree2(perm, pinv));

  /* Derivative checks on the even partition: every Jacobian shell, finite differences, the second-order adjoint */
  {
    PetscReal   doterr, fderr, errx = 1, errp = 1;
    PetscViewer quiet;

    PetscCall(LocalRows(comm, g.N, 0, &mloc));
    PetscCall(BuildOperator(comm, &g, mloc, NULL, NULL, &A));
    PetscCall(RunNet(net, A, &g, P, NULL, 1, &run));
    PetscCall(PetscViewerASCIIOpen(comm, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, run.X, quiet, &doterr, &fderr));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(doterr <= 1e-12 && fderr <= 1e-6, comm, PETSC_ERR_PLIB, "NetTestJacobian: dot-product error %g (<= 1e-12), finite differences %g (<= 1e-6)", (double)doterr, (double)fderr);
    PetscCall(PetscPrintf(comm, "NetTestJacobian (Net and every layer): dot products <= 1e-12, finite differences <= 1e-6\n"));
    PetscCall(CheckSecondOrderFD(net, run.X, run.dXdir, run.dthdir, run.dY, run.dXdot, run.Hv, run.G, &errx, &errp));
    PetscCheck(errx <= 1e-6 && errp <= 1e-6, comm, PETSC_ERR_PLIB, "second-order adjoint against differences of the backward pass: input part %g, Hessian-vector product %g (<= 1e-6)", (double)errx, (double)errp);
    PetscCall(PetscPrintf(comm, "second-order adjoint: central differences of the backward pass agree to <= 1e-6\n"));
    PetscCall(DestroyRun(&run));
    PetscCall(MatDestroy(&A));
  }
  if (copies > 1) PetscCall(CompareCopies(comm, net, &g, P, copies));
  for (PetscInt r = 0; r < R_NUM; r++) PetscCall(PetscFree(ref[r]));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
