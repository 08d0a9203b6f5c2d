/*
  Message passing on a mesh (MeshGraphNets' processor block, without its residual): the nodes are the vertices of a
  DMPlex, the edges its mesh edges (depth-1 points), both directions.

    mpnn:C[:hidden=H][:dim=D]
      message   m_sr = tanh(We [x_s; x_r; g_sr] + be)      for every edge (s, r), in both directions
                g_sr = (p_r - p_s, |p_r - p_s|)            the edge's geometry from the DM's coordinates (D + 1 values)
      aggregate a_r  = sum over the edges into r of m_sr   (H values)
      update    y_r  = Wn [x_r; a_r] + bn                  (C values; no residual x_r: add one with an add node)

  Layout: a sample is a vertex, the local batch exactly the rank's owned vertices, in the order of the DM's global
  numbering (a section with dof on the vertices: owned vertices by increasing point number), channels-last, or S
  copies of them (S fields on the same mesh, the same S on every rank; the edge pass runs copy by copy, the node
  update over the whole batch):
    x      [S][n][in]         y [S][n][C]
    We     [H][2 in + D + 1]  be [H]      ("edge_mlp.weight", "edge_mlp.bias"; PyTorch Linear layout)
    Wn     [C][in + H]        bn [C]      ("node_mlp.weight", "node_mlp.bias")
    theta  = [We, be, Wn, bn]

  Parallel edge loop: the node features live in a PetscSection with dof = in on the vertices of a clone of the DM (and
  dof = H for the aggregate), so that the DM's point SF is the ghost exchange. Every rank computes the edges it owns
  (the depth-1 points that are not leaves of the point SF), whose vertices its local mesh holds, owned or ghost:
    forward   x_l = G2L(x)                                 DMGlobalToLocal, INSERT_VALUES (ghost update)
              per chunk of k messages (-mpnn_chunk, 512): U = [x_s; x_r; g] (ein x k), Z = Wec^T U + be
                                                           dgemm('T','N', H, k, ein)
              a_l[r] += tanh(Z)                            scatter by receiver
              a = L2G(a_l)                                 DMLocalToGlobal, ADD_VALUES
              Y = Wnx^T X + Wna^T A + bn                   dgemm('T','N', C, n, in) and (C, n, H)
    backward  dA = Wna dY, dA_l = G2L(dA);  dZ = tanh'(Z) .* dA_l[r]
              dWe += U dZ^T, dbe += dZ 1                   dgemm('N','T', ein, H, k)   (accumulate)
              dU = Wec dZ, dx_l[s] += dU_s, dx_l[r] += dU_r   dgemm('N','N', ein, k, H)
              dX = Wnx dY + L2G(dx_l)                       the reverse add of the ghosts' cotangents
              dWn += [X; A] dY^T, dbn += dY 1
    jvp       the forward linearised: dZ = Wec^T dU + dWec^T U + dbe, da_l[r] += tanh'(Z) .* dZ, dA = L2G(da_l),
              dY = Wnx^T dX + Wna^T dA + dWnx^T X + dWna^T A + dbn
    sobackward (the curvature term; dY fixed, tangent (xdot, thetadot), Zdot and Adot the JVP's):
              dZdot   = tanh''(Z) .* Zdot .* dA_l[r] + tanh'(Z) .* G2L(Wnadot dY)[r]
              dxdot  += Wnxdot dY + L2G(scatter of the x parts of Wedot dZ + We dZdot)
              dWedot += Udot dZ^T + U dZdot^T, dbedot += dZdot 1, dWndot += [Xdot; Adot] dY^T
  Wec = We^T as a column-major (ein x H) matrix, Wn likewise (in + H) x C with Wnx its first in rows, Wna the rest.

  The layer couples samples and its kernels are collective over the DM's communicator (layer->collective): the ranks
  agree with one MPI_Allreduce on what anyone asked for, and a rank without a tangent or cotangent uses zeros.
*/
#include <petnet/private/layerimpl.h>
#include <petscdmplex.h>
#include <petscsf.h>
#include "../../interface/layergemm.h"

typedef struct {
  PetscInt      nout, hidden, dim; /* C, H (0: C), D */
  PetscInt      chunk;             /* messages per GEMM (-mpnn_chunk): bounds the scratch, keeps each GEMM large */
  LayerInitType init;
  PetscReal     initstd;

  DM           dm;               /* the user's mesh, referenced (LayerMeshSetDM()) */
  DM           dmx, dma;         /* clones of dm with dof = in, dof = H on the vertices */
  Vec          xl, tl;           /* local [nv][in]: the input of the last forward (ghosts filled); a tangent or cotangent */
  Vec          al, dal;          /* local [nv][H]: aggregate; its tangent or cotangent */
  Vec          gx, ga;           /* global layouts [n][in], [n][H] without arrays (VecPlaceArray) */
  PetscInt     n, nv, nmsg;      /* owned vertices, local vertices, messages (2 x owned edges) */
  PetscInt    *snd, *rcv;        /* [nmsg] local vertex slots of sender and receiver */
  PetscScalar *geom;             /* [nmsg][D + 1] */
  PetscInt     S;                /* copies of the mesh in the batch of the last forward (the arrays below sized for it) */
  PetscScalar *xloc;             /* [S][nv][in] the inputs of the last forward, ghosts filled */
  PetscScalar *z;                /* [S][nmsg][H] pre-activations of the last forward */
  PetscScalar *a;                /* [S][n][H] aggregate of the last forward */
  PetscScalar *sx, *sa, *sa2;    /* scratch [S][n][in], [S][n][H], [S][n][H] */
  PetscScalar *u, *du, *w, *w2;  /* chunk scratch [k][ein], [k][ein], [k][H], [k][H] */
  PetscBool    ready, forwarded; /* structures built for dm; the last forward was with them */
} Layer_Mpnn;

static PetscInt MpnnHidden(Layer_Mpnn *mp)
{
  return mp->hidden > 0 ? mp->hidden : mp->nout;
}

/* ein = 2 in + D + 1: the edge MLP's input */
static PetscInt MpnnEdgeInputs(Layer layer)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;

  return 2 * layer->insize + mp->dim + 1;
}

/* Offsets in theta: We, be, Wn, bn */
static void MpnnOffsets(Layer layer, PetscInt *we, PetscInt *be, PetscInt *wn, PetscInt *bn)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer);

  *we = 0;
  *be = H * ein;
  *wn = *be + H;
  *bn = *wn + mp->nout * (layer->insize + H);
}

static PetscErrorCode MpnnName(Layer layer, size_t len, char name[])
{
  char spec[256];

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  PetscCall(PetscSNPrintf(name, len, "mpnn layer %" PetscInt_FMT " (%s)", layer->index, spec));
  PetscFunctionReturn(0);
}

/* C = op(A) op(B) + beta C, column-major (LayerGemm(), in the calling thread), with its flops */
static PetscErrorCode MpnnGemm(const char *ta, const char *tb, PetscInt m, PetscInt n, PetscInt k, const PetscScalar *A, PetscInt lda, const PetscScalar *B, PetscInt ldb, PetscScalar beta, PetscScalar *C, PetscInt ldc)
{
  PetscFunctionBegin;
  PetscCall(LayerGemm(PETSC_FALSE, ta[0], tb[0], m, n, k, A, lda, B, ldb, beta, C, ldc, NULL));
  PetscCall(PetscLogFlops(2.0 * m * n * k));
  PetscFunctionReturn(0);
}

static PetscErrorCode MpnnResetMeshState(Layer layer)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&mp->xl));
  PetscCall(VecDestroy(&mp->tl));
  PetscCall(VecDestroy(&mp->al));
  PetscCall(VecDestroy(&mp->dal));
  PetscCall(VecDestroy(&mp->gx));
  PetscCall(VecDestroy(&mp->ga));
  PetscCall(DMDestroy(&mp->dmx));
  PetscCall(DMDestroy(&mp->dma));
  PetscCall(PetscFree3(mp->snd, mp->rcv, mp->geom));
  PetscCall(PetscFree6(mp->xloc, mp->z, mp->a, mp->sx, mp->sa, mp->sa2));
  PetscCall(PetscFree4(mp->u, mp->du, mp->w, mp->w2));
  mp->n = mp->nv = mp->nmsg = mp->S = 0;
  mp->ready                         = PETSC_FALSE;
  mp->forwarded                     = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* A clone of the mesh with dof channels on every vertex, and its local vector */
