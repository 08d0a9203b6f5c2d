/*
  Stiffness of ode layers: the eigenvalues of the right-hand side's Jacobian J_f(u) along a trajectory.

  An ode layer y = u(T), du/dt = f(u) integrates its whole batch at once; one sample's trajectory is what the analysis
  needs. The outer Net is run forward on the batch's first sample alone, which gives each ode layer its input u(0) and
  records its step times t_0 < ... < t_n (LayerODEGetTimeSteps()). A second TS of the same type and tableau (rk and its
  tableau, theta with its theta and endpoint, beuler, cn; the same nonlinear and linear solver settings) then takes
  exactly those steps from u(0) on the inner Net (NetTSSetRHS()), so the states are those of the layer's own solve.

  At a state u of s entries, J_f(u) is assembled column by column with the inner Net's JVP on a batch of copies of u,
  one column a sample (the batch split over the ranks, at most 256 columns a pass): sample c of the output is
  J_f(u) e_c, and the samples end to end are the column-major matrix. Rank 0 computes all its eigenvalues with
  LAPACK's dgeev (O(s^3): states larger than -spectrum_ode_max_size are skipped) and broadcasts them.

  Reported per state: max|Re l|, min|Re l| over the eigenvalues whose real part is not negligible (|Re l| >
  1e-10 max|Re l|: a zero eigenvalue, e.g. of a conserved quantity, makes no problem stiff), their ratio (the
  stiffness ratio; 1 when every real part is negligible), the spectral radius rho and dt rho, which an explicit method
  must keep inside its stability region (about 2.8 on the negative real axis for rk 4, 2 for forward Euler).
*/
#include <petnet/private/spectrumimpl.h>
#include <petnet/private/netimpl.h> /* the input of a node at the last forward pass: the ode layer's u(0) */
#include <petnetts.h>
#include <petscblaslapack.h>

#define SPECTRUM_ODE_COLUMNS 256 /* Jacobian columns per JVP pass */

PetscErrorCode SpectrumResetODE_Private(Spectrum sp)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < sp->nstiff; i++) {
    SpectrumODE *o = &sp->ode[i];

    PetscCall(PetscFree6(o->times, o->maxre, o->minre, o->rho, o->dt, o->ratio));
    PetscCall(PetscFree(o->nzero));
  }
  PetscCall(PetscFree(sp->ode));
  sp->nstiff = 0;
  PetscFunctionReturn(0);
}

