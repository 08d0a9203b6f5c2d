#!/bin/bash
# -help shows each Dataset's own defaults (suite line help_defaults): the test set's IDX split is t10k and the training
# set's train (the test set's line showed "<now train>", the training set's value, before issue 30), and a regression's
# progress line (bin/surrogate, dmda_surrogate_1) has no test_acc. Here: bin/fashion -help with -trainer_epochs 0.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/help_defaults.log
mkdir -p tests/out
mpiexec -n 1 bin/fashion -help -net_layers dense:10 -trainer_epochs 0 -train_dataset_limit 100 -test_dataset_limit 100 -malloc_debug -malloc_dump > $out 2>&1 || { tail -20 $out; echo "FAIL: bin/fashion -help failed"; exit 1; }
fail=0
for want in "-train_dataset_idx_split <now train :" "-test_dataset_idx_split <now t10k :" "-train_dataset_idx_images <now /usr/share/datasets/fashion-mnist/train-images" "-test_dataset_idx_images <now /usr/share/datasets/fashion-mnist/t10k-images"; do
  if grep -qF -- "$want" $out; then echo "ok: $want"; else echo "FAIL: -help lacks \"$want\":"; grep -F -- "${want%% *}" $out; fail=1; fi
done
exit $fail
