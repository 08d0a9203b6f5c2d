/*
  LayerGemm() on one element type, included once per type by layergemm.c (as convim2colkernels.h):
    LAYER_GEMM_T        PetscScalar or float
    LAYER_GEMM_NAME(f)  f itself, or fSingle
    LAYER_GEMM_SMALL    1: small GEMMs as plain loops (double); 0: always BLAS (float: sgemm's bits are kept)
    LAYER_GEMM_ONEDNN   1: the epilogue's backend may send a threaded GEMM to oneDNN (float); 0: ignored (double)
    LAYER_GEMM_THIN     1: thin GEMMs on PetNet's AVX-512 kernels (double, layergemmthin.c); 0: BLAS (float)
  and LAYER_GEMM_NAME(LayerGemmBLAS)(), the type's BLAS call (layergemm.c).
*/
#if LAYER_GEMM_SMALL
/* entry (l, j) of op(B) */
static inline LAYER_GEMM_T LAYER_GEMM_NAME(GemmOpB)(PetscBool transb, const LAYER_GEMM_T *B, PetscInt ldb, PetscInt l, PetscInt j)
{
  return transb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
}

/* c = beta c + s (beta = 0: c is not read, as in BLAS) */
static inline LAYER_GEMM_T LAYER_GEMM_NAME(GemmBetaAdd)(LAYER_GEMM_T beta, LAYER_GEMM_T c, LAYER_GEMM_T s)
{
  return beta == 0 ? s : beta * c + s;
}

/*
  op(A) = A with M <= 4 rows (M a constant once inlined): each column of C is summed in registers, over l in order.
  Four columns at a time: a column's sum is a chain of k dependent additions, and four independent chains keep the
  adders busy where one would wait on each addition's latency (the spiral's 2 x 50 by 50 x 20 products); each entry
  of C is still summed in the same order, so the same bits.
*/
static inline void LAYER_GEMM_NAME(GemmSmallRowsN)(const PetscInt M, PetscBool transb, PetscInt n, PetscInt k, const LAYER_GEMM_T *restrict A, PetscInt lda, const LAYER_GEMM_T *restrict B, PetscInt ldb, LAYER_GEMM_T beta, LAYER_GEMM_T *restrict C,
                                                   PetscInt ldc)
{
  PetscInt j = 0;

  for (; j + 4 <= n; j += 4) {
    LAYER_GEMM_T acc[4][4] = {{0}};

    for (PetscInt l = 0; l < k; l++) {
      for (PetscInt q = 0; q < 4; q++) {
        const LAYER_GEMM_T blj = LAYER_GEMM_NAME(GemmOpB)(transb, B, ldb, l, j + q);

        for (PetscInt i = 0; i < M; i++) acc[q][i] += A[i + (size_t)l * lda] * blj;
      }
    }
    for (PetscInt q = 0; q < 4; q++)
      for (PetscInt i = 0; i < M; i++) C[i + (size_t)(j + q) * ldc] = LAYER_GEMM_NAME(GemmBetaAdd)(beta, C[i + (size_t)(j + q) * ldc], acc[q][i]);
  }
  for (; j < n; j++) {
    LAYER_GEMM_T acc[4] = {0, 0, 0, 0};

    for (PetscInt l = 0; l < k; l++) {
      const LAYER_GEMM_T blj = LAYER_GEMM_NAME(GemmOpB)(transb, B, ldb, l, j);

      for (PetscInt i = 0; i < M; i++) acc[i] += A[i + (size_t)l * lda] * blj;
    }
    for (PetscInt i = 0; i < M; i++) C[i + (size_t)j * ldc] = LAYER_GEMM_NAME(GemmBetaAdd)(beta, C[i + (size_t)j * ldc], acc[i]);
  }
}