/* wr + i wi: the eigenvalues of J_f(u), u a one-sample batch on rank 0 (its size s on rank 0, 0 elsewhere) */
static PetscErrorCode SpectrumODEJacobianEigenvalues_Private(Net f, Vec u, PetscInt s, PetscReal wr[], PetscReal wi[])
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)f);
  PetscMPIInt        rank;
  Vec                useq;
  VecScatter         toall;
  const PetscScalar *ua;
  PetscScalar       *A = NULL;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecScatterCreateToAll(u, &toall, &useq));
  PetscCall(VecScatterBegin(toall, u, useq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, u, useq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&toall));
  PetscCall(VecGetArrayRead(useq, &ua));
  if (rank == 0) PetscCall(PetscMalloc1(s * s, &A));
  for (PetscInt c0 = 0; c0 < s; c0 += SPECTRUM_ODE_COLUMNS) {
    PetscInt     nc = PetscMin(SPECTRUM_ODE_COLUMNS, s - c0), n = PETSC_DECIDE, first;
    Vec          U, E, Y, yz;
    VecScatter   tozero;
    PetscScalar *a, *e;

    PetscCall(PetscSplitOwnership(comm, &n, &nc));
    PetscCall(VecCreateMPI(comm, n * s, nc * s, &U));
    PetscCall(VecDuplicate(U, &E));
    PetscCall(VecDuplicate(U, &Y));
    PetscCall(VecGetOwnershipRange(U, &first, NULL));
    first /= s; /* the first column of this rank's chunk */
    PetscCall(VecGetArrayWrite(U, &a));
    PetscCall(VecGetArrayWrite(E, &e));
    PetscCall(PetscArrayzero(e, n * s));
    for (PetscInt i = 0; i < n; i++) {
      PetscCall(PetscArraycpy(a + i * s, ua, s));
      e[i * s + c0 + first + i] = 1.0;
    }
    PetscCall(VecRestoreArrayWrite(E, &e));
    PetscCall(VecRestoreArrayWrite(U, &a));
    PetscCall(NetForward(f, U, NULL));
    PetscCall(NetJVP(f, E, NULL, Y));
    PetscCall(VecScatterCreateToZero(Y, &tozero, &yz));
    PetscCall(VecScatterBegin(tozero, Y, yz, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(tozero, Y, yz, INSERT_VALUES, SCATTER_FORWARD));
    if (rank == 0) {
      const PetscScalar *y;

      PetscCall(VecGetArrayRead(yz, &y));
      PetscCall(PetscArraycpy(A + c0 * s, y, nc * s));
      PetscCall(VecRestoreArrayRead(yz, &y));
    }
    PetscCall(VecScatterDestroy(&tozero));
    PetscCall(VecDestroy(&yz));
    PetscCall(VecDestroy(&U));
    PetscCall(VecDestroy(&E));
    PetscCall(VecDestroy(&Y));
  }
  PetscCall(VecRestoreArrayRead(useq, &ua));
  PetscCall(VecDestroy(&useq));
  if (rank == 0) {
    PetscBLASInt bs, one = 1, lwork = -1, info;
    PetscScalar  wq, *work;

    PetscCall(PetscBLASIntCast(s, &bs));
    PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
    PetscCallBLAS("LAPACKgeev", LAPACKgeev_("N", "N", &bs, A, &bs, wr, wi, NULL, &one, NULL, &one, &wq, &lwork, &info));
    PetscCall(PetscBLASIntCast((PetscInt)PetscRealPart(wq), &lwork));
    PetscCall(PetscMalloc1(lwork, &work));
    PetscCallBLAS("LAPACKgeev", LAPACKgeev_("N", "N", &bs, A, &bs, wr, wi, NULL, &one, NULL, &one, work, &lwork, &info));
    PetscCall(PetscFPTrapPop());
    PetscCall(PetscFree(work));
    PetscCall(PetscFree(A));
    PetscCheck(!info, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dgeev failed on the %" PetscInt_FMT " x %" PetscInt_FMT " Jacobian of an ode layer's right-hand side: info %d", s, s, (int)info);
  }
  PetscCallMPI(MPI_Bcast(wr, (PetscMPIInt)s, MPIU_REAL, 0, comm));
  PetscCallMPI(MPI_Bcast(wi, (PetscMPIInt)s, MPIU_REAL, 0, comm));
  PetscFunctionReturn(0);
}

/* A TS that repeats the layer's integrator: same type, tableau or theta, nonlinear and linear solver settings */
static PetscErrorCode SpectrumODECreateTS_Private(TS lts, Net f, Vec u, TS *ts, char integrator[], size_t len)
{
  TSType    type;
  PetscBool isrk, istheta;
  TSAdapt   adapt;

  PetscFunctionBegin;
  PetscCall(TSCreate(PetscObjectComm((PetscObject)lts), ts));
  PetscCall(TSGetType(lts, &type));
  PetscCall(TSSetType(*ts, type));
  PetscCall(TSSetProblemType(*ts, TS_NONLINEAR));
  PetscCall(PetscObjectTypeCompare((PetscObject)lts, TSRK, &isrk));
  PetscCall(PetscObjectTypeCompare((PetscObject)lts, TSTHETA, &istheta));
  PetscCall(PetscStrncpy(integrator, type, len));
  if (isrk) {
    TSRKType rk;

    PetscCall(TSRKGetType(lts, &rk));
    PetscCall(TSRKSetType(*ts, rk));
    PetscCall(PetscSNPrintf(integrator, len, "rk %s", rk));
  } else if (istheta) {
    PetscReal th;
    PetscBool endpoint;

    PetscCall(TSThetaGetTheta(lts, &th));
    PetscCall(TSThetaGetEndpoint(lts, &endpoint));
    PetscCall(TSThetaSetTheta(*ts, th));
    PetscCall(TSThetaSetEndpoint(*ts, endpoint));
    PetscCall(PetscSNPrintf(integrator, len, "theta %g%s", (double)th, endpoint ? " endpoint" : ""));
  }
  PetscCall(TSGetAdapt(*ts, &adapt));
  PetscCall(TSAdaptSetType(adapt, TSADAPTNONE)); /* the layer's steps, given one by one */
  PetscCall(NetTSSetRHS(*ts, f, u));
  {
    SNES      lsnes, snes;
    KSP       lksp, ksp;
    PC        lpc, pc;
    KSPType   ktype;
    PCType    ptype;
    PetscReal atol, rtol, stol, dtol;
    PetscInt  maxit, maxf;

    PetscCall(TSGetSNES(lts, &lsnes));
    PetscCall(TSGetSNES(*ts, &snes));
    PetscCall(SNESGetTolerances(lsnes, &atol, &rtol, &stol, &maxit, &maxf));
    PetscCall(SNESSetTolerances(snes, atol, rtol, stol, maxit, maxf));
    PetscCall(SNESGetKSP(lsnes, &lksp));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetType(lksp, &ktype));
    if (ktype) PetscCall(KSPSetType(ksp, ktype));
    PetscCall(KSPGetTolerances(lksp, &rtol, &atol, &dtol, &maxit));
    PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));
    PetscCall(KSPGetPC(lksp, &lpc));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCGetType(lpc, &ptype));
    if (ptype) PetscCall(PCSetType(pc, ptype));
  }
  PetscFunctionReturn(0);
}

