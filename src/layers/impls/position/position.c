/*
  position:T and position:T:sinusoidal: a table of positions added to a sequence (the positional encodings of a
  transformer).

    x, y    [n][T'][E]   a sample (T', E), T' <= T positions; y[s][t] = x[s][t] + P[t]
    theta   position:T             W [T][E] ("weight", as PyTorch's nn.Embedding(T, E) of the positions 0..T'-1;
                                   starts N(0, 0.02^2), GPT-2's; rows T'..T-1 are not used and get no gradient)
            position:T:sinusoidal  none: P[t][2i] = sin(t / 10000^(2i/E)), P[t][2i+1] = cos(t / 10000^(2i/E))
                                   ("Attention is all you need", section 3.5), computed once at set-up in double

  An offset t0 (LayerPositionSetOffset_C, for a Net that splits the tokens of a sequence over its ranks: the copy on a
  rank's tokens [t0, t0 + T')) reads the rows [t0, t0 + T') instead: P[t0 + t], the learned rows of theta from t0 E
  (their gradient likewise), the fixed ones computed at the global positions t0 + t.
  The map is the identity in x plus a constant (sinusoidal) or plus a linear function of W:
    jvp       dy = dx + dW[t]
    backward  dx = dy,  dW[t] += sum_s dy[s][t]
    second order  no curvature term (sozero: backward depends on neither x nor W)
  A T' larger than T is refused at set-up, before anything is allocated, naming the node, T' and T.
  Single precision: the same kernels on float values (positionkernels.h).
*/
#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt     T;          /* the table's positions */
  PetscBool    sinusoidal; /* the fixed table instead of parameters */
  PetscReal    initstd;    /* the learned table's N(0, std^2) */
  PetscScalar *table;      /* sinusoidal: P [T'][E], the rows the input uses */
  PetscInt     t0;         /* the global position of the input's first row (0 but for a Net's copy on a rank's tokens) */
} Layer_Position;

/* the rows the input uses: theta's rows [t0, t0 + T'), or the fixed table (computed from t0) */
static inline const PetscScalar *PositionTable(Layer layer, const PetscScalar *theta)
{
  Layer_Position *pos = (Layer_Position *)layer->data;

  return pos->sinusoidal ? pos->table : theta + (size_t)pos->t0 * layer->in.dim[1];
}

/* the gradient of the rows the input uses (the learned table) */
static inline PetscScalar *PositionGradient(Layer layer, PetscScalar *dtheta)
{
  return dtheta + (size_t)((Layer_Position *)layer->data)->t0 * layer->in.dim[1];
}

#define POS_T       PetscScalar
#define POS_NAME(f) f
#include "positionkernels.h"
#undef POS_T
#undef POS_NAME
#define POS_T       float
#define POS_NAME(f) f##Single
#include "positionkernels.h"
#undef POS_T
#undef POS_NAME

