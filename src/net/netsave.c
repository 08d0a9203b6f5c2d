/*
  What a model file records besides the layers and the parameters, and when a program's -net_save is written.

  The input normalisation: a Dataset maps its raw inputs x to (scale x - mean) / std (DatasetSetNormalization()); a
  Net trained on such inputs computes nonsense on inputs normalised otherwise. The Trainer records the training
  Dataset's normalisation in the Net (NetSetInputNormalization()), NetSave() writes it, NetLoad() reads it back, and
  the Trainer hands it to any Dataset evaluated with the Net that does not set its own (TrainerPredict()).

  -net_save FILE is never silently ignored. It is written, at the latest moment that still has the final Net:
    1. at the end of TrainerTrain() (the Trainer calls NetSaveFromOptions());
    2. by NetSaveFromOptions(), which a program that does not train calls where its Net is final;
    3. as a last resort, by NetDestroy() of a set-up Net whose requested save has not happened, or whose parameters
       changed since (a program that calls neither).
  NetSetFromOptions() checks at once that FILE can be written, so a bad path fails before any work is done.
*/
#include <petnet/private/netimpl.h>

/*@
  NetSetInputNormalization - records the normalisation of the inputs the Net was trained with, x -> (scale x - mean) / std

  Logically collective

  Input Parameters:
+ net   - the Net
. scale - the scale applied to the raw inputs
. mean  - the mean subtracted after scaling
- std   - the standard deviation divided by, > 0

  Notes:
  TrainerSetUp() records the training Dataset's normalisation (DatasetGetNormalization()). NetSave() writes it to the
  model file, NetLoad() reads it back; TrainerPredict() and TrainerEvaluate() give it to a Dataset whose
  normalisation was not set (DatasetIsNormalizationSet()). The Net itself never applies it: its inputs are the
  normalised values.

  Level: intermediate

.seealso: `NetGetInputNormalization()`, `DatasetSetNormalization()`, `NetSave()`, `TrainerPredict()`
@*/
PetscErrorCode NetSetInputNormalization(Net net, PetscReal scale, PetscReal mean, PetscReal std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveReal(net, scale, 2);
  PetscValidLogicalCollectiveReal(net, mean, 3);
  PetscValidLogicalCollectiveReal(net, std, 4);
  PetscCheck(!PetscIsInfOrNanReal(scale) && !PetscIsInfOrNanReal(mean) && !PetscIsInfOrNanReal(std) && std > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
             "Input normalisation (scale %g, mean %g, std %g): the values must be finite and std positive", (double)scale, (double)mean, (double)std);
  net->normset   = PETSC_TRUE;
  net->normscale = scale;
  net->normmean  = mean;
  net->normstd   = std;
  PetscFunctionReturn(0);
}

/*@
  NetGetInputNormalization - gets the normalisation of the inputs the Net records, x -> (scale x - mean) / std

  Not collective

  Input Parameter:
. net - the Net

  Output Parameters:
+ set   - whether the Net records one: set by NetSetInputNormalization() (TrainerSetUp()) or read from a model file
          that holds one (format version 3); PETSC_FALSE for older files (may be NULL)
. scale - the scale, 1 if none is recorded (may be NULL)
. mean  - the mean, 0 if none is recorded (may be NULL)
- std   - the standard deviation, 1 if none is recorded (may be NULL)

  Level: intermediate

.seealso: `NetSetInputNormalization()`, `NetLoad()`
@*/
PetscErrorCode NetGetInputNormalization(Net net, PetscBool *set, PetscReal *scale, PetscReal *mean, PetscReal *std)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  if (set) *set = net->normset;
  if (scale) *scale = net->normset ? net->normscale : 1.0;
  if (mean) *mean = net->normset ? net->normmean : 0.0;
  if (std) *std = net->normset ? net->normstd : 1.0;
  PetscFunctionReturn(0);
}

