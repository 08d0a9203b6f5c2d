/* Layer: lifecycle, registry, options, viewing. */
#include <petnet/private/layerimpl.h>

PetscFunctionList LayerList              = NULL;
PetscBool         LayerRegisterAllCalled = PETSC_FALSE;

const char *const LayerInitTypes[] = {"kaiming", "xavier", "normal", "zeros", "LayerInitType", "LAYER_INIT_", NULL};

/*@C
  LayerRegister - adds a layer kind: LayerSetType(layer, name) then calls create(layer), and layer lists (-net_layers,
  -net_graph) know the kind by its name

  Not collective

  Input Parameters:
+ name   - the kind's name, in lower case (layer lists are read case-insensitively), e.g. "mykind" for mykind:args
- create - the kind's constructor: it fills layer->ops and layer->data, keeping the contract of the kernels stated in
           include/petnet/private/layerimpl.h

  Notes:
  Registering a name again replaces its constructor. The built-in kinds are registered by LayerRegisterAll() and the
  ode kind by the TS package (NetTSRegisterAll()), both from PetNetInitializePackage(). Register a kind before loading
  a saved Net that uses it (NetLoad()).

  Level: advanced

.seealso: `LayerRegisterAll()`, `LayerSetType()`, `NetSetLayers()`, `NetSetGraph()`, `PetNetInitializePackage()`
@*/
PetscErrorCode LayerRegister(const char name[], PetscErrorCode (*create)(Layer))
{
  PetscFunctionBegin;
  PetscCall(LayerInitializePackage());
  PetscCall(PetscFunctionListAdd(&LayerList, name, create));
  PetscCall(LayerRegisterEvents_Private(name));
  PetscFunctionReturn(0);
}

/*@
  LayerCreate - creates a Layer, one operator y = f(x; theta) with its Jacobian-vector and vector-Jacobian products;
  it has no kind yet

  Collective

  Input Parameter:
. comm - the communicator (that of the Net it will belong to: some kinds, e.g. batchnorm, reduce over it)

  Output Parameter:
. layer - the new Layer: training mode, one input, index -1

  Notes:
  A Net creates its own layers (NetSetLayers(), NetSetGraph(), NetAddLayer()). A layer on its own is configured with
  LayerSetType(), LayerSetArguments() or its kind's setters and LayerSetInputShape(), laid out by LayerSetUp(); its
  kernels (LayerForwardArray(), ...) then work on arrays the caller owns, its parameter block included. A Layer knows
  nothing of any Net.

  Level: intermediate

.seealso: `LayerSetType()`, `LayerSetInputShape()`, `LayerSetUp()`, `LayerDestroy()`, `NetAddLayer()`
@*/
PetscErrorCode LayerCreate(MPI_Comm comm, Layer *layer)
{
  Layer l;

  PetscFunctionBegin;
  PetscValidPointer(layer, 2);
  PetscCall(LayerInitializePackage());
  PetscCall(PetscHeaderCreate(l, LAYER_CLASSID, "Layer", "Neural network layer", "Layer", comm, LayerDestroy, LayerView));
  l->training   = PETSC_TRUE;
  l->index      = -1;
  l->nin        = 1;
  l->mininputs  = 1;
  l->maxinputs  = 1;
  l->maxnparams = -1;
  *layer        = l;
  PetscFunctionReturn(0);
}

