# PetNet makefile: builds lib/libpetnet.so, the examples in bin/, and runs the tests.
#   make            library and examples
#   make check      build everything and run the whole test suite (last line: "N passed, N failed")
#   make fashion    train the MLP on Fashion-MNIST (share/models/mlp.opts) and print the test accuracy
#   make bench      throughput benchmarks (PyTorch side by side when python3-torch is installed); BENCH_ONLY="mlp cnn"
#                   picks sections, BENCH_REPEAT=N keeps the best of N runs, CNN_BENCH_LIMIT=10000 a shorter CNN epoch
#   make format-check   clang-format check
#   make docs       API reference from the manual pages into docs/api/ (share/docs/manpages.py; --check lists missing pages)
#   make docs-images   regenerates the tracked share/docs/mlp_curves.png (the manual's training curves: the 10-epoch
#                   MLP of make fashion); the only target that writes a tracked file, and nothing else calls it
#   make fuzz       fuzz every reader for FUZZ_SECONDS (default 60) each; FUZZ_TARGETS="spec idx" picks some. Every
#                   fuzz/fuzz_<name>.c becomes bin/fuzz/fuzz_<name>, a libFuzzer binary (clang -fsanitize=fuzzer,address)
#                   linked with the library's sources compiled with clang -fsanitize=fuzzer-no-link,address into
#                   build-fuzz/. It starts from fuzz/corpus/<name>/ (the committed seeds, never written) and keeps the
#                   inputs it finds in build-fuzz/corpus/<name>/; a crash, hang (-timeout=10) or blow-up
#                   (-rss_limit_mb=4096) is written to fuzz/regress/<name>/ and fails the target: fix the reader, keep
#                   the input there (make check replays it, tests/fuzz.suite). Needs libclang-rt-14-dev (the target
#                   says so). Leaks are not checked here (-detect_leaks=0); make check's -malloc_dump does that.
#                   A request beyond what any machine holds (over 1 TB) returns NULL, as malloc does without
#                   AddressSanitizer (allocator_may_return_null=1), instead of aborting: HDF5 asks for the sizes a
#                   damaged header claims and reports the failure.
#   make install PREFIX=/usr/local   headers, libpetnet.so.X.Y.Z, lib/petnet/petnet-hdf5check (the HDF5 file check),
#                   petnet.pc, lib/petnet/conf/petnet_variables and petnet_rules (for makefiles that include PETSc's
#                   conf), the programs as PREFIX/bin/petnet-fashion, petnet-predict, ..., petnet-run (restarts a job
#                   from its last checkpoint, share/petnet-run); examples, models, meshes and
#                   the Python modules (PYTHONPATH=PREFIX/share/petnet/python) in share/petnet; make uninstall
#   PETSC_DIR, PETSC_ARCH, SLEPC_DIR pick the PETSc and SLEPc (default Debian's /usr/lib/petsc, /usr/lib/slepc)
#   make memcheck   valgrind (share/valgrind/openmpi.supp) on a short MLP and CNN training with save, checkpoint,
#                   restart and load, second-order, parallel modes and single/bfloat16 precision: no error and nothing definitely or indirectly lost (share/valgrind/memcheck)
PETSC_DIR  ?= /usr/lib/petsc
SLEPC_DIR  ?= /usr/lib/slepc
PETSC_ARCH ?=
# PETSc's configuration: a PETSc built in place keeps it under $(PETSC_DIR)/$(PETSC_ARCH), an installed one (Debian's,
# or configured with --prefix) under $(PETSC_DIR), and ignores PETSC_ARCH (as PETSc's own makefiles do)
PETSC_CONF := $(firstword $(wildcard $(if $(strip $(PETSC_ARCH)),$(PETSC_DIR)/$(PETSC_ARCH)/lib/petsc/conf/petscvariables) \
                                     $(PETSC_DIR)/lib/petsc/conf/petscvariables))
