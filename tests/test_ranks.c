static const char help[] = "Ranks agree: in one program, the same Net (same seed) is built twice, on PETSC_COMM_SELF with the whole\n"
                           "global batch and on PETSC_COMM_WORLD with the batch distributed; parameters (exactly), outputs, loss,\n"
                           "parameter gradient, input gradient and JVP must agree to 1e-12 relative. Batches that split evenly,\n"
                           "unevenly, with ranks owning no sample, and all on the last rank; the two Nets are reused from batch to\n"
                           "batch, so the workspace is rebuilt whenever the layout changes (also when only some ranks' shares change).\n"
                           "The second-order adjoint (Hessian-vector product along the JVP's direction) must agree as well.\n"
                           "Options: -parallel <replicated,sharded,model,...,subgraph>: the mode of the WORLD Net (the SELF one is replicated);\n"
                           "-toggle: the WORLD Net, once set up, switches between replicated and that mode from batch to batch;\n"
                           "-layers <list> -input_shape <shape> [-loss <type>]: one case of your own instead of the built-in ones;\n"
                           "-stages S -microbatches M: the WORLD Net in S pipeline stages with M micro-batches (netplace.c; batches\n"
                           "of multiples of M; the JVP and second-order adjoint too, except with 1f1b; entries placed\n"
                           "with @stage or @ranks=a:b in -layers place the WORLD Net's nodes, the SELF Net ignores them); -test_moves:\n"
                           "also the dot-product test of every move between stages (<R x, y> = <x, R^T y> to 1e-14); -schedule 1f1b: the WORLD Net's\n"
                           "pipeline schedule, its loss and gradients by LossNetForwardBackward() (also -forward_backward without it); -tensor_ranks P:\n"
                           "the WORLD Net's tensor groups (NetSetTensorRanks(), -parallel tensor); -sequence_ranks P: its sequence groups\n"
                           "(NetSetSequenceRanks(), -parallel sequence); -memory_ratio r:\n"
                           "assert that no rank of the WORLD Net stores more than r times the values the SELF Net stores; -param_ratio r:\n"
                           "assert that no rank of the WORLD Net holds more than r times the parameters of the nodes it runs (its slice of theta\n"
                           "and the copies theta_rep, grad_rep, dtheta_rep: -parallel sharded with stages keeps the slice only). The nodes' options\n"
                           "(-layer1_attention_dropout 0.2, ...) apply to both Nets.\n";

#include <petnet.h>
#include <petnet/private/netimpl.h> /* the value store's and the parameters' Vecs, for the memory they hold (-memory_ratio, -param_ratio) */
#include "testheld.h"
#include "testutil.h"

typedef struct {
  const char *layers;
  PetscInt    insize;
  LossType    loss;
  PetNetShape shape; /* ndim 0: {insize} */
} Case;

static NetParallelType     parallel = NET_PARALLEL_REPLICATED; /* the WORLD Net's mode */
static PetscBool           toggle   = PETSC_FALSE;             /* -toggle: the WORLD Net, once set up, alternates between replicated and that mode */
static PetscInt            stages = 1, micro = 1;              /* -stages, -microbatches: the WORLD Net's pipeline */
static PetscInt            tensorranks = 0;                    /* -tensor_ranks: the WORLD Net's tensor groups */
static PetscInt            seqranks    = 0;                    /* -sequence_ranks: the WORLD Net's sequence groups */
static PetscBool           testmoves   = PETSC_FALSE;
static PetscReal           memratio    = 0;                  /* -memory_ratio r: the WORLD Net's stored values <= r times the SELF Net's */
static PetscReal           parratio    = 0;                  /* -param_ratio r: a rank of the WORLD Net holds <= r times its stage's parameters */
static PetscBool           fb          = PETSC_FALSE;        /* -forward_backward: the WORLD Net's loss and gradients by LossNetForwardBackward() */
static NetPipelineSchedule schedule    = NET_PIPELINE_GPIPE; /* -schedule: the WORLD Net's pipeline schedule (1f1b implies -forward_backward) */

