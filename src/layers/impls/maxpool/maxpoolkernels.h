/*
  maxpool's forward loop nest on one element type, included once per type by maxpool.c:
    MAXPOOL_T        PetscScalar or float
    MAXPOOL_NAME(f)  f or fSingle
  The same loops and comparisons for both: on the same values (a float is exactly a double) the float kernel picks the
  same argmax, ties included (the first maximum in window order).
*/
static void MAXPOOL_NAME(MaxPoolForwardKernel)(const LayerWindowVolume *vol, PetscInt n, PetscInt C, PetscInt outsize, const MAXPOOL_T *x, MAXPOOL_T *y, PetscInt *argmax)
{
  const LayerWindowVolume v = *vol;
  const PetscInt          D = v.in[0], H = v.in[1], W = v.in[2];

#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if (n > 1 && n * outsize > 4096)
  for (PetscInt s = 0; s < n; s++) {
    MAXPOOL_T *ys = y + (size_t)s * outsize;
    PetscInt  *as = argmax + (size_t)s * outsize;

    for (PetscInt od = 0; od < v.out[0]; od++) {
      const PetscInt d0 = v.t0[0][od], d1 = v.t1[0][od], id = od * v.step[0] - v.pad[0];

      for (PetscInt oh = 0; oh < v.out[1]; oh++) {
        const PetscInt h0 = v.t0[1][oh], h1 = v.t1[1][oh], ih = oh * v.step[1] - v.pad[1];

        for (PetscInt ow = 0; ow < v.out[2]; ow++, ys += C, as += C) {
          const PetscInt w0 = v.t0[2][ow], w1 = v.t1[2][ow], iw = ow * v.step[2] - v.pad[2];
          const PetscInt first = (((s * D + id + d0) * H + ih + h0) * W + iw + w0) * C;

          /* no window is all padding (padding <= kernel/2), so the first valid tap starts the maximum */
          for (PetscInt c = 0; c < C; c++) {
            ys[c] = x[first + c];
            as[c] = first + c;
          }
          for (PetscInt kd = d0; kd < d1; kd++) {
            for (PetscInt kh = h0; kh < h1; kh++) {
              for (PetscInt kw = (kd == d0 && kh == h0 ? w0 + 1 : w0); kw < w1; kw++) {
                const PetscInt                  off = (((s * D + id + kd) * H + ih + kh) * W + iw + kw) * C;
                const MAXPOOL_T *PETSC_RESTRICT xt  = x + off;
                MAXPOOL_T *PETSC_RESTRICT       yt  = ys;
                PetscInt *PETSC_RESTRICT        at  = as;

                for (PetscInt c = 0; c < C; c++) { /* branch-free with a bit mask, so that it vectorizes */
                  const MAXPOOL_T val = xt[c], cur = yt[c];
                  const PetscInt  more = -(PetscInt)(val > cur);

                  yt[c] = val > cur ? val : cur;
                  at[c] = (at[c] & ~more) | ((off + c) & more);
                }
              }
            }
          }
        }
      }
    }
  }
}
