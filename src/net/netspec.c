/*
  The nodes of a Net from text, and back.

  Layer list (NetSetLayers(), -net_layers): entries separated by the commas outside parentheses, each
    kind          e.g. relu
    kind:args     e.g. dense:128, conv2d:16:3:1:1
    kind(args)    the same as kind:args, for arguments that hold commas
  kind:(args) is the same as kind(args): parentheses enclosing all the arguments are dropped. The entries form a chain.
  The entry residual(F) or residual(F|P), F and P layer lists, becomes the nodes of F and P and an add node joining
  them: y = x + F(x) or y = P(x) + F(x). Entry e of a list at path "2.res." is named "2.res.<e>", its options prefix
  is the list's prefix + "layer<e>_" (so -layer2_res_layer0_dense_init reaches the first layer of block 2's F).

  Graph (NetSetGraph(), -net_graph): entries separated by ';', each
    name = kind[:args] [<- input, input, ...]
  name an identifier, each input the name of an earlier node or "input" (the Net's input); without "<-" the node
  takes the previous node (the Net's input for the first). The options prefix of a node is "<name>_".

  The entry transformer:H:F[:causal][:rotary], in a list or a graph, is the pre-norm transformer block: two residual entries,
    residual(layernorm,attention:H[:causal][:rotary]) then residual(layernorm,dense:F:tokens,gelu,dense:E:tokens)
  with E the block's input's last dimension (set at set-up, NetNode.width). Entry e (or graph node NAME) makes the first
  residual entry "<e>.attn" with prefix -layer<e>_attn_ (its members -layer<e>_attn_res_layer<i>_) and the second
  with members "<e>.mlp.res.<i>" (-layer<e>_mlp_res_layer<i>_) and its join named "<e>" with prefix -layer<e>_ (graph:
  NAME.attn, NAME.mlp.res.<i>, NAME; -NAME_attn_res_layer<i>_, ...). Every node records the block (NetNode.block).

  NetGetSpec() writes a list back in normal form (kind:args, residual:(F|P), transformer:H:F[:causal][:rotary]) and a graph as
  "name = spec <- inputs;".
*/
#include <petnet/private/netimpl.h>
#include <petsc/private/hashtable.h>
#include <ctype.h>

KHASH_MAP_INIT_STR(NetNames, PetscInt) /* a graph's node names -> nodes, while NetSetGraph() parses it */

#define NET_MAX_NAME  2048
#define NET_MAX_NODES 10000 /* bounds the work of a hostile spec: name look-ups and set-up are linear in the nodes per node */

/* strips blanks at both ends, in place */
static char *NetTrim_Private(char *s)
{
  char *end = s + strlen(s);

  while (*s && isspace((unsigned char)*s)) s++;
  while (end > s && isspace((unsigned char)end[-1])) *--end = 0;
  return s;
}

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

/* Cuts the text at *cursor after its first entry (at the first separator sep outside parentheses), in place: *entry
   is that entry and *cursor moves to the next one (NULL after the last). */
static PetscErrorCode NetNextEntry_Private(char **cursor, char sep, char **entry)
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
    else if (*s == sep && depth <= 0) {
      *s      = 0;
      *cursor = s + 1;
      break;
    }
  }
  PetscFunctionReturn(0);
}

/* The entries of a layer list, one at a time (also used by the model readers to check the kinds of a file first) */
PetscErrorCode NetLayerListNext_Private(char **cursor, char **entry)
{
  PetscFunctionBegin;
  PetscCall(NetNextEntry_Private(cursor, ',', entry));
  PetscFunctionReturn(0);
}

