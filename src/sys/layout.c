/*
  PetNetLayout: a tensor of global shape dims[0..ndim-1] split in blocks over a Cartesian grid of ranks.

  Grid: gdims[0..ngrid-1], product = comm size; rank = ((c0*g1 + c1)*g2 + c2)... (row-major, last axis fastest).
  Tensor dim d is split along grid axis axis[d] (or not at all, axis[d] = -1) with ownership ranges
      offset[d][c] <= i < offset[d][c+1]     for the ranks with coordinate c along axis[d].
  A grid axis splitting no dim replicates: the ranks along it hold the same block; the copy at coordinate 0 along
  every replication axis is canonical. Because each axis splits at most one dim, every combination of per-dim blocks
  is some rank's block, and the largest block is the product of the largest ranges per dim.

  A rank's local array is its block, row-major (last dim fastest): the entry with global index (i0, ..., i_{n-1}) sits
  at ((l0*n1 + l1)*n2 + l2)... with l_d = i_d - start[d], n_d = size[d]. Offsets are formed in 64-bit arithmetic.
*/
#include <petnet/private/layoutimpl.h>

/*@
  PetNetLayoutCreate - creates a tensor layout, with no shape yet and a 1-D grid of all the ranks of comm

  Collective

  Input Parameter:
. comm - the communicator the tensors live on

  Output Parameter:
. layout - the new layout

  Notes:
  Give the shape (PetNetLayoutSetShape()), optionally a grid (PetNetLayoutSetGrid()) and the splits of the dims
  (PetNetLayoutSetSplit()), then call PetNetLayoutSetUp(). A dim that is never split is held whole by every rank;
  a layout with no split at all is replicated on every rank.

  Level: beginner

.seealso: `PetNetLayoutSetShape()`, `PetNetLayoutSetGrid()`, `PetNetLayoutSetSplit()`, `PetNetLayoutSetUp()`,
          `PetNetLayoutDestroy()`, `PetNetLayoutCreateSampleSplit()`
@*/
PetscErrorCode PetNetLayoutCreate(MPI_Comm comm, PetNetLayout *layout)
{
  PetNetLayout L;
  PetscMPIInt  size;

  PetscFunctionBegin;
  PetscValidPointer(layout, 2);
  PetscCall(PetNetSysInitializePackage());
  PetscCall(PetscHeaderCreate(L, PETNETLAYOUT_CLASSID, "PetNetLayout", "Tensor layout", "PetNetLayout", comm, PetNetLayoutDestroy, PetNetLayoutView));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  L->ngrid    = 1;
  L->gdims[0] = size;
  for (PetscInt d = 0; d < PETNET_LAYOUT_MAX_DIM; d++) L->axis[d] = -1;
  *layout = L;
  PetscFunctionReturn(0);
}

