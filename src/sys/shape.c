/* PetNetShape: per-sample shapes, channels-last. */
#include <petnetsys.h>
#include <petsc/private/petscimpl.h> /* PetscValidPointer */

/*@
  PetNetShapeSize - the number of entries of one sample of a shape

  Not collective

  Input Parameter:
. s - the shape

  Output Parameter:
. size - the product of the dimensions (1 when ndim is 0)

  Note:
  The product is formed in 64-bit arithmetic: a shape with more entries than a `PetscInt` holds (2^31 - 1 with
  32-bit indices) is an error, never a wrapped-around size.

  Level: beginner

.seealso: `PetNetShape`, `PetNetShapeEqual()`, `PetNetShapeToString()`, `PetNetShapeFromString()`
@*/
PetscErrorCode PetNetShapeSize(const PetNetShape *s, PetscInt *size)
{
  PetscInt64 n = 1;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < s->ndim; d++) {
    n *= s->dim[d];
    if (n > PETSC_MAX_INT || n < 0) {
      char str[128];

      PetscCall(PetNetShapeToString(s, sizeof(str), str));
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Shape %s has more than %" PetscInt_FMT " entries per sample, the largest size a PetscInt holds: use smaller samples (or fewer channels), or a PETSc configured --with-64-bit-indices", str,
              (PetscInt)PETSC_MAX_INT);
    }
  }
  *size = (PetscInt)n;
  PetscFunctionReturn(0);
}

/*@C
  PetNetShapeCheck - checks that a shape is one a sample can have: 1 to `PETNET_MAX_DIM` dimensions, each at least 1,
  and fewer entries than a `PetscInt` holds

  Collective on comm (each rank checks the shape it was given)

  Input Parameters:
+ comm - the communicator of the error
. s    - the shape
- what - what the shape is for, named in the error (e.g. "NetSetInputShape()")

  Notes:
  A shape with a zero dimension (0x0x0) would make every sample empty, and the layers divide by its size: it is refused
  here, where the caller passes it, rather than in the first forward pass. The product is formed in 64 bits
  (`PetNetShapeSize()`).

  Level: developer

.seealso: `PetNetShape`, `PetNetShapeSize()`, `PetNetShapeFromString()`, `NetSetInputShape()`
@*/
PetscErrorCode PetNetShapeCheck(MPI_Comm comm, const PetNetShape *s, const char what[])
{
  PetscInt n;

  PetscFunctionBegin;
  PetscValidPointer(s, 2);
  PetscCheck(s->ndim >= 1 && s->ndim <= PETNET_MAX_DIM, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: a sample shape has 1 to %d dimensions, (f), (h, w, c) or (d, h, w, c), not %" PetscInt_FMT, what, PETNET_MAX_DIM, s->ndim);
  for (PetscInt d = 0; d < s->ndim; d++) {
    char str[128];

    if (s->dim[d] >= 1) continue;
    PetscCall(PetNetShapeToString(s, sizeof(str), str));
    SETERRQ(comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: shape %s has dimension %" PetscInt_FMT " equal to %" PetscInt_FMT "; every dimension must be at least 1, e.g. 784 or 28x28x1", what, str, d, s->dim[d]);
  }
  PetscCall(PetNetShapeSize(s, &n));
  PetscFunctionReturn(0);
}

/*@
  PetNetShapeEqual - whether two shapes have the same dimensions

  Not collective

  Input Parameters:
+ a - a shape
- b - another shape

  Notes:
  Returns `PETSC_TRUE` when both have the same ndim and the same dim[] entries (no PetscErrorCode: usable in
  PetscCheck()). (784) and (28, 28, 1) are different shapes of the same size.

  Level: beginner

.seealso: `PetNetShape`, `PetNetShapeSize()`
@*/
PetscBool PetNetShapeEqual(const PetNetShape *a, const PetNetShape *b)
{
  if (a->ndim != b->ndim) return PETSC_FALSE;
  for (PetscInt d = 0; d < a->ndim; d++)
    if (a->dim[d] != b->dim[d]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/*@C
  PetNetShapeToString - writes a shape as text, "784", "28x28x1" (h x w x c) or "16x32x32x4" (d x h x w x c)

  Not collective

  Input Parameters:
+ s   - the shape
- len - the size of str

  Output Parameter:
. str - the text, dimensions separated by 'x' (empty when ndim is 0); truncated to len - 1 characters

  Level: beginner

.seealso: `PetNetShape`, `PetNetShapeFromString()`
@*/
PetscErrorCode PetNetShapeToString(const PetNetShape *s, size_t len, char str[])
{
  size_t n = 0;

  PetscFunctionBegin;
  str[0] = 0;
  for (PetscInt d = 0; d < s->ndim; d++) {
    PetscCall(PetscSNPrintf(str + n, len - n, d ? "x%" PetscInt_FMT : "%" PetscInt_FMT, s->dim[d]));
    PetscCall(PetscStrlen(str, &n));
  }
  PetscFunctionReturn(0);
}

/*@C
  PetNetShapeFromString - reads a shape from text: "784", "28x28x1", "28,28,1" or "16x32x32x4"

  Not collective

  Input Parameter:
. str - positive integers separated by 'x' or ',', at most `PETNET_MAX_DIM` of them

  Output Parameter:
. s - the shape

  Notes:
  An empty string, a non-positive or missing dimension, a trailing separator or more than `PETNET_MAX_DIM`
  dimensions is an error that says what to write instead. The options -dataset_sample_shape and -net_input_shape
  are read with it. The layers know three kinds of sample: (f), (h, w, c) and (d, h, w, c), channels last.

  Level: beginner

.seealso: `PetNetShape`, `PetNetShapeToString()`, `DatasetSetSampleShape()`, `NetSetInputShape()`
@*/
PetscErrorCode PetNetShapeFromString(const char str[], PetNetShape *s)
{
  const char *p = str;

  PetscFunctionBegin;
  s->ndim = 0;
  PetscCheck(*p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Empty shape: give the per-sample shape as positive integers separated by 'x', e.g. 784 or 28x28x1");
  while (*p) {
    char    *end;
    long int v = strtol(p, &end, 10);

    PetscCheck(end != p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": '%c' where a number should be; write positive integers separated by 'x' (or ','), e.g. 784 or 28x28x1", str, *p);
    PetscCheck(v > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": dimension %ld is not positive; write positive integers separated by 'x' (or ','), e.g. 784 or 28x28x1", str, v);
    PetscCheck(v <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Shape \"%s\": dimension %.*s is larger than %" PetscInt_FMT ", the largest a PetscInt holds", str, (int)(end - p), p, (PetscInt)PETSC_MAX_INT);
    PetscCheck(s->ndim < PETNET_MAX_DIM, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Shape \"%s\" has more than %d dimensions: a sample is (f), (h x w x c) or (d x h x w x c)", str, PETNET_MAX_DIM);
    s->dim[s->ndim++] = (PetscInt)v;
    p                 = end;
    if (*p == 'x' || *p == ',') {
      p++;
      PetscCheck(*p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": it ends with a separator; write positive integers separated by 'x' (or ','), e.g. 784 or 28x28x1", str);
    } else
      PetscCheck(!*p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": unexpected character '%c'; write positive integers separated by 'x' (or ','), e.g. 784 or 28x28x1", str, *p);
  }
  PetscFunctionReturn(0);
}
