#!/bin/bash
# 3-D pooling and dilated max pooling on oneDNN (issue 31; suite lines onednn_pool3d_info and onednn_pool3d_train).
# tests/onednn_pool3d.sh info:
#   1. -net_backend onednn in single (-maxpool_onednn): a 3-D maxpool:2 and a 3-D avgpool:3:2:1 each create their
#      forward and backward primitives once, named by -info with their D x H x W x C geometry and oneDNN's kernel, a jit
#      one, and none falls back to native;
#   2. a dilated max pooling (maxpool:3:1:1:2 on a volume, 5x6x6 -> 3x4x4): oneDNN 2.6 has only its reference loops
#      for it on AVX2, so its forward falls back to native, said by -info (the layer then asks for no backward); with
#      -petnet_onednn_reference forward and backward run those loops (the check accepts any kernel's name there);
#   3. -net_backend native: no oneDNN pooling at all.
# tests/onednn_pool3d.sh train: a 3-D CNN (conv3d, relu, maxpool:2, conv3d, relu, avgpool:3:2:1, dense) on Fashion-MNIST
#   read as volumes of 4 bands of 7 rows, 16 SGD steps (lr 0.5) of 32 samples in single with both pools on oneDNN:
#   train_loss and test_loss within a relative 1e-5 of -net_backend native's, at 1 and 2 ranks (the same global
#   batches; measured 2026-11-30: the same 7 digits), the test_loss under 2.2 (it learned: ln 10 = 2.30 untrained;
#   2.05 measured), and backend=onednn in the summary.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/onednn_pool3d
mkdir -p tests/out && rm -f $out.*
fail=0
check() { # what count expected
  if [[ "$2" == "$3" ]]; then echo "ok: $1: $2"; else echo "FAIL: $1: $2, expected $3"; fail=1; fi
}
info() {
  run() { # file backend layers shape [options]
    local f=$1 b=$2 l=$3 s=$4
    shift 4
    bin/tests/test_precision -net_layers "$l" -net_input_shape "$s" -nsamples 5 -net_precision single -net_backend "$b" -case backend -maxpool_onednn -info "$@" > "$f" 2>&1 || {
      tail -20 "$f"
      echo "FAIL: the $b run of $l"
      fail=1
    }
  }
  local cnn=conv3d:4:3:1:1,relu,maxpool:2,conv3d:4:3:1:1,tanh,avgpool:3:2:1,flatten,dense:3 dil=maxpool:3:1:1:2,flatten,dense:3
  run $out.onednn onednn $cnn 6x8x8x2
  for op in forward backward; do
    check "oneDNN max pooling $op of the 3-D maxpool:2 on a jit kernel" "$(grep -c "oneDNN max pooling $op f32 n 5 in 6x8x8x4 out 3x4x4x4 k 2 stride 2 pad 0 dilation 1 groups 1 on [0-9]* threads: jit[^ ]*$" $out.onednn)" 1
    check "oneDNN average pooling $op of the 3-D avgpool:3:2:1 on a jit kernel" "$(grep -c "oneDNN average pooling $op f32 n 5 in 3x4x4x4 out 2x2x2x4 k 3 stride 2 pad 1 dilation 1 groups 1 on [0-9]* threads: jit[^ ]*$" $out.onednn)" 1
  done
  check "3-D poolings fallen back to native" "$(grep 'oneDNN [a-z]* pooling' $out.onednn | grep -c 'falls back')" 0
  run $out.dilated onednn $dil 5x6x6x2
  check "dilated max pooling forward without -petnet_onednn_reference" "$(grep -c "oneDNN max pooling forward f32 n 5 in 5x6x6x2 out 3x4x4x2 k 3 stride 1 pad 1 dilation 2 groups 1 on [0-9]* threads: ref:any (falls back to native)$" $out.dilated)" 1
  check "oneDNN poolings of the dilated layer not fallen back" "$(grep 'oneDNN [a-z]* pooling' $out.dilated | grep -vc 'falls back')" 0
  run $out.reference onednn $dil 5x6x6x2 -petnet_onednn_reference
  for op in forward backward; do
    check "dilated max pooling $op with -petnet_onednn_reference on oneDNN" "$(grep -c "oneDNN max pooling $op f32 n 5 in 5x6x6x2 out 3x4x4x2 k 3 stride 1 pad 1 dilation 2 groups 1 on [0-9]* threads: [a-z][^ ]*$" $out.reference)" 1
  done
  run $out.native native $cnn 6x8x8x2
  check "oneDNN poolings with -net_backend native" "$(grep -c 'oneDNN [a-z]* pooling' $out.native)" 0
}
train() {
  run() { # file ranks backend
    mpiexec -n "$2" bin/fashion -net_layers conv3d:4:3:1:1,relu,maxpool:2,conv3d:8:3:1:1,relu,avgpool:3:2:1,flatten,dense:10 -train_dataset_sample_shape 4x7x28x1 -test_dataset_sample_shape 4x7x28x1 \
      -train_dataset_limit 512 -test_dataset_limit 128 -trainer_epochs 1 -trainer_batch_size 32 -trainer_monitor 0 -tao_type sgd -tao_sgd_lr 0.5 -net_precision single -net_backend "$3" -maxpool_onednn \
      -malloc_debug -malloc_dump > "$1" 2>&1 || { tail -20 "$1"; echo "FAIL: bin/fashion at $2 ranks with -net_backend $3"; fail=1; }
  }
  value() { sed -n "s/^summary:.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
  for n in 1 2; do
    run $out.native$n $n native
    run $out.onednn$n $n onednn
    check "backend in the summary at $n rank(s)" "$(grep -o 'backend=[a-z]*' $out.onednn$n)" backend=onednn
    for key in train_loss test_loss; do
      a=$(value $out.native$n $key) b=$(value $out.onednn$n $key)
      check "$key at $n rank(s): onednn $b against native $a within a relative 1e-5" "$(awk -v a="$a" -v b="$b" 'BEGIN { d = (a - b) / a; if (d < 0) d = -d; print (a != "" && b != "" && d <= 1e-5) ? "yes" : "no" }')" yes
    done
    t=$(value $out.onednn$n test_loss)
    check "test_loss $t at $n rank(s) under 2.2 (ln 10 = 2.30 untrained)" "$(awk -v t="$t" 'BEGIN { print (t != "" && t < 2.2) ? "yes" : "no" }')" yes
  done
}
case "$1" in
  info) info ;;
  train) train ;;
  *)
    echo "usage: tests/onednn_pool3d.sh info|train"
    exit 2
    ;;
esac
exit $fail
