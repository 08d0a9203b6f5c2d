static const char help[] = "PetNet's own erf and exp (petnet/private/mathimpl.h) against libm, and the gelu layer's kernels built on them:\n"
                           "  erf on -n + 1 equispaced points of [-10, 10] (default 2,000,001) in double against erf, in float against erff:\n"
                           "  at most -max_ulp_double (default 2) and -max_ulp_float (default 2) units in the last place, and against the\n"
                           "  more accurate erfl and double erf (reported); exp in double on [-708, 709] and in float on [-87, 88] against\n"
                           "  exp and expf, at most -max_ulp_exp (default 2); the special values exact (+-0 with their sign, +-1 at +-inf\n"
                           "  and beyond 6 or 4, NaN, tiny and subnormal x as libm); and every gelu kernel (forward, backward, jvp in double\n"
                           "  and float, the second-order term) bit for bit the formula on these functions, within -max_gelu (default 4)\n"
                           "  units of round-off of |x| of the formula on libm's erf and exp.\n";

#include <petnet.h>
#include <petnet/private/mathimpl.h>
#include <float.h>

/* |y - ref| in units in the last place of the double nearest to ref (the smallest subnormal at 0) */
static double ULPDouble(double y, long double ref)
{
  const double r = fabs((double)ref), ulp = r == 0 ? 4.9406564584124654e-324 : nextafter(r, INFINITY) - r;

  return (double)(fabsl((long double)y - ref) / ulp);
}

/* the same in float, ref given in double */
static double ULPFloat(float y, double ref)
{
  const float r = fabsf((float)ref), ulp = r == 0 ? 1.4e-45f : nextafterf(r, INFINITY) - r;

  return fabs((double)y - ref) / ulp;
}

typedef struct {
  const char *what;
  double      worst, at, limit; /* limit < 0: reported only */
} Worst;

static void Track(Worst *w, double err, double x)
{
  if (err > w->worst || (isnan(err) && !isnan(w->worst))) {
    w->worst = err;
    w->at    = x;
  }
}

/* same value and sign, or both NaN */
static PetscBool Same(double a, double b)
{
  return (PetscBool)((isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)));
}

/* the gelu layer's kernels on x (N values, double and float) against the formula on PetNet's erf and exp (bitwise) and
   on libm's (in units of eps |x|) */
