#!/bin/bash
# batchnorm on oneDNN (issue 31; suite line onednn_batchnorm_info): with -net_backend onednn in single precision,
#   1. -info names the batch normalization primitives of each batchnorm layer, once each, channels last as the layer
#      holds them: nhwc after conv2d (n 5 in 6x6x8), after dense as 1 x 1 x 16 nhwc; in training mode oneDNN's forward
#      (which computes the batch statistics) and backward, in evaluation mode (-training false) the pair with the
#      running statistics given; none falls back to native; with -net_backend native no oneDNN batch normalization;
#   2. bin/fashion's CNN (share/models/cnn.opts, two batchnorm layers, plain SGD so that no optimiser magnifies the
#      round-off of a zero gradient) for 4 batches of 128: train_loss and test_loss on oneDNN within 2e-4 relative of
#      native's (oneDNN sums each channel's 100,352 values per batch in float, native in double).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/onednnbatchnorm
mkdir -p tests/out && rm -f $out.*
fail=0
check() { # what count expected
  if [[ "$2" == "$3" ]]; then echo "ok: $1: $2"; else echo "FAIL: $1: $2, expected $3"; fail=1; fi
}
run() { # file backend training
  bin/tests/test_precision -net_layers conv2d:8:3:1:1,batchnorm,relu,flatten,dense:16,batchnorm,tanh,dense:3 -net_input_shape 6x6x2 -nsamples 5 \
    -net_precision single -net_backend "$2" -training "$3" -case backend -net_threads 1 -info > "$1" 2>&1 || { tail -20 "$1"; echo "FAIL: the $2 run"; fail=1; }
}
run $out.train onednn true
run $out.eval onednn false
for geom in "n 5 in 6x6x8" "n 5 in 1x1x16"; do
  for op in "forward" "backward"; do
    check "training: oneDNN batch normalization $op, $geom" "$(grep -c "oneDNN batch normalization $op f32 $geom eps 1e-05 affine on 1 threads: [a-z]" $out.train)" 1
    check "evaluation: oneDNN batch normalization $op (given statistics), $geom" "$(grep -c "oneDNN batch normalization $op (given statistics) f32 $geom eps 1e-05 affine on 1 threads: [a-z]" $out.eval)" 1
  done
done
check "evaluation: primitives that compute the batch statistics" "$(grep 'oneDNN batch normalization' $out.eval | grep -vc 'given statistics')" 0
check "batch normalizations fallen back to native" "$(cat $out.train $out.eval | grep 'oneDNN batch normalization' | grep -c 'falls back')" 0
run $out.native native true
check "oneDNN batch normalizations with -net_backend native" "$(grep -c 'oneDNN batch normalization' $out.native)" 0

fashion() { # file backend
  bin/fashion -options_file share/models/cnn.opts -tao_type sgd -train_dataset_limit 512 -test_dataset_limit 256 -trainer_epochs 1 \
    -trainer_monitor 0 -net_precision single -net_backend "$2" > "$1" 2>&1 || { tail -20 "$1"; echo "FAIL: bin/fashion on $2"; fail=1; }
}
fashion $out.fashion.onednn onednn
fashion $out.fashion.native native
check "bin/fashion's backend" "$(grep -o 'backend=[a-z]*' $out.fashion.onednn)" "backend=onednn"
for q in train_loss test_loss; do
  a=$(grep -o "$q=[0-9.]*" $out.fashion.onednn | cut -d= -f2)
  b=$(grep -o "$q=[0-9.]*" $out.fashion.native | cut -d= -f2)
  check "bin/fashion's CNN $q on oneDNN ($a) against native ($b) within 2e-4" "$(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; print (b != "" && d <= 2e-4 * b) ? "yes" : "no" }')" yes
done
exit $fail
