# PetNet makefile: builds lib/libpetnet.so, the examples in bin/, and runs the tests.
#   make            library and examples
#   make check      build everything and run the whole test suite (last line: "N passed, N failed")
#   make fashion    train the MLP on Fashion-MNIST (share/models/mlp.opts) and print the test accuracy
#   make bench      throughput benchmarks (PyTorch side by side when python3-torch is installed)
#   make format-check   clang-format check
#   make docs       API reference from the manual pages into docs/api/ (share/docs/manpages.py; --check lists missing pages)
PETSC_DIR  ?= /usr/lib/petsc
SLEPC_DIR  ?= /usr/lib/slepc
PETSC_ARCH ?=
include $(PETSC_DIR)/lib/petsc/conf/petscvariables

CC       = mpicc
OPT     ?= -O3 -march=x86-64-v2
CFLAGS  += $(OPT) -g -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
CPPFLAGS = -Iinclude $(PETSC_CC_INCLUDES) -I$(SLEPC_DIR)/include
PETNET_LIBDIR = $(CURDIR)/lib
LDLIBS   = -Wl,-rpath,$(PETNET_LIBDIR) -L$(PETNET_LIBDIR) -lpetnet $(PETSC_LIBS_ONLY) -lz -lm
PETSC_LIBS_ONLY = -Wl,-rpath,$(PETSC_DIR)/lib -L$(PETSC_DIR)/lib -lpetsc_real -L$(SLEPC_DIR)/lib -Wl,-rpath,$(SLEPC_DIR)/lib -lslepc_real -llapack -lblas

LIBSRC   = $(shell find src -name '*.c' | sort)
LIBOBJ   = $(LIBSRC:%.c=build/%.o)
HEADERS  = $(shell find include src -name '*.h')
EXAMPLES = $(patsubst examples/%.c,bin/%,$(wildcard examples/*.c))
TESTS    = $(patsubst tests/%.c,bin/tests/%,$(wildcard tests/*.c))
BENCHES  = $(patsubst bench/%.c,bin/%,$(wildcard bench/*.c))
REPLAYS  = $(patsubst fuzz/fuzz_%.c,bin/fuzz/replay_%,$(wildcard fuzz/fuzz_*.c))

all: lib/libpetnet.so $(EXAMPLES) $(TESTS) $(BENCHES) $(REPLAYS)

build/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

lib/libpetnet.so: $(LIBOBJ)
	@mkdir -p lib
	$(CC) -shared -o $@ $(LIBOBJ) $(PETSC_LIBS_ONLY) $(HDF5_LIB) -lz -lm

bin/%: examples/%.c lib/libpetnet.so $(HEADERS)
	@mkdir -p bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDLIBS)

bin/bench_%: bench/bench_%.c lib/libpetnet.so $(HEADERS)
	@mkdir -p bin
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDLIBS)

bin/tests/%: tests/%.c lib/libpetnet.so $(HEADERS) $(wildcard tests/*.h)
	@mkdir -p bin/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDLIBS)

# A fuzz harness linked with fuzz/replay.c: runs the corpus and the regression inputs of its reader (tests/fuzz.suite)
bin/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c fuzz/fuzz.h lib/libpetnet.so $(HEADERS)
	@mkdir -p bin/fuzz
	$(CC) $(CPPFLAGS) $(CFLAGS) fuzz/replay.c $< -o $@ $(LDLIBS)

check: all
	@tests/run

# The main job: train the MLP on the packaged Fashion-MNIST and print the test accuracy
fashion: all
	bin/fashion -options_file share/models/mlp.opts $(FASHION_OPTIONS)

bench: all
	@share/bench/run

format-check:
	@clang-format --dry-run --Werror $(LIBSRC) $(HEADERS) examples/*.c tests/*.c tests/*.h bench/*.c fuzz/*.c fuzz/*.h && echo "format: ok"

format:
	@clang-format -i $(LIBSRC) $(HEADERS) examples/*.c tests/*.c tests/*.h bench/*.c fuzz/*.c fuzz/*.h

docs:
	@python3 share/docs/manpages.py

clean:
	rm -rf build lib bin tests/out

.PHONY: all check fashion bench format format-check docs clean
.SECONDARY: $(LIBOBJ)
