/*
  residual: a skip connection around a block of layers,

    y = x + F(x)        residual(F)       F keeps the shape (e.g. two padded 3x3 convolutions)
    y = P(x) + F(x)     residual(F|P)     P, the projection shortcut, maps x to F's output shape
                                          (e.g. a strided 1x1 convolution when F halves the grid and widens the channels)

  F and P are layer lists as in -net_layers, so blocks nest:
    -net_layers conv2d:16:3:1:1,relu,residual(conv2d:16:3:1:1,batchnorm,relu,conv2d:16:3:1:1,batchnorm),relu,flatten,dense:10
  NetGetSpec() writes the block as residual:(F|P), which reads back the same (see NetSetLayers()).

  The inner layers take options with the prefix <layer prefix>res_ (F) and <layer prefix>shortcut_ (P), e.g.
  -layer2_res_layer0_conv2d_init xavier. Their parameters are the residual layer's, laid out [theta_F, theta_P];
  their buffers (batchnorm running statistics) are the residual layer's buffers, and their tensors are named
  res.<i>.<name> and shortcut.<i>.<name> (PyTorch state_dict: "<layer>.res.<i>.weight"), as a PyTorch module with
  submodules res and shortcut (nn.Sequential) would name them.
*/
#include "residual.h"
#include <ctype.h>

static char *ResidualTrim(char *s)
{
  char *end = s + strlen(s);

  while (*s && isspace((unsigned char)*s)) s++;
  while (end > s && isspace((unsigned char)end[-1])) *--end = 0;
  return s;
}

/* "residual layer 3 (options prefix -layer1_res_layer3_)": which block, also when it sits inside another block */
static PetscErrorCode ResidualName(Layer layer, size_t len, char name[])
{
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  if (prefix)
    PetscCall(PetscSNPrintf(name, len, "residual layer %" PetscInt_FMT " (options prefix -%s)", layer->index, prefix));
  else
    PetscCall(PetscSNPrintf(name, len, "residual layer %" PetscInt_FMT, layer->index));
  PetscFunctionReturn(0);
}

/* The options prefixes of the inner Nets and layers: <layer prefix>res_layer<i>_ (as NetAddLayer() names a Net's layers) */
static PetscErrorCode ResidualSetPrefixes(Layer layer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;
  const char     *prefix, *name[2] = {"res", "shortcut"};

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  for (PetscInt b = 0; b < 2; b++) {
    Net  br = res->branch[b];
    char bprefix[256];

    if (!br) continue;
    PetscCall(PetscSNPrintf(bprefix, sizeof(bprefix), "%s%s_", prefix ? prefix : "", name[b]));
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)br, bprefix));
    for (PetscInt l = 0; l < br->nlayers; l++) {
      char lprefix[256];

      PetscCall(PetscSNPrintf(lprefix, sizeof(lprefix), "%slayer%" PetscInt_FMT "_", bprefix, l));
      PetscCall(PetscObjectSetOptionsPrefix((PetscObject)br->layers[l], lprefix));
    }
  }
  PetscFunctionReturn(0);
}

/* "F" or "F|P", optionally in parentheses: "(F|P)" is what LayerGetSpec() gives after "residual:" */
static PetscErrorCode LayerSetArguments_Residual(Layer layer, const char args[])
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)layer);
  char     *copy, *s, *bar = NULL, *F, *P = NULL;
  PetscInt  depth = 0, nbar = 0;
  PetscBool emptyF, emptyP;

  PetscFunctionBegin;
  PetscCall(PetscStrallocpy(args, &copy));
  s = ResidualTrim(copy);
  if (s[0] == '(') {
    char *c;

    for (c = s; *c; c++) {
      if (*c == '(') depth++;
      if (*c == ')' && --depth == 0) break;
    }
    if (*c && !c[1]) {
      *c = 0;
      s++;
    }
    depth = 0;
  }
  for (char *c = s; *c; c++) {
    if (*c == '(') depth++;
    if (*c == ')') depth--;
    if (*c == '|' && depth == 0) {
      nbar++;
      if (!bar) bar = c;
    }
  }
  if (bar) {
    *bar = 0;
    P    = ResidualTrim(bar + 1);
  }
  F      = ResidualTrim(s);
  emptyF = (PetscBool)!F[0];
  emptyP = (PetscBool)(P && !P[0]);
  if (nbar > 1 || emptyF || emptyP) PetscCall(PetscFree(copy));
  PetscCheck(nbar <= 1, comm, PETSC_ERR_ARG_WRONG, "residual(%s) has %" PetscInt_FMT " '|': write residual(F) for y = x + F(x), or residual(F|P) for y = P(x) + F(x), with F and P layer lists", args, nbar);
  PetscCheck(!emptyF, comm, PETSC_ERR_ARG_WRONG, "residual(%s): the block F is empty; give its layers, e.g. residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1) or residual(conv2d:32:3:2:1,relu,conv2d:32:3:1:1|conv2d:32:1:2:0)", args);
  PetscCheck(!emptyP, comm, PETSC_ERR_ARG_WRONG, "residual(%s): the shortcut after '|' is empty; give its layers (e.g. conv2d:32:1:2:0), or drop the '|' for the identity shortcut", args);
  PetscCall(LayerResidualSetBranches(layer, F, P));
  PetscCall(PetscFree(copy));
  PetscFunctionReturn(0);
}

