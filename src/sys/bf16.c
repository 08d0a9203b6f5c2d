/* Whole arrays of bfloat16 widened and rounded on PetNet's threads (bf16impl.h): elementwise, so the same bits at any
   thread count, in blocks of 16384 entries a thread takes at a time. Each block's loop is compiled also for AVX-512
   and AVX2, picked at load time: integer shifts and adds and IEEE conversions give the same bits in any width. */
#include <petnet/private/bf16impl.h>
#include <petnet/private/threadsimpl.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define PETNET_BF16_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PETNET_BF16_CLONES
#endif

static PETNET_BF16_CLONES void BF16WidenBlock(PetscInt n, const uint16_t *restrict b, float *restrict f)
{
  for (PetscInt i = 0; i < n; i++) f[i] = PetNetBF16ToFloat(b[i]);
}

static PETNET_BF16_CLONES void BF16RoundBlock(PetscInt n, const float *restrict f, uint16_t *restrict b)
{
  for (PetscInt i = 0; i < n; i++) b[i] = PetNetFloatToBF16(f[i]);
}

static PETNET_BF16_CLONES void BF16RoundDoubleBlock(PetscInt n, const PetscScalar *restrict d, float *restrict f, uint16_t *restrict b)
{
  for (PetscInt i = 0; i < n; i++) {
    f[i] = (float)d[i];
    b[i] = PetNetFloatToBF16(f[i]);
  }
}

void PetNetBF16Widen(PetscInt N, const uint16_t *b, float *f)
{
  PETNET_THREAD_BLOCKS(N, 16384, BF16WidenBlock(i1 - i0, b + i0, f + i0));
}

void PetNetBF16Round(PetscInt N, const float *f, uint16_t *b)
{
  PETNET_THREAD_BLOCKS(N, 16384, BF16RoundBlock(i1 - i0, f + i0, b + i0));
}

/* f = d rounded to float, and b = f rounded to bfloat16, in one pass (a layer's parameters at bfloat16) */
void PetNetBF16RoundDouble(PetscInt N, const PetscScalar *d, float *f, uint16_t *b)
{
  PETNET_THREAD_BLOCKS(N, 16384, BF16RoundDoubleBlock(i1 - i0, d + i0, f + i0, b + i0));
}
