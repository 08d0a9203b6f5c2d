/*
  A Net in an HDF5 file, laid out as the state_dict of the equivalent PyTorch nn.Sequential, so that h5py,
  torch.from_numpy and load_state_dict(strict=True) give PyTorch the model (format version 4; version 3 is the same
  without header_crc32):

    /petnet                 group with attributes
                              version      int     NET_FILE_VERSION (4; files of versions 1 to 3 load too)
                              spec         string  the compact layer list, e.g. "dense:64,relu,dense:10"
                              input_shape  string  per-sample input shape, channels last, e.g. "784" or "28x28x1"
                              nparams      int     number of parameters
                              nbuffers     int     number of buffer values (e.g. batchnorm running statistics)
                              input_scale  float64 (optional, version 3) the input normalisation the Net was trained
                              input_mean   float64   with, x -> (input_scale x - input_mean) / input_std; all three
                              input_std    float64   or none (none: the Net records none, as files before version 3)
                              grid         int     (version 4) the spatial dims of the grid of a Net trained in
                                           grid mode (NetSetGrid(); input_shape is then the per-point dof), else 0
                              header_crc32 string  (version 4) "89abcdef": CRC-32 of the attributes above that change
                                           the function (spec, input_shape, nparams, nbuffers, input_*), as
                                           NetIOHeaderChecksum_Private() lays them out
    /<l>.<name>             one float64 dataset per tensor of layer l ("0.weight", "0.bias", "2.running_mean", ...)
                            in PyTorch's shape and layout (N-D: conv2d weight [out][in/groups][kh][kw], dense weight
                            [out][in] with in in PyTorch's flatten order (c, h, w); netiotorch.c converts), with
                            string attributes
                              shape        "out,in" : the tensor's PyTorch shape (LayerGetTensors()), as its dims
                              crc32        "89abcdef": CRC-32 of the stored values (PyTorch's layout, row-major) as
                                           little-endian float64 (NetIOChecksum_Private())
    /<l>.num_batches_tracked  int64 scalar of each batchnorm layer (LayerBatchNormGetNumBatchesTracked()), with
                            "crc32" of its value as float64; optional on reading (0 when absent)
  Versions 1 and 2 held each tensor as a 1-D dataset in PetNet's layout (conv2d weight [out][kh][kw][in], features
  after a flatten in (h, w, c) order) under the same "shape" attribute, version 1 without "crc32".

  Paths are relative to the viewer's current group (the root for NetSave()). All ranks take part in the collective
  HDF5 calls (creating the datasets and attributes); rank 0 writes the values, from its replicated copy (a sharded or
  model-parallel node's block is gathered first).

  Reading is done by rank 0 alone, with the HDF5 library and no MPI-IO: NetLoad() opens the file with HDF5's default
  (serial) driver, NetRead() reads through the viewer's file on rank 0 only (HDF5 allows reads by one process). Rank 0
  checks everything HDF5 could trip on before reading anything: the file opens, the group and its attributes are
  there, each attribute has the expected class, one element and a bounded size (strings of fixed length only: HDF5
  1.10 can loop forever reading a damaged variable-length string, see fuzz/known-library-hangs/), each tensor is a
  dataset of IEEE floats whose rank and every dimension are its PyTorch shape in the architecture (version 3; 1-D of
  its size in versions 1 and 2, compared before any storage is inspected) and whose storage holds it, and its "shape"
  attribute is its PyTorch shape (a transposed tensor has the right size, not the right shape). Its verdict
  is broadcast, then the values; every rank checks they are finite and match their checksum. So a damaged file is
  one error raised on every rank at once, with one message naming the file and the tensor, and NetLoad() has no file
  open in parallel: the job ends at once. (When every rank read through MPI-IO, PETSc's error handler kept the ranks
  other than 0 asleep for 10 s before they exited, and rank 0 waited for them in NetLoad()'s collective close of the
  file: a bad file took 10-12 s to end a 2-rank job.)
  share/python/petnet_torch.py reads and writes this layout.
*/
#include "netio.h"
#if defined(PETSC_HAVE_HDF5)
#include <petscviewerhdf5.h>

#define NET_HDF5_GROUP     "petnet"
#define NET_HDF5_MAX_SHAPE 8 /* dimensions a "shape" attribute may list */
/* HDF5 keeps attributes in the object header, which holds at most 64 KB (less its other messages) */
#define NET_HDF5_MAX_ATTRIBUTE 60000
/* The longest layer list read (bytes with its end): no object header holds a longer attribute */
#define NET_HDF5_MAX_SPEC 65536
/* Chunks of a dataset whose stored sizes are checked one by one (each check walks the chunk index) */
#define NET_HDF5_MAX_CHUNKS 1024

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

/* Ends a dataset's write: a failure on any rank is the same error on every rank (PetNetWriteAgreeReason()) */
static PetscErrorCode NetHDF5WriteAgree_Private(MPI_Comm comm, int bad, const char file[], const char name[])
{
  char what[PETSC_MAX_PATH_LEN + 32], reason[PETSC_MAX_PATH_LEN + 64];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(what, sizeof(what), "the Net to %s", file));
  PetscCall(PetscSNPrintf(reason, sizeof(reason), "HDF5 failed to write the dataset \"%s\"", name));
  PetscCall(PetNetWriteAgreeReason(comm, bad ? reason : NULL, what, NULL));
  PetscFunctionReturn(0);
}

/* A dataset under the viewer's current group: every rank creates it (collective in parallel HDF5), rank 0 writes the
   values (independent transfer); ndim 0 is a scalar */
