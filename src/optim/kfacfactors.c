/*
  The K-FAC factors of a Net (kfacimpl.h): their statistics from the last forward and backward pass, their damped
  inverses, and the blockwise F^{-1} v. Martens and Grosse 2015 (dense), Grosse and Martens 2016 (KFC, convolutions).

  Statistics. After NetForward() and NetBackward() of the mean loss over a global batch of N samples, dact of a layer's
  output holds (1/N) dL_s/dy for each sample s, so the per-sample output gradient is g = N dact. Per block and batch:
    dense    A = (1/N) sum_s a_s a_s^T                     a = [x_s; 1], the layer's input with 1 for the bias
             S = (1/N) sum_s g_s g_s^T = N sum_s dact_s dact_s^T
    dense:N:tokens  as a convolution below with T = the positions of a sample and a_st = [x_st; 1] (its E inputs at
             position t): A a mean over the N T rows, S a sum over positions and mean over samples; T = 1 is dense
    conv2d   A = 1/(N T) sum_s sum_t a_st a_st^T           a_st = [patch of pixel t of sample s in group g; 1]
    conv3d   S = (1/N) sum_s sum_t g_st g_st^T             g_st = N dact at pixel t, channels of group g
  with T = Ho Wo output pixels (conv3d: Do Ho Wo output voxels, the same sums over its vol2col patches). This is KFC's Omega (x) Gamma under spatial homogeneity and uncorrelated derivatives:
  vec(DW) = sum_t g_t (x) a_t gives E[DW DW^T] ~ T E_t[a a^T] (x) E_t[g g^T], and we put the factor T in S (sum over
  pixels, mean over samples) and keep A a mean over samples and pixels, so that a 1x1 image is exactly a dense layer.
  Each rank sums over its own samples; after each pass the packed upper triangles of a node's factors are summed over
  the ranks, node by node (one node's sums at a time in memory), to the ranks that hold them (kfacimpl.h): one
  MPI_Allreduce per node in the replicated placement, one MPI_Reduce_scatter per node to the blocks' owners in the
  owner placement (the owners ascend with the blocks, so each owner's part of a node's sums is one contiguous piece).
  The result does not depend on the number of ranks beyond round-off. A batch may come in several passes (chunks,
  PetNetKFACAddStatistics()), each with the cotangents of its own mean: N above is then each pass's size for g and the
  total for the means. Running averages: F <- decay F + (1 - decay) F_batch, the first batch taken as it is.
  Grid mode (NetSetGrid()): a sample is a field (N fields, of the DMDA's points each) and T the output points of a
  field over all ranks, counted at each pass; the rows of a convolution are the rank's output points field by field,
  their patches from the halo box (NetGetNodePatches()), so that the sums above are batch mode's on the same fields.

  Inverses: factored Tikhonov damping (Martens and Grosse 2015, section 6.3),
    (A + pi sqrt(lambda) I)^{-1},  (S + sqrt(lambda) / pi I)^{-1},   pi = sqrt((tr A / na) / (tr S / nout)),
  by Cholesky (LAPACK dpotrf, dpotri), each block by the ranks that hold it (every rank, or its owner).

  Apply: for a block with gradient G (nout x na: weights, then bias as column nin), F^{-1} G = S^{-1} G A^{-1}. Column-
  major, M = G^T (na x nout) and R = A^{-1} M S^{-1}: two GEMMs. Replicated placement: each rank computes only the
  rows o of the block that hold parameters it owns (the columns S^{-1}(:, o)) from the replicated gradient, so the work
  is split over the ranks like the parameters. Owner placement: the owner of a block computes all of R from the
  block's gradient, which one MPI_Alltoallv brings it from the ranks that own its pieces (the runs of the weights and
  of the bias, cut by the ownership ranges of the parameter Vec: no per-entry index), and a second one returns the
  pieces of R to them.
*/
#include "kfacimpl.h"
#include <petscblaslapack.h>
#include <petscdmda.h> /* grid mode: the fields of a batch, of the DMDA's points each */

PetscLogEvent PETNET_KFACStatistics, PETNET_KFACInvert, PETNET_KFACApply;

#define KFAC_PATCH_ENTRIES (1 << 20) /* conv2d, conv3d: patches of at most this many entries at a time (8 MB), at least one sample */

/* Describes why node k cannot be preconditioned, for the error and the view */
static PetscErrorCode PetNetKFACUncoveredError(Net net, PetscInt k, const char option[])
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
          "K-FAC preconditions dense, conv2d and conv3d layers, and layer \"%s\" (%s, %" PetscInt_FMT
          " parameters, options prefix -%s) is not one of them: train this network with -tao_type adam (or adamw, sgd, rmsprop), or give %s to step the parameters of such layers along the plain gradient",
          name, type, layer->nparams, prefix ? prefix : "", option);
  PetscFunctionReturn(0);
}

/* A convolution's patches, by its kind (conv2d or conv3d: the same layout and the same code in the layer) */
static PetscErrorCode KFACConvPatchLayout(Layer layer, PetscBool is3d, PetscInt *G, PetscInt *kg, PetscInt *pixels, PetscBool *bias)
{
  PetscFunctionBegin;
  if (is3d)
    PetscCall(LayerConv3dGetPatchLayout(layer, G, kg, pixels, bias));
  else
    PetscCall(LayerConv2dGetPatchLayout(layer, G, kg, pixels, bias));
  PetscFunctionReturn(0);
}

