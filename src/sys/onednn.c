/*
  The oneDNN backend of the float GEMMs (contract in include/petnet/private/onednnimpl.h).

  PetNet's GEMMs are BLAS's: column-major, C (m x n, ldc) = op(A) op(B) + beta C. oneDNN's matmul is row-major,
  dst (M x N) = src (M x K) weights (K x N), each operand a strided 2-D memory. A column-major C is the row-major C^T,
  so the matmul computes C^T = op(B)^T op(A)^T with no copy:

    oneDNN     dims      PetNet's operand        strides (row, column)
    src        n x k     op(B)^T                 tb = 'N': (ldb, 1)    tb = 'T': (1, ldb)
    weights    k x m     op(A)^T                 ta = 'N': (lda, 1)    ta = 'T': (1, lda)
    dst        n x m     C^T                     (ldc, 1)
    bias       1 x m     bias[i] added to row i of C (dense's forward and jvp: b 1^T), float
    sum        beta      a post-op: dst = beta dst + src weights (+ bias)
    relu       -         a post-op after the sum: dst = max(dst, 0) (a relu fused into dense's output pass, netfuse.c;
                         oneDNN's relu with slope 0 keeps x > 0 and writes +0 otherwise, relu's own bits)

  bfloat16 (PETNET_GEMM_ONEDNN_BF16): A and B are rounded to bfloat16 (to nearest, ties to even, as the value stores
  round: PetNetFloatToBF16() of bf16impl.h) into buffers this module owns, with the same leading dimensions, or given
  as bfloat16 already (PetNetOneDNNMatmulBF16(): a layer's bfloat16 kernels, no copy); the accumulation stays float,
  and dst is float, or bfloat16 where the first call of the key found oneDNN's bfloat16 dst to be the float dst's bits
  rounded (PetNetOneDNNMatmulBF16Out(), as PetNetOneDNNConvOut16() for convolutions).

  Batched (PetNetOneDNNMatmulBatched(), einsum's groups): G such GEMMs, operand g at A + g sa, B + g sb, C + g sc, as
  one matmul on 3-D memories whose first dim is the group (strides sb, sa, sc before the table's), one primitive for
  all groups; G = 1 is the 2-D matmul above. The bias, when given, is the same for every group.

  Threads: oneDNN on Debian runs on OpenMP (libgomp, as PetNet): a primitive is created and run with PetNet's thread
  count (omp_set_num_threads() around the call, the caller's setting restored after), which is part of the key, since
  oneDNN blocks its loops for the threads it has. The same key gives the same bits; a different thread count may not.

  Scratchpads: user mode, one buffer this module owns, grown to the largest primitive's (64-byte aligned). The
  stream is in order and every call waits for it, so the buffer is never shared by two running primitives.

  Convolutions (PetNetOneDNNConvForward(), ...BackwardData(), ...BackwardWeights()) share the cache, keyed by (op,
  backend, shape, beta, threads):

    op                 oneDNN primitive                  src         weights        bias   dst
    forward            convolution forward (training)    x           W              b      y (+= beta y: sum post-op;
                                                                                                then relu: the shape's relu)
    backward data      convolution backward data         dx (out)    W              -      dy
    backward weights   convolution backward weights      x           dW (out)       db     dy

  At bfloat16 a layer's bfloat16 kernels give x and dy as stored (no rounded copy), and the forward without a sum and
  the backward data may write y and dx in bfloat16 themselves (a key with out16), where the first call of the key found
  them the float output's bits rounded (PetNetOneDNNConvOut16()).

  The data are nhwc (ndhwc) as PetNet holds them; the weights are created in format any, and when the layout oneDNN
  picks is not PetNet's ohwi (gohwi, odhwi, godhwi), the entry keeps a reorder primitive between the two and the
  call runs it once on the whole W (into this module's weight buffer; after the primitive for dW). Backward
  primitives are created with their forward's descriptor as the hint, as oneDNN asks. A shape oneDNN refuses
  (unimplemented, or a geometry it does not take) or runs only with its reference loops is recorded as native: the
  caller asks PetNetOneDNNConvAvailable() first and runs its own kernels for all the ops of that shape.

  Pooling, layer normalization and batch normalization share the cache with the same key type (onednnimpl.h). Batch
  normalization has four ops: forward in training mode (the batch's mean and biased variance written) and its
  backward, and the pair with the statistics given (use_global_stats); only its jit kernels run (its plain nspc/ncsp
  loops and its reference loops are recorded as native).
*/
#include <petnet/private/onednnimpl.h>
#include <petnet/private/threadsimpl.h>
#include <petnet/private/bf16impl.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(PETNET_HAVE_ONEDNN)
#include <dnnl.h>
#include <dnnl_debug.h>

/* at most this many primitives are kept; a new one past it empties the cache (shapes change rarely: a last batch) */
#define PETNET_ONEDNN_CACHE 128

typedef enum {
  PETNET_ONEDNN_MATMUL,
  PETNET_ONEDNN_CONV_FORWARD,
  PETNET_ONEDNN_CONV_BACKWARD_DATA,
  PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS,
  PETNET_ONEDNN_AVGPOOL_FORWARD,
  PETNET_ONEDNN_AVGPOOL_BACKWARD,
  PETNET_ONEDNN_MAXPOOL_FORWARD,
  PETNET_ONEDNN_MAXPOOL_BACKWARD,
  PETNET_ONEDNN_LNORM_FORWARD,
  PETNET_ONEDNN_LNORM_BACKWARD,
  PETNET_ONEDNN_BNORM_FORWARD,
  PETNET_ONEDNN_BNORM_BACKWARD,
  PETNET_ONEDNN_BNORM_FORWARD_GLOBAL,
  PETNET_ONEDNN_BNORM_BACKWARD_GLOBAL
} PetNetOneDNNOp;
static const char *const PetNetOneDNNOps[] = {"matmul",
                                              "convolution forward",
                                              "convolution backward data",
                                              "convolution backward weights",
                                              "average pooling forward",
                                              "average pooling backward",
                                              "max pooling forward",
                                              "max pooling backward",
                                              "layer normalization forward",
                                              "layer normalization backward",
                                              "batch normalization forward",
                                              "batch normalization backward",
                                              "batch normalization forward (given statistics)",
                                              "batch normalization backward (given statistics)"};
#define PetNetOneDNNIsPool(op)    ((op) >= PETNET_ONEDNN_AVGPOOL_FORWARD && (op) <= PETNET_ONEDNN_MAXPOOL_BACKWARD)
#define PetNetOneDNNIsLNorm(op)   ((op) == PETNET_ONEDNN_LNORM_FORWARD || (op) == PETNET_ONEDNN_LNORM_BACKWARD)
#define PetNetOneDNNIsBNorm(op)   ((op) >= PETNET_ONEDNN_BNORM_FORWARD && (op) <= PETNET_ONEDNN_BNORM_BACKWARD_GLOBAL)
#define PetNetOneDNNIsNorm(op)    (PetNetOneDNNIsLNorm(op) || PetNetOneDNNIsBNorm(op))
#define PetNetOneDNNIsNormFwd(op) ((op) == PETNET_ONEDNN_LNORM_FORWARD || (op) == PETNET_ONEDNN_BNORM_FORWARD || (op) == PETNET_ONEDNN_BNORM_FORWARD_GLOBAL)
#define PetNetOneDNNIsMaxPool(op) ((op) == PETNET_ONEDNN_MAXPOOL_FORWARD || (op) == PETNET_ONEDNN_MAXPOOL_BACKWARD)
#define PetNetOneDNNIsForward(op) ((op) == PETNET_ONEDNN_AVGPOOL_FORWARD || (op) == PETNET_ONEDNN_MAXPOOL_FORWARD)

typedef struct {
  PetNetOneDNNOp        op; /* matmul (the keys below) or a convolution (conv) */
  PetNetOneDNNConvShape conv;
  PetNetGemmBackend     backend;
  char                  ta, tb;
  PetscInt              m, n, k, lda, ldb, ldc;
  PetscInt              batch, sa, sb, sc; /* batched matmul: G groups and the operands' group strides (1, 0, 0, 0: 2-D) */
  float                 beta;
  PetscBool             bias;
  PetscBool             relu;  /* matmul: relu as an eltwise post-op after the bias and the sum (y = max(y, 0), +0 for -0 and NaN) */
  PetscBool             out16; /* matmul: dst in bfloat16 (PetNetOneDNNMatmulBF16Out()), else f32 */
  int                   threads;
  PetscBool             native; /* oneDNN has no kernel worth running for this key: the caller's GEMM runs */
  dnnl_primitive_t      prim;
  dnnl_memory_t         src, wei, bia, dst, pad; /* descriptors with no data: the handles are set at each call */
  size_t                padsize;
  dnnl_primitive_t      reorder; /* convolutions: PetNet's weights <-> the primitive's (NULL: the same layout) */
  dnnl_memory_t         uwei;    /* PetNet's weights, f32 o(d)hwi, the reorder's other end */
  size_t                weisize; /* bytes of the primitive's weights, in the module's weight buffer */
  dnnl_memory_t         ws;      /* max pooling: the workspace (each output's tap in its window), the caller's buffer */
  dnnl_memory_t         lnm[9];  /* layer and batch normalization: a memory per argument, lnarg[] its role (PetNetOneDNNLayerNorm(), PetNetOneDNNBatchNorm()) */
  int                   lnarg[9], nln;
  int                   wsbytes; /* its bytes per output: 1 (u8) or 4 (s32) */
  int                   agrees;  /* a convolution or matmul key with a bfloat16 output (out16): 0 not known yet, 1 its output has
                                    been the float output rounded, bit for bit, 2 it was not (PetNetOneDNNConvOut16(),
                                    PetNetOneDNNMatmulBF16Out()) */
} PetNetOneDNNEntry;

static struct {
  PetscBool          initialized;
  dnnl_engine_t      engine;
  dnnl_stream_t      stream;
  PetNetOneDNNEntry *entries; /* maxentries of them, grown by doubling up to PETNET_ONEDNN_CACHE */
  PetscInt           nentries, maxentries;
  PetscBool          reference;    /* -petnet_onednn_reference: poolings run oneDNN's reference loops too (tests), instead of falling back */
  PetscBool          matmulnative; /* -petnet_onednn_matmul_native: every matmul key falls back to native (tests: the fallback paths) */
  char              *pad;          /* the scratchpad: padsize bytes from a 64-byte boundary of pad */
  size_t             padsize;
  uint16_t          *a16, *b16; /* bfloat16 copies of A and B (convolutions: of their two data operands) */
  size_t             na16, nb16;
  uint16_t          *c16; /* a bfloat16 output compared with the float output rounded (PetNetOneDNNConvOut16()) */
  size_t             nc16;
  float             *f32; /* the float outputs of a layer's bfloat16 kernels before it rounds them (PetNetOneDNNFloatScratch()) */
  size_t             nf32;
  char              *wbuf; /* convolutions: the weights in the primitive's layout, weisize bytes from a 64-byte boundary */
  size_t             wbufsize;
} PetNetOneDNN;

/* a buffer of this module from its first 64-byte boundary (allocated 64 bytes longer) */
#define PetNetOneDNNAligned(p) ((void *)((p) + (64 - (size_t)(p) % 64) % 64))

