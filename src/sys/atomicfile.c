/* Atomic writes: every file PetNet saves is written under a temporary name and renamed into place,
   so an interrupted write never replaces a good file with a half-written one. */
#include <petnetsys.h>
#include <stdio.h>
#include <unistd.h>

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

/* Collective: after every rank has finished writing tmp, rank 0 renames it to name. */
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
