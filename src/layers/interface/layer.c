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
  PetscCall(LayerInitializePackage());
  PetscCall(PetscFunctionListAdd(&LayerList, name, create));
  PetscCall(LayerRegisterEvents_Private(name));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerCreate(MPI_Comm comm, Layer *layer)
{
  Layer l;

  PetscFunctionBegin;
  PetscValidPointer(layer, 2);
  PetscCall(LayerInitializePackage());
  PetscCall(PetscHeaderCreate(l, LAYER_CLASSID, "Layer", "Neural network layer", "Layer", comm, LayerDestroy, LayerView));
  l->index = -1;
  *layer   = l;
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

PetscErrorCode LayerSetInputShape(Layer layer, const PetNetShape *in)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (layer->setupcalled && !PetNetShapeEqual(&layer->in, in)) PetscCall(LayerReset(layer));
  layer->in = *in;
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
  PetscCheck(layer->in.ndim > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "Layer %s has no input shape: set -net_input_shape or LayerSetInputShape()", ((PetscObject)layer)->type_name);
  layer->out     = layer->in;
  layer->nparams = 0;
  PetscTryTypeMethod(layer, setup);
  PetscCall(PetNetShapeSize(&layer->in, &layer->insize));
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
  PetscCall(LayerResetJacobians_Private(layer));
  PetscCall(VecDestroy(&layer->ptheta));
  PetscCall(VecDestroy(&layer->ptheta_rep));
  PetscCall(MatDestroy(&layer->pbcast));
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
  PetscCall(PetscHeaderDestroy(layer));
  PetscFunctionReturn(0);
}
