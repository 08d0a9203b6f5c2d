/*
  The backend of a Net's float GEMMs (NetSetBackend(), -net_backend native|onednn): a tag on each of its layers
  (layer->gemm, include/petnet/private/layerimpl.h) that the layers' float kernels hand to LayerGemmSingle() in its
  epilogue; LayerGemmSingle() sends a threaded GEMM so tagged to oneDNN (src/sys/onednn.c).

    precision    backend onednn              backend native
    double       BLAS (dgemm), own loops     the same
    single       oneDNN matmul, f32          sgemm
    bfloat16     oneDNN matmul, bf16 x bf16  sgemm on the widened values
                 -> f32 (weights rounded
                 to bfloat16)

  A shape and type oneDNN does not implement, or implements only with its reference loops on this CPU (bfloat16
  without AVX-512), falls back to sgemm for good (decided once per primitive, -info says which). Today dense's
  forward (y = x W^T + b, the bias fused), backward (dx = dy W, dW += x^T dy) and jvp carry the tag, attention's
  projections (Q, K, V and the output projection: forward, backward, jvp; the heads' tile products stay native) too,
  einsum's contractions (forward, both cotangents, jvp: each one batched matmul over its (sample, batch letter) groups,
  LayerGemmBatchedSingle()), and conv2d's
  float forward, backward and jvp run oneDNN's convolution primitives when it is set (src/layers/impls/conv/
  convonednn.c; a shape without them runs the layer's own float kernels for all its ops), avgpool's and maxpool's
  (2-D and 3-D, maxpool also dilated) its poolings (src/layers/impls/avgpool/avgpool.c, src/layers/impls/maxpool/maxpool.c), layernorm's its
  layer normalization (src/layers/impls/layernorm/layernorm.c).
*/
#include <petnet/private/netimpl.h>

const char *const NetBackends[] = {"native", "onednn", "NetBackend", "NET_BACKEND_", NULL};

/* each layer's tag from the Net's backend and precision (the table above); at NetSetUp() and when either changes */
PetscErrorCode NetSetUpBackend_Private(Net net)
{
  PetNetGemmBackend gemm = PETNET_GEMM_NATIVE;

  PetscFunctionBegin;
  if (net->backend == NET_BACKEND_ONEDNN && net->precision == NET_PRECISION_SINGLE) gemm = PETNET_GEMM_ONEDNN_F32;
  if (net->backend == NET_BACKEND_ONEDNN && net->precision == NET_PRECISION_BFLOAT16) gemm = PETNET_GEMM_ONEDNN_BF16;
  for (PetscInt l = 0; l < net->nlayers; l++) net->layers[l]->gemm = gemm;
  /* which nodes run their kinds' bfloat16 kernels on the stored values (NetNodeStreamsBF16()): a kind that has them,
     and for one whose kernels are oneDNN's, oneDNN's bfloat16 convolutions and matmuls on this CPU (asked once, only then) */
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const Layer l = net->layers[k];

    net->nodes[k].bf16 = (PetscBool)(net->precision == NET_PRECISION_BFLOAT16 && LayerHasBF16(l));
    if (net->nodes[k].bf16 && l->bf16onednn) {
      PetscBool has = PETSC_FALSE;

      if (gemm == PETNET_GEMM_ONEDNN_BF16) PetscCall(PetNetOneDNNHasBF16(&has));
      net->nodes[k].bf16 = has;
    }
  }
  PetscFunctionReturn(0);
}

/* a kernel name of PetNetOneDNNProbe() that means PetNet's own kernels run: none, or oneDNN's reference loops */
static PetscBool PetNetOneDNNImplNative(const char *impl)
{
  return (PetscBool)(!strcmp(impl, "none") || !strncmp(impl, "ref", 3));
}

/* NetView()'s lines at single and bfloat16 */
PetscErrorCode NetBackendView_Private(Net net, PetscViewer viewer)
{
  char version[32], impl[3][64];

  PetscFunctionBegin;
  PetscCall(PetNetOneDNNVersion(version, sizeof(version)));
  if (net->backend == NET_BACKEND_ONEDNN) {
    PetscCall(NetGetBackendKernels(net, sizeof(impl[0]), impl[0], impl[1], impl[2]));
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "backend onednn (oneDNN %s): dense layers', attention's projections' and einsum's float GEMMs through oneDNN's matmul in %s, conv2d and conv3d through its convolutions, average pooling (max "
                                     "pooling with -maxpool_onednn), 2-D and 3-D, through its poolings in f32; a shape without a fast oneDNN kernel runs PetNet's own (-info names each)\n",
                                     version, net->precision == NET_PRECISION_BFLOAT16 ? "bf16" : "f32"));
    /* what depends on the CPU on a line of its own, which tests/numdiff skips as it skips the BLAS's */
    PetscCall(PetscViewerASCIIPrintf(viewer, "oneDNN on this CPU (NetGetBackendKernels(); native: PetNet's own): matmul %s, convolution %s, pooling %s\n", impl[0], impl[1], impl[2]));
  } else
    PetscCall(PetscViewerASCIIPrintf(viewer, "backend native: the layers' float GEMMs on BLAS (sgemm)\n"));
  PetscFunctionReturn(0);
}

