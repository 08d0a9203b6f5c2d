static const char help[] = "Saving and loading a Net (NetSave/NetLoad, binary and HDF5).\n"
                           "Default: round trips on this communicator, files saved on 2 ranks loaded on 1 and on all ranks,\n"
                           "atomic replacement, -net_load, a Net inside a viewer holding other objects (binary, and an HDF5 group); every loaded Net must\n"
                           "give outputs identical bit for bit to the saved one.\n"
                           "  -case NAME          write a broken model file and load it (must fail): missing, truncated, magic, vecfile,\n"
                           "                      version, kind, count, tensor, h5group\n"
                           "  -corrupt_base PFX   write PFX.h5 and PFX.petnet for tests/io_corrupt.py to damage\n"
                           "  -load FILE          load FILE (a damaged model file: must fail); -load_read: with NetRead() from a viewer\n"
                           "  -torch_export PFX   write PFX.h5 (model) and PFX_data.h5 (input, output) for share/python/petnet_torch.py\n"
                           "  -torch_import PFX   load PFX.h5 written by PyTorch and check PetNet's output on PFX_data.h5 to 1e-12\n"
                           "  -torch_export PFX -torch_spec SPEC -torch_shape SHAPE [-torch_train] [-torch_nlocal 4] (SPEC a layer list or a graph)\n"
                           "                      any model (conv2d, pools, batchnorm, residual, ...): PFX.h5, and PFX_data.h5 with the input and\n"
                           "                      PetNet's evaluation-mode output; -torch_train adds one training-mode pass (output_train) and\n"
                           "                      the model after it (PFX_after.h5, updated running statistics); -torch_roundtrip first\n"
                           "                      reads PFX.h5 (and PFX.petnet, binary) back: the same Net bit for bit\n"
                           "  -torch_import_models PFX1,PFX2,...  each PFXi.h5 written by PyTorch: PetNet's evaluation-mode output on\n"
                           "                      PFXi_data.h5 to 1e-12 (-torch_rtol: another bound, 1e-6 for PyTorch's float models), and if\n"
                           "                      recorded the training-mode output and PFXi_after.h5's statistics\n";

#include <petnet.h>
#include <petnet/private/layerimpl.h>
#include <petscviewerhdf5.h>
#include <unistd.h>

/*
  "shift", a layer kind registered by this test to exercise buffers (as batchnorm's running statistics will):
    y[s][i] = w[i] x[s][i] + r[i],   w = parameters ("weight"), r = layer->buffers ("running_mean").
  Only the forward pass is needed here.
*/
static PetscErrorCode LayerSetUp_Shift(Layer layer)
{
  PetscInt n;

  PetscFunctionBegin;
  PetscCall(PetNetShapeSize(&layer->in, &n));
  layer->nparams  = n;
  layer->nbuffers = n;
  PetscCall(PetscFree(layer->buffers));
  PetscCall(PetscCalloc1(n, &layer->buffers));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Shift(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(layer->buffers));
  layer->nbuffers = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerForward_Shift(Layer layer, PetscInt n, const PetscScalar *w, const PetscScalar *x, PetscScalar *y)
{
  PetscInt m = layer->insize;

  PetscFunctionBegin;
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < m; i++) y[s * m + i] = w[i] * x[s * m + i] + layer->buffers[i];
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerTensors_Shift(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, 2 * sizeof(info[0])));
  PetscCall(PetscStrcpy(info[0].name, "weight"));
  info[0].size    = layer->nparams;
  info[0].ndim    = 1;
  info[0].dims[0] = layer->nparams;
  PetscCall(PetscStrcpy(info[1].name, "running_mean"));
  info[1].buffer  = PETSC_TRUE;
  info[1].size    = layer->nbuffers;
  info[1].ndim    = 1;
  info[1].dims[0] = layer->nbuffers;
  *n              = 2;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerCreate_Shift(Layer layer)
{
  PetscFunctionBegin;
  layer->ops->setup   = LayerSetUp_Shift;
  layer->ops->reset   = LayerReset_Shift;
  layer->ops->destroy = LayerReset_Shift;
  layer->ops->forward = LayerForward_Shift;
  layer->ops->tensors = LayerTensors_Shift;
  PetscFunctionReturn(0);
}

static const char *spec_all  = "dense:7,leakyrelu:0.1,shift,dense:6,tanh,dense:5,gelu,softplus,sigmoid,dense:4,identity,relu,dense:3";
static PetNetShape shape_all = {3, {2, 3, 2}};

/* Values that depend on the global index only, so the same Net is built on any number of ranks. */
static PetscErrorCode FillByIndex(Vec v, PetscReal a, PetscReal b, PetscReal scale)
{
  PetscInt     rstart, rend;
  PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &x));
  for (PetscInt i = rstart; i < rend; i++) x[i - rstart] = scale * PetscSinReal(a * i + b);
  PetscCall(VecRestoreArrayWrite(v, &x));
  PetscFunctionReturn(0);
}

