/*
  upsample: settings (S[:MODE]; -upsample_scale, -upsample_mode), set-up of the shapes and tables, the grid-mode
  operations (getscale, gridbox, setgridblock), and the public setters. Formulas, layouts and kernels: upsample.h and
  upsamplekernels.c.
*/
#include "upsample.h"

const char *const LayerUpsampleModes[] = {"nearest", "linear", "LayerUpsampleMode", "LAYER_UPSAMPLE_", NULL};

/* "2", "2x3" or "2x2x2" into n factors; what names the text in the errors (the spec entry or the option) */
static PetscErrorCode UpsampleParseScale(Layer layer, const char what[], const char text[], PetscInt *n, PetscInt s[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *p    = text;

  PetscFunctionBegin;
  *n = 0;
  while (1) {
    char *end;
    long  v = strtol(p, &end, 10);

    PetscCheck(end != p && (*end == 0 || *end == 'x' || *end == 'X') && *n < UPSAMPLE_MAX_DIM, comm, PETSC_ERR_ARG_WRONG,
               "%s: malformed scale \"%s\": write one integer factor for every spatial dim (upsample:2) or one per dim (upsample:2x3 on (h, w, c), upsample:1x2x2 on (d, h, w, c)); PetNet upsamples by integer factors only", what, text);
    PetscCheck(v >= 1 && v <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: scale factor %ld in \"%s\" is not a positive integer: write a factor of 1 or more (1 keeps that dim), e.g. upsample:2 or upsample:1x2", what, v, text);
    s[(*n)++] = (PetscInt)v;
    if (!*end) break;
    p = end + 1;
  }
  PetscFunctionReturn(0);
}

/* "nearest" or "linear" */
static PetscErrorCode UpsampleParseMode(Layer layer, const char what[], const char text[], LayerUpsampleMode *mode)
{
  PetscBool match;

  PetscFunctionBegin;
  for (int m = 0; m < 2; m++) {
    PetscCall(PetscStrcasecmp(text, LayerUpsampleModes[m], &match));
    if (match) {
      *mode = (LayerUpsampleMode)m;
      PetscFunctionReturn(0);
    }
  }
  SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s: unknown mode \"%s\": write nearest (the default) or linear, which is PyTorch's bilinear on (h, w, c) samples and trilinear on (d, h, w, c), e.g. %s%s", what, text,
          what[0] == '-' ? what : "upsample:2", what[0] == '-' ? " linear" : ":linear");
}