/* Splits a trimmed, non-empty entry in place into its kind (lower case) and its arguments (NULL if none); *why says what is malformed */
static PetscErrorCode NetLayerEntrySplit_Private(char *entry, char **kind, char **args, const char **why)
{
  size_t   k = strcspn(entry, ":(");
  PetscInt close;

  PetscFunctionBegin;
  *kind = entry;
  *args = NULL;
  *why  = NULL;
  if (entry[k] == ':') {
    entry[k] = 0;
    *args    = NetTrim_Private(entry + k + 1);
    close    = (*args)[0] == '(' ? NetMatchingParenthesis_Private(*args) : -1;
    if (close > 0 && !(*args)[close + 1]) { /* kind:(args) */
      (*args)[close] = 0;
      *args          = NetTrim_Private(*args + 1);
    }
  } else if (entry[k] == '(') { /* kind(args) */
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
  PetscCall(PetscStrtolower(*kind));
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
  PetscCall(PetscStrlcat(kinds, "; residual(F|P) in a layer list; and transformer:H:F[:causal][:rotary] (the pre-norm transformer block)", len));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckKind_Private(Net net, const char kind[], const char what[], PetscInt entry, const char whole[])
{
  PetscErrorCode (*create)(Layer);

  PetscFunctionBegin;
  PetscCall(PetscFunctionListFind(LayerList, kind, &create));
  if (!create) {
    char kinds[2048];

    PetscCall(NetLayerKinds_Private(sizeof(kinds), kinds));
    SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_UNKNOWN_TYPE,
            "Unknown layer kind \"%s\" (entry %" PetscInt_FMT
            " of %s \"%s\"): the registered kinds are %s; register your own with LayerRegister() (the ode kind is registered by the TS package: start with PetNetInitialize(), or call PetNetInitializePackage())",
            kind, entry, what, whole, kinds);
  }
  PetscFunctionReturn(0);
}

/* An entry's placement suffix, taken off the entry: "@s" (a pipeline stage: place[0] = s) or "@ranks=a:b" (the ranks a
   to b - 1: place[1] = a, place[2] = b - a), netplace.c; without one place[0] = -1 and place[2] = 0 */
static PetscErrorCode NetTakeStage_Private(Net net, char entry[], const char what[], PetscInt place[3])
{
  char *at = strrchr(entry, '@');

  PetscFunctionBegin;
  place[0] = -1;
  place[1] = place[2] = 0;
  if (!at || strchr(at, ')')) PetscFunctionReturn(0); /* none, or one inside a nested list */
  if (!strncmp(at + 1, "ranks=", 6)) {
    char msg[512];

    PetscCall(PetscSNPrintf(msg, sizeof(msg), "Malformed %s: the placement \"%s\" of entry \"%.*s\"", what, at, (int)(at - entry), entry));
    PetscCall(NetPlaceParseRanks_Private(net, msg, at + 7, &place[1], &place[2]));
    *at = 0;
    PetscFunctionReturn(0);
  }
  {
    char     *end;
    long long s = strtoll(at + 1, &end, 10);

    PetscCheck(at[1] && !*end && s >= 0 && s < PETSC_MAX_INT, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
               "Malformed %s: the placement \"%s\" of entry \"%.*s\" is not a stage number or a group of ranks: write kind:args@s with s >= 0 (e.g. dense:256@1), or kind:args@ranks=a:b for the ranks a to b - 1", what, at, (int)(at - entry), entry);
    place[0] = (PetscInt)s;
    *at      = 0;
  }
  PetscFunctionReturn(0);
}

/* the nodes [first, nlayers) made from one entry go on its stage or ranks (NetTakeStage_Private()) */
static void NetPlaceEntry_Private(Net net, PetscInt first, const PetscInt place[3])
{
  if (place[0] < 0 && !place[2]) return;
  for (PetscInt k = first; k < net->nlayers; k++) {
    net->nodes[k].stage    = place[0];
    net->nodes[k].stageset = PETSC_TRUE;
    net->nodes[k].ranklo   = place[1];
    net->nodes[k].rankn    = place[2];
  }
}

/*
  Appends one node: a new layer of the given kind and settings, fed by in[0..nin), named name, with options prefix
  <net prefix><prefix> and position index (LayerSetIndex()). Returns the node's number in *node.
*/
static PetscErrorCode NetAppendNode_Private(Net net, LayerType type, const char args[], const char name[], const char prefix[], PetscInt index, PetscInt nin, const PetscInt in[], PetscInt *node)
{
  Layer          l;
  NetNode       *nd;
  char          *layerargs;
  PetscInt       partition[2];
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCheck(net->nlayers < NET_MAX_NODES, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_SIZ, "The Net would have more than %d nodes (at node %s): a layer list or graph this long is refused; group repeated blocks, or use fewer layers",
             NET_MAX_NODES, name);
  if (net->nlayers == net->maxlayers) {
    NetNode *nodes;
    Layer   *layers;

    net->maxlayers = net->maxlayers ? 2 * net->maxlayers : 8;
    PetscCall(PetscCalloc2(net->maxlayers, &nodes, net->maxlayers, &layers));
    PetscCall(PetscArraycpy(nodes, net->nodes, net->nlayers));
    PetscCall(PetscArraycpy(layers, net->layers, net->nlayers));
    PetscCall(PetscFree2(net->nodes, net->layers));
    net->nodes  = nodes;
    net->layers = layers;
  }
  if (nin > 1) { /* sorted, so that a list of a million inputs takes no quadratic time */
    PetscInt *sorted;
    PetscBool twice = PETSC_FALSE;

    PetscCall(PetscMalloc1(nin, &sorted));
    PetscCall(PetscArraycpy(sorted, in, nin));
    PetscCall(PetscSortInt(nin, sorted));
    for (PetscInt i = 1; i < nin; i++) twice = (PetscBool)(twice || sorted[i] == sorted[i - 1]);
    PetscCall(PetscFree(sorted));
    PetscCheck(!twice, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Node %s takes the same input twice: give each input once (to double a value, scale it in the layer before)", name);
  }
  /* the field partition=PxQ is the node's (how it runs over the ranks), the rest the layer's */
  PetscCall(PetscStrallocpy(args, &layerargs));
  ierr = NetTakePartition_Private(net, type, layerargs, partition);
  if (ierr) PetscCall(PetscFree(layerargs));
  PetscCall(ierr);
  PetscCall(LayerCreate(PetscObjectComm((PetscObject)net), &l));
  ierr = LayerSetType(l, type);
  if (!ierr) ierr = LayerSetArguments(l, layerargs);
  PetscCall(PetscFree(layerargs));
  if (ierr) PetscCall(LayerDestroy(&l)); /* malformed arguments: no node */
  PetscCall(ierr);
  PetscCall(LayerSetIndex(l, index));
  PetscCall(LayerSetTraining(l, net->training));
  nd = &net->nodes[net->nlayers];
  PetscCall(PetscMemzero(nd, sizeof(*nd)));
  nd->layer        = l;
  nd->owner        = -1;
  nd->block        = -1;
  nd->nin          = nin;
  nd->partition[0] = partition[0];
  nd->partition[1] = partition[1];
  PetscCall(PetscStrallocpy(name, &nd->name));
  PetscCall(PetscStrallocpy(prefix, &nd->prefix));
  PetscCall(PetscMalloc1(nin, &nd->in));
  PetscCall(PetscArraycpy(nd->in, in, nin));
  {
    const char *netprefix;
    char        full[NET_MAX_NAME];

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &netprefix));
    PetscCall(PetscSNPrintf(full, sizeof(full), "%s%s", netprefix ? netprefix : "", prefix));
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)l, full));
  }
  net->layers[net->nlayers] = l;
  *node                     = net->nlayers++;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetAppendList_Private(Net, const char[], const char[], PetscInt, const char[], const char[], PetscInt, PetscInt *);

