#!/bin/bash
# A restart from the final checkpoint (suite line trainer_restart_final) reports the training loss the run that wrote it
# reported: the mean over the last epoch's batches (checkpoint format 3 records it). It printed an evaluation of the
# final weights on the training set instead, another number (2.034143 against 2.178419 here).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ckpt=tests/out/trainer_restart_final.ckpt
run="mpiexec -n 1 bin/fashion -net_layers dense:10 -train_dataset_limit 200 -test_dataset_limit 100 -trainer_epochs 2 -trainer_monitor 0"
fail() { echo "FAIL: $*"; exit 1; }
rm -f $ckpt
$run -trainer_checkpoint $ckpt > tests/out/trainer_restart_final_1.log 2>&1 || { cat tests/out/trainer_restart_final_1.log; fail "training failed"; }
$run -trainer_restart $ckpt > tests/out/trainer_restart_final_2.log 2>&1 || { cat tests/out/trainer_restart_final_2.log; fail "the restart failed"; }
a=$(grep -o "train_loss=[0-9.e+-]*" tests/out/trainer_restart_final_1.log)
b=$(grep -o "train_loss=[0-9.e+-]*" tests/out/trainer_restart_final_2.log)
[[ -n "$a" && "$a" == "$b" ]] || fail "uninterrupted run: $a, restart from its final checkpoint: $b"
echo "restart from the final checkpoint: $b, as the run that wrote it"