/*@C
  LayerSetType - sets the kind of a layer

  Collective

  Input Parameters:
+ layer - the layer
- type  - `LAYERDENSE`, `LAYERRELU`, `LAYERCONV2D`, `LAYERBATCHNORM`, `LAYERADD`, ..., or a kind added with
          LayerRegister()

  Notes:
  Setting the kind the layer already has does nothing. Otherwise the previous kind's data and settings are destroyed,
  the layer is no longer set up, and the new kind starts from its defaults; the input shapes stay. The ode kind
  (`LAYERODE`) is registered by the TS package (PetNetInitializePackage() does it).

  Level: intermediate

.seealso: `LayerGetType()`, `LayerRegister()`, `LayerSetArguments()`, `LayerCreate()`
@*/
PetscErrorCode LayerSetType(Layer layer, LayerType type)
{
  PetscErrorCode (*create)(Layer);
  PetscBool match;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, type, &match));
  if (match) PetscFunctionReturn(0);
  PetscCall(PetscFunctionListFind(LayerList, type, &create));
  PetscCheck(create, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_UNKNOWN_TYPE, "Unknown layer kind \"%s\": see -help for the registered kinds, or register your own with LayerRegister()", type);
  PetscTryTypeMethod(layer, destroy);
  PetscCall(PetscMemzero(layer->ops, sizeof(struct _LayerOps)));
  layer->data        = NULL;
  layer->setupcalled = PETSC_FALSE;
  layer->nparams     = 0;
  layer->sozero      = PETSC_FALSE;
  layer->mininputs   = 1;
  layer->maxinputs   = 1;
  PetscCall(PetscObjectChangeTypeName((PetscObject)layer, type));
  PetscCall(LayerGetEvents_Private(type, layer->event));
  PetscCall((*create)(layer));
  PetscFunctionReturn(0);
}

/*@C
  LayerGetType - gets the kind of a layer

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. type - the kind (borrowed), or NULL when none is set yet

  Level: intermediate

.seealso: `LayerSetType()`, `LayerGetSpec()`
@*/
PetscErrorCode LayerGetType(Layer layer, LayerType *type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  *type = ((PetscObject)layer)->type_name;
  PetscFunctionReturn(0);
}

