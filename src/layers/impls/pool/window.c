/* Sliding-window geometry (see window.h): the settings' "3x5" pairs, output sizes and valid tap ranges. */
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
