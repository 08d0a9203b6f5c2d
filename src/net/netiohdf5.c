/*
  A Net in an HDF5 file, laid out so that PyTorch reads it as an nn.Sequential state_dict:

    /petnet                 group with attributes
                              version      int     NET_FILE_VERSION
                              spec         string  the compact layer list, e.g. "dense:64,relu,dense:10"
                              input_shape  string  per-sample input shape, channels last, e.g. "784" or "28x28x1"
                              nparams      int     number of parameters
                              nbuffers     int     number of buffer values (e.g. batchnorm running statistics)
    /<l>.<name>             one float64 dataset per tensor of layer l, flattened in row-major order
                            ("0.weight", "0.bias", "2.weight", ...), with a string attribute
                              shape        "out,in" : the tensor's PyTorch shape (LayerGetTensors())

  Paths are relative to the viewer's current group (the root for NetSave()). Every tensor is written as a
  distributed Vec, so all ranks take part in the collective HDF5 calls; the values come from each rank's
  replicated copy. Reading gathers each tensor to every rank and keeps the slice of theta it owns.
  share/python/petnet_torch.py reads and writes this layout.
*/
#include "netio.h"
#if defined(PETSC_HAVE_HDF5)
#include <petscviewerhdf5.h>

#define NET_HDF5_GROUP "petnet"

/* "<node name>.<tensor>": "0.weight", "2.res.1.running_mean", "stem.bias" (PyTorch state_dict keys) */
static PetscErrorCode NetHDF5TensorName_Private(Net net, PetscInt l, const LayerTensorInfo *t, size_t len, char name[])
{
  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(name, len, "%s.%s", net->nodes[l].name, t->name));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetHDF5WriteTensor_Private(Net net, PetscViewer viewer, const char name[], const LayerTensorInfo *t, const PetscScalar *src)
{
  Vec          v;
  PetscInt     rstart, rend;
  PetscScalar *a;
  char         shape[128] = "";
  size_t       n          = 0;

  PetscFunctionBegin;
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), PETSC_DECIDE, t->size, &v));
  PetscCall(PetscObjectSetName((PetscObject)v, name));
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &a));
  PetscCall(PetscArraycpy(a, src + rstart, rend - rstart));
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscCall(VecView(v, viewer));
  PetscCall(VecDestroy(&v));
  for (PetscInt d = 0; d < t->ndim; d++) {
    PetscCall(PetscSNPrintf(shape + n, sizeof(shape) - n, d ? ",%" PetscInt_FMT : "%" PetscInt_FMT, t->dims[d]));
    PetscCall(PetscStrlen(shape, &n));
  }
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, name, "shape", PETSC_STRING, shape));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWrite_HDF5(Net net, PetscViewer viewer)
{
  PetscInt           version = NET_FILE_VERSION, nbuffers;
  char               spec[NET_MAX_SPEC], shape[64];
  const char        *file;
  const PetscScalar *rep;

  PetscFunctionBegin;
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCall(NetIOGetNumBuffers_Private(net, &nbuffers));
  PetscCall(PetscViewerHDF5WriteGroup(viewer, NET_HDF5_GROUP));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "version", PETSC_INT, &version));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "spec", PETSC_STRING, spec));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "input_shape", PETSC_STRING, shape));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "nparams", PETSC_INT, &net->nparams));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "nbuffers", PETSC_INT, &nbuffers));
  PetscCall(NetIOFailForTesting_Private(net, file));
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  PetscCall(VecGetArrayRead(net->theta_rep, &rep));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer           layer = net->layers[l];
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;

    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt t = 0; t < nt; t++) {
      char name[4096];

      PetscCall(NetHDF5TensorName_Private(net, l, &info[t], sizeof(name), name));
      PetscCall(NetHDF5WriteTensor_Private(net, viewer, name, &info[t], info[t].buffer ? layer->buffers + info[t].offset : rep + net->poff[l] + info[t].offset));
    }
  }
  PetscCall(VecRestoreArrayRead(net->theta_rep, &rep));
  PetscFunctionReturn(0);
}

/* A required attribute of the petnet group; a file without it is not a PetNet model. */
static PetscErrorCode NetHDF5ReadAttribute_Private(Net net, PetscViewer viewer, const char file[], const char name[], PetscDataType type, void *value)
{
  PetscBool has;

  PetscFunctionBegin;
  PetscCall(PetscViewerHDF5HasAttribute(viewer, NET_HDF5_GROUP, name, &has));
  PetscCheck(has, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED, "%s is not a complete PetNet model file: group /%s lacks the attribute \"%s\"; write the file with NetSave() or petnet_torch.py", file, NET_HDF5_GROUP, name);
  PetscCall(PetscViewerHDF5ReadAttribute(viewer, NET_HDF5_GROUP, name, type, NULL, value));
  PetscFunctionReturn(0);
}

