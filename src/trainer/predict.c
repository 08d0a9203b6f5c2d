/*
  Inference: a trained or loaded Net evaluated on a Dataset in evaluation mode, its outputs (logits) kept in file order
  and written with the predicted labels to HDF5 or CSV.

  Outputs: Y is a Vec [N][nout] distributed like the Dataset's samples (rank r holds its samples in file order), block
  size nout. The predicted label of a sample is the arg-max of its outputs (the first one on ties, as LossCountCorrect()).
  Files:
    .h5/.hdf5  datasets "logits" [N][nout] float64 and "labels" [N] integers, written by rank 0 (serial HDF5)
    .csv       a header line "index,label,logit_0,...", then one line per sample: index, label, logits (%.17g)
  Both are written under a temporary name and renamed into place (PetNetCommitFile()).
*/
#include <petnet/private/trainerimpl.h>
#include <petnet/private/datasetimpl.h>
#include <petscviewerhdf5.h>
#include <errno.h>

/*
  The normalisation of a Dataset evaluated with the Net: a Dataset whose normalisation is not set takes the one the Net
  records (NetGetInputNormalization(): from its training, or from the model file it was loaded from); one that is set
  and differs keeps its own, with a warning, since the user asked for it (data stored already normalised, say).
*/
PetscErrorCode TrainerMatchNormalization_Private(Trainer tr, Dataset ds)
{
  PetscBool   netset, dsset;
  PetscReal   s, m, d, a, b, c;
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(NetGetInputNormalization(tr->net, &netset, &s, &m, &d));
  if (!netset) PetscFunctionReturn(0);
  PetscCall(DatasetIsNormalizationSet(ds, &dsset));
  if (!dsset) {
    PetscCall(DatasetSetNormalization(ds, s, m, d));
    ds->normfromnet = PETSC_TRUE; /* checked against the data once they are read: TrainerCheckNormalization_Private() */
    PetscFunctionReturn(0);
  }
  PetscCall(DatasetGetNormalization(ds, &a, &b, &c));
  if (a == s && b == m && c == d) PetscFunctionReturn(0);
  PetscCall(DatasetGetOptionsPrefix(ds, &prefix));
  PetscCall(PetscPrintf(PetscObjectComm((PetscObject)tr),
                        "WARNING: the Dataset%s%s normalises its inputs x -> (%g x - %g) / %g, but the Net was trained on x -> (%g x - %g) / %g (recorded in the Net and its model file); its outputs are meaningful only if these "
                        "inputs are already normalised accordingly. To use the Net's normalisation, drop -%sdataset_scale, -%sdataset_mean and -%sdataset_std\n",
                        prefix ? " " : "", prefix ? prefix : "", (double)a, (double)b, (double)c, (double)s, (double)m, (double)d, prefix ? prefix : "", prefix ? prefix : "", prefix ? prefix : ""));
  PetscFunctionReturn(0);
}

