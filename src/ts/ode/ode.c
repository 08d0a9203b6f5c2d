/*
  ode layer: lifecycle, options, set-up, tensors and viewing (the solves are in odesolve.c; see ode.h).

  Options (prefix <layer prefix>, e.g. layer1_):
    -layer1_ode_net_layers dense:32,tanh,dense:4   the inner Net f (default dense:<size>,tanh), any -layer1_ode_net_* option
    -layer1_ode_ts_type rk -layer1_ode_ts_rk_type 4 -layer1_ode_ts_max_time 1 -layer1_ode_ts_dt 0.1   the inner TS
    -layer1_ode_ts_adapt_type basic                adaptive steps (default: fixed steps)
    -layer1_ode_replay_steps                       reuse the recorded step sizes in later forward passes
  Compact: ode, ode:T (final time T), ode(f) or ode(T|f) with f the inner layer list, e.g. ode(0.5|dense:16,tanh,dense:3);
  NetGetSpec() writes the last form, so a saved Net rebuilds its inner Net.
  Defaults: rk 4 with 10 fixed steps; implicit types solve with GMRES on the Jacobian shell (PCNONE) to tight
  tolerances (SNES rtol 1e-10, KSP rtol 1e-12): the discrete adjoint is exact only for converged solves.
*/
#include "ode.h"

/* Every inner layer must be a smooth deterministic map with no state: the adjoint re-evaluates f many times. */
static PetscErrorCode LayerODECheckInnerNet_Private(Layer layer)
{
  Layer_ODE  *ode = (Layer_ODE *)layer->data;
  PetNetShape out;
  char        a[64], b[64];

  PetscFunctionBegin;
  PetscCall(NetGetOutputShape(ode->net, &out));
  if (!PetNetShapeEqual(&out, &layer->in)) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)ode->net, &prefix));
    PetscCall(PetNetShapeToString(&layer->in, sizeof(a), a));
    PetscCall(PetNetShapeToString(&out, sizeof(b), b));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_INCOMP, "The inner Net of an ode layer must map its input shape %s to itself, but it gives %s: end -%snet_layers with an output of the input size", a, b, prefix ? prefix : "");
  }
  for (PetscInt l = 0; l < ode->net->nlayers; l++) {
    Layer     inner = ode->net->layers[l];
    PetscBool bad;

    PetscCall(PetscObjectTypeCompareAny((PetscObject)inner, &bad, LAYERDROPOUT, LAYERBATCHNORM, ""));
    PetscCheck(!bad && !inner->nbuffers, PetscObjectComm((PetscObject)layer), PETSC_ERR_SUP, "Layer kind %s cannot be part of an ode layer's right-hand side: it is random or has state, and the adjoint re-evaluates f many times",
               ((PetscObject)inner)->type_name);
  }
  PetscFunctionReturn(0);
}