/* Parameters and buffers as functions of their index (buffers are replicated: every rank writes the same values). */
static PetscErrorCode SetDeterministicModel(Net net, PetscReal scale)
{
  Vec      theta;
  PetscInt nl;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(FillByIndex(theta, 1.3, 0.7, scale));
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer layer;

    PetscCall(NetGetLayer(net, l, &layer));
    for (PetscInt i = 0; i < layer->nbuffers; i++) layer->buffers[i] = 0.3 + 0.25 * PetscCosReal(0.9 * i + l); /* positive: batchnorm's running_var must be */
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode BuildNet(MPI_Comm comm, const char spec[], const PetNetShape *in, PetscReal scale, Net *net)
{
  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  PetscCall(NetSetLayers(*net, spec));
  PetscCall(NetSetInputShape(*net, in));
  PetscCall(NetSetUp(*net));
  PetscCall(SetDeterministicModel(*net, scale));
  PetscFunctionReturn(0);
}

/* A batch of nlocal samples per rank, its values depending on the global index; Y = net(X). */
static PetscErrorCode Evaluate(Net net, PetscInt nlocal, Vec *X, Vec *Y)
{
  PetscFunctionBegin;
  PetscCall(NetCreateVecs(net, nlocal, X, Y));
  PetscCall(FillByIndex(*X, 0.37, 0.1, 1.5));
  PetscCall(NetForward(net, *X, *Y));
  PetscFunctionReturn(0);
}

/* The loaded Net must be the saved one: same architecture, same parameters and buffers, same outputs bit for bit. */
static PetscErrorCode CheckSame(Net ref, Net net, const char what[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)ref);
  char        s1[1024], s2[1024];
  PetNetShape i1, i2;
  PetscBool   same;
  Vec         t1, t2, X, Y1, Y2;
  PetscInt    nl;
  PetscReal   diff;

  PetscFunctionBegin;
  PetscCall(NetGetSpec(ref, sizeof(s1), s1));
  PetscCall(NetGetSpec(net, sizeof(s2), s2));
  PetscCall(PetscStrcmp(s1, s2, &same));
  PetscCheck(same, comm, PETSC_ERR_PLIB, "%s: layer list \"%s\" after loading, \"%s\" saved", what, s2, s1);
  PetscCall(NetGetInputShape(ref, &i1));
  PetscCall(NetGetInputShape(net, &i2));
  PetscCheck(PetNetShapeEqual(&i1, &i2), comm, PETSC_ERR_PLIB, "%s: input shape differs after loading", what);
  PetscCall(NetGetParameters(ref, &t1));
  PetscCall(NetGetParameters(net, &t2));
  PetscCall(VecEqual(t1, t2, &same));
  PetscCheck(same, comm, PETSC_ERR_PLIB, "%s: parameters differ after loading", what);
  PetscCall(NetGetNumLayers(ref, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer a, b;

    PetscCall(NetGetLayer(ref, l, &a));
    PetscCall(NetGetLayer(net, l, &b));
    PetscCheck(a->nbuffers == b->nbuffers, comm, PETSC_ERR_PLIB, "%s: layer %" PetscInt_FMT " has %" PetscInt_FMT " buffer values after loading, %" PetscInt_FMT " saved", what, l, b->nbuffers, a->nbuffers);
    PetscCall(PetscArraycmp(a->buffers, b->buffers, a->nbuffers, &same));
    PetscCheck(same, comm, PETSC_ERR_PLIB, "%s: buffers of layer %" PetscInt_FMT " differ after loading", what, l);
  }
  PetscCall(Evaluate(ref, 3, &X, &Y1));
  PetscCall(VecDuplicate(Y1, &Y2));
  PetscCall(NetForward(net, X, Y2));
  PetscCall(VecEqual(Y1, Y2, &same));
  PetscCall(VecAXPY(Y2, -1.0, Y1));
  PetscCall(VecNorm(Y2, NORM_INFINITY, &diff));
  PetscCheck(same && diff == 0.0, comm, PETSC_ERR_PLIB, "%s: outputs differ after loading, max |diff| %g", what, (double)diff);
  /* all ranks call this, also when comm is PETSC_COMM_SELF: report once */
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-52s outputs identical (max |diff| %g)\n", what, (double)diff));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y1));
  PetscCall(VecDestroy(&Y2));
  PetscFunctionReturn(0);
}

static PetscErrorCode RoundTrip(Net ref, const char file[], const char what[])
{
  Net net;

  PetscFunctionBegin;
  PetscCall(NetSave(ref, file));
  PetscCall(NetCreate(PetscObjectComm((PetscObject)ref), &net));
  PetscCall(NetLoad(net, file));
  PetscCall(CheckSame(ref, net, what));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* Saved on the first two ranks, loaded on every rank count this run offers (1 and size). */
static PetscErrorCode CrossRanks(const char ext[])
{
  PetscMPIInt size, rank;
  MPI_Comm    two;
  char        file[PETSC_MAX_PATH_LEN], what[128];
  MPI_Comm    comms[2] = {PETSC_COMM_SELF, PETSC_COMM_WORLD};

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (size < 2) PetscFunctionReturn(0);
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_saved_on_2%s", size, ext));
  PetscCallMPI(MPI_Comm_split(PETSC_COMM_WORLD, rank < 2 ? 0 : 1, rank, &two));
  if (rank < 2) {
    Net net;

    PetscCall(BuildNet(two, spec_all, &shape_all, 0.6, &net));
    PetscCall(NetSave(net, file));
    PetscCall(NetDestroy(&net));
  }
  PetscCallMPI(MPI_Comm_free(&two));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  for (int c = 0; c < 2; c++) {
    Net         ref, net;
    PetscMPIInt n;

    PetscCallMPI(MPI_Comm_size(comms[c], &n));
    PetscCall(BuildNet(comms[c], spec_all, &shape_all, 0.6, &ref));
    PetscCall(NetCreate(comms[c], &net));
    PetscCall(NetLoad(net, file));
    PetscCall(PetscSNPrintf(what, sizeof(what), "%s saved on 2 ranks, loaded on %d", ext, n));
    PetscCall(CheckSame(ref, net, what));
    PetscCall(NetDestroy(&ref));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* A save that fails halfway must leave the previous file in place, loadable, and no temporary file behind. */
static PetscErrorCode AtomicReplace(Net good, const char file[], const char what[])
{
  Net            other, net;
  PetscErrorCode ierr;
  char           tmp[PETSC_MAX_PATH_LEN];
  PetscBool      exists;
  PetscMPIInt    rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(NetSave(good, file));
  PetscCall(BuildNet(PETSC_COMM_WORLD, "dense:4,tanh,dense:2", &shape_all, 0.3, &other));
  PetscCall(PetscOptionsSetValue(NULL, "-net_save_fail_for_testing", "1"));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = NetSave(other, file);
  PetscCall(PetscPopErrorHandler());
  PetscCall(PetscOptionsClearValue(NULL, "-net_save_fail_for_testing"));
  PetscCheck(ierr == PETSC_ERR_FILE_WRITE, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the injected failure was not reported (error %d)", what, (int)ierr);
  PetscCall(PetNetTemporaryFileName(PETSC_COMM_WORLD, file, sizeof(tmp), tmp));
  exists = (PetscBool)(access(tmp, F_OK) == 0);
  PetscCheck(!exists, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the failed save left %s behind", what, tmp);
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(CheckSame(good, net, what));
  PetscCall(NetDestroy(&net));
  PetscCall(NetDestroy(&other));
  PetscFunctionReturn(0);
}

/* A save into a directory that does not exist fails cleanly (collectively, no leak, no file). */
static PetscErrorCode NoDirectory(Net good)
{
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = NetSave(good, "tests/out/io_no_such_directory/model.petnet");
  PetscCall(PetscPopErrorHandler());
  PetscCheck(ierr == PETSC_ERR_FILE_OPEN, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "saving into a missing directory returned error %d, expected PETSC_ERR_FILE_OPEN", (int)ierr);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-52s refused with PETSC_ERR_FILE_OPEN\n", "save into a missing directory"));
  PetscFunctionReturn(0);
}

/* -net_load through NetSetFromOptions: the file's architecture replaces -net_layers. */
static PetscErrorCode LoadFromOptions(Net good, const char file[])
{
  Net net;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)net, "io_"));
  PetscCall(PetscOptionsSetValue(NULL, "-io_net_layers", "dense:2"));
  PetscCall(PetscOptionsSetValue(NULL, "-io_net_load", file));
  PetscCall(NetSetFromOptions(net));
  PetscCall(PetscOptionsClearValue(NULL, "-io_net_layers"));
  PetscCall(PetscOptionsClearValue(NULL, "-io_net_load"));
  PetscCall(CheckSame(good, net, "-net_load (replacing -net_layers dense:2)"));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* NetWrite/NetRead between other objects of one binary file. */
static PetscErrorCode Embedded(Net good)
{
  const char *file = "tests/out/io_embedded.bin";
  PetscViewer viewer;
  Vec         a, b, a2, b2;
  Net         net;
  PetscBool   same;

  PetscFunctionBegin;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 5, &a));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 9, &b));
  PetscCall(FillByIndex(a, 0.5, 0.0, 1.0));
  PetscCall(FillByIndex(b, 0.8, 1.0, 2.0));
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(a, viewer));
  PetscCall(NetWrite(good, viewer));
  PetscCall(VecView(b, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDuplicate(a, &a2));
  PetscCall(VecDuplicate(b, &b2));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
  PetscCall(VecLoad(a2, viewer));
  PetscCall(NetRead(net, viewer));
  PetscCall(VecLoad(b2, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecEqual(a, a2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Vec written before the Net reads back differently");
  PetscCall(VecEqual(b, b2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Vec written after the Net reads back differently");
  PetscCall(CheckSame(good, net, "NetWrite/NetRead between two Vecs"));
  PetscCall(NetDestroy(&net));
  PetscCall(VecDestroy(&a));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&a2));
  PetscCall(VecDestroy(&b2));
  PetscFunctionReturn(0);
}

/* NetWrite/NetRead in the group /model of an HDF5 file, between two Vecs at the root (NetRead() reads through the
   viewer's file, on rank 0, from the viewer's current group). */
static PetscErrorCode EmbeddedHDF5(Net good)
{
  char        file[PETSC_MAX_PATH_LEN];
  PetscMPIInt size;
  PetscViewer viewer;
  Vec         a, b, a2, b2;
  Net         net;
  PetscBool   same;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_embedded.h5", size));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 5, &a));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 9, &b));
  PetscCall(PetscObjectSetName((PetscObject)a, "a"));
  PetscCall(PetscObjectSetName((PetscObject)b, "b"));
  PetscCall(FillByIndex(a, 0.5, 0.0, 1.0));
  PetscCall(FillByIndex(b, 0.8, 1.0, 2.0));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(a, viewer));
  PetscCall(PetscViewerHDF5PushGroup(viewer, "/model"));
  PetscCall(NetWrite(good, viewer));
  PetscCall(PetscViewerHDF5PopGroup(viewer));
  PetscCall(VecView(b, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDuplicate(a, &a2));
  PetscCall(VecDuplicate(b, &b2));
  PetscCall(PetscObjectSetName((PetscObject)a2, "a"));
  PetscCall(PetscObjectSetName((PetscObject)b2, "b"));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
  PetscCall(VecLoad(a2, viewer));
  PetscCall(PetscViewerHDF5PushGroup(viewer, "/model"));
  PetscCall(NetRead(net, viewer));
  PetscCall(PetscViewerHDF5PopGroup(viewer));
  PetscCall(VecLoad(b2, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecEqual(a, a2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Vec written before the Net reads back differently");
  PetscCall(VecEqual(b, b2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Vec written after the Net reads back differently");
  PetscCall(CheckSame(good, net, "NetWrite/NetRead in an HDF5 group"));
  PetscCall(NetDestroy(&net));
  PetscCall(VecDestroy(&a));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&a2));
  PetscCall(VecDestroy(&b2));
  PetscFunctionReturn(0);
}

/* A graph whose text is longer than the 8192 characters model files once held: saved and loaded whole, not cut */
static PetscErrorCode LongSpec(const char ext[])
{
  const size_t len = 65536;
  char        *spec, *spec2, file[PETSC_MAX_PATH_LEN];
  PetNetShape  in = {1, {3}};
  PetscMPIInt  size;
  Net          ref, net;
  Vec          t1, t2, X, Y1, Y2;
  PetscBool    same;
  size_t       n;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscMalloc2(len, &spec, len, &spec2));
  spec[0] = 0;
  for (int i = 0; i < 48; i++) { /* a graph of 48 nodes with names of 200 characters: "n0_000... = dense:3 <- input; ..." */
    char name[512], prev[512], entry[1200];

    PetscCall(PetscSNPrintf(name, sizeof(name), "n%d_%0*d", i, 200, 0));
    PetscCall(PetscSNPrintf(entry, sizeof(entry), "%s = %s <- %s; ", name, i % 2 ? "tanh" : "dense:3", i ? prev : "input"));
    PetscCall(PetscStrlcat(spec, entry, len));
    PetscCall(PetscStrcpy(prev, name));
  }
  PetscCall(PetscStrlen(spec, &n));
  PetscCheck(n > 8192, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the long layer list has only %zu characters", n);
  PetscCall(NetCreate(PETSC_COMM_WORLD, &ref));
  PetscCall(NetSetGraph(ref, spec));
  PetscCall(NetSetInputShape(ref, &in));
  PetscCall(NetSetUp(ref));
  PetscCall(SetDeterministicModel(ref, 0.6));
  PetscCall(NetGetSpec(ref, len, spec)); /* the normal form, which the loaded Net must give back */
  PetscCall(PetscStrlen(spec, &n));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_longspec%s", size, ext));
  PetscCall(NetSave(ref, file));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(NetGetSpec(net, len, spec2));
  PetscCall(PetscStrcmp(spec, spec2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the loaded layer list differs from the saved one (%zu characters)", file, n);
  PetscCall(NetGetParameters(ref, &t1));
  PetscCall(NetGetParameters(net, &t2));
  PetscCall(VecEqual(t1, t2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: loaded parameters differ", file);
  PetscCall(Evaluate(ref, 2, &X, &Y1));
  PetscCall(VecDuplicate(Y1, &Y2));
  PetscCall(NetForward(net, X, Y2));
  PetscCall(VecEqual(Y1, Y2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: loaded Net computes different outputs", file);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: a layer list of %zu characters saved and loaded whole\n", file, n));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y1));
  PetscCall(VecDestroy(&Y2));
  PetscCall(NetDestroy(&net));
  PetscCall(NetDestroy(&ref));
  PetscCall(PetscFree2(spec, spec2));
  PetscFunctionReturn(0);
}

static PetscErrorCode RunRoundTrips(void)
{
  PetscMPIInt size;
  Net         net;
  char        file[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(BuildNet(PETSC_COMM_WORLD, spec_all, &shape_all, 0.6, &net));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_model.petnet", size));
  PetscCall(RoundTrip(net, file, "binary round trip"));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_model.h5", size));
  PetscCall(RoundTrip(net, file, "HDF5 round trip"));
  PetscCall(CrossRanks(".petnet"));
  PetscCall(CrossRanks(".h5"));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_atomic.petnet", size));
  PetscCall(AtomicReplace(net, file, "binary: failed save keeps the old file"));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_atomic.h5", size));
  PetscCall(AtomicReplace(net, file, "HDF5: failed save keeps the old file"));
  PetscCall(NoDirectory(net));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%d_model.h5", size));
  PetscCall(LoadFromOptions(net, file));
  PetscCall(Embedded(net));
  PetscCall(EmbeddedHDF5(net));
  PetscCall(LongSpec(".petnet"));
  PetscCall(LongSpec(".h5"));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* A PetNet binary header written by hand (the layout of src/net/netiobinary.c), followed by a parameter Vec of n entries. */
static PetscErrorCode WriteBinaryModel(const char file[], PetscInt classid, PetscInt version, const char spec[], PetscInt insize, PetscInt nparams, PetscInt n)
{
  PetscViewer viewer;
  size_t      len;
  PetscInt    header[10] = {classid, version, 0, 1, insize, 0, 0, 0, nparams, 0};
  Vec         theta;

  PetscFunctionBegin;
  PetscCall(PetscStrlen(spec, &len));
  header[2] = (PetscInt)len;
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  PetscCall(PetscViewerBinaryWrite(viewer, header, 10, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, spec, header[2], PETSC_CHAR));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, n, &theta));
  PetscCall(VecSet(theta, 0.5));
  PetscCall(VecView(theta, viewer));
  PetscCall(VecDestroy(&theta));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscFunctionReturn(0);
}

/* Each case writes a broken file and loads it: the program must stop with the error naming the problem. */
typedef enum { CASE_MISSING, CASE_TRUNCATED, CASE_MAGIC, CASE_VECFILE, CASE_VERSION, CASE_KIND, CASE_COUNT, CASE_TENSOR, CASE_H5GROUP } ErrorCase;
static const char *const ErrorCases[] = {"missing", "truncated", "magic", "vecfile", "version", "kind", "count", "tensor", "h5group", "ErrorCase", "CASE_", NULL};

/* An HDF5 file for "dense:4,relu,dense:2" on input 3 without the dataset "2.bias" (tensor), or without /petnet (h5group). */
static PetscErrorCode WriteHDF5Model(const char file[], PetscBool group)
{
  PetscViewer viewer;
  PetscInt    version = 1, nparams = 26, nbuffers = 0;
  const char *names[] = {"0.weight", "0.bias", "2.weight"};
  PetscInt    sizes[] = {12, 4, 8};

  PetscFunctionBegin;
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  if (group) {
    PetscCall(PetscViewerHDF5WriteGroup(viewer, "petnet"));
    PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "version", PETSC_INT, &version));
    PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "spec", PETSC_STRING, "dense:4,relu,dense:2"));
    PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "input_shape", PETSC_STRING, "3"));
    PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "nparams", PETSC_INT, &nparams));
    PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "nbuffers", PETSC_INT, &nbuffers));
  }
  for (int t = 0; t < 3; t++) {
    Vec v;

    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, sizes[t], &v));
    PetscCall(PetscObjectSetName((PetscObject)v, names[t]));
    PetscCall(VecSet(v, 0.5));
    PetscCall(VecView(v, viewer));
    PetscCall(VecDestroy(&v));
  }
  PetscCall(PetscViewerDestroy(&viewer));
  PetscFunctionReturn(0);
}

