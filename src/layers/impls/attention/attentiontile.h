/*
  attention's tile products in float without BLAS, included once by attention.c. A tile of attention (attentionkernels.h)
  multiplies a block of nb <= B query rows by a tile of nk <= B keys over the d features of a head: d is small (16 or 32
  in the GPTs of bin/charlm), so a BLAS call spends as long packing its operands and scaling C as in its kernel (a
  profile of the GPT's attention in single: sgemm's kernel 29% of the time, its copies and beta 23%). These kernels
  read the operands in place, in their row layouts (a row t of Q, K, V, O, dO, dQ, dK, dV is d contiguous floats, rows
  ld apart; a row i of a score tile is its nk scores of query i, B apart), and keep a block of the result in vector
  registers (8 floats a vector; GCC's vector extension, so the same code is SSE in the baseline build and AVX2 with
  FMA in the clone picked at run time):

    dot     C[i][j] (=|+=) sum_k A[i][k] Bm[j][k]    S = Q K^T, dP = dO V^T, S' = Q' K^T + Q K'^T     i < m, j < n
            Bm's tile transposed once into bt [d][n16] (n16 = n rounded up to 16, zeros past n), then a block of 4 rows
            by 16 columns of C in 8 vectors: per k, 4 broadcasts of A[i][k] and 2 rows of bt
    axpy    C[i][:] += sum_j P[i][j] V[j][:]           O += P V, dQ += dS K                              i < m, j < n
            a block of 4 rows of C by 16 features in 8 vectors: per j, 4 broadcasts of P[i][j] and 2 vectors of V[j]
    axpyt   C[j][:] += sum_i P[i][j] G[i][:]           dV += (P M)^T dO, dK += dS^T Q                     i < m, j < n
            a block of 4 rows j of C by 16 features: per i, 4 broadcasts of P[i][j] and 2 vectors of G[i]

  axpy and axpyt need d a multiple of 8 (AttentionTileFast()); dot takes any d. The sums over k, j or i run in order,
  one product added at a time (with FMA in the AVX2 clone), so a result does not depend on the block it fell in. Rows
  past m (columns past n) of a block read a valid row (the last) and are not stored.
*/
typedef float AttV8 __attribute__((vector_size(32), aligned(4))); /* 8 floats, loaded and stored unaligned */

#define ATT_TILE_R 4 /* rows of a register block: 4 x 2 vectors of accumulators */

/* the 4 x 2 accumulators of a block, named (an array indexed at run time would live on the stack) */
#define ATT_ACC_ZERO AttV8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0}
#define ATT_ACC_FMA(x0, x1, x2, x3, v0, v1) \
  do {                                      \
    c00 += (x0) * (v0);                     \
    c01 += (x0) * (v1);                     \
    c10 += (x1) * (v0);                     \
    c11 += (x1) * (v1);                     \
    c20 += (x2) * (v0);                     \
    c21 += (x2) * (v1);                     \
    c30 += (x3) * (v0);                     \
    c31 += (x3) * (v1);                     \
  } while (0)
#define ATT_ACC_ROWS                    \
  {                                     \
    {c00, c01}, {c10, c11}, {c20, c21}, \
    {                                   \
      c30, c31                          \
    }                                   \
  }

/*
  The causal diagonal: a tile whose entry (i, j) is needed (or nonzero) only for j <= i + diag (diag = q0 + i0 - j0 on
  the causal form's diagonal tiles, n or more elsewhere). dot leaves the columns past its block of rows' last needed
  one unwritten (their callers set them), axpy stops its sums over j there and axpyt starts its sums over i at the first
  row whose entries can be nonzero: the terms skipped are the products of the masked zeros, at the end or the start of
  an ordered sum, so every result keeps its bits.
*/
#define ATT_TILE_COLS(n, diag, rows) PetscMax(PetscMin((n), (rows) + (diag)), 0) /* rows 0..rows-1 need columns < this */
#define ATT_TILE_ROW0(diag, j)       PetscMax((j) - (diag), 0)                   /* column j's first row that may be nonzero */

