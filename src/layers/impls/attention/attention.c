/*
  attention:H[:causal][:rotary]: multi-head scaled dot-product self-attention with its projections (PyTorch's
  nn.MultiheadAttention(E, H, batch_first=True) called as mha(x, x, x), with attn_mask for the causal form). With
  :rotary the Q and K columns of QKV are rotated by their position right after the projection (R QKV below, R the
  rotation of attentionrotary.h, orthogonal and constant): every formula below then reads R Q, R K for Q, K, their
  tangents R Q', R K', and dQ, dK of the projection are R^T of the kernels' (backward, sobackward).

    x, y    [n][T][E]    a sample is a sequence (T, E); H heads of d = E / H features each
    theta   [Win (3E x E), bin (3E), Wo (E x E), bo (E)]   PyTorch's in_proj_weight (the Q rows, then K, then V),
            in_proj_bias, out_proj.weight, out_proj.bias, in that order and layout
    Q       [n][nq][E]   Q = x Win_q^T + bin_q on the query rows (kept by forward)
    KV      [n][T][2E]   K and V = x Win_kv^T + bin_kv on every row (kept)
    O       [n][nq][E]   the heads' outputs side by side (kept)
    lse     [n][H][nq]   the log-sum-exp of each query row's scaled scores (kept)
  The query rows: all T (nq = T, q0 = 0), or a query block (LayerAttentionSetQueryBlock(): a Net splitting the tokens
  of a sequence over its ranks gives each rank the queries of its tokens) of nq rows at the global positions
  [q0, q0 + nq), against the keys of the whole sequence: y is then (nq, E), the block's rows of the whole layer's
  output. The global position q0 + i of query row i is the one field the causal mask (key j <= q0 + i) and the dropout
  hash read.

  Per sample and head, with q_i, k_j, v_j the head's d columns of QKV's row, s_ij = q_i . k_j / sqrt(d) (-inf for
  j > i with the causal mask), P = softmax over j, M the attention dropout's map (1 without):
    O_i = sum_j P_ij M_ij v_j,   y = O Wo^T + bo
  The kernel is tiled (the flash-attention recurrence, attentionkernels.h): forward walks K and V in tiles of B keys
  (-attention_tile) keeping per query row the running max and sum, and stores only O and lse besides Q, K, V; backward
  and jvp recompute each tile's probabilities from lse. No T x T matrix is ever formed: the stored state of a sample is
  2 E T + (2 E + H) nq values, the work of backward and jvp another 2 E T + 2 E nq, plus two B x B tiles of scores per
  thread part. Each (block, tile) step is a few matrix products of the tile (S = Q_blk K_tile^T, O_blk += P V_tile, ...:
  in float with d a multiple of 8 PetNet's own kernels on the operands in place (attentiontile.h), else BLAS through
  LayerGemm(), not threaded) and passes over the rows of S (the statistics, a vectorised exp).
    backward  dO = dy Wo,  dWo += O^T dy,  dbo += sum dy;  per head D_i = dO_i . O_i, dP_ij = M_ij dO_i . v_j,
              dS_ij = P_ij (dP_ij - D_i), dq_i = sum_j dS_ij k_j / sqrt(d), dk_j = sum_i dS_ij q_i / sqrt(d),
              dv_j = sum_i P_ij M_ij dO_i;  dx = dQKV Win,  dWin += x^T dQKV,  dbin += sum dQKV
    jvp       QKV' = dx Win^T + x dWin^T + dbin;  per head s'_ij = (q'_i . k_j + q_i . k'_j) / sqrt(d),
              c_i = sum_j P_ij s'_ij, O'_i = sum_j P_ij M_ij (s'_ij v_j + v'_j) - c_i O_i;  dy = O' Wo^T + O dWo^T + dbo
    sobackward  derived beside LayerSOBackward_Attention (two passes over the tiles, double)
  Attention dropout (-attention_dropout p, training mode only): M_ij = 0 with probability p, else 1/(1 - p), a
  counter-based hash of (seed, layer index, pass, GLOBAL sample, head, i, j) as dropout.c draws its masks: the same map
  on any number of ranks and threads, recomputed (never stored) by backward and jvp, held under LayerSetFrozen().
  Single precision (a Net at -net_precision single or bfloat16): the same kernels on float values, with the softmax
  statistics accumulated in float; the GEMMs on the parameters rounded once per forward; the parameter gradient
  accumulated in double.
  Backend: the projections' GEMMs (Q, K, V and the output projection; forward, backward dx and dW, jvp) carry the
  layer's layer->gemm in their epilogues, which its Net sets (NetSetBackend(): oneDNN's matmul at single, the biases
  fused; sgemm where oneDNN has no fast kernel, as bfloat16 on AVX2); the tile products of the heads are small, run
  inside the pairs' parallel region and stay native (attentiontile.h's kernels, or sgemm through LayerGemm() not
  threaded; benchmarks.md has the measurements).
  The second-order adjoint runs in double: no backend.
  Threads: the (sample, head) pairs in parts fixed by the sizes (each pair's rows of QKV, O, dQKV its own), the GEMMs
  cut by LayerGemm(): the same bits for any number of threads.
*/
#include <petnet/private/layerimpl.h>
#include <petnet/private/mathimpl.h>
#include "../../interface/layergemm.h"

typedef struct {
  PetscInt H, E, T, d; /* heads, features, positions, features per head */
  PetscInt Ew;         /* the heads' width H d: E, or a block's part of it */
  /* a block of heads of a whole layer (LayerAttentionSetHeadBlock_C, for a Net splitting the heads over its ranks): the
     heads hstart.. of Hall (Hall = H: the whole layer), in_proj of its rows of Q, K and V, out_proj of its columns, and
     out_proj.bias only where outbias; the output is then that block's part of the whole layer's output */
  PetscInt  Hall, hstart, hblock;
  PetscBool outbias;
  Layer     whole;        /* ... that whole layer (not referenced: it outlives the block), whose pass counter and frozen
                             state the block's dropout map follows, or NULL */
  PetscInt64 blockoffset; /* ... the global index of the first sample the block runs on (LayerAttentionSetBlockOffset_C) */
  PetscBool  offsetgiven; /* the whole layer's samples' place given by its caller (LayerAttentionSetBlockOffset_C):
                             blockoffset, no exchange */
  /* the query block: the rows [q0, q0 + nq) of the T positions (LayerAttentionSetQueryBlock(); qblock = 0: all rows,
     q0 = 0, nq = T); row i of Q, O, lse and y is at the global position q0 + i */
  PetscInt   qstart, qblock, q0, nq;
  PetscInt   tile, B; /* the tile asked for (-attention_tile) and the one in use (at most T) */
  PetscBool  causal;
  PetscBool  rotary; /* rotary positions on Q and K (attentionrotary.h) */
  PetscReal  base;   /* their base (-attention_rotary_base, 10000) */
  PetscReal  p;      /* attention dropout */
  PetscReal  scale;  /* 1 / sqrt(d) */
  PetscInt   pairsperpart;
  PetscInt64 seed, counter; /* the dropout map's seed and training-mode forward passes so far */
  PetscBool  masked;        /* the last forward applied the dropout map: backward and jvp follow it */
  uint64_t   key;           /* the map of the last forward */
  PetscInt64 offset;        /* the global index of the local batch's first sample at the last forward */
  PetscInt   tilesize;      /* work entries per part: the scores of a row in a tile and the block's row statistics */
  /* forward's state in double and in float, for nstate samples (-1: none) */
  PetscInt     nstate, nstatef, cap, capf;
  PetscScalar *q, *kv, *o, *lse, *tiles;
  float       *qf, *kvf, *of, *lsef, *tilesf;
  /* work of backward and jvp: dO [n nq][E], dQ [n nq][E] and dKV [nT][2E] */
  PetscInt     capw, capwf;
  PetscScalar *work;
  float       *workf;
  float       *thetaf, *dthetaf, *wgradf; /* the parameters and a direction rounded to float; a float weight gradient */
  PetscInt     nf;
  /* rotary positions: (cos, sin) of each position t = 0..T-1 and pair i = 0..d/2-1, [T][d/2][2], in double and float */
  PetscScalar *rot;
  float       *rotf;
} Layer_Attention;

