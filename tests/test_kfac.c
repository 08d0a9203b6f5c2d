static const char help[] = "K-FAC (src/optim/kfac*.c): the blockwise inverse against a dense computation, rank invariance, bad input.\n"
                           "  -case inverse   : on tiny networks (dense, conv2d with groups, padding and stride, no bias, batchnorm left\n"
                           "                    unpreconditioned), the factors A = E[a a^T], S = E[g g^T] are recomputed here from the\n"
                           "                    forward and backward pass with naive loops (conv2d patches from the geometry), damped,\n"
                           "                    and (Sd kron Ad) x = v is solved densely with LAPACK per block: the K-FAC preconditioner's\n"
                           "                    F^{-1} v must agree to 1e-10; one kfac step must be x0 - lr F^{-1} g, and with KL clipping\n"
                           "                    x0 - lr nu F^{-1} g, nu = sqrt(kappa / (lr^2 g.F^{-1} g))\n"
                           "                    (-samples N: the batch size, default 7; fewer than the ranks leaves some without samples)\n"
                           "                    the same factors from two passes over halves of the batch (PetNetPCKFACAddStatistics())\n"
                           "                    agree with one pass to 1e-12\n"
                           "  -case ranks     : 6 kfac steps (momentum, weight decay, KL clip, running averages, inverses every 2) on\n"
                           "                    PETSC_COMM_WORLD with the batch split equal the same on PETSC_COMM_SELF to 1e-11\n"
                           "  -kfac_conv3d    : -case ranks on a conv3d network (groups, padding, stride), whose 6 steps must also lower\n"
                           "                    the mean loss over the batches to at most 0.9 of it\n"
                           "  -case sharded   : 6 kfac steps as in -case ranks with -net_parallel sharded, with model-parallel nodes\n"
                           "                    (-net_parallel model; a dense layer with partition=Px1 in sharded mode) equal the\n"
                           "                    replicated run on the same ranks to 1e-12 (double) and to 10 L u (single, u = 2^-24, L\n"
                           "                    nodes); the ranks hold disjoint factors adding up to one copy (replicated: a copy each)\n"
                           "  -kfac_parallel M: the Net's parallel mode in -case inverse (replicated, sharded, model)\n"
                           "  -case modechange: a K-FAC preconditioner placed for replicated mode, applied after the Net went sharded,\n"
                           "                    must fail naming both modes (an _error test)\n"
                           "  -case uncovered : kfac on a network with batchnorm must fail naming the layer (an _error test)\n"
                           "  -case nonet     : kfac without a Net must fail (an _error test)\n"
                           "  -case placed    : 6 kfac steps as in -case ranks on a placed Net (the factors' statistics read in each node's\n"
                           "                    group layout, from the moves' buffers where a value crosses groups) equal the unplaced\n"
                           "                    run on PETSC_COMM_SELF to 1e-12, and the ranks hold disjoint factors adding up to one\n"
                           "                    copy: -kfac_stages S -kfac_microbatches M [-kfac_schedule 1f1b] (the conv network of\n"
                           "                    -case ranks in S stages), or -kfac_subgraph (a graph of a conv branch and a dense\n"
                           "                    branch from the input, -net_parallel subgraph); -samples N: the batch (default 12)\n"
                           "  -case grid      : K-FAC's F^{-1} g of a conv2d Net (conv3d with -kfac_conv3d) on 3 fields of a DMDA in grid\n"
                           "                    mode equals that of the same Net in batch mode on one rank to 1e-11; with\n"
                           "                    -net_spatial_groups 2 -layer2_partition 2x1 it must fail (an _error test)\n";
#include <petscdmda.h>

#include <petnet.h>
#include <petnetoptim.h>
#include <petnet/private/netimpl.h> /* the activations and cotangents of the pass, for the reference factors */
#include <petscblaslapack.h>
#include "testutil.h"

#define NCLASS 3

static NetParallelType parallel = NET_PARALLEL_REPLICATED; /* -kfac_parallel: the mode of the Nets of ProblemCreate() */
static PetscBool       conv3d   = PETSC_FALSE;             /* -kfac_conv3d: -case ranks on the conv3d network */

/* -case placed: the placement ProblemCreate() gives the Nets on PETSC_COMM_WORLD while place is set */
static struct {
  PetscBool           place, subgraph;
  PetscInt            stages, micro;
  NetPipelineSchedule schedule;
} placement = {PETSC_FALSE, PETSC_FALSE, 1, 1, NET_PIPELINE_GPIPE};

/* the network of -case ranks: conv2d (default) or conv3d (-kfac_conv3d); -case placed -kfac_subgraph: a graph whose two
   branches from the input (a convolution and a dense layer) join before the head */
static void RanksNet(const char **layers, PetNetShape *in)
{
  if (placement.subgraph) {
    *layers = "a=conv2d:4:3:1:1:groups=2<-input;b=tanh;c=flatten;d=dense:6;e=flatten<-input;f=dense:6;g=relu;j=add<-d,g;h=tanh;out=dense:3";
    *in     = (PetNetShape){3, {6, 6, 2}};
  } else if (conv3d) {
    *layers = "conv3d:4:3:1:1:groups=2,tanh,conv3d:3:2:2:0,flatten,dense:5,relu,dense:3";
    *in     = (PetNetShape){4, {4, 4, 4, 2}};
  } else {
    *layers = "conv2d:4:3:1:1:groups=2,tanh,conv2d:3:2:2:0,flatten,dense:5,relu,dense:3";
    *in     = (PetNetShape){3, {6, 6, 2}};
  }
}

typedef struct {
  const char *layers;
  PetNetShape in;
  PetscBool   uncovered; /* has a layer K-FAC does not cover: give -pc_kfac_uncovered_gradient */
} Case;

static const Case cases[] = {
    {"dense:4,tanh,dense:3", {1, {5}}, PETSC_FALSE},
    {"conv2d:4:3:1:1:groups=2,tanh,conv2d:3:2:2:0:bias=0,flatten,dense:3", {3, {5, 5, 2}}, PETSC_FALSE},
    {"conv2d:2:3:2:1,relu,flatten,dense:3", {3, {4, 5, 1}}, PETSC_FALSE},
    {"conv3d:4:3:1:1:groups=2,tanh,conv3d:3:2:2:0:bias=0,flatten,dense:3", {4, {3, 4, 4, 2}}, PETSC_FALSE},
    {"dense:4,batchnorm,tanh,dense:3", {1, {3}}, PETSC_TRUE},
    {"dense:4:tokens,tanh,dense:3:tokens,tanh,dense:3", {2, {3, 5}}, PETSC_FALSE}, /* the rows of a tokens dense: its positions */
};

/* Everything of one batch: the Net, the loss and the data, and the objective a Tao sees (NetForward, LossEvaluate,
   NetBackward of batch ibatch) */
typedef struct {
  Net       net;
  Loss      loss;
  PetscInt  nbatches, ibatch;
  Vec       X[3], T[3], Y, dY;
  PetscBool fb; /* the pass by LossNetForwardBackward() (a placed Net, as the Trainer takes it: 1F1B needs it) */
} Problem;

