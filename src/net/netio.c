/*
  Saving and loading a Net: the architecture (compact layer list + input shape), the parameters and every layer's
  buffers. The format follows the file name: ".h5" or ".hdf5" is HDF5 (netiohdf5.c, a PyTorch state_dict),
  anything else PETSc binary (netiobinary.c). NetSave() writes under a temporary name and renames into place, so
  an interrupted save never replaces a good file. A loaded Net computes bit for bit what the saved one did, on any
  number of ranks.

  Hidden option for tests: -net_save_fail_for_testing makes the next write fail halfway through.
*/
#include "netio.h"
#include <errno.h>
#include <unistd.h>
#include <zlib.h>

static PetscErrorCode NetIOIsHDF5Name_Private(const char name[], PetscBool *hdf5)
{
  char      lower[PETSC_MAX_PATH_LEN];
  PetscBool h5, hdf;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(lower, name, sizeof(lower)));
  PetscCall(PetscStrtolower(lower));
  PetscCall(PetscStrendswith(lower, ".h5", &h5));
  PetscCall(PetscStrendswith(lower, ".hdf5", &hdf));
  *hdf5 = (h5 || hdf) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Creates the viewer first, so the caller can always destroy it even if opening fails. */
static PetscErrorCode NetIOOpen_Private(MPI_Comm comm, const char name[], PetscFileMode mode, PetscBool hdf5, PetscViewer *viewer)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerCreate(comm, viewer));
  if (hdf5) {
#if defined(PETSC_HAVE_HDF5)
    PetscCall(PetscViewerSetType(*viewer, PETSCVIEWERHDF5));
#else
    SETERRQ(comm, PETSC_ERR_SUP, "%s names an HDF5 file, but PETSc was built without HDF5: use another extension (e.g. .petnet) for PETSc binary", name);
#endif
  } else {
    PetscCall(PetscViewerSetType(*viewer, PETSCVIEWERBINARY));
    PetscCall(PetscViewerBinarySetSkipInfo(*viewer, PETSC_TRUE));
  }
  PetscCall(PetscViewerFileSetMode(*viewer, mode));
  PetscCall(PetscViewerFileSetName(*viewer, name));
  PetscFunctionReturn(0);
}

/* Rank 0 checks; every rank gets the answer, so the error below is raised collectively. */
static PetscErrorCode NetIOAccess_Private(MPI_Comm comm, const char path[], int mode, PetscBool *ok)
{
  PetscMPIInt rank;
  int         flg = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) flg = access(path, mode) == 0;
  PetscCallMPI(MPI_Bcast(&flg, 1, MPI_INT, 0, comm));
  *ok = flg ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Closes a viewer that wrote tmp: a close that fails on some rank (HDF5 writes its metadata then: a full disk) is an
   error on every rank naming file, and tmp is removed */
static PetscErrorCode NetIOCloseAgreed_Private(MPI_Comm comm, PetscViewer *viewer, const char file[], const char tmp[])
{
  PetscErrorCode ierr;
  int            err;

  PetscFunctionBegin;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  errno = 0;
  ierr  = PetscViewerDestroy(viewer);
  err   = ierr ? errno : 0;
  PetscCall(PetscPopErrorHandler());
  PetscCall(PetNetWriteAgree(comm, ierr, err, file, tmp));
  PetscFunctionReturn(0);
}

