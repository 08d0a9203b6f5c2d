static const char help[] = "Neural ODE on the classic spiral: learn du/dt = MLP(u^3) from observations of dy/dt = y^3 A.\n"
                           "  true dynamics  A = [[-0.1, 2], [-2, -0.1]], y(0) = (2, 0), 1000 observations on [0, 25] (a PETSc TS, rk 4)\n"
                           "  model          du/dt = Net(u^3), Net = dense:50,tanh,dense:2 (weights N(0, 0.1^2), zero biases; -net_layers ...)\n"
                           "  training       each iteration: 20 random windows of 10 consecutive observations, integrated as one batch Vec\n"
                           "                 from their first observation with rk 4 at the observation spacing; loss: mean |u - y| (l1);\n"
                           "                 gradient by NetTSTimeSeriesGradient (TSAdjoint, segment by segment); RMSprop lr 1e-3 with a\n"
                           "                 cosine decay over the iterations (-tao_lr_schedule constant: torchdiffeq's ode_demo.py)\n"
                           "  -spiral_iterations N   training iterations (default 2000)\n"
                           "  -spiral_batch B        windows per batch (default 20);  -spiral_window W  observations per window (default 10)\n"
                           "  -spiral_seed S         seed of the window draws (default 1); -net_seed for the weights\n"
                           "  -spiral_monitor K      every K iterations print the loss and the MAE of the whole trajectory (default 0: off)\n"
                           "  -spiral_test_gradient  before training, compare the adjoint gradient of the first batch's loss with central finite\n"
                           "                         differences along a random direction (error if the relative difference exceeds 1e-6)\n"
                           "  -spiral_jacobian_from_p the adjoint's linearization points from RHSJacobianP, skipping TSAdjoint's\n"
                           "                         SNESComputeJacobian calls (default 1; the same bits as 0)\n"
                           "  -ts_type rk -ts_rk_type 4 -ts_dt ...   the training integrator (explicit RK; default rk 4 at the spacing)\n"
                           "  -tao_type rmsprop -tao_rmsprop_lr 1e-3 -tao_lr_schedule cosine ...   the optimizer\n"
                           "Ends with: summary: iterations=N ... mae=M train_time_s=T train_cpu_s=C (MAE of the learned trajectory from y(0) over\n"
                           "[0, 25]; wall and rank-0 CPU seconds of the training)\n";

/*
  The right-hand side composes an elementwise cube with the Net, G(u) = N(u^3; theta), and its derivatives chain the
  diagonal D = diag(3 u^2) with the Net's Jacobian shells, so TSAdjoint gets the exact discrete adjoint:

      dG/du     = J_N(u^3) D        MatMult: J_N (D x)        MatMultTranspose: D (J_N^T y)
      dG/dtheta = J_theta(u^3)      MatMult: NetJVP(., v)     MatMultTranspose: NetBackward(y, ., g)

  TSAdjointStep_RK applies dG/du^T and dG/dtheta^T to the same stage cotangent one after the other; the transpose of
  dG/du runs NetBackward once for both and keeps the parameter part for the dG/dtheta^T that follows (one backward
  pass per stage instead of two).

  Linearization point: TS asks for dG/du at a stage state u (RHSJacobian) before applying it, and TSAdjointStep_RK asks
  for dG/dtheta (RHSJacobianP) right after at the same stage (same Vec, same time), which reuses that point. The
  context keeps u^3 and 3 u^2 of the state in its own Vecs and the Net's last forward pass at u^3; an RHS evaluation in
  between moves the Net, so the products run NetForward(u^3) again when needed.

  TSAdjointStep_RK (PETSc 3.18) asks for dG/du through SNESComputeJacobian, which looks up some fifteen -snes_* options
  in the database on every call (a tenth of the training time: 72,000 calls). When the parameter gradient is wanted,
  the RHSJacobianP request that follows at the same stage sets the very same point, so the training tells the SNES
  never to recompute the Jacobian (lag -1, CubeRHSSetJacobianFromP()) and skips that call: the same products at the
  same points, the same bits. A stage whose dG/du^T is applied without that request (a PETSc whose adjoint orders its
  calls otherwise) is an error, not a product at a stale point. Without the parameter gradient the lag is 1 again.
  -spiral_test_gradient checks the resulting gradient against central finite differences and that it has the same bits
  with the lag and without.

  The state Vec is a batch: its local part is n samples of 2 features (sample-major), the Net's batch layout.
*/
#include <petnet.h>
#include <petnetts.h>
#include <petnetloss.h>
#include <petnetoptim.h>
#include <time.h>