ifeq ($(PETSC_CONF),)
$(error no PETSc in PETSC_DIR=$(PETSC_DIR) PETSC_ARCH=$(PETSC_ARCH): set them to a configured PETSc (lib/petsc/conf/petscvariables))
endif
include $(PETSC_CONF)
# SLEPc's variables (they include PETSc's conf/variables): SLEPC_INCLUDE, SLEPC_LIB; and PETSc's PETSC_LIB
include $(SLEPC_DIR)/lib/slepc/conf/slepc_variables

CC       = mpicc
OPT     ?= -O3 -march=x86-64-v2
# OpenMP: the layers' loops run on the threads of one process (-net_threads; src/sys/threads.c). The library links
# libgomp (recorded as a NEEDED library of libpetnet.so, so programs linking -lpetnet need no flag); OPENMP= builds
# without (one thread, the pragmas ignored).
OPENMP  ?= -fopenmp
# -fno-math-errno: sqrt need not set errno, so the compiler vectorizes it (vsqrtpd, correctly rounded: the same bits as
# the scalar call); the vector versions of exp, tanh, ... (libmvec) stay off: they need -ffast-math.
CFLAGS  += $(OPT) -fno-math-errno -g -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-unknown-pragmas $(OPENMP)
CPPFLAGS = -Iinclude $(SLEPC_INCLUDE) $(PETSC_CC_INCLUDES)
# oneDNN (Debian's libdnnl-dev, share/setup.sh): the backend of the float GEMMs (src/sys/onednn.c, -net_backend onednn),
# built in when its header is found; ONEDNN=0 builds without it (PetNet's own GEMMs only, -net_backend onednn refused)
ONEDNN  ?= $(if $(wildcard /usr/include/dnnl.h),1,0)
ifeq ($(ONEDNN),1)
CPPFLAGS += -DPETNET_HAVE_ONEDNN
ONEDNN_LIB = -ldnnl
endif
# Each compile writes the headers it read (-MMD; -MP: a removed header is no error); the .d files are included below
DEPFLAGS = -MMD -MP
# The version is defined once, in include/petnetsys.h; the library is lib/libpetnet.so.X.Y.Z with soname libpetnet.so.X
petnet_version = $(shell sed -n 's/^.define PETNET_VERSION_$(1)  *\([0-9][0-9]*\).*/\1/p' include/petnetsys.h)
PETNET_VERSION := $(call petnet_version,MAJOR).$(call petnet_version,MINOR).$(call petnet_version,SUBMINOR)
PETNET_SONAME  := libpetnet.so.$(call petnet_version,MAJOR)
PETNET_SHLIB   := libpetnet.so.$(PETNET_VERSION)
PETNET_LIBDIR = $(CURDIR)/lib
# What libpetnet links: SLEPc's and PETSc's own link lines (with PETSc's external packages: BLAS/LAPACK, HDF5, MPI).
# SLEPC_LIB ends with PETSC_SNES_LIB, all of PETSc in a single-library PETSc (the default); else PETSC_LIB adds TS and TAO.
PETNET_EXTERNAL_LIB = $(SLEPC_LIB) $(if $(filter-out $(PETSC_SNES_LIB),$(PETSC_LIB)),$(PETSC_LIB)) $(HDF5_LIB) $(ONEDNN_LIB) -lz -lm
LDLIBS   = -Wl,-rpath,$(PETNET_LIBDIR) -L$(PETNET_LIBDIR) -lpetnet $(PETNET_EXTERNAL_LIB)

