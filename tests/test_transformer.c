static const char help[] = "The transformer layers' own checks (layernorm, rmsnorm, embedding) beyond the Net's derivative tests:\n"
                           "  default: embedding on one rank's arrays: forward copies the table's rows exactly, the table gradient equals\n"
                           "    a dense one-hot reference (onehot^T dy) to 1e-14 and accumulates, dx is zero, the jvp ignores an input\n"
                           "    tangent, the dot-product identity of the table's Jacobian to 1e-14, float kernels against double (1e-6);\n"
                           "    then the same bits at -net_threads 1 and 2 for embedding's scatter-add and for layernorm's, rmsnorm's and attention's\n"
                           "    forward, input cotangent and parameter gradient (batches large enough for several parts);\n"
                           "  -net: a Net embedding:V:E,layernorm,rmsnorm,dense:3 on ids that depend on the global sample only; prints\n"
                           "    |Y| and the gradient of 0.5 |Y|^2 (the same on any number of ranks: expected outputs);\n"
                           "  -attention: the tiled attention kernel against a direct (T x T) reference: forward, backward, jvp to 1e-13;\n"
                           "  -attention_tiles: the tile kernels at tiles 1, 3, 7, 64 on T = 151, E = 8 and 48, causal and not, with and without dropout,\n"
                           "    in double and single, against the direct reference (1e-13 in double, 2e-5 in single);\n"
                           "  -attention_memory: attention's stored state at T = 2048 and 4096, linear in T (ratio <= 2.2; counted with -malloc_debug);\n"
                           "  -attention_net: a Net with attention dropout in training mode; prints |Y| and |G| (the same on any number of\n"
                           "    ranks: expected outputs) and checks that evaluation mode differs;\n"
                           "  -attention_torch PFX [-attention_torch_spec SPEC]: PFX.h5 (the Net) and PFX_grad.h5 (x, y, dx, gradient of\n"
                           "    0.5 |y|^2) for tests/torch_attention.py;\n"
                           "  -error range|fraction|negative|v0|e0|layernorm_e0: the refusal under test.\n";

#include <petnet.h>
#include "testutil.h"
#include <petscviewerhdf5.h>

#define V_SMALL 11
#define E_SMALL 5
#define T_SMALL 6

static PetscErrorCode CreateLayer(MPI_Comm comm, const char kind[], const char args[], PetNetShape in, Layer *layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate(comm, layer));
  PetscCall(LayerSetType(*layer, kind));
  if (args) PetscCall(LayerSetArguments(*layer, args));
  PetscCall(LayerSetInputShape(*layer, &in));
  PetscCall(LayerSetUp(*layer));
  PetscFunctionReturn(0);
}

static PetscErrorCode FillRandom(PetscRandom rnd, PetscInt n, PetscScalar a[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscRandomGetValue(rnd, &a[i]));
  PetscFunctionReturn(0);
}

/* ids with many repeats: (7 p + 3) mod V */
static void FillIds(PetscInt P, PetscInt V, PetscScalar ids[])
{
  for (PetscInt p = 0; p < P; p++) ids[p] = (PetscScalar)((7 * p + 3) % V);
}

static PetscReal MaxAbsDiff(PetscInt n, const PetscScalar a[], const PetscScalar b[])
{
  PetscReal m = 0.0;

  for (PetscInt i = 0; i < n; i++) m = PetscMax(m, PetscAbsScalar(a[i] - b[i]));
  return m;
}

static PetscReal MaxAbs(PetscInt n, const PetscScalar a[])
{
  PetscReal m = 0.0;

  for (PetscInt i = 0; i < n; i++) m = PetscMax(m, PetscAbsScalar(a[i]));
  return m;
}

static PetscErrorCode TestEmbedding(PetscRandom rnd)
{
  const PetscInt n = 4, V = V_SMALL, E = E_SMALL, T = T_SMALL, P = n * T;
  PetNetShape    in = {1, {T}};
  Layer          layer;
  PetscScalar   *ids, *W, *y, *dy, *dW, *ref, *onehot, *dx, *u, *yu, *yu2;
  float         *idsf, *yf, *dyf;
  PetscScalar   *dWf;
  PetscReal      err, dot1 = 0.0, dot2 = 0.0;

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, "embedding", "11:5", in, &layer));
  PetscCall(PetscMalloc5(P, &ids, V * E, &W, P * E, &y, P * E, &dy, V * E, &dW));
  PetscCall(PetscMalloc6(V * E, &ref, P * V, &onehot, P, &dx, V * E, &u, P * E, &yu, P * E, &yu2));
  PetscCall(PetscMalloc4(P, &idsf, P * E, &yf, P * E, &dyf, V * E, &dWf));
  FillIds(P, V, ids);
  PetscCall(FillRandom(rnd, V * E, W));
  PetscCall(FillRandom(rnd, P * E, dy));
  PetscCall(FillRandom(rnd, V * E, u));

  /* forward: the rows, exactly */
  PetscCall(LayerForwardArray(layer, n, W, ids, y));
  err = 0.0;
  for (PetscInt p = 0; p < P; p++)
    for (PetscInt e = 0; e < E; e++) err = PetscMax(err, PetscAbsScalar(y[p * E + e] - W[(PetscInt)ids[p] * E + e]));
  PetscCheck(err == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding forward is not the table's rows: error %g", (double)err);

  /* backward against onehot^T dy, a dense reference */
  for (PetscInt i = 0; i < P * V; i++) onehot[i] = 0.0;
  for (PetscInt p = 0; p < P; p++) onehot[p * V + (PetscInt)ids[p]] = 1.0;
  for (PetscInt v = 0; v < V; v++)
    for (PetscInt e = 0; e < E; e++) {
      PetscScalar s = 0.0;

      for (PetscInt p = 0; p < P; p++) s += onehot[p * V + v] * dy[p * E + e];
      ref[v * E + e] = s;
    }
  for (PetscInt i = 0; i < V * E; i++) dW[i] = 0.0;
  for (PetscInt p = 0; p < P; p++) dx[p] = 1.0;
  PetscCall(LayerBackwardArray(layer, n, W, ids, y, dy, dx, dW));
  err = MaxAbsDiff(V * E, dW, ref) / MaxAbs(V * E, ref);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding table gradient against the one-hot reference: relative error %g > 1e-14", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: table gradient against onehot^T dy, relative error %.1e (<= 1e-14)\n", (double)err));
  PetscCheck(MaxAbs(P, dx) == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding: the ids' cotangent is not zero");
  /* it accumulates */
  PetscCall(LayerBackwardArray(layer, n, W, ids, y, dy, NULL, dW));
  for (PetscInt i = 0; i < V * E; i++) ref[i] *= 2.0;
  err = MaxAbsDiff(V * E, dW, ref) / MaxAbs(V * E, ref);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding backward does not accumulate into dtheta: relative error %g", (double)err);

  /* jvp: the rows of the tangent, whatever the input tangent; the dot-product identity <J u, dy> = <u, J^T dy> */
  PetscCall(LayerJVPArray(layer, n, W, ids, y, NULL, u, yu));
  for (PetscInt p = 0; p < P; p++) dx[p] = 0.25 * p;
  PetscCall(LayerJVPArray(layer, n, W, ids, y, dx, u, yu2));
  PetscCheck(MaxAbsDiff(P * E, yu, yu2) == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding jvp depends on the input tangent");
  for (PetscInt i = 0; i < P * E; i++) dot1 += yu[i] * dy[i];
  for (PetscInt i = 0; i < V * E; i++) dot2 += u[i] * ref[i] / 2.0;
  err = PetscAbsReal(dot1 - dot2) / PetscMax(PetscAbsReal(dot1), 1e-300);
  PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding dot-product test: %g > 1e-14", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: dot-product identity of the table's Jacobian %.1e (<= 1e-14); dx = 0; jvp ignores the input tangent\n", (double)err));

  /* float kernels against double */
  for (PetscInt p = 0; p < P; p++) idsf[p] = (float)ids[p];
  for (PetscInt i = 0; i < P * E; i++) dyf[i] = (float)dy[i];
  {
    const float *xs[1]  = {idsf};
    float       *dxs[1] = {NULL};

    PetscCall(LayerForwardSingle(layer, n, W, xs, yf));
    err = 0.0;
    for (PetscInt i = 0; i < P * E; i++) err = PetscMax(err, PetscAbsReal((PetscReal)yf[i] - y[i]));
    PetscCheck(err <= 1e-6 * MaxAbs(P * E, y), PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding single forward against double: %g", (double)err);
    for (PetscInt i = 0; i < V * E; i++) dWf[i] = 0.0;
    PetscCall(LayerBackwardSingle(layer, n, W, xs, yf, dyf, dxs, dWf));
    for (PetscInt i = 0; i < V * E; i++) ref[i] /= 2.0;
    err = MaxAbsDiff(V * E, dWf, ref) / MaxAbs(V * E, ref);
    PetscCheck(err <= 1e-6, PETSC_COMM_SELF, PETSC_ERR_PLIB, "embedding single table gradient against double: relative error %g > 1e-6", (double)err);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "embedding: float forward and table gradient against double, relative error <= 1e-6\n"));
  PetscCall(PetscFree5(ids, W, y, dy, dW));
  PetscCall(PetscFree6(ref, onehot, dx, u, yu, yu2));
  PetscCall(PetscFree4(idsf, yf, dyf, dWf));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* forward, dx and dtheta of a layer at 1 and 2 threads: the same bits */
