static const char help[] = "A graph-network surrogate of a finite-element solve on an unstructured mesh: -div(k grad u) = f on the unit square\n"
                           "(or the domain of a Gmsh file), u = 0 on the boundary, P1 elements on a triangular DMPlex mesh distributed by PETSc's partitioner, k = exp(a)\n"
                           "and f = 1 + famp b with a, b random smooth fields (sample s from seed s). The nodes of the graph are the mesh\n"
                           "vertices, its operator G = D^-1/2 (Adj + I) D^-1/2 an MPIAIJ with the rows of the DM's global section. Node\n"
                           "features: log k, f, x, y and, for multiscale information, G^(4^j) log k and G^(4^j) (f/k) for j = 1..L. The Net's\n"
                           "output v gives u = scale w v, w = sin(pi x) sin(pi y) (a file: the torsion function, -lap w = 1, scaled to max 1) zero\n"
                           "on the boundary. Training: full batch of all training\n"
                           "samples at once (S copies of G side by side as one operator) by TAO (default lmvm).\n"
                           "Options: -mesh_faces N (default 16: 2 N^2 triangles before -dm_refine), -mesh_file F (a 2-D triangular Gmsh mesh, ASCII\n"
                           "  .msh 2.2 or 4.1, instead; e.g. share/meshes/lshape.msh), -mesh_train S (160), -mesh_test S (16),\n"
                           "  -mesh_modes K (4 cosine modes per direction), -mesh_sigma (0.5: std of log k), -mesh_f_amplitude (0.5),\n"
                           "  -mesh_multiscale L (4), -mesh_monitor N (print the loss every N iterations, 0: never), -mesh_layer sage|mpnn\n"
                           "  (the default Net's graph layers), -net_layers (default dense:32,tanh,L:32,tanh,L:32,tanh,L:32,tanh,dense:1\n"
                           "  with L that layer; mpnn layers pass messages on the mesh's edges with their geometry), -tao_* (default lmvm,\n"
                           "  600 iterations),\n"
                           "  -solve_ksp_* -solve_pc_* (default cg + BoomerAMG, rtol 1e-12), -petscpartitioner_type, -dm_refine, other -dm_ options.\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petsctao.h>
#include <petsctime.h>
#include "mesh_surrogate/mesh.h"

/* A set of S samples, stacked: [s][i] per rank (i the owned vertices in row order), features [s][i][channel] */
typedef struct {
  PetscInt     S;
  Mat          GS;      /* S copies of G */
  Vec          X, Y, T; /* features, the Net's output, target u / scale */
  PetscScalar *w;       /* [S m] sin(pi x) sin(pi y): u = scale w v */
} SampleSet;

typedef struct {
  Net       net;
  SampleSet train;
  Vec       R;
  PetscInt  N, monitor;
} Ctx;

/* f = |w Y - T|^2 / (2 S N), G = J_theta^T (w (w Y - T)) / (S N) */
static PetscErrorCode Objective(Tao tao, Vec theta, PetscReal *f, Vec G, void *ptr)
{
  Ctx               *ctx = (Ctx *)ptr;
  SampleSet         *set = &ctx->train;
  PetscScalar       *r;
  const PetscScalar *y, *t;
  PetscReal          sum = 0, n = (PetscReal)set->S * ctx->N;
  PetscInt           len;

  PetscFunctionBeginUser;
  PetscCall(NetSetParameters(ctx->net, theta));
  PetscCall(NetForward(ctx->net, set->X, set->Y));
  PetscCall(VecGetLocalSize(set->Y, &len));
  PetscCall(VecGetArrayRead(set->Y, &y));
  PetscCall(VecGetArrayRead(set->T, &t));
  PetscCall(VecGetArrayWrite(ctx->R, &r));
  for (PetscInt i = 0; i < len; i++) {
    PetscReal d = set->w[i] * y[i] - t[i];

    sum += d * d;
    r[i] = set->w[i] * d / n;
  }
  PetscCall(VecRestoreArrayWrite(ctx->R, &r));
  PetscCall(VecRestoreArrayRead(set->T, &t));
  PetscCall(VecRestoreArrayRead(set->Y, &y));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)tao)));
  *f = 0.5 * sum / n;
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(ctx->net, ctx->R, NULL, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode Monitor(Tao tao, void *ptr)
{
  Ctx      *ctx = (Ctx *)ptr;
  PetscInt  its;
  PetscReal f;

  PetscFunctionBeginUser;
  PetscCall(TaoGetSolutionStatus(tao, &its, &f, NULL, NULL, NULL, NULL));
  if (ctx->monitor > 0 && its % ctx->monitor == 0) PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tao), "iteration %4" PetscInt_FMT " loss %.6e\n", its, (double)f));
  PetscFunctionReturn(0);
}