static PetscErrorCode CheckGELU(PetscInt N, const double *x, PetscReal maxgelu)
{
  Layer        layer;
  PetNetShape  in = {1, {1}};
  double      *y, *dy, *dx, *jy, *dxdot, *xdot;
  float       *xf, *yf, *dyf, *dxf, *jyf;
  const double s = 0.70710678118654752440, c = 0.39894228040143267794;
  double       worst[3] = {0, 0, 0};

  PetscFunctionBegin;
  PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
  PetscCall(LayerSetType(layer, LAYERGELU));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerSetUp(layer));
  PetscCall(PetscMalloc6(N, &y, N, &dy, N, &dx, N, &jy, N, &dxdot, N, &xdot));
  PetscCall(PetscMalloc5(N, &xf, N, &yf, N, &dyf, N, &dxf, N, &jyf));
  for (PetscInt i = 0; i < N; i++) {
    dy[i]    = PetscCosReal(0.9 * i + 0.4);
    xdot[i]  = PetscSinReal(0.3 * i + 0.1);
    dxdot[i] = 0;
    xf[i]    = (float)x[i];
    dyf[i]   = (float)dy[i];
  }
  PetscCall(LayerForwardArray(layer, N, NULL, x, y));
  PetscCall(LayerBackwardArray(layer, N, NULL, x, y, dy, dx, NULL));
  PetscCall(LayerJVPArray(layer, N, NULL, x, y, dy, NULL, jy));
  PetscCall(LayerSOBackwardArray(layer, N, NULL, x, y, xdot, NULL, NULL, dy, dxdot, NULL));
  {
    const float *xs[1]  = {xf};
    float       *dxs[1] = {dxf};

    PetscCall(LayerForwardSingle(layer, N, NULL, xs, yf));
    PetscCall(LayerBackwardSingle(layer, N, NULL, xs, yf, dyf, dxs, NULL));
    PetscCall(LayerJVPSingle(layer, N, NULL, xs, yf, (const float *const *)&dyf, NULL, jyf));
  }
  for (PetscInt i = 0; i < N; i++) {
    const double v = x[i], f = 0.5 * v * (1.0 + PetNetErfDouble(v * s)), df = 0.5 * (1.0 + PetNetErfDouble(v * s)) + v * PetNetExpDouble(-0.5 * v * v) * c;
    const double d2f = (2.0 - v * v) * PetNetExpDouble(-0.5 * v * v) * c;
    const float  vf = xf[i], ff = 0.5f * vf * (1.0f + PetNetErfFloat(vf * (float)s)), dff = 0.5f * (1.0f + PetNetErfFloat(vf * (float)s)) + vf * PetNetExpFloat(-0.5f * vf * vf) * (float)c;
    const double scale = DBL_EPSILON * PetscMax(fabs(v), 1e-300);

    PetscCheck(Same(y[i], f) && Same(dx[i], df * dy[i]) && Same(jy[i], df * dy[i]) && Same(dxdot[i], 0.0 + d2f * xdot[i] * dy[i]), PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "gelu's double kernels at x = %.17g: y %.17g dx %.17g jvp %.17g second order %.17g, not the formula's %.17g %.17g %.17g %.17g", v, y[i], dx[i], jy[i], dxdot[i], f, df * dy[i], df * dy[i], d2f * xdot[i] * dy[i]);
    PetscCheck(Same(yf[i], ff) && Same(dxf[i], dff * dyf[i]) && Same(jyf[i], dff * dyf[i]), PETSC_COMM_SELF, PETSC_ERR_PLIB, "gelu's float kernels at x = %.9g: y %.9g dx %.9g jvp %.9g, not the formula's %.9g %.9g", (double)vf, (double)yf[i],
               (double)dxf[i], (double)jyf[i], (double)ff, (double)(dff * dyf[i]));
    if (isfinite(v)) { /* against the same formulas on libm, in units of eps |x| (cancellation for x < 0 is the formula's) */
      worst[0] = PetscMax(worst[0], fabs(f - 0.5 * v * (1.0 + erf(v * s))) / scale);
      worst[1] = PetscMax(worst[1], fabs(df - (0.5 * (1.0 + erf(v * s)) + v * exp(-0.5 * v * v) * c)) / DBL_EPSILON);
      worst[2] = PetscMax(worst[2], fabs(d2f - (2.0 - v * v) * exp(-0.5 * v * v) * c) / DBL_EPSILON);
    }
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "gelu kernels: double and float forward, backward, jvp and the second-order term bit for bit the formula; against libm's erf and exp: f within %.2f eps |x|, f' within %.2f eps, f'' within %.2f eps (limit %.2f)\n", worst[0],
                        worst[1], worst[2], (double)maxgelu));
  PetscCheck(worst[0] <= maxgelu && worst[1] <= maxgelu && worst[2] <= maxgelu, PETSC_COMM_SELF, PETSC_ERR_PLIB, "gelu on PetNet's erf and exp is off libm's by %.2f, %.2f, %.2f units (f in eps |x|, f' and f'' in eps), more than %.2f", worst[0],
             worst[1], worst[2], (double)maxgelu);
  PetscCall(PetscFree6(y, dy, dx, jy, dxdot, xdot));
  PetscCall(PetscFree5(xf, yf, dyf, dxf, jyf));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  n = 2000000, ngelu = 100001;
  PetscReal maxd = 2, maxf = 2, maxe = 2, maxgelu = 4;
  Worst     w[8] = {
          {"erf double against libm erf", 0, 0, 0},
          {"erf double against erfl", 0, 0, -1},
          {"erf float against erff", 0, 0, 0},
          {"erf float against double erf", 0, 0, -1},
          {"exp double on [-708, 709] against exp", 0, 0, 0},
          {"exp float on [-87, 88] against expf", 0, 0, 0},
          {"exp double on [-50, 0] (gelu's phi) against exp", 0, 0, 0},
          {"exp float on [-50, 0] against expf", 0, 0, 0},
  };
  const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e-300, -1e-300, 2.2250738585072014e-308, 1e-310, -4.9406564584124654e-324, 1e-20, 1e-9, 5.9, 5.95, 6.0, 7.0, -27.0, 1e300, 1.0, -1.0, 0.99999999999999989};
  double      *gx;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n_gelu", &ngelu, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_ulp_double", &maxd, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_ulp_float", &maxf, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_ulp_exp", &maxe, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_gelu", &maxgelu, NULL));
  PetscCheck(n >= 1 && ngelu >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-n %" PetscInt_FMT " and -n_gelu %" PetscInt_FMT ": give at least 1 interval", n, ngelu);
  w[0].limit = (double)maxd;
  w[2].limit = (double)maxf;
  w[4].limit = w[5].limit = w[6].limit = w[7].limit = (double)maxe;

  /* the sweeps: x = -10 + 20 i/n, and exp's arguments spread over its domain by the same i */
  for (PetscInt i = 0; i <= n; i++) {
    const double x = -10.0 + 20.0 * (double)i / (double)n, u = (double)i / (double)n;
    const float  xf = (float)x;
    const double ed = -708.0 + 1417.0 * u, eg = -50.0 * u;
    const float  ef = (float)(-87.0 + 175.0 * u), egf = (float)eg;
    const double yd = PetNetErfDouble(x);
    const float  yf = PetNetErfFloat(xf);

    Track(&w[0], ULPDouble(yd, (long double)erf(x)), x);
    Track(&w[1], ULPDouble(yd, erfl((long double)x)), x);
    Track(&w[2], ULPFloat(yf, (double)erff(xf)), xf);
    Track(&w[3], ULPFloat(yf, erf((double)xf)), xf);
    Track(&w[4], ULPDouble(PetNetExpDouble(ed), (long double)exp(ed)), ed);
    Track(&w[5], ULPFloat(PetNetExpFloat(ef), (double)expf(ef)), ef);
    Track(&w[6], ULPDouble(PetNetExpDouble(eg), (long double)exp(eg)), eg);
    Track(&w[7], ULPFloat(PetNetExpFloat(egf), (double)expf(egf)), egf);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "%" PetscInt_FMT " points:\n", n + 1));
  for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++) {
    if (w[k].limit >= 0)
      PetscCall(PetscPrintf(PETSC_COMM_SELF, "  %-48s max %.3f ulp at %.17g (limit %.2f)\n", w[k].what, w[k].worst, w[k].at, w[k].limit));
    else
      PetscCall(PetscPrintf(PETSC_COMM_SELF, "  %-48s max %.3f ulp at %.17g\n", w[k].what, w[k].worst, w[k].at));
  }
  for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++) PetscCheck(w[k].limit < 0 || w[k].worst <= w[k].limit, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: %.3f ulp at x = %.17g, more than %.2f", w[k].what, w[k].worst, w[k].at, w[k].limit);

  /* the special values: exactly libm's, but for the last bit of tiny normal x (erf x = 2x/sqrt(pi) rounded) */
  for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
    const double x = special[k], yd = PetNetErfDouble(x), ld = erf(x);
    const float  xf = (float)x, yf = PetNetErfFloat(xf), lf = erff(xf);

    PetscCheck(Same(yd, ld) || (isfinite(x) && ULPDouble(yd, (long double)ld) <= 1), PETSC_COMM_SELF, PETSC_ERR_PLIB, "erf(%.17g) = %.17g, libm %.17g", x, yd, ld);
    PetscCheck(Same(yf, lf) || (isfinite(x) && ULPFloat(yf, (double)lf) <= 1), PETSC_COMM_SELF, PETSC_ERR_PLIB, "erff(%.9g) = %.9g, libm %.9g", (double)xf, (double)yf, (double)lf);
  }
  PetscCheck(Same(PetNetErfDouble(0.0), 0.0) && Same(PetNetErfDouble(-0.0), -0.0) && PetNetErfDouble(INFINITY) == 1 && PetNetErfDouble(-INFINITY) == -1 && isnan(PetNetErfDouble(NAN)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "erf of +-0, +-inf or NaN");
  PetscCheck(Same(PetNetErfFloat(0.0f), 0.0) && Same(PetNetErfFloat(-0.0f), -0.0) && PetNetErfFloat(INFINITY) == 1 && PetNetErfFloat(-INFINITY) == -1 && isnan(PetNetErfFloat(NAN)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "erff of +-0, +-inf or NaN");
  PetscCheck(PetNetExpDouble(-INFINITY) == 0 && PetNetExpDouble(-750) == 0 && PetNetExpDouble(0) == 1 && PetNetExpDouble(710) == INFINITY && isnan(PetNetExpDouble(NAN)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "exp of -inf, -750, 0, 710 or NaN");
  PetscCheck(PetNetExpFloat(-INFINITY) == 0 && PetNetExpFloat(-104) == 0 && PetNetExpFloat(0) == 1 && PetNetExpFloat(89) == INFINITY && isnan(PetNetExpFloat(NAN)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "expf of -inf, -104, 0, 89 or NaN");
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "special values: erf(+-0) = +-0, erf(+-inf) = +-1, NaN, tiny and subnormal x, 1 beyond 6 (float: 4) as libm; exp 0 below its domain, inf above, NaN\n"));

  /* the gelu layer on [-10, 10] and the special values */
  PetscCall(PetscMalloc1(ngelu + 1 + (PetscInt)(sizeof(special) / sizeof(special[0])), &gx));
  for (PetscInt i = 0; i <= ngelu; i++) gx[i] = -10.0 + 20.0 * (double)i / (double)ngelu;
  for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) gx[ngelu + 1 + k] = special[k];
  PetscCall(CheckGELU(ngelu + 1 + (PetscInt)(sizeof(special) / sizeof(special[0])), gx, maxgelu));
  PetscCall(PetscFree(gx));
  PetscCall(PetscFinalize());
  return 0;
}