static PetscErrorCode TestThreads(PetscRandom rnd, const char kind[], const char args[], PetNetShape in, PetscInt n, PetscBool ids)
{
  Layer        layer;
  PetscInt     insize, outsize, np;
  PetscScalar *x, *theta, *dy, *y[2], *dx[2], *dtheta[2];

  PetscFunctionBegin;
  PetscCall(CreateLayer(PETSC_COMM_SELF, kind, args, in, &layer));
  PetscCall(PetNetShapeSize(&in, &insize));
  {
    PetNetShape out;

    PetscCall(LayerGetOutputShape(layer, &out));
    PetscCall(PetNetShapeSize(&out, &outsize));
  }
  PetscCall(LayerGetNumParameters(layer, &np));
  PetscCall(PetscMalloc3(n * insize, &x, np, &theta, n * outsize, &dy));
  PetscCall(PetscMalloc6(n * outsize, &y[0], n * outsize, &y[1], n * insize, &dx[0], n * insize, &dx[1], np, &dtheta[0], np, &dtheta[1]));
  if (ids)
    FillIds(n * insize, 2048, x);
  else
    PetscCall(FillRandom(rnd, n * insize, x));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, n * outsize, dy));
  for (PetscInt t = 0; t < 2; t++) {
    PetscCall(PetNetSetNumThreads(t + 1));
    for (PetscInt i = 0; i < np; i++) dtheta[t][i] = 0.5;
    PetscCall(LayerForwardArray(layer, n, theta, x, y[t]));
    PetscCall(LayerBackwardArray(layer, n, theta, x, y[t], dy, dx[t], dtheta[t]));
  }
  PetscCall(PetNetSetNumThreads(1));
  if (ids) { /* the table gradient of the large case (several parts of rows) against a plain loop over the positions */
    PetNetShape  out;
    PetscInt     E;
    PetscScalar *ref;
    PetscReal    err;

    PetscCall(LayerGetOutputShape(layer, &out));
    E = out.dim[out.ndim - 1];
    PetscCall(PetscMalloc1(np, &ref));
    for (PetscInt i = 0; i < np; i++) ref[i] = 0.5;
    for (PetscInt p = 0; p < n * insize; p++)
      for (PetscInt e = 0; e < E; e++) ref[(PetscInt)x[p] * E + e] += dy[p * E + e];
    err = MaxAbsDiff(np, dtheta[0], ref) / MaxAbs(np, ref);
    PetscCheck(err <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the table gradient of %" PetscInt_FMT " rows against a plain scatter-add: relative error %g > 1e-14", kind, np / E, (double)err);
    PetscCall(PetscFree(ref));
  }
  PetscCheck(!memcmp(y[0], y[1], sizeof(PetscScalar) * n * outsize), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: forward differs between 1 and 2 threads", kind);
  PetscCheck(!memcmp(dx[0], dx[1], sizeof(PetscScalar) * n * insize), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: dx differs between 1 and 2 threads", kind);
  PetscCheck(!memcmp(dtheta[0], dtheta[1], sizeof(PetscScalar) * np), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the parameter gradient differs between 1 and 2 threads", kind);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "%-10s %" PetscInt_FMT " samples: forward, dx and the parameter gradient the same bits at 1 and 2 threads\n", kind, n));
  PetscCall(PetscFree3(x, theta, dy));
  PetscCall(PetscFree6(y[0], y[1], dx[0], dx[1], dtheta[0], dtheta[1]));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/*
  attention against a direct reference: every T x T matrix formed (S = Q K^T / sqrt(d), P = softmax(S) by rows, with
  -inf above the diagonal when causal), in plain loops independent of the tiled kernel, M the dropout map (1 when
  mask is NULL):
    forward   O = (P .* M) V per head, y = O Wo^T + bo
    backward  dO = dy Wo, dP = M .* (dO V^T), dS = P .* (dP - rowsum(dP .* P)), dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d),
              dV = (P .* M)^T dO, dx = dQKV Win, dWin = dQKV^T x, dbin = sum dQKV, dWo = dy^T O, dbo = sum dy
    jvp       S' = (Q' K^T + Q K'^T) / sqrt(d), P' = P .* (S' - rowsum(P .* S')), O' = (P' .* M) V + (P .* M) V',
              dy = O' Wo^T + O dWo^T + dbo
  x [n][T][E], theta = [Win 3E x E, bin 3E, Wo E x E, bo E], mask [n][H][T][T].
*/
static void AttentionReference(PetscInt n, PetscInt T, PetscInt E, PetscInt H, PetscBool causal, const PetscReal *mask, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *dy, const PetscScalar *dx, const PetscScalar *dtheta,
                               PetscScalar *y, PetscScalar *gx, PetscScalar *gtheta, PetscScalar *ydot)
{
  const PetscInt     d = E / H, np = 4 * E * E + 4 * E;
  const PetscScalar *Win = theta, *bin = theta + 3 * E * E, *Wo = theta + 3 * E * E + 3 * E, *bo = theta + 4 * E * E + 3 * E;
  const PetscScalar *dWin = dtheta, *dbin = dtheta + 3 * E * E, *dWo = dtheta + 3 * E * E + 3 * E, *dbo = dtheta + 4 * E * E + 3 * E;
  const PetscReal    scale = 1.0 / PetscSqrtReal((PetscReal)d);
  PetscScalar       *qkv, *o, *dO, *dqkv, *qkvd, *od, *P, *dP, *Sd;

  PetscCallAbort(PETSC_COMM_SELF, PetscMalloc6(n * T * 3 * E, &qkv, n * T * E, &o, n * T * E, &dO, n * T * 3 * E, &dqkv, n * T * 3 * E, &qkvd, n * T * E, &od));
  PetscCallAbort(PETSC_COMM_SELF, PetscMalloc3(T * T, &P, T * T, &dP, T * T, &Sd));
  for (PetscInt i = 0; i < np; i++) gtheta[i] = 0.0;
  for (PetscInt r = 0; r < n * T; r++)
    for (PetscInt f = 0; f < 3 * E; f++) {
      PetscScalar s = bin[f], sd = dbin[f];

      for (PetscInt e = 0; e < E; e++) {
        s += x[r * E + e] * Win[f * E + e];
        sd += dx[r * E + e] * Win[f * E + e] + x[r * E + e] * dWin[f * E + e];
      }
      qkv[r * 3 * E + f]  = s;
      qkvd[r * 3 * E + f] = sd;
    }
  for (PetscInt r = 0; r < n * T; r++) /* dO = dy Wo */
    for (PetscInt e = 0; e < E; e++) {
      PetscScalar s = 0.0;

      for (PetscInt f = 0; f < E; f++) s += dy[r * E + f] * Wo[f * E + e];
      dO[r * E + e] = s;
    }
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt h = 0; h < H; h++) {
#define RQ(t, c)  qkv[(s * T + (t)) * 3 * E + h * d + (c)]
#define RK(t, c)  qkv[(s * T + (t)) * 3 * E + E + h * d + (c)]
#define RV(t, c)  qkv[(s * T + (t)) * 3 * E + 2 * E + h * d + (c)]
#define RQD(t, c) qkvd[(s * T + (t)) * 3 * E + h * d + (c)]
#define RKD(t, c) qkvd[(s * T + (t)) * 3 * E + E + h * d + (c)]
#define RVD(t, c) qkvd[(s * T + (t)) * 3 * E + 2 * E + h * d + (c)]
#define RM(i, j)  (mask ? mask[((s * H + h) * T + (i)) * T + (j)] : 1.0)
      for (PetscInt i = 0; i < T; i++) {
        PetscScalar mx = -PETSC_MAX_REAL, sum = 0.0, c = 0.0, D = 0.0;

        for (PetscInt j = 0; j < T; j++) {
          PetscScalar sc = 0.0, scd = 0.0;

          for (PetscInt a = 0; a < d; a++) {
            sc += RQ(i, a) * RK(j, a);
            scd += RQD(i, a) * RK(j, a) + RQ(i, a) * RKD(j, a);
          }
          P[i * T + j]  = (causal && j > i) ? -PETSC_INFINITY : scale * sc;
          Sd[i * T + j] = scale * scd;
          mx            = PetscMax(mx, P[i * T + j]);
        }
        for (PetscInt j = 0; j < T; j++) {
          P[i * T + j] = (causal && j > i) ? 0.0 : PetscExpReal(P[i * T + j] - mx);
          sum += P[i * T + j];
        }
        for (PetscInt j = 0; j < T; j++) {
          P[i * T + j] /= sum;
          c += P[i * T + j] * Sd[i * T + j];
        }
        for (PetscInt a = 0; a < d; a++) {
          PetscScalar v = 0.0, vd = 0.0;

          for (PetscInt j = 0; j < T; j++) {
            v += P[i * T + j] * RM(i, j) * RV(j, a);
            vd += RM(i, j) * (P[i * T + j] * (Sd[i * T + j] - c) * RV(j, a) + P[i * T + j] * RVD(j, a));
          }
          o[(s * T + i) * E + h * d + a]  = v;
          od[(s * T + i) * E + h * d + a] = vd;
        }
        for (PetscInt j = 0; j < T; j++) {
          PetscScalar v = 0.0;

          for (PetscInt a = 0; a < d; a++) v += dO[(s * T + i) * E + h * d + a] * RV(j, a);
          dP[i * T + j] = RM(i, j) * v;
          D += dP[i * T + j] * P[i * T + j];
        }
        for (PetscInt j = 0; j < T; j++) dP[i * T + j] = P[i * T + j] * (dP[i * T + j] - D); /* dS */
      }
      for (PetscInt t = 0; t < T; t++)
        for (PetscInt a = 0; a < d; a++) {
          PetscScalar gq = 0.0, gk = 0.0, gv = 0.0;

          for (PetscInt j = 0; j < T; j++) {
            gq += dP[t * T + j] * RK(j, a);
            gk += dP[j * T + t] * RQ(j, a);
            gv += P[j * T + t] * RM(j, t) * dO[(s * T + j) * E + h * d + a];
          }
          dqkv[(s * T + t) * 3 * E + h * d + a]         = scale * gq;
          dqkv[(s * T + t) * 3 * E + E + h * d + a]     = scale * gk;
          dqkv[(s * T + t) * 3 * E + 2 * E + h * d + a] = gv;
        }
#undef RQ
#undef RK
#undef RV
#undef RQD
#undef RKD
#undef RVD
#undef RM
    }
  for (PetscInt r = 0; r < n * T; r++)
    for (PetscInt e = 0; e < E; e++) {
      PetscScalar v = bo[e], vd = dbo[e], g = 0.0;

      for (PetscInt f = 0; f < E; f++) {
        v += o[r * E + f] * Wo[e * E + f];
        vd += od[r * E + f] * Wo[e * E + f] + o[r * E + f] * dWo[e * E + f];
      }
      for (PetscInt f = 0; f < 3 * E; f++) g += dqkv[r * 3 * E + f] * Win[f * E + e];
      y[r * E + e]    = v;
      ydot[r * E + e] = vd;
      gx[r * E + e]   = g;
    }
  for (PetscInt r = 0; r < n * T; r++) {
    for (PetscInt f = 0; f < 3 * E; f++) {
      for (PetscInt e = 0; e < E; e++) gtheta[f * E + e] += dqkv[r * 3 * E + f] * x[r * E + e];
      gtheta[3 * E * E + f] += dqkv[r * 3 * E + f];
    }
    for (PetscInt e = 0; e < E; e++) {
      for (PetscInt f = 0; f < E; f++) gtheta[3 * E * E + 3 * E + e * E + f] += dy[r * E + e] * o[r * E + f];
      gtheta[4 * E * E + 3 * E + e] += dy[r * E + e];
    }
  }
  PetscCallAbort(PETSC_COMM_SELF, PetscFree6(qkv, o, dO, dqkv, qkvd, od));
  PetscCallAbort(PETSC_COMM_SELF, PetscFree3(P, dP, Sd));
}

/* the tiled layer (several tiles, causal and not, H = 1, 2, 4) against the reference: forward, dx, dtheta, jvp to 1e-13 */
static PetscErrorCode TestAttentionReference(PetscRandom rnd)
{
  const PetscInt n = 3, T = 7, E = 8, np = 4 * E * E + 4 * E, N = n * T * E;
  const PetscInt heads[3] = {1, 2, 4}, tiles[4] = {1, 3, 7, 64};
  PetNetShape    in = {2, {T, E}};
  PetscScalar   *x, *theta, *dy, *dx, *dtheta, *y, *gx, *gt, *yd, *ry, *rgx, *rgt, *ryd;
  PetscReal      worst = 0.0;

  PetscFunctionBegin;
  PetscCall(PetscMalloc6(N, &x, np, &theta, N, &dy, N, &dx, np, &dtheta, N, &y));
  PetscCall(PetscMalloc7(N, &gx, np, &gt, N, &yd, N, &ry, N, &rgx, np, &rgt, N, &ryd));
  PetscCall(FillRandom(rnd, N, x));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, N, dy));
  PetscCall(FillRandom(rnd, N, dx));
  PetscCall(FillRandom(rnd, np, dtheta));
  for (PetscInt c = 0; c < 2; c++)
    for (PetscInt hh = 0; hh < 3; hh++) {
      char args[32];

      AttentionReference(n, T, E, heads[hh], (PetscBool)c, NULL, theta, x, dy, dx, dtheta, ry, rgx, rgt, ryd);
      PetscCall(PetscSNPrintf(args, sizeof(args), "%" PetscInt_FMT "%s", heads[hh], c ? ":causal" : ""));
      for (PetscInt b = 0; b < 4; b++) {
        Layer     layer;
        char      opt[32];
        PetscReal err[4];

        PetscCall(PetscSNPrintf(opt, sizeof(opt), "%" PetscInt_FMT, tiles[b]));
        PetscCall(PetscOptionsSetValue(NULL, "-attention_tile", opt));
        PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
        PetscCall(LayerSetType(layer, "attention"));
        PetscCall(LayerSetArguments(layer, args));
        PetscCall(LayerSetFromOptions(layer));
        PetscCall(LayerSetInputShape(layer, &in));
        PetscCall(LayerSetUp(layer));
        PetscCall(PetscOptionsClearValue(NULL, "-attention_tile"));
        for (PetscInt i = 0; i < np; i++) gt[i] = 0.0;
        PetscCall(LayerForwardArray(layer, n, theta, x, y));
        PetscCall(LayerBackwardArray(layer, n, theta, x, y, dy, gx, gt));
        PetscCall(LayerJVPArray(layer, n, theta, x, y, dx, dtheta, yd));
        err[0] = MaxAbsDiff(N, y, ry) / MaxAbs(N, ry);
        err[1] = MaxAbsDiff(N, gx, rgx) / MaxAbs(N, rgx);
        err[2] = MaxAbsDiff(np, gt, rgt) / MaxAbs(np, rgt);
        err[3] = MaxAbsDiff(N, yd, ryd) / MaxAbs(N, ryd);
        for (PetscInt k = 0; k < 4; k++) {
          PetscCheck(err[k] <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "attention:%s tile %" PetscInt_FMT ": %s against the untiled reference: relative error %g > 1e-13", args, tiles[b],
                     k == 0   ? "forward"
                     : k == 1 ? "dx"
                     : k == 2 ? "dtheta"
                              : "jvp",
                     (double)err[k]);
          worst = PetscMax(worst, err[k]);
        }
        PetscCall(LayerDestroy(&layer));
      }
    }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "attention (T = %" PetscInt_FMT ", E = %" PetscInt_FMT ", H = 1, 2, 4, causal and not, tiles 1, 3, 7, 64): forward, dx, dtheta and jvp against the untiled reference, largest relative error %.1e (<= 1e-13)\n",
                        T, E, (double)worst));
  PetscCall(PetscFree6(x, theta, dy, dx, dtheta, y));
  PetscCall(PetscFree7(gx, gt, yd, ry, rgx, rgt, ryd));
  PetscFunctionReturn(0);
}

