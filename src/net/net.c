/* Net: lifecycle, options, set-up (shapes and parameters through the graph), viewing. The nodes come from netspec.c. */
#include <petnet/private/netimpl.h>
#include <unistd.h>

PETSC_INTERN PetscErrorCode NetDestroyLayers_Private(Net);

/*@
  NetCreate - creates a Net, a directed acyclic graph of layers with its parameters and Jacobians

  Collective

  Input Parameter:
. comm - the communicator over which batches and parameters are distributed

  Output Parameter:
. net - the new Net: no layers, no input shape, seed 0, training mode

  Notes:
  Give it layers, as a chain (NetSetLayers(), -net_layers) or as a graph of named nodes (NetSetGraph(), -net_graph),
  and the shape of one input sample (NetSetInputShape(), -net_input_shape); NetSetUp(), or the first call that needs
  the layout, lays it out and initialises the parameters.

  Level: beginner

.seealso: `NetSetLayers()`, `NetSetGraph()`, `NetSetInputShape()`, `NetSetFromOptions()`, `NetSetUp()`, `NetDestroy()`
@*/
PetscErrorCode NetCreate(MPI_Comm comm, Net *net)
{
  Net n;

  PetscFunctionBegin;
  PetscValidPointer(net, 2);
  PetscCall(NetInitializePackage());
  PetscCall(PetscHeaderCreate(n, NET_CLASSID, "Net", "Neural network", "Net", comm, NetDestroy, NetView));
  n->seed        = 0;
  n->training    = PETSC_TRUE;
  n->fuse        = PETSC_TRUE;
  n->bf16kernels = PETSC_TRUE;
  n->backend     = PetNetOneDNNAvailable() ? NET_BACKEND_ONEDNN : NET_BACKEND_NATIVE;
  n->loadnparams = -1;
  n->maxnparams  = -1;
  n->nlocal      = -1;
  n->ngroups     = 1;
  n->spoverlap   = PETSC_TRUE;
  n->gcomm       = MPI_COMM_NULL;
  n->xcomm       = MPI_COMM_NULL;
  n->scomm       = MPI_COMM_NULL;
  n->tcomm       = MPI_COMM_NULL;
  n->nglobal     = -1;
  *net           = n;
  PetscFunctionReturn(0);
}

/*@
  NetSetInputShape - sets the per-sample shape of the Net's input

  Logically collective

  Input Parameters:
+ net - the Net
- in  - the shape of one sample, channels last: (f), (h, w, c) or (d, h, w, c)

  Options Database Key:
. -net_input_shape <shape> - the same from the options, e.g. 784, 28x28x1 or 16x32x32x4 (NetSetFromOptions())

  Notes:
  A Net set up with another input shape is reset (NetReset()): the next NetSetUp() lays it out anew and draws new
  parameters. A shape with no dimension, more than `PETNET_MAX_DIM`, a dimension below 1 or more entries than a
  `PetscInt` holds is refused (`PetNetShapeCheck()`). NetDMDASetUp() sets the shape (dof) itself when none is set.

  Level: beginner

.seealso: `NetGetInputShape()`, `NetGetOutputShape()`, `NetSetUp()`, `PetNetShapeFromString()`
@*/
PetscErrorCode NetSetInputShape(Net net, const PetNetShape *in)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetNetShapeCheck(PetscObjectComm((PetscObject)net), in, "NetSetInputShape()"));
  if (net->setupcalled && !PetNetShapeEqual(&net->in, in)) PetscCall(NetReset(net));
  net->in = *in;
  PetscFunctionReturn(0);
}

/*@
  NetGetInputShape - gets the per-sample shape of the Net's input

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. in - the shape, channels last; ndim is 0 while none is set

  Level: intermediate

.seealso: `NetSetInputShape()`, `NetGetOutputShape()`
@*/
PetscErrorCode NetGetInputShape(Net net, PetNetShape *in)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *in = net->in;
  PetscFunctionReturn(0);
}

/*@
  NetGetOutputShape - gets the per-sample shape of the Net's output, that of its last node

  Collective (it sets the Net up if needed)

  Input Parameter:
. net - the Net, with its layers and input shape

  Output Parameter:
. out - the output shape, channels last

  Level: intermediate

.seealso: `NetGetInputShape()`, `NetSetUp()`, `NetCreateVecs()`, `LayerGetOutputShape()`
@*/
PetscErrorCode NetGetOutputShape(Net net, PetNetShape *out)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  if (net->nlayers)
    PetscCall(LayerGetOutputShape(net->layers[net->nlayers - 1], out));
  else
    *out = net->in;
  if (NetSequenceTokens_Private(net) > 1 && net->nlayers) out->dim[0] = NetSequenceTokens_Private(net); /* the last node's tokens, (1, C), make (T, C) */
  PetscFunctionReturn(0);
}

/*@
  NetSetTraining - chooses training mode (PETSC_TRUE, the default: dropout active, batch normalisation on batch
  statistics) or evaluation mode (PETSC_FALSE: dropout is the identity, batch normalisation uses its running
  statistics). The Trainer switches it around evaluations.

  Logically collective

  Input Parameters:
+ net      - the Net
- training - PETSC_TRUE for training mode, PETSC_FALSE for evaluation mode

  Notes:
  Sets the mode of every layer (LayerSetTraining()); an ode layer passes it on to its inner Net. The last forward pass
  is forgotten: call NetForward() again before NetBackward(), NetJVP() or the Jacobian shells.

  Level: intermediate

.seealso: `NetGetTraining()`, `LayerSetTraining()`, `NetForward()`
@*/
PetscErrorCode NetSetTraining(Net net, PetscBool training)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  net->training = training;
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerSetTraining(net->layers[l], training));
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  NetGetTraining - tells whether the Net is in training mode

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. training - PETSC_TRUE in training mode (the default), PETSC_FALSE in evaluation mode

  Level: intermediate

.seealso: `NetSetTraining()`
@*/
PetscErrorCode NetGetTraining(Net net, PetscBool *training)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *training = net->training;
  PetscFunctionReturn(0);
}

const char *const NetParallelTypes[] = {"replicated", "sharded", "model", "tensor", "sequence", "subgraph", "NetParallelType", "NET_PARALLEL_", NULL};

