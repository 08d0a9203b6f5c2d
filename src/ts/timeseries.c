/*
  Gradient of a loss at many observation times,  L = sum_i l_i(u(t_i)),  t_0 <= t_1 < ... < t_{m-1}.

  Forward: ONE TSSolve from the current time to t_{m-1} that lands on every t_i (a pre-step hook shortens the step that
  would cross t_i, and for fixed steps restores the step size afterwards). At each t_i the observation callback gives
  l_i and dl_i/du; the step number s_i is recorded. One solve (not one per interval) matters: the in-memory trajectory
  does not store the last step of a TSSolve, so a solve per interval would lose the stages at every t_i.

  Backward: the adjoint, segment by segment, with TSAdjointSetSteps():
      lambda = 0
      for i = m-1 .. 0:   lambda += dl_i/du(t_i);  integrate the adjoint from step s_i back to s_{i-1} (s_{-1} = 0)
  so that lambda(t_0) = dL/du(t_0) and mu accumulates dL/dtheta over all the segments.
*/
#include "nettsimpl.h"

typedef struct {
  PetscInt           nobs, next;
  const PetscReal   *times;
  PetscInt          *steps; /* step number of each observation */
  Vec               *dldu;
  PetscReal          loss;
  NetTSObservationFn obs;
  void              *obsctx;
  PetscErrorCode (*userprestep)(TS);
  PetscReal cached; /* the step size before it was shortened to land on an observation (0: not shortened) */
  PetscBool fixed;  /* TSADAPTNONE: restore the step size after an observation */
  PetscReal dt0;    /* the first step, set by the first pre-step (see the trajectory note below) */
  PetscBool first;
} NetTSSeries;

/*
  The work space, kept on the TS between calls (a composed container): training calls this once per batch with the same
  layouts, and creating nobs + 3 Vecs each time costs more than a small Net's forward pass. It is rebuilt when u0 or
  gradp comes with another layout (compared as PetscLayout objects, which Vecs share only through collective
  VecDuplicate(), so every rank decides alike) or more observations.
*/
typedef struct {
  NetTSSeries s;
  PetscInt    maxobs;    /* capacity of s.steps and dldu */
  Vec         u, lambda; /* in u0's layout */
  Vec         mu;        /* in gradp's layout (NULL until a parameter gradient is asked for) */
  Vec        *dldu;
} NetTSSeriesWork;

static const char NetTSSeriesKey[] = "PetNetTSSeries";

static PetscErrorCode NetTSSeriesWorkDestroy_Private(void *vwork)
{
  NetTSSeriesWork *work = (NetTSSeriesWork *)vwork;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&work->u));
  PetscCall(VecDestroy(&work->lambda));
  PetscCall(VecDestroy(&work->mu));
  if (work->maxobs) PetscCall(VecDestroyVecs(work->maxobs, &work->dldu));
  PetscCall(PetscFree(work->s.steps));
  PetscCall(PetscFree(work));
  PetscFunctionReturn(0);
}

