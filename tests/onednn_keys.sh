#!/bin/bash
# Which of attention's GEMMs run on oneDNN (issue 31; suite line onednn_attention_keys). oneDNN's matmul cache names
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
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/onednn_keys
mkdir -p tests/out && rm -f $out.*
fail=0
run() { # file backend: the -info lines of oneDNN's matmul keys, "f32 TN m .. n .. k .. beta ..[ bias]: impl", sorted
  mpiexec -n 1 bin/tests/test_precision -net_layers attention:4 -net_input_shape 6x16 -nsamples 5 -net_precision single -net_backend "$2" -case backend -net_threads 1 -info -malloc_debug -malloc_dump > "$1.log" 2>&1 ||
    { tail -20 "$1.log"; echo "FAIL: the run with -net_backend $2"; fail=1; }
  sed -n 's/.*oneDNN matmul \(.*\) on 1 threads: \(.*\)$/\1: \2/p' "$1.log" | sed 's/ beta \([0-9]*\)\.\{0,1\}/ beta \1/' | sort -u > "$1"
}
run $out.onednn onednn
run $out.native native
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
got=$(sed 's/: .*//' $out.onednn | sort -u)
if [[ "$got" == "$expected" ]]; then
  echo "ok: attention's 11 GEMM keys on oneDNN: $(sed 's/.*: //' $out.onednn | sort -u | tr '\n' ' ')"
else
  echo "FAIL: attention's GEMM keys on oneDNN differ from the 11 expected (< expected, > made):"
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
