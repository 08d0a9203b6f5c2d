/*
  Threads of one process: how many OpenMP threads PetNet's layers use (layout of the parallel loops and why results do
  not depend on the count in include/petnet/private/threadsimpl.h), and OpenBLAS's threads beside them.

  The default (PetNetGetNumThreads() before any PetNetSetNumThreads() or -net_threads):
    OMP_NUM_THREADS, if set;
    else the cores this process may run on (omp_get_num_procs(): its CPU affinity) divided by the MPI ranks that share
    the node (OMPI_COMM_WORLD_LOCAL_SIZE from Open MPI's mpiexec, MPI_LOCALNRANKS from MPICH's), at least 1: one process
    alone uses every core, 2 ranks on 2 cores one thread each. Under a launcher that says neither, a run on several
    ranks takes 1 thread per rank.
  Once PetNet's count is set, OpenBLAS is told to use one thread (openblas_set_num_threads(), found with dlsym: another
  BLAS has no such function and is left alone), whatever the count: each of PetNet's threads calls it on its own part
  of the work, in parts that do not depend on the thread count. OpenBLAS's own threads would oversubscribe the cores
  and, measured here, change the last bits of a GEMM (its threaded GEMM blocks differently), so that 1 PetNet thread
  with an OpenBLAS on 2 threads would not give the bits of 2 PetNet threads.
  OpenBLAS's pool is then shut down (blas_thread_shutdown_(), OpenBLAS's own fork handler, also found with dlsym):
  MPI_Init's fork of Open MPI's daemon has already shut it down, openblas_set_num_threads() starts it again, and each
  idle worker would spin on sched_yield() for about 0.1 s of CPU before it sleeps, on a core the other rank or thread
  needs (measured: 0.1 s of CPU in a 0.4 s spiral training). A later threaded call would start the pool again.
*/
#include <petnet/private/threadsimpl.h>
#include <petnetsys.h>
#include <petsc/private/petscimpl.h>
#include <dlfcn.h>

int PetNetThreads_Private = 1;

static PetscBool PetNetThreadsSet = PETSC_FALSE; /* PetNetSetNumThreads() was called (or the default applied) */

