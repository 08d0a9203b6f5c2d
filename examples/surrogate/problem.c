/*
  bin/surrogate's data: random input fields and their KSP solutions on a DMDA (problem.h). The CNN solves each sample
  on one rank (a DMDA on PETSC_COMM_SELF), the U-Net each sample on a DMDA over all ranks; the code is the same.
*/
#include "problem.h"

const char *const SurrogateProblemTypes[] = {"source", "coefficient", "SurrogateProblemType", "SURROGATE_PROBLEM_", NULL};

/* this rank's block of the input field of sample s, x fastest:
   field(x, y) = sum_{k,l <= K} a_kl sin(k pi x) sin(l pi y) / sqrt(k^2 + l^2), a_kl uniform in [-1, 1] from seed s */
static PetscErrorCode RandomField(SurrogateSolver *sv, unsigned long seed, PetscScalar field[])
{
  const PetscInt n = sv->n, K = sv->K;
  PetscInt       xs, ys, xm, ym;
  PetscReal     *a;
  PetscRandom    rnd;

  PetscFunctionBegin;
  PetscCall(DMDAGetCorners(sv->da, &xs, &ys, NULL, &xm, &ym, NULL));
  PetscCall(PetscMalloc1(K * K, &a));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 7919 + seed));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt m = 0; m < K * K; m++) PetscCall(PetscRandomGetValueReal(rnd, &a[m]));
  PetscCall(PetscRandomDestroy(&rnd));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++) {
      const PetscReal x = (i + 1.0) / (n + 1), y = (j + 1.0) / (n + 1);
      PetscReal       s = 0.0;

      for (PetscInt k = 1; k <= K; k++)
        for (PetscInt l = 1; l <= K; l++) s += a[(k - 1) * K + l - 1] * PetscSinReal(k * PETSC_PI * x) * PetscSinReal(l * PETSC_PI * y) / PetscSqrtReal((PetscReal)(k * k + l * l));
      field[(j - ys) * xm + i - xs] = s;
    }
  PetscCall(PetscFree(a));
  PetscFunctionReturn(0);
}

/* k at point (i, j), boundary points included: the fixed coefficient of the source problem, or exp(log k) with log k
   (ghosted) of the coefficient problem, taken at the boundary from the nearest interior point */
static PetscScalar Coefficient(SurrogateSolver *sv, const PetscScalar *const *logk, PetscInt i, PetscInt j)
{
  const PetscInt n = sv->n;

  if (sv->problem == SURROGATE_PROBLEM_SOURCE) {
    const PetscReal x = (i + 1.0) / (n + 1), y = (j + 1.0) / (n + 1);

    return 1.0 + 0.5 * PetscSinReal(2 * PETSC_PI * x) * PetscCosReal(2 * PETSC_PI * y);
  }
  i = PetscMax(0, PetscMin(n - 1, i));
  j = PetscMax(0, PetscMin(n - 1, j));
  return PetscExpScalar(logk[j][i]);
}

/* A = -div(k grad .) on this rank's rows, with k at the cell faces as the mean of its values at the two points */
static PetscErrorCode AssembleOperator(SurrogateSolver *sv)
{
  const PetscInt      n    = sv->n;
  const PetscReal     h2   = 1.0 / ((n + 1.0) * (n + 1.0));
  const PetscScalar **logk = NULL;
  PetscInt            xs, ys, xm, ym;

  PetscFunctionBegin;
  PetscCall(DMDAGetCorners(sv->da, &xs, &ys, NULL, &xm, &ym, NULL));
  if (sv->problem == SURROGATE_PROBLEM_COEFFICIENT) PetscCall(DMDAVecGetArrayRead(sv->da, sv->logk, &logk));
  PetscCall(MatZeroEntries(sv->A));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++) {
      const PetscScalar kc = Coefficient(sv, logk, i, j);
      const PetscScalar kw = 0.5 * (kc + Coefficient(sv, logk, i - 1, j)), ke = 0.5 * (kc + Coefficient(sv, logk, i + 1, j));
      const PetscScalar ks = 0.5 * (kc + Coefficient(sv, logk, i, j - 1)), kn = 0.5 * (kc + Coefficient(sv, logk, i, j + 1));
      MatStencil        row = {.j = j, .i = i}, col[5];
      PetscScalar       v[5];
      PetscInt          c = 0;

      col[c].j = j, col[c].i = i, v[c++] = (kw + ke + ks + kn) / h2;
      if (i > 0) col[c].j = j, col[c].i = i - 1, v[c++] = -kw / h2;
      if (i < n - 1) col[c].j = j, col[c].i = i + 1, v[c++] = -ke / h2;
      if (j > 0) col[c].j = j - 1, col[c].i = i, v[c++] = -ks / h2;
      if (j < n - 1) col[c].j = j + 1, col[c].i = i, v[c++] = -kn / h2;
      PetscCall(MatSetValuesStencil(sv->A, 1, &row, c, col, v, INSERT_VALUES));
    }
  if (logk) PetscCall(DMDAVecRestoreArrayRead(sv->da, sv->logk, &logk));
  PetscCall(MatAssemblyBegin(sv->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(sv->A, MAT_FINAL_ASSEMBLY));
  PetscCall(KSPSetOperators(sv->ksp, sv->A, sv->A));
  PetscFunctionReturn(0);
}

