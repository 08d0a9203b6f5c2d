/*
  attention's forward, backward and jvp on one element type, included once per type by attention.c (the formulas,
  layouts and BLAS mapping are there):
    ATT_T        PetscScalar or float: the values (x, y, QKV, O, their (co)tangents) AND the softmax statistics (the
                 running max and sum of each query row, its log-sum-exp): single precision accumulates in float
    ATT_NAME(f)  f or fSingle
  and, from attention.c, the type's ATT_NAME(AttentionParameters)() (theta itself, or rounded to float by forward and
  kept for the backward and jvp that follow at the same point), ATT_NAME(AttentionDirection)() (dtheta, or rounded to
  float), ATT_NAME(AttentionState)() (forward's QKV, O and log-sum-exp in this type) and ATT_NAME(AttentionWork)().
  The parameter gradient stays double: dW += ... through LayerGemm()'s accumulation into double, the biases summed in
  double.

  The per-(sample, head) kernels below run inside a parallel region (no PETSc call; they return an error code): per
  block of query rows and tile of keys, matrix products of the tile (BLAS, not threaded, through LayerGemm(), or a loop
  nest for small tiles), the softmax statistics and exponentials over the contiguous rows of the tile's scores
  (AttentionExpRow(), vectorised, attention.c). Layouts (one sample s of the local batch, one head h, d = E / H, E the
  heads' width; the query block: the nq query rows i = 0..nq-1 at the global positions q0 + i, against the T keys
  j = 0..T-1; q0 = 0, nq = T without a block):
    Q row i   q  + (s nq + i) E  + h d          (the block's queries, ld E)
    K row j   kv + (s T + j) 2E + h d           V row j  ... + E      (every key, ld 2E)
    O row i   o  + (s nq + i) E  + h d          (O the heads' outputs side by side, before the output projection)
    lse       lse + (s H + h) nq + i            the log-sum-exp of row i's scaled scores
  Query rows are taken in blocks of B (the tile), the keys of each block in tiles of B: S = Q_blk K_tile^T is B x B,
  and the tiles of K and V are read by the block's products while they are in cache. With the causal mask row i sees
  keys j <= q0 + i (its global position, as the dropout map's hash), the key tiles that lie entirely above the diagonal
  of a block (j0 > the block's last global row) are never visited, and the block's key tiles run over 0..min(T, q0 + i1).
*/

/* y = x . z over d entries */
static inline ATT_T ATT_NAME(AttentionDot)(PetscInt d, const ATT_T *restrict x, const ATT_T *restrict z)
{
  ATT_T sum = 0;

  for (PetscInt k = 0; k < d; k++) sum += x[k] * z[k];
  return sum;
}

/* the entries of a score row whose exponentials are taken: cnt rounded up to whole vectors of 16 where the row's B
   entries hold them (B a multiple of 16), so that the vectorized loop runs no scalar tail; the entries past cnt are
   zeroed by the caller afterwards or never read */
#define ATT_EXP_COUNT(cnt, B) ((B) % 16 == 0 ? PetscMin(((cnt) + 15) / 16 * 16, (B)) : (cnt))

/* the largest of x[0..n) (n >= 1): a max is exact, so the vector lanes of the simd reduction give the scalar loop's
   value in any order */
static inline ATT_T ATT_NAME(AttentionRowMax)(PetscInt n, const ATT_T *restrict x)
{
  ATT_T mx = x[0];

#pragma omp simd reduction(max : mx)
  for (PetscInt c = 1; c < n; c++) mx = x[c] > mx ? x[c] : mx;
  return mx;
}

/* x . z over a row of a tile, in four partial sums (independent additions the vector units overlap; a fixed order) */
static inline ATT_T ATT_NAME(AttentionRowDot)(PetscInt n, const ATT_T *restrict x, const ATT_T *restrict z)
{
  ATT_T    acc[4] = {0, 0, 0, 0};
  PetscInt c      = 0;

  for (; c + 4 <= n; c += 4)
    for (PetscInt q = 0; q < 4; q++) acc[q] += x[c + q] * (z ? z[c + q] : 1);
  for (; c < n; c++) acc[0] += x[c] * (z ? z[c] : 1);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/*
  C = op(A) op(B) + beta C on one tile (column-major, alpha 1, as LayerGemm()), in the calling thread: BLAS
  (LayerGemm() not threaded: one call, no PETSc function, an error code) when the product has at least
  ATT_TILE_GEMM_MIN multiply-adds, a plain loop nest below (the small tiles of -attention_tile 1 to 7, where a BLAS
  call and its packing cost more than the arithmetic).
*/
static inline PetscErrorCode ATT_NAME(AttentionTileGemm)(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const ATT_T *A, PetscInt lda, const ATT_T *Bm, PetscInt ldb, ATT_T beta, ATT_T *C, PetscInt ldc)
{
  if ((PetscInt64)m * n * k >= ATT_TILE_GEMM_MIN) return ATT_NAME(LayerGemm)(PETSC_FALSE, ta, tb, m, n, k, A, lda, Bm, ldb, beta, C, ldc, NULL);
  for (PetscInt j = 0; j < n; j++)
    for (PetscInt i = 0; i < m; i++) {
      ATT_T sum = 0;

      for (PetscInt l = 0; l < k; l++) sum += (ta == 'N' ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda]) * (tb == 'N' ? Bm[l + (size_t)j * ldb] : Bm[j + (size_t)l * ldb]);
      C[i + (size_t)j * ldc] = beta == 0 ? sum : beta * C[i + (size_t)j * ldc] + sum;
    }
  return 0;
}