static const Case cases[] = {
    {"dense:16,relu,dense:10", 12, LOSSCROSSENTROPY},
    {"dense:8,tanh,dense:8,gelu,dense:3", 5, LOSSMSE},
    {"dense:6,sigmoid,dense:4", 3, LOSSL1},
    {"a = dense:6; b = tanh; c = dense:6; s = add <- c, a; t = concat <- s, input; out = dense:10;", 5, LOSSCROSSENTROPY},
    {"h = dense:5; p = tanh <- h; q = sigmoid <- h; s = add <- p, q, h; out = dense:4 <- s;", 4, LOSSMSE},
};

typedef enum {
  LAYOUT_DECIDE, /* PetscSplitOwnership: as even as possible, the first ranks get the remainder */
  LAYOUT_SHIFT,  /* as LAYOUT_DECIDE, but rank 1 hands its samples to the last rank (rank 0 keeps its share) */
  LAYOUT_LAST    /* every sample on the last rank, none elsewhere */
} Layout;
static const char *LayoutNames[] = {"split", "rank 1 to the last", "all on the last rank"};

/* |gather(vw) - vs| / |vs|: vw on PETSC_COMM_WORLD, vs its counterpart on PETSC_COMM_SELF (whole vector) */
static PetscErrorCode RelativeDifference(Vec vw, Vec vs, PetscReal *err)
{
  VecScatter         toall;
  Vec                all;
  const PetscScalar *a, *b;
  PetscInt           N, Ns;
  PetscReal          d = 0, s = 0;

  PetscFunctionBegin;
  PetscCall(VecGetSize(vw, &N));
  PetscCall(VecGetSize(vs, &Ns));
  PetscCheck(N == Ns, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Global sizes differ: %" PetscInt_FMT " on WORLD, %" PetscInt_FMT " on SELF", N, Ns);
  PetscCall(VecScatterCreateToAll(vw, &toall, &all));
  PetscCall(VecScatterBegin(toall, vw, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, vw, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(all, &a));
  PetscCall(VecGetArrayRead(vs, &b));
  for (PetscInt i = 0; i < N; i++) {
    d += PetscRealPart((a[i] - b[i]) * PetscConj(a[i] - b[i]));
    s += PetscRealPart(b[i] * PetscConj(b[i]));
  }
  PetscCall(VecRestoreArrayRead(vs, &b));
  PetscCall(VecRestoreArrayRead(all, &a));
  *err = s > 0 ? PetscSqrtReal(d / s) : PetscSqrtReal(d);
  PetscCall(VecScatterDestroy(&toall));
  PetscCall(VecDestroy(&all));
  PetscFunctionReturn(0);
}

/* Everything one side computes: on comm, with nlocal samples of this rank, from the global tables */
typedef struct {
  Net       net;
  Loss      loss;
  Vec       X, Y, T, dY, G, dX, dtheta, dXdir, JY, Hv;
  PetscReal f;
  PetscBool so; /* the Net has second-order kernels: Hv holds the second-order adjoint */
} Side;

static PetscErrorCode SideCompute(MPI_Comm comm, const Case *c, PetscInt nlocal, const PetscScalar xtab[], const PetscScalar ttab[], const PetscScalar ptab[], const PetscScalar dxtab[], Side *s)
{
  PetNetShape in = {1, {c->insize}}, out;
  PetscInt    nout;
  PetscBool   ce;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(c->loss, LOSSCROSSENTROPY, &ce));
  if (!s->net) { /* the first batch of this case; later batches reuse the Net */
    char spec[4096];

    PetscCall(NetCreate(comm, &s->net));
    PetscCall(PetscStrncpy(spec, c->layers, sizeof(spec)));
    if (comm == PETSC_COMM_SELF) { /* the one-rank reference runs unplaced: its entries lose their @stage or @ranks=a:b */
      char *r = spec;

      for (const char *q = spec; *q;) {
        if (*q == '@') {
          for (q++; (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || *q == '=' || *q == ':'; q++) {} /* @s, @ranks=a:b */
          continue;
        }
        *r++ = *q++;
      }
      *r = 0;
    }
    if (strchr(spec, ';'))
      PetscCall(NetSetGraph(s->net, spec)); /* a graph of named nodes */
    else
      PetscCall(NetSetLayers(s->net, spec));
    PetscCall(TestLayersSetFromOptions(s->net)); /* the nodes' own options on both Nets, no -net_* one */
    if (c->shape.ndim) in = c->shape;
    PetscCall(NetSetInputShape(s->net, &in));
    PetscCall(NetSetSeed(s->net, 13));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetTensorRanks(s->net, tensorranks));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetSequenceRanks(s->net, seqranks));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetParallel(s->net, parallel));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetStages(s->net, stages));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetMicroBatches(s->net, micro));
    if (comm != PETSC_COMM_SELF) PetscCall(NetSetPipelineSchedule(s->net, schedule));
    PetscCall(NetSetUp(s->net));
    PetscCall(LossCreate(comm, &s->loss));
    PetscCall(LossSetType(s->loss, c->loss));
  } else if (toggle && comm != PETSC_COMM_SELF) { /* a Net that is set up (and has run) changes its mode */
    NetParallelType now;

    PetscCall(NetGetParallel(s->net, &now));
    PetscCall(NetSetParallel(s->net, now == parallel ? NET_PARALLEL_REPLICATED : parallel));
  }
  PetscCall(NetGetOutputShape(s->net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(NetCreateVecs(s->net, nlocal, &s->X, &s->Y));
  PetscCall(VecDuplicate(s->Y, &s->dY));
  PetscCall(VecDuplicate(s->Y, &s->JY));
  PetscCall(VecDuplicate(s->X, &s->dX));
  PetscCall(VecDuplicate(s->X, &s->dXdir));
  PetscCall(VecCreateMPI(comm, ce ? nlocal : nlocal * nout, PETSC_DETERMINE, &s->T));
  PetscCall(NetCreateParameterVec(s->net, &s->G));
  PetscCall(VecDuplicate(s->G, &s->dtheta));
  PetscCall(FillFromTable(s->X, xtab));
  PetscCall(FillFromTable(s->T, ttab));
  PetscCall(FillFromTable(s->dtheta, ptab));
  PetscCall(FillFromTable(s->dXdir, dxtab));

  if (fb && comm != PETSC_COMM_SELF) { /* -schedule 1f1b, -forward_backward: the loss and gradients in one call */
    PetscReal f;

    PetscCall(VecZeroEntries(s->G));
    PetscCall(LossNetForwardBackward(s->loss, s->net, s->X, s->T, s->Y, &s->f, s->dX, s->G));
    PetscCall(LossEvaluate(s->loss, s->Y, s->T, &f, s->dY)); /* the cotangent of the dot-product test below */
  } else {
    PetscCall(NetForward(s->net, s->X, s->Y));
    PetscCall(LossEvaluate(s->loss, s->Y, s->T, &s->f, s->dY));
    PetscCall(VecZeroEntries(s->G));
    PetscCall(NetBackward(s->net, s->dY, s->dX, s->G));
  }
  if (testmoves && comm != PETSC_COMM_SELF && (stages > 1 || micro > 1 || parallel == NET_PARALLEL_SUBGRAPH || strchr(c->layers, '@'))) {
    PetscReal err;

    PetscCall(NetTestMoves(s->net, &err));
    PetscCheck(err <= 1e-14, comm, PETSC_ERR_PLIB, "The moves between stages fail the dot-product test: %g", (double)err);
  }
  if (schedule == NET_PIPELINE_1F1B) { /* 1F1B keeps a few micro-batches' values: no JVP there (nor on the other side) */
    PetscCall(VecZeroEntries(s->JY));
    s->so = PETSC_FALSE;
    PetscFunctionReturn(0);
  }
  { /* the dot-product test of the JVP against the backward pass at the same point: <J v, dY> = <v, J^T dY>, v = (dX, dtheta)
       (dY copied: in double the Net may hold the very Vec as its output's tangent, which the JVP writes) */
    PetscScalar a, b1, b2;
    Vec         w;

    PetscCall(VecDuplicate(s->dY, &w));
    PetscCall(VecCopy(s->dY, w));
    PetscCall(NetJVP(s->net, s->dXdir, s->dtheta, s->JY));
    PetscCall(VecDot(s->JY, w, &a));
    PetscCall(VecDestroy(&w));
    PetscCall(VecDot(s->dXdir, s->dX, &b1));
    PetscCall(VecDot(s->dtheta, s->G, &b2));
    PetscCheck(PetscAbsScalar(a - b1 - b2) <= 1e-12 * PetscMax(PetscAbsScalar(a), PetscAbsScalar(b1) + PetscAbsScalar(b2)), comm, PETSC_ERR_PLIB, "%s: <J v, w> = %.17g but <v, J^T w> = %.17g: the JVP is not the backward pass's adjoint", c->layers,
               (double)PetscRealPart(a), (double)PetscRealPart(b1 + b2));
  }
  PetscCall(NetHasSecondOrder(s->net, &s->so, NULL));
  if (s->so) { /* along the JVP's direction, with the loss's cotangent held fixed and a zero dYdot */
    PetscCall(VecDuplicate(s->G, &s->Hv));
    PetscCall(VecZeroEntries(s->Hv));
    PetscCall(NetSecondOrderBackward(s->net, s->dY, NULL, NULL, s->Hv));
  }
  PetscFunctionReturn(0);
}

/* the batch's Vecs; the Net and Loss stay for the next batch */
static PetscErrorCode SideDestroyBatch(Side *s)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&s->X));
  PetscCall(VecDestroy(&s->Y));
  PetscCall(VecDestroy(&s->T));
  PetscCall(VecDestroy(&s->dY));
  PetscCall(VecDestroy(&s->G));
  PetscCall(VecDestroy(&s->dX));
  PetscCall(VecDestroy(&s->dtheta));
  PetscCall(VecDestroy(&s->dXdir));
  PetscCall(VecDestroy(&s->JY));
  PetscCall(VecDestroy(&s->Hv));
  PetscFunctionReturn(0);
}