/*@
  NetSaveFromOptions - saves the Net to the file given by the option -net_save, if any

  Collective

  Input Parameter:
. net - the Net

  Options Database Key:
. -net_save <file> - the file (".h5" or ".hdf5": HDF5, any other name PETSc binary), written atomically by NetSave()

  Notes:
  Call it where the Net is final, as PETSc programs call XxxViewFromOptions(). TrainerTrain() calls it when training
  ends. A program that calls it nowhere still gets its file: NetDestroy() of a set-up Net saves it if the requested
  save has not happened, or if the parameters changed since. NetSetFromOptions() reads the option and checks at once
  that the file can be written.

  Level: beginner

.seealso: `NetSave()`, `NetLoad()`, `NetSetFromOptions()`, `TrainerTrain()`, `NetDestroy()`
@*/
PetscErrorCode NetSaveFromOptions(Net net)
{
  char      file[PETSC_MAX_PATH_LEN];
  PetscBool flg;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscOptionsGetString(((PetscObject)net)->options, ((PetscObject)net)->prefix, "-net_save", file, sizeof(file), &flg));
  if (flg) {
    PetscCheck(file[0], PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Option -%snet_save needs a file name, e.g. -%snet_save model.h5", ((PetscObject)net)->prefix ? ((PetscObject)net)->prefix : "",
               ((PetscObject)net)->prefix ? ((PetscObject)net)->prefix : "");
    PetscCall(PetscStrncpy(net->savefile, file, sizeof(net->savefile)));
  }
  if (!net->savefile[0]) PetscFunctionReturn(0);
  PetscCall(NetSave(net, net->savefile));
  net->saved = PETSC_TRUE;
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &net->savedstate));
  PetscFunctionReturn(0);
}

/*@C
  NetSetSaveFile - sets or clears the file the Net is saved to at the end of training or at NetDestroy() (what
  -net_save sets)

  Logically collective

  Input Parameters:
+ net  - the Net
- file - the file (checked when NetSaveFromOptions() writes it), or NULL or "" for none: the Net is then not saved,
         whatever -net_save said

  Notes:
  A population's trainers share the program's options: the Trainer clears the file of every trainer but the winner,
  so that only the winner's model is written (TrainerSetPopulation()).

  Level: intermediate

.seealso: `NetSaveFromOptions()`, `NetSave()`, `TrainerSetPopulation()`
@*/
PetscErrorCode NetSetSaveFile(Net net, const char file[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(PetscStrncpy(net->savefile, file ? file : "", sizeof(net->savefile)));
  net->saved = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* -net_save read by NetSetFromOptions(): remembered for NetDestroy(), and checked now */
PetscErrorCode NetSetSaveFileFromOptions_Private(Net net, const char file[])
{
  char option[256];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(option, sizeof(option), "-%snet_save", ((PetscObject)net)->prefix ? ((PetscObject)net)->prefix : ""));
  PetscCheck(file[0], PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Option %s needs a file name, e.g. %s model.h5", option, option);
  PetscCall(PetNetRemoveStaleTemporaryFiles(PetscObjectComm((PetscObject)net), file));
  PetscCall(PetNetCheckWritableFile(PetscObjectComm((PetscObject)net), file, option));
  PetscCall(PetscStrncpy(net->savefile, file, sizeof(net->savefile)));
  net->saved = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* NetDestroy(): the last resort for a requested save that has not happened (or is out of date) */
PetscErrorCode NetSaveAtDestroy_Private(Net net)
{
  PetscObjectState state;

  PetscFunctionBegin;
  if (!net->savefile[0] || !net->setupcalled || !net->theta) PetscFunctionReturn(0);
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &state));
  if (net->saved && state == net->savedstate) PetscFunctionReturn(0);
  PetscCall(PetscInfo(net, "Saving the Net to %s (-net_save) at NetDestroy()\n", net->savefile));
  PetscCall(NetSave(net, net->savefile));
  net->saved      = PETSC_TRUE;
  net->savedstate = state;
  PetscFunctionReturn(0);
}
