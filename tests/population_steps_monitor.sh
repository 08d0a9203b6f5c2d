#!/usr/bin/env bash
# Population training (tests/population.suite): -trainer_tournament_unit steps with -trainer_population_monitor in one
# file. Prints the tournament lines and the CSV (compared with tests/expected/population_steps_monitor_4.out): the
# header has the column step; a tournament inside an epoch adds a row per trainer with its step, lr and tournament
# columns and empty losses; the rows of an epoch's end carry its losses and, when a tournament ran after its last
# step, that tournament's columns.
cd "$(dirname "$0")/.." || exit 2
mkdir -p tests/out
out=tests/out/population_steps_monitor
rm -f $out.csv
mpiexec -n 4 bin/fashion -net_layers dense:16,relu,dense:10 -tao_type adam -train_dataset_limit 400 -test_dataset_limit 200 -trainer_epochs 2 -trainer_batch_size 20 \
  -trainer_population 4 -trainer_tournament_samples 20 -trainer_tournament_unit steps -trainer_tournament_interval 5 -trainer_tournament_metric accuracy \
  -trainer_tournament_exchange state -trainer_population_init lr:1e-3:1e-2:log -trainer_population_monitor $out.csv -trainer_monitor 0 -malloc_debug -malloc_dump > $out.log 2>&1 ||
  { echo "bin/fashion failed:"; tail -20 $out.log; exit 1; }
if grep -q -E "^\[ *[0-9]+\] [0-9]+ bytes|PETSC ERROR" $out.log; then echo "leak or PETSc error:"; tail -20 $out.log; exit 1; fi
grep -E '^(tournament|population|lineage)' $out.log
cat $out.csv