static inline uint64_t TestSplitMix64(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/*
  the dropout map of an attention layer's first training-mode forward (attention.c's documented hash, written out
  independently): the layer's key from (seed, layer index, pass 1), then per (sample s, head h, query i, key j) of
  one rank's batch M_ij = 0 when u < p, else 1/(1 - p), u uniform in [0, 1) from the key and the global index
*/
static void AttentionTestMask(PetscInt64 seed, PetscInt index, PetscReal p, PetscInt n, PetscInt H, PetscInt T, PetscReal *mask)
{
  const uint64_t key = TestSplitMix64(TestSplitMix64(TestSplitMix64((uint64_t)seed) ^ (uint64_t)index) ^ (uint64_t)1);

  for (PetscInt s = 0; s < n; s++)
    for (PetscInt h = 0; h < H; h++)
      for (PetscInt i = 0; i < T; i++)
        for (PetscInt j = 0; j < T; j++) {
          const uint64_t  idx = (((uint64_t)s * (uint64_t)H + (uint64_t)h) * (uint64_t)T + (uint64_t)i) * (uint64_t)T + (uint64_t)j;
          const PetscReal u   = (PetscReal)(TestSplitMix64(key ^ TestSplitMix64(idx)) >> 11) * 0x1.0p-53;

          mask[((s * H + h) * T + i) * T + j] = u < p ? 0.0 : 1.0 / (1.0 - p);
        }
}

/*
  the tile kernels (attentionkernels.h) at tiles B = 1, 3, 7, 64 on T = 151 (a multiple of none: partial last blocks
  and tiles; in double at 64 the tile products go to BLAS, below to the loop nest; in single with d a multiple of 8 to
  attentiontile.h's float kernels (d = 8: one vector of features, 16: two, 24: two and one; a planted dropped second
  vector of dV and dK fails at 0.71), else as in double), causal and not, the two head counts given,
  without and with attention dropout (p = 0.3, training mode, the map written out independently), in double and in
  single precision, against the direct reference: forward, dx, dtheta and jvp, relative to the reference's largest
  entry, at most 1e-13 in double and 2e-5 in single (float's unit round-off 6e-8 times the sums over T keys). The inputs
  are rounded to float first, so both precisions are compared with the reference at the same point.
*/
static PetscErrorCode TestAttentionTilesOf(PetscRandom rnd, PetscInt E, const PetscInt heads[2])
{
  const PetscInt  n = 2, T = 151, np = 4 * E * E + 4 * E, N = n * T * E;
  const PetscInt  tiles[4] = {1, 3, 7, 64};
  const PetscReal tol[2] = {1e-13, 2e-5}, p = 0.3;
  PetNetShape     in = {2, {T, E}};
  PetscScalar    *x, *theta, *dy, *dx, *dtheta, *y, *gx, *gt, *yd, *ry, *rgx, *rgt, *ryd;
  float          *xf, *dyf, *dxf, *yf, *gxf, *ydf;
  PetscReal      *mask, worst[2] = {0, 0};

  PetscFunctionBegin;
  PetscCall(PetscMalloc6(N, &x, np, &theta, N, &dy, N, &dx, np, &dtheta, N, &y));
  PetscCall(PetscMalloc7(N, &gx, np, &gt, N, &yd, N, &ry, N, &rgx, np, &rgt, N, &ryd));
  PetscCall(PetscMalloc6(N, &xf, N, &dyf, N, &dxf, N, &yf, N, &gxf, N, &ydf));
  PetscCall(PetscMalloc1(n * PetscMax(heads[0], heads[1]) * T * T, &mask));
  PetscCall(FillRandom(rnd, N, x));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, N, dy));
  PetscCall(FillRandom(rnd, N, dx));
  PetscCall(FillRandom(rnd, np, dtheta));
  for (PetscInt i = 0; i < N; i++) {
    xf[i]  = (float)x[i];
    dyf[i] = (float)dy[i];
    dxf[i] = (float)dx[i];
    x[i]   = xf[i];
    dy[i]  = dyf[i];
    dx[i]  = dxf[i];
  }
  for (PetscInt i = 0; i < np; i++) {
    theta[i]  = (float)theta[i];
    dtheta[i] = (float)dtheta[i];
  }
  for (PetscInt drop = 0; drop < 2; drop++)
    for (PetscInt c = 0; c < 2; c++)
      for (PetscInt hh = 0; hh < 2; hh++) {
        char args[32];

        if (drop) AttentionTestMask(0, 0, p, n, heads[hh], T, mask);
        AttentionReference(n, T, E, heads[hh], (PetscBool)c, drop ? mask : NULL, theta, x, dy, dx, dtheta, ry, rgx, rgt, ryd);
        PetscCall(PetscSNPrintf(args, sizeof(args), "%" PetscInt_FMT "%s", heads[hh], c ? ":causal" : ""));
        for (PetscInt b = 0; b < 4; b++)
          for (PetscInt single = 0; single < 2; single++) {
            const float *xs[1] = {xf}, *dxs[1] = {dxf};
            float       *gxs[1] = {gxf};
            Layer        layer;
            char         opt[32];
            PetscReal    err[4];

            PetscCall(PetscSNPrintf(opt, sizeof(opt), "%" PetscInt_FMT, tiles[b]));
            PetscCall(PetscOptionsSetValue(NULL, "-attention_tile", opt));
            if (drop) PetscCall(PetscOptionsSetValue(NULL, "-attention_dropout", "0.3"));
            PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
            PetscCall(LayerSetType(layer, "attention"));
            PetscCall(LayerSetArguments(layer, args));
            PetscCall(LayerSetIndex(layer, 0));
            PetscCall(LayerSetFromOptions(layer));
            PetscCall(LayerSetInputShape(layer, &in));
            PetscCall(LayerSetUp(layer));
            PetscCall(LayerSetTraining(layer, (PetscBool)drop));
            PetscCall(PetscOptionsClearValue(NULL, "-attention_tile"));
            PetscCall(PetscOptionsClearValue(NULL, "-attention_dropout"));
            for (PetscInt i = 0; i < np; i++) gt[i] = 0.0;
            if (single) {
              PetscCall(LayerForwardSingle(layer, n, theta, xs, yf));
              PetscCall(LayerBackwardSingle(layer, n, theta, xs, yf, dyf, gxs, gt));
              PetscCall(LayerJVPSingle(layer, n, theta, xs, yf, dxs, dtheta, ydf));
              for (PetscInt i = 0; i < N; i++) {
                y[i]  = yf[i];
                gx[i] = gxf[i];
                yd[i] = ydf[i];
              }
            } else {
              PetscCall(LayerForwardArray(layer, n, theta, x, y));
              PetscCall(LayerBackwardArray(layer, n, theta, x, y, dy, gx, gt));
              PetscCall(LayerJVPArray(layer, n, theta, x, y, dx, dtheta, yd));
            }
            err[0] = MaxAbsDiff(N, y, ry) / MaxAbs(N, ry);
            err[1] = MaxAbsDiff(N, gx, rgx) / MaxAbs(N, rgx);
            err[2] = MaxAbsDiff(np, gt, rgt) / MaxAbs(np, rgt);
            err[3] = MaxAbsDiff(N, yd, ryd) / MaxAbs(N, ryd);
            for (PetscInt k = 0; k < 4; k++) {
              PetscCheck(err[k] <= tol[single], PETSC_COMM_SELF, PETSC_ERR_PLIB, "attention:%s tile %" PetscInt_FMT " on T = %" PetscInt_FMT "%s in %s: %s against the direct reference: relative error %g > %g", args, tiles[b], T,
                         drop ? " with dropout 0.3" : "", single ? "single" : "double",
                         k == 0   ? "forward"
                         : k == 1 ? "dx"
                         : k == 2 ? "dtheta"
                                  : "jvp",
                         (double)err[k], (double)tol[single]);
              worst[single] = PetscMax(worst[single], err[k]);
            }
            PetscCall(LayerDestroy(&layer));
          }
      }
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "attention tiles 1, 3, 7, 64 on (T, E) = (%" PetscInt_FMT ", %" PetscInt_FMT "), H = %" PetscInt_FMT ", %" PetscInt_FMT
                        ", causal and not, dropout 0 and 0.3: forward, dx, dtheta and jvp against the direct reference, largest relative error %.1e in double (<= %g), %.1e in single (<= %g)\n",
                        T, E, heads[0], heads[1], (double)worst[0], (double)tol[0], (double)worst[1], (double)tol[1]));
  PetscCall(PetscFree6(x, theta, dy, dx, dtheta, y));
  PetscCall(PetscFree7(gx, gt, yd, ry, rgx, rgt, ryd));
  PetscCall(PetscFree6(xf, dyf, dxf, yf, gxf, ydf));
  PetscCall(PetscFree(mask));
  PetscFunctionReturn(0);
}

