/* The whole library at once: the top of the dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer. */
#include <petnet.h>

/*@C
  PetNetInitializePackage - initializes every PetNet package: Layer, Net, Loss, Dataset, PetNet's TAO types, the TS
  extensions and the Trainer. Idempotent. Each XxxCreate() initializes its own package, so this is needed only before
  using a registry directly, e.g. TaoSetType(tao, TAOADAM) on a Tao that no Trainer owns.

  Not collective

  Notes:
  The packages depend on each other one way: sys <- layers <- net <- (loss, ts, optim, data) <- trainer. It
  initializes the bottom, sys (PetNetSysInitializePackage(): PetNetLayout), then the top, the Trainer package (TrainerInitializePackage(): Net, and with it Layer, then Loss, Dataset
  and PetNet's TAO types), and then the TS extensions (NetTSInitializePackage()), the one package no Trainer needs.
  The latter registers the ode layer kind, so call this before a layer list (-net_layers, -net_graph) or a saved Net
  that uses ode.

  Level: beginner

.seealso: `PetNetSysInitializePackage()`, `LayerInitializePackage()`, `NetInitializePackage()`, `LossInitializePackage()`,
          `DatasetInitializePackage()`, `PetNetTaoInitializePackage()`, `NetTSInitializePackage()`,
          `TrainerInitializePackage()`
@*/
PetscErrorCode PetNetInitializePackage(void)
{
  PetscFunctionBegin;
  PetscCall(PetNetSysInitializePackage());
  PetscCall(TrainerInitializePackage());
  PetscCall(NetTSInitializePackage());
  PetscFunctionReturn(0);
}

/*@C
  PetNetInitialize - initializes PETSc (PetscInitialize()) and every PetNet package (PetNetInitializePackage()), as
  SlepcInitialize() does for SLEPc; PetscFinalize() ends both.

  Collective on `MPI_COMM_WORLD`

  Input Parameters:
+ argc - the address of the number of command line arguments (main()'s argc), or NULL
. args - the address of the command line arguments (main()'s argv), or NULL
. file - an options file to read, or NULL
- help - the help message printed by -help, or NULL

  Output Parameters:
+ argc - the number of command line arguments, as PetscInitialize() leaves it
- args - the command line arguments, as PetscInitialize() leaves them

  Notes:
  argc and args are passed to PetscInitialize() as they are, and through it to MPI_Init() when MPI is not initialized
  yet; the MPI implementation may modify them (e.g. remove its own arguments).

  An options file (file, and each -options_file FILE of the command line) given relative to PetNet's tree that does
  not exist from the current folder is read from PetNet's data directory (PetNetGetDataFile()): an installed program
  finds share/models/mlp.opts in PREFIX/share/petnet/models/.

  A program that creates its objects through XxxCreate() alone may call PetscInitialize(): each class initializes its
  own package. Kinds that an upper package registers in a lower one's registry (the ode layer kind, from the TS
  package) are known only once that package is initialized: PetNetInitialize() makes every kind available at once.

  It then reads the BLAS's kernels and the CPU's features (PetNetBLASCheck()): when OpenBLAS runs kernels slower than
  the CPU can (its generic Prescott kernels on a CPU with AVX2), the first rank prints one warning on standard error
  with the OPENBLAS_CORETYPE that fixes it (-petnet_blas_warning 0 silences it); with -log_view the BLAS line
  (PetNetBLASView()) is printed above the log.

  Options Database Key:
. -petnet_blas_warning <bool> - warn when the BLAS runs slower kernels than the CPU can (default true)

  Level: beginner

.seealso: `PetNetInitializePackage()`, `PetscInitialize()`, `PetscFinalize()`, `PetNetGetDataFile()`, `PetNetBLASCheck()`
@*/
PetscErrorCode PetNetInitialize(int *argc, char ***args, const char file[], const char help[])
{
  /* the resolved names live as long as the program: PETSc reads the files inside PetscInitialize(), and argv stays */
  static char resolved[9][PETSC_MAX_PATH_LEN];
  int         k = 0;

  PetscFunctionBegin;
  if (file) {
    PetscCall(PetNetGetDataFile(file, sizeof(resolved[k]), resolved[k]));
    file = resolved[k++];
  }
  for (int i = 1; argc && args && *args && i + 1 < *argc && k < (int)PETSC_STATIC_ARRAY_LENGTH(resolved); i++) {
    PetscBool opt;

    PetscCall(PetscStrcmp((*args)[i], "-options_file", &opt));
    if (!opt) continue;
    PetscCall(PetNetGetDataFile((*args)[i + 1], sizeof(resolved[k]), resolved[k]));
    (*args)[++i] = resolved[k++];
  }
  PetscCall(PetscInitialize(argc, args, file, help));
  PetscCall(PetNetInitializePackage());
  PetscCall(PetNetBLASCheck(PETSC_COMM_WORLD)); /* the BLAS's kernels against the CPU: a warning once, -log_view's line */
  PetscFunctionReturn(0);
}
