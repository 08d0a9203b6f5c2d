/*
  Direct convolution in single precision (batch mode, one group) for few inputs per output: taps Cin <= the layer's
  -conv<N>d_single_direct_max_k (default CONV_DIRECT_DEFAULT_K), where im2col + sgemm (convbatch.c on float) spends its
  time writing and reading the columns and y, its GEMMs having an inner dimension of only taps Cin (9 on a 1-channel
  image). Layouts (conv.h; the geometry, with the zero padding as valid tap ranges, is batch mode's ConvIm2col):

    x    [n][D][H][W][Cin]         y, dy  [n][Do][Ho][Wo][Cout]        (D = Do = 1 in 2-D)
    wt   [Kg][Cout]                W^T in float (ConvWorkSingle.wt: forward's float(W), transposed), Kg = KD KH KW Cin
    dwt  [Kg][Cout]                one chunk's dW^T in float;  db [Cout] its bias gradient in float

  Tap j = ((kd KH + kh) KW + kw) Cin + c of output point p = (od, oh, ow) reads x at
      off(p) + off[j],  off(p) = (od sd - pd) H W Cin + (oh sh - ph) W Cin + (ow sw - pw) Cin,
                        off[j] = kd dd H W Cin + kh dh W Cin + kw dw Cin + c
  when its (kd, kh, kw) is inside the valid ranges of p (convim2col.h), else zero (the tap is skipped).

    forward   y[p][o]  = b[o] + sum_{valid j} x[off(p) + off[j]] wt[j][o]         (output point by point)
    weights   dwt[j][o] = sum_{rows r of the chunk} sum_{valid ow of r} x[off(p) + off[j]] dy[p][o]
              db[o]     = sum_{rows r} sum_{ow} dy[p][o]

  Both are vectorized over the output channels o, in blocks whose accumulators stay in registers
  (convdirectkernels.h, GCC's vector extensions): 32 channels as two vectors of 16 floats (one AVX-512 register each,
  two AVX2 ones), then a block of 16, one of 8 and the last Cout mod 8 channels as floats. Forward computes
  CONV_DIRECT_POINTS neighbouring points of a row at once, sharing each weight vector; the points with taps in the
  padding have their own shorter list of taps. The weight gradient walks each output row once per tap over the points
  where that tap is valid (a contiguous range of ow), with the tap's block of dwt in registers and the row's dy in L1.
  The functions are compiled for AVX-512 and AVX2 too and picked at load time (GCC's target_clones; the baseline build
  targets x86-64-v2) with fp-contract=off, so that every product and sum is rounded as the baseline code rounds it, and
  without unroll-and-jam (which scalarized the accumulators of the plain loops this file first had).
  Each result is one fixed sequence of float operations, independent of the threads: forward sums the taps in order j;
  the weight gradient sums a chunk's rows in order, each row's points in order, and returns the chunk's float sums for
  the caller to add into its part's double accumulators (as the GEMM's chunk products are). dx (when asked) and jvp
  stay with im2col + sgemm (convbatchkernels.h).
*/
#include "conv.h"
#include <string.h>

#define CONV_DIRECT_POINTS 2 /* points of a row computed together */

/*
  CALL(o0, W, nv) on the blocks [o0, o0 + nv W) of nout output channels: nv = 2 vectors of W = 16 floats while they
  last, then one of 16, one of 8, and the rest as nv floats (W = 1)
*/
#define CONV_DIRECT_BLOCKS(nout, CALL)                                                   \
  do {                                                                                   \
    PetscInt o0_ = 0;                                                                    \
    for (; o0_ + 32 <= (nout); o0_ += 32) CALL(o0_, 16, 2);                              \
    if (o0_ + 16 <= (nout)) {                                                            \
      CALL(o0_, 16, 1);                                                                  \
      o0_ += 16;                                                                         \
    }                                                                                    \
    if (o0_ + 8 <= (nout)) {                                                             \
      CALL(o0_, 8, 1);                                                                   \
      o0_ += 8;                                                                          \
    }                                                                                    \
    switch ((nout)-o0_) { /* a constant count, so that the accumulators are registers */ \
    case 7:                                                                              \
      CALL(o0_, 1, 7);                                                                   \
      break;                                                                             \
    case 6:                                                                              \
      CALL(o0_, 1, 6);                                                                   \
      break;                                                                             \
    case 5:                                                                              \
      CALL(o0_, 1, 5);                                                                   \
      break;                                                                             \
    case 4:                                                                              \
      CALL(o0_, 1, 4);                                                                   \
      break;                                                                             \
    case 3:                                                                              \
      CALL(o0_, 1, 3);                                                                   \
      break;                                                                             \
    case 2:                                                                              \
      CALL(o0_, 1, 2);                                                                   \
      break;                                                                             \
    case 1:                                                                              \
      CALL(o0_, 1, 1);                                                                   \
      break;                                                                             \
    }                                                                                    \
  } while (0)

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CONV_DIRECT_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off", "no-loop-unroll-and-jam")))
#define CONV_DIRECT_INLINE        inline __attribute__((always_inline))
#else
#define CONV_DIRECT_TARGET_CLONES
#define CONV_DIRECT_INLINE inline
#endif