/*
  The three tile products below in their row views (attentiontile.h: row t of an operand is d contiguous entries, a
  score row nk entries): in float on attentiontile.h's kernels when AttentionTileFast(d) (ATT_FLOAT_TILES), else as
  one AttentionTileGemm() (column-major, as LayerGemm(); double always, so that its bits stay those of BLAS):
    dot    C[i][j] (=|+=) sum_k A[i][k] Bm[j][k]   'T','N'  n x m x d   (bt: attentiontile.h's [d][n16] scratch)
    axpy   C[i][:] += sum_j P[i][j] V[j][:]        'N','N'  d x m x n
    axpyt  C[j][:] += sum_i P[i][j] G[i][:]        'N','T'  d x n x m
  diag marks the causal diagonal (entries j > i + diag unneeded in dot's C and zero in P): the float kernels skip
  them (attentiontile.h), the GEMM computes the whole tile.
*/
static inline PetscErrorCode ATT_NAME(AttentionDotTile)(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const ATT_T *A, PetscInt lda, const ATT_T *Bm, PetscInt ldb, PetscBool add, ATT_T *C, PetscInt ldc, ATT_T *bt)
{
#if ATT_FLOAT_TILES
  if (AttentionTileFast(d)) {
    ATT_TILE_CALL(AttentionTileDot, PETSC_TRUE, m, n, diag, d, A, lda, Bm, ldb, add, C, ldc, bt);
    return 0;
  }
#endif
  return ATT_NAME(AttentionTileGemm)('T', 'N', n, m, d, Bm, ldb, A, lda, add ? 1 : 0, C, ldc);
}

static inline PetscErrorCode ATT_NAME(AttentionAxpyTile)(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const ATT_T *P, PetscInt ldp, const ATT_T *V, PetscInt ldv, ATT_T *C, PetscInt ldc)
{
#if ATT_FLOAT_TILES
  if (AttentionTileFast(d)) {
    ATT_TILE_CALL(AttentionTileAxpy, AttentionTileFast16(d), m, n, diag, d, P, ldp, V, ldv, C, ldc);
    return 0;
  }
#endif
  return ATT_NAME(AttentionTileGemm)('N', 'N', d, m, n, V, ldv, P, ldp, 1, C, ldc);
}

static inline PetscErrorCode ATT_NAME(AttentionAxpyTTile)(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const ATT_T *P, PetscInt ldp, const ATT_T *G, PetscInt ldg, ATT_T *C, PetscInt ldc)
{
#if ATT_FLOAT_TILES
  if (AttentionTileFast(d)) {
    ATT_TILE_CALL(AttentionTileAxpyT, AttentionTileFast16(d), m, n, diag, d, P, ldp, G, ldg, C, ldc);
    return 0;
  }
#endif
  return ATT_NAME(AttentionTileGemm)('N', 'T', d, n, m, G, ldg, P, ldp, 1, C, ldc);
}

/*
  The tile products of one (sample, head). A block of nb query rows i0.. and a tile of nk keys j0.. are, read in
  place with their strides (Q rows E apart in q, K and V rows 2E apart in kv, O and dO rows E apart), column-major d x nb and d x nk
  matrices Qc, Kc, Vc, ... (column t the row t). The tile's scores are formed transposed, S^T = Kc^T Qc, nk x nb
  column-major with leading dimension B: S's row i (query i0 + i) is B contiguous entries, over which the softmax
  statistics and the exponentials run. Then, with P's rows in the same place:
    O_blk  += P V_tile        Oc += Vc P^T         'N','N'  d x nb x nk
    dP      = G_blk V_tile^T  dP^T = Vc^T Gc       'T','N'  nk x nb x d
    dV_tile += (P M)^T G_blk  dVc += Gc (P M)      'N','T'  d x nk x nb
    dQ_blk += dS K_tile       dQc += Kc dS^T       'N','N'  d x nb x nk
    dK_tile += dS^T Q_blk     dKc += Qc dS         'N','T'  d x nk x nb
  On the diagonal tile of the causal form the entries j > q0 + i of a row are set to 0 in P (and dS), so the products
  over the whole tile add nothing from them. The tile work: two B x B score tiles (S and dP, or S and S') and three
  row vectors of B (attention.c: tilesize).
*/
#define ATT_TILE_S(w, B)      (w)
#define ATT_TILE_S2(w, B)     ((w) + (size_t)(B) * (B))
#define ATT_TILE_ROW(w, B, r) ((w) + 2 * (size_t)(B) * (B) + (size_t)(r) * (B))
#define ATT_TILE_BT(w, B)     ((w) + 2 * (size_t)(B) * (B) + 3 * (size_t)(B) + 8) /* the dot tiles' scratch, [d][B rounded up to 16] */

