static const char help[] = "Derivative tests of every layer kind inside small Nets: dot-product test of the input and parameter\n"
                           "Jacobians of the Net and of each layer (<= 1e-12), and central finite differences (<= 1e-6).\n";

#include <petnet.h>

/* Each entry is a whole Net; activations sit between dense layers so their inputs are generic (away from ReLU's kink). */
static const char *specs[] = {"dense:5",
                              "dense:5,relu,dense:3",
                              "dense:5,leakyrelu:0.1,dense:3",
                              "dense:5,tanh,dense:3",
                              "dense:5,sigmoid,dense:3",
                              "dense:5,gelu,dense:3",
                              "dense:5,softplus,dense:3",
                              "dense:5,identity,dense:3",
                              "tanh",
                              "relu",
                              "dense:16,relu,dense:8,tanh,dense:4"};

int main(int argc, char **argv)
{
  PetscInt    nlocal = 3;
  PetNetShape in     = {1, {6}};

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
    Net         net;
    Vec         X;
    PetscRandom rnd;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
    PetscCall(NetSetLayers(net, specs[k]));
    PetscCall(NetSetInputShape(net, &in));
    PetscCall(NetSetSeed(net, 7));
    PetscCall(NetSetFromOptions(net));
    PetscCall(NetSetUp(net));
    PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
    PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
    PetscCall(PetscRandomSetSeed(rnd, 11));
    PetscCall(PetscRandomSeed(rnd));
    PetscCall(VecSetRandom(X, rnd));
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g > 1e-12", specs[k], (double)dot);
    PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference error %g > 1e-6", specs[k], (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-40s dot-product ok, finite differences ok\n", specs[k]));
    PetscCall(VecDestroy(&X));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(NetDestroy(&net));
  }
  PetscCall(PetscFinalize());
  return 0;
}
