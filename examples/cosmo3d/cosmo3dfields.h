/*
  The data of bin/cosmo3d, a CosmoFlow-like 3-D regression: Gaussian random fields with a power-law spectrum on a
  periodic 3-D DMDA, seeded, and the same on any number of ranks and any decomposition of the grid.

  Units and normalisation (grid units: the cell spacing is the unit of length)
  - The grid is Mx x My x Mz cells, periodic, of volume V = Mx My Mz. Its Fourier modes are the integer vectors
    m = (mx, my, mz), |mi| <= Mi/2, with wavevector k = 2 pi (mx/Mx, my/My, mz/Mz) in radians per cell: on an N^3 grid
    the fundamental mode is 2 pi/N and the Nyquist frequency pi.
  - delta(x) = sum_m dhat_m exp(i k.x) (FFTW's unnormalised backward transform) with
        dhat_m = sqrt(P(|k|) / V) z_m,    P(k) = A k^-n,    A = exp(logA),
    z_m complex standard Gaussians (E|z_m|^2 = 1) and z_-m = conj(z_m), so that delta is real. This is the continuum
    convention <delta(k) delta(k')*> = (2 pi)^3 delta_D(k - k') P(k) in cell units: the variance of delta is
    sigma^2 = (1/V) sum_m P(|k_m|) ~ int d^3k/(2 pi)^3 P(k), and |FFT(delta)_m|^2 / V estimates P(|k_m|).
    A is the power at k = 1 rad/cell (wavelength 2 pi cells): the pivot sits inside the grid's k range on any grid
    (32^3: k from 0.196 to pi), so A and n are both well determined by one field, and sigma^2 depends on n only weakly
    (A = 1 on 32^3: sigma^2 = 0.25 for n = 1, 0.15 for n = 2, 0.16 for n = 3).
  - Only the modes with 0 < |k| < pi are kept: k = 0 is zero (every channel but the lognormal one has mean zero), and
    the Nyquist sphere |k| < pi cuts the cube's corners and every Nyquist plane (the spectrum is isotropic, and no kept
    mode is its own conjugate).
  - z_m is drawn from a counter-based hash (splitmix64's finaliser) of (seed, m), never from a sequential stream: the
    field does not depend on which rank computes which mode (the same on 1, 2, 3, 4 ranks to the FFT's round-off), and
    the same seed on a larger grid keeps the mode m of the smaller one.

  Channels (the DMDA's dof, 1 to 4), all from one realisation delta:
    0  delta
    1  delta smoothed with a Gaussian of width R = 1 cell (filter exp(-k^2 R^2 / 2), applied in Fourier space)
    2  delta smoothed with a Gaussian of width R = 2 cells
    3  the lognormal density contrast exp(delta - s^2/2) - 1 (positive density 1 + delta_LN, skewed, as matter's), with
       s^2 the variance of this field's delta (its mean over the grid; the mean of delta is zero)
  The smoothed channels give, point by point, the field's amplitude at three scales (k about pi, 1 and 0.5 rad/cell): a
  network reads the spectrum's slope off their variances. Channel 3 uses the field's own variance s^2, not the
  ensemble's sigma^2(A, n): with the latter, log(1 + channel 3) - channel 0 = -sigma^2/2 would hand a network a
  function of (A, n) at every voxel, without the cosmic variance a real estimate carries.
*/
#pragma once

#include <petscdmda.h>

#define COSMO3D_MAX_CHANNELS 4
/* the widths (cells) of the Gaussians of channels 1 and 2 */
#define COSMO3D_SMOOTHING_R1 1.0
#define COSMO3D_SMOOTHING_R2 2.0
/* the parameters Cosmo3dFieldGenerate() accepts (they catch A passed for log A or a slope of the wrong sign) */
#define COSMO3D_LOGA_MIN -10.0
#define COSMO3D_LOGA_MAX 10.0
#define COSMO3D_N_MIN    0.0
#define COSMO3D_N_MAX    5.0

PetscErrorCode Cosmo3dFieldGenerate(DM, PetscReal, PetscReal, PetscInt64, Vec);
PetscErrorCode Cosmo3dFieldSample(PetscInt64, PetscInt64, const PetscReal[2], const PetscReal[2], PetscReal *, PetscReal *, PetscInt64 *);
PetscErrorCode Cosmo3dFieldVariance(DM, PetscReal, PetscReal, PetscInt, PetscReal *);
PetscErrorCode Cosmo3dFieldPowerSpectrum(DM, Vec, PetscInt, PetscInt, PetscReal[], PetscReal[], PetscInt64[]);
PetscErrorCode Cosmo3dFieldFitPowerLaw(PetscInt, const PetscReal[], const PetscReal[], const PetscInt64[], PetscReal *, PetscReal *);
