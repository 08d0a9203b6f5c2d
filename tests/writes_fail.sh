#!/bin/bash
# Writes that fail on one rank (suite lines writes_inject, writes_tmpfs): every writer -- checkpoints (first and later),
# model files (binary, HDF5), predictions (CSV, HDF5), monitors (csv, ascii), -net_view to a file -- must end every
# rank with the same error naming the file, within the timeout (no hang), with no temporary file left, at 1, 2 and 3
# ranks.
#   tests/writes_fail.sh inject   the N-th write step fails on one rank (-petnet_fault_inject write:N:RANK)
#   tests/writes_fail.sh tmpfs    a real full file system: a 64 KB tmpfs mounted here (skipped, with a message, where
#                                 mount is not permitted)
# BIN=dir runs the programs of another build (to see the old code fail); RANKS="2" runs one rank count.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
bin=${BIN:-bin}
mode=${1:-inject}
out=tests/out/writes_$mode
data="-train_dataset_limit 200 -test_dataset_limit 100"
model=tests/out/writes_model.petnet
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_failure NAME NRANKS FILE PHRASE PROGRAM ARGS...: the run fails (not by the timeout) with PHRASE, and no
# FILE.tmp* is left
expect_failure() {
  local name=$1 n=$2 file=$3 phrase=$4 log=$out/$1_$2.log rc
  shift 4
  timeout 60 mpiexec --oversubscribe -n "$n" "$@" > "$log" 2>&1 < /dev/null
  rc=$?
  if [[ $rc == 124 ]]; then
    fail "$name at $n rank(s): hangs (killed after 60 s)"
  elif [[ $rc == 0 ]]; then
    fail "$name at $n rank(s): exits 0"
  elif ! grep -qF -- "$phrase" "$log"; then
    fail "$name at $n rank(s): the error lacks \"$phrase\": $(grep -m1 'PETSC ERROR: [A-Z]' "$log" | grep -v 'Error Message')"
  elif ls "$file".tmp* > /dev/null 2>&1; then
    fail "$name at $n rank(s): left $(ls "$file".tmp*)"
  else
    echo "ok   $name at $n rank(s): \"$phrase\", no temporary file"
  fi
}

mkdir -p "$out"
mpiexec -n 1 "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -net_save $model > "$out/model.log" 2>&1 || { cat "$out/model.log"; echo "FAIL: cannot make the model"; exit 1; }

if [[ $mode == inject ]]; then
  dir=$out
  for n in ${RANKS:-1 2 3}; do
    last=$((n - 1))
    rm -f "$dir"/*
    # the first checkpoint fails on the last rank; then the second one (the first is kept, unchanged)
    expect_failure ckpt_first $n $dir/a.ckpt "Could not write the checkpoint $dir/a.ckpt on rank $last" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 3 -trainer_monitor 0 -trainer_checkpoint $dir/a.ckpt -trainer_checkpoint_every 1 -petnet_fault_inject write:1:$last
    expect_failure ckpt_later $n $dir/b.ckpt "Could not write the checkpoint $dir/b.ckpt on rank 0" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 3 -trainer_monitor 0 -trainer_checkpoint $dir/b.ckpt -trainer_checkpoint_every 1 -petnet_fault_inject write:2
    [[ -f $dir/b.ckpt ]] || fail "ckpt_later at $n rank(s): the first checkpoint is gone"
    expect_failure save_binary $n $dir/m.petnet "Could not write $dir/m.petnet on rank $last" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -net_save $dir/m.petnet -petnet_fault_inject write:1:$last
    expect_failure save_hdf5 $n $dir/m.h5 "Could not write the Net to $dir/m.h5 on rank $last" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -net_save $dir/m.h5 -petnet_fault_inject write:1:$last
    expect_failure predict_csv $n $dir/p.csv "Could not write $dir/p.csv on rank $last" \
      "$bin"/predict -net_load $model -predict_dataset_limit 100 -predict_output $dir/p.csv -petnet_fault_inject write:1:$last
    expect_failure predict_hdf5 $n $dir/p.h5 "Could not write $dir/p.h5 on rank $last" \
      "$bin"/predict -net_load $model -predict_dataset_limit 100 -predict_output $dir/p.h5 -petnet_fault_inject write:1:$last
    expect_failure monitor_csv $n $dir/mon.csv "Could not write $dir/mon.csv on rank $last" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 3 -trainer_monitor csv:$dir/mon.csv -petnet_fault_inject write:2:$last
    expect_failure net_view $n $dir/v.petnet "Could not write $dir/v.petnet on rank $last" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -trainer_view_net binary:$dir/v.petnet -petnet_fault_inject write:1:$last
  done
  expect_failure bad_option 1 $dir/x "-petnet_fault_inject write:0: write N[:RANK]" "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 1 -net_save $dir/x -petnet_fault_inject write:0
elif [[ $mode == tmpfs ]]; then
  dir=$out/full
  mkdir -p "$dir"
  mountpoint -q "$dir" && umount "$dir"
  if ! mount -t tmpfs -o size=64k tmpfs "$dir" 2> "$out/mount.log"; then
    echo "SKIP: cannot mount a tmpfs here ($(cat "$out/mount.log")): the full-disk cases are not run"
    exit 0
  fi
  trap 'umount "$dir"' EXIT
  fill() { rm -f "$dir"/*; dd if=/dev/zero of="$dir"/fill bs=1k count=64 > /dev/null 2>&1; }
  for n in ${RANKS:-1 2 3}; do
    rm -f "$dir"/*
    # dense:64 with Adam: about 1.2 MB of checkpoint, 400 KB of model, in 64 KB
    expect_failure ckpt_full $n $dir/a.ckpt "Could not write the checkpoint $dir/a.ckpt on rank 0: No space left on device" \
      "$bin"/fashion -net_layers dense:64,relu,dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -trainer_checkpoint $dir/a.ckpt
    expect_failure save_binary_full $n $dir/m.petnet "Could not write $dir/m.petnet on rank 0: No space left on device" \
      "$bin"/fashion -net_layers dense:64,relu,dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -net_save $dir/m.petnet
    expect_failure save_hdf5_full $n $dir/m.h5 "Could not write the Net to $dir/m.h5 on rank 0" \
      "$bin"/fashion -net_layers dense:64,relu,dense:10 $data -trainer_epochs 1 -trainer_monitor 0 -net_save $dir/m.h5
    expect_failure predict_csv_full $n $dir/p.csv "Could not write $dir/p.csv on rank 0: No space left on device" \
      "$bin"/predict -net_load $model -predict_dataset_limit 4000 -predict_output $dir/p.csv
    expect_failure predict_hdf5_full $n $dir/p.h5 "Could not write $dir/p.h5 on rank 0" \
      "$bin"/predict -net_load $model -predict_dataset_limit 4000 -predict_output $dir/p.h5
    fill
    expect_failure monitor_csv_full $n $dir/mon.csv "Could not write $dir/mon.csv on rank 0: No space left on device" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 2 -trainer_monitor csv:$dir/mon.csv
    fill
    expect_failure monitor_ascii_full $n $dir/mon.txt "Could not write $dir/mon.txt on rank 0: No space left on device" \
      "$bin"/fashion -net_layers dense:10 $data -trainer_epochs 2 -trainer_monitor ascii:$dir/mon.txt
  done
else
  echo "usage: $0 inject|tmpfs"
  exit 2
fi
[[ $failures == 0 ]] || { echo "$failures case(s) failed"; exit 1; }
echo "all cases end every rank with the error, no hang, no temporary file"