/*
  forward of one (sample, head): the flash-attention recurrence. Per query row i, over the key tiles in order, with
  s_ij = scale q_i . k_j (scale = 1/sqrt(d)), m the running max, l the running sum of exp(s - m), o the running
  (unnormalised) output:
    m' = max(m, max_j s_ij),  a = exp(m - m'),  l = a l + sum_j exp(s_ij - m'),  o = a o + sum_j exp(s_ij - m') M_ij v_j
  and at the end O_i = o / l, lse_i = m + log l. M_ij is the dropout map (1 without dropout): the statistics are the
  softmax's, the map multiplies the probabilities only. Per tile: S = scale Q_blk K_tile^T, the statistics over S's
  rows, P = exp(S - m) M in place, O_blk = diag(a) O_blk + P V_tile. work: S and the rows' running max.
*/
static PetscErrorCode ATT_NAME(AttentionForwardPair)(const Layer_Attention *att, PetscInt s, PetscInt h, const ATT_T *qb, const ATT_T *kv, ATT_T *o, ATT_T *lse, ATT_T *work)
{
  const PetscInt  T = att->T, nq = att->nq, q0 = att->q0, E = att->Ew, d = att->d, B = att->B, ld = E, ldkv = 2 * E; /* E: the heads' width H d */
  const ATT_T     scale = (ATT_T)att->scale;
  const ATT_T    *Q = qb + (size_t)s * nq * ld + h * d, *K = kv + (size_t)s * T * ldkv + h * d, *V = K + E;
  ATT_T          *O = o + (size_t)s * nq * E + h * d, *L = lse + ((size_t)s * att->H + h) * nq;
  ATT_T          *S = ATT_TILE_S(work, B), *M = ATT_TILE_ROW(work, B, 0);
  ATT_T          *BT   = ATT_TILE_BT(work, B);
  const PetscBool drop = att->masked;
  PetscErrorCode  ierr;

  for (PetscInt i0 = 0; i0 < nq; i0 += B) {
    const PetscInt i1 = PetscMin(i0 + B, nq), nb = i1 - i0, jend = att->causal ? PetscMin(T, q0 + i1) : T;

    for (PetscInt i = i0; i < i1; i++) {
      for (PetscInt k = 0; k < d; k++) O[(size_t)i * E + k] = 0;
      L[i] = 0;
    }
    for (PetscInt j0 = 0; j0 < jend; j0 += B) {
      const PetscInt j1 = PetscMin(j0 + B, jend), nk = j1 - j0, dg = att->causal ? q0 + i0 - j0 : nk; /* the causal diagonal (attentiontile.h) */

      ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, Q + (size_t)i0 * ld, ld, K + (size_t)j0 * ldkv, ldkv, PETSC_FALSE, S, B, BT);
      if (ierr) return ierr;
      for (PetscInt i = i0; i < i1; i++) {
        const PetscInt jmax = att->causal ? PetscMin(j1, q0 + i + 1) : j1, cnt = jmax - j0;
        ATT_T *restrict row = S + (size_t)(i - i0) * B;
        ATT_T *out          = O + (size_t)i * E, mx, m, l, a;

        if (cnt <= 0) { /* this row sees no key of the tile */
          for (PetscInt c = 0; c < nk; c++) row[c] = 0;
          continue;
        }
        /* between tiles the row's running max is in M[i - i0], its running sum in L[i], o in its row of O */
        for (PetscInt c = 0; c < cnt; c++) row[c] *= scale;
        mx = ATT_NAME(AttentionRowMax)(cnt, row);
        if (j0 == 0) { /* the first tile this row sees */
          m = mx;
          l = 0;
          a = 0;
        } else {
          m = M[i - i0];
          l = L[i];
          if (mx > m) {
            a = ATT_EXP((m - mx));
            m = mx;
          } else
            a = 1;
        }
        l *= a;
        if (a != 1)
          for (PetscInt k = 0; k < d; k++) out[k] *= a;
        ATT_NAME(AttentionExpRow)(ATT_EXP_COUNT(cnt, B), 1, m, row);
        l += ATT_NAME(AttentionRowDot)(cnt, row, NULL);
        if (drop)
          for (PetscInt c = 0; c < cnt; c++) row[c] *= (ATT_T)AttentionMask(att, s, h, q0 + i, j0 + c);
        for (PetscInt c = cnt; c < nk; c++) row[c] = 0; /* the causal mask on the diagonal tile */
        L[i]      = l;
        M[i - i0] = m;
      }
      ierr = ATT_NAME(AttentionAxpyTile)(nb, nk, dg, d, S, B, V + (size_t)j0 * ldkv, ldkv, O + (size_t)i0 * E, E);
      if (ierr) return ierr;
    }
    for (PetscInt i = i0; i < i1; i++) {
      const ATT_T m = M[i - i0], l = L[i];

      for (PetscInt k = 0; k < d; k++) O[(size_t)i * E + k] /= l;
      L[i] = m + ATT_LOG(l);
    }
  }
  return 0;
}