/* offsets of Win [3Ew][E], bin [3Ew], Wo [E][Ew], bo [E] in theta (Ew = E but for a block of heads) */
#define ATT_WIN(E, Ew) ((size_t)0)
#define ATT_BIN(E, Ew) ((size_t)3 * (Ew) * (E))
#define ATT_WO(E, Ew)  ((size_t)3 * (Ew) * (E) + 3 * (Ew))
#define ATT_BO(E, Ew)  ((size_t)4 * (Ew) * (E) + 3 * (Ew))

/* the layer in messages: its node's name, or its kind and place in its owner's list */
static PetscErrorCode AttentionDescription(Layer layer, size_t len, char desc[])
{
  PetscFunctionBegin;
  if (((PetscObject)layer)->name)
    PetscCall(LayerGetNodeDescription_Private(layer, len, desc));
  else if (layer->index >= 0)
    PetscCall(PetscSNPrintf(desc, len, "attention layer %" PetscInt_FMT, layer->index));
  else
    PetscCall(PetscSNPrintf(desc, len, "attention layer"));
  PetscFunctionReturn(0);
}

static inline uint64_t AttentionSplitMix64(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* M_ij of local sample s, head h: 0 with probability p, else 1/(1 - p); a function of the global indices alone */
static inline PetscReal AttentionMask(const Layer_Attention *att, PetscInt s, PetscInt h, PetscInt i, PetscInt j)
{
  const uint64_t  idx = (((uint64_t)(att->offset + s) * (uint64_t)att->Hall + (uint64_t)(att->hstart + h)) * (uint64_t)att->T + (uint64_t)i) * (uint64_t)att->T + (uint64_t)j;
  const PetscReal u   = (PetscReal)(AttentionSplitMix64(att->key ^ AttentionSplitMix64(idx)) >> 11) * 0x1.0p-53; /* uniform [0, 1) */

  return u < att->p ? 0.0 : 1.0 / (1.0 - att->p);
}

/* a forward pass's dropout map (training mode with p > 0; otherwise none), collective when there is one and its place
   is not given (LayerAttentionSetBlockOffset_C) */
static PetscErrorCode AttentionDraw(Layer layer, PetscInt n)
{
  Layer_Attention *att    = (Layer_Attention *)layer->data;
  const Layer      owner  = att->whole ? att->whole : layer; /* a block of heads draws the whole layer's map */
  Layer_Attention *oa     = (Layer_Attention *)owner->data;
  PetscInt64       nlocal = n, offset = 0;
  PetscMPIInt      rank;

  PetscFunctionBegin;
  att->masked = (PetscBool)(layer->training && att->p > 0);
  if (!att->masked) PetscFunctionReturn(0);
  if (att->whole || att->offsetgiven)
    att->offset = att->blockoffset; /* its samples' place is given: no exchange */
  else {
    PetscCallMPI(MPI_Exscan(&nlocal, &offset, 1, MPIU_INT64, MPI_SUM, PetscObjectComm((PetscObject)layer)));
    PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)layer), &rank));
    att->offset = rank ? offset : 0; /* MPI_Exscan leaves rank 0's result undefined */
  }
  if (!owner->frozen) oa->counter++;
  att->key = AttentionSplitMix64(AttentionSplitMix64(AttentionSplitMix64((uint64_t)oa->seed) ^ (uint64_t)owner->index) ^ (uint64_t)oa->counter);
  PetscFunctionReturn(0);
}

/* the (query, key) pairs the heads of n samples visit, times the flops of one (causal: row i sees q0 + i + 1 keys) */
static PetscReal AttentionPairFlops(const Layer_Attention *att, PetscInt n, PetscReal perpair)
{
  const PetscReal T = (PetscReal)att->T, nq = (PetscReal)att->nq, q0 = (PetscReal)att->q0, pairs = att->causal ? nq * q0 + nq * (nq + 1) / 2 : nq * T;

  return perpair * att->d * pairs * n * att->H;
}

/* the state of a forward on n samples in double (grows only) */
static PetscErrorCode AttentionState(Layer layer, PetscInt n, PetscScalar **qb, PetscScalar **kv, PetscScalar **o, PetscScalar **lse, PetscScalar **tiles)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (n > att->cap) {
    PetscCall(PetscFree4(att->q, att->kv, att->o, att->lse));
    PetscCall(PetscMalloc4((size_t)n * att->nq * att->Ew, &att->q, (size_t)n * att->T * 2 * att->Ew, &att->kv, (size_t)n * att->nq * att->Ew, &att->o, (size_t)n * att->H * att->nq, &att->lse));
    att->cap = n;
  }
  att->nstate = n;
  *qb         = att->q;
  *kv         = att->kv;
  *o          = att->o;
  *lse        = att->lse;
  *tiles      = att->tiles;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionStateSingle(Layer layer, PetscInt n, float **qb, float **kv, float **o, float **lse, float **tiles)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (n > att->capf) {
    PetscCall(PetscFree4(att->qf, att->kvf, att->of, att->lsef));
    PetscCall(PetscMalloc4((size_t)n * att->nq * att->Ew, &att->qf, (size_t)n * att->T * 2 * att->Ew, &att->kvf, (size_t)n * att->nq * att->Ew, &att->of, (size_t)n * att->H * att->nq, &att->lsef));
    att->capf = n;
  }
  att->nstatef = n;
  *qb          = att->qf;
  *kv          = att->kvf;
  *o           = att->of;
  *lse         = att->lsef;
  *tiles       = att->tilesf;
  PetscFunctionReturn(0);
}

/* forward's state, after a forward on the same n samples in the same precision (op names the pass) */
static PetscErrorCode AttentionCheckState(Layer layer, PetscInt n, const char *op, PetscScalar **qb, PetscScalar **kv, PetscScalar **o, PetscScalar **lse, PetscScalar **tiles)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  PetscCheck(att->nstate == n, PETSC_COMM_SELF, PETSC_ERR_ORDER, "attention layer %" PetscInt_FMT ": %s on %" PetscInt_FMT " samples follows a forward pass at the same point (the last double forward had %" PetscInt_FMT ")", layer->index, op, n,
             att->nstate);
  *qb    = att->q;
  *kv    = att->kv;
  *o     = att->o;
  *lse   = att->lse;
  *tiles = att->tiles;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionCheckStateSingle(Layer layer, PetscInt n, const char *op, float **qb, float **kv, float **o, float **lse, float **tiles)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  PetscCheck(att->nstatef == n, PETSC_COMM_SELF, PETSC_ERR_ORDER, "attention layer %" PetscInt_FMT ": the single-precision %s on %" PetscInt_FMT " samples follows a single-precision forward at the same point (the last had %" PetscInt_FMT ")",
             layer->index, op, n, att->nstatef);
  *qb    = att->qf;
  *kv    = att->kvf;
  *o     = att->of;
  *lse   = att->lsef;
  *tiles = att->tilesf;
  PetscFunctionReturn(0);
}

/* backward's and jvp's work: dO [n nq][Ew], dQ [n nq][Ew], dKV [nT][2Ew] (or their tangents); double accumulates the
   weight gradient in dtheta itself */
static PetscErrorCode AttentionWork(Layer layer, PetscInt n, PetscScalar **dO, PetscScalar **dqb, PetscScalar **dkv, PetscScalar **wgrad)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (n > att->capw) {
    PetscCall(PetscFree(att->work));
    PetscCall(PetscMalloc1((size_t)n * (2 * att->nq + 2 * att->T) * att->Ew, &att->work));
    att->capw = n;
  }
  *dO    = att->work;
  *dqb   = att->work + (size_t)n * att->nq * att->Ew;
  *dkv   = att->work + (size_t)n * 2 * att->nq * att->Ew;
  *wgrad = NULL;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionWorkSingle(Layer layer, PetscInt n, float **dO, float **dqb, float **dkv, float **wgrad)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (n > att->capwf) {
    PetscCall(PetscFree(att->workf));
    PetscCall(PetscMalloc1((size_t)n * (2 * att->nq + 2 * att->T) * att->Ew, &att->workf));
    att->capwf = n;
  }
  *dO    = att->workf;
  *dqb   = att->workf + (size_t)n * att->nq * att->Ew;
  *dkv   = att->workf + (size_t)n * 2 * att->nq * att->Ew;
  *wgrad = att->wgradf;
  PetscFunctionReturn(0);
}

