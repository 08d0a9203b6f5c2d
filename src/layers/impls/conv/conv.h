/*
  The convolution base shared by conv2d and conv3d (as ../pool/ is that of maxpool and avgpool): a convolution
  (cross-correlation, as PyTorch's Conv2d and Conv3d) on channels-last samples with nsd = 2 or 3 spatial dims.

    x      [n][D][H][W][Cin]              layer input (no D in 2-D)
    y      [n][Do][Ho][Wo][Cout]          layer output
    W      [Cout][KD][KH][KW][Cg]         Cg = Cin / G input channels per group (G groups); output channel o is in
                                          group o / (Cout / G). PyTorch stores [Cout][Cg][KD][KH][KW]: the tensors()
                                          shape is PyTorch's, the data is ours (LAYER_TENSOR_CHANNELS_LAST).
    b      [Cout]                         (absent with bias=0)
    theta  = [W, b]

    forward   y[s][p][o] = b[o] + sum_{taps t, c} W[o][t][c] x[s][i(p, t)][g Cg + c]   (i: the window, ../pool/window.h)
    backward  dW += the same sum with x against dy,  db += sum over points of dy,  dx = its transpose applied to dy
    jvp       dy = conv(dx; W) + conv(x; dW) + db
    sobackward  backward is bilinear in (W, x) and db = sum dy depends on neither, so along (xdot, Wdot, bdot):
              dWdot += backward's dW with xdot for x,   dxdot += backward's dx with Wdot for W,   dbdot += 0

  Each kind's data struct starts with a LayerConv, which the shared code reaches by casting layer->data:

    typedef struct { LayerConv base; ...the kind's own state (conv2d: Winograd, grid mode on a DMDA)... } Layer_Conv2d;

  LayerCreateConv_Private() allocates it and installs the compact arguments OUT[:K[:STRIDE[:PAD[:D[:G]]]]] with the
  named settings dilation=, groups=, bias=, initialisation, the PyTorch tensors, the grid-mode ops getwindow and
  setpadding, and the kind's LayerConv<N>dSet...() methods; the kind adds its set-up (LayerSetUpConv_Private() does
  batch mode and nodes of a grid), options (LayerSetFromOptionsConv_Private() and its own), view, operations, reset
  and destroy.

  Batch mode, im2col + GEMM (convbatch.c, with the N-d im2col of convim2col.c), chunk by chunk of output rows:
    col    [P][G][KD][KH][KW][Cg]   P = the output points of a chunk: row p is the receptive field of point p
    Wt     [G][Kg][Cout/G]          W^T per group (Kg = KD KH KW Cg), so that forward is an 'N','N' GEMM
  In column-major BLAS terms col is a (G Kg) x P matrix, y a Cout x P matrix and the weights of group g a Kg x (Cout/G)
  matrix Wg; one GEMM per group and chunk:
    forward   y_g    = Wg^T col_g (+ b)          dgemm('N','N') on Wt
    backward  dWg   += col_g dy_g^T              dgemm('N','T') (as dWg^T += dy_g col_g^T, in wdt, when Kg < Cout/G)
              db    += sum_p dy
              dcol_g = Wg dy_g ;  dx = col2im(dcol)   dgemm('N','N'), then the scatter-add of convim2col.c
    jvp       dy_g   = Wg^T col(dx)_g + dWg^T col(x)_g (+ db)
    sobackward  dWdotg += col(xdot)_g dy_g^T ;  dxdot += col2im(Wdotg dy_g)
  Cache blocking: a chunk is as many output rows (the Wo points of one (od, oh)) as fit with their columns and outputs
  in -conv<N>d_max_workspace MB (default 1, about a core's L2 cache): whole samples when one sample fits, else part of
  a sample, so that the column buffer stays bounded whatever the size of a sample (a 32^3 volume has 32768 points).
  Single precision (a Net at -net_precision single or bfloat16): the same kernels (convbatchkernels.h, included once
  per element type by convbatch.c), chunks, parts and GEMMs on float values with sgemm; forward converts W (and b) to
  float once and keeps them (ConvWorkSingle w, b, wt) for backward and jvp at the same point; each chunk's weight
  gradient comes out of sgemm in float and is added into its part's DOUBLE accumulator (LayerGemm()'s accumulation
  into double), the parts then into the double dtheta in part order; the bias gradient is summed in double. conv2d's
  Winograd is compiled for float too (../conv2d/conv2dwinograd.c), used wherever double uses Winograd; grid mode
  (point form) has no float kernels (the layer's converting fallback runs its double kernels).
  Threads (../../../../include/petnet/private/threadsimpl.h): forward and jvp run their chunks in parallel, each thread
  with its own column buffer; backward and sobackward cut the batch into parts of whole samples (PetNetThreadParts():
  a number that depends on the batch size only), each part running its chunks in order and adding its weight and bias
  gradients into its own buffer (dwpart, dbpart), summed in part order at the end; the parts' input gradients are
  disjoint samples. The results are the same bits for any number of threads.
*/
#pragma once

