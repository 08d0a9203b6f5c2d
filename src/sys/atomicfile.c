/* Atomic writes: every file PetNet saves is written under a temporary name and renamed into place,
   so an interrupted write never replaces a good file with a half-written one. */
#include <petnetsys.h>
#include <stdio.h>
#include <unistd.h>

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
  half-written one.

  Level: developer

.seealso: `PetNetCommitFile()`, `NetSave()`, `TrainerSaveCheckpoint()`
@*/
PetscErrorCode PetNetTemporaryFileName(MPI_Comm comm, const char name[], size_t len, char tmp[])
{
  PetscMPIInt rank;
  int         pid = 0;

  PetscFunctionBegin;
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
  error on every rank.

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
  if (rank == 0) err = rename(tmp, name);
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, 0, comm));
  PetscCheck(!err, comm, PETSC_ERR_FILE_WRITE, "Could not rename %s to %s: check that the directory is writable", tmp, name);
  PetscFunctionReturn(0);
}
