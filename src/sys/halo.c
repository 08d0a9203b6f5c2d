/*
  Halo exchange for N-dimensional blocks as one linear operator (the generalisation of a DMDA's DMGlobalToLocal).

  A box of the tensor, per dim [lo[d], hi[d]) in global coordinates, is read from the canonical copy of a layout L
  into a local row-major array (last dim fastest); entries outside the tensor are 0 (zero padding). With G the box
  reader (see redistribute.c; rows: box entries, cols: L's local entries, at most one 1 per row):

     H   = G : y = H x   the box, copied from the owners (PetscSFBcast, MPI_REPLACE; padding zeroed)
     H^T     : x = H^T y every box entry added back into its owner (PetscSFReduce, MPI_SUM): the halos of all the
                         ranks' boxes accumulate into the owned entries, as DMLocalToGlobal with ADD_VALUES

  PetNetHaloCreate() reads this rank's block grown by lo[d] entries before and hi[d] after along dim d.
  PetNetHaloCreateConv() reads what this rank's block of a convolution's output needs from its input: along dim d,
  with kernel k, stride s and padding p, output index o reads inputs o*s - p ... o*s - p + k - 1, so the block
  [os, os + on) of the output reads [os*s - p, (os + on - 1)*s - p + k) of the input.
*/
#include <petnet/private/layoutimpl.h>

/*@
  PetNetHaloCreate - the operator H that gathers this rank's block of a layout grown by a halo, zero-padded outside
  the tensor

  Collective

  Input Parameters:
+ layout - the layout, set up
. lo     - lo[d] >= 0 entries added before the block along dim d (ndim entries)
- hi     - hi[d] >= 0 entries added after the block along dim d (ndim entries)

  Output Parameter:
. H - a MATSHELL with local columns the local size of the layout and local rows the box size,
      prod_d (size[d] + lo[d] + hi[d]) (0 on a rank whose block is empty)

  Notes:
  y = H x: the local part of y is the box [start[d] - lo[d], start[d] + size[d] + hi[d]) of the tensor, row-major
  (channels last), each entry copied from the canonical copy in the layout, and 0 where the box leaves the tensor.
  H^T (MatMultTranspose()) is the exact adjoint: every box entry is added back into the entry it was copied from.
  MatMultAdd() and MatMultTransposeAdd() are supported. Create the Vecs of the box with MatCreateVecs().

  Level: intermediate

.seealso: `PetNetHaloCreateConv()`, `PetNetRedistributeCreate()`, `PetNetLayoutGetBlock()`
@*/
PetscErrorCode PetNetHaloCreate(PetNetLayout layout, const PetscInt64 lo[], const PetscInt64 hi[], Mat *H)
{
  PetscInt64 blo[PETNET_LAYOUT_MAX_DIM], bhi[PETNET_LAYOUT_MAX_DIM];
  PetscSF    sf;
  PetscInt   n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscValidPointer(lo, 2);
  PetscValidPointer(hi, 3);
  PetscValidPointer(H, 4);
  PetscCall(PetNetLayoutCheckSetUp_Private(layout, "PetNetHaloCreate"));
  for (PetscInt d = 0; d < layout->ndim; d++)
    PetscCheck(lo[d] >= 0 && hi[d] >= 0, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetHaloCreate(): the halo of dim %" PetscInt_FMT " is lo %" PetscInt64_FMT ", hi %" PetscInt64_FMT ": give halo widths >= 0", d, lo[d],
               hi[d]);
  for (PetscInt d = 0; d < layout->ndim; d++) {
    blo[d] = layout->start[d] - lo[d];
    bhi[d] = layout->start[d] + layout->size[d] + hi[d];
    if (!layout->nlocal) bhi[d] = blo[d]; /* an empty block needs no halo */
  }
  PetscCall(PetNetLayoutCreateBoxSF_Private(layout, blo, bhi, &sf, &n));
  PetscCall(PetNetSFShellCreate_Private(sf, n, PETSC_FALSE, H));
  PetscFunctionReturn(0);
}