/* Loads dataset name into dst (replicated: a buffer) or into the owned slice of theta (global range [lo, lo + size)). */
static PetscErrorCode NetHDF5ReadTensor_Private(Net net, PetscViewer viewer, const char file[], PetscInt l, const char name[], const LayerTensorInfo *t, PetscInt lo, PetscScalar *dst, PetscScalar *theta)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)net);
  PetscBool          has;
  Vec                v, full;
  VecScatter         toall;
  PetscInt           size, rstart, rend;
  const PetscScalar *a;
  char               spec[256];

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(net->layers[l], sizeof(spec), spec));
  PetscCall(PetscViewerHDF5HasDataset(viewer, name, &has));
  PetscCheck(has, comm, PETSC_ERR_FILE_UNEXPECTED, "%s has no dataset \"%s\" (tensor %s of layer %" PetscInt_FMT ", %s, %" PetscInt_FMT " values): the file is incomplete; write every tensor of the state_dict (NetSave() and petnet_torch.py do)", file,
             name, t->name, l, spec, t->size);
  PetscCall(VecCreate(comm, &v));
  PetscCall(PetscObjectSetName((PetscObject)v, name));
  PetscCall(VecLoad(v, viewer));
  PetscCall(VecGetSize(v, &size));
  if (size != t->size) PetscCall(VecDestroy(&v));
  PetscCheck(size == t->size, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" has %" PetscInt_FMT " values, but layer %" PetscInt_FMT " (%s) needs %" PetscInt_FMT " for its %s: the tensors do not match the architecture in /%s", file, name, size,
             l, spec, t->size, t->name, NET_HDF5_GROUP);
  PetscCall(VecScatterCreateToAll(v, &toall, &full));
  PetscCall(VecScatterBegin(toall, v, full, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, v, full, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(full, &a));
  if (dst)
    PetscCall(PetscArraycpy(dst, a, size));
  else {
    PetscCall(VecGetOwnershipRange(net->theta, &rstart, &rend));
    for (PetscInt i = PetscMax(lo, rstart); i < PetscMin(lo + size, rend); i++) theta[i - rstart] = a[i - lo];
  }
  PetscCall(VecRestoreArrayRead(full, &a));
  PetscCall(VecScatterDestroy(&toall));
  PetscCall(VecDestroy(&full));
  PetscCall(VecDestroy(&v));
  PetscFunctionReturn(0);
}

PetscErrorCode NetRead_HDF5(Net net, PetscViewer viewer)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)net);
  PetscBool    has;
  PetscInt     version, nparams, nbuffers;
  char        *spec, *shape;
  const char  *file;
  PetNetShape  in;
  PetscScalar *theta;

  PetscFunctionBegin;
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(PetscViewerHDF5HasGroup(viewer, NET_HDF5_GROUP, &has));
  PetscCheck(has, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet model file: it has no group /%s holding the architecture; write it with NetSave() or petnet_torch.py", file, NET_HDF5_GROUP);
  PetscCall(NetHDF5ReadAttribute_Private(net, viewer, file, "version", PETSC_INT, &version));
  PetscCall(NetIOCheckVersion_Private(net, file, version));
  PetscCall(NetHDF5ReadAttribute_Private(net, viewer, file, "nparams", PETSC_INT, &nparams));
  PetscCall(NetHDF5ReadAttribute_Private(net, viewer, file, "nbuffers", PETSC_INT, &nbuffers));
  PetscCall(NetHDF5ReadAttribute_Private(net, viewer, file, "input_shape", PETSC_STRING, &shape));
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(PetscFree(shape));
  PetscCall(NetHDF5ReadAttribute_Private(net, viewer, file, "spec", PETSC_STRING, &spec));
  PetscCall(NetIOSetArchitecture_Private(net, file, spec, &in));
  PetscCall(PetscFree(spec));
  PetscCall(NetIOCheckCounts_Private(net, file, nparams, nbuffers));
  PetscCall(VecGetArray(net->theta, &theta));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer           layer = net->layers[l];
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;

    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt t = 0; t < nt; t++) {
      char name[4096];

      PetscCall(NetHDF5TensorName_Private(net, l, &info[t], sizeof(name), name));
      PetscCall(NetHDF5ReadTensor_Private(net, viewer, file, l, name, &info[t], net->poff[l] + info[t].offset, info[t].buffer ? layer->buffers + info[t].offset : NULL, theta));
    }
  }
  PetscCall(VecRestoreArray(net->theta, &theta));
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

#else

PetscErrorCode NetWrite_HDF5(Net net, PetscViewer viewer)
{
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "PETSc was built without HDF5: save the Net in PETSc binary (a name not ending in .h5)");
}

PetscErrorCode NetRead_HDF5(Net net, PetscViewer viewer)
{
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "PETSc was built without HDF5: load a PETSc binary model file");
}
#endif