static PetscErrorCode NetHDF5WriteDataset_Private(Net net, PetscViewer viewer, const char name[], int ndim, const hsize_t dims[], hid_t filetype, hid_t memtype, const void *values)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt rank;
  hid_t       fid, gid, space, dset;
  int         bad = 0;
  const char *file;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(PetscViewerHDF5OpenGroup(viewer, NULL, &fid, &gid));
  space = ndim ? H5Screate_simple(ndim, dims, NULL) : H5Screate(H5S_SCALAR);
  dset  = space >= 0 ? H5Dcreate2(gid, name, filetype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  if (dset < 0)
    bad = 1;
  else if (!rank && H5Dwrite(dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
    bad = 1;
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  H5Gclose(gid);
  PetscCall(NetHDF5WriteAgree_Private(comm, bad, file, name));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetHDF5WriteChecksum_Private(PetscViewer viewer, const char name[], PetscInt n, const PetscScalar *values)
{
  PetscInt64 crc;
  char       hex[16];

  PetscFunctionBegin;
  PetscCall(NetIOChecksum_Private(n, values, &crc));
  PetscCall(PetscSNPrintf(hex, sizeof(hex), "%08lx", (unsigned long)crc));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, name, "crc32", PETSC_STRING, hex));
  PetscFunctionReturn(0);
}

/* The input normalisation as the float64 attributes input_scale, input_mean, input_std of /petnet (none if unrecorded) */
static PetscErrorCode NetHDF5WriteNormalization_Private(Net net, PetscViewer viewer)
{
  PetscBool set;
  PetscReal norm[3];

  PetscFunctionBegin;
  PetscCall(NetGetInputNormalization(net, &set, &norm[0], &norm[1], &norm[2]));
  if (!set) PetscFunctionReturn(0);
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "input_scale", PETSC_REAL, &norm[0]));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "input_mean", PETSC_REAL, &norm[1]));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "input_std", PETSC_REAL, &norm[2]));
  PetscFunctionReturn(0);
}

/* Version 4: grid, and header_crc32, the checksum of the architecture, counts, grid and normalisation */
static PetscErrorCode NetHDF5WriteHeaderChecksum_Private(Net net, PetscViewer viewer, PetscInt nbuffers)
{
  PetscBool  set;
  PetscReal  norm[3];
  PetscInt64 crc;
  PetscInt   grid;
  char      *spec, hex[16];

  PetscFunctionBegin;
  PetscCall(NetGetInputNormalization(net, &set, &norm[0], &norm[1], &norm[2]));
  PetscCall(NetIOGetSpec_Private(net, &spec));
  PetscCall(NetIOGetGridDimension_Private(net, &grid));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "grid", PETSC_INT, &grid));
  PetscCall(NetIOHeaderChecksum_Private(spec, &net->in, net->nparams, nbuffers, grid, set, norm, &crc));
  PetscCall(PetscFree(spec));
  PetscCall(PetscSNPrintf(hex, sizeof(hex), "%08lx", (unsigned long)crc));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, NET_HDF5_GROUP, "header_crc32", PETSC_STRING, hex));
  PetscFunctionReturn(0);
}

/* Tensor t of a node whose flat input features have this origin, from PetNet's layout src[]: PyTorch's shape and layout */
static PetscErrorCode NetHDF5WriteTensor_Private(Net net, PetscViewer viewer, const char name[], const LayerTensorInfo *t, const PetscInt origin[2], const PetscScalar *src)
{
  PetscScalar *torch;
  hsize_t      dims[5];
  char         shape[128];

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(t->size, &torch));
  PetscCall(NetIOToTorch_Private(t, origin, src, torch));
  for (PetscInt d = 0; d < t->ndim; d++) dims[d] = (hsize_t)t->dims[d];
  PetscCall(NetHDF5WriteDataset_Private(net, viewer, name, (int)t->ndim, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, torch));
  PetscCall(NetHDF5ShapeString_Private(t, sizeof(shape), shape));
  PetscCall(PetscViewerHDF5WriteAttribute(viewer, name, "shape", PETSC_STRING, shape));
  PetscCall(NetHDF5WriteChecksum_Private(viewer, name, t->size, torch));
  PetscCall(PetscFree(torch));
  PetscFunctionReturn(0);
}

/* batchnorm's num_batches_tracked, an int64 scalar as in PyTorch's state_dict */
static PetscErrorCode NetHDF5WriteCount_Private(Net net, PetscViewer viewer, const char name[], PetscInt64 count)
{
  long long   value  = (long long)count;
  PetscScalar asreal = (PetscScalar)count;

  PetscFunctionBegin;
  PetscCall(NetHDF5WriteDataset_Private(net, viewer, name, 0, NULL, H5T_STD_I64LE, H5T_NATIVE_LLONG, &value));
  PetscCall(NetHDF5WriteChecksum_Private(viewer, name, 1, &asreal));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWrite_HDF5(Net net, PetscViewer viewer)
{
  PetscInt           version = NET_FILE_VERSION, nbuffers;
  char              *spec, shape[64];
  size_t             len;
  const char        *file;
  const PetscScalar *rep;
  PetscInt          *origin;

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
  PetscCall(NetHDF5WriteNormalization_Private(net, viewer));
  PetscCall(NetHDF5WriteHeaderChecksum_Private(net, viewer, nbuffers));
  PetscCall(NetIOFailForTesting_Private(net, file));
  PetscCall(NetIOFeatureOrigins_Private(net, &origin));
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &rep));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer              layer = net->layers[l];
    LayerTensorInfo    info[LAYER_MAX_TENSORS];
    PetscInt           nt;
    PetscInt64         count;
    const PetscScalar *blk;
    char               name[4096];

    PetscCall(LayerGetTensors(layer, &nt, info));
    PetscCall(NetGetNodeBlock_Private(net, l, rep, &blk));
    for (PetscInt t = 0; t < nt; t++) {
      PetscCall(NetIOTensorName_Private(net, l, &info[t], sizeof(name), name));
      PetscCall(NetHDF5WriteTensor_Private(net, viewer, name, &info[t], origin + 2 * l, info[t].buffer ? layer->buffers + info[t].offset : blk + info[t].offset));
    }
    PetscCall(NetRestoreNodeBlock_Private(net, l, &blk));
    PetscCall(LayerBatchNormGetNumBatchesTracked(layer, &count));
    if (count >= 0) {
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s.num_batches_tracked", net->nodes[l].name));
      PetscCall(NetHDF5WriteCount_Private(net, viewer, name, count));
    }
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &rep));
  PetscCall(PetscFree(origin));
  PetscFunctionReturn(0);
}

