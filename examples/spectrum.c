static const char help[] = "Spectra of a network with SLEPc: the top eigenvalues of the loss's Hessian (or Gauss-Newton matrix), its trace\n"
                           "and eigenvalue density, the input Jacobian's and the weights' singular values, the stiffness of ode layers.\n"
                           "  bin/spectrum -spectrum_load model.h5 -spectrum_samples 1000 -spectrum_k 5 -spectrum_hessian exact|gn\n"
                           "      a saved Net (NetSave(), bin/fashion -net_save) on the first training samples of Fashion-MNIST;\n"
                           "      without -spectrum_load the Net comes from the options (-net_layers ..., -net_seed), and\n"
                           "      -spectrum_data random draws the samples (any input shape, labels in [0, outputs)).\n"
                           "  bin/spectrum -spectrum_check_dense [-spectrum_check_net mlp|conv]\n"
                           "      a tiny network's Hessian assembled from exact Hessian-vector products, checked against central\n"
                           "      differences of the gradient; LAPACK's eigenvalues against EPS's, the exact trace against Hutchinson's\n"
                           "      and stochastic Lanczos quadrature's, a dense SVD of the input Jacobian against SLEPc's.\n"
                           "The Spectrum reads -spectrum_* (see -help), its EPS -spectrum_eps_*. Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnetspectrum.h> /* SLEPc: not in petnet.h */
#include <petscblaslapack.h>

/* A uniform number in [0, 1) from a hash of (stream, global index): the same data on any number of ranks */
static PetscReal Uniform(uint64_t stream, uint64_t i)
{
  uint64_t x = stream * 0x9e3779b97f4a7c15ULL + i + 0x632be59bd9b4e019ULL;

  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x = x ^ (x >> 31);
  return (PetscReal)(x >> 11) / 9007199254740992.0;
}

/* N random samples for net: inputs uniform in [-1, 1), integer labels in [0, outputs) */
static PetscErrorCode RandomBatch(Net net, PetscInt N, Vec *X, Vec *T)
{
  PetscInt     n = PETSC_DECIDE, size, nout, rstart, rend;
  PetNetShape  in, out;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &size));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(PetscSplitOwnership(PetscObjectComm((PetscObject)net), &n, &N));
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), n * size, N * size, X));
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), n, N, T));
  PetscCall(VecGetOwnershipRange(*X, &rstart, &rend));
  PetscCall(VecGetArrayWrite(*X, &a));
  for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = 2 * Uniform(1, (uint64_t)i) - 1;
  PetscCall(VecRestoreArrayWrite(*X, &a));
  PetscCall(VecGetOwnershipRange(*T, &rstart, &rend));
  PetscCall(VecGetArrayWrite(*T, &a));
  for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = PetscMin((PetscInt)(nout * Uniform(2, (uint64_t)i)), nout - 1);
  PetscCall(VecRestoreArrayWrite(*T, &a));
  PetscFunctionReturn(0);
}

/* Column j of a distributed Vec's owner, gathered: v into the replicated array col[N] */
static PetscErrorCode GatherToAll(Vec v, PetscScalar col[])
{
  Vec                all;
  VecScatter         sc;
  const PetscScalar *a;
  PetscInt           N;

  PetscFunctionBegin;
  PetscCall(VecScatterCreateToAll(v, &sc, &all));
  PetscCall(VecScatterBegin(sc, v, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, v, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetSize(all, &N));
  PetscCall(VecGetArrayRead(all, &a));
  PetscCall(PetscArraycpy(col, a, N));
  PetscCall(VecRestoreArrayRead(all, &a));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&all));
  PetscFunctionReturn(0);
}

/* The mean loss's gradient at the Net's parameters, replicated: g[P] */
static PetscErrorCode Gradient(Net net, Loss loss, Vec X, Vec T, Vec Y, Vec dY, Vec G, PetscScalar g[])
{
  PetscReal f;

  PetscFunctionBegin;
  PetscCall(NetForward(net, X, Y));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscCall(GatherToAll(G, g));
  PetscFunctionReturn(0);
}