#define PetNetCallDNNL(call)                                                                                               \
  do {                                                                                                                     \
    dnnl_status_t st_ = (call);                                                                                            \
    PetscCheck(st_ == dnnl_success, PETSC_COMM_SELF, PETSC_ERR_LIB, "oneDNN: %s failed: %s", #call, dnnl_status2str(st_)); \
  } while (0)

static PetscErrorCode PetNetOneDNNEntryDestroy(PetNetOneDNNEntry *e)
{
  PetscFunctionBegin;
  if (e->prim) PetNetCallDNNL(dnnl_primitive_destroy(e->prim));
  if (e->src) PetNetCallDNNL(dnnl_memory_destroy(e->src));
  if (e->wei) PetNetCallDNNL(dnnl_memory_destroy(e->wei));
  if (e->bia) PetNetCallDNNL(dnnl_memory_destroy(e->bia));
  if (e->dst) PetNetCallDNNL(dnnl_memory_destroy(e->dst));
  if (e->pad) PetNetCallDNNL(dnnl_memory_destroy(e->pad));
  if (e->reorder) PetNetCallDNNL(dnnl_primitive_destroy(e->reorder));
  if (e->uwei) PetNetCallDNNL(dnnl_memory_destroy(e->uwei));
  if (e->ws) PetNetCallDNNL(dnnl_memory_destroy(e->ws));
  for (int i = 0; i < e->nln; i++) PetNetCallDNNL(dnnl_memory_destroy(e->lnm[i]));
  PetscCall(PetscMemzero(e, sizeof(*e)));
  PetscFunctionReturn(0);
}

/* PetscFinalize(): the primitives, the stream, the engine and the buffers (registered by PetNetOneDNNInitialize()) */
static PetscErrorCode PetNetOneDNNFinalize(void)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) PetscCall(PetNetOneDNNEntryDestroy(&PetNetOneDNN.entries[i]));
  PetscCall(PetscFree(PetNetOneDNN.entries));
  PetscCall(PetscFree(PetNetOneDNN.pad));
  PetscCall(PetscFree(PetNetOneDNN.a16));
  PetscCall(PetscFree(PetNetOneDNN.b16));
  PetscCall(PetscFree(PetNetOneDNN.f32));
  PetscCall(PetscFree(PetNetOneDNN.c16));
  PetscCall(PetscFree(PetNetOneDNN.wbuf));
  if (PetNetOneDNN.stream) PetNetCallDNNL(dnnl_stream_destroy(PetNetOneDNN.stream));
  if (PetNetOneDNN.engine) PetNetCallDNNL(dnnl_engine_destroy(PetNetOneDNN.engine));
  PetscCall(PetscMemzero(&PetNetOneDNN, sizeof(PetNetOneDNN)));
  PetscFunctionReturn(0);
}

/* the engine and the stream, once */
static PetscErrorCode PetNetOneDNNInitialize(void)
{
  PetscFunctionBegin;
  if (PetNetOneDNN.initialized) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_engine_create(&PetNetOneDNN.engine, dnnl_cpu, 0));
  PetNetCallDNNL(dnnl_stream_create(&PetNetOneDNN.stream, PetNetOneDNN.engine, dnnl_stream_default_flags));
  PetscCall(PetscRegisterFinalize(PetNetOneDNNFinalize));
  /* tests only: oneDNN's reference pooling loops are slow, but they check PetNet's mapping (keys, dilation, the
     workspace's taps) where this CPU has no other kernel (dilated max pooling on AVX2) */
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-petnet_onednn_reference", &PetNetOneDNN.reference, NULL));
  /* tests only: every matmul key recorded as native, so that the callers' fallbacks run where oneDNN has kernels */
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-petnet_onednn_matmul_native", &PetNetOneDNN.matmulnative, NULL));
  PetNetOneDNN.initialized = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* the caller's OpenMP thread count is saved and PetNet's set around oneDNN's calls (the header's comment) */
static inline int PetNetOneDNNThreadsPush(void)
{
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();

  omp_set_num_threads(PetNetThreads());
  return saved;
#else
  return 1;
#endif
}

static inline void PetNetOneDNNThreadsPop(int saved)
{
#if defined(_OPENMP)
  omp_set_num_threads(saved);
#endif
}

/* the matmul's descriptor for a key (the table at the top); *pd NULL when oneDNN does not implement it */
static PetscErrorCode PetNetOneDNNCreateDesc(PetNetGemmBackend backend, PetscInt batch, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, PetscInt lda, PetscInt sa, PetscInt ldb, PetscInt sb, PetscInt ldc, PetscInt sc, float beta, PetscBool bias,
                                             PetscBool relu, PetscBool out16, dnnl_primitive_desc_t *pd)
{
  const dnnl_data_type_t in = backend == PETNET_GEMM_ONEDNN_BF16 ? dnnl_bf16 : dnnl_f32;
  const int              nd = batch > 1 ? 3 : 2, o = nd - 2; /* batched: the group first */
  dnnl_dims_t            sdims = {0}, wdims = {0}, ddims = {0}, bdims = {0}, sstr = {0}, wstr = {0}, dstr = {0}, bstr = {0};
  dnnl_memory_desc_t     smd, wmd, dmd, bmd;
  dnnl_matmul_desc_t     desc;
  dnnl_primitive_attr_t  attr;
  dnnl_post_ops_t        ops = NULL;
  dnnl_status_t          st;

  PetscFunctionBegin;
  if (batch > 1) {
    sdims[0] = wdims[0] = ddims[0] = batch, bdims[0] = 1;
    sstr[0] = sb, wstr[0] = sa, dstr[0] = sc, bstr[0] = m;
  }
  sdims[o] = n, sdims[o + 1] = k, sstr[o] = tb == 'N' ? ldb : 1, sstr[o + 1] = tb == 'N' ? 1 : ldb;
  wdims[o] = k, wdims[o + 1] = m, wstr[o] = ta == 'N' ? lda : 1, wstr[o + 1] = ta == 'N' ? 1 : lda;
  ddims[o] = n, ddims[o + 1] = m, dstr[o] = ldc, dstr[o + 1] = 1;
  bdims[o] = 1, bdims[o + 1] = m, bstr[o] = m, bstr[o + 1] = 1;
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&smd, nd, sdims, in, sstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&wmd, nd, wdims, in, wstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&dmd, nd, ddims, out16 ? dnnl_bf16 : dnnl_f32, dstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&bmd, nd, bdims, dnnl_f32, bstr));
  PetNetCallDNNL(dnnl_matmul_desc_init(&desc, &smd, &wmd, bias ? &bmd : NULL, &dmd));
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (beta != 0 || relu) { /* dst = relu(src weights + bias + beta dst): the sum first, then the activation */
    PetNetCallDNNL(dnnl_post_ops_create(&ops));
    if (beta != 0) PetNetCallDNNL(dnnl_post_ops_append_sum(ops, beta));
    if (relu) PetNetCallDNNL(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
    PetNetCallDNNL(dnnl_primitive_attr_set_post_ops(attr, ops));
  }
  st = dnnl_primitive_desc_create(pd, &desc, attr, PetNetOneDNN.engine, NULL);
  if (ops) PetNetCallDNNL(dnnl_post_ops_destroy(ops));
  PetNetCallDNNL(dnnl_primitive_attr_destroy(attr));
  if (st == dnnl_unimplemented)
    *pd = NULL;
  else
    PetNetCallDNNL(st);
  PetscFunctionReturn(0);
}

/* a zeroed slot at the end of the cache (emptied first when full; grown by doubling) */
static PetscErrorCode PetNetOneDNNNewEntry(PetNetOneDNNEntry **entry)
{
  PetscFunctionBegin;
  if (PetNetOneDNN.nentries == PETNET_ONEDNN_CACHE) {
    for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) PetscCall(PetNetOneDNNEntryDestroy(&PetNetOneDNN.entries[i]));
    PetNetOneDNN.nentries = 0;
  }
  if (PetNetOneDNN.nentries == PetNetOneDNN.maxentries) { /* a Net of L dense layers makes about 3 L keys, a conv2d 4 per batch size */
    PetNetOneDNNEntry *grown;
    const PetscInt     max = PetscMin(PETNET_ONEDNN_CACHE, PetscMax(8, 2 * PetNetOneDNN.maxentries));

    PetscCall(PetscMalloc1(max, &grown));
    if (PetNetOneDNN.nentries) PetscCall(PetscArraycpy(grown, PetNetOneDNN.entries, PetNetOneDNN.nentries));
    PetscCall(PetscFree(PetNetOneDNN.entries));
    PetNetOneDNN.entries    = grown;
    PetNetOneDNN.maxentries = max;
  }
  *entry = &PetNetOneDNN.entries[PetNetOneDNN.nentries++];
  PetscCall(PetscMemzero(*entry, sizeof(**entry)));
  PetscFunctionReturn(0);
}

/* the entry's scratchpad memory (user mode), the module's buffer grown to hold it */
static PetscErrorCode PetNetOneDNNEntryScratchpad(PetNetOneDNNEntry *e, const_dnnl_primitive_desc_t pd)
{
  const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);

  PetscFunctionBegin;
  e->padsize = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
  if (e->padsize) PetNetCallDNNL(dnnl_memory_create(&e->pad, pmd, PetNetOneDNN.engine, DNNL_MEMORY_NONE));
  if (e->padsize > PetNetOneDNN.padsize) {
    PetscCall(PetscFree(PetNetOneDNN.pad));
    PetscCall(PetscMalloc1(e->padsize + 64, &PetNetOneDNN.pad));
    PetNetOneDNN.padsize = e->padsize;
  }
  PetscFunctionReturn(0);
}

