/* Sliding-window geometry (see window.h) and the settings shared by the pooling kinds. */
#include "window.h"

/* "3", "3x5" or "3,5" -> {3, 3} or {3, 5}; name is the setting's name for the error message */
PetscErrorCode LayerWindowParsePair(MPI_Comm comm, const char name[], const char str[], PetscInt pair[2])
{
  char *end;
  long  a, b;

  PetscFunctionBegin;
  a = strtol(str, &end, 10);
  PetscCheck(end != str, comm, PETSC_ERR_ARG_WRONG, "%s must be an integer or a pair such as 3x5, not \"%s\"", name, str);
  b = a;
  if (*end == 'x' || *end == ',') {
    const char *second = end + 1;

    b = strtol(second, &end, 10);
    PetscCheck(end != second, comm, PETSC_ERR_ARG_WRONG, "%s must be an integer or a pair such as 3x5, not \"%s\"", name, str);
  }
  PetscCheck(!*end, comm, PETSC_ERR_ARG_WRONG, "%s must be an integer or a pair such as 3x5, not \"%s\"", name, str);
  PetscCheck(a >= PETSC_MIN_INT && a <= PETSC_MAX_INT && b >= PETSC_MIN_INT && b <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s \"%s\" is out of range: at most %d", name, str, PETSC_MAX_INT);
  pair[0] = (PetscInt)a;
  pair[1] = (PetscInt)b;
  PetscFunctionReturn(0);
}

PetscErrorCode LayerWindowPairToString(const PetscInt pair[2], size_t len, char str[])
{
  PetscFunctionBegin;
  if (pair[0] == pair[1])
    PetscCall(PetscSNPrintf(str, len, "%" PetscInt_FMT, pair[0]));
  else
    PetscCall(PetscSNPrintf(str, len, "%" PetscInt_FMT "x%" PetscInt_FMT, pair[0], pair[1]));
  PetscFunctionReturn(0);
}

