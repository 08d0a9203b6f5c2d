/*
  Fuzz harness: the layer-list and graph parsers (NetSetLayers(), NetSetGraph()) and the set-up of what they build.

  A spec may ask for an enormous but valid Net (dense:18000000 is 300 million parameters: 10 GB with the gradient and
  its replicas). That is the user's right, not a parser bug, so PETSc's allocations go through a capped allocator:
  one larger than FUZZ_SPEC_MAX_ALLOC fails with PETSC_ERR_MEM, and the Net's error path is exercised instead of the
  machine's memory. Sizes beyond the PetscInt range must still be refused before anything is allocated.
*/
#include "fuzz.h"
#include <stdlib.h>

#define FUZZ_SPEC_MAX_ALLOC ((size_t)256 << 20)

static PetscErrorCode FuzzMalloc(size_t n, PetscBool clear, int line, const char func[], const char file[], void **result)
{
  *result = NULL;
  if (n > FUZZ_SPEC_MAX_ALLOC) return PetscError(PETSC_COMM_SELF, line, func, file, PETSC_ERR_MEM, PETSC_ERROR_INITIAL, "fuzz_spec: an allocation of %zu bytes, more than the harness allows", n);
  if (!n) return 0;
  *result = clear ? calloc(n, 1) : malloc(n);
  if (!*result) return PetscError(PETSC_COMM_SELF, line, func, file, PETSC_ERR_MEM, PETSC_ERROR_INITIAL, "fuzz_spec: out of memory for %zu bytes", n);
  return 0;
}

static PetscErrorCode FuzzFree(void *ptr, int line, const char func[], const char file[])
{
  free(ptr);
  return 0;
}

static PetscErrorCode FuzzRealloc(size_t n, int line, const char func[], const char file[], void **result)
{
  void *p;

  if (n > FUZZ_SPEC_MAX_ALLOC) return PetscError(PETSC_COMM_SELF, line, func, file, PETSC_ERR_MEM, PETSC_ERROR_INITIAL, "fuzz_spec: an allocation of %zu bytes, more than the harness allows", n);
  if (!n) {
    free(*result);
    *result = NULL;
    return 0;
  }
  p = realloc(*result, n);
  if (!p) return PetscError(PETSC_COMM_SELF, line, func, file, PETSC_ERR_MEM, PETSC_ERROR_INITIAL, "fuzz_spec: out of memory for %zu bytes", n);
  *result = p;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int  capped = 0;
  Net         net;
  char       *text;
  PetNetShape in = {3, {4, 4, 2}};

  if (!capped) { /* before PETSc's first allocation */
    capped = 1;
    if (PetscMallocSet(FuzzMalloc, FuzzFree, FuzzRealloc)) return 0;
  }
  if (FuzzInitialize()) return 0;
  if (size > 65536) return 0;
  if (PetscMalloc1(size + 1, &text)) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  if (!NetCreate(PETSC_COMM_SELF, &net)) {
    PetscErrorCode ierr = strchr(text, ';') ? NetSetGraph(net, text) : NetSetLayers(net, text);

    if (!ierr) ierr = NetSetInputShape(net, &in);
    if (!ierr) ierr = NetSetUp(net);
    (void)ierr;
    NetDestroy(&net);
  }
  PetscFree(text);
  return 0;
}
