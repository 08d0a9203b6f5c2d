static const char help[] = "A CosmoFlow-like 3-D regression: learn (log A, n) from a Gaussian random field with P(k) = A k^-n.\n"
                           "-cosmo3d_mode train (default): a 3-D CNN in grid mode (NetSetGrid(): each field spread over the ranks of a\n"
                           "spatial group, -net_spatial_groups G groups data parallel; -net_layers to change it) is trained with Adam on\n"
                           "fields drawn on the fly and measured on held-out fields (examples/cosmo3d/cosmo3dtrain.c):\n"
                           "  -cosmo3d_iterations K          training steps (default 1000)\n"
                           "  -cosmo3d_batch B               fields per group in a step (default 8)\n"
                           "  -cosmo3d_test T                held-out fields (default 128)\n"
                           "  -cosmo3d_train_monitor M       print the loss every M steps\n"
                           "  -tao_type nls|ntr -cosmo3d_hessian gn|exact   Newton-CG on the Gauss-Newton or exact Hessian (matrix-free,\n"
                           "                                 LossCreateNetHessian()): K Newton iterations on one batch drawn once, or\n"
                           "  -cosmo3d_newton_steps k        k iterations on each of ceil(K/k) batches (TAO's full-batch types all do this)\n"
                           "  ends with: summary: grid= ranks= rel_error= rel_error_A= rel_error_n= first_loss= train_loss= train_time_s= step_time_s= ...\n"
                           "-cosmo3d_mode data: the data side alone: draws the samples, generates their fields on a periodic N^3 DMDA spread\n"
                           "over the ranks (examples/cosmo3d/cosmo3dfields.h: units, normalisation, channels), and measures the classical\n"
                           "estimate of (log A, n), a maximum-likelihood fit of each field's power spectrum: the accuracy a network should approach.\n"
                           "  -cosmo3d_grid N                edge of the grid (default 32)\n"
                           "  -cosmo3d_channels C            1 to 4: delta, delta smoothed at R = 1 and 2 cells, lognormal (default 4)\n"
                           "  -cosmo3d_samples S             fields to generate (default 16)\n"
                           "  -cosmo3d_first I               index of the first (default 0): sample i is drawn from (seed, i) alone\n"
                           "  -cosmo3d_seed s                the data set's seed (default 1)\n"
                           "  -cosmo3d_logA_range lo,hi      log A uniform in [lo, hi] (natural log; default -1,1)\n"
                           "  -cosmo3d_n_range lo,hi         n uniform in [lo, hi] (default 1,3)\n"
                           "  -cosmo3d_baseline <bool>       fit each field's spectrum (default true)\n"
                           "  -cosmo3d_monitor               print each sample\n"
                           "Relative errors: |A_fit/A - 1| = |exp(logA_fit - logA) - 1| and |n_fit - n| / n, averaged over the samples.\n"
                           "The data mode ends with one line: fields: key=value ...\n";

#include <petscdmda.h>
#include <petsctime.h>
#include "cosmo3d/cosmo3dfields.h"
#include "cosmo3d/cosmo3dtrain.h"

typedef enum { COSMO3D_TRAIN, COSMO3D_DATA } Cosmo3dMode;
static const char *const Cosmo3dModes[] = {"train", "data", "Cosmo3dMode", "COSMO3D_", NULL};

