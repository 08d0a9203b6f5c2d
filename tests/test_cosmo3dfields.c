static const char help[] = "The Gaussian random fields of bin/cosmo3d (examples/cosmo3d/cosmo3dfields.h).\n"
                           "  -case invariance  a field of -dof channels on a -grid Mx,My,Mz DMDA (any -da_processors_*) equals the same\n"
                           "                    field made on one rank (<= 1e-13 of its largest entry, every channel), and so does its\n"
                           "                    power spectrum (<= 1e-12); prints per-channel statistics and the spectral fit\n"
                           "  -case spectrum    on a 64^3 grid: the fitted power law of -realisations fields (logA, n) = (0, 1), (0.5, 2),\n"
                           "                    (-1, 3) is within 0.05 of the truth in logA and in n; the field's variance is the ensemble's\n"
                           "                    (within 20%%); mode by mode (serial FFT of the gathered field): nothing outside 0 < |k| < pi,\n"
                           "                    FFT/sqrt(P V) is a complex standard Gaussian (mean |z|^2, tail fractions, mean, correlation of\n"
                           "                    neighbours), the smoothed channels are channel 0 times exp(-k^2 R^2/2), the lognormal channel\n"
                           "                    is exp(delta - s^2/2) - 1; the module's spectrum equals the serial one\n"
                           "  -case seeds      the same seed gives the same field, another seed another field, logA + 1 the field times\n"
                           "                    e^(1/2); samples are reproducible by index, uniform in their ranges; the same seed on a 16^3\n"
                           "                    and a 32^3 grid has the same modes\n"
                           "  -case error -error dim2|periodic|dof|logA|n|vec|range|collective   bad input (error tests)\n"
                           "  -verbose          print the measured differences\n";

#include <petscdmda.h>
#include <fftw3.h>
#include "../examples/cosmo3d/cosmo3dfields.h"

/* a periodic 3-D DMDA of dof channels (box stencil of width 1, as a 3x3x3 convolution's); on more than one rank, its
   decomposition from the options (-da_processors_x ...) */
static PetscErrorCode CreateGrid(MPI_Comm comm, const PetscInt M[3], PetscInt dof, DM *da)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(DMDACreate3d(comm, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_BOX, M[0], M[1], M[2], PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, NULL, da));
  if (size > 1) PetscCall(DMSetFromOptions(*da));
  PetscCall(DMSetUp(*da));
  PetscFunctionReturn(0);
}

