static const char help[] = "Accuracy of the tanh layer's forward pass (its own branch-free tanh, not libm's) against long double tanhl:\n"
                           "  at most -max_ulp (default 4) units in the last place over -samples inputs (default 200000 per rank) drawn\n"
                           "  log-uniformly in magnitude over [1e-12, 30] with both signs, plus exact values at +-0, +-20, +-30, +-inf, a\n"
                           "  subnormal, and NaN.\n";

#include <petnet.h>
#include <math.h>

/* |y - ref| in units in the last place of the double nearest to ref */
static double ULPError(double y, long double ref)
{
  const double r = (double)ref, ulp = nextafter(fabs(r), INFINITY) - fabs(r);

  return (double)(fabsl((long double)y - ref) / ulp);
}

int main(int argc, char **argv)
{
  PetNetShape        in     = {1, {1}};
  PetscInt           n      = 200000, nspecial, rstart;
  PetscReal          maxulp = 4.0, worst = 0.0, worstx = 0.0, sum = 0.0;
  const double       special[] = {0.0, -0.0, 20.0, -20.0, 30.0, -30.0, INFINITY, -INFINITY, 4.9e-324, NAN};
  const double       expect[]  = {0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 4.9e-324, NAN};
  Net                net;
  Vec                X, Y;
  PetscScalar       *x;
  const PetscScalar *y;
  PetscRandom        rnd;
  MPI_Comm           comm;
  PetscMPIInt        rank, size;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-samples", &n, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_ulp", &maxulp, NULL));
  nspecial = (PetscInt)(sizeof(special) / sizeof(special[0]));

  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "tanh"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, nspecial + n, &X, &Y));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 11 + (unsigned long)rank));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetOwnershipRange(X, &rstart, NULL));
  PetscCall(VecGetArrayWrite(X, &x));
  for (PetscInt i = 0; i < nspecial; i++) x[i] = special[i];
  for (PetscInt i = nspecial; i < nspecial + n; i++) { /* |x| = 10^e, e uniform in [-12, log10(30)], both signs */
    PetscReal e, s;

    PetscCall(PetscRandomGetValueReal(rnd, &e));
    PetscCall(PetscRandomGetValueReal(rnd, &s));
    x[i] = (s < 0.5 ? -1.0 : 1.0) * PetscPowReal(10.0, -12.0 + e * (12.0 + PetscLog10Real(30.0)));
  }
  PetscCall(VecRestoreArrayWrite(X, &x));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(NetForward(net, X, Y));

  PetscCall(VecGetArrayRead(X, (const PetscScalar **)&x));
  PetscCall(VecGetArrayRead(Y, &y));
  for (PetscInt i = 0; i < nspecial; i++) {
    const double v = PetscRealPart(y[i]);

    if (isnan(expect[i]))
      PetscCheck(isnan(v), PETSC_COMM_SELF, PETSC_ERR_PLIB, "tanh(NaN) = %g, not NaN", v);
    else
      PetscCheck(v == expect[i] && signbit(v) == signbit(expect[i]), PETSC_COMM_SELF, PETSC_ERR_PLIB, "tanh(%g) = %.17g, not %.17g", special[i], v, expect[i]);
  }
  for (PetscInt i = nspecial; i < nspecial + n; i++) {
    const double err = ULPError(PetscRealPart(y[i]), tanhl((long double)PetscRealPart(x[i])));

    sum += err;
    if (err > worst) {
      worst  = err;
      worstx = PetscRealPart(x[i]);
    }
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(VecRestoreArrayRead(X, (const PetscScalar **)&x));
  PetscCheck(worst <= maxulp, PETSC_COMM_SELF, PETSC_ERR_PLIB, "tanh(%.17g) is off by %.2f ulp (limit %.2f)", (double)worstx, (double)worst, (double)maxulp);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, comm));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &worst, 1, MPIU_REAL, MPIU_MAX, comm));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscPrintf(comm, "tanh: special values exact, max error %.2f ulp (limit %.2f), mean %.3f ulp\n", (double)worst, (double)maxulp, (double)(sum / ((PetscReal)n * size))));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
