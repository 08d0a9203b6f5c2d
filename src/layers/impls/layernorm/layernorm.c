/*
  layernorm and rmsnorm: normalisation over the last dimension of a sample, each position on its own (PyTorch's
  nn.LayerNorm(E) and the RMSNorm of transformers).

    x, y    [n][m][E]    a sample (..., E): m = the product of the other dims (a sequence (T, E): m = T; flat (E): m = 1)
    theta   layernorm: [gamma (E), beta (E)]  ("weight" and "bias"; start at 1 and 0)
            rmsnorm:   [gamma (E)]            ("weight"; starts at 1)
            :noaffine: none

  Per position (n m of them), with c = 1 for layernorm and c = 0 for rmsnorm:
    mu = c mean(x),  s = 1 / sqrt(mean((x - mu)^2) + eps),  xhat = (x - mu) s,  y = gamma xhat + beta
  (rmsnorm: s = 1 / sqrt(mean(x^2) + eps), no beta). The statistics are a sample's own: no coupling between samples,
  nothing to reduce over ranks, the same function in training and evaluation.
    jvp       dy = gamma s (dx - c mean(dx) - xhat mean(xhat dx)) + dgamma xhat + dbeta
    backward  dx = s (g - c mean(g) - xhat mean(g xhat)),  g = gamma dy;  dgamma += sum dy xhat,  dbeta += sum dy
    sobackward  (derived beside LayerSOBackward_Norm)
  Single precision (a Net at -net_precision single or bfloat16): forward, backward and jvp are written once for both
  element types (layernormkernels.h); sobackward runs in double (the second-order walk's precision).

  oneDNN (a Net at single or bfloat16 with -net_backend onednn: layer->gemm): layernorm's float forward runs oneDNN's
  layer normalization in training mode on the P x E batch (f32, gamma and beta rounded to float once per forward),
  which writes each position's mean and variance in float (mf, vf); its backward runs oneDNN's backward from them,
  dx overwritten and the float dgamma and dbeta of the batch added to the double dtheta. oneDNN has no jvp of a
  layer normalization: the jvp (and sobackward, and a double pass) runs the native kernels on mean and invstd
  computed from oneDNN's statistics, mu = mf, s = 1 / sqrt(vf + eps) in double. rmsnorm (no mean: oneDNN 2.6 has no
  RMS normalisation) and a shape oneDNN refuses or runs only with its reference loops stay native (-info).
*/
#include <petnet/private/layerimpl.h>
#include <petnet/private/onednnimpl.h>

typedef struct {
  PetscBool    center; /* layernorm: subtract the mean; rmsnorm: no */
  PetscBool    affine; /* gamma (and beta for layernorm) */
  PetscReal    eps;
  PetscInt     E, m;          /* the normalised dimension; positions per sample */
  PetscInt     cap;           /* positions mean and invstd have room for */
  PetscScalar *mean, *invstd; /* [n m] each: mu and s of each position at the last forward */
  PetscScalar *partsums;      /* [PETNET_THREAD_PARTS][2E]: each part's sums of the parameter gradient */
  PetscBool    fromonednn;    /* the last forward ran on oneDNN: mf, vf and gf hold its statistics and parameters */
  float       *mf, *vf;       /* oneDNN: [P] the float mean and variance of each position (fcap of them) */
  PetscInt     fcap;
  float       *gf;    /* oneDNN: [4E] gamma, beta (rounded at the forward), dgamma, dbeta (the backward's) */
  float       *dxbuf; /* oneDNN: a dx for a backward that asks for none (oneDNN always writes it), ndxbuf floats */
  size_t       ndxbuf;
} Layer_Norm;

/* positions per part of a pass (at least 4096 values), so that small batches run on one thread */
#define LAYERNORM_PART_POSITIONS(E) PetscMax(1, 4096 / PetscMax((E), 1))

/* room for the statistics of P positions (grows only) */
static PetscErrorCode NormReserve(Layer layer, PetscInt P)
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;

  PetscFunctionBegin;
  if (P <= ln->cap) PetscFunctionReturn(0);
  PetscCall(PetscFree2(ln->mean, ln->invstd));
  PetscCall(PetscMalloc2(P, &ln->mean, P, &ln->invstd));
  ln->cap = P;
  PetscFunctionReturn(0);
}

