/* PetNetShape: per-sample shapes, channels-last. */
#include <petnetsys.h>

PetscErrorCode PetNetShapeSize(const PetNetShape *s, PetscInt *size)
{
  PetscFunctionBegin;
  *size = 1;
  for (PetscInt d = 0; d < s->ndim; d++) *size *= s->dim[d];
  PetscFunctionReturn(0);
}

PetscBool PetNetShapeEqual(const PetNetShape *a, const PetNetShape *b)
{
  if (a->ndim != b->ndim) return PETSC_FALSE;
  for (PetscInt d = 0; d < a->ndim; d++)
    if (a->dim[d] != b->dim[d]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* "784" or "28x28x1" (h x w x c) */
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

/* Accepts "784", "28x28x1" or "28,28,1" */
PetscErrorCode PetNetShapeFromString(const char str[], PetNetShape *s)
{
  const char *p = str;

  PetscFunctionBegin;
  s->ndim = 0;
  while (*p) {
    char    *end;
    long int v = strtol(p, &end, 10);

    PetscCheck(end != p && v > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": expected positive integers separated by 'x' or ',' such as 784 or 28x28x1", str);
    PetscCheck(s->ndim < PETNET_MAX_DIM, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Shape \"%s\" has more than %d dimensions", str, PETNET_MAX_DIM);
    s->dim[s->ndim++] = (PetscInt)v;
    p                 = end;
    if (*p == 'x' || *p == ',') {
      p++;
      PetscCheck(*p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": trailing separator", str);
    } else PetscCheck(!*p, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Malformed shape \"%s\": unexpected character '%c'", str, *p);
  }
  PetscCheck(s->ndim > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Empty shape: give the per-sample shape, for example 784 or 28x28x1");
  PetscFunctionReturn(0);
}