#define ATT_TILE_KERNELS(SUF, ATTR)                                                                                                                                                                                                            \
  static ATTR void AttentionTileDot##SUF(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict A, PetscInt lda, const float *restrict Bm, PetscInt ldb, PetscBool add, float *restrict C, PetscInt ldc, float *restrict bt) \
  {                                                                                                                                                                                                                                            \
    const PetscInt n16 = (n + 15) / 16 * 16, nt = ATT_TILE_COLS(n, diag, m); /* columns any row needs */                                                                                                                                       \
    for (PetscInt j = 0; j < nt; j++)                                                                                                                                                                                                          \
      for (PetscInt k = 0; k < d; k++) bt[(size_t)k * n16 + j] = Bm[(size_t)j * ldb + k];                                                                                                                                                      \
    for (PetscInt k = 0; k < d; k++)                                                                                                                                                                                                           \
      for (PetscInt j = nt; j < (nt + 15) / 16 * 16; j++) bt[(size_t)k * n16 + j] = 0;                                                                                                                                                         \
    for (PetscInt i0 = 0; i0 < m; i0 += ATT_TILE_R) {                                                                                                                                                                                          \
      const float   *a0 = A + (size_t)i0 * lda, *a1 = A + (size_t)PetscMin(i0 + 1, m - 1) * lda, *a2 = A + (size_t)PetscMin(i0 + 2, m - 1) * lda, *a3 = A + (size_t)PetscMin(i0 + 3, m - 1) * lda;                                             \
      const PetscInt jn = ATT_TILE_COLS(n, diag, PetscMin(i0 + ATT_TILE_R, m)); /* the block's rows need columns < jn */                                                                                                                       \
      for (PetscInt j0 = 0; j0 < jn; j0 += 16) {                                                                                                                                                                                               \
        const float *b = bt + j0;                                                                                                                                                                                                              \
        ATT_ACC_ZERO;                                                                                                                                                                                                                          \
        for (PetscInt k = 0; k < d; k++, b += n16) {                                                                                                                                                                                           \
          const AttV8 b0 = *(const AttV8 *)b, b1 = *(const AttV8 *)(b + 8);                                                                                                                                                                    \
          ATT_ACC_FMA(a0[k], a1[k], a2[k], a3[k], b0, b1);                                                                                                                                                                                     \
        }                                                                                                                                                                                                                                      \
        {                                                                                                                                                                                                                                      \
          const AttV8 acc[ATT_TILE_R][2] = ATT_ACC_ROWS;                                                                                                                                                                                       \
          for (PetscInt r = 0; r < ATT_TILE_R && i0 + r < m; r++) {                                                                                                                                                                            \
            float *c = C + (size_t)(i0 + r) * ldc + j0;                                                                                                                                                                                        \
            if (j0 + 16 <= n) {                                                                                                                                                                                                                \
              if (add) {                                                                                                                                                                                                                       \
                *(AttV8 *)c += acc[r][0];                                                                                                                                                                                                      \
                *(AttV8 *)(c + 8) += acc[r][1];                                                                                                                                                                                                \
              } else {                                                                                                                                                                                                                         \
                *(AttV8 *)c       = acc[r][0];                                                                                                                                                                                                 \
                *(AttV8 *)(c + 8) = acc[r][1];                                                                                                                                                                                                 \
              }                                                                                                                                                                                                                                \
            } else {                                                                                                                                                                                                                           \
              float t[16];                                                                                                                                                                                                                     \
              *(AttV8 *)t       = acc[r][0];                                                                                                                                                                                                   \
              *(AttV8 *)(t + 8) = acc[r][1];                                                                                                                                                                                                   \
              for (PetscInt jj = 0; j0 + jj < n; jj++) c[jj] = (add ? c[jj] : 0) + t[jj];                                                                                                                                                      \
            }                                                                                                                                                                                                                                  \
          }                                                                                                                                                                                                                                    \
        }                                                                                                                                                                                                                                      \
      }                                                                                                                                                                                                                                        \
    }                                                                                                                                                                                                                                          \
  }                                                                                                                                                                                                                                            \
  static ATTR void AttentionTileAxpy##SUF(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict P, PetscInt ldp, const float *restrict V, PetscInt ldv, float *restrict C, PetscInt ldc)                                    \
  {                                                                                                                                                                                                                                            \
    for (PetscInt i0 = 0; i0 < m; i0 += ATT_TILE_R) {                                                                                                                                                                                          \
      const float   *p0 = P + (size_t)i0 * ldp, *p1 = P + (size_t)PetscMin(i0 + 1, m - 1) * ldp, *p2 = P + (size_t)PetscMin(i0 + 2, m - 1) * ldp, *p3 = P + (size_t)PetscMin(i0 + 3, m - 1) * ldp;                                             \
      const PetscInt jn = ATT_TILE_COLS(n, diag, PetscMin(i0 + ATT_TILE_R, m)); /* P's entries past jn are 0 in these rows */                                                                                                                  \
      for (PetscInt c0 = 0; c0 < d; c0 += 16) {                                                                                                                                                                                                \
        const PetscInt nv = d - c0 >= 16 ? 2 : 1;                                                                                                                                                                                              \
        const float   *v  = V + c0;                                                                                                                                                                                                            \
        ATT_ACC_ZERO;                                                                                                                                                                                                                          \
        for (PetscInt j = 0; j < jn; j++, v += ldv) {                                                                                                                                                                                          \
          const AttV8 v0 = *(const AttV8 *)v, v1 = nv == 2 ? *(const AttV8 *)(v + 8) : v0;                                                                                                                                                     \
          ATT_ACC_FMA(p0[j], p1[j], p2[j], p3[j], v0, v1);                                                                                                                                                                                     \
        }                                                                                                                                                                                                                                      \
        {                                                                                                                                                                                                                                      \
          const AttV8 acc[ATT_TILE_R][2] = ATT_ACC_ROWS;                                                                                                                                                                                       \
          for (PetscInt r = 0; r < ATT_TILE_R && i0 + r < m; r++)                                                                                                                                                                              \
            for (PetscInt w = 0; w < nv; w++) *(AttV8 *)(C + (size_t)(i0 + r) * ldc + c0 + 8 * w) += acc[r][w];                                                                                                                                \
        }                                                                                                                                                                                                                                      \
      }                                                                                                                                                                                                                                        \
    }                                                                                                                                                                                                                                          \
  }                                                                                                                                                                                                                                            \
  static ATTR void AttentionTileAxpyT##SUF(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict P, PetscInt ldp, const float *restrict G, PetscInt ldg, float *restrict C, PetscInt ldc)                                   \
  {                                                                                                                                                                                                                                            \
    for (PetscInt j0 = 0; j0 < n; j0 += ATT_TILE_R) {                                                                                                                                                                                          \
      const PetscInt q0 = j0, q1 = PetscMin(j0 + 1, n - 1), q2 = PetscMin(j0 + 2, n - 1), q3 = PetscMin(j0 + 3, n - 1);                                                                                                                        \
      for (PetscInt c0 = 0; c0 < d; c0 += 16) {                                                                                                                                                                                                \
        const PetscInt nv = d - c0 >= 16 ? 2 : 1;                                                                                                                                                                                              \
        const PetscInt i1 = ATT_TILE_ROW0(diag, j0); /* P's entries of rows before i1 are 0 in these columns */                                                                                                                                \
        const float   *g = G + c0 + (size_t)i1 * ldg, *pi = P + (size_t)i1 * ldp;                                                                                                                                                              \
        ATT_ACC_ZERO;                                                                                                                                                                                                                          \
        for (PetscInt i = i1; i < m; i++, g += ldg, pi += ldp) {                                                                                                                                                                               \
          const AttV8 g0 = *(const AttV8 *)g, g1 = nv == 2 ? *(const AttV8 *)(g + 8) : g0;                                                                                                                                                     \
          ATT_ACC_FMA(pi[q0], pi[q1], pi[q2], pi[q3], g0, g1);                                                                                                                                                                                 \
        }                                                                                                                                                                                                                                      \
        {                                                                                                                                                                                                                                      \
          const AttV8 acc[ATT_TILE_R][2] = ATT_ACC_ROWS;                                                                                                                                                                                       \
          for (PetscInt r = 0; r < ATT_TILE_R && j0 + r < n; r++)                                                                                                                                                                              \
            for (PetscInt w = 0; w < nv; w++) *(AttV8 *)(C + (size_t)(j0 + r) * ldc + c0 + 8 * w) += acc[r][w];                                                                                                                                \
        }                                                                                                                                                                                                                                      \
      }                                                                                                                                                                                                                                        \
    }                                                                                                                                                                                                                                          \
  }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
