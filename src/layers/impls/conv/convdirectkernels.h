/*
  The block kernels of convdirectsingle.c on one vector type, included once per type (as convim2colkernels.h):
    CONV_DIRECT_V        GCC's vector of CONV_DIRECT_W floats (16: one AVX-512 register, two AVX2, four SSE; 8), or
                         float itself (W = 1) for the last channels of a Cout that is not a multiple of 8
    CONV_DIRECT_NV       the most vectors of a block (32 channels: 2 of 16; 1 of 8; 7 floats)
    CONV_DIRECT_NAME(f)  f followed by W
  A block is nv vectors of consecutive output channels (nv known at compile time where the caller inlines a constant),
  whose accumulators stay in registers: written with GCC's vector extensions so that the compiler neither scalarizes
  nor spills them, whatever the clone's instruction set. A scalar times a vector multiplies every lane.
*/

/* loads and stores of a vector at any float address (through pointers: vector arguments would warn of an ABI change
   in the baseline build, though these are always inlined) */
static CONV_DIRECT_INLINE void CONV_DIRECT_NAME(ConvDirectLoad)(CONV_DIRECT_V *v, const float *p)
{
  memcpy(v, p, sizeof(*v));
}

static CONV_DIRECT_INLINE void CONV_DIRECT_NAME(ConvDirectStore)(float *p, const CONV_DIRECT_V *v)
{
  memcpy(p, v, sizeof(*v));
}

/* y[i][block] = b[block] + sum_t x[base + i xstep + xoff[t]] wt[woff[t] + block], i < np consecutive points (y[i] at y + i nout) */
static CONV_DIRECT_INLINE void CONV_DIRECT_NAME(ConvDirectPointsBlock)(PetscInt np, PetscInt nv, PetscInt ntaps, const PetscInt *xoff, const PetscInt *woff, const float *x, PetscInt base, PetscInt xstep, const float *wt, PetscInt nout,
                                                                       const float *b, float *y)
{
  CONV_DIRECT_V acc[CONV_DIRECT_POINTS][CONV_DIRECT_NV];

  for (PetscInt i = 0; i < np; i++)
    for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectLoad)(&acc[i][v], b + v * CONV_DIRECT_W);
  for (PetscInt t = 0; t < ntaps; t++) {
    CONV_DIRECT_V w[CONV_DIRECT_NV];

    for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectLoad)(&w[v], wt + woff[t] + v * CONV_DIRECT_W);
    for (PetscInt i = 0; i < np; i++) {
      const float xv = x[base + i * xstep + xoff[t]];

      for (PetscInt v = 0; v < nv; v++) acc[i][v] += xv * w[v];
    }
  }
  for (PetscInt i = 0; i < np; i++)
    for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectStore)(y + i * nout + v * CONV_DIRECT_W, &acc[i][v]);
}

/* dwt[block] += sum_{ow in [lo, hi)} x[base + ow xstep] dy[ow][block]: one tap over the points of a row */
static CONV_DIRECT_INLINE void CONV_DIRECT_NAME(ConvDirectTapBlock)(PetscInt nv, PetscInt lo, PetscInt hi, const float *x, PetscInt base, PetscInt xstep, const float *dy, PetscInt nout, float *dwt)
{
  CONV_DIRECT_V acc[CONV_DIRECT_NV];

  for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectLoad)(&acc[v], dwt + v * CONV_DIRECT_W);
  for (PetscInt ow = lo; ow < hi; ow++) {
    const float  xv = x[base + ow * xstep];
    const float *d  = dy + (size_t)ow * nout;

    for (PetscInt v = 0; v < nv; v++) {
      CONV_DIRECT_V dv;

      CONV_DIRECT_NAME(ConvDirectLoad)(&dv, d + v * CONV_DIRECT_W);
      acc[v] += xv * dv;
    }
  }
  for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectStore)(dwt + v * CONV_DIRECT_W, &acc[v]);
}

/* db[block] += sum_{ow < Wo} dy[ow][block]: the points of a row */
static CONV_DIRECT_INLINE void CONV_DIRECT_NAME(ConvDirectBiasBlock)(PetscInt nv, PetscInt Wo, const float *dy, PetscInt nout, float *db)
{
  CONV_DIRECT_V acc[CONV_DIRECT_NV];

  for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectLoad)(&acc[v], db + v * CONV_DIRECT_W);
  for (PetscInt ow = 0; ow < Wo; ow++, dy += nout)
    for (PetscInt v = 0; v < nv; v++) {
      CONV_DIRECT_V dv;

      CONV_DIRECT_NAME(ConvDirectLoad)(&dv, dy + v * CONV_DIRECT_W);
      acc[v] += dv;
    }
  for (PetscInt v = 0; v < nv; v++) CONV_DIRECT_NAME(ConvDirectStore)(db + v * CONV_DIRECT_W, &acc[v]);
}