static PetscErrorCode RunErrorCase(ErrorCase c)
{
  char        file[PETSC_MAX_PATH_LEN];
  PetscMPIInt rank;
  Net         net;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%s_error.petnet", ErrorCases[c]));
  switch (c) {
  case CASE_MISSING:
    PetscCall(PetscStrcpy(file, "tests/out/io_this_file_does_not_exist.petnet"));
    break;
  case CASE_TRUNCATED: {
    Net good;

    PetscCall(BuildNet(PETSC_COMM_WORLD, spec_all, &shape_all, 0.6, &good));
    PetscCall(NetSave(good, file));
    PetscCall(NetDestroy(&good));
    if (rank == 0) PetscCheck(truncate(file, 300) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "could not truncate %s", file);
    PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  } break;
  case CASE_MAGIC: {
    FILE *fp;

    PetscCall(PetscFOpen(PETSC_COMM_WORLD, file, "w", &fp));
    PetscCall(PetscFPrintf(PETSC_COMM_WORLD, fp, "this is a text file, not a model\n"));
    PetscCall(PetscFClose(PETSC_COMM_WORLD, fp));
  } break;
  case CASE_VECFILE: {
    Vec         v;
    PetscViewer viewer;

    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 10, &v));
    PetscCall(VecSet(v, 1.0));
    PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
    PetscCall(VecView(v, viewer));
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(VecDestroy(&v));
  } break;
  case CASE_VERSION:
    PetscCall(WriteBinaryModel(file, 0x504E4554, 99, "dense:4", 3, 16, 16));
    break;
  case CASE_KIND:
    PetscCall(WriteBinaryModel(file, 0x504E4554, 1, "dense:4,swish,dense:2", 3, 26, 26));
    break;
  case CASE_COUNT:
    PetscCall(WriteBinaryModel(file, 0x504E4554, 1, "dense:4", 3, 20, 20));
    break;
  case CASE_TENSOR:
  case CASE_H5GROUP:
    PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/io_%s_error.h5", ErrorCases[c]));
    PetscCall(WriteHDF5Model(file, c == CASE_TENSOR ? PETSC_TRUE : PETSC_FALSE));
    break;
  }
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* Loads a batch written as an HDF5 dataset [n][sample size], distributed by whole samples. */
static PetscErrorCode LoadBatch(PetscViewer viewer, const char name[], PetscInt samplesize, Vec *X)
{
  PetscFunctionBegin;
  PetscCall(VecCreate(PETSC_COMM_WORLD, X));
  PetscCall(VecSetBlockSize(*X, samplesize));
  PetscCall(PetscObjectSetName((PetscObject)*X, name));
  PetscCall(VecLoad(*X, viewer));
  PetscFunctionReturn(0);
}

