/* bin/charlm's corpus reader: see corpus.h */
#include "corpus.h"
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------------------------------------------- */
/* The corpus: read on rank 0, refused there with a message every rank then raises */

/* A file is text when it has no NUL byte and at most 1% of its bytes are control characters other than tab, newline,
   carriage return, form feed, vertical tab, backspace, bell and escape (fortune files use backspace overstrikes) */
static PetscBool IsText(const unsigned char *b, PetscInt64 n)
{
  PetscInt64 ctrl = 0;

  for (PetscInt64 i = 0; i < n; i++) {
    if (!b[i]) return PETSC_FALSE;
    if ((b[i] < 32 && !strchr("\t\n\r\f\v\b\a\x1b", b[i])) || b[i] == 127) ctrl++;
  }
  return (PetscBool)(100 * ctrl <= n);
}

/* Reads the size bytes of `path` (its size when it was listed) into buf; a file that delivers fewer (a truncated read:
   it shrank after it was listed, or its file system reports a size it does not hold) or that is not text is refused
   in msg */
static PetscErrorCode ReadFile(const char *path, const char *option, PetscInt64 size, unsigned char *buf, char msg[])
{
  FILE      *fp  = fopen(path, "rb");
  PetscInt64 got = 0;

  PetscFunctionBegin;
  if (!fp) {
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus file %s (%s) cannot be opened (%s): check its permissions", path, option, strerror(errno)));
    PetscFunctionReturn(0);
  }
  while (got < size) { /* fread may return less than asked before the end (signals, pipes): read on until 0 */
    size_t n = fread(buf + got, 1, (size_t)(size - got), fp);

    if (!n) break;
    got += (PetscInt64)n;
  }
  fclose(fp);
  if (got != size)
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG,
                            "The corpus file %s (%s) ended after %" PetscInt64_FMT " of its %" PetscInt64_FMT
                            " bytes, a truncated read (the file shrank while it was read, or its file system reports a size it does not deliver): give a regular text file that is not being written",
                            path, option, got, size));
  else if (!IsText(buf, size))
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus file %s (%s) is not text (a NUL byte, or more than 1%% control characters): give a text file, or a folder of text files", path, option));
  PetscFunctionReturn(0);
}

/* Adds the size of the file `path` (stat, 64 bits) to *len, the text it joins, or refuses it in msg: missing, empty,
   or growing the text past CHARLM_MAX_BYTES. Nothing is allocated or read here. */
static PetscErrorCode AddFileSize(const char *path, const char *option, PetscInt64 *size, PetscInt64 *len, char msg[])
{
  struct stat st;

  PetscFunctionBegin;
  if (stat(path, &st)) {
    PetscCall(
        PetscSNPrintf(msg, CHARLM_MSG, "The corpus file %s (%s) cannot be read (%s): give an existing text file or folder, e.g. -charlm_corpus /usr/share/games/fortunes (share/setup.sh installs the package fortunes)", path, option, strerror(errno)));
    PetscFunctionReturn(0);
  }
  *size = (PetscInt64)st.st_size;
  if (*size == 0) {
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus file %s (%s) is empty: give a file with text in it", path, option));
    PetscFunctionReturn(0);
  }
  if (*size > CHARLM_MAX_BYTES - *len) { /* written so that nothing overflows: *len <= CHARLM_MAX_BYTES, size < 2^63 */
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus grows to more than %" PetscInt64_FMT " bytes, the largest text a PetscInt counts, with %s (%s: %" PetscInt64_FMT " bytes after %" PetscInt64_FMT "): give a smaller corpus", CHARLM_MAX_BYTES,
                            path, option, *size, *len));
    PetscFunctionReturn(0);
  }
  *len += *size;
  PetscFunctionReturn(0);
}