/* What rank 0 found wrong in the file: 0, or the error to raise on every rank and its message */
typedef struct {
  PetscErrorCode code;
  char           message[3 * PETSC_MAX_PATH_LEN]; /* names the file and the tensor, each up to PETSC_MAX_PATH_LEN */
} NetHDF5Verdict;

/* The attributes of /petnet, as rank 0 read them; broadcast as bytes, the layer list after them */
typedef struct {
  PetscInt   version, nparams, nbuffers;
  char       shape[64]; /* input_shape */
  int        speclen;   /* characters of the layer list */
  PetscInt64 crc;       /* header_crc32 (version 4) */
  PetscInt   grid;      /* grid (version 4): the spatial dims of a grid-mode Net, else 0 */
} NetHDF5Header;

/*
  The functions named NetHDF5Inspect... run on rank 0 only, between the collective calls that broadcast what they
  found. They must not leave early with a PETSc error (the other ranks would wait in the broadcast forever): they
  return 0 when the file is sound, else 1 with the verdict saying why, and close every HDF5 object they open.
*/
static int NetHDF5Refuse(NetHDF5Verdict *v, PetscErrorCode code, const char format[], ...) PETSC_ATTRIBUTE_FORMAT(3, 4);
static int NetHDF5Refuse(NetHDF5Verdict *v, PetscErrorCode code, const char format[], ...)
{
  va_list ap;

  va_start(ap, format);
  (void)PetscVSNPrintf(v->message, sizeof(v->message), format, NULL, ap);
  va_end(ap);
  v->code = code;
  return 1;
}

/* Rank 0's verdict to every rank: nothing, or the same error raised on all of them at once */
static PetscErrorCode NetHDF5Verdict_Private(MPI_Comm comm, NetHDF5Verdict *v)
{
  PetscMPIInt code = (PetscMPIInt)v->code;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Bcast(&code, 1, MPI_INT, 0, comm));
  if (code) {
    PetscCallMPI(MPI_Bcast(v->message, sizeof(v->message), MPI_CHAR, 0, comm));
    v->message[sizeof(v->message) - 1] = 0;
  }
  PetscCheck(!code, comm, (PetscErrorCode)code, "%s", v->message);
  PetscFunctionReturn(0);
}

/* What an attribute of class cls must be, for messages */
static const char *NetHDF5Expected(H5T_class_t cls)
{
  return cls == H5T_STRING ? "one fixed-length string (numpy.bytes_ in h5py)" : "one integer of 8 to 64 bits";
}

