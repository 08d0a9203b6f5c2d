/*
  Gaussian random fields for bin/cosmo3d: conventions in cosmo3dfields.h.

  How a field is made, on any number of ranks:
    1. FFTW's MPI layout splits the z-planes of the grid into slabs, one per rank (FFTW's dimensions n0 x n1 x n2 are
       Mz x My x Mx, so that its row-major order is the DMDA's natural order, x fastest). The half-complex modes of a
       slab, [local_n0][My][Mx/2+1], get sqrt(P/V) z_m, z_m hashed from (seed, m): no rank depends on another.
    2. Each channel multiplies them by its filter and is transformed back (fftw_mpi c2r, in place), then copied into a
       Vec "slab" whose entries are the natural ordering with the channels interlaced, owned by the slabs.
    3. One VecScatter moves the slab Vec into the DMDA's global Vec (its ownership: boxes, not slabs).
  The FFTW plans, the slab Vec and the scatter are built once per DMDA and kept on it (PetscObjectCompose).
*/
#include "cosmo3dfields.h"
#include <stdint.h>
#if PetscDefined(HAVE_FFTW)
#include <fftw3-mpi.h>
#endif

/* splitmix64's finaliser (Steele, Lea and Flood 2014): a bijection of 64-bit words that mixes every input bit */
static inline uint64_t Cosmo3dMix(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* a hash of four words (each folded in after mixing the previous ones) */
static inline uint64_t Cosmo3dHash(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  return Cosmo3dMix(Cosmo3dMix(Cosmo3dMix(Cosmo3dMix(a) ^ b) ^ c) ^ d);
}

/* a uniform number in (0, 1) from the top 53 bits of a word */
static inline double Cosmo3dUnit(uint64_t r)
{
  return ((double)(r >> 11) + 0.5) * 0x1p-53;
}

/* domain tags: the modes' hash and the samples' hash never share an input */
#define COSMO3D_TAG_MODE   0x6d6f6465ULL /* "mode" */
#define COSMO3D_TAG_SAMPLE 0x73616d70ULL /* "samp" */

/*
  z_m for the mode m = (mx, my, mz), mx >= 0 (FFTW's half-complex modes): a complex standard Gaussian (E|z|^2 = 1,
  Box-Muller in polar form: |z|^2 = -log u1 is Exp(1), the phase 2 pi u2 uniform), hashed from (seed, m). The modes
  with mx = 0 come in conjugate pairs m, -m both stored: the canonical one of a pair (my > 0, or my = 0 and mz > 0) is
  drawn, the other is its conjugate, so that the inverse transform is real whatever the rank holding either.
*/
static inline void Cosmo3dModeNoise(uint64_t seed, PetscInt64 mx, PetscInt64 my, PetscInt64 mz, double *re, double *im)
{
  const PetscBool conj = (PetscBool)(mx == 0 && (my < 0 || (my == 0 && mz < 0)));
  uint64_t        h;
  double          r, t;

  if (conj) my = -my, mz = -mz;
  h   = Cosmo3dHash(seed ^ COSMO3D_TAG_MODE, (uint64_t)mx, (uint64_t)my, (uint64_t)mz);
  r   = sqrt(-log(Cosmo3dUnit(h)));
  t   = 2 * PETSC_PI * Cosmo3dUnit(Cosmo3dMix(h));
  *re = r * cos(t);
  *im = conj ? -r * sin(t) : r * sin(t);
}

/* the signed mode of FFT index i on an axis of M points: i or i - M, in (-M/2, M/2] */
static inline PetscInt64 Cosmo3dSigned(PetscInt64 i, PetscInt64 M)
{
  return 2 * i <= M ? i : i - M;
}

/* 0 < |k| < pi, decided in integers: 4 (mx^2 (My Mz)^2 + my^2 (Mx Mz)^2 + mz^2 (Mx My)^2) < (Mx My Mz)^2; V < 2^31 */
static inline PetscBool Cosmo3dKept(const PetscInt M[3], PetscInt64 mx, PetscInt64 my, PetscInt64 mz)
{
  const uint64_t yz = (uint64_t)M[1] * M[2], xz = (uint64_t)M[0] * M[2], xy = (uint64_t)M[0] * M[1], V = xy * M[2];
  const uint64_t q = (uint64_t)(mx * mx) * yz * yz + (uint64_t)(my * my) * xz * xz + (uint64_t)(mz * mz) * xy * xy;

  return (PetscBool)(q > 0 && 4 * q < V * V);
}

/* |k|^2 of mode m, radians per cell */
static inline PetscReal Cosmo3dK2(const PetscInt M[3], PetscInt64 mx, PetscInt64 my, PetscInt64 mz)
{
  const PetscReal kx = 2 * PETSC_PI * mx / M[0], ky = 2 * PETSC_PI * my / M[1], kz = 2 * PETSC_PI * mz / M[2];

  return kx * kx + ky * ky + kz * kz;
}

/* channel c's filter at |k|^2 = k2: 1 (delta), a Gaussian of width R1 or R2 (the smoothed channels) */
static inline PetscReal Cosmo3dFilter(PetscInt c, PetscReal k2)
{
  const PetscReal R = c == 1 ? COSMO3D_SMOOTHING_R1 : COSMO3D_SMOOTHING_R2;

  return c == 0 ? 1.0 : PetscExpReal(-0.5 * k2 * R * R);
}

static PetscErrorCode Cosmo3dCheckParameters(MPI_Comm comm, PetscReal logA, PetscReal n, const char func[])
{
  PetscFunctionBegin;
  PetscCheck(!PetscIsInfOrNanReal(logA) && logA >= COSMO3D_LOGA_MIN && logA <= COSMO3D_LOGA_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "%s: logA = %g is outside [%.1f, %.1f]: logA is the natural logarithm of the amplitude A of P(k) = A k^-n (the power at k = 1 rad/cell), not A itself", func, (double)logA, (double)COSMO3D_LOGA_MIN, (double)COSMO3D_LOGA_MAX);
  PetscCheck(!PetscIsInfOrNanReal(n) && n >= COSMO3D_N_MIN && n <= COSMO3D_N_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: n = %g is outside [%.1f, %.1f]: n is the slope of P(k) = A k^-n (n > 0: more power on large scales)", func, (double)n,
             (double)COSMO3D_N_MIN, (double)COSMO3D_N_MAX);
  PetscFunctionReturn(0);
}

/* the ranks were given the same parameters (each draws the modes of its slab from them): max(x) = -max(-x) for each */
static PetscErrorCode Cosmo3dCheckCollective(MPI_Comm comm, PetscReal logA, PetscReal n, PetscInt64 seed, const char func[])
{
  const PetscReal hi = (PetscReal)(seed >> 32), lo = (PetscReal)(seed & 0xffffffff); /* exact in a double */
  PetscReal       v[8] = {logA, -logA, n, -n, hi, -hi, lo, -lo};

  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, v, 8, MPIU_REAL, MPIU_MAX, comm));
  PetscCheck(v[0] == -v[1] && v[2] == -v[3] && v[4] == -v[5] && v[6] == -v[7], comm, PETSC_ERR_ARG_WRONG, "%s: the ranks of the DMDA were given different logA, n or seed (logA in [%g, %g], n in [%g, %g]); pass every rank the same", func,
             (double)-v[1], (double)v[0], (double)-v[3], (double)v[2]);
  PetscFunctionReturn(0);
}

