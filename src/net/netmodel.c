/*
  Model-parallel nodes: a dense, conv2d or conv3d node whose weights are split over a P_out x P_in grid of ranks
  (DistDL, Hewett and Grady's linear-algebraic model parallelism; LLNL's channel/filter parallelism). A dense:N:tokens
  node (the dense layer at each position of (T, E) samples) splits as a 1x1 convolution of its positions: W [N][E] by
  outputs and by the last dimension E, x (N, T, E) -> y (N, T, N_out), the local layer a dense:block:tokens.

  The rank at grid coordinates (co, ci) (rank = co P_in + ci) holds the block of W whose rows are its output block
  (dense: outputs; conv2d, conv3d: output channels, the filters) and whose columns are its input block (dense: input
  features; conv2d, conv3d: input channels, every kernel tap), and the bias of its output block if ci == 0. Every
  tensor stays channels-last:

    x   [n][F_in]  or [n][H][W][C_in]  or [n][D][H][W][C_in]       sample-split, as every node's input   (layout xss)
    x'  [N][in block]                                               all N samples, replicated along P_out (layout xmp)
    y'  [N][out block]                                              partial sums, replicated along P_in   (layout ypart)
    y   [n][F_out] or [n][Ho][Wo][C_out] or [n][Do][Ho][Wo][C_out] sample-split                          (layout yss)

  The weights W [C_out][taps][C_in] (taps: KH KW for conv2d, KD KH KW for conv3d, 1 for dense) are cut the same way
  for every kind: the rows of the output block, and in each row and tap the columns of the input block.

    forward     x' = R x            y' = f_local(x'; W block, b on ci == 0)    y = S y'
    backward    dy' = S^T dy        dx', dW += local backward                  dx = R^T dx'
    jvp         dx' = R dx          dy' = local jvp(dx', dW)                   dy = S dy'
    sobackward  dy' = S^T dy, xdot' = R xdot, local curvature term,            dxdot += R^T dxdot'

  R = PetNetRedistributeCreate(xss, xmp) copies each entry from its owner to every replica (R^T sums the copies back),
  S = PetNetSumReduceCreate(ypart, yss) sums the partial outputs over P_in and hands them back split by samples (S^T
  broadcasts). Both are exact adjoints of each other's transpose, so the derivatives are those of the unsplit layer.
  The local kernel is a Layer of the same kind with the block sizes, so forward, backward, jvp and sobackward are the
  layer's own code on the rank's block.

  In grid mode a convolution's grid of ranks is the G ranks holding the same spatial block in each spatial group
  (net->xcomm, P_out P_in = G) and its "samples" are the boxes of the fields that the spatial executor gathers around
  the block (netspatial.c, NetSpatialModelForward_Private()): x (nf, box..., C_in) -> y (nf, output block..., C_out),
  the local layer the convolution without padding on the box. The ranks of one group hold the same block of W (the
  same (co, ci)) and each adds the gradient of its spatial block; the parameter map's reduce sums them (netpmap.c).

  Tensor parallelism (-net_parallel tensor, Megatron-LM): the same executor, its grid the ranks of a tensor group
  (net->tcomm: NetSetTensorRanks() consecutive ranks, the groups data-parallel replicas whose gradients the parameter
  map's reduce sums, as above). NetModelTensorPartition_Private() chooses the split: a dense:N:tokens node
  column-parallel (P x 1), or row-parallel (1 x P) when its input comes through elementwise nodes from a column-parallel
  one (an MLP pair); an attention node by heads (NET_TENSOR_HEADS): the grid P x 1, x' the whole input on every rank,
  the local layer the block of heads hstart.. of the whole layer (attention's LayerAttentionSetHeadBlock_C), and y'
  whole, each rank's heads' part of the output, summed over the P ranks by S:

    x'  [N][T][E]   all samples of the group, replicated P times              (layout xmp, no split)
    y'  [N][T][E]   the heads' partial outputs, summed by S over the grid      (layout ypart, no split)

  its parameters the runs of its heads: in_proj_weight's rows in each of Q, K, V, in_proj_bias's, out_proj.weight's
  columns in every row, and out_proj.bias on the group's first rank.

  An MLP pair keeps its column block (Megatron): when the column-parallel dense's output reaches the row-parallel one
  through elementwise nodes only, each value used once, the value between them stays in the column layout

    h   [N][T][F block]   all samples of the group, the rank's block of the F columns    (NetNode ventries, no split of N)

  the column node writes its y' as it is (no S: the identity, its adjoint the identity), each elementwise node runs a
  copy of its layer of input shape (T, F block) on the N samples (NET_TENSOR_BLOCK; dropout draws the whole layer's
  mask at the block's global places, LayerDropoutSetColumnBlock_C), and the row node reads the block as its x' (no R).
  The pair then moves its input once (R of the column node: all samples of the group on every rank) and its output
  once (S of the row node: the sum of the partial products, handed back split by samples), and the adjoints the same.

  Pipeline stages (-net_stages S -net_parallel model, netplace.c): the same executor, its grid the ranks of the node's
  stage (NetPlaceNodeComm_Private()), its samples the rank's rows of one micro-batch in the stage's layout (split by
  samples over the stage's ranks, as x above); the placed executor runs it on every rank of the stage for every
  micro-batch, and NetModelNewRows_Private() makes the next step move its x again and, when the micro-batches differ
  in size, gather the counts again (the cache below trusts them while the batch layout stays).
  With -net_parallel tensor the stage is the tensor group (or -net_tensor_ranks P cuts it into groups of P) and the split is
  Megatron's, chosen per node as above; an MLP pair does not keep its column block there (each of its nodes moves its
  own input and output: the elementwise nodes between them run on the rank's rows as the stage's other nodes do).

  The node's parameters on a rank are its W block then (ci == 0) its bias block: runs of theta in exactly the order
  the local layer reads them (NetNode.runstart/runlen). The layouts and operators depend on every rank's number of
  samples; they are rebuilt when those change (the last, smaller batch of an epoch).
*/
#include <petnet/private/netimpl.h>
#include <petnetlayout.h>

typedef struct {
  MPI_Comm comm;                     /* the ranks the weights are split over: the Net's, or for a convolution of the grid
                                        the ranks holding the same spatial block in every group (net->xcomm, not owned) */
  PetscBool  grid;                   /* a convolution of the grid: samples are the boxes of the fields (netspatial.c) */
  Layer      local;                  /* the rank's block: same kind, block sizes, bias only where ci == 0 */
  PetscInt   pout, pin, co, ci;      /* the grid and this rank's coordinates */
  PetscInt   ostart, oblock;         /* output (channel) block */
  PetscInt   istart, iblock;         /* input (channel) block */
  PetscInt   nout, nin, taps;        /* outputs, inputs (channels), kernel taps KH KW (dense: 1) */
  PetscInt   xndim, yndim;           /* tensor dims of x and y, samples included */
  PetscInt64 xdims[5], ydims[5];     /* ... per sample in dims[1..] */
  PetscInt  *osizes, *isizes;        /* every rank's output and input block along its grid axis */
  PetscBool  bias;                   /* the layer has a bias */
  PetscBool  heads;                  /* an attention node split by heads: x' whole, y' whole and partial over P_out */
  PetscInt   nheads, hstart, hblock; /* ... its heads H and this rank's block of heads */
  PetscInt   tensor;                 /* chosen by -net_parallel tensor: NET_TENSOR_COLUMN, _ROW, _HEADS, _BLOCK; 0 otherwise */
  PetscBool  keepout;                /* a column node of an MLP pair that keeps its block: y is y' (no S) */
  PetscBool  blockin;                /* a row node of such a pair: x is x' (no R) */
  PetscInt   rows;                   /* rows of the last dim in a sample (T of (T, F)): the block's entries are N rows oblock */
  PetscInt64 goff;                   /* NET_TENSOR_BLOCK: the global index of the group's first sample (dropout's places) */

  /* for the current batch: every rank's number of samples, the layouts and operators, and the work Vecs */
  PetscMPIInt  size;
  PetscInt    *counts;   /* samples per rank (size entries); counts == NULL: nothing built */
  PetscInt     batchgen; /* the Net's batch layout (Net.batchgen) the counts were gathered for */
  PetscInt     nmin;     /* the fewest samples on a rank */
  PetscInt     N;
  PetNetLayout xss, xmp, ypart, yss;
  Mat          R, S;
  Vec          xv, yv;       /* sample-split wrappers of the caller's arrays (no storage of their own) */
  Vec          xtmp;         /* sample-split, with storage: R^T for accumulation */
  Vec          xmpv, ympv;   /* x' and y' at the last forward (the local linearization point) */
  Vec          dxmpv, dympv; /* their (co)tangents */
  Vec          dxdotmpv;     /* sobackward: the curvature term's input part on the block */
  PetscBool    xmpvalid;     /* x' and y' hold the last forward of this node on this batch layout */
  PetscBool    dyheld;       /* dy' holds S^T dy of the input part of a split backward, for its parameter part */
} NetModel;

static const char *NetModelKind_Private(Layer layer)
{
  return ((PetscObject)layer)->type_name;
}

/* the block of a dimension of m entries split p ways, part c: as even as possible, the first ones one larger */
static void NetModelBlock_Private(PetscInt m, PetscInt p, PetscInt c, PetscInt *start, PetscInt *size)
{
  *size  = m / p + (c < m % p ? 1 : 0);
  *start = c * (m / p) + PetscMin(c, m % p);
}

/* How -net_parallel tensor splits a node (NetModel.tensor) */
enum {
  NET_TENSOR_COLUMN = 1, /* dense:N:tokens, outputs split (P_out = P, P_in = 1): the first dense of an MLP pair */
  NET_TENSOR_ROW    = 2, /* dense:N:tokens, inputs split (P_out = 1, P_in = P): the dense after a column-parallel one */
  NET_TENSOR_HEADS  = 3, /* attention: heads split P ways, x whole on every rank, the output a partial sum */
  NET_TENSOR_BLOCK  = 4  /* an elementwise node between the two dense nodes of an MLP pair, on the column block */
};

static const char *const NetTensorSplits[] = {"", "column-parallel (outputs split)", "row-parallel (inputs split, partial outputs summed)", "heads split (Q/K/V rows column-parallel, out_proj columns row-parallel, partial outputs summed)",
                                              "on the column block of its MLP pair (all samples of the group, the rank's columns: no data movement)"};

/* a layer applied value by value, which keeps a split of the last dimension meaningful (an MLP pair's activation) */
static PetscErrorCode NetModelIsElementwise_Private(Layer layer, PetscBool *elementwise)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)layer, elementwise, LAYERIDENTITY, LAYERRELU, LAYERLEAKYRELU, LAYERTANH, LAYERSIGMOID, LAYERGELU, LAYERSOFTPLUS, LAYERDROPOUT, ""));
  PetscFunctionReturn(0);
}