/* heads of d = 8 and 4 features (E = 8), and of 24 and 16 (E = 48): in single the float tile kernels (attentiontile.h)
   take d a multiple of 8, in vectors of 16 and 8 features, and d = 4 the tile GEMMs */
static PetscErrorCode TestAttentionTiles(PetscRandom rnd)
{
  const PetscInt small[2] = {1, 2}, wide[2] = {2, 3};

  PetscFunctionBegin;
  PetscCall(TestAttentionTilesOf(rnd, 8, small));
  PetscCall(TestAttentionTilesOf(rnd, 48, wide));
  PetscFunctionReturn(0);
}

/*
  attention's query block (LayerAttentionSetQueryBlock()): the blocks [0, 3), [3, 5), [5, 7) of a sequence of T = 7
  positions against the whole layer (n = 2 samples, E = 8, H = 2; causal and not; attention dropout 0.3 in training
  mode, the same map in every copy; tiles 2 (block edges inside a tile) and 64). Each block's forward and jvp are the
  whole layer's rows; the sums over the blocks of backward's dx and dtheta and of the second-order term's dxdot and
  dthetadot are the whole layer's, to 1e-13 relative; a block's single-precision forward and backward against the whole
  layer's to 1e-5.
*/
static PetscErrorCode AttentionBlockLayer(const char args[], PetscInt tile, PetscReal p, PetscInt q0, PetscInt nq, PetNetShape in, Layer *layer)
{
  char opt[32];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "%" PetscInt_FMT, tile));
  PetscCall(PetscOptionsSetValue(NULL, "-attention_tile", opt));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "%g", (double)p));
  PetscCall(PetscOptionsSetValue(NULL, "-attention_dropout", opt));
  PetscCall(LayerCreate(PETSC_COMM_SELF, layer));
  PetscCall(LayerSetType(*layer, "attention"));
  PetscCall(LayerSetArguments(*layer, args));
  PetscCall(LayerSetFromOptions(*layer));
  PetscCall(PetscOptionsClearValue(NULL, "-attention_tile"));
  PetscCall(PetscOptionsClearValue(NULL, "-attention_dropout"));
  PetscCall(LayerSetIndex(*layer, 0));
  PetscCall(LayerSetTraining(*layer, PETSC_TRUE));
  PetscCall(LayerSetInputShape(*layer, &in));
  if (nq) PetscCall(LayerAttentionSetQueryBlock(*layer, q0, nq));
  PetscCall(LayerSetUp(*layer));
  PetscFunctionReturn(0);
}

