/*
  Training checkpoints, PETSc binary (big-endian), written atomically (temporary name, then rename):

    PetscInt header[8] = {TRAINER_CHECKPOINT_ID, version, epoch, optimizer step, number of state Vecs, parameters,
                          epochs without improvement, length of the Net spec}
    PetscInt nhistory            (version 4) the number of epochs of the run's history below (at most the epoch)
    PetscInt nrun[3]             (version 5) the lengths ni, nr, nc of the run section below (integers, reals, characters)
    PetscInt nkfac[3]            (version 6) the length nk of the K-FAC integers below (0: the TAO type is not kfac, no
                                 K-FAC section) and the number of K-FAC factor entries (high, low 32 bits)
    char    spec[len]            the Net's layer list (checked on restart)
    real    best test loss
    real    best training loss   (version 2: the divergence test's reference)
    real    training loss        (version 3) of the last epoch, as TrainerTrain() reported it (the mean over its batches)
    PetscInt run[2]              (version 3) the global batch size and the number of training samples: a restart with
                                 others would not continue this run (another data order, other optimizer steps)
    PetscInt hist[2][nhistory]   (version 4) per epoch so far: epoch, training samples          } what the monitors
    real     histr[7][nhistory]  (version 4) per epoch: train loss, test loss, test accuracy,   } received (TrainerMetrics),
                                 learning rate, epoch time, elapsed time, samples/s             } record-major
    PetscInt runi[ni]            (version 5) what defines the rest of the run, beside the Vecs:
                                   0 the run's -trainer_epochs, 1 mini-batch mode (1) or full batch (0),
                                   2 a PetNet optimizer (1) or another TAO type (0), 3 the schedule (PetNetLRScheduleType),
                                   4 its step size, 5 -tao_lr_cosine_iterations as given (0: the horizon), 6 the warm-up,
                                   7 the horizon as resolved (updates), 8 batches of the next epoch already applied (0:
                                   checkpoints end epochs), 9-10 the training data's seed (high, low 32 bits),
                                   11 nhyper (the optimizer's own settings in runr), 12 nlayers, then per layer of the Net
                                   5 integers: 1 if it draws random masks (dropout, attention) else 0, its seed (high,
                                   low), its pass counter (high, low)
    real     runr[nr]            (version 5) base learning rate, gamma, lr_min, weight decay, the rate of the next update,
                                 then the optimizer's nhyper settings (PetNetTaoGetSettings(): adam's beta1, beta2, eps,
                                 amsgrad; sgd's momentum, dampening, nesterov; rmsprop's alpha, eps, momentum, centered;
                                 kfac's damping, stat_decay, stat_every, inverse_every, momentum, kl_clip,
                                 uncovered_gradient, since 2026-11-30: older kfac files have nhyper 0), then (since
                                 2026-11-30; nr tells whether it is there) the loss's label smoothing (0 without one)
    char     runc[nc]            (version 5) the TAO type
    Vec     parameters           (PetscInt classid, PetscInt size, then the values, as VecView() writes them)
    Vec     optimizer state (moments, ...) one after the other
    PetscInt kfaci[nk]           (version 6, kfac) 0 statistics updates so far, 1 the update of the last inversion (-1:
                                 none), 2 nblocks, then per block (in the Net's node order, a convolution's groups in
                                 order) 4 integers: node, group, na, nout (the orders of A and S)
    Vec     kfac factors         (version 6, kfac) per block A (na x na), S (nout x nout), A^{-1}, S^{-1} (the damped
                                 inverses in use), full column-major: sum of 2 (na^2 + nout^2) entries, as nkfac[1..2]
                                 says; gathered to rank 0 from the ranks that hold them and scattered to those of the
                                 run that reads it, so neither the rank count nor the factors' placement is in the file
                                 (PetNetTaoKFACGetState())
    uint32  crc32 (zlib) of every byte before it, big-endian (version 2)

  Versions 1 (no training-loss reference, no checksum), 2 (no training loss, batch size, sample count), 3 (no history:
  a restart then monitors and plots only the epochs it runs) and 4 (no run section: the schedule's horizon is then the
  restarted run's, the masks' counters start afresh) and 5 (no K-FAC section: a kfac restart rebuilds its factors from
  its first batch, stated in one line) are still read. The run section is sized by nrun[]: a later
  version appends its fields (the population's) at the ends of runi, runr and runc or as a section after it, and reads
  a version-5 file by the lengths it holds. Before anything is read with the viewer, rank 0
  checks the file as bytes: the header's identifier and version, the size the header implies against the real size
  (a truncated file is named as such) and the checksum; a message is broadcast so that every rank fails together.

  The data order of epoch e is drawn from (seed, e), so the epoch number restores the random state of the data.
*/
#include <petnet/private/trainerimpl.h>
#include <petnet/private/datasetimpl.h>
#include <petnetoptim.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#define TRAINER_CHECKPOINT_ID      0x504e4350 /* "PNCP" */
#define TRAINER_CHECKPOINT_VERSION 6
#define TRAINER_CHECKPOINT_SPECMAX 4096
#define TRAINER_CHECKPOINT_NSTATE  64 /* more optimizer state Vecs than any optimizer has: a corrupt header */

#define TRAINER_CHECKPOINT_NHIST_INT  2         /* per history record: epoch, samples */
#define TRAINER_CHECKPOINT_NHIST_REAL 7         /* train loss, test loss, test accuracy, learning rate, epoch time, elapsed, samples/s */
#define TRAINER_CHECKPOINT_NRUN_INT   13        /* runi[] before the per-layer records (version 5) */
#define TRAINER_CHECKPOINT_NLAYER_INT 5         /* per layer: draws masks, seed (2), counter (2) */
#define TRAINER_CHECKPOINT_NRUN_REAL  5         /* runr[] before the optimizer's own settings */
#define TRAINER_CHECKPOINT_NRUNMAX    (1 << 20) /* more run entries than any Net has layers: a corrupt header */
#define TRAINER_CHECKPOINT_NHEAD      15        /* header[8], nhistory, nrun[3], nkfac[3] */
#define TRAINER_CHECKPOINT_NKFAC_INT  3         /* kfaci[] before the per-block records (version 6) */
#define TRAINER_CHECKPOINT_NBLOCK_INT 4         /* per K-FAC block: node, group, na, nout */

/* The integers of the header of a checkpoint of the given version */
static int TrainerCheckpointHeaderLength_Private(PetscInt version)
{
  return version >= 6 ? 15 : version >= 5 ? 12 : version >= 4 ? 9 : 8;
}

/* A 64-bit value as two PetscInt (PetscInt has 32 bits here): high and low halves, the low one as unsigned bits */
static void TrainerSplit64_Private(PetscInt64 v, PetscInt out[2])
{
  out[0] = (PetscInt)(int32_t)(uint32_t)((uint64_t)v >> 32);
  out[1] = (PetscInt)(int32_t)(uint32_t)((uint64_t)v & 0xffffffffu);
}

static PetscInt64 TrainerJoin64_Private(const PetscInt in[2])
{
  return (PetscInt64)(((uint64_t)(uint32_t)in[0] << 32) | (uint64_t)(uint32_t)in[1]);
}

/* The size in bytes of a checkpoint whose header is h[15] (h[8]: the history records, version 4; h[9..11] the run
   section's lengths, version 5; h[12..14] the K-FAC section's, version 6) (-1 when the header is impossible); in 64
   bits, so that no count of the file overflows it */
static long long TrainerCheckpointSize_Private(const PetscInt h[TRAINER_CHECKPOINT_NHEAD])
{
  long long isz = (long long)sizeof(PetscInt), rsz = (long long)sizeof(PetscReal), vec, hist = 0, run = 0, kfac = 0;

  if (h[4] < 0 || h[4] > TRAINER_CHECKPOINT_NSTATE || h[5] < 0 || h[7] < 0 || h[7] >= TRAINER_CHECKPOINT_SPECMAX) return -1;
  if (h[1] >= 4) {
    if (h[8] < 0 || (h[2] >= 0 && h[8] > h[2])) return -1; /* at most one record per epoch run (a negative epoch is refused later, by name) */
    hist = isz + (long long)h[8] * (TRAINER_CHECKPOINT_NHIST_INT * isz + TRAINER_CHECKPOINT_NHIST_REAL * rsz);
  }
  if (h[1] >= 5) {
    if (h[9] < TRAINER_CHECKPOINT_NRUN_INT || h[9] > TRAINER_CHECKPOINT_NRUNMAX || h[10] < TRAINER_CHECKPOINT_NRUN_REAL || h[10] > TRAINER_CHECKPOINT_NRUNMAX || h[11] < 0 || h[11] >= 256) return -1;
    run = 3 * isz + (long long)h[9] * isz + (long long)h[10] * rsz + h[11];
  }
  if (h[1] >= 6) {
    const long long nk = h[12], ns = (long long)TrainerJoin64_Private(&h[13]);

    if (nk == 0 ? ns != 0 : nk < TRAINER_CHECKPOINT_NKFAC_INT || nk > TRAINER_CHECKPOINT_NRUNMAX || ns < 0 || ns > PETSC_MAX_INT) return -1; /* the factors are one Vec of PetscInt size */
    kfac = 3 * isz + (nk ? nk * isz + 2 * isz + ns * (long long)sizeof(PetscScalar) : 0);
  }
  vec = 2 * isz + (long long)h[5] * (long long)sizeof(PetscScalar);
  return 8 * isz + hist + run + kfac + h[7] + (h[1] >= 3 ? 3 : h[1] >= 2 ? 2 : 1) * rsz + (h[1] >= 3 ? 2 * isz : 0) + (1 + h[4]) * vec + (h[1] >= 2 ? 4 : 0);
}

