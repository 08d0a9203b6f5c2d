/*
  TSTRAJECTORYCHECKPOINT: a bounded-memory trajectory for TSAdjointSolve(). At most K solution vectors are kept in
  memory at any time (-ts_trajectory_max_cps_ram K); the stages an adjoint step needs are recomputed by TSStep() from
  the nearest stored solution. (PETSc 3.18's own memory trajectory needs the revolve or CAMS packages, which Debian's
  build lacks, as soon as K is below the number of steps.)

  Forward (TSTrajectorySet at every step): the times of all steps are kept (one real per step); solutions are kept at
  the steps that are multiples of a stride, at most Kf = ceil(K/2) of them, step 0 always. When a new one would exceed
  Kf, the stride doubles and the checkpoints off the new stride are dropped, so they stay evenly spread whatever the
  number of steps (it need not be known in advance: adaptive steps work).

  Backward (TSTrajectoryGet at steps N, N-1, ..., 1): the adjoint of step k needs the TS as right after step k, stages
  included. From the last stored solution b < k the TS steps forward to k; the free memory slots (K minus the stored
  checkpoints) are spent on new checkpoints along the way, placed as in Griewank's binomial (revolve) schedule: to
  reverse l steps with s snapshots in the fewest repetitions r (beta(s, r) = C(s + r, s) >= l), the next checkpoint goes
  l - beta(s - 1, r) steps ahead of b. Checkpoints beyond k - 1 are released as the adjoint passes them.

  The recomputed steps take the recorded step sizes with the step always accepted, so the adjoint sees the same
  discrete solution as the forward solve: explicit methods reproduce it to the last bit, implicit methods up to the
  nonlinear solver tolerance (their Newton solves start from other initial guesses).
*/
#include "nettsimpl.h"

typedef struct {
  PetscInt   K, Kf;            /* memory slots; of those, the most the forward sweep uses */
  PetscInt   nsteps, maxtimes; /* N, the number of steps of the forward solve, and the capacity of times */
  PetscReal *times;            /* times[k], k = 0..N */
  PetscBool  finished;         /* the forward solve ended (the last TSTrajectorySet came with ts->reason set) */
  PetscInt   stride;

  /* stored solutions: step[i] ascending, X[i] the solution after step step[i] (i < ncps); spare Vecs in pool */
  PetscInt  ncps, npool;
  PetscInt *step;
  Vec      *X, *pool;

  PetscInt maxcps, recomputed; /* statistics: the most solutions held at once, the steps recomputed */
} TJ_Checkpoint;

static PetscErrorCode TJCheckpointRelease_Private(TJ_Checkpoint *cp, PetscInt i)
{
  PetscFunctionBegin;
  cp->pool[cp->npool++] = cp->X[i];
  for (PetscInt j = i; j < cp->ncps - 1; j++) {
    cp->step[j] = cp->step[j + 1];
    cp->X[j]    = cp->X[j + 1];
  }
  cp->ncps--;
  PetscFunctionReturn(0);
}

