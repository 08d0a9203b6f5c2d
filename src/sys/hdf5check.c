/*
  A damaged HDF5 file can crash or hang the HDF5 library itself (1.10.8: H5Aexists() reads past its buffer on a
  damaged attribute message, H5Aread() of a variable-length string whose global-heap reference is damaged loops
  forever; fuzz/regress/h5model/attribute-message-overread, fuzz/known-library-hangs/). PetNet's readers check every
  size and checksum they read, but these happen while HDF5 decodes an object header, before any value reaches PetNet.
  So before a reader opens a file, rank 0 runs petnet-hdf5check (src/sys/hdf5check/), a program that walks every
  object header of the file the way a reader would (every group and dataset, every attribute read whole, each
  dataset's type, extent, layout and chunk index) under a guard-page allocator: every buffer HDF5 allocates for the
  file ends where 64 KB of inaccessible pages begin, so a read past one faults there, whatever the memory layout
  (src/sys/hdf5check/guardmalloc.c: what it does not catch). If the
  program dies (a signal) or does not finish in time, the file is refused with an error that names it; if it
  finishes, the reader goes on and reports any ordinary damage itself.

  The program is a separate executable, not a fork() of this process: only an executable's own malloc replaces the C
  library's for the HDF5 library it loads, and the exec'd process shares nothing with this one's MPI (it links HDF5
  alone and makes no MPI call). It is found (HDF5CheckFindProgram) by -petnet_hdf5_check_program, then the environment
  variable PETNET_HDF5_CHECK_PROGRAM, then beside the libpetnet.so this code was loaded from (LIBDIR/petnet/, where
  both the build and make install put it), then in the build tree the library was compiled in. A program that cannot
  be found or run is an error that says so (the check is never skipped silently). Options: -petnet_hdf5_check <bool>
  (default true), -petnet_hdf5_check_timeout <seconds> (20), -petnet_hdf5_check_program <path>.
*/
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr() */
#endif
#include <petnetsys.h>
#include <petsc/private/petscimpl.h>
#if defined(PETSC_HAVE_HDF5)
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HDF5CHECK_NAME "petnet-hdf5check"