/*
  -net_parallel tensor: how node k splits over the size ranks of its tensor group (Megatron-LM). An attention node by
  heads; a dense:N:tokens node column-parallel, unless its input comes, through elementwise nodes only, from a
  column-parallel dense:N:tokens node: then row-parallel, the second dense of an MLP pair. A dense with fewer outputs
  (inputs) than ranks cannot be split that way and stays data parallel.
*/
static PetscErrorCode NetModelTensorPartition_Private(Net net, PetscInt k, PetscMPIInt size, PetscInt nout, PetscInt nin, PetscInt p[2], PetscInt *split)
{
  Layer     layer = net->layers[k];
  PetscBool isdense, isattn, tokens = PETSC_FALSE, row = PETSC_FALSE;
  PetscInt  j = k;

  PetscFunctionBegin;
  *split = 0;
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERATTENTION, &isattn));
  if (isattn) {
    p[0]   = size;
    p[1]   = 1;
    *split = NET_TENSOR_HEADS;
    PetscFunctionReturn(0);
  }
  if (isdense) PetscCall(LayerDenseGetTokens(layer, &tokens, NULL, NULL));
  if (!tokens) PetscFunctionReturn(0);
  while (net->nodes[j].nin == 1 && net->nodes[j].in[0] >= 0) { /* back through elementwise nodes to a dense */
    PetscBool elementwise;

    j = net->nodes[j].in[0];
    PetscCall(NetModelIsElementwise_Private(net->layers[j], &elementwise));
    if (!elementwise) break;
  }
  if (j != k && net->nodes[j].mp) row = (PetscBool)(((NetModel *)net->nodes[j].mp)->tensor == NET_TENSOR_COLUMN);
  if (row && nin >= size) {
    p[0]   = 1;
    p[1]   = size;
    *split = NET_TENSOR_ROW;
  } else if (nout >= size) {
    p[0]   = size;
    p[1]   = 1;
    *split = NET_TENSOR_COLUMN;
  }
  PetscFunctionReturn(0);
}

/* The ranks of this rank's tensor group: groups of NetSetTensorRanks() consecutive ranks (all ranks by default) */
static PetscErrorCode NetModelTensorComm_Private(Net net, MPI_Comm *tcomm)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt size, rank;
  PetscInt    P;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  P = net->tensorranks > 0 ? net->tensorranks : size;
  PetscCheck(size % P == 0, comm, PETSC_ERR_ARG_INCOMP, "-net_tensor_ranks %" PetscInt_FMT " does not divide the %d ranks into equal tensor groups: give a divisor of %d (0: one group of all ranks)", P, size, size);
  if (net->tcomm != MPI_COMM_NULL && net->tcommranks != P) PetscCallMPI(MPI_Comm_free(&net->tcomm));
  if (net->tcomm == MPI_COMM_NULL) {
    PetscCallMPI(MPI_Comm_split(comm, (PetscMPIInt)(rank / P), rank, &net->tcomm));
    net->tcommranks = P;
  }
  *tcomm = net->tcomm;
  PetscFunctionReturn(0);
}

/* The grid of node k: the partition given to the node (NetSetNodePartition()), or in model mode the default for dense,
   conv2d and conv3d (0x0: none) over the size ranks it can be split over (a convolution of the grid: the groups; with
   one group it stays a spatial node), or in tensor mode Megatron's split of attention and dense:N:tokens */
static PetscErrorCode NetModelChoosePartition_Private(Net net, PetscInt k, PetscMPIInt size, PetscBool grid, PetscInt nout, PetscInt nin, PetscInt p[2], PetscInt *split)
{
  Layer     layer = net->layers[k];
  PetscBool isdense, isconv;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)layer, &isconv, LAYERCONV2D, LAYERCONV3D, ""));
  p[0]   = net->nodes[k].partition[0];
  p[1]   = net->nodes[k].partition[1];
  *split = 0;
  if (p[0] <= 0 && net->parallel == NET_PARALLEL_TENSOR && !grid) PetscCall(NetModelTensorPartition_Private(net, k, size, nout, nin, p, split));
  if (p[0] > 0 || net->parallel != NET_PARALLEL_MODEL || !(isdense || isconv) || (grid && size == 1)) PetscFunctionReturn(0);
  /* the default: P_out = all ranks, P_in = 1 (the input is only broadcast, the output only gathered: no sum); a layer
     with fewer outputs than ranks takes the largest P_out that fits, the rest along the inputs; none fits: data parallel */
  for (PetscMPIInt d = size; d >= 1; d--) {
    if (size % d || d > nout || size / d > nin) continue;
    p[0] = d;
    p[1] = size / d;
    break;
  }
  PetscFunctionReturn(0);
}

