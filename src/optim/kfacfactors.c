/*
  The K-FAC factors of a Net (kfacimpl.h): their statistics from the last forward and backward pass, their damped
  inverses, and the blockwise F^{-1} v. Martens and Grosse 2015 (dense), Grosse and Martens 2016 (KFC, convolutions).

  Statistics. After NetForward() and NetBackward() of the mean loss over a global batch of N samples, dact of a layer's
  output holds (1/N) dL_s/dy for each sample s, so the per-sample output gradient is g = N dact. Per block and batch:
    dense    A = (1/N) sum_s a_s a_s^T                     a = [x_s; 1], the layer's input with 1 for the bias
             S = (1/N) sum_s g_s g_s^T = N sum_s dact_s dact_s^T
    conv2d   A = 1/(N T) sum_s sum_t a_st a_st^T           a_st = [patch of pixel t of sample s in group g; 1]
             S = (1/N) sum_s sum_t g_st g_st^T             g_st = N dact at pixel t, channels of group g
  with T = Ho Wo output pixels. This is KFC's Omega (x) Gamma under spatial homogeneity and uncorrelated derivatives:
  vec(DW) = sum_t g_t (x) a_t gives E[DW DW^T] ~ T E_t[a a^T] (x) E_t[g g^T], and we put the factor T in S (sum over
  pixels, mean over samples) and keep A a mean over samples and pixels, so that a 1x1 image is exactly a dense layer.
  Each rank sums over its own samples; one MPI_Allreduce adds the packed upper triangles of every factor, so every
  rank holds the same factors and the result does not depend on the number of ranks beyond round-off. A batch may
  come in several passes (chunks, PetNetKFACAddStatistics()), each with the cotangents of its own mean: N above is
  then each pass's size for g and the total for the means. Running averages: F <- decay F + (1 - decay) F_batch, the
  first batch taken as it is.

  Inverses: factored Tikhonov damping (Martens and Grosse 2015, section 6.3),
    (A + pi sqrt(lambda) I)^{-1},  (S + sqrt(lambda) / pi I)^{-1},   pi = sqrt((tr A / na) / (tr S / nout)),
  by Cholesky (LAPACK dpotrf, dpotri) on every rank.

  Apply: for a block with gradient G (nout x na: weights, then bias as column nin), F^{-1} G = S^{-1} G A^{-1}. Column-
  major, M = G^T (na x nout) and R = A^{-1} M S^{-1}: two GEMMs. Each rank computes only the rows o of the block that
  hold parameters it owns (the columns S^{-1}(:, o)), so the work is split over the ranks like the parameters.
*/
#include "kfacimpl.h"
#include <petscblaslapack.h>

PetscLogEvent PETNET_KFACStatistics, PETNET_KFACInvert, PETNET_KFACApply;

#define KFAC_PATCH_ENTRIES (1 << 20) /* conv2d: patches of at most this many entries at a time (8 MB), at least one sample */

/* Describes why node k cannot be preconditioned, for the error and the view */
static PetscErrorCode PetNetKFACUncoveredError(Net net, PetscInt k, const char why[], const char option[])
{
  Layer       layer;
  LayerType   type;
  const char *prefix, *name;

  PetscFunctionBegin;
  PetscCall(NetGetLayer(net, k, &layer));
  PetscCall(NetGetLayerName(net, k, &name));
  PetscCall(LayerGetType(layer, &type));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
          "K-FAC preconditions dense layers and conv2d layers in batch mode, and layer \"%s\" (%s%s, %" PetscInt_FMT
          " parameters, options prefix -%s) is not one of them: train this network with -tao_type adam (or adamw, sgd, rmsprop), or give %s to step the parameters of such layers along the plain gradient",
          name, type, why, layer->nparams, prefix ? prefix : "", option);
  PetscFunctionReturn(0);
}

