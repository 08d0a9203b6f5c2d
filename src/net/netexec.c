/*
  Executors: how a node runs over the ranks. The walk (netforward.c, netsecondorder.c) hands a node its arrays and
  calls its executor; the executor is chosen once, at set-up, from what the node is:

    plain    the layer's own kernels on this rank's samples (LayerForwardArrays(), or LayerForwardSingle() on float
             values), with the activation fused into its passes (netfuse.c)
    model    the weights split over a P_out x P_in grid of ranks (netmodel.c): the input broadcast along one axis, the
             local kernel, the output sum-reduced along the other, each movement an operator with its adjoint
    spatial  a node of a Net on a DMDA grid that reads a neighbourhood or changes the grid (netspatial.c): the halo
             exchange (adjoint: the halos added back) around a local copy of the layer on the rank's box
    spatial+model  a convolution of the grid with a partition: the spatial node's halo exchange in each group, then
             the model node's split of the channels over the groups (the ranks holding the same block in every group)
             with the box of each field as its sample
    sequence a node of a sequence-parallel Net (netsequence.c) that reads the Net's input or writes its output (the
             move between the public sample split and the token split, R and its adjoint R^T, around the plain
             kernels on the rank's tokens) or mixes tokens (position: the global token offset)

  Plain and spatial nodes compute in the store's element type (float for single and bfloat16: the spatial node's halo
  exchange, box and local kernels are float too; at bfloat16 an activation, a kind with bfloat16 kernels and a spatial
  window node read and write the stored bfloat16 values themselves, NetNodeStreamsBF16()); model-parallel nodes compute in double and the value store widens
  their inputs and rounds their outputs (netprecision.c), so every executor works at every precision. A new mode (a
  pipeline stage, a sub-graph group) is one more table here.

    tensor block  an elementwise node between the two dense nodes of a tensor-parallel MLP pair that keeps the column
             block (netmodel.c): a copy of its layer on the rank's columns of all samples of the group, no movement
*/
#include <petnet/private/netimpl.h>

/*
  A plain node whose kind has bfloat16 kernels (NetNode.bf16: maxpool; dense, conv2d and conv3d on oneDNN's
  bfloat16 matmuls and convolutions) runs them, a fused activation after it or before it included, on the stored values themselves
  (layerbf16.c). Another plain node streaming bfloat16 (NetNodeStreamsBF16(): an activation at -net_precision bfloat16): its stored values
  widened to float, the layer's float kernels, its outputs rounded back, one chunk of samples at a time. Its kernels act
  on each sample alone, so the bits are those of whole widened copies; the float buffers hold NET_BF16_CHUNK entries of
  the larger of its input and output.
*/
#define NET_BF16_CHUNK 65536

static void NetWidenBF16(PetscInt N, const uint16_t *b, float *f)
{
  for (PetscInt i = 0; i < N; i++) f[i] = PetNetBF16ToFloat(b[i]);
}

static void NetRoundBF16(PetscInt N, const float *f, uint16_t *b)
{
  for (PetscInt i = 0; i < N; i++) b[i] = PetNetFloatToBF16(f[i]);
}

/* the samples of a chunk, and the float buffers of node k's input and output for one */
static PetscErrorCode NetBF16Chunk(Layer layer, PetscInt *m)
{
  PetscFunctionBegin;
  *m = PetscMax(1, NET_BF16_CHUNK / PetscMax(1, PetscMax(layer->insize, layer->outsize)));
  PetscFunctionReturn(0);
}

/* y = f(x) */
static PetscErrorCode NetExecForward_PlainBF16(Layer layer, PetscInt n, const PetscScalar *th, const uint16_t *x, uint16_t *y)
{
  const PetscInt in = layer->insize, out = layer->outsize;
  PetscInt       m;
  float         *xf, *yf;

  PetscFunctionBegin;
  PetscCall(NetBF16Chunk(layer, &m));
  PetscCall(PetscMalloc2(m * in, &xf, m * out, &yf));
  for (PetscInt s0 = 0; s0 < n; s0 += m) {
    const PetscInt c     = PetscMin(m, n - s0);
    const float   *xs[1] = {xf};

    NetWidenBF16(c * in, x + (size_t)s0 * in, xf);
    PetscCall(LayerForwardSingle(layer, c, th, xs, yf));
    NetRoundBF16(c * out, yf, y + (size_t)s0 * out);
  }
  PetscCall(PetscFree2(xf, yf));
  PetscFunctionReturn(0);
}