static PetscErrorCode KFACConvPatches(Layer layer, PetscBool is3d, PetscInt n, const PetscScalar *x, PetscScalar *col)
{
  PetscFunctionBegin;
  if (is3d)
    PetscCall(LayerConv3dGetPatches(layer, n, x, col));
  else
    PetscCall(LayerConv2dGetPatches(layer, n, x, col));
  PetscFunctionReturn(0);
}

/*
  Whether a parameterised node of the Net runs on a group of ranks smaller than the Net's (a placed Net: -net_stages,
  entry@s, entry@ranks=a:b): then only its group's ranks hold its parameters in their copy (the broadcast gathers each
  rank's own nodes' runs), and theta's ownership follows the groups. The same answer on every rank.
*/
PetscErrorCode PetNetKFACNetOnGroups(Net net, PetscBool *groups)
{
  PetscMPIInt size;
  PetscInt    nlayers;

  PetscFunctionBegin;
  *groups = PETSC_FALSE;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  PetscCall(NetGetNumLayers(net, &nlayers));
  for (PetscInt l = 0; l < nlayers && !*groups; l++) {
    Layer    layer;
    PetscInt first, n;

    PetscCall(NetGetLayer(net, l, &layer));
    if (!layer->nparams) continue;
    PetscCall(NetGetNodeRanks(net, l, &first, &n));
    *groups = (PetscBool)(n < size);
  }
  PetscFunctionReturn(0);
}

/* The factors are placed for the Net's parallel mode and groups at creation (KFACSetUpPlacement()) */
static PetscErrorCode KFACCheckMode(PetNetKFAC k)
{
  NetParallelType parallel;
  PetscBool       groups;

  PetscFunctionBegin;
  PetscCall(NetGetParallel(k->net, &parallel));
  PetscCheck(parallel == k->parallel, PetscObjectComm((PetscObject)k->net), PETSC_ERR_ARG_WRONGSTATE,
             "The Net went from -net_parallel %s to %s after K-FAC placed its factors for it: set the mode before the first TaoSolve() (a kfac Tao places them anew at its next solve) or before PetNetPCSetKFAC()", NetParallelTypes[k->parallel],
             NetParallelTypes[parallel]);
  PetscCall(PetNetKFACNetOnGroups(k->net, &groups));
  PetscCheck(groups == k->groups, PetscObjectComm((PetscObject)k->net), PETSC_ERR_ARG_WRONGSTATE,
             "The Net's nodes went %s after K-FAC placed its factors for it: place the Net (-net_stages, entry@s, entry@ranks=a:b) before the first TaoSolve() (a kfac Tao places them anew at its next solve) or before PetNetPCSetKFAC()",
             groups ? "from all ranks to groups of ranks" : "from groups of ranks back to all ranks");
  PetscFunctionReturn(0);
}

/* the entries of a block's packed sums: the upper triangles of A and S */
static inline size_t KFACTriangles(const KFACBlock *b)
{
  return (size_t)b->na * (b->na + 1) / 2 + (size_t)b->nout * (b->nout + 1) / 2;
}

/* the runs of the parameter Vec that hold block b's gradient: its weights [woff, woff + nout nin), then its bias
   [boff, boff + nout) when it has one */
static inline PetscInt KFACBlockRuns(const KFACBlock *b, PetscInt start[2], PetscInt len[2])
{
  start[0] = b->woff;
  len[0]   = b->nout * b->nin;
  start[1] = b->boff;
  len[1]   = b->bias ? b->nout : 0;
  return b->bias ? 2 : 1;
}

/* the entries of [start, start + len) in [lo, hi) */
static inline PetscInt KFACOverlap(PetscInt start, PetscInt len, PetscInt lo, PetscInt hi)
{
  return PetscMax(0, PetscMin(start + len, hi) - PetscMax(start, lo));
}

/* an MPI count: sizes are checked in 64 bits before they become ints */
static PetscErrorCode KFACCount(MPI_Comm comm, PetscInt64 n, const char what[], PetscMPIInt *count)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0 && n <= PETSC_MPI_INT_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "K-FAC would send %" PetscInt64_FMT " values %s in one MPI message, more than it holds: use fewer or narrower layers, or more ranks", n, what);
  *count = (PetscMPIInt)n;
  PetscFunctionReturn(0);
}

/*
  The placement of the factors (kfacimpl.h): replicated mode keeps every factor on every rank; sharded and model modes,
  and a Net whose nodes run on groups of ranks (-net_stages, entry@ranks=a:b, -net_parallel subgraph: no rank's copy
  holds every parameter), give each block to one owner, the rank that owns the most of its weights in the parameter
  Vec (ties: the lower rank; with stages a rank of the block's stage). A block's weights are one run of the Vec and
  the runs ascend with the blocks, so the owners ascend too.
*/
static PetscErrorCode KFACSetUpPlacement(PetNetKFAC k)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)k->net);
  NetParallelType parallel;
  Vec             theta;
  const PetscInt *ranges;
  PetscMPIInt     size, rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(NetGetParallel(k->net, &parallel));
  PetscCall(NetGetParameters(k->net, &theta));
  PetscCall(VecGetOwnershipRanges(theta, &ranges));
  PetscCall(PetNetKFACNetOnGroups(k->net, &k->groups));
  k->parallel = parallel;
  k->owned    = (PetscBool)(parallel != NET_PARALLEL_REPLICATED || k->groups);
  for (PetscInt i = 0; i < k->nblocks; i++) {
    KFACBlock *b    = &k->blocks[i];
    PetscInt   most = -1;

    b->owner = -1;
    b->held  = PETSC_TRUE;
    if (!k->owned) continue;
    for (PetscMPIInt q = 0; q < size; q++) {
      PetscInt n = KFACOverlap(b->woff, b->nout * b->nin, ranges[q], ranges[q + 1]);

      if (n > most) {
        most     = n;
        b->owner = q;
      }
    }
    PetscCheck(!i || b->owner >= k->blocks[i - 1].owner, PETSC_COMM_SELF, PETSC_ERR_PLIB, "K-FAC: the owners of the blocks must ascend with the blocks");
    b->held = (PetscBool)(b->owner == rank);
  }
  PetscFunctionReturn(0);
}

