/* Fuzz harness: NetLoad() of a PETSc binary model file (src/net/netiobinary.c): header, layer list, parameters, checksum table. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  Net  net;
  char name[PETSC_MAX_PATH_LEN];

  if (FuzzInitialize()) return 0;
  if (FuzzWriteFile(data, size, ".petnet", sizeof(name), name)) return 0;
  if (!NetCreate(PETSC_COMM_SELF, &net)) {
    (void)NetLoad(net, name);
    NetDestroy(&net);
  }
  unlink(name);
  return 0;
}