static PetscErrorCode MpnnCloneWithDof(DM dm, PetscInt dof, DM *dmc, Vec *loc)
{
  PetscSection sec;
  PetscInt     pStart, pEnd, vStart, vEnd;

  PetscFunctionBegin;
  PetscCall(DMClone(dm, dmc));
  PetscCall(DMPlexGetChart(dm, &pStart, &pEnd));
  PetscCall(DMPlexGetDepthStratum(dm, 0, &vStart, &vEnd));
  PetscCall(PetscSectionCreate(PetscObjectComm((PetscObject)dm), &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt v = vStart; v < vEnd; v++) PetscCall(PetscSectionSetDof(sec, v, dof));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(*dmc, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMCreateLocalVector(*dmc, loc));
  PetscFunctionReturn(0);
}

/*
  The edge lists of the mesh for the current input size: the owned edges (depth-1 points that are not leaves of the
  point SF), as 2 messages each, with their vertices' local slots and geometry. Called at the first forward pass after
  the DM was set (the input size is known then).
*/
static PetscErrorCode MpnnBuild(Layer layer)
{
  Layer_Mpnn        *mp = (Layer_Mpnn *)layer->data;
  const PetscInt     in = layer->insize, H = MpnnHidden(mp), D = mp->dim, ein = MpnnEdgeInputs(layer);
  PetscInt           pStart, pEnd, vStart, vEnd, eStart, eEnd, nleaves, nowned = 0, k = 0, gsize;
  const PetscInt    *ilocal;
  PetscSF            sf;
  PetscBool         *leaf;
  PetscSection       lsec, csec;
  Vec                coords, gv;
  const PetscScalar *xc;

  PetscFunctionBegin;
  PetscCall(MpnnResetMeshState(layer));
  PetscCall(MpnnCloneWithDof(mp->dm, in, &mp->dmx, &mp->xl));
  PetscCall(VecDuplicate(mp->xl, &mp->tl));
  PetscCall(MpnnCloneWithDof(mp->dm, H, &mp->dma, &mp->al));
  PetscCall(VecDuplicate(mp->al, &mp->dal));
  PetscCall(DMCreateGlobalVector(mp->dmx, &gv));
  PetscCall(VecGetLocalSize(gv, &gsize));
  PetscCall(VecDestroy(&gv));
  mp->n = gsize / in;
  PetscCall(VecCreateMPIWithArray(PetscObjectComm((PetscObject)layer), 1, mp->n * in, PETSC_DECIDE, NULL, &mp->gx));
  PetscCall(VecCreateMPIWithArray(PetscObjectComm((PetscObject)layer), 1, mp->n * H, PETSC_DECIDE, NULL, &mp->ga));

  PetscCall(DMPlexGetChart(mp->dm, &pStart, &pEnd));
  PetscCall(DMPlexGetDepthStratum(mp->dm, 0, &vStart, &vEnd));
  PetscCall(DMPlexGetDepthStratum(mp->dm, 1, &eStart, &eEnd));
  mp->nv = vEnd - vStart;
  PetscCall(DMGetPointSF(mp->dm, &sf));
  PetscCall(PetscCalloc1(pEnd - pStart, &leaf));
  PetscCall(PetscSFGetGraph(sf, NULL, &nleaves, &ilocal, NULL));
  for (PetscInt l = 0; l < PetscMax(nleaves, 0); l++) leaf[(ilocal ? ilocal[l] : l) - pStart] = PETSC_TRUE;
  for (PetscInt e = eStart; e < eEnd; e++) nowned += !leaf[e - pStart];
  mp->nmsg = 2 * nowned;
  PetscCall(PetscMalloc3(mp->nmsg, &mp->snd, mp->nmsg, &mp->rcv, mp->nmsg * (D + 1), &mp->geom));
  PetscCall(DMGetLocalSection(mp->dmx, &lsec));
  PetscCall(DMGetCoordinateSection(mp->dm, &csec));
  PetscCall(DMGetCoordinatesLocal(mp->dm, &coords));
  PetscCall(VecGetArrayRead(coords, &xc));
  for (PetscInt e = eStart; e < eEnd; e++) {
    const PetscInt *cone;
    PetscInt        slot[2], coff[2];
    PetscReal       len = 0;

    if (leaf[e - pStart]) continue;
    PetscCall(DMPlexGetCone(mp->dm, e, &cone));
    for (PetscInt i = 0; i < 2; i++) {
      PetscInt off;

      PetscCall(PetscSectionGetOffset(lsec, cone[i], &off));
      slot[i] = off / in;
      PetscCall(PetscSectionGetOffset(csec, cone[i], &coff[i]));
    }
    for (PetscInt d = 0; d < D; d++) len += PetscSqr(PetscRealPart(xc[coff[1] + d] - xc[coff[0] + d]));
    len = PetscSqrtReal(len);
    for (PetscInt i = 0; i < 2; i++) { /* message k: cone[i] -> cone[1 - i], g = (p_r - p_s, |p_r - p_s|) */
      mp->snd[k] = slot[i];
      mp->rcv[k] = slot[1 - i];
      for (PetscInt d = 0; d < D; d++) mp->geom[k * (D + 1) + d] = xc[coff[1 - i] + d] - xc[coff[i] + d];
      mp->geom[k * (D + 1) + D] = len;
      k++;
    }
  }
  PetscCall(VecRestoreArrayRead(coords, &xc));
  PetscCall(PetscFree(leaf));
  { /* a chunk is never more than the messages: a huge -mpnn_chunk allocates no more */
    const PetscInt kc = PetscMin(mp->chunk, PetscMax(mp->nmsg, 1));

    PetscCall(PetscMalloc4(kc * ein, &mp->u, kc * ein, &mp->du, kc * H, &mp->w, kc * H, &mp->w2));
  }
  mp->ready = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  At forward: a DM is set, the edge lists are built, and the local batch is S copies of the rank's owned vertices
  ([copy][vertex][channel]), the same S on every rank (one collective check naming the first rank that differs); the
  arrays kept for the derivatives are sized for S copies.
*/
static PetscErrorCode MpnnPrepare(Layer layer, PetscInt n)
{
  Layer_Mpnn    *mp   = (Layer_Mpnn *)layer->data;
  MPI_Comm       comm = PetscObjectComm((PetscObject)layer);
  const PetscInt in = layer->insize, H = MpnnHidden(mp);
  PetscMPIInt    rank, size, bad;
  PetscInt       S;
  char           name[300];

  PetscFunctionBegin;
  PetscCall(MpnnName(layer, sizeof(name), name));
  PetscCheck(mp->dm, comm, PETSC_ERR_ORDER, "%s has no mesh: give it the DMPlex whose vertices are its nodes with LayerMeshSetDM(layer, dm), or NetSetMeshDM(net, dm) for every mpnn layer of a Net, before the forward pass", name);
  if (!mp->ready) PetscCall(MpnnBuild(layer));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  S = mp->n ? n / mp->n : 0; /* a rank without vertices takes the others' count */
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &S, 1, MPIU_INT, MPI_MAX, comm));
  S   = PetscMax(S, 1);
  bad = n != S * mp->n ? size - rank : 0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  if (bad) {
    PetscInt nm[2] = {n, mp->n}, tot[2];

    PetscCall(MPIU_Allreduce(nm, tot, 2, MPIU_INT, MPI_SUM, comm));
    PetscCallMPI(MPI_Bcast(nm, 2, MPIU_INT, size - bad, comm));
    SETERRQ(comm, PETSC_ERR_ARG_SIZ,
            "%s: the local batch on rank %d has %" PetscInt_FMT " samples (%" PetscInt_FMT " on all ranks), but the mesh has %" PetscInt_FMT " owned vertices there (%" PetscInt_FMT
            " in all): an mpnn layer's samples are the mesh's vertices, so the Net's input must hold the owned vertices on every rank, in the DM's global order (NetCreateVecs(net, m, ...) with m the local size of a global Vec of a section with one "
            "dof per vertex), or the same number of copies of them on every rank ([copy][vertex][channel]); mini-batches or chunks of the nodes cannot be used",
            name, size - bad, nm[0], tot[0], nm[1], tot[1]);
  }
  { /* the arrays kept for the derivatives and the chunk scratch, in 64 bits, on every rank */
    const PetscInt64 ein  = MpnnEdgeInputs(layer);
    PetscInt64       most = PetscMax(PetscMax((PetscInt64)S * mp->nv * in, (PetscInt64)S * mp->nmsg * H), PetscMax((PetscInt64)S * mp->n * PetscMax(in, H), (PetscInt64)PetscMin(mp->chunk, PetscMax(mp->nmsg, 1)) * ein));

    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &most, 1, MPIU_INT64, MPI_MAX, comm));
    PetscCheck(most <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "%s: its %" PetscInt_FMT " copies of the mesh would need an array of %" PetscInt64_FMT " entries on some rank, more than a PetscInt counts: use more ranks, fewer copies per batch or fewer channels", name, S, most);
  }
  if (S != mp->S) {
    PetscCall(PetscFree6(mp->xloc, mp->z, mp->a, mp->sx, mp->sa, mp->sa2));
    PetscCall(PetscMalloc6(S * mp->nv * in, &mp->xloc, S * mp->nmsg * H, &mp->z, S * mp->n * H, &mp->a, S * mp->n * in, &mp->sx, S * mp->n * H, &mp->sa, S * mp->n * H, &mp->sa2));
    mp->S = S;
  }
  PetscFunctionReturn(0);
}