/* OpenBLAS's thread control, or NULL for another BLAS */
static void (*PetNetOpenBLASSetThreads(void))(int)
{
  return (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
}

/* OpenBLAS's shutdown of its thread pool, or NULL for another BLAS */
static int (*PetNetOpenBLASShutdown(void))(void)
{
  return (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
}

/* The default count: OMP_NUM_THREADS, else the cores of this process over the ranks on its node */
static PetscErrorCode PetNetDefaultThreads(PetscInt *nthreads)
{
  PetscFunctionBegin;
  *nthreads = 1;
#if defined(_OPENMP)
  {
    const char *env   = getenv("OMP_NUM_THREADS");
    PetscInt    local = 0;
    PetscMPIInt size;

    if (env && atoi(env) > 0) {
      *nthreads = atoi(env);
      PetscFunctionReturn(0);
    }
    if ((env = getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) || (env = getenv("MPI_LOCALNRANKS"))) local = atoi(env);
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    if (local <= 0) local = size > 1 ? omp_get_num_procs() : 1; /* unknown layout on several ranks: 1 thread each */
    *nthreads = PetscMax(1, omp_get_num_procs() / PetscMax(local, 1));
  }
#endif
  PetscFunctionReturn(0);
}

/*@
  PetNetSetNumThreads - sets how many threads PetNet's layers use in this process

  Not collective

  Input Parameter:
. nthreads - the number of threads, at least 1; PETSC_DECIDE for the default

  Options Database Key:
. -net_threads <n> - the same (NetSetFromOptions())

  Notes:
  The layers' loops (convolutions, dense layers, activations, pooling, batch normalisation, the optimizers' updates)
  run over parts of the batch with OpenMP. Parts depend only on the sizes of the problem, and partial sums are added in
  part order: results are the same bits whatever the number of threads.

  The default is OMP_NUM_THREADS if set, else the cores of the process divided by the MPI ranks on its node (so a single
  process uses every core, and 2 ranks on 2 cores use one thread each). OpenBLAS is set to one thread (PetNet's
  threads call it on their parts of the work; OPENBLAS_NUM_THREADS no longer matters once this was called).

  The setting is the process's, shared by every Net. Without OpenMP (a compiler without -fopenmp) PetNet always uses one
  thread and this records nothing else.

  Level: intermediate

.seealso: `PetNetGetNumThreads()`, `NetSetFromOptions()`
@*/
PetscErrorCode PetNetSetNumThreads(PetscInt nthreads)
{
  void (*blasset)(int) = PetNetOpenBLASSetThreads();

  PetscFunctionBegin;
  if (nthreads == PETSC_DECIDE || nthreads == PETSC_DEFAULT) PetscCall(PetNetDefaultThreads(&nthreads));
  PetscCheck(nthreads >= 1 && nthreads <= 4096, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The number of threads (-net_threads) must be between 1 and 4096, not %" PetscInt_FMT, nthreads);
#if !defined(_OPENMP)
  nthreads = 1;
#endif
  if (blasset) {
    int (*blasshutdown)(void) = PetNetOpenBLASShutdown();

    blasset(1);
    if (blasshutdown) (void)blasshutdown();
  }
  PetNetThreads_Private = (int)nthreads;
  PetNetThreadsSet      = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  PetNetGetNumThreads - gets how many threads PetNet's layers use in this process

  Not collective

  Output Parameter:
. nthreads - the number of threads

  Notes:
  Before any PetNetSetNumThreads() (or -net_threads) this sets the default and returns it (see PetNetSetNumThreads()).

  Level: intermediate

.seealso: `PetNetSetNumThreads()`
@*/
PetscErrorCode PetNetGetNumThreads(PetscInt *nthreads)
{
  PetscFunctionBegin;
  PetscValidIntPointer(nthreads, 1);
  if (!PetNetThreadsSet) PetscCall(PetNetSetNumThreads(PETSC_DECIDE));
  *nthreads = PetNetThreads_Private;
  PetscFunctionReturn(0);
}

/*
  y = x and y = 0 on the local arrays (x and y laid out alike), in parts on PetNet's threads: each core streams a part
  that stays in its own cache (2 threads copy 235,146 doubles in 14 us, one memcpy takes 30 us: measured). For the
  passes over the parameters and their gradient that every training step makes (the broadcast on one rank, the zeroed
  gradient).
*/
#define PETNET_VEC_BLOCK 32768 /* entries per part: below two, one call */

PetscErrorCode PetNetVecCopy_Private(Vec x, Vec y)
{
  const PetscScalar *a;
  PetscScalar       *b;
  PetscInt           n, m;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(x, &n));
  PetscCall(VecGetLocalSize(y, &m));
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Copy of %" PetscInt_FMT " local entries into %" PetscInt_FMT, n, m);
  if (x == y) PetscFunctionReturn(0);
  PetscCall(VecGetArrayRead(x, &a));
  PetscCall(VecGetArrayWrite(y, &b));
  PETNET_THREAD_BLOCKS(n, PETNET_VEC_BLOCK, memcpy(b + i0, a + i0, sizeof(PetscScalar) * (size_t)(i1 - i0)));
  PetscCall(VecRestoreArrayWrite(y, &b));
  PetscCall(VecRestoreArrayRead(x, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetVecZero_Private(Vec y)
{
  PetscScalar *b;
  PetscInt     n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(y, &n));
  PetscCall(VecGetArrayWrite(y, &b));
  PETNET_THREAD_BLOCKS(n, PETNET_VEC_BLOCK, memset(b + i0, 0, sizeof(PetscScalar) * (size_t)(i1 - i0)));
  PetscCall(VecRestoreArrayWrite(y, &b));
  PetscFunctionReturn(0);
}
