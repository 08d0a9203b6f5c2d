/*
  im2col and col2im on output rows [r0, r1), for batch and grid mode (layouts and the geometry in convim2col.h):

    im2col  col[p][g][kd][kh][kw][ci] = x[id][ih][iw][g Cg + ci]   or 0 outside the valid taps
    col2im  dx[id][ih][iw][g Cg + ci] += col[p][g][kd][kh][kw][ci] over the valid taps (the transpose of im2col)

  with p the output point (od, oh, ow) of the rows, id = od step[0] + origin[0] + kd dilation[0] (ih, iw alike). Only
  the valid tap ranges are visited (no per-element bounds tests); with one group and no horizontal dilation, the valid
  part of a kernel row is one contiguous run of (t1 - t0) Cin values in both arrays.
*/
#include "convim2col.h"

/*
  Copies and zeroing of n contiguous scalars: through memcpy/memset (glibc's copies use the widest vectors of the
  machine, the build only SSE2) for the long runs of grid mode's many channels, through a loop for short runs (a
  kernel row of a 1-channel image is 3 values), where the call would cost more than the copy.
*/
#ifndef CONV_MEMCPY_MIN
#define CONV_MEMCPY_MIN 16
#endif

static inline PetscErrorCode ConvCopy(PetscScalar *dst, const PetscScalar *src, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV_MEMCPY_MIN)
    PetscCall(PetscArraycpy(dst, src, n));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = src[i];
  PetscFunctionReturn(0);
}

static inline PetscErrorCode ConvZero(PetscScalar *dst, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV_MEMCPY_MIN)
    PetscCall(PetscArrayzero(dst, n));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = 0.0;
  PetscFunctionReturn(0);
}

/* A 2-D geometry (dims 1 and 2 set): a depth of one output plane, one tap, valid */
void ConvIm2colSetFlatDepth(ConvIm2col *g)
{
  static const PetscInt zero = 0, one = 1;

  g->out[0] = g->k[0] = g->step[0] = g->dilation[0] = 1;
  g->origin[0]                                      = 0;
  g->ld[0]                                          = 0;
  g->t0[0]                                          = &zero;
  g->t1[0]                                          = &one;
}

/* Batch mode: the geometry of a set-up window on samples [D][H][W][Cin] ([H][W][Cin] when the window is 2-D) */
void ConvIm2colSetWindow(ConvIm2col *g, const LayerWindow *win, PetscInt cin, PetscInt cg, PetscInt groups)
{
  LayerWindowVolume v;

  LayerWindowGetVolume(win, &v);
  for (PetscInt d = 0; d < 3; d++) {
    g->out[d]      = v.out[d];
    g->k[d]        = v.k[d];
    g->step[d]     = v.step[d];
    g->dilation[d] = v.dilation[d];
    g->origin[d]   = -v.pad[d];
    g->t0[d]       = v.t0[d];
    g->t1[d]       = v.t1[d];
  }
  g->ld[1]  = v.in[2] * cin;
  g->ld[0]  = v.in[1] * g->ld[1];
  g->cin    = cin;
  g->cg     = cg;
  g->groups = groups;
}

PetscErrorCode ConvIm2colRows(const ConvIm2col *g, PetscInt r0, PetscInt r1, const PetscScalar *x, PetscScalar *col)
{
  const PetscInt  Ho = g->out[1], Wo = g->out[2], KD = g->k[0], KH = g->k[1], KW = g->k[2], cin = g->cin, cg = g->cg, G = g->groups;
  const PetscInt  rowlen = KW * cg, planelen = KH * rowlen, kg = KD * planelen;
  const PetscInt  sd = g->step[0], sh = g->step[1], sw = g->step[2], dd = g->dilation[0], dh = g->dilation[1], dw = g->dilation[2], ldd = g->ld[0], ldh = g->ld[1];
  const PetscBool contiguous = (PetscBool)(G == 1 && dw == 1);

  PetscFunctionBegin;
  for (PetscInt r = r0; r < r1; r++) {
    const PetscInt od = r / Ho, oh = r % Ho;
    const PetscInt d0 = g->t0[0][od], d1 = g->t1[0][od], id = od * sd + g->origin[0];
    const PetscInt h0 = g->t0[1][oh], h1 = g->t1[1][oh], ih = oh * sh + g->origin[1];

    for (PetscInt ow = 0; ow < Wo; ow++, col += G * kg) {
      const PetscInt w0 = g->t0[2][ow], w1 = PetscMax(w0, g->t1[2][ow]), iw = ow * sw + g->origin[2];

      if (contiguous && d0 == 0 && d1 == KD && h0 == 0 && h1 == KH && w0 == 0 && w1 == KW) { /* away from the padding: KD KH runs of KW Cin */
        for (PetscInt kd = 0; kd < KD; kd++)
          for (PetscInt kh = 0; kh < KH; kh++) PetscCall(ConvCopy(col + kd * planelen + kh * rowlen, x + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + iw * cin, rowlen));
        continue;
      }
      for (PetscInt gr = 0; gr < G; gr++) {
        PetscScalar *c = col + gr * kg;

        for (PetscInt kd = 0; kd < KD; kd++) {
          if (kd < d0 || kd >= d1) {
            PetscCall(ConvZero(c, planelen));
            c += planelen;
            continue;
          }
          for (PetscInt kh = 0; kh < KH; kh++, c += rowlen) {
            const PetscScalar *xr;

            if (kh < h0 || kh >= h1) {
              PetscCall(ConvZero(c, rowlen));
              continue;
            }
            xr = x + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + gr * cg;
            for (PetscInt i = 0; i < w0 * cg; i++) c[i] = 0.0;
            if (contiguous)
              PetscCall(ConvCopy(c + w0 * cg, xr + (iw + w0) * cin, (w1 - w0) * cin));
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
  }
  PetscFunctionReturn(0);
}

PetscErrorCode ConvCol2imRowsAdd(const ConvIm2col *g, PetscInt r0, PetscInt r1, const PetscScalar *col, PetscScalar *dx)
{
  const PetscInt  Ho = g->out[1], Wo = g->out[2], KD = g->k[0], KH = g->k[1], KW = g->k[2], cin = g->cin, cg = g->cg, G = g->groups;
  const PetscInt  rowlen = KW * cg, planelen = KH * rowlen, kg = KD * planelen;
  const PetscInt  sd = g->step[0], sh = g->step[1], sw = g->step[2], dd = g->dilation[0], dh = g->dilation[1], dw = g->dilation[2], ldd = g->ld[0], ldh = g->ld[1];
  const PetscBool contiguous = (PetscBool)(G == 1 && dw == 1);

  PetscFunctionBegin;
  for (PetscInt r = r0; r < r1; r++) {
    const PetscInt od = r / Ho, oh = r % Ho;
    const PetscInt d0 = g->t0[0][od], d1 = g->t1[0][od], id = od * sd + g->origin[0];
    const PetscInt h0 = g->t0[1][oh], h1 = g->t1[1][oh], ih = oh * sh + g->origin[1];

    for (PetscInt ow = 0; ow < Wo; ow++, col += G * kg) {
      const PetscInt w0 = g->t0[2][ow], w1 = g->t1[2][ow], iw = ow * sw + g->origin[2];

      for (PetscInt gr = 0; gr < G; gr++) {
        for (PetscInt kd = d0; kd < d1; kd++) {
          for (PetscInt kh = h0; kh < h1; kh++) {
            const PetscScalar *c  = col + gr * kg + kd * planelen + kh * rowlen;
            PetscScalar       *xr = dx + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + gr * cg;

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
  }
  PetscFunctionReturn(0);
}