/*@C
  NetSave - writes the architecture, the parameters and the buffers of a Net to a file, atomically

  Collective

  Input Parameters:
+ net      - the Net (set up if it was not)
- filename - the file: a name ending in ".h5" or ".hdf5" (any case) is HDF5, any other PETSc binary; its directory
             must exist and be writable

  Notes:
  HDF5 (format version 4): the state_dict of the equivalent PyTorch model, one dataset per tensor named by its key
  ("0.weight", "0.bias", "1.num_batches_tracked", ..., "<node name>.weight" for a graph) in PyTorch's shape and layout
  (conv2d weights [out][in/groups][kh][kw], dense columns in PyTorch's (c, h, w) flatten order), so that h5py,
  torch.from_numpy and load_state_dict(strict=True) reproduce the Net in PyTorch; the architecture as attributes of
  the group "petnet" (share/python/petnet_torch.py reads and writes it). PETSc binary keeps PetNet's own layout.

  The file is written under a temporary name and renamed into place once complete: a save that fails or is
  interrupted leaves any previous file of that name untouched. NetLoad() reads it back, on any number of ranks.

  The file also records the input normalisation the Net was trained with, if any (NetSetInputNormalization(); format
  version 3: in HDF5 the float64 attributes input_scale, input_mean, input_std of "petnet", in PETSc binary a block
  after the header), and (version 4) the spatial dims of the grid of a Net in grid mode (NetSetGrid(), else 0) and a
  CRC-32 of the header: every byte that changes what the Net computes (layer list, input shape, counts, grid,
  normalisation, and each tensor with its own checksum) is checked on load. Programs save through the option -net_save
  (NetSaveFromOptions()).

  Level: beginner

.seealso: `NetLoad()`, `NetWrite()`, `NetRead()`, `NetGetSpec()`, `NetSaveFromOptions()`, `NetSetInputNormalization()`
@*/
PetscErrorCode NetSave(Net net, const char filename[])
{
  MPI_Comm       comm;
  PetscMPIInt    rank;
  PetscBool      hdf5, ok;
  PetscViewer    viewer = NULL;
  char           tmp[PETSC_MAX_PATH_LEN], dir[PETSC_MAX_PATH_LEN];
  char          *slash;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidCharPointer(filename, 2);
  PetscCall(PetscObjectGetComm((PetscObject)net, &comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(NetSetUp(net));
  PetscCall(PetscStrncpy(dir, filename, sizeof(dir)));
  PetscCall(PetscStrrchr(dir, '/', &slash));
  if (slash == dir)
    PetscCall(PetscStrcpy(dir, "."));
  else if (slash == dir + 1)
    dir[1] = 0; /* "/name": the root directory */
  else
    slash[-1] = 0;
  PetscCall(NetIOAccess_Private(comm, dir, W_OK | X_OK, &ok));
  PetscCheck(ok, comm, PETSC_ERR_FILE_OPEN, "Cannot save the Net to %s: directory %s does not exist or is not writable; create it or choose another path", filename, dir);
  PetscCall(NetIOIsHDF5Name_Private(filename, &hdf5));
  PetscCall(PetNetTemporaryFileName(comm, filename, sizeof(tmp), tmp));
  /* Whatever fails below, close the viewer and remove the partial file before passing the error on. NetWrite() raises
     a failed write on every rank alike; closing the file (HDF5 flushes then) is agreed on as well. */
  ierr = NetIOOpen_Private(comm, tmp, FILE_MODE_WRITE, hdf5, &viewer);
  if (!ierr) ierr = PetscObjectSetName((PetscObject)viewer, filename); /* messages name the file, not tmp */
  if (!ierr) ierr = NetWrite(net, viewer);
  PetscCall(NetIOCloseAgreed_Private(comm, &viewer, filename, tmp));
  { /* a failure of any rank: rank 0 removes the partial file (closing it may have written it again), and no rank
       raises the error (which may end the job) before that is done */
    int bad = ierr ? 1 : 0;

    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
    if (bad) {
      if (rank == 0) PetscCall(PetNetRemoveTemporaryFile(tmp));
      PetscCallMPI(MPI_Barrier(comm));
      PetscCheck(ierr, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Could not write the Net to %s: another rank failed (its error says why); the temporary file %s was removed", filename, tmp);
      PetscCall(ierr);
    }
  }
  PetscCall(PetNetCommitFile(comm, tmp, filename));
  PetscFunctionReturn(0);
}

/*@C
  NetLoad - replaces the layers, input shape, parameters and buffers of a Net by those saved in a file by NetSave()

  Collective

  Input Parameters:
+ net      - the Net, e.g. freshly created; its communicator may have any number of ranks
- filename - the file; as in NetSave(), ".h5" or ".hdf5" is HDF5 and any other name PETSc binary

  Options Database Key:
. -net_load <file> - NetSetFromOptions() loads the file (in place of -net_layers)

  Notes:
  The Net is set up when NetLoad() returns, and computes bit for bit what the saved one did. A layer kind the file uses
  must be registered (LayerRegister()) before loading; an unknown kind, a file from a newer PetNet or counts that do not
  match the architecture are errors that name the file. The input normalisation the file records (format version 3)
  becomes the Net's (NetGetInputNormalization()), after a check that its values are finite and its std positive;
  files of versions 1 and 2 record none. A header (version 4) or a tensor that does not match its checksum is refused as
  corrupt; files of versions 1 to 3, which predate the header's checksum, load as before. A tensor whose kind bounds its
  values (batchnorm's running_var >= 0) is refused, as one holding NaN is, when it is out of bounds.

  A Net saved in grid mode (NetSetGrid()) has as input shape one grid point's channels. Loaded without a grid it runs
  on whole fields: give their shape, channels last, with -net_input_shape (e.g. 32x32x32x4 for a 3-D grid of 4
  channels), else the error says so; or call NetSetGrid() before NetLoad().

  Level: beginner

.seealso: `NetSave()`, `NetRead()`, `NetSetFromOptions()`, `NetGetInputNormalization()`
@*/
PetscErrorCode NetLoad(Net net, const char filename[])
{
  MPI_Comm       comm;
  PetscBool      hdf5, ok;
  PetscViewer    viewer = NULL;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidCharPointer(filename, 2);
  PetscCall(PetscObjectGetComm((PetscObject)net, &comm));
  PetscCall(NetIOAccess_Private(comm, filename, R_OK, &ok));
  PetscCheck(ok, comm, PETSC_ERR_FILE_OPEN, "Cannot load the Net: model file %s does not exist or is not readable; check the path (NetSave() writes such files)", filename);
  PetscCall(NetIOIsHDF5Name_Private(filename, &hdf5));
  if (hdf5) { /* read by rank 0 with serial HDF5 (netiohdf5.c): a bad file ends the job at once, with nothing open in parallel */
    PetscCall(NetLoad_HDF5(net, filename));
    PetscFunctionReturn(0);
  }
  ierr = NetIOOpen_Private(comm, filename, FILE_MODE_READ, hdf5, &viewer);
  if (!ierr) ierr = NetRead(net, viewer);
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/*@
  NetWrite - writes the Net (architecture, parameters, buffers) to a binary or HDF5 viewer. NetSave() is the usual
  entry point; use NetWrite() to put a Net inside a file that holds other objects.

  Collective

  Input Parameters:
+ net    - the Net (set up if it was not)
- viewer - a PETSCVIEWERBINARY or PETSCVIEWERHDF5 viewer on the Net's communicator, open for writing

  Notes:
  Other viewer types are an error: NetView() prints a text summary.

  Level: intermediate

.seealso: `NetRead()`, `NetSave()`, `NetView()`
@*/
PetscErrorCode NetWrite(Net net, PetscViewer viewer)
{
  PetscBool isbinary, ishdf5;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 2);
  PetscCheckSameComm(net, 1, viewer, 2);
  PetscCall(NetSetUp(net));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERBINARY, &isbinary));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERHDF5, &ishdf5));
  if (isbinary)
    PetscCall(NetWrite_Binary(net, viewer));
  else if (ishdf5)
    PetscCall(NetWrite_HDF5(net, viewer));
  else
    SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "NetWrite() needs a binary or HDF5 viewer, not %s; use NetView() for a text summary", ((PetscObject)viewer)->type_name);
  PetscFunctionReturn(0);
}