/*
  residual(F|P) as nodes: F's chain and P's chain from the node `from`, then an add node joining their ends (P's end
  is `from` itself for the identity shortcut). The add node gets the entry's name and prefix; the members of F and P
  record it as their owner, so that NetGetSpec() can write the entry back.
*/
static PetscErrorCode NetAppendResidualAs_Private(Net, const char[], const char[], PetscInt, const char[], const char[], const char[], const char[], PetscInt, PetscInt, PetscInt *);

static PetscErrorCode NetAppendResidual_Private(Net net, const char args[], const char whole[], PetscInt from, const char name[], const char prefix[], PetscInt index, PetscInt depth, PetscInt *join)
{
  PetscFunctionBegin;
  PetscCall(NetAppendResidualAs_Private(net, args, whole, from, name, prefix, name, prefix, index, depth, join));
  PetscFunctionReturn(0);
}

/*
  transformer:H:F[:causal][:rotary] as nodes (see the top of this file): the residual entry <name>.attn, then the residual entry
  whose members are <name>.mlp.res.<i> and whose join is <name> itself, so that the block is one entry of its list or
  graph. Every node of the block records its last node (NetNode.block), from which NetGetSpec() writes it back.
*/
static PetscErrorCode NetAppendTransformer_Private(Net net, const char args[], const char whole[], PetscInt from, const char name[], const char prefix[], PetscInt index, PetscInt depth, PetscInt *join)
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)net);
  char     *end, *after, attn[256], mlp[256], n1[NET_MAX_NAME], p1[NET_MAX_NAME], n2[NET_MAX_NAME], p2[NET_MAX_NAME];
  long long H, F;
  PetscBool causal = PETSC_FALSE, rotary = PETSC_FALSE;
  PetscInt  start = net->nlayers, mid;

  PetscFunctionBegin;
  PetscCheck(args && args[0], comm, PETSC_ERR_ARG_WRONG, "transformer entry %" PetscInt_FMT " (options prefix -%s) has no sizes: write transformer:H:F[:causal][:rotary], H heads and F hidden units of its MLP, e.g. transformer:4:256", index, prefix);
  H = strtoll(args, &end, 10);
  F = end[0] == ':' ? strtoll(end + 1, &after, 10) : 0;
  if (end[0] == ':' && after != end + 1) { /* then :causal and :rotary, in either order, each at most once */
    while (F && after[0]) {
      if (!strncmp(after, ":causal", 7) && !causal && (!after[7] || after[7] == ':')) {
        causal = PETSC_TRUE;
        after += 7;
      } else if (!strncmp(after, ":rotary", 7) && !rotary && (!after[7] || after[7] == ':')) {
        rotary = PETSC_TRUE;
        after += 7;
      } else
        F = 0;
    }
  } else
    F = 0;
  PetscCheck(H > 0 && F > 0 && H <= PETSC_MAX_INT && F <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_WRONG,
             "Malformed \"transformer:%s\": transformer takes H:F or H:F:causal, and optionally :rotary (rotary positions in its attention; the flags each once, in either order), H > 0 attention heads and F > 0 hidden units of its MLP (at most %d), "
             "e.g. transformer:4:256, transformer:4:256:causal or transformer:4:256:causal:rotary",
             args, PETSC_MAX_INT);
  PetscCall(PetscSNPrintf(attn, sizeof(attn), "layernorm,attention:%lld%s%s", H, causal ? ":causal" : "", rotary ? ":rotary" : ""));
  PetscCall(PetscSNPrintf(mlp, sizeof(mlp), "layernorm,dense:%lld:tokens,gelu,dense:E:tokens", F));
  PetscCall(PetscSNPrintf(n1, sizeof(n1), "%s.attn", name));
  PetscCall(PetscSNPrintf(p1, sizeof(p1), "%sattn_", prefix));
  PetscCall(PetscSNPrintf(n2, sizeof(n2), "%s.mlp", name));
  PetscCall(PetscSNPrintf(p2, sizeof(p2), "%smlp_", prefix));
  PetscCall(NetAppendResidualAs_Private(net, attn, whole, from, n1, p1, n1, p1, index, depth, &mid));
  PetscCall(NetAppendResidualAs_Private(net, mlp, whole, mid, name, prefix, n2, p2, index, depth, join));
  for (PetscInt k = start; k <= *join; k++) net->nodes[k].block = *join;
  net->nodes[*join - 1].width = PETSC_TRUE; /* dense:E:tokens: E is the block's input's last dimension, known at set-up */
  PetscFunctionReturn(0);
}

