/*
  A Net in a PETSc binary file (big-endian, as every PETSc binary file):

    PetscInt    header[10]       NET_FILE_CLASSID ("PNET"), NET_FILE_VERSION, speclen,
                                 ndim, dim[0], dim[1], dim[2], dim[3]  (input shape, unused dims 0),
                                 nparams, nbuffers
    PetscInt    normset          (version 3) 1: the Net records its input normalisation, 0: it does not
    PetscReal   norm[3]          (version 3) scale, mean, std of that normalisation (1, 0, 1 when normset is 0)
    PetscInt    grid             (version 4) the spatial dims of the grid of a Net trained in grid mode (NetSetGrid();
                                 its input shape is then the per-point dof), 0 in batch mode
    PetscInt    crc              (version 4) CRC-32 of the header (NetIOHeaderChecksum_Private(): layer list, input
                                 shape, counts, grid, normalisation), as a 32-bit pattern
    char        spec[speclen]    the compact layer list of NetGetSpec(), no terminating zero
    Vec         parameters       VecView(): VEC_FILE_CLASSID, nparams, nparams scalars (any rank count loads it)
    PetscScalar buffers[nbuffers]  layer by layer, each layer's layer->buffers
    PetscInt    ntensors         (version 2) the number of tensors, node by node as LayerGetTensors() lists them
    PetscInt    crc[ntensors]    (version 2) CRC-32 of each tensor (NetIOChecksum_Private()), as a 32-bit pattern
  Version 4 is version 3 with the header's checksum. Version 3 has the content of version 2: binary files keep PetNet's own layout (conv2d weights [out][kh][kw][cin],
  features (h, w, c)) and no num_batches_tracked; only HDF5 files changed to PyTorch's layout (netiohdf5.c).

  The reader checks the class id, the version and the length of the file against the header before trusting it, and
  the header against its checksum (version 4) before the layer list is parsed, each tensor against its checksum (files
  of version 1 have none) and for finite values, and the normalisation (version 3) for finite values and a positive std.
*/
#include "netio.h"
#include <errno.h>

#define NET_FILE_HEADER 10
#define NET_FILE_MAX_DIM 4 /* the header has room for dim[0..3] of the input shape (PETNET_MAX_DIM is 5 since the tensor-shape kinds) */
/* Bytes of the normalisation block of version 3 (normset, norm[3]) */
#define NET_FILE_NORM_BYTES ((PetscInt64)sizeof(PetscInt) + 3 * (PetscInt64)sizeof(PetscReal))

/* Version 3: the input normalisation after the header */
static PetscErrorCode NetBinaryWriteNormalization_Private(Net net, PetscViewer viewer)
{
  PetscInt  set = net->normset ? 1 : 0;
  PetscReal norm[3];

  PetscFunctionBegin;
  PetscCall(NetGetInputNormalization(net, NULL, &norm[0], &norm[1], &norm[2]));
  PetscCall(PetscViewerBinaryWrite(viewer, &set, 1, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, norm, 3, PETSC_REAL));
  PetscFunctionReturn(0);
}

/* Version 3: reads the normalisation into set, norm[3] (checked once the Net is built: NetIOSetNormalization_Private()) */
static PetscErrorCode NetBinaryReadNormalization_Private(Net net, PetscViewer viewer, const char file[], PetscBool *set, PetscReal norm[])
{
  PetscInt flag;

  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryRead(viewer, &flag, 1, NULL, PETSC_INT));
  PetscCheck(flag == 0 || flag == 1, PetscObjectComm((PetscObject)net), PETSC_ERR_FILE_UNEXPECTED, "%s has a corrupt header: the normalisation flag is %" PetscInt_FMT ", not 0 or 1; save the model again", file, flag);
  PetscCall(PetscViewerBinaryRead(viewer, norm, 3, NULL, PETSC_REAL));
  *set = flag ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* Version 4: the grid and the checksum of the header, written after the normalisation: v4 = {grid, crc} */
