#!/usr/bin/env bash
# A relu fused into dense's output pass (netfuse.c) runs on oneDNN as an eltwise post-op of the matmul (onednn.c), not
# as a pass of its own over the output (tests/onednn.suite: onednn_relu_postop_1, _2). Usage: tests/onednn_relu_postop.sh NRANKS
# share/models/mlp.opts in single on oneDNN, one epoch on 2,000 images, trained twice: fused (-net_fuse true, the
# post-op) and with every pass on its own (-net_fuse false, relu's own kernel after the matmul). Passes when
#   - the fused run's -info names matmul keys with relu (the post-op ran) and the separate run's none;
#   - the two runs save the same model file, byte for byte (-net_save): relu is exact, so the post-op on the matmul's
#     output gives relu's own bits, through every forward of the epoch.
cd "$(dirname "$0")/.." || exit 2
n=${1:-1}
out=tests/out/onednn_relu_postop_$n.run
mkdir -p tests/out
run() { # FUSE
  mpiexec -n "$n" bin/fashion -options_file share/models/mlp.opts -train_dataset_limit 2000 -test_dataset_limit 500 -trainer_epochs 1 -trainer_monitor 0 \
    -net_precision single -net_backend onednn -net_fuse "$1" -net_save "$out.$1.bin" -info :sys -trainer_progress_interval 0 -malloc_debug -malloc_dump > "$out.$1" 2>&1 ||
    { echo "bin/fashion -net_fuse $1 failed:"; tail -20 "$out.$1"; exit 1; }
  if grep -q -E "^\[ *[0-9]+\] [0-9]+ bytes|PETSC ERROR" "$out.$1"; then echo "leak or PETSc error in $out.$1:"; tail -20 "$out.$1"; exit 1; fi
}
rm -f "$out".*
run true
run false
fused=$(grep -c 'oneDNN matmul f32 .* relu on' "$out.true")
separate=$(grep -c 'oneDNN matmul f32 .* relu on' "$out.false")
echo "matmul keys with a relu post-op: $fused fused, $separate separate"
[[ $fused -gt 0 ]] || { echo "FAILED: no matmul of the fused run has the relu post-op"; exit 1; }
[[ $separate -eq 0 ]] || { echo "FAILED: a matmul of the separate run has a relu post-op"; exit 1; }
cmp "$out.true.bin" "$out.false.bin" || { echo "FAILED: the fused run's model differs from the separate run's"; exit 1; }
echo "the same model file, byte for byte: $(grep -o 'test_accuracy=[0-9.]*' "$out.true" | tail -1)"
