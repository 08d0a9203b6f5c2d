#!/usr/bin/env bash
# make install into a temporary prefix, then build tests/install/netforward.c outside the tree against the installed
# PetNet twice: with pkg-config (petnet.pc) and with a makefile that includes PETSc's conf and PetNet's
# lib/petnet/conf/petnet_variables + petnet_rules. Each binary runs at 1 and 2 ranks and must print the sum of the
# outputs that the same formula gives in Python; so must tests/install/netforward.py through the installed Python module
# (PYTHONPATH=PREFIX/share/petnet/python), which must load PREFIX/lib/libpetnet.so. The prefix and the build directory
# are removed at the end. Last, the installed library must check HDF5 files with the installed
# PREFIX/lib/petnet/petnet-hdf5check (found beside itself, not in the build tree): a valid model loads, the damaged file
# of io_h5overread_error is refused. Then a plain PETSc makefile (no SLEPc flag) must build the same program against
# petnet.h, and the installed programs must train and predict from a folder outside the tree (petnet-fashion with the
# installed model file share/models/mlp.opts, petnet-predict on the model it saved: the same test loss and accuracy).
# The man pages must be where `man` finds them (MANPATH=PREFIX/share/man), and make uninstall must leave no file behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader
export OMPI_MCA_rmaps_base_oversubscribe=yes OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
export PETSC_DIR=${PETSC_DIR:-/usr/lib/petsc}
prefix=$(mktemp -d) work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT

make -s install PREFIX="$prefix" > "$work/install.log"
test -L "$prefix/lib/libpetnet.so" -a -f "$prefix/lib/petnet/conf/petnet_rules" -a -f "$prefix/include/petnet/private/netimpl.h"
test -x "$prefix/lib/petnet/petnet-hdf5check" || { echo "install: no $prefix/lib/petnet/petnet-hdf5check"; exit 1; }
soname=$(readelf -d "$prefix/lib/libpetnet.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
test -L "$prefix/lib/$soname" || { echo "install: no link $soname in $prefix/lib"; exit 1; }
cp tests/install/netforward.c tests/install/makefile "$work"

# sum over the samples s of 0.3 tanh(0.1 sum_j 0.1 (s+1)(j+1) + 0.1) + 0.1: all parameters 0.1 in dense:3,tanh,dense:1
expect=$(python3 -c 'import math; print("sum of outputs: %.10f" % sum(0.3 * math.tanh(0.1 * sum(0.1 * (s + 1) * (j + 1) for j in range(4)) + 0.1) + 0.1 for s in range(8)))')

check() { # check LABEL PROGRAM [ARGS]: runs PROGRAM at 1 and 2 ranks, compares its line with $expect
  for n in 1 2; do
    out=$(mpiexec -n $n "${@:2}")
    if [ "$out" != "$expect" ]; then echo "$1, $n rank(s): got '$out', expected '$expect'"; exit 1; fi
    echo "$1, $n rank(s): $out"
  done
}

# 1. pkg-config: rpath-free flags, so the run needs the library path
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "pkg-config petnet: version $(pkg-config --modversion petnet)"
(cd "$work" && mpicc $(pkg-config --cflags petnet) netforward.c -o netforward_pc $(pkg-config --libs petnet) -Wl,-rpath,"$prefix/lib")
check "pkg-config" "$work/netforward_pc"

# 2. the conf makefile: "make netforward" through petnet_rules
make -s -C "$work" PETNET_DIR="$prefix" netforward > "$work/make.log"
check "petnet_rules" "$work/netforward"

# 3. the Python module, installed with the library it finds (relative to itself), from outside the tree
test -f "$prefix/share/petnet/python/petnet.py" || { echo "install: no $prefix/share/petnet/python/petnet.py"; exit 1; }
cp tests/install/netforward.py "$work"
(cd "$work" && PYTHONPATH="$prefix/share/petnet/python" PETNET_TEST_PREFIX="$prefix" check "python" /usr/bin/python3 netforward.py)
# 4. the HDF5 check: the installed library runs the installed program, found beside itself (-info names the program)
cat > "$work/h5check.py" << 'EOF'
import sys
import petsc4py
petsc4py.init(sys.argv)
import petnet  # noqa: E402
net = petnet.Net().create()
net.load(sys.argv[-2])  # a valid model
net.destroy()
try:
    petnet.Net().create().load(sys.argv[-1])  # HDF5 1.10.8 reads past its buffer on this one
    raise SystemExit("install: the damaged HDF5 file loaded")
except petnet.Error as e:
    print("refused:", "damaged" in str(e))
EOF
here=$PWD
out=$(cd "$work" && PYTHONPATH="$prefix/share/petnet/python" /usr/bin/python3 h5check.py -info :sys "$here/fuzz/corpus/h5model/model_ok.h5" "$here/tests/data/h5model_attribute_overread.h5" 2>&1)
n=$(grep -c "HDF5 check by $prefix/lib/petnet/petnet-hdf5check" <<< "$out" || true)
if ! grep -q "refused: True" <<< "$out" || [ "$n" != 2 ]; then
  echo "install: the HDF5 check did not run $prefix/lib/petnet/petnet-hdf5check on both files, or loaded the damaged one:"
  grep -v "^\[0\] <sys> Petsc" <<< "$out"
  exit 1
fi
echo "HDF5 check: $prefix/lib/petnet/petnet-hdf5check ran on both files, the damaged one refused"

# 5. a plain PETSc makefile (PETSc's conf, -I PREFIX/include, -lpetnet, no SLEPc flag): petnet.h needs PETSc's flags alone
cp tests/install/makefile.petsc "$work"
make -s -C "$work" -f makefile.petsc PETNET_DIR="$prefix" netforward_petsc > "$work/make_petsc.log" 2>&1 ||
  { echo "install: petnet.h does not build with PETSc's flags alone:"; grep -m5 -i "error" "$work/make_petsc.log"; exit 1; }
check "plain PETSc makefile" "$work/netforward_petsc"

# 6. the installed programs, run from a folder without PetNet's tree: petnet-fashion trains with the model file
# share/models/mlp.opts (found in PREFIX/share/petnet/models) on a few samples and saves the Net; petnet-predict
# evaluates the saved model on the same test samples and must report fashion's test loss and accuracy. Both must load
# PREFIX/lib/libpetnet.so (their run path is $ORIGIN/../lib), never the build tree's.
for p in $(ls bin | grep -v -e '^bench_' -e '^fuzz$' -e '^tests$'); do
  test -x "$prefix/bin/petnet-$p" || { echo "install: no $prefix/bin/petnet-$p"; exit 1; }
done
test -x "$prefix/bin/petnet-run" && "$prefix/bin/petnet-run" --help | grep -q -- "--min-ranks" || { echo "install: no working $prefix/bin/petnet-run"; exit 1; }
lib=$(cd "$work" && realpath "$(ldd "$prefix/bin/petnet-fashion" | awk '$1 ~ /^libpetnet/ { print $3 }')")
[ "$lib" = "$(realpath "$prefix/lib/$soname")" ] || { echo "install: petnet-fashion loads '$lib', not $prefix/lib/$soname"; exit 1; }
mkdir "$work/run"
fashion=$(cd "$work/run" && mpiexec -n 1 "$prefix/bin/petnet-fashion" -options_file share/models/mlp.opts -trainer_epochs 1 \
  -train_dataset_limit 256 -test_dataset_limit 128 -trainer_monitor 0 -net_save model.h5 | grep '^summary:')
predict=$(cd "$work/run" && mpiexec -n 2 "$prefix/bin/petnet-predict" -net_load model.h5 -predict_dataset_limit 128 | grep '^summary:')
echo "petnet-fashion: $fashion"
echo "petnet-predict: $predict"
grep -q "model=mlp " <<< "$fashion" || { echo "install: petnet-fashion did not read share/models/mlp.opts"; exit 1; }
for key in test_loss test_accuracy; do
  a=$(sed -n "s/.* $key=\([^ ]*\).*/\1/p" <<< "$fashion") b=$(sed -n "s/.* $key=\([^ ]*\).*/\1/p" <<< "$predict")
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-4 * max(1, abs(a)))" "$a" "$b" ||
    { echo "install: petnet-predict's $key $b differs from petnet-fashion's $a"; exit 1; }
done
echo "installed programs: petnet-fashion trained with the installed mlp.opts, petnet-predict agrees on its saved model"
# 7. the manual pages: man finds them with MANPATH=PREFIX/share/man, and make uninstall removes them
page=$(MANPATH="$prefix/share/man" MANWIDTH=100 man 3 NetCreate 2> /dev/null | grep -c "NetCreate.*creates a Net" || true)
if [ "$page" = 0 ]; then echo "install: man 3 NetCreate with MANPATH=$prefix/share/man found no page"; exit 1; fi
echo "man pages: $(ls "$prefix/share/man/man3" | wc -l) installed, man 3 NetCreate finds its page"
make -s uninstall PREFIX="$prefix" > /dev/null
left=$(find "$prefix" -type f | wc -l)
if [ "$left" != 0 ]; then echo "install: make uninstall left $left files:"; find "$prefix" -type f | head; exit 1; fi
echo "uninstall: nothing left"
echo "install: ok"
