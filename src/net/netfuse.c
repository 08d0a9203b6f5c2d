/*
  Fused passes: an activation done inside a neighbour's pass over memory instead of a pass of its own.

    forward   P -> R     y_P = f(P(x))   R's forward runs in P's output pass (dense: bias and f on each GEMM part's
                                         block of y; conv2d/conv3d: on each chunk; batchnorm: on each block of positions;
                                         in low precision dense, conv2d and conv3d, in float)
    backward  R -> C     dx_R = f'(y_R) C^T dy   C's backward applies R's derivative to the dx it writes (dense: each
                                         GEMM part's block of dx; maxpool: each sample after its scatter, also in single
                                         precision), and writes it where R's backward would have: R's backward is gone

  R is an activation whose kind provides activate/activatemask (relu), for which f(f(x)) = f(x) and f'(f(x)) = f'(x).
  So when R is fused into P, P's output value holds f(P(x)) and R's value is the same Vec (no copy, one activation
  less in memory): everything that reads R's input (its jvp, backward and the per-node Jacobians) reads f(P(x)) and
  gets the same derivatives, and P's own derivatives do not read P's output (dense, convolutions, batchnorm). The
  fused kernels do the very operations of the separate passes in the same order: the results are the same bits (up to
  the sign of a zero), at any thread count.

  Fused only where it is safe and pays: R has one input and no parameters; P feeds R alone (its value is no one else's
  input, nor the Net's output); C is R's only consumer, with one input; no model-parallel or grid-mode node is
  involved. NetSetFusion(net, PETSC_FALSE) (-net_fuse false) keeps every pass separate, to compare.
*/
#include <petnet/private/netimpl.h>

/* the one node that takes value R + 1 as an input, or -1 if none (or several) */
static PetscInt NetSoleConsumer_Private(Net net, PetscInt r)
{
  PetscInt c = -1;

  if (net->nodes[r].nuses != 1 || r == net->nlayers - 1) return -1;
  for (PetscInt k = r + 1; k < net->nlayers; k++)
    for (PetscInt i = 0; i < net->nodes[k].nin; i++)
      if (net->nodes[k].in[i] == r) {
        if (c >= 0) return -1;
        c = k;
      }
  return c;
}

/* the fusion plan (NetNode.fuseact, fusemask, fusedinto, fusedback), at NetSetUp() */
PetscErrorCode NetSetUpFusion_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) net->nodes[k].fuseact = net->nodes[k].fusemask = net->nodes[k].fusedinto = net->nodes[k].fusedback = -1;
  if (!net->fuse || net->grid || net->pl) PetscFunctionReturn(0); /* a placed node runs its own passes (netplace.c) */
  for (PetscInt r = 0; r < net->nlayers; r++) {
    NetNode *nr = &net->nodes[r];
    Layer    lr = net->layers[r];
    PetscInt p, c;

    if (!lr->ops->activate || !lr->ops->activatemask || nr->nin != 1 || lr->nparams || nr->mp || nr->sp) continue;
    p = nr->in[0];
    if (p != NET_INPUT && net->nodes[p].nuses == 1 && net->layers[p]->ops->forwardact && !net->nodes[p].mp && !net->nodes[p].sp && net->nodes[p].fusedinto < 0) {
      net->nodes[p].fuseact = r;
      nr->fusedinto         = p;
    }
    c = NetSoleConsumer_Private(net, r);
    if (c >= 0 && net->nodes[c].nin == 1 && net->layers[c]->ops->backwardmask && !net->nodes[c].mp && !net->nodes[c].sp && net->nodes[c].fusemask < 0) {
      net->nodes[c].fusemask = r;
      nr->fusedback          = c;
    }
  }
  /* In low precision (netprecision.c) an activation is fused into its producer's forward where both kinds can in float
     (forwardactsingle, activatesingle: dense, conv2d, conv3d -> relu); elsewhere it runs in place on the producer's
     value instead (the same memory saving, one pass more). Its backward is fused into its consumer's where both kinds
     can in float (backwardmasksingle, activatemasksingle: dense, maxpool after relu) */
  for (PetscInt k = 0; k < net->nlayers && net->precision != NET_PRECISION_DOUBLE; k++) {
    const PetscInt c = net->nodes[k].fusedback, r = net->nodes[k].fuseact;

    if (r >= 0 && (!net->layers[k]->ops->forwardactsingle || !net->layers[r]->ops->activatesingle)) net->nodes[k].fuseact = -1;
    if (c >= 0 && (!net->layers[c]->ops->backwardmasksingle || !net->layers[k]->ops->activatemasksingle)) net->nodes[k].fusedback = net->nodes[c].fusemask = -1;
  }
  PetscFunctionReturn(0);
}

