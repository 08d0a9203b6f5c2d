static const char help[] = "MatGetDiagonal() of a pointwise Net's Jacobian shell (NetGetJacobian()): equal to the diagonal probed column by\n"
                           "  column with MatMult (<= 1e-13 relative), and -pc_type jacobi solving a PDE-like sum A + J (A a 1-D Laplacian over\n"
                           "  the samples with dof c, in a MATCOMPOSITE) to a true residual <= 1e-8.\n"
                           "With -blocks, also NetCreateJacobianBlockDiagonal(): the assembled MATBAIJ equals J column by column (<= 1e-13), and\n"
                           "  A + B preconditions the KSP on A + J (any -pc_type on an assembled matrix; -most_its k: at most k iterations, 1 with\n"
                           "  -pc_type lu, where A + B is A + J exactly).\n"
                           "Options: -net_layers (default dense:6,tanh,dense:3, input 3), -nlocal n (samples per rank, default 5), -error\n"
                           "  coupled|nonsquare (a batchnorm in training mode; a Net of 3 inputs and 4 outputs per sample).\n";

#include <petnet.h>
#include <petscksp.h>

int main(int argc, char **argv)
{
  MPI_Comm           comm;
  Net                net;
  Mat                J, A, C, mats[2], B = NULL, P = NULL;
  Vec                X, Y, D, E, JE, BE            = NULL, b, x, r;
  PetscInt           c = 3, nlocal = 5, n, rs, re, N;
  PetNetShape        in = {1, {3}};
  PetscScalar       *a;
  PetscReal          d[4]      = {0, 0, 0, 0}, all[4], nr, nb;
  char               error[32] = "";
  PetscBool          set, blocks = PETSC_FALSE;
  KSP                ksp;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-blocks", &blocks, NULL));
  PetscCall(NetCreate(comm, &net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  PetscCall(PetscStrcmp(error, "coupled", &set));
  if (set) PetscCall(NetSetLayers(net, "dense:3,batchnorm"));
  PetscCall(PetscStrcmp(error, "nonsquare", &set));
  if (set) PetscCall(NetSetLayers(net, "dense:4"));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  if (!set && !error[0]) PetscCall(NetSetLayers(net, "dense:6,tanh,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecGetOwnershipRange(X, &rs, &re));
  PetscCall(VecGetArrayWrite(X, &a));
  for (PetscInt i = rs; i < re; i++) a[i - rs] = PetscSinReal(0.37 * i + 0.1);
  PetscCall(VecRestoreArrayWrite(X, &a));
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetGetJacobian(net, &J));
  PetscCall(VecDuplicate(X, &D));
  if (blocks)
    PetscCall(NetCreateJacobianBlockDiagonal(net, &B));
  else
    PetscCall(MatGetDiagonal(J, D));

  /* The reference: J e_i, entry i, for every global column i */
  PetscCall(VecGetSize(X, &N));
  PetscCall(VecDuplicate(X, &E));
  PetscCall(VecDuplicate(Y, &JE));
  PetscCall(VecDuplicate(Y, &BE));
  for (PetscInt i = 0; i < N; i++) {
    PetscScalar v;

    PetscCall(VecZeroEntries(E));
    PetscCall(VecSetValue(E, i, 1.0, INSERT_VALUES));
    PetscCall(VecAssemblyBegin(E));
    PetscCall(VecAssemblyEnd(E));
    PetscCall(MatMult(J, E, JE));
    if (blocks) { /* the whole column: B holds every nonzero of a pointwise Net's J */
      PetscCall(MatMult(B, E, BE));
      PetscCall(VecAXPY(BE, -1.0, JE));
      PetscCall(VecNorm(BE, NORM_INFINITY, &nr));
      PetscCall(VecNorm(JE, NORM_INFINITY, &nb));
      d[2] = PetscMax(d[2], nr);
      d[3] = PetscMax(d[3], nb);
    } else if (i >= rs && i < re) {
      const PetscScalar *je, *dd;

      PetscCall(VecGetArrayRead(JE, &je));
      PetscCall(VecGetArrayRead(D, &dd));
      v    = je[i - rs];
      d[0] = PetscMax(d[0], PetscAbsScalar(dd[i - rs] - v));
      d[1] = PetscMax(d[1], PetscAbsScalar(v));
      PetscCall(VecRestoreArrayRead(D, &dd));
      PetscCall(VecRestoreArrayRead(JE, &je));
    }
  }
  PetscCall(MPIU_Allreduce(d, all, 4, MPIU_REAL, MPIU_MAX, comm));
  if (blocks) {
    PetscCheck(all[3] > 0 && all[2] <= 1e-13 * all[3], comm, PETSC_ERR_PLIB, "NetCreateJacobianBlockDiagonal() differs from the probed Jacobian by %g (max %g)", (double)all[2], (double)all[3]);
    PetscCall(PetscPrintf(comm, "NetCreateJacobianBlockDiagonal equals the Jacobian shell column by column (%" PetscInt_FMT " columns) to <= 1e-13 relative\n", N));
  } else {
    PetscCheck(all[1] > 0 && all[0] <= 1e-13 * all[1], comm, PETSC_ERR_PLIB, "MatGetDiagonal() of the Net's Jacobian differs from the probed diagonal by %g (max %g)", (double)all[0], (double)all[1]);
    PetscCall(PetscPrintf(comm, "MatGetDiagonal of the Jacobian shell equals the probed diagonal (%" PetscInt_FMT " columns) to <= 1e-13 relative\n", N));
  }

  /* A PDE-like operator A + J: A = 1-D Laplacian over the samples, dof c, diagonal 4 (a simulation's assembled part) */
  PetscCall(VecGetLocalSize(X, &n));
  PetscCall(MatCreateAIJ(comm, n, n, N, N, 3, NULL, 2, NULL, &A));
  for (PetscInt i = rs; i < re; i++) {
    PetscCall(MatSetValue(A, i, i, 4.0, INSERT_VALUES));
    if (i - c >= 0) PetscCall(MatSetValue(A, i, i - c, -1.0, INSERT_VALUES));
    if (i + c < N) PetscCall(MatSetValue(A, i, i + c, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  mats[0] = A;
  mats[1] = J;
  PetscCall(MatCreateComposite(comm, 2, mats, &C));
  PetscCall(VecDuplicate(X, &b));
  PetscCall(VecDuplicate(X, &x));
  PetscCall(VecDuplicate(X, &r));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(comm, &ksp));
  if (blocks) { /* the preconditioning matrix A + B, assembled */
    PetscCall(MatConvert(A, MATAIJ, MAT_INITIAL_MATRIX, &P));
    PetscCall(MatAXPY(P, 1.0, B, DIFFERENT_NONZERO_PATTERN));
  }
  PetscCall(KSPSetOperators(ksp, C, blocks ? P : C));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 200));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(MatMult(C, x, r));
  PetscCall(VecAXPY(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &nr));
  PetscCall(VecNorm(b, NORM_2, &nb));
  PetscCheck(reason > 0 && nr <= 1e-8 * nb, comm, PETSC_ERR_PLIB, "KSP on A + J: reason %s, true residual %g", KSPConvergedReasons[reason], (double)(nr / nb));
  {
    PetscInt its, most = -1;

    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-most_its", &most, NULL));
    PetscCheck(most < 0 || its <= most, comm, PETSC_ERR_PLIB, "KSP on A + J took %" PetscInt_FMT " iterations, more than %" PetscInt_FMT, its, most);
    if (most >= 0) PetscCall(PetscPrintf(comm, "KSP iterations <= %" PetscInt_FMT "\n", most));
  }
  {
    PC     pc;
    PCType type;

    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCGetType(pc, &type));
    PetscCall(PetscPrintf(comm, "KSP with -pc_type %s on A + J (MATCOMPOSITE)%s: converged, true residual <= 1e-8\n", type, blocks ? ", preconditioned by A + B assembled" : ""));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&P));
  PetscCall(VecDestroy(&BE));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&A));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&E));
  PetscCall(VecDestroy(&JE));
  PetscCall(VecDestroy(&D));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