/* The error handler of the ranks other than 0 while NetRead() reads. Every error of a read is raised on the Net's
   communicator by all ranks at once (what rank 0 read, or its verdict, is broadcast first), and rank 0 prints it.
   PETSc's traceback handler would keep this rank asleep for 10 s (counting on rank 0's MPI_Abort), while the caller,
   unwinding, may first close its viewer collectively (H5Fclose, or MPI_File_close with -viewer_binary_mpiio, waits
   for every rank): the job would take 10 s to end. So here such an error is recorded as PETSc's handler records an
   error of this rank alone, without printing it (rank 0 does), and the traceback lines of its way up the reader are
   quiet too; those of NetRead() and its callers follow as usual. An error of this rank alone (PETSC_COMM_SELF:
   memory) is printed as usual. On several ranks rank 0 runs the handler too, printing (ctx non-NULL), to know that the error is
   collective: then every rank enters a nonblocking barrier after the read, rank 0 once it has printed the message,
   and the others wait for it (a few seconds at most) before they unwind to their MPI_Abort, which would otherwise
   end the job before rank 0 had written the message. */
static PetscBool netReadCollectiveError; /* the error being raised was raised on a communicator of several ranks */

static PetscErrorCode NetReadErrorHandler(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n, PetscErrorType p, const char *mess, void *ctx)
{
  if (p == PETSC_ERROR_INITIAL) {
    PetscMPIInt size = 1;

    if (comm != PETSC_COMM_SELF) (void)MPI_Comm_size(comm, &size);
    netReadCollectiveError = (PetscBool)(size > 1);
    if (netReadCollectiveError && !ctx) {
      PetscErrorCode (*print)(const char[], ...) = PetscErrorPrintf;

      PetscErrorPrintf = PetscErrorPrintfNone; /* the handler records the error (the callers' traceback lines follow it) */
      (void)PetscTraceBackErrorHandler(PETSC_COMM_SELF, line, fun, file, n, p, mess, ctx);
      PetscErrorPrintf = print;
    }
  }
  if (netReadCollectiveError && !ctx) return n;
  return PetscTraceBackErrorHandler(comm, line, fun, file, n, p, mess, NULL);
}