# src/sys/hdf5check/ is not the library's: it is petnet-hdf5check, the program PetNetCheckHDF5File() runs (below)
LIBSRC   = $(shell find src -name '*.c' -not -path 'src/sys/hdf5check/*' | sort)
LIBOBJ   = $(LIBSRC:%.c=build/%.o)
HEADERS  = $(shell find include src -name '*.h')
EXAMPLES = $(patsubst examples/%.c,bin/%,$(wildcard examples/*.c))
TESTS    = $(patsubst tests/%.c,bin/tests/%,$(wildcard tests/*.c))
BENCHES  = $(patsubst bench/%.c,bin/%,$(wildcard bench/*.c))
# the HDF5 file check (below): only with a PETSc that has HDF5
HDF5CHECK = $(if $(strip $(HDF5_LIB)),lib/petnet/petnet-hdf5check)
REPLAYS  = $(patsubst fuzz/fuzz_%.c,bin/fuzz/replay_%,$(wildcard fuzz/fuzz_*.c))

# With oneDNN, also a program built without it (bin/tests/netoptions_noonednn, below), for the tests of what such a build
# refuses and where it falls back
NOONEDNN = $(if $(filter 1,$(ONEDNN)),bin/tests/netoptions_noonednn)

all: lib/libpetnet.so $(HDF5CHECK) $(EXAMPLES) $(TESTS) $(BENCHES) $(REPLAYS) $(NOONEDNN)

build/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The library and its two names: the soname the programs record, and libpetnet.so for -lpetnet
lib/$(PETNET_SHLIB): $(LIBOBJ)
	@mkdir -p lib
	$(CC) -shared $(OPENMP) -Wl,-soname,$(PETNET_SONAME) -o $@ $(LIBOBJ) $(PETNET_EXTERNAL_LIB)

lib/libpetnet.so: lib/$(PETNET_SHLIB) $(HDF5CHECK)
	ln -sf $(PETNET_SHLIB) lib/$(PETNET_SONAME)
	ln -sf $(PETNET_SHLIB) $@

# petnet-hdf5check (src/sys/hdf5check/): the program PetNetCheckHDF5File() runs to walk an HDF5 file's headers under a
# guard-page allocator. It links HDF5 alone (PETSc's HDF5 and its MPI, never initialised) and lives beside the library
# in lib/petnet/, where the library finds it (the folder of the libpetnet.so it was loaded from, then this build's).
lib/petnet/petnet-hdf5check: src/sys/hdf5check/petnet-hdf5check.c src/sys/hdf5check/guardmalloc.c
	@mkdir -p lib/petnet build/deps/lib/petnet
	$(CC) $(HDF5_INCLUDE) $(filter-out $(OPENMP),$(CFLAGS)) $(BINDEPS) $(filter %.c,$^) -o $@ $(HDF5_LIB)
build/src/sys/hdf5check.o: CPPFLAGS += -DPETNET_HDF5CHECK_BUILD='"$(CURDIR)/lib/petnet/petnet-hdf5check"'

# Programs compile and link in one step; their header lists go to build/deps/ (BINDEPS). An example may have modules:
# examples/NAME/*.c (their headers beside them) compile to build/examples/NAME/*.o and link into bin/NAME (the list
# depends on the program's name: secondary expansion); a test that uses them names their objects as prerequisites
# (below), and every object among a program's prerequisites is linked into it.
.SECONDEXPANSION:
example_modules = $(patsubst %.c,build/%.o,$(wildcard examples/$(1)/*.c))
EXAMPLE_MODULE_OBJ = $(patsubst %.c,build/%.o,$(wildcard examples/*/*.c))
BINDEPS = -MMD -MP -MF build/deps/$@.d
bin/%: examples/%.c $$(call example_modules,$$*) lib/libpetnet.so
	@mkdir -p bin build/deps/bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BINDEPS) $< $(filter %.o,$^) -o $@ $(LDLIBS)

bin/bench_%: bench/bench_%.c lib/libpetnet.so
	@mkdir -p bin build/deps/bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BINDEPS) $< -o $@ $(LDLIBS)

bin/tests/%: tests/%.c lib/libpetnet.so
	@mkdir -p bin/tests build/deps/bin/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BINDEPS) $< $(filter %.o,$^) -o $@ $(LDLIBS)

