/*
  embedding:V:E: a lookup table of V rows of E features (PyTorch's nn.Embedding(V, E)).

    x       [n][T]       a sample is a sequence of T token ids, stored as values of the input (integers in [0, V))
    y       [n][T][E]    y[i][t] = W[x[i][t]]  (the output shape is the input's with E appended: (T) -> (T, E))
    theta   W [V][E]     ("weight", PyTorch's layout; starts N(0, 1) as PyTorch's)

  The map is linear in W and constant in the ids (they are not differentiable):
    jvp       dy[p] = dW[id(p)]                       (an input tangent is ignored)
    backward  dW[v] += sum_{p: id(p) = v} dy[p]       (a scatter-add of rows, deterministic: embeddingkernels.h)
              dx = 0
    sobackward  zero: backward does not depend on W, nor on the ids within their integers (sozero)
  Forward refuses an id that is not an integer in [0, V), naming the layer, the sample and position, the value and V.
  Single precision (a Net at -net_precision single or bfloat16): the same kernels on float values
  (embeddingkernels.h); ids up to 2^24 are exact in float.
*/
#include <petnet/private/layerimpl.h>

typedef struct {
  PetscInt V, E; /* rows of the table (the vocabulary), features of a row */
  PetscInt T;    /* ids per sample (the input's size) */
} Layer_Embedding;

/* positions per part of forward (at least 4096 values), rows of the table per part of backward */
#define EMBEDDING_PART_POSITIONS(E) PetscMax(1, 4096 / PetscMax((E), 1))
#define EMBEDDING_PART_ROWS(E)      PetscMax(1, 4096 / PetscMax((E), 1))

/* the node's name in messages */
static PetscErrorCode EmbeddingDescription(Layer layer, size_t len, char desc[])
{
  PetscFunctionBegin;
  if (((PetscObject)layer)->name)
    PetscCall(LayerGetNodeDescription_Private(layer, len, desc));
  else if (layer->index >= 0)
    PetscCall(PetscSNPrintf(desc, len, "embedding layer %" PetscInt_FMT, layer->index));
  else
    PetscCall(PetscSNPrintf(desc, len, "embedding layer"));
  PetscFunctionReturn(0);
}

/* id of position p (sample p / T, position p % T of the local batch) must be an integer in [0, V) */
static PetscErrorCode EmbeddingCheckId(Layer layer, PetscInt p, PetscReal v)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  char             node[256];

  PetscFunctionBegin;
  if (v >= 0 && v < emb->V && v == PetscFloorReal(v)) PetscFunctionReturn(0);
  PetscCall(EmbeddingDescription(layer, sizeof(node), node));
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
          "The %s reads token ids, but sample %" PetscInt_FMT " (of this rank's batch), position %" PetscInt_FMT ", holds %.17g: give integers in [0, V) with V = %" PetscInt_FMT " (embedding:V:E), e.g. the tokenizer's ids", node, p / emb->T,
          p % emb->T, (double)v, emb->V);
}

/* forward, backward and jvp, in double and in float (embeddingkernels.h) */
#define EMB_T       PetscScalar
#define EMB_NAME(f) f
#include "embeddingkernels.h"
#undef EMB_T
#undef EMB_NAME
#define EMB_T       float
#define EMB_NAME(f) f##Single
#include "embeddingkernels.h"
#undef EMB_T
#undef EMB_NAME

static PetscErrorCode LayerSetUp_Embedding(Layer layer)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  char             node[256];

  PetscFunctionBegin;
  PetscCall(EmbeddingDescription(layer, sizeof(node), node));
  PetscCheck(emb->V > 0 && emb->E > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "The %s has no table size: write embedding:V:E in -net_layers (V rows, the vocabulary; E features each, e.g. embedding:1000:64), or give -%sembedding_num V and -%sembedding_dim E", node,
             ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "", ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "");
  PetscCheck((PetscInt64)emb->V * emb->E <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s's table of %" PetscInt_FMT " x %" PetscInt_FMT " has more entries than %d, the largest PetscInt: use a smaller V or E",
             node, emb->V, emb->E, PETSC_MAX_INT);
  PetscCheck(layer->in.ndim < PETNET_MAX_DIM, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "The %s appends a dimension E to its input's shape, which has %" PetscInt_FMT " already (at most %d): flatten the ids first", node, layer->in.ndim,
             PETNET_MAX_DIM);
  PetscCall(PetNetShapeSize(&layer->in, &emb->T));
  PetscCheck((PetscInt64)emb->T * emb->E <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s's output (%" PetscInt_FMT " ids of %" PetscInt_FMT " features) has more entries than %d, the largest PetscInt", node,
             emb->T, emb->E, PETSC_MAX_INT);
  layer->out                        = layer->in;
  layer->out.dim[layer->out.ndim++] = emb->E;
  layer->nparams                    = emb->V * emb->E;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Embedding(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, LAYER_INIT_NORMAL, 1.0, emb->E, emb->V, layer->nparams, theta));
  PetscFunctionReturn(0);
}

