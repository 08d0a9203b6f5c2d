/*
  Writes that fail on one rank end every rank with the same error.

  A file PetNet writes is written in steps. A step is local (rank 0 writes bytes it holds, through a sequential viewer
  or a FILE*) or collective (a gather, a collective HDF5 call). A local step that fails must never be followed by a
  collective on the failing rank alone: the other ranks would wait in it (or in an MPI_Send to rank 0) forever. So
  every local step ends with PetNetWriteAgree(), which every rank calls, before any other collective:

      ierr = 0;
      if (rank == 0) ierr = write locally, under PetscPushErrorHandler(PetscReturnErrorHandler, NULL);
      PetscCall(PetNetWriteAgree(comm, ierr, errno_of_the_write, file, tmp));   all ranks: the same error, tmp removed

  The verdict of the first failing rank (PETSc's message and the system's reason, strerror) is broadcast, so every
  rank raises the same PETSC_ERR_FILE_WRITE naming the file and the reason, and returns at once.

  Testing: -petnet_fault_inject write:N[:R] turns the outcome of the N-th write step (N-th call of PetNetWriteAgree(),
  counted from 1 on every rank alike) into a failure on rank R (default 0) of the writer's communicator.
*/
#include <petnetsys.h>
#include <petsc/private/petscimpl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#define PETNET_WRITE_MESSAGE 1024

static PetscInt petnetFaultWrite = -1; /* -1: not read yet; 0: no injection; N: the N-th write step fails */
static PetscInt petnetFaultRank  = 0;
static PetscInt petnetWriteSteps = 0; /* write steps so far in this process */