#include "../pool/window.h"
#include "convim2col.h"
#include <petnet/private/threadsimpl.h>
#include <petscblaslapack.h>

/*
  The workspace of batch mode on one element type T (convbatch.c): for nalloc rows and nthreads threads, chunks of
  chunk rows; col (thread 0's) holds im2col(colx) of the last forward when colx == x
*/
#define CONV_BATCH_WORK(T)                                                                                                                                                         \
  struct {                                                                                                                                                                         \
    PetscInt     nalloc, chunk, nthreads;                                                                                                                                          \
    size_t       colsize;       /* values of one thread's column buffer */                                                                                                         \
    T           *col;           /* [threads][chunk Wo][G Kg] */                                                                                                                    \
    T           *dwchunk;       /* [threads][Cout Kg + Cout]: a chunk's weight gradient in T (float: before its addition in double; the direct kernel's dW^T) and bias gradient */ \
    PetscScalar *dwpart;        /* [PETNET_THREAD_PARTS][Cout Kg]: each part's weight gradient in double (dW^T per group when dwtransposed), added in part order */                \
    PetscScalar *dbpart;        /* [PETNET_THREAD_PARTS][Cout]: each part's bias gradient in double */                                                                             \
    T           *w, *b;         /* W [Cout][Kg] and b [Cout] in T, set by a float forward (double reads theta) */                                                                  \
    T           *wt, *dwt, *db; /* W^T per group [G][Kg][Cout/G] (forward's), the direction's dW^T and db (jvp) */                                                                 \
    PetscBool    wset;          /* float: w holds the parameters of the last forward */                                                                                            \
    const T     *colx;                                                                                                                                                             \
  }
typedef CONV_BATCH_WORK(PetscScalar) ConvWork;
typedef CONV_BATCH_WORK(float) ConvWorkSingle;

/*
  The oneDNN path of the float kernels (convonednn.c; a Net at single or bfloat16 with -net_backend onednn, conv2d):
  forward rounds W and b to float once in w, b (W's own layout [Cout][KH][KW][Cg], oneDNN's ohwi), kept for backward
  and jvp at the same point; dw, db hold jvp's direction in float, and backward's weight gradient out of oneDNN before
  its addition into the double dtheta
*/
typedef struct {
  float    *w, *b, *dw, *db; /* [Cout Kg], [Cout], [Cout Kg], [Cout], one allocation */
  PetscBool wset;            /* w holds the parameters of the last forward on oneDNN */
} ConvOneDNN;

typedef struct {
  LayerWindow   win;    /* kernel, stride, padding, dilation; valid tap ranges */
  PetscInt      nsd;    /* spatial dims: 2 (conv2d) or 3 (conv3d) */
  PetscInt      nout;   /* Cout */
  PetscInt      groups; /* G */
  PetscBool     bias;
  LayerInitType init;
  PetscReal     initstd;
  PetscReal     maxworkspace; /* MB: the workspace of one chunk of rows (cache blocking) */
  PetscInt      directmaxk;   /* single precision: the direct kernel (convdirectsingle.c) when taps Cg <= this, G = 1 */

  /* set up from the input shape */
  PetscInt  cin, cg, cog, kg, ktot; /* Cin, Cin/G, Cout/G, taps Cg, G Kg */
  PetscInt  pixels, rows;           /* output points and output rows (Do Ho) of a sample */
  PetscBool pointwise;              /* 1x1(x1), stride 1, no padding: col = x */
  PetscBool dwtransposed;           /* the weight gradient is accumulated transposed, in wdt */

  ConvIm2col     im2col; /* the geometry of batch mode (conv2d's grid mode sets its block's) */
  ConvWork       dbl;    /* batch mode's workspace, double */
  ConvWorkSingle sgl;    /* and single precision */
  ConvOneDNN     dnn;    /* and single precision on oneDNN */
} LayerConv;

