/*
  Training checkpoints, PETSc binary, written atomically (temporary name, then rename):

    PetscInt header[8] = {TRAINER_CHECKPOINT_ID, version, epoch, optimizer step, number of state Vecs, parameters,
                          epochs without improvement, length of the Net spec}
    char    spec[len]            the Net's layer list (checked on restart)
    real    best test loss
    Vec     parameters
    Vec     optimizer state (moments, ...) one after the other

  The data order of epoch e is drawn from (seed, e), so the epoch number restores the random state of the data.
*/
#include <petnet/private/trainerimpl.h>
#include <petnetoptim.h>

#define TRAINER_CHECKPOINT_ID      0x504e4350 /* "PNCP" */
#define TRAINER_CHECKPOINT_VERSION 1

/*@C
  TrainerSaveCheckpoint - writes a training checkpoint: parameters, optimizer state, epoch and early-stopping state

  Collective on tr

  Input Parameters:
+ tr   - the Trainer (set up if needed)
- file - the checkpoint file (PETSc binary), replaced atomically: written under a temporary name, then renamed

  Options Database Keys:
+ -trainer_checkpoint <file>       - TrainerTrain() writes this checkpoint
- -trainer_checkpoint_every <N>    - every N epochs (0: only at the end)

  Notes:
  The file also holds the Net's layer list, checked by TrainerLoadCheckpoint(). The data order needs no state: epoch e
  draws it from (seed, e).

  Level: intermediate

.seealso: `TrainerLoadCheckpoint()`, `TrainerTrain()`, `PetNetTaoGetState()`, `PetNetCommitFile()`
@*/
PetscErrorCode TrainerSaveCheckpoint(Trainer tr, const char file[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  char        tmp[PETSC_MAX_PATH_LEN], spec[4096];
  PetscViewer viewer;
  PetscInt    nstate = 0, step = 0, nparams;
  Vec        *state = NULL, theta;
  PetscInt    header[8];
  PetscReal   best = tr->besttestloss;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCall(PetNetTaoGetState(tr->tao, &nstate, &state, &step));
  PetscCall(NetGetSpec(tr->net, sizeof(spec), spec));
  PetscCall(NetGetNumParameters(tr->net, &nparams));
  theta     = tr->theta;
  header[0] = TRAINER_CHECKPOINT_ID;
  header[1] = TRAINER_CHECKPOINT_VERSION;
  header[2] = tr->epoch;
  header[3] = step;
  header[4] = nstate;
  header[5] = nparams;
  header[6] = tr->badepochs;
  header[7] = (PetscInt)strlen(spec);
  PetscCall(PetNetTemporaryFileName(comm, file, sizeof(tmp), tmp));
  PetscCall(PetscViewerBinaryOpen(comm, tmp, FILE_MODE_WRITE, &viewer));
  PetscCall(PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE));
  PetscCall(PetscViewerBinaryWrite(viewer, header, 8, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, spec, header[7], PETSC_CHAR));
  PetscCall(PetscViewerBinaryWrite(viewer, &best, 1, PETSC_REAL));
  PetscCall(VecView(theta, viewer));
  for (PetscInt k = 0; k < nstate; k++) PetscCall(VecView(state[k], viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(PetNetCommitFile(comm, tmp, file));
  tr->lastcheckpoint = tr->epoch;
  PetscFunctionReturn(0);
}

/*@C
  TrainerLoadCheckpoint - resumes from a training checkpoint written by TrainerSaveCheckpoint()

  Collective on tr

  Input Parameters:
+ tr   - the Trainer (set up if needed), built with the same model and optimizer options as the run that wrote the file
- file - the checkpoint file

  Options Database Key:
. -trainer_restart <file> - TrainerSetUp() resumes from this checkpoint

  Notes:
  Restores the parameters, the optimizer's state Vecs and update count, the epoch and the early-stopping state;
  TrainerTrain() then runs the remaining epochs and ends with the same weights as an uninterrupted run. A different
  network (layer list or parameter count) or optimizer state is refused with an error saying what differs.

  Level: intermediate

.seealso: `TrainerSaveCheckpoint()`, `TrainerTrain()`, `PetNetTaoSetStep()`
@*/
PetscErrorCode TrainerLoadCheckpoint(Trainer tr, const char file[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscViewer viewer;
  PetscInt    nstate = 0, step = 0, nparams;
  Vec        *state = NULL;
  PetscInt    header[8];
  char        spec[4096], saved[4096];
  PetscReal   best;
  PetscBool   exists;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCall(PetscTestFile(file, 'r', &exists));
  PetscCheck(exists, comm, PETSC_ERR_FILE_OPEN, "Cannot read the checkpoint %s given by -trainer_restart: no such readable file", file);
  PetscCall(TaoSetUp(tr->tao));
  PetscCall(NetGetSpec(tr->net, sizeof(spec), spec));
  PetscCall(NetGetNumParameters(tr->net, &nparams));
  PetscCall(PetscViewerBinaryOpen(comm, file, FILE_MODE_READ, &viewer));
  PetscCall(PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE));
  PetscCall(PetscViewerBinaryRead(viewer, header, 8, NULL, PETSC_INT));
  PetscCheck(header[0] == TRAINER_CHECKPOINT_ID, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet training checkpoint (wrong identifier)", file);
  PetscCheck(header[1] == TRAINER_CHECKPOINT_VERSION, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s has format version %" PetscInt_FMT "; this PetNet reads version %d", file, header[1], TRAINER_CHECKPOINT_VERSION);
  PetscCheck(header[7] >= 0 && header[7] < (PetscInt)sizeof(saved), comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt (network description of %" PetscInt_FMT " characters)", file, header[7]);
  PetscCall(PetscViewerBinaryRead(viewer, saved, header[7], NULL, PETSC_CHAR));
  saved[header[7]] = 0;
  PetscCheck(header[5] == nparams && !strcmp(saved, spec), comm, PETSC_ERR_ARG_INCOMP,
             "Checkpoint %s holds the network \"%s\" (%" PetscInt_FMT " parameters) but this run builds \"%s\" (%" PetscInt_FMT " parameters): restart with the same model options", file, saved, header[5], spec, nparams);
  PetscCall(PetNetTaoGetState(tr->tao, &nstate, &state, &step));
  PetscCheck(header[4] == nstate, comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s holds %" PetscInt_FMT " optimizer state vectors but the optimizer in use has %" PetscInt_FMT ": restart with the same -tao_type", file, header[4], nstate);
  PetscCall(PetscViewerBinaryRead(viewer, &best, 1, NULL, PETSC_REAL));
  PetscCall(VecLoad(tr->theta, viewer));
  for (PetscInt k = 0; k < nstate; k++) PetscCall(VecLoad(state[k], viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(PetNetTaoSetStep(tr->tao, header[3]));
  PetscCall(NetSetParameters(tr->net, tr->theta));
  tr->epoch          = header[2];
  tr->badepochs      = header[6];
  tr->besttestloss   = best;
  tr->lastcheckpoint = tr->epoch;
  PetscCall(PetscInfo(tr, "Resumed from %s at epoch %" PetscInt_FMT ", optimizer step %" PetscInt_FMT "\n", file, tr->epoch, header[3]));
  PetscFunctionReturn(0);
}
