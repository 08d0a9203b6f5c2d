/*
  bin/cosmo3d's training (cosmo3dtrain.h): a 3-D CNN in grid mode learns (log A, n) from one field.

  The Net lives on an N^3 DMDA spread over the ranks of each spatial group (NetSetGrid(), -net_spatial_groups G: G
  groups, each with its own fields, data parallel across groups). A batch is nf fields per group, G nf in all; the
  fields are drawn by sample index on the fly (Cosmo3dFieldSample/Generate: the same field on any number of ranks):
  step k of training uses the samples k G nf + g nf + f, the held-out fields start at index 10^9.

    input   the field's channels, each divided by its typical spread (channel scales below), at every grid point
    output  (log A - c_A) / s_A and (n - c_n) / s_n: the parameters standardised by their prior's mean and spread
    loss    mean squared error over the batch (on the first rank of each group, where globalavgpool leaves the grid)

  The generator's DMDA is periodic (the fields are periodic), the Net's is the same grid with the same ownership and
  zero padding (grid mode pads as batch-mode layers do): a global Vec of one is a global Vec of the other.

  Two ways to train, by TAO type:
    stochastic (PetNet's sgd, adam, adamw, rmsprop, kfac; default adam) one TaoSolve; the update hook draws batch k
                                                                        before iteration k's objective
    full batch (TAO's own: nls, ntr, ... with -cosmo3d_hessian; lmvm,   one TaoSolve per batch of -cosmo3d_newton_steps
                cg, ...)                                                iterations, the batch drawn before it: a line
                                                                        search or trust region needs one fixed function
  TAO's own types evaluate the objective before they call an update hook, so a hook alone would hand them an empty
  batch (a zero loss and gradient: converged at iteration 0). The Newton-type types get the curvature of the batch's
  mean loss, LossCreateNetHessian(): Gauss-Newton or exact, matrix-free, solved by conjugate gradients.
*/
#include "cosmo3dtrain.h"
#include <petnetoptim.h>
#include <petsctime.h>
#include <sys/resource.h>

/* the typical spread of each channel at (log A, n) = (0, 2) on a 32^3 grid (delta, smoothed R = 1, 2, lognormal) */
static const PetscReal Cosmo3dChannelScale[COSMO3D_MAX_CHANNELS] = {0.39, 0.195, 0.125, 0.405};

#define COSMO3D_HELDOUT_FIRST 1000000000

/* The default CNN (CosmoFlow's shape, small): convolutions at full resolution first (most of the modes are at high k),
   average pooling, global average pooling, a dense head. No batchnorm by default: it divides each channel by its spread
   over the batch's fields, and that spread is the amplitude A the network must read (measured on 2 ranks, 1000 steps:
   4.3% / 4.0% without, 6.1% / 3.7% with batchnorm after the second convolution, 7.2% / 3.7% in the head); MLPerf HPC's
   CosmoFlow leaves it off by default too. */
#define COSMO3D_DEFAULT_LAYERS "conv3d:16:3:1:1,relu,avgpool:2,conv3d:32:3:1:1,relu,avgpool:2,conv3d:32:3:1:1,relu,globalavgpool,dense:32,relu,dense:2"

typedef struct {
  Cosmo3dTrainOptions opt;
  Net                 net;
  Loss                loss;
  MPI_Comm            gcomm;
  PetscMPIInt         group, grank, ngroups;
  DM                  dagen, dagrid; /* periodic (the generator's), and the Net's grid: the same ownership */
  Vec                 field;         /* one field on dagen */
  Vec                 X, Y, T, dY, G;
  PetscInt            npoints;        /* grid points of this rank's block */
  PetscReal           cA, sA, cn, sn; /* the standardisation of the targets */
  PetscLogDouble      tstep, tready;  /* the last step's time (batch ready -> next batch asked for) */
  PetscInt64          batch;          /* batches drawn */
  PetscBool           evaluated;      /* the first objective was evaluated: its value is first_loss */
  PetscReal           first_loss;
} Cosmo3dCtx;