/* rows [q0, q0 + nq) of each of n samples of [n][T][E] into [n][nq][E] */
static void BlockRows(PetscInt n, PetscInt T, PetscInt E, PetscInt q0, PetscInt nq, const PetscScalar *a, PetscScalar *b)
{
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < nq * E; i++) b[(s * nq) * E + i] = a[(s * T + q0) * E + i];
}

static PetscErrorCode TestAttentionQueryBlock(PetscRandom rnd)
{
  const PetscInt n = 2, T = 7, E = 8, np = 4 * E * E + 4 * E, N = n * T * E, nb = 3, q0s[4] = {0, 3, 5, 7}, tiles[2] = {2, 64};
  PetNetShape    in = {2, {T, E}};
  PetscScalar   *x, *theta, *dy, *xd, *thd, *y, *gx, *gt, *yd, *sx, *st;              /* the whole layer's */
  PetscScalar   *by, *bdy, *bgx, *bgt, *byd, *bsx, *bst, *rows, *accx, *acct, *bydot; /* the blocks' */
  PetscReal      worst = 0.0, worstf = 0.0;

  PetscFunctionBegin;
  PetscCall(PetscMalloc6(N, &x, np, &theta, N, &dy, N, &xd, np, &thd, N, &y));
  PetscCall(PetscMalloc5(N, &gx, np, &gt, N, &yd, N, &sx, np, &st));
  PetscCall(PetscMalloc6(N, &by, N, &bdy, N, &bgx, np, &bgt, N, &byd, N, &bsx));
  PetscCall(PetscMalloc5(np, &bst, N, &rows, N, &accx, np, &acct, N, &bydot));
  PetscCall(FillRandom(rnd, N, x));
  PetscCall(FillRandom(rnd, np, theta));
  PetscCall(FillRandom(rnd, N, dy));
  PetscCall(FillRandom(rnd, N, xd));
  PetscCall(FillRandom(rnd, np, thd));
  for (PetscInt c = 0; c < 2; c++)
    for (PetscInt b = 0; b < 2; b++) {
      const char *args = c ? "2:causal" : "2";
      Layer       whole;
      PetscReal   err[6] = {0, 0, 0, 0, 0, 0};

      PetscCall(AttentionBlockLayer(args, tiles[b], 0.3, 0, 0, in, &whole));
      PetscCall(PetscArrayzero(gt, np));
      PetscCall(PetscArrayzero(sx, N));
      PetscCall(PetscArrayzero(st, np));
      PetscCall(LayerForwardArray(whole, n, theta, x, y));
      PetscCall(LayerBackwardArray(whole, n, theta, x, y, dy, gx, gt));
      PetscCall(LayerJVPArray(whole, n, theta, x, y, xd, thd, yd));
      PetscCall(LayerSOBackwardArray(whole, n, theta, x, y, xd, thd, yd, dy, sx, st));
      PetscCall(PetscArrayzero(accx, N));
      PetscCall(PetscArrayzero(acct, np));
      PetscCall(PetscArrayzero(bsx, N));
      PetscCall(PetscArrayzero(bst, np));
      for (PetscInt k = 0; k < nb; k++) {
        const PetscInt q0 = q0s[k], nq = q0s[k + 1] - q0s[k], M = n * nq * E;
        Layer          blk;

        PetNetShape out;
        PetscInt    nparams;

        PetscCall(AttentionBlockLayer(args, tiles[b], 0.3, q0, nq, in, &blk));
        PetscCall(LayerGetOutputShape(blk, &out));
        PetscCall(LayerGetNumParameters(blk, &nparams));
        PetscCheck(out.dim[0] == nq && nparams == np, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the block [%" PetscInt_FMT ", %" PetscInt_FMT ") gives %" PetscInt_FMT " rows and %" PetscInt_FMT " parameters", q0, q0 + nq, out.dim[0], nparams);
        PetscCall(LayerForwardArray(blk, n, theta, x, by));
        BlockRows(n, T, E, q0, nq, y, rows);
        err[0] = PetscMax(err[0], MaxAbsDiff(M, by, rows) / MaxAbs(N, y));
        BlockRows(n, T, E, q0, nq, dy, bdy);
        PetscCall(PetscArrayzero(bgt, np));
        PetscCall(LayerBackwardArray(blk, n, theta, x, by, bdy, bgx, bgt));
        for (PetscInt i = 0; i < N; i++) accx[i] += bgx[i];
        for (PetscInt i = 0; i < np; i++) acct[i] += bgt[i];
        PetscCall(LayerJVPArray(blk, n, theta, x, by, xd, thd, byd));
        BlockRows(n, T, E, q0, nq, yd, rows);
        err[3] = PetscMax(err[3], MaxAbsDiff(M, byd, rows) / MaxAbs(N, yd));
        PetscCall(PetscArraycpy(bydot, byd, M));
        PetscCall(LayerSOBackwardArray(blk, n, theta, x, by, xd, thd, bydot, bdy, bsx, bst)); /* accumulates over the blocks */
        {                                                                                     /* single precision: the block's forward and backward against the whole layer's double */
          float       *xf, *yf, *dyf, *dxf;
          const float *xfc;

          PetscCall(PetscMalloc4(N, &xf, M, &yf, M, &dyf, N, &dxf));
          for (PetscInt i = 0; i < N; i++) xf[i] = (float)x[i];
          for (PetscInt i = 0; i < M; i++) dyf[i] = (float)bdy[i];
          xfc = xf;
          PetscCall(LayerSetFrozen(blk, PETSC_TRUE)); /* the same dropout map as the double forward's */
          PetscCall(LayerForwardSingle(blk, n, theta, &xfc, yf));
          PetscCall(LayerBackwardSingle(blk, n, theta, &xfc, yf, dyf, &dxf, NULL));
          BlockRows(n, T, E, q0, nq, y, rows);
          for (PetscInt i = 0; i < M; i++) worstf = PetscMax(worstf, PetscAbsReal((PetscReal)yf[i] - PetscRealPart(rows[i])) / MaxAbs(N, y));
          for (PetscInt i = 0; i < N; i++) worstf = PetscMax(worstf, PetscAbsReal((PetscReal)dxf[i] - PetscRealPart(bgx[i])) / MaxAbs(N, gx));
          PetscCall(PetscFree4(xf, yf, dyf, dxf));
        }
        PetscCall(LayerDestroy(&blk));
      }
      err[1] = MaxAbsDiff(N, accx, gx) / MaxAbs(N, gx);
      err[2] = MaxAbsDiff(np, acct, gt) / MaxAbs(np, gt);
      err[4] = MaxAbsDiff(N, bsx, sx) / MaxAbs(N, sx);
      err[5] = MaxAbsDiff(np, bst, st) / MaxAbs(np, st);
      for (PetscInt k = 0; k < 6; k++) {
        const char *what[6] = {"forward rows", "sum of backward's dx", "sum of backward's dtheta", "jvp rows", "sum of the second-order dxdot", "sum of the second-order dthetadot"};

        PetscCheck(err[k] <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "attention:%s tile %" PetscInt_FMT " with dropout, query blocks [0, 3), [3, 5), [5, 7): %s against the whole layer: relative error %g > 1e-13", args, tiles[b], what[k],
                   (double)err[k]);
        worst = PetscMax(worst, err[k]);
      }
      PetscCall(LayerDestroy(&whole));
    }
  PetscCheck(worstf <= 1e-5, PETSC_COMM_SELF, PETSC_ERR_PLIB, "attention's query block in single precision: relative error %g > 1e-5 against the whole layer in double", (double)worstf);
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "attention query blocks [0, 3), [3, 5), [5, 7) of T = %" PetscInt_FMT " (E = %" PetscInt_FMT
                        ", H = 2, causal and not, dropout 0.3, tiles 2 and 64): forward and jvp rows, the blocks' sums of dx, dtheta and of the second-order "
                        "term against the whole layer, largest relative error %.1e (<= 1e-13); single precision %.1e (<= 1e-5)\n",
                        T, E, (double)worst, (double)worstf));
  PetscCall(PetscFree6(x, theta, dy, xd, thd, y));
  PetscCall(PetscFree5(gx, gt, yd, sx, st));
  PetscCall(PetscFree6(by, bdy, bgx, bgt, byd, bsx));
  PetscCall(PetscFree5(bst, rows, accx, acct, bydot));
  PetscFunctionReturn(0);
}

