/*
  dropout: in training mode y = x * mask with mask = 0 (probability p) or 1/(1-p); in evaluation mode y = x.

    x, y, mask   [n][size]      mask saved by forward; backward dx = mask * dy, jvp dy = mask * dx

  The mask is a counter-based random function of (seed, layer index, pass counter, GLOBAL element index): a splitmix64
  hash rather than a sequential stream, so that
    - the same global batch gets the same mask on 1, 2 or 4 ranks (results agree across rank counts), and
    - a pass can be replayed exactly: each training-mode forward pass advances the counter (a fresh mask, as
      PyTorch draws one per call), except inside NetTestJacobian(), where the counter is held so the repeated
      forward passes of the finite-difference test all see the mask of the pass being tested.
  Forward in training mode is collective on the layer's communicator (an MPI_Exscan gives the global offset), unless
  the caller gives the rows' place (LayerDropoutSetColumnBlock_C below).
  Changing the seed (-dropout_seed) changes every mask; the counter restarts at LayerReset().

  A column block of a whole layer (LayerDropoutSetColumnBlock_C, for a Net that keeps the last dimension split over its
  ranks, the activation of a tensor-parallel MLP pair): the layer's rows are cb entries, columns cstart.. of the whole
  layer's rows of F entries, its first row the whole batch's row row0; entry (r, c) takes the whole layer's mask of
  global index (row0 + r) F + cstart + c, drawn with the whole layer's p, seed, index and counter, so the blocks of all
  ranks together are the whole layer's mask. No exchange: the caller gives row0.
*/
#include <petnet/private/layerimpl.h>

typedef struct {
  PetscReal    p;
  PetscInt64   seed;
  PetscInt64   counter; /* training-mode forward passes so far */
  PetscBool    masked;  /* the last forward applied the mask (training mode): backward and jvp follow it */
  PetscInt     nwork;
  PetscScalar *mask;
  Layer        whole;             /* a column block of this whole layer (not referenced: it outlives the block), or NULL */
  PetscInt     width, cstart, cb; /* ... its rows of width entries, this block's columns cstart..cstart + cb - 1 */
  PetscInt64   row0;              /* ... and the whole batch's row of this block's first row */
} Layer_Dropout;

static inline uint64_t SplitMix64(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* entries above which the loops run on PetNet's threads (each entry's mask is a function of its index alone) */
#define DROPOUT_THREAD_MIN 32768

/* mask[i] for the local entries i of a batch: rows of cb entries, row r and column c having the global index
   (row0 + r) width + cstart + c (the whole layer's own rows: cb = width, cstart = 0, the index row0 width + i) */
static void DropoutDrawMask(PetscReal p, uint64_t key, uint64_t row0, PetscInt cb, PetscInt width, PetscInt cstart, PetscInt N, PetscScalar *mask)
{
  const PetscScalar scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  const uint64_t    first = row0 * (uint64_t)width + (uint64_t)cstart;

#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(guided) if (N > DROPOUT_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) {
    const uint64_t idx = cb == width ? first + (uint64_t)i : first + (uint64_t)(i / cb) * (uint64_t)width + (uint64_t)(i % cb);
    PetscReal      u   = (PetscReal)(SplitMix64(key ^ SplitMix64(idx)) >> 11) * 0x1.0p-53; /* uniform [0, 1) */

    mask[i] = u < p ? 0.0 : scale;
  }
}

