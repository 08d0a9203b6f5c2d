#!/bin/bash
# The BLAS in view (issue 31; suite line blas_warning): PetNetInitialize()'s warning when OpenBLAS runs slower kernels
# than the CPU can, with OpenBLAS's generic SSE kernels (Prescott) assumed by -petnet_blas_core_assume (the GEMMs and
# OPENBLAS_CORETYPE untouched), and the lines that show the BLAS. tests/run silences the warning for every test
# (PETSC_OPTIONS): this script asks for it with -petnet_blas_warning 1. Counts lines, each count must be exact:
#   1. Prescott on 2 ranks: one warning in the job (rank 0), naming OPENBLAS_CORETYPE=<the advice>, when this CPU has
#      AVX2 (the advice is what bin/tests/test_blasinfo reports; on a CPU without AVX2 there is none and no warning);
#   2. the same with -petnet_blas_warning 0: no warning;
#   3. the kernels OpenBLAS picks itself: a warning exactly when test_blasinfo gives advice (none on this machine);
#   4. two -net_view of a Net: the "BLAS: " line once, and once more from PetNetBLASView(); with -log_view: once more,
#      above "PETSc Performance Summary";
#   5. bin/fashion's summary: line ends with blas_core=<the core>, Prescott when assumed;
#   6. bin/bench_dgemm: its first line is the BLAS line, its last has blas_core=.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/blaswarning
mkdir -p tests/out && rm -f $out.*
fail=0
check() { # what count expected
  if [[ "$2" == "$3" ]]; then echo "ok: $1: $2"; else echo "FAIL: $1: $2, expected $3"; fail=1; fi
}
warnings() { grep -c '^PetNet warning: .* runs its .* kernels on a CPU with ' "$1"; }
value() { sed -n "s/^summary:.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
run() { # file env... -- program and options: stdout to FILE.out, stderr to FILE.err
  local f=$1; shift
  env "$@" > "$f.out" 2> "$f.err" || { cat "$f.out" "$f.err" | tail -20; echo "FAIL: $*"; fail=1; }
}

# 1. the generic core assumed, 2 ranks
run $out.1 mpiexec -n 2 bin/tests/test_blasinfo -petnet_blas_core_assume Prescott -petnet_blas_warning 1 -check_core Prescott -malloc_debug -malloc_dump
advice=$(value $out.1.out advice)
if [[ "$advice" == none ]]; then expect=0; else expect=1; fi
if grep -qw avx2 <(grep '^BLAS name' $out.1.out) && grep -qw fma <(grep '^BLAS name' $out.1.out); then
  check "Prescott on an AVX2 CPU gives advice" "$([[ $advice != none ]] && echo yes || echo no)" yes
fi
check "warnings with the Prescott core assumed on 2 ranks (advice $advice)" "$(warnings $out.1.err)" $expect
[[ $expect == 1 ]] && check "the warning names OPENBLAS_CORETYPE=$advice" "$(grep -c "set OPENBLAS_CORETYPE=$advice in the environment" $out.1.err)" 1
check "warnings on stdout" "$(warnings $out.1.out)" 0

# 2. silenced
run $out.2 mpiexec -n 2 bin/tests/test_blasinfo -petnet_blas_core_assume Prescott -check_core Prescott -petnet_blas_warning 0 -malloc_debug -malloc_dump
check "warnings with -petnet_blas_warning 0" "$(warnings $out.2.err)" 0

# 3. OpenBLAS's own choice
run $out.3 mpiexec -n 1 bin/tests/test_blasinfo -petnet_blas_warning 1 -malloc_debug -malloc_dump
core=$(value $out.3.out blas_core)
if [[ "$(value $out.3.out advice)" == none ]]; then expect=0; else expect=1; fi
check "warnings with the core OpenBLAS picked ($core, advice $(value $out.3.out advice))" "$(warnings $out.3.err)" $expect

# 4. the BLAS line: once in two -net_view, once from PetNetBLASView(), once above -log_view's table
run $out.4 mpiexec -n 2 bin/tests/test_blasinfo -view 2 -log_view -malloc_debug -malloc_dump
check "BLAS lines (two views, PetNetBLASView(), -log_view)" "$(grep -c '^ *BLAS: .* core .* (threads .*); CPU: ' $out.4.out)" 3
check "Net tables" "$(grep -c '^Net Object:' $out.4.out)" 2
check "the BLAS line right above -log_view's table" "$(grep -B5 'PETSc Performance Summary' $out.4.out | grep -c "^BLAS: .* core $core ")" 1

# 5. bin/fashion's summary
fashion="bin/fashion -net_layers dense:10 -train_dataset_limit 200 -test_dataset_limit 100 -trainer_epochs 1 -trainer_monitor 0 -malloc_debug -malloc_dump"
run $out.5 mpiexec -n 1 $fashion
check "bin/fashion's blas_core=" "$(value $out.5.out blas_core)" "$core"
run $out.6 mpiexec -n 1 $fashion -petnet_blas_core_assume Prescott -petnet_blas_warning 0
check "bin/fashion's blas_core= with Prescott assumed" "$(value $out.6.out blas_core)" Prescott

# 6. bin/bench_dgemm's first and last lines
run $out.7 OPENBLAS_NUM_THREADS=1 bin/bench_dgemm
check "bench_dgemm's first line" "$(head -1 $out.7.out | grep -c "^BLAS: .* core $core ")" 1
check "bench_dgemm's blas_core=" "$(tail -1 $out.7.out | grep -c " blas_core=$core\$")" 1
exit $fail