/* dx = J^T dy (no parameters: nothing when dx is not asked for) */
static PetscErrorCode NetExecBackward_PlainBF16(Layer layer, PetscInt n, const PetscScalar *th, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx)
{
  const PetscInt in = layer->insize, out = layer->outsize;
  PetscInt       m;
  float         *xf, *yf, *dyf, *dxf;

  PetscFunctionBegin;
  if (!dx) PetscFunctionReturn(0);
  PetscCall(NetBF16Chunk(layer, &m));
  PetscCall(PetscMalloc4(m * in, &xf, m * out, &yf, m * out, &dyf, m * in, &dxf));
  for (PetscInt s0 = 0; s0 < n; s0 += m) {
    const PetscInt c     = PetscMin(m, n - s0);
    const float   *xs[1] = {xf};
    float         *ds[1] = {dxf};

    NetWidenBF16(c * in, x + (size_t)s0 * in, xf);
    NetWidenBF16(c * out, y + (size_t)s0 * out, yf);
    NetWidenBF16(c * out, dy + (size_t)s0 * out, dyf);
    PetscCall(LayerBackwardSingle(layer, c, th, xs, yf, dyf, ds, NULL));
    NetRoundBF16(c * in, dxf, dx + (size_t)s0 * in);
  }
  PetscCall(PetscFree4(xf, yf, dyf, dxf));
  PetscFunctionReturn(0);
}

/* dy = J dx (dx NULL: zero) */
static PetscErrorCode NetExecJVP_PlainBF16(Layer layer, PetscInt n, const PetscScalar *th, const uint16_t *x, const uint16_t *y, const uint16_t *dx, uint16_t *dy)
{
  const PetscInt in = layer->insize, out = layer->outsize;
  PetscInt       m;
  float         *xf, *yf, *dxf, *dyf;

  PetscFunctionBegin;
  PetscCall(NetBF16Chunk(layer, &m));
  PetscCall(PetscMalloc4(m * in, &xf, m * out, &yf, m * in, &dxf, m * out, &dyf));
  for (PetscInt s0 = 0; s0 < n; s0 += m) {
    const PetscInt c      = PetscMin(m, n - s0);
    const float   *xs[1]  = {xf};
    const float   *dxs[1] = {dx ? dxf : NULL};

    NetWidenBF16(c * in, x + (size_t)s0 * in, xf);
    NetWidenBF16(c * out, y + (size_t)s0 * out, yf);
    if (dx) NetWidenBF16(c * in, dx + (size_t)s0 * in, dxf);
    PetscCall(LayerJVPSingle(layer, c, th, xs, yf, dxs, NULL, dyf));
    NetRoundBF16(c * out, dyf, dy + (size_t)s0 * out);
  }
  PetscCall(PetscFree4(xf, yf, dxf, dyf));
  PetscFunctionReturn(0);
}

/* the plain executor on n rows (the sequence executor calls it on its token split, netsequence.c) */
PetscErrorCode NetExecPlainForward_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  if (t == NET_ELEM_BF16) { /* the kind's bfloat16 kernels with the activation fused after it, else streamed (NetNodeStreamsBF16(): not fused) */
    if (net->nodes[k].bf16)
      PetscCall(LayerForwardBF16(layer, net->nodes[k].fuseact >= 0 ? net->layers[net->nodes[k].fuseact] : NULL, n, th, (const uint16_t *)x[0], (uint16_t *)y));
    else
      PetscCall(NetExecForward_PlainBF16(layer, n, th, (const uint16_t *)x[0], (uint16_t *)y));
    PetscFunctionReturn(0);
  }
  if (net->nodes[k].fuseact >= 0) /* y = f(P(x)) in its pass (netfuse.c): the activation goes with the call */
    PetscCall(LayerForwardAct(layer, net->layers[net->nodes[k].fuseact], t == NET_ELEM_FLOAT ? PETSC_FLOAT : PETSC_SCALAR, n, th, x[0], y));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerForwardArrays(layer, n, th, (const PetscScalar *const *)x, (PetscScalar *)y));
  else
    PetscCall(LayerForwardSingle(layer, n, th, (const float *const *)x, (float *)y));
  PetscFunctionReturn(0);
}

