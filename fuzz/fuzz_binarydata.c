/*
  Fuzz harness: the binary Dataset reader (a PETSc binary file: a Mat or a Vec of inputs, then a Vec of targets)
  through DatasetSetUp().

  Input layout: byte 0 = options (bit 0: -dataset_sample_shape 2x2x1, needed by Vec inputs; bit 1: a limit of 2
  samples), then the file.
*/
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  PetNetShape shape = {3, {2, 2, 1}};
  Dataset     ds;
  char        file[PETSC_MAX_PATH_LEN];

  if (FuzzInitialize()) return 0;
  if (size < 1 || size > 65536) return 0;
  if (FuzzWriteFile(data + 1, size - 1, ".bin", sizeof(file), file)) return 0;
  if (!DatasetCreate(PETSC_COMM_SELF, &ds)) {
    PetscErrorCode ierr = DatasetSetType(ds, DATASETBINARY);

    if (!ierr) ierr = DatasetFileSetName(ds, file);
    if (!ierr && (data[0] & 1)) ierr = DatasetSetSampleShape(ds, &shape);
    if (!ierr && (data[0] & 2)) ierr = DatasetSetLimit(ds, 2);
    (void)FuzzDatasetRead(&ds, ierr);
  }
  return 0;
}