/* Derivatives: after a forward pass with the current mesh; flags[] become what any rank asked for */
static PetscErrorCode MpnnAgree(Layer layer, const char what[], PetscInt nflags, PetscBool flags[])
{
  Layer_Mpnn *mp     = (Layer_Mpnn *)layer->data;
  PetscMPIInt loc[5] = {0, 0, 0, 0, 0}, all[5];
  char        name[300];

  PetscFunctionBegin;
  loc[0] = mp->forwarded ? 0 : 1;
  for (PetscInt i = 0; i < nflags; i++) loc[i + 1] = flags[i] ? 1 : 0;
  PetscCall(MPIU_Allreduce(loc, all, (PetscMPIInt)(nflags + 1), MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)layer)));
  if (all[0]) {
    PetscCall(MpnnName(layer, sizeof(name), name));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ORDER, "%s: its %s is taken at the last forward pass, but there is none with its current mesh: call the forward pass again", name, what);
  }
  for (PetscInt i = 0; i < nflags; i++) flags[i] = all[i + 1] ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* loc = G2L(glob): the ghost update of [n][dof] data (glob NULL: zeros) */
static PetscErrorCode MpnnGlobalToLocal(Layer layer, DM dm, Vec g, const PetscScalar *glob, PetscScalar *scratch, PetscInt len, Vec loc)
{
  PetscFunctionBegin;
  if (!glob) {
    PetscCall(PetscArrayzero(scratch, len));
    glob = scratch;
  }
  PetscCall(VecPlaceArray(g, glob));
  PetscCall(DMGlobalToLocal(dm, g, INSERT_VALUES, loc));
  PetscCall(VecResetArray(g));
  PetscFunctionReturn(0);
}

/* glob = L2G(loc), the sum of the local copies of each owned vertex (DMLocalToGlobal with ADD_VALUES into zeros) */
static PetscErrorCode MpnnLocalToGlobal(Layer layer, DM dm, Vec loc, PetscScalar *glob, PetscInt len, Vec g)
{
  PetscFunctionBegin;
  PetscCall(PetscArrayzero(glob, len));
  PetscCall(VecPlaceArray(g, glob));
  PetscCall(DMLocalToGlobal(dm, loc, ADD_VALUES, g));
  PetscCall(VecResetArray(g));
  PetscFunctionReturn(0);
}

/* U[:, j] = [x_s; x_r; g] for the messages k0 .. k0 + cnt - 1 (x local [nv][in]; geometry zero if !geom) */
static void MpnnGather(Layer layer, PetscInt k0, PetscInt cnt, const PetscScalar *xl, PetscBool geom, PetscScalar *U)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt in = layer->insize, D = mp->dim, ein = MpnnEdgeInputs(layer);

  for (PetscInt j = 0; j < cnt; j++) {
    PetscScalar *col = U + j * ein;
    PetscInt     k   = k0 + j;

    for (PetscInt c = 0; c < in; c++) col[c] = xl[mp->snd[k] * in + c];
    for (PetscInt c = 0; c < in; c++) col[in + c] = xl[mp->rcv[k] * in + c];
    for (PetscInt d = 0; d <= D; d++) col[2 * in + d] = geom ? mp->geom[k * (D + 1) + d] : 0.0;
  }
}

/* dxl[s] += dU_s, dxl[r] += dU_r: the x parts of the edge inputs' cotangents back to their vertices */
static void MpnnScatterInputs(Layer layer, PetscInt k0, PetscInt cnt, const PetscScalar *dU, PetscScalar *dxl)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt in = layer->insize, ein = MpnnEdgeInputs(layer);

  for (PetscInt j = 0; j < cnt; j++) {
    const PetscScalar *col = dU + j * ein;
    PetscInt           k   = k0 + j;

    for (PetscInt c = 0; c < in; c++) dxl[mp->snd[k] * in + c] += col[c];
    for (PetscInt c = 0; c < in; c++) dxl[mp->rcv[k] * in + c] += col[in + c];
  }
}

/* al[r] += M[:, j] (the aggregation by receiver) */
static void MpnnScatterMessages(Layer layer, PetscInt k0, PetscInt cnt, const PetscScalar *M, PetscScalar *al)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H  = MpnnHidden(mp);

  for (PetscInt j = 0; j < cnt; j++)
    for (PetscInt h = 0; h < H; h++) al[mp->rcv[k0 + j] * H + h] += M[j * H + h];
}

/* M[:, j] = al[r] (the aggregation's adjoint: the receiver's cotangent for each of its messages) */
static void MpnnGatherReceivers(Layer layer, PetscInt k0, PetscInt cnt, const PetscScalar *al, PetscScalar *M)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H  = MpnnHidden(mp);

  for (PetscInt j = 0; j < cnt; j++)
    for (PetscInt h = 0; h < H; h++) M[j * H + h] = al[mp->rcv[k0 + j] * H + h];
}

static PetscErrorCode LayerSetUp_Mpnn(Layer layer)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;
  PetscInt    in, H;
  PetscInt64  np;
  char        name[300];

  PetscFunctionBegin;
  if (mp->nout <= 0) {
    const char *prefix;

    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    SETERRQ(PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "mpnn layer %" PetscInt_FMT " has no number of output channels: write mpnn:C in -net_layers (e.g. mpnn:16), or give -%smpnn_outputs C", layer->index, prefix ? prefix : "");
  }
  PetscCall(MpnnName(layer, sizeof(name), name));
  PetscCall(PetNetShapeSize(&layer->in, &in));
  H                 = MpnnHidden(mp);
  layer->out.ndim   = 1;
  layer->out.dim[0] = mp->nout;
  np                = (PetscInt64)H * (2 * in + mp->dim + 2) + (PetscInt64)mp->nout * (in + H + 1);
  PetscCheck(np <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "%s on %" PetscInt_FMT " input features would have more parameters than a PetscInt holds: give it fewer channels", name, in);
  layer->nparams = (PetscInt)np;
  PetscCall(MpnnResetMeshState(layer)); /* the edge lists depend on the input size */
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerInitialize_Mpnn(Layer layer, PetscRandom rnd, PetscScalar *theta)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer), in = layer->insize;
  PetscInt       we, be, wn, bn;

  PetscFunctionBegin;
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  PetscCall(LayerInitializeWeights(rnd, mp->init, mp->initstd, ein, H, H * ein, theta + we));
  PetscCall(PetscArrayzero(theta + be, H));
  PetscCall(LayerInitializeWeights(rnd, mp->init, mp->initstd, in + H, mp->nout, mp->nout * (in + H), theta + wn));
  PetscCall(PetscArrayzero(theta + bn, mp->nout));
  PetscFunctionReturn(0);
}