/*@C
  LayerSetArguments - sets a kind's settings from their compact text, the part after "kind:" in -net_layers (e.g.
  "256" for dense:256)

  Logically collective

  Input Parameters:
+ layer - the layer, its kind set (LayerSetType())
- args  - the text, e.g. "256" for dense, "0.2" for dropout, "0.1:1e-5" for batchnorm, "0.01" for leakyrelu,
          "0.5|dense:16,tanh,dense:3" for ode; NULL or "" changes nothing

  Notes:
  Each kind parses its own text and calls its setters (e.g. LayerDenseSetOutputSize()); malformed text is an error
  that shows the expected form, and a kind that takes no arguments refuses any. LayerGetSpec() writes the text back.

  Level: intermediate

.seealso: `LayerGetSpec()`, `LayerSetType()`, `LayerSetFromOptions()`, `NetSetLayers()`
@*/
PetscErrorCode LayerSetArguments(Layer layer, const char args[])
{
  LayerType type;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCall(LayerGetType(layer, &type));
  PetscCheck(type, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Call LayerSetType() before LayerSetArguments()");
  if (!args || !args[0]) PetscFunctionReturn(0);
  PetscCheck(layer->ops->setarguments, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Layer kind \"%s\" takes no arguments, but \"%s:%s\" was given: write just %s", type, type, args, type);
  PetscCall((*layer->ops->setarguments)(layer, args));
  PetscFunctionReturn(0);
}

/*
  The argument text of a kind that keeps it to parse at set-up (permute:2,0,1, reshape:4x8, einsum:bij,bjk->bik),
  copied into text[len] without its blanks, which carry nothing there; text longer than the buffer is refused naming
  the kind and what it holds (limit, e.g. "a sample has at most 5 dims").
*/
PetscErrorCode LayerCopyArgumentsWithoutBlanks_Private(Layer layer, const char args[], size_t len, char text[], const char limit[])
{
  size_t k = 0;

  PetscFunctionBegin;
  for (const char *s = args; *s; s++) {
    if (*s == ' ' || *s == '\t') continue;
    PetscCheck(k + 1 < len, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "\"%s:%s\" is too long: %s", ((PetscObject)layer)->type_name, args, limit);
    text[k++] = *s;
  }
  text[k] = 0;
  PetscFunctionReturn(0);
}

/*@C
  LayerGetSpec - writes "kind" or "kind:args", the text that rebuilds this layer with LayerSetType() and
  LayerSetArguments()

  Not collective

  Input Parameters:
+ layer - the layer, its kind set
- len   - the size of spec

  Output Parameter:
. spec - the text, e.g. "dense:256", "relu" or "permute(1,0)" (arguments holding commas in parentheses, so that the text stays one entry of a layer list)

  Notes:
  NetGetSpec() joins the texts of a Net's layers into a layer list or a graph.

  Level: intermediate

.seealso: `LayerSetArguments()`, `LayerGetType()`, `NetGetSpec()`, `LayerView()`
@*/
PetscErrorCode LayerGetSpec(Layer layer, size_t len, char spec[])
{
  LayerType type;
  char      args[256] = "";

  PetscFunctionBegin;
  PetscCall(LayerGetType(layer, &type));
  PetscTryTypeMethod(layer, getarguments, sizeof(args), args);
  if (args[0] && args[0] != '(' && strchr(args, ',')) /* kind(args): arguments that hold commas (permute(1,0)) stay one entry of a
                                                          layer list; a kind that writes its own parentheses (ode:(T|f)) keeps them */
    PetscCall(PetscSNPrintf(spec, len, "%s(%s)", type, args));
  else if (args[0])
    PetscCall(PetscSNPrintf(spec, len, "%s:%s", type, args));
  else
    PetscCall(PetscStrncpy(spec, type, len));
  PetscFunctionReturn(0);
}

/*@
  LayerSetFromOptions - reads the options of the layer's kind, with the layer's options prefix

  Collective

  Input Parameter:
. layer - the layer, its kind set

  Options Database Keys:
+ -dense_outputs <n>                         - a dense layer's number of outputs (LayerDenseSetOutputSize())
. -dense_init <kaiming,xavier,normal,zeros>  - its weight initialisation (LayerDenseSetInitialization())
. -dense_init_std <std>                      - the standard deviation of -dense_init normal
. -dense_bias <bool>                         - whether a dense layer adds a bias (LayerDenseSetBias())
. -leakyrelu_slope <a>                       - the slope of leakyrelu for negative inputs (LayerLeakyReLUSetSlope())
. -dropout_p <p>                             - the probability of zeroing an entry (LayerDropoutSetProbability())
. -dropout_seed <seed>                       - the seed of the dropout masks (LayerDropoutSetSeed())
. -batchnorm_momentum <m>                    - the weight of a batch in the running statistics (LayerBatchNormSetMomentum())
. -batchnorm_eps <eps>                       - added to the variance (LayerBatchNormSetEpsilon())
. -reshape_shape <AxBxC>                     - a reshape layer's new per-sample shape (one size may be -1)
. -permute_dims <i,j,k>                      - a permute layer's order of the sample's dims
. -einsum_spec <spec>                        - an einsum layer's contraction, e.g. bqd,bkd->bqk
. -einsum_path <auto,gemm,loop>              - how an einsum layer's contractions run (a batched GEMM where one, or loops)
- -ode_replay_steps                          - an ode layer reuses its recorded steps (LayerODESetReplaySteps())

  Notes:
  Each key takes the layer's prefix, which a Net sets: -layer0_dense_outputs for entry 0 of a layer list,
  -stem_dense_outputs for the graph node stem (NetSetOptionsPrefix() puts the Net's prefix in front). The conv2d,
  convtranspose2d, pooling and upsample kinds read their own -conv2d_..., -convtranspose2d_..., pooling and
  -upsample_... options (see their setters); an ode layer's inner Net and TS read
  -<prefix>ode_net_... and -<prefix>ode_ts_... when the layer is set up. NetSetFromOptions() calls this for every layer.

  Level: intermediate

.seealso: `NetSetFromOptions()`, `LayerSetArguments()`, `LayerSetType()`
@*/
PetscErrorCode LayerSetFromOptions(Layer layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)layer);
  PetscTryTypeMethod(layer, setfromoptions, PetscOptionsObject);
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)layer, PetscOptionsObject));
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}

