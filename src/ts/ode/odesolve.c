/*
  ode layer: forward (TSSolve), backward (TSAdjointSolve) and jvp (the tangent system), see ode.h.
  All three are collective on the layer's communicator.
*/
#include "ode.h"

/* The times of the steps of a recording forward pass (TSMonitor is called at step 0 and after every step). */
PetscErrorCode LayerODEMonitor_Private(TS ts, PetscInt step, PetscReal t, Vec u, void *ctx)
{
  Layer      layer = (Layer)ctx;
  Layer_ODE *ode   = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  if (!ode->recording || step < 0) PetscFunctionReturn(0);
  if (step >= ode->maxtimes) {
    PetscReal *times;
    PetscInt   m = PetscMax(2 * ode->maxtimes, step + 64);

    PetscCall(PetscMalloc1(m, &times));
    if (ode->times) PetscCall(PetscArraycpy(times, ode->times, ode->maxtimes));
    PetscCall(PetscFree(ode->times));
    ode->times    = times;
    ode->maxtimes = m;
  }
  ode->times[step] = t;
  ode->nsteps      = step;
  PetscFunctionReturn(0);
}

/* Replay: step k takes the recorded size times[k+1] - times[k] (both the forward TS and the tangent TS) */
PetscErrorCode LayerODEPreStep_Private(TS ts)
{
  Layer      layer;
  Layer_ODE *ode;
  PetscInt   k;

  PetscFunctionBegin;
  PetscCall(TSGetApplicationContext(ts, &layer));
  ode = (Layer_ODE *)layer->data;
  if (!ode->replaying) PetscFunctionReturn(0);
  PetscCall(TSGetStepNumber(ts, &k));
  PetscCheck(k < ode->nsteps, PetscObjectComm((PetscObject)ts), PETSC_ERR_PLIB, "Replaying step %" PetscInt_FMT " of a forward pass of %" PetscInt_FMT " steps", k, ode->nsteps);
  PetscCall(TSSetTimeStep(ts, ode->times[k + 1] - ode->times[k]));
  PetscFunctionReturn(0);
}

/* The end time a replay reaches: the recorded step sizes summed in the order TS adds them, so that it lands exactly */
static PetscReal LayerODEReplayEnd_Private(Layer_ODE *ode)
{
  PetscReal t = ode->times[0];

  for (PetscInt k = 0; k < ode->nsteps; k++) t += ode->times[k + 1] - ode->times[k];
  return t;
}

PetscErrorCode LayerODEResetBatch_Private(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&ode->U));
  PetscCall(VecDestroy(&ode->lambda[0]));
  PetscCall(VecDestroy(&ode->mu[0]));
  PetscCall(VecDestroy(&ode->dth));
  PetscCall(TSDestroy(&ode->tts));
  PetscCall(VecDestroy(&ode->W));
  PetscCall(VecDestroy(&ode->Wu));
  PetscCall(VecDestroy(&ode->Wv));
  PetscCall(VecDestroy(&ode->Gu));
  PetscCall(VecDestroy(&ode->Gv));
  PetscCall(VecDestroy(&ode->ulin));
  PetscCall(MatDestroy(&ode->tJ));
  if (ode->n >= 0 && ode->ts) { /* the TS's work vectors, Jacobian shells and trajectory have the old size */
    TSTrajectory     tj;
    TSTrajectoryType type;
    char             name[256];

    PetscCall(TSAdjointReset(ode->ts));
    PetscCall(TSReset(ode->ts));
    PetscCall(TSGetTrajectory(ode->ts, &tj));
    PetscCall(TSTrajectoryGetType(tj, ode->ts, &type));
    PetscCall(PetscStrncpy(name, type ? type : TSTRAJECTORYMEMORY, sizeof(name)));
    PetscCall(TSResetTrajectory(ode->ts));
    PetscCall(TSGetTrajectory(ode->ts, &tj));
    PetscCall(TSTrajectorySetType(tj, ode->ts, name));
    PetscCall(NetTSSetSaveTrajectory(ode->ts));
    if (ode->fromoptions) PetscCall(TSTrajectorySetFromOptions(tj, ode->ts));
  }
  ode->n         = -1;
  ode->trajvalid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Objects for a local batch of n samples; rebuilt (collectively) when any rank's n changes */