static PetscErrorCode ProblemObjective(Tao tao, Vec x, PetscReal *f, Vec G, void *ctx)
{
  Problem *p = (Problem *)ctx;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(p->net, x));
  if (p->fb) {
    PetscCall(VecZeroEntries(G));
    PetscCall(LossNetForwardBackward(p->loss, p->net, p->X[p->ibatch], p->T[p->ibatch], p->Y, f, NULL, G));
    PetscFunctionReturn(0);
  }
  PetscCall(NetForward(p->net, p->X[p->ibatch], p->Y));
  PetscCall(LossEvaluate(p->loss, p->Y, p->T[p->ibatch], f, p->dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(p->net, p->dY, NULL, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode ProblemNextBatch(Tao tao, PetscInt it, void *ctx)
{
  Problem *p = (Problem *)ctx;

  PetscFunctionBegin;
  p->ibatch = it % p->nbatches;
  PetscFunctionReturn(0);
}

/* nbatches batches of N samples (n on this rank) of the global tables (inputs in [-1.5, 1.5], labels (3i + 1) mod 3) */
static PetscErrorCode ProblemCreate(MPI_Comm comm, const char layers[], const PetNetShape *in, PetscInt nbatches, PetscInt N, PetscInt n, Problem *p)
{
  PetscRandom  rnd;
  PetscInt     insize;
  PetscScalar *xtab, *ttab;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(p, sizeof(*p)));
  PetscCall(NetCreate(comm, &p->net));
  if (strstr(layers, "<-"))
    PetscCall(NetSetGraph(p->net, layers)); /* a graph of named nodes */
  else
    PetscCall(NetSetLayers(p->net, layers));
  PetscCall(NetSetInputShape(p->net, in));
  PetscCall(NetSetSeed(p->net, 7));
  PetscCall(NetSetParallel(p->net, parallel));
  if (placement.place && comm == PETSC_COMM_WORLD) { /* -case placed: the Net on PETSC_COMM_WORLD only */
    PetscCall(NetSetStages(p->net, placement.stages));
    PetscCall(NetSetMicroBatches(p->net, placement.micro));
    PetscCall(NetSetPipelineSchedule(p->net, placement.schedule));
    if (placement.subgraph) PetscCall(NetSetParallel(p->net, NET_PARALLEL_SUBGRAPH));
    p->fb = PETSC_TRUE;
  }
  PetscCall(NetSetUp(p->net));
  PetscCall(LossCreate(comm, &p->loss));
  PetscCall(LossSetType(p->loss, LOSSCROSSENTROPY));
  PetscCall(PetNetShapeSize(in, &insize));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.5, 1.5));
  PetscCall(PetscRandomSetSeed(rnd, 23));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc2(N * insize, &xtab, N, &ttab));
  p->nbatches = nbatches;
  for (PetscInt b = 0; b < nbatches; b++) {
    for (PetscInt i = 0; i < N * insize; i++) PetscCall(PetscRandomGetValue(rnd, &xtab[i]));
    for (PetscInt i = 0; i < N; i++) ttab[i] = (PetscScalar)((3 * i + 1 + b) % NCLASS);
    PetscCall(NetCreateVecs(p->net, n, &p->X[b], b ? NULL : &p->Y));
    PetscCall(VecCreateMPI(comm, n, N, &p->T[b]));
    PetscCall(FillFromTable(p->X[b], xtab));
    PetscCall(FillFromTable(p->T[b], ttab));
  }
  PetscCall(VecDuplicate(p->Y, &p->dY));
  PetscCall(PetscFree2(xtab, ttab));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

static PetscErrorCode ProblemDestroy(Problem *p)
{
  PetscFunctionBegin;
  for (PetscInt b = 0; b < p->nbatches; b++) {
    PetscCall(VecDestroy(&p->X[b]));
    PetscCall(VecDestroy(&p->T[b]));
  }
  PetscCall(VecDestroy(&p->Y));
  PetscCall(VecDestroy(&p->dY));
  PetscCall(LossDestroy(&p->loss));
  PetscCall(NetDestroy(&p->net));
  PetscFunctionReturn(0);
}

/* The whole of v on every rank (a new array) */
static PetscErrorCode GatherAll(Vec v, PetscScalar **all)
{
  VecScatter         sc;
  Vec                w;
  const PetscScalar *a;
  PetscInt           N;

  PetscFunctionBegin;
  PetscCall(VecScatterCreateToAll(v, &sc, &w));
  PetscCall(VecScatterBegin(sc, v, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, v, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetSize(w, &N));
  PetscCall(PetscMalloc1(N, all));
  PetscCall(VecGetArrayRead(w, &a));
  PetscCall(PetscArraycpy(*all, a, N));
  PetscCall(VecRestoreArrayRead(w, &a));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

/* The conv2d/conv3d geometry, read back from the layer's spec "conv<N>d:OUT:K:STRIDE:PAD[:groups=G][:bias=0]" (cubic K) */
typedef struct {
  PetscInt  cout, k, stride, pad, groups;
  PetscBool bias;
} ConvGeometry;

static PetscErrorCode ParseConv(Layer layer, ConvGeometry *g)
{
  char  spec[256], *s, *tok;
  int   field = 0;
  char *save  = NULL;

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  *g = (ConvGeometry){0, 3, 1, 0, 1, PETSC_TRUE};
  s  = spec;
  for (tok = strtok_r(s, ":", &save); tok; tok = strtok_r(NULL, ":", &save), field++) {
    if (!strncmp(tok, "groups=", 7))
      g->groups = atoi(tok + 7);
    else if (!strncmp(tok, "bias=", 5))
      g->bias = (PetscBool)(atoi(tok + 5) != 0);
    else if (!strncmp(tok, "dilation=", 9))
      PetscCheck(atoi(tok + 9) == 1, PETSC_COMM_SELF, PETSC_ERR_SUP, "The reference handles no dilation");
    else if (field == 1)
      g->cout = atoi(tok);
    else if (field == 2)
      g->k = atoi(tok);
    else if (field == 3)
      g->stride = atoi(tok);
    else if (field == 4)
      g->pad = atoi(tok);
  }
  PetscFunctionReturn(0);
}

/*
  The reference F^{-1} v for the blocks of node k, written into y (global arrays): A and S from the gathered input x
  [N][in] and cotangent dy [N][out] of the pass, by naive loops; damped as K-FAC documents; (Sd kron Ad) z = v solved
  densely (dgesv) in the row-major (o, i) order, i = nin for the bias.
*/
static PetscErrorCode ReferenceNode(Net net, PetscInt k, PetscInt N, const PetscScalar *x, const PetscScalar *dy, PetscReal lambda, const PetscScalar *v, PetscScalar *y)
{
  Layer        layer = net->layers[k];
  PetscBool    isdense;
  ConvGeometry cg = {0};
  PetscInt     G, nin, nout, P, D = 1, H = 1, W = 1, Cin, Do = 1, Ho = 1, Wo = 1, Cout, KD = 1, poff = net->poff[k];
  PetscBool    bias, is3d;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV3D, &is3d));
  if (isdense) { /* dense:N:tokens: P = T positions of nin = E inputs, as a convolution's pixels */
    PetscCall(LayerDenseGetTokens(layer, NULL, &nin, &P));
    G = 1, nout = layer->outsize / P, bias = PETSC_TRUE, Cin = nin, Cout = nout;
  } else {
    const PetscInt d0 = is3d ? 1 : 0; /* conv3d: (D, H, W, C); conv2d: (H, W, C) */

    PetscCall(ParseConv(layer, &cg));
    if (is3d) D = layer->in.dim[0], Do = layer->out.dim[0], KD = cg.k;
    H = layer->in.dim[d0], W = layer->in.dim[d0 + 1], Cin = layer->in.dim[d0 + 2];
    Ho = layer->out.dim[d0], Wo = layer->out.dim[d0 + 1], Cout = layer->out.dim[d0 + 2];
    PetscCheck(Cout == cg.cout, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Spec parsing");
    G = cg.groups, nin = KD * cg.k * cg.k * Cin / G, nout = Cout / G, P = Do * Ho * Wo, bias = cg.bias;
  }
  for (PetscInt g = 0; g < G; g++) {
    const PetscInt na = nin + (bias ? 1 : 0), nk = na * nout;
    PetscScalar   *A, *S, *K, *a, *gv, *z;
    PetscReal      ta = 0, ts = 0, pi;
    PetscBLASInt   bnk, one   = 1, info, *ipiv;

    PetscCall(PetscCalloc6(na * na, &A, nout * nout, &S, nk * nk, &K, na, &a, nout, &gv, nk, &z));
    PetscCall(PetscMalloc1(nk, &ipiv));
    for (PetscInt s = 0; s < N; s++)
      for (PetscInt p = 0; p < P; p++) {
        const PetscInt od = p / (Ho * Wo), oh = (p / Wo) % Ho, ow = p % Wo;

        if (isdense)
          for (PetscInt i = 0; i < nin; i++) a[i] = x[(s * P + p) * nin + i];
        else
          for (PetscInt kd = 0; kd < KD; kd++)
            for (PetscInt kh = 0; kh < cg.k; kh++)
              for (PetscInt kw = 0; kw < cg.k; kw++)
                for (PetscInt c = 0; c < Cin / G; c++) {
                  PetscInt  id = is3d ? od * cg.stride - cg.pad + kd : 0, ih = oh * cg.stride - cg.pad + kh, iw = ow * cg.stride - cg.pad + kw;
                  PetscBool in = (PetscBool)(id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W);

                  a[((kd * cg.k + kh) * cg.k + kw) * (Cin / G) + c] = in ? x[(((s * D + id) * H + ih) * W + iw) * Cin + g * (Cin / G) + c] : 0.0;
                }
        if (bias) a[nin] = 1.0;
        for (PetscInt o = 0; o < nout; o++) gv[o] = N * dy[(s * P + p) * Cout + g * nout + o];
        for (PetscInt i = 0; i < na; i++)
          for (PetscInt j = 0; j < na; j++) A[i * na + j] += a[i] * a[j] / (N * P);
        for (PetscInt i = 0; i < nout; i++)
          for (PetscInt j = 0; j < nout; j++) S[i * nout + j] += gv[i] * gv[j] / N;
      }
    for (PetscInt i = 0; i < na; i++) ta += PetscRealPart(A[i * na + i]) / na;
    for (PetscInt i = 0; i < nout; i++) ts += PetscRealPart(S[i * nout + i]) / nout;
    pi = PetscSqrtReal(ta / ts);
    for (PetscInt i = 0; i < na; i++) A[i * na + i] += pi * PetscSqrtReal(lambda);
    for (PetscInt i = 0; i < nout; i++) S[i * nout + i] += PetscSqrtReal(lambda) / pi;
    /* K[(o,i), (o',i')] = Sd[o][o'] Ad[i][i'] (symmetric, so row or column major alike) */
    for (PetscInt o = 0; o < nout; o++)
      for (PetscInt i = 0; i < na; i++)
        for (PetscInt o2 = 0; o2 < nout; o2++)
          for (PetscInt i2 = 0; i2 < na; i2++) K[(o * na + i) * nk + o2 * na + i2] = S[o * nout + o2] * A[i * na + i2];
    /* right-hand side: v in the (o, i) order; weights of group g: rows g nout .. of W [Cout][nin], bias after W */
    for (PetscInt o = 0; o < nout; o++) {
      for (PetscInt i = 0; i < nin; i++) z[o * na + i] = v[poff + (g * nout + o) * nin + i];
      if (bias) z[o * na + nin] = v[poff + Cout * nin + g * nout + o];
    }
    PetscCall(PetscBLASIntCast(nk, &bnk));
    PetscCallBLAS("LAPACKgesv", LAPACKgesv_(&bnk, &one, K, &bnk, ipiv, z, &bnk, &info));
    PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "dgesv failed: %d", (int)info);
    for (PetscInt o = 0; o < nout; o++) {
      for (PetscInt i = 0; i < nin; i++) y[poff + (g * nout + o) * nin + i] = z[o * na + i];
      if (bias) y[poff + Cout * nin + g * nout + o] = z[o * na + nin];
    }
    PetscCall(PetscFree6(A, S, K, a, gv, z));
    PetscCall(PetscFree(ipiv));
  }
  PetscFunctionReturn(0);
}

