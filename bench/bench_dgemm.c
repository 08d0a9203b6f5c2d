static const char help[] = "Measures this machine's dgemm and sgemm rates (GFLOP/s) through its BLAS, for the shapes of a training step.\n"
                           "The first line names the BLAS, its kernels (core) and the CPU's features (PetNetBLASView()); the last is\n"
                           "dgemm_gflops=... sgemm_mlp_gflops=... blas_core=..., which share/bench/run reads.\n";

#include <petscsys.h>
#include <petscblaslapack.h>
#include <petnetsys.h>

/* GFLOP/s of C (m x n) = A^T (k x m)^T B (k x n), repeated until at least 0.5 s have passed */
static PetscErrorCode Rate(PetscInt m, PetscInt n, PetscInt k, PetscReal *gflops)
{
  PetscScalar   *A, *B, *C, one = 1.0, zero = 0.0;
  PetscBLASInt   bm, bn, bk;
  PetscLogDouble t0, t1;
  PetscInt       reps = 0;

  PetscFunctionBegin;
  PetscCall(PetscMalloc3(m * k, &A, k * n, &B, m * n, &C));
  for (PetscInt i = 0; i < m * k; i++) A[i] = PetscSinReal(i);
  for (PetscInt i = 0; i < k * n; i++) B[i] = PetscCosReal(i);
  PetscCall(PetscBLASIntCast(m, &bm));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(k, &bk));
  PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bm, &bn, &bk, &one, A, &bk, B, &bk, &zero, C, &bm));
  PetscCall(PetscTime(&t0));
  do {
    PetscCallBLAS("BLASgemm", BLASgemm_("T", "N", &bm, &bn, &bk, &one, A, &bk, B, &bk, &zero, C, &bm));
    reps++;
    PetscCall(PetscTime(&t1));
  } while (t1 - t0 < 0.5);
  *gflops = 2.0 * m * n * k * reps / (t1 - t0) / 1e9;
  PetscCall(PetscFree3(A, B, C));
  PetscFunctionReturn(0);
}

/* the single-precision GEMM of the same BLAS (PETSc's build wraps only the double one) */
extern void sgemm_(const char *, const char *, const PetscBLASInt *, const PetscBLASInt *, const PetscBLASInt *, const float *, const float *, const PetscBLASInt *, const float *, const PetscBLASInt *, const float *, float *, const PetscBLASInt *);

/* the same for sgemm (the rate of -net_precision single) */
static PetscErrorCode RateSingle(PetscInt m, PetscInt n, PetscInt k, PetscReal *gflops)
{
  float         *A, *B, *C, one = 1.0f, zero = 0.0f;
  PetscBLASInt   bm, bn, bk;
  PetscLogDouble t0, t1;
  PetscInt       reps = 0;

  PetscFunctionBegin;
  PetscCall(PetscMalloc3(m * k, &A, k * n, &B, m * n, &C));
  for (PetscInt i = 0; i < m * k; i++) A[i] = (float)PetscSinReal(i);
  for (PetscInt i = 0; i < k * n; i++) B[i] = (float)PetscCosReal(i);
  PetscCall(PetscBLASIntCast(m, &bm));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(k, &bk));
  sgemm_("T", "N", &bm, &bn, &bk, &one, A, &bk, B, &bk, &zero, C, &bm);
  PetscCall(PetscTime(&t0));
  do {
    sgemm_("T", "N", &bm, &bn, &bk, &one, A, &bk, B, &bk, &zero, C, &bm);
    reps++;
    PetscCall(PetscTime(&t1));
  } while (t1 - t0 < 0.5);
  *gflops = 2.0 * m * n * k * reps / (t1 - t0) / 1e9;
  PetscCall(PetscFree3(A, B, C));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscReal big, mlp, sbig, smlp;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetBLASView(PETSC_VIEWER_STDOUT_WORLD)); /* what the rates below ran on */
  PetscCall(Rate(1024, 1024, 1024, &big));
  PetscCall(Rate(256, 128, 784, &mlp));
  PetscCall(RateSingle(1024, 1024, 1024, &sbig));
  PetscCall(RateSingle(256, 128, 784, &smlp));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "dgemm: %.1f GFLOP/s at 1024^3, %.1f GFLOP/s at the MLP's first layer (256 x 128 x 784); sgemm: %.1f and %.1f\n", (double)big, (double)mlp, (double)sbig, (double)smlp));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "dgemm_gflops=%.2f dgemm_mlp_gflops=%.2f sgemm_gflops=%.2f sgemm_mlp_gflops=%.2f", (double)big, (double)mlp, (double)sbig, (double)smlp));
  { /* the BLAS's kernels (issue 31) */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }
  PetscCall(PetscFinalize());
  return 0;
}