/* Fill X (and T on the group's first rank) with the nf fields of this group in the batch that starts at index first */
static PetscErrorCode Cosmo3dFillBatch(Cosmo3dCtx *c, PetscInt64 first, PetscReal params[])
{
  const PetscInt     C = c->opt.channels, nf = c->opt.nf;
  PetscScalar       *x, *t                   = NULL;
  const PetscScalar *f;

  PetscFunctionBegin;
  PetscCall(VecGetArrayWrite(c->X, &x));
  if (!c->grank) PetscCall(VecGetArrayWrite(c->T, &t));
  for (PetscInt i = 0; i < nf; i++) {
    PetscReal  logA, n;
    PetscInt64 seed;

    PetscCall(Cosmo3dFieldSample(c->opt.seed, first + (PetscInt64)c->group * nf + i, c->opt.logArange, c->opt.nrange, &logA, &n, &seed));
    PetscCall(Cosmo3dFieldGenerate(c->dagen, logA, n, seed, c->field));
    PetscCall(VecGetArrayRead(c->field, &f));
    for (PetscInt p = 0; p < c->npoints; p++)
      for (PetscInt ch = 0; ch < C; ch++) x[((size_t)i * c->npoints + p) * C + ch] = f[(size_t)p * C + ch] / Cosmo3dChannelScale[ch];
    PetscCall(VecRestoreArrayRead(c->field, &f));
    if (t) {
      t[2 * i]     = (logA - c->cA) / c->sA;
      t[2 * i + 1] = (n - c->cn) / c->sn;
    }
    if (params) {
      params[2 * i]     = logA;
      params[2 * i + 1] = n;
    }
  }
  if (t) PetscCall(VecRestoreArrayWrite(c->T, &t));
  PetscCall(VecRestoreArrayWrite(c->X, &x));
  PetscFunctionReturn(0);
}

/* TaoSetUpdate hook: draw batch k (the time since the last batch was ready is the last step's) */
static PetscErrorCode Cosmo3dNextBatch(Tao tao, PetscInt k, void *ctx)
{
  Cosmo3dCtx    *c = (Cosmo3dCtx *)ctx;
  PetscLogDouble now;

  PetscFunctionBegin;
  PetscCall(PetscTime(&now));
  if (c->batch) c->tstep = now - c->tready;
  PetscCall(Cosmo3dFillBatch(c, c->batch * c->ngroups * c->opt.nf, NULL));
  c->batch++;
  if (c->opt.monitor && k % c->opt.monitor == 0) {
    PetscReal f;

    PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "step %" PetscInt_FMT ": loss %.4e (last step %.3f s)\n", k, (double)f, (double)c->tstep));
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&c->tready));
  PetscFunctionReturn(0);
}

static PetscErrorCode Cosmo3dObjective(Tao tao, Vec theta, PetscReal *f, Vec g, void *ctx)
{
  Cosmo3dCtx *c = (Cosmo3dCtx *)ctx;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(c->net, theta));
  PetscCall(NetForward(c->net, c->X, c->Y));
  PetscCall(LossEvaluate(c->loss, c->Y, c->T, f, c->dY));
  PetscCall(VecZeroEntries(g));
  PetscCall(NetBackward(c->net, c->dY, NULL, g));
  if (!c->evaluated) c->first_loss = *f;
  c->evaluated = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* TaoSetHessian() callback: the Hessian (LossCreateNetHessian(), its batch X, T) is taken at theta */
static PetscErrorCode Cosmo3dHessian(Tao tao, Vec theta, Mat H, Mat Hpre, void *ctx)
{
  Cosmo3dCtx *c = (Cosmo3dCtx *)ctx;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(c->net, theta));
  PetscFunctionReturn(0);
}

/* The Newton-type TAO types: the curvature of -cosmo3d_hessian, its Krylov solves unpreconditioned (a matrix-free
   Hessian has no ILU) and cut at 100 conjugate-gradient iterations unless the options say otherwise */