/* CPU seconds of this process (PetscGetCPUTime() of Debian's PETSc 3.18 build returns a wrongly scaled value) */
static PetscLogDouble CPUSeconds(void)
{
  return (PetscLogDouble)clock() / CLOCKS_PER_SEC;
}

typedef struct {
  Net           net;
  Vec           cube;              /* u^3 of the last RHS evaluation (the Net's input then) */
  Vec           lincube, linderiv; /* u^3 and 3 u^2 at the linearization point */
  Vec           work;
  PetscObjectId linid; /* the stage Vec and time of the last Jacobian request */
  PetscReal     lintime;
  PetscBool     haslin, netatlin;
  Vec           gcache; /* dG/dtheta^T y, computed by dG/du^T y for the cotangent Vec yid */
  PetscObjectId yid;
  PetscBool     hascache;
  PetscBool     fromp, pfresh; /* the point comes from RHSJacobianP (SNES lag -1); it set one since the last dG/du^T */
  Mat           J, JP;
} CubeRHS;

/* cube = u^3, and deriv = 3 u^2 if deriv */
static PetscErrorCode Cube(Vec u, Vec cube, Vec deriv)
{
  const PetscScalar *x;
  PetscScalar       *c, *d = NULL;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(u, &n));
  PetscCall(VecGetArrayRead(u, &x));
  PetscCall(VecGetArrayWrite(cube, &c));
  if (deriv) PetscCall(VecGetArrayWrite(deriv, &d));
  for (PetscInt i = 0; i < n; i++) {
    c[i] = x[i] * x[i] * x[i];
    if (d) d[i] = 3.0 * x[i] * x[i];
  }
  if (deriv) PetscCall(VecRestoreArrayWrite(deriv, &d));
  PetscCall(VecRestoreArrayWrite(cube, &c));
  PetscCall(VecRestoreArrayRead(u, &x));
  PetscCall(PetscLogFlops((deriv ? 5.0 : 2.0) * n));
  PetscFunctionReturn(0);
}

