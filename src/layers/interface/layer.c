/* Layer: lifecycle, registry, options, viewing. */
#include <petnet/private/layerimpl.h>

PetscFunctionList LayerList              = NULL;
PetscBool         LayerRegisterAllCalled = PETSC_FALSE;

const char *const LayerInitTypes[] = {"kaiming", "xavier", "normal", "zeros", "LayerInitType", "LAYER_INIT_", NULL};

/*@C
  LayerRegister - adds a layer kind; LayerSetType(layer, name) then calls create(layer).
@*/
PetscErrorCode LayerRegister(const char name[], PetscErrorCode (*create)(Layer))
{
  PetscFunctionBegin;
  PetscCall(PetNetInitializePackage());
  PetscCall(PetscFunctionListAdd(&LayerList, name, create));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerCreate(MPI_Comm comm, Layer *layer)
{
  Layer l;

  PetscFunctionBegin;
  PetscValidPointer(layer, 2);
  PetscCall(PetNetInitializePackage());
  PetscCall(PetscHeaderCreate(l, LAYER_CLASSID, "Layer", "Neural network layer", "Layer", comm, LayerDestroy, LayerView));
  l->training  = PETSC_TRUE;
  l->index     = -1;
  l->nin       = 1;
  l->mininputs = 1;
  l->maxinputs = 1;
  *layer       = l;
  PetscFunctionReturn(0);
}

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
  layer->mininputs   = 1;
  layer->maxinputs   = 1;
  PetscCall(PetscObjectChangeTypeName((PetscObject)layer, type));
  PetscCall(LayerGetEvents_Private(type, layer->event));
  PetscCall((*create)(layer));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerGetType(Layer layer, LayerType *type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  *type = ((PetscObject)layer)->type_name;
  PetscFunctionReturn(0);
}

/*@C
  LayerSetArguments - the compact settings of a kind, the text after "kind:" in -net_layers (e.g. "256" for dense:256).
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
  PetscUseTypeMethod(layer, setarguments, args);
  PetscFunctionReturn(0);
}

/*@C
  LayerGetSpec - "kind" or "kind:args", the text that rebuilds this layer with LayerSetType() and LayerSetArguments().
@*/
PetscErrorCode LayerGetSpec(Layer layer, size_t len, char spec[])
{
  LayerType type;
  char      args[256] = "";

  PetscFunctionBegin;
  PetscCall(LayerGetType(layer, &type));
  PetscTryTypeMethod(layer, getarguments, sizeof(args), args);
  if (args[0])
    PetscCall(PetscSNPrintf(spec, len, "%s:%s", type, args));
  else
    PetscCall(PetscStrncpy(spec, type, len));
  PetscFunctionReturn(0);
}

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
  PetscCheck(nin >= layer->mininputs && nin <= layer->maxinputs, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "Layer kind %s takes %s %" PetscInt_FMT " input%s, not %" PetscInt_FMT "%s", ((PetscObject)layer)->type_name,
             layer->mininputs == layer->maxinputs ? "exactly" : "at least", layer->mininputs, layer->mininputs > 1 ? "s" : "", nin,
             layer->maxinputs == 1 ? ": give it one input (a join such as add or concat takes several)" : ": give it more inputs");
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

PetscErrorCode LayerGetInputShape(Layer layer, PetNetShape *in)
{
  PetscFunctionBegin;
  *in = layer->in;
  PetscFunctionReturn(0);
}

PetscErrorCode LayerGetOutputShape(Layer layer, PetNetShape *out)
{
  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Call LayerSetUp() before LayerGetOutputShape()");
  *out = layer->out;
  PetscFunctionReturn(0);
}

PetscErrorCode LayerGetNumParameters(Layer layer, PetscInt *n)
{
  PetscFunctionBegin;
  PetscCheck(layer->setupcalled, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Call LayerSetUp() before LayerGetNumParameters()");
  *n = layer->nparams;
  PetscFunctionReturn(0);
}

/*@
  LayerSetUp - infers the output shape and the number of parameters from the input shape. Idempotent.
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
  LayerReset - forgets the shapes and the workspace; the kind and its settings stay.
@*/
PetscErrorCode LayerReset(Layer layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryTypeMethod(layer, reset);
  layer->setupcalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

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