/* a query block beyond the sequence, refused at set-up with the node and what to give */
static PetscErrorCode TestAttentionQueryBlockError(void)
{
  PetNetShape in = {2, {7, 8}};
  Layer       layer;

  PetscFunctionBegin;
  PetscCall(LayerCreate(PETSC_COMM_WORLD, &layer));
  PetscCall(LayerSetType(layer, "attention"));
  PetscCall(LayerSetArguments(layer, "2"));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerAttentionSetQueryBlock(layer, 5, 5));
  PetscCall(LayerSetUp(layer));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/*
  attention's memory: what forward keeps (QKV, O, lse: (4 E + H) T values per sample) and what backward adds (dO and
  dQKV, 4 E T), counted by PetscMallocGetCurrentUsage() around the calls, at T = 2048 and 4096 (one sample, causal,
  E = 8, H = 2): linear in T, the ratio of the two at most 2.2 (a T x T matrix per head would make it 4).
*/
static PetscErrorCode TestAttentionMemory(PetscRandom rnd)
{
  const PetscInt E = 8, H = 2, np = 4 * E * E + 4 * E;
  PetscLogDouble state[2], work[2];

  PetscFunctionBegin;
  for (PetscInt k = 0; k < 2; k++) {
    const PetscInt T = 2048 << k, N = T * E;
    PetNetShape    in = {2, {T, E}};
    Layer          layer;
    PetscScalar   *x, *theta, *y, *dy, *dx, *dtheta;
    PetscLogDouble m0, m1, m2;

    PetscCall(CreateLayer(PETSC_COMM_SELF, "attention", "2:causal", in, &layer));
    PetscCall(PetscMalloc6(N, &x, np, &theta, N, &y, N, &dy, N, &dx, np, &dtheta));
    PetscCall(FillRandom(rnd, N, x));
    PetscCall(FillRandom(rnd, np, theta));
    PetscCall(FillRandom(rnd, N, dy));
    PetscCall(PetscArrayzero(dtheta, np));
    PetscCall(PetscMallocGetCurrentUsage(&m0));
    PetscCall(LayerForwardArray(layer, 1, theta, x, y));
    PetscCall(PetscMallocGetCurrentUsage(&m1));
    PetscCall(LayerBackwardArray(layer, 1, theta, x, y, dy, dx, dtheta));
    PetscCall(PetscMallocGetCurrentUsage(&m2));
    state[k] = m1 - m0;
    work[k]  = m2 - m1;
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "attention:2:causal on (T, E) = (%" PetscInt_FMT ", %" PetscInt_FMT "): forward keeps %.0f bytes ((4 E + H) T 8 = %" PetscInt_FMT "), backward adds %.0f (4 E T 8 = %" PetscInt_FMT ")\n", T, E, state[k],
                          (4 * E + H) * T * 8, work[k], 4 * E * T * 8));
    PetscCall(PetscFree6(x, theta, y, dy, dx, dtheta));
    PetscCall(LayerDestroy(&layer));
  }
  PetscCheck(state[0] > 0 && state[1] / state[0] <= 2.2 && (state[1] + work[1]) / (state[0] + work[0]) <= 2.2, PETSC_COMM_SELF, PETSC_ERR_PLIB,
             "attention memory is not linear in T (or not counted: run with -malloc_debug): state %g / %g, with backward's work %g / %g (at most 2.2)", state[1], state[0], state[1] + work[1], state[0] + work[0]);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "attention memory from T = 2048 to 4096: state x %.3f, state and work x %.3f (<= 2.2)\n", state[1] / state[0], (state[1] + work[1]) / (state[0] + work[0])));
  PetscFunctionReturn(0);
}