/* |a - b| / |b| over n entries */
static PetscReal ArrayRelErr(PetscInt n, const PetscScalar *a, const PetscScalar *b)
{
  PetscReal d = 0, s = 0;

  for (PetscInt i = 0; i < n; i++) {
    d += PetscRealPart((a[i] - b[i]) * PetscConj(a[i] - b[i]));
    s += PetscRealPart(b[i] * PetscConj(b[i]));
  }
  return PetscSqrtReal(d / PetscMax(s, 1e-300));
}

/* One kfac step (lr, damping, optional KL clip) from the point of the pass; returns x1 (global array) */
static PetscErrorCode KFACOneStep(Problem *p, PetscReal lr, PetscReal lambda, PetscReal klclip, PetscScalar **x1)
{
  Tao tao;
  Vec x;

  PetscFunctionBegin;
  PetscCall(TaoCreate(PetscObjectComm((PetscObject)p->net), &tao));
  PetscCall(TaoSetType(tao, TAOKFAC));
  PetscCall(NetCreateParameterVec(p->net, &x));
  PetscCall(VecCopy(p->net->theta, x));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, ProblemObjective, p));
  PetscCall(PetNetTaoKFACSetNet(tao, p->net));
  PetscCall(PetNetTaoSetLearningRate(tao, lr));
  PetscCall(PetNetTaoKFACSetDamping(tao, lambda));
  PetscCall(PetNetTaoKFACSetKLClip(tao, klclip));
  PetscCall(PetNetTaoKFACSetUncoveredGradient(tao, PETSC_TRUE));
  PetscCall(TaoSetMaximumIterations(tao, 1));
  PetscCall(TaoSolve(tao));
  PetscCall(GatherAll(x, x1));
  PetscCall(VecDestroy(&x));
  PetscCall(TaoDestroy(&tao));
  PetscFunctionReturn(0);
}