/* the cached entry of a key, created (and its decision recorded) at the first call */
static PetscErrorCode PetNetOneDNNGetEntry(PetNetGemmBackend backend, PetscInt batch, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, PetscInt lda, PetscInt sa, PetscInt ldb, PetscInt sb, PetscInt ldc, PetscInt sc, float beta, PetscBool bias,
                                           PetscBool relu, PetscBool out16, PetNetOneDNNEntry **entry)
{
  const int             threads = PetNetThreads();
  PetNetOneDNNEntry    *e;
  dnnl_primitive_desc_t pd   = NULL;
  const char           *impl = "none";

  PetscFunctionBegin;
  for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) {
    e = &PetNetOneDNN.entries[i];
    if (e->op == PETNET_ONEDNN_MATMUL && e->backend == backend && e->ta == ta && e->tb == tb && e->m == m && e->n == n && e->k == k && e->lda == lda && e->ldb == ldb && e->ldc == ldc && e->batch == batch && e->sa == sa && e->sb == sb &&
        e->sc == sc && e->beta == beta && e->bias == bias && e->relu == relu && e->out16 == out16 && e->threads == threads) {
      *entry = e;
      PetscFunctionReturn(0);
    }
  }
  PetscCall(PetNetOneDNNNewEntry(&e));
  e->backend = backend, e->ta = ta, e->tb = tb, e->m = m, e->n = n, e->k = k, e->lda = lda, e->ldb = ldb, e->ldc = ldc, e->beta = beta, e->bias = bias, e->relu = relu, e->out16 = out16, e->threads = threads;
  e->batch = batch, e->sa = sa, e->sb = sb, e->sc = sc;
  PetscCall(PetNetOneDNNCreateDesc(backend, batch, ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, beta, bias, relu, out16, &pd));
  if (pd) PetNetCallDNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&impl));
  /* unimplemented (bfloat16 on a CPU without AVX-512: oneDNN 2.6 on AVX2), or only oneDNN's reference loops, far
     slower than sgemm */
  e->native = (PetscBool)(!pd || !strncmp(impl, "ref", 3) || PetNetOneDNN.matmulnative);
  if (batch > 1)
    PetscCall(PetscInfo(NULL, "oneDNN matmul %s %c%c batch %" PetscInt_FMT " m %" PetscInt_FMT " n %" PetscInt_FMT " k %" PetscInt_FMT " beta %g%s%s%s on %d threads: %s%s\n", backend == PETNET_GEMM_ONEDNN_BF16 ? "bf16" : "f32", ta, tb, batch, m, n,
                        k, (double)beta, bias ? " bias" : "", relu ? " relu" : "", out16 ? " out bf16" : "", threads, impl, e->native ? " (falls back to native)" : ""));
  else
    PetscCall(PetscInfo(NULL, "oneDNN matmul %s %c%c m %" PetscInt_FMT " n %" PetscInt_FMT " k %" PetscInt_FMT " beta %g%s%s%s on %d threads: %s%s\n", backend == PETNET_GEMM_ONEDNN_BF16 ? "bf16" : "f32", ta, tb, m, n, k, (double)beta,
                        bias ? " bias" : "", relu ? " relu" : "", out16 ? " out bf16" : "", threads, impl, e->native ? " (falls back to native)" : ""));
  if (!e->native) {
    PetNetCallDNNL(dnnl_primitive_create(&e->prim, pd));
    PetNetCallDNNL(dnnl_memory_create(&e->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    if (bias) PetNetCallDNNL(dnnl_memory_create(&e->bia, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetscCall(PetNetOneDNNEntryScratchpad(e, pd));
  }
  if (pd) PetNetCallDNNL(dnnl_primitive_desc_destroy(pd));
  *entry = e;
  PetscFunctionReturn(0);
}

/* dst (rows x cols, column-major, ld) = X rounded to bfloat16, column by column (the gaps of ld are not read) */
static PetscErrorCode PetNetOneDNNRoundBF16(PetscInt rows, PetscInt cols, const float *X, PetscInt ld, uint16_t **buf, size_t *len)
{
  const size_t need = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;

  PetscFunctionBegin;
  if (need > *len) {
    PetscCall(PetscFree(*buf));
    PetscCall(PetscMalloc1(need, buf));
    *len = need;
  }
  {
    uint16_t *dst = *buf;

    PETNET_THREAD_BLOCKS(
        cols, PetscMax(1, 16384 / PetscMax(rows, 1)), for (PetscInt j = i0; j < i1; j++) {
          for (PetscInt i = 0; i < rows; i++) dst[i + (size_t)j * ld] = PetNetFloatToBF16(X[i + (size_t)j * ld]);
        });
  }
  PetscFunctionReturn(0);
}

/* two convolution keys alike (field by field: the struct may have padding) */
static PetscBool PetNetOneDNNConvSame(const PetNetOneDNNConvShape *a, const PetNetOneDNNConvShape *b)
{
  if (a->nsd != b->nsd || a->n != b->n || a->cin != b->cin || a->cout != b->cout || a->groups != b->groups || a->bias != b->bias || a->relu != b->relu || a->out16 != b->out16) return PETSC_FALSE;
  for (PetscInt d = 0; d < a->nsd; d++)
    if (a->in[d] != b->in[d] || a->out[d] != b->out[d] || a->k[d] != b->k[d] || a->stride[d] != b->stride[d] || a->pad[d] != b->pad[d] || a->dilation[d] != b->dilation[d]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/*
  PetNet's weights as oneDNN sees them: dims (O, I, spatial) or, grouped, (G, O/G, I/G, spatial), f32, in PetNet's
  layout [Cout][KD][KH][KW][Cg] (the tags ohwi, odhwi, gohwi, godhwi), or with the tag any and the precision's type
  for the primitive to pick its own
*/
static PetscErrorCode PetNetOneDNNConvWeightsDesc(const PetNetOneDNNConvShape *sh, dnnl_data_type_t type, PetscBool any, dnnl_memory_desc_t *md)
{
  const int         g = sh->groups > 1, nd = (int)sh->nsd + 2 + g;
  dnnl_dims_t       dims;
  dnnl_format_tag_t tag = sh->nsd == 2 ? (g ? dnnl_gohwi : dnnl_ohwi) : (g ? dnnl_godhwi : dnnl_odhwi);

  PetscFunctionBegin;
  if (g) dims[0] = sh->groups;
  dims[g]     = sh->cout / sh->groups;
  dims[g + 1] = sh->cin / sh->groups;
  for (PetscInt d = 0; d < sh->nsd; d++) dims[g + 2 + d] = sh->k[d];
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(md, nd, dims, type, any ? dnnl_format_tag_any : tag));
  PetscFunctionReturn(0);
}

/*
  The primitive descriptor of a convolution op for a key (the table at the top); *pd NULL when oneDNN refuses it. The
  padding after each dim is what the output size implies: (out - 1) stride + (k - 1) dilation + 1 - in - pad (it is
  the padding before when both ends are padded alike, less when the stride skips the last input points).
*/
static PetscErrorCode PetNetOneDNNConvCreateDesc(PetNetGemmBackend backend, PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, float beta, dnnl_primitive_desc_t *pd)
{
  const dnnl_data_type_t  in    = backend == PETNET_GEMM_ONEDNN_BF16 ? dnnl_bf16 : dnnl_f32;
  const int               nd    = (int)sh->nsd + 2;
  const dnnl_format_tag_t tag   = sh->nsd == 2 ? dnnl_nhwc : dnnl_ndhwc;
  const dnnl_dims_t       bdims = {sh->cout};
  dnnl_dims_t             sdims, ddims, strides, dilates, padl, padr;
  dnnl_memory_desc_t      xin, xf, yin, yf, win, wf, bmd;
  dnnl_convolution_desc_t fdesc, desc;
  dnnl_primitive_attr_t   attr;
  dnnl_post_ops_t         ops  = NULL;
  dnnl_primitive_desc_t   hint = NULL;
  dnnl_status_t           st;

  PetscFunctionBegin;
  *pd      = NULL;
  sdims[0] = ddims[0] = sh->n;
  sdims[1]            = sh->cin;
  ddims[1]            = sh->cout;
  for (PetscInt d = 0; d < sh->nsd; d++) {
    sdims[2 + d] = sh->in[d];
    ddims[2 + d] = sh->out[d];
    strides[d]   = sh->stride[d];
    dilates[d]   = sh->dilation[d] - 1;
    padl[d]      = sh->pad[d];
    padr[d]      = (sh->out[d] - 1) * sh->stride[d] + (sh->k[d] - 1) * sh->dilation[d] + 1 - sh->in[d] - sh->pad[d];
  }
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&xin, nd, sdims, in, tag));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&xf, nd, sdims, dnnl_f32, tag));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&yin, nd, ddims, in, tag));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&yf, nd, ddims, dnnl_f32, tag));
  PetscCall(PetNetOneDNNConvWeightsDesc(sh, in, PETSC_TRUE, &win));
  PetscCall(PetNetOneDNNConvWeightsDesc(sh, dnnl_f32, PETSC_TRUE, &wf));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&bmd, 1, bdims, dnnl_f32, dnnl_a));
  /* the forward's descriptor: the op itself, or the backward ops' hint; a geometry oneDNN does not take is a refusal */
  st = dnnl_dilated_convolution_forward_desc_init(&fdesc, dnnl_forward_training, dnnl_convolution_direct, &xin, &win, sh->bias ? &bmd : NULL, op == PETNET_ONEDNN_CONV_FORWARD && sh->out16 ? &yin : &yf, strides, dilates, padl, padr);
  if (st != dnnl_success) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (op == PETNET_ONEDNN_CONV_FORWARD) {
    if (beta != 0 || sh->relu) { /* y = relu(conv + b + beta y): the sum first, then the activation */
      PetNetCallDNNL(dnnl_post_ops_create(&ops));
      if (beta != 0) PetNetCallDNNL(dnnl_post_ops_append_sum(ops, beta));
      if (sh->relu) PetNetCallDNNL(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
      PetNetCallDNNL(dnnl_primitive_attr_set_post_ops(attr, ops));
    }
    st = dnnl_primitive_desc_create(pd, &fdesc, attr, PetNetOneDNN.engine, NULL);
  } else {
    st = dnnl_primitive_desc_create(&hint, &fdesc, NULL, PetNetOneDNN.engine, NULL);
    if (st == dnnl_success) {
      if (op == PETNET_ONEDNN_CONV_BACKWARD_DATA)
        st = dnnl_dilated_convolution_backward_data_desc_init(&desc, dnnl_convolution_direct, sh->out16 ? &xin : &xf, &win, &yin, strides, dilates, padl, padr);
      else
        st = dnnl_dilated_convolution_backward_weights_desc_init(&desc, dnnl_convolution_direct, &xin, &wf, sh->bias ? &bmd : NULL, &yin, strides, dilates, padl, padr);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &desc, attr, PetNetOneDNN.engine, hint);
    if (hint) PetNetCallDNNL(dnnl_primitive_desc_destroy(hint));
  }
  if (ops) PetNetCallDNNL(dnnl_post_ops_destroy(ops));
  PetNetCallDNNL(dnnl_primitive_attr_destroy(attr));
  if (st != dnnl_success) *pd = NULL; /* unimplemented, or arguments oneDNN refuses for this shape: native */
  PetscFunctionReturn(0);
}

/*
  The primitive descriptor of a pooling for a key whose cin is the channels, k the window, stride, pad and dilation
  its own, 2-D or 3-D (nsd): average (PyTorch's count_include_pad: oneDNN's avg_include_padding; dilation 1) or max
  (pooling_max, forward training: it writes the workspace its backward reads); f32 data in nhwc or ndhwc whatever the
  precision (PetNet's float kernels pool float values in bfloat16 too); *pd NULL when oneDNN refuses it. Pooling v2
  takes the dilation in oneDNN's convention, PetNet's minus one (0: taps side by side); the padding after each dim is
  what the output size implies, (out - 1) stride + (k - 1) dilation + 1 - in - pad (PetNet's and PyTorch's floor).
*/
static PetscErrorCode PetNetOneDNNPoolCreateDesc(PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, dnnl_primitive_desc_t *pd)
{
  const int               nd  = (int)sh->nsd + 2;
  const dnnl_format_tag_t tag = sh->nsd == 2 ? dnnl_nhwc : dnnl_ndhwc;
  dnnl_dims_t             sdims, ddims, strides, kernel, dilates, padl, padr;
  dnnl_memory_desc_t      xmd, ymd;
  dnnl_pooling_v2_desc_t  fdesc, bdesc;
  dnnl_primitive_attr_t   attr;
  dnnl_primitive_desc_t   hint = NULL;
  const dnnl_alg_kind_t   alg  = PetNetOneDNNIsMaxPool(op) ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
  dnnl_status_t           st;

  PetscFunctionBegin;
  *pd      = NULL;
  sdims[0] = ddims[0] = sh->n;
  sdims[1] = ddims[1] = sh->cin;
  for (PetscInt d = 0; d < sh->nsd; d++) {
    sdims[2 + d] = sh->in[d];
    ddims[2 + d] = sh->out[d];
    strides[d]   = sh->stride[d];
    kernel[d]    = sh->k[d];
    dilates[d]   = sh->dilation[d] - 1;
    padl[d]      = sh->pad[d];
    padr[d]      = (sh->out[d] - 1) * sh->stride[d] + (sh->k[d] - 1) * sh->dilation[d] + 1 - sh->in[d] - sh->pad[d];
  }
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&xmd, nd, sdims, dnnl_f32, tag));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&ymd, nd, ddims, dnnl_f32, tag));
  st = dnnl_pooling_v2_forward_desc_init(&fdesc, dnnl_forward_training, alg, &xmd, &ymd, strides, kernel, dilates, padl, padr);
  if (st != dnnl_success) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (PetNetOneDNNIsForward(op))
    st = dnnl_primitive_desc_create(pd, &fdesc, attr, PetNetOneDNN.engine, NULL);
  else {
    st = dnnl_primitive_desc_create(&hint, &fdesc, NULL, PetNetOneDNN.engine, NULL);
    if (st == dnnl_success) st = dnnl_pooling_v2_backward_desc_init(&bdesc, alg, &xmd, &ymd, strides, kernel, dilates, padl, padr);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &bdesc, attr, PetNetOneDNN.engine, hint);
    if (hint) PetNetCallDNNL(dnnl_primitive_desc_destroy(hint));
  }
  PetNetCallDNNL(dnnl_primitive_attr_destroy(attr));
  if (st != dnnl_success) *pd = NULL;
  PetscFunctionReturn(0);
}

/*
  A max pooling's workspace, as PetNet reads it (maxpool.c turns it into its argmax when a pass of its own needs the
  indices: the jvp): one index per output, u8 or s32, laid out as the output (nhwc), the index the tap's position in
  its window, kh KW + kw, counted over the whole window (padded taps included). oneDNN 2.6's jit kernels write it so
  (checked against the maxima by the tests onednn_maxpool_*); another layout or type is recorded as native.
*/
static PetscErrorCode PetNetOneDNNMaxPoolWorkspace(PetNetOneDNNEntry *e, const_dnnl_primitive_desc_t pd)
{
  const dnnl_memory_desc_t    *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
  const PetNetOneDNNConvShape *sh  = &e->conv;
  dnnl_dims_t                  ddims;
  dnnl_memory_desc_t           want;

  PetscFunctionBegin;
  e->native = PETSC_TRUE;
  if (!wmd || (wmd->data_type != dnnl_u8 && wmd->data_type != dnnl_s32)) PetscFunctionReturn(0);
  ddims[0] = sh->n;
  ddims[1] = sh->cin;
  for (PetscInt d = 0; d < sh->nsd; d++) ddims[2 + d] = sh->out[d];
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&want, (int)sh->nsd + 2, ddims, wmd->data_type, sh->nsd == 2 ? dnnl_nhwc : dnnl_ndhwc));
  if (!dnnl_memory_desc_equal(&want, wmd)) PetscFunctionReturn(0);
  e->wsbytes = wmd->data_type == dnnl_u8 ? 1 : 4;
  e->native  = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*
  The primitive descriptor of a layer normalization for a key whose n is the positions P and cin the normalised size
  E (data [P][E], f32, tag ab; statistics [P]), bias: gamma and beta (oneDNN's scale and shift, [E] each), eps the
  epsilon; forward training (it writes the mean and variance) or backward (with the scale and shift gradients when
  affine); *pd NULL when oneDNN refuses it
*/
static PetscErrorCode PetNetOneDNNLNormCreateDesc(PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, float eps, dnnl_primitive_desc_t *pd)
{
  const dnnl_dims_t               ddims = {sh->n, sh->cin}, sdims = {sh->n};
  const unsigned                  flags = sh->bias ? (unsigned)(dnnl_use_scale | dnnl_use_shift) : 0U;
  dnnl_memory_desc_t              dmd, smd;
  dnnl_layer_normalization_desc_t fdesc, bdesc;
  dnnl_primitive_attr_t           attr;
  dnnl_primitive_desc_t           hint = NULL;
  dnnl_status_t                   st;

  PetscFunctionBegin;
  *pd = NULL;
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&dmd, 2, ddims, dnnl_f32, dnnl_ab));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&smd, 1, sdims, dnnl_f32, dnnl_a));
  st = dnnl_layer_normalization_forward_desc_init(&fdesc, dnnl_forward_training, &dmd, &smd, eps, flags);
  if (st != dnnl_success) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (op == PETNET_ONEDNN_LNORM_FORWARD)
    st = dnnl_primitive_desc_create(pd, &fdesc, attr, PetNetOneDNN.engine, NULL);
  else {
    st = dnnl_primitive_desc_create(&hint, &fdesc, NULL, PetNetOneDNN.engine, NULL);
    if (st == dnnl_success) st = dnnl_layer_normalization_backward_desc_init(&bdesc, dnnl_backward, &dmd, &dmd, &smd, eps, flags);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &bdesc, attr, PetNetOneDNN.engine, hint);
    if (hint) PetNetCallDNNL(dnnl_primitive_desc_destroy(hint));
  }
  PetNetCallDNNL(dnnl_primitive_attr_destroy(attr));
  if (st != dnnl_success) *pd = NULL;
  PetscFunctionReturn(0);
}