static PetscErrorCode LayerODESetBatch_Private(Layer layer, PetscInt n)
{
  Layer_ODE *ode     = (Layer_ODE *)layer->data;
  MPI_Comm   comm    = PetscObjectComm((PetscObject)layer);
  PetscBool  changed = n != ode->n ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &changed, 1, MPIU_BOOL, MPI_LOR, comm));
  if (!changed) PetscFunctionReturn(0);
  PetscCall(LayerODEResetBatch_Private(layer));
  PetscCall(VecCreateMPI(comm, n * layer->insize, PETSC_DETERMINE, &ode->U));
  PetscCall(VecDuplicate(ode->U, &ode->lambda[0]));
  if (layer->nparams) {
    PetscCall(NetCreateParameterVec(ode->net, &ode->mu[0]));
    PetscCall(VecDuplicate(ode->mu[0], &ode->dth));
  }
  PetscCall(NetTSSetRHS(ode->ts, ode->net, ode->U));
  ode->n = n;
  PetscFunctionReturn(0);
}

/* The inner Net's parameters := this rank's owned slice of theta (the replicated array); a change anywhere is a change */
static PetscErrorCode LayerODESetParameters_Private(Layer layer, const PetscScalar *theta)
{
  Layer_ODE         *ode = (Layer_ODE *)layer->data;
  Vec                p;
  PetscInt           rs, re;
  const PetscScalar *cur;
  PetscBool          changed = PETSC_FALSE;

  PetscFunctionBegin;
  if (!layer->nparams) PetscFunctionReturn(0);
  PetscCall(NetGetParameters(ode->net, &p));
  PetscCall(VecGetOwnershipRange(p, &rs, &re));
  PetscCall(VecGetArrayRead(p, &cur));
  for (PetscInt i = 0; i < re - rs; i++)
    if (cur[i] != theta[rs + i]) changed = PETSC_TRUE;
  PetscCall(VecRestoreArrayRead(p, &cur));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &changed, 1, MPIU_BOOL, MPI_LOR, PetscObjectComm((PetscObject)layer)));
  if (changed) {
    PetscScalar *a;

    PetscCall(VecGetArrayWrite(p, &a));
    PetscCall(PetscArraycpy(a, theta + rs, re - rs));
    PetscCall(VecRestoreArrayWrite(p, &a));
    ode->trajvalid = PETSC_FALSE;
  }
  if (ode->net->training != layer->training) PetscCall(NetSetTraining(ode->net, layer->training));
  PetscFunctionReturn(0);
}

