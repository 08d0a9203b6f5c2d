/*
  The layout of a DMDA global Vec: the DMDA grid mode (conv2d on a distributed field) is a layout that splits H and W.

  A DMDA of global size M (x) [x N (y) [x P (z)]] with dof c, on an m [x n [x p]] grid of ranks, stores on each rank
  the box [xs, xs+xm) x [ys, ys+ym) x [zs, zs+zm) of its global Vec as [zm][ym][xm][c]: x faster than y faster than z,
  the dof interlaced (fastest). That is the row-major block of the tensor

      1-D  (1, M, c)           on the grid (m)         dim 1 split along axis 0 by lx
      2-D  (1, N, M, c)        on the grid (n, m)      dim 1 along axis 0 by ly, dim 2 along axis 1 by lx
      3-D  (1, P, N, M, c)     on the grid (p, n, m)   dims 1, 2, 3 along axes 0, 1, 2 by lz, ly, lx

  (one sample, channels last; lx, ly, lz from DMDAGetOwnershipRanges()). The DMDA numbers its ranks x fastest,
  rank = i + m (j + n k), which is the row-major numbering of the grid (p, n, m): the layout's block of each rank is
  that rank's DMDA box, and PetNetLayoutCreateFromDMDA() checks it.
*/
#include <petnet/private/layoutimpl.h>
#include <petscdmda.h>
#include <petsc/private/dmimpl.h> /* DM.setupcalled */