static PetscErrorCode CubeRHSFunction(TS ts, PetscReal t, Vec u, Vec G, void *vctx)
{
  CubeRHS *ctx = (CubeRHS *)vctx;

  PetscFunctionBegin;
  PetscCall(Cube(u, ctx->cube, NULL));
  PetscCall(NetForward(ctx->net, ctx->cube, G));
  ctx->netatlin = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The Net's last forward pass must be at the linearization point */
static PetscErrorCode CubeRHSEnsureLinearized(CubeRHS *ctx)
{
  PetscFunctionBegin;
  PetscCheck(ctx->haslin, PetscObjectComm((PetscObject)ctx->net), PETSC_ERR_ORDER, "The Jacobian of the right-hand side is applied before TS computed it");
  if (!ctx->netatlin) {
    PetscCall(NetForward(ctx->net, ctx->lincube, NULL));
    ctx->netatlin = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/* Make (t, u) the linearization point */
static PetscErrorCode CubeRHSLinearize(CubeRHS *ctx, PetscReal t, Vec u)
{
  PetscFunctionBegin;
  PetscCall(Cube(u, ctx->lincube, ctx->linderiv));
  PetscCall(PetscObjectGetId((PetscObject)u, &ctx->linid));
  ctx->lintime  = t;
  ctx->haslin   = PETSC_TRUE;
  ctx->netatlin = PETSC_FALSE;
  ctx->hascache = PETSC_FALSE;
  PetscCall(CubeRHSEnsureLinearized(ctx));
  PetscFunctionReturn(0);
}

static PetscErrorCode CubeRHSJacobian(TS ts, PetscReal t, Vec u, Mat A, Mat B, void *vctx)
{
  PetscFunctionBegin;
  PetscCall(CubeRHSLinearize((CubeRHS *)vctx, t, u));
  PetscFunctionReturn(0);
}

/* TSAdjointStep_RK asks for dG/dtheta right after dG/du at the same stage (same Vec, same time): reuse that point */
static PetscErrorCode CubeRHSJacobianP(TS ts, PetscReal t, Vec u, Mat A, void *vctx)
{
  CubeRHS      *ctx = (CubeRHS *)vctx;
  PetscObjectId id;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetId((PetscObject)u, &id));
  if (!ctx->haslin || id != ctx->linid || t != ctx->lintime) PetscCall(CubeRHSLinearize(ctx, t, u));
  ctx->pfresh = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* flg: the adjoint takes its points from RHSJacobianP alone and the SNES of ts skips its Jacobian requests (lag -1) */
static PetscErrorCode CubeRHSSetJacobianFromP(CubeRHS *ctx, TS ts, PetscBool flg)
{
  SNES snes;

  PetscFunctionBegin;
  if (flg == ctx->fromp) PetscFunctionReturn(0);
  PetscCall(TSGetSNES(ts, &snes));
  PetscCall(SNESSetLagJacobian(snes, flg ? -1 : 1));
  ctx->fromp  = flg;
  ctx->pfresh = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* y = J_N (D x) */
static PetscErrorCode MatMult_Cube(Mat A, Vec x, Vec y)
{
  CubeRHS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(CubeRHSEnsureLinearized(ctx));
  PetscCall(VecPointwiseMult(ctx->work, ctx->linderiv, x));
  PetscCall(NetJVP(ctx->net, ctx->work, NULL, y));
  PetscFunctionReturn(0);
}

/* x = D (J_N^T y); the parameter part J_theta^T y of the same backward pass is kept for MatMultTranspose_CubeP */
static PetscErrorCode MatMultTranspose_Cube(Mat A, Vec y, Vec x)
{
  CubeRHS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCheck(!ctx->fromp || ctx->pfresh, PetscObjectComm((PetscObject)A), PETSC_ERR_PLIB, "TSAdjoint applied dG/du^T at a stage without asking for dG/dtheta there first: this PETSc needs -spiral_jacobian_from_p 0");
  ctx->pfresh = PETSC_FALSE;
  PetscCall(CubeRHSEnsureLinearized(ctx));
  PetscCall(VecZeroEntries(ctx->gcache));
  PetscCall(NetBackward(ctx->net, y, x, ctx->gcache));
  PetscCall(VecPointwiseMult(x, x, ctx->linderiv));
  PetscCall(PetscObjectGetId((PetscObject)y, &ctx->yid));
  ctx->hascache = PETSC_TRUE;
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_CubeP(Mat A, Vec v, Vec y)
{
  CubeRHS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(CubeRHSEnsureLinearized(ctx));
  PetscCall(NetJVP(ctx->net, NULL, v, y));
  PetscFunctionReturn(0);
}

/* g = J_theta^T y: from the cache when dG/du^T was just applied to this y at this point (consumed once) */
static PetscErrorCode MatMultTranspose_CubeP(Mat A, Vec y, Vec g)
{
  CubeRHS      *ctx;
  PetscObjectId id;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(CubeRHSEnsureLinearized(ctx));
  PetscCall(PetscObjectGetId((PetscObject)y, &id));
  if (ctx->hascache && id == ctx->yid)
    PetscCall(VecCopy(ctx->gcache, g));
  else {
    PetscCall(VecZeroEntries(g));
    PetscCall(NetBackward(ctx->net, y, NULL, g));
  }
  ctx->hascache = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The right-hand side N(u^3) for states laid out like u, with its Jacobian shells */
static PetscErrorCode CubeRHSCreate(Net net, Vec u, CubeRHS **rhs)
{
  CubeRHS    *ctx;
  Vec         theta;
  PetscInt    n, N, np, NP;
  PetNetShape in, out;
  MPI_Comm    comm = PetscObjectComm((PetscObject)u);

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCheck(PetNetShapeEqual(&in, &out), comm, PETSC_ERR_ARG_INCOMP, "The right-hand side Net must map its input shape to itself: end -net_layers with dense:2");
  PetscCall(PetscNew(&ctx));
  ctx->net = net;
  PetscCall(VecDuplicate(u, &ctx->cube));
  PetscCall(VecDuplicate(u, &ctx->lincube));
  PetscCall(VecDuplicate(u, &ctx->linderiv));
  PetscCall(VecDuplicate(u, &ctx->work));
  PetscCall(NetCreateParameterVec(net, &ctx->gcache));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetLocalSize(u, &n));
  PetscCall(VecGetSize(u, &N));
  PetscCall(VecGetLocalSize(theta, &np));
  PetscCall(VecGetSize(theta, &NP));
  PetscCall(MatCreateShell(comm, n, n, N, N, ctx, &ctx->J));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT, (void (*)(void))MatMult_Cube));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_Cube));
  PetscCall(MatCreateShell(comm, n, np, N, NP, ctx, &ctx->JP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT, (void (*)(void))MatMult_CubeP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_CubeP));
  *rhs = ctx;
  PetscFunctionReturn(0);
}

static PetscErrorCode CubeRHSDestroy(CubeRHS **rhs)
{
  CubeRHS *ctx = *rhs;

  PetscFunctionBegin;
  if (!ctx) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&ctx->cube));
  PetscCall(VecDestroy(&ctx->lincube));
  PetscCall(VecDestroy(&ctx->linderiv));
  PetscCall(VecDestroy(&ctx->work));
  PetscCall(VecDestroy(&ctx->gcache));
  PetscCall(MatDestroy(&ctx->J));
  PetscCall(MatDestroy(&ctx->JP));
  PetscCall(PetscFree(*rhs));
  PetscFunctionReturn(0);
}