/* Store the solution X after step k (k larger than every stored step) */
static PetscErrorCode TJCheckpointStore_Private(TJ_Checkpoint *cp, PetscInt k, Vec X)
{
  Vec v;

  PetscFunctionBegin;
  PetscCheck(cp->ncps < cp->K, PetscObjectComm((PetscObject)X), PETSC_ERR_PLIB, "Checkpoint trajectory: all %" PetscInt_FMT " slots in use", cp->K);
  if (cp->npool)
    v = cp->pool[--cp->npool];
  else
    PetscCall(VecDuplicate(X, &v));
  PetscCall(VecCopy(X, v));
  cp->step[cp->ncps] = k;
  cp->X[cp->ncps++]  = v;
  cp->maxcps         = PetscMax(cp->maxcps, cp->ncps);
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectoryReset_Checkpoint(TSTrajectory tj)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  while (cp->ncps) PetscCall(TJCheckpointRelease_Private(cp, cp->ncps - 1));
  cp->nsteps   = 0;
  cp->finished = PETSC_FALSE;
  cp->stride   = 1;
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectorySetUp_Checkpoint(TSTrajectory tj, TS ts)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  PetscCheck(cp->K >= 1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE, "The checkpoint trajectory needs at least one slot (-ts_trajectory_max_cps_ram), not %" PetscInt_FMT, cp->K);
  if (!cp->step) {
    PetscCall(PetscMalloc3(cp->K, &cp->step, cp->K, &cp->X, cp->K, &cp->pool));
    cp->ncps  = 0;
    cp->npool = 0;
  }
  cp->Kf = (cp->K + 1) / 2;
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectorySet_Checkpoint(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal time, Vec X)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  PetscCall(TSGetStepNumber(ts, &stepnum));
  if (stepnum == 0) {
    PetscCall(TSTrajectoryReset_Checkpoint(tj));
    cp->maxcps     = 0;
    cp->recomputed = 0;
  }
  PetscCheck(stepnum == 0 || stepnum == cp->nsteps + 1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER, "Checkpoint trajectory: step %" PetscInt_FMT " follows step %" PetscInt_FMT "; a new forward solve must start at step 0", stepnum, cp->nsteps);
  if (stepnum >= cp->maxtimes) {
    PetscReal *times;
    PetscInt   m = PetscMax(2 * cp->maxtimes, 64);

    PetscCall(PetscMalloc1(m, &times));
    if (cp->times) PetscCall(PetscArraycpy(times, cp->times, cp->maxtimes));
    PetscCall(PetscFree(cp->times));
    cp->times    = times;
    cp->maxtimes = m;
  }
  cp->times[stepnum] = time;
  cp->nsteps         = stepnum;
  cp->finished       = ts->reason ? PETSC_TRUE : PETSC_FALSE;
  if (cp->finished || stepnum % cp->stride) PetscFunctionReturn(0); /* the TS holds the last step itself */
  if (cp->ncps >= cp->Kf) {                                         /* thin out: double the stride */
    cp->stride *= 2;
    for (PetscInt i = cp->ncps - 1; i > 0; i--)
      if (cp->step[i] % cp->stride) PetscCall(TJCheckpointRelease_Private(cp, i));
    if (stepnum % cp->stride || cp->ncps >= cp->Kf) PetscFunctionReturn(0);
  }
  PetscCall(TJCheckpointStore_Private(cp, stepnum, X));
  PetscFunctionReturn(0);
}

/* beta(s, r) = C(s + r, s), saturating */
static PetscReal TJBeta_Private(PetscInt s, PetscInt r)
{
  PetscReal b = 1;

  for (PetscInt i = 1; i <= s; i++) b = b * (r + i) / i;
  return b;
}

/* Steps to advance before the next checkpoint when l steps are to be reversed with s snapshots (the base included) */
static PetscInt TJBinomialAdvance_Private(PetscInt l, PetscInt s)
{
  PetscInt r = 0;

  while (TJBeta_Private(s, r) < l) r++;
  return PetscMax(1, l - (PetscInt)TJBeta_Private(s - 1, r));
}

/* From the stored solution at step from (in ts->vec_sol), step to step to with the recorded sizes, always accepting */
static PetscErrorCode TJCheckpointAdvance_Private(TSTrajectory tj, TS ts, PetscInt from, PetscInt to)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  PetscCall(TSSetStepNumber(ts, from));
  ts->ptime       = cp->times[from];
  ts->ptime_prev  = from ? cp->times[from - 1] : cp->times[from];
  ts->steprestart = PETSC_TRUE; /* no FSAL stage or extrapolation from a step that was not just taken */
  for (PetscInt k = from; k < to; k++) {
    ts->ptime     = cp->times[k];
    ts->time_step = cp->times[k + 1] - cp->times[k];
    PetscCall(TSStep(ts));
    PetscCheck(ts->reason >= 0, PetscObjectComm((PetscObject)tj), PETSC_ERR_NOT_CONVERGED, "Checkpoint trajectory: recomputing step %" PetscInt_FMT " failed (%s)", k + 1, TSConvergedReasons[ts->reason]);
    cp->recomputed++;
    tj->recomps++;
  }
  PetscFunctionReturn(0);
}