/*@
  PetNetLayoutCreateFromDMDA - the layout of a DMDA global Vec: one sample, split over the ranks along y and x (and z)
  as the DMDA splits its grid

  Collective on da

  Input Parameter:
. da - a `DMDA` of dimension 1, 2 or 3, set up (`DMSetUp()`)

  Output Parameter:
. layout - the new layout, set up, on the DMDA's communicator

  Notes:
  A 2-D DMDA of M x N points with dof c on m x n ranks gives the tensor (1, N, M, c) (samples, y, x, channels last) on
  the grid (n, m) of ranks, dim 1 split along grid axis 0 by the y ownership ranges and dim 2 along grid axis 1 by the
  x ranges (`DMDAGetOwnershipRanges()`); the channels are not split. A 3-D DMDA of M x N x P points on m x n x p ranks
  gives (1, P, N, M, c) on the grid (p, n, m), and a 1-D DMDA of M points (1, M, c) on the grid (m).

  The local part of a Vec in this layout is, entry for entry, the local part of the DMDA's global Vec (`DMCreateGlobalVector()`):
  the DMDA's rank numbering, rank = i + m (j + n k), is the layout's row-major one, and each rank's block is its DMDA box
  [zs, zs+zm) x [ys, ys+ym) x [xs, xs+xm) with the dof interlaced. So a DMDA global Vec can be given as it is to the
  data-movement operators of the layout (`PetNetRedistributeCreate()`, `PetNetHaloCreate()`, ...): for example to
  gather the field on one rank, or to move it to a layout that splits the channels.

  Level: intermediate

.seealso: `PetNetLayoutCreate()`, `PetNetLayoutCreateSampleSplit()`, `PetNetRedistributeCreate()`, `DMDACreate2d()`,
          `DMDAGetOwnershipRanges()`, `DMDAGetCorners()`
@*/
PetscErrorCode PetNetLayoutCreateFromDMDA(DM da, PetNetLayout *layout)
{
  MPI_Comm        comm;
  PetscBool       isda;
  PetscInt        dim, M, N, P, m, n, p, dof, corner[3], width[3], extent[3], nranks[3], nvec;
  const PetscInt *range[3];
  PetscInt64      dims[PETNET_LAYOUT_MAX_DIM], start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], *sizes;
  PetscMPIInt     gdims[3], match;
  PetNetLayout    L;
  Vec             g;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(da, DM_CLASSID, 1);
  PetscValidPointer(layout, 2);
  PetscCall(PetscObjectGetComm((PetscObject)da, &comm));
  PetscCall(PetscObjectTypeCompare((PetscObject)da, DMDA, &isda));
  PetscCheck(isda, comm, PETSC_ERR_ARG_WRONG, "PetNetLayoutCreateFromDMDA(): the DM is of type %s, not a DMDA: give a DM created with DMDACreate1d(), DMDACreate2d() or DMDACreate3d()",
             ((PetscObject)da)->type_name ? ((PetscObject)da)->type_name : "(not set)");
  PetscCheck(da->setupcalled, comm, PETSC_ERR_ARG_WRONGSTATE, "PetNetLayoutCreateFromDMDA(): the DMDA is not set up (its ownership ranges are not known yet): call DMSetUp() on it first");
  PetscCall(DMDAGetInfo(da, &dim, &M, &N, &P, &m, &n, &p, &dof, NULL, NULL, NULL, NULL, NULL));
  PetscCheck(dim >= 1 && dim <= 3, comm, PETSC_ERR_SUP, "PetNetLayoutCreateFromDMDA(): a DMDA of dimension %" PetscInt_FMT ": give a 1-D, 2-D or 3-D DMDA", dim);
  PetscCall(DMDAGetOwnershipRanges(da, &range[0], &range[1], &range[2]));
  PetscCall(DMDAGetCorners(da, &corner[0], &corner[1], &corner[2], &width[0], &width[1], &width[2]));
  extent[0] = M;
  extent[1] = N;
  extent[2] = P;
  nranks[0] = m;
  nranks[1] = n;
  nranks[2] = p;

  /* DMDA axis a (0 = x, 1 = y, 2 = z) is tensor dim dim - a and grid axis dim - 1 - a */
  dims[0] = 1;
  for (PetscInt a = 0; a < dim; a++) {
    dims[dim - a]      = extent[a];
    gdims[dim - 1 - a] = (PetscMPIInt)nranks[a];
  }
  dims[dim + 1] = dof;
  PetscCall(PetNetLayoutCreate(comm, &L));
  PetscCall(PetNetLayoutSetShape(L, dim + 2, dims));
  PetscCall(PetNetLayoutSetGrid(L, dim, gdims));
  PetscCall(PetscMalloc1(PetscMax(m, PetscMax(n, p)), &sizes));
  for (PetscInt a = 0; a < dim; a++) {
    for (PetscInt c = 0; c < nranks[a]; c++) sizes[c] = range[a][c];
    PetscCall(PetNetLayoutSetSplit(L, dim - a, dim - 1 - a, sizes));
  }
  PetscCall(PetscFree(sizes));
  PetscCall(PetNetLayoutSetUp(L));

  /* every rank's block is its DMDA box, and the local sizes agree with the DMDA's global Vec */
  PetscCall(PetNetLayoutGetBlock(L, start, size));
  PetscCall(DMGetGlobalVector(da, &g));
  PetscCall(VecGetLocalSize(g, &nvec));
  PetscCall(DMRestoreGlobalVector(da, &g));
  match = (PetscMPIInt)(L->nlocal == nvec && start[0] == 0 && size[0] == 1 && start[dim + 1] == 0 && size[dim + 1] == dof);
  for (PetscInt a = 0; a < dim; a++)
    if (start[dim - a] != corner[a] || size[dim - a] != width[a]) match = 0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &match, 1, MPI_INT, MPI_MIN, comm));
  if (!match) PetscCall(PetNetLayoutDestroy(&L));
  PetscCheck(match, comm, PETSC_ERR_SUP,
             "PetNetLayoutCreateFromDMDA(): on some rank the DMDA's box (DMDAGetCorners()) or its global Vec's local size is not the layout's block: this DMDA does not number its ranks x fastest (rank = i + m (j + n k)) as this PETSc's DMDA does");
  *layout = L;
  PetscFunctionReturn(0);
}