static const char *spec_torch = "dense:8,relu,dense:8,leakyrelu:0.1,dense:8,tanh,dense:8,sigmoid,dense:6,gelu,dense:6,softplus,dense:5,identity,dense:3";

/* PFX.h5: a model with every kind PyTorch knows; PFX_data.h5: input [n][12] and PetNet's output [n][3]. */
static PetscErrorCode TorchExport(const char prefix[])
{
  Net         net;
  Vec         X, Y;
  char        file[PETSC_MAX_PATH_LEN];
  PetscViewer viewer;

  PetscFunctionBegin;
  PetscCall(BuildNet(PETSC_COMM_WORLD, spec_torch, &shape_all, 0.8, &net));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.h5", prefix));
  PetscCall(NetSave(net, file));
  PetscCall(Evaluate(net, 10, &X, &Y));
  PetscCall(VecSetBlockSize(X, 12));
  PetscCall(VecSetBlockSize(Y, 3));
  PetscCall(PetscObjectSetName((PetscObject)X, "input"));
  PetscCall(PetscObjectSetName((PetscObject)Y, "output"));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_data.h5", prefix));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(X, viewer));
  PetscCall(VecView(Y, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "wrote %s.h5 (%s) and %s: input and PetNet's output\n", prefix, spec_torch, file));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* The model and batch written by PyTorch (petnet_torch.py): PetNet's output must match PyTorch's to 1e-12 relative. */
static PetscErrorCode TorchImport(const char prefix[])
{
  Net         net;
  Vec         X, Yref, Y;
  char        file[PETSC_MAX_PATH_LEN], spec[1024];
  PetscViewer viewer;
  PetscInt    insize, outsize, nlocal;
  PetNetShape in, out;
  PetscReal   err, ref;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.h5", prefix));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_data.h5", prefix));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
  PetscCall(LoadBatch(viewer, "input", insize, &X));
  PetscCall(LoadBatch(viewer, "output", outsize, &Yref));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecGetLocalSize(X, &nlocal));
  nlocal /= insize;
  PetscCall(NetCreateVecs(net, nlocal, NULL, &Y));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Yref, NORM_INFINITY, &ref));
  PetscCall(VecAXPY(Y, -1.0, Yref));
  PetscCall(VecNorm(Y, NORM_INFINITY, &err));
  PetscCheck(ref > 0 && err <= 1e-12 * ref, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "PetNet's output on the PyTorch model differs from PyTorch's: max |diff| / max |y| = %g > 1e-12", (double)(err / ref));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PyTorch model %s: PetNet output matches PyTorch (max |diff| / max |y| = %.1e <= 1e-12)\n", spec, (double)(err / ref)));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yref));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/*
  Models of any kinds for the PyTorch bridge: each parameter tensor as a function of the global parameter index,
  weights scaled by 1.5 / sqrt(fan-in) so that values stay of order one through deep nets; batchnorm scales near 1,
  running means small and running variances positive. Buffers (replicated) are written on every rank alike.