/* Node l, an ode layer whose input at the last forward pass (of one sample, on rank 0) is u0 */
static PetscErrorCode SpectrumODEAnalyse_Private(Spectrum sp, PetscInt l, Layer layer, Vec u0, SpectrumODE *o)
{
  MPI_Comm         comm = PetscObjectComm((PetscObject)sp);
  Net              f;
  TS               lts, ts;
  PetNetShape      shape;
  PetscInt         nsteps, nstates, next = 0;
  const PetscReal *times;
  const char      *name, *tsprefix;
  PetscReal       *wr, *wi;
  Vec              u;

  PetscFunctionBegin;
  PetscCall(LayerODEGetNet(layer, &f));
  PetscCall(LayerODEGetTS(layer, &lts));
  PetscCall(LayerODEGetTimeSteps(layer, &nsteps, &times));
  PetscCall(NetGetInputShape(f, &shape));
  PetscCall(PetNetShapeSize(&shape, &o->size));
  PetscCall(NetGetLayerName(sp->net, l, &name));
  PetscCall(TSGetOptionsPrefix(lts, &tsprefix));
  PetscCall(NetTSGetImplicit(lts, &o->implicit));
  o->node = l;
  PetscCall(PetscStrncpy(o->name, name, sizeof(o->name)));
  PetscCall(PetscStrncpy(o->tsprefix, tsprefix ? tsprefix : "", sizeof(o->tsprefix)));
  PetscCall(VecDuplicate(u0, &u));
  PetscCall(VecCopy(u0, u));
  PetscCall(SpectrumODECreateTS_Private(lts, f, u, &ts, o->integrator, sizeof(o->integrator)));
  nstates = PetscMin(nsteps + 1, sp->odemaxstates);
  if (o->size > sp->odemaxsize) nstates = 0;
  PetscCall(PetscMalloc6(nstates, &o->times, nstates, &o->maxre, nstates, &o->minre, nstates, &o->rho, nstates, &o->dt, nstates, &o->ratio));
  PetscCall(PetscMalloc1(nstates, &o->nzero));
  PetscCall(PetscMalloc2(o->size, &wr, o->size, &wi));
  PetscCheck(nsteps > 0 && times, comm, PETSC_ERR_PLIB, "Ode layer %" PetscInt_FMT " recorded no time step in its forward pass", l);
  PetscCall(TSSetTime(ts, times[0]));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetMaxSteps(ts, nsteps));
  PetscCall(TSSetMaxTime(ts, times[nsteps]));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetSolution(ts, u));
  for (PetscInt k = 0; k <= nsteps && next < nstates; k++) {
    /* state k is analysed when it is the next of nstates evenly spread over 0 .. nsteps */
    PetscInt want = nstates > 1 ? (PetscInt)((next * (PetscInt64)nsteps + (nstates - 1) / 2) / (nstates - 1)) : 0;

    if (k == want) {
      PetscReal maxre = 0, minre = PETSC_MAX_REAL, rho = 0;
      PetscInt  nzero = 0;

      PetscCall(SpectrumODEJacobianEigenvalues_Private(f, u, o->size, wr, wi));
      for (PetscInt i = 0; i < o->size; i++) {
        maxre = PetscMax(maxre, PetscAbsReal(wr[i]));
        rho   = PetscMax(rho, PetscSqrtReal(wr[i] * wr[i] + wi[i] * wi[i]));
      }
      for (PetscInt i = 0; i < o->size; i++) {
        if (PetscAbsReal(wr[i]) > 1e-10 * maxre)
          minre = PetscMin(minre, PetscAbsReal(wr[i]));
        else
          nzero++;
      }
      if (minre == PETSC_MAX_REAL) minre = maxre; /* every real part negligible */
      o->times[next] = times[k];
      o->maxre[next] = maxre;
      o->minre[next] = minre;
      o->rho[next]   = rho;
      o->dt[next]    = k < nsteps ? times[k + 1] - times[k] : times[k] - times[k - 1];
      o->ratio[next] = minre > 0 ? maxre / minre : 1.0;
      o->nzero[next] = nzero;
      o->maxratio    = PetscMax(o->maxratio, o->ratio[next]);
      o->maxhrho     = PetscMax(o->maxhrho, o->dt[next] * rho);
      next++;
    }
    if (k < nsteps && next < nstates) {
      TSConvergedReason reason;

      PetscCall(TSSetTimeStep(ts, times[k + 1] - times[k]));
      PetscCall(TSStep(ts));
      PetscCall(TSGetConvergedReason(ts, &reason));
      PetscCheck(reason >= 0, comm, PETSC_ERR_NOT_CONVERGED, "Repeating step %" PetscInt_FMT " of ode layer %" PetscInt_FMT " failed (%s)", k, l, TSConvergedReasons[reason]);
    }
  }
  o->nstates = nstates;
  PetscCall(PetscFree2(wr, wi));
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&u));
  PetscFunctionReturn(0);
}

