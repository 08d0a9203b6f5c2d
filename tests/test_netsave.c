static const char help[] = "-net_save outside training, and the input normalisation in model files.\n"
                           "  -case destroy : a set-up Net given -net_save FILE is saved at NetDestroy(); the file loads with the same\n"
                           "                  parameters and the normalisation set by NetSetInputNormalization()\n"
                           "  -case changed : NetSaveFromOptions(), then the parameters change: NetDestroy() saves them again\n"
                           "  -case corrupt : a saved file whose normalisation std is patched to -corrupt_value (binary: the bytes;\n"
                           "                  HDF5: the attribute input_std) must be refused by NetLoad()\n"
                           "  -case load    : -net_load FILE; prints the layer list, the parameter count and the normalisation\n"
                           "The Net under test: -net_layers, -net_input_shape, -net_save FILE (default a small MLP).\n";

#include <petnet.h>
#include <petscviewerhdf5.h>

/* The Net the options describe (prefix none), set up, with the normalisation (0.5 x - 0.25) / 2 */
static PetscErrorCode CreateNet(MPI_Comm comm, Net *net)
{
  PetNetShape in = {1, {5}};

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  PetscCall(NetSetLayers(*net, "dense:4,tanh,dense:3"));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscCall(NetSetInputNormalization(*net, 0.5, 0.25, 2.0));
  PetscFunctionReturn(0);
}

/* Loads file into a Net with the prefix "loaded_" (so that -net_save does not apply to it) and compares */
static PetscErrorCode CheckLoad(MPI_Comm comm, const char file[], Vec expect)
{
  Net       net;
  Vec       theta;
  PetscBool equal, set;
  PetscReal s, m, d;
  PetscInt  n;

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetOptionsPrefix(net, "loaded_"));
  PetscCall(NetLoad(net, file));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecEqual(theta, expect, &equal));
  PetscCall(NetGetInputNormalization(net, &set, &s, &m, &d));
  PetscCall(NetGetNumParameters(net, &n));
  PetscCheck(equal && set && s == 0.5 && m == 0.25 && d == 2.0, comm, PETSC_ERR_PLIB, "%s: parameters %s, normalisation %s (%g x - %g) / %g instead of (0.5 x - 0.25) / 2", file, equal ? "equal" : "differ", set ? "recorded" : "missing", (double)s,
             (double)m, (double)d);
  PetscCall(PetscPrintf(comm, "summary: file=%s params=%" PetscInt_FMT " equal=1 scale=%g mean=%g std=%g\n", file, n, (double)s, (double)m, (double)d));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm  comm;
  char      kind[32] = "destroy", file[PETSC_MAX_PATH_LEN] = "";
  PetscReal bad = -1.0;
  Net       net;
  Vec       theta, copy;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", kind, sizeof(kind), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-net_save", file, sizeof(file), NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-corrupt_value", &bad, NULL));
  if (!strcmp(kind, "load")) {
    char      spec[4096];
    PetscInt  n;
    PetscReal s, m, d;
    PetscBool set;

    PetscCall(NetCreate(comm, &net));
    PetscCall(NetSetFromOptions(net)); /* -net_load */
    PetscCall(NetGetSpec(net, sizeof(spec), spec));
    PetscCall(NetGetNumParameters(net, &n));
    PetscCall(NetGetInputNormalization(net, &set, &s, &m, &d));
    PetscCall(PetscPrintf(comm, "summary: spec=%s params=%" PetscInt_FMT " normalization=%s scale=%g mean=%g std=%g\n", spec, n, set ? "recorded" : "none", (double)s, (double)m, (double)d));
    PetscCall(NetDestroy(&net));
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCheck(file[0], comm, PETSC_ERR_USER_INPUT, "Give -net_save FILE");
  PetscCall(CreateNet(comm, &net));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &copy));
  if (!strcmp(kind, "destroy")) {
    PetscCall(VecCopy(theta, copy));
    PetscCall(NetDestroy(&net)); /* saves */
    PetscCall(CheckLoad(comm, file, copy));
  } else if (!strcmp(kind, "changed")) {
    PetscCall(NetSaveFromOptions(net));
    PetscCall(VecScale(theta, 2.0));
    PetscCall(VecCopy(theta, copy));
    PetscCall(NetDestroy(&net)); /* saves again: the parameters changed since */
    PetscCall(CheckLoad(comm, file, copy));
  } else if (!strcmp(kind, "corrupt")) {
    PetscBool h5;

    PetscCall(NetSaveFromOptions(net));
    PetscCall(NetDestroy(&net));
    PetscCall(PetscStrendswith(file, ".h5", &h5));
    if (h5) {
      PetscViewer viewer;

      PetscCall(PetscViewerHDF5Open(comm, file, FILE_MODE_APPEND, &viewer));
      PetscCall(PetscViewerHDF5WriteAttribute(viewer, "petnet", "input_std", PETSC_REAL, &bad));
      PetscCall(PetscViewerDestroy(&viewer));
    } else {
      PetscMPIInt rank;

      PetscCallMPI(MPI_Comm_rank(comm, &rank));
      if (!rank) { /* PETSc binary: 10 header integers (4 bytes), the flag (4 bytes), scale, mean, std (big-endian doubles) */
        FILE         *fp;
        uint64_t      u;
        unsigned char be[8];
        double        v = (double)bad;

        memcpy(&u, &v, sizeof(u));
        for (int b = 0; b < 8; b++) be[b] = (unsigned char)(u >> (56 - 8 * b));
        fp = fopen(file, "r+b");
        PetscCheck(fp && !fseek(fp, 11 * 4 + 2 * 8, SEEK_SET) && fwrite(be, 1, 8, fp) == 8 && !fclose(fp), PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot patch %s", file);
      }
      PetscCallMPI(MPI_Barrier(comm));
    }
    PetscCall(CheckLoad(comm, file, copy)); /* must fail */
  } else
    SETERRQ(comm, PETSC_ERR_ARG_WRONG, "Unknown -case %s: destroy, changed, corrupt or load", kind);
  PetscCall(VecDestroy(&copy));
  PetscCall(PetscFinalize());
  return 0;
}