/*
  The blocks of net: one per dense layer, one per group of a conv2d layer in batch mode. Other parameterised layers
  are an error, or with uncoveredgradient their parameters are left unpreconditioned. option names the setting that
  allows it, for the error message.
*/
PetscErrorCode PetNetKFACCreate(Net net, PetscBool uncoveredgradient, const char option[], PetNetKFAC *kfac)
{
  PetNetKFAC k;
  PetscInt   nb = 0, nu = 0;
  size_t     nbatch = 0, nfull = 0, nwork = 0;
  PetscInt   maxrows = 0, nlayers;
  Mat        bcast;

  PetscFunctionBegin;
  PetscCall(NetSetUp(net));
  PetscCall(NetGetNumLayers(net, &nlayers));
  {
    NetParallelType parallel;

    PetscCall(NetGetParallel(net, &parallel));
    PetscCheck(parallel == NET_PARALLEL_REPLICATED, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
               "K-FAC keeps its factors and applies them on a full copy of the parameters on every rank, which -net_parallel %s does not have: use -net_parallel replicated, or another optimizer (adam, lmvm, nls)", NetParallelTypes[parallel]);
  }
  PetscCall(PetscNew(&k));
  PetscCall(PetscObjectReference((PetscObject)net));
  k->net       = net;
  k->decay     = 0.95;
  k->damping   = 1e-3;
  k->ninverted = -1;
  /* two passes: count, then fill */
  for (PetscInt pass = 0; pass < 2; pass++) {
    nb = nu = 0;
    for (PetscInt n = 0; n < nlayers; n++) {
      Layer     layer;
      PetscBool isdense, isconv;
      DM        dm = NULL;
      PetscInt  poff;

      PetscCall(NetGetLayer(net, n, &layer));
      if (!layer->nparams) continue;
      PetscCall(NetGetLayerParameterRange(net, n, &poff, NULL));
      PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
      PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV2D, &isconv));
      if (isconv) PetscCall(NetGetGrid(net, &dm)); /* in grid mode a conv2d's patches span the ranks' halos */
      if (isdense) {
        if (pass) {
          KFACBlock *b = &k->blocks[nb];

          b->node   = n;
          b->group  = 0;
          b->nin    = layer->insize;
          b->nout   = layer->outsize;
          b->bias   = PETSC_TRUE;
          b->pixels = 1;
          b->woff   = poff;
          b->boff   = poff + b->nin * b->nout;
        }
        nb++;
      } else if (isconv && !dm) {
        PetscInt  G, kg, pixels, cout = layer->out.dim[2];
        PetscBool bias;

        PetscCall(LayerConv2dGetPatchLayout(layer, &G, &kg, &pixels, &bias));
        for (PetscInt g = 0; g < G; g++, nb++) {
          KFACBlock *b;

          if (!pass) continue;
          b         = &k->blocks[nb];
          b->node   = n;
          b->group  = g;
          b->nin    = kg;
          b->nout   = cout / G;
          b->bias   = bias;
          b->pixels = pixels;
          b->woff   = poff + g * b->nout * kg;
          b->boff   = bias ? poff + cout * kg + g * b->nout : -1;
        }
        if (pass) nwork = PetscMax(nwork, (size_t)pixels * G * kg * PetscMax(1, KFAC_PATCH_ENTRIES / ((size_t)pixels * G * kg)));
      } else {
        if (!uncoveredgradient) PetscCall(PetNetKFACUncoveredError(net, n, isconv ? " in grid mode" : "", option));
        if (pass) k->uncovered[nu] = n;
        nu++;
      }
    }
    if (!pass) {
      k->nblocks    = nb;
      k->nuncovered = nu;
      PetscCall(PetscCalloc1(nb, &k->blocks));
      PetscCall(PetscMalloc1(nu, &k->uncovered));
    }
  }
  /* the factors and the buffers */
  for (PetscInt i = 0; i < k->nblocks; i++) {
    KFACBlock *b        = &k->blocks[i];
    size_t     nodefull = 0;

    b->na   = b->nin + (b->bias ? 1 : 0);
    b->aoff = nbatch;
    nbatch += (size_t)b->na * (b->na + 1) / 2;
    b->soff = nbatch;
    nbatch += (size_t)b->nout * (b->nout + 1) / 2;
    PetscCall(PetscCalloc2((size_t)b->na * b->na, &b->A, (size_t)b->na * b->na, &b->Ainv));
    PetscCall(PetscCalloc2((size_t)b->nout * b->nout, &b->S, (size_t)b->nout * b->nout, &b->Sinv));
    /* the A's of all groups of a node are summed side by side */
    for (PetscInt j = i; j >= 0 && k->blocks[j].node == b->node; j--) nodefull += (size_t)k->blocks[j].na * k->blocks[j].na;
    nfull   = PetscMax(nfull, PetscMax(nodefull, (size_t)b->nout * b->nout));
    nwork   = PetscMax(nwork, 2 * (size_t)b->na * b->nout + (size_t)b->nout * b->nout);
    maxrows = PetscMax(maxrows, b->nout);
  }
  k->nbatch = nbatch;
  k->nwork  = nwork;
  PetscCall(PetscMalloc4(nbatch, &k->batch, nfull, &k->full, nwork, &k->work, maxrows, &k->rows));
  PetscCall(NetGetParameterBroadcast(net, &bcast));
  PetscCall(MatCreateVecs(bcast, NULL, &k->grep)); /* the replicated layout */
  *kfac = k;
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetKFACDestroy(PetNetKFAC *kfac)
{
  PetNetKFAC k = *kfac;

  PetscFunctionBegin;
  if (!k) PetscFunctionReturn(0);
  for (PetscInt i = 0; i < k->nblocks; i++) {
    PetscCall(PetscFree2(k->blocks[i].A, k->blocks[i].Ainv));
    PetscCall(PetscFree2(k->blocks[i].S, k->blocks[i].Sinv));
  }
  PetscCall(PetscFree(k->blocks));
  PetscCall(PetscFree(k->uncovered));
  PetscCall(PetscFree4(k->batch, k->full, k->work, k->rows));
  PetscCall(VecDestroy(&k->grep));
  PetscCall(NetDestroy(&k->net));
  PetscCall(PetscFree(*kfac));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetKFACSetDecay(PetNetKFAC kfac, PetscReal decay)
{
  PetscFunctionBegin;
  kfac->decay = decay;
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetKFACSetDamping(PetNetKFAC kfac, PetscReal damping)
{
  PetscFunctionBegin;
  if (damping != kfac->damping) kfac->ninverted = -1; /* the inverses are stale */
  kfac->damping = damping;
  PetscFunctionReturn(0);
}

/* The upper triangle of the n x n column-major matrix F, column by column, into p (add: p += scale F; else p = F) */
static void KFACPackUpper(PetscInt n, const PetscScalar *F, PetscBool add, PetscReal scale, PetscScalar *p)
{
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = 0; i <= j; i++, p++) *p = add ? *p + scale * F[i + j * n] : F[i + j * n];
}

/* F <- w F + scale P, P packed upper, F full symmetric (both triangles written) */
static void KFACAverage(PetscInt n, const PetscScalar *p, PetscReal scale, PetscReal w, PetscScalar *F)
{
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = 0; i <= j; i++) {
      PetscScalar v = w * F[i + j * n] + scale * *p++;

      F[i + j * n] = v;
      F[j + i * n] = v;
    }
}

