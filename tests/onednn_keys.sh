#!/bin/bash
# tests/onednn_keys.sh attention: which of attention's GEMMs run on oneDNN (issue 31; suite line onednn_attention_keys). oneDNN's matmul cache names
# each key it makes with -info, once ("oneDNN matmul f32 TN m 32 n 30 k 16 beta 0 bias on 1 threads: gemm:jit"). A Net
# of one attention layer, attention:4 on (T, E) = (6, 16), 5 samples (n T = 30 rows), one forward, backward and jvp at
# single precision (bin/tests/test_precision -case backend) must make exactly these keys, each with oneDNN's kernel
# (not "ref", no fallback), and nothing else (the heads' tile products stay native, -info names no key of theirs):
#   forward   K,V = x Win_kv^T + bin_kv      TN  m 32 n 30 k 16  beta 0 bias
#             Q   = x Win_q^T + bin_q        TN  m 16 n 30 k 16  beta 0 bias
#             y   = O Wo^T + bo              (the same key as Q)
#   backward  dO  = dy Wo                    NN  m 16 n 30 k 16  beta 0
#             dWo += O^T dy, dWin_q += ...   NT  m 16 n 16 k 30  beta 0
#             dx  = dKV Win_kv               NN  m 16 n 30 k 32  beta 0
#             dx += dQ Win_q                 NN  m 16 n 30 k 16  beta 1
#             dWin_kv += x^T dKV             NT  m 16 n 32 k 30  beta 0
#   jvp       KV', Q' = dx Win^T             TN  m 32 / 16 n 30 k 16  beta 0 (no bias)
#             ... + x dWin^T + dbin          TN  m 32 / 16 n 30 k 16  beta 1 bias
#             dy = O' Wo^T (+ O dWo^T + dbo) TN  m 16 n 30 k 16  beta 0, then beta 1 bias (the same keys as the last)
# and with -net_backend native no key at all. A GEMM of the layer left on native (its epilogue without layer->gemm)
# drops its key from the list.
#
# tests/onednn_keys.sh einsum: which of einsum's GEMMs run on oneDNN (issues 31 and 32; suite line onednn_einsum_keys). A two-operand einsum runs
# each of its contractions (forward, the cotangent of each operand, the jvp's two terms) as one batched GEMM over its
# (sample, batch letter) groups (src/layers/impls/einsum/einsumkernels.h, LayerGemmBatchedSingle()); with
# -net_backend onednn at single precision that is one oneDNN matmul with a batch dim, which -info names once per key
# ("oneDNN matmul f32 TN batch 14 m 5 n 4 k 6 beta 0 on 1 threads: gemm:jit"). The graph of the tests
# (the onednn_einsum_* lines): 7 samples on 1 rank and 1 thread, one forward, backward and jvp
# (bin/tests/test_precision -case backend):
#   s = einsum:hqd,hkd->hqk <- q, k   (h 2, q 4, k 5, d 6; groups n h = 14)
#       forward  out'^T = k' q'^T        TN batch 14 m 5 n 4 k 6 beta 0 (the jvp's second term: beta 1)
#       dq = einsum(hqk, hkd -> hqd)     TN batch 14 m 6 n 4 k 5 beta 0
#       dk = einsum(hqk, hqd -> hkd)     TN batch 14 m 6 n 5 k 4 beta 0
#   v = einsum:hqk,hkd->hqd <- t, k   forward m 6 n 4 k 5 (dq's key; the jvp's second term beta 1), dt m 5 n 4 k 6
#                                     (s's forward key), dk TN batch 14 m 5 n 6 k 4 beta 0
#   e = einsum:hqd,ed->hqe <- v, w    (w has no h: broadcast over the heads; groups n = 7)
#       forward TN batch 7 m 3 n 8 k 6 beta 0 (jvp: beta 1), dv m 6 n 8 k 3, dw m 6 n 3 k 8
# exactly these 10 batched keys, each on a oneDNN kernel (not "ref", no fallback), and with -net_backend native no
# key at all. An einsum GEMM left on native (its epilogue without layer->gemm) drops its keys from the list.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
case "$1" in
attention)
  what="attention's 11 GEMM keys"
  net=(-net_layers attention:4 -net_input_shape 6x16 -nsamples 5)
  keys='s/.*oneDNN matmul \(.*\) on 1 threads: \(.*\)$/\1: \2/p'
  expected="f32 NN m 16 n 30 k 16 beta 0
