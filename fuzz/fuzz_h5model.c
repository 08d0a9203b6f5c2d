/* Fuzz harness: NetLoad() of an HDF5 model file (src/net/netiohdf5.c): attributes, datasets' shapes, checksums. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  Net  net;
  char name[PETSC_MAX_PATH_LEN];

  if (FuzzInitialize()) return 0;
  if (FuzzWriteFile(data, size, ".h5", sizeof(name), name)) return 0;
  if (!NetCreate(PETSC_COMM_SELF, &net)) {
    (void)NetLoad(net, name);
    NetDestroy(&net);
  }
  unlink(name);
  return 0;
}
