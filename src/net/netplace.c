/*
  Placement (-net_stages S, -net_microbatches M, NetSetNodePlacement()): the nodes of a Net cut into S stages of
  consecutive nodes, stage s running on the ranks [s G, (s + 1) G) (G = P / S, each stage data parallel over its group),
  and the batch cut into M micro-batches that flow through the stages as a pipeline (GPipe: every forward, then every
  backward). One more executor (NetExecPlaced) and a schedule for the one walk of netforward.c; nothing else changes:
  the loss, the optimizers and the checkpoints see the same public batch and parameter Vecs as without placement.

  Layouts. A batch of N samples is cut into M micro-batches of b = N / M consecutive samples. A value lives in one of:

    public    the caller's split of the batch (the Net's input X, value 0, and output Y, value L): rank p holds the
              samples [o_p, o_p + n_p); micro-batch m on p is [m b, (m + 1) b) within that range
    stage s   for every micro-batch, its b samples split evenly over the G ranks of stage s (rank j of the group takes
              b / G, one more if j < b % G), micro-batch after micro-batch: rank j's rows of micro-batch m start at
              m share_j. Ranks outside the stage hold nothing.

  Node k of stage s computes in stage s's layout. Its output (v = k + 1) stays there, except the last node's, which
  goes to the public layout. An edge from a value in another layout (the input, or the output of an earlier stage) is
  a move: a redistribution of whole samples between two layouts of the same global order, so each rank exchanges one
  contiguous run of rows with each peer. Forward it copies the value into a receive buffer of the consumer's layout;
  its adjoint sends the consumer's cotangent back, and the producer adds it into its value's cotangent (or copies it,
  when it is the first contribution to that micro-batch). R R^T = I on the moved rows: the adjoint is exact, and
  NetPlaceTestMoves_Private() checks <R x, y> = <x, R^T y> for every move.

    node (stage s) <-- move(e) <-- value v (stage s' < s, or public)            forward:  buf_e  = R_e act[v]
                   --> dcot_e  --> rcot_e -> dact[v] (+=)                       backward: dact[v] += R_e^T dcot_e

  Schedule (GPipe). The walk runs, for s = 0..S-1, for m = 0..M-1, the nodes of stage s on micro-batch m. A move is
  begun (MPI_Isend/MPI_Irecv) as soon as its rows exist and ended (MPI_Waitall) just before they are read: a rank of
  stage 1 passes through stage 0's part at once (no rows there) and waits for each micro-batch of stage 0 as it is
  sent, while stage 0 computes the next. Backward mirrors it, stages and micro-batches in reverse. All ranks make the
  same calls in the same order, so the moves match; no collective runs inside the walk but a sharded stage's gathers
  and reduce-scatters on the stage's own communicator (why they cannot deadlock: NetPlaceSetUpParameters_Private()).
  Each node's parameter pass over all micro-batches (GPipe) runs at the walk's end, after the rank's last cotangent
  has been sent, so the stages take their weight gradients side by side. The time spent waiting for moves is the log
  event NetPlaceWait (-log_view; -log_trace gives each rank's timeline of it and of the nodes' events).

  Parameters: the parameter Vec is laid out so that each stage's ranks own its nodes' parameters, and each rank keeps
  a copy of its own stage's block only (theta_rep holds this rank's runs, repoff[k] is node k's place in it): the
  parameters and their optimizer state per rank fall as 1/P, the copy as 1/S. The broadcast of the replicated mode is
  the gather of those runs (NetParamMap, netpmap.c), a MATSHELL with its exact adjoint, the reduce of the gradients.
  With -net_parallel sharded there is no copy: each node of a stage gathers its block over the stage's ranks just
  before each of its steps (ZeRO-3 inside the stage, NetPlaceSetUpParameters_Private()), so a rank keeps 1/G of its
  stage's parameters. With -net_parallel model each dense and convolution node of a stage splits its weights over the
  stage's ranks (netmodel.c's executor on the stage's communicator, NetPlaceSplitStepBegin()): theta_rep holds the runs of
  the rank's block of such a node (NetNode.runstart/runlen) and whole blocks of the others. With -net_parallel tensor
  the same, each stage one tensor group (or G / P groups of -net_tensor_ranks P, data parallel over them), the split
  Megatron's per node (attention by heads, dense:N:tokens column- or row-parallel; netmodel.c). With -net_parallel
  sequence each stage is one sequence group: the parameters as in the
  replicated mode, and each attention node of a stage computes the queries of the rank's tokens (netsequence.c's
  sequence node on the stage's communicator, NetExecPlacedSequence: its input moved to the stage's token split and
  its output back); the other nodes run on the stage's sample split.

  Grid mode (NetSetGrid(), netspatial.c; NetPlaceSetUpGrid()): each stage runs spatially parallel on its own DMDA of
  the grid's sizes over its ranks (net->sgrid on net->scomm, decomposed alike in every stage). A sample is a grid
  point; micro-batch m is the fields [m nf / M, (m + 1) nf / M) and a value's rows on a rank are, field after field, the
  points of its block of the value's grid (off the grid, after a globalavgpool: one a field on the stage's first rank),
  so NetPlaceRange() takes the value. Rank j of two stages holds the same rows: a stage-to-stage move goes rank to rank;
  the Net's input moves from the caller's DMDA (over all ranks) to stage 0's by a PetscSF over grid points (NetMove.sf,
  its adjoint the reduce). A spatial node runs NetExecPlacedSpatial (its own rows of its input and output values).
  With -net_spatial_groups G each stage's ranks are cut into G groups of consecutive ranks, each its own DMDA (net->sgrid
  on net->scomm is then the stage group's), stage group g holding the fields of the caller's group g: data parallel
  over the groups, the gradient summed over the stage as any node's. With -net_parallel sharded a spatial node's
  parameters are sharded over its stage's ranks as any node's (its map gathers the block before each step and
  reduce-scatters the gradient after it: a spatial node's parameter part is per micro-batch, never deferred).

  Random draws (dropout, attention dropout: Layer.draws). A mask is a hash of (seed, layer index, pass counter, GLOBAL
  element index), so the placed Net draws one rank's masks when every step draws at the global place of its rows and
  every micro-batch of a pass with the same counter. The counter of every drawing layer advances once per training
  forward pass, on every rank, at the walk's start (NetPlaceAdvanceCounters(): a rank that does not run a node still
  counts its passes, so a checkpoint written by any rank holds the counters the unplaced Net would have); each step then
  runs the layer frozen at that counter, its rows' first global sample g0 (NetPlaceRange()) handed to the kind's entry
  for a given place (LayerDropoutSetColumnBlock_C, LayerAttentionSetBlockOffset_C) instead of its MPI_Exscan over the
  Net's ranks, which a stage alone would not reach (NetPlaceDrawBegin()/End()).

  State of a forward pass. A layer that keeps more of a forward than its input and output arrays (not Layer.actonly:
  a dropout mask, normalisation statistics, attention's Q, K, V and log-sum-exps) holds that of its last forward step
  only. Its backward step on another micro-batch runs its forward on that micro-batch again first (the same bits: the
  same rows, parameters and frozen counter; the output into a scratch buffer, the stored one is untouched), so backward
  reads the state of its own micro-batch (GPipe's re-materialisation, for these kinds only); and its parameter part is
  taken micro-batch by micro-batch, never deferred to one pass over all of them.

  Memory: each move keeps a receive buffer of the moved value and one of its cotangent in the consumer's layout, and one
  of the cotangent in the producer's (the last node's output: its value and cotangent in its stage's layout). A stage
  keeps every micro-batch's values until its backward (GPipe). NetJVP() adds, at its first call on a batch, one buffer
  a move for the moved value's tangent (the consumer's layout), kept for NetSecondOrderBackward() (the tangent walk, below).
*/
#include <petnet/private/netimpl.h>
#include "netpmap.h"
#include <petscbt.h>
#include <petscsf.h>
#include <petscdmda.h>

const char *const NetPipelineSchedules[] = {"gpipe", "1f1b", "NetPipelineSchedule", "NET_PIPELINE_", NULL};

#define NET_PLACE_PUBLIC (-1)

static PetscLogEvent NET_PLACE_WAIT = 0; /* a rank waiting for a move's rows (the pipeline's bubble, and the moves' latency) */

typedef struct {
  PetscInt     src, dst; /* layouts: NET_PLACE_PUBLIC or a stage */
  PetscInt     v;        /* the value moved: 0 the Net's input, k + 1 node k's output */
  PetscInt     k, i;     /* its consumer and the input it feeds; k = -1: the output move (last node -> value L) */
  PetscInt     size;     /* entries a sample */
  char        *dval;     /* the consumer's layout (dst): the value received (the output move: the last node's output, src) */
  char        *dcot;     /* ... its cotangent, written by the consumer's backward (the output move: dY received, src) */
  char        *rcot;     /* the producer's layout (src): the cotangent received back */
  MPI_Request *req;      /* per micro-batch, up to 2 P requests */
  PetscMPIInt *nreq;
  /* on a grid, the Net's input moved to a stage (NetPlaceGridRange()): a PetscSF from the public grid's blocks (roots)
     to the stage grid's (leaves) for one micro-batch of fields, unit a point's size stored entries (bytes); per micro-batch the root
     and leaf arrays of the move in flight (a broadcast, or reverse: the reduce of its adjoint) */
  PetscSF      sf;
  MPI_Datatype unit[2]; /* a point's stored entries, and its doubles (NetPlaceTestMoves_Private() moves doubles) */
  char       **sfroot, **sfleaf;
  PetscBool   *sfrev;
} NetMove;

typedef struct {
  MPI_Comm    comm; /* a duplicate of the Net's: the moves' tags are their own */
  PetscMPIInt size, rank;
  PetscInt    S, M, G; /* stages, micro-batches, ranks a stage */
  PetscInt    mystage;
  PetscInt   *first, *last; /* stage s holds the nodes first[s] .. last[s] (staged) */
  PetscReal  *cost;         /* per group: the cost model's estimate (flops + bytes a sample) */
  /* the groups of ranks the nodes run on: group g is the ranks [glo[g], glo[g] + gn[g]); with stages (staged) group s
     is stage s, [s G, (s + 1) G); entry@ranks=a:b and -net_parallel subgraph add others, which may overlap */
  PetscInt  ngroups, *glo, *gn;
  PetscInt *group;          /* per node: its group */
  PetscBool staged;         /* the groups are the S stages, each a run of consecutive nodes in rank order */
  PetscInt  nrep;           /* the parameters of the nodes of this rank's groups (theta_rep's size) */
  PetscInt  nseg, nregions; /* the schedule's segments; subgraph: the fork-joins split */
  /* 1F1B (-net_pipeline_schedule 1f1b): a stage keeps K micro-batches' rows (K = S < M; 0: every micro-batch's, GPipe),
     micro-batch m in slot m % K; sched1: the schedule of NetForwardBackward(), triples (kind, node, micro-batch), kind
     0 a forward step, 1 the output's step (the caller's cotangent of micro-batch m), 2 a backward step; fb: inside it */
  PetscInt  K;
  PetscInt *sched1, nsched1;
  PetscBool fb;
  PetscInt  nmoves;
  NetMove  *moves;  /* the crossing edges, then the output move */
  PetscInt *movein; /* (nlayers x max inputs): the move of input i of node k, or -1 */
  PetscInt  maxin;
  PetscInt  es; /* bytes of a stored entry */
  /* the batch (NetPlaceCounts_Private()): N samples in M micro-batches */
  PetscInt  N;
  PetscInt *pub;   /* size + 1: the public split, rank p holding samples [pub[p], pub[p + 1]) (N = pub[size]) */
  PetscBool ready; /* buffers made for this batch */
  /* the walk */
  PetscInt   m;     /* the micro-batch at hand (-1: all, for a node's parameter part) */
  char      *fwork; /* a kernel on entries of another type: the converted rows of a step (NetPlaceScratch()), bytes */
  size_t     nfwork;
  PetscBool  wantdx; /* backward: the input's cotangent is asked for */
  PetscBool *seeded; /* (nlayers + 1) x M: the cotangent of value v on micro-batch m holds a first contribution */
  PetscInt  *sched;  /* the schedule: nsched pairs (node, micro-batch), forward order */
  PetscInt   nsched;
  /* a node whose layer keeps state of its forward pass beyond its input and output arrays (not Layer.actonly: masks,
     statistics, attention's Q, K, V) holds that of its last forward step: fwdm[k], the micro-batch of that step (-1:
     none); its backward step on another micro-batch runs the forward again first, into rwork (NetPlaceRecompute()) */
  PetscInt      *fwdm;
  char          *rwork;
  size_t         nrwork;
  PetscLogDouble busy, wall, t0; /* NetGetPipelineTimes() */
  /* NetJVP() and NetSecondOrderBackward() (the tangent walk below): per move, the tangent of the moved value in the
     consumer's layout (the output move: the last node's output tangent, in its stage's layout), made at the first JVP
     of a batch; the tangents' moves run on their own duplicate of the communicator */
  char   **tan;
  MPI_Comm tcomm;
  /* NetGetNodeArraysRead() on a store of float or bfloat16 entries: the widened copies of a node's rows that came from
     a move's buffer (its input's dval, the last node's output cotangent dcot), kept with the placement and grown to the
     largest node (not a malloc a get: K-FAC reads every node every step); freed with the placement */
  PetscScalar *wide[2];
  size_t       nwide[2];
  /* -net_parallel sharded (ZeRO-3 inside each stage): the communicator of this rank's stage, the ranks [s G, (s + 1) G)
     in rank order, over which its nodes' parameter maps gather and reduce-scatter (NetPlaceSetUpParameters_Private()) */
  MPI_Comm gcomm;
  /* -net_parallel tensor with -net_tensor_ranks P (sequence with -net_sequence_ranks P) below the stage's G ranks: this
     rank's tensor (sequence) group inside its stage, the stage's ranks [j0, j0 + P) (j0 = j - j % P for stage rank j),
     over which its attention and dense:N:tokens nodes split (its attention nodes' tokens), the groups data parallel
     over the micro-batch's rows of the stage (MPI_COMM_NULL, 0: the stage is one group, gcomm) */
  MPI_Comm grpcomm;
  PetscInt grpP;
  /* grid mode (NetSetGrid(), netspatial.c): a sample is a grid point and the batch nf fields of each spatial group;
     micro-batch m is the fields [F_m, F_{m+1}) of every group (F_m = m nf / M, M divides nf) and a rank holds, of each
     field of its group, u units of a value: the points of its block of the value's grid, or off the grid (after a
     globalavgpool) 1 on the first rank of its group. Every stage's grids are decomposed alike, so rank j of any stage
     holds the same block of the same group's fields: units[v G + j] (value v, stage rank j); punits[p] the public
     grid's points on rank p (the Net's input; its output is off the grid, on the first rank of each of the caller's
     groups of pg ranks: -net_spatial_groups cuts the Net's ranks into size / pg groups, each stage's into as many) */
  PetscBool grid;
  PetscInt  nf, pg;
  PetscInt *units, *punits;
} NetPlace;

static PetscInt NetPlaceLayoutOfValue(Net net, PetscInt v)
{
  return (v == 0 || v == net->nlayers) ? NET_PLACE_PUBLIC : ((NetPlace *)net->pl)->group[v - 1];
}

static PetscBool NetPlaceInGroup(const NetPlace *pl, PetscInt g, PetscMPIInt r)
{
  return (PetscBool)(r >= pl->glo[g] && r < pl->glo[g] + pl->gn[g]);
}

/* the first global sample of micro-batch m: the batch cut as evenly as it goes, B(m) = floor(m N / M) */
static PetscInt NetPlaceMicroStart(const NetPlace *pl, PetscInt m)
{
  return (PetscInt)(((PetscInt64)m * pl->N) / pl->M);
}

/* rank j's share of b samples split evenly over G ranks, and its first sample */
static void NetPlaceShare(PetscInt b, PetscInt G, PetscInt j, PetscInt *start, PetscInt *share)
{
  const PetscInt q = b / G, rem = b % G;

  *share = q + (j < rem ? 1 : 0);
  *start = j * q + PetscMin(j, rem);
}

/*
  Grid mode: rank r's rows of value v of micro-batch m in layout l. The rows of a micro-batch are its fields' units
  (field-major, [fields][units][entries]); their global order is micro-batch, then rank of the layout, then the rank's
  rows, so rank j of two stages holds the same global rows (the same block): a move between stages goes rank to rank.
  The public layout orders its ranks alike (only the output's rows, on the first rank of each spatial group, are
  matched: group g's before group g + 1's in a stage as in the caller's layout; the input moves by its PetscSF).
*/
static void NetPlaceGridRange(const NetPlace *pl, PetscInt v, PetscInt l, PetscMPIInt r, PetscInt m, PetscInt *g0, PetscInt *n, PetscInt *row)
{
  const PetscInt f0 = (PetscInt)(((PetscInt64)m * pl->nf) / pl->M), nfm = (PetscInt)(((PetscInt64)(m + 1) * pl->nf) / pl->M) - f0;
  const PetscInt P = l == NET_PLACE_PUBLIC ? pl->size : pl->gn[l], j = l == NET_PLACE_PUBLIC ? r : r - pl->glo[l];
  PetscInt       before = 0, total = 0, u;

  if (l != NET_PLACE_PUBLIC && !NetPlaceInGroup(pl, l, r)) {
    *g0  = 0;
    *n   = 0;
    *row = 0;
    return;
  }
  for (PetscInt q = 0; q < P; q++) {
    u = l == NET_PLACE_PUBLIC ? (v == 0 ? pl->punits[q] : (q % pl->pg == 0 ? 1 : 0)) : pl->units[v * pl->G + q];
    if (q < j) before += u;
    total += u;
  }
  u    = l == NET_PLACE_PUBLIC ? (v == 0 ? pl->punits[j] : (j % pl->pg == 0 ? 1 : 0)) : pl->units[v * pl->G + j];
  *n   = nfm * u;
  *row = (l != NET_PLACE_PUBLIC && pl->K) ? (m % pl->K) * (pl->nf / pl->M) * u : f0 * u; /* 1F1B: slot m % K of a stage */
  *g0  = f0 * total + nfm * before;
}

/* rank r's samples of value v of micro-batch m in layout l: global [*g0, *g0 + *n), its first local row *row (in batch
   mode every value has the same rows: v matters on a grid only) */
static void NetPlaceRange(const NetPlace *pl, PetscInt v, PetscInt l, PetscMPIInt r, PetscInt m, PetscInt *g0, PetscInt *n, PetscInt *row)
{
  const PetscInt mb = NetPlaceMicroStart(pl, m), me = NetPlaceMicroStart(pl, m + 1);

  if (pl->grid) {
    NetPlaceGridRange(pl, v, l, r, m, g0, n, row);
    return;
  }
  if (l == NET_PLACE_PUBLIC) {
    const PetscInt lo = PetscMax(mb, pl->pub[r]), hi = PetscMin(me, pl->pub[r + 1]);

    *g0  = lo;
    *n   = PetscMax(0, hi - lo);
    *row = lo - pl->pub[r];
  } else if (!NetPlaceInGroup(pl, l, r)) {
    *g0  = mb;
    *n   = 0;
    *row = 0;
  } else {
    const PetscInt G = pl->gn[l], j = r - pl->glo[l];
    PetscInt       start, rows      = 0;

    if (pl->K) { /* 1F1B: slot m % K of the rows of the largest micro-batch */
      const PetscInt cap = ((pl->N + pl->M - 1) / pl->M + G - 1) / G;

      NetPlaceShare(me - mb, G, j, &start, n);
      *g0  = mb + start;
      *row = (m % pl->K) * cap;
      return;
    }
    for (PetscInt i = 0; i < m; i++) { /* the rows of the micro-batches before */
      PetscInt st, sh;

      NetPlaceShare(NetPlaceMicroStart(pl, i + 1) - NetPlaceMicroStart(pl, i), G, j, &st, &sh);
      rows += sh;
    }
    NetPlaceShare(me - mb, G, j, &start, n);
    *g0  = mb + start;
    *row = rows;
  }
}

/* the rows of value v on this rank in layout l: all micro-batches */
static PetscInt NetPlaceLocalRows(const NetPlace *pl, PetscInt v, PetscInt l, PetscInt nlocal)
{
  PetscInt g0, n, row;

  if (l == NET_PLACE_PUBLIC && !pl->grid) return nlocal;
  if (pl->grid) { /* the last micro-batch's rows, or the last slot's */
    NetPlaceRange(pl, v, l, pl->rank, l != NET_PLACE_PUBLIC && pl->K ? pl->K - 1 : pl->M - 1, &g0, &n, &row);
    return row + n;
  }
  if (pl->K) return NetPlaceInGroup(pl, l, pl->rank) ? pl->K * (((pl->N + pl->M - 1) / pl->M + pl->gn[l] - 1) / pl->gn[l]) : 0; /* 1F1B: K slots */
  NetPlaceRange(pl, v, l, pl->rank, pl->M - 1, &g0, &n, &row);
  return row + n;
}

PetscBool NetPlaced_Private(Net net)
{
  return (PetscBool)(net->pl != NULL);
}

/* grid mode: the fields of a micro-batch, which the spatial nodes of a stage take as their batch (netspatial.c) */
PetscInt NetPlaceGridFields_Private(Net net)
{
  const NetPlace *pl = (const NetPlace *)net->pl;

  return pl->nf / pl->M;
}

/* Node k's rows of the micro-batch at hand on this rank (m < 0: of all of them) */
PetscErrorCode NetPlaceNodeRows_Private(Net net, PetscInt k, PetscInt *row, PetscInt *n)
{
  NetPlace *pl = (NetPlace *)net->pl;
  PetscInt  g0;

  PetscFunctionBegin;
  if (pl->m < 0) { /* every micro-batch (a node's parameter part, NetBackward()) */
    NetPlaceRange(pl, k + 1, pl->group[k], pl->rank, pl->M - 1, &g0, n, row);
    *n += *row;
    *row = 0;
    PetscFunctionReturn(0);
  }
  NetPlaceRange(pl, k + 1, pl->group[k], pl->rank, pl->m, &g0, n, row);
  PetscFunctionReturn(0);
}

/* The rows of value v on this rank in the micro-batch at hand, as entries [e0, e0 + ne) of its array (the fan-out sums of
   the walk add only these) */
