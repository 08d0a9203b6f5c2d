/* Helpers shared by the test programs (static inline: each program uses some of them). */
#pragma once

#include <petscts.h>
#include <petnetnet.h>
#include <stdio.h>
#include <string.h>

/* whether LayerView() of the layer (as rank 0 prints it) contains text; the same answer on every rank */
static inline PetscErrorCode TestLayerViewContains(Layer layer, const char text[], PetscBool *found)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  char       *buf  = NULL;
  size_t      len  = 0;
  FILE       *fp   = open_memstream(&buf, &len);
  PetscViewer viewer;
  PetscMPIInt rank;
  int         f;

  PetscFunctionBegin;
  PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_SYS, "open_memstream() failed");
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscViewerASCIIOpenWithFILE(comm, fp, &viewer));
  PetscCall(LayerView(layer, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  fclose(fp);
  f = !rank ? strstr(buf, text) != NULL : 0;
  free(buf);
  PetscCallMPI(MPI_Bcast(&f, 1, MPI_INT, 0, comm));
  *found = (PetscBool)f;
  PetscFunctionReturn(0);
}

/* v[i] = table[i] for the entries this rank owns (table holds the whole global vector) */
static inline PetscErrorCode FillFromTable(Vec v, const PetscScalar table[])
{
  PetscInt     rstart, rend;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = table[i];
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* |a - b| / |b|, with |b| floored at 1e-12 */
static inline PetscReal RelErr(PetscReal a, PetscReal b)
{
  return PetscAbsReal(a - b) / PetscMax(PetscAbsReal(b), 1e-12);
}

/*
  L = <w, u(T)> from u(0) = u0 (first step 0.1; the TS's final time and type as set) and, if lambda, its gradients by
  TSAdjointSolve: lambda = dL/du0, mu = dL/dp. The TS must save its trajectory.
*/
static inline PetscErrorCode SolveTSLinearFunctional(TS ts, Vec u0, Vec w, PetscReal *L, Vec lambda, Vec mu)
{
  Vec          u;
  PetscScalar  d;
  TSTrajectory tj;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(u0, &u));
  PetscCall(VecCopy(u0, u));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectoryReset(tj)); /* the last solve may not have been followed by an adjoint solve */
  PetscCall(TSSetTime(ts, 0.0));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetTimeStep(ts, 0.1));
  PetscCall(TSSolve(ts, u));
  PetscCall(VecDot(u, w, &d));
  *L = PetscRealPart(d);
  if (lambda) {
    Vec lam[1] = {lambda}, m[1] = {mu};

    PetscCall(VecCopy(w, lambda));
    PetscCall(VecZeroEntries(mu));
    PetscCall(TSSetCostGradients(ts, 1, lam, m));
    PetscCall(TSAdjointSolve(ts));
    PetscCall(TSAdjointReset(ts));
  }
  PetscCall(VecDestroy(&u));
  PetscFunctionReturn(0);
}

/*
  Central finite differences of L = <w, u(T)> (SolveTSLinearFunctional()) against its TSAdjoint gradients: *errx along
  the state direction v, *errp along the parameter direction p (theta, the parameters the TS uses, are moved from
  theta0 and put back). lambda, mu and uh are work Vecs (u0's, theta's and u0's layout); *L the loss at u0.
*/
static inline PetscErrorCode CheckTSLinearFunctionalFD(TS ts, Vec u0, Vec w, Vec v, Vec theta, Vec theta0, Vec p, PetscReal h, Vec lambda, Vec mu, Vec uh, PetscReal *L, PetscReal *errx, PetscReal *errp)
{
  PetscScalar gx, gp;
  PetscReal   Lp, Lm;

  PetscFunctionBegin;
  PetscCall(SolveTSLinearFunctional(ts, u0, w, L, lambda, mu));
  PetscCall(VecDot(lambda, v, &gx));
  PetscCall(VecDot(mu, p, &gp));
  PetscCall(VecWAXPY(uh, h, v, u0));
  PetscCall(SolveTSLinearFunctional(ts, uh, w, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(uh, -h, v, u0));
  PetscCall(SolveTSLinearFunctional(ts, uh, w, &Lm, NULL, NULL));
  *errx = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gx));
  PetscCall(VecWAXPY(theta, h, p, theta0));
  PetscCall(SolveTSLinearFunctional(ts, u0, w, &Lp, NULL, NULL));
  PetscCall(VecWAXPY(theta, -h, p, theta0));
  PetscCall(SolveTSLinearFunctional(ts, u0, w, &Lm, NULL, NULL));
  PetscCall(VecCopy(theta0, theta));
  *errp = RelErr((Lp - Lm) / (2 * h), PetscRealPart(gp));
  PetscFunctionReturn(0);
}

/* The spec the Net reports rebuilds a Net with the same spec and the same parameter count */
static inline PetscErrorCode CheckSpecRoundTrip(Net net)
{
  Net         copy;
  char        spec[4096], again[4096];
  PetscInt    n1, n2;
  PetscBool   same;
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetCreate(PetscObjectComm((PetscObject)net), &copy));
  if (strchr(spec, ';'))
    PetscCall(NetSetGraph(copy, spec)); /* NetGetSpec() ends the entries of a graph with ; */
  else
    PetscCall(NetSetLayers(copy, spec));
  PetscCall(NetSetInputShape(copy, &in));
  PetscCall(NetGetNumParameters(net, &n1));
  PetscCall(NetGetNumParameters(copy, &n2));
  PetscCall(NetGetSpec(copy, sizeof(again), again));
  PetscCall(PetscStrcmp(spec, again, &same));
  PetscCheck(same && n1 == n2, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "spec %s does not round-trip: %s, %" PetscInt_FMT " vs %" PetscInt_FMT " parameters", spec, again, n1, n2);
  PetscCall(NetDestroy(&copy));
  PetscFunctionReturn(0);
}