/* the block kernels on vectors of 16 and 8 floats and on floats (convdirectkernels.h) */
typedef float ConvDirectVec16 __attribute__((vector_size(16 * sizeof(float))));
typedef float ConvDirectVec8 __attribute__((vector_size(8 * sizeof(float))));
#define CONV_DIRECT_V       ConvDirectVec16
#define CONV_DIRECT_W       16
#define CONV_DIRECT_NV      2
#define CONV_DIRECT_NAME(f) f##16
#include "convdirectkernels.h"
#undef CONV_DIRECT_V
#undef CONV_DIRECT_W
#undef CONV_DIRECT_NV
#undef CONV_DIRECT_NAME
#define CONV_DIRECT_V       ConvDirectVec8
#define CONV_DIRECT_W       8
#define CONV_DIRECT_NV      1
#define CONV_DIRECT_NAME(f) f##8
#include "convdirectkernels.h"
#undef CONV_DIRECT_V
#undef CONV_DIRECT_W
#undef CONV_DIRECT_NV
#undef CONV_DIRECT_NAME
#define CONV_DIRECT_V       float
#define CONV_DIRECT_W       1
#define CONV_DIRECT_NV      7
#define CONV_DIRECT_NAME(f) f##1
#include "convdirectkernels.h"
#undef CONV_DIRECT_V
#undef CONV_DIRECT_W
#undef CONV_DIRECT_NV
#undef CONV_DIRECT_NAME

/* Whether the float kernels of this layer are the direct ones */
PetscBool ConvDirectSingle(const LayerConv *conv)
{
  return (PetscBool)(conv->groups == 1 && !conv->pointwise && conv->kg <= conv->directmaxk);
}

/* off[j] of every tap (header), and the valid columns [wlo[kw], whi[kw]) of each horizontal tap kw */
static void ConvDirectOffsets(const ConvIm2col *g, PetscInt off[], PetscInt wlo[], PetscInt whi[])
{
  const PetscInt KD = g->k[0], KH = g->k[1], KW = g->k[2], cin = g->cin, Wo = g->out[2];
  PetscInt       j = 0;

  for (PetscInt kd = 0; kd < KD; kd++)
    for (PetscInt kh = 0; kh < KH; kh++)
      for (PetscInt kw = 0; kw < KW; kw++)
        for (PetscInt c = 0; c < cin; c++) off[j++] = kd * g->dilation[0] * g->ld[0] + kh * g->dilation[1] * g->ld[1] + kw * g->dilation[2] * cin + c;
  for (PetscInt kw = 0; kw < KW; kw++) {
    wlo[kw] = whi[kw] = 0;
    for (PetscInt ow = 0; ow < Wo; ow++) {
      if (kw < g->t0[2][ow] || kw >= g->t1[2][ow]) continue;
      if (whi[kw] == 0) wlo[kw] = ow;
      whi[kw] = ow + 1;
    }
  }
}

/* np points of a row from base (y at the first), all blocks of output channels */
static CONV_DIRECT_INLINE void ConvDirectPoints(PetscInt np, PetscInt ntaps, const PetscInt *xoff, const PetscInt *woff, const float *x, PetscInt base, PetscInt xstep, const float *wt, PetscInt nout, const float *b, float *y)
{
#define CONV_DIRECT_POINTS_BLOCK(o0, W, nv) ConvDirectPointsBlock##W(np, nv, ntaps, xoff, woff, x, base, xstep, wt + o0, nout, b + o0, y + o0)
  CONV_DIRECT_BLOCKS(nout, CONV_DIRECT_POINTS_BLOCK);
#undef CONV_DIRECT_POINTS_BLOCK
}