/*
  Node a, elementwise, between the two dense nodes of an MLP pair whose column block is kept (col: the column node):
  a copy of its layer with input shape (T, F block) runs on all N samples of the group, the rank's columns of F
*/
static PetscErrorCode NetModelSetUpColumnBlock_Private(Net net, PetscInt a, const NetModel *col)
{
  Layer       layer = net->layers[a];
  PetNetShape in    = layer->in;
  NetModel   *mp;
  char        args[256] = "";

  PetscFunctionBegin;
  PetscCall(NetModelDestroyNode_Private(net, a));
  PetscCall(PetscNew(&mp));
  mp->comm = col->comm;
  mp->pout = col->pout;
  mp->pin  = 1;
  mp->co   = col->co;
  mp->nout = mp->nin = col->nout;
  mp->taps           = 1;
  mp->size           = col->size;
  mp->tensor         = NET_TENSOR_BLOCK;
  mp->ostart = mp->istart = col->ostart;
  mp->oblock = mp->iblock = col->oblock;
  mp->rows                = col->rows;
  mp->xndim = mp->yndim = col->yndim;
  for (PetscInt d = 1; d < col->yndim; d++) mp->xdims[d] = mp->ydims[d] = col->ydims[d];
  PetscCall(PetscMalloc2(mp->pout, &mp->osizes, 1, &mp->isizes));
  PetscCall(PetscArraycpy(mp->osizes, col->osizes, mp->pout));
  mp->isizes[0]        = col->nout;
  net->nodes[a].tblock = mp; /* from here on, NetModelDestroyNode_Private() frees what follows */
  in.dim[in.ndim - 1]  = mp->oblock;
  PetscCall(LayerCreate(PETSC_COMM_SELF, &mp->local));
  PetscCall(LayerSetType(mp->local, NetModelKind_Private(layer)));
  PetscCall(LayerSetIndex(mp->local, layer->index));
  PetscTryTypeMethod(layer, getarguments, sizeof(args), args); /* dropout's p, leakyrelu's slope, ... */
  if (args[0]) PetscCall(LayerSetArguments(mp->local, args));
  PetscCall(LayerSetInputShape(mp->local, &in));
  PetscCall(LayerSetTraining(mp->local, layer->training));
  PetscCall(LayerSetUp(mp->local));
  PetscCheck(mp->local->nparams == 0 && mp->local->outsize == mp->local->insize, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the copy of its elementwise layer on the column block is not elementwise", net->nodes[a].name);
  net->nodes[a].nplocal = 0;
  net->nodes[a].nruns   = 0;
  PetscFunctionReturn(0);
}

/*
  The row-parallel node k of an MLP pair: when its input comes from the column-parallel node through elementwise nodes
  only, every value on the way used by the next node alone, the pair keeps the column block (the values between them
  hold the rank's columns of all samples of the group, NetModelValueEntries_Private()) instead of gathering it back to
  the sample split and redistributing it. Otherwise nothing changes.
*/
static PetscErrorCode NetModelKeepColumnBlock_Private(Net net, PetscInt k)
{
  NetModel *row = (NetModel *)net->nodes[k].mp, *col;
  PetscInt  j   = net->nodes[k].in[0];

  PetscFunctionBegin;
  /* a pipeline stage (netplace.c) moves every node's values micro-batch by micro-batch in the stage's sample split, so
     the pair does not keep its block there: each of its nodes moves its own input and output (R of the row node, S of
     the column node), and the elementwise nodes between them run on the rank's rows as any other node of the stage */
  if (net->pl) PetscFunctionReturn(0);
  while (j >= 0 && !net->nodes[j].mp) { /* back through elementwise nodes, each with one input and one use */
    PetscBool elementwise;

    PetscCall(NetModelIsElementwise_Private(net->layers[j], &elementwise));
    if (!elementwise || net->nodes[j].nin != 1 || net->nodes[j].nuses != 1 || net->nodes[j].sp || net->nodes[j].sq) PetscFunctionReturn(0);
    j = net->nodes[j].in[0];
  }
  if (j < 0 || net->nodes[j].nuses != 1) PetscFunctionReturn(0);
  col = (NetModel *)net->nodes[j].mp;
  if (col->tensor != NET_TENSOR_COLUMN || !col->local || !row->local || col->comm != row->comm || col->pout != row->pin || col->nout != row->nin || col->ostart != row->istart || col->oblock != row->iblock || col->rows != row->rows)
    PetscFunctionReturn(0);
  for (PetscInt a = net->nodes[k].in[0]; a != j; a = net->nodes[a].in[0]) PetscCall(NetModelSetUpColumnBlock_Private(net, a, col));
  col->keepout = PETSC_TRUE;
  row->blockin = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  The entries of the kept column blocks (NetValueEntries()) for the batch of net->vlocal, at each workspace rebuild
  (collective): N rows oblock, N the group's samples, and each block node's and attention node's global index of the
  group's first sample (their dropout draws the whole layer's mask at the group's places)
*/
PetscErrorCode NetModelValueEntries_Private(Net net)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscBool   any = PETSC_FALSE, tensor = PETSC_FALSE;
  PetscInt64  n, Ng = 0, off = 0, ingroup = 0;
  PetscMPIInt rank, grank;

  PetscFunctionBegin;
  PetscCall(PetscFree(net->ventries));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetModel *mp = (NetModel *)net->nodes[k].mp;

    if (mp && mp->heads) tensor = PETSC_TRUE;
    any = (PetscBool)(any || (mp && mp->keepout) || net->nodes[k].tblock);
  }
  if (!any && !tensor) PetscFunctionReturn(0); /* the same on every rank: the set-up is */
  /* a pipeline stage keeps no column block (NetModelKeepColumnBlock_Private()) and has no tensor group (net->tcomm): no
     entries, and each step gives an attention split by heads its micro-batch's place (NetModelSetSampleOffset_Private()) */
  if (net->pl) PetscFunctionReturn(0);
  n = net->vlocal[0];
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_rank(net->tcomm, &grank));
  PetscCall(MPIU_Allreduce(&n, &Ng, 1, MPIU_INT64, MPI_SUM, net->tcomm));
  PetscCallMPI(MPI_Exscan(&n, &off, 1, MPIU_INT64, MPI_SUM, comm));
  PetscCallMPI(MPI_Exscan(&n, &ingroup, 1, MPIU_INT64, MPI_SUM, net->tcomm));
  if (!rank) off = 0; /* MPI_Exscan leaves the first rank's result undefined */
  if (!grank) ingroup = 0;
  for (PetscInt k = 0; k < net->nlayers; k++) { /* attention split by heads: its group's samples' place, for its dropout */
    NetModel *mp = (NetModel *)net->nodes[k].mp;

    if (mp && mp->heads) mp->goff = off - ingroup;
  }
  if (!any) PetscFunctionReturn(0);
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->ventries));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetModel  *mp = (NetModel *)(net->nodes[k].tblock ? net->nodes[k].tblock : net->nodes[k].mp);
    PetscInt64 e;

    if (!mp || !(mp->keepout || mp->tensor == NET_TENSOR_BLOCK)) continue;
    e = Ng * mp->rows * mp->oblock; /* in 64 bits: checked before it becomes an array size */
    PetscCheck(e <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "Node %s keeps the column block of its MLP pair: %" PetscInt64_FMT " samples of its tensor group times %" PetscInt_FMT " x %" PetscInt_FMT
               " entries are more than a PetscInt holds: use fewer samples per group (smaller batches, more tensor groups with -net_tensor_ranks)",
               net->nodes[k].name, Ng, mp->rows, mp->oblock);
    net->ventries[k + 1] = (PetscInt)e;
    mp->goff             = off - ingroup;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelSetUpNode_Private(Net net, PetscInt k)
{
  NetNode    *nd    = &net->nodes[k];
  Layer       layer = net->layers[k];
  MPI_Comm    comm = PetscObjectComm((PetscObject)net), mcomm = comm;
  PetscMPIInt size, rank, nranks;
  PetscBool   isdense, isconv, isconv3d, isattn, grid, tokens = PETSC_FALSE;
  PetscInt    p[2] = {0, 0}, nout = 0, nin = 0, taps = 1, sd = 0, split = 0;
  PetscInt64  box[3] = {0, 0, 0}, blk[3] = {0, 0, 0};
  NetModel   *mp;
  char        spec[256];

  PetscFunctionBegin;
  PetscCall(NetModelDestroyNode_Private(net, k));
  PetscCallMPI(MPI_Comm_size(comm, &nranks));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERDENSE, &isdense));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV3D, &isconv3d));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)layer, &isconv, LAYERCONV2D, LAYERCONV3D, ""));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERATTENTION, &isattn));
  sd = isconv3d ? 3 : 2; /* a convolution's spatial dims */
  /* a convolution of the grid (its input on the DMDA: a window node of netspatial.c) splits its channels over the ranks
     that hold the same spatial block in every group: the spatial executor already splits its points over the group */
  grid = (PetscBool)(isconv && net->nodes[k].sp);
  if (grid)
    mcomm = net->xcomm;
  else if (net->pl)
    PetscCall(NetPlaceNodeComm_Private(net, k, &mcomm)); /* a pipeline stage (netplace.c): the ranks of the node's stage */
  else if (net->parallel == NET_PARALLEL_TENSOR)
    PetscCall(NetModelTensorComm_Private(net, &mcomm)); /* the tensor group */
  PetscCallMPI(MPI_Comm_size(mcomm, &size));
  PetscCallMPI(MPI_Comm_rank(mcomm, &rank));
  if (net->pl) comm = mcomm; /* only the node's stage sets it up: its refusals below are said by the stage's first rank */
  PetscCall(NetNodeSpec_Private(net, k, sizeof(spec), spec));
  if (isdense) PetscCall(LayerDenseGetTokens(layer, &tokens, NULL, NULL));
  if (isdense && !tokens) {
    nout = layer->outsize;
    nin  = layer->insize;
  } else if (isattn) { /* (T, E) -> (T, E): the heads' columns of E are what splits */
    nout = nin = layer->in.dim[layer->in.ndim - 1];
  } else if (isconv || tokens) { /* dense:N:tokens splits as a 1x1 convolution of its positions: W [N][E] */
    nout = layer->out.dim[layer->out.ndim - 1];
    nin  = layer->in.dim[layer->in.ndim - 1];
  }
  PetscCall(NetModelChoosePartition_Private(net, k, size, grid, nout, nin, p, &split));
  if (p[0] <= 0) PetscFunctionReturn(0); /* data parallel */

  /* what can be split, and how: each error names the node and says what to write instead */
  PetscCheck(isdense || isconv || split == NET_TENSOR_HEADS, comm, PETSC_ERR_SUP,
             "Node %s (%s) has partition %" PetscInt_FMT "x%" PetscInt_FMT
             ", but only dense, conv2d and conv3d layers can split their weights over ranks (and attention by heads with -net_parallel tensor): remove partition= from its entry (or -%spartition); the Net runs the other kinds data parallel",
             nd->name, spec, p[0], p[1], nd->prefix);
  if (split == NET_TENSOR_HEADS) {
    PetscInt H = 0;

    /* attention dropout splits too: the map is a hash of (global sample, head, i, j) and the whole layer's pass counter
       (attention.c), and the block of heads draws it at its global heads and, before each forward, its group's samples
       (LayerAttentionSetBlockOffset_C), with the whole layer's counter and frozen state */
    PetscReal pdrop = 0;

    PetscUseMethod(layer, "LayerAttentionGetHeads_C", (Layer, PetscInt *, PetscReal *), (layer, &H, &pdrop));
    PetscCheck(H % size == 0, comm, PETSC_ERR_ARG_INCOMP,
               "Node %s (%s) has %" PetscInt_FMT
               " heads, which -net_parallel tensor cannot split evenly over a tensor group of %d ranks: give the node a number of heads that %d divides (e.g. attention:%d), or make the group a divisor of %" PetscInt_FMT
               " with -net_tensor_ranks (which must also divide the number of ranks)",
               nd->name, spec, H, size, size, size, H);
    PetscCheck(layer->nparams == 4 * nout * nout + 4 * nout, comm, PETSC_ERR_PLIB, "Node %s (%s) has %" PetscInt_FMT " parameters, not the 4 E^2 + 4 E of attention (E = %" PetscInt_FMT ") whose layout the split by heads reads", nd->name, spec,
               layer->nparams, nout);
    taps = 1;
  }
  PetscCheck(!grid || (PetscInt64)p[0] * p[1] == size, comm, PETSC_ERR_ARG_INCOMP,
             "Node %s (%s) convolves the fields of a DMDA split into %d spatial group(s) of %d rank(s): partition %" PetscInt_FMT "x%" PetscInt_FMT " splits its channels over %" PetscInt64_FMT
             " ranks, but a convolution of the grid splits them over the groups (each group splits the points): write partition=PxQ with P*Q = %d (e.g. partition=%dx1), or give -net_spatial_groups %" PetscInt64_FMT,
             nd->name, spec, size, nranks / size, p[0], p[1], (PetscInt64)p[0] * p[1], size, size, (PetscInt64)p[0] * p[1]);
  PetscCheck((PetscInt64)p[0] * p[1] == size, comm, PETSC_ERR_ARG_INCOMP, /* in 64 bits: 2147483647x2147483647 must not wrap to 1 */
             "Node %s (%s): partition %" PetscInt_FMT "x%" PetscInt_FMT " needs %" PetscInt64_FMT " ranks, but %s %d: write partition=PxQ with P*Q = %d (e.g. partition=%dx1), or run on %" PetscInt64_FMT " ranks%s", nd->name, spec, p[0], p[1],
             (PetscInt64)p[0] * p[1], net->pl ? "its pipeline stage runs on" : "the Net runs on", size, size, size, net->pl ? (PetscInt64)p[0] * p[1] * (nranks / size) : (PetscInt64)p[0] * p[1],
             net->pl ? " (-net_stages times the partition's ranks)" : "");
  PetscCheck(p[0] <= nout, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "Node %s (%s): partition %" PetscInt_FMT "x%" PetscInt_FMT " splits its %" PetscInt_FMT " output%s %" PetscInt_FMT " ways: give at most %" PetscInt_FMT " parts along the outputs (partition=PxQ with P <= %" PetscInt_FMT ", P*Q = %d)",
             nd->name, spec, p[0], p[1], nout, isconv ? " channels" : "s", p[0], nout, nout, size);
  PetscCheck(p[1] <= nin, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "Node %s (%s): partition %" PetscInt_FMT "x%" PetscInt_FMT " splits its %" PetscInt_FMT " input%s %" PetscInt_FMT " ways: give at most %" PetscInt_FMT " parts along the inputs (partition=PxQ with Q <= %" PetscInt_FMT ", P*Q = %d)",
             nd->name, spec, p[0], p[1], nin, isconv ? " channels" : "s", p[1], nin, nin, size);
  if (isconv) {
    PetscInt  groups, kg, pixels;
    PetscBool bias;

    if (isconv3d)
      PetscCall(LayerConv3dGetPatchLayout(layer, &groups, &kg, &pixels, &bias));
    else
      PetscCall(LayerConv2dGetPatchLayout(layer, &groups, &kg, &pixels, &bias));
    PetscCheck(groups == 1, comm, PETSC_ERR_SUP, "Node %s (%s) is a grouped convolution (groups=%" PetscInt_FMT "), which model parallelism does not split: remove its partition, or use groups=1", nd->name, spec, groups);
    taps = kg / nin;
  }
  if (grid) { /* the box each rank convolves (the same in every group: the groups' DMDAs must split the grid alike) */
    PetscInt    nsd;
    PetscInt64  mine[6], lo[6], hi[6];
    PetscMPIInt differ = 0, any;

    PetscCall(NetSpatialGetBox_Private(net, k, &nsd, box, blk));
    for (PetscInt d = 0; d < 3; d++) {
      mine[d]     = d < nsd ? box[d] : 0;
      mine[d + 3] = d < nsd ? blk[d] : 0;
    }
    PetscCall(MPIU_Allreduce(mine, lo, 6, MPIU_INT64, MPI_MIN, mcomm));
    PetscCall(MPIU_Allreduce(mine, hi, 6, MPIU_INT64, MPI_MAX, mcomm));
    for (PetscInt d = 0; d < 6; d++) differ = differ || lo[d] != hi[d];
    PetscCall(MPIU_Allreduce(&differ, &any, 1, MPI_INT, MPI_LOR, comm));
    PetscCheck(!any, comm, PETSC_ERR_ARG_INCOMP,
               "Node %s (%s) splits its channels over the spatial groups, but the groups' DMDAs split the grid differently (a rank's block differs from its place in another group): give every group's DMDA the same ownership ranges", nd->name, spec);
  }

  PetscCall(PetscNew(&mp));
  mp->comm   = mcomm;
  mp->grid   = grid;
  mp->pout   = p[0];
  mp->pin    = p[1];
  mp->co     = rank / p[1];
  mp->ci     = rank % p[1];
  mp->nout   = nout;
  mp->nin    = nin;
  mp->taps   = taps;
  mp->size   = size;
  mp->bias   = (PetscBool)(layer->nparams > nout * taps * nin);
  mp->tensor = split;
  mp->heads  = (PetscBool)(split == NET_TENSOR_HEADS);
  if (mp->heads) {
    PetscUseMethod(layer, "LayerAttentionGetHeads_C", (Layer, PetscInt *, PetscReal *), (layer, &mp->nheads, NULL));
    mp->hblock = mp->nheads / p[0];
    mp->hstart = mp->co * mp->hblock;
  }
  NetModelBlock_Private(nout, p[0], mp->co, &mp->ostart, &mp->oblock);
  NetModelBlock_Private(nin, p[1], mp->ci, &mp->istart, &mp->iblock);
  PetscCall(PetscMalloc2(p[0], &mp->osizes, p[1], &mp->isizes));
  for (PetscInt c = 0, s; c < p[0]; c++) NetModelBlock_Private(nout, p[0], c, &s, &mp->osizes[c]);
  for (PetscInt c = 0, s; c < p[1]; c++) NetModelBlock_Private(nin, p[1], c, &s, &mp->isizes[c]);
  /* tensor shapes, samples first: dense is (N, F) whatever its input's shape; conv2d (N, H, W, C); conv3d (N, D, H, W, C);
     dense:N:tokens (N, ..., E), its input's shape; attention (N, T, E) */
  if (mp->heads) {
    mp->xndim = mp->yndim = layer->in.ndim + 1;
    for (PetscInt d = 0; d < layer->in.ndim; d++) mp->xdims[d + 1] = mp->ydims[d + 1] = layer->in.dim[d];
  } else if (tokens) {
    mp->xndim = layer->in.ndim + 1;
    mp->yndim = layer->out.ndim + 1;
    for (PetscInt d = 0; d < layer->in.ndim; d++) {
      mp->xdims[d + 1] = layer->in.dim[d];
      mp->ydims[d + 1] = layer->out.dim[d];
    }
  } else if (isdense) {
    mp->xndim = mp->yndim = 2;
    mp->xdims[1]          = nin;
    mp->ydims[1]          = nout;
  } else if (grid) { /* a sample is the box of one field: (box..., C_in) in, (output block..., C_out) out */
    mp->xndim = mp->yndim = sd + 2;
    for (PetscInt d = 0; d < sd; d++) {
      mp->xdims[d + 1] = box[d];
      mp->ydims[d + 1] = blk[d];
    }
    mp->xdims[sd + 1] = nin;
    mp->ydims[sd + 1] = nout;
  } else {
    mp->xndim = mp->yndim = sd + 2;
    for (PetscInt d = 0; d < sd + 1; d++) {
      mp->xdims[d + 1] = layer->in.dim[d];
      mp->ydims[d + 1] = layer->out.dim[d];
    }
  }
  nd->mp = mp; /* from here on, NetModelDestroyNode_Private() frees what follows */

  /* the local layer: the block sizes, the same settings otherwise; on the grid, batch mode on the box without padding
     (the padding is in the box), none where the rank's output block is empty (its box is, in every group) */
  if (!grid || box[0] > 0) {
    PetNetShape in = layer->in;

    PetscCall(LayerCreate(PETSC_COMM_SELF, &mp->local));
    PetscCall(LayerSetType(mp->local, NetModelKind_Private(layer)));
    PetscCall(LayerSetIndex(mp->local, layer->index));
    if (mp->heads) { /* the same attention on the whole x, with the rank's heads, writing a partial output */
      char args[256] = "";

      PetscTryTypeMethod(layer, getarguments, sizeof(args), args); /* heads, causal */
      PetscCall(LayerSetArguments(mp->local, args));
      PetscUseMethod(mp->local, "LayerAttentionSetHeadBlock_C", (Layer, Layer, PetscInt, PetscInt, PetscBool), (mp->local, layer, mp->hstart, mp->hblock, (PetscBool)(mp->co == 0)));
    } else if (isdense) {
      if (tokens)
        in.dim[in.ndim - 1] = mp->iblock; /* the positions stay, the last dimension is the block */
      else {
        in.ndim   = 1;
        in.dim[0] = mp->iblock;
      }
      PetscCall(LayerDenseSetTokens(mp->local, tokens));
      PetscCall(LayerDenseSetOutputSize(mp->local, mp->oblock));
      PetscCall(LayerDenseSetBias(mp->local, (PetscBool)(mp->bias && mp->ci == 0)));
    } else {
      char args[256] = "";

      PetscTryTypeMethod(layer, getarguments, sizeof(args), args); /* kernel, stride, padding, dilation */
      PetscCall(LayerSetArguments(mp->local, args));
      if (grid) {
        PetscInt zero[3] = {0, 0, 0};

        PetscUseTypeMethod(mp->local, setpadding, sd, zero);
        in.ndim = sd + 1;
        for (PetscInt d = 0; d < sd; d++) in.dim[d] = (PetscInt)box[d];
      }
      if (isconv3d) {
        PetscCall(LayerConv3dSetOutputChannels(mp->local, mp->oblock));
        PetscCall(LayerConv3dSetBias(mp->local, (PetscBool)(mp->bias && mp->ci == 0)));
      } else {
        PetscCall(LayerConv2dSetOutputChannels(mp->local, mp->oblock));
        PetscCall(LayerConv2dSetBias(mp->local, (PetscBool)(mp->bias && mp->ci == 0)));
      }
      in.dim[in.ndim - 1] = mp->iblock;
    }
    PetscCall(LayerSetInputShape(mp->local, &in));
    PetscCall(LayerSetTraining(mp->local, layer->training));
    PetscCall(LayerSetUp(mp->local));
    if (grid) {
      PetscBool ok = (PetscBool)(mp->local->out.ndim == sd + 1 && mp->local->out.dim[sd] == mp->oblock);

      for (PetscInt d = 0; d < sd; d++) ok = (PetscBool)(ok && mp->local->out.dim[d] == blk[d]);
      PetscCheck(ok, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the local copy of its layer on the rank's box does not compute the rank's output block", nd->name);
    }
  }

  /* attention's runs, in the local layer's order (PyTorch's nn.MultiheadAttention, E inputs, this rank's columns c0.. of
     the inner dim, cb = its heads times the head dim): in_proj_weight [3E][E], the rows of its block in each of Q, K, V;
     in_proj_bias [3E], the same; out_proj.weight [E][E], in each row the columns of its block; out_proj.bias [E] on the
     first rank of the group only */
  if (mp->heads) {
    const PetscInt E = nout, c0 = mp->ostart, cb = mp->oblock, wo = 3 * E * E + 3 * E;
    PetscInt       maxruns = 7 + E, nruns = 0, nplocal = 0;

    PetscCall(PetscMalloc2(maxruns, &nd->runstart, maxruns, &nd->runlen));
#define NetModelAddRun(start, len)                                      \
  do {                                                                  \
    PetscInt s_ = net->poff[k] + (start), l_ = (len);                   \
    if (nruns && nd->runstart[nruns - 1] + nd->runlen[nruns - 1] == s_) \
      nd->runlen[nruns - 1] += l_;                                      \
    else {                                                              \
      nd->runstart[nruns] = s_;                                         \
      nd->runlen[nruns++] = l_;                                         \
    }                                                                   \
    nplocal += l_;                                                      \
  } while (0)
    for (PetscInt q = 0; q < 3; q++) NetModelAddRun((q * E + c0) * E, cb * E);
    for (PetscInt q = 0; q < 3; q++) NetModelAddRun(3 * E * E + q * E + c0, cb);
    for (PetscInt o = 0; o < E; o++) NetModelAddRun(wo + o * E + c0, cb);
    if (mp->co == 0) NetModelAddRun(wo + E * E, E);
#undef NetModelAddRun
    PetscCheck(!mp->local || nplocal == mp->local->nparams, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the rank's heads have %" PetscInt_FMT " parameters but its local layer %" PetscInt_FMT, nd->name, nplocal, mp->local->nparams);
    nd->nruns   = nruns;
    nd->nplocal = nplocal;
    PetscFunctionReturn(0);
  }
  /* the runs of theta this rank's kernel reads, in its order: W[o][tap][in block] row by row, then b[out block] */
  {
    const PetscInt rowlen = taps * nin, nw = nout * rowlen;
    PetscInt       maxruns = mp->oblock * taps + 1, nruns = 0, nplocal = 0;

    PetscCall(PetscMalloc2(maxruns, &nd->runstart, maxruns, &nd->runlen));
    for (PetscInt o = mp->ostart; o < mp->ostart + mp->oblock; o++)
      for (PetscInt t = 0; t < taps; t++) {
        PetscInt start = net->poff[k] + o * rowlen + t * nin + mp->istart;

        if (nruns && nd->runstart[nruns - 1] + nd->runlen[nruns - 1] == start)
          nd->runlen[nruns - 1] += mp->iblock;
        else {
          nd->runstart[nruns] = start;
          nd->runlen[nruns++] = mp->iblock;
        }
        nplocal += mp->iblock;
      }
    if (mp->bias && mp->ci == 0) {
      PetscInt start = net->poff[k] + nw + mp->ostart;

      if (nd->runstart[nruns - 1] + nd->runlen[nruns - 1] == start)
        nd->runlen[nruns - 1] += mp->oblock;
      else {
        nd->runstart[nruns] = start;
        nd->runlen[nruns++] = mp->oblock;
      }
      nplocal += mp->oblock;
    }
    PetscCheck(!mp->local || nplocal == mp->local->nparams, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the rank's block has %" PetscInt_FMT " parameters but its local layer %" PetscInt_FMT, nd->name, nplocal, mp->local->nparams);
    nd->nruns   = nruns;
    nd->nplocal = nplocal;
  }
  if (tokens) mp->rows = layer->outsize / nout; /* the positions of a sample (T of (T, F)) */
  if (split == NET_TENSOR_ROW) PetscCall(NetModelKeepColumnBlock_Private(net, k));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetModelResetBatch_Private(NetModel *mp)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(mp->counts));
  PetscCall(MatDestroy(&mp->R));
  PetscCall(MatDestroy(&mp->S));
  PetscCall(PetNetLayoutDestroy(&mp->xss));
  PetscCall(PetNetLayoutDestroy(&mp->xmp));
  PetscCall(PetNetLayoutDestroy(&mp->ypart));
  PetscCall(PetNetLayoutDestroy(&mp->yss));
  PetscCall(VecDestroy(&mp->xv));
  PetscCall(VecDestroy(&mp->yv));
  PetscCall(VecDestroy(&mp->xtmp));
  PetscCall(VecDestroy(&mp->xmpv));
  PetscCall(VecDestroy(&mp->ympv));
  PetscCall(VecDestroy(&mp->dxmpv));
  PetscCall(VecDestroy(&mp->dympv));
  PetscCall(VecDestroy(&mp->dxdotmpv));
  mp->xmpvalid = PETSC_FALSE;
  mp->dyheld   = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelDestroyNode_Private(Net net, PetscInt k)
{
  NetNode  *nd = &net->nodes[k];
  NetModel *mp = (NetModel *)nd->mp;

  PetscFunctionBegin;
  if (nd->tblock) { /* an elementwise node on a kept column block: its copy of the layer and its sizes */
    NetModel *tb = (NetModel *)nd->tblock;

    PetscCall(LayerDestroy(&tb->local));
    PetscCall(PetscFree2(tb->osizes, tb->isizes));
    PetscCall(PetscFree(nd->tblock));
  }
  if (!mp) PetscFunctionReturn(0);
  PetscCall(NetModelResetBatch_Private(mp));
  PetscCall(LayerDestroy(&mp->local));
  PetscCall(PetscFree2(mp->osizes, mp->isizes));
  PetscCall(PetscFree(nd->mp));
  PetscCall(PetscFree2(nd->runstart, nd->runlen));
  nd->nruns   = 0;
  nd->nplocal = 0;
  PetscFunctionReturn(0);
}

/* A layout of the node's x or y over the grid: the last dim split along grid axis `axis` with `sizes` (NULL: not split,
   replicated over the whole grid), samples whole */
static PetscErrorCode NetModelGridLayout_Private(MPI_Comm comm, NetModel *mp, PetscInt ndim, const PetscInt64 dims[], PetscInt axis, const PetscInt sizes[], PetNetLayout *L)
{
  PetscMPIInt gdims[2] = {(PetscMPIInt)mp->pout, (PetscMPIInt)mp->pin};
  PetscInt64  s64[64], *s = s64;
  PetscInt    parts = axis ? mp->pin : mp->pout;

  PetscFunctionBegin;
  if (parts > 64) PetscCall(PetscMalloc1(parts, &s));
  for (PetscInt c = 0; c < parts && sizes; c++) s[c] = sizes[c];
  PetscCall(PetNetLayoutCreate(comm, L));
  PetscCall(PetNetLayoutSetShape(*L, ndim, dims));
  PetscCall(PetNetLayoutSetGrid(*L, 2, gdims));
  if (sizes) PetscCall(PetNetLayoutSetSplit(*L, ndim - 1, axis, s)); /* none: whole, replicated over the grid */
  PetscCall(PetNetLayoutSetUp(*L));
  if (s != s64) PetscCall(PetscFree(s));
  PetscFunctionReturn(0);
}

/*
  The layouts, operators and work Vecs for a batch of n samples on this rank (collective: rebuilt when any rank's n
  changed). want: which optional arrays (NET_MODEL_*) the caller passed; *have: the same decided for all ranks, since a
  rank without samples may see NULL for an empty array that the others have, and the data movement is collective.
*/
enum {
  NET_MODEL_DX  = 1, /* dx (backward, jvp) or xdot (sobackward) */
  NET_MODEL_DXD = 2  /* dxdot (sobackward) */
};

static PetscErrorCode NetModelSetUpBatch_Private(Net net, PetscInt k, PetscInt n, PetscInt want, PetscInt *have)
{
  NetModel *mp = (NetModel *)net->nodes[k].mp;
  MPI_Comm  comm;
  PetscInt *gathered, *counts, N = 0, xlocal, ylocal, mine[2] = {n, want};
  PetscBool same;

  PetscFunctionBegin;
  PetscCheck(mp, PetscObjectComm((PetscObject)net), PETSC_ERR_PLIB, "Node %s is not set up as a model-parallel node", net->nodes[k].name);
  mine[0] = n;
  comm    = mp->comm; /* the Net's ranks, or the groups' (a convolution of the grid: its samples are the fields' boxes) */
  /* the batch layout the counts were gathered for, with samples on every rank: then every rank's arrays are non-empty
     and what it passed is what all passed, with no exchange (the common case: every call of a training step) */
  if (mp->counts && mp->batchgen == net->batchgen && mp->nmin > 0) {
    PetscMPIInt rank;

    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    PetscCheck(n == mp->counts[rank], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s called with %" PetscInt_FMT " samples in a batch layout of %" PetscInt_FMT, net->nodes[k].name, n, mp->counts[rank]);
    if (have) *have = want;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscMalloc1(2 * mp->size, &gathered));
  PetscCall(PetscMalloc1(mp->size, &counts));
  PetscCallMPI(MPI_Allgather(mine, 2, MPIU_INT, gathered, 2, MPIU_INT, comm));
  if (have) *have = 0;
  for (PetscMPIInt r = 0; r < mp->size; r++) {
    counts[r] = gathered[2 * r];
    if (have && counts[r]) *have |= gathered[2 * r + 1];
  }
  PetscCall(PetscFree(gathered));
  mp->batchgen = net->batchgen;
  mp->nmin     = n;
  for (PetscMPIInt r = 0; r < mp->size; r++) mp->nmin = PetscMin(mp->nmin, counts[r]);
  same = (PetscBool)(mp->counts != NULL);
  for (PetscMPIInt r = 0; r < mp->size && same; r++) same = (PetscBool)(counts[r] == mp->counts[r]);
  if (same) {
    PetscCall(PetscFree(counts));
    PetscFunctionReturn(0);
  }
  PetscCall(NetModelResetBatch_Private(mp));
  mp->counts = counts;
  for (PetscMPIInt r = 0; r < mp->size; r++) N += counts[r];
  mp->N        = N;
  mp->xdims[0] = mp->ydims[0] = N;
  if (mp->keepout) { /* the kept column block has the size the store gave it */
    const PetscInt v = k + 1;

    PetscCheck(!net->ventries || !net->ventries[v] || net->ventries[v] == N * mp->rows * mp->oblock, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: a column block of %" PetscInt_FMT " samples in a store of %" PetscInt_FMT " entries", net->nodes[k].name,
               N, net->ventries[v]);
  }
  if (!mp->blockin) { /* x' = R x; a row node reading a kept block takes it as it is */
    PetscCall(PetNetLayoutCreateSampleSplit(comm, mp->xndim, mp->xdims, n, &mp->xss));
    PetscCall(NetModelGridLayout_Private(comm, mp, mp->xndim, mp->xdims, 1, mp->isizes, &mp->xmp)); /* inputs split over P_in, replicated over P_out */
    PetscCall(PetNetRedistributeCreate(mp->xss, mp->xmp, &mp->R));
    PetscCall(PetNetLayoutGetLocalSize(mp->xss, &xlocal));
    PetscCall(VecCreateMPIWithArray(comm, 1, xlocal, PETSC_DECIDE, NULL, &mp->xv));
  } else
    PetscCall(NetModelGridLayout_Private(comm, mp, mp->xndim, mp->xdims, 1, mp->isizes, &mp->xmp));
  PetscCall(NetModelGridLayout_Private(comm, mp, mp->yndim, mp->ydims, 0, mp->heads ? NULL : mp->osizes, &mp->ypart)); /* outputs split over P_out, partial over P_in (heads: whole, partial over all) */
  if (!mp->keepout) {                                                                                                  /* y = S y'; a column node keeping its block hands y' on as it is */
    PetscCall(PetNetLayoutCreateSampleSplit(comm, mp->yndim, mp->ydims, n, &mp->yss));
    PetscCall(PetNetSumReduceCreate(mp->ypart, mp->yss, &mp->S));
    PetscCall(PetNetLayoutGetLocalSize(mp->yss, &ylocal));
    PetscCall(VecCreateMPIWithArray(comm, 1, ylocal, PETSC_DECIDE, NULL, &mp->yv));
  }
  PetscCall(PetNetLayoutCreateVec(mp->xmp, &mp->xmpv));
  PetscCall(PetNetLayoutCreateVec(mp->ypart, &mp->ympv));
  PetscCall(VecDuplicate(mp->xmpv, &mp->dxmpv));
  PetscCall(VecDuplicate(mp->ympv, &mp->dympv));
  PetscFunctionReturn(0);
}

/* dst = R src (forward) or R^T src on the sample-split side, with the caller's array placed in the wrapper w */
static PetscErrorCode NetModelApply_Private(Mat A, PetscBool transpose, Vec w, const PetscScalar *array, Vec other, PetscBool wisinput)
{
  PetscFunctionBegin;
  PetscCall(VecPlaceArray(w, array));
  if (wisinput) {
    if (transpose)
      PetscCall(MatMultTranspose(A, w, other));
    else
      PetscCall(MatMult(A, w, other));
  } else {
    if (transpose)
      PetscCall(MatMultTranspose(A, other, w));
    else
      PetscCall(MatMult(A, other, w));
  }
  PetscCall(VecResetArray(w));
  PetscFunctionReturn(0);
}

/*
  The input move (isx: x' = R x, R^T on the way back) or the output move (y = S y', S^T back) of a node, with the caller's
  array: as NetModelApply_Private(), or, for the kept column block of an MLP pair (a row node's x, a column node's y),
  the identity, whose adjoint is the identity: the array is copied to or from the block Vec as it is.
*/
static PetscErrorCode NetModelMove_Private(NetModel *mp, PetscBool isx, PetscBool transpose, const PetscScalar *array, Vec other, PetscBool wisinput)
{
  PetscInt m;

  PetscFunctionBegin;
  if (!(isx ? mp->blockin : mp->keepout)) {
    PetscCall(NetModelApply_Private(isx ? mp->R : mp->S, transpose, isx ? mp->xv : mp->yv, array, other, wisinput));
    PetscFunctionReturn(0);
  }
  PetscCall(VecGetLocalSize(other, &m));
  if (wisinput) {
    PetscScalar *o;

    PetscCall(VecGetArrayWrite(other, &o));
    PetscCall(PetscArraycpy(o, array, m));
    PetscCall(VecRestoreArrayWrite(other, &o));
  } else {
    const PetscScalar *o;

    PetscCall(VecGetArrayRead(other, &o));
    PetscCall(PetscArraycpy((PetscScalar *)array, o, m));
    PetscCall(VecRestoreArrayRead(other, &o));
  }
  PetscFunctionReturn(0);
}

/* an elementwise node on the column block: its copy of the layer in the whole layer's mode (training, frozen) and, for
   dropout, at the block's places in the whole layer's mask (rows: the group's first sample's global index times T) */
static PetscErrorCode NetModelSyncBlock_Private(Net net, PetscInt k, NetModel *mp)
{
  Layer whole = net->layers[k];

  PetscFunctionBegin;
  PetscCall(LayerSetTraining(mp->local, whole->training));
  mp->local->frozen = whole->frozen;
  PetscTryMethod(mp->local, "LayerDropoutSetColumnBlock_C", (Layer, Layer, PetscInt, PetscInt, PetscInt64), (mp->local, whole, mp->nout, mp->ostart, mp->goff * mp->rows));
  PetscFunctionReturn(0);
}

/* x' = R x and y' = f_local(x'), the local linearization point, unless the last forward of this batch layout left them */
static PetscErrorCode NetModelLocalForward_Private(NetModel *mp, const PetscScalar *th, const PetscScalar *x)
{
  const PetscScalar *xl;
  PetscScalar       *yl;

  PetscFunctionBegin;
  PetscCall(NetModelMove_Private(mp, PETSC_TRUE, PETSC_FALSE, x, mp->xmpv, PETSC_TRUE));
  PetscCall(VecGetArrayRead(mp->xmpv, &xl));
  PetscCall(VecGetArrayWrite(mp->ympv, &yl));
  PetscCall(LayerForwardArray(mp->local, mp->N, th, xl, yl));
  PetscCall(VecRestoreArrayWrite(mp->ympv, &yl));
  PetscCall(VecRestoreArrayRead(mp->xmpv, &xl));
  mp->xmpvalid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  An elementwise node on the kept column block of an MLP pair (NetNode.tblock): x, y, dx, dy [N][T][F block], the N
  samples of the group (the store's entries, NetValueEntries()), its copy of the layer on them; no data movement
    forward y = f(x),  backward dx = f'(x) dy,  jvp dy = f'(x) dx,  sobackward dxdot += the curvature term
*/
static PetscErrorCode NetModelBlockGet_Private(Net net, PetscInt k, NetModel **tb, PetscInt *N)
{
  PetscInt e;

  PetscFunctionBegin;
  *tb = (NetModel *)net->nodes[k].tblock;
  PetscCheck(*tb, PetscObjectComm((PetscObject)net), PETSC_ERR_PLIB, "Node %s is not on the column block of an MLP pair", net->nodes[k].name);
  e  = net->ventries ? net->ventries[k + 1] : 0;
  *N = e / ((*tb)->rows * (*tb)->oblock);
  PetscCheck(*N * (*tb)->rows * (*tb)->oblock == e, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: a store of %" PetscInt_FMT " entries is no whole number of samples of its column block", net->nodes[k].name, e);
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelBlockForward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  NetModel *tb;
  PetscInt  N;

  PetscFunctionBegin;
  PetscCall(NetModelBlockGet_Private(net, k, &tb, &N));
  PetscCall(NetModelSyncBlock_Private(net, k, tb));
  PetscCall(LayerForwardArray(tb->local, N, th, x, y));
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelBlockBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth)
{
  NetModel *tb;
  PetscInt  N;

  PetscFunctionBegin;
  PetscCall(NetModelBlockGet_Private(net, k, &tb, &N));
  PetscCall(LayerBackwardArray(tb->local, N, th, x, y, dy, dx, dth));
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelBlockJVP_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy)
{
  NetModel *tb;
  PetscInt  N;

  PetscFunctionBegin;
  PetscCall(NetModelBlockGet_Private(net, k, &tb, &N));
  PetscCall(LayerJVPArray(tb->local, N, th, x, y, dx, dth, dy));
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelBlockSOBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thdot, const PetscScalar *ydot, const PetscScalar *dy,
                                               PetscScalar *dxdot, PetscScalar *dthdot)
{
  NetModel *tb;
  PetscInt  N;

  PetscFunctionBegin;
  PetscCall(NetModelBlockGet_Private(net, k, &tb, &N));
  PetscCall(LayerSOBackwardArray(tb->local, N, th, x, y, xdot, thdot, ydot, dy, dxdot, dthdot));
  PetscFunctionReturn(0);
}

/* NetView(): the block of an elementwise node on a kept column block (collective) */
PetscErrorCode NetModelBlockView_Private(Net net, PetscInt k, PetscViewer viewer)
{
  NetModel   *tb = (NetModel *)net->nodes[k].tblock;
  PetscMPIInt rank, nranks;

  PetscFunctionBegin;
  if (!tb) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &nranks));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer, "tensor parallel: %s over a group of %d rank%s (%d group%s)\n", NetTensorSplits[NET_TENSOR_BLOCK], tb->size, tb->size > 1 ? "s" : "", nranks / tb->size,
                                   nranks / tb->size > 1 ? "s, data parallel across them" : ""));
  PetscCall(PetscViewerASCIIPushSynchronized(viewer));
  PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "    [%d] columns %" PetscInt_FMT "..%" PetscInt_FMT " of %" PetscInt_FMT "\n", rank, tb->ostart, tb->ostart + tb->oblock - 1, tb->nout));
  PetscCall(PetscViewerFlush(viewer));
  PetscCall(PetscViewerASCIIPopSynchronized(viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*
  A pipeline stage's model node (netplace.c) runs on the rows of one micro-batch after another, which this node's last
  forward does not hold: its next step computes x' = R x and y' again (forget), and, when the micro-batches' rows differ
  (recount), gathers every rank's count again instead of trusting the cached ones. Both are decided alike on every rank
  of the stage (by the schedule and the batch, not by the rank's rows), since the gather and R are collective.
*/
PetscErrorCode NetModelNewRows_Private(Net net, PetscInt k, PetscBool recount)
{
  NetModel *mp = (NetModel *)net->nodes[k].mp;

  PetscFunctionBegin;
  PetscCheck(mp, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is not set up as a model-parallel node", net->nodes[k].name);
  mp->xmpvalid = PETSC_FALSE;
  mp->dyheld   = PETSC_FALSE;
  if (recount) mp->nmin = 0; /* NetModelSetUpBatch_Private() gathers the counts, and rebuilds only when they changed */
  PetscFunctionReturn(0);
}

/* a pipeline stage's step (netplace.c): the global index of the first sample of the rows the stage gathers, where an
   attention split by heads draws its dropout map (the local copy keeps it for a forward it runs again) */
PetscErrorCode NetModelSetSampleOffset_Private(Net net, PetscInt k, PetscInt64 g0)
{
  NetModel *mp = (NetModel *)net->nodes[k].mp;

  PetscFunctionBegin;
  PetscCheck(mp, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is not set up as a model-parallel node", net->nodes[k].name);
  if (!mp->heads) PetscFunctionReturn(0);
  mp->goff = g0;
  PetscUseMethod(mp->local, "LayerAttentionSetBlockOffset_C", (Layer, PetscInt64), (mp->local, g0));
  PetscFunctionReturn(0);
}

/* forward: y = S f_local(R x) */
PetscErrorCode NetModelForward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  NetModel *mp;

  PetscFunctionBegin;
  PetscCall(NetModelSetUpBatch_Private(net, k, n, 0, NULL));
  mp         = (NetModel *)net->nodes[k].mp;
  mp->dyheld = PETSC_FALSE;
  if (mp->heads) { /* the whole layer's mode, and its dropout map at the group's samples */
    PetscCall(LayerSetTraining(mp->local, net->layers[k]->training));
    PetscUseMethod(mp->local, "LayerAttentionSetBlockOffset_C", (Layer, PetscInt64), (mp->local, mp->goff));
  }
  PetscCall(NetModelLocalForward_Private(mp, th, x));
  PetscCall(NetModelMove_Private(mp, PETSC_FALSE, PETSC_FALSE, y, mp->ympv, PETSC_FALSE));
  PetscFunctionReturn(0);
}

/* backward: dy' = S^T dy; dx' = J_local^T dy', dth += local parameter part; dx = R^T dx' */
PetscErrorCode NetModelBackward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth)
{
  NetModel          *mp;
  const PetscScalar *xl, *yl, *dyl;
  PetscScalar       *dxl = NULL;
  PetscInt           have;

  PetscFunctionBegin;
  PetscCall(NetModelSetUpBatch_Private(net, k, n, dx ? NET_MODEL_DX : 0, &have));
  mp = (NetModel *)net->nodes[k].mp;
  if (!mp->xmpvalid) {
    PetscCheck(th, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the parameter part of a split backward without the linearization point of its forward", net->nodes[k].name);
    PetscCall(NetModelLocalForward_Private(mp, th, x));
  }
  /* the parameter part of the walk's split backward (netforward.c) reuses the dy' its input part moved: the split
     costs no data movement, and the node never holds its gathered parameters and its gradient block at once */
  if (!(net->nodes[k].bwdpart == 2 && mp->dyheld)) PetscCall(NetModelMove_Private(mp, PETSC_FALSE, PETSC_TRUE, dy, mp->dympv, PETSC_TRUE));
  mp->dyheld = (PetscBool)(net->nodes[k].bwdpart == 1);
  PetscCall(VecGetArrayRead(mp->xmpv, &xl));
  PetscCall(VecGetArrayRead(mp->ympv, &yl));
  PetscCall(VecGetArrayRead(mp->dympv, &dyl));
  if (have & NET_MODEL_DX) PetscCall(VecGetArrayWrite(mp->dxmpv, &dxl));
  PetscCall(LayerBackwardArray(mp->local, mp->N, th, xl, yl, dyl, dxl, dth));
  if (have & NET_MODEL_DX) PetscCall(VecRestoreArrayWrite(mp->dxmpv, &dxl));
  PetscCall(VecRestoreArrayRead(mp->dympv, &dyl));
  PetscCall(VecRestoreArrayRead(mp->ympv, &yl));
  PetscCall(VecRestoreArrayRead(mp->xmpv, &xl));
  if (have & NET_MODEL_DX) PetscCall(NetModelMove_Private(mp, PETSC_TRUE, PETSC_TRUE, dx, mp->dxmpv, PETSC_FALSE));
  PetscFunctionReturn(0);
}

/* jvp: dx' = R dx; dy' = J_local (dx', dth); dy = S dy' */
PetscErrorCode NetModelJVP_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy)
{
  NetModel          *mp;
  const PetscScalar *xl, *yl, *dxl = NULL;
  PetscScalar       *dyl;
  PetscInt           have;

  PetscFunctionBegin;
  PetscCall(NetModelSetUpBatch_Private(net, k, n, dx ? NET_MODEL_DX : 0, &have));
  mp         = (NetModel *)net->nodes[k].mp;
  mp->dyheld = PETSC_FALSE; /* dy' is overwritten below */
  if (!mp->xmpvalid) PetscCall(NetModelLocalForward_Private(mp, th, x));
  if (have & NET_MODEL_DX) {
    PetscCall(NetModelMove_Private(mp, PETSC_TRUE, PETSC_FALSE, dx, mp->dxmpv, PETSC_TRUE));
    PetscCall(VecGetArrayRead(mp->dxmpv, &dxl));
  }
  PetscCall(VecGetArrayRead(mp->xmpv, &xl));
  PetscCall(VecGetArrayRead(mp->ympv, &yl));
  PetscCall(VecGetArrayWrite(mp->dympv, &dyl));
  PetscCall(LayerJVPArray(mp->local, mp->N, th, xl, yl, dxl, dth, dyl)); /* zero when both tangents are */
  PetscCall(VecRestoreArrayWrite(mp->dympv, &dyl));
  PetscCall(VecRestoreArrayRead(mp->ympv, &yl));
  PetscCall(VecRestoreArrayRead(mp->xmpv, &xl));
  if (have & NET_MODEL_DX) PetscCall(VecRestoreArrayRead(mp->dxmpv, &dxl));
  PetscCall(NetModelMove_Private(mp, PETSC_FALSE, PETSC_FALSE, dy, mp->dympv, PETSC_FALSE));
  PetscFunctionReturn(0);
}

/*
  sobackward: the curvature term of the local layer with every tensor moved as in backward and jvp:
    dy' = S^T dy,  xdot' = R xdot;   dxdot' = local term, dthdot += local term;   dxdot += R^T dxdot'
  dense, conv2d and conv3d ignore ydot (their term is bilinear in (x, W) and dy), so the partial ydot' is not formed.
*/
PetscErrorCode NetModelSOBackward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thdot, const PetscScalar *ydot, const PetscScalar *dy,
                                          PetscScalar *dxdot, PetscScalar *dthdot)
{
  NetModel          *mp;
  const PetscScalar *xl, *yl, *dyl, *xdl = NULL;
  PetscScalar       *dxdl = NULL;
  PetscInt           have;

  PetscFunctionBegin;
  PetscCall(NetModelSetUpBatch_Private(net, k, n, (xdot ? NET_MODEL_DX : 0) | (dxdot ? NET_MODEL_DXD : 0), &have));
  mp         = (NetModel *)net->nodes[k].mp;
  mp->dyheld = PETSC_FALSE; /* dy' is overwritten below */
  if (!mp->xmpvalid) PetscCall(NetModelLocalForward_Private(mp, th, x));
  if (!mp->dxdotmpv) PetscCall(VecDuplicate(mp->xmpv, &mp->dxdotmpv));
  if (!mp->xtmp && !mp->blockin) PetscCall(VecDuplicate(mp->xv, &mp->xtmp)); /* with storage of its own */
  PetscCall(NetModelMove_Private(mp, PETSC_FALSE, PETSC_TRUE, dy, mp->dympv, PETSC_TRUE));
  if (have & NET_MODEL_DX) {
    PetscCall(NetModelMove_Private(mp, PETSC_TRUE, PETSC_FALSE, xdot, mp->dxmpv, PETSC_TRUE));
    PetscCall(VecGetArrayRead(mp->dxmpv, &xdl));
  }
  if (have & NET_MODEL_DXD) {
    PetscCall(VecZeroEntries(mp->dxdotmpv));
    PetscCall(VecGetArray(mp->dxdotmpv, &dxdl));
  }
  PetscCall(VecGetArrayRead(mp->xmpv, &xl));
  PetscCall(VecGetArrayRead(mp->ympv, &yl));
  PetscCall(VecGetArrayRead(mp->dympv, &dyl));
  PetscCall(LayerSOBackwardArray(mp->local, mp->N, th, xl, yl, xdl, thdot, NULL, dyl, dxdl, dthdot));
  PetscCall(VecRestoreArrayRead(mp->dympv, &dyl));
  PetscCall(VecRestoreArrayRead(mp->ympv, &yl));
  PetscCall(VecRestoreArrayRead(mp->xmpv, &xl));
  if (have & NET_MODEL_DX) PetscCall(VecRestoreArrayRead(mp->dxmpv, &xdl));
  if (have & NET_MODEL_DXD) {
    PetscCall(VecRestoreArray(mp->dxdotmpv, &dxdl));
    if (mp->blockin) { /* dxdot += dxdot' on the kept block (the identity's adjoint) */
      const PetscScalar *a;
      PetscInt           m;

      PetscCall(VecGetLocalSize(mp->dxdotmpv, &m));
      PetscCall(VecGetArrayRead(mp->dxdotmpv, &a));
      for (PetscInt i = 0; i < m; i++) dxdot[i] += a[i];
      PetscCall(VecRestoreArrayRead(mp->dxdotmpv, &a));
    } else {
      PetscCall(MatMultTranspose(mp->R, mp->dxdotmpv, mp->xtmp));
      PetscCall(VecPlaceArray(mp->xv, dxdot));
      PetscCall(VecAXPY(mp->xv, 1.0, mp->xtmp));
      PetscCall(VecResetArray(mp->xv));
    }
  }
  PetscFunctionReturn(0);
}

/*
  The adjoint identity of the data movement of every split node, on random Vecs of the current batch layout (the Net
  has seen a batch): R, the redistribution of the sample-split input to the blocks, and S, the sum-reduce of the partial
  outputs back, each |<A v, w> - <v, A^T w>| / (|A v| |w|). *err: the largest (0 when no node is split). Collective.
*/
PetscErrorCode NetModelTestOperators_Private(Net net, PetscRandom rnd, PetscReal *err)
{
  PetscFunctionBegin;
  *err = 0;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetModel *mp = (NetModel *)net->nodes[k].mp;

    if (!mp || !mp->xmpv) continue; /* not split, on the column block, or (a convolution of the grid) an empty box on this rank's xcomm */
    for (PetscInt op = 0; op < 2; op++) {
      Mat         A = op ? mp->S : mp->R;
      Vec         v, w, Av, Atw;
      PetscScalar a, b;
      PetscReal   na, nw;

      if (!A) continue; /* the identity of a kept column block (a row node's R, a column node's S) */
      PetscCall(MatCreateVecs(A, &v, &w));
      PetscCall(VecDuplicate(w, &Av));
      PetscCall(VecDuplicate(v, &Atw));
      PetscCall(VecSetRandom(v, rnd));
      PetscCall(VecSetRandom(w, rnd));
      PetscCall(MatMult(A, v, Av));
      PetscCall(MatMultTranspose(A, w, Atw));
      PetscCall(VecDot(Av, w, &a));
      PetscCall(VecDot(v, Atw, &b));
      PetscCall(VecNorm(Av, NORM_2, &na));
      PetscCall(VecNorm(w, NORM_2, &nw));
      *err = PetscMax(*err, PetscAbsScalar(a - b) / PetscMax(na * nw, PETSC_SMALL));
      PetscCall(VecDestroy(&v));
      PetscCall(VecDestroy(&w));
      PetscCall(VecDestroy(&Av));
      PetscCall(VecDestroy(&Atw));
    }
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, err, 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)net)));
  PetscFunctionReturn(0);
}