/*@
  LayerSetInputShape - sets the per-sample shape of the layer's (only) input.

  Logically collective

  Input Parameters:
+ layer - the layer
- in    - the shape of one sample, channels last

  Level: intermediate

  Note:
  A change of shape resets the layer (LayerSetUp() lays it out anew).

.seealso: `LayerSetInputShapes()`, `LayerGetOutputShape()`, `LayerSetUp()`
@*/
PetscErrorCode LayerSetInputShape(Layer layer, const PetNetShape *in)
{
  PetscFunctionBegin;
  PetscCall(LayerSetInputShapes(layer, 1, in));
  PetscFunctionReturn(0);
}

/*@
  LayerSetInputShapes - sets the per-sample shapes of the inputs of a layer that takes several (add, concat).

  Logically collective

  Input Parameters:
+ layer - the layer
. nin   - the number of inputs, within what the kind accepts (LayerGetNumInputs())
- in    - the nin shapes

  Level: intermediate

.seealso: `LayerSetInputShape()`, `LayerGetNumInputs()`, `NetSetGraph()`
@*/
PetscErrorCode LayerSetInputShapes(Layer layer, PetscInt nin, const PetNetShape in[])
{
  PetscBool same;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCheck(((PetscObject)layer)->type_name, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Set the layer kind with LayerSetType() before LayerSetInputShapes()");
  if (nin < layer->mininputs || nin > layer->maxinputs) {
    char node[320];

    PetscCall(LayerGetNodeDescription_Private(layer, sizeof(node), node));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "The %s takes %s %" PetscInt_FMT " input%s, not %" PetscInt_FMT "%s", node, layer->mininputs == layer->maxinputs ? "exactly" : "at least", layer->mininputs,
            layer->mininputs > 1 ? "s" : "", nin, layer->maxinputs == 1 ? ": give it one input (a join such as add or concat takes several)" : ": give it more inputs");
  }
  same = (PetscBool)(layer->ins && nin == layer->nin);
  for (PetscInt k = 0; same && k < nin; k++) same = PetNetShapeEqual(&layer->ins[k], &in[k]);
  if (same) PetscFunctionReturn(0);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  PetscCall(PetscFree2(layer->ins, layer->insizes));
  PetscCall(PetscMalloc2(nin, &layer->ins, nin, &layer->insizes));
  for (PetscInt k = 0; k < nin; k++) {
    layer->ins[k] = in[k];
    PetscCall(PetNetShapeSize(&in[k], &layer->insizes[k]));
  }
  layer->nin = nin;
  layer->in  = in[0];
  PetscFunctionReturn(0);
}

/*@
  LayerGetNumInputs - the number of inputs of a layer and the range its kind accepts.

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameters:
+ nin - the number of inputs set (1 until LayerSetInputShapes() says otherwise), or NULL
. min - the fewest inputs the kind takes, or NULL
- max - the most inputs the kind takes, or NULL

  Level: intermediate

.seealso: `LayerSetInputShapes()`
@*/
PetscErrorCode LayerGetNumInputs(Layer layer, PetscInt *nin, PetscInt *min, PetscInt *max)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (nin) *nin = layer->nin;
  if (min) *min = layer->mininputs;
  if (max) *max = layer->maxinputs;
  PetscFunctionReturn(0);
}

/*@
  LayerSetTraining - training mode (the default: dropout active, batch normalisation on batch statistics) or evaluation mode.

  Logically collective

  Input Parameters:
+ layer    - the layer
- training - PETSC_TRUE for training mode

  Level: intermediate

  Note:
  NetSetTraining() sets the mode of every layer of a Net.

.seealso: `NetSetTraining()`, `LayerSetFrozen()`
@*/
PetscErrorCode LayerSetTraining(Layer layer, PetscBool training)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  layer->training = training;
  PetscFunctionReturn(0);
}

