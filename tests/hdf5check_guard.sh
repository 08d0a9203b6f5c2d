#!/bin/bash
# petnet-hdf5check's guard-page allocator (src/sys/hdf5check/guardmalloc.c; suite line io_h5check_guard): a read one
# byte past a block and a read after free of a large block must kill the program with SIGSEGV; a valid model file is
# walked with every allocation guarded (exit 0, "0 unguarded"), and also when only 5 blocks may be guarded at once
# (-max_guarded 5: the fallback to the C library's allocator a file too large for vm.max_map_count would take); the
# damaged file HDF5 1.10.8 reads past its buffer on (tests/data/h5model_attribute_overread.h5) dies of SIGSEGV.
cd "$(dirname "$0")/.." || exit 2
prog=lib/petnet/petnet-hdf5check
valid=fuzz/corpus/h5model/model_ok.h5
status=0
expect() { # WHAT EXPECTED-EXIT-STATUS [PATTERN] -- COMMAND...
  local what=$1 want=$2 pattern=$3 out rc
  shift 4
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]] || { [[ -n $pattern ]] && ! grep -q -- "$pattern" <<< "$out"; }; then
    printf 'FAIL %-28s exit %d (expected %d%s): %s\n' "$what" "$rc" "$want" "${pattern:+, output with '$pattern'}" "$out"
    status=1
  else
    printf 'ok   %-28s exit %d %s\n' "$what" "$rc" "$out"
  fi
}
expect "over-read by one byte" 139 "" -- "$prog" -selftest overread
expect "read after free" 139 "" -- "$prog" -selftest useafterfree
expect "valid file, all guarded" 0 " 0 unguarded" -- "$prog" -verbose "$valid"
expect "valid file, -max_guarded 5" 0 "walked" -- "$prog" -verbose -max_guarded 5 "$valid"
expect "HDF5 over-read" 139 "" -- "$prog" tests/data/h5model_attribute_overread.h5
exit $status