/*
  backward of one (sample, head), recomputing the tiles: with g = dO (the cotangent of O), P_ij = exp(s_ij - lse_i),
  D_i = g_i . O_i (= sum_j P_ij dP_ij),
    dP_ij = M_ij g_i . v_j,   dS_ij = P_ij (dP_ij - D_i)
    dq_i = scale sum_j dS_ij k_j,   dk_j = scale sum_i dS_ij q_i,   dv_j = sum_i P_ij M_ij g_i
  Per tile: S = Q_blk K_tile^T and dP = G_blk V_tile^T (GEMMs), P, dS (scale included) and P M over the rows in place,
  then dV_tile += (P M)^T G_blk, dQ_blk += dS K_tile, dK_tile += dS^T Q_blk. dq, dk, dv are written (not accumulated)
  into dq (laid out as Q) and dkv (laid out as K and V). work: S (then P M), dP (then dS) and the block's D.
*/
static PetscErrorCode ATT_NAME(AttentionBackwardPair)(const Layer_Attention *att, PetscInt s, PetscInt h, const ATT_T *qb, const ATT_T *kv, const ATT_T *o, const ATT_T *lse, const ATT_T *g, ATT_T *dqb, ATT_T *dkv, ATT_T *work)
{
  const PetscInt  T = att->T, nq = att->nq, q0 = att->q0, E = att->Ew, d = att->d, B = att->B, ld = E, ldkv = 2 * E; /* E: the heads' width H d */
  const ATT_T     scale = (ATT_T)att->scale;
  const size_t    off = (size_t)s * nq * ld + h * d, offkv = (size_t)s * T * ldkv + h * d, offo = (size_t)s * nq * E + h * d;
  const ATT_T    *Q = qb + off, *K = kv + offkv, *V = K + E, *O = o + offo, *G = g + offo, *L = lse + ((size_t)s * att->H + h) * nq;
  ATT_T          *dQ = dqb + off, *dK = dkv + offkv, *dV = dK + E;
  ATT_T          *S = ATT_TILE_S(work, B), *dP = ATT_TILE_S2(work, B), *D = ATT_TILE_ROW(work, B, 0);
  ATT_T          *BT   = ATT_TILE_BT(work, B);
  const PetscBool drop = att->masked;
  PetscErrorCode  ierr;

  for (PetscInt i = 0; i < nq; i++)
    for (PetscInt k = 0; k < d; k++) dQ[(size_t)i * ld + k] = 0;
  for (PetscInt t = 0; t < T; t++)
    for (PetscInt k = 0; k < d; k++) dK[(size_t)t * ldkv + k] = dV[(size_t)t * ldkv + k] = 0;
  for (PetscInt i0 = 0; i0 < nq; i0 += B) {
    const PetscInt i1 = PetscMin(i0 + B, nq), nb = i1 - i0, jend = att->causal ? PetscMin(T, q0 + i1) : T;

    for (PetscInt i = i0; i < i1; i++) D[i - i0] = ATT_NAME(AttentionDot)(d, G + (size_t)i * E, O + (size_t)i * E);
    for (PetscInt j0 = 0; j0 < jend; j0 += B) {
      const PetscInt j1 = PetscMin(j0 + B, jend), nk = j1 - j0, dg = att->causal ? q0 + i0 - j0 : nk; /* the causal diagonal (attentiontile.h) */

      ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, Q + (size_t)i0 * ld, ld, K + (size_t)j0 * ldkv, ldkv, PETSC_FALSE, S, B, BT);
      if (!ierr) ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, G + (size_t)i0 * E, E, V + (size_t)j0 * ldkv, ldkv, PETSC_FALSE, dP, B, BT);
      if (ierr) return ierr;
      for (PetscInt i = i0; i < i1; i++) {
        const PetscInt jmax = att->causal ? PetscMin(j1, q0 + i + 1) : j1, cnt = PetscMax(jmax - j0, 0);
        const ATT_T    Di = D[i - i0], li = L[i];
        ATT_T *restrict p = S + (size_t)(i - i0) * B, *restrict ds = dP + (size_t)(i - i0) * B;

        ATT_NAME(AttentionExpRow)(ATT_EXP_COUNT(cnt, B), scale, li, p);
        if (drop)
          for (PetscInt c = 0; c < cnt; c++) {
            const ATT_T mij = (ATT_T)AttentionMask(att, s, h, q0 + i, j0 + c);

            ds[c] = scale * p[c] * (mij * ds[c] - Di);
            p[c] *= mij;
          }
        else
          for (PetscInt c = 0; c < cnt; c++) ds[c] = scale * p[c] * (ds[c] - Di);
        for (PetscInt c = cnt; c < nk; c++) p[c] = ds[c] = 0; /* the causal mask on the diagonal tile */
      }
      ierr = ATT_NAME(AttentionAxpyTTile)(nb, nk, dg, d, S, B, G + (size_t)i0 * E, E, dV + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = ATT_NAME(AttentionAxpyTile)(nb, nk, dg, d, dP, B, K + (size_t)j0 * ldkv, ldkv, dQ + (size_t)i0 * ld, ld);
      if (!ierr) ierr = ATT_NAME(AttentionAxpyTTile)(nb, nk, dg, d, dP, B, Q + (size_t)i0 * ld, ld, dK + (size_t)j0 * ldkv, ldkv);
      if (ierr) return ierr;
    }
  }
  return 0;
}