/*@
  NetSetParallel - chooses how the parameters and the work of the Net are spread over its ranks

  Logically collective

  Input Parameters:
+ net      - the Net
- parallel - `NET_PARALLEL_REPLICATED` (default): data parallel, every rank computes with a full copy of the
             parameters (fastest for small models); `NET_PARALLEL_SHARDED`: data parallel, but each node's parameters
             are gathered just before it runs and its gradient reduce-scattered into the owned slice, so that no rank
             holds all parameters at once (ZeRO stage 3); `NET_PARALLEL_MODEL`: dense, conv2d and conv3d nodes are split over
             all ranks (their weights over a P_out x P_in grid, see NetSetNodePartition()), the other nodes sharded;
             `NET_PARALLEL_TENSOR`: tensor parallelism as in Megatron-LM, the attention and dense:N:tokens nodes split
             over the ranks of a tensor group (NetSetTensorRanks()): attention by heads, an MLP pair dense:F:tokens,
             activation, dense:E:tokens as a column-parallel then a row-parallel dense; the other nodes sharded;
             `NET_PARALLEL_SEQUENCE`: the tokens of a sequence batch (input shape T or TxC) split over groups of
             ranks (NetSetSequenceRanks()), the parameters replicated (with -net_stages each stage is a group, its attention
             nodes' queries split by tokens); `NET_PARALLEL_SUBGRAPH`: the independent branches
             of a graph (nodes with no path between them, joined by add or concat) run at the same time on disjoint
             groups of ranks, the other nodes data parallel on all ranks (NetSetNodeRanks() places nodes by hand)

  Options Database Key:
. -net_parallel <replicated,sharded,model,tensor,sequence,subgraph> - the same from the options

  Notes:
  The results of the modes agree to round-off. The parameter Vec (NetGetParameters()) is the same distributed
  Vec in every mode, so optimizers, checkpoints and model files do not change. The mode of a Net that is set up can
  be changed: its parameters and layer buffers (batchnorm's running statistics) stay, and the next NetForward() reads
  them the new way. Sequence parallelism lays the nodes out on tokens instead of samples, and sub-graph parallelism
  places the nodes on groups of ranks: choose them before NetSetUp().
  See docs/manual/parallelism.md for what each mode runs and what it refuses.

  Level: intermediate

.seealso: `NetGetParallel()`, `NetSetNodePartition()`, `NetGetParameters()`, `NetSetSequenceRanks()`
@*/
PetscErrorCode NetSetParallel(Net net, NetParallelType parallel)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(net, parallel, 2);
  PetscCheck(parallel >= NET_PARALLEL_REPLICATED && parallel <= NET_PARALLEL_SUBGRAPH, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Unknown parallel mode %d: use replicated, sharded, model, tensor, sequence or subgraph",
             (int)parallel);
  if (parallel == net->parallel) PetscFunctionReturn(0);
  PetscCheck(!net->setupcalled || (parallel != NET_PARALLEL_SEQUENCE && net->parallel != NET_PARALLEL_SEQUENCE), PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER,
             "NetSetParallel(): the Net is set up with -net_parallel %s; sequence parallelism sets its nodes up on tokens instead of samples, so choose it (or leave it) before NetSetUp(): give -net_parallel %s with the other options",
             NetParallelTypes[net->parallel], NetParallelTypes[parallel]);
  PetscCheck(!net->setupcalled || (parallel != NET_PARALLEL_SUBGRAPH && net->parallel != NET_PARALLEL_SUBGRAPH), PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER,
             "NetSetParallel(): the Net is set up with -net_parallel %s; sub-graph parallelism places the nodes on groups of ranks, which lays out the parameters and values, so choose it (or leave it) before NetSetUp(): give -net_parallel %s with "
             "the other options",
             NetParallelTypes[net->parallel], NetParallelTypes[parallel]);
  net->parallel = parallel;
  if (net->setupcalled) { /* the parameters and layer buffers stay; where each node reads them from is laid out anew */
    PetscCall(NetResetWorkspace_Private(net));
    PetscCall(NetSetUpParameterMaps_Private(net)); /* decides which nodes are model parallel */
    PetscCall(NetSetUpFusion_Private(net));        /* which depends on that, and so does each node's executor */
    PetscCall(NetSetUpExecutors_Private(net));
  }
  PetscFunctionReturn(0);
}

/*@
  NetGetParallel - how the parameters and the work of the Net are spread over its ranks

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. parallel - the mode (see NetSetParallel())

  Level: intermediate

.seealso: `NetSetParallel()`
@*/
PetscErrorCode NetGetParallel(Net net, NetParallelType *parallel)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(parallel, 2);
  *parallel = net->parallel;
  PetscFunctionReturn(0);
}

/*@
  NetSetSeed - sets the seed of the parameter initialisation

  Logically collective

  Input Parameters:
+ net  - the Net
- seed - the seed of the sequential random stream from which every rank draws the whole parameter vector (default 0)

  Options Database Key:
. -net_seed <seed> - the same from the options (NetSetFromOptions())

  Notes:
  The seed is used by the next NetInitializeParameters(), which NetSetUp() calls: set it before the Net is set up, or
  call NetInitializeParameters() afterwards. The same seed gives the same parameters on any number of ranks. Dropout
  masks have their own seed (LayerDropoutSetSeed()).

  Level: intermediate

.seealso: `NetInitializeParameters()`, `NetSetFromOptions()`, `LayerDropoutSetSeed()`
@*/
PetscErrorCode NetSetSeed(Net net, unsigned long seed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  net->seed = seed;
  PetscFunctionReturn(0);
}

/*@
  NetGetNumLayers - gets the number of layers, the nodes of the Net's graph

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. n - the number of nodes; a residual(F|P) entry of a layer list counts as the nodes of F and P and the add node
      joining them

  Level: intermediate

.seealso: `NetGetLayer()`, `NetGetLayerName()`, `NetGetLayerInputs()`, `NetSetLayers()`
@*/
PetscErrorCode NetGetNumLayers(Net net, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *n = net->nlayers;
  PetscFunctionReturn(0);
}

/*@
  NetGetLayer - gets layer (node) i of the Net

  Not collective

  Input Parameters:
+ net - the Net
- i   - the node, 0 <= i < NetGetNumLayers(); nodes are in topological order and the last is the Net's output

  Output Parameter:
. layer - the layer (borrowed: the Net destroys it)

  Notes:
  Use it to change a kind's settings in code (e.g. LayerDenseSetInitialization()) before NetSetUp(). The layer knows
  nothing of the Net: its parameters are entries NetGetLayerParameterRange() of the Net's parameter Vec, and its
  Jacobians are the Net's (NetGetLayerJacobian(), NetGetLayerJacobianP()).

  Level: intermediate

.seealso: `NetGetNumLayers()`, `NetGetLayerName()`, `NetGetLayerInputs()`, `NetGetLayerParameterRange()`
@*/
PetscErrorCode NetGetLayer(Net net, PetscInt i, Layer *layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(i >= 0 && i < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", i, net->nlayers);
  *layer = net->layers[i];
  PetscFunctionReturn(0);
}

/*@C
  NetGetLayerName - the name of layer (node) i: "3" or "2.res.1" in a layer list, the node's own name in a graph. Its
  tensors are saved as <name>.weight, ... (PyTorch state_dict keys).

  Not collective

  Input Parameters:
+ net - the Net
- i   - the node, 0 <= i < NetGetNumLayers()

  Output Parameter:
. name - the name (borrowed)

  Level: intermediate

.seealso: `NetGetLayer()`, `NetGetLayerInputs()`, `NetSetGraph()`
@*/
PetscErrorCode NetGetLayerName(Net net, PetscInt i, const char **name)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(i >= 0 && i < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", i, net->nlayers);
  *name = net->nodes[i].name;
  PetscFunctionReturn(0);
}

/*@C
  NetGetLayerInputs - where the inputs of layer (node) i come from.

  Not collective

  Input Parameters:
+ net - the Net
- i   - the node

  Output Parameters:
+ nin - the number of inputs
- in  - the input nodes (borrowed), each before i; -1 stands for the Net's input

  Level: intermediate

.seealso: `NetGetLayerName()`, `NetSetGraph()`
@*/
PetscErrorCode NetGetLayerInputs(Net net, PetscInt i, PetscInt *nin, const PetscInt *in[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(i >= 0 && i < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", i, net->nlayers);
  if (nin) *nin = net->nodes[i].nin;
  if (in) *in = net->nodes[i].in;
  PetscFunctionReturn(0);
}

/* Every layer's prefix is the Net's followed by its node's own */
static PetscErrorCode NetPrefixLayers_Private(Net net)
{
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &prefix));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)net->layers[k], prefix));
    PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)net->layers[k], net->nodes[k].prefix));
  }
  PetscFunctionReturn(0);
}

