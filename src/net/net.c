/* Net: lifecycle, the layer list, options, viewing. */
#include <petnet/private/netimpl.h>
#include <ctype.h>

PetscErrorCode NetCreate(MPI_Comm comm, Net *net)
{
  Net n;

  PetscFunctionBegin;
  PetscValidPointer(net, 2);
  PetscCall(NetInitializePackage());
  PetscCall(PetscHeaderCreate(n, NET_CLASSID, "Net", "Neural network", "Net", comm, NetDestroy, NetView));
  n->seed     = 0;
  n->training = PETSC_TRUE;
  n->nlocal   = -1;
  n->nglobal  = -1;
  *net        = n;
  PetscFunctionReturn(0);
}

PetscErrorCode NetSetInputShape(Net net, const PetNetShape *in)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->setupcalled && !PetNetShapeEqual(&net->in, in)) PetscCall(NetReset(net));
  net->in = *in;
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetInputShape(Net net, PetNetShape *in)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *in = net->in;
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetOutputShape(Net net, PetNetShape *out)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetSetUp(net));
  if (net->nlayers)
    PetscCall(LayerGetOutputShape(net->layers[net->nlayers - 1], out));
  else
    *out = net->in;
  PetscFunctionReturn(0);
}

/*@
  NetSetTraining - training mode (PETSC_TRUE, the default: dropout active, batch normalisation uses batch statistics)
  or evaluation mode (PETSC_FALSE). The Trainer switches it around evaluations.
@*/
PetscErrorCode NetSetTraining(Net net, PetscBool training)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  net->training = training;
  for (PetscInt l = 0; l < net->nlayers; l++) net->layers[l]->training = training;
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetTraining(Net net, PetscBool *training)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *training = net->training;
  PetscFunctionReturn(0);
}

PetscErrorCode NetSetSeed(Net net, unsigned long seed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  net->seed = seed;
  PetscFunctionReturn(0);
}

/*@C
  NetAddLayer - appends a layer of the given kind; args are its compact settings ("256" for dense) or NULL.
  The layer gets the options prefix <net prefix>layer<i>_ and is returned (borrowed) in layer if not NULL.
@*/
PetscErrorCode NetAddLayer(Net net, LayerType type, const char args[], Layer *layer)
{
  Layer       l;
  char        prefix[256];
  const char *netprefix;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->setupcalled) PetscCall(NetReset(net));
  if (net->nlayers == net->maxlayers) {
    Layer *layers;

    net->maxlayers = net->maxlayers ? 2 * net->maxlayers : 8;
    PetscCall(PetscMalloc1(net->maxlayers, &layers));
    PetscCall(PetscArraycpy(layers, net->layers, net->nlayers));
    PetscCall(PetscFree(net->layers));
    net->layers = layers;
  }
  PetscCall(LayerCreate(PetscObjectComm((PetscObject)net), &l));
  PetscCall(LayerSetType(l, type));
  PetscCall(LayerSetArguments(l, args));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &netprefix));
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%slayer%" PetscInt_FMT "_", netprefix ? netprefix : "", net->nlayers));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)l, prefix));
  l->training                 = net->training;
  l->net                      = net;
  l->index                    = net->nlayers;
  net->layers[net->nlayers++] = l;
  if (layer) *layer = l;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetClearLayers_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerDestroy(&net->layers[l]));
  net->nlayers = 0;
  PetscFunctionReturn(0);
}

/* "dense, identity, relu, ..." : the registered layer kinds, for error messages */
static PetscErrorCode NetLayerKinds_Private(size_t len, char kinds[])
{
  const char **names;
  int          n;

  PetscFunctionBegin;
  kinds[0] = 0;
  PetscCall(PetscFunctionListGet(LayerList, &names, &n));
  for (int i = 0; i < n && names[i]; i++) {
    if (i) PetscCall(PetscStrlcat(kinds, ", ", len));
    PetscCall(PetscStrlcat(kinds, names[i], len));
  }
  PetscCall(PetscFree(names));
  PetscFunctionReturn(0);
}

/* strips blanks at both ends, in place */
static char *NetTrim_Private(char *s)
{
  char *end = s + strlen(s);

  while (*s && isspace((unsigned char)*s)) s++;
  while (end > s && isspace((unsigned char)end[-1])) *--end = 0;
  return s;
}

/*
  Layer lists. Entries are separated by the commas outside parentheses; each entry is
    kind          e.g. relu
    kind:args     e.g. dense:128, conv2d:16:3:1:1
    kind(args)    the same as kind:args, for arguments that hold commas: residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1)
  kind:(args) is the same as kind(args): parentheses enclosing all the arguments are dropped (NetGetSpec() writes
  residual:(...)). The layer receives the text inside the parentheses through LayerSetArguments().
*/