/* An explicit RK TS (rk 4 at step dt unless options say otherwise) integrating du/dt = N(u^3) */
static PetscErrorCode CreateModelTS(CubeRHS *rhs, PetscReal dt, const char prefix[], TS *ts)
{
  PetscBool rk;

  PetscFunctionBegin;
  PetscCall(TSCreate(PetscObjectComm((PetscObject)rhs->J), ts));
  PetscCall(TSSetOptionsPrefix(*ts, prefix));
  PetscCall(TSSetProblemType(*ts, TS_NONLINEAR));
  PetscCall(TSSetType(*ts, TSRK));
  PetscCall(TSRKSetType(*ts, TSRK4));
  PetscCall(TSSetTimeStep(*ts, dt));
  PetscCall(TSSetExactFinalTime(*ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetRHSFunction(*ts, NULL, CubeRHSFunction, rhs));
  PetscCall(TSSetRHSJacobian(*ts, rhs->J, rhs->J, CubeRHSJacobian, rhs));
  PetscCall(TSSetRHSJacobianP(*ts, rhs->JP, CubeRHSJacobianP, rhs));
  PetscCall(TSSetFromOptions(*ts));
  PetscCall(PetscObjectTypeCompare((PetscObject)*ts, TSRK, &rk));
  PetscCheck(rk, PetscObjectComm((PetscObject)*ts), PETSC_ERR_SUP, "This example gives TS the right-hand side form, which only explicit methods integrate correctly with shell Jacobians: use -%sts_type rk (-%sts_rk_type 4, 3, 2a, 1fe)",
             prefix ? prefix : "", prefix ? prefix : "");
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The data: dy/dt = y^3 A integrated by a PETSc TS (rk 4, 20 steps per observation interval) on every rank */

static PetscErrorCode TrueRHS(TS ts, PetscReal t, Vec y, Vec G, void *ctx)
{
  const PetscScalar *x;
  PetscScalar       *g;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(y, &x));
  PetscCall(VecGetArrayWrite(G, &g));
  {
    const PetscScalar a = x[0] * x[0] * x[0], b = x[1] * x[1] * x[1];

    g[0] = -0.1 * a - 2.0 * b; /* (y^3 A)_j = sum_i y_i^3 A_ij */
    g[1] = 2.0 * a - 0.1 * b;
  }
  PetscCall(VecRestoreArrayWrite(G, &g));
  PetscCall(VecRestoreArrayRead(y, &x));
  PetscFunctionReturn(0);
}

static PetscErrorCode GenerateData(PetscInt nobs, PetscReal tend, PetscReal **data)
{
  TS                 ts;
  Vec                y;
  PetscScalar       *a;
  const PetscScalar *x;
  const PetscReal    dt = tend / (nobs - 1);

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(2 * nobs, data));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 2, &y));
  PetscCall(VecGetArrayWrite(y, &a));
  a[0] = 2.0;
  a[1] = 0.0;
  PetscCall(VecRestoreArrayWrite(y, &a));
  PetscCall(TSCreate(PETSC_COMM_SELF, &ts));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetRHSFunction(ts, NULL, TrueRHS, NULL));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  for (PetscInt k = 0; k < nobs; k++) {
    if (k) { /* 20 steps to the next observation (MATCHSTEP leaves the last, shortened step size behind: set it anew) */
      PetscCall(TSSetTimeStep(ts, dt / 20));
      PetscCall(TSSetMaxTime(ts, k * dt));
      PetscCall(TSSolve(ts, y));
    }
    PetscCall(VecGetArrayRead(y, &x));
    (*data)[2 * k]     = PetscRealPart(x[0]);
    (*data)[2 * k + 1] = PetscRealPart(x[1]);
    PetscCall(VecRestoreArrayRead(y, &x));
  }
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Training */

typedef struct {
  PetscInt    nobs, batch, window, nlocal, bstart; /* this rank holds windows bstart .. bstart + nlocal - 1 */
  PetscReal   dt, *data;                           /* data[2 k + c]: observation k, feature c */
  PetscReal  *times;                               /* 0, dt, ..., (window - 1) dt */
  PetscInt   *perm;                                /* window starts: the first `batch` entries are this batch's */
  PetscRandom rnd;
  Vec         u0, *targets; /* the batch's first observations and the window's targets (window Vecs) */
  Loss        loss;
  TS          ts;
  CubeRHS    *rhs;
  PetscBool   fromp; /* take the adjoint's linearization points from RHSJacobianP when the gradient is wanted */
  PetscReal   lastloss;
  Net         net;
} Spiral;

