#!/bin/bash
# Exit time of a 2-rank job loading a damaged model (suite line io_corrupt_exit_time, after io_corrupt_make): each
# HDF5 file tests/io_corrupt.py wrote, and the cases below, must be refused with a PETSc error within LIMIT seconds (default 5; about 0.5 s on an
# idle machine). The io_corrupt_*_error lines check the messages; this checks the time, which the runner's 600 s
# timeout cannot. Before rank 0 read the file alone (src/net/netiohdf5.c), such a job took 10-12 s: PETSc's error
# handler keeps the ranks other than 0 asleep for 10 s, and rank 0 waited for them in a collective close of the file.
# Prints each file's time.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
limit=${LIMIT:-5}
status=0
# each: NAME FILE [OPTIONS]; after the HDF5 files NetLoad() reads, NetRead() from the caller's own viewer, which the
# caller closes (collectively) before passing the error on (-load_read): a verdict of rank 0 (a tensor missing) and a
# checksum every rank checks, in HDF5 and in PETSc binary through MPI-IO (NetLoad() of a binary file with
# -viewer_binary_mpiio takes the same path).
# Each took 10.6-11.8 s before NetRead() kept the ranks other than 0 out of PETSc's 10 s pause.
cases=()
for name in truncated garbled missing rank3 bias3 transpose2d transpose int nan flip attrtype vlen depth; do
  cases+=("io_corrupt_$name.h5|tests/out/io_corrupt_$name.h5|")
done
cases+=("NetRead missing.h5|tests/out/io_corrupt_missing.h5|-load_read"
        "NetRead flip.h5|tests/out/io_corrupt_flip.h5|-load_read"
        "NetRead flip.petnet MPI-IO|tests/out/io_corrupt_flip.petnet|-load_read -viewer_binary_mpiio")
for c in "${cases[@]}"; do
  IFS='|' read -r label file options <<< "$c"
  log="tests/out/io_corrupt_exit_time_${label//[ .]/_}.log"
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  timeout 60 mpiexec -n 2 bin/tests/test_io -load "$file" $options > "$log" 2>&1 < /dev/null
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
  printf '%-32s %6d ms  %s\n' "$label" "$ms" "$verdict"
done
exit $status
