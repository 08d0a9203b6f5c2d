/*
  Dataset: augmentation of image samples in the training batches.

  A sample of shape (h, w, c), channels last, stored [h][w][c], may be flipped left-right and translated by (dy, dx)
  pixels, |dy|, |dx| <= S (-dataset_augment_shift S), in that order:

    out[y][x][k] = in[y - dy][x' ][k],  x' = flip ? w - 1 - (x - dx) : x - dx,   when 0 <= y - dy < h and 0 <= x - dx < w
                 = fill                 otherwise (the normalised value of a raw 0, -mean/std: 0 by default)

  so a positive dy moves the picture down and a positive dx moves it right. Each draw is a function of
  (seed, epoch, global sample number) alone, through a counter-based hash (splitmix64's finaliser, three times): no
  generator state is carried from sample to sample, so a sample gets the same transform whatever the number of ranks
  or threads, the batch size or its place in the batch, and batches on 1, 2 or 4 ranks agree bit for bit. Only
  DatasetGetBatch() applies it (the mini-batches of training); DatasetGetAll(), through which the Trainer evaluates,
  gives the stored samples unchanged.
*/
#include <petnet/private/datasetimpl.h>

/* splitmix64's output function (Steele, Lea, Flood 2014): a bijection of 64-bit words that mixes every input bit */
static inline uint64_t DatasetMix64(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The transform of global sample 'sample' in epoch 'epoch': bits 0..19 give dy, bits 20..39 dx, bit 63 the flip */
static void DatasetDrawTransform(Dataset ds, PetscInt epoch, PetscInt sample, PetscInt *dy, PetscInt *dx, PetscBool *flip)
{
  const uint64_t h = DatasetMix64(DatasetMix64(DatasetMix64((uint64_t)ds->seed) ^ (uint64_t)epoch) ^ (uint64_t)sample);
  const uint64_t n = 2 * (uint64_t)ds->augshift + 1;

  *dy   = (PetscInt)((h & 0xfffff) % n) - ds->augshift;
  *dx   = (PetscInt)(((h >> 20) & 0xfffff) % n) - ds->augshift;
  *flip = ds->augflip && (h >> 63) ? PETSC_TRUE : PETSC_FALSE;
}

/* out [h][w][c] = the transform of in [h][w][c] (see the top of the file); in and out do not overlap */
static void DatasetTransformImage(PetscInt h, PetscInt w, PetscInt c, PetscInt dy, PetscInt dx, PetscBool flip, PetscScalar fill, const PetscScalar *in, PetscScalar *out)
{
  for (PetscInt y = 0; y < h; y++) {
    const PetscInt sy  = y - dy;
    PetscScalar   *row = out + y * w * c;

    if (sy < 0 || sy >= h) {
      for (PetscInt j = 0; j < w * c; j++) row[j] = fill;
      continue;
    }
    for (PetscInt x = 0; x < w; x++) {
      const PetscInt sx = x - dx;

      if (sx < 0 || sx >= w)
        for (PetscInt k = 0; k < c; k++) row[x * c + k] = fill;
      else {
        const PetscScalar *src = in + (sy * w + (flip ? w - 1 - sx : sx)) * c;

        for (PetscInt k = 0; k < c; k++) row[x * c + k] = src[k];
      }
    }
  }
}

/* One sample of batch assembly: out = the augmented copy of in, sample being its global number (file order) */
void DatasetAugmentSample_Private(Dataset ds, PetscInt sample, const PetscScalar *in, PetscScalar *out)
{
  PetscInt  dy, dx;
  PetscBool flip;

  DatasetDrawTransform(ds, ds->epoch, sample, &dy, &dx, &flip);
  if (!dy && !dx && !flip)
    memcpy(out, in, (size_t)ds->F * sizeof(PetscScalar));
  else
    DatasetTransformImage(ds->shape.dim[0], ds->shape.dim[1], ds->shape.dim[2], dy, dx, flip, (PetscScalar)(-ds->mean / ds->std), in, out);
}

/* Refuses augmentation of samples that are not images (h, w, c), or a shift that leaves nothing of the image; collective */
PetscErrorCode DatasetCheckAugmentation_Private(Dataset ds)
{
  const char *prefix = ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "";
  char        shape[64];

  PetscFunctionBegin;
  if (!DatasetIsAugmented_Private(ds)) PetscFunctionReturn(0);
  PetscCall(PetNetShapeToString(&ds->shape, sizeof(shape), shape));
  PetscCheck(ds->shape.ndim == 3, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_INCOMP,
             "-%sdataset_augment_shift and -%sdataset_augment_flip transform images of shape h x w x c (channels last), but the samples of %s have shape %s: give the image shape with -%sdataset_sample_shape (e.g. 28x28x1 for 784 pixels), or drop "
             "the augmentation",
             prefix, prefix, ds->xsource ? ds->xsource : "this Dataset", shape, prefix);
  PetscCheck(ds->augshift < PetscMin(ds->shape.dim[0], ds->shape.dim[1]), PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE,
             "-%sdataset_augment_shift %" PetscInt_FMT " can move the %s images out of the frame: give a shift below the image side (a few pixels, e.g. 2 for 28x28)", prefix, ds->augshift, shape);
  PetscFunctionReturn(0);
}

PetscBool DatasetIsAugmented_Private(Dataset ds)
{
  return ds->augshift > 0 || ds->augflip ? PETSC_TRUE : PETSC_FALSE;
}

/*@
  DatasetSetAugmentation - sets the random transforms applied to image samples in the mini-batches

  Logically collective on ds

  Input Parameters:
+ ds    - the Dataset (the training set)
. shift - translations by up to shift pixels in each direction, the uncovered pixels filled with the normalised value of a raw 0 (0: none)
- flip  - PETSC_TRUE: a left-right flip of every other sample on average

  Options Database Keys:
+ -dataset_augment_shift <shift> - the largest translation in pixels (with a Trainer: -train_dataset_augment_shift)
- -dataset_augment_flip          - random horizontal flips (-train_dataset_augment_flip)

  Notes:
  The samples must be images of shape h x w x c (channels last), the shift below h and w; DatasetGetBatch() refuses
  anything else. Sample s of epoch e is flipped (then translated by (dy, dx)) as drawn by a counter-based hash of
  (seed, e, s), the seed that of the shuffle (DatasetSetSeed()): the same sample gets the same transform whatever
  the number of ranks and threads and the batch size, and batches agree bit for bit on any number of ranks. Only
  DatasetGetBatch() transforms; DatasetGetAll(), which evaluation uses, gives the samples as stored, so a test set
  is never augmented by the Trainer.

  Level: intermediate

.seealso: `DatasetGetAugmentation()`, `DatasetGetSampleTransform()`, `DatasetGetBatch()`, `DatasetSetSeed()`
@*/
PetscErrorCode DatasetSetAugmentation(Dataset ds, PetscInt shift, PetscBool flip)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, shift, 2);
  PetscValidLogicalCollectiveBool(ds, flip, 3);
  PetscCheck(shift >= 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_OUTOFRANGE, "The augmentation shift (-%sdataset_augment_shift) is a number of pixels >= 0, not %" PetscInt_FMT, ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "",
             shift);
  ds->augshift   = shift;
  ds->augflip    = flip;
  ds->epochready = PETSC_FALSE; /* the next batch checks the shape again */
  PetscFunctionReturn(0);
}

