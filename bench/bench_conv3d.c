static const char help[] = "Times a conv3d layer in batch mode (vol2col + dgemm in chunks of output rows) on one rank:\n"
                           "  -bench_size S       volumes of S x S x S points (default 32)\n"
                           "  -bench_cin C        input channels (default 4)\n"
                           "  -bench_cout C       output channels (default 16)\n"
                           "  -bench_kernel K     kernel K x K x K, padding K/2, stride 1 (default 3): the layer is conv3d:COUT:K:1:K/2\n"
                           "  -bench_batch N      samples (default 4)\n"
                           "  -bench_repeat R     timed repetitions of each phase (default 5)\n"
                           "Phases: forward (y = conv(x; W) + b) and backward (dW, db and dx); the layer's options apply\n"
                           "(-conv3d_max_workspace MB, the chunk size). GFLOP/s count the GEMMs' 2 N Do Ho Wo K^3 Cin Cout per pass\n"
                           "(forward one pass, backward two). Ends with one line: summary: key=value ...\n"
                           "  e.g. OPENBLAS_NUM_THREADS=1 bin/bench_conv3d\n";

#include <petnet.h>

/* seconds per call of phase 0 (forward) or 1 (backward, with dx), the best of the repetitions */
static PetscErrorCode TimePhase(Layer layer, PetscInt n, PetscInt phase, PetscInt repeat, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta, PetscReal *seconds)
{
  PetscFunctionBegin;
  *seconds = PETSC_MAX_REAL;
  for (PetscInt r = 0; r < repeat; r++) {
    PetscLogDouble t0, t1;

    PetscCall(PetscTime(&t0));
    if (phase == 0)
      PetscCall(LayerForwardArray(layer, n, theta, x, y));
    else
      PetscCall(LayerBackwardArray(layer, n, theta, x, y, dy, dx, dtheta));
    PetscCall(PetscTime(&t1));
    *seconds = PetscMin(*seconds, (PetscReal)(t1 - t0));
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt     S = 32, cin = 4, cout = 16, K = 3, n = 4, repeat = 5, np, insize, outsize;
  Layer        layer;
  PetNetShape  in, out;
  PetscScalar *theta, *dtheta, *x, *y, *dy, *dx;
  PetscReal    tf, tb, flops;
  char         args[64], shape[64];

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "conv3d benchmark", NULL);
  PetscCall(PetNetOptionsInt("-bench_size", "Points per direction of a volume", NULL, S, &S, NULL));
  PetscCall(PetNetOptionsInt("-bench_cin", "Input channels", NULL, cin, &cin, NULL));
  PetscCall(PetNetOptionsInt("-bench_cout", "Output channels", NULL, cout, &cout, NULL));
  PetscCall(PetNetOptionsInt("-bench_kernel", "Kernel size", NULL, K, &K, NULL));
  PetscCall(PetNetOptionsInt("-bench_batch", "Samples", NULL, n, &n, NULL));
  PetscCall(PetNetOptionsInt("-bench_repeat", "Timed repetitions", NULL, repeat, &repeat, NULL));
  PetscOptionsEnd();

  in = (PetNetShape){4, {S, S, S, cin}};
  PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
  PetscCall(LayerSetType(layer, LAYERCONV3D));
  PetscCall(PetscSNPrintf(args, sizeof(args), "%" PetscInt_FMT ":%" PetscInt_FMT ":1:%" PetscInt_FMT, cout, K, K / 2));
  PetscCall(LayerSetArguments(layer, args));
  PetscCall(LayerSetFromOptions(layer));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerSetUp(layer));
  PetscCall(LayerGetNumParameters(layer, &np));
  PetscCall(LayerGetOutputShape(layer, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(PetscMalloc6(np, &theta, np, &dtheta, (size_t)n * insize, &x, (size_t)n * outsize, &y, (size_t)n * outsize, &dy, (size_t)n * insize, &dx));
  for (PetscInt i = 0; i < np; i++) theta[i] = 0.1 * PetscSinReal(1.3 * i);
  for (PetscInt i = 0; i < n * insize; i++) x[i] = PetscSinReal(0.7 * i + 0.3);
  for (PetscInt i = 0; i < n * outsize; i++) dy[i] = PetscCosReal(0.9 * i + 0.4);
  PetscCall(PetscArrayzero(dtheta, np));

  PetscCall(LayerForwardArray(layer, n, theta, x, y)); /* warm-up: allocates the workspace */
  PetscCall(TimePhase(layer, n, 0, repeat, theta, x, y, dy, dx, dtheta, &tf));
  PetscCall(TimePhase(layer, n, 1, repeat, theta, x, y, dy, dx, dtheta, &tb));
  flops = 2.0 * n * (outsize / cout) * K * K * K * cin * cout;
  PetscCall(PetNetShapeToString(&out, sizeof(shape), shape));
  PetscCall(LayerView(layer, PETSC_VIEWER_STDOUT_SELF));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "forward   %8.4f s  %6.2f GFLOP/s\n", (double)tf, (double)(flops / tf / 1e9)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "backward  %8.4f s  %6.2f GFLOP/s (dW and dx)\n", (double)tb, (double)(2 * flops / tb / 1e9)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: layer=conv3d:%s input=%" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT " output=%s batch=%" PetscInt_FMT " forward_s=%.4f backward_s=%.4f fwdbwd_s=%.4f fwdbwd_gflops=%.2f",
                        args, S, S, S, cin, shape, n, (double)tf, (double)tb, (double)(tf + tb), (double)(3 * flops / (tf + tb) / 1e9)));
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }
  PetscCall(PetscFree6(theta, dtheta, x, y, dy, dx));
  PetscCall(LayerDestroy(&layer));
  PetscCall(PetscFinalize());
  return 0;
}