/*
  jvp of one (sample, head): with the tangents q' (dqb, laid out as Q), k', v' (dkv, laid out as K and V),
  s'_ij = scale (q'_i . k_j + q_i . k'_j),
  P'_ij = P_ij (s'_ij - c_i), c_i = sum_j P_ij s'_ij:
    O'_i = sum_j M_ij (P'_ij v_j + P_ij v'_j) = u_i - c_i O_i,   u_i = sum_j P_ij M_ij (s'_ij v_j + v'_j)
  one pass over the tiles (lse from forward gives P directly). Per tile: S = Q_blk K_tile^T, S' = Q'_blk K_tile^T +
  Q_blk K'_tile^T (GEMMs), over the rows P, c and, in place, P M and P M S', then u_blk += (P M S') V_tile + (P M) V'_tile.
  O' written into dout (laid out as O); c_i into c ([H nq] per sample, as lse) when c is not NULL (the second-order term
  needs it). work: S, S' and the block's c.
*/
static PetscErrorCode ATT_NAME(AttentionJVPPair)(const Layer_Attention *att, PetscInt s, PetscInt h, const ATT_T *qb, const ATT_T *kv, const ATT_T *o, const ATT_T *lse, const ATT_T *dqb, const ATT_T *dkv, ATT_T *dout, ATT_T *c, ATT_T *work)
{
  const PetscInt  T = att->T, nq = att->nq, q0 = att->q0, E = att->Ew, d = att->d, B = att->B, ld = E, ldkv = 2 * E; /* E: the heads' width H d */
  const ATT_T     scale = (ATT_T)att->scale;
  const size_t    off = (size_t)s * nq * ld + h * d, offkv = (size_t)s * T * ldkv + h * d, offo = (size_t)s * nq * E + h * d, offl = ((size_t)s * att->H + h) * nq;
  const ATT_T    *Q = qb + off, *K = kv + offkv, *V = K + E, *O = o + offo, *L = lse + offl;
  const ATT_T    *dQ = dqb + off, *dK = dkv + offkv, *dV = dK + E;
  ATT_T          *dO = dout + offo, *S = ATT_TILE_S(work, B), *Sd = ATT_TILE_S2(work, B), *Cb = ATT_TILE_ROW(work, B, 0);
  ATT_T          *BT   = ATT_TILE_BT(work, B);
  const PetscBool drop = att->masked;
  PetscErrorCode  ierr;

  for (PetscInt i0 = 0; i0 < nq; i0 += B) {
    const PetscInt i1 = PetscMin(i0 + B, nq), nb = i1 - i0, jend = att->causal ? PetscMin(T, q0 + i1) : T;

    for (PetscInt i = i0; i < i1; i++) {
      for (PetscInt k = 0; k < d; k++) dO[(size_t)i * E + k] = 0;
      Cb[i - i0] = 0;
    }
    for (PetscInt j0 = 0; j0 < jend; j0 += B) {
      const PetscInt j1 = PetscMin(j0 + B, jend), nk = j1 - j0, dg = att->causal ? q0 + i0 - j0 : nk; /* the causal diagonal (attentiontile.h) */

      ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, Q + (size_t)i0 * ld, ld, K + (size_t)j0 * ldkv, ldkv, PETSC_FALSE, S, B, BT);
      if (!ierr) ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, dQ + (size_t)i0 * ld, ld, K + (size_t)j0 * ldkv, ldkv, PETSC_FALSE, Sd, B, BT);
      if (!ierr) ierr = ATT_NAME(AttentionDotTile)(nb, nk, dg, d, Q + (size_t)i0 * ld, ld, dK + (size_t)j0 * ldkv, ldkv, PETSC_TRUE, Sd, B, BT);
      if (ierr) return ierr;
      for (PetscInt i = i0; i < i1; i++) {
        const PetscInt jmax = att->causal ? PetscMin(j1, q0 + i + 1) : j1, cnt = PetscMax(jmax - j0, 0);
        const ATT_T    li = L[i];
        ATT_T *restrict p = S + (size_t)(i - i0) * B, *restrict sd = Sd + (size_t)(i - i0) * B, ci = Cb[i - i0];

        ATT_NAME(AttentionExpRow)(ATT_EXP_COUNT(cnt, B), scale, li, p);
        for (PetscInt c2 = 0; c2 < cnt; c2++) sd[c2] *= scale;
        ci += ATT_NAME(AttentionRowDot)(cnt, p, sd);
        if (drop)
          for (PetscInt c2 = 0; c2 < cnt; c2++) p[c2] *= (ATT_T)AttentionMask(att, s, h, q0 + i, j0 + c2);
        for (PetscInt c2 = 0; c2 < cnt; c2++) sd[c2] *= p[c2];
        for (PetscInt c2 = cnt; c2 < nk; c2++) p[c2] = sd[c2] = 0; /* the causal mask on the diagonal tile */
        Cb[i - i0] = ci;
      }
      ierr = ATT_NAME(AttentionAxpyTile)(nb, nk, dg, d, Sd, B, V + (size_t)j0 * ldkv, ldkv, dO + (size_t)i0 * E, E);
      if (!ierr) ierr = ATT_NAME(AttentionAxpyTile)(nb, nk, dg, d, S, B, dV + (size_t)j0 * ldkv, ldkv, dO + (size_t)i0 * E, E);
      if (ierr) return ierr;
    }
    for (PetscInt i = i0; i < i1; i++) {
      const ATT_T ci = Cb[i - i0];

      for (PetscInt k = 0; k < d; k++) dO[(size_t)i * E + k] -= ci * O[(size_t)i * E + k];
      if (c) c[offl + i] = ci;
    }
  }
  return 0;
}

/* the (sample, head) pairs of n samples in parts (a part's pairs run in order, in one thread, with the part's work);
   CALL returns an error code (a tile GEMM's), raised after the region */
#define ATT_PAIRS(att, n, work, wsize, CALL)                                                                                                          \
  do {                                                                                                                                                \
    const PetscInt npairs_ = (n) * (att)->H, nparts_ = PetNetThreadParts(npairs_, (att)->pairsperpart);                                               \
    PetscErrorCode err_ = 0;                                                                                                                          \
    _Pragma("omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts_ > 1)") for (PetscInt part_ = 0; part_ < nparts_; part_++) \
    {                                                                                                                                                 \
      PetscInt p0_, p1_;                                                                                                                              \
      PetNetThreadPart(npairs_, nparts_, part_, &p0_, &p1_);                                                                                          \
      for (PetscInt pair_ = p0_; pair_ < p1_; pair_++) {                                                                                              \
        const PetscInt s = pair_ / (att)->H, h = pair_ % (att)->H;                                                                                    \
        void          *pw_ = (char *)(work) + (size_t)part_ * (wsize);                                                                                \
        PetNetThreadsSetError(&err_, CALL);                                                                                                           \
      }                                                                                                                                               \
    }                                                                                                                                                 \
    PetNetThreadsCheck(err_, "attention's tile kernel");                                                                                              \
  } while (0)