/* the parameters a double pass uses: theta itself */
static PetscErrorCode AttentionParameters(Layer layer, const PetscScalar *theta, const char *op, const PetscScalar **W)
{
  PetscFunctionBegin;
  *W = theta;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionDirection(Layer layer, const PetscScalar *dtheta, const PetscScalar **dW)
{
  PetscFunctionBegin;
  *dW = dtheta;
  PetscFunctionReturn(0);
}

/* single precision: forward rounds the parameters to float once (kept for the backward and jvp at the same point) */
static PetscErrorCode AttentionParametersSingle(Layer layer, const PetscScalar *theta, const char *op, const float **W)
{
  Layer_Attention *att     = (Layer_Attention *)layer->data;
  const PetscBool  forward = (PetscBool)(op[0] == 'f');

  PetscFunctionBegin;
  if (forward && att->nf != layer->nparams) {
    PetscCall(PetscFree3(att->thetaf, att->dthetaf, att->wgradf));
    PetscCall(PetscMalloc3(layer->nparams, &att->thetaf, layer->nparams, &att->dthetaf, 3 * att->Ew * att->E, &att->wgradf));
    att->nf = layer->nparams;
  }
  if (forward) {
    float *thetaf = att->thetaf;

    PETNET_THREAD_BLOCKS(layer->nparams, 16384, for (PetscInt i = i0; i < i1; i++) thetaf[i] = (float)theta[i]);
  }
  PetscCheck(att->nf == layer->nparams, PETSC_COMM_SELF, PETSC_ERR_ORDER, "attention layer %" PetscInt_FMT ": the single-precision %s follows a single-precision forward at the same point (LayerForwardSingle())", layer->index, op);
  *W = att->thetaf;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionDirectionSingle(Layer layer, const PetscScalar *dtheta, const float **dW)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < layer->nparams; i++) att->dthetaf[i] = (float)dtheta[i];
  *dW = att->dthetaf;
  PetscFunctionReturn(0);
}

/* the rotary table in each precision (attentionrotary.h) */
static inline const PetscScalar *AttentionRotaryTable(const Layer_Attention *att)
{
  return att->rot;
}

static inline const float *AttentionRotaryTableSingle(const Layer_Attention *att)
{
  return att->rotf;
}

/* the rows' exponentials are compiled also for AVX-512 and AVX2, picked at load time (as layergemm.c's small loops);
   without contractions, so that the AVX-512 clone (whose ISA has FMA) gives the others' bits */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ATT_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define ATT_TARGET_CLONES
#endif

/*
  x[c] = exp(a x[c] - b) over a row of scores: PetNet's own exp (petnet/private/mathimpl.h, as GELU's; 1 ulp against
  libm, 0 below its range and for -inf, branch-free so that gcc vectorises the loop: 2 doubles a vector, 4 in the AVX2
  clone and 8 in the AVX-512 one picked at load time, as layergemm.c's small loops)
*/
static ATT_TARGET_CLONES void AttentionExpRow(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *restrict x)
{
  for (PetscInt c = 0; c < n; c++) x[c] = PetNetExpDouble(a * x[c] - b);
}

static ATT_TARGET_CLONES void AttentionExpRowSingle(PetscInt n, float a, float b, float *restrict x)
{
  for (PetscInt c = 0; c < n; c++) x[c] = PetNetExpFloat(a * x[c] - b);
}

/* a tile product of fewer multiply-adds than this runs as a loop nest, not BLAS (the tests' tiles of 1 to 7 keys) */
#define ATT_TILE_GEMM_MIN 512

/* rotary positions, forward, backward and jvp, in double and in float (attentionrotary.h, attentionkernels.h); the
   float tiles on attentiontile.h's kernels */
#include "attentiontile.h"
#define ATT_FLOAT_TILES 0
#define ATT_T           PetscScalar
#define ATT_NAME(f)     f
#define ATT_EXP(v)      PetscExpReal(v)
#define ATT_LOG(v)      PetscLogReal(v)
#include "attentionrotary.h"
#include "attentionkernels.h"
#undef ATT_T
#undef ATT_NAME
#undef ATT_EXP
#undef ATT_LOG
#undef ATT_PAIRS
#undef ATT_FLOAT_TILES
#define ATT_FLOAT_TILES 1
#define ATT_T           float
#define ATT_NAME(f)     f##Single
#define ATT_EXP(v)      expf(v)
#define ATT_LOG(v)      logf(v)
#include "attentionrotary.h"
#include "attentionkernels.h"
#undef ATT_T
#undef ATT_NAME
#undef ATT_EXP
#undef ATT_LOG