/* *seq = the field v of da in natural order ((z My + y) Mx + x) dof + c, whole on rank 0 (empty elsewhere) */
static PetscErrorCode GatherToZero(DM da, Vec v, Vec *seq)
{
  Vec        natural;
  VecScatter scatter;

  PetscFunctionBegin;
  PetscCall(DMDACreateNaturalVector(da, &natural));
  PetscCall(DMDAGlobalToNaturalBegin(da, v, INSERT_VALUES, natural));
  PetscCall(DMDAGlobalToNaturalEnd(da, v, INSERT_VALUES, natural));
  PetscCall(VecScatterCreateToZero(natural, &scatter, seq));
  PetscCall(VecScatterBegin(scatter, natural, *seq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, natural, *seq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(VecDestroy(&natural));
  PetscFunctionReturn(0);
}

/* F = the unnormalised forward FFT of channel c of a gathered field, half-complex [Mz][My][Mx/2+1] of (re, im) (serial
   FFTW; free with fftw_free()) */
static PetscErrorCode ForwardFFT(const PetscInt M[3], PetscInt dof, const PetscScalar *a, PetscInt c, double **F)
{
  const size_t  V = (size_t)M[0] * M[1] * M[2], nh = (size_t)M[2] * M[1] * (M[0] / 2 + 1);
  double       *in;
  fftw_complex *out;
  fftw_plan     plan;

  PetscFunctionBegin;
  in  = fftw_alloc_real(V);
  out = fftw_alloc_complex(nh);
  PetscCheck(in && out, PETSC_COMM_SELF, PETSC_ERR_MEM, "FFTW could not allocate %zu reals", V);
  plan = fftw_plan_dft_r2c_3d(M[2], M[1], M[0], in, out, FFTW_ESTIMATE);
  for (size_t p = 0; p < V; p++) in[p] = PetscRealPart(a[p * dof + c]);
  fftw_execute(plan);
  fftw_destroy_plan(plan);
  fftw_free(in);
  *F = (double *)out;
  PetscFunctionReturn(0);
}

/* the signed mode of index i on an axis of M points */
static PetscInt Signed(PetscInt i, PetscInt M)
{
  return 2 * i <= M ? i : i - M;
}

/* |k|^2 of mode (mx, my, mz), radians per cell */
static PetscReal K2(const PetscInt M[3], PetscInt mx, PetscInt my, PetscInt mz)
{
  const PetscReal kx = 2 * PETSC_PI * mx / M[0], ky = 2 * PETSC_PI * my / M[1], kz = 2 * PETSC_PI * mz / M[2];

  return kx * kx + ky * ky + kz * kz;
}

/* -case invariance */
static PetscErrorCode TestInvariance(PetscBool verbose)
{
  PetscInt           M[3] = {24, 20, 21}, three = 3, dof = 4, nbins;
  PetscReal          logA = 0.3, n = 2.2, fitA, fitn;
  PetscInt64         seed = 7;
  DM                 da, da1 = NULL;
  Vec                field, all, field1 = NULL;
  PetscReal         *k, *power;
  PetscInt64        *count;
  PetscMPIInt        rank;
  const PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-grid", M, &three, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-dof", &dof, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(CreateGrid(PETSC_COMM_WORLD, M, dof, &da));
  PetscCall(DMCreateGlobalVector(da, &field));
  PetscCall(Cosmo3dFieldGenerate(da, logA, n, seed, field));
  PetscCall(GatherToZero(da, field, &all));
  nbins = PetscMax(M[0], PetscMax(M[1], M[2])) / 2;
  PetscCall(PetscMalloc3(2 * nbins, &k, 2 * nbins, &power, 2 * nbins, &count));
  PetscCall(Cosmo3dFieldPowerSpectrum(da, field, 0, nbins, k, power, count));
  PetscCall(Cosmo3dFieldFitPowerLaw(nbins, k, power, count, &fitA, &fitn));

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "grid %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT ", %" PetscInt_FMT " channels, logA %g, n %g, seed %" PetscInt64_FMT "\n", M[0], M[1], M[2], dof, (double)logA, (double)n, seed));
  if (rank == 0) {
    const PetscInt64   V    = (PetscInt64)M[0] * M[1] * M[2];
    PetscReal          dmax = 0, fmax = 0, pmax = 0;
    const PetscScalar *b;

    /* the same field made on one rank */
    PetscCall(CreateGrid(PETSC_COMM_SELF, M, dof, &da1));
    PetscCall(DMCreateGlobalVector(da1, &field1));
    PetscCall(Cosmo3dFieldGenerate(da1, logA, n, seed, field1));
    PetscCall(VecGetArrayRead(all, &a));
    PetscCall(VecGetArrayRead(field1, &b)); /* one rank: the global order is the natural order */
    for (PetscInt64 p = 0; p < V * dof; p++) {
      dmax = PetscMax(dmax, PetscAbsScalar(a[p] - b[p]));
      fmax = PetscMax(fmax, PetscAbsScalar(b[p]));
    }
    PetscCall(VecRestoreArrayRead(field1, &b));
    PetscCall(Cosmo3dFieldPowerSpectrum(da1, field1, 0, nbins, k + nbins, power + nbins, count + nbins));
    for (PetscInt j = 0; j < nbins; j++) {
      PetscCheck(count[j] == count[nbins + j], PETSC_COMM_SELF, PETSC_ERR_PLIB, "shell %" PetscInt_FMT ": %" PetscInt64_FMT " modes, %" PetscInt64_FMT " on one rank", j, count[j], count[nbins + j]);
      if (count[j]) pmax = PetscMax(pmax, PetscAbsReal(power[j] - power[nbins + j]) / power[nbins + j]);
    }
    if (verbose) PetscCall(PetscPrintf(PETSC_COMM_SELF, "max |field - field on one rank| / max |field| = %.3e, power spectrum %.3e\n", (double)(dmax / fmax), (double)pmax));
    PetscCheck(dmax <= 1e-13 * fmax, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the field differs from the one-rank field by %g of its largest entry (> 1e-13)", (double)(dmax / fmax));
    PetscCheck(pmax <= 1e-12, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the power spectrum differs from the one-rank one by %g (> 1e-12)", (double)pmax);

    /* statistics of each channel */
    for (PetscInt c = 0; c < dof; c++) {
      PetscReal s = 0, s2 = 0, lo = PETSC_MAX_REAL, hi = PETSC_MIN_REAL;

      for (PetscInt64 p = 0; p < V; p++) {
        const PetscReal x = PetscRealPart(a[p * dof + c]);

        s += x, s2 += x * x, lo = PetscMin(lo, x), hi = PetscMax(hi, x);
      }
      PetscCall(PetscPrintf(PETSC_COMM_SELF, "channel %" PetscInt_FMT ": mean %+.8e rms %.10e min %+.10e max %+.10e\n", c, (double)(PetscAbsReal(s / V) < 1e-14 ? 0.0 : s / V), (double)PetscSqrtReal(s2 / V), (double)lo, (double)hi));
    }
    PetscCall(VecRestoreArrayRead(all, &a));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fit of channel 0 over %" PetscInt_FMT " shells: logA %.8f n %.8f\n", nbins, (double)fitA, (double)fitn));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "rank invariance: every channel within 1e-13 of the field made on one rank, the power spectrum within 1e-12\n"));
  PetscCall(PetscFree3(k, power, count));
  PetscCall(VecDestroy(&field1));
  PetscCall(DMDestroy(&da1));
  PetscCall(VecDestroy(&all));
  PetscCall(VecDestroy(&field));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/*
  Mode-by-mode checks of one gathered field of 4 channels (rank 0): nothing outside 0 < |k| < pi; z = F/sqrt(P V) on the
  half space (one mode of each conjugate pair) is a complex standard Gaussian; channels 1 and 2 are channel 0 times the
  Gaussian filters; channel 3 is the lognormal transform of channel 0.
*/
static PetscErrorCode CheckModes(const PetscInt M[3], PetscReal logA, PetscReal n, const PetscScalar *a, PetscBool verbose)
{
  const PetscInt   nx = M[0] / 2 + 1, dof = 4;
  const PetscInt64 V    = (PetscInt64)M[0] * M[1] * M[2];
  const PetscReal  R[3] = {0, COSMO3D_SMOOTHING_R1, COSMO3D_SMOOTHING_R2};
  double          *F[3];
  PetscReal        fmax[3] = {0, 0, 0}, outside = 0, ferr[3] = {0, 0, 0}, z2 = 0, tail1 = 0, tail3 = 0, zre = 0, zim = 0, corr = 0, s2 = 0, lnerr = 0;
  PetscInt64       nz = 0, ncorr = 0;

  PetscFunctionBegin;
  for (PetscInt c = 0; c < 3; c++) PetscCall(ForwardFFT(M, dof, a, c, &F[c]));
  for (PetscInt64 p = 0; p < (PetscInt64)M[2] * M[1] * nx; p++)
    for (PetscInt c = 0; c < 3; c++) fmax[c] = PetscMax(fmax[c], PetscSqrtReal(F[c][2 * p] * F[c][2 * p] + F[c][2 * p + 1] * F[c][2 * p + 1]));
  for (PetscInt iz = 0; iz < M[2]; iz++)
    for (PetscInt iy = 0; iy < M[1]; iy++)
      for (PetscInt mx = 0; mx < nx; mx++) {
        const PetscInt   my = Signed(iy, M[1]), mz = Signed(iz, M[2]);
        const PetscInt64 p  = ((PetscInt64)iz * M[1] + iy) * nx + mx;
        const PetscReal  k2 = K2(M, mx, my, mz), *f0 = F[0] + 2 * p;

        if (k2 == 0 || k2 >= PETSC_PI * PETSC_PI) {
          outside = PetscMax(outside, PetscSqrtReal(f0[0] * f0[0] + f0[1] * f0[1]) / fmax[0]);
          continue;
        }
        for (PetscInt c = 1; c < 3; c++) { /* F_c = exp(-k^2 R^2/2) F_0, to round-off of the largest mode */
          const PetscReal w = PetscExpReal(-0.5 * k2 * R[c] * R[c]);

          ferr[c] = PetscMax(ferr[c], PetscSqrtReal(PetscSqr(F[c][2 * p] - w * f0[0]) + PetscSqr(F[c][2 * p + 1] - w * f0[1])) / fmax[c]);
        }
        if (mx > 0 || my > 0 || (my == 0 && mz > 0)) { /* the half space */
          const PetscReal s = 1 / PetscSqrtReal(PetscExpReal(logA - 0.5 * n * PetscLogReal(k2)) * V), re = s * f0[0], im = s * f0[1], q = re * re + im * im;

          z2 += q, tail1 += q > 1, tail3 += q > 3, zre += re, zim += im, nz++;
          if (mx + 1 < nx && K2(M, mx + 1, my, mz) < PETSC_PI * PETSC_PI) { /* Re(z_m conj(z_m+x)) */
            const PetscReal t = 1 / PetscSqrtReal(PetscExpReal(logA - 0.5 * n * PetscLogReal(K2(M, mx + 1, my, mz))) * V);

            corr += re * t * F[0][2 * p + 2] + im * t * F[0][2 * p + 3], ncorr++;
          }
        }
      }
  z2 /= nz, tail1 /= nz, tail3 /= nz, zre /= nz, zim /= nz, corr /= ncorr;
  for (PetscInt64 p = 0; p < V; p++) s2 += PetscSqr(PetscRealPart(a[p * dof]));
  s2 /= V;
  for (PetscInt64 p = 0; p < V; p++) lnerr = PetscMax(lnerr, PetscAbsReal(log1p(PetscRealPart(a[p * dof + 3])) - PetscRealPart(a[p * dof]) + 0.5 * s2));
  if (verbose)
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "outside the sphere %.2e, smoothing %.2e %.2e, lognormal %.2e; %" PetscInt64_FMT " modes: mean |z|^2 %.4f, P(|z|^2 > 1) %.4f, P(|z|^2 > 3) %.4f, mean z %.4f %+.4f i, neighbours %.4f\n", (double)outside,
                          (double)ferr[1], (double)ferr[2], (double)lnerr, nz, (double)z2, (double)tail1, (double)tail3, (double)zre, (double)zim, (double)corr));
  PetscCheck(outside <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "a mode outside 0 < |k| < pi has %g of the largest mode's amplitude", (double)outside);
  PetscCheck(ferr[1] <= 1e-13 && ferr[2] <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the smoothed channels differ from the filtered channel 0 by %g and %g", (double)ferr[1], (double)ferr[2]);
  PetscCheck(lnerr <= 1e-12, PETSC_COMM_SELF, PETSC_ERR_PLIB, "log(1 + channel 3) - channel 0 differs from -s^2/2 by %g", (double)lnerr);
  /* a complex standard Gaussian: E|z|^2 = 1, P(|z|^2 > t) = e^-t; bounds about 5 standard errors over ~10^5 modes */
  PetscCheck(PetscAbsReal(z2 - 1) <= 0.02 && PetscAbsReal(tail1 - PetscExpReal(-1)) <= 0.01 && PetscAbsReal(tail3 - PetscExpReal(-3)) <= 0.005, PETSC_COMM_SELF, PETSC_ERR_PLIB, "|z|^2 is not Exp(1): mean %g, P(> 1) %g, P(> 3) %g", (double)z2,
             (double)tail1, (double)tail3);
  PetscCheck(PetscAbsReal(zre) <= 0.02 && PetscAbsReal(zim) <= 0.02 && PetscAbsReal(corr) <= 0.02, PETSC_COMM_SELF, PETSC_ERR_PLIB, "z is biased or correlated: mean %g %+g i, neighbours %g", (double)zre, (double)zim, (double)corr);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "modes: none outside 0 < |k| < pi; z = F/sqrt(P V) on %" PetscInt64_FMT " modes: mean |z|^2 %.2f, P(|z|^2 > 1) %.2f, P(|z|^2 > 3) %.3f\n", nz, (double)z2, (double)tail1, (double)tail3));
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "channels 1, 2 = channel 0 times exp(-k^2 R^2/2), R = %.1f, %.1f; channel 3 = exp(delta - s^2/2) - 1, s^2 = %.6f\n", (double)R[1], (double)R[2], (double)s2));
  for (PetscInt c = 0; c < 3; c++) fftw_free(F[c]);
  PetscFunctionReturn(0);
}

/* -case spectrum */
static PetscErrorCode TestSpectrum(PetscBool verbose)
{
  const PetscReal params[3][2] = {{0.0, 1.0}, {0.5, 2.0}, {-1.0, 3.0}};
  PetscInt        M[3] = {64, 64, 64}, three = 3, nbins, realisations = 2;
  DM              da;
  Vec             field, all;
  PetscReal      *k, *power, *ksum, *psum;
  PetscInt64     *count;
  PetscMPIInt     rank;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-grid", M, &three, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-realisations", &realisations, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(CreateGrid(PETSC_COMM_WORLD, M, 4, &da));
  PetscCall(DMCreateGlobalVector(da, &field));
  nbins = PetscMax(M[0], PetscMax(M[1], M[2])) / 2;
  PetscCall(PetscMalloc5(nbins, &k, nbins, &power, nbins, &count, nbins, &ksum, nbins, &psum));
  for (PetscInt t = 0; t < 3; t++) {
    const PetscReal logA = params[t][0], n = params[t][1];
    PetscReal       fitA, fitn, var, ensemble = 0;

    PetscCall(PetscArrayzero(ksum, nbins));
    PetscCall(PetscArrayzero(psum, nbins));
    PetscCall(Cosmo3dFieldVariance(da, logA, n, 0, &ensemble));
    for (PetscInt r = 0; r < realisations; r++) {
      PetscCall(Cosmo3dFieldGenerate(da, logA, n, 11 + r, field));
      PetscCall(Cosmo3dFieldPowerSpectrum(da, field, 0, nbins, k, power, count));
      for (PetscInt j = 0; j < nbins; j++) ksum[j] += k[j] / realisations, psum[j] += power[j] / realisations;
      PetscCall(VecStrideNorm(field, 0, NORM_2, &var));
      var = var * var / ((PetscReal)M[0] * M[1] * M[2]);
      if (verbose) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  realisation %" PetscInt_FMT ": variance %.4f, ensemble %.4f\n", r, (double)var, (double)ensemble));
      PetscCheck(var >= 0.8 * ensemble && var <= 1.25 * ensemble, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "logA %g n %g: the field's variance %g is not the ensemble's %g (within 20%%)", (double)logA, (double)n, (double)var, (double)ensemble);
      if (t == 0 && r == 0) {
        /* the module's spectrum against the serial FFT's, and the mode-by-mode checks */
        PetscCall(GatherToZero(da, field, &all));
        if (rank == 0) {
          const PetscScalar *a;
          double            *F;
          const PetscInt     nx = M[0] / 2 + 1;
          const PetscReal    dk = 2 * PETSC_PI / PetscMax(M[0], PetscMax(M[1], M[2]));
          PetscReal         *ps, *cs, err = 0;

          PetscCall(VecGetArrayRead(all, &a));
          PetscCall(CheckModes(M, logA, n, a, verbose));
          PetscCall(ForwardFFT(M, 4, a, 0, &F));
          PetscCall(PetscCalloc2(nbins, &ps, nbins, &cs));
          for (PetscInt iz = 0; iz < M[2]; iz++)
            for (PetscInt iy = 0; iy < M[1]; iy++)
              for (PetscInt mx = 0; mx < nx; mx++) {
                const PetscReal  k2 = K2(M, mx, Signed(iy, M[1]), Signed(iz, M[2])), w = (mx == 0 || 2 * mx == M[0]) ? 1 : 2;
                const PetscInt   j = (PetscInt)PetscFloorReal(PetscSqrtReal(k2) / dk + 0.5) - 1;
                const PetscReal *f = F + 2 * (((PetscInt64)iz * M[1] + iy) * nx + mx);

                if (k2 > 0 && k2 < PETSC_PI * PETSC_PI && j >= 0 && j < nbins) ps[j] += w * (f[0] * f[0] + f[1] * f[1]) / ((PetscReal)M[0] * M[1] * M[2]), cs[j] += w;
              }
          for (PetscInt j = 0; j < nbins; j++) {
            PetscCheck(cs[j] == count[j], PETSC_COMM_SELF, PETSC_ERR_PLIB, "shell %" PetscInt_FMT ": %" PetscInt64_FMT " modes, the serial count %g", j, count[j], (double)cs[j]);
            if (cs[j] > 0) err = PetscMax(err, PetscAbsReal(ps[j] / cs[j] - power[j]) / power[j]);
          }
          if (verbose) PetscCall(PetscPrintf(PETSC_COMM_SELF, "module spectrum against the serial FFT: %.2e\n", (double)err));
          PetscCheck(err <= 1e-12, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the module's power spectrum differs from the serial FFT's by %g", (double)err);
          PetscCall(PetscFree2(ps, cs));
          fftw_free(F);
          PetscCall(VecRestoreArrayRead(all, &a));
        }
        PetscCall(VecDestroy(&all));
      }
    }
    PetscCall(Cosmo3dFieldFitPowerLaw(nbins, ksum, psum, count, &fitA, &fitn));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "logA %+.2f n %.2f: fitted logA %+.4f n %.4f (%" PetscInt_FMT " fields of %" PetscInt_FMT "^3)\n", (double)logA, (double)n, (double)fitA, (double)fitn, realisations, M[0]));
    PetscCheck(PetscAbsReal(fitA - logA) <= 0.05 && PetscAbsReal(fitn - n) <= 0.05, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the fitted power law (logA %g, n %g) is more than 0.05 from (%g, %g)", (double)fitA, (double)fitn, (double)logA, (double)n);
  }
  PetscCall(PetscFree5(k, power, count, ksum, psum));
  PetscCall(VecDestroy(&field));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* |x - y| / |y| over channel c of two fields of dof channels */
static PetscErrorCode ChannelDifference(Vec x, Vec y, PetscInt c, PetscReal scale, PetscReal *rel)
{
  Vec       d;
  PetscReal nd, ny;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(x, &d));
  PetscCall(VecWAXPY(d, -scale, y, x));
  PetscCall(VecStrideNorm(d, c, NORM_2, &nd));
  PetscCall(VecStrideNorm(y, c, NORM_2, &ny));
  *rel = nd / (scale * ny);
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

/* -case seeds */
static PetscErrorCode TestSeeds(PetscBool verbose)
{
  const PetscInt  Ms[3] = {16, 16, 16}, Ml[3] = {32, 32, 32};
  const PetscReal logArange[2] = {-1, 1}, nrange[2] = {1, 3};
  const PetscInt  ndraws = 20000;
  DM              da, ds, dl;
  Vec             f1, f1b, f2, f3, f4, fs, fl, as, al;
  PetscBool       same;
  PetscReal       rel, relmax = 0, mA = 0, mn = 0, cAn = 0, vA = 0, vn = 0, loA = PETSC_MAX_REAL, hiA = PETSC_MIN_REAL, lon = PETSC_MAX_REAL, hin = PETSC_MIN_REAL;
  PetscMPIInt     rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(CreateGrid(PETSC_COMM_WORLD, Ms, 4, &da));
  PetscCall(DMCreateGlobalVector(da, &f1));
  PetscCall(VecDuplicate(f1, &f1b));
  PetscCall(VecDuplicate(f1, &f2));
  PetscCall(VecDuplicate(f1, &f3));
  PetscCall(VecDuplicate(f1, &f4));
  PetscCall(Cosmo3dFieldGenerate(da, 0.2, 2.0, 5, f1));
  PetscCall(Cosmo3dFieldGenerate(da, 0.2, 2.0, 5, f1b));
  PetscCall(Cosmo3dFieldGenerate(da, 0.2, 2.0, 6, f2));
  PetscCall(Cosmo3dFieldGenerate(da, 1.2, 2.0, 5, f3));
  PetscCall(Cosmo3dFieldGenerate(da, 0.2, 2.5, 5, f4));
  PetscCall(VecEqual(f1, f1b, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the same seed gave two different fields");
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "same seed twice: identical fields\n"));
  for (PetscInt c = 0; c < 4; c++) {
    PetscCall(ChannelDifference(f2, f1, c, 1.0, &rel));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "seed 6 against seed 5, channel %" PetscInt_FMT ": relative difference %.4f\n", c, (double)rel));
    PetscCheck(rel > 0.5, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "seeds 5 and 6 give fields only %g apart", (double)rel);
  }
  PetscCall(ChannelDifference(f4, f1, 0, 1.0, &rel));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "n 2.5 against n 2, channel 0: relative difference %.4f\n", (double)rel));
  PetscCheck(rel > 0.05, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "n = 2 and 2.5 give fields only %g apart", (double)rel);
  for (PetscInt c = 0; c < 3; c++) { /* logA + 1 multiplies the linear channels by e^(1/2) */
    PetscCall(ChannelDifference(f3, f1, c, PetscExpReal(0.5), &rel));
    relmax = PetscMax(relmax, rel);
  }
  if (verbose) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "logA + 1 against e^(1/2) times the field: %.2e\n", (double)relmax));
  PetscCheck(relmax <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "logA + 1 does not multiply the field by e^(1/2): %g", (double)relmax);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "logA + 1: channels 0-2 times e^(1/2) (within 1e-13)\n"));

  /* samples by index */
  for (PetscInt64 i = 0; i < 4; i++) {
    PetscReal  logA, n, logA2, n2;
    PetscInt64 fs1, fs2;

    PetscCall(Cosmo3dFieldSample(3, i, logArange, nrange, &logA, &n, &fs1));
    PetscCall(Cosmo3dFieldSample(3, i, logArange, nrange, &logA2, &n2, &fs2));
    PetscCheck(logA == logA2 && n == n2 && fs1 == fs2, PETSC_COMM_SELF, PETSC_ERR_PLIB, "sample %" PetscInt64_FMT " drawn twice differs", i);
    PetscCall(Cosmo3dFieldSample(4, i, logArange, nrange, &logA2, &n2, &fs2));
    PetscCheck(logA != logA2 && n != n2 && fs1 != fs2, PETSC_COMM_SELF, PETSC_ERR_PLIB, "sample %" PetscInt64_FMT " of seeds 3 and 4 agree", i);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sample %" PetscInt64_FMT " of seed 3: logA %+.10f n %.10f field seed %" PetscInt64_FMT "\n", i, (double)logA, (double)n, fs1));
  }
  for (PetscInt64 i = 0; i < ndraws; i++) {
    PetscReal  logA, n;
    PetscInt64 s;

    PetscCall(Cosmo3dFieldSample(3, i, logArange, nrange, &logA, &n, &s));
    PetscCheck(s >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "sample %" PetscInt64_FMT ": field seed %" PetscInt64_FMT " < 0", i, s);
    mA += logA, mn += n, vA += logA * logA, vn += n * n, cAn += logA * n;
    loA = PetscMin(loA, logA), hiA = PetscMax(hiA, logA), lon = PetscMin(lon, n), hin = PetscMax(hin, n);
  }
  mA /= ndraws, mn /= ndraws, vA = vA / ndraws - mA * mA, vn = vn / ndraws - mn * mn, cAn = (cAn / ndraws - mA * mn) / PetscSqrtReal(vA * vn);
  if (verbose)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " samples: logA mean %.4f sd %.4f in [%.4f, %.4f], n mean %.4f sd %.4f in [%.4f, %.4f], correlation %.4f\n", ndraws, (double)mA, (double)PetscSqrtReal(vA), (double)loA, (double)hiA,
                          (double)mn, (double)PetscSqrtReal(vn), (double)lon, (double)hin, (double)cAn));
  /* uniform on [-1, 1] and [1, 3]: mean 0 and 2, sd 1/sqrt(3); standard errors 0.004 (means), 0.007 (correlation) */
  PetscCheck(loA >= -1 && hiA <= 1 && lon >= 1 && hin <= 3, PETSC_COMM_SELF, PETSC_ERR_PLIB, "samples outside their ranges");
  PetscCheck(PetscAbsReal(mA) <= 0.02 && PetscAbsReal(mn - 2) <= 0.02 && PetscAbsReal(PetscSqrtReal(vA) - 1 / PetscSqrtReal(3.0)) <= 0.01 && PetscAbsReal(PetscSqrtReal(vn) - 1 / PetscSqrtReal(3.0)) <= 0.01 && PetscAbsReal(cAn) <= 0.035,
             PETSC_COMM_SELF, PETSC_ERR_PLIB, "the samples are not uniform and independent: logA mean %g sd %g, n mean %g sd %g, correlation %g", (double)mA, (double)PetscSqrtReal(vA), (double)mn, (double)PetscSqrtReal(vn), (double)cAn);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " samples: uniform in logA [-1, 1] and n [1, 3], uncorrelated\n", ndraws));

  /* the same seed on 16^3 and 32^3: the modes of the smaller grid are the same z_m */
  PetscCall(CreateGrid(PETSC_COMM_WORLD, Ms, 1, &ds));
  PetscCall(CreateGrid(PETSC_COMM_WORLD, Ml, 1, &dl));
  PetscCall(DMCreateGlobalVector(ds, &fs));
  PetscCall(DMCreateGlobalVector(dl, &fl));
  PetscCall(Cosmo3dFieldGenerate(ds, 0.0, 2.0, 9, fs));
  PetscCall(Cosmo3dFieldGenerate(dl, 0.0, 2.0, 9, fl));
  PetscCall(GatherToZero(ds, fs, &as));
  PetscCall(GatherToZero(dl, fl, &al));
  if (rank == 0) {
    const PetscScalar *a, *b;
    double            *Fs, *Fl;
    PetscReal          err    = 0;
    PetscInt           common = 0;

    PetscCall(VecGetArrayRead(as, &a));
    PetscCall(VecGetArrayRead(al, &b));
    PetscCall(ForwardFFT(Ms, 1, a, 0, &Fs));
    PetscCall(ForwardFFT(Ml, 1, b, 0, &Fl));
    for (PetscInt iz = 0; iz < Ms[2]; iz++)
      for (PetscInt iy = 0; iy < Ms[1]; iy++)
        for (PetscInt mx = 0; mx <= Ms[0] / 2; mx++) {
          const PetscInt  my = Signed(iy, Ms[1]), mz = Signed(iz, Ms[2]), jy = (my + Ml[1]) % Ml[1], jz = (mz + Ml[2]) % Ml[2];
          const PetscReal k2s = K2(Ms, mx, my, mz), k2l = K2(Ml, mx, my, mz);

          if (k2s == 0 || k2s >= PETSC_PI * PETSC_PI) continue;
          /* z = F / sqrt(P(k) V), P = k^-n (logA = 0) */
          const PetscReal  ss = 1 / PetscSqrtReal(PetscPowReal(k2s, -1.0) * 4096), sl = 1 / PetscSqrtReal(PetscPowReal(k2l, -1.0) * 32768);
          const PetscReal *zs = Fs + 2 * (((PetscInt64)iz * Ms[1] + iy) * (Ms[0] / 2 + 1) + mx), *zl = Fl + 2 * (((PetscInt64)jz * Ml[1] + jy) * (Ml[0] / 2 + 1) + mx);

          err = PetscMax(err, PetscAbsReal(ss * zs[0] - sl * zl[0]) + PetscAbsReal(ss * zs[1] - sl * zl[1]));
          common++;
        }
    if (verbose) PetscCall(PetscPrintf(PETSC_COMM_SELF, "16^3 and 32^3, seed 9: %" PetscInt_FMT " common modes, max |z16 - z32| %.2e\n", common, (double)err));
    PetscCheck(err <= 1e-10, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the modes of the 16^3 field differ from the 32^3 field's by %g", (double)err);
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "same seed on 16^3 and 32^3: the %" PetscInt_FMT " modes of the 16^3 grid are the same\n", common));
    fftw_free(Fs);
    fftw_free(Fl);
    PetscCall(VecRestoreArrayRead(as, &a));
    PetscCall(VecRestoreArrayRead(al, &b));
  }
  PetscCall(VecDestroy(&as));
  PetscCall(VecDestroy(&al));
  PetscCall(VecDestroy(&fs));
  PetscCall(VecDestroy(&fl));
  PetscCall(DMDestroy(&ds));
  PetscCall(DMDestroy(&dl));
  PetscCall(VecDestroy(&f1));
  PetscCall(VecDestroy(&f1b));
  PetscCall(VecDestroy(&f2));
  PetscCall(VecDestroy(&f3));
  PetscCall(VecDestroy(&f4));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* -case error -error KIND: each KIND is one bad call */