/* -1 if the parentheses of list balance; else the position of the first ')' without its '(' or of the first '(' never closed */
static PetscInt NetUnbalancedParenthesis_Private(const char list[])
{
  PetscInt depth = 0, open = -1;

  for (PetscInt i = 0; list[i]; i++) {
    if (list[i] == '(' && depth++ == 0) open = i;
    if (list[i] == ')' && --depth < 0) return i;
  }
  return depth ? open : -1;
}

/* The position of the ')' matching the '(' at s[0], or -1 */
static PetscInt NetMatchingParenthesis_Private(const char s[])
{
  PetscInt depth = 0;

  for (PetscInt i = 0; s[i]; i++) {
    if (s[i] == '(') depth++;
    if (s[i] == ')' && --depth == 0) return i;
  }
  return -1;
}

/*
  Cuts the layer list at *cursor after its first entry (at the first comma outside parentheses), in place:
  *entry is that entry and *cursor moves to the next one (NULL after the last). Used by NetSetLayers() and NetLoad().
*/
PetscErrorCode NetLayerListNext_Private(char **cursor, char **entry)
{
  PetscInt depth = 0;
  char    *s     = *cursor;

  PetscFunctionBegin;
  *entry  = s;
  *cursor = NULL;
  for (; *s; s++) {
    if (*s == '(')
      depth++;
    else if (*s == ')')
      depth--;
    else if (*s == ',' && depth <= 0) {
      *s      = 0;
      *cursor = s + 1;
      break;
    }
  }
  PetscFunctionReturn(0);
}

/* Splits a trimmed, non-empty entry in place into its kind and its arguments (NULL if none); *why says what is malformed */
static PetscErrorCode NetLayerEntrySplit_Private(char *entry, char **kind, char **args, const char **why)
{
  size_t   k = strcspn(entry, ":(");
  PetscInt close;

  PetscFunctionBegin;
  *kind = entry;
  *args = NULL;
  *why  = NULL;
  if (!entry[k]) PetscFunctionReturn(0);
  if (entry[k] == ':') {
    entry[k] = 0;
    *args    = NetTrim_Private(entry + k + 1);
    close    = (*args)[0] == '(' ? NetMatchingParenthesis_Private(*args) : -1;
    if (close > 0 && !(*args)[close + 1]) { /* kind:(args) */
      (*args)[close] = 0;
      *args          = NetTrim_Private(*args + 1);
    }
  } else { /* kind(args) */
    close = NetMatchingParenthesis_Private(entry + k);
    if (entry[k + close + 1]) {
      *why = "text follows the closing parenthesis";
      PetscFunctionReturn(0);
    }
    entry[k + close] = 0;
    entry[k]         = 0;
    *args            = NetTrim_Private(entry + k + 1);
  }
  *kind = NetTrim_Private(entry);
  PetscFunctionReturn(0);
}

/*@C
  NetSetLayers - replaces the layers with a compact list, e.g. "dense:256,relu,dense:128,relu,dense:10".
  Each entry is kind, kind:args or kind(args), the last for arguments that hold commas, such as the block of a
  residual layer: "conv2d:16:3:1:1,relu,residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1),relu,flatten,dense:10".
  Kinds are case-insensitive and blanks around entries are ignored.
@*/
PetscErrorCode NetSetLayers(Net net, const char list[])
{
  MPI_Comm comm;
  char    *copy, *entry, *next;
  size_t   len;
  PetscInt count = 0, bad;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  comm = PetscObjectComm((PetscObject)net);
  PetscCall(PetscStrlen(list, &len));
  PetscCheck(len > 0, comm, PETSC_ERR_ARG_WRONG, "Empty layer list: give -net_layers such as dense:128,relu,dense:10");
  bad = NetUnbalancedParenthesis_Private(list);
  PetscCheck(bad < 0, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_layers \"%s\": unbalanced parentheses, the '%c' at character %" PetscInt_FMT " has no matching '%c' (a nested layer list is written kind(list), e.g. residual(dense:64,relu,dense:64))",
             list, list[bad], bad + 1, list[bad] == '(' ? ')' : '(');
  if (net->setupcalled) PetscCall(NetReset(net));
  PetscCall(NetClearLayers_Private(net));
  PetscCall(PetscStrallocpy(list, &copy));
  for (next = copy; next;) {
    char       *kind, *args;
    const char *why;
    PetscErrorCode (*create)(Layer);

    PetscCall(NetLayerListNext_Private(&next, &entry));
    count++;
    kind = NetTrim_Private(entry);
    if (!kind[0]) {
      PetscCall(PetscFree(copy));
      SETERRQ(comm, PETSC_ERR_ARG_WRONG, "Malformed -net_layers \"%s\": entry %" PetscInt_FMT " is empty; remove the extra comma (entries are kind or kind:args separated by single commas, e.g. dense:128,relu,dense:10)", list, count);
    }
    PetscCall(NetLayerEntrySplit_Private(kind, &kind, &args, &why));
    if (why) {
      PetscCall(PetscFree(copy));
      SETERRQ(comm, PETSC_ERR_ARG_WRONG, "Malformed -net_layers \"%s\": in entry %" PetscInt_FMT ", %s; write kind(args), then a comma before the next entry", list, count, why);
    }
    PetscCall(PetscStrtolower(kind));
    PetscCall(PetscFunctionListFind(LayerList, kind, &create));
    if (!create) {
      char kinds[2048], name[256];

      PetscCall(PetscStrncpy(name, kind, sizeof(name)));
      PetscCall(PetscFree(copy));
      PetscCall(NetLayerKinds_Private(sizeof(kinds), kinds));
      SETERRQ(comm, PETSC_ERR_ARG_UNKNOWN_TYPE, "Unknown layer kind \"%s\" (entry %" PetscInt_FMT " of -net_layers \"%s\"): the registered kinds are %s; register your own with LayerRegister()", name, count, list, kinds);
    }
    PetscCall(NetAddLayer(net, kind, args, NULL));
  }
  PetscCall(PetscFree(copy));
  PetscFunctionReturn(0);
}