/* Reads -petnet_fault_inject write:N[:R] once */
static PetscErrorCode PetNetFaultInjectFromOptions_Private(MPI_Comm comm)
{
  char      value[256], *colon, *end;
  PetscBool flg;
  long long n, r = 0;

  PetscFunctionBegin;
  if (petnetFaultWrite >= 0) PetscFunctionReturn(0);
  petnetFaultWrite = 0;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-petnet_fault_inject", value, sizeof(value), &flg));
  if (!flg) PetscFunctionReturn(0);
  PetscCheck(!strncmp(value, "write:", 6), comm, PETSC_ERR_ARG_WRONG, "-petnet_fault_inject %s: unknown fault; write write:N or write:N:RANK (the N-th write step fails, on rank RANK, default 0)", value);
  errno = 0;
  n     = strtoll(value + 6, &end, 10);
  colon = end;
  if (*colon == ':') r = strtoll(colon + 1, &end, 10);
  PetscCheck(!errno && end != value + 6 && !*end && n >= 1 && n <= PETSC_MAX_INT && r >= 0 && r <= PETSC_MPI_INT_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-petnet_fault_inject %s: write N[:RANK] with N >= 1 (which write step fails, counted from 1) and RANK >= 0, e.g. write:2:1", value);
  petnetFaultWrite = (PetscInt)n;
  petnetFaultRank  = (PetscInt)r;
  PetscFunctionReturn(0);
}

/* Why a write into path's file system failed when the system call said nothing (a short write sets no errno):
   ENOSPC for a full file system, EROFS for a read-only one, 0 when neither shows */
static int PetNetWriteReason_Private(const char path[])
{
  char           dir[PETSC_MAX_PATH_LEN];
  const char    *slash = path ? strrchr(path, '/') : NULL;
  struct statvfs st;

  if (!path || !path[0]) return 0;
  if (!slash)
    snprintf(dir, sizeof(dir), ".");
  else
    snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
  if (statvfs(dir, &st)) return 0;
  if (st.f_flag & ST_RDONLY) return EROFS;
  if (st.f_bavail == 0 || st.f_favail == 0) return ENOSPC;
  return 0;
}

/*@C
  PetNetFaultInjectWrite - counts one write step and says whether it must fail here (option -petnet_fault_inject)

  Not collective (every rank of a writer calls it at the same steps, so the count is the same on every rank)

  Input Parameter:
. comm - the communicator of the ranks that write the file

  Output Parameter:
. fail - PETSC_TRUE on the rank chosen by the option, at the chosen step

  Options Database Key:
. -petnet_fault_inject write:N[:RANK] - the N-th write step (counted from 1 in the process, over every file) fails on
                                        rank RANK (default 0) of the writer's communicator, as a full disk would

  Notes:
  PetNetWriteAgree() calls it: a test injects a failure at any write step of any writer (checkpoints, model files,
  predictions, monitors, viewers) at any rank count, and checks that every rank ends with the same error and that no
  temporary file is left. A RANK outside the communicator injects nothing. -info reports every step counted.

  Level: developer

.seealso: `PetNetWriteAgree()`, `PetNetTemporaryFileName()`
@*/
PetscErrorCode PetNetFaultInjectWrite(MPI_Comm comm, PetscBool *fail)
{
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscValidPointer(fail, 2);
  *fail = PETSC_FALSE;
  PetscCall(PetNetFaultInjectFromOptions_Private(comm));
  petnetWriteSteps++;
  if (!petnetFaultWrite) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscInfo(NULL, "Write step %" PetscInt_FMT " (-petnet_fault_inject write:%" PetscInt_FMT ":%" PetscInt_FMT ")\n", petnetWriteSteps, petnetFaultWrite, petnetFaultRank));
  *fail = (petnetWriteSteps == petnetFaultWrite && rank == petnetFaultRank) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The agreement: failed, err and msg[] are this rank's; the first failing rank's err and msg[] are raised everywhere */
static PetscErrorCode PetNetWriteAgree_Private(MPI_Comm comm, PetscBool failed, int err, char msg[], const char file[], const char tmp[])
{
  PetscMPIInt    rank, size, first;
  PetscBool      inject;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetNetFaultInjectWrite(comm, &inject));
  if (inject && !failed) {
    failed = PETSC_TRUE;
    err    = ENOSPC;
    PetscCall(PetscSNPrintf(msg, PETNET_WRITE_MESSAGE, "a failure injected by -petnet_fault_inject write:%" PetscInt_FMT ":%d", petnetWriteSteps, rank));
  } else if (failed && (!err || err == EIO)) { /* no reason, or a generic one: the file system may tell more */
    int fs = PetNetWriteReason_Private(tmp && tmp[0] ? tmp : file);

    if (fs) err = fs;
  }
  first = failed ? rank : size;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, first, comm));
  PetscCallMPI(MPI_Bcast(msg, PETNET_WRITE_MESSAGE, MPI_CHAR, first, comm));
  msg[PETNET_WRITE_MESSAGE - 1] = 0;
  if (tmp && tmp[0] && rank == 0) PetscCall(PetNetRemoveTemporaryFile(tmp));
  /* no rank raises the error (and may end the job) before rank 0 has removed the temporary file: an MPI_Abort from
     another rank could kill rank 0 between the two and leave the file behind */
  PetscCallMPI(MPI_Barrier(comm));
  /* every rank raises the same error at once: rank 0 on comm, the others on PETSC_COMM_SELF (so that each prints it and
     returns: PETSc's handler would keep a rank other than 0 asleep for 10 s, then exit, while the callers clean up
     collectively, closing their viewers) */
  ierr = PetscError(rank ? PETSC_COMM_SELF : comm, __LINE__, PETSC_FUNCTION_NAME, __FILE__, PETSC_ERR_FILE_WRITE, PETSC_ERROR_INITIAL, "Could not write %s on rank %d: %s (%s).%s%s%s Free space or choose another file", file, first,
                    err ? strerror(err) : "the write failed", msg, tmp && tmp[0] ? " The temporary file " : "", tmp && tmp[0] ? tmp : "", tmp && tmp[0] ? " was removed, and any previous file of that name is unchanged." : "");
  PetscFunctionReturn(ierr);
}