/*
  Owner placement: the counts of the two MPI_Alltoallv of PetNetKFACApply(). Rank r sends to owner q the entries of
  q's blocks in r's slice [rs, re) of the Vec, block by block, run by run; the owner receives from each rank q the
  entries of its blocks in q's slice, in the same order, and keeps its blocks' gradients end to end in gblk (block b's
  weights at goff, its bias after them). Computed from the ownership ranges alone: no communication.
*/
static PetscErrorCode KFACSetUpExchange(PetNetKFAC k)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)k->net);
  Vec             theta;
  const PetscInt *ranges;
  PetscInt        rs, re;
  PetscMPIInt     size;
  PetscInt64     *ns, *nr, nsend = 0, nrecv = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(NetGetParameters(k->net, &theta));
  PetscCall(VecGetOwnershipRanges(theta, &ranges));
  PetscCall(VecGetOwnershipRange(theta, &rs, &re));
  PetscCall(PetscCalloc5(size, &k->counts, size, &k->scounts, size, &k->sdispls, size, &k->rcounts, size, &k->rdispls));
  PetscCall(PetscCalloc2(size, &ns, size, &nr));
  for (PetscInt i = 0; i < k->nblocks; i++) {
    KFACBlock *b = &k->blocks[i];
    PetscInt   start[2], len[2], nruns = KFACBlockRuns(b, start, len);

    for (PetscInt r = 0; r < nruns; r++) ns[b->owner] += KFACOverlap(start[r], len[r], rs, re);
    if (!b->held) continue;
    b->goff = (size_t)nrecv;
    for (PetscInt r = 0; r < nruns; r++) {
      nrecv += len[r];
      for (PetscMPIInt q = 0; q < size; q++) nr[q] += KFACOverlap(start[r], len[r], ranges[q], ranges[q + 1]);
    }
  }
  for (PetscMPIInt q = 0, sd = 0, rd = 0; q < size; q++) {
    PetscCall(KFACCount(comm, ns[q], "of the gradient to a block's owner", &k->scounts[q]));
    PetscCall(KFACCount(comm, nr[q], "of the gradient from one rank", &k->rcounts[q]));
    k->sdispls[q] = sd;
    k->rdispls[q] = rd;
    PetscCall(KFACCount(comm, (PetscInt64)sd + ns[q], "of the gradient to the owners", &sd));
    PetscCall(KFACCount(comm, (PetscInt64)rd + nr[q], "of the gradient of the blocks one rank holds", &rd));
    nsend += ns[q];
  }
  k->nsend = (size_t)nsend;
  k->nrecv = (size_t)nrecv;
  PetscCall(PetscMalloc3(k->nsend, &k->sbuf, k->nrecv, &k->rbuf, k->nrecv, &k->gblk));
  PetscCall(PetscFree2(ns, nr));
  PetscFunctionReturn(0);
}

