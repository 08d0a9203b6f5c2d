/*
  The kernels of convim2col.c on one element type, included once per type (PETSc's way of templating in C):
    CONV_IM2COL_T        the element type: PetscScalar (batch and grid mode) or float (single precision, batch mode)
    CONV_IM2COL_NAME(f)  the name of f for that type: f itself, or fSingle
  Same loops, same order for both types: the float kernels move the same entries as the double ones.
*/
static inline PetscErrorCode CONV_IM2COL_NAME(ConvCopy)(CONV_IM2COL_T *dst, const CONV_IM2COL_T *src, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV_MEMCPY_MIN)
    PetscCall(PetscMemcpy(dst, src, (size_t)n * sizeof(*dst)));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = src[i];
  PetscFunctionReturn(0);
}

static inline PetscErrorCode CONV_IM2COL_NAME(ConvZero)(CONV_IM2COL_T *dst, PetscInt n)
{
  PetscFunctionBegin;
  if (n >= CONV_MEMCPY_MIN)
    PetscCall(PetscMemzero(dst, (size_t)n * sizeof(*dst)));
  else
    for (PetscInt i = 0; i < n; i++) dst[i] = 0.0;
  PetscFunctionReturn(0);
}

PetscErrorCode CONV_IM2COL_NAME(ConvIm2colRows)(const ConvIm2col *g, PetscInt r0, PetscInt r1, const CONV_IM2COL_T *x, CONV_IM2COL_T *col)
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
          for (PetscInt kh = 0; kh < KH; kh++) PetscCall(CONV_IM2COL_NAME(ConvCopy)(col + kd * planelen + kh * rowlen, x + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + iw * cin, rowlen));
        continue;
      }
      for (PetscInt gr = 0; gr < G; gr++) {
        CONV_IM2COL_T *c = col + gr * kg;

        for (PetscInt kd = 0; kd < KD; kd++) {
          if (kd < d0 || kd >= d1) {
            PetscCall(CONV_IM2COL_NAME(ConvZero)(c, planelen));
            c += planelen;
            continue;
          }
          for (PetscInt kh = 0; kh < KH; kh++, c += rowlen) {
            const CONV_IM2COL_T *xr;

            if (kh < h0 || kh >= h1) {
              PetscCall(CONV_IM2COL_NAME(ConvZero)(c, rowlen));
              continue;
            }
            xr = x + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + gr * cg;
            for (PetscInt i = 0; i < w0 * cg; i++) c[i] = 0.0;
            if (contiguous)
              PetscCall(CONV_IM2COL_NAME(ConvCopy)(c + w0 * cg, xr + (iw + w0) * cin, (w1 - w0) * cin));
            else {
              for (PetscInt kw = w0; kw < w1; kw++) {
                const CONV_IM2COL_T *src = xr + (iw + kw * dw) * cin;
                CONV_IM2COL_T       *dst = c + kw * cg;

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

PetscErrorCode CONV_IM2COL_NAME(ConvCol2imRowsAdd)(const ConvIm2col *g, PetscInt r0, PetscInt r1, const CONV_IM2COL_T *col, CONV_IM2COL_T *dx)
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
            const CONV_IM2COL_T *c  = col + gr * kg + kd * planelen + kh * rowlen;
            CONV_IM2COL_T       *xr = dx + (id + kd * dd) * ldd + (ih + kh * dh) * ldh + gr * cg;

            if (contiguous) {
              const CONV_IM2COL_T *src = c + w0 * cg;
              CONV_IM2COL_T       *dst = xr + (iw + w0) * cin;

              for (PetscInt i = 0; i < (w1 - w0) * cin; i++) dst[i] += src[i];
            } else {
              for (PetscInt kw = w0; kw < w1; kw++) {
                const CONV_IM2COL_T *src = c + kw * cg;
                CONV_IM2COL_T       *dst = xr + (iw + kw * dw) * cin;

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
