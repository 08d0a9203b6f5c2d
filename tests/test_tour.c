static const char help[] = "The README's C tour (\"A short tour\"), compiled as written: the lines between the TOUR markers are the\n"
                           "README's code block verbatim (tests/tourcheck keeps them equal). Ends with one line\n"
                           "summary: epochs=... train_samples=... test_samples=... train_batches=... test_accuracy=... jacobian_lsqr_relres=...\n"
                           "so that the suite checks that the options of the README's tables took effect and that KSPLSQR with the Net's\n"
                           "Jacobian reached its right-hand side.\n";

/* TOUR BEGIN */
#include <petnettrainer.h>

Net     net;
Loss    loss;
Dataset train, test;
Trainer trainer;
Mat     J;
Vec     X, Y, dX, dY;
KSP     ksp;
PC      pc;

/* TOUR PAUSE */

int main(int argc, char **argv)
{
  PetscInt  epochs, ntrain, ntest, nbatches;
  PetscReal testacc, relres;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  /* TOUR RESUME */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:256,relu,dense:128,relu,dense:10")); /* or -net_layers ... */
  PetscCall(NetSetFromOptions(net));                                      /* -layer0_dense_init xavier, -net_seed 3, ... */

  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &train)); /* kinds: idx, binary, hdf5, memory */
  PetscCall(DatasetIDXSetDirectory(train, "/usr/share/datasets/fashion-mnist", "train"));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetCreate(PETSC_COMM_WORLD, &test));
  PetscCall(DatasetIDXSetDirectory(test, "/usr/share/datasets/fashion-mnist", "t10k"));

  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss)); /* -loss_type crossentropy|mse|l1 */

  PetscCall(TrainerCreate(PETSC_COMM_WORLD, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test)); /* prefixes train_ and test_: -train_dataset_limit */
  PetscCall(TrainerSetFromOptions(trainer));           /* -tao_type adam -tao_adam_lr 1e-3 -trainer_epochs 10 */
  PetscCall(TrainerTrain(trainer));

  /* the trained Net is an operator: its Jacobian at a point is a Mat that PETSc's solvers take */
  PetscCall(NetCreateVecs(net, 1, &X, &Y)); /* one sample on this rank: 784 inputs, 10 logits */
  PetscCall(VecSet(X, 0.5));
  PetscCall(NetForward(net, X, Y));   /* the linearization point */
  PetscCall(NetGetJacobian(net, &J)); /* MATSHELL: MatMult = JVP, MatMultTranspose = VJP */
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecSet(dY, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp)); /* the smallest dX with J dX = dY: each logit up by 1 */
  PetscCall(KSPSetOperators(ksp, J, J));
  PetscCall(KSPSetType(ksp, KSPLSQR));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetFromOptions(ksp)); /* -ksp_monitor, -ksp_rtol, ... */
  PetscCall(KSPSolve(ksp, dY, dX));
  /* TOUR END */

  { /* |J dX - dY| / |dY|: the least-squares solve above reached the tangent it asked for */
    Vec       r;
    PetscReal rnorm, bnorm;

    PetscCall(VecDuplicate(dY, &r));
    PetscCall(MatMult(J, dX, r));
    PetscCall(VecAXPY(r, -1.0, dY));
    PetscCall(VecNorm(r, NORM_2, &rnorm));
    PetscCall(VecNorm(dY, NORM_2, &bnorm));
    relres = rnorm / bnorm;
    PetscCall(VecDestroy(&r));
  }
  PetscCall(TrainerGetResults(trainer, &epochs, NULL, NULL, &testacc, NULL));
  PetscCall(DatasetGetSize(train, &ntrain));
  PetscCall(DatasetGetSize(test, &ntest));
  PetscCall(DatasetGetNumBatches(train, &nbatches));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: epochs=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " train_batches=%" PetscInt_FMT " test_accuracy=%.4f jacobian_lsqr_relres=%.2e\n", epochs, ntrain, ntest,
                        nbatches, (double)testacc, (double)relres));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&dY));
  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(PetscFinalize());
  return 0;
}