/* The inner objects' prefixes follow the layer's: <layer prefix>ode_ */
static PetscErrorCode LayerODESetPrefixes_Private(Layer layer)
{
  Layer_ODE  *ode = (Layer_ODE *)layer->data;
  const char *prefix;
  char        inner[256];

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  PetscCall(PetscSNPrintf(inner, sizeof(inner), "%sode_", prefix ? prefix : ""));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)ode->net, inner));
  PetscCall(TSSetOptionsPrefix(ode->ts, inner));
  PetscCall(NetTSSetSaveTrajectory(ode->ts)); /* gives the trajectory the TS's prefix */
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_ODE(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  if (!ode->configured) {
    PetscCall(LayerODESetPrefixes_Private(layer));
    if (ode->spec) PetscCall(NetSetLayers(ode->net, ode->spec));
    if (ode->fromoptions) {
      PetscCall(NetSetFromOptions(ode->net));
      PetscCall(TSSetFromOptions(ode->ts));
    }
    ode->configured = PETSC_TRUE;
  }
  PetscCall(NetSetInputShape(ode->net, &layer->in));
  if (!ode->net->nlayers) {
    char spec[64];

    PetscCheck(layer->in.ndim == 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "An ode layer on %s samples has no default right-hand side: give -%sode_net_layers (e.g. %s:%" PetscInt_FMT ":3:1:1,tanh)",
               layer->in.ndim == 4 ? "(d, h, w, c)" : "(h, w, c)", ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "", layer->in.ndim == 4 ? "conv3d" : "conv2d", layer->in.dim[layer->in.ndim - 1]);
    PetscCall(PetscSNPrintf(spec, sizeof(spec), "dense:%" PetscInt_FMT ",tanh", layer->in.dim[0]));
    PetscCall(NetSetLayers(ode->net, spec));
  }
  if (ode->dmset) { /* an inner Net with convolutions runs on the outer Net's grid, with dof its input channels */
    PetscInt dof = 0;

    if (ode->dmin) PetscCall(DMDAGetInfo(ode->dmin, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &dof, NULL, NULL, NULL, NULL, NULL));
    if (ode->dm && layer->in.ndim == 1 && dof != layer->in.dim[0]) {
      PetscCall(DMDestroy(&ode->dmin));
      PetscCall(DMDACreateCompatibleDMDA(ode->dm, layer->in.dim[0], &ode->dmin));
    }
    PetscCall(NetDMDASetGrid_Private(ode->net, ode->dm ? ode->dmin : NULL));
  }
  ode->net->maxnparams = layer->maxnparams; /* a model file being read bounds the inner Net before it allocates */
  PetscCall(NetSetUp(ode->net));
  ode->net->maxnparams = -1;
  if (ode->dmset && ode->dm) PetscCall(NetSpatialCheckKeepsGrid_Private(ode->net, "An ode layer on a DMDA (its inner Net)")); /* du/dt has u's layout */
  PetscCall(LayerODECheckInnerNet_Private(layer));
  PetscCall(NetTSCheckAdjoint(ode->ts));
  PetscCall(TSGetMaxTime(ode->ts, &ode->T));
  PetscCall(TSGetTimeStep(ode->ts, &ode->dt0));
  PetscCheck(ode->T > 0 && ode->dt0 > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "An ode layer needs a positive final time and step (-%sode_ts_max_time, -%sode_ts_dt), not %g and %g",
             ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "", ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "", (double)ode->T, (double)ode->dt0);
  layer->nparams = ode->net->nparams;
  PetscFunctionReturn(0);
}

/* Each inner layer draws from the outer Net's stream, so the result does not depend on the number of ranks. */
static PetscErrorCode LayerInitialize_ODE(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  for (PetscInt l = 0; l < ode->net->nlayers; l++) PetscCall(LayerInitializeParameters(ode->net->layers[l], rnd, theta + ode->net->poff[l]));
  PetscFunctionReturn(0);
}

/* The inner layers' tensors, named net.<l>.<name> as in a PyTorch module holding an nn.Sequential called net */
static PetscErrorCode LayerTensors_ODE(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_ODE *ode   = (Layer_ODE *)layer->data;
  PetscInt   count = 0;

  PetscFunctionBegin;
  for (PetscInt l = 0; l < ode->net->nlayers; l++) {
    LayerTensorInfo inner[LAYER_MAX_TENSORS];
    PetscInt        ni;

    PetscCall(LayerGetTensors(ode->net->layers[l], &ni, inner));
    for (PetscInt k = 0; k < ni; k++) {
      PetscCheck(count < LAYER_MAX_TENSORS, PetscObjectComm((PetscObject)layer), PETSC_ERR_SUP, "The inner Net of this ode layer has more than %d tensors", LAYER_MAX_TENSORS);
      info[count] = inner[k];
      PetscCall(PetscSNPrintf(info[count].name, sizeof(info[count].name), "net.%" PetscInt_FMT ".%s", l, inner[k].name));
      info[count].offset += ode->net->poff[l];
      /* the inner Net's features are the ode layer's, in PetNet's order: PyTorch has no ode layer to agree with */
      if (info[count].layout == LAYER_TENSOR_FEATURES) info[count].layout = LAYER_TENSOR_SAME;
      count++;
    }
  }
  *n = count;
  PetscFunctionReturn(0);
}

