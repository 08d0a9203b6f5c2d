/*
  Backward compatibility of saved models.

  The fixtures in tests/data/compat/ were written by PetNet at commit 045f51f (before the graph refactor of the Net)
  with "bin/tests/test_compat -compat_write tests/data/compat" on 1 rank. They must NEVER be regenerated with a newer
  version: their whole point is that models saved by that old code still load and give the same outputs. If this test
  fails after a change, fix the loader, not the fixtures. The table of models below (layers, input shape, seed, parameter
  count) documents what the fixtures were written with; -compat_write exists only to record how they were made.

  This program uses only the stable public API (NetCreate, NetSetLayers, NetSetInputShape, NetSetSeed,
  NetSetFromOptions, NetSetUp, NetSetTraining, NetCreateVecs, NetForward, NetSave, NetLoad, NetGetSpec,
  NetGetNumParameters) and PETSc binary Vec files, so that the same source builds against the old and new libraries.
*/
static const char help[] = "Models saved by an old PetNet still load and give the same outputs.\n"
                           "  -compat_write DIR  build each model, one training-mode forward pass (batchnorm running statistics),\n"
                           "                     then in evaluation mode forward a fixed batch and save DIR/NAME.h5, DIR/NAME.petnet\n"
                           "                     and DIR/NAME.io (the input and the output as two PETSc binary Vecs)\n"
                           "  -compat_check DIR  load DIR/NAME.h5 and DIR/NAME.petnet on any number of ranks, evaluation mode, forward\n"
                           "                     the saved input: the output must equal the saved one to a relative 1e-13 (max norm);\n"
                           "                     the loaded spec must rebuild a Net with the saved number of parameters\n";

#include <petnet.h>
#include <petnetts.h>

#define COMPAT_RTOL   1e-13
#define COMPAT_BATCH  5 /* samples of the saved evaluation batch (and of the training pass) */
#define COMPAT_MAXDIM 4

typedef struct {
  const char   *name;
  const char   *layers;
  PetscInt      ndim, dim[COMPAT_MAXDIM];
  unsigned long seed;
  PetscInt      nparams; /* as counted by the old code, which wrote the fixtures */
} Model;

/*
  (a) a plain MLP; (b) a CNN with batchnorm (running statistics from one training pass) and residual blocks: identity
  shortcut, projection shortcut with stride 2, and a nested residual; (c) a neural ODE: the ode layer with its defaults
  (rk 4, 10 fixed steps, trajectory in memory; the file carries only ode(T|f), so no TS option may be given);
  (d) dropout (identity in evaluation mode), max and average pooling, flatten.
*/
static const Model models[] = {
    {"mlp", "dense:16,relu,dense:8,tanh,dense:3", 1, {12}, 11, 371},
    {"cnn",
     "conv2d:4:3:1:1,batchnorm,relu,residual(conv2d:4:3:1:1,batchnorm,relu,conv2d:4:3:1:1,batchnorm),residual(conv2d:6:3:2:1,relu,conv2d:6:3:1:1|conv2d:6:1:2:0,batchnorm),residual(residual(conv2d:6:3:1:1,tanh)),globalavgpool,dense:3",
     3,
     {8, 8, 2},
     12,
     1341},
    {"ode", "dense:4,ode(0.5|dense:8,tanh,dense:4),dense:2", 1, {5}, 13, 110},
    {"pool", "conv2d:3:3:1:1,maxpool:2,dropout:0.2,conv2d:4:3:1:1,avgpool:2,flatten,dense:5", 3, {8, 8, 2}, 14, 254},
};

static PetscInt LocalSamples(MPI_Comm comm, PetscInt N)
{
  PetscMPIInt rank, size;

  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return N / size + (rank < N % size ? 1 : 0);
}

/* v[g] = a fixed smooth function of the global index g and the phase: the same global batch on any number of ranks */
static PetscErrorCode FillDeterministic(Vec v, PetscReal phase)
{
  PetscInt     rstart, rend;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt g = rstart; g < rend; g++) a[g - rstart] = PetscSinReal(0.37 * (PetscReal)g + phase) + 0.25 * PetscCosReal(1.3 * (PetscReal)g - 2.0 * phase);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

static PetscErrorCode OpenVecFile(MPI_Comm comm, const char name[], PetscFileMode mode, PetscViewer *viewer)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerCreate(comm, viewer));
  PetscCall(PetscViewerSetType(*viewer, PETSCVIEWERBINARY));
  PetscCall(PetscViewerBinarySetSkipInfo(*viewer, PETSC_TRUE)); /* no NAME.io.info next to the fixture */
  PetscCall(PetscViewerFileSetMode(*viewer, mode));
  PetscCall(PetscViewerFileSetName(*viewer, name));
  PetscFunctionReturn(0);
}

