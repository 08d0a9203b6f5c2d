/* The whole library at once: the top of the dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer. */
#include <petnet.h>

/*@C
  PetNetInitializePackage - initializes every PetNet package: Layer, Net, Loss, Dataset, PetNet's TAO types, the TS
  extensions and the Trainer. Idempotent. Each XxxCreate() initializes its own package, so this is needed only before
  using a registry directly, e.g. TaoSetType(tao, TAOADAM) on a Tao that no Trainer owns.

  Level: beginner

.seealso: `LayerInitializePackage()`, `NetInitializePackage()`, `LossInitializePackage()`,
          `DatasetInitializePackage()`, `PetNetTaoInitializePackage()`, `NetTSInitializePackage()`,
          `TrainerInitializePackage()`
@*/
PetscErrorCode PetNetInitializePackage(void)
{
  PetscFunctionBegin;
  PetscCall(TrainerInitializePackage());
  PetscCall(NetTSInitializePackage());
  PetscFunctionReturn(0);
}