static PetscErrorCode NetBinaryHeaderChecksum_Private(Net net, const char spec[], PetscInt nbuffers, PetscInt v4[2])
{
  PetscBool  set;
  PetscReal  norm[3];
  PetscInt64 crc;

  PetscFunctionBegin;
  PetscCall(NetGetInputNormalization(net, &set, &norm[0], &norm[1], &norm[2]));
  PetscCall(NetIOGetGridDimension_Private(net, &v4[0]));
  PetscCall(NetIOHeaderChecksum_Private(spec, &net->in, net->nparams, nbuffers, v4[0], set, norm, &crc));
  v4[1] = (PetscInt)(int32_t)(uint32_t)crc;
  PetscFunctionReturn(0);
}

/* Bytes from the viewer's current position to the end of the file, or -1 if unknown (MPI-IO). */
static PetscErrorCode NetBinaryRemaining_Private(PetscViewer viewer, PetscInt64 *remain)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)viewer);
  PetscMPIInt rank;
  PetscBool   mpiio;
  PetscInt64  r = -1;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscViewerBinaryGetUseMPIIO(viewer, &mpiio));
  if (!mpiio) {
    int fd;

    PetscCall(PetscViewerBinaryGetDescriptor(viewer, &fd));
    if (rank == 0) {
      off_t here, end;

      PetscCall(PetscBinarySeek(fd, 0, PETSC_BINARY_SEEK_CUR, &here));
      PetscCall(PetscBinarySeek(fd, 0, PETSC_BINARY_SEEK_END, &end));
      PetscCall(PetscBinarySeek(fd, here, PETSC_BINARY_SEEK_SET, &here));
      r = (PetscInt64)(end - here);
    }
  }
  PetscCallMPI(MPI_Bcast(&r, 1, MPIU_INT64, 0, comm));
  *remain = r;
  PetscFunctionReturn(0);
}

/* The tensors of the Net, node by node, in the order of the checksum table: each one's name and values (replicated) */
static PetscErrorCode NetBinaryForEachTensor_Private(Net net, PetscErrorCode (*fn)(Net, PetscInt, const char[], PetscInt, const PetscScalar *, void *), void *ctx)
{
  const PetscScalar *rep;
  PetscInt           i = 0;

  PetscFunctionBegin;
  PetscCall(NetUpdateReplicatedParameters_Private(net));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &rep));
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer              layer = net->layers[l];
    LayerTensorInfo    info[LAYER_MAX_TENSORS];
    PetscInt           nt;
    const PetscScalar *blk;

    PetscCall(LayerGetTensors(layer, &nt, info));
    PetscCall(NetGetNodeBlock_Private(net, l, rep, &blk));
    for (PetscInt t = 0; t < nt; t++, i++) {
      char name[4096];

      PetscCall(NetIOTensorName_Private(net, l, &info[t], sizeof(name), name));
      PetscCall((*fn)(net, i, name, info[t].size, info[t].buffer ? layer->buffers + info[t].offset : blk + info[t].offset, ctx));
    }
    PetscCall(NetRestoreNodeBlock_Private(net, l, &blk));
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &rep));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetBinaryCount_Private(Net net, PetscInt i, const char name[], PetscInt n, const PetscScalar *a, void *ctx)
{
  PetscFunctionBegin;
  (*(PetscInt *)ctx)++;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetBinaryChecksum_Private(Net net, PetscInt i, const char name[], PetscInt n, const PetscScalar *a, void *ctx)
{
  PetscInt64 crc;

  PetscFunctionBegin;
  PetscCall(NetIOChecksum_Private(n, a, &crc));
  ((PetscInt *)ctx)[i] = (PetscInt)(int32_t)(uint32_t)crc;
  PetscFunctionReturn(0);
}

typedef struct {
  const char     *file;
  const PetscInt *crc; /* NULL: version 1 */
} NetBinaryCheck;

static PetscErrorCode NetBinaryCheck_Private(Net net, PetscInt i, const char name[], PetscInt n, const PetscScalar *a, void *ctx)
{
  NetBinaryCheck *check = (NetBinaryCheck *)ctx;

  PetscFunctionBegin;
  PetscCall(NetIOCheckTensor_Private(net, check->file, name, n, a, check->crc ? PETSC_TRUE : PETSC_FALSE, check->crc ? (PetscInt64)(uint32_t)check->crc[i] : 0));
  PetscFunctionReturn(0);
}

/* What rank 0 writes, prepared collectively beforehand */
typedef struct {
  PetscInt header[NET_FILE_HEADER];
  char    *spec;
  PetscInt v4[2];  /* version 4: the grid and the header's checksum */
  Vec      theta; /* the parameters gathered on rank 0 (sequential; empty elsewhere) */
  PetscInt nt, *crc;
} NetBinaryImage;

/* Rank 0: the whole file through a sequential viewer (PetscViewerGetSubViewer()); communicates with no other rank */
static PetscErrorCode NetBinaryWriteLocal_Private(Net net, PetscViewer viewer, const NetBinaryImage *img)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryWrite(viewer, img->header, NET_FILE_HEADER, PETSC_INT));
  PetscCall(NetBinaryWriteNormalization_Private(net, viewer));
  PetscCall(PetscViewerBinaryWrite(viewer, img->v4, 2, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, img->spec, img->header[2], PETSC_CHAR));
  PetscCall(VecView(img->theta, viewer));
  /* buffers are replicated: rank 0's copy is written */
  for (PetscInt l = 0; l < net->nlayers; l++)
    if (net->layers[l]->nbuffers) PetscCall(PetscViewerBinaryWrite(viewer, net->layers[l]->buffers, net->layers[l]->nbuffers, PETSC_SCALAR));
  PetscCall(PetscViewerBinaryWrite(viewer, img->crc, img->nt + 1, PETSC_INT));
  PetscFunctionReturn(0);
}