/* the valid taps (kd, kh, kw, c) of the ranges given, in order j: their offsets in x (off[j]) and in wt (j Cout) */
static PetscInt ConvDirectTaps(const ConvIm2col *g, const PetscInt *off, PetscInt nout, PetscInt d0, PetscInt d1, PetscInt h0, PetscInt h1, PetscInt w0, PetscInt w1, PetscInt *xoff, PetscInt *woff)
{
  const PetscInt KH = g->k[1], KW = g->k[2], cin = g->cin;
  PetscInt       n = 0;

  for (PetscInt kd = d0; kd < d1; kd++)
    for (PetscInt kh = h0; kh < h1; kh++)
      for (PetscInt kw = w0; kw < w1; kw++)
        for (PetscInt c = 0; c < cin; c++, n++) {
          const PetscInt j = ((kd * KH + kh) * KW + kw) * cin + c;

          xoff[n] = off[j];
          woff[n] = j * nout;
        }
  return n;
}

/*
  y of the rows [r0, r1) of one sample x (y at the first of them). A row's points whose horizontal taps are all valid
  (columns [wlo, whi) of the window, ConvDirectOffsets()) share the row's list of taps and go CONV_DIRECT_POINTS at a
  time; the others each have their own list.
*/
static CONV_DIRECT_TARGET_CLONES void ConvDirectOutputRows(const ConvIm2col *g, const PetscInt *off, PetscInt wlo, PetscInt whi, PetscInt r0, PetscInt r1, const float *x, const float *wt, const float *b, PetscInt nout, float *y)
{
  const PetscInt Ho = g->out[1], Wo = g->out[2], KW = g->k[2], cin = g->cin, xstep = g->step[2] * cin;
  PetscInt       rxoff[CONV_DIRECT_MAX_K], rwoff[CONV_DIRECT_MAX_K], pxoff[CONV_DIRECT_MAX_K], pwoff[CONV_DIRECT_MAX_K];

  for (PetscInt r = r0; r < r1; r++) {
    const PetscInt od = r / Ho, oh = r % Ho;
    const PetscInt d0 = g->t0[0][od], d1 = g->t1[0][od], h0 = g->t0[1][oh], h1 = g->t1[1][oh];
    const PetscInt rowbase = (od * g->step[0] + g->origin[0]) * g->ld[0] + (oh * g->step[1] + g->origin[1]) * g->ld[1] + g->origin[2] * cin;
    const PetscInt nrow    = ConvDirectTaps(g, off, nout, d0, d1, h0, h1, 0, KW, rxoff, rwoff);
    PetscInt       ow      = 0;

    for (; ow < Wo; ow++) { /* the points with taps in the padding on the left (and, in a narrow row, on both sides) */
      PetscInt np;

      if (ow >= wlo && ow < whi) break;
      np = ConvDirectTaps(g, off, nout, d0, d1, h0, h1, g->t0[2][ow], g->t1[2][ow], pxoff, pwoff);
      ConvDirectPoints(1, np, pxoff, pwoff, x, rowbase + ow * xstep, xstep, wt, nout, b, y + (size_t)ow * nout);
    }
    for (; ow + CONV_DIRECT_POINTS <= whi; ow += CONV_DIRECT_POINTS) ConvDirectPoints(CONV_DIRECT_POINTS, nrow, rxoff, rwoff, x, rowbase + ow * xstep, xstep, wt, nout, b, y + (size_t)ow * nout);
    for (; ow < whi; ow++) ConvDirectPoints(1, nrow, rxoff, rwoff, x, rowbase + ow * xstep, xstep, wt, nout, b, y + (size_t)ow * nout);
    for (; ow < Wo; ow++) { /* on the right */
      const PetscInt np = ConvDirectTaps(g, off, nout, d0, d1, h0, h1, g->t0[2][ow], g->t1[2][ow], pxoff, pwoff);

      ConvDirectPoints(1, np, pxoff, pwoff, x, rowbase + ow * xstep, xstep, wt, nout, b, y + (size_t)ow * nout);
    }
    y += (size_t)Wo * nout;
  }
}