/*
  Attribute name of obj, checked before H5Aread() reads it: one integer of a standard layout (8 to 64 bits, no padding)
  that fits a PetscInt into *(PetscInt *)value, or one fixed-length string shorter than len bytes into value[len].
  Returns 0 if read, -1 if obj has no such attribute, 1 if it is something else (what[] says what). Variable-length
  strings are refused unread: H5Aread() of a damaged one loops forever or crashes in HDF5 1.10.8
  (fuzz/known-library-hangs/), and NetSave() and petnet_torch.py write fixed-length strings.
*/
static int NetHDF5InspectAttribute(hid_t obj, const char name[], H5T_class_t cls, size_t len, void *value, size_t whatlen, char what[])
{
  hid_t       aid, type, space;
  hssize_t    npoints;
  size_t      size;
  H5T_class_t found;
  int         result = 1;

  what[0] = 0;
  if (H5Aexists(obj, name) <= 0) return -1;
  if ((aid = H5Aopen(obj, name, H5P_DEFAULT)) < 0) {
    (void)PetscStrncpy(what, "unreadable", whatlen);
    return 1;
  }
  type    = H5Aget_type(aid);
  space   = H5Aget_space(aid);
  npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  size    = type >= 0 ? H5Tget_size(type) : 0;
  found   = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
  if (type < 0 || space < 0 || npoints < 0)
    (void)PetscStrncpy(what, "unreadable", whatlen);
  else if (found != cls)
    (void)PetscStrncpy(what, found == H5T_STRING ? "a string" : found == H5T_INTEGER ? "an integer" : found == H5T_FLOAT ? "a floating-point number" : "neither a string nor a number", whatlen);
  else if (npoints != 1)
    (void)PetscSNPrintf(what, whatlen, "an array of %lld values", (long long)npoints);
  else if (cls == H5T_STRING) {
    if (H5Tis_variable_str(type) != 0)
      (void)PetscStrncpy(what, "a variable-length string", whatlen);
    else if (size == 0 || size >= len)
      (void)PetscSNPrintf(what, whatlen, "a string of %zu bytes, longer than any PetNet writes", size);
    else if (H5Aread(aid, type, value) < 0)
      (void)PetscStrncpy(what, "unreadable", whatlen);
    else {
      ((char *)value)[size] = 0;
      result                = 0;
    }
  } else {
    long long v;

    if (size > sizeof(v) || H5Tget_precision(type) != 8 * size || H5Tget_offset(type) != 0)
      (void)PetscSNPrintf(what, whatlen, "an integer of %zu bytes with padding bits", size);
    else if (H5Aread(aid, H5T_NATIVE_LLONG, &v) < 0)
      (void)PetscStrncpy(what, "unreadable", whatlen);
    else if (v < PETSC_MIN_INT || v > PETSC_MAX_INT)
      (void)PetscSNPrintf(what, whatlen, "%lld, beyond the range of PetscInt", v);
    else {
      *(PetscInt *)value = (PetscInt)v;
      result             = 0;
    }
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  H5Aclose(aid);
  return result;
}

/* The group /petnet under loc and its attributes; the layer list into spec[NET_HDF5_MAX_SPEC]. A version this PetNet
   does not read stops the inspection there: NetIOCheckVersion_Private() reports it. */
static int NetHDF5InspectHeader(hid_t loc, const char file[], NetHDF5Header *h, char spec[], NetHDF5Verdict *v)
{
  /* clang-format off */
  struct {
    const char *name;
    H5T_class_t cls;
    size_t      len;
    void       *value;
  } attr[] = {
    {"version",     H5T_INTEGER, 0,                 &h->version },
    {"nparams",     H5T_INTEGER, 0,                 &h->nparams },
    {"nbuffers",    H5T_INTEGER, 0,                 &h->nbuffers},
    {"input_shape", H5T_STRING,  sizeof(h->shape),  h->shape    },
    {"spec",        H5T_STRING,  NET_HDF5_MAX_SPEC, spec        },
  };
  /* clang-format on */
  hid_t group;
  int   bad = 0;
  char  what[256];

  if (H5Lexists(loc, NET_HDF5_GROUP, H5P_DEFAULT) <= 0 || (group = H5Gopen2(loc, NET_HDF5_GROUP, H5P_DEFAULT)) < 0)
    return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet model file: it has no group /%s holding the architecture; write it with NetSave() or petnet_torch.py", file, NET_HDF5_GROUP);
  for (size_t k = 0; !bad && k < sizeof(attr) / sizeof(attr[0]); k++) {
    int found = NetHDF5InspectAttribute(group, attr[k].name, attr[k].cls, attr[k].len, attr[k].value, sizeof(what), what);

    if (found < 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s is not a complete PetNet model file: group /%s lacks the attribute \"%s\"; write the file with NetSave() or petnet_torch.py", file, NET_HDF5_GROUP, attr[k].name);
    else if (found > 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the attribute \"%s\" of group /%s is %s, but PetNet reads %s: the file is damaged or was not written by NetSave() or petnet_torch.py; save the model again", file, attr[k].name,
                          NET_HDF5_GROUP, what, NetHDF5Expected(attr[k].cls));
    else if (!k && (h->version < 1 || h->version > NET_FILE_VERSION))
      break;
  }
  if (!bad && h->version >= NET_FILE_VERSION_HEADER_CRC && h->version <= NET_FILE_VERSION) {
    int found = NetHDF5InspectAttribute(group, "grid", H5T_INTEGER, 0, &h->grid, sizeof(what), what);

    if (found < 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: group /%s has no attribute \"grid\", which files of format version %" PetscInt_FMT " carry: the file was modified after it was written; save the model again", file, NET_HDF5_GROUP,
                          h->version);
    else if (found || h->grid < 0 || h->grid > 3)
      bad =
          NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the attribute \"grid\" of group /%s is %s, not 0 to 3 (the spatial dims of a grid-mode Net): the file is corrupt; save the model again", file, NET_HDF5_GROUP, found ? what : "out of range");
  }
  if (!bad && h->version >= NET_FILE_VERSION_HEADER_CRC && h->version <= NET_FILE_VERSION) {
    char          text[16], *end;
    int           found = NetHDF5InspectAttribute(group, "header_crc32", H5T_STRING, sizeof(text), text, sizeof(what), what);
    unsigned long sum   = found ? 0 : strtoul(text, &end, 16);

    if (found < 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: group /%s has no attribute \"header_crc32\", which files of format version %" PetscInt_FMT " carry: the file was modified after it was written; save the model again", file, NET_HDF5_GROUP,
                          h->version);
    else if (found || end == text || *end || sum > 0xffffffffUL)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the attribute \"header_crc32\" of group /%s is malformed (8 hexadecimal digits expected): the file is corrupt; save the model again", file, NET_HDF5_GROUP);
    else
      h->crc = (PetscInt64)sum;
  }
  H5Gclose(group);
  h->speclen = bad ? 0 : (int)strlen(spec);
  return bad;
}

/*
  Unfiltered chunks each stored at their full size (chunk dimensions times typesize), no more of them than the extent
  dims[rank] holds; filtered (compressed) chunks are not checked. H5Dget_chunk_info() walks the chunk index up to the
  chunk asked for, so beyond NET_HDF5_MAX_CHUNKS chunks only their total is checked.
*/
static PetscBool NetHDF5ChunksSound(hid_t dset, hid_t plist, int rank, const hsize_t dims[], size_t typesize)
{
  hsize_t   chunk[H5S_MAX_RANK], bytes = typesize, nchunks = 0, most = 1;
  hid_t     space;
  PetscBool sound;

  if (H5Pget_nfilters(plist) != 0) return PETSC_TRUE;
  if (H5Pget_chunk(plist, H5S_MAX_RANK, chunk) != rank) return PETSC_FALSE;
  for (int d = 0; d < rank; d++) {
    if (!chunk[d]) return PETSC_FALSE;
    bytes *= chunk[d];
    most *= (dims[d] + chunk[d] - 1) / chunk[d];
  }
  if ((space = H5Dget_space(dset)) < 0) return PETSC_FALSE;
  sound = H5Dget_num_chunks(dset, space, &nchunks) >= 0 && nchunks <= most && H5Dget_storage_size(dset) == nchunks * bytes ? PETSC_TRUE : PETSC_FALSE;
  for (hsize_t i = 0; sound && i < PetscMin(nchunks, NET_HDF5_MAX_CHUNKS); i++) {
    haddr_t  addr;
    hsize_t  size;
    unsigned mask;

    sound = H5Dget_chunk_info(dset, space, i, NULL, &mask, &addr, &size) >= 0 && size == bytes ? PETSC_TRUE : PETSC_FALSE;
  }
  H5Sclose(space);
  return sound;
}

