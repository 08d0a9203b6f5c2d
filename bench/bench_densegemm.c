static const char help[] = "Times a dense layer's forward + backward at bfloat16 (or single) on the oneDNN backend against oneDNN's own matmuls on\n"
                           "the same three GEMMs (issue 31: the dense bfloat16 GEMM time within 1.3x of oneDNN's), one rank:\n"
                           "  -bench_in N          inputs (default 784)     -bench_out N   outputs (default 256)\n"
                           "  -bench_batch N       samples (default 128)    -bench_repeat R  timed repetitions, the best kept (default 50)\n"
                           "  -net_precision bfloat16|single (default bfloat16)\n"
                           "PetNet's time is its dense layer's (the log events dense:Forward + dense:Backward of one step: the three GEMMs\n"
                           "and the layer's own passes, the parameters rounded once, dW added into the double gradient); oneDNN's is\n"
                           "its matmul primitives alone on operands already in its type, with PetNet's layouts (column-major C = op(A)\n"
                           "op(B) as dst^T = op(B)^T op(A)^T, src/sys/onednn.c):\n"
                           "  forward  y  = W x       m = out, n = batch, k = in     ('T','N')\n"
                           "  dx       dx = W^T dy    m = in,  n = batch, k = out    ('N','N')\n"
                           "  dW       dW = x dy^T    m = in,  n = out,   k = batch  ('N','T')\n"
                           "Ends with one line: summary: in=... out=... batch=... petnet_ms=... onednn_ms=... ratio=... threads=... blas_core=...\n";

#include <petnet.h>
#if defined(PETNET_HAVE_ONEDNN)
#include <dnnl.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(PETNET_HAVE_ONEDNN)
#define BenchCallDNNL(call)                                                                                            \
  do {                                                                                                                 \
    dnnl_status_t st_ = (call);                                                                                        \
    PetscCheck(st_ == dnnl_success, PETSC_COMM_SELF, PETSC_ERR_LIB, "oneDNN: %s failed (status %d)", #call, (int)st_); \
  } while (0)

/* one GEMM C = op(A) op(B) (column-major, ld = rows) as oneDNN's matmul, its operands in type t, dst f32 */
typedef struct {
  dnnl_primitive_t prim;
  dnnl_memory_t    src, wei, dst, pad;
} BenchMatmul;

static PetscErrorCode BenchMatmulCreate(dnnl_engine_t engine, dnnl_data_type_t t, char ta, char tb, PetscInt m, PetscInt n, PetscInt k, BenchMatmul *mm)
{
  const PetscInt            lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n, ldc = m;
  dnnl_dims_t               sd = {n, k}, wd = {k, m}, dd = {n, m};
  dnnl_dims_t               ss = {tb == 'N' ? ldb : 1, tb == 'N' ? 1 : ldb}, ws = {ta == 'N' ? lda : 1, ta == 'N' ? 1 : lda}, ds = {ldc, 1};
  dnnl_memory_desc_t        smd, wmd, dmd;
  dnnl_matmul_desc_t        desc;
  dnnl_primitive_desc_t     pd;
  dnnl_primitive_attr_t     attr;
  const dnnl_memory_desc_t *pmd;

  PetscFunctionBegin;
  BenchCallDNNL(dnnl_memory_desc_init_by_strides(&smd, 2, sd, t, ss));
  BenchCallDNNL(dnnl_memory_desc_init_by_strides(&wmd, 2, wd, t, ws));
  BenchCallDNNL(dnnl_memory_desc_init_by_strides(&dmd, 2, dd, dnnl_f32, ds));
  BenchCallDNNL(dnnl_matmul_desc_init(&desc, &smd, &wmd, NULL, &dmd));
  BenchCallDNNL(dnnl_primitive_attr_create(&attr));
  BenchCallDNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  BenchCallDNNL(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL));
  BenchCallDNNL(dnnl_primitive_attr_destroy(attr));
  BenchCallDNNL(dnnl_primitive_create(&mm->prim, pd));
  BenchCallDNNL(dnnl_memory_create(&mm->src, &smd, engine, DNNL_MEMORY_ALLOCATE));
  BenchCallDNNL(dnnl_memory_create(&mm->wei, &wmd, engine, DNNL_MEMORY_ALLOCATE));
  BenchCallDNNL(dnnl_memory_create(&mm->dst, &dmd, engine, DNNL_MEMORY_ALLOCATE));
  pmd     = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  mm->pad = NULL;
  if (pmd && dnnl_memory_desc_get_size(pmd)) BenchCallDNNL(dnnl_memory_create(&mm->pad, pmd, engine, DNNL_MEMORY_ALLOCATE));
  BenchCallDNNL(dnnl_primitive_desc_destroy(pd));
  PetscFunctionReturn(0);
}