/* Sums over this rank's samples of A (upper triangle of the na x na matrix Af, na = nin + bias) for rows of x: n rows
   of nin values, row stride ld (a group of conv2d patches); beta 0 overwrites, 1 accumulates */
static PetscErrorCode KFACSumInputs(PetscInt nin, PetscBool bias, PetscInt n, const PetscScalar *x, PetscInt ld, PetscScalar beta, PetscScalar *Af)
{
  const PetscInt    na  = nin + (bias ? 1 : 0);
  const PetscScalar one = 1.0;
  PetscBLASInt      bnin, bn, bld, bna;

  PetscFunctionBegin;
  if (beta == 0.0) PetscCall(PetscArrayzero(Af, (size_t)na * na));
  if (!n) PetscFunctionReturn(0);
  PetscCall(PetscBLASIntCast(nin, &bnin));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(ld, &bld));
  PetscCall(PetscBLASIntCast(na, &bna));
  PetscCallBLAS("BLASsyrk", BLASsyrk_("U", "N", &bnin, &bn, &one, x, &bld, &beta, Af, &bna)); /* Af(1:nin, 1:nin) += X X^T */
  if (bias) {
    PetscScalar *col = Af + (size_t)nin * na; /* the last column: sum of the inputs, and the count */

    for (PetscInt s = 0; s < n; s++)
      for (PetscInt i = 0; i < nin; i++) col[i] += x[(size_t)s * ld + i];
    col[nin] += n;
  }
  PetscCall(PetscLogFlops((PetscLogDouble)n * nin * (nin + 1) + (bias ? (PetscLogDouble)n * nin : 0)));
  PetscFunctionReturn(0);
}