/* the layer in messages: its node's name, or its kind and place in its owner's list */
static PetscErrorCode NormDescription(Layer layer, size_t len, char desc[])
{
  PetscFunctionBegin;
  if (((PetscObject)layer)->name)
    PetscCall(LayerGetNodeDescription_Private(layer, len, desc));
  else if (layer->index >= 0)
    PetscCall(PetscSNPrintf(desc, len, "%s layer %" PetscInt_FMT, ((PetscObject)layer)->type_name, layer->index));
  else
    PetscCall(PetscSNPrintf(desc, len, "%s layer", ((PetscObject)layer)->type_name));
  PetscFunctionReturn(0);
}

/* forward, backward and jvp, in double and in float (layernormkernels.h) */
#define LN_T       PetscScalar
#define LN_NAME(f) f
#include "layernormkernels.h"
#undef LN_T
#undef LN_NAME
#define LN_T       float
#define LN_NAME(f) f##Single
#include "layernormkernels.h"
#undef LN_T
#undef LN_NAME

/* *on when layernorm's float passes for n samples run on oneDNN (the header's comment) */
static PetscErrorCode NormOneDNN(Layer layer, PetscInt n, PetscBool *on)
{
  Layer_Norm    *ln = (Layer_Norm *)layer->data;
  const PetscInt P  = n * ln->m;

  PetscFunctionBegin;
  *on = PETSC_FALSE;
  if (layer->gemm == PETNET_GEMM_NATIVE || !ln->center || !n) PetscFunctionReturn(0);
  PetscCheck((PetscInt64)P * ln->E <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "layernorm layer %" PetscInt_FMT ": %" PetscInt_FMT " samples of %" PetscInt_FMT " values overflow PetscInt: use smaller batches (-trainer_batch_size)",
             layer->index, n, layer->insize);
  PetscCall(PetNetOneDNNLayerNormAvailable(layer->gemm, P, ln->E, ln->affine, (float)ln->eps, on));
  PetscFunctionReturn(0);
}

/* forward: oneDNN's layer normalization (training), its statistics kept for the backward and, as mean and invstd, for the native jvp */
static PetscErrorCode LayerForwardSingle_NormOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, float *y)
{
  Layer_Norm    *ln = (Layer_Norm *)layer->data;
  const PetscInt E = ln->E, P = n * ln->m;
  PetscBool      on;
  void          *data[6];

  PetscFunctionBegin;
  PetscCall(NormOneDNN(layer, n, &on));
  if (!on) {
    PetscCall(LayerForward_NormSingle(layer, n, theta, x, y));
    PetscFunctionReturn(0);
  }
  PetscCall(NormReserve(layer, P));
  if (P > ln->fcap) {
    PetscCall(PetscFree2(ln->mf, ln->vf));
    PetscCall(PetscMalloc2(P, &ln->mf, P, &ln->vf));
    ln->fcap = P;
  }
  if (ln->affine) {
    if (!ln->gf) PetscCall(PetscMalloc1(4 * E, &ln->gf));
    for (PetscInt e = 0; e < 2 * E; e++) ln->gf[e] = (float)theta[e];
  }
  data[0] = (void *)x, data[1] = y, data[2] = ln->mf, data[3] = ln->vf, data[4] = ln->gf, data[5] = ln->gf ? ln->gf + E : NULL;
  PetscCall(PetNetOneDNNLayerNorm(PETSC_FALSE, P, E, ln->affine, (float)ln->eps, data));
  for (PetscInt p = 0; p < P; p++) {
    ln->mean[p]   = ln->mf[p];
    ln->invstd[p] = 1.0 / PetscSqrtReal((PetscReal)ln->vf[p] + ln->eps);
  }
  ln->fromonednn = PETSC_TRUE;
  PetscCall(PetscLogFlops(7.0 * P * E));
  PetscFunctionReturn(0);
}