/* residual(F|P) with the members named <mname>.res.<i> (prefix <mprefix>res_layer<i>_) and the join name, prefix */
static PetscErrorCode NetAppendResidualAs_Private(Net net, const char args[], const char whole[], PetscInt from, const char name[], const char prefix[], const char mname[], const char mprefix[], PetscInt index, PetscInt depth, PetscInt *join)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  char          *copy, *s, *bar = NULL, *F, *P = NULL, path[NET_MAX_NAME], pre[NET_MAX_NAME];
  PetscInt       nbar = 0, d = 0, start, startP, last[2];
  PetscBool      emptyF, emptyP;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCheck(depth <= NET_MAX_DEPTH, comm, PETSC_ERR_ARG_WRONG, "Residual blocks nest more than %d deep in \"%.200s%s\": flatten the architecture", NET_MAX_DEPTH, whole, strlen(whole) > 200 ? "..." : "");
  PetscCheck(args && args[0], comm, PETSC_ERR_ARG_WRONG,
             "residual layer %" PetscInt_FMT " (options prefix -%s) has an empty block: give its layers, residual(F) for y = x + F(x) or residual(F|P) for y = P(x) + F(x), e.g. residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1)", index, prefix);
  PetscCall(PetscStrallocpy(args, &copy));
  s = NetTrim_Private(copy);
  if (s[0] == '(' && NetMatchingParenthesis_Private(s) == (PetscInt)strlen(s) - 1) { /* (F|P), as NetGetSpec() writes it */
    s[strlen(s) - 1] = 0;
    s++;
  }
  for (char *c = s; *c; c++) {
    if (*c == '(') d++;
    if (*c == ')') d--;
    if (*c == '|' && d == 0) {
      nbar++;
      if (!bar) bar = c;
    }
  }
  if (bar) {
    *bar = 0;
    P    = NetTrim_Private(bar + 1);
  }
  F      = NetTrim_Private(s);
  emptyF = (PetscBool)!F[0];
  emptyP = (PetscBool)(P && !P[0]);
  if (nbar > 1 || emptyF || emptyP) PetscCall(PetscFree(copy));
  PetscCheck(nbar <= 1, comm, PETSC_ERR_ARG_WRONG, "residual(%s) has %" PetscInt_FMT " '|': write residual(F) for y = x + F(x), or residual(F|P) for y = P(x) + F(x), with F and P layer lists", args, nbar);
  PetscCheck(!emptyF, comm, PETSC_ERR_ARG_WRONG, "residual(%s): the block F is empty; give its layers, e.g. residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1) or residual(conv2d:32:3:2:1,relu,conv2d:32:3:1:1|conv2d:32:1:2:0)", args);
  PetscCheck(!emptyP, comm, PETSC_ERR_ARG_WRONG, "residual(%s): the shortcut after '|' is empty; give its layers (e.g. conv2d:32:1:2:0), or drop the '|' for the identity shortcut", args);
  start = net->nlayers;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s.res.", mname));
  PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sres_", mprefix));
  ierr    = NetAppendList_Private(net, F, whole, from, path, pre, depth, &last[0]);
  startP  = net->nlayers;
  last[1] = from;
  if (!ierr && P) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s.shortcut.", mname));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sshortcut_", mprefix));
    ierr = NetAppendList_Private(net, P, whole, from, path, pre, depth, &last[1]);
  }
  PetscCall(PetscFree(copy));
  PetscCall(ierr);
  PetscCall(NetAppendNode_Private(net, LAYERADD, NULL, name, prefix, index, 2, last, join));
  net->nodes[*join].residual = PETSC_TRUE;
  for (PetscInt k = start; k < *join; k++) {
    if (net->nodes[k].owner >= 0) continue; /* a member of a block nested in this one */
    net->nodes[k].owner  = *join;
    net->nodes[k].branch = k >= startP ? 1 : 0;
  }
  PetscFunctionReturn(0);
}

/* The entries of a layer list, parsed from copy (cut up in place; the caller frees it); see NetAppendList_Private() */
static PetscErrorCode NetAppendEntries_Private(Net net, char copy[], const char whole[], PetscInt from, const char path[], const char prefix[], PetscInt depth, PetscInt *last)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);
  char    *entry, *next;
  PetscInt e = 0;

  PetscFunctionBegin;
  for (next = copy; next; e++) {
    char       *kind, *args, name[NET_MAX_NAME], pre[NET_MAX_NAME];
    const char *why;
    PetscBool   isres, istr;
    PetscInt    place[3], first;

    PetscCall(NetLayerListNext_Private(&next, &entry));
    kind = NetTrim_Private(entry);
    PetscCheck(kind[0], comm, PETSC_ERR_ARG_WRONG, "Malformed -net_layers \"%s\": entry %" PetscInt_FMT " is empty; remove the extra comma (entries are kind or kind:args separated by single commas, e.g. dense:128,relu,dense:10)", whole, e + 1);
    PetscCall(NetTakeStage_Private(net, kind, "-net_layers", place));
    first = net->nlayers;
    PetscCall(NetLayerEntrySplit_Private(kind, &kind, &args, &why));
    PetscCheck(!why, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_layers \"%s\": in entry %" PetscInt_FMT ", %s; write kind(args), then a comma before the next entry", whole, e + 1, why);
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s%" PetscInt_FMT, path, e));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%slayer%" PetscInt_FMT "_", prefix, e));
    PetscCall(PetscStrcmp(kind, "residual", &isres));
    PetscCall(PetscStrcmp(kind, "transformer", &istr));
    if (isres)
      PetscCall(NetAppendResidual_Private(net, args, whole, from, name, pre, e, depth + 1, &from));
    else if (istr)
      PetscCall(NetAppendTransformer_Private(net, args, whole, from, name, pre, e, depth + 1, &from));
    else {
      PetscCall(NetCheckKind_Private(net, kind, "-net_layers", e + 1, whole));
      PetscCall(NetAppendNode_Private(net, kind, args, name, pre, e, 1, &from, &from));
    }
    NetPlaceEntry_Private(net, first, place);
  }
  *last = from;
  PetscFunctionReturn(0);
}