/*
  The blocks of net: one per dense layer, one per group of a conv2d or conv3d layer in batch mode. Other parameterised layers
  are an error, or with uncoveredgradient their parameters are left unpreconditioned. option names the setting that
  allows it, for the error message.
*/
PetscErrorCode PetNetKFACCreate(Net net, PetscBool uncoveredgradient, const char option[], PetNetKFAC *kfac)
{
  PetNetKFAC k;
  PetscInt   nb = 0, nu = 0;
  size_t     nbatch = 0, nfull = 0, nwork = 0, nodeheld = 0, nrecv = 0;
  PetscInt   maxrows = 0, nlayers;

  PetscFunctionBegin;
  PetscCall(NetSetUp(net));
  PetscCall(NetGetNumLayers(net, &nlayers));
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
      PetscBool isdense, isconv, is3d;
      DM        dm = NULL;
      PetscInt  poff;

      PetscCall(NetGetLayer(net, n, &layer));
      if (!layer->nparams) continue;
      PetscCall(NetGetLayerParameterRange(net, n, &poff, NULL));
      PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
      PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV2D, &isconv));
      PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV3D, &is3d));
      isconv = (PetscBool)(isconv || is3d);
      PetscCall(NetGetGrid(net, &dm)); /* grid mode: a convolution's patches span the ranks' halos (NetGetNodePatches()) */
      if (isdense) {
        if (pass) {
          KFACBlock *b = &k->blocks[nb];
          PetscInt   nin, rows;

          PetscCall(LayerDenseGetTokens(layer, NULL, &nin, &rows)); /* dense:N:tokens: n T rows of E inputs, as a conv's pixels */
          b->node   = n;
          b->group  = 0;
          b->nin    = nin;
          b->nout   = layer->outsize / rows;
          b->bias   = PETSC_TRUE;
          b->pixels = rows;
          b->woff   = poff;
          b->boff   = poff + b->nin * b->nout;
        }
        nb++;
      } else if (isconv) {
        PetscInt  G, kg, pixels, cout;
        PetscBool bias;

        PetscCall(KFACConvPatchLayout(layer, is3d, &G, &kg, &pixels, &bias));
        if (dm) pixels = 1;             /* grid mode: the layer acts at each grid point; a field's output points are counted per pass */
        cout = layer->outsize / pixels; /* y [pixels][Cout] per sample */
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
        if (pass && !dm) nwork = PetscMax(nwork, (size_t)pixels * G * kg * PetscMax(1, KFAC_PATCH_ENTRIES / ((size_t)pixels * G * kg)));
      } else {
        if (!uncoveredgradient) PetscCall(PetNetKFACUncoveredError(net, n, option));
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
  PetscCall(KFACSetUpPlacement(k));
  /* the factors this rank holds and the buffers */
  for (PetscInt i = 0; i < k->nblocks; i++) {
    KFACBlock *b        = &k->blocks[i];
    size_t     nodefull = 0, tri;

    b->na    = b->nin + (b->bias ? 1 : 0);
    tri      = (size_t)b->na * (b->na + 1) / 2 + (size_t)b->nout * (b->nout + 1) / 2;
    b->noff  = (i && k->blocks[i - 1].node == b->node) ? k->blocks[i - 1].noff + KFACTriangles(&k->blocks[i - 1]) : 0;
    k->nnode = PetscMax(k->nnode, b->noff + tri);
    /* the A's of all groups of a node are summed side by side */
    for (PetscInt j = i; j >= 0 && k->blocks[j].node == b->node; j--) nodefull += (size_t)k->blocks[j].na * k->blocks[j].na;
    nfull = PetscMax(nfull, PetscMax(nodefull, (size_t)b->nout * b->nout));
    if (!b->noff) nodeheld = 0;
    if (!b->held) continue;
    if (k->owned) nodeheld += tri; /* this rank's part of the node's sums: the blocks it owns */
    nrecv   = PetscMax(nrecv, nodeheld);
    b->aoff = nbatch;
    b->soff = nbatch + (size_t)b->na * (b->na + 1) / 2;
    nbatch += tri;
    PetscCall(PetscCalloc2((size_t)b->na * b->na, &b->A, (size_t)b->na * b->na, &b->Ainv));
    PetscCall(PetscCalloc2((size_t)b->nout * b->nout, &b->S, (size_t)b->nout * b->nout, &b->Sinv));
    nwork   = PetscMax(nwork, 2 * (size_t)b->na * b->nout + (size_t)b->nout * b->nout);
    maxrows = PetscMax(maxrows, b->nout);
  }
  k->nbatch = nbatch;
  k->nwork  = nwork;
  PetscCall(PetscMalloc4(nbatch, &k->batch, nfull, &k->full, nwork, &k->work, maxrows, &k->rows));
  PetscCall(PetscMalloc2(k->nnode, &k->node, nrecv, &k->noderecv));
  if (k->owned)
    PetscCall(KFACSetUpExchange(k));
  else {
    Mat bcast;

    PetscCall(NetGetParameterBroadcast(net, &bcast));
    PetscCall(MatCreateVecs(bcast, NULL, &k->grep));
  }
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
  PetscCall(PetscFree2(k->node, k->noderecv));
  PetscCall(PetscFree5(k->counts, k->scounts, k->sdispls, k->rcounts, k->rdispls));
  PetscCall(PetscFree3(k->sbuf, k->rbuf, k->gblk));
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

/* The upper triangle of the n x n column-major matrix F times scale, column by column, into p */
static void KFACPackUpper(PetscInt n, const PetscScalar *F, PetscReal scale, PetscScalar *p)
{
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = 0; i <= j; i++, p++) *p = scale * F[i + j * n];
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
   of nin values, row stride ld (a group of convolution patches); beta 0 overwrites, 1 accumulates */
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

/* This rank's sums for the blocks [b0, b1) of one node, packed into kfac->node (those of S times sscale) */
static PetscErrorCode KFACSumNode(PetNetKFAC kfac, PetscInt b0, PetscInt b1, PetscInt nfields, PetscReal sscale)
{
  Net                net  = kfac->net;
  const PetscInt     node = kfac->blocks[b0].node;
  PetscInt           n    = 0, nx, G, kg;
  Layer              layer;
  const PetscScalar *x, *dy, *col;
  PetscBool          isdense, is3d;
  DM                 dm;
  size_t             off;

  PetscFunctionBegin;
  PetscCall(NetGetGrid(net, &dm));
  PetscCall(NetGetLayer(net, node, &layer));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV3D, &is3d));
  if (dm && !isdense) { /* grid mode: the patches of the rank's output points (halos gathered), then its cotangent */
    PetscCall(NetGetNodePatches(net, node, &n, &col));
    PetscCall(KFACConvPatchLayout(layer, is3d, &G, &kg, NULL, NULL));
    off = 0;
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      PetscCall(KFACSumInputs(b->nin, b->bias, n, col + b->group * kg, G * kg, 0.0, kfac->full + off));
      off += (size_t)b->na * b->na;
    }
    PetscCall(NetRestoreNodePatches(net, node, NULL, &col));
  }
  PetscCall(NetGetNodeArraysRead(net, node, &nx, &x, &dy)); /* in double at any precision */
  if (!dm || isdense) n = nx;                               /* dense in grid mode: one row a point, its input's count (= its output's) */
  if (isdense && !dm) n *= kfac->blocks[b0].pixels;         /* dense:N:tokens: a row a position */
  if (dm) {                                                 /* a sample is a field: the node's output points per field, counted over the ranks */
    PetscInt64 rows = n;

    PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, &rows, 1, MPIU_INT64, MPI_SUM, PetscObjectComm((PetscObject)net)));
    PetscCheck(rows % nfields == 0 && rows / nfields <= PETSC_MAX_INT, PetscObjectComm((PetscObject)net), PETSC_ERR_PLIB, "K-FAC: layer %" PetscInt_FMT " has %" PetscInt64_FMT " output points over %" PetscInt_FMT " fields", node, rows, nfields);
    for (PetscInt i = b0; i < b1; i++) kfac->blocks[i].pixels = (PetscInt)(rows / nfields);
  }
  if (isdense) {
    KFACBlock *b = &kfac->blocks[b0];

    PetscCall(KFACSumInputs(b->nin, b->bias, n, x, b->nin, 0.0, kfac->full));
    KFACPackUpper(b->na, kfac->full, 1.0, kfac->node + b->noff);
    PetscCall(KFACSumOutputs(b->nout, n, dy, b->nout, kfac->full));
    KFACPackUpper(b->nout, kfac->full, sscale, kfac->node + b->noff + (size_t)b->na * (b->na + 1) / 2);
  } else if (dm) {                        /* the A's summed above, side by side in full; S over the same rows of the output's cotangent */
    const PetscInt cout = layer->outsize; /* one grid point's channels */

    off = 0;
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      KFACPackUpper(b->na, kfac->full + off, 1.0, kfac->node + b->noff);
      off += (size_t)b->na * b->na;
    }
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      PetscCall(KFACSumOutputs(b->nout, n, dy + b->group * b->nout, cout, kfac->full));
      KFACPackUpper(b->nout, kfac->full, sscale, kfac->node + b->noff + (size_t)b->na * (b->na + 1) / 2);
    }
  } else { /* conv2d, conv3d: patches chunk by chunk, the A of each group side by side in full */
    PetscInt P, cout, chunk;

    PetscCall(KFACConvPatchLayout(layer, is3d, &G, &kg, &P, NULL));
    cout  = layer->outsize / P;
    chunk = (PetscInt)PetscMax(1, KFAC_PATCH_ENTRIES / ((size_t)P * G * kg));
    for (PetscInt s0 = 0; s0 < n || s0 == 0; s0 += chunk) {
      PetscInt ns = PetscMin(chunk, n - s0);

      if (ns > 0) PetscCall(KFACConvPatches(layer, is3d, ns, x + (size_t)s0 * layer->insize, kfac->work));
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

      KFACPackUpper(b->na, kfac->full + off, 1.0, kfac->node + b->noff);
      off += (size_t)b->na * b->na;
    }
    for (PetscInt i = b0; i < b1; i++) {
      KFACBlock *b = &kfac->blocks[i];

      PetscCall(KFACSumOutputs(b->nout, n * P, dy + b->group * b->nout, cout, kfac->full));
      KFACPackUpper(b->nout, kfac->full, sscale, kfac->node + b->noff + (size_t)b->na * (b->na + 1) / 2);
    }
  }
  PetscCall(NetRestoreNodeArraysRead(net, node, NULL, &x, &dy));
  PetscFunctionReturn(0);
}