/* Two Vecs with the same PetscLayout object (both may be NULL) */
static PetscErrorCode NetTSSameLayout_Private(Vec a, Vec b, PetscBool *same)
{
  PetscLayout la, lb;

  PetscFunctionBegin;
  *same = PETSC_FALSE;
  if (!a || !b) PetscFunctionReturn(0);
  PetscCall(VecGetLayout(a, &la));
  PetscCall(VecGetLayout(b, &lb));
  *same = la == lb ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The TS's work space, (re)built for u0, nobs and gradp */
static PetscErrorCode NetTSSeriesGetWork_Private(TS ts, Vec u0, PetscInt nobs, Vec gradp, NetTSSeriesWork **work)
{
  PetscContainer   container;
  NetTSSeriesWork *w = NULL;
  PetscBool        same;

  PetscFunctionBegin;
  PetscCall(PetscObjectQuery((PetscObject)ts, NetTSSeriesKey, (PetscObject *)&container));
  if (!container) {
    PetscCall(PetscNew(&w));
    PetscCall(PetscContainerCreate(PetscObjectComm((PetscObject)ts), &container));
    PetscCall(PetscContainerSetPointer(container, w));
    PetscCall(PetscContainerSetUserDestroy(container, NetTSSeriesWorkDestroy_Private));
    PetscCall(PetscObjectCompose((PetscObject)ts, NetTSSeriesKey, (PetscObject)container));
    PetscCall(PetscContainerDestroy(&container));
  } else
    PetscCall(PetscContainerGetPointer(container, (void **)&w));
  PetscCall(NetTSSameLayout_Private(w->u, u0, &same));
  if (!same || nobs > w->maxobs) {
    PetscCall(VecDestroy(&w->u));
    PetscCall(VecDestroy(&w->lambda));
    if (w->maxobs) PetscCall(VecDestroyVecs(w->maxobs, &w->dldu));
    PetscCall(PetscFree(w->s.steps));
    w->maxobs = PetscMax(nobs, same ? 2 * w->maxobs : 0);
    PetscCall(VecDuplicate(u0, &w->u));
    PetscCall(VecDuplicate(u0, &w->lambda));
    PetscCall(VecDuplicateVecs(u0, w->maxobs, &w->dldu));
    PetscCall(PetscMalloc1(w->maxobs, &w->s.steps));
  }
  if (gradp) {
    PetscCall(NetTSSameLayout_Private(w->mu, gradp, &same));
    if (!same) {
      PetscCall(VecDestroy(&w->mu));
      PetscCall(VecDuplicate(gradp, &w->mu));
    }
  }
  *work = w;
  PetscFunctionReturn(0);
}

/* t is on the observation time ti: a few ulps of accumulated rounding, relative to the time and to the step */
static PetscBool NetTSSeriesAt_Private(PetscReal t, PetscReal ti, PetscReal dt)
{
  return PetscAbsReal(t - ti) <= 1e-9 * PetscAbsReal(dt) + 1e3 * PETSC_MACHINE_EPSILON * PetscMax(1.0, PetscAbsReal(ti)) ? PETSC_TRUE : PETSC_FALSE;
}

static PetscErrorCode NetTSSeriesObserve_Private(TS ts, NetTSSeries *s, Vec u)
{
  PetscReal l = 0.0;
  PetscInt  i = s->next;

  PetscFunctionBegin;
  PetscCall(TSGetStepNumber(ts, &s->steps[i]));
  PetscCall(VecZeroEntries(s->dldu[i]));
  PetscCall((*s->obs)(ts, i, s->times[i], u, &l, s->dldu[i], s->obsctx));
  s->loss += l;
  s->next++;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSSeriesPreStep_Private(TS ts)
{
  PetscContainer   container;
  NetTSSeriesWork *work;
  NetTSSeries     *s;
  PetscReal        t, dt;
  Vec              u;

  PetscFunctionBegin;
  PetscCall(PetscObjectQuery((PetscObject)ts, NetTSSeriesKey, (PetscObject *)&container));
  PetscCall(PetscContainerGetPointer(container, (void **)&work));
  s = &work->s;
  if (s->first) PetscCall(TSSetTimeStep(ts, s->dt0));
  s->first = PETSC_FALSE;
  if (s->userprestep) PetscCall((*s->userprestep)(ts));
  PetscCall(TSGetTime(ts, &t));
  PetscCall(TSGetTimeStep(ts, &dt));
  if (s->next < s->nobs && NetTSSeriesAt_Private(t, s->times[s->next], dt)) {
    PetscCall(TSGetSolution(ts, &u));
    PetscCall(NetTSSeriesObserve_Private(ts, s, u));
    if (s->fixed && s->cached > 0) dt = s->cached;
    s->cached = 0;
  }
  if (s->next < s->nobs && t + dt > s->times[s->next] - 1e-9 * PetscAbsReal(dt)) {
    if (s->cached == 0) s->cached = dt;
    dt = s->times[s->next] - t;
  }
  PetscCall(TSSetTimeStep(ts, dt));
  PetscFunctionReturn(0);
}

/*@C
  NetTSTimeSeriesGradient - L = sum_i l_i(u(t_i)) and its gradient with respect to the initial state and the parameters,
  by one forward solve and a segment-by-segment TSAdjointSolve().

  Collective on ts

  Input Parameters:
+ ts     - a TS with its right-hand side (e.g. NetTSSetRHS()), type and step size; it starts at its current time t_0
. u0     - the initial state (not modified)
. nobs   - number of observations
. times  - observation times, increasing, t_0 <= times[0]; the last is the final time
. obs    - obs(ts, i, t_i, u, &l_i, dl_i/du, ctx) for each observation
- ctx    - context of obs

  Output Parameters:
+ loss   - L (may be NULL)
. gradu0 - dL/du(t_0), layout of u0 (may be NULL)
- gradp  - dL/dtheta in the layout of the columns of the TS's JacobianP: NetCreateParameterVec() for NetTSSetRHS()
           (may be NULL)

  Notes:
  The TS's time, step number, step size, final time and solution are restored on return; a pre-step hook of the user is
  called first from ours. The trajectory defaults to memory (NetTSSetSaveTrajectory()). With adaptive steps the
  gradient is the exact gradient of the discrete solution for the steps taken (step sizes are not differentiated).
  The TS keeps a work space (nobs + 3 Vecs) for the next call, until it is destroyed. The integrator is checked with
  NetTSCheckAdjoint() first.

  Level: intermediate

.seealso: `NetTSObservationFn`, `NetTSSetRHS()`, `NetTSSetSaveTrajectory()`, `NetTSCheckAdjoint()`, `NetCreateParameterVec()`
@*/
PetscErrorCode NetTSTimeSeriesGradient(TS ts, Vec u0, PetscInt nobs, const PetscReal times[], NetTSObservationFn obs, void *ctx, PetscReal *loss, Vec gradu0, Vec gradp)
{
  MPI_Comm               comm;
  NetTSSeriesWork       *work = NULL;
  NetTSSeries           *s;
  PetscReal              t0, dt0, tmax0, t;
  PetscInt               maxsteps, *steps;
  TSExactFinalTimeOption eft;
  TSAdapt                adapt;
  TSTrajectory           tj;
  TSConvergedReason      reason;
  Vec                    u, usave, lambda[1], mu[1] = {NULL};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscValidHeaderSpecific(u0, VEC_CLASSID, 2);
  comm = PetscObjectComm((PetscObject)ts);
  PetscCheck(nobs > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "Give at least one observation time");
  PetscCheck(obs, comm, PETSC_ERR_ARG_NULL, "Give the observation callback (loss and dloss/du at each time)");
  PetscCall(TSGetTime(ts, &t0));
  PetscCall(TSGetTimeStep(ts, &dt0));
  PetscCheck(times[0] >= t0, comm, PETSC_ERR_ARG_OUTOFRANGE, "The first observation time %g is before the start time %g of the TS", (double)times[0], (double)t0);
  for (PetscInt i = 1; i < nobs; i++)
    PetscCheck(times[i] > times[i - 1], comm, PETSC_ERR_ARG_OUTOFRANGE, "Observation times must increase: times[%" PetscInt_FMT "] = %g <= times[%" PetscInt_FMT "] = %g", i, (double)times[i], i - 1, (double)times[i - 1]);
  PetscCall(NetTSCheckAdjoint(ts));
  PetscCheck(!gradp || ts->Jacp || ts->Jacprhs, comm, PETSC_ERR_ORDER, "A parameter gradient needs the TS's JacobianP: call NetTSSetRHS() (or TSSetRHSJacobianP()/TSSetIJacobianP())");
  PetscCall(TSGetMaxTime(ts, &tmax0));
  PetscCall(TSGetMaxSteps(ts, &maxsteps));
  PetscCall(TSGetExactFinalTime(ts, &eft));
  PetscCall(TSGetSolution(ts, &usave));
  if (usave) PetscCall(PetscObjectReference((PetscObject)usave));

  /* forward */
  PetscCall(NetTSSeriesGetWork_Private(ts, u0, nobs, gradp, &work));
  s     = &work->s;
  steps = s->steps;
  PetscCall(PetscMemzero(s, sizeof(*s)));
  s->steps  = steps;
  s->dldu   = work->dldu;
  s->nobs   = nobs;
  s->times  = times;
  s->obs    = obs;
  s->obsctx = ctx;
  u         = work->u;
  PetscCall(TSGetAdapt(ts, &adapt));
  PetscCall(PetscObjectTypeCompare((PetscObject)adapt, TSADAPTNONE, &s->fixed));
  PetscCall(VecCopy(u0, u));
  PetscCall(NetTSSetSaveTrajectory(ts));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectoryReset(tj)); /* drop what a forward solve without adjoint may have left */
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetMaxTime(ts, times[nobs - 1]));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  if (NetTSSeriesAt_Private(t0, times[0], dt0)) PetscCall(NetTSSeriesObserve_Private(ts, s, u));
  s->userprestep = ts->prestep;
  PetscCall(TSSetPreStep(ts, NetTSSeriesPreStep_Private));
  /*
    PETSc 3.18's memory trajectory sizes its stack at set-up from (final time - time) / step for fixed steps, and grows
    it when more steps come; but after a reset (which every adjoint solve ends with) a regrowth loses checkpoints and
    crashes at destruction. The observations add up to nobs steps, so the set-up sees a step small enough to count them:
    the first pre-step puts dt0 back.
  */
  s->dt0   = dt0;
  s->first = PETSC_TRUE;
  if (s->fixed) PetscCall(TSSetTimeStep(ts, (times[nobs - 1] - t0) / (PetscCeilReal((times[nobs - 1] - t0) / dt0) + nobs + 1)));
  PetscCall(TSSolve(ts, u));
  PetscCall(TSSetPreStep(ts, s->userprestep));
  PetscCall(TSGetConvergedReason(ts, &reason));
  PetscCall(TSGetTime(ts, &t));
  PetscCheck(reason >= 0, comm, PETSC_ERR_NOT_CONVERGED, "The forward solve failed (%s) at t = %g", TSConvergedReasons[reason], (double)t);
  if (s->next == nobs - 1 && NetTSSeriesAt_Private(t, times[nobs - 1], dt0)) PetscCall(NetTSSeriesObserve_Private(ts, s, u));
  PetscCheck(s->next == nobs, comm, PETSC_ERR_NOT_CONVERGED, "The forward solve stopped at t = %g before the observation time %g: raise -ts_max_steps (now %" PetscInt_FMT ")", (double)t, (double)times[s->next], maxsteps);

  /* backward, segment by segment */
  PetscCall(TSAdjointReset(ts));
  lambda[0] = work->lambda;
  PetscCall(VecZeroEntries(lambda[0]));
  if (gradp) {
    mu[0] = work->mu;
    PetscCall(VecZeroEntries(mu[0]));
  }
  PetscCall(TSSetCostGradients(ts, 1, lambda, gradp ? mu : NULL));
  for (PetscInt i = nobs - 1; i >= 0; i--) {
    PetscInt target = i > 0 ? s->steps[i - 1] : 0, nsteps = s->steps[i] - target;

    PetscCall(VecAXPY(lambda[0], 1.0, s->dldu[i]));
    if (nsteps > 0) {
      PetscCall(TSAdjointSetSteps(ts, nsteps));
      PetscCall(TSAdjointSolve(ts));
      PetscCall(TSGetConvergedReason(ts, &reason));
      PetscCheck(reason >= 0, comm, PETSC_ERR_NOT_CONVERGED, "The adjoint solve failed (%s) in the segment before the observation time %g", TSConvergedReasons[reason], (double)times[i]);
    }
  }
  if (loss) *loss = s->loss;
  if (gradu0) PetscCall(VecCopy(lambda[0], gradu0));
  if (gradp) PetscCall(VecCopy(mu[0], gradp));
  PetscCall(TSAdjointReset(ts));

  /* restore the TS */
  PetscCall(TSSetTime(ts, t0));
  PetscCall(TSSetStepNumber(ts, 0));
  PetscCall(TSSetTimeStep(ts, dt0));
  PetscCall(TSSetMaxTime(ts, tmax0));
  PetscCall(TSSetExactFinalTime(ts, eft));
  if (usave) PetscCall(TSSetSolution(ts, usave));
  PetscCall(VecDestroy(&usave));
  PetscFunctionReturn(0);
}
