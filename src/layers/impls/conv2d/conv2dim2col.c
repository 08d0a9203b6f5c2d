/*
  im2col and col2im on output rows [r0, r1), for batch and grid mode (layouts and the geometry in conv2dim2col.h):

    im2col  col[p][g][kh][kw][ci] = x[ih][iw][g Cg + ci]   or 0 outside the valid taps
    col2im  dx[ih][iw][g Cg + ci] += col[p][g][kh][kw][ci] over the valid taps (the transpose of im2col)

  with p = (oh - r0) out[1] + ow, ih = oh step[0] + origin[0] + kh dilation[0], iw = ow step[1] + origin[1] + kw
  dilation[1]. Only the valid tap ranges are visited (no per-element bounds tests); with one group and no horizontal
  dilation, the valid part of a kernel row is one contiguous run of (t1 - t0) Cin values in both arrays.
*/
#include "conv2dim2col.h"

/*
  Copies and zeroing of n contiguous scalars: through memcpy/memset (glibc's copies use the widest vectors of the
  machine, the build only SSE2) for the long runs of grid mode's many channels, through a loop for short runs (a
  kernel row of a 1-channel image is 3 values), where the call would cost more than the copy.
*/
#ifndef CONV2D_MEMCPY_MIN
#define CONV2D_MEMCPY_MIN 16
#endif

static inline PetscErrorCode Conv2dCopy(PetscScalar *dst, const PetscScalar *src, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV2D_MEMCPY_MIN)
    PetscCall(PetscArraycpy(dst, src, n));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = src[i];
  PetscFunctionReturn(0);
}

static inline PetscErrorCode Conv2dZero(PetscScalar *dst, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV2D_MEMCPY_MIN)
    PetscCall(PetscArrayzero(dst, n));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = 0.0;
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dIm2colRows(const Conv2dIm2col *g, PetscInt r0, PetscInt r1, const PetscScalar *x, PetscScalar *col)
{
  const PetscInt  Wo = g->out[1], KH = g->k[0], KW = g->k[1], cin = g->cin, cg = g->cg, G = g->groups, kg = KH * KW * cg, rowlen = KW * cg;
  const PetscInt  sh = g->step[0], sw = g->step[1], dh = g->dilation[0], dw = g->dilation[1], ld = g->ld;
  const PetscBool contiguous = (PetscBool)(G == 1 && dw == 1);

  PetscFunctionBegin;
  for (PetscInt oh = r0; oh < r1; oh++) {
    const PetscInt h0 = g->t0[0][oh], h1 = g->t1[0][oh], ih = oh * sh + g->origin[0];

    for (PetscInt ow = 0; ow < Wo; ow++, col += G * kg) {
      const PetscInt w0 = g->t0[1][ow], w1 = PetscMax(w0, g->t1[1][ow]), iw = ow * sw + g->origin[1];

      if (contiguous && h0 == 0 && h1 == KH && w0 == 0 && w1 == KW) { /* away from the padding: KH runs of KW Cin */
        for (PetscInt kh = 0; kh < KH; kh++) PetscCall(Conv2dCopy(col + kh * rowlen, x + (ih + kh * dh) * ld + iw * cin, rowlen));
        continue;
      }
      for (PetscInt gr = 0; gr < G; gr++) {
        PetscScalar *c = col + gr * kg;

        for (PetscInt kh = 0; kh < KH; kh++, c += rowlen) {
          const PetscScalar *xr;

          if (kh < h0 || kh >= h1) {
            PetscCall(Conv2dZero(c, rowlen));
            continue;
          }
          xr = x + (ih + kh * dh) * ld + gr * cg;
          for (PetscInt i = 0; i < w0 * cg; i++) c[i] = 0.0;
          if (contiguous)
            PetscCall(Conv2dCopy(c + w0 * cg, xr + (iw + w0) * cin, (w1 - w0) * cin));
          else {
            for (PetscInt kw = w0; kw < w1; kw++) {
              const PetscScalar *src = xr + (iw + kw * dw) * cin;
              PetscScalar       *dst = c + kw * cg;

              for (PetscInt ci = 0; ci < cg; ci++) dst[ci] = src[ci];
            }
          }
          for (PetscInt i = w1 * cg; i < rowlen; i++) c[i] = 0.0;
        }
      }
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode Conv2dCol2imRowsAdd(const Conv2dIm2col *g, PetscInt r0, PetscInt r1, const PetscScalar *col, PetscScalar *dx)
{
  const PetscInt  Wo = g->out[1], KH = g->k[0], KW = g->k[1], cin = g->cin, cg = g->cg, G = g->groups, kg = KH * KW * cg, rowlen = KW * cg;
  const PetscInt  sh = g->step[0], sw = g->step[1], dh = g->dilation[0], dw = g->dilation[1], ld = g->ld;
  const PetscBool contiguous = (PetscBool)(G == 1 && dw == 1);

  PetscFunctionBegin;
  for (PetscInt oh = r0; oh < r1; oh++) {
    const PetscInt h0 = g->t0[0][oh], h1 = g->t1[0][oh], ih = oh * sh + g->origin[0];

    for (PetscInt ow = 0; ow < Wo; ow++, col += G * kg) {
      const PetscInt w0 = g->t0[1][ow], w1 = g->t1[1][ow], iw = ow * sw + g->origin[1];

      for (PetscInt gr = 0; gr < G; gr++) {
        for (PetscInt kh = h0; kh < h1; kh++) {
          const PetscScalar *c  = col + gr * kg + kh * rowlen;
          PetscScalar       *xr = dx + (ih + kh * dh) * ld + gr * cg;

          if (contiguous) {
            const PetscScalar *src = c + w0 * cg;
            PetscScalar       *dst = xr + (iw + w0) * cin;

            for (PetscInt i = 0; i < (w1 - w0) * cin; i++) dst[i] += src[i];
          } else {
            for (PetscInt kw = w0; kw < w1; kw++) {
              const PetscScalar *src = c + kw * cg;
              PetscScalar       *dst = xr + (iw + kw * dw) * cin;

              for (PetscInt ci = 0; ci < cg; ci++) dst[ci] += src[ci];
            }
          }
        }
      }
    }
  }
  PetscFunctionReturn(0);
}