/*
  The projections of the query block (LayerAttentionSetQueryBlock()): Q of the block's rows, K and V of every row. A
  sample's block is the rows [q0, q0 + nq) of its x [T][E]: one GEMM over the n nq rows when the block is the whole
  sequence, one per sample otherwise. Win [3Ew][E] row-major is the column-major E x 3Ew matrix of ld E; its Q rows
  start at Win, its K and V rows at Win + Ew E.
    QKV = x Win^T + bin   Q  [n nq][Ew]: 'T','N', Ew x nq x E per sample (x's block rows)
                          KV [n T][2Ew]: 'T','N', 2Ew x nT x E           (beta: 0 or 1, to add a second term)
  The projections here and the output projection are threaded GEMMs on the whole batch: they run on the backend gemm
  (the layer's layer->gemm: oneDNN's matmul at single precision with -net_backend onednn, the bias fused; ignored in
  double). The tile products of the heads (AttentionTileGemm(), inside the pairs' parallel region) stay native.
*/
static PetscErrorCode ATT_NAME(AttentionProject)(const Layer_Attention *att, PetNetGemmBackend gemm, PetscInt n, const ATT_T *Win, const ATT_T *bin, const ATT_T *x, ATT_T beta, ATT_T *qb, ATT_T *kv)
{
  const PetscInt E = att->E, Ew = att->Ew, T = att->T, nq = att->nq, whole = (PetscInt)(nq == T);

  PetscFunctionBegin;
  {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, bin ? bin + Ew : NULL, NULL, NULL, gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', 2 * Ew, n * T, E, Win + (size_t)Ew * E, E, x, E, beta, kv, 2 * Ew, &ep));
  }
  for (PetscInt s = 0; s < (whole ? 1 : n); s++) {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, bin, NULL, NULL, gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', Ew, whole ? n * nq : nq, E, Win, E, x + ((size_t)s * T + att->q0) * E, E, beta, qb + (size_t)s * nq * Ew, Ew, &ep));
  }
  PetscFunctionReturn(0);
}

/*
  The adjoint of the projections' input part: dx = beta dx + dKV Win_kv + dQ Win_q (the block's rows of dx):
    'N','N', E x nT x 2Ew, then E x nq x Ew per sample (beta 1)
*/
static PetscErrorCode ATT_NAME(AttentionProjectTranspose)(const Layer_Attention *att, PetNetGemmBackend gemm, PetscInt n, const ATT_T *Win, const ATT_T *dqb, const ATT_T *dkv, ATT_T beta, ATT_T *dx)
{
  const PetscInt E = att->E, Ew = att->Ew, T = att->T, nq = att->nq, whole = (PetscInt)(nq == T);
  ATT_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, NULL, gemm}; /* the backend only */

  PetscFunctionBegin;
  PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'N', E, n * T, 2 * Ew, Win + (size_t)Ew * E, E, dkv, 2 * Ew, beta, dx, E, &ep));
  for (PetscInt s = 0; s < (whole ? 1 : n); s++) PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'N', E, whole ? n * nq : nq, Ew, Win, E, dqb + (size_t)s * nq * Ew, Ew, 1, dx + ((size_t)s * T + att->q0) * E, E, &ep));
  PetscFunctionReturn(0);
}

/*
  The projections' parameter part, ACCUMULATED in double: dWin_q += x_blk^T dQ, dWin_kv += x^T dKV ('N','T', E x Ew x nq
  per sample and E x 2Ew x nT, into dWin through the acc epilogue; wgrad is float's product scratch, NULL in double),
  dbin += the column sums of dQ and dKV (dbin NULL: no bias term)
*/
static PetscErrorCode ATT_NAME(AttentionProjectGradient)(const Layer_Attention *att, PetNetGemmBackend gemm, PetscInt n, const ATT_T *x, const ATT_T *dqb, const ATT_T *dkv, ATT_T *wgrad, PetscScalar *dWin, PetscScalar *dbin)
{
  const PetscInt E = att->E, Ew = att->Ew, T = att->T, nq = att->nq, whole = (PetscInt)(nq == T);

  PetscFunctionBegin;
  {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, dWin + (size_t)Ew * E, gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'T', E, 2 * Ew, n * T, x, E, dkv, 2 * Ew, 0, wgrad, E, &ep));
  }
  for (PetscInt s = 0; s < (whole ? 1 : n); s++) {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, dWin, gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'T', E, Ew, whole ? n * nq : nq, x + ((size_t)s * T + att->q0) * E, E, dqb + (size_t)s * nq * Ew, Ew, 0, wgrad, E, &ep));
  }
  if (dbin) {
    for (PetscInt r = 0; r < n * nq; r++)
      for (PetscInt e = 0; e < Ew; e++) dbin[e] += (PetscScalar)dqb[(size_t)r * Ew + e];
    for (PetscInt r = 0; r < n * T; r++)
      for (PetscInt e = 0; e < 2 * Ew; e++) dbin[Ew + e] += (PetscScalar)dkv[(size_t)r * 2 * Ew + e];
  }
  PetscFunctionReturn(0);
}

