/*
  Graph layers: node features mixed by a user's sparse operator A (an assembled AIJ Mat, MATSEQAIJ or MATMPIAIJ, whose
  rows are the graph's nodes; e.g. a normalised adjacency or a mesh Laplacian), applied by PETSc itself.

    gcn:C    Y = A X Wn^T + b                   (PyTorch Geometric's GCNConv: "lin.weight", "bias")
    sage:C   Y = X Ws^T + (A X) Wn^T + b        (SAGEConv: "lin_r.weight" on the node, "lin_l.weight" and "lin_l.bias"
                                                 on the aggregation A X)

  Layout: a sample is a node, its features channels-last, and the local batch is A's local rows, in A's order, or k
  copies of each node ([node][copy], e.g. k independent simulations on one mesh; the same k on every rank):
    x      [m][k][in]   m = A's local rows on this rank (the input's features, flattened); n = k m samples
    y      [m][k][out]
    Ws, Wn [out][in]    row-major, as PyTorch's Linear.weight
    theta  = [Ws, Wn, b] for sage, [Wn, b] for gcn (b absent with :bias=0)
  A acts on [node][copy][channel] data directly through MATMAIJ (MatCreateMAIJ(A, k in)): Z = A X is one MatMult of
  the interlaced vector, its ghost exchange A's own VecScatter, and A^T one MatMultTranspose (the reverse scatter,
  adding). The copies never mix: A (x) I_k.

  In column-major BLAS terms (as dense.c) X and Z are (in x n), Wc = W^T (in x out), Y (out x n):
    forward   Z  = A X                       MatMult, kept for the derivatives
              Y  = Wnc^T Z [+ Wsc^T X] + b 1^T          dgemm('T','N', out, m, in)
    backward  T  = Wnc dY                    dgemm('N','N', in, m, out)
              dX = A^T T [+ Wsc dY]          MatMultTranspose
              dWnc += Z dY^T [dWsc += X dY^T]           dgemm('N','T', in, out, m)   (accumulate)
              db  += dY 1
    jvp       dY = Wnc^T (A dX) [+ Wsc^T dX] + dWnc^T Z [+ dWsc^T X] + db 1^T
    sobackward  (backward is bilinear in (W, X) and dY; the bias drops out)
              dxdot  += A^T (Wndot dY) [+ Wsdot dY]
              dWndot += (A xdot) dY^T [dWsdot += xdot dY^T]

  The layer couples samples, so its kernels are collective over A's communicator (layer->collective): every rank
  enters every call, and the ranks agree with one MPI_Allreduce on which products anyone asked for (a rank without
  nodes passes NULL arrays and cannot tell).
*/
#include <petnet/private/layerimpl.h>
#include "../../interface/layergemm.h"

typedef struct {
  PetscInt      nout;
  PetscBool     bias, self; /* self: the sage kind's X Ws^T term */
  LayerInitType init;
  PetscReal     initstd;

  Mat              A;         /* the user's operator, referenced (LayerGraphSetOperator()) */
  Mat              maij;      /* A on [node][in] data; made at the first forward, again when A changes */
  PetscObjectState astate;    /* A's state when maij was made */
  Vec              vc, vr;    /* arrays placed in maij's column and row layouts */
  PetscInt         m, k, n;   /* A's local rows, the copies of each node, the local batch n = k m */
  PetscScalar     *z, *t, *s; /* [n][in]: A X of the last forward; scratch */
  PetscBool        forwarded; /* z belongs to the current operator */
} Layer_Graph;

/* Offsets of the weights in theta: Ws (sage only), Wn, b */
static void GraphOffsets(Layer layer, PetscInt *ws, PetscInt *wn, PetscInt *b)
{
  Layer_Graph   *g  = (Layer_Graph *)layer->data;
  const PetscInt nw = layer->insize * g->nout;

  *ws = 0;
  *wn = g->self ? nw : 0;
  *b  = *wn + nw;
}

/* "gcn layer 3 (gcn:16)" for messages */
static PetscErrorCode GraphName(Layer layer, size_t len, char name[])
{
  char spec[256];

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  PetscCall(PetscSNPrintf(name, len, "%s layer %" PetscInt_FMT " (%s)", ((PetscObject)layer)->type_name, layer->index, spec));
  PetscFunctionReturn(0);
}

