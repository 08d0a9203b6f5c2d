static const char help[] = "Spectrum on problems whose answers are known in closed form:\n"
                           "  -case operator  the 1-D Laplacian tridiag(-1, 2, -1) of size n (-n, default 60): EPS's top k against\n"
                           "                  2 - 2 cos(j pi/(n+1)); a diagonal matrix diag(1..n), whose Hutchinson and stochastic\n"
                           "                  Lanczos quadrature traces are exact for Rademacher probes (z_i^2 = 1); n Lanczos steps on\n"
                           "                  the Laplacian reproduce its extreme eigenvalues; the quadrature weights sum to 1\n"
                           "  -case weights   dense and conv2d weights (grouped and not) and a dense weight inside an ode layer, set to\n"
                           "                  matrices with known singular values: checks the rows x cols reading of each layout\n"
                           "  -case stiff     an ode layer du/dt = W u + b with W = [[-1, 0], [0, -lambda]] (-lambda, default 2000): the\n"
                           "                  stiffness ratio is lambda at every state; an explicit integrator is warned about\n"
                           "Each case errors (PetscCheck) when a number is off and prints rank-invariant numbers.\n";

#include <petnet.h>
#include <petnetspectrum.h> /* SLEPc: not in petnet.h */
#include "testutil.h"