/* Y (C x n) = Wnx^T X + Wna^T A [+ bn]  (beta: 0 overwrites Y, 1 adds); n = all the batch's vertices, copies included */
static PetscErrorCode MpnnNodeUpdate(Layer layer, PetscInt n, const PetscScalar *Wn, const PetscScalar *bn, const PetscScalar *X, const PetscScalar *A, PetscScalar beta, PetscScalar *Y)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt in = layer->insize, H = MpnnHidden(mp), C = mp->nout;

  PetscFunctionBegin;
  if (X) {
    PetscCall(MpnnGemm("T", "N", C, n, in, Wn, in + H, X, in, beta, Y, C));
    beta = 1.0;
  }
  if (A) {
    PetscCall(MpnnGemm("T", "N", C, n, H, Wn + in, in + H, A, H, beta, Y, C));
    beta = 1.0;
  }
  if (beta == 0.0) PetscCall(PetscArrayzero(Y, n * C));
  if (bn) {
    for (PetscInt i = 0; i < n; i++)
      for (PetscInt o = 0; o < C; o++) Y[i * C + o] += bn[o];
    PetscCall(PetscLogFlops(1.0 * n * C));
  }
  PetscFunctionReturn(0);
}

/* dWn += [X; A] dY^T, [dbn += dY 1] */
static PetscErrorCode MpnnNodeWeightGradient(Layer layer, PetscInt n, const PetscScalar *X, const PetscScalar *A, const PetscScalar *dy, PetscScalar *dWn, PetscScalar *dbn)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt in = layer->insize, H = MpnnHidden(mp), C = mp->nout;

  PetscFunctionBegin;
  if (X) PetscCall(MpnnGemm("N", "T", in, C, n, X, in, dy, C, 1.0, dWn, in + H));
  if (A) PetscCall(MpnnGemm("N", "T", H, C, n, A, H, dy, C, 1.0, dWn + in, in + H));
  if (dbn)
    for (PetscInt i = 0; i < n; i++)
      for (PetscInt o = 0; o < C; o++) dbn[o] += dy[i * C + o];
  PetscFunctionReturn(0);
}

/*
  Copy s of the batch: x_l = G2L(x_s) (kept in xloc), per chunk Z = Wec^T U + be (kept), a_l[r] += tanh(Z),
  a_s = L2G(a_l)
*/
static PetscErrorCode MpnnEdgeForward(Layer layer, PetscInt s, const PetscScalar *theta, const PetscScalar *x)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer), in = layer->insize, n = mp->n;
  PetscScalar   *xl = mp->xloc + s * mp->nv * in, *al;
  PetscInt       we, be, wn, bn;

  PetscFunctionBegin;
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  PetscCall(MpnnGlobalToLocal(layer, mp->dmx, mp->gx, x ? x + s * n * in : NULL, mp->sx, n * in, mp->xl));
  {
    const PetscScalar *l;

    PetscCall(VecGetArrayRead(mp->xl, &l));
    PetscCall(PetscArraycpy(xl, l, mp->nv * in));
    PetscCall(VecRestoreArrayRead(mp->xl, &l));
  }
  PetscCall(VecZeroEntries(mp->al));
  PetscCall(VecGetArray(mp->al, &al));
  for (PetscInt k0 = 0; k0 < mp->nmsg; k0 += mp->chunk) {
    const PetscInt cnt = PetscMin(mp->chunk, mp->nmsg - k0);
    PetscScalar   *Z   = mp->z + (s * mp->nmsg + k0) * H;

    MpnnGather(layer, k0, cnt, xl, PETSC_TRUE, mp->u);
    PetscCall(MpnnGemm("T", "N", H, cnt, ein, theta + we, ein, mp->u, ein, 0.0, Z, H));
    for (PetscInt j = 0; j < cnt; j++)
      for (PetscInt h = 0; h < H; h++) {
        Z[j * H + h] += theta[be + h];
        mp->w[j * H + h] = PetscTanhScalar(Z[j * H + h]);
      }
    MpnnScatterMessages(layer, k0, cnt, mp->w, al);
  }
  PetscCall(PetscLogFlops(3.0 * mp->nmsg * H));
  PetscCall(VecRestoreArray(mp->al, &al));
  PetscCall(MpnnLocalToGlobal(layer, mp->dma, mp->al, mp->a + s * n * H, n * H, mp->ga));
  PetscFunctionReturn(0);
}

/* The edge passes of every copy; then Y = Wnx^T X + Wna^T A + bn over the whole batch (one GEMM each) */
static PetscErrorCode LayerForward_Mpnn(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;
  PetscInt    we, be, wn, bn;

  PetscFunctionBegin;
  PetscCall(MpnnPrepare(layer, n));
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  mp->forwarded = PETSC_FALSE;
  for (PetscInt s = 0; s < mp->S; s++) PetscCall(MpnnEdgeForward(layer, s, theta, x));
  PetscCall(MpnnNodeUpdate(layer, n, theta + wn, theta + bn, x, mp->a, 0.0, y));
  mp->forwarded = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  The edge pass of the backward pass and of the second-order adjoint, copy s: from the receivers' cotangents dal (local
  [nv][H]), dZ = tanh'(Z) .* dal[r] (then extra(), if given: the second-order term), then dWe += U dZ^T, dbe += dZ 1
  (dWe non-NULL) and dxl[s, r] += (Wec dZ)_{s, r} (dxl non-NULL; We the weights to use)
*/
static PetscErrorCode MpnnEdgeBackward(Layer layer, PetscInt s, const PetscScalar *We, const PetscScalar *dal, PetscErrorCode (*extra)(Layer, PetscInt, PetscInt, PetscInt, PetscScalar *, void *), void *ctx, PetscScalar *dWe, PetscScalar *dbe,
                                       PetscScalar *dxl)
{
  Layer_Mpnn        *mp = (Layer_Mpnn *)layer->data;
  const PetscInt     H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer);
  const PetscScalar *xl = mp->xloc + s * mp->nv * layer->insize;

  PetscFunctionBegin;
  for (PetscInt k0 = 0; k0 < mp->nmsg; k0 += mp->chunk) {
    const PetscInt     cnt = PetscMin(mp->chunk, mp->nmsg - k0);
    const PetscScalar *Z   = mp->z + (s * mp->nmsg + k0) * H;
    PetscScalar       *dZ  = mp->w;

    MpnnGatherReceivers(layer, k0, cnt, dal, dZ);
    for (PetscInt j = 0; j < cnt * H; j++) {
      const PetscScalar t = PetscTanhScalar(Z[j]);

      dZ[j] *= 1 - t * t;
    }
    if (extra) PetscCall(extra(layer, s, k0, cnt, dZ, ctx));
    if (dWe) {
      MpnnGather(layer, k0, cnt, xl, PETSC_TRUE, mp->u);
      PetscCall(MpnnGemm("N", "T", ein, H, cnt, mp->u, ein, dZ, H, 1.0, dWe, ein));
      for (PetscInt j = 0; j < cnt; j++)
        for (PetscInt h = 0; h < H; h++) dbe[h] += dZ[j * H + h];
    }
    if (dxl) {
      PetscCall(MpnnGemm("N", "N", ein, cnt, H, We, ein, dZ, H, 0.0, mp->du, ein));
      MpnnScatterInputs(layer, k0, cnt, mp->du, dxl);
    }
  }
  PetscCall(PetscLogFlops(4.0 * mp->nmsg * H));
  PetscFunctionReturn(0);
}

