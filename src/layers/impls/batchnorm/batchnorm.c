/*
  batchnorm: normalisation of each channel (the last dimension) over the batch, as PyTorch's BatchNorm1d/2d/3d.

    x, y    [n][m][C]    m positions per sample: (h, w, c) inputs have m = h w, (d, h, w, c) inputs m = d h w, flat (f)
                         inputs m = 1 and C = f
    theta   [gamma (C), beta (C)]          ("weight" and "bias"; gamma starts at 1, beta at 0)
    buffers [running_mean (C), running_var (C)]   (start at 0 and 1)
    nbatches  PyTorch's num_batches_tracked: the training-mode passes that updated the running statistics (not a
              buffer: an integer, saved in HDF5 model files only)

    y = gamma xhat + beta,  xhat = (x - mu) s,  s = 1 / sqrt(var + eps)

  Training mode: mu and var (biased) are the statistics of the GLOBAL batch, M = N m values per channel, reduced with
  MPI_Allreduce so that results do not depend on the number of ranks; the running statistics are updated as
  running = (1 - momentum) running + momentum stat, with the unbiased variance var M / (M - 1) (PyTorch). The update
  is skipped inside NetTestJacobian(), whose repeated forward passes must not change the model.
  The Jacobian includes the dependence of mu and var on x (means over the global batch, per channel):
    jvp       dy = gamma s (dx - mean(dx) - xhat mean(xhat dx)) + dgamma xhat + dbeta
    backward  dx = gamma s (dy - mean(dy) - xhat mean(xhat dy)),  dgamma += sum dy xhat,  dbeta += sum dy
    sobackward  (backward differentiated along (xdot, gammadot, betadot), dy fixed; derived beside
              LayerSOBackward_BatchNorm, with r = mean(xdot), q = mean(xhat xdot) and A, B, D, E per channel)
              dxdot += A dy + B xhat + D + E xdot,  dgammadot += s (sum dy xdot - r sum dy - q sum dy xhat),  dbetadot += 0
  (gamma's and beta's sums are over the local samples: the Net sums the ranks' contributions.)
  Evaluation mode: mu, var are the running statistics; the layer is affine in x: dx = gamma s dy, and the second-order
  term is dxdot += gammadot s dy, dgammadot += s sum dy xdot.

  Training-mode forward, backward, jvp and sobackward are collective on the layer's communicator.

  Single precision (a Net at -net_precision single): forward, backward and jvp are written once for both element types
  (batchnormkernels.h): the same statistics and sums, accumulated in double from the float values with the same
  reductions; the elementwise passes in float. sobackward runs in double (the second-order walk's precision).

  oneDNN (a Net at single or bfloat16 with -net_backend onednn: layer->gemm): the float passes run oneDNN's batch
  normalization (f32 in both precisions, gamma and beta rounded to float once per forward, data channels last as they
  lie, nhwc or ndhwc; flat (C) inputs as 1 x 1 x C and (T, C) as 1 x T x C, the same memory), in three cases:
    training, one rank     forward training: oneDNN computes the batch's mean and biased variance in float (mf, vf);
                           mean = mf, var = vf, s = 1 / sqrt(vf + eps) in double (what the native jvp and sobackward
                           read), the running statistics updated from them as natively (the unbiased vf M / (M - 1));
                           backward: oneDNN's from mf, vf (dx with the statistics' dependence), dgamma and dbeta added
                           to the double dtheta
    training, more ranks   the statistics must be the global batch's, which oneDNN (one process) cannot reduce: they
                           are computed natively (BatchNormStatisticsSingle: sums, MPI_Allreduce, the running update),
                           and oneDNN normalises with them (use_global_stats); the backward, whose means of dy and
                           dy xhat are global too, runs natively (said once per layer by -info)
    evaluation             oneDNN with the running statistics given (use_global_stats), forward and backward (dx =
                           gamma s dy, dgamma, dbeta), at any number of ranks
  oneDNN has no jvp: the jvp (and sobackward) run natively on mean and invstd. A key oneDNN refuses, or runs only with
  its plain or reference loops (not a jit kernel: here C = 6 in 2-D, C = 3 in 3-D), stays native (-info). The
  double passes are native.

  Threads: the positions [0, n m) are cut into parts that depend on n m and C only (PetNetThreadParts()); each part
  sums its values into its own row of partsums, and the rows are added in part order (BatchNormPartSums), so that the
  statistics are the same bits for any number of threads. The elementwise passes run over positions in parallel.
*/
#include <petnet/private/layerimpl.h>
#include <petnet/private/onednnimpl.h>