/*
  The node features of the S samples of a set, x[s][i][c], from their inputs logk[s][i] and f[s][i]: channels log k,
  f, x, y, then G^(4^j) log k and G^(4^j) (f / k) for j = 1..L. The smoothings by the graph operator itself carry
  information 2^j edges away (a random walk of 4^j steps); f / k because -div(k grad u) = f is -lap u ~ f / k where k
  varies slowly, and the smoothings of f / k are the start of a multiscale inverse Laplacian. All S samples at once:
  MatMult of the stacked operator on the interlaced pair (log k, f / k).
*/
static PetscErrorCode Features(MeshProblem *mp, PetscInt L, SampleSet *set, const PetscScalar logk[], const PetscScalar f[], PetscScalar x[])
{
  const PetscInt C = 4 + 2 * L, m = mp->m, S = set->S;
  Mat            G2;
  Vec            v, gv;
  PetscScalar   *a;
  PetscInt       hops = 0;

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < S; s++)
    for (PetscInt i = 0; i < m; i++) {
      PetscScalar *xi = x + (s * m + i) * C;

      xi[0] = logk[s * m + i];
      xi[1] = f[s * m + i];
      xi[2] = mp->xy[2 * i];
      xi[3] = mp->xy[2 * i + 1];
    }
  if (L == 0) PetscFunctionReturn(0);
  PetscCall(MatCreateMAIJ(set->GS, 2, &G2));
  PetscCall(MatCreateVecs(G2, &v, &gv));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt k = 0; k < S * m; k++) {
    a[2 * k]     = logk[k];
    a[2 * k + 1] = f[k] * PetscExpReal(-PetscRealPart(logk[k]));
  }
  PetscCall(VecRestoreArrayWrite(v, &a));
  for (PetscInt j = 1; j <= L; j++) {
    for (; hops < 1 << (2 * j); hops++) {
      PetscCall(MatMult(G2, v, gv));
      PetscCall(VecSwap(v, gv));
    }
    PetscCall(VecGetArrayRead(v, (const PetscScalar **)&a));
    for (PetscInt k = 0; k < S * m; k++) {
      x[k * C + 2 + 2 * j]     = a[2 * k];
      x[k * C + 2 + 2 * j + 1] = a[2 * k + 1];
    }
    PetscCall(VecRestoreArrayRead(v, (const PetscScalar **)&a));
  }
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&gv));
  PetscCall(MatDestroy(&G2));
  PetscFunctionReturn(0);
}

/* The set's graph for the Net: the stacked operator for its graph layers (gcn, sage), the mesh for its mpnn layers
   (which take the S samples as S copies of the mesh's vertices, the same [s][i][channel] layout) */
static PetscErrorCode SampleSetUse(MeshProblem *mp, Net net, SampleSet *set)
{
  PetscInt nl;

  PetscFunctionBeginUser;
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt k = 0; k < nl; k++) {
    Layer layer;

    PetscCall(NetGetLayer(net, k, &layer));
    PetscCall(LayerGraphSetOperator(layer, set->GS)); /* each ignores a layer of another kind */
    PetscCall(LayerMeshSetDM(layer, mp->dm));
  }
  PetscFunctionReturn(0);
}