/* The TaoSetUpdate hook: draw `batch` distinct window starts in [0, nobs - window) (the same on every rank) */
static PetscErrorCode NextBatch(Tao tao, PetscInt it, void *vctx)
{
  Spiral        *s       = (Spiral *)vctx;
  const PetscInt nstarts = s->nobs - s->window;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < s->batch; b++) { /* partial Fisher-Yates: sampling without replacement */
    PetscReal r;
    PetscInt  j, tmp;

    PetscCall(PetscRandomGetValueReal(s->rnd, &r));
    j          = b + PetscMin((PetscInt)(r * (nstarts - b)), nstarts - b - 1);
    tmp        = s->perm[b];
    s->perm[b] = s->perm[j];
    s->perm[j] = tmp;
  }
  for (PetscInt i = 0; i < s->window; i++) {
    PetscScalar *t;

    PetscCall(VecGetArrayWrite(s->targets[i], &t));
    for (PetscInt b = 0; b < s->nlocal; b++) {
      const PetscInt k = s->perm[s->bstart + b] + i;

      t[2 * b]     = s->data[2 * k];
      t[2 * b + 1] = s->data[2 * k + 1];
    }
    PetscCall(VecRestoreArrayWrite(s->targets[i], &t));
  }
  PetscCall(VecCopy(s->targets[0], s->u0));
  PetscFunctionReturn(0);
}

/* l_i = (mean over the batch of |u(t_i) - y_i|) / window, so that sum_i l_i is the mean over the whole window */
static PetscErrorCode Observe(TS ts, PetscInt i, PetscReal t, Vec u, PetscReal *l, Vec dldu, void *vctx)
{
  Spiral   *s = (Spiral *)vctx;
  PetscReal f;

  PetscFunctionBegin;
  PetscCall(LossEvaluate(s->loss, u, s->targets[i], &f, dldu));
  *l = f / s->window;
  PetscCall(VecScale(dldu, 1.0 / s->window));
  PetscFunctionReturn(0);
}