/* crc32 of the first n bytes of f, from its start */
static int TrainerFileCRC_Private(FILE *f, long long n, uLong *crc)
{
  unsigned char buf[65536];

  *crc = crc32(0L, Z_NULL, 0);
  if (fseek(f, 0, SEEK_SET)) return 1;
  while (n > 0) {
    size_t want = n < (long long)sizeof(buf) ? (size_t)n : sizeof(buf), got = fread(buf, 1, want, f);

    if (got != want) return 1;
    *crc = crc32(*crc, buf, (uInt)got);
    n -= (long long)got;
  }
  return 0;
}

/* Rank 0: appends the crc32 of the whole file, big-endian; returns an errno (0: done) */
static int TrainerAppendChecksum_Private(const char tmp[])
{
  FILE         *f = fopen(tmp, "r+b");
  long long     n;
  uLong         crc;
  unsigned char be[4];
  int           err = 0;

  if (!f) return errno;
  if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || TrainerFileCRC_Private(f, n, &crc)) err = errno ? errno : EIO;
  if (!err) {
    for (int i = 0; i < 4; i++) be[i] = (unsigned char)(crc >> (24 - 8 * i));
    if (fseek(f, 0, SEEK_END) || fwrite(be, 1, 4, f) != 4 || fflush(f)) err = errno ? errno : EIO;
  }
  if (fclose(f) && !err) err = errno ? errno : EIO;
  return err;
}

/*
  Rank 0: checks the file as bytes and fills h[] from its header; msg[] receives what is wrong ("" when nothing is).
  Everything the viewer will read afterwards lies inside the file, so a damaged file is refused here with its name.
*/
static void TrainerCheckCheckpointFile_Private(const char file[], PetscInt h[TRAINER_CHECKPOINT_NHEAD], size_t len, char msg[])
{
  FILE         *f = fopen(file, "rb");
  unsigned char raw[TRAINER_CHECKPOINT_NHEAD * sizeof(PetscInt)], be[4];
  long long     size, expect;
  uLong         crc, stored = 0;

  msg[0] = 0;
  if (!f) {
    snprintf(msg, len, "Cannot read the checkpoint %s: %s", file, strerror(errno));
    return;
  }
  if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0) {
    snprintf(msg, len, "Cannot read the checkpoint %s: %s", file, strerror(errno));
    goto done;
  }
  if (size < 8 * (long long)sizeof(PetscInt) || fseek(f, 0, SEEK_SET) || fread(raw, 1, 8 * sizeof(PetscInt), f) != 8 * sizeof(PetscInt)) {
    snprintf(msg, len, "Checkpoint %s is truncated: %lld bytes, fewer than its %d-byte header", file, size, (int)(8 * sizeof(PetscInt)));
    goto done;
  }
  for (int i = 8; i < TRAINER_CHECKPOINT_NHEAD; i++) h[i] = 0;
  for (int i = 0; i < 8; i++) {
    unsigned long long v = 0;

    for (size_t b = 0; b < sizeof(PetscInt); b++) v = (v << 8) | raw[i * sizeof(PetscInt) + b];
    h[i] = sizeof(PetscInt) == 4 ? (PetscInt)(int32_t)(uint32_t)v : (PetscInt)(int64_t)v;
  }
  if (h[0] != TRAINER_CHECKPOINT_ID) {
    snprintf(msg, len, "%s is not a PetNet training checkpoint (wrong identifier)", file);
    goto done;
  }
  if (h[1] < 1 || h[1] > TRAINER_CHECKPOINT_VERSION) {
    snprintf(msg, len, "Checkpoint %s has format version %lld; this PetNet reads versions 1 to %d", file, (long long)h[1], TRAINER_CHECKPOINT_VERSION);
    goto done;
  }
  if (h[1] >= 4) { /* the count of history records follows the header, then (version 5) the run section's lengths,
                      (version 6) the K-FAC section's */
    const int nhead = TrainerCheckpointHeaderLength_Private(h[1]), nextra = nhead - 8;

    if (size < nhead * (long long)sizeof(PetscInt) || fread(raw + 8 * sizeof(PetscInt), 1, nextra * sizeof(PetscInt), f) != nextra * sizeof(PetscInt)) {
      snprintf(msg, len, "Checkpoint %s is truncated: %lld bytes, fewer than its %d-byte header", file, size, nhead * (int)sizeof(PetscInt));
      goto done;
    }
    for (int i = 8; i < nhead; i++) {
      unsigned long long v = 0;

      for (size_t b = 0; b < sizeof(PetscInt); b++) v = (v << 8) | raw[i * sizeof(PetscInt) + b];
      h[i] = sizeof(PetscInt) == 4 ? (PetscInt)(int32_t)(uint32_t)v : (PetscInt)(int64_t)v;
    }
  }
  expect = TrainerCheckpointSize_Private(h);
  if (expect < 0) {
    snprintf(msg, len,
             "Checkpoint %s is corrupt: its header is impossible (%lld optimizer state vectors, %lld parameters, a network description of %lld characters, %lld epochs of history after %lld epochs, a run section of %lld, %lld, %lld entries, a K-FAC "
             "section of %lld integers and %lld factor entries)",
             file, (long long)h[4], (long long)h[5], (long long)h[7], (long long)h[8], (long long)h[2], (long long)h[9], (long long)h[10], (long long)h[11], (long long)h[12], (long long)TrainerJoin64_Private(&h[13]));
    goto done;
  }
  if (size != expect) {
    snprintf(msg, len, "Checkpoint %s is %s: %lld bytes where its header implies %lld. Restart from another checkpoint or from scratch", file, size < expect ? "truncated" : "corrupt (wrong size)", size, expect);
    goto done;
  }
  if (h[1] >= 2) {
    if (TrainerFileCRC_Private(f, size - 4, &crc) || fread(be, 1, 4, f) != 4) {
      snprintf(msg, len, "Cannot read the checkpoint %s: %s", file, strerror(errno));
      goto done;
    }
    for (int i = 0; i < 4; i++) stored = (stored << 8) | be[i];
    if (stored != crc) snprintf(msg, len, "Checkpoint %s is corrupt: its checksum (crc32 %08lx) does not match its contents (%08lx); the file was damaged after it was written. Restart from another checkpoint or from scratch", file, stored, crc);
  }
done:
  fclose(f);
}

/* The run a checkpoint continues (version 3): the global batch size and the training samples */
static PetscErrorCode TrainerCheckpointRun_Private(Trainer tr, PetscInt run[2])
{
  PetscFunctionBegin;
  PetscCall(DatasetGetBatchSize(tr->train, &run[0]));
  PetscCall(DatasetGetSize(tr->train, &run[1]));
  PetscFunctionReturn(0);
}

/* Version 3: the last epoch's training loss, then the run */
static PetscErrorCode TrainerWriteCheckpointRun_Private(Trainer tr, PetscViewer viewer)
{
  PetscInt run[2];

  PetscFunctionBegin;
  PetscCall(TrainerCheckpointRun_Private(tr, run));
  PetscCall(PetscViewerBinaryWrite(viewer, &tr->trainloss, 1, PETSC_REAL));
  PetscCall(PetscViewerBinaryWrite(viewer, run, 2, PETSC_INT));
  PetscFunctionReturn(0);
}

/* The history records a checkpoint keeps (version 4): the epochs 1..tr->epoch the monitors saw, in increasing order
   (an evaluation-only record, epoch 0, and anything out of order are left out); with first[] = NULL only counted */
static PetscInt TrainerCheckpointHistory_Private(Trainer tr, PetscInt first[])
{
  PetscInt n = 0, last = 0;

  for (PetscInt i = 0; i < tr->nhistory; i++) {
    if (tr->history[i].epoch <= last || tr->history[i].epoch > tr->epoch) continue;
    last = tr->history[i].epoch;
    if (first) first[n] = i;
    n++;
  }
  return n;
}

