#!/bin/bash
# A small transformer trained on the oneDNN backend against native (issue 31; suite line onednn_charlm_single_train):
# bin/charlm's GPT with rotary positions (embedding, a causal rotary attention block with its MLP, layer norms, the
# head: every dense layer and attention's projections on oneDNN's matmul, its layer norms on oneDNN's), context 32,
# width 32, 4 heads, one block, 20 Adam steps of 16 windows, single precision on 2 threads:
#   1. -net_backend onednn against native: train_loss and val_bpc within a relative 1e-5 (measured 2026-11-30: 2.9e-9
#      for train_loss and 3.6e-9 for val_bpc; float round-off in another summation order, which 20 steps of Adam do
#      not amplify anywhere near this bound), and the train_loss under the untrained floor (ln V = 4.74 nats);
#   2. oneDNN run twice: the same train_loss and val_bpc to the last printed digit (the same primitives, the same
#      threads: the same bits).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/onednn_train
mkdir -p tests/out && rm -f $out.*
fail=0
run() { # file backend
  mpiexec -n 1 bin/charlm -charlm_model gpt_rope -charlm_context 32 -charlm_embed 32 -charlm_heads 4 -charlm_depth 1 -charlm_iterations 20 -charlm_lr 1e-2 -charlm_val_windows 64 -net_precision single -net_backend "$2" -net_threads 2 \
    -malloc_debug -malloc_dump > "$1" 2>&1 || { tail -20 "$1"; echo "FAIL: bin/charlm with -net_backend $2"; fail=1; }
}
value() { sed -n "s/^summary:.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
run $out.native native
run $out.onednn onednn
run $out.onednn2 onednn
for key in train_loss val_bpc; do
  a=$(value $out.native $key) b=$(value $out.onednn $key) c=$(value $out.onednn2 $key)
  if [[ -z "$a" || -z "$b" || -z "$c" ]]; then
    echo "FAIL: no $key in a summary (native '$a', onednn '$b', '$c')"
    fail=1
    continue
  fi
  if awk -v a="$a" -v b="$b" 'BEGIN { d = (a - b) / a; if (d < 0) d = -d; exit !(d <= 1e-5 && b == b + 0) }'; then
    echo "ok: $key onednn $b against native $a: within a relative 1e-5"
  else
    echo "FAIL: $key onednn $b against native $a: beyond a relative 1e-5"
    fail=1
  fi
  if [[ "$b" == "$c" ]]; then echo "ok: $key onednn run twice: the same ($b)"; else
    echo "FAIL: $key onednn run twice: $b and $c"
    fail=1
  fi
done
t=$(value $out.onednn train_loss)
if [[ -n "$t" ]] && awk -v t="$t" 'BEGIN { exit !(t < 4.74) }'; then echo "ok: onednn train_loss $t under ln V = 4.74"; else
  echo "FAIL: onednn train_loss '$t' not under ln V = 4.74"
  fail=1
fi
[[ "$(value $out.onednn precision)" == single ]] || { echo "FAIL: the onednn run's summary does not say precision=single"; fail=1; }
exit $fail