/* Appends the entries of a layer list as a chain from node `from`; entry e is named <path>e with prefix <prefix>layer<e>_ */
static PetscErrorCode NetAppendList_Private(Net net, const char list[], const char whole[], PetscInt from, const char path[], const char prefix[], PetscInt depth, PetscInt *last)
{
  char          *copy;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscStrallocpy(list, &copy));
  ierr = NetAppendEntries_Private(net, copy, whole, from, path, prefix, depth, last);
  PetscCall(PetscFree(copy));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/* Removes every node */
static PetscErrorCode NetClearLayers_Private(Net net)
{
  PetscFunctionBegin;
  if (net->setupcalled) PetscCall(NetReset(net));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    PetscCall(LayerDestroy(&net->nodes[k].layer));
    PetscCall(PetscFree(net->nodes[k].name));
    PetscCall(PetscFree(net->nodes[k].prefix));
    PetscCall(PetscFree(net->nodes[k].in));
  }
  net->nlayers = 0;
  net->graph   = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode NetDestroyLayers_Private(Net);
PetscErrorCode              NetDestroyLayers_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetClearLayers_Private(net));
  PetscCall(PetscFree2(net->nodes, net->layers));
  net->maxlayers = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckParentheses_Private(Net net, const char what[], const char text[])
{
  PetscInt bad = NetUnbalancedParenthesis_Private(text);

  PetscFunctionBegin;
  PetscCheck(bad < 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
             "Malformed %s \"%s\": unbalanced parentheses, the '%c' at character %" PetscInt_FMT " has no matching '%c' (a nested layer list is written kind(list), e.g. residual(dense:64,relu,dense:64))", what, text, text[bad], bad + 1,
             text[bad] == '(' ? ')' : '(');
  PetscFunctionReturn(0);
}

/*@C
  NetSetLayers - replaces the layers with a chain given as a compact list.

  Collective

  Input Parameters:
+ net  - the Net
- list - the layer list, e.g. "dense:256,relu,dense:128,relu,dense:10"

  Options Database Key:
. -net_layers <list> - the same from the options

  Level: beginner

  Notes:
  Each entry is kind, kind:args or kind(args), the last for arguments that hold commas, such as the block of a
  residual entry: "conv2d:16:3:1:1,relu,residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1),relu,flatten,dense:10".
  residual(F) is y = x + F(x) and residual(F|P) is y = P(x) + F(x), with F and P layer lists; they become the nodes of
  F and P and an add node. Kinds are case-insensitive and blanks around entries are ignored. Entry e reads its options
  with the prefix -layer<e>_ (inside residual block e: -layer<e>_res_layer<i>_ and -layer<e>_shortcut_layer<i>_).
  transformer:H:F[:causal][:rotary] is the pre-norm transformer block on (T, E) samples, residual(layernorm,attention:H[:causal][:rotary])
  then residual(layernorm,dense:F:tokens,gelu,dense:E:tokens) with E the block's input's last dimension; its nodes read
  -layer<e>_attn_res_layer<i>_ and -layer<e>_mlp_res_layer<i>_ (docs/manual/networks.md).

.seealso: `NetSetGraph()`, `NetGetSpec()`, `NetAddLayer()`, `LayerRegister()`
@*/
PetscErrorCode NetSetLayers(Net net, const char list[])
{
  size_t   len;
  PetscInt last;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscStrlen(list, &len));
  PetscCheck(len > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Empty layer list: give -net_layers such as dense:128,relu,dense:10");
  PetscCall(NetCheckParentheses_Private(net, "-net_layers", list));
  PetscCall(NetClearLayers_Private(net));
  PetscCall(NetAppendList_Private(net, list, list, NET_INPUT, "", "", 0, &last));
  PetscFunctionReturn(0);
}

/* The node called name among the graph's nodes parsed so far (names, a hash table); NET_INPUT for "input"; -2 if none */
static PetscInt NetFindNode_Private(khash_t(NetNames) * names, const char name[])
{
  khiter_t it;

  if (!strcmp(name, "input")) return NET_INPUT;
  it = kh_get(NetNames, names, name);
  return it == kh_end(names) ? -2 : kh_val(names, it);
}

