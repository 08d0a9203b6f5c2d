#!/bin/bash
# A run killed after epoch 3 and restarted from its checkpoint equals the uninterrupted run (issue 33): the same bits on
# the same rank count, 1e-10 relative in the weights on another. Suite lines trainer_resume_same_*.
#   usage: tests/trainer_resume_same.sh NAME RANKS RESTART_RANKS RTOL [bin/fashion options ...] [--restart options ...]
#   (the options after --restart are the restart's alone: another placement of the same Net)
# On 600 + 300 Fashion-MNIST samples, 5 epochs of share/models/mlp.opts (Adam, cosine decay) plus the options given:
#   A  uninterrupted, its final checkpoint A.ckpt;
#   B  the same run with -trainer_checkpoint_every 1 -trainer_fail_after_epoch 3: its last rank is killed with SIGKILL
#      after epoch 3 (mpiexec must report the failure), then -trainer_restart from its checkpoint on RESTART_RANKS ranks
#      to the end; the parameters of B's final checkpoint against A's (tests/ckpt_params.py; RTOL 0: the same bits, and
#      -net_save's files are then identical too; RTOL differs: a restart documented not to continue the run to the bit
#      must differ, so that the docs' statement is checked).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
name=$1 na=$2 nb=$3 rtol=$4
shift 4
# options after a lone '--restart' are given to the restart only (another placement, say)
opts=() ropts=()
while (($#)); do
  if [[ $1 == --restart ]]; then shift; ropts=("$@"); break; fi
  opts+=("$1"); shift
done
set -- "${opts[@]}"
out=tests/out/${name}_run
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
prog="bin/fashion -options_file share/models/mlp.opts -train_dataset_limit 600 -test_dataset_limit 300 -trainer_epochs 5 -trainer_monitor 0 -malloc_debug -malloc_dump $*"
mpiexec --oversubscribe -n $na $prog -trainer_checkpoint $out.A.ckpt -net_save $out.A.bin > $out.A.log 2>&1 || { cat $out.A.log; fail "the uninterrupted run failed"; }
mpiexec --oversubscribe -n $na $prog -trainer_checkpoint $out.B.ckpt -trainer_checkpoint_every 1 -trainer_fail_after_epoch 3 -trainer_fail_rank $((na - 1)) > $out.B1.log 2>&1 && { cat $out.B1.log; fail "-trainer_fail_after_epoch 3 did not kill the run"; }
grep -q "signal 9" $out.B1.log || { cat $out.B1.log; fail "the run did not end by SIGKILL"; }
[[ -f $out.B.ckpt ]] || fail "no checkpoint after the failure"
mpiexec --oversubscribe -n $nb $prog "${ropts[@]}" -trainer_checkpoint $out.B.ckpt -trainer_restart $out.B.ckpt -net_save $out.B.bin > $out.B2.log 2>&1 || { cat $out.B2.log; fail "the restart failed"; }
ea=$(grep -o "^summary:.* epochs=[0-9]*" $out.A.log | grep -o "epochs=[0-9]*$"); eb=$(grep -o "^summary:.* epochs=[0-9]*" $out.B2.log | grep -o "epochs=[0-9]*$")
[[ -n $ea && $ea == "$eb" ]] || { cat $out.B2.log; fail "the restart ended at $eb, the uninterrupted run at $ea"; }
if [[ $rtol == differs ]]; then # a restart documented not to continue the run to the bit
  python3 tests/ckpt_params.py $out.A.ckpt $out.B.ckpt 0 && fail "the restarted run has the uninterrupted run's bits, which the docs say it has not: update the docs and this test"
else
  python3 tests/ckpt_params.py $out.A.ckpt $out.B.ckpt $rtol || fail "the restarted run's weights differ from the uninterrupted run's"
fi
if [[ $rtol == 0 ]]; then cmp -s $out.A.bin $out.B.bin || fail "-net_save files differ"; fi
a=$(grep -o "test_accuracy=[0-9.]*" $out.A.log); b=$(grep -o "test_accuracy=[0-9.]*" $out.B2.log)
echo "uninterrupted $a, killed after epoch 3 on $na ranks and restarted on $nb: $b"