static PetscErrorCode Cosmo3dSetUpHessian(Cosmo3dCtx *c, Tao tao, Mat *H)
{
  KSP          ksp;
  PC           pc;
  const char  *prefix;
  PetscOptions options;
  PetscBool    set, bnk;

  PetscFunctionBegin;
  PetscCall(LossCreateNetHessian(c->loss, c->net, (LossHessianType)c->opt.hessian, H));
  PetscCall(LossNetHessianSetBatch(*H, c->X, c->T));
  PetscCall(TaoSetHessian(tao, *H, *H, Cosmo3dHessian, c));
  PetscCall(TaoGetKSP(tao, &ksp));
  if (!ksp) PetscFunctionReturn(0);
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tao, &bnk, TAOBNLS, TAOBNTR, TAOBNTL, ""));
  PetscCall(KSPGetOptionsPrefix(ksp, &prefix));
  PetscCall(PetscObjectGetOptions((PetscObject)ksp, &options));
  PetscCall(PetscOptionsHasName(options, prefix, "-pc_type", &set));
  PetscCall(KSPGetPC(ksp, &pc));
  if (!set && !bnk) PetscCall(PCSetType(pc, PCNONE)); /* the bound-constrained types default to LMVM */
  PetscCall(PetscOptionsHasName(options, prefix, "-ksp_max_it", &set));
  if (!set) PetscCall(KSPSetTolerances(ksp, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 100));
  PetscFunctionReturn(0);
}

