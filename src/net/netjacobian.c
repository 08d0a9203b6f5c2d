/*
  Jacobians as MATSHELLs, for TS, TAO and SLEPc: MatMult applies the JVP, MatMultTranspose the VJP, at the
  linearization point of the last NetForward. The shells point at their Net without holding a reference
  (the Net owns them); they are rebuilt when the batch layout changes.

    NetGetJacobian        J   : dX (batch, input shape)  -> dY (batch, output shape)
    NetGetJacobianP       J_p : dtheta (parameter Vec)   -> dY
    NetGetLayerJacobian   J_l : node l's inputs (a join's put end to end on each rank) -> node l's output
    NetGetLayerJacobianP  J_pl: node l's own parameters (a distributed Vec of p_l entries) -> node l's output

  The per-node shells belong to the Net, like the workspace they read: a Layer knows nothing of the Net it is in.
  A shell that someone else still holds (a KSP, a TS, a petsc4py wrapper) when the Net resets or is destroyed is
  detached (NetDetachJacobian_Private()): it keeps its sizes, and applying it is an error, never a read of a freed Net.
*/
#include <petnet/private/netimpl.h>

/* A detached shell (its Net reset or destroyed while someone held it) refuses to apply */
static PetscErrorCode NetCheckAttached_Private(Mat J, Net net)
{
  PetscFunctionBegin;
  PetscCheck(net, PetscObjectComm((PetscObject)J), PETSC_ERR_ARG_WRONGSTATE, "This Jacobian belonged to a Net that was reset or destroyed since NetGetJacobian(): get the Jacobian again from the Net (and set it again in the solver that uses it)");
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_NetJacobian(Mat J, Vec dX, Vec dY)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetCheckAttached_Private(J, net));
  PetscCall(NetJVP(net, dX, NULL, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetJacobian(Mat J, Vec dY, Vec dX)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetCheckAttached_Private(J, net));
  PetscCall(NetBackward(net, dY, dX, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_NetJacobianP(Mat J, Vec dtheta, Vec dY)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetCheckAttached_Private(J, net));
  PetscCall(NetJVP(net, NULL, dtheta, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetJacobianP(Mat J, Vec dY, Vec G)
{
  Net net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetCheckAttached_Private(J, net));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckForwarded_Private(Net net, const char caller[])
{
  PetscFunctionBegin;
  PetscCheck(net && net->forwarded, net ? PetscObjectComm((PetscObject)net) : PETSC_COMM_SELF, PETSC_ERR_ORDER, "Call NetForward() on a batch before %s(): the Jacobian is taken at the last forward pass", caller);
  PetscFunctionReturn(0);
}

/*
  The diagonal blocks of J for a pointwise Net, one whose samples do not interact (no graph layer, no batchnorm on batch
  statistics, no windowed node of grid mode): J is then block diagonal, one (c x c) block per sample when in == out = c,
  and the c JVPs along E_j (1 at channel j of every sample, 0 elsewhere) give column j of every block at once:
  blocks[s][i][j] = (J E_j)[s][i] (row-major blocks, ns samples on this rank). Caller names the function for errors.
*/
static PetscErrorCode NetJacobianBlocks_Private(Net net, const char caller[], PetscInt *c_, PetscInt *ns, PetscScalar **blocks)
{
  PetscInt           c, cout, n;
  PetNetShape        out;
  Vec                E, T;
  PetscScalar       *e, *B;
  const PetscScalar *t;

  PetscFunctionBegin;
  PetscCall(NetCheckForwarded_Private(net, caller));
  PetscCall(PetNetShapeSize(&net->in, &c));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &cout));
  PetscCheck(c == cout && net->vlocal[0] == net->vlocal[net->nlayers], PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG,
             "%s of the Net's Jacobian: each sample has %" PetscInt_FMT " inputs and %" PetscInt_FMT " outputs; diagonal blocks need a Net that maps a sample's features to as many (a pointwise term of a PDE: as many outputs as the field's dof)",
             caller, c, cout);
  for (PetscInt k = 0; k < net->nlayers; k++) {
    char spec[256];

    if (!net->layers[k]->coupled && !net->nodes[k].sp) continue;
    PetscCall(LayerGetSpec(net->layers[k], sizeof(spec), spec));
    SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
            "%s of the Net's Jacobian: node %s (%s) makes each sample's output depend on other samples (%s), so the Jacobian is not block diagonal and its diagonal is not computed by probing; use a preconditioner that needs only "
            "MatMult (-pc_type none, or a preconditioner of your simulation's own Jacobian)",
            caller, net->nodes[k].name, spec, net->nodes[k].sp ? "a window of grid points" : "its neighbours through a graph operator, or batch statistics");
  }
  PetscCall(VecDuplicate(net->act[0], &E));
  PetscCall(VecDuplicate(net->act[net->nlayers], &T));
  PetscCall(VecGetLocalSize(E, &n));
  PetscCall(PetscMalloc1((size_t)n * c, &B));
  for (PetscInt j = 0; j < c; j++) {
    PetscCall(VecGetArrayWrite(E, &e));
    for (PetscInt i = 0; i < n; i++) e[i] = (i % c == j) ? 1.0 : 0.0;
    PetscCall(VecRestoreArrayWrite(E, &e));
    PetscCall(NetJVP(net, E, NULL, T));
    PetscCall(VecGetArrayRead(T, &t));
    for (PetscInt s = 0; s < n / c; s++)
      for (PetscInt i = 0; i < c; i++) B[(s * c + i) * c + j] = t[s * c + i];
    PetscCall(VecRestoreArrayRead(T, &t));
  }
  PetscCall(VecDestroy(&E));
  PetscCall(VecDestroy(&T));
  *c_     = c;
  *ns     = n / c;
  *blocks = B;
  PetscFunctionReturn(0);
}

/* The diagonal of J for a pointwise Net (its blocks' diagonals), so that -pc_type jacobi takes J, or a sum that
   contains it (a simulation's assembled Jacobian plus J in a MATCOMPOSITE) */
static PetscErrorCode MatGetDiagonal_NetJacobian(Mat J, Vec D)
{
  Net          net;
  PetscInt     c, ns;
  PetscScalar *B, *d;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &net));
  PetscCall(NetCheckAttached_Private(J, net));
  PetscCall(NetJacobianBlocks_Private(net, "MatGetDiagonal()", &c, &ns, &B));
  PetscCall(VecGetArrayWrite(D, &d));
  for (PetscInt s = 0; s < ns; s++)
    for (PetscInt i = 0; i < c; i++) d[s * c + i] = B[(s * c + i) * c + i];
  PetscCall(VecRestoreArrayWrite(D, &d));
  PetscCall(PetscFree(B));
  PetscFunctionReturn(0);
}