# The example programs find libpetnet at $ORIGIN/../lib: lib/ beside bin/ in the build tree, and PREFIX/lib beside
# PREFIX/bin when installed (make install copies them as PREFIX/bin/petnet-NAME), so one binary serves both
$(EXAMPLES): LDLIBS = -Wl,-rpath,'$$ORIGIN/../lib' -L$(PETNET_LIBDIR) -lpetnet $(PETNET_EXTERNAL_LIB)
# bin/cosmo3d's fields (examples/cosmo3d/cosmo3dfields.c) are generated with FFTW's MPI transforms: PETSc's FFTW_LIB
# (empty when PETSc was configured without FFTW; the module then refuses to run and says so)
bin/tests/test_cosmo3dfields: $(call example_modules,cosmo3d)
bin/cosmo3d bin/tests/test_cosmo3dfields: LDLIBS += $(FFTW_LIB)
# bin/mesh_hybrid reuses bin/mesh_surrogate's mesh and P1 assembly (examples/mesh_surrogate/mesh.c); it and
# bin/hybrid_rd share their training machinery (examples/hybrid/fit.c)
bin/mesh_hybrid: $(call example_modules,mesh_surrogate) $(call example_modules,hybrid)
bin/hybrid_rd: $(call example_modules,hybrid)
# bin/vit reads Fashion-MNIST as bin/fashion does (examples/fashion/fashiondata.c)
bin/vit: $(call example_modules,fashion)
bin/tests/test_meshpartition: $(call example_modules,mesh_surrogate)

# PetNet without oneDNN in a build with it: src/sys/onednn.c, the one file that reads dnnl.h (no header depends on
# PETNET_HAVE_ONEDNN), compiled without it and linked with the library's other objects and tests/test_netoptions.c into
# one program (tests/onednn.suite, onednn_absent_*: -net_backend onednn refused, the default native)
NOONEDNN_OBJ = build/noonednn/src/sys/onednn.o $(filter-out build/src/sys/onednn.o,$(LIBOBJ))
build/noonednn/src/sys/onednn.o: src/sys/onednn.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -DPETNET_HAVE_ONEDNN,$(CPPFLAGS)) $(CFLAGS) $(DEPFLAGS) -c $< -o $@
bin/tests/netoptions_noonednn: tests/test_netoptions.c $(NOONEDNN_OBJ)
	@mkdir -p bin/tests build/deps/bin/tests
	$(CC) $(filter-out -DPETNET_HAVE_ONEDNN,$(CPPFLAGS)) $(CFLAGS) $(BINDEPS) $< $(NOONEDNN_OBJ) -o $@ $(filter-out -ldnnl,$(PETNET_EXTERNAL_LIB))

# A fuzz harness linked with fuzz/replay.c: runs the corpus and the regression inputs of its reader (tests/fuzz.suite).
# The .d file is the harness's (the last source); replay.c includes only fuzz.h, which the harness includes too.
bin/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c fuzz/fuzz.h lib/libpetnet.so
	@mkdir -p bin/fuzz build/deps/bin/fuzz
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BINDEPS) fuzz/replay.c $< -o $@ $(LDLIBS)

check: all
	@tests/run

