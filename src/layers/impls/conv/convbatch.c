/*
  Batch mode of conv2d and conv3d, im2col + GEMM (layouts and formulas in conv.h), chunk by chunk of output rows; the
  kernels written once (convbatchkernels.h) and compiled for double and for float (single precision).

  The batch's output rows are numbered R = s rows + r (sample s, row r = od Ho + oh of the sample); a chunk is a range
  [R0, R1) of them, whole samples when one fits in the workspace, else part of one. Its P = (R1 - R0) Wo output points
  are consecutive in y, so each GEMM writes y (and reads dy) in place. A 1x1(x1), stride-1, unpadded convolution needs
  no im2col: col is x itself (its rows are the output's). Backward recomputes col(x) chunk by chunk, except when one
  chunk holds the whole batch: then forward's is kept (conv->colx). Whatever else writes col (the input GEMM of
  backward, jvp's col(dx), sobackward's col(xdot)) forgets it.
*/
#include "conv.h"
#include "../../interface/layergemm.h"

/*
  The output rows of a chunk for batches of n samples, with values of elemsize bytes: the rows whose columns and
  outputs fit in maxworkspace MB (at least 1); as many whole samples as fit (at most n) when one sample does. The
  workspace (one column buffer per thread) is reallocated only when a chunk needs more rows than the buffers hold or
  there are more threads, so that a smaller last batch or a bigger evaluation batch costs nothing.
*/
static PetscInt ConvChunkRows(const LayerConv *conv, PetscInt n, size_t elemsize)
{
  const PetscLogDouble perrow = (PetscLogDouble)conv->im2col.out[2] * ((conv->pointwise ? conv->cin : conv->ktot) + conv->nout) * elemsize;
  const PetscLogDouble fit    = PetscMax(1.0, PetscFloorReal(conv->maxworkspace * 1024.0 * 1024.0 / perrow));

  if (fit >= conv->rows) return conv->rows * (PetscInt)PetscMin((PetscLogDouble)PetscMax(n, 1), PetscFloorReal(fit / conv->rows)); /* whole samples */
  return (PetscInt)fit;
}

/*
  The gradients' accumulators (double) of part p of nparts: with one part and dW's own layout, dtheta itself (dW and
  db); else the part's buffers in dwpart, dbpart, zeroed here and added by ConvAddParts
*/
static void ConvPartAccumulators(const LayerConv *conv, PetscInt nparts, PetscInt p, PetscScalar *dwpart, PetscScalar *dbpart, PetscScalar *dtheta, PetscScalar **acc, PetscScalar **db)
{
  const PetscInt nw = conv->nout * conv->kg;

  if (nparts == 1 && !conv->dwtransposed) {
    *acc = dtheta;
    *db  = conv->bias ? dtheta + nw : NULL;
    return;
  }
  *acc = dwpart + (size_t)p * nw;
  *db  = conv->bias ? dbpart + (size_t)p * conv->nout : NULL;
  for (PetscInt i = 0; i < nw; i++) (*acc)[i] = 0.0;
  if (*db)
    for (PetscInt o = 0; o < conv->nout; o++) (*db)[o] = 0.0;
}

/* dtheta += the parts' gradients, in part order (dW^T per group turned back when dwtransposed; nothing when the single
   part accumulated into dtheta); bias: add db */
static void ConvAddParts(const LayerConv *conv, PetscInt nparts, const PetscScalar *dwpart, const PetscScalar *dbpart, PetscBool bias, PetscScalar *dtheta)
{
  const PetscInt nw = conv->nout * conv->kg, kg = conv->kg, cog = conv->cog;

  if (nparts == 1 && !conv->dwtransposed) return;
  for (PetscInt p = 0; p < nparts; p++) {
    const PetscScalar *acc = dwpart + (size_t)p * nw;

    if (conv->dwtransposed)
      for (PetscInt g = 0; g < conv->groups; g++)
        for (PetscInt o = 0; o < cog; o++)
          for (PetscInt j = 0; j < kg; j++) dtheta[(g * cog + o) * kg + j] += acc[g * cog * kg + o + cog * j];
    else
      for (PetscInt i = 0; i < nw; i++) dtheta[i] += acc[i];
    if (bias)
      for (PetscInt o = 0; o < conv->nout; o++) dtheta[nw + o] += dbpart[(size_t)p * conv->nout + o];
  }
}

/* the weights and jvp's direction on each element type (below) */
static PetscErrorCode ConvParameters(Layer, const PetscScalar *, const char *, const PetscScalar **);
static PetscErrorCode ConvDirection(Layer, const PetscScalar *, const PetscScalar **);
static PetscErrorCode ConvParametersSingle(Layer, const PetscScalar *, const char *, const float **);
static PetscErrorCode ConvDirectionSingle(Layer, const PetscScalar *, const float **);

#define CONV_T             PetscScalar
#define CONV_NAME(f)       f
#define CONV_BATCH_NAME(f) f##_Batch
#define CONV_WORK_T        ConvWork
#define CONV_WORK(conv)    (&(conv)->dbl)
#define CONV_DIRECT        0
#include "convbatchkernels.h"
#undef CONV_T
#undef CONV_NAME
#undef CONV_BATCH_NAME
#undef CONV_WORK_T
#undef CONV_WORK
#undef CONV_DIRECT
#define CONV_T             float
#define CONV_NAME(f)       f##Single
#define CONV_BATCH_NAME(f) f##Single_Batch
#define CONV_WORK_T        ConvWorkSingle
#define CONV_WORK(conv)    (&(conv)->sgl)
#define CONV_DIRECT        1
#include "convbatchkernels.h"
#undef CONV_T
#undef CONV_NAME
#undef CONV_BATCH_NAME
#undef CONV_WORK_T
#undef CONV_WORK
#undef CONV_DIRECT