/*@
  NetRead - reads a Net written by NetWrite() from a binary or HDF5 viewer, replacing its layers, input shape,
  parameters and buffers

  Collective

  Input Parameters:
+ net    - the Net
- viewer - a PETSCVIEWERBINARY or PETSCVIEWERHDF5 viewer on the Net's communicator, open for reading, at the place
           NetWrite() wrote the Net

  Notes:
  A damaged or mismatched file is one error, raised on every rank at once, printed by rank 0. The other ranks return
  it without PETSc's usual 10 s pause, so a caller that closes its viewer (collectively) before passing the error on
  ends the job at once.

  Level: intermediate

.seealso: `NetWrite()`, `NetLoad()`
@*/
PetscErrorCode NetRead(Net net, PetscViewer viewer)
{
  PetscBool      isbinary, ishdf5;
  PetscMPIInt    rank, size;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 2);
  PetscCheckSameComm(net, 1, viewer, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERBINARY, &isbinary));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERHDF5, &ishdf5));
  PetscCheck(isbinary || ishdf5, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "NetRead() needs a binary or HDF5 viewer, not %s", ((PetscObject)viewer)->type_name);
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  /* a damaged file must end the job at once, also when the caller closes its viewer first, and show rank 0's message;
     on one rank the caller's own error handler stays in place (the fuzzing harnesses' quiet one) */
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  netReadCollectiveError = PETSC_FALSE;
  if (size > 1) PetscCall(PetscPushErrorHandler(NetReadErrorHandler, rank ? NULL : (void *)net));
  ierr = isbinary ? NetRead_Binary(net, viewer) : NetRead_HDF5(net, viewer);
  if (size > 1) PetscCall(PetscPopErrorHandler());
  if (ierr && netReadCollectiveError) {
    MPI_Request    req;
    int            done = 0;
    PetscLogDouble t0, t = 0;

    PetscCallMPI(MPI_Ibarrier(PetscObjectComm((PetscObject)net), &req));
    PetscCall(PetscTime(&t0));
    while (rank && !done && t - t0 < 5.0) {
      PetscCallMPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
      if (!done) PetscCall(PetscSleep(0.001)); /* seconds */
      PetscCall(PetscTime(&t));
    }
    if (!done) PetscCallMPI(MPI_Request_free(&req));
  }
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/* The viewer's file name, for error messages. */
/* The file a viewer writes, as messages name it: NetSave() names its viewer of the temporary file after the final file */
PetscErrorCode NetIOFileName_Private(PetscViewer viewer, const char **name)
{
  PetscFunctionBegin;
  *name = ((PetscObject)viewer)->name;
  if (*name) PetscFunctionReturn(0);
  PetscCall(PetscViewerFileGetName(viewer, name));
  if (!*name) *name = "(unnamed viewer)";
  PetscFunctionReturn(0);
}

PetscErrorCode NetIOCheckVersion_Private(Net net, const char file[], PetscInt version)
{
  PetscFunctionBegin;
  PetscCheck(version <= NET_FILE_VERSION, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED,
             "Model file %s has format version %" PetscInt_FMT ", newer than this PetNet reads (version %d): upgrade PetNet, or save the model again with this version", file, version, NET_FILE_VERSION);
  PetscCheck(version >= 1, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED, "Model file %s has unsupported format version %" PetscInt_FMT " (this PetNet reads version %d): the file is corrupt; save the model again", file, version,
             NET_FILE_VERSION);
  PetscFunctionReturn(0);
}