/* backward: oneDNN's from the forward's statistics (dx overwritten, dgamma and dbeta added), or native after a native forward */
static PetscErrorCode LayerBackwardSingle_NormOneDNN(Layer layer, PetscInt n, const PetscScalar *theta, const float *x, const float *y, const float *dy, float *dx, PetscScalar *dtheta)
{
  Layer_Norm     *ln = (Layer_Norm *)layer->data;
  const PetscInt  E = ln->E, P = n * ln->m;
  const PetscBool dparam = (PetscBool)(dtheta && ln->affine);
  PetscBool       on;
  void           *data[9];
  float          *dxw = dx;

  PetscFunctionBegin;
  if (!ln->fromonednn) {
    PetscCall(LayerBackward_NormSingle(layer, n, theta, x, y, dy, dx, dtheta));
    PetscFunctionReturn(0);
  }
  if (!dx && !dparam) PetscFunctionReturn(0);
  PetscCall(NormOneDNN(layer, n, &on));
  PetscCheck(on && P <= ln->fcap, PETSC_COMM_SELF, PETSC_ERR_ORDER, "layernorm layer %" PetscInt_FMT ": backward on %" PetscInt_FMT " samples does not follow its forward on oneDNN: call forward first", layer->index, n);
  if (!dxw) {
    if ((size_t)P * E > ln->ndxbuf) {
      PetscCall(PetscFree(ln->dxbuf));
      PetscCall(PetscMalloc1((size_t)P * E, &ln->dxbuf));
      ln->ndxbuf = (size_t)P * E;
    }
    dxw = ln->dxbuf;
  }
  data[0] = (void *)x, data[1] = (void *)dy, data[2] = ln->mf, data[3] = ln->vf, data[4] = dxw;
  data[5] = ln->gf, data[6] = ln->gf ? ln->gf + E : NULL, data[7] = ln->gf ? ln->gf + 2 * E : NULL, data[8] = ln->gf ? ln->gf + 3 * E : NULL;
  PetscCall(PetNetOneDNNLayerNorm(PETSC_TRUE, P, E, ln->affine, (float)ln->eps, data));
  if (dparam)
    for (PetscInt e = 0; e < 2 * E; e++) dtheta[e] += (PetscScalar)ln->gf[2 * E + e];
  PetscCall(PetscLogFlops(9.0 * P * E + (dparam ? 4.0 : 0.0) * P * E));
  PetscFunctionReturn(0);
}

/*
  sobackward: the derivative of backward along (xdot, gammadot, betadot), dy fixed. Per position, with
  g = gamma dy, gd = gammadot dy, t = xdot and the means over its E values
    a = c mean(g),  b = mean(g xhat),  r = c mean(t),  q = mean(xhat t),  A0 = mean(g)
  the pieces move as
    xhat' = s (t - r - xhat q),   s' = -s^2 q          (mean((x - mu)^2)' = 2 mean((x - mu) t) = 2 q / s, for both kinds)
    a'    = c mean(gd),           b' = mean(gd xhat) + mean(g xhat') = mean(gd xhat) + s (mean(g t) - r A0 - q b)
  so that, differentiating dx = s (g - a - xhat b), dgamma = sum dy xhat, dbeta = sum dy:
    dxdot     += s' (g - a - xhat b) + s (gd - a' - xhat' b - xhat b')
    dgammadot += sum_p dy xhat'      (over the local positions, as backward)
    dbetadot  += 0
  Double only. Parts of positions as backward: dgammadot the same bits for any number of threads.
*/
static PetscErrorCode LayerSOBackward_Norm(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                           PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Norm        *ln = (Layer_Norm *)layer->data;
  const PetscInt     E = ln->E, P = n * ln->m, nparts = PetNetThreadParts(P, LAYERNORM_PART_POSITIONS(E));
  const PetscScalar *gamma = ln->affine ? theta : NULL, *gammadot = ln->affine ? thetadot : NULL;
  const PetscReal    c      = ln->center ? 1.0 : 0.0;
  const PetscBool    dparam = (PetscBool)(dthetadot && ln->affine && xdot);

  PetscFunctionBegin;
  if (!dxdot && !dparam) PetscFunctionReturn(0);
  if (!xdot && !gammadot) PetscFunctionReturn(0); /* a zero tangent moves nothing */
  PetscCheck(!ln->affine || gamma, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%s layer %" PetscInt_FMT ": the second-order term needs the parameters (theta is NULL)", ((PetscObject)layer)->type_name, layer->index);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscScalar *ps = ln->partsums + (size_t)part * 2 * E;
    PetscInt     p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    if (dparam)
      for (PetscInt e = 0; e < E; e++) ps[e] = 0.0;
    for (PetscInt p = p0; p < p1; p++) {
      const PetscScalar *xp = x + (size_t)p * E, *dyp = dy + (size_t)p * E, *tp = xdot ? xdot + (size_t)p * E : NULL;
      const PetscScalar  mu = ln->mean[p], s = ln->invstd[p];
      PetscScalar        A0 = 0.0, b = 0.0, r = 0.0, q = 0.0, ad = 0.0, bd = 0.0, gt = 0.0, a, sd, bprime;

      for (PetscInt e = 0; e < E; e++) {
        const PetscScalar xh = (xp[e] - mu) * s, g = (gamma ? gamma[e] : 1.0) * dyp[e], gd = gammadot ? gammadot[e] * dyp[e] : 0.0;

        A0 += g;
        b += g * xh;
        ad += gd;
        bd += gd * xh;
        if (tp) {
          r += tp[e];
          q += xh * tp[e];
          gt += g * tp[e];
        }
      }
      A0 /= E;
      b /= E;
      a = c * A0;
      r = c * r / E;
      q /= E;
      ad = c * ad / E;
      bd /= E;
      gt /= E;
      sd     = -s * s * q;
      bprime = bd + s * (gt - r * A0 - q * b);
      for (PetscInt e = 0; e < E; e++) {
        const PetscScalar xh = (xp[e] - mu) * s, g = (gamma ? gamma[e] : 1.0) * dyp[e], gd = gammadot ? gammadot[e] * dyp[e] : 0.0;
        const PetscScalar xhd = tp ? s * (tp[e] - r - xh * q) : 0.0;

        if (dxdot) dxdot[(size_t)p * E + e] += sd * (g - a - xh * b) + s * (gd - ad - xhd * b - xh * bprime);
        if (dparam) ps[e] += dyp[e] * xhd;
      }
    }
  }
  if (dparam)
    for (PetscInt part = 0; part < nparts; part++)
      for (PetscInt e = 0; e < E; e++) dthetadot[e] += ln->partsums[(size_t)part * 2 * E + e];
  PetscCall(PetscLogFlops(30.0 * P * E));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Norm(Layer);

static PetscErrorCode LayerSetUp_Norm(Layer layer)
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;
  char        node[256];
  PetscInt    size;

  PetscFunctionBegin;
  PetscCall(LayerReset_Norm(layer)); /* the buffers of an earlier shape */
  PetscCall(PetNetShapeSize(&layer->in, &size));
  ln->E = layer->in.dim[layer->in.ndim - 1];
  if (ln->E <= 0) {
    PetscCall(NormDescription(layer, sizeof(node), node));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "The %s normalises over the last dimension of its input, which is %" PetscInt_FMT ": give it an input whose last dimension (E, the features) is positive", node, ln->E);
  }
  ln->m          = size / ln->E;
  layer->out     = layer->in;
  layer->nparams = ln->affine ? (ln->center ? 2 : 1) * ln->E : 0;
  PetscCall(PetscMalloc1((size_t)PETNET_THREAD_PARTS * 2 * ln->E, &ln->partsums));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Norm(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;

  PetscFunctionBegin;
  for (PetscInt e = 0; e < layer->nparams; e++) theta[e] = e < ln->E ? 1.0 : 0.0;
  PetscFunctionReturn(0);
}

