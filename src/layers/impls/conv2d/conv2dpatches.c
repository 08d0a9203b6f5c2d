/*
  conv2d's receptive fields as a public operation: what the weights of each group multiply in batch mode,

    col [n Ho Wo][G][KH][KW][Cg]     row p = sample s, output pixel (oh, ow): the patch of x it reads (zero in padding)
    y[s][oh][ow][g Cout/G + o] = b[g Cout/G + o] + sum_j W[g Cout/G + o][j] col[p][g][j]    j over KH KW Cg = Kg

  so that the weights of group g, W_g [Cout/G][Kg] (rows of W, as stored), act on the Kg-vectors col[p][g] exactly as a
  dense layer's weights act on its input. A curvature approximation that works on a layer's inputs (the K-FAC
  factors of src/optim, after Grosse and Martens's KFC) reads convolutions through this. The method is the
  convolution base's (../conv/conv.c, LayerConvGetPatches_Conv()), shared with conv3d's LayerConv3dGetPatches().
*/
#include "conv2d.h"

/*@
  LayerConv2dGetPatchLayout - the shape of the patches a conv2d layer's weights multiply (LayerConv2dGetPatches())

  Not collective

  Input Parameter:
. layer - a conv2d layer, set up

  Output Parameters:
+ groups - the number of groups G (may be NULL)
. kg     - the patch length of a group, KH KW Cin/G: each group's weights are Cout/G rows of kg entries (may be NULL)
. pixels - the output pixels of a sample, Ho Wo (1 in grid mode, where a sample is a grid point) (may be NULL)
- bias   - whether the layer adds a bias per output channel, stored after the weights (may be NULL)

  Notes:
  The layer's parameters are W [Cout][KH][KW][Cin/G] followed by b [Cout] when bias is set. The rows of W of group g
  are g Cout/G .. (g + 1) Cout/G - 1.

  Level: developer

.seealso: `LayerConv2dGetPatches()`, `LayerConv2dSetGroups()`, `LayerConv2dSetBias()`
@*/
PetscErrorCode LayerConv2dGetPatchLayout(Layer layer, PetscInt *groups, PetscInt *kg, PetscInt *pixels, PetscBool *bias)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscUseMethod(layer, "LayerConv2dGetPatchLayout_C", (Layer, PetscInt *, PetscInt *, PetscInt *, PetscBool *), (layer, groups, kg, pixels, bias));
  PetscFunctionReturn(0);
}

/*@C
  LayerConv2dGetPatches - the receptive fields (im2col) of a batch for a conv2d layer in batch mode: for every sample and
  output pixel, the entries of the input that each group's weights multiply

  Not collective

  Input Parameters:
+ layer - a conv2d layer, set up, in batch mode
. n     - the number of samples
- x     - the input, [n][H][W][Cin]

  Output Parameter:
. col - [n Ho Wo][G][KH][KW][Cin/G], n Ho Wo G kg entries (LayerConv2dGetPatchLayout()), overwritten; taps in the
        padding are zero

  Notes:
  With W_g the weights of group g as a (Cout/G) x kg row-major matrix and col_g[p] the kg entries of group g of row p,
  the output at pixel p is y[p][g Cout/G + o] = b[g Cout/G + o] + (W_g col_g[p])[o]. A convolution is a dense layer
  applied at every pixel to these patches; curvature approximations such as K-FAC use them this way. Grid mode (a
  DMDA) is refused.

  Level: developer

.seealso: `LayerConv2dGetPatchLayout()`, `LayerForwardArray()`
@*/
PetscErrorCode LayerConv2dGetPatches(Layer layer, PetscInt n, const PetscScalar x[], PetscScalar col[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The number of samples must be >= 0, not %" PetscInt_FMT, n);
  if (n) {
    PetscValidScalarPointer(x, 3);
    PetscValidScalarPointer(col, 4);
  }
  PetscUseMethod(layer, "LayerConv2dGetPatches_C", (Layer, PetscInt, const PetscScalar *, PetscScalar *), (layer, n, x, col));
  PetscFunctionReturn(0);
}
