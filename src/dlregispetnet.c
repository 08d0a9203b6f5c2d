/* The whole library at once: the top of the dependency chain sys <- layers <- net <- (loss, ts, optim, data) <- trainer. */
#include <petnet.h>

/*@C
  PetNetInitializePackage - initializes every PetNet package: Layer, Net, Loss, Dataset, PetNet's TAO types, the TS
  extensions and the Trainer. Idempotent. Each XxxCreate() initializes its own package, so this is needed only before
  using a registry directly, e.g. TaoSetType(tao, TAOADAM) on a Tao that no Trainer owns.

  Not collective

  Notes:
  The packages depend on each other one way: sys <- layers <- net <- (loss, ts, optim, data) <- trainer. It
  initializes the top, the Trainer package (TrainerInitializePackage(): Net, and with it Layer, then Loss, Dataset
  and PetNet's TAO types), and then the TS extensions (NetTSInitializePackage()), the one package no Trainer needs.
  The latter registers the ode layer kind, so call this before a layer list (-net_layers, -net_graph) or a saved Net
  that uses ode.

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
