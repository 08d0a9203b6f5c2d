#!/usr/bin/env bash
# bin/charlm's corpus reader on corpora that cannot live in the repository (tests/charlm.suite, *_error tests: each must
# fail with the PETSc error of tests/expected/NAME.err). Usage: tests/charlm_corpus.sh CASE
#   huge       one file of 5 GiB (sparse: no disk is used): more than a PetscInt counts, and 5 GiB mod 2^32 = 1 GiB, so a
#              size cut to 32 bits would pass; refused from its size (stat) before anything is allocated or read
#   sum        a folder of three files of 1 GiB each (sparse; the last is held out): the train text's 2 GiB is refused
#              at the second file, from the sizes alone (the first file is not read either)
#   truncated  a file that delivers fewer bytes than its size: a sysfs attribute (the kernel reports 4096 bytes and
#              gives a few), the path of a file cut while it is read
# Each bin/charlm run is timed out at 60 s: reading (or allocating) gigabytes would take longer on this machine.
cd "$(dirname "$0")/.." || exit 2
dir=tests/out/charlm_corpus_$1
rm -rf "$dir"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
case $1 in
  huge) truncate -s 5G "$dir/huge.txt"; corpus=$dir/huge.txt ;;
  sum) for f in a b c; do truncate -s 1G "$dir/$f.txt"; done; corpus=$dir ;;
  truncated)
    corpus=/sys/devices/system/cpu/online
    [[ -f $corpus && $(stat -c %s "$corpus") -gt $(wc -c < "$corpus") ]] || { echo "$corpus is missing or delivers its size: no file to truncate a read here"; exit 0; } ;;
  *) echo "usage: $0 huge|sum|truncated"; exit 2 ;;
esac
timeout 60 mpiexec -n 1 bin/charlm -charlm_corpus "$corpus" -charlm_context 16 -charlm_iterations 0 -charlm_val_windows 1 -malloc_debug -malloc_dump 2>&1