PetscErrorCode NetExecPlainBackward_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  if (t == NET_ELEM_BF16 && net->nodes[k].bf16) /* with the activation before it when fused (mask) */
    PetscCall(LayerBackwardBF16(layer, mask >= 0 ? net->layers[mask] : NULL, n, th, (const uint16_t *)x[0], (const uint16_t *)y, (const uint16_t *)dy, (uint16_t *)dx[0], dth));
  else if (t == NET_ELEM_BF16)
    PetscCall(NetExecBackward_PlainBF16(layer, n, th, (const uint16_t *)x[0], (const uint16_t *)y, (const uint16_t *)dy, (uint16_t *)dx[0]));
  else if (mask >= 0) /* dx = f'(x) J^T dy in its pass (netfuse.c): the activation goes with the call */
    PetscCall(LayerBackwardMask(layer, net->layers[mask], t == NET_ELEM_FLOAT ? PETSC_FLOAT : PETSC_SCALAR, n, th, x[0], y, dy, dx[0], dth));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerBackwardArrays(layer, n, th, (const PetscScalar *const *)x, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *const *)dx, dth));
  else
    PetscCall(LayerBackwardSingle(layer, n, th, (const float *const *)x, (const float *)y, (const float *)dy, (float *const *)dx, dth));
  PetscFunctionReturn(0);
}