/*
  The data and statistics descriptors of a batch normalization key: sh->n samples of sh->in[0..nsd) positions (nsd 2
  or 3) of sh->cin channels, channels last as batchnorm holds them (tags nhwc, ndhwc: dims (n, C, spatial));
  the statistics, gamma and beta [C] (tag a)
*/
static PetscErrorCode PetNetOneDNNBNormDescs(const PetNetOneDNNConvShape *sh, dnnl_memory_desc_t *dmd, dnnl_memory_desc_t *cmd)
{
  const dnnl_format_tag_t tags[4] = {dnnl_nc, dnnl_nwc, dnnl_nhwc, dnnl_ndhwc}; /* by nsd (PetNetOneDNNBNormKey() gives 2 or 3) */
  dnnl_dims_t             ddims = {sh->n, sh->cin}, cdims = {sh->cin};

  PetscFunctionBegin;
  for (PetscInt d = 0; d < sh->nsd; d++) ddims[2 + d] = sh->in[d];
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(dmd, (int)(2 + sh->nsd), ddims, dnnl_f32, tags[sh->nsd]));
  PetNetCallDNNL(dnnl_memory_desc_init_by_tag(cmd, 1, cdims, dnnl_f32, dnnl_a));
  PetscFunctionReturn(0);
}

/*
  The primitive descriptor of a batch normalization (scale and shift: gamma and beta) for a key (PetNetOneDNNBNormDescs()),
  eps the epsilon:
    forward            training: the batch's mean and biased variance written
    backward           from them: diff_src with the statistics' dependence on src, diff_scale and diff_shift
    forward  (global)  given mean and variance (oneDNN's use_global_stats: inference)
    backward (global)  the statistics constants: diff_src = gamma s diff_dst, diff_scale, diff_shift
  Backward descriptors are created with their forward's as the hint. *pd NULL when oneDNN refuses the key.
*/
static PetscErrorCode PetNetOneDNNBNormCreateDesc(PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, float eps, dnnl_primitive_desc_t *pd)
{
  const PetscBool                 global = (PetscBool)(op == PETNET_ONEDNN_BNORM_FORWARD_GLOBAL || op == PETNET_ONEDNN_BNORM_BACKWARD_GLOBAL);
  const unsigned                  flags  = (unsigned)(dnnl_use_scale | dnnl_use_shift) | (global ? (unsigned)dnnl_use_global_stats : 0U);
  dnnl_memory_desc_t              dmd, cmd;
  dnnl_batch_normalization_desc_t fdesc, bdesc;
  dnnl_primitive_attr_t           attr;
  dnnl_primitive_desc_t           hint = NULL;
  dnnl_status_t                   st;

  PetscFunctionBegin;
  *pd = NULL;
  PetscCall(PetNetOneDNNBNormDescs(sh, &dmd, &cmd));
  st = dnnl_batch_normalization_forward_desc_init(&fdesc, op == PETNET_ONEDNN_BNORM_FORWARD_GLOBAL ? dnnl_forward_inference : dnnl_forward_training, &dmd, eps, flags);
  if (st != dnnl_success) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (op == PETNET_ONEDNN_BNORM_FORWARD || op == PETNET_ONEDNN_BNORM_FORWARD_GLOBAL)
    st = dnnl_primitive_desc_create(pd, &fdesc, attr, PetNetOneDNN.engine, NULL);
  else {
    st = dnnl_primitive_desc_create(&hint, &fdesc, NULL, PetNetOneDNN.engine, NULL);
    if (st == dnnl_success) st = dnnl_batch_normalization_backward_desc_init(&bdesc, dnnl_backward, &dmd, &dmd, eps, flags);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &bdesc, attr, PetNetOneDNN.engine, hint);
    if (hint) PetNetCallDNNL(dnnl_primitive_desc_destroy(hint));
  }
  PetNetCallDNNL(dnnl_primitive_attr_destroy(attr));
  if (st != dnnl_success) *pd = NULL;
  PetscFunctionReturn(0);
}

/* "D x H x W x C" (or "H x W x C") of a convolution's or pooling's input or output, for -info */
static PetscErrorCode PetNetOneDNNDimsString(PetscInt nsd, const PetscInt dims[], PetscInt c, char str[], size_t len)
{
  size_t o = 0;

  PetscFunctionBegin;
  str[0] = 0;
  for (PetscInt d = 0; d < nsd; d++) {
    PetscCall(PetscSNPrintf(str + o, len - o, "%" PetscInt_FMT "x", dims[d]));
    PetscCall(PetscStrlen(str, &o));
  }
  PetscCall(PetscSNPrintf(str + o, len - o, "%" PetscInt_FMT, c));
  PetscFunctionReturn(0);
}

/* a window setting for -info: "3" when alike along every spatial dim, else "2x3x3" (slowest first) */
static PetscErrorCode PetNetOneDNNWindowString(PetscInt nsd, const PetscInt v[], char str[], size_t len)
{
  PetscBool same = PETSC_TRUE;
  size_t    o    = 0;

  PetscFunctionBegin;
  for (PetscInt d = 1; d < nsd; d++) same = (PetscBool)(same && v[d] == v[0]);
  str[0] = 0;
  for (PetscInt d = 0; d < (same ? 1 : nsd); d++) {
    PetscCall(PetscSNPrintf(str + o, len - o, d ? "x%" PetscInt_FMT : "%" PetscInt_FMT, v[d]));
    PetscCall(PetscStrlen(str, &o));
  }
  PetscFunctionReturn(0);
}