/* Rank, extent and class of dataset dset (rank 0: unreadable, or a scalar), and whether its storage holds its extent */
static void NetHDF5DatasetInfo(hid_t dset, int *rank, hsize_t dims[], PetscBool *isfloat, PetscBool *holds)
{
  hid_t space, type;

  *rank    = 0;
  *isfloat = PETSC_FALSE;
  *holds   = PETSC_FALSE;
  if ((space = H5Dget_space(dset)) >= 0) {
    int r = H5Sget_simple_extent_ndims(space);

    if (r > 0 && r <= H5S_MAX_RANK && H5Sget_simple_extent_dims(space, dims, NULL) == r) *rank = r;
    H5Sclose(space);
  }
  if ((type = H5Dget_type(dset)) >= 0) {
    hid_t     plist = H5Dget_create_plist(dset);
    hsize_t   n     = 1;
    PetscBool wraps = PETSC_FALSE;

    /* only standard IEEE floats: HDF5 1.10 converts exotic float types (odd sizes, precisions) past its buffers */
    *isfloat = H5Tequal(type, H5T_IEEE_F64LE) > 0 || H5Tequal(type, H5T_IEEE_F64BE) > 0 || H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0 ? PETSC_TRUE : PETSC_FALSE;
    for (int d = 0; d < *rank; d++) { /* in 64 bits: a damaged extent may overflow */
      if (dims[d] && n > ((hsize_t)-1) / 16 / dims[d])
        wraps = PETSC_TRUE;
      else
        n *= dims[d];
    }
    /* HDF5 1.10 trusts a dataset's header and chunk index and copies past its buffers when a damaged file stores less
       than they say: a compact dataset, a contiguous one of the wrong stored size, chunks stored shorter than a chunk
       (each found by fuzzing). NetSave() and petnet_torch.py write contiguous or chunked datasets, never compact ones:
       a dataset whose storage does not hold what it claims is reported unreadable instead. */
    if (plist >= 0) {
      H5D_layout_t layout = H5Pget_layout(plist); /* compact or virtual: not held */

      if (wraps || !*rank)
        *holds = PETSC_FALSE;
      else if (layout == H5D_CONTIGUOUS)
        *holds = H5Dget_storage_size(dset) == n * H5Tget_size(type) ? PETSC_TRUE : PETSC_FALSE;
      else if (layout == H5D_CHUNKED)
        *holds = NetHDF5ChunksSound(dset, plist, *rank, dims, H5Tget_size(type));
      H5Pclose(plist);
    }
    H5Tclose(type);
  }
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

/* The attributes of tensor dset: "shape" (optional) must be t's PyTorch shape, "crc32" (from version 2 on) into *crc */
static int NetHDF5InspectTensorAttributes(hid_t dset, const char file[], PetscInt version, PetscInt l, const char spec[], const char name[], const LayerTensorInfo *t, const char expect[], PetscInt64 *crc, NetHDF5Verdict *v)
{
  char          text[128], what[256], *end;
  int           found;
  PetscInt      ndim;
  PetscInt64    sdims[NET_HDF5_MAX_SHAPE];
  PetscBool     same;
  unsigned long value;

  found = NetHDF5InspectAttribute(dset, "shape", H5T_STRING, sizeof(text), text, sizeof(what), what);
  if (found > 0)
    return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the attribute \"shape\" of tensor \"%s\" is %s, but PetNet reads %s such as \"%s\": the file is damaged; save the model again", file, name, what, NetHDF5Expected(H5T_STRING), expect);
  if (!found) {
    same = NetHDF5ParseShape_Private(text, &ndim, sdims) && ndim == t->ndim;
    for (PetscInt d = 0; same && d < ndim; d++) same = sdims[d] == t->dims[d] ? PETSC_TRUE : PETSC_FALSE;
    if (!same)
      return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has shape %.64s (attribute \"shape\"), but layer %" PetscInt_FMT " (%s) needs %s: the tensor does not fit the architecture (transposed?); write it in PyTorch's shape %s",
                           file, name, text, l, spec, expect, expect);
  }
  if (version < 2) return 0;
  found = NetHDF5InspectAttribute(dset, "crc32", H5T_STRING, sizeof(text), text, sizeof(what), what);
  if (found < 0)
    return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has no attribute \"crc32\", which files of format version %" PetscInt_FMT " carry: the file was modified after it was written; save the model again", file, name, version);
  value = found ? 0 : strtoul(text, &end, 16);
  if (found || end == text || *end || value > 0xffffffffUL)
    return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has a malformed attribute \"crc32\" (8 hexadecimal digits expected): the file is corrupt; save the model again", file, name);
  *crc = (PetscInt64)value;
  return 0;
}

