/*
  Sequence parallelism (-net_parallel sequence, NetSetParallel(net, NET_PARALLEL_SEQUENCE)): the tokens of a sequence
  split over a group of ranks.

  Design (issue 32). A sequence batch is (N, T, C): N samples of T tokens of C channels (token ids: C = 1). The Net's
  public Vecs (input, output, their (co)tangents) keep the sample split of every other mode, [n][T][C] on each rank,
  so Datasets, Losses, the Trainer and TAO see nothing new; inside, the values between the nodes are split by tokens.
  The communicator is cut into groups of P consecutive ranks (-net_sequence_ranks P, default all ranks); group g holds
  the samples of its ranks (Ng of them), and its rank p holds the tokens [t0_p, t0_p + tl_p) of each (PETSc's split:
  T/P, the first T%P ranks one more):

    value of the batch           layout on rank p of a group          rows (NetNode counts, vlocal[v])
    input X, output Y (public)   [n][T][C]     sample split            n T
    every other value            [Ng][tl][C]   token split             Ng tl

  A node sees a token as a sample of shape (1, C) (the input shape with T replaced by 1: "point form" along the
  sequence): layers are set up on it, so their parameters are those of the same layer on (T, C) (checked at set-up
  against a copy on (T, C)), and a kind that acts on each token alone (dense:N:tokens, layernorm, rmsnorm, embedding,
  the activations, add, concat) runs as a plain node over the Ng tl rows of its rank. The data movements are operators
  with their adjoints, over one PetscSF per batch layout (roots: the rank's sample-split tokens, leaves: its
  token-split tokens, a bijection, each token a unit of C entries):

    R   = PetscSFBcast     sample split -> token split      (a node reading the Net's input)
    R^T = PetscSFReduce    token split -> sample split      (that node's input cotangent; R is a permutation, R^T = R^-1)
    S   = R^T, S^T = R                                      (the last node writes the Net's output)

  The nodes that mix tokens are sequence nodes, each a local copy of the layer composed with a data movement:

    position:T   y[s][t] = x[s][t] + P[t0 + t]: the copy on (tl, C) reads the table from row t0
                 (LayerPositionSetOffset_C: the learned rows W[t0 + t], dW[t0 + t] += likewise; the sinusoidal table
                 computed at the global positions t0 + t): no communication, the global token offset only
    attention    y = A_blk(G x): G the all-gather of the input within the group (the K/V exchange), A_blk the copy on
                 (T, C) computing the query block [t0, t0 + tl) against the T keys (LayerAttentionSetQueryBlock(): the
                 causal mask and the dropout map at the global positions); backward dx = G^T A_blk^T dy, G^T the
                 reduce-scatter (PetscSFReduce with a sum). The input (C a token) moves rather than K and V (2 C a
                 token): half the bytes, the same memory (see NetSequenceAttentionForward_Private())

  The parameters are replicated (as in -net_parallel replicated) and each rank's gradient holds the terms of its tokens:
  the Net's usual sum over all ranks gives that of one rank. Activation memory per rank: the values between nodes hold
  Ng tl rows instead of n T, i.e. they fall with P for a fixed batch (a single long sequence on P ranks: T/P tokens);
  an attention node keeps Q, O and lse of its tl rows and K, V of the T keys (2 C T + (2 C + H) tl values a sample
  instead of (4 C + H) T). At T = 2048 on 2 ranks all the bytes a pass keeps are 0.584 of one rank's
  (tests/sequence.suite, sequence_transformer_memory_2; docs/benchmarks.md).

  The movements' MPI types of a token are committed once per size (NetSequence.units), and the arrays of the inputs that
  R moves (the Net's input, often token ids, and its tangents) are kept per node (NetSeqNode.buf), grown with the batch
  layout; all freed by NetReset(). The arrays of an activation's size are not kept but released after each call: the
  last node's output in the token split (S's source, tl C_out values a sample) and the attention nodes' whole sequences
  (G's leaves, T C a sample each, NetSequence.abuf). Kept, they would stay allocated between passes: at T = 2048 on 2
  ranks the bytes of a pass would go from 0.58 to 0.64 of one rank's (sequence_transformer_memory_2) and the per-token
  Net of sequence_memory_2 from 0.57 to 0.63, above the 0.6; their allocation is one malloc per call against
  the node's GEMMs.

  Element types: boundary and sequence nodes compute in the store's type (double, or float for single and bfloat16:
  the movements then carry floats), the others are plain nodes and keep every path of the plain executor (fusion,
  bfloat16 streaming). Every node in the order of the walk, on every rank: the movements are collective in the group.
*/
#include <petnet/private/netimpl.h>
#include <petscsf.h>

typedef enum {
  NET_SEQ_TOKEN,    /* acts on each token alone */
  NET_SEQ_POSITION, /* position:T, the global token offset */
  NET_SEQ_ATTENTION /* attention: the queries of the rank's tokens against the keys of the whole sequence */
} NetSeqKind;

static const char *const NetSeqKinds[] = {"per token", "position (global token offset)", "attention (all-gather G of its input, adjoint the reduce-scatter G^T)"};

/* an array kept between calls (grows with the batch layout, freed by NetReset()) */
typedef struct {
  void  *a;
  size_t bytes;
} NetSeqBuffer;

/* the arrays of a node's movements: per input i the moved value (NET_SEQ_BUF_X(i)) and its (co)tangent (NET_SEQ_BUF_D),
   then the output's moved value, its cotangent, and the second-order adjoint's tangents of the input and the output */
#define NET_SEQ_BUF_X(i)      (i)
#define NET_SEQ_BUF_D(nin, i) ((nin) + (i))
#define NET_SEQ_BUF_Y(nin)    (2 * (nin))
#define NET_SEQ_BUF_DY(nin)   (2 * (nin) + 1)
#define NET_SEQ_BUF_XDOT(nin) (2 * (nin) + 2)
#define NET_SEQ_BUF_YDOT(nin) (2 * (nin) + 3)
#define NET_SEQ_NBUF(nin)     (2 * (nin) + 4)

/* a node run by the sequence executor: it reads the Net's input, writes its output, or mixes tokens */
typedef struct {
  NetSeqKind kind;
  Layer      local; /* position: the copy on (tl, C) reading the table from row t0; attention: the copy on (T, C)
                       computing the query block [t0, t0 + tl) (LayerAttentionSetQueryBlock()); NULL for the others (the
                       Net's own layer on tokens) */
  /* per input (nin entries), for the calls: the inputs and their (co)tangents in the token split, and flags */
  const void  **xs, **dxin, **p;
  void        **dxs;
  PetscBool    *moved, *dmoved, *flag, *want;
  NetSeqBuffer *buf; /* NET_SEQ_NBUF(nin) arrays of the moved values */
} NetSeqNode;

/* the arrays the attention nodes share (they run one at a time): the gathered input, a gathered tangent or the whole
   cotangent, the second-order term's, and float's reduce-scatter in double (the whole and the rank's tokens) */
enum { NET_SEQ_ABUF_XF, NET_SEQ_ABUF_DF, NET_SEQ_ABUF_SOF, NET_SEQ_ABUF_WIDE, NET_SEQ_ABUF_ACC, NET_SEQ_NABUF };

/* an MPI type of a token, c entries of one element type (committed once, freed by NetReset()) */
typedef struct {
  PetscInt     c;
  NetElem      t;
  MPI_Datatype unit;
} NetSeqUnit;

typedef struct {
  PetscMPIInt  size, rank;          /* the Net's communicator */
  PetscInt     P, group, slot;      /* ranks per group, this rank's group and place in it */
  MPI_Comm     gcomm;               /* the group */
  PetscInt     T;                   /* tokens per sequence: the input shape's first dim */
  PetNetShape  tok;                 /* a token's shape: the input shape with T replaced by 1 */
  PetscInt     t0, tl;              /* this rank's tokens [t0, t0 + tl) */
  PetscInt     ng;                  /* samples of the group in the batch of the PetscSF */
  PetscInt64   goff;                /* ... and the global index of the group's first sample (attention dropout's map) */
  PetscInt     sfgen;               /* the batch layout the PetscSF was made for (Net batchgen), -1: none */
  PetscSF      sf;                  /* roots: [n][T] tokens of this rank, leaves: [ng][tl] */
  PetscInt     gsfgen;              /* ... and the all-gather's */
  PetscSF      gsf;                 /* roots: [ng][tl] tokens of this rank, leaves: [ng][T] (every token of the group's samples) */
  NetSeqBuffer abuf[NET_SEQ_NABUF]; /* the attention nodes' arrays */
  NetSeqUnit  *units;               /* the token types in use */
  PetscInt     nunits, maxunits;
  /* a pipeline stage that is sequence parallel (netplace.c, -net_stages with -net_parallel sequence): the group is the
     stage's ranks (gcomm a duplicate of its communicator, group 0), the layers stay on whole sequences, and the PetscSFs
     are made for the micro-batch at hand (NetSequenceStageRows_Private()): roots the rank's ns samples of the stage's
     sample split (soff: the stage ranks' first samples, P + 1), not the Net's batch layout */
  PetscBool staged;
  PetscInt  ns, *soff;
} NetSequence;

/*@
  NetSetSequenceRanks - in sequence parallelism (`NET_PARALLEL_SEQUENCE`), the number of consecutive ranks whose group
  splits the tokens of its samples; the groups are data parallel replicas of each other

  Logically collective

  Input Parameters:
+ net - the Net
- P   - ranks per group, a divisor of the communicator's size; 0 (the default): all ranks form one group

  Options Database Key:
. -net_sequence_ranks <P> - the same from the options

  Notes:
  With pipeline stages (-net_stages) P cuts each stage into groups of P consecutive ranks, data parallel over the
  micro-batch's rows of the stage: P must divide the ranks of a stage (0 or the ranks of a stage: one group a stage).

  Level: intermediate

.seealso: `NetSetParallel()`, `NET_PARALLEL_SEQUENCE`
@*/
PetscErrorCode NetSetSequenceRanks(Net net, PetscInt P)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(net, P, 2);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  PetscCheck(P >= 0 && (P == 0 || size % P == 0), PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
             "-net_sequence_ranks %" PetscInt_FMT ": the groups of a sequence-parallel Net must tile the %d ranks; give a divisor of %d (or 0: one group of all ranks)", P, size, size);
  if (P == net->seqranks) PetscFunctionReturn(0);
  net->seqranks = P;
  if (net->setupcalled) PetscCall(NetReset(net));
  PetscFunctionReturn(0);
}