/* conv.c: the settings, set-up and the layer's common operations */
PETSC_INTERN PetscErrorCode LayerCreateConv_Private(Layer, size_t, PetscInt);
PETSC_INTERN PetscErrorCode LayerSetFromOptionsConv_Private(Layer, PetscOptionItems *, PetscBool *);
PETSC_INTERN PetscErrorCode LayerViewConv_Private(Layer, PetscViewer);
PETSC_INTERN PetscErrorCode LayerConvCheckOutputs_Private(Layer);
PETSC_INTERN PetscErrorCode LayerConvSetUpChannels_Private(Layer);
PETSC_INTERN PetscErrorCode LayerSetUpConv_Private(Layer);
PETSC_INTERN PetscErrorCode LayerConvCheckRunnable_Private(Layer);
PETSC_INTERN PetscErrorCode LayerConvSetSingle_Private(Layer, PetscBool);
PETSC_INTERN PetscErrorCode LayerResetConv_Private(Layer);
PETSC_INTERN PetscErrorCode LayerDestroyConv_Private(Layer);

/* convbatch.c: batch mode, im2col + GEMM, in double and (...Single_Batch: float values, double parameters; layerimpl.h) in single precision */
PETSC_INTERN PetscErrorCode ConvForward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvForwardAct_Batch(Layer, Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvBackward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvJVP_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvSOBackward_Batch(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvResetWorkspace_Batch(Layer);

/* convdirectsingle.c: the direct float kernels of batch mode for few taps Cin, chunk by chunk of output rows */
#define CONV_DIRECT_MAX_K     64 /* the largest -conv<N>d_single_direct_max_k */
#define CONV_DIRECT_DEFAULT_K 32
PETSC_INTERN PetscBool      ConvDirectSingle(const LayerConv *);
PETSC_INTERN PetscErrorCode ConvDirectOutputSingle_Batch(const LayerConv *, PetscInt, PetscInt, PetscInt, const float *, const float *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvDirectWeightsSingle_Batch(const LayerConv *, PetscInt, PetscInt, PetscInt, const float *, const float *, float *, float *);

PETSC_INTERN PetscErrorCode ConvForwardSingle_Batch(Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvForwardActSingle_Batch(Layer, Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvBackwardSingle_Batch(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvJVPSingle_Batch(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
PETSC_INTERN PetscErrorCode ConvResetWorkspaceSingle_Batch(Layer);

/* convonednn.c: the float kernels on oneDNN's convolution primitives (include/petnet/private/onednnimpl.h), for a layer
   whose Net asks for oneDNN (layer->gemm) where oneDNN has kernels for all its ops at this batch size */
PETSC_INTERN PetscErrorCode ConvOneDNNApplies(Layer, PetscInt, PetscBool *);
PETSC_INTERN PetscErrorCode ConvForwardActSingle_OneDNN(Layer, Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvBackwardSingle_OneDNN(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvJVPSingle_OneDNN(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
PETSC_INTERN PetscErrorCode ConvResetOneDNN(Layer);
PETSC_INTERN PetscErrorCode ConvSetBF16_OneDNN(Layer, PetscBool);
/* the base's float ops: oneDNN where it applies, else the batch kernels above (installed by LayerConvSetSingle_Private()) */
PETSC_INTERN PetscErrorCode ConvForwardSingle_Default(Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvForwardActSingle_Default(Layer, Layer, PetscInt, const PetscScalar *, const float *, float *);
PETSC_INTERN PetscErrorCode ConvBackwardSingle_Default(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
PETSC_INTERN PetscErrorCode ConvJVPSingle_Default(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