ATT_TILE_KERNELS(AVX2, __attribute__((target("avx2,fma"))))
#define ATT_TILE_HAVE_AVX2 1
#endif
ATT_TILE_KERNELS(Base, )

#if defined(ATT_TILE_HAVE_AVX2)
/*
  The same three kernels on AVX-512's 16 floats a vector, for CPUs that have it: dot in blocks of 4 rows by 32
  columns (bt's rows then 32 apart: n32), axpy and axpyt in blocks of 8 rows by 16 features (d a multiple of 16,
  AttentionTileFast16(); else the AVX2 ones run). Every entry is the same ordered sum of FMAs as in the AVX2 kernels,
  so the two give the same bits.
*/
typedef float AttV16 __attribute__((vector_size(64), aligned(4)));

#define ATT_ACC8_ZERO AttV16 e0 = {0}, e1 = {0}, e2 = {0}, e3 = {0}, e4 = {0}, e5 = {0}, e6 = {0}, e7 = {0}
#define ATT_ACC8_FMA(p, v) \
  do {                     \
    e0 += (p)[0] * (v);    \
    e1 += (p)[1] * (v);    \
    e2 += (p)[2] * (v);    \
    e3 += (p)[3] * (v);    \
    e4 += (p)[4] * (v);    \
    e5 += (p)[5] * (v);    \
    e6 += (p)[6] * (v);    \
    e7 += (p)[7] * (v);    \
  } while (0)