/*
  After DatasetSetUp(): the normalisation x -> (scale x - mean) / std a Dataset uses and where it came from, printed
  when it came from the Net with a scale that is not the Dataset kind's own (always when print is set), and checked
  against the data when it came from the Net. The scale converts the stored values into the unit the Net was trained
  in (1/255: idx bytes to [0, 1]), and a Net passes on its training data's: it fits other data only if they are stored
  in the same unit. A Net trained on bytes fed floats already in [0, 1], or trained on floats in [0, 1] fed idx bytes,
  sees inputs 255 times too small or too large (predictions near chance, a test loss of 48). Refused:
    - with the training data at hand (ref: a test set), raw values that span 50 times more or less than theirs;
    - without (a loaded model), values in [0, 1] given the scale of bytes, 1/255, which their kind does not default to.
  Bytes given scale 1 by a model trained on floats cannot be told from floats in [0, 255]: that mix is printed only.
*/
PetscErrorCode TrainerCheckNormalization_Private(Trainer tr, Dataset ds, Dataset ref, const char what[], PetscBool print)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscReal   scale, mean, std, span = ds->xmax - ds->xmin, refspan = 0, suggest = 0;
  const char *prefix, *source = ds->xsource ? ds->xsource : "", *why    = NULL;
  char        from[256], range[128], refrange[PETSC_MAX_PATH_LEN + 128] = "", fix[64];

  PetscFunctionBegin;
  PetscCall(DatasetGetNormalization(ds, &scale, &mean, &std));
  PetscCall(DatasetGetOptionsPrefix(ds, &prefix));
  prefix = prefix ? prefix : "";
  if (ds->normfromnet)
    PetscCall(PetscStrncpy(from, "taken from the Net: that of the data it was trained on", sizeof(from)));
  else if (ds->normset)
    PetscCall(PetscSNPrintf(from, sizeof(from), "set for this data (-%sdataset_scale, -%sdataset_mean, -%sdataset_std or DatasetSetNormalization())", prefix, prefix, prefix));
  else
    PetscCall(PetscSNPrintf(from, sizeof(from), "the %s kind's default", ((PetscObject)ds)->type_name));
  (void)snprintf(range, sizeof(range), "[%.6g, %.6g]", (double)ds->xmin, (double)ds->xmax);
  if (print || (ds->normfromnet && scale != ds->defaultscale))
    PetscCall(PetscPrintf(comm, "Normalisation of the %s data%s%s (values in %s): x -> (%.6g x - %.6g) / %.6g, %s\n", what, source[0] ? " " : "", source, range, (double)scale, (double)mean, (double)std, from));
  else
    PetscCall(PetscInfo(tr, "Normalisation of the %s data: x -> (%g x - %g) / %g, %s\n", what, (double)scale, (double)mean, (double)std, from));
  if (!ds->normfromnet || !ds->N || !(span > 0)) PetscFunctionReturn(0);
  if (ref && ref != ds && ref->setupcalled && ref->N && ref->xmax > ref->xmin) {
    refspan = ref->xmax - ref->xmin;
    if (span > 50 * refspan || 50 * span < refspan) {
      why     = "the two are stored in different units (bytes in [0, 255] and values in [0, 1]?)";
      suggest = scale * refspan / span;
      (void)snprintf(refrange, sizeof(refrange), ", while the training data%s%s hold values in [%.6g, %.6g]", ref->xsource ? " in " : "", ref->xsource ? ref->xsource : "", (double)ref->xmin, (double)ref->xmax);
    }
  } else if (!ref && PetscAbsReal(scale * 255 - 1) < 1e-12 && ds->defaultscale != scale && ds->xmin >= 0 && ds->xmax <= 1) {
    why     = "values already in [0, 1] are given the scale of bytes in [0, 255] (the Net was trained on bytes)";
    suggest = ds->defaultscale;
  }
  if (!why) PetscFunctionReturn(0);
  (void)snprintf(fix, sizeof(fix), "%.6g", (double)suggest);
  SETERRQ(
      comm, PETSC_ERR_ARG_INCOMP,
      "The %s data%s%s hold values in %s%s, and the normalisation x -> (%.6g x - %.6g) / %.6g (%s) cannot suit them: %s. Give -%sdataset_scale %s to bring them to the unit of the training data (the Net's mean and std are kept), or convert the data",
      what, source[0] ? " in " : "", source, range, refrange, (double)scale, (double)mean, (double)std, from, why, prefix, fix);
}