/* "T", "f" or "T|f" */
static PetscErrorCode LayerSetArguments_ODE(Layer layer, const char args[])
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;
  char      *copy, *bar, *end, *spec = NULL;
  double     T = 0;

  PetscFunctionBegin;
  PetscCall(PetscStrallocpy(args, &copy));
  bar = strchr(copy, '|');
  if (bar) {
    *bar = 0;
    spec = bar + 1;
    T    = strtod(copy, &end);
    if (end == copy || *end || !(T > 0)) {
      PetscCall(PetscFree(copy));
      SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"ode(%s)\": write ode:T, ode(f) or ode(T|f) with T > 0 the final time and f the inner layer list, e.g. ode(0.5|dense:16,tanh,dense:3)", args);
    }
  } else {
    T = strtod(copy, &end);
    if (end == copy || *end) {
      T    = 0;
      spec = copy;
    } else if (!(T > 0)) {
      PetscCall(PetscFree(copy));
      SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"ode:%s\": the final time must be positive, e.g. ode:1.5 (or ode(f), ode(T|f) with f the inner layer list)", args);
    }
  }
  if (T > 0) PetscCall(LayerODESetFinalTime(layer, (PetscReal)T));
  if (spec) {
    PetscCall(PetscFree(ode->spec));
    PetscCall(PetscStrallocpy(spec, &ode->spec));
  }
  PetscCall(PetscFree(copy));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_ODE(Layer layer, size_t len, char args[])
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;
  char       spec[1024];

  PetscFunctionBegin;
  args[0] = 0;
  if (ode->net->nlayers) {
    PetscCall(NetGetSpec(ode->net, sizeof(spec), spec));
    if (ode->T != 1.0)
      PetscCall(PetscSNPrintf(args, len, "(%.15g|%s)", (double)ode->T, spec));
    else
      PetscCall(PetscSNPrintf(args, len, "(%s)", spec));
  } else if (ode->T != 1.0)
    PetscCall(PetscSNPrintf(args, len, "%.15g", (double)ode->T));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_ODE(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "ODE layer options (the inner Net and TS read -<prefix>ode_net_* and -<prefix>ode_ts_*)");
  PetscCall(PetscOptionsBool("-ode_replay_steps", "Reuse the step sizes of the last recorded forward pass", "LayerODESetReplaySteps", ode->replay, &ode->replay, NULL));
  PetscOptionsHeadEnd();
  ode->fromoptions = PETSC_TRUE; /* the inner objects read theirs at set-up, outside this options block */
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_ODE(Layer layer, PetscViewer viewer)
{
  Layer_ODE  *ode = (Layer_ODE *)layer->data;
  TSType      type;
  TSAdapt     adapt;
  TSAdaptType atype;
  PetscBool   isrk;
  char        method[64], spec[1024];

  PetscFunctionBegin;
  PetscCall(TSGetType(ode->ts, &type));
  PetscCall(TSGetAdapt(ode->ts, &adapt));
  PetscCall(TSAdaptGetType(adapt, &atype));
  PetscCall(PetscObjectTypeCompare((PetscObject)ode->ts, TSRK, &isrk));
  if (isrk) {
    TSRKType rktype;

    PetscCall(TSRKGetType(ode->ts, &rktype));
    PetscCall(PetscSNPrintf(method, sizeof(method), "rk %s", rktype));
  } else
    PetscCall(PetscStrncpy(method, type ? type : "(not set)", sizeof(method)));
  PetscCall(PetscViewerASCIIPrintf(viewer, "du/dt = f(u) on [0, %g], TS %s, first step %g, adapt %s\n", (double)ode->T, method, (double)ode->dt0, atype ? atype : "default"));
  PetscCall(NetGetSpec(ode->net, sizeof(spec), spec));
  PetscCall(PetscViewerASCIIPrintf(viewer, "f: %s\n", spec));
  if (ode->nsteps) PetscCall(PetscViewerASCIIPrintf(viewer, "last recorded forward pass: %" PetscInt_FMT " steps\n", ode->nsteps));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_ODE(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerODEResetBatch_Private(layer));
  ode->nsteps = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_ODE(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerODEResetBatch_Private(layer));
  PetscCall(TSDestroy(&ode->ts));
  PetscCall(NetDestroy(&ode->net));
  PetscCall(PetscFree(ode->times));
  PetscCall(PetscFree(ode->spec));
  PetscCall(DMDestroy(&ode->dm));
  PetscCall(DMDestroy(&ode->dmin));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetFinalTime_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetFinalTime_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetNet_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetTS_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetTimeSteps_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetReplaySteps_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* The DMDA of the outer Net's fields (NetDMDASetUp() reaches ode layers through this): the inner Net is laid out on it
   when the layer is set up (NetDMDASetGrid_Private(): grid mode if it has convolutions); the inner layers may not
   exist before set-up */
static PetscErrorCode LayerODESetDM_ODE(Layer layer, DM dm)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  ode->dmset = PETSC_TRUE;
  if (dm == ode->dm) PetscFunctionReturn(0);
  if (dm) PetscCall(PetscObjectReference((PetscObject)dm));
  PetscCall(DMDestroy(&ode->dm));
  PetscCall(DMDestroy(&ode->dmin));
  ode->dm = dm;
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODEGetDM_ODE(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  *dm = ((Layer_ODE *)layer->data)->dm;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODESetFinalTime_ODE(Layer layer, PetscReal T)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCheck(T > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The final time of an ode layer must be positive, not %g", (double)T);
  PetscCall(TSSetMaxTime(ode->ts, T));
  PetscCall(TSSetTimeStep(ode->ts, T / 10));
  ode->T   = T;
  ode->dt0 = T / 10;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODEGetFinalTime_ODE(Layer layer, PetscReal *T)
{
  PetscFunctionBegin;
  *T = ((Layer_ODE *)layer->data)->T;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODEGetNet_ODE(Layer layer, Net *net)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerODESetPrefixes_Private(layer));
  *net = ode->net;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODEGetTS_ODE(Layer layer, TS *ts)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerODESetPrefixes_Private(layer));
  *ts = ode->ts;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODEGetTimeSteps_ODE(Layer layer, PetscInt *nsteps, const PetscReal *times[])
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;

  PetscFunctionBegin;
  if (nsteps) *nsteps = ode->nsteps;
  if (times) *times = ode->times;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerODESetReplaySteps_ODE(Layer layer, PetscBool replay)
{
  PetscFunctionBegin;
  ((Layer_ODE *)layer->data)->replay = replay;
  PetscFunctionReturn(0);
}

/* The inner TS with the layer's defaults; options (at set-up) and LayerODEGetTS() may change them. */
static PetscErrorCode LayerODECreateTS_Private(Layer layer)
{
  Layer_ODE *ode = (Layer_ODE *)layer->data;
  TS         ts;
  TSAdapt    adapt;
  SNES       snes;
  KSP        ksp;
  PC         pc;

  PetscFunctionBegin;
  PetscCall(TSCreate(PetscObjectComm((PetscObject)layer), &ts));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetMaxTime(ts, ode->T));
  PetscCall(TSSetTimeStep(ts, ode->dt0));
  PetscCall(TSSetMaxSteps(ts, 10000));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSGetAdapt(ts, &adapt));
  PetscCall(TSAdaptSetType(adapt, TSADAPTNONE));
  PetscCall(TSGetSNES(ts, &snes));
  PetscCall(SNESSetTolerances(snes, 1e-12, 1e-10, PETSC_DEFAULT, 50, PETSC_DEFAULT));
  PetscCall(SNESGetKSP(snes, &ksp));
  PetscCall(KSPSetType(ksp, KSPGMRES));
  PetscCall(KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_DEFAULT, 1000));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(NetTSSetSaveTrajectory(ts));
  PetscCall(TSMonitorSet(ts, LayerODEMonitor_Private, layer, NULL));
  PetscCall(TSSetPreStep(ts, LayerODEPreStep_Private));
  PetscCall(TSSetApplicationContext(ts, layer));
  ode->ts = ts;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_ODE(Layer layer)
{
  Layer_ODE *ode;

  PetscFunctionBegin;
  PetscCall(NetTSRegisterAll());
  PetscCall(PetscNew(&ode));
  ode->T                     = 1.0;
  ode->dt0                   = 0.1;
  ode->n                     = -1;
  layer->data                = ode;
  layer->ops->setup          = LayerSetUp_ODE;
  layer->ops->initialize     = LayerInitialize_ODE;
  layer->ops->forward        = LayerForward_ODE;
  layer->ops->backward       = LayerBackward_ODE;
  layer->ops->jvp            = LayerJVP_ODE;
  layer->ops->tensors        = LayerTensors_ODE;
  layer->ops->setarguments   = LayerSetArguments_ODE;
  layer->ops->getarguments   = LayerGetArguments_ODE;
  layer->ops->setfromoptions = LayerSetFromOptions_ODE;
  layer->ops->view           = LayerView_ODE;
  layer->ops->reset          = LayerReset_ODE;
  layer->ops->destroy        = LayerDestroy_ODE;
  PetscCall(NetCreate(PetscObjectComm((PetscObject)layer), &ode->net));
  PetscCall(LayerODECreateTS_Private(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetFinalTime_C", LayerODESetFinalTime_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetFinalTime_C", LayerODEGetFinalTime_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetNet_C", LayerODEGetNet_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetDM_C", LayerODESetDM_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetDM_C", LayerODEGetDM_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetTS_C", LayerODEGetTS_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODEGetTimeSteps_C", LayerODEGetTimeSteps_ODE));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerODESetReplaySteps_C", LayerODESetReplaySteps_ODE));
  PetscFunctionReturn(0);
}