/* "(F)" or "(F|P)": LayerGetSpec() then gives residual:(F|P), which NetSetLayers() reads back */
static PetscErrorCode LayerGetArguments_Residual(Layer layer, size_t len, char args[])
{
  Layer_Residual *res = (Layer_Residual *)layer->data;
  char           *f, *p;
  size_t          lf, lp = 0, need;

  PetscFunctionBegin;
  args[0] = 0;
  if (!res->branch[RESIDUAL_F]) PetscFunctionReturn(0);
  PetscCall(PetscCalloc2(len, &f, len, &p));
  PetscCall(NetGetSpec(res->branch[RESIDUAL_F], len, f));
  if (res->branch[RESIDUAL_P]) PetscCall(NetGetSpec(res->branch[RESIDUAL_P], len, p));
  PetscCall(PetscStrlen(f, &lf));
  PetscCall(PetscStrlen(p, &lp));
  need = sizeof(LAYERRESIDUAL ":()") + lf + (lp ? lp + 1 : 0); /* the whole spec, with its terminating zero */
  if (need > len) {
    char name[300];

    PetscCall(PetscFree2(f, p));
    PetscCall(ResidualName(layer, sizeof(name), name));
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "The spec of %s needs %zu characters, more than the %zu a layer spec holds: split the block into several residual layers", name, need, len);
  }
  PetscCall(PetscSNPrintf(args, len, "(%s%s%s)", f, lp ? "|" : "", p));
  PetscCall(PetscFree2(f, p));
  PetscFunctionReturn(0);
}

/* The inner layers' options; a change of an inner shape (e.g. -layer1_res_layer0_dense_outputs) resets the block */
static PetscErrorCode LayerSetFromOptions_Residual(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Residual *res   = (Layer_Residual *)layer->data;
  PetscBool       stale = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(ResidualSetPrefixes(layer));
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      PetscCall(LayerSetFromOptions(br->layers[l]));
      if (!br->layers[l]->setupcalled) stale = PETSC_TRUE;
    }
  }
  if (layer->setupcalled && stale) PetscCall(LayerReset(layer));
  PetscFunctionReturn(0);
}

/* A shortcut that maps the shape in to out, for error messages: a strided 1x1 convolution, or a dense layer */
static PetscErrorCode ResidualShortcutHint(const PetNetShape *in, const PetNetShape *out, size_t len, char hint[])
{
  PetscFunctionBegin;
  if (in->ndim == 3 && out->ndim == 3) {
    PetscInt sh = (in->dim[0] + out->dim[0] - 1) / out->dim[0], sw = (in->dim[1] + out->dim[1] - 1) / out->dim[1];

    if (sh == sw)
      PetscCall(PetscSNPrintf(hint, len, "conv2d:%" PetscInt_FMT ":1:%" PetscInt_FMT ":0", out->dim[2], sh));
    else
      PetscCall(PetscSNPrintf(hint, len, "conv2d:%" PetscInt_FMT ":1:%" PetscInt_FMT "x%" PetscInt_FMT ":0", out->dim[2], sh, sw));
  } else if (out->ndim == 1)
    PetscCall(PetscSNPrintf(hint, len, "dense:%" PetscInt_FMT, out->dim[0]));
  else
    PetscCall(PetscStrncpy(hint, "P", len));
  PetscFunctionReturn(0);
}