PetscErrorCode NetPlaceValueEntries_Private(Net net, PetscInt v, PetscInt size, PetscInt *e0, PetscInt *ne)
{
  NetPlace *pl = (NetPlace *)net->pl;
  PetscInt  g0, n, row;

  PetscFunctionBegin;
  if (pl->m < 0) { /* a node's parameter part over every micro-batch: its rows are all of them */
    NetPlaceRange(pl, v, NetPlaceLayoutOfValue(net, v), pl->rank, pl->M - 1, &g0, &n, &row);
    *e0 = 0;
    *ne = (row + n) * size;
    PetscFunctionReturn(0);
  }
  NetPlaceRange(pl, v, NetPlaceLayoutOfValue(net, v), pl->rank, pl->m, &g0, &n, &row);
  *e0 = row * size;
  *ne = n * size;
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   Set-up: the stages (the cost model, or the nodes' own placement), the checks, the moves */

/* the cost model of node k per sample: its multiply-adds (about its parameters, for dense and convolutions: each
   weight meets every output position once, so a convolution counts its weights times its output positions / its
   channels) plus the entries it reads and writes */
static PetscReal NetPlaceNodeCost(Net net, PetscInt k)
{
  const Layer l     = net->layers[k];
  PetscReal   flops = 2.0 * (PetscReal)l->nparams;
  PetscReal   bytes = (PetscReal)l->outsize;

  for (PetscInt i = 0; i < l->nin; i++) bytes += (PetscReal)l->insizes[i];
  if (l->nparams && l->out.ndim > 1) flops *= (PetscReal)l->outsize / (PetscReal)l->out.dim[l->out.ndim - 1]; /* positions */
  return flops + bytes;
}

/* cut the chain of nodes into S consecutive stages minimising the largest stage cost (dynamic programming over the
   cut points, O(S L^2)) */
static PetscErrorCode NetPlaceBalance(Net net, PetscInt S)
{
  const PetscInt L = net->nlayers;
  PetscReal     *pre, *best;
  PetscInt      *cut;

  PetscFunctionBegin;
  PetscCall(PetscMalloc3(L + 1, &pre, (S + 1) * (L + 1), &best, (S + 1) * (L + 1), &cut));
  pre[0] = 0;
  for (PetscInt k = 0; k < L; k++) pre[k + 1] = pre[k] + NetPlaceNodeCost(net, k);
  /* best[s][j]: the least largest cost of the first j nodes in s stages; cut[s][j] the first node of the last stage */
  for (PetscInt s = 0; s <= S; s++)
    for (PetscInt j = 0; j <= L; j++) best[s * (L + 1) + j] = PETSC_MAX_REAL;
  best[0] = 0;
  for (PetscInt s = 1; s <= S; s++)
    for (PetscInt j = s; j <= L; j++)
      for (PetscInt i = s - 1; i < j; i++) {
        const PetscReal prev = best[(s - 1) * (L + 1) + i], c = PetscMax(prev, pre[j] - pre[i]);

        if (prev < PETSC_MAX_REAL && c < best[s * (L + 1) + j]) {
          best[s * (L + 1) + j] = c;
          cut[s * (L + 1) + j]  = i;
        }
      }
  for (PetscInt s = S, j = L; s >= 1; s--) {
    const PetscInt i = cut[s * (L + 1) + j];

    for (PetscInt k = i; k < j; k++) net->nodes[k].stage = s - 1;
    j = i;
  }
  PetscCall(PetscFree3(pre, best, cut));
  PetscFunctionReturn(0);
}

/* the first node without a placement of its own (0 when all have one) */
static PetscInt NetPlaceFirstUnplaced(Net net)
{
  for (PetscInt k = 0; k < net->nlayers; k++)
    if (!net->nodes[k].stageset) return k;
  return 0;
}

/* what placement does not run with yet, said before anything is built */
static PetscErrorCode NetPlaceCheckModes(Net net)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);

  PetscFunctionBegin;
  /* every -net_parallel mode runs inside a stage (replicated, sharded, model, tensor, sequence) or places the nodes
     itself (subgraph): what does not is said below */
  if (net->grid) { /* each stage spatially parallel over its ranks (NetPlaceSetUpGrid()); what that does not cover yet */
    const PetscInt S = PetscMax(1, net->nstages);
    PetscMPIInt    size;

    PetscCallMPI(MPI_Comm_size(comm, &size));
    PetscCheck(size % S || (size / S) % net->ngroups == 0, comm, PETSC_ERR_ARG_INCOMP,
               "-net_spatial_groups %" PetscInt_FMT " with -net_stages %" PetscInt_FMT " on %d ranks: inside stages each stage's %d ranks are cut into the %" PetscInt_FMT
               " spatial groups (consecutive ranks, each its own DMDA), which %d ranks do not tile: give -net_spatial_groups a divisor of %d (1: each stage one group), or -net_stages S with S x %" PetscInt_FMT " dividing %d",
               net->ngroups, S, size, size / (PetscMPIInt)S, net->ngroups, size / (PetscMPIInt)S, size / (PetscMPIInt)S, net->ngroups, size);
    PetscCheck(net->parallel == NET_PARALLEL_REPLICATED || net->parallel == NET_PARALLEL_SHARDED, comm, PETSC_ERR_SUP,
               "-net_stages %" PetscInt_FMT
               " on a grid runs each stage spatially parallel over its ranks with its parameters replicated or sharded over the stage's ranks; a spatial stage that is also -net_parallel %s (partitioned spatial+model convolutions, "
               "sub-graphs) is not built: use -net_parallel replicated or sharded, or drop the stages",
               net->nstages, NetParallelTypes[net->parallel]);
  }
  PetscCheck(!net->fcachesize, comm, PETSC_ERR_SUP, "-net_forward_cache with -net_stages / -net_microbatches / -net_parallel subgraph is not built: drop one of them");
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const Layer l = net->layers[k];
    PetscBool   bn;

    PetscCall(PetscObjectTypeCompare((PetscObject)l, LAYERBATCHNORM, &bn));
    PetscCheck(!l->collective && !bn, comm, PETSC_ERR_SUP,
               "Node %s (%s) communicates over the Net's ranks in its kernels (its statistics or its operator span the whole batch), which a pipeline stage does not hold: with -net_stages / -net_microbatches each micro-batch would get its own "
               "statistics. Use layernorm instead of batchnorm, or drop the stages",
               net->nodes[k].name, ((PetscObject)l)->type_name);
  }
  PetscFunctionReturn(0);
}

/*
  Grid mode: every stage's grid decomposed alike (the same blocks on rank j of every stage), the units of each value on
  the stage ranks and of the Net's input on the public grid's ranks (NetPlaceGridRange()), and what is not built: a
  placement that is not the stages in order, a join that repartitions its inputs, an output on the grid.
*/
static PetscErrorCode NetPlaceSetUpGrid(Net net, PetscBool byranks)
{
  NetPlace      *pl   = (NetPlace *)net->pl;
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  const PetscInt L    = net->nlayers;
  PetscInt      *mine, *all, xs[3];
  PetscMPIInt    ssize = 0;

  PetscFunctionBegin;
  if (net->sgrid) PetscCallMPI(MPI_Comm_size(net->scomm, &ssize));
  PetscCheck(
      net->sgrid && pl->staged && !byranks && ssize == pl->G / net->ngroups, comm, PETSC_ERR_SUP,
      "Pipeline stages on a grid (NetSetGrid()) are the -net_stages stages of consecutive nodes in rank order (or -net_microbatches alone); nodes placed on stages or ranks of their own are not built: give -net_stages and drop the nodes' placements");
  PetscCheck(!net->vgrid[L], comm, PETSC_ERR_SUP,
             "With -net_stages on a grid the Net's output must leave the grid (end it with a globalavgpool, then a head): an output on the grid, moved from the last stage's decomposition back to the grid's, is not built yet; node %s's output lies "
             "on the grid",
             net->nodes[L - 1].name);
  for (PetscInt k = 0; k < L; k++)
    PetscCheck(net->nodes[k].nin == 1 || !net->nodes[k].sp, comm, PETSC_ERR_SUP,
               "Node %s joins values on grids of different ownership (a repartitioned join), which a stage on a grid does not run yet: give its inputs the same strides and pools, or drop -net_stages", net->nodes[k].name);
  pl->grid = PETSC_TRUE;
  PetscCall(PetscMalloc2(L + 1, &mine, (L + 1) * pl->size, &all));
  for (PetscInt v = 0; v <= L; v++) PetscCall(NetSpatialStageUnits_Private(net, v, &mine[v]));
  PetscCallMPI(MPI_Allgather(mine, (PetscMPIInt)(L + 1), MPIU_INT, all, (PetscMPIInt)(L + 1), MPIU_INT, comm));
  PetscCall(PetscMalloc2((L + 1) * pl->G, &pl->units, pl->size, &pl->punits));
  for (PetscMPIInt r = 0; r < pl->size; r++)
    for (PetscInt v = 0; v <= L; v++) {
      const PetscInt j = r % pl->G;

      if (r < pl->G) pl->units[v * pl->G + j] = all[r * (L + 1) + v];
      PetscCheck(all[r * (L + 1) + v] == pl->units[v * pl->G + j], comm, PETSC_ERR_PLIB, "The stages' grids are not decomposed alike (value %" PetscInt_FMT ", stage rank %" PetscInt_FMT ")", v, j);
    }
  PetscCall(DMDAGetCorners(net->grid, NULL, NULL, NULL, &xs[0], &xs[1], &xs[2]));
  mine[0] = xs[0] * xs[1] * xs[2];
  PetscCallMPI(MPI_Allgather(mine, 1, MPIU_INT, pl->punits, 1, MPIU_INT, comm));
  PetscCall(PetscFree2(mine, all));
  pl->pg = pl->size / net->ngroups;
  if (net->ngroups > 1) { /* the caller's groups' DMDAs decomposed alike: a stage group reads its group's blocks where its own DMDA has them */
    PetscInt corner[6], *corners;

    PetscCall(DMDAGetCorners(net->grid, &corner[0], &corner[1], &corner[2], &corner[3], &corner[4], &corner[5]));
    PetscCall(PetscMalloc1(6 * pl->size, &corners));
    PetscCallMPI(MPI_Allgather(corner, 6, MPIU_INT, corners, 6, MPIU_INT, comm));
    for (PetscMPIInt r = 0; r < pl->size; r++)
      for (PetscInt a = 0; a < 6; a++)
        PetscCheck(corners[6 * r + a] == corners[6 * (r % pl->pg) + a], comm, PETSC_ERR_ARG_INCOMP,
                   "-net_spatial_groups %" PetscInt_FMT
                   " with -net_stages: the groups' DMDAs given to NetSetGrid() must split the grid alike (rank %d owns another block than rank %d of group 0): give every group the same ownership ranges, or PETSC_DECIDE",
                   net->ngroups, r, r % (PetscMPIInt)pl->pg);
    PetscCall(PetscFree(corners));
  }
  PetscFunctionReturn(0);
}

/* the group of the ranks [lo, lo + n): an existing one, or a new one */
static PetscInt NetPlaceAddGroup(NetPlace *pl, PetscInt lo, PetscInt n)
{
  for (PetscInt g = 0; g < pl->ngroups; g++)
    if (pl->glo[g] == lo && pl->gn[g] == n) return g;
  pl->glo[pl->ngroups] = lo;
  pl->gn[pl->ngroups]  = n;
  return pl->ngroups++;
}

/*
  -net_parallel subgraph: the independent branches of the graph on disjoint groups of ranks, every other node on all
  ranks (group 0). A join is a node of several inputs; branch j of a join J is what only its input j depends on,

    B_j = anc(in_j) \ U_{l != j} anc(in_l)        (anc(v): v and every node v depends on)

  so no path runs between two branches (a path from x in B_j to y in B_l would make x an ancestor of in_l). The joins
  are taken latest first, so that an outer fork-join takes its branches whole before an inner one inside a branch;
  a join whose branches hold a node already placed, or that has fewer than two branches, is left on all ranks. The
  ranks are shared out in proportion to the branches' costs (each at least one; more branches than ranks: each on
  one rank, the costliest first on the least loaded).
*/
static PetscErrorCode NetPlaceSubgraph(Net net)
{
  NetPlace      *pl = (NetPlace *)net->pl;
  const PetscInt L = net->nlayers, P = pl->size;
  PetscBT       *anc, br[NET_MAX_STACK_INPUTS];
  PetscBool     *placed;
  PetscInt      *branch, *nr, *first;
  PetscReal     *cost, *load;

  PetscFunctionBegin;
  PetscCall(PetscMalloc7(L, &anc, L, &placed, L, &branch, L, &nr, L, &cost, P, &load, L, &first));
  for (PetscInt k = 0; k < L; k++) {
    PetscCall(PetscBTCreate(L, &anc[k]));
    PetscCall(PetscBTSet(anc[k], k));
    for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
      const PetscInt u = net->nodes[k].in[i];

      if (u != NET_INPUT)
        for (PetscInt x = 0; x <= u; x++)
          if (PetscBTLookup(anc[u], x)) PetscCall(PetscBTSet(anc[k], x));
    }
    pl->group[k] = 0;
    placed[k]    = PETSC_FALSE;
  }
  pl->nregions = 0;
  for (PetscInt J = L - 1; J >= 0; J--) {
    const NetNode *nd   = &net->nodes[J];
    PetscInt       nb   = 0;
    PetscBool      free = PETSC_TRUE;

    if (nd->nin < 2 || nd->nin > NET_MAX_STACK_INPUTS) continue;
    for (PetscInt j = 0; j < nd->nin; j++) { /* branch j: the nodes only input j depends on */
      PetscInt size = 0;

      PetscCall(PetscBTCreate(L, &br[j]));
      if (nd->in[j] == NET_INPUT) continue;
      for (PetscInt x = 0; x <= nd->in[j]; x++) {
        PetscBool only = PetscBTLookup(anc[nd->in[j]], x) ? PETSC_TRUE : PETSC_FALSE;

        for (PetscInt l = 0; l < nd->nin && only; l++)
          if (l != j && nd->in[l] != NET_INPUT && PetscBTLookup(anc[nd->in[l]], x)) only = PETSC_FALSE;
        if (only) {
          PetscCall(PetscBTSet(br[j], x));
          if (placed[x]) free = PETSC_FALSE;
          size++;
        }
      }
      if (size) {
        branch[nb] = j;
        cost[nb]   = 0;
        for (PetscInt x = 0; x < L; x++)
          if (PetscBTLookup(br[j], x)) cost[nb] += NetPlaceNodeCost(net, x);
        nb++;
      }
    }
    if (nb >= 2 && free) {
      PetscInt lo = 0;

      pl->nregions++;
      for (PetscInt b = 0; b < nb; b++) nr[b] = 1;
      if (nb <= P) /* ranks in proportion to cost: one each, then one at a time to the branch of most cost a rank */
        for (PetscInt r = nb; r < P; r++) {
          PetscInt best = 0;

          for (PetscInt b = 1; b < nb; b++)
            if (cost[b] / nr[b] > cost[best] / nr[best]) best = b;
          nr[best]++;
        }
      else { /* one rank each: the costliest first, on the least loaded rank */
        PetscInt *order = nr;

        for (PetscInt b = 0; b < nb; b++) order[b] = b;
        PetscCall(PetscSortRealWithPermutation(nb, cost, order));
        for (PetscInt q = 0; q < P; q++) load[q] = 0;
        for (PetscInt i = nb - 1; i >= 0; i--) {
          PetscInt q = 0;

          for (PetscInt t = 1; t < P; t++)
            if (load[t] < load[q]) q = t;
          load[q] += cost[order[i]];
          first[order[i]] = q;
        }
      }
      for (PetscInt b = 0; b < nb; b++) {
        const PetscInt g = nb <= P ? NetPlaceAddGroup(pl, lo, nr[b]) : NetPlaceAddGroup(pl, first[b], 1);

        if (nb <= P) lo += nr[b];
        for (PetscInt x = 0; x < L; x++)
          if (PetscBTLookup(br[branch[b]], x)) {
            pl->group[x] = g;
            placed[x]    = PETSC_TRUE;
          }
      }
    }
    for (PetscInt j = 0; j < nd->nin; j++) PetscCall(PetscBTDestroy(&br[j]));
  }
  for (PetscInt k = 0; k < L; k++) PetscCall(PetscBTDestroy(&anc[k]));
  PetscCall(PetscFree7(anc, placed, branch, nr, cost, load, first));
  PetscFunctionReturn(0);
}

/*
  The 1F1B schedule (PipeDream-flush): stage s runs w = min(S - 1 - s, M) forwards, then alternates a forward and a
  backward, then the remaining backwards, so that at most S - s micro-batches are in flight on it (their values in its
  K = S slots); the last stage runs the output's step of micro-batch m (the caller's cotangent) between its forward and
  backward of m. The stages' lists are merged into one order, taking from each stage in turn what is ready (F(m, s)
  after F(m, s - 1), the output step of m after F(m, S - 1), B(m, s) after B(m, s + 1) or the output step): the same
  order on every rank, every value made before it is read and every slot free before it is written again (a stage
  writes slot m % K at F(m) after its own B(m - K), and the moves of m post after that).
  Without backward (NetForward() alone) the walk runs the forward steps in that order.
*/
static PetscErrorCode NetPlaceSchedule1F1B(Net net)
{
  NetPlace      *pl = (NetPlace *)net->pl;
  const PetscInt S = pl->S, M = pl->M, L = net->nlayers;
  PetscInt      *len, *pos, *list, nf = 0;
  PetscBool     *fdone, *bdone, *odone;

  PetscFunctionBegin;
  PetscCall(PetscMalloc3(S, &len, S, &pos, S * 3 * M * 2, &list));
  PetscCall(PetscCalloc3(S * M, &fdone, S * M, &bdone, M, &odone));
  for (PetscInt s = 0; s < S; s++) { /* stage s's own list of (kind, m) */
    PetscInt *l = list + s * 3 * M * 2, n = 0, w = PetscMin(S - 1 - s, M);

    for (PetscInt m = 0; m < w; m++) {
      l[2 * n]     = 0;
      l[2 * n + 1] = m;
      n++;
    }
    for (PetscInt i = 0; i < M; i++) {
      if (w + i < M) {
        l[2 * n]     = 0;
        l[2 * n + 1] = w + i;
        n++;
        if (s == S - 1) {
          l[2 * n]     = 1;
          l[2 * n + 1] = w + i;
          n++;
        }
      }
      l[2 * n]     = 2;
      l[2 * n + 1] = i;
      n++;
    }
    len[s] = n;
    pos[s] = 0;
  }
  pl->nsched1 = 0;
  PetscCall(PetscMalloc1(3 * (2 * L * M + M), &pl->sched1));
  for (PetscBool progress = PETSC_TRUE; progress;) {
    progress = PETSC_FALSE;
    for (PetscInt s = 0; s < S; s++)
      for (; pos[s] < len[s]; pos[s]++) {
        const PetscInt *it = list + s * 3 * M * 2 + 2 * pos[s], kind = it[0], m = it[1];
        const PetscBool ready = kind == 0 ? (PetscBool)(s == 0 || fdone[(s - 1) * M + m]) : kind == 1 ? fdone[s * M + m] : (s == S - 1 ? odone[m] : bdone[(s + 1) * M + m]);

        if (!ready) break;
        if (kind == 1) { /* the output's step: one triple */
          pl->sched1[3 * pl->nsched1]     = 1;
          pl->sched1[3 * pl->nsched1 + 1] = -1;
          pl->sched1[3 * pl->nsched1 + 2] = m;
          pl->nsched1++;
          odone[m] = PETSC_TRUE;
        } else
          for (PetscInt i = 0; i <= pl->last[s] - pl->first[s]; i++) { /* the stage's nodes, in order or in reverse */
            pl->sched1[3 * pl->nsched1]     = kind;
            pl->sched1[3 * pl->nsched1 + 1] = kind == 0 ? pl->first[s] + i : pl->last[s] - i;
            pl->sched1[3 * pl->nsched1 + 2] = m;
            pl->nsched1++;
          }
        if (kind == 0) fdone[s * M + m] = PETSC_TRUE;
        if (kind == 2) bdone[s * M + m] = PETSC_TRUE;
        progress = PETSC_TRUE;
      }
  }
  for (PetscInt s = 0; s < S; s++) PetscCheck(pos[s] == len[s], PETSC_COMM_SELF, PETSC_ERR_PLIB, "The 1F1B schedule of stage %" PetscInt_FMT " does not complete", s);
  if (pl->K) { /* the forward walk alone: the forward steps in that order (GPipe's would overwrite the slots) */
    for (PetscInt i = 0; i < pl->nsched1; i++)
      if (pl->sched1[3 * i] == 0) {
        pl->sched[2 * nf]     = pl->sched1[3 * i + 1];
        pl->sched[2 * nf + 1] = pl->sched1[3 * i + 2];
        nf++;
      }
    PetscCheck(nf == pl->nsched, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The 1F1B schedule has %" PetscInt_FMT " forward steps, not %" PetscInt_FMT, nf, pl->nsched);
  }
  PetscCall(PetscFree3(len, pos, list));
  PetscCall(PetscFree3(fdone, bdone, odone));
  PetscFunctionReturn(0);
}

/* whether NetSetUp() will place the nodes (NetPlaceSetUp_Private() below): before the layers are set up, which a
   sequence-parallel Net sets up on tokens, a sequence-parallel stage on whole sequences */
PetscBool NetPlaceWanted_Private(Net net)
{
  PetscBool explicit = PETSC_FALSE;

  for (PetscInt k = 0; k < net->nlayers; k++) explicit = (PetscBool)(explicit || net->nodes[k].stageset);
  return (PetscBool)(net->nstages > 1 || net->nmicro > 1 || explicit || net->parallel == NET_PARALLEL_SUBGRAPH);
}

/*
  NetPlaceSetUp_Private - the group of ranks of every node, from the nodes' own placement (NetSetNodePlacement(),
  NetSetNodeRanks(), -<node>stage, entry@...), the cost model's stages, or the branches of the graph (-net_parallel
  subgraph), and the checks; called by NetSetUp() once the layers are set up and before the parameter Vec exists
*/
PetscErrorCode NetPlaceSetUp_Private(Net net)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt size;
  NetPlace   *pl;
  PetscInt    S = PetscMax(1, net->nstages), L = net->nlayers, explicit = 0, byranks = 0, nseg = 0;
  PetscBool   subgraph = (PetscBool)(net->parallel == NET_PARALLEL_SUBGRAPH);

  PetscFunctionBegin;
  PetscCall(NetPlaceReset_Private(net));
  for (PetscInt k = 0; k < L; k++) {
    explicit += net->nodes[k].stageset ? 1 : 0;
    byranks += net->nodes[k].rankn > 0 ? 1 : 0;
  }
  if (S == 1 && net->nmicro <= 1 && !explicit && !subgraph) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCheck(
      !subgraph || (!explicit && S == 1), comm, PETSC_ERR_ARG_INCOMP,
      "-net_parallel subgraph places the nodes itself (the independent branches of the graph on disjoint groups of ranks): drop -net_stages and the nodes' own placements (entry@..., -<node>stage, NetSetNodePlacement()), or -net_parallel subgraph");
  if (explicit && S == 1)
    for (PetscInt k = 0; k < L; k++) S = PetscMax(S, net->nodes[k].stageset && !net->nodes[k].rankn ? net->nodes[k].stage + 1 : 1);
  PetscCheck(S <= size, comm, PETSC_ERR_ARG_OUTOFRANGE, "-net_stages %" PetscInt_FMT " asks for more stages than the %d ranks: give at most %d (a stage runs on at least one rank)", S, size, size);
  PetscCheck(size % S == 0, comm, PETSC_ERR_ARG_INCOMP, "-net_stages %" PetscInt_FMT " does not divide the %d ranks: give a number of stages that divides the ranks (every stage gets the same number of ranks)", S, size);
  PetscCheck(S <= L, comm, PETSC_ERR_ARG_OUTOFRANGE, "-net_stages %" PetscInt_FMT " asks for more stages than the Net's %" PetscInt_FMT " nodes: give at most %" PetscInt_FMT, S, L, L);
  PetscCheck(explicit == 0 || explicit == L, comm, PETSC_ERR_ARG_WRONG,
             "%" PetscInt_FMT " of the %" PetscInt_FMT " nodes have a placement (NetSetNodePlacement(), NetSetNodeRanks(), -<node>stage, entry@...) and the others not (node %s first): place every node, or none and let -net_stages cut the Net",
             explicit, L, net->nodes[NetPlaceFirstUnplaced(net)].name);
  net->nstages = S;
  PetscCall(NetPlaceCheckModes(net));
  if (!explicit && !subgraph) PetscCall(NetPlaceBalance(net, S));
  PetscCall(PetscNew(&pl));
  net->pl  = pl;
  pl->S    = S;
  pl->M    = PetscMax(1, net->nmicro);
  pl->G    = size / S;
  pl->size = size;
  PetscCallMPI(MPI_Comm_rank(comm, &pl->rank));
  pl->mystage = pl->rank / pl->G;
  /* the groups: the stages first, then the nodes' own ranks or the branches */
  PetscCall(PetscMalloc1(L, &pl->group));
  PetscCall(PetscMalloc3(S + L + 1, &pl->glo, S + L + 1, &pl->gn, S + L + 1, &pl->cost));
  for (PetscInt s = 0; s < S; s++) (void)NetPlaceAddGroup(pl, s * pl->G, pl->G);
  if (subgraph)
    PetscCall(NetPlaceSubgraph(net));
  else
    for (PetscInt k = 0; k < L; k++) {
      const NetNode *nd = &net->nodes[k];

      if (nd->rankn > 0) {
        PetscCheck(nd->ranklo + nd->rankn <= size, comm, PETSC_ERR_ARG_OUTOFRANGE, "Node %s is placed on the ranks %" PetscInt_FMT ":%" PetscInt_FMT ", but the Net has %d ranks: give ranks=a:b with 0 <= a < b <= %d", nd->name, nd->ranklo,
                   nd->ranklo + nd->rankn, size, size);
        pl->group[k] = NetPlaceAddGroup(pl, nd->ranklo, nd->rankn);
      } else {
        PetscCheck(nd->stage >= 0 && nd->stage < S, comm, PETSC_ERR_ARG_OUTOFRANGE, "Node %s is placed on stage %" PetscInt_FMT ", but there are %" PetscInt_FMT " stages (-net_stages): give a stage from 0 to %" PetscInt_FMT, nd->name, nd->stage, S,
                   S - 1);
        pl->group[k] = nd->stage;
      }
    }
  for (PetscInt g = 0; g < pl->ngroups; g++) pl->cost[g] = 0;
  for (PetscInt k = 0; k < L; k++) pl->cost[pl->group[k]] += NetPlaceNodeCost(net, k);
  /* staged: the groups are the stages, in the nodes' order (then each rank owns its stage's parameters) */
  pl->staged = (PetscBool)(!subgraph && !byranks);
  for (PetscInt k = 1; k < L; k++)
    if (pl->group[k] < pl->group[k - 1]) pl->staged = PETSC_FALSE;
  /* every rank has a node to run */
  for (PetscMPIInt r = 0; r < size; r++) {
    PetscBool some = PETSC_FALSE;

    for (PetscInt k = 0; k < L && !some; k++) some = NetPlaceInGroup(pl, pl->group[k], r);
    if (!some && !byranks)
      SETERRQ(comm, PETSC_ERR_ARG_WRONG, "Stage %" PetscInt_FMT " has no node, so ranks %" PetscInt_FMT " to %" PetscInt_FMT " would have nothing to do: place at least one node on every stage, or use fewer stages (-net_stages)", r / pl->G,
              (r / pl->G) * pl->G, (r / pl->G + 1) * pl->G - 1);
    PetscCheck(some, comm, PETSC_ERR_ARG_WRONG, "No node is placed on rank %d, which would have nothing to do: place a node on it (entry@ranks=a:b with a <= %d < b, or a stage), or run on fewer ranks", r, r);
  }
  if (pl->staged) {
    PetscCall(PetscMalloc2(S, &pl->first, S, &pl->last));
    for (PetscInt s = 0; s < S; s++) pl->first[s] = pl->last[s] = -1;
    for (PetscInt k = 0; k < L; k++) {
      if (pl->first[pl->group[k]] < 0) pl->first[pl->group[k]] = k;
      pl->last[pl->group[k]] = k;
    }
  }
  if (net->grid) PetscCall(NetPlaceSetUpGrid(net, (PetscBool)(byranks > 0)));
  PetscCheck(net->schedule == NET_PIPELINE_GPIPE || pl->staged, comm, PETSC_ERR_SUP,
             "-net_pipeline_schedule 1f1b runs pipeline stages of consecutive nodes in rank order (-net_stages, entry@s in the nodes' order); this placement (groups of their own, sub-graph branches, or stages against the nodes' order) runs with "
             "-net_pipeline_schedule gpipe");
  pl->K    = net->schedule == NET_PIPELINE_1F1B && pl->M > S ? S : 0; /* 1F1B keeps at most S micro-batches in flight on a stage */
  pl->nrep = 0;                                                       /* sharded: the nodes gather their parameters, theta_rep holds none */
  for (PetscInt k = 0; k < L; k++)
    if (NetPlaceInGroup(pl, pl->group[k], pl->rank) && net->parallel != NET_PARALLEL_SHARDED) pl->nrep += net->layers[k]->nparams;
  /* the moves: every edge from another layout, then the output's */
  pl->maxin = 1;
  for (PetscInt k = 0; k < L; k++) pl->maxin = PetscMax(pl->maxin, net->nodes[k].nin);
  PetscCall(PetscMalloc1(L * pl->maxin, &pl->movein));
  PetscCall(PetscCalloc1(L * pl->maxin + 1, &pl->moves));
  for (PetscInt k = 0; k < L; k++)
    for (PetscInt i = 0; i < pl->maxin; i++) {
      const PetscInt v = i < net->nodes[k].nin ? net->nodes[k].in[i] + 1 : -1;

      pl->movein[k * pl->maxin + i] = -1;
      if (v < 0 || NetPlaceLayoutOfValue(net, v) == pl->group[k]) continue;
      pl->movein[k * pl->maxin + i] = pl->nmoves;
      pl->moves[pl->nmoves].src     = NetPlaceLayoutOfValue(net, v);
      pl->moves[pl->nmoves].dst     = pl->group[k];
      pl->moves[pl->nmoves].v       = v;
      pl->moves[pl->nmoves].k       = k;
      pl->moves[pl->nmoves].i       = i;
      pl->moves[pl->nmoves].size    = net->layers[k]->insizes[i];
      pl->nmoves++;
    }
  pl->moves[pl->nmoves].src  = pl->group[L - 1];
  pl->moves[pl->nmoves].dst  = NET_PLACE_PUBLIC;
  pl->moves[pl->nmoves].v    = L;
  pl->moves[pl->nmoves].k    = -1;
  pl->moves[pl->nmoves].size = net->layers[L - 1]->outsize;
  pl->nmoves++;
  {
    int *ub, flag;

    PetscCallMPI(MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag));
    PetscCheck(!flag || (PetscInt64)pl->nmoves * pl->M * 2 < (PetscInt64)*ub, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "%" PetscInt_FMT " moves between stages times %" PetscInt_FMT " micro-batches need more message tags than this MPI has (%d): use fewer micro-batches (-net_microbatches)", pl->nmoves, pl->M, *ub);
  }
  if (!NET_PLACE_WAIT) PetscCall(PetscLogEventRegister("NetPlaceWait", NET_CLASSID, &NET_PLACE_WAIT));
  PetscCallMPI(MPI_Comm_dup(comm, &pl->comm));
  for (PetscInt e = 0; e < pl->nmoves; e++) PetscCall(PetscMalloc2(pl->M * 2 * size, &pl->moves[e].req, pl->M, &pl->moves[e].nreq));
  PetscCall(PetscCalloc1((L + 1) * pl->M, &pl->seeded));
  PetscCall(PetscMalloc1(L, &pl->fwdm));
  for (PetscInt k = 0; k < L; k++) pl->fwdm[k] = -1;
  /* the schedule: segment by segment (a run of consecutive nodes on one group: with stages, a stage), micro-batch by
     micro-batch. It is an order of the steps in which every value is made before it is read, the same on every rank,
     so every move is begun before it is ended, whatever the groups. */
  pl->nsched = 0;
  PetscCall(PetscMalloc1(2 * L * pl->M, &pl->sched));
  for (PetscInt a = 0, b; a < L; a = b) {
    for (b = a + 1; b < L && pl->group[b] == pl->group[a]; b++) {}
    nseg++;
    for (PetscInt m = 0; m < pl->M; m++)
      for (PetscInt k = a; k < b; k++) {
        pl->sched[2 * pl->nsched]     = k;
        pl->sched[2 * pl->nsched + 1] = m;
        pl->nsched++;
      }
  }
  pl->nseg = nseg;
  if (net->schedule == NET_PIPELINE_1F1B) PetscCall(NetPlaceSchedule1F1B(net));
  pl->N = -1;
  PetscFunctionReturn(0);
}