/*@C
  NetSetOptionsPrefix - sets the prefix of all the Net's options (-<prefix>net_layers, ...) and of its layers'
  (-<prefix>layer0_dense_init, ...).

  Logically collective

  Input Parameters:
+ net    - the Net
- prefix - the prefix, without the leading '-'

  Level: intermediate

.seealso: `NetAppendOptionsPrefix()`, `NetGetOptionsPrefix()`, `NetSetFromOptions()`
@*/
PetscErrorCode NetSetOptionsPrefix(Net net, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)net, prefix));
  PetscCall(NetPrefixLayers_Private(net));
  PetscFunctionReturn(0);
}

/*@C
  NetAppendOptionsPrefix - appends to the prefix of the Net's options and of its layers'.

  Logically collective

  Input Parameters:
+ net    - the Net
- prefix - the text to append

  Level: intermediate

.seealso: `NetSetOptionsPrefix()`, `NetGetOptionsPrefix()`
@*/
PetscErrorCode NetAppendOptionsPrefix(Net net, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)net, prefix));
  PetscCall(NetPrefixLayers_Private(net));
  PetscFunctionReturn(0);
}

/*@C
  NetGetOptionsPrefix - the prefix of the Net's options.

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. prefix - the prefix (borrowed), or NULL

  Level: intermediate

.seealso: `NetSetOptionsPrefix()`
@*/
PetscErrorCode NetGetOptionsPrefix(Net net, const char *prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, prefix));
  PetscFunctionReturn(0);
}

/* A string option read whole, however long (PetscOptionsString() would cut it at its buffer's size) */
static PetscErrorCode NetGetLongOption_Private(Net net, const char name[], const char **value, PetscBool *set)
{
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &prefix));
  PetscCall(PetscOptionsFindPair(((PetscObject)net)->options, prefix, name, value, set));
  PetscCheck(!*set || (*value && (*value)[0]), PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Option -%s%s needs a value", prefix ? prefix : "", name + 1);
  PetscFunctionReturn(0);
}

/*@
  NetSetFromOptions - reads the Net's options, then each layer's.

  Collective

  Input Parameter:
. net - the Net

  Options Database Keys:
+ -net_layers <list>         - the layers as a chain, e.g. dense:256,relu,dense:10 (NetSetLayers())
. -net_graph <graph>         - the layers as a graph of named nodes (NetSetGraph())
. -net_input_shape <shape>   - the per-sample input shape, channels last: 784, 28x28x1 (HxWxC) or 16x32x32x4 (DxHxWxC)
. -net_seed <seed>           - the seed of the parameter initialisation
. -net_parallel <replicated,sharded,model> - how parameters and work are spread over the ranks (NetSetParallel())
. -net_spatial_groups <G> - grid mode: split the ranks into G groups, each holding its own fields (NetSetSpatialGroups())
. -net_spatial_overlap <bool> - grid mode: overlap the halo exchanges with computation (NetSetSpatialOverlap())
. -net_threads <n>           - threads of this process for the layers' loops (PetNetSetNumThreads(); default OMP_NUM_THREADS, else the cores over the ranks on the node)
. -net_forward_cache <n>     - keep the last n forward passes, handed back at an input seen before (NetSetForwardCache())
. -net_test_jacobian         - dot-product and finite-difference checks at the first forward pass
. -net_load <file>           - load architecture and parameters saved by NetSave() (replaces -net_layers)
. -net_save <file>           - save the final Net there (NetSaveFromOptions(): at the end of TrainerTrain(), or at NetDestroy() at the latest)
- -net_view [viewer]         - view the Net at set-up: the table of layers (ascii), or the model (binary, hdf5)

  Level: beginner

.seealso: `NetSetLayers()`, `NetSetGraph()`, `NetSetOptionsPrefix()`, `LayerSetFromOptions()`
@*/
PetscErrorCode NetSetFromOptions(Net net)
{
  char        list[4096] = "", shape[256] = "", load[PETSC_MAX_PATH_LEN] = "", save[PETSC_MAX_PATH_LEN] = "";
  PetscBool   flg, loadflg, saveflg;
  PetscInt    seed = (PetscInt)net->seed;
  const char *value;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->in.ndim) PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscObjectOptionsBegin((PetscObject)net);
  /* the lists are read whole: the help string shows at most the buffer, but nothing is ever cut */
  PetscCall(PetscOptionsString("-net_layers", "Comma-separated layer list, each kind or kind:args (e.g. dense:256,relu,dense:10)", "NetSetLayers", list, list, sizeof(list), NULL));
  PetscCall(PetscOptionsString("-net_graph", "Graph of named nodes: name = kind:args <- input, ...; (e.g. a = dense:16; b = relu; c = add <- b, a)", "NetSetGraph", list, list, sizeof(list), NULL));
  {
    const char *graph;
    PetscBool   gflg;

    PetscCall(NetGetLongOption_Private(net, "-net_layers", &value, &flg));
    PetscCall(NetGetLongOption_Private(net, "-net_graph", &graph, &gflg));
    PetscCheck(!flg || !gflg, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP, "Both -net_layers and -net_graph are given: give one (a layer list is a graph whose nodes form a chain)");
    if (flg) PetscCall(NetSetLayers(net, value));
    if (gflg) PetscCall(NetSetGraph(net, graph));
  }
  PetscCall(PetscOptionsString("-net_input_shape", "Per-sample input shape, channels last: 784, 28x28x1 (HxWxC) or 16x32x32x4 (DxHxWxC)", "NetSetInputShape", shape, shape, sizeof(shape), &flg));
  if (flg) {
    PetNetShape in;

    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetNetOptionsBoundedInt("-net_seed", "Seed of the parameter initialisation", "NetSetSeed", seed, &seed, NULL, 0));
  net->seed = (unsigned long)seed;
  {
    NetParallelType parallel = net->parallel;

    PetscCall(PetscOptionsEnum("-net_parallel", "How parameters and work are spread over the ranks", "NetSetParallel", NetParallelTypes, (PetscEnum)parallel, (PetscEnum *)&parallel, NULL));
    PetscCall(NetSetParallel(net, parallel));
  }
  {
    PetscInt  tranks = net->tensorranks;
    PetscBool flg;

    PetscCall(PetNetOptionsBoundedInt("-net_tensor_ranks", "Tensor parallelism: the ranks of a tensor group (0: all); the groups are data-parallel replicas", "NetSetTensorRanks", tranks, &tranks, &flg, 0));
    if (flg) PetscCall(NetSetTensorRanks(net, tranks));
  }
  {
    PetscInt  P = net->seqranks;
    PetscBool flg;

    PetscCall(PetNetOptionsBoundedInt("-net_sequence_ranks", "Sequence parallelism: ranks per group splitting the tokens (0: all)", "NetSetSequenceRanks", P, &P, &flg, 0));
    if (flg) PetscCall(NetSetSequenceRanks(net, P));
  }
  {
    PetscInt            S = PetscMax(1, net->nstages), M = PetscMax(1, net->nmicro);
    NetPipelineSchedule schedule = net->schedule;
    PetscBool           flg;

    PetscCall(PetNetOptionsBoundedInt("-net_stages", "Pipeline: stages of consecutive nodes, each on its own group of ranks (1: none)", "NetSetStages", S, &S, &flg, 1));
    if (flg) PetscCall(NetSetStages(net, S));
    PetscCall(PetNetOptionsBoundedInt("-net_microbatches", "Pipeline: micro-batches a batch is cut into (1: the whole batch at once)", "NetSetMicroBatches", M, &M, &flg, 1));
    if (flg) PetscCall(NetSetMicroBatches(net, M));
    PetscCall(PetscOptionsEnum("-net_pipeline_schedule", "Pipeline: the order of the micro-batches' passes", "NetSetPipelineSchedule", NetPipelineSchedules, (PetscEnum)schedule, (PetscEnum *)&schedule, &flg));
    if (flg) PetscCall(NetSetPipelineSchedule(net, schedule));
  }
  {
    PetscInt  groups = net->ngroups;
    PetscBool flg;

    PetscCall(PetNetOptionsBoundedInt("-net_spatial_groups", "Grid mode: groups of ranks, each holding its own fields (samples x space)", "NetSetSpatialGroups", groups, &groups, &flg, 1));
    if (flg) PetscCall(NetSetSpatialGroups(net, groups));
  }
  {
    PetscBool overlap = net->spoverlap;

    PetscCall(PetscOptionsBool("-net_spatial_overlap", "Grid mode: overlap the halo exchanges with computation", "NetSetSpatialOverlap", overlap, &overlap, NULL));
    PetscCall(NetSetSpatialOverlap(net, overlap));
  }
  {
    PetscInt  nthreads;
    PetscBool flg;

    PetscCall(PetNetGetNumThreads(&nthreads));
    PetscCall(PetNetOptionsBoundedInt("-net_threads", "Threads of this process for the layers' loops (the process's setting, shared by every Net; results do not depend on it)", "PetNetSetNumThreads", nthreads, &nthreads, &flg, 1));
    if (flg) PetscCall(PetNetSetNumThreads(nthreads));
  }
  {
    PetscInt nslots = net->fcachesize;

    PetscCall(PetNetOptionsBoundedInt("-net_forward_cache", "Earlier forward passes kept, handed back at an input seen before (0: none)", "NetSetForwardCache", nslots, &nslots, NULL, 0));
    PetscCall(NetSetForwardCache(net, nslots));
  }
  {
    NetPrecision precision = net->precision;

    PetscCall(PetscOptionsEnum("-net_precision", "Precision of the values and arithmetic inside the Net (parameters, gradients and public Vecs stay double)", "NetSetPrecision", NetPrecisions, (PetscEnum)precision, (PetscEnum *)&precision, NULL));
    PetscCall(NetSetPrecision(net, precision));
  }
  {
    NetBackend backend = net->backend;

    PetscCall(PetscOptionsEnum("-net_backend", "Who runs the float GEMMs of the layers at single and bfloat16 precision (onednn: oneDNN's matmul where it has a fast kernel, else native)", "NetSetBackend", NetBackends, (PetscEnum)backend,
                               (PetscEnum *)&backend, NULL));
    PetscCall(NetSetBackend(net, backend));
  }
  {
    PetscBool fuse = net->fuse;

    PetscCall(PetscOptionsBool("-net_fuse", "Fuse activations into the passes of their neighbours (the same results; false: every pass on its own)", "NetSetFusion", fuse, &fuse, NULL));
    PetscCall(NetSetFusion(net, fuse));
  }
  {
    PetscBool on = net->bf16kernels;

    PetscCall(PetscOptionsBool("-net_bfloat16_kernels", "At bfloat16, the layers with bfloat16 kernels (maxpool, flatten, gelu; dense and the convolutions on oneDNN) compute on the stored values themselves (the same results; false: on float copies)",
                               "NetSetBFloat16Kernels", on, &on, NULL));
    PetscCall(NetSetBFloat16Kernels(net, on));
  }
  PetscCall(PetscOptionsBool("-net_test_jacobian", "Run dot-product and finite-difference checks of the Jacobians at the first forward pass", "NetTestJacobian", net->testjacobian, &net->testjacobian, NULL));
  PetscCall(PetscOptionsString("-net_load", "Load architecture and parameters from a file written by NetSave() (replaces -net_layers)", "NetLoad", load, load, sizeof(load), &loadflg));
  PetscCall(PetscOptionsString("-net_save", "Save the final Net to this file (.h5: HDF5, else PETSc binary)", "NetSaveFromOptions", save, save, sizeof(save), &saveflg));
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)net, PetscOptionsObject));
  PetscOptionsEnd();
  if (saveflg) PetscCall(NetSetSaveFileFromOptions_Private(net, save));
  if (loadflg) PetscCall(NetLoad(net, load));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerSetFromOptions(net->layers[l]));
  PetscCall(NetModelSetFromOptions_Private(net)); /* -<node prefix>partition */
  PetscCall(NetPlaceSetFromOptions_Private(net)); /* -<node prefix>stage */
  /* an option that changed a layer's shape (e.g. -layer0_dense_outputs) reset that layer: lay the Net out anew */
  for (PetscInt l = 0; l < net->nlayers && net->setupcalled; l++)
    if (!net->layers[l]->setupcalled) PetscCall(NetReset(net));
  PetscFunctionReturn(0);
}