/*@C
  NetGetSpec - the compact layer list that rebuilds this Net with NetSetLayers().
@*/
PetscErrorCode NetGetSpec(Net net, size_t len, char spec[])
{
  size_t n = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  spec[0] = 0;
  for (PetscInt l = 0; l < net->nlayers; l++) {
    char one[256];

    PetscCall(LayerGetSpec(net->layers[l], sizeof(one), one));
    PetscCheck(n + strlen(one) + 2 < len, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Layer list longer than %zu characters", len);
    if (l) spec[n++] = ',';
    PetscCall(PetscStrcpy(spec + n, one));
    n += strlen(one);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetNumLayers(Net net, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  *n = net->nlayers;
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetLayer(Net net, PetscInt i, Layer *layer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(i >= 0 && i < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", i, net->nlayers);
  *layer = net->layers[i];
  PetscFunctionReturn(0);
}

/*@
  NetSetFromOptions - -net_layers, -net_input_shape, -net_seed, -net_test_jacobian, -net_view, -net_load, then each layer's options.
  -net_load FILE loads a model saved by NetSave(): its architecture replaces -net_layers and -net_input_shape.
@*/
PetscErrorCode NetSetFromOptions(Net net)
{
  char      list[4096] = "", shape[256] = "", load[PETSC_MAX_PATH_LEN] = "";
  PetscBool flg, loadflg;
  PetscInt  seed = (PetscInt)net->seed;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetGetSpec(net, sizeof(list), list));
  if (net->in.ndim) PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscObjectOptionsBegin((PetscObject)net);
  PetscCall(PetscOptionsString("-net_layers", "Comma-separated layer list, each kind or kind:args (e.g. dense:256,relu,dense:10)", "NetSetLayers", list, list, sizeof(list), &flg));
  if (flg) PetscCall(NetSetLayers(net, list));
  PetscCall(PetscOptionsString("-net_input_shape", "Per-sample input shape, channels last: 784 or 28x28x1", "NetSetInputShape", shape, shape, sizeof(shape), &flg));
  if (flg) {
    PetNetShape in;

    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetscOptionsInt("-net_seed", "Seed of the parameter initialisation", "NetSetSeed", seed, &seed, NULL));
  net->seed = (unsigned long)seed;
  PetscCall(PetscOptionsBool("-net_test_jacobian", "Run dot-product and finite-difference checks of the Jacobians at the first forward pass", "NetTestJacobian", net->testjacobian, &net->testjacobian, NULL));
  PetscCall(PetscOptionsString("-net_load", "Load architecture and parameters from a file written by NetSave() (replaces -net_layers)", "NetLoad", load, load, sizeof(load), &loadflg));
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)net, PetscOptionsObject));
  PetscOptionsEnd();
  if (loadflg) PetscCall(NetLoad(net, load));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerSetFromOptions(net->layers[l]));
  /* an option that changed a layer's shape (e.g. -layer0_dense_outputs) reset that layer: lay the Net out anew */
  for (PetscInt l = 0; l < net->nlayers && net->setupcalled; l++)
    if (!net->layers[l]->setupcalled) PetscCall(NetReset(net));
  PetscFunctionReturn(0);
}

