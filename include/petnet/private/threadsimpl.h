/*
  Threads inside one process (src/sys/threads.c: PetNetSetNumThreads(), -net_threads): the layers' loops run over
  batch chunks with OpenMP, and BLAS is called single-threaded from each thread.

  Results do not depend on the thread count. Work is cut into parts that depend only on the problem's size (never on
  the number of threads): PetNetThreadParts() says how many, PetNetThreadPart() where part i starts and ends. Threads
  take whole parts; a part runs the same calls in the same order whoever runs it. Where parts add into one result
  (weight gradients, batch statistics), each part accumulates into its own buffer and the buffers are summed in part
  order after the loop, by one thread. So a run with 1 thread computes exactly what a run with 2 or 8 threads computes.

  Loops over parts are scheduled dynamically (schedule(dynamic, 1)) and elementwise loops guided, never statically:
  on a machine shared with other jobs a thread may lose its core in the middle of a loop, and the others then take
  the parts it has not started. The parts, not the schedule, fix the results.

  Inside a parallel region call no PETSc function that may log, allocate or raise an error (PetscCall, PetscMalloc,
  PetscLogFlops): the kernels there are plain loops and BLAS calls; the region records an error code, and the caller
  checks it after the region (PetNetThreadsCheck()).
*/
#pragma once

#include <petscvec.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

/* the most parts a batch is cut into: up to this many threads share a layer's work */
#define PETNET_THREAD_PARTS 8

/* the threads PetNet's loops use (PetNetSetNumThreads(); 1 before any is set and without OpenMP); exported so that a
   layer kind outside the library can use PetNetThreads() too */
PETSC_EXTERN int PetNetThreads_Private;

static inline int PetNetThreads(void)
{
  return PetNetThreads_Private;
}

/* parts of a range of n items, each of at least minsize items (but one part when n < 2 minsize), at most PETNET_THREAD_PARTS */
static inline PetscInt PetNetThreadParts(PetscInt n, PetscInt minsize)
{
  PetscInt parts = n / PetscMax(minsize, 1);

  return PetscMax(1, PetscMin(parts, PETNET_THREAD_PARTS));
}

/* part i of nparts of a range of n items: [*start, *end), sizes differing by at most one */
static inline void PetNetThreadPart(PetscInt n, PetscInt nparts, PetscInt i, PetscInt *start, PetscInt *end)
{
  *start = (PetscInt)(((PetscInt64)n * i) / nparts);
  *end   = (PetscInt)(((PetscInt64)n * (i + 1)) / nparts);
}

/* CALL (a statement on the range [i0, i1)) on the parts of N entries of at least MINSIZE each, on PetNet's threads when
   there are several; one part runs without a parallel region (which would set up a team even when not parallel, and in
   which a function compiled for several targets would lose its wider loop). The parts depend on N alone: elementwise
   work gives the same bits at any thread count. */
#define PETNET_THREAD_BLOCKS(N, MINSIZE, CALL)                                                                                 \
  do {                                                                                                                         \
    const PetscInt nblocks_ = PetNetThreadParts((N), (MINSIZE));                                                               \
    if (nblocks_ == 1) {                                                                                                       \
      const PetscInt i0 = 0, i1 = (N);                                                                                         \
      CALL;                                                                                                                    \
    } else {                                                                                                                   \
      _Pragma("omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1)") for (PetscInt b_ = 0; b_ < nblocks_; b_++) \
      {                                                                                                                        \
        PetscInt i0, i1;                                                                                                       \
        PetNetThreadPart((N), nblocks_, b_, &i0, &i1);                                                                         \
        CALL;                                                                                                                  \
      }                                                                                                                        \
    }                                                                                                                          \
  } while (0)

/* y = x, y = 0 on the local arrays, on PetNet's threads (src/sys/threads.c) */
PETSC_INTERN PetscErrorCode PetNetVecCopy_Private(Vec, Vec);
PETSC_INTERN PetscErrorCode PetNetVecZero_Private(Vec);

/* the number of the calling thread inside a region (0 outside, or without OpenMP) */
static inline int PetNetThreadId(void)
{
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* inside a region: keep the first error code of the region's threads */
static inline void PetNetThreadsSetError(PetscErrorCode *err, PetscErrorCode ierr)
{
  if (ierr) {
#if defined(_OPENMP)
#pragma omp critical(petnet_thread_error)
#endif
    if (!*err) *err = ierr;
  }
}

/* after a region: raise the error one of its threads met (where: the kernel, for the message) */
#define PetNetThreadsCheck(err, where)                                                                              \
  do {                                                                                                              \
    PetscCheck(!(err), PETSC_COMM_SELF, PETSC_ERR_LIB, "%s failed in a thread (error code %d)", where, (int)(err)); \
  } while (0)
