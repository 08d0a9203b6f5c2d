#!/bin/bash
# Temporary files of atomic checkpoint writes (suite line trainer_tmpfiles):
#   1. a stale "name.tmpPID" whose process is dead is removed at set-up; that of a live process is kept;
#   2. a write that fails (a full disk, simulated by ulimit -f) removes its temporary file, reports the checkpoint
#      name, and leaves the previous checkpoint byte for byte as it was.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ckpt=tests/out/trainer_tmpfiles.ckpt
run="mpiexec -n 1 bin/fashion -net_layers dense:10 -train_dataset_limit 200 -test_dataset_limit 100 -trainer_monitor 0 -trainer_checkpoint $ckpt"
rm -f $ckpt $ckpt.tmp*
fail() { echo "FAIL: $*"; exit 1; }

echo stale > $ckpt.tmp2147483000   # no such process
echo live > $ckpt.tmp$$             # this shell
$run -trainer_epochs 1 > tests/out/trainer_tmpfiles_1.log 2>&1 || fail "training with a stale temporary file failed"
[[ -e $ckpt.tmp2147483000 ]] && fail "the stale temporary file of a dead process was not removed"
[[ -e $ckpt.tmp$$ ]] || fail "the temporary file of a live process was removed"
rm -f $ckpt.tmp$$
[[ -f $ckpt ]] || fail "no checkpoint written"
echo "stale temporary file removed, live one kept"

sum=$(md5sum < $ckpt)
# a checkpoint of dense:10 with Adam is about 190 KB: a 64 KB file-size limit makes its write fail (EFBIG)
# (the limit applies to the training process only, not to mpiexec, and SIGXFSZ is ignored so that write() fails)
OMPI_MCA_btl=self mpiexec -n 1 sh -c "ulimit -f 64; trap '' XFSZ; exec ${run#mpiexec -n 1 } -trainer_epochs 2" > tests/out/trainer_tmpfiles_2.log 2>&1 && fail "the write beyond the file-size limit did not fail"
grep -q "Could not write the checkpoint $ckpt" tests/out/trainer_tmpfiles_2.log || { cat tests/out/trainer_tmpfiles_2.log; fail "the error does not name the checkpoint"; }
ls $ckpt.tmp* > /dev/null 2>&1 && fail "the failed write left its temporary file: $(ls $ckpt.tmp*)"
[[ "$(md5sum < $ckpt)" == "$sum" ]] || fail "the previous checkpoint changed"
echo "failed write: temporary file removed, previous checkpoint unchanged"