/* rank 0: the checking program's path, or an error message (msg) saying where it was looked for and what to set */
static PetscErrorCode HDF5CheckFindProgram(const char file[], const char what[], size_t plen, char path[], size_t len, char msg[])
{
  PetscBool   set;
  const char *env = getenv("PETNET_HDF5_CHECK_PROGRAM");
  Dl_info     info;
  char        beside[PETSC_MAX_PATH_LEN] = "";

  PetscFunctionBegin;
  path[0] = 0;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-petnet_hdf5_check_program", path, plen, &set));
  if (set || (env && env[0])) {
    if (!set) PetscCall(PetscStrncpy(path, env, plen));
    if (access(path, X_OK))
      PetscCall(PetscSNPrintf(msg, len,
                              "%s %s was not opened: PetNet's HDF5 checking program %s (%s) cannot be run: %s. Give the path of the " HDF5CHECK_NAME " that was built or installed with PetNet (LIBDIR/petnet/" HDF5CHECK_NAME
                              "), or -petnet_hdf5_check 0 to open HDF5 files unchecked (a damaged file may then crash the HDF5 library)",
                              what, file, path, set ? "-petnet_hdf5_check_program" : "environment variable PETNET_HDF5_CHECK_PROGRAM", strerror(errno)));
    PetscFunctionReturn(0);
  }
  if (dladdr((void *)PetNetCheckHDF5File, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    char *slash;

    PetscCall(PetscStrncpy(beside, info.dli_fname, sizeof(beside)));
    slash    = strrchr(beside, '/');
    slash[1] = 0;
    PetscCall(PetscStrlcat(beside, "petnet/" HDF5CHECK_NAME, sizeof(beside)));
    if (!access(beside, X_OK)) {
      PetscCall(PetscStrncpy(path, beside, plen));
      PetscFunctionReturn(0);
    }
  }
#if defined(PETNET_HDF5CHECK_BUILD)
  if (!access(PETNET_HDF5CHECK_BUILD, X_OK)) {
    PetscCall(PetscStrncpy(path, PETNET_HDF5CHECK_BUILD, plen));
    PetscFunctionReturn(0);
  }
#else
#define PETNET_HDF5CHECK_BUILD "(none)"
#endif
  if (!beside[0]) PetscCall(PetscStrncpy(beside, "LIBDIR/petnet/" HDF5CHECK_NAME, sizeof(beside)));
  if (strcmp(beside, PETNET_HDF5CHECK_BUILD)) PetscCall(PetscStrlcat(beside, " and " PETNET_HDF5CHECK_BUILD, sizeof(beside)));
  PetscCall(PetscSNPrintf(msg, len,
                          "%s %s was not opened: PetNet's HDF5 checking program " HDF5CHECK_NAME
                          ", which reads an HDF5 file's headers in a separate process first, was not found (looked for %s). Run make (or make install) in PetNet's source tree, or give "
                          "its path with -petnet_hdf5_check_program PATH or the environment variable PETNET_HDF5_CHECK_PROGRAM; or -petnet_hdf5_check 0 to open HDF5 files unchecked (a damaged file may then crash the HDF5 library)",
                          what, file, beside));
  PetscFunctionReturn(0);
}

/* how the checking program died, in words (the test runner takes the words of a crash report in an error for a crash) */
static const char *HDF5CheckCrash(int sig)
{
  switch (sig) {
  case SIGSEGV:
  case SIGBUS:
    return "an invalid memory access";
  case SIGABRT:
    return "it aborted";
  case SIGFPE:
    return "an arithmetic fault";
  case SIGILL:
    return "an illegal instruction";
  case SIGKILL:
    return "killed, perhaps for want of memory";
  default:
    return "killed";
  }
}

/* rank 0: run the checking program on the file and wait for it; msg empty when the file passed */
static PetscErrorCode HDF5CheckRun(const char file[], const char what[], PetscBool readvlen, PetscReal timeout, size_t len, char msg[])
{
  char                       program[PETSC_MAX_PATH_LEN], seconds[32];
  char                      *argv[6];
  int                        argc = 0, status = 0, err;
  pid_t                      pid;
  posix_spawnattr_t          attr;
  posix_spawn_file_actions_t actions;
  sigset_t                   all, none;
  struct timespec            pause = {0, 1000000}; /* 1 ms */
  PetscLogDouble             start, now;

  PetscFunctionBegin;
  msg[0] = 0;
  PetscCall(HDF5CheckFindProgram(file, what, sizeof(program), program, len, msg));
  if (msg[0]) PetscFunctionReturn(0);
  PetscCall(PetscSNPrintf(seconds, sizeof(seconds), "%g", (double)timeout));
  argv[argc++] = program;
  if (readvlen) argv[argc++] = (char *)"-vlen";
  argv[argc++] = (char *)"-timeout";
  argv[argc++] = seconds;
  argv[argc++] = (char *)file;
  argv[argc]   = NULL;
  /* the program starts with every signal at its default and none blocked (a crash must kill it), reads nothing from
     stdin and writes nothing to stdout */
  (void)sigfillset(&all);
  (void)sigemptyset(&none);
  (void)posix_spawnattr_init(&attr);
  (void)posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  (void)posix_spawnattr_setsigdefault(&attr, &all);
  (void)posix_spawnattr_setsigmask(&attr, &none);
  (void)posix_spawn_file_actions_init(&actions);
  (void)posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  (void)posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  (void)fflush(stdout);
  (void)fflush(stderr);
  err = posix_spawn(&pid, program, &actions, &attr, argv, environ);
  (void)posix_spawn_file_actions_destroy(&actions);
  (void)posix_spawnattr_destroy(&attr);
  if (err) {
    PetscCall(PetscSNPrintf(msg, len, "%s %s was not opened: PetNet's HDF5 checking program %s could not be started (%s). Give a working one with -petnet_hdf5_check_program PATH, or -petnet_hdf5_check 0 to open HDF5 files unchecked", what, file,
                            program, strerror(err)));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscTime(&start));
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);

    if (w == pid) break;
    if (w < 0 && errno != EINTR) { /* SIGCHLD ignored by the application: the child was reaped, no verdict */
      PetscCall(PetscInfo(NULL, "%s %s: the HDF5 check's exit status is lost (SIGCHLD is ignored); not checked\n", what, file));
      PetscFunctionReturn(0);
    }
    PetscCall(PetscTime(&now));
    if (now - start > timeout) {
      (void)kill(pid, SIGKILL);
      (void)waitpid(pid, &status, 0);
      PetscCall(PetscSNPrintf(msg, len,
                              "%s %s is damaged: the HDF5 library did not finish reading its object headers (attributes, dataset descriptions) within %.1f s (-petnet_hdf5_check_timeout) and was stopped; HDF5 1.10 loops forever on some damaged "
                              "headers. Use another copy of the file or write it again",
                              what, file, (double)timeout));
      PetscFunctionReturn(0);
    }
    (void)nanosleep(&pause, NULL);
  }
  PetscCall(PetscTime(&now));
  PetscCall(PetscInfo(NULL, "%s %s: HDF5 check by %s took %.3f s\n", what, file, program, (double)(now - start)));
  if (WIFSIGNALED(status))
    PetscCall(PetscSNPrintf(msg, len,
                            "%s %s is damaged: the HDF5 library crashed (%s) reading its object headers (attributes, dataset descriptions) in a checking process (%s), so the file was not opened here; HDF5 1.10 reads past its buffers on some "
                            "damaged headers. Use another copy of the file or write it again",
                            what, file, HDF5CheckCrash(WTERMSIG(status)), HDF5CHECK_NAME));
  else if (WIFEXITED(status) && WEXITSTATUS(status))
    PetscCall(PetscSNPrintf(msg, len,
                            "%s %s was not opened: PetNet's HDF5 checking program %s failed (exit status %d) without checking it. Give a working one with -petnet_hdf5_check_program PATH, or -petnet_hdf5_check 0 to open HDF5 files unchecked", what,
                            file, program, WEXITSTATUS(status)));
  PetscFunctionReturn(0);
}