/* u(T) from u(0) = x into ode->U, keeping the trajectory. replay: take the recorded steps; otherwise record them. */
static PetscErrorCode LayerODESolve_Private(Layer layer, const PetscScalar *x, PetscBool replay)
{
  Layer_ODE        *ode = (Layer_ODE *)layer->data;
  TS                ts  = ode->ts;
  TSTrajectory      tj;
  TSAdapt           adapt;
  PetscBool         always;
  PetscReal         tend, t;
  TSConvergedReason reason;
  PetscScalar      *u;

  PetscFunctionBegin;
  replay = (PetscBool)(replay && ode->nsteps > 0);
  PetscCall(VecGetArrayWrite(ode->U, &u));
  PetscCall(PetscArraycpy(u, x, ode->n * layer->insize));
  PetscCall(VecRestoreArrayWrite(ode->U, &u));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectoryReset(tj)); /* a forward pass that was never differentiated leaves checkpoints behind */
  tend = replay ? LayerODEReplayEnd_Private(ode) : ode->T;
  PetscCall(TSSetTime(ts, 0.0));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetTimeStep(ts, replay ? ode->times[1] - ode->times[0] : ode->dt0));
  PetscCall(TSSetMaxTime(ts, tend));
  PetscCall(TSGetAdapt(ts, &adapt));
  always = adapt->always_accept;
  if (replay) PetscCall(TSAdaptSetAlwaysAccept(adapt, PETSC_TRUE));
  ode->recording = (PetscBool)!replay;
  ode->replaying = replay;
  PetscCall(TSSolve(ts, ode->U));
  ode->recording = PETSC_FALSE;
  ode->replaying = PETSC_FALSE;
  PetscCall(TSAdaptSetAlwaysAccept(adapt, always));
  PetscCall(TSGetConvergedReason(ts, &reason));
  PetscCall(TSGetTime(ts, &t));
  PetscCheck(reason >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_NOT_CONVERGED, "The ode layer's time integration failed (%s) at t = %g", TSConvergedReasons[reason], (double)t);
  PetscCheck(t >= tend - 1e-12 * PetscMax(1.0, tend), PetscObjectComm((PetscObject)layer), PETSC_ERR_NOT_CONVERGED, "The ode layer's time integration stopped at t = %g before T = %g: raise -%sode_ts_max_steps", (double)t, (double)tend,
             ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "");
  ode->trajvalid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

static PetscBool LayerODEReplay_Private(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  return (PetscBool)(ode->replay || layer->frozen);
}

/* y[n][size] = u(T) with u(0) = x */
PetscErrorCode LayerForward_ODE(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_ODE         *ode = (Layer_ODE *)layer->data;
  const PetscScalar *u;

  PetscFunctionBegin;
  PetscCall(LayerODESetBatch_Private(layer, n));
  PetscCall(LayerODESetParameters_Private(layer, theta));
  PetscCall(LayerODESolve_Private(layer, x, LayerODEReplay_Private(layer)));
  PetscCall(VecGetArrayRead(ode->U, &u));
  PetscCall(PetscArraycpy(y, u, n * layer->insize));
  PetscCall(VecRestoreArrayRead(ode->U, &u));
  PetscFunctionReturn(0);
}

/* dx = lambda(0), dtheta += mu  with lambda(T) = dy (TSAdjointSolve on the trajectory of the forward pass at x) */
PetscErrorCode LayerBackward_ODE(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_ODE         *ode = (Layer_ODE *)layer->data;
  PetscScalar       *l;
  const PetscScalar *a;
  TSConvergedReason  reason;

  PetscFunctionBegin;
  PetscCall(LayerODESetBatch_Private(layer, n));
  PetscCall(LayerODESetParameters_Private(layer, theta));
  if (!ode->trajvalid) PetscCall(LayerODESolve_Private(layer, x, PETSC_TRUE)); /* the adjoint consumed it, or theta changed */
  PetscCall(VecGetArrayWrite(ode->lambda[0], &l));
  PetscCall(PetscArraycpy(l, dy, n * layer->insize));
  PetscCall(VecRestoreArrayWrite(ode->lambda[0], &l));
  if (ode->mu[0]) PetscCall(VecZeroEntries(ode->mu[0]));
  PetscCall(TSSetCostGradients(ode->ts, 1, ode->lambda, ode->mu[0] ? ode->mu : NULL));
  PetscCall(TSAdjointSolve(ode->ts));
  ode->trajvalid = PETSC_FALSE;
  PetscCall(TSGetConvergedReason(ode->ts, &reason));
  PetscCheck(reason >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_NOT_CONVERGED, "The ode layer's adjoint solve failed (%s)", TSConvergedReasons[reason]);
  if (dx) {
    PetscCall(VecGetArrayRead(ode->lambda[0], &a));
    PetscCall(PetscArraycpy(dx, a, n * layer->insize));
    PetscCall(VecRestoreArrayRead(ode->lambda[0], &a));
  }
  if (dtheta && ode->mu[0]) { /* this rank's owned part; the outer Net's sum-reduce adds the ranks' parts */
    PetscInt rs, re;

    PetscCall(VecGetOwnershipRange(ode->mu[0], &rs, &re));
    PetscCall(VecGetArrayRead(ode->mu[0], &a));
    for (PetscInt i = 0; i < re - rs; i++) dtheta[rs + i] += a[i];
    PetscCall(VecRestoreArrayRead(ode->mu[0], &a));
  }
  PetscFunctionReturn(0);
}

