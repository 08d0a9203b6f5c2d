static const char help[] = "Full-loss gradient check: the parameter gradient G of NetForward + LossEvaluate + NetBackward against\n"
                           "central finite differences of the loss, along random directions and for single coordinates (relative\n"
                           "error <= 1e-6), for several Nets and losses; NetBackward accumulating into G, and differentiating at the\n"
                           "last forward pass even when the parameters changed since.\n"
                           "  -nsamples N   global batch size (default 7, split over the ranks as evenly as possible)\n";

#include <petnet.h>
#include "testutil.h"

typedef struct {
  const char *layers;
  LossType    loss;
} Case;

static const Case cases[] = {
    {"dense:8,relu,dense:4", LOSSCROSSENTROPY},
    {"dense:8,relu,dense:4", LOSSMSE},
    {"dense:6,tanh,dense:3", LOSSCROSSENTROPY},
    {"dense:6,tanh,dense:3", LOSSMSE},
    {"dense:7,gelu,dense:5,sigmoid,dense:3", LOSSCROSSENTROPY},
    {"dense:5,softplus,dense:4,leakyrelu:0.1,dense:3", LOSSMSE},
    {"dense:3", LOSSCROSSENTROPY},
    /* graphs: fan-out of the input and of a node, add and concat joins, a three-way add */
    {"a = dense:6; b = tanh; c = dense:6; s = add <- c, a; t = concat <- s, input; out = dense:3;", LOSSCROSSENTROPY},
    {"h = dense:5; p = tanh <- h; q = sigmoid <- h; r = gelu <- h; s = add <- p, q, r; out = dense:4 <- s;", LOSSMSE},
};

