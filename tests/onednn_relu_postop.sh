#!/usr/bin/env bash
# A relu fused into its producer's output pass (netfuse.c) runs on oneDNN as an eltwise post-op of the primitive
# (onednn.c): of the matmul after dense, of the convolution after conv2d (tests/onednn.suite: onednn_relu_postop_*).
# Usage: tests/onednn_relu_postop.sh NRANKS [mlp|cnn]
#   mlp  share/models/mlp.opts, one epoch on 2,000 images
#   cnn  conv2d:16:3:1:1,relu,maxpool:2,conv2d:8:3,relu,flatten,dense:10 (cnn.opts' optimizer), one epoch on 512 images
# in single on oneDNN, trained twice: fused (-net_fuse true, the post-op) and with every pass on its own (-net_fuse
# false, relu's own kernel after the primitive). Passes when
#   - the fused run's -info names matmul (convolution forward) keys with relu, and the separate run's none;
#   - the two runs save the same model file, byte for byte (-net_save): relu is exact, so the post-op on the
#     primitive's output gives relu's own bits, through every forward of the epoch.
cd "$(dirname "$0")/.." || exit 2
n=${1:-1}
model=${2:-mlp}
out=tests/out/onednn_relu_postop_${model}_$n.run
case $model in
  mlp) net=(-options_file share/models/mlp.opts -train_dataset_limit 2000 -test_dataset_limit 500) key='oneDNN matmul f32 .* relu on' ;;
  cnn) net=(-options_file share/models/cnn.opts -net_layers conv2d:16:3:1:1,relu,maxpool:2,conv2d:8:3,relu,flatten,dense:10 -train_dataset_limit 512 -test_dataset_limit 256)
       key='oneDNN convolution forward f32 .* relu on' ;;
  *) echo "unknown model '$model': write mlp or cnn"; exit 2 ;;
esac
mkdir -p tests/out
run() { # FUSE
  mpiexec -n "$n" bin/fashion "${net[@]}" -trainer_epochs 1 -trainer_monitor 0 \
    -net_precision single -net_backend onednn -net_fuse "$1" -net_save "$out.$1.bin" -info :sys -trainer_progress_interval 0 -malloc_debug -malloc_dump > "$out.$1" 2>&1 ||
    { echo "bin/fashion -net_fuse $1 failed:"; tail -20 "$out.$1"; exit 1; }
  if grep -q -E "^\[ *[0-9]+\] [0-9]+ bytes|PETSC ERROR" "$out.$1"; then echo "leak or PETSc error in $out.$1:"; tail -20 "$out.$1"; exit 1; fi
}
rm -f "$out".*
run true
run false
fused=$(grep -c "$key" "$out.true")
separate=$(grep -c "$key" "$out.false")
echo "primitives with a relu post-op: $fused fused, $separate separate"
[[ $fused -gt 0 ]] || { echo "FAILED: no primitive of the fused run has the relu post-op"; exit 1; }
[[ $separate -eq 0 ]] || { echo "FAILED: a primitive of the separate run has a relu post-op"; exit 1; }
cmp "$out.true.bin" "$out.false.bin" || { echo "FAILED: the fused run's model differs from the separate run's"; exit 1; }
echo "the same model file, byte for byte: $(grep -o 'test_accuracy=[0-9.]*' "$out.true" | tail -1)"
