static const char help[] = "Times a Net's forward + backward (NetForward(), NetBackward(): dX and the parameter gradient) at single or bfloat16\n"
                           "precision on each GEMM backend (NetSetBackend(): native, then onednn), on one rank, and prints the ratio:\n"
                           "  -net_layers, -net_input_shape, -net_precision ...  the Net, as any program reads it (default precision single)\n"
                           "  -bench_batch N       samples (default 32)\n"
                           "  -bench_repeat R      timed repetitions of each backend, the best kept (default 10), after one warm-up\n"
                           "The two backends alternate repetition by repetition, so that a change of the machine's load falls on both.\n"
                           "-log_view splits the time by layer kind and phase (attention:Forward, ...). Ends with one line:\n"
                           "summary: key=value ...   e.g. bin/bench_backend -net_layers attention:4 -net_input_shape 128x128\n";

#include <petnet.h>

/* one forward + backward, in seconds */
static PetscErrorCode Step(Net net, Vec X, Vec Y, Vec dY, Vec dX, Vec G, PetscLogDouble *seconds)
{
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscCall(PetscTime(&t0));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, dX, G));
  PetscCall(PetscTime(&t1));
  *seconds = t1 - t0;
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net            net;
  Vec            X, Y, dY, dX, G;
  PetscInt       n = 32, repeat = 10;
  PetscMPIInt    size;
  NetPrecision   precision;
  PetscLogDouble best[2] = {PETSC_MAX_REAL, PETSC_MAX_REAL}, t = 0;
  PetscRandom    rnd;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_SUP, "bin/bench_backend times one rank: run it without mpiexec -n %d", (int)size);
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "GEMM backend benchmark", NULL);
  PetscCall(PetNetOptionsInt("-bench_batch", "Samples", NULL, n, &n, NULL));
  PetscCall(PetNetOptionsInt("-bench_repeat", "Timed repetitions of each backend", NULL, repeat, &repeat, NULL));
  PetscOptionsEnd();
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetPrecision(net, NET_PRECISION_SINGLE)); /* the default here; -net_precision overrides it */
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCheck(precision != NET_PRECISION_DOUBLE, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "The backend runs the float GEMMs: give -net_precision single or bfloat16, not double");
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(VecSetRandom(X, rnd));
  PetscCall(VecSetRandom(dY, rnd));
  for (PetscInt r = 0; r < repeat + 1; r++) { /* the first of each backend is a warm-up (primitives, workspace) */
    for (PetscInt b = 0; b < 2; b++) {
      PetscCall(NetSetBackend(net, b ? NET_BACKEND_ONEDNN : NET_BACKEND_NATIVE));
      PetscCall(Step(net, X, Y, dY, dX, G, &t));
      if (r) best[b] = PetscMin(best[b], t);
    }
  }
  {
    const char *blascore;
    char        shape[64];
    PetNetShape in;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(NetGetInputShape(net, &in));
    PetscCall(PetNetShapeToString(&in, sizeof(shape), shape));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "forward + backward of %" PetscInt_FMT " samples of %s in %s, best of %" PetscInt_FMT ": native %.3f ms, onednn %.3f ms (onednn / native %.2f)\n", n, shape, NetPrecisions[precision], repeat, 1e3 * best[0],
                          1e3 * best[1], best[1] / best[0]));
    PetscCall(
        PetscPrintf(PETSC_COMM_WORLD, "summary: shape=%s batch=%" PetscInt_FMT " precision=%s native_ms=%.3f onednn_ms=%.3f ratio=%.3f blas_core=%s\n", shape, n, NetPrecisions[precision], 1e3 * best[0], 1e3 * best[1], best[1] / best[0], blascore));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