/* Sf = sum of dy dy^T over n rows of nout values, row stride ld (upper triangle) */
static PetscErrorCode KFACSumOutputs(PetscInt nout, PetscInt n, const PetscScalar *dy, PetscInt ld, PetscScalar *Sf)
{
  const PetscScalar one = 1.0, zero = 0.0;
  PetscBLASInt      bnout, bn, bld;

  PetscFunctionBegin;
  PetscCall(PetscArrayzero(Sf, (size_t)nout * nout));
  if (!n) PetscFunctionReturn(0);
  PetscCall(PetscBLASIntCast(nout, &bnout));
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(ld, &bld));
  PetscCallBLAS("BLASsyrk", BLASsyrk_("U", "N", &bnout, &bn, &one, dy, &bld, &zero, Sf, &bnout));
  PetscCall(PetscLogFlops((PetscLogDouble)n * nout * (nout + 1)));
  PetscFunctionReturn(0);
}

/* This rank's sums for the blocks [b0, b1) of one node, packed into kfac->batch (add: added to it, those of S times
   sscale) */
static PetscErrorCode KFACSumNode(PetNetKFAC kfac, PetscInt b0, PetscInt b1, PetscBool add, PetscReal sscale)
{
  Net                net  = kfac->net;
  const PetscInt     node = kfac->blocks[b0].node;
  PetscInt           n;
  Layer              layer;
  const PetscScalar *x, *dy;
  PetscBool          isdense;

  PetscFunctionBegin;
  PetscCall(NetGetBatchSize(net, &n, NULL));
  PetscCall(NetGetLayer(net, node, &layer));
  PetscCall(NetGetNodeArraysRead(net, node, NULL, &x, &dy)); /* in double at any precision */
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  if (isdense) {
    KFACBlock *b = &kfac->blocks[b0];

    PetscCall(KFACSumInputs(b->nin, b->bias, n, x, b->nin, 0.0, kfac->full));
    KFACPackUpper(b->na, kfac->full, add, 1.0, kfac->batch + b->aoff);
    PetscCall(KFACSumOutputs(b->nout, n, dy, b->nout, kfac->full));
    KFACPackUpper(b->nout, kfac->full, add, sscale, kfac->batch + b->soff);
  } else { /* conv2d: patches chunk by chunk, the A of each group side by side in full */
    PetscInt G, kg, P, cout = layer->out.dim[2], chunk;
    size_t   off;

    PetscCall(LayerConv2dGetPatchLayout(layer, &G, &kg, &P, NULL));
    chunk = (PetscInt)PetscMax(1, KFAC_PATCH_ENTRIES / ((size_t)P * G * kg));
    for (PetscInt s0 = 0; s0 < n || s0 == 0; s0 += chunk) {
      PetscInt ns = PetscMin(chunk, n - s0);

      if (ns > 0) PetscCall(LayerConv2dGetPatches(layer, ns, x + (size_t)s0 * layer->insize, kfac->work));
      off = 0;
      for (PetscInt i = b0; i < b1; i++) {
        KFACBlock *b = &kfac->blocks[i];

        PetscCall(KFACSumInputs(b->nin, b->bias, ns * P, kfac->work + b->group * kg, G * kg, s0 ? 1.0 : 0.0, kfac->full + off));
        off += (size_t)b->na * b->na;
      }
      if (n == 0) break;
    }
    off = 0;
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      KFACPackUpper(b->na, kfac->full + off, add, 1.0, kfac->batch + b->aoff);
      off += (size_t)b->na * b->na;
    }
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      PetscCall(KFACSumOutputs(b->nout, n * P, dy + b->group * b->nout, cout, kfac->full));
      KFACPackUpper(b->nout, kfac->full, add, sscale, kfac->batch + b->soff);
    }
  }
  PetscCall(NetRestoreNodeArraysRead(net, node, NULL, &x, &dy));
  PetscFunctionReturn(0);
}