/* Version 4: the history, hist[2][n] then histr[7][n] (record-major) */
static PetscErrorCode TrainerWriteCheckpointHistory_Private(Trainer tr, PetscViewer viewer)
{
  PetscInt   n = TrainerCheckpointHistory_Private(tr, NULL), *which, *hi;
  PetscReal *hr;

  PetscFunctionBegin;
  PetscCall(PetscMalloc3(n, &which, TRAINER_CHECKPOINT_NHIST_INT * n, &hi, TRAINER_CHECKPOINT_NHIST_REAL * n, &hr));
  (void)TrainerCheckpointHistory_Private(tr, which);
  for (PetscInt k = 0; k < n; k++) {
    const TrainerMetrics *m  = &tr->history[which[k]];
    PetscInt             *ik = hi + TRAINER_CHECKPOINT_NHIST_INT * k;
    PetscReal            *rk = hr + TRAINER_CHECKPOINT_NHIST_REAL * k;

    ik[0] = m->epoch;
    ik[1] = m->samples;
    rk[0] = m->train_loss;
    rk[1] = m->test_loss;
    rk[2] = m->test_accuracy;
    rk[3] = m->learning_rate;
    rk[4] = m->epoch_time;
    rk[5] = m->elapsed;
    rk[6] = m->samples_per_s;
  }
  PetscCall(PetscViewerBinaryWrite(viewer, hi, TRAINER_CHECKPOINT_NHIST_INT * n, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, hr, TRAINER_CHECKPOINT_NHIST_REAL * n, PETSC_REAL));
  PetscCall(PetscFree3(which, hi, hr));
  PetscFunctionReturn(0);
}

/* Version 4: reads n history records into tr->history (replacing it) and marks them for TrainerTrain() to replay to
   the monitors; a record out of order or out of range is a corrupt file */
static PetscErrorCode TrainerReadCheckpointHistory_Private(Trainer tr, PetscViewer viewer, const char file[], PetscInt n, PetscInt epoch)
{
  PetscInt  *hi, last = 0;
  PetscReal *hr;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(TRAINER_CHECKPOINT_NHIST_INT * n, &hi, TRAINER_CHECKPOINT_NHIST_REAL * n, &hr));
  PetscCall(PetscViewerBinaryRead(viewer, hi, TRAINER_CHECKPOINT_NHIST_INT * n, NULL, PETSC_INT));
  PetscCall(PetscViewerBinaryRead(viewer, hr, TRAINER_CHECKPOINT_NHIST_REAL * n, NULL, PETSC_REAL));
  for (PetscInt k = 0; k < n; k++) { /* epochs increasing, within the checkpoint's, checked before anything changes */
    const PetscInt e = hi[TRAINER_CHECKPOINT_NHIST_INT * k], samples = hi[TRAINER_CHECKPOINT_NHIST_INT * k + 1];

    if (e <= last || e > epoch || samples < 0) {
      PetscCall(PetscFree2(hi, hr)); /* the message reads only the copies e, last */
      SETERRQ(PetscObjectComm((PetscObject)tr), PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: its history record %" PetscInt_FMT " is of epoch %" PetscInt_FMT " (after epoch %" PetscInt_FMT "; the checkpoint is of epoch %" PetscInt_FMT ")",
              file, k, e, last, epoch);
    }
    last = e;
  }
  PetscCall(PetscFree(tr->history));
  tr->maxhistory = PetscMax(16, n);
  PetscCall(PetscCalloc1(tr->maxhistory, &tr->history));
  for (PetscInt k = 0; k < n; k++) {
    TrainerMetrics  *m  = &tr->history[k];
    const PetscInt  *ik = hi + TRAINER_CHECKPOINT_NHIST_INT * k;
    const PetscReal *rk = hr + TRAINER_CHECKPOINT_NHIST_REAL * k;

    m->epoch         = ik[0];
    m->epochs        = tr->epochs;
    m->samples       = ik[1];
    m->train_loss    = rk[0];
    m->test_loss     = rk[1];
    m->test_accuracy = rk[2];
    m->learning_rate = rk[3];
    m->epoch_time    = rk[4];
    m->elapsed       = rk[5];
    m->samples_per_s = rk[6];
    m->restored      = PETSC_TRUE;
  }
  tr->nhistory  = n;
  tr->nrestored = n;
  PetscCall(PetscFree2(hi, hr));
  PetscFunctionReturn(0);
}

/* Version 3: a checkpoint continues the run it came from only with its batch size and training samples */
static PetscErrorCode TrainerCheckCheckpointRun_Private(Trainer tr, const char file[], const PetscInt saved[2])
{
  PetscInt    run[2];
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(TrainerCheckpointRun_Private(tr, run));
  if (run[0] == saved[0] && run[1] == saved[1]) PetscFunctionReturn(0);
  PetscCall(DatasetGetOptionsPrefix(tr->train, &prefix));
  SETERRQ(PetscObjectComm((PetscObject)tr), PETSC_ERR_ARG_INCOMP,
          "Checkpoint %s was written by a run with batches of %" PetscInt_FMT " of %" PetscInt_FMT " training samples, but this run has batches of %" PetscInt_FMT " of %" PetscInt_FMT
          ": it would not continue that run (another data order, another count of optimizer steps per epoch). Restart with -trainer_batch_size %" PetscInt_FMT " and -%sdataset_limit %" PetscInt_FMT
          " (the same data), or start afresh without -trainer_restart",
          file, saved[0], saved[1], run[0], run[1], saved[0], prefix ? prefix : "", saved[1]);
}

/* The run section (version 5), filled by TrainerCheckpointRunSection_Private(); freed with PetscFree3(runi, runr, runc) */
typedef struct {
  PetscInt   ni, nr, nc;
  PetscInt  *runi;
  PetscReal *runr;
  char      *runc;
} TrainerRunSection;

/* What defines the rest of this run (the layout at the top of the file), the same on every rank */
static PetscErrorCode TrainerCheckpointRunSection_Private(Trainer tr, TrainerRunSection *rs)
{
  PetNetTaoSettings set;
  PetscBool         isoptim;
  PetscInt          nlayers, step;
  PetscReal         next = 0;
  const char       *type;
  size_t            len;

  PetscFunctionBegin;
  PetscCall(PetNetTaoGetSettings(tr->tao, &isoptim, &set));
  PetscCall(NetGetNumLayers(tr->net, &nlayers));
  PetscCall(TaoGetType(tr->tao, &type));
  PetscCall(PetscStrlen(type, &len));
  rs->ni = TRAINER_CHECKPOINT_NRUN_INT + TRAINER_CHECKPOINT_NLAYER_INT * nlayers;
  rs->nr = TRAINER_CHECKPOINT_NRUN_REAL + set.nhyper + 1;
  rs->nc = (PetscInt)len;
  PetscCall(PetscCalloc3(rs->ni, &rs->runi, rs->nr, &rs->runr, rs->nc + 1, &rs->runc));
  rs->runi[0] = tr->epochs;
  rs->runi[1] = tr->minibatch ? 1 : 0;
  rs->runi[2] = isoptim ? 1 : 0;
  rs->runi[3] = (PetscInt)set.schedule;
  rs->runi[4] = set.stepsize;
  rs->runi[5] = set.cosineits;
  rs->runi[6] = set.warmup;
  rs->runi[7] = set.horizon;
  rs->runi[8] = 0; /* checkpoints are written at the end of an epoch */
  TrainerSplit64_Private((PetscInt64)tr->train->seed, &rs->runi[9]);
  rs->runi[11] = set.nhyper;
  rs->runi[12] = nlayers;
  for (PetscInt l = 0; l < nlayers; l++) {
    PetscInt *li = rs->runi + TRAINER_CHECKPOINT_NRUN_INT + TRAINER_CHECKPOINT_NLAYER_INT * l;
    PetscErrorCode (*get)(Layer, PetscInt64 *, PetscInt64 *);
    Layer      layer;
    PetscInt64 seed = 0, counter = 0;

    PetscCall(NetGetLayer(tr->net, l, &layer));
    PetscCall(PetscObjectQueryFunction((PetscObject)layer, "LayerGetPassCounter_C", &get));
    if (get) PetscCall((*get)(layer, &seed, &counter));
    li[0] = get ? 1 : 0;
    TrainerSplit64_Private(seed, &li[1]);
    TrainerSplit64_Private(counter, &li[3]);
  }
  if (isoptim) {
    PetscCall(PetNetTaoGetState(tr->tao, NULL, NULL, &step));
    PetscCall(PetNetTaoComputeLearningRate(tr->tao, step, &next));
  }
  rs->runr[0] = set.lr;
  rs->runr[1] = set.gamma;
  rs->runr[2] = set.lrmin;
  rs->runr[3] = set.weightdecay;
  rs->runr[4] = next;
  for (PetscInt k = 0; k < set.nhyper; k++) rs->runr[TRAINER_CHECKPOINT_NRUN_REAL + k] = set.hyper[k];
  PetscCall(LossCrossEntropyGetLabelSmoothing(tr->loss, NULL, &rs->runr[TRAINER_CHECKPOINT_NRUN_REAL + set.nhyper]));
  PetscCall(PetscMemcpy(rs->runc, type, len));
  PetscFunctionReturn(0);
}