/* Rebuilds the layers from the saved list or graph and sets the Net up; checks every kind first so the error names the file. */
PetscErrorCode NetIOSetArchitecture_Private(Net net, const char file[], const char spec[], const PetNetShape *in, PetscInt nparams)
{
  PetscErrorCode ierr;
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  char          *copy, *entry, *next;
  PetscBool      graph = strchr(spec, ';') ? PETSC_TRUE : PETSC_FALSE; /* NetGetSpec() ends every entry of a graph with ';' */

  PetscFunctionBegin;
  PetscCheck(spec[0], comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s has an empty layer list: the file is corrupt; save the model again", file);
  PetscCall(PetscStrallocpy(spec, &copy));
  for (next = copy; next;) {
    PetscErrorCode (*create)(Layer);
    PetscBool isres, isblock;

    if (graph) { /* name = kind... <- inputs; */
      char *eq;

      entry = next;
      next  = strchr(next, ';');
      if (next) *next++ = 0;
      eq = strchr(entry, '=');
      if (!eq) continue;
      entry = eq + 1;
      while (*entry == ' ') entry++;
    } else
      PetscCall(NetLayerListNext_Private(&next, &entry)); /* the top-level entries: kind, kind:args or kind(args) */
    entry[strcspn(entry, ":( <")] = 0;
    PetscCall(PetscStrtolower(entry));
    PetscCall(PetscStrcmp(entry, "residual", &isres));
    PetscCall(PetscStrcmp(entry, "transformer", &isblock)); /* spellings of NetSetLayers() made of layers, not kinds (netspec.c) */
    if (isres || isblock) continue;
    PetscCall(PetscFunctionListFind(LayerList, entry, &create));
    if (!create) {
      char kind[64];

      PetscCall(PetscStrncpy(kind, entry, sizeof(kind)));
      PetscCall(PetscFree(copy));
      SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s uses layer kind \"%s\" (architecture \"%s\"), which this PetNet does not know: register it with LayerRegister() before loading, or load with the PetNet that saved the file", file, kind,
              spec);
    }
  }
  PetscCall(PetscFree(copy));
  if (graph)
    PetscCall(NetSetGraph(net, spec));
  else
    PetscCall(NetSetLayers(net, spec));
  PetscCall(NetSetInputShape(net, in));
  net->loadnparams = nparams; /* a count that does not match is refused before the parameters are allocated */
  net->loadfile    = file;
  net->loadspec    = spec;
  ierr             = NetSetUp(net);
  net->loadnparams = -1;
  net->loadfile = net->loadspec = NULL;
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

PetscErrorCode NetIOGetNumBuffers_Private(Net net, PetscInt *n)
{
  PetscFunctionBegin;
  *n = 0;
  for (PetscInt l = 0; l < net->nlayers; l++) *n += net->layers[l]->nbuffers;
  PetscFunctionReturn(0);
}

/* The counts the file declares must be those of the architecture it declares. */
PetscErrorCode NetIOCheckCounts_Private(Net net, const char file[], PetscInt nparams, PetscInt nbuffers)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);
  PetscInt nb;
  char    *spec, shape[64];

  PetscFunctionBegin;
  PetscCall(NetIOGetNumBuffers_Private(net, &nb));
  if (nparams == net->nparams && nbuffers == nb) PetscFunctionReturn(0);
  PetscCall(NetIOGetSpec_Private(net, &spec)); /* not freed: an error follows */
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCheck(nparams == net->nparams, comm, PETSC_ERR_FILE_UNEXPECTED,
             "Model file %s holds %" PetscInt_FMT " parameters, but its architecture \"%s\" on input shape %s has %" PetscInt_FMT ": the file is corrupt or was written by an incompatible PetNet; save the model again", file, nparams, spec, shape,
             net->nparams);
  SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s holds %" PetscInt_FMT " buffer values, but its architecture \"%s\" has %" PetscInt_FMT ": the file is corrupt or was written by an incompatible PetNet; save the model again", file, nbuffers,
          spec, nb);
}

PetscErrorCode NetIOFailForTesting_Private(Net net, const char file[])
{
  PetscBool fail = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(((PetscObject)net)->options, NULL, "-net_save_fail_for_testing", &fail, NULL));
  PetscCheck(!fail, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_WRITE, "Write of %s failed on purpose (-net_save_fail_for_testing)", file);
  PetscFunctionReturn(0);
}

/* The Net's layer list or graph (NetGetSpec()) in a buffer long enough for any Net: free it with PetscFree(). Each layer
   writes at most NET_MAX_NAME characters (LayerGetSpec()); names, inputs and the residual(|) syntax add the rest. */
PetscErrorCode NetIOGetSpec_Private(Net net, char **spec)
{
  size_t len = 64;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    len += 2 * NET_MAX_NAME + 32 + strlen(net->nodes[k].name);
    for (PetscInt i = 0; i < net->nodes[k].nin; i++) len += 4 + (net->nodes[k].in[i] == NET_INPUT ? 5 : strlen(net->nodes[net->nodes[k].in[i]].name));
  }
  PetscCall(PetscMalloc1(len, spec));
  PetscCall(NetGetSpec(net, len, *spec));
  { /* without the partitions (":partition=PxQ"): they belong to the run (its rank count), not to the model */
    char *r = *spec, *w = *spec;

    while (*r) {
      if (!strncmp(r, ":partition=", 11)) {
        r += 11;
        while ((*r >= '0' && *r <= '9') || *r == 'x') r++;
        continue;
      }
      *w++ = *r++;
    }
    *w = 0;
  }
  PetscFunctionReturn(0);
}