/*@
  NetSetBackend - sets who runs the GEMMs of a Net's float kernels (at single and bfloat16 precision)

  Logically collective

  Input Parameters:
+ net     - the Net
- backend - `NET_BACKEND_ONEDNN` (the default when PetNet is built with oneDNN) or `NET_BACKEND_NATIVE`

  Options Database Keys:
+ -net_backend <native,onednn> - the same from the options (NetSetFromOptions())
. -maxpool_onednn <bool> - maxpool layers' float passes on oneDNN too (default false)
- -petnet_onednn_reference <bool> - poolings run oneDNN's reference loops where it has no faster kernel, instead of PetNet's (tests; default false)

  Notes:
  With `NET_BACKEND_ONEDNN` the dense layers' forward (Y = X W^T + b, the bias fused), backward (dX = dY W,
  dW += dY^T X) and JVP run as oneDNN matmul primitives, cached by shape, type, transposes and threads and made once:
  in single on float operands, in bfloat16 on bfloat16 operands (the values stored in bfloat16 exactly, the weights
  rounded to bfloat16 from the double master weights) with float accumulation and a float output, which the value
  store rounds to bfloat16 as before. attention layers run their projections so (Q, K and V = X Win^T + bin and
  Y = O Wo^T + bo with the biases fused, the backward's dX, dWin, dWo and the JVP's products); the products of the
  heads' tiles (the flash-attention recurrence: small, on the threads' own parts) stay on sgemm. oneDNN picks its
  kernels from the CPU (AMX, AVX-512 BF16, AVX-512, AVX2). Where it implements a shape only with its reference loops, or not at all (oneDNN 2.6 has no bfloat16 matmul on a CPU
  with AVX2 alone), that shape falls back to PetNet's own GEMM (sgemm on float values and weights), decided once per
  primitive and named by -info: the results of such a run are those of `NET_BACKEND_NATIVE`. oneDNN's results are
  the same bits for the same threads and ranks, not across thread counts (its blocking depends on the threads).

  conv2d and conv3d layers (in batch form) run their float forward (the bias fused), backward (input gradient, weight
  and bias gradients) and JVP as oneDNN convolution primitives on the channels-last data as PetNet holds them (nhwc,
  ndhwc), the weights reordered once per call into the layout oneDNN's kernel picks; a shape (batch size included) for which
  oneDNN has no kernel, or only its reference loops (bfloat16 on a CPU without AVX-512), runs the layer's own float
  kernels (Winograd, im2col + sgemm, direct) for all its operations, decided once and named by -info. The weight
  gradient of a batch is summed in float by oneDNN, then added to the double gradient. avgpool layers (2-D and
  3-D: nhwc, ndhwc) run their float passes as oneDNN average pooling primitives (padding counted, as PyTorch's
  count_include_pad); maxpool layers (2-D and 3-D, dilated or not) with -maxpool_onednn (off by default: oneDNN 2.6's AVX2 max pooling is slower than PetNet's
  kernels, with the same results) their float forward and backward as oneDNN max pooling primitives, the forward keeping
  oneDNN's workspace (the maximum's tap in each window) for the backward; the JVP gathers the tangent natively at
  those taps (oneDNN has no JVP). Ties go to the first maximum in window order, as in PetNet's own kernels. oneDNN 2.6
  has only its reference loops for a dilated pooling on AVX2 (about 50x PetNet's time): those layers run natively
  (-info says so); -petnet_onednn_reference runs the reference loops anyway, for tests of the mapping.
  layernorm layers run their float forward (training: the float mean and variance of each position kept) and
  backward (the float gamma and beta gradients of the batch added to the double gradient) as oneDNN layer
  normalization primitives; their JVP runs natively on the statistics oneDNN computed; rmsnorm stays native.
  einsum layers (one operand or two: a join of -net_graph) run each contraction that is a (batched) matrix product,
  forward, the cotangent of each operand and the JVP's two terms, as one oneDNN matmul with a batch dim over all its
  (sample, batch letter) groups (bhqd,bhkd->bhqk: n h products of T x d by d x T in one primitive), on the operands
  permuted to (batch, free, contracted) as before; the contractions that are loops (sums, broadcasts, elementwise
  products) stay PetNet's.
  Double precision, the second-order adjoint (double) and the GEMMs other kinds run on their own threads
  stay on BLAS and PetNet's loops.

  A PetNet built without oneDNN (no dnnl.h when it was compiled) refuses `NET_BACKEND_ONEDNN`.

  Level: intermediate

.seealso: `NetGetBackend()`, `NetSetPrecision()`, `PetNetSetNumThreads()`
@*/
PetscErrorCode NetSetBackend(Net net, NetBackend backend)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(net, backend, 2);
  PetscCheck(backend == NET_BACKEND_NATIVE || backend == NET_BACKEND_ONEDNN, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Unknown backend %d: use NET_BACKEND_NATIVE or NET_BACKEND_ONEDNN", (int)backend);
  PetscCheck(backend != NET_BACKEND_ONEDNN || PetNetOneDNNAvailable(), PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "-net_backend onednn: this PetNet was built without oneDNN (no dnnl.h when it was compiled): install libdnnl-dev (share/setup.sh) and rebuild PetNet, or use -net_backend native");
  net->backend = backend;
  if (net->setupcalled) PetscCall(NetSetUpBackend_Private(net));
  PetscFunctionReturn(0);
}