/* Rank 0 writes the image alone, then every rank learns the outcome (PetNetWriteAgree()): a full disk is one error on
   every rank, never a rank left waiting in a collective write */
static PetscErrorCode NetBinaryWriteImage_Private(Net net, PetscViewer viewer, const char file[], const NetBinaryImage *img)
{
  PetscViewer    sub;
  PetscMPIInt    rank;
  PetscErrorCode ierr = 0;
  int            err  = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  PetscCall(PetscViewerGetSubViewer(viewer, PETSC_COMM_SELF, &sub));
  if (rank == 0) {
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    errno = 0;
    ierr  = NetBinaryWriteLocal_Private(net, sub, img);
    err   = ierr ? errno : 0;
    PetscCall(PetscPopErrorHandler());
  }
  PetscCall(PetscViewerRestoreSubViewer(viewer, PETSC_COMM_SELF, &sub));
  PetscCall(PetNetWriteAgree(PetscObjectComm((PetscObject)net), ierr, err, file, NULL));
  PetscFunctionReturn(0);
}

PetscErrorCode NetWrite_Binary(Net net, PetscViewer viewer)
{
  NetBinaryImage img = {{NET_FILE_CLASSID, NET_FILE_VERSION}};
  size_t         len;
  const char    *file;
  VecScatter     sct;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(NetIOFailForTesting_Private(net, file));
  PetscCall(NetIOGetSpec_Private(net, &img.spec));
  PetscCall(PetscStrlen(img.spec, &len));
  PetscCall(PetscIntCast((PetscInt64)len, &img.header[2]));
  PetscCheck(net->in.ndim <= NET_FILE_MAX_DIM, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_SIZ,
             "%s: the binary model format holds input shapes of at most %d dimensions and this Net's input has %" PetscInt_FMT ": save it as HDF5 (a file name ending in .h5), or give the Net a flatter input and reshape it inside (reshape:AxBxC)",
             file, NET_FILE_MAX_DIM, net->in.ndim);
  img.header[3] = net->in.ndim;
  for (PetscInt d = 0; d < net->in.ndim; d++) img.header[4 + d] = net->in.dim[d];
  img.header[8] = net->nparams;
  PetscCall(NetIOGetNumBuffers_Private(net, &img.header[9]));
  PetscCall(NetBinaryHeaderChecksum_Private(net, img.spec, img.header[9], img.v4));
  PetscCall(VecScatterCreateToZero(net->theta, &sct, &img.theta));
  PetscCall(VecScatterBegin(sct, net->theta, img.theta, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sct, net->theta, img.theta, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sct));
  PetscCall(NetBinaryForEachTensor_Private(net, NetBinaryCount_Private, &img.nt));
  PetscCall(PetscMalloc1(img.nt + 1, &img.crc));
  img.crc[0] = img.nt;
  PetscCall(NetBinaryForEachTensor_Private(net, NetBinaryChecksum_Private, img.crc + 1));
  ierr = NetBinaryWriteImage_Private(net, viewer, file, &img); /* the same error on every rank: free, then pass it on */
  PetscCall(PetscFree(img.crc));
  PetscCall(VecDestroy(&img.theta));
  PetscCall(PetscFree(img.spec));
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

PetscErrorCode NetRead_Binary(Net net, PetscViewer viewer)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  PetscInt       header[NET_FILE_HEADER];
  PetscInt64     remain = -1, need;
  PetscInt       nt = 0, *crc = NULL;
  const char    *file;
  char          *spec;
  PetNetShape    in;
  NetBinaryCheck check;
  PetscBool      normset = PETSC_FALSE;
  PetscReal      norm[3] = {1, 0, 1};
  PetscInt64     hcrc    = 0;
  PetscInt       grid    = 0;

  PetscFunctionBegin;
  PetscCall(NetIOFileName_Private(viewer, &file));
  PetscCall(NetBinaryRemaining_Private(viewer, &remain));
  PetscCheck(remain < 0 || remain >= (PetscInt64)sizeof(PetscInt), comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet model file: it is empty; save the model with NetSave()", file);
  PetscCall(PetscViewerBinaryRead(viewer, header, 1, NULL, PETSC_INT));
  PetscCheck(header[0] != VEC_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet model file but a PETSc Vec (load it with VecLoad()); save models with NetSave()", file);
  PetscCheck(header[0] == NET_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not a PetNet model file: wrong magic number (it does not start with \"PNET\"); give a file written by NetSave()", file);
  PetscCheck(remain < 0 || remain >= (PetscInt64)sizeof(header), comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s is truncated: it ends inside the PetNet header (%" PetscInt64_FMT " bytes); the save was interrupted or the copy is incomplete: save the model again", file, remain);
  PetscCall(PetscViewerBinaryRead(viewer, header + 1, NET_FILE_HEADER - 1, NULL, PETSC_INT));
  PetscCall(NetIOCheckVersion_Private(net, file, header[1]));
  PetscCheck(header[2] > 0 && (remain >= 0 || header[2] < NET_MAX_SPEC_UNCHECKED), comm, PETSC_ERR_FILE_UNEXPECTED, "%s has a corrupt header: layer list length %" PetscInt_FMT " is not positive%s; save the model again", file, header[2],
             remain >= 0 ? "" : " or too long");
  PetscCheck(header[3] > 0 && header[3] <= NET_FILE_MAX_DIM, comm, PETSC_ERR_FILE_UNEXPECTED, "%s has a corrupt header: input shape with %" PetscInt_FMT " dimensions; save the model again", file, header[3]);
  PetscCheck(header[8] >= 0 && header[9] >= 0, comm, PETSC_ERR_FILE_UNEXPECTED, "%s has a corrupt header: negative parameter or buffer count; save the model again", file);
  need = (PetscInt64)sizeof(header) + (header[1] >= 3 ? NET_FILE_NORM_BYTES : 0) + (header[1] >= NET_FILE_VERSION_HEADER_CRC ? 2 * (PetscInt64)sizeof(PetscInt) : 0) + header[2] + (header[1] >= 2 ? 3 : 2) * (PetscInt64)sizeof(PetscInt) +
         ((PetscInt64)header[8] + header[9]) * (PetscInt64)sizeof(PetscScalar);
  PetscCheck(remain < 0 || remain >= need, comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s is truncated: its header announces %" PetscInt_FMT " parameters and %" PetscInt_FMT " buffer values (%" PetscInt64_FMT " bytes) but the file holds only %" PetscInt64_FMT
             " bytes; the save was interrupted or the copy is incomplete: save the model again",
             file, header[8], header[9], need, remain);
  if (header[1] >= 3) PetscCall(NetBinaryReadNormalization_Private(net, viewer, file, &normset, norm));
  if (header[1] >= NET_FILE_VERSION_HEADER_CRC) {
    PetscInt v4[2];

    PetscCall(PetscViewerBinaryRead(viewer, v4, 2, NULL, PETSC_INT));
    grid = v4[0];
    hcrc = (PetscInt64)(uint32_t)v4[1];
  }
  PetscCall(PetscMalloc1(header[2] + 1, &spec));
  PetscCall(PetscViewerBinaryRead(viewer, spec, header[2], NULL, PETSC_CHAR));
  spec[header[2]] = 0;
  in.ndim         = header[3];
  for (PetscInt d = 0; d < PETNET_MAX_DIM; d++) in.dim[d] = d < in.ndim ? header[4 + d] : 0; /* in.ndim <= NET_FILE_MAX_DIM */
  for (PetscInt d = 0; d < in.ndim; d++) PetscCheck(in.dim[d] > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "%s has a corrupt header: input dimension %" PetscInt_FMT " is %" PetscInt_FMT "; save the model again", file, d, in.dim[d]);
  PetscCall(NetIOCheckHeader_Private(net, file, header[1], spec, &in, header[8], header[9], grid, normset, norm, hcrc));
  PetscCall(NetIOGridInputShape_Private(net, file, grid, &in));
  PetscCall(NetIOSetArchitecture_Private(net, file, spec, &in, header[8]));
  PetscCall(PetscFree(spec));
  PetscCall(NetIOCheckCounts_Private(net, file, header[8], header[9]));
  PetscCall(NetIOSetNormalization_Private(net, file, normset, norm));
  PetscCall(VecLoad(net->theta, viewer));
  for (PetscInt l = 0; l < net->nlayers; l++)
    if (net->layers[l]->nbuffers) PetscCall(PetscViewerBinaryRead(viewer, net->layers[l]->buffers, net->layers[l]->nbuffers, NULL, PETSC_SCALAR));
  if (header[1] >= 2) { /* the checksum table */
    PetscInt ntfile;

    PetscCall(NetBinaryForEachTensor_Private(net, NetBinaryCount_Private, &nt));
    PetscCall(PetscViewerBinaryRead(viewer, &ntfile, 1, NULL, PETSC_INT));
    PetscCheck(ntfile == nt, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is corrupt: it records checksums of %" PetscInt_FMT " tensors, but its architecture has %" PetscInt_FMT "; save the model again", file, ntfile, nt);
    PetscCall(NetBinaryRemaining_Private(viewer, &remain));
    PetscCheck(remain < 0 || remain >= nt * (PetscInt64)sizeof(PetscInt), comm, PETSC_ERR_FILE_UNEXPECTED, "%s is truncated: it ends inside the table of tensor checksums; the save was interrupted or the copy is incomplete: save the model again",
               file);
    PetscCall(PetscMalloc1(nt, &crc));
    PetscCall(PetscViewerBinaryRead(viewer, crc, nt, NULL, PETSC_INT));
  }
  check.file = file;
  check.crc  = crc;
  PetscCall(NetBinaryForEachTensor_Private(net, NetBinaryCheck_Private, &check));
  PetscCall(PetscFree(crc));
  PetscCall(NetIOCheckTensorRanges_Private(net, file));
  net->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}