/*
  Tensor t of layer l, dataset name under loc: a dataset of IEEE floats in t's PyTorch shape (version 3; 1-D with
  t->size values before) whose storage holds them, with sound attributes; its values, as stored, into values[t->size]
  and its checksum (version 2 on) into *crc. The extent is compared with the architecture's before the storage is
  inspected, so every size HDF5 is asked about is one the architecture allows.
*/
static int NetHDF5InspectTensor(Net net, hid_t loc, const char file[], PetscInt version, PetscInt l, const char name[], const LayerTensorInfo *t, PetscScalar *values, PetscInt64 *crc, NetHDF5Verdict *v)
{
  char      spec[256], expect[128], found[128] = "";
  hid_t     dset;
  int       rank, bad = 0;
  hsize_t   dims[H5S_MAX_RANK];
  PetscBool isfloat, holds, same;
  size_t    n = 0;

  (void)LayerGetSpec(net->layers[l], sizeof(spec), spec);
  (void)NetHDF5ShapeString_Private(t, sizeof(expect), expect);
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
    return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s has no dataset \"%s\" (tensor %s of layer %" PetscInt_FMT ", %s, %" PetscInt_FMT " values): the file is incomplete; write every tensor of the state_dict (NetSave() and petnet_torch.py do)",
                         file, name, t->name, l, spec, t->size);
  if ((dset = H5Dopen2(loc, name, H5P_DEFAULT)) < 0) return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" cannot be read (not a simple dataset, or the file is damaged); save the model again", file, name);
  NetHDF5DatasetInfo(dset, &rank, dims, &isfloat, &holds);
  for (int d = 0; d < rank; d++) {
    (void)PetscSNPrintf(found + n, sizeof(found) - n, d ? "x%llu" : "%llu", (unsigned long long)dims[d]);
    n = strlen(found);
  }
  same = rank == (int)t->ndim ? PETSC_TRUE : PETSC_FALSE;
  for (int d = 0; same && d < rank; d++) same = dims[d] == (hsize_t)t->dims[d] ? PETSC_TRUE : PETSC_FALSE;
  if (rank == 0)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" cannot be read (not a simple dataset, or the file is damaged); save the model again", file, name);
  else if (version >= 3 && !same)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED,
                        "%s: dataset \"%s\" has shape %s, but layer %" PetscInt_FMT
                        " (%s) needs its %s in PyTorch's shape %s; the tensors do not match the architecture in /%s (transposed, or from another model?): write each tensor as the model's state_dict holds it",
                        file, name, found, l, spec, t->name, expect, NET_HDF5_GROUP);
  else if (version < 3 && (rank != 1 || dims[0] != (hsize_t)t->size))
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED,
                        "%s: dataset \"%s\" has shape %s, but layer %" PetscInt_FMT " (%s) needs its %s flat: 1-D with %" PetscInt_FMT
                        " values (PyTorch shape %s, in the attribute \"shape\"); the tensors do not match the architecture in /%s: write each tensor flattened, as NetSave() and petnet_torch.py do",
                        file, name, found, l, spec, t->name, t->size, expect, NET_HDF5_GROUP);
  else if (!holds)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" cannot be read (its storage does not hold its extent, or it is compact: the file is damaged); save the model again", file, name);
  else if (!isfloat)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" does not hold IEEE floating-point numbers (float64 or float32); write tensors as float64", file, name);
  if (!bad) bad = NetHDF5InspectTensorAttributes(dset, file, version, l, spec, name, t, expect, crc, v);
  if (!bad && H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0) bad = NetHDF5Refuse(v, PETSC_ERR_FILE_READ, "%s: reading dataset \"%s\" failed in HDF5: the file is damaged; save the model again", file, name);
  H5Dclose(dset);
  return bad;
}

/*
  A batchnorm's num_batches_tracked (version 3), dataset name under loc: absent (*count = 0), or an int64 scalar (any
  standard integer of up to 64 bits, one value, contiguous storage that holds it) >= 0 with its "crc32" into *crc.
*/
static int NetHDF5InspectCount(hid_t loc, const char file[], const char name[], PetscInt64 *count, PetscInt64 *crc, NetHDF5Verdict *v)
{
  hid_t         dset, space, type, plist;
  hssize_t      npoints;
  size_t        size  = 0;
  long long     value = -1;
  int           bad   = 0, found;
  char          text[128], what[256], *end;
  unsigned long sum;

  *count = 0;
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return 0;
  if ((dset = H5Dopen2(loc, name, H5P_DEFAULT)) < 0) return NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" cannot be read (not a simple dataset, or the file is damaged); save the model again", file, name);
  space   = H5Dget_space(dset);
  type    = H5Dget_type(dset);
  plist   = H5Dget_create_plist(dset);
  npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (type >= 0) size = H5Tget_size(type);
  if (space < 0 || type < 0 || plist < 0 || npoints != 1 || H5Tget_class(type) != H5T_INTEGER || size == 0 || size > sizeof(long long) || H5Tget_precision(type) != 8 * size || H5Tget_offset(type) != 0 || H5Pget_layout(plist) != H5D_CONTIGUOUS ||
      H5Dget_storage_size(dset) != size)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" is not one integer (PyTorch's num_batches_tracked is an int64 scalar): the file is damaged; save the model again", file, name);
  else if (H5Dread(dset, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) < 0)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_READ, "%s: reading dataset \"%s\" failed in HDF5: the file is damaged; save the model again", file, name);
  else if (value < 0 || value > ((long long)1 << 53))
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset \"%s\" holds %lld training batches: a count must be in [0, 2^53]; the file is damaged", file, name, value);
  if (!bad) {
    found = NetHDF5InspectAttribute(dset, "crc32", H5T_STRING, sizeof(text), text, sizeof(what), what);
    sum   = found ? 0 : strtoul(text, &end, 16);
    if (found < 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has no attribute \"crc32\", which files of format version 3 carry: the file was modified after it was written; save the model again", file, name);
    else if (found || end == text || *end || sum > 0xffffffffUL)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: tensor \"%s\" has a malformed attribute \"crc32\" (8 hexadecimal digits expected): the file is corrupt; save the model again", file, name);
    else {
      *count = (PetscInt64)value;
      *crc   = (PetscInt64)sum;
    }
  }
  if (plist >= 0) H5Pclose(plist);
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  H5Dclose(dset);
  return bad;
}

