#!/bin/bash
# -net_view and -trainer_view_net with binary and HDF5 viewers write the model (as NetSave()), which -net_load reads
# back (suite line net_view_files), on 500 + 200 Fashion-MNIST samples:
#   1. -net_view binary:FILE and -net_view hdf5:FILE fire at set-up: the untrained Net, whose test loss and accuracy
#      (-trainer_epochs 0) the loaded file reproduces exactly;
#   2. -trainer_view_net binary:FILE fires at the end of training: the trained Net, whose test loss and accuracy the
#      loaded file reproduces on 1 rank after training on 2.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/netviewfiles
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
run="bin/fashion -net_layers dense:10 -train_dataset_limit 500 -test_dataset_limit 200 -trainer_monitor 0"
result() { sed -n 's/.*\(test_loss=[^ ]* test_accuracy=[^ ]*\).*/\1/p' "$1"; }

mpiexec -n 2 $run -trainer_epochs 0 -net_view binary:$out.bin > $out.1.log 2>&1 || { cat $out.1.log; fail "-net_view binary failed"; }
mpiexec -n 1 $run -trainer_epochs 0 -net_view hdf5:$out.h5 > $out.2.log 2>&1 || { cat $out.2.log; fail "-net_view hdf5 failed"; }
[[ -s $out.bin && -s $out.h5 ]] || fail "-net_view wrote empty files"
mpiexec -n 1 bin/fashion -net_load $out.bin -train_dataset_limit 500 -test_dataset_limit 200 -trainer_monitor 0 -trainer_epochs 0 > $out.3.log 2>&1 || { cat $out.3.log; fail "-net_load of the binary file failed"; }
mpiexec -n 1 bin/fashion -net_load $out.h5 -train_dataset_limit 500 -test_dataset_limit 200 -trainer_monitor 0 -trainer_epochs 0 > $out.4.log 2>&1 || { cat $out.4.log; fail "-net_load of the HDF5 file failed"; }
a=$(result $out.1.log); [[ -n "$a" && "$(result $out.2.log)" == "$a" && "$(result $out.3.log)" == "$a" && "$(result $out.4.log)" == "$a" ]] ||
  fail "set-up views: $a, $(result $out.2.log), loaded $(result $out.3.log), $(result $out.4.log)"
echo "-net_view binary and hdf5 at set-up, loaded back: $a"

mpiexec -n 2 $run -trainer_epochs 2 -trainer_view_net binary:$out.trained.bin > $out.5.log 2>&1 || { cat $out.5.log; fail "-trainer_view_net failed"; }
mpiexec -n 1 bin/fashion -net_load $out.trained.bin -train_dataset_limit 500 -test_dataset_limit 200 -trainer_monitor 0 -trainer_epochs 0 > $out.6.log 2>&1 || { cat $out.6.log; fail "-net_load of the trained file failed"; }
b=$(result $out.5.log); [[ -n "$b" && "$b" != "$a" && "$(result $out.6.log)" == "$b" ]] || fail "trained $b, loaded $(result $out.6.log) (untrained $a)"
echo "-trainer_view_net binary after training, loaded back: $b"