/* The batch's loss f and, if G, its gradient */
static PetscErrorCode SpiralLoss(Spiral *s, PetscReal *f, Vec G)
{
  PetscFunctionBegin;
  PetscCall(CubeRHSSetJacobianFromP(s->rhs, s->ts, (PetscBool)(s->fromp && G)));
  PetscCall(NetTSTimeSeriesGradient(s->ts, s->u0, s->window, s->times, Observe, s, f, NULL, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode Objective(Tao tao, Vec theta, PetscReal *f, Vec G, void *vctx)
{
  Spiral *s = (Spiral *)vctx;

  PetscFunctionBegin;
  PetscCall(SpiralLoss(s, f, G));
  s->lastloss = *f;
  PetscFunctionReturn(0);
}

/*
  The adjoint gradient of the first batch's loss against central finite differences along a random direction p (the
  same on any number of ranks: every rank draws the whole vector). The loss is piecewise smooth (|.|): no residual
  changes sign within +-h p at a generic point.
*/
static PetscErrorCode CheckGradient(Tao tao, Spiral *s, Vec theta)
{
  const PetscReal h = 1e-6;
  Vec             G, p, theta0;
  PetscReal       f, fp, fm, fd, err;
  PetscScalar     gp, *a;
  PetscRandom     rnd;
  PetscInt        N, rstart, rend;

  PetscFunctionBegin;
  PetscCall(NextBatch(tao, 0, s));
  PetscCall(VecDuplicate(theta, &G));
  PetscCall(VecDuplicate(theta, &p));
  PetscCall(VecDuplicate(theta, &theta0));
  PetscCall(VecCopy(theta, theta0));
  PetscCall(Objective(tao, theta, &f, G, s));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecGetSize(p, &N));
  PetscCall(VecGetOwnershipRange(p, &rstart, &rend));
  PetscCall(VecGetArrayWrite(p, &a));
  for (PetscInt i = 0; i < N; i++) {
    PetscReal r;

    PetscCall(PetscRandomGetValueReal(rnd, &r));
    if (i >= rstart && i < rend) a[i - rstart] = 2.0 * r - 1.0;
  }
  PetscCall(VecRestoreArrayWrite(p, &a));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDot(G, p, &gp));
  PetscCall(VecWAXPY(theta, h, p, theta0));
  PetscCall(SpiralLoss(s, &fp, NULL));
  PetscCall(VecWAXPY(theta, -h, p, theta0));
  PetscCall(SpiralLoss(s, &fm, NULL));
  PetscCall(VecCopy(theta0, theta));
  fd  = (fp - fm) / (2 * h);
  err = PetscAbsReal(fd - PetscRealPart(gp)) / PetscMax(PetscAbsReal(fd), 1e-12);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "gradient check: loss %.8f  <dL/dtheta, p> %.8e  finite difference %.8e  relative error %.1e\n", (double)f, (double)PetscRealPart(gp), (double)fd, (double)err));
  PetscCheck(err <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The adjoint gradient differs from central finite differences by %g (relative)", (double)err);
  { /* the Net's forward cache hands back the very passes a recomputation gives: the same bits without it */
    Vec       Gnc;
    PetscReal fnc;
    PetscInt  slots, hits, misses;
    PetscBool same;

    PetscCall(NetGetForwardCacheStats(s->net, &hits, &misses));
    PetscCall(VecDuplicate(theta, &Gnc));
    PetscCall(NetGetForwardCacheSize(s->net, &slots));
    PetscCall(NetSetForwardCache(s->net, 0));
    PetscCall(Objective(tao, theta, &fnc, Gnc, s));
    PetscCall(NetSetForwardCache(s->net, slots));
    PetscCall(VecEqual(G, Gnc, &same));
    PetscCheck(same && fnc == f, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The forward cache changed the loss or its gradient (loss %.17g vs %.17g without the cache)", (double)f, (double)fnc);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "forward cache: %s (%" PetscInt_FMT " passes handed back, %" PetscInt_FMT " computed on rank 0), the same loss and gradient bits without it\n", slots ? "on" : "off", hits, misses));
    PetscCall(VecDestroy(&Gnc));
  }
  { /* the points taken from RHSJacobianP are those SNESComputeJacobian gives: the same bits either way */
    Vec       Gsnes;
    PetscReal fsnes;
    PetscBool same;

    PetscCall(VecDuplicate(theta, &Gsnes));
    s->fromp = (PetscBool)!s->fromp;
    PetscCall(Objective(tao, theta, &fsnes, Gsnes, s));
    s->fromp = (PetscBool)!s->fromp;
    PetscCall(VecEqual(G, Gsnes, &same));
    PetscCheck(same && fsnes == f, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Taking the linearization points from RHSJacobianP changed the loss or its gradient (loss %.17g vs %.17g)", (double)f, (double)fsnes);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "adjoint Jacobian requests: points from RHSJacobianP %s, the same loss and gradient bits as through SNESComputeJacobian\n", s->fromp ? "on" : "off"));
    PetscCall(VecDestroy(&Gsnes));
  }
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&theta0));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Evaluation: the learned model from y(0) over all observation times (one sample, on rank 0) against the data */

typedef struct {
  PetscReal *data, sum;
} EvalCtx;

static PetscErrorCode EvalMonitor(TS ts, PetscInt step, PetscReal t, Vec u, void *vctx)
{
  EvalCtx           *e = (EvalCtx *)vctx;
  const PetscScalar *x;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(u, &n));
  PetscCall(VecGetArrayRead(u, &x));
  for (PetscInt c = 0; c < n; c++) e->sum += PetscAbsReal(PetscRealPart(x[c]) - e->data[2 * step + c]);
  PetscCall(VecRestoreArrayRead(u, &x));
  PetscFunctionReturn(0);
}