/*@
  PetNetHaloCreateConv - the operator H that gathers, for this rank's block of a convolution's output, the box of
  the input that the convolution reads

  Collective

  Input Parameters:
+ in     - the layout of the convolution's input, set up
. out    - the layout of its output, set up, on the same communicator and with the same number of dims
. kernel - the kernel extent per dim (ndim entries, >= 1; 1 for samples; 0 for a dim read whole, e.g. channels), or
           NULL for all 1
. stride - the stride per dim (>= 1), or NULL for all 1
- pad    - the zero padding per dim, added at both ends (>= 0), or NULL for all 0

  Output Parameter:
. H - a MATSHELL with local columns the local size of `in` and local rows the size of the box (0 on a rank whose
      block of `out` is empty)

  Notes:
  Along dim d the output has (in_d + 2 pad_d - kernel_d) / stride_d + 1 entries (rounded down; 0 when no window
  fits); `out` must have that extent. The block [os, os + on) of `out` reads the input box [os*stride - pad, (os + on - 1)*stride - pad +
  kernel), entries outside the input being 0. A dim with kernel 0 is read whole, whatever out's extent along it: the
  channels of a convolution (every output channel reads all input channels). Samples take kernel 1, stride 1, pad 0.
  The box is row-major, last dim fastest. H^T adds the box back into the input's owners, as in PetNetHaloCreate().

  Level: intermediate

.seealso: `PetNetHaloCreate()`, `PetNetRedistributeCreate()`
@*/
PetscErrorCode PetNetHaloCreateConv(PetNetLayout in, PetNetLayout out, const PetscInt kernel[], const PetscInt stride[], const PetscInt pad[], Mat *H)
{
  PetscInt64 blo[PETNET_LAYOUT_MAX_DIM], bhi[PETNET_LAYOUT_MAX_DIM];
  PetscSF    sf;
  PetscInt   n;
  MPI_Comm   comm;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(in, PETNETLAYOUT_CLASSID, 1);
  PetscValidHeaderSpecific(out, PETNETLAYOUT_CLASSID, 2);
  PetscValidPointer(H, 6);
  PetscCall(PetNetLayoutCheckPair_Private(in, out, "PetNetHaloCreateConv", "in", "out"));
  PetscCall(PetscObjectGetComm((PetscObject)in, &comm));
  for (PetscInt d = 0; d < in->ndim; d++) {
    const PetscInt k = kernel ? kernel[d] : 1, s = stride ? stride[d] : 1, p = pad ? pad[d] : 0;
    PetscInt64     expect;

    PetscCheck(k >= 0 && s >= 1 && p >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "PetNetHaloCreateConv(): dim %" PetscInt_FMT " has kernel %" PetscInt_FMT ", stride %" PetscInt_FMT ", padding %" PetscInt_FMT ": give kernel >= 1 (0: the dim read whole), stride >= 1 and padding >= 0", d, k, s, p);
    if (k == 0) {
      blo[d] = 0;
      bhi[d] = in->dims[d];
      continue;
    }
    expect = in->dims[d] + 2 * p >= k ? (in->dims[d] + 2 * p - k) / s + 1 : 0; /* no window fits: no output */
    PetscCheck(out->dims[d] == expect, comm, PETSC_ERR_ARG_INCOMP,
               "PetNetHaloCreateConv(): along dim %" PetscInt_FMT " a kernel of %" PetscInt_FMT " with stride %" PetscInt_FMT " and padding %" PetscInt_FMT " maps %" PetscInt64_FMT " input entries to %" PetscInt64_FMT
               ", but `out` has %" PetscInt64_FMT ": give `out` the extent %" PetscInt64_FMT,
               d, k, s, p, in->dims[d], expect, out->dims[d], expect);
    blo[d] = out->start[d] * s - p;
    bhi[d] = (out->start[d] + out->size[d] - 1) * s - p + k;
  }
  if (!out->nlocal)
    for (PetscInt d = 0; d < in->ndim; d++) bhi[d] = blo[d];
  PetscCall(PetNetLayoutCreateBoxSF_Private(in, blo, bhi, &sf, &n));
  PetscCall(PetNetSFShellCreate_Private(sf, n, PETSC_FALSE, H));
  PetscFunctionReturn(0);
}
