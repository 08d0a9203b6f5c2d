static const char help[] = "A program outside PetNet's tree, built against an installed PetNet (tests/install.sh): a Net from a\n"
                           "layer list, every parameter set to 0.1, one forward pass over 8 samples split over the ranks;\n"
                           "prints the sum of the outputs, which the test compares with the same formula in Python.\n";

#include <petnet.h>

int main(int argc, char **argv)
{
  const PetNetShape in      = {1, {4}};
  const PetscInt    nglobal = 8, nfeat = 4;
  PetscInt          nlocal, rstart, rend;
  PetscMPIInt       size;
  Net               net;
  Vec               X, Y, theta;
  PetscScalar      *x, sum;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(nglobal % size == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_SIZ, "Run on 1, 2, 4 or 8 ranks, not %d", size);
  nlocal = nglobal / size;

  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:3,tanh,dense:1"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecSet(theta, 0.1));

  /* X[s][j] = 0.1 (s + 1) (j + 1) for the global sample s and feature j */
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecGetOwnershipRange(X, &rstart, &rend));
  PetscCall(VecGetArray(X, &x));
  for (PetscInt i = rstart; i < rend; i++) x[i - rstart] = 0.1 * (i / nfeat + 1) * (i % nfeat + 1);
  PetscCall(VecRestoreArray(X, &x));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecSum(Y, &sum));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sum of outputs: %.10f\n", (double)sum));

  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