static PetscErrorCode TestError(void)
{
  const PetscInt M[3]     = {8, 8, 8};
  char           kind[32] = "";
  DM             da;
  Vec            field;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", kind, sizeof(kind), NULL));
  if (!strcmp(kind, "dim2")) {
    PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_BOX, 8, 8, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
    PetscCall(DMSetUp(da));
  } else if (!strcmp(kind, "periodic")) {
    PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_NONE, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_BOX, 8, 8, 8, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
    PetscCall(DMSetUp(da));
  } else
    PetscCall(CreateGrid(PETSC_COMM_WORLD, M, !strcmp(kind, "dof") ? 5 : 2, &da));
  PetscCall(DMCreateGlobalVector(da, &field));
  if (!strcmp(kind, "logA"))
    PetscCall(Cosmo3dFieldGenerate(da, 20.0, 2.0, 1, field));
  else if (!strcmp(kind, "n"))
    PetscCall(Cosmo3dFieldGenerate(da, 0.0, -1.0, 1, field));
  else if (!strcmp(kind, "vec")) {
    Vec wrong;

    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 8 * 8 * 8, &wrong));
    PetscCall(Cosmo3dFieldGenerate(da, 0.0, 2.0, 1, wrong));
    PetscCall(VecDestroy(&wrong));
  } else if (!strcmp(kind, "range")) {
    const PetscReal logArange[2] = {-1, 1}, nrange[2] = {3, 1};
    PetscReal       logA, n;

    PetscCall(Cosmo3dFieldSample(1, 0, logArange, nrange, &logA, &n, NULL));
  } else if (!strcmp(kind, "collective")) {
    PetscMPIInt rank;

    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCall(Cosmo3dFieldGenerate(da, 0.1 * rank, 2.0, 1, field));
  } else
    PetscCall(Cosmo3dFieldGenerate(da, 0.0, 2.0, 1, field)); /* dim2, periodic, dof */
  PetscCall(VecDestroy(&field));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      testcase[32] = "invariance";
  PetscBool verbose      = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", testcase, sizeof(testcase), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-verbose", &verbose, NULL));
  if (!strcmp(testcase, "invariance"))
    PetscCall(TestInvariance(verbose));
  else if (!strcmp(testcase, "spectrum"))
    PetscCall(TestSpectrum(verbose));
  else if (!strcmp(testcase, "seeds"))
    PetscCall(TestSeeds(verbose));
  else if (!strcmp(testcase, "error"))
    PetscCall(TestError());
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s: invariance, spectrum, seeds or error", testcase);
  PetscCall(PetscFinalize());
  return 0;
}
