/*
  The curvature of the mean loss over a batch as a Mat on the parameters: f(theta) = Loss(Net(X; theta), T).

    J = dY/dtheta (NetJVP / NetBackward),  H_L = d^2 Loss/dY^2 (LossHessianMult),  g_Y = dLoss/dY (LossEvaluate)

    Gauss-Newton  G v = J^T H_L J v                          NetJVP(v), LossHessianMult, NetBackward
    exact         H v = J^T H_L J v + sum_k curvature_k(v)   NetJVP(v), LossHessianMult, NetSecondOrderBackward(g_Y)

  A batch too large for one pass is taken in chunks of at most `chunk` local samples (fields in grid mode: every rank
  takes part in every chunk), weighted by the chunk's share of the targets as in the full-batch objective. With one chunk, the forward
  pass and the loss are kept between products while the parameters, the batch and the Net's last forward pass stay
  the same, so a product costs one JVP and one backward pass (Gauss-Newton) or one more pass (exact).
*/
#include <petnet/private/lossimpl.h>
#include <petnet/private/netimpl.h>

const char *const LossHessianTypes[] = {"gn", "exact", "LossHessianType", "LOSS_HESSIAN_", NULL};

typedef struct {
  Loss            loss;
  Net             net;
  LossHessianType type;
  Vec             X, T;    /* the batch (referenced) */
  PetscInt        chunk;   /* local samples (grid mode: fields) per pass; PETSC_DETERMINE: the whole local batch */
  PetscReal       damping; /* lambda of H + lambda I (Tikhonov damping, LossNetHessianSetDamping()) */
  Vec             Y, gY;   /* output and loss gradient of the current chunk */
  Vec             Yd, HYd; /* J v and H_L J v */
  Vec             Xc, Tc;  /* the current chunk: views of X and T */
  /* the kept linearization point (one chunk): valid while these are unchanged */
  PetscInt         nforward;
  PetscObjectState thetastate, xstate, tstate;
  PetscBool        kept;
} LossNetHessian;

static PetscErrorCode LossNetHessianGetContext_Private(Mat H, LossNetHessian **ctx)
{
  PetscObject marker = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(H, MAT_CLASSID, 1);
  PetscCall(PetscObjectQuery((PetscObject)H, "LossNetHessian", &marker));
  PetscCheck(marker, PetscObjectComm((PetscObject)H), PETSC_ERR_ARG_WRONG, "The Mat is not a Hessian made by LossCreateNetHessian()");
  PetscCall(MatShellGetContext(H, ctx));
  PetscFunctionReturn(0);
}

/*
  What a chunk counts on this rank, and the entries of X and T per unit:

    batch mode  a unit is a sample:  X [n][in],      T [n][t]            (t = target entries per sample)
    grid mode   a unit is a field:   X [nf][p][in],  T [nf][q]           (NetSetGrid(): p points of this rank's block)

  In grid mode q is what the Net's output holds of one field on this rank, which need not follow the input: its block
  of the output grid (a strided or pooling node coarsens the grid, and a join may own it otherwise than the input), or
  the field's outputs on the group's first rank and nothing elsewhere once a globalavgpool has left the grid. So the
  target per unit is read from T itself, never from the input's points per rank.
*/
static PetscErrorCode LossNetHessianUnits_Private(LossNetHessian *ctx, PetscInt *units, PetscInt *xunit, PetscInt *tunit)
{
  PetscInt    nin, nx, nt, nf;
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(ctx->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetLocalSize(ctx->X, &nx));
  PetscCall(VecGetLocalSize(ctx->T, &nt));
  PetscCall(NetSpatialFields_Private(ctx->net, nx / nin, &nf)); /* grid mode: the fields of the batch (0 in batch mode) */
  *units = ctx->net->grid ? nf : nx / nin;
  *xunit = *units ? nx / *units : 0;
  *tunit = *units ? nt / *units : 0;
  PetscCheck(*units ? nt % *units == 0 : nt == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "The Hessian's batch: the targets have %" PetscInt_FMT " entries on this rank for %" PetscInt_FMT " %s: give T the layout of the Net's output for the same batch (NetCreateVecs())", nt, *units, ctx->net->grid ? "fields" : "samples");
  PetscFunctionReturn(0);
}