typedef struct {
  PetscReal    momentum, eps;
  PetscInt     C, m;          /* channels; positions per sample */
  PetscBool    batchstats;    /* the last forward used batch statistics (training mode) */
  PetscReal    count;         /* M, the global number of values per channel in the last training forward */
  PetscInt64   nbatches;      /* num_batches_tracked */
  PetscScalar *mean, *invstd; /* [C] each: the statistics of the last forward, mu and s */
  PetscScalar *var;           /* [C]: the (biased) variance of the last forward, s = 1 / sqrt(var + eps) */
  PetscScalar *sums, *coef;   /* [5C+1] reduction buffer; [9C] per-channel terms of the derivatives */
  PetscScalar *partsums;      /* [PETNET_THREAD_PARTS][5C]: each part's sums (threads) */
  PetscScalar *tcoef;         /* [5C]: the per-channel coefficients of an elementwise pass (mu, s, A, B, D) in the values' type (batchnormkernels.h) */
  PetscBool    fromonednn;    /* the last forward ran on oneDNN: f holds the float statistics and parameters its backward reads */
  PetscBool    global;        /* ... with the statistics given (evaluation, or training at more than one rank) */
  PetscInt     fwdn;          /* ... on this many samples */
  PetscBool    saidranks;     /* -info has said that training at more than one rank runs half natively */
  float       *f;             /* oneDNN: [6C] mean, var, gamma, beta (the forward's), dgamma, dbeta (the backward's) */
  float       *dxbuf;         /* oneDNN: a dx for a backward that asks for none (oneDNN always writes it), ndxbuf floats */
  size_t       ndxbuf;
} Layer_BatchNorm;

/* values (positions x channels) per part of the sums, and below which the elementwise passes run on one thread */
#define BATCHNORM_PART_VALUES 16384

/* What BatchNormPartSums sums per channel, over the positions */
typedef enum {
  BATCHNORM_SUM_X,    /* x */
  BATCHNORM_SUM_DEV2, /* (x - mean)^2 */
  BATCHNORM_SUM_V     /* v, v xhat */
} BatchNormSumKind;

/* positions per block of the elementwise passes: an activation passed with forward runs on each block just written, in cache */
#define BATCHNORM_BLOCK_POSITIONS 64

/* forward, backward and jvp, in double and in float (batchnormkernels.h) */
#define BN_T       PetscScalar
#define BN_NAME(f) f
#include "batchnormkernels.h"
#undef BN_T
#undef BN_NAME
#define BN_T       float
#define BN_NAME(f) f##Single
#include "batchnormkernels.h"
#undef BN_T
#undef BN_NAME

static PetscErrorCode LayerReset_BatchNorm(Layer);