/* Tangent system G(W) = [f(u); J_f(u) v + J_theta(u) dtheta] on the two halves of W */
static PetscErrorCode LayerODETangentEvaluate_Private(Layer layer, Vec W, Vec G)
{
  Layer_ODE         *ode = (Layer_ODE *)layer->data;
  const PetscInt     m   = ode->n * layer->insize;
  const PetscScalar *w;
  PetscScalar       *g;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(W, &w));
  PetscCall(VecGetArray(G, &g));
  PetscCall(VecPlaceArray(ode->Wu, w));
  PetscCall(VecPlaceArray(ode->Wv, w + m));
  PetscCall(VecPlaceArray(ode->Gu, g));
  PetscCall(VecPlaceArray(ode->Gv, g + m));
  PetscCall(NetForward(ode->net, ode->Wu, ode->Gu));
  PetscCall(NetJVP(ode->net, ode->Wv, ode->jvpdth, ode->Gv));
  PetscCall(VecResetArray(ode->Gv));
  PetscCall(VecResetArray(ode->Gu));
  PetscCall(VecResetArray(ode->Wv));
  PetscCall(VecResetArray(ode->Wu));
  PetscCall(VecRestoreArray(G, &g));
  PetscCall(VecRestoreArrayRead(W, &w));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODETangentRHS_Private(TS ts, PetscReal t, Vec W, Vec G, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(LayerODETangentEvaluate_Private((Layer)ctx, W, G));
  PetscFunctionReturn(0);
}

/* F = Wdot - G(W) */
static PetscErrorCode LayerODETangentIFunction_Private(TS ts, PetscReal t, Vec W, Vec Wdot, Vec F, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(LayerODETangentEvaluate_Private((Layer)ctx, W, F));
  PetscCall(VecAYPX(F, -1.0, Wdot));
  PetscFunctionReturn(0);
}

/*
  Newton's matrix for the tangent system, block diagonal: diag(shift I - J_f(u), shift I - J_f(u)). It leaves out the
  block d(J_f(u) v)/du (second derivatives); Newton still converges to the solution of the discrete tangent system,
  since the u half is exact and the v half is linear in v.
*/
static PetscErrorCode LayerODETangentIJacobian_Private(TS ts, PetscReal t, Vec W, Vec Wdot, PetscReal shift, Mat A, Mat B, void *ctx)
{
  Layer              layer = (Layer)ctx;
  Layer_ODE         *ode   = (Layer_ODE *)layer->data;
  const PetscScalar *w;
  PetscScalar       *u;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(W, &w));
  PetscCall(VecGetArrayWrite(ode->ulin, &u));
  PetscCall(PetscArraycpy(u, w, ode->n * layer->insize));
  PetscCall(VecRestoreArrayWrite(ode->ulin, &u));
  PetscCall(VecRestoreArrayRead(W, &w));
  ode->lin.act0 = NULL;
  ode->shift    = shift;
  PetscCall(NetTSForwardAt_Private(ode->net, ode->ulin, &ode->lin)); /* the inner Net at ulin, the u half of the state the tangent Jacobian was asked at */
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_ODETangent(Mat A, Vec x, Vec y)
{
  Layer              layer;
  Layer_ODE         *ode;
  PetscInt           m;
  const PetscScalar *xa;
  PetscScalar       *ya;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &layer));
  ode = (Layer_ODE *)layer->data;
  m   = ode->n * layer->insize;
  PetscCall(NetTSForwardAt_Private(ode->net, ode->ulin, &ode->lin));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayWrite(y, &ya));
  for (PetscInt half = 0; half < 2; half++) {
    PetscCall(VecPlaceArray(ode->Wu, xa + half * m));
    PetscCall(VecPlaceArray(ode->Gu, ya + half * m));
    PetscCall(NetJVP(ode->net, ode->Wu, NULL, ode->Gu));
    PetscCall(VecAXPBY(ode->Gu, ode->shift, -1.0, ode->Wu));
    PetscCall(VecResetArray(ode->Gu));
    PetscCall(VecResetArray(ode->Wu));
  }
  PetscCall(VecRestoreArrayWrite(y, &ya));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