/* the tangents' buffers (NetJVP()), freed with the moves' */
static PetscErrorCode NetPlaceFreeTangents(NetPlace *pl)
{
  PetscFunctionBegin;
  if (pl->tan)
    for (PetscInt e = 0; e < pl->nmoves; e++) PetscCall(PetscFree(pl->tan[e]));
  PetscCall(PetscFree(pl->tan));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceFreeBuffers(NetPlace *pl)
{
  PetscFunctionBegin;
  for (PetscInt e = 0; e < pl->nmoves; e++) {
    NetMove *mv = &pl->moves[e];

    PetscCall(PetscFree3(mv->dval, mv->dcot, mv->rcot));
    PetscCall(PetscSFDestroy(&mv->sf));
    for (PetscInt u = 0; u < 2; u++)
      if (mv->unit[u] != MPI_DATATYPE_NULL && mv->unit[u]) PetscCallMPI(MPI_Type_free(&mv->unit[u]));
    PetscCall(PetscFree3(mv->sfroot, mv->sfleaf, mv->sfrev));
  }
  PetscCall(NetPlaceFreeTangents(pl));
  pl->ready = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode NetPlaceReset_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  if (!pl) PetscFunctionReturn(0);
  PetscCall(NetPlaceFreeBuffers(pl));
  for (PetscInt e = 0; e < pl->nmoves; e++) PetscCall(PetscFree2(pl->moves[e].req, pl->moves[e].nreq));
  PetscCall(PetscFree(pl->moves));
  PetscCall(PetscFree(pl->movein));
  PetscCall(PetscFree2(pl->first, pl->last));
  PetscCall(PetscFree3(pl->glo, pl->gn, pl->cost));
  PetscCall(PetscFree(pl->group));
  PetscCall(PetscFree(pl->seeded));
  PetscCall(PetscFree(pl->sched));
  PetscCall(PetscFree(pl->sched1));
  PetscCall(PetscFree(pl->pub));
  PetscCall(PetscFree(pl->fwork));
  PetscCall(PetscFree(pl->fwdm));
  PetscCall(PetscFree(pl->rwork));
  PetscCall(PetscFree(pl->wide[0]));
  PetscCall(PetscFree(pl->wide[1]));
  PetscCall(PetscFree2(pl->units, pl->punits));
  if (pl->comm != MPI_COMM_NULL && pl->comm) PetscCallMPI(MPI_Comm_free(&pl->comm));
  if (pl->tcomm != MPI_COMM_NULL && pl->tcomm) PetscCallMPI(MPI_Comm_free(&pl->tcomm));
  if (pl->gcomm != MPI_COMM_NULL && pl->gcomm) PetscCallMPI(MPI_Comm_free(&pl->gcomm));
  if (pl->grpcomm != MPI_COMM_NULL && pl->grpcomm) PetscCallMPI(MPI_Comm_free(&pl->grpcomm));
  PetscCall(PetscFree(net->pl));
  PetscFunctionReturn(0);
}

/*
  NetPlaceCounts_Private - the samples of every value on this rank for a batch of n here (collective): n for the input
  and the output, the stage's rows for the others. commit: this is the workspace's batch (NetSetUpWorkspace_Private()),
  which the moves then follow; else (NetCreateVecs()) nothing is kept.
*/
PetscErrorCode NetPlaceCounts_Private(Net net, PetscInt n, PetscInt counts[], PetscBool commit)
{
  NetPlace *pl   = (NetPlace *)net->pl;
  MPI_Comm  comm = PetscObjectComm((PetscObject)net);
  NetPlace  tmp  = *pl;
  PetscInt *all;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(pl->size, &all, pl->size + 1, &tmp.pub));
  PetscCallMPI(MPI_Allgather(&n, 1, MPIU_INT, all, 1, MPIU_INT, comm));
  tmp.pub[0] = 0;
  for (PetscMPIInt p = 0; p < pl->size; p++) tmp.pub[p + 1] = tmp.pub[p] + all[p];
  tmp.N = tmp.pub[pl->size];
  if (pl->grid) { /* the batch is nf fields, each rank holding its block of each */
    PetscInt nf[2];

    PetscCheck(pl->punits[pl->rank] > 0 && n % pl->punits[pl->rank] == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
               "In grid mode an input batch holds this rank's block of whole fields (%" PetscInt_FMT " points of the DMDA each), but it has %" PetscInt_FMT " points on this rank: give DMDA global Vecs, or nf blocks end to end", pl->punits[pl->rank],
               n);
    nf[0] = n / pl->punits[pl->rank];
    nf[1] = -nf[0];
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, nf, 2, MPIU_INT, MPI_MAX, comm));
    PetscCheck(nf[0] == -nf[1], comm, PETSC_ERR_ARG_SIZ, "In grid mode every rank holds its block of the same fields, but the ranks hold from %" PetscInt_FMT " to %" PetscInt_FMT " fields", -nf[1], nf[0]);
    PetscCheck(nf[0] % pl->M == 0, comm, PETSC_ERR_ARG_SIZ, "-net_microbatches %" PetscInt_FMT " on a grid cuts the batch's %" PetscInt_FMT " fields into micro-batches of whole fields: give a number of micro-batches that divides the fields", pl->M,
               nf[0]);
    tmp.nf = nf[0];
  }
  counts[0] = n;
  for (PetscInt k = 0; k < net->nlayers; k++) counts[k + 1] = NetPlaceLocalRows(&tmp, k + 1, pl->group[k], n);
  counts[net->nlayers] = pl->grid ? NetPlaceLocalRows(&tmp, net->nlayers, NET_PLACE_PUBLIC, n) : n;
  if (commit) {
    PetscCall(NetPlaceFreeBuffers(pl));
    PetscCall(PetscFree(pl->pub));
    PetscCall(PetscMalloc1(pl->size + 1, &pl->pub));
    PetscCall(PetscArraycpy(pl->pub, tmp.pub, pl->size + 1));
    pl->N  = tmp.N;
    pl->nf = tmp.nf;
  }
  PetscCall(PetscFree2(all, tmp.pub));
  PetscFunctionReturn(0);
}

/* the buffers of the moves for this batch */
static PetscErrorCode NetPlaceBuffers(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  if (pl->ready) PetscFunctionReturn(0);
  PetscCall(NetPrecisionBytes_Private(net, &pl->es));
  { /* a move sends a micro-batch's rows in one message: checked here, on every rank at once, not inside a move */
    PetscInt64 most = 0;

    for (PetscInt e = 0; e < pl->nmoves; e++)
      for (PetscInt m = 0; m < pl->M; m++)
        for (PetscInt side = 0; side < 2; side++) {
          PetscInt g0, n, row;

          NetPlaceRange(pl, pl->moves[e].v, side ? pl->moves[e].dst : pl->moves[e].src, pl->rank, m, &g0, &n, &row);
          most = PetscMax(most, (PetscInt64)n * pl->moves[e].size * pl->es);
        }
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &most, 1, MPIU_INT64, MPI_MAX, PetscObjectComm((PetscObject)net)));
    PetscCheck(most <= PETSC_MPI_INT_MAX, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
               "A move between stages would send %" PetscInt64_FMT " bytes of a micro-batch in one message, more than MPI takes: use more micro-batches (-net_microbatches) or smaller batches", most);
  }
  for (PetscInt e = 0; e < pl->nmoves; e++) {
    NetMove       *mv = &pl->moves[e];
    const PetscInt nd = mv->k < 0 ? NetPlaceLocalRows(pl, mv->v, mv->src, 0) : NetPlaceLocalRows(pl, mv->v, mv->dst, 0);
    const PetscInt ns = mv->k < 0 ? 0 : NetPlaceLocalRows(pl, mv->v, mv->src, net->vlocal[mv->v]);
    const size_t   bd = (size_t)pl->es * (size_t)nd * (size_t)mv->size, bs = (size_t)pl->es * (size_t)ns * (size_t)mv->size;

    PetscCall(PetscMalloc3(bd, &mv->dval, bd, &mv->dcot, bs, &mv->rcot));
    if (pl->grid && mv->v == 0) { /* the Net's input, from the public grid's blocks to the stage's */
      PetscCall(NetSpatialCreateStageSF_Private(net, NetPlaceInGroup(pl, mv->dst, pl->rank), pl->nf / pl->M, mv->size, &mv->sf));
      for (PetscInt u = 0; u < 2; u++) { /* the stored entries, of any type; doubles */
        PetscCallMPI(MPI_Type_contiguous((PetscMPIInt)(mv->size * (u ? (PetscInt)sizeof(PetscScalar) : pl->es)), MPI_BYTE, &mv->unit[u]));
        PetscCallMPI(MPI_Type_commit(&mv->unit[u]));
      }
      PetscCall(PetscCalloc3(pl->M, &mv->sfroot, pl->M, &mv->sfleaf, pl->M, &mv->sfrev));
    }
  }
  pl->ready = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  Move e on micro-batch m: the rows of layout `from` in src (an array of that layout, all micro-batches) to the rows of
  layout `to` in dst, begun (receives posted, sends started, this rank's own rows copied) and ended (waited for)
*/
static PetscErrorCode NetMoveBeginOn(NetPlace *pl, MPI_Comm comm, PetscInt e, PetscInt m, PetscBool reverse, const char *src, char *dst)
{
  NetMove       *mv   = &pl->moves[e];
  const PetscInt from = reverse ? mv->dst : mv->src, to = reverse ? mv->src : mv->dst;
  const size_t   row = (size_t)pl->es * (size_t)mv->size;
  const int      tag = (int)((e * pl->M + m) * 2 + (reverse ? 1 : 0));
  PetscInt       fg, fn, fr, tg, tn, tr;
  PetscMPIInt    nr  = 0;
  MPI_Request   *req = mv->req + (size_t)m * 2 * pl->size;

  PetscFunctionBegin;
  NetPlaceRange(pl, mv->v, from, pl->rank, m, &fg, &fn, &fr);
  NetPlaceRange(pl, mv->v, to, pl->rank, m, &tg, &tn, &tr);
  if (mv->sf) { /* the Net's input on a grid: its PetscSF (roots: the public blocks, leaves: the stage's), R or R^T */
    mv->sfroot[m] = (char *)(reverse ? dst + (size_t)tr * row : src + (size_t)fr * row);
    mv->sfleaf[m] = (char *)(reverse ? src + (size_t)fr * row : dst + (size_t)tr * row);
    mv->sfrev[m]  = reverse;
    if (reverse)
      PetscCall(PetscSFReduceBegin(mv->sf, mv->unit[pl->es == sizeof(PetscScalar)], mv->sfleaf[m], mv->sfroot[m], MPI_REPLACE));
    else
      PetscCall(PetscSFBcastBegin(mv->sf, mv->unit[pl->es == sizeof(PetscScalar)], mv->sfroot[m], mv->sfleaf[m], MPI_REPLACE));
    mv->nreq[m] = -1;
    PetscFunctionReturn(0);
  }
  for (PetscMPIInt q = 0; q < pl->size; q++) {
    PetscInt qg, qn, qr;

    if (tn) { /* receive: my rows of `to` from q's rows of `from` */
      NetPlaceRange(pl, mv->v, from, q, m, &qg, &qn, &qr);
      {
        const PetscInt lo = PetscMax(tg, qg), hi = PetscMin(tg + tn, qg + qn);

        if (lo < hi && q != pl->rank) { PetscCallMPI(MPI_Irecv(dst + (size_t)(tr + lo - tg) * row, (PetscMPIInt)((hi - lo) * row), MPI_BYTE, q, tag, comm, &req[nr++])); }
      }
    }
    if (fn) { /* send: my rows of `from` that q holds in `to` */
      NetPlaceRange(pl, mv->v, to, q, m, &qg, &qn, &qr);
      {
        const PetscInt lo = PetscMax(fg, qg), hi = PetscMin(fg + fn, qg + qn);

        if (lo < hi) {
          if (q == pl->rank)
            PetscCall(PetscMemcpy(dst + (size_t)(tr + lo - tg) * row, src + (size_t)(fr + lo - fg) * row, (size_t)(hi - lo) * row));
          else
            PetscCallMPI(MPI_Isend(src + (size_t)(fr + lo - fg) * row, (PetscMPIInt)((hi - lo) * row), MPI_BYTE, q, tag, comm, &req[nr++]));
        }
      }
    }
  }
  mv->nreq[m] = nr;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetMoveBegin(NetPlace *pl, PetscInt e, PetscInt m, PetscBool reverse, const char *src, char *dst)
{
  PetscFunctionBegin;
  PetscCall(NetMoveBeginOn(pl, pl->comm, e, m, reverse, src, dst));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetMoveEnd(NetPlace *pl, PetscInt e, PetscInt m)
{
  NetMove *mv = &pl->moves[e];

  PetscFunctionBegin;
  if (mv->nreq[m] < 0) { /* a PetscSF's */
    PetscCall(PetscLogEventBegin(NET_PLACE_WAIT, 0, 0, 0, 0));
    if (mv->sfrev[m])
      PetscCall(PetscSFReduceEnd(mv->sf, mv->unit[pl->es == sizeof(PetscScalar)], mv->sfleaf[m], mv->sfroot[m], MPI_REPLACE));
    else
      PetscCall(PetscSFBcastEnd(mv->sf, mv->unit[pl->es == sizeof(PetscScalar)], mv->sfroot[m], mv->sfleaf[m], MPI_REPLACE));
    PetscCall(PetscLogEventEnd(NET_PLACE_WAIT, 0, 0, 0, 0));
  } else if (mv->nreq[m]) {
    PetscCall(PetscLogEventBegin(NET_PLACE_WAIT, 0, 0, 0, 0));
    PetscCallMPI(MPI_Waitall(mv->nreq[m], mv->req + (size_t)m * 2 * pl->size, MPI_STATUSES_IGNORE));
    PetscCall(PetscLogEventEnd(NET_PLACE_WAIT, 0, 0, 0, 0));
  }
  mv->nreq[m] = 0;
  PetscFunctionReturn(0);
}

/* the store's array of slot s of value v (stable until the workspace is rebuilt: a Vec's array, or a low store's own) */
static PetscErrorCode NetPlaceStoreArray(Net net, NetSlot s, PetscInt v, char **a)
{
  const NetElem t = net->precision == NET_PRECISION_BFLOAT16 ? NET_ELEM_BF16 : NetStore(net)->compute; /* the stored entries themselves */
  void         *p;

  PetscFunctionBegin;
  PetscCall(NetStore(net)->get(net, s, v, NET_READWRITE, t, &p));
  *a = (char *)p;
  PetscCall(NetStore(net)->restore(net, s, v, NET_READ, t, &p));
  PetscFunctionReturn(0);
}

/* cnt stored entries x (es bytes each) copied into y (first: the first contribution), else added to it; bfloat16 is
   added in float and rounded once, as the store's fan-out sums */
static void NetPlaceAddRows(PetscInt es, const char *x, size_t cnt, PetscBool first, char *y)
{
  if (first)
    memcpy(y, x, cnt * (size_t)es);
  else if (es == sizeof(PetscScalar))
    for (size_t i = 0; i < cnt; i++) ((PetscScalar *)y)[i] += ((const PetscScalar *)x)[i];
  else if (es == sizeof(float))
    for (size_t i = 0; i < cnt; i++) ((float *)y)[i] += ((const float *)x)[i];
  else
    for (size_t i = 0; i < cnt; i++) ((uint16_t *)y)[i] = PetNetFloatToBF16(PetNetBF16ToFloat(((const uint16_t *)y)[i]) + PetNetBF16ToFloat(((const uint16_t *)x)[i]));
}

/* cotangent rows of micro-batch m of value v from a move's receive buffer: copied as the first contribution, else added */
static PetscErrorCode NetPlaceAddCotangent(Net net, PetscInt e)
{
  NetPlace      *pl = (NetPlace *)net->pl;
  NetMove       *mv = &pl->moves[e];
  const PetscInt m  = pl->m;
  PetscInt       g0, n, row;
  char          *d;
  PetscBool     *seeded = &pl->seeded[mv->v * pl->M + m];

  PetscFunctionBegin;
  NetPlaceRange(pl, mv->v, mv->src, pl->rank, m, &g0, &n, &row);
  PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, mv->v, &d));
  if (n) {
    const size_t off = (size_t)row * (size_t)mv->size * pl->es;

    NetPlaceAddRows(pl->es, mv->rcot + off, (size_t)n * (size_t)mv->size, (PetscBool) !*seeded, d + off);
  }
  *seeded = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   The walk's hooks (netforward.c). A step is (node k, micro-batch m). */

PetscErrorCode NetPlaceGetSchedule_Private(Net net, PetscInt *nsteps, const PetscInt **sched)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  *nsteps = pl->nsched;
  *sched  = pl->sched;
  PetscFunctionReturn(0);
}

PetscErrorCode NetPlaceSetStep_Private(Net net, PetscInt m)
{
  PetscFunctionBegin;
  ((NetPlace *)net->pl)->m = m;
  PetscFunctionReturn(0);
}

/* the seeded flag of the walk's fan-out sums for value v on the micro-batch at hand */
PetscBool *NetPlaceSeeded_Private(Net net, PetscInt v)
{
  NetPlace *pl = (NetPlace *)net->pl;

  return &pl->seeded[v * pl->M + pl->m];
}

PetscBool NetPlaceCrossing_Private(Net net, PetscInt k, PetscInt i)
{
  NetPlace *pl = (NetPlace *)net->pl;

  return (PetscBool)(pl->movein[k * pl->maxin + i] >= 0);
}

/* a training forward pass: the pass counter of every layer that draws masks advanced once, on every rank (the steps
   run frozen at it, NetPlaceDrawBegin()); frozen layers (NetTestJacobian()) keep theirs, as they do unplaced */
static PetscErrorCode NetPlaceAdvanceCounters(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const Layer l    = net->layers[k];
    PetscInt64  seed = 0, counter = 0;

    if (!l->draws || !l->training || l->frozen) continue;
    PetscUseMethod(l, "LayerGetPassCounter_C", (Layer, PetscInt64 *, PetscInt64 *), (l, &seed, &counter));
    PetscUseMethod(l, "LayerSetPassCounter_C", (Layer, PetscInt64), (l, counter + 1));
  }
  PetscFunctionReturn(0);
}