static PetscBool NetIsIdentifier_Private(const char s[])
{
  if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return PETSC_FALSE;
  for (const char *c = s; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_')) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* The entries of graph, parsed from copy (a copy of graph that this cuts up); *in is the current node's input list and
   names maps the names (pieces of copy) to the nodes. The caller frees copy, *in and names also when this fails, so the
   error messages may quote pieces of copy. */
static PetscErrorCode NetSetGraphEntries_Private(Net net, const char graph[], char copy[], PetscInt **in, khash_t(NetNames) * names)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);
  char    *entry, *next;
  PetscInt e = 0, prev = NET_INPUT;

  PetscFunctionBegin;
  for (next = copy; next;) {
    char       *name, *spec, *inputs, *arrow, *eq, *kind, *args;
    const char *why;
    PetscInt    nin = 0, node, place[3], first;
    PetscBool   isres, istr;
    char        pre[NET_MAX_NAME];

    PetscCall(NetNextEntry_Private(&next, ';', &entry));
    entry = NetTrim_Private(entry);
    if (!entry[0]) continue; /* "a = relu;" ends with an empty entry */
    e++;
    arrow  = strstr(entry, "<-");
    inputs = NULL;
    if (arrow) {
      *arrow = 0;
      inputs = NetTrim_Private(arrow + 2);
    }
    eq = strchr(entry, '=');
    PetscCheck(eq, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": entry %" PetscInt_FMT " has no '=': write name = kind:args <- input, ... (e.g. b = conv2d:8:3:1:1 <- a)", graph, e);
    *eq  = 0;
    name = NetTrim_Private(entry);
    spec = NetTrim_Private(eq + 1);
    PetscCheck(NetIsIdentifier_Private(name), comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": entry %" PetscInt_FMT " is named \"%.255s\"; a node's name is a letter or '_' followed by letters, digits or '_'", graph, e, name);
    PetscCheck(strcmp(name, "input") && NetFindNode_Private(names, name) == -2, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": the name \"%.255s\" of entry %" PetscInt_FMT " is %s; give each node its own name", graph, name, e,
               strcmp(name, "input") ? "taken by an earlier node" : "reserved for the Net's input");
    PetscCheck(spec[0], comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": node %.255s has no layer; write %.255s = kind:args", graph, name, name);
    /* the inputs */
    if (inputs) {
      char *c2, *one, *cur;

      PetscCheck(inputs[0], comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": node %.255s has an empty list after '<-'; name its inputs (earlier nodes, or input)", graph, name);
      for (c2 = inputs, nin = 1; *c2; c2++) nin += *c2 == ',';
      PetscCheck(nin <= (PetscInt)kh_size(names) + 1, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": node %.255s takes %" PetscInt_FMT " inputs, but only %" PetscInt_FMT " nodes and input are defined before it: give each input once", graph,
                 name, nin, (PetscInt)kh_size(names));
      PetscCall(PetscMalloc1(nin, in));
      nin = 0;
      for (cur = inputs; cur;) {
        PetscCall(NetNextEntry_Private(&cur, ',', &one));
        one          = NetTrim_Private(one);
        (*in)[nin++] = NetFindNode_Private(names, one);
        PetscCheck((*in)[nin - 1] != -2, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": node %.255s takes \"%.255s\", which is no node defined before it: define every node before the nodes that use it (the Net's input is called input)",
                   graph, name, one);
      }
    } else {
      PetscCall(PetscMalloc1(1, in));
      (*in)[nin++] = prev;
    }
    PetscCall(NetTakeStage_Private(net, spec, "-net_graph", place));
    first = net->nlayers;
    PetscCall(NetLayerEntrySplit_Private(spec, &kind, &args, &why));
    PetscCheck(!why, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": in node %.255s, %s", graph, name, why);
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%s_", name));
    PetscCall(PetscStrcmp(kind, "residual", &isres));
    PetscCall(PetscStrcmp(kind, "transformer", &istr));
    if (isres || istr) {
      PetscCheck(nin == 1, comm, PETSC_ERR_ARG_WRONG, "Malformed -net_graph \"%s\": the %s node %.255s takes one input, not %" PetscInt_FMT, graph, kind, name, nin);
      if (isres)
        PetscCall(NetAppendResidual_Private(net, args, graph, (*in)[0], name, pre, net->nlayers, 1, &node));
      else
        PetscCall(NetAppendTransformer_Private(net, args, graph, (*in)[0], name, pre, net->nlayers, 1, &node));
    } else {
      PetscCall(NetCheckKind_Private(net, kind, "-net_graph", e, graph));
      PetscCall(NetAppendNode_Private(net, kind, args, name, pre, net->nlayers, nin, *in, &node));
      PetscCall(PetscObjectSetName((PetscObject)net->layers[node], name)); /* errors about its inputs name the node */
      PetscCheck(nin >= net->layers[node]->mininputs && nin <= net->layers[node]->maxinputs, comm, PETSC_ERR_ARG_WRONG, "-net_graph \"%s\": node %.255s (%s) takes %s %" PetscInt_FMT " input%s, not %" PetscInt_FMT "%s", graph, name, kind,
                 net->layers[node]->mininputs == net->layers[node]->maxinputs ? "exactly" : "at least", net->layers[node]->mininputs, net->layers[node]->mininputs > 1 ? "s" : "", nin,
                 net->layers[node]->maxinputs == 1 ? ": give it one input (a join such as add or concat takes several)" : ": name them after '<-' (e.g. s = add <- a, b)");
    }
    NetPlaceEntry_Private(net, first, place);
    PetscCall(PetscFree(*in));
    prev = node;
    {
      int      ret;
      khiter_t it = kh_put(NetNames, names, name, &ret);

      PetscCheck(ret >= 0, comm, PETSC_ERR_MEM, "Out of memory for the names of -net_graph");
      kh_val(names, it) = node;
    }
  }
  PetscFunctionReturn(0);
}