/* "<node name>.<tensor>": "0.weight", "2.res.1.running_mean", "stem.bias" (PyTorch state_dict keys; HDF5 dataset names) */
PetscErrorCode NetIOTensorName_Private(Net net, PetscInt l, const LayerTensorInfo *t, size_t len, char name[])
{
  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(name, len, "%s.%s", net->nodes[l].name, t->name));
  PetscFunctionReturn(0);
}

/*
  The checksum of a tensor in the model files (version 2): zlib's CRC-32 of its values as IEEE-754 float64 in
  little-endian byte order, whatever the machine and the file's own byte order. In Python:
  zlib.crc32(numpy.asarray(values, dtype="<f8").tobytes()).
*/
PetscErrorCode NetIOChecksum_Private(PetscInt n, const PetscScalar *a, PetscInt64 *checksum)
{
  unsigned char bytes[4096];
  uLong         crc = crc32(0L, Z_NULL, 0);
  size_t        m   = 0;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) {
    double   v = (double)PetscRealPart(a[i]);
    uint64_t u;

    memcpy(&u, &v, sizeof(u));
    for (int b = 0; b < 8; b++) bytes[m++] = (unsigned char)(u >> (8 * b));
    if (m == sizeof(bytes) || i == n - 1) {
      crc = crc32(crc, bytes, (uInt)m);
      m   = 0;
    }
  }
  *checksum = (PetscInt64)(crc & 0xffffffffUL);
  PetscFunctionReturn(0);
}

/*
  The checksum of a model file's header (version 4): zlib's CRC-32 of every header field that changes the function the
  file computes, taken over these bytes, whatever the format:
    spec      the layer list or graph (NetGetSpec() without partitions), then one zero byte
    shape     the input shape as PetNetShapeToString() writes it ("784", "28x28x1"), then one zero byte
    nparams, nbuffers, grid   as little-endian int64 (grid: the spatial dims of a grid-mode Net, else 0)
    normset   one byte, 1 if the file records an input normalisation, else 0
    norm      if normset: scale, mean, std as little-endian float64
  In Python (share/python/petnet_torch.py, header_checksum()):
    zlib.crc32(spec.encode() + b"\0" + shape.encode() + b"\0" + struct.pack("<qqqB", nparams, nbuffers, grid, normset)
               + (struct.pack("<3d", scale, mean, std) if normset else b""))
  The tensors have checksums of their own (NetIOChecksum_Private()), so with both every byte of the file that changes
  what the Net computes is covered.
*/
PetscErrorCode NetIOHeaderChecksum_Private(const char spec[], const PetNetShape *in, PetscInt nparams, PetscInt nbuffers, PetscInt grid, PetscBool normset, const PetscReal norm[], PetscInt64 *checksum)
{
  unsigned char bytes[3 * 8 + 1 + 3 * 8], zero = 0;
  char          shape[128];
  size_t        m         = 0;
  PetscInt64    counts[3] = {nparams, nbuffers, grid};
  uLong         crc       = crc32(0L, Z_NULL, 0);

  PetscFunctionBegin;
  PetscCall(PetNetShapeToString(in, sizeof(shape), shape));
  crc = crc32(crc, (const unsigned char *)spec, (uInt)strlen(spec));
  crc = crc32(crc, &zero, 1);
  crc = crc32(crc, (const unsigned char *)shape, (uInt)strlen(shape));
  crc = crc32(crc, &zero, 1);
  for (int k = 0; k < 3; k++)
    for (int b = 0; b < 8; b++) bytes[m++] = (unsigned char)((uint64_t)counts[k] >> (8 * b));
  bytes[m++] = normset ? 1 : 0;
  for (int k = 0; normset && k < 3; k++) {
    double   v = (double)norm[k];
    uint64_t u;

    memcpy(&u, &v, sizeof(u));
    for (int b = 0; b < 8; b++) bytes[m++] = (unsigned char)(u >> (8 * b));
  }
  crc       = crc32(crc, bytes, (uInt)m);
  *checksum = (PetscInt64)(crc & 0xffffffffUL);
  PetscFunctionReturn(0);
}