/*
  Every tensor into theta (the slice this rank owns) or the layers' buffers, and (version 3) batchnorm's counts: rank 0
  reads each, every rank checks it (checksum over the stored values) and converts it from PyTorch's layout (version 3)
*/
static PetscErrorCode NetHDF5ReadTensors_Private(Net net, hid_t loc, const char file[], PetscInt version, PetscScalar *theta)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt     rank;
  PetscInt        rstart, rend, maxsize = 1, *origin;
  PetscScalar    *values, *ours;
  NetHDF5Verdict *v;
  PetscErrorCode  ierr = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecGetOwnershipRange(net->theta, &rstart, &rend));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;

    PetscCall(LayerGetTensors(net->layers[l], &nt, info));
    for (PetscInt t = 0; t < nt; t++) maxsize = PetscMax(maxsize, info[t].size);
  }
  PetscCall(NetIOFeatureOrigins_Private(net, &origin));
  PetscCall(PetscMalloc2(maxsize, &values, maxsize, &ours));
  PetscCall(PetscNew(&v));
  for (PetscInt l = 0; !ierr && l < net->nlayers; l++) {
    Layer           layer = net->layers[l];
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscInt        nt;
    PetscInt64      count, crc = 0;
    char            name[4096];

    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt t = 0; !ierr && t < nt; t++) {
      PetscInt    lo = net->poff[l] + info[t].offset;
      PetscMPIInt n;

      PetscCall(NetIOTensorName_Private(net, l, &info[t], sizeof(name), name));
      if (!rank) (void)NetHDF5InspectTensor(net, loc, file, version, l, name, &info[t], values, &crc, v);
      ierr = NetHDF5Verdict_Private(comm, v);
      if (ierr) break;
      PetscCall(PetscMPIIntCast(info[t].size, &n));
      PetscCallMPI(MPI_Bcast(values, n, MPIU_SCALAR, 0, comm));
      PetscCallMPI(MPI_Bcast(&crc, 1, MPIU_INT64, 0, comm));
      ierr = NetIOCheckTensor_Private(net, file, name, info[t].size, values, version >= 2 ? PETSC_TRUE : PETSC_FALSE, crc);
      if (ierr) break;
      if (version >= 3)
        PetscCall(NetIOFromTorch_Private(&info[t], origin + 2 * l, values, ours));
      else
        PetscCall(PetscArraycpy(ours, values, info[t].size));
      if (info[t].buffer)
        PetscCall(PetscArraycpy(layer->buffers + info[t].offset, ours, info[t].size));
      else
        for (PetscInt i = PetscMax(lo, rstart); i < PetscMin(lo + info[t].size, rend); i++) theta[i - rstart] = ours[i - lo];
    }
    PetscCall(LayerBatchNormGetNumBatchesTracked(layer, &count));
    if (ierr || count < 0 || version < 3) continue;
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s.num_batches_tracked", net->nodes[l].name));
    crc = -1; /* stays so when the file has no count */
    if (!rank) (void)NetHDF5InspectCount(loc, file, name, &count, &crc, v);
    ierr = NetHDF5Verdict_Private(comm, v);
    if (ierr) break;
    PetscCallMPI(MPI_Bcast(&count, 1, MPIU_INT64, 0, comm));
    PetscCallMPI(MPI_Bcast(&crc, 1, MPIU_INT64, 0, comm));
    values[0] = (PetscScalar)count;
    if (crc >= 0) ierr = NetIOCheckTensor_Private(net, file, name, 1, values, PETSC_TRUE, crc);
    if (ierr) break;
    PetscCall(LayerBatchNormSetNumBatchesTracked(layer, count));
  }
  PetscCall(PetscFree(v));
  PetscCall(PetscFree2(values, ours));
  PetscCall(PetscFree(origin));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/*
  Rank 0: the optional float64 attributes input_scale, input_mean, input_std of /petnet into norm[3]; *found: how many
  of them the group has (0 or 3 in a sound file). Returns 1 with the verdict if one is not a single number.
*/
static int NetHDF5InspectNormalization(hid_t loc, const char file[], PetscReal norm[], int *found, NetHDF5Verdict *v)
{
  const char *name[3] = {"input_scale", "input_mean", "input_std"};
  hid_t       group;
  int         bad = 0;

  *found = 0;
  if ((group = H5Gopen2(loc, NET_HDF5_GROUP, H5P_DEFAULT)) < 0) return 0; /* NetHDF5InspectHeader() reported it */
  for (int k = 0; k < 3 && !bad; k++) {
    hid_t       aid, type, space;
    H5T_class_t cls;
    double      value;

    if (H5Aexists(group, name[k]) <= 0) continue;
    aid   = H5Aopen(group, name[k], H5P_DEFAULT);
    type  = aid >= 0 ? H5Aget_type(aid) : -1;
    space = aid >= 0 ? H5Aget_space(aid) : -1;
    cls   = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    if (cls != H5T_FLOAT || space < 0 || H5Sget_simple_extent_npoints(space) != 1 || H5Aread(aid, H5T_NATIVE_DOUBLE, &value) < 0)
      bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the attribute \"%s\" of group /%s is not one floating-point number: the file is damaged or was not written by NetSave() or petnet_torch.py; save the model again", file, name[k],
                          NET_HDF5_GROUP);
    else {
      norm[k] = (PetscReal)value;
      (*found)++;
    }
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (aid >= 0) H5Aclose(aid);
  }
  H5Gclose(group);
  if (!bad && *found != 0 && *found != 3)
    bad = NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: group /%s has %d of the attributes input_scale, input_mean, input_std, which go together: the file is damaged; save the model again", file, NET_HDF5_GROUP, *found);
  return bad;
}

/* The input normalisation of the file under loc (rank 0) on every rank: *set, norm[3] = scale, mean, std (checked and
   recorded by NetIOSetNormalization_Private() once the Net is built) */
static PetscErrorCode NetHDF5ReadNormalization_Private(Net net, hid_t loc, const char file[], PetscBool *set, PetscReal values[])
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt     rank;
  PetscReal       norm[4] = {1, 0, 1, 0}; /* scale, mean, std, found */
  int             found   = 0;
  NetHDF5Verdict *v;
  PetscErrorCode  ierr;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscNew(&v));
  if (!rank) {
    (void)NetHDF5InspectNormalization(loc, file, norm, &found, v);
    norm[3] = (PetscReal)found;
  }
  PetscCallMPI(MPI_Bcast(norm, 4, MPIU_REAL, 0, comm));
  ierr = NetHDF5Verdict_Private(comm, v);
  PetscCall(PetscFree(v));
  PetscCall(ierr);
  *set = norm[3] > 0 ? PETSC_TRUE : PETSC_FALSE;
  for (int k = 0; k < 3; k++) values[k] = norm[k];
  PetscFunctionReturn(0);
}