/* the node's name in messages */
static PetscErrorCode PositionDescription(Layer layer, size_t len, char desc[])
{
  PetscFunctionBegin;
  if (((PetscObject)layer)->name)
    PetscCall(LayerGetNodeDescription_Private(layer, len, desc));
  else if (layer->index >= 0)
    PetscCall(PetscSNPrintf(desc, len, "position layer %" PetscInt_FMT, layer->index));
  else
    PetscCall(PetscSNPrintf(desc, len, "position layer"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_Position(Layer layer)
{
  Layer_Position *pos = (Layer_Position *)layer->data;
  const char     *prefix;
  char            node[256], shape[128];
  PetscInt        Tp, E;

  PetscFunctionBegin;
  PetscCall(PositionDescription(layer, sizeof(node), node));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(pos->T > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has no number of positions: write position:T in -net_layers (e.g. position:128, or position:128:sinusoidal), or give -%sposition_length T", node,
             prefix ? prefix : "");
  PetscCheck(layer->in.ndim == 2, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "The %s adds a table of positions to a sequence (T', E), but its input is %s: give it a sample of two dimensions, e.g. after embedding:V:E on (T') ids", node,
             shape);
  Tp = layer->in.dim[0];
  E  = layer->in.dim[1];
  PetscCheck(Tp <= pos->T, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "The %s has a table of T = %" PetscInt_FMT " positions, but its input %s has T' = %" PetscInt_FMT ": write position:%" PetscInt_FMT " (or more), or give shorter sequences", node, pos->T, shape, Tp, Tp);
  PetscCheck(pos->t0 >= 0 && (PetscInt64)pos->t0 + Tp <= pos->T, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "The %s reads the rows [%" PetscInt_FMT ", %" PetscInt64_FMT ") of its table of T = %" PetscInt_FMT " positions: write position:%" PetscInt64_FMT " (or more)", node, pos->t0, (PetscInt64)pos->t0 + Tp, pos->T, (PetscInt64)pos->t0 + Tp);
  PetscCheck((PetscInt64)pos->T * E <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s's table of %" PetscInt_FMT " x %" PetscInt_FMT " has more entries than %d, the largest PetscInt: use a smaller T", node,
             pos->T, E, PETSC_MAX_INT);
  layer->out     = layer->in;
  layer->nparams = pos->sinusoidal ? 0 : pos->T * E;
  PetscCall(PetscFree(pos->table));
  if (pos->sinusoidal) { /* P[t][2i] = sin(t w_i), P[t][2i+1] = cos(t w_i), w_i = 10000^(-2i/E), at the global t0 + t */
    PetscCall(PetscMalloc1((size_t)Tp * E, &pos->table));
    for (PetscInt t = 0; t < Tp; t++)
      for (PetscInt e = 0; e < E; e++) {
        const PetscReal w = PetscPowReal(10000.0, -(PetscReal)(e - e % 2) / E), a = (PetscReal)(pos->t0 + t) * w;

        pos->table[(size_t)t * E + e] = e % 2 ? PetscCosReal(a) : PetscSinReal(a);
      }
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Position(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Position *pos = (Layer_Position *)layer->data;

  PetscFunctionBegin;
  if (layer->nparams) PetscCall(LayerInitializeWeights(rnd, LAYER_INIT_NORMAL, pos->initstd, layer->in.dim[1], pos->T, layer->nparams, theta));
  PetscFunctionReturn(0);
}

/* PyTorch nn.Embedding(T, E) of the positions: weight [T][E], the same layout */
static PetscErrorCode LayerTensors_Position(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Position *pos  = (Layer_Position *)layer->data;
  const PetscInt  w[2] = {pos->T, layer->in.dim[1]};

  PetscFunctionBegin;
  *n = 0;
  if (!layer->nparams) PetscFunctionReturn(0);
  PetscCall(LayerTensorSet_Private(&info[0], "weight", 0, LAYER_TENSOR_SAME, 2, w));
  *n = 1;
  PetscFunctionReturn(0);
}

/* T[:sinusoidal] */
static PetscErrorCode LayerSetArguments_Position(Layer layer, const char args[])
{
  Layer_Position *pos = (Layer_Position *)layer->data;
  char           *end;
  long long       T = strtoll(args, &end, 10);

  PetscFunctionBegin;
  PetscCheck(end != args && T > 0 && (!*end || !strcmp(end, ":sinusoidal")), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "Malformed \"position:%s\": position takes T, the positions of its table, and optionally :sinusoidal, e.g. position:128 (a learned table) or position:128:sinusoidal (the fixed one)", args);
  PetscCheck(T <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "position:%s: T is more than %d, the largest PetscInt", args, PETSC_MAX_INT);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  pos->T          = (PetscInt)T;
  pos->sinusoidal = (PetscBool)(*end != 0);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Position(Layer layer, size_t len, char args[])
{
  Layer_Position *pos = (Layer_Position *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s", pos->T, pos->sinusoidal ? ":sinusoidal" : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Position(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Position *pos = (Layer_Position *)layer->data;
  PetscInt        T   = pos->T;
  PetscBool       sin = pos->sinusoidal, set, sset;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Position layer options");
  PetscCall(PetscOptionsInt("-position_length", "Positions of the table (T, at least the input's T')", "LayerSetArguments", T, &T, &set));
  PetscCheck(!set || T > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-position_length (T, the positions of the table) must be positive, not %" PetscInt_FMT, T);
  PetscCall(PetscOptionsBool("-position_sinusoidal", "The fixed sinusoidal table instead of a learned one", "LayerSetArguments", sin, &sin, &sset));
  if ((set && T != pos->T) || (sset && sin != pos->sinusoidal)) {
    if (layer->setupcalled) PetscCall(LayerReset(layer));
    pos->T          = T;
    pos->sinusoidal = sin;
  }
  PetscCall(PetscOptionsReal("-position_init_std", "Standard deviation of the learned table's N(0, std^2) start", "LayerSetArguments", pos->initstd, &pos->initstd, NULL));
  PetscCheck(pos->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-position_init_std must be non-negative, not %g", (double)pos->initstd);
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Position(Layer layer, PetscViewer viewer)
{
  Layer_Position *pos = (Layer_Position *)layer->data;

  PetscFunctionBegin;
  if (pos->sinusoidal)
    PetscCall(PetscViewerASCIIPrintf(viewer, "fixed sinusoidal table of %" PetscInt_FMT " positions\n", pos->T));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "learned table of %" PetscInt_FMT " positions, initialisation N(0, %g^2)\n", pos->T, (double)pos->initstd));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Position(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(((Layer_Position *)layer->data)->table));
  PetscFunctionReturn(0);
}

/* for a Net splitting the tokens of a sequence: the input's first row is at the global position t0 (before LayerSetUp()) */
static PetscErrorCode LayerPositionSetOffset_Position(Layer layer, PetscInt t0)
{
  Layer_Position *pos = (Layer_Position *)layer->data;

  PetscFunctionBegin;
  if (pos->t0 == t0) PetscFunctionReturn(0);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  pos->t0 = t0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Position(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPositionSetOffset_C", NULL));
  PetscCall(PetscFree(((Layer_Position *)layer->data)->table));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Position(Layer layer)
{
  Layer_Position *pos;

  PetscFunctionBegin;
  PetscCall(PetscNew(&pos));
  pos->initstd               = 0.02;
  layer->data                = pos;
  layer->ops->setup          = LayerSetUp_Position;
  layer->ops->initialize     = LayerInitialize_Position;
  layer->ops->forward        = LayerForward_Position;
  layer->ops->backward       = LayerBackward_Position;
  layer->ops->jvp            = LayerJVP_Position;
  layer->ops->forwardsingle  = LayerForward_PositionSingle;
  layer->ops->backwardsingle = LayerBackward_PositionSingle;
  layer->ops->jvpsingle      = LayerJVP_PositionSingle;
  layer->sozero              = PETSC_TRUE; /* linear in W, the identity in x plus a constant: no curvature term */
  layer->gradfree            = PETSC_TRUE; /* dW is a sum of dy: W is not read */
  layer->actonly             = PETSC_TRUE; /* backward and jvp read nothing of the point */
  layer->ops->tensors        = LayerTensors_Position;
  layer->ops->setarguments   = LayerSetArguments_Position;
  layer->ops->getarguments   = LayerGetArguments_Position;
  layer->ops->setfromoptions = LayerSetFromOptions_Position;
  layer->ops->view           = LayerView_Position;
  layer->ops->reset          = LayerReset_Position;
  layer->ops->destroy        = LayerDestroy_Position;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPositionSetOffset_C", LayerPositionSetOffset_Position));
  PetscFunctionReturn(0);
}