/* NetView() of a pipeline stage's split node (netplace.c): this rank's grid coordinates and block of W, a synchronized
   line (the caller pushes and flushes; a rank of another stage, without mp, prints nothing) */
PetscErrorCode NetModelViewStageBlock_Private(Net net, PetscInt k, PetscViewer viewer)
{
  NetModel   *mp = (NetModel *)net->nodes[k].mp;
  PetscMPIInt rank;

  PetscFunctionBegin;
  if (!mp) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  if (mp->heads) { /* a tensor stage's attention split by heads: its block of heads, not of W's rows */
    PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "    [%d] heads %" PetscInt_FMT "..%" PetscInt_FMT " of %" PetscInt_FMT " (%s), %" PetscInt_FMT " parameters\n", rank, mp->hstart, mp->hstart + mp->hblock - 1, mp->nheads,
                                                 NetTensorSplits[NET_TENSOR_HEADS], net->nodes[k].nplocal));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerASCIISynchronizedPrintf(
      viewer, "    [%d] grid %" PetscInt_FMT "x%" PetscInt_FMT " (%" PetscInt_FMT ",%" PetscInt_FMT "): W rows %" PetscInt_FMT "..%" PetscInt_FMT ", columns %" PetscInt_FMT "..%" PetscInt_FMT "%s%s, %" PetscInt_FMT " parameters\n", rank, mp->pout,
      mp->pin, mp->co, mp->ci, mp->ostart, mp->ostart + mp->oblock - 1, mp->istart, mp->istart + mp->iblock - 1, mp->taps > 1 ? " of each tap" : "", mp->bias && mp->ci == 0 ? " + bias" : "", net->nodes[k].nplocal));
  PetscFunctionReturn(0);
}

