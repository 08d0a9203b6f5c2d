/*
  A Net in an HDF5 file, laid out so that PyTorch reads it as an nn.Sequential state_dict:

    /petnet                 group with attributes
                              version      int     NET_FILE_VERSION (2; files of version 1, without checksums, load too)
                              spec         string  the compact layer list, e.g. "dense:64,relu,dense:10"
                              input_shape  string  per-sample input shape, channels last, e.g. "784" or "28x28x1"
                              nparams      int     number of parameters
                              nbuffers     int     number of buffer values (e.g. batchnorm running statistics)
    /<l>.<name>             one float64 dataset per tensor of layer l, 1-D: flattened in row-major order
                            ("0.weight", "0.bias", "2.weight", ...), with string attributes
                              shape        "out,in" : the tensor's PyTorch shape (LayerGetTensors())
                              crc32        "89abcdef": CRC-32 of the values as little-endian float64 (version 2)

  Paths are relative to the viewer's current group (the root for NetSave()). Every tensor is written as a
  distributed Vec, so all ranks take part in the collective HDF5 calls; the values come from each rank's
  replicated copy. Every rank reads each whole tensor (as the replicated copy needs it anyway) and keeps the slice of
  theta it owns; before reading, the dataset's rank, extent and type are checked against the architecture, so a
  tensor of the wrong shape is an error that names it, not a read out of bounds. The shape attribute must match too
  (a transposed tensor has the right size but not the right shape), and the values must be finite and match their
  checksum.
  share/python/petnet_torch.py reads and writes this layout.
*/
#include "netio.h"
#if defined(PETSC_HAVE_HDF5)
#include <petscviewerhdf5.h>

#define NET_HDF5_GROUP     "petnet"
#define NET_HDF5_MAX_SHAPE 8 /* dimensions a "shape" attribute may list */
/* HDF5 keeps attributes in the object header, which holds at most 64 KB (less its other messages) */
#define NET_HDF5_MAX_ATTRIBUTE 60000

/* "256,784": a tensor's dimensions as the attribute "shape" holds them */
static PetscErrorCode NetHDF5ShapeString_Private(const LayerTensorInfo *t, size_t len, char shape[])
{
  size_t n = 0;

  PetscFunctionBegin;
  shape[0] = 0;
  for (PetscInt d = 0; d < t->ndim; d++) {
    PetscCall(PetscSNPrintf(shape + n, len - n, d ? ",%" PetscInt_FMT : "%" PetscInt_FMT, t->dims[d]));
    PetscCall(PetscStrlen(shape, &n));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetHDF5WriteTensor_Private(Net net, PetscViewer viewer, const char name[], const LayerTensorInfo *t, const PetscScalar *src)
{
  Vec          v;
  PetscInt     rstart, rend;
  PetscScalar *a;
  PetscInt64   crc;
  char         shape[128], hex[16];

  PetscFunctionBegin;
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), PETSC_DECIDE, t->size, &v));
  PetscCall(PetscObjectSetName((PetscObject)v, name));
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &a));
  PetscCall(PetscArraycpy(a, src + rstart, rend - rstart));
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscCall(VecView(v, viewer));
  PetscCall(VecDestroy(&v));
  PetscCall(NetHDF5ShapeString_Private(t, sizeof(shape), shape));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, name, "shape", PETSC_STRING, shape));
  PetscCall(NetIOChecksum_Private(t->size, src, &crc));
  PetscCall(PetscSNPrintf(hex, sizeof(hex), "%08lx", (unsigned long)crc));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, name, "crc32", PETSC_STRING, hex));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWrite_HDF5(Net net, PetscViewer viewer)
{
  PetscInt           version = NET_FILE_VERSION, nbuffers;
  char              *spec, shape[64];
  size_t             len;
  const char        *file;
  const PetscScalar *rep;

  PetscFunctionBegin;
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(NetIOGetSpec_Private(net, &spec));
  PetscCall(PetscStrlen(spec, &len));
  PetscCheck(len < NET_HDF5_MAX_ATTRIBUTE, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
             "Cannot save the Net to %s: its layer list has %zu characters, more than an HDF5 attribute holds (%d); save it in PETSc binary (a name not ending in .h5), which holds lists of any length", file, len, NET_HDF5_MAX_ATTRIBUTE);
  PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
  PetscCall(NetIOGetNumBuffers_Private(net, &nbuffers));
  PetscCall(PetscViewerHDF5WriteGroup(viewer, NET_HDF5_GROUP));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "version", PETSC_INT, &version));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "spec", PETSC_STRING, spec));
  PetscCall(PetscFree(spec));
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

      PetscCall(NetIOTensorName_Private(net, l, &info[t], sizeof(name), name));
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

