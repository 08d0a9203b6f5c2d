/* The parameters a rank holds, for the test programs that include petnet/private/netimpl.h (test_ranks, test_spatial). */
#pragma once

#include <petnet/private/netimpl.h>

/*
  What each rank keeps of the parameters (its slice of theta, the copy theta_rep, its gradient grad_rep and the JVP's
  direction dtheta_rep) over the parameters of the nodes it runs; lo and hi the smallest and largest over the ranks
  (0 on a rank that runs no node with parameters)
*/
static inline PetscErrorCode TestParametersHeld(Net net, PetscReal *lo, PetscReal *hi)
{
  MPI_Comm    comm    = PetscObjectComm((PetscObject)net);
  Vec         held[4] = {net->theta, net->theta_rep, net->grad_rep, net->dtheta_rep};
  PetscInt    first, nr, np, mine = 0, h = 0;
  PetscReal   r[2];
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    PetscCall(NetGetNodeRanks(net, k, &first, &nr));
    PetscCall(LayerGetNumParameters(net->layers[k], &np));
    if (rank >= first && rank < first + nr) mine += np;
  }
  for (PetscInt i = 0; i < 4; i++)
    if (held[i]) {
      PetscCall(VecGetLocalSize(held[i], &np));
      h += np;
    }
  r[0] = mine ? (PetscReal)h / (PetscReal)mine : 0;
  r[1] = -r[0];
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, r, 2, MPIU_REAL, MPIU_MAX, comm));
  *lo = -r[1];
  *hi = r[0];
  PetscFunctionReturn(0);
}