/* a forward pass's mask, in training mode (drop->masked; otherwise none): the part of forward both precisions share */
static PetscErrorCode DropoutDraw(Layer layer, PetscInt n)
{
  Layer_Dropout *drop   = (Layer_Dropout *)layer->data;
  const Layer    owner  = drop->whole ? drop->whole : layer; /* whose p, seed, index, counter and frozen state */
  Layer_Dropout *od     = (Layer_Dropout *)owner->data;
  const PetscInt N      = n * layer->insize;
  PetscInt64     nlocal = N, offset = 0;
  PetscMPIInt    rank;
  uint64_t       key;

  PetscFunctionBegin;
  drop->masked = (PetscBool)(layer->training && od->p > 0);
  if (!drop->masked) PetscFunctionReturn(0);
  if (n != drop->nwork) {
    PetscCall(PetscFree(drop->mask));
    PetscCall(PetscMalloc1(N, &drop->mask));
    drop->nwork = n;
  }
  if (!owner->frozen) od->counter++;
  key = SplitMix64(SplitMix64(SplitMix64((uint64_t)od->seed) ^ (uint64_t)owner->index) ^ (uint64_t)od->counter);
  if (drop->whole) { /* a column block: its rows' place is given, no exchange */
    DropoutDrawMask(od->p, key, (uint64_t)drop->row0, drop->cb, drop->width, drop->cstart, N, drop->mask);
    PetscFunctionReturn(0);
  }
  PetscCallMPI(MPI_Exscan(&nlocal, &offset, 1, MPIU_INT64, MPI_SUM, PetscObjectComm((PetscObject)layer)));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)layer), &rank));
  if (!rank) offset = 0; /* MPI_Exscan leaves rank 0's result undefined */
  DropoutDrawMask(drop->p, key, (uint64_t)offset, 1, 1, 0, N, drop->mask);
  PetscFunctionReturn(0);
}

