/*
  Model-parallel nodes: a dense or conv2d node whose weights are split over a P_out x P_in grid of ranks.
  (Placeholder until the model-parallel layers land: every entry point refuses.)
*/
#include <petnet/private/netimpl.h>

/* Decides whether node k is model parallel; if so sets its mp, nplocal and runs */
PetscErrorCode NetModelSetUpNode_Private(Net net, PetscInt k)
{
  PetscFunctionBegin;
  if (net->parallel != NET_PARALLEL_MODEL || !net->layers[k]->nparams) PetscFunctionReturn(0);
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s: model-parallel layers are not available yet", net->nodes[k].name);
}

PetscErrorCode NetModelDestroyNode_Private(Net net, PetscInt k)
{
  PetscFunctionBegin;
  PetscFunctionReturn(0);
}

PetscErrorCode NetModelForward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s: model-parallel layers are not available yet", net->nodes[k].name);
}

PetscErrorCode NetModelBackward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth)
{
  PetscFunctionBegin;
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s: model-parallel layers are not available yet", net->nodes[k].name);
}

PetscErrorCode NetModelJVP_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy)
{
  PetscFunctionBegin;
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s: model-parallel layers are not available yet", net->nodes[k].name);
}

PetscErrorCode NetModelSOBackward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thdot, const PetscScalar *ydot, const PetscScalar *dy,
                                          PetscScalar *dxdot, PetscScalar *dthdot)
{
  PetscFunctionBegin;
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "Node %s: model-parallel layers have no exact Hessian-vector products: use the Gauss-Newton operator (-trainer_hessian gn)", net->nodes[k].name);
}