/*
  SurrogateSolverCreate - the n x n problem on a DMDA over comm (PETSC_COMM_SELF: one rank solves the whole sample),
  with its KSP: cg with the preconditioner pctype (NULL: icc on one rank, bjacobi on several), rtol 1e-10, then
  -ksp_* and -pc_* from the options
*/
PetscErrorCode SurrogateSolverCreate(MPI_Comm comm, SurrogateProblemType problem, PetscInt n, PetscInt K, PCType pctype, SurrogateSolver *sv)
{
  PetscMPIInt size;
  PC          pc;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  sv->problem = problem;
  sv->n       = n;
  sv->K       = K;
  sv->logk    = NULL;
  PetscCall(DMDACreate2d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &sv->da));
  PetscCall(DMSetUp(sv->da));
  PetscCall(DMCreateMatrix(sv->da, &sv->A));
  PetscCall(DMCreateGlobalVector(sv->da, &sv->b));
  PetscCall(VecDuplicate(sv->b, &sv->u));
  if (problem == SURROGATE_PROBLEM_COEFFICIENT) PetscCall(DMCreateLocalVector(sv->da, &sv->logk));
  PetscCall(KSPCreate(comm, &sv->ksp));
  PetscCall(KSPSetType(sv->ksp, KSPCG));
  PetscCall(KSPGetPC(sv->ksp, &pc));
  PetscCall(PCSetType(pc, pctype ? pctype : (size == 1 ? PCICC : PCBJACOBI)));
  PetscCall(KSPSetTolerances(sv->ksp, 1e-10, 1e-50, PETSC_DEFAULT, 10000));
  PetscCall(KSPSetFromOptions(sv->ksp));
  if (problem == SURROGATE_PROBLEM_SOURCE) PetscCall(AssembleOperator(sv));
  PetscFunctionReturn(0);
}

PetscErrorCode SurrogateSolverDestroy(SurrogateSolver *sv)
{
  PetscFunctionBegin;
  PetscCall(KSPDestroy(&sv->ksp));
  PetscCall(VecDestroy(&sv->b));
  PetscCall(VecDestroy(&sv->u));
  PetscCall(VecDestroy(&sv->logk));
  PetscCall(MatDestroy(&sv->A));
  PetscCall(DMDestroy(&sv->da));
  PetscFunctionReturn(0);
}

/*
  SurrogateSolverSolve - sample s: this rank's block of its input field x and of its solution y by KSP (collective on
  the DMDA's communicator); *seconds += this rank's time of the solve, the operator's assembly and set-up included
*/
PetscErrorCode SurrogateSolverSolve(SurrogateSolver *sv, PetscInt s, PetscScalar x[], PetscScalar y[], PetscLogDouble *seconds)
{
  PetscInt           nlocal;
  PetscLogDouble     t0, t1;
  KSPConvergedReason reason;
  const PetscScalar *u;
  PetscScalar       *b;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(sv->b, &nlocal));
  PetscCall(RandomField(sv, (unsigned long)s, x));
  PetscCall(PetscTime(&t0));
  PetscCall(VecGetArrayWrite(sv->b, &b));
  PetscCall(PetscArraycpy(b, x, nlocal));
  PetscCall(VecRestoreArrayWrite(sv->b, &b));
  if (sv->problem == SURROGATE_PROBLEM_COEFFICIENT) {
    PetscCall(DMGlobalToLocal(sv->da, sv->b, INSERT_VALUES, sv->logk));
    PetscCall(AssembleOperator(sv));
    PetscCall(VecSet(sv->b, 1.0));
  }
  PetscCall(KSPSolve(sv->ksp, sv->b, sv->u));
  PetscCall(PetscTime(&t1));
  *seconds += t1 - t0;
  PetscCall(KSPGetConvergedReason(sv->ksp, &reason));
  PetscCheck(reason > 0, PetscObjectComm((PetscObject)sv->ksp), PETSC_ERR_NOT_CONVERGED, "The KSP solve of sample %" PetscInt_FMT " failed (%s): check -ksp_type and -pc_type", s, KSPConvergedReasons[reason]);
  PetscCall(VecGetArrayRead(sv->u, &u));
  PetscCall(PetscArraycpy(y, u, nlocal));
  PetscCall(VecRestoreArrayRead(sv->u, &u));
  PetscFunctionReturn(0);
}