/* The node's sums (kfac->node, blocks [b0, b1)) summed over the ranks into the ranks that hold them, and added to the
   sums of the earlier passes since the last update (add) or put in their place */
static PetscErrorCode KFACReduceNode(PetNetKFAC kfac, PetscInt b0, PetscInt b1, PetscBool add)
{
  MPI_Comm           comm  = PetscObjectComm((PetscObject)kfac->net);
  const KFACBlock   *last  = &kfac->blocks[b1 - 1];
  const PetscScalar *sum   = kfac->node;
  PetscScalar       *acc   = NULL;
  PetscMPIInt        count = 0, rank;
  PetscInt64         n     = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (!kfac->owned) { /* every rank: the whole node */
    PetscCall(KFACCount(comm, (PetscInt64)(last->noff + KFACTriangles(last)), "of one layer's factor sums", &count));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, kfac->node, count, MPIU_SCALAR, MPIU_SUM, comm));
    n   = count;
    acc = kfac->batch + kfac->blocks[b0].aoff;
  } else { /* each owner its blocks: one contiguous piece of the node's sums, as the owners ascend */
    PetscMPIInt size;

    PetscCallMPI(MPI_Comm_size(comm, &size));
    PetscCall(PetscArrayzero(kfac->counts, size));
    for (PetscInt i = b0; i < b1; i++) {
      const KFACBlock *b = &kfac->blocks[i];

      PetscCall(KFACCount(comm, (PetscInt64)kfac->counts[b->owner] + (PetscInt64)KFACTriangles(b), "of one layer's factor sums", &kfac->counts[b->owner]));
      if (b->held && !acc) acc = kfac->batch + b->aoff;
    }
    PetscCallMPI(MPI_Reduce_scatter(kfac->node, kfac->noderecv, kfac->counts, MPIU_SCALAR, MPIU_SUM, comm));
    n   = kfac->counts[rank];
    sum = kfac->noderecv;
  }
  for (PetscInt64 j = 0; j < n; j++) acc[j] = add ? acc[j] + sum[j] : sum[j];
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
  DM        dm;

  PetscFunctionBegin;
  PetscCall(NetGetBatchSize(net, NULL, &nglobal));
  PetscCall(NetGetGrid(net, &dm));
  if (dm && nglobal > 0) { /* grid mode: the samples of the mean loss are the fields, of M N P points of the DMDA each */
    PetscInt M, Ny, P;

    PetscCall(DMDAGetInfo(dm, NULL, &M, &Ny, &P, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    PetscCheck(nglobal % ((PetscInt64)M * Ny * PetscMax(P, 1)) == 0, comm, PETSC_ERR_PLIB, "K-FAC: a batch of %" PetscInt_FMT " grid points is not whole fields of the DMDA", nglobal);
    nglobal /= M * Ny * PetscMax(P, 1);
  }
  PetscCheck(nglobal >= 0, comm, PETSC_ERR_ORDER, "K-FAC takes its statistics from the Net's last NetForward() and NetBackward() of the mean loss, and there is none: the objective must run both on the Net given to K-FAC");
  PetscCheck(nglobal > 0, comm, PETSC_ERR_ARG_WRONGSTATE, "K-FAC statistics need a batch of at least one sample");
  PetscCall(KFACCheckMode(kfac));
  PetscCall(PetscLogEventBegin(PETNET_KFACStatistics, 0, 0, 0, 0));
  if (!add) kfac->nfirst = nglobal;
  sscale = ((PetscReal)nglobal * nglobal) / ((PetscReal)kfac->nfirst * kfac->nfirst);
  for (PetscInt b0 = 0, b1; b0 < kfac->nblocks; b0 = b1) {
    for (b1 = b0 + 1; b1 < kfac->nblocks && kfac->blocks[b1].node == kfac->blocks[b0].node; b1++) {}
    PetscCall(KFACSumNode(kfac, b0, b1, nglobal, sscale));
    PetscCall(KFACReduceNode(kfac, b0, b1, add));
  }
  kfac->nsamples += nglobal;
  PetscCall(PetscLogEventEnd(PETNET_KFACStatistics, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* Adds the last pass (PetNetKFACAddStatistics()) and folds the factors of all passes since the last update into the
   running averages */
PetscErrorCode PetNetKFACUpdateStatistics(PetNetKFAC kfac)
{
  PetscReal w = kfac->nupdates ? kfac->decay : 0.0, N, Sscale;

  PetscFunctionBegin;
  PetscCall(PetNetKFACAddStatistics(kfac));
  PetscCall(PetscLogEventBegin(PETNET_KFACStatistics, 0, 0, 0, 0));
  N      = (PetscReal)kfac->nsamples;
  Sscale = ((PetscReal)kfac->nfirst * kfac->nfirst) / N; /* S = (1/N) sum (N1 dact)(N1 dact)^T over the passes */
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    KFACBlock *b = &kfac->blocks[i];

    if (!b->held) continue;
    KFACAverage(b->na, kfac->batch + b->aoff, (1 - w) / (N * b->pixels), w, b->A); /* A: mean over samples and pixels */
    KFACAverage(b->nout, kfac->batch + b->soff, (1 - w) * Sscale, w, b->S);
  }
  kfac->nsamples = 0;
  kfac->nupdates++;
  PetscCall(PetscLogEventEnd(PETNET_KFACStatistics, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* Finv = (F + d I)^{-1} for the n x n symmetric positive definite F; *pivot > 0: not positive definite at that pivot */
static PetscErrorCode KFACInvertDamped(Net net, const KFACBlock *b, const char which[], PetscInt n, const PetscScalar *F, PetscReal d, PetscScalar *Finv, PetscInt *pivot)
{
  PetscBLASInt bn, info;
  const char  *name;

  PetscFunctionBegin;
  PetscCall(PetscArraycpy(Finv, F, (size_t)n * n));
  for (PetscInt i = 0; i < n; i++) Finv[i + i * n] += d;
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKpotrf", LAPACKpotrf_("U", &bn, Finv, &bn, &info));
  PetscCall(PetscFPTrapPop());
  PetscCheck(info >= 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotrf: argument %d is invalid", (int)-info);
  *pivot = info;
  if (info) PetscFunctionReturn(0); /* the caller says so on every rank */
  PetscCallBLAS("LAPACKpotri", LAPACKpotri_("U", &bn, Finv, &bn, &info));
  PetscCall(NetGetLayerName(net, b->node, &name));
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotri failed with info %d on the K-FAC factor %s of layer \"%s\"", (int)info, which, name);
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = j + 1; i < n; i++) Finv[i + j * n] = Finv[j + i * n];
  PetscCall(PetscLogFlops((PetscLogDouble)n * n * n));
  PetscFunctionReturn(0);
}

/* The damped inverses of the blocks this rank holds, from the current averages; a factor that is not positive
   definite is reported by every rank (in the owner placement only its owner sees it) */
PetscErrorCode PetNetKFACInvert(PetNetKFAC kfac)
{
  MPI_Comm        comm   = PetscObjectComm((PetscObject)kfac->net);
  const PetscReal gamma  = PetscSqrtReal(kfac->damping);
  PetscInt        bad[3] = {kfac->nblocks, 0, 0}, worst[3]; /* the first block that failed, its factor (0: A, 1: S), pivot */

  PetscFunctionBegin;
  PetscCheck(kfac->nupdates > 0, comm, PETSC_ERR_ORDER, "K-FAC has no statistics to invert yet: update them from a forward and backward pass first");
  PetscCall(PetscLogEventBegin(PETNET_KFACInvert, 0, 0, 0, 0));
  for (PetscInt i = 0; i < kfac->nblocks && bad[0] == kfac->nblocks; i++) {
    KFACBlock *b  = &kfac->blocks[i];
    PetscReal  ta = 0, ts = 0;
    PetscInt   pivot;

    if (!b->held) continue;
    for (PetscInt j = 0; j < b->na; j++) ta += PetscRealPart(b->A[j + j * b->na]);
    for (PetscInt j = 0; j < b->nout; j++) ts += PetscRealPart(b->S[j + j * b->nout]);
    ta /= b->na;
    ts /= b->nout;
    b->pi = (ta > 0 && ts > 0) ? PetscSqrtReal(ta / ts) : 1.0;
    PetscCall(KFACInvertDamped(kfac->net, b, "A", b->na, b->A, b->pi * gamma, b->Ainv, &pivot));
    if (pivot)
      bad[0] = i, bad[1] = 0, bad[2] = pivot;
    else {
      PetscCall(KFACInvertDamped(kfac->net, b, "S", b->nout, b->S, gamma / b->pi, b->Sinv, &pivot));
      if (pivot) bad[0] = i, bad[1] = 1, bad[2] = pivot;
    }
  }
  PetscCall(MPIU_Allreduce(bad, worst, 1, MPIU_INT, MPI_MIN, comm));
  if (worst[0] < kfac->nblocks) {
    const KFACBlock *b = &kfac->blocks[worst[0]];
    const char      *name;

    PetscCallMPI(MPI_Bcast(bad + 1, 2, MPIU_INT, b->owner < 0 ? 0 : b->owner, comm)); /* the owner's factor and pivot */
    PetscCall(NetGetLayerName(kfac->net, b->node, &name));
    SETERRQ(comm, PETSC_ERR_CONV_FAILED, "The K-FAC factor %s of layer \"%s\" (group %" PetscInt_FMT ") is not positive definite after damping (pivot %" PetscInt_FMT "): raise the damping, or look for Inf or NaN in the network", bad[1] ? "S" : "A",
            name, b->group, bad[2]);
  }
  kfac->ninverted = kfac->nupdates;
  PetscCall(PetscLogEventEnd(PETNET_KFACInvert, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  Owner placement: y = F^{-1} g on the blocks, y = g (already copied) elsewhere. The pieces of each block's gradient
  go to its owner (MPI_Alltoallv), the owner computes R = A^{-1} G^T S^{-1} in place in gblk, and the pieces go back.
  rs, re: this rank's slice of the Vecs.
*/
static PetscErrorCode KFACApplyOwned(PetNetKFAC kfac, Vec g, Vec y, PetscInt rs, PetscInt re)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)kfac->net);
  const PetscScalar *ga, one = 1.0, zero = 0.0;
  PetscScalar       *ya;
  const PetscInt    *ranges;
  PetscMPIInt        size;
  size_t             c;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(VecGetOwnershipRanges(g, &ranges));
  /* this rank's pieces of every block, in the order of the blocks (and so of their owners) */
  PetscCall(VecGetArrayRead(g, &ga));
  c = 0;
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    PetscInt start[2], len[2], nruns = KFACBlockRuns(&kfac->blocks[i], start, len);

    for (PetscInt r = 0; r < nruns; r++) {
      PetscInt a = PetscMax(start[r], rs), n = KFACOverlap(start[r], len[r], rs, re);

      if (n) PetscCall(PetscArraycpy(kfac->sbuf + c, ga + a - rs, n));
      c += (size_t)n;
    }
  }
  PetscCall(VecRestoreArrayRead(g, &ga));
  PetscCallMPI(MPI_Alltoallv(kfac->sbuf, kfac->scounts, kfac->sdispls, MPIU_SCALAR, kfac->rbuf, kfac->rcounts, kfac->rdispls, MPIU_SCALAR, comm));
  /* the owner's blocks, whole: from rank q the pieces of its blocks in q's slice, block by block, run by run */
  for (PetscInt pass = 0; pass < 2; pass++) { /* 0: rbuf -> gblk; 1: gblk -> rbuf */
    c = 0;
    for (PetscMPIInt q = 0; q < size; q++)
      for (PetscInt i = 0; i < kfac->nblocks; i++) {
        const KFACBlock *b = &kfac->blocks[i];
        PetscInt         start[2], len[2], nruns, off = 0;

        if (!b->held) continue;
        nruns = KFACBlockRuns(b, start, len);
        for (PetscInt r = 0; r < nruns; off += len[r], r++) {
          PetscInt     a = PetscMax(start[r], ranges[q]), n = KFACOverlap(start[r], len[r], ranges[q], ranges[q + 1]);
          PetscScalar *blk = kfac->gblk + b->goff + off + (a - start[r]);

          if (n && pass)
            PetscCall(PetscArraycpy(kfac->rbuf + c, blk, n));
          else if (n)
            PetscCall(PetscArraycpy(blk, kfac->rbuf + c, n));
          c += (size_t)n;
        }
      }
    if (pass) break;
    /* R = A^{-1} M S^{-1} with M = G^T (column o: the weights of row o, then its bias), written back over G */
    for (PetscInt i = 0; i < kfac->nblocks; i++) {
      const KFACBlock *b  = &kfac->blocks[i];
      const PetscInt   na = b->na, nin = b->nin, nout = b->nout;
      PetscScalar     *G = NULL, *M = kfac->work, *T = M + (size_t)na * nout;
      PetscBLASInt     bna, bnout;

      if (!b->held) continue;
      G = kfac->gblk + b->goff; /* weights [nout][nin], then bias [nout] */
      for (PetscInt o = 0; o < nout; o++) {
        PetscCall(PetscArraycpy(M + (size_t)o * na, G + (size_t)o * nin, nin));
        if (b->bias) M[(size_t)o * na + nin] = G[(size_t)nout * nin + o];
      }
      PetscCall(PetscBLASIntCast(na, &bna));
      PetscCall(PetscBLASIntCast(nout, &bnout));
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bna, &bnout, &bnout, &one, M, &bna, b->Sinv, &bnout, &zero, T, &bna)); /* T = M S^{-1} */
      PetscCallBLAS("BLASgemm", BLASgemm_("N", "N", &bna, &bnout, &bna, &one, b->Ainv, &bna, T, &bna, &zero, M, &bna));     /* R = A^{-1} T */
      PetscCall(PetscLogFlops(2.0 * na * nout * (nout + na)));
      for (PetscInt o = 0; o < nout; o++) {
        PetscCall(PetscArraycpy(G + (size_t)o * nin, M + (size_t)o * na, nin));
        if (b->bias) G[(size_t)nout * nin + o] = M[(size_t)o * na + nin];
      }
    }
  }
  PetscCallMPI(MPI_Alltoallv(kfac->rbuf, kfac->rcounts, kfac->rdispls, MPIU_SCALAR, kfac->sbuf, kfac->scounts, kfac->sdispls, MPIU_SCALAR, comm));
  PetscCall(VecGetArray(y, &ya));
  c = 0;
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    PetscInt start[2], len[2], nruns = KFACBlockRuns(&kfac->blocks[i], start, len);

    for (PetscInt r = 0; r < nruns; r++) {
      PetscInt a = PetscMax(start[r], rs), n = KFACOverlap(start[r], len[r], rs, re);

      if (n) PetscCall(PetscArraycpy(ya + a - rs, kfac->sbuf + c, n));
      c += (size_t)n;
    }
  }
  PetscCall(VecRestoreArray(y, &ya));
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

  PetscFunctionBegin;
  PetscCheck(kfac->ninverted >= 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "K-FAC has no inverses yet: compute them before applying them");
  PetscCall(KFACCheckMode(kfac));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetLocalSize(g, &n));
  PetscCall(VecGetLocalSize(theta, &m));
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "K-FAC: the vector has %" PetscInt_FMT " local entries, the Net's parameters %" PetscInt_FMT ": lay it out like the Net's parameters (NetCreateParameterVec())", n, m);
  PetscCall(PetscLogEventBegin(PETNET_KFACApply, 0, 0, 0, 0));
  if (g != y) PetscCall(VecCopy(g, y)); /* the parameters outside the blocks */
  PetscCall(VecGetOwnershipRange(y, &rs, &re));
  if (kfac->owned) {
    PetscCall(KFACApplyOwned(kfac, g, y, rs, re));
    PetscCall(PetscLogEventEnd(PETNET_KFACApply, 0, 0, 0, 0));
    PetscFunctionReturn(0);
  }
  {
    Mat bcast;

    PetscCall(NetGetParameterBroadcast(net, &bcast));
    PetscCall(MatMult(bcast, g, kfac->grep));
  }
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
    char             where[64] = "";

    PetscCall(NetGetLayer(net, b->node, &layer));
    PetscCall(NetGetLayerName(net, b->node, &name));
    PetscCall(LayerGetType(layer, &type));
    if (b->owner >= 0) PetscCall(PetscSNPrintf(where, sizeof(where), ", kept by rank %d", b->owner));
    if (b->group || (i + 1 < kfac->nblocks && kfac->blocks[i + 1].node == b->node))
      PetscCall(PetscViewerASCIIPrintf(viewer, "layer \"%s\" (%s), group %" PetscInt_FMT ": A %" PetscInt_FMT " x %" PetscInt_FMT ", S %" PetscInt_FMT " x %" PetscInt_FMT "%s\n", name, type, b->group, b->na, b->na, b->nout, b->nout, where));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "layer \"%s\" (%s): A %" PetscInt_FMT " x %" PetscInt_FMT ", S %" PetscInt_FMT " x %" PetscInt_FMT "%s\n", name, type, b->na, b->na, b->nout, b->nout, where));
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

/* The entries of the factors and their inverses (A, S, A^{-1}, S^{-1}) this rank holds, and those of one copy of all */
PetscErrorCode PetNetKFACGetFactorEntries(PetNetKFAC kfac, PetscInt64 *held, PetscInt64 *onecopy)
{
  PetscFunctionBegin;
  *held = *onecopy = 0;
  for (PetscInt i = 0; i < kfac->nblocks; i++) {
    const KFACBlock *b = &kfac->blocks[i];
    PetscInt64       n = 2 * ((PetscInt64)b->na * b->na + (PetscInt64)b->nout * b->nout);

    *onecopy += n;
    if (b->held) *held += n;
  }
  PetscFunctionReturn(0);
}
