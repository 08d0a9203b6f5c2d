#!/bin/bash
# A restart with another -trainer_epochs extends the run that wrote the checkpoint (suite line trainer_restart_extend):
# the cosine schedule keeps that run's length, as checkpoint format 5 holds it, and the change is stated in one line.
# A 2-epoch cosine run (lr_min 0) has decayed to 0 when it ends, so its restart to 4 epochs must leave the weights as
# they were, to the bit; with -tao_lr_cosine_iterations (a new length, stated too) the weights move again. Before
# format 5 the restart stretched the schedule over 4 epochs from the restart on (another run, silently).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
out=tests/out/restart_extend
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
run="mpiexec -n 1 bin/fashion -options_file share/models/mlp.opts -train_dataset_limit 400 -test_dataset_limit 100 -trainer_monitor 0 -malloc_debug -malloc_dump"
$run -trainer_epochs 2 -trainer_checkpoint $out.2.ckpt > $out.1.log 2>&1 || { cat $out.1.log; fail "the 2-epoch run failed"; }
cp $out.2.ckpt $out.4.ckpt && cp $out.2.ckpt $out.c.ckpt
$run -trainer_epochs 4 -trainer_restart $out.4.ckpt -trainer_checkpoint $out.4.ckpt > $out.2.log 2>&1 || { cat $out.2.log; fail "the restart to 4 epochs failed"; }
n=$(grep -c "this run trains to epoch 4, the run that wrote it to epoch 2; the cosine schedule keeps that run's length" $out.2.log)
[[ $n == 1 ]] || { cat $out.2.log; fail "the change of -trainer_epochs was stated $n times, not once"; }
$run -trainer_epochs 4 -tao_lr_cosine_iterations 40 -trainer_restart $out.c.ckpt -trainer_checkpoint $out.c.ckpt > $out.3.log 2>&1 || { cat $out.3.log; fail "the restart with -tao_lr_cosine_iterations failed"; }
grep -q "the cosine schedule now ends at update 40 (-tao_lr_cosine_iterations), not at update 8" $out.3.log || { cat $out.3.log; fail "the new cosine length was not stated"; }
python3 - $out <<'PY' || exit 1
import sys
sys.path.insert(0, 'tests')
from ckpt_params import params
out = sys.argv[1]
e2, b2, _ = params(out + '.2.ckpt')
e4, b4, _ = params(out + '.4.ckpt')
ec, bc, _ = params(out + '.c.ckpt')
assert (e2, e4, ec) == (2, 4, 4), f"epochs {e2}, {e4}, {ec}"
if b4 != b2:
    sys.exit("FAIL: the schedule had ended (lr 0) but the extended run moved the weights: its horizon was not the checkpoint's")
if bc == b2:
    sys.exit("FAIL: with -tao_lr_cosine_iterations 40 the weights did not move")
print("extended to 4 epochs: the weights of epoch 2, the same bits (the schedule had ended); with a new cosine length they move")
PY