/* NetSetUp(), before the nodes: the groups, the token split and a token's shape (nothing unless in sequence mode) */
PetscErrorCode NetSequenceSetUpInput_Private(Net net)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)net);
  NetSequence *sq;
  char         shape[64];

  PetscFunctionBegin;
  if (net->parallel != NET_PARALLEL_SEQUENCE) PetscFunctionReturn(0);
  if (NetPlaceWanted_Private(net)) PetscFunctionReturn(0); /* pipeline stages: each stage one group, made with the stages (NetSequenceSetUpStage_Private()) */
  PetscCheck(!net->grid, comm, PETSC_ERR_SUP, "-net_parallel sequence splits the tokens of a sequence batch (N, T, C) and does not compose with grid mode (NetSetGrid()): use -net_parallel replicated on a grid");
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCheck(net->in.ndim >= 1 && net->in.ndim < PETNET_MAX_DIM, comm, PETSC_ERR_ARG_WRONG, "-net_parallel sequence: the input shape %s is not a sequence; give -net_input_shape T (token ids) or TxC (T tokens of C channels)", shape);
  PetscCall(PetscNew(&sq));
  net->seq = sq;
  PetscCallMPI(MPI_Comm_size(comm, &sq->size));
  PetscCallMPI(MPI_Comm_rank(comm, &sq->rank));
  sq->P          = net->seqranks > 0 ? net->seqranks : sq->size;
  sq->group      = sq->rank / sq->P;
  sq->slot       = sq->rank % sq->P;
  sq->T          = net->in.dim[0];
  sq->tok        = net->in;
  sq->tok.dim[0] = 1; /* (T, C) -> (1, C); token ids (T) -> (1) */
  sq->sfgen      = -1;
  sq->gsfgen     = -1;
  PetscCheck(sq->size % sq->P == 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-net_sequence_ranks %" PetscInt_FMT " does not divide the %d ranks: give a divisor", sq->P, sq->size);
  PetscCheck(sq->T >= sq->P, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-net_parallel sequence splits the %" PetscInt_FMT " tokens of a sequence (input shape %s) over groups of %" PetscInt_FMT " ranks: every rank needs a token; use fewer ranks per group (-net_sequence_ranks) or longer sequences", sq->T,
             shape, sq->P);
  sq->tl = sq->T / sq->P + (sq->slot < sq->T % sq->P ? 1 : 0);
  sq->t0 = sq->slot * (sq->T / sq->P) + PetscMin(sq->slot, sq->T % sq->P);
  PetscCallMPI(MPI_Comm_split(comm, (int)sq->group, (int)sq->slot, &sq->gcomm));
  PetscFunctionReturn(0);
}

/* a token's shape for the layers (sequence mode), else the input shape */
PetscErrorCode NetSequenceInputShape_Private(Net net, PetNetShape *shape)
{
  PetscFunctionBegin;
  *shape = net->seq && !((NetSequence *)net->seq)->staged ? ((NetSequence *)net->seq)->tok : net->in; /* a stage's layers: whole sequences */
  PetscFunctionReturn(0);
}

/* entries of one row of value 0: a token's (sequence mode) or a sample's */
PetscErrorCode NetSequenceInputRowSize_Private(Net net, PetscInt *size)
{
  PetNetShape s;

  PetscFunctionBegin;
  PetscCall(NetSequenceInputShape_Private(net, &s));
  PetscCall(PetNetShapeSize(&s, size));
  PetscFunctionReturn(0);
}

/* tokens per sequence (1 unless in sequence mode): the rows of a public sample */
PetscInt NetSequenceTokens_Private(Net net)
{
  return net->seq && !((NetSequence *)net->seq)->staged ? ((NetSequence *)net->seq)->T : 1; /* a stage's public rows are samples */
}

/* a copy of node k's layer on input shapes in[] (the kind's arguments and options, the Net's training mode); q0 >= 0: the
   rows [q0, q0 + nq) of a sequence, an attention computing those queries only (LayerAttentionSetQueryBlock()), a
   position table read from row q0 (LayerPositionSetOffset_C) */
static PetscErrorCode NetSequenceCopyLayer_Private(Net net, PetscInt k, PetscInt nin, const PetNetShape in[], PetscInt q0, PetscInt nq, Layer *copy)
{
  Layer layer     = net->layers[k];
  char  args[256] = "";

  PetscFunctionBegin;
  PetscCall(LayerCreate(PETSC_COMM_SELF, copy));
  PetscCall(LayerSetType(*copy, ((PetscObject)layer)->type_name));
  PetscCall(LayerSetIndex(*copy, layer->index));
  PetscTryTypeMethod(layer, getarguments, sizeof(args), args);
  PetscCall(LayerSetArguments(*copy, args));
  if (((PetscObject)layer)->prefix && (*copy)->ops->setfromoptions) { /* the node's kind options (-layer3_dense_tokens, ...) */
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*copy, ((PetscObject)layer)->prefix));
    PetscObjectOptionsBegin((PetscObject)*copy);
    PetscUseTypeMethod(*copy, setfromoptions, PetscOptionsObject);
    PetscOptionsEnd();
  }
  PetscCall(LayerSetInputShapes(*copy, nin, in));
  if (q0 >= 0) {
    PetscBool isattention;

    PetscCall(LayerAttentionSetQueryBlock(*copy, q0, nq));
    PetscTryMethod(*copy, "LayerPositionSetOffset_C", (Layer, PetscInt), (*copy, q0));
    PetscCall(PetscObjectTypeCompare((PetscObject)layer, "attention", &isattention));
    if (isattention) { /* all heads of the node's layer, whose dropout map (seed, pass counter, frozen state) it draws */
      PetscInt H;

      PetscUseMethod(layer, "LayerAttentionGetHeads_C", (Layer, PetscInt *, PetscReal *), (layer, &H, NULL));
      PetscUseMethod(*copy, "LayerAttentionSetHeadBlock_C", (Layer, Layer, PetscInt, PetscInt, PetscBool), (*copy, layer, 0, H, PETSC_TRUE));
    }
  }
  PetscCall(LayerSetTraining(*copy, layer->training));
  PetscCall(LayerSetUp(*copy));
  PetscFunctionReturn(0);
}

/*
  NetSetUp(), after node k's layer is set up on tokens: its kind in sequence mode, refused when it has no
  sequence-parallel form. The same layer on whole sequences (T, ...) must have the same parameters and give (T, out):
  plain dense:N (which flattens a sample) and flatten do not, and are refused by name.
*/
PetscErrorCode NetSequenceSetUpNode_Private(Net net, PetscInt k)
{
  NetSequence *sq      = (NetSequence *)net->seq;
  NetNode     *nd      = &net->nodes[k];
  Layer        layer   = net->layers[k];
  MPI_Comm     comm    = PetscObjectComm((PetscObject)net);
  const char  *type    = ((PetscObject)layer)->type_name;
  const char  *token[] = {LAYERDENSE, LAYERIDENTITY, LAYERRELU, LAYERLEAKYRELU, LAYERTANH, LAYERSIGMOID, LAYERGELU, LAYERSOFTPLUS, LAYERADD, LAYERCONCAT, LAYERLAYERNORM, LAYERRMSNORM, LAYEREMBEDDING};
  PetscBool    istoken = PETSC_FALSE, isposition, isattention, same;
  NetSeqKind   kind    = NET_SEQ_TOKEN;

  PetscFunctionBegin;
  if (!sq) PetscFunctionReturn(0);
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(token); i++) istoken = (PetscBool)(istoken || !strcmp(type, token[i]));
  isposition  = (PetscBool)!strcmp(type, "position");
  isattention = (PetscBool)!strcmp(type, "attention");
  for (PetscInt i = 0; i < nd->nin; i++)
    PetscCheck(layer->ins[i].ndim >= 1 && layer->ins[i].dim[0] == 1, comm, PETSC_ERR_ARG_WRONG, "Node %s (%s): its input %" PetscInt_FMT " is not a sequence of tokens under -net_parallel sequence (a node before it flattened the tokens)", nd->name,
               type, i);
  { /* the same kind on whole sequences: the same parameters and (T, out) */
    PetNetShape *in;
    Layer        whole;

    PetscCall(PetscMalloc1(nd->nin, &in));
    for (PetscInt i = 0; i < nd->nin; i++) {
      in[i]        = layer->ins[i];
      in[i].dim[0] = sq->T;
    }
    PetscCall(NetSequenceCopyLayer_Private(net, k, nd->nin, in, -1, 0, &whole));
    PetscCall(PetscFree(in));
    same = (PetscBool)(whole->nparams == layer->nparams && whole->out.ndim == layer->out.ndim && whole->out.dim[0] == sq->T && layer->out.dim[0] == 1);
    for (PetscInt d = 1; d < layer->out.ndim && same; d++) same = (PetscBool)(whole->out.dim[d] == layer->out.dim[d]);
    PetscCall(LayerDestroy(&whole));
  }
  /* one refusal for the kinds without a sequence-parallel form: those that mix the tokens of a sequence by a rule this
     file does not know (a kind outside the lists), and those that act on a whole sequence differently than on each of
     its tokens (plain dense:N and flatten fold the tokens into one vector: no split of the tokens computes them) */
  PetscCheck((istoken && same) || isposition || isattention, comm, PETSC_ERR_SUP,
             "Node %s (%s) has no sequence-parallel form: -net_parallel sequence splits the tokens of each sequence, and runs the kinds that act on each token alone (dense:N:tokens, layernorm, rmsnorm, embedding, the activations, add, "
             "concat), position:T (learned or sinusoidal) and attention; a dense layer must be dense:N:tokens (-%sdense_tokens), and nothing may flatten the tokens; or run this Net with -net_parallel replicated (data "
             "parallel)",
             nd->name, type, ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "");
  if (isposition) kind = NET_SEQ_POSITION;
  if (isattention) kind = NET_SEQ_ATTENTION;
  if (kind == NET_SEQ_TOKEN && k < net->nlayers - 1) {
    PetscBool input = PETSC_FALSE;

    for (PetscInt i = 0; i < nd->nin; i++) input = (PetscBool)(input || nd->in[i] == NET_INPUT);
    if (!input) PetscFunctionReturn(0); /* a plain node over the rank's rows */
  }
  {
    NetSeqNode *sn;

    PetscCall(PetscNew(&sn));
    sn->kind = kind;
    nd->sq   = sn;
    PetscCall(PetscCalloc4(nd->nin, &sn->xs, nd->nin, &sn->dxin, nd->nin, &sn->p, nd->nin, &sn->dxs));
    PetscCall(PetscCalloc4(nd->nin, &sn->moved, nd->nin, &sn->dmoved, nd->nin, &sn->flag, nd->nin, &sn->want));
    PetscCall(PetscCalloc1(NET_SEQ_NBUF(nd->nin), &sn->buf));
    if (kind == NET_SEQ_POSITION) {
      PetNetShape in = layer->ins[0];

      PetscCheck(nd->nin == 1, comm, PETSC_ERR_PLIB, "Node %s (position) takes one input", nd->name);
      in.dim[0] = sq->tl;
      PetscCall(NetSequenceCopyLayer_Private(net, k, 1, &in, sq->t0, sq->tl, &sn->local)); /* its rows [t0, t0 + tl) */
      PetscCheck(sn->local->nparams == layer->nparams, comm, PETSC_ERR_PLIB, "Node %s: its copy on this rank's tokens has %" PetscInt_FMT " parameters, not %" PetscInt_FMT, nd->name, sn->local->nparams, layer->nparams);
    }
    if (kind == NET_SEQ_ATTENTION) { /* the copy on whole sequences, computing the queries of the rank's tokens */
      PetNetShape in = layer->ins[0];

      PetscCheck(nd->nin == 1, comm, PETSC_ERR_PLIB, "Node %s (attention) takes one input", nd->name);
      in.dim[0] = sq->T;
      PetscCall(NetSequenceCopyLayer_Private(net, k, 1, &in, sq->t0, sq->tl, &sn->local));
      PetscCheck(sn->local->nparams == layer->nparams && sn->local->outsize == sq->tl * layer->outsize, comm, PETSC_ERR_PLIB,
                 "Node %s: its copy on the rank's queries [%" PetscInt_FMT ", %" PetscInt_FMT ") has another shape than %" PetscInt_FMT " tokens", nd->name, sq->t0, sq->t0 + sq->tl, sq->tl);
    }
  }
  PetscFunctionReturn(0);
}