/*
  The statistics of the batch in two passes (each rank's first half of its samples, then the second half; each pass
  with the cotangents of its own mean loss), PetNetPCKFACAddStatistics() then PetNetPCKFACUpdateStatistics(), must
  give the preconditioner of the single pass, y1 = F^{-1} v (global array), to 1e-12. Skipped when a pass would be
  empty on every rank. (Not for batchnorm in training mode, whose output depends on the batch it normalises.)
*/
static PetscErrorCode CheckChunks(Problem *p, Vec v, const PetscScalar *y1, PetscInt nparams)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)p->net);
  PetscInt           nin, n, h[2], H[2];
  const PetscScalar *x, *t;
  PC                 pc;
  Vec                y;
  PetscScalar       *ya;
  PetscReal          err;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(p->T[0], &n));
  PetscCall(VecGetLocalSize(p->X[0], &nin));
  nin  = n ? nin / n : 0;
  h[0] = (n + 1) / 2;
  h[1] = n - h[0];
  PetscCall(MPIU_Allreduce(h, H, 2, MPIU_INT, MPI_SUM, comm));
  if (!H[0] || !H[1]) PetscFunctionReturn(0);
  PetscCall(PCCreate(comm, &pc));
  PetscCall(PetscOptionsSetValue(NULL, "-pc_kfac_damping", "0.03"));
  PetscCall(PetNetPCSetKFAC(pc, p->net));
  PetscCall(PetscOptionsClearValue(NULL, "-pc_kfac_damping"));
  PetscCall(VecGetArrayRead(p->X[0], &x));
  PetscCall(VecGetArrayRead(p->T[0], &t));
  for (PetscInt c = 0, start = 0; c < 2; start += h[c], c++) {
    Vec       Xc, Tc, Yc, dYc;
    PetscReal f;

    PetscCall(VecCreateMPIWithArray(comm, 1, h[c] * nin, PETSC_DETERMINE, x + start * nin, &Xc));
    PetscCall(VecCreateMPIWithArray(comm, 1, h[c], PETSC_DETERMINE, t + start, &Tc));
    PetscCall(NetCreateVecs(p->net, h[c], NULL, &Yc));
    PetscCall(VecDuplicate(Yc, &dYc));
    PetscCall(NetForward(p->net, Xc, Yc));
    PetscCall(LossEvaluate(p->loss, Yc, Tc, &f, dYc));
    PetscCall(NetBackward(p->net, dYc, NULL, NULL));
    if (c == 0)
      PetscCall(PetNetPCKFACAddStatistics(pc));
    else
      PetscCall(PetNetPCKFACUpdateStatistics(pc));
    PetscCall(VecDestroy(&Xc));
    PetscCall(VecDestroy(&Tc));
    PetscCall(VecDestroy(&Yc));
    PetscCall(VecDestroy(&dYc));
  }
  PetscCall(VecRestoreArrayRead(p->T[0], &t));
  PetscCall(VecRestoreArrayRead(p->X[0], &x));
  {
    Mat      M;
    PetscInt nl;

    PetscCall(VecGetLocalSize(v, &nl));
    PetscCall(MatCreateShell(comm, nl, nl, nparams, nparams, NULL, &M));
    PetscCall(PCSetOperators(pc, M, M));
    PetscCall(MatDestroy(&M));
  }
  PetscCall(VecDuplicate(v, &y));
  PetscCall(PCApply(pc, v, y));
  PetscCall(GatherAll(y, &ya));
  err = ArrayRelErr(nparams, ya, y1);
  PetscCheck(err <= 1e-12, comm, PETSC_ERR_PLIB, "K-FAC statistics in two passes (%" PetscInt_FMT " + %" PetscInt_FMT " samples) give F^{-1} v %g away from those of one pass", H[0], H[1], (double)err);
  PetscCall(PetscFree(ya));
  PetscCall(VecDestroy(&y));
  PetscCall(PCDestroy(&pc));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckInverse(void)
{
  const PetscReal lambda = 0.03, lr = 0.5, tol = 1e-10;
  MPI_Comm        comm = PETSC_COMM_WORLD;

  PetscFunctionBegin;
  for (size_t c = 0; c < PETSC_STATIC_ARRAY_LENGTH(cases); c++) {
    Problem      p;
    PetscInt     N = 7, n = PETSC_DECIDE, nparams;
    PC           pc;
    Vec          v, y, G;
    PetscRandom  rnd;
    PetscScalar *va, *ya, *ga, *yref, *gref, *x0, *x1, *x1ref, gFg = 0;
    PetscReal    err, errstep, errclip, kappa, nu;

    PetscCall(PetscOptionsGetInt(NULL, NULL, "-samples", &N, NULL));
    PetscCall(PetscSplitOwnership(comm, &n, &N));
    PetscCall(ProblemCreate(comm, cases[c].layers, &cases[c].in, 1, N, n, &p));
    PetscCall(NetGetNumParameters(p.net, &nparams));
    PetscCall(NetCreateParameterVec(p.net, &v));
    PetscCall(VecDuplicate(v, &y));
    PetscCall(VecDuplicate(v, &G));
    PetscCall(PetscRandomCreate(comm, &rnd));
    PetscCall(PetscRandomSetSeed(rnd, 5));
    PetscCall(PetscRandomSeed(rnd));
    PetscCall(VecSetRandom(v, rnd));
    PetscCall(PetscRandomDestroy(&rnd));
    {
      Vec       theta;
      PetscReal f;

      PetscCall(NetGetParameters(p.net, &theta));
      PetscCall(ProblemObjective(NULL, theta, &f, G, &p)); /* the pass at x0 */
    }

    /* the preconditioner on v and on the gradient */
    PetscCall(PCCreate(comm, &pc));
    if (cases[c].uncovered) PetscCall(PetscOptionsSetValue(NULL, "-pc_kfac_uncovered_gradient", NULL));
    PetscCall(PetscOptionsSetValue(NULL, "-pc_kfac_damping", "0.03"));
    PetscCall(PetNetPCSetKFAC(pc, p.net));
    PetscCall(PetscOptionsClearValue(NULL, "-pc_kfac_damping"));
    if (cases[c].uncovered) PetscCall(PetscOptionsClearValue(NULL, "-pc_kfac_uncovered_gradient"));
    PetscCall(PetNetPCKFACUpdateStatistics(pc));
    { /* PCApply() checks the sizes against an operator: a shell of the parameters' layout */
      Mat      M;
      PetscInt nl;

      PetscCall(VecGetLocalSize(v, &nl));
      PetscCall(MatCreateShell(comm, nl, nl, nparams, nparams, NULL, &M));
      PetscCall(PCSetOperators(pc, M, M));
      PetscCall(MatDestroy(&M));
    }
    PetscCall(PCApply(pc, v, y));
    PetscCall(GatherAll(v, &va));
    PetscCall(GatherAll(y, &ya));
    PetscCall(GatherAll(G, &ga));

    /* the reference, node by node; parameters of uncovered layers: identity */
    PetscCall(PetscMalloc2(nparams, &yref, nparams, &gref));
    PetscCall(PetscArraycpy(yref, va, nparams));
    PetscCall(PetscArraycpy(gref, ga, nparams));
    for (PetscInt k = 0; k < p.net->nlayers; k++) {
      PetscBool    dense, conv;
      PetscScalar *x, *dy;

      PetscCall(PetscObjectTypeCompare((PetscObject)p.net->layers[k], LAYERDENSE, &dense));
      PetscCall(PetscObjectTypeCompare((PetscObject)p.net->layers[k], LAYERCONV2D, &conv));
      if (!conv) PetscCall(PetscObjectTypeCompare((PetscObject)p.net->layers[k], LAYERCONV3D, &conv));
      if (!dense && !conv) continue;
      PetscCall(GatherAll(p.net->act[p.net->nodes[k].in[0] + 1], &x));
      PetscCall(GatherAll(p.net->dact[k + 1], &dy));
      PetscCall(ReferenceNode(p.net, k, N, x, dy, lambda, va, yref));
      PetscCall(ReferenceNode(p.net, k, N, x, dy, lambda, ga, gref));
      PetscCall(PetscFree(x));
      PetscCall(PetscFree(dy));
    }
    err = ArrayRelErr(nparams, ya, yref);
    PetscCheck(err <= tol, comm, PETSC_ERR_PLIB, "%s: K-FAC F^{-1} v differs from the dense Kronecker solve by %g relative", cases[c].layers, (double)err);

    /* one kfac step: x0 - lr F^{-1} g; with KL clipping at a quarter of the unclipped lr^2 g.F^{-1} g: nu = 1/2 */
    PetscCall(GatherAll(p.net->theta, &x0));
    PetscCall(PetscMalloc1(nparams, &x1ref));
    for (PetscInt i = 0; i < nparams; i++) gFg += ga[i] * gref[i];
    PetscCall(KFACOneStep(&p, lr, lambda, 0.0, &x1));
    for (PetscInt i = 0; i < nparams; i++) x1ref[i] = x0[i] - lr * gref[i];
    errstep = ArrayRelErr(nparams, x1, x1ref);
    PetscCall(PetscFree(x1));
    kappa = 0.25 * lr * lr * PetscRealPart(gFg);
    nu    = PetscSqrtReal(kappa / (lr * lr * PetscRealPart(gFg)));
    PetscCall(KFACOneStep(&p, lr, lambda, kappa, &x1));
    for (PetscInt i = 0; i < nparams; i++) x1ref[i] = x0[i] - lr * nu * gref[i];
    errclip = ArrayRelErr(nparams, x1, x1ref);
    PetscCheck(errstep <= tol && errclip <= tol, comm, PETSC_ERR_PLIB, "%s: a kfac step differs from x0 - lr F^{-1} g by %g relative (KL-clipped: %g)", cases[c].layers, (double)errstep, (double)errclip);
    PetscCall(PetscPrintf(comm, "%-70s %3" PetscInt_FMT " parameters: F^{-1} v, kfac step and KL-clipped step (nu = %.2f) agree with the dense Kronecker solve to 1e-10\n", cases[c].layers, nparams, (double)nu));
    if (!cases[c].uncovered) PetscCall(CheckChunks(&p, v, ya, nparams)); /* batchnorm: a chunk is another function */
    PetscCall(PetscFree(x1));
    PetscCall(PetscFree(x0));
    PetscCall(PetscFree(x1ref));
    PetscCall(PetscFree2(yref, gref));
    PetscCall(PetscFree(va));
    PetscCall(PetscFree(ya));
    PetscCall(PetscFree(ga));
    PetscCall(PCDestroy(&pc));
    PetscCall(VecDestroy(&v));
    PetscCall(VecDestroy(&y));
    PetscCall(VecDestroy(&G));
    PetscCall(ProblemDestroy(&p));
  }
  PetscFunctionReturn(0);
}