/*@C
  PetNetWriteAgree - ends a local write step: every rank learns whether any rank failed, and all raise the same error

  Collective

  Input Parameters:
+ comm - the communicator of the ranks that write the file
. ierr - this rank's result of its local step (0: success, or nothing to do on this rank)
. err  - this rank's errno of the failed system call (0 if none or unknown): the reason the message gives
. file - the file being written, as the message names it: its name, or words and its name ("the checkpoint a.ckpt")
- tmp  - the temporary file written in its place (PetNetTemporaryFileName()), removed on failure; NULL if none

  Notes:
  Call it on every rank after every step in which some rank wrote on its own (rank 0 through a sequential viewer or a
  FILE*), before any other collective call: a rank that failed and went on to a collective while the others were
  elsewhere would hang the job. Run the local step under PetscPushErrorHandler(PetscReturnErrorHandler, NULL), so that
  its error is returned, not printed; its message is quoted here.

  On failure, every rank raises PETSC_ERR_FILE_WRITE with one message naming the file, the failing rank, the
  reason (strerror(err), e.g. "No space left on device") and PETSc's message, and tmp has been removed.

  Level: developer

.seealso: `PetNetFaultInjectWrite()`, `PetNetWriteCheckViewer()`, `PetNetTemporaryFileName()`, `PetNetCommitFile()`
@*/
PetscErrorCode PetNetWriteAgree(MPI_Comm comm, PetscErrorCode ierr, int err, const char file[], const char tmp[])
{
  char msg[PETNET_WRITE_MESSAGE] = "";

  PetscFunctionBegin;
  if (ierr || err) {
    char *why = NULL;

    if (ierr) PetscCall(PetscErrorMessage(ierr, NULL, &why));
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "%s", why && why[0] ? why : "the data did not reach the file"));
  }
  PetscCall(PetNetWriteAgree_Private(comm, (PetscBool)(ierr || err), err, msg, file, tmp));
  PetscFunctionReturn(0);
}

/*@C
  PetNetWriteAgreeReason - PetNetWriteAgree() for a step whose failure is known by a description, not a PETSc error
  (a call of the HDF5 library that returned a negative value)

  Collective

  Input Parameters:
+ comm   - the communicator of the ranks that write the file
. reason - what failed on this rank (e.g. "H5Dwrite of dataset \"0.weight\" failed"), or NULL if nothing did
. file   - the file being written, as the message names it
- tmp    - the temporary file written in its place, removed on failure; NULL if none

  Notes:
  The reason of the first failing rank is raised on every rank as PETSC_ERR_FILE_WRITE, with what the file system
  says (a full or read-only file system), as in PetNetWriteAgree().

  Level: developer

.seealso: `PetNetWriteAgree()`, `PetNetFaultInjectWrite()`
@*/
PetscErrorCode PetNetWriteAgreeReason(MPI_Comm comm, const char reason[], const char file[], const char tmp[])
{
  char msg[PETNET_WRITE_MESSAGE] = "";

  PetscFunctionBegin;
  if (reason) PetscCall(PetscStrncpy(msg, reason, sizeof(msg)));
  PetscCall(PetNetWriteAgree_Private(comm, reason ? PETSC_TRUE : PETSC_FALSE, 0, msg, file, tmp));
  PetscFunctionReturn(0);
}

/*@C
  PetNetWriteCheckViewer - flushes the file of an ASCII viewer (rank 0 writes it with stdio) and agrees on every rank
  whether all of it reached the file

  Collective

  Input Parameter:
. viewer - a PETSCVIEWERASCII viewer of a file; standard output and standard error are not checked (nor counted)

  Notes:
  fprintf() to a full disk fails only when its buffer is flushed, and PETSc's ASCII viewers do not check: a monitor
  file on a full disk was left empty while the run ended with 0. Call this after each record (a monitor's line per
  epoch): the first lost line is an error on every rank, naming the file and the reason. It is a write step of
  PetNetWriteAgree() (and of -petnet_fault_inject).

  Level: developer

.seealso: `PetNetWriteAgree()`, `TrainerMonitorCSV()`, `TrainerMonitorDefault()`
@*/
PetscErrorCode PetNetWriteCheckViewer(PetscViewer viewer)
{
  MPI_Comm    comm;
  PetscMPIInt rank;
  const char *name = NULL;
  FILE       *fp   = NULL;
  PetscBool   std, out;
  int         err = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 1);
  PetscCall(PetscObjectGetComm((PetscObject)viewer, &comm));
  PetscCall(PetscViewerFileGetName(viewer, &name));
  if (!name) PetscFunctionReturn(0);
  PetscCall(PetscStrcmp(name, "stdout", &std));
  PetscCall(PetscStrcmp(name, "stderr", &out));
  if (std || out) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIGetPointer(viewer, &fp));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0 && fp) {
    errno = 0;
    if (fflush(fp) || ferror(fp)) err = errno ? errno : EIO;
  }
  PetscCall(PetNetWriteAgree(comm, 0, err, name, NULL));
  PetscFunctionReturn(0);
}