/*
  *on when batchnorm's float passes for n samples run on oneDNN (the header's comment), *global when with given
  statistics: evaluation mode, or training on a communicator of more than one rank
*/
static PetscErrorCode BatchNormOneDNN(Layer layer, PetscInt n, PetscBool *on, PetscBool *global)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  PetscMPIInt      size;

  PetscFunctionBegin;
  *on = *global = PETSC_FALSE;
  if (layer->gemm == PETNET_GEMM_NATIVE || !n) PetscFunctionReturn(0);
  PetscCheck((PetscInt64)n * bn->m * bn->C <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "batchnorm layer %" PetscInt_FMT ": %" PetscInt_FMT " samples of %" PetscInt_FMT " values overflow PetscInt: use smaller batches (-trainer_batch_size)",
             layer->index, n, layer->insize);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)layer), &size));
  *global = (PetscBool)(!layer->training || size > 1);
  PetscCall(PetNetOneDNNBatchNormAvailable(layer->gemm, n, layer->in.ndim, layer->in.dim, *global, (float)bn->eps, on));
  if (*on && layer->training && size > 1 && !bn->saidranks) {
    PetscCall(PetscInfo(NULL, "batchnorm layer %" PetscInt_FMT ": training on %d ranks: the batch statistics reduced over the ranks natively, oneDNN normalises with them; the backward (its means over the global batch) runs natively\n", layer->index,
                        size));
    bn->saidranks = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/*
  forward: with the batch's statistics on oneDNN (one rank, training), or with given ones (the header's comment); mean,
  var and invstd in double for the native jvp and sobackward, the running statistics updated as the native forward does
*/
static PetscErrorCode LayerForwardSingle_BatchNormOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt   C  = bn->C;
  float           *mf = bn->f, *vf = bn->f + C, *gf = bn->f + 2 * C;
  PetscBool        on, global;
  void            *data[6];

  PetscFunctionBegin;
  bn->fromonednn = PETSC_FALSE;
  PetscCall(BatchNormOneDNN(layer, n, &on, &global));
  if (!on) {
    PetscCall(LayerForward_BatchNormSingle(layer, n, theta, x, y));
    PetscFunctionReturn(0);
  }
  if (global) { /* the running statistics, or the global batch's (with the running update): native's */
    PetscCall(BatchNormStatisticsSingle(layer, n, x));
    for (PetscInt c = 0; c < C; c++) {
      mf[c] = (float)bn->mean[c];
      vf[c] = (float)bn->var[c];
    }
  } else {
    const PetscReal M = (PetscReal)n * bn->m;

    PetscCheck(M > 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "batchnorm in training mode needs more than one value per channel in the batch, but the batch has %g: use a larger batch or NetSetTraining(net, PETSC_FALSE)", (double)M);
    bn->batchstats = PETSC_TRUE;
    layer->coupled = PETSC_TRUE; /* the batch's mean and variance enter every sample's output */
  }
  for (PetscInt c = 0; c < 2 * C; c++) gf[c] = (float)theta[c];
  data[0] = (void *)x, data[1] = y, data[2] = mf, data[3] = vf, data[4] = gf, data[5] = gf + C;
  PetscCall(PetNetOneDNNBatchNorm(PETSC_FALSE, global, n, layer->in.ndim, layer->in.dim, (float)bn->eps, data));
  if (!global) { /* oneDNN's statistics, and the running update of BatchNormStatistics with them (M = n m: one rank) */
    const PetscReal M     = (PetscReal)n * bn->m;
    PetscScalar    *rmean = layer->buffers, *rvar = layer->buffers + C;

    for (PetscInt c = 0; c < C; c++) {
      bn->mean[c]   = mf[c];
      bn->var[c]    = vf[c];
      bn->invstd[c] = 1.0 / PetscSqrtScalar(bn->var[c] + bn->eps);
    }
    bn->count = M;
    if (!layer->frozen) {
      bn->nbatches++;
      for (PetscInt c = 0; c < C; c++) {
        rmean[c] = (1.0 - bn->momentum) * rmean[c] + bn->momentum * bn->mean[c];
        rvar[c]  = (1.0 - bn->momentum) * rvar[c] + bn->momentum * bn->var[c] * M / (M - 1.0);
      }
    }
  }
  bn->fromonednn = PETSC_TRUE;
  bn->global     = global;
  bn->fwdn       = n;
  PetscCall(PetscLogFlops(7.0 * n * bn->m * C));
  PetscFunctionReturn(0);
}