/* The n x n MATAIJ with diagonal d (NULL: 2) and, when offdiag, -1 next to it */
static PetscErrorCode TestMatrix(MPI_Comm comm, PetscInt n, const PetscReal d[], PetscBool offdiag, Mat *A)
{
  PetscInt rstart, rend;

  PetscFunctionBegin;
  PetscCall(MatCreateAIJ(comm, PETSC_DECIDE, PETSC_DECIDE, n, n, 3, NULL, 1, NULL, A));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    PetscCall(MatSetValue(*A, i, i, d ? d[i] : 2.0, INSERT_VALUES));
    if (offdiag && i > 0) PetscCall(MatSetValue(*A, i, i - 1, -1.0, INSERT_VALUES));
    if (offdiag && i < n - 1) PetscCall(MatSetValue(*A, i, i + 1, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseOperator(MPI_Comm comm)
{
  PetscInt  n = 60, k = 5, nconv, nnodes;
  PetscReal eig[5], trace, se, *nodes, *weights, wsum = 0, lo = PETSC_MAX_REAL, hi = PETSC_MIN_REAL, *d, tr = 0;
  Mat       L, D;
  Spectrum  sp;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(SpectrumCreate(comm, &sp));
  PetscCall(SpectrumSetFromOptions(sp));

  /* the Laplacian: known eigenvalues */
  PetscCall(TestMatrix(comm, n, NULL, PETSC_TRUE, &L));
  PetscCall(SpectrumSetOperator(sp, L));
  PetscCall(SpectrumComputeEigenvalues(sp, k, &nconv, eig));
  PetscCheck(nconv == k, comm, PETSC_ERR_NOT_CONVERGED, "%" PetscInt_FMT " of %" PetscInt_FMT " eigenvalues converged", nconv, k);
  for (PetscInt j = 0; j < k; j++) {
    PetscReal exact = 2 - 2 * PetscCosReal((n - j) * PETSC_PI / (n + 1));

    PetscCheck(RelErr(eig[j], exact) <= 1e-10, comm, PETSC_ERR_PLIB, "Laplacian eigenvalue %" PetscInt_FMT ": EPS %.15g, exact %.15g", j + 1, (double)eig[j], (double)exact);
    PetscCall(PetscPrintf(comm, "laplacian n=%" PetscInt_FMT " lambda_%" PetscInt_FMT " = %.12f (exact %.12f)\n", n, j + 1, (double)eig[j], (double)exact));
  }
  PetscCall(PetscMalloc2(2 * n, &nodes, 2 * n, &weights));
  PetscCall(SpectrumComputeDensity(sp, 2, n, &nnodes, nodes, weights));
  for (PetscInt i = 0; i < nnodes; i++) {
    wsum += weights[i];
    lo = PetscMin(lo, nodes[i]);
    hi = PetscMax(hi, nodes[i]);
  }
  PetscCheck(PetscAbsReal(wsum - 1) <= 1e-12, comm, PETSC_ERR_PLIB, "The quadrature weights sum to %.15g, not 1", (double)wsum);
  PetscCheck(RelErr(hi, 2 - 2 * PetscCosReal(n * PETSC_PI / (n + 1))) <= 1e-8, comm, PETSC_ERR_PLIB, "Largest Lanczos node %.15g", (double)hi);
  PetscCheck(RelErr(lo, 2 - 2 * PetscCosReal(PETSC_PI / (n + 1))) <= 1e-8, comm, PETSC_ERR_PLIB, "Smallest Lanczos node %.15g", (double)lo);
  PetscCall(PetscPrintf(comm, "laplacian density: %" PetscInt_FMT " nodes, weights sum %.12f, support [%.10f, %.10f]\n", nnodes, (double)wsum, (double)lo, (double)hi));

  /* a diagonal matrix: Rademacher probes give its trace exactly */
  PetscCall(PetscMalloc1(n, &d));
  for (PetscInt i = 0; i < n; i++) {
    d[i] = i + 1;
    tr += d[i];
  }
  PetscCall(TestMatrix(comm, n, d, PETSC_FALSE, &D));
  PetscCall(SpectrumSetOperator(sp, D));
  PetscCall(SpectrumComputeTrace(sp, 3, &trace, &se));
  PetscCheck(RelErr(trace, tr) <= 1e-13 && se <= 1e-10 * tr, comm, PETSC_ERR_PLIB, "Hutchinson on diag(1..n): %.15g +- %g, exact %.15g", (double)trace, (double)se, (double)tr);
  PetscCall(SpectrumComputeDensity(sp, 3, 10, &nnodes, nodes, weights));
  trace = 0;
  for (PetscInt i = 0; i < nnodes; i++) trace += n * weights[i] * nodes[i];
  PetscCheck(RelErr(trace, tr) <= 1e-12, comm, PETSC_ERR_PLIB, "Stochastic Lanczos quadrature on diag(1..n): trace %.15g, exact %.15g", (double)trace, (double)tr);
  PetscCall(PetscPrintf(comm, "diagonal n=%" PetscInt_FMT ": trace %.10f (exact %.10f), SLQ %" PetscInt_FMT " nodes\n", n, (double)trace, (double)tr, nnodes));
  PetscCall(SpectrumComputeEigenvalues(sp, 3, &nconv, eig));
  PetscCheck(nconv == 3 && RelErr(eig[0], n) <= 1e-10 && RelErr(eig[2], n - 2) <= 1e-10, comm, PETSC_ERR_PLIB, "diag(1..n): top eigenvalues %g %g", (double)eig[0], (double)eig[2]);
  PetscCall(PetscPrintf(comm, "diagonal: lambda_1..3 = %.10f %.10f %.10f\n", (double)eig[0], (double)eig[1], (double)eig[2]));
  PetscCall(SpectrumView(sp, NULL));
  PetscCall(PetscFree(d));
  PetscCall(PetscFree2(nodes, weights));
  PetscCall(MatDestroy(&L));
  PetscCall(MatDestroy(&D));
  PetscCall(SpectrumDestroy(&sp));
  PetscFunctionReturn(0);
}

/* theta[start + off + i] = v[i], i < n, on the rank that owns each entry */
static PetscErrorCode SetParameters(Net net, PetscInt start, PetscInt n, const PetscScalar v[])
{
  Vec theta;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  for (PetscInt i = 0; i < n; i++) {
    PetscInt lo, hi;

    PetscCall(VecGetOwnershipRange(theta, &lo, &hi));
    if (start + i >= lo && start + i < hi) PetscCall(VecSetValue(theta, start + i, v[i], INSERT_VALUES));
  }
  PetscCall(VecAssemblyBegin(theta));
  PetscCall(VecAssemblyEnd(theta));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseWeights(MPI_Comm comm)
{
  Net         net;
  Spectrum    sp;
  Vec         theta;
  PetNetShape shape;
  PetscInt    n, start;
  PetscScalar conv[2 * 18] = {0}, grouped[4 * 2], dense[2 * 8] = {0}, inner[4] = {1, 2, 3, 4};
  /* expected singular values, descending */
  const PetscReal conv_sv[2] = {4, 3}, grouped_sv[2] = {5, 5}, dense_sv[2] = {2, 1}, inner_sv[2] = {5.464985704219043, 0.365966190626258};

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, &net));
  PetscCall(PetNetShapeFromString("3x3x2", &shape));
  PetscCall(NetSetInputShape(net, &shape));
  /* conv2d:2:3 on 3x3x2 -> 1x1x2 (weight 2 x 18), grouped 1x1 conv to 4 channels (weight 4 x 1), dense 2 x 4, ode(dense:2) */
  PetscCall(NetSetLayers(net, "conv2d:2:3,conv2d:4:1:groups=2,flatten,dense:2,ode(dense:2)"));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecZeroEntries(theta));
  /* conv 2 x 18 (row-major [Cout][KH][KW][Cg]): row 0 = 3 e_0, row 1 = 4 e_5 -> sigma 4, 3 */
  conv[0]      = 3;
  conv[18 + 5] = 4;
  PetscCall(NetGetLayerParameterRange(net, 0, &start, NULL));
  PetscCall(SetParameters(net, start, 36, conv));
  /* grouped: 4 output channels, Cg = 1 input channel each: a 4 x 1 matrix (3, 4, 0, 0)^T... as rows -> sigma 5 only;
     min(4, 1) = 1 singular value, here the column (3, 4, 0, 0) has norm 5 */
  grouped[0] = 3;
  grouped[1] = 4;
  grouped[2] = 0;
  grouped[3] = 0;
  PetscCall(NetGetLayerParameterRange(net, 1, &start, NULL));
  PetscCall(SetParameters(net, start, 4, grouped));
  /* dense 2 x 4: [[0, 2, 0, 0], [1, 0, 0, 0]] -> sigma 2, 1 */
  dense[1] = 2;
  dense[4] = 1;
  PetscCall(NetGetLayerParameterRange(net, 3, &start, NULL));
  PetscCall(SetParameters(net, start, 8, dense));
  /* inside the ode layer: dense 2 x 2 [[1, 2], [3, 4]] -> sigma^2 = 15 +- sqrt(221) */
  PetscCall(NetGetLayerParameterRange(net, 4, &start, NULL));
  PetscCall(SetParameters(net, start, 4, inner));

  PetscCall(SpectrumCreate(comm, &sp));
  PetscCall(SpectrumSetNet(sp, net));
  PetscCall(SpectrumSetFromOptions(sp));
  PetscCall(SpectrumComputeWeightSingularValues(sp, &n));
  PetscCheck(n == 4, comm, PETSC_ERR_PLIB, "%" PetscInt_FMT " weights found, expected 4", n);
  for (PetscInt i = 0; i < n; i++) {
    const char      *name;
    PetscInt         rows, cols;
    const PetscReal *sv, *want = i == 0 ? conv_sv : i == 1 ? grouped_sv : i == 2 ? dense_sv : inner_sv;

    PetscCall(SpectrumGetWeightSingularValues(sp, i, &name, &rows, &cols, &sv));
    for (PetscInt j = 0; j < PetscMin(rows, cols); j++) PetscCheck(RelErr(sv[j], want[j]) <= 1e-13, comm, PETSC_ERR_PLIB, "%s: singular value %" PetscInt_FMT " is %.15g, expected %.15g", name, j, (double)sv[j], (double)want[j]);
    PetscCall(PetscPrintf(comm, "%s: %" PetscInt_FMT " x %" PetscInt_FMT ", sigma_max %.12f sigma_min %.12f\n", name, rows, cols, (double)sv[0], (double)sv[PetscMin(rows, cols) - 1]));
  }
  PetscCall(SpectrumView(sp, NULL));
  PetscCall(SpectrumDestroy(&sp));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

static PetscErrorCode CaseStiff(MPI_Comm comm)
{
  Net         net;
  Spectrum    sp;
  Vec         X;
  PetNetShape shape;
  PetscInt    start, nlayers, n = PETSC_DECIDE, N = 2;
  PetscReal   lambda = 2000, ratio;
  PetscBool   warned;
  PetscScalar W[6] = {-1, 0, 0, 0, 0, 0}, *x;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-lambda", &lambda, NULL));
  W[3] = -lambda;
  PetscCall(NetCreate(comm, &net));
  PetscCall(PetNetShapeFromString("2", &shape));
  PetscCall(NetSetInputShape(net, &shape));
  PetscCall(NetSetLayers(net, "ode(0.01|dense:2)")); /* -layer0_ode_ts_dt 1e-3: stable for rk 4 (dt lambda = 2 < 2.78) */
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetLayerParameterRange(net, 0, &start, NULL));
  PetscCall(SetParameters(net, start, 6, W));
  /* a batch of N samples (1, 1), split over the ranks */
  PetscCall(PetscSplitOwnership(comm, &n, &N));
  PetscCall(VecCreateMPI(comm, 2 * n, 2 * N, &X));
  PetscCall(VecGetArrayWrite(X, &x));
  for (PetscInt i = 0; i < 2 * n; i++) x[i] = 1.0;
  PetscCall(VecRestoreArrayWrite(X, &x));

  PetscCall(SpectrumCreate(comm, &sp));
  PetscCall(SpectrumSetNet(sp, net));
  PetscCall(SpectrumSetBatch(sp, X, NULL));
  PetscCall(SpectrumSetFromOptions(sp));
  PetscCall(SpectrumComputeODEStiffness(sp, &nlayers, &ratio, &warned));
  PetscCheck(nlayers == 1 && RelErr(ratio, lambda) <= 1e-10, comm, PETSC_ERR_PLIB, "Stiffness ratio %.15g, expected %g", (double)ratio, (double)lambda);
  PetscCall(PetscPrintf(comm, "stiffness ratio %.10f, warning %s\n", (double)ratio, warned ? "printed" : "not printed"));
  PetscCall(SpectrumView(sp, NULL));
  PetscCall(SpectrumDestroy(&sp));
  PetscCall(VecDestroy(&X));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      which[32] = "operator";
  PetscBool isop, isw, isstiff;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", which, sizeof(which), NULL));
  PetscCall(PetscStrcmp(which, "operator", &isop));
  PetscCall(PetscStrcmp(which, "weights", &isw));
  PetscCall(PetscStrcmp(which, "stiff", &isstiff));
  if (isop)
    PetscCall(CaseOperator(PETSC_COMM_WORLD));
  else if (isw)
    PetscCall(CaseWeights(PETSC_COMM_WORLD));
  else if (isstiff)
    PetscCall(CaseStiff(PETSC_COMM_WORLD));
  else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-case %s: give operator, weights or stiff", which);
  PetscCall(PetscFinalize());
  return 0;
}
