/* Sliding-window geometry (see window.h): the settings ("3", "3x5", "2x3x3"), output sizes and valid tap ranges. */
#include "window.h"

static const char *const LayerWindowSettingNames[] = {"kernel", "stride", "padding", "dilation"};

/* Names of the spatial dims in messages, slowest first */
static const char *LayerWindowDimName(PetscInt nsd, PetscInt d)
{
  static const char *const names2[] = {"vertical", "horizontal"}, *const names3[] = {"depth", "vertical", "horizontal"};

  return nsd == 3 ? names3[d] : names2[d];
}

/*
  "3", "3x5", "3,5" or "2x3x3" -> v[] (one value replicated into all three entries) and n, the number of values given;
  name is the setting's name for the error message. nsd 2 or 3 accepts 1 or nsd values (conv2d, conv3d), nsd 0 any of
  1 to 3 (the pools, whose dims come from the input).
*/
PetscErrorCode LayerWindowParse(MPI_Comm comm, const char name[], const char str[], PetscInt nsd, PetscInt v[3], PetscInt *n)
{
  const char *p = str, *form = nsd == 2 ? "an integer or a pair such as 3x5" : nsd == 3 ? "an integer or a triple such as 3x3x5" : "an integer, a pair such as 3x5 or a triple such as 2x3x3";
  long        a[3];
  PetscInt    count = 0;

  PetscFunctionBegin;
  while (1) {
    char *end;

    PetscCheck(count < 3, comm, PETSC_ERR_ARG_WRONG, "%s must be %s, not \"%s\"", name, form, str);
    a[count] = strtol(p, &end, 10);
    PetscCheck(end != p, comm, PETSC_ERR_ARG_WRONG, "%s must be %s, not \"%s\"", name, form, str);
    PetscCheck(a[count] >= PETSC_MIN_INT && a[count] <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s \"%s\" is out of range: at most %d", name, str, PETSC_MAX_INT);
    count++;
    p = end;
    if (!*p) break;
    PetscCheck(*p == 'x' || *p == ',', comm, PETSC_ERR_ARG_WRONG, "%s must be %s, not \"%s\"", name, form, str);
    p++;
  }
  PetscCheck(count == 1 || !nsd || count == nsd, comm, PETSC_ERR_ARG_WRONG, "%s must be %s, not \"%s\"", name, form, str);
  for (PetscInt d = 0; d < 3; d++) v[d] = (PetscInt)a[count == 1 ? 0 : PetscMin(d, count - 1)];
  *n = count;
  PetscFunctionReturn(0);
}

/* The n values of a setting as text: "3" when they are all equal, else "3x5" or "2x3x3" */
PetscErrorCode LayerWindowToString(const PetscInt v[], PetscInt n, size_t len, char str[])
{
  PetscBool same = PETSC_TRUE;

  PetscFunctionBegin;
  for (PetscInt d = 1; d < n; d++) same = (PetscBool)(same && v[d] == v[0]);
  PetscCall(LayerWindowToFullString(v, same ? 1 : n, len, str));
  PetscFunctionReturn(0);
}

/* "2x2" or "2x2x2": all n entries, as the views show them */
PetscErrorCode LayerWindowToFullString(const PetscInt v[], PetscInt n, size_t len, char str[])
{
  size_t used = 0;

  PetscFunctionBegin;
  str[0] = 0;
  for (PetscInt d = 0; d < n; d++) {
    PetscCall(PetscSNPrintf(str + used, len - used, d ? "x%" PetscInt_FMT : "%" PetscInt_FMT, v[d]));
    PetscCall(PetscStrlen(str, &used));
  }
  PetscFunctionReturn(0);
}

PetscInt *LayerWindowGetSetting(LayerWindow *win, LayerWindowSetting which)
{
  return which == LAYER_WINDOW_KERNEL ? win->k : which == LAYER_WINDOW_STRIDE ? win->stride : which == LAYER_WINDOW_PADDING ? win->pad : win->dilation;
}