static PetscErrorCode NetIOCheckNormalization_Private(Net, const char[], PetscBool, const PetscReal[]);

/* The spatial dims of the grid the Net runs on in grid mode (NetSetGrid()), 0 in batch mode: recorded by version 4 */
PetscErrorCode NetIOGetGridDimension_Private(Net net, PetscInt *grid)
{
  PetscFunctionBegin;
  *grid = 0;
  if (net->grid) PetscCall(DMGetDimension(net->grid, grid));
  PetscFunctionReturn(0);
}

/*
  The input shape to build a Net from a file with: the file's, in (its per-point dof for a Net trained in grid mode:
  grid > 0). A grid-mode Net runs in batch mode on whole fields, the same convolutions with the same zero padding at the
  field's edges: a Net being loaded without a grid takes the shape of one field, channels last, from -net_input_shape
  (d x h x w x dof for a 3-D grid); without it the error says so, naming the file.
*/
PetscErrorCode NetIOGridInputShape_Private(Net net, const char file[], PetscInt grid, PetNetShape *in)
{
  char        text[64] = "", dof[64];
  PetscBool   flg;
  PetNetShape field;
  const char *prefix;

  PetscFunctionBegin;
  if (!grid || net->grid) PetscFunctionReturn(0);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)net, &prefix));
  PetscCall(PetNetShapeToString(in, sizeof(dof), dof));
  PetscCall(PetscOptionsGetString(((PetscObject)net)->options, prefix, "-net_input_shape", text, sizeof(text), &flg));
  PetscCheck(flg && text[0], PetscObjectComm((PetscObject)net), PETSC_ERR_USER_INPUT,
             "Model file %s was trained in grid mode (NetSetGrid(): a sample was one point of a %" PetscInt_FMT
             "-D grid of %s channels): to evaluate it on whole fields give their shape, channels last, with -%snet_input_shape %s%s, or load it after NetSetGrid() in a program that builds the grid",
             file, grid, dof, prefix ? prefix : "",
             grid == 3   ? "DxHxWx"
             : grid == 2 ? "HxWx"
                         : "Nx",
             dof);
  PetscCall(PetNetShapeFromString(text, &field));
  PetscCheck(field.ndim == grid + 1 && field.dim[grid] == in->dim[0] && in->ndim == 1, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP,
             "Model file %s was trained in grid mode on a %" PetscInt_FMT "-D grid of %s channels: -%snet_input_shape %s must be one field of %" PetscInt_FMT " dims, channels (%s) last", file, grid, dof, prefix ? prefix : "", text, grid + 1, dof);
  *in = field;
  PetscFunctionReturn(0);
}

/* The header just read (version 4 on: against the checksum the file recorded; earlier versions have none) */
PetscErrorCode NetIOCheckHeader_Private(Net net, const char file[], PetscInt version, const char spec[], const PetNetShape *in, PetscInt nparams, PetscInt nbuffers, PetscInt grid, PetscBool normset, const PetscReal norm[], PetscInt64 crc)
{
  PetscInt64 found;
  char       shape[128];

  PetscFunctionBegin;
  PetscCall(NetIOCheckNormalization_Private(net, file, normset, norm)); /* a NaN or a negative std: the more precise message */
  if (version < NET_FILE_VERSION_HEADER_CRC) PetscFunctionReturn(0);
  PetscCall(NetIOHeaderChecksum_Private(spec, in, nparams, nbuffers, grid, normset, norm, &found));
  PetscCall(PetNetShapeToString(in, sizeof(shape), shape));
  PetscCheck(found == crc, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED,
             "Model file %s is corrupt: its header (architecture \"%.200s\", input shape %s, %" PetscInt_FMT " parameters, %" PetscInt_FMT
             " buffer values, input normalisation%s) does not match its checksum (CRC-32 %08lx recorded, %08lx read); the file was damaged after it was written: use another copy or save the model again",
             file, spec, shape, nparams, nbuffers, normset ? "" : " none", (unsigned long)crc, (unsigned long)found);
  PetscFunctionReturn(0);
}