*/
static PetscErrorCode SetTorchModel(Net net)
{
  Vec          theta;
  PetscInt     nl, np, off = 0, rstart, rend;
  PetscScalar *all, *t;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetSize(theta, &np));
  PetscCall(PetscMalloc1(np, &all));
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer           layer;
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt k = 0; k < nt; k++) {
      PetscBool mean, var, weight;
      PetscInt  fanin = 1;

      PetscCall(PetscStrendswith(info[k].name, "running_mean", &mean));
      PetscCall(PetscStrendswith(info[k].name, "running_var", &var));
      PetscCall(PetscStrendswith(info[k].name, "weight", &weight));
      for (PetscInt d = 1; d < info[k].ndim; d++) fanin *= info[k].dims[d];
      for (PetscInt i = 0; i < info[k].size; i++) {
        PetscInt g = off + info[k].offset + i; /* global parameter index */

        if (info[k].buffer)
          layer->buffers[info[k].offset + i] = var ? 0.6 + 0.3 * PetscSinReal(0.7 * i + l) : mean ? 0.2 * PetscSinReal(0.9 * i + l) : 0.1 * PetscCosReal(0.9 * i);
        else if (weight && info[k].ndim > 1)
          all[g] = 1.5 / PetscSqrtReal((PetscReal)fanin) * PetscSinReal(1.3 * g + 0.7);
        else if (weight)
          all[g] = 1.0 + 0.3 * PetscSinReal(1.3 * g + 0.7); /* batchnorm scale */
        else
          all[g] = 0.3 * PetscSinReal(1.3 * g + 0.7);
      }
    }
    off += layer->nparams;
  }
  PetscCheck(off == np, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the layers' parameters add up to %" PetscInt_FMT ", the Net has %" PetscInt_FMT, off, np);
  PetscCall(VecGetOwnershipRange(theta, &rstart, &rend));
  PetscCall(VecGetArrayWrite(theta, &t));
  PetscCall(PetscArraycpy(t, all + rstart, rend - rstart));
  PetscCall(VecRestoreArrayWrite(theta, &t));
  PetscCall(PetscFree(all));
  PetscFunctionReturn(0);
}