/* NetView(): the grid of node k, the data movement around it, and each rank's block of W (collective) */
PetscErrorCode NetModelViewNode_Private(Net net, PetscInt k, PetscViewer viewer)
{
  NetModel   *mp = (NetModel *)net->nodes[k].mp;
  PetscMPIInt rank;

  PetscFunctionBegin;
  if (!mp) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  if (mp->tensor) {
    PetscMPIInt nranks;

    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &nranks));
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "tensor parallel: %s over a group of %d rank%s (%d group%s)\n", NetTensorSplits[mp->tensor], mp->size, mp->size > 1 ? "s" : "", nranks / mp->size, nranks / mp->size > 1 ? "s, data parallel across them" : ""));
  }
  if (mp->heads) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "in:  sample-split -> all samples of the group, whole, on every rank (redistribute)\n"));
    PetscCall(PetscViewerASCIIPrintf(viewer, "out: sum-reduce of the heads' partial outputs over %" PetscInt_FMT " -> sample-split\n", mp->pout));
    PetscCall(PetscViewerASCIIPushSynchronized(viewer));
    PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "    [%d] heads %" PetscInt_FMT "..%" PetscInt_FMT " of %" PetscInt_FMT " (columns %" PetscInt_FMT "..%" PetscInt_FMT " of Q, K, V and out_proj)%s, %" PetscInt_FMT " parameters\n", rank,
                                                 mp->hstart, mp->hstart + mp->hblock - 1, mp->nheads, mp->ostart, mp->ostart + mp->oblock - 1, mp->co == 0 ? " + out_proj.bias" : "", net->nodes[k].nplocal));
    PetscCall(PetscViewerFlush(viewer));
    PetscCall(PetscViewerASCIIPopSynchronized(viewer));
    PetscCall(PetscViewerASCIIPopTab(viewer));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "model parallel: weights on a %" PetscInt_FMT "x%" PetscInt_FMT " grid (P_out x P_in)%s\n", mp->pout, mp->pin, net->nodes[k].partition[0] ? "" : (mp->tensor ? "" : ", the -net_parallel model default")));
  if (mp->grid) PetscCall(PetscViewerASCIIPrintf(viewer, "across the %d spatial groups (the ranks holding the same block in each): a sample is the halo'ed box of one field, convolved without padding\n", mp->size));
  if (mp->blockin)
    PetscCall(PetscViewerASCIIPrintf(viewer, "in:  the column block of its MLP pair as it is (all samples of the group, the rank's columns: no redistribution)\n"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "in:  sample-split -> all samples, %s split %" PetscInt_FMT " way%s, replicated %" PetscInt_FMT "x (redistribute)\n", mp->xndim > 2 ? "channels" : "features", mp->pin, mp->pin > 1 ? "s" : "", mp->pout));
  if (mp->keepout)
    PetscCall(PetscViewerASCIIPrintf(viewer, "out: kept as the column block for the row-parallel node of its MLP pair (no gather)\n"));
  else if (mp->pin > 1)
    PetscCall(PetscViewerASCIIPrintf(viewer, "out: sum-reduce over %" PetscInt_FMT " -> sample-split\n", mp->pin));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "out: redistribute -> sample-split (no sum: P_in = 1)\n"));
  PetscCall(PetscViewerASCIIPushSynchronized(viewer));
  PetscCall(PetscViewerASCIISynchronizedPrintf(
      viewer, "    [%d] (%" PetscInt_FMT ",%" PetscInt_FMT "): W block %" PetscInt_FMT " x %" PetscInt_FMT " (rows %" PetscInt_FMT "..%" PetscInt_FMT ", columns %" PetscInt_FMT "..%" PetscInt_FMT "%s)%s, %" PetscInt_FMT " parameters\n", rank, mp->co,
      mp->ci, mp->oblock, mp->taps * mp->iblock, mp->ostart, mp->ostart + mp->oblock - 1, mp->istart, mp->istart + mp->iblock - 1, mp->taps > 1 ? " of each tap" : "", mp->bias && mp->ci == 0 ? " + bias" : "", net->nodes[k].nplocal));
  PetscCall(PetscViewerFlush(viewer));
  PetscCall(PetscViewerASCIIPopSynchronized(viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*
  Partitions are the node's, not the layer's: the field partition=PxQ of a node's entry (netspec.c calls
  NetParsePartition_Private()), the option -<node prefix>partition (NetSetFromOptions()) and NetSetNodePartition() set
  NetNode.partition; NetGetSpec() writes it back after the layer's own text.
*/

/* "PxQ" (two positive integers) into p[2]; what names the text in the error (the entry, or the option) */
PetscErrorCode NetParsePartition_Private(Net net, const char text[], const char what[], PetscInt p[2])
{
  char *end;
  long  pout, pin = 0;

  PetscFunctionBegin;
  pout = strtol(text, &end, 10);
  if (end != text && (*end == 'x' || *end == 'X')) {
    const char *second = end + 1;

    pin = strtol(second, &end, 10);
    if (end == second) pin = 0;
  }
  PetscCheck(pout > 0 && pin > 0 && !*end && pout <= PETSC_MAX_INT && pin <= PETSC_MAX_INT, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
             "Malformed partition \"%s\" in %s: write P_OUTxP_IN, two positive integers whose product is the number of ranks (for a convolution in grid mode: the number of spatial groups), e.g. partition=2x1 (weights split 2 ways along the outputs) "
             "or -<prefix>partition 1x2",
             text, what);
  p[0] = (PetscInt)pout;
  p[1] = (PetscInt)pin;
  PetscFunctionReturn(0);
}

/*
  Takes the field partition=PxQ out of a node's entry "kind:args" (args is changed in place; p[] is 0x0 without it).
  Not inside nested layer lists (an ode's "T|dense:16,tanh"): those are the kind's own text.
*/
PetscErrorCode NetTakePartition_Private(Net net, const char type[], char args[], PetscInt p[2])
{
  char *start = args;

  PetscFunctionBegin;
  p[0] = p[1] = 0;
  if (!args || strpbrk(args, ",|(")) PetscFunctionReturn(0);
  while (start && *start) {
    char *next = strchr(start, ':');

    if (!strncmp(start, "partition=", 10)) {
      char   what[512], value[64];
      size_t n = next ? (size_t)(next - start) : strlen(start);

      PetscCall(PetscSNPrintf(what, sizeof(what), "\"%s:%s\"", type, args));
      PetscCall(PetscStrncpy(value, start + 10, PetscMin(sizeof(value), n - 10 + 1)));
      PetscCall(NetParsePartition_Private(net, value, what, p));
      if (next) { /* cut the field out, with its separator */
        PetscCall(PetscArraymove(start, next + 1, strlen(next + 1) + 1));
        continue;
      }
      if (start > args)
        start[-1] = 0;
      else
        start[0] = 0;
      break;
    }
    start = next ? next + 1 : NULL;
  }
  PetscFunctionReturn(0);
}

/* NetSetFromOptions(): -<node prefix>partition PxQ for each node, e.g. -layer3_partition 2x1 */
PetscErrorCode NetModelSetFromOptions_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode    *nd = &net->nodes[k];
    const char *prefix;
    char        text[64] = "", what[NET_MAX_NAME + 16];
    PetscBool   set;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)nd->layer, &prefix)); /* the Net's prefix, then the node's */
    if (nd->partition[0] > 0) PetscCall(PetscSNPrintf(text, sizeof(text), "%" PetscInt_FMT "x%" PetscInt_FMT, nd->partition[0], nd->partition[1]));
    PetscOptionsBegin(PetscObjectComm((PetscObject)net), prefix, "Net node options", "Net");
    PetscCall(PetscOptionsString("-partition", "P_OUTxP_IN: split the node's weights over a grid of ranks (model parallelism; dense, conv2d and conv3d)", "NetSetNodePartition", text, text, sizeof(text), &set));
    PetscOptionsEnd();
    if (set) {
      PetscInt p[2];

      PetscCall(PetscSNPrintf(what, sizeof(what), "-%spartition", prefix ? prefix : ""));
      PetscCall(NetParsePartition_Private(net, text, what, p));
      PetscCall(NetSetNodePartition(net, k, p[0], p[1]));
    }
  }
  PetscFunctionReturn(0);
}

