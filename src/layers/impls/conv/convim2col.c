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

/* the kernels, in double and in float (convim2colkernels.h) */
#define CONV_IM2COL_T       PetscScalar
#define CONV_IM2COL_NAME(f) f
#include "convim2colkernels.h"
#undef CONV_IM2COL_T
#undef CONV_IM2COL_NAME
#define CONV_IM2COL_T       float
#define CONV_IM2COL_NAME(f) f##Single
#include "convim2colkernels.h"
#undef CONV_IM2COL_T
#undef CONV_IM2COL_NAME