/* mean relative errors |A_pred/A - 1| and |n_pred - n| / n over the held-out fields */
static PetscErrorCode Cosmo3dEvaluate(Cosmo3dCtx *c, PetscReal *errA, PetscReal *errn)
{
  const PetscInt nf = c->opt.nf, batches = (c->opt.test + c->ngroups * nf - 1) / (c->ngroups * nf);
  PetscReal     *params, sums[3]         = {0, 0, 0};

  PetscFunctionBegin;
  PetscCall(NetSetTraining(c->net, PETSC_FALSE));
  PetscCall(PetscMalloc1(2 * nf, &params));
  for (PetscInt b = 0; b < batches; b++) {
    const PetscScalar *y;

    PetscCall(Cosmo3dFillBatch(c, COSMO3D_HELDOUT_FIRST + (PetscInt64)b * c->ngroups * nf, params));
    PetscCall(NetForward(c->net, c->X, c->Y));
    if (!c->grank) {
      PetscCall(VecGetArrayRead(c->Y, &y));
      for (PetscInt i = 0; i < nf; i++) {
        const PetscInt64 index = (PetscInt64)b * c->ngroups * nf + (PetscInt64)c->group * nf + i;
        const PetscReal  logA = y[2 * i] * c->sA + c->cA, n = y[2 * i + 1] * c->sn + c->cn;

        if (index >= c->opt.test) continue; /* the last batch's extra fields */
        sums[0] += PetscAbsReal(PetscExpReal(logA - params[2 * i]) - 1);
        sums[1] += PetscAbsReal(n - params[2 * i + 1]) / params[2 * i + 1];
        sums[2] += 1;
      }
      PetscCall(VecRestoreArrayRead(c->Y, &y));
    }
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 3, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  *errA = sums[0] / sums[2];
  *errn = sums[1] / sums[2];
  PetscCall(PetscFree(params));
  PetscCall(NetSetTraining(c->net, PETSC_TRUE));
  PetscFunctionReturn(0);
}

/*
  Cosmo3dTrain - trains the Net of the options database (default: a small 3-D CNN) on fields drawn on the fly, then
  measures it on held-out fields; results: the errors, training time, last step's time, peak memory per rank
*/
PetscErrorCode Cosmo3dTrain(const Cosmo3dTrainOptions *opt, Cosmo3dTrainResults *res)
{
  Cosmo3dCtx      c;
  Tao             tao;
  Vec             theta;
  Mat             H = NULL;
  PetscInt        m[3], xm, ym, zm, its = 0;
  PetscBool       stochastic, newton;
  TaoType         taotype;
  const PetscInt *lx, *ly, *lz;
  PetscLogDouble  t0, t1;
  PetscMPIInt     size;
  char            layers[1024];
  PetscBool       set;
  struct rusage   ru;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(&c, sizeof(c)));
  c.opt = *opt;
  c.cA  = 0.5 * (opt->logArange[0] + opt->logArange[1]);
  c.sA  = PetscMax((opt->logArange[1] - opt->logArange[0]) / PetscSqrtReal(12.0), 1e-3);
  c.cn  = 0.5 * (opt->nrange[0] + opt->nrange[1]);
  c.sn  = PetscMax((opt->nrange[1] - opt->nrange[0]) / PetscSqrtReal(12.0), 1e-3);
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));

  /* the Net: its groups, then the grid of each group */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &c.net));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-net_layers", layers, sizeof(layers), &set));
  if (!set) PetscCall(NetSetLayers(c.net, COSMO3D_DEFAULT_LAYERS));
  PetscCall(NetSetFromOptions(c.net));
  PetscCall(NetGetSpatialComm(c.net, &c.gcomm));
  PetscCallMPI(MPI_Comm_rank(c.gcomm, &c.grank));
  {
    PetscMPIInt gsize, rank;

    PetscCallMPI(MPI_Comm_size(c.gcomm, &gsize));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    c.ngroups = size / gsize;
    c.group   = rank / gsize;
  }
  PetscCall(DMDACreate3d(c.gcomm, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_BOX, opt->N, opt->N, opt->N, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, opt->channels, 1, NULL, NULL, NULL, &c.dagen));
  PetscCall(DMSetUp(c.dagen));
  PetscCall(DMDAGetInfo(c.dagen, NULL, NULL, NULL, NULL, &m[0], &m[1], &m[2], NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetOwnershipRanges(c.dagen, &lx, &ly, &lz));
  PetscCall(DMDACreate3d(c.gcomm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, opt->N, opt->N, opt->N, m[0], m[1], m[2], opt->channels, 0, lx, ly, lz, &c.dagrid));
  PetscCall(DMSetUp(c.dagrid));
  PetscCall(DMDAGetCorners(c.dagrid, NULL, NULL, NULL, &xm, &ym, &zm));
  c.npoints = xm * ym * zm;
  PetscCall(DMCreateGlobalVector(c.dagen, &c.field));
  PetscCall(NetSetGrid(c.net, c.dagrid));
  PetscCall(NetSetUp(c.net));
  PetscCall(NetCreateVecs(c.net, opt->nf * c.npoints, &c.X, &c.Y));
  PetscCall(VecDuplicate(c.Y, &c.T));
  PetscCall(VecDuplicate(c.Y, &c.dY));
  PetscCall(LossCreate(PETSC_COMM_WORLD, &c.loss));
  PetscCall(LossSetType(c.loss, LOSSMSE));
  PetscCall(LossSetFromOptions(c.loss));

  /* Adam with a cosine decay over the iterations (TAO options override) */
  PetscCall(PetNetTaoInitializePackage());
  PetscCall(TaoCreate(PETSC_COMM_WORLD, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(PetNetTaoSetLearningRate(tao, 2e-3));
  PetscCall(PetNetTaoSetLRSchedule(tao, PETNET_LR_COSINE));
  PetscCall(PetNetTaoSetLRHorizon(tao, opt->iterations));
  PetscCall(TaoSetMaximumIterations(tao, opt->iterations));
  PetscCall(TaoSetTolerances(tao, 0, 0, 0));
  PetscCall(NetGetParameters(c.net, &theta));
  PetscCall(VecDuplicate(theta, &c.G));
  {
    Vec x;

    PetscCall(VecDuplicate(theta, &x));
    PetscCall(VecCopy(theta, x));
    PetscCall(TaoSetSolution(tao, x));
    PetscCall(VecDestroy(&x));
  }
  PetscCall(TaoSetObjectiveAndGradient(tao, c.G, Cosmo3dObjective, &c));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tao, &stochastic, TAOSGD, TAOADAM, TAOADAMW, TAORMSPROP, TAOKFAC, ""));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tao, &newton, TAONLS, TAONTR, TAONTL, TAOBNLS, TAOBNTR, TAOBNTL, ""));
  PetscCheck(!newton || opt->hessian >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "TAO type %s is a Newton-type method and needs the curvature of the loss: give -cosmo3d_hessian gn (Gauss-Newton, J^T H_L J) or -cosmo3d_hessian exact", taotype);
  PetscCheck(newton || opt->hessian < 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG,
             "-cosmo3d_hessian %s is the curvature of the Newton-type TAO types (nls, ntr, ntl, bnls, bntr, bntl), and TAO type %s uses none: give -tao_type nls or ntr, or leave -cosmo3d_hessian out", LossHessianTypes[PetscMax(opt->hessian, 0)],
             taotype);
  if (stochastic) PetscCall(TaoSetUpdate(tao, Cosmo3dNextBatch, &c));
  if (newton) PetscCall(Cosmo3dSetUpHessian(&c, tao, &H));

  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t0));
  if (stochastic) {
    PetscCall(TaoSolve(tao));
    PetscCall(TaoGetIterationNumber(tao, &its));
  } else { /* one TaoSolve per batch, the batch fixed while it runs */
    const PetscInt steps = opt->newtonsteps > 0 ? opt->newtonsteps : opt->iterations;

    while (its < opt->iterations) {
      PetscInt k;

      PetscCall(Cosmo3dFillBatch(&c, c.batch * c.ngroups * c.opt.nf, NULL));
      c.batch++;
      PetscCall(TaoSetMaximumIterations(tao, PetscMin(steps, opt->iterations - its)));
      PetscCall(TaoSolve(tao));
      PetscCall(TaoGetIterationNumber(tao, &k));
      if (opt->monitor) {
        PetscReal f;

        PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "batch %" PetscInt64_FMT ": %" PetscInt_FMT " iterations, loss %.4e\n", c.batch - 1, k, (double)f));
      }
      if (!k) break; /* converged (or the line search failed) at the first point: more batches would not move */
      its += k;
    }
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t1));
  {
    PetscLogDouble now;

    PetscCall(PetscTime(&now));
    if (!stochastic)
      c.tstep = its ? (t1 - t0) / its : 0; /* the mean iteration (a Newton step is many products) */
    else if (its == 1 || !c.tstep)
      c.tstep = now - c.tready; /* the last step: its batch ready -> now */
  }
  PetscCall(TaoGetSolution(tao, &theta));
  PetscCall(NetSetParameters(c.net, theta));
  res->train_time = t1 - t0;
  res->step_time  = c.tstep;
  res->iterations = its;
  PetscCall(TaoGetSolutionStatus(tao, NULL, &res->train_loss, NULL, NULL, NULL, NULL));
  res->first_loss = c.first_loss;
  PetscCall(Cosmo3dEvaluate(&c, &res->errA, &res->errn));
  {
    PetscInt nparams;

    PetscCall(NetGetNumParameters(c.net, &nparams));
    res->nparams = nparams;
  }
  getrusage(RUSAGE_SELF, &ru);
  res->peak_mem_mb = ru.ru_maxrss / 1024.0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &res->peak_mem_mb, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  res->ngroups = c.ngroups;

  PetscCall(TaoDestroy(&tao));
  PetscCall(MatDestroy(&H));
  PetscCall(LossDestroy(&c.loss));
  PetscCall(VecDestroy(&c.X));
  PetscCall(VecDestroy(&c.Y));
  PetscCall(VecDestroy(&c.T));
  PetscCall(VecDestroy(&c.dY));
  PetscCall(VecDestroy(&c.G));
  PetscCall(VecDestroy(&c.field));
  PetscCall(NetDestroy(&c.net));
  PetscCall(DMDestroy(&c.dagrid));
  PetscCall(DMDestroy(&c.dagen));
  PetscFunctionReturn(0);
}