/*
  backward: oneDNN's from the forward's statistics (dx overwritten, dgamma and dbeta added), or native after a native
  forward or a forward in training mode at more than one rank (the header's comment)
*/
static PetscErrorCode LayerBackwardSingle_BatchNormOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt   C = bn->C, P = n * bn->m;
  float           *f = bn->f, *dxw = dx;
  void            *data[9];

  PetscFunctionBegin;
  if (!bn->fromonednn || (bn->global && bn->batchstats)) {
    PetscCall(LayerBackward_BatchNormSingle(layer, n, theta, x, y, dy, dx, dtheta));
    PetscFunctionReturn(0);
  }
  if (!dx && !dtheta) PetscFunctionReturn(0);
  /* the forward's mode (its statistics), whatever the layer's mode is now; the forward made the entry */
  PetscCheck(n == bn->fwdn, PETSC_COMM_SELF, PETSC_ERR_ORDER, "batchnorm layer %" PetscInt_FMT ": backward on %" PetscInt_FMT " samples does not follow its forward on oneDNN, which had %" PetscInt_FMT ": call forward first", layer->index, n,
             bn->fwdn);
  if (!dxw) {
    if ((size_t)P * C > bn->ndxbuf) {
      PetscCall(PetscFree(bn->dxbuf));
      PetscCall(PetscMalloc1((size_t)P * C, &bn->dxbuf));
      bn->ndxbuf = (size_t)P * C;
    }
    dxw = bn->dxbuf;
  }
  data[0] = (void *)x, data[1] = (void *)dy, data[2] = f, data[3] = f + C, data[4] = dxw;
  data[5] = f + 2 * C, data[6] = f + 3 * C, data[7] = f + 4 * C, data[8] = f + 5 * C;
  PetscCall(PetNetOneDNNBatchNorm(PETSC_TRUE, bn->global, n, layer->in.ndim, layer->in.dim, (float)bn->eps, data));
  if (dtheta)
    for (PetscInt c = 0; c < 2 * C; c++) dtheta[c] += (PetscScalar)f[4 * C + c];
  PetscCall(PetscLogFlops(11.0 * P * C));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_BatchNorm(Layer layer)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;
  PetscInt         size;

  PetscFunctionBegin;
  PetscCall(LayerReset_BatchNorm(layer)); /* the buffers of an earlier shape */
  PetscCall(PetNetShapeSize(&layer->in, &size));
  bn->C           = layer->in.dim[layer->in.ndim - 1];
  bn->m           = size / bn->C;
  layer->nparams  = 2 * bn->C;
  layer->nbuffers = 2 * bn->C;
  PetscCall(PetscMalloc5(bn->C, &bn->mean, bn->C, &bn->invstd, 5 * bn->C + 1, &bn->sums, 9 * bn->C, &bn->coef, PETNET_THREAD_PARTS * 5 * bn->C, &bn->partsums));
  PetscCall(PetscMalloc2(5 * bn->C, &bn->tcoef, bn->C, &bn->var));
  PetscCall(PetscMalloc1(6 * bn->C, &bn->f));
  PetscCall(PetscMalloc1(layer->nbuffers, &layer->buffers));
  bn->nbatches = 0;
  for (PetscInt c = 0; c < bn->C; c++) {
    layer->buffers[c]         = 0.0;
    layer->buffers[bn->C + c] = 1.0;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_BatchNorm(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;

  PetscFunctionBegin;
  for (PetscInt c = 0; c < bn->C; c++) {
    theta[c]         = 1.0;
    theta[bn->C + c] = 0.0;
  }
  PetscFunctionReturn(0);
}

/*
  The sums of sobackward over the P positions, per channel: dy (in v), dy xhat, and with xdot: xdot, xhat xdot, xdot dy
  (5 terms), in parts as BatchNormPartSums (batchnormkernels.h): the same bits for any number of threads. Double only:
  the second-order walk runs in double at every precision.
*/
static void BatchNormSecondSums(Layer_BatchNorm *bn, PetscInt P, const PetscScalar *x, const PetscScalar *v, const PetscScalar *xdot, PetscScalar *sums)
{
  const PetscInt C = bn->C, nparts = PetNetThreadParts(P, PetscMax(1, BATCHNORM_PART_VALUES / PetscMax(C, 1)));

#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscScalar *ps = bn->partsums + (size_t)part * 5 * C;
    PetscInt     p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    for (PetscInt c = 0; c < 5 * C; c++) ps[c] = 0.0;
    for (PetscInt p = p0; p < p1; p++)
      for (PetscInt c = 0; c < C; c++) {
        const PetscScalar xh = (x[(size_t)p * C + c] - bn->mean[c]) * bn->invstd[c], g = v[(size_t)p * C + c];

        ps[c] += g;
        ps[C + c] += g * xh;
        if (xdot) {
          const PetscScalar t = xdot[(size_t)p * C + c];

          ps[2 * C + c] += t;
          ps[3 * C + c] += xh * t;
          ps[4 * C + c] += t * g;
        }
      }
  }
  for (PetscInt c = 0; c < 5 * C; c++) sums[c] = bn->partsums[c];
  for (PetscInt part = 1; part < nparts; part++)
    for (PetscInt c = 0; c < 5 * C; c++) sums[c] += bn->partsums[(size_t)part * 5 * C + c];
}