static PetscErrorCode GraphResetOperatorState(Layer layer)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;

  PetscFunctionBegin;
  PetscCall(MatDestroy(&g->maij));
  PetscCall(VecDestroy(&g->vc));
  PetscCall(VecDestroy(&g->vr));
  PetscCall(PetscFree3(g->z, g->t, g->s));
  g->m         = 0;
  g->k         = 0;
  g->n         = 0;
  g->forwarded = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*
  At forward: the operator exists, the local batch n is k times A's local rows m with the same k on every rank (one
  collective check that names the first rank that differs), and maij is current (made again when A's state moved, new
  values or a new pattern, or when k changed).
*/
static PetscErrorCode GraphPrepare(Layer layer, PetscInt n)
{
  Layer_Graph     *g    = (Layer_Graph *)layer->data;
  MPI_Comm         comm = PetscObjectComm((PetscObject)layer);
  PetscObjectState state;
  PetscMPIInt      rank, size;
  PetscInt         m, k, in = layer->insize, flags[4], all[4];
  char             name[300];

  PetscFunctionBegin;
  PetscCall(GraphName(layer, sizeof(name), name));
  PetscCheck(g->A, comm, PETSC_ERR_ORDER, "%s has no operator: give it the graph's sparse matrix with LayerGraphSetOperator(layer, A), or NetSetGraphOperator(net, A) for every graph layer of a Net, before the forward pass", name);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(MatGetLocalSize(g->A, &m, NULL));
  PetscCall(PetscObjectStateGet((PetscObject)g->A, &state));
  k        = m ? n / m : 0;                             /* a rank without nodes cannot tell k */
  flags[0] = (m ? (n % m || !k) : n) ? size - rank : 0; /* the largest names the lowest rank */
  flags[1] = k;
  flags[2] = m ? -k : PETSC_MIN_INT;
  flags[3] = (!g->maij || state != g->astate) ? 1 : 0;
  PetscCall(MPIU_Allreduce(flags, all, 4, MPIU_INT, MPI_MAX, comm));
  if (all[0]) {
    PetscInt nm[2] = {n, m}, nall, M;

    PetscCallMPI(MPI_Bcast(nm, 2, MPIU_INT, (PetscMPIInt)(size - all[0]), comm));
    PetscCall(MPIU_Allreduce(&n, &nall, 1, MPIU_INT, MPI_SUM, comm)); /* and the totals: a wrong node count, or only a wrong layout */
    PetscCall(MatGetSize(g->A, &M, NULL));
    SETERRQ(comm, PETSC_ERR_ARG_SIZ,
            "%s: the local batch on rank %d has %" PetscInt_FMT " samples, but the layer's operator A has %" PetscInt_FMT " local rows there (in all: %" PetscInt_FMT " samples, %" PetscInt_FMT
            " nodes of A): a graph layer's samples are the nodes of A (or k copies of each, [node][copy]), so the Net's input must be laid out like A's rows on every rank (NetCreateVecs(net, m, ...) with m from MatGetLocalSize(A, &m, NULL), or k "
            "m); mini-batches or chunks of the nodes "
            "cannot be used",
            name, (int)(size - all[0]), nm[0], nm[1], nall, M);
  }
  k = all[1] ? all[1] : 1;
  PetscCheck(all[1] == -all[2] || !all[1], comm, PETSC_ERR_ARG_SIZ,
             "%s: the local batches hold %" PetscInt_FMT " copies of each node of the operator A on some ranks and %" PetscInt_FMT " on others: give every rank the same number of copies per node", name, -all[2], all[1]);
  PetscCheck((PetscInt64)n * in <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "%s: a local batch of %" PetscInt_FMT " samples of %" PetscInt_FMT " features is more than a PetscInt indexes: use more ranks", name, n, in);
  if (all[3] || k != g->k) {
    PetscCall(GraphResetOperatorState(layer));
    PetscCall(MatCreateMAIJ(g->A, k * in, &g->maij));
    PetscCall(MatCreateVecs(g->maij, &g->vc, &g->vr));
    PetscCall(PetscMalloc3(n * in, &g->z, n * in, &g->t, n * in, &g->s));
    g->m = m;
    g->k = k;
    g->n = n;
    PetscCall(PetscObjectStateGet((PetscObject)g->A, &g->astate));
  }
  PetscFunctionReturn(0);
}

