/*
  attention:H[:causal]:rotary: rotary positions (RoPE, Su et al., RoFormer) on one element type, included once per type by
  attention.c before attentionkernels.h (ATT_T, ATT_NAME as there).

  Pairs: the GPT-NeoX / Hugging Face Llama convention, the halves of a head: feature i is paired with i + d/2
  (i = 0..d/2-1), not RoFormer's interleaved (2i, 2i+1). Both are the same model up to a fixed permutation of each head's
  rows of in_proj_weight; the halves give contiguous runs of d/2 (vectorisable) and are what PyTorch code written after
  GPT-NeoX uses (share/python/petnet_torch.py's rotate_half). For the token at global position t and pair i, with
  angle a = t base^(-2i/d) (base: -attention_rotary_base, 10000):
    x'_i       = x_i cos a - x_{i+d/2} sin a             R(t), orthogonal: R^T = R(-t)
    x'_{i+d/2} = x_i sin a + x_{i+d/2} cos a
  applied to each head's q and k after the projection (s_ij = q'_i . k'_j / sqrt(d) depends on i - j only). The
  rotation is linear and does not depend on the values, so the derivatives are R itself: forward and its recomputation
  rotate Q and K, jvp rotates their tangents, backward and the second-order adjoint apply R^T to dQ and dK (and dQ', dK')
  after the kernels. cos a and sin a come from a table [T][d/2][2] computed in double at set-up (rounded once to float
  for single precision), so a row at global position t reads entry t whatever rank or query block computes it.
*/

/*
  R(t0 + r) (R^T when transpose) on each row r = 0..nr-1 of each of n samples, in place: row r of sample s starts at
  X + s sstride + r ld and holds nh heads of d features side by side (Q and K of a row of QKV: nh = 2 H, contiguous).
  t0 is the global position of row 0: 0 for a whole sequence, q0 for the query rows of a block of them.
*/
static void ATT_NAME(AttentionRotate)(const Layer_Attention *att, PetscInt n, PetscInt nr, PetscInt t0, size_t sstride, PetscInt ld, PetscInt nh, PetscBool transpose, ATT_T *X)
{
  const PetscInt half = att->d / 2, d = att->d;
  const ATT_T   *table = (const ATT_T *)ATT_NAME(AttentionRotaryTable)(att);
  const ATT_T    sign  = transpose ? -1 : 1;

  for (PetscInt s = 0; s < n; s++)
    for (PetscInt r = 0; r < nr; r++) {
      const ATT_T *cs  = table + (size_t)(t0 + r) * 2 * half; /* cos, sin of the pairs at this position */
      ATT_T       *row = X + (size_t)s * sstride + (size_t)r * ld;

      for (PetscInt h = 0; h < nh; h++) {
        ATT_T *lo = row + (size_t)h * d, *hi = lo + half;

        for (PetscInt i = 0; i < half; i++) {
          const ATT_T c = cs[2 * i], sn = sign * cs[2 * i + 1], a = lo[i], b = hi[i];

          lo[i] = a * c - b * sn;
          hi[i] = a * sn + b * c;
        }
      }
    }
}

/* R (or R^T) on the Q rows of a query block (q [n nq][Ew], from global position q0) and the K columns of every row
   (kv [n T][2Ew], K then V), as laid out by AttentionProject() (the state, its tangents, its cotangents); nothing
   without rotary positions */
static void ATT_NAME(AttentionRotateQK)(const Layer_Attention *att, PetscInt n, PetscBool transpose, ATT_T *q, ATT_T *kv)
{
  if (!att->rotary || !n) return;
  ATT_NAME(AttentionRotate)(att, n, att->nq, att->q0, (size_t)att->nq * att->Ew, att->Ew, att->H, transpose, q);
  ATT_NAME(AttentionRotate)(att, n, att->T, 0, (size_t)att->T * 2 * att->Ew, 2 * att->Ew, att->H, transpose, kv);
}