/*
  Before a kernel of node k that draws masks on rows whose first global sample is g0: the layer frozen at this pass's
  counter and its rows' place given (a dropout's rows are its input's rows of F = the last dimension's entries, insize
  / F of them a sample: row g0 insize / F is the first; attention's place is the sample itself). *frozen keeps the
  layer's own state for NetPlaceDrawEnd(), which restores it and lets the layer find its place collectively again.
*/
static PetscErrorCode NetPlaceDrawBegin(Net net, PetscInt k, PetscInt g0, PetscBool *frozen)
{
  const Layer    l = net->layers[k];
  const PetscInt F = l->in.ndim ? l->in.dim[l->in.ndim - 1] : 1;

  PetscFunctionBegin;
  *frozen = l->frozen;
  if (!l->draws) PetscFunctionReturn(0);
  PetscCall(LayerSetFrozen(l, PETSC_TRUE));
  PetscTryMethod(l, "LayerDropoutSetColumnBlock_C", (Layer, Layer, PetscInt, PetscInt, PetscInt64), (l, l, F, 0, (PetscInt64)g0 * (l->insize / F)));
  PetscTryMethod(l, "LayerAttentionSetBlockOffset_C", (Layer, PetscInt64), (l, (PetscInt64)g0));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceDrawEnd(Net net, PetscInt k, PetscBool frozen)
{
  const Layer l = net->layers[k];

  PetscFunctionBegin;
  if (!l->draws) PetscFunctionReturn(0);
  PetscCall(LayerSetFrozen(l, frozen));
  PetscTryMethod(l, "LayerDropoutSetColumnBlock_C", (Layer, Layer, PetscInt, PetscInt, PetscInt64), (l, NULL, 0, 0, 0));
  PetscTryMethod(l, "LayerAttentionSetBlockOffset_C", (Layer, PetscInt64), (l, -1));
  PetscFunctionReturn(0);
}

/* forward: the drawing layers' pass counters advanced, the input's moves begun for every micro-batch */
PetscErrorCode NetPlaceForwardBegin_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *x;

  PetscFunctionBegin;
  pl->t0 = MPI_Wtime();
  PetscCall(NetPlaceAdvanceCounters(net));
  PetscCall(NetPlaceBuffers(net));
  PetscCall(NetPlaceStoreArray(net, NET_SLOT_VALUE, 0, &x));
  if (!pl->K) /* 1F1B: each micro-batch's when its first consumer runs (its slot is free then) */
    for (PetscInt e = 0; e < pl->nmoves; e++)
      if (pl->moves[e].v == 0)
        for (PetscInt m = 0; m < pl->M; m++) PetscCall(NetMoveBegin(pl, e, m, PETSC_FALSE, x, pl->moves[e].dval));
  PetscFunctionReturn(0);
}

/* forward, before node k on the micro-batch at hand: its inputs from other layouts arrived */
PetscErrorCode NetPlaceForwardBefore_Private(Net net, PetscInt k)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i];

    if (e >= 0 && pl->K && pl->moves[e].v == 0) { /* 1F1B: the input's rows of this micro-batch, moved now */
      char *x;

      PetscCall(NetPlaceStoreArray(net, NET_SLOT_VALUE, 0, &x));
      PetscCall(NetMoveBegin(pl, e, pl->m, PETSC_FALSE, x, pl->moves[e].dval));
    }
    if (e >= 0) PetscCall(NetMoveEnd(pl, e, pl->m));
  }
  PetscFunctionReturn(0);
}

/* forward, after node k: its output's rows of this micro-batch sent on to the later stages (and the last node's to the
   public output) */
PetscErrorCode NetPlaceForwardAfter_Private(Net net, PetscInt k)
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *y  = NULL;

  PetscFunctionBegin;
  for (PetscInt e = 0; e < pl->nmoves; e++) {
    NetMove *mv = &pl->moves[e];

    if (mv->k < 0 && k == net->nlayers - 1) {
      PetscCall(NetPlaceStoreArray(net, NET_SLOT_VALUE, net->nlayers, &y));
      PetscCall(NetMoveBegin(pl, e, pl->m, PETSC_FALSE, mv->dval, y));
      if (pl->K) PetscCall(NetMoveEnd(pl, e, pl->m)); /* 1F1B: before the slot is written again */
    } else if (mv->k >= 0 && mv->v == k + 1) {
      if (!y) PetscCall(NetPlaceStoreArray(net, NET_SLOT_VALUE, k + 1, &y));
      PetscCall(NetMoveBegin(pl, e, pl->m, PETSC_FALSE, y, mv->dval));
    }
  }
  PetscFunctionReturn(0);
}

/* forward: the output's rows arrived */
PetscErrorCode NetPlaceForwardEnd_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt m = 0; m < pl->M; m++) PetscCall(NetMoveEnd(pl, pl->nmoves - 1, m));
  pl->wall += MPI_Wtime() - pl->t0;
  PetscFunctionReturn(0);
}

/* backward: dY's rows sent to the last stage for every micro-batch */
PetscErrorCode NetPlaceBackwardBegin_Private(Net net, PetscBool wantdx, PetscBool fb)
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *dy;

  PetscFunctionBegin;
  PetscCheck(!pl->K || fb, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER,
             "With -net_pipeline_schedule 1f1b a stage keeps only %" PetscInt_FMT
             " micro-batches' values, so NetBackward() after NetForward() has nothing to differentiate: take the gradient with NetForwardBackward() or LossNetForwardBackward() (the Trainer's mini-batch steps do), or use -net_pipeline_schedule gpipe",
             pl->K);
  PetscCheck(pl->N % pl->M == 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP,
             "-net_microbatches %" PetscInt_FMT " does not divide the batch of %" PetscInt_FMT " samples: the gradient is taken over equal micro-batches; give a batch that is a multiple of %" PetscInt_FMT " (or another -net_microbatches)", pl->M,
             pl->N, pl->M);
  if (!fb) pl->t0 = MPI_Wtime(); /* NetForwardBackward(): one clock for both walks, read by the forward's end */
  pl->wantdx = wantdx;
  PetscCall(PetscArrayzero(pl->seeded, (net->nlayers + 1) * pl->M));
  pl->fb = fb;
  if (fb) PetscFunctionReturn(0); /* the output's steps send dY on, micro-batch by micro-batch */
  PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, net->nlayers, &dy));
  for (PetscInt m = 0; m < pl->M; m++) PetscCall(NetMoveBegin(pl, pl->nmoves - 1, m, PETSC_TRUE, dy, pl->moves[pl->nmoves - 1].dcot));
  PetscFunctionReturn(0);
}

/* backward, before node k: the cotangent of its output complete (dY arrived for the last node; the later stages'
   contributions added) */
PetscErrorCode NetPlaceBackwardBefore_Private(Net net, PetscInt k)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  if (k == net->nlayers - 1) PetscCall(NetMoveEnd(pl, pl->nmoves - 1, pl->m));
  for (PetscInt e = 0; e < pl->nmoves - 1; e++)
    if (pl->moves[e].v == k + 1) {
      PetscCall(NetMoveEnd(pl, e, pl->m));
      PetscCall(NetPlaceAddCotangent(net, e));
    }
  PetscFunctionReturn(0);
}

/* backward, after node k: the cotangents of its inputs from other layouts sent back */
PetscErrorCode NetPlaceBackwardAfter_Private(Net net, PetscInt k)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i];

    if (e < 0 || (pl->moves[e].v == 0 && !pl->wantdx)) continue;
    PetscCall(NetMoveBegin(pl, e, pl->m, PETSC_TRUE, pl->moves[e].dcot, pl->moves[e].rcot));
    if (pl->K && pl->moves[e].v == 0) { /* 1F1B: the input's cotangent of this micro-batch home now (its slot is reused) */
      PetscCall(NetMoveEnd(pl, e, pl->m));
      PetscCall(NetPlaceAddCotangent(net, e));
    }
  }
  PetscFunctionReturn(0);
}

/* backward: the input's cotangent complete (when asked for) */
PetscErrorCode NetPlaceBackwardEnd_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  if (pl->wantdx && !pl->K)
    for (PetscInt m = 0; m < pl->M; m++) {
      pl->m = m;
      for (PetscInt e = 0; e < pl->nmoves - 1; e++)
        if (pl->moves[e].v == 0) {
          PetscCall(NetMoveEnd(pl, e, m));
          PetscCall(NetPlaceAddCotangent(net, e));
        }
    }
  if (!pl->fb) pl->wall += MPI_Wtime() - pl->t0;
  pl->fb = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* whether a stage keeps every micro-batch's values (GPipe), so that a node's parameter gradient can wait for its last */
PetscBool NetPlaceKeepsAll_Private(Net net)
{
  return (PetscBool)(!net->pl || !((NetPlace *)net->pl)->K);
}

/* NetForwardBackward(): the 1F1B schedule's triples (kind, node, micro-batch), or none (*n = 0: forward, then backward) */
PetscErrorCode NetPlaceGetForwardBackward_Private(Net net, PetscInt *n, const PetscInt **sched)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  *n     = pl && pl->K ? pl->nsched1 : 0;
  *sched = pl && pl->K ? pl->sched1 : NULL;
  PetscFunctionReturn(0);
}

/*
  The output's step of micro-batch m (1F1B, every rank): its rows of the output (the caller's split, in double) handed
  to fn, which writes their cotangent into the same rows of dY; dY then taken into the store and its rows of m sent to
  the last stage
*/
PetscErrorCode NetPlaceOutputStep_Private(Net net, PetscInt m, PetscErrorCode (*fn)(Net, PetscInt, PetscInt, const PetscScalar[], PetscScalar[], void *), void *ctx, Vec dY)
{
  NetPlace          *pl = (NetPlace *)net->pl;
  const PetscInt     L = net->nlayers, size = net->layers[L - 1]->outsize;
  PetscInt           g0, n, row;
  const PetscScalar *y;
  PetscScalar       *dy;
  char              *d;

  PetscFunctionBegin;
  pl->m = m;
  PetscCall(NetStore(net)->tovec(net, NET_SLOT_VALUE, L, net->act[L])); /* the output's rows of m arrived (ForwardAfter) */
  NetPlaceRange(pl, net->nlayers, NET_PLACE_PUBLIC, pl->rank, m, &g0, &n, &row);
  PetscCall(VecGetArrayRead(net->act[L], &y));
  PetscCall(VecGetArray(dY, &dy));
  PetscCall(fn(net, row, n, y + (size_t)row * size, dy + (size_t)row * size, ctx));
  PetscCall(VecRestoreArray(dY, &dy));
  PetscCall(VecRestoreArrayRead(net->act[L], &y));
  PetscCall(NetStore(net)->fromvec(net, dY, NET_SLOT_TANGENT, L));
  PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, L, &d));
  PetscCall(NetMoveBegin(pl, pl->nmoves - 1, m, PETSC_TRUE, d, pl->moves[pl->nmoves - 1].dcot));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   The tangent walk (NetJVP()) and the second-order adjoint (NetSecondOrderBackward()).

   NetJVP() runs the forward walk's schedule of steps (node k, micro-batch m), and a tangent moves exactly like its value:
   the input's tangent to its consumers' layouts at the start (every micro-batch), a node's output tangent of micro-batch
   m to the later groups after its step, the last node's (in its stage's layout) to the public layout. tan[e] is the
   tangent's receive buffer of move e (its value's is dval), on a communicator of its own (tcomm, the same tags). A value
   whose tangent is zero (NetJVP()'s zero[v], the same on every rank) is not moved: its consumers read NULL.

   NetSecondOrderBackward() runs the backward walk's schedule, in reverse. A step computes the cotangent bar (of dY) and
   its tangent bard of the node's inputs, both in double: an input from another layout is written to its move's dcot,
   which is sent back at once and added into the producer's rows of that micro-batch (NetPlaceSOSendBack_Private(),
   a blocking exchange, since the bar and bard of the step share the buffers); the last node reads its output's bar or
   bard from the output move's dcot, where NetPlaceSOOutput_Private() moves the public rows first. The moved values
   (dval) and tangents (tan) of the last NetForward() and NetJVP() are read where the node reads its inputs.
*/

/* NetJVP(), before the walk: the tangents' buffers for this batch, and the input's tangent moved for every micro-batch
   (dX, when it is not zero) */
PetscErrorCode NetPlaceJVPBegin_Private(Net net, PetscBool dxzero)
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *dx;

  PetscFunctionBegin;
  PetscCheck(!pl->K, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "With -net_pipeline_schedule 1f1b a stage keeps only %" PetscInt_FMT
             " micro-batches' values, so NetJVP() (Gauss-Newton and Newton products, -net_test_jacobian's JVP) has no linearization point for the others: use -net_pipeline_schedule gpipe",
             pl->K);
  PetscCall(NetPlaceBuffers(net));
  if (pl->tcomm == MPI_COMM_NULL || !pl->tcomm) PetscCallMPI(MPI_Comm_dup(pl->comm, &pl->tcomm));
  if (!pl->tan) {
    PetscCall(PetscCalloc1(pl->nmoves, &pl->tan));
    for (PetscInt e = 0; e < pl->nmoves; e++) { /* the consumer's layout (the output move: the last node's stage) */
      const NetMove *mv = &pl->moves[e];

      PetscCall(PetscMalloc1((size_t)pl->es * (size_t)NetPlaceLocalRows(pl, mv->v, mv->k < 0 ? mv->src : mv->dst, 0) * (size_t)mv->size, &pl->tan[e]));
    }
  }
  if (dxzero) PetscFunctionReturn(0);
  PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, 0, &dx));
  for (PetscInt e = 0; e < pl->nmoves; e++)
    if (pl->moves[e].v == 0)
      for (PetscInt m = 0; m < pl->M; m++) PetscCall(NetMoveBeginOn(pl, pl->tcomm, e, m, PETSC_FALSE, dx, pl->tan[e]));
  PetscFunctionReturn(0);
}

/* NetJVP(), before node k on the micro-batch at hand: the tangents of its inputs from other layouts arrived */
PetscErrorCode NetPlaceJVPBefore_Private(Net net, PetscInt k, const PetscBool zero[])
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i];

    if (e >= 0 && !zero[pl->moves[e].v]) PetscCall(NetMoveEnd(pl, e, pl->m));
  }
  PetscFunctionReturn(0);
}

/* NetJVP(), after node k: its output tangent's rows of this micro-batch sent on (the last node's to the public layout) */
PetscErrorCode NetPlaceJVPAfter_Private(Net net, PetscInt k, const PetscBool zero[])
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *dy = NULL;

  PetscFunctionBegin;
  for (PetscInt e = 0; e < pl->nmoves; e++) {
    const NetMove *mv = &pl->moves[e];

    if (mv->k < 0 && k == net->nlayers - 1) {
      PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, net->nlayers, &dy));
      PetscCall(NetMoveBeginOn(pl, pl->tcomm, e, pl->m, PETSC_FALSE, pl->tan[e], dy));
    } else if (mv->k >= 0 && mv->v == k + 1 && !zero[k + 1]) {
      if (!dy) PetscCall(NetPlaceStoreArray(net, NET_SLOT_TANGENT, k + 1, &dy));
      PetscCall(NetMoveBeginOn(pl, pl->tcomm, e, pl->m, PETSC_FALSE, dy, pl->tan[e]));
    }
  }
  PetscFunctionReturn(0);
}

/* NetJVP(), after the walk: the output tangent's rows arrived */
PetscErrorCode NetPlaceJVPEnd_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt m = 0; m < pl->M; m++) PetscCall(NetMoveEnd(pl, pl->nmoves - 1, m));
  PetscFunctionReturn(0);
}

/* NetSecondOrderBackward(), before the walk: the checks, and no cotangent seeded yet */
PetscErrorCode NetPlaceSOBegin_Private(Net net)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  PetscCheck(pl->tan, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "NetSecondOrderBackward() with placement needs the tangents of a NetJVP() at the last forward pass: call NetJVP() along the direction first");
  PetscCall(PetscArrayzero(pl->seeded, (net->nlayers + 1) * pl->M));
  pl->wantdx = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* NetSecondOrderBackward(), the last node's step: the public rows of slot s (NET_SLOT_BAR or NET_SLOT_BARD) of the
   output on the micro-batch at hand moved to the output move's dcot (the last node's stage), where its backward reads them */
PetscErrorCode NetPlaceSOOutput_Private(Net net, NetSlot s)
{
  NetPlace *pl = (NetPlace *)net->pl;
  char     *d;

  PetscFunctionBegin;
  PetscCall(NetPlaceStoreArray(net, s, net->nlayers, &d));
  PetscCall(NetMoveBeginOn(pl, pl->tcomm, pl->nmoves - 1, pl->m, PETSC_TRUE, d, pl->moves[pl->nmoves - 1].dcot));
  PetscCall(NetMoveEnd(pl, pl->nmoves - 1, pl->m));
  PetscFunctionReturn(0);
}

/* NetSecondOrderBackward(), after node k's pass of slot s: the cotangents of its inputs from other layouts (in their
   moves' dcot) sent back and put into the producers' rows of slot s, copied as the first contribution of the micro-batch,
   else added (wantinput: also the Net's input's); seed: the step's last pass, which marks the values seeded */
PetscErrorCode NetPlaceSOSendBack_Private(Net net, PetscInt k, NetSlot s, PetscBool wantinput, PetscBool seed)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt e  = pl->movein[k * pl->maxin + i];
    NetMove       *mv = e >= 0 ? &pl->moves[e] : NULL;
    PetscBool     *sd;
    PetscInt       g0, n, row;
    char          *d;

    if (!mv || (mv->v == 0 && !wantinput)) continue;
    sd = &pl->seeded[mv->v * pl->M + pl->m];
    PetscCall(NetMoveBeginOn(pl, pl->tcomm, e, pl->m, PETSC_TRUE, mv->dcot, mv->rcot));
    PetscCall(NetMoveEnd(pl, e, pl->m));
    NetPlaceRange(pl, mv->v, mv->src, pl->rank, pl->m, &g0, &n, &row);
    PetscCall(NetPlaceStoreArray(net, s, mv->v, &d));
    if (n) {
      const size_t off = (size_t)row * (size_t)mv->size * pl->es;

      NetPlaceAddRows(pl->es, mv->rcot + off, (size_t)n * (size_t)mv->size, (PetscBool) !*sd, d + off);
    }
    if (seed) *sd = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/* NetSecondOrderBackward(): whether the pass writes the Net's input's cotangent (a crossing input's goes to its move) */
PetscErrorCode NetPlaceSOWantInput_Private(Net net, PetscBool wantinput)
{
  PetscFunctionBegin;
  ((NetPlace *)net->pl)->wantdx = wantinput;
  PetscFunctionReturn(0);
}

/*
  A kernel whose element type t is not the stored one: the moves' buffers hold the stored entries (pl->es bytes), so the
  rows a kernel reads from them are widened into a copy of type t, and the rows it writes there are rounded back, as the
  value store widens and rounds its own arrays (netprecision.c):

    t float,  store bfloat16    the float kernels of -net_precision bfloat16
    t double, store float       the second-order adjoint (NetSecondOrderBackward()), which computes in double, in
    t double, store bfloat16      -net_precision single and bfloat16
*/
static PetscBool NetPlaceConverts(const NetPlace *pl, NetElem t)
{
  return (PetscBool)(NetElemBytes(t) != (size_t)pl->es);
}

/* the step's converted rows, bytes bytes, kept with the placement and grown to the largest step (not one malloc a step) */
static PetscErrorCode NetPlaceScratch(NetPlace *pl, size_t bytes, char **f)
{
  PetscFunctionBegin;
  if (bytes > pl->nfwork) {
    PetscCall(PetscFree(pl->fwork));
    PetscCall(PetscMalloc(bytes, &pl->fwork));
    pl->nfwork = bytes;
  }
  *f = pl->fwork;
  PetscFunctionReturn(0);
}

/* cnt stored entries b (es bytes each) widened to type t (wider than the store's) in f: exact */
static void NetPlaceWiden(PetscInt es, const void *b, size_t cnt, NetElem t, void *f)
{
  if (t == NET_ELEM_FLOAT)
    for (size_t i = 0; i < cnt; i++) ((float *)f)[i] = PetNetBF16ToFloat(((const uint16_t *)b)[i]);
  else if (es == sizeof(float))
    for (size_t i = 0; i < cnt; i++) ((PetscScalar *)f)[i] = ((const float *)b)[i];
  else
    for (size_t i = 0; i < cnt; i++) ((PetscScalar *)f)[i] = PetNetBF16ToFloat(((const uint16_t *)b)[i]);
}

/* cnt entries f of type t rounded to the store's (es bytes each) in b, as the store rounds (double to bfloat16 through
   float) */
static void NetPlaceRound(NetElem t, const void *f, size_t cnt, PetscInt es, void *b)
{
  if (t == NET_ELEM_FLOAT)
    for (size_t i = 0; i < cnt; i++) ((uint16_t *)b)[i] = PetNetFloatToBF16(((const float *)f)[i]);
  else if (es == sizeof(float))
    for (size_t i = 0; i < cnt; i++) ((float *)b)[i] = (float)((const PetscScalar *)f)[i];
  else
    for (size_t i = 0; i < cnt; i++) ((uint16_t *)b)[i] = PetNetFloatToBF16((float)((const PetscScalar *)f)[i]);
}

/* ------------------------------------------------------------------------------------------------------------------
   NetGetNodeArraysRead() on a placed Net (K-FAC's statistics): node k's input values and output cotangent of the last
   NetForward() and NetBackward(), whole batch, in the layout of the node's group (this rank's rows of every micro-batch,
   micro-batch after micro-batch, as the node computed them; none on a rank outside the group). Where they live:

     input     from another layout (always the Net's input): the move's receive buffer dval;   else the store's value
     cotangent of the last node (its output is the public value L): the output move's dcot;   else the store's
               tangent slot k + 1, which the backward walk completed (the later groups' contributions added)

   The sums of x^T x and dy^T dy over the ranks are then one rank's: each sample's rows are on exactly one rank of the
   node's group. GPipe only, or 1F1B without slots (M <= S): with more micro-batches 1F1B keeps K = S micro-batches'
   rows in slots, reused before the walk ends, and is refused. */

/* the move buffer src of rows rows x size entries of the store's element type, as double: itself in double, else a
   widened copy in pl->wide[w] (nwide[w] entries, grown here, never shrunk) */
static PetscErrorCode NetPlaceWidenRows(NetPlace *pl, const char *src, PetscInt rows, PetscInt size, PetscInt w, const PetscScalar **a)
{
  const size_t  cnt  = (size_t)rows * (size_t)size;
  PetscScalar **wide = &pl->wide[w];

  PetscFunctionBegin;
  if (pl->es == sizeof(PetscScalar)) {
    *a = (const PetscScalar *)src;
    PetscFunctionReturn(0);
  }
  if (cnt > pl->nwide[w]) {
    PetscCall(PetscFree(*wide));
    PetscCall(PetscMalloc1(cnt, wide));
    pl->nwide[w] = cnt;
  }
  NetPlaceWiden(pl->es, src, cnt, NET_ELEM_DOUBLE, *wide);
  *a = *wide;
  PetscFunctionReturn(0);
}