/*@
  LayerODESetFinalTime - the final time T of an ode layer (compact: ode:T; option -<prefix>ode_ts_max_time); the first
  step becomes T/10 unless -<prefix>ode_ts_dt says otherwise.

  Logically collective

  Input Parameters:
+ layer - an ode layer (layers of other kinds ignore the call)
- T     - the final time, > 0 (default 1)

  Options Database Key:
. -<prefix>ode_ts_max_time <T> - the same from the options, read by the inner TS when the layer is set up

  Notes:
  The layer reads T and the first step back from its inner TS at set-up, so options given to the inner TS (and
  changes made through LayerODEGetTS()) take precedence.

  Level: intermediate

.seealso: `LayerODEGetFinalTime()`, `LayerODEGetTS()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerODESetFinalTime(Layer layer, PetscReal T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerODESetFinalTime_C", (Layer, PetscReal), (layer, T));
  PetscFunctionReturn(0);
}

/*@
  LayerODEGetFinalTime - gets the final time T of an ode layer

  Not collective

  Input Parameter:
. layer - an ode layer (any other kind is an error)

  Output Parameter:
. T - the final time: the value set by LayerODESetFinalTime(), or the one read from the inner TS at set-up (default 1)

  Level: intermediate

.seealso: `LayerODESetFinalTime()`, `LayerODEGetTimeSteps()`
@*/
PetscErrorCode LayerODEGetFinalTime(Layer layer, PetscReal *T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerODEGetFinalTime_C", (Layer, PetscReal *), (layer, T));
  PetscFunctionReturn(0);
}