/* Chains the input shape through each branch, lays out the parameters and buffers, checks the shapes meet */
static PetscErrorCode LayerSetUp_Residual(Layer layer)
{
  Layer_Residual *res  = (Layer_Residual *)layer->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)layer);
  PetNetShape     out[2];
  PetscInt        np = 0, nb = 0;
  char            sin[64], sf[64], sp[64], spec[1024], name[300], hint[64];

  PetscFunctionBegin;
  PetscCall(ResidualName(layer, sizeof(name), name));
  PetscCheck(res->branch[RESIDUAL_F] && res->branch[RESIDUAL_F]->nlayers, comm, PETSC_ERR_ARG_WRONG,
             "%s has an empty block: give its layers, residual(F) for y = x + F(x) or residual(F|P) for y = P(x) + F(x), e.g. residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1)", name);
  PetscCall(ResidualSetPrefixes(layer));
  PetscCall(ResidualResetWorkspace(layer));
  PetscCall(PetscFree(layer->buffers));
  for (PetscInt b = 0; b < 2; b++) {
    Net         br = res->branch[b];
    PetNetShape shape;

    PetscCall(PetscFree2(res->poff[b], res->boff[b]));
    if (!br) continue;
    PetscCall(NetSetInputShape(br, &layer->in));
    PetscCall(PetscMalloc2(br->nlayers + 1, &res->poff[b], br->nlayers + 1, &res->boff[b]));
    shape           = layer->in;
    res->poff[b][0] = np;
    res->boff[b][0] = nb;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      Layer inner = br->layers[l];

      PetscCall(LayerSetInputShape(inner, &shape));
      PetscCall(LayerSetUp(inner));
      PetscCall(LayerGetOutputShape(inner, &shape));
      np += inner->nparams;
      nb += inner->nbuffers;
      res->poff[b][l + 1] = np;
      res->boff[b][l + 1] = nb;
    }
    out[b] = shape;
  }
  PetscCall(PetNetShapeToString(&layer->in, sizeof(sin), sin));
  PetscCall(PetNetShapeToString(&out[RESIDUAL_F], sizeof(sf), sf));
  PetscCall(NetGetSpec(res->branch[RESIDUAL_F], sizeof(spec), spec));
  PetscCall(ResidualShortcutHint(&layer->in, &out[RESIDUAL_F], sizeof(hint), hint));
  if (!res->branch[RESIDUAL_P]) {
    PetscCheck(PetNetShapeEqual(&out[RESIDUAL_F], &layer->in), comm, PETSC_ERR_ARG_SIZ,
               "%s: its block F = %s maps the input shape %s to %s, but y = x + F(x) needs F to keep the shape: change F (convolutions with stride 1 and padding K/2 keep it), or add a projection shortcut P after '|' for y = P(x) + F(x), e.g. "
               "residual(%s|%s)",
               name, spec, sin, sf, spec, hint);
  } else {
    PetscCall(PetNetShapeToString(&out[RESIDUAL_P], sizeof(sp), sp));
    PetscCheck(PetNetShapeEqual(&out[RESIDUAL_F], &out[RESIDUAL_P]), comm, PETSC_ERR_ARG_SIZ,
               "%s: its block F = %s maps the input shape %s to %s, but its shortcut P maps it to %s: y = P(x) + F(x) needs the same shape from both; change P to give %s, e.g. %s", name, spec, sin, sf, sp, sf, hint);
  }
  layer->out      = out[RESIDUAL_F];
  layer->nparams  = np;
  layer->nbuffers = nb;
  PetscCall(PetscMalloc1(nb, &layer->buffers));
  for (PetscInt b = 0; b < 2; b++) { /* the inner layers' initial buffers (e.g. running mean 0, variance 1) */
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++)
      if (br->layers[l]->nbuffers) PetscCall(PetscArraycpy(layer->buffers + res->boff[b][l], br->layers[l]->buffers, br->layers[l]->nbuffers));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Residual(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) PetscCall(LayerInitializeParameters(br->layers[l], rnd, theta + res->poff[b][l]));
  }
  PetscFunctionReturn(0);
}