/* The Net under loc (a group of an open file on rank 0; unused on the other ranks) */
static PetscErrorCode NetHDF5Read_Private(Net net, hid_t loc, const char file[])
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt     rank;
  NetHDF5Header   h;
  NetHDF5Verdict *v;
  PetNetShape     in;
  PetscScalar    *theta;
  char           *spec;
  PetscBool       normset = PETSC_FALSE;
  PetscReal       norm[3] = {1, 0, 1};
  PetscErrorCode  ierr;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscMemzero(&h, sizeof(h)));
  PetscCall(PetscNew(&v));
  PetscCall(PetscMalloc1(NET_HDF5_MAX_SPEC, &spec));
  spec[0] = 0;
  if (!rank) (void)NetHDF5InspectHeader(loc, file, &h, spec, v);
  PetscCallMPI(MPI_Bcast(&h, sizeof(h), MPI_BYTE, 0, comm));
  h.shape[sizeof(h.shape) - 1] = 0;
  h.speclen                    = PetscMax(0, PetscMin(h.speclen, NET_HDF5_MAX_SPEC - 1));
  PetscCallMPI(MPI_Bcast(spec, h.speclen + 1, MPI_CHAR, 0, comm));
  spec[h.speclen] = 0;
  ierr            = NetHDF5Verdict_Private(comm, v);
  if (!ierr) ierr = NetIOCheckVersion_Private(net, file, h.version);
  if (!ierr) ierr = PetNetShapeFromString(h.shape, &in);
  if (!ierr) ierr = NetHDF5ReadNormalization_Private(net, loc, file, &normset, norm);
  if (!ierr) ierr = NetIOCheckHeader_Private(net, file, h.version, spec, &in, h.nparams, h.nbuffers, h.grid, normset, norm, h.crc);
  if (!ierr) ierr = NetIOGridInputShape_Private(net, file, h.grid, &in);
  if (!ierr) ierr = NetIOSetArchitecture_Private(net, file, spec, &in, h.nparams);
  PetscCall(PetscFree(spec));
  PetscCall(PetscFree(v));
  PetscCall(ierr);
  PetscCall(NetIOCheckCounts_Private(net, file, h.nparams, h.nbuffers));
  PetscCall(NetIOSetNormalization_Private(net, file, normset, norm));
  PetscCall(VecGetArray(net->theta, &theta));
  ierr = NetHDF5ReadTensors_Private(net, loc, file, h.version, theta);
  PetscCall(VecRestoreArray(net->theta, &theta));
  PetscCall(ierr);
  PetscCall(NetIOCheckTensorRanges_Private(net, file));
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* HDF5's most specific message about the error just raised ("truncated file: eof = 6208, ..."), for ours */
static herr_t NetHDF5ErrorDetail(unsigned n, const H5E_error2_t *err, void *detail)
{
  if (n == 0 && err->desc) (void)PetscStrncpy((char *)detail, err->desc, 256);
  return 0;
}

/* NetLoad() of an HDF5 file: rank 0 opens it with HDF5's default (serial) driver and reads it; nothing is opened in parallel */
PetscErrorCode NetLoad_HDF5(Net net, const char file[])
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt     rank;
  hid_t           fid = -1, fapl;
  H5E_auto2_t     func;
  void           *data;
  NetHDF5Verdict *v;
  PetscErrorCode  ierr;

  PetscFunctionBegin;
  PetscCall(PetNetCheckHDF5File(comm, file, "Model file", PETSC_FALSE)); /* HDF5 itself may crash or hang on damaged headers */
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscNew(&v));
  if (!rank) {
    char detail[256] = "no detail";

    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* HDF5's own messages would come before ours, on rank 0 only */
    /* the serial driver, without file locking: the MPI-IO driver used before did not lock either, NetSave() replaces
       files by renaming complete ones, and some parallel file systems refuse flock() */
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_sec2(fapl);
#if H5_VERSION_GE(1, 10, 7)
    H5Pset_file_locking(fapl, 0, 1);
#endif
    fid = H5Fopen(file, H5F_ACC_RDONLY, fapl);
    if (fid < 0) H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, NetHDF5ErrorDetail, detail); /* before the next call clears it */
    H5Pclose(fapl);
    if (fid < 0) { (void)NetHDF5Refuse(v, PETSC_ERR_FILE_READ, "Model file %s is not a readable HDF5 file (HDF5 says: %s): it is truncated or damaged, or not HDF5 at all; use another copy or save the model again", file, detail); }
  }
  ierr = NetHDF5Verdict_Private(comm, v);
  if (!ierr) ierr = NetHDF5Read_Private(net, fid, file);
  if (!rank) {
    if (fid >= 0) H5Fclose(fid);
    H5Eset_auto2(H5E_DEFAULT, func, data);
  }
  PetscCall(PetscFree(v));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

/* NetRead() from an HDF5 viewer: rank 0 reads the viewer's current group through the viewer's file */
PetscErrorCode NetRead_HDF5(Net net, PetscViewer viewer)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  PetscMPIInt     rank;
  hid_t           fid, loc = -1;
  H5E_auto2_t     func;
  void           *data;
  const char     *file;
  char           *group;
  NetHDF5Verdict *v;
  PetscErrorCode  ierr;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(PetscViewerHDF5GetFileId(viewer, &fid));
  PetscCall(PetscViewerHDF5GetGroup(viewer, NULL, &group));
  PetscCall(PetscNew(&v));
  if (!rank) {
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if ((loc = H5Gopen2(fid, group ? group : "/", H5P_DEFAULT)) < 0) (void)NetHDF5Refuse(v, PETSC_ERR_FILE_UNEXPECTED, "%s: the viewer's group %s cannot be opened: it does not exist, or the file is damaged", file, group ? group : "/");
  }
  PetscCall(PetscFree(group));
  ierr = NetHDF5Verdict_Private(comm, v);
  if (!ierr) ierr = NetHDF5Read_Private(net, loc, file);
  if (!rank) {
    if (loc >= 0) H5Gclose(loc);
    H5Eset_auto2(H5E_DEFAULT, func, data);
  }
  PetscCall(PetscFree(v));
  PetscCall(ierr);
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

PetscErrorCode NetLoad_HDF5(Net net, const char file[])
{
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "PETSc was built without HDF5: %s cannot be loaded; load a PETSc binary model file", file);
}
#endif