/*@
  DatasetGetAugmentation - gets the random transforms applied to image samples in the mini-batches

  Not collective

  Input Parameter:
. ds - the Dataset

  Output Parameters:
+ shift - the largest translation in pixels (0: none) (may be NULL)
- flip  - whether samples are flipped left-right at random (may be NULL)

  Level: intermediate

.seealso: `DatasetSetAugmentation()`, `DatasetGetSampleTransform()`
@*/
PetscErrorCode DatasetGetAugmentation(Dataset ds, PetscInt *shift, PetscBool *flip)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  if (shift) *shift = ds->augshift;
  if (flip) *flip = ds->augflip;
  PetscFunctionReturn(0);
}

/*@
  DatasetGetSampleTransform - gets the transform that augmentation applies to one sample in one epoch

  Not collective

  Input Parameters:
+ ds     - the Dataset
. epoch  - the epoch
- sample - the global sample number (file order, as DatasetGetBatchIndices() gives)

  Output Parameters:
+ dy   - the translation down, in pixels (negative: up)
. dx   - the translation right, in pixels (negative: left)
- flip - whether the sample is flipped left-right before the translation

  Notes:
  A pure function of (seed, epoch, sample) and the settings of DatasetSetAugmentation(): out[y][x] =
  in[y - dy][flip ? w - 1 - (x - dx) : x - dx], the pixels whose source lies outside the image filled with the
  normalised value of a raw 0. Without augmentation the transform is the identity (0, 0, PETSC_FALSE).

  Level: advanced

.seealso: `DatasetSetAugmentation()`, `DatasetGetBatch()`
@*/
PetscErrorCode DatasetGetSampleTransform(Dataset ds, PetscInt epoch, PetscInt sample, PetscInt *dy, PetscInt *dx, PetscBool *flip)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidIntPointer(dy, 4);
  PetscValidIntPointer(dx, 5);
  PetscValidBoolPointer(flip, 6);
  DatasetDrawTransform(ds, epoch, sample, dy, dx, flip);
  PetscFunctionReturn(0);
}