PetscErrorCode NetPlaceGetNodeArrays_Private(Net net, PetscInt k, PetscInt *n, const PetscScalar **x, const PetscScalar **dy)
{
  NetPlace          *pl = (NetPlace *)net->pl;
  const PetscInt     L = net->nlayers, e = pl->movein[k * pl->maxin], rows = NetPlaceLocalRows(pl, k + 1, pl->group[k], 0);
  const Layer        l     = net->layers[k];
  const NetStoreOps *store = NetStore(net);

  PetscFunctionBegin;
  PetscCheck(!pl->K, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "With -net_pipeline_schedule 1f1b a stage keeps only %" PetscInt_FMT " of the %" PetscInt_FMT
             " micro-batches' values at a time, so no rank holds node %s's input values and output cotangents of the whole batch after the pass, which NetGetNodeArraysRead() hands out (K-FAC: -tao_type kfac, -trainer_hessian_pc kfac reads "
             "them): use -net_pipeline_schedule gpipe, or at most -net_stages micro-batches",
             pl->K, pl->M, net->nodes[k].name);
  PetscCheck(!pl->grid, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "NetGetNodeArraysRead() (K-FAC: -tao_type kfac, -trainer_hessian_pc kfac) of a Net on a grid in pipeline stages is not built: node %s's input and output lie on grids of their own; drop -net_stages or K-FAC", net->nodes[k].name);
  if (n) *n = rows;
  if (x) *x = NULL;
  if (dy) *dy = NULL;
  if (!NetPlaceInGroup(pl, pl->group[k], pl->rank)) PetscFunctionReturn(0); /* no rows here */
  if (x) {
    if (e >= 0)
      PetscCall(NetPlaceWidenRows(pl, pl->moves[e].dval, rows, l->insizes[0], 0, x));
    else
      PetscCall(store->get(net, NET_SLOT_VALUE, net->nodes[k].in[0] + 1, NET_READ, NET_ELEM_DOUBLE, (void **)x));
  }
  if (dy) {
    if (k == L - 1)
      PetscCall(NetPlaceWidenRows(pl, pl->moves[pl->nmoves - 1].dcot, rows, l->outsize, 1, dy));
    else
      PetscCall(store->get(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, (void **)dy));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode NetPlaceRestoreNodeArrays_Private(Net net, PetscInt k, const PetscScalar **x, const PetscScalar **dy)
{
  NetPlace          *pl    = (NetPlace *)net->pl;
  const NetStoreOps *store = NetStore(net);

  PetscFunctionBegin;
  if (NetPlaceInGroup(pl, pl->group[k], pl->rank)) {
    if (dy && k < net->nlayers - 1) PetscCall(store->restore(net, NET_SLOT_TANGENT, k + 1, NET_READ, NET_ELEM_DOUBLE, (void **)dy));
    if (x && pl->movein[k * pl->maxin] < 0) PetscCall(store->restore(net, NET_SLOT_VALUE, net->nodes[k].in[0] + 1, NET_READ, NET_ELEM_DOUBLE, (void **)x));
  }
  if (x) *x = NULL;
  if (dy) *dy = NULL;
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   The executor: the plain kernels on the node's rows of the micro-batch at hand, its inputs from other layouts read
   from their moves' buffers (and the last node's output written to the output move's) */

/* the first row of value v in layout l on this rank, of the micro-batch at hand (0: all of them); in batch mode every value
   of a node has the node's rows, on a grid a pool, an upsampling or a global pooling changes them */
static PetscInt NetPlaceRowOf(const NetPlace *pl, PetscInt v, PetscInt l)
{
  PetscInt g0, n, row;

  if (pl->m < 0) return 0;
  NetPlaceRange(pl, v, l, pl->rank, pl->m, &g0, &n, &row);
  return row;
}

static PetscErrorCode NetExecPlacedArrays(Net net, PetscInt k, NetElem t, const void *const x[], const void *y, const void **xs, const void **ys, PetscInt *n)
{
  NetPlace    *pl = (NetPlace *)net->pl;
  const size_t es = NetElemBytes(t);
  const Layer  l  = net->layers[k];
  PetscInt     row;

  PetscFunctionBegin;
  PetscCheck((size_t)pl->es <= es, PETSC_COMM_SELF, PETSC_ERR_PLIB, "A placed node computes in the store's element type or a wider one (float on bfloat16, double on float or bfloat16)");
  PetscCall(NetPlaceNodeRows_Private(net, k, &row, n));
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i], rin = NetPlaceRowOf(pl, net->nodes[k].in[i] + 1, pl->group[k]);

    xs[i] = e >= 0 ? pl->moves[e].dval + (size_t)rin * l->insizes[i] * pl->es : (const char *)x[i] + (size_t)rin * l->insizes[i] * es;
  }
  if (ys) *ys = k == net->nlayers - 1 ? pl->moves[pl->nmoves - 1].dval + (size_t)row * l->outsize * pl->es : (const char *)y + (size_t)row * l->outsize * es;
  PetscFunctionReturn(0);
}

/*
  A node split over its stage's ranks (-net_parallel model with stages: NetNode.mp, made over the stage's communicator
  by NetPlaceSetUpParameters_Private()) runs the model executor of netmodel.c on its rows of the micro-batch at hand,
  laid out as that executor takes its input (split by samples over the stage's ranks, rank j of the stage rank j of its
  communicator): x' = R x, the rank's block of the layer, y = S y'. R and S are collectives on the stage's
  communicator, so every rank of the stage runs every step of the node, with its rows or none; a rank of another stage
  never does (no mp). Its parameters are the runs of its block in theta_rep (repoff[k], nplocal entries). Its
  linearization point x', y' is the last step's micro-batch: a step on another micro-batch moves its x again first
  (fwdm[k], the same on every rank of the stage: the schedule decides, not the rows), and the counts are gathered
  again at each step when the micro-batches differ in size (M does not divide the batch). Its parameter part is never
  deferred (netforward.c): each micro-batch's backward step takes it, at its own linearization point.
*/
/* the state of a split node's step between its begin and end: the layer's frozen flag (restored at the end), and for
   a sequence node whether its block of queries holds another micro-batch's forward (run again first) */
typedef struct {
  PetscBool frozen, recompute;
} NetPlaceSplitStep;

/* before a split node's step on micro-batch pl->m: its rows of that micro-batch, and the place where its dropout draws */
static PetscErrorCode NetPlaceSplitStepBegin(Net net, PetscInt k, PetscBool forward, NetPlaceSplitStep *st)
{
  NetPlace *pl = (NetPlace *)net->pl;
  PetscInt  g0 = NetPlaceMicroStart(pl, pl->m);

  PetscFunctionBegin;
  PetscCheck(pl->m >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is split over its stage's ranks: its steps run micro-batch by micro-batch", net->nodes[k].name);
  st->recompute = (PetscBool)(!forward && pl->fwdm[k] != pl->m);
  if (pl->grpP) { /* a tensor or sequence group inside the stage: its rows start at its first rank's */
    const PetscMPIInt j0 = (PetscMPIInt)(pl->glo[pl->mystage] + (pl->rank - pl->glo[pl->mystage]) / pl->grpP * pl->grpP);
    PetscInt          n, row;

    NetPlaceRange(pl, k + 1, pl->mystage, j0, pl->m, &g0, &n, &row);
  }
  if (net->nodes[k].sq) {
    /* a sequence node: the block of queries draws at the global samples of the micro-batch its group holds, in the
       token split every sample of it in order from its first, g0 (group rank j's share follows rank j - 1's) */
    pl->fwdm[k] = pl->m;
    PetscCall(NetPlaceDrawBegin(net, k, g0, &st->frozen));
    PetscCall(NetSequenceStageSetSampleOffset_Private(net, g0));
    PetscFunctionReturn(0);
  }
  if (forward || pl->fwdm[k] != pl->m) PetscCall(NetModelNewRows_Private(net, k, (PetscBool)(pl->N % pl->M != 0)));
  pl->fwdm[k] = pl->m;
  /* the rows of micro-batch m its stage (or tensor group) gathers in its ranks' order are the samples from g0: an
     attention split by heads draws its dropout map there, at this pass's counter (a step that runs the local forward
     again, on another micro-batch or for the backward, draws the same map) */
  PetscCall(NetPlaceDrawBegin(net, k, g0, &st->frozen));
  PetscCall(NetModelSetSampleOffset_Private(net, k, g0));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceSplitStepEnd(Net net, PetscInt k, const NetPlaceSplitStep *st)
{
  PetscFunctionBegin;
  PetscCall(NetPlaceDrawEnd(net, k, st->frozen));
  PetscFunctionReturn(0);
}

/* a split node's kernels: netmodel.c's (model, tensor) or netsequence.c's (sequence) on the stage's communicator */
static PetscErrorCode NetPlaceSplitForward(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (net->nodes[k].mp)
    PetscCall(NetModelForward_Private(net, k, n, th, x, y));
  else
    PetscCall(NetSequenceStageForward_Private(net, k, n, th, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceSplitBackward(Net net, PetscInt k, const NetPlaceSplitStep *st, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth)
{
  PetscFunctionBegin;
  if (net->nodes[k].mp)
    PetscCall(NetModelBackward_Private(net, k, n, th, x, y, dy, dx, dth));
  else
    PetscCall(NetSequenceStageBackward_Private(net, k, n, th, x, y, dy, dx, dth, st->recompute));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceSplitJVP(Net net, PetscInt k, const NetPlaceSplitStep *st, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy)
{
  PetscFunctionBegin;
  if (net->nodes[k].mp)
    PetscCall(NetModelJVP_Private(net, k, n, th, x, y, dx, dth, dy));
  else
    PetscCall(NetSequenceStageJVP_Private(net, k, n, th, x, y, dx, dth, dy, st->recompute));
  PetscFunctionReturn(0);
}

/*
  An attention node of a sequence-parallel stage (NetNode.sq, NetExecPlacedSequence): its block of queries keeps the
  state (Q, K, V, log-sum-exps) of its last forward step, fwdm[k] (the same on every rank of the stage: the schedule
  decides, not the rows); a backward, JVP or curvature step on another micro-batch runs the block's forward again first
  (*recompute). Its parameter part is never deferred (attention is not Layer.actonly).
*/

/* the communicator of node k's stage, which a model-parallel node splits its weights over (netmodel.c); this rank is on it */
PetscErrorCode NetPlaceNodeComm_Private(Net net, PetscInt k, MPI_Comm *comm)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  PetscCheck(pl && pl->staged && pl->gcomm != MPI_COMM_NULL && pl->group[k] == pl->mystage, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is not on this rank's pipeline stage", net->nodes[k].name);
  *comm = (pl->grpcomm != MPI_COMM_NULL && pl->grpcomm) ? pl->grpcomm : pl->gcomm;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecForward_Placed(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const NetNode  *nd   = &net->nodes[k];
  const PetscBool conv = NetPlaceConverts(pl, t);
  const PetscBool last = (PetscBool)(k == net->nlayers - 1);
  const size_t    ets  = NetElemBytes(t);
  const void     *stack[NET_MAX_STACK_INPUTS], **xs = stack, *ys;
  char           *f = NULL, *yf = NULL;
  PetscInt        n;
  PetscLogDouble  t0;

  PetscFunctionBegin;
  if (nd->nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc1(nd->nin, &xs));
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  if (conv) { /* scratch: the widened rows of the inputs that came by a move, then the last node's output */
    size_t cnt = last ? (size_t)n * l->outsize : 0;

    for (PetscInt i = 0; i < nd->nin; i++)
      if (pl->movein[k * pl->maxin + i] >= 0) cnt += (size_t)n * l->insizes[i];
    PetscCall(NetPlaceScratch(pl, cnt * ets, &f));
    for (PetscInt i = 0; i < nd->nin; i++)
      if (pl->movein[k * pl->maxin + i] >= 0) {
        NetPlaceWiden(pl->es, xs[i], (size_t)n * l->insizes[i], t, f);
        xs[i] = f;
        f += (size_t)n * l->insizes[i] * ets;
      }
    if (last) yf = f;
  }
  t0 = MPI_Wtime();
  if (n) {
    PetscInt  g0, nn, row;
    PetscBool frozen;

    NetPlaceRange(pl, k + 1, pl->group[k], pl->rank, pl->m, &g0, &nn, &row);
    PetscCall(NetPlaceDrawBegin(net, k, g0, &frozen));
    PetscCall(NetExecPlainForward_Private(net, k, n, t, th, xs, yf ? (void *)yf : (void *)ys));
    PetscCall(NetPlaceDrawEnd(net, k, frozen));
    pl->fwdm[k] = pl->m;
  }
  pl->busy += MPI_Wtime() - t0;
  if (yf) NetPlaceRound(t, yf, (size_t)n * l->outsize, pl->es, (void *)ys);
  if (xs != stack) PetscCall(PetscFree(xs));
  PetscFunctionReturn(0);
}

/*
  Before node k's backward on the micro-batch at hand (n rows, its inputs xs in the kernel's type t): a layer that keeps
  state of its forward pass (not Layer.actonly) whose last forward step was another micro-batch's runs that forward
  again on these rows, at the same global place and frozen counter (its masks drawn again, not stored), the output
  into rwork. A kind whose state is only a cache of its input that it can drop (ops->forget: convolutions, average
  pooling) forgets it instead, and its backward recomputes what it needs from this micro-batch's input. Its parameter
  part is never deferred (netforward.c), so pl->m >= 0 here.
*/
static PetscErrorCode NetPlaceRecompute(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const xs[], PetscInt n)
{
  NetPlace    *pl  = (NetPlace *)net->pl;
  const Layer  l   = net->layers[k];
  const size_t es  = NetElemBytes(t);
  const size_t cnt = es * (size_t)n * (size_t)l->outsize;
  PetscInt     g0, nn, row;
  PetscBool    frozen;

  PetscFunctionBegin;
  if (l->actonly || pl->fwdm[k] == pl->m) PetscFunctionReturn(0);
  PetscCheck(pl->m >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s keeps state of its forward pass: its parameter part runs micro-batch by micro-batch", net->nodes[k].name);
  if (l->ops->forget) { /* what it kept is a cache of its input (conv's columns, Winograd's transforms): dropped, and
                           backward reads this micro-batch's input again; no forward */
    PetscUseTypeMethod(l, forget);
    pl->fwdm[k] = pl->m;
    PetscFunctionReturn(0);
  }
  if (cnt > pl->nrwork) {
    PetscCall(PetscFree(pl->rwork));
    PetscCall(PetscMalloc1(cnt, &pl->rwork));
    pl->nrwork = cnt;
  }
  NetPlaceRange(pl, k + 1, pl->group[k], pl->rank, pl->m, &g0, &nn, &row);
  PetscCall(NetPlaceDrawBegin(net, k, g0, &frozen));
  PetscCall(NetExecPlainForward_Private(net, k, n, t, th, xs, pl->rwork));
  PetscCall(NetPlaceDrawEnd(net, k, frozen));
  pl->fwdm[k] = pl->m;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Placed(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const NetNode  *nd   = &net->nodes[k];
  const PetscBool conv = NetPlaceConverts(pl, t);
  const PetscBool last = (PetscBool)(k == net->nlayers - 1);
  const size_t    es   = NetElemBytes(t);
  const void     *stack[NET_MAX_STACK_INPUTS], **xs   = stack, *ys, *dys;
  void           *dstack[NET_MAX_STACK_INPUTS], **dxs = dstack;
  char           *rstack[NET_MAX_STACK_INPUTS], **dxr = rstack; /* converted: where input i's cotangent of type t rounds to */
  char           *f = NULL;
  PetscInt        n, row;
  PetscLogDouble  t0;

  PetscFunctionBegin;
  if (nd->nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc3(nd->nin, &xs, nd->nin, &dxs, nd->nin, &dxr));
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  PetscCall(NetPlaceNodeRows_Private(net, k, &row, &n));
  dys = last ? pl->moves[pl->nmoves - 1].dcot + (size_t)row * l->outsize * pl->es : (const char *)dy + (size_t)row * l->outsize * es;
  for (PetscInt i = 0; i < nd->nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i];

    dxr[i] = NULL;
    if (pl->m < 0 || nd->bwdpart == 2)
      dxs[i] = NULL; /* the parameter part alone: deferred over every micro-batch, or a sharded node's second part (netforward.c) */
    else if (e >= 0) {
      dxs[i] = (pl->moves[e].v == 0 && !pl->wantdx) ? NULL : pl->moves[e].dcot + (size_t)NetPlaceRowOf(pl, nd->in[i] + 1, pl->group[k]) * l->insizes[i] * pl->es;
      if (conv) dxr[i] = dxs[i];
    } else
      dxs[i] = dx[i] ? (char *)dx[i] + (size_t)NetPlaceRowOf(pl, nd->in[i] + 1, pl->group[k]) * l->insizes[i] * es : NULL;
  }
  if (conv) { /* scratch: the last node's output and its cotangent (both in the output move's buffers), then each moved
                 input's value and cotangent */
    size_t cnt = last ? 2 * (size_t)n * l->outsize : 0;

    for (PetscInt i = 0; i < nd->nin; i++)
      if (pl->movein[k * pl->maxin + i] >= 0) cnt += (size_t)n * l->insizes[i] * (dxr[i] ? 2 : 1);
    PetscCall(NetPlaceScratch(pl, cnt * es, &f));
    if (last) {
      NetPlaceWiden(pl->es, ys, (size_t)n * l->outsize, t, f);
      NetPlaceWiden(pl->es, dys, (size_t)n * l->outsize, t, f + (size_t)n * l->outsize * es);
      ys  = f;
      dys = f + (size_t)n * l->outsize * es;
      f += 2 * (size_t)n * l->outsize * es;
    }
    for (PetscInt i = 0; i < nd->nin; i++) {
      if (pl->movein[k * pl->maxin + i] < 0) continue;
      NetPlaceWiden(pl->es, xs[i], (size_t)n * l->insizes[i], t, f);
      xs[i] = f;
      f += (size_t)n * l->insizes[i] * es;
      if (dxr[i]) { /* the kernel writes (it does not add) its input's cotangent: no widening of the old one */
        dxs[i] = f;
        f += (size_t)n * l->insizes[i] * es;
      }
    }
  }
  t0 = MPI_Wtime();
  if (n) {
    PetscCall(NetPlaceRecompute(net, k, t, th, xs, n));
    PetscCall(NetExecPlainBackward_Private(net, k, n, t, th, xs, ys, dys, dxs, dth, mask));
  }
  pl->busy += MPI_Wtime() - t0;
  for (PetscInt i = 0; i < nd->nin; i++)
    if (dxr[i]) NetPlaceRound(t, dxs[i], (size_t)n * l->insizes[i], pl->es, dxr[i]);
  if (xs != stack) PetscCall(PetscFree3(xs, dxs, dxr));
  PetscFunctionReturn(0);
}

/*
  JVP of node k on the micro-batch at hand: its inputs' tangents from other layouts read from their moves' tan, the last
  node's output tangent written to the output move's tan (in its stage's layout); a NULL dx[i] is a zero tangent
*/
static PetscErrorCode NetExecJVP_Placed(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const NetNode  *nd   = &net->nodes[k];
  const PetscBool conv = NetPlaceConverts(pl, t);
  const PetscBool last = (PetscBool)(k == net->nlayers - 1);
  const size_t    es   = NetElemBytes(t);
  const void     *stack[NET_MAX_STACK_INPUTS], **xs = stack, *ys, *tstack[NET_MAX_STACK_INPUTS], **dxs = tstack;
  void           *dys;
  char           *f = NULL, *dyf = NULL;
  PetscInt        n, row;
  PetscLogDouble  t0;

  PetscFunctionBegin;
  if (nd->nin > NET_MAX_STACK_INPUTS) PetscCall(PetscMalloc2(nd->nin, &xs, nd->nin, &dxs));
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  PetscCall(NetPlaceNodeRows_Private(net, k, &row, &n));
  for (PetscInt i = 0; i < nd->nin; i++) {
    const PetscInt e = pl->movein[k * pl->maxin + i];

    /* a zero tangent is NULL (net->tanzero, the same on every rank; a rank without rows of the producer's layout may
       be handed NULL for a tangent that is not zero) */
    if (net->tanzero[nd->in[i] + 1])
      dxs[i] = NULL;
    else
      dxs[i] = e >= 0 ? (const void *)(pl->tan[e] + (size_t)NetPlaceRowOf(pl, nd->in[i] + 1, pl->group[k]) * l->insizes[i] * pl->es) : (const void *)((const char *)dx[i] + (size_t)NetPlaceRowOf(pl, nd->in[i] + 1, pl->group[k]) * l->insizes[i] * es);
  }
  dys = last ? (void *)(pl->tan[pl->nmoves - 1] + (size_t)row * l->outsize * pl->es) : (void *)((char *)dy + (size_t)row * l->outsize * es);
  if (conv) { /* scratch: the last node's output and its tangent, then each moved input's value and tangent, widened */
    size_t cnt = last ? 2 * (size_t)n * l->outsize : 0;

    for (PetscInt i = 0; i < nd->nin; i++)
      if (pl->movein[k * pl->maxin + i] >= 0) cnt += (size_t)n * l->insizes[i] * (dxs[i] ? 2 : 1);
    PetscCall(NetPlaceScratch(pl, cnt * es, &f));
    if (last) {
      NetPlaceWiden(pl->es, ys, (size_t)n * l->outsize, t, f);
      ys  = f;
      dyf = f + (size_t)n * l->outsize * es;
      f += 2 * (size_t)n * l->outsize * es;
    }
    for (PetscInt i = 0; i < nd->nin; i++) {
      if (pl->movein[k * pl->maxin + i] < 0) continue;
      NetPlaceWiden(pl->es, xs[i], (size_t)n * l->insizes[i], t, f);
      xs[i] = f;
      f += (size_t)n * l->insizes[i] * es;
      if (dxs[i]) {
        NetPlaceWiden(pl->es, dxs[i], (size_t)n * l->insizes[i], t, f);
        dxs[i] = f;
        f += (size_t)n * l->insizes[i] * es;
      }
    }
  }
  t0 = MPI_Wtime();
  if (n) {
    PetscCall(NetPlaceRecompute(net, k, t, th, xs, n)); /* its state (masks, statistics) of this micro-batch */
    PetscCall(NetExecPlainJVP_Private(net, k, n, t, th, xs, ys, dxs, dth, dyf ? (void *)dyf : dys));
  }
  pl->busy += MPI_Wtime() - t0;
  if (dyf) NetPlaceRound(t, dyf, (size_t)n * l->outsize, pl->es, dys);
  if (xs != stack) PetscCall(PetscFree2(xs, dxs));
  PetscFunctionReturn(0);
}

/* cnt stored entries src widened to double at *f, which moves past them */
static PetscScalar *NetPlaceWidenNext(const NetPlace *pl, const char *src, size_t cnt, char **f)
{
  PetscScalar *d = (PetscScalar *)*f;

  NetPlaceWiden(pl->es, src, cnt, NET_ELEM_DOUBLE, d);
  *f += cnt * sizeof(PetscScalar);
  return d;
}

/*
  The arrays of node k's curvature term on the micro-batch at hand, its input's rows [rin, rin + nin) and output's rows
  [rout, rout + nout) in its layout (a plain or split node: the same rows; a spatial one: its box and its block): a moved
  input's value and tangent read from its move's dval and tan, its bard term added into its move's dcot (sent back
  after); the last node's output, its tangent and the bar of dY read from the output move's dval, tan and dcot
  (NetPlaceSOOutput_Private() moved bar there); the others offset into the store's arrays, which the store widened. The
  moves' buffers hold the stored entries, widened here into the placement's scratch where the store is float or
  bfloat16; *mdxd is then the moved input's dcot rows the caller rounds the term back into (NetPlaceRound()), else
  NULL.
*/
static PetscErrorCode NetPlaceSOArrays(Net net, PetscInt k, PetscInt rin, PetscInt nin, PetscInt rout, PetscInt nout, const PetscScalar **x, const PetscScalar **y, const PetscScalar **xdot, const PetscScalar **ydot, const PetscScalar **dy,
                                       PetscScalar **dxd, char **mdxdp)
{
  NetPlace       *pl = (NetPlace *)net->pl;
  const Layer     l  = net->layers[k];
  const PetscInt  e = pl->movein[k * pl->maxin], o = pl->nmoves - 1, is = l->insizes[0], os = l->outsize;
  const PetscBool last = (PetscBool)(k == net->nlayers - 1), conv = NetPlaceConverts(pl, NET_ELEM_DOUBLE);
  const PetscBool xzero = net->tanzero[net->nodes[k].in[0] + 1], yzero = net->tanzero[k + 1];
  const char     *mx = NULL, *mxdot = NULL, *my = NULL, *mydot = NULL, *mdy = NULL; /* the rows in the moves' buffers */
  char           *mdxd = NULL, *f = NULL;

  PetscFunctionBegin;
  if (e >= 0) {
    mx    = pl->moves[e].dval + (size_t)rin * is * pl->es;
    mxdot = xzero ? NULL : pl->tan[e] + (size_t)rin * is * pl->es;                               /* as in the JVP */
    mdxd  = pl->moves[e].v || pl->wantdx ? pl->moves[e].dcot + (size_t)rin * is * pl->es : NULL; /* the Net's input: only when asked for */
  } else {
    *x    = *x + rin * is;
    *xdot = xzero ? NULL : *xdot + rin * is;
    if (*dxd) *dxd += rin * is;
  }
  if (last) {
    my    = pl->moves[o].dval + (size_t)rout * os * pl->es;
    mydot = yzero ? NULL : pl->tan[o] + (size_t)rout * os * pl->es;
    mdy   = pl->moves[o].dcot + (size_t)rout * os * pl->es;
  } else {
    *y    = *y + rout * os;
    *ydot = yzero ? NULL : *ydot + rout * os;
    *dy   = *dy + rout * os;
  }
  if (conv) { /* scratch: each moved array's rows widened to double */
    const size_t nx = (size_t)nin * is, ny = (size_t)nout * os;

    PetscCall(NetPlaceScratch(pl, PetscMax((mx ? nx : 0) + (mxdot ? nx : 0) + (mdxd ? nx : 0) + (my ? ny : 0) + (mydot ? ny : 0) + (mdy ? ny : 0), 1) * sizeof(PetscScalar), &f)); /* not NULL: a split node's ranks without rows run too */
    if (mx) *x = NetPlaceWidenNext(pl, mx, nx, &f);
    if (mxdot) *xdot = NetPlaceWidenNext(pl, mxdot, nx, &f);
    if (mdxd) *dxd = NetPlaceWidenNext(pl, mdxd, nx, &f); /* the term adds to the cotangent the backward pass wrote */
    if (my) *y = NetPlaceWidenNext(pl, my, ny, &f);
    if (mydot) *ydot = NetPlaceWidenNext(pl, mydot, ny, &f);
    if (mdy) *dy = NetPlaceWidenNext(pl, mdy, ny, &f);
  } else {
    if (e >= 0) *x = (const PetscScalar *)mx, *xdot = (const PetscScalar *)mxdot, *dxd = (PetscScalar *)mdxd;
    if (last) *y = (const PetscScalar *)my, *ydot = (const PetscScalar *)mydot, *dy = (const PetscScalar *)mdy;
  }
  *mdxdp = conv ? mdxd : NULL;
  PetscFunctionReturn(0);
}

/* the curvature term of node k (one input; joins are linear here or refused by the walk) on the micro-batch at hand, in
   double, on the arrays NetPlaceSOArrays() finds */
static PetscErrorCode NetExecSOBackward_Placed(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd,
                                               PetscScalar *hvk)
{
  NetPlace   *pl   = (NetPlace *)net->pl;
  const Layer l    = net->layers[k];
  char       *mdxd = NULL;
  PetscInt    n, row;

  PetscFunctionBegin;
  if (l->sozero) PetscFunctionReturn(0);
  PetscCall(NetPlaceNodeRows_Private(net, k, &row, &n));
  if (!n && !net->nodes[k].mp && !net->nodes[k].sq) PetscFunctionReturn(0); /* a split node runs on every rank of its stage */
  PetscCall(NetPlaceSOArrays(net, k, row, n, row, n, &x, &y, &xdot, &ydot, &dy, &dxd, &mdxd));
  if (net->nodes[k].mp || net->nodes[k].sq) { /* split over its stage: the model (or sequence) executor's curvature term */
    NetPlaceSplitStep st;

    PetscCall(NetPlaceSplitStepBegin(net, k, PETSC_FALSE, &st));
    if (net->nodes[k].mp)
      PetscCall(NetModelSOBackward_Private(net, k, n, th, x, y, xdot, thd, ydot, dy, dxd, hvk));
    else
      PetscCall(NetSequenceStageSOBackward_Private(net, k, n, th, x, y, xdot, thd, ydot, dy, dxd, hvk, st.recompute));
    PetscCall(NetPlaceSplitStepEnd(net, k, &st));
  } else {
    const void *xs[1] = {x};

    PetscCall(NetPlaceRecompute(net, k, NET_ELEM_DOUBLE, th, xs, n)); /* its state (masks, statistics) of this micro-batch */
    PetscCall(LayerSOBackwardArray(l, n, th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  }
  if (mdxd) NetPlaceRound(NET_ELEM_DOUBLE, dxd, (size_t)n * l->insizes[0], pl->es, mdxd);
  PetscFunctionReturn(0);
}

/* NetView(), on every rank for every node (the ranks of other stages run the plain placed table, whose view this is
   too): a node split over its stage's ranks shows each of those ranks' grid and block */
static PetscErrorCode NetExecView_PlacedSequence(Net, PetscInt, PetscViewer);

static PetscErrorCode NetExecView_Placed(Net net, PetscInt k, PetscViewer viewer)
{
  NetPlace *pl   = (NetPlace *)net->pl;
  PetscBool mine = (PetscBool)(net->nodes[k].mp != NULL), any;

  PetscFunctionBegin;
  if (net->parallel == NET_PARALLEL_SEQUENCE) { /* the ranks of the node's stage run the sequence table, whose view this is too */
    PetscCall(NetExecView_PlacedSequence(net, k, viewer));
    PetscFunctionReturn(0);
  }
  if (net->parallel != NET_PARALLEL_MODEL && net->parallel != NET_PARALLEL_TENSOR) PetscFunctionReturn(0);
  PetscCall(MPIU_Allreduce(&mine, &any, 1, MPIU_BOOL, MPI_LOR, PetscObjectComm((PetscObject)net)));
  if (!any) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s parallel over the ranks of its %s (x' = R x, the rank's block, y = S y' on the %s's communicator)\n", net->parallel == NET_PARALLEL_TENSOR ? "tensor" : "model", pl->grpP ? "tensor group" : "stage",
                                   pl->grpP ? "group" : "stage"));
  PetscCall(PetscViewerASCIIPushSynchronized(viewer));
  PetscCall(NetModelViewStageBlock_Private(net, k, viewer));
  PetscCall(PetscViewerFlush(viewer));
  PetscCall(PetscViewerASCIIPopSynchronized(viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecPlaced = {"stage", PETSC_TRUE, PETSC_TRUE, NetExecForward_Placed, NetExecBackward_Placed, NetExecJVP_Placed, NetExecSOBackward_Placed, NetExecView_Placed};

/* ------------------------------------------------------------------------------------------------------------------
   The executor of a node split over its stage's ranks (NetPlaceSplitStepBegin()): netmodel.c's model executor (or for a
   sequence node netsequence.c's stage step, below) on the node's rows of the micro-batch at hand, in double (floatok false: the store widens the values of its own layout and rounds
   back the step's rows, netprecision.c). At -net_precision single or bfloat16 the rows it reads from a move's buffer
   (its input's value, cotangent or tangent when the input came from another stage; the last node's output and its
   cotangent or tangent in the output move's) hold stored entries: they are widened into the step's scratch, and the
   rows it writes there rounded back (NetPlaceWiden(), NetPlaceRound(): as the store widens and rounds). */

/*
  The rows of a split node's step: x, y its input's and output's values; dx, dy the cotangents (backward) or tangents
  (JVP) of its input and output; NULL when the step has none. *m: the array is a move's buffer of stored entries
  (pl->es bytes a entry), else the store's double array. The double rows the model executor takes (xd, yd, dxd, dyd)
  are those arrays in double; on a low store the moved ones are widened into scratch (the one the step writes, wr,
  only gets its room) and NetPlaceSplitRoundBack() rounds that one back.
*/
typedef enum { NET_SPLIT_Y, NET_SPLIT_DX, NET_SPLIT_DY } NetPlaceSplitOut;

typedef struct {
  const void  *a[4]; /* x, y, dx, dy as the step found them */
  PetscBool    m[4]; /* in a move's buffer */
  PetscScalar *d[4]; /* in double */
} NetPlaceSplitRows;

static PetscErrorCode NetPlaceSplitWiden(NetPlace *pl, PetscInt n, PetscInt is, PetscInt os, NetPlaceSplitOut wr, NetPlaceSplitRows *r)
{
  const PetscInt len[4] = {n * is, n * os, n * is, n * os};
  size_t         cnt    = 0;
  char          *f      = NULL;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < 4; i++) r->d[i] = (PetscScalar *)r->a[i];
  if (!NetPlaceConverts(pl, NET_ELEM_DOUBLE)) PetscFunctionReturn(0);
  for (PetscInt i = 0; i < 4; i++)
    if (r->m[i] && r->a[i]) cnt += (size_t)len[i];
  PetscCall(NetPlaceScratch(pl, PetscMax(cnt, 1) * sizeof(PetscScalar), &f));
  for (PetscInt i = 0; i < 4; i++) {
    if (!(r->m[i] && r->a[i])) continue;
    if (i != (PetscInt)wr + 1) NetPlaceWiden(pl->es, r->a[i], (size_t)len[i], NET_ELEM_DOUBLE, f); /* wr + 1: the index of the written array */
    r->d[i] = (PetscScalar *)f;
    f += (size_t)len[i] * sizeof(PetscScalar);
  }
  PetscFunctionReturn(0);
}

static void NetPlaceSplitRoundBack(const NetPlace *pl, PetscInt n, PetscInt is, PetscInt os, NetPlaceSplitOut wr, const NetPlaceSplitRows *r)
{
  const PetscInt i = (PetscInt)wr + 1, len = (i == 2) ? n * is : n * os;

  if (NetPlaceConverts(pl, NET_ELEM_DOUBLE) && r->m[i] && r->a[i]) NetPlaceRound(NET_ELEM_DOUBLE, r->d[i], (size_t)len, pl->es, (void *)r->a[i]);
}

/* a split node's step: its values x and y as the step finds them (in a move's buffer or the store's double array), its
   rows n and their first row in its layout */
static PetscErrorCode NetPlaceSplitValues(Net net, PetscInt k, NetElem t, const void *const x[], const void *y, NetPlaceSplitRows *r, PetscInt *n, PetscInt *row)
{
  NetPlace   *pl = (NetPlace *)net->pl;
  const void *xs[1], *ys;

  PetscFunctionBegin;
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, n));
  PetscCall(NetPlaceNodeRows_Private(net, k, row, n));
  r->a[0] = xs[0];
  r->m[0] = (PetscBool)(pl->movein[k * pl->maxin] >= 0);
  r->a[1] = ys;
  r->m[1] = (PetscBool)(k == net->nlayers - 1);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecForward_PlacedSplit(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  NetPlace         *pl = (NetPlace *)net->pl;
  const Layer       l  = net->layers[k];
  NetPlaceSplitRows r  = {{NULL}};
  PetscInt          n, row;
  PetscLogDouble    t0;
  NetPlaceSplitStep st;

  PetscFunctionBegin;
  PetscCall(NetPlaceSplitValues(net, k, t, x, y, &r, &n, &row));
  PetscCall(NetPlaceSplitWiden(pl, n, l->insizes[0], l->outsize, NET_SPLIT_Y, &r));
  t0 = MPI_Wtime();
  PetscCall(NetPlaceSplitStepBegin(net, k, PETSC_TRUE, &st)); /* every rank of the stage, with its rows or none */
  PetscCall(NetPlaceSplitForward(net, k, n, th, r.d[0], r.d[1]));
  PetscCall(NetPlaceSplitStepEnd(net, k, &st));
  pl->busy += MPI_Wtime() - t0;
  NetPlaceSplitRoundBack(pl, n, l->insizes[0], l->outsize, NET_SPLIT_Y, &r);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_PlacedSplit(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  NetPlace         *pl   = (NetPlace *)net->pl;
  const Layer       l    = net->layers[k];
  const PetscBool   last = (PetscBool)(k == net->nlayers - 1);
  const PetscInt    e    = pl->movein[k * pl->maxin];
  NetPlaceSplitRows r    = {{NULL}};
  PetscInt          n, row;
  PetscLogDouble    t0;
  NetPlaceSplitStep st;

  PetscFunctionBegin;
  PetscCheck(pl->m >= 0 && net->nodes[k].bwdpart != 2 && mask < 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is split over its stage's ranks: its backward is one whole step a micro-batch", net->nodes[k].name);
  PetscCall(NetPlaceSplitValues(net, k, t, x, y, &r, &n, &row));
  if (e >= 0)
    r.a[2] = (pl->moves[e].v == 0 && !pl->wantdx) ? NULL : pl->moves[e].dcot + (size_t)row * l->insizes[0] * pl->es; /* the Net's input: only when asked for */
  else
    r.a[2] = dx[0] ? (const void *)((PetscScalar *)dx[0] + row * l->insizes[0]) : NULL;
  r.m[2] = (PetscBool)(e >= 0);
  r.a[3] = last ? (const void *)(pl->moves[pl->nmoves - 1].dcot + (size_t)row * l->outsize * pl->es) : (const void *)((const PetscScalar *)dy + row * l->outsize);
  r.m[3] = last;
  PetscCall(NetPlaceSplitWiden(pl, n, l->insizes[0], l->outsize, NET_SPLIT_DX, &r));
  t0 = MPI_Wtime();
  PetscCall(NetPlaceSplitStepBegin(net, k, PETSC_FALSE, &st));
  PetscCall(NetPlaceSplitBackward(net, k, &st, n, th, r.d[0], r.d[1], r.d[3], r.d[2], dth));
  PetscCall(NetPlaceSplitStepEnd(net, k, &st));
  pl->busy += MPI_Wtime() - t0;
  NetPlaceSplitRoundBack(pl, n, l->insizes[0], l->outsize, NET_SPLIT_DX, &r);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_PlacedSplit(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  NetPlace         *pl   = (NetPlace *)net->pl;
  const Layer       l    = net->layers[k];
  const PetscBool   last = (PetscBool)(k == net->nlayers - 1);
  const PetscInt    e    = pl->movein[k * pl->maxin];
  NetPlaceSplitRows r    = {{NULL}};
  PetscInt          n, row;
  PetscLogDouble    t0;
  NetPlaceSplitStep st;

  PetscFunctionBegin;
  PetscCall(NetPlaceSplitValues(net, k, t, x, y, &r, &n, &row));
  if (!net->tanzero[net->nodes[k].in[0] + 1]) /* a zero tangent is NULL (net->tanzero, the same on every rank) */
    r.a[2] = e >= 0 ? (const void *)(pl->tan[e] + (size_t)row * l->insizes[0] * pl->es) : (const void *)((const PetscScalar *)dx[0] + row * l->insizes[0]);
  r.m[2] = (PetscBool)(e >= 0);
  r.a[3] = last ? (const void *)(pl->tan[pl->nmoves - 1] + (size_t)row * l->outsize * pl->es) : (const void *)((PetscScalar *)dy + row * l->outsize);
  r.m[3] = last;
  PetscCall(NetPlaceSplitWiden(pl, n, l->insizes[0], l->outsize, NET_SPLIT_DY, &r));
  t0 = MPI_Wtime();
  PetscCall(NetPlaceSplitStepBegin(net, k, PETSC_FALSE, &st));
  PetscCall(NetPlaceSplitJVP(net, k, &st, n, th, r.d[0], r.d[1], r.d[2], dth, r.d[3]));
  PetscCall(NetPlaceSplitStepEnd(net, k, &st));
  pl->busy += MPI_Wtime() - t0;
  NetPlaceSplitRoundBack(pl, n, l->insizes[0], l->outsize, NET_SPLIT_DY, &r);
  PetscFunctionReturn(0);
}

/* the curvature term: the placed one, which runs a split node on every rank of its stage (in double: at single and bfloat16 its moved rows widened there) */
/*
  A spatial node on a stage of a grid (NetSetGrid() with -net_stages; NetNode.sp): netspatial.c's executor on the stage's
  own grid and communicator (its halo exchanges, and a global pooling's reduction onto the stage's first rank, among
  the stage's ranks only), its batch the fields of the micro-batch at hand. Its input and output rows are those of its
  two values (a pool or an upsampling changes the points of a field, a globalavgpool leaves the grid): input row rin,
  output row rout (NetPlaceRowOf()). Every rank of the stage runs every step, with rows or none (the exchanges are
  collective on the stage); the other ranks never do. Its box and its local layer's state are those of its last step:
  a backward, JVP or curvature step on another micro-batch gathers the box again and recomputes its local forward
  (fwdm[k]; NetSpatialForgetBox_Private()). Its parameter part is never deferred (netforward.c). Double only.
*/
static PetscErrorCode NetPlaceSpatialStep(Net net, PetscInt k, PetscInt *rin, PetscInt *nin, PetscInt *rout, PetscInt *nout, PetscBool *mine)
{
  NetPlace *pl = (NetPlace *)net->pl;
  PetscInt  g0;

  PetscFunctionBegin;
  PetscCheck(pl->m >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s runs on its stage's grid: its steps run micro-batch by micro-batch", net->nodes[k].name);
  *mine = NetPlaceInGroup(pl, pl->group[k], pl->rank);
  NetPlaceRange(pl, net->nodes[k].in[0] + 1, pl->group[k], pl->rank, pl->m, &g0, nin, rin);
  NetPlaceRange(pl, k + 1, pl->group[k], pl->rank, pl->m, &g0, nout, rout);
  if (*mine && pl->fwdm[k] != pl->m) PetscCall(NetSpatialForgetBox_Private(net, k));
  PetscFunctionReturn(0);
}

/*
  Where the kernel's type t differs from the store's (a node computing in float on a bfloat16 store, the curvature
  term in double on a float or bfloat16 one), the rows a step reads from the moves' buffers (its input when it came by
  a move, the last node's output and its cotangent or tangent) are widened into the placement's scratch, and what it
  writes there (the moved input's cotangent, the last node's output or tangent) is rounded back after the step, as the
  plain placed executor does. cnt[]: the entries of each of up to 6 arrays; f[]: where each one's widened rows lie.
*/
static PetscErrorCode NetPlaceSpatialScratch(NetPlace *pl, NetElem t, const size_t cnt[], PetscInt na, char *f[])
{
  const size_t es    = NetElemBytes(t);
  size_t       total = 1;
  char        *w;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < na; i++) total += cnt[i];
  PetscCall(NetPlaceScratch(pl, total * es, &w));
  for (PetscInt i = 0; i < na; i++) {
    f[i] = cnt[i] ? w : NULL;
    w += cnt[i] * es;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecForward_PlacedSpatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const PetscBool conv = NetPlaceConverts(pl, t), moved = (PetscBool)(pl->movein[k * pl->maxin] >= 0), last = (PetscBool)(k == net->nlayers - 1);
  const void     *xs[1], *ys;
  char           *f[2] = {NULL, NULL};
  PetscInt        n, rin, nin, rout, nout;
  PetscBool       mine;
  PetscLogDouble  t0;

  PetscFunctionBegin;
  PetscCall(NetPlaceSpatialStep(net, k, &rin, &nin, &rout, &nout, &mine));
  if (!mine) PetscFunctionReturn(0);
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  if (conv) {
    const size_t cnt[2] = {moved ? (size_t)nin * l->insizes[0] : 0, last ? (size_t)nout * l->outsize : 0};

    PetscCall(NetPlaceSpatialScratch(pl, t, cnt, 2, f));
    if (f[0]) NetPlaceWiden(pl->es, xs[0], cnt[0], t, f[0]), xs[0] = f[0];
  }
  t0 = MPI_Wtime();
  PetscCall(NetSpatialForward_Private(net, k, n, t, th, xs, conv && f[1] ? (void *)f[1] : (void *)ys));
  pl->fwdm[k] = pl->m;
  pl->busy += MPI_Wtime() - t0;
  if (conv && f[1]) NetPlaceRound(t, f[1], (size_t)nout * l->outsize, pl->es, (void *)ys);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_PlacedSpatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const PetscInt  e    = pl->movein[k * pl->maxin];
  const size_t    ets  = NetElemBytes(t);
  const PetscBool conv = NetPlaceConverts(pl, t), last = (PetscBool)(k == net->nlayers - 1);
  const void     *xs[1], *ys, *dys;
  void           *dxs[1], *dxr = NULL;
  char           *f[4] = {NULL, NULL, NULL, NULL};
  PetscInt        n, rin, nin, rout, nout;
  PetscBool       mine;
  PetscLogDouble  t0;

  PetscFunctionBegin;
  (void)mask; /* no activation is fused on a grid (netfuse.c) */
  PetscCall(NetPlaceSpatialStep(net, k, &rin, &nin, &rout, &nout, &mine));
  if (!mine) PetscFunctionReturn(0);
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  dys = last ? pl->moves[pl->nmoves - 1].dcot + (size_t)rout * l->outsize * pl->es : (const char *)dy + (size_t)rout * l->outsize * ets;
  if (e >= 0)
    dxs[0] = dxr = (pl->moves[e].v == 0 && !pl->wantdx) ? NULL : pl->moves[e].dcot + (size_t)rin * l->insizes[0] * pl->es;
  else
    dxs[0] = dx[0] ? (char *)dx[0] + (size_t)rin * l->insizes[0] * ets : NULL;
  if (conv) { /* the moved input and its cotangent, the last node's output and its cotangent */
    const size_t ni = (size_t)nin * l->insizes[0], no = (size_t)nout * l->outsize;
    const size_t cnt[4] = {e >= 0 ? ni : 0, dxr ? ni : 0, last ? no : 0, last ? no : 0};

    PetscCall(NetPlaceSpatialScratch(pl, t, cnt, 4, f));
    if (f[0]) NetPlaceWiden(pl->es, xs[0], ni, t, f[0]), xs[0] = f[0];
    if (f[1]) dxs[0] = f[1]; /* the kernel writes (it does not add) the input's cotangent */
    if (f[2]) NetPlaceWiden(pl->es, ys, no, t, f[2]), ys = f[2];
    if (f[3]) NetPlaceWiden(pl->es, dys, no, t, f[3]), dys = f[3];
  }
  t0 = MPI_Wtime();
  PetscCall(NetSpatialBackward_Private(net, k, n, t, th, xs, ys, dys, dxs, dth));
  pl->fwdm[k] = pl->m;
  pl->busy += MPI_Wtime() - t0;
  if (conv && dxr) NetPlaceRound(t, dxs[0], (size_t)nin * l->insizes[0], pl->es, dxr);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_PlacedSpatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  NetPlace       *pl   = (NetPlace *)net->pl;
  const Layer     l    = net->layers[k];
  const PetscInt  e    = pl->movein[k * pl->maxin];
  const size_t    ets  = NetElemBytes(t);
  const PetscBool conv = NetPlaceConverts(pl, t), last = (PetscBool)(k == net->nlayers - 1);
  const void     *xs[1], *ys, *dxs[1];
  void           *dys;
  char           *f[4] = {NULL, NULL, NULL, NULL};
  PetscInt        n, rin, nin, rout, nout;
  PetscBool       mine;

  PetscFunctionBegin;
  PetscCall(NetPlaceSpatialStep(net, k, &rin, &nin, &rout, &nout, &mine));
  if (!mine) PetscFunctionReturn(0);
  PetscCall(NetExecPlacedArrays(net, k, t, x, y, xs, &ys, &n));
  if (net->tanzero[net->nodes[k].in[0] + 1])
    dxs[0] = NULL;
  else
    dxs[0] = e >= 0 ? (const void *)(pl->tan[e] + (size_t)rin * l->insizes[0] * pl->es) : (const void *)((const char *)dx[0] + (size_t)rin * l->insizes[0] * ets);
  dys = last ? (void *)(pl->tan[pl->nmoves - 1] + (size_t)rout * l->outsize * pl->es) : (void *)((char *)dy + (size_t)rout * l->outsize * ets);
  if (conv) { /* the moved input and its tangent, the last node's output and its tangent */
    const size_t ni = (size_t)nin * l->insizes[0], no = (size_t)nout * l->outsize;
    const size_t cnt[4] = {e >= 0 ? ni : 0, e >= 0 && dxs[0] ? ni : 0, last ? no : 0, last ? no : 0};

    PetscCall(NetPlaceSpatialScratch(pl, t, cnt, 4, f));
    if (f[0]) NetPlaceWiden(pl->es, xs[0], ni, t, f[0]), xs[0] = f[0];
    if (f[1]) NetPlaceWiden(pl->es, dxs[0], ni, t, f[1]), dxs[0] = f[1];
    if (f[2]) NetPlaceWiden(pl->es, ys, no, t, f[2]), ys = f[2];
  }
  PetscCall(NetSpatialJVP_Private(net, k, n, t, th, xs, ys, dxs, dth, conv && last ? (void *)f[3] : dys));
  pl->fwdm[k] = pl->m;
  if (conv && last) NetPlaceRound(t, f[3], (size_t)nout * l->outsize, pl->es, dys);
  PetscFunctionReturn(0);
}

/* the curvature term, in double (netsecondorder.c): the moves' rows widened where the store is float or bfloat16, the
   moved input's term rounded back into its cotangent's buffer */
static PetscErrorCode NetExecSOBackward_PlacedSpatial(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                      PetscScalar *dxd, PetscScalar *hvk)
{
  NetPlace   *pl   = (NetPlace *)net->pl;
  const Layer l    = net->layers[k];
  char       *mdxd = NULL;
  PetscInt    rin, nin, rout, nout;
  PetscBool   mine;

  PetscFunctionBegin;
  if (l->sozero) PetscFunctionReturn(0);
  PetscCall(NetPlaceSpatialStep(net, k, &rin, &nin, &rout, &nout, &mine));
  if (!mine) PetscFunctionReturn(0);
  PetscCall(NetPlaceSOArrays(net, k, rin, nin, rout, nout, &x, &y, &xdot, &ydot, &dy, &dxd, &mdxd)); /* its box's rows in, its block's out */
  PetscCall(NetSpatialSOBackward_Private(net, k, nout, th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  pl->fwdm[k] = pl->m;
  if (mdxd) NetPlaceRound(NET_ELEM_DOUBLE, dxd, (size_t)nin * l->insizes[0], pl->es, mdxd);
  PetscFunctionReturn(0);
}

const NetExecOps NetExecPlacedSpatial = {"stage+spatial", PETSC_TRUE, PETSC_TRUE, NetExecForward_PlacedSpatial, NetExecBackward_PlacedSpatial, NetExecJVP_PlacedSpatial, NetExecSOBackward_PlacedSpatial, NetSpatialViewNode_Private};

const NetExecOps NetExecPlacedSplit = {"stage+model", PETSC_FALSE, PETSC_TRUE, NetExecForward_PlacedSplit, NetExecBackward_PlacedSplit, NetExecJVP_PlacedSplit, NetExecSOBackward_Placed, NetExecView_Placed};

/* ------------------------------------------------------------------------------------------------------------------
   The executor of an attention node of a sequence-parallel stage (-net_stages with -net_parallel sequence, NetNode.sq):
   netsequence.c's stage step on the node's rows of the micro-batch at hand, y = R^T A_blk(G R x) over the stage's
   communicator: the split executor's forward, backward and JVP above (NetPlaceSplitForward() and the others dispatch
   to netsequence.c's kernels), in double, every rank of the stage running every step; only its view is its own. */

/* NetView(), on every rank for every node: a node whose tokens split over its stage says so, and each of its stage's
   ranks its queries */
static PetscErrorCode NetExecView_PlacedSequence(Net net, PetscInt k, PetscViewer viewer)
{
  PetscBool mine = (PetscBool)(net->nodes[k].sq != NULL), any;

  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(&mine, &any, 1, MPIU_BOOL, MPI_LOR, PetscObjectComm((PetscObject)net)));
  if (!any) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer, "sequence parallel over the ranks of its %s (x' = R x the %s's token split, the rank's queries against every key gathered by G, y = R^T y')\n", ((NetPlace *)net->pl)->grpP ? "sequence group" : "stage",
                                   ((NetPlace *)net->pl)->grpP ? "group" : "stage"));
  PetscCall(PetscViewerASCIIPushSynchronized(viewer));
  PetscCall(NetSequenceStageViewNode_Private(net, k, viewer));
  PetscCall(PetscViewerFlush(viewer));
  PetscCall(PetscViewerASCIIPopSynchronized(viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecPlacedSequence = {"stage+sequence", PETSC_FALSE, PETSC_TRUE, NetExecForward_PlacedSplit, NetExecBackward_PlacedSplit, NetExecJVP_PlacedSplit, NetExecSOBackward_Placed, NetExecView_PlacedSequence};

/* ------------------------------------------------------------------------------------------------------------------
   Parameters: this rank's stage's nodes, their place in theta_rep, theta's ownership */

/* the local size of theta on this rank: with stages, an even share of its stage's parameters among the stage's ranks;
   otherwise (groups that overlap, or out of the nodes' order) PETSc's even share of all of them */
PetscErrorCode NetPlaceOwnedParameters_Private(Net net, PetscInt *nlocal)
{
  NetPlace *pl = (NetPlace *)net->pl;

  PetscFunctionBegin;
  if (pl->staged) {
    const PetscInt s = pl->mystage, lo = net->poff[pl->first[s]], hi = net->poff[pl->last[s] + 1], j = pl->rank % pl->G;
    const PetscInt q = (hi - lo) / pl->G, rem = (hi - lo) % pl->G;

    *nlocal = q + (j < rem ? 1 : 0);
  }
  PetscFunctionReturn(0);
}

/* the parameters this rank computes with: those of the nodes of its groups (theta_rep's size) */
PetscErrorCode NetPlaceLocalParameters_Private(Net net, PetscInt *nrep)
{
  PetscFunctionBegin;
  *nrep = ((NetPlace *)net->pl)->nrep;
  PetscFunctionReturn(0);
}

/* the broadcast's context: the gather of the stage's runs, and the buffer its adjoint reduces from (the reduce
   overwrites its buffer, and a Mat keeps its input: made once, not per gradient) */
typedef struct {
  NetParamMap  map;
  PetscScalar *work;
  PetscBool    none; /* no rank holds a run (every node of a -net_parallel sharded placement gathers its own): B and
                        B^T move nothing, and skip the map's collectives on the Net's communicator */
} NetPlaceBcast;

static PetscErrorCode NetPlaceBcastMult(Mat B, Vec theta, Vec rep)
{
  NetPlaceBcast *ctx;
  PetscScalar   *r;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  if (ctx->none) PetscFunctionReturn(0);
  PetscCall(VecGetArrayWrite(rep, &r));
  PetscCall(NetParamMapGather_Private(ctx->map, theta, r));
  PetscCall(VecRestoreArrayWrite(rep, &r));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceBcastMultTransposeAdd(Mat B, Vec rep, Vec g, Vec z)
{
  NetPlaceBcast     *ctx;
  const PetscScalar *r;
  PetscInt           n;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  if (g != z) PetscCall(VecCopy(g, z));
  if (ctx->none) PetscFunctionReturn(0);
  PetscCall(VecGetLocalSize(rep, &n));
  PetscCall(VecGetArrayRead(rep, &r));
  PetscCall(PetscArraycpy(ctx->work, r, n));
  PetscCall(VecRestoreArrayRead(rep, &r));
  PetscCall(NetParamMapReduceAdd_Private(ctx->map, ctx->work, z));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceBcastMultTranspose(Mat B, Vec rep, Vec z)
{
  PetscFunctionBegin;
  PetscCall(VecZeroEntries(z));
  PetscCall(NetPlaceBcastMultTransposeAdd(B, rep, z, z));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetPlaceBcastDestroy(Mat B)
{
  NetPlaceBcast *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  PetscCall(NetParamMapDestroy_Private(&ctx->map));
  PetscCall(PetscFree(ctx->work));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

/*
  NetPlaceSetUpParameters_Private - theta_rep holds the parameters of the nodes this rank runs (node k at repoff[k], -1
  for the nodes of groups without this rank: with stages, its stage's block), refreshed by the broadcast B (the gather
  of those runs of theta) and summed back by B^T.

  -net_parallel sharded (ZeRO-3 inside each stage): theta_rep holds none of them. Each node k with parameters of this
  rank's stage s gets a map over the stage's communicator gcomm (the ranks [s G, (s + 1) G), rank j of the stage rank j
  of gcomm): the "whole" pattern of netpmap.c, its block [poff[k], poff[k + 1]) gathered by an MPI_Allgatherv of the
  pieces the stage's ranks own just before each of its steps, and its gradient reduce-scattered into them. Theta lays
  out stage s's block over the stage's ranks only (NetPlaceOwnedParameters_Private()), so the map needs no other rank;
  NetParamMapCreateOn_Private() checks it (PETSC_ERR_PLIB). A rank of another stage has no map for k (nd->pmap NULL,
  repoff[k] -1: it never runs k's kernels, and never joins k's collectives). A rank then keeps 1/G of its stage's
  parameters (its slice of theta) instead of the slice and a copy of the whole block, plus the block of one node at a
  time while that node runs.

  Why the maps' collectives cannot deadlock with the moves between stages (point-to-point, begun early, waited for just
  before their rows are read): every rank walks the one global schedule of steps in the same order (GPipe's, 1F1B's,
  the JVP's and the second-order adjoint's), and a step waits only on what earlier steps of that schedule began: a
  move's receive was matched by a send begun at an earlier step (which MPI's progress rule completes while its rank
  is inside any MPI call, a blocking collective of its own stage included), a group's gather or reduce-scatter is
  entered by every rank of the group at the same step. By induction over the schedule, if every rank eventually
  finishes the steps before step i, each rank of i's group gets past i's waits and reaches i's collective, so i
  finishes; the stages' collectives run on their own communicators, never the moves', so no message of one is taken
  for the other. The deferred parameter passes at the backward walk's end (NetWalkBackwardEnd_Private()) are steps
  after the last one, in the same order on every rank of a stage.
*/
PetscErrorCode NetPlaceSetUpParameters_Private(Net net)
{
  NetPlace       *pl      = (NetPlace *)net->pl;
  MPI_Comm        comm    = PetscObjectComm((PetscObject)net);
  const PetscBool sharded = (PetscBool)(net->parallel == NET_PARALLEL_SHARDED);
  const PetscBool tensor  = (PetscBool)(net->parallel == NET_PARALLEL_TENSOR);
  const PetscBool model   = (PetscBool)(net->parallel == NET_PARALLEL_MODEL || tensor); /* tensor: the same executor, Megatron's split of each node */
  const PetscBool seq     = (PetscBool)(net->parallel == NET_PARALLEL_SEQUENCE);
  NetPlaceBcast  *ctx;
  PetscInt        n = 0, nl, nruns = 0, maxruns = net->nlayers, *runstart, *runlen;

  PetscFunctionBegin;
  PetscCall(NetPlaceCheckModes(net)); /* again: NetSetParallel() after set-up lands here */
  PetscCheck(!(sharded || model || seq) || pl->staged, comm, PETSC_ERR_SUP,
             "-net_parallel %s with a placement %s over the ranks of each pipeline stage, so it needs stages of consecutive nodes in rank order (-net_stages, or entry@s in the nodes' order); this placement (groups of their own, entry@ranks=a:b, "
             "or stages against the nodes' order) runs with -net_parallel replicated",
             NetParallelTypes[net->parallel],
             sharded  ? "shards each stage's parameters"
             : tensor ? "splits each attention and dense:N:tokens node"
             : seq    ? "splits the tokens of each attention node"
                      : "splits each dense and convolution node's weights");
  /* a tensor-parallel stage is one tensor group of its ranks, or -net_tensor_ranks P cuts it into G / P groups of P
     consecutive ranks, data parallel over the groups: each group splits its nodes over its ranks and runs its rows of a
     micro-batch; ranks of different groups hold the same blocks, whose gradients theta_rep's map sums */
  PetscCheck(!tensor || net->tensorranks == 0 || (net->tensorranks > 0 && pl->G % net->tensorranks == 0), comm, PETSC_ERR_ARG_INCOMP,
             "-net_parallel tensor with -net_stages %" PetscInt_FMT " splits each stage's attention and dense:N:tokens nodes over tensor groups of a stage's %" PetscInt_FMT " ranks, but -net_tensor_ranks %" PetscInt_FMT
             " does not divide them into equal groups: give a divisor of %" PetscInt_FMT " (0 or %" PetscInt_FMT ": one group a stage)",
             pl->S, pl->G, net->tensorranks, pl->G, pl->G);
  /* a sequence-parallel stage is one sequence group of its ranks, or -net_sequence_ranks P cuts it into G / P groups of
     P consecutive ranks, data parallel over the groups: each group splits the tokens of its rows of a micro-batch */
  PetscCheck(!seq || net->seqranks == 0 || (net->seqranks > 0 && pl->G % net->seqranks == 0), comm, PETSC_ERR_ARG_INCOMP,
             "-net_parallel sequence with -net_stages %" PetscInt_FMT " splits the tokens of each stage's attention nodes over sequence groups of a stage's %" PetscInt_FMT " ranks, but -net_sequence_ranks %" PetscInt_FMT
             " does not divide them into equal groups: give a divisor of %" PetscInt_FMT " (0 or %" PetscInt_FMT ": one group a stage)",
             pl->S, pl->G, net->seqranks, pl->G, pl->G);
  if ((sharded || model || seq) && !pl->gcomm) PetscCallMPI(MPI_Comm_split(comm, (PetscMPIInt)pl->mystage, pl->rank, &pl->gcomm)); /* once: every node of the stage maps or splits over it */
  {
    const PetscInt P = (tensor && net->tensorranks > 0 && net->tensorranks < pl->G) ? net->tensorranks : (seq && net->seqranks > 0 && net->seqranks < pl->G) ? net->seqranks : 0;

    if (pl->grpcomm && pl->grpcomm != MPI_COMM_NULL && pl->grpP != P) PetscCallMPI(MPI_Comm_free(&pl->grpcomm));
    if (P && (!pl->grpcomm || pl->grpcomm == MPI_COMM_NULL)) {
      const PetscMPIInt j = (PetscMPIInt)(pl->rank - pl->glo[pl->mystage]); /* this rank's place in its stage */

      PetscCallMPI(MPI_Comm_split(pl->gcomm, (PetscMPIInt)(j / P), j, &pl->grpcomm));
    }
    pl->grpP = P;
  }
  if (seq) PetscCall(NetSequenceSetUpStage_Private(net, pl->grpP ? pl->grpcomm : pl->gcomm, pl->first[pl->mystage], pl->last[pl->mystage])); /* its attention nodes: the token split over the stage or its group (netsequence.c) */
  net->gathers = sharded;
  PetscCall(PetscMalloc1(net->nlayers, &net->repoff));
  /* the runs of theta_rep: a node's whole block, or a model node's runs (its W block row by row, then its bias block) */
  for (PetscInt k = 0; k < net->nlayers; k++) {
    if (!model || !NetPlaceInGroup(pl, pl->group[k], pl->rank)) continue;
    PetscCall(NetModelSetUpNode_Private(net, k)); /* over the stage's communicator (NetPlaceNodeComm_Private()): sets mp, nplocal and the runs */
    maxruns += net->nodes[k].nruns;
  }
  PetscCall(PetscMalloc2(maxruns, &runstart, maxruns, &runlen));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetNode *nd = &net->nodes[k];
    const PetscInt np = net->layers[k]->nparams, nr = nd->mp ? nd->nruns : 1;

    net->repoff[k] = -1;
    if (!NetPlaceInGroup(pl, pl->group[k], pl->rank)) continue;
    if (sharded && np) { /* gathered over the stage's ranks, never held in theta_rep */
      NetParamMap map;

      PetscCall(NetParamMapCreateOn_Private(net->theta, pl->gcomm, (PetscMPIInt)(pl->mystage * pl->G), 0, NULL, NULL, net->poff[k], np, &map));
      net->nodes[k].pmap = map;
      continue;
    }
    net->repoff[k] = n;
    if (!np) continue;
    for (PetscInt r = 0; r < nr; r++) {
      const PetscInt start = nd->mp ? nd->runstart[r] : net->poff[k], len = nd->mp ? nd->runlen[r] : np;

      if (!len) continue;
      if (nruns && runstart[nruns - 1] + runlen[nruns - 1] == start)
        runlen[nruns - 1] += len; /* the run goes on */
      else {
        runstart[nruns] = start;
        runlen[nruns++] = len;
      }
      n += len;
    }
  }
  pl->nrep = n;
  PetscCall(PetscNew(&ctx));
  if (nruns)
    PetscCall(NetParamMapCreate_Private(net->theta, nruns, runstart, runlen, 0, 0, &ctx->map));
  else
    PetscCall(NetParamMapCreate_Private(net->theta, 0, NULL, NULL, 0, 0, &ctx->map));
  PetscCall(PetscFree2(runstart, runlen));
  {
    PetscInt most;

    PetscCall(MPIU_Allreduce(&n, &most, 1, MPIU_INT, MPI_MAX, comm));
    ctx->none = (PetscBool)(most == 0);
  }
  PetscCall(PetscMalloc1(n, &ctx->work));
  PetscCall(VecGetLocalSize(net->theta, &nl));
  PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), n, nl, PETSC_DETERMINE, net->nparams, ctx, &net->bcast));
  PetscCall(MatShellSetOperation(net->bcast, MATOP_MULT, (void (*)(void))NetPlaceBcastMult));
  PetscCall(MatShellSetOperation(net->bcast, MATOP_MULT_TRANSPOSE, (void (*)(void))NetPlaceBcastMultTranspose));
  PetscCall(MatShellSetOperation(net->bcast, MATOP_MULT_TRANSPOSE_ADD, (void (*)(void))NetPlaceBcastMultTransposeAdd));
  PetscCall(MatShellSetOperation(net->bcast, MATOP_DESTROY, (void (*)(void))NetPlaceBcastDestroy));
  PetscCall(MatCreateVecs(net->bcast, NULL, &net->theta_rep));
  PetscCall(VecDuplicate(net->theta_rep, &net->grad_rep));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   View, times, checks */

PetscErrorCode NetPlaceView_Private(Net net, PetscViewer viewer)
{
  NetPlace *pl    = (NetPlace *)net->pl;
  PetscReal total = 0;

  PetscFunctionBegin;
  if (!pl) PetscFunctionReturn(0);
  for (PetscInt g = 0; g < pl->ngroups; g++) total += pl->cost[g];
  if (pl->staged) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "Pipeline: %" PetscInt_FMT " stages of %" PetscInt_FMT " ranks, %" PetscInt_FMT " micro-batches, schedule %s, ideal bubble (S-1)/(M+S-1) = %.3f\n", pl->S, pl->G, pl->M, NetPipelineSchedules[net->schedule],
                                     (double)(pl->S - 1) / (double)(pl->M + pl->S - 1)));
    if (net->parallel == NET_PARALLEL_SHARDED) PetscCall(PetscViewerASCIIPrintf(viewer, "  each stage sharded over its ranks (ZeRO-3): a rank keeps 1/%" PetscInt_FMT " of its stage's parameters, a node's gathered as it runs\n", pl->G));
    if (net->parallel == NET_PARALLEL_MODEL)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  each stage model parallel over its ranks: a dense or convolution node's weights split over the stage's %" PetscInt_FMT " rank%s (its partition, or the default)\n", pl->G, pl->G > 1 ? "s" : ""));
    if (net->parallel == NET_PARALLEL_SEQUENCE && !pl->grpP)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  each stage sequence parallel over its ranks (one sequence group): an attention node's queries split by tokens over the stage's %" PetscInt_FMT " rank%s, its input moved to the token split and back\n",
                                       pl->G, pl->G > 1 ? "s" : ""));
    if (net->parallel == NET_PARALLEL_SEQUENCE && pl->grpP)
      PetscCall(PetscViewerASCIIPrintf(viewer,
                                       "  each stage sequence parallel over %" PetscInt_FMT " sequence groups of %" PetscInt_FMT
                                       " rank%s (-net_sequence_ranks), data parallel over the groups: an attention node's queries split by tokens over a group's ranks, its input moved to the group's token split and back\n",
                                       pl->G / pl->grpP, pl->grpP, pl->grpP > 1 ? "s" : ""));
    if (net->parallel == NET_PARALLEL_TENSOR && !pl->grpP)
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "  each stage tensor parallel over its ranks (one tensor group): attention by heads, dense:N:tokens column- or row-parallel over the stage's %" PetscInt_FMT " rank%s; an MLP pair moves its value between its two nodes\n", pl->G,
          pl->G > 1 ? "s" : ""));
    if (net->parallel == NET_PARALLEL_TENSOR && pl->grpP)
      PetscCall(PetscViewerASCIIPrintf(viewer,
                                       "  each stage tensor parallel over %" PetscInt_FMT " tensor groups of %" PetscInt_FMT
                                       " rank%s (-net_tensor_ranks), data parallel over the groups: attention by heads, dense:N:tokens column- or row-parallel over a group's ranks; an MLP pair moves its value between its two nodes\n",
                                       pl->G / pl->grpP, pl->grpP, pl->grpP > 1 ? "s" : ""));
    if (pl->grid) { /* each stage spatially parallel: its own DMDA (one a spatial group), decomposed alike in every stage */
      PetscInt dim, N[3], sr[3], pr[3];
      char     who[128];

      PetscCall(DMDAGetInfo(net->sgrid, &dim, &N[0], &N[1], &N[2], &sr[0], &sr[1], &sr[2], NULL, NULL, NULL, NULL, NULL, NULL));
      PetscCall(DMDAGetInfo(net->grid, NULL, NULL, NULL, NULL, &pr[0], &pr[1], &pr[2], NULL, NULL, NULL, NULL, NULL, NULL));
      if (net->ngroups > 1)
        PetscCall(PetscSNPrintf(who, sizeof(who), "over %" PetscInt_FMT " spatial groups of %" PetscInt_FMT " rank%s (-net_spatial_groups), data parallel over the groups: each group", net->ngroups, pl->G / net->ngroups,
                                pl->G / net->ngroups > 1 ? "s" : ""));
      else
        PetscCall(PetscSNPrintf(who, sizeof(who), "over its ranks:"));
      if (dim == 2)
        PetscCall(PetscViewerASCIIPrintf(viewer,
                                         "  each stage spatially parallel %s its own DMDA of the grid %" PetscInt_FMT "x%" PetscInt_FMT " on a %" PetscInt_FMT "x%" PetscInt_FMT " grid of ranks (the Net's input and output: the grid's %" PetscInt_FMT
                                         "x%" PetscInt_FMT "), micro-batches of whole fields\n",
                                         who, N[1], N[0], sr[1], sr[0], pr[1], pr[0]));
      else
        PetscCall(PetscViewerASCIIPrintf(viewer,
                                         "  each stage spatially parallel %s its own DMDA of the grid %" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT " on a %" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT
                                         " grid of ranks (the Net's input and output: the grid's %" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT "), micro-batches of whole fields\n",
                                         who, N[2], N[1], N[0], sr[2], sr[1], sr[0], pr[2], pr[1], pr[0]));
    }
    for (PetscInt s = 0; s < pl->S; s++) {
      PetscInt np = net->poff[pl->last[s] + 1] - net->poff[pl->first[s]];

      PetscCall(PetscViewerASCIIPrintf(viewer, "  stage %" PetscInt_FMT " (ranks %" PetscInt_FMT "-%" PetscInt_FMT "): nodes %s .. %s, %" PetscInt_FMT " parameters, cost %.1f%%\n", s, s * pl->G, (s + 1) * pl->G - 1, net->nodes[pl->first[s]].name,
                                       net->nodes[pl->last[s]].name, np, total > 0 ? 100.0 * (double)(pl->cost[s] / total) : 0.0));
    }
    PetscFunctionReturn(0);
  }
  if (net->parallel == NET_PARALLEL_SUBGRAPH)
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "Sub-graph placement: %" PetscInt_FMT " fork-join%s split over groups of ranks, %" PetscInt_FMT " micro-batches, %" PetscInt_FMT " segments\n", pl->nregions, pl->nregions == 1 ? "" : "s", pl->M, pl->nseg));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "Placement: %" PetscInt_FMT " groups of ranks, %" PetscInt_FMT " micro-batches, %" PetscInt_FMT " segments\n", pl->ngroups, pl->M, pl->nseg));
  for (PetscInt g = 0; g < pl->ngroups; g++) {
    PetscInt np = 0, nn = 0;

    for (PetscInt k = 0; k < net->nlayers; k++)
      if (pl->group[k] == g) {
        np += net->layers[k]->nparams;
        nn++;
      }
    if (!nn) continue;
    PetscCall(PetscViewerASCIIPrintf(viewer, "  ranks %" PetscInt_FMT "-%" PetscInt_FMT ": %" PetscInt_FMT " node%s, %" PetscInt_FMT " parameters, cost %.1f%%:", pl->glo[g], pl->glo[g] + pl->gn[g] - 1, nn, nn == 1 ? "" : "s", np,
                                     total > 0 ? 100.0 * (double)(pl->cost[g] / total) : 0.0));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
    for (PetscInt k = 0; k < net->nlayers; k++)
      if (pl->group[k] == g) PetscCall(PetscViewerASCIIPrintf(viewer, " %s", net->nodes[k].name));
    PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  }
  PetscFunctionReturn(0);
}

/*
  NetPlaceTestParameterMaps_Private - the dot-product test of each sharded stage's parameter gather G_k (node k's block
  of theta onto every rank of its stage, netpmap.c over the stage's communicator) against its reduce-scatter G_k^T:
  <G_k x, y> summed over the stage's ranks against <x, G_k^T y> over theta's layout, x random in theta's layout, y a
  random block on each rank of the stage (the ranks of the other stages hold none: no map, nothing gathered). *err
  becomes the largest relative difference so far (collective)
*/
static PetscErrorCode NetPlaceTestParameterMaps_Private(Net net, PetscRandom rnd, PetscReal *err)
{
  Vec x, z;

  PetscFunctionBegin;
  if (net->parallel != NET_PARALLEL_SHARDED) PetscFunctionReturn(0);
  PetscCall(VecDuplicate(net->theta, &x));
  PetscCall(VecDuplicate(net->theta, &z));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetParamMap  map = (NetParamMap)net->nodes[k].pmap;
    PetscInt     np  = map ? net->nodes[k].nplocal : 0;
    PetscScalar *gx, *y, *yr, loc = 0, a, b;

    if (!net->layers[k]->nparams) continue; /* the same on every rank */
    PetscCall(VecSetRandom(x, rnd));
    PetscCall(VecZeroEntries(z));
    PetscCall(PetscMalloc3(np, &gx, np, &y, np, &yr));
    for (PetscInt i = 0; i < np; i++) PetscCall(PetscRandomGetValue(rnd, &y[i]));
    PetscCall(PetscArraycpy(yr, y, np)); /* the reduce-scatter overwrites its buffer */
    if (map) PetscCall(NetParamMapGather_Private(map, x, gx));
    if (map) PetscCall(NetParamMapReduceAdd_Private(map, yr, z));
    for (PetscInt i = 0; i < np; i++) loc += gx[i] * y[i];
    PetscCall(MPIU_Allreduce(&loc, &a, 1, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)net)));
    PetscCall(VecDot(x, z, &b));
    *err = PetscMax(*err, PetscAbsScalar(a - b) / PetscMax(PetscAbsScalar(a), PETSC_SMALL));
    PetscCall(PetscFree3(gx, y, yr));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&z));
  PetscFunctionReturn(0);
}

/*
  NetPlaceTestMoves_Private - the dot-product test of every move on the current batch: max over moves and micro-batches
  of |<R x, y> - <x, R^T y>| / (|R x| |y|), with x, y random rows of the layouts, and of each sharded stage's parameter
  gathers (NetPlaceTestParameterMaps_Private()) (collective)
*/
PetscErrorCode NetPlaceTestMoves_Private(Net net, PetscRandom rnd, PetscReal *err)
{
  NetPlace *pl   = (NetPlace *)net->pl;
  MPI_Comm  comm = PetscObjectComm((PetscObject)net);

  PetscFunctionBegin;
  *err = 0;
  if (!pl) PetscFunctionReturn(0);
  PetscCheck(pl->N >= 0, comm, PETSC_ERR_ORDER, "Test the moves after a forward pass (the batch fixes them)");
  for (PetscInt e = 0; e < pl->nmoves; e++) {
    NetMove       *mv = &pl->moves[e];
    const PetscInt ns = NetPlaceLocalRows(pl, mv->v, mv->src, net->nlocal) * mv->size, nt = NetPlaceLocalRows(pl, mv->v, mv->dst, net->nlocal) * mv->size;
    const PetscInt es = pl->es;
    PetscScalar   *x, *rx, *y, *rty;
    PetscReal      loc[3] = {0, 0, 0}, glob[3];

    pl->es = sizeof(PetscScalar); /* the test moves doubles */
    PetscCall(PetscMalloc4(ns, &x, nt, &rx, nt, &y, ns, &rty));
    for (PetscInt i = 0; i < ns; i++) PetscCall(PetscRandomGetValue(rnd, &x[i]));
    for (PetscInt i = 0; i < nt; i++) PetscCall(PetscRandomGetValue(rnd, &y[i]));
    for (PetscInt m = 0; m < pl->M; m++) { /* one micro-batch at a time (with 1F1B they share slots): <R_m x, y> and <x, R_m^T y> on its rows */
      PetscInt g0, n, tr, sr;

      PetscCall(PetscArrayzero(rx, nt));
      PetscCall(PetscArrayzero(rty, ns));
      PetscCall(NetMoveBegin(pl, e, m, PETSC_FALSE, (const char *)x, (char *)rx));
      PetscCall(NetMoveEnd(pl, e, m));
      PetscCall(NetMoveBegin(pl, e, m, PETSC_TRUE, (const char *)y, (char *)rty));
      PetscCall(NetMoveEnd(pl, e, m));
      NetPlaceRange(pl, mv->v, mv->dst, pl->rank, m, &g0, &n, &tr);
      for (PetscInt i = tr * mv->size; i < (tr + n) * mv->size; i++) {
        loc[0] += rx[i] * y[i];
        loc[2] = PetscMax(loc[2], PetscAbsScalar(rx[i]) * PetscAbsScalar(y[i]));
      }
      NetPlaceRange(pl, mv->v, mv->src, pl->rank, m, &g0, &n, &sr);
      for (PetscInt i = sr * mv->size; i < (sr + n) * mv->size; i++) loc[1] += x[i] * rty[i];
    }
    PetscCall(MPIU_Allreduce(loc, glob, 2, MPIU_REAL, MPIU_SUM, comm));
    PetscCall(MPIU_Allreduce(&loc[2], &glob[2], 1, MPIU_REAL, MPIU_MAX, comm));
    *err = PetscMax(*err, PetscAbsReal(glob[0] - glob[1]) / PetscMax(PetscAbsReal(glob[0]), PETSC_SMALL));
    PetscCall(PetscFree4(x, rx, y, rty));
    pl->es = es;
  }
  PetscCall(NetPlaceTestParameterMaps_Private(net, rnd, err)); /* and a sharded stage's gathers */
  PetscFunctionReturn(0);
}

/*@
  NetGetPipelineTimes - the seconds this rank spent computing inside its stage's nodes (busy) and in the walks of
  NetForward() and NetBackward() (wall) since the last call; 1 - busy/wall is its bubble fraction

  Not collective

  Input Parameter:
. net - the Net

  Output Parameters:
+ busy - seconds in the kernels of this rank's nodes, or NULL
- wall - seconds of the forward and backward walks, or NULL

  Notes:
  Without stages or micro-batches (-net_stages, -net_microbatches) both are 0. The counters restart at each call.
  With S stages and M micro-batches of equal cost, GPipe idles each rank (S - 1)/(M + S - 1) of the time.

  Level: intermediate

.seealso: `NetSetStages()`, `NetSetMicroBatches()`, `NetView()`
@*/
PetscErrorCode NetGetPipelineTimes(Net net, PetscLogDouble *busy, PetscLogDouble *wall)
{
  NetPlace *pl;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  pl = (NetPlace *)net->pl;
  if (busy) *busy = pl ? pl->busy : 0;
  if (wall) *wall = pl ? pl->wall : 0;
  if (pl) pl->busy = pl->wall = 0;
  PetscFunctionReturn(0);
}

/* the placement lays out the parameter Vec and every value: it is chosen before set-up */
static PetscErrorCode NetPlaceChanged(Net net)
{
  PetscFunctionBegin;
  PetscCheck(!net->setupcalled, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER,
             "The Net is set up: the stages, micro-batches and node placement lay out its parameters and values, so choose them before NetSetUp() (give -net_stages, -net_microbatches, -<node>stage with the other options)");
  PetscFunctionReturn(0);
}

/*@
  NetSetStages - cuts the nodes into S pipeline stages of consecutive nodes, stage s running on the ranks
  [s P/S, (s+1) P/S), balanced by a cost model of each node's multiply-adds and the entries it reads and writes

  Logically collective

  Input Parameters:
+ net - the Net
- S   - the stages (1: none); S must divide the ranks and be at most the number of nodes

  Options Database Key:
. -net_stages <S> - the same

  Notes:
  Each stage is data parallel over its ranks and holds only its nodes' parameters (and their optimizer state, through
  the parameter Vec's ownership). With -net_parallel sharded (NetSetParallel()) each stage is sharded over its ranks
  (ZeRO-3 inside the stage): a rank keeps only its slice of its stage's parameters, each node's gathered over the
  stage's ranks just before each of its steps and its gradient reduce-scattered back once a backward pass. Activations
  and cotangents move between stages by redistributions of whole samples, each with its exact adjoint. With
  micro-batches (NetSetMicroBatches()) the stages work as a pipeline; the gradient, NetJVP() and the second-order
  adjoint (NetSecondOrderBackward()) are the same as without stages up to round-off. -net_view prints the stages and
  their share of the cost. A stage can itself be model, tensor or sequence parallel (NetSetParallel()). On a grid
  (NetSetGrid()) each stage is spatially parallel over its ranks on its own DMDA of the grid's sizes, cut into spatial
  groups by NetSetSpatialGroups() and sharded by -net_parallel sharded as above. Not built yet: a spatial stage that is
  model parallel; layers whose kernels communicate (batchnorm): each is refused at set-up with the reason.

  Level: intermediate

.seealso: `NetSetMicroBatches()`, `NetSetNodePlacement()`, `NetGetPipelineTimes()`, `NetSetParallel()`, `NetSetGrid()`, `NetSetSpatialGroups()`
@*/
PetscErrorCode NetSetStages(Net net, PetscInt S)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(S >= 1, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "-net_stages %" PetscInt_FMT ": give a number of stages >= 1", S);
  if (S == net->nstages) PetscFunctionReturn(0);
  PetscCall(NetPlaceChanged(net));
  net->nstages = S;
  PetscFunctionReturn(0);
}

/*@
  NetGetStages - the number of pipeline stages (NetSetStages(); after set-up, the stages the nodes' placement gives)

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. S - the stages

  Level: intermediate

.seealso: `NetSetStages()`
@*/
PetscErrorCode NetGetStages(Net net, PetscInt *S)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *S = PetscMax(1, net->nstages);
  PetscFunctionReturn(0);
}