/*
  -torch_export PFX -torch_spec SPEC -torch_shape SHAPE: PFX.h5 (the model), PFX_data.h5 (input, PetNet's output in
  evaluation mode) for share/python/petnet_torch.py check. With -torch_train also output_train (one training-mode pass:
  batch statistics over the global batch) and PFX_after.h5, the model after that pass (updated running statistics).
  With -torch_roundtrip PFX.h5, and PFX.petnet (binary) written for the purpose, are read back first and must give the
  Net bit for bit (CheckSame()).
*/
static PetscErrorCode TorchExportSpec(const char prefix[])
{
  Net         net;
  Vec         X, Y, Yt = NULL;
  char        file[PETSC_MAX_PATH_LEN], spec[4096], shapestr[64];
  PetNetShape in, out;
  PetscInt    nlocal = 4, insize, outsize;
  PetscBool   train = PETSC_FALSE, roundtrip = PETSC_FALSE, flg;
  PetscViewer viewer;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-torch_spec", spec, sizeof(spec), &flg));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-torch_shape", shapestr, sizeof(shapestr), &flg));
  PetscCheck(flg, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-torch_spec needs -torch_shape, the per-sample input shape (e.g. 28x28x1)");
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-torch_nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-torch_train", &train, NULL));
  PetscCall(PetNetShapeFromString(shapestr, &in));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  if (spec[strcspn(spec, ":,(=")] == '=') /* a graph, name = kind <- inputs; ..., rather than a layer list */
    PetscCall(NetSetGraph(net, spec));
  else
    PetscCall(NetSetLayers(net, spec));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetUp(net));
  PetscCall(SetTorchModel(net));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.h5", prefix));
  PetscCall(NetSave(net, file));
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-torch_roundtrip", &roundtrip, NULL));
  for (PetscInt k = 0; roundtrip && k < 2; k++) { /* the file read back (PFX.h5, then PFX.petnet) is the Net: parameters,
                                                     buffers, outputs bit for bit (evaluation mode: no statistics move) */
    Net  again;
    char what[PETSC_MAX_PATH_LEN + 32], other[PETSC_MAX_PATH_LEN];

    if (k) {
      PetscCall(PetscSNPrintf(other, sizeof(other), "%s.petnet", prefix));
      PetscCall(NetSave(net, other));
    } else
      PetscCall(PetscStrncpy(other, file, sizeof(other)));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &again));
    PetscCall(NetLoad(again, other));
    PetscCall(NetSetTraining(again, PETSC_FALSE));
    PetscCall(PetscSNPrintf(what, sizeof(what), "%s round trip of %s", k ? "binary" : "HDF5", other));
    PetscCall(CheckSame(net, again, what));
    PetscCall(NetDestroy(&again));
  }
  PetscCall(Evaluate(net, nlocal, &X, &Y));
  if (train) {
    PetscCall(VecDuplicate(Y, &Yt));
    PetscCall(NetSetTraining(net, PETSC_TRUE));
    PetscCall(NetForward(net, X, Yt));
    PetscCall(VecSetBlockSize(Yt, outsize));
    PetscCall(PetscObjectSetName((PetscObject)Yt, "output_train"));
  }
  PetscCall(VecSetBlockSize(X, insize));
  PetscCall(VecSetBlockSize(Y, outsize));
  PetscCall(PetscObjectSetName((PetscObject)X, "input"));
  PetscCall(PetscObjectSetName((PetscObject)Y, "output"));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_data.h5", prefix));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(X, viewer));
  PetscCall(VecView(Y, viewer));
  if (Yt) PetscCall(VecView(Yt, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  if (train) {
    PetscCall(PetscSNPrintf(file, sizeof(file), "%s_after.h5", prefix));
    PetscCall(NetSave(net, file));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "wrote %s.h5 (%s on %s) and %s_data.h5: input and PetNet's output%s\n", prefix, spec, shapestr, prefix, train ? ", training-mode output, model after that pass" : ""));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yt));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* max |Y - Yref| / max |Yref| <= rtol (-torch_rtol, default 1e-12; 1e-6 for a reference computed by PyTorch in float),
   else an error naming what differs */