/*@C
  NetSetGraph - replaces the layers with a directed acyclic graph of named nodes.

  Collective

  Input Parameters:
+ net   - the Net
- graph - entries "name = kind[:args] [<- input, ...]" separated by ';'

  Options Database Key:
. -net_graph <graph> - the same from the options

  Level: beginner

  Notes:
  Each input is an earlier node's name or "input" (the Net's input); an entry without "<-" takes the previous node (the
  Net's input for the first). The last node is the Net's output, and every other node must feed some node. Joins take
  several inputs: add (same shapes) and concat (along channels). A node's output may feed several nodes (the cotangents
  are added up in backward). Node name reads its options with the prefix -<name>_ and names its tensors <name>.weight, ...
  An entry may be a residual(F|P) block.
  Example, a residual block and a U-Net style skip connection:
.vb
  -net_graph "stem = conv2d:8:3:1:1; a = relu; b = conv2d:8:3:1:1; sum = add <- b, stem; cat = concat <- sum, input; out = conv2d:1:1"
.ve

.seealso: `NetSetLayers()`, `NetGetSpec()`, `NetGetLayerInputs()`
@*/
PetscErrorCode NetSetGraph(Net net, const char graph[])
{
  char     *copy;
  PetscInt *in = NULL;
  khash_t(NetNames) * names;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckParentheses_Private(net, "-net_graph", graph));
  PetscCall(NetClearLayers_Private(net));
  net->graph = PETSC_TRUE;
  PetscCall(PetscStrallocpy(graph, &copy));
  names = kh_init(NetNames);
  PetscCheck(names, PetscObjectComm((PetscObject)net), PETSC_ERR_MEM, "Out of memory for the names of -net_graph");
  ierr = NetSetGraphEntries_Private(net, graph, copy, &in, names);
  kh_destroy(NetNames, names);
  PetscCall(PetscFree(in));
  PetscCall(PetscFree(copy));
  PetscCall(ierr);
  PetscCheck(net->nlayers > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Empty -net_graph: give nodes such as \"a = dense:16; b = relu; c = dense:10\"");
  PetscFunctionReturn(0);
}

/*@C
  NetAddLayer - appends a layer to the chain: its input is the last node's output (the Net's input for the first).

  Collective

  Input Parameters:
+ net  - the Net
. type - the layer kind, e.g. LAYERDENSE, or "residual"
- args - its compact settings ("256" for dense; "F|P" for residual) or NULL

  Output Parameter:
. layer - the new layer (borrowed), or NULL; for residual, the add node joining the block

  Level: intermediate

  Note:
  The layer gets the options prefix <net prefix>layer<e>_, e its position among the chain's entries.

.seealso: `NetSetLayers()`, `NetGetLayer()`
@*/
PetscErrorCode NetAddLayer(Net net, LayerType type, const char args[], Layer *layer)
{
  PetscInt  e = 0, from = net->nlayers ? net->nlayers - 1 : NET_INPUT, node;
  char      name[64], pre[64];
  PetscBool isres, istr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (net->setupcalled) PetscCall(NetReset(net));
  for (PetscInt k = 0; k < net->nlayers; k++) e += net->nodes[k].owner < 0 && (net->nodes[k].block < 0 || net->nodes[k].block == k);
  PetscCall(PetscSNPrintf(name, sizeof(name), net->graph ? "layer%" PetscInt_FMT : "%" PetscInt_FMT, e));
  PetscCall(PetscSNPrintf(pre, sizeof(pre), "layer%" PetscInt_FMT "_", e));
  PetscCall(PetscStrcmp(type, "residual", &isres));
  PetscCall(PetscStrcmp(type, "transformer", &istr));
  if (isres)
    PetscCall(NetAppendResidual_Private(net, args, args ? args : "", from, name, pre, e, 1, &node));
  else if (istr)
    PetscCall(NetAppendTransformer_Private(net, args, args ? args : "", from, name, pre, e, 1, &node));
  else
    PetscCall(NetAppendNode_Private(net, type, args, name, pre, e, 1, &from, &node));
  if (layer) *layer = net->layers[node];
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpecAppend_Private(size_t len, char spec[], size_t *n, const char s[])
{
  size_t l = strlen(s);

  PetscFunctionBegin;
  PetscCheck(*n + l < len, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "The layer list of this Net is longer than the %zu characters given to NetGetSpec(): pass a larger buffer", len);
  PetscCall(PetscMemcpy(spec + *n, s, l + 1));
  *n += l;
  PetscFunctionReturn(0);
}

/* transformer:H:F[:causal][:rotary] of the block whose last node is k, from its attention node (H[:causal]) and its first dense (F) */
static PetscErrorCode NetTransformerSpec_Private(Net net, PetscInt k, size_t len, char spec[])
{
  char attn[NET_MAX_NAME] = "", fc1[NET_MAX_NAME] = "", *rest;
  long H = 0, F = 0;

  PetscFunctionBegin;
  for (PetscInt j = 0; j < k; j++) {
    PetscBool isattn, isdense;

    if (net->nodes[j].block != k) continue;
    PetscCall(PetscObjectTypeCompare((PetscObject)net->layers[j], "attention", &isattn));
    PetscCall(PetscObjectTypeCompare((PetscObject)net->layers[j], LAYERDENSE, &isdense));
    if (isattn && !attn[0]) PetscCall(LayerGetSpec(net->layers[j], sizeof(attn), attn));
    if (isdense && !fc1[0]) PetscCall(LayerGetSpec(net->layers[j], sizeof(fc1), fc1));
  }
  /* attention:H[:more] and dense:F:tokens */
  H = strtol(attn + strlen("attention:"), &rest, 10);
  F = strtol(fc1 + strlen("dense:"), NULL, 10);
  PetscCheck(H > 0 && F > 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: a transformer block without its attention (%s) or its MLP (%s)", net->nodes[k].name, attn, fc1);
  PetscCall(PetscSNPrintf(spec, len, "transformer:%ld:%ld%s", H, F, rest));
  PetscFunctionReturn(0);
}

/* Writes the entries whose owner is `owner` (and, inside a block, whose branch is `branch`) as a layer list */
PetscErrorCode NetListSpec_Private(Net net, PetscInt owner, PetscInt branch, size_t len, char spec[], size_t *n)
{
  PetscBool first = PETSC_TRUE;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetNode *nd = &net->nodes[k];

    if (nd->owner != owner || (owner >= 0 && nd->branch != branch)) continue;
    if (nd->block >= 0 && nd->block != k) continue; /* written with the transformer block's last node */
    if (!first) PetscCall(NetSpecAppend_Private(len, spec, n, ","));
    first = PETSC_FALSE;
    if (nd->block == k) {
      char one[NET_MAX_NAME];

      PetscCall(NetTransformerSpec_Private(net, k, sizeof(one), one));
      PetscCall(NetSpecAppend_Private(len, spec, n, one));
    } else if (nd->residual) {
      PetscBool shortcut = PETSC_FALSE;

      for (PetscInt j = 0; j < k; j++) shortcut = (PetscBool)(shortcut || (net->nodes[j].owner == k && net->nodes[j].branch == 1));
      PetscCall(NetSpecAppend_Private(len, spec, n, "residual:("));
      PetscCall(NetListSpec_Private(net, k, 0, len, spec, n));
      if (shortcut) {
        PetscCall(NetSpecAppend_Private(len, spec, n, "|"));
        PetscCall(NetListSpec_Private(net, k, 1, len, spec, n));
      }
      PetscCall(NetSpecAppend_Private(len, spec, n, ")"));
    } else {
      char one[NET_MAX_NAME];

      PetscCall(NetNodeSpec_Private(net, k, sizeof(one), one));
      PetscCall(NetSpecAppend_Private(len, spec, n, one));
    }
  }
  PetscFunctionReturn(0);
}

/* The entry of node k: its layer's text (LayerGetSpec()), then the node's partition, e.g. dense:8192:partition=2x1 */
PetscErrorCode NetNodeSpec_Private(Net net, PetscInt k, size_t len, char spec[])
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(nd->layer, len, spec));
  if (nd->partition[0] > 0) {
    char part[64];

    PetscCall(PetscSNPrintf(part, sizeof(part), ":partition=%" PetscInt_FMT "x%" PetscInt_FMT, nd->partition[0], nd->partition[1]));
    PetscCall(PetscStrlcat(spec, part, len));
  }
  PetscFunctionReturn(0);
}