/*@
  NetSetMicroBatches - cuts each batch into M micro-batches that flow through the pipeline stages

  Logically collective

  Input Parameters:
+ net - the Net
- M   - the micro-batches (1: the whole batch at once)

  Options Database Keys:
+ -net_microbatches <M>                   - the same
- -net_pipeline_schedule <gpipe,1f1b>     - the schedule (NetSetPipelineSchedule())

  Notes:
  Micro-batch m holds the samples [m N/M, (m+1) N/M) of the batch of N; NetBackward() needs M to divide N (the
  gradient is the sum over the micro-batches, the same as the whole batch's); a forward pass alone (evaluation) takes
  any N. Without stages, micro-batches run one after the other on all ranks.

  Level: intermediate

.seealso: `NetSetStages()`, `NetGetPipelineTimes()`
@*/
PetscErrorCode NetSetMicroBatches(Net net, PetscInt M)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(M >= 1, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "-net_microbatches %" PetscInt_FMT ": give a number of micro-batches >= 1", M);
  if (M == net->nmicro) PetscFunctionReturn(0);
  PetscCall(NetPlaceChanged(net));
  net->nmicro = M;
  PetscFunctionReturn(0);
}

/*@
  NetGetMicroBatches - the number of micro-batches (NetSetMicroBatches())

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. M - the micro-batches

  Level: intermediate

.seealso: `NetSetMicroBatches()`
@*/
PetscErrorCode NetGetMicroBatches(Net net, PetscInt *M)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *M = PetscMax(1, net->nmicro);
  PetscFunctionReturn(0);
}