/* A tensor just read from a model file: finite values, and the checksum the file recorded for it (if it has one). */
PetscErrorCode NetIOCheckTensor_Private(Net net, const char file[], const char name[], PetscInt n, const PetscScalar *a, PetscBool hascrc, PetscInt64 crc)
{
  MPI_Comm   comm = PetscObjectComm((PetscObject)net);
  PetscInt64 found;

  PetscFunctionBegin;
  if (hascrc) {
    PetscCall(NetIOChecksum_Private(n, a, &found));
    PetscCheck(found == crc, comm, PETSC_ERR_FILE_UNEXPECTED,
               "Model file %s is corrupt: tensor \"%s\" (%" PetscInt_FMT " values) does not match its checksum (CRC-32 %08lx recorded, %08lx read); the file was damaged after it was written: use another copy or save the model again", file, name, n,
               (unsigned long)crc, (unsigned long)found);
  }
  for (PetscInt i = 0; i < n; i++)
    PetscCheck(!PetscIsInfOrNanScalar(a[i]), comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s: tensor \"%s\" holds %s at index %" PetscInt_FMT ": a model with non-finite weights cannot be used; load an earlier (finite) copy of the model", file, name,
               PetscIsNanScalar(a[i]) ? "NaN" : "Inf", i);
  PetscFunctionReturn(0);
}

/*
  The tensors of a loaded Net whose kind bounds their values (LayerTensorInfo.nonnegative: batchnorm's running_var):
  a checksum only says the file is as written, and a variance below zero, written by a hand-made file or a bug, makes
  every prediction of the layer NaN or one class. Refused as NaN is, with the file, the tensor and the value.
*/
PetscErrorCode NetIOCheckTensorRanges_Private(Net net, const char file[])
{
  const PetscScalar *rep;
  PetscInt           badl = -1, badi = -1;
  LayerTensorInfo    bad;
  PetscReal          value = 0;
  char               name[4096];

  PetscFunctionBegin;
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &rep));
  for (PetscInt l = 0; badl < 0 && l < net->nlayers; l++) {
    Layer              layer = net->layers[l];
    LayerTensorInfo    info[LAYER_MAX_TENSORS];
    PetscInt           nt;
    const PetscScalar *blk;

    PetscCall(LayerGetTensors(layer, &nt, info));
    PetscCall(NetGetNodeBlock_Private(net, l, rep, &blk));
    for (PetscInt t = 0; badl < 0 && t < nt; t++) {
      const PetscScalar *a = info[t].buffer ? layer->buffers + info[t].offset : blk + info[t].offset;

      for (PetscInt i = 0; info[t].nonnegative && badl < 0 && i < info[t].size; i++)
        if (!(PetscRealPart(a[i]) >= 0)) {
          badl  = l;
          badi  = i;
          bad   = info[t];
          value = PetscRealPart(a[i]);
        }
    }
    PetscCall(NetRestoreNodeBlock_Private(net, l, &blk));
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &rep));
  if (badl < 0) PetscFunctionReturn(0);
  PetscCall(NetIOTensorName_Private(net, badl, &bad, sizeof(name), name));
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED,
          "Model file %s: tensor \"%s\" holds %g at index %" PetscInt_FMT ", but a %s cannot be negative: the model would predict NaN or one class for every input; the file was damaged or written by hand: load an earlier copy of the model", file,
          name, (double)value, badi, bad.name);
}

/*
  The input normalisation a model file records (version 3; older files record none: set = PETSC_FALSE), values =
  {scale, mean, std}: checked (finite, std > 0) before the Net records it, with an error naming the file.
*/
static PetscErrorCode NetIOCheckNormalization_Private(Net net, const char file[], PetscBool set, const PetscReal values[])
{
  MPI_Comm    comm    = PetscObjectComm((PetscObject)net);
  const char *name[3] = {"scale", "mean", "std"};

  PetscFunctionBegin;
  if (!set) PetscFunctionReturn(0);
  for (int k = 0; k < 3; k++)
    PetscCheck(!PetscIsInfOrNanReal(values[k]), comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s is corrupt: its input normalisation %s is %s; the file was damaged after it was written: use another copy or save the model again", file, name[k],
               PetscIsNanReal(values[k]) ? "NaN" : "Inf");
  PetscCheck(values[2] > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "Model file %s is corrupt: its input normalisation std is %g, not positive; the file was damaged after it was written: use another copy or save the model again", file, (double)values[2]);
  PetscFunctionReturn(0);
}

PetscErrorCode NetIOSetNormalization_Private(Net net, const char file[], PetscBool set, const PetscReal values[])
{
  PetscFunctionBegin;
  net->normset = PETSC_FALSE;
  if (!set) PetscFunctionReturn(0);
  PetscCall(NetIOCheckNormalization_Private(net, file, set, values));
  PetscCall(NetSetInputNormalization(net, values[0], values[1], values[2]));
  PetscFunctionReturn(0);
}
