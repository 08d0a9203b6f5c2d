/*
  Fuzz harnesses of PetNet's readers. Each fuzz/fuzz_<reader>.c defines

    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)

  which hands the bytes to one reader (through a file when the reader reads files: FuzzWriteFile()) and returns 0
  whether the reader accepts the input or refuses it with a PETSc error. What a harness must never see is a crash, a
  hang, a leak on the success path or a read out of bounds: those are the bugs. The same harness links with

    - clang -fsanitize=fuzzer,address (make fuzz): libFuzzer explores inputs from fuzz/corpus/<reader>/;
    - fuzz/replay.c (make check): a plain main() that runs every file of fuzz/corpus/<reader>/ and of
      fuzz/regress/<reader>/ (inputs that once crashed, kept as regression tests) through the harness.

  PETSc is initialised once (FuzzInitialize()); PETSc errors return to the harness instead of aborting
  (PetscReturnErrorHandler), so one refused input does not end the run, and signals (SEGV, FPE) go to libFuzzer,
  not PETSc's handler, so that a crashing input is written to fuzz/regress/<reader>/.
*/
#pragma once

#include <petnet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* PETSc up, errors returned quietly; idempotent */
static inline PetscErrorCode FuzzInitialize(void)
{
  static int done = 0;

  if (done) return 0;
  done = 1;
  PetscCall(PetscInitializeNoArguments());
  PetscCall(PetscPopSignalHandler()); /* a crash must reach libFuzzer, which keeps the input; PETSc's handler would abort */
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  PetscCall(PetNetInitializePackage());
  return 0;
}

/* The temporary files of this process (one per suffix; a harness writes at most a few), removed at exit */
static char fuzz_tmpfiles[8][PETSC_MAX_PATH_LEN];

static inline void FuzzRemoveFiles(void)
{
  for (int i = 0; i < 8; i++)
    if (fuzz_tmpfiles[i][0]) (void)unlink(fuzz_tmpfiles[i]);
}

/* Writes the input to a private temporary file whose name ends in suffix (".gz", ".h5", ...): name[] receives it. The
   file is removed when the process exits. */
static inline PetscErrorCode FuzzWriteFile(const uint8_t *data, size_t size, const char suffix[], size_t len, char name[])
{
  FILE *f;
  int   i;

  PetscCall(PetscSNPrintf(name, len, "/tmp/petnet-fuzz-%d%s", (int)getpid(), suffix));
  for (i = 0; i < 8 && fuzz_tmpfiles[i][0] && strcmp(fuzz_tmpfiles[i], name); i++) {}
  if (i < 8 && !fuzz_tmpfiles[i][0]) {
    if (i == 0) (void)atexit(FuzzRemoveFiles);
    PetscCall(PetscStrncpy(fuzz_tmpfiles[i], name, sizeof(fuzz_tmpfiles[i])));
  }
  f = fopen(name, "wb");
  if (!f) return PETSC_ERR_FILE_OPEN;
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return PETSC_ERR_FILE_WRITE;
  }
  fclose(f);
  return 0;
}

/* The end every dataset harness shares: set up the configured Dataset (ierr: how configuring it went), read its first
   batch, destroy it. Errors are the expected outcome of most inputs and are dropped. */
static inline PetscErrorCode FuzzDatasetRead(Dataset *ds, PetscErrorCode ierr)
{
  Vec X, T;

  if (!ierr) ierr = DatasetSetUp(*ds);
  if (!ierr) ierr = DatasetGetBatch(*ds, 0, &X, &T);
  DatasetDestroy(ds);
  return ierr;
}