/*
  Adds the sums of the Net's last forward and backward pass (of the mean loss over its Nc samples) to those of the
  passes since the last update. Each pass's cotangents are those of its own mean, g = Nc dact: the sums of S are
  scaled by (Nc / N1)^2 relative to the first pass's N1, so that one pass alone is summed exactly as it comes.
*/
PetscErrorCode PetNetKFACAddStatistics(PetNetKFAC kfac)
{
  Net       net  = kfac->net;
  MPI_Comm  comm = PetscObjectComm((PetscObject)net);
  PetscBool add  = (PetscBool)(kfac->nsamples > 0);
  PetscReal sscale;
  PetscInt  nglobal;

  PetscFunctionBegin;
  PetscCall(NetGetBatchSize(net, NULL, &nglobal));
  PetscCheck(nglobal >= 0, comm, PETSC_ERR_ORDER, "K-FAC takes its statistics from the Net's last NetForward() and NetBackward() of the mean loss, and there is none: the objective must run both on the Net given to K-FAC");
  PetscCheck(nglobal > 0, comm, PETSC_ERR_ARG_WRONGSTATE, "K-FAC statistics need a batch of at least one sample");
  PetscCall(PetscLogEventBegin(PETNET_KFACStatistics, 0, 0, 0, 0));
  if (!add) kfac->nfirst = nglobal;
  sscale = ((PetscReal)nglobal * nglobal) / ((PetscReal)kfac->nfirst * kfac->nfirst);
  for (PetscInt b0 = 0, b1; b0 < kfac->nblocks; b0 = b1) {
    for (b1 = b0 + 1; b1 < kfac->nblocks && kfac->blocks[b1].node == kfac->blocks[b0].node; b1++) {}
    PetscCall(KFACSumNode(kfac, b0, b1, add, sscale));
  }
  kfac->nsamples += nglobal;
  PetscCall(PetscLogEventEnd(PETNET_KFACStatistics, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* Adds the last pass (PetNetKFACAddStatistics()) and folds the factors of all passes since the last update into the
   running averages */
PetscErrorCode PetNetKFACUpdateStatistics(PetNetKFAC kfac)
{
  Net         net  = kfac->net;
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt count;
  PetscReal   w = kfac->nupdates ? kfac->decay : 0.0, N, Sscale;

  PetscFunctionBegin;
  PetscCall(PetNetKFACAddStatistics(kfac));
  PetscCall(PetscLogEventBegin(PETNET_KFACStatistics, 0, 0, 0, 0));
  PetscCall(PetscMPIIntCast(kfac->nbatch, &count));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, kfac->batch, count, MPIU_SCALAR, MPIU_SUM, comm));
  N      = (PetscReal)kfac->nsamples;
  Sscale = ((PetscReal)kfac->nfirst * kfac->nfirst) / N; /* S = (1/N) sum (N1 dact)(N1 dact)^T over the passes */
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    KFACBlock *b = &kfac->blocks[i];

    KFACAverage(b->na, kfac->batch + b->aoff, (1 - w) / (N * b->pixels), w, b->A); /* A: mean over samples and pixels */
    KFACAverage(b->nout, kfac->batch + b->soff, (1 - w) * Sscale, w, b->S);
  }
  kfac->nsamples = 0;
  kfac->nupdates++;
  PetscCall(PetscLogEventEnd(PETNET_KFACStatistics, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* Finv = (F + d I)^{-1} for the n x n symmetric positive definite F */
static PetscErrorCode KFACInvertDamped(Net net, const KFACBlock *b, const char which[], PetscInt n, const PetscScalar *F, PetscReal d, PetscScalar *Finv)
{
  PetscBLASInt bn, info;
  const char  *name;

  PetscFunctionBegin;
  PetscCall(NetGetLayerName(net, b->node, &name));
  PetscCall(PetscArraycpy(Finv, F, (size_t)n * n));
  for (PetscInt i = 0; i < n; i++) Finv[i + i * n] += d;
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKpotrf", LAPACKpotrf_("U", &bn, Finv, &bn, &info));
  PetscCall(PetscFPTrapPop());
  PetscCheck(info >= 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotrf: argument %d is invalid", (int)-info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_CONV_FAILED, "The K-FAC factor %s of layer \"%s\" (group %" PetscInt_FMT ") is not positive definite after damping %g (pivot %d): raise the damping, or look for Inf or NaN in the network", which,
             name, b->group, (double)d, (int)info);
  PetscCallBLAS("LAPACKpotri", LAPACKpotri_("U", &bn, Finv, &bn, &info));
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotri failed with info %d on the K-FAC factor %s of layer \"%s\"", (int)info, which, name);
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = j + 1; i < n; i++) Finv[i + j * n] = Finv[j + i * n];
  PetscCall(PetscLogFlops((PetscLogDouble)n * n * n));
  PetscFunctionReturn(0);
}

/* The damped inverses of every block from the current averages (the same on every rank: no communication) */
PetscErrorCode PetNetKFACInvert(PetNetKFAC kfac)
{
  const PetscReal gamma = PetscSqrtReal(kfac->damping);

  PetscFunctionBegin;
  PetscCheck(kfac->nupdates > 0, PetscObjectComm((PetscObject)kfac->net), PETSC_ERR_ORDER, "K-FAC has no statistics to invert yet: update them from a forward and backward pass first");
  PetscCall(PetscLogEventBegin(PETNET_KFACInvert, 0, 0, 0, 0));
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    KFACBlock *b  = &kfac->blocks[i];
    PetscReal  ta = 0, ts = 0;

    for (PetscInt j = 0; j < b->na; j++) ta += PetscRealPart(b->A[j + j * b->na]);
    for (PetscInt j = 0; j < b->nout; j++) ts += PetscRealPart(b->S[j + j * b->nout]);
    ta /= b->na;
    ts /= b->nout;
    b->pi = (ta > 0 && ts > 0) ? PetscSqrtReal(ta / ts) : 1.0;
    PetscCall(KFACInvertDamped(kfac->net, b, "A", b->na, b->A, b->pi * gamma, b->Ainv));
    PetscCall(KFACInvertDamped(kfac->net, b, "S", b->nout, b->S, gamma / b->pi, b->Sinv));
  }
  kfac->ninverted = kfac->nupdates;
  PetscCall(PetscLogEventEnd(PETNET_KFACInvert, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* y = F^{-1} g blockwise, g and y laid out like the Net's parameters; parameters outside the blocks: y = g */
PetscErrorCode PetNetKFACApply(PetNetKFAC kfac, Vec g, Vec y)
{
  Net                net = kfac->net;
  const PetscScalar *gr, one = 1.0, zero = 0.0;
  PetscScalar       *ya;
  PetscInt           rs, re, n, m;
  Vec                theta;
  Mat                bcast;

  PetscFunctionBegin;
  PetscCheck(kfac->ninverted >= 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "K-FAC has no inverses yet: compute them before applying them");
  PetscCall(VecGetLocalSize(g, &n));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(NetGetParameterBroadcast(net, &bcast));
  PetscCall(VecGetLocalSize(theta, &m));
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "K-FAC: the vector has %" PetscInt_FMT " local entries, the Net's parameters %" PetscInt_FMT ": lay it out like the Net's parameters (NetCreateParameterVec())", n, m);
  PetscCall(PetscLogEventBegin(PETNET_KFACApply, 0, 0, 0, 0));
  PetscCall(MatMult(bcast, g, kfac->grep));
  if (g != y) PetscCall(VecCopy(g, y)); /* the parameters outside the blocks */
  PetscCall(VecGetOwnershipRange(y, &rs, &re));
  PetscCall(VecGetArrayRead(kfac->grep, &gr));
  PetscCall(VecGetArray(y, &ya));
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    const KFACBlock *b  = &kfac->blocks[i];
    const PetscInt   na = b->na, nin = b->nin, nout = b->nout;
    PetscInt         nr = 0, nw = 0;
    PetscScalar     *M = kfac->work, *Ssel = M + (size_t)na * nout, *T = Ssel + (size_t)nout * nout;
    PetscBLASInt     bna, bnout, bnr, bnw, bnb, ione = 1;

    /* the rows o this rank needs: first those with weights [woff + o nin, woff + (o + 1) nin) in [rs, re), then those
       of which it owns only the bias boff + o (the biases follow all the weights, so they often sit on another rank) */
    for (PetscInt pass = 0; pass < 2; pass++)
      for (PetscInt o = 0; o < nout; o++) {
        const PetscInt  w0 = b->woff + o * nin, w1 = w0 + nin;
        const PetscBool w = (PetscBool)(w0 < re && w1 > rs), bo = (PetscBool)(b->bias && b->boff + o >= rs && b->boff + o < re);

        if (pass ? (!w && bo) : w) kfac->rows[nr++] = o;
        if (!pass) nw = nr;
      }
    if (!nr) continue;
    /* M = G^T: column o holds the weights of row o, then its bias */
    for (PetscInt o = 0; o < nout; o++) {
      PetscCall(PetscArraycpy(M + (size_t)o * na, gr + b->woff + o * nin, nin));
      if (b->bias) M[(size_t)o * na + nin] = gr[b->boff + o];
    }
    for (PetscInt j = 0; j < nr; j++) PetscCall(PetscArraycpy(Ssel + (size_t)j * nout, b->Sinv + (size_t)kfac->rows[j] * nout, nout));
    PetscCall(PetscBLASIntCast(na, &bna));
    PetscCall(PetscBLASIntCast(nout, &bnout));
    PetscCall(PetscBLASIntCast(nr, &bnr));
    PetscCall(PetscBLASIntCast(nw, &bnw));
    PetscCall(PetscBLASIntCast(nr - nw, &bnb));
    PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bna, &bnr, &bnout, &one, M, &bna, Ssel, &bnout, &zero, T, &bna));                                                           /* T = M S^{-1}(:, rows) */
    if (nw) PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bna, &bnw, &bna, &one, b->Ainv, &bna, T, &bna, &zero, M, &bna));                                                    /* R = A^{-1} T, in M */
    if (nr > nw) PetscCallBLAS("BLASgemv", BLASgemv_("T", &bna, &bnb, &one, T + (size_t)nw * na, &bna, b->Ainv + (size_t)nin * na, &ione, &zero, M + (size_t)nw * na, &ione)); /* bias-only rows: row nin of A^{-1} T */
    PetscCall(PetscLogFlops(2.0 * na * (nr * nout + nw * na + (nr - nw))));
    for (PetscInt j = 0; j < nw; j++) {
      const PetscInt     o = kfac->rows[j];
      const PetscScalar *r = M + (size_t)j * na;

      for (PetscInt c = 0; c < nin; c++) {
        PetscInt idx = b->woff + o * nin + c;

        if (idx >= rs && idx < re) ya[idx - rs] = r[c];
      }
      if (b->bias && b->boff + o >= rs && b->boff + o < re) ya[b->boff + o - rs] = r[nin];
    }
    for (PetscInt j = nw; j < nr; j++) ya[b->boff + kfac->rows[j] - rs] = M[(size_t)nw * na + (j - nw)];
  }
  PetscCall(VecRestoreArray(y, &ya));
  PetscCall(VecRestoreArrayRead(kfac->grep, &gr));
  PetscCall(PetscLogEventEnd(PETNET_KFACApply, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetKFACView(PetNetKFAC kfac, PetscViewer viewer)
{
  Net net = kfac->net;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "K-FAC factors after %" PetscInt_FMT " statistics updates:\n", kfac->nupdates));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    const KFACBlock *b = &kfac->blocks[i];
    LayerType        type;
    Layer            layer;
    const char      *name;

    PetscCall(NetGetLayer(net, b->node, &layer));
    PetscCall(NetGetLayerName(net, b->node, &name));
    PetscCall(LayerGetType(layer, &type));
    if (b->group || (i + 1 < kfac->nblocks && kfac->blocks[i + 1].node == b->node))
      PetscCall(PetscViewerASCIIPrintf(viewer, "layer \"%s\" (%s), group %" PetscInt_FMT ": A %" PetscInt_FMT " x %" PetscInt_FMT ", S %" PetscInt_FMT " x %" PetscInt_FMT "\n", name, type, b->group, b->na, b->na, b->nout, b->nout));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "layer \"%s\" (%s): A %" PetscInt_FMT " x %" PetscInt_FMT ", S %" PetscInt_FMT " x %" PetscInt_FMT "\n", name, type, b->na, b->na, b->nout, b->nout));
  }
  for (PetscInt i = 0; i < kfac->nuncovered; i++) {
    LayerType   type;
    Layer       layer;
    const char *name;

    PetscCall(NetGetLayer(net, kfac->uncovered[i], &layer));
    PetscCall(NetGetLayerName(net, kfac->uncovered[i], &name));
    PetscCall(LayerGetType(layer, &type));
    PetscCall(PetscViewerASCIIPrintf(viewer, "layer \"%s\" (%s): not covered, plain gradient\n", name, type));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}