static PetscErrorCode PetNetLayoutCheckNotSetUp(PetNetLayout L, const char caller[])
{
  PetscFunctionBegin;
  PetscCheck(!L->setupcalled, PetscObjectComm((PetscObject)L), PETSC_ERR_ARG_WRONGSTATE, "%s() after PetNetLayoutSetUp(): a layout is fixed once set up; create another layout", caller);
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetLayoutCheckSetUp_Private(PetNetLayout L, const char caller[])
{
  PetscFunctionBegin;
  PetscCheck(L->setupcalled, PetscObjectComm((PetscObject)L), PETSC_ERR_ARG_WRONGSTATE, "%s() needs a layout that is set up: call PetNetLayoutSetUp() first", caller);
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutSetShape - sets the global shape of the tensors of a layout

  Logically collective

  Input Parameters:
+ layout - the layout
. ndim   - the number of dims, 1 to `PETNET_LAYOUT_MAX_DIM` (5)
- dims   - the global extents, dims[0] the samples, channels (or features) last; each >= 0

  Notes:
  Splits already given for dims beyond the new ndim are forgotten.

  Level: beginner

.seealso: `PetNetLayoutCreate()`, `PetNetLayoutSetSplit()`, `PetNetLayoutSetUp()`
@*/
PetscErrorCode PetNetLayoutSetShape(PetNetLayout layout, PetscInt ndim, const PetscInt64 dims[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscCall(PetNetLayoutCheckNotSetUp(layout, "PetNetLayoutSetShape"));
  PetscCheck(ndim >= 1 && ndim <= PETNET_LAYOUT_MAX_DIM, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutSetShape(): ndim %" PetscInt_FMT " is out of range: a tensor has 1 to %d dims", ndim, PETNET_LAYOUT_MAX_DIM);
  PetscValidPointer(dims, 3);
  for (PetscInt d = 0; d < ndim; d++) PetscCheck(dims[d] >= 0, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutSetShape(): dim %" PetscInt_FMT " has extent %" PetscInt64_FMT ": give extents >= 0", d, dims[d]);
  for (PetscInt d = ndim; d < PETNET_LAYOUT_MAX_DIM; d++) {
    PetscCall(PetscFree(layout->usersizes[d]));
    layout->splitset[d] = PETSC_FALSE;
    layout->axis[d]     = -1;
  }
  layout->ndim = ndim;
  for (PetscInt d = 0; d < ndim; d++) layout->dims[d] = dims[d];
  PetscFunctionReturn(0);
}

static PetscErrorCode GridToString(PetscInt ngrid, const PetscMPIInt gdims[], size_t len, char str[])
{
  size_t n = 0;

  PetscFunctionBegin;
  str[0] = 0;
  for (PetscInt a = 0; a < ngrid; a++) {
    PetscCall(PetscSNPrintf(str + n, len - n, a ? "x%d" : "%d", gdims[a]));
    PetscCall(PetscStrlen(str, &n));
  }
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutSetGrid - sets the Cartesian grid of ranks the tensor is split over

  Logically collective

  Input Parameters:
+ layout - the layout
. ngrid  - the number of grid axes, 1 to `PETNET_LAYOUT_MAX_GRID` (6)
- gdims  - the number of ranks along each axis (>= 1); their product must be the communicator's size

  Notes:
  The default is a 1-D grid of all the ranks. Rank r has the grid coordinates of r read as a row-major index,
  r = ((c0*g1 + c1)*g2 + c2)... A grid axis along which no tensor dim is split replicates the blocks.
  Call it before PetNetLayoutSetSplit() (the ownership sizes given there are one per rank along an axis).

  Level: beginner

.seealso: `PetNetLayoutCreate()`, `PetNetLayoutSetSplit()`, `PetNetLayoutSetUp()`
@*/
PetscErrorCode PetNetLayoutSetGrid(PetNetLayout layout, PetscInt ngrid, const PetscMPIInt gdims[])
{
  PetscMPIInt size;
  PetscReal   prod = 1;
  char        str[128];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscCall(PetNetLayoutCheckNotSetUp(layout, "PetNetLayoutSetGrid"));
  PetscCheck(ngrid >= 1 && ngrid <= PETNET_LAYOUT_MAX_GRID, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutSetGrid(): ngrid %" PetscInt_FMT " is out of range: a grid has 1 to %d axes", ngrid, PETNET_LAYOUT_MAX_GRID);
  PetscValidPointer(gdims, 3);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)layout), &size));
  for (PetscInt a = 0; a < ngrid; a++) {
    PetscCheck(gdims[a] >= 1, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutSetGrid(): grid axis %" PetscInt_FMT " has %d ranks: give at least 1 rank along every axis", a, gdims[a]);
    prod *= gdims[a];
  }
  PetscCall(GridToString(ngrid, gdims, sizeof(str), str));
  PetscCheck(prod == (PetscReal)size, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_INCOMP, "PetNetLayoutSetGrid(): the grid %s has %.0f ranks but the communicator has %d: give grid dims whose product is %d", str, (double)prod, size, size);
  layout->ngrid = ngrid;
  for (PetscInt a = 0; a < ngrid; a++) layout->gdims[a] = gdims[a];
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutSetSplit - splits one tensor dim along one grid axis

  Logically collective

  Input Parameters:
+ layout - the layout
. dim    - the tensor dim, 0 <= dim < ndim
. axis   - the grid axis, 0 <= axis < ngrid; -1 leaves the dim whole (not split)
- sizes  - the ownership sizes, one per grid coordinate along axis (gdims[axis] entries, each >= 0, summing to
           dims[dim]), or NULL for a split as even as possible (the first coordinates get the extra ones, as
           `PETSC_DECIDE` does)

  Notes:
  Call it after PetNetLayoutSetShape() and PetNetLayoutSetGrid(). A dim split twice keeps the last split. Each grid
  axis splits at most one dim; PetNetLayoutSetUp() checks that and the sums. Empty blocks (size 0) are allowed.

  Level: beginner

.seealso: `PetNetLayoutSetShape()`, `PetNetLayoutSetGrid()`, `PetNetLayoutSetUp()`
@*/
PetscErrorCode PetNetLayoutSetSplit(PetNetLayout layout, PetscInt dim, PetscInt axis, const PetscInt64 sizes[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscCall(PetNetLayoutCheckNotSetUp(layout, "PetNetLayoutSetSplit"));
  PetscCheck(layout->ndim > 0, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_WRONGSTATE, "PetNetLayoutSetSplit() before the shape is known: call PetNetLayoutSetShape() first");
  PetscCheck(dim >= 0 && dim < layout->ndim, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutSetSplit(): dim %" PetscInt_FMT " does not exist: the tensor has dims 0 to %" PetscInt_FMT, dim, layout->ndim - 1);
  PetscCheck(axis >= -1 && axis < layout->ngrid, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE,
             "PetNetLayoutSetSplit(): grid axis %" PetscInt_FMT " does not exist: the grid has axes 0 to %" PetscInt_FMT " (set it with PetNetLayoutSetGrid() first), or give -1 for a dim not split", axis, layout->ngrid - 1);
  PetscCall(PetscFree(layout->usersizes[dim]));
  layout->axis[dim]     = axis;
  layout->splitset[dim] = (PetscBool)(axis >= 0);
  if (axis >= 0 && sizes) {
    for (PetscMPIInt c = 0; c < layout->gdims[axis]; c++)
      PetscCheck(sizes[c] >= 0, PetscObjectComm((PetscObject)layout), PETSC_ERR_ARG_OUTOFRANGE,
                 "PetNetLayoutSetSplit(): the ownership size of dim %" PetscInt_FMT " at coordinate %d of grid axis %" PetscInt_FMT " is %" PetscInt64_FMT ": give sizes >= 0", dim, c, axis, sizes[c]);
    PetscCall(PetscMalloc1(layout->gdims[axis] + 1, &layout->usersizes[dim]));
    layout->usersizes[dim][0] = layout->gdims[axis]; /* how many follow: the grid may change before PetNetLayoutSetUp() */
    PetscCall(PetscArraycpy(layout->usersizes[dim] + 1, sizes, layout->gdims[axis]));
  }
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutSetUp - checks the layout and computes the ownership ranges and this rank's block

  Collective

  Input Parameter:
. layout - the layout

  Notes:
  Idempotent. Everything is checked before anything is allocated, each error saying what to write instead: a shape
  is given, each split names an existing grid axis, no grid axis splits two dims, the ownership sizes along an axis
  are one per rank of the axis and sum to the dim's extent, and every rank's block (the largest one included) and
  the Vec of all blocks fit a `PetscInt`.

  Level: beginner

.seealso: `PetNetLayoutCreate()`, `PetNetLayoutSetShape()`, `PetNetLayoutSetGrid()`, `PetNetLayoutSetSplit()`,
          `PetNetLayoutGetBlock()`
@*/
PetscErrorCode PetNetLayoutSetUp(PetNetLayout layout)
{
  MPI_Comm    comm;
  PetscMPIInt rank, size, r;
  PetscInt    splitter[PETNET_LAYOUT_MAX_GRID];
  PetscReal   maxblock = 1, total = 1;
  PetscInt64  nlocal = 1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  if (layout->setupcalled) PetscFunctionReturn(0);
  PetscCall(PetscObjectGetComm((PetscObject)layout, &comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCheck(layout->ndim > 0, comm, PETSC_ERR_ARG_WRONGSTATE, "PetNetLayoutSetUp() before the shape is known: call PetNetLayoutSetShape() first");

  /* the checks, all before any allocation */
  for (PetscInt a = 0; a < layout->ngrid; a++) splitter[a] = -1;
  for (PetscInt d = 0; d < layout->ndim; d++) {
    PetscInt   a = layout->axis[d];
    PetscInt64 sum;

    if (a < 0) continue;
    PetscCheck(a < layout->ngrid, comm, PETSC_ERR_ARG_INCOMP,
               "dim %" PetscInt_FMT " is split along grid axis %" PetscInt_FMT " but the grid has %" PetscInt_FMT " axes: split it along an axis 0 to %" PetscInt_FMT " or give a grid with more axes (PetNetLayoutSetGrid())", d, a, layout->ngrid,
               layout->ngrid - 1);
    PetscCheck(splitter[a] < 0, comm, PETSC_ERR_ARG_INCOMP,
               "grid axis %" PetscInt_FMT " splits both dim %" PetscInt_FMT " and dim %" PetscInt_FMT ": each grid axis splits at most one dim; split dim %" PetscInt_FMT
               " along another axis (give the grid one more axis with PetNetLayoutSetGrid()) or leave it whole",
               a, splitter[a], d, d);
    splitter[a] = d;
    if (!layout->usersizes[d]) continue;
    PetscCheck(layout->usersizes[d][0] == layout->gdims[a], comm, PETSC_ERR_ARG_INCOMP,
               "dim %" PetscInt_FMT " was given %" PetscInt64_FMT " ownership sizes but grid axis %" PetscInt_FMT " has %d ranks: give one size per rank along the axis (set the grid before the split)", d, layout->usersizes[d][0], a,
               layout->gdims[a]);
    sum = 0;
    for (PetscMPIInt c = 0; c < layout->gdims[a]; c++) sum += layout->usersizes[d][1 + c];
    PetscCheck(sum == layout->dims[d], comm, PETSC_ERR_ARG_INCOMP,
               "ownership sizes along grid axis %" PetscInt_FMT " sum to %" PetscInt64_FMT " but dim %" PetscInt_FMT " has %" PetscInt64_FMT " entries: give sizes summing to %" PetscInt64_FMT " (or NULL for an even split)", a, sum, d,
               layout->dims[d], layout->dims[d]);
  }
  for (PetscInt d = 0; d < layout->ndim; d++) {
    PetscInt64 big = layout->dims[d];
    PetscInt   a   = layout->axis[d];

    if (a >= 0 && layout->usersizes[d]) {
      big = 0;
      for (PetscMPIInt c = 0; c < layout->gdims[a]; c++) big = PetscMax(big, layout->usersizes[d][1 + c]);
    } else if (a >= 0)
      big = (layout->dims[d] + layout->gdims[a] - 1) / layout->gdims[a];
    maxblock *= (PetscReal)big;
    total *= (PetscReal)layout->dims[d];
  }
  for (PetscInt a = 0; a < layout->ngrid; a++)
    if (splitter[a] < 0) total *= layout->gdims[a];
  PetscCheck(maxblock <= (PetscReal)PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "the largest block of this layout has %.0f entries, more than a PetscInt holds (%" PetscInt_FMT "): split the tensor over more ranks, or use a PETSc configured --with-64-bit-indices", (double)maxblock, (PetscInt)PETSC_MAX_INT);
  PetscCheck(total <= (PetscReal)PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "the blocks of this layout (replicas included) have %.0f entries in all, more than a PetscInt holds (%" PetscInt_FMT ") for the Vec's global size: replicate less, or use a PETSc configured --with-64-bit-indices", (double)total,
             (PetscInt)PETSC_MAX_INT);

  /* grid coordinates of this rank, row-major */
  r = rank;
  for (PetscInt a = layout->ngrid - 1; a >= 0; a--) {
    layout->coord[a] = r % layout->gdims[a];
    r /= layout->gdims[a];
  }
  layout->canonical = PETSC_TRUE;
  for (PetscInt a = 0; a < layout->ngrid; a++)
    if (splitter[a] < 0 && layout->coord[a] != 0) layout->canonical = PETSC_FALSE;

  /* ownership ranges */
  for (PetscInt d = 0; d < layout->ndim; d++) {
    PetscInt    a = layout->axis[d];
    PetscMPIInt g = a >= 0 ? layout->gdims[a] : 1;

    PetscCall(PetscFree(layout->offset[d]));
    PetscCall(PetscMalloc1(g + 1, &layout->offset[d]));
    layout->offset[d][0] = 0;
    for (PetscMPIInt c = 0; c < g; c++) {
      PetscInt64 n;

      if (a < 0)
        n = layout->dims[d];
      else if (layout->usersizes[d])
        n = layout->usersizes[d][1 + c];
      else
        n = layout->dims[d] / g + (c < layout->dims[d] % g ? 1 : 0);
      layout->offset[d][c + 1] = layout->offset[d][c] + n;
    }
    r                = a >= 0 ? layout->coord[a] : 0;
    layout->start[d] = layout->offset[d][r];
    layout->size[d]  = layout->offset[d][r + 1] - layout->offset[d][r];
    nlocal *= layout->size[d];
  }
  layout->nlocal      = (PetscInt)nlocal;
  layout->setupcalled = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutGetLocalSize - the number of entries of this rank's block

  Not collective

  Input Parameter:
. layout - the layout, set up

  Output Parameter:
. n - the local size of a Vec in this layout (the product of the block's sizes)

  Level: beginner

.seealso: `PetNetLayoutGetBlock()`, `PetNetLayoutCreateVec()`
@*/
PetscErrorCode PetNetLayoutGetLocalSize(PetNetLayout layout, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscValidIntPointer(n, 2);
  PetscCall(PetNetLayoutCheckSetUp_Private(layout, "PetNetLayoutGetLocalSize"));
  *n = layout->nlocal;
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutGetBlock - this rank's block: its first global index and extent along each tensor dim

  Not collective

  Input Parameter:
. layout - the layout, set up

  Output Parameters:
+ start - start[d] is the global index of the block's first entry along dim d (ndim entries; NULL if not needed)
- size  - size[d] is the block's extent along dim d (ndim entries; NULL if not needed)

  Notes:
  The local part of a Vec in the layout holds the block row-major: the entry (i0, ..., i_{n-1}) is at
  ((i0 - start[0])*size[1] + (i1 - start[1]))*size[2] + ...

  Level: beginner

.seealso: `PetNetLayoutGetLocalSize()`, `PetNetLayoutSetSplit()`
@*/
PetscErrorCode PetNetLayoutGetBlock(PetNetLayout layout, PetscInt64 start[], PetscInt64 size[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscCall(PetNetLayoutCheckSetUp_Private(layout, "PetNetLayoutGetBlock"));
  for (PetscInt d = 0; d < layout->ndim; d++) {
    if (start) start[d] = layout->start[d];
    if (size) size[d] = layout->size[d];
  }
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutCreateVec - creates a Vec in the layout: its local part is this rank's block

  Collective

  Input Parameter:
. layout - the layout, set up

  Output Parameter:
. v - the new Vec (global size: the sum of the blocks of all ranks, replicas included)

  Level: beginner

.seealso: `PetNetLayoutGetLocalSize()`, `PetNetRedistributeCreate()`
@*/
PetscErrorCode PetNetLayoutCreateVec(PetNetLayout layout, Vec *v)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscValidPointer(v, 2);
  PetscCall(PetNetLayoutCheckSetUp_Private(layout, "PetNetLayoutCreateVec"));
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)layout), layout->nlocal, PETSC_DETERMINE, v));
  PetscFunctionReturn(0);
}

/* appends to str (of size len) */
static PetscErrorCode Append(char str[], size_t len, const char fmt[], ...)
{
  size_t  n;
  va_list ap;

  PetscFunctionBegin;
  PetscCall(PetscStrlen(str, &n));
  va_start(ap, fmt);
  PetscCall(PetscVSNPrintf(str + n, len - n, fmt, NULL, ap));
  va_end(ap);
  PetscFunctionReturn(0);
}

/*@C
  PetNetLayoutView - prints a layout: the shape, the grid, how each dim is split, and each rank's block

  Collective

  Input Parameters:
+ layout - the layout
- viewer - an ASCII viewer, or NULL for `PETSC_VIEWER_STDOUT_` of the layout's communicator

  Notes:
  The blocks are printed in rank order (a synchronized print), one line a rank with its grid coordinates.

  Level: beginner

.seealso: `PetNetLayoutCreate()`, `PetNetLayoutSetUp()`
@*/
PetscErrorCode PetNetLayoutView(PetNetLayout layout, PetscViewer viewer)
{
  PetscBool   ascii;
  PetscMPIInt rank, size;
  char        str[128], line[512];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)layout), &viewer));
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)layout), &rank));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)layout), &size));
  /* each line is formed in line[] and printed at once: PetscViewerASCIIPrintf() indents every call */
  PetscCall(PetscViewerASCIIPrintf(viewer, "PetNetLayout Object:%s%s %d MPI process%s\n", ((PetscObject)layout)->name ? " " : "", ((PetscObject)layout)->name ? ((PetscObject)layout)->name : "", size, size > 1 ? "es" : ""));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscStrcpy(line, "shape "));
  for (PetscInt d = 0; d < layout->ndim; d++) PetscCall(Append(line, sizeof(line), "%s%" PetscInt64_FMT, d ? "x" : "", layout->dims[d]));
  PetscCall(GridToString(layout->ngrid, layout->gdims, sizeof(str), str));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s, grid %s\n", line, str));
  for (PetscInt d = 0; d < layout->ndim; d++) {
    if (layout->axis[d] < 0) continue;
    PetscCall(PetscSNPrintf(line, sizeof(line), "dim %" PetscInt_FMT " split along grid axis %" PetscInt_FMT, d, layout->axis[d]));
    if (layout->setupcalled) {
      PetscCall(Append(line, sizeof(line), ", sizes "));
      for (PetscMPIInt c = 0; c < layout->gdims[layout->axis[d]]; c++) PetscCall(Append(line, sizeof(line), "%s%" PetscInt64_FMT, c ? "," : "", layout->offset[d][c + 1] - layout->offset[d][c]));
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s\n", line));
  }
  for (PetscInt a = 0; a < layout->ngrid; a++) {
    PetscBool split = PETSC_FALSE;

    for (PetscInt d = 0; d < layout->ndim; d++)
      if (layout->axis[d] == a) split = PETSC_TRUE;
    if (!split && layout->gdims[a] > 1) PetscCall(PetscViewerASCIIPrintf(viewer, "grid axis %" PetscInt_FMT " replicates (%d copies)\n", a, layout->gdims[a]));
  }
  if (layout->setupcalled) {
    PetscCall(PetscSNPrintf(line, sizeof(line), "[%d] coords (", rank));
    for (PetscInt a = 0; a < layout->ngrid; a++) PetscCall(Append(line, sizeof(line), "%s%d", a ? "," : "", layout->coord[a]));
    PetscCall(Append(line, sizeof(line), ") block "));
    for (PetscInt d = 0; d < layout->ndim; d++) PetscCall(Append(line, sizeof(line), "%s[%" PetscInt64_FMT ",%" PetscInt64_FMT ")", d ? " x " : "", layout->start[d], layout->start[d] + layout->size[d]));
    PetscCall(Append(line, sizeof(line), ", %" PetscInt_FMT " entries%s", layout->nlocal, layout->canonical ? "" : " (replica)"));
    PetscCall(PetscViewerASCIIPushSynchronized(viewer));
    PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "%s\n", line));
    PetscCall(PetscViewerFlush(viewer));
    PetscCall(PetscViewerASCIIPopSynchronized(viewer));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutDestroy - destroys a layout

  Collective

  Input Parameter:
. layout - the layout (set to NULL)

  Level: beginner

.seealso: `PetNetLayoutCreate()`
@*/
PetscErrorCode PetNetLayoutDestroy(PetNetLayout *layout)
{
  PetscFunctionBegin;
  if (!*layout) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*layout, PETNETLAYOUT_CLASSID, 1);
  if (--((PetscObject)(*layout))->refct > 0) {
    *layout = NULL;
    PetscFunctionReturn(0);
  }
  for (PetscInt d = 0; d < PETNET_LAYOUT_MAX_DIM; d++) {
    PetscCall(PetscFree((*layout)->usersizes[d]));
    PetscCall(PetscFree((*layout)->offset[d]));
  }
  PetscCall(PetscHeaderDestroy(layout));
  PetscFunctionReturn(0);
}

/*@
  PetNetLayoutCreateSampleSplit - the layout of a batch split by samples: dim 0 over a 1-D grid of all the ranks,
  each rank holding its nlocal samples whole

  Collective

  Input Parameters:
+ comm   - the communicator
. ndim   - the number of dims, samples included (1 to `PETNET_LAYOUT_MAX_DIM`)
. dims   - the global shape; dims[0] is ignored (it becomes the sum of nlocal over the ranks)
- nlocal - the number of samples on this rank (>= 0)

  Output Parameter:
. layout - the new layout, set up

  Notes:
  This is the layout of every batch Vec of a Net today: the local part is [nlocal][dims[1]]...[dims[ndim-1]].

  Level: beginner

.seealso: `PetNetLayoutCreate()`, `PetNetRedistributeCreate()`
@*/
PetscErrorCode PetNetLayoutCreateSampleSplit(MPI_Comm comm, PetscInt ndim, const PetscInt64 dims[], PetscInt nlocal, PetNetLayout *layout)
{
  PetscMPIInt size;
  PetscInt64 *sizes, mine = nlocal, gdims[PETNET_LAYOUT_MAX_DIM];

  PetscFunctionBegin;
  PetscValidPointer(layout, 5);
  PetscCheck(nlocal >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutCreateSampleSplit(): nlocal is %" PetscInt_FMT ": give the number of samples on this rank, >= 0", nlocal);
  PetscCheck(ndim >= 1 && ndim <= PETNET_LAYOUT_MAX_DIM, comm, PETSC_ERR_ARG_OUTOFRANGE, "PetNetLayoutCreateSampleSplit(): ndim %" PetscInt_FMT " is out of range: a tensor has 1 to %d dims", ndim, PETNET_LAYOUT_MAX_DIM);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscMalloc1(size, &sizes));
  PetscCallMPI(MPI_Allgather(&mine, 1, MPIU_INT64, sizes, 1, MPIU_INT64, comm));
  gdims[0] = 0;
  for (PetscMPIInt r = 0; r < size; r++) gdims[0] += sizes[r];
  for (PetscInt d = 1; d < ndim; d++) gdims[d] = dims[d];
  PetscCall(PetNetLayoutCreate(comm, layout));
  PetscCall(PetNetLayoutSetShape(*layout, ndim, gdims));
  PetscCall(PetNetLayoutSetSplit(*layout, 0, 0, sizes));
  PetscCall(PetscFree(sizes));
  PetscCall(PetNetLayoutSetUp(*layout));
  PetscFunctionReturn(0);
}