/*
  dA = Wna dY (the whole batch); per copy dA_l = G2L(dA_s), the edge backward, dX_s = L2G(dx_l); then dX += Wnx dY,
  dWn += [X; A] dY^T, dbn += dY 1
*/
static PetscErrorCode LayerBackward_Mpnn(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  Layer_Mpnn        *mp = (Layer_Mpnn *)layer->data;
  const PetscInt     H = MpnnHidden(mp), in = layer->insize, C = mp->nout, n1 = mp->n;
  PetscBool          want[] = {(PetscBool)(dx != NULL), (PetscBool)(dtheta != NULL)};
  PetscInt           we, be, wn, bn;
  const PetscScalar *dal;
  PetscScalar       *tl;

  PetscFunctionBegin;
  PetscCall(MpnnAgree(layer, "backward pass", 2, want));
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  if (!want[0] && !want[1]) PetscFunctionReturn(0);
  /* the aggregate's cotangent, with its ghosts: every rank (one that wants nothing has dy all the same) */
  PetscCall(MpnnGemm("N", "N", H, n, C, theta + wn + in, in + H, dy, C, 0.0, mp->sa, H));
  for (PetscInt s = 0; s < mp->S; s++) {
    PetscCall(MpnnGlobalToLocal(layer, mp->dma, mp->ga, mp->sa + s * n1 * H, NULL, 0, mp->dal));
    PetscCall(VecZeroEntries(mp->tl));
    PetscCall(VecGetArrayRead(mp->dal, &dal));
    PetscCall(VecGetArray(mp->tl, &tl));
    PetscCall(MpnnEdgeBackward(layer, s, theta + we, dal, NULL, NULL, dtheta ? dtheta + we : NULL, dtheta ? dtheta + be : NULL, want[0] ? tl : NULL));
    PetscCall(VecRestoreArray(mp->tl, &tl));
    PetscCall(VecRestoreArrayRead(mp->dal, &dal));
    /* the reverse add of the ghosts' cotangents: every rank, into scratch */
    if (want[0]) PetscCall(MpnnLocalToGlobal(layer, mp->dmx, mp->tl, mp->sx + s * n1 * in, n1 * in, mp->gx));
  }
  if (dx) {
    PetscCall(MpnnGemm("N", "N", in, n, C, theta + wn, in + H, dy, C, 0.0, dx, in));
    for (PetscInt i = 0; i < n * in; i++) dx[i] += mp->sx[i];
  }
  if (dtheta) PetscCall(MpnnNodeWeightGradient(layer, n, x, mp->a, dy, dtheta + wn, dtheta + bn));
  PetscFunctionReturn(0);
}

/*
  The tangents of the edge pass of copy s: Zdot = Wec^T Udot + dWec^T U + dbe (U from the kept input, Udot from the
  local tangent tl without geometry; NULL parts are zero), kept in zdot [nmsg][H] if given, and
  da_l[r] += tanh'(Z) .* Zdot
*/
static PetscErrorCode MpnnEdgeTangent(Layer layer, PetscInt s, const PetscScalar *We, const PetscScalar *tl, const PetscScalar *dWe, const PetscScalar *dbe, PetscScalar *zdot, PetscScalar *dal)
{
  Layer_Mpnn        *mp = (Layer_Mpnn *)layer->data;
  const PetscInt     H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer);
  const PetscScalar *xl = mp->xloc + s * mp->nv * layer->insize;

  PetscFunctionBegin;
  for (PetscInt k0 = 0; k0 < mp->nmsg; k0 += mp->chunk) {
    const PetscInt     cnt  = PetscMin(mp->chunk, mp->nmsg - k0);
    const PetscScalar *Z    = mp->z + (s * mp->nmsg + k0) * H;
    PetscScalar       *dZ   = zdot ? zdot + k0 * H : mp->w;
    PetscScalar        beta = 0.0;

    if (tl) {
      MpnnGather(layer, k0, cnt, tl, PETSC_FALSE, mp->du);
      PetscCall(MpnnGemm("T", "N", H, cnt, ein, We, ein, mp->du, ein, 0.0, dZ, H));
      beta = 1.0;
    }
    if (dWe) {
      MpnnGather(layer, k0, cnt, xl, PETSC_TRUE, mp->u);
      PetscCall(MpnnGemm("T", "N", H, cnt, ein, dWe, ein, mp->u, ein, beta, dZ, H));
      for (PetscInt j = 0; j < cnt; j++)
        for (PetscInt h = 0; h < H; h++) dZ[j * H + h] += dbe[h];
      beta = 1.0;
    }
    if (beta == 0.0) PetscCall(PetscArrayzero(dZ, cnt * H));
    for (PetscInt j = 0; j < cnt * H; j++) {
      const PetscScalar t = PetscTanhScalar(Z[j]);

      mp->w2[j] = (1 - t * t) * dZ[j];
    }
    MpnnScatterMessages(layer, k0, cnt, mp->w2, dal);
  }
  PetscCall(PetscLogFlops(4.0 * mp->nmsg * H));
  PetscFunctionReturn(0);
}

/*
  Copy s: Adot_s = L2G(da_l) of the tangent (the x tangent's local copy in tl if hasx; the parameter tangent thetadot or
  NULL), and Zdot if zdot
*/
static PetscErrorCode MpnnAggregateTangent(Layer layer, PetscInt s, const PetscScalar *theta, PetscBool hasx, const PetscScalar *thetadot, PetscScalar *zdot, PetscScalar *adot)
{
  Layer_Mpnn        *mp = (Layer_Mpnn *)layer->data;
  const PetscInt     H  = MpnnHidden(mp);
  PetscInt           we, be, wn, bn;
  const PetscScalar *tl = NULL;
  PetscScalar       *dal;

  PetscFunctionBegin;
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  PetscCall(VecZeroEntries(mp->dal));
  if (hasx) PetscCall(VecGetArrayRead(mp->tl, &tl));
  PetscCall(VecGetArray(mp->dal, &dal));
  PetscCall(MpnnEdgeTangent(layer, s, theta + we, tl, thetadot ? thetadot + we : NULL, thetadot ? thetadot + be : NULL, zdot, dal));
  PetscCall(VecRestoreArray(mp->dal, &dal));
  if (hasx) PetscCall(VecRestoreArrayRead(mp->tl, &tl));
  PetscCall(MpnnLocalToGlobal(layer, mp->dma, mp->dal, adot + s * mp->n * H, mp->n * H, mp->ga));
  PetscFunctionReturn(0);
}

/* dY = Wnx^T dX + Wna^T dA + dWnx^T X + dWna^T A + dbn, dA_s = L2G(da_l) from the edge tangents of each copy */
static PetscErrorCode LayerJVP_Mpnn(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt in = layer->insize, n1 = mp->n;
  PetscBool      want[] = {(PetscBool)(dx != NULL), (PetscBool)(dtheta != NULL)};
  PetscInt       we, be, wn, bn;

  PetscFunctionBegin;
  PetscCall(MpnnAgree(layer, "Jacobian-vector product", 2, want));
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  if (!want[0] && !want[1]) {
    PetscCall(PetscArrayzero(dy, n * mp->nout));
    PetscFunctionReturn(0);
  }
  for (PetscInt s = 0; s < mp->S; s++) {
    if (want[0]) PetscCall(MpnnGlobalToLocal(layer, mp->dmx, mp->gx, dx ? dx + s * n1 * in : NULL, mp->sx, n1 * in, mp->tl));
    PetscCall(MpnnAggregateTangent(layer, s, theta, want[0], dtheta, NULL, mp->sa));
  }
  PetscCall(MpnnNodeUpdate(layer, n, theta + wn, NULL, dx, mp->sa, 0.0, dy));
  if (dtheta) PetscCall(MpnnNodeUpdate(layer, n, dtheta + wn, dtheta + bn, x, mp->a, 1.0, dy));
  PetscFunctionReturn(0);
}

/* The second-order term of dZ: dZdot = tanh''(Z) .* Zdot .* dal[r] + tanh'(Z) .* dal2[r] (dZ holds tanh'(Z) .* dal[r]) */
typedef struct {
  const PetscScalar *zdot, *dal2; /* of the current copy: [nmsg][H], local [nv][H] */
} MpnnSOContext;