static PetscErrorCode TorchCompare(Vec Y, Vec Yref, const char what[], PetscReal *rel)
{
  Vec       D;
  PetscReal err, ref, rtol = 1e-12;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-torch_rtol", &rtol, NULL));
  PetscCall(VecDuplicate(Y, &D));
  PetscCall(VecWAXPY(D, -1.0, Yref, Y));
  PetscCall(VecNorm(D, NORM_INFINITY, &err));
  PetscCall(VecNorm(Yref, NORM_INFINITY, &ref));
  PetscCall(VecDestroy(&D));
  *rel = err / ref;
  PetscCheck(ref > 0 && err <= rtol * ref, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: PetNet differs from PyTorch, max |diff| / max |y| = %g > %g", what, (double)(err / ref), (double)rtol);
  PetscFunctionReturn(0);
}

/*
  PFX.h5 written by petnet_torch.py: PetNet's evaluation-mode output on PFX_data.h5's input must match PyTorch's to
  1e-12 relative; if the data holds output_train, so must one training-mode pass, and PetNet's running statistics
  after it must match those of PFX_after.h5 (PyTorch's model after the same pass).
*/
static PetscErrorCode TorchImportModel(const char prefix[])
{
  Net         net, after;
  Vec         X, Yref, Y, Ytref = NULL;
  char        file[PETSC_MAX_PATH_LEN], spec[4096], what[PETSC_MAX_PATH_LEN + 64];
  PetscViewer viewer;
  PetscInt    insize, outsize, nlocal, nl;
  PetNetShape in, out;
  PetscBool   has, same;
  PetscReal   rel, relt, relb = 0;
  Vec         t1, t2;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.h5", prefix));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_data.h5", prefix));
  PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
  PetscCall(LoadBatch(viewer, "input", insize, &X));
  PetscCall(LoadBatch(viewer, "output", outsize, &Yref));
  PetscCall(PetscViewerHDF5HasDataset(viewer, "output_train", &has));
  if (has) PetscCall(LoadBatch(viewer, "output_train", outsize, &Ytref));
  PetscCall(PetscViewerHDF5HasAttribute(viewer, "/", "num_batches_tracked", &has));
  if (has) { /* every batchnorm layer's count, as PyTorch had it (format version 3 keeps it) */
    PetscInt expect, nbn = 0;

    PetscCall(PetscViewerHDF5ReadAttribute(viewer, "/", "num_batches_tracked", PETSC_INT, NULL, &expect));
    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer      layer;
      PetscInt64 count;

      PetscCall(NetGetLayer(net, l, &layer));
      PetscCall(LayerBatchNormGetNumBatchesTracked(layer, &count));
      if (count < 0) continue;
      PetscCheck(count == expect, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s.h5: layer %" PetscInt_FMT " has num_batches_tracked %" PetscInt64_FMT " after loading, PyTorch had %" PetscInt_FMT, prefix, l, count, expect);
      nbn++;
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PyTorch model %s.h5: num_batches_tracked %" PetscInt_FMT " in its %" PetscInt_FMT " batchnorm layers, as PyTorch had it\n", prefix, expect, nbn));
  }
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecGetLocalSize(X, &nlocal));
  PetscCall(NetCreateVecs(net, nlocal / insize, NULL, &Y));
  PetscCall(NetForward(net, X, Y));
  PetscCall(PetscSNPrintf(what, sizeof(what), "%s.h5 in evaluation mode", prefix));
  PetscCall(TorchCompare(Y, Yref, what, &rel));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-torch_rtol", &relt, &has));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PyTorch model %s.h5 (%s): PetNet output matches PyTorch (max |diff| / max |y| = %.1e <= %g)\n", prefix, spec, (double)rel, has ? (double)relt : 1e-12));
  if (Ytref) {
    PetscCall(NetSetTraining(net, PETSC_TRUE));
    PetscCall(NetForward(net, X, Y));
    PetscCall(PetscSNPrintf(what, sizeof(what), "%s.h5 in training mode", prefix));
    PetscCall(TorchCompare(Y, Ytref, what, &relt));
    PetscCall(PetscSNPrintf(file, sizeof(file), "%s_after.h5", prefix));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &after));
    PetscCall(NetLoad(after, file));
    PetscCall(NetGetParameters(net, &t1));
    PetscCall(NetGetParameters(after, &t2));
    PetscCall(VecEqual(t1, t2, &same));
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the parameters differ from PetNet's after a training-mode forward pass (which does not change them)", file);
    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer     a, b;
      PetscReal err = 0, ref = 0;

      PetscCall(NetGetLayer(net, l, &a));
      PetscCall(NetGetLayer(after, l, &b));
      PetscCheck(a->nbuffers == b->nbuffers, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: layer %" PetscInt_FMT " has %" PetscInt_FMT " buffer values, PetNet's %" PetscInt_FMT, file, l, b->nbuffers, a->nbuffers);
      for (PetscInt i = 0; i < a->nbuffers; i++) {
        err = PetscMax(err, PetscAbsScalar(a->buffers[i] - b->buffers[i]));
        ref = PetscMax(ref, PetscAbsScalar(b->buffers[i]));
      }
      PetscCheck(err <= 1e-12 * ref, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the running statistics of layer %" PetscInt_FMT " after a training-mode pass differ from PetNet's: max |diff| / max |value| = %g > 1e-12", file, l, (double)(err / ref));
      if (ref > 0) relb = PetscMax(relb, err / ref);
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PyTorch model %s.h5: training-mode pass matches PyTorch (output %.1e, running statistics after it %.1e <= 1e-12)\n", prefix, (double)relt, (double)relb));
    PetscCall(NetDestroy(&after));
  }
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yref));
  PetscCall(VecDestroy(&Ytref));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* -torch_export PFX -torch_spec ..., or -torch_import_models PFX1,PFX2,... */