/* The inner layers' tensors, renamed res.<i>.<name> and shortcut.<i>.<name> and moved to their place in the block */
static PetscErrorCode LayerTensors_Residual(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Residual *res     = (Layer_Residual *)layer->data;
  const char     *name[2] = {"res", "shortcut"};

  PetscFunctionBegin;
  *n = 0;
  for (PetscInt b = 0; b < 2; b++) {
    Net br = res->branch[b];

    if (!br) continue;
    for (PetscInt l = 0; l < br->nlayers; l++) {
      LayerTensorInfo inner[LAYER_MAX_TENSORS];
      PetscInt        nt;

      PetscCall(LayerGetTensors(br->layers[l], &nt, inner));
      for (PetscInt t = 0; t < nt; t++) {
        char   full[256];
        size_t len;

        PetscCall(PetscSNPrintf(full, sizeof(full), "%s.%" PetscInt_FMT ".%s", name[b], l, inner[t].name));
        PetscCall(PetscStrlen(full, &len));
        if (*n >= LAYER_MAX_TENSORS || len >= sizeof(info[0].name)) {
          char name[300];

          PetscCall(ResidualName(layer, sizeof(name), name));
          PetscCheck(*n < LAYER_MAX_TENSORS, PetscObjectComm((PetscObject)layer), PETSC_ERR_SUP, "%s holds more than %d named tensors: split its block into several residual layers", name, LAYER_MAX_TENSORS);
          SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_SUP, "%s: tensor name %s is longer than %zu characters: nest fewer residual blocks", name, full, sizeof(info[0].name) - 1);
        }
        info[*n] = inner[t];
        PetscCall(PetscStrcpy(info[*n].name, full));
        info[*n].offset += inner[t].buffer ? res->boff[b][l] : res->poff[b][l];
        (*n)++;
      }
    }
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Residual(Layer layer, PetscViewer viewer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "y = %s + F(x)\n", res->branch[RESIDUAL_P] ? "P(x)" : "x"));
  for (PetscInt b = 0; b < 2; b++) {
    if (!res->branch[b]) continue;
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s:\n", b == RESIDUAL_F ? "block F" : "shortcut P"));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    PetscCall(NetView(res->branch[b], viewer));
    PetscCall(PetscViewerASCIIPopTab(viewer));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Residual(Layer layer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < 2; b++) {
    if (res->branch[b]) PetscCall(NetReset(res->branch[b]));
    PetscCall(PetscFree2(res->poff[b], res->boff[b]));
  }
  PetscCall(ResidualResetWorkspace(layer));
  PetscCall(PetscFree(layer->buffers));
  layer->nbuffers = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Residual(Layer layer)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerReset_Residual(layer));
  for (PetscInt b = 0; b < 2; b++) PetscCall(NetDestroy(&res->branch[b]));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerResidualSetBranches_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerResidualGetBranches_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerResidualSetBranches_Residual(Layer layer, const char F[], const char P[])
{
  Layer_Residual *res  = (Layer_Residual *)layer->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)layer);

  PetscFunctionBegin;
  PetscCheck(F && F[0], comm, PETSC_ERR_ARG_WRONG, "LayerResidualSetBranches(): the block F is empty; give its layers, e.g. conv2d:16:3:1:1,relu,conv2d:16:3:1:1");
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  if (!res->branch[RESIDUAL_F]) PetscCall(NetCreate(comm, &res->branch[RESIDUAL_F]));
  PetscCall(NetSetLayers(res->branch[RESIDUAL_F], F));
  if (P && P[0]) {
    if (!res->branch[RESIDUAL_P]) PetscCall(NetCreate(comm, &res->branch[RESIDUAL_P]));
    PetscCall(NetSetLayers(res->branch[RESIDUAL_P], P));
  } else
    PetscCall(NetDestroy(&res->branch[RESIDUAL_P]));
  PetscCall(ResidualSetPrefixes(layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerResidualGetBranches_Residual(Layer layer, Net *F, Net *P)
{
  Layer_Residual *res = (Layer_Residual *)layer->data;

  PetscFunctionBegin;
  if (F) *F = res->branch[RESIDUAL_F];
  if (P) *P = res->branch[RESIDUAL_P];
  PetscFunctionReturn(0);
}

/*@C
  LayerResidualSetBranches - the block F and the shortcut P (NULL or "" for the identity) of a residual layer, as
  layer lists in the syntax of NetSetLayers(): y = x + F(x), or y = P(x) + F(x). The same as residual(F|P) in -net_layers.
@*/
PetscErrorCode LayerResidualSetBranches(Layer layer, const char F[], const char P[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerResidualSetBranches_C", (Layer, const char[], const char[]), (layer, F, P));
  PetscFunctionReturn(0);
}

/*@
  LayerResidualGetBranches - the inner Nets holding the layers of the block F and of the shortcut P (NULL for the
  identity), borrowed. They are containers only (never set up: the residual layer runs their layers on its own
  parameters and workspace). After changing an inner layer's settings, call LayerReset() on the residual layer (or
  NetReset() on its Net) so that the block is laid out anew.
@*/
PetscErrorCode LayerResidualGetBranches(Layer layer, Net *F, Net *P)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerResidualGetBranches_C", (Layer, Net *, Net *), (layer, F, P));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Residual(Layer layer)
{
  Layer_Residual *res;

  PetscFunctionBegin;
  PetscCall(PetscNew(&res));
  res->nlocal                = -1;
  layer->data                = res;
  layer->ops->setarguments   = LayerSetArguments_Residual;
  layer->ops->getarguments   = LayerGetArguments_Residual;
  layer->ops->setfromoptions = LayerSetFromOptions_Residual;
  layer->ops->setup          = LayerSetUp_Residual;
  layer->ops->initialize     = LayerInitialize_Residual;
  layer->ops->forward        = LayerForward_Residual;
  layer->ops->backward       = LayerBackward_Residual;
  layer->ops->jvp            = LayerJVP_Residual;
  layer->ops->tensors        = LayerTensors_Residual;
  layer->ops->view           = LayerView_Residual;
  layer->ops->reset          = LayerReset_Residual;
  layer->ops->destroy        = LayerDestroy_Residual;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerResidualSetBranches_C", LayerResidualSetBranches_Residual));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerResidualGetBranches_C", LayerResidualGetBranches_Residual));
  PetscFunctionReturn(0);
}