/* Views of units [start, start + n) of this rank's batch in ctx->Xc, ctx->Tc, and the work Vecs for them */
static PetscErrorCode LossNetHessianSetChunk_Private(LossNetHessian *ctx, PetscInt start, PetscInt n)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)ctx->net);
  const PetscScalar *x, *t;
  PetscInt           units, xunit, tunit, nin, m = -1;
  PetNetShape        in;

  PetscFunctionBegin;
  PetscCall(LossNetHessianUnits_Private(ctx, &units, &xunit, &tunit));
  PetscCall(NetGetInputShape(ctx->net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  if (ctx->Xc) PetscCall(VecGetLocalSize(ctx->Xc, &m));
  PetscCall(VecDestroy(&ctx->Xc));
  PetscCall(VecDestroy(&ctx->Tc));
  PetscCall(VecGetArrayRead(ctx->X, &x));
  PetscCall(VecGetArrayRead(ctx->T, &t));
  PetscCall(VecCreateMPIWithArray(comm, 1, n * xunit, PETSC_DETERMINE, x ? x + start * xunit : NULL, &ctx->Xc));
  PetscCall(VecCreateMPIWithArray(comm, 1, n * tunit, PETSC_DETERMINE, t ? t + start * tunit : NULL, &ctx->Tc));
  PetscCall(VecRestoreArrayRead(ctx->T, &t));
  PetscCall(VecRestoreArrayRead(ctx->X, &x));
  { /* NetCreateVecs() is collective: rebuild on every rank when any rank's chunk size changed */
    PetscMPIInt change = !ctx->Y || m != n * xunit;

    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &change, 1, MPI_INT, MPI_MAX, comm));
    if (!change) PetscFunctionReturn(0);
  }
  PetscCall(VecDestroy(&ctx->Y));
  PetscCall(VecDestroy(&ctx->gY));
  PetscCall(VecDestroy(&ctx->Yd));
  PetscCall(VecDestroy(&ctx->HYd));
  PetscCall(NetCreateVecs(ctx->net, n * xunit / nin, NULL, &ctx->Y)); /* input samples: grid points x fields in grid mode */
  PetscCall(VecDuplicate(ctx->Y, &ctx->gY));
  PetscCall(VecDuplicate(ctx->Y, &ctx->Yd));
  PetscCall(VecDuplicate(ctx->Y, &ctx->HYd));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossNetHessianMult_Private(Mat H, Vec v, Vec Hv)
{
  LossNetHessian *ctx;
  MPI_Comm        comm;
  PetscInt        nlocal, nmax, xunit, tunit, Nt, B, nchunks;
  Vec             theta;
  PetscBool       frozen;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(H, &ctx));
  comm = PetscObjectComm((PetscObject)H);
  PetscCheck(ctx->X && ctx->T, comm, PETSC_ERR_ORDER, "The Hessian has no batch: give it one with LossNetHessianSetBatch() before multiplying");
  PetscCall(LossNetHessianUnits_Private(ctx, &nlocal, &xunit, &tunit)); /* samples, or fields in grid mode */
  PetscCall(VecGetSize(ctx->T, &Nt));
  PetscCall(MPIU_Allreduce(&nlocal, &nmax, 1, MPIU_INT, MPI_MAX, comm));
  B       = ctx->chunk > 0 ? ctx->chunk : PetscMax(nmax, 1);
  nchunks = (nmax + B - 1) / B;
  if (nchunks > 1) { /* batch statistics over chunks would make each chunk its own function */
    for (PetscInt k = 0; k < ctx->net->nlayers; k++) {
      PetscBool bn;

      PetscCall(PetscObjectTypeCompare((PetscObject)ctx->net->layers[k], LAYERBATCHNORM, &bn));
      PetscCheck(!bn || !ctx->net->layers[k]->training, comm, PETSC_ERR_SUP,
                 "Node %s is batchnorm in training mode, which normalises over the whole batch: a Hessian taken in chunks of %" PetscInt_FMT
                 " %s would differentiate another function. Take the batch in one pass (LossNetHessianSetChunkSize(H, PETSC_DETERMINE), -trainer_hessian_chunk 0), fewer samples (-trainer_hessian_samples), or evaluation mode",
                 ctx->net->nodes[k].name, B, ctx->net->grid ? "fields" : "samples");
    }
  }
  PetscCall(NetGetParameters(ctx->net, &theta));
  PetscCall(VecZeroEntries(Hv));
  /* one fixed map: dropout repeats its masks and batchnorm leaves its running statistics alone */
  frozen = ctx->net->nlayers ? ctx->net->layers[0]->frozen : PETSC_FALSE;
  PetscCall(NetSetFrozen_Private(ctx->net, PETSC_TRUE));
  for (PetscInt c = 0; c < nchunks; c++) {
    PetscInt         start = PetscMin(c * B, nlocal), n = PetscMin(B, nlocal - start), Nc;
    PetscObjectState ts, xs, tts;
    PetscReal        f, w;

    PetscCall(PetscObjectStateGet((PetscObject)theta, &ts));
    PetscCall(PetscObjectStateGet((PetscObject)ctx->X, &xs));
    PetscCall(PetscObjectStateGet((PetscObject)ctx->T, &tts));
    if (!(nchunks == 1 && ctx->kept && ctx->nforward == ctx->net->nforward && ctx->net->forwarded && ctx->thetastate == ts && ctx->xstate == xs && ctx->tstate == tts && ctx->loss->Y == ctx->Y)) {
      PetscCall(LossNetHessianSetChunk_Private(ctx, start, n));
      PetscCall(NetForward(ctx->net, ctx->Xc, ctx->Y));
      PetscCall(LossEvaluate(ctx->loss, ctx->Y, ctx->Tc, &f, ctx->type == LOSS_HESSIAN_EXACT ? ctx->gY : NULL));
      ctx->kept       = (PetscBool)(nchunks == 1);
      ctx->nforward   = ctx->net->nforward;
      ctx->thetastate = ts;
      ctx->xstate     = xs;
      ctx->tstate     = tts;
    }
    PetscCall(VecGetSize(ctx->Tc, &Nc));
    w = Nt ? (PetscReal)Nc / Nt : 0.0; /* the chunk's share of the mean: its share of the targets (samples, or entries) */
    PetscCall(NetJVP(ctx->net, NULL, v, ctx->Yd));
    PetscCall(LossHessianMult(ctx->loss, ctx->Yd, ctx->HYd));
    if (w != 1.0) PetscCall(VecScale(ctx->HYd, w));
    if (ctx->type == LOSS_HESSIAN_GN)
      PetscCall(NetBackward(ctx->net, ctx->HYd, NULL, Hv));
    else {
      if (w != 1.0) PetscCall(VecScale(ctx->gY, w)); /* only with several chunks, where every product redoes the chunk */
      PetscCall(NetSecondOrderBackward(ctx->net, ctx->gY, ctx->HYd, NULL, Hv));
    }
  }
  PetscCall(NetSetFrozen_Private(ctx->net, frozen));
  if (ctx->damping != 0.0) PetscCall(VecAXPY(Hv, ctx->damping, v));
  PetscFunctionReturn(0);
}