/* Draw samples first .. first + S - 1: solve each (solve time added to *tsolve) and build the stacked set; wv[m] the boundary weight */
static PetscErrorCode SampleSetCreate(MeshProblem *mp, Net net, PetscInt L, const PetscScalar wv[], PetscInt first, PetscInt S, SampleSet *set, Vec U, PetscLogDouble *tsolve)
{
  const PetscInt m = mp->m;
  PetscScalar   *x, *u, *logk, *f;
  PetscLogDouble t0, t1;

  PetscFunctionBeginUser;
  set->S = S;
  PetscCall(MeshStackOperator(mp->G, S, &set->GS));
  PetscCall(SampleSetUse(mp, net, set));
  PetscCall(NetCreateVecs(net, S * m, &set->X, &set->Y));
  PetscCall(VecDuplicate(set->Y, &set->T));
  PetscCall(PetscMalloc1(S * m, &set->w));
  PetscCall(PetscMalloc2(S * m, &logk, S * m, &f));
  PetscCall(VecGetArrayWrite(U, &u));
  for (PetscInt s = 0; s < S; s++) {
    PetscCallMPI(MPI_Barrier(PetscObjectComm((PetscObject)net)));
    PetscCall(PetscTime(&t0));
    PetscCall(MeshProblemSolve(mp, first + s, logk + s * m, f + s * m, u + s * m));
    PetscCall(PetscTime(&t1));
    *tsolve += t1 - t0;
    PetscCall(PetscArraycpy(set->w + s * m, wv, m));
  }
  PetscCall(VecRestoreArrayWrite(U, &u));
  PetscCall(VecGetArrayWrite(set->X, &x));
  PetscCall(Features(mp, L, set, logk, f, x));
  PetscCall(VecRestoreArrayWrite(set->X, &x));
  PetscCall(PetscFree2(logk, f));
  PetscFunctionReturn(0);
}

static PetscErrorCode SampleSetDestroy(SampleSet *set)
{
  PetscFunctionBeginUser;
  PetscCall(MatDestroy(&set->GS));
  PetscCall(VecDestroy(&set->X));
  PetscCall(VecDestroy(&set->Y));
  PetscCall(VecDestroy(&set->T));
  PetscCall(PetscFree(set->w));
  PetscFunctionReturn(0);
}

