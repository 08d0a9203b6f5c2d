static const char help[] = "Memory and time of TSAdjoint with the store-everything trajectory (memory) and the bounded one (checkpoint).\n"
                           "  du/dt = MLP(u), MLP 2-50-2 tanh (weights N(0, 0.1^2)), a batch of B initial states, rk 4 at dt = 0.01;\n"
                           "  L = <w, u(T)> with a fixed w; gradients dL/du(0) and dL/dtheta by TSAdjointSolve, for each number of steps\n"
                           "  with -ts_trajectory_type memory (every step's stages kept) and checkpoint (at most K solutions kept).\n"
                           "  -bench_steps 100,200,400,800,1600   numbers of steps\n"
                           "  -bench_batch B                      initial states in the batch (default 200: a state of 400 reals)\n"
                           "  -bench_checkpoints K                solutions the checkpoint trajectory keeps (default 8)\n"
                           "  -check                              error out unless the checkpoint trajectory's peak stays flat (it may grow by\n"
                           "                                      the capacity of its step times, 16 bytes per step, not by states) while the\n"
                           "                                      memory one grows by at least one state per added step, and the gradients\n"
                           "                                      agree to 1e-12 (relative)\n"
                           "Needs PETSc's tracing allocator: run with -malloc_dump (or -malloc_debug). Prints one line per step count:\n"
                           "  trajectory: steps=N memory_MB=... checkpoint_MB=... checkpoint_time_ratio=... grad_rel_diff=...\n"
                           "  e.g. bin/bench_trajectory -malloc_dump\n";

/*
  How memory is measured. PetscMemoryGetMaximumUsage() is the resident set's high-water mark of the whole process: it
  never goes down, so the first big run hides every later one, and it counts the allocator's slack. PETSc's tracing
  allocator (-malloc_dump or -malloc_debug) instead counts exactly the bytes PetscMalloc() holds at any moment
  (PetscMallocGetCurrentUsage()). The TS is set up (TSSetUp(), TSAdjointSetUp(): stage and adjoint work Vecs) and the
  Net has seen the batch before the baseline is read; the usage is then sampled after every forward step (TSMonitor)
  and after every TSTrajectoryGet() of the adjoint (TSAdjointMonitor, which follows it), so the peak above the baseline
  is what the trajectory holds: the stored stages or checkpoints (including the checkpoint trajectory's spare Vecs and
  its one real per step of step times) and their bookkeeping. Reported: the largest over the ranks.
*/
#include <petnet.h>
#include <petnetts.h>

typedef struct {
  PetscLogDouble base, peak;
} MemoryProbe;

static PetscErrorCode ProbeSample(MemoryProbe *probe)
{
  PetscLogDouble now;

  PetscFunctionBegin;
  PetscCall(PetscMallocGetCurrentUsage(&now));
  probe->peak = PetscMax(probe->peak, now);
  PetscFunctionReturn(0);
}

static PetscErrorCode ForwardMonitor(TS ts, PetscInt step, PetscReal t, Vec u, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(ProbeSample((MemoryProbe *)ctx));
  PetscFunctionReturn(0);
}

static PetscErrorCode AdjointMonitor(TS ts, PetscInt step, PetscReal t, Vec u, PetscInt numcost, Vec *lambda, Vec *mu, void *ctx)
{
  PetscFunctionBegin;
  PetscCall(ProbeSample((MemoryProbe *)ctx));
  PetscFunctionReturn(0);
}