/* Rank, extent and class of dataset name (relative to the viewer's group), without reading it; rank 0 if it cannot be opened or its storage does not hold its extent */
static PetscErrorCode NetHDF5DatasetInfo_Private(PetscViewer viewer, const char name[], int *rank, hsize_t dims[], H5T_class_t *cls)
{
  hid_t fileid, groupid, dset, space, type;

  PetscFunctionBegin;
  *rank = 0;
  *cls  = H5T_NO_CLASS;
  PetscCall(PetscViewerHDF5OpenGroup(viewer, NULL, &fileid, &groupid));
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported below, not printed by HDF5 */
  if ((dset = H5Dopen2(groupid, name, H5P_DEFAULT)) >= 0) {
    if ((space = H5Dget_space(dset)) >= 0) {
      int r = H5Sget_simple_extent_ndims(space);

      if (r > 0 && r <= H5S_MAX_RANK && H5Sget_simple_extent_dims(space, dims, NULL) == r) *rank = r;
      H5Sclose(space);
    }
    if ((type = H5Dget_type(dset)) >= 0) {
      hid_t   plist = H5Dget_create_plist(dset);
      hsize_t n     = 1;

      /* only standard IEEE floats: HDF5 1.10 converts exotic float types (odd sizes, precisions) past its buffers */
      *cls = H5Tequal(type, H5T_IEEE_F64LE) > 0 || H5Tequal(type, H5T_IEEE_F64BE) > 0 || H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0 ? H5T_FLOAT : H5T_NO_CLASS;
      for (int d = 0; d < *rank; d++) n *= dims[d];
      /* HDF5 1.10 trusts a compact dataset's header (and a contiguous one's stored size) and reads past its buffer when a
         damaged file holds less than the extent says (found by fuzzing). NetSave() and petnet_torch.py never write
         compact datasets: those, and contiguous ones of the wrong stored size, are reported unreadable instead. */
      if (plist >= 0) {
        H5D_layout_t layout = H5Pget_layout(plist);

        if (layout == H5D_COMPACT || (layout == H5D_CONTIGUOUS && H5Dget_storage_size(dset) != n * H5Tget_size(type))) *rank = 0;
        H5Pclose(plist);
      }
      H5Tclose(type);
    }
    H5Dclose(dset);
  }
  if (groupid != fileid) H5Gclose(groupid);
  PetscFunctionReturn(0);
}

/* Reads the n values of the 1-D float dataset name into a (every rank reads them all); PETSC_FALSE if HDF5 fails */
static PetscErrorCode NetHDF5ReadValues_Private(PetscViewer viewer, const char name[], PetscScalar *a, PetscBool *ok)
{
  hid_t fileid, groupid, dset;

  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  PetscCall(PetscViewerHDF5OpenGroup(viewer, NULL, &fileid, &groupid));
  if ((dset = H5Dopen2(groupid, name, H5P_DEFAULT)) >= 0) {
    *ok = H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a) >= 0 ? PETSC_TRUE : PETSC_FALSE;
    H5Dclose(dset);
  }
  if (groupid != fileid) H5Gclose(groupid);
  PetscFunctionReturn(0);
}

/* The dimensions in a "shape" attribute ("256,784", also "256x784"); PETSC_FALSE if it is not a list of integers */
static PetscBool NetHDF5ParseShape_Private(const char text[], PetscInt *ndim, PetscInt64 dims[])
{
  const char *p = text;

  *ndim = 0;
  while (*p) {
    char     *end;
    long long v = strtoll(p, &end, 10);

    if (end == p || *ndim == NET_HDF5_MAX_SHAPE) return PETSC_FALSE;
    dims[(*ndim)++] = v;
    for (p = end; *p == ' '; p++) {}
    if (*p == ',' || *p == 'x')
      p++;
    else if (*p)
      return PETSC_FALSE;
  }
  return PETSC_TRUE;
}