static PetscErrorCode LossNetHessianDestroy_Private(Mat H)
{
  LossNetHessian *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(H, &ctx));
  PetscCall(LossDestroy(&ctx->loss));
  PetscCall(NetDestroy(&ctx->net));
  PetscCall(VecDestroy(&ctx->X));
  PetscCall(VecDestroy(&ctx->T));
  PetscCall(VecDestroy(&ctx->Xc));
  PetscCall(VecDestroy(&ctx->Tc));
  PetscCall(VecDestroy(&ctx->Y));
  PetscCall(VecDestroy(&ctx->gY));
  PetscCall(VecDestroy(&ctx->Yd));
  PetscCall(VecDestroy(&ctx->HYd));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

/*@
  LossCreateNetHessian - the Hessian (exact or generalised Gauss-Newton) of the mean loss of a Net over a batch, with
  respect to the Net's parameters, as a MATSHELL

  Collective on loss

  Input Parameters:
+ loss - the Loss
. net  - the Net, set up
- type - `LOSS_HESSIAN_GN`: G = J^T H_L J, symmetric positive semi-definite, for every layer kind (ode layers included);
         `LOSS_HESSIAN_EXACT`: the exact Hessian (forward-over-reverse), for Nets whose every node has a second-order
         kernel (NetHasSecondOrder(); not the ode kind)

  Output Parameter:
. H - the Mat, square, with rows and columns laid out like NetCreateParameterVec(); MatMult() only (symmetric:
      MatMultTranspose() is the same product)

  Notes:
  The point is the Net's parameters at each MatMult(), the batch is given by LossNetHessianSetBatch(). The forward
  passes run in frozen mode (LayerSetFrozen(): dropout repeats its last masks, batchnorm uses but does not update its
  statistics), so H is the Hessian of one fixed function. MatMult() runs the Net: it replaces the Net's last forward
  pass (NetForward()) and the Loss's last evaluation. The options prefix of H is "hessian_" after the Net's.

  Level: intermediate

.seealso: `LossNetHessianSetBatch()`, `LossNetHessianSetChunkSize()`, `NetSecondOrderBackward()`, `LossHessianMult()`, `NetJVP()`
@*/
PetscErrorCode LossCreateNetHessian(Loss loss, Net net, LossHessianType type, Mat *H)
{
  LossNetHessian *ctx;
  Vec             theta;
  PetscInt        n, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscValidPointer(H, 4);
  PetscCheck(type == LOSS_HESSIAN_GN || type == LOSS_HESSIAN_EXACT, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_OUTOFRANGE, "Unknown Hessian type %d: use LOSS_HESSIAN_GN or LOSS_HESSIAN_EXACT", (int)type);
  PetscCall(NetSetUp(net));
  if (type == LOSS_HESSIAN_EXACT) {
    PetscBool has;
    PetscInt  k;

    PetscCall(NetHasSecondOrder(net, &has, &k));
    PetscCheck(has, PetscObjectComm((PetscObject)loss), PETSC_ERR_SUP,
               "Node %s (layer kind %s) has no second-order kernel, so the Net has no exact Hessian: use the Gauss-Newton operator (-trainer_hessian gn, -spectrum_hessian gn, LOSS_HESSIAN_GN), which needs only first derivatives", net->nodes[k].name,
               ((PetscObject)net->layers[k])->type_name);
  }
  PetscCall(LossSetUp(loss));
  PetscCall(PetscNew(&ctx));
  ctx->loss  = loss;
  ctx->net   = net;
  ctx->type  = type;
  ctx->chunk = PETSC_DETERMINE;
  PetscCall(PetscObjectReference((PetscObject)loss));
  PetscCall(PetscObjectReference((PetscObject)net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetLocalSize(theta, &n));
  PetscCall(VecGetSize(theta, &N));
  PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), n, n, N, N, ctx, H));
  PetscCall(MatShellSetOperation(*H, MATOP_MULT, (void (*)(void))LossNetHessianMult_Private));
  PetscCall(MatShellSetOperation(*H, MATOP_MULT_TRANSPOSE, (void (*)(void))LossNetHessianMult_Private));
  PetscCall(MatShellSetOperation(*H, MATOP_DESTROY, (void (*)(void))LossNetHessianDestroy_Private));
  PetscCall(MatShellSetVecType(*H, VECMPI));
  PetscCall(MatSetOption(*H, MAT_SYMMETRIC, PETSC_TRUE));
  PetscCall(MatSetOption(*H, MAT_SYMMETRY_ETERNAL, PETSC_TRUE));
  PetscCall(PetscObjectCompose((PetscObject)*H, "LossNetHessian", (PetscObject)loss));
  {
    const char *prefix;

    PetscCall(NetGetOptionsPrefix(net, &prefix));
    PetscCall(MatSetOptionsPrefix(*H, prefix));
    PetscCall(MatAppendOptionsPrefix(*H, "hessian_"));
  }
  PetscFunctionReturn(0);
}