/* A shortcut that maps the shape in to out, for error messages: a strided 1x1 convolution, or a dense layer */
static PetscErrorCode NetShortcutHint_Private(const PetNetShape *in, const PetNetShape *out, size_t len, char hint[])
{
  PetscFunctionBegin;
  if (in->ndim == 3 && out->ndim == 3) {
    PetscInt sh = (in->dim[0] + out->dim[0] - 1) / out->dim[0], sw = (in->dim[1] + out->dim[1] - 1) / out->dim[1];

    if (sh == sw)
      PetscCall(PetscSNPrintf(hint, len, "conv2d:%" PetscInt_FMT ":1:%" PetscInt_FMT ":0", out->dim[2], sh));
    else
      PetscCall(PetscSNPrintf(hint, len, "conv2d:%" PetscInt_FMT ":1:%" PetscInt_FMT "x%" PetscInt_FMT ":0", out->dim[2], sh, sw));
  } else if (in->ndim == 4 && out->ndim == 4) {
    PetscInt s[3];

    for (PetscInt d = 0; d < 3; d++) s[d] = (in->dim[d] + out->dim[d] - 1) / out->dim[d];
    if (s[0] == s[1] && s[1] == s[2])
      PetscCall(PetscSNPrintf(hint, len, "conv3d:%" PetscInt_FMT ":1:%" PetscInt_FMT ":0", out->dim[3], s[0]));
    else
      PetscCall(PetscSNPrintf(hint, len, "conv3d:%" PetscInt_FMT ":1:%" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT ":0", out->dim[3], s[0], s[1], s[2]));
  } else if (out->ndim == 1)
    PetscCall(PetscSNPrintf(hint, len, "dense:%" PetscInt_FMT, out->dim[0]));
  else
    PetscCall(PetscStrncpy(hint, "P", len));
  PetscFunctionReturn(0);
}