/*
  sobackward: the derivative of backward along (xdot, gammadot, betadot), dy fixed. Per channel, with means over the
  global batch  a = mean(dy), b = mean(xhat dy), r = mean(xdot), q = mean(xhat xdot), w = mean(xdot dy)  (training
  mode; all five are zero in evaluation mode, where mu and s are constants), the pieces move as
    xhat' = s (xdot - r - xhat q)          (the normalisation's JVP: the same as jvp's)
    s'    = -s^2 q                         (var' = 2 mean((x - mu) xdot) = 2 q / s)
    a'    = 0,   b' = mean(xhat' dy) = s (w - r a - q b)
  so that, differentiating dx = gamma s (dy - a - xhat b), dgamma = sum dy xhat, dbeta = sum dy,
    dxdot     += (gammadot s + gamma s') (dy - a - xhat b) - gamma s (xhat' b + xhat b')
               = A dy + B xhat + D + E xdot,   A = s (gammadot - gamma s q),  E = -gamma s^2 b,
                                               B = -A b + gamma s^2 b q - gamma s b',  D = -A a + gamma s^2 b r
    dgammadot += sum dy xhat' = s (sum dy xdot - r sum dy - q sum dy xhat)      (over the local samples, as backward)
    dbetadot  += 0
  One MPI_Allreduce of the five sums per channel in training mode, made by every rank (a rank without samples, or with
  a NULL tangent, contributes zeros) whatever the rank is asked for.
*/
static PetscErrorCode LayerSOBackward_BatchNorm(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                                PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_BatchNorm   *bn = (Layer_BatchNorm *)layer->data;
  const PetscInt     C = bn->C, P = n * bn->m;
  const PetscScalar *gamma = theta, *gammadot = thetadot;
  PetscScalar       *sums = bn->sums, *means = bn->coef, *A = bn->coef + 5 * C, *B = bn->coef + 6 * C, *D = bn->coef + 7 * C, *E = bn->coef + 8 * C;

  PetscFunctionBegin;
  /* local sums [C] each: dy, dy xhat, xdot, xhat xdot, xdot dy */
  for (PetscInt c = 0; c < 5 * C; c++) sums[c] = 0.0;
  BatchNormSecondSums(bn, P, x, dy, xdot, sums);
  for (PetscInt c = 0; c < 5 * C; c++) means[c] = 0.0;
  if (bn->batchstats) {
    PetscCall(MPIU_Allreduce(sums, means, 5 * C, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)layer)));
    for (PetscInt c = 0; c < 5 * C; c++) means[c] /= bn->count;
  }
  for (PetscInt c = 0; c < C; c++) {
    const PetscScalar s = bn->invstd[c], a = means[c], b = means[C + c], r = means[2 * C + c], q = means[3 * C + c], w = means[4 * C + c];
    const PetscScalar gd = gammadot ? gammadot[c] : 0.0, bdot = s * (w - r * a - q * b);

    A[c] = s * (gd - gamma[c] * s * q);
    E[c] = -gamma[c] * s * s * b;
    B[c] = -A[c] * b + gamma[c] * s * s * b * q - gamma[c] * s * bdot;
    D[c] = -A[c] * a + gamma[c] * s * s * b * r;
    if (dthetadot) dthetadot[c] += s * (sums[4 * C + c] - r * sums[c] - q * sums[C + c]);
  }
  if (dxdot) {
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if ((PetscLogDouble)P * C > BATCHNORM_PART_VALUES)
    for (PetscInt p = 0; p < P; p++)
      for (PetscInt c = 0; c < C; c++) dxdot[(size_t)p * C + c] += A[c] * dy[(size_t)p * C + c] + B[c] * (x[(size_t)p * C + c] - bn->mean[c]) * bn->invstd[c] + D[c];
    if (xdot) {
#pragma omp parallel for num_threads(PetNetThreads()) schedule(guided) if ((PetscLogDouble)P * C > BATCHNORM_PART_VALUES)
      for (PetscInt p = 0; p < P; p++)
        for (PetscInt c = 0; c < C; c++) dxdot[(size_t)p * C + c] += E[c] * xdot[(size_t)p * C + c];
    }
  }
  PetscCall(PetscLogFlops((xdot ? 12.0 : 6.0) * P * C + 30.0 * C));
  PetscFunctionReturn(0);
}