/* NetReset(): the sequence state of the Net and its nodes */
PetscErrorCode NetSequenceReset_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetSeqNode *sn = (NetSeqNode *)net->nodes[k].sq;

    if (!sn) continue;
    PetscCall(LayerDestroy(&sn->local));
    PetscCall(PetscFree4(sn->xs, sn->dxin, sn->p, sn->dxs));
    PetscCall(PetscFree4(sn->moved, sn->dmoved, sn->flag, sn->want));
    for (PetscInt b = 0; b < NET_SEQ_NBUF(net->nodes[k].nin); b++) PetscCall(PetscFree(sn->buf[b].a));
    PetscCall(PetscFree(sn->buf));
    PetscCall(PetscFree(net->nodes[k].sq));
  }
  if (net->seq) {
    NetSequence *sq = (NetSequence *)net->seq;

    PetscCall(PetscSFDestroy(&sq->sf));
    PetscCall(PetscSFDestroy(&sq->gsf));
    for (PetscInt b = 0; b < NET_SEQ_NABUF; b++) PetscCall(PetscFree(sq->abuf[b].a));
    for (PetscInt u = 0; u < sq->nunits; u++) PetscCallMPI(MPI_Type_free(&sq->units[u].unit));
    PetscCall(PetscFree(sq->units));
    if (sq->gcomm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&sq->gcomm));
    PetscCall(PetscFree(sq->soff));
    PetscCall(PetscFree(net->seq));
  }
  PetscFunctionReturn(0);
}

/* The rows of every value for n rows of the input (n T for n samples): see the table above. Collective on the group. */
PetscErrorCode NetSequenceCounts_Private(Net net, PetscInt n, PetscInt counts[])
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscInt     ns = n / sq->T, ng;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Allreduce(&ns, &ng, 1, MPIU_INT, MPI_SUM, sq->gcomm));
  PetscCheck((PetscInt64)ng * sq->tl <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-net_parallel sequence: %" PetscInt_FMT " samples of %" PetscInt_FMT " tokens on a rank need more rows than a PetscInt holds: use smaller batches", ng,
             sq->tl);
  counts[0] = n;
  for (PetscInt k = 0; k < net->nlayers; k++) counts[k + 1] = k < net->nlayers - 1 ? ng * sq->tl : n;
  PetscFunctionReturn(0);
}

/* R's PetscSF on comm, the group's ranks [base, base + P) of it: roots this rank's ns samples of T tokens (the
   sample split, the group's rank q holding its samples [soff[q], soff[q + 1])), leaves its ng tl tokens [ng][tl] */
static PetscErrorCode NetSequenceMakeSF_Private(NetSequence *sq, MPI_Comm comm, PetscMPIInt base, PetscInt ns, const PetscInt soff[], PetscSF *sf)
{
  const PetscInt nleaves = sq->ng * sq->tl;
  PetscSFNode   *remote;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(nleaves, &remote));
  for (PetscInt s = 0, q = 0; s < sq->ng; s++) {
    while (s >= soff[q + 1]) q++; /* the group's rank q holds sample s */
    for (PetscInt t = 0; t < sq->tl; t++) {
      remote[s * sq->tl + t].rank  = base + (PetscMPIInt)q;
      remote[s * sq->tl + t].index = (s - soff[q]) * sq->T + sq->t0 + t;
    }
  }
  PetscCall(PetscSFCreate(comm, sf));
  PetscCall(PetscSFSetGraph(*sf, ns * sq->T, nleaves, NULL, PETSC_OWN_POINTER, remote, PETSC_OWN_POINTER));
  PetscCall(PetscSFSetUp(*sf));
  PetscFunctionReturn(0);
}

/* the PetscSF of the current batch layout: roots this rank's n T sample-split tokens, leaves its ng tl token-split ones */
static PetscErrorCode NetSequenceGetSF_Private(Net net, PetscSF *sf)
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscInt     ns = net->vlocal[0] / sq->T, *soff, nleaves;

  PetscFunctionBegin;
  if (sq->staged || (sq->sfgen == net->batchgen && sq->sf)) { /* a stage: made for the micro-batch at hand */
    if (sf) *sf = sq->sf;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscSFDestroy(&sq->sf));
  PetscCall(PetscMalloc1(sq->P + 1, &soff));
  soff[0] = 0;
  PetscCallMPI(MPI_Allgather(&ns, 1, MPIU_INT, soff + 1, 1, MPIU_INT, sq->gcomm));
  for (PetscInt q = 0; q < sq->P; q++) soff[q + 1] += soff[q];
  sq->ng = soff[sq->P];
  { /* the global index of the group's first sample: this rank's (the ranks before it, in the sample split) less the
       group's samples on the ranks before it */
    PetscInt64  mine = ns, before = 0;
    PetscMPIInt rank;

    PetscCallMPI(MPI_Exscan(&mine, &before, 1, MPIU_INT64, MPI_SUM, PetscObjectComm((PetscObject)net)));
    PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
    sq->goff = (rank ? before : 0) - soff[sq->slot]; /* MPI_Exscan leaves rank 0's result undefined */
  }
  nleaves = sq->ng * sq->tl;
  PetscCheck(net->nlayers == 1 || nleaves == net->vlocal[1], PETSC_COMM_SELF, PETSC_ERR_PLIB, "-net_parallel sequence: the group's %" PetscInt_FMT " samples give %" PetscInt_FMT " rows, the batch layout %" PetscInt_FMT, sq->ng, nleaves,
             net->vlocal[1]);
  PetscCall(NetSequenceMakeSF_Private(sq, PetscObjectComm((PetscObject)net), (PetscMPIInt)(sq->group * sq->P), ns, soff, &sq->sf));
  PetscCall(PetscFree(soff));
  sq->sfgen = net->batchgen;
  if (sf) *sf = sq->sf;
  PetscFunctionReturn(0);
}

/* the MPI type of a token of c entries of element type t: made and committed once per (c, t), kept until NetReset() */
static PetscErrorCode NetSequenceUnit_Private(Net net, PetscInt c, NetElem t, MPI_Datatype *unit)
{
  NetSequence *sq = (NetSequence *)net->seq;

  PetscFunctionBegin;
  for (PetscInt u = 0; u < sq->nunits; u++)
    if (sq->units[u].c == c && sq->units[u].t == t) {
      *unit = sq->units[u].unit;
      PetscFunctionReturn(0);
    }
  if (sq->nunits == sq->maxunits) { /* a few sizes per Net: the nodes' token sizes */
    NetSeqUnit *units;

    PetscCall(PetscMalloc1(2 * sq->maxunits + 4, &units));
    if (sq->nunits) PetscCall(PetscArraycpy(units, sq->units, sq->nunits));
    PetscCall(PetscFree(sq->units));
    sq->units    = units;
    sq->maxunits = 2 * sq->maxunits + 4;
  }
  PetscCallMPI(MPI_Type_contiguous((PetscMPIInt)c, t == NET_ELEM_DOUBLE ? MPIU_SCALAR : MPI_FLOAT, unit));
  PetscCallMPI(MPI_Type_commit(unit));
  sq->units[sq->nunits].c    = c;
  sq->units[sq->nunits].t    = t;
  sq->units[sq->nunits].unit = *unit;
  sq->nunits++;
  PetscFunctionReturn(0);
}

/* bytes of one entry of element type t */
static size_t NetSequenceEntryBytes(NetElem t)
{
  return t == NET_ELEM_DOUBLE ? sizeof(PetscScalar) : sizeof(float);
}

/*
  Which of the arrays p[0..m-1] a call carries, the same on every rank of the group: a NULL array means "none" (a zero
  tangent, a cotangent not asked for) or an empty local block (a rank without samples), which only the group can tell
  apart. One reduction over the group.
*/
static PetscErrorCode NetSequencePresent_Private(Net net, PetscInt m, const void *const p[], PetscBool present[])
{
  NetSequence *sq = (NetSequence *)net->seq;
  int          stack[8], *flag = stack;

  PetscFunctionBegin;
  if (m > (PetscInt)PETSC_STATIC_ARRAY_LENGTH(stack)) PetscCall(PetscMalloc1(m, &flag));
  for (PetscInt i = 0; i < m; i++) flag[i] = p[i] ? 1 : 0;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, flag, (PetscMPIInt)m, MPI_INT, MPI_MAX, sq->gcomm));
  for (PetscInt i = 0; i < m; i++) present[i] = (PetscBool)(flag[i] != 0);
  if (flag != stack) PetscCall(PetscFree(flag));
  PetscFunctionReturn(0);
}

/* a kept array of at least `bytes` bytes (grows only: a batch layout with more samples reallocates it) */
static PetscErrorCode NetSequenceBuffer_Private(NetSeqBuffer *b, size_t bytes, void **a)
{
  PetscFunctionBegin;
  if (bytes + 1 > b->bytes) {
    PetscCall(PetscFree(b->a));
    PetscCall(PetscMalloc(bytes + 1, &b->a));
    b->bytes = bytes + 1;
  }
  *a = b->a;
  PetscFunctionReturn(0);
}

/* an array that is not kept: released at the end of the call (see the header: the output's and attention's arrays) */
static PetscErrorCode NetSequenceRelease_Private(NetSeqBuffer *b)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(b->a));
  b->bytes = 0;
  PetscFunctionReturn(0);
}