/*@
  NetSetUp - chains the shapes through the layers, lays out the parameters and initialises them. Idempotent.
@*/
PetscErrorCode NetSetUp(Net net)
{
  PetNetShape shape;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->setupcalled) PetscFunctionReturn(0);
  PetscCheck(net->nlayers > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "The Net has no layers: give -net_layers (e.g. dense:128,relu,dense:10) or call NetSetLayers()");
  PetscCheck(net->in.ndim > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ORDER, "The Net has no input shape: give -net_input_shape (e.g. 784 or 28x28x1) or call NetSetInputShape()");
  PetscCall(PetscMalloc1(net->nlayers + 1, &net->poff));
  shape        = net->in;
  net->poff[0] = 0;
  for (PetscInt l = 0; l < net->nlayers; l++) {
    PetscCall(LayerSetInputShape(net->layers[l], &shape));
    PetscCall(LayerSetUp(net->layers[l]));
    PetscCall(LayerGetOutputShape(net->layers[l], &shape));
    net->poff[l + 1] = net->poff[l] + net->layers[l]->nparams;
  }
  net->nparams = net->poff[net->nlayers];
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), PETSC_DECIDE, net->nparams, &net->theta));
  PetscCall(PetscObjectSetName((PetscObject)net->theta, "parameters"));
  PetscCall(PetNetBroadcastCreate(net->theta, &net->bcast, &net->theta_rep));
  PetscCall(VecDuplicate(net->theta_rep, &net->grad_rep));
  PetscCall(VecDuplicate(net->theta_rep, &net->dtheta_rep));
  net->setupcalled = PETSC_TRUE;
  PetscCall(NetInitializeParameters(net));
  PetscCall(NetViewFromOptions(net, NULL, "-net_view"));
  PetscFunctionReturn(0);
}

/*@
  NetView - a table of the layers: index, spec, kind, output shape, parameters; and the total.
@*/
PetscErrorCode NetView(Net net, PetscViewer viewer)
{
  PetscBool isascii;
  char      shape[64];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)net), &viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  { /* as PetscObjectPrintClassNamePrefixType(), without its "type not yet set": a Net has no type */
    const char *prefix, *name = ((PetscObject)net)->name;
    PetscMPIInt size;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &prefix));
    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
    PetscCall(PetscViewerASCIIPrintf(viewer, "Net Object:%s%s%s%s%s %d MPI process%s\n", name ? " " : "", name ? name : "", prefix ? " (" : "", prefix ? prefix : "", prefix ? ")" : "", size, size > 1 ? "es" : ""));
  }
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " layers, input shape %s\n", net->nlayers, net->in.ndim ? shape : "(not set)"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%5s  %-24s %-10s %-14s %10s\n", "layer", "spec", "kind", "output", "parameters"));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer     layer = net->layers[l];
    LayerType type;
    char      spec[256];

    PetscCall(LayerGetType(layer, &type));
    PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
    if (layer->setupcalled) {
      PetscCall(PetNetShapeToString(&layer->out, sizeof(shape), shape));
      PetscCall(PetscViewerASCIIPrintf(viewer, "%5" PetscInt_FMT "  %-24s %-10s %-14s %10" PetscInt_FMT "\n", l, spec, type, shape, layer->nparams));
    } else
      PetscCall(PetscViewerASCIIPrintf(viewer, "%5" PetscInt_FMT "  %-24s %-10s %-14s %10s\n", l, spec, type, "?", "?"));
  }
  if (net->setupcalled) PetscCall(PetscViewerASCIIPrintf(viewer, "total parameters %" PetscInt_FMT "\n", net->nparams));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

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
  if (net->act) {
    for (PetscInt l = 0; l <= net->nlayers; l++) {
      PetscCall(VecDestroy(&net->act[l]));
      PetscCall(VecDestroy(&net->dact[l]));
    }
  }
  PetscCall(PetscFree(net->act));
  PetscCall(PetscFree(net->dact));
  PetscCall(MatDestroy(&net->J));
  PetscCall(MatDestroy(&net->JP));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerResetJacobians_Private(net->layers[l]));
  net->nlocal    = -1;
  net->nglobal   = -1;
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  NetReset - frees the parameters and workspace; the layers and settings stay (NetSetUp rebuilds, re-initialising parameters).
@*/
PetscErrorCode NetReset(Net net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetResetWorkspace_Private(net));
  PetscCall(VecDestroy(&net->theta));
  PetscCall(VecDestroy(&net->theta_rep));
  PetscCall(VecDestroy(&net->grad_rep));
  PetscCall(VecDestroy(&net->dtheta_rep));
  PetscCall(MatDestroy(&net->bcast));
  PetscCall(PetscFree(net->poff));
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerReset(net->layers[l]));
  net->theta_rep_valid = PETSC_FALSE;
  net->setupcalled     = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode NetDestroy(Net *net)
{
  PetscFunctionBegin;
  if (!*net) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*net, NET_CLASSID, 1);
  if (--((PetscObject)(*net))->refct > 0) {
    *net = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(NetReset(*net));
  PetscCall(NetClearLayers_Private(*net));
  PetscCall(PetscFree((*net)->layers));
  PetscCall(PetscHeaderDestroy(net));
  PetscFunctionReturn(0);
}