/* The tangent TS: the forward TS's method (type, tableau, theta, endpoint, solver tolerances), no adaptivity */
static PetscErrorCode LayerODETangentSetUp_Private(Layer layer)
{
  Layer_ODE *ode  = (Layer_ODE *)layer->data;
  MPI_Comm   comm = PetscObjectComm((PetscObject)layer);
  TS         tts;
  TSType     type;
  PetscBool  implicit, isrk, istheta;
  TSAdapt    adapt;

  PetscFunctionBegin;
  PetscCall(NetTSGetImplicit(ode->ts, &implicit));
  if (!ode->tts) {
    const PetscInt m = ode->n * layer->insize;

    PetscCall(VecCreateMPI(comm, 2 * m, PETSC_DETERMINE, &ode->W));
    PetscCall(VecCreateMPIWithArray(comm, 1, m, PETSC_DETERMINE, NULL, &ode->Wu));
    PetscCall(VecDuplicate(ode->Wu, &ode->Wv));
    PetscCall(VecDuplicate(ode->Wu, &ode->Gu));
    PetscCall(VecDuplicate(ode->Wu, &ode->Gv));
    PetscCall(TSCreate(comm, &tts));
    PetscCall(TSSetApplicationContext(tts, layer));
    PetscCall(TSSetPreStep(tts, LayerODEPreStep_Private));
    PetscCall(TSSetExactFinalTime(tts, TS_EXACTFINALTIME_MATCHSTEP));
    PetscCall(TSSetMaxSteps(tts, PETSC_MAX_INT));
    PetscCall(TSSetSolution(tts, ode->W));
    ode->tts = tts;
  }
  tts = ode->tts;
  PetscCall(TSGetType(ode->ts, &type));
  PetscCall(TSSetType(tts, type));
  PetscCall(PetscObjectTypeCompare((PetscObject)ode->ts, TSRK, &isrk));
  PetscCall(PetscObjectTypeCompare((PetscObject)ode->ts, TSTHETA, &istheta));
  if (isrk) {
    TSRKType rktype;

    PetscCall(TSRKGetType(ode->ts, &rktype));
    PetscCall(TSRKSetType(tts, rktype));
  }
  if (istheta) {
    PetscReal theta;
    PetscBool endpoint;

    PetscCall(TSThetaGetTheta(ode->ts, &theta));
    PetscCall(TSThetaGetEndpoint(ode->ts, &endpoint));
    PetscCall(TSThetaSetTheta(tts, theta));
    PetscCall(TSThetaSetEndpoint(tts, endpoint));
  }
  PetscCall(TSGetAdapt(tts, &adapt));
  PetscCall(TSAdaptSetType(adapt, TSADAPTNONE));
  if (implicit) {
    SNES      snes, snes0;
    KSP       ksp, ksp0;
    PC        pc;
    PetscReal atol, rtol, stol, katol, krtol, kdtol;
    PetscInt  maxit, maxf, kmaxit;

    if (!ode->tJ) {
      PetscInt m, M;

      PetscCall(VecGetLocalSize(ode->W, &m));
      PetscCall(VecGetSize(ode->W, &M));
      PetscCall(MatCreateShell(comm, m, m, M, M, layer, &ode->tJ));
      PetscCall(MatShellSetOperation(ode->tJ, MATOP_MULT, (void (*)(void))MatMult_ODETangent));
      PetscCall(VecDuplicate(ode->U, &ode->ulin));
    }
    PetscCall(TSSetIFunction(tts, NULL, LayerODETangentIFunction_Private, layer));
    PetscCall(TSSetIJacobian(tts, ode->tJ, ode->tJ, LayerODETangentIJacobian_Private, layer));
    PetscCall(TSGetSNES(ode->ts, &snes0));
    PetscCall(SNESGetTolerances(snes0, &atol, &rtol, &stol, &maxit, &maxf));
    PetscCall(SNESGetKSP(snes0, &ksp0));
    PetscCall(KSPGetTolerances(ksp0, &krtol, &katol, &kdtol, &kmaxit));
    PetscCall(TSGetSNES(tts, &snes));
    PetscCall(SNESSetTolerances(snes, atol, rtol, stol, maxit, maxf));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetType(ksp, KSPGMRES));
    PetscCall(KSPSetTolerances(ksp, krtol, katol, kdtol, kmaxit));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCNONE));
  } else
    PetscCall(TSSetRHSFunction(tts, NULL, LayerODETangentRHS_Private, layer));
  PetscFunctionReturn(0);
}