# Fuzzing (make fuzz): see the header. The library's objects are instrumented and linked statically into each harness.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   ?=
FUZZ_HARNESS  = $(wildcard fuzz/fuzz_*.c)
FUZZ_TARGETS ?= $(patsubst fuzz/fuzz_%.c,%,$(FUZZ_HARNESS))
FUZZ_BINS     = $(patsubst fuzz/fuzz_%.c,bin/fuzz/fuzz_%,$(FUZZ_HARNESS))
FUZZ_OBJ      = $(LIBSRC:%.c=build-fuzz/%.o)
build-fuzz/src/sys/hdf5check.o: FUZZ_CPPFLAGS += -DPETNET_HDF5CHECK_BUILD='"$(CURDIR)/lib/petnet/petnet-hdf5check"'
FUZZ_MPI     := $(wordlist 2,1000,$(shell mpicc -show 2>/dev/null))
FUZZ_CFLAGS   = -g -O1 -fno-omit-frame-pointer -Wall -Wno-unknown-pragmas -Wno-unused-parameter -Wno-missing-field-initializers
FUZZ_CPPFLAGS = $(CPPFLAGS) $(filter -I%,$(FUZZ_MPI))
FUZZ_LDLIBS   = $(SLEPC_LIB) $(PETSC_LIB) $(filter -L%/hdf5/openmpi,$(PETSC_EXTERNAL_LIB_BASIC)) -lhdf5 $(ONEDNN_LIB) $(filter-out -I%,$(FUZZ_MPI)) -lz -lm
FUZZ_ENV      = ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated OMPI_MCA_btl=self OPENBLAS_NUM_THREADS=1

build-fuzz/%.o: %.c | fuzz-runtime
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link,address -c $< -o $@

bin/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJ) $(HDF5CHECK) | fuzz-runtime
	@mkdir -p bin/fuzz
	@mkdir -p build-fuzz/deps/bin/fuzz
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -MF build-fuzz/deps/$@.d -fsanitize=fuzzer,address $< $(FUZZ_OBJ) -o $@ $(FUZZ_LDLIBS)

# libFuzzer's runtime is in libclang-rt-14-dev, which make check does not need: say how to get it
fuzz-runtime:
	@mkdir -p build-fuzz; echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
	  $(FUZZ_CC) -fsanitize=fuzzer,address -x c - -o build-fuzz/probe >/dev/null 2>&1 || \
	  { echo "make fuzz: $(FUZZ_CC) cannot link libFuzzer (-fsanitize=fuzzer,address): install it with"; \
	    echo "  sudo apt-get install clang libclang-rt-14-dev"; exit 1; }

fuzz-build: $(FUZZ_BINS)

# Each target in turn, FUZZ_SECONDS each; lists what crashed and fails if anything did
fuzz: fuzz-build
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t fuzz/regress/$$t fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s (log build-fuzz/$$t.log)"; \
	  $(FUZZ_ENV) bin/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -detect_leaks=0 -timeout=10 -rss_limit_mb=4096 \
	    -artifact_prefix=fuzz/regress/$$t/ $(FUZZ_FLAGS) build-fuzz/corpus/$$t fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1 \
	    || { failed="$$failed $$t"; grep -E "^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" build-fuzz/$$t.log; }; \
	  grep -E "^Done|^#[0-9]+.*(DONE|pulse)" build-fuzz/$$t.log | tail -1; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashes in$$failed: inputs in fuzz/regress/<name>/ (replay: bin/fuzz/fuzz_<name> FILE)"; exit 1; fi; \
	echo "fuzz: no crash in $(FUZZ_TARGETS)"

memcheck: all
	@share/valgrind/memcheck

# The main job: train the MLP on the packaged Fashion-MNIST and print the test accuracy
fashion: all
	bin/fashion -options_file share/models/mlp.opts $(FASHION_OPTIONS)

bench: all
	@share/bench/run

