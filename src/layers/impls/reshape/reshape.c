/*
  reshape:AxBxC - the same entries per sample in another shape of up to 5 dims, as PyTorch's reshape on the dims after
  the batch dim; one dim may be -1, inferred from the others. Row-major (channels-last) order is kept, so a reshape
  moves no entry: it only relabels the sample's dims (flatten is reshape:-1). No parameters.

    x  [n][in]     y  [n][out]     in = out (the products of the shapes)
    forward y = x,  backward dx = dy,  jvp dy = dx,  sobackward zero (linear)

  The Net has no notion of one value being a view of another (only an activation may share its producer's buffer,
  netfuse.c), so the passes copy, as flatten does: one memcpy per pass, on PetNet's threads.
*/
#include "../permute/permute.h"

typedef struct {
  PetscInt ndim;                /* 0: not given */
  PetscInt dim[PETNET_MAX_DIM]; /* as written: -1 for the one inferred */
  char     text[128];           /* the arguments as written, for messages */
} Layer_Reshape;

/* AxBxC: up to PETNET_MAX_DIM positive integers (or one -1) separated by 'x' (',' is accepted too); node names the
   layer in messages (the text is kept by LayerSetArguments() and read at set-up, where the node has its name) */
static PetscErrorCode ReshapeParse(Layer layer, const char node[])
{
  Layer_Reshape *rs   = (Layer_Reshape *)layer->data;
  const char    *args = rs->text, *s = args;
  PetscInt       nd = 0, ninfer = 0;

  PetscFunctionBegin;
  while (1) {
    char     *end;
    long long v = strtoll(s, &end, 10);

    PetscCheck(end != s && (v > 0 || v == -1), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
               "The %s is malformed: reshape takes the new per-sample shape, positive sizes separated by 'x' with at most one -1 to be inferred (the batch dim is implicit), e.g. reshape:4x8 or reshape:-1x16", node);
    PetscCheck(nd < PETNET_MAX_DIM, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has more than %d dims: a sample has at most %d", node, PETNET_MAX_DIM, PETNET_MAX_DIM);
    PetscCheck(v <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: size %lld is more than %d, the largest PetscInt", node, v, PETSC_MAX_INT);
    if (v == -1) ninfer++;
    rs->dim[nd++] = (PetscInt)v;
    if (!*end) break;
    PetscCheck(*end == 'x' || *end == ',', PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s is malformed: separate the sizes with 'x', e.g. reshape:4x8", node);
    s = end + 1;
  }
  PetscCheck(ninfer <= 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has %" PetscInt_FMT " sizes of -1, but only one can be inferred from the others: write the other sizes out, e.g. reshape:4x-1", node, ninfer);
  rs->ndim = nd;
  PetscFunctionReturn(0);
}

/* keeps the text (blanks removed); ReshapeParse() reads it at set-up */
static PetscErrorCode LayerSetArguments_Reshape(Layer layer, const char args[])
{
  Layer_Reshape *rs = (Layer_Reshape *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerCopyArgumentsWithoutBlanks_Private(layer, args, sizeof(rs->text), rs->text, "write at most " PetscStringize(PETNET_MAX_DIM) " sizes"));
  rs->ndim = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Reshape(Layer layer, size_t len, char args[])
{
  Layer_Reshape *rs = (Layer_Reshape *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(args, rs->text, len));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Reshape(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  char      value[128];
  PetscBool set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Reshape of a sample");
  PetscCall(LayerGetArguments_Reshape(layer, sizeof(value), value));
  PetscCall(PetscOptionsString("-reshape_shape", "The new per-sample shape AxBxC (one size may be -1)", "LayerSetArguments", value, value, sizeof(value), &set));
  if (set) PetscCall(LayerSetArguments_Reshape(layer, value));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

/* the shape with its -1 inferred; the products compared in 64 bits */
static PetscErrorCode LayerSetUp_Reshape(Layer layer)
{
  Layer_Reshape *rs    = (Layer_Reshape *)layer->data;
  PetscInt64     known = 1;
  PetscInt       insize, infer = -1;
  char           node[512], shape[64];

  PetscFunctionBegin;
  PetscCall(LayerShapeKindDescription(layer, rs->text, "shape", sizeof(node), node));
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCall(PetNetShapeSize(&layer->in, &insize));
  if (rs->text[0]) PetscCall(ReshapeParse(layer, node));
  PetscCheck(rs->ndim > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "The %s has no shape: write reshape:AxB... with the %" PetscInt_FMT " entries of its input %s, e.g. reshape:-1x%" PetscInt_FMT, node, insize, shape,
             layer->in.dim[layer->in.ndim - 1]);
  for (PetscInt d = 0; d < rs->ndim; d++) {
    if (rs->dim[d] == -1)
      infer = d;
    else
      known *= rs->dim[d];
    PetscCheck(known <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s asks for more entries per sample than %d, the largest PetscInt; its input %s has %" PetscInt_FMT, node, PETSC_MAX_INT, shape, insize);
  }
  if (infer >= 0)
    PetscCheck(insize % known == 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
               "The %s cannot infer its -1: the other sizes make %" PetscInt64_FMT " entries, which do not divide the %" PetscInt_FMT " entries of its input %s; write sizes whose product divides %" PetscInt_FMT, node, known, insize, shape, insize);
  else
    PetscCheck(known == insize, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
               "The %s has %" PetscInt64_FMT " entries per sample, but its input %s has %" PetscInt_FMT ": write a shape whose sizes multiply to %" PetscInt_FMT " (one of them may be -1, inferred)", node, known, shape, insize, insize);
  layer->out.ndim = rs->ndim;
  for (PetscInt d = 0; d < rs->ndim; d++) layer->out.dim[d] = d == infer ? (PetscInt)(insize / known) : rs->dim[d];
  PetscFunctionReturn(0);
}

/* y = x: the same entries, relabelled */
static PetscErrorCode LayerCopy_Reshape(PetscInt N, const void *x, void *y, size_t esize)
{
  PetscFunctionBegin;
  PETNET_THREAD_BLOCKS(N, 65536, memcpy((char *)y + (size_t)i0 * esize, (const char *)x + (size_t)i0 * esize, (size_t)(i1 - i0) * esize));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LayerCopy_Reshape(n * layer->insize, x, y, sizeof(PetscScalar)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(LayerCopy_Reshape(n * layer->insize, dy, dx, sizeof(PetscScalar)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(LayerCopy_Reshape(n * layer->insize, dx, dy, sizeof(PetscScalar)));
  PetscFunctionReturn(0);
}

/* single precision (layerimpl.h): the same copies of float values */
static PetscErrorCode LayerForwardSingle_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(LayerCopy_Reshape(n * layer->insize, x, y, sizeof(float)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(LayerCopy_Reshape(n * layer->insize, dy, dx, sizeof(float)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Reshape(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  PetscCall(LayerCopy_Reshape(n * layer->insize, dx, dy, sizeof(float)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Reshape(Layer layer, PetscViewer viewer)
{
  char in[64], out[64];

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(in), in));
  PetscCall(PetNetShapeToString(&layer->out, sizeof(out), out));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s -> %s, the same entries in the same order\n", in, out));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Reshape(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Reshape(Layer layer)
{
  Layer_Reshape *rs;

  PetscFunctionBegin;
  PetscCall(PetscNew(&rs));
  layer->data                = rs;
  layer->ops->setarguments   = LayerSetArguments_Reshape;
  layer->ops->getarguments   = LayerGetArguments_Reshape;
  layer->ops->setfromoptions = LayerSetFromOptions_Reshape;
  layer->ops->setup          = LayerSetUp_Reshape;
  layer->ops->forward        = LayerForward_Reshape;
  layer->ops->backward       = LayerBackward_Reshape;
  layer->ops->jvp            = LayerJVP_Reshape;
  layer->ops->forwardsingle  = LayerForwardSingle_Reshape;
  layer->ops->backwardsingle = LayerBackwardSingle_Reshape;
  layer->ops->jvpsingle      = LayerJVPSingle_Reshape;
  layer->ops->view           = LayerView_Reshape;
  layer->ops->destroy        = LayerDestroy_Reshape;
  layer->sozero              = PETSC_TRUE; /* linear in x: no curvature term */
  layer->gradfree            = PETSC_TRUE;
  layer->actonly             = PETSC_TRUE;
  PetscFunctionReturn(0);
}