/* dy = v(T) of the tangent system with [u; v](0) = [x; dx], over the recorded steps */
PetscErrorCode LayerJVP_ODE(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_ODE        *ode = (Layer_ODE *)layer->data;
  const PetscInt    m   = n * layer->insize;
  PetscScalar      *w;
  PetscReal         tend, t;
  TSConvergedReason reason;

  PetscFunctionBegin;
  PetscCall(LayerODESetBatch_Private(layer, n));
  PetscCall(LayerODESetParameters_Private(layer, theta));
  if (!ode->nsteps) PetscCall(LayerODESolve_Private(layer, x, PETSC_FALSE)); /* a step sequence to follow */
  PetscCall(LayerODETangentSetUp_Private(layer));
  PetscCall(VecGetArrayWrite(ode->W, &w));
  PetscCall(PetscArraycpy(w, x, m));
  if (dx)
    PetscCall(PetscArraycpy(w + m, dx, m));
  else
    PetscCall(PetscArrayzero(w + m, m));
  PetscCall(VecRestoreArrayWrite(ode->W, &w));
  ode->jvpdth = NULL;
  if (dtheta && ode->dth) {
    PetscInt rs, re;

    PetscCall(VecGetOwnershipRange(ode->dth, &rs, &re));
    PetscCall(VecGetArrayWrite(ode->dth, &w));
    PetscCall(PetscArraycpy(w, dtheta + rs, re - rs));
    PetscCall(VecRestoreArrayWrite(ode->dth, &w));
    ode->jvpdth = ode->dth;
  }
  tend = LayerODEReplayEnd_Private(ode);
  PetscCall(TSSetTime(ode->tts, 0.0));
  PetscCall(TSSetStepNumber(ode->tts, 0));
  PetscCall(TSSetTimeStep(ode->tts, ode->times[1] - ode->times[0]));
  PetscCall(TSSetMaxTime(ode->tts, tend));
  ode->replaying = PETSC_TRUE;
  PetscCall(TSSolve(ode->tts, ode->W));
  ode->replaying = PETSC_FALSE;
  PetscCall(TSGetConvergedReason(ode->tts, &reason));
  PetscCall(TSGetTime(ode->tts, &t));
  PetscCheck(reason >= 0 && t >= tend - 1e-12 * PetscMax(1.0, tend), PetscObjectComm((PetscObject)layer), PETSC_ERR_NOT_CONVERGED, "The ode layer's tangent integration failed (%s) at t = %g", TSConvergedReasons[reason], (double)t);
  PetscCall(VecGetArrayRead(ode->W, (const PetscScalar **)&w));
  PetscCall(PetscArraycpy(dy, w + m, m));
  PetscCall(VecRestoreArrayRead(ode->W, (const PetscScalar **)&w));
  PetscFunctionReturn(0);
}