/* nsteps kfac steps on comm with n local samples per batch; the final parameters gathered, and the mean loss over
   the batches before (loss[0]) and after (loss[1]) */
static PetscErrorCode RunKFAC(MPI_Comm comm, PetscInt N, PetscInt n, PetscInt nsteps, PetscScalar **theta, PetscReal *norm, PetscReal loss[2], PetscInt64 *held, PetscInt64 *onecopy)
{
  const char *layers;
  PetNetShape in;
  Problem     p;
  Tao         tao;
  Vec         x, G;

  PetscFunctionBegin;
  RanksNet(&layers, &in);
  PetscCall(ProblemCreate(comm, layers, &in, 3, N, n, &p));
  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOKFAC));
  PetscCall(NetCreateParameterVec(p.net, &x));
  PetscCall(VecCopy(p.net->theta, x));
  PetscCall(VecDuplicate(x, &G));
  for (PetscInt w = 0; w < 2; w++) {
    if (w) {
      p.ibatch = 0;
      PetscCall(TaoSetSolution(tao, x));
      PetscCall(TaoSetObjectiveAndGradient(tao, NULL, ProblemObjective, &p));
      PetscCall(TaoSetUpdate(tao, ProblemNextBatch, &p));
      PetscCall(PetNetTaoKFACSetNet(tao, p.net));
      PetscCall(PetNetTaoSetLearningRate(tao, 0.3));
      PetscCall(PetNetTaoSetWeightDecay(tao, 1e-3));
      PetscCall(PetNetTaoKFACSetMomentum(tao, 0.9));
      PetscCall(PetNetTaoKFACSetDamping(tao, 1e-2));
      PetscCall(PetNetTaoKFACSetStatDecay(tao, 0.8));
      PetscCall(PetNetTaoKFACSetUpdateFrequency(tao, 1, 2));
      PetscCall(PetNetTaoKFACSetKLClip(tao, 1e-2));
      PetscCall(TaoSetMaximumIterations(tao, nsteps));
      PetscCall(TaoSolve(tao));
      if (held) PetscCall(PetNetTaoKFACGetFactorEntries(tao, held, onecopy));
    }
    loss[w] = 0;
    for (PetscInt b = 0; b < p.nbatches; b++) {
      PetscReal f;

      p.ibatch = b;
      PetscCall(ProblemObjective(NULL, x, &f, G, &p));
      loss[w] += f / p.nbatches;
    }
  }
  PetscCall(VecDestroy(&G));
  PetscCall(VecNorm(x, NORM_2, norm));
  PetscCall(GatherAll(x, theta));
  PetscCall(VecDestroy(&x));
  PetscCall(TaoDestroy(&tao));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

/* the number of parameters of the network of RanksNet() */
static PetscErrorCode RanksNetParameters(PetscInt *nparams)
{
  Problem     p;
  PetNetShape in;
  const char *layers;

  PetscFunctionBegin;
  RanksNet(&layers, &in);
  PetscCall(ProblemCreate(PETSC_COMM_SELF, layers, &in, 1, 1, 1, &p));
  PetscCall(NetGetNumParameters(p.net, nparams));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckRanks(void)
{
  PetscInt     N = 9, n = PETSC_DECIDE, nparams, nsteps = 6;
  PetscScalar *tw, *ts;
  PetscReal    nw, ns, err, lw[2], ls[2];

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCall(RunKFAC(PETSC_COMM_WORLD, N, n, nsteps, &tw, &nw, lw, NULL, NULL));
  PetscCall(RunKFAC(PETSC_COMM_SELF, N, N, nsteps, &ts, &ns, ls, NULL, NULL));
  PetscCall(RanksNetParameters(&nparams));
  err = ArrayRelErr(nparams, tw, ts);
  PetscCheck(err <= 1e-11, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "After %" PetscInt_FMT " kfac steps the parameters on PETSC_COMM_WORLD differ from those on PETSC_COMM_SELF by %g relative", nsteps, (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " kfac steps, %" PetscInt_FMT " parameters: |theta| = %.10f; the ranks' result equals one rank's to 1e-11\n", nsteps, nparams, (double)nw));
  if (conv3d) { /* the conv3d network: its training lowers the mean loss over the batches by at least 10% */
    PetscCheck(lw[1] <= 0.9 * lw[0], PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " kfac steps took the mean loss from %g to %g, not below 0.9 of it", nsteps, (double)lw[0], (double)lw[1]);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mean loss over the batches %.6f -> %.6f (<= 0.9 of it)\n", (double)lw[0], (double)lw[1]));
  }
  PetscCall(PetscFree(tw));
  PetscCall(PetscFree(ts));
  PetscFunctionReturn(0);
}

/*
  K-FAC on a placed Net (-case placed): the same 6 kfac steps on PETSC_COMM_WORLD in stages of micro-batches, or with
  the branches of a graph on groups of their own, and unplaced on PETSC_COMM_SELF. The statistics sum each node's rows
  in its group's layout (n = 0 outside the group) and the factors sit with the blocks' owners (no rank's copy holds
  every parameter): equal to 1e-12, and the held factor entries add up to one copy.
*/
static PetscErrorCode CheckPlaced(void)
{
  MPI_Comm     comm = PETSC_COMM_WORLD;
  PetscInt     N = 12, n = PETSC_DECIDE, nparams, nsteps = 6;
  PetscScalar *tw, *ts;
  PetscReal    nw, ns, err, lw[2], ls[2];
  PetscInt64   held, onecopy, sum;
  PetscBool    show = PETSC_FALSE;
  PetscMPIInt  size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-samples", &N, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-kfac_stages", &placement.stages, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-kfac_microbatches", &placement.micro, NULL));
  PetscCall(PetscOptionsGetEnum(NULL, NULL, "-kfac_schedule", NetPipelineSchedules, (PetscEnum *)&placement.schedule, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-kfac_subgraph", &placement.subgraph, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-show_errors", &show, NULL));
  PetscCall(PetscSplitOwnership(comm, &n, &N));
  placement.place = PETSC_TRUE;
  PetscCall(RunKFAC(comm, N, n, nsteps, &tw, &nw, lw, &held, &onecopy));
  placement.place = PETSC_FALSE;
  PetscCall(RunKFAC(PETSC_COMM_SELF, N, N, nsteps, &ts, &ns, ls, NULL, NULL));
  PetscCall(RanksNetParameters(&nparams));
  err = ArrayRelErr(nparams, tw, ts);
  if (show) PetscCall(PetscPrintf(comm, "  measured: %g relative\n", (double)err));
  PetscCheck(err <= 1e-12, comm, PETSC_ERR_PLIB, "After %" PetscInt_FMT " kfac steps the parameters of the placed Net differ from those of the unplaced one on PETSC_COMM_SELF by %g relative", nsteps, (double)err);
  PetscCallMPI(MPI_Allreduce(&held, &sum, 1, MPIU_INT64, MPI_SUM, comm));
  if (placement.stages > 1 || placement.subgraph) /* nodes on groups of ranks: each block's factors on its owner */
    PetscCheck(sum == onecopy, comm, PETSC_ERR_PLIB, "With nodes on groups of ranks the ranks hold %" PetscInt64_FMT " factor entries in all, not one copy (%" PetscInt64_FMT ")", sum, onecopy);
  else /* micro-batches alone: every node on every rank, whose copy holds every parameter (replicated placement) */
    PetscCheck(held == onecopy, PETSC_COMM_SELF, PETSC_ERR_PLIB, "With every node on every rank a rank holds %" PetscInt64_FMT " factor entries, not one copy (%" PetscInt64_FMT ")", held, onecopy);
  if (placement.subgraph)
    PetscCall(PetscPrintf(comm, "-net_parallel subgraph, %d ranks", size));
  else
    PetscCall(PetscPrintf(comm, "stages %" PetscInt_FMT ", micro-batches %" PetscInt_FMT " (%s), %d ranks", placement.stages, placement.micro, NetPipelineSchedules[placement.schedule], size));
  PetscCall(PetscPrintf(comm, ": %" PetscInt_FMT " kfac steps, %" PetscInt_FMT " parameters: |theta| = %.10f equals one unplaced rank's to 1e-12; factor entries: one copy %" PetscInt64_FMT ", held per rank:", nsteps, nparams, (double)nw, onecopy));
  PetscCall(PetscSynchronizedPrintf(comm, " %" PetscInt64_FMT, held));
  PetscCall(PetscSynchronizedFlush(comm, PETSC_STDOUT));
  PetscCall(PetscPrintf(comm, "\n"));
  PetscCall(PetscFree(tw));
  PetscCall(PetscFree(ts));
  PetscFunctionReturn(0);
}

/*
  nsteps kfac steps as RunKFAC()'s on the Net layers in the given parallel mode and precision (on PETSC_COMM_WORLD);
  the final parameters gathered, and the factor entries this rank held and those of one copy
*/
static PetscErrorCode RunKFACMode(const char layers[], NetParallelType mode, NetPrecision precision, PetscInt nsteps, PetscScalar **theta, PetscInt *nparams, PetscInt64 *held, PetscInt64 *onecopy)
{
  MPI_Comm        comm = PETSC_COMM_WORLD;
  PetNetShape     in   = {3, {6, 6, 2}};
  NetParallelType save = parallel;
  PetscInt        N = 9, n = PETSC_DECIDE;
  Problem         p;
  Tao             tao;
  Vec             x, theta0;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(comm, &n, &N));
  parallel = mode;
  PetscCall(ProblemCreate(comm, layers, &in, 3, N, n, &p));
  parallel = save;
  PetscCall(NetSetPrecision(p.net, precision));
  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOKFAC));
  PetscCall(NetCreateParameterVec(p.net, &x));
  PetscCall(NetGetParameters(p.net, &theta0));
  PetscCall(VecCopy(theta0, x));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, ProblemObjective, &p));
  PetscCall(TaoSetUpdate(tao, ProblemNextBatch, &p));
  PetscCall(PetNetTaoKFACSetNet(tao, p.net));
  PetscCall(PetNetTaoSetLearningRate(tao, 0.3));
  PetscCall(PetNetTaoSetWeightDecay(tao, 1e-3));
  PetscCall(PetNetTaoKFACSetMomentum(tao, 0.9));
  PetscCall(PetNetTaoKFACSetDamping(tao, 1e-2));
  PetscCall(PetNetTaoKFACSetStatDecay(tao, 0.8));
  PetscCall(PetNetTaoKFACSetUpdateFrequency(tao, 1, 2));
  PetscCall(PetNetTaoKFACSetKLClip(tao, 1e-2));
  PetscCall(TaoSetMaximumIterations(tao, nsteps));
  PetscCall(TaoSolve(tao));
  PetscCall(PetNetTaoKFACGetFactorEntries(tao, held, onecopy));
  PetscCall(NetGetNumParameters(p.net, nparams));
  PetscCall(GatherAll(x, theta));
  PetscCall(VecDestroy(&x));
  PetscCall(TaoDestroy(&tao));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