/* PyTorch BatchNorm: weight, bias [C]; buffers running_mean, running_var [C]; indexed by the input's features when it is
   flat (f), by its channels on (h, w, c). num_batches_tracked: LayerBatchNormGetNumBatchesTracked(). */
static PetscErrorCode LayerTensors_BatchNorm(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_BatchNorm *bn      = (Layer_BatchNorm *)layer->data;
  const char      *name[4] = {"weight", "bias", "running_mean", "running_var"};

  PetscFunctionBegin;
  for (PetscInt t = 0; t < 4; t++) {
    PetscCall(LayerTensorSet_Private(&info[t], name[t], (t % 2) * bn->C, layer->in.ndim == 1 ? LAYER_TENSOR_FEATURES : LAYER_TENSOR_SAME, 1, &bn->C));
    info[t].buffer = (PetscBool)(t >= 2);
  }
  info[3].nonnegative = PETSC_TRUE; /* running_var: a negative one makes 1/sqrt(var + eps) NaN, or huge */
  *n                  = 4;
  PetscFunctionReturn(0);
}

/* [MOMENTUM[:EPS]] */
static PetscErrorCode LayerSetArguments_BatchNorm(Layer layer, const char args[])
{
  char  *end;
  double momentum = strtod(args, &end), eps;

  PetscFunctionBegin;
  PetscCheck(end != args && (!*end || *end == ':'), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "batchnorm takes [MOMENTUM[:EPS]] (e.g. batchnorm:0.1:1e-5), not \"%s\"", args);
  PetscCall(LayerBatchNormSetMomentum(layer, (PetscReal)momentum));
  if (*end == ':') {
    const char *second = end + 1;

    eps = strtod(second, &end);
    PetscCheck(end != second && !*end, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "batchnorm takes [MOMENTUM[:EPS]] (e.g. batchnorm:0.1:1e-5), not \"%s\"", args);
    PetscCall(LayerBatchNormSetEpsilon(layer, (PetscReal)eps));
  }
  PetscFunctionReturn(0);
}