/* The DMDA is 3-D, periodic in x, y and z, with 1 to 4 channels; func names the caller in the messages */
static PetscErrorCode Cosmo3dCheckDMDA(DM da, const char func[])
{
  PetscBool      isda;
  const char    *type;
  PetscInt       dim, M[3], dof;
  DMBoundaryType bd[3];
  const char     axis[3] = {'x', 'y', 'z'};
  PetscInt64     V;

  PetscFunctionBegin;
  PetscCheck(da, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s: the DMDA is NULL", func);
  PetscCall(PetscObjectTypeCompare((PetscObject)da, DMDA, &isda));
  PetscCall(PetscObjectGetType((PetscObject)da, &type));
  PetscCheck(isda, PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_WRONG, "%s: the grid is a DM of type %s; the fields live on a 3-D periodic DMDA (DMDACreate3d())", func, type ? type : "(not set)");
  PetscCall(DMDAGetInfo(da, &dim, &M[0], &M[1], &M[2], NULL, NULL, NULL, &dof, NULL, &bd[0], &bd[1], &bd[2], NULL));
  PetscCheck(dim == 3, PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_WRONG, "%s: the DMDA is %" PetscInt_FMT "-D; the fields are 3-D: create the grid with DMDACreate3d()", func, dim);
  for (PetscInt d = 0; d < 3; d++)
    PetscCheck(bd[d] == DM_BOUNDARY_PERIODIC, PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_WRONG, "%s: the DMDA is not periodic in %c (boundary type %s); the fields are periodic boxes: create it with DM_BOUNDARY_PERIODIC in x, y and z", func,
               axis[d], DMBoundaryTypes[bd[d]]);
  PetscCheck(dof >= 1 && dof <= COSMO3D_MAX_CHANNELS, PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_OUTOFRANGE,
             "%s: the DMDA has %" PetscInt_FMT " degrees of freedom per point; the fields have 1 to %d channels (the dof): delta, delta smoothed at R = %.1f and %.1f cells, the lognormal contrast", func, dof, COSMO3D_MAX_CHANNELS,
             (double)COSMO3D_SMOOTHING_R1, (double)COSMO3D_SMOOTHING_R2);
  /* the Nyquist-sphere test multiplies squares of products of the sizes in 64 bits: V < 2^31 keeps 3 V^2 < 2^64 */
  V = (PetscInt64)M[0] * M[1] * M[2];
  PetscCheck(V < ((PetscInt64)1 << 31), PetscObjectComm((PetscObject)da), PETSC_ERR_ARG_OUTOFRANGE, "%s: the grid %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " has %" PetscInt64_FMT " points; this generator takes fewer than 2^31", func,
             M[0], M[1], M[2], V);
  PetscFunctionReturn(0);
}

/*@
  Cosmo3dFieldSample - the parameters and the field seed of one sample of a data set, drawn from (seed, index) alone:
  (logA, n) uniform in the given ranges

  Not collective

  Input Parameters:
+ seed      - the data set's seed
. index     - the sample, >= 0
. logArange - [lo, hi], inside [-10, 10]
- nrange    - [lo, hi], inside [0, 5]

  Output Parameters:
+ logA      - the sample's log amplitude (or NULL)
. n         - its slope (or NULL)
- fieldseed - the seed of its field for Cosmo3dFieldGenerate(), >= 0 (or NULL)

  Notes:
  Sample index is the same whichever rank draws it and whatever was drawn before: a data set split over ranks or
  spatial groups, shuffled or not, holds the same samples.

  Level: intermediate

.seealso: `Cosmo3dFieldGenerate()`
@*/
PetscErrorCode Cosmo3dFieldSample(PetscInt64 seed, PetscInt64 index, const PetscReal logArange[2], const PetscReal nrange[2], PetscReal *logA, PetscReal *n, PetscInt64 *fieldseed)
{
  uint64_t h;

  PetscFunctionBegin;
  PetscCheck(logArange && nrange, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Cosmo3dFieldSample: logArange and nrange must be arrays of 2 reals");
  PetscCheck(index >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Cosmo3dFieldSample: index = %" PetscInt64_FMT " must be >= 0", index);
  PetscCheck(logArange[0] >= COSMO3D_LOGA_MIN && logArange[1] <= COSMO3D_LOGA_MAX && logArange[0] <= logArange[1], PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "Cosmo3dFieldSample: logArange [%g, %g] must be an interval lo <= hi inside [%.1f, %.1f] (the natural log of A)", (double)logArange[0], (double)logArange[1], (double)COSMO3D_LOGA_MIN, (double)COSMO3D_LOGA_MAX);
  PetscCheck(nrange[0] >= COSMO3D_N_MIN && nrange[1] <= COSMO3D_N_MAX && nrange[0] <= nrange[1], PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Cosmo3dFieldSample: nrange [%g, %g] must be an interval lo <= hi inside [%.1f, %.1f]", (double)nrange[0],
             (double)nrange[1], (double)COSMO3D_N_MIN, (double)COSMO3D_N_MAX);
  h = Cosmo3dHash((uint64_t)seed ^ COSMO3D_TAG_SAMPLE, (uint64_t)index, 0, 0);
  if (logA) *logA = logArange[0] + (logArange[1] - logArange[0]) * Cosmo3dUnit(Cosmo3dMix(h ^ 1));
  if (n) *n = nrange[0] + (nrange[1] - nrange[0]) * Cosmo3dUnit(Cosmo3dMix(h ^ 2));
  if (fieldseed) *fieldseed = (PetscInt64)(Cosmo3dMix(h ^ 3) >> 1);
  PetscFunctionReturn(0);
}

/*@
  Cosmo3dFieldVariance - the ensemble variance of a channel of the fields of Cosmo3dFieldGenerate() on a grid: the
  mean over realisations of the channel's variance over the grid

  Collective on da

  Input Parameters:
+ da      - the 3-D periodic DMDA
. logA    - the log amplitude
. n       - the slope
- channel - 0, 1, 2 (delta, smoothed at R1, R2): (1/V) sum_m P(|k_m|) W(k_m)^2 over the kept modes, exact; 3 (the
            lognormal contrast): exp(sigma^2) - 1, sigma^2 that of channel 0 (exact when s^2 = sigma^2)

  Output Parameter:
. variance - the variance

  Notes:
  A scale for a network's inputs: the fields of a data set whose parameters span a range have variances around the
  value at the range's centre.

  Level: intermediate

.seealso: `Cosmo3dFieldGenerate()`
@*/
PetscErrorCode Cosmo3dFieldVariance(DM da, PetscReal logA, PetscReal n, PetscInt channel, PetscReal *variance)
{
  const char *func = "Cosmo3dFieldVariance";
  MPI_Comm    comm;
  PetscInt    M[3];
  PetscMPIInt rank, size;
  PetscReal   sum = 0;

  PetscFunctionBegin;
  PetscCheck(variance, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s: variance is NULL", func);
  PetscCall(Cosmo3dCheckDMDA(da, func));
  comm = PetscObjectComm((PetscObject)da);
  PetscCall(Cosmo3dCheckParameters(comm, logA, n, func));
  PetscCall(DMDAGetInfo(da, NULL, &M[0], &M[1], &M[2], NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCheck(channel >= 0 && channel < COSMO3D_MAX_CHANNELS, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: channel %" PetscInt_FMT " must be in [0, %d)", func, channel, COSMO3D_MAX_CHANNELS);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  /* the half space mx >= 0 (mx > 0 counts twice), its z-planes split over the ranks */
  for (PetscInt64 iz = (PetscInt64)M[2] * rank / size; iz < (PetscInt64)M[2] * (rank + 1) / size; iz++) {
    const PetscInt64 mz = Cosmo3dSigned(iz, M[2]);

    for (PetscInt64 iy = 0; iy < M[1]; iy++) {
      const PetscInt64 my = Cosmo3dSigned(iy, M[1]);

      for (PetscInt64 mx = 0; 2 * mx <= M[0]; mx++) {
        if (Cosmo3dKept(M, mx, my, mz)) {
          const PetscReal k2 = Cosmo3dK2(M, mx, my, mz), w = channel == 1 || channel == 2 ? Cosmo3dFilter(channel, k2) : 1.0;

          sum += (mx ? 2 : 1) * PetscExpReal(logA - 0.5 * n * PetscLogReal(k2)) * w * w;
        }
      }
    }
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, comm));
  sum /= (PetscReal)M[0] * M[1] * M[2];
  *variance = channel == 3 ? expm1(sum) : sum;
  PetscFunctionReturn(0);
}

/* Whittle's -log L of the shells for P(k) = exp(a) k^-b */
static PetscReal Cosmo3dWhittle(PetscInt nbins, const PetscReal k[], const PetscReal power[], const PetscInt64 count[], PetscReal a, PetscReal b)
{
  PetscReal L = 0;

  for (PetscInt j = 0; j < nbins; j++) {
    if (count[j] <= 0 || k[j] <= 0 || power[j] <= 0) continue;
    const PetscReal mu = a - b * PetscLogReal(k[j]);

    L += count[j] * (mu + power[j] * PetscExpReal(-mu));
  }
  return L;
}

/*@
  Cosmo3dFieldFitPowerLaw - fits P(k) = A k^-n to a shell-averaged power spectrum by maximum likelihood: each mode's
  |FFT|^2 / V an exponential variable of mean P(k) (Whittle's likelihood), with a shell's modes at its mean |k|

  Not collective

  Input Parameters:
+ nbins - the number of shells
. k     - their |k| (Cosmo3dFieldPowerSpectrum())
. power - their mean power
- count - their numbers of modes (empty shells are skipped)

  Output Parameters:
+ logA - the fitted log amplitude
- n    - the fitted slope

  Notes:
  The classical estimate of (logA, n) from one field, which a network that learns them from fields should approach:
  on a 32^3 grid its scatter over realisations is about 0.03 in both (the Cramer-Rao bound of the field's ~8600
  independent modes).

  Level: intermediate

.seealso: `Cosmo3dFieldPowerSpectrum()`
@*/
PetscErrorCode Cosmo3dFieldFitPowerLaw(PetscInt nbins, const PetscReal k[], const PetscReal power[], const PetscInt64 count[], PetscReal *logA, PetscReal *n)
{
  PetscReal s[5] = {0}, a, b, det;
  PetscInt  used = 0, it;

  PetscFunctionBegin;
  PetscCheck(nbins <= 0 || (k && power && count), PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Cosmo3dFieldFitPowerLaw: k, power and count must be arrays of nbins entries");
  /* start: least squares of log power = a - b log k, weighted by the counts */
  for (PetscInt j = 0; j < nbins; j++) {
    if (count[j] <= 0 || k[j] <= 0 || power[j] <= 0) continue;
    const PetscReal x = PetscLogReal(k[j]), y = PetscLogReal(power[j]), c = (PetscReal)count[j];

    s[0] += c, s[1] += c * x, s[2] += c * x * x, s[3] += c * y, s[4] += c * x * y;
    used++;
  }
  PetscCheck(used >= 2, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Cosmo3dFieldFitPowerLaw: %" PetscInt_FMT " non-empty shells with positive power; a slope needs at least 2", used);
  det = s[0] * s[2] - s[1] * s[1];
  b   = -(s[0] * s[4] - s[1] * s[3]) / det;
  a   = (s[3] + b * s[1]) / s[0];
  /* Newton on -log L = sum_j c_j (mu_j + y_j e^-mu_j), mu_j = a - b x_j (convex in (a, b)), halving a step that
     does not decrease it */
  for (it = 0; it < 100; it++) {
    PetscReal g[2] = {0, 0}, H[3] = {0, 0, 0}, da, db, t = 1, L0;

    for (PetscInt j = 0; j < nbins; j++) {
      if (count[j] <= 0 || k[j] <= 0 || power[j] <= 0) continue;
      const PetscReal x = PetscLogReal(k[j]), c = (PetscReal)count[j], r = power[j] * PetscExpReal(-(a - b * x));

      g[0] += c * (1 - r), g[1] -= c * x * (1 - r);
      H[0] += c * r, H[1] -= c * x * r, H[2] += c * x * x * r;
    }
    det = H[0] * H[2] - H[1] * H[1];
    da  = -(H[2] * g[0] - H[1] * g[1]) / det;
    db  = -(H[0] * g[1] - H[1] * g[0]) / det;
    L0  = Cosmo3dWhittle(nbins, k, power, count, a, b);
    while (t > 1e-6 && Cosmo3dWhittle(nbins, k, power, count, a + t * da, b + t * db) > L0) t /= 2;
    a += t * da, b += t * db;
    if (PetscAbsReal(t * da) + PetscAbsReal(t * db) < 1e-12 * (1 + PetscAbsReal(a) + PetscAbsReal(b))) break;
  }
  PetscCheck(it < 100 && !PetscIsInfOrNanReal(a + b), PETSC_COMM_SELF, PETSC_ERR_NOT_CONVERGED, "Cosmo3dFieldFitPowerLaw: Newton's method did not converge");
  if (logA) *logA = a;
  if (n) *n = b;
  PetscFunctionReturn(0);
}

#if PetscDefined(HAVE_FFTW)

/* The FFTW set-up of one DMDA, composed with it as "Cosmo3dFFT" */
typedef struct {
  PetscInt      M[3], dof;                            /* Mx, My, Mz and the channels */
  ptrdiff_t     local_n0, local_0_start, alloc_local; /* this rank's z-planes [local_0_start, + local_n0); complex entries */
  fftw_complex *data;                                 /* in place: modes [local_n0][My][Mx/2+1], reals [local_n0][My][2(Mx/2+1)] */
  fftw_plan     c2r, r2c;
  Vec           slab; /* natural order, channels interlaced: entry ((z My + y) Mx + x) dof + c, owned by the slabs */
  VecScatter    toda; /* slab -> the DMDA's global Vec (SCATTER_REVERSE: back) */
} Cosmo3dFFT;

/* -log_view: the set-up (plans, scatter), the modes (hashing, filters), the FFTs and the scatter slabs <-> boxes */
static PetscLogEvent COSMO3D_SetUp, COSMO3D_Modes, COSMO3D_FFT, COSMO3D_Scatter;

static PetscErrorCode Cosmo3dRegisterEvents(void)
{
  static PetscBool registered = PETSC_FALSE;
  PetscClassId     classid;

  PetscFunctionBegin;
  if (registered) PetscFunctionReturn(0);
  PetscCall(PetscClassIdRegister("Cosmo3d fields", &classid));
  PetscCall(PetscLogEventRegister("Cosmo3dSetUp", classid, &COSMO3D_SetUp));
  PetscCall(PetscLogEventRegister("Cosmo3dModes", classid, &COSMO3D_Modes));
  PetscCall(PetscLogEventRegister("Cosmo3dFFT", classid, &COSMO3D_FFT));
  PetscCall(PetscLogEventRegister("Cosmo3dScatter", classid, &COSMO3D_Scatter));
  registered = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* one real 3-D FFT of V points: about 2.5 V log2(V) flops */
static PetscErrorCode Cosmo3dExecute(fftw_plan plan, const PetscInt M[3])
{
  const PetscReal V = (PetscReal)M[0] * M[1] * M[2];

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(COSMO3D_FFT, 0, 0, 0, 0));
  fftw_execute(plan);
  PetscCall(PetscLogFlops(2.5 * V * PetscLog2Real(V)));
  PetscCall(PetscLogEventEnd(COSMO3D_FFT, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

static PetscErrorCode Cosmo3dFFTDestroy(void *ctx)
{
  Cosmo3dFFT *f = (Cosmo3dFFT *)ctx;

  PetscFunctionBegin;
  if (f->c2r) fftw_destroy_plan(f->c2r);
  if (f->r2c) fftw_destroy_plan(f->r2c);
  if (f->data) fftw_free(f->data);
  PetscCall(VecDestroy(&f->slab));
  PetscCall(VecScatterDestroy(&f->toda));
  PetscCall(PetscFree(f));
  PetscFunctionReturn(0);
}

/* The FFTW set-up of da (built at the first call, then kept on da); field, if given, must have da's global layout */
static PetscErrorCode Cosmo3dGetFFT(DM da, Vec field, const char func[], Cosmo3dFFT **fft)
{
  PetscContainer container;
  Cosmo3dFFT    *f;
  MPI_Comm       comm = PetscObjectComm((PetscObject)da);

  PetscFunctionBegin;
  PetscCall(Cosmo3dCheckDMDA(da, func));
  PetscCall(PetscObjectQuery((PetscObject)da, "Cosmo3dFFT", (PetscObject *)&container));
  if (container)
    PetscCall(PetscContainerGetPointer(container, (void **)&f));
  else {
    PetscInt   xs, ys, zs, xm, ym, zm, *natural, npoints, rstart, slabstart;
    PetscInt64 nlocal;
    IS         from, to;
    Vec        global;

    PetscCall(Cosmo3dRegisterEvents());
    PetscCall(PetscLogEventBegin(COSMO3D_SetUp, 0, 0, 0, 0));
    PetscCall(PetscNew(&f));
    PetscCall(DMDAGetInfo(da, NULL, &f->M[0], &f->M[1], &f->M[2], NULL, NULL, NULL, &f->dof, NULL, NULL, NULL, NULL, NULL));
    fftw_mpi_init(); /* idempotent */
    f->alloc_local = fftw_mpi_local_size_3d(f->M[2], f->M[1], f->M[0] / 2 + 1, comm, &f->local_n0, &f->local_0_start);
    /* sizes in 64 bits before any allocation: the slab's entries must index a PetscInt Vec (the DMDA's global size
       V dof already does, so this guards FFTW's distribution rather than the user's grid) */
    nlocal = (PetscInt64)f->local_n0 * f->M[1] * f->M[0] * f->dof;
    PetscCheck(nlocal <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "%s: a slab of %" PetscInt64_FMT " entries does not fit a PetscInt; use more ranks or a smaller grid", func, nlocal);
    PetscCheck((size_t)PetscMax(f->alloc_local, 1) <= SIZE_MAX / sizeof(fftw_complex), PETSC_COMM_SELF, PETSC_ERR_MEM, "%s: FFTW asks for %" PetscInt64_FMT " complex entries", func, (PetscInt64)f->alloc_local);
    f->data = fftw_alloc_complex((size_t)PetscMax(f->alloc_local, 1));
    PetscCheck(f->data, PETSC_COMM_SELF, PETSC_ERR_MEM, "%s: FFTW could not allocate %" PetscInt64_FMT " complex entries", func, (PetscInt64)f->alloc_local);
    /* FFTW_ESTIMATE: the plan depends on the sizes only (FFTW_MEASURE would time candidates and could pick others) */
    f->c2r = fftw_mpi_plan_dft_c2r_3d(f->M[2], f->M[1], f->M[0], f->data, (double *)f->data, comm, FFTW_ESTIMATE);
    f->r2c = fftw_mpi_plan_dft_r2c_3d(f->M[2], f->M[1], f->M[0], (double *)f->data, f->data, comm, FFTW_ESTIMATE);
    PetscCheck(f->c2r && f->r2c, PETSC_COMM_SELF, PETSC_ERR_LIB, "%s: FFTW could not plan the %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " transforms", func, f->M[0], f->M[1], f->M[2]);

    /* the slab Vec: FFTW hands out the z-planes in rank order, so its ownership is the natural order's */
    PetscCall(VecCreateMPI(comm, (PetscInt)nlocal, PETSC_DETERMINE, &f->slab));
    PetscCall(VecGetOwnershipRange(f->slab, &slabstart, NULL));
    PetscCheck(slabstart == (PetscInt64)f->local_0_start * f->M[1] * f->M[0] * f->dof, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: FFTW's slabs are not in rank order", func);
    /* the scatter: the DMDA's points this rank owns, in their global order (x fastest), taken from the natural order */
    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    npoints = xm * ym * zm;
    PetscCall(PetscMalloc1(npoints, &natural));
    for (PetscInt k = 0, p = 0; k < zm; k++)
      for (PetscInt j = 0; j < ym; j++)
        for (PetscInt i = 0; i < xm; i++) natural[p++] = ((zs + k) * f->M[1] + ys + j) * f->M[0] + xs + i;
    PetscCall(DMCreateGlobalVector(da, &global));
    PetscCall(VecGetOwnershipRange(global, &rstart, NULL));
    PetscCall(ISCreateBlock(comm, f->dof, npoints, natural, PETSC_OWN_POINTER, &from));
    PetscCall(ISCreateStride(comm, npoints * f->dof, rstart, 1, &to));
    PetscCall(VecScatterCreate(f->slab, from, global, to, &f->toda));
    PetscCall(ISDestroy(&from));
    PetscCall(ISDestroy(&to));
    PetscCall(VecDestroy(&global));

    PetscCall(PetscLogEventEnd(COSMO3D_SetUp, 0, 0, 0, 0));
    PetscCall(PetscContainerCreate(comm, &container));
    PetscCall(PetscContainerSetPointer(container, f));
    PetscCall(PetscContainerSetUserDestroy(container, Cosmo3dFFTDestroy));
    PetscCall(PetscObjectCompose((PetscObject)da, "Cosmo3dFFT", (PetscObject)container));
    PetscCall(PetscContainerDestroy(&container));
  }
  if (field) {
    PetscInt  xm, ym, zm, n, nlocal;
    PetscBool ok;

    PetscCall(DMDAGetCorners(da, NULL, NULL, NULL, &xm, &ym, &zm));
    PetscCall(VecGetSize(field, &n));
    PetscCall(VecGetLocalSize(field, &nlocal));
    ok = (PetscBool)(n == f->M[0] * f->M[1] * f->M[2] * f->dof && nlocal == xm * ym * zm * f->dof);
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &ok, 1, MPIU_BOOL, MPI_LAND, comm));
    PetscCheck(ok, comm, PETSC_ERR_ARG_INCOMP, "%s: the field Vec (size %" PetscInt_FMT ", %" PetscInt_FMT " here) is not a global Vec of the DMDA (size %" PetscInt_FMT ", %" PetscInt_FMT " here): create it with DMCreateGlobalVector()", func, n,
               nlocal, f->M[0] * f->M[1] * f->M[2] * f->dof, xm * ym * zm * f->dof);
  }
  *fft = f;
  PetscFunctionReturn(0);
}

/*@
  Cosmo3dFieldGenerate - fills a global Vec of a periodic 3-D DMDA with a Gaussian random field of power spectrum
  P(k) = A k^-n, A = exp(logA), and the channels derived from it (cosmo3dfields.h gives the units and the channels)

  Collective on da

  Input Parameters:
+ da   - a 3-D DMDA, periodic in x, y and z, with 1 to 4 degrees of freedom (the channels); any stencil and decomposition
. logA - the natural logarithm of the amplitude (the power at k = 1 radian per cell), in [-10, 10]
. n    - the slope, in [0, 5]
- seed - the realisation: the same seed gives the same field on any number of ranks (to the FFT's round-off)

  Output Parameter:
. field - a global Vec of da

  Notes:
  The first call on a DMDA plans its FFTs and builds the scatter from FFTW's slabs to the DMDA's boxes, and keeps them
  on the DMDA for the next calls. Memory per rank: the field, its copy in FFTW's slabs and two half-complex arrays of
  one channel.

  Level: intermediate

.seealso: `Cosmo3dFieldSample()`, `Cosmo3dFieldPowerSpectrum()`, `Cosmo3dFieldVariance()`
@*/
PetscErrorCode Cosmo3dFieldGenerate(DM da, PetscReal logA, PetscReal n, PetscInt64 seed, Vec field)
{
  const char   *func = "Cosmo3dFieldGenerate";
  MPI_Comm      comm;
  Cosmo3dFFT   *f;
  PetscInt      nx, nchan;
  PetscInt64    nmodes;
  PetscReal     ampV, *base, *slab, *modes, *wx, *wy, *wz;
  const double *real;

  PetscFunctionBegin;
  PetscCheck(field, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s: the field Vec is NULL", func);
  PetscCall(Cosmo3dCheckDMDA(da, func));
  comm = PetscObjectComm((PetscObject)da);
  PetscCall(Cosmo3dCheckParameters(comm, logA, n, func));
  PetscCall(Cosmo3dCheckCollective(comm, logA, n, seed, func));
  PetscCall(Cosmo3dGetFFT(da, field, func, &f));
  nx     = f->M[0] / 2 + 1;
  nmodes = (PetscInt64)f->local_n0 * f->M[1] * nx;
  ampV   = PetscSqrtReal(PetscExpReal(logA) / ((PetscReal)f->M[0] * f->M[1] * f->M[2]));
  modes  = (PetscReal *)f->data;
  real   = (const double *)f->data;

  /* base[m] = sqrt(P(|k|)/V) z_m on this rank's half-complex modes, (re, im) interlaced */
  PetscCall(PetscLogEventBegin(COSMO3D_Modes, 0, 0, 0, 0));
  PetscCall(PetscMalloc1(2 * PetscMax(nmodes, 1), &base));
  for (PetscInt64 i0 = 0, p = 0; i0 < f->local_n0; i0++) {
    const PetscInt64 mz = Cosmo3dSigned(f->local_0_start + i0, f->M[2]);

    for (PetscInt i1 = 0; i1 < f->M[1]; i1++) {
      const PetscInt64 my = Cosmo3dSigned(i1, f->M[1]);

      for (PetscInt64 mx = 0; mx < nx; mx++, p++) {
        double re = 0, im = 0;

        if (Cosmo3dKept(f->M, mx, my, mz)) {
          const PetscReal a = ampV * PetscExpReal(-0.25 * n * PetscLogReal(Cosmo3dK2(f->M, mx, my, mz))); /* sqrt(A k^-n / V) */

          Cosmo3dModeNoise((uint64_t)seed, mx, my, mz, &re, &im);
          re *= a, im *= a;
        }
        base[2 * p] = re, base[2 * p + 1] = im;
      }
    }
  }

  /* the channels filtered from delta, one inverse FFT each, into the slab Vec (padded rows of 2 nx reals) */
  nchan = PetscMin(f->dof, 3);
  PetscCall(VecGetArrayWrite(f->slab, &slab));
  PetscCall(PetscMalloc3(f->M[0], &wx, f->M[1], &wy, f->M[2], &wz));
  for (PetscInt c = 0; c < nchan; c++) {
    /* the Gaussian filter is a product over the axes: exp(-k^2 R^2/2) = wx[mx] wy[my] wz[mz] */
    const PetscReal R    = c == 0 ? 0.0 : (c == 1 ? COSMO3D_SMOOTHING_R1 : COSMO3D_SMOOTHING_R2);
    PetscReal      *w[3] = {wx, wy, wz};

    for (PetscInt d = 0; d < 3; d++)
      for (PetscInt i = 0; i < f->M[d]; i++) {
        const PetscReal k = 2 * PETSC_PI * Cosmo3dSigned(i, f->M[d]) / f->M[d];

        w[d][i] = PetscExpReal(-0.5 * k * k * R * R);
      }
    for (PetscInt64 i0 = 0, p = 0; i0 < f->local_n0; i0++)
      for (PetscInt i1 = 0; i1 < f->M[1]; i1++)
        for (PetscInt64 mx = 0; mx < nx; mx++, p++) {
          const PetscReal wm = wz[f->local_0_start + i0] * wy[i1] * wx[mx];

          modes[2 * p] = wm * base[2 * p], modes[2 * p + 1] = wm * base[2 * p + 1];
        }
    PetscCall(PetscLogEventEnd(COSMO3D_Modes, 0, 0, 0, 0));
    PetscCall(Cosmo3dExecute(f->c2r, f->M));
    PetscCall(PetscLogEventBegin(COSMO3D_Modes, 0, 0, 0, 0));
    for (PetscInt64 i0 = 0, p = 0; i0 < f->local_n0; i0++)
      for (PetscInt64 i1 = 0; i1 < f->M[1]; i1++)
        for (PetscInt64 i2 = 0; i2 < f->M[0]; i2++, p++) slab[p * f->dof + c] = real[(i0 * f->M[1] + i1) * 2 * nx + i2];
  }
  PetscCall(PetscFree(base));
  PetscCall(PetscFree3(wx, wy, wz));
  if (f->dof > 3) { /* the lognormal contrast exp(delta - s^2/2) - 1, s^2 the mean of delta^2 over the whole grid */
    const PetscInt64 npoints = (PetscInt64)f->local_n0 * f->M[1] * f->M[0];
    PetscReal        s2      = 0;

    for (PetscInt64 p = 0; p < npoints; p++) s2 += slab[p * f->dof] * slab[p * f->dof];
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &s2, 1, MPIU_REAL, MPIU_SUM, comm));
    s2 /= (PetscReal)f->M[0] * f->M[1] * f->M[2];
    for (PetscInt64 p = 0; p < npoints; p++) slab[p * f->dof + 3] = expm1(slab[p * f->dof] - 0.5 * s2);
  }
  PetscCall(VecRestoreArrayWrite(f->slab, &slab));
  PetscCall(PetscLogEventEnd(COSMO3D_Modes, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(COSMO3D_Scatter, 0, 0, 0, 0));
  PetscCall(VecScatterBegin(f->toda, f->slab, field, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(f->toda, f->slab, field, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(PetscLogEventEnd(COSMO3D_Scatter, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@
  Cosmo3dFieldPowerSpectrum - the shell-averaged power spectrum of one channel of a field on a periodic 3-D DMDA

  Collective on da

  Input Parameters:
+ da      - the 3-D periodic DMDA
. field   - a global Vec of da
. channel - the channel, in [0, dof)
- nbins   - the number of shells: shell j holds the modes with (j + 1/2) dk <= |k| < (j + 3/2) dk and 0 < |k| < pi (the
            modes a field of Cosmo3dFieldGenerate() has; beyond pi a shell would be cut by the cube), dk = 2 pi / max(Mx,
            My, Mz) (the fundamental mode of the longest axis); nbins = max(Mx, My, Mz)/2 holds them all

  Output Parameters:
+ k     - the geometric mean of |k| over the modes of each shell (radians per cell; 0 for an empty shell)
. power - the mean over the modes of each shell of |FFT(field)_m|^2 / V: an estimate of P(k) (cosmo3dfields.h)
- count - the number of modes in each shell (m and -m counted apart)

  Level: intermediate

.seealso: `Cosmo3dFieldFitPowerLaw()`, `Cosmo3dFieldGenerate()`
@*/
PetscErrorCode Cosmo3dFieldPowerSpectrum(DM da, Vec field, PetscInt channel, PetscInt nbins, PetscReal k[], PetscReal power[], PetscInt64 count[])
{
  const char        *func = "Cosmo3dFieldPowerSpectrum";
  MPI_Comm           comm;
  Cosmo3dFFT        *f;
  PetscInt           nx;
  PetscReal          dk, V, *sums;
  const double      *modes;
  double            *real;
  const PetscScalar *slab;

  PetscFunctionBegin;
  PetscCheck(field, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s: the field Vec is NULL", func);
  PetscCall(Cosmo3dGetFFT(da, field, func, &f));
  comm = PetscObjectComm((PetscObject)da);
  PetscCheck(channel >= 0 && channel < f->dof, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: channel %" PetscInt_FMT " must be in [0, %" PetscInt_FMT ") (the DMDA's dof)", func, channel, f->dof);
  PetscCheck(nbins >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: nbins = %" PetscInt_FMT " must be >= 1", func, nbins);
  nx    = f->M[0] / 2 + 1;
  dk    = 2 * PETSC_PI / PetscMax(f->M[0], PetscMax(f->M[1], f->M[2]));
  V     = (PetscReal)f->M[0] * f->M[1] * f->M[2];
  real  = (double *)f->data;
  modes = (const double *)f->data;

  PetscCall(PetscLogEventBegin(COSMO3D_Scatter, 0, 0, 0, 0));
  PetscCall(VecScatterBegin(f->toda, field, f->slab, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(f->toda, field, f->slab, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(PetscLogEventEnd(COSMO3D_Scatter, 0, 0, 0, 0));
  PetscCall(VecGetArrayRead(f->slab, &slab));
  for (PetscInt64 i0 = 0, p = 0; i0 < f->local_n0; i0++)
    for (PetscInt64 i1 = 0; i1 < f->M[1]; i1++)
      for (PetscInt64 i2 = 0; i2 < f->M[0]; i2++, p++) real[(i0 * f->M[1] + i1) * 2 * nx + i2] = PetscRealPart(slab[p * f->dof + channel]);
  PetscCall(VecRestoreArrayRead(f->slab, &slab));
  PetscCall(Cosmo3dExecute(f->r2c, f->M));

  /* per shell: sum |F|^2 / V, sum log|k|, count (a half-complex mode 0 < mx < Mx/2 stands for m and -m) */
  PetscCall(PetscCalloc1(3 * nbins, &sums));
  for (PetscInt64 i0 = 0, p = 0; i0 < f->local_n0; i0++) {
    const PetscInt64 mz = Cosmo3dSigned(f->local_0_start + i0, f->M[2]);

    for (PetscInt64 i1 = 0; i1 < f->M[1]; i1++) {
      const PetscInt64 my = Cosmo3dSigned(i1, f->M[1]);

      for (PetscInt64 mx = 0; mx < nx; mx++, p++) {
        const PetscReal  kk = PetscSqrtReal(Cosmo3dK2(f->M, mx, my, mz));
        const PetscInt64 j  = (PetscInt64)PetscFloorReal(kk / dk + 0.5) - 1;
        const PetscReal  w  = (mx == 0 || 2 * mx == f->M[0]) ? 1.0 : 2.0;

        if (!Cosmo3dKept(f->M, mx, my, mz) || j < 0 || j >= nbins) continue;
        sums[3 * j] += w * (modes[2 * p] * modes[2 * p] + modes[2 * p + 1] * modes[2 * p + 1]) / V;
        sums[3 * j + 1] += w * PetscLogReal(kk);
        sums[3 * j + 2] += w;
      }
    }
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 3 * nbins, MPIU_REAL, MPIU_SUM, comm));
  for (PetscInt j = 0; j < nbins; j++) {
    const PetscReal c = sums[3 * j + 2];

    if (k) k[j] = c > 0 ? PetscExpReal(sums[3 * j + 1] / c) : 0.0;
    if (power) power[j] = c > 0 ? sums[3 * j] / c : 0.0;
    if (count) count[j] = (PetscInt64)c;
  }
  PetscCall(PetscFree(sums));
  PetscFunctionReturn(0);
}

#else /* PETSc without FFTW */

PetscErrorCode Cosmo3dFieldGenerate(DM da, PetscReal logA, PetscReal n, PetscInt64 seed, Vec field)
{
  SETERRQ(PetscObjectComm((PetscObject)da), PETSC_ERR_SUP, "Cosmo3dFieldGenerate: the fields are made with FFTW's MPI transforms, and this PETSc was configured without FFTW: reconfigure it with --download-fftw (Debian's petsc-dev has it)");
}

PetscErrorCode Cosmo3dFieldPowerSpectrum(DM da, Vec field, PetscInt channel, PetscInt nbins, PetscReal k[], PetscReal power[], PetscInt64 count[])
{
  SETERRQ(PetscObjectComm((PetscObject)da), PETSC_ERR_SUP, "Cosmo3dFieldPowerSpectrum: the spectrum is measured with FFTW's MPI transforms, and this PETSc was configured without FFTW: reconfigure it with --download-fftw (Debian's petsc-dev has it)");
}
#endif