/*
  The owner placement against the replicated one: sharded, model-parallel and sharded with a partitioned dense layer,
  in double (1e-12) and single (10 L u), each against the replicated run of the same network, precision and ranks; the
  factors of the owner placement are split over the ranks without overlap: the held entries add up to one copy.
*/
static PetscErrorCode CheckSharded(void)
{
  MPI_Comm       comm = PETSC_COMM_WORLD;
  PetscMPIInt    size;
  char           partitioned[256];
  const PetscInt nsteps = 6;
  struct {
    const char     *layers;
    NetParallelType mode;
    NetPrecision    precision;
    PetscInt        nodes; /* L, for the single-precision bound */
  } runs[4];

  PetscBool show = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-show_errors", &show, NULL));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscSNPrintf(partitioned, sizeof(partitioned), "conv2d:4:3:1:1,tanh,conv2d:3:2:2:0,flatten,dense:5:partition=%dx1,relu,dense:3", PetscMin(size, 5)));
  runs[0].layers = "conv2d:4:3:1:1:groups=2,tanh,conv2d:3:2:2:0,flatten,dense:5,relu,dense:3";
  runs[0].mode = NET_PARALLEL_SHARDED, runs[0].precision = NET_PRECISION_DOUBLE, runs[0].nodes = 7;
  runs[1].layers = "conv2d:4:3:1:1,tanh,conv2d:3:2:2:0,flatten,dense:5,relu,dense:3";
  runs[1].mode = NET_PARALLEL_MODEL, runs[1].precision = NET_PRECISION_DOUBLE, runs[1].nodes = 7;
  runs[2].layers = partitioned;
  runs[2].mode = NET_PARALLEL_SHARDED, runs[2].precision = NET_PRECISION_DOUBLE, runs[2].nodes = 7;
  runs[3].layers = runs[0].layers;
  runs[3].mode = NET_PARALLEL_SHARDED, runs[3].precision = NET_PRECISION_SINGLE, runs[3].nodes = 7;
  for (PetscInt r = 0; r < 4; r++) {
    PetscScalar *tr, *ts;
    PetscInt64   hr, cr, hs, cs, sum;
    PetscInt     nparams;
    PetscReal    err, tol;
    PetscBool    partition = (PetscBool)(r == 2);

    if (partition && size > 5) continue;
    PetscCall(RunKFACMode(runs[r].layers, NET_PARALLEL_REPLICATED, runs[r].precision, nsteps, &tr, &nparams, &hr, &cr));
    PetscCall(RunKFACMode(runs[r].layers, runs[r].mode, runs[r].precision, nsteps, &ts, &nparams, &hs, &cs));
    tol = runs[r].precision == NET_PRECISION_DOUBLE ? 1e-12 : 10 * runs[r].nodes * PetscPowReal(2.0, -24);
    err = ArrayRelErr(nparams, ts, tr);
    PetscCheck(err <= tol, comm, PETSC_ERR_PLIB, "%s: after %" PetscInt_FMT " kfac steps with -net_parallel %s%s the parameters differ from the replicated run's by %g relative (bound %g)", runs[r].layers, nsteps, NetParallelTypes[runs[r].mode],
               runs[r].precision == NET_PRECISION_SINGLE ? " in single precision" : "", (double)err, (double)tol);
    if (show) PetscCall(PetscPrintf(comm, "  measured: %g relative\n", (double)err));
    PetscCheck(hr == cr && cs == cr, PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "Replicated K-FAC must hold one copy of the factors on every rank (%" PetscInt64_FMT " of %" PetscInt64_FMT " entries), and both runs must have the same factors (%" PetscInt64_FMT ")", hr, cr, cs);
    PetscCallMPI(MPI_Allreduce(&hs, &sum, 1, MPIU_INT64, MPI_SUM, comm));
    PetscCheck(sum == cs, comm, PETSC_ERR_PLIB, "With -net_parallel %s the ranks hold %" PetscInt64_FMT " factor entries in all, not one copy (%" PetscInt64_FMT ")", NetParallelTypes[runs[r].mode], sum, cs);
    PetscCheck(size == 1 || hs < cs || cs == 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "With -net_parallel %s a rank holds every factor (%" PetscInt64_FMT " entries)", NetParallelTypes[runs[r].mode], hs);
    PetscCall(PetscPrintf(comm, "%-26s %-7s %s: %" PetscInt_FMT " kfac steps equal the replicated run's to %s; factor entries: one copy %" PetscInt64_FMT ", held per rank:",
                          partition                          ? "partitioned dense"
                          : strstr(runs[r].layers, "groups") ? "grouped conv"
                                                             : "conv",
                          NetParallelTypes[runs[r].mode], NetPrecisions[runs[r].precision], nsteps, runs[r].precision == NET_PRECISION_DOUBLE ? "1e-12" : "10 L u", cs));
    PetscCall(PetscSynchronizedPrintf(comm, " %" PetscInt64_FMT, hs));
    PetscCall(PetscSynchronizedFlush(comm, PETSC_STDOUT));
    PetscCall(PetscPrintf(comm, "\n"));
    PetscCall(PetscFree(tr));
    PetscCall(PetscFree(ts));
  }
  PetscFunctionReturn(0);
}