/* node k's array `slot` for the rank's tokens [ng][tl][c] of element type t */
static PetscErrorCode NetSequenceTokenArray_Private(Net net, PetscInt k, PetscInt slot, PetscInt c, NetElem t, void **a)
{
  NetSequence *sq = (NetSequence *)net->seq;
  NetSeqNode  *sn = (NetSeqNode *)net->nodes[k].sq;

  PetscFunctionBegin;
  PetscCall(NetSequenceBuffer_Private(&sn->buf[slot], (size_t)sq->ng * sq->tl * c * NetSequenceEntryBytes(t), a));
  PetscFunctionReturn(0);
}

/* xs = R x: tokens of c entries from the sample split to the token split, into xs [ng][tl][c] */
static PetscErrorCode NetSequenceToTokens_Private(Net net, PetscInt c, NetElem t, const void *x, void *xs)
{
  PetscSF      sf;
  MPI_Datatype unit;

  PetscFunctionBegin;
  PetscCall(NetSequenceGetSF_Private(net, &sf));
  PetscCall(NetSequenceUnit_Private(net, c, t, &unit));
  PetscCall(PetscSFBcastBegin(sf, unit, x, xs, MPI_REPLACE));
  PetscCall(PetscSFBcastEnd(sf, unit, x, xs, MPI_REPLACE));
  PetscFunctionReturn(0);
}

/* node k's kept array `slot` holding R x (NULL when absent) */
static PetscErrorCode NetSequenceMoveIn_Private(Net net, PetscInt k, PetscInt slot, PetscInt c, NetElem t, PetscBool present, const void *x, void **xs)
{
  PetscFunctionBegin;
  *xs = NULL;
  if (!present) PetscFunctionReturn(0);
  PetscCall(NetSequenceGetSF_Private(net, NULL)); /* ng of this batch (collective when the layout changed) */
  PetscCall(NetSequenceTokenArray_Private(net, k, slot, c, t, xs));
  PetscCall(NetSequenceToTokens_Private(net, c, t, x, *xs));
  PetscFunctionReturn(0);
}

/* x = R^T xs = S xs: tokens of c entries back to the sample split (each root has exactly one leaf: overwritten) */
static PetscErrorCode NetSequenceToSamples_Private(Net net, PetscInt c, NetElem t, const void *xs, void *x)
{
  PetscSF      sf;
  MPI_Datatype unit;

  PetscFunctionBegin;
  PetscCall(NetSequenceGetSF_Private(net, &sf));
  PetscCall(NetSequenceUnit_Private(net, c, t, &unit));
  PetscCall(PetscSFReduceBegin(sf, unit, xs, x, MPI_REPLACE));
  PetscCall(PetscSFReduceEnd(sf, unit, xs, x, MPI_REPLACE));
  PetscFunctionReturn(0);
}

/* node k's inputs (or their tangents: tangent = PETSC_TRUE) in the token split: those from the Net's input moved (R)
   into the node's kept arrays, the others as they are */
static PetscErrorCode NetSequenceGetInputs_Private(Net net, PetscInt k, NetElem t, PetscBool tangent, const PetscBool present[], const void *const x[], const void *xs[], PetscBool moved[])
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nd->nin; i++) {
    moved[i] = (PetscBool)(nd->in[i] == NET_INPUT && present[i]);
    if (moved[i])
      PetscCall(NetSequenceMoveIn_Private(net, k, tangent ? NET_SEQ_BUF_D(nd->nin, i) : NET_SEQ_BUF_X(i), net->layers[k]->insizes[i], t, PETSC_TRUE, x[i], (void **)&xs[i]));
    else
      xs[i] = present[i] ? x[i] : NULL;
  }
  PetscFunctionReturn(0);
}

/* this rank's rows of node k in the token split: Ng tl tokens, or for position Ng sequences of tl tokens; the kernel
   and the offset of its parameters */
static PetscErrorCode NetSequenceLocal_Private(Net net, PetscInt k, Layer *layer, PetscInt *n, PetscInt *poff)
{
  NetSequence *sq = (NetSequence *)net->seq;
  NetSeqNode  *sn = (NetSeqNode *)net->nodes[k].sq;
  PetscSF      sf;

  PetscFunctionBegin;
  PetscCall(NetSequenceGetSF_Private(net, &sf)); /* the batch layout (collective when it changed) */
  if (sn->kind == NET_SEQ_ATTENTION) {
    *layer = sn->local;
    *n     = sq->ng;
    *poff  = 0;
  } else if (sn->kind == NET_SEQ_POSITION) {
    *layer = sn->local; /* reads the table's rows [t0, t0 + tl) itself: W[t0 + t][c], or the fixed rows at t0 + t */
    *n     = sq->ng;
    *poff  = 0;
  } else {
    *layer = net->layers[k];
    *n     = sq->ng * sq->tl;
    *poff  = 0;
  }
  PetscFunctionReturn(0);
}

/*
  The all-gather G of an attention node's input within the group: roots this rank's tokens [ng][tl], leaves every token
  of the group's samples [ng][T] (rank q's token t0_q + i of sample s is the root s tl_q + i on rank q). G is a copy;
  its adjoint G^T (PetscSFReduce with a sum) is the reduce-scatter: the cotangents every rank's queries give a token
  are added up on the token's owner.
*/
static PetscErrorCode NetSequenceMakeGatherSF_Private(NetSequence *, MPI_Comm, PetscMPIInt, PetscSF *);

static PetscErrorCode NetSequenceGetGatherSF_Private(Net net, PetscSF *gsf)
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscSF      sf;

  PetscFunctionBegin;
  PetscCall(NetSequenceGetSF_Private(net, &sf));                /* ng of this batch */
  if (sq->staged || (sq->gsfgen == net->batchgen && sq->gsf)) { /* a stage: made for the micro-batch at hand */
    *gsf = sq->gsf;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscSFDestroy(&sq->gsf));
  PetscCall(NetSequenceMakeGatherSF_Private(sq, PetscObjectComm((PetscObject)net), (PetscMPIInt)(sq->group * sq->P), &sq->gsf));
  sq->gsfgen = net->batchgen;
  *gsf       = sq->gsf;
  PetscFunctionReturn(0);
}

/* G's PetscSF on comm, the group's ranks [base, base + P) of it: roots this rank's tokens [ng][tl], leaves [ng][T] */
static PetscErrorCode NetSequenceMakeGatherSF_Private(NetSequence *sq, MPI_Comm comm, PetscMPIInt base, PetscSF *gsf)
{
  PetscInt    *tstart, nleaves;
  PetscSFNode *remote;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(sq->P + 1, &tstart));
  for (PetscInt q = 0; q <= sq->P; q++) tstart[q] = q * (sq->T / sq->P) + PetscMin(q, sq->T % sq->P); /* the split of NetSequenceSetUpInput_Private() */
  nleaves = sq->ng * sq->T;
  PetscCall(PetscMalloc1(nleaves, &remote));
  for (PetscInt t = 0, q = 0; t < sq->T; t++) {
    while (t >= tstart[q + 1]) q++; /* the group's rank q holds token t */
    for (PetscInt s = 0; s < sq->ng; s++) {
      remote[s * sq->T + t].rank  = base + (PetscMPIInt)q;
      remote[s * sq->T + t].index = s * (tstart[q + 1] - tstart[q]) + t - tstart[q];
    }
  }
  PetscCall(PetscSFCreate(comm, gsf));
  PetscCall(PetscSFSetGraph(*gsf, sq->ng * sq->tl, nleaves, NULL, PETSC_OWN_POINTER, remote, PETSC_OWN_POINTER));
  PetscCall(PetscSFSetUp(*gsf));
  PetscCall(PetscFree(tstart));
  PetscFunctionReturn(0);
}

/* a shared kept array (NET_SEQ_ABUF_*) of [ng][T][c] entries of element type t */
static PetscErrorCode NetSequenceWholeArray_Private(Net net, PetscInt slot, PetscInt c, NetElem t, void **a)
{
  NetSequence *sq = (NetSequence *)net->seq;

  PetscFunctionBegin;
  PetscCall(NetSequenceBuffer_Private(&sq->abuf[slot], (size_t)sq->ng * sq->T * c * NetSequenceEntryBytes(t), a));
  PetscFunctionReturn(0);
}

/* the attention arrays released after the call */
static PetscErrorCode NetSequenceReleaseWhole_Private(Net net)
{
  NetSequence *sq = (NetSequence *)net->seq;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < NET_SEQ_NABUF; b++) PetscCall(NetSequenceRelease_Private(&sq->abuf[b]));
  PetscFunctionReturn(0);
}

/* xf = G x: the whole sequences [ng][T][c] from the rank's tokens, into the shared array `slot` (NULL when absent) */
static PetscErrorCode NetSequenceGather_Private(Net net, PetscInt slot, PetscInt c, NetElem t, PetscBool present, const void *x, void **xf)
{
  PetscSF      gsf;
  MPI_Datatype unit;

  PetscFunctionBegin;
  *xf = NULL;
  if (!present) PetscFunctionReturn(0);
  PetscCall(NetSequenceGetGatherSF_Private(net, &gsf));
  PetscCall(NetSequenceWholeArray_Private(net, slot, c, t, xf));
  PetscCall(NetSequenceUnit_Private(net, c, t, &unit));
  PetscCall(PetscSFBcastBegin(gsf, unit, x, *xf, MPI_REPLACE));
  PetscCall(PetscSFBcastEnd(gsf, unit, x, *xf, MPI_REPLACE));
  PetscFunctionReturn(0);
}

/* dx += G^T dxf: every rank's cotangents of the whole sequences added up on the tokens' owners (the reduce-scatter).
   Float values are added in double (MPI sums a unit of c doubles through PetscSF, not one of c floats) and rounded
   once. */
static PetscErrorCode NetSequenceReduceScatter_Private(Net net, PetscInt c, NetElem t, const void *dxf, void *dx)
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscSF      gsf;
  MPI_Datatype unit;
  PetscScalar *wide = NULL, *acc = NULL;
  const size_t nf = (size_t)sq->ng * sq->T * c, nt = (size_t)sq->ng * sq->tl * c;

  PetscFunctionBegin;
  PetscCall(NetSequenceGetGatherSF_Private(net, &gsf));
  PetscCall(NetSequenceUnit_Private(net, c, NET_ELEM_DOUBLE, &unit));
  if (t != NET_ELEM_DOUBLE) {
    PetscCall(NetSequenceBuffer_Private(&sq->abuf[NET_SEQ_ABUF_WIDE], nf * sizeof(PetscScalar), (void **)&wide));
    PetscCall(NetSequenceBuffer_Private(&sq->abuf[NET_SEQ_ABUF_ACC], nt * sizeof(PetscScalar), (void **)&acc));
    for (size_t i = 0; i < nf; i++) wide[i] = ((const float *)dxf)[i];
    for (size_t i = 0; i < nt; i++) acc[i] = ((const float *)dx)[i];
  }
  PetscCall(PetscSFReduceBegin(gsf, unit, wide ? wide : dxf, acc ? acc : dx, MPI_SUM));
  PetscCall(PetscSFReduceEnd(gsf, unit, wide ? wide : dxf, acc ? acc : dx, MPI_SUM));
  if (t != NET_ELEM_DOUBLE)
    for (size_t i = 0; i < nt; i++) ((float *)dx)[i] = (float)acc[i];
  PetscFunctionReturn(0);
}

