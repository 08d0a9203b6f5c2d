static const char help[] = "Times one layer's forward + backward (dx and dtheta) in double (LayerForwardArray(), LayerBackwardArray()) and in\n"
                           "single precision (LayerForwardSingle(), LayerBackwardSingle(): the kind's float kernels, or the converting fallback)\n"
                           "on one rank, and prints the speed-up:\n"
                           "  -bench_layer SPEC    the layer, kind:arguments as in -net_layers (default conv2d:32:3:1:1)\n"
                           "  -bench_shape SHAPE   a sample's input shape (default 28x28x1)\n"
                           "  -bench_batch N       samples (default 128)\n"
                           "  -bench_repeat R      timed repetitions, the best kept (default 10)\n"
                           "  -bench_training B    training mode (batchnorm's batch statistics; default true)\n"
                           "  -bench_dx B          backward computes dx (default true; false: as for a network's first layer)\n"
                           "The layer's options apply (-conv2d_algorithm, -conv2d_max_workspace, -net_threads N). Ends with one line:\n"
                           "summary: key=value ...   e.g. bin/bench_single -bench_layer conv2d:64:3 -bench_shape 14x14x32\n";

#include <petnet.h>

/*
  seconds of one forward + backward (and of its forward alone), the best of the repetitions, in double (single false)
  or single precision; no dx when dx and dxf are NULL
*/
static PetscErrorCode TimeStep(Layer layer, PetscInt n, PetscInt repeat, PetscBool single, const PetscScalar *theta, PetscScalar *dtheta, const PetscScalar *x, PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, const float *xf, float *yf,
                               const float *dyf, float *dxf, PetscReal *seconds, PetscReal *forward)
{
  PetscFunctionBegin;
  *seconds = *forward = PETSC_MAX_REAL;
  for (PetscInt r = 0; r < repeat + 1; r++) { /* the first is a warm-up (workspace) */
    PetscLogDouble t0, t1, t2;

    PetscCall(PetscTime(&t0));
    if (single) {
      float *dxs[1] = {dxf};

      PetscCall(LayerForwardSingle(layer, n, theta, &xf, yf));
      PetscCall(PetscTime(&t1));
      PetscCall(LayerBackwardSingle(layer, n, theta, &xf, yf, dyf, dxs, dtheta));
    } else {
      PetscCall(LayerForwardArray(layer, n, theta, x, y));
      PetscCall(PetscTime(&t1));
      PetscCall(LayerBackwardArray(layer, n, theta, x, y, dy, dx, dtheta));
    }
    PetscCall(PetscTime(&t2));
    if (r) *seconds = PetscMin(*seconds, (PetscReal)(t2 - t0));
    if (r) *forward = PetscMin(*forward, (PetscReal)(t1 - t0));
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt     n = 128, repeat = 10, np, insize, outsize, nthreads = 1;
  Layer        layer;
  PetNetShape  in;
  PetscScalar *theta, *dtheta, *x, *y, *dy, *dx;
  float       *xf, *yf, *dyf, *dxf;
  PetscReal    td, ts, tdf, tsf;
  PetscBool    training = PETSC_TRUE, withdx = PETSC_TRUE, has;
  char         spec[128] = "conv2d:32:3:1:1", shape[64] = "28x28x1", kind[128], *colon;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "single-precision layer benchmark", NULL);
  PetscCall(PetscOptionsString("-bench_layer", "The layer, kind:arguments", NULL, spec, spec, sizeof(spec), NULL));
  PetscCall(PetscOptionsString("-bench_shape", "A sample's input shape", NULL, shape, shape, sizeof(shape), NULL));
  PetscCall(PetNetOptionsInt("-bench_batch", "Samples", NULL, n, &n, NULL));
  PetscCall(PetNetOptionsInt("-bench_repeat", "Timed repetitions", NULL, repeat, &repeat, NULL));
  PetscCall(PetscOptionsBool("-bench_training", "Training mode", NULL, training, &training, NULL));
  PetscCall(PetscOptionsBool("-bench_dx", "Backward computes dx", NULL, withdx, &withdx, NULL));
  PetscCall(PetNetOptionsInt("-net_threads", "Threads of the layers' loops", "PetNetSetNumThreads", 1, &nthreads, NULL));
  PetscOptionsEnd();
  PetscCall(PetNetSetNumThreads(nthreads));

  PetscCall(PetscStrncpy(kind, spec, sizeof(kind)));
  colon = strchr(kind, ':');
  if (colon) *colon = 0;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
  PetscCall(LayerSetType(layer, kind));
  if (colon) PetscCall(LayerSetArguments(layer, colon + 1));
  PetscCall(LayerSetFromOptions(layer));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerSetUp(layer));
  PetscCall(LayerSetTraining(layer, training));
  PetscCall(LayerHasSingle(layer, &has));
  PetscCall(LayerGetNumParameters(layer, &np));
  PetscCall(PetNetShapeSize(&in, &insize));
  {
    PetNetShape out;

    PetscCall(LayerGetOutputShape(layer, &out));
    PetscCall(PetNetShapeSize(&out, &outsize));
  }
  PetscCall(PetscMalloc6(np + 1, &theta, np + 1, &dtheta, (size_t)n * insize, &x, (size_t)n * outsize, &y, (size_t)n * outsize, &dy, (size_t)n * insize, &dx));
  PetscCall(PetscMalloc4((size_t)n * insize, &xf, (size_t)n * outsize, &yf, (size_t)n * outsize, &dyf, (size_t)n * insize, &dxf));
  for (PetscInt i = 0; i < np; i++) theta[i] = 0.1 * PetscSinReal(1.3 * i) + 0.5;
  for (PetscInt i = 0; i < n * insize; i++) xf[i] = (float)(x[i] = (float)PetscSinReal(0.7 * i + 0.3));
  for (PetscInt i = 0; i < n * outsize; i++) dyf[i] = (float)(dy[i] = (float)PetscCosReal(0.9 * i + 0.4));
  PetscCall(PetscArrayzero(dtheta, np + 1));

  PetscCall(TimeStep(layer, n, repeat, PETSC_FALSE, theta, dtheta, x, y, dy, withdx ? dx : NULL, xf, yf, dyf, withdx ? dxf : NULL, &td, &tdf));
  PetscCall(TimeStep(layer, n, repeat, PETSC_TRUE, theta, dtheta, x, y, dy, withdx ? dx : NULL, xf, yf, dyf, withdx ? dxf : NULL, &ts, &tsf));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s on %s, batch %" PetscInt_FMT ", %" PetscInt_FMT " thread(s): forward + backward%s double %.3f ms, single %.3f ms (%s), speed-up %.2fx; forward alone double %.3f ms, single %.3f ms\n", spec, shape, n,
                        nthreads, withdx ? "" : " without dx", (double)(1e3 * td), (double)(1e3 * ts), has ? "float kernels" : "converting fallback", (double)(td / ts), (double)(1e3 * tdf), (double)(1e3 * tsf)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: layer=%s shape=%s batch=%" PetscInt_FMT " threads=%" PetscInt_FMT " dx=%d double_ms=%.3f single_ms=%.3f speedup=%.2f float_kernels=%d forward_double_ms=%.3f forward_single_ms=%.3f", spec, shape, n,
                        nthreads, (int)withdx, (double)(1e3 * td), (double)(1e3 * ts), (double)(td / ts), (int)has, (double)(1e3 * tdf), (double)(1e3 * tsf)));
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }
  PetscCall(PetscFree4(xf, yf, dyf, dxf));
  PetscCall(PetscFree6(theta, dtheta, x, y, dy, dx));
  PetscCall(LayerDestroy(&layer));
  PetscCall(PetscFinalize());
  return 0;
}
