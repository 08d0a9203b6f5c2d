/*
  The contraction engine of the einsum kind (einsum.c), shared by its passes: one contraction

    out[o] (=, or += with acc) sum over the letters not in out of  op1[p] op2[q]      (op2 may be absent: a factor 1)

  on n samples, each operand a row-major tensor whose dims are named by letters (op1 "p", op2 "q", out "o"; the batch
  dim is implicit, the slowest of each). A plan says how it runs, chosen at set-up from the letters and sizes alone:

    EINSUM_PERMUTE  one operand whose letters are out's: out = P op1 (permute.h)
    EINSUM_GEMM     two operands in which every letter lies in exactly two or in all three of op1, op2, out:
                      batch letters (in all three), free1 (op1 and out), free2 (op2 and out), contracted (op1 and op2)
                    each operand is permuted (when it is not already) to the canonical form
                      op1' [n][B][I][K]   op2' [n][B][J][K]   out' [n][B][I][J],   out'[i][j] = sum_k op1'[i][k] op2'[j][k]
                    (B, I, J, K the products of the sizes of the batch, free1, free2 and contracted letters), one GEMM
                    per (sample, batch index) group, all groups in one LayerGemmBatched() (float: LayerGemmBatchedSingle(),
                    one oneDNN matmul for them all when the layer's backend says so): out'^T = op2' op1'^T in column-major terms,
                    GEMM('T', 'N', m = J, n = I, k = K, A = op2', lda = K, B = op1', ldb = K, C = out', ldc = J); out' is
                    then permuted to out's order (or is out itself)
    EINSUM_LOOP     anything else (a letter in one operand only, summed or broadcast; an elementwise product): a direct
                    loop over out's entries, each summing over the other letters in a fixed order

  On the native backend every out entry is computed by one thread in an order fixed by the sizes, so the results are the
  same bits for any number of threads (oneDNN's: the same bits for the same threads). Double and float (einsumkernels.h); the caller hands a scratch of EinsumWorkSize() entries.
*/
#pragma once

#include "../permute/permute.h"
#include "../../interface/layergemm.h"

#define EINSUM_MAX_LETTERS (3 * PETNET_MAX_DIM)

typedef enum { EINSUM_PERMUTE, EINSUM_GEMM, EINSUM_LOOP } EinsumPath;

typedef struct {
  EinsumPath path;
  PetscInt   nl;                                                                     /* the letters of the contraction */
  PetscInt   len[EINSUM_MAX_LETTERS];                                                /* their sizes */
  PetscInt   s1[EINSUM_MAX_LETTERS], s2[EINSUM_MAX_LETTERS], so[EINSUM_MAX_LETTERS]; /* their strides in op1, op2, out (0: absent) */
  PetscInt   nout;                                                                   /* letters 0..nout-1 are out's, in out's order */
  PetscInt   size1, size2, sizeo;                                                    /* per-sample sizes (size2 0 without op2) */
  /* EINSUM_PERMUTE and EINSUM_GEMM: each operand's dims and the permutation to its canonical form */
  PetscInt  r1, d1[PETNET_MAX_DIM], p1[PETNET_MAX_DIM];
  PetscInt  r2, d2[PETNET_MAX_DIM], p2[PETNET_MAX_DIM];
  PetscInt  ro, dco[PETNET_MAX_DIM], po[PETNET_MAX_DIM]; /* out' (canonical) dims, and out's dim d = out' dim po[d] */
  PetscBool id1, id2, ido;                               /* the permutation moves nothing */
  PetscInt  nb, ni, nj, nk;                              /* B, I, J, K: the products of the sizes of the batch, free1, free2 and contracted letters */
} EinsumContraction;

/* scratch entries a contraction of n samples needs */
static inline PetscInt64 EinsumWorkSize(const EinsumContraction *c, PetscInt n)
{
  if (c->path != EINSUM_GEMM) return 0;
  return (PetscInt64)n * ((c->id1 ? 0 : c->size1) + (c->id2 ? 0 : c->size2) + (c->ido ? 0 : c->sizeo));
}

/* EinsumContract(c, backend, n, op1, op2 (or NULL), acc, out, work): the backend of its GEMMs (layergemm.h; native in double) */
PETSC_INTERN PetscErrorCode EinsumContract(const EinsumContraction *, PetNetGemmBackend, PetscInt, const PetscScalar *, const PetscScalar *, PetscBool, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode EinsumContractSingle(const EinsumContraction *, PetNetGemmBackend, PetscInt, const float *, const float *, PetscBool, float *, float *);