/*
  Derivatives: after a forward with the current operator. flags[] (local requests, e.g. "dx wanted") become the
  requests of any rank, in the same MPI_Allreduce that checks A is unchanged on every rank.
*/
static PetscErrorCode GraphAgree(Layer layer, PetscInt n, const char what[], PetscInt nflags, PetscBool flags[])
{
  Layer_Graph     *g      = (Layer_Graph *)layer->data;
  MPI_Comm         comm   = PetscObjectComm((PetscObject)layer);
  PetscObjectState state  = 0;
  PetscMPIInt      loc[4] = {0, 0, 0, 0}, all[4];
  char             name[300];

  PetscFunctionBegin;
  if (g->A) PetscCall(PetscObjectStateGet((PetscObject)g->A, &state));
  loc[0] = (!g->forwarded || !g->A || state != g->astate || n != g->n) ? 1 : 0;
  for (PetscInt i = 0; i < nflags; i++) loc[i + 1] = flags[i] ? 1 : 0;
  PetscCall(MPIU_Allreduce(loc, all, (PetscMPIInt)(nflags + 1), MPI_INT, MPI_MAX, comm));
  if (all[0]) {
    PetscCall(GraphName(layer, sizeof(name), name));
    SETERRQ(comm, PETSC_ERR_ORDER, "%s: its %s is taken at the last forward pass, but %s: call the forward pass again", name, what,
            !g->A ? "it has no operator" : (!g->forwarded ? "there is none with its current operator" : (n != g->n ? "that pass had a different batch" : "its operator A changed since (new values or a new operator)")));
  }
  for (PetscInt i = 0; i < nflags; i++) flags[i] = all[i + 1] ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* out = A in (trans: A^T in), or out += ... (add), on [m][in] arrays; collective */
static PetscErrorCode GraphApply(Layer layer, PetscBool trans, PetscBool add, const PetscScalar *in, PetscScalar *out)
{
  Layer_Graph *g   = (Layer_Graph *)layer->data;
  Vec          vin = trans ? g->vr : g->vc, vout = trans ? g->vc : g->vr;

  PetscFunctionBegin;
  PetscCall(VecPlaceArray(vin, in));
  PetscCall(VecPlaceArray(vout, out));
  if (trans) {
    if (add)
      PetscCall(MatMultTransposeAdd(g->maij, vin, vout, vout));
    else
      PetscCall(MatMultTranspose(g->maij, vin, vout));
  } else {
    if (add)
      PetscCall(MatMultAdd(g->maij, vin, vout, vout));
    else
      PetscCall(MatMult(g->maij, vin, vout));
  }
  PetscCall(VecResetArray(vin));
  PetscCall(VecResetArray(vout));
  PetscFunctionReturn(0);
}

/* C (rows x m) = alpha op(W) B + beta C for the weight blocks: C = W^T B (trans "T": out x m from in x m) or W B ("N") */
static PetscErrorCode GraphGemm(Layer layer, const char *trans, PetscInt m, const PetscScalar *W, const PetscScalar *B, PetscScalar beta, PetscScalar *C)
{
  const PetscInt in = layer->insize, out = ((Layer_Graph *)layer->data)->nout;

  PetscFunctionBegin;
  if (!m) PetscFunctionReturn(0);
  if (trans[0] == 'T')
    PetscCall(LayerGemm(PETSC_FALSE, 'T', 'N', out, m, in, W, in, B, in, beta, C, out, NULL));
  else
    PetscCall(LayerGemm(PETSC_FALSE, 'N', 'N', in, m, out, W, in, B, out, beta, C, in, NULL));
  PetscCall(PetscLogFlops(2.0 * m * in * out));
  PetscFunctionReturn(0);
}

/* dWc += U dY^T: (in x out) += (in x m) (out x m)^T */
static PetscErrorCode GraphWeightGradient(Layer layer, PetscInt m, const PetscScalar *U, const PetscScalar *dy, PetscScalar *dW)
{
  const PetscInt in = layer->insize, out = ((Layer_Graph *)layer->data)->nout;

  PetscFunctionBegin;
  if (!m) PetscFunctionReturn(0);
  PetscCall(LayerGemm(PETSC_FALSE, 'N', 'T', in, out, m, U, in, dy, out, 1.0, dW, in, NULL));
  PetscCall(PetscLogFlops(2.0 * m * in * out));
  PetscFunctionReturn(0);
}

static PetscErrorCode GraphAddBias(Layer layer, PetscInt m, const PetscScalar *b, PetscScalar *y)
{
  const PetscInt out = layer->outsize;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < m; i++)
    for (PetscInt o = 0; o < out; o++) y[i * out + o] += b[o];
  PetscCall(PetscLogFlops(1.0 * m * out));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetUp_Graph(Layer layer)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;
  PetscInt     in;
  char         name[300];

  PetscFunctionBegin;
  if (g->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "%s layer %" PetscInt_FMT " has no number of output channels: write %s:C in -net_layers (e.g. %s:16), or give -%sgraph_outputs C", ((PetscObject)layer)->type_name, layer->index,
            ((PetscObject)layer)->type_name, ((PetscObject)layer)->type_name, prefix ? prefix : "");
  }
  PetscCall(GraphName(layer, sizeof(name), name));
  PetscCall(PetNetShapeSize(&layer->in, &in));
  layer->out.ndim   = 1;
  layer->out.dim[0] = g->nout;
  PetscCheck(((PetscInt64)in * (g->self ? 2 : 1) + 1) * g->nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE,
             "%s on %" PetscInt_FMT " input features would have more parameters than a PetscInt holds: give it fewer channels", name, in);
  layer->nparams = (g->self ? 2 : 1) * g->nout * in + (g->bias ? g->nout : 0);
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Graph(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Graph *g  = (Layer_Graph *)layer->data;
  PetscInt     nw = layer->insize * g->nout, ws, wn, b;

  PetscFunctionBegin;
  GraphOffsets(layer, &ws, &wn, &b);
  if (g->self) PetscCall(LayerInitializeWeights(rnd, g->init, g->initstd, layer->insize, g->nout, nw, theta + ws));
  PetscCall(LayerInitializeWeights(rnd, g->init, g->initstd, layer->insize, g->nout, nw, theta + wn));
  if (g->bias) PetscCall(PetscArrayzero(theta + b, g->nout));
  PetscFunctionReturn(0);
}