/* the cached entry of a convolution key, created (its decision and its weights' reorder recorded) at the first call */
static PetscErrorCode PetNetOneDNNGetConvEntry(PetNetGemmBackend backend, PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, float beta, PetNetOneDNNEntry **entry)
{
  const int             threads = PetNetThreads();
  PetNetOneDNNEntry    *e;
  dnnl_primitive_desc_t pd   = NULL;
  const char           *impl = "none";
  char                  geom[256];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) {
    e = &PetNetOneDNN.entries[i];
    if (e->op == op && e->backend == backend && e->beta == beta && e->threads == threads && PetNetOneDNNConvSame(&e->conv, sh)) {
      *entry = e;
      PetscFunctionReturn(0);
    }
  }
  PetscCall(PetNetOneDNNNewEntry(&e));
  e->op = op, e->conv = *sh, e->backend = backend, e->beta = beta, e->threads = threads;
  if (PetNetOneDNNIsPool(op))
    PetscCall(PetNetOneDNNPoolCreateDesc(op, sh, &pd));
  else if (PetNetOneDNNIsLNorm(op))
    PetscCall(PetNetOneDNNLNormCreateDesc(op, sh, beta, &pd));
  else if (PetNetOneDNNIsBNorm(op))
    PetscCall(PetNetOneDNNBNormCreateDesc(op, sh, beta, &pd));
  else
    PetscCall(PetNetOneDNNConvCreateDesc(backend, op, sh, beta, &pd));
  if (pd) PetNetCallDNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&impl));
  /* batch normalization: only its jit kernels (bnorm_tbb_jit:avx2, ...); its plain loops (nspc_bnorm:any, for channels
     that are not a multiple of the vector, 2-2.5x native's time here) and reference loops (bnorm_ref:any) fall back */
  e->native = (PetscBool)(!pd || (!strncmp(impl, "ref", 3) && !(PetNetOneDNN.reference && PetNetOneDNNIsPool(op))) || (PetNetOneDNNIsBNorm(op) && !strstr(impl, "jit")));
  if (!e->native && PetNetOneDNNIsMaxPool(op)) PetscCall(PetNetOneDNNMaxPoolWorkspace(e, pd));
  if (PetNetOneDNNIsLNorm(op))
    PetscCall(PetscSNPrintf(geom, sizeof(geom), "%" PetscInt_FMT " positions of %" PetscInt_FMT " eps %g", sh->n, sh->cin, (double)beta));
  else if (PetNetOneDNNIsBNorm(op)) {
    char in[48];

    PetscCall(PetNetOneDNNDimsString(sh->nsd, sh->in, sh->cin, in, sizeof(in)));
    PetscCall(PetscSNPrintf(geom, sizeof(geom), "n %" PetscInt_FMT " in %s eps %g", sh->n, in, (double)beta));
  } else {
    char in[48], out[48], k[48], st[48], pad[48], dil[48];

    PetscCall(PetNetOneDNNDimsString(sh->nsd, sh->in, sh->cin, in, sizeof(in)));
    PetscCall(PetNetOneDNNDimsString(sh->nsd, sh->out, sh->cout, out, sizeof(out)));
    PetscCall(PetNetOneDNNWindowString(sh->nsd, sh->k, k, sizeof(k)));
    PetscCall(PetNetOneDNNWindowString(sh->nsd, sh->stride, st, sizeof(st)));
    PetscCall(PetNetOneDNNWindowString(sh->nsd, sh->pad, pad, sizeof(pad)));
    PetscCall(PetNetOneDNNWindowString(sh->nsd, sh->dilation, dil, sizeof(dil)));
    PetscCall(PetscSNPrintf(geom, sizeof(geom), "n %" PetscInt_FMT " in %s out %s k %s stride %s pad %s dilation %s groups %" PetscInt_FMT, sh->n, in, out, k, st, pad, dil, sh->groups));
  }
  PetscCall(PetscInfo(NULL, "oneDNN %s %s %s%s%s%s%s on %d threads: %s%s\n", PetNetOneDNNOps[op], backend == PETNET_GEMM_ONEDNN_BF16 ? "bf16" : "f32", geom, sh->bias ? (PetNetOneDNNIsNorm(op) ? " affine" : " bias") : "",
                      beta != 0 && !PetNetOneDNNIsNorm(op) ? " sum" : "", sh->relu ? " relu" : "", sh->out16 ? " out bf16" : "", threads, impl,
                      e->native ? (pd && PetNetOneDNNIsMaxPool(op) && strncmp(impl, "ref", 3) ? " (its workspace is not one tap index per output in nhwc: falls back to native)" : " (falls back to native)") : ""));
  if (!e->native && PetNetOneDNNIsNorm(op)) { /* one memory per argument, in the order of PetNetOneDNNLayerNorm() and PetNetOneDNNBatchNorm() */
    const int          fwd      = PetNetOneDNNIsNormFwd(op);
    const int          nargs    = fwd ? (sh->bias ? 6 : 4) : (sh->bias ? 9 : 5);
    const int          fargs[6] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    const int          bargs[9] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_DIFF_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
    const dnnl_dims_t  ddims = {sh->n, sh->cin}, sdims = {sh->n}, pdims = {sh->cin};
    dnnl_memory_desc_t dmd, smd, pmd;

    if (PetNetOneDNNIsLNorm(op)) { /* data [P][E], statistics [P], gamma and beta [E] */
      PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&dmd, 2, ddims, dnnl_f32, dnnl_ab));
      PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&smd, 1, sdims, dnnl_f32, dnnl_a));
      PetNetCallDNNL(dnnl_memory_desc_init_by_tag(&pmd, 1, pdims, dnnl_f32, dnnl_a));
    } else { /* data channels last, statistics, gamma and beta [C] */
      PetscCall(PetNetOneDNNBNormDescs(sh, &dmd, &smd));
      pmd = smd;
    }
    PetNetCallDNNL(dnnl_primitive_create(&e->prim, pd));
    for (int i = 0; i < nargs; i++) {
      const int                 arg = fwd ? fargs[i] : bargs[i];
      const dnnl_memory_desc_t *md  = arg == DNNL_ARG_MEAN || arg == DNNL_ARG_VARIANCE ? &smd : arg == DNNL_ARG_SCALE || arg == DNNL_ARG_SHIFT || arg == DNNL_ARG_DIFF_SCALE || arg == DNNL_ARG_DIFF_SHIFT ? &pmd : &dmd;

      e->lnarg[i] = arg;
      PetNetCallDNNL(dnnl_memory_create(&e->lnm[i], md, PetNetOneDNN.engine, DNNL_MEMORY_NONE));
      e->nln = i + 1;
    }
    PetscCall(PetNetOneDNNEntryScratchpad(e, pd));
  } else if (!e->native && PetNetOneDNNIsPool(op)) { /* src (x or dx) and dst (y or dy), max: the workspace; no weights */
    PetNetCallDNNL(dnnl_primitive_create(&e->prim, pd));
    PetNetCallDNNL(dnnl_memory_create(&e->src, dnnl_primitive_desc_query_md(pd, PetNetOneDNNIsForward(op) ? dnnl_query_src_md : dnnl_query_diff_src_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->dst, dnnl_primitive_desc_query_md(pd, PetNetOneDNNIsForward(op) ? dnnl_query_dst_md : dnnl_query_diff_dst_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    if (e->wsbytes) PetNetCallDNNL(dnnl_memory_create(&e->ws, dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetscCall(PetNetOneDNNEntryScratchpad(e, pd));
  } else if (!e->native) {
    const dnnl_query_t        wq   = op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS ? dnnl_query_diff_weights_md : dnnl_query_weights_md;
    const dnnl_memory_desc_t *pwmd = dnnl_primitive_desc_query_md(pd, wq, 0);
    dnnl_memory_desc_t        uwmd;

    PetNetCallDNNL(dnnl_primitive_create(&e->prim, pd));
    PetNetCallDNNL(dnnl_memory_create(&e->src, dnnl_primitive_desc_query_md(pd, op == PETNET_ONEDNN_CONV_BACKWARD_DATA ? dnnl_query_diff_src_md : dnnl_query_src_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->wei, pwmd, PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->dst, dnnl_primitive_desc_query_md(pd, op == PETNET_ONEDNN_CONV_FORWARD ? dnnl_query_dst_md : dnnl_query_diff_dst_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    if (sh->bias && op != PETNET_ONEDNN_CONV_BACKWARD_DATA) PetNetCallDNNL(dnnl_memory_create(&e->bia, dnnl_primitive_desc_query_md(pd, wq, 1), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetscCall(PetNetOneDNNEntryScratchpad(e, pd));
    /* PetNet's weights, and the reorder to (from, for dW) the primitive's layout when it is another */
    PetscCall(PetNetOneDNNConvWeightsDesc(sh, dnnl_f32, PETSC_FALSE, &uwmd));
    if (!dnnl_memory_desc_equal(&uwmd, pwmd)) {
      dnnl_primitive_desc_t rpd;

      PetNetCallDNNL(dnnl_memory_create(&e->uwei, &uwmd, PetNetOneDNN.engine, DNNL_MEMORY_NONE));
      if (op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS)
        PetNetCallDNNL(dnnl_reorder_primitive_desc_create(&rpd, pwmd, PetNetOneDNN.engine, &uwmd, PetNetOneDNN.engine, NULL));
      else
        PetNetCallDNNL(dnnl_reorder_primitive_desc_create(&rpd, &uwmd, PetNetOneDNN.engine, pwmd, PetNetOneDNN.engine, NULL));
      PetNetCallDNNL(dnnl_primitive_create(&e->reorder, rpd));
      PetNetCallDNNL(dnnl_primitive_desc_destroy(rpd));
      e->weisize = dnnl_memory_desc_get_size(pwmd);
      if (e->weisize > PetNetOneDNN.wbufsize) {
        PetscCall(PetscFree(PetNetOneDNN.wbuf));
        PetscCall(PetscMalloc1(e->weisize + 64, &PetNetOneDNN.wbuf));
        PetNetOneDNN.wbufsize = e->weisize;
      }
    }
  }
  if (pd) PetNetCallDNNL(dnnl_primitive_desc_destroy(pd));
  *entry = e;
  PetscFunctionReturn(0);
}

/* runs an entry's primitive on its arguments args[0..nargs), with the module's scratchpad when it has one (args has room for
   it), and waits for it */
static PetscErrorCode PetNetOneDNNRun(PetNetOneDNNEntry *e, dnnl_exec_arg_t *args, int nargs)
{
  PetscFunctionBegin;
  if (e->pad) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->pad, PetNetOneDNNAligned(PetNetOneDNN.pad)));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->pad};
  }
  PetNetCallDNNL(dnnl_primitive_execute(e->prim, PetNetOneDNN.stream, nargs, args));
  PetNetCallDNNL(dnnl_stream_wait(PetNetOneDNN.stream));
  PetscFunctionReturn(0);
}

/*
  runs a convolution entry on the data of its roles (the table at the top): src (x, or dx written), wei (W, or dW
  written, in PetNet's layout), bia (b, db written, or NULL), dst (y written, or dy); the weights go through the
  entry's reorder, before the primitive (W) or after it (dW)
*/
static PetscErrorCode PetNetOneDNNConvExecute(PetNetOneDNNEntry *e, const void *src, const float *wei, const float *bia, const void *dst)
{
  const PetNetOneDNNOp op = e->op;
  void                *w  = e->reorder ? PetNetOneDNNAligned(PetNetOneDNN.wbuf) : (void *)wei;
  dnnl_exec_arg_t      args[5], rargs[2];
  int                  nargs = 0;

  PetscFunctionBegin;
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->src, (void *)src));
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->wei, w));
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->dst, (void *)dst));
  args[nargs++] = (dnnl_exec_arg_t){op == PETNET_ONEDNN_CONV_BACKWARD_DATA ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC, e->src};
  args[nargs++] = (dnnl_exec_arg_t){op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS, e->wei};
  args[nargs++] = (dnnl_exec_arg_t){op == PETNET_ONEDNN_CONV_FORWARD ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST, e->dst};
  if (e->bia && bia) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->bia, (void *)bia));
    args[nargs++] = (dnnl_exec_arg_t){op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS, e->bia};
  }
  if (e->pad) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->pad, PetNetOneDNNAligned(PetNetOneDNN.pad)));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->pad};
  }
  if (e->reorder) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->uwei, (void *)wei));
    rargs[0] = (dnnl_exec_arg_t){DNNL_ARG_FROM, op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS ? e->wei : e->uwei};
    rargs[1] = (dnnl_exec_arg_t){DNNL_ARG_TO, op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS ? e->uwei : e->wei};
  }
  if (e->reorder && op != PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS) PetNetCallDNNL(dnnl_primitive_execute(e->reorder, PetNetOneDNN.stream, 2, rargs));
  PetNetCallDNNL(dnnl_primitive_execute(e->prim, PetNetOneDNN.stream, nargs, args));
  if (e->reorder && op == PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS) PetNetCallDNNL(dnnl_primitive_execute(e->reorder, PetNetOneDNN.stream, 2, rargs));
  PetNetCallDNNL(dnnl_stream_wait(PetNetOneDNN.stream));
  PetscFunctionReturn(0);
}

/* the entry of a key that PetNetOneDNNConvAvailable() accepted: a native one here is the caller's error */
static PetscErrorCode PetNetOneDNNConvEntry(PetNetGemmBackend backend, PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, float beta, PetNetOneDNNEntry **e)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNInitialize());
  PetscCall(PetNetOneDNNGetConvEntry(backend, op, sh, beta, e));
  PetscCheck(!(*e)->native, PETSC_COMM_SELF, PETSC_ERR_PLIB, "oneDNN %s: this shape falls back to native: ask PetNetOneDNNConvAvailable() before calling it", PetNetOneDNNOps[op]);
  PetscFunctionReturn(0);
}

/* bfloat16: n samples of size values each rounded into the module's buffer buf (a16 or b16), or X itself when it holds
   bfloat16 values already (in16: a layer's bfloat16 kernels); f32: X itself */
static PetscErrorCode PetNetOneDNNConvOperand(PetNetGemmBackend backend, PetscInt n, PetscInt size, const void *X, PetscBool in16, uint16_t **buf, size_t *len, const void **op)
{
  PetscFunctionBegin;
  *op = X;
  if (backend == PETNET_GEMM_ONEDNN_BF16 && !in16) {
    PetscCall(PetNetOneDNNRoundBF16(size, n, (const float *)X, size, buf, len));
    *op = *buf;
  }
  PetscFunctionReturn(0);
}
#endif

#if defined(PETNET_HAVE_ONEDNN)
/* the name of the implementation of a primitive descriptor (kept as it is when pd is NULL: none), pd destroyed */
static PetscErrorCode PetNetOneDNNImplName(dnnl_primitive_desc_t pd, char *impl, size_t len)
{
  const char *name;

  PetscFunctionBegin;
  if (!pd) PetscFunctionReturn(0);
  PetNetCallDNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&name));
  PetscCall(PetscStrncpy(impl, name, len));
  PetNetCallDNNL(dnnl_primitive_desc_destroy(pd));
  PetscFunctionReturn(0);
}
#endif

/*
  the implementation oneDNN picks on this CPU for a matmul of the backend's type on an m x n x k GEMM ('N', 'N', no
  bias): e.g. "gemm:jit", "brg:avx512_core_amx"; "none" when it implements none, "ref" ones fall back (the view)
*/
PetscErrorCode PetNetOneDNNProbe(PetNetGemmBackend backend, PetscInt m, PetscInt n, PetscInt k, char *impl, size_t len)
{
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(impl, "none", len));
#if defined(PETNET_HAVE_ONEDNN)
  if (backend != PETNET_GEMM_NATIVE) {
    dnnl_primitive_desc_t pd;
    int                   saved;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNCreateDesc(backend, 1, 'N', 'N', m, n, k, m, 0, k, 0, m, 0, 0, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE, &pd));
    PetNetOneDNNThreadsPop(saved);
    PetscCall(PetNetOneDNNImplName(pd, impl, len));
  }
#endif
  PetscFunctionReturn(0);
}

/*
  the implementation oneDNN picks on this CPU for a forward convolution of the backend's type on the shape of the CNN's
  second layer (128 samples, 14x14x32 -> 12x12x64, 3x3, the bias): e.g. "jit:avx2", "brgconv:avx512_core_amx"; "none"
  when it implements none; "ref" ones fall back (the view)
*/
PetscErrorCode PetNetOneDNNConvProbe(PetNetGemmBackend backend, char *impl, size_t len)
{
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(impl, "none", len));
#if defined(PETNET_HAVE_ONEDNN)
  if (backend != PETNET_GEMM_NATIVE) {
    PetNetOneDNNConvShape sh;
    dnnl_primitive_desc_t pd;
    int                   saved;

    PetscCall(PetscMemzero(&sh, sizeof(sh)));
    sh.nsd = 2, sh.n = 128, sh.cin = 32, sh.cout = 64, sh.groups = 1, sh.bias = PETSC_TRUE;
    for (PetscInt d = 0; d < 2; d++) sh.in[d] = 14, sh.out[d] = 12, sh.k[d] = 3, sh.stride[d] = 1, sh.dilation[d] = 1;
    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNConvCreateDesc(backend, PETNET_ONEDNN_CONV_FORWARD, &sh, 0, &pd));
    PetNetOneDNNThreadsPop(saved);
    PetscCall(PetNetOneDNNImplName(pd, impl, len));
  }
#endif
  PetscFunctionReturn(0);
}

/*
  the implementation oneDNN picks on this CPU for a max pooling forward (training) on the CNN's first pooling (128
  samples, 28x28x32 -> 14x14x32, 2x2): e.g. "jit:avx2"; "none" when it implements none; "ref" ones fall back (the view)
*/
PetscErrorCode PetNetOneDNNPoolProbe(PetNetGemmBackend backend, char *impl, size_t len)
{
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(impl, "none", len));
#if defined(PETNET_HAVE_ONEDNN)
  if (backend != PETNET_GEMM_NATIVE) {
    PetNetOneDNNConvShape sh;
    dnnl_primitive_desc_t pd;
    int                   saved;

    PetscCall(PetscMemzero(&sh, sizeof(sh)));
    sh.nsd = 2, sh.n = 128, sh.cin = sh.cout = 32, sh.groups = 1;
    for (PetscInt d = 0; d < 2; d++) sh.in[d] = 28, sh.out[d] = 14, sh.k[d] = 2, sh.stride[d] = 2, sh.dilation[d] = 1;
    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNPoolCreateDesc(PETNET_ONEDNN_MAXPOOL_FORWARD, &sh, &pd));
    PetNetOneDNNThreadsPop(saved);
    PetscCall(PetNetOneDNNImplName(pd, impl, len));
  }
