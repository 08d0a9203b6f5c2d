/*
  permute:i,j,k - a permutation of a sample's dims, 0-based, as torch.permute on the dims after the batch dim (write it
  permute(1,0) in a layer list, whose entries are separated by commas; permute:1,0 in a graph node). No parameters.

    x  [n][s_0]...[s_{r-1}]                       the input's per-sample shape s, r <= 5 dims
    y  [n][s_{p_0}]...[s_{p_{r-1}}]               y[i_0..i_{r-1}] = x[j], j_{p_d} = i_d
    forward   y  = P x                            (the strided transpose of permute.h: tiled, threaded)
    backward  dx = P^T dy = P^{-1} dy             (the inverse permutation q, q_{p_d} = d)
    jvp       dy = P dx                           (linear: the forward on the tangent)
    sobackward: zero (linear)

  Each entry is moved, never summed, so every pass is exact: permute followed by its inverse is the identity bit for
  bit, in double and in float, at any thread count.
*/
#include "permute.h"

/* the transposes, in double and in float (permutekernels.h) */
#define PERM_T       PetscScalar
#define PERM_NAME(f) f
#include "permutekernels.h"
#undef PERM_T
#undef PERM_NAME
#define PERM_T       float
#define PERM_NAME(f) f##Single
#include "permutekernels.h"
#undef PERM_T
#undef PERM_NAME

typedef struct {
  PetscInt  r;                            /* the number of dims of the permutation (0: not given yet) */
  PetscInt  perm[PETNET_MAX_DIM];         /* y's dim d is x's dim perm[d] */
  PetscInt  inv[PETNET_MAX_DIM];          /* x's dim d is y's dim inv[d] */
  PetscBool identity;                     /* perm moves nothing: a copy */
  char      text[8 * PETNET_MAX_DIM + 8]; /* the arguments as written, for messages */
} Layer_Permute;

