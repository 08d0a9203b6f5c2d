/* Fuzz harness: the layer-list and graph parsers (NetSetLayers(), NetSetGraph()) and the set-up of what they build. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  Net         net;
  char       *text;
  PetNetShape in = {3, {4, 4, 2}};

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