static PetscErrorCode TorchModels(void)
{
  char     *prefixes[32], name[PETSC_MAX_PATH_LEN];
  PetscInt  n = 32;
  PetscBool flg;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-torch_export", name, sizeof(name), &flg));
  if (flg) PetscCall(TorchExportSpec(name));
  PetscCall(PetscOptionsGetStringArray(NULL, NULL, "-torch_import_models", prefixes, &n, &flg));
  if (!flg) n = 0;
  for (PetscInt i = 0; i < n; i++) {
    PetscCall(TorchImportModel(prefixes[i]));
    PetscCall(PetscFree(prefixes[i]));
  }
  PetscFunctionReturn(0);
}

/* PFX.h5 and PFX.petnet: "dense:6,relu,dense:3" on 12 inputs, the files tests/io_corrupt.py damages */
static PetscErrorCode CorruptBase(const char pfx[])
{
  PetNetShape in = {1, {12}};
  Net         net;
  char        file[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(BuildNet(PETSC_COMM_WORLD, "dense:6,relu,dense:3", &in, 0.6, &net));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.h5", pfx));
  PetscCall(NetSave(net, file));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s.petnet", pfx));
  PetscCall(NetSave(net, file));
  PetscCall(NetDestroy(&net));
  /* with a batchnorm and an input normalisation: for the header and running-variance cases */
  PetscCall(BuildNet(PETSC_COMM_WORLD, "dense:6,batchnorm,relu,dense:3", &in, 0.6, &net));
  PetscCall(NetSetInputNormalization(net, 1.0 / 255, 0.1307, 0.3081));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_norm.h5", pfx));
  PetscCall(NetSave(net, file));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s_norm.petnet", pfx));
  PetscCall(NetSave(net, file));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* -load FILE: a damaged model file, which NetLoad() must refuse; with -load_read, NetRead() from the caller's own viewer
   (HDF5 for a name ending in .h5, else binary), which the caller closes (collectively) before it raises the error, as a
   program that cleans up would */
static PetscErrorCode LoadOnly(const char file[])
{
  Net       net;
  PetscBool read = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-load_read", &read, NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  if (read) {
    PetscViewer    viewer;
    PetscErrorCode ierr;

    PetscBool hdf5;

    PetscCall(PetscStrendswith(file, ".h5", &hdf5));
    if (hdf5)
      PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
    else
      PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
    ierr = NetRead(net, viewer);
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(ierr);
  } else
    PetscCall(NetLoad(net, file));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s loaded\n", file));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      name[PETSC_MAX_PATH_LEN];
  PetscBool flg;
  ErrorCase c = CASE_MISSING;
  PetscBool torchspec, torchmodels;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(LayerRegister("shift", LayerCreate_Shift));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-torch_spec", &torchspec));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-torch_import_models", &torchmodels));
  PetscCall(PetscOptionsGetEnum(NULL, NULL, "-case", ErrorCases, (PetscEnum *)&c, &flg));
  if (torchspec || torchmodels)
    PetscCall(TorchModels());
  else if (flg)
    PetscCall(RunErrorCase(c));
  else {
    PetscCall(PetscOptionsGetString(NULL, NULL, "-torch_export", name, sizeof(name), &flg));
    if (flg)
      PetscCall(TorchExport(name));
    else {
      PetscCall(PetscOptionsGetString(NULL, NULL, "-torch_import", name, sizeof(name), &flg));
      if (flg)
        PetscCall(TorchImport(name));
      else {
        PetscCall(PetscOptionsGetString(NULL, NULL, "-corrupt_base", name, sizeof(name), &flg));
        if (flg)
          PetscCall(CorruptBase(name));
        else {
          PetscCall(PetscOptionsGetString(NULL, NULL, "-load", name, sizeof(name), &flg));
          if (flg)
            PetscCall(LoadOnly(name));
          else
            PetscCall(RunRoundTrips());
        }
      }
    }
  }
  PetscCall(PetscFinalize());
  return 0;
}