static PetscErrorCode MpnnSOExtra(Layer layer, PetscInt s, PetscInt k0, PetscInt cnt, PetscScalar *dZ, void *ctx)
{
  Layer_Mpnn          *mp = (Layer_Mpnn *)layer->data;
  const MpnnSOContext *so = (const MpnnSOContext *)ctx;
  const PetscInt       H  = MpnnHidden(mp);
  const PetscScalar   *Z = mp->z + (s * mp->nmsg + k0) * H, *Zd = so->zdot + k0 * H;

  PetscFunctionBegin;
  MpnnGatherReceivers(layer, k0, cnt, so->dal2, mp->w2);
  for (PetscInt j = 0; j < cnt * H; j++) {
    const PetscScalar t = PetscTanhScalar(Z[j]), d1 = 1 - t * t;

    /* dZ[j] = d1 dal[r], so tanh'' dal[r] = -2 t d1 dal[r] = -2 t dZ[j] */
    dZ[j] = -2 * t * Zd[j] * dZ[j] + d1 * mp->w2[j];
  }
  PetscCall(PetscLogFlops(6.0 * cnt * H));
  PetscFunctionReturn(0);
}

/*
  dxdot += Wnxdot dY + L2G(x parts of Wedot dZ + We dZdot);  dWedot += Udot dZ^T + U dZdot^T, dbedot += dZdot 1,
  dWndot += [Xdot; Adot] dY^T  (see the top of the file), copy by copy for the edge terms
*/
static PetscErrorCode LayerSOBackward_Mpnn(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thetadot, const PetscScalar *ydot, const PetscScalar *dy,
                                           PetscScalar *dxdot, PetscScalar *dthetadot)
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H = MpnnHidden(mp), in = layer->insize, C = mp->nout, ein = MpnnEdgeInputs(layer), n1 = mp->n;
  PetscBool      want[] = {(PetscBool)(xdot != NULL), (PetscBool)(thetadot != NULL), (PetscBool)(dxdot != NULL), (PetscBool)(dthetadot != NULL)};
  PetscInt       we, be, wn, bn;
  PetscScalar   *zdot, *dal2, *wdy;
  Vec            dxl;
  MpnnSOContext  so;

  PetscFunctionBegin;
  PetscCall(MpnnAgree(layer, "second-order adjoint", 4, want));
  MpnnOffsets(layer, &we, &be, &wn, &bn);
  if ((!want[0] && !want[1]) || (!want[2] && !want[3])) PetscFunctionReturn(0);
  PetscCall(PetscMalloc3(mp->nmsg * H, &zdot, mp->nv * H, &dal2, n * H, &wdy));
  PetscCall(VecDuplicate(mp->tl, &dxl));
  /* sa = Wna dY, wdy = Wnadot dY (the whole batch) */
  PetscCall(MpnnGemm("N", "N", H, n, C, theta + wn + in, in + H, dy, C, 0.0, mp->sa, H));
  if (thetadot)
    PetscCall(MpnnGemm("N", "N", H, n, C, thetadot + wn + in, in + H, dy, C, 0.0, wdy, H));
  else
    PetscCall(PetscArrayzero(wdy, n * H));
  so.zdot = zdot;
  so.dal2 = dal2;
  for (PetscInt s = 0; s < mp->S; s++) {
    const PetscScalar *dal, *tla = NULL;
    PetscScalar       *dxla;

    /* Zdot and Adot_s (in sa2); the x tangent's local copy stays in tl for Udot */
    if (want[0]) PetscCall(MpnnGlobalToLocal(layer, mp->dmx, mp->gx, xdot ? xdot + s * n1 * in : NULL, mp->sx, n1 * in, mp->tl));
    PetscCall(MpnnAggregateTangent(layer, s, theta, want[0], thetadot, zdot, mp->sa2));
    /* dal2 = G2L(Wnadot dY), then dal = G2L(Wna dY) */
    PetscCall(MpnnGlobalToLocal(layer, mp->dma, mp->ga, wdy + s * n1 * H, NULL, 0, mp->dal));
    PetscCall(VecGetArrayRead(mp->dal, &dal));
    PetscCall(PetscArraycpy(dal2, dal, mp->nv * H));
    PetscCall(VecRestoreArrayRead(mp->dal, &dal));
    PetscCall(MpnnGlobalToLocal(layer, mp->dma, mp->ga, mp->sa + s * n1 * H, NULL, 0, mp->dal));
    PetscCall(VecZeroEntries(dxl));
    PetscCall(VecGetArray(dxl, &dxla));
    PetscCall(VecGetArrayRead(mp->dal, &dal));
    if (want[0]) PetscCall(VecGetArrayRead(mp->tl, &tla));
    /* the We dZdot and U dZdot^T parts */
    PetscCall(MpnnEdgeBackward(layer, s, theta + we, dal, MpnnSOExtra, &so, dthetadot ? dthetadot + we : NULL, dthetadot ? dthetadot + be : NULL, want[2] ? dxla : NULL));
    /* the Wedot dZ and Udot dZ^T parts, dZ = tanh'(Z) .* dal[r] again, chunk by chunk */
    for (PetscInt k0 = 0; k0 < mp->nmsg; k0 += mp->chunk) {
      const PetscInt     cnt = PetscMin(mp->chunk, mp->nmsg - k0);
      const PetscScalar *Z   = mp->z + (s * mp->nmsg + k0) * H;
      PetscScalar       *dZ  = mp->w;

      if (!(want[2] && thetadot) && !(dthetadot && tla)) break;
      MpnnGatherReceivers(layer, k0, cnt, dal, dZ);
      for (PetscInt j = 0; j < cnt * H; j++) {
        const PetscScalar t = PetscTanhScalar(Z[j]);

        dZ[j] *= 1 - t * t;
      }
      if (want[2] && thetadot) {
        PetscCall(MpnnGemm("N", "N", ein, cnt, H, thetadot + we, ein, dZ, H, 0.0, mp->du, ein));
        MpnnScatterInputs(layer, k0, cnt, mp->du, dxla);
      }
      if (dthetadot && tla) {
        MpnnGather(layer, k0, cnt, tla, PETSC_FALSE, mp->u);
        PetscCall(MpnnGemm("N", "T", ein, H, cnt, mp->u, ein, dZ, H, 1.0, dthetadot + we, ein));
      }
    }
    if (want[0]) PetscCall(VecRestoreArrayRead(mp->tl, &tla));
    PetscCall(VecRestoreArrayRead(mp->dal, &dal));
    PetscCall(VecRestoreArray(dxl, &dxla));
    if (want[2]) PetscCall(MpnnLocalToGlobal(layer, mp->dmx, dxl, mp->sx + s * n1 * in, n1 * in, mp->gx));
  }
  if (dxdot) {
    for (PetscInt i = 0; i < n * in; i++) dxdot[i] += mp->sx[i];
    if (thetadot) PetscCall(MpnnGemm("N", "N", in, n, C, thetadot + wn, in + H, dy, C, 1.0, dxdot, in));
  }
  if (dthetadot) PetscCall(MpnnNodeWeightGradient(layer, n, xdot, mp->sa2, dy, dthetadot + wn, NULL));
  PetscCall(VecDestroy(&dxl));
  PetscCall(PetscFree3(zdot, dal2, wdy));
  PetscFunctionReturn(0);
}

/* PyTorch-style names: edge_mlp (Linear(2 in + D + 1, H)), node_mlp (Linear(in + H, C)) */
static PetscErrorCode LayerTensors_Mpnn(Layer layer, PetscInt *n, LayerTensorInfo info[])
{
  Layer_Mpnn    *mp = (Layer_Mpnn *)layer->data;
  const PetscInt H = MpnnHidden(mp), ein = MpnnEdgeInputs(layer), in = layer->insize;
  const char    *names[4] = {"edge_mlp.weight", "edge_mlp.bias", "node_mlp.weight", "node_mlp.bias"};
  PetscInt       off[4], rows[4] = {H, H, mp->nout, mp->nout}, cols[4] = {ein, 1, in + H, 1};

  PetscFunctionBegin;
  MpnnOffsets(layer, &off[0], &off[1], &off[2], &off[3]);
  for (PetscInt k = 0; k < 4; k++) {
    const PetscInt dims[2] = {rows[k], cols[k]};

    PetscCall(LayerTensorSet_Private(&info[k], names[k], off[k], LAYER_TENSOR_SAME, cols[k] > 1 ? 2 : 1, dims));
  }
  *n = 4;
  PetscFunctionReturn(0);
}

