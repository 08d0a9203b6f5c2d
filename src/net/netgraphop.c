/* The sparse operator of a Net's graph layers (gcn, sage) and the mesh of its mpnn layers: one call for all of them. */
#include <petnet/private/netimpl.h>

/*@
  NetSetGraphOperator - gives every graph layer (gcn, sage) of a Net the same sparse operator A

  Collective

  Input Parameters:
+ net - the Net
- A   - an assembled square AIJ matrix (MATSEQAIJ or MATMPIAIJ) on the Net's communicator, rows = the graph's nodes,
        equal local row and column sizes (see LayerGraphSetOperator())

  Notes:
  A is referenced by each graph layer, not copied. The Net's samples are then the nodes of A: create the batch with
  NetCreateVecs(net, m, &X, &Y), m from MatGetLocalSize(A, &m, NULL), node i's features being sample i (or k copies of
  every node, NetCreateVecs(net, k m, ...) in [node][copy] order, the same k on every rank: A (x) I_k). A graph layer
  couples its samples, so such a Net takes the whole graph at once, laid out like A's rows: a batch split into
  mini-batches or chunks (the Trainer's mini-batch mode, -trainer_eval_batch_size below a rank's node count,
  -trainer_hessian_chunk) does not match A's rows and is refused with an error naming both sizes.

  The layers may be set up before (NetSetUp(), NetLoad()): their shapes and parameters do not depend on A. Setting A
  again, or another A (e.g. the same network on another mesh), keeps the parameters; the Net must then run a forward
  pass before its derivatives. A layer of a Net that should use its own operator gets it with
  LayerGraphSetOperator(), from NetGetLayer(). Layers inside an ode layer's inner Net are not reached.

  Level: intermediate

.seealso: `LayerGraphSetOperator()`, `LayerGraphGetOperator()`, `NetCreateVecs()`, `NetSetLayers()`
@*/
PetscErrorCode NetSetGraphOperator(Net net, Mat A)
{
  PetscInt count = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(A, MAT_CLASSID, 2);
  PetscCheckSameComm(net, 1, A, 2);
  for (PetscInt k = 0; k < net->nlayers; k++) {
    Mat B;

    PetscCall(LayerGraphSetOperator(net->layers[k], A));
    PetscCall(LayerGraphGetOperator(net->layers[k], &B));
    if (B) count++;
  }
  PetscCheck(count, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "NetSetGraphOperator(): the Net has no graph layer (gcn, sage) to take the operator: set its layers first (NetSetLayers(), -net_layers, e.g. gcn:16,relu,gcn:4)");
  net->forwarded = PETSC_FALSE; /* the last forward pass was with the old operator */
  PetscFunctionReturn(0);
}

/*@
  NetSetMeshDM - gives every mesh message-passing layer (mpnn) of a Net the same DMPlex mesh

  Collective

  Input Parameters:
+ net - the Net
- dm  - an interpolated DMPlex with coordinates on the Net's communicator, distributed when there is more than one rank
        (see LayerMeshSetDM())

  Notes:
  dm is referenced by each mpnn layer, not copied. The Net's samples are then the mesh's vertices: on each rank its
  owned vertices in the DM's global order, so create the batch with NetCreateVecs(net, m, &X, &Y), m the local size of
  a global Vec of a section with one dof per vertex (vertex i of that Vec is sample i), or S m for a batch of S fields on
  the mesh ([copy][vertex][channel]). Like the graph layers, such a Net takes the whole mesh at once: mini-batches or
  chunks of the vertices are refused with an error naming both sizes.

  The layers may be set up before (NetSetUp(), NetLoad()). Setting another mesh (e.g. the same network on a finer
  mesh) keeps the parameters; the Net must then run a forward pass before its derivatives. Layers inside an ode
  layer's inner Net are not reached.

  Level: intermediate

.seealso: `LayerMeshSetDM()`, `LayerMeshGetDM()`, `NetSetGraphOperator()`, `NetCreateVecs()`
@*/
PetscErrorCode NetSetMeshDM(Net net, DM dm)
{
  PetscInt count = 0;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  for (PetscInt k = 0; k < net->nlayers; k++) {
    DM d;

    PetscCall(LayerMeshSetDM(net->layers[k], dm));
    PetscCall(LayerMeshGetDM(net->layers[k], &d));
    if (d) count++;
  }
  PetscCheck(count, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
             "NetSetMeshDM(): the Net has no mesh message-passing layer (mpnn) to take the mesh: set its layers first (NetSetLayers(), -net_layers, e.g. dense:8,tanh,mpnn:8,tanh,dense:1)");
  net->forwarded = PETSC_FALSE; /* the last forward pass was with the old mesh */
  PetscFunctionReturn(0);
}