#define ATT_ACC8_ROWS              \
  {                                \
    e0, e1, e2, e3, e4, e5, e6, e7 \
  }

static __attribute__((target("avx512f"))) void AttentionTileDotAVX512(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict A, PetscInt lda, const float *restrict Bm, PetscInt ldb, PetscBool add, float *restrict C, PetscInt ldc,
                                                                      float *restrict bt)
{
  const PetscInt n32 = (n + 31) / 32 * 32, nt = ATT_TILE_COLS(n, diag, m); /* columns any row needs */

  for (PetscInt j = 0; j < nt; j++)
    for (PetscInt k = 0; k < d; k++) bt[(size_t)k * n32 + j] = Bm[(size_t)j * ldb + k];
  for (PetscInt k = 0; k < d; k++)
    for (PetscInt j = nt; j < (nt + 31) / 32 * 32; j++) bt[(size_t)k * n32 + j] = 0;
  for (PetscInt i0 = 0; i0 < m; i0 += ATT_TILE_R) {
    const float   *a0 = A + (size_t)i0 * lda, *a1 = A + (size_t)PetscMin(i0 + 1, m - 1) * lda, *a2 = A + (size_t)PetscMin(i0 + 2, m - 1) * lda, *a3 = A + (size_t)PetscMin(i0 + 3, m - 1) * lda;
    const PetscInt jn = ATT_TILE_COLS(n, diag, PetscMin(i0 + ATT_TILE_R, m)); /* the block's rows need columns < jn */
    for (PetscInt j0 = 0; j0 < jn; j0 += 32) {
      const float *b   = bt + j0;
      AttV16       c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};

      for (PetscInt k = 0; k < d; k++, b += n32) {
        const AttV16 b0 = *(const AttV16 *)b, b1 = *(const AttV16 *)(b + 16);
        ATT_ACC_FMA(a0[k], a1[k], a2[k], a3[k], b0, b1);
      }
      {
        const AttV16 acc[ATT_TILE_R][2] = ATT_ACC_ROWS;
        for (PetscInt r = 0; r < ATT_TILE_R && i0 + r < m; r++) {
          float *c = C + (size_t)(i0 + r) * ldc + j0;
          if (j0 + 32 <= n) {
            if (add) {
              *(AttV16 *)c += acc[r][0];
              *(AttV16 *)(c + 16) += acc[r][1];
            } else {
              *(AttV16 *)c        = acc[r][0];
              *(AttV16 *)(c + 16) = acc[r][1];
            }
          } else {
            float t[32];
            *(AttV16 *)t        = acc[r][0];
            *(AttV16 *)(t + 16) = acc[r][1];
            for (PetscInt jj = 0; j0 + jj < n; jj++) c[jj] = (add ? c[jj] : 0) + t[jj];
          }
        }
      }
    }
  }
}