/*@
  NetGetBackend - who runs the GEMMs of a Net's float kernels

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. backend - `NET_BACKEND_NATIVE` or `NET_BACKEND_ONEDNN`

  Level: intermediate

.seealso: `NetSetBackend()`
@*/
PetscErrorCode NetGetBackend(Net net, NetBackend *backend)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(backend, 2);
  *backend = net->backend;
  PetscFunctionReturn(0);
}

/*@C
  NetGetBackendKernels - the kernels that run a Net's float matrix products, convolutions and poolings on this CPU

  Not collective

  Input Parameters:
+ net - the Net
- len - the size of each string given

  Output Parameters:
+ matmul - the kernel of a dense layer's GEMM (the MLP's first layer, 128 x 784 by 784 x 256), or NULL
. conv   - the kernel of a convolution (the CNN's second: 128 x 14x14x32 -> 12x12x64, 3x3), or NULL
- pool   - the kernel of a pooling (a max pooling of 128 x 28x28x32 -> 14x14x32, 2x2, in f32 in every precision), or NULL

  Notes:
  Each is oneDNN's implementation name (`brg:avx512_core_bf16`, `gemm:jit`, `jit:avx2`, ...) when the Net's backend
  is `NET_BACKEND_ONEDNN`, its precision single or bfloat16 and oneDNN has a fast kernel for that operation, type and
  CPU; otherwise `native`: PetNet's own kernels run it (BLAS's sgemm or dgemm, PetNet's loops). So in bfloat16 on a CPU
  without AVX-512 (oneDNN 2.6 has no bfloat16 matmul there) `matmul` is `native`, and the Net's results are those of
  `-net_backend native`; on a CPU with AVX-512 BF16 or AMX they are oneDNN's products of bfloat16 operands. `-net_view`
  prints the same names.

  Level: advanced

.seealso: `NetSetBackend()`, `NetGetBackend()`, `NetSetPrecision()`
@*/
PetscErrorCode NetGetBackendKernels(Net net, size_t len, char matmul[], char conv[], char pool[])
{
  char *out[3] = {matmul, conv, pool};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  for (PetscInt i = 0; i < 3; i++) {
    if (!out[i]) continue;
    if (net->backend == NET_BACKEND_ONEDNN && net->precision != NET_PRECISION_DOUBLE) {
      const PetNetGemmBackend gemm = net->precision == NET_PRECISION_BFLOAT16 ? PETNET_GEMM_ONEDNN_BF16 : PETNET_GEMM_ONEDNN_F32;

      if (i == 0)
        PetscCall(PetNetOneDNNProbe(gemm, 256, 128, 784, out[i], len));
      else if (i == 1)
        PetscCall(PetNetOneDNNConvProbe(gemm, out[i], len));
      else
        PetscCall(PetNetOneDNNPoolProbe(gemm, out[i], len));
      if (PetNetOneDNNImplNative(out[i])) PetscCall(PetscStrncpy(out[i], "native", len));
    } else
      PetscCall(PetscStrncpy(out[i], "native", len));
  }
  PetscFunctionReturn(0);
}
