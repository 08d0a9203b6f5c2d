/*
  bin/charlm's corpus (examples/charlm.c): the text files of a folder or one file, read on rank 0 and broadcast. A module
  of its own so that the fuzz harness fuzz/fuzz_corpus.c runs the same reader.

    train  [ntrain]  bytes of the train files, concatenated in sorted order; val [nval] the held-out files' bytes
    ids    id[b]     0 for a byte absent from the train text, else 1 + its rank among the train text's distinct bytes
*/
#ifndef CHARLM_CORPUS_H
#define CHARLM_CORPUS_H
#include <petscsys.h>

#define CHARLM_MSG 1024

/* The largest text charlm holds: sizes are PetscInt (and MPI counts, int) */
#define CHARLM_MAX_BYTES ((PetscInt64)PETSC_MAX_INT - 1)

typedef struct {
  unsigned char *train, *val; /* the texts, on every rank */
  PetscInt       ntrain, nval;
  PetscInt       V;         /* ids: 0 unknown, 1..V-1 the train text's bytes */
  PetscInt       id[256];   /* byte -> id */
  unsigned char  byte[256]; /* id -> byte (byte[0] = '?') */
  PetscInt       nfiles, nvalfiles;
} Corpus;

/* Rank 0 (or one process): the texts of path, or the reason they are refused in msg[CHARLM_MSG] (nothing raised) */
PetscErrorCode CharLMCorpusReadLocal(const char *, Corpus *, char[]);
/* Every rank of comm: the texts read on rank 0 and broadcast, and the vocabulary; windows of T + 1 characters must fit */
PetscErrorCode CharLMCorpusRead(MPI_Comm, const char *, PetscInt, Corpus *);
PetscErrorCode CharLMCorpusDestroy(Corpus *);
#endif