/* Z = A X (kept); Y = Wn^T Z [+ Ws^T X] + b */
static PetscErrorCode LayerForward_Graph(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;
  PetscInt     ws, wn, b;

  PetscFunctionBegin;
  PetscCall(GraphPrepare(layer, n));
  GraphOffsets(layer, &ws, &wn, &b);
  g->forwarded = PETSC_FALSE;
  PetscCall(GraphApply(layer, PETSC_FALSE, PETSC_FALSE, x, g->z));
  PetscCall(GraphGemm(layer, "T", n, theta + wn, g->z, 0.0, y));
  if (g->self) PetscCall(GraphGemm(layer, "T", n, theta + ws, x, 1.0, y));
  if (g->bias) PetscCall(GraphAddBias(layer, n, theta + b, y));
  g->forwarded = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* dX = A^T (Wn dY) [+ Ws dY];  dWn += Z dY^T, [dWs += X dY^T], db += sum dY.  theta is not read for dtheta alone. */
static PetscErrorCode LayerBackward_Graph(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Graph *g      = (Layer_Graph *)layer->data;
  PetscBool    want[] = {(PetscBool)(dx != NULL)};
  PetscInt     ws, wn, b;

  PetscFunctionBegin;
  PetscCall(GraphAgree(layer, n, "backward pass", 1, want));
  GraphOffsets(layer, &ws, &wn, &b);
  if (want[0]) { /* some rank wants dx: all apply A^T (a rank that does not writes to scratch) */
    PetscCall(GraphGemm(layer, "N", n, theta + wn, dy, 0.0, g->t));
    PetscCall(GraphApply(layer, PETSC_TRUE, PETSC_FALSE, g->t, dx ? dx : g->s));
    if (g->self && dx) PetscCall(GraphGemm(layer, "N", n, theta + ws, dy, 1.0, dx));
  }
  if (dtheta) {
    PetscCall(GraphWeightGradient(layer, n, g->z, dy, dtheta + wn));
    if (g->self) PetscCall(GraphWeightGradient(layer, n, x, dy, dtheta + ws));
    if (g->bias)
      for (PetscInt i = 0; i < n; i++)
        for (PetscInt o = 0; o < g->nout; o++) dtheta[b + o] += dy[i * g->nout + o];
  }
  PetscFunctionReturn(0);
}

/* dY = Wn^T (A dX) [+ Ws^T dX] + dWn^T Z [+ dWs^T X] + db */
static PetscErrorCode LayerJVP_Graph(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Graph *g      = (Layer_Graph *)layer->data;
  PetscBool    want[] = {(PetscBool)(dx != NULL)};
  PetscScalar  beta   = 0.0;
  PetscInt     ws, wn, b;

  PetscFunctionBegin;
  PetscCall(GraphAgree(layer, n, "Jacobian-vector product", 1, want));
  GraphOffsets(layer, &ws, &wn, &b);
  if (want[0]) { /* a rank without a tangent applies A to zeros */
    if (!dx) PetscCall(PetscArrayzero(g->s, n * layer->insize));
    PetscCall(GraphApply(layer, PETSC_FALSE, PETSC_FALSE, dx ? dx : g->s, g->t));
    PetscCall(GraphGemm(layer, "T", n, theta + wn, g->t, 0.0, dy));
    if (g->self && dx) PetscCall(GraphGemm(layer, "T", n, theta + ws, dx, 1.0, dy));
    beta = 1.0;
  }
  if (dtheta) {
    PetscCall(GraphGemm(layer, "T", n, dtheta + wn, g->z, beta, dy));
    if (g->self) PetscCall(GraphGemm(layer, "T", n, dtheta + ws, x, 1.0, dy));
    if (g->bias) PetscCall(GraphAddBias(layer, n, dtheta + b, dy));
    beta = 1.0;
  }
  if (beta == 0.0) PetscCall(PetscArrayzero(dy, n * layer->outsize));
  PetscFunctionReturn(0);
}

/* dxdot += A^T (Wndot dY) [+ Wsdot dY];  dWndot += (A xdot) dY^T [, dWsdot += xdot dY^T] */
static PetscErrorCode LayerSOBackward_Graph(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                            PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Graph *g      = (Layer_Graph *)layer->data;
  PetscBool    want[] = {(PetscBool)(dxdot && thetadot), (PetscBool)(dthetadot && xdot)};
  PetscInt     ws, wn, b;

  PetscFunctionBegin;
  PetscCall(GraphAgree(layer, n, "second-order adjoint", 2, want));
  GraphOffsets(layer, &ws, &wn, &b);
  if (want[0]) {
    if (dxdot && thetadot)
      PetscCall(GraphGemm(layer, "N", n, thetadot + wn, dy, 0.0, g->t));
    else
      PetscCall(PetscArrayzero(g->t, n * layer->insize));
    PetscCall(GraphApply(layer, PETSC_TRUE, PETSC_TRUE, g->t, dxdot ? dxdot : g->s));
    if (g->self && dxdot && thetadot) PetscCall(GraphGemm(layer, "N", n, thetadot + ws, dy, 1.0, dxdot));
  }
  if (want[1]) {
    if (!xdot) PetscCall(PetscArrayzero(g->s, n * layer->insize));
    PetscCall(GraphApply(layer, PETSC_FALSE, PETSC_FALSE, xdot ? xdot : g->s, g->t));
    if (dthetadot && xdot) {
      PetscCall(GraphWeightGradient(layer, n, g->t, dy, dthetadot + wn));
      if (g->self) PetscCall(GraphWeightGradient(layer, n, xdot, dy, dthetadot + ws));
    }
  }
  PetscFunctionReturn(0);
}

/* PyTorch Geometric's names: GCNConv lin.weight, bias; SAGEConv lin_r.weight (the node), lin_l.weight, lin_l.bias */
static PetscErrorCode LayerTensors_Graph(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Graph   *g    = (Layer_Graph *)layer->data;
  const PetscInt w[2] = {g->nout, layer->insize};
  PetscInt       ws, wn, b, k = 0;

  PetscFunctionBegin;
  GraphOffsets(layer, &ws, &wn, &b);
  if (g->self) PetscCall(LayerTensorSet_Private(&info[k++], "lin_r.weight", ws, LAYER_TENSOR_FEATURES, 2, w));
  PetscCall(LayerTensorSet_Private(&info[k++], g->self ? "lin_l.weight" : "lin.weight", wn, LAYER_TENSOR_FEATURES, 2, w));
  if (g->bias) PetscCall(LayerTensorSet_Private(&info[k++], g->self ? "lin_l.bias" : "bias", b, LAYER_TENSOR_SAME, 1, &g->nout));
  *n = k;
  PetscFunctionReturn(0);
}

static PetscErrorCode GraphSetOutputs(Layer layer, PetscInt nout, PetscBool bias)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s layer output channels must be positive, not %" PetscInt_FMT, ((PetscObject)layer)->type_name, nout);
  if (layer->setupcalled && (nout != g->nout || bias != g->bias)) PetscCall(LayerReset(layer));
  g->nout = nout;
  g->bias = bias;
  PetscFunctionReturn(0);
}