/*
  An attention node (NET_SEQ_ATTENTION) on the rank's tokens [ng][tl][E] of a value in the token split, its copy A_local
  the query block [t0, t0 + tl) of the whole layer (LayerAttentionSetQueryBlock()):
    forward     xf = G x,             y = A_local(xf)                         (the queries [t0, t0 + tl) of each sample)
    backward    xf = G x,             dxf = A_local^T dy, dtheta += ...,      dx = G^T dxf   (overwritten)
    jvp         xf = G x, dxf = G dx, dy = A_local (dxf, dtheta)
    sobackward  xf = G x, xdotf = G xdot, its curvature term into dxdotf,    dxdot += G^T dxdotf
  The K/V exchange is the all-gather G of the input (E entries a token), not of K and V after a local projection (2 E a
  token): half the bytes on the wire, and the layer stays a local operator (its backward gives the cotangent of the
  whole input, which G^T sums on the owners; with K and V gathered the layer would need a second input and output).
  Memory is the same either way: the block's state keeps K and V of the T keys (2 E T values a sample, which the queries
  of the rank need) and Q, O, lse of its tl rows; the gathered input, E T values, lives in an array the attention nodes
  share. Each rank computes K and V of the whole sequences from xf (P - 1 of P ranks' projection work repeated).
*/
static PetscErrorCode NetSequenceAttentionForward_Private(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *x, void *y)
{
  NetSequence *sq = (NetSequence *)net->seq;
  NetSeqNode  *sn = (NetSeqNode *)net->nodes[k].sq;
  void        *xf;

  PetscFunctionBegin;
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_XF, sn->local->insize / sq->T, t, PETSC_TRUE, x, &xf));
  sn->local->gemm = net->layers[k]->gemm; /* the node's backend (NetSetBackend() may change it after set-up) */
  /* attention dropout: the copy draws the node's map (the layer's seed and pass counter, frozen with it) at the global
     samples of its group and the global positions of its queries, so every rank's block is one rank's map */
  PetscCall(NetSequenceGetSF_Private(net, NULL));
  PetscCall(LayerSetTraining(sn->local, net->layers[k]->training));
  PetscUseMethod(sn->local, "LayerAttentionSetBlockOffset_C", (Layer, PetscInt64), (sn->local, sq->goff));
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerForwardArrays(sn->local, sq->ng, th, (const PetscScalar *const *)&xf, (PetscScalar *)y));
  else
    PetscCall(LayerForwardSingle(sn->local, sq->ng, th, (const float *const *)&xf, (float *)y));
  PetscCall(NetSequenceReleaseWhole_Private(net));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSequenceAttentionBackward_Private(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *x, const void *y, const void *dy, void *dx, PetscBool want, PetscScalar *dth)
{
  NetSequence   *sq = (NetSequence *)net->seq;
  NetSeqNode    *sn = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt c  = sn->local->insize / sq->T;
  const size_t   es = NetSequenceEntryBytes(t);
  void          *xf, *dxf = NULL;

  PetscFunctionBegin;
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_XF, c, t, PETSC_TRUE, x, &xf));
  sn->local->gemm = net->layers[k]->gemm;
  if (want) {
    PetscCall(NetSequenceWholeArray_Private(net, NET_SEQ_ABUF_DF, c, t, &dxf));
    PetscCall(PetscMemzero(dxf, (size_t)sq->ng * sn->local->insize * es));
  }
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerBackwardArrays(sn->local, sq->ng, th, (const PetscScalar *const *)&xf, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *const *)&dxf, dth));
  else
    PetscCall(LayerBackwardSingle(sn->local, sq->ng, th, (const float *const *)&xf, (const float *)y, (const float *)dy, (float *const *)&dxf, dth));
  if (want) {
    PetscCall(PetscMemzero(dx, (size_t)sq->ng * sq->tl * c * es));
    PetscCall(NetSequenceReduceScatter_Private(net, c, t, dxf, dx));
  }
  PetscCall(NetSequenceReleaseWhole_Private(net));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSequenceAttentionJVP_Private(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *x, const void *y, PetscBool given, const void *dx, const PetscScalar *dth, void *dy)
{
  NetSequence   *sq = (NetSequence *)net->seq;
  NetSeqNode    *sn = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt c  = sn->local->insize / sq->T;
  void          *xf, *dxf;

  PetscFunctionBegin;
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_XF, c, t, PETSC_TRUE, x, &xf));
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_DF, c, t, given, dx, &dxf));
  sn->local->gemm = net->layers[k]->gemm;
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerJVPArrays(sn->local, sq->ng, th, (const PetscScalar *const *)&xf, (const PetscScalar *)y, (const PetscScalar *const *)&dxf, dth, (PetscScalar *)dy));
  else
    PetscCall(LayerJVPSingle(sn->local, sq->ng, th, (const float *const *)&xf, (const float *)y, (const float *const *)&dxf, dth, (float *)dy));
  PetscCall(NetSequenceReleaseWhole_Private(net));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSequenceAttentionSOBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                             PetscScalar *dxd, PetscScalar *hvk, const PetscBool has[3])
{
  NetSequence   *sq = (NetSequence *)net->seq;
  NetSeqNode    *sn = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt c  = sn->local->insize / sq->T;
  void          *xf, *xdf, *dxdf = NULL;

  PetscFunctionBegin;
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_XF, c, NET_ELEM_DOUBLE, PETSC_TRUE, x, &xf));
  PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_DF, c, NET_ELEM_DOUBLE, has[0], xdot, &xdf));
  if (has[2]) { /* the curvature term accumulates */
    PetscCall(NetSequenceWholeArray_Private(net, NET_SEQ_ABUF_SOF, c, NET_ELEM_DOUBLE, &dxdf));
    PetscCall(PetscMemzero(dxdf, (size_t)sq->ng * sn->local->insize * sizeof(PetscScalar)));
  }
  PetscCall(LayerSOBackwardArray(sn->local, sq->ng, th, (const PetscScalar *)xf, y, (const PetscScalar *)xdf, thd, has[1] ? ydot : NULL, dy, (PetscScalar *)dxdf, hvk));
  if (has[2]) PetscCall(NetSequenceReduceScatter_Private(net, c, NET_ELEM_DOUBLE, dxdf, dxd)); /* accumulates, as dxdot must */
  PetscCall(NetSequenceReleaseWhole_Private(net));
  PetscFunctionReturn(0);
}

/* the last node's arrays of its output (values of an activation's size, released after each call: see the header) */
static PetscErrorCode NetSequenceReleaseOutput_Private(Net net, PetscInt k)
{
  NetSeqNode    *sn  = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt nin = net->nodes[k].nin;

  PetscFunctionBegin;
  PetscCall(NetSequenceRelease_Private(&sn->buf[NET_SEQ_BUF_Y(nin)]));
  PetscCall(NetSequenceRelease_Private(&sn->buf[NET_SEQ_BUF_DY(nin)]));
  PetscCall(NetSequenceRelease_Private(&sn->buf[NET_SEQ_BUF_YDOT(nin)]));
  PetscFunctionReturn(0);
}

/*
  Forward:  xs = R x (inputs from the Net's input),  ys = f_local(xs; theta),  y = S ys (the last node), else y = ys.
*/
static PetscErrorCode NetExecForward_Sequence(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  NetSeqNode *sn   = (NetSeqNode *)net->nodes[k].sq;
  PetscInt    nin  = net->nodes[k].nin;
  PetscBool   last = (PetscBool)(k == net->nlayers - 1);
  Layer       layer;
  PetscInt    n, poff;
  void       *ys = y;

  PetscFunctionBegin;
  PetscCall(NetSequenceLocal_Private(net, k, &layer, &n, &poff));
  for (PetscInt i = 0; i < nin; i++) sn->flag[i] = PETSC_TRUE; /* values are always there */
  PetscCall(NetSequenceGetInputs_Private(net, k, t, PETSC_FALSE, sn->flag, x, sn->xs, sn->moved));
  if (last) PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_Y(nin), net->layers[k]->outsize, t, &ys));
  if (sn->kind == NET_SEQ_ATTENTION)
    PetscCall(NetSequenceAttentionForward_Private(net, k, t, th, sn->xs[0], ys));
  else if (layer == net->layers[k])
    PetscCall(NetExecPlainForward_Private(net, k, n, t, th, sn->xs, ys));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerForwardArrays(layer, n, th ? th + poff : NULL, (const PetscScalar *const *)sn->xs, (PetscScalar *)ys));
  else
    PetscCall(LayerForwardSingle(layer, n, th ? th + poff : NULL, (const float *const *)sn->xs, (float *)ys));
  if (last) {
    PetscCall(NetSequenceToSamples_Private(net, net->layers[k]->outsize, t, ys, y));
    PetscCall(NetSequenceRelease_Private(&sn->buf[NET_SEQ_BUF_Y(nin)]));
  }
  PetscFunctionReturn(0);
}