#endif
  PetscFunctionReturn(0);
}

/* PETSC_TRUE when PetNet was built with oneDNN (PETNET_HAVE_ONEDNN: the makefile found dnnl.h) */
PetscBool PetNetOneDNNAvailable(void)
{
#if defined(PETNET_HAVE_ONEDNN)
  return PETSC_TRUE;
#else
  return PETSC_FALSE;
#endif
}

/* "2.6.3 (OpenMP)", or "none" without oneDNN */
PetscErrorCode PetNetOneDNNVersion(char *text, size_t len)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    const dnnl_version_t *v = dnnl_version();

    PetscCall(PetscSNPrintf(text, len, "%d.%d.%d", v->major, v->minor, v->patch));
  }
#else
  PetscCall(PetscStrncpy(text, "none", len));
#endif
  PetscFunctionReturn(0);
}

#if defined(PETNET_HAVE_ONEDNN)
/* runs a matmul entry: src op(B)^T, weights op(A)^T, dst C^T (the table at the top), the bias when the key has one */
static PetscErrorCode PetNetOneDNNMatmulExecute(PetNetOneDNNEntry *e, const void *a, const void *b, void *c, const float *bias)
{
  dnnl_exec_arg_t args[5];
  int             nargs = 0;

  PetscFunctionBegin;
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->src, (void *)b));
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->wei, (void *)a));
  PetNetCallDNNL(dnnl_memory_set_data_handle(e->dst, c));
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, e->src};
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, e->wei};
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, e->dst};
  if (e->bias) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->bia, (void *)bias));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bia};
  }
  PetscCall(PetNetOneDNNRun(e, args, nargs));
  PetscFunctionReturn(0);
}
#endif

/*
  G GEMMs C_g = op(A_g) op(B_g) + beta C_g (+ bias) (then relu: PetNetOneDNNMatmul()), A_g = A + g sa, B_g = B + g sb,
  C_g = C + g sc, each as PetNetOneDNNMatmul() computes one, as one oneDNN matmul with a batch dim (the header's
  comment); G = 1 is PetNetOneDNNMatmul() (sa, sb, sc unused). A and B are float, or at bfloat16 already bfloat16
  (in16: a layer's bfloat16 kernels give the stored values, no rounded copy). *done as there.
*/
static PetscErrorCode PetNetOneDNNMatmulRelu_Private(PetNetGemmBackend backend, PetscInt G, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const void *A, PetscInt lda, PetscInt sa, const void *B, PetscInt ldb, PetscInt sb, PetscBool in16,
                                                     float beta, float *C, PetscInt ldc, PetscInt sc, const float *bias, PetscBool relu, PetscBool *done)
{
  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (backend == PETNET_GEMM_NATIVE || !m || !n || !k || !G) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  if (G == 1) sa = sb = sc = 0; /* one key for a 2-D matmul, whatever the strides say */
  {
    PetNetOneDNNEntry *e = NULL;
    const void        *a = A, *b = B;
    int                saved;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetEntry(backend, G, ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, beta, (PetscBool) !!bias, relu, PETSC_FALSE, &e));
    if (e->native) {
      PetNetOneDNNThreadsPop(saved);
      PetscFunctionReturn(0);
    }
    if (backend == PETNET_GEMM_ONEDNN_BF16 && !in16) {
      const PetscInt ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m, rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;

      if (G == 1) {
        PetscCall(PetNetOneDNNRoundBF16(ra, ca, (const float *)A, lda, &PetNetOneDNN.a16, &PetNetOneDNN.na16));
        PetscCall(PetNetOneDNNRoundBF16(rb, cb, (const float *)B, ldb, &PetNetOneDNN.b16, &PetNetOneDNN.nb16));
      } else { /* the span from the first group's first entry to the last group's last, as one column (gaps rounded too) */
        const PetscInt spana = (G - 1) * sa + lda * (ca - 1) + ra, spanb = (G - 1) * sb + ldb * (cb - 1) + rb;

        PetscCall(PetNetOneDNNRoundBF16(spana, 1, (const float *)A, spana, &PetNetOneDNN.a16, &PetNetOneDNN.na16));
        PetscCall(PetNetOneDNNRoundBF16(spanb, 1, (const float *)B, spanb, &PetNetOneDNN.b16, &PetNetOneDNN.nb16));
      }
      a = PetNetOneDNN.a16, b = PetNetOneDNN.b16;
    }
    PetscCall(PetNetOneDNNMatmulExecute(e, a, b, C, bias));
    PetNetOneDNNThreadsPop(saved);
    *done = PETSC_TRUE;
  }
#endif
  PetscFunctionReturn(0);
}

/*
  C = op(A) op(B) + beta C (+ bias[i] on row i of C when bias), then C = max(C, 0) when relu (an eltwise post-op:
  the bits of relu's own pass, x > 0 ? x : +0, on the matmul's output while it is in registers), column-major as BLAS's sgemm with alpha 1 (the table
  at the top), through oneDNN: *done PETSC_FALSE when the key fell back to native (nothing is written; the caller runs
  its GEMM) or the backend is PETNET_GEMM_NATIVE. Called from the calling thread, outside any parallel region.
*/
PetscErrorCode PetNetOneDNNMatmul(PetNetGemmBackend backend, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, const float *B, PetscInt ldb, float beta, float *C, PetscInt ldc, const float *bias, PetscBool relu,
                                  PetscBool *done)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNMatmulRelu_Private(backend, 1, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, PETSC_FALSE, beta, C, ldc, 0, bias, relu, done));
  PetscFunctionReturn(0);
}

/* G GEMMs at once (PetNetOneDNNMatmulRelu_Private()), einsum's groups: no activation */
PetscErrorCode PetNetOneDNNMatmulBatched(PetNetGemmBackend backend, PetscInt G, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, PetscInt sa, const float *B, PetscInt ldb, PetscInt sb, float beta, float *C,
                                         PetscInt ldc, PetscInt sc, const float *bias, PetscBool *done)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNMatmulRelu_Private(backend, G, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, PETSC_FALSE, beta, C, ldc, sc, bias, PETSC_FALSE, done));
  PetscFunctionReturn(0);
}

/*
  PetNetOneDNNMatmul() at bfloat16 on operands that are bfloat16 already (a layer's bfloat16 kernels: the stored
  values, and weights the layer rounded once), with no rounded copy: the same key, so the same bits, as the float
  entry on their widened values. C float; *done as there.
*/
PetscErrorCode PetNetOneDNNMatmulBF16(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const uint16_t *A, PetscInt lda, const uint16_t *B, PetscInt ldb, float beta, float *C, PetscInt ldc, const float *bias, PetscBool relu, PetscBool *done)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNMatmulRelu_Private(PETNET_GEMM_ONEDNN_BF16, 1, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, PETSC_TRUE, beta, C, ldc, 0, bias, relu, done));
  PetscFunctionReturn(0);
}

/*
  C16 (m x n, ldc = m) = relu?(op(A) op(B) + bias) in bfloat16, from bfloat16 A and B: bit for bit the float output of
  PetNetOneDNNMatmulBF16() rounded as the value store rounds. As for convolutions (PetNetOneDNNConvOut16()), the first
  call of the key computes both, the float output rounded into C16 and oneDNN's bfloat16 output (a key with out16),
  compares them (entry->agrees, -info says which), and from then on lets oneDNN write bfloat16 itself only where they
  were the same bits; else the float output is rounded. *done PETSC_FALSE when the float key falls back to native
  (nothing written).
*/
PetscErrorCode PetNetOneDNNMatmulBF16Out(char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const uint16_t *A, PetscInt lda, const uint16_t *B, PetscInt ldb, uint16_t *C16, const float *bias, PetscBool relu, PetscBool *done)
{
  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (!m || !n || !k) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    const PetscInt     N = m * n;
    PetNetOneDNNEntry *e16;
    PetscBool          same;
    float             *f;
    int                saved;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetEntry(PETNET_GEMM_ONEDNN_BF16, 1, ta, tb, m, n, k, lda, 0, ldb, 0, m, 0, 0, (PetscBool) !!bias, relu, PETSC_TRUE, &e16));
    if (!e16->native && e16->agrees == 1) {
      PetscCall(PetNetOneDNNMatmulExecute(e16, A, B, C16, bias));
      PetNetOneDNNThreadsPop(saved);
      *done = PETSC_TRUE;
      PetscFunctionReturn(0);
    }
    PetNetOneDNNThreadsPop(saved);
    /* the reference: the float output, rounded */
    PetscCall(PetNetOneDNNFloatScratch((size_t)N, &f));
    PetscCall(PetNetOneDNNMatmulBF16(ta, tb, m, n, k, A, lda, B, ldb, 0, f, m, bias, relu, done));
    if (!*done) PetscFunctionReturn(0);
    PetNetBF16Round(N, f, C16);
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetEntry(PETNET_GEMM_ONEDNN_BF16, 1, ta, tb, m, n, k, lda, 0, ldb, 0, m, 0, 0, (PetscBool) !!bias, relu, PETSC_TRUE, &e16)); /* again: the reference's entry may have moved the table */
    if (!e16->native && e16->agrees == 0) {
      if ((size_t)N > PetNetOneDNN.nc16) {
        PetscCall(PetscFree(PetNetOneDNN.c16));
        PetscCall(PetscMalloc1(N, &PetNetOneDNN.c16));
        PetNetOneDNN.nc16 = (size_t)N;
      }
      PetscCall(PetNetOneDNNMatmulExecute(e16, A, B, PetNetOneDNN.c16, bias));
      PetscCall(PetscArraycmp(PetNetOneDNN.c16, C16, N, &same));
      e16->agrees = same ? 1 : 2;
      PetscCall(PetscInfo(NULL, "oneDNN matmul bf16 %c%c m %" PetscInt_FMT " n %" PetscInt_FMT " k %" PetscInt_FMT " with a bfloat16 output: %s\n", ta, tb, m, n, k,
                          e16->agrees == 1 ? "the float output's bits rounded, written by oneDNN from now on" : "not the float output's bits rounded: PetNet rounds the float output"));
    }
    PetNetOneDNNThreadsPop(saved);
  }
#endif
  PetscFunctionReturn(0);
}

/*
  *ok PETSC_TRUE when oneDNN has a kernel worth running (not its reference loops) for every op a convolution layer of
  this shape runs in the backend's type: forward with the shape's bias, forward without bias with a sum post-op (jvp's
  second term), backward data and backward weights. The entries are created (and recorded by -info) at the first
  call; a layer runs all its ops on oneDNN or none, so that a backward never meets another kernel's forward state.
*/
PetscErrorCode PetNetOneDNNConvAvailable(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, PetscBool *ok)
{
  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  if (backend == PETNET_GEMM_NATIVE || !sh->n) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    const PetNetOneDNNOp  ops[4]   = {PETNET_ONEDNN_CONV_FORWARD, PETNET_ONEDNN_CONV_FORWARD, PETNET_ONEDNN_CONV_BACKWARD_DATA, PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS};
    const float           betas[4] = {0, 1, 0, 0};
    PetNetOneDNNConvShape base     = *sh, nobias;
    PetNetOneDNNEntry    *e;
    int                   saved;

    base.relu   = PETSC_FALSE; /* the four ops have no activation; the forward with relu (sh->relu) is a fifth */
    nobias      = base;
    nobias.bias = PETSC_FALSE;
    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    *ok   = PETSC_TRUE;
    for (PetscInt i = 0; i < 4 && *ok; i++) {
      PetscCall(PetNetOneDNNGetConvEntry(backend, ops[i], i == 1 ? &nobias : &base, betas[i], &e));
      *ok = (PetscBool)!e->native;
    }
    if (*ok && sh->relu) {
      PetscCall(PetNetOneDNNGetConvEntry(backend, PETNET_ONEDNN_CONV_FORWARD, sh, 0, &e));
      *ok = (PetscBool)!e->native;
    }
    PetNetOneDNNThreadsPop(saved);
  }
#endif
  PetscFunctionReturn(0);
}

