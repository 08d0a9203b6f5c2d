#!/bin/bash
# A population killed after epoch 2 and restarted from its trainers' checkpoints equals the uninterrupted population
# (issue 33 item 5: "a checkpoint holds ... the population (every trainer's model and hyperparameters)"): each trainer
# writes its own file (NAME.k), a restart reads them back, the learning rates are the checkpoint's (not the init
# spread), the tournaments are counted, so the pairs and explore draws after the restart are the uninterrupted run's.
#   usage: tests/population_resume.sh NAME RANKS RESTART_RANKS RTOL [OPTIONS...]    (suite lines population_resume_*;
#   OPTIONS are appended to the program's, e.g. another -tao_type and other hyperparameters to spread and explore)
# 4 trainers, explore on, 5 epochs: every trainer's final checkpoint against the uninterrupted run's (tests/ckpt_params.py,
# RTOL 0: the same bits), the tournament lines after the restart and the summary's winner and winner_lr.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
name=$1 na=$2 nb=$3 rtol=$4
shift 4
out=tests/out/${name}_run
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
prog="bin/fashion -net_layers dense:16,relu,dense:10 -tao_type adam -tao_lr_schedule cosine -train_dataset_limit 400 -test_dataset_limit 200 -trainer_epochs 5 -trainer_batch_size 20 -trainer_monitor 0 -trainer_population 4 -trainer_tournament_samples 20 -trainer_population_init lr:1e-4:1e-2:log -trainer_population_explore lr:0.5,2 -trainer_population_seed 7 -malloc_debug -malloc_dump $*"
mpiexec --oversubscribe -n $na $prog -trainer_checkpoint $out.A.ckpt > $out.A.log 2>&1 || { cat $out.A.log; fail "the uninterrupted run failed"; }
mpiexec --oversubscribe -n $na $prog -trainer_checkpoint $out.B.ckpt -trainer_checkpoint_every 1 -trainer_fail_after_epoch 2 -trainer_fail_rank $((na - 1)) > $out.B1.log 2>&1 && { cat $out.B1.log; fail "-trainer_fail_after_epoch 2 did not kill the run"; }
for k in 0 1 2 3; do [[ -f $out.B.ckpt.$k ]] || fail "no checkpoint of trainer $k after the failure"; done
mpiexec --oversubscribe -n $nb $prog -trainer_checkpoint $out.B.ckpt -trainer_restart $out.B.ckpt > $out.B2.log 2>&1 || { cat $out.B2.log; fail "the restart failed"; }
for k in 0 1 2 3; do
  python3 tests/ckpt_params.py $out.A.ckpt.$k $out.B.ckpt.$k $rtol || fail "trainer $k's weights after the restart differ from the uninterrupted run's"
done
# the tournaments after the restart (3, 4, 5) print the same pairs, metrics and learning rates
ta=$(grep '^tournament [345] ' $out.A.log); tb=$(grep '^tournament [345] ' $out.B2.log)
[[ -n $ta ]] || { cat $out.A.log; fail "no tournament lines"; }
if [[ $rtol == 0 && "$ta" != "$tb" ]]; then diff <(echo "$ta") <(echo "$tb"); fail "the tournaments after the restart differ"; fi
wa=$(grep -o "winner=[0-9]* winner_lr=[0-9.e+-]*" $out.A.log); wb=$(grep -o "winner=[0-9]* winner_lr=[0-9.e+-]*" $out.B2.log)
[[ -n $wa && $wa == "$wb" ]] || fail "the restart's $wb, the uninterrupted run's $wa"
grep -q "before tournament 3 (the restart) not recorded" $out.B2.log || { cat $out.B2.log; fail "the lineage does not say where the restart cut it"; }
# checkpoints of different epochs (trainer 1's from epoch 1, the others' from epoch 5): refused on every rank, naming them
mpiexec --oversubscribe -n $na $prog -trainer_checkpoint $out.C.ckpt -trainer_epochs 1 > $out.C.log 2>&1 || { cat $out.C.log; fail "the one-epoch run failed"; }
for k in 0 2 3; do cp $out.A.ckpt.$k $out.D.ckpt.$k; done; cp $out.C.ckpt.1 $out.D.ckpt.1
mpiexec --oversubscribe -n $na $prog -trainer_restart $out.D.ckpt > $out.D.log 2>&1 && { cat $out.D.log; fail "checkpoints of epochs 1 and 5 were accepted"; }
grep -q "The trainers' checkpoints end different epochs (1 to 5" $out.D.log || { cat $out.D.log; fail "no clear error for checkpoints of different epochs"; }
echo "uninterrupted: $wa; killed after epoch 2 on $na ranks and restarted on $nb: $wb; the 4 trainers' weights agree (rtol $rtol)"