/* Version 5: the run section */
static PetscErrorCode TrainerWriteCheckpointRunSection_Private(Trainer tr, PetscViewer viewer, const TrainerRunSection *rs)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerBinaryWrite(viewer, rs->runi, rs->ni, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, rs->runr, rs->nr, PETSC_REAL));
  PetscCall(PetscViewerBinaryWrite(viewer, rs->runc, rs->nc, PETSC_CHAR));
  PetscFunctionReturn(0);
}

/* Version 5: reads the run section of lengths h[9..11]; what this version does not know (a later one's appended fields)
   is read and left alone */
static PetscErrorCode TrainerReadCheckpointRunSection_Private(PetscViewer viewer, const PetscInt h[TRAINER_CHECKPOINT_NHEAD], TrainerRunSection *rs)
{
  PetscFunctionBegin;
  rs->ni = h[9];
  rs->nr = h[10];
  rs->nc = h[11];
  PetscCall(PetscCalloc3(rs->ni, &rs->runi, rs->nr, &rs->runr, rs->nc + 1, &rs->runc));
  PetscCall(PetscViewerBinaryRead(viewer, rs->runi, rs->ni, NULL, PETSC_INT));
  PetscCall(PetscViewerBinaryRead(viewer, rs->runr, rs->nr, NULL, PETSC_REAL));
  PetscCall(PetscViewerBinaryRead(viewer, rs->runc, rs->nc, NULL, PETSC_CHAR));
  PetscFunctionReturn(0);
}

