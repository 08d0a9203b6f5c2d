/* Atomic writes: every file PetNet saves is written under a temporary name and renamed into place,
   so an interrupted write never replaces a good file with a half-written one.

   Only a regular file (or a name that does not exist yet) is ever replaced: renaming onto /dev/full, a FIFO or a
   symbolic link would turn the device node or the link into a regular file. Rank 0 does every file-system call; the
   verdict (an errno, or 0) is broadcast so that every rank fails together. */
#include <petnetsys.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

/* What name is, when it exists and is not a regular file (NULL otherwise, also when it does not exist) */
static const char *PetNetNotRegularFile_Private(const char name[])
{
  struct stat st;

  if (lstat(name, &st)) return NULL;
  if (S_ISREG(st.st_mode)) return NULL;
  if (S_ISLNK(st.st_mode)) return "a symbolic link (give the path of its target)";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  return "not a regular file";
}

/* Refuses (on every rank) to replace name when it exists and is not a regular file */
static PetscErrorCode PetNetCheckReplaceable_Private(MPI_Comm comm, const char name[])
{
  PetscMPIInt rank;
  const char *what = NULL;
  int         bad  = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) what = PetNetNotRegularFile_Private(name);
  bad = what ? 1 : 0;
  PetscCallMPI(MPI_Bcast(&bad, 1, MPI_INT, 0, comm));
  PetscCheck(!bad, comm, PETSC_ERR_FILE_WRITE, "Refusing to write %s: it is %s, and only a regular file is replaced. Give the name of a regular file", name, rank == 0 ? what : "not a regular file");
  PetscFunctionReturn(0);
}

/*@C
  PetNetTemporaryFileName - the temporary name under which a file is written before PetNetCommitFile() renames it

  Collective

  Input Parameters:
+ comm - the communicator of the ranks that write the file
. name - the final file name
- len  - the size of tmp

  Output Parameter:
. tmp - "name.tmpPID" with the process id of rank 0, the same on every rank

  Notes:
  Write the whole file under tmp, then call PetNetCommitFile(): an interrupted write never replaces a good file with a
  half-written one. A write that fails should remove tmp (PetNetRemoveTemporaryFile()).

  A name that exists and is not a regular file (a device such as /dev/full, a directory, a FIFO, a symbolic link) is
  refused here, before anything is written.

  Level: developer

.seealso: `PetNetCommitFile()`, `NetSave()`, `TrainerSaveCheckpoint()`
@*/
PetscErrorCode PetNetTemporaryFileName(MPI_Comm comm, const char name[], size_t len, char tmp[])
{
  PetscMPIInt rank;
  int         pid = 0;

  PetscFunctionBegin;
  PetscCall(PetNetCheckReplaceable_Private(comm, name));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) pid = (int)getpid();
  PetscCallMPI(MPI_Bcast(&pid, 1, MPI_INT, 0, comm));
  PetscCall(PetscSNPrintf(tmp, len, "%s.tmp%d", name, pid));
  PetscFunctionReturn(0);
}

/*@C
  PetNetCommitFile - renames a completely written temporary file into place

  Collective

  Input Parameters:
+ comm - the communicator of the ranks that wrote tmp
. tmp  - the temporary name, from PetNetTemporaryFileName()
- name - the final file name, replaced atomically if it exists

  Notes:
  Waits until every rank has finished writing (MPI_Barrier), then rank 0 renames tmp to name. A failed rename is an
  error on every rank, and tmp is removed. A name that is not a regular file is refused (and tmp removed).

  Level: developer

.seealso: `PetNetTemporaryFileName()`, `NetSave()`, `TrainerSaveCheckpoint()`
@*/
PetscErrorCode PetNetCommitFile(MPI_Comm comm, const char tmp[], const char name[])
{
  PetscMPIInt rank;
  int         err = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Barrier(comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    if (PetNetNotRegularFile_Private(name))
      err = EEXIST; /* became a device or link while we wrote */
    else if (rename(tmp, name))
      err = errno;
    if (err) (void)unlink(tmp);
  }
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
  if (err == EEXIST) PetscCall(PetNetCheckReplaceable_Private(comm, name));
  PetscCheck(!err, comm, PETSC_ERR_FILE_WRITE, "Could not write %s (renaming %s into place): %s", name, tmp, strerror(err));
  PetscFunctionReturn(0);
}

