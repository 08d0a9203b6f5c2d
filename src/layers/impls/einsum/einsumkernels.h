/*
  The contractions of einsum.h on one element type, included once per type by einsumkernels.c:
    EIN_T        PetscScalar or float: the values (sums are in EIN_T too, as a GEMM of that type sums)
    EIN_NAME(f)  f or fSingle
    EIN_GEMM_BATCHED  LayerGemmBatched or LayerGemmBatchedSingle (with the epilogue type EIN_EPILOGUE, which carries
                      the backend: the double entry ignores it, the float one hands the groups to oneDNN when it is set)
*/

/* EINSUM_LOOP: each out entry of each sample (parts of them on the threads), summing over the other letters with an
   odometer, the last letter fastest */
static void EIN_NAME(EinsumLoop)(const EinsumContraction *c, PetscInt n, const EIN_T *a, const EIN_T *b, PetscBool acc, EIN_T *out)
{
  const PetscInt64 N      = (PetscInt64)n * c->sizeo;
  const PetscInt   nparts = PetNetThreadParts((PetscInt)PetscMin(N, PETSC_MAX_INT), 4096);
  PetscInt64       inner  = 1;

  for (PetscInt l = c->nout; l < c->nl; l++) inner *= c->len[l];
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscInt e0, e1;

    PetNetThreadPart((PetscInt)N, nparts, part, &e0, &e1);
    for (PetscInt e = e0; e < e1; e++) {
      const PetscInt s    = e / c->sizeo;
      PetscInt       rest = e % c->sizeo, idx[EINSUM_MAX_LETTERS];
      PetscInt64     o1 = (PetscInt64)s * c->size1, o2 = (PetscInt64)s * c->size2;
      EIN_T          sum = 0;

      for (PetscInt l = c->nout - 1; l >= 0; l--) { /* out's letters, from its flat index (the last fastest) */
        const PetscInt i = rest % c->len[l];

        rest /= c->len[l];
        o1 += (PetscInt64)i * c->s1[l];
        o2 += (PetscInt64)i * c->s2[l];
      }
      for (PetscInt l = c->nout; l < c->nl; l++) idx[l] = 0;
      for (PetscInt64 t = 0; t < inner; t++) {
        PetscInt64 q1 = o1, q2 = o2;

        for (PetscInt l = c->nout; l < c->nl; l++) {
          q1 += (PetscInt64)idx[l] * c->s1[l];
          q2 += (PetscInt64)idx[l] * c->s2[l];
        }
        sum += b ? a[q1] * b[q2] : a[q1];
        for (PetscInt l = c->nl - 1; l >= c->nout; l--) { /* next index, the last letter fastest */
          if (++idx[l] < c->len[l]) break;
          idx[l] = 0;
        }
      }
      if (acc)
        out[e] += sum;
      else
        out[e] = sum;
    }
  }
}

PetscErrorCode EIN_NAME(EinsumContract)(const EinsumContraction *c, PetNetGemmBackend backend, PetscInt n, const EIN_T *a, const EIN_T *b, PetscBool acc, EIN_T *out, EIN_T *work)
{
  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (c->path == EINSUM_PERMUTE) {
    EIN_NAME(LayerPermuteApply)(n, c->r1, c->d1, c->p1, acc, a, out);
    PetscFunctionReturn(0);
  }
  if (c->path == EINSUM_LOOP) {
    PetscInt64 inner = 1;

    for (PetscInt l = c->nout; l < c->nl; l++) inner *= c->len[l];
    EIN_NAME(EinsumLoop)(c, n, a, b, acc, out);
    PetscCall(PetscLogFlops((b ? 2.0 : 1.0) * n * c->sizeo * (PetscLogDouble)inner));
    PetscFunctionReturn(0);
  }
  {
    const EIN_T   *a1 = a, *b1 = b;
    EIN_T         *o1 = out, *w = work;
    const PetscInt G = n * c->nb, ni = c->ni, nj = c->nj, nk = c->nk;
    const EIN_T    beta = (acc && c->ido) ? 1 : 0;
    EIN_EPILOGUE   ep;

    PetscCall(PetscMemzero(&ep, sizeof(ep)));
    ep.backend = backend;
    if (!c->id1) {
      EIN_NAME(LayerPermuteApply)(n, c->r1, c->d1, c->p1, PETSC_FALSE, a, w);
      a1 = w;
      w += (size_t)n * c->size1;
    }
    if (!c->id2) {
      EIN_NAME(LayerPermuteApply)(n, c->r2, c->d2, c->p2, PETSC_FALSE, b, w);
      b1 = w;
      w += (size_t)n * c->size2;
    }
    if (!c->ido) o1 = w;
    /* out'_g^T = op2'_g op1'_g^T for each (sample, batch index) group g: one batched GEMM (layergemm.h) */
    PetscCall(EIN_GEMM_BATCHED(G, 'T', 'N', nj, ni, nk, b1, nk, nj * nk, a1, nk, ni * nk, beta, o1, nj, ni * nj, &ep));
    if (!c->ido) EIN_NAME(LayerPermuteApply)(n, c->ro, c->dco, c->po, acc, o1, out);
    PetscCall(PetscLogFlops(2.0 * G * (PetscLogDouble)ni * nj * nk));
  }
  PetscFunctionReturn(0);
}
