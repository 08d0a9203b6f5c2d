/*
  The strided transpose of permute.h on one element type, included once per type by permute.c:
    PERM_T        PetscScalar or float
    PERM_NAME(f)  f or fSingle
*/

/* one row of tiles: the output dims a (last) and b (the input's last) of one sample and one index of every other dim,
   at x + xo, y + yo; the other dims are fixed by the caller */
static inline void PERM_NAME(PermuteRow)(PetscInt na, PetscInt nb, PetscInt xsa, PetscInt ysb, PetscBool acc, const PERM_T *x, PERM_T *y)
{
  for (PetscInt b0 = 0; b0 < nb; b0 += PERMUTE_TILE) {
    const PetscInt b1 = PetscMin(nb, b0 + PERMUTE_TILE);

    for (PetscInt a0 = 0; a0 < na; a0 += PERMUTE_TILE) {
      const PetscInt a1 = PetscMin(na, a0 + PERMUTE_TILE);

      /* y[ib][ia] (ia contiguous) = x[ia][ib] (ib contiguous): a tile of both stays in cache */
      for (PetscInt ib = b0; ib < b1; ib++) {
        PERM_T       *yr = y + (size_t)ib * ysb;
        const PERM_T *xr = x + ib;

        if (acc)
          for (PetscInt ia = a0; ia < a1; ia++) yr[ia] += xr[(size_t)ia * xsa];
        else
          for (PetscInt ia = a0; ia < a1; ia++) yr[ia] = xr[(size_t)ia * xsa];
      }
    }
  }
}

void PERM_NAME(LayerPermuteApply)(PetscInt n, PetscInt r, const PetscInt idims[], const PetscInt perm[], PetscBool acc, const PERM_T *x, PERM_T *y)
{
  PetscInt xstr[PETNET_MAX_DIM + 1], ystr[PETNET_MAX_DIM + 1], odims[PETNET_MAX_DIM + 1], ixs[PETNET_MAX_DIM + 1];
  PetscInt other[PETNET_MAX_DIM + 1], nother = 0, a = r - 1, b = -1, size = 1, rows = n, rowsize, nparts;

  /* strides of x by input dim and of y by output dim; ixs[d] the stride in x of output dim d */
  for (PetscInt d = r - 1; d >= 0; d--) {
    xstr[d] = size;
    size *= idims[d];
  }
  for (PetscInt d = r - 1, s = 1; d >= 0; d--) {
    odims[d] = idims[perm[d]];
    ystr[d]  = s;
    ixs[d]   = xstr[perm[d]];
    s *= odims[d];
  }
  for (PetscInt d = 0; d < r; d++)
    if (perm[d] == r - 1) b = d;
  /* the dims outside the tile, slowest first; the sample is the slowest of all (stride size in both) */
  for (PetscInt d = 0; d < r; d++)
    if (d != a && d != b) {
      other[nother++] = d;
      rows *= odims[d];
    }
  rowsize = a == b ? odims[a] : odims[a] * odims[b];
  nparts  = PetNetThreadParts(rows, PetscMax(1, 16384 / PetscMax(rowsize, 1)));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscInt r0, r1;

    PetNetThreadPart(rows, nparts, part, &r0, &r1);
    for (PetscInt row = r0; row < r1; row++) {
      PetscInt64 xo = 0, yo = 0;
      PetscInt   rest = row;

      for (PetscInt k = nother - 1; k >= 0; k--) { /* the row's index in each other dim, fastest first */
        const PetscInt d = other[k], i = rest % odims[d];

        rest /= odims[d];
        xo += (PetscInt64)i * ixs[d];
        yo += (PetscInt64)i * ystr[d];
      }
      xo += (PetscInt64)rest * size; /* what is left is the sample */
      yo += (PetscInt64)rest * size;
      if (a == b) { /* the last dim stays last: a contiguous run */
        const PERM_T *xr = x + xo;
        PERM_T       *yr = y + yo;

        if (acc)
          for (PetscInt i = 0; i < odims[a]; i++) yr[i] += xr[i];
        else
          for (PetscInt i = 0; i < odims[a]; i++) yr[i] = xr[i];
      } else PERM_NAME(PermuteRow)(odims[a], odims[b], ixs[a], ystr[b], acc, x + xo, y + yo);
    }
  }
}