/*
  forward: Q (the block's rows), K and V (every row) = x Win^T + bin (AttentionProject()), the heads' attention into O,
  y = O Wo^T + bo (one GEMM, 'T','N', E x n nq x Ew). Keeps Q, KV, O and lse. Ew = H d is the heads' width: E, or for
  a block of heads (LayerAttentionSetHeadBlock_C) its part of E, Q [n nq][Ew], KV [n T][2Ew], O [n nq][Ew], and Win
  [3Ew][E], Wo [E][Ew]; bo only where outbias. y has the block's nq rows per sample.
*/
/* forward's state of n samples at (x, W): Q, KV, the heads' outputs O and lse (the dropout map drawn by the last forward) */
static PetscErrorCode ATT_NAME(AttentionForwardState)(Layer layer, PetscInt n, const ATT_T *W, const ATT_T *x, ATT_T **qb, ATT_T **kv, ATT_T **o, ATT_T **lse, ATT_T **tiles)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew;

  PetscFunctionBegin;
  PetscCall(ATT_NAME(AttentionState)(layer, n, qb, kv, o, lse, tiles));
  if (!n) PetscFunctionReturn(0);
  PetscCall(ATT_NAME(AttentionProject)(att, layer->gemm, n, W + ATT_WIN(E, Ew), W + ATT_BIN(E, Ew), x, 0, *qb, *kv));
  ATT_NAME(AttentionRotateQK)(att, n, PETSC_FALSE, *qb, *kv); /* rotary positions (attentionrotary.h): the state keeps R Q, R K */
  {
    ATT_T *q = *qb, *k = *kv, *oo = *o, *l = *lse;

    ATT_PAIRS(att, n, *tiles, att->tilesize * sizeof(ATT_T), ATT_NAME(AttentionForwardPair)(att, s, h, q, k, oo, l, (ATT_T *)pw_));
  }
  PetscFunctionReturn(0);
}

/*
  forward's state for a backward, jvp or sobackward (op) at (x, W): the one kept by the last forward in this precision,
  or, when that forward ran in the other precision (a Net at single or bfloat16 precision runs the second-order adjoint
  in double, after float forwards), recomputed from x and W here (the same dropout map), so the derivatives follow at
  the same point
*/
static PetscErrorCode ATT_NAME(AttentionEnsureState)(Layer layer, PetscInt n, const char *op, const ATT_T *W, const ATT_T *x, ATT_T **qb, ATT_T **kv, ATT_T **o, ATT_T **lse, ATT_T **tiles)
{
  Layer_Attention *att  = (Layer_Attention *)layer->data;
  const PetscInt   kept = sizeof(ATT_T) == sizeof(float) ? att->nstatef : att->nstate;

  PetscFunctionBegin;
  if (kept != n) PetscCall(ATT_NAME(AttentionForwardState)(layer, n, W, x, qb, kv, o, lse, tiles));
  PetscCall(ATT_NAME(AttentionCheckState)(layer, n, op, qb, kv, o, lse, tiles));
  PetscFunctionReturn(0);
}

static PetscErrorCode ATT_NAME(LayerForward_Attention)(Layer layer, PetscInt n, const PetscScalar *theta, const ATT_T *x, ATT_T *y)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew, nQ = n * att->nq;
  const ATT_T     *W;
  ATT_T           *qb = NULL, *kv = NULL, *o = NULL, *lse = NULL, *tiles = NULL;

  PetscFunctionBegin;
  PetscCall(ATT_NAME(AttentionParameters)(layer, theta, "forward", &W));
  PetscCall(AttentionDraw(layer, n));
  PetscCall(ATT_NAME(AttentionForwardState)(layer, n, W, x, &qb, &kv, &o, &lse, &tiles));
  if (!n) PetscFunctionReturn(0);
  {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, att->outbias ? W + ATT_BO(E, Ew) : NULL, NULL, NULL, layer->gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', E, nQ, Ew, W + ATT_WO(E, Ew), Ew, o, Ew, 0, y, E, &ep));
  }
  PetscCall(PetscLogFlops(2.0 * (nQ + 2.0 * n * att->T) * E * Ew + 2.0 * nQ * E * Ew + AttentionPairFlops(att, n, 4.0)));
  PetscFunctionReturn(0);
}