/* op(A) = A^T with an inner dimension K <= 4 (a constant once inlined): column j of op(B) is held in registers */
static inline void LAYER_GEMM_NAME(GemmSmallInnerT)(const PetscInt K, PetscBool transb, PetscInt m, PetscInt n, const LAYER_GEMM_T *restrict A, PetscInt lda, const LAYER_GEMM_T *restrict B, PetscInt ldb, LAYER_GEMM_T beta, LAYER_GEMM_T *restrict C,
                                                    PetscInt ldc)
{
  for (PetscInt j = 0; j < n; j++) {
    LAYER_GEMM_T b[4];

    for (PetscInt l = 0; l < K; l++) b[l] = LAYER_GEMM_NAME(GemmOpB)(transb, B, ldb, l, j);
    for (PetscInt i = 0; i < m; i++) {
      LAYER_GEMM_T sum = 0;

      for (PetscInt l = 0; l < K; l++) sum += A[l + (size_t)i * lda] * b[l];
      C[i + (size_t)j * ldc] = LAYER_GEMM_NAME(GemmBetaAdd)(beta, C[i + (size_t)j * ldc], sum);
    }
  }
}

/*
  C = op(A) op(B) + beta C as BLAS's gemm with alpha = 1 (column-major; op(A) m x k, op(B) k x n; beta = 0: C is not
  read), in loops the compiler unrolls and vectorizes:
    op(A) = A      column j of C gathers the columns of A (axpy over the contiguous rows; in registers when m <= 4)
    op(A) = A^T    C(i, j) is the dot product of columns i of A and j of op(B), in four partial sums (a fixed order)
                   (column j of op(B) in registers when k <= 4)
  Compiled also for AVX2 (4 doubles a vector instead of 2), picked at load time on CPUs that have it, as the pointwise
  kernels are: AVX2 without FMA rounds every operation as the baseline code does, the same bits on any CPU. (An AVX-512
  clone, without FMA contraction, measured no faster on the spiral: these loops are too short for 8-wide vectors.)
*/
static LAYER_GEMM_TARGET_CLONES void LAYER_GEMM_NAME(GemmSmall)(PetscBool transa, PetscBool transb, PetscInt m, PetscInt n, PetscInt k, const LAYER_GEMM_T *restrict A, PetscInt lda, const LAYER_GEMM_T *restrict B, PetscInt ldb, LAYER_GEMM_T beta,
                                                                LAYER_GEMM_T *restrict C, PetscInt ldc)
{
  if (!transa) {
    switch (m) {
    case 1:
      LAYER_GEMM_NAME(GemmSmallRowsN)(1, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 2:
      LAYER_GEMM_NAME(GemmSmallRowsN)(2, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 3:
      LAYER_GEMM_NAME(GemmSmallRowsN)(3, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    case 4:
      LAYER_GEMM_NAME(GemmSmallRowsN)(4, transb, n, k, A, lda, B, ldb, beta, C, ldc);
      return;
    default:
      break;
    }
    for (PetscInt j = 0; j < n; j++) {
      LAYER_GEMM_T *restrict c = C + (size_t)j * ldc;

      if (beta == 0)
        for (PetscInt i = 0; i < m; i++) c[i] = 0;
      else if (beta != 1)
        for (PetscInt i = 0; i < m; i++) c[i] *= beta;
      for (PetscInt l = 0; l < k; l++) {
        const LAYER_GEMM_T blj         = LAYER_GEMM_NAME(GemmOpB)(transb, B, ldb, l, j);
        const LAYER_GEMM_T *restrict a = A + (size_t)l * lda;

        for (PetscInt i = 0; i < m; i++) c[i] += a[i] * blj;
      }
    }
    return;
  }
  switch (k) {
  case 1:
    LAYER_GEMM_NAME(GemmSmallInnerT)(1, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 2:
    LAYER_GEMM_NAME(GemmSmallInnerT)(2, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 3:
    LAYER_GEMM_NAME(GemmSmallInnerT)(3, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  case 4:
    LAYER_GEMM_NAME(GemmSmallInnerT)(4, transb, m, n, A, lda, B, ldb, beta, C, ldc);
    return;
  default:
    break;
  }
  for (PetscInt j = 0; j < n; j++) {
    for (PetscInt i = 0; i < m; i++) {
      const LAYER_GEMM_T *restrict a = A + (size_t)i * lda;
      LAYER_GEMM_T acc[4]            = {0, 0, 0, 0};
      PetscInt     l                 = 0;

      if (!transb) {
        const LAYER_GEMM_T *restrict b = B + (size_t)j * ldb;

        for (; l + 4 <= k; l += 4)
          for (PetscInt q = 0; q < 4; q++) acc[q] += a[l + q] * b[l + q];
      }
      for (; l < k; l++) acc[0] += a[l] * LAYER_GEMM_NAME(GemmOpB)(transb, B, ldb, l, j);
      C[i + (size_t)j * ldc] = LAYER_GEMM_NAME(GemmBetaAdd)(beta, C[i + (size_t)j * ldc], (acc[0] + acc[1]) + (acc[2] + acc[3]));
    }
  }
}
#endif

/* one part's product: BLAS, or the thin kernels on bt, B packed once for the whole GEMM (LayerGemmThinPack()) */
static inline void LAYER_GEMM_NAME(GemmPart)(const double *bt, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const LAYER_GEMM_T *A, PetscInt lda, const LAYER_GEMM_T *B, PetscInt ldb, LAYER_GEMM_T beta, LAYER_GEMM_T *C, PetscInt ldc)
{
#if LAYER_GEMM_THIN
  if (bt) {
    LayerGemmThin(ta, m, n, k, A, lda, bt, beta, C, ldc);
    return;
  }
#else
  (void)bt;
#endif
  LAYER_GEMM_NAME(LayerGemmBLAS)(ta, tb, m, n, k, A, lda, B, ldb, beta, C, ldc);
}

/* the epilogue on the block [i0, i1) x [j0, j1) of C (layergemm.h); in a thread: an error code, no PetscCall */
static PetscErrorCode LAYER_GEMM_NAME(GemmEpilogue)(const LAYER_GEMM_NAME(LayerGemmEpilogue) * ep, PetscInt i0, PetscInt i1, PetscInt j0, PetscInt j1, LAYER_GEMM_T *C, PetscInt ldc)
{
  PetscErrorCode ierr = 0;

  for (PetscInt j = j0; j < j1 && !ierr; j++) {
    LAYER_GEMM_T *c = C + (size_t)j * ldc + i0;

    if (ep->bias)
      for (PetscInt i = i0; i < i1; i++) c[i - i0] += ep->bias[i];
    if (ep->act && !ep->mask) ierr = LAYER_GEMM_NAME(LayerActivate)(ep->act, i1 - i0, c);
    if (ep->act && ep->mask) ierr = LAYER_GEMM_NAME(LayerMask)(ep->act, i1 - i0, ep->mask + (size_t)j * ldc + i0, c);
    if (ep->acc && (void *)ep->acc != (void *)C) {
      PetscScalar *a = ep->acc + (size_t)j * ldc + i0;

      for (PetscInt i = 0; i < i1 - i0; i++) a[i] += c[i];
    }
  }
  return ierr;
}

/* C = op(A) op(B) + beta C and the epilogue ep (or NULL), cut into parts on the threads when threaded (layergemm.h) */
PetscErrorCode LAYER_GEMM_NAME(LayerGemm)(PetscBool threaded, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const LAYER_GEMM_T *A, PetscInt lda, const LAYER_GEMM_T *B, PetscInt ldb, LAYER_GEMM_T beta, LAYER_GEMM_T *C, PetscInt ldc,
                                          const LAYER_GEMM_NAME(LayerGemmEpilogue) * ep)
{
  const PetscBool         splitm = (PetscBool)(m > n);
  const PetscInt          dim = splitm ? m : n, other = splitm ? n : m;
  const PetNetGemmBackend backend = ep ? ep->backend : PETNET_GEMM_NATIVE;
  PetscInt                nparts  = 1;
  PetscErrorCode          err     = 0;
  const double           *bt      = NULL; /* B packed for the thin kernels */

  (void)backend; /* read by the float entry only */
  if (!m || !n) return 0;
  if (ep && !ep->bias && !ep->act && !ep->acc) ep = NULL;
  if (ep && ep->acc && sizeof(LAYER_GEMM_T) == sizeof(PetscScalar)) { /* double: accumulate in the GEMM itself */
    C    = (LAYER_GEMM_T *)ep->acc;
    beta = 1;
    if (!ep->bias && !ep->act) ep = NULL;
  }
  if (m > PETSC_BLAS_INT_MAX || n > PETSC_BLAS_INT_MAX || k > PETSC_BLAS_INT_MAX || lda > PETSC_BLAS_INT_MAX || ldb > PETSC_BLAS_INT_MAX || ldc > PETSC_BLAS_INT_MAX) {
    if (!threaded) return PETSC_ERR_ARG_OUTOFRANGE;
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A layer's GEMM of %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " is too large for BLAS's integers: use smaller batches or layers", m, n, k);
  }
  if (!k) { /* C = beta C, BLAS's answer without its checks of an empty operand's leading dimension */
    for (PetscInt j = 0; j < n; j++)
      for (PetscInt i = 0; i < m; i++) C[i + (size_t)j * ldc] = beta == 0 ? 0 : beta * C[i + (size_t)j * ldc];
    err = ep ? LAYER_GEMM_NAME(GemmEpilogue)(ep, 0, m, 0, n, C, ldc) : 0;
    if (!threaded) return err;
    PetNetThreadsCheck(err, "a layer's GEMM output pass");
    return 0;
  }
#if LAYER_GEMM_ONEDNN
  if (threaded && backend != PETNET_GEMM_NATIVE) { /* one oneDNN matmul with the bias (and relu), unless its key fell back */
    PetscBool done, relu = PETSC_FALSE;

    if (ep && ep->act && !ep->mask) relu = ep->act->isrelu; /* a fused relu: a post-op */
    PetscCall(PetNetOneDNNMatmul(backend, ta, tb, m, n, k, A, lda, B, ldb, beta, C, ldc, ep ? ep->bias : NULL, relu, &done));
    if (done) {
      if (ep && ((ep->act && !relu) || ep->acc)) { /* the rest of the epilogue, elementwise: by blocks of columns on the threads */
        LAYER_GEMM_NAME(LayerGemmEpilogue) rest = *ep;

        rest.bias = NULL;
        if (relu) rest.act = NULL;
        PETNET_THREAD_BLOCKS(n, PetscMax(1, 16384 / m), PetNetThreadsSetError(&err, LAYER_GEMM_NAME(GemmEpilogue)(&rest, 0, m, i0, i1, C, ldc)));
        PetNetThreadsCheck(err, "a layer's GEMM output pass");
      }
      return 0;
    }
  }
#endif
#if LAYER_GEMM_SMALL
  if (threaded && (PetscLogDouble)m * n * k <= 32768) {
    LAYER_GEMM_NAME(GemmSmall)((PetscBool)(ta != 'N'), (PetscBool)(tb != 'N'), m, n, k, A, lda, B, ldb, beta, C, ldc);
    err = ep ? LAYER_GEMM_NAME(GemmEpilogue)(ep, 0, m, 0, n, C, ldc) : 0;
    PetNetThreadsCheck(err, "a layer's GEMM output pass");
    return 0;
  }
#endif
#if LAYER_GEMM_THIN
  /* a thin GEMM (few columns n: a batch's rows) on PetNet's AVX-512 kernels, B packed once for every part (the parts
     cut the rows of C, m > n); threaded calls only, which may call PETSc (the packing's buffer): the same call sites
     take the same path at any thread count */
  if (threaded && LayerGemmThinUse(ta, tb, m, n, k)) PetscCall(LayerGemmThinPack(ta, n, k, B, ldb, &bt));
#endif
  if (threaded) nparts = PetNetThreadParts(dim, PetscMax(16, (PetscInt)PetscCeilReal(LAYER_GEMM_PART_FLOPS / (2.0 * PetscMax(other, 1) * PetscMax(k, 1)))));
  if (nparts == 1) { /* no parallel region: an if(0) region still sets up a team */
    LAYER_GEMM_NAME(GemmPart)(bt, ta, tb, m, n, k, A, lda, B, ldb, beta, C, ldc);
    err = ep ? LAYER_GEMM_NAME(GemmEpilogue)(ep, 0, m, 0, n, C, ldc) : 0;
    if (!threaded) return err;
    PetNetThreadsCheck(err, "a layer's GEMM output pass");
    return 0;
  }
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt            j0, j1, pm = m, pn = n;
    const LAYER_GEMM_T *Ap = A, *Bp = B;
    LAYER_GEMM_T       *Cp = C;

    PetNetThreadPart(dim, nparts, p, &j0, &j1);
    if (splitm) {
      pm = j1 - j0;
      Ap = ta == 'N' ? A + j0 : A + (size_t)j0 * lda;
      Cp = C + j0;
    } else {
      pn = j1 - j0;
      Bp = tb == 'N' ? B + (size_t)j0 * ldb : B + j0;
      Cp = C + (size_t)j0 * ldc;
    }
    LAYER_GEMM_NAME(GemmPart)(bt, ta, tb, pm, pn, k, Ap, lda, Bp, ldb, beta, Cp, ldc);
    if (ep) PetNetThreadsSetError(&err, splitm ? LAYER_GEMM_NAME(GemmEpilogue)(ep, j0, j1, 0, n, C, ldc) : LAYER_GEMM_NAME(GemmEpilogue)(ep, 0, m, j0, j1, C, ldc));
  }
  PetNetThreadsCheck(err, "a layer's GEMM output pass");
  return 0;
}

/*
  G GEMMs C_g = op(A_g) op(B_g) + beta C_g, A_g = A + g sa, B_g = B + g sb, C_g = C + g sc (layergemm.h); the epilogue
  gives the backend only. Float with a oneDNN backend and G > 1: one batched oneDNN matmul, unless its key fell back.
  Otherwise, as einsum has always run them: many groups (G >= PETNET_THREAD_PARTS) in parts of groups on the threads,
  one unthreaded BLAS call each; fewer, each group a threaded LAYER_GEMM_NAME(LayerGemm) (G = 1 with a oneDNN backend:
  its 2-D matmul). Either way the parts depend on the sizes alone: the same bits at any thread count on native.
*/
PetscErrorCode LAYER_GEMM_NAME(LayerGemmBatched)(PetscInt G, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const LAYER_GEMM_T *A, PetscInt lda, PetscInt sa, const LAYER_GEMM_T *B, PetscInt ldb, PetscInt sb, LAYER_GEMM_T beta, LAYER_GEMM_T *C,
                                                 PetscInt ldc, PetscInt sc, const LAYER_GEMM_NAME(LayerGemmEpilogue) * ep)
{
  const PetNetGemmBackend backend = ep ? ep->backend : PETNET_GEMM_NATIVE;
  PetscErrorCode          err     = 0;

  PetscFunctionBegin;
  PetscCheck(!ep || (!ep->bias && !ep->act && !ep->mask && !ep->acc), PETSC_COMM_SELF, PETSC_ERR_SUP, "A batched layer GEMM takes no epilogue but its backend");
  if (!G || !m || !n) PetscFunctionReturn(0);
#if LAYER_GEMM_ONEDNN
  if (G > 1 && k && backend != PETNET_GEMM_NATIVE) {
    PetscBool done;

    PetscCall(PetNetOneDNNMatmulBatched(backend, G, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, NULL, &done));
    if (done) PetscFunctionReturn(0);
  }
#else
  (void)backend;
#endif
  if (G >= PETNET_THREAD_PARTS) { /* many small products: groups of them on the threads, one BLAS call each */
    const PetscInt nparts = PetNetThreadParts(G, 1);

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)
    for (PetscInt part = 0; part < nparts; part++) {
      PetscInt g0, g1;

      PetNetThreadPart(G, nparts, part, &g0, &g1);
      for (PetscInt g = g0; g < g1; g++) PetNetThreadsSetError(&err, LAYER_GEMM_NAME(LayerGemm)(PETSC_FALSE, ta, tb, m, n, k, A + (size_t)g * sa, lda, B + (size_t)g * sb, ldb, beta, C + (size_t)g * sc, ldc, NULL));
    }
    PetNetThreadsCheck(err, "a batched layer GEMM");
  } else
    for (PetscInt g = 0; g < G; g++) PetscCall(LAYER_GEMM_NAME(LayerGemm)(PETSC_TRUE, ta, tb, m, n, k, A + (size_t)g * sa, lda, B + (size_t)g * sb, ldb, beta, C + (size_t)g * sc, ldc, ep));
  PetscFunctionReturn(0);
}