static __attribute__((target("avx512f"))) void AttentionTileAxpyAVX512(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict P, PetscInt ldp, const float *restrict V, PetscInt ldv, float *restrict C, PetscInt ldc)
{
  for (PetscInt i0 = 0; i0 < m; i0 += 8) {
    const float   *pr[8];
    const PetscInt jn = ATT_TILE_COLS(n, diag, PetscMin(i0 + 8, m)); /* P's entries past jn are 0 in these rows */

    for (PetscInt r = 0; r < 8; r++) pr[r] = P + (size_t)PetscMin(i0 + r, m - 1) * ldp;
    for (PetscInt c0 = 0; c0 < d; c0 += 16) {
      const float *v = V + c0;
      ATT_ACC8_ZERO;

      for (PetscInt j = 0; j < jn; j++, v += ldv) {
        const AttV16 v0   = *(const AttV16 *)v;
        const float  p[8] = {pr[0][j], pr[1][j], pr[2][j], pr[3][j], pr[4][j], pr[5][j], pr[6][j], pr[7][j]};
        ATT_ACC8_FMA(p, v0);
      }
      {
        const AttV16 acc[8] = ATT_ACC8_ROWS;
        for (PetscInt r = 0; r < 8 && i0 + r < m; r++) *(AttV16 *)(C + (size_t)(i0 + r) * ldc + c0) += acc[r];
      }
    }
  }
}

static __attribute__((target("avx512f"))) void AttentionTileAxpyTAVX512(PetscInt m, PetscInt n, PetscInt diag, PetscInt d, const float *restrict P, PetscInt ldp, const float *restrict G, PetscInt ldg, float *restrict C, PetscInt ldc)
{
  for (PetscInt j0 = 0; j0 < n; j0 += 8) {
    PetscInt q[8];

    for (PetscInt r = 0; r < 8; r++) q[r] = PetscMin(j0 + r, n - 1);
    for (PetscInt c0 = 0; c0 < d; c0 += 16) {
      const PetscInt i1 = ATT_TILE_ROW0(diag, j0); /* P's entries of rows before i1 are 0 in these columns */
      const float   *g = G + c0 + (size_t)i1 * ldg, *pi = P + (size_t)i1 * ldp;
      ATT_ACC8_ZERO;

      for (PetscInt i = i1; i < m; i++, g += ldg, pi += ldp) {
        const AttV16 g0   = *(const AttV16 *)g;
        const float  p[8] = {pi[q[0]], pi[q[1]], pi[q[2]], pi[q[3]], pi[q[4]], pi[q[5]], pi[q[6]], pi[q[7]]};
        ATT_ACC8_FMA(p, g0);
      }
      {
        const AttV16 acc[8] = ATT_ACC8_ROWS;
        for (PetscInt r = 0; r < 8 && j0 + r < n; r++) *(AttV16 *)(C + (size_t)(j0 + r) * ldc + c0) += acc[r];
      }
    }
  }
}
#define ATT_TILE_HAVE_AVX512 1
#endif

/* whether the kernels above run attention's tile products in float: d a multiple of 8 (axpy's vectors of features) */
static inline PetscBool AttentionTileFast(PetscInt d)
{
  return (PetscBool)(d % 8 == 0);
}

/* whether axpy and axpyt may take the AVX-512 kernels: d a multiple of 16 (their vectors of 16 features) */
static inline PetscBool AttentionTileFast16(PetscInt d)
{
  return (PetscBool)(d % 16 == 0);
}

#if defined(ATT_TILE_HAVE_AVX512)
/* AVX-512 where the CPU has it (for axpy and axpyt when AttentionTileFast16(d): wide16), else AVX2 with FMA, else the
   baseline build's */
#define ATT_TILE_CALL(f, wide16, ...) (__builtin_cpu_supports("avx512f") && (wide16) ? f##AVX512(__VA_ARGS__) : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? f##AVX2(__VA_ARGS__) : f##Base(__VA_ARGS__))
#else
#define ATT_TILE_CALL(f, wide16, ...) f##Base(__VA_ARGS__)
#endif