/*@
  LayerODEGetNet - the inner Net f of an ode layer (borrowed), e.g. to set its layers in code before NetSetUp().

  Not collective

  Input Parameter:
. layer - an ode layer (any other kind is an error)

  Output Parameter:
. net - the inner Net (do not destroy it), with the options prefix <layer prefix>ode_

  Notes:
  At set-up the inner Net's input shape becomes the layer's, and its layers come from the compact ode(f) entry or
  from -<prefix>ode_net_layers (read when the layer's options are, LayerSetFromOptions()) when either is given,
  replacing layers set in code; with none at all a flat input of size s gets dense:s,tanh. f must map the input shape to itself and may hold no random or stateful layer (dropout,
  batchnorm).

  Level: intermediate

.seealso: `LayerODEGetTS()`, `NetSetLayers()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerODEGetNet(Layer layer, Net *net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerODEGetNet_C", (Layer, Net *), (layer, net));
  PetscFunctionReturn(0);
}

/*@
  LayerODEGetTS - the inner TS of an ode layer (borrowed): change its type, step or tolerances before NetSetUp().

  Not collective

  Input Parameter:
. layer - an ode layer (any other kind is an error)

  Output Parameter:
. ts - the inner TS (do not destroy it), with the options prefix <layer prefix>ode_

  Notes:
  Defaults: rk 4 with fixed steps of T/10 (no adaptivity), the trajectory kept in memory; implicit types solve with
  GMRES on the Jacobian shell without preconditioner, to tight tolerances. Only integrators whose discrete adjoint is
  right are accepted at set-up (NetTSCheckAdjoint()).

  Level: advanced

.seealso: `LayerODEGetNet()`, `LayerODESetFinalTime()`, `NetTSCheckAdjoint()`
@*/
PetscErrorCode LayerODEGetTS(Layer layer, TS *ts)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerODEGetTS_C", (Layer, TS *), (layer, ts));
  PetscFunctionReturn(0);
}