/*@
  NetSetNodePartition - splits the weights of node k over a P_out x P_in grid of ranks (model parallelism, after
  DistDL / Hewett and Grady): each rank holds and computes with one block of the weights

  Logically collective

  Input Parameters:
+ net  - the Net, its layers given (NetSetLayers(), NetSetGraph(), NetAddLayer())
. k    - the node, 0 <= k < NetGetNumLayers() (NetGetLayerName() gives its name)
. pout - P_out, the number of parts of the outputs (dense: rows of W; conv2d, conv3d: output channels, the filters); 0 removes the partition
- pin  - P_in, the number of parts of the inputs (dense: columns of W; conv2d, conv3d: input channels, in every kernel tap)

  Options Database Key:
. -<node prefix>partition <PxQ> - the same, e.g. -layer3_partition 2x1 or -stem_partition 1x2 (NetSetFromOptions())

  Notes:
  The compact form is the field partition=PxQ of a node's entry, e.g. dense:8192:partition=2x1 in a layer list or a
  graph, which NetGetSpec() writes back. P_out * P_in must be the number of ranks of the Net, and neither may exceed
  the number of outputs or inputs it splits; only dense, conv2d and conv3d nodes can be split (NetSetUp() refuses others and
  names the node). The node's input arrives split by samples as every node's does; it is redistributed so that each
  rank holds all samples of its input block (replicated along P_out), multiplied by its weight block, and the partial
  outputs are summed over P_in and handed back split by samples. The rank at grid coordinates (i, j) is rank
  i P_in + j; the blocks are as even as possible, the first ones larger.

  In grid mode (NetSetGrid()) a conv2d or conv3d node convolves the fields of the DMDA, whose points each spatial
  group (NetSetSpatialGroups()) already splits over its ranks; its partition splits the channels over the G groups
  instead: P_out * P_in must be G, and the ranks holding the same spatial block in every group run the split on the
  box of the input their block reads (halo and padding included: the box of each field is one sample of the split), so
  a tensor is split over space inside a group and over channels across groups (DistDL's general partition). With one
  group a partition 1x1 is the plain spatial node. The other nodes of a grid-mode Net (dense, per grid point) split
  over all the ranks as in batch mode.

  A partition is honoured in every parallel mode of the Net (NetSetParallel()): the node is model parallel and the
  other nodes are replicated or sharded. With NET_PARALLEL_MODEL the dense, conv2d and conv3d nodes without a partition get
  P_out = the number of ranks, P_in = 1 (the input is only broadcast and the output only gathered, with no sum); a
  layer with fewer outputs than ranks gets the largest P_out that fits and the rest along its inputs, and one that fits
  no grid stays data parallel. In grid mode a convolution's default is P_out = G (none with one group). A partition is a choice of the run, not of the model: a model file (NetSave()) does not
  keep it, so that it loads on any number of ranks; give it again (options, this call) when loading. The partition of a
  Net that is set up can be changed: its parameters stay, and the next NetForward() reads them the new way.

  Level: intermediate

.seealso: `NetGetNodePartition()`, `NetSetParallel()`, `NetGetSpec()`, `NetView()`
@*/
PetscErrorCode NetSetNodePartition(Net net, PetscInt k, PetscInt pout, PetscInt pin)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(net, k, 2);
  PetscValidLogicalCollectiveInt(net, pout, 3);
  PetscValidLogicalCollectiveInt(net, pin, 4);
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes (give its layers first)", k, net->nlayers);
  PetscCheck(pout >= 0 && pin >= 0 && (pout > 0) == (pin > 0), PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
             "NetSetNodePartition() takes two positive parts (P_out, P_in) for node %s, e.g. 2 and 1, or 0 and 0 for none; not %" PetscInt_FMT " and %" PetscInt_FMT, net->nodes[k].name, pout, pin);
  if (pout == net->nodes[k].partition[0] && pin == net->nodes[k].partition[1]) PetscFunctionReturn(0);
  net->nodes[k].partition[0] = pout;
  net->nodes[k].partition[1] = pin;
  if (net->setupcalled) { /* as NetSetParallel(): the parameters and buffers stay, each node's layout is made anew */
    PetscCall(NetResetWorkspace_Private(net));
    PetscCall(NetSetUpParameterMaps_Private(net));
    PetscCall(NetSetUpFusion_Private(net));
    PetscCall(NetSetUpExecutors_Private(net));
  }
  PetscFunctionReturn(0);
}