/* A K-FAC preconditioner placed for replicated mode, applied after the Net went sharded (an error naming both) */
static PetscErrorCode CheckModeChange(void)
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  PetNetShape in   = {1, {5}};
  Problem     p;
  PC          pc;
  Vec         theta, G, y;
  Mat         M;
  PetscInt    N = 6, n = PETSC_DECIDE, nl, nparams;
  PetscReal   f;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(comm, &n, &N));
  PetscCall(ProblemCreate(comm, "dense:4,tanh,dense:3", &in, 1, N, n, &p));
  PetscCall(NetCreateParameterVec(p.net, &G));
  PetscCall(VecDuplicate(G, &y));
  PetscCall(NetGetParameters(p.net, &theta));
  PetscCall(ProblemObjective(NULL, theta, &f, G, &p));
  PetscCall(PCCreate(comm, &pc));
  PetscCall(PetNetPCSetKFAC(pc, p.net));
  PetscCall(PetNetPCKFACUpdateStatistics(pc));
  PetscCall(NetGetNumParameters(p.net, &nparams));
  PetscCall(VecGetLocalSize(G, &nl));
  PetscCall(MatCreateShell(comm, nl, nl, nparams, nparams, NULL, &M));
  PetscCall(PCSetOperators(pc, M, M));
  PetscCall(MatDestroy(&M));
  PetscCall(NetSetParallel(p.net, NET_PARALLEL_SHARDED));
  PetscCall(PCApply(pc, G, y));
  PetscCall(PCDestroy(&pc));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&y));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

/* kfac on a network with batchnorm (refused), or without a Net */
static PetscErrorCode CheckBadInput(PetscBool withnet)
{
  PetNetShape in = {1, {4}};
  Problem     p;
  Tao         tao;
  Vec         x;
  PetscInt    N = 4, n = PETSC_DECIDE;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, "dense:4,batchnorm,relu,dense:3", &in, 1, N, n, &p));
  PetscCall(TaoCreate(PETSC_COMM_WORLD, &tao));
  PetscCall(TaoSetType(tao, TAOKFAC));
  PetscCall(NetCreateParameterVec(p.net, &x));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, ProblemObjective, &p));
  if (withnet) PetscCall(PetNetTaoKFACSetNet(tao, p.net));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoSolve(tao));
  PetscCall(VecDestroy(&x));
  PetscCall(TaoDestroy(&tao));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

/* F^{-1} g of K-FAC's factors of the Net's last forward and backward pass (one statistics update) */
static PetscErrorCode KFACApplyOnce(Net net, Vec G, Vec y)
{
  PC       pc;
  Mat      M;
  PetscInt nl, nparams;

  PetscFunctionBegin;
  PetscCall(PCCreate(PetscObjectComm((PetscObject)net), &pc));
  PetscCall(PetNetPCSetKFAC(pc, net));
  PetscCall(PetNetPCKFACUpdateStatistics(pc));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(VecGetLocalSize(G, &nl));
  PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), nl, nl, nparams, nparams, NULL, &M));
  PetscCall(PCSetOperators(pc, M, M));
  PetscCall(MatDestroy(&M));
  PetscCall(PCApply(pc, G, y));
  PetscCall(PCDestroy(&pc));
  PetscFunctionReturn(0);
}