/* a Net on ids that depend on the global sample index only: the same numbers on any number of ranks */
static PetscErrorCode TestNet(void)
{
  const PetscInt T = 5, nglobal = 6;
  PetNetShape    in = {1, {T}};
  Net            net;
  Vec            X, Y, G;
  PetscInt       lo, hi;
  PetscScalar   *x;
  PetscReal      ny, ng;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "embedding:9:4,layernorm,tanh,rmsnorm,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  {
    PetscMPIInt size, rank;
    PetscInt    nlocal;

    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    nlocal = nglobal / size + (rank < nglobal % size ? 1 : 0);
    PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  }
  PetscCall(VecGetOwnershipRange(X, &lo, &hi));
  PetscCall(VecGetArray(X, &x));
  for (PetscInt i = lo; i < hi; i++) x[i - lo] = (PetscScalar)((5 * i + 2) % 9);
  PetscCall(VecRestoreArray(X, &x));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Y, NORM_2, &ny));
  {
    Vec theta;

    PetscCall(NetGetParameters(net, &theta));
    PetscCall(VecDuplicate(theta, &G));
  }
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, Y, NULL, G)); /* the gradient of 0.5 |Y|^2 */
  PetscCall(VecNorm(G, NORM_2, &ng));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "embedding:9:4,layernorm,tanh,rmsnorm,dense:3 on %" PetscInt_FMT " sequences of %" PetscInt_FMT " ids: |Y| %.10e |G| %.10e\n", nglobal, T, (double)ny, (double)ng));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/*
  a Net with attention dropout in training mode on inputs that depend on the global sample index only: |Y| and the
  gradient of 0.5 |Y|^2 the same on any number of ranks (the dropout map is a function of the global indices), and
  the output in training mode differs from the one in evaluation mode (the map is applied)
*/
static PetscErrorCode TestAttentionNet(void)
{
  const PetscInt T = 6, E = 4, nglobal = 5;
  PetNetShape    in = {2, {T, E}};
  Net            net;
  Vec            X, Y, Yeval, G;
  PetscInt       lo, hi;
  PetscScalar   *x;
  PetscReal      ny, ng, ndiff;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "attention:2:causal,tanh,attention:1,dense:3"));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(PetscOptionsSetValue(NULL, "-layer0_attention_dropout", "0.3"));
  PetscCall(PetscOptionsSetValue(NULL, "-layer2_attention_dropout", "0.2"));
  PetscCall(PetscOptionsSetValue(NULL, "-layer0_attention_tile", "4"));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  {
    PetscMPIInt size, rank;
    PetscInt    nlocal;

    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    nlocal = nglobal / size + (rank < nglobal % size ? 1 : 0);
    PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  }
  PetscCall(VecDuplicate(Y, &Yeval));
  PetscCall(VecGetOwnershipRange(X, &lo, &hi));
  PetscCall(VecGetArray(X, &x));
  for (PetscInt i = lo; i < hi; i++) x[i - lo] = PetscSinReal(0.37 * i + 0.1);
  PetscCall(VecRestoreArray(X, &x));
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetForward(net, X, Yeval));
  PetscCall(NetSetTraining(net, PETSC_TRUE));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Y, NORM_2, &ny));
  PetscCall(VecAXPY(Yeval, -1.0, Y));
  PetscCall(VecNorm(Yeval, NORM_2, &ndiff));
  PetscCheck(ndiff > 1e-3 * ny, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "attention dropout in training mode changes nothing: |Y_train - Y_eval| = %g, |Y| = %g", (double)ndiff, (double)ny);
  {
    Vec theta;

    PetscCall(NetGetParameters(net, &theta));
    PetscCall(VecDuplicate(theta, &G));
  }
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, Y, NULL, G));
  PetscCall(VecNorm(G, NORM_2, &ng));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "attention:2:causal (dropout 0.3),tanh,attention:1 (dropout 0.2),dense:3 on %" PetscInt_FMT " sequences (%" PetscInt_FMT ", %" PetscInt_FMT "), training: |Y| %.10e |G| %.10e; evaluation differs\n", nglobal,
                        T, E, (double)ny, (double)ng));
  PetscCall(PetscOptionsClearValue(NULL, "-layer0_attention_dropout"));
  PetscCall(PetscOptionsClearValue(NULL, "-layer2_attention_dropout"));
  PetscCall(PetscOptionsClearValue(NULL, "-layer0_attention_tile"));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yeval));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/*
  the files of the PyTorch comparison (tests/torch_attention.py): a Net SPEC on (T, E) = (6, 8) saved to PFX.h5
  (NetSave(), nn.MultiheadAttention's state_dict names), and PFX_grad.h5 with the input x [n][T][E], the output y, and
  the input cotangent dx and parameter gradient g of 0.5 |y|^2 (PetNet's flat order: each layer's tensors in turn)
*/
static PetscErrorCode TestAttentionTorch(const char prefix[], const char spec[])
{
  const PetscInt T = 6, E = 8, n = 5;
  PetNetShape    in = {2, {T, E}};
  Net            net;
  Vec            X, Y, DX, G, theta;
  PetscScalar   *x;
  PetscViewer    viewer;
  char           path[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_SELF, &net));
  PetscCall(NetSetLayers(net, spec));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, 11));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(X, &DX));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &G));
  PetscCall(VecGetArray(X, &x));
  for (PetscInt i = 0; i < n * T * E; i++) x[i] = 1.5 * PetscSinReal(0.71 * i + 0.3);
  PetscCall(VecRestoreArray(X, &x));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, Y, DX, G));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s.h5", prefix));
  PetscCall(NetSave(net, path));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s_grad.h5", prefix));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_SELF, path, FILE_MODE_WRITE, &viewer));
  PetscCall(PetscObjectSetName((PetscObject)X, "x"));
  PetscCall(PetscObjectSetName((PetscObject)Y, "y"));
  PetscCall(PetscObjectSetName((PetscObject)DX, "dx"));
  PetscCall(PetscObjectSetName((PetscObject)G, "grad"));
  PetscCall(VecView(X, viewer));
  PetscCall(VecView(Y, viewer));
  PetscCall(VecView(DX, viewer));
  PetscCall(VecView(G, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "%s on %" PetscInt_FMT " sequences (%" PetscInt_FMT ", %" PetscInt_FMT "): %s.h5 and %s_grad.h5 written\n", spec, n, T, E, prefix, prefix));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&DX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  char        error[64] = "", torch[PETSC_MAX_PATH_LEN] = "", spec[256] = "attention:2,tanh,attention:4:causal,dense:3";
  PetscBool   net = PETSC_FALSE, attention = PETSC_FALSE, tiles = PETSC_FALSE, memory = PETSC_FALSE, attnet = PETSC_FALSE, qblock = PETSC_FALSE, qblockerror = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-net", &net, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention", &attention, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention_tiles", &tiles, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention_memory", &memory, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention_net", &attnet, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention_qblock", &qblock, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-attention_qblock_error", &qblockerror, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-attention_torch", torch, sizeof(torch), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-attention_torch_spec", spec, sizeof(spec), NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  if (error[0]) {
    PetNetShape in = {1, {T_SMALL}};
    Layer       layer;
    PetscScalar ids[T_SMALL], W[V_SMALL * E_SMALL], y[T_SMALL * E_SMALL];
    PetscBool   isrange, isfraction, isnegative, isv0, ise0, isln;

    PetscCall(PetscStrcmp(error, "range", &isrange));
    PetscCall(PetscStrcmp(error, "fraction", &isfraction));
    PetscCall(PetscStrcmp(error, "negative", &isnegative));
    PetscCall(PetscStrcmp(error, "v0", &isv0));
    PetscCall(PetscStrcmp(error, "e0", &ise0));
    PetscCall(PetscStrcmp(error, "layernorm_e0", &isln));
    if (isv0) PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "0:4", in, &layer));
    if (ise0) PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "11:0", in, &layer));
    if (isln) {
      PetNetShape bad = {2, {4, 0}};

      PetscCall(CreateLayer(PETSC_COMM_WORLD, "layernorm", NULL, bad, &layer));
    }
    PetscCheck(isrange || isfraction || isnegative, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-error %s: no such case (range, fraction, negative, v0, e0, layernorm_e0), or it was not refused", error);
    PetscCall(CreateLayer(PETSC_COMM_WORLD, "embedding", "11:5", in, &layer));
    PetscCall(LayerSetIndex(layer, 0));
    FillIds(T_SMALL, V_SMALL, ids);
    for (PetscInt i = 0; i < V_SMALL * E_SMALL; i++) W[i] = i;
    ids[4] = isrange ? V_SMALL : isfraction ? 2.5 : -1.0;
    PetscCall(LayerForwardArray(layer, 1, W, ids, y));
    PetscCall(LayerDestroy(&layer));
  } else if (net) {
    PetscCall(TestNet());
  } else if (attention) {
    PetscCall(TestAttentionReference(rnd));
  } else if (tiles) {
    PetscCall(TestAttentionTiles(rnd));
  } else if (memory) {
    PetscCall(TestAttentionMemory(rnd));
  } else if (attnet) {
    PetscCall(TestAttentionNet());
  } else if (qblock) {
    PetscCall(TestAttentionQueryBlock(rnd));
  } else if (qblockerror) {
    PetscCall(TestAttentionQueryBlockError());
  } else if (torch[0]) {
    PetscCall(TestAttentionTorch(torch, spec));
  } else {
    PetNetShape seq = {2, {32, 8}}, ids = {1, {16}};

    PetscCall(TestEmbedding(rnd));
    PetscCall(TestThreads(rnd, "embedding", "2048:8", ids, 64, PETSC_TRUE));
    PetscCall(TestThreads(rnd, "layernorm", NULL, seq, 128, PETSC_FALSE));
    PetscCall(TestThreads(rnd, "rmsnorm", NULL, seq, 128, PETSC_FALSE));
    PetscCall(TestThreads(rnd, "attention", "2:causal", seq, 16, PETSC_FALSE));
    PetscCall(TestThreads(rnd, "attention", "4", seq, 16, PETSC_FALSE));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