/*@
  NetGetNodePartition - the P_out x P_in grid of ranks the weights of node k are split over

  Not collective

  Input Parameters:
+ net - the Net
- k   - the node, 0 <= k < NetGetNumLayers()

  Output Parameters:
+ pout - P_out (0 if the node has no partition of its own), or NULL
- pin  - P_in (0 if none), or NULL

  Note:
  A Net in model-parallel mode gives a default grid to the dense, conv2d and conv3d nodes without one; NetView() shows the grid
  each node runs on.

  Level: intermediate

.seealso: `NetSetNodePartition()`, `NetSetParallel()`
@*/
PetscErrorCode NetGetNodePartition(Net net, PetscInt k, PetscInt *pout, PetscInt *pin)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " nodes", k, net->nlayers);
  if (pout) *pout = net->nodes[k].partition[0];
  if (pin) *pin = net->nodes[k].partition[1];
  PetscFunctionReturn(0);
}

/*@
  NetSetTensorRanks - the number of ranks of a tensor group in tensor-parallel mode (-net_parallel tensor): the Net's
  ranks are cut into groups of P consecutive ranks, each group splits the attention and dense:N:tokens nodes over its
  ranks, and the groups are data-parallel replicas of each other

  Logically collective

  Input Parameters:
+ net - the Net
- P   - the ranks of a group, a divisor of the Net's number of ranks; 0 (the default): one group of all ranks

  Options Database Key:
. -net_tensor_ranks <P> - the same from the options

  Notes:
  Each group holds its own samples of the batch (the batch stays split by samples over all ranks); the ranks at the
  same place in every group hold the same block of each split node's weights and their gradients are summed across
  the groups, so the loss and the gradient are those of one rank. With P = 1 every node runs data parallel, with its
  parameters gathered just before it runs as in sharded mode. The value matters only in tensor mode
  (NetSetParallel()); a change on a Net that is set up lays it out anew at the next change of mode or partition.
  With pipeline stages (-net_stages) the groups are cut from each stage's ranks: P must divide the ranks of a stage
  (0: one group a stage).

  Level: intermediate

.seealso: `NetGetTensorRanks()`, `NetSetParallel()`, `NetSetNodePartition()`
@*/
PetscErrorCode NetSetTensorRanks(Net net, PetscInt P)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(net, P, 2);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  PetscCheck(P >= 0 && P <= size && (P == 0 || size % P == 0), PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
             "-net_tensor_ranks %" PetscInt_FMT " does not divide the %d ranks into equal tensor groups: give a divisor of %d (0: one group of all ranks)", P, size, size);
  if (P == net->tensorranks) PetscFunctionReturn(0);
  net->tensorranks = P;
  if (net->setupcalled && net->parallel == NET_PARALLEL_TENSOR) { /* as NetSetParallel(): each node's layout is made anew */
    PetscCall(NetResetWorkspace_Private(net));
    PetscCall(NetSetUpParameterMaps_Private(net));
    PetscCall(NetSetUpFusion_Private(net));
    PetscCall(NetSetUpExecutors_Private(net));
  }
  PetscFunctionReturn(0);
}

/*@
  NetGetTensorRanks - the number of ranks of a tensor group in tensor-parallel mode

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. P - the ranks of a group as set (0: one group of all ranks)

  Level: intermediate

.seealso: `NetSetTensorRanks()`, `NetSetParallel()`
@*/
PetscErrorCode NetGetTensorRanks(Net net, PetscInt *P)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidIntPointer(P, 2);
  *P = net->tensorranks;
  PetscFunctionReturn(0);
}