/*
  K-FAC in grid mode: a conv2d (conv3d with -kfac_conv3d) Net on nf fields of a DMDA over all ranks, loss
  (1/nf) sum_f 1/2 |y_f - t_f|^2, against the same Net in batch mode on one rank with the fields as samples (the same
  mean over fields): the outputs and gradients agree to 1e-12 and F^{-1} g to 1e-11 relative, which holds only if the
  grid mode's factors are batch mode's. With -net_spatial_groups 2 -layer2_partition 2x1 (2 ranks) the second
  convolution's channels are split over the groups, which K-FAC refuses naming the node (an _error test).
*/
static PetscErrorCode CheckGrid(void)
{
  MPI_Comm           comm = PETSC_COMM_WORLD, gcomm;
  const PetscInt     nf = 3, C = 2, CO = 3, nsd = conv3d ? 3 : 2;
  const PetscInt     ext[3] = {conv3d ? 4 : 1, conv3d ? 4 : 6, 5}; /* z, y, x */
  const char        *layers = conv3d ? "conv3d:4:3:1:1:groups=2,tanh,conv3d:3:3:1:1" : "conv2d:4:3:1:1:groups=2,tanh,conv2d:3:3:1:1";
  const PetscInt     npts   = ext[0] * ext[1] * ext[2];
  Net                bnet, gnet;
  DM                 da;
  PetNetShape        in;
  PetscRandom        rnd;
  PetscScalar       *xt, *tt, *th, *yall;
  Vec                Xb, Yb, dYb, Gb, Pb, Xg, Yg, dYg, Gg, Pg, thb, thg;
  PetscInt           xs, ys, zs, xm, ym, zm, nparams, nloc;
  PetscReal          erry = 0, errg = 0, errp, nrm, nrmb, dif = 0, gnrm = 0;
  const PetscScalar *yb, *gb, *pb, *yg;
  PetscScalar       *dyb, *dyg, *xg;

  PetscFunctionBegin;
  in = conv3d ? (PetNetShape){4, {ext[0], ext[1], ext[2], C}} : (PetNetShape){3, {ext[1], ext[2], C}};
  /* the tables: inputs and targets of the nf fields in the DMDA's natural order [f][z][y][x][c], parameters */
  PetscCall(NetCreate(PETSC_COMM_SELF, &bnet));
  PetscCall(NetSetLayers(bnet, layers));
  PetscCall(NetSetInputShape(bnet, &in));
  PetscCall(NetSetSeed(bnet, 7));
  PetscCall(NetSetUp(bnet));
  PetscCall(NetGetNumParameters(bnet, &nparams));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.5, 1.5));
  PetscCall(PetscRandomSetSeed(rnd, 29));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc3(nf * npts * C, &xt, nf * npts * CO, &tt, nparams, &th));
  for (PetscInt i = 0; i < nf * npts * C; i++) PetscCall(PetscRandomGetValue(rnd, &xt[i]));
  for (PetscInt i = 0; i < nf * npts * CO; i++) PetscCall(PetscRandomGetValue(rnd, &tt[i]));
  for (PetscInt i = 0; i < nparams; i++) {
    PetscCall(PetscRandomGetValue(rnd, &th[i]));
    th[i] *= 0.4;
  }
  PetscCall(PetscRandomDestroy(&rnd));

  /* batch mode on one rank: the fields are the samples */
  PetscCall(NetGetParameters(bnet, &thb));
  PetscCall(FillFromTable(thb, th));
  PetscCall(NetSetParameters(bnet, thb));
  PetscCall(NetCreateVecs(bnet, nf, &Xb, &Yb));
  PetscCall(FillFromTable(Xb, xt));
  PetscCall(VecDuplicate(Yb, &dYb));
  PetscCall(NetCreateParameterVec(bnet, &Gb));
  PetscCall(VecDuplicate(Gb, &Pb));
  PetscCall(NetForward(bnet, Xb, Yb));
  PetscCall(VecGetArrayRead(Yb, &yb));
  PetscCall(VecGetArrayWrite(dYb, &dyb));
  for (PetscInt i = 0; i < nf * npts * CO; i++) dyb[i] = (yb[i] - tt[i]) / nf;
  PetscCall(VecRestoreArrayWrite(dYb, &dyb));
  PetscCall(VecZeroEntries(Gb));
  PetscCall(NetBackward(bnet, dYb, NULL, Gb));
  PetscCall(KFACApplyOnce(bnet, Gb, Pb));

  /* grid mode on every rank: each field's block of the rank, [f][zm][ym][xm][c] */
  PetscCall(NetCreate(comm, &gnet));
  PetscCall(NetSetLayers(gnet, layers));
  PetscCall(NetSetSeed(gnet, 7));
  PetscCall(NetSetFromOptions(gnet)); /* kfac_grid_partition_error: -net_spatial_groups 2 -layer2_partition 2x1 */
  PetscCall(NetGetSpatialComm(gnet, &gcomm));
  if (nsd == 3)
    PetscCall(DMDACreate3d(gcomm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, ext[2], ext[1], ext[0], PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, C, 0, NULL, NULL, NULL, &da));
  else
    PetscCall(DMDACreate2d(gcomm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, ext[2], ext[1], PETSC_DECIDE, PETSC_DECIDE, C, 0, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(NetSetGrid(gnet, da));
  PetscCall(NetSetUp(gnet));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(NetGetParameters(gnet, &thg));
  PetscCall(FillFromTable(thg, th));
  PetscCall(NetSetParameters(gnet, thg));
  nloc = xm * ym * zm;
  PetscCall(NetCreateVecs(gnet, nf * nloc, &Xg, &Yg));
  PetscCall(VecDuplicate(Yg, &dYg));
  PetscCall(NetCreateParameterVec(gnet, &Gg));
  PetscCall(VecDuplicate(Gg, &Pg));
  PetscCall(VecGetArrayWrite(Xg, &xg));
  for (PetscInt f = 0, r = 0; f < nf; f++)
    for (PetscInt z = zs; z < zs + zm; z++)
      for (PetscInt y = ys; y < ys + ym; y++)
        for (PetscInt x = xs; x < xs + xm; x++, r++)
          for (PetscInt c = 0; c < C; c++) xg[r * C + c] = xt[((f * ext[0] + z) * ext[1] + y) * ext[2] * C + x * C + c];
  PetscCall(VecRestoreArrayWrite(Xg, &xg));
  PetscCall(NetForward(gnet, Xg, Yg));
  PetscCall(VecGetArrayRead(Yg, &yg));
  PetscCall(VecGetArrayWrite(dYg, &dyg));
  for (PetscInt f = 0, r = 0; f < nf; f++)
    for (PetscInt z = zs; z < zs + zm; z++)
      for (PetscInt y = ys; y < ys + ym; y++)
        for (PetscInt x = xs; x < xs + xm; x++, r++)
          for (PetscInt c = 0; c < CO; c++) {
            const PetscInt g = (((f * ext[0] + z) * ext[1] + y) * ext[2] + x) * CO + c;

            erry            = PetscMax(erry, PetscAbsScalar(yg[r * CO + c] - yb[g]));
            dyg[r * CO + c] = (yg[r * CO + c] - tt[g]) / nf;
          }
  PetscCall(VecRestoreArrayWrite(dYg, &dyg));
  PetscCall(VecRestoreArrayRead(Yg, &yg));
  PetscCall(VecRestoreArrayRead(Yb, &yb));
  PetscCall(VecZeroEntries(Gg));
  PetscCall(NetBackward(gnet, dYg, NULL, Gg));
  PetscCall(KFACApplyOnce(gnet, Gg, Pg));

  /* compare: outputs (max over the ranks), gradients and F^{-1} g (relative, 2-norm) */
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &erry, 1, MPIU_REAL, MPIU_MAX, comm));
  PetscCall(VecGetArrayRead(Gb, &gb));
  PetscCall(VecGetArrayRead(Pb, &pb));
  PetscCall(GatherAll(Gg, &yall));
  for (PetscInt i = 0; i < nparams; i++) {
    errg = PetscMax(errg, PetscAbsScalar(yall[i] - gb[i]));
    gnrm = PetscMax(gnrm, PetscAbsScalar(gb[i]));
  }
  PetscCall(PetscFree(yall));
  PetscCall(GatherAll(Pg, &yall));
  for (PetscInt i = 0; i < nparams; i++) dif += PetscRealPart((yall[i] - pb[i]) * PetscConj(yall[i] - pb[i]));
  PetscCall(VecNorm(Pb, NORM_2, &nrmb));
  PetscCall(VecNorm(Pg, NORM_2, &nrm));
  errp = PetscSqrtReal(dif) / nrmb;
  PetscCall(PetscFree(yall));
  PetscCall(VecRestoreArrayRead(Gb, &gb));
  PetscCall(VecRestoreArrayRead(Pb, &pb));
  PetscCheck(erry <= 1e-12 && errg <= 1e-12 * gnrm, comm, PETSC_ERR_PLIB, "%s: grid mode's outputs or gradient differ from batch mode's (%g, %g relative): the set-up is wrong", layers, (double)erry, (double)(errg / gnrm));
  PetscCheck(errp <= 1e-11, comm, PETSC_ERR_PLIB, "%s: K-FAC's F^{-1} g in grid mode differs from batch mode's by %g relative (|F^{-1} g| %g in grid mode, %g in batch mode)", layers, (double)errp, (double)nrm, (double)nrmb);
  PetscCall(PetscPrintf(comm, "%s on %" PetscInt_FMT " fields of a %s DMDA in grid mode: outputs and gradient equal batch mode's on one rank to 1e-12, K-FAC's F^{-1} g to 1e-11 relative (|F^{-1} g| = %.6e)\n", layers, nf, conv3d ? "5x4x4" : "5x6",
                        (double)nrmb));
  PetscCall(PetscFree3(xt, tt, th));
  PetscCall(VecDestroy(&Xb));
  PetscCall(VecDestroy(&Yb));
  PetscCall(VecDestroy(&dYb));
  PetscCall(VecDestroy(&Gb));
  PetscCall(VecDestroy(&Pb));
  PetscCall(VecDestroy(&Xg));
  PetscCall(VecDestroy(&Yg));
  PetscCall(VecDestroy(&dYg));
  PetscCall(VecDestroy(&Gg));
  PetscCall(VecDestroy(&Pg));
  PetscCall(DMDestroy(&da));
  PetscCall(NetDestroy(&gnet));
  PetscCall(NetDestroy(&bnet));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      which[32] = "inverse";
  PetscBool flg;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", which, sizeof(which), NULL));
  {
    PetscInt mode = (PetscInt)parallel;

    PetscCall(PetscOptionsGetEList(NULL, NULL, "-kfac_parallel", NetParallelTypes, 3, &mode, NULL));
    parallel = (NetParallelType)mode;
  }
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-kfac_conv3d", &conv3d, NULL));
  PetscCall(PetscStrcmp(which, "sharded", &flg));
  if (flg) PetscCall(CheckSharded());
  PetscCall(PetscStrcmp(which, "modechange", &flg));
  if (flg) PetscCall(CheckModeChange());
  PetscCall(PetscStrcmp(which, "inverse", &flg));
  if (flg) PetscCall(CheckInverse());
  PetscCall(PetscStrcmp(which, "ranks", &flg));
  if (flg) PetscCall(CheckRanks());
  PetscCall(PetscStrcmp(which, "uncovered", &flg));
  if (flg) PetscCall(CheckBadInput(PETSC_TRUE));
  PetscCall(PetscStrcmp(which, "nonet", &flg));
  if (flg) PetscCall(CheckBadInput(PETSC_FALSE));
  PetscCall(PetscStrcmp(which, "grid", &flg));
  if (flg) PetscCall(CheckGrid());
  PetscCall(PetscStrcmp(which, "placed", &flg));
  if (flg) PetscCall(CheckPlaced());
  PetscCall(PetscFinalize());
  return 0;
}