/*
  The box reader. For each dim d and each global index g = lo[d] + i of the box, tabulate where g lives in the
  canonical copy: the owner's local index loc (-1 outside the tensor: padding), the owner's block extent nsz along d,
  and the owner's rank contribution rk = c * gstride[axis[d]] (c its coordinate along the axis; replication axes
  contribute 0: the canonical copy). The owner of a box entry is then the sum of the rk, and its local offset the
  Horner form ((loc0*nsz1 + loc1)*nsz2 + loc2)..., the same at every entry; the last dim is walked in the inner loop.
*/
PetscErrorCode PetNetLayoutCreateBoxGraph_Private(PetNetLayout L, const PetscInt64 lo[], const PetscInt64 hi[], PetscInt *nleavesout, PetscInt **ilocalout, PetscSFNode **iremoteout, PetscInt *boxsize)
{
  const PetscInt ndim = L->ndim, last             = ndim - 1;
  PetscInt64     ext[PETNET_LAYOUT_MAX_DIM], nbox = 1, nvalid = 1, gstride[PETNET_LAYOUT_MAX_GRID], total = 0;
  PetscInt64    *loc[PETNET_LAYOUT_MAX_DIM], *nsz[PETNET_LAYOUT_MAX_DIM], *rk[PETNET_LAYOUT_MAX_DIM];
  PetscInt       idx[PETNET_LAYOUT_MAX_DIM];
  PetscInt      *ilocal = NULL, nleaves = 0;
  PetscSFNode   *iremote;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < ndim; d++) {
    ext[d] = PetscMax(hi[d] - lo[d], 0);
    nbox *= ext[d];
    PetscCheck(nbox <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "a box of this layout on this rank has more entries than a PetscInt holds: split the tensor over more ranks, or use a PETSc configured --with-64-bit-indices");
  }
  gstride[L->ngrid - 1] = 1;
  for (PetscInt a = L->ngrid - 1; a > 0; a--) gstride[a - 1] = gstride[a] * L->gdims[a];
  for (PetscInt d = 0; d < ndim; d++) total += ext[d];
  PetscCall(PetscMalloc3(total, &loc[0], total, &nsz[0], total, &rk[0]));
  for (PetscInt d = 0, c = 0; d < ndim; d++) {
    const PetscInt    a   = L->axis[d];
    const PetscInt64 *off = L->offset[d];
    PetscInt64        nin = 0;

    if (d) {
      loc[d] = loc[d - 1] + ext[d - 1];
      nsz[d] = nsz[d - 1] + ext[d - 1];
      rk[d]  = rk[d - 1] + ext[d - 1];
    }
    c = 0;
    for (PetscInt64 i = 0; i < ext[d]; i++) {
      const PetscInt64 g = lo[d] + i;

      if (g < 0 || g >= L->dims[d]) {
        loc[d][i] = -1;
        nsz[d][i] = 0;
        rk[d][i]  = 0;
        continue;
      }
      while (off[c + 1] <= g) c++; /* g ascends: the owner only moves forward, skipping empty blocks */
      loc[d][i] = g - off[c];
      nsz[d][i] = off[c + 1] - off[c];
      rk[d][i]  = a >= 0 ? c * gstride[a] : 0;
      nin++;
    }
    nvalid *= nin;
  }
  PetscCall(PetscMalloc1(nvalid, &iremote));
  if (nvalid < nbox) PetscCall(PetscMalloc1(nvalid, &ilocal));
  if (nvalid > 0) {
    PetscInt leaf = 0;

    for (PetscInt d = 0; d < last; d++) idx[d] = 0;
    while (PETSC_TRUE) {
      PetscInt64 base = 0, rank = 0;
      PetscBool  inside = PETSC_TRUE;

      for (PetscInt d = 0; d < last; d++) {
        if (loc[d][idx[d]] < 0) inside = PETSC_FALSE;
        base = base * nsz[d][idx[d]] + loc[d][idx[d]];
        rank += rk[d][idx[d]];
      }
      if (inside) {
        for (PetscInt64 i = 0; i < ext[last]; i++) {
          if (loc[last][i] < 0) continue;
          iremote[nleaves].rank  = (PetscInt)(rank + rk[last][i]);
          iremote[nleaves].index = (PetscInt)(base * nsz[last][i] + loc[last][i]);
          if (ilocal) ilocal[nleaves] = leaf + (PetscInt)i;
          nleaves++;
        }
      }
      leaf += (PetscInt)ext[last];
      /* the odometer over the outer dims */
      {
        PetscInt d = last - 1;

        while (d >= 0 && ++idx[d] == ext[d]) idx[d--] = 0;
        if (d < 0) break;
      }
    }
  }
  PetscCall(PetscFree3(loc[0], nsz[0], rk[0]));
  *nleavesout = nleaves;
  *ilocalout  = ilocal;
  *iremoteout = iremote;
  *boxsize    = (PetscInt)nbox;
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetLayoutCreateBoxSF_Private(PetNetLayout L, const PetscInt64 lo[], const PetscInt64 hi[], PetscSF *sf, PetscInt *boxsize)
{
  PetscInt     nleaves, *ilocal;
  PetscSFNode *iremote;

  PetscFunctionBegin;
  PetscCall(PetNetLayoutCreateBoxGraph_Private(L, lo, hi, &nleaves, &ilocal, &iremote, boxsize));
  PetscCall(PetscSFCreate(PetscObjectComm((PetscObject)L), sf));
  PetscCall(PetscSFSetGraph(*sf, L->nlocal, nleaves, ilocal, PETSC_OWN_POINTER, iremote, PETSC_OWN_POINTER));
  PetscCall(PetscSFSetUp(*sf));
  PetscFunctionReturn(0);
}