/*@
  SpectrumComputeODEStiffness - for each ode layer of the Net, the eigenvalues of its right-hand side's Jacobian along
  the trajectory of the batch's first sample, and the stiffness ratio max|Re l| / min|Re l|; warns when an explicit
  integrator meets a stiff right-hand side

  Collective

  Input Parameter:
. sp - the Spectrum, with a Net and a batch

  Output Parameters:
+ nlayers  - the number of ode layers analysed, or NULL
. maxratio - the largest stiffness ratio met (1 with no ode layer), or NULL
- warned   - whether a warning was printed, or NULL

  Options Database Keys:
+ -spectrum_stiffness_warn <r>  - warn above this ratio when the layer's integrator is explicit (default 1e3)
. -spectrum_ode_max_size <n>    - skip layers whose state has more entries (dense eigenvalues, O(n^3); default 2048)
- -spectrum_ode_max_states <n>  - analyse at most this many states, evenly spread over the steps (default 11)

  Notes:
  The Net is run forward on the first sample, in evaluation mode; each ode layer's step times are those of that pass,
  and its states are recomputed by a TS of the same type from the layer's input. At each state, all eigenvalues of
  J_f(u) are computed (LAPACK dgeev on the matrix assembled from JVPs). Real parts below 1e-10 of the largest are
  left out of the minimum, so a zero eigenvalue does not make the ratio infinite. The warning names the implicit
  integrators (beuler, cn, theta) and the option that selects them. SpectrumView() prints every state's numbers,
  including dt |l|max, which an explicit method must keep inside its stability region.

  Level: intermediate

.seealso: `LayerODEGetNet()`, `LayerODEGetTS()`, `LayerODEGetTimeSteps()`, `SpectrumView()`
@*/
PetscErrorCode SpectrumComputeODEStiffness(Spectrum sp, PetscInt *nlayers, PetscReal *maxratio, PetscBool *warned)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)sp);
  PetscInt       n, count = 0, size;
  PetscMPIInt    rank;
  PetscBool      training, warn = PETSC_FALSE;
  PetscReal      worst = 1;
  PetNetShape    shape;
  Vec            x1;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCheck(sp->net && sp->X, comm, PETSC_ERR_ARG_WRONGSTATE, "The ode layers' stiffness needs a Net and a batch: SpectrumSetNet(), SpectrumSetBatch()");
  PetscCall(SpectrumSetUp(sp));
  PetscCall(PetscLogEventBegin(SPECTRUM_ODE, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumBeginAnalysis_Private(sp, &training));
  PetscCall(SpectrumResetODE_Private(sp));
  PetscCall(NetGetNumLayers(sp->net, &n));
  PetscCall(PetscCalloc1(n + 1, &sp->ode)); /* allocated even with no ode layer: computed, SpectrumView() says so */
  PetscCall(NetGetInputShape(sp->net, &shape));
  PetscCall(PetNetShapeSize(&shape, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecCreateMPI(comm, rank == 0 ? size : 0, size, &x1));
  PetscCall(SpectrumGetSample_Private(sp, 0, x1));
  for (PetscInt l = 0; l < n; l++) {
    Layer     layer;
    LayerType type;
    PetscBool isode;

    PetscCall(NetGetLayer(sp->net, l, &layer));
    PetscCall(LayerGetType(layer, &type));
    PetscCall(PetscStrcmp(type, LAYERODE, &isode));
    if (!isode) continue;
    if (!count) PetscCall(NetForward(sp->net, x1, NULL)); /* every ode layer's input and step times, for this sample */
    {
      SpectrumODE       *o = &sp->ode[count++];
      Vec                u0;
      const PetscScalar *x;
      PetscInt           nx;

      PetscCall(NetGetNodeArraysRead(sp->net, l, &nx, &x, NULL)); /* the layer's input, in double at any precision */
      PetscCall(VecCreateMPI(comm, nx * layer->insize, PETSC_DETERMINE, &u0));
      PetscCall(VecPlaceArray(u0, x));
      sp->nstiff = count;
      PetscCall(SpectrumODEAnalyse_Private(sp, l, layer, u0, o));
      PetscCall(VecResetArray(u0));
      PetscCall(VecDestroy(&u0));
      PetscCall(NetRestoreNodeArraysRead(sp->net, l, &nx, &x, NULL));
      worst = PetscMax(worst, o->maxratio);
      if (o->nstates && !o->implicit && o->maxratio > sp->stiffwarn) {
        warn = PETSC_TRUE;
        PetscCall(
            PetscPrintf(comm,
                        "WARNING: ode layer %" PetscInt_FMT " (\"%s\") has a stiff right-hand side: stiffness ratio max|Re l|/min|Re l| = %.3e along the trajectory, above -spectrum_stiffness_warn %.3e, and its integrator, %s, is explicit: its step "
                        "must keep dt |l|max inside its stability region (about 2 to 2.8 for Runge-Kutta methods on the negative real axis; now %.3e) however slow the other modes are. Use an implicit integrator: -%sts_type beuler, cn or theta\n",
                        l, o->name, (double)o->maxratio, (double)sp->stiffwarn, o->integrator, (double)o->maxhrho, o->tsprefix));
      }
    }
  }
  PetscCall(VecDestroy(&x1));
  PetscCall(SpectrumEndAnalysis_Private(sp, training));
  PetscCall(PetscTime(&t1));
  sp->odetime = t1 - t0;
  if (nlayers) *nlayers = count;
  if (maxratio) *maxratio = worst;
  if (warned) *warned = warn;
  PetscCall(PetscLogEventEnd(SPECTRUM_ODE, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode SpectrumViewODE_Private(Spectrum sp, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "ode stiffness (%" PetscInt_FMT " ode layers, first sample, %.2f s)%s\n", sp->nstiff, (double)sp->odetime, sp->nstiff ? ":" : ": the Net has no ode layer"));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  for (PetscInt i = 0; i < sp->nstiff; i++) {
    SpectrumODE *o = &sp->ode[i];

    if (!o->nstates) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "layer %" PetscInt_FMT " (\"%s\", %s): state of %" PetscInt_FMT " entries, above -spectrum_ode_max_size %" PetscInt_FMT ": skipped\n", o->node, o->name, o->integrator, o->size, sp->odemaxsize));
      continue;
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "layer %" PetscInt_FMT " (\"%s\", %s, %s, state %" PetscInt_FMT "): stiffness ratio up to %.4e, dt |l|max up to %.4e\n", o->node, o->name, o->integrator, o->implicit ? "implicit" : "explicit", o->size,
                                     (double)o->maxratio, (double)o->maxhrho));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    for (PetscInt k = 0; k < o->nstates; k++)
      PetscCall(PetscViewerASCIIPrintf(viewer, "t = %.4f: max|Re l| %.6e  min|Re l| %.6e  ratio %.4e  |l|max %.6e  dt |l|max %.4e%s\n", (double)o->times[k], (double)o->maxre[k], (double)o->minre[k], (double)o->ratio[k], (double)o->rho[k],
                                       (double)(o->dt[k] * o->rho[k]), o->nzero[k] ? " (negligible real parts left out)" : ""));
    PetscCall(PetscViewerASCIIPopTab(viewer));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}