PetscErrorCode NetExecPlainJVP_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  Layer layer = net->layers[k];

  PetscFunctionBegin;
  if (t == NET_ELEM_BF16 && net->nodes[k].bf16)
    PetscCall(LayerJVPBF16(layer, n, th, (const uint16_t *)x[0], (const uint16_t *)y, dx ? (const uint16_t *)dx[0] : NULL, dth, (uint16_t *)dy));
  else if (t == NET_ELEM_BF16)
    PetscCall(NetExecJVP_PlainBF16(layer, n, th, (const uint16_t *)x[0], (const uint16_t *)y, dx ? (const uint16_t *)dx[0] : NULL, (uint16_t *)dy));
  else if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerJVPArrays(layer, n, th, (const PetscScalar *const *)x, (const PetscScalar *)y, (const PetscScalar *const *)dx, dth, (PetscScalar *)dy));
  else
    PetscCall(LayerJVPSingle(layer, n, th, (const float *const *)x, (const float *)y, (const float *const *)dx, dth, (float *)dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecForward_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetExecPlainForward_Private(net, k, NetNodeCount(net, k), t, th, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  PetscFunctionBegin;
  PetscCall(NetExecPlainBackward_Private(net, k, NetNodeCount(net, k), t, th, x, y, dy, dx, dth, mask));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_Plain(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  PetscCall(NetExecPlainJVP_Private(net, k, NetNodeCount(net, k), t, th, x, y, dx, dth, dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_Plain(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd,
                                              PetscScalar *hvk)
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

const NetExecOps NetExecPlain = {"plain", PETSC_TRUE, PETSC_TRUE, NetExecForward_Plain, NetExecBackward_Plain, NetExecJVP_Plain, NetExecSOBackward_Plain, NetExecView_Plain};

/* model-parallel nodes take one input */
static PetscErrorCode NetExecForward_Model(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetModelForward_Private(net, k, NetNodeCount(net, k), th, (const PetscScalar *)x[0], (PetscScalar *)y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Model(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
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

static PetscErrorCode NetExecSOBackward_Model(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd,
                                              PetscScalar *hvk)
{
  PetscFunctionBegin;
  PetscCall(NetModelSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecModel = {"model", PETSC_FALSE, PETSC_TRUE, NetExecForward_Model, NetExecBackward_Model, NetExecJVP_Model, NetExecSOBackward_Model, NetModelViewNode_Private};

static PetscErrorCode NetExecForward_Spatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialForward_Private(net, k, NetNodeCount(net, k), t, th, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_Spatial(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
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

static PetscErrorCode NetExecSOBackward_Spatial(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy, PetscScalar *dxd,
                                                PetscScalar *hvk)
{
  PetscFunctionBegin;
  if (net->layers[k]->sozero && net->nodes[k].nin > 1) PetscFunctionReturn(0); /* a spatial join (add, concat) is linear */
  PetscCall(NetSpatialSOBackward_Private(net, k, NetNodeCount(net, k), th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecSpatial = {"spatial", PETSC_TRUE, PETSC_FALSE, NetExecForward_Spatial, NetExecBackward_Spatial, NetExecJVP_Spatial, NetExecSOBackward_Spatial, NetSpatialViewNode_Private};

/*
  A convolution of the grid with a partition (netspatial.c around netmodel.c): the halo exchange in the group, the
  channels split over the groups. Double values, as a model-parallel node's.
*/
static PetscErrorCode NetExecForward_SpatialModel(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialModelForward_Private(net, k, th, (const PetscScalar *)x[0], (PetscScalar *)y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_SpatialModel(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialModelBackward_Private(net, k, th, (const PetscScalar *)x[0], (const PetscScalar *)dy, (PetscScalar *)dx[0], dth));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_SpatialModel(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialModelJVP_Private(net, k, th, (const PetscScalar *)x[0], dx ? (const PetscScalar *)dx[0] : NULL, dth, (PetscScalar *)dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_SpatialModel(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                     PetscScalar *dxd, PetscScalar *hvk)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialModelSOBackward_Private(net, k, th, x, xdot, thd, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

/* its grids (the spatial part) and its blocks of the weights (the model part) */
static PetscErrorCode NetExecView_SpatialModel(Net net, PetscInt k, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscCall(NetSpatialViewNode_Private(net, k, viewer));
  PetscCall(NetModelViewNode_Private(net, k, viewer));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecSpatialModel = {"spatial+model", PETSC_FALSE, PETSC_FALSE, NetExecForward_SpatialModel, NetExecBackward_SpatialModel, NetExecJVP_SpatialModel, NetExecSOBackward_SpatialModel, NetExecView_SpatialModel};

/* an elementwise node on the kept column block of a tensor-parallel MLP pair (netmodel.c): its layer's kernels on the
   block, no data movement; double values, as the model-parallel nodes around it */
static PetscErrorCode NetExecForward_TensorBlock(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  PetscFunctionBegin;
  PetscCall(NetModelBlockForward_Private(net, k, th, (const PetscScalar *)x[0], (PetscScalar *)y));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecBackward_TensorBlock(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth, PetscInt mask)
{
  PetscFunctionBegin;
  PetscCall(NetModelBlockBackward_Private(net, k, th, (const PetscScalar *)x[0], (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *)dx[0], dth));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecJVP_TensorBlock(Net net, PetscInt k, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  PetscCall(NetModelBlockJVP_Private(net, k, th, (const PetscScalar *)x[0], (const PetscScalar *)y, dx ? (const PetscScalar *)dx[0] : NULL, dth, (PetscScalar *)dy));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetExecSOBackward_TensorBlock(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                                    PetscScalar *dxd, PetscScalar *hvk)
{
  PetscFunctionBegin;
  if (net->layers[k]->sozero) PetscFunctionReturn(0); /* linear or piecewise linear: no curvature */
  PetscCall(NetModelBlockSOBackward_Private(net, k, th, x, y, xdot, thd, ydot, dy, dxd, hvk));
  PetscFunctionReturn(0);
}

const NetExecOps NetExecTensorBlock = {"tensor block", PETSC_FALSE, PETSC_TRUE, NetExecForward_TensorBlock, NetExecBackward_TensorBlock, NetExecJVP_TensorBlock, NetExecSOBackward_TensorBlock, NetModelBlockView_Private};

/* each node's executor, once the model-parallel (netmodel.c), spatial (netspatial.c) and sequence (netsequence.c)
   set-ups have said which nodes are theirs */
PetscErrorCode NetSetUpExecutors_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode *nd = &net->nodes[k];

    nd->exec = net->pl            ? (nd->mp   ? &NetExecPlacedSplit
                                     : nd->sq ? &NetExecPlacedSequence
                                     : nd->sp ? &NetExecPlacedSpatial
                                              : &NetExecPlaced)
               : nd->sq           ? &NetExecSequence
               : nd->mp && nd->sp ? &NetExecSpatialModel
               : nd->mp           ? &NetExecModel
               : nd->tblock       ? &NetExecTensorBlock
               : nd->sp           ? &NetExecSpatial
                                  : &NetExecPlain;
  }
  PetscFunctionReturn(0);
}
