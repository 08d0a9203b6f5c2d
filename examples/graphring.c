static const char help[] = "A graph network on a user's sparse matrix: the nodes of a ring carry C features, A is the ring's normalised\n"
                           "adjacency with self loops (an MPIAIJ over the ranks, rows = nodes), and a Net of graph layers (default gcn:4,gcn:2)\n"
                           "learns the two-hop map T = A A X M (M a fixed C x 2 matrix) by full-batch L-BFGS (TAO lmvm) on the mean squared\n"
                           "error. Every rank holds its rows of A and the features of those nodes: the same numbers on any number of ranks.\n"
                           "Options: -nodes N (default 40), -channels C (default 3), -net_layers (default gcn:4,gcn:2), -tao_* (default lmvm,\n"
                           "  100 iterations, gradient norm 1e-9).\n";

#include <petnet.h>
#include <petsctao.h>

typedef struct {
  Net      net;
  Vec      X, Y, T, R; /* input features, output, target, residual */
  PetscInt N, nout;
} Ctx;

/* f = |Y - T|^2 / (2 N nout), G = J_theta^T (Y - T) / (N nout) */
static PetscErrorCode Objective(Tao tao, Vec theta, PetscReal *f, Vec G, void *ptr)
{
  Ctx      *ctx = (Ctx *)ptr;
  PetscReal nr;

  PetscFunctionBeginUser;
  PetscCall(NetSetParameters(ctx->net, theta)); /* TAO evaluates at points of its own (line search, -tao_test_gradient) */
  PetscCall(NetForward(ctx->net, ctx->X, ctx->Y));
  PetscCall(VecWAXPY(ctx->R, -1.0, ctx->T, ctx->Y));
  PetscCall(VecNorm(ctx->R, NORM_2, &nr));
  *f = 0.5 * nr * nr / (ctx->N * ctx->nout);
  PetscCall(VecScale(ctx->R, 1.0 / (ctx->N * ctx->nout)));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(ctx->net, ctx->R, NULL, G));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Ctx          ctx;
  Mat          A;
  Tao          tao;
  Vec          theta, AX;
  PetscInt     C = 3, rs, re, m, P, its;
  PetscScalar *x;
  PetscReal    f0, f;
  PetNetShape  in;
  PetscBool    set;
  MPI_Comm     comm;

  PetscFunctionBeginUser;
  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm  = PETSC_COMM_WORLD;
  ctx.N = 40;
  PetscCall(PetNetOptionsGetInt(NULL, NULL, "-nodes", &ctx.N, NULL));
  PetscCall(PetNetOptionsGetInt(NULL, NULL, "-channels", &C, NULL));
  PetscCheck(ctx.N >= 3 && C >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-nodes must be at least 3 and -channels at least 1");

  /* The ring's normalised adjacency with self loops, D^-1/2 (Adj + I) D^-1/2: 1/3 on the diagonal and both neighbours */
  PetscCall(MatCreateAIJ(comm, PETSC_DECIDE, PETSC_DECIDE, ctx.N, ctx.N, 3, NULL, 2, NULL, &A));
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  for (PetscInt i = rs; i < re; i++) {
    PetscInt    cols[3] = {(i + ctx.N - 1) % ctx.N, i, (i + 1) % ctx.N};
    PetscScalar v[3]    = {1.0 / 3, 1.0 / 3, 1.0 / 3};

    PetscCall(MatSetValues(A, 1, &i, 3, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

  /* A Net of graph layers on A: a sample is a node, so the local batch is A's local rows */
  PetscCall(NetCreate(comm, &ctx.net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  if (!set) PetscCall(NetSetLayers(ctx.net, "gcn:4,gcn:2"));
  in.ndim   = 1;
  in.dim[0] = C;
  PetscCall(NetSetInputShape(ctx.net, &in));
  PetscCall(NetSetFromOptions(ctx.net));
  PetscCall(NetSetGraphOperator(ctx.net, A));
  PetscCall(MatGetLocalSize(A, &m, NULL));
  PetscCall(NetCreateVecs(ctx.net, m, &ctx.X, &ctx.Y));
  PetscCall(VecGetSize(ctx.Y, &ctx.nout));
  ctx.nout /= ctx.N;
  PetscCheck(ctx.nout == 2, comm, PETSC_ERR_ARG_WRONG, "The Net must give 2 features per node (its last layer gcn:2 or sage:2), not %" PetscInt_FMT, ctx.nout);

  /* Features x[u][c] = sin(2 pi (c + 1) u / N + c); target T = A (A X) M with M[c][k] = (c + 1) (-1)^k / C */
  PetscCall(VecGetArrayWrite(ctx.X, &x));
  for (PetscInt u = rs; u < re; u++)
    for (PetscInt c = 0; c < C; c++) x[(u - rs) * C + c] = PetscSinReal(2 * PETSC_PI * (c + 1) * u / ctx.N + c);
  PetscCall(VecRestoreArrayWrite(ctx.X, &x));
  {
    Mat                A2;
    Vec                AAX;
    PetscScalar       *t;
    const PetscScalar *a;

    PetscCall(MatCreateMAIJ(A, C, &A2)); /* A on [node][channel] data, as the layers apply it */
    PetscCall(VecDuplicate(ctx.X, &AX));
    PetscCall(VecDuplicate(ctx.X, &AAX));
    PetscCall(MatMult(A2, ctx.X, AX));
    PetscCall(MatMult(A2, AX, AAX));
    PetscCall(VecDuplicate(ctx.Y, &ctx.T));
    PetscCall(VecGetArrayRead(AAX, &a));
    PetscCall(VecGetArrayWrite(ctx.T, &t));
    for (PetscInt u = 0; u < m; u++)
      for (PetscInt k = 0; k < 2; k++) {
        t[u * 2 + k] = 0;
        for (PetscInt c = 0; c < C; c++) t[u * 2 + k] += a[u * C + c] * (c + 1) * (k ? -1.0 : 1.0) / C;
      }
    PetscCall(VecRestoreArrayWrite(ctx.T, &t));
    PetscCall(VecRestoreArrayRead(AAX, &a));
    PetscCall(VecDestroy(&AX));
    PetscCall(VecDestroy(&AAX));
    PetscCall(MatDestroy(&A2));
  }
  PetscCall(VecDuplicate(ctx.Y, &ctx.R));

  /* Full-batch training: TAO optimises a copy of the Net's parameters, given back at each evaluation */
  PetscCall(NetGetParameters(ctx.net, &AX));
  PetscCall(VecDuplicate(AX, &theta));
  PetscCall(VecCopy(AX, theta));
  PetscCall(NetGetNumParameters(ctx.net, &P));
  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOLMVM));
  PetscCall(TaoSetMaximumIterations(tao, 100));
  PetscCall(TaoSetTolerances(tao, 1e-9, 0, 0));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, Objective, &ctx));
  PetscCall(TaoSetFromOptions(tao));
  {
    Vec G;

    PetscCall(VecDuplicate(theta, &G));
    PetscCall(Objective(tao, theta, &f0, G, &ctx));
    PetscCall(VecDestroy(&G));
  }
  PetscCall(TaoSolve(tao));
  PetscCall(TaoGetSolutionStatus(tao, &its, &f, NULL, NULL, NULL, NULL));
  PetscCall(PetscPrintf(comm, "summary: nodes=%" PetscInt_FMT " parameters=%" PetscInt_FMT " iterations=%" PetscInt_FMT " loss0=%.4e loss=%.3e", ctx.N, P, its, (double)f0, (double)f));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&theta));
  PetscCall(VecDestroy(&ctx.X));
  PetscCall(VecDestroy(&ctx.Y));
  PetscCall(VecDestroy(&ctx.T));
  PetscCall(VecDestroy(&ctx.R));
  PetscCall(NetDestroy(&ctx.net));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