/*
  out = mask in, or a copy when the last forward drew no mask (evaluation mode, p = 0): forward's y = mask x after the
  draw, backward's dx = mask dy, jvp's dy = mask dx; on double values, and on float ones with each product rounded
  once. In place works. what names the pass for errors.
*/
static PetscErrorCode DropoutApply(Layer layer, PetscInt n, const PetscScalar *in, PetscScalar *out, const char *what)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;
  const PetscInt N    = n * layer->insize;

  PetscFunctionBegin;
  if (!drop->masked) {
    PetscCall(PetscArraycpy(out, in, N));
    PetscFunctionReturn(0);
  }
  PetscCheck(n == drop->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dropout %s on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", what, n, drop->nwork);
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(guided) if (N > DROPOUT_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) out[i] = drop->mask[i] * in[i];
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode DropoutApplySingle(Layer layer, PetscInt n, const float *in, float *out, const char *what)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;
  const PetscInt N    = n * layer->insize;

  PetscFunctionBegin;
  if (!drop->masked) {
    PetscCall(PetscArraycpy(out, in, N));
    PetscFunctionReturn(0);
  }
  PetscCheck(n == drop->nwork, PETSC_COMM_SELF, PETSC_ERR_ORDER, "dropout %s on %" PetscInt_FMT " samples after a forward pass on %" PetscInt_FMT ": call forward first", what, n, drop->nwork);
#pragma omp parallel for simd num_threads(PetNetThreads()) schedule(guided) if (N > DROPOUT_THREAD_MIN)
  for (PetscInt i = 0; i < N; i++) out[i] = (float)(drop->mask[i] * in[i]);
  PetscCall(PetscLogFlops(1.0 * N));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(DropoutDraw(layer, n));
  PetscCall(DropoutApply(layer, n, x, y, "forward"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(DropoutApply(layer, n, dy, dx, "backward"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  PetscFunctionBegin;
  PetscCall(DropoutApply(layer, n, dx, dy, "jvp"));
  PetscFunctionReturn(0);
}

/* single precision (layerimpl.h): the same mask on float values */
static PetscErrorCode LayerForwardSingle_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(DropoutDraw(layer, n));
  PetscCall(DropoutApplySingle(layer, n, x, y, "forward"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackwardSingle_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  PetscFunctionBegin;
  if (dx) PetscCall(DropoutApplySingle(layer, n, dy, dx, "backward"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVPSingle_Dropout(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dx, const PetscScalar *dtheta, float *dy)
{
  PetscFunctionBegin;
  PetscCall(DropoutApplySingle(layer, n, dx, dy, "jvp"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetArguments_Dropout(Layer layer, const char args[])
{
  char  *end;
  double p = strtod(args, &end);

  PetscFunctionBegin;
  PetscCheck(end != args && !*end, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "dropout takes one number, the probability of zeroing an entry (e.g. dropout:0.5), not \"%s\"", args);
  PetscCall(LayerDropoutSetProbability(layer, (PetscReal)p));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Dropout(Layer layer, size_t len, char args[])
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%g", (double)drop->p)); /* %g when it reads back exactly, else all the digits */
  if (strtod(args, NULL) != (double)drop->p) PetscCall(PetscSNPrintf(args, len, "%.17g", (double)drop->p));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Dropout(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;
  PetscReal      p    = drop->p;
  PetscInt       seed = (PetscInt)drop->seed;
  PetscBool      set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Dropout layer options");
  PetscCall(PetscOptionsReal("-dropout_p", "Probability of zeroing an entry in training mode", "LayerDropoutSetProbability", p, &p, &set));
  if (set) PetscCall(LayerDropoutSetProbability(layer, p));
  PetscCall(PetNetOptionsBoundedInt("-dropout_seed", "Seed of the dropout masks", "LayerDropoutSetSeed", seed, &seed, &set, 0));
  if (set) PetscCall(LayerDropoutSetSeed(layer, seed));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Dropout(Layer layer, PetscViewer viewer)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "probability %g, seed %" PetscInt64_FMT ", %s\n", (double)drop->p, drop->seed, layer->training ? "training mode (active)" : "evaluation mode (identity)"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Dropout(Layer layer)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree(drop->mask));
  drop->nwork   = 0;
  drop->counter = 0;
  drop->masked  = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The seed and pass counter a checkpoint keeps (LayerGetPassCounter_C, LayerSetPassCounter_C): a restart draws the masks the
   uninterrupted run would have drawn */
static PetscErrorCode LayerGetPassCounter_Dropout(Layer layer, PetscInt64 *seed, PetscInt64 *counter)
{
  PetscFunctionBegin;
  *seed    = ((Layer_Dropout *)layer->data)->seed;
  *counter = ((Layer_Dropout *)layer->data)->counter;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetPassCounter_Dropout(Layer layer, PetscInt64 counter)
{
  PetscFunctionBegin;
  ((Layer_Dropout *)layer->data)->counter = counter;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Dropout(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerReset_Dropout(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetProbability_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetSeed_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGetPassCounter_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerSetPassCounter_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetColumnBlock_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDropoutSetProbability_Dropout(Layer layer, PetscReal p)
{
  PetscFunctionBegin;
  PetscCheck(p >= 0 && p <= 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "dropout probability must be in [0, 1], not %g", (double)p);
  ((Layer_Dropout *)layer->data)->p = p;
  layer->draws                      = (PetscBool)(p > 0);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDropoutSetSeed_Dropout(Layer layer, PetscInt64 seed)
{
  PetscFunctionBegin;
  ((Layer_Dropout *)layer->data)->seed = seed;
  PetscFunctionReturn(0);
}

/*
  For a Net that keeps the last dimension of a value split over its ranks (the column block of a tensor-parallel MLP
  pair, src/net/netmodel.c): this layer, of input shape (..., cb), becomes columns cstart..cstart + cb - 1 of `whole`'s
  rows of width entries, its first row being row row0 of the whole batch (rows: samples times the positions before the
  last dim). Its masks are then the whole layer's entries of those places, drawn with the whole layer's probability,
  seed, index, pass counter (which the block advances) and frozen state. Call it before every forward (row0 may change
  with the batch); `whole` must outlive the block. whole may be the layer itself (cstart 0, width its own last
  dimension): its own rows at a given place, without the exchange (a Net's pipeline step, whose rows a stage holds
  alone). whole NULL: the layer finds its place collectively again.
*/
static PetscErrorCode LayerDropoutSetColumnBlock_Dropout(Layer layer, Layer whole, PetscInt width, PetscInt cstart, PetscInt64 row0)
{
  Layer_Dropout *drop = (Layer_Dropout *)layer->data;
  const PetscInt cb   = layer->in.ndim ? layer->in.dim[layer->in.ndim - 1] : 0;

  PetscFunctionBegin;
  if (!whole) {
    drop->whole = NULL;
    PetscFunctionReturn(0);
  }
  PetscCheck(layer->setupcalled && cstart >= 0 && cb > 0 && cstart + cb <= width && row0 >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "A column block %" PetscInt_FMT "..%" PetscInt_FMT " of rows of %" PetscInt_FMT " entries (first row %" PetscInt64_FMT "): set the block's input shape (..., %" PetscInt_FMT ") up first", cstart, cstart + cb - 1, width, row0, cb);
  drop->whole  = whole;
  drop->width  = width;
  drop->cstart = cstart;
  drop->cb     = cb;
  drop->row0   = row0;
  PetscFunctionReturn(0);
}

/*@
  LayerDropoutSetProbability - the probability p that a dropout layer zeroes an entry in training mode (default 0.5).

  Logically collective

  Input Parameters:
+ layer - a dropout layer (layers of other kinds ignore the call)
- p     - the probability, in [0, 1]; kept entries are scaled by 1/(1 - p)

  Options Database Key:
. -<prefix>dropout_p <p> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is dropout:P. In evaluation mode (NetSetTraining()) the layer is the identity whatever p.

  Level: beginner

.seealso: `LayerDropoutSetSeed()`, `NetSetTraining()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerDropoutSetProbability(Layer layer, PetscReal p)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDropoutSetProbability_C", (Layer, PetscReal), (layer, p));
  PetscFunctionReturn(0);
}

/*@
  LayerDropoutSetSeed - the seed of a dropout layer's masks (default 0; the layer's index in its Net is mixed in).

  Logically collective

  Input Parameters:
+ layer - a dropout layer (layers of other kinds ignore the call)
- seed  - the seed

  Options Database Key:
. -<prefix>dropout_seed <seed> - the same from the options (LayerSetFromOptions())

  Notes:
  A mask is a hash of the seed, the layer index (LayerSetIndex()), a pass counter and the global element index, so the
  same global batch gets the same mask on any number of ranks. Each training-mode forward pass advances the counter,
  except in frozen mode (NetTestJacobian()); LayerReset() restarts it.

  Level: intermediate

.seealso: `LayerDropoutSetProbability()`, `LayerSetIndex()`, `NetSetSeed()`
@*/
PetscErrorCode LayerDropoutSetSeed(Layer layer, PetscInt64 seed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerDropoutSetSeed_C", (Layer, PetscInt64), (layer, seed));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Dropout(Layer layer)
{
  Layer_Dropout *drop;

  PetscFunctionBegin;
  PetscCall(PetscNew(&drop));
  drop->p                    = 0.5;
  layer->draws               = PETSC_TRUE;
  layer->data                = drop;
  layer->ops->forward        = LayerForward_Dropout;
  layer->ops->backward       = LayerBackward_Dropout;
  layer->ops->jvp            = LayerJVP_Dropout;
  layer->ops->forwardsingle  = LayerForwardSingle_Dropout;
  layer->ops->backwardsingle = LayerBackwardSingle_Dropout;
  layer->ops->jvpsingle      = LayerJVPSingle_Dropout;
  layer->sozero              = PETSC_TRUE; /* linear (or piecewise linear) in x: no curvature term */
  layer->ops->setarguments   = LayerSetArguments_Dropout;
  layer->ops->getarguments   = LayerGetArguments_Dropout;
  layer->ops->setfromoptions = LayerSetFromOptions_Dropout;
  layer->ops->view           = LayerView_Dropout;
  layer->ops->reset          = LayerReset_Dropout;
  layer->ops->destroy        = LayerDestroy_Dropout;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetProbability_C", LayerDropoutSetProbability_Dropout));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetSeed_C", LayerDropoutSetSeed_Dropout));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGetPassCounter_C", LayerGetPassCounter_Dropout));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerSetPassCounter_C", LayerSetPassCounter_Dropout));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetColumnBlock_C", LayerDropoutSetColumnBlock_Dropout));
  PetscFunctionReturn(0);
}