/* Operators between two layouts need them set up and on the same communicator (the SF ranks are ranks of both) */
PetscErrorCode PetNetLayoutCheckPair_Private(PetNetLayout a, PetNetLayout b, const char caller[], const char aname[], const char bname[])
{
  PetscMPIInt same;

  PetscFunctionBegin;
  PetscCall(PetNetLayoutCheckSetUp_Private(a, caller));
  PetscCall(PetNetLayoutCheckSetUp_Private(b, caller));
  PetscCallMPI(MPI_Comm_compare(PetscObjectComm((PetscObject)a), PetscObjectComm((PetscObject)b), &same));
  PetscCheck(same == MPI_IDENT || same == MPI_CONGRUENT, PetscObjectComm((PetscObject)a), PETSC_ERR_ARG_NOTSAMECOMM, "%s(): the layouts %s and %s live on different communicators: create both on the same one", caller, aname, bname);
  PetscCheck(a->ndim == b->ndim, PetscObjectComm((PetscObject)a), PETSC_ERR_ARG_INCOMP, "%s(): %s has %" PetscInt_FMT " dims but %s has %" PetscInt_FMT ": give both layouts tensors with the same number of dims", caller, aname, a->ndim, bname,
             b->ndim);
  PetscFunctionReturn(0);
}
