/*
  Fuzz harness: bin/charlm's corpus reader (examples/charlm/corpus.c, compiled into the harness: the reader is an
  example's module, not the library's) through CharLMCorpusReadLocal(), on one process.

  Input layout: byte 0 = mode; bit 0 clear: the rest is one corpus file (split at nine tenths); bit 0 set: the rest is
  cut at each byte 0x1e (ASCII's record separator) into at most 16 files of a folder, named f00, f01, ... in that
  order (every 10th held out, or the last of fewer than 10), an empty piece an empty file.
*/
#include "fuzz.h"
#include "../examples/charlm/corpus.c"

#define FUZZ_CORPUS_FILES 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  Corpus c;
  char   msg[CHARLM_MSG] = "", path[PETSC_MAX_PATH_LEN], file[PETSC_MAX_PATH_LEN + 8];
  int    nfiles          = 0;

  if (FuzzInitialize()) return 0;
  if (size < 1 || size > 65536) return 0;
  memset(&c, 0, sizeof(c));
  if (!(data[0] & 1)) {
    if (FuzzWriteFile(data + 1, size - 1, "-corpus.txt", sizeof(path), path)) return 0;
  } else {
    size_t start = 1;

    if (PetscSNPrintf(path, sizeof(path), "/tmp/petnet-fuzz-%d-corpus", (int)getpid())) return 0;
    (void)mkdir(path, 0700);
    for (size_t i = 1; i <= size; i++) { /* piece [start, i) ends at a separator, or at the end (the last file takes the rest) */
      FILE *f;
      int   bad;

      if (i < size && !(data[i] == 0x1e && nfiles < FUZZ_CORPUS_FILES - 1)) continue;
      if (PetscSNPrintf(file, sizeof(file), "%s/f%02d", path, nfiles) || !(f = fopen(file, "wb"))) break;
      bad = i > start && fwrite(data + start, 1, i - start, f) != i - start;
      fclose(f);
      nfiles++;
      if (bad) break;
      start = i + 1;
    }
  }
  (void)CharLMCorpusReadLocal(path, &c, msg); /* a refusal (msg) or an error is the expected outcome of most inputs */
  (void)PetscFree(c.train);
  (void)PetscFree(c.val);
  for (int i = 0; i < nfiles; i++) {
    if (!PetscSNPrintf(file, sizeof(file), "%s/f%02d", path, i)) (void)unlink(file);
  }
  if (data[0] & 1) (void)rmdir(path);
  return 0;
}