static PetscErrorCode BenchMatmulRun(dnnl_stream_t stream, BenchMatmul *mm)
{
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mm->src}, {DNNL_ARG_WEIGHTS, mm->wei}, {DNNL_ARG_DST, mm->dst}, {DNNL_ARG_SCRATCHPAD, mm->pad}};

  PetscFunctionBegin;
  BenchCallDNNL(dnnl_primitive_execute(mm->prim, stream, mm->pad ? 4 : 3, args));
  BenchCallDNNL(dnnl_stream_wait(stream));
  PetscFunctionReturn(0);
}

static PetscErrorCode BenchMatmulDestroy(BenchMatmul *mm)
{
  PetscFunctionBegin;
  BenchCallDNNL(dnnl_primitive_destroy(mm->prim));
  BenchCallDNNL(dnnl_memory_destroy(mm->src));
  BenchCallDNNL(dnnl_memory_destroy(mm->wei));
  BenchCallDNNL(dnnl_memory_destroy(mm->dst));
  if (mm->pad) BenchCallDNNL(dnnl_memory_destroy(mm->pad));
  PetscFunctionReturn(0);
}
#endif

/* the seconds of the log events dense:Forward and dense:Backward so far */
static PetscErrorCode DenseSeconds(PetscLogEvent fwd, PetscLogEvent bwd, PetscLogDouble *t)
{
  PetscEventPerfInfo f, b;

  PetscFunctionBegin;
  PetscCall(PetscLogEventGetPerfInfo(0, fwd, &f));
  PetscCall(PetscLogEventGetPerfInfo(0, bwd, &b));
  *t = f.time + b.time;
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net            net;
  Vec            X, Y, dY, dX, G;
  PetscInt       in = 784, out = 256, n = 128, repeat = 50;
  PetscMPIInt    size;
  NetPrecision   precision;
  PetscLogDouble best = PETSC_MAX_REAL, bestdnn = PETSC_MAX_REAL, t0, t1;
  PetscLogEvent  fwd, bwd;
  PetscRandom    rnd;
  char           layers[64];
  const char    *blascore;
  PetNetShape    shape;
  PetscInt       threads;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_SUP, "bin/bench_densegemm times one rank: run it without mpiexec -n %d", (int)size);
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Dense GEMM benchmark", NULL);
  PetscCall(PetNetOptionsInt("-bench_in", "Inputs", NULL, in, &in, NULL));
  PetscCall(PetNetOptionsInt("-bench_out", "Outputs", NULL, out, &out, NULL));
  PetscCall(PetNetOptionsInt("-bench_batch", "Samples", NULL, n, &n, NULL));
  PetscCall(PetNetOptionsInt("-bench_repeat", "Timed repetitions", NULL, repeat, &repeat, NULL));
  PetscOptionsEnd();
  PetscCheck(in > 0 && out > 0 && n > 0 && repeat > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-bench_in, -bench_out, -bench_batch and -bench_repeat must be positive");
  PetscCall(PetscLogDefaultBegin());
  PetscCall(PetscSNPrintf(layers, sizeof(layers), "dense:%" PetscInt_FMT, out));
  PetscCall(PetscMemzero(&shape, sizeof(shape)));
  shape.ndim   = 1;
  shape.dim[0] = in;
  PetscCall(PetNetGetNumThreads(&threads));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetInputShape(net, &shape));
  PetscCall(NetSetPrecision(net, NET_PRECISION_BFLOAT16)); /* the default here; -net_precision overrides it */
  PetscCall(NetSetBackend(net, NET_BACKEND_ONEDNN));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCheck(precision != NET_PRECISION_DOUBLE, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "oneDNN runs the float GEMMs: give -net_precision single or bfloat16, not double");
  PetscCall(NetCreateVecs(net, n, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(VecSetRandom(X, rnd));
  PetscCall(VecSetRandom(dY, rnd));
  PetscCall(PetscLogEventGetId("dense:Forward", &fwd));
  PetscCall(PetscLogEventGetId("dense:Backward", &bwd));
  for (PetscInt r = 0; r < repeat + 1; r++) { /* the first is a warm-up (primitives, workspace) */
    PetscCall(DenseSeconds(fwd, bwd, &t0));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecZeroEntries(G));
    PetscCall(NetBackward(net, dY, dX, G));
    PetscCall(DenseSeconds(fwd, bwd, &t1));
    if (r) best = PetscMin(best, t1 - t0);
  }
#if defined(PETNET_HAVE_ONEDNN)
  {
    const dnnl_data_type_t t     = precision == NET_PRECISION_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
    const char             ta[3] = {'T', 'N', 'N'}, tb[3] = {'N', 'N', 'T'};
    const PetscInt         mm[3][3] = {{out, n, in}, {in, n, out}, {in, out, n}};
    dnnl_engine_t          engine;
    dnnl_stream_t          stream;
    BenchMatmul            gemm[3];
#if defined(_OPENMP)
    const int saved = omp_get_max_threads();

    omp_set_num_threads((int)threads); /* PetNet's threads, as its oneDNN module runs */
#endif
    BenchCallDNNL(dnnl_engine_create(&engine, dnnl_cpu, 0));
    BenchCallDNNL(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    for (PetscInt g = 0; g < 3; g++) PetscCall(BenchMatmulCreate(engine, t, ta[g], tb[g], mm[g][0], mm[g][1], mm[g][2], &gemm[g]));
    for (PetscInt r = 0; r < repeat + 1; r++) {
      PetscCall(PetscTime(&t0));
      for (PetscInt g = 0; g < 3; g++) PetscCall(BenchMatmulRun(stream, &gemm[g]));
      PetscCall(PetscTime(&t1));
      if (r) bestdnn = PetscMin(bestdnn, t1 - t0);
    }
    for (PetscInt g = 0; g < 3; g++) PetscCall(BenchMatmulDestroy(&gemm[g]));
    BenchCallDNNL(dnnl_stream_destroy(stream));
    BenchCallDNNL(dnnl_engine_destroy(engine));
#if defined(_OPENMP)
    omp_set_num_threads(saved);
#endif
  }
#else
  SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_SUP, "bin/bench_densegemm compares with oneDNN: this PetNet was built without it");
#endif
  PetscCall(PetNetGetBLASInfo(NULL, &blascore));
  {
    const double flops = 3 * 2.0 * in * out * n;

    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "dense %" PetscInt_FMT " -> %" PetscInt_FMT ", %" PetscInt_FMT " samples, %s, %d thread(s), best of %" PetscInt_FMT ": PetNet's layer %.3f ms (%.1f GFLOP/s), oneDNN's three matmuls %.3f ms (%.1f GFLOP/s), ratio %.2f\n", in,
                          out, n, NetPrecisions[precision], (int)threads, repeat, 1e3 * best, 1e-9 * flops / best, 1e3 * bestdnn, 1e-9 * flops / bestdnn, best / bestdnn));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: in=%" PetscInt_FMT " out=%" PetscInt_FMT " batch=%" PetscInt_FMT " precision=%s petnet_ms=%.3f onednn_ms=%.3f ratio=%.3f threads=%d blas_core=%s\n", in, out, n, NetPrecisions[precision],
                          1e3 * best, 1e3 * bestdnn, best / bestdnn, (int)threads, blascore));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