/*
  N steps of rk 4 from u0 and the adjoint of L = <w, u(T)>: gu = dL/du(0), gp = dL/dtheta. K = 0: the memory trajectory,
  else the checkpoint trajectory with at most K solutions. Returns the trajectory's peak bytes (largest over the ranks),
  the wall time of the forward and adjoint solves, and the steps the checkpoint trajectory recomputed.
*/
static PetscErrorCode GradientWithTrajectory(Net net, Vec u0, Vec w, PetscInt N, PetscInt K, Vec gu, Vec gp, PetscLogDouble *bytes, PetscLogDouble *seconds, PetscInt *recomputed)
{
  const PetscReal dt = 0.01;
  TS              ts;
  TSTrajectory    tj;
  Vec             u, lambda[1], mu[1];
  MemoryProbe     probe;
  PetscLogDouble  t0, t1;
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);

  PetscFunctionBegin;
  PetscCall(VecDuplicate(u0, &u));
  PetscCall(VecCopy(u0, u));
  PetscCall(TSCreate(comm, &ts));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetTimeStep(ts, dt));
  PetscCall(TSSetMaxSteps(ts, N));
  PetscCall(TSSetMaxTime(ts, 2 * N * dt)); /* the step count ends the solve */
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(NetTSSetRHS(ts, net, u));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(NetTSSetSaveTrajectory(ts));
  PetscCall(TSGetTrajectory(ts, &tj));
  if (K) {
    PetscCall(TSTrajectorySetType(tj, ts, TSTRAJECTORYCHECKPOINT));
    PetscCall(TSTrajectoryCheckpointSetMaxCheckpoints(tj, K));
  } else
    PetscCall(TSTrajectorySetType(tj, ts, TSTRAJECTORYMEMORY));
  lambda[0] = gu;
  mu[0]     = gp;
  PetscCall(TSSetCostGradients(ts, 1, lambda, mu));
  PetscCall(TSSetSolution(ts, u));
  PetscCall(TSSetUp(ts));
  PetscCall(TSAdjointSetUp(ts));
  PetscCall(TSMonitorSet(ts, ForwardMonitor, &probe, NULL));
  PetscCall(TSAdjointMonitorSet(ts, AdjointMonitor, &probe, NULL));

  PetscCall(PetscMallocGetCurrentUsage(&probe.base));
  probe.peak = probe.base;
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t0));
  PetscCall(TSSolve(ts, u));
  PetscCall(VecCopy(w, gu)); /* lambda(T) = dL/du(T) */
  PetscCall(VecZeroEntries(gp));
  PetscCall(TSAdjointSolve(ts));
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t1));

  *bytes   = probe.peak - probe.base;
  *seconds = t1 - t0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, bytes, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  PetscCall(TSTrajectoryCheckpointGetStats(tj, NULL, recomputed));
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&u));
  PetscFunctionReturn(0);
}