/*@C
  LayerODEGetTimeSteps - the step sequence of the last recorded forward pass: times[0] = 0 < ... < times[nsteps] = T
  (borrowed; valid until the next recorded forward pass).

  Not collective

  Input Parameter:
. layer - an ode layer (any other kind is an error)

  Output Parameters:
+ nsteps - the number of steps (0 before the first forward pass), or NULL
- times  - the nsteps + 1 times (borrowed), or NULL

  Notes:
  A forward pass that replays the recorded steps (LayerODESetReplaySteps(), NetTestJacobian()) records nothing.

  Level: advanced

.seealso: `LayerODESetReplaySteps()`, `LayerODEGetFinalTime()`
@*/
PetscErrorCode LayerODEGetTimeSteps(Layer layer, PetscInt *nsteps, const PetscReal *times[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerODEGetTimeSteps_C", (Layer, PetscInt *, const PetscReal *[]), (layer, nsteps, times));
  PetscFunctionReturn(0);
}

/*@
  LayerODESetReplaySteps - PETSC_TRUE: later forward passes take the step sizes of the last recorded forward pass
  instead of choosing their own (-<prefix>ode_replay_steps). With adaptive steps this makes finite differences
  of the layer consistent with its adjoint, which differentiates the map for fixed steps. NetTestJacobian() replays
  automatically.

  Logically collective

  Input Parameters:
+ layer  - an ode layer (layers of other kinds ignore the call)
- replay - PETSC_TRUE to replay the recorded steps, PETSC_FALSE (the default) to choose them anew in every pass

  Options Database Key:
. -<prefix>ode_replay_steps - the same from the options (LayerSetFromOptions())

  Level: advanced

.seealso: `LayerODEGetTimeSteps()`, `NetTestJacobian()`, `LayerSetFrozen()`
@*/
PetscErrorCode LayerODESetReplaySteps(Layer layer, PetscBool replay)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerODESetReplaySteps_C", (Layer, PetscBool), (layer, replay));
  PetscFunctionReturn(0);
}
