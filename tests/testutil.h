/* Helpers shared by the test programs (static inline: each program uses some of them). */
#pragma once

#include <petscts.h>

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