/*
  Backward:  dys = S^T dy (the last node),  dxs = J_local^T dys, dtheta += its part,  dx = R^T dxs (inputs from the
  Net's input; R a permutation, so every entry of dx is written).
*/
static PetscErrorCode NetExecBackward_Sequence(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  const NetNode *nd   = &net->nodes[k];
  NetSeqNode    *sn   = (NetSeqNode *)nd->sq;
  PetscBool      last = (PetscBool)(k == net->nlayers - 1);
  const void    *ys = y, *dys = dy;
  Layer          layer;
  PetscInt       n, poff;

  PetscFunctionBegin;
  PetscCall(NetSequenceLocal_Private(net, k, &layer, &n, &poff));
  for (PetscInt i = 0; i < nd->nin; i++) {
    sn->flag[i] = PETSC_TRUE;
    sn->p[i]    = dx ? dx[i] : NULL;
  }
  PetscCall(NetSequencePresent_Private(net, nd->nin, sn->p, sn->want)); /* the input cotangents asked for */
  PetscCall(NetSequenceGetInputs_Private(net, k, t, PETSC_FALSE, sn->flag, x, sn->xs, sn->moved));
  if (last) {
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_Y(nd->nin), net->layers[k]->outsize, t, PETSC_TRUE, y, (void **)&ys));
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_DY(nd->nin), net->layers[k]->outsize, t, PETSC_TRUE, dy, (void **)&dys));
  }
  for (PetscInt i = 0; i < nd->nin; i++) {
    sn->dxs[i] = sn->want[i] ? dx[i] : NULL;
    if (sn->moved[i] && sn->want[i]) PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_D(nd->nin, i), net->layers[k]->insizes[i], t, &sn->dxs[i]));
  }
  if (sn->kind == NET_SEQ_ATTENTION)
    PetscCall(NetSequenceAttentionBackward_Private(net, k, t, th, sn->xs[0], ys, dys, sn->dxs[0], sn->want[0], dth));
  else if (layer == net->layers[k])
    PetscCall(NetExecPlainBackward_Private(net, k, n, t, th, sn->xs, ys, dys, sn->dxs, dth, mask));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerBackwardArrays(layer, n, th ? th + poff : NULL, (const PetscScalar *const *)sn->xs, (const PetscScalar *)ys, (const PetscScalar *)dys, (PetscScalar *const *)sn->dxs, dth ? dth + poff : NULL));
  else
    PetscCall(LayerBackwardSingle(layer, n, th ? th + poff : NULL, (const float *const *)sn->xs, (const float *)ys, (const float *)dys, (float *const *)sn->dxs, dth ? dth + poff : NULL));
  for (PetscInt i = 0; i < nd->nin; i++)
    if (sn->moved[i] && sn->want[i]) PetscCall(NetSequenceToSamples_Private(net, net->layers[k]->insizes[i], t, sn->dxs[i], dx[i]));
  PetscCall(NetSequenceReleaseOutput_Private(net, k));
  PetscFunctionReturn(0);
}

/*
  JVP:  dxs = R dx,  dys = J_local (dxs, dtheta),  dy = S dys (the last node).
*/
static PetscErrorCode NetExecJVP_Sequence(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  const NetNode *nd   = &net->nodes[k];
  NetSeqNode    *sn   = (NetSeqNode *)nd->sq;
  PetscBool      last = (PetscBool)(k == net->nlayers - 1);
  const void    *ys   = y;
  void          *dys  = dy;
  Layer          layer;
  PetscInt       n, poff;

  PetscFunctionBegin;
  PetscCall(NetSequenceLocal_Private(net, k, &layer, &n, &poff));
  for (PetscInt i = 0; i < nd->nin; i++) {
    sn->flag[i] = PETSC_TRUE;
    sn->p[i]    = dx ? dx[i] : NULL;
  }
  PetscCall(NetSequencePresent_Private(net, nd->nin, sn->p, sn->want)); /* the input tangents that are not zero */
  PetscCall(NetSequenceGetInputs_Private(net, k, t, PETSC_FALSE, sn->flag, x, sn->xs, sn->moved));
  PetscCall(NetSequenceGetInputs_Private(net, k, t, PETSC_TRUE, sn->want, sn->p, sn->dxin, sn->dmoved));
  if (last) {
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_Y(nd->nin), net->layers[k]->outsize, t, PETSC_TRUE, y, (void **)&ys));
    PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_DY(nd->nin), net->layers[k]->outsize, t, &dys));
  }
  if (sn->kind == NET_SEQ_ATTENTION)
    PetscCall(NetSequenceAttentionJVP_Private(net, k, t, th, sn->xs[0], ys, sn->want[0], sn->dxin[0], dth, dys));
  else if (layer == net->layers[k])
    PetscCall(NetExecPlainJVP_Private(net, k, n, t, th, sn->xs, ys, sn->dxin, dth, dys));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerJVPArrays(layer, n, th ? th + poff : NULL, (const PetscScalar *const *)sn->xs, (const PetscScalar *)ys, (const PetscScalar *const *)sn->dxin, dth ? dth + poff : NULL, (PetscScalar *)dys));
  else
    PetscCall(LayerJVPSingle(layer, n, th ? th + poff : NULL, (const float *const *)sn->xs, (const float *)ys, (const float *const *)sn->dxin, dth ? dth + poff : NULL, (float *)dys));
  if (last) PetscCall(NetSequenceToSamples_Private(net, net->layers[k]->outsize, t, dys, dy));
  PetscCall(NetSequenceReleaseOutput_Private(net, k));
  PetscFunctionReturn(0);
}

/*
  The curvature term of the second-order adjoint (double, one input): x, xdot through R; y, ydot, dy through S^T;
  dxdot ACCUMULATES, so it is moved to the token split, added to, and moved back (R^T after R is the identity).
*/
static PetscErrorCode NetExecSOBackward_Sequence(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                 PetscScalar *dxd, PetscScalar *hvk)
{
  const NetNode *nd    = &net->nodes[k];
  NetSeqNode    *sn    = (NetSeqNode *)nd->sq;
  PetscBool      input = (PetscBool)(nd->in[0] == NET_INPUT), last = (PetscBool)(k == net->nlayers - 1), has[3] = {PETSC_FALSE, PETSC_FALSE, PETSC_FALSE};
  const void    *xs = x, *xds = xdot, *ys = y, *yds = ydot, *dys = dy, *p[3] = {xdot, ydot, dxd};
  void          *dxds = dxd;
  Layer          layer;
  PetscInt       n, poff;
  const PetscInt cin = net->layers[k]->insize, cout = net->layers[k]->outsize;

  PetscFunctionBegin;
  if (net->layers[k]->sozero) PetscFunctionReturn(0); /* linear or piecewise linear: no curvature */
  PetscCheck(nd->nin == 1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: a join with curvature (the walk refuses it, NetNodeSOBackward_Private())", nd->name);
  PetscCall(NetSequenceLocal_Private(net, k, &layer, &n, &poff));
  PetscCall(NetSequencePresent_Private(net, 3, p, has));
  if (input) {
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_X(0), cin, NET_ELEM_DOUBLE, PETSC_TRUE, x, (void **)&xs));
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_XDOT(1), cin, NET_ELEM_DOUBLE, has[0], xdot, (void **)&xds));
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_D(1, 0), cin, NET_ELEM_DOUBLE, has[2], dxd, &dxds));
  }
  if (last) {
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_Y(1), cout, NET_ELEM_DOUBLE, PETSC_TRUE, y, (void **)&ys));
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_YDOT(1), cout, NET_ELEM_DOUBLE, has[1], ydot, (void **)&yds));
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_DY(1), cout, NET_ELEM_DOUBLE, PETSC_TRUE, dy, (void **)&dys));
  }
  if (sn->kind == NET_SEQ_ATTENTION)
    PetscCall(NetSequenceAttentionSOBackward_Private(net, k, th, (const PetscScalar *)xs, (const PetscScalar *)ys, (const PetscScalar *)xds, thd, (const PetscScalar *)yds, (const PetscScalar *)dys, (PetscScalar *)dxds, hvk, has));
  else
    PetscCall(LayerSOBackwardArray(layer, n, th ? th + poff : NULL, (const PetscScalar *)xs, (const PetscScalar *)ys, (const PetscScalar *)xds, thd ? thd + poff : NULL, (const PetscScalar *)yds, (const PetscScalar *)dys, (PetscScalar *)dxds,
                                   hvk ? hvk + poff : NULL));
  if (input && has[2]) PetscCall(NetSequenceToSamples_Private(net, cin, NET_ELEM_DOUBLE, dxds, dxd));
  PetscCall(NetSequenceReleaseOutput_Private(net, k));
  PetscFunctionReturn(0);
}

/*
  The identities of the data movement at the current batch layout, for NetTestJacobian(): the dot-product test
  |<R x, w> - <x, R^T w>| / (|R x| |w|) with random x (sample split) and w (token split), and R^T R x = x (R is a
  permutation: the error is the largest |R^T R x - x| / |x|); and those of attention's all-gather G: |<G u, v> -
  <u, G^T v>| / (|G u| |v|) with u in the token split and v whole sequences [ng][T], and G^T G u = P u (every token
  gathered by the P ranks of its group). Tokens of 3 entries, in double. Collective.
*/
static PetscErrorCode NetSequenceStageRows_Private(Net, PetscInt);