/*
  The sample shape of a Dataset against the Net's input shape (set from the Dataset if the Net has none). The shapes
  must be equal, or one of them flat (1-D) with as many entries: a flat sample is the (h, w, c) sample in PetNet's
  row-major, channels-last order. Equal sizes are not enough: 14x56x1 data in a model of 28x28x1 would be convolved
  as 28x28 images that are not those images. what names the Dataset ("test", "training"), fix what to change.
*/
PetscErrorCode TrainerCheckSampleShape_Private(Trainer tr, Dataset ds, const char what[], const char fix[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetNetShape sample, netin;
  PetscInt    n1, n2;
  char        a[64], b[64];
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(DatasetGetSampleShape(ds, &sample));
  PetscCall(NetGetInputShape(tr->net, &netin));
  if (!netin.ndim) {
    PetscCall(NetSetInputShape(tr->net, &sample));
    PetscFunctionReturn(0);
  }
  PetscCall(PetNetShapeSize(&sample, &n1));
  PetscCall(PetNetShapeSize(&netin, &n2));
  PetscCall(PetNetShapeToString(&sample, sizeof(a), a));
  PetscCall(PetNetShapeToString(&netin, sizeof(b), b));
  PetscCall(DatasetGetOptionsPrefix(ds, &prefix));
  PetscCheck(n1 == n2, comm, PETSC_ERR_ARG_INCOMP, "The %s data samples have shape %s but the Net expects %s: %s", what, a, b, fix);
  PetscCheck(PetNetShapeEqual(&sample, &netin) || sample.ndim == 1 || netin.ndim == 1, comm, PETSC_ERR_ARG_INCOMP,
             "The %s data samples have shape %s but the Net expects %s: as many entries, but another shape (the model would read its %s samples as %s ones); give -%sdataset_sample_shape %s, or %s", what, a, b, a, b, prefix ? prefix : "", b, fix);
  PetscFunctionReturn(0);
}

/*
  The targets of a Dataset against the Net's outputs, for an element-wise loss (mse, l1): one target entry per output. The message says which settings fix which side: the Net's last layer (-net_layers,
  -net_graph) and the Dataset's targets (its file, -<prefix>dataset_hdf5_targets).
*/
PetscErrorCode TrainerCheckTargetSize_Private(Trainer tr, Dataset ds, const char what[])
{
  PetNetShape out;
  PetscInt    nout, tsize;
  PetscBool   elementwise, targets;
  const char *prefix, *file = NULL;
  char        shape[64];

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)tr->loss, &elementwise, LOSSMSE, LOSSL1, ""));
  PetscCall(DatasetHasTargets(ds, &targets));
  if (!elementwise || !targets) PetscFunctionReturn(0); /* cross-entropy takes labels; a kind of the user's, whatever it says */
  PetscCall(NetGetOutputShape(tr->net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(DatasetGetTargetSize(ds, &tsize));
  if (tsize == nout) PetscFunctionReturn(0);
  PetscCall(DatasetGetOptionsPrefix(ds, &prefix));
  PetscCall(PetNetShapeToString(&out, sizeof(shape), shape));
  file = ds->tsource;
  SETERRQ(PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_INCOMP,
          "The %s loss compares each output with a target entry, but the Net has %" PetscInt_FMT " outputs per sample (shape %s, set by its last layer: -net_layers or -net_graph) and the %s targets%s%s have %" PetscInt_FMT
          " entries per sample (set by the data: -%sdataset_hdf5_targets, or the targets of -%sdataset_file): make the last layer dense:%" PetscInt_FMT ", or give targets of %" PetscInt_FMT " entries",
          ((PetscObject)tr->loss)->type_name, nout, shape, what, file ? " in " : "", file ? file : "", tsize, prefix ? prefix : "", prefix ? prefix : "", tsize, nout);
}

/*@
  TrainerPredict - evaluates the Trainer's Net on every sample of a Dataset, in evaluation mode: its outputs (logits)
  in file order and, when the Dataset has class labels, the mean loss and the accuracy

  Collective on tr

  Input Parameters:
+ tr - a Trainer with a Net (e.g. loaded with NetLoad() or -net_load) and a Loss; it needs no training Dataset
- ds - the Dataset, of any kind (set up if needed)

  Output Parameters:
+ Y    - a new Vec [N][nout] of the outputs, block size nout, distributed as the Dataset's samples in file order
         (destroy it with VecDestroy()), or NULL if not wanted
. loss - the mean loss over the samples (may be NULL), or -1 if the Dataset has no targets (DatasetHasTargets())
- acc  - the fraction of samples whose arg-max output is their label, or -1 if the Dataset has no class labels
         (regression targets) (may be NULL)

  Notes:
  A Dataset whose normalisation was not set (DatasetIsNormalizationSet()) takes the one the Net records
  (NetGetInputNormalization(): the training Dataset's, saved in the model file); one set otherwise is kept, with a
  warning. The normalisation used is printed, with where it came from and the range of the data. Data in [0, 1] given
  the scale of bytes (1/255) by a model trained on bytes are refused (the error names -<prefix>dataset_scale): every
  prediction would be the same class. The Net's input shape, if unset, is the Dataset's; else the sample shape must be
  the Net's (or one of them flat with as many entries): 14x56x1 images are not 28x28x1 ones. The numbers equal those of TrainerEvaluate() (the same
  chunks of -trainer_eval_batch_size samples) on any number of ranks.

  Level: beginner

.seealso: `TrainerSavePredictions()`, `TrainerEvaluate()`, `NetLoad()`, `NetSetInputNormalization()`
@*/
PetscErrorCode TrainerPredict(Trainer tr, Dataset ds, Vec *Y, PetscReal *loss, PetscReal *acc)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetNetShape out;
  PetscInt    nout, nlocal, classes, correct = 0, N;
  PetscBool   training, isce, targets;
  PetscReal   f;
  Vec         Yall;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 2);
  PetscCheck(tr->net && tr->loss, comm, PETSC_ERR_ORDER, "Give the Trainer a Net (e.g. loaded with NetLoad()) and a Loss before TrainerPredict()");
  PetscCall(TrainerMatchNormalization_Private(tr, ds));
  PetscCall(DatasetSetUp(ds));
  PetscCall(TrainerCheckNormalization_Private(tr, ds, NULL, "predicted", PETSC_TRUE));
  PetscCall(TrainerCheckSampleShape_Private(tr, ds, "predicted", "give data of the shape the model was trained on"));
  PetscCall(NetSetUp(tr->net));
  PetscCall(LossSetUp(tr->loss));
  PetscCall(TrainerCheckTargetSize_Private(tr, ds, "predicted"));
  PetscCall(NetGetOutputShape(tr->net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  PetscCall(DatasetGetNumClasses(ds, &classes));
  PetscCall(DatasetHasTargets(ds, &targets));
  PetscCall(PetscObjectTypeCompare((PetscObject)tr->loss, LOSSCROSSENTROPY, &isce));
  if (isce && targets) PetscCall(DatasetCheckLabels(ds, nout));
  PetscCall(DatasetGetLocalSize(ds, &nlocal));
  PetscCall(VecCreateMPI(comm, nlocal * nout, PETSC_DETERMINE, &Yall));
  PetscCall(VecSetBlockSize(Yall, nout));
  PetscCall(PetscObjectSetName((PetscObject)Yall, "logits"));
  PetscCall(PetscLogEventBegin(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscCall(NetGetTraining(tr->net, &training));
  PetscCall(NetSetTraining(tr->net, PETSC_FALSE));
  PetscCall(TrainerAccumulate_Private(tr, ds, &f, NULL, classes ? &correct : NULL, Yall));
  PetscCall(NetSetTraining(tr->net, training));
  PetscCall(PetscLogEventEnd(TRAINER_Evaluate, tr, 0, 0, 0));
  PetscCall(DatasetGetSize(ds, &N));
  if (loss) *loss = targets ? f : -1.0;
  if (acc) *acc = classes && N ? (PetscReal)correct / N : -1.0;
  if (Y)
    *Y = Yall;
  else
    PetscCall(VecDestroy(&Yall));
  PetscFunctionReturn(0);
}

/* This rank's predicted labels: the arg-max of each block of nout outputs (the first on ties) */
static PetscErrorCode TrainerPredictLabels_Private(Vec Y, PetscInt *nlocal, PetscInt **labels)
{
  const PetscScalar *y;
  PetscInt           n, nout;

  PetscFunctionBegin;
  PetscCall(VecGetBlockSize(Y, &nout));
  PetscCall(VecGetLocalSize(Y, &n));
  n /= nout;
  PetscCall(PetscMalloc1(n, labels));
  PetscCall(VecGetArrayRead(Y, &y));
  for (PetscInt i = 0; i < n; i++) {
    PetscInt best = 0;

    for (PetscInt k = 1; k < nout; k++)
      if (PetscRealPart(y[i * nout + k]) > PetscRealPart(y[i * nout + best])) best = k;
    (*labels)[i] = best;
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  *nlocal = n;
  PetscFunctionReturn(0);
}

/* Rank 0: the logits (gathered, [N][nout]) and labels ([N]) as an HDF5 file of its own, with HDF5's serial driver;
   returns what failed (NULL: nothing), so that no rank is left in a collective HDF5 call when the disk is full */
static const char *TrainerWritePredictionsHDF5_Private(const char file[], const PetscScalar *y, hsize_t N, hsize_t nout, const int labels[])
{
  hsize_t     dims[2] = {N, nout};
  hid_t       fid, space, dset;
  const char *failed = NULL;

  fid = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (fid < 0) return "H5Fcreate (creating the file)";
  for (int k = 0; k < 2 && !failed; k++) {
    const char *name = k ? "labels" : "logits";

    space = H5Screate_simple(k ? 1 : 2, dims, NULL);
    dset  = space < 0 ? -1 : H5Dcreate2(fid, name, k ? H5T_NATIVE_INT : H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (dset < 0)
      failed = k ? "H5Dcreate2 (creating the dataset \"labels\")" : "H5Dcreate2 (creating the dataset \"logits\")";
    else if (N && H5Dwrite(dset, k ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, k ? (const void *)labels : (const void *)y) < 0)
      failed = k ? "H5Dwrite (the dataset \"labels\")" : "H5Dwrite (the dataset \"logits\")";
    if (dset >= 0 && H5Dclose(dset) < 0 && !failed) failed = "H5Dclose";
    if (space >= 0) H5Sclose(space);
  }
  if (H5Fclose(fid) < 0 && !failed) failed = "H5Fclose (writing the file's metadata)";
  return failed;
}

/* The outputs and labels gathered on rank 0, which writes the file alone; every rank then learns the outcome */
static PetscErrorCode TrainerSavePredictionsHDF5_Private(Vec Y, const PetscInt labels[], PetscInt nlocal, const char file[], const char tmp[])
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)Y);
  PetscMPIInt        rank, size, n = 0, *counts = NULL, *displs = NULL;
  PetscInt           N, nout;
  Vec                Y0;
  VecScatter         sct;
  int               *l32, *all = NULL;
  const PetscScalar *y;
  const char        *failed = NULL;
  char               reason[256];

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(VecGetBlockSize(Y, &nout));
  PetscCall(VecGetSize(Y, &N));
  N /= nout;
  PetscCall(VecScatterCreateToZero(Y, &sct, &Y0));
  PetscCall(VecScatterBegin(sct, Y, Y0, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sct, Y, Y0, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sct));
  PetscCall(PetscMPIIntCast(nlocal, &n));
  PetscCall(PetscMalloc1(nlocal + 1, &l32));
  for (PetscInt i = 0; i < nlocal; i++) l32[i] = (int)labels[i];
  if (rank == 0) PetscCall(PetscMalloc3(size, &counts, size, &displs, N + 1, &all));
  PetscCallMPI(MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
  if (rank == 0)
    for (PetscMPIInt r = 0; r < size; r++) displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
  PetscCallMPI(MPI_Gatherv(l32, n, MPI_INT, all, counts, displs, MPI_INT, 0, comm));
  if (rank == 0) {
    PetscCall(VecGetArrayRead(Y0, &y));
    failed = TrainerWritePredictionsHDF5_Private(tmp, y, (hsize_t)N, (hsize_t)nout, all);
    PetscCall(VecRestoreArrayRead(Y0, &y));
    if (failed) PetscCall(PetscSNPrintf(reason, sizeof(reason), "HDF5 failed in %s", failed));
  }
  PetscCall(PetscFree(l32));
  if (rank == 0) PetscCall(PetscFree3(counts, displs, all));
  PetscCall(VecDestroy(&Y0));
  PetscCall(PetNetWriteAgreeReason(comm, failed ? reason : NULL, file, tmp));
  PetscFunctionReturn(0);
}

/* This rank's lines "index,label,logit,...\n" in one buffer (free with PetscFree()) */
static PetscErrorCode TrainerPredictionsCSVText_Private(Vec Y, const PetscInt labels[], PetscInt nlocal, char **text, size_t *len)
{
  const PetscScalar *y;
  PetscInt           nout, rstart;
  size_t             cap, n = 0;

  PetscFunctionBegin;
  PetscCall(VecGetBlockSize(Y, &nout));
  PetscCall(VecGetOwnershipRange(Y, &rstart, NULL));
  rstart /= nout;
  cap = (size_t)nlocal * (48 + 26 * (size_t)nout) + 1; /* two integers and nout numbers of at most 25 characters each */
  PetscCall(PetscMalloc1(cap, text));
  PetscCall(VecGetArrayRead(Y, &y));
  for (PetscInt i = 0; i < nlocal; i++) {
    n += (size_t)snprintf(*text + n, cap - n, "%" PetscInt_FMT ",%" PetscInt_FMT, rstart + i, labels[i]);
    for (PetscInt k = 0; k < nout; k++) n += (size_t)snprintf(*text + n, cap - n, ",%.17g", (double)PetscRealPart(y[i * nout + k]));
    n += (size_t)snprintf(*text + n, cap - n, "\n");
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  *len = n;
  PetscFunctionReturn(0);
}

/* Rank 0 writes the header, then the lines of every rank in rank order (file order), one rank's block at a time. A
   failed write is recorded, not raised: rank 0 goes on receiving every rank's lines, then every rank learns the
   outcome (PetNetWriteAgree()), so no rank is left waiting in MPI_Send */
static PetscErrorCode TrainerSavePredictionsCSV_Private(Vec Y, const PetscInt labels[], PetscInt nlocal, const char file[], const char tmp[])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)Y);
  PetscMPIInt rank, size;
  PetscInt    nout;
  char       *text;
  size_t      len = 0;
  FILE       *fp  = NULL;
  int         err = 0;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(VecGetBlockSize(Y, &nout));
  PetscCall(TrainerPredictionsCSVText_Private(Y, labels, nlocal, &text, &len));
  if (!rank) {
    errno = 0;
    fp    = fopen(tmp, "w");
    if (!fp) err = errno ? errno : EIO;
    if (!err && fprintf(fp, "index,label") < 0) err = errno ? errno : EIO;
    for (PetscInt k = 0; k < nout && !err; k++)
      if (fprintf(fp, ",logit_%" PetscInt_FMT, k) < 0) err = errno ? errno : EIO;
    if (!err && (fprintf(fp, "\n") < 0 || fwrite(text, 1, len, fp) != len)) err = errno ? errno : EIO;
    for (PetscMPIInt r = 1; r < size; r++) {
      PetscInt64 rlen;
      char      *buf;

      PetscCallMPI(MPI_Recv(&rlen, 1, MPIU_INT64, r, 0, comm, MPI_STATUS_IGNORE));
      PetscCall(PetscMalloc1(rlen + 1, &buf));
      for (PetscInt64 off = 0; off < rlen; off += PETSC_MPI_INT_MAX) PetscCallMPI(MPI_Recv(buf + off, (PetscMPIInt)PetscMin(rlen - off, PETSC_MPI_INT_MAX), MPI_CHAR, r, 1, comm, MPI_STATUS_IGNORE));
      if (!err && fwrite(buf, 1, (size_t)rlen, fp) != (size_t)rlen) err = errno ? errno : EIO;
      PetscCall(PetscFree(buf));
    }
    if (fp && fclose(fp) && !err) err = errno ? errno : EIO;
  } else {
    PetscInt64 slen = (PetscInt64)len;

    PetscCallMPI(MPI_Send(&slen, 1, MPIU_INT64, 0, 0, comm));
    for (PetscInt64 off = 0; off < slen; off += PETSC_MPI_INT_MAX) PetscCallMPI(MPI_Send(text + off, (PetscMPIInt)PetscMin(slen - off, PETSC_MPI_INT_MAX), MPI_CHAR, 0, 1, comm));
  }
  PetscCall(PetscFree(text));
  PetscCall(PetNetWriteAgree(comm, 0, err, file, tmp));
  PetscFunctionReturn(0);
}

/*@C
  TrainerSavePredictions - writes the outputs of TrainerPredict() and the predicted labels (their arg-max) to a file

  Collective on tr

  Input Parameters:
+ tr   - the Trainer
. Y    - the outputs from TrainerPredict(): [N][nout], block size nout, samples in file order
- file - the file: ".h5" or ".hdf5" (any case) HDF5, ".csv" comma-separated text

  Notes:
  HDF5: the datasets "logits" [N][nout] (float64) and "labels" [N] (integers), gathered on rank 0, which writes the
  file alone with HDF5's serial driver. A write that fails (a full disk, quota) is the same error on every rank,
  naming the file and the failing call, and removes the temporary file (PetNetWriteAgree()).
  CSV: a header line "index,label,logit_0,...,logit_<nout-1>", then one line per sample in file order: its index
  (0-based, in the Dataset), its label and its outputs (%.17g: read back exactly). Rank 0 writes the lines of every
  rank in order. Either way the file is written under a temporary name and renamed into place, and its directory is
  checked first (PetNetCheckWritableFile()).

  Level: beginner

.seealso: `TrainerPredict()`
@*/
PetscErrorCode TrainerSavePredictions(Trainer tr, Vec Y, const char file[])
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)tr);
  char           lower[PETSC_MAX_PATH_LEN], tmp[PETSC_MAX_PATH_LEN];
  PetscBool      h5, hdf5, csv;
  PetscInt      *labels, nlocal = 0;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 2);
  PetscValidCharPointer(file, 3);
  PetscCall(PetscStrncpy(lower, file, sizeof(lower)));
  PetscCall(PetscStrtolower(lower));
  PetscCall(PetscStrendswith(lower, ".h5", &h5));
  PetscCall(PetscStrendswith(lower, ".hdf5", &hdf5));
  PetscCall(PetscStrendswith(lower, ".csv", &csv));
  PetscCheck(h5 || hdf5 || csv, comm, PETSC_ERR_ARG_WRONG, "Cannot write predictions to %s: the name must end in .h5 or .hdf5 (HDF5) or .csv (text)", file);
  PetscCall(PetNetCheckWritableFile(comm, file, "TrainerSavePredictions() (-predict_output)"));
  PetscCall(TrainerPredictLabels_Private(Y, &nlocal, &labels));
  PetscCall(PetNetTemporaryFileName(comm, file, sizeof(tmp), tmp));
  if (csv)
    ierr = TrainerSavePredictionsCSV_Private(Y, labels, nlocal, file, tmp);
  else
    ierr = TrainerSavePredictionsHDF5_Private(Y, labels, nlocal, file, tmp);
  PetscCall(PetscFree(labels));
  PetscCall(ierr); /* raised on every rank alike, the temporary file removed (PetNetWriteAgree()) */
  PetscCall(PetNetCommitFile(comm, tmp, file));
  PetscFunctionReturn(0);
}