/*@
  NetSetPipelineSchedule - the order in which the stages run the micro-batches

  Logically collective

  Input Parameters:
+ net      - the Net
- schedule - `NET_PIPELINE_GPIPE` (every forward, then every backward: each stage keeps every micro-batch's values);
             `NET_PIPELINE_1F1B` (PipeDream-flush: after S - s warm-up forwards stage s alternates a forward and a
             backward, so that it keeps at most S micro-batches' values)

  Options Database Key:
. -net_pipeline_schedule <gpipe,1f1b> - the same

  Notes:
  Both give the same gradient, the sum over the micro-batches. With 1F1B (and more micro-batches than stages) the
  gradient is taken by NetForwardBackward() (LossNetForwardBackward(), which the Trainer's mini-batch steps call): the
  loss of a micro-batch is needed as soon as its output exists, and NetBackward() after NetForward() is refused, the
  values of the earlier micro-batches being gone. NetForward() alone (evaluation) runs in either. 1F1B runs stages of
  consecutive nodes in rank order (-net_stages, entry@s in the nodes' order); other placements are refused with it.

  Level: advanced

.seealso: `NetSetMicroBatches()`, `NetSetStages()`, `NetGetPipelineSchedule()`, `NetForwardBackward()`
@*/
PetscErrorCode NetSetPipelineSchedule(Net net, NetPipelineSchedule schedule)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (schedule == net->schedule) PetscFunctionReturn(0);
  PetscCall(NetPlaceChanged(net));
  net->schedule = schedule;
  PetscFunctionReturn(0);
}