/*
  Version 5: the restarted run against the run that wrote the checkpoint. What the checkpoint defines and the command
  line cannot ask for otherwise (the optimizer, its rates and hyperparameters, the schedule, the data's seed, the masks'
  seeds, the mode) must agree: an error names the option and both values. Deliberate changes are stated in one line:
  another -trainer_epochs (the schedule keeps the checkpoint's horizon unless -tao_lr_cosine_iterations is given), a
  full-batch TAO type that is not PetNet's (its memory starts afresh). Then the horizon and the masks' counters are
  restored (the optimizer's step and state Vecs by the caller).
*/
static PetscErrorCode TrainerApplyCheckpointRunSection_Private(Trainer tr, const char file[], const TrainerRunSection *saved)
{
  MPI_Comm          comm = PetscObjectComm((PetscObject)tr);
  TrainerRunSection now;
  PetNetTaoSettings set;
  PetscBool         isoptim, same;
  const char       *prefix, *tprefix;
  char              opt[64];
  PetscInt          nlayers;

  PetscFunctionBegin;
  PetscCall(TrainerCheckpointRunSection_Private(tr, &now));
  PetscCall(PetNetTaoGetSettings(tr->tao, &isoptim, &set));
  PetscCall(TaoGetOptionsPrefix(tr->tao, &tprefix));
  if (!tprefix) tprefix = "";
  PetscCheck(saved->ni >= TRAINER_CHECKPOINT_NRUN_INT && saved->nr >= TRAINER_CHECKPOINT_NRUN_REAL && saved->runi[11] >= 0 && saved->runi[11] <= PETNET_TAO_MAX_HYPER && saved->runi[12] >= 0 &&
                 saved->ni >= TRAINER_CHECKPOINT_NRUN_INT + TRAINER_CHECKPOINT_NLAYER_INT * saved->runi[12] && saved->nr >= TRAINER_CHECKPOINT_NRUN_REAL + saved->runi[11] && saved->runi[0] >= 0,
             comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: its run section (%" PetscInt_FMT " integers, %" PetscInt_FMT " reals) does not hold what it announces", file, saved->ni, saved->nr);
  PetscCall(PetscStrcmp(saved->runc, now.runc, &same));
  PetscCheck(same, comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with -%stao_type %s, but this run has -%stao_type %s: restart with -%stao_type %s, or start afresh without -trainer_restart", file, tprefix, saved->runc, tprefix,
             now.runc, tprefix, saved->runc);
  PetscCheck(saved->runi[1] == now.runi[1], comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written in %s mode, but this run trains in %s mode: restart with -trainer_mode %s", file, saved->runi[1] ? "minibatch" : "fullbatch",
             now.runi[1] ? "minibatch" : "fullbatch", saved->runi[1] ? "minibatch" : "fullbatch");
  if (TrainerJoin64_Private(&saved->runi[9]) != TrainerJoin64_Private(&now.runi[9])) {
    PetscCall(DatasetGetOptionsPrefix(tr->train, &prefix));
    SETERRQ(comm, PETSC_ERR_ARG_INCOMP,
            "Checkpoint %s was written by a run whose training data was shuffled with seed %" PetscInt64_FMT ", but this run has %" PetscInt64_FMT ": the remaining epochs would see another data order. Restart with -%sdataset_seed %" PetscInt64_FMT,
            file, TrainerJoin64_Private(&saved->runi[9]), TrainerJoin64_Private(&now.runi[9]), prefix ? prefix : "", TrainerJoin64_Private(&saved->runi[9]));
  }
  if (saved->runi[2] && isoptim) {
    const char *type = saved->runc;
    PetscBool   gammataken, lrmintaken;
    struct {
      const char *suffix;
      PetscReal   was, is;
    } real[] = {{"lr", saved->runr[0], now.runr[0]}, {"weight_decay", saved->runr[3], now.runr[3]}};

    /* in a population, the hyperparameters it carries are the checkpoint's (TrainerPopulationRestoreHyper_Private()) */
    for (size_t k = 0; k < sizeof(real) / sizeof(real[0]); k++) {
      PetscBool taken;

      PetscCall(TrainerPopulationRestoreHyper_Private(tr, k ? "wd" : "lr", real[k].was, &taken));
      if (taken) continue;
      PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%stao_%s_%s", tprefix, type, real[k].suffix));
      PetscCheck(real[k].was == real[k].is, comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with %s %g, but this run gives %g: restart with %s %g (the run the checkpoint continues), or start afresh without -trainer_restart", file,
                 opt, (double)real[k].was, (double)real[k].is, opt, (double)real[k].was);
    }
    if (saved->runi[11] == 0 && set.nhyper > 0) /* a kfac checkpoint of before 2026-11-30 holds no settings */
      PetscCall(PetscInfo(tr, "Checkpoint %s holds none of the %s optimizer's settings: they are not compared\n", file, type));
    else {
      PetscCheck(saved->runi[11] == set.nhyper, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: %" PetscInt_FMT " settings of the %s optimizer, which has %" PetscInt_FMT, file, saved->runi[11], type, set.nhyper);
      for (PetscInt k = 0; k < set.nhyper; k++) {
        const PetscReal was = saved->runr[TRAINER_CHECKPOINT_NRUN_REAL + k], is = set.hyper[k];
        PetscBool       taken;

        PetscCall(TrainerPopulationRestoreHyper_Private(tr, set.hypername[k], was, &taken));
        if (taken) continue;
        PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%stao_%s_%s", tprefix, type, set.hypername[k]));
        PetscCheck(was == is, comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with %s %g, but this run gives %g: restart with %s %g (the run the checkpoint continues), or start afresh without -trainer_restart", file, opt, (double)was,
                   (double)is, opt, (double)was);
      }
    }
    PetscCall(TrainerPopulationRestoreHyper_Private(tr, "gamma", saved->runr[1], &gammataken)); /* a population's own (else compared below) */
    PetscCall(TrainerPopulationRestoreHyper_Private(tr, "lr_min", saved->runr[2], &lrmintaken));
    PetscCheck(saved->runi[3] == now.runi[3] && saved->runi[3] >= 0 && saved->runi[3] <= PETNET_LR_COSINE, comm, PETSC_ERR_ARG_INCOMP,
               "Checkpoint %s was written by a run with -%stao_lr_schedule %s, but this run has %s: restart with -%stao_lr_schedule %s", file, tprefix,
               saved->runi[3] >= 0 && saved->runi[3] <= PETNET_LR_COSINE ? PetNetLRScheduleTypes[saved->runi[3]] : "(corrupt)", PetNetLRScheduleTypes[now.runi[3]], tprefix,
               saved->runi[3] >= 0 && saved->runi[3] <= PETNET_LR_COSINE ? PetNetLRScheduleTypes[saved->runi[3]] : "(corrupt)");
    PetscCheck(saved->runi[6] == now.runi[6], comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with -%stao_lr_warmup %" PetscInt_FMT ", but this run has %" PetscInt_FMT ": restart with -%stao_lr_warmup %" PetscInt_FMT, file, tprefix,
               saved->runi[6], now.runi[6], tprefix, saved->runi[6]);
    if (now.runi[3] == PETNET_LR_STEP) {
      PetscCheck(saved->runi[4] == now.runi[4], comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with -%stao_lr_step_size %" PetscInt_FMT ", but this run has %" PetscInt_FMT ": restart with -%stao_lr_step_size %" PetscInt_FMT, file,
                 tprefix, saved->runi[4], now.runi[4], tprefix, saved->runi[4]);
      PetscCheck(gammataken || saved->runr[1] == now.runr[1], comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with -%stao_lr_gamma %g, but this run has %g: restart with -%stao_lr_gamma %g", file, tprefix, (double)saved->runr[1],
                 (double)now.runr[1], tprefix, (double)saved->runr[1]);
    }
    if (now.runi[3] == PETNET_LR_COSINE) {
      PetscCheck(lrmintaken || saved->runr[2] == now.runr[2], comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s was written by a run with -%stao_lr_min %g, but this run has %g: restart with -%stao_lr_min %g", file, tprefix, (double)saved->runr[2],
                 (double)now.runr[2], tprefix, (double)saved->runr[2]);
      if (now.runi[5] > 0 && now.runi[5] != (saved->runi[5] > 0 ? saved->runi[5] : saved->runi[7]))
        PetscCall(PetscPrintf(comm, "restart from %s: the cosine schedule now ends at update %" PetscInt_FMT " (-%stao_lr_cosine_iterations), not at update %" PetscInt_FMT " as in the run that wrote it\n", file, now.runi[5], tprefix,
                              saved->runi[5] > 0 ? saved->runi[5] : saved->runi[7]));
    }
    /* the horizon as the writing run resolved it: a restart with another -trainer_epochs keeps the schedule's shape */
    if (saved->runi[7] > 0) PetscCall(PetNetTaoSetLRHorizon(tr->tao, saved->runi[7]));
  }
  if (saved->nr > TRAINER_CHECKPOINT_NRUN_REAL + saved->runi[11]) { /* the label smoothing (files since 2026-11-30) */
    const PetscReal was = saved->runr[TRAINER_CHECKPOINT_NRUN_REAL + saved->runi[11]];
    PetscReal       is  = 0;
    PetscBool       taken;

    PetscCall(LossCrossEntropyGetLabelSmoothing(tr->loss, NULL, &is));
    PetscCall(TrainerPopulationRestoreHyper_Private(tr, "smoothing", was, &taken));
    if (!taken) {
      PetscCall(LossGetOptionsPrefix(tr->loss, &prefix));
      PetscCheck(was == is, comm, PETSC_ERR_ARG_INCOMP,
                 "Checkpoint %s was written by a run with -%sloss_label_smoothing %g, but this run gives %g: restart with -%sloss_label_smoothing %g (the run the checkpoint continues), or start afresh without -trainer_restart", file,
                 prefix ? prefix : "", (double)was, (double)is, prefix ? prefix : "", (double)was);
    }
  }
  if (saved->runi[0] != tr->epochs)
    PetscCall(PetscPrintf(comm, "restart from %s: this run trains to epoch %" PetscInt_FMT ", the run that wrote it to epoch %" PetscInt_FMT "; %s\n", file, tr->epochs, saved->runi[0],
                          saved->runi[2] && now.runi[3] == PETNET_LR_COSINE && now.runi[5] == 0 ? "the cosine schedule keeps that run's length (give -tao_lr_cosine_iterations to change it)" : "the schedule is unchanged"));
  if (!saved->runi[2] && !tr->minibatch)
    PetscCall(PetscPrintf(comm, "restart from %s: TAO type %s starts afresh (its memory, e.g. a quasi-Newton history, is not in checkpoints): the run continues from the checkpoint's parameters, not as the uninterrupted run\n", file, saved->runc));
  /* the masks' streams: the same seeds, counters restored */
  PetscCall(NetGetNumLayers(tr->net, &nlayers));
  PetscCheck(saved->runi[12] == nlayers, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: %" PetscInt_FMT " layers in its run section, %" PetscInt_FMT " in its network", file, saved->runi[12], nlayers);
  for (PetscInt l = 0; l < nlayers; l++) {
    const PetscInt *was = saved->runi + TRAINER_CHECKPOINT_NRUN_INT + TRAINER_CHECKPOINT_NLAYER_INT * l, *is = now.runi + TRAINER_CHECKPOINT_NRUN_INT + TRAINER_CHECKPOINT_NLAYER_INT * l;
    PetscErrorCode (*set)(Layer, PetscInt64);
    Layer layer;

    if (!is[0]) continue;
    PetscCheck(was[0], comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: layer %" PetscInt_FMT " draws random masks but its record says not", file, l);
    PetscCheck(TrainerJoin64_Private(&was[1]) == TrainerJoin64_Private(&is[1]), comm, PETSC_ERR_ARG_INCOMP,
               "Checkpoint %s was written by a run whose layer %" PetscInt_FMT " drew its masks with seed %" PetscInt64_FMT ", but this run's has seed %" PetscInt64_FMT ": restart with that -dropout_seed", file, l, TrainerJoin64_Private(&was[1]),
               TrainerJoin64_Private(&is[1]));
    PetscCheck(TrainerJoin64_Private(&was[3]) >= 0, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: layer %" PetscInt_FMT " has a negative pass counter", file, l);
    PetscCall(NetGetLayer(tr->net, l, &layer));
    PetscCall(PetscObjectQueryFunction((PetscObject)layer, "LayerSetPassCounter_C", &set));
    if (set) PetscCall((*set)(layer, TrainerJoin64_Private(&was[3])));
  }
  PetscCall(PetscFree3(now.runi, now.runr, now.runc));
  PetscFunctionReturn(0);
}

/* The K-FAC section (version 6): kfaci[nk] and the factors, a Vec whose ns entries are all on rank 0 (nk = 0: none) */
typedef struct {
  PetscInt   nk;
  PetscInt  *kfaci;
  PetscInt64 ns;
  Vec        factors;
} TrainerKFACSection;

/* The K-FAC section of this run (collective): nothing unless the TAO type is kfac */
static PetscErrorCode TrainerCheckpointKFAC_Private(Trainer tr, TrainerKFACSection *ks)
{
  PetscBool iskfac;
  PetscInt  counters[2], nblocks, *blocks, n;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(ks, sizeof(*ks)));
  PetscCall(PetscObjectTypeCompare((PetscObject)tr->tao, TAOKFAC, &iskfac));
  if (!iskfac) PetscFunctionReturn(0);
  PetscCall(PetNetTaoKFACGetState(tr->tao, counters, &nblocks, &blocks, &ks->factors));
  ks->nk = TRAINER_CHECKPOINT_NKFAC_INT + TRAINER_CHECKPOINT_NBLOCK_INT * nblocks;
  PetscCall(PetscMalloc1(ks->nk, &ks->kfaci));
  ks->kfaci[0] = counters[0];
  ks->kfaci[1] = counters[1];
  ks->kfaci[2] = nblocks;
  PetscCall(PetscArraycpy(ks->kfaci + TRAINER_CHECKPOINT_NKFAC_INT, blocks, TRAINER_CHECKPOINT_NBLOCK_INT * nblocks));
  PetscCall(PetscFree(blocks));
  PetscCall(VecGetSize(ks->factors, &n));
  ks->ns = n;
  PetscFunctionReturn(0);
}

static PetscErrorCode TrainerCheckpointKFACDestroy_Private(TrainerKFACSection *ks)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(ks->kfaci));
  PetscCall(VecDestroy(&ks->factors));
  PetscFunctionReturn(0);
}

/* Version 6, rank 0: the K-FAC section, its factors as VecView() writes a Vec (classid, size, values) */
static PetscErrorCode TrainerWriteCheckpointKFAC_Private(PetscViewer viewer, const TrainerKFACSection *ks)
{
  const PetscScalar *f;
  PetscInt           head[2] = {VEC_FILE_CLASSID, (PetscInt)ks->ns};

  PetscFunctionBegin;
  if (!ks->nk) PetscFunctionReturn(0);
  PetscCall(PetscViewerBinaryWrite(viewer, ks->kfaci, ks->nk, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, head, 2, PETSC_INT));
  PetscCall(VecGetArrayRead(ks->factors, &f)); /* all ns entries are rank 0's */
  PetscCall(PetscViewerBinaryWrite(viewer, f, (PetscInt)ks->ns, PETSC_SCALAR));
  PetscCall(VecRestoreArrayRead(ks->factors, &f));
  PetscFunctionReturn(0);
}

/*
  Version 6: reads the K-FAC section the header h[] announces and restores it. Its integers are compared with the
  blocks this run's K-FAC has (the Net's, checked before) and the factors' size computed from them in 64 bits with
  the header's, before the factors are allocated; then the factors go to the ranks that hold them in this run.
*/
static PetscErrorCode TrainerReadCheckpointKFAC_Private(Trainer tr, PetscViewer viewer, const char file[], const PetscInt h[TRAINER_CHECKPOINT_NHEAD])
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)tr);
  PetscBool   iskfac;
  PetscInt   *kfaci, counters[2], nblocks, *blocks;
  PetscInt64  ns       = 0;
  char        msg[512] = "";
  PetscMPIInt rank;
  Vec         factors;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)tr->tao, TAOKFAC, &iskfac));
  PetscCheck(iskfac, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: it holds a K-FAC section, but its optimizer is not kfac", file);
  PetscCall(PetscMalloc1(h[12], &kfaci));
  PetscCall(PetscViewerBinaryRead(viewer, kfaci, h[12], NULL, PETSC_INT));
  PetscCall(PetNetTaoKFACGetState(tr->tao, counters, &nblocks, &blocks, NULL));
  if (h[12] != TRAINER_CHECKPOINT_NKFAC_INT + TRAINER_CHECKPOINT_NBLOCK_INT * (PetscInt64)nblocks || kfaci[2] != nblocks)
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "Checkpoint %s is corrupt: its K-FAC section has %" PetscInt_FMT " integers for %" PetscInt_FMT " blocks, where this network has %" PetscInt_FMT " K-FAC blocks (%" PetscInt_FMT " integers)", file, h[12],
                            kfaci[2], nblocks, TRAINER_CHECKPOINT_NKFAC_INT + TRAINER_CHECKPOINT_NBLOCK_INT * nblocks));
  for (PetscInt i = 0; i < nblocks && !msg[0]; i++) {
    const PetscInt *was = kfaci + TRAINER_CHECKPOINT_NKFAC_INT + TRAINER_CHECKPOINT_NBLOCK_INT * i, *is = blocks + TRAINER_CHECKPOINT_NBLOCK_INT * i;

    if (was[0] != is[0] || was[1] != is[1] || was[2] != is[2] || was[3] != is[3])
      PetscCall(PetscSNPrintf(msg, sizeof(msg),
                              "Checkpoint %s is corrupt: its K-FAC block %" PetscInt_FMT " is of node %" PetscInt_FMT ", group %" PetscInt_FMT ", with factors of orders %" PetscInt_FMT " and %" PetscInt_FMT
                              ", where this network's is of node %" PetscInt_FMT ", group %" PetscInt_FMT ", orders %" PetscInt_FMT " and %" PetscInt_FMT,
                              file, i, was[0], was[1], was[2], was[3], is[0], is[1], is[2], is[3]));
    ns += 2 * ((PetscInt64)was[2] * was[2] + (PetscInt64)was[3] * was[3]);
  }
  if (!msg[0] && ns != TrainerJoin64_Private(&h[13]))
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "Checkpoint %s is corrupt: its header announces %" PetscInt64_FMT " K-FAC factor entries, its blocks have %" PetscInt64_FMT, file, TrainerJoin64_Private(&h[13]), ns));
  if (!msg[0] && !(kfaci[0] >= 0 && kfaci[1] >= -1 && kfaci[1] <= kfaci[0]))
    PetscCall(PetscSNPrintf(msg, sizeof(msg), "Checkpoint %s is corrupt: its K-FAC state counts %" PetscInt_FMT " statistics updates and inverses of update %" PetscInt_FMT, file, kfaci[0], kfaci[1]));
  counters[0] = kfaci[0];
  counters[1] = kfaci[1];
  PetscCall(PetscFree(kfaci));
  PetscCall(PetscFree(blocks));
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecCreateMPI(comm, rank ? 0 : (PetscInt)ns, (PetscInt)ns, &factors)); /* ns <= PETSC_MAX_INT: the header's size check */
  PetscCall(VecLoad(factors, viewer));
  PetscCall(PetNetTaoKFACSetState(tr->tao, counters, factors));
  PetscCall(VecDestroy(&factors));
  PetscFunctionReturn(0);
}