static int CompareNames(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The text files of the folder `path` in sorted order (not hidden, not .dat/.u8, not symlinks or folders) */
static PetscErrorCode ListFolder(const char *path, PetscInt *n, char ***names)
{
  DIR           *dir = opendir(path);
  struct dirent *e;
  PetscInt       cap = 0;

  PetscFunctionBegin;
  PetscCheck(dir, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot open the corpus folder %s (-charlm_corpus)", path);
  *n     = 0;
  *names = NULL;
  while ((e = readdir(dir))) {
    char        file[PETSC_MAX_PATH_LEN];
    size_t      l = strlen(e->d_name);
    struct stat lst;

    if (e->d_name[0] == '.') continue;
    if ((l > 4 && !strcmp(e->d_name + l - 4, ".dat")) || (l > 3 && !strcmp(e->d_name + l - 3, ".u8"))) continue; /* strfile's index and UTF-8 links */
    PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s", path, e->d_name));
    if (lstat(file, &lst) || !S_ISREG(lst.st_mode)) continue; /* symlinks (the .u8 names), folders */
    if (*n == cap) {
      char **grown;

      cap = cap ? 2 * cap : 64;
      PetscCall(PetscCalloc1(cap, &grown));
      if (*n) PetscCall(PetscArraycpy(grown, *names, *n));
      PetscCall(PetscFree(*names));
      *names = grown;
    }
    PetscCall(PetscStrallocpy(e->d_name, &(*names)[(*n)++]));
  }
  closedir(dir);
  if (*n) qsort(*names, (size_t)*n, sizeof(char *), CompareNames);
  PetscFunctionReturn(0);
}

/*
  Rank 0: the train and validation texts of `path` (a folder or a file), in two passes: every file's size first (stat,
  summed in 64 bits and checked against CHARLM_MAX_BYTES), then one allocation per text and the reads. So a corpus too
  large is refused before a byte is allocated or read, and a file that delivers fewer bytes than its size is named.
*/
PetscErrorCode CharLMCorpusReadLocal(const char *path, Corpus *c, char msg[])
{
  const char *option = "-charlm_corpus";
  struct stat st;
  PetscInt64  ntrain = 0, nval = 0, *size = NULL;
  PetscInt    n     = 0;
  char      **names = NULL, file[PETSC_MAX_PATH_LEN];
  PetscBool   folder;

  PetscFunctionBegin;
  if (stat(path, &st)) {
    PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus %s (-charlm_corpus) does not exist (%s): give a folder of text files or a text file (share/setup.sh installs the package fortunes, /usr/share/games/fortunes)", path, strerror(errno)));
    PetscFunctionReturn(0);
  }
  folder = S_ISDIR(st.st_mode) ? PETSC_TRUE : PETSC_FALSE;
  if (folder) {
    PetscCall(ListFolder(path, &n, &names));
    if (n < 2)
      PetscCall(PetscSNPrintf(msg, CHARLM_MSG, "The corpus folder %s (-charlm_corpus) holds %" PetscInt_FMT " text file(s) (not counting .dat, .u8 and symlinks): it needs 2 or more, one of them held out for validation; or give one FILE", path, n));
  } else
    n = 1;
  PetscCall(PetscCalloc1(n, &size));
  /* pass 1: the sizes (file i is held out when i % 10 == 9, or the last of fewer than 10; a single file is split) */
  for (PetscInt i = 0; i < n && !msg[0]; i++) {
    PetscBool isval = (PetscBool)(folder && (n >= 10 ? i % 10 == 9 : i == n - 1));

    if (folder) PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s", path, names[i]));
    PetscCall(AddFileSize(folder ? file : path, option, &size[i], isval ? &nval : &ntrain, msg));
  }
  /* pass 2: the texts */
  if (!msg[0]) {
    PetscInt64 at[2] = {0, 0}; /* where the next train, validation file goes */

    PetscCall(PetscMalloc1(ntrain, &c->train));
    if (folder) PetscCall(PetscMalloc1(nval, &c->val));
    for (PetscInt i = 0; i < n && !msg[0]; i++) {
      PetscBool isval = (PetscBool)(folder && (n >= 10 ? i % 10 == 9 : i == n - 1));

      if (folder) PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s", path, names[i]));
      PetscCall(ReadFile(folder ? file : path, option, size[i], (isval ? c->val : c->train) + at[isval], msg));
      at[isval] += size[i];
      c->nvalfiles += isval;
    }
    c->nfiles = n;
    if (!folder && !msg[0]) { /* one file: its last tenth is the validation text */
      nval = ntrain / 10;
      ntrain -= nval;
      PetscCall(PetscMalloc1(nval, &c->val));
      PetscCall(PetscArraycpy(c->val, c->train + ntrain, nval));
    }
  }
  for (PetscInt i = 0; folder && i < n; i++) PetscCall(PetscFree(names[i]));
  PetscCall(PetscFree(names));
  PetscCall(PetscFree(size));
  c->ntrain = (PetscInt)ntrain;
  c->nval   = (PetscInt)nval;
  PetscFunctionReturn(0);
}

/* Every rank: the texts (read on rank 0, broadcast) and the vocabulary; windows of T + 1 characters must fit */
PetscErrorCode CharLMCorpusRead(MPI_Comm comm, const char *path, PetscInt T, Corpus *c)
{
  PetscMPIInt rank;
  char        msg[CHARLM_MSG] = "";
  PetscInt    sizes[4];

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (!rank) PetscCall(CharLMCorpusReadLocal(path, c, msg));
  PetscCallMPI(MPI_Bcast(msg, CHARLM_MSG, MPI_CHAR, 0, comm));
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  sizes[0] = c->ntrain;
  sizes[1] = c->nval;
  sizes[2] = c->nfiles;
  sizes[3] = c->nvalfiles;
  PetscCallMPI(MPI_Bcast(sizes, 4, MPIU_INT, 0, comm));
  c->ntrain    = sizes[0];
  c->nval      = sizes[1];
  c->nfiles    = sizes[2];
  c->nvalfiles = sizes[3];
  PetscCheck(c->ntrain > T + 1 && c->nval > T + 1, comm, PETSC_ERR_ARG_SIZ,
             "The corpus %s (-charlm_corpus) has %" PetscInt_FMT " train and %" PetscInt_FMT " validation characters, but a window needs %" PetscInt_FMT " + 1: give a longer text or a shorter -charlm_context", path, c->ntrain, c->nval, T);
  if (rank) PetscCall(PetscMalloc2(c->ntrain, &c->train, c->nval, &c->val));
  PetscCallMPI(MPI_Bcast(c->train, (PetscMPIInt)c->ntrain, MPI_UNSIGNED_CHAR, 0, comm));
  PetscCallMPI(MPI_Bcast(c->val, (PetscMPIInt)c->nval, MPI_UNSIGNED_CHAR, 0, comm));
  {
    PetscBool seen[256] = {PETSC_FALSE};

    for (PetscInt i = 0; i < c->ntrain; i++) seen[c->train[i]] = PETSC_TRUE;
    c->V       = 1;
    c->byte[0] = '?';
    for (PetscInt b = 0; b < 256; b++) {
      c->id[b] = seen[b] ? c->V : 0;
      if (seen[b]) c->byte[c->V++] = (unsigned char)b;
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode CharLMCorpusDestroy(Corpus *c)
{
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank)
    PetscCall(PetscFree2(c->train, c->val));
  else {
    PetscCall(PetscFree(c->train));
    PetscCall(PetscFree(c->val));
  }
  PetscFunctionReturn(0);
}
