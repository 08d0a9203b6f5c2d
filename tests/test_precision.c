static const char help[] = "A Net at -net_precision single or bfloat16 against the same Net in double (NetSetPrecision()).\n"
                           "  default          forward Y, input cotangent dX and parameter gradient G on -nsamples samples, each\n"
                           "                   within 10 L u of double (u the unit round-off of the values, L the layers), and the\n"
                           "                   norms of the low-precision Y and G printed (the same at any rank count to round-off); and the\n"
                           "                   fused backward passes (relu -> maxpool, netfuse.c) the same bits as separate ones (-net_fuse false)\n"
                           "  -case secondorder | layerjacobian   what needs double values, refused\n";

#include <petnet.h>

static PetscErrorCode RelDiff(Vec a, Vec b, PetscReal *err)
{
  Vec       d;
  PetscReal nb, nd;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(a, &d));
  PetscCall(VecWAXPY(d, -1.0, b, a));
  PetscCall(VecNorm(d, NORM_2, &nd));
  PetscCall(VecNorm(b, NORM_2, &nb));
  *err = nd / PetscMax(nb, PETSC_SMALL);
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

/* v_i = sin(a i + b) at the global index i: the same values at any rank count */
static PetscErrorCode FillGlobal(Vec v, PetscReal a, PetscReal b)
{
  PetscInt     rstart, rend;
  PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &x));
  for (PetscInt i = rstart; i < rend; i++) x[i - rstart] = PetscSinReal(a * i + b);
  PetscCall(VecRestoreArrayWrite(v, &x));
  PetscFunctionReturn(0);
}

/* Y = f(X), dX and G (zeroed first) for the cotangent dY, at the Net's current precision */
static PetscErrorCode Evaluate(Net net, Vec X, Vec dY, Vec Y, Vec dX, Vec G)
{
  PetscFunctionBegin;
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, dX, G));
  PetscFunctionReturn(0);
}

/* the relative differences of the Net's Y, dX and G (as Evaluate() gives them now) from the given ones, in e[3] */
static PetscErrorCode EvaluateAgainst(Net net, Vec X, Vec dY, Vec Y, Vec dX, Vec G, PetscReal e[3])
{
  Vec Y2, dX2, G2;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(Y, &Y2));
  PetscCall(VecDuplicate(dX, &dX2));
  PetscCall(VecDuplicate(G, &G2));
  PetscCall(Evaluate(net, X, dY, Y2, dX2, G2));
  PetscCall(RelDiff(Y, Y2, &e[0]));
  PetscCall(RelDiff(dX, dX2, &e[1]));
  PetscCall(RelDiff(G, G2, &e[2]));
  PetscCall(VecDestroy(&Y2));
  PetscCall(VecDestroy(&dX2));
  PetscCall(VecDestroy(&G2));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net          net;
  Vec          X, Y, dY, dX, G;
  PetscInt     nsamples = 6, nlocal, nlayers;
  PetscMPIInt  rank, size;
  NetPrecision precision;
  char         which[32] = "";
  PetscReal    e[3], f[3], u, tol, nY, nG;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &nsamples, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  nlocal = nsamples / size + (rank < nsamples % size); /* the same samples split over any number of ranks */
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", which, sizeof(which), NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCheck(precision != NET_PRECISION_DOUBLE, PETSC_COMM_WORLD, PETSC_ERR_USER, "Give -net_precision single or bfloat16");
  PetscCall(NetGetNumLayers(net, &nlayers));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(FillGlobal(X, 1.3, 0.2));
  PetscCall(FillGlobal(dY, 0.7, 1.1));

  if (!strcmp(which, "secondorder")) { /* refused: the curvature terms read double values */
    Vec H;

    PetscCall(NetForward(net, X, NULL));
    PetscCall(NetJVP(net, dX, NULL, Y));
    PetscCall(VecDuplicate(X, &H));
    PetscCall(NetSecondOrderBackward(net, dY, dY, H, NULL));
    PetscCall(VecDestroy(&H));
  } else if (!strcmp(which, "layerjacobian")) { /* refused: a node's Jacobian shell reads its double input */
    Mat J;

    PetscCall(NetForward(net, X, NULL));
    PetscCall(NetGetLayerJacobian(net, 0, &J));
  }

  PetscCall(Evaluate(net, X, dY, Y, dX, G));
  /* the same precision with every pass on its own: the fused backward does the same operations */
  PetscCall(NetSetFusion(net, PETSC_FALSE));
  PetscCall(EvaluateAgainst(net, X, dY, Y, dX, G, f));
  PetscCall(NetSetFusion(net, PETSC_TRUE));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fused against separate passes: %s\n", f[0] == 0 && f[1] == 0 && f[2] == 0 ? "the same bits" : "FAILED"));
  PetscCheck(f[0] == 0 && f[1] == 0 && f[2] == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The fused passes differ from separate ones: output %.2e, input cotangent %.2e, gradient %.2e", (double)f[0], (double)f[1], (double)f[2]);
  /* against double */
  PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
  PetscCall(EvaluateAgainst(net, X, dY, Y, dX, G, e));
  PetscCall(NetSetPrecision(net, precision));
  u   = precision == NET_PRECISION_SINGLE ? PetscPowReal(2.0, -24) : PetscPowReal(2.0, -8);
  tol = 10 * nlayers * u;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "precision %s against double (bound 10 L u = %.1e): output %s, input cotangent %s, gradient %s\n", NetPrecisions[precision], (double)tol, e[0] <= tol ? "ok" : "FAILED", e[1] <= tol ? "ok" : "FAILED",
                        e[2] <= tol ? "ok" : "FAILED"));
  PetscCheck(e[0] <= tol && e[1] <= tol && e[2] <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s differs from double by output %.2e, input cotangent %.2e, gradient %.2e: more than 10 L u = %.2e", NetPrecisions[precision], (double)e[0], (double)e[1],
             (double)e[2], (double)tol);
  PetscCall(VecNorm(Y, NORM_2, &nY));
  PetscCall(VecNorm(G, NORM_2, &nG));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "|Y| %.5e |G| %.5e\n", (double)nY, (double)nG));

  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
