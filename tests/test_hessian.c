static const char help[] = "Curvature operators of the mean loss (LossCreateNetHessian): for the Net of -net_layers/-net_graph and the\n"
                           "loss of -loss_type, on a random global batch (the same on any number of ranks):\n"
                           "  symmetry      |<Hv,w> - <v,Hw>| <= 1e-12 |Hv||w|     (Gauss-Newton and exact)\n"
                           "  Gauss-Newton  <Gv,v> >= -1e-12 |Gv||v|                (positive semi-definite)\n"
                           "  exact         |Hv - (g(theta+hv) - g(theta-hv))/2h| <= 1e-6 |Hv|  (central differences of the gradient)\n"
                           "  chunks        the product over chunks of 2 samples equals the one-pass product (1e-12)\n"
                           "  -same         the exact Hessian equals the Gauss-Newton one (1e-12): multinomial logistic regression\n"
                           "At -net_precision single or bfloat16 the symmetry, semi-definiteness and chunk bounds are 10 L u (L nodes, u the\n"
                           "unit round-off of the stored values: the JVP and the backward pass round differently), and the exact product is\n"
                           "compared with the same product in double precision (20 L u) instead of finite differences of a rounded gradient.\n"
                           "Prints v^T G v and v^T H v (rank-invariant). Options: -nsamples N (default 6), -hessian gn|exact|both, -chunk_check 0 (dropout)\n";

#include <petnet.h>
#include "testutil.h"

/* the global vector of `size` entries drawn from a seeded generator, the same on any number of ranks */
static PetscErrorCode FillRandom(Vec v, PetscInt seed, PetscReal lo, PetscReal hi, PetscBool labels, PetscInt nclasses)
{
  PetscInt     N;
  PetscScalar *table;
  PetscRandom  rnd;

  PetscFunctionBegin;
  PetscCall(VecGetSize(v, &N));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc1(N, &table));
  for (PetscInt i = 0; i < N; i++) {
    PetscReal u;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    table[i] = labels ? PetscFloorReal(u * nclasses) : lo + (hi - lo) * u;
  }
  PetscCall(FillFromTable(v, table));
  PetscCall(PetscFree(table));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* the gradient of the mean loss at theta (frozen mode: the map the Hessian differentiates) */
static PetscErrorCode Gradient(Net net, Loss loss, Vec theta, Vec X, Vec Y, Vec T, Vec dY, Vec G)
{
  PetscReal f;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(net, theta));
  PetscCall(NetForward(net, X, Y));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscFunctionReturn(0);
}

static PetscBool chunkcheck = PETSC_TRUE; /* -chunk_check: off where the map depends on the chunking (dropout masks) */

/* the bound of the identities above: 1e-12 in double, 10 L u at a lower precision of the Net's values */
static PetscReal Tolerance(Net net)
{
  NetPrecision prec;
  PetscInt     L;

  PetscCallAbort(PETSC_COMM_WORLD, NetGetPrecision(net, &prec));
  PetscCallAbort(PETSC_COMM_WORLD, NetGetNumLayers(net, &L));
  return prec == NET_PRECISION_DOUBLE ? 1e-12 : 10 * L * (prec == NET_PRECISION_SINGLE ? PetscPowReal(2.0, -24) : PetscPowReal(2.0, -8));
}