/* From the layer's (h, w, c) input shape: output sizes and the valid tap ranges. */
PetscErrorCode LayerWindowSetUp(Layer layer, LayerWindow *win)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  char        shape[64];

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 3, comm, PETSC_ERR_ARG_SIZ, "%s needs an (h, w, c) input, but its input shape is %s: give -net_input_shape HxWxC (e.g. 28x28x1)", kind, shape);
  PetscCall(LayerWindowReset(win));
  for (int d = 0; d < 2; d++) {
    PetscInt extent;

    win->step[d] = win->stride[d] ? win->stride[d] : win->k[d];
    PetscCheck(win->k[d] > 0 && win->step[d] > 0 && win->dilation[d] > 0 && win->pad[d] >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: kernel, stride and dilation must be positive and padding non-negative", kind);
    win->in[d] = layer->in.dim[d];
    PetscCheck(win->dilation[d] * (PetscInt64)(win->k[d] - 1) + 1 <= PETSC_MAX_INT && win->in[d] + 2 * (PetscInt64)win->pad[d] <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "%s: the window (kernel %" PetscInt_FMT ", dilation %" PetscInt_FMT ", padding %" PetscInt_FMT ") is too large for input %s", kind, win->k[d], win->dilation[d], win->pad[d], shape);
    extent = win->dilation[d] * (win->k[d] - 1) + 1;
    PetscCheck(win->in[d] + 2 * win->pad[d] >= extent, comm, PETSC_ERR_ARG_SIZ, "%s: the %s window (extent %" PetscInt_FMT ") is larger than the padded input %s: reduce the kernel or dilation, or pad more", kind, d ? "horizontal" : "vertical",
               extent, shape);
    win->out[d] = (win->in[d] + 2 * win->pad[d] - extent) / win->step[d] + 1;
    PetscCall(PetscMalloc2(win->out[d], &win->t0[d], win->out[d], &win->t1[d]));
    for (PetscInt o = 0; o < win->out[d]; o++) {
      PetscInt first = win->k[d], last = -1;

      for (PetscInt t = 0; t < win->k[d]; t++) {
        PetscInt i = o * win->step[d] - win->pad[d] + t * win->dilation[d];

        if (i >= 0 && i < win->in[d]) {
          first = PetscMin(first, t);
          last  = t;
        }
      }
      win->t0[d][o] = last < 0 ? 0 : first;
      win->t1[d][o] = last < 0 ? 0 : last + 1;
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode LayerWindowReset(LayerWindow *win)
{
  PetscFunctionBegin;
  for (int d = 0; d < 2; d++) PetscCall(PetscFree2(win->t0[d], win->t1[d]));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------- pooling kinds: settings shared by maxpool and avgpool */

/* stride 0 means "equal to the kernel" (PyTorch's default) */
static void PoolResolveStride(const LayerWindow *win, PetscInt stride[2])
{
  for (int d = 0; d < 2; d++) stride[d] = win->stride[d] ? win->stride[d] : win->k[d];
}

static PetscErrorCode LayerPoolSetKernel_Pool(Layer layer, PetscInt kh, PetscInt kw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(kh > 0 && kw > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s kernel must be positive, not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, kh, kw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->k[0] = kh;
  win->k[1] = kw;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerPoolSetStride_Pool(Layer layer, PetscInt sh, PetscInt sw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(sh >= 0 && sw >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s stride must be positive (or 0 for the kernel size), not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, sh, sw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->stride[0] = sh;
  win->stride[1] = sw;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerPoolSetPadding_Pool(Layer layer, PetscInt ph, PetscInt pw)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  PetscCheck(ph >= 0 && pw >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s padding must be non-negative, not %" PetscInt_FMT "x%" PetscInt_FMT, ((PetscObject)layer)->type_name, ph, pw);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  win->pad[0] = ph;
  win->pad[1] = pw;
  PetscFunctionReturn(0);
}

/* K[:STRIDE[:PAD]], each an integer or a pair HxW */
static PetscErrorCode LayerSetArguments_Pool(Layer layer, const char args[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  char        copy[256], *field, *saveptr = NULL;
  PetscInt    pair[2], i = 0;

  PetscFunctionBegin;
  PetscCheck(strlen(args) < sizeof(copy), comm, PETSC_ERR_ARG_SIZ, "%s:%.64s... is longer than %zu characters: give at most K:STRIDE:PAD", kind, args, sizeof(copy) - 1);
  PetscCall(PetscStrncpy(copy, args, sizeof(copy)));
  for (field = strtok_r(copy, ":", &saveptr); field; field = strtok_r(NULL, ":", &saveptr), i++) {
    PetscCheck(i < 3, comm, PETSC_ERR_ARG_WRONG, "%s takes at most K:STRIDE:PAD (e.g. %s:3:2:1), not \"%s\"", kind, kind, args);
    PetscCall(LayerWindowParsePair(comm, i == 0 ? "The pooling kernel" : i == 1 ? "The pooling stride" : "The pooling padding", field, pair));
    if (i == 0)
      PetscCall(LayerPoolSetKernel_Pool(layer, pair[0], pair[1]));
    else if (i == 1)
      PetscCall(LayerPoolSetStride_Pool(layer, pair[0], pair[1]));
    else
      PetscCall(LayerPoolSetPadding_Pool(layer, pair[0], pair[1]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Pool(Layer layer, size_t len, char args[])
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[2];
  char         k[32], s[32], p[32];

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscCall(LayerWindowPairToString(win->k, sizeof(k), k));
  PetscCall(LayerWindowPairToString(stride, sizeof(s), s));
  PetscCall(LayerWindowPairToString(win->pad, sizeof(p), p));
  if (win->pad[0] || win->pad[1])
    PetscCall(PetscSNPrintf(args, len, "%s:%s:%s", k, s, p));
  else if (stride[0] != win->k[0] || stride[1] != win->k[1])
    PetscCall(PetscSNPrintf(args, len, "%s:%s", k, s));
  else
    PetscCall(PetscSNPrintf(args, len, "%s", k));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Pool(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  LayerWindow *win  = (LayerWindow *)layer->data;
  const char  *kind = ((PetscObject)layer)->type_name;
  MPI_Comm     comm = PetscObjectComm((PetscObject)layer);
  PetscInt     stride[2], pair[2];
  char         opt[64], value[64];
  PetscBool    flg;

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscOptionsHeadBegin(PetscOptionsObject, "Pooling layer options");
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_kernel", kind));
  PetscCall(LayerWindowPairToString(win->k, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Window size, K or KHxKW", "LayerPoolSetKernel", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetKernel_Pool(layer, pair[0], pair[1]));
  }
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_stride", kind));
  PetscCall(LayerWindowPairToString(stride, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Stride, S or SHxSW (default: the kernel size)", "LayerPoolSetStride", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetStride_Pool(layer, pair[0], pair[1]));
  }
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_padding", kind));
  PetscCall(LayerWindowPairToString(win->pad, sizeof(value), value));
  PetscCall(PetscOptionsString(opt, "Padding, P or PHxPW (at most half the kernel)", "LayerPoolSetPadding", value, value, sizeof(value), &flg));
  if (flg) {
    PetscCall(LayerWindowParsePair(comm, opt, value, pair));
    PetscCall(LayerPoolSetPadding_Pool(layer, pair[0], pair[1]));
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Pool(Layer layer, PetscViewer viewer)
{
  LayerWindow *win = (LayerWindow *)layer->data;
  PetscInt     stride[2];

  PetscFunctionBegin;
  PoolResolveStride(win, stride);
  PetscCall(
      PetscViewerASCIIPrintf(viewer, "kernel %" PetscInt_FMT "x%" PetscInt_FMT ", stride %" PetscInt_FMT "x%" PetscInt_FMT ", padding %" PetscInt_FMT "x%" PetscInt_FMT "\n", win->k[0], win->k[1], stride[0], stride[1], win->pad[0], win->pad[1]));
  PetscFunctionReturn(0);
}

/* Output shape (ho, wo, c); as PyTorch, padding may be at most half the kernel so that no window is all padding. */
PetscErrorCode LayerSetUpPool_Private(Layer layer)
{
  LayerWindow *win = (LayerWindow *)layer->data;

  PetscFunctionBegin;
  for (int d = 0; d < 2; d++) {
    PetscCheck(2 * win->pad[d] <= win->k[d], PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s: padding %" PetscInt_FMT " is more than half the kernel %" PetscInt_FMT ": reduce -%s_padding", ((PetscObject)layer)->type_name,
               win->pad[d], win->k[d], ((PetscObject)layer)->type_name);
    win->dilation[d] = 1;
  }
  PetscCall(LayerWindowSetUp(layer, win));
  layer->out.ndim   = 3;
  layer->out.dim[0] = win->out[0];
  layer->out.dim[1] = win->out[1];
  layer->out.dim[2] = layer->in.dim[2];
  PetscFunctionReturn(0);
}

PetscErrorCode LayerResetPool_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerWindowReset((LayerWindow *)layer->data));
  PetscFunctionReturn(0);
}

PetscErrorCode LayerDestroyPool_Private(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetKernel_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetStride_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetPadding_C", NULL));
  PetscCall(LayerWindowReset((LayerWindow *)layer->data));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* size: the kind's data struct, which starts with a LayerWindow. Default window 2x2, stride = kernel, no padding. */
PetscErrorCode LayerCreatePool_Private(Layer layer, size_t size)
{
  LayerWindow *win;

  PetscFunctionBegin;
  PetscCall(PetscCalloc(size, &win));
  win->k[0] = win->k[1] = 2;
  win->dilation[0] = win->dilation[1] = 1;
  layer->data                         = win;
  layer->ops->setarguments            = LayerSetArguments_Pool;
  layer->ops->getarguments            = LayerGetArguments_Pool;
  layer->ops->setfromoptions          = LayerSetFromOptions_Pool;
  layer->ops->view                    = LayerView_Pool;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetKernel_C", LayerPoolSetKernel_Pool));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetStride_C", LayerPoolSetStride_Pool));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerPoolSetPadding_C", LayerPoolSetPadding_Pool));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetKernel - the window of a maxpool or avgpool layer, kh x kw.
@*/
PetscErrorCode LayerPoolSetKernel(Layer layer, PetscInt kh, PetscInt kw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetKernel_C", (Layer, PetscInt, PetscInt), (layer, kh, kw));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetStride - the stride of a maxpool or avgpool layer (0 means the kernel size, the default).
@*/
PetscErrorCode LayerPoolSetStride(Layer layer, PetscInt sh, PetscInt sw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetStride_C", (Layer, PetscInt, PetscInt), (layer, sh, sw));
  PetscFunctionReturn(0);
}

/*@
  LayerPoolSetPadding - implicit padding of a maxpool (by -infinity) or avgpool (by zeros, counted in the mean) layer.
@*/
PetscErrorCode LayerPoolSetPadding(Layer layer, PetscInt ph, PetscInt pw)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerPoolSetPadding_C", (Layer, PetscInt, PetscInt), (layer, ph, pw));
  PetscFunctionReturn(0);
}
