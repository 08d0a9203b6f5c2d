/*
  Executors: how a node runs over the ranks. The walk (netforward.c, netsecondorder.c) hands a node its arrays and
  calls its executor; the executor is chosen once, at set-up, from what the node is:

    plain    the layer's own kernels on this rank's samples (LayerForwardArrays(), or LayerForwardSingle() on float
             values), with the activation fused into its passes (netfuse.c)
    model    the weights split over a P_out x P_in grid of ranks (netmodel.c): the input broadcast along one axis, the
             local kernel, the output sum-reduced along the other, each movement an operator with its adjoint
    spatial  a node of a Net on a DMDA grid that reads a neighbourhood or changes the grid (netspatial.c): the halo
             exchange (adjoint: the halos added back) around a local copy of the layer on the rank's box

  Plain and spatial nodes compute in the store's element type (float for single and bfloat16: the spatial node's halo
  exchange, box and local kernels are float too); model-parallel nodes compute in double and the value store widens
  their inputs and rounds their outputs (netprecision.c), so every executor works at every precision. A new mode (a
  pipeline stage, a sub-graph group) is one more table here.
*/
#include <petnet/private/netimpl.h>

static PetscErrorCode NetExecForward_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  layer->fuseact = net->nodes[k].fuseact >= 0 ? net->layers[net->nodes[k].fuseact] : NULL; /* y = f(P(x)) in its pass */
  if (t == NET_ELEM_DOUBLE) PetscCall(LayerForwardArrays(layer, NetNodeCount(net, k), th, (const PetscScalar *const *)x, (PetscScalar *)y));
  else PetscCall(LayerForwardSingle(layer, NetNodeCount(net, k), th, (const float *const *)x, (float *)y));
  layer->fuseact = NULL;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  if (t == NET_ELEM_DOUBLE) PetscCall(LayerBackwardArrays(layer, NetNodeCount(net, k), th, (const PetscScalar *const *)x, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *const *)dx, dth));
  else PetscCall(LayerBackwardSingle(layer, NetNodeCount(net, k), th, (const float *const *)x, (const float *)y, (const float *)dy, (float *const *)dx, dth));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  if (t == NET_ELEM_DOUBLE) PetscCall(LayerJVPArrays(layer, NetNodeCount(net, k), th, (const PetscScalar *const *)x, (const PetscScalar *)y, (const PetscScalar *const *)dx, dth, (PetscScalar *)dy));
  else PetscCall(LayerJVPSingle(layer, NetNodeCount(net, k), th, (const float *const *)x, (const float *)y, (const float *const *)dx, dth, (float *)dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_Plain(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd, PetscScalar *hvk)
{
  PetscFunctionBegin;
  if (net->layers[k]->sozero) PetscFunctionReturn(0); /* linear or piecewise linear: no curvature */
  PetscCall(LayerSOBackwardArray(net->layers[k], NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecView_Plain(Net net, PetscInt k, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscFunctionReturn(0);
}

const NetExecOps NetExecPlain = {"plain", PETSC_TRUE, NetExecForward_Plain, NetExecBackward_Plain, NetExecJVP_Plain, NetExecSOBackward_Plain, NetExecView_Plain};

/* model-parallel nodes take one input */
static PetscErrorCode NetExecForward_Model(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetModelForward_Private(net, k, NetNodeCount(net, k), th, (const PetscScalar *)x[0], (PetscScalar *)y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Model(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth)
{
  PetscFunctionBegin;
  PetscCall(NetModelBackward_Private(net, k, NetNodeCount(net, k), th, (const PetscScalar *)x[0], (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *)dx[0], dth));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_Model(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  PetscCall(NetModelJVP_Private(net, k, NetNodeCount(net, k), th, (const PetscScalar *)x[0], (const PetscScalar *)y, (const PetscScalar *)dx[0], dth, (PetscScalar *)dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_Model(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd, PetscScalar *hvk)
{
  PetscFunctionBegin;
  PetscCall(NetModelSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecModel = {"model", PETSC_FALSE, NetExecForward_Model, NetExecBackward_Model, NetExecJVP_Model, NetExecSOBackward_Model, NetModelViewNode_Private};

static PetscErrorCode NetExecForward_Spatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialForward_Private(net, k, NetNodeCount(net, k), t, th, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Spatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialBackward_Private(net, k, NetNodeCount(net, k), t, th, x, y, dy, dx, dth));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_Spatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialJVP_Private(net, k, NetNodeCount(net, k), t, th, x, y, dx, dth, dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_Spatial(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd, PetscScalar *hvk)
{
  PetscFunctionBegin;
  if (net->layers[k]->sozero && net->nodes[k].nin > 1) PetscFunctionReturn(0); /* a spatial join (add, concat) is linear */
  PetscCall(NetSpatialSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecSpatial = {"spatial", PETSC_TRUE, NetExecForward_Spatial, NetExecBackward_Spatial, NetExecJVP_Spatial, NetExecSOBackward_Spatial, NetSpatialViewNode_Private};

/* each node's executor, once the model-parallel (netmodel.c) and spatial (netspatial.c) set-ups have said which
   nodes are theirs */
PetscErrorCode NetSetUpExecutors_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode *nd = &net->nodes[k];

    nd->exec = nd->mp ? &NetExecModel : nd->sp ? &NetExecSpatial : &NetExecPlain;
  }
  PetscFunctionReturn(0);
}