/* PyTorch Embedding(V, E): weight [V][E], the same layout */
static PetscErrorCode LayerTensors_Embedding(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, sizeof(info[0])));
  PetscCall(PetscStrcpy(info[0].name, "weight"));
  info[0].size    = emb->V * emb->E;
  info[0].ndim    = 2;
  info[0].dims[0] = emb->V;
  info[0].dims[1] = emb->E;
  *n              = 1;
  PetscFunctionReturn(0);
}

/* one positive size, V or E, of the text args */
static PetscErrorCode EmbeddingParseSize(Layer layer, const char args[], const char *s, const char *what, char **end, PetscInt *size)
{
  long long v = strtoll(s, end, 10);

  PetscFunctionBegin;
  PetscCheck(*end != s && v > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "Malformed \"embedding:%s\": %s must be a positive integer; embedding takes V:E, the rows of the table (the vocabulary) and the features of a row, e.g. embedding:1000:64", args, what);
  PetscCheck(v <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "embedding:%s: %s is more than %d, the largest PetscInt", args, what, PETSC_MAX_INT);
  *size = (PetscInt)v;
  PetscFunctionReturn(0);
}

/* V:E */
static PetscErrorCode LayerSetArguments_Embedding(Layer layer, const char args[])
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  char            *end;

  PetscFunctionBegin;
  PetscCall(EmbeddingParseSize(layer, args, args, "V (the number of rows)", &end, &emb->V));
  PetscCheck(*end == ':', PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"embedding:%s\": embedding takes V:E, the rows of the table (the vocabulary) and the features of a row, e.g. embedding:1000:64", args);
  PetscCall(EmbeddingParseSize(layer, args, end + 1, "E (the features of a row)", &end, &emb->E));
  PetscCheck(!*end, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"embedding:%s\": embedding takes exactly V:E, e.g. embedding:1000:64", args);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Embedding(Layer layer, size_t len, char args[])
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT ":%" PetscInt_FMT, emb->V, emb->E));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Embedding(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  PetscInt         V = emb->V, E = emb->E;
  PetscBool        set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Embedding layer options");
  PetscCall(PetscOptionsInt("-embedding_num", "Rows of the table (the vocabulary size V)", "LayerSetArguments", V, &V, &set));
  if (set) {
    PetscCheck(V > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-embedding_num (V, the rows of the table) must be positive, not %" PetscInt_FMT, V);
    emb->V = V;
  }
  PetscCall(PetscOptionsInt("-embedding_dim", "Features of a row (E)", "LayerSetArguments", E, &E, &set));
  if (set) {
    PetscCheck(E > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-embedding_dim (E, the features of a row) must be positive, not %" PetscInt_FMT, E);
    emb->E = E;
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Embedding(Layer layer, PetscViewer viewer)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "table of %" PetscInt_FMT " rows x %" PetscInt_FMT " features, %" PetscInt_FMT " ids per sample\n", emb->V, emb->E, emb->T));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Embedding(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Embedding(Layer layer)
{
  Layer_Embedding *emb;

  PetscFunctionBegin;
  PetscCall(PetscNew(&emb));
  layer->data                = emb;
  layer->ops->setup          = LayerSetUp_Embedding;
  layer->ops->initialize     = LayerInitialize_Embedding;
  layer->ops->forward        = LayerForward_Embedding;
  layer->ops->backward       = LayerBackward_Embedding;
  layer->ops->jvp            = LayerJVP_Embedding;
  layer->ops->forwardsingle  = LayerForward_EmbeddingSingle;
  layer->ops->backwardsingle = LayerBackward_EmbeddingSingle;
  layer->ops->jvpsingle      = LayerJVP_EmbeddingSingle;
  layer->sozero              = PETSC_TRUE; /* linear in W, constant in the ids: no curvature term */
  layer->gradfree            = PETSC_TRUE; /* dW is a scatter of dy: W is not read */
  layer->discrete            = PETSC_TRUE; /* the ids are not differentiable */
  layer->actonly             = PETSC_TRUE; /* backward and jvp read x alone */
  layer->ops->tensors        = LayerTensors_Embedding;
  layer->ops->setarguments   = LayerSetArguments_Embedding;
  layer->ops->getarguments   = LayerGetArguments_Embedding;
  layer->ops->setfromoptions = LayerSetFromOptions_Embedding;
  layer->ops->view           = LayerView_Embedding;
  layer->ops->destroy        = LayerDestroy_Embedding;
  PetscFunctionReturn(0);
}