/* Leave the TS as right after step stepnum, stages included, ready for the adjoint step back to stepnum - 1 */
static PetscErrorCode TSTrajectoryGet_Checkpoint(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal *t)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;
  TSAdapt        adapt;
  PetscBool      always;
  PetscInt       base, i;

  PetscFunctionBegin;
  PetscCheck(tj->adjoint_solve_mode, PetscObjectComm((PetscObject)tj), PETSC_ERR_SUP, "The checkpoint trajectory serves TSAdjointSolve() only (-ts_trajectory_adjointmode)");
  if (stepnum == 0) { /* the end of the adjoint solve */
    PetscCall(TSTrajectoryReset_Checkpoint(tj));
    PetscFunctionReturn(0);
  }
  if (ts->reason) PetscFunctionReturn(0); /* called after the adjoint solve finished */
  PetscCheck(cp->finished && stepnum <= cp->nsteps, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER, "Checkpoint trajectory: the adjoint asks for step %" PetscInt_FMT " but the forward solve recorded %" PetscInt_FMT " steps%s", stepnum, cp->nsteps,
             cp->finished ? "" : " and has not finished");
  while (cp->ncps && cp->step[cp->ncps - 1] > stepnum - 1) PetscCall(TJCheckpointRelease_Private(cp, cp->ncps - 1));
  if (stepnum < cp->nsteps) { /* (step nsteps is still in the TS after the forward solve) */
    PetscCheck(cp->ncps, PetscObjectComm((PetscObject)tj), PETSC_ERR_PLIB, "Checkpoint trajectory: no stored solution before step %" PetscInt_FMT, stepnum);
    PetscCall(TSGetAdapt(ts, &adapt));
    always = adapt->always_accept;
    PetscCall(TSAdaptSetAlwaysAccept(adapt, PETSC_TRUE));
    i    = cp->ncps - 1;
    base = cp->step[i];
    PetscCall(VecCopy(cp->X[i], ts->vec_sol));
    while (cp->ncps < cp->K && stepnum - 1 - base > 1) { /* spend free slots on checkpoints between base and stepnum - 1 */
      PetscInt m = base + TJBinomialAdvance_Private(stepnum - base, cp->K - cp->ncps + 1);

      if (m >= stepnum - 1) break;
      PetscCall(TJCheckpointAdvance_Private(tj, ts, base, m));
      PetscCall(TJCheckpointStore_Private(cp, m, ts->vec_sol));
      base = m;
    }
    PetscCall(TJCheckpointAdvance_Private(tj, ts, base, stepnum));
    PetscCall(TSAdaptSetAlwaysAccept(adapt, always));
  }
  ts->ptime_prev = cp->times[stepnum - 1];
  ts->ptime      = cp->times[stepnum];
  PetscCall(TSSetStepNumber(ts, stepnum));
  PetscCall(TSSetTimeStep(ts, cp->times[stepnum - 1] - cp->times[stepnum])); /* negative: the adjoint goes back */
  *t = cp->times[stepnum];
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectoryCheckpointSetMaxCheckpoints_Checkpoint(TSTrajectory tj, PetscInt K)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  PetscCheck(K >= 1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE, "The checkpoint trajectory needs at least one slot, not %" PetscInt_FMT, K);
  PetscCheck(!cp->step || K == cp->K, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER, "Set the number of checkpoints before the first solve");
  cp->K = K;
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectorySetFromOptions_Checkpoint(TSTrajectory tj, PetscOptionItems *PetscOptionsObject)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;
  PetscInt       K  = cp->K;
  PetscBool      set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Checkpoint trajectory (bounded memory, binomial recomputation)");
  PetscCall(PetNetOptionsInt("-ts_trajectory_max_cps_ram", "Most solutions kept in memory at once", "TSTrajectoryCheckpointSetMaxCheckpoints", K, &K, &set));
  if (set) PetscCall(TSTrajectoryCheckpointSetMaxCheckpoints_Checkpoint(tj, K));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectoryView_Checkpoint(TSTrajectory tj, PetscViewer viewer)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;
  PetscBool      isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (isascii)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  at most %" PetscInt_FMT " solutions in memory; last solve: %" PetscInt_FMT " steps, at most %" PetscInt_FMT " solutions held, %" PetscInt_FMT " steps recomputed\n", cp->K, cp->nsteps, cp->maxcps,
                                     cp->recomputed));
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectoryDestroy_Checkpoint(TSTrajectory tj)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  if (cp->step) {
    PetscCall(TSTrajectoryReset_Checkpoint(tj));
    for (PetscInt i = 0; i < cp->npool; i++) PetscCall(VecDestroy(&cp->pool[i]));
  }
  PetscCall(PetscFree3(cp->step, cp->X, cp->pool));
  PetscCall(PetscFree(cp->times));
  PetscCall(PetscObjectComposeFunction((PetscObject)tj, "TSTrajectorySetMaxCpsRAM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)tj, "TSTrajectoryCheckpointGetStats_C", NULL));
  PetscCall(PetscFree(tj->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode TSTrajectoryCheckpointGetStats_Checkpoint(TSTrajectory tj, PetscInt *maxcps, PetscInt *recomputed)
{
  TJ_Checkpoint *cp = (TJ_Checkpoint *)tj->data;

  PetscFunctionBegin;
  if (maxcps) *maxcps = cp->maxcps;
  if (recomputed) *recomputed = cp->recomputed;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryCreate_Checkpoint(TSTrajectory tj, TS ts)
{
  TJ_Checkpoint *cp;

  PetscFunctionBegin;
  PetscCall(PetscNew(&cp));
  cp->K                   = 10;
  cp->stride              = 1;
  tj->data                = cp;
  tj->solution_only       = PETSC_TRUE;
  tj->ops->set            = TSTrajectorySet_Checkpoint;
  tj->ops->get            = TSTrajectoryGet_Checkpoint;
  tj->ops->setup          = TSTrajectorySetUp_Checkpoint;
  tj->ops->reset          = TSTrajectoryReset_Checkpoint;
  tj->ops->destroy        = TSTrajectoryDestroy_Checkpoint;
  tj->ops->setfromoptions = TSTrajectorySetFromOptions_Checkpoint;
  tj->ops->view           = TSTrajectoryView_Checkpoint;
  PetscCall(PetscObjectComposeFunction((PetscObject)tj, "TSTrajectorySetMaxCpsRAM_C", TSTrajectoryCheckpointSetMaxCheckpoints_Checkpoint));
  PetscCall(PetscObjectComposeFunction((PetscObject)tj, "TSTrajectoryCheckpointGetStats_C", TSTrajectoryCheckpointGetStats_Checkpoint));
  PetscFunctionReturn(0);
}

/*@
  TSTrajectoryCheckpointSetMaxCheckpoints - sets the most solution vectors a TSTRAJECTORYCHECKPOINT keeps in memory at
  once

  Logically collective on tj

  Input Parameters:
+ tj - the trajectory (TSGetTrajectory()); other trajectory types ignore the call
- K  - the number of memory slots, >= 1

  Options Database Key:
. -ts_trajectory_max_cps_ram <10> - K, with the TS's prefix

  Notes:
  Call before the first solve. Fewer slots mean more steps recomputed during the adjoint (binomial schedule); the
  gradients do not change.

  Level: intermediate

.seealso: `TSTRAJECTORYCHECKPOINT`, `TSTrajectoryCheckpointGetStats()`, `NetTSSetSaveTrajectory()`
@*/
PetscErrorCode TSTrajectoryCheckpointSetMaxCheckpoints(TSTrajectory tj, PetscInt K)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tj, TSTRAJECTORY_CLASSID, 1);
  PetscTryMethod(tj, "TSTrajectorySetMaxCpsRAM_C", (TSTrajectory, PetscInt), (tj, K));
  PetscFunctionReturn(0);
}

/*@
  TSTrajectoryCheckpointGetStats - gets the statistics of the last forward and adjoint solve of a
  TSTRAJECTORYCHECKPOINT

  Not collective

  Input Parameter:
. tj - the trajectory (TSGetTrajectory())

  Output Parameters:
+ maxcps     - the most solutions held at once (may be NULL)
- recomputed - the number of steps recomputed (may be NULL)

  Notes:
  Both are 0 for another trajectory type.

  Level: advanced

.seealso: `TSTRAJECTORYCHECKPOINT`, `TSTrajectoryCheckpointSetMaxCheckpoints()`
@*/
PetscErrorCode TSTrajectoryCheckpointGetStats(TSTrajectory tj, PetscInt *maxcps, PetscInt *recomputed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tj, TSTRAJECTORY_CLASSID, 1);
  if (maxcps) *maxcps = 0;
  if (recomputed) *recomputed = 0;
  PetscTryMethod(tj, "TSTrajectoryCheckpointGetStats_C", (TSTrajectory, PetscInt *, PetscInt *), (tj, maxcps, recomputed));
  PetscFunctionReturn(0);
}
