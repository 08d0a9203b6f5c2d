#!/bin/bash
# share/petnet-run restarts a failed job from its last complete checkpoint (issue 33; suite lines trainer_petnet_run_*).
#   usage: tests/petnet_run.sh same|shrink|again|exhausted|midstep|midstep_shrink
# On 600 + 300 Fashion-MNIST samples, 5 epochs of share/models/mlp.opts (Adam, cosine decay), checkpoints every epoch:
#   same       mpiexec -n 2 with -trainer_fail_after_epoch 2 (rank 1 killed with SIGKILL) under petnet-run --retries 2:
#              one failure logged with its signal, one restart from the epoch-2 checkpoint, exit 0, and the final
#              weights are the uninterrupted 2-rank run's to the bit;
#   shrink     the same with --min-ranks 1 --shrink: the restart runs on 1 rank, the weights agree to 1e-10;
#   again      2 ranks "cannot start" after the first failure (a launcher that refuses -n 2 once the job has failed):
#              without --shrink, the restart on 2 fails without a newer checkpoint, so the next runs on 1 (--min-ranks 1)
#              and completes; the weights agree to 1e-10;
#   midstep    as same, but rank 1 is killed in the middle of epoch 3 (-trainer_fail_after_step 13: after batch 3 of
#              its 5, two batches after the epoch-2 checkpoint): one failure, the restart from the epoch-2 checkpoint
#              redoes epoch 3 from its first batch and ends with the uninterrupted run's bits;
#   midstep_shrink  the same kill with --min-ranks 1 --shrink: the restart runs on 1 rank, the weights agree to 1e-10;
#   exhausted  a job that fails every time (-trainer_divergence_factor 0.5 is refused): --retries 1 gives two attempts,
#              a "giving up" line naming the last error and petnet-run's exit code is the job's (non-zero).
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
case=$1
out=tests/out/petnet_run_$case
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
prog="bin/fashion -options_file share/models/mlp.opts -train_dataset_limit 600 -test_dataset_limit 300 -trainer_epochs 5 -trainer_monitor 0"
if [[ $case == exhausted ]]; then
  share/petnet-run --retries 1 --log $out.log -- mpiexec -n 1 $prog -trainer_divergence_factor 0.5 -trainer_checkpoint $out.ckpt > $out.run 2>&1
  rc=$?
  [[ $rc != 0 ]] || fail "petnet-run exited 0 after every attempt failed"
  [[ $(grep -c "the job failed on 1 ranks: exit code" $out.log) == 2 ]] || { cat $out.log; fail "not two failures logged"; }
  grep -q "giving up: the job failed 2 times (--retries 1); last failure: exit code $rc; last error: .*-trainer_divergence_factor 0.5" $out.log || { cat $out.log; fail "no clear giving-up line"; }
  echo "retries exhausted: exit code $rc, $(grep -c restart $out.log) restart, the last error named"
  exit 0
fi
mpiexec -n 2 $prog -trainer_checkpoint $out.A.ckpt > $out.A.log 2>&1 || { cat $out.A.log; fail "the uninterrupted run failed"; }
fail_at="-trainer_fail_after_epoch 2"
[[ $case == midstep* ]] && fail_at="-trainer_fail_after_step 13"
job="$prog -trainer_checkpoint $out.B.ckpt -trainer_checkpoint_every 1 $fail_at -trainer_fail_rank 1"
case $case in
same | midstep) share/petnet-run --retries 2 --log $out.log -- mpiexec -n 2 $job > $out.run 2>&1 || { cat $out.run; fail "petnet-run failed"; }
      rtol=0 ranks=2 ;;
shrink | midstep_shrink) share/petnet-run --retries 2 --min-ranks 1 --shrink --log $out.log -- mpiexec -n 2 $job > $out.run 2>&1 || { cat $out.run; fail "petnet-run failed"; }
      rtol=1e-10 ranks=1 ;;
again) cat > $out.launcher <<SH
#!/bin/bash
# mpiexec, except that -n 2 cannot start once the job has failed (the marker is left by the first attempt)
[[ \$1 == -n && \$2 == 2 && -f $out.started ]] && { echo "launcher: cannot start 2 ranks" >&2; exit 1; }
touch $out.started
exec mpiexec "\$@"
SH
      chmod +x $out.launcher
      share/petnet-run --retries 3 --min-ranks 1 --log $out.log -- $out.launcher -n 2 $job > $out.run 2>&1 || { cat $out.run; fail "petnet-run failed"; }
      grep -q "shrinking to 1 ranks (the restart failed before a newer checkpoint; --min-ranks 1)" $out.log || { cat $out.log; fail "no shrink after the failed restart"; }
      rtol=1e-10 ranks=1 ;;
*) fail "unknown case $case" ;;
esac
cat $out.log
grep -q "the job failed on 2 ranks: .*signal 9" $out.log || fail "the SIGKILL was not logged as the cause"
grep -q "restart 1 of .* from $out.B.ckpt (epoch 2) on $ranks ranks\|restart 2 of .* from $out.B.ckpt (epoch 2) on $ranks ranks" $out.log || fail "no restart from the epoch-2 checkpoint on $ranks ranks logged"
grep -q "the job completed after" $out.log || fail "no completion logged"
grep -q "^summary:.* epochs=5 .*ranks=$ranks " $out.run || fail "the last attempt did not finish 5 epochs on $ranks ranks"
python3 tests/ckpt_params.py $out.A.ckpt $out.B.ckpt $rtol || fail "the weights differ from the uninterrupted run's"
if [[ $case == midstep* ]]; then
  grep -q "^-trainer_fail_after_step 13: killing rank 1 after batch 3 of 5 of epoch 3 (the last checkpoint is of epoch 2)" $out.run || fail "rank 1 was not killed after batch 3 of epoch 3"
  grep -q "is ignored (a restarted run does not fail again)" $out.run || fail "the restart did not say that it ignores -trainer_fail_after_step"
fi