/*@
  NetCreateJacobianBlockDiagonal - the Jacobian of a pointwise Net at the last forward pass, assembled: a MATBAIJ of
  block size c with one c x c block per sample on the diagonal

  Collective

  Input Parameter:
. net - the Net, after NetForward(); its samples must not interact and have as many outputs as inputs (c)

  Output Parameter:
. B - the assembled Jacobian (destroy it with MatDestroy()); its rows are laid out like the Net's input Vec

  Notes:
  For a Net used as a pointwise term of a PDE (a learned reaction or closure at each grid point or mesh node), the
  Jacobian of the term is block diagonal, and this is it, exactly (c JVPs). Add it to the simulation's assembled
  Jacobian (MatAXPY() with DIFFERENT_NONZERO_PATTERN, or SUBSET_NONZERO_PATTERN when the simulation's matrix already
  holds the blocks) to get an assembled preconditioning matrix on which any PETSc preconditioner works (ILU, AMG,
  direct), while the operator stays the exact sum of the simulation's matrix and NetGetJacobian()'s shell. The shell
  itself supports MatGetDiagonal() (-pc_type jacobi).

  Level: intermediate

.seealso: `NetGetJacobian()`, `NetJVP()`, `MatAXPY()`
@*/
PetscErrorCode NetCreateJacobianBlockDiagonal(Net net, Mat *B)
{
  PetscInt     c, ns, n, N, rstart;
  PetscScalar *blocks;
  MPI_Comm     comm;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(B, 2);
  comm = PetscObjectComm((PetscObject)net);
  PetscCall(NetJacobianBlocks_Private(net, "NetCreateJacobianBlockDiagonal()", &c, &ns, &blocks));
  PetscCall(VecGetLocalSize(net->act[0], &n));
  PetscCall(VecGetSize(net->act[0], &N));
  PetscCall(VecGetOwnershipRange(net->act[0], &rstart, NULL));
  PetscCall(MatCreateBAIJ(comm, c, n, n, N, N, 1, NULL, 0, NULL, B));
  PetscCall(MatSetOption(*B, MAT_ROW_ORIENTED, PETSC_TRUE));
  for (PetscInt s = 0; s < ns; s++) {
    const PetscInt row = rstart / c + s;

    PetscCall(MatSetValuesBlocked(*B, 1, &row, 1, &row, blocks + (size_t)s * c * c, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*B, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscFree(blocks));
  PetscFunctionReturn(0);
}

/*@
  NetGetJacobian - the Jacobian of the Net's output with respect to its input at the last forward pass, a MATSHELL
  owned by the Net

  Collective

  Input Parameter:
. net - the Net, after NetForward()

  Output Parameter:
. J - the shell (do not destroy it): MatMult is NetJVP() with no parameter tangent (dY = J dX), MatMultTranspose is
      NetBackward() with no gradient (dX = J^T dY); rows laid out like the output batch, columns like the input batch

  Notes:
  J applies at the Net's latest forward pass whenever it is applied, so it follows the Net (e.g. inside a TS). The
  Net destroys it when the batch layout changes and in NetReset(): get it again after either. A solver (or a
  petsc4py wrapper) that still holds the old shell then holds a detached one: applying it raises an error that says
  so, never a read of freed memory.

  For a pointwise Net (its samples do not interact: no graph layer, no batchnorm in training mode, no windowed node of
  grid mode) with as many outputs as inputs per sample, such as a learned term of a PDE applied at each grid point,
  MatGetDiagonal() works too (c JVPs for c features per sample), so -pc_type jacobi takes J, or a sum that contains it.

  Level: intermediate

.seealso: `NetGetJacobianP()`, `NetGetLayerJacobian()`, `NetJVP()`, `NetBackward()`, `NetTestJacobian()`
@*/
PetscErrorCode NetGetJacobian(Net net, Mat *J)
{
  PetscInt m, n, M, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckForwarded_Private(net, "NetGetJacobian"));
  if (!net->J) {
    PetscCall(VecGetLocalSize(net->act[net->nlayers], &m));
    PetscCall(VecGetSize(net->act[net->nlayers], &M));
    PetscCall(VecGetLocalSize(net->act[0], &n));
    PetscCall(VecGetSize(net->act[0], &N));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), m, n, M, N, net, &net->J));
    PetscCall(MatShellSetOperation(net->J, MATOP_MULT, (void (*)(void))MatMult_NetJacobian));
    PetscCall(MatShellSetOperation(net->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetJacobian));
    PetscCall(MatShellSetOperation(net->J, MATOP_GET_DIAGONAL, (void (*)(void))MatGetDiagonal_NetJacobian));
    PetscCall(MatShellSetVecType(net->J, VECMPI));
  }
  *J = net->J;
  PetscFunctionReturn(0);
}