int main(int argc, char **argv)
{
  PetscInt        N = 32, channels = 4, samples = 16, first = 0, seed = 1, nbins, two = 2;
  PetscReal       logArange[2] = {-1, 1}, nrange[2] = {1, 3}, errA = 0, errn = 0, errA2 = 0, errn2 = 0, tsetup = 0, tgen = 0, tfit = 0;
  PetscBool       baseline = PETSC_TRUE, monitor = PETSC_FALSE, set;
  PetscMPIInt     size;
  DM              da;
  Vec             field;
  PetscReal      *k, *power;
  PetscInt64     *count;
  PetscLogDouble  t0, t1;
  Cosmo3dMode     mode       = COSMO3D_TRAIN;
  PetscInt        iterations = 1000, batch = 8, test = 128, tmonitor = 0, newtonsteps = 0;
  LossHessianType hessian    = LOSS_HESSIAN_GN;
  PetscBool       hessianset = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "CosmoFlow-like 3-D regression: the data", NULL);
  PetscCall(PetNetOptionsBoundedInt("-cosmo3d_grid", "edge of the grid (at least 4)", NULL, N, &N, NULL, 4));
  PetscCall(PetNetOptionsInt("-cosmo3d_channels", "channels (1 to 4)", NULL, channels, &channels, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_samples", "fields to generate", NULL, samples, &samples, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_first", "index of the first sample", NULL, first, &first, NULL));
  PetscCall(PetNetOptionsBoundedInt("-cosmo3d_seed", "the data set's seed", NULL, seed, &seed, NULL, 0));
  PetscCall(PetscOptionsRealArray("-cosmo3d_logA_range", "log A uniform in [lo, hi]", NULL, logArange, (two = 2, &two), &set));
  PetscCheck(!set || two == 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-cosmo3d_logA_range takes two numbers lo,hi, not %" PetscInt_FMT, two);
  PetscCall(PetscOptionsRealArray("-cosmo3d_n_range", "n uniform in [lo, hi]", NULL, nrange, (two = 2, &two), &set));
  PetscCheck(!set || two == 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-cosmo3d_n_range takes two numbers lo,hi, not %" PetscInt_FMT, two);
  PetscCall(PetscOptionsBool("-cosmo3d_baseline", "fit each field's spectrum", NULL, baseline, &baseline, NULL));
  PetscCall(PetscOptionsBool("-cosmo3d_monitor", "print each sample", NULL, monitor, &monitor, NULL));
  PetscCall(PetscOptionsEnum("-cosmo3d_mode", "train the network, or the data side alone", NULL, Cosmo3dModes, (PetscEnum)mode, (PetscEnum *)&mode, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_iterations", "training steps", NULL, iterations, &iterations, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_batch", "fields per spatial group in a step", NULL, batch, &batch, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_test", "held-out fields", NULL, test, &test, NULL));
  PetscCall(PetNetOptionsInt("-cosmo3d_train_monitor", "print the loss every this many steps", NULL, tmonitor, &tmonitor, NULL));
  PetscCall(PetscOptionsEnum("-cosmo3d_hessian", "the curvature of the Newton-type TAO types (-tao_type nls, ntr, ...)", "LossCreateNetHessian", LossHessianTypes, (PetscEnum)hessian, (PetscEnum *)&hessian, &hessianset));
  PetscCall(PetNetOptionsBoundedInt("-cosmo3d_newton_steps", "full-batch TAO types: iterations per batch (0: every iteration on one batch)", NULL, newtonsteps, &newtonsteps, NULL, 0));
  PetscOptionsEnd();
  PetscCheck(N >= 4, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_grid %" PetscInt_FMT ": the grid's edge must be at least 4", N);
  PetscCheck(channels >= 1 && channels <= COSMO3D_MAX_CHANNELS, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_channels %" PetscInt_FMT " must be 1 to %d (delta, smoothed at R = 1 and 2 cells, lognormal)", channels, COSMO3D_MAX_CHANNELS);
  PetscCheck(samples >= 1 && first >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_samples %" PetscInt_FMT " must be >= 1 and -cosmo3d_first %" PetscInt_FMT " >= 0", samples, first);
  PetscCheck(logArange[0] <= logArange[1] && logArange[0] >= COSMO3D_LOGA_MIN && logArange[1] <= COSMO3D_LOGA_MAX, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_logA_range %g,%g must be lo <= hi inside [%.1f, %.1f] (the natural log of A)",
             (double)logArange[0], (double)logArange[1], (double)COSMO3D_LOGA_MIN, (double)COSMO3D_LOGA_MAX);
  PetscCheck(nrange[0] <= nrange[1] && nrange[0] >= COSMO3D_N_MIN && nrange[1] <= COSMO3D_N_MAX, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_n_range %g,%g must be lo <= hi inside [%.1f, %.1f]", (double)nrange[0], (double)nrange[1],
             (double)COSMO3D_N_MIN, (double)COSMO3D_N_MAX);

  if (mode == COSMO3D_TRAIN) {
    Cosmo3dTrainOptions opt = {N, channels, batch, iterations, test, tmonitor, seed, {logArange[0], logArange[1]}, {nrange[0], nrange[1]}, hessianset ? (PetscInt)hessian : -1, newtonsteps};
    Cosmo3dTrainResults res;

    PetscCheck(iterations >= 1 && batch >= 1 && test >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-cosmo3d_iterations %" PetscInt_FMT ", -cosmo3d_batch %" PetscInt_FMT " and -cosmo3d_test %" PetscInt_FMT " must be >= 1", iterations, batch,
               test);
    PetscCall(Cosmo3dTrain(&opt, &res));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "summary: grid=%" PetscInt_FMT " channels=%" PetscInt_FMT " ranks=%d groups=%d params=%" PetscInt_FMT " iterations=%" PetscInt_FMT " batch=%" PetscInt_FMT " test=%" PetscInt_FMT
                          " rel_error=%.4f rel_error_A=%.4f rel_error_n=%.4f first_loss=%.4e train_loss=%.4e train_time_s=%.1f step_time_s=%.4f peak_mem_per_rank_mb=%.1f",
                          N, channels, size, res.ngroups, res.nparams, res.iterations, batch * res.ngroups, test, (double)PetscMax(res.errA, res.errn), (double)res.errA, (double)res.errn, (double)res.first_loss, (double)res.train_loss,
                          (double)res.train_time, (double)res.step_time, (double)res.peak_mem_mb));
    { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
      const char *blascore;

      PetscCall(PetNetGetBLASInfo(NULL, &blascore));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
    }
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_BOX, N, N, N, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, channels, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &field));
  nbins = N / 2;
  PetscCall(PetscMalloc3(nbins, &k, nbins, &power, nbins, &count));
  for (PetscInt64 i = first; i < first + samples; i++) {
    PetscReal  logA, n, fitA = 0, fitn = 0;
    PetscInt64 fieldseed;

    PetscCall(Cosmo3dFieldSample(seed, i, logArange, nrange, &logA, &n, &fieldseed));
    PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
    PetscCall(PetscTime(&t0));
    PetscCall(Cosmo3dFieldGenerate(da, logA, n, fieldseed, field));
    PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
    PetscCall(PetscTime(&t1));
    if (i == first)
      tsetup = t1 - t0; /* the first call plans the FFTs and builds the scatter */
    else
      tgen += t1 - t0;
    if (baseline) {
      PetscCall(PetscTime(&t0));
      PetscCall(Cosmo3dFieldPowerSpectrum(da, field, 0, nbins, k, power, count));
      PetscCall(Cosmo3dFieldFitPowerLaw(nbins, k, power, count, &fitA, &fitn));
      PetscCall(PetscTime(&t1));
      tfit += t1 - t0;
      errA += PetscAbsReal(PetscExpReal(fitA - logA) - 1), errn += PetscAbsReal(fitn - n) / n;
      errA2 += PetscSqr(fitA - logA), errn2 += PetscSqr(fitn - n);
    }
    if (monitor) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sample %" PetscInt64_FMT ": logA %+.4f n %.4f seed %" PetscInt64_FMT "; fitted logA %+.4f n %.4f\n", i, (double)logA, (double)n, fieldseed, (double)fitA, (double)fitn));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fields: grid=%" PetscInt_FMT " ranks=%d channels=%" PetscInt_FMT " samples=%" PetscInt_FMT " setup_time_s=%.4f generate_time_s=%.4f", N, size, channels, samples, (double)tsetup,
                        (double)(samples > 1 ? tgen / (samples - 1) : tsetup)));
  if (baseline)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " fit_time_s=%.4f baseline_rel_error_A=%.4f baseline_rel_error_n=%.4f baseline_rms_logA=%.4f baseline_rms_n=%.4f", (double)(tfit / samples), (double)(errA / samples), (double)(errn / samples),
                          (double)PetscSqrtReal(errA2 / samples), (double)PetscSqrtReal(errn2 / samples)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\n"));
  PetscCall(PetscFree3(k, power, count));
  PetscCall(VecDestroy(&field));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