/* The mean over the set's samples of |u_net - u| / |u| (nodal l2 norms), u_net = scale w Y */
static PetscErrorCode RelativeError(MeshProblem *mp, SampleSet *set, Vec U, PetscReal scale, PetscReal *err)
{
  const PetscScalar *y, *u;
  PetscReal         *sums;

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc1(2 * set->S, &sums));
  PetscCall(VecGetArrayRead(set->Y, &y));
  PetscCall(VecGetArrayRead(U, &u));
  for (PetscInt s = 0; s < set->S; s++)
    for (PetscInt i = 0; i < mp->m; i++) {
      PetscInt  k = s * mp->m + i;
      PetscReal d = scale * set->w[k] * y[k] - u[k];

      sums[2 * s] += d * d;
      sums[2 * s + 1] += u[k] * u[k];
    }
  PetscCall(VecRestoreArrayRead(U, &u));
  PetscCall(VecRestoreArrayRead(set->Y, &y));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2 * set->S, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)U)));
  *err = 0;
  for (PetscInt s = 0; s < set->S; s++) *err += PetscSqrtReal(sums[2 * s] / sums[2 * s + 1]) / set->S;
  PetscCall(PetscFree(sums));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Ctx            ctx;
  MeshProblem    mp;
  SampleSet      test;
  Tao            tao;
  Vec            theta, Utrain, Utest, p;
  PetscInt       faces = 16, K = 4, L = 4, ntrain = 160, ntest = 16, its, P, nout, kind = 0;
  PetscReal      sigma = 0.5, famp = 0.5, scale, f0, f, errtrain, errtest;
  PetscLogDouble tsolve = 0, t0, t1, ttrain, tinfer;
  PetscBool      set;
  PetNetShape    in;
  PetscScalar   *wv;
  char           file[PETSC_MAX_PATH_LEN] = "";
  PetscMPIInt    size;
  MPI_Comm       comm;
  const char    *layerkinds[] = {"sage", "mpnn"};

  PetscFunctionBeginUser;
  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  ctx.monitor = 0;
  PetscOptionsBegin(comm, NULL, "Mesh surrogate options", NULL);
  PetscCall(PetNetOptionsInt("-mesh_faces", "Squares per side of the triangulation (2 triangles each) before -dm_refine", NULL, faces, &faces, NULL));
  PetscCall(PetscOptionsString("-mesh_file", "A 2-D triangular Gmsh mesh (ASCII .msh 2.2 or 4.1) instead of the built-in square", NULL, file, file, sizeof(file), NULL));
  PetscCall(PetNetOptionsInt("-mesh_train", "Training samples", NULL, ntrain, &ntrain, NULL));
  PetscCall(PetNetOptionsInt("-mesh_test", "Held-out samples", NULL, ntest, &ntest, NULL));
  PetscCall(PetNetOptionsInt("-mesh_modes", "Cosine modes per direction of the random fields", NULL, K, &K, NULL));
  PetscCall(PetscOptionsReal("-mesh_sigma", "Standard deviation of log k", NULL, sigma, &sigma, NULL));
  PetscCall(PetscOptionsReal("-mesh_f_amplitude", "Amplitude of the variation of f", NULL, famp, &famp, NULL));
  PetscCall(PetNetOptionsInt("-mesh_multiscale", "Multiscale levels L: features G^(4^j) log k, G^(4^j) (f/k), j = 1..L", NULL, L, &L, NULL));
  PetscCall(PetscOptionsEList("-mesh_layer", "Graph layer of the default Net: sage (on G) or mpnn (message passing on the mesh's edges)", NULL, layerkinds, 2, layerkinds[kind], &kind, NULL));
  PetscCall(PetNetOptionsInt("-mesh_monitor", "Print the training loss every N iterations (0: never)", NULL, ctx.monitor, &ctx.monitor, NULL));
  PetscOptionsEnd();
  PetscCheck(ntrain >= 1 && ntest >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_train %" PetscInt_FMT " and -mesh_test %" PetscInt_FMT " must both be at least 1", ntrain, ntest);
  PetscCheck(K >= 1 && K <= 16, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_modes %" PetscInt_FMT " must be in 1..16", K);
  PetscCheck(sigma >= 0 && famp >= 0 && famp < 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_sigma %g must be >= 0 and -mesh_f_amplitude %g in [0, 1)", (double)sigma, (double)famp);
  PetscCheck(L >= 0 && L <= 8, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_multiscale %" PetscInt_FMT " must be in 0..8 (level j smooths over 4^j hops)", L);

  PetscCall(MeshProblemCreate(comm, file, faces, K, sigma, famp, &mp));
  ctx.N = mp.N;
  PetscCall(PetscMalloc1(mp.m, &wv));
  PetscCall(MeshProblemBoundaryWeight(&mp, wv));

  /* The Net: a node is a sample with 4 + 2 L features; one output channel */
  PetscCall(NetCreate(comm, &ctx.net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  if (!set) PetscCall(PetscOptionsHasName(NULL, NULL, "-net_graph", &set));
  if (!set) PetscCall(NetSetLayers(ctx.net, kind ? "dense:32,tanh,mpnn:32,tanh,mpnn:32,tanh,mpnn:32,tanh,dense:1" : "dense:32,tanh,sage:32,tanh,sage:32,tanh,sage:32,tanh,dense:1"));
  in.ndim   = 1;
  in.dim[0] = 4 + 2 * L;
  PetscCall(NetSetInputShape(ctx.net, &in));
  PetscCall(NetSetFromOptions(ctx.net));
  PetscCall(NetGetNumParameters(ctx.net, &P));

  /* Data: training samples 0 .. ntrain - 1, held-out ntrain .. ntrain + ntest - 1 */
  PetscCall(VecCreateMPI(comm, ntrain * mp.m, PETSC_DETERMINE, &Utrain));
  PetscCall(VecCreateMPI(comm, ntest * mp.m, PETSC_DETERMINE, &Utest));
  PetscCall(SampleSetCreate(&mp, ctx.net, L, wv, ntrain, ntest, &test, Utest, &tsolve));
  PetscCall(SampleSetCreate(&mp, ctx.net, L, wv, 0, ntrain, &ctx.train, Utrain, &tsolve));
  PetscCall(VecGetSize(ctx.train.Y, &nout));
  PetscCheck(nout == ntrain * mp.N, comm, PETSC_ERR_ARG_WRONG, "The Net must give 1 feature per node (last layer dense:1, gcn:1, sage:1 or mpnn:1), not %" PetscInt_FMT, nout / (ntrain * mp.N));
  PetscCall(VecNorm(Utrain, NORM_2, &scale));
  scale /= PetscSqrtReal((PetscReal)ntrain * mp.N);
  PetscCall(VecCopy(Utrain, ctx.train.T));
  PetscCall(VecScale(ctx.train.T, 1 / scale));
  PetscCall(VecDuplicate(ctx.train.Y, &ctx.R));
  if (file[0]) PetscCall(PetscPrintf(comm, "mesh file %s: %" PetscInt_FMT " triangles\n", file, mp.ncells));
  PetscCall(PetscPrintf(comm, "mesh: %" PetscInt_FMT " vertices, %d ranks; samples: %" PetscInt_FMT " training, %" PetscInt_FMT " held out; rms u %.6e; features %" PetscInt_FMT "; parameters %" PetscInt_FMT "\n", mp.N, size, ntrain, ntest,
                        (double)scale, 4 + 2 * L, P));

  /* Full-batch training on the stacked training set */
  PetscCall(NetGetParameters(ctx.net, &p));
  PetscCall(VecDuplicate(p, &theta));
  PetscCall(VecCopy(p, theta));
  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOLMVM));
  PetscCall(TaoSetMaximumIterations(tao, 600));
  PetscCall(TaoSetMaximumFunctionEvaluations(tao, 100000));
  PetscCall(TaoSetTolerances(tao, 0, 0, 0));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, Objective, &ctx));
  if (ctx.monitor > 0) PetscCall(TaoSetMonitor(tao, Monitor, &ctx, NULL));
  PetscCall(TaoSetFromOptions(tao));
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t0));
  {
    Vec G;

    PetscCall(VecDuplicate(theta, &G));
    PetscCall(Objective(tao, theta, &f0, G, &ctx));
    PetscCall(VecDestroy(&G));
  }
  PetscCall(TaoSolve(tao));
  PetscCall(PetscTime(&t1));
  ttrain = t1 - t0;
  PetscCall(TaoGetSolutionStatus(tao, &its, &f, NULL, NULL, NULL, NULL));
  PetscCall(NetSetParameters(ctx.net, theta));
  PetscCall(NetForward(ctx.net, ctx.train.X, ctx.train.Y));
  PetscCall(RelativeError(&mp, &ctx.train, Utrain, scale, &errtrain));

  /* Held out: features from the inputs, then one forward pass over the stacked set */
  PetscCall(SampleSetUse(&mp, ctx.net, &test));
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t0));
  {
    PetscScalar *x, *logk, *fs;

    PetscCall(PetscMalloc2(ntest * mp.m, &logk, ntest * mp.m, &fs));
    for (PetscInt s = 0; s < ntest; s++) PetscCall(MeshProblemSolve(&mp, ntrain + s, logk + s * mp.m, fs + s * mp.m, NULL));
    PetscCall(VecGetArrayWrite(test.X, &x));
    PetscCall(Features(&mp, L, &test, logk, fs, x));
    PetscCall(VecRestoreArrayWrite(test.X, &x));
    PetscCall(PetscFree2(logk, fs));
  }
  PetscCall(NetForward(ctx.net, test.X, test.Y));
  PetscCall(PetscTime(&t1));
  tinfer = t1 - t0;
  PetscCall(RelativeError(&mp, &test, Utest, scale, &errtest));

  PetscCall(PetscPrintf(comm, "training: %" PetscInt_FMT " iterations, loss %.6e -> %.6e, relative error %.4e (training), %.4e (held out)\n", its, (double)f0, (double)f, (double)errtrain, (double)errtest));
  PetscCall(PetscPrintf(comm, "time: solve %.3f ms/sample (assembly + KSP), surrogate %.3f ms/sample (features + forward, %" PetscInt_FMT " samples at once), training %.2f s\n", 1e3 * tsolve / (ntrain + ntest), 1e3 * tinfer / ntest, ntest, ttrain));
  PetscCall(PetscPrintf(comm,
                        "summary: example=mesh_surrogate ranks=%d nodes=%" PetscInt_FMT " train=%" PetscInt_FMT " test=%" PetscInt_FMT " params=%" PetscInt_FMT " iterations=%" PetscInt_FMT
                        " loss=%.4e rel_error=%.4e rel_error_train=%.4e train_time_s=%.2f solve_time_ms=%.3f infer_time_ms=%.3f",
                        size, mp.N, ntrain, ntest, P, its, (double)f, (double)errtest, (double)errtrain, ttrain, 1e3 * tsolve / (ntrain + ntest), 1e3 * tinfer / ntest));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&theta));
  PetscCall(VecDestroy(&ctx.R));
  PetscCall(VecDestroy(&Utrain));
  PetscCall(VecDestroy(&Utest));
  PetscCall(SampleSetDestroy(&ctx.train));
  PetscCall(SampleSetDestroy(&test));
  PetscCall(NetDestroy(&ctx.net));
  PetscCall(PetscFree(wv));
  PetscCall(MeshProblemDestroy(&mp));
  PetscCall(PetscFinalize());
  return 0;
}
