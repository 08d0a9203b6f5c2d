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

  bfloat16 (PETNET_GEMM_ONEDNN_BF16): A and B are rounded to bfloat16 (to nearest, ties to even, as the value stores
  round: NetFloatToBF16() of netimpl.h, which the sys level cannot include) into buffers this module owns, with the
  same leading dimensions; dst and the accumulation stay float.

  Threads: oneDNN on Debian runs on OpenMP (libgomp, as PetNet): a primitive is created and run with PetNet's thread
  count (omp_set_num_threads() around the call, the caller's setting restored after), which is part of the key, since
  oneDNN blocks its loops for the threads it has. The same key gives the same bits; a different thread count may not.

  Scratchpads: user mode, one buffer this module owns, grown to the largest primitive's (64-byte aligned). The
  stream is in order and every call waits for it, so the buffer is never shared by two running primitives.
*/
#include <petnet/private/onednnimpl.h>
#include <petnet/private/threadsimpl.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(PETNET_HAVE_ONEDNN)
#include <dnnl.h>
#include <dnnl_debug.h>

/* at most this many primitives are kept; a new one past it empties the cache (shapes change rarely: a last batch) */
#define PETNET_ONEDNN_CACHE 64

typedef struct {
  PetNetGemmBackend backend;
  char              ta, tb;
  PetscInt          m, n, k, lda, ldb, ldc;
  float             beta;
  PetscBool         bias;
  int               threads;
  PetscBool         native; /* oneDNN has no kernel worth running for this key: the caller's GEMM runs */
  dnnl_primitive_t  prim;
  dnnl_memory_t     src, wei, bia, dst, pad; /* descriptors with no data: the handles are set at each call */
  size_t            padsize;
} PetNetOneDNNEntry;

static struct {
  PetscBool          initialized;
  dnnl_engine_t      engine;
  dnnl_stream_t      stream;
  PetNetOneDNNEntry *entries; /* maxentries of them, grown by doubling up to PETNET_ONEDNN_CACHE */
  PetscInt           nentries, maxentries;
  char              *pad; /* the scratchpad: padsize bytes from a 64-byte boundary of pad */
  size_t             padsize;
  uint16_t          *a16, *b16; /* bfloat16 copies of A and B */
  size_t             na16, nb16;
} PetNetOneDNN;

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
static PetscErrorCode PetNetOneDNNCreateDesc(PetNetGemmBackend backend, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, PetscInt lda, PetscInt ldb, PetscInt ldc, float beta, PetscBool bias, dnnl_primitive_desc_t *pd)
{
  const dnnl_data_type_t in    = backend == PETNET_GEMM_ONEDNN_BF16 ? dnnl_bf16 : dnnl_f32;
  const dnnl_dims_t      sdims = {n, k}, wdims = {k, m}, ddims = {n, m}, bdims = {1, m};
  const dnnl_dims_t      sstr = {tb == 'N' ? ldb : 1, tb == 'N' ? 1 : ldb}, wstr = {ta == 'N' ? lda : 1, ta == 'N' ? 1 : lda}, dstr = {ldc, 1}, bstr = {m, 1};
  dnnl_memory_desc_t     smd, wmd, dmd, bmd;
  dnnl_matmul_desc_t     desc;
  dnnl_primitive_attr_t  attr;
  dnnl_post_ops_t        ops = NULL;
  dnnl_status_t          st;

  PetscFunctionBegin;
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&smd, 2, sdims, in, sstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&wmd, 2, wdims, in, wstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&dmd, 2, ddims, dnnl_f32, dstr));
  PetNetCallDNNL(dnnl_memory_desc_init_by_strides(&bmd, 2, bdims, dnnl_f32, bstr));
  PetNetCallDNNL(dnnl_matmul_desc_init(&desc, &smd, &wmd, bias ? &bmd : NULL, &dmd));
  PetNetCallDNNL(dnnl_primitive_attr_create(&attr));
  PetNetCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (beta != 0) {
    PetNetCallDNNL(dnnl_post_ops_create(&ops));
    PetNetCallDNNL(dnnl_post_ops_append_sum(ops, beta));
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

/* the cached entry of a key, created (and its decision recorded) at the first call */
static PetscErrorCode PetNetOneDNNGetEntry(PetNetGemmBackend backend, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, PetscInt lda, PetscInt ldb, PetscInt ldc, float beta, PetscBool bias, PetNetOneDNNEntry **entry)
{
  const int             threads = PetNetThreads();
  PetNetOneDNNEntry    *e;
  dnnl_primitive_desc_t pd   = NULL;
  const char           *impl = "none";

  PetscFunctionBegin;
  for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) {
    e = &PetNetOneDNN.entries[i];
    if (e->backend == backend && e->ta == ta && e->tb == tb && e->m == m && e->n == n && e->k == k && e->lda == lda && e->ldb == ldb && e->ldc == ldc && e->beta == beta && e->bias == bias && e->threads == threads) {
      *entry = e;
      PetscFunctionReturn(0);
    }
  }
  if (PetNetOneDNN.nentries == PETNET_ONEDNN_CACHE) {
    for (PetscInt i = 0; i < PetNetOneDNN.nentries; i++) PetscCall(PetNetOneDNNEntryDestroy(&PetNetOneDNN.entries[i]));
    PetNetOneDNN.nentries = 0;
  }
  if (PetNetOneDNN.nentries == PetNetOneDNN.maxentries) { /* a Net of L dense layers makes about 3 L keys */
    PetNetOneDNNEntry *grown;
    const PetscInt     max = PetscMin(PETNET_ONEDNN_CACHE, PetscMax(8, 2 * PetNetOneDNN.maxentries));

    PetscCall(PetscMalloc1(max, &grown));
    if (PetNetOneDNN.nentries) PetscCall(PetscArraycpy(grown, PetNetOneDNN.entries, PetNetOneDNN.nentries));
    PetscCall(PetscFree(PetNetOneDNN.entries));
    PetNetOneDNN.entries    = grown;
    PetNetOneDNN.maxentries = max;
  }
  e = &PetNetOneDNN.entries[PetNetOneDNN.nentries++];
  PetscCall(PetscMemzero(e, sizeof(*e)));
  e->backend = backend, e->ta = ta, e->tb = tb, e->m = m, e->n = n, e->k = k, e->lda = lda, e->ldb = ldb, e->ldc = ldc, e->beta = beta, e->bias = bias, e->threads = threads;
  PetscCall(PetNetOneDNNCreateDesc(backend, ta, tb, m, n, k, lda, ldb, ldc, beta, bias, &pd));
  if (pd) PetNetCallDNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&impl));
  /* unimplemented (bfloat16 on a CPU without AVX-512: oneDNN 2.6 on AVX2), or only oneDNN's reference loops, far
     slower than sgemm */
  e->native = (PetscBool)(!pd || !strncmp(impl, "ref", 3));
  PetscCall(PetscInfo(NULL, "oneDNN matmul %s %c%c m %" PetscInt_FMT " n %" PetscInt_FMT " k %" PetscInt_FMT " beta %g%s on %d threads: %s%s\n", backend == PETNET_GEMM_ONEDNN_BF16 ? "bf16" : "f32", ta, tb, m, n, k, (double)beta, bias ? " bias" : "",
                      threads, impl, e->native ? " (falls back to native)" : ""));
  if (!e->native) {
    const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);

    PetNetCallDNNL(dnnl_primitive_create(&e->prim, pd));
    PetNetCallDNNL(dnnl_memory_create(&e->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    PetNetCallDNNL(dnnl_memory_create(&e->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    if (bias) PetNetCallDNNL(dnnl_memory_create(&e->bia, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    e->padsize = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
    if (e->padsize) PetNetCallDNNL(dnnl_memory_create(&e->pad, pmd, PetNetOneDNN.engine, DNNL_MEMORY_NONE));
    if (e->padsize > PetNetOneDNN.padsize) {
      PetscCall(PetscFree(PetNetOneDNN.pad));
      PetscCall(PetscMalloc1(e->padsize + 64, &PetNetOneDNN.pad));
      PetNetOneDNN.padsize = e->padsize;
    }
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
          for (PetscInt i = 0; i < rows; i++) {
            union {
              uint32_t u;
              float    f;
            } c;

            c.f                     = X[i + (size_t)j * ld];
            dst[i + (size_t)j * ld] = (c.u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((c.u >> 16) | 0x40u) : (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);
          }
        });
  }
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
    const char           *name;
    int                   saved;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNCreateDesc(backend, 'N', 'N', m, n, k, m, k, m, 0, PETSC_FALSE, &pd));
    PetNetOneDNNThreadsPop(saved);
    if (pd) {
      PetNetCallDNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&name));
      PetscCall(PetscStrncpy(impl, name, len));
      PetNetCallDNNL(dnnl_primitive_desc_destroy(pd));
    }
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

/*
  C = op(A) op(B) + beta C (+ bias[i] on row i of C when bias), column-major as BLAS's sgemm with alpha 1 (the table
  at the top), through oneDNN: *done PETSC_FALSE when the key fell back to native (nothing is written; the caller runs
  its GEMM) or the backend is PETNET_GEMM_NATIVE. Called from the calling thread, outside any parallel region.
*/
PetscErrorCode PetNetOneDNNMatmul(PetNetGemmBackend backend, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, const float *A, PetscInt lda, const float *B, PetscInt ldb, float beta, float *C, PetscInt ldc, const float *bias, PetscBool *done)
{
  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (backend == PETNET_GEMM_NATIVE || !m || !n || !k) PetscFunctionReturn(0);
#if defined(PETNET_HAVE_ONEDNN)
  {
    PetNetOneDNNEntry *e = NULL;
    const void        *a = A, *b = B;
    int                saved;
    dnnl_exec_arg_t    args[5];
    int                nargs = 0;

    PetscCall(PetNetOneDNNInitialize());
    saved = PetNetOneDNNThreadsPush();
    PetscCall(PetNetOneDNNGetEntry(backend, ta, tb, m, n, k, lda, ldb, ldc, beta, (PetscBool) !!bias, &e));
    if (e->native) {
      PetNetOneDNNThreadsPop(saved);
      PetscFunctionReturn(0);
    }
    if (backend == PETNET_GEMM_ONEDNN_BF16) {
      PetscCall(PetNetOneDNNRoundBF16(ta == 'N' ? m : k, ta == 'N' ? k : m, A, lda, &PetNetOneDNN.a16, &PetNetOneDNN.na16));
      PetscCall(PetNetOneDNNRoundBF16(tb == 'N' ? k : n, tb == 'N' ? n : k, B, ldb, &PetNetOneDNN.b16, &PetNetOneDNN.nb16));
      a = PetNetOneDNN.a16, b = PetNetOneDNN.b16;
    }
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->src, (void *)b));
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->wei, (void *)a));
    PetNetCallDNNL(dnnl_memory_set_data_handle(e->dst, C));
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, e->src};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, e->wei};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, e->dst};
    if (bias) {
      PetNetCallDNNL(dnnl_memory_set_data_handle(e->bia, (void *)bias));
      args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bia};
    }
    if (e->pad) {
      PetNetCallDNNL(dnnl_memory_set_data_handle(e->pad, PetNetOneDNN.pad + (64 - (size_t)PetNetOneDNN.pad % 64) % 64));
      args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->pad};
    }
    PetNetCallDNNL(dnnl_primitive_execute(e->prim, PetNetOneDNN.stream, nargs, args));
    PetNetCallDNNL(dnnl_stream_wait(PetNetOneDNN.stream));
    PetNetOneDNNThreadsPop(saved);
    *done = PETSC_TRUE;
  }
#endif
  PetscFunctionReturn(0);
}