/* i,j,k: up to PETNET_MAX_DIM integers separated by commas, read at set-up (where the node has its name for messages) */
static PetscErrorCode PermuteParse(Layer layer, const char node[])
{
  Layer_Permute *pm   = (Layer_Permute *)layer->data;
  const char    *args = pm->text, *s = args;
  PetscInt       r = 0;

  PetscFunctionBegin;
  while (1) {
    char     *end;
    long long v = strtoll(s, &end, 10);

    PetscCheck(end != s, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
               "The %s is malformed: permute takes the sample's dims in their new order, 0-based integers separated by commas (permute(1,0) in -net_layers, permute:1,0 in a -net_graph node), e.g. permute(2,0,1) for (h, w, c) -> (c, h, w)", node);
    PetscCheck(r < PETNET_MAX_DIM, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has more than %d dims: a sample has at most %d", node, PETNET_MAX_DIM, PETNET_MAX_DIM);
    PetscCheck(v >= -PETNET_MAX_DIM && v < 100, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: dim %lld is out of range; write the sample's dims 0..r-1 (the batch dim is implicit)", node, v);
    pm->perm[r++] = (PetscInt)v;
    while (*end == ' ') end++;
    if (!*end) break;
    PetscCheck(*end == ',', PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s is malformed: the dims are separated by commas, e.g. permute(2,0,1)", node);
    s = end + 1;
  }
  pm->r = r;
  PetscFunctionReturn(0);
}

/* keeps the text (blanks removed); PermuteParse() reads it at set-up */
static PetscErrorCode LayerSetArguments_Permute(Layer layer, const char args[])
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerCopyArgumentsWithoutBlanks_Private(layer, args, sizeof(pm->text), pm->text, "a sample has at most " PetscStringize(PETNET_MAX_DIM) " dims"));
  pm->r = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Permute(Layer layer, size_t len, char args[])
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(args, pm->text, len));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Permute(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  char      value[8 * PETNET_MAX_DIM + 8];
  PetscBool set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Permutation of a sample's dims");
  PetscCall(LayerGetArguments_Permute(layer, sizeof(value), value));
  PetscCall(PetscOptionsString("-permute_dims", "The sample's dims in their new order, 0-based, e.g. 2,0,1", "LayerSetArguments", value, value, sizeof(value), &set));
  if (set) PetscCall(LayerSetArguments_Permute(layer, value));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

/* the permutation must be one of the input's dims: r of them, each 0..r-1 once (a negative d counts from the end, as in torch) */
static PetscErrorCode LayerSetUp_Permute(Layer layer)
{
  Layer_Permute *pm                   = (Layer_Permute *)layer->data;
  const PetscInt r                    = layer->in.ndim;
  PetscBool      seen[PETNET_MAX_DIM] = {PETSC_FALSE};
  char           node[512], shape[64];

  PetscFunctionBegin;
  PetscCall(LayerShapeKindDescription(layer, pm->text, "dims", sizeof(node), node));
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  if (pm->text[0]) PetscCall(PermuteParse(layer, node));
  PetscCheck(pm->r > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has no permutation: write permute(i,j,k) with the input's %" PetscInt_FMT " dims (%s) in their new order, e.g. permute(1,0) for (T, E) -> (E, T)", node, r,
             shape);
  PetscCheck(pm->r == r, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
             "The %s permutes %" PetscInt_FMT " dims, but its input %s has %" PetscInt_FMT ": write a permutation of 0..%" PetscInt_FMT " (the batch dim is implicit and never written)", node, pm->r, shape, r, r - 1);
  for (PetscInt d = 0; d < r; d++) {
    const PetscInt p = pm->perm[d] < 0 ? pm->perm[d] + r : pm->perm[d];

    PetscCheck(p >= 0 && p < r, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s names dim %" PetscInt_FMT ", out of range for its input %s of %" PetscInt_FMT " dims: write each of 0..%" PetscInt_FMT " once", node, pm->perm[d],
               shape, r, r - 1);
    PetscCheck(!seen[p], PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s is not a permutation: dim %" PetscInt_FMT " appears twice (so another is missing); write each of 0..%" PetscInt_FMT " once", node, p, r - 1);
    seen[p]     = PETSC_TRUE;
    pm->perm[d] = p;
  }
  for (PetscInt d = 0; d < r; d++) pm->inv[pm->perm[d]] = d;
  pm->identity    = LayerPermuteIsIdentity(r, pm->perm);
  layer->out.ndim = r;
  for (PetscInt d = 0; d < r; d++) layer->out.dim[d] = layer->in.dim[pm->perm[d]];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  LayerPermuteApply(n, pm->r, layer->in.dim, pm->perm, PETSC_FALSE, x, y);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  if (dx) LayerPermuteApply(n, pm->r, layer->out.dim, pm->inv, PETSC_FALSE, dy, dx);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  LayerPermuteApply(n, pm->r, layer->in.dim, pm->perm, PETSC_FALSE, dx, dy);
  PetscFunctionReturn(0);
}

/* single precision (layerimpl.h): the same moves of float values */
static PetscErrorCode LayerForwardSingle_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  LayerPermuteApplySingle(n, pm->r, layer->in.dim, pm->perm, PETSC_FALSE, x, y);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  if (dx) LayerPermuteApplySingle(n, pm->r, layer->out.dim, pm->inv, PETSC_FALSE, dy, dx);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Permute(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;

  PetscFunctionBegin;
  LayerPermuteApplySingle(n, pm->r, layer->in.dim, pm->perm, PETSC_FALSE, dx, dy);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Permute(Layer layer, PetscViewer viewer)
{
  Layer_Permute *pm = (Layer_Permute *)layer->data;
  char           args[8 * PETNET_MAX_DIM + 8];

  PetscFunctionBegin;
  PetscCall(LayerGetArguments_Permute(layer, sizeof(args), args));
  PetscCall(PetscViewerASCIIPrintf(viewer, "dims in the order (%s)%s\n", args, pm->identity ? ", the identity" : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Permute(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Permute(Layer layer)
{
  Layer_Permute *pm;

  PetscFunctionBegin;
  PetscCall(PetscNew(&pm));
  layer->data                = pm;
  layer->ops->setarguments   = LayerSetArguments_Permute;
  layer->ops->getarguments   = LayerGetArguments_Permute;
  layer->ops->setfromoptions = LayerSetFromOptions_Permute;
  layer->ops->setup          = LayerSetUp_Permute;
  layer->ops->forward        = LayerForward_Permute;
  layer->ops->backward       = LayerBackward_Permute;
  layer->ops->jvp            = LayerJVP_Permute;
  layer->ops->forwardsingle  = LayerForwardSingle_Permute;
  layer->ops->backwardsingle = LayerBackwardSingle_Permute;
  layer->ops->jvpsingle      = LayerJVPSingle_Permute;
  layer->ops->view           = LayerView_Permute;
  layer->ops->destroy        = LayerDestroy_Permute;
  layer->sozero              = PETSC_TRUE; /* linear in x: no curvature term */
  layer->gradfree            = PETSC_TRUE; /* no parameters */
  layer->actonly             = PETSC_TRUE; /* reads nothing of a forward pass but its arrays */
  PetscFunctionReturn(0);
}