/*@
  LossNetHessianSetBatch - the batch whose mean loss the Hessian differentiates

  Collective on H

  Input Parameters:
+ H - a Mat from LossCreateNetHessian()
. X - the inputs, whole samples on each rank, as for NetForward() (referenced, not copied); in grid mode (NetSetGrid())
      this rank's block of each field of its group
- T - the targets, laid out like the Net's output for X (referenced): split over the ranks like X in batch mode; in
      grid mode like the output of NetCreateVecs(), which need not follow X (a pooled head's outputs lie on the first
      rank of each group, a strided node's on the ranks that own its output grid)

  Level: intermediate

.seealso: `LossCreateNetHessian()`, `LossNetHessianSetChunkSize()`
@*/
PetscErrorCode LossNetHessianSetBatch(Mat H, Vec X, Vec T)
{
  LossNetHessian *ctx;

  PetscFunctionBegin;
  PetscCall(LossNetHessianGetContext_Private(H, &ctx));
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(PetscObjectReference((PetscObject)X));
  PetscCall(PetscObjectReference((PetscObject)T));
  PetscCall(VecDestroy(&ctx->X));
  PetscCall(VecDestroy(&ctx->T));
  ctx->X    = X;
  ctx->T    = T;
  ctx->kept = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  LossNetHessianSetChunkSize - the largest number of local samples (fields in grid mode) the Hessian runs through the
  Net in one pass

  Logically collective on H

  Input Parameters:
+ H     - a Mat from LossCreateNetHessian()
- chunk - samples per rank and pass (in grid mode, NetSetGrid(), fields per group and pass), or PETSC_DETERMINE for
          the whole local batch (the default)

  Notes:
  With one chunk, the forward pass is kept between products at the same point; with several, every product runs
  each chunk's forward pass again, trading time for the memory of the activations.

  Level: intermediate

.seealso: `LossCreateNetHessian()`, `LossNetHessianSetBatch()`
@*/
PetscErrorCode LossNetHessianSetChunkSize(Mat H, PetscInt chunk)
{
  LossNetHessian *ctx;

  PetscFunctionBegin;
  PetscCall(LossNetHessianGetContext_Private(H, &ctx));
  PetscCheck(chunk == PETSC_DETERMINE || chunk > 0, PetscObjectComm((PetscObject)H), PETSC_ERR_ARG_OUTOFRANGE, "The Hessian's chunk size must be positive or PETSC_DETERMINE, not %" PetscInt_FMT, chunk);
  ctx->chunk = chunk;
  ctx->kept  = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  LossNetHessianGetType - whether a Hessian from LossCreateNetHessian() is the Gauss-Newton or the exact one

  Not collective

  Input Parameter:
. H - a Mat from LossCreateNetHessian()

  Output Parameter:
. type - `LOSS_HESSIAN_GN` or `LOSS_HESSIAN_EXACT`

  Level: intermediate

.seealso: `LossCreateNetHessian()`
@*/
PetscErrorCode LossNetHessianGetType(Mat H, LossHessianType *type)
{
  LossNetHessian *ctx;

  PetscFunctionBegin;
  PetscCall(LossNetHessianGetContext_Private(H, &ctx));
  PetscValidPointer(type, 2);
  *type = ctx->type;
  PetscFunctionReturn(0);
}

/*@
  LossNetHessianSetDamping - adds lambda I to the Hessian (Tikhonov or Levenberg-Marquardt damping): the product is
  (H + lambda I) v

  Logically collective on H

  Input Parameters:
+ H      - a Mat from LossCreateNetHessian()
- lambda - the damping, >= 0 (default 0)

  Notes:
  Damping makes the Gauss-Newton operator positive definite, so that conjugate gradients on it converge and stay
  stable in floating point (the Gauss-Newton operator of a softmax output is singular: adding a constant to every
  class's weights changes nothing), and shortens the steps where the quadratic model is poor.

  Level: intermediate

.seealso: `LossCreateNetHessian()`, `TrainerSetFromOptions()`
@*/
PetscErrorCode LossNetHessianSetDamping(Mat H, PetscReal lambda)
{
  LossNetHessian *ctx;

  PetscFunctionBegin;
  PetscCall(LossNetHessianGetContext_Private(H, &ctx));
  PetscCheck(lambda >= 0, PetscObjectComm((PetscObject)H), PETSC_ERR_ARG_OUTOFRANGE, "The Hessian's damping must be >= 0, not %g", (double)lambda);
  ctx->damping = lambda;
  PetscFunctionReturn(0);
}