format-check:
	@clang-format --dry-run --Werror $(LIBSRC) src/sys/hdf5check/*.c $(HEADERS) examples/*.c $(wildcard examples/*/*.[ch]) tests/*.c tests/*.h tests/install/*.c bench/*.c fuzz/*.c fuzz/*.h && echo "format: ok"

format:
	@clang-format -i $(LIBSRC) src/sys/hdf5check/*.c $(HEADERS) examples/*.c $(wildcard examples/*/*.[ch]) tests/*.c tests/*.h tests/install/*.c bench/*.c fuzz/*.c fuzz/*.h

docs:
	@python3 share/docs/manpages.py

# The manual's image of the training curves (docs/manual/training.md), written on purpose and committed by hand; the
# manual's own command writes mlp_curves.png in the working directory instead
docs-images: all
	bin/fashion -options_file share/models/mlp.opts -trainer_monitor ascii -trainer_monitor_plot share/docs/mlp_curves.png

# make install PREFIX=... (default /usr/local; DESTDIR for staging): as a PETSc package is installed.
#   include/                    the public headers; include/petnet/private/ the implementation headers (as PETSc's petsc/private/)
#   lib/libpetnet.so.X.Y.Z      with soname libpetnet.so.X, and the links libpetnet.so.X and libpetnet.so
#   lib/pkgconfig/petnet.pc     Requires: PETSc, SLEPc (SLEPc's flags in Cflags/Libs when pkg-config has no SLEPc).
#                               petnet.h itself needs PETSc's flags alone (a plain PETSc makefile with -IPREFIX/include
#                               and -lpetnet builds against it); SLEPc's are for petnetspectrum.h, which it leaves out
#   lib/petnet/petnet-hdf5check the HDF5 header check PetNetCheckHDF5File() runs (found beside the library)
#   lib/petnet/conf/            petnet_variables and petnet_rules, for makefiles that include PETSc's conf (docs/manual/getting-started.md)
#   bin/petnet-NAME             the example programs (bin/fashion as petnet-fashion, bin/predict as petnet-predict, ...),
#                               which find libpetnet in ../lib and, through PetNetInitialize(), a relative
#                               -options_file share/models/X.opts in share/petnet/models (PetNetGetDataFile())
#   share/petnet/               the examples' sources (examples/), the model files (models/) and meshes (meshes/)
#   share/petnet/python/        the Python modules (share/python/*.py: petnet, over ../../../lib/libpetnet.so): PYTHONPATH
#   share/man/man3/NAME.3       one man page per public function (share/docs/manpages.py --man): MANPATH=PREFIX/share/man
PREFIX  ?= /usr/local
comma := ,
DESTDIR ?=
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
# SLEPc's pkg-config file, if pkg-config finds it (with SLEPc's own lib/pkgconfig on the path)
SLEPC_PC := $(shell PKG_CONFIG_PATH=$(SLEPC_LIB_DIR)/pkgconfig:$$PKG_CONFIG_PATH pkg-config --exists SLEPc 2>/dev/null && echo SLEPc)

install: lib/libpetnet.so $(EXAMPLES)
	install -d $(INSTALL_ROOT)/include/petnet/private $(INSTALL_ROOT)/lib/pkgconfig $(INSTALL_ROOT)/lib/petnet/conf \
	  $(INSTALL_ROOT)/share/petnet/examples $(INSTALL_ROOT)/share/petnet/models $(INSTALL_ROOT)/share/petnet/python \
	  $(INSTALL_ROOT)/share/petnet/meshes $(INSTALL_ROOT)/bin
	for p in $(notdir $(EXAMPLES)); do install -m 755 bin/$$p $(INSTALL_ROOT)/bin/petnet-$$p || exit 1; done
	install -m 755 share/petnet-run $(INSTALL_ROOT)/bin/petnet-run
	install -m 644 share/meshes/* $(INSTALL_ROOT)/share/petnet/meshes
	install -m 644 include/*.h $(INSTALL_ROOT)/include
	install -m 644 include/petnet/private/*.h $(INSTALL_ROOT)/include/petnet/private
	install -m 755 lib/$(PETNET_SHLIB) $(INSTALL_ROOT)/lib
	$(if $(HDF5CHECK),install -m 755 $(HDF5CHECK) $(INSTALL_ROOT)/lib/petnet)
	ln -sf $(PETNET_SHLIB) $(INSTALL_ROOT)/lib/$(PETNET_SONAME)
	ln -sf $(PETNET_SHLIB) $(INSTALL_ROOT)/lib/libpetnet.so
	install -m 644 examples/*.c $(INSTALL_ROOT)/share/petnet/examples
	for d in $(sort $(patsubst %/,%,$(dir $(wildcard examples/*/*.c)))); do \
	  install -d $(INSTALL_ROOT)/share/petnet/$$d && install -m 644 $$d/*.[ch] $(INSTALL_ROOT)/share/petnet/$$d || exit 1; done
	install -m 644 share/models/* $(INSTALL_ROOT)/share/petnet/models
	install -m 644 share/python/*.py $(INSTALL_ROOT)/share/petnet/python
	@echo "write $(INSTALL_ROOT)/lib/pkgconfig/petnet.pc"
	@{ echo "prefix=$(PREFIX)"; echo 'includedir=$${prefix}/include'; echo 'libdir=$${prefix}/lib'; echo; \
	  echo "Name: PetNet"; echo "Description: Deep learning on PETSc"; echo "Version: $(PETNET_VERSION)"; \
	  echo "Requires: PETSc >= 3.18$(if $(SLEPC_PC),$(comma) SLEPc >= 3.18)"; \
	  echo 'Cflags: -I$${includedir}$(if $(SLEPC_PC),, $(SLEPC_INCLUDE))'; \
	  echo 'Libs: -L$${libdir} -lpetnet$(if $(SLEPC_PC),, -L$(SLEPC_LIB_DIR) $(filter -lslepc%,$(SLEPC_LIB)))'; \
	  echo "Libs.private: -lz -lm"; } > $(INSTALL_ROOT)/lib/pkgconfig/petnet.pc
	@echo "write $(INSTALL_ROOT)/lib/petnet/conf/petnet_variables"
	@sed -e 's|@PETNET_DIR@|$(PREFIX)|' -e 's|@PETNET_VERSION@|$(PETNET_VERSION)|' -e 's|@SLEPC_DIR@|$(SLEPC_DIR)|' \
	  share/conf/petnet_variables.in > $(INSTALL_ROOT)/lib/petnet/conf/petnet_variables
	install -m 644 share/conf/petnet_rules $(INSTALL_ROOT)/lib/petnet/conf
	@rm -rf build/man3 && python3 share/docs/manpages.py --man build/man3
	install -d $(INSTALL_ROOT)/share/man/man3
	install -m 644 build/man3/*.3 $(INSTALL_ROOT)/share/man/man3

uninstall:
	@rm -rf build/man3 && python3 share/docs/manpages.py --man build/man3 > /dev/null
	cd build/man3 && for p in *.3; do rm -f $(INSTALL_ROOT)/share/man/man3/$$p; done
	rm -f $(addprefix $(INSTALL_ROOT)/include/,$(notdir $(wildcard include/*.h)))
	rm -rf $(INSTALL_ROOT)/include/petnet $(INSTALL_ROOT)/lib/petnet $(INSTALL_ROOT)/share/petnet
	rm -f $(addprefix $(INSTALL_ROOT)/bin/petnet-,$(notdir $(EXAMPLES)))
	rm -f $(INSTALL_ROOT)/bin/petnet-run
	rm -f $(INSTALL_ROOT)/lib/$(PETNET_SHLIB) $(INSTALL_ROOT)/lib/$(PETNET_SONAME) $(INSTALL_ROOT)/lib/libpetnet.so \
	  $(INSTALL_ROOT)/lib/pkgconfig/petnet.pc

clean:
	rm -rf build build-fuzz lib bin tests/out

# The headers each object and program read (written by -MMD at its last build)
-include $(shell find build build-fuzz -name '*.d' 2>/dev/null)

.PHONY: all check fashion bench format format-check docs docs-images clean install uninstall fuzz fuzz-build fuzz-runtime memcheck
.SECONDARY: $(LIBOBJ) $(FUZZ_OBJ) $(EXAMPLE_MODULE_OBJ)