f32 NN m 16 n 30 k 16 beta 1
f32 NN m 16 n 30 k 32 beta 0
f32 NT m 16 n 16 k 30 beta 0
f32 NT m 16 n 32 k 30 beta 0
f32 TN m 16 n 30 k 16 beta 0
f32 TN m 16 n 30 k 16 beta 0 bias
f32 TN m 16 n 30 k 16 beta 1 bias
f32 TN m 32 n 30 k 16 beta 0
f32 TN m 32 n 30 k 16 beta 0 bias
f32 TN m 32 n 30 k 16 beta 1 bias"
  ;;
einsum)
  what="einsum's 10 batched GEMM keys"
  net=(-net_graph 'a=dense:48<-input;q=reshape:2x4x6<-a;b=dense:60<-input;k=reshape:2x5x6<-b;s=einsum:hqd,hkd->hqk<-q,k;t=tanh<-s;v=einsum:hqk,hkd->hqd<-t,k;c=dense:18<-input;w=reshape:3x6<-c;e=einsum:hqd,ed->hqe<-v,w;r=reshape:-1<-e;o=dense:3<-r' -net_input_shape 6 -nsamples 7)
  keys='s/.*oneDNN matmul \(.* batch .*\) on 1 threads: \(.*\)$/\1: \2/p'
  expected="f32 TN batch 14 m 5 n 4 k 6 beta 0
f32 TN batch 14 m 5 n 4 k 6 beta 1
f32 TN batch 14 m 5 n 6 k 4 beta 0
f32 TN batch 14 m 6 n 4 k 5 beta 0
f32 TN batch 14 m 6 n 4 k 5 beta 1
f32 TN batch 14 m 6 n 5 k 4 beta 0
f32 TN batch 7 m 3 n 8 k 6 beta 0
f32 TN batch 7 m 3 n 8 k 6 beta 1
f32 TN batch 7 m 6 n 3 k 8 beta 0
f32 TN batch 7 m 6 n 8 k 3 beta 0"
  ;;
*)
  echo "usage: tests/onednn_keys.sh attention|einsum"
  exit 2
  ;;
esac
out=tests/out/onednn_keys_$1
mkdir -p tests/out && rm -f $out.*
fail=0
run() { # file backend: the -info lines of oneDNN's matmul keys, "f32 TN [batch ..] m .. n .. k .. beta ..[ bias]: impl", sorted
  mpiexec -n 1 bin/tests/test_precision "${net[@]}" -net_precision single -net_backend "$2" -case backend -net_threads 1 -info -malloc_debug -malloc_dump > "$1.log" 2>&1 ||
    { tail -20 "$1.log"; echo "FAIL: the run with -net_backend $2"; fail=1; }
  sed -n "$keys" "$1.log" | sed 's/ beta \([0-9]*\)\.\{0,1\}/ beta \1/' | sort -u > "$1"
}
run $out.onednn onednn
run $out.native native
got=$(sed 's/: .*//' $out.onednn | sort -u)
if [[ "$got" == "$expected" ]]; then
  echo "ok: $what on oneDNN: $(sed 's/.*: //' $out.onednn | sort -u | tr '\n' ' ')"
else
  echo "FAIL: $what on oneDNN differ from the expected ones (< expected, > made):"
  diff <(echo "$expected") <(echo "$got")
  fail=1
fi
if grep -q ': ref\|falls back' $out.onednn; then
  echo "FAIL: a key on oneDNN's reference loops or falling back to native:"
  grep ': ref\|falls back' $out.onednn
  fail=1
else
  echo "ok: every key on a oneDNN kernel (no reference loops, no fallback)"
fi
if [[ -s $out.native ]]; then
  echo "FAIL: -net_backend native made oneDNN keys:"
  cat $out.native
  fail=1
else
  echo "ok: -net_backend native: no oneDNN key"
fi
exit $fail
