#!/bin/bash
# Exit time of a 2-rank job loading a damaged HDF5 model (suite line io_corrupt_exit_time, after io_corrupt_make): each
# file tests/io_corrupt.py wrote must be refused with a PETSc error within LIMIT seconds (default 5; about 0.5 s on an
# idle machine). The io_corrupt_*_error lines check the messages; this checks the time, which the runner's 600 s
# timeout cannot. Before rank 0 read the file alone (src/net/netiohdf5.c), such a job took 10-12 s: PETSc's error
# handler keeps the ranks other than 0 asleep for 10 s, and rank 0 waited for them in a collective close of the file.
# Prints each file's time.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
limit=${LIMIT:-5}
status=0
for name in truncated garbled missing rank3 bias3 transpose2d transpose int nan flip attrtype vlen depth; do
  file=tests/out/io_corrupt_$name.h5
  log=tests/out/io_corrupt_exit_time_$name.log
  start=$(date +%s%N)
  timeout 60 mpiexec -n 2 bin/tests/test_io -load "$file" > "$log" 2>&1 < /dev/null
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if [[ ! -f $file ]]; then
    verdict="FAIL: $file missing (run io_corrupt_make first)"
  elif [[ $rc -eq 0 ]]; then
    verdict="FAIL: loaded without an error"
  elif ! grep -q "PETSC ERROR" "$log"; then
    verdict="FAIL: exit code $rc without a PETSc error (see $log)"
  elif [[ $ms -gt $((limit * 1000)) ]]; then
    verdict="FAIL: more than $limit s"
  else
    verdict="ok"
  fi
  [[ $verdict == ok ]] || status=1
  printf '%-32s %6d ms  %s\n' "io_corrupt_$name.h5" "$ms" "$verdict"
done
exit $status