static PetscErrorCode WriteModel(MPI_Comm comm, const char dir[], const Model *m)
{
  Net         net;
  PetNetShape in = {0, {0}};
  Vec         X, Y;
  PetscViewer viewer;
  PetscInt    np;
  char        file[PETSC_MAX_PATH_LEN], spec[4096];

  PetscFunctionBegin;
  in.ndim = m->ndim;
  for (PetscInt d = 0; d < m->ndim; d++) in.dim[d] = m->dim[d];
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, m->layers));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetSeed(net, m->seed));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetNumParameters(net, &np));
  PetscCall(NetCreateVecs(net, LocalSamples(comm, COMPAT_BATCH), &X, &Y));
  /* one training-mode pass: batchnorm's running statistics move away from (0, 1), dropout draws a mask */
  PetscCall(NetSetTraining(net, PETSC_TRUE));
  PetscCall(FillDeterministic(X, 0.5));
  PetscCall(NetForward(net, X, Y));
  /* the saved pass: evaluation mode on another fixed batch */
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(FillDeterministic(X, 1.7));
  PetscCall(NetForward(net, X, Y));

  PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s.h5", dir, m->name));
  PetscCall(NetSave(net, file));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s.petnet", dir, m->name));
  PetscCall(NetSave(net, file));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s.io", dir, m->name));
  PetscCall(OpenVecFile(comm, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(X, viewer));
  PetscCall(VecView(Y, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(PetscPrintf(comm, "wrote %s: %" PetscInt_FMT " parameters, spec %s\n", m->name, np, spec));
  PetscCheck(np == m->nparams, comm, PETSC_ERR_PLIB, "Model %s has %" PetscInt_FMT " parameters, the table says %" PetscInt_FMT, m->name, np, m->nparams);
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* The loaded spec must rebuild (NetSetLayers on a fresh Net) an architecture with the saved number of parameters */
static PetscErrorCode CheckSpec(MPI_Comm comm, const char label[], const Model *m, const char spec[], PetscInt np)
{
  Net         net;
  PetNetShape in = {0, {0}};
  PetscInt    np2;

  PetscFunctionBegin;
  PetscCheck(np == m->nparams, comm, PETSC_ERR_PLIB, "compat %s: the loaded Net has %" PetscInt_FMT " parameters, the file was saved with %" PetscInt_FMT, label, np, m->nparams);
  in.ndim = m->ndim;
  for (PetscInt d = 0; d < m->ndim; d++) in.dim[d] = m->dim[d];
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, spec));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetNumParameters(net, &np2));
  PetscCheck(np2 == np, comm, PETSC_ERR_PLIB, "compat %s: the loaded Net's spec \"%s\" rebuilds a Net with %" PetscInt_FMT " parameters, not %" PetscInt_FMT, label, spec, np2, np);
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckModelFile(MPI_Comm comm, const char dir[], const Model *m, const char ext[])
{
  Net         net;
  Vec         X, Y, Ysaved;
  PetscViewer viewer;
  PetscInt    np;
  PetscReal   ref, diff, rel;
  char        file[PETSC_MAX_PATH_LEN], label[256], spec[4096];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(label, sizeof(label), "%s.%s", m->name, ext));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s", dir, label));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetLoad(net, file));
  PetscCall(NetSetTraining(net, PETSC_FALSE));
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetGetNumParameters(net, &np));
  PetscCall(PetscPrintf(comm, "compat %s: %" PetscInt_FMT " parameters, spec %s\n", label, np, spec));
  PetscCall(CheckSpec(comm, label, m, spec, np));

  PetscCall(NetCreateVecs(net, LocalSamples(comm, COMPAT_BATCH), &X, &Y));
  PetscCall(VecDuplicate(Y, &Ysaved));
  PetscCall(PetscSNPrintf(file, sizeof(file), "%s/%s.io", dir, m->name));
  PetscCall(OpenVecFile(comm, file, FILE_MODE_READ, &viewer));
  PetscCall(VecLoad(X, viewer));
  PetscCall(VecLoad(Ysaved, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Ysaved, NORM_INFINITY, &ref));
  PetscCall(VecAXPY(Y, -1.0, Ysaved));
  PetscCall(VecNorm(Y, NORM_INFINITY, &diff));
  PetscCheck(ref > 0, comm, PETSC_ERR_PLIB, "compat %s: the saved output is zero; the fixture %s is broken", label, file);
  rel = diff / ref;
  PetscCheck(rel <= COMPAT_RTOL, comm, PETSC_ERR_PLIB, "compat %s: the model saved by PetNet 045f51f loads but gives a different output: max rel diff %.3e > %g (max |diff| %.3e, max |saved| %.3e)", label, (double)rel, COMPAT_RTOL, (double)diff,
             (double)ref);
  PetscCall(PetscPrintf(comm, "compat %s: max rel diff %.1e <= %g\n", label, (double)rel, COMPAT_RTOL));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Ysaved));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      dir[PETSC_MAX_PATH_LEN];
  PetscBool write, check;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, NULL, "-compat_write", dir, sizeof(dir), &write));
  if (!write)
    PetscCall(PetscOptionsGetString(NULL, NULL, "-compat_check", dir, sizeof(dir), &check));
  else
    check = PETSC_FALSE;
  PetscCheck(write || check, PETSC_COMM_WORLD, PETSC_ERR_USER, "Give -compat_write DIR or -compat_check DIR");
  for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
    if (write)
      PetscCall(WriteModel(PETSC_COMM_WORLD, dir, &models[i]));
    else {
      PetscCall(CheckModelFile(PETSC_COMM_WORLD, dir, &models[i], "h5"));
      PetscCall(CheckModelFile(PETSC_COMM_WORLD, dir, &models[i], "petnet"));
    }
  }
  PetscCall(PetscFinalize());
  return 0;
}