/* The join k of a residual(F|P) entry: its branches must meet in one shape (in is the shape of the block's input) */
static PetscErrorCode NetCheckResidualShapes_Private(Net net, PetscInt k, const PetNetShape *in, const PetNetShape shapes[])
{
  MPI_Comm    comm     = PetscObjectComm((PetscObject)net);
  PetscBool   shortcut = PETSC_FALSE;
  const char *prefix;
  char        sin[64], sf[64], sp[64], spec[4096], hint[64], name[512];

  PetscFunctionBegin;
  if (PetNetShapeEqual(&shapes[0], &shapes[1])) PetscFunctionReturn(0);
  for (PetscInt j = 0; j < k; j++) shortcut = (PetscBool)(shortcut || (net->nodes[j].owner == k && net->nodes[j].branch == 1));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net->layers[k], &prefix));
  PetscCall(PetscSNPrintf(name, sizeof(name), "residual layer %" PetscInt_FMT " (options prefix -%s)", net->layers[k]->index, prefix ? prefix : ""));
  {
    size_t n = 0;

    spec[0] = 0;
    PetscCall(NetListSpec_Private(net, k, 0, sizeof(spec), spec, &n)); /* F, as NetGetSpec() writes it */
  }
  PetscCall(PetNetShapeToString(in, sizeof(sin), sin));
  PetscCall(PetNetShapeToString(&shapes[0], sizeof(sf), sf));
  PetscCall(NetShortcutHint_Private(in, &shapes[0], sizeof(hint), hint));
  PetscCheck(
      shortcut, comm, PETSC_ERR_ARG_SIZ,
      "%s: its block F = %s maps the input shape %s to %s, but y = x + F(x) needs F to keep the shape: change F (convolutions with stride 1 and padding K/2 keep it), or add a projection shortcut P after '|' for y = P(x) + F(x), e.g. residual(%s|%s)",
      name, spec, sin, sf, spec, hint);
  PetscCall(PetNetShapeToString(&shapes[1], sizeof(sp), sp));
  SETERRQ(comm, PETSC_ERR_ARG_SIZ, "%s: its block F = %s maps the input shape %s to %s, but its shortcut P maps it to %s: y = P(x) + F(x) needs the same shape from both; change P to give %s, e.g. %s", name, spec, sin, sf, sp, sf, hint);
}

/* The shape of what node k's input i carries */
static PetscErrorCode NetInputShape_Private(Net net, PetscInt in, PetNetShape *shape)
{
  PetscFunctionBegin;
  if (in == NET_INPUT)
    PetscCall(NetSequenceInputShape_Private(net, shape)); /* a token's in sequence mode */
  else
    PetscCall(LayerGetOutputShape(net->layers[in], shape));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckLayerSize_Private(Net net, PetscInt k, PetscInt64 *total, PetscInt *largest)
{
  MPI_Comm comm  = PetscObjectComm((PetscObject)net);
  Layer    layer = net->layers[k];
  char     spec[256];

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  PetscCheck(layer->nparams >= 0 && layer->nbuffers >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "Node %s (%s) reports %" PetscInt_FMT " parameters and %" PetscInt_FMT " buffer values: its sizes overflowed; make the layer or its input smaller",
             net->nodes[k].name, spec, layer->nparams, layer->nbuffers);
  *total += layer->nparams;
  PetscCheck(*total <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "The Net has %" PetscInt64_FMT " parameters up to node %s (%s, %" PetscInt_FMT " of them), more than a PetscInt holds (%" PetscInt_FMT
             "): make the large layers smaller (fewer outputs of dense layers, fewer channels, pooling before them)",
             *total, net->nodes[k].name, spec, layer->nparams, (PetscInt)PETSC_MAX_INT);
  if (net->loadnparams >= 0)
    PetscCheck(*total <= net->loadnparams, comm, PETSC_ERR_FILE_UNEXPECTED,
               "Model file %s holds %" PetscInt_FMT " parameters, but its architecture \"%.1000s\" has more (%" PetscInt64_FMT " up to node %s, %s): the file is corrupt or was written by an incompatible PetNet; save the model again", net->loadfile,
               net->loadnparams, net->loadspec, *total, net->nodes[k].name, spec);
  if (net->maxnparams >= 0)
    PetscCheck(*total <= net->maxnparams, comm, PETSC_ERR_FILE_UNEXPECTED,
               "The inner Net has more parameters (%" PetscInt64_FMT " up to node %s, %s) than the model file being read holds for it (%" PetscInt64_FMT "): the file is corrupt or was written by an incompatible PetNet; save the model again", *total,
               net->nodes[k].name, spec, net->maxnparams);
  if (layer->nparams > net->layers[*largest]->nparams) *largest = k;
  PetscFunctionReturn(0);
}

/* Sets up node k from its inputs' shapes (shapes: room for its inputs) and places its parameters after the previous nodes' */
static PetscErrorCode NetSetUpNode_Private(Net net, PetscInt k, PetNetShape shapes[], PetscInt64 *total, PetscInt *largest)
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nd->nin; i++) PetscCall(NetInputShape_Private(net, nd->in[i], &shapes[i]));
  if (nd->width) { /* the last dense of a transformer block's MLP gives back the block's width E */
    PetNetShape in;
    PetscInt    first = k;

    for (PetscInt j = k - 1; j >= 0; j--)
      if (net->nodes[j].block == nd->block) first = j;
    PetscCall(NetInputShape_Private(net, net->nodes[first].in[0], &in));
    PetscCall(LayerDenseSetOutputSize(net->layers[k], in.dim[in.ndim - 1]));
  }
  if (nd->residual) {
    PetNetShape in;

    PetscCall(NetSequenceInputShape_Private(net, &in));
    for (PetscInt j = 0; j < k; j++)
      if (net->nodes[j].owner == k && net->nodes[j].branch == 0) {
        PetscCall(NetInputShape_Private(net, net->nodes[j].in[0], &in));
        break;
      }
    PetscCall(NetCheckResidualShapes_Private(net, k, &in, shapes));
  }
  PetscCall(LayerSetInputShapes(net->layers[k], nd->nin, shapes));
  /* while a model file is read, what is left of its parameter count bounds this node (an inner Net checks it) */
  if (net->loadnparams >= 0)
    net->layers[k]->maxnparams = net->loadnparams - *total;
  else if (net->maxnparams >= 0)
    net->layers[k]->maxnparams = net->maxnparams - *total;
  else
    net->layers[k]->maxnparams = -1;
  net->layers[k]->fielddim = 0;
  if (net->vgrid) PetscCall(NetSpatialCheckNode_Private(net, k));
  /* its input lies on the grid: the layer is described at one point of the field (point form, layerimpl.h) */
  if (net->vgrid && net->vgrid[nd->in[0] + 1]) PetscCall(DMGetDimension(net->grid, &net->layers[k]->fielddim));
  PetscCall(LayerSetUp(net->layers[k]));
  PetscCall(NetCheckLayerSize_Private(net, k, total, largest));   /* 64-bit counts, before anything is allocated */
  if (net->vgrid) PetscCall(NetSpatialSetUpNode_Private(net, k)); /* the grid of its output, its box and local copy */
  PetscCall(NetSequenceSetUpNode_Private(net, k));                /* sequence mode: its form on tokens, or a refusal */
  net->poff[k + 1] = (PetscInt)*total;
  PetscFunctionReturn(0);
}

/* After node k's set-up: its parameter count is sane and the running total (64-bit) still fits a PetscInt; largest = the node with the most parameters so far */

/* The memory of this machine: its physical pages, or -net_max_memory <GB> when given */
static PetscErrorCode NetMemoryLimit_Private(Net net, PetscLogDouble *limit)
{
  long      pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  PetscReal gb = -1;

  PetscFunctionBegin;
  *limit = pages > 0 && size > 0 ? (PetscLogDouble)pages * (PetscLogDouble)size : PETSC_MAX_REAL;
  PetscCall(PetscOptionsGetReal(((PetscObject)net)->options, ((PetscObject)net)->prefix, "-net_max_memory", &gb, NULL));
  if (gb > 0) *limit = gb * 1e9;
  PetscFunctionReturn(0);
}