/*
  backward:
    dO   = dy Wo                  'N','N', Ew x n nq x E
    dWo += O^T dy,  dbo += sum dy  'N','T', Ew x E x n nq (into double)
    dQ, dKV = the heads' backward (recomputing the tiles)
    dx   = dKV Win_kv + dQ Win_q  (AttentionProjectTranspose())
    dWin += x^T (dQ, dKV), dbin += their sums (AttentionProjectGradient())
*/
static PetscErrorCode ATT_NAME(LayerBackward_Attention)(Layer layer, PetscInt n, const PetscScalar *theta, const ATT_T *x, const ATT_T *y, const ATT_T *dy, ATT_T *dx, PetscScalar *dtheta)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew, nQ = n * att->nq;
  const ATT_T     *W;
  ATT_T           *qb = NULL, *kv = NULL, *o = NULL, *lse = NULL, *tiles = NULL, *dO, *dqb, *dkv, *wgrad;
  ATT_NAME(LayerGemmEpilogue) onbackend = {NULL, NULL, NULL, NULL, layer->gemm}; /* no output pass, the backend only */

  PetscFunctionBegin;
  if (!n || (!dx && !dtheta)) PetscFunctionReturn(0);
  PetscCall(ATT_NAME(AttentionParameters)(layer, theta, "backward", &W));
  PetscCall(ATT_NAME(AttentionEnsureState)(layer, n, "backward", W, x, &qb, &kv, &o, &lse, &tiles));
  PetscCall(ATT_NAME(AttentionWork)(layer, n, &dO, &dqb, &dkv, &wgrad));
  PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'N', Ew, nQ, E, W + ATT_WO(E, Ew), Ew, dy, E, 0, dO, Ew, &onbackend));
  if (dtheta) {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, NULL, NULL, dtheta + ATT_WO(E, Ew), layer->gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'N', 'T', Ew, E, nQ, o, Ew, dy, E, 0, wgrad, Ew, &ep));
    if (att->outbias)
      for (PetscInt r = 0; r < nQ; r++)
        for (PetscInt e = 0; e < E; e++) dtheta[ATT_BO(E, Ew) + e] += (PetscScalar)dy[(size_t)r * E + e];
  }
  ATT_PAIRS(att, n, tiles, att->tilesize * sizeof(ATT_T), ATT_NAME(AttentionBackwardPair)(att, s, h, qb, kv, o, lse, dO, dqb, dkv, (ATT_T *)pw_));
  ATT_NAME(AttentionRotateQK)(att, n, PETSC_TRUE, dqb, dkv); /* rotary positions: dQ, dK of the projection = R^T (those of R Q, R K) */
  if (dx) PetscCall(ATT_NAME(AttentionProjectTranspose)(att, layer->gemm, n, W + ATT_WIN(E, Ew), dqb, dkv, 0, dx));
  if (dtheta) PetscCall(ATT_NAME(AttentionProjectGradient)(att, layer->gemm, n, x, dqb, dkv, wgrad, dtheta + ATT_WIN(E, Ew), dtheta + ATT_BIN(E, Ew)));
  PetscCall(PetscLogFlops((nQ + 2.0 * n * att->T) * E * Ew * (dtheta ? 4 : 2) + 2.0 * nQ * E * Ew * (dtheta ? 2 : 1) + AttentionPairFlops(att, n, 10.0)));
  PetscFunctionReturn(0);
}

/*
  jvp:
    Q', KV' = dx Win^T + x dWin^T + dbin     (AttentionProject() twice, the bias in the second's output pass)
    O'      = the heads' jvp
    dy      = O' Wo^T + O dWo^T + dbo         ('T','N', E x n nq x Ew twice)
*/
static PetscErrorCode ATT_NAME(LayerJVP_Attention)(Layer layer, PetscInt n, const PetscScalar *theta, const ATT_T *x, const ATT_T *y, const ATT_T *dx, const PetscScalar *dtheta, ATT_T *dy)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew, nQ = n * att->nq;
  const ATT_T     *W, *dW = NULL;
  ATT_T           *qb = NULL, *kv = NULL, *o = NULL, *lse = NULL, *tiles = NULL, *dO, *dqb, *dkv, *wgrad;
  ATT_NAME(LayerGemmEpilogue) onbackend = {NULL, NULL, NULL, NULL, layer->gemm}; /* no output pass, the backend only */

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  if (!dx && !dtheta) {
    PetscCall(PetscArrayzero(dy, (size_t)nQ * E));
    PetscFunctionReturn(0);
  }
  PetscCall(ATT_NAME(AttentionParameters)(layer, theta, "jvp", &W));
  PetscCall(ATT_NAME(AttentionEnsureState)(layer, n, "jvp", W, x, &qb, &kv, &o, &lse, &tiles));
  PetscCall(ATT_NAME(AttentionWork)(layer, n, &dO, &dqb, &dkv, &wgrad));
  if (dtheta) PetscCall(ATT_NAME(AttentionDirection)(layer, dtheta, &dW));
  if (dx) PetscCall(ATT_NAME(AttentionProject)(att, layer->gemm, n, W + ATT_WIN(E, Ew), NULL, dx, 0, dqb, dkv));
  if (dW) PetscCall(ATT_NAME(AttentionProject)(att, layer->gemm, n, dW + ATT_WIN(E, Ew), dW + ATT_BIN(E, Ew), x, dx ? 1 : 0, dqb, dkv));
  ATT_NAME(AttentionRotateQK)(att, n, PETSC_FALSE, dqb, dkv); /* rotary positions: the tangents of R Q, R K */
  ATT_PAIRS(att, n, tiles, att->tilesize * sizeof(ATT_T), ATT_NAME(AttentionJVPPair)(att, s, h, qb, kv, o, lse, dqb, dkv, dO, NULL, (ATT_T *)pw_));
  PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', E, nQ, Ew, W + ATT_WO(E, Ew), Ew, dO, Ew, 0, dy, E, &onbackend));
  if (dW) {
    ATT_NAME(LayerGemmEpilogue) ep = {NULL, att->outbias ? dW + ATT_BO(E, Ew) : NULL, NULL, NULL, layer->gemm};

    PetscCall(ATT_NAME(LayerGemm)(PETSC_TRUE, 'T', 'N', E, nQ, Ew, dW + ATT_WO(E, Ew), Ew, o, Ew, 1, dy, E, &ep));
  }
  PetscCall(PetscLogFlops((nQ + 2.0 * n * att->T) * E * Ew * (dtheta ? 4 : 2) + 2.0 * nQ * E * Ew * (dtheta ? 2 : 1) + AttentionPairFlops(att, n, 10.0)));
  PetscFunctionReturn(0);
}