/* after the workspace is built: the value of an activation fused into its producer is the producer's value */
PetscErrorCode NetFuseWorkspace_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt r = 0; r < net->nlayers; r++) {
    const PetscInt p = net->nodes[r].fusedinto;

    if (p < 0) continue;
    PetscCall(PetscObjectReference((PetscObject)net->act[p + 1]));
    PetscCall(VecDestroy(&net->act[r + 1]));
    net->act[r + 1] = net->act[p + 1];
  }
  PetscFunctionReturn(0);
}

/* NetView(): under an activation node, where its passes went */
PetscErrorCode NetFuseViewNode_Private(Net net, PetscInt k, PetscViewer viewer)
{
  const NetNode *nd       = &net->nodes[k];
  char           fwd[128] = "", bwd[128] = "";

  PetscFunctionBegin;
  if (nd->fusedinto < 0 && nd->fusedback < 0) PetscFunctionReturn(0);
  if (nd->fusedinto >= 0 && net->nodes[nd->fusedinto].fuseact != k)
    PetscCall(PetscSNPrintf(fwd, sizeof(fwd), "forward in place on the value of %s (%s)", net->nodes[nd->fusedinto].name, ((PetscObject)net->layers[nd->fusedinto])->type_name));
  else if (nd->fusedinto >= 0)
    PetscCall(PetscSNPrintf(fwd, sizeof(fwd), "forward in the output pass of %s (%s)", net->nodes[nd->fusedinto].name, ((PetscObject)net->layers[nd->fusedinto])->type_name));
  if (nd->fusedback >= 0) PetscCall(PetscSNPrintf(bwd, sizeof(bwd), "backward in the dx pass of %s (%s)", net->nodes[nd->fusedback].name, ((PetscObject)net->layers[nd->fusedback])->type_name));
  PetscCall(PetscViewerASCIIPrintf(viewer, "       fused: %s%s%s\n", fwd, fwd[0] && bwd[0] ? ", " : "", bwd));
  PetscFunctionReturn(0);
}

/*@
  NetSetFusion - chooses whether a Net fuses activations into the passes of their neighbours (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ net  - the Net
- fuse - `PETSC_TRUE` to fuse, `PETSC_FALSE` to run every layer's pass on its own

  Options Database Key:
. -net_fuse <bool> - the same from the options (NetSetFromOptions())

  Notes:
  A relu after a dense, conv2d, conv3d or batchnorm layer is applied in that layer's output pass (with the bias), and a
  relu before a dense or maxpool layer has its derivative applied in that layer's backward pass: one pass over the
  activations less each. Fused and separate passes give the same results (the same operations in the same order), and
  NetView() shows what was fused. Only where the activation's value feeds one node and its input comes from one node;
  never in grid mode or around model-parallel nodes. Changing it after NetSetUp() forgets the last forward pass.

  Level: intermediate

.seealso: `NetGetFusion()`, `NetView()`, `NetForward()`, `NetBackward()`
@*/
PetscErrorCode NetSetFusion(Net net, PetscBool fuse)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveBool(net, fuse, 2);
  if (fuse == net->fuse) PetscFunctionReturn(0);
  net->fuse = fuse;
  if (net->setupcalled) {
    PetscCall(NetResetWorkspace_Private(net)); /* the values of fused activations are shared Vecs: rebuild them */
    PetscCall(NetSetUpFusion_Private(net));
  }
  PetscFunctionReturn(0);
}

/*@
  NetGetFusion - whether a Net fuses activations into the passes of their neighbours

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. fuse - `PETSC_TRUE` if it fuses (NetSetFusion())

  Level: intermediate

.seealso: `NetSetFusion()`
@*/
PetscErrorCode NetGetFusion(Net net, PetscBool *fuse)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidBoolPointer(fuse, 2);
  *fuse = net->fuse;
  PetscFunctionReturn(0);
}