/*
  Refuses, collectively, to allocate bytes on each rank when the ranks sharing a machine would together need more than
  its memory (NetMemoryLimit_Private()): a clear error now rather than an out-of-memory error, or swapping, minutes
  later. largest names the node to shrink.
*/
PetscErrorCode NetCheckMemory_Private(Net net, PetscLogDouble bytes, PetscInt largest, const char what[])
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)net), node;
  PetscLogDouble local, most, limit;
  PetscMPIInt    nranks;
  char           spec[256];

  PetscFunctionBegin;
  PetscCall(NetMemoryLimit_Private(net, &limit));
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, &nranks));
  PetscCall(MPIU_Allreduce(&bytes, &local, 1, MPIU_PETSCLOGDOUBLE, MPIU_SUM, node));
  PetscCallMPI(MPI_Comm_free(&node));
  PetscCall(MPIU_Allreduce(&local, &most, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  if (most <= limit) PetscFunctionReturn(0);
  PetscCall(LayerGetSpec(net->layers[largest], sizeof(spec), spec));
  SETERRQ(comm, PETSC_ERR_ARG_OUTOFRANGE,
          "The Net's %s need %.3g GB on a machine (%d rank(s) on it), more than its %.3g GB of memory (-net_max_memory); the largest node is %s (%s, %" PetscInt_FMT " parameters, output of %" PetscInt_FMT " values per sample): make it smaller%s",
          what, most / 1e9, nranks, limit / 1e9, net->nodes[largest].name, spec, net->layers[largest]->nparams, net->layers[largest]->outsize, strcmp(what, "parameters") ? ", or use smaller batches (fewer samples per rank)" : "");
}

/*@
  NetSetUp - passes the shapes through the graph, lays out the parameters and initialises them. Idempotent.

  Collective

  Input Parameter:
. net - the Net, with its layers and input shape

  Options Database Key:
. -net_max_memory <GB> - the memory a machine offers the Net (default: its physical memory)

  Level: beginner

  Notes:
  Every node but the last must feed some node: a node whose output nobody uses is an error.

  Sizes are checked before anything is allocated: every shape, each layer's parameter count and their total must fit
  a `PetscInt` (computed in 64-bit arithmetic), and the parameters with their replicated copies (and, at the first
  NetForward() of a batch, the activations) of all ranks on a machine must fit in its memory. An error names the node
  to make smaller.

.seealso: `NetSetFromOptions()`, `NetReset()`, `NetInitializeParameters()`
@*/
PetscErrorCode NetSetUp(Net net)
{
  MPI_Comm     comm;
  PetNetShape *shapes;
  PetscInt     maxin = 1, largest = 0;
  PetscInt64   total;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->setupcalled) { /* unless a layer was reset since (e.g. LayerDenseSetOutputSize()): then lay the Net out anew */
    PetscBool stale = PETSC_FALSE;

    for (PetscInt k = 0; k < net->nlayers; k++) stale = (PetscBool)(stale || !net->layers[k]->setupcalled);
    if (!stale) PetscFunctionReturn(0);
    PetscCall(NetReset(net));
  }
  comm = PetscObjectComm((PetscObject)net);
  PetscCheck(net->nlayers > 0, comm, PETSC_ERR_ORDER, "The Net has no layers: give -net_layers (e.g. dense:128,relu,dense:10) or call NetSetLayers()");
  PetscCheck(net->in.ndim > 0, comm, PETSC_ERR_ORDER, "The Net has no input shape: give -net_input_shape (e.g. 784 or 28x28x1) or call NetSetInputShape()");
  /* how often each value is used: backward adds up the cotangents of a value used more than once */
  net->ninputuses = 0;
  for (PetscInt k = 0; k < net->nlayers; k++) net->nodes[k].nuses = 0;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    maxin = PetscMax(maxin, net->nodes[k].nin);
    for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
      if (net->nodes[k].in[i] == NET_INPUT)
        net->ninputuses++;
      else
        net->nodes[net->nodes[k].in[i]].nuses++;
    }
  }
  net->nodes[net->nlayers - 1].nuses++;
  for (PetscInt k = 0; k < net->nlayers - 1; k++)
    PetscCheck(net->nodes[k].nuses, comm, PETSC_ERR_ARG_WRONG, "Node %s (%s) feeds no other node and is not the Net's output (the last node, %s): use it as an input, or remove it", net->nodes[k].name, ((PetscObject)net->layers[k])->type_name,
               net->nodes[net->nlayers - 1].name);
  PetscCall(NetSpatialSetUpInput_Private(net));  /* grid mode: the input's grid, and the input shape (channels) */
  PetscCall(NetSequenceSetUpInput_Private(net)); /* sequence mode: the groups, the token split, a token's shape */
  PetscCall(PetscMalloc1(maxin, &shapes));
  PetscCall(PetscMalloc1(net->nlayers + 1, &net->poff));
  net->poff[0] = 0;
  total        = 0;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    PetscErrorCode ierr = NetSetUpNode_Private(net, k, shapes, &total, &largest);

    if (ierr) PetscCall(PetscFree(shapes));
    PetscCall(ierr);
  }
  PetscCall(PetscFree(shapes));
  net->nparams = net->poff[net->nlayers];
  if (net->loadnparams >= 0 && net->loadnparams != net->nparams) {
    char shape[64];

    PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
    SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED,
            "Model file %s holds %" PetscInt_FMT " parameters, but its architecture \"%.1000s\" on input shape %s has %" PetscInt_FMT ": the file is corrupt or was written by an incompatible PetNet; save the model again", net->loadfile,
            net->loadnparams, net->loadspec, shape, net->nparams);
  }
  PetscCall(NetPlaceSetUp_Private(net)); /* pipeline stages (netplace.c): which ranks run each node */
  /* replicated: theta (distributed), and on every rank theta_rep, grad_rep and dtheta_rep (placed: its stage's block);
     otherwise theta and a node's parameters with their gradient at a time. Refuse before allocating what the machine
     cannot hold. */
  {
    PetscMPIInt    size;
    PetscLogDouble bytes;

    PetscCallMPI(MPI_Comm_size(comm, &size));
    if (net->pl) { /* the rank's groups' block, and the owned share */
      PetscInt nrep;

      PetscCall(NetPlaceLocalParameters_Private(net, &nrep));
      bytes = sizeof(PetscScalar) * (3.0 * (PetscLogDouble)nrep + (PetscLogDouble)net->nparams / size);
      if (net->parallel == NET_PARALLEL_SHARDED) bytes += 2.0 * sizeof(PetscScalar) * (PetscLogDouble)net->layers[largest]->nparams; /* a node's gathered block and gradient */
    } else if (net->parallel == NET_PARALLEL_REPLICATED || net->parallel == NET_PARALLEL_SEQUENCE || net->parallel == NET_PARALLEL_SUBGRAPH)
      bytes = 3.0 * sizeof(PetscScalar) * (PetscLogDouble)net->nparams;
    else
      bytes = sizeof(PetscScalar) * ((PetscLogDouble)net->nparams / size + 2.0 * net->layers[largest]->nparams);
    PetscCall(NetCheckMemory_Private(net, bytes, largest, "parameters"));
  }
  {
    PetscInt nlocal = PETSC_DECIDE;

    if (net->pl) PetscCall(NetPlaceOwnedParameters_Private(net, &nlocal)); /* each stage's ranks own its nodes' parameters */
    PetscCall(VecCreateMPI(comm, nlocal, net->nparams, &net->theta));
  }
  PetscCall(PetscObjectSetName((PetscObject)net->theta, "parameters"));
  PetscCall(NetSetUpParameterMaps_Private(net));
  PetscCall(NetSetUpFusion_Private(net));
  PetscCall(NetSetUpExecutors_Private(net)); /* plain, model-parallel or spatial (netexec.c) */
  PetscCall(NetSetUpBackend_Private(net));   /* the layers' float GEMMs: native or oneDNN (netbackend.c) */
  net->setupcalled = PETSC_TRUE;
  PetscCall(NetInitializeParameters(net));
  PetscCall(NetViewFromOptions(net, NULL, "-net_view"));
  PetscFunctionReturn(0);
}