/* C[:bias=0|1] */
static PetscErrorCode LayerSetArguments_Graph(Layer layer, const char args[])
{
  const char *kind = ((PetscObject)layer)->type_name;
  char       *end;
  long        nout = strtol(args, &end, 10);
  PetscBool   bias = PETSC_TRUE;

  PetscFunctionBegin;
  if (end != args && *end == ':') {
    PetscCheck(!strcmp(end + 1, "bias=0") || !strcmp(end + 1, "bias=1"), PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"%s:%s\": after the number of output channels %s takes only bias=0 or bias=1, e.g. %s:16:bias=0", kind,
               args, kind, kind);
    bias = (PetscBool)(end[6] == '1');
    end += strlen(end);
  }
  PetscCheck(end != args && !*end && nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"%s:%s\": %s takes one positive integer, its number of output channels per node, e.g. %s:16 (and optionally :bias=0)", kind, args,
             kind, kind);
  PetscCheck(nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s:%s: the number of output channels is more than %d, the largest PetscInt", kind, args, PETSC_MAX_INT);
  PetscCall(GraphSetOutputs(layer, (PetscInt)nout, bias));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Graph(Layer layer, size_t len, char args[])
{
  Layer_Graph *g = (Layer_Graph *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s", g->nout, g->bias ? "" : ":bias=0"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Graph(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Graph *g    = (Layer_Graph *)layer->data;
  PetscInt     nout = g->nout;
  PetscBool    bias = g->bias;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Graph layer options (gcn, sage)");
  PetscCall(PetNetOptionsInt("-graph_outputs", "Output channels per node", "LayerSetArguments", nout, &nout, NULL));
  PetscCall(PetscOptionsBool("-graph_bias", "Add a bias per output channel", "LayerSetArguments", bias, &bias, NULL));
  if (nout != g->nout || bias != g->bias) PetscCall(GraphSetOutputs(layer, nout, bias));
  PetscCall(PetscOptionsEnum("-graph_init", "Weight initialisation", "LayerInitializeWeights", LayerInitTypes, (PetscEnum)g->init, (PetscEnum *)&g->init, NULL));
  PetscCall(PetscOptionsReal("-graph_init_std", "Standard deviation for -graph_init normal", "LayerInitializeWeights", g->initstd, &g->initstd, NULL));
  PetscCheck(g->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-graph_init_std must be non-negative, not %g", (double)g->initstd);
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Graph(Layer layer, PetscViewer viewer)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "output channels %" PetscInt_FMT "%s, initialisation %s, ", g->nout, g->bias ? "" : " (no bias)", LayerInitTypes[g->init]));
  if (g->A) {
    PetscInt M, N;
    MatType  type;
    MatInfo  info;

    PetscCall(MatGetSize(g->A, &M, &N));
    PetscCall(MatGetType(g->A, &type));
    PetscCall(MatGetInfo(g->A, MAT_GLOBAL_SUM, &info));
    PetscCall(PetscViewerASCIIPrintf(viewer, "operator %" PetscInt_FMT " x %" PetscInt_FMT " %s (%.0f nonzeros)\n", M, N, type, (double)info.nz_used));
  } else
    PetscCall(PetscViewerASCIIPrintf(viewer, "no operator (LayerGraphSetOperator())\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Graph(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(GraphResetOperatorState(layer)); /* the operator itself stays: it is a setting, like the channel count */
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Graph(Layer layer)
{
  Layer_Graph *g = (Layer_Graph *)layer->data;

  PetscFunctionBegin;
  PetscCall(GraphResetOperatorState(layer));
  PetscCall(MatDestroy(&g->A));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGraphSetOperator_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGraphGetOperator_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGraphSetOperator_Graph(Layer layer, Mat A)
{
  Layer_Graph *g    = (Layer_Graph *)layer->data;
  MPI_Comm     comm = PetscObjectComm((PetscObject)layer);
  PetscMPIInt  cmp;
  PetscBool    aij, assembled;
  PetscInt     M, N, m, nl;
  char         name[300];

  PetscFunctionBegin;
  PetscCall(GraphName(layer, sizeof(name), name));
  PetscCallMPI(MPI_Comm_compare(comm, PetscObjectComm((PetscObject)A), &cmp));
  PetscCheck(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, comm, PETSC_ERR_ARG_NOTSAMECOMM, "LayerGraphSetOperator(): %s and its operator must live on the same communicator (that of the Net)", name);
  PetscCall(PetscObjectBaseTypeCompareAny((PetscObject)A, &aij, MATSEQAIJ, MATMPIAIJ, ""));
  PetscCheck(aij, comm, PETSC_ERR_SUP, "LayerGraphSetOperator(): %s needs an AIJ matrix (MATSEQAIJ or MATMPIAIJ), applied to [node][channel] data through MatCreateMAIJ(), not %s: convert it with MatConvert(A, MATAIJ, MAT_INITIAL_MATRIX, &B)", name,
             ((PetscObject)A)->type_name ? ((PetscObject)A)->type_name : "a matrix of no type");
  PetscCall(MatAssembled(A, &assembled));
  PetscCheck(assembled, comm, PETSC_ERR_ARG_WRONGSTATE, "LayerGraphSetOperator(): %s got an operator that is not assembled: call MatAssemblyBegin()/MatAssemblyEnd() first", name);
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetLocalSize(A, &m, &nl));
  PetscCheck(M == N, comm, PETSC_ERR_ARG_SIZ, "LayerGraphSetOperator(): %s needs a square operator (nodes to nodes), not %" PetscInt_FMT " x %" PetscInt_FMT, name, M, N);
  { /* collectively, naming the first rank where they differ */
    PetscMPIInt rank, size, bad;

    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    PetscCallMPI(MPI_Comm_size(comm, &size));
    bad = m != nl ? size - rank : 0;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
    if (bad) {
      PetscInt mn[2] = {m, nl};

      PetscCallMPI(MPI_Bcast(mn, 2, MPIU_INT, size - bad, comm));
      SETERRQ(comm, PETSC_ERR_ARG_SIZ,
              "LayerGraphSetOperator(): %s: the operator's rows and columns must be split alike over the ranks (the layer's input and output are the same nodes), but rank %d has %" PetscInt_FMT " rows and %" PetscInt_FMT
              " columns: create A with equal local row and column sizes",
              name, size - bad, mn[0], mn[1]);
    }
  }
  PetscCall(PetscObjectReference((PetscObject)A));
  PetscCall(GraphResetOperatorState(layer));
  PetscCall(MatDestroy(&g->A));
  g->A = A;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGraphGetOperator_Graph(Layer layer, Mat *A)
{
  PetscFunctionBegin;
  *A = ((Layer_Graph *)layer->data)->A;
  PetscFunctionReturn(0);
}

/*@
  LayerGraphSetOperator - gives a graph layer (gcn, sage) the sparse operator A that mixes the features of its nodes

  Collective

  Input Parameters:
+ layer - a graph layer (layers of other kinds ignore the call)
- A     - an assembled square AIJ matrix (MATSEQAIJ or MATMPIAIJ) on the layer's communicator: row and column i are node
          i of the graph (e.g. a normalised adjacency D^-1/2 (A + I) D^-1/2, or a mesh Laplacian), with equal local row
          and column sizes on every rank

  Notes:
  gcn computes Y = A X Wn^T + b and sage Y = X Ws^T + (A X) Wn^T + b, with X the layer's input: node i's features are
  sample i of the batch, so the local batch on each rank must be exactly A's local rows, in A's order (an error names
  both sizes otherwise). A is referenced, not copied: a simulation that owns it may keep using it, and new values (or a
  new nonzero pattern) are seen at the next forward pass (not between a forward pass and its derivatives: that is an
  error). A is applied to [node][channel] data by MatCreateMAIJ(): its MatMult for the forward pass and JVPs,
  MatMultTranspose for the backward pass.

  The operator is not needed to set the layer up (shapes and parameters do not depend on it), only to apply it: a Net
  read by NetLoad() gets its operator afterwards. Setting another operator keeps the parameters. NetSetGraphOperator()
  sets the operator of every graph layer of a Net.

  Level: intermediate

.seealso: `LayerGraphGetOperator()`, `NetSetGraphOperator()`, `MatCreateMAIJ()`, `NetCreateVecs()`
@*/
PetscErrorCode LayerGraphSetOperator(Layer layer, Mat A)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidHeaderSpecific(A, MAT_CLASSID, 2);
  PetscTryMethod(layer, "LayerGraphSetOperator_C", (Layer, Mat), (layer, A));
  PetscFunctionReturn(0);
}

/*@
  LayerGraphGetOperator - the sparse operator of a graph layer (gcn, sage)

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. A - its operator (borrowed: do not destroy it), or NULL if none was set or the layer is not a graph layer

  Level: intermediate

.seealso: `LayerGraphSetOperator()`, `NetSetGraphOperator()`
@*/
PetscErrorCode LayerGraphGetOperator(Layer layer, Mat *A)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidPointer(A, 2);
  *A = NULL;
  PetscTryMethod(layer, "LayerGraphGetOperator_C", (Layer, Mat *), (layer, A));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerCreate_Graph(Layer layer, PetscBool self)
{
  Layer_Graph *g;

  PetscFunctionBegin;
  PetscCall(PetscNew(&g));
  g->self                    = self;
  g->bias                    = PETSC_TRUE;
  g->init                    = LAYER_INIT_XAVIER; /* PyTorch Geometric: glorot weights, zero bias */
  g->initstd                 = 0.01;
  layer->data                = g;
  layer->collective          = PETSC_TRUE;
  layer->coupled             = PETSC_TRUE; /* a node's output reads its neighbours */
  layer->gradfree            = PETSC_TRUE; /* dWn = Z^T dY, dWs = X^T dY, db = sum dY: theta is not read */
  layer->ops->setup          = LayerSetUp_Graph;
  layer->ops->initialize     = LayerInitialize_Graph;
  layer->ops->forward        = LayerForward_Graph;
  layer->ops->backward       = LayerBackward_Graph;
  layer->ops->jvp            = LayerJVP_Graph;
  layer->ops->sobackward     = LayerSOBackward_Graph;
  layer->ops->tensors        = LayerTensors_Graph;
  layer->ops->setarguments   = LayerSetArguments_Graph;
  layer->ops->getarguments   = LayerGetArguments_Graph;
  layer->ops->setfromoptions = LayerSetFromOptions_Graph;
  layer->ops->view           = LayerView_Graph;
  layer->ops->reset          = LayerReset_Graph;
  layer->ops->destroy        = LayerDestroy_Graph;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGraphSetOperator_C", LayerGraphSetOperator_Graph));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerGraphGetOperator_C", LayerGraphGetOperator_Graph));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_GCN(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate_Graph(layer, PETSC_FALSE));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_SAGE(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(LayerCreate_Graph(layer, PETSC_TRUE));
  PetscFunctionReturn(0);
}