/* The name of what feeds input i of node k, in the graph form: the input of a residual entry is that of its first member */
static const char *NetInputName_Private(Net net, PetscInt in)
{
  return in == NET_INPUT ? "input" : net->nodes[in].name;
}

/*@C
  NetGetSpec - the text that rebuilds this Net: a layer list for NetSetLayers() or a graph for NetSetGraph().

  Not collective

  Input Parameters:
+ net - the Net
- len - the size of spec

  Output Parameter:
. spec - the text; a graph's entries all end with ';', which no layer list holds

  Level: intermediate

.seealso: `NetSetLayers()`, `NetSetGraph()`, `LayerGetSpec()`
@*/
PetscErrorCode NetGetSpec(Net net, size_t len, char spec[])
{
  size_t n = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  spec[0] = 0;
  if (!net->graph) {
    PetscCall(NetListSpec_Private(net, -1, 0, len, spec, &n));
    PetscFunctionReturn(0);
  }
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetNode *nd = &net->nodes[k];
    char           one[NET_MAX_NAME];
    size_t         m = 0;

    if (nd->owner >= 0 || (nd->block >= 0 && nd->block != k)) continue;
    PetscCall(PetscSNPrintf(one, sizeof(one), "%s%s = ", n ? " " : "", nd->name));
    PetscCall(NetSpecAppend_Private(len, spec, &n, one));
    if (nd->block == k) {
      PetscInt first = k;

      for (PetscInt j = k - 1; j >= 0; j--)
        if (net->nodes[j].block == k) first = j;
      PetscCall(NetTransformerSpec_Private(net, k, sizeof(one), one));
      PetscCall(NetSpecAppend_Private(len, spec, &n, one));
      PetscCall(NetSpecAppend_Private(len, spec, &n, " <- "));
      PetscCall(NetSpecAppend_Private(len, spec, &n, NetInputName_Private(net, net->nodes[first].in[0])));
    } else if (nd->residual) {
      PetscInt first = k;

      for (PetscInt j = k - 1; j >= 0; j--)
        if (net->nodes[j].owner == k && net->nodes[j].branch == 0) first = j;
      one[0] = 0;
      PetscCall(NetListSpec_Private(net, k, 0, sizeof(one), one, &m));
      PetscCall(NetSpecAppend_Private(len, spec, &n, "residual:("));
      PetscCall(NetSpecAppend_Private(len, spec, &n, one));
      for (PetscInt j = 0; j < k; j++)
        if (net->nodes[j].owner == k && net->nodes[j].branch == 1) {
          m      = 0;
          one[0] = 0;
          PetscCall(NetListSpec_Private(net, k, 1, sizeof(one), one, &m));
          PetscCall(NetSpecAppend_Private(len, spec, &n, "|"));
          PetscCall(NetSpecAppend_Private(len, spec, &n, one));
          break;
        }
      PetscCall(NetSpecAppend_Private(len, spec, &n, ") <- "));
      PetscCall(NetSpecAppend_Private(len, spec, &n, NetInputName_Private(net, net->nodes[first].in[0])));
    } else {
      PetscCall(NetNodeSpec_Private(net, k, sizeof(one), one));
      PetscCall(NetSpecAppend_Private(len, spec, &n, one));
      for (PetscInt i = 0; i < nd->nin; i++) {
        PetscCall(NetSpecAppend_Private(len, spec, &n, i ? ", " : " <- "));
        PetscCall(NetSpecAppend_Private(len, spec, &n, NetInputName_Private(net, nd->in[i])));
      }
    }
    PetscCall(NetSpecAppend_Private(len, spec, &n, ";"));
  }
  PetscFunctionReturn(0);
}