PetscErrorCode NetSequenceTestMoves_Private(Net net, PetscRandom rnd, PetscReal *err)
{
  NetSequence   *sq = (NetSequence *)net->seq;
  const PetscInt c  = 3;
  PetscInt       nx, nw;
  PetscScalar   *x, *w, *Rx, *Rtw, *back;
  PetscReal      loc[5] = {0, 0, 0, 0, 0}, sum[5];
  PetscSF        sf;

  PetscFunctionBegin;
  *err = 0;
  if (!sq || (!net->vlocal && !sq->staged)) PetscFunctionReturn(0);
  if (sq->staged) PetscCall(NetSequenceStageRows_Private(net, 1 + sq->slot)); /* a stage: 1 + j samples on its rank j (uneven), rebuilt at the next step */
  PetscCall(NetSequenceGetSF_Private(net, &sf));
  nx = (sq->staged ? sq->ns * sq->T : net->vlocal[0]) * c;
  nw = sq->ng * sq->tl * c;
  PetscCall(PetscMalloc3(nx + 1, &x, nw + 1, &w, nx + 1, &Rtw));
  PetscCall(PetscMalloc2(nx + 1, &back, nw + 1, &Rx));
  for (PetscInt i = 0; i < nx; i++) PetscCall(PetscRandomGetValue(rnd, &x[i]));
  for (PetscInt i = 0; i < nw; i++) PetscCall(PetscRandomGetValue(rnd, &w[i]));
  PetscCall(NetSequenceToTokens_Private(net, c, NET_ELEM_DOUBLE, x, Rx));
  PetscCall(NetSequenceToSamples_Private(net, c, NET_ELEM_DOUBLE, w, Rtw));
  PetscCall(NetSequenceToSamples_Private(net, c, NET_ELEM_DOUBLE, Rx, back));
  for (PetscInt i = 0; i < nw; i++) {
    loc[0] += PetscRealPart(Rx[i] * w[i]);
    loc[2] += PetscRealPart(Rx[i] * Rx[i]);
    loc[3] += PetscRealPart(w[i] * w[i]);
  }
  for (PetscInt i = 0; i < nx; i++) {
    loc[1] += PetscRealPart(x[i] * Rtw[i]);
    loc[4] = PetscMax(loc[4], PetscAbsScalar(back[i] - x[i]));
  }
  PetscCall(MPIU_Allreduce(loc, sum, 4, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)net)));
  PetscCall(MPIU_Allreduce(&loc[4], &sum[4], 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)net)));
  *err = PetscAbsReal(sum[0] - sum[1]) / PetscMax(PetscSqrtReal(sum[2] * sum[3]), PETSC_SMALL);
  *err = PetscMax(*err, sum[4]);
  PetscCall(PetscFree3(x, w, Rtw));
  PetscCall(PetscFree2(back, Rx));
  { /* G and G^T: u = w (the token split), v whole sequences */
    const PetscInt nv = sq->ng * sq->T * c;
    PetscScalar   *v, *Gu, *Gtv, *GtGu;
    PetscReal      gl[5] = {0, 0, 0, 0, 0}, gs[5];

    PetscCall(PetscMalloc3(nw + 1, &w, nv + 1, &v, nw + 1, &Gtv));
    PetscCall(PetscCalloc1(nw + 1, &GtGu));
    for (PetscInt i = 0; i < nw; i++) PetscCall(PetscRandomGetValue(rnd, &w[i]));
    for (PetscInt i = 0; i < nv; i++) PetscCall(PetscRandomGetValue(rnd, &v[i]));
    PetscCall(PetscArrayzero(Gtv, nw));
    PetscCall(NetSequenceReduceScatter_Private(net, c, NET_ELEM_DOUBLE, v, Gtv));
    PetscCall(NetSequenceGather_Private(net, NET_SEQ_ABUF_XF, c, NET_ELEM_DOUBLE, PETSC_TRUE, w, (void **)&Gu));
    PetscCall(NetSequenceReduceScatter_Private(net, c, NET_ELEM_DOUBLE, Gu, GtGu));
    for (PetscInt i = 0; i < nv; i++) {
      gl[0] += PetscRealPart(Gu[i] * v[i]);
      gl[2] += PetscRealPart(Gu[i] * Gu[i]);
      gl[3] += PetscRealPart(v[i] * v[i]);
    }
    for (PetscInt i = 0; i < nw; i++) {
      gl[1] += PetscRealPart(w[i] * Gtv[i]);
      gl[4] = PetscMax(gl[4], PetscAbsScalar(GtGu[i] - (PetscReal)sq->P * w[i]));
    }
    PetscCall(MPIU_Allreduce(gl, gs, 4, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)net)));
    PetscCall(MPIU_Allreduce(&gl[4], &gs[4], 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)net)));
    *err = PetscMax(*err, PetscAbsReal(gs[0] - gs[1]) / PetscMax(PetscSqrtReal(gs[2] * gs[3]), PETSC_SMALL));
    *err = PetscMax(*err, gs[4]);
    PetscCall(NetSequenceReleaseWhole_Private(net));
    PetscCall(PetscFree3(w, v, Gtv));
    PetscCall(PetscFree(GtGu));
  }
  PetscFunctionReturn(0);
}

/* its tokens, and what moves around it */
static PetscErrorCode NetExecView_Sequence(Net net, PetscInt k, PetscViewer viewer)
{
  NetSequence *sq    = (NetSequence *)net->seq;
  NetSeqNode  *sn    = (NetSeqNode *)net->nodes[k].sq;
  PetscBool    input = PETSC_FALSE;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) input = (PetscBool)(input || net->nodes[k].in[i] == NET_INPUT);
  PetscCall(PetscViewerASCIIPrintf(viewer, "      sequence node, %s: tokens split over groups of %" PetscInt_FMT " ranks%s%s\n", NetSeqKinds[sn->kind], sq->P, input ? "; its input moved from the sample split (R)" : "",
                                   k == net->nlayers - 1 ? "; its output moved to the sample split (R^T)" : ""));
  if (sn->kind == NET_SEQ_ATTENTION)
    PetscCall(PetscViewerASCIIPrintf(viewer, "      its copy on the whole sequences computes the queries of the rank's tokens (rank 0: [%" PetscInt_FMT ", %" PetscInt_FMT ")) against every key\n", sq->t0, sq->t0 + sq->tl));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecSequence = {"sequence", PETSC_TRUE, PETSC_TRUE, NetExecForward_Sequence, NetExecBackward_Sequence, NetExecJVP_Sequence, NetExecSOBackward_Sequence, NetExecView_Sequence};

/* for NetView(): the groups and this Net's token split */
PetscErrorCode NetSequenceView_Private(Net net, PetscViewer viewer)
{
  NetSequence *sq = (NetSequence *)net->seq;

  PetscFunctionBegin;
  if (!sq) PetscFunctionReturn(0);
  if (sq->staged) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  sequence parallel stages: the %" PetscInt_FMT " tokens of a sequence split over the %" PetscInt_FMT " ranks of each sequence group of a stage in its attention nodes (x' = R x, y = R^T A_blk(G x'))\n",
                                     sq->T, sq->P));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "  sequence parallel: %" PetscInt_FMT " tokens per sequence split over %" PetscInt_FMT " group%s of %" PetscInt_FMT " ranks (rank 0: tokens [%" PetscInt_FMT ", %" PetscInt_FMT "))\n", sq->T,
                                   sq->size / sq->P, sq->size / sq->P > 1 ? "s" : "", sq->P, sq->t0, sq->t0 + sq->tl));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------------------------
   A pipeline stage that is sequence parallel (-net_stages S -net_parallel sequence; netplace.c's executor
   NetExecPlacedSequence). The layers stay on whole sequences (T, C) and the values between the nodes in the stage's
   sample split, micro-batch by micro-batch (rank j of the stage holds share_j of the b samples, whole): a node that acts
   on each token alone, or on each sequence alone (position:T), computes the same there. An attention node of the stage
   is the sequence node of this file with the stage's ranks as its group, composed with the token split's move on the
   stage's communicator:

     x' = R x          the stage's sample split -> its token split: every sample of the micro-batch, tl tokens each
     y' = A_blk(G x')  the queries of the rank's tokens [t0, t0 + tl) against the keys of the whole sequences
     y  = R^T y'       back to the stage's sample split

   backward dx = R^T G^T A_blk^T R dy, JVP and the curvature term likewise; R is a permutation (R^T = R^-1) and G's
   adjoint the reduce-scatter, so every step is the operator with its exact adjoint, and every rank of the stage runs
   every step (its tokens of every sample; a rank without samples of a micro-batch still holds tokens of it). The
   PetscSFs are made for the micro-batch at hand (NetSequenceStageRows_Private(): the stage's counts gathered, the
   graphs rebuilt only when they change). In double: the placement widens and rounds the rows around the step.
*/

/* NetSetUp() with stages: the sequence group over groupcomm (this rank's stage, or its group of -net_sequence_ranks
   consecutive ranks of the stage), its token split, and the attention nodes first..last of the stage set up as
   sequence nodes */
PetscErrorCode NetSequenceSetUpStage_Private(Net net, MPI_Comm groupcomm, PetscInt first, PetscInt last)
{
  NetSequence *sq;
  PetscMPIInt  size, rank;
  char         shape[64];

  PetscFunctionBegin;
  PetscCall(NetSequenceReset_Private(net)); /* NetSetParallel() after set-up lands here again */
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCheck(net->in.ndim >= 1 && net->in.ndim < PETNET_MAX_DIM, groupcomm, PETSC_ERR_ARG_WRONG, "-net_parallel sequence with -net_stages: the input shape %s is not a sequence; give -net_input_shape T (token ids) or TxC (T tokens of C channels)",
             shape);
  PetscCallMPI(MPI_Comm_size(groupcomm, &size));
  PetscCallMPI(MPI_Comm_rank(groupcomm, &rank));
  PetscCall(PetscNew(&sq));
  net->seq   = sq;
  sq->staged = PETSC_TRUE;
  sq->size   = size;
  sq->rank   = rank;
  sq->P      = size;
  sq->group  = 0;
  sq->slot   = rank;
  sq->T      = net->in.dim[0];
  sq->tok    = net->in;
  sq->sfgen  = -1;
  sq->gsfgen = -1;
  sq->goff   = 0; /* each step sets it: the micro-batch's first global sample (NetSequenceStageSetSampleOffset_Private()) */
  PetscCheck(sq->T >= sq->P, groupcomm, PETSC_ERR_ARG_OUTOFRANGE,
             "-net_parallel sequence with -net_stages splits the %" PetscInt_FMT " tokens of a sequence (input shape %s) over the %" PetscInt_FMT
             " ranks of a stage's sequence group: every rank needs a token; use smaller groups (-net_sequence_ranks), more stages (-net_stages) or longer sequences",
             sq->T, shape, sq->P);
  sq->tl = sq->T / sq->P + (sq->slot < sq->T % sq->P ? 1 : 0);
  sq->t0 = sq->slot * (sq->T / sq->P) + PetscMin(sq->slot, sq->T % sq->P);
  PetscCallMPI(MPI_Comm_dup(groupcomm, &sq->gcomm));
  PetscCall(PetscCalloc1(sq->P + 1, &sq->soff));
  for (PetscInt k = first; k <= last; k++) {
    NetNode    *nd    = &net->nodes[k];
    Layer       layer = net->layers[k];
    NetSeqNode *sn;
    PetscBool   isattention;

    PetscCall(PetscObjectTypeCompare((PetscObject)layer, "attention", &isattention));
    if (!isattention) continue; /* on each token or each sequence alone: a plain node of the stage's sample split */
    PetscCheck(nd->nin == 1 && layer->ins[0].ndim >= 1 && layer->ins[0].dim[0] == sq->T, groupcomm, PETSC_ERR_ARG_WRONG,
               "Node %s (attention): its input is not the %" PetscInt_FMT " tokens of the Net's input sequence, which -net_parallel sequence with -net_stages splits over the stage's ranks (a node before it changed the tokens)", nd->name, sq->T);
    PetscCall(PetscNew(&sn));
    sn->kind = NET_SEQ_ATTENTION;
    nd->sq   = sn;
    PetscCall(PetscCalloc4(nd->nin, &sn->xs, nd->nin, &sn->dxin, nd->nin, &sn->p, nd->nin, &sn->dxs));
    PetscCall(PetscCalloc4(nd->nin, &sn->moved, nd->nin, &sn->dmoved, nd->nin, &sn->flag, nd->nin, &sn->want));
    PetscCall(PetscCalloc1(NET_SEQ_NBUF(nd->nin), &sn->buf));
    PetscCall(NetSequenceCopyLayer_Private(net, k, 1, &layer->ins[0], sq->t0, sq->tl, &sn->local)); /* the queries [t0, t0 + tl) of whole sequences */
    PetscCheck(sn->local->nparams == layer->nparams && sn->local->outsize * sq->T == sq->tl * layer->outsize, groupcomm, PETSC_ERR_PLIB,
               "Node %s: its copy on the rank's queries [%" PetscInt_FMT ", %" PetscInt_FMT ") has another shape than %" PetscInt_FMT " tokens", nd->name, sq->t0, sq->t0 + sq->tl, sq->tl);
  }
  PetscFunctionReturn(0);
}