/*@
  NetGetJacobianP - the Jacobian of the Net's output with respect to its parameters at the last forward pass, a
  MATSHELL owned by the Net

  Collective

  Input Parameter:
. net - the Net, after NetForward()

  Output Parameter:
. J - the shell (do not destroy it): MatMult is NetJVP() with no input tangent (dY = J_theta dtheta),
      MatMultTranspose gives G = J_theta^T dY (overwritten, not accumulated); rows laid out like the output batch,
      columns like the parameter Vec (NetCreateParameterVec())

  Notes:
  As for NetGetJacobian(), J applies at the latest forward pass and is rebuilt after a change of batch layout or
  NetReset(). TSSetRHSJacobianP() and TAO consume it as is.

  Level: intermediate

.seealso: `NetGetJacobian()`, `NetGetLayerJacobianP()`, `NetBackward()`, `NetJVP()`
@*/
PetscErrorCode NetGetJacobianP(Net net, Mat *J)
{
  PetscInt m, n, M;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckForwarded_Private(net, "NetGetJacobianP"));
  if (!net->JP) {
    PetscCall(VecGetLocalSize(net->act[net->nlayers], &m));
    PetscCall(VecGetSize(net->act[net->nlayers], &M));
    PetscCall(VecGetLocalSize(net->theta, &n));
    PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), m, n, M, net->nparams, net, &net->JP));
    PetscCall(MatShellSetOperation(net->JP, MATOP_MULT, (void (*)(void))MatMult_NetJacobianP));
    PetscCall(MatShellSetOperation(net->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetJacobianP));
    PetscCall(MatShellSetVecType(net->JP, VECMPI));
  }
  *J = net->JP;
  PetscFunctionReturn(0);
}

