/*
  The strided transpose of a batch, shared by the tensor-shape kinds (permute, einsum): n samples, each a row-major
  tensor of r <= PETNET_MAX_DIM dims idims[0..r-1] (the last fastest), into the tensor whose dim d is input dim perm[d]:

    x  [n][idims[0]]...[idims[r-1]]
    y  [n][idims[perm[0]]]...[idims[perm[r-1]]]      y[s][i_0..i_{r-1}] = x[s][j] with j[perm[d]] = i_d

  acc: y = P x (PETSC_FALSE) or y += P x (PETSC_TRUE). Blocked for the cache: the output's last dim and the output dim
  that is the input's last (contiguous in x) are walked in tiles of PERMUTE_TILE x PERMUTE_TILE, so that both the reads
  and the writes of a tile stay in cache; the rows of tiles (every other index, the sample included) are cut into parts
  that depend on the sizes only and run on PetNet's threads. Each output entry is written once by one thread (added once
  with acc), so the result is the same bits for any number of threads. Double and float (permutekernels.h); they call
  no PETSc function (safe inside a parallel region of the caller) and allocate nothing.
*/
#pragma once

#include <petnet/private/layerimpl.h>

#define PERMUTE_TILE 32

/* n, r, idims, perm, acc, x, y */
PETSC_INTERN void LayerPermuteApply(PetscInt, PetscInt, const PetscInt[], const PetscInt[], PetscBool, const PetscScalar *, PetscScalar *);
PETSC_INTERN void LayerPermuteApplySingle(PetscInt, PetscInt, const PetscInt[], const PetscInt[], PetscBool, const float *, float *);

/* whether perm[0..r) is the identity (the permutation moves nothing: the caller copies, or reads x itself) */
static inline PetscBool LayerPermuteIsIdentity(PetscInt r, const PetscInt perm[])
{
  for (PetscInt d = 0; d < r; d++)
    if (perm[d] != d) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* the layer in messages: its node's name in a graph, else its kind and place in its owner's list, with the entry's
   text (kind:args) and the option that sets the same (-<prefix><kind>_<what>) */
static inline PetscErrorCode LayerShapeKindDescription(Layer layer, const char args[], const char what[], size_t len, char desc[])
{
  const char *kind = ((PetscObject)layer)->type_name, *prefix = ((PetscObject)layer)->prefix ? ((PetscObject)layer)->prefix : "";
  char        node[256];

  PetscFunctionBegin;
  if (((PetscObject)layer)->name) PetscCall(LayerGetNodeDescription_Private(layer, sizeof(node), node));
  else if (layer->index >= 0) PetscCall(PetscSNPrintf(node, sizeof(node), "%s layer %" PetscInt_FMT " of -net_layers", kind, layer->index));
  else PetscCall(PetscSNPrintf(node, sizeof(node), "%s layer", kind));
  PetscCall(PetscSNPrintf(desc, len, "%s, entry \"%s:%s\" (option -%s%s_%s)", node, kind, args, prefix, kind, what));
  PetscFunctionReturn(0);
}