/* PETSC_TRUE if the nodes form a plain chain (each fed by the one before): NetView() then needs no inputs column */
static PetscBool NetIsChain_Private(Net net)
{
  for (PetscInt k = 0; k < net->nlayers; k++)
    if (net->nodes[k].nin != 1 || net->nodes[k].in[0] != k - 1) return PETSC_FALSE;
  return PETSC_TRUE;
}

/*@
  NetView - a table of the layers (nodes): index, spec, kind, output shape, parameters, and the total; for a graph also
  each node's name and inputs; for a model-parallel node its grid of ranks, the data movement around it and each
  rank's block of the weights. A binary or HDF5 viewer gets the model itself (NetWrite()). The first ASCII view of a
  program starts with the line of PetNetBLASView() (the BLAS, its core, the CPU's features).

  Collective

  Input Parameters:
+ net    - the Net
- viewer - an ASCII viewer (the table), a binary or HDF5 viewer (the model, as NetSave() writes it), or NULL for
           standard output; other viewer types are an error

  Options Database Keys:
+ -net_view [ascii,binary,hdf5][:file] - view at set-up (NetSetUp()): the architecture and the initial parameters
- -trainer_view_net [viewer]           - view the trained Net at the end of TrainerTrain()

  Notes:
  -net_view binary:net.petnet and -net_view hdf5:net.h5 write what NetSave() writes and NetLoad() (-net_load) reads,
  at set-up, before any training: the initial parameters (those of -net_load when a model was loaded). The trained
  model is written by -trainer_view_net binary:trained.petnet (or by NetSave()). Unlike NetSave(), a viewer writes in
  place, not atomically; a binary viewer from the options also writes its ".info" file.

  Level: beginner

.seealso: `NetViewFromOptions()`, `NetGetSpec()`
@*/
PetscErrorCode NetView(Net net, PetscViewer viewer)
{
  PetscBool isascii, chain;
  char      shape[64];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)net), &viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) {
    PetscBool isbinary, ishdf5;

    /* a binary or HDF5 viewer gets the model itself, as PETSc's objects write themselves to those viewers */
    PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERBINARY, &isbinary));
    PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERHDF5, &ishdf5));
    PetscCheck(isbinary || ishdf5, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
               "NetView() cannot write a Net to a %s viewer: use ascii (the table of layers), binary or hdf5 (the model, as NetSave()), e.g. -net_view binary:net.petnet or -net_view hdf5:net.h5", ((PetscObject)viewer)->type_name);
    PetscCall(NetWrite(net, viewer));
    PetscFunctionReturn(0);
  }
  { /* the BLAS and the CPU, once per program, above the first table: what the Net's GEMMs run on (tests/numdiff
       skips the line, which depends on the machine) */
    static PetscBool blasviewed = PETSC_FALSE;

    if (!blasviewed) PetscCall(PetNetBLASView(viewer));
    blasviewed = PETSC_TRUE;
  }
  { /* as PetscObjectPrintClassNamePrefixType(), without its "type not yet set": a Net has no type */
    const char *prefix, *name = ((PetscObject)net)->name;
    PetscMPIInt size;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &prefix));
    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
    PetscCall(PetscViewerASCIIPrintf(viewer, "Net Object:%s%s%s%s%s %d MPI process%s\n", name ? " " : "", name ? name : "", prefix ? " (" : "", prefix ? prefix : "", prefix ? ")" : "", size, size > 1 ? "es" : ""));
  }
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  chain = NetIsChain_Private(net);
  PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " layers%s, input shape %s\n", net->nlayers, chain ? "" : " in a graph", net->in.ndim ? shape : "(not set)"));
  if (chain)
    PetscCall(PetscViewerASCIIPrintf(viewer, "%5s  %-24s %-10s %-14s %10s\n", "layer", "spec", "kind", "output", "parameters"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "%5s  %-14s %-24s %-10s %-26s %-14s %10s\n", "layer", "name", "spec", "kind", "inputs", "output", "parameters"));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer     layer = net->layers[l];
    LayerType type;
    char      spec[256], inputs[256] = "", nparams[32] = "?";

    PetscCall(LayerGetType(layer, &type));
    PetscCall(NetNodeSpec_Private(net, l, sizeof(spec), spec)); /* with its partition */
    PetscCall(PetscStrncpy(shape, "?", sizeof(shape)));
    if (layer->setupcalled) {
      PetscCall(PetNetShapeToString(&layer->out, sizeof(shape), shape));
      PetscCall(PetscSNPrintf(nparams, sizeof(nparams), "%" PetscInt_FMT, layer->nparams));
    }
    if (chain)
      PetscCall(PetscViewerASCIIPrintf(viewer, "%5" PetscInt_FMT "  %-24s %-10s %-14s %10s\n", l, spec, type, shape, nparams));
    else {
      for (PetscInt i = 0; i < net->nodes[l].nin; i++) {
        PetscInt in = net->nodes[l].in[i];

        if (i) PetscCall(PetscStrlcat(inputs, ",", sizeof(inputs)));
        PetscCall(PetscStrlcat(inputs, in == NET_INPUT ? "input" : net->nodes[in].name, sizeof(inputs)));
      }
      PetscCall(PetscViewerASCIIPrintf(viewer, "%5" PetscInt_FMT "  %-14s %-24s %-10s %-26s %-14s %10s\n", l, net->nodes[l].name, spec, type, inputs, shape, nparams));
    }
    if (net->setupcalled) PetscCall(net->nodes[l].exec->view(net, l, viewer)); /* a model-parallel node: its grid and blocks; a spatial node: its grids */
    if (net->setupcalled) PetscCall(NetFuseViewNode_Private(net, l, viewer));  /* an activation fused into its neighbours */
  }
  if (net->setupcalled) PetscCall(PetscViewerASCIIPrintf(viewer, "total parameters %" PetscInt_FMT "\n", net->nparams));
  if (net->setupcalled) PetscCall(NetSequenceView_Private(net, viewer)); /* sequence mode: the token split */
  if (net->setupcalled) PetscCall(NetPlaceView_Private(net, viewer));    /* pipeline: the stages, their cost */
  if (net->setupcalled) {                                                /* the engine (netexec.c, netprecision.c): how each node runs, where the values live */
    const NetExecOps *kinds[]   = {&NetExecPlain, &NetExecModel, &NetExecSpatial, &NetExecSpatialModel, &NetExecSequence, &NetExecTensorBlock, &NetExecPlaced, &NetExecPlacedSplit, &NetExecPlacedSequence, &NetExecPlacedSpatial};
    char              text[256] = "";
    PetscInt         *kind;

    /* each node's table; a placed node split over its stage has the split one on its stage's ranks only (the others
       hold no block of it): the largest index over the ranks, so that every rank counts the nodes alike */
    PetscCall(PetscMalloc1(net->nlayers, &kind));
    for (PetscInt l = 0; l < net->nlayers; l++)
      for (size_t e = 0; e < PETSC_STATIC_ARRAY_LENGTH(kinds); e++)
        if (net->nodes[l].exec == kinds[e]) kind[l] = (PetscInt)e;
    if (net->pl) PetscCall(MPIU_Allreduce(MPI_IN_PLACE, kind, net->nlayers, MPIU_INT, MPI_MAX, PetscObjectComm((PetscObject)net)));
    for (size_t e = 0; e < PETSC_STATIC_ARRAY_LENGTH(kinds); e++) {
      PetscInt count = 0;
      char     part[64];

      for (PetscInt l = 0; l < net->nlayers; l++)
        if (kind[l] == (PetscInt)e) count++;
      if (!count) continue;
      PetscCall(PetscSNPrintf(part, sizeof(part), "%s%s %" PetscInt_FMT " (computing in %s)", text[0] ? ", " : "", kinds[e]->name, count, NetStore(net)->compute == NET_ELEM_FLOAT && kinds[e]->floatok ? "float" : "double"));
      PetscCall(PetscStrlcat(text, part, sizeof(text)));
    }
    PetscCall(PetscFree(kind));
    PetscCall(PetscViewerASCIIPrintf(viewer, "executors: %s; values stored in %s\n", text, NetPrecisions[net->precision]));
  }
  if (net->precision != NET_PRECISION_DOUBLE) {
    PetscInt es, entries = 0;

    PetscCall(NetPrecisionBytes_Private(net, &es));
    for (PetscInt l = 0; l < net->nlayers && net->setupcalled; l++) entries += NetNodeStoredArrays(net, l) * net->layers[l]->outsize;
    PetscCall(PetscViewerASCIIPrintf(viewer, "precision %s: values and their derivatives %" PetscInt_FMT " bytes per sample (%" PetscInt_FMT " in double; parameters and gradients double)\n", NetPrecisions[net->precision], es * entries,
                                     (PetscInt)sizeof(PetscScalar) * entries));
    PetscCall(NetBackendView_Private(net, viewer)); /* the float GEMMs' backend (netbackend.c) */
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@C
  NetViewFromOptions - views the Net with NetView() if the option name asks for it (PetscObjectViewFromOptions())

  Collective

  Input Parameters:
+ net  - the Net
. obj  - an object whose options prefix is used, or NULL for the Net's own
- name - the option, e.g. "-net_view"

  Options Database Key:
. -net_view [viewer] - NetSetUp() calls NetViewFromOptions(net, NULL, "-net_view")

  Level: intermediate

.seealso: `NetView()`, `NetSetUp()`
@*/
PetscErrorCode NetViewFromOptions(Net net, PetscObject obj, const char name[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscObjectViewFromOptions((PetscObject)net, obj, name));
  PetscFunctionReturn(0);
}

PetscErrorCode NetResetWorkspace_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetForwardCacheReset_Private(net));
  PetscCall(NetStoreLow.reset(net)); /* whichever store built the workspace: both leave alone what they did not make */
  PetscCall(NetStoreDouble.reset(net));
  PetscCall(PetscFree(net->tanzero));
  PetscCall(VecDestroy(&net->tandthetavec));
  PetscCall(VecDestroy(&net->fbdY));
  net->tanvalid = PETSC_FALSE;
  net->barY     = NULL;
  PetscCall(NetDetachJacobian_Private(&net->J, PETSC_FALSE));
  PetscCall(NetDetachJacobian_Private(&net->JP, PETSC_FALSE));
  if (net->LJ)
    for (PetscInt l = 0; l < net->nlayers; l++) {
      PetscCall(NetDetachJacobian_Private(&net->LJ[l], PETSC_TRUE));
      PetscCall(NetDetachJacobian_Private(&net->LJP[l], PETSC_TRUE));
    }
  net->nlocal    = -1;
  net->nglobal   = -1;
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  NetReset - frees the parameters, the batch workspace and the Jacobian shells, and resets every layer; the layers,
  input shape, options prefix and seed stay. NetSetUp() rebuilds, initialising the parameters anew.

  Collective

  Input Parameter:
. net - the Net

  Notes:
  The parameter values are lost, and so are layer buffers such as batchnorm's running statistics: to keep the values,
  copy the parameter Vec before and give it back with NetSetParameters() after. The Mats from NetGetJacobian() and
  the other Jacobian getters are destroyed with the rest. Changes of layout reset the Net themselves
  (NetSetInputShape(), NetConv2dSetDM(), NetSetFromOptions()).

  Level: intermediate

.seealso: `NetSetUp()`, `NetDestroy()`, `LayerReset()`, `NetSetParameters()`
@*/
PetscErrorCode NetReset(Net net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetResetWorkspace_Private(net));
  PetscCall(PetscFree(net->vlocal));
  PetscCall(PetscFree(net->ventries));
  PetscCall(NetSpatialReset_Private(net));
  PetscCall(NetSequenceReset_Private(net));
  if (net->poff) PetscCall(NetResetParameterMaps_Private(net));
  PetscCall(NetPlaceReset_Private(net));
  PetscCall(VecDestroy(&net->theta));
  PetscCall(VecDestroy(&net->theta_rep));
  PetscCall(VecDestroy(&net->grad_rep));
  PetscCall(VecDestroy(&net->dtheta_rep));
  PetscCall(MatDestroy(&net->bcast));
  PetscCall(PetscFree(net->poff));
  if (net->LJ)
    for (PetscInt l = 0; l < net->nlayers; l++) {
      PetscCall(VecDestroy(&net->ltheta[l]));
      PetscCall(VecDestroy(&net->ltheta_rep[l]));
      PetscCall(MatDestroy(&net->lbcast[l]));
    }
  PetscCall(PetscFree5(net->LJ, net->LJP, net->lbcast, net->ltheta, net->ltheta_rep));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerReset(net->layers[l]));
  net->theta_rep_valid = PETSC_FALSE;
  net->setupcalled     = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  NetDestroy - destroys a Net, its layers, parameters and Jacobian shells, once its last reference is gone

  Collective

  Input Parameter:
. net - the Net; set to NULL

  Notes:
  A set-up Net given -net_save FILE whose save has not happened (NetSaveFromOptions(), TrainerTrain()), or whose
  parameters changed since, is saved to FILE first: a requested save is never silently dropped.

  Level: beginner

.seealso: `NetCreate()`, `NetReset()`, `NetSaveFromOptions()`
@*/
PetscErrorCode NetDestroy(Net *net)
{
  PetscFunctionBegin;
  if (!*net) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*net, NET_CLASSID, 1);
  if (--((PetscObject)(*net))->refct > 0) {
    *net = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(NetSaveAtDestroy_Private(*net));
  PetscCall(NetReset(*net));
  PetscCall(NetForwardCacheDestroy_Private(*net));
  PetscCall(NetSpatialDestroy_Private(*net));
  if ((*net)->tcomm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&(*net)->tcomm));
  PetscCall(NetDestroyLayers_Private(*net));
  PetscCall(PetscHeaderDestroy(net));
  PetscFunctionReturn(0);
}