/* The context of a node's shells: the Net and the node */
typedef struct {
  Net      net;
  PetscInt node;
} NetNodeShell;

static PetscErrorCode MatMult_LayerJacobian(Mat J, Vec dX, Vec dY)
{
  NetNodeShell *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetCheckAttached_Private(J, ctx->net));
  PetscCall(NetNodeJVP_Private(ctx->net, ctx->node, dX, NULL, dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_LayerJacobian(Mat J, Vec dY, Vec dX)
{
  NetNodeShell *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetCheckAttached_Private(J, ctx->net));
  PetscCall(NetNodeBackward_Private(ctx->net, ctx->node, dY, dX, NULL));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_LayerJacobianP(Mat J, Vec dtheta, Vec dY)
{
  NetNodeShell *ctx;
  Net           net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetCheckAttached_Private(J, ctx->net));
  net = ctx->net;
  PetscCall(MatMult(net->lbcast[ctx->node], dtheta, net->ltheta_rep[ctx->node]));
  PetscCall(NetNodeJVP_Private(net, ctx->node, NULL, net->ltheta_rep[ctx->node], dY));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_LayerJacobianP(Mat J, Vec dY, Vec G)
{
  NetNodeShell *ctx;
  Net           net;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(NetCheckAttached_Private(J, ctx->net));
  net = ctx->net;
  PetscCall(VecZeroEntries(net->ltheta_rep[ctx->node]));
  PetscCall(NetNodeBackward_Private(net, ctx->node, dY, NULL, net->ltheta_rep[ctx->node]));
  PetscCall(MatMultTranspose(net->lbcast[ctx->node], net->ltheta_rep[ctx->node], G));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_NetNodeShell(Mat J)
{
  NetNodeShell *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(J, &ctx));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetNodeShellCreate_Private(Net net, PetscInt l, PetscInt n, PetscInt N, PetscBool params, Mat *J)
{
  NetNodeShell  *ctx;
  const PetscInt m = NetValueEntries(net, l + 1, net->layers[l]->outsize), M = PETSC_DETERMINE; /* the node's output on this rank */

  PetscFunctionBegin;
  PetscCall(PetscNew(&ctx));
  ctx->net  = net;
  ctx->node = l;
  PetscCall(MatCreateShell(PetscObjectComm((PetscObject)net), m, n, M, N, ctx, J));
  PetscCall(MatShellSetOperation(*J, MATOP_MULT, params ? (void (*)(void))MatMult_LayerJacobianP : (void (*)(void))MatMult_LayerJacobian));
  PetscCall(MatShellSetOperation(*J, MATOP_MULT_TRANSPOSE, params ? (void (*)(void))MatMultTranspose_LayerJacobianP : (void (*)(void))MatMultTranspose_LayerJacobian));
  PetscCall(MatShellSetOperation(*J, MATOP_DESTROY, (void (*)(void))MatDestroy_NetNodeShell));
  PetscCall(MatShellSetVecType(*J, VECMPI));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetCheckLayer_Private(Net net, PetscInt l, const char caller[])
{
  PetscFunctionBegin;
  PetscCall(NetCheckForwarded_Private(net, caller));
  PetscCheck(l >= 0 && l < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "%s(): layer %" PetscInt_FMT " does not exist: the Net has %" PetscInt_FMT " layers", caller, l, net->nlayers);
  if (!net->LJ) PetscCall(PetscCalloc5(net->nlayers, &net->LJ, net->nlayers, &net->LJP, net->nlayers, &net->lbcast, net->nlayers, &net->ltheta, net->nlayers, &net->ltheta_rep));
  PetscFunctionReturn(0);
}

/*@
  NetGetLayerJacobian - the Jacobian of layer (node) l with respect to its input, at the last forward pass.

  Collective

  Input Parameters:
+ net - the Net, after NetForward()
- l   - the node, 0 <= l < NetGetNumLayers()

  Output Parameter:
. J - a MATSHELL owned by the Net (do not destroy it): MatMult is the node's JVP, MatMultTranspose its VJP

  Level: intermediate

  Note:
  The column space of a join's Jacobian (add, concat) holds its inputs end to end on each rank: this rank's part of
  input 0, then of input 1, ...

.seealso: `NetGetLayerJacobianP()`, `NetGetJacobian()`, `NetTestJacobian()`
@*/
PetscErrorCode NetGetLayerJacobian(Net net, PetscInt l, Mat *J)
{
  PetscInt n, N;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckLayer_Private(net, l, "NetGetLayerJacobian"));
  if (!net->LJ[l]) {
    n = 0; /* the node's inputs end to end on this rank */
    for (PetscInt i = 0; i < net->nodes[l].nin; i++) n += NetValueEntries(net, net->nodes[l].in[i] + 1, net->layers[l]->insizes[i]);
    N = PETSC_DETERMINE;
    PetscCall(NetNodeShellCreate_Private(net, l, n, N, PETSC_FALSE, &net->LJ[l]));
  }
  *J = net->LJ[l];
  PetscFunctionReturn(0);
}

/*@
  NetGetLayerJacobianP - the Jacobian of layer (node) l with respect to its own parameters, at the last forward pass.

  Collective

  Input Parameters:
+ net - the Net, after NetForward()
- l   - the node; it must have parameters

  Output Parameter:
. J - a MATSHELL owned by the Net; its column space is a distributed Vec of the node's p_l parameters (MatCreateVecs())

  Level: intermediate

.seealso: `NetGetLayerJacobian()`, `NetGetJacobianP()`, `NetGetLayerParameterRange()`
@*/
PetscErrorCode NetGetLayerJacobianP(Net net, PetscInt l, Mat *J)
{
  PetscInt n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCall(NetCheckLayer_Private(net, l, "NetGetLayerJacobianP"));
  PetscCheck(net->layers[l]->nparams > 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "Layer %" PetscInt_FMT " (%s, %s) has no parameters", l, net->nodes[l].name, ((PetscObject)net->layers[l])->type_name);
  if (!net->ltheta[l]) {
    PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)net), PETSC_DECIDE, net->layers[l]->nparams, &net->ltheta[l]));
    PetscCall(PetNetBroadcastCreate(net->ltheta[l], &net->lbcast[l], &net->ltheta_rep[l]));
  }
  if (!net->LJP[l]) {
    PetscCall(VecGetLocalSize(net->ltheta[l], &n));
    PetscCall(NetNodeShellCreate_Private(net, l, n, net->layers[l]->nparams, PETSC_TRUE, &net->LJP[l]));
  }
  *J = net->LJP[l];
  PetscFunctionReturn(0);
}

/* Drops the Net's reference to one of its shells (node: a per-node shell); a shell still held elsewhere is detached */
PetscErrorCode NetDetachJacobian_Private(Mat *J, PetscBool node)
{
  PetscInt refs;

  PetscFunctionBegin;
  if (!*J) PetscFunctionReturn(0);
  PetscCall(PetscObjectGetReference((PetscObject)*J, &refs));
  if (refs > 1) {
    if (node) {
      NetNodeShell *ctx;

      PetscCall(MatShellGetContext(*J, &ctx));
      ctx->net = NULL;
    } else
      PetscCall(MatShellSetContext(*J, NULL));
  }
  PetscCall(MatDestroy(J));
  PetscFunctionReturn(0);
}
