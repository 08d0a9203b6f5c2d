#!/usr/bin/env bash
# Population training (tests/population.suite): -trainer_population_monitor with %d writes one CSV per trainer, with
# a row per epoch whose tournament columns agree with the tournament lines; -net_save writes the winner's model, which
# bin/predict reloads and scores at the winner's test accuracy (to the 4 printed digits).
cd "$(dirname "$0")/.." || exit 2
mkdir -p tests/out
out=tests/out/population_monitor
rm -f $out.*.csv $out.h5
mpiexec -n 4 bin/fashion -net_layers dense:16,relu,dense:10 -tao_type adam -train_dataset_limit 400 -test_dataset_limit 200 -trainer_epochs 2 -trainer_batch_size 20 \
  -trainer_population 4 -trainer_tournament_samples 20 -trainer_population_monitor "$out.%d.csv" -net_save $out.h5 -trainer_monitor 0 -malloc_debug -malloc_dump > $out.log 2>&1 ||
  { echo "bin/fashion failed:"; tail -20 $out.log; exit 1; }
if grep -q -E "^\[ *[0-9]+\] [0-9]+ bytes|PETSC ERROR" $out.log; then echo "leak or PETSc error:"; tail -20 $out.log; exit 1; fi
for k in 0 1 2 3; do
  f=$out.$k.csv
  [ -f $f ] || { echo "no $f"; exit 1; }
  [ "$(wc -l < $f)" -eq 3 ] || { echo "$f: expected a header and 2 rows:"; cat $f; exit 1; }
  # the row of epoch 2: trainer k, epoch 2, tournament 2; took_partner agrees with the tournament line ("k: ... takes")
  row=$(sed -n 3p $f)
  IFS=, read -r tk ep trl tel tea lr tn partner own pm took div <<< "$row"
  [ "$tk" = $k ] && [ "$ep" = 2 ] && [ "$tn" = 2 ] || { echo "$f: bad row $row"; exit 1; }
  line=$(grep '^tournament 2 ' $out.log)
  if grep -q -E "\| $k: [0-9.]+ vs [0-9.]+ takes $partner" <<< "$line"; then want=1; else want=0; fi
  [ "$took" = $want ] || { echo "$f: took_partner $took, but the tournament line says $want: $line"; exit 1; }
done
winner=$(grep '^summary:' $out.log | tr ' ' '\n' | awk -F= '$1 == "winner" { print $2 }')
acc=$(grep '^summary:' $out.log | tr ' ' '\n' | awk -F= '$1 == "test_accuracy" { print $2 }')
[ -f $out.h5 ] || { echo "-net_save wrote no $out.h5"; exit 1; }
mpiexec -n 1 bin/predict -net_load $out.h5 -predict_dataset_limit 200 > $out.predict 2>&1 || { echo "bin/predict failed:"; tail $out.predict; exit 1; }
pacc=$(grep '^summary:' $out.predict | tr ' ' '\n' | awk -F= '$1 == "test_accuracy" || $1 == "accuracy" { print $2 }')
echo "winner $winner: test_accuracy $acc in training, $pacc reloaded by bin/predict"
awk -v a="$acc" -v b="$pacc" 'BEGIN { exit !(a != "" && b != "" && (a - b < 5e-5 && b - a < 5e-5)) }' || { echo "the saved model is not the winner's"; exit 1; }