/*
  y = conv(x; W) + b + beta y (b NULL: none; beta 0 or 1, the latter jvp's sum), through oneDNN: x [n][in][cin], y
  [n][out][cout] channels last, W [cout][k][cin/G] and b [cout] float (bfloat16: x and W rounded to it, y float; x16:
  x holds bfloat16 values already). The key must be one PetNetOneDNNConvAvailable() accepted (sh->bias says whether b
  is given).
*/
static PetscErrorCode PetNetOneDNNConvForward_Private(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const void *x, PetscBool x16, const float *W, const float *b, float beta, float *y)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e;
    const void        *src;
    PetscInt           insize = sh->cin;
    int                saved  = PetNetOneDNNThreadsPush();

    for (PetscInt d = 0; d < sh->nsd; d++) insize *= sh->in[d];
    PetscCall(PetNetOneDNNConvEntry(backend, PETNET_ONEDNN_CONV_FORWARD, sh, beta, &e));
    PetscCall(PetNetOneDNNConvOperand(backend, sh->n, insize, x, x16, &PetNetOneDNN.a16, &PetNetOneDNN.na16, &src));
    PetscCall(PetNetOneDNNConvExecute(e, src, W, b, y));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN convolution: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/* dx = the convolution's transpose applied to dy (overwritten; the shapes of PetNetOneDNNConvForward(); dy16: dy holds bfloat16 values) */
static PetscErrorCode PetNetOneDNNConvBackwardData_Private(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const float *W, const void *dy, PetscBool dy16, float *dx)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e;
    const void        *ddst;
    PetscInt           outsize = sh->cout;
    int                saved   = PetNetOneDNNThreadsPush();

    for (PetscInt d = 0; d < sh->nsd; d++) outsize *= sh->out[d];
    PetscCall(PetNetOneDNNConvEntry(backend, PETNET_ONEDNN_CONV_BACKWARD_DATA, sh, 0, &e));
    PetscCall(PetNetOneDNNConvOperand(backend, sh->n, outsize, dy, dy16, &PetNetOneDNN.b16, &PetNetOneDNN.nb16, &ddst));
    PetscCall(PetNetOneDNNConvExecute(e, dx, W, NULL, ddst));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN convolution: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/* dW = sum over the batch of x against dy, db = sum of dy (both overwritten, float, W's layout; db NULL without a
   bias; in16: x and dy hold bfloat16 values) */
static PetscErrorCode PetNetOneDNNConvBackwardWeights_Private(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const void *x, const void *dy, PetscBool in16, float *dW, float *db)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e;
    const void        *src, *ddst;
    PetscInt           insize = sh->cin, outsize = sh->cout;
    int                saved = PetNetOneDNNThreadsPush();

    for (PetscInt d = 0; d < sh->nsd; d++) insize *= sh->in[d], outsize *= sh->out[d];
    PetscCall(PetNetOneDNNConvEntry(backend, PETNET_ONEDNN_CONV_BACKWARD_WEIGHTS, sh, 0, &e));
    PetscCall(PetNetOneDNNConvOperand(backend, sh->n, insize, x, in16, &PetNetOneDNN.a16, &PetNetOneDNN.na16, &src));
    PetscCall(PetNetOneDNNConvOperand(backend, sh->n, outsize, dy, in16, &PetNetOneDNN.b16, &PetNetOneDNN.nb16, &ddst));
    PetscCall(PetNetOneDNNConvExecute(e, src, dW, db, ddst));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN convolution: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/* the three on float data (x, dy float; bfloat16: rounded here into this module's buffers) */
PetscErrorCode PetNetOneDNNConvForward(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const float *x, const float *W, const float *b, float beta, float *y)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvForward_Private(backend, sh, x, PETSC_FALSE, W, b, beta, y));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetOneDNNConvBackwardData(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const float *W, const float *dy, float *dx)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvBackwardData_Private(backend, sh, W, dy, PETSC_FALSE, dx));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetOneDNNConvBackwardWeights(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, const float *x, const float *dy, float *dW, float *db)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvBackwardWeights_Private(backend, sh, x, dy, PETSC_FALSE, dW, db));
  PetscFunctionReturn(0);
}

/* the three at bfloat16 on bfloat16 data (x, dy as a Net stores them: no rounded copy), the outputs float */
PetscErrorCode PetNetOneDNNConvForwardBF16(const PetNetOneDNNConvShape *sh, const uint16_t *x, const float *W, const float *b, float beta, float *y)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvForward_Private(PETNET_GEMM_ONEDNN_BF16, sh, x, PETSC_TRUE, W, b, beta, y));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetOneDNNConvBackwardDataBF16(const PetNetOneDNNConvShape *sh, const float *W, const uint16_t *dy, float *dx)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvBackwardData_Private(PETNET_GEMM_ONEDNN_BF16, sh, W, dy, PETSC_TRUE, dx));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetOneDNNConvBackwardWeightsBF16(const PetNetOneDNNConvShape *sh, const uint16_t *x, const uint16_t *dy, float *dW, float *db)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNConvBackwardWeights_Private(PETNET_GEMM_ONEDNN_BF16, sh, x, dy, PETSC_TRUE, dW, db));
  PetscFunctionReturn(0);
}

/*
  A convolution's forward (y = relu?(conv(x; W) + b)) or backward data (dx = conv^T(dy; W)) at bfloat16 with its output
  in bfloat16 (out, N entries), as a layer's bfloat16 kernels want it, bit for bit the float output rounded as the
  value store rounds (PetNetFloatToBF16()), which is the reference every bfloat16 path is checked against. oneDNN can
  write bfloat16 itself (a key with out16: no float output and no rounding pass, 3x less memory traffic), but whether
  its primitive for a bfloat16 destination accumulates in the same order as the one for a float destination is oneDNN's
  choice: so the first call of each such key computes both, the float output rounded into out and oneDNN's bfloat16
  output into a buffer, and compares them (entry->agrees, -info says which); the key writes bfloat16 itself from then
  on only where they were the same bits, else this function keeps rounding the float output. The same primitives give
  the same bits on the same data, so one batch decides (a NaN may differ in its payload bits, not in being a NaN).
*/
#if defined(PETNET_HAVE_ONEDNN)
static PetscErrorCode PetNetOneDNNConvOut16(PetNetOneDNNOp op, const PetNetOneDNNConvShape *sh, const uint16_t *in, const float *W, const float *b, uint16_t *out)
{
  PetscFunctionBegin;
  {
    PetNetOneDNNConvShape sh16 = *sh;
    PetNetOneDNNEntry    *e16;
    PetscBool             same;
    PetscInt              N = sh->n * (op == PETNET_ONEDNN_CONV_FORWARD ? sh->cout : sh->cin);
    float                *f;
    int                   saved;

    for (PetscInt d = 0; d < sh->nsd; d++) N *= op == PETNET_ONEDNN_CONV_FORWARD ? sh->out[d] : sh->in[d];
    sh16.out16 = PETSC_TRUE;
    saved      = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_BF16, op, &sh16, 0, &e16));
    PetNetOneDNNThreadsPop(saved);
    if (!e16->native && e16->agrees == 1) {
      saved = PetNetOneDNNThreadsPush();
      if (op == PETNET_ONEDNN_CONV_FORWARD)
        PetscCall(PetNetOneDNNConvExecute(e16, in, W, b, out));
      else
        PetscCall(PetNetOneDNNConvExecute(e16, out, W, NULL, in));
      PetNetOneDNNThreadsPop(saved);
      PetscFunctionReturn(0);
    }
    /* the reference: the float output, rounded */
    PetscCall(PetNetOneDNNFloatScratch((size_t)N, &f));
    if (op == PETNET_ONEDNN_CONV_FORWARD)
      PetscCall(PetNetOneDNNConvForward_Private(PETNET_GEMM_ONEDNN_BF16, sh, in, PETSC_TRUE, W, b, 0, f));
    else
      PetscCall(PetNetOneDNNConvBackwardData_Private(PETNET_GEMM_ONEDNN_BF16, sh, W, in, PETSC_TRUE, f));
    PetNetBF16Round(N, f, out);
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_BF16, op, &sh16, 0, &e16)); /* again: the reference's entry may have moved the table */
    if (!e16->native && e16->agrees == 0) {
      if ((size_t)N > PetNetOneDNN.nc16) {
        PetscCall(PetscFree(PetNetOneDNN.c16));
        PetscCall(PetscMalloc1(N, &PetNetOneDNN.c16));
        PetNetOneDNN.nc16 = (size_t)N;
      }
      if (op == PETNET_ONEDNN_CONV_FORWARD)
        PetscCall(PetNetOneDNNConvExecute(e16, in, W, b, PetNetOneDNN.c16));
      else
        PetscCall(PetNetOneDNNConvExecute(e16, PetNetOneDNN.c16, W, NULL, in));
      PetscCall(PetscArraycmp(PetNetOneDNN.c16, out, N, &same));
      e16->agrees = same ? 1 : 2;
      PetscCall(PetscInfo(NULL, "oneDNN %s bf16 with a bfloat16 output: %s\n", PetNetOneDNNOps[op],
                          e16->agrees == 1 ? "the float output's bits rounded, written by oneDNN from now on" : "not the float output's bits rounded: PetNet rounds the float output"));
    }
    PetNetOneDNNThreadsPop(saved);
  }
  PetscFunctionReturn(0);
}
#endif

/* y = relu?(conv(x; W) + b) (sh->relu) in bfloat16 from bfloat16 x, and dx = conv^T(dy; W) in bfloat16 from bfloat16 dy
   (PetNetOneDNNConvOut16()) */
PetscErrorCode PetNetOneDNNConvForwardBF16Out(const PetNetOneDNNConvShape *sh, const uint16_t *x, const float *W, const float *b, uint16_t *y)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  PetscCall(PetNetOneDNNConvOut16(PETNET_ONEDNN_CONV_FORWARD, sh, x, W, b, y));
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN convolution: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetOneDNNConvBackwardDataBF16Out(const PetNetOneDNNConvShape *sh, const float *W, const uint16_t *dy, uint16_t *dx)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  PetscCall(PetNetOneDNNConvOut16(PETNET_ONEDNN_CONV_BACKWARD_DATA, sh, dy, W, NULL, dx));
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN convolution: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/*
  *buf: this module's float scratch of at least n entries (64-byte aligned), grown as asked and kept until
  PetscFinalize(): where a layer's bfloat16 kernels put the float outputs of oneDNN's primitives before rounding them
  into the Net's store. One buffer for every layer, as the value store's scratch holds one node's arrays; valid until
  the next call.
*/
PetscErrorCode PetNetOneDNNFloatScratch(size_t n, float **buf)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  if (n > PetNetOneDNN.nf32) {
    PetscCall(PetscFree(PetNetOneDNN.f32));
    PetscCall(PetscMalloc1(n, &PetNetOneDNN.f32));
    PetNetOneDNN.nf32 = n;
  }
  *buf = PetNetOneDNN.f32;
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/*
  *on: oneDNN has bfloat16 convolution and matmul kernels on this CPU (AVX-512 BF16, AMX: PetNetOneDNNConvProbe() and
  PetNetOneDNNProbe() on dense's shape name ones that are not its reference loops), asked once
*/
PetscErrorCode PetNetOneDNNHasBF16(PetscBool *on)
{
  static PetscInt known = -1;

  PetscFunctionBegin;
  if (known < 0) {
    char conv[64], matmul[64];

    PetscCall(PetNetOneDNNConvProbe(PETNET_GEMM_ONEDNN_BF16, conv, sizeof(conv)));
    PetscCall(PetNetOneDNNProbe(PETNET_GEMM_ONEDNN_BF16, 256, 128, 784, matmul, sizeof(matmul)));
    known = strcmp(conv, "none") && strncmp(conv, "ref", 3) && strcmp(matmul, "none") && strncmp(matmul, "ref", 3) ? 1 : 0;
  }
  *on = (PetscBool)(known == 1);
  PetscFunctionReturn(0);
}

/*
  A pooling's forward and backward on oneDNN (max: max pooling, else average) for the key sh: *ok when oneDNN has a kernel worth running for both
  (a layer runs both on it or neither) and, when wsbytes is given, both agree on the workspace's bytes per output
  (*wsbytes; 0 without a workspace)
*/
static PetscErrorCode PetNetOneDNNPoolPairAvailable(PetNetGemmBackend backend, PetscBool max, const PetNetOneDNNConvShape *sh, PetscBool *ok, PetscInt *wsbytes)
{
  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  if (wsbytes) *wsbytes = 0;
  if (backend == PETNET_GEMM_NATIVE || !sh->n) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e;
    int                saved;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, max ? PETNET_ONEDNN_MAXPOOL_FORWARD : PETNET_ONEDNN_AVGPOOL_FORWARD, sh, 0, &e));
    *ok = (PetscBool)!e->native;
    if (wsbytes) *wsbytes = e->wsbytes;
    if (*ok) {
      PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, max ? PETNET_ONEDNN_MAXPOOL_BACKWARD : PETNET_ONEDNN_AVGPOOL_BACKWARD, sh, 0, &e));
      *ok = (PetscBool)(!e->native && (!wsbytes || e->wsbytes == *wsbytes));
    }
    PetNetOneDNNThreadsPop(saved);
  }