/*
  The weights a double pass uses (W [Cout][Kg] then b, theta itself); forward and jvp also transpose them per group
  into the workspace's wt
*/
static PetscErrorCode ConvParameters(Layer layer, const PetscScalar *theta, const char *op, const PetscScalar **W)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  if (op[0] != 'b') ConvTransposeWeights(conv, theta, conv->dbl.wt);
  *W = theta;
  PetscFunctionReturn(0);
}

/* jvp's direction: dW^T per group in dwt, and db (NULL without a bias) */
static PetscErrorCode ConvDirection(Layer layer, const PetscScalar *dtheta, const PetscScalar **db)
{
  LayerConv *conv = (LayerConv *)layer->data;

  PetscFunctionBegin;
  ConvTransposeWeights(conv, dtheta, conv->dbl.dwt);
  *db = conv->bias ? dtheta + conv->nout * conv->kg : NULL;
  PetscFunctionReturn(0);
}

/*
  Single precision: forward rounds W and b to float once, in w, b and (transposed per group) wt, kept for the backward
  and jvp that follow at the same point
*/
static PetscErrorCode ConvParametersSingle(Layer layer, const PetscScalar *theta, const char *op, const float **W)
{
  LayerConv      *conv = (LayerConv *)layer->data;
  ConvWorkSingle *s    = &conv->sgl;
  const PetscInt  nw   = conv->nout * conv->kg;

  PetscFunctionBegin;
  if (op[0] == 'f') {
    for (PetscInt i = 0; i < nw; i++) s->w[i] = (float)theta[i];
    for (PetscInt o = 0; o < conv->nout; o++) s->b[o] = conv->bias ? (float)theta[nw + o] : 0.0f;
    ConvTransposeWeightsSingle(conv, theta, s->wt);
    s->wset = PETSC_TRUE;
  }
  PetscCheck(s->wset, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s layer %" PetscInt_FMT ": single-precision %s before any single-precision forward pass: call LayerForwardSingle() first, at the same point", ((PetscObject)layer)->type_name, layer->index,
             op);
  *W = s->w;
  PetscFunctionReturn(0);
}

static PetscErrorCode ConvDirectionSingle(Layer layer, const PetscScalar *dtheta, const float **db)
{
  LayerConv      *conv = (LayerConv *)layer->data;
  ConvWorkSingle *s    = &conv->sgl;
  const PetscInt  nw   = conv->nout * conv->kg;

  PetscFunctionBegin;
  ConvTransposeWeightsSingle(conv, dtheta, s->dwt);
  for (PetscInt o = 0; o < conv->nout; o++) s->db[o] = conv->bias ? (float)dtheta[nw + o] : 0.0f;
  *db = conv->bias ? s->db : NULL;
  PetscFunctionReturn(0);
}

/*
  sobackward: dWdot += col(xdot) dy^T (if dWdot and xdot), dxdot += col2im(Wdot dy) (if dxdot and Wdot), parts of
  whole samples in parallel as in backward. The bias gradient sum_p dy does not depend on (x, W): its term is zero and
  dWdot's bias entries are left alone.
*/
PetscErrorCode ConvSOBackward_Batch(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  LayerConv     *conv = (LayerConv *)layer->data;
  ConvWork      *s    = &conv->dbl;
  const PetscInt nout = conv->nout, rows = conv->rows, Wo = conv->im2col.out[2], nparts = PetNetThreadParts(n, 1);
  PetscBool      doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);
  PetscErrorCode err = 0;

  PetscFunctionBegin;
  PetscCall(ConvGetWorkspace(layer, n));
  if (!conv->pointwise) s->colx = NULL; /* col(xdot) and W dy replace col(x) */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    PetscInt       s0, s1;
    PetscScalar   *buf = ConvThreadBuffer(conv), *dwc = s->dwchunk + (size_t)PetNetThreadId() * (conv->nout * conv->kg + nout), *acc = NULL, *db = NULL;
    PetscErrorCode ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (doW) ConvPartAccumulators(conv, nparts, p, s->dwpart, s->dbpart, dWdot, &acc, &db);
    for (PetscInt R0 = s0 * rows; R0 < s1 * rows && !ierr; R0 += s->chunk) {
      PetscInt           R1 = PetscMin(R0 + s->chunk, s1 * rows), P = (R1 - R0) * Wo;
      const PetscScalar *dys = dy + (size_t)R0 * Wo * nout;

      if (doW) {
        const PetscScalar *col = buf;

        if (conv->pointwise)
          col = xdot + (size_t)R0 * Wo * conv->cin;
        else
          ierr = ConvIm2col_Batch(conv, layer->insize, R0, R1, xdot, buf);
        if (!ierr) ierr = ConvGemmWeights(conv, P, col, dys, dwc, acc);
      }
      if (dox && !ierr) ierr = ConvInputCotangent_Batch(conv, layer->insize, R0, R1, P, Wdot, dys, PETSC_TRUE, buf, dxdot);
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv sobackward");
  if (doW) ConvAddParts(conv, nparts, s->dwpart, s->dbpart, PETSC_FALSE, dWdot);
  PetscCall(PetscLogFlops(2.0 * n * conv->pixels * conv->kg * nout * ((doW ? 1 : 0) + (dox ? 1 : 0)) + (dox && !conv->pointwise ? 1.0 * n * conv->pixels * conv->ktot : 0.0)));
  PetscFunctionReturn(0);
}
