/*
  Fuzz harness: the idx Dataset reader (IDX images and labels, gzip or plain) through DatasetSetUp().

  Input layout: byte 0 = options (bits 0-1: sample limit none, 1, 3 or 100; bit 2: 10 classes declared),
  bytes 1-2 = L, the length of the labels file (big-endian), then the L bytes of the labels file, then the images
  file. Each file is written as it is: gzip data is read as gzip, anything else as a plain IDX file.
*/
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const PetscInt limits[4] = {PETSC_DETERMINE, 1, 3, 100};
  Dataset               ds;
  char                  images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];
  size_t                nlabels;

  if (FuzzInitialize()) return 0;
  if (size < 3 || size > 65536) return 0;
  nlabels = (size_t)data[1] << 8 | data[2];
  if (nlabels > size - 3) return 0;
  if (FuzzWriteFile(data + 3, nlabels, "-labels", sizeof(labels), labels)) return 0;
  if (FuzzWriteFile(data + 3 + nlabels, size - 3 - nlabels, "-images", sizeof(images), images)) return 0;
  if (!DatasetCreate(PETSC_COMM_SELF, &ds)) {
    PetscErrorCode ierr = DatasetIDXSetFiles(ds, images, labels);

    if (!ierr) ierr = DatasetSetLimit(ds, limits[data[0] & 3]);
    if (!ierr && (data[0] & 4)) ierr = DatasetSetNumClasses(ds, 10);
    if (!ierr) ierr = DatasetSetBatchSize(ds, 2);
    if (!ierr) ierr = DatasetSetUp(ds);
    if (!ierr) ierr = DatasetCheckLabels(ds, 10); /* the label check of every sample, then the first batch */
    (void)FuzzDatasetRead(&ds, ierr);
  }
  return 0;
}