/* The Vecs of a checkpoint in the order of the file (the parameters, then the optimizer's state), gathered on rank 0
   (sequential, empty elsewhere): collective, so that rank 0 then writes the whole file alone */
static PetscErrorCode TrainerCheckpointGather_Private(Trainer tr, PetscInt *nvec, Vec **seq, PetscInt *step)
{
  PetscInt nstate = 0;
  Vec     *state  = NULL;

  PetscFunctionBegin;
  PetscCall(PetNetTaoGetState(tr->tao, &nstate, &state, step));
  *nvec = 1 + nstate;
  PetscCall(PetscMalloc1(*nvec, seq));
  for (PetscInt k = 0; k < *nvec; k++) {
    Vec        v = k ? state[k - 1] : tr->theta;
    VecScatter sct;

    PetscCall(VecScatterCreateToZero(v, &sct, &(*seq)[k]));
    PetscCall(VecScatterBegin(sct, v, (*seq)[k], INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(sct, v, (*seq)[k], INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterDestroy(&sct));
  }
  PetscFunctionReturn(0);
}

/* Rank 0: everything but the checksum through a sequential viewer; seq[] from TrainerCheckpointGather_Private() */
static PetscErrorCode TrainerWriteCheckpoint_Private(Trainer tr, PetscViewer viewer, PetscInt nvec, Vec seq[], PetscInt step, const TrainerRunSection *rs, const TrainerKFACSection *ks)
{
  PetscInt  nparams, header[TRAINER_CHECKPOINT_NHEAD];
  char      spec[TRAINER_CHECKPOINT_SPECMAX];
  PetscReal best[2] = {tr->besttestloss, tr->besttrainloss};

  PetscFunctionBegin;
  PetscCall(NetGetSpec(tr->net, sizeof(spec), spec));
  PetscCall(VecGetSize(seq[0], &nparams));
  header[0]  = TRAINER_CHECKPOINT_ID;
  header[1]  = TRAINER_CHECKPOINT_VERSION;
  header[2]  = tr->epoch;
  header[3]  = step;
  header[4]  = nvec - 1;
  header[5]  = nparams;
  header[6]  = tr->badepochs;
  header[7]  = (PetscInt)strlen(spec);
  header[8]  = TrainerCheckpointHistory_Private(tr, NULL);
  header[9]  = rs->ni;
  header[10] = rs->nr;
  header[11] = rs->nc;
  header[12] = ks->nk;
  TrainerSplit64_Private(ks->ns, &header[13]);
  PetscCall(PetscViewerBinaryWrite(viewer, header, TRAINER_CHECKPOINT_NHEAD, PETSC_INT));
  PetscCall(PetscViewerBinaryWrite(viewer, spec, header[7], PETSC_CHAR));
  PetscCall(PetscViewerBinaryWrite(viewer, best, 2, PETSC_REAL));
  PetscCall(TrainerWriteCheckpointRun_Private(tr, viewer));
  PetscCall(TrainerWriteCheckpointHistory_Private(tr, viewer));
  PetscCall(TrainerWriteCheckpointRunSection_Private(tr, viewer, rs));
  for (PetscInt k = 0; k < nvec; k++) PetscCall(VecView(seq[k], viewer));
  PetscCall(TrainerWriteCheckpointKFAC_Private(viewer, ks));
  PetscFunctionReturn(0);
}

/* Rank 0 alone writes tmp (the file, then its checksum); returns PETSc's error and the system's errno, not raised */
static PetscErrorCode TrainerWriteCheckpointFile_Private(Trainer tr, const char tmp[], PetscInt nvec, Vec seq[], PetscInt step, const TrainerRunSection *rs, const TrainerKFACSection *ks, int *err)
{
  PetscViewer    viewer = NULL;
  PetscErrorCode ierr, ierr2;

  errno = 0;
  ierr  = PetscViewerBinaryOpen(PETSC_COMM_SELF, tmp, FILE_MODE_WRITE, &viewer);
  if (!ierr) ierr = PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE);
  if (!ierr) ierr = TrainerWriteCheckpoint_Private(tr, viewer, nvec, seq, step, rs, ks);
  *err  = ierr ? errno : 0;
  ierr2 = PetscViewerDestroy(&viewer);
  if (!ierr && ierr2) *err = errno;
  if (!ierr) ierr = ierr2;
  if (!ierr) *err = TrainerAppendChecksum_Private(tmp);
  return ierr;
}

/*@C
  TrainerSaveCheckpoint - writes a training checkpoint: everything that defines the rest of the run

  Collective on tr

  Input Parameters:
+ tr   - the Trainer (set up if needed)
- file - the checkpoint file (PETSc binary), replaced atomically: written under a temporary name, then renamed

  Options Database Keys:
+ -trainer_checkpoint <file>       - TrainerTrain() writes this checkpoint
- -trainer_checkpoint_every <N>    - every N epochs (0: only at the end)

  Notes:
  The checkpoint holds the parameters, the optimizer's state Vecs, update count and settings, the learning-rate
  schedule and its horizon, the data's and the masks' seeds and counters, the epoch, early stopping's state and every
  epoch's metrics, and with -tao_type kfac its factors, their inverses in use and the counters that decide when they
  are refreshed (format 6; what a restart does with each: TrainerLoadCheckpoint()). The file also holds the Net's
  layer list, checked by TrainerLoadCheckpoint(), and ends with a crc32 of its contents, verified on load. The data order needs no state: epoch e draws it from (seed, e).

  Rank 0 writes the file alone, after the parameters and the optimizer state are gathered to it, and every rank learns
  the outcome (PetNetWriteAgree()): a write that fails (full disk, quota) is the same error on every rank, naming the
  file and the reason; it removes its temporary file and leaves the previous checkpoint as it was. A file
  name that exists and is not a regular file (/dev/full, a directory, a link) is refused. The parameters of an epoch
  that diverged (see TrainerTrain()) are never written.

  Level: intermediate

.seealso: `TrainerLoadCheckpoint()`, `TrainerTrain()`, `PetNetTaoGetState()`, `PetNetCommitFile()`
@*/
PetscErrorCode TrainerSaveCheckpoint(Trainer tr, const char file[])
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)tr);
  char               tmp[PETSC_MAX_PATH_LEN], what[PETSC_MAX_PATH_LEN + 32];
  PetscMPIInt        rank;
  PetscInt           nvec = 0, step = 0;
  Vec               *seq  = NULL;
  PetscErrorCode     ierr = 0;
  int                err  = 0;
  TrainerRunSection  rs;
  TrainerKFACSection ks;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCheck(!tr->divergedstate, comm, PETSC_ERR_ARG_WRONGSTATE, "The training diverged in epoch %" PetscInt_FMT ": its parameters are not written to the checkpoint %s", tr->epoch + 1, file);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetNetTemporaryFileName(comm, file, sizeof(tmp), tmp));
  PetscCall(TrainerCheckpointGather_Private(tr, &nvec, &seq, &step));
  PetscCall(TrainerCheckpointRunSection_Private(tr, &rs));
  PetscCall(TrainerCheckpointKFAC_Private(tr, &ks));
  /* rank 0 writes alone; every rank then learns its verdict (PetNetWriteAgree()), so that a full disk ends every rank
     with the same error, the temporary file removed and the previous checkpoint unchanged */
  if (rank == 0) {
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = TrainerWriteCheckpointFile_Private(tr, tmp, nvec, seq, step, &rs, &ks, &err);
    PetscCall(PetscPopErrorHandler());
  }
  for (PetscInt k = 0; k < nvec; k++) PetscCall(VecDestroy(&seq[k]));
  PetscCall(PetscFree(seq));
  PetscCall(PetscFree3(rs.runi, rs.runr, rs.runc));
  PetscCall(TrainerCheckpointKFACDestroy_Private(&ks));
  PetscCall(PetscSNPrintf(what, sizeof(what), "the checkpoint %s", file));
  PetscCall(PetNetWriteAgree(comm, ierr, err, what, tmp));
  PetscCall(PetNetCommitFile(comm, tmp, file));
  tr->lastcheckpoint = tr->epoch;
  PetscFunctionReturn(0);
}