/* ||(a1, a2) - (b1, b2)|| / ||(a1, a2)|| */
static PetscErrorCode RelativeDifference(Vec a1, Vec a2, Vec b1, Vec b2, PetscReal *diff)
{
  PetscReal na1, na2, d1, d2;
  Vec       t1, t2;

  PetscFunctionBegin;
  PetscCall(VecNorm(a1, NORM_2, &na1));
  PetscCall(VecNorm(a2, NORM_2, &na2));
  PetscCall(VecDuplicate(a1, &t1));
  PetscCall(VecDuplicate(a2, &t2));
  PetscCall(VecWAXPY(t1, -1.0, b1, a1));
  PetscCall(VecWAXPY(t2, -1.0, b2, a2));
  PetscCall(VecNorm(t1, NORM_2, &d1));
  PetscCall(VecNorm(t2, NORM_2, &d2));
  *diff = PetscSqrtReal(d1 * d1 + d2 * d2) / PetscSqrtReal(na1 * na1 + na2 * na2);
  PetscCall(VecDestroy(&t1));
  PetscCall(VecDestroy(&t2));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetNetShape    in        = {1, {2}};
  PetscInt       steps[16] = {100, 200, 400, 800, 1600}, nsteps = 16, batch = 200, K = 8, nlocal, nlayers, recomputed, statesize;
  PetscMPIInt    rank, size;
  PetscBool      check = PETSC_FALSE, tracing, set;
  PetscLogDouble membytes[16], cpbytes[16], tmem, tcp, statebytes;
  PetscReal      diff[16];
  Net            net;
  Vec            u0, w, gu[2], gp[2];
  PetscRandom    rnd;
  MPI_Comm       comm;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscOptionsBegin(comm, NULL, "Trajectory memory benchmark", NULL);
  PetscCall(PetscOptionsIntArray("-bench_steps", "Numbers of steps, increasing", NULL, steps, &nsteps, &set));
  if (!set) nsteps = 5;
  PetscCall(PetNetOptionsInt("-bench_batch", "Initial states in the batch", NULL, batch, &batch, NULL));
  PetscCall(PetNetOptionsInt("-bench_checkpoints", "Solutions the checkpoint trajectory keeps", NULL, K, &K, NULL));
  PetscCall(PetscOptionsBool("-check", "Check flat checkpoint memory, growing stored memory and equal gradients", NULL, check, &check, NULL));
  PetscOptionsEnd();
  PetscCall(PetscMallocGetDebug(&tracing, NULL, NULL));
  PetscCheck(tracing, comm, PETSC_ERR_USER_INPUT, "The memory is measured by PETSc's tracing allocator: run with -malloc_dump (or -malloc_debug)");
  PetscCheck(nsteps >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "Give at least one number of steps with -bench_steps");
  for (PetscInt i = 1; i < nsteps; i++) PetscCheck(steps[i] > steps[i - 1], comm, PETSC_ERR_ARG_OUTOFRANGE, "-bench_steps must increase: %" PetscInt_FMT " follows %" PetscInt_FMT, steps[i], steps[i - 1]);
  PetscCheck(batch >= size, comm, PETSC_ERR_ARG_OUTOFRANGE, "-bench_batch %" PetscInt_FMT " gives some of the %d ranks no sample: use at least %d", batch, size, size);
  PetscCheck(K >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-bench_checkpoints must be at least 1, not %" PetscInt_FMT, K);

  /* the spiral's model: 2 -> 50 -> 2 with tanh, weights N(0, 0.1^2) */
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "dense:50,tanh,dense:2"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 1));
  PetscCall(NetGetNumLayers(net, &nlayers));
  for (PetscInt l = 0; l < nlayers; l++) {
    Layer layer;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerDenseSetInitialization(layer, LAYER_INIT_NORMAL, 0.1));
  }
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));

  /* the batch, split by samples; initial states and w uniform in [-1, 1) */
  nlocal = batch / size + (rank < batch % size ? 1 : 0);
  PetscCall(NetCreateVecs(net, nlocal, &u0, NULL));
  PetscCall(VecDuplicate(u0, &w));
  PetscCall(PetscRandomCreate(comm, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 5));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(u0, rnd));
  PetscCall(VecSetRandom(w, rnd));
  PetscCall(PetscRandomDestroy(&rnd));
  for (PetscInt k = 0; k < 2; k++) {
    PetscCall(VecDuplicate(u0, &gu[k]));
    PetscCall(NetCreateParameterVec(net, &gp[k]));
  }
  PetscCall(VecGetLocalSize(u0, &statesize));
  statebytes = (PetscLogDouble)statesize * sizeof(PetscScalar);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &statebytes, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  PetscCall(NetForward(net, u0, NULL)); /* the Net's batch work space exists before any baseline */

  PetscCall(PetscPrintf(comm, "trajectory setup: du/dt = MLP 2-50-2 tanh (u), batch=%" PetscInt_FMT " (state %.1f KB per rank), rk 4, dt=0.01, checkpoints K=%" PetscInt_FMT ", ranks=%d; memory: PETSc tracing allocator\n", batch, statebytes / 1024, K,
                        size));
  for (PetscInt i = 0; i < nsteps; i++) {
    PetscCall(GradientWithTrajectory(net, u0, w, steps[i], 0, gu[0], gp[0], &membytes[i], &tmem, &recomputed));
    PetscCall(GradientWithTrajectory(net, u0, w, steps[i], K, gu[1], gp[1], &cpbytes[i], &tcp, &recomputed));
    PetscCall(RelativeDifference(gu[0], gp[0], gu[1], gp[1], &diff[i]));
    PetscCall(PetscPrintf(comm, "trajectory: steps=%" PetscInt_FMT " memory_MB=%.3f checkpoint_MB=%.4f memory_time_s=%.3f checkpoint_time_s=%.3f checkpoint_time_ratio=%.2f recomputed_steps=%" PetscInt_FMT " grad_rel_diff=%.1e\n", steps[i],
                          membytes[i] / 1048576, cpbytes[i] / 1048576, (double)tmem, (double)tcp, (double)(tcp / tmem), recomputed, (double)diff[i]));
  }

  if (check) {
    for (PetscInt i = 0; i < nsteps; i++) PetscCheck(diff[i] <= 1e-12, comm, PETSC_ERR_PLIB, "%" PetscInt_FMT " steps: the checkpoint trajectory's gradients differ from the stored ones by %g (relative)", steps[i], (double)diff[i]);
    for (PetscInt i = 1; i < nsteps; i++) {
      const PetscInt added = steps[i] - steps[i - 1];

      PetscCheck(membytes[i] - membytes[i - 1] >= added * statebytes, comm, PETSC_ERR_PLIB, "The memory trajectory grew by %.0f bytes from %" PetscInt_FMT " to %" PetscInt_FMT " steps, less than one state (%.0f bytes) per step: is it storing?",
                 membytes[i] - membytes[i - 1], steps[i - 1], steps[i], statebytes);
      PetscCheck(cpbytes[i] - cpbytes[i - 1] <= 16.0 * steps[i], comm, PETSC_ERR_PLIB, "The checkpoint trajectory grew by %.0f bytes from %" PetscInt_FMT " to %" PetscInt_FMT " steps, more than the capacity of its step times (16 bytes per step)",
                 cpbytes[i] - cpbytes[i - 1], steps[i - 1], steps[i]);
    }
    PetscCall(PetscPrintf(comm, "check: checkpoint memory flat, memory trajectory growing, gradients equal to 1e-12\n"));
  }

  for (PetscInt k = 0; k < 2; k++) {
    PetscCall(VecDestroy(&gu[k]));
    PetscCall(VecDestroy(&gp[k]));
  }
  PetscCall(VecDestroy(&u0));
  PetscCall(VecDestroy(&w));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