/*
  sobackward: the derivative of backward along (xdot, thetadot), dy fixed. backward is the chain
    g = dy Wo,   dQKV = A(QKV, g) (the heads' backward),   dx = dQKV Win,   dWin += x^T dQKV,   dWo += O^T dy
  so, with QKV' = xdot Win^T + x Win'^T + bin' and g' = dy Wo' (Wo', Win', bin' the parts of thetadot), O' the heads'
  jvp along QKV':
    dxdot   += dQKV' Win + dQKV Win'       dWin' += x^T dQKV' + xdot^T dQKV,   dbin' += sum dQKV'
    dWo'    += O'^T dy                     dbo'  += 0
  and dQKV' the derivative of the heads' backward along (QKV', g'). Per row i and key j, with the pieces of backward
  (P_ij, dP_ij = M_ij g_i . v_j, D_i = g_i . O_i, dS_ij = P_ij (dP_ij - D_i)) and of jvp (s'_ij, c_i = sum_j P_ij s'_ij):
    P'_ij  = P_ij (s'_ij - c_i)
    dP'_ij = M_ij (g'_i . v_j + g_i . v'_j)
    D'_i   = g'_i . O_i + g_i . O'_i                     (D_i = g_i . O_i, O' the heads' jvp)
    dS'_ij = P'_ij (dP_ij - D_i) + P_ij (dP'_ij - D'_i)
    dq'_i  = sum_j (dS'_ij k_j + dS_ij k'_j) / sqrt(d),  dk'_j = sum_i (dS'_ij q_i + dS_ij q'_i) / sqrt(d)
    dv'_j  = sum_i M_ij (P'_ij g_i + P_ij g'_i)
  c_i and O'_i need a whole row before dS' can be formed: a first pass over the tiles is the jvp (O', c), the second
  forms dQKV and dQKV' together, per block and tile as products of the tile (S, S' = Q' K^T + Q K'^T, dP and
  dP' = G' V^T + G V'^T by GEMMs, the rows' P, P', dS, dS', then dV, dV', dQ, dQ', dK, dK' by GEMMs, as
  attentionkernels.h). Double only (the second-order walk's precision); the work (12 E + H) T values per sample and
  four B x B tiles per thread part is allocated for the call.
*/
static PetscErrorCode AttentionSOPair(const Layer_Attention *att, PetscInt s, PetscInt h, const PetscScalar *qb, const PetscScalar *kv, const PetscScalar *o, const PetscScalar *lse, const PetscScalar *g, const PetscScalar *gd, const PetscScalar *qbd,
                                      const PetscScalar *kvd, const PetscScalar *od, const PetscScalar *c, PetscScalar *dqb, PetscScalar *dkv, PetscScalar *dqbd, PetscScalar *dkvd, PetscScalar *work)
{
  const PetscInt     T = att->T, nq = att->nq, q0 = att->q0, E = att->Ew, d = att->d, B = att->B, ld = E, ldkv = 2 * E; /* E: the heads' width H d; layouts of attentionkernels.h */
  const PetscScalar  scale = att->scale;
  const size_t       off = (size_t)s * nq * ld + h * d, offkv = (size_t)s * T * ldkv + h * d, offo = (size_t)s * nq * E + h * d, offl = ((size_t)s * att->H + h) * nq, BB = (size_t)B * B;
  const PetscScalar *Q = qb + off, *K = kv + offkv, *V = K + E, *O = o + offo, *L = lse + offl, *C = c + offl;
  const PetscScalar *Qd = qbd + off, *Kd = kvd + offkv, *Vd = Kd + E, *G = g + offo, *Gd = gd + offo, *Od = od + offo;
  PetscScalar       *dQ = dqb + off, *dK = dkv + offkv, *dV = dK + E, *dQd = dqbd + off, *dKd = dkvd + offkv, *dVd = dKd + E;
  PetscScalar       *S = work, *Sd = work + BB, *dP = work + 2 * BB, *dPd = work + 3 * BB, *D = work + 4 * BB, *Dd = D + B;
  const PetscBool    drop = att->masked;
  PetscErrorCode     ierr;

  for (PetscInt i = 0; i < nq; i++)
    for (PetscInt k = 0; k < d; k++) dQ[(size_t)i * ld + k] = dQd[(size_t)i * ld + k] = 0;
  for (PetscInt t = 0; t < T; t++)
    for (PetscInt k = 0; k < d; k++) {
      const size_t r = (size_t)t * ldkv + k;

      dK[r] = dV[r] = dKd[r] = dVd[r] = 0;
    }
  for (PetscInt i0 = 0; i0 < nq; i0 += B) {
    const PetscInt i1 = PetscMin(i0 + B, nq), nb = i1 - i0, jend = att->causal ? PetscMin(T, q0 + i1) : T;

    for (PetscInt i = i0; i < i1; i++) {
      D[i - i0]  = AttentionDot(d, G + (size_t)i * E, O + (size_t)i * E);
      Dd[i - i0] = AttentionDot(d, Gd + (size_t)i * E, O + (size_t)i * E) + AttentionDot(d, G + (size_t)i * E, Od + (size_t)i * E);
    }
    for (PetscInt j0 = 0; j0 < jend; j0 += B) {
      const PetscInt j1 = PetscMin(j0 + B, jend), nk = j1 - j0;

      /* S = Q K^T, S' = Q' K^T + Q K'^T, dP = G V^T, dP' = G' V^T + G V'^T on the tile (transposed, as attentionkernels.h) */
      ierr = AttentionTileGemm('T', 'N', nk, nb, d, K + (size_t)j0 * ldkv, ldkv, Q + (size_t)i0 * ld, ld, 0, S, B);
      if (!ierr) ierr = AttentionTileGemm('T', 'N', nk, nb, d, K + (size_t)j0 * ldkv, ldkv, Qd + (size_t)i0 * ld, ld, 0, Sd, B);
      if (!ierr) ierr = AttentionTileGemm('T', 'N', nk, nb, d, Kd + (size_t)j0 * ldkv, ldkv, Q + (size_t)i0 * ld, ld, 1, Sd, B);
      if (!ierr) ierr = AttentionTileGemm('T', 'N', nk, nb, d, V + (size_t)j0 * ldkv, ldkv, G + (size_t)i0 * E, E, 0, dP, B);
      if (!ierr) ierr = AttentionTileGemm('T', 'N', nk, nb, d, V + (size_t)j0 * ldkv, ldkv, Gd + (size_t)i0 * E, E, 0, dPd, B);
      if (!ierr) ierr = AttentionTileGemm('T', 'N', nk, nb, d, Vd + (size_t)j0 * ldkv, ldkv, G + (size_t)i0 * E, E, 1, dPd, B);
      if (ierr) return ierr;
      /* per row: P, P' = P (s' - c), dS = P (dP - D), dS' = P' (dP - D) + P (dP' - D') (scale in both), then P M and P' M */
      for (PetscInt i = i0; i < i1; i++) {
        const PetscInt    jmax = att->causal ? PetscMin(j1, q0 + i + 1) : j1, cnt = PetscMax(jmax - j0, 0);
        const PetscScalar Di = D[i - i0], Ddi = Dd[i - i0], ci = C[i];
        PetscScalar *restrict p = S + (size_t)(i - i0) * B, *restrict pd = Sd + (size_t)(i - i0) * B, *restrict ds = dP + (size_t)(i - i0) * B, *restrict dsd = dPd + (size_t)(i - i0) * B;

        AttentionExpRow(cnt, scale, L[i], p);
        for (PetscInt k = 0; k < cnt; k++) {
          const PetscScalar mij = drop ? AttentionMask(att, s, h, q0 + i, j0 + k) : 1.0, dp = mij * ds[k], dpd = mij * dsd[k];

          pd[k]  = p[k] * (scale * pd[k] - ci);
          ds[k]  = scale * p[k] * (dp - Di);
          dsd[k] = scale * (pd[k] * (dp - Di) + p[k] * (dpd - Ddi));
          p[k] *= mij;
          pd[k] *= mij;
        }
        for (PetscInt k = cnt; k < nk; k++) p[k] = pd[k] = ds[k] = dsd[k] = 0; /* the causal mask on the diagonal tile */
      }
      /* dV += (P M)^T G, dV' += (P' M)^T G + (P M)^T G', dQ += dS K, dQ' += dS' K + dS K', dK += dS^T Q, dK' += dS'^T Q + dS^T Q' */
      ierr = AttentionTileGemm('N', 'T', d, nk, nb, G + (size_t)i0 * E, E, S, B, 1, dV + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = AttentionTileGemm('N', 'T', d, nk, nb, G + (size_t)i0 * E, E, Sd, B, 1, dVd + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = AttentionTileGemm('N', 'T', d, nk, nb, Gd + (size_t)i0 * E, E, S, B, 1, dVd + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = AttentionTileGemm('N', 'N', d, nb, nk, K + (size_t)j0 * ldkv, ldkv, dP, B, 1, dQ + (size_t)i0 * ld, ld);
      if (!ierr) ierr = AttentionTileGemm('N', 'N', d, nb, nk, K + (size_t)j0 * ldkv, ldkv, dPd, B, 1, dQd + (size_t)i0 * ld, ld);
      if (!ierr) ierr = AttentionTileGemm('N', 'N', d, nb, nk, Kd + (size_t)j0 * ldkv, ldkv, dP, B, 1, dQd + (size_t)i0 * ld, ld);
      if (!ierr) ierr = AttentionTileGemm('N', 'T', d, nk, nb, Q + (size_t)i0 * ld, ld, dP, B, 1, dK + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = AttentionTileGemm('N', 'T', d, nk, nb, Q + (size_t)i0 * ld, ld, dPd, B, 1, dKd + (size_t)j0 * ldkv, ldkv);
      if (!ierr) ierr = AttentionTileGemm('N', 'T', d, nk, nb, Qd + (size_t)i0 * ld, ld, dP, B, 1, dKd + (size_t)j0 * ldkv, ldkv);
      if (ierr) return ierr;
    }
  }
  return 0;
}

static PetscErrorCode LayerSOBackward_Attention(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                                PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew, nQ = n * att->nq, nT = n * att->T;
  const size_t     nqe = (size_t)nQ * Ew, nkv = (size_t)nT * 2 * Ew;
  const size_t     sosize = 4 * (size_t)att->B * att->B + 2 * att->B; /* a part's tiles: S, S', dP, dP' and D, D' */
  PetscScalar     *qb, *kv, *o, *lse, *tiles, *work, *qbd, *kvd, *g, *gd, *od, *dqb, *dkv, *dqbd, *dkvd, *c, *sotiles;

  PetscFunctionBegin;
  if (!n || (!dxdot && !dthetadot) || (!xdot && !thetadot)) PetscFunctionReturn(0);
  PetscCall(AttentionEnsureState(layer, n, "sobackward", theta, x, &qb, &kv, &o, &lse, &tiles));
  /* Q', KV', g, g', O', dQ, dKV, dQ', dKV' and c: (12 Ew + H) T values per sample without a query block */
  PetscCall(PetscMalloc1(6 * nqe + 3 * nkv + (size_t)n * att->H * att->nq, &work));
  PetscCall(PetscMalloc1(PETNET_THREAD_PARTS * sosize, &sotiles));
  qbd  = work;
  g    = qbd + nqe;
  gd   = g + nqe;
  od   = gd + nqe;
  dqb  = od + nqe;
  dqbd = dqb + nqe;
  kvd  = dqbd + nqe;
  dkv  = kvd + nkv;
  dkvd = dkv + nkv;
  c    = dkvd + nkv;
  /* Q', KV' = xdot Win^T + x Win'^T + bin';  g = dy Wo;  g' = dy Wo' */
  if (xdot) PetscCall(AttentionProject(att, PETNET_GEMM_NATIVE, n, theta + ATT_WIN(E, Ew), NULL, xdot, 0, qbd, kvd));
  if (thetadot) {
    PetscCall(AttentionProject(att, PETNET_GEMM_NATIVE, n, thetadot + ATT_WIN(E, Ew), thetadot + ATT_BIN(E, Ew), x, xdot ? 1 : 0, qbd, kvd));
    PetscCall(LayerGemm(PETSC_TRUE, 'N', 'N', Ew, nQ, E, thetadot + ATT_WO(E, Ew), Ew, dy, E, 0, gd, Ew, NULL));
  } else
    PetscCall(PetscArrayzero(gd, nqe));
  PetscCall(LayerGemm(PETSC_TRUE, 'N', 'N', Ew, nQ, E, theta + ATT_WO(E, Ew), Ew, dy, E, 0, g, Ew, NULL));
  /* rotary positions: the kernels see R Q', R K' and give the cotangents of the rotated Q, K (R constant: dQ' = R^T ...) */
  AttentionRotateQK(att, n, PETSC_FALSE, qbd, kvd);
  /* the first pass: O' and c; the second: dQKV and dQKV' */
  ATT_PAIRS(att, n, tiles, att->tilesize * sizeof(PetscScalar), AttentionJVPPair(att, s, h, qb, kv, o, lse, qbd, kvd, od, c, (PetscScalar *)pw_));
  ATT_PAIRS(att, n, sotiles, sosize * sizeof(PetscScalar), AttentionSOPair(att, s, h, qb, kv, o, lse, g, gd, qbd, kvd, od, c, dqb, dkv, dqbd, dkvd, (PetscScalar *)pw_));
  AttentionRotateQK(att, n, PETSC_TRUE, dqb, dkv);
  AttentionRotateQK(att, n, PETSC_TRUE, dqbd, dkvd);
  /* dxdot += dQKV' Win + dQKV Win';  dWin' += x^T dQKV' + xdot^T dQKV, dbin' += sum dQKV';  dWo' += O'^T dy */
  if (dxdot) {
    PetscCall(AttentionProjectTranspose(att, PETNET_GEMM_NATIVE, n, theta + ATT_WIN(E, Ew), dqbd, dkvd, 1, dxdot));
    if (thetadot) PetscCall(AttentionProjectTranspose(att, PETNET_GEMM_NATIVE, n, thetadot + ATT_WIN(E, Ew), dqb, dkv, 1, dxdot));
  }
  if (dthetadot) {
    LayerGemmEpilogue epo = {NULL, NULL, NULL, dthetadot + ATT_WO(E, Ew)};

    PetscCall(AttentionProjectGradient(att, PETNET_GEMM_NATIVE, n, x, dqbd, dkvd, NULL, dthetadot + ATT_WIN(E, Ew), dthetadot + ATT_BIN(E, Ew)));
    if (xdot) PetscCall(AttentionProjectGradient(att, PETNET_GEMM_NATIVE, n, xdot, dqb, dkv, NULL, dthetadot + ATT_WIN(E, Ew), NULL));
    PetscCall(LayerGemm(PETSC_TRUE, 'N', 'T', Ew, E, nQ, od, Ew, dy, E, 0, NULL, Ew, &epo));
  }
  PetscCall(PetscFree(work));
  PetscCall(PetscFree(sotiles));
  PetscCall(PetscLogFlops(2.0 * (nQ + 2.0 * nT) * E * Ew * 8 + 2.0 * nQ * E * Ew * 8 + AttentionPairFlops(att, n, 30.0)));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Attention(Layer);

/* sizes from the input (T, E), refused before anything is allocated */
static PetscErrorCode LayerSetUp_Attention(Layer layer)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const char      *prefix;
  char             node[256], shape[64];
  PetscInt64       E, T;

  PetscFunctionBegin;
  PetscCall(LayerReset_Attention(layer));
  if (att->hblock) att->H = att->Hall; /* a block of heads: the whole layer's checks first */
  PetscCall(AttentionDescription(layer, sizeof(node), node));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  if (!prefix) prefix = "";
  PetscCall(PetNetShapeToString(&layer->in, sizeof(shape), shape));
  PetscCheck(layer->in.ndim == 2, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ,
             "The %s takes a sequence (T, E) per sample (T positions of E features), not an input of shape %s: give it a 2-D input (-net_input_shape TxE, or an embedding before it), or reshape what comes before", node, shape);
  T = layer->in.dim[0];
  E = layer->in.dim[1];
  PetscCheck(T > 0 && E > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_SIZ, "The %s takes a sequence (T, E) with T and E positive, not %s", node, shape);
  PetscCheck(att->H > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "The %s has %" PetscInt_FMT " heads: write attention:H with H a positive divisor of E = %" PetscInt64_FMT " (e.g. attention:%" PetscInt64_FMT "), or give -%sattention_heads H", node, att->H, E, E % 4 ? (PetscInt64)1 : (PetscInt64)4,
             prefix);
  PetscCheck(E % att->H == 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "The %s splits E = %" PetscInt64_FMT " features into H = %" PetscInt_FMT " heads, but H does not divide E: write attention:H with H a divisor of %" PetscInt64_FMT " (-%sattention_heads H), or change E (the last dimension of its input)",
             node, E, att->H, E, prefix);
  PetscCheck(att->tile > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s has tile %" PetscInt_FMT ": give -%sattention_tile B with B >= 1 (keys per tile, default 64)", node, att->tile, prefix);
  PetscCheck(att->p >= 0 && att->p < 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s has attention dropout %g: give -%sattention_dropout p with 0 <= p < 1", node, (double)att->p, prefix);
  if (att->rotary) { /* rotary positions turn each head's features in pairs (i, i + d/2) */
    const PetscInt64 d     = E / att->H;
    PetscInt64       Heven = 0;
    char             fix[160];

    for (PetscInt64 h = att->H; h <= E && !Heven; h++)
      if (E % h == 0 && (E / h) % 2 == 0) Heven = h;
    if (Heven)
      PetscCall(PetscSNPrintf(fix, sizeof(fix), "write attention:%" PetscInt64_FMT "%s:rotary (d = %" PetscInt64_FMT ")", Heven, att->causal ? ":causal" : "", E / Heven));
    else
      PetscCall(PetscSNPrintf(fix, sizeof(fix), "make E (the last dimension of its input) have an even divisor d"));
    PetscCheck(d % 2 == 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
               "The %s has rotary positions on heads of d = E / H = %" PetscInt64_FMT " / %" PetscInt_FMT " = %" PetscInt64_FMT
               " features, an odd number: rotary positions turn each head's features in pairs, so d must be even: %s, or drop :rotary (-%sattention_rotary false)",
               node, E, att->H, d, fix, prefix);
    PetscCheck(att->base > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s has rotary base %g: give -%sattention_rotary_base b with b > 0 (default 10000)", node, (double)att->base, prefix);
  }
  /* 64-bit: the parameters 4 E^2 + 4 E and a sample's QKV, 3 E T, must fit a PetscInt */
  PetscCheck(4 * E * E + 4 * E <= PETSC_MAX_INT && 3 * E * T <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "The %s on (T, E) = (%" PetscInt64_FMT ", %" PetscInt64_FMT ") would have %" PetscInt64_FMT " parameters and %" PetscInt64_FMT " values of Q, K, V per sample, more than a PetscInt holds (%d): use a smaller E or T", node, T, E,
             4 * E * E + 4 * E, 3 * E * T, PETSC_MAX_INT);
  att->T    = (PetscInt)T;
  att->E    = (PetscInt)E;
  att->d    = att->E / att->H;
  att->Hall = att->H;
  att->Ew   = att->E;
  if (att->hblock) { /* the rank's heads: in_proj's rows of them in Q, K, V, out_proj's columns */
    PetscCheck(att->hstart >= 0 && att->hstart + att->hblock <= att->Hall, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The %s: heads %" PetscInt_FMT "..%" PetscInt_FMT " of %" PetscInt_FMT, node, att->hstart, att->hstart + att->hblock - 1, att->Hall);
    att->H  = att->hblock;
    att->Ew = att->hblock * att->d;
  } else {
    att->hstart  = 0;
    att->outbias = PETSC_TRUE;
  }
  if (att->qblock) { /* the queries [q0, q0 + nq) of the T positions */
    PetscCheck(att->qstart >= 0 && att->qblock > 0 && (PetscInt64)att->qstart + att->qblock <= T, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
               "The %s on %" PetscInt64_FMT " positions was given the query block [%" PetscInt_FMT ", %" PetscInt64_FMT "): LayerAttentionSetQueryBlock() takes 0 <= q0 and 0 < nq with q0 + nq <= T (or nq = 0: every query)", node, T, att->qstart,
               (PetscInt64)att->qstart + att->qblock);
    att->q0 = att->qstart;
    att->nq = att->qblock;
  } else {
    att->q0 = 0;
    att->nq = att->T;
  }
  att->B            = PetscMin(att->tile, att->T);
  att->scale        = 1.0 / PetscSqrtReal((PetscReal)att->d);
  att->pairsperpart = (PetscInt)PetscMax(1, 65536 / PetscMax(1, (PetscInt64)att->nq * T * att->d)); /* a part: at least ~ 64k multiply-adds */
  /* the work of a thread part, two B x B score tiles and three rows of B (attentionkernels.h), for PETNET_THREAD_PARTS
     parts in a PetscInt: B at most 8192 (1 GB of double tiles) */
  PetscCheck(att->B <= 8192, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "The %s has tile %" PetscInt_FMT " on T = %" PetscInt64_FMT ": its tiles of scores would be %" PetscInt_FMT " x %" PetscInt_FMT " per thread part; give -%sattention_tile B with B <= 8192 (default 64)", node, att->tile, T, att->B, att->B,
             prefix);
  att->tilesize = 2 * att->B * att->B + 3 * att->B + 8 + att->d * ((att->B + 31) / 32 * 32); /* + the dot tiles' scratch (ATT_TILE_BT, rows of 32 for the AVX-512 kernel) */
  att->nstate = att->nstatef = -1;
  layer->out                 = layer->in;
  layer->out.dim[0]          = att->nq; /* the block's rows */
  layer->nparams             = (PetscInt)(4 * E * att->Ew + 3 * att->Ew + (att->outbias ? E : 0));
  PetscCall(PetscMalloc2((size_t)PETNET_THREAD_PARTS * att->tilesize, &att->tiles, (size_t)PETNET_THREAD_PARTS * att->tilesize, &att->tilesf));
  if (att->rotary) { /* (cos, sin) of t base^(-2i/d), t = 0..T-1, i = 0..d/2-1: [T][d/2][2] */
    const PetscInt half = att->d / 2;

    PetscCall(PetscMalloc2((size_t)att->T * att->d, &att->rot, (size_t)att->T * att->d, &att->rotf));
    for (PetscInt i = 0; i < half; i++) {
      const PetscReal freq = PetscPowReal(att->base, -2.0 * i / att->d);

      for (PetscInt t = 0; t < att->T; t++) {
        const size_t    k = ((size_t)t * half + i) * 2;
        const PetscReal a = t * freq;

        att->rot[k]      = PetscCosReal(a);
        att->rot[k + 1]  = PetscSinReal(a);
        att->rotf[k]     = (float)att->rot[k];
        att->rotf[k + 1] = (float)att->rot[k + 1];
      }
    }
  }
  PetscFunctionReturn(0);
}

/*
  PyTorch's nn.MultiheadAttention: in_proj_weight xavier_uniform_ (fan_in E, fan_out 3E: U(-a, a), a = sqrt(6 / 4E)),
  in_proj_bias and out_proj.bias zero; out_proj.weight keeps nn.Linear's default, U(-1/sqrt(E), 1/sqrt(E)) (drawn as
  Glorot uniform with fan_in = fan_out = 3E, whose bound is the same).
*/
static PetscErrorCode LayerInitialize_Attention(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew; /* a block of heads draws its part with the whole layer's fans */

  PetscFunctionBegin;
  PetscCall(LayerInitializeWeights(rnd, LAYER_INIT_XAVIER, 0.0, E, 3 * E, 3 * Ew * E, theta + ATT_WIN(E, Ew)));
  PetscCall(PetscArrayzero(theta + ATT_BIN(E, Ew), 3 * Ew));
  PetscCall(LayerInitializeWeights(rnd, LAYER_INIT_XAVIER, 0.0, 3 * E, 3 * E, E * Ew, theta + ATT_WO(E, Ew)));
  if (att->outbias) PetscCall(PetscArrayzero(theta + ATT_BO(E, Ew), E));
  PetscFunctionReturn(0);
}

/* PyTorch nn.MultiheadAttention's state_dict: in_proj_weight [3E][E], in_proj_bias [3E], out_proj.weight [E][E], out_proj.bias [E] */
static PetscErrorCode LayerTensors_Attention(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const PetscInt   E = att->E, Ew = att->Ew, win[2] = {3 * Ew, E}, bin = 3 * Ew, wo[2] = {E, Ew};

  PetscFunctionBegin;
  PetscCall(LayerTensorSet_Private(&info[0], "in_proj_weight", (PetscInt)ATT_WIN(E, Ew), LAYER_TENSOR_SAME, 2, win));
  PetscCall(LayerTensorSet_Private(&info[1], "in_proj_bias", (PetscInt)ATT_BIN(E, Ew), LAYER_TENSOR_SAME, 1, &bin));
  PetscCall(LayerTensorSet_Private(&info[2], "out_proj.weight", (PetscInt)ATT_WO(E, Ew), LAYER_TENSOR_SAME, 2, wo));
  if (att->outbias) PetscCall(LayerTensorSet_Private(&info[3], "out_proj.bias", (PetscInt)ATT_BO(E, Ew), LAYER_TENSOR_SAME, 1, &E));
  *n = att->outbias ? 4 : 3;
  PetscFunctionReturn(0);
}

/* H[:causal][:rotary], the flags in either order, each at most once */
static PetscErrorCode LayerSetArguments_Attention(Layer layer, const char args[])
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  char            *end;
  long long        H      = strtoll(args, &end, 10);
  PetscBool        causal = PETSC_FALSE, rotary = PETSC_FALSE, good = (PetscBool)(end != args);

  PetscFunctionBegin;
  while (good && *end) {
    if (!strncmp(end, ":causal", 7) && !causal && (!end[7] || end[7] == ':')) {
      causal = PETSC_TRUE;
      end += 7;
    } else if (!strncmp(end, ":rotary", 7) && !rotary && (!end[7] || end[7] == ':')) {
      rotary = PETSC_TRUE;
      end += 7;
    } else
      good = PETSC_FALSE;
  }
  PetscCheck(good, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "Malformed \"attention:%s\": attention takes H, the number of heads (a divisor of the input's last dimension E), and optionally :causal and :rotary (rotary positions; each once, in either order), e.g. attention:4 or attention:4:causal "
             "or attention:4:causal:rotary",
             args);
  PetscCheck(H > 0 && H <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "attention:%s: the number of heads H must be a positive divisor of E (the input's last dimension), e.g. attention:4", args);
  att->H      = (PetscInt)H;
  att->causal = causal;
  att->rotary = rotary;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Attention(Layer layer, size_t len, char args[])
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s%s", att->H, att->causal ? ":causal" : "", att->rotary ? ":rotary" : ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Attention(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;
  const char      *prefix;
  char             node[256];
  PetscInt         H = att->H, tile = att->tile, seed = (PetscInt)att->seed;
  PetscReal        p = att->p, base = att->base;
  PetscBool        causal = att->causal, rotary = att->rotary, set;

  PetscFunctionBegin;
  PetscCall(AttentionDescription(layer, sizeof(node), node));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
  if (!prefix) prefix = "";
  PetscOptionsHeadBegin(PetscOptionsObject, "Attention layer options");
  PetscCall(PetscOptionsInt("-attention_heads", "Heads H (a divisor of E, the input's last dimension)", "LayerSetArguments", H, &H, &set));
  if (set) {
    PetscCheck(H > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: -%sattention_heads must be a positive divisor of E (the input's last dimension), not %" PetscInt_FMT, node, prefix, H);
    att->H = H;
  }
  PetscCall(PetscOptionsBool("-attention_causal", "Position t attends to positions <= t only", "LayerSetArguments", causal, &causal, &set));
  if (set) att->causal = causal;
  PetscCall(PetscOptionsBool("-attention_rotary", "Rotary positions on the queries and keys of each head (RoPE, pairs (i, i + d/2))", "LayerSetArguments", rotary, &rotary, &set));
  if (set) att->rotary = rotary;
  PetscCall(PetscOptionsReal("-attention_rotary_base", "Base of the rotary angles t base^(-2i/d)", "LayerSetArguments", base, &base, &set));
  if (set) {
    PetscCheck(base > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: -%sattention_rotary_base (the base of the rotary angles t base^(-2i/d)) must be positive (default 10000), not %g", node, prefix, (double)base);
    att->base = base;
  }
  PetscCall(PetscOptionsReal("-attention_dropout", "Probability of dropping an attention weight in training mode", "LayerSetArguments", p, &p, &set));
  if (set) {
    PetscCheck(p >= 0 && p < 1, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: -%sattention_dropout (the probability of dropping an attention weight) must be in [0, 1), not %g", node, prefix, (double)p);
    att->p       = p;
    layer->draws = (PetscBool)(p > 0);
  }
  PetscCall(PetscOptionsInt("-attention_tile", "Keys per tile of the kernel (and query rows per block)", "LayerSetArguments", tile, &tile, &set));
  if (set) {
    PetscCheck(tile > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "The %s: -%sattention_tile must be positive (keys per tile, default 64), not %" PetscInt_FMT, node, prefix, tile);
    att->tile = tile;
  }
  PetscCall(PetNetOptionsBoundedInt("-attention_seed", "Seed of the attention dropout maps", "LayerDropoutSetSeed", seed, &seed, &set, 0));
  if (set) att->seed = seed;
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Attention(Layer layer, PetscViewer viewer)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "%" PetscInt_FMT " heads of %" PetscInt_FMT " on (T, E) = (%" PetscInt_FMT ", %" PetscInt_FMT ")%s, tile %" PetscInt_FMT, att->H, att->d, att->T, att->E, att->causal ? ", causal" : "", att->tile));
  if (att->rotary) PetscCall(PetscViewerASCIIPrintf(viewer, ", rotary (base %g)", (double)att->base));
  if (att->p > 0) PetscCall(PetscViewerASCIIPrintf(viewer, ", dropout %g (seed %" PetscInt64_FMT ")", (double)att->p, att->seed));
  if (att->qblock) PetscCall(PetscViewerASCIIPrintf(viewer, ", the queries [%" PetscInt_FMT ", %" PetscInt_FMT ") against the %" PetscInt_FMT " keys", att->qstart, att->qstart + att->qblock, att->T));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Attention(Layer layer)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscFree4(att->q, att->kv, att->o, att->lse));
  PetscCall(PetscFree4(att->qf, att->kvf, att->of, att->lsef));
  PetscCall(PetscFree2(att->tiles, att->tilesf));
  PetscCall(PetscFree2(att->rot, att->rotf));
  PetscCall(PetscFree(att->work));
  PetscCall(PetscFree(att->workf));
  PetscCall(PetscFree3(att->thetaf, att->dthetaf, att->wgradf));
  att->cap = att->capf = att->capw = att->capwf = att->nf = 0;
  att->nstate = att->nstatef = -1;
  att->counter               = 0;
  att->masked                = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The seed and pass counter a checkpoint keeps (LayerGetPassCounter_C, LayerSetPassCounter_C): a restart draws the masks the
   uninterrupted run would have drawn */
static PetscErrorCode LayerGetPassCounter_Attention(Layer layer, PetscInt64 *seed, PetscInt64 *counter)
{
  PetscFunctionBegin;
  *seed    = ((Layer_Attention *)layer->data)->seed;
  *counter = ((Layer_Attention *)layer->data)->counter;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetPassCounter_Attention(Layer layer, PetscInt64 counter)
{
  PetscFunctionBegin;
  ((Layer_Attention *)layer->data)->counter = counter;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Attention(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerReset_Attention(layer));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetSeed_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGetPassCounter_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerSetPassCounter_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetHeadBlock_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetBlockOffset_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionGetHeads_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetQueryBlock_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/*
  For a Net that splits the heads of an attention node over its ranks (the tensor-parallel executor of src/net): this
  layer becomes the block of heads hstart..hstart+hblock-1 of `whole` (whose heads, causal mask, tile, dropout and seed
  it takes), reading the whole x (T, E) and writing its heads' part of the output, a sum over the blocks of which gives
  the whole layer's output. Its parameters, in the whole layer's order: in_proj_weight's rows of its heads in Q, then K,
  then V [3Ew][E]; in_proj_bias's [3Ew]; out_proj.weight's columns of its heads [E][Ew]; out_proj.bias [E] if outbias
  (on one block only). Ew = hblock E / H. Call before LayerSetUp().
*/
static PetscErrorCode LayerAttentionSetHeadBlock_Attention(Layer layer, Layer whole, PetscInt hstart, PetscInt hblock, PetscBool outbias)
{
  Layer_Attention *att = (Layer_Attention *)layer->data, *w = (Layer_Attention *)whole->data;

  PetscFunctionBegin;
  PetscCheck(hblock > 0 && hstart >= 0 && hstart + hblock <= w->H, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of heads %" PetscInt_FMT "..%" PetscInt_FMT " of an attention layer with %" PetscInt_FMT " heads", hstart, hstart + hblock - 1,
             w->H);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  att->H       = w->H;
  att->Hall    = w->H;
  att->causal  = w->causal;
  att->rotary  = w->rotary;
  att->base    = w->base;
  att->tile    = w->tile;
  att->p       = w->p;
  layer->draws = (PetscBool)(w->p > 0);
  att->seed    = w->seed;
  att->hstart  = hstart;
  att->hblock  = hblock;
  att->outbias = outbias;
  att->whole   = whole;
  PetscFunctionReturn(0);
}

/*
  A block of heads (LayerAttentionSetHeadBlock_C) runs on the samples of a group of ranks, given whole on every rank of
  it: offset is the global index of their first sample, so that its dropout map is the whole layer's at those samples
  (M of global sample, head, i, j, with the whole layer's pass counter). Call before each forward pass. On a whole layer
  the same gives its own samples' place without the exchange (a Net's pipeline step, whose rows a stage holds alone),
  and offset -1 lets it find its place collectively again.
*/
static PetscErrorCode LayerAttentionSetBlockOffset_Attention(Layer layer, PetscInt64 offset)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (!att->whole) {
    att->offsetgiven = (PetscBool)(offset >= 0);
    att->blockoffset = PetscMax(offset, 0);
    PetscFunctionReturn(0);
  }
  PetscCheck(offset >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The sample offset %" PetscInt64_FMT " of a block of heads: give the global index of its first sample (nonnegative)", offset);
  att->blockoffset = offset;
  PetscFunctionReturn(0);
}

/* the query block [q0, q0 + nq) (nq = 0: every query); set up again at the next LayerSetUp() */
static PetscErrorCode LayerAttentionSetQueryBlock_Attention(Layer layer, PetscInt q0, PetscInt nq)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (att->qstart == q0 && att->qblock == nq) PetscFunctionReturn(0);
  if (layer->setupcalled) PetscCall(LayerReset(layer));
  att->qstart = q0;
  att->qblock = nq;
  PetscFunctionReturn(0);
}

/*@
  LayerAttentionSetQueryBlock - an attention layer computes only the queries of the positions [q0, q0 + nq) of its
  input sequence (T, E), against the keys and values of all T positions: its output is (nq, E), the rows
  [q0, q0 + nq) of the whole layer's output

  Logically collective

  Input Parameters:
+ layer - an attention layer (`LAYERATTENTION`; layers of other kinds ignore the call)
. q0    - the global position of the block's first query row, 0 <= q0
- nq    - the block's query rows, 0 < nq and q0 + nq <= T; nq = 0: every query (the default)

  Notes:
  Call before `LayerSetUp()` (a call after it resets the layer). Row i of the block is at the global position q0 + i:
  the causal mask (row i sees the keys j <= q0 + i) and the attention dropout's map (a hash of the global sample, head,
  position and key) read that position, so the blocks of a sequence computed on several ranks together give the whole
  layer's output, and the gradients of the parameters summed over the blocks are the whole layer's. The parameters are
  the whole layer's (4 E^2 + 4 E). Backward gives the cotangent of the whole input (T, E): the sum of those of every
  block is the whole layer's.

  The state a forward keeps per sample is Q, O and the log-sum-exp of the nq rows and K and V of the T positions,
  8 (2 E T + (2 E + H) nq) bytes in double instead of 8 (4 E + H) T; backward's and jvp's work 8 (2 E T + 2 E nq).
  A Net that splits the tokens of its sequences over its ranks gives each rank's copy of an attention node the block of
  the rank's tokens (`NET_PARALLEL_SEQUENCE`).

  Level: developer

.seealso: `LAYERATTENTION`, `NetSetParallel()`, `NET_PARALLEL_SEQUENCE`, `LayerSetUp()`
@*/
PetscErrorCode LayerAttentionSetQueryBlock(Layer layer, PetscInt q0, PetscInt nq)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidLogicalCollectiveInt(layer, q0, 2);
  PetscValidLogicalCollectiveInt(layer, nq, 3);
  PetscCheck(q0 >= 0 && nq >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "LayerAttentionSetQueryBlock(): q0 = %" PetscInt_FMT " and nq = %" PetscInt_FMT " must be non-negative (nq = 0: every query)", q0, nq);
  PetscTryMethod(layer, "LayerAttentionSetQueryBlock_C", (Layer, PetscInt, PetscInt), (layer, q0, nq));
  PetscFunctionReturn(0);
}

/* the heads of the whole layer and its attention dropout, for the Net's executors */
static PetscErrorCode LayerAttentionGetHeads_Attention(Layer layer, PetscInt *H, PetscReal *p)
{
  Layer_Attention *att = (Layer_Attention *)layer->data;

  PetscFunctionBegin;
  if (H) *H = att->hblock ? att->Hall : att->H;
  if (p) *p = att->p;
  PetscFunctionReturn(0);
}

/* LayerDropoutSetSeed() on an attention layer: the seed of its dropout maps */
static PetscErrorCode LayerDropoutSetSeed_Attention(Layer layer, PetscInt64 seed)
{
  PetscFunctionBegin;
  ((Layer_Attention *)layer->data)->seed = seed;
  PetscFunctionReturn(0);
}

/*MC
  LAYERATTENTION - "attention": multi-head scaled dot-product self-attention with its projections on a sequence,
  (T, E) -> (T, E), as PyTorch's nn.MultiheadAttention(E, H, batch_first=True) called as mha(x, x, x) (with the
  upper-triangular attn_mask for attention:H:causal).

  Layer list: attention:H[:causal][:rotary] (the flags in either order); H must divide E, the input's last dimension
  (d = E / H features per head).

  Rotary positions (attention:H:rotary, RoPE): after the projection, each head's query and key of the token at
  position t are rotated in the pairs of features (i, i + d/2), i = 0..d/2-1 (the halves of the head, as GPT-NeoX and
  Hugging Face Llama's rotate_half; not RoFormer's interleaved (2i, 2i+1)), by the angle t base^(-2i/d): the scores
  q_i . k_j then depend on the positions through i - j only, and the Net needs no position table. d must be even.
  Values are not rotated; the parameters are those of the layer without :rotary. The position t is the token's place
  in the whole sequence on any number of ranks (tensor parallel: each head turns its own features; sequence parallel:
  global positions). share/python/petnet_torch.py's SelfAttention(E, H, causal, rotary=True) is the PyTorch form.

  Options:
+ -<prefix>attention_heads <H>     - the number of heads
. -<prefix>attention_causal        - position t attends to positions <= t only
. -<prefix>attention_rotary        - rotary positions on the queries and keys (the :rotary flag)
. -<prefix>attention_rotary_base <10000> - the base of the rotary angles t base^(-2i/d)
. -<prefix>attention_dropout <0>   - probability of dropping an attention weight in training mode, in [0, 1) (kept
                                     weights scaled by 1/(1 - p)); the same map on any number of ranks and threads,
                                     held by LayerSetFrozen() (derivative tests); the seed: LayerDropoutSetSeed()
. -<prefix>attention_seed <0>      - the seed of the dropout maps
- -<prefix>attention_tile <64>     - keys per tile of the kernel (and query rows per block)

  Parameters (PyTorch's state_dict names and layouts, in this order): in_proj_weight [3E][E] (the Q rows, then K,
  then V), in_proj_bias [3E], out_proj.weight [E][E], out_proj.bias [E]; 4 E^2 + 4 E in all. Initialised as
  nn.MultiheadAttention: in_proj_weight xavier_uniform, biases zero, out_proj.weight nn.Linear's default
  U(-1/sqrt(E), 1/sqrt(E)).

  Memory: the kernel is tiled (the flash-attention recurrence: running max and sum per query row), so no T x T
  matrix is stored. Forward keeps 8 (4 E + H) T bytes per sample in double (Q, K, V, the heads' outputs and one
  log-sum-exp per row and head), 4 (4 E + H) T in single and bfloat16; backward and jvp add a work of 8 (4 E) T bytes
  per sample (4 (4 E) T in float) and a tile workspace of 8 (2 B^2 + 3 B + 8) bytes per thread part (up to 8 parts),
  B = min(tile, T), in each precision: linear
  in T (tests/transformer.suite, attention_memory: 557,056 and 1,114,112 bytes of state at T = 2048 and 4096, E = 8,
  H = 2). The exact Hessian-vector products' curvature term (sobackward, double) allocates (12 E + H) T values per
  sample and 8 (4 B^2 + 2 B) bytes per thread part for the call. A query block of nq rows (LayerAttentionSetQueryBlock())
  keeps 8 (2 E T + (2 E + H) nq) bytes per sample and works on 8 (2 E T + 2 E nq).
  Rotary positions add a table of 12 d T bytes (cos and sin in double and float) per layer.

  Backend: at single precision with -net_backend onednn (NetSetBackend()) the projections run on oneDNN's matmul (Q,
  K, V and the output projection with their biases fused; backward dX, dWin, dWo; the JVP's products), the heads' tile
  products on sgemm; -info names each oneDNN primitive. bfloat16 runs them natively where oneDNN has no bfloat16
  matmul (AVX2).

  Level: beginner

.seealso: `LayerSetType()`, `LayerSetArguments()`, `LayerDropoutSetSeed()`, `LayerAttentionSetQueryBlock()`, `NetSetLayers()`, `NetSetBackend()`, `LAYERLAYERNORM`
M*/
PETSC_INTERN PetscErrorCode LayerCreate_Attention(Layer layer)
{
  Layer_Attention *att;

  PetscFunctionBegin;
  PetscCall(PetscNew(&att));
  att->tile    = 64;
  att->base    = 10000;
  att->outbias = PETSC_TRUE;
  att->nstate = att->nstatef = -1;
  layer->data                = att;
  layer->ops->setup          = LayerSetUp_Attention;
  layer->ops->initialize     = LayerInitialize_Attention;
  layer->ops->forward        = LayerForward_Attention;
  layer->ops->backward       = LayerBackward_Attention;
  layer->ops->jvp            = LayerJVP_Attention;
  layer->ops->forwardsingle  = LayerForward_AttentionSingle;
  layer->ops->backwardsingle = LayerBackward_AttentionSingle;
  layer->ops->jvpsingle      = LayerJVP_AttentionSingle;
  layer->ops->sobackward     = LayerSOBackward_Attention;
  layer->ops->tensors        = LayerTensors_Attention;
  layer->ops->setarguments   = LayerSetArguments_Attention;
  layer->ops->getarguments   = LayerGetArguments_Attention;
  layer->ops->setfromoptions = LayerSetFromOptions_Attention;
  layer->ops->view           = LayerView_Attention;
  layer->ops->reset          = LayerReset_Attention;
  layer->ops->destroy        = LayerDestroy_Attention;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerDropoutSetSeed_C", LayerDropoutSetSeed_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGetPassCounter_C", LayerGetPassCounter_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerSetPassCounter_C", LayerSetPassCounter_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetHeadBlock_C", LayerAttentionSetHeadBlock_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetBlockOffset_C", LayerAttentionSetBlockOffset_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionGetHeads_C", LayerAttentionGetHeads_Attention));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerAttentionSetQueryBlock_C", LayerAttentionSetQueryBlock_Attention));
  PetscFunctionReturn(0);
}