#endif
  PetscFunctionReturn(0);
}

/*
  Average pooling (avgpool's float kernels, count_include_pad): the key is a PetNetOneDNNConvShape with cin = cout the
  channels, k the window, stride and pad the pooling's (dilation 1, groups 1, no bias); f32 in every precision.
  *ok: oneDNN has a kernel worth running for both its forward and backward (a layer runs both on it or neither).
*/
PetscErrorCode PetNetOneDNNAvgPoolAvailable(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, PetscBool *ok)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNPoolPairAvailable(backend, PETSC_FALSE, sh, ok, NULL));
  PetscFunctionReturn(0);
}

/*
  A pooling's pass on a key its Available() accepted (max: max pooling, its workspace ws; else average, ws NULL):
  forward (adjoint false) y from x, backward (adjoint) x = dx overwritten from dy (y)
*/
static PetscErrorCode PetNetOneDNNPoolExecute(const PetNetOneDNNConvShape *sh, PetscBool max, PetscBool adjoint, float *x, float *y, void *ws)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e;
    dnnl_exec_arg_t    args[4];
    int                nargs = 0, saved = PetNetOneDNNThreadsPush();

    PetscCall(PetNetOneDNNConvEntry(PETNET_GEMM_ONEDNN_F32, max ? (adjoint ? PETNET_ONEDNN_MAXPOOL_BACKWARD : PETNET_ONEDNN_MAXPOOL_FORWARD) : (adjoint ? PETNET_ONEDNN_AVGPOOL_BACKWARD : PETNET_ONEDNN_AVGPOOL_FORWARD), sh, 0, &e));
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->src, x));
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->dst, y));
    args[nargs++] = (dnnl_exec_arg_t){adjoint ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC, e->src};
    args[nargs++] = (dnnl_exec_arg_t){adjoint ? DNNL_ARG_DIFF_DST : DNNL_ARG_DST, e->dst};
    if (max) {
      PetNetCallDNNL(dnnl_memory_set_data_handle(e->ws, ws));
      args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, e->ws};
    }
    PetscCall(PetNetOneDNNRun(e, args, nargs));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN pooling: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

/* y = A x (adjoint false) or x = A^T y (adjoint, x overwritten): the average pooling of a key PetNetOneDNNAvgPoolAvailable() accepted */
PetscErrorCode PetNetOneDNNAvgPool(const PetNetOneDNNConvShape *sh, PetscBool adjoint, float *x, float *y)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNPoolExecute(sh, PETSC_FALSE, adjoint, x, y, NULL));
  PetscFunctionReturn(0);
}

/*
  Max pooling (maxpool's float kernels; padding as -infinity, PyTorch's MaxPool2d): the key as average pooling's.
  *ok: oneDNN has a kernel worth running for both its forward (training: it writes the workspace) and its backward
  (which reads it), and writes its workspace as PetNetOneDNNMaxPoolWorkspace() reads it; *wsbytes: the workspace's
  bytes per output (1: u8, 4: s32), the caller holding n Ho Wo C of them between a forward and its backward.
*/
PetscErrorCode PetNetOneDNNMaxPoolAvailable(PetNetGemmBackend backend, const PetNetOneDNNConvShape *sh, PetscBool *ok, PetscInt *wsbytes)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNPoolPairAvailable(backend, PETSC_TRUE, sh, ok, wsbytes));
  PetscFunctionReturn(0);
}

/*
  forward (adjoint false): y = the window maxima of x, ws written (the index of each maximum in its window); backward
  (adjoint): x = dx overwritten, dy (y) added at the taps ws names, zero elsewhere; on a key PetNetOneDNNMaxPoolAvailable()
  accepted, ws of n Ho Wo C entries of its wsbytes
*/
PetscErrorCode PetNetOneDNNMaxPool(const PetNetOneDNNConvShape *sh, PetscBool adjoint, float *x, float *y, void *ws)
{
  PetscFunctionBegin;
  PetscCall(PetNetOneDNNPoolExecute(sh, PETSC_TRUE, adjoint, x, y, ws));
  PetscFunctionReturn(0);
}

#if defined(PETNET_HAVE_ONEDNN)
/* a layer normalization's key (PetNetOneDNNLNormCreateDesc()): P positions of E values, affine or not */
static void PetNetOneDNNLNormKey(PetscInt P, PetscInt E, PetscBool affine, PetNetOneDNNConvShape *sh)
{
  memset(sh, 0, sizeof(*sh));
  sh->n = P, sh->cin = sh->cout = E, sh->groups = 1, sh->bias = affine;
}
#endif

/*
  Layer normalization (layernorm's float passes): *ok when oneDNN has a kernel worth running for both the forward
  (training) and the backward of P positions of E values (affine: gamma and beta), epsilon eps; f32 in every precision
*/
PetscErrorCode PetNetOneDNNLayerNormAvailable(PetNetGemmBackend backend, PetscInt P, PetscInt E, PetscBool affine, float eps, PetscBool *ok)
{
  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  if (backend == PETNET_GEMM_NATIVE || !P) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNConvShape sh;
    PetNetOneDNNEntry    *e;
    int                   saved;

    PetNetOneDNNLNormKey(P, E, affine, &sh);
    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, PETNET_ONEDNN_LNORM_FORWARD, &sh, eps, &e));
    *ok = (PetscBool)!e->native;
    if (*ok) {
      PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, PETNET_ONEDNN_LNORM_BACKWARD, &sh, eps, &e));
      *ok = (PetscBool)!e->native;
    }
    PetNetOneDNNThreadsPop(saved);
  }
#endif
  PetscFunctionReturn(0);
}

#if defined(PETNET_HAVE_ONEDNN)
/* a layer or batch normalization primitive of entry e on its arguments data[] in the entry's order (e->lnarg), with
   the scratchpad when it asks for one; waits for the stream */
static PetscErrorCode PetNetOneDNNExecuteNorm(PetNetOneDNNEntry *e, void *const *data)
{
  dnnl_exec_arg_t args[10];
  int             nargs = 0;

  PetscFunctionBegin;
  PetscCheck(e->nln < 10, PETSC_COMM_SELF, PETSC_ERR_PLIB, "A normalization primitive with %d arguments", e->nln);
  for (int i = 0; i < e->nln; i++) {
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->lnm[i], data[i]));
    args[nargs++] = (dnnl_exec_arg_t){e->lnarg[i], e->lnm[i]};
  }
  PetscCall(PetNetOneDNNRun(e, args, nargs));
  PetscFunctionReturn(0);
}
#endif

/*
  Runs a layer normalization of a key PetNetOneDNNLayerNormAvailable() accepted, its arguments in the entry's order:
    forward   x, y (written), mean, var (written, [P]), gamma, beta ([E], affine only)
    backward  x, dy, mean, var, dx (written), gamma, beta, dgamma, dbeta (written, overwritten; affine only: oneDNN
              2.6 asks for beta in the backward too, though it reads none of it)
*/
PetscErrorCode PetNetOneDNNLayerNorm(PetscBool backward, PetscInt P, PetscInt E, PetscBool affine, float eps, void *const *data)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNConvShape sh;
    PetNetOneDNNEntry    *e;
    int                   saved = PetNetOneDNNThreadsPush();

    PetNetOneDNNLNormKey(P, E, affine, &sh);
    PetscCall(PetNetOneDNNConvEntry(PETNET_GEMM_ONEDNN_F32, backward ? PETNET_ONEDNN_LNORM_BACKWARD : PETNET_ONEDNN_LNORM_FORWARD, &sh, eps, &e));
    PetscCall(PetNetOneDNNExecuteNorm(e, data));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN layer normalization: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}

#if defined(PETNET_HAVE_ONEDNN)
/*
  A batch normalization's key (PetNetOneDNNBNormDescs()): n samples of batchnorm's input shape dim[0..ndim) (channels
  last, C = dim[ndim - 1]), given to oneDNN as nhwc or ndhwc, the same memory: flat (C) inputs as 1 x 1 x C, (T, C) as
  1 x T x C, more than 3 dims before the channels as 1 x (their product) x C (the statistics run over every position
  alike). oneDNN 2.6 has jit kernels for 4-D and 5-D channels-last data only: nc and nwc get its plain or reference
  loops.
*/
static void PetNetOneDNNBNormKey(PetscInt n, PetscInt ndim, const PetscInt dim[], PetNetOneDNNConvShape *sh)
{
  memset(sh, 0, sizeof(*sh));
  sh->n = n, sh->cin = sh->cout = dim[ndim - 1], sh->groups = 1, sh->bias = PETSC_TRUE;
  sh->nsd   = 2;
  sh->in[0] = sh->in[1] = 1;
  if (ndim == 3 || ndim == 4) {
    sh->nsd = ndim - 1;
    for (PetscInt d = 0; d < sh->nsd; d++) sh->in[d] = dim[d];
  } else
    for (PetscInt d = 0; d < ndim - 1; d++) sh->in[1] *= dim[d];
}
#endif

/*
  Batch normalization (batchnorm's float passes): *ok when oneDNN has a kernel worth running for both the forward and
  the backward of n samples of the input shape dim[0..ndim) (channels last), gamma and beta, epsilon eps: with the
  batch's statistics (global false: forward training, which computes them) or given ones (global: evaluation mode's
  running statistics, or a batch's reduced over the ranks); f32 in every precision
*/
PetscErrorCode PetNetOneDNNBatchNormAvailable(PetNetGemmBackend backend, PetscInt n, PetscInt ndim, const PetscInt dim[], PetscBool global, float eps, PetscBool *ok)
{
  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  if (backend == PETNET_GEMM_NATIVE || !n) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNConvShape sh;
    PetNetOneDNNEntry    *e;
    int                   saved;

    PetNetOneDNNBNormKey(n, ndim, dim, &sh);
    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, global ? PETNET_ONEDNN_BNORM_FORWARD_GLOBAL : PETNET_ONEDNN_BNORM_FORWARD, &sh, eps, &e));
    *ok = (PetscBool)!e->native;
    if (*ok) {
      PetscCall(PetNetOneDNNGetConvEntry(PETNET_GEMM_ONEDNN_F32, global ? PETNET_ONEDNN_BNORM_BACKWARD_GLOBAL : PETNET_ONEDNN_BNORM_BACKWARD, &sh, eps, &e));
      *ok = (PetscBool)!e->native;
    }
    PetNetOneDNNThreadsPop(saved);
  }
#endif
  PetscFunctionReturn(0);
}

/*
  Runs a batch normalization of a key PetNetOneDNNBatchNormAvailable() accepted, its arguments in the entry's order:
    forward   x, y (written), mean, var ([C]: written, or read when global), gamma, beta ([C])
    backward  x, dy, mean, var, dx (written), gamma, beta, dgamma, dbeta (written, overwritten)
  var is the biased variance of the values (oneDNN's); the data are channels last, [n][positions][C].
*/
PetscErrorCode PetNetOneDNNBatchNorm(PetscBool backward, PetscBool global, PetscInt n, PetscInt ndim, const PetscInt dim[], float eps, void *const *data)
{
  PetscFunctionBegin;
#if defined(PETNET_HAVE_ONEDNN)
  {
    const PetNetOneDNNOp  op = backward ? (global ? PETNET_ONEDNN_BNORM_BACKWARD_GLOBAL : PETNET_ONEDNN_BNORM_BACKWARD) : (global ? PETNET_ONEDNN_BNORM_FORWARD_GLOBAL : PETNET_ONEDNN_BNORM_FORWARD);
    PetNetOneDNNConvShape sh;
    PetNetOneDNNEntry    *e;
    int                   saved = PetNetOneDNNThreadsPush();

    PetNetOneDNNBNormKey(n, ndim, dim, &sh);
    PetscCall(PetNetOneDNNConvEntry(PETNET_GEMM_ONEDNN_F32, op, &sh, eps, &e));
    PetscCall(PetNetOneDNNExecuteNorm(e, data));
    PetNetOneDNNThreadsPop(saved);
  }
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "oneDNN batch normalization: this PetNet was built without oneDNN; use -net_backend native");
#endif
  PetscFunctionReturn(0);
}
