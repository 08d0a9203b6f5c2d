/*
  bfloat16, the upper half of an IEEE float (sign, 8-bit exponent, 7-bit significand), held in a uint16_t: widening is
  exact (the half shifted into place), narrowing rounds to nearest, ties to even; a NaN stays a NaN (made quiet). The
  one conversion of PetNet's: the value stores (src/net/netprecision.c), the executors that stream bfloat16
  (netexec.c, netspatial.c), the kernels of the layers that read and write bfloat16 themselves (maxpool) and the
  oneDNN operands (src/sys/onednn.c) round alike, so every path gives the same bits.
*/
#pragma once

#include <petscsys.h>
#include <stdint.h>

static inline float PetNetBF16ToFloat(uint16_t b)
{
  union {
    uint32_t u;
    float    f;
  } c;

  c.u = (uint32_t)b << 16;
  return c.f;
}

static inline uint16_t PetNetFloatToBF16(float f)
{
  union {
    uint32_t u;
    float    f;
  } c;

  c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);
}

/* the two on N entries, on PetNet's threads (src/sys/bf16.c): the same bits at any thread count */
PETSC_INTERN void PetNetBF16Widen(PetscInt, const uint16_t *, float *);
PETSC_INTERN void PetNetBF16Round(PetscInt, const float *, uint16_t *);
/* double to float and to bfloat16 (the float's rounding) in one pass */
PETSC_INTERN void PetNetBF16RoundDouble(PetscInt, const PetscScalar *, float *, uint16_t *);
