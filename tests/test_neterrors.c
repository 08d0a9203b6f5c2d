static const char help[] = "Bad input must stop with an error that tells the user what to change (run by the core_*_error tests).\n"
                           "Without -case: a Net from the options (-net_layers, -net_input_shape) runs forward, loss and backward on\n"
                           "-nlocal samples per rank; malformed options must fail on the way. With -case:\n"
                           "  bad_input        an input Vec whose local size is not a multiple of the sample size (on rank -bad_rank)\n"
                           "  backward_first   NetBackward before any NetForward\n"
                           "  jvp_first        NetJVP before any NetForward\n"
                           "  loss_target      LossEvaluate (mse) with a target of the wrong size\n"
                           "  grad_layout      NetBackward with a gradient Vec that is not laid out like the parameters\n"
                           "  input_changed    the input Vec changed between NetForward and NetBackward\n"
                           "  jacobian_reset   a Jacobian (and a node's) held past NetReset(), then applied\n"
                           "  jacobian_held    the same, only released after NetDestroy() (no error, no leak)\n";

#include <petnet.h>

int main(int argc, char **argv)
{
  char        name[64] = "none";
  PetscInt    nlocal = 2, insize, outsize, extra = 0, badrank = 0, P;
  PetscMPIInt rank;
  PetNetShape in, out;
  Net         net;
  Loss        loss;
  Vec         X, Y, T, dY, G;
  PetscReal   f;
  PetscBool   match;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", name, sizeof(name), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-bad_rank", &badrank, NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(NetGetNumParameters(net, &P));

  PetscCall(PetscStrcmp(name, "bad_input", &match));
  if (match && rank == badrank) extra = 1;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nlocal * insize + extra, PETSC_DETERMINE, &X));
  PetscCall(VecSet(X, 0.5));
  PetscCall(NetCreateVecs(net, nlocal, NULL, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecSet(dY, 1.0));
  PetscCall(NetCreateParameterVec(net, &G));

  PetscCall(PetscStrcmp(name, "backward_first", &match));
  if (match) PetscCall(NetBackward(net, dY, NULL, G));
  PetscCall(PetscStrcmp(name, "jvp_first", &match));
  if (match) PetscCall(NetJVP(net, X, NULL, Y));

  PetscCall(NetForward(net, X, Y));

  PetscCall(LossCreate(PETSC_COMM_WORLD, &loss));
  PetscCall(PetscStrcmp(name, "loss_target", &match));
  if (match) { /* one entry short on every rank */
    PetscCall(LossSetType(loss, LOSSMSE));
    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nlocal * outsize - 1, PETSC_DETERMINE, &T));
  } else {
    PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nlocal, PETSC_DETERMINE, &T));
  }
  PetscCall(VecSet(T, 0.0));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));

  PetscCall(PetscStrcmp(name, "grad_layout", &match));
  if (match) {
    PetscCall(VecDestroy(&G));
    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, P + 1, &G));
  }
  PetscCall(VecZeroEntries(G));
  PetscCall(PetscStrcmp(name, "input_changed", &match));
  if (match) PetscCall(VecScale(X, 2.0)); /* the Net keeps a reference to X as its linearization point */
  PetscCall(NetBackward(net, dY, NULL, G));
  {
    PetscBool reset, held;
    Mat       J, JL;

    PetscCall(PetscStrcmp(name, "jacobian_reset", &reset));
    PetscCall(PetscStrcmp(name, "jacobian_held", &held));
    if (reset || held) {
      PetscCall(NetGetJacobian(net, &J));
      PetscCall(NetGetLayerJacobianP(net, 0, &JL));
      PetscCall(PetscObjectReference((PetscObject)J));
      PetscCall(PetscObjectReference((PetscObject)JL));
      PetscCall(NetReset(net));
      if (reset) PetscCall(MatMult(J, X, Y));
      if (held) {
        PetscCall(NetDestroy(&net));
        PetscCall(MatDestroy(&J));
        PetscCall(MatDestroy(&JL));
      }
    }
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "loss %g: no error\n", (double)f));

  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&G));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