/*@C
  PetNetRemoveTemporaryFile - removes a temporary file after a failed write

  Not collective

  Input Parameter:
. tmp - the temporary name, from PetNetTemporaryFileName()

  Notes:
  For the error path of a writer: call it on any rank that sees the error (a missing file is not an error), then
  return the error. Never fails.

  Level: developer

.seealso: `PetNetTemporaryFileName()`, `PetNetCommitFile()`, `PetNetRemoveStaleTemporaryFiles()`
@*/
PetscErrorCode PetNetRemoveTemporaryFile(const char tmp[])
{
  PetscFunctionBegin;
  if (tmp && tmp[0]) (void)unlink(tmp);
  PetscFunctionReturn(0);
}

/* Splits name into its directory ("." when none) and its base name */
static void PetNetSplitPath_Private(const char name[], size_t len, char dir[], const char **base)
{
  const char *slash = strrchr(name, '/');

  if (!slash) {
    snprintf(dir, len, ".");
    *base = name;
  } else if (slash == name) {
    snprintf(dir, len, "/");
    *base = slash + 1;
  } else {
    snprintf(dir, len, "%.*s", (int)(slash - name), name);
    *base = slash + 1;
  }
}

/*@C
  PetNetCheckWritableFile - checks, before any work is done, that a file can later be written atomically

  Collective

  Input Parameters:
+ comm   - the communicator of the ranks that will write the file
. name   - the file name
- option - the option or function that named the file, for the error message (e.g. "-trainer_checkpoint")

  Notes:
  Rank 0 creates and removes the temporary file that PetNetTemporaryFileName() will use, so a missing or read-only
  directory, a full quota or a name that is a device, a directory or a link is reported now, naming the file, the
  option and the reason (strerror), rather than after hours of training.

  Level: developer

.seealso: `PetNetTemporaryFileName()`, `PetNetCommitFile()`, `PetNetRemoveStaleTemporaryFiles()`, `TrainerSetUp()`
@*/
PetscErrorCode PetNetCheckWritableFile(MPI_Comm comm, const char name[], const char option[])
{
  PetscMPIInt rank;
  char        tmp[PETSC_MAX_PATH_LEN], dir[PETSC_MAX_PATH_LEN];
  const char *base;
  int         err = 0;

  PetscFunctionBegin;
  PetscCheck(name && name[0], comm, PETSC_ERR_ARG_WRONG, "%s needs a file name", option);
  PetscCall(PetNetTemporaryFileName(comm, name, sizeof(tmp), tmp));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);

    if (fd < 0)
      err = errno;
    else {
      close(fd);
      (void)unlink(tmp);
    }
  }
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
  PetNetSplitPath_Private(name, sizeof(dir), dir, &base);
  PetscCheck(!err, comm, PETSC_ERR_FILE_WRITE, "Cannot write the file %s given by %s: %s (directory %s). Choose a file in an existing, writable directory", name, option, strerror(err), dir);
  PetscFunctionReturn(0);
}

/*@C
  PetNetRemoveStaleTemporaryFiles - removes the temporary files ("name.tmpPID") left by writers of name that died

  Collective

  Input Parameters:
+ comm - the communicator
- name - the final file name

  Notes:
  A process killed while writing (kill -9, out of memory, a node failure) leaves its temporary file behind. Rank 0
  removes every "name.tmpPID" in name's directory whose process PID no longer exists on this host; files of live
  processes (another run writing the same name) are left alone.

  Level: developer

.seealso: `PetNetTemporaryFileName()`, `PetNetCheckWritableFile()`, `PetNetRemoveTemporaryFile()`
@*/
PetscErrorCode PetNetRemoveStaleTemporaryFiles(MPI_Comm comm, const char name[])
{
  PetscMPIInt rank;
  char        dir[PETSC_MAX_PATH_LEN];
  const char *base;
  int         removed = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    DIR           *d;
    struct dirent *e;
    size_t         nbase;

    PetNetSplitPath_Private(name, sizeof(dir), dir, &base);
    nbase = strlen(base);
    d     = nbase ? opendir(dir) : NULL;
    while (d && (e = readdir(d))) {
      const char *pid = e->d_name + nbase + 4;
      char       *end;
      long        p;
      char        path[PETSC_MAX_PATH_LEN];

      if (strncmp(e->d_name, base, nbase) || strncmp(e->d_name + nbase, ".tmp", 4) || !*pid) continue;
      errno = 0;
      p     = strtol(pid, &end, 10);
      if (*end || errno || p <= 0 || p == (long)getpid()) continue;
      if (kill((pid_t)p, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
      if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path)) continue;
      if (!PetNetNotRegularFile_Private(path) && !unlink(path)) removed++;
    }
    if (d) closedir(d);
  }
  if (removed) PetscCall(PetscInfo(NULL, "Removed %d stale temporary file(s) of %s left by processes that no longer run\n", removed, name));
  PetscFunctionReturn(0);
}