static PetscErrorCode MpnnSetSizes(Layer layer, PetscInt nout, PetscInt hidden, PetscInt dim)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;

  PetscFunctionBegin;
  PetscCheck(nout > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "mpnn layer output channels must be positive, not %" PetscInt_FMT, nout);
  PetscCheck(hidden >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "mpnn layer message channels (hidden=) must be positive (or 0: as many as the outputs), not %" PetscInt_FMT, hidden);
  PetscCheck(dim >= 1 && dim <= 3, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "mpnn layer: the mesh's coordinate dimension (dim=) is 1, 2 or 3, not %" PetscInt_FMT, dim);
  if (layer->setupcalled && (nout != mp->nout || hidden != mp->hidden || dim != mp->dim)) PetscCall(LayerReset(layer));
  mp->nout   = nout;
  mp->hidden = hidden;
  mp->dim    = dim;
  PetscFunctionReturn(0);
}

/* C[:hidden=H][:dim=D] */
static PetscErrorCode LayerSetArguments_Mpnn(Layer layer, const char args[])
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;
  char       *end;
  long        nout = strtol(args, &end, 10), hidden = mp->hidden, dim = mp->dim;

  PetscFunctionBegin;
  PetscCheck(end != args && nout > 0 && nout <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG,
             "Malformed \"mpnn:%s\": mpnn takes a positive integer, its number of output channels per vertex, e.g. mpnn:16 (optionally :hidden=H for the message channels and :dim=D for the mesh's coordinate dimension)", args);
  while (*end == ':') {
    const char *key = end + 1;
    long       *val = NULL;
    char       *next;

    if (!strncmp(key, "hidden=", 7)) val = &hidden;
    if (!strncmp(key, "dim=", 4)) val = &dim;
    PetscCheck(val, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"mpnn:%s\": after the number of output channels mpnn takes hidden=H and dim=D, e.g. mpnn:16:hidden=32:dim=3", args);
    key  = strchr(key, '=') + 1;
    *val = strtol(key, &next, 10);
    PetscCheck(next != key && *val >= 0 && *val <= PETSC_MAX_INT, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"mpnn:%s\": hidden= and dim= take a non-negative integer, e.g. mpnn:16:hidden=32:dim=3", args);
    end = next;
  }
  PetscCheck(!*end, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_WRONG, "Malformed \"mpnn:%s\": write mpnn:C[:hidden=H][:dim=D], e.g. mpnn:16:hidden=32", args);
  PetscCall(MpnnSetSizes(layer, (PetscInt)nout, (PetscInt)hidden, (PetscInt)dim));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Mpnn(Layer layer, size_t len, char args[])
{
  Layer_Mpnn *mp    = (Layer_Mpnn *)layer->data;
  char        h[32] = "", d[32] = "";

  PetscFunctionBegin;
  if (mp->hidden) PetscCall(PetscSNPrintf(h, sizeof(h), ":hidden=%" PetscInt_FMT, mp->hidden));
  if (mp->dim != 2) PetscCall(PetscSNPrintf(d, sizeof(d), ":dim=%" PetscInt_FMT, mp->dim));
  PetscCall(PetscSNPrintf(args, len, "%" PetscInt_FMT "%s%s", mp->nout, h, d));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Mpnn(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Mpnn *mp   = (Layer_Mpnn *)layer->data;
  PetscInt    nout = mp->nout, hidden = mp->hidden, dim = mp->dim, chunk = mp->chunk;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Mesh message-passing layer options (mpnn)");
  PetscCall(PetNetOptionsInt("-mpnn_outputs", "Output channels per vertex", "LayerSetArguments", nout, &nout, NULL));
  PetscCall(PetNetOptionsInt("-mpnn_hidden", "Message channels (0: as many as the outputs)", "LayerSetArguments", hidden, &hidden, NULL));
  PetscCall(PetNetOptionsInt("-mpnn_dim", "Coordinate dimension of the mesh (edge geometry: D + 1 values)", "LayerSetArguments", dim, &dim, NULL));
  if (nout != mp->nout || hidden != mp->hidden || dim != mp->dim) PetscCall(MpnnSetSizes(layer, nout, hidden, dim));
  PetscCall(PetNetOptionsInt("-mpnn_chunk", "Messages per GEMM of the edge loop", "LayerSetFromOptions", chunk, &chunk, NULL));
  PetscCheck(chunk > 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-mpnn_chunk must be positive, not %" PetscInt_FMT, chunk);
  if (chunk != mp->chunk) PetscCall(MpnnResetMeshState(layer)); /* the scratch is sized by it */
  mp->chunk = chunk;
  PetscCall(PetscOptionsEnum("-mpnn_init", "Weight initialisation", "LayerInitializeWeights", LayerInitTypes, (PetscEnum)mp->init, (PetscEnum *)&mp->init, NULL));
  PetscCall(PetscOptionsReal("-mpnn_init_std", "Standard deviation for -mpnn_init normal", "LayerInitializeWeights", mp->initstd, &mp->initstd, NULL));
  PetscCheck(mp->initstd >= 0, PetscObjectComm((PetscObject)layer), PETSC_ERR_ARG_OUTOFRANGE, "-mpnn_init_std must be non-negative, not %g", (double)mp->initstd);
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerView_Mpnn(Layer layer, PetscViewer viewer)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "output channels %" PetscInt_FMT ", message channels %" PetscInt_FMT ", coordinate dimension %" PetscInt_FMT ", initialisation %s, ", mp->nout, MpnnHidden(mp), mp->dim, LayerInitTypes[mp->init]));
  if (mp->dm) {
    PetscInt vStart, vEnd, eStart, eEnd, cnt[2], all[2];

    PetscCall(DMPlexGetDepthStratum(mp->dm, 0, &vStart, &vEnd));
    PetscCall(DMPlexGetDepthStratum(mp->dm, 1, &eStart, &eEnd));
    cnt[0] = vEnd - vStart;
    cnt[1] = eEnd - eStart;
    PetscCall(MPIU_Allreduce(cnt, all, 2, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)layer)));
    PetscCall(PetscViewerASCIIPrintf(viewer, "mesh with %" PetscInt_FMT " local vertices and %" PetscInt_FMT " local edges on all ranks (ghosts counted on each rank)\n", all[0], all[1]));
  } else
    PetscCall(PetscViewerASCIIPrintf(viewer, "no mesh (LayerMeshSetDM())\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerReset_Mpnn(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(MpnnResetMeshState(layer)); /* the mesh itself stays: it is a setting */
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Mpnn(Layer layer)
{
  Layer_Mpnn *mp = (Layer_Mpnn *)layer->data;

  PetscFunctionBegin;
  PetscCall(MpnnResetMeshState(layer));
  PetscCall(DMDestroy(&mp->dm));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerMeshSetDM_C", NULL));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerMeshGetDM_C", NULL));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

/* Checks made once, collectively (every rank reaches the same verdict) */
static PetscErrorCode LayerMeshSetDM_Mpnn(Layer layer, DM dm)
{
  Layer_Mpnn *mp   = (Layer_Mpnn *)layer->data;
  MPI_Comm    comm = PetscObjectComm((PetscObject)layer);
  PetscMPIInt cmp, size, rank, bad[3], all[3];
  PetscBool   plex;
  PetscInt    cdim, dim, depth, eStart, eEnd, nroots, vStart, vEnd;
  Vec         coords;
  PetscSF     sf;
  char        name[300];

  PetscFunctionBegin;
  PetscCall(MpnnName(layer, sizeof(name), name));
  PetscCallMPI(MPI_Comm_compare(comm, PetscObjectComm((PetscObject)dm), &cmp));
  PetscCheck(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, comm, PETSC_ERR_ARG_NOTSAMECOMM,
             "LayerMeshSetDM(): %s and its mesh must live on the same communicator (that of the Net); a mesh on PETSC_COMM_SELF has no ghost exchange between the ranks: create it on the Net's communicator and distribute it with DMPlexDistribute()",
             name);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscObjectTypeCompare((PetscObject)dm, DMPLEX, &plex));
  PetscCheck(plex, comm, PETSC_ERR_SUP, "LayerMeshSetDM(): %s needs a DMPlex mesh, not a DM of type %s", name, ((PetscObject)dm)->type_name ? ((PetscObject)dm)->type_name : "(none)");
  PetscCall(DMGetCoordinatesLocal(dm, &coords));
  PetscCheck(coords, comm, PETSC_ERR_ARG_WRONGSTATE, "LayerMeshSetDM(): %s: the mesh has no coordinates, which give each edge its geometry (relative position and length): set them with DMSetCoordinates() or DMSetCoordinatesLocal()", name);
  PetscCall(DMGetCoordinateDim(dm, &cdim));
  PetscCheck(cdim == mp->dim, comm, PETSC_ERR_ARG_SIZ, "LayerMeshSetDM(): %s expects %" PetscInt_FMT "-D coordinates, but the mesh's are %" PetscInt_FMT "-D: write mpnn:%" PetscInt_FMT ":dim=%" PetscInt_FMT " (or -mpnn_dim %" PetscInt_FMT ")", name,
             mp->dim, cdim, mp->nout, cdim, cdim);
  PetscCall(DMGetDimension(dm, &dim));
  PetscCall(DMPlexGetDepth(dm, &depth));
  PetscCall(DMPlexGetDepthStratum(dm, 1, &eStart, &eEnd));
  PetscCall(DMPlexGetDepthStratum(dm, 0, &vStart, &vEnd));
  bad[0] = 0; /* a depth-1 point that is not an edge of two vertices */
  if (dim > 1 && depth != dim && vEnd > vStart) bad[0] = 1;
  for (PetscInt e = eStart; e < eEnd && !bad[0]; e++) {
    PetscInt cs;

    PetscCall(DMPlexGetConeSize(dm, e, &cs));
    if (cs != 2) bad[0] = 1;
  }
  PetscCall(DMGetPointSF(dm, &sf));
  nroots = -1;
  if (sf) PetscCall(PetscSFGetGraph(sf, &nroots, NULL, NULL, NULL));
  bad[1] = size > 1 && nroots < 0 ? size - rank : 0;
  bad[2] = 0;
  PetscCall(MPIU_Allreduce(bad, all, 3, MPI_INT, MPI_MAX, comm));
  PetscCheck(!all[0], comm, PETSC_ERR_ARG_WRONG,
             "LayerMeshSetDM(): %s needs the mesh's edges (depth-1 points with two vertices), but the mesh of dimension %" PetscInt_FMT " has depth %" PetscInt_FMT
             ": interpolate it (DMPlexInterpolate(), or interpolate=PETSC_TRUE when it is created)",
             name, dim, depth);
  PetscCheck(!all[1], comm, PETSC_ERR_ARG_WRONGSTATE,
             "LayerMeshSetDM(): %s: the mesh on %d ranks has no point SF on rank %d, so its ghost exchange is not set up (which vertices are shared, who owns them): distribute it with DMPlexDistribute() (or give the point SF with DMSetPointSF())",
             name, size, size - all[1]);
  PetscCall(PetscObjectReference((PetscObject)dm));
  PetscCall(MpnnResetMeshState(layer));
  PetscCall(DMDestroy(&mp->dm));
  mp->dm = dm;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerMeshGetDM_Mpnn(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  *dm = ((Layer_Mpnn *)layer->data)->dm;
  PetscFunctionReturn(0);
}

/*@
  LayerMeshSetDM - gives a mesh message-passing layer (mpnn) the DMPlex whose vertices are its nodes

  Collective

  Input Parameters:
+ layer - an mpnn layer (layers of other kinds ignore the call)
- dm    - an interpolated DMPlex with coordinates on the layer's communicator, distributed (its point SF set) when
          there is more than one rank

  Notes:
  The layer's samples are the mesh's vertices: on each rank the owned vertices (those that are not leaves of the point
  SF), in the order of the DM's global numbering, i.e. the order of a global Vec of a PetscSection with dof on the
  vertices, or S copies of them one after the other (a batch of S fields on the same mesh: [copy][vertex][channel],
  the same S on every rank); an error names both sizes otherwise. Each mesh edge carries a message in both directions, computed from
  the two end vertices' features and the edge's geometry (relative position and length, from the DM's coordinates,
  which must have the layer's dim=, 2 by default). The ghost exchange is the DM's own: DMGlobalToLocal() on a clone with
  dof = channels for the forward pass and JVPs, DMLocalToGlobal() with ADD_VALUES for the adjoint.

  dm is referenced, not copied; its edge lists are built at the next forward pass (the edges' geometry is taken then:
  after moving the mesh's coordinates, set the DM again). The mesh is not needed to set the layer up, only to apply it.
  Setting another mesh keeps the parameters. NetSetMeshDM() sets the mesh of every mpnn layer of a Net.

  Level: intermediate

.seealso: `LayerMeshGetDM()`, `NetSetMeshDM()`, `DMPlexDistribute()`, `DMGlobalToLocal()`, `DMLocalToGlobal()`
@*/
PetscErrorCode LayerMeshSetDM(Layer layer, DM dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidHeaderSpecific(dm, DM_CLASSID, 2);
  PetscTryMethod(layer, "LayerMeshSetDM_C", (Layer, DM), (layer, dm));
  PetscFunctionReturn(0);
}

/*@
  LayerMeshGetDM - the mesh of a mesh message-passing layer (mpnn)

  Not collective

  Input Parameter:
. layer - the layer

  Output Parameter:
. dm - its mesh (borrowed: do not destroy it), or NULL if none was set or the layer is not an mpnn layer

  Level: intermediate

.seealso: `LayerMeshSetDM()`, `NetSetMeshDM()`
@*/
PetscErrorCode LayerMeshGetDM(Layer layer, DM *dm)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(layer, LAYER_CLASSID, 1);
  PetscValidPointer(dm, 2);
  *dm = NULL;
  PetscTryMethod(layer, "LayerMeshGetDM_C", (Layer, DM *), (layer, dm));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Mpnn(Layer layer)
{
  Layer_Mpnn *mp;

  PetscFunctionBegin;
  PetscCall(PetscNew(&mp));
  mp->dim                    = 2;
  mp->chunk                  = 512;
  mp->init                   = LAYER_INIT_XAVIER;
  mp->initstd                = 0.01;
  layer->data                = mp;
  layer->collective          = PETSC_TRUE;
  layer->coupled             = PETSC_TRUE; /* a vertex's output reads its neighbours */
  layer->ops->setup          = LayerSetUp_Mpnn;
  layer->ops->initialize     = LayerInitialize_Mpnn;
  layer->ops->forward        = LayerForward_Mpnn;
  layer->ops->backward       = LayerBackward_Mpnn;
  layer->ops->jvp            = LayerJVP_Mpnn;
  layer->ops->sobackward     = LayerSOBackward_Mpnn;
  layer->ops->tensors        = LayerTensors_Mpnn;
  layer->ops->setarguments   = LayerSetArguments_Mpnn;
  layer->ops->getarguments   = LayerGetArguments_Mpnn;
  layer->ops->setfromoptions = LayerSetFromOptions_Mpnn;
  layer->ops->view           = LayerView_Mpnn;
  layer->ops->reset          = LayerReset_Mpnn;
  layer->ops->destroy        = LayerDestroy_Mpnn;
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerMeshSetDM_C", LayerMeshSetDM_Mpnn));
  PetscCall(PetscObjectComposeFunction((PetscObject)layer, "LayerMeshGetDM_C", LayerMeshGetDM_Mpnn));
  PetscFunctionReturn(0);
}