/* dwt += the rows [r0, r1) of one sample x against dy (at the first of them), tap by tap; db += their dy if db */
static CONV_DIRECT_TARGET_CLONES void ConvDirectWeightRows(const ConvIm2col *g, const PetscInt *off, const PetscInt *wlo, const PetscInt *whi, PetscInt r0, PetscInt r1, const float *x, const float *dy, PetscInt nout, float *dwt, float *db)
{
  const PetscInt Ho = g->out[1], Wo = g->out[2], KH = g->k[1], KW = g->k[2], cin = g->cin, xstep = g->step[2] * cin;

  for (PetscInt r = r0; r < r1; r++, dy += (size_t)Wo * nout) {
    const PetscInt od = r / Ho, oh = r % Ho;
    const PetscInt d0 = g->t0[0][od], d1 = g->t1[0][od], h0 = g->t0[1][oh], h1 = g->t1[1][oh];
    const PetscInt rowbase = (od * g->step[0] + g->origin[0]) * g->ld[0] + (oh * g->step[1] + g->origin[1]) * g->ld[1] + g->origin[2] * cin;

    for (PetscInt kd = d0; kd < d1; kd++)
      for (PetscInt kh = h0; kh < h1; kh++)
        for (PetscInt kw = 0; kw < KW; kw++) {
          const PetscInt lo = wlo[kw], hi = whi[kw];

          for (PetscInt c = 0; c < cin; c++) {
            const PetscInt j = ((kd * KH + kh) * KW + kw) * cin + c;

#define CONV_DIRECT_TAP_BLOCK(o0, W, nv) ConvDirectTapBlock##W(nv, lo, hi, x, rowbase + off[j], xstep, dy + o0, nout, dwt + (size_t)j * nout + o0)
            CONV_DIRECT_BLOCKS(nout, CONV_DIRECT_TAP_BLOCK);
#undef CONV_DIRECT_TAP_BLOCK
          }
        }
    if (db) {
#define CONV_DIRECT_BIAS_BLOCK(o0, W, nv) ConvDirectBiasBlock##W(nv, Wo, dy + o0, nout, db + o0)
      CONV_DIRECT_BLOCKS(nout, CONV_DIRECT_BIAS_BLOCK);
#undef CONV_DIRECT_BIAS_BLOCK
    }
  }
}

/*
  y of the batch's output rows [R0, R1) (y at the first of them; rows numbered as in convbatch.c), from x, wt [Kg][Cout]
  and b [Cout] in float (zeros without a bias)
*/
PetscErrorCode ConvDirectOutputSingle_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const float *x, const float *wt, const float *b, float *y)
{
  const ConvIm2col *g    = &conv->im2col;
  const PetscInt    rows = conv->rows;
  PetscInt          off[CONV_DIRECT_MAX_K], wlo[CONV_DIRECT_MAX_K], whi[CONV_DIRECT_MAX_K], lo = 0, hi = g->out[2];

  PetscFunctionBegin;
  if (conv->kg > CONV_DIRECT_MAX_K) PetscFunctionReturn(PETSC_ERR_PLIB); /* kept within by ConvDirectSingle() and the option's check; called in a thread: no PetscCheck */
  ConvDirectOffsets(g, off, wlo, whi);
  for (PetscInt kw = 0; kw < g->k[2]; kw++) { /* the columns whose horizontal taps are all valid */
    lo = PetscMax(lo, wlo[kw]);
    hi = PetscMin(hi, whi[kw]);
  }
  if (hi <= lo) lo = hi = 0;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    ConvDirectOutputRows(g, off, lo, hi, r0, r1, x + (size_t)s * insize, wt, b, conv->nout, y);
    y += (size_t)(r1 - r0) * g->out[2] * conv->nout;
  }
  PetscFunctionReturn(0);
}

/* dwt [Kg][Cout] = the weight gradient of the batch's output rows [R0, R1) (dy at the first of them), db [Cout] = the sum of their dy if db; overwritten */
PetscErrorCode ConvDirectWeightsSingle_Batch(const LayerConv *conv, PetscInt insize, PetscInt R0, PetscInt R1, const float *x, const float *dy, float *dwt, float *db)
{
  const ConvIm2col *g    = &conv->im2col;
  const PetscInt    rows = conv->rows;
  PetscInt          off[CONV_DIRECT_MAX_K], wlo[CONV_DIRECT_MAX_K], whi[CONV_DIRECT_MAX_K];

  PetscFunctionBegin;
  if (conv->kg > CONV_DIRECT_MAX_K) PetscFunctionReturn(PETSC_ERR_PLIB); /* kept within by ConvDirectSingle() and the option's check; called in a thread: no PetscCheck */
  ConvDirectOffsets(g, off, wlo, whi);
  for (PetscInt i = 0; i < conv->kg * conv->nout; i++) dwt[i] = 0.0f;
  if (db)
    for (PetscInt o = 0; o < conv->nout; o++) db[o] = 0.0f;
  for (PetscInt s = R0 / rows; s * rows < R1; s++) {
    const PetscInt r0 = PetscMax(R0 - s * rows, 0), r1 = PetscMin(R1 - s * rows, rows);

    ConvDirectWeightRows(g, off, wlo, whi, r0, r1, x + (size_t)s * insize, dy, conv->nout, dwt, db);
    dy += (size_t)(r1 - r0) * g->out[2] * conv->nout;
  }
  PetscFunctionReturn(0);
}
