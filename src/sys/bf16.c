/* Whole arrays of bfloat16 widened and rounded on PetNet's threads (bf16impl.h): elementwise, so the same bits at any
   thread count, in blocks of 16384 entries a thread takes at a time */
#include <petnet/private/bf16impl.h>
#include <petnet/private/threadsimpl.h>

void PetNetBF16Widen(PetscInt N, const uint16_t *b, float *f)
{
  PETNET_THREAD_BLOCKS(N, 16384, for (PetscInt i = i0; i < i1; i++) f[i] = PetNetBF16ToFloat(b[i]));
}

void PetNetBF16Round(PetscInt N, const float *f, uint16_t *b)
{
  PETNET_THREAD_BLOCKS(N, 16384, for (PetscInt i = i0; i < i1; i++) b[i] = PetNetFloatToBF16(f[i]));
}