static PetscErrorCode TrajectoryMAE(Net net, PetscInt nobs, PetscReal dt, PetscReal *data, PetscReal *mae)
{
  CubeRHS    *rhs;
  TS          ts;
  Vec         y;
  EvalCtx     e = {data, 0.0};
  PetscMPIInt rank;
  PetscReal   sum;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(NetCreateVecs(net, rank ? 0 : 1, &y, NULL));
  if (!rank) {
    PetscCall(VecSetValue(y, 0, data[0], INSERT_VALUES));
    PetscCall(VecSetValue(y, 1, data[1], INSERT_VALUES));
  }
  PetscCall(VecAssemblyBegin(y));
  PetscCall(VecAssemblyEnd(y));
  PetscCall(CubeRHSCreate(net, y, &rhs));
  PetscCall(CreateModelTS(rhs, dt, "eval_", &ts));
  PetscCall(TSSetMaxSteps(ts, nobs - 1));
  PetscCall(TSSetMaxTime(ts, PETSC_MAX_REAL));
  PetscCall(TSSetTimeStep(ts, dt));
  PetscCall(TSMonitorSet(ts, EvalMonitor, &e, NULL));
  PetscCall(TSSolve(ts, y));
  PetscCall(MPIU_Allreduce(&e.sum, &sum, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  *mae = sum / (2 * nobs);
  PetscCall(TSDestroy(&ts));
  PetscCall(CubeRHSDestroy(&rhs));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

typedef struct {
  Spiral   *s;
  Net       net;
  PetscInt  every;
  PetscReal evaltime, evalcpu; /* wall and CPU seconds of the monitor's evaluations, left out of the training times */
} MonitorCtx;

static PetscErrorCode TrainMonitor(Tao tao, void *vctx)
{
  MonitorCtx    *m = (MonitorCtx *)vctx;
  PetscInt       it;
  PetscReal      mae;
  PetscLogDouble t0, t1, c0, c1;

  PetscFunctionBegin;
  PetscCall(TaoGetIterationNumber(tao, &it));
  if (!m->every || it % m->every) PetscFunctionReturn(0);
  PetscCall(PetscTime(&t0));
  c0 = CPUSeconds();
  PetscCall(TrajectoryMAE(m->net, m->s->nobs, m->s->dt, m->s->data, &mae));
  c1 = CPUSeconds();
  PetscCall(PetscTime(&t1));
  m->evaltime += t1 - t0;
  m->evalcpu += c1 - c0;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iteration %5" PetscInt_FMT "  batch loss %.6f  trajectory mae %.6f\n", it, (double)m->s->lastloss, (double)mae));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm       comm;
  PetscMPIInt    rank, size;
  PetNetShape    in = {1, {2}};
  Net            net;
  CubeRHS       *rhs;
  Spiral         s;
  MonitorCtx     mon;
  Tao            tao;
  Vec            theta;
  PetscInt       iterations = 2000, nlayers, seed = 1, niter;
  PetscBool      testgradient = PETSC_FALSE;
  PetscReal      tend         = 25.0, mae;
  PetscLogDouble t0, t1, c0, c1;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, rmsprop, ...) for TaoSetType and -tao_type */
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscMemzero(&s, sizeof(s)));
  PetscCall(PetscMemzero(&mon, sizeof(mon)));
  s.nobs   = 1000;
  s.batch  = 20;
  s.window = 10;
  PetscOptionsBegin(comm, NULL, "Spiral neural ODE", NULL);
  PetscCall(PetNetOptionsInt("-spiral_iterations", "Training iterations (one batch of windows each)", NULL, iterations, &iterations, NULL));
  PetscCall(PetNetOptionsInt("-spiral_batch", "Windows per batch", NULL, s.batch, &s.batch, NULL));
  PetscCall(PetNetOptionsInt("-spiral_window", "Observations per window", NULL, s.window, &s.window, NULL));
  PetscCall(PetNetOptionsBoundedInt("-spiral_seed", "Seed of the window draws", NULL, seed, &seed, NULL, 0));
  PetscCall(PetNetOptionsInt("-spiral_monitor", "Print the loss and the trajectory MAE every this many iterations (0: never)", NULL, mon.every, &mon.every, NULL));
  PetscCall(PetscOptionsBool("-spiral_test_gradient", "Check the adjoint gradient of the first batch against finite differences", NULL, testgradient, &testgradient, NULL));
  s.fromp = PETSC_TRUE;
  PetscCall(PetscOptionsBool("-spiral_jacobian_from_p", "The adjoint's linearization points from RHSJacobianP, skipping SNESComputeJacobian (SNES lag -1)", NULL, s.fromp, &s.fromp, NULL));
  PetscOptionsEnd();
  PetscCheck(iterations >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-spiral_iterations must be >= 0, not %" PetscInt_FMT, iterations);
  PetscCheck(s.window >= 2 && s.window < s.nobs, comm, PETSC_ERR_ARG_OUTOFRANGE, "-spiral_window must be in [2, %" PetscInt_FMT "), not %" PetscInt_FMT, s.nobs, s.window);
  PetscCheck(s.batch >= 1 && s.batch <= s.nobs - s.window, comm, PETSC_ERR_ARG_OUTOFRANGE, "-spiral_batch must be in [1, %" PetscInt_FMT "] (distinct windows), not %" PetscInt_FMT, s.nobs - s.window, s.batch);
  s.dt = tend / (s.nobs - 1);
  PetscCall(GenerateData(s.nobs, tend, &s.data));

  /* the Net: 2 -> 50 -> 2, weights N(0, 0.1^2) and zero biases as in torchdiffeq's ode_demo.py (options override) */
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, "dense:50,tanh,dense:2"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 1));
  PetscCall(NetGetNumLayers(net, &nlayers));
  for (PetscInt l = 0; l < nlayers; l++) {
    Layer layer;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerDenseSetInitialization(layer, LAYER_INIT_NORMAL, 0.1)); /* ignored by the other kinds */
  }
  /* The adjoint asks for the Jacobian at every stage state of the forward solve: the Net hands back those forward
     passes instead of running them again (4 stages a step with rk 4 at the spacing; -net_forward_cache N, 0: off) */
  PetscCall(NetSetForwardCache(net, 4 * s.window));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  {
    PetNetShape shape;
    PetscInt    size;

    PetscCall(NetGetInputShape(net, &shape));
    PetscCall(PetNetShapeSize(&shape, &size));
    PetscCheck(size == 2, comm, PETSC_ERR_ARG_INCOMP, "The spiral state has 2 features but the Net takes %" PetscInt_FMT ": drop -net_input_shape (or give 2)", size);
  }

  /* the batch: windows split over the ranks by samples */
  s.nlocal = s.batch / size + (rank < s.batch % size ? 1 : 0);
  PetscCallMPI(MPI_Exscan(&s.nlocal, &s.bstart, 1, MPIU_INT, MPI_SUM, comm));
  if (!rank) s.bstart = 0;
  PetscCall(NetCreateVecs(net, s.nlocal, &s.u0, NULL));
  PetscCall(VecDuplicateVecs(s.u0, s.window, &s.targets));
  PetscCall(PetscMalloc2(s.window, &s.times, s.nobs - s.window, &s.perm));
  for (PetscInt i = 0; i < s.window; i++) s.times[i] = i * s.dt;
  for (PetscInt k = 0; k < s.nobs - s.window; k++) s.perm[k] = k;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &s.rnd));
  PetscCall(PetscRandomSetType(s.rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(s.rnd, (unsigned long)seed));
  PetscCall(PetscRandomSeed(s.rnd));
  PetscCall(LossCreate(comm, &s.loss));
  PetscCall(LossSetType(s.loss, LOSSL1));
  PetscCall(LossSetFromOptions(s.loss));

  s.net = net;
  PetscCall(CubeRHSCreate(net, s.u0, &rhs));
  PetscCall(CreateModelTS(rhs, s.dt, NULL, &s.ts));
  s.rhs = rhs;

  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAORMSPROP));
  PetscCall(PetNetTaoSetLearningRate(tao, 1e-3));
  /* With a constant rate the final model wanders: its trajectory MAE swings between 0.05 and 0.7 from one
     iteration to the next (PyTorch alike). The cosine decay lands on a settled model. */
  PetscCall(PetNetTaoSetLRSchedule(tao, PETNET_LR_COSINE));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, Objective, &s));
  PetscCall(TaoSetUpdate(tao, NextBatch, &s));
  PetscCall(TaoSetMaximumIterations(tao, iterations));
  mon.s   = &s;
  mon.net = net;
  if (mon.every) PetscCall(TaoSetMonitor(tao, TrainMonitor, &mon, NULL));
  PetscCall(TaoSetFromOptions(tao));

  if (testgradient) PetscCall(CheckGradient(tao, &s, theta));
  c0 = CPUSeconds();
  PetscCall(PetscTime(&t0));
  if (iterations > 0) PetscCall(TaoSolve(tao)); /* (a cosine schedule needs at least one update) */
  PetscCall(PetscTime(&t1));
  c1 = CPUSeconds();
  PetscCall(NetSaveFromOptions(net)); /* -net_save FILE: the trained Net (TAO trained the Net's own parameter Vec) */
  PetscCall(TaoGetIterationNumber(tao, &niter));
  PetscCall(TrajectoryMAE(net, s.nobs, s.dt, s.data, &mae));
  PetscCall(PetscPrintf(comm, "summary: iterations=%" PetscInt_FMT " batch=%" PetscInt_FMT " window=%" PetscInt_FMT " ranks=%d last_batch_loss=%.6f mae=%.6f train_time_s=%.3f train_cpu_s=%.3f", niter, s.batch, s.window, size, (double)s.lastloss,
                        (double)mae, (double)(t1 - t0 - mon.evaltime), (double)(c1 - c0 - mon.evalcpu)));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(TSDestroy(&s.ts));
  PetscCall(CubeRHSDestroy(&rhs));
  PetscCall(LossDestroy(&s.loss));
  PetscCall(PetscRandomDestroy(&s.rnd));
  PetscCall(PetscFree2(s.times, s.perm));
  PetscCall(VecDestroyVecs(s.window, &s.targets));
  PetscCall(VecDestroy(&s.u0));
  PetscCall(PetscFree(s.data));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