/*
  Central differences of the backward pass against the second-order adjoint at (X, theta) along (dXdir, dthdir), for the
  output cotangent dY: errx = |(dX(+h) - dX(-h)) / 2h - dXdot| / |dXdot|, errp the same for the gradient against Hv
  (G: any Vec of the parameter layout). Leaves the Net forwarded at X with its parameters restored.
*/
static inline PetscErrorCode CheckSecondOrderFD(Net net, Vec X, Vec dXdir, Vec dthdir, Vec dY, Vec dXdot, Vec Hv, Vec G, PetscReal *errx, PetscReal *errp)
{
  const PetscReal h = 1e-5;
  Vec             theta, theta0, Xh, dXp, dXm, Gp, Gm;
  PetscReal       nd, nref;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &theta0));
  PetscCall(VecCopy(theta, theta0));
  PetscCall(VecDuplicate(X, &Xh));
  PetscCall(VecDuplicate(X, &dXp));
  PetscCall(VecDuplicate(X, &dXm));
  PetscCall(VecDuplicate(G, &Gp));
  PetscCall(VecDuplicate(G, &Gm));
  for (PetscInt s = 0; s < 2; s++) {
    PetscReal sign = s ? -1.0 : 1.0;

    PetscCall(VecWAXPY(theta, sign * h, dthdir, theta0));
    PetscCall(VecWAXPY(Xh, sign * h, dXdir, X));
    PetscCall(NetForward(net, Xh, NULL));
    PetscCall(VecZeroEntries(s ? Gm : Gp));
    PetscCall(NetBackward(net, dY, s ? dXm : dXp, s ? Gm : Gp));
  }
  PetscCall(VecCopy(theta0, theta));
  PetscCall(VecAXPY(dXp, -1.0, dXm));
  PetscCall(VecAYPX(dXp, -0.5 / h, dXdot));
  PetscCall(VecNorm(dXp, NORM_2, &nd));
  PetscCall(VecNorm(dXdot, NORM_2, &nref));
  *errx = nd / nref;
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecAYPX(Gp, -0.5 / h, Hv));
  PetscCall(VecNorm(Gp, NORM_2, &nd));
  PetscCall(VecNorm(Hv, NORM_2, &nref));
  *errp = nd / nref;
  PetscCall(NetForward(net, X, NULL));
  PetscCall(VecDestroy(&theta0));
  PetscCall(VecDestroy(&Xh));
  PetscCall(VecDestroy(&dXp));
  PetscCall(VecDestroy(&dXm));
  PetscCall(VecDestroy(&Gp));
  PetscCall(VecDestroy(&Gm));
  PetscFunctionReturn(0);
}

/* d[0] = max |v - ref| over v's owned entries (ref: the whole vector), d[1] = max |ref| there */
static inline PetscErrorCode TestCompareOwned(Vec v, const PetscScalar *ref, PetscReal d[2])
{
  const PetscScalar *a;
  PetscInt           rs, re;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rs, &re));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = rs; i < re; i++) {
    d[0] = PetscMax(d[0], PetscAbsScalar(a[i - rs] - ref[i]));
    d[1] = PetscMax(d[1], PetscAbsScalar(ref[i]));
  }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

/* Fixed parameters theta_i = 0.4 sin(0.7 i + 0.2) of a Net with P of them, the same on any number of ranks */
static inline PetscErrorCode TestSetParameters(Net net, PetscInt P)
{
  Vec          theta;
  PetscScalar *t;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(P, &t));
  for (PetscInt i = 0; i < P; i++) t[i] = 0.4 * PetscSinReal(0.7 * i + 0.2);
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(FillFromTable(theta, t));
  PetscCall(PetscFree(t));
  PetscFunctionReturn(0);
}

/* A parameter direction v_i = cos(1.3 i), in a new Vec of the parameter layout */
static inline PetscErrorCode TestParameterDirection(Net net, PetscInt P, Vec *v)
{
  PetscScalar *t;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(P, &t));
  for (PetscInt i = 0; i < P; i++) t[i] = PetscCosReal(1.3 * i);
  PetscCall(NetCreateParameterVec(net, v));
  PetscCall(FillFromTable(*v, t));
  PetscCall(PetscFree(t));
  PetscFunctionReturn(0);
}

/* the options of every node of net's layers (-layer1_attention_dropout 0.2, ...), without the Net's own (-net_*): for
   a reference Net that must match one set up by NetSetFromOptions(), or a program that sets the Net's mode itself */
static inline PetscErrorCode TestLayersSetFromOptions(Net net)
{
  PetscInt L;

  PetscFunctionBegin;
  PetscCall(NetGetNumLayers(net, &L));
  for (PetscInt k = 0; k < L; k++) {
    Layer l;

    PetscCall(NetGetLayer(net, k, &l));
    PetscCall(LayerSetFromOptions(l));
  }
  PetscFunctionReturn(0);
}