#endif

/*@C
  PetNetCheckHDF5File - checks, in a separate process, that the HDF5 library can read every object header of a file
  (groups, datasets, attributes) without crashing or hanging, before the file is opened in this process

  Collective

  Input Parameters:
+ comm - the communicator of the ranks that will read the file (rank 0 runs the check, the others wait for its verdict)
. file - the file's name
. what - what the file is, for the error message (e.g. "Model file")
- vlen - whether to read variable-length attributes as well (PETSC_TRUE for a reader that reads them; a reader that
         refuses them unread passes PETSC_FALSE, so that the check does not stop on a loop the reader never enters)

  Options Database Keys:
+ -petnet_hdf5_check <bool> - run the check (default true)
. -petnet_hdf5_check_timeout <seconds> - how long the checking process may take (default 20)
- -petnet_hdf5_check_program <path> - the checking program (default: petnet/petnet-hdf5check beside the library)

  Notes:
  HDF5 1.10 crashes on some damaged object headers (it reads past its buffers decoding attribute messages) and loops
  forever on others (a variable-length string whose heap reference is damaged), inside the library, before any value
  reaches the caller. This function runs petnet-hdf5check, a program that walks the whole file as a reader would
  (every group and dataset, every attribute read whole, each dataset's type, extent, layout and chunk index) with
  every buffer ending at an inaccessible page, so that a read past one faults there, and refuses the file with a
  clear error if that process dies or runs out of time. A file the walk reads without incident passes, even if HDF5
  reported errors about it: those the reader reports itself. It costs one process start and the walk (a few
  milliseconds for a model file). PetNet's HDF5 model and dataset readers call it before they open a file.

  The program is looked for at the path given by -petnet_hdf5_check_program, then by the environment variable
  PETNET_HDF5_CHECK_PROGRAM, then in the folder petnet/ beside the libpetnet.so in use (make and make install put it
  there), then in the build tree; if none is there, or it cannot be run, the file is refused with an error saying so.

  Level: developer

.seealso: `NetLoad()`, `DATASETHDF5`
@*/
PetscErrorCode PetNetCheckHDF5File(MPI_Comm comm, const char file[], const char what[], PetscBool vlen)
{
  PetscMPIInt rank;
  PetscBool   check   = PETSC_TRUE;
  PetscReal   timeout = 20.0;
  char        msg[1024];

  PetscFunctionBegin;
  PetscValidCharPointer(file, 2);
  PetscValidCharPointer(what, 3);
#if !defined(PETSC_HAVE_HDF5)
  PetscFunctionReturn(0); /* nothing reads HDF5 */
#endif
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-petnet_hdf5_check", &check, NULL));
  if (!check) PetscFunctionReturn(0);
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-petnet_hdf5_check_timeout", &timeout, NULL));
  PetscCheck(timeout > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-petnet_hdf5_check_timeout %g: give a positive number of seconds (or -petnet_hdf5_check 0 to skip the check)", (double)timeout);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  msg[0] = 0;
#if defined(PETSC_HAVE_HDF5)
  if (!rank) PetscCall(HDF5CheckRun(file, what, vlen, timeout, sizeof(msg), msg));
#endif
  PetscCallMPI(MPI_Bcast(msg, sizeof(msg), MPI_CHAR, 0, comm));
  msg[sizeof(msg) - 1] = 0;
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  PetscFunctionReturn(0);
}