/* All singular values of the m x n column-major matrix A (destroyed), descending */
static PetscErrorCode DenseSVD(PetscInt m, PetscInt n, PetscScalar A[], PetscReal sv[])
{
  PetscBLASInt bm, bn, one = 1, lwork = -1, info;
  PetscScalar  wq, *work;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(m, &bm));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCallBLAS("LAPACKgesvd", LAPACKgesvd_("N", "N", &bm, &bn, A, &bm, sv, NULL, &one, NULL, &one, &wq, &lwork, &info));
  PetscCall(PetscBLASIntCast((PetscInt)PetscRealPart(wq), &lwork));
  PetscCall(PetscMalloc1(lwork, &work));
  PetscCallBLAS("LAPACKgesvd", LAPACKgesvd_("N", "N", &bm, &bn, A, &bm, sv, NULL, &one, NULL, &one, work, &lwork, &info));
  PetscCall(PetscFree(work));
  PetscCheck(!info, PETSC_COMM_SELF, PETSC_ERR_LIB, "dgesvd failed: info %d", (int)info);
  PetscFunctionReturn(0);
}

/*
  -spectrum_check_dense: a tiny network's whole Hessian three ways.
    Hd   column j = H e_j, the Spectrum's operator (exact Hessian-vector products, or Gauss-Newton with -spectrum_hessian gn)
    Hfd  column j = (g(theta + h e_j) - g(theta - h e_j)) / 2h, central differences of the gradient (exact Hessian only)
    LAPACK dsyev on Hd: all eigenvalues, the exact trace; against them EPS's top k, Hutchinson's and stochastic Lanczos
    quadrature's traces. Then each sample's input Jacobian, assembled densely (MatComputeOperator) and given to dgesvd,
    against SLEPc's SVD.
*/
static PetscErrorCode CheckDense(MPI_Comm comm)
{
  Net             net;
  Loss            loss;
  Spectrum        sp;
  Mat             H;
  Vec             X, T, Y, dY, G, e, He, theta;
  PetscInt        P, k = 5, nconv, njac = 3, N = 8, m = 200, slqm = 4, slqk = 20, nnodes;
  PetscScalar    *Hd, *Hfd, *gp, *gm, *A, *work;
  PetscReal      *lam, *eig, *nodes, *weights, smax[3], smin[3], hmax = 0, fderr = 0, symerr = 0, relerr = 0, sverr = 0, trace = 0, hutch, se, slqtrace = 0, slqmax = PETSC_MIN_REAL, h = 1e-5;
  LossHessianType htype;
  char            kind[16] = "mlp";
  PetscLogDouble  t0, t1;
  PetscMPIInt     size;
  PetscBLASInt    bP, lwork, info;

  PetscFunctionBegin;
  PetscCall(PetscTime(&t0));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscOptionsBegin(comm, NULL, "Dense check", NULL);
  PetscCall(PetscOptionsString("-spectrum_check_net", "Tiny network: mlp (6-5-3, tanh) or conv (4x4x2 -> conv2d:3, tanh, dense:3)", NULL, kind, kind, sizeof(kind), NULL));
  PetscCall(PetNetOptionsInt("-spectrum_check_samples", "Samples of the batch", NULL, N, &N, NULL));
  PetscOptionsEnd();
  PetscCall(NetCreate(comm, &net));
  {
    PetscBool   conv;
    PetNetShape shape;

    PetscCall(PetscStrcmp(kind, "conv", &conv));
    PetscCall(PetNetShapeFromString(conv ? "4x4x2" : "6", &shape));
    PetscCall(NetSetInputShape(net, &shape));
    PetscCall(NetSetLayers(net, conv ? "conv2d:3:3:1:1,tanh,flatten,dense:3" : "dense:5,tanh,dense:3"));
  }
  PetscCall(NetSetSeed(net, 1));
  PetscCall(NetSetFromOptions(net)); /* -net_layers, -net_input_shape may replace the tiny network */
  {
    PetscBool custom;

    PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &custom));
    if (custom) PetscCall(PetscStrncpy(kind, "options", sizeof(kind)));
  }
  PetscCall(NetSetUp(net));
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetGetNumParameters(net, &P));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(RandomBatch(net, N, &X, &T));

  PetscCall(SpectrumCreate(comm, &sp));
  PetscCall(SpectrumSetNet(sp, net));
  PetscCall(SpectrumSetLoss(sp, loss));
  PetscCall(SpectrumSetBatch(sp, X, T));
  {
    EPS eps;

    PetscCall(SpectrumGetEPS(sp, &eps));
    PetscCall(EPSSetTolerances(eps, 1e-13, 1000)); /* the check asks 1e-8 of the eigenvalues: -spectrum_eps_tol may say otherwise */
  }
  PetscCall(SpectrumSetFromOptions(sp));
  PetscCall(SpectrumGetHessianType(sp, &htype));
  PetscCall(SpectrumGetOperator(sp, &H));

  /* the Hessian, column by column, from the operator and from central differences of the gradient */
  PetscCall(PetscMalloc5(P * P, &Hd, P * P, &Hfd, P, &gp, P, &gm, P, &lam));
  PetscCall(MatCreateVecs(H, &e, &He));
  for (PetscInt j = 0; j < P; j++) {
    PetscCall(VecZeroEntries(e));
    PetscCall(VecSetValue(e, j, 1.0, INSERT_VALUES));
    PetscCall(VecAssemblyBegin(e));
    PetscCall(VecAssemblyEnd(e));
    PetscCall(MatMult(H, e, He));
    PetscCall(GatherToAll(He, Hd + j * P));
  }
  for (PetscInt i = 0; i < P * P; i++) hmax = PetscMax(hmax, PetscAbsScalar(Hd[i]));
  {
    PetscInt    nx, nin;
    PetNetShape in;

    PetscCall(NetGetInputShape(net, &in));
    PetscCall(PetNetShapeSize(&in, &nin));
    PetscCall(VecGetLocalSize(X, &nx));
    PetscCall(NetCreateVecs(net, nx / nin, NULL, &Y)); /* this rank's samples */
  }
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(NetGetParameters(net, &theta));
  if (htype == LOSS_HESSIAN_EXACT) {
    for (PetscInt j = 0; j < P; j++) {
      PetscScalar t;
      PetscInt    lo, hi;

      PetscCall(VecGetOwnershipRange(theta, &lo, &hi));
      {
        const PetscScalar *a;

        PetscCall(VecGetArrayRead(theta, &a));
        t = (j >= lo && j < hi) ? a[j - lo] : 0;
        PetscCall(VecRestoreArrayRead(theta, &a));
        PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, &t, 1, MPIU_SCALAR, MPIU_SUM, comm));
      }
      PetscCall(VecSetValue(theta, j, t + h, INSERT_VALUES));
      PetscCall(VecAssemblyBegin(theta));
      PetscCall(VecAssemblyEnd(theta));
      PetscCall(Gradient(net, loss, X, T, Y, dY, G, gp));
      PetscCall(VecSetValue(theta, j, t - h, INSERT_VALUES));
      PetscCall(VecAssemblyBegin(theta));
      PetscCall(VecAssemblyEnd(theta));
      PetscCall(Gradient(net, loss, X, T, Y, dY, G, gm));
      PetscCall(VecSetValue(theta, j, t, INSERT_VALUES));
      PetscCall(VecAssemblyBegin(theta));
      PetscCall(VecAssemblyEnd(theta));
      for (PetscInt i = 0; i < P; i++) {
        Hfd[i + j * P] = (gp[i] - gm[i]) / (2 * h);
        fderr          = PetscMax(fderr, PetscAbsScalar(Hfd[i + j * P] - Hd[i + j * P]) / hmax);
      }
    }
  }
  for (PetscInt i = 0; i < P; i++) {
    trace += PetscRealPart(Hd[i + i * P]);
    for (PetscInt j = 0; j < P; j++) symerr = PetscMax(symerr, PetscAbsScalar(Hd[i + j * P] - Hd[j + i * P]) / hmax);
  }

  /* every eigenvalue with LAPACK (ascending), against EPS's largest */
  PetscCall(PetscMalloc1(P * P, &A));
  for (PetscInt i = 0; i < P * P; i++) A[i] = Hd[i];
  PetscCall(PetscBLASIntCast(P, &bP));
  lwork = 3 * bP;
  PetscCall(PetscMalloc1(lwork, &work));
  PetscCallBLAS("LAPACKsyev", LAPACKsyev_("N", "U", &bP, A, &bP, lam, work, &lwork, &info));
  PetscCheck(!info, PETSC_COMM_SELF, PETSC_ERR_LIB, "dsyev failed: info %d", (int)info);
  PetscCall(PetscFree(work));
  PetscCall(PetscFree(A));
  k = PetscMin(k, P);
  PetscCall(PetscMalloc1(k, &eig));
  PetscCall(SpectrumComputeEigenvalues(sp, k, &nconv, eig));
  PetscCheck(nconv == k, comm, PETSC_ERR_NOT_CONVERGED, "EPS converged %" PetscInt_FMT " of %" PetscInt_FMT " eigenvalues", nconv, k);
  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT " parameters, %" PetscInt_FMT " samples, %s Hessian; eigenvalues: LAPACK dsyev vs EPS\n", P, N, htype == LOSS_HESSIAN_EXACT ? "exact" : "Gauss-Newton"));
  for (PetscInt i = 0; i < k; i++) {
    PetscReal ref = lam[P - 1 - i], err = PetscAbsReal(eig[i] - ref) / PetscAbsReal(ref);

    relerr = PetscMax(relerr, err);
    PetscCall(PetscPrintf(comm, "  lambda_%" PetscInt_FMT ": %.12e  %.12e  relative difference %.1e\n", i + 1, (double)ref, (double)eig[i], (double)err));
  }
  PetscCall(PetscPrintf(comm, "  lambda_min: %.12e\n", (double)lam[0]));

  /* the trace: exact, Hutchinson, stochastic Lanczos quadrature */
  PetscCall(SpectrumComputeTrace(sp, m, &hutch, &se));
  PetscCall(PetscMalloc2(slqm * slqk, &nodes, slqm * slqk, &weights));
  PetscCall(SpectrumComputeDensity(sp, slqm, slqk, &nnodes, nodes, weights));
  for (PetscInt i = 0; i < nnodes; i++) {
    slqtrace += P * weights[i] * nodes[i];
    slqmax = PetscMax(slqmax, nodes[i]);
  }
  PetscCall(PetscPrintf(comm, "trace: exact %.8e  Hutchinson (%" PetscInt_FMT " probes) %.8e +- %.1e  SLQ (%" PetscInt_FMT " x %" PetscInt_FMT ") %.8e; largest SLQ node %.12e\n", (double)trace, m, (double)hutch, (double)se, slqm, slqk,
                        (double)slqtrace, (double)slqmax));

  /* the input Jacobian: SLEPc's SVD against a dense SVD of the assembled Jacobian */
  PetscCall(SpectrumComputeJacobianSingularValues(sp, njac, smax, smin));
  {
    PetNetShape in, out;
    PetscInt    nin, nout;
    PetscMPIInt rank;
    Vec         x1;

    PetscCall(NetGetInputShape(net, &in));
    PetscCall(NetGetOutputShape(net, &out));
    PetscCall(PetNetShapeSize(&in, &nin));
    PetscCall(PetNetShapeSize(&out, &nout));
    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    PetscCall(VecCreateMPI(comm, rank == 0 ? nin : 0, nin, &x1));
    for (PetscInt s = 0; s < njac; s++) {
      Mat                J, D;
      PetscReal          sv[64] = {0};
      PetscInt           r      = PetscMin(nin, nout);
      const PetscScalar *d;
      PetscScalar       *Ad;

      { /* sample s into x1 on rank 0 */
        IS         from, to;
        VecScatter sc;

        PetscCall(ISCreateStride(PETSC_COMM_SELF, rank == 0 ? nin : 0, s * nin, 1, &from));
        PetscCall(ISCreateStride(PETSC_COMM_SELF, rank == 0 ? nin : 0, 0, 1, &to));
        PetscCall(VecScatterCreate(X, from, x1, to, &sc));
        PetscCall(VecScatterBegin(sc, X, x1, INSERT_VALUES, SCATTER_FORWARD));
        PetscCall(VecScatterEnd(sc, X, x1, INSERT_VALUES, SCATTER_FORWARD));
        PetscCall(VecScatterDestroy(&sc));
        PetscCall(ISDestroy(&from));
        PetscCall(ISDestroy(&to));
      }
      PetscCall(NetForward(net, x1, NULL));
      PetscCall(NetGetJacobian(net, &J));
      PetscCall(MatComputeOperator(J, MATDENSE, &D));
      PetscCheck(r <= 64, comm, PETSC_ERR_SUP, "The dense check takes at most 64 inputs or outputs");
      if (rank == 0) { /* rank 0 holds every row: its local block is the whole out x in matrix, column-major */
        PetscCall(MatDenseGetArrayRead(D, &d));
        PetscCall(PetscMalloc1(nin * nout, &Ad));
        PetscCall(PetscArraycpy(Ad, d, nin * nout));
        PetscCall(MatDenseRestoreArrayRead(D, &d));
        PetscCall(DenseSVD(nout, nin, Ad, sv));
        PetscCall(PetscFree(Ad));
      }
      PetscCallMPI(MPI_Bcast(sv, (PetscMPIInt)r, MPIU_REAL, 0, comm));
      PetscCall(MatDestroy(&D));
      sverr = PetscMax(sverr, PetscAbsReal(smax[s] - sv[0]) / sv[0]);
      sverr = PetscMax(sverr, PetscAbsReal(smin[s] - sv[r - 1]) / sv[0]); /* sigma_min may be 0 */
      PetscCall(PetscPrintf(comm, "input Jacobian of sample %" PetscInt_FMT ": sigma_max %.12e (dense %.12e)  sigma_min %.12e (dense %.12e)\n", s, (double)smax[s], (double)sv[0], (double)smin[s], (double)sv[r - 1]));
    }
    PetscCall(VecDestroy(&x1));
  }
  PetscCall(SpectrumComputeWeightSingularValues(sp, NULL));
  PetscCall(SpectrumView(sp, NULL));
  PetscCall(PetscTime(&t1));
  /* the finite-difference check applies to the exact Hessian only: its key is left out of a Gauss-Newton summary */
  PetscCall(PetscPrintf(comm, "summary: check=dense net=%s hessian=%s params=%" PetscInt_FMT " ranks=%d k=%" PetscInt_FMT " lambda_max=%.10e", kind, htype == LOSS_HESSIAN_EXACT ? "exact" : "gn", P, size, k, (double)lam[P - 1]));
  if (htype == LOSS_HESSIAN_EXACT) PetscCall(PetscPrintf(comm, " max_fd_err=%.2e", (double)fderr));
  PetscCall(PetscPrintf(comm, " max_sym_err=%.2e max_rel_err=%.2e sv_rel_err=%.2e trace=%.8e trace_hutchinson_err=%.3f trace_slq_err=%.3f slq_lambda_max_err=%.2e time_s=%.2f", (double)symerr, (double)relerr, (double)sverr, (double)trace,
                        (double)(PetscAbsReal(hutch - trace) / PetscAbsReal(trace)), (double)(PetscAbsReal(slqtrace - trace) / PetscAbsReal(trace)), (double)(PetscAbsReal(slqmax - lam[P - 1]) / PetscAbsReal(lam[P - 1])), (double)(t1 - t0)));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }
  PetscCall(PetscFree2(nodes, weights));
  PetscCall(PetscFree(eig));
  PetscCall(PetscFree5(Hd, Hfd, gp, gm, lam));
  PetscCall(VecDestroy(&e));
  PetscCall(VecDestroy(&He));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscCall(SpectrumDestroy(&sp));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm        comm;
  Net             net;
  Loss            loss;
  Spectrum        sp;
  Dataset         ds = NULL;
  Vec             X = NULL, T = NULL;
  char            dir[PETSC_MAX_PATH_LEN] = "/usr/share/datasets/fashion-mnist", load[PETSC_MAX_PATH_LEN] = "", data[16] = "fashion";
  PetscInt        N = 1000, k = 5, nconv = 0, nparams, nsamples, nweights = 0, nodes = 0, napply;
  PetscReal       eig[64] = {0}, trace = 0, se = 0, smax[64] = {0}, ratio = 1, lip = 0;
  PetscBool       check = PETSC_FALSE, doeig = PETSC_TRUE, dotrace = PETSC_TRUE, dodensity = PETSC_TRUE, dojac = PETSC_TRUE, doweights = PETSC_TRUE, doode = PETSC_TRUE, warned = PETSC_FALSE;
  PetscInt        njac = 3;
  LossHessianType htype;
  PetscLogDouble  t0, t1;
  PetscMPIInt     size;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscOptionsBegin(comm, NULL, "Spectrum example", NULL);
  PetscCall(PetscOptionsBool("-spectrum_check_dense", "Check against dense computations on a tiny network", NULL, check, &check, NULL));
  PetscCall(PetscOptionsString("-spectrum_load", "Load this saved Net (NetSave(); .h5 for HDF5)", "NetLoad", load, load, sizeof(load), NULL));
  PetscCall(PetscOptionsString("-spectrum_dir", "Folder with the Fashion-MNIST IDX files", NULL, dir, dir, sizeof(dir), NULL));
  PetscCall(PetscOptionsString("-spectrum_data", "Samples: fashion (the training set) or random", NULL, data, data, sizeof(data), NULL));
  PetscCall(PetNetOptionsInt("-spectrum_samples", "Samples of the loss whose curvature is analysed", "SpectrumSetDataset", N, &N, NULL));
  PetscCall(PetscOptionsBool("-spectrum_eigenvalues", "Compute the top eigenvalues", "SpectrumComputeEigenvalues", doeig, &doeig, NULL));
  PetscCall(PetscOptionsBool("-spectrum_trace", "Compute Hutchinson's trace estimate", "SpectrumComputeTrace", dotrace, &dotrace, NULL));
  PetscCall(PetscOptionsBool("-spectrum_density", "Compute the density (stochastic Lanczos quadrature)", "SpectrumComputeDensity", dodensity, &dodensity, NULL));
  PetscCall(PetscOptionsBool("-spectrum_jacobian", "Compute the input Jacobian's singular values", "SpectrumComputeJacobianSingularValues", dojac, &dojac, NULL));
  PetscCall(PetscOptionsBool("-spectrum_weights", "Compute the weights' singular values", "SpectrumComputeWeightSingularValues", doweights, &doweights, NULL));
  PetscCall(PetscOptionsBool("-spectrum_ode", "Compute the ode layers' stiffness", "SpectrumComputeODEStiffness", doode, &doode, NULL));
  PetscOptionsEnd();
  /* the Spectrum reads (and -help lists) these two; the program sizes its arrays with them */
  PetscCall(PetNetOptionsGetInt(NULL, NULL, "-spectrum_k", &k, NULL));
  PetscCall(PetNetOptionsGetInt(NULL, NULL, "-spectrum_jacobian_samples", &njac, NULL));
  PetscCheck(k >= 1 && k <= 64, comm, PETSC_ERR_ARG_OUTOFRANGE, "-spectrum_k %" PetscInt_FMT ": give 1 to 64", k);
  PetscCheck(njac >= 1 && njac <= 64, comm, PETSC_ERR_ARG_OUTOFRANGE, "-spectrum_jacobian_samples %" PetscInt_FMT ": give 1 to 64", njac);
  if (check) {
    PetscCall(CheckDense(comm));
    PetscCall(PetscFinalize());
    return 0;
  }

  PetscCall(PetscTime(&t0));
  PetscCall(NetCreate(comm, &net));
  if (load[0])
    PetscCall(NetLoad(net, load));
  else {
    PetscCall(NetSetLayers(net, "dense:256,relu,dense:128,relu,dense:10"));
    PetscCall(NetSetFromOptions(net));
  }
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(SpectrumCreate(comm, &sp));
  PetscCall(SpectrumSetNet(sp, net));
  PetscCall(SpectrumSetLoss(sp, loss));
  {
    PetscBool random;

    PetscCall(PetscStrcmp(data, "random", &random));
    if (random) {
      PetscCall(NetSetUp(net));
      PetscCall(RandomBatch(net, N, &X, &T));
      PetscCall(SpectrumSetBatch(sp, X, T)); /* the Spectrum keeps references */
      PetscCall(VecDestroy(&X));
      PetscCall(VecDestroy(&T));
    } else {
      char        images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];
      PetNetShape shape, netshape;

      PetscCall(DatasetCreate(comm, &ds));
      PetscCall(DatasetSetOptionsPrefix(ds, "spectrum_"));
      PetscCall(DatasetSetType(ds, DATASETIDX));
      PetscCall(PetscSNPrintf(images, sizeof(images), "%s/train-images-idx3-ubyte.gz", dir));
      PetscCall(PetscSNPrintf(labels, sizeof(labels), "%s/train-labels-idx1-ubyte.gz", dir));
      PetscCall(DatasetIDXSetFiles(ds, images, labels));
      PetscCall(DatasetSetLimit(ds, N));
      PetscCall(DatasetSetFromOptions(ds));
      PetscCall(DatasetSetUp(ds));
      PetscCall(NetGetInputShape(net, &netshape));
      if (!netshape.ndim) { /* as the Trainer does: the data's sample shape */
        PetscCall(DatasetGetSampleShape(ds, &shape));
        PetscCall(NetSetInputShape(net, &shape));
      }
      PetscCall(NetSetUp(net));
      PetscCall(SpectrumSetDataset(sp, ds, N));
    }
  }
  PetscCall(SpectrumSetFromOptions(sp));
  PetscCall(SpectrumSetUp(sp));
  PetscCall(SpectrumGetHessianType(sp, &htype));
  PetscCall(SpectrumGetBatch(sp, &X, NULL));
  PetscCall(VecGetSize(X, &nsamples));
  {
    PetNetShape in;
    PetscInt    insize;

    PetscCall(NetGetInputShape(net, &in));
    PetscCall(PetNetShapeSize(&in, &insize));
    nsamples /= insize;
  }
  PetscCall(NetGetNumParameters(net, &nparams));

  if (doeig) PetscCall(SpectrumComputeEigenvalues(sp, k, &nconv, eig));
  if (dotrace) PetscCall(SpectrumComputeTrace(sp, PETSC_DEFAULT, &trace, &se));
  if (dodensity) PetscCall(SpectrumComputeDensity(sp, PETSC_DEFAULT, PETSC_DEFAULT, NULL, NULL, NULL));
  if (dojac) {
    PetscCall(SpectrumComputeJacobianSingularValues(sp, njac, smax, NULL));
    for (PetscInt s = 0; s < PetscMin(njac, nsamples); s++) lip = PetscMax(lip, smax[s]);
  }
  if (doweights) PetscCall(SpectrumComputeWeightSingularValues(sp, &nweights));
  if (doode) PetscCall(SpectrumComputeODEStiffness(sp, &nodes, &ratio, &warned));
  PetscCall(SpectrumView(sp, NULL));
  PetscCall(SpectrumGetNumOperatorApplications(sp, &napply));
  PetscCall(PetscTime(&t1));
  PetscCall(PetscPrintf(comm,
                        "summary: hessian=%s samples=%" PetscInt_FMT " params=%" PetscInt_FMT " ranks=%d k=%" PetscInt_FMT " converged=%" PetscInt_FMT " lambda_max=%.8e lambda_k=%.8e trace=%.6e products=%" PetscInt_FMT
                        " lipschitz=%.6e weights=%" PetscInt_FMT " ode_layers=%" PetscInt_FMT " stiffness_ratio=%.4e stiffness_warning=%d time_s=%.2f",
                        htype == LOSS_HESSIAN_EXACT ? "exact" : "gn", nsamples, nparams, size, k, nconv, (double)eig[0], (double)eig[nconv ? nconv - 1 : 0], (double)trace, napply, (double)lip, nweights, nodes, (double)ratio, (int)warned,
                        (double)(t1 - t0)));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }
  PetscCall(SpectrumDestroy(&sp));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&ds));
  PetscCall(PetscFinalize());
  return 0;
}