/* f(theta) for the batch (X, T): the Net's parameters are set to theta first */
static PetscErrorCode EvaluateLoss(Net net, Loss loss, Vec theta, Vec X, Vec Y, Vec T, PetscReal *f)
{
  PetscFunctionBegin;
  PetscCall(NetSetParameters(net, theta));
  PetscCall(NetForward(net, X, Y));
  PetscCall(LossEvaluate(loss, Y, T, f, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckCase(const Case *c, PetscInt N)
{
  const PetscReal h  = 1e-5;
  PetNetShape     in = {1, {5}}, out;
  Net             net;
  Loss            loss;
  Vec             X, Y, T, dY, G, G2, theta0, theta, v;
  PetscInt        n = PETSC_DECIDE, nout, P, ncoord = 0, coords[16];
  PetscScalar    *table;
  PetscRandom     rnd;
  PetscReal       f, fp, fm, nG, nGinf, worstdir = 0, worstcoord = 0, acc, stale;
  PetscBool       ce;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(c->loss, LOSSCROSSENTROPY, &ce));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  if (strchr(c->layers, ';'))
    PetscCall(NetSetGraph(net, c->layers)); /* a graph of named nodes */
  else
    PetscCall(NetSetLayers(net, c->layers));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 3));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(NetGetNumParameters(net, &P));
  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetType(loss, c->loss));
  PetscCall(LossSetFromOptions(loss));

  /* the global batch, the same on any number of ranks: inputs in [-2, 2), labels or targets */
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, ce ? n : n * nout, PETSC_DETERMINE, &T));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 23));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc1(N * PetscMax(in.dim[0], nout), &table));
  for (PetscInt i = 0; i < N * in.dim[0]; i++) {
    PetscCall(PetscRandomGetValueReal(rnd, &f));
    table[i] = 4.0 * f - 2.0;
  }
  PetscCall(FillFromTable(X, table));
  for (PetscInt i = 0; i < N * nout; i++) {
    PetscCall(PetscRandomGetValueReal(rnd, &f));
    table[i] = ce ? PetscFloorReal(f * nout) : 2.0 * f - 1.0;
  }
  PetscCall(FillFromTable(T, table));
  PetscCall(PetscFree(table));
  PetscCall(PetscRandomDestroy(&rnd));

  /* G = df/dtheta */
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(VecDuplicate(G, &G2));
  PetscCall(VecDuplicate(G, &theta0));
  PetscCall(VecDuplicate(G, &theta));
  PetscCall(VecDuplicate(G, &v));
  {
    Vec p;

    PetscCall(NetGetParameters(net, &p));
    PetscCall(VecCopy(p, theta0));
  }
  PetscCall(NetForward(net, X, Y));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscCall(VecNorm(G, NORM_2, &nG));
  PetscCall(VecNorm(G, NORM_INFINITY, &nGinf));
  PetscCheck(nG > 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s / %s: zero gradient, nothing to check", c->layers, c->loss);

  /* NetBackward accumulates: a second call adds the same gradient again */
  PetscCall(VecCopy(G, G2));
  PetscCall(NetBackward(net, dY, NULL, G2));
  PetscCall(VecAXPY(G2, -2.0, G));
  PetscCall(VecNorm(G2, NORM_2, &acc));
  acc /= 2 * nG;
  PetscCheck(acc <= 1e-14, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s / %s: NetBackward does not accumulate into G: |G2 - 2G|/|2G| = %g", c->layers, c->loss, (double)acc);

  /* random directions: (f(theta + h v) - f(theta - h v))/2h against <G, v> */
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 29));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt k = 0; k < 3; k++) {
    PetscScalar Gv;
    PetscReal   fd, err;

    PetscCall(VecSetRandom(v, rnd));
    PetscCall(VecDot(G, v, &Gv));
    PetscCall(VecWAXPY(theta, h, v, theta0));
    PetscCall(EvaluateLoss(net, loss, theta, X, Y, T, &fp));
    PetscCall(VecWAXPY(theta, -h, v, theta0));
    PetscCall(EvaluateLoss(net, loss, theta, X, Y, T, &fm));
    fd  = (fp - fm) / (2 * h);
    err = PetscAbsReal(fd - PetscRealPart(Gv)) / PetscAbsScalar(Gv);
    PetscCheck(err <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s / %s: direction %" PetscInt_FMT ": finite difference %.12g, <G, v> %.12g, relative error %g > 1e-6", c->layers, c->loss, k, (double)fd, (double)PetscRealPart(Gv), (double)err);
    worstdir = PetscMax(worstdir, err);
  }

  /* single coordinates: the first weight, a middle one and the last bias of every layer with parameters */
  {
    PetscInt nl;

    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      PetscInt start, end;

      PetscCall(NetGetLayerParameterRange(net, l, &start, &end));
      if (end == start) continue;
      coords[ncoord++] = start;
      coords[ncoord++] = (start + end) / 2;
      coords[ncoord++] = end - 1;
    }
  }
  for (PetscInt k = 0; k < ncoord; k++) {
    PetscScalar gi = 0;
    PetscReal   fd, err, scale;
    PetscInt    rstart, rend;

    PetscCall(VecGetOwnershipRange(G, &rstart, &rend));
    if (coords[k] >= rstart && coords[k] < rend) PetscCall(VecGetValues(G, 1, &coords[k], &gi));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &gi, 1, MPIU_SCALAR, MPIU_SUM, PETSC_COMM_WORLD));
    PetscCall(VecCopy(theta0, theta));
    if (coords[k] >= rstart && coords[k] < rend) PetscCall(VecSetValue(theta, coords[k], h, ADD_VALUES));
    PetscCall(VecAssemblyBegin(theta));
    PetscCall(VecAssemblyEnd(theta));
    PetscCall(EvaluateLoss(net, loss, theta, X, Y, T, &fp));
    PetscCall(VecCopy(theta0, theta));
    if (coords[k] >= rstart && coords[k] < rend) PetscCall(VecSetValue(theta, coords[k], -h, ADD_VALUES));
    PetscCall(VecAssemblyBegin(theta));
    PetscCall(VecAssemblyEnd(theta));
    PetscCall(EvaluateLoss(net, loss, theta, X, Y, T, &fm));
    fd = (fp - fm) / (2 * h);
    /* relative to |g_i|, or to 1e-3 |G|_inf where g_i is (nearly) zero, e.g. behind a dead ReLU */
    scale = PetscMax(PetscAbsScalar(gi), 1e-3 * nGinf);
    err   = PetscAbsReal(fd - PetscRealPart(gi)) / scale;
    PetscCheck(err <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s / %s: coordinate %" PetscInt_FMT ": finite difference %.12g, G_i %.12g, relative error %g > 1e-6", c->layers, c->loss, coords[k], (double)fd, (double)PetscRealPart(gi), (double)err);
    worstcoord = PetscMax(worstcoord, err);
  }
  /* NetBackward differentiates at the last forward pass, even when the parameters changed since:
     forward at theta0, then change the parameters (NetSetParameters, then NetInitializeParameters with zeros) */
  PetscCall(NetSetParameters(net, theta0));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecShift(theta, 1.0));
  PetscCall(NetSetParameters(net, theta));
  {
    PetscInt nl;

    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer layer;

      PetscCall(NetGetLayer(net, l, &layer));
      PetscCall(LayerDenseSetInitialization(layer, LAYER_INIT_ZEROS, 0));
    }
  }
  PetscCall(NetInitializeParameters(net));
  PetscCall(VecZeroEntries(G2));
  PetscCall(NetBackward(net, dY, NULL, G2));
  PetscCall(VecAXPY(G2, -1.0, G));
  PetscCall(VecNorm(G2, NORM_INFINITY, &stale));
  PetscCheck(stale <= 1e-14 * nGinf, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s / %s: NetBackward after a parameter change differs from the gradient at the forward pass by %g", c->layers, c->loss, (double)stale);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-48s %-12s %3" PetscInt_FMT " parameters: 3 directions, %2" PetscInt_FMT " coordinates ok, NetBackward accumulates, at the forward point\n", c->layers, c->loss, P, ncoord));
  PetscCall(PetscInfo(NULL, "%s / %s: loss %g, worst relative error: directions %g, coordinates %g; accumulation %g\n", c->layers, c->loss, (double)f, (double)worstdir, (double)worstcoord, (double)acc));

  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&G2));
  PetscCall(VecDestroy(&theta0));
  PetscCall(VecDestroy(&theta));
  PetscCall(VecDestroy(&v));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt N = 7;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &N, NULL));
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) PetscCall(CheckCase(&cases[k], N));
  PetscCall(PetscFinalize());
  return 0;
}