static PetscErrorCode CheckType(Net net, Loss loss, LossHessianType type, Vec X, Vec Y, Vec T, Vec dY, Vec theta0, Vec v, Vec w, PetscReal *vHv, Vec Hv_out)
{
  Mat         H, Hc;
  Vec         Hv, Hw, Hcv, theta, gp, gm;
  PetscReal   nHv, nw, nv, h = 1e-5, err, tol = Tolerance(net);
  PetscScalar a, b, c;

  PetscFunctionBegin;
  PetscCall(LossCreateNetHessian(loss, net, type, &H));
  PetscCall(LossNetHessianSetBatch(H, X, T));
  PetscCall(VecDuplicate(v, &Hv));
  PetscCall(VecDuplicate(v, &Hw));
  PetscCall(VecDuplicate(v, &Hcv));
  PetscCall(VecDuplicate(v, &theta));
  PetscCall(VecDuplicate(v, &gp));
  PetscCall(VecDuplicate(v, &gm));
  PetscCall(NetSetParameters(net, theta0));
  PetscCall(MatMult(H, v, Hv));
  PetscCall(MatMult(H, w, Hw));
  PetscCall(VecDot(Hv, w, &a));
  PetscCall(VecDot(v, Hw, &b));
  PetscCall(VecDot(Hv, v, &c));
  PetscCall(VecNorm(Hv, NORM_2, &nHv));
  PetscCall(VecNorm(w, NORM_2, &nw));
  PetscCall(VecNorm(v, NORM_2, &nv));
  PetscCheck(nHv > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s Hessian: Hv = 0, nothing to check", LossHessianTypes[type]);
  err = PetscAbsScalar(a - b) / (nHv * nw);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: v^T H v = %.10e\n", LossHessianTypes[type], (double)PetscRealPart(c)));
  PetscCall(PetscInfo(NULL, "%s: symmetry error %g\n", LossHessianTypes[type], (double)err));
  PetscCheck(err <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s Hessian not symmetric: <Hv,w> = %.15g, <v,Hw> = %.15g, relative %g > %g", LossHessianTypes[type], (double)PetscRealPart(a), (double)PetscRealPart(b), (double)err, (double)tol);
  if (type == LOSS_HESSIAN_GN) PetscCheck(PetscRealPart(c) >= -tol * nHv * nv, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Gauss-Newton operator not positive semi-definite: <Gv,v> = %g", (double)PetscRealPart(c));
  *vHv = PetscRealPart(c);

  /* the same product in chunks of 2 local samples: every chunk's forward pass again, weighted by its share */
  if (chunkcheck) {
    PetscCall(LossCreateNetHessian(loss, net, type, &Hc));
    PetscCall(LossNetHessianSetBatch(Hc, X, T));
    PetscCall(LossNetHessianSetChunkSize(Hc, 2));
    PetscCall(MatMult(Hc, v, Hcv));
    PetscCall(VecAXPY(Hcv, -1.0, Hv));
    PetscCall(VecNorm(Hcv, NORM_2, &err));
    err /= nHv;
    PetscCheck(err <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s Hessian in chunks of 2 differs from the one-pass product: relative %g > %g", LossHessianTypes[type], (double)err, (double)tol);
    PetscCall(MatDestroy(&Hc));
  }

  if (type == LOSS_HESSIAN_EXACT && tol > 1e-12) { /* low precision: against the same product in double */
    NetPrecision prec;
    PetscReal    nd;

    PetscCall(NetGetPrecision(net, &prec));
    PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
    PetscCall(MatMult(H, v, gp));
    PetscCall(NetSetPrecision(net, prec));
    PetscCall(VecNorm(gp, NORM_2, &nd));
    PetscCall(VecAXPY(gp, -1.0, Hv));
    PetscCall(VecNorm(gp, NORM_2, &err));
    err /= PetscMax(nd, 1e-300);
    PetscCheck(err <= 2 * tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Exact Hessian-vector product in %s against double: relative error %g > 20 L u = %g", NetPrecisions[prec], (double)err, (double)(2 * tol));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "exact: Hv matches the double-precision product (relative error <= 20 L u)\n"));
  } else if (type == LOSS_HESSIAN_EXACT) { /* central differences of the gradient along v */
    PetscReal nfd;

    PetscCall(VecWAXPY(theta, h, v, theta0));
    PetscCall(Gradient(net, loss, theta, X, Y, T, dY, gp));
    PetscCall(VecWAXPY(theta, -h, v, theta0));
    PetscCall(Gradient(net, loss, theta, X, Y, T, dY, gm));
    PetscCall(VecAXPY(gp, -1.0, gm));
    PetscCall(VecScale(gp, 1.0 / (2 * h)));
    PetscCall(VecNorm(gp, NORM_2, &nfd));
    PetscCall(VecAXPY(gp, -1.0, Hv));
    PetscCall(VecNorm(gp, NORM_2, &err));
    err /= PetscMax(nfd, 1e-300);
    PetscCall(PetscInfo(NULL, "exact: finite-difference error %g\n", (double)err));
    PetscCheck(err <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Exact Hessian-vector product against central differences of the gradient: relative error %g > 1e-6", (double)err);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "exact: Hv matches central differences of the gradient (relative error <= 1e-6)\n"));
    PetscCall(NetSetParameters(net, theta0));
  }
  if (Hv_out) PetscCall(VecCopy(Hv, Hv_out));
  PetscCall(VecDestroy(&Hv));
  PetscCall(VecDestroy(&Hw));
  PetscCall(VecDestroy(&Hcv));
  PetscCall(VecDestroy(&theta));
  PetscCall(VecDestroy(&gp));
  PetscCall(VecDestroy(&gm));
  PetscCall(MatDestroy(&H));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net         net;
  Loss        loss;
  Vec         X, Y, T, dY, theta0, v, w, Gv, Hv;
  PetscInt    N = 6, n = PETSC_DECIDE, nout, P;
  PetNetShape out;
  PetscBool   ce, same = PETSC_FALSE;
  char        which[16] = "both";
  PetscReal   vGv = 0, vHv = 0;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &N, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-hessian", which, sizeof(which), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-same", &same, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-chunk_check", &chunkcheck, NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(NetGetNumParameters(net, &P));
  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(LossSetUp(loss));
  {
    LossType type;

    PetscCall(LossGetType(loss, &type));
    PetscCall(PetscStrcmp(type, LOSSCROSSENTROPY, &ce));
  }
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, ce ? n : n * nout, PETSC_DETERMINE, &T));
  PetscCall(FillRandom(X, 11, -2.0, 2.0, PETSC_FALSE, 0));
  PetscCall(FillRandom(T, 13, -1.0, 1.0, ce, nout));
  PetscCall(NetCreateParameterVec(net, &theta0));
  PetscCall(VecDuplicate(theta0, &v));
  PetscCall(VecDuplicate(theta0, &w));
  PetscCall(VecDuplicate(theta0, &Gv));
  PetscCall(VecDuplicate(theta0, &Hv));
  {
    Vec p;

    PetscCall(NetGetParameters(net, &p));
    PetscCall(VecCopy(p, theta0));
  }
  PetscCall(FillRandom(v, 17, -1.0, 1.0, PETSC_FALSE, 0));
  PetscCall(FillRandom(w, 19, -1.0, 1.0, PETSC_FALSE, 0));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " parameters, %" PetscInt_FMT " samples\n", P, N));
  /* a first forward pass in training mode draws the dropout masks the frozen Hessian then repeats */
  PetscCall(NetForward(net, X, Y));
  { /* ... and the finite differences see the same fixed map */
    PetscInt nl;

    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer layer;

      PetscCall(NetGetLayer(net, l, &layer));
      PetscCall(LayerSetFrozen(layer, PETSC_TRUE));
    }
  }
  if (!strcmp(which, "gn") || !strcmp(which, "both")) PetscCall(CheckType(net, loss, LOSS_HESSIAN_GN, X, Y, T, dY, theta0, v, w, &vGv, Gv));
  if (!strcmp(which, "exact") || !strcmp(which, "both")) PetscCall(CheckType(net, loss, LOSS_HESSIAN_EXACT, X, Y, T, dY, theta0, v, w, &vHv, Hv));
  if (same) {
    PetscReal err, nG;

    PetscCall(VecNorm(Gv, NORM_2, &nG));
    PetscCall(VecAXPY(Hv, -1.0, Gv));
    PetscCall(VecNorm(Hv, NORM_2, &err));
    err /= nG;
    PetscCheck(err <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The exact Hessian should equal the Gauss-Newton one here, but |Hv - Gv|/|Gv| = %g > 1e-12", (double)err);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "exact = Gauss-Newton (relative difference <= 1e-12)\n"));
  }
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&theta0));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&Gv));
  PetscCall(VecDestroy(&Hv));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