/*
  Sets one setting from n values (1, or n equal values: the same along every dim), checking them: kernel and dilation positive, padding
  non-negative, stride non-negative (0: the kernel, the pools' default; a convolution checks for positive itself).
  A layer that is set up is reset when the setting changes.
*/
PetscErrorCode LayerWindowSet(Layer layer, LayerWindow *win, LayerWindowSetting which, PetscInt n, const PetscInt v[])
{
  const char *kind = ((PetscObject)layer)->type_name;
  PetscInt   *s = LayerWindowGetSetting(win, which), lo = which == LAYER_WINDOW_KERNEL || which == LAYER_WINDOW_DILATION ? 1 : 0;
  PetscBool   changed, same                             = PETSC_TRUE;
  char        str[64];

  PetscFunctionBegin;
  PetscCheck(n >= 1 && n <= LAYER_WINDOW_MAX_DIM, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s %s: give 1 to 3 values, not %" PetscInt_FMT, kind, LayerWindowSettingNames[which], n);
  for (PetscInt d = 1; d < n; d++) same = (PetscBool)(same && v[d] == v[0]);
  if (same) n = 1; /* "3x3" is the same along every dim: also 3x3x3 on a volume */
  changed = (PetscBool)(n != win->given[which]);
  PetscCall(LayerWindowToString(v, n, sizeof(str), str));
  for (PetscInt d = 0; d < n; d++)
    PetscCheck(v[d] >= lo, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s %s must be %s, not %s", kind, LayerWindowSettingNames[which],
               which == LAYER_WINDOW_STRIDE ? "positive (or 0 for the kernel size)"
               : lo                         ? "positive"
                                            : "non-negative",
               str);
  for (PetscInt d = 0; d < 3; d++) changed = (PetscBool)(changed || s[d] != v[n == 1 ? 0 : PetscMin(d, n - 1)]);
  if (layer->setupcalled && changed) PetscCall(LayerReset(layer));
  for (PetscInt d = 0; d < 3; d++) s[d] = v[n == 1 ? 0 : PetscMin(d, n - 1)];
  win->given[which] = n;
  PetscFunctionReturn(0);
}

/*
  Set-up for nsd spatial dims: each setting must have 1 or nsd values. With in[] (the input's spatial sizes, slowest
  first) the output sizes and the valid tap ranges; with in = NULL (point form, layer->fielddim) only the settings
  and the stride in effect.
*/
PetscErrorCode LayerWindowSetUp(Layer layer, LayerWindow *win, PetscInt nsd, const PetscInt in[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  const char *kind = ((PetscObject)layer)->type_name;
  char        shape[64], form[64] = "";

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCall(LayerWindowReset(win));
  for (PetscInt w = 0; w < 4; w++) {
    const PetscInt *s = LayerWindowGetSetting(win, (LayerWindowSetting)w);
    char            value[64];

    if (win->given[w] <= 1 || win->given[w] == nsd) continue;
    PetscCall(LayerWindowToString(s, win->given[w], sizeof(value), value));
    if (in)
      PetscCall(PetscSNPrintf(form, sizeof(form), ", but its input %s is %s", shape, nsd == 3 ? "(d, h, w, c)" : "(h, w, c)"));
    else
      PetscCall(PetscSNPrintf(form, sizeof(form), ", but its window spans %" PetscInt_FMT " spatial dims", nsd));
    SETERRQ(comm, PETSC_ERR_ARG_INCOMP, "%s layer %" PetscInt_FMT ": its %s %s has %" PetscInt_FMT " values%s: give one value for every dim or %s (e.g. %s)", kind, layer->index, LayerWindowSettingNames[w], value, win->given[w], form,
            nsd == 3 ? "DxHxW" : "HxW", nsd == 3 ? "3 or 3x3x5" : "3 or 3x5");
  }
  win->nsd = nsd;
  for (PetscInt d = 0; d < nsd; d++) {
    PetscInt extent;

    win->step[d] = win->stride[d] ? win->stride[d] : win->k[d];
    PetscCheck(win->k[d] > 0 && win->step[d] > 0 && win->dilation[d] > 0 && win->pad[d] >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: kernel, stride and dilation must be positive and padding non-negative", kind);
    PetscCheck(win->dilation[d] * (PetscInt64)(win->k[d] - 1) + 1 <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: the window (kernel %" PetscInt_FMT ", dilation %" PetscInt_FMT ") is too large", kind, win->k[d], win->dilation[d]);
    if (!in) continue;
    win->in[d] = in[d];
    PetscCheck(win->in[d] + 2 * (PetscInt64)win->pad[d] <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: the window (kernel %" PetscInt_FMT ", dilation %" PetscInt_FMT ", padding %" PetscInt_FMT ") is too large for input %s", kind, win->k[d],
               win->dilation[d], win->pad[d], shape);
    extent = win->dilation[d] * (win->k[d] - 1) + 1;
    PetscCheck(win->in[d] + 2 * win->pad[d] >= extent, comm, PETSC_ERR_ARG_SIZ, "%s layer %" PetscInt_FMT ": the %s window (extent %" PetscInt_FMT ") is larger than the padded input %s: reduce the kernel or dilation, or pad more", kind, layer->index,
               LayerWindowDimName(nsd, d), extent, shape);
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

/*
  The window as the grid-mode op getwindow gives it (layerimpl.h): nsd dims, slowest first, kernel, step in effect,
  padding and dilation. nsd is the kind's (conv2d 2, conv3d 3), or 0 for the set-up one (the pools).
*/
PetscErrorCode LayerWindowGetWindow(Layer layer, const LayerWindow *win, PetscInt nsd, PetscInt *nsdout, PetscInt k[], PetscInt step[], PetscInt pad[], PetscInt dilation[])
{
  PetscFunctionBegin;
  if (!nsd) nsd = win->nsd;
  PetscCheck(nsd, PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT " has no window before it is set up (its spatial dims come from its input): call LayerSetUp() first", ((PetscObject)layer)->type_name, layer->index);
  *nsdout = nsd;
  for (PetscInt d = 0; d < nsd; d++) {
    if (k) k[d] = win->k[d];
    if (step) step[d] = win->stride[d] ? win->stride[d] : win->k[d];
    if (pad) pad[d] = win->pad[d];
    if (dilation) dilation[d] = win->dilation[d];
  }
  PetscFunctionReturn(0);
}

/* The set-up window as three dims: a 2-D window gets a leading dim of one point, one tap, all valid */
void LayerWindowGetVolume(const LayerWindow *win, LayerWindowVolume *v)
{
  static const PetscInt zero = 0, one = 1;
  const PetscInt        lead = 3 - win->nsd;

  for (PetscInt d = 0; d < lead; d++) {
    v->in[d] = v->out[d] = v->k[d] = v->step[d] = v->dilation[d] = 1;
    v->pad[d]                                                    = 0;
    v->t0[d]                                                     = &zero;
    v->t1[d]                                                     = &one;
  }
  for (PetscInt d = lead; d < 3; d++) {
    v->in[d]       = win->in[d - lead];
    v->out[d]      = win->out[d - lead];
    v->k[d]        = win->k[d - lead];
    v->step[d]     = win->step[d - lead];
    v->pad[d]      = win->pad[d - lead];
    v->dilation[d] = win->dilation[d - lead];
    v->t0[d]       = win->t0[d - lead];
    v->t1[d]       = win->t1[d - lead];
  }
}

PetscErrorCode LayerWindowReset(LayerWindow *win)
{
  PetscFunctionBegin;
  for (int d = 0; d < LAYER_WINDOW_MAX_DIM; d++) PetscCall(PetscFree2(win->t0[d], win->t1[d]));
  win->nsd = 0;
  PetscFunctionReturn(0);
}