/*@
  NetGetPipelineSchedule - the order in which the stages run the micro-batches (NetSetPipelineSchedule())

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. schedule - `NET_PIPELINE_GPIPE` or `NET_PIPELINE_1F1B`

  Level: advanced

.seealso: `NetSetPipelineSchedule()`, `NetForwardBackward()`
@*/
PetscErrorCode NetGetPipelineSchedule(Net net, NetPipelineSchedule *schedule)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *schedule = net->schedule;
  PetscFunctionReturn(0);
}

/*@
  NetSetNodePlacement - places node k on pipeline stage s (the ranks [s P/S, (s+1) P/S))

  Logically collective

  Input Parameters:
+ net - the Net
. k   - the node
- s   - the stage, from 0

  Options Database Key:
. -<node prefix>stage <s> - the same, e.g. -layer3_stage 1; in a layer list or graph also the entry's suffix @s
                            (dense:256@1)

  Notes:
  Place every node or none (then -net_stages cuts the Net by the cost model). A stage is a run of consecutive nodes,
  every stage holds at least one, and a node may only read nodes of its own or earlier stages; the number of stages is
  the largest placed stage + 1 unless -net_stages says more. Errors name the node.

  Level: intermediate

.seealso: `NetSetStages()`, `NetGetNodePlacement()`
@*/
PetscErrorCode NetSetNodePlacement(Net net, PetscInt k, PetscInt s)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes", k, net->nlayers);
  PetscCheck(s >= 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %s: stage %" PetscInt_FMT " is negative; give a stage from 0", net->nodes[k].name, s);
  if (net->nodes[k].stageset && !net->nodes[k].rankn && net->nodes[k].stage == s) PetscFunctionReturn(0);
  PetscCall(NetPlaceChanged(net));
  net->nodes[k].stage    = s;
  net->nodes[k].stageset = PETSC_TRUE;
  net->nodes[k].rankn    = 0;
  PetscFunctionReturn(0);
}

/*@
  NetGetNodePlacement - the pipeline stage of node k (0 without stages)

  Collective (it sets the Net up if needed)

  Input Parameters:
+ net - the Net
- k   - the node

  Output Parameter:
. s - its stage

  Level: intermediate

.seealso: `NetSetNodePlacement()`, `NetSetStages()`
@*/
PetscErrorCode NetGetNodePlacement(Net net, PetscInt k, PetscInt *s)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes", k, net->nlayers);
  *s = net->pl ? (((NetPlace *)net->pl)->staged ? ((NetPlace *)net->pl)->group[k] : net->nodes[k].stage) : 0;
  PetscFunctionReturn(0);
}

/*@
  NetSetNodeRanks - places node k on the ranks [first, first + n) of the Net's communicator, a group of its own that may
  overlap other nodes' groups (sub-graph parallelism by hand)

  Logically collective

  Input Parameters:
+ net   - the Net
. k     - the node
. first - the first rank of its group
- n     - the ranks of the group, at least 1

  Options Database Key:
. -<node prefix>ranks <a:b> - the ranks a to b - 1 (e.g. -layer3_ranks 0:2); in a layer list or graph also the entry's
                              suffix @ranks=a:b (dense:256@ranks=0:2)

  Notes:
  Place every node (by stage, NetSetNodePlacement(), or by ranks) or none. The node runs data parallel over its group,
  on the samples of each micro-batch split evenly among the group's ranks; values and cotangents move between groups
  by redistributions of whole samples with their exact adjoints, so any placement gives the same results as one rank
  up to round-off. Nodes with no path between them placed on disjoint groups run at the same time. Every rank must run
  some node. -net_parallel subgraph places the independent branches of a graph this way by itself.

  Level: intermediate

.seealso: `NetSetNodePlacement()`, `NetGetNodeRanks()`, `NetSetParallel()`, `NetSetStages()`
@*/
PetscErrorCode NetSetNodeRanks(Net net, PetscInt k, PetscInt first, PetscInt n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes", k, net->nlayers);
  PetscCheck(first >= 0 && n >= 1, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %s: the ranks %" PetscInt_FMT ":%" PetscInt_FMT " are not a group: give ranks=a:b with 0 <= a < b", net->nodes[k].name, first, first + n);
  if (net->nodes[k].stageset && net->nodes[k].rankn == n && net->nodes[k].ranklo == first) PetscFunctionReturn(0);
  PetscCall(NetPlaceChanged(net));
  net->nodes[k].stage    = -1;
  net->nodes[k].stageset = PETSC_TRUE;
  net->nodes[k].ranklo   = first;
  net->nodes[k].rankn    = n;
  PetscFunctionReturn(0);
}

/*@
  NetGetNodeRanks - the group of ranks node k runs on: [first, first + n)

  Collective (it sets the Net up if needed)

  Input Parameters:
+ net - the Net
- k   - the node

  Output Parameters:
+ first - its first rank
- n     - its ranks (without placement, every rank of the Net)

  Level: intermediate

.seealso: `NetSetNodeRanks()`, `NetSetNodePlacement()`
@*/
PetscErrorCode NetGetNodeRanks(Net net, PetscInt k, PetscInt *first, PetscInt *n)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes", k, net->nlayers);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  if (net->pl) {
    const NetPlace *pl = (NetPlace *)net->pl;

    *first = pl->glo[pl->group[k]];
    *n     = pl->gn[pl->group[k]];
  } else {
    *first = 0;
    *n     = size;
  }
  PetscFunctionReturn(0);
}

/* an entry's or option's group of ranks "a:b" (the ranks a to b - 1): what names it (for the error), the text */
PetscErrorCode NetPlaceParseRanks_Private(Net net, const char what[], const char text[], PetscInt *first, PetscInt *n)
{
  char     *end1, *end2;
  long long a, b;

  PetscFunctionBegin;
  a = strtoll(text, &end1, 10);
  b = (end1 != text && *end1 == ':') ? strtoll(end1 + 1, &end2, 10) : -1;
  PetscCheck(end1 != text && *end1 == ':' && end2 != end1 + 1 && !*end2 && a >= 0 && b > a && b < PETSC_MAX_INT, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
             "%s: the ranks \"%s\" are not a group: write ranks=a:b for the ranks a to b - 1, with 0 <= a < b (e.g. ranks=0:2)", what, text);
  *first = (PetscInt)a;
  *n     = (PetscInt)(b - a);
  PetscFunctionReturn(0);
}

/* NetSetFromOptions(): -<node prefix>stage s for each node */
PetscErrorCode NetPlaceSetFromOptions_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const char *prefix;
    PetscInt    s = net->nodes[k].stage;
    PetscBool   set, rset;
    char        ranks[64] = "";

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net->nodes[k].layer, &prefix));
    PetscOptionsBegin(PetscObjectComm((PetscObject)net), prefix, "Net node placement", "Net");
    PetscCall(PetscOptionsInt("-stage", "The pipeline stage of this node (its group of ranks)", "NetSetNodePlacement", s, &s, &set));
    PetscCall(PetscOptionsString("-ranks", "The ranks a to b - 1 this node runs on, a:b", "NetSetNodeRanks", ranks, ranks, sizeof(ranks), &rset));
    PetscOptionsEnd();
    if (set) PetscCall(NetSetNodePlacement(net, k, s));
    if (rset) {
      PetscInt first, n;
      char     what[PETSC_MAX_PATH_LEN];

      PetscCall(PetscSNPrintf(what, sizeof(what), "-%sranks", prefix ? prefix : ""));
      PetscCall(NetPlaceParseRanks_Private(net, what, ranks, &first, &n));
      PetscCall(NetSetNodeRanks(net, k, first, n));
    }
  }
  PetscFunctionReturn(0);
}

/*@
  NetTestMoves - the dot-product test of every move between pipeline stages on the last forward pass's batch, of
  the parameter broadcast B (each rank its stage's block, NetGetParameterBroadcast()) and, with -net_parallel sharded,
  of each node's parameter gather over its stage's ranks (its adjoint the reduce-scatter of its gradient): max of
  |<A x, y> - <x, A^T y>| / |<A x, y>| for random x, y (a move carries whole samples between two layouts, its adjoint
  sends them back)

  Collective

  Input Parameter:
. net - the Net, after a NetForward()

  Output Parameter:
. err - the largest relative difference (0 without stages or micro-batches)

  Level: developer

.seealso: `NetSetStages()`, `NetTestJacobian()`
@*/
PetscErrorCode NetTestMoves(Net net, PetscReal *err)
{
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidRealPointer(err, 2);
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(NetPlaceTestMoves_Private(net, rnd, err));
  if (net->pl && net->seq) { /* a sequence-parallel stage: its R and G on the stage's communicator */
    PetscReal eR;

    PetscCall(NetSequenceTestMoves_Private(net, rnd, &eR));
    *err = PetscMax(*err, eR);
  }
  if (net->pl && (net->parallel == NET_PARALLEL_MODEL || net->parallel == NET_PARALLEL_TENSOR)) { /* and each split node's R and S on its stage's communicator */
    PetscReal eM;

    PetscCall(NetModelTestOperators_Private(net, rnd, &eM));
    *err = PetscMax(*err, eM);
  }
  if (net->pl) { /* and the parameter broadcast B (each rank its stage's block) against its adjoint */
    Vec         x, bx, y, bty;
    PetscScalar a, b;

    PetscCall(MatCreateVecs(net->bcast, &x, &y));
    PetscCall(VecDuplicate(x, &bty));
    PetscCall(VecDuplicate(y, &bx));
    PetscCall(VecSetRandom(x, rnd));
    PetscCall(VecSetRandom(y, rnd));
    PetscCall(MatMult(net->bcast, x, bx));
    PetscCall(MatMultTranspose(net->bcast, y, bty));
    PetscCall(VecDot(bx, y, &a));
    PetscCall(VecDot(x, bty, &b));
    *err = PetscMax(*err, PetscAbsScalar(a - b) / PetscMax(PetscAbsScalar(a), PETSC_SMALL));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&bx));
    PetscCall(VecDestroy(&y));
    PetscCall(VecDestroy(&bty));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}
