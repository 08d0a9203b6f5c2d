/* Elementwise layers: settings, arguments, options and viewing shared by every kind (the loops are in pointwise.h). */
#include "pointwise.h"

static PetscErrorCode LayerSetArguments_Pointwise(Layer layer, const char args[])
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  char            *end;
  double           v = strtod(args, &end);

  PetscFunctionBegin;
  PetscCheck(end != args && !*end, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s takes one number, its %s (e.g. %s:0.01), not \"%s\"", ((PetscObject)layer)->type_name, pw->alphaname, ((PetscObject)layer)->type_name, args);
  pw->alpha = (PetscReal)v;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Pointwise(Layer layer, size_t len, char args[])
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%.17g", (double)pw->alpha));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Pointwise(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  char             opt[64];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_%s", ((PetscObject)layer)->type_name, pw->alphaname));
  PetscOptionsHeadBegin(PetscOptionsObject, "Elementwise layer options");
  PetscCall(PetscOptionsReal(opt, "The kind's parameter", "LayerSetArguments", pw->alpha, &pw->alpha, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Pointwise(Layer layer, PetscViewer viewer)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s %g\n", pw->alphaname, (double)pw->alpha));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Pointwise(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerCreatePointwise_Private(Layer layer, PointwiseFunction f, PointwiseDerivative df, PetscLogDouble flops_f, PetscLogDouble flops_df)
{
  Layer_Pointwise *pw;

  PetscFunctionBegin;
  PetscCall(PetscNew(&pw));
  pw->f               = f;
  pw->df              = df;
  pw->flops_f         = flops_f;
  pw->flops_df        = flops_df;
  layer->data         = pw;
  layer->ops->destroy = LayerDestroy_Pointwise;
  layer->actonly      = PETSC_TRUE; /* f, f', f'' read x and y alone */
  PetscFunctionReturn(0);
}

/* For kinds with one setting (leakyrelu:slope): enables "kind:value" and -<prefix><kind>_<name>. */
PetscErrorCode LayerPointwiseSetParameter_Private(Layer layer, const char name[], PetscReal value)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;

  PetscFunctionBegin;
  pw->alpha                  = value;
  pw->alphaname              = name;
  layer->ops->setarguments   = LayerSetArguments_Pointwise;
  layer->ops->getarguments   = LayerGetArguments_Pointwise;
  layer->ops->setfromoptions = LayerSetFromOptions_Pointwise;
  layer->ops->view           = LayerView_Pointwise;
  PetscFunctionReturn(0);
}