/* before a stage's step: the global index of the micro-batch's first sample, where the attention nodes' blocks of
   queries draw their dropout maps (the copy reads the node's layer's seed, pass counter and frozen state) */
PetscErrorCode NetSequenceStageSetSampleOffset_Private(Net net, PetscInt64 g0)
{
  PetscFunctionBegin;
  ((NetSequence *)net->seq)->goff = g0;
  PetscFunctionReturn(0);
}

/* a stage's step on a micro-batch of which this rank holds ns samples: the stage's counts, and R's and G's PetscSFs
   for them (made again only when the counts changed: the same test on every rank of the stage). Collective on the stage. */
static PetscErrorCode NetSequenceStageRows_Private(Net net, PetscInt ns)
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscInt    *soff;
  PetscBool    same = PETSC_TRUE;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(sq->P + 1, &soff));
  soff[0] = 0;
  PetscCallMPI(MPI_Allgather(&ns, 1, MPIU_INT, soff + 1, 1, MPIU_INT, sq->gcomm));
  for (PetscInt q = 0; q < sq->P; q++) soff[q + 1] += soff[q];
  for (PetscInt q = 0; q <= sq->P; q++) same = (PetscBool)(same && soff[q] == sq->soff[q]);
  sq->ns = ns;
  if (same && sq->sf) {
    PetscCall(PetscFree(soff));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscArraycpy(sq->soff, soff, sq->P + 1));
  PetscCall(PetscFree(soff));
  sq->ng = sq->soff[sq->P];
  PetscCall(PetscSFDestroy(&sq->sf));
  PetscCall(PetscSFDestroy(&sq->gsf));
  PetscCall(NetSequenceMakeSF_Private(sq, sq->gcomm, 0, ns, sq->soff, &sq->sf));
  PetscCall(NetSequenceMakeGatherSF_Private(sq, sq->gcomm, 0, &sq->gsf));
  PetscFunctionReturn(0);
}

/* the arrays of node k's step, released after it (of an activation's size: a stage keeps its values in its sample
   split, not these) */
static PetscErrorCode NetSequenceStageRelease_Private(Net net, PetscInt k)
{
  NetSeqNode *sn = (NetSeqNode *)net->nodes[k].sq;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < NET_SEQ_NBUF(net->nodes[k].nin); b++) PetscCall(NetSequenceRelease_Private(&sn->buf[b]));
  PetscFunctionReturn(0);
}

/* y' of the rank's queries: R y, or (recompute: the block's state is another micro-batch's) A_blk(G x') again, which
   leaves the block the state of this micro-batch (the same bits as its forward step) */
static PetscErrorCode NetSequenceStageOutput_Private(Net net, PetscInt k, const PetscScalar *th, const void *xs, const PetscScalar *y, PetscBool recompute, void **ys)
{
  NetSequence   *sq   = (NetSequence *)net->seq;
  const PetscInt cout = net->layers[k]->outsize / sq->T;

  PetscFunctionBegin;
  if (!recompute) {
    PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_Y(1), cout, NET_ELEM_DOUBLE, PETSC_TRUE, y, ys));
    PetscFunctionReturn(0);
  }
  PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_Y(1), cout, NET_ELEM_DOUBLE, ys));
  PetscCall(NetSequenceAttentionForward_Private(net, k, NET_ELEM_DOUBLE, th, xs, *ys));
  PetscFunctionReturn(0);
}

/* forward of attention node k of a sequence-parallel stage on its ns samples x, y [ns][T][C] (double): y = R^T A_blk(G R x) */
PetscErrorCode NetSequenceStageForward_Private(Net net, PetscInt k, PetscInt ns, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  NetSequence   *sq  = (NetSequence *)net->seq;
  const PetscInt cin = net->layers[k]->insizes[0] / sq->T, cout = net->layers[k]->outsize / sq->T;
  void          *xs, *ys;

  PetscFunctionBegin;
  PetscCall(NetSequenceStageRows_Private(net, ns));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_X(0), cin, NET_ELEM_DOUBLE, PETSC_TRUE, x, &xs));
  PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_Y(1), cout, NET_ELEM_DOUBLE, &ys));
  PetscCall(NetSequenceAttentionForward_Private(net, k, NET_ELEM_DOUBLE, th, xs, ys));
  PetscCall(NetSequenceToSamples_Private(net, cout, NET_ELEM_DOUBLE, ys, y));
  PetscCall(NetSequenceStageRelease_Private(net, k));
  PetscFunctionReturn(0);
}

/* backward: dx = R^T G^T A_blk^T R dy (overwritten; dx NULL on every rank: not asked for), dth += the rank's tokens' part */
PetscErrorCode NetSequenceStageBackward_Private(Net net, PetscInt k, PetscInt ns, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth, PetscBool recompute)
{
  NetSequence   *sq  = (NetSequence *)net->seq;
  NetSeqNode    *sn  = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt cin = net->layers[k]->insizes[0] / sq->T, cout = net->layers[k]->outsize / sq->T;
  void          *xs, *ys, *dys, *dxs = NULL;

  PetscFunctionBegin;
  PetscCall(NetSequenceStageRows_Private(net, ns));
  sn->p[0] = dx;
  PetscCall(NetSequencePresent_Private(net, 1, sn->p, sn->want)); /* a rank without samples holds no dx, asked for or not */
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_X(0), cin, NET_ELEM_DOUBLE, PETSC_TRUE, x, &xs));
  PetscCall(NetSequenceStageOutput_Private(net, k, th, xs, y, recompute, &ys));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_DY(1), cout, NET_ELEM_DOUBLE, PETSC_TRUE, dy, &dys));
  if (sn->want[0]) PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_D(1, 0), cin, NET_ELEM_DOUBLE, &dxs));
  PetscCall(NetSequenceAttentionBackward_Private(net, k, NET_ELEM_DOUBLE, th, xs, ys, dys, dxs, sn->want[0], dth));
  if (sn->want[0]) PetscCall(NetSequenceToSamples_Private(net, cin, NET_ELEM_DOUBLE, dxs, dx));
  PetscCall(NetSequenceStageRelease_Private(net, k));
  PetscFunctionReturn(0);
}

/* JVP: dy = R^T J_blk (G R dx, dth) (dx NULL on every rank: a zero tangent) */
PetscErrorCode NetSequenceStageJVP_Private(Net net, PetscInt k, PetscInt ns, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy, PetscBool recompute)
{
  NetSequence   *sq  = (NetSequence *)net->seq;
  NetSeqNode    *sn  = (NetSeqNode *)net->nodes[k].sq;
  const PetscInt cin = net->layers[k]->insizes[0] / sq->T, cout = net->layers[k]->outsize / sq->T;
  void          *xs, *ys, *dxs, *dys;

  PetscFunctionBegin;
  PetscCall(NetSequenceStageRows_Private(net, ns));
  sn->p[0] = dx;
  PetscCall(NetSequencePresent_Private(net, 1, sn->p, sn->want));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_X(0), cin, NET_ELEM_DOUBLE, PETSC_TRUE, x, &xs));
  PetscCall(NetSequenceStageOutput_Private(net, k, th, xs, y, recompute, &ys));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_D(1, 0), cin, NET_ELEM_DOUBLE, sn->want[0], dx, &dxs));
  PetscCall(NetSequenceTokenArray_Private(net, k, NET_SEQ_BUF_DY(1), cout, NET_ELEM_DOUBLE, &dys));
  PetscCall(NetSequenceAttentionJVP_Private(net, k, NET_ELEM_DOUBLE, th, xs, ys, sn->want[0], dxs, dth, dys));
  PetscCall(NetSequenceToSamples_Private(net, cout, NET_ELEM_DOUBLE, dys, dy));
  PetscCall(NetSequenceStageRelease_Private(net, k));
  PetscFunctionReturn(0);
}

/* the curvature term: x, xdot, y, ydot, dy through R; dxdot ACCUMULATES: moved to the token split, added to, moved back */
PetscErrorCode NetSequenceStageSOBackward_Private(Net net, PetscInt k, PetscInt ns, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                  PetscScalar *dxd, PetscScalar *hvk, PetscBool recompute)
{
  NetSequence   *sq  = (NetSequence *)net->seq;
  const PetscInt cin = net->layers[k]->insizes[0] / sq->T, cout = net->layers[k]->outsize / sq->T;
  const void    *p[3] = {xdot, ydot, dxd};
  PetscBool      has[3];
  void          *xs, *ys, *xds, *yds, *dys, *dxds;

  PetscFunctionBegin;
  PetscCall(NetSequenceStageRows_Private(net, ns));
  PetscCall(NetSequencePresent_Private(net, 3, p, has));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_X(0), cin, NET_ELEM_DOUBLE, PETSC_TRUE, x, &xs));
  PetscCall(NetSequenceStageOutput_Private(net, k, th, xs, y, recompute, &ys));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_XDOT(1), cin, NET_ELEM_DOUBLE, has[0], xdot, &xds));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_YDOT(1), cout, NET_ELEM_DOUBLE, has[1], ydot, &yds));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_DY(1), cout, NET_ELEM_DOUBLE, PETSC_TRUE, dy, &dys));
  PetscCall(NetSequenceMoveIn_Private(net, k, NET_SEQ_BUF_D(1, 0), cin, NET_ELEM_DOUBLE, has[2], dxd, &dxds));
  PetscCall(NetSequenceAttentionSOBackward_Private(net, k, th, (const PetscScalar *)xs, (const PetscScalar *)ys, (const PetscScalar *)xds, thd, (const PetscScalar *)yds, (const PetscScalar *)dys, (PetscScalar *)dxds, hvk, has));
  if (has[2]) PetscCall(NetSequenceToSamples_Private(net, cin, NET_ELEM_DOUBLE, dxds, dxd));
  PetscCall(NetSequenceStageRelease_Private(net, k));
  PetscFunctionReturn(0);
}

/* the stage's sequence group for NetView(): a node's line (every rank calls it and says its split) */
PetscErrorCode NetSequenceStageViewNode_Private(Net net, PetscInt k, PetscViewer viewer)
{
  NetSequence *sq = (NetSequence *)net->seq;
  PetscMPIInt  rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  if (net->nodes[k].sq)
    PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "  rank %d, its sequence group's rank %" PetscInt_FMT " of %" PetscInt_FMT ": the queries of tokens [%" PetscInt_FMT ", %" PetscInt_FMT ") of every sample the group holds of a micro-batch\n",
                                                 rank, sq->slot, sq->P, sq->t0, sq->t0 + sq->tl));
  PetscFunctionReturn(0);
}