/*@
  LayerSetFrozen - in frozen mode a layer is one fixed map: it repeats its last random draws (dropout masks) and its
  last discretisation (an ode layer's steps), and updates no running statistics. Derivative tests use it, so that
  finite differences differentiate the same map the Jacobian is taken of.

  Logically collective

  Input Parameters:
+ layer  - the layer
- frozen - PETSC_TRUE to freeze

  Level: developer

.seealso: `NetTestJacobian()`, `LayerSetTraining()`
@*/
PetscErrorCode LayerSetFrozen(Layer layer, PetscBool frozen)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  layer->frozen = frozen;
  PetscFunctionReturn(0);
}

/*@
  LayerSetIndex - the layer's position in the list that holds it: error messages name the layer by it ("dense layer 2")
  and it separates the random streams of the layers of one network (dropout masks).

  Logically collective

  Input Parameters:
+ layer - the layer
- index - its position; a Net gives each layer its position in its (sub)list of -net_layers, or its node index

  Level: developer

.seealso: `LayerDropoutSetSeed()`, `NetAddLayer()`
@*/
PetscErrorCode LayerSetIndex(Layer layer, PetscInt index)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  layer->index = index;
  PetscFunctionReturn(0);
}

/*@
  LayerGetInputShape - gets the per-sample shape of the layer's input (the first input of a join)

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. in - the shape set by LayerSetInputShape() or LayerSetInputShapes(), channels last; ndim is 0 while none is set

  Level: intermediate

.seealso: `LayerSetInputShape()`, `LayerSetInputShapes()`, `LayerGetOutputShape()`
@*/
PetscErrorCode LayerGetInputShape(Layer layer, PetNetShape *in)
{
  PetscFunctionBegin;
  *in = layer->in;
  PetscFunctionReturn(0);
}

/*@
  LayerGetOutputShape - gets the per-sample shape of the layer's output

  Not collective

  Input Parameter:
. layer - the layer, set up (LayerSetUp(); an error otherwise)

  Output Parameter:
. out - the output shape, channels last, as the kind inferred it from the input shape(s)

  Level: intermediate

.seealso: `LayerSetUp()`, `LayerGetInputShape()`, `NetGetOutputShape()`
@*/
PetscErrorCode LayerGetOutputShape(Layer layer, PetNetShape *out)
{
  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Call LayerSetUp() before LayerGetOutputShape()");
  *out = layer->out;
  PetscFunctionReturn(0);
}

/*@
  LayerGetNumParameters - gets the number of trainable parameters of a layer: the length of the block theta its
  kernels take

  Not collective

  Input Parameter:
. layer - the layer, set up (LayerSetUp(); an error otherwise)

  Output Parameter:
. n - the number of parameters (0 for activations, joins, pooling, ...); buffers such as batchnorm's running
      statistics are not parameters and are not counted

  Level: intermediate

.seealso: `LayerSetUp()`, `LayerInitializeParameters()`, `NetGetLayerParameterRange()`, `NetGetNumParameters()`
@*/
PetscErrorCode LayerGetNumParameters(Layer layer, PetscInt *n)
{
  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Call LayerSetUp() before LayerGetNumParameters()");
  *n = layer->nparams;
  PetscFunctionReturn(0);
}