/* "2", "2x3": one factor when they are all equal */
static PetscErrorCode UpsampleScaleToString(const Layer_Upsample *up, size_t len, char text[])
{
  PetscBool same = PETSC_TRUE;
  size_t    used;

  PetscFunctionBegin;
  for (PetscInt d = 1; d < up->nscale; d++) same = (PetscBool)(same && up->scale[d] == up->scale[0]);
  PetscCall(PetscSNPrintf(text, len, "%" PetscInt_FMT, up->scale[0]));
  for (PetscInt d = 1; !same && d < up->nscale; d++) {
    PetscCall(PetscStrlen(text, &used));
    PetscCall(PetscSNPrintf(text + used, len - used, "x%" PetscInt_FMT, up->scale[d]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerUpsampleSetScale_Upsample(Layer layer, PetscInt n, const PetscInt s[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;

  PetscFunctionBegin;
  PetscCheck(n >= 1 && n <= UPSAMPLE_MAX_DIM, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "LayerUpsampleSetScale() takes 1, 2 or 3 factors (one for every spatial dim, or one per dim), not %" PetscInt_FMT, n);
  for (PetscInt d = 0; d < n; d++)
    PetscCheck(s[d] >= 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "upsample layer %" PetscInt_FMT ": scale factor %" PetscInt_FMT " is not a positive integer: give factors of 1 or more (1 keeps that dim)", layer->index, s[d]);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  up->nscale = n;
  for (PetscInt d = 0; d < n; d++) up->scale[d] = s[d];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerUpsampleGetScale_Upsample(Layer layer, PetscInt *n, PetscInt s[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;

  PetscFunctionBegin;
  if (n) *n = up->nscale;
  if (s)
    for (PetscInt d = 0; d < up->nscale; d++) s[d] = up->scale[d];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerUpsampleSetMode_Upsample(Layer layer, LayerUpsampleMode mode)
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;

  PetscFunctionBegin;
  PetscCheck(mode == LAYER_UPSAMPLE_NEAREST || mode == LAYER_UPSAMPLE_LINEAR, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "Unknown upsampling mode %d: give LAYER_UPSAMPLE_NEAREST or LAYER_UPSAMPLE_LINEAR", (int)mode);
  if (mode == up->mode) PetscFunctionReturn(0);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  up->mode = mode;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerUpsampleGetMode_Upsample(Layer layer, LayerUpsampleMode *mode)
{
  PetscFunctionBegin;
  *mode = ((Layer_Upsample *)layer->data)->mode;
  PetscFunctionReturn(0);
}

/* S[:MODE] */
static PetscErrorCode LayerSetArguments_Upsample(Layer layer, const char args[])
{
  char              copy[256], what[300], *colon;
  PetscInt          n, s[UPSAMPLE_MAX_DIM];
  LayerUpsampleMode mode = LAYER_UPSAMPLE_NEAREST;

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "upsample:%.64s... is longer than %zu characters: give S[:MODE], e.g. upsample:2:linear", args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  PetscCall(PetscSNPrintf(what, sizeof(what), "upsample:%s", args));
  colon = strchr(copy, ':');
  if (colon) *colon = 0;
  PetscCall(UpsampleParseScale(layer, what, copy, &n, s));
  if (colon) {
    PetscCheck(!strchr(colon + 1, ':'), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s: upsample takes S[:MODE], e.g. upsample:2 or upsample:2x3:linear", what);
    PetscCall(UpsampleParseMode(layer, what, colon + 1, &mode));
  }
  PetscCall(LayerUpsampleSetScale_Upsample(layer, n, s));
  PetscCall(LayerUpsampleSetMode_Upsample(layer, mode));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Upsample(Layer layer, size_t len, char args[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  char            scale[64];

  PetscFunctionBegin;
  PetscCall(UpsampleScaleToString(up, sizeof(scale), scale));
  PetscCall(PetscSNPrintf(args, len, "%s%s", scale, up->mode == LAYER_UPSAMPLE_LINEAR ? ":linear" : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Upsample(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  const char     *prefix;
  char            value[64], what[300];
  PetscBool       flg;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  PetscOptionsHeadBegin(PetscOptionsObject, "Upsampling layer options");
  PetscCall(UpsampleScaleToString(up, sizeof(value), value));
  PetscCall(PetscOptionsString("-upsample_scale", "Integer factor S for every spatial dim, or one per dim: SHxSW, SDxSHxSW", "LayerUpsampleSetScale", value, value, sizeof(value), &flg));
  if (flg) {
    PetscInt n, s[UPSAMPLE_MAX_DIM];

    PetscCall(PetscSNPrintf(what, sizeof(what), "-%supsample_scale", prefix ? prefix : ""));
    PetscCall(UpsampleParseScale(layer, what, value, &n, s));
    PetscCall(LayerUpsampleSetScale_Upsample(layer, n, s));
  }
  PetscCall(PetscStrncpy(value, LayerUpsampleModes[up->mode], sizeof(value)));
  PetscCall(PetscOptionsString("-upsample_mode", "nearest or linear (bilinear on (h, w, c), trilinear on (d, h, w, c))", "LayerUpsampleSetMode", value, value, sizeof(value), &flg));
  if (flg) {
    LayerUpsampleMode mode;

    PetscCall(PetscSNPrintf(what, sizeof(what), "-%supsample_mode", prefix ? prefix : ""));
    PetscCall(UpsampleParseMode(layer, what, value, &mode));
    PetscCall(LayerUpsampleSetMode_Upsample(layer, mode));
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Upsample(Layer layer, PetscViewer viewer)
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  char            scale[64];

  PetscFunctionBegin;
  PetscCall(UpsampleScaleToString(up, sizeof(scale), scale));
  PetscCall(PetscViewerASCIIPrintf(viewer, "scale %s, mode %s%s\n", scale, LayerUpsampleModes[up->mode], up->mode == LAYER_UPSAMPLE_NEAREST ? "" : layer->setupcalled ? (up->nsd == 3 ? " (trilinear)" : " (bilinear)") : ""));
  if (up->nblock) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "output block"));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
    for (PetscInt d = 0; d < up->nblock; d++) PetscCall(PetscViewerASCIIPrintf(viewer, "%s[%" PetscInt64_FMT ", %" PetscInt64_FMT ")", d ? " x " : " ", up->olo[d], up->ohi[d]));
    PetscCall(PetscViewerASCIIPrintf(viewer, " of a grid of"));
    for (PetscInt d = 0; d < up->nblock; d++) PetscCall(PetscViewerASCIIPrintf(viewer, "%s%" PetscInt64_FMT, d ? "x" : " ", up->N[d]));
    PetscCall(PetscViewerASCIIPrintf(viewer, " inputs, from the input box"));
    for (PetscInt d = 0; d < up->nblock; d++) PetscCall(PetscViewerASCIIPrintf(viewer, "%s[%" PetscInt64_FMT ", %" PetscInt64_FMT ")", d ? " x " : " ", up->ilo[d], up->ihi[d]));
    PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  }
  PetscFunctionReturn(0);
}

/* The factors along nsd spatial dims (the given one along all of them, or the nsd given ones) */
static PetscErrorCode UpsampleFactors(Layer layer, PetscInt nsd, const char where[], PetscInt s[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  char            scale[64];

  PetscFunctionBegin;
  PetscCall(UpsampleScaleToString(up, sizeof(scale), scale));
  PetscCheck(up->nscale == 1 || up->nscale == nsd, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_INCOMP,
             "upsample layer %" PetscInt_FMT " has %" PetscInt_FMT " scale factors (%s), but %s has %" PetscInt_FMT " spatial dims: write one factor for every dim (e.g. upsample:2) or %" PetscInt_FMT " (e.g. upsample:%s)", layer->index, up->nscale,
             scale, where, nsd, nsd, nsd == 2 ? "2x2" : "2x2x2");
  for (PetscInt d = 0; d < nsd; d++) s[d] = up->scale[up->nscale == 1 ? 0 : d];
  PetscFunctionReturn(0);
}

/*
  Batch mode: (h, w, c) -> (h sh, w sw, c) or (d, h, w, c) -> (d sd, h sh, w sw, c); a block of a global grid
  (setgridblock) has the box as input and the block as output. Point form (layer->fielddim): (c) -> (c).
*/
static PetscErrorCode LayerSetUp_Upsample(Layer layer)
{
  Layer_Upsample *up   = (Layer_Upsample *)layer->data;
  MPI_Comm        comm = PetscObjectComm((PetscObject)layer);
  const PetscInt  ndim = layer->in.ndim;
  PetscInt        first;
  char            shape[64], where[128];

  PetscFunctionBegin;
  PetscCall(UpsampleResetTables(layer));
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  if (layer->fielddim > 0) { /* point form (layerimpl.h): (c) -> (c), the factors over the field's dims */
    PetscCheck(layer->fielddim == 2 || layer->fielddim == 3, comm, PETSC_ERR_ARG_OUTOFRANGE, "upsample layer %" PetscInt_FMT ": a field of %" PetscInt_FMT " spatial dims; upsampling works on 2-D and 3-D fields", layer->index, layer->fielddim);
    PetscCheck(ndim == 1, comm, PETSC_ERR_ARG_SIZ, "upsample layer %" PetscInt_FMT " in point form takes the channels at one point of a %" PetscInt_FMT "-D field, shape (c), not %s", layer->index, layer->fielddim, shape);
    PetscCheck(!up->nblock, comm, PETSC_ERR_ORDER, "upsample layer %" PetscInt_FMT " is in point form and a local block (setgridblock) at once: a block is computed by a copy in batch form", layer->index);
    PetscCall(PetscSNPrintf(where, sizeof(where), "its %" PetscInt_FMT "-D field", layer->fielddim));
    PetscCall(UpsampleFactors(layer, layer->fielddim, where, up->s));
    up->nsd = layer->fielddim;
    up->C   = layer->in.dim[0];
    PetscFunctionReturn(0); /* out = in: (c) */
  }
  PetscCheck(ndim != 1, comm, PETSC_ERR_ARG_SIZ,
             "upsample layer %" PetscInt_FMT " has input shape %s, flat features: it upsamples (h, w, c) or (d, h, w, c) samples. Put it before the flatten (or the dense layer) that flattens them, or give -net_input_shape HxWxC", layer->index,
             shape);
  PetscCheck(ndim == 3 || ndim == 4, comm, PETSC_ERR_ARG_SIZ, "upsample layer %" PetscInt_FMT " has input shape %s: it upsamples (h, w, c) or (d, h, w, c) samples", layer->index, shape);
  up->nsd = ndim - 1;
  first   = UPSAMPLE_MAX_DIM - up->nsd;
  PetscCall(PetscSNPrintf(where, sizeof(where), "its input %s", shape));
  PetscCall(UpsampleFactors(layer, up->nsd, where, up->s + first));
  up->C = layer->in.dim[ndim - 1];
  for (PetscInt d = 0; d < first; d++) {
    up->s[d]  = 1;
    up->in[d] = up->out[d] = 1;
  }
  if (up->nblock) {
    PetscCheck(up->nblock == up->nsd, comm, PETSC_ERR_ARG_INCOMP, "upsample layer %" PetscInt_FMT " computes a block of a %" PetscInt_FMT "-D grid, but its input %s has %" PetscInt_FMT " spatial dims", layer->index, up->nblock, shape, up->nsd);
    for (PetscInt d = 0; d < up->nsd; d++)
      PetscCheck(layer->in.dim[d] == up->ihi[d] - up->ilo[d], comm, PETSC_ERR_ARG_SIZ,
                 "upsample layer %" PetscInt_FMT " computes a block from the input box [%" PetscInt64_FMT ", %" PetscInt64_FMT ") along dim %" PetscInt_FMT ", but its input shape %s has %" PetscInt_FMT " there: set the box's shape", layer->index,
                 up->ilo[d], up->ihi[d], d, shape, layer->in.dim[d]);
  }
  for (PetscInt d = 0; d < up->nsd; d++) {
    const PetscInt64 out = up->nblock ? up->ohi[d] - up->olo[d] : (PetscInt64)layer->in.dim[d] * up->s[first + d];

    PetscCheck(out <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "upsample layer %" PetscInt_FMT ": %" PetscInt_FMT " times %" PetscInt_FMT " points along dim %" PetscInt_FMT " is more than the largest PetscInt: use a smaller factor",
               layer->index, layer->in.dim[d], up->s[first + d], d);
    up->in[first + d]  = layer->in.dim[d];
    up->out[first + d] = (PetscInt)out;
    layer->out.dim[d]  = (PetscInt)out;
  }
  PetscCall(UpsampleSetUpTables(layer));
  PetscFunctionReturn(0);
}

/* Grid mode: the factors along the nsd dims of the Net's grid (or of the input shape, or as given) */
static PetscErrorCode LayerGetScale_Upsample(Layer layer, PetscInt *nsd, PetscInt s[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  PetscInt        n  = layer->fielddim > 0 ? layer->fielddim : layer->in.ndim >= 3 ? layer->in.ndim - 1 : up->nscale;

  PetscFunctionBegin;
  PetscCall(UpsampleFactors(layer, n, layer->fielddim > 0 ? "its field" : "its input", s));
  *nsd = n;
  PetscFunctionReturn(0);
}

/* The input box [ilo, ihi) that the output block [olo, ohi) of an N-grid reads: the sources of its first and last
   output index along each dim (they do not decrease with the output index); always inside [0, N) */
static PetscErrorCode LayerGridBox_Upsample(Layer layer, PetscInt nsd, const PetscInt64 N[], const PetscInt64 olo[], const PetscInt64 ohi[], PetscInt64 ilo[], PetscInt64 ihi[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  PetscInt        s[UPSAMPLE_MAX_DIM];

  PetscFunctionBegin;
  PetscCheck(nsd == 2 || nsd == 3, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "upsample layer %" PetscInt_FMT ": a box of a %" PetscInt_FMT "-D grid; upsampling works on 2-D and 3-D grids", layer->index, nsd);
  PetscCall(UpsampleFactors(layer, nsd, "the grid", s));
  for (PetscInt d = 0; d < nsd; d++) {
    PetscCheck(N[d] >= 1 && 0 <= olo[d] && olo[d] <= ohi[d] && ohi[d] <= N[d] * s[d], PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "upsample layer %" PetscInt_FMT ": output block [%" PetscInt64_FMT ", %" PetscInt64_FMT ") along dim %" PetscInt_FMT " is not inside the output grid [0, %" PetscInt64_FMT ") of %" PetscInt64_FMT " inputs times %" PetscInt_FMT,
               layer->index, olo[d], ohi[d], d, N[d] * s[d], N[d], s[d]);
    if (olo[d] == ohi[d]) {
      ilo[d] = ihi[d] = 0; /* an empty block reads nothing */
    } else if (up->mode == LAYER_UPSAMPLE_NEAREST) {
      PetscInt64 last;

      UpsampleSourceNearest(olo[d], N[d], s[d], &ilo[d]);
      UpsampleSourceNearest(ohi[d] - 1, N[d], s[d], &last);
      ihi[d] = last + 1;
    } else {
      PetscInt64 i1, i0;
      PetscReal  l0, l1;

      UpsampleSourceLinear(olo[d], N[d], s[d], &ilo[d], &i1, &l0, &l1);
      UpsampleSourceLinear(ohi[d] - 1, N[d], s[d], &i0, &i1, &l0, &l1);
      ihi[d] = i1 + 1;
    }
  }
  PetscFunctionReturn(0);
}

/*
  Makes this layer (batch mode) compute the output block [olo, ohi) of the upsampling of an N-grid from the input box
  [ilo, ihi), which must hold what the block reads (LayerGridBox_Upsample()); nsd = 0 returns to whole samples. Call it
  before LayerSetUp(), before or after LayerSetInputShape() with the box's shape (ihi - ilo per dim, then the channels);
  the output shape is then ohi - olo per dim, then the channels. On a set-up layer it resets the layer.
*/
static PetscErrorCode LayerSetGridBlock_Upsample(Layer layer, PetscInt nsd, const PetscInt64 N[], const PetscInt64 ilo[], const PetscInt64 ihi[], const PetscInt64 olo[], const PetscInt64 ohi[])
{
  Layer_Upsample *up = (Layer_Upsample *)layer->data;
  PetscInt64      need0[UPSAMPLE_MAX_DIM], need1[UPSAMPLE_MAX_DIM];

  PetscFunctionBegin;
  PetscCheck(!layer->fielddim, PETSC_COMM_SELF, PETSC_ERR_ORDER, "upsample layer %" PetscInt_FMT " is in point form: give the block to a copy of it in batch form", layer->index);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  up->nblock = 0;
  if (!nsd) PetscFunctionReturn(0);
  PetscCall(LayerGridBox_Upsample(layer, nsd, N, olo, ohi, need0, need1));
  for (PetscInt d = 0; d < nsd; d++) {
    PetscCheck(olo[d] < ohi[d], PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "upsample layer %" PetscInt_FMT ": the output block [%" PetscInt64_FMT ", %" PetscInt64_FMT ") along dim %" PetscInt_FMT " is empty: a rank with an empty block has nothing to compute", layer->index, olo[d], ohi[d], d);
    PetscCheck(ilo[d] <= need0[d] && need1[d] <= ihi[d] && ihi[d] - ilo[d] <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "upsample layer %" PetscInt_FMT ": the output block [%" PetscInt64_FMT ", %" PetscInt64_FMT ") along dim %" PetscInt_FMT " reads the inputs [%" PetscInt64_FMT ", %" PetscInt64_FMT "), which the box [%" PetscInt64_FMT
               ", %" PetscInt64_FMT ") does not hold (see gridbox)",
               layer->index, olo[d], ohi[d], d, need0[d], need1[d], ilo[d], ihi[d]);
    up->N[d]   = N[d];
    up->ilo[d] = ilo[d];
    up->ihi[d] = ihi[d];
    up->olo[d] = olo[d];
    up->ohi[d] = ohi[d];
  }
  up->nblock = nsd;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Upsample(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(UpsampleResetTables(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleSetScale_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleGetScale_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleSetMode_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleGetMode_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* Default: factor 2 along every spatial dim, nearest */
PETSC_INTERN PetscErrorCode LayerCreate_Upsample(Layer layer)
{
  Layer_Upsample *up;

  PetscFunctionBegin;
  PetscCall(PetscNew(&up));
  up->nscale                 = 1;
  up->scale[0]               = 2;
  up->mode                   = LAYER_UPSAMPLE_NEAREST;
  layer->data                = up;
  layer->ops->setarguments   = LayerSetArguments_Upsample;
  layer->ops->getarguments   = LayerGetArguments_Upsample;
  layer->ops->setfromoptions = LayerSetFromOptions_Upsample;
  layer->ops->view           = LayerView_Upsample;
  layer->ops->setup          = LayerSetUp_Upsample;
  layer->ops->forward        = LayerForward_Upsample;
  layer->ops->backward       = LayerBackward_Upsample;
  layer->ops->jvp            = LayerJVP_Upsample;
  layer->ops->getscale       = LayerGetScale_Upsample;
  layer->ops->gridbox        = LayerGridBox_Upsample;
  layer->ops->setgridblock   = LayerSetGridBlock_Upsample;
  layer->ops->reset          = UpsampleResetTables;
  layer->ops->destroy        = LayerDestroy_Upsample;
  layer->sozero              = PETSC_TRUE; /* linear in x: no curvature term */
  layer->gradfree            = PETSC_TRUE; /* no parameters */
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleSetScale_C", LayerUpsampleSetScale_Upsample));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleGetScale_C", LayerUpsampleGetScale_Upsample));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleSetMode_C", LayerUpsampleSetMode_Upsample));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerUpsampleGetMode_C", LayerUpsampleGetMode_Upsample));
  PetscFunctionReturn(0);
}

/*@
  LayerUpsampleSetScale - sets the integer factors of an upsample layer (default 2 along every spatial dim)

  Logically collective

  Input Parameters:
+ layer - an upsample layer (layers of other kinds ignore the call)
. n     - the number of factors: 1 (the same factor along every spatial dim), or one per spatial dim (2 for (h, w, c)
          samples, 3 for (d, h, w, c))
- s     - the factors, slowest dim first, each >= 1 (1 keeps the dim)

  Options Database Key:
. -<prefix>upsample_scale <S or SHxSW or SDxSHxSW> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is upsample:S in a layer list (upsample:2, upsample:2x3, upsample:1x2x2). A sample (h, w, c)
  becomes (h sh, w sw, c), a sample (d, h, w, c) becomes (d sd, h sh, w sw, c): PyTorch's nn.Upsample(scale_factor=S,
  align_corners=False) (LayerUpsampleSetMode()). Set-up refuses a number of factors that is neither 1 nor the number
  of spatial dims of the input, and flat (f) inputs.

  Calling it on a layer that is set up resets the layer; in a Net that is set up, call NetReset() afterwards
  (NetSetFromOptions() does so itself when an option changed a layer).

  Level: intermediate

.seealso: `LayerUpsampleSetMode()`, `LayerUpsampleGetScale()`, `LayerSetArguments()`, `NetSetLayers()`
@*/
PetscErrorCode LayerUpsampleSetScale(Layer layer, PetscInt n, const PetscInt s[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  if (n) PetscValidIntPointer(s, 3);
  PetscTryMethod(layer, "LayerUpsampleSetScale_C", (Layer, PetscInt, const PetscInt[]), (layer, n, s));
  PetscFunctionReturn(0);
}

/*@
  LayerUpsampleGetScale - gets the factors of an upsample layer as they were set

  Not collective

  Input Parameter:
. layer - an upsample layer

  Output Parameters:
+ n - the number of factors set: 1 (one for every spatial dim) or one per dim; or NULL
- s - the factors (room for 3), slowest dim first; or NULL

  Level: intermediate

.seealso: `LayerUpsampleSetScale()`
@*/
PetscErrorCode LayerUpsampleGetScale(Layer layer, PetscInt *n, PetscInt s[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerUpsampleGetScale_C", (Layer, PetscInt *, PetscInt[]), (layer, n, s));
  PetscFunctionReturn(0);
}

/*@
  LayerUpsampleSetMode - nearest or linear upsampling

  Logically collective

  Input Parameters:
+ layer - an upsample layer (layers of other kinds ignore the call)
- mode  - `LAYER_UPSAMPLE_NEAREST` (the default) or `LAYER_UPSAMPLE_LINEAR`

  Options Database Key:
. -<prefix>upsample_mode <nearest,linear> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is upsample:S:MODE, e.g. upsample:2:linear. Both are PyTorch's nn.Upsample with
  align_corners=False: nearest is mode='nearest' (output index o reads input floor(o / s), computed in single
  precision as PyTorch does); linear is mode='bilinear' on (h, w, c) samples and mode='trilinear' on (d, h, w, c),
  with half-pixel centres, source (o + 1/2) / s - 1/2, clamped to the first and last input at the edges. The layer is
  linear in its input and has no parameters.

  Level: intermediate

.seealso: `LayerUpsampleSetScale()`, `LayerUpsampleGetMode()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerUpsampleSetMode(Layer layer, LayerUpsampleMode mode)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(layer, mode, 2);
  PetscTryMethod(layer, "LayerUpsampleSetMode_C", (Layer, LayerUpsampleMode), (layer, mode));
  PetscFunctionReturn(0);
}

/*@
  LayerUpsampleGetMode - gets the mode of an upsample layer

  Not collective

  Input Parameter:
. layer - an upsample layer

  Output Parameter:
. mode - `LAYER_UPSAMPLE_NEAREST` or `LAYER_UPSAMPLE_LINEAR`

  Level: intermediate

.seealso: `LayerUpsampleSetMode()`
@*/
PetscErrorCode LayerUpsampleGetMode(Layer layer, LayerUpsampleMode *mode)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidPointer(mode, 2);
  PetscUseMethod(layer, "LayerUpsampleGetMode_C", (Layer, LayerUpsampleMode *), (layer, mode));
  PetscFunctionReturn(0);
}