/*
  Reads tensor name of layer l into values[t->size] (every rank the whole tensor), after checking what the file
  holds: a 1-D float dataset of t->size values, whose "shape" attribute (if any) is t's shape, with finite values that
  match the "crc32" attribute (required from version 2 on).
*/
static PetscErrorCode NetHDF5ReadTensor_Private(Net net, PetscViewer viewer, const char file[], PetscInt version, PetscInt l, const char name[], const LayerTensorInfo *t, PetscScalar *values)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscBool   has, ok;
  int         rank;
  hsize_t     dims[H5S_MAX_RANK];
  H5T_class_t cls;
  PetscInt64  crc = 0;
  char        spec[256], expect[128], found[128] = "";
  size_t      n = 0;

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(net->layers[l], sizeof(spec), spec));
  PetscCall(NetHDF5ShapeString_Private(t, sizeof(expect), expect));
  PetscCall(PetscViewerHDF5HasDataset(viewer, name, &has));
  PetscCheck(has, comm, PETSC_ERR_FILE_UNEXPECTED, "%s has no dataset \"%s\" (tensor %s of layer %" PetscInt_FMT ", %s, %" PetscInt_FMT " values): the file is incomplete; write every tensor of the state_dict (NetSave() and petnet_torch.py do)", file,
             name, t->name, l, spec, t->size);
  PetscCall(NetHDF5DatasetInfo_Private(viewer, name, &rank, dims, &cls));
  PetscCheck(rank > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" cannot be read (not a simple dataset, or the file is damaged); save the model again", file, name);
  for (int d = 0; d < rank; d++) {
    PetscCall(PetscSNPrintf(found + n, sizeof(found) - n, d ? "x%llu" : "%llu", (unsigned long long)dims[d]));
    PetscCall(PetscStrlen(found, &n));
  }
  PetscCheck(rank == 1 && dims[0] == (hsize_t)t->size, comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s: dataset \"%s\" has shape %s, but layer %" PetscInt_FMT " (%s) needs its %s flat: 1-D with %" PetscInt_FMT
             " values (PyTorch shape %s, in the attribute \"shape\"); the tensors do not match the architecture in /%s: write each tensor flattened, as NetSave() and petnet_torch.py do",
             file, name, found, l, spec, t->name, t->size, expect, NET_HDF5_GROUP);
  PetscCheck(cls == H5T_FLOAT, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" does not hold IEEE floating-point numbers (float64 or float32); write tensors as float64", file, name);
  PetscCall(PetscViewerHDF5HasAttribute(viewer, name, "shape", &has));
  if (has) {
    char      *text;
    PetscInt   ndim;
    PetscInt64 sdims[NET_HDF5_MAX_SHAPE];
    PetscBool  same;

    PetscCall(PetscViewerHDF5ReadAttribute(viewer, name, "shape", PETSC_STRING, NULL, &text));
    same = NetHDF5ParseShape_Private(text, &ndim, sdims) && ndim == t->ndim;
    for (PetscInt d = 0; same && d < ndim; d++) same = sdims[d] == t->dims[d] ? PETSC_TRUE : PETSC_FALSE;
    PetscCheck(same, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has shape %.64s (attribute \"shape\"), but layer %" PetscInt_FMT " (%s) needs %s: the tensor does not fit the architecture (transposed?); write it in PyTorch's shape %s", file,
               name, text, l, spec, expect, expect);
    PetscCall(PetscFree(text));
  }
  if (version >= 2) {
    char         *text, *end;
    unsigned long v;

    PetscCall(PetscViewerHDF5HasAttribute(viewer, name, "crc32", &has));
    PetscCheck(has, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has no attribute \"crc32\", which files of format version %" PetscInt_FMT " carry: the file was modified after it was written; save the model again", file, name, version);
    PetscCall(PetscViewerHDF5ReadAttribute(viewer, name, "crc32", PETSC_STRING, NULL, &text));
    v  = strtoul(text, &end, 16);
    ok = (PetscBool)(end != text && !*end && v <= 0xffffffffUL);
    PetscCall(PetscFree(text));
    PetscCheck(ok, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has a malformed attribute \"crc32\" (8 hexadecimal digits expected): the file is corrupt; save the model again", file, name);
    crc = (PetscInt64)v;
  }
  PetscCall(NetHDF5ReadValues_Private(viewer, name, values, &ok));
  PetscCheck(ok, comm, PETSC_ERR_FILE_READ, "%s: reading dataset \"%s\" failed in HDF5: the file is damaged; save the model again", file, name);
  PetscCall(NetIOCheckTensor_Private(net, file, name, t->size, values, version >= 2 ? PETSC_TRUE : PETSC_FALSE, crc));
  PetscFunctionReturn(0);
}

PetscErrorCode NetRead_HDF5(Net net, PetscViewer viewer)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)net);
  PetscBool    has;
  PetscInt     version, nparams, nbuffers, rstart, rend;
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
  PetscCall(NetIOSetArchitecture_Private(net, file, spec, &in, nparams));
  PetscCall(PetscFree(spec));
  PetscCall(NetIOCheckCounts_Private(net, file, nparams, nbuffers));
  PetscCall(VecGetOwnershipRange(net->theta, &rstart, &rend));
  PetscCall(VecGetArray(net->theta, &theta));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer           layer = net->layers[l];
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;

    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt t = 0; t < nt; t++) {
      char name[4096];

      PetscScalar *values;
      PetscInt     lo = net->poff[l] + info[t].offset;

      PetscCall(NetIOTensorName_Private(net, l, &info[t], sizeof(name), name));
      PetscCall(PetscMalloc1(info[t].size, &values));
      PetscCall(NetHDF5ReadTensor_Private(net, viewer, file, version, l, name, &info[t], values));
      if (info[t].buffer)
        PetscCall(PetscArraycpy(layer->buffers + info[t].offset, values, info[t].size));
      else
        for (PetscInt i = PetscMax(lo, rstart); i < PetscMin(lo + info[t].size, rend); i++) theta[i - rstart] = values[i - lo];
      PetscCall(PetscFree(values));
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