static PetscErrorCode SideDestroy(Side *s)
{
  PetscFunctionBegin;
  PetscCall(SideDestroyBatch(s));
  PetscCall(LossDestroy(&s->loss));
  PetscCall(NetDestroy(&s->net));
  PetscFunctionReturn(0);
}

/* the bytes of the values a Net's double store keeps on this rank (Vecs act, dact, dsum) */
static PetscErrorCode StoredBytes(Net net, PetscReal *bytes)
{
  PetscFunctionBegin;
  *bytes = 0;
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    Vec      vecs[3] = {net->act[v], net->dact[v], net->dsum[v]};
    PetscInt m;

    for (PetscInt i = 0; i < 3; i++)
      if (vecs[i]) {
        PetscCall(VecGetLocalSize(vecs[i], &m));
        *bytes += (PetscReal)m * sizeof(PetscScalar);
      }
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckCase(const Case *c, PetscInt N, Layout layout, Side *s, Side *w)
{
  PetscMPIInt  rank, size;
  PetscInt     n = PETSC_DECIDE, nmin, nmax, P, nout = 16;
  PetscScalar *xtab, *ttab, *ptab, *dxtab;
  PetscRandom  rnd;
  PetscBool    ce;
  PetscReal    eth, eY, ef, eG, edX, eJ, eH = 0, tol = 1e-12;
  Vec          thw, ths;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscStrcmp(c->loss, LOSSCROSSENTROPY, &ce));
  if (layout == LAYOUT_LAST)
    n = rank == size - 1 ? N : 0;
  else {
    PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
    if (layout == LAYOUT_SHIFT && size > 2) {
      PetscInt n1 = N / size + (1 < N % size); /* rank 1's share in the split */

      if (rank == 1) n = 0;
      if (rank == size - 1) n += n1;
    }
  }
  PetscCallMPI(MPI_Allreduce(&n, &nmin, 1, MPIU_INT, MPI_MIN, PETSC_COMM_WORLD));
  PetscCallMPI(MPI_Allreduce(&n, &nmax, 1, MPIU_INT, MPI_MAX, PETSC_COMM_WORLD));

  /* global tables, identical on every rank: inputs, labels or targets, a parameter direction, an input direction */
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.5, 1.5));
  PetscCall(PetscRandomSetSeed(rnd, 41));
  PetscCall(PetscRandomSeed(rnd));
  P = 4096; /* more than any case's parameter count */
  PetscCall(PetscMalloc4(N * c->insize, &xtab, N * nout, &ttab, P, &ptab, N * c->insize, &dxtab));
  for (PetscInt i = 0; i < N * c->insize; i++) PetscCall(PetscRandomGetValue(rnd, &xtab[i]));
  for (PetscInt i = 0; i < N * nout; i++) PetscCall(PetscRandomGetValue(rnd, &ttab[i]));
  if (ce)
    for (PetscInt i = 0; i < N; i++) ttab[i] = (PetscScalar)((3 * i + 1) % 4); /* every crossentropy case has >= 4 classes */
  for (PetscInt i = 0; i < P; i++) PetscCall(PetscRandomGetValue(rnd, &ptab[i]));
  for (PetscInt i = 0; i < N * c->insize; i++) PetscCall(PetscRandomGetValue(rnd, &dxtab[i]));
  PetscCall(PetscRandomDestroy(&rnd));

  PetscCall(SideCompute(PETSC_COMM_SELF, c, N, xtab, ttab, ptab, dxtab, s));
  PetscCall(SideCompute(PETSC_COMM_WORLD, c, n, xtab, ttab, ptab, dxtab, w));
  PetscCall(NetGetNumParameters(w->net, &P));
  PetscCheck(P <= 4096, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Enlarge the parameter direction table");
  if (memratio > 0) { /* the most any rank of the WORLD Net stores, against the one-rank Net */
    PetscReal bw, bs;

    PetscCall(StoredBytes(w->net, &bw));
    PetscCall(StoredBytes(s->net, &bs));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bw, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
    PetscCheck(bw <= memratio * bs, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: a rank stores %.0f bytes of values, %.3f of one rank's %.0f, more than -memory_ratio %g", c->layers, (double)bw, (double)(bw / bs), (double)bs, (double)memratio);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %" PetscInt_FMT " samples: stored values per rank %.3f of one rank's\n", c->layers, N, (double)(bw / bs)));
  }

  if (parratio > 0) { /* what a rank of the WORLD Net keeps of the parameters (its slice of theta, the copy theta_rep, its
                         gradient grad_rep and the JVP's direction dtheta_rep), against the parameters of the nodes it runs */
    PetscReal lo = 0, hi = 0;

    PetscCall(TestParametersHeld(w->net, &lo, &hi));
    PetscCheck(hi <= parratio, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: a rank holds %.3f of its stage's parameters, more than -param_ratio %g", c->layers, (double)hi, (double)parratio);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %" PetscInt_FMT " samples: parameter entries held per rank %.3f to %.3f of its stage's\n", c->layers, N, (double)lo, (double)hi));
  }

  PetscCall(NetGetParameters(w->net, &thw));
  PetscCall(NetGetParameters(s->net, &ths));
  PetscCall(RelativeDifference(thw, ths, &eth));
  PetscCall(RelativeDifference(w->Y, s->Y, &eY));
  ef = PetscAbsReal(w->f - s->f) / PetscAbsReal(s->f);
  PetscCall(RelativeDifference(w->G, s->G, &eG));
  PetscCall(RelativeDifference(w->dX, s->dX, &edX));
  PetscCall(RelativeDifference(w->JY, s->JY, &eJ));
  if (s->so) PetscCall(RelativeDifference(w->Hv, s->Hv, &eH));
  PetscCheck(eth == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: initial parameters differ between WORLD and SELF (relative %g): initialisation depends on the ranks", c->layers, (double)eth);
  PetscCheck(eY <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): outputs differ by %g relative", c->layers, N, LayoutNames[layout], (double)eY);
  PetscCheck(ef <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): loss %.17g on WORLD, %.17g on SELF", c->layers, N, LayoutNames[layout], (double)w->f, (double)s->f);
  PetscCheck(eG <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): parameter gradients differ by %g relative", c->layers, N, LayoutNames[layout], (double)eG);
  PetscCheck(edX <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): input gradients differ by %g relative", c->layers, N, LayoutNames[layout], (double)edX);
  PetscCheck(eJ <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): JVPs differ by %g relative", c->layers, N, LayoutNames[layout], (double)eJ);
  PetscCheck(eH <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s, %" PetscInt_FMT " samples (%s): second-order adjoints differ by %g relative", c->layers, N, LayoutNames[layout], (double)eH);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-34s %-12s %2" PetscInt_FMT " samples, %-20s (%" PetscInt_FMT "..%" PetscInt_FMT " per rank): loss %.10f, outputs, gradients%s agree\n", c->layers, c->loss, N, LayoutNames[layout], nmin, nmax, (double)w->f,
                        schedule == NET_PIPELINE_1F1B ? ""
                        : s->so                       ? ", JVP and second-order adjoint"
                                                      : " and JVP"));
  PetscCall(PetscInfo(NULL, "%s %" PetscInt_FMT " %s: relative differences Y %g f %g G %g dX %g JVP %g Hv %g\n", c->layers, N, LayoutNames[layout], (double)eY, (double)ef, (double)eG, (double)edX, (double)eJ, (double)eH));
  PetscCall(SideDestroyBatch(w));
  PetscCall(SideDestroyBatch(s));
  PetscCall(PetscFree4(xtab, ttab, ptab, dxtab));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt sizes[] = {8, 7, 3, 1};

  char      layers[4096], shape[256], loss[64] = LOSSCROSSENTROPY;
  PetscBool own, flg;
  Case      mine = {layers, 0, loss, {0, {0}}};

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Ranks agree", NULL);
  PetscCall(PetscOptionsEnum("-parallel", "Mode of the WORLD Net", "NetSetParallel", NetParallelTypes, (PetscEnum)parallel, (PetscEnum *)&parallel, NULL));
  PetscCall(PetscOptionsBool("-toggle", "The WORLD Net alternates between replicated and -parallel from batch to batch", "NetSetParallel", toggle, &toggle, NULL));
  PetscCall(PetscOptionsString("-layers", "A case of your own: its layer list", NULL, layers, layers, sizeof(layers), &own));
  PetscCall(PetscOptionsString("-input_shape", "... its input shape", NULL, "", shape, sizeof(shape), &flg));
  PetscCall(PetscOptionsString("-loss", "... its loss", NULL, loss, loss, sizeof(loss), NULL));
  PetscCall(PetscOptionsInt("-stages", "Pipeline stages of the WORLD Net", "NetSetStages", stages, &stages, NULL));
  PetscCall(PetscOptionsInt("-tensor_ranks", "Tensor groups of the WORLD Net", "NetSetTensorRanks", tensorranks, &tensorranks, NULL));
  PetscCall(PetscOptionsInt("-sequence_ranks", "Sequence groups of the WORLD Net", "NetSetSequenceRanks", seqranks, &seqranks, NULL));
  PetscCall(PetscOptionsInt("-microbatches", "Micro-batches of the WORLD Net", "NetSetMicroBatches", micro, &micro, NULL));
  PetscCall(PetscOptionsBool("-test_moves", "Dot-product test of the moves between stages", "NetTestMoves", testmoves, &testmoves, NULL));
  PetscCall(PetscOptionsReal("-param_ratio", "Assert that a rank of the WORLD Net holds <= this times its stage's parameters (theta's slice, theta_rep, grad_rep, dtheta_rep)", NULL, parratio, &parratio, NULL));
  PetscCall(PetscOptionsReal("-memory_ratio", "Assert the WORLD Net's stored values per rank <= this times the SELF Net's", NULL, memratio, &memratio, NULL));
  PetscCall(PetscOptionsBool("-forward_backward", "The WORLD Net's loss and gradients by LossNetForwardBackward()", "LossNetForwardBackward", fb, &fb, NULL));
  PetscCall(PetscOptionsEnum("-schedule", "The WORLD Net's pipeline schedule", "NetSetPipelineSchedule", NetPipelineSchedules, (PetscEnum)schedule, (PetscEnum *)&schedule, NULL));
  if (schedule == NET_PIPELINE_1F1B) fb = PETSC_TRUE;
  PetscOptionsEnd();
  if (micro > 1) /* the backward pass takes batches of whole micro-batches */
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) sizes[i] = micro * (4 - (PetscInt)i) + (i == 3 ? 0 : 0);
  if (own) {
    PetscCheck(flg, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-layers needs -input_shape");
    PetscCall(PetNetShapeFromString(shape, &mine.shape));
    PetscCall(PetNetShapeSize(&mine.shape, &mine.insize));
  }
  for (size_t k = 0; k < (own ? 1 : sizeof(cases) / sizeof(cases[0])); k++) {
    Side s = {0}, w = {0};

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
      for (int layout = LAYOUT_DECIDE; layout <= LAYOUT_LAST; layout++) PetscCall(CheckCase(own ? &mine : &cases[k], sizes[i], (Layout)layout, &s, &w));
    PetscCall(SideDestroy(&s));
    PetscCall(SideDestroy(&w));
  }
  PetscCall(PetscFinalize());
  return 0;
}
