/*
  Fuzz harness: training checkpoints through the restart path (TrainerLoadCheckpoint(), what -trainer_restart runs) of
  a small MLP (3 inputs, dense:4,tanh,dense:2) trained with Adam on 12 samples, then the remaining epochs of training
  from whatever was loaded. Each input is tried twice: as given (the header, size and crc32 checks see it), and with
  its crc32 trailer recomputed, so that the fuzzer also reaches the reader behind the checksum.

  The seed corpus (fuzz/corpus/checkpoint/) holds checkpoints this Trainer wrote after 0 to 3 epochs, one written by
  SGD (no optimizer state), a version-1 file, and truncated, bit-flipped and out-of-range copies; adam_v4_epoch1..3 are
  format 4 (with the per-epoch history; written 2026-11-29 by this Trainer with TrainerSaveCheckpoint() after 1, 2, 3
  epochs), adam_v5_epoch1..3 format 5 (with the run section: schedule, optimizer settings, seeds and counters; written
  2026-11-29 the same way). The reader of format 5 checks the run section's lengths with the header (sizes) and its
  contents before use (announced layers and settings, types, seeds).

  kfac_v6_epoch1..2 are format 6 (with K-FAC's section: counters, blocks, factors and inverses; written 2026-11-30 by
  this Trainer with -tao_type kfac after 1 and 2 epochs), kfac_v6_truncated and kfac_v6_blockwrong damaged copies (a
  factor cut short; block 0's order of A one larger, checksum recomputed). An input whose bytes hold "kfac" (the run
  section's TAO type) is loaded by a kfac Trainer, so that its K-FAC section is read.

  Fuzzed after format 6 (2026-11-30, clang 14 -fsanitize=fuzzer,address, 301 s, 83,747 inputs, 3,528 edges, the same
  flags; 60 of the 158 inputs it kept hold "kfac" and went through the K-FAC section's reader): no crash, no hang, no
  sanitizer error.

  Fuzzed again after format 5 (2026-11-29, clang 14 -fsanitize=fuzzer,address, 181 s, 46,170 inputs, 2,661 edges, the
  same flags): no crash, no hang, no sanitizer error.

  Fuzzed with clang 14 -fsanitize=fuzzer,address for 241 s (88,137 inputs, 1,659 edges, -detect_leaks=0 -timeout=10):
  no crash, no hang, no sanitizer error (at exit, LeakSanitizer lists only Open MPI's never-finalized allocations).
*/
#include "fuzz.h"
#include <petnettrainer.h>
#include <zlib.h>

#define FUZZ_CKPT_EPOCHS 3

/* The Trainer whose checkpoints are fuzzed: fixed data, layers, seed and optimizer; no progress lines */
static PetscErrorCode FuzzCheckpointTrainer(TaoType type, Trainer *tr)
{
  Dataset     ds;
  Net         net;
  Loss        loss;
  Tao         tao;
  Vec         X, T;
  PetNetShape shape = {1, {3}};

  PetscFunctionBegin;
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 36, &X));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 12, &T));
  for (PetscInt i = 0; i < 36; i++) PetscCall(VecSetValue(X, i, PetscSinReal(1.3 * i), INSERT_VALUES));
  for (PetscInt i = 0; i < 12; i++) PetscCall(VecSetValue(T, i, (PetscScalar)(i % 2), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(X));
  PetscCall(VecAssemblyEnd(X));
  PetscCall(VecAssemblyBegin(T));
  PetscCall(VecAssemblyEnd(T));
  PetscCall(DatasetCreate(PETSC_COMM_SELF, &ds));
  PetscCall(DatasetSetType(ds, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(ds, &shape, X, 1, T));
  PetscCall(DatasetSetBatchSize(ds, 4));
  PetscCall(NetCreate(PETSC_COMM_SELF, &net));
  PetscCall(NetSetLayers(net, "dense:4,tanh,dense:2"));
  PetscCall(NetSetSeed(net, 1));
  PetscCall(LossCreate(PETSC_COMM_SELF, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(TrainerCreate(PETSC_COMM_SELF, tr));
  PetscCall(TrainerSetNet(*tr, net));
  PetscCall(TrainerSetLoss(*tr, loss));
  PetscCall(TrainerSetDatasets(*tr, ds, NULL));
  PetscCall(TrainerSetEpochs(*tr, FUZZ_CKPT_EPOCHS));
  PetscCall(TrainerGetTao(*tr, &tao));
  PetscCall(TaoSetType(tao, type));
  PetscCall(TrainerSetFromOptions(*tr));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscCall(DatasetDestroy(&ds));
  PetscCall(NetDestroy(&net));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* whether the bytes hold the string "kfac" (a kfac run's checkpoint names its TAO type in the run section) */
static int FuzzHoldsKFAC(const uint8_t *data, size_t size)
{
  for (size_t i = 0; i + 4 <= size; i++)
    if (!memcmp(data + i, TAOKFAC, 4)) return 1;
  return 0;
}

static void FuzzLoadCheckpoint(const uint8_t *data, size_t size)
{
  char    name[PETSC_MAX_PATH_LEN];
  Trainer tr = NULL;

  if (FuzzWriteFile(data, size, ".ckpt", sizeof(name), name)) return;
  if (!FuzzCheckpointTrainer(FuzzHoldsKFAC(data, size) ? TAOKFAC : TAOADAM, &tr)) { /* a kfac run's file names its type */
    PetscErrorCode ierr = TrainerLoadCheckpoint(tr, name);

    if (!ierr) ierr = TrainerTrain(tr);
    (void)ierr;
  }
  TrainerDestroy(&tr);
  unlink(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint8_t *copy;
  uLong    crc;

  if (FuzzInitialize()) return 0;
  if (PetscOptionsSetValue(NULL, "-trainer_monitor", "0")) return 0;
  if (size > (1 << 20)) return 0;
  FuzzLoadCheckpoint(data, size);
  if (size < 8 * sizeof(PetscInt) + 4 || PetscMalloc1(size, &copy)) return 0;
  memcpy(copy, data, size);
  crc = crc32(crc32(0L, Z_NULL, 0), copy, (uInt)(size - 4));
  for (int i = 0; i < 4; i++) copy[size - 4 + i] = (uint8_t)(crc >> (24 - 8 * i));
  if (memcmp(copy, data, size)) FuzzLoadCheckpoint(copy, size);
  PetscFree(copy);
  return 0;
}