/* PyTorch LayerNorm(E): weight, bias [E]; RMSNorm: weight [E]; none without affine parameters */
static PetscErrorCode LayerTensors_Norm(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Norm *ln      = (Layer_Norm *)layer->data;
  const char *name[2] = {"weight", "bias"};

  PetscFunctionBegin;
  *n = ln->affine ? (ln->center ? 2 : 1) : 0;
  PetscCall(PetscMemzero(info, (size_t)*n * sizeof(info[0])));
  for (PetscInt t = 0; t < *n; t++) {
    PetscCall(PetscStrcpy(info[t].name, name[t]));
    info[t].offset  = t * ln->E;
    info[t].size    = ln->E;
    info[t].ndim    = 1;
    info[t].dims[0] = ln->E;
    info[t].layout  = layer->in.ndim == 1 ? LAYER_TENSOR_FEATURES : LAYER_TENSOR_SAME;
  }
  PetscFunctionReturn(0);
}

/* [noaffine|affine][:eps=EPS], in any order, separated by ':' */
static PetscErrorCode LayerSetArguments_Norm(Layer layer, const char args[])
{
  Layer_Norm *ln   = (Layer_Norm *)layer->data;
  const char *kind = ((PetscObject)layer)->type_name;
  char        buf[256], *tok, *save = NULL;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(buf, args, sizeof(buf)));
  for (tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
    PetscBool noaffine, affine, eps;

    PetscCall(PetscStrcmp(tok, "noaffine", &noaffine));
    PetscCall(PetscStrcmp(tok, "affine", &affine));
    PetscCall(PetscStrbeginswith(tok, "eps=", &eps));
    if (noaffine || affine)
      ln->affine = affine;
    else if (eps) {
      char  *end;
      double v = strtod(tok + 4, &end);

      PetscCheck(end != tok + 4 && !*end && v >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"%s:%s\": eps= takes a non-negative number, e.g. %s:eps=1e-6", kind, args, kind);
      ln->eps = (PetscReal)v;
    } else
      SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"%s:%s\": %s takes noaffine (no weight%s) and eps=EPS, e.g. %s:noaffine or %s:eps=1e-6", kind, args, kind, ln->center ? " and bias" : "", kind, kind);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Norm(Layer layer, size_t len, char args[])
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;
  char        e[32];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(e, sizeof(e), "%g", (double)ln->eps));
  if (strtod(e, NULL) != (double)ln->eps) PetscCall(PetscSNPrintf(e, sizeof(e), "%.17g", (double)ln->eps));
  PetscCall(PetscSNPrintf(args, len, "%s%s%s%s", ln->affine ? "" : "noaffine", !ln->affine && ln->eps != 1e-5 ? ":" : "", ln->eps != 1e-5 ? "eps=" : "", ln->eps != 1e-5 ? e : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Norm(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Norm *ln   = (Layer_Norm *)layer->data;
  const char *kind = ((PetscObject)layer)->type_name;
  char        opt[64];
  PetscReal   eps    = ln->eps;
  PetscBool   affine = ln->affine, set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, ln->center ? "Layer normalisation options" : "RMS normalisation options");
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_eps", kind));
  PetscCall(PetscOptionsReal(opt, "Added to the variance (mean square) before the square root", "LayerSetArguments", eps, &eps, &set));
  if (set) {
    PetscCheck(eps >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s: %s must be non-negative, not %g", kind, opt, (double)eps);
    ln->eps = eps;
  }
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_affine", kind));
  PetscCall(PetscOptionsBool(opt, "Learn a weight (and a bias for layernorm) per feature", "LayerSetArguments", affine, &affine, &set));
  if (set) ln->affine = affine;
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Norm(Layer layer, PetscViewer viewer)
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "over the last dimension (%" PetscInt_FMT "), eps %g, %s\n", ln->E, (double)ln->eps, ln->affine ? (ln->center ? "weight and bias" : "weight") : "no affine parameters"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Norm(Layer layer)
{
  Layer_Norm *ln = (Layer_Norm *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree2(ln->mean, ln->invstd));
  PetscCall(PetscFree(ln->partsums));
  PetscCall(PetscFree2(ln->mf, ln->vf));
  PetscCall(PetscFree(ln->gf));
  PetscCall(PetscFree(ln->dxbuf));
  ln->cap        = 0;
  ln->fcap       = 0;
  ln->ndxbuf     = 0;
  ln->fromonednn = PETSC_FALSE;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Norm(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerReset_Norm(layer));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerCreate_Norm(Layer layer, PetscBool center)
{
  Layer_Norm *ln;

  PetscFunctionBegin;
  PetscCall(PetscNew(&ln));
  ln->center                 = center;
  ln->affine                 = PETSC_TRUE;
  ln->eps                    = 1e-5;
  layer->data                = ln;
  layer->ops->setup          = LayerSetUp_Norm;
  layer->ops->initialize     = LayerInitialize_Norm;
  layer->ops->forward        = LayerForward_Norm;
  layer->ops->backward       = LayerBackward_Norm;
  layer->ops->jvp            = LayerJVP_Norm;
  layer->gradfree            = PETSC_TRUE;                    /* dgamma = sum dy xhat, dbeta = sum dy: gamma is not read */
  layer->ops->forwardsingle  = LayerForwardSingle_NormOneDNN; /* oneDNN where the Net asks for it, else LayerForward_NormSingle */
  layer->ops->backwardsingle = LayerBackwardSingle_NormOneDNN;
  /* jvpsingle: native on the statistics of the forward, oneDNN's or its own (oneDNN has no jvp) */
  layer->ops->jvpsingle      = LayerJVP_NormSingle;
  layer->ops->sobackward     = LayerSOBackward_Norm;
  layer->ops->tensors        = LayerTensors_Norm;
  layer->ops->setarguments   = LayerSetArguments_Norm;
  layer->ops->getarguments   = LayerGetArguments_Norm;
  layer->ops->setfromoptions = LayerSetFromOptions_Norm;
  layer->ops->view           = LayerView_Norm;
  layer->ops->reset          = LayerReset_Norm;
  layer->ops->destroy        = LayerDestroy_Norm;
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_LayerNorm(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate_Norm(layer, PETSC_TRUE));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_RMSNorm(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate_Norm(layer, PETSC_FALSE));
  PetscFunctionReturn(0);
}
