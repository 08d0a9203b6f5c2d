/*
  Fuzz harness: the hdf5 Dataset reader (datasets "inputs" and "targets", optional "sample_shape" attribute) through
  DatasetSetUp().

  Input layout: byte 0 = options (bit 0: a limit of 2 samples), then the HDF5 file.
*/
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  Dataset ds;
  char    file[PETSC_MAX_PATH_LEN];

  if (FuzzInitialize()) return 0;
  if (size < 1 || size > 65536) return 0;
  if (FuzzWriteFile(data + 1, size - 1, ".h5", sizeof(file), file)) return 0;
  if (!DatasetCreate(PETSC_COMM_SELF, &ds)) {
    PetscErrorCode ierr = DatasetSetType(ds, DATASETHDF5);

    if (!ierr) ierr = DatasetFileSetName(ds, file);
    if (!ierr && (data[0] & 1)) ierr = DatasetSetLimit(ds, 2);
    (void)FuzzDatasetRead(&ds, ierr);
  }
  return 0;
}