/* %g when it reads back exactly, else all the digits */
static PetscErrorCode BatchNormFormat(PetscReal v, size_t len, char str[])
{
  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(str, len, "%g", (double)v));
  if (strtod(str, NULL) != (double)v) PetscCall(PetscSNPrintf(str, len, "%.17g", (double)v));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_BatchNorm(Layer layer, size_t len, char args[])
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;

  PetscFunctionBegin;
  if (bn->momentum == 0.1 && bn->eps == 1e-5)
    args[0] = 0;
  else {
    char m[32], e[32];

    PetscCall(BatchNormFormat(bn->momentum, sizeof(m), m));
    PetscCall(BatchNormFormat(bn->eps, sizeof(e), e));
    PetscCall(PetscSNPrintf(args, len, "%s:%s", m, e));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_BatchNorm(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_BatchNorm *bn       = (Layer_BatchNorm *)layer->data;
  PetscReal        momentum = bn->momentum, eps = bn->eps;
  PetscBool        set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Batch normalisation layer options");
  PetscCall(PetscOptionsReal("-batchnorm_momentum", "Weight of the batch statistics in the running statistics", "LayerBatchNormSetMomentum", momentum, &momentum, &set));
  if (set) PetscCall(LayerBatchNormSetMomentum(layer, momentum));
  PetscCall(PetscOptionsReal("-batchnorm_eps", "Added to the variance before the square root", "LayerBatchNormSetEpsilon", eps, &eps, &set));
  if (set) PetscCall(LayerBatchNormSetEpsilon(layer, eps));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_BatchNorm(Layer layer, PetscViewer viewer)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "momentum %g, eps %g, %s statistics\n", (double)bn->momentum, (double)bn->eps, layer->training ? "batch (training mode)" : "running (evaluation mode)"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_BatchNorm(Layer layer)
{
  Layer_BatchNorm *bn = (Layer_BatchNorm *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree5(bn->mean, bn->invstd, bn->sums, bn->coef, bn->partsums));
  PetscCall(PetscFree2(bn->tcoef, bn->var));
  PetscCall(PetscFree(bn->f));
  PetscCall(PetscFree(bn->dxbuf));
  PetscCall(PetscFree(layer->buffers));
  layer->nbuffers = 0;
  bn->ndxbuf      = 0;
  bn->fromonednn  = PETSC_FALSE;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_BatchNorm(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerReset_BatchNorm(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetMomentum_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetEpsilon_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormGetNumBatchesTracked_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetNumBatchesTracked_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBatchNormSetMomentum_BatchNorm(Layer layer, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscCheck(momentum >= 0 && momentum <= 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "batchnorm momentum must be in [0, 1], not %g", (double)momentum);
  ((Layer_BatchNorm *)layer->data)->momentum = momentum;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBatchNormSetEpsilon_BatchNorm(Layer layer, PetscReal eps)
{
  PetscFunctionBegin;
  PetscCheck(eps >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "batchnorm eps must be non-negative, not %g", (double)eps);
  ((Layer_BatchNorm *)layer->data)->eps = eps;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBatchNormGetNumBatchesTracked_BatchNorm(Layer layer, PetscInt64 *n)
{
  PetscFunctionBegin;
  *n = ((Layer_BatchNorm *)layer->data)->nbatches;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBatchNormSetNumBatchesTracked_BatchNorm(Layer layer, PetscInt64 n)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "batchnorm's count of training batches must be non-negative, not %" PetscInt64_FMT, n);
  ((Layer_BatchNorm *)layer->data)->nbatches = n;
  PetscFunctionReturn(0);
}

/*@
  LayerBatchNormGetNumBatchesTracked - the number of training-mode forward passes that have updated the running
  statistics since the layer was set up (PyTorch's num_batches_tracked)

  Not collective

  Input Parameter:
. layer - a batchnorm layer

  Output Parameter:
. n - the count; -1 for a layer of another kind

  Notes:
  Passes in frozen mode (NetTestJacobian()) do not count, as they do not update the statistics. HDF5 model files
  (NetSave()) keep the count as the int64 scalar "<layer>.num_batches_tracked"; PETSc binary model files and training
  checkpoints do not (a Net loaded from them starts at 0).

  Level: intermediate

.seealso: `LayerBatchNormSetNumBatchesTracked()`, `NetSetTraining()`, `NetSave()`
@*/
PetscErrorCode LayerBatchNormGetNumBatchesTracked(Layer layer, PetscInt64 *n)
{
  PetscErrorCode (*f)(Layer, PetscInt64 *);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidPointer(n, 2);
  *n = -1;
  PetscCall(PetscObjectQueryFunction((PetscObject)layer, "LayerBatchNormGetNumBatchesTracked_C", &f));
  if (f) PetscCall((*f)(layer, n));
  PetscFunctionReturn(0);
}

/*@
  LayerBatchNormSetNumBatchesTracked - sets the count of training batches (PyTorch's num_batches_tracked), as NetLoad()
  does from a model file

  Logically collective

  Input Parameters:
+ layer - a batchnorm layer, set up (layers of other kinds ignore the call)
- n     - the count, >= 0

  Level: advanced

.seealso: `LayerBatchNormGetNumBatchesTracked()`, `NetLoad()`
@*/
PetscErrorCode LayerBatchNormSetNumBatchesTracked(Layer layer, PetscInt64 n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerBatchNormSetNumBatchesTracked_C", (Layer, PetscInt64), (layer, n));
  PetscFunctionReturn(0);
}

/*@
  LayerBatchNormSetMomentum - the weight of each batch in the running statistics (default 0.1, as PyTorch).

  Logically collective

  Input Parameters:
+ layer    - a batchnorm layer (layers of other kinds ignore the call)
- momentum - the weight, in [0, 1]: running = (1 - momentum) running + momentum (batch statistic)

  Options Database Key:
. -<prefix>batchnorm_momentum <m> - the same from the options (LayerSetFromOptions())

  Notes:
  The compact form is batchnorm:MOMENTUM[:EPS]. The running statistics are updated by training-mode forward passes
  (not in frozen mode, NetTestJacobian()), with the unbiased variance, and used in evaluation mode. At single or
  bfloat16 precision with -net_backend onednn on one rank, the batch statistics are oneDNN's (summed in float; oneDNN
  gives the biased variance, which the update makes unbiased as natively); on more ranks they are PetNet's, reduced
  over the ranks.

  Level: intermediate

.seealso: `LayerBatchNormSetEpsilon()`, `NetSetTraining()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerBatchNormSetMomentum(Layer layer, PetscReal momentum)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerBatchNormSetMomentum_C", (Layer, PetscReal), (layer, momentum));
  PetscFunctionReturn(0);
}

/*@
  LayerBatchNormSetEpsilon - added to the variance before its square root (default 1e-5, as PyTorch).

  Logically collective

  Input Parameters:
+ layer - a batchnorm layer (layers of other kinds ignore the call)
- eps   - the value, >= 0: xhat = (x - mean) / sqrt(var + eps)

  Options Database Key:
. -<prefix>batchnorm_eps <eps> - the same from the options (LayerSetFromOptions())

  Level: intermediate

.seealso: `LayerBatchNormSetMomentum()`, `LayerSetArguments()`
@*/
PetscErrorCode LayerBatchNormSetEpsilon(Layer layer, PetscReal eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscTryMethod(layer, "LayerBatchNormSetEpsilon_C", (Layer, PetscReal), (layer, eps));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_BatchNorm(Layer layer)
{
  Layer_BatchNorm *bn;

  PetscFunctionBegin;
  PetscCall(PetscNew(&bn));
  bn->momentum               = 0.1;
  bn->eps                    = 1e-5;
  layer->data                = bn;
  layer->ops->setup          = LayerSetUp_BatchNorm;
  layer->ops->initialize     = LayerInitialize_BatchNorm;
  layer->ops->forward        = LayerForward_BatchNorm;
  layer->ops->forwardact     = LayerForwardAct_BatchNorm; /* an activation in its output pass (layerimpl.h) */
  layer->ops->backward       = LayerBackward_BatchNorm;
  layer->ops->jvp            = LayerJVP_BatchNorm;
  layer->ops->forwardsingle  = LayerForwardSingle_BatchNormOneDNN; /* oneDNN where the Net asks for it, else LayerForward_BatchNormSingle */
  layer->ops->backwardsingle = LayerBackwardSingle_BatchNormOneDNN;
  layer->ops->jvpsingle      = LayerJVP_BatchNormSingle; /* native on the statistics of the forward, oneDNN's or its own (oneDNN has no jvp) */
  layer->ops->sobackward     = LayerSOBackward_BatchNorm;
  layer->ops->tensors        = LayerTensors_BatchNorm;
  layer->ops->setarguments   = LayerSetArguments_BatchNorm;
  layer->ops->getarguments   = LayerGetArguments_BatchNorm;
  layer->ops->setfromoptions = LayerSetFromOptions_BatchNorm;
  layer->ops->view           = LayerView_BatchNorm;
  layer->ops->reset          = LayerReset_BatchNorm;
  layer->ops->destroy        = LayerDestroy_BatchNorm;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetMomentum_C", LayerBatchNormSetMomentum_BatchNorm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetEpsilon_C", LayerBatchNormSetEpsilon_BatchNorm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormGetNumBatchesTracked_C", LayerBatchNormGetNumBatchesTracked_BatchNorm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerBatchNormSetNumBatchesTracked_C", LayerBatchNormSetNumBatchesTracked_BatchNorm));
  PetscFunctionReturn(0);
}