/*@
  LayerSetUp - infers the output shape and the number of parameters from the input shape(s). Idempotent.

  Collective

  Input Parameter:
. layer - the layer, its kind and input shape(s) set

  Notes:
  The kind checks its settings against the input and allocates what it keeps (batchnorm's running statistics start at
  mean 0 and variance 1); an ode layer sets up its inner Net and TS here, reading their options. A change of input
  shape, or of a setting that changes the layout (e.g. LayerDenseSetOutputSize()), resets the layer, and the next
  LayerSetUp() lays it out anew. NetSetUp() sets up every layer of a Net.

  Level: intermediate

.seealso: `LayerSetInputShape()`, `LayerGetOutputShape()`, `LayerGetNumParameters()`, `LayerReset()`, `NetSetUp()`
@*/
PetscErrorCode LayerSetUp(Layer layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (layer->setupcalled) PetscFunctionReturn(0);
  PetscCheck(((PetscObject)layer)->type_name, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Set the layer kind with LayerSetType() before LayerSetUp()");
  PetscCheck(layer->ins && layer->in.ndim > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Layer %s has no input shape: set -net_input_shape or LayerSetInputShape()", ((PetscObject)layer)->type_name);
  layer->out     = layer->in;
  layer->nparams = 0;
  layer->insize  = layer->insizes[0];
  PetscTryTypeMethod(layer, setup);
  PetscCall(PetNetShapeSize(&layer->out, &layer->outsize));
  layer->setupcalled = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  LayerView - prints a layer: its kind and spec, its input and output shapes and number of parameters once it is set
  up, and its kind's settings

  Collective

  Input Parameters:
+ layer  - the layer
- viewer - an ASCII viewer, or NULL for standard output on the layer's communicator; other viewer types print nothing

  Level: intermediate

.seealso: `NetView()`, `LayerGetSpec()`, `LayerSetUp()`
@*/
PetscErrorCode LayerView(Layer layer, PetscViewer viewer)
{
  PetscBool isascii;
  char      in[64], out[64], spec[256];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)layer), &viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)layer, viewer));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  PetscCall(PetscViewerASCIIPrintf(viewer, "spec: %s\n", spec));
  if (layer->setupcalled) {
    PetscCall(PetNetShapeToString(&layer->in, sizeof(in), in));
    PetscCall(PetNetShapeToString(&layer->out, sizeof(out), out));
    PetscCall(PetscViewerASCIIPrintf(viewer, "input %s -> output %s, %" PetscInt_FMT " parameters\n", in, out, layer->nparams));
  }
  PetscTryTypeMethod(layer, view, viewer);
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@
  LayerReset - frees what set-up and the forward passes allocated and marks the layer not set up; the kind, its
  settings and the input shapes stay

  Collective

  Input Parameter:
. layer - the layer

  Notes:
  Buffers go too: batchnorm's running statistics start again from mean 0 and variance 1 at the next LayerSetUp(), and
  a dropout layer's pass counter restarts. NetReset() resets every layer of a Net.

  Level: intermediate

.seealso: `LayerSetUp()`, `LayerDestroy()`, `NetReset()`
@*/
PetscErrorCode LayerReset(Layer layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryTypeMethod(layer, reset);
  layer->setupcalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  LayerDestroy - destroys a Layer once its last reference is gone

  Collective

  Input Parameter:
. layer - the layer; set to NULL

  Notes:
  The layers of a Net belong to it (NetGetLayer() lends them): NetDestroy() destroys them.

  Level: intermediate

.seealso: `LayerCreate()`, `LayerReset()`, `NetDestroy()`
@*/
PetscErrorCode LayerDestroy(Layer *layer)
{
  PetscFunctionBegin;
  if (!*layer) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*layer, LAYER_CLASSID, 1);
  if (--((PetscObject)(*layer))->refct > 0) {
    *layer = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(LayerReset(*layer));
  PetscTryTypeMethod(*layer, destroy);
  PetscCall(PetscFree2((*layer)->ins, (*layer)->insizes));
  PetscCall(PetscHeaderDestroy(layer));
  PetscFunctionReturn(0);
}

/*
  What an error about a layer's inputs calls it: "node \"cat\" of the graph (-net_graph)" for a node of a graph (the
  Net names its layers after their nodes: NetSetGraph()), else "layer kind concat".
*/
PetscErrorCode LayerGetNodeDescription_Private(Layer layer, size_t len, char desc[])
{
  const char *name = ((PetscObject)layer)->name;

  PetscFunctionBegin;
  if (name)
    PetscCall(PetscSNPrintf(desc, len, "node \"%s\" (%s) of the graph (-net_graph, NetSetGraph())", name, ((PetscObject)layer)->type_name));
  else
    PetscCall(PetscSNPrintf(desc, len, "layer kind %s", ((PetscObject)layer)->type_name));
  PetscFunctionReturn(0);
}