/* Reads what TrainerCheckCheckpointFile_Private() checked, after the header h[] was accepted */
static PetscErrorCode TrainerReadCheckpoint_Private(Trainer tr, PetscViewer viewer, const char file[], const PetscInt h[TRAINER_CHECKPOINT_NHEAD], PetscInt nstate, Vec state[], PetscReal best[3])
{
  PetscInt header[TRAINER_CHECKPOINT_NHEAD], run[2];
  char     spec[TRAINER_CHECKPOINT_SPECMAX];

  PetscFunctionBegin;
  best[1] = PETSC_MAX_REAL; /* version 1 */
  best[2] = -1;             /* versions 1 and 2: no training loss */
  PetscCall(PetscViewerBinaryRead(viewer, header, TrainerCheckpointHeaderLength_Private(h[1]), NULL, PETSC_INT));
  PetscCall(PetscViewerBinaryRead(viewer, spec, h[7], NULL, PETSC_CHAR));
  PetscCall(PetscViewerBinaryRead(viewer, best, h[1] >= 2 ? 2 : 1, NULL, PETSC_REAL));
  if (h[1] >= 3) {
    PetscCall(PetscViewerBinaryRead(viewer, &best[2], 1, NULL, PETSC_REAL));
    PetscCall(PetscViewerBinaryRead(viewer, run, 2, NULL, PETSC_INT)); /* checked by TrainerLoadCheckpoint() before */
  }
  if (h[1] >= 4) PetscCall(TrainerReadCheckpointHistory_Private(tr, viewer, file, h[8], h[2]));
  if (h[1] >= 5) { /* read and checked before, by TrainerLoadCheckpoint() */
    TrainerRunSection rs;

    PetscCall(TrainerReadCheckpointRunSection_Private(viewer, h, &rs));
    PetscCall(PetscFree3(rs.runi, rs.runr, rs.runc));
  }
  PetscCall(VecLoad(tr->theta, viewer));
  for (PetscInt k = 0; k < nstate; k++) PetscCall(VecLoad(state[k], viewer));
  if (h[1] >= 6 && h[12] > 0) PetscCall(TrainerReadCheckpointKFAC_Private(tr, viewer, file, h));
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
  TrainerTrain() then runs the remaining epochs and ends with the same weights as an uninterrupted run (the same bits
  on the same rank count, round-off on another). A different
  network (layer list or parameter count) or optimizer state is refused with an error saying what differs; so are
  (format version 3) another batch size or number of training samples (-trainer_batch_size, -train_dataset_limit),
  which would draw another data order and count other optimizer steps. The last epoch's training loss is restored
  too: a restart from the final checkpoint reports the training loss the interrupted run reported (the mean over the
  last epoch's batches), not an evaluation of the final weights. So is (format version 4) the metrics of every epoch
  run before the checkpoint: TrainerTrain() first hands them to the monitors (TrainerMetrics' restored flag set; the
  progress line ends in "(restored)"), so that a CSV monitor's file and the -trainer_monitor_plot image cover the whole
  run, not only the epochs after the restart.

  Format version 5 holds what defines the rest of the run besides: the optimizer's type, rates and settings
  (PetNetTaoGetSettings()), the learning-rate schedule with its horizon as the writing run resolved it, the training
  data's seed, each dropout and attention layer's seed and pass counter, the mode and the run's -trainer_epochs. What
  the command line cannot change without leaving that run (another -tao_type, rate, beta, schedule, warm-up, seed,
  mode) is refused naming the option and both values; another -trainer_epochs extends the run, stated in one line:
  the schedule keeps the checkpoint's horizon (a cosine that has ended stays at lr_min) unless
  -tao_lr_cosine_iterations is given. The pass counters are restored, so dropout draws the masks the uninterrupted run
  would have drawn. A full-batch TAO type that is not PetNet's restarts afresh (its memory is not saved), stated too.

  Format version 6 holds K-FAC's state (-tao_type kfac): every block's running averages A and S, the damped inverses in
  use and the counters of statistics updates and inversions, in a layout that depends neither on the rank count nor on
  the factors' placement (PetNetTaoKFACGetState()), so a K-FAC restart continues the run like the other optimizers'
  (the same bits on the same ranks, round-off on others, with -net_parallel sharded or model or a placed Net too).
  Its sizes are compared with the blocks the Net implies, in 64 bits, before anything is allocated.

  The file is checked before anything is read: a truncated file, a checksum that does not match (a damaged file), an
  impossible header, or an epoch outside 0..-trainer_epochs are errors naming the file. Version 1 checkpoints (before
  checksums) are still read, with the size check only; version 2 checkpoints (without the run's batch size, sample
  count and last training loss) without those checks; version 3 checkpoints without the history (the monitors and the
  plot then see only the epochs after the restart); version 4 checkpoints without the run section (the schedule's
  horizon is then the restarted run's, the masks' counters start at 0, nothing else is compared); version 5
  checkpoints without K-FAC's state (a kfac restart then rebuilds its factors from its first batch, stated in one line).

  Level: intermediate

.seealso: `TrainerSaveCheckpoint()`, `TrainerTrain()`, `PetNetTaoSetStep()`
@*/
PetscErrorCode TrainerLoadCheckpoint(Trainer tr, const char file[])
{
  MPI_Comm          comm   = PetscObjectComm((PetscObject)tr);
  PetscViewer       viewer = NULL;
  PetscInt          nstate = 0, step = 0, nparams, h[TRAINER_CHECKPOINT_NHEAD] = {0};
  Vec              *state = NULL;
  char              spec[TRAINER_CHECKPOINT_SPECMAX], saved[TRAINER_CHECKPOINT_SPECMAX], msg[1024];
  PetscReal         best[3], head[3];
  PetscInt          run[2] = {0, 0};
  PetscMPIInt       rank;
  PetscErrorCode    ierr, ierr2;
  char             *why = NULL;
  TrainerRunSection rs  = {0, 0, 0, NULL, NULL, NULL};

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  PetscCall(TrainerSetUp(tr));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) TrainerCheckCheckpointFile_Private(file, h, sizeof(msg), msg);
  PetscCallMPI(MPI_Bcast(msg, sizeof(msg), MPI_CHAR, 0, comm));
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  PetscCallMPI(MPI_Bcast(h, TRAINER_CHECKPOINT_NHEAD, MPIU_INT, 0, comm));

  PetscCall(TaoSetUp(tr->tao));
  PetscCall(NetGetSpec(tr->net, sizeof(spec), spec));
  PetscCall(NetGetNumParameters(tr->net, &nparams));
  PetscCall(PetNetTaoGetState(tr->tao, &nstate, &state, &step));
  PetscCheck(h[2] >= 0 && h[2] <= tr->epochs, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s was written after epoch %" PetscInt_FMT ", outside the 0 to %" PetscInt_FMT " epochs of this run: %s", file, h[2], tr->epochs,
             h[2] < 0 ? "the file is corrupt" : "raise -trainer_epochs to continue it");
  PetscCheck(h[3] >= 0 && h[6] >= 0 && h[6] <= h[2], comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: optimizer step %" PetscInt_FMT ", %" PetscInt_FMT " epochs without improvement after %" PetscInt_FMT " epochs", file, h[3], h[6], h[2]);
  PetscCheck((PetscInt64)h[3] + (PetscInt64)(tr->epochs - h[2]) * (tr->minibatch ? tr->nbatches : 1) <= PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED,
             "Checkpoint %s is corrupt: its optimizer step %" PetscInt_FMT " would overflow in the remaining epochs", file, h[3]);
  PetscCheck(h[4] == nstate, comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s holds %" PetscInt_FMT " optimizer state vectors but the optimizer in use has %" PetscInt_FMT ": restart with the same -tao_type", file, h[4], nstate);

  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = PetscViewerBinaryOpen(comm, file, FILE_MODE_READ, &viewer);
  if (!ierr) ierr = PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE);
  if (!ierr) { /* the layer list first: a different network is reported as such, not as a Vec of the wrong size */
    PetscInt header[TRAINER_CHECKPOINT_NHEAD];

    ierr = PetscViewerBinaryRead(viewer, header, TrainerCheckpointHeaderLength_Private(h[1]), NULL, PETSC_INT);
    if (!ierr) ierr = PetscViewerBinaryRead(viewer, saved, h[7], NULL, PETSC_CHAR);
    saved[h[7]] = 0;
    if (!ierr && h[1] >= 3) ierr = PetscViewerBinaryRead(viewer, head, 3, NULL, PETSC_REAL); /* best losses, training loss */
    if (!ierr && h[1] >= 3) ierr = PetscViewerBinaryRead(viewer, run, 2, NULL, PETSC_INT);
    if (!ierr && h[1] >= 5) { /* past the history to the run section */
      PetscInt  *hi;
      PetscReal *hr;

      ierr = PetscMalloc2(TRAINER_CHECKPOINT_NHIST_INT * h[8], &hi, TRAINER_CHECKPOINT_NHIST_REAL * h[8], &hr);
      if (!ierr) ierr = PetscViewerBinaryRead(viewer, hi, TRAINER_CHECKPOINT_NHIST_INT * h[8], NULL, PETSC_INT);
      if (!ierr) ierr = PetscViewerBinaryRead(viewer, hr, TRAINER_CHECKPOINT_NHIST_REAL * h[8], NULL, PETSC_REAL);
      if (!ierr) ierr = PetscFree2(hi, hr);
      if (!ierr) ierr = TrainerReadCheckpointRunSection_Private(viewer, h, &rs);
    }
  }
  ierr2 = PetscViewerDestroy(&viewer);
  if (!ierr) ierr = ierr2;
  if (ierr) PetscCall(PetscErrorMessage(ierr, NULL, &why));
  PetscCall(PetscPopErrorHandler());
  PetscCheck(!ierr, comm, PETSC_ERR_FILE_READ, "Could not read the checkpoint %s: %s", file, why ? why : "read error");
  PetscCheck(h[5] == nparams && !strcmp(saved, spec), comm, PETSC_ERR_ARG_INCOMP, "Checkpoint %s holds the network \"%s\" (%" PetscInt_FMT " parameters) but this run builds \"%s\" (%" PetscInt_FMT " parameters): restart with the same model options",
             file, saved, h[5], spec, nparams);
  if (h[1] >= 3) PetscCall(TrainerCheckCheckpointRun_Private(tr, file, run));
  if (h[1] >= 5) {
    PetscCall(TrainerApplyCheckpointRunSection_Private(tr, file, &rs));
    PetscCall(PetscFree3(rs.runi, rs.runr, rs.runc));
  }
  { /* K-FAC's factors (version 6), or a statement that they start afresh */
    PetscBool iskfac;

    PetscCall(PetscObjectTypeCompare((PetscObject)tr->tao, TAOKFAC, &iskfac));
    PetscCheck(!iskfac || h[1] < 6 || h[12] > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: written by a kfac run (format version %" PetscInt_FMT "), it holds no K-FAC section", file, h[1]);
    if (iskfac && h[1] < 6)
      PetscCall(PetscPrintf(comm, "restart from %s: a format-%" PetscInt_FMT " checkpoint holds no K-FAC factors: the first update rebuilds them from its batch, so the run continues from the checkpoint's parameters, not as the uninterrupted run\n",
                            file, h[1]));
  }

  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = PetscViewerBinaryOpen(comm, file, FILE_MODE_READ, &viewer);
  if (!ierr) ierr = PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE);
  if (!ierr) ierr = TrainerReadCheckpoint_Private(tr, viewer, file, h, nstate, state, best);
  ierr2 = PetscViewerDestroy(&viewer);
  if (!ierr) ierr = ierr2;
  if (ierr) PetscCall(PetscErrorMessage(ierr, NULL, &why));
  PetscCall(PetscPopErrorHandler());
  PetscCheck(!ierr, comm, PETSC_ERR_FILE_READ, "Could not read the checkpoint %s: %s", file, why ? why : "read error");
  PetscCheck(!PetscIsNanReal(best[0]) && !PetscIsNanReal(best[1]) && !PetscIsNanReal(best[2]), comm, PETSC_ERR_FILE_UNEXPECTED, "Checkpoint %s is corrupt: its best or last losses are NaN", file);
  PetscCall(PetNetTaoSetStep(tr->tao, h[3]));
  PetscCall(NetSetParameters(tr->net, tr->theta));
  tr->epoch          = h[2];
  tr->badepochs      = h[6];
  tr->besttestloss   = best[0];
  tr->besttrainloss  = best[1];
  tr->lastcheckpoint = tr->epoch;
  /* the last epoch's training loss as the run reported it (a restart from the final checkpoint reports it again; an
     evaluation of the final weights on the training set is another number) */
  tr->trainlossrestored = (PetscBool)(h[1] >= 3 && tr->epoch > 0);
  if (tr->trainlossrestored) tr->trainloss = best[2];
  if (tr->failstep >= 0) { /* the testing aid stands for one failure, which the run this restart continues has had */
    PetscCall(PetscPrintf(comm, "restart from %s: -trainer_fail_after_step %" PetscInt_FMT " is ignored (a restarted run does not fail again)\n", file, tr->failstep));
    tr->failstep = -1;
  }
  PetscCall(PetscInfo(tr, "Resumed from %s (format version %" PetscInt_FMT "%s) at epoch %" PetscInt_FMT ", optimizer step %" PetscInt_FMT "\n", file, h[1], h[1] >= 2 ? ", checksum verified" : ", no checksum", tr->epoch, h[3]));
  PetscFunctionReturn(0);
}
