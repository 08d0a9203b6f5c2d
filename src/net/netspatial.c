/*
  Grid mode: a Net on the fields of a 2-D or 3-D DMDA (NetSetGrid()), spatially parallel. A sample is one grid point
  (shape (channels)); a rank holds its block of each of nf fields, [nf][block points][c] with the points in the DMDA's
  order (x fastest), channels last. Nodes that act point by point (dense, relu, batchnorm, add, concat, ...) need nothing
  more: their batch is the rank's points (batchnorm's statistics are all-reduced over the Net's communicator, so they
  cover the whole field). The others are spatial nodes, each a local kernel composed with a data movement:

    window (convolutions, pools)   xb = H x            y = f_local(xb)        the rank's output block from its box
    scale  (upsampling)            xb = H x            y = f_local(xb)        (the same, with the kind's own box)
    pool   (globalavgpool)         y = S (sum over the block) / (grid points)  the field leaves the grid

  H, the halo exchange: the box of the input that this rank's output block reads, gathered from its owners with zeros
  outside the field (the padding; NetSpatialSetUpHalo_Private()); H^T adds it back (the adjoint of the halo exchange). f_local is a batch-mode
  copy of the layer without padding whose input is the box and whose output is exactly the block: the layer's own
  kernels, so forward, backward, jvp and sobackward are those of the unsplit layer:

    backward    dxb = J_local^T dy,  dtheta += local part;   dx = H^T dxb
    jvp         dxb = H dx;          dy = J_local (dxb, dtheta)
    sobackward  xdotb = H xdot;      local curvature term;   dxdot += H^T dxdotb

  The coarse grid of a window node keeps the fine grid's ranks: output index o belongs to the rank that owns its
  window's centre o*s - p + (k - 1)/2 * dilation, so a same convolution keeps the ownership and a stride-2 pooling
  halves it (blocks may become empty). S sums each rank's partial sums onto rank 0 of the group (S^T broadcasts), so
  after a globalavgpool the group's first rank holds the group's nf samples and the nodes after it (a dense head) run
  there as a batch.

  Overlap (-net_spatial_overlap, NetSetSpatialOverlap()): a convolution or average pooling starts its halo exchange,
  computes its whole block on the box whose halo has not arrived (right in the interior, whose windows read only the
  rank's own points and the padding), finishes the exchange, and computes the boundary layer again on the complete box
  in slabs (NetSpatialSetUpParts_Private()), overwriting what the first pass got wrong there; the layer then forgets
  what its first pass kept (conv's columns), so backward, jvp and sobackward read the complete box.

  Samples x space (-net_spatial_groups G): the communicator's ranks are split into G groups of consecutive ranks; each
  group holds its own fields on its own DMDA (same sizes), so a batch of G nf fields is spread over them. The
  parameters' gradient is the sum over all ranks (the Net's usual reduction) and batchnorm reduces over all groups:
  the result is that of one rank holding all G nf fields.
  A convolution with a partition PxQ (P Q = G) splits its channels across the groups instead of its fields: see
  NetSpatialModelForward_Private() below and netmodel.c.

  Pipeline stages (-net_stages S, netplace.c): each stage's ranks get their own DMDA of the grid's sizes
  (NetSpatialSetUpStage_Private(); net->sgrid, net->scomm), on which vgrid and the spatial nodes live; the nodes take a
  micro-batch's fields as their batch (NetSpatialFields_Private()), and the Net's input reaches the first stage by
  NetSpatialCreateStageSF_Private().
*/
#include <petnet/private/netimpl.h>
#include <petnet/private/layoutimpl.h>
#include <petscdmda.h>

#define NET_GRID_MAX 3

/* the communicator the spatial nodes exchange on: the spatial group's, or with pipeline stages the stage's */
#define NetSpatialNodeComm(net) ((net)->scomm != MPI_COMM_NULL ? (net)->scomm : (net)->gcomm)

static PetscLogEvent NET_SPATIAL_HALO      = 0; /* the halo exchanges of the spatial nodes (registered at the first set-up) */
static PetscLogEvent NET_SPATIAL_HALO_WAIT = 0; /* ... the part of them spent waiting for the neighbours' messages */

/* A grid a value lies on: its extent, the group's ranks along each dim and their ownership, this rank's block */
typedef struct {
  PetscInt    nsd;                    /* spatial dims, slowest first: (y, x) or (z, y, x) */
  PetscInt64  N[NET_GRID_MAX];        /* extent */
  PetscMPIInt nr[NET_GRID_MAX];       /* ranks of the group along each dim */
  PetscInt64 *own[NET_GRID_MAX];      /* ownership sizes along each dim (nr[d] entries) */
  PetscInt64  lo[NET_GRID_MAX];       /* this rank's block [lo, lo + sz) */
  PetscInt64  sz[NET_GRID_MAX];       /* ... */
  PetscInt    npoints;                /* points in the block */
  PetscMPIInt coord[NET_GRID_MAX];    /* this rank's coordinates in the group's grid of ranks */
  PetscBool   periodic[NET_GRID_MAX]; /* the DMDA is periodic along the dim: windows wrap around (circular padding) */
} NetGrid;

/* A slab of a window node's output block computed on its own after the halo arrived (an overlapped exchange) */
typedef struct {
  PetscInt64 olo[NET_GRID_MAX], osz[NET_GRID_MAX]; /* its outputs: offset in the rank's output block, sizes */
  PetscInt64 ilo[NET_GRID_MAX], isz[NET_GRID_MAX]; /* the input they read: offset in the rank's box, sizes */
  Layer      local;                                /* the batch-mode copy on that input */
} NetSpatialPart;

typedef enum { NET_SPATIAL_WINDOW, NET_SPATIAL_SCALE, NET_SPATIAL_GLOBAL, NET_SPATIAL_JOIN } NetSpatialKind;
static const char *const NetSpatialKinds[] = {"window", "upsampling", "global pooling", "join, repartitioned"};

typedef struct {
  NetSpatialKind kind;
  NetGrid       *in, *out;                             /* the grids of the input and (window, scale) of the output */
  PetscInt64     blo[NET_GRID_MAX], bhi[NET_GRID_MAX]; /* the input box this rank's output block reads */
  PetscInt       cin, cout;
  Layer          local; /* the batch-mode copy on the box; NULL when this rank's output block is empty */
  PetscInt       npart; /* an overlapped halo exchange: the slabs of the boundary layer (0: exchange, then compute) */
  NetSpatialPart part[2 * NET_GRID_MAX];
  PetscInt64     total; /* global pooling: the grid points of the field */

  /* for the current batch (nf fields on the group's ranks). The box, its halo and the slabs hold values of the element
     type the node computes in (NetNodeElem(): float when the store is single or bfloat16, else double); a call in the
     other type (the second-order adjoint and the per-node Jacobians read double) gathers the box again in its type. */
  PetscInt     nf, batchgen;
  PetNetLayout L;             /* the input tensor (nf, [P,] N, M, c) over the group's ranks */
  PetscSF      sf;            /* the box's entries owned by other ranks of the group (leaves: halo[]) */
  PetscInt     nremote;       /* ... their number, */
  PetscInt    *rlocal;        /* ... their places in the box */
  void        *halo;          /* ... and their values (received apart, so a first pass can read the box meanwhile) */
  void        *pin, *pout;    /* overlap: a slab's input and output for nf fields (the largest slab's sizes, double's bytes) */
  PetscInt     nruns, runlen; /* the box's entries this rank owns: nruns runs of runlen contiguous values ... */
  PetscInt    *xoff, *boff;   /* ... starting at xoff[r] in the rank's block and at boff[r] in the box */
  PetscBool    padded;        /* some box entries lie outside the field (zero) */
  PetscBool    identity;      /* on every rank of the group the box is the rank's block (no halo, no padding: a stride-k
                                 pooling of blocks that k divides): the node reads its input where it lies, with no box */
  PetscInt     nbox;          /* the box's entries */
  NetElem      boxelem;       /* the element type of xbox and dbox (allocated), ... */
  NetElem      fwdelem;       /* ... and of the last local forward (the local layer's state, the box's values) */
  void        *xbox;          /* the box at the last forward [nf][box points][cin] */
  void        *dbox;          /* the (co)tangent on the box */
  PetscBool    boxmade;       /* xbox and dbox are allocated (for this batch layout) */
  PetscBool    xboxvalid;     /* xbox holds the box of the last forward on this batch layout */
  PetscScalar *work;          /* global pooling: nf c partial sums (double, whatever the element type) */

  /* bfloat16 (NetSpatialStreamsBF16_Private(): a window node whose kind forgets, at -net_precision bfloat16): the node
     takes the stored bfloat16 values themselves and never widens a whole block. Its output block is computed in slabs
     of sm planes along the slowest dim, each by a copy of the layer (slab[0]; slab[1] for a shorter last slab) on the
     box planes its windows read: [o s0, (o + sm - 1) s0 + ext0) for output planes [o, o + sm). The halo arrives in
     bfloat16 and is widened into the float box; an identity box whose windows tile it along the slowest dim (ext0 =
     s0, e.g. average pooling by its own size) has no box at all: each slab is widened from x and rounded into dx. */
  PetscInt s0, ext0;   /* the window's step and extent along the slowest dim (set-up) */
  PetscInt sm, nslabs; /* output planes per slab and slabs of the rank's block, for batches of slabnf fields */
  PetscInt slabnf;     /* ... (0: not chosen yet) */
  Layer    slab[2];    /* the copies on a slab of sm planes and on the last, shorter one (NULL: none) */
  PetscInt fboxes;     /* the float boxes of this path made for batch layout fboxgen: 1 xbox, 2 dbox (flags, not
                          pointers, so that every rank, an empty box included, decides alike) */
  PetscInt fboxgen;

  /* a join (add, concat) of values on grids of the same extent but different ownership (a stride-2 pool of an odd block
     followed by an upsampling): input i > 0 is moved to input 0's ownership by a PetscSF jsf[i] (roots: input i's
     block, leaves: input 0's block), xr[i] = bcast(x[i]), its adjoint the sum-reduce (jsf[i] NULL: it has it) */
  PetscInt  nin;
  PetscBool ready; /* the batch layout's operators are built (batchgen) */
  PetscSF  *jsf;
  PetscInt *jn;        /* leaves of jsf[i]: input 0's block for input i's channels */
  void    **xr, **dxr; /* input i's repartitioned value and (co)tangent (double's bytes: either type fits) */
} NetSpatial;

static PetscErrorCode NetSpatialSetUpHalo_Private(NetSpatial *, const PetscInt64[], const PetscInt64[]);

static PetscErrorCode NetGridDestroy_Private(NetGrid **g)
{
  PetscFunctionBegin;
  if (!*g) PetscFunctionReturn(0);
  for (PetscInt d = 0; d < (*g)->nsd; d++) PetscCall(PetscFree((*g)->own[d]));
  PetscCall(PetscFree(*g));
  PetscFunctionReturn(0);
}

/* a copy of g with the ownership sizes own[d] (or g's when NULL) and the extents N (or g's), and its block */
static PetscErrorCode NetGridDerive_Private(const NetGrid *g, const PetscInt64 N[], PetscInt64 *const own[], NetGrid **out)
{
  NetGrid *h;

  PetscFunctionBegin;
  PetscCall(PetscNew(&h));
  h->nsd     = g->nsd;
  h->npoints = 1;
  for (PetscInt d = 0; d < g->nsd; d++) {
    h->N[d]        = N ? N[d] : g->N[d];
    h->nr[d]       = g->nr[d];
    h->coord[d]    = g->coord[d];
    h->periodic[d] = g->periodic[d];
    PetscCall(PetscMalloc1(g->nr[d], &h->own[d]));
    PetscCall(PetscArraycpy(h->own[d], own && own[d] ? own[d] : g->own[d], g->nr[d]));
    h->lo[d] = 0;
    for (PetscMPIInt c = 0; c < g->coord[d]; c++) h->lo[d] += h->own[d][c];
    h->sz[d] = h->own[d][g->coord[d]];
    h->npoints *= (PetscInt)h->sz[d];
  }
  *out = h;
  PetscFunctionReturn(0);
}

static PetscBool NetGridEqual_Private(const NetGrid *a, const NetGrid *b)
{
  if (a->nsd != b->nsd) return PETSC_FALSE;
  for (PetscInt d = 0; d < a->nsd; d++) {
    if (a->N[d] != b->N[d]) return PETSC_FALSE;
    for (PetscMPIInt c = 0; c < a->nr[d]; c++)
      if (a->own[d][c] != b->own[d][c]) return PETSC_FALSE;
  }
  return PETSC_TRUE;
}

static PetscErrorCode NetGridToString_Private(const NetGrid *g, size_t len, char str[])
{
  PetscFunctionBegin;
  if (g->nsd == 2)
    PetscCall(PetscSNPrintf(str, len, "%" PetscInt64_FMT "x%" PetscInt64_FMT, g->N[0], g->N[1]));
  else
    PetscCall(PetscSNPrintf(str, len, "%" PetscInt64_FMT "x%" PetscInt64_FMT "x%" PetscInt64_FMT, g->N[0], g->N[1], g->N[2]));
  PetscFunctionReturn(0);
}

/*@
  NetSetSpatialGroups - splits the Net's ranks into groups for samples x space parallelism: each group of consecutive
  ranks holds its own fields on its own copy of the grid (spatial parallelism inside the group), and the groups hold
  different fields (data parallelism across them)

  Logically collective

  Input Parameters:
+ net     - the Net
- ngroups - the number of groups; it must divide the number of ranks (1: every field spread over all ranks)

  Options Database Key:
. -net_spatial_groups <G> - the same from the options

  Notes:
  Call it before NetGetSpatialComm(): the DMDA given to NetSetGrid() lives on the group's communicator.

  The ranks holding the same spatial block in every group (rank s of each group) form a second communicator of G
  ranks: a conv2d or conv3d node with a partition P_out x P_in, P_out P_in = G (NetSetNodePartition()), splits its
  output and input channels over them, each convolving the box of its block for the fields of all groups. Every
  group's DMDA must then split the grid alike (the same ownership ranges).

  With pipeline stages (`NetSetStages()`), each stage's ranks are cut alike into ngroups groups of consecutive ranks,
  each with its own DMDA of the grid's sizes, and group g of every stage holds the fields of group g: ngroups must
  divide a stage's ranks, and every group's DMDA must split the grid alike.

  Level: intermediate

.seealso: `NetGetSpatialComm()`, `NetSetGrid()`, `NetSetStages()`
@*/
PetscErrorCode NetSetSpatialGroups(Net net, PetscInt ngroups)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  PetscCheck(ngroups >= 1 && size % ngroups == 0, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE,
             "-net_spatial_groups %" PetscInt_FMT " does not divide the %d ranks into equal groups: give a divisor of %d (1: each field spread over all ranks)", ngroups, size, size);
  PetscCheck(net->gcomm == MPI_COMM_NULL || ngroups == net->ngroups, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONGSTATE,
             "NetSetSpatialGroups(): the group communicator was already made for %" PetscInt_FMT " groups (NetGetSpatialComm()); set the groups before asking for it", net->ngroups);
  net->ngroups = ngroups;
  PetscFunctionReturn(0);
}

/*@
  NetSetSpatialOverlap - in grid mode, overlap the halo exchange of each convolution and average pooling with its
  computation

  Logically collective

  Input Parameters:
+ net     - the Net
- overlap - PETSC_TRUE (the default) or PETSC_FALSE

  Options Database Key:
. -net_spatial_overlap <bool> - the same from the options

  Notes:
  Overlapped, a node starts its halo exchange, computes its whole output block on the box whose halo has not arrived
  (correct in the interior, whose windows read only the rank's own points), finishes the exchange, and computes the
  boundary layer again in up to 2 d slabs on the complete box. The boundary layer is computed twice (for a block of n
  points a side and a window of extent k, about (k - 1)/n more work per split dim); in exchange, a rank waits for its
  neighbours only after its interior. Results equal the unoverlapped ones to round-off. Max pooling keeps the maxima's
  places from its forward and is never overlapped. Takes effect at the next NetSetUp().

  Level: advanced

.seealso: `NetSetGrid()`, `NetSetSpatialGroups()`
@*/
PetscErrorCode NetSetSpatialOverlap(Net net, PetscBool overlap)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveBool(net, overlap, 2);
  if (overlap != net->spoverlap && net->setupcalled) PetscCall(NetReset(net));
  net->spoverlap = overlap;
  PetscFunctionReturn(0);
}

/*@
  NetGetSpatialComm - the communicator of this rank's spatial group, on which to create the DMDA for NetSetGrid()

  Collective

  Input Parameter:
. net - the Net

  Output Parameter:
. comm - the group's communicator (the Net's own when there is one group); owned by the Net, do not free it

  Level: intermediate

.seealso: `NetSetSpatialGroups()`, `NetSetGrid()`
@*/
PetscErrorCode NetGetSpatialComm(Net net, MPI_Comm *comm)
{
  PetscMPIInt size, rank;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(comm, 2);
  if (net->gcomm == MPI_COMM_NULL) {
    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
    PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
    PetscCallMPI(MPI_Comm_split(PetscObjectComm((PetscObject)net), rank / (size / (PetscMPIInt)net->ngroups), rank, &net->gcomm));
    /* the same place in every group: rank s of each group, in group order (a split convolution's channels, netmodel.c) */
    PetscCallMPI(MPI_Comm_split(PetscObjectComm((PetscObject)net), rank % (size / (PetscMPIInt)net->ngroups), rank, &net->xcomm));
  }
  *comm = net->gcomm;
  PetscFunctionReturn(0);
}

/*@
  NetSetGrid - puts a Net on the fields of a 2-D or 3-D DMDA (grid mode): a sample is a grid point, the input shape is
  (dof), convolutions and pools act on the distributed field (each rank computing its block from the box of the input
  it reads, gathered from the ranks that own it), upsampling refines it, and globalavgpool reduces it to one sample
  per field

  Collective

  Input Parameters:
+ net - the Net
- da  - a 2-D or 3-D DMDA on the group communicator (NetGetSpatialComm()), with dof the input channels; or NULL to
        return to batch mode

  Notes:
  An input batch holds, on each rank, its block of nf fields: [nf][block points][dof] with the points in the DMDA's order
  (a DMDA global Vec is one field). The output holds each field's points on the output grid, or, after a
  globalavgpool, the group's nf samples on its first rank. Windowed layers keep their batch-mode meaning (kernel,
  stride, padding, dilation, groups); the output grid of a convolution or pool is split among the ranks that own the
  centres of the windows. With several groups (NetSetSpatialGroups()) every group gives its own DMDA of the same
  sizes. A Net that was set up is laid out anew.

  Along a dim where the DMDA is DM_BOUNDARY_NONE or DM_BOUNDARY_GHOSTED the windows read zeros beyond the field, as
  the batch-mode layers' padding does; along a DM_BOUNDARY_PERIODIC dim they wrap around (PyTorch's
  padding_mode='circular'), so a same convolution (stride 1, padding K/2) of a periodic field is that of the torus.
  Upsampling interpolates as on a bounded grid along every dim.

  Level: intermediate

.seealso: `NetSetSpatialGroups()`, `NetGetSpatialComm()`, `NetDMDASetUp()`, `NetCreateOutputLayout()`
@*/
PetscErrorCode NetSetGrid(Net net, DM da)
{
  MPI_Comm       comm, gcomm;
  PetscBool      isda;
  PetscInt       dim, M, N, P, dof;
  PetscMPIInt    cmp;
  DMBoundaryType b[3];
  PetscInt64     mine[4], most[4], least[4];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  comm = PetscObjectComm((PetscObject)net);
  if (!da) {
    if (net->grid) {
      PetscCall(NetReset(net));
      PetscCall(DMDestroy(&net->grid));
    }
    PetscFunctionReturn(0);
  }
  PetscValidHeaderSpecific(da, DM_CLASSID, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)da, DMDA, &isda));
  PetscCheck(isda, comm, PETSC_ERR_ARG_WRONG, "NetSetGrid() needs a DMDA (DMDACreate2d() or DMDACreate3d()), not a DM of type %s", ((PetscObject)da)->type_name ? ((PetscObject)da)->type_name : "(not set)");
  PetscCall(NetGetSpatialComm(net, &gcomm));
  PetscCallMPI(MPI_Comm_compare(gcomm, PetscObjectComm((PetscObject)da), &cmp));
  PetscCheck(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, PETSC_COMM_SELF, PETSC_ERR_ARG_NOTSAMECOMM, "NetSetGrid(): the DMDA must live on the communicator of this rank's spatial group (NetGetSpatialComm(); with -net_spatial_groups %" PetscInt_FMT ")",
             net->ngroups);
  PetscCall(DMDAGetInfo(da, &dim, &M, &N, &P, NULL, NULL, NULL, &dof, NULL, &b[0], &b[1], &b[2], NULL));
  PetscCheck(dim == 2 || dim == 3, comm, PETSC_ERR_ARG_WRONG,
             "NetSetGrid(): the DMDA is %" PetscInt_FMT "-D; grid mode convolves 2-D and 3-D grids (DMDACreate2d(), DMDACreate3d()); a 1-D field is a batch of points: give it as the input without a grid", dim);
  for (PetscInt a = 0; a < dim; a++)
    PetscCheck(b[a] != DM_BOUNDARY_TWIST && b[a] != DM_BOUNDARY_MIRROR, comm, PETSC_ERR_SUP,
               "NetSetGrid(): the DMDA's boundary along %c is %s: grid mode pads with zeros (DM_BOUNDARY_NONE or GHOSTED, as the batch-mode layers do) or wraps around (DM_BOUNDARY_PERIODIC)", "xyz"[a], DMBoundaryTypes[b[a]]);
  /* every group's grid has the same sizes and dof */
  mine[0] = dim;
  mine[1] = M;
  mine[2] = N;
  mine[3] = dim == 3 ? P : 1;
  PetscCall(MPIU_Allreduce(mine, most, 4, MPIU_INT64, MPI_MAX, comm));
  PetscCall(MPIU_Allreduce(mine, least, 4, MPIU_INT64, MPI_MIN, comm));
  PetscCheck(most[0] == least[0] && most[1] == least[1] && most[2] == least[2] && most[3] == least[3], comm, PETSC_ERR_ARG_INCOMP, "NetSetGrid(): the spatial groups gave DMDAs of different sizes: every group's grid must have the same sizes");
  if (net->in.ndim) {
    char shape[64];

    PetscCall(PetNetShapeToString(&net->in, sizeof(shape), shape));
    PetscCheck(net->in.ndim == 1 && net->in.dim[0] == dof, comm, PETSC_ERR_ARG_INCOMP,
               "NetSetGrid(): in grid mode a sample is one grid point, so the input shape must be (dof) = (%" PetscInt_FMT "), not %s: give -net_input_shape %" PetscInt_FMT " or leave it unset", dof, shape, dof);
  } else {
    PetNetShape in = {1, {dof}};

    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetscObjectReference((PetscObject)da));
  if (net->setupcalled) PetscCall(NetReset(net));
  PetscCall(DMDestroy(&net->grid));
  net->grid = da;
  PetscFunctionReturn(0);
}

/*
  Pipeline stages on the grid (-net_stages S, -net_microbatches M; netplace.c): the R = size / S ranks of stage s,
  [s R, (s + 1) R), are cut into the -net_spatial_groups G groups of R / G consecutive ranks (G = 1: one group, the
  stage), and each such stage group gets its own DMDA of the grid's sizes, boundaries and stencil, decomposed by PETSc
  over its R / G ranks (so every stage group's is decomposed alike), on which the stage's spatial nodes run for the
  fields of its group: stage group g of every stage holds the fields of the caller's group g (the DMDA given to
  NetSetGrid() on NetGetSpatialComm()'s size / G ranks). What the placement does not run (sub-graphs, a count of stages
  that does not divide the ranks, G not dividing a stage's ranks) gets no stage grid and is refused there.
*/
static PetscErrorCode NetSpatialSetUpStage_Private(Net net)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)net);
  const PetscInt  S    = PetscMax(1, net->nstages);
  PetscMPIInt     size, rank;
  PetscInt        dim, M, N, P, dof, sw;
  DMBoundaryType  bt[3];
  DMDAStencilType st;

  PetscFunctionBegin;
  if (S == 1 && net->nmicro <= 1) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (net->parallel == NET_PARALLEL_SUBGRAPH || size % S || (size / S) % net->ngroups) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_split(comm, (PetscMPIInt)(rank / (size / (S * net->ngroups))), rank, &net->scomm));
  PetscCall(DMDAGetInfo(net->grid, &dim, &M, &N, &P, NULL, NULL, NULL, &dof, &sw, &bt[0], &bt[1], &bt[2], &st));
  if (dim == 2)
    PetscCall(DMDACreate2d(net->scomm, bt[0], bt[1], st, M, N, PETSC_DECIDE, PETSC_DECIDE, dof, sw, NULL, NULL, &net->sgrid));
  else
    PetscCall(DMDACreate3d(net->scomm, bt[0], bt[1], bt[2], st, M, N, P, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, dof, sw, NULL, NULL, NULL, &net->sgrid));
  PetscCall(DMSetUp(net->sgrid));
  PetscFunctionReturn(0);
}

/* NetSetUp(): the grid of the Net's input, from the DMDA (vgrid[0]; with stages the stage's DMDA); nothing in batch mode */
PetscErrorCode NetSpatialSetUpInput_Private(Net net)
{
  NetGrid        *g;
  PetscInt        dim, M[3], m[3], dof;
  const PetscInt *range[3];
  PetscMPIInt     grank;
  DMBoundaryType  bt[3];
  DM              da;

  PetscFunctionBegin;
  if (!net->grid) PetscFunctionReturn(0);
  if (!NET_SPATIAL_HALO) PetscCall(PetscLogEventRegister("NetSpatialHalo", NET_CLASSID, &NET_SPATIAL_HALO));
  if (!NET_SPATIAL_HALO_WAIT) PetscCall(PetscLogEventRegister("NetSpatialHaloWait", NET_CLASSID, &NET_SPATIAL_HALO_WAIT));
  PetscCall(NetSpatialSetUpStage_Private(net));
  da = net->sgrid ? net->sgrid : net->grid;
  PetscCall(DMDAGetInfo(da, &dim, &M[0], &M[1], &M[2], &m[0], &m[1], &m[2], &dof, NULL, &bt[0], &bt[1], &bt[2], NULL));
  PetscCheck(net->in.ndim == 1 && net->in.dim[0] == dof, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP, "In grid mode the Net's input shape must be (%" PetscInt_FMT "), the DMDA's dof", dof);
  PetscCall(DMDAGetOwnershipRanges(da, &range[0], &range[1], &range[2]));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)da), &grank));
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->vgrid));
  PetscCall(PetscNew(&g));
  g->nsd     = dim;
  g->npoints = 1;
  /* DMDA axis a (0 = x) is spatial dim dim - 1 - a; rank = i + m0 (j + m1 k) */
  for (PetscInt a = 0, r = grank; a < dim; a++) {
    const PetscInt d = dim - 1 - a;

    g->N[d]        = M[a];
    g->nr[d]       = (PetscMPIInt)m[a];
    g->coord[d]    = (PetscMPIInt)(r % m[a]);
    g->periodic[d] = (PetscBool)(bt[a] == DM_BOUNDARY_PERIODIC);
    r /= m[a];
    PetscCall(PetscMalloc1(m[a], &g->own[d]));
    for (PetscInt c = 0; c < m[a]; c++) g->own[d][c] = range[a][c];
  }
  for (PetscInt d = 0; d < dim; d++) {
    g->lo[d] = 0;
    for (PetscMPIInt c = 0; c < g->coord[d]; c++) g->lo[d] += g->own[d][c];
    g->sz[d] = g->own[d][g->coord[d]];
    g->npoints *= (PetscInt)g->sz[d];
  }
  net->vgrid[0] = g;
  PetscFunctionReturn(0);
}

/* a join's repartitions for the current batch layout (all: and their arrays of pointers) */
static PetscErrorCode NetSpatialResetJoin_Private(NetSpatial *sp, PetscBool all)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; sp->jsf && i < sp->nin; i++) {
    PetscCall(PetscSFDestroy(&sp->jsf[i]));
    PetscCall(PetscFree(sp->xr[i]));
    PetscCall(PetscFree(sp->dxr[i]));
    sp->jn[i] = 0;
  }
  if (all) PetscCall(PetscFree4(sp->jsf, sp->jn, sp->xr, sp->dxr));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialDestroyNode_Private(Net net, PetscInt k)
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;

  PetscFunctionBegin;
  if (!sp) PetscFunctionReturn(0);
  PetscCall(LayerDestroy(&sp->local));
  for (PetscInt i = 0; i < sp->npart; i++) PetscCall(LayerDestroy(&sp->part[i].local));
  PetscCall(LayerDestroy(&sp->slab[0]));
  PetscCall(LayerDestroy(&sp->slab[1]));
  PetscCall(PetNetLayoutDestroy(&sp->L));
  PetscCall(PetscSFDestroy(&sp->sf));
  PetscCall(PetscFree(sp->rlocal));
  PetscCall(PetscFree(sp->halo));
  PetscCall(PetscFree(sp->pin));
  PetscCall(PetscFree(sp->pout));
  PetscCall(PetscFree2(sp->xoff, sp->boff));
  PetscCall(PetscFree(sp->xbox));
  PetscCall(PetscFree(sp->dbox));
  PetscCall(PetscFree(sp->work));
  PetscCall(NetSpatialResetJoin_Private(sp, PETSC_TRUE));
  PetscCall(PetscFree(net->nodes[k].sp));
  PetscFunctionReturn(0);
}

/* NetReset(): the grids of the values and the spatial nodes (the DMDA and the groups stay) */
PetscErrorCode NetSpatialReset_Private(Net net)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) PetscCall(NetSpatialDestroyNode_Private(net, k));
  if (net->vgrid)
    for (PetscInt v = 0; v <= net->nlayers; v++) {
      NetGrid *g = (NetGrid *)net->vgrid[v];

      PetscCall(NetGridDestroy_Private(&g));
    }
  PetscCall(PetscFree(net->vgrid));
  PetscCall(DMDestroy(&net->sgrid));
  if (net->scomm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&net->scomm));
  PetscFunctionReturn(0);
}

PetscErrorCode NetSpatialDestroy_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(DMDestroy(&net->grid));
  if (net->gcomm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&net->gcomm));
  if (net->xcomm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&net->xcomm));
  PetscFunctionReturn(0);
}

/* the ownership of a window's output along one dim: o belongs to the rank owning its window's centre o s + c0 */
static PetscInt64 NetWindowBoundary_Private(PetscInt64 b, PetscInt64 N, PetscInt64 Nout, PetscInt64 s, PetscInt64 c0)
{
  PetscInt64 o;

  if (b <= 0) return 0;
  if (b >= N) return Nout;
  o = b - c0 <= 0 ? 0 : (b - c0 + s - 1) / s; /* the first o with o s + c0 >= b */
  return PetscMin(PetscMax(o, 0), Nout);
}

/* A local copy of node k's layer: batch mode on an input box of sizes isz (x nf fields), without padding (window) or
   set to compute this rank's block (scale); its output must have the sizes osz. NULL when there is nothing to compute. */
static PetscErrorCode NetSpatialCreateLocal_Private(Net net, PetscInt k, NetSpatial *sp, const PetscInt64 isz[], const PetscInt64 osz[], Layer *local)
{
  Layer       layer = net->layers[k];
  PetNetShape in;
  char        args[256] = "";
  PetscInt    nsd       = sp->in->nsd;

  PetscFunctionBegin;
  *local = NULL;
  for (PetscInt d = 0; d < nsd; d++)
    if (osz[d] <= 0 || isz[d] <= 0) PetscFunctionReturn(0); /* an empty block: nothing to compute */
  PetscCall(LayerCreate(PETSC_COMM_SELF, local));
  PetscCall(LayerSetType(*local, ((PetscObject)layer)->type_name));
  PetscCall(LayerSetIndex(*local, layer->index));
  PetscTryTypeMethod(layer, getarguments, sizeof(args), args);
  PetscCall(LayerSetArguments(*local, args));
  if (((PetscObject)layer)->prefix && (*local)->ops->setfromoptions) { /* the node's kind options (-layer0_conv2d_algorithm, ...) */
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*local, ((PetscObject)layer)->prefix));
    PetscObjectOptionsBegin((PetscObject)*local);
    PetscUseTypeMethod(*local, setfromoptions, PetscOptionsObject);
    PetscOptionsEnd();
  }
  if (sp->kind == NET_SPATIAL_WINDOW) {
    PetscInt zero[NET_GRID_MAX] = {0, 0, 0};

    PetscUseTypeMethod(*local, setpadding, nsd, zero);
  } else {
    PetscInt64 olo[NET_GRID_MAX], ohi[NET_GRID_MAX];

    for (PetscInt d = 0; d < nsd; d++) {
      olo[d] = sp->out->lo[d];
      ohi[d] = sp->out->lo[d] + sp->out->sz[d];
    }
    PetscUseTypeMethod(*local, setgridblock, nsd, sp->in->N, sp->blo, sp->bhi, olo, ohi);
  }
  in.ndim = nsd + 1;
  for (PetscInt d = 0; d < nsd; d++) in.dim[d] = (PetscInt)isz[d];
  in.dim[nsd] = sp->cin;
  PetscCall(LayerSetInputShape(*local, &in));
  PetscCall(LayerSetTraining(*local, layer->training));
  PetscCall(LayerSetUp(*local));
  {
    PetscBool ok = (PetscBool)((*local)->out.ndim == nsd + 1 && (*local)->out.dim[nsd] == sp->cout && (*local)->nparams == layer->nparams);

    for (PetscInt d = 0; d < nsd; d++) ok = (PetscBool)(ok && (*local)->out.dim[d] == osz[d]);
    PetscCheck(ok, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the local copy of its layer on the rank's box does not compute the rank's output block", net->nodes[k].name);
  }
  PetscFunctionReturn(0);
}

/* floor(a / b) for b > 0 and any a */
static PetscInt64 NetFloorDiv_Private(PetscInt64 a, PetscInt64 b)
{
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/*
  An overlapped halo exchange of window node k (NetSetSpatialOverlap()). The interior of the rank's output block is the
  outputs whose windows read only what the rank has before the halo arrives: its own points and the padding beyond the
  field's edges. Along dim d that is [ilo, ihi) with
      ilo = max(olo, ceil((lo + p) / s))           unless the block starts at the field's edge (lo = 0)
      ihi = min(ohi, floor((hi + p - ext) / s) + 1)  unless it ends there (hi = N)
  for the rank's input block [lo, hi), window extent ext, stride s, padding p (along a periodic dim the edges are no
  exception: the padding there is the other side's halo). The rest, the boundary layer, is cut
  into up to 2 nsd slabs, peeled one dim at a time: slab (d, below/above) lies inside the interior along the dims
  before d, below or above it along d, and anywhere in the block along the dims after d. Each slab gets its own copy of
  the layer on the input its outputs read. No slabs (no overlap) when the interior is empty or is the whole block.
*/
static PetscErrorCode NetSpatialSetUpParts_Private(Net net, PetscInt k, NetSpatial *sp, const PetscInt kk[], const PetscInt s[], const PetscInt p[], const PetscInt dil[])
{
  const NetGrid *gin = sp->in, *gout = sp->out;
  const PetscInt nsd = gin->nsd;
  PetscInt64     olo[NET_GRID_MAX], ohi[NET_GRID_MAX], ilo[NET_GRID_MAX], ihi[NET_GRID_MAX], ext[NET_GRID_MAX];
  PetscBool      whole = PETSC_TRUE;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd; d++) {
    ext[d] = (PetscInt64)dil[d] * (kk[d] - 1) + 1;
    olo[d] = ilo[d] = gout->lo[d];
    ohi[d] = ihi[d] = gout->lo[d] + gout->sz[d];
    if (gin->lo[d] > 0 || gin->periodic[d]) ilo[d] = PetscMax(ilo[d], -NetFloorDiv_Private(-(gin->lo[d] + p[d]), s[d]));
    if (gin->lo[d] + gin->sz[d] < gin->N[d] || gin->periodic[d]) ihi[d] = PetscMin(ihi[d], NetFloorDiv_Private(gin->lo[d] + gin->sz[d] + p[d] - ext[d], s[d]) + 1);
    if (ihi[d] <= ilo[d]) PetscFunctionReturn(0); /* no interior */
    if (ilo[d] != olo[d] || ihi[d] != ohi[d]) whole = PETSC_FALSE;
  }
  if (whole) PetscFunctionReturn(0); /* no halo */
  for (PetscInt d = 0; d < nsd; d++)
    for (PetscInt side = 0; side < 2; side++) {
      NetSpatialPart *pt = &sp->part[sp->npart];
      PetscInt64      lo[NET_GRID_MAX], hi[NET_GRID_MAX];

      for (PetscInt e = 0; e < nsd; e++) {
        lo[e] = e < d ? ilo[e] : olo[e];
        hi[e] = e < d ? ihi[e] : ohi[e];
      }
      if (side == 0)
        hi[d] = ilo[d];
      else
        lo[d] = ihi[d];
      if (hi[d] <= lo[d]) continue;
      for (PetscInt e = 0; e < nsd; e++) {
        pt->olo[e] = lo[e] - gout->lo[e];
        pt->osz[e] = hi[e] - lo[e];
        pt->ilo[e] = lo[e] * s[e] - p[e] - sp->blo[e];
        pt->isz[e] = (hi[e] - 1 - lo[e]) * s[e] + ext[e];
      }
      PetscCall(NetSpatialCreateLocal_Private(net, k, sp, pt->isz, pt->osz, &pt->local));
      sp->npart++;
    }
  PetscFunctionReturn(0);
}

/* NetSetUp(), before node k's layer is set up: what the spatial executor cannot run is refused here, with the reason
   and the node's name, rather than by the layer (which knows no Net): a kind whose kernels are collective over its
   samples (graph, mpnn: the samples are the rows of a distributed operator or the vertices of a mesh) on the grid,
   and a windowed layer after the field left the grid (it would see a (channels) input) */
PetscErrorCode NetSpatialCheckNode_Private(Net net, PetscInt k)
{
  const NetNode *nd    = &net->nodes[k];
  Layer          layer = net->layers[k];
  char           spec[256];

  PetscFunctionBegin;
  PetscCall(NetNodeSpec_Private(net, k, sizeof(spec), spec));
  PetscCheck(
      !net->vgrid[nd->in[0] + 1] || !layer->collective, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
      "Node %s (%s) is in a Net on a grid (NetSetGrid()), but its samples are the nodes of its own sparse operator or mesh, not grid points: for a DMDA field assemble the grid's stencil as an AIJ Mat (DMCreateMatrix()) and use the Net in batch mode",
      nd->name, spec);
  if (net->vgrid[nd->in[0] + 1] || (!layer->ops->getwindow && !layer->ops->getscale)) PetscFunctionReturn(0);
  SETERRQ(PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_INCOMP, "Node %s (%s) convolves or pools, but its input left the grid at a globalavgpool before it: in grid mode put windowed layers before the globalavgpool", nd->name, spec);
}

/*
  NetSetUp(), after node k's layer is set up (in point form, fielddim set, when its input lies on the grid): the grid of its output
  (vgrid[k + 1]), and for a spatial node its box and local copy. Errors name the node and the grid.
*/
PetscErrorCode NetSpatialSetUpNode_Private(Net net, PetscInt k)
{
  const NetNode *nd    = &net->nodes[k];
  Layer          layer = net->layers[k];
  MPI_Comm       comm  = PetscObjectComm((PetscObject)net);
  NetGrid       *gin = (NetGrid *)net->vgrid[nd->in[0] + 1], *gout = NULL;
  NetSpatial    *sp;
  PetscBool      isgap;
  char           spec[256], grid[64];
  PetscInt       wk[NET_GRID_MAX], ws[NET_GRID_MAX], wp[NET_GRID_MAX], wdil[NET_GRID_MAX]; /* a window's kernel, stride, padding, dilation */

  PetscFunctionBegin;
  PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
  if (nd->nin > 1) { /* a join: the same grid extent; another ownership is repartitioned to input 0's */
    PetscBool same = PETSC_TRUE;

    for (PetscInt i = 1; i < nd->nin; i++) {
      NetGrid  *g   = (NetGrid *)net->vgrid[nd->in[i] + 1];
      PetscBool ext = (PetscBool)((!g) == (!gin));

      for (PetscInt d = 0; g && gin && ext && d < gin->nsd; d++) ext = (PetscBool)(g->nsd == gin->nsd && g->N[d] == gin->N[d]);
      PetscCheck(ext, comm, PETSC_ERR_ARG_INCOMP,
                 "Node %s (%s) joins values on grids of different sizes (or one on the grid and one off it): in grid mode the inputs of a join must lie on grids of the same extent; give both branches the same overall strides, pools and upsamplings",
                 nd->name, spec);
      if (g && !NetGridEqual_Private(g, gin)) same = PETSC_FALSE;
    }
    if (gin) PetscCall(NetGridDerive_Private(gin, NULL, NULL, &gout));
    net->vgrid[k + 1] = gout;
    if (same) PetscFunctionReturn(0); /* point by point */
    PetscCall(PetscNew(&sp));
    net->nodes[k].sp = sp;
    sp->kind         = NET_SPATIAL_JOIN;
    sp->in           = gin;
    sp->out          = gout;
    sp->nin          = nd->nin;
    PetscCall(PetscCalloc4(nd->nin, &sp->jsf, nd->nin, &sp->jn, nd->nin, &sp->xr, nd->nin, &sp->dxr));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERGLOBALAVGPOOL, &isgap));
  if (!gin) PetscFunctionReturn(0); /* off the grid: a batch-mode node (the head after a globalavgpool) */
  PetscCall(NetGridToString_Private(gin, sizeof(grid), grid));
  if (!layer->ops->getwindow && !layer->ops->getscale && !isgap) { /* point by point: the same grid */
    PetscCall(NetGridDerive_Private(gin, NULL, NULL, &gout));
    net->vgrid[k + 1] = gout;
    PetscFunctionReturn(0);
  }
  PetscCheck(nd->nin == 1, comm, PETSC_ERR_SUP, "Node %s (%s): a spatial node takes one input", nd->name, spec);
  PetscCall(PetscNew(&sp));
  net->nodes[k].sp = sp;
  sp->in           = gin;
  sp->cin          = layer->in.dim[layer->in.ndim - 1];
  sp->cout         = layer->out.dim[layer->out.ndim - 1];
  if (isgap) {
    sp->kind  = NET_SPATIAL_GLOBAL;
    sp->total = 1;
    for (PetscInt d = 0; d < gin->nsd; d++) sp->total *= gin->N[d];
    PetscFunctionReturn(0); /* vgrid[k + 1] = NULL: off the grid */
  }
  if (layer->ops->getwindow) {
    PetscInt   nsd = 0, *kk = wk, *s = ws, *p = wp, *dil = wdil;
    PetscInt64 N[NET_GRID_MAX], *own[NET_GRID_MAX] = {NULL, NULL, NULL};

    sp->kind = NET_SPATIAL_WINDOW;
    PetscUseTypeMethod(layer, getwindow, &nsd, kk, s, p, dil);
    if (nsd != gin->nsd) { /* the layer describes its window over its own dims; the executor compares them with the grid's */
      PetscBool isconv;

      PetscCall(PetscObjectTypeCompareAny((PetscObject)layer, &isconv, LAYERCONV2D, LAYERCONV3D, ""));
      PetscCheck(!isconv, comm, PETSC_ERR_ARG_INCOMP, "Node %s (%s): %s layer %" PetscInt_FMT " convolves %" PetscInt_FMT "-D grids, but it is a node of a %" PetscInt_FMT "-D grid: use conv%" PetscInt_FMT "d (or a %" PetscInt_FMT "-D DMDA)",
                 nd->name, spec, ((PetscObject)layer)->type_name, layer->index, nsd, gin->nsd, gin->nsd, nsd);
      SETERRQ(comm, PETSC_ERR_ARG_INCOMP,
              "Node %s (%s): the window of %s layer %" PetscInt_FMT " has %" PetscInt_FMT " values, but it is a node of a %" PetscInt_FMT "-D grid (%s): give one value for every dim or %s, or use a %" PetscInt_FMT "-D DMDA", nd->name, spec,
              ((PetscObject)layer)->type_name, layer->index, nsd, gin->nsd, grid, gin->nsd == 3 ? "DxHxW" : "HxW", nsd);
    }
    for (PetscInt d = 0; d < nsd; d++) {
      const PetscInt64 ext = (PetscInt64)dil[d] * (kk[d] - 1) + 1, c0 = -(PetscInt64)p[d] + (PetscInt64)((kk[d] - 1) / 2) * dil[d];
      PetscInt64       b = 0;

      PetscCheck(gin->N[d] + 2 * (PetscInt64)p[d] >= ext, comm, PETSC_ERR_ARG_SIZ, "Node %s (%s): its window (extent %" PetscInt64_FMT ") is larger than the padded grid %s along dim %" PetscInt_FMT ": reduce the kernel or dilation, or pad more",
                 nd->name, spec, ext, grid, d);
      N[d] = (gin->N[d] + 2 * p[d] - ext) / s[d] + 1;
      PetscCall(PetscMalloc1(gin->nr[d], &own[d]));
      for (PetscMPIInt c = 0; c < gin->nr[d]; c++) {
        const PetscInt64 e = b + gin->own[d][c];

        own[d][c] = NetWindowBoundary_Private(e, gin->N[d], N[d], s[d], c0) - NetWindowBoundary_Private(b, gin->N[d], N[d], s[d], c0);
        b         = e;
      }
    }
    PetscCall(NetGridDerive_Private(gin, N, own, &gout));
    for (PetscInt d = 0; d < nsd; d++) PetscCall(PetscFree(own[d]));
    for (PetscInt d = 0; d < nsd; d++) {
      const PetscInt64 ext = (PetscInt64)dil[d] * (kk[d] - 1) + 1;

      sp->blo[d] = gout->lo[d] * s[d] - p[d];
      sp->bhi[d] = (gout->lo[d] + gout->sz[d] - 1) * s[d] - p[d] + ext;
    }
    sp->s0   = s[0];
    sp->ext0 = dil[0] * (kk[0] - 1) + 1;
  } else {
    PetscInt   nsd = 0, f[NET_GRID_MAX];
    PetscInt64 N[NET_GRID_MAX], *own[NET_GRID_MAX] = {NULL, NULL, NULL}, olo[NET_GRID_MAX], ohi[NET_GRID_MAX];

    sp->kind = NET_SPATIAL_SCALE;
    PetscUseTypeMethod(layer, getscale, &nsd, f);
    PetscCheck(nsd == gin->nsd, comm, PETSC_ERR_ARG_INCOMP, "Node %s (%s) scales %" PetscInt_FMT " dims, but the Net's grid is %" PetscInt_FMT "-D (%s): give %" PetscInt_FMT " factors or a %" PetscInt_FMT "-D DMDA", nd->name, spec, nsd, gin->nsd,
               grid, gin->nsd, nsd);
    for (PetscInt d = 0; d < nsd; d++) {
      N[d] = gin->N[d] * f[d];
      PetscCall(PetscMalloc1(gin->nr[d], &own[d]));
      for (PetscMPIInt c = 0; c < gin->nr[d]; c++) own[d][c] = gin->own[d][c] * f[d];
    }
    PetscCall(NetGridDerive_Private(gin, N, own, &gout));
    for (PetscInt d = 0; d < nsd; d++) {
      PetscCall(PetscFree(own[d]));
      olo[d] = gout->lo[d];
      ohi[d] = gout->lo[d] + gout->sz[d];
    }
    PetscUseTypeMethod(layer, gridbox, nsd, gin->N, olo, ohi, sp->blo, sp->bhi);
  }
  net->vgrid[k + 1] = gout;
  sp->out           = gout;
  {
    PetscInt64 isz[NET_GRID_MAX];

    for (PetscInt d = 0; d < gin->nsd; d++) isz[d] = sp->bhi[d] - sp->blo[d];
    PetscCall(NetSpatialCreateLocal_Private(net, k, sp, isz, gout->sz, &sp->local));
  }
  /* a node whose channels are split over the groups (a partition, or model mode's default) runs the model executor's
     kernel on the whole box after the exchange (NetSpatialModelForward_Private()): no slabs */
  if (sp->kind == NET_SPATIAL_WINDOW && net->spoverlap && layer->ops->forget && sp->local && nd->partition[0] <= 0 && net->parallel != NET_PARALLEL_MODEL) PetscCall(NetSpatialSetUpParts_Private(net, k, sp, wk, ws, wp, wdil));
  PetscFunctionReturn(0);
}

/* the samples of node k's output for nf fields on this rank */
PetscErrorCode NetSpatialOutputCount_Private(Net net, PetscInt k, PetscInt nf, PetscInt *count)
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;

  PetscFunctionBegin;
  if (sp->kind == NET_SPATIAL_GLOBAL) {
    PetscMPIInt grank;

    PetscCallMPI(MPI_Comm_rank(NetSpatialNodeComm(net), &grank));
    *count = grank ? 0 : nf;
  } else {
    PetscCheck((PetscInt64)nf * sp->out->npoints <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Node %s: %" PetscInt_FMT " fields of %" PetscInt_FMT " points on this rank are more than a PetscInt holds: use fewer fields per batch",
               net->nodes[k].name, nf, sp->out->npoints);
    *count = nf * sp->out->npoints;
  }
  PetscFunctionReturn(0);
}

/* The fields of a batch of n input samples (grid points) on this rank; 0 in batch mode */
PetscErrorCode NetSpatialFields_Private(Net net, PetscInt n, PetscInt *nf)
{
  NetGrid *g;

  PetscFunctionBegin;
  *nf = 0;
  if (!net->vgrid) PetscFunctionReturn(0);
  if (net->sgrid && NetPlaced_Private(net)) { /* pipeline stages: a step's batch is a micro-batch of fields */
    *nf = NetPlaceGridFields_Private(net);
    PetscFunctionReturn(0);
  }
  g = (NetGrid *)net->vgrid[0];
  PetscCheck(g->npoints > 0 && n % g->npoints == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "In grid mode an input batch holds this rank's block of whole fields (%" PetscInt_FMT " points of the DMDA each), but it has %" PetscInt_FMT " points on this rank: give DMDA global Vecs, or nf blocks end to end", g->npoints, n);
  *nf = n / g->npoints;
  PetscFunctionReturn(0);
}

/* Pipeline stages (netplace.c): the units of each field of value v on this rank in its stage's layout: the grid points
   of its block, or off the grid (after a globalavgpool) 1 on the stage's first rank and 0 on the others */
PetscErrorCode NetSpatialStageUnits_Private(Net net, PetscInt v, PetscInt *u)
{
  const NetGrid *g = (const NetGrid *)net->vgrid[v];
  PetscMPIInt    grank;

  PetscFunctionBegin;
  if (g)
    *u = g->npoints;
  else {
    PetscCallMPI(MPI_Comm_rank(NetSpatialNodeComm(net), &grank));
    *u = grank ? 0 : 1;
  }
  PetscFunctionReturn(0);
}

/*
  Pipeline stages (netplace.c): the move of nf fields of the Net's input from the public decomposition (the DMDA given to
  NetSetGrid(), over all ranks) to a stage's (the stage's DMDA, vgrid[0]), a PetscSF on the Net's communicator whose
  unit is a grid point's c entries (an MPI type of their bytes, whatever the stored type). Roots: this rank's block of the public grid, [nf][block
  points][c]; leaves (leaves: this rank is on the stage): its block of the stage's grid, the same layout. Every root is
  read by exactly one leaf (a permutation of the points), so the broadcast is the move R and the reduce with
  MPI_REPLACE its adjoint R^T = R^{-1}. With G spatial groups the public grid is each group's DMDA (size / G ranks,
  decomposed alike in every group: NetPlaceSetUpGrid() checks it) and a leaf in group g of its stage (R / G ranks of
  the stage's R) reads from the caller's group g, whose ranks are [g size / G, (g + 1) size / G) of the Net's
  communicator: root rank g size / G + (the owner's rank in its group's DMDA).
*/
PetscErrorCode NetSpatialCreateStageSF_Private(Net net, PetscBool leaves, PetscInt nf, PetscInt c, PetscSF *sf)
{
  const NetGrid  *g = (const NetGrid *)net->vgrid[0];
  PetscInt        dim, m[3], pts[3] = {1, 1, 1}, nroots, nleaves, *start[3], first;
  const PetscInt *range[3];
  PetscSFNode    *iremote;
  PetscInt64      lo[3] = {0, 0, 0}, sz[3] = {1, 1, 1};
  PetscMPIInt     size, rank;

  PetscFunctionBegin;
  (void)c;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)net), &rank));
  { /* the first rank of the caller's group that this rank's stage group reads from */
    const PetscInt R = size / PetscMax(1, net->nstages), Rg = R / net->ngroups;

    first = ((rank % R) / Rg) * (size / net->ngroups);
  }
  PetscCall(DMDAGetInfo(net->grid, &dim, NULL, NULL, NULL, &m[0], &m[1], &m[2], NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetOwnershipRanges(net->grid, &range[0], &range[1], &range[2]));
  PetscCall(DMDAGetCorners(net->grid, NULL, NULL, NULL, &pts[0], &pts[1], &pts[2]));
  nroots = nf * pts[0] * pts[1] * pts[2];
  for (PetscInt a = 0; a < 3; a++) {
    PetscCall(PetscMalloc1((a < dim ? m[a] : 1) + 1, &start[a]));
    start[a][0] = 0;
    if (a < dim)
      for (PetscInt q = 0; q < m[a]; q++) start[a][q + 1] = start[a][q] + range[a][q];
    else
      start[a][1] = 1, m[a] = 1;
  }
  for (PetscInt a = 0; leaves && a < dim; a++) { /* DMDA axis a (0 = x) is the grid's spatial dim dim - 1 - a */
    lo[a] = g->lo[dim - 1 - a];
    sz[a] = g->sz[dim - 1 - a];
  }
  nleaves = leaves ? nf * (PetscInt)(sz[0] * sz[1] * sz[2]) : 0;
  PetscCall(PetscMalloc1(nleaves, &iremote));
  for (PetscInt64 z = lo[2], l = 0; leaves && z < lo[2] + sz[2]; z++)
    for (PetscInt64 y = lo[1]; y < lo[1] + sz[1]; y++)
      for (PetscInt64 x = lo[0]; x < lo[0] + sz[0]; x++, l++) {
        const PetscInt64 p[3] = {x, y, z};
        PetscInt         q[3], off = 0, n = 1;

        for (PetscInt a = 2; a >= 0; a--) { /* the owner's coordinates along each axis, and the point's place in its block */
          for (q[a] = 0; p[a] >= start[a][q[a] + 1]; q[a]++) {}
          off = off * (start[a][q[a] + 1] - start[a][q[a]]) + (PetscInt)(p[a] - start[a][q[a]]);
        }
        for (PetscInt a = 0; a < 3; a++) n *= start[a][q[a] + 1] - start[a][q[a]];
        for (PetscInt f = 0; f < nf; f++) {
          iremote[f * (nleaves / nf) + l].rank  = first + q[0] + m[0] * (q[1] + m[1] * q[2]);
          iremote[f * (nleaves / nf) + l].index = f * n + off;
        }
      }
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(start[a]));
  PetscCall(PetscSFCreate(PetscObjectComm((PetscObject)net), sf));
  PetscCall(PetscSFSetGraph(*sf, nroots, nleaves, NULL, PETSC_OWN_POINTER, iremote, PETSC_OWN_POINTER));
  PetscCall(PetscSFSetUp(*sf));
  PetscFunctionReturn(0);
}

/* Pipeline stages: node k's box and its local layer's state belong to another micro-batch (netplace.c): gathered and
   computed again at its next use */
PetscErrorCode NetSpatialForgetBox_Private(Net net, PetscInt k)
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;

  PetscFunctionBegin;
  if (sp) sp->xboxvalid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The tensor (nf, grid..., c) on grid g over the ranks of the group */
static PetscErrorCode NetGridCreateLayout_Private(Net net, const NetGrid *g, PetscInt nf, PetscInt c, PetNetLayout *L)
{
  PetscInt64  dims[PETNET_LAYOUT_MAX_DIM];
  PetscMPIInt gdims[NET_GRID_MAX];

  PetscFunctionBegin;
  dims[0] = nf;
  for (PetscInt d = 0; d < g->nsd; d++) {
    dims[d + 1] = g->N[d];
    gdims[d]    = g->nr[d];
  }
  dims[g->nsd + 1] = c;
  PetscCall(PetNetLayoutCreate(NetSpatialNodeComm(net), L));
  PetscCall(PetNetLayoutSetShape(*L, g->nsd + 2, dims));
  PetscCall(PetNetLayoutSetGrid(*L, g->nsd, gdims));
  for (PetscInt d = 0; d < g->nsd; d++) PetscCall(PetNetLayoutSetSplit(*L, d + 1, d, g->own[d]));
  PetscCall(PetNetLayoutSetUp(*L));
  PetscFunctionReturn(0);
}

/*
  A join's repartitions for nf fields: input i on its grid -> input 0's grid (same extent, other ownership). Input 0's
  block of input i's tensor is a box of input i's layout: the PetscSF reading it (roots: input i's block, leaves: the
  box, every one inside the field) is the repartition, on values of either element type; its sum-reduce the adjoint.
*/
static PetscErrorCode NetSpatialSetUpJoin_Private(Net net, PetscInt k, NetSpatial *sp)
{
  const NetNode *nd = &net->nodes[k];

  PetscFunctionBegin;
  for (PetscInt i = 1; i < sp->nin; i++) {
    NetGrid       *g = (NetGrid *)net->vgrid[nd->in[i] + 1];
    const PetscInt c = net->layers[k]->insizes[i];
    PetNetLayout   from, to;
    PetscInt64     start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], hi[PETNET_LAYOUT_MAX_DIM];
    PetscInt       ndim = g->nsd + 2, nleaves;

    if (NetGridEqual_Private(g, sp->in)) continue;
    PetscCall(NetGridCreateLayout_Private(net, g, sp->nf, c, &from));
    PetscCall(NetGridCreateLayout_Private(net, sp->in, sp->nf, c, &to));
    PetscCall(PetNetLayoutGetBlock(to, start, size));
    for (PetscInt d = 0; d < ndim; d++) hi[d] = start[d] + size[d];
    PetscCall(PetNetLayoutCreateBoxSF_Private(from, start, hi, &sp->jsf[i], &sp->jn[i]));
    PetscCall(PetscSFGetGraph(sp->jsf[i], NULL, &nleaves, NULL, NULL));
    PetscCheck(nleaves == sp->jn[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the repartition of input %" PetscInt_FMT " leaves entries of its block unread", nd->name, i);
    PetscCall(PetscMalloc1(sp->jn[i], (PetscScalar **)&sp->xr[i]));
    PetscCall(PetscMalloc1(sp->jn[i], (PetscScalar **)&sp->dxr[i]));
    PetscCall(PetNetLayoutDestroy(&from));
    PetscCall(PetNetLayoutDestroy(&to));
  }
  PetscFunctionReturn(0);
}

/* The layout of the input for nf fields, the box gather and the work Vecs, rebuilt when the batch layout changes */
static PetscErrorCode NetSpatialSetUpBatch_Private(Net net, PetscInt k, NetSpatial **out)
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;
  NetGrid    *g  = sp->in;
  PetscInt    nf, ndim = g->nsd + 2, nloc;
  PetscInt64  lo[PETNET_LAYOUT_MAX_DIM], hi[PETNET_LAYOUT_MAX_DIM];

  PetscFunctionBegin;
  *out = sp;
  if (sp->ready && sp->batchgen == net->batchgen) PetscFunctionReturn(0);
  PetscCall(NetSpatialFields_Private(net, net->vlocal[0], &nf));
  {
    PetscInt mine = nf, most;

    PetscCall(MPIU_Allreduce(&mine, &most, 1, MPIU_INT, MPI_MAX, NetSpatialNodeComm(net)));
    PetscCheck(most == nf, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "In grid mode every rank of a group holds its block of the same fields, but this rank holds %" PetscInt_FMT " and another %" PetscInt_FMT, nf, most);
  }
  PetscCall(PetNetLayoutDestroy(&sp->L));
  PetscCall(PetscSFDestroy(&sp->sf));
  PetscCall(PetscFree(sp->rlocal));
  PetscCall(PetscFree(sp->halo));
  PetscCall(PetscFree(sp->pin));
  PetscCall(PetscFree(sp->pout));
  PetscCall(PetscFree2(sp->xoff, sp->boff));
  PetscCall(PetscFree(sp->xbox));
  PetscCall(PetscFree(sp->dbox));
  PetscCall(PetscFree(sp->work));
  PetscCall(NetSpatialResetJoin_Private(sp, PETSC_FALSE));
  sp->nf        = nf;
  sp->batchgen  = net->batchgen;
  sp->xboxvalid = PETSC_FALSE;
  sp->boxmade   = PETSC_FALSE;
  sp->ready     = PETSC_TRUE;
  if (sp->kind == NET_SPATIAL_GLOBAL) {
    PetscCall(PetscMalloc1((size_t)nf * sp->cin, &sp->work));
    PetscFunctionReturn(0);
  }
  if (sp->kind == NET_SPATIAL_JOIN) {
    PetscCall(NetSpatialSetUpJoin_Private(net, k, sp));
    PetscFunctionReturn(0);
  }
  PetscCall(NetGridCreateLayout_Private(net, g, nf, sp->cin, &sp->L));
  PetscCall(PetNetLayoutGetLocalSize(sp->L, &nloc));
  PetscCheck(nloc == nf * g->npoints * sp->cin, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the layout of its input does not match the rank's block", net->nodes[k].name);
  lo[0] = 0;
  hi[0] = nf;
  for (PetscInt d = 0; d < g->nsd; d++) {
    lo[d + 1] = sp->blo[d];
    hi[d + 1] = sp->local ? sp->bhi[d] : sp->blo[d];
  }
  lo[ndim - 1] = 0;
  hi[ndim - 1] = sp->cin;
  PetscCall(NetSpatialSetUpHalo_Private(sp, lo, hi));
  {
    PetscMPIInt mine = sp->nremote == 0 && !sp->padded && sp->nbox == nloc && sp->npart == 0, all;

    PetscCall(MPIU_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, NetSpatialNodeComm(net)));
    sp->identity = all ? PETSC_TRUE : PETSC_FALSE;
  }
  if (sp->npart) {
    PetscInt64 in = 0, out = 0;

    for (PetscInt i = 0; i < sp->npart; i++) {
      PetscInt64 a = nf * sp->cin, b = nf * sp->cout;

      for (PetscInt d = 0; d < g->nsd; d++) {
        a *= sp->part[i].isz[d];
        b *= sp->part[i].osz[d];
      }
      in  = PetscMax(in, a);
      out = PetscMax(out, b);
    }
    PetscCall(PetscMalloc(in * sizeof(PetscScalar), &sp->pin));
    PetscCall(PetscMalloc(out * sizeof(PetscScalar), &sp->pout));
  }
  PetscFunctionReturn(0);
}

/*
  The halo exchange of a spatial node: the box [lo, hi) of the input (nf, grid..., c) that this rank's output block
  reads. The entries this rank owns are copied in runs (rows of the block: x extent times channels, contiguous in both);
  the others come from their owners through a PetscSF of those entries alone into halo[], started before the local copy
  and finished after it, then put in their places rlocal[] of the box; entries outside the field stay zero (the
  padding). Along a periodic dim the box's parts beyond the field are read from the other side (every such entry goes
  through the PetscSF, the rank's own included, so a one-rank periodic grid exchanges with itself). The transpose adds every box entry back into its owner: the local runs directly, the others by
  PetscSFReduce with MPI_SUM.
*/
static PetscErrorCode NetSpatialSetUpHalo_Private(NetSpatial *sp, const PetscInt64 lo[], const PetscInt64 hi[])
{
  typedef struct {
    PetscInt64   off[PETNET_LAYOUT_MAX_DIM], ext[PETNET_LAYOUT_MAX_DIM]; /* its origin in the box, its extent */
    PetscInt     n, *ilocal;                                             /* its graph (PetNetLayoutCreateBoxGraph_Private()) */
    PetscSFNode *iremote;
    PetscBool    wrapped;
  } NetHaloPart;
  const PetscInt ndim = sp->in->nsd + 2;
  PetscInt64     start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], ilo[PETNET_LAYOUT_MAX_DIM], ihi[PETNET_LAYOUT_MAX_DIM], nruns = 1, nvalid = 0;
  const PetscInt npieces = sp->in->nsd == 2 ? 9 : 27; /* 3^nsd */
  NetHaloPart   *parts;
  PetscInt       nparts = 0, nbox, npiece, nroots, nremote = 0;
  PetscSFNode   *rremote;
  PetscMPIInt    rank;
  MPI_Comm       comm;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetComm((PetscObject)sp->L, &comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetNetLayoutGetLocalSize(sp->L, &nroots));
  nbox = 1;
  for (PetscInt d = 0; d < ndim; d++) nbox *= (PetscInt)PetscMax(hi[d] - lo[d], 0);
  /* the pieces: along a periodic dim the box's parts below 0, inside, and beyond N, each read at its place shifted by
     +N, 0, -N; along the others the whole extent (entries outside the field are the padding). A piece read in place is
     cut into the shells around the rank's own block (up to 2 per dim, peeled one dim at a time): its entries inside
     the block are the local runs below, so only the shells' graphs are made (the halo's size, not the box's); a
     wrapped piece is read whole (its every entry goes through the star forest). Each part is the graph of a box star
     forest without the forest (no communication, nothing set up): only its remote leaves are kept. */
  PetscCall(PetNetLayoutGetBlock(sp->L, start, size));
  PetscCall(PetscMalloc1(npieces * (2 * ndim + 1), &parts));
  for (PetscInt c = 0; c < npieces; c++) {
    PetscInt64 plo[PETNET_LAYOUT_MAX_DIM], phi[PETNET_LAYOUT_MAX_DIM], poff[PETNET_LAYOUT_MAX_DIM], inner = 1;
    PetscBool  exists = PETSC_TRUE, empty = PETSC_FALSE, wrapped = PETSC_FALSE;

    for (PetscInt d = 0, q = c; d < ndim; d++) {
      const PetscBool  spatial = (PetscBool)(d && d < ndim - 1);
      const PetscInt64 N       = spatial ? sp->in->N[d - 1] : 0;
      const PetscInt   w       = spatial ? q % 3 : 1; /* 0 below the field, 1 inside, 2 beyond */

      if (spatial) q /= 3;
      plo[d]  = lo[d];
      phi[d]  = hi[d];
      poff[d] = 0;
      if (spatial && sp->in->periodic[d - 1]) {
        PetscCheck(lo[d] >= -N && hi[d] <= 2 * N, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "A window reaches more than once around the periodic grid (extent %" PetscInt64_FMT " along dim %" PetscInt_FMT "): use a smaller kernel or a larger grid", N,
                   d - 1);
        plo[d]  = w == 0 ? lo[d] + N : w == 1 ? PetscMax(lo[d], 0) : PetscMax(lo[d], N) - N;
        phi[d]  = w == 0 ? PetscMin(hi[d], 0) + N : w == 1 ? PetscMin(hi[d], N) : hi[d] - N;
        poff[d] = w == 0 ? -N : w == 1 ? 0 : N;
        if (w != 1) wrapped = PETSC_TRUE;
      } else if (w != 1)
        exists = PETSC_FALSE;
      if (phi[d] <= plo[d]) empty = PETSC_TRUE;
    }
    if (!exists || empty) continue;
    /* the parts of the piece: [a, b) in the layout's coordinates, at a - lo + poff in the box */
    for (PetscInt d = 0; d < ndim; d++) inner *= PetscMax(PetscMin(phi[d], start[d] + size[d]) - PetscMax(plo[d], start[d]), 0);
    for (PetscInt e = wrapped ? -1 : 0; e < (wrapped ? 0 : 2 * ndim); e++) {
      NetHaloPart *pt = &parts[nparts];
      PetscInt64   a[PETNET_LAYOUT_MAX_DIM], b[PETNET_LAYOUT_MAX_DIM];
      PetscBool    none = PETSC_FALSE;

      for (PetscInt d = 0; d < ndim; d++) {
        a[d] = plo[d];
        b[d] = phi[d];
        if (e < 0) continue; /* the whole piece */
        if (d < e / 2) {     /* inside the block along the dims peeled before */
          a[d] = PetscMax(plo[d], start[d]);
          b[d] = PetscMin(phi[d], start[d] + size[d]);
        } else if (d == e / 2) { /* below or above it along this one */
          if (e % 2 == 0)
            b[d] = PetscMin(phi[d], start[d]);
          else
            a[d] = PetscMax(plo[d], start[d] + size[d]);
        }
        if (b[d] <= a[d]) none = PETSC_TRUE;
      }
      if (none) continue;
      for (PetscInt d = 0; d < ndim; d++) {
        pt->ext[d] = b[d] - a[d];
        pt->off[d] = a[d] - lo[d] + poff[d];
      }
      pt->wrapped = wrapped;
      PetscCall(PetNetLayoutCreateBoxGraph_Private(sp->L, a, b, &pt->n, &pt->ilocal, &pt->iremote, &npiece));
      for (PetscInt l = 0; l < pt->n; l++)
        if (wrapped || pt->iremote[l].rank != rank) nremote++;
      nvalid += pt->n;
      nparts++;
    }
    if (!wrapped) nvalid += inner; /* the block's own entries: inside the field */
  }
  PetscCall(PetscMalloc1(nremote, &sp->rlocal));
  PetscCall(PetscMalloc(nremote * sizeof(PetscScalar), &sp->halo)); /* either element type fits */
  PetscCall(PetscMalloc1(nremote, &rremote));
  for (PetscInt c = 0, r = 0; c < nparts; c++) {
    NetHaloPart *pt = &parts[c];

    for (PetscInt l = 0; l < pt->n; l++) {
      PetscInt64 q = pt->ilocal ? pt->ilocal[l] : l, idx[PETNET_LAYOUT_MAX_DIM], bo = 0;

      if (!pt->wrapped && pt->iremote[l].rank == rank) continue;
      for (PetscInt d = ndim - 1; d >= 0; d--) {
        idx[d] = q % pt->ext[d] + pt->off[d];
        q /= pt->ext[d];
      }
      for (PetscInt d = 0; d < ndim; d++) bo = bo * (hi[d] - lo[d]) + idx[d];
      sp->rlocal[r] = (PetscInt)bo;
      rremote[r]    = pt->iremote[l];
      r++;
    }
    PetscCall(PetscFree(pt->ilocal));
    PetscCall(PetscFree(pt->iremote));
  }
  PetscCall(PetscFree(parts));
  sp->padded = (PetscBool)(nvalid < nbox);
  PetscCall(PetscSFCreate(comm, &sp->sf));
  PetscCall(PetscSFSetGraph(sp->sf, nroots, nremote, NULL, PETSC_OWN_POINTER, rremote, PETSC_OWN_POINTER));
  sp->nremote = nremote;
  PetscCall(PetscSFSetUp(sp->sf));
  /* the local runs: the box and the block intersected; the last two dims (x, channels) are whole rows */
  for (PetscInt d = 0; d < ndim; d++) {
    ilo[d] = PetscMax(lo[d], start[d]);
    ihi[d] = PetscMin(hi[d], start[d] + size[d]);
    if (ihi[d] <= ilo[d]) nruns = 0;
  }
  PetscCheck(!nruns || (ilo[ndim - 1] == 0 && ihi[ndim - 1] == hi[ndim - 1] && size[ndim - 1] == hi[ndim - 1]), PETSC_COMM_SELF, PETSC_ERR_PLIB, "the box and the block must hold every channel");
  for (PetscInt d = 0; nruns && d < ndim - 2; d++) nruns *= ihi[d] - ilo[d];
  sp->nruns  = (PetscInt)nruns;
  sp->runlen = nruns ? (PetscInt)((ihi[ndim - 2] - ilo[ndim - 2]) * size[ndim - 1]) : 0;
  PetscCall(PetscMalloc2(sp->nruns, &sp->xoff, sp->nruns, &sp->boff));
  for (PetscInt r = 0; r < sp->nruns; r++) {
    PetscInt64 q = r, idx[PETNET_LAYOUT_MAX_DIM], xo = 0, bo = 0;

    for (PetscInt d = ndim - 3; d >= 0; d--) {
      idx[d] = ilo[d] + q % (ihi[d] - ilo[d]);
      q /= ihi[d] - ilo[d];
    }
    idx[ndim - 2] = ilo[ndim - 2];
    idx[ndim - 1] = 0;
    for (PetscInt d = 0; d < ndim; d++) {
      xo = xo * size[d] + (idx[d] - start[d]);
      bo = bo * (hi[d] - lo[d]) + (idx[d] - lo[d]);
    }
    sp->xoff[r] = (PetscInt)xo;
    sp->boff[r] = (PetscInt)bo;
  }
  sp->nbox = nbox; /* the box buffers are made in the element type of the first pass (NetSpatialBoxes_Private()) */
  PetscFunctionReturn(0);
}

/* element type t: its MPI datatype (PetscSF moves float buffers as it moves double ones; its bytes: NetElemBytes()) */
static inline MPI_Datatype NetElemMPIType(NetElem t)
{
  return t == NET_ELEM_FLOAT ? MPI_FLOAT : MPIU_SCALAR;
}

/*
  The local layer's kernels on n samples of element type t: double, or float with the layer's single-precision
  kernels (LayerForwardSingle(): double parameters, the gradient accumulated in double; layerimpl.h)
*/
static PetscErrorCode NetSpatialLayerForward_Private(Layer local, NetElem t, PetscInt n, const PetscScalar *th, const void *x, void *y)
{
  PetscFunctionBegin;
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerForwardArray(local, n, th, (const PetscScalar *)x, (PetscScalar *)y));
  else {
    const float *xs[1] = {(const float *)x};

    PetscCall(LayerForwardSingle(local, n, th, xs, (float *)y));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialLayerBackward_Private(Layer local, NetElem t, PetscInt n, const PetscScalar *th, const void *x, const void *y, const void *dy, void *dx, PetscScalar *dth)
{
  PetscFunctionBegin;
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerBackwardArray(local, n, th, (const PetscScalar *)x, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *)dx, dth));
  else {
    const float *xs[1]  = {(const float *)x};
    float       *dxs[1] = {(float *)dx};

    PetscCall(LayerBackwardSingle(local, n, th, xs, (const float *)y, (const float *)dy, dxs, dth));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialLayerJVP_Private(Layer local, NetElem t, PetscInt n, const PetscScalar *th, const void *x, const void *y, const void *dx, const PetscScalar *dth, void *dy)
{
  PetscFunctionBegin;
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerJVPArray(local, n, th, (const PetscScalar *)x, (const PetscScalar *)y, (const PetscScalar *)dx, dth, (PetscScalar *)dy));
  else {
    const float *xs[1] = {(const float *)x}, *dxs[1] = {(const float *)dx};

    PetscCall(LayerJVPSingle(local, n, th, xs, (const float *)y, dxs, dth, (float *)dy));
  }
  PetscFunctionReturn(0);
}

/* xbox and dbox in element type t (an identity box has none): made zero, so the padding is zero, and only the gathers
   write xbox (at the same entries every time) */
static PetscErrorCode NetSpatialBoxes_Private(NetSpatial *sp, NetElem t)
{
  PetscFunctionBegin;
  if (sp->identity || (sp->boxmade && sp->boxelem == t)) PetscFunctionReturn(0);
  PetscCall(PetscFree(sp->xbox));
  PetscCall(PetscFree(sp->dbox));
  PetscCall(PetscCalloc((size_t)sp->nbox * NetElemBytes(t), &sp->xbox));
  PetscCall(PetscMalloc((size_t)sp->nbox * NetElemBytes(t), &sp->dbox));
  sp->boxelem   = t;
  sp->boxmade   = PETSC_TRUE;
  sp->xboxvalid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* the halo exchange of x into the box b, in two halves: between them the box holds the rank's own entries and the
   padding. Values of element type t; every entry is copied, none rounded. */
static PetscErrorCode NetSpatialGatherBegin_Private(NetSpatial *sp, NetElem t, const void *x, void *b)
{
  const size_t es = NetElemBytes(t);

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscCall(PetscSFBcastBegin(sp->sf, NetElemMPIType(t), x, sp->halo, MPI_REPLACE));
  for (PetscInt r = 0; r < sp->nruns; r++) PetscCall(PetscMemcpy((char *)b + es * sp->boff[r], (const char *)x + es * sp->xoff[r], es * sp->runlen));
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialGatherEnd_Private(NetSpatial *sp, NetElem t, const void *x, void *b)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  PetscCall(PetscSFBcastEnd(sp->sf, NetElemMPIType(t), x, sp->halo, MPI_REPLACE));
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  if (t == NET_ELEM_FLOAT) {
    const float *h = (const float *)sp->halo;
    float       *a = (float *)b;

    for (PetscInt i = 0; i < sp->nremote; i++) a[sp->rlocal[i]] = h[i];
  } else {
    const PetscScalar *h = (const PetscScalar *)sp->halo;
    PetscScalar       *a = (PetscScalar *)b;

    for (PetscInt i = 0; i < sp->nremote; i++) a[sp->rlocal[i]] = h[i];
  }
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* box = H x, the halo exchange of a tangent (the padding zeroed: the tangent boxes also hold cotangents, written whole) */
static PetscErrorCode NetSpatialGather_Private(NetSpatial *sp, NetElem t, const void *x, void *box)
{
  PetscFunctionBegin;
  if (sp->padded) PetscCall(PetscMemzero(box, (size_t)sp->nbox * NetElemBytes(t)));
  PetscCall(NetSpatialGatherBegin_Private(sp, t, x, box));
  PetscCall(NetSpatialGatherEnd_Private(sp, t, x, box));
  PetscFunctionReturn(0);
}

/* x = H^T box (or x += H^T box when add): every box entry added into its owner, the local runs directly, the others
   by PetscSFReduce with MPI_SUM, in element type t (float sums: the adjoint of the float gather up to float round-off) */
static PetscErrorCode NetSpatialAddBack_Private(NetSpatial *sp, NetElem t, PetscBool add, const void *box, void *x)
{
  PetscInt n;

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO, 0, 0, 0, 0));
  if (!add) {
    PetscCall(PetscSFGetGraph(sp->sf, &n, NULL, NULL, NULL));
    PetscCall(PetscMemzero(x, (size_t)n * NetElemBytes(t)));
  }
  if (t == NET_ELEM_FLOAT) {
    const float *b = (const float *)box;
    float       *h = (float *)sp->halo;

    for (PetscInt i = 0; i < sp->nremote; i++) h[i] = b[sp->rlocal[i]];
  } else {
    const PetscScalar *b = (const PetscScalar *)box;
    PetscScalar       *h = (PetscScalar *)sp->halo;

    for (PetscInt i = 0; i < sp->nremote; i++) h[i] = b[sp->rlocal[i]];
  }
  PetscCall(PetscSFReduceBegin(sp->sf, NetElemMPIType(t), sp->halo, x, MPI_SUM));
  for (PetscInt r = 0; r < sp->nruns; r++) {
    if (t == NET_ELEM_FLOAT) {
      float       *y = (float *)x + sp->xoff[r];
      const float *u = (const float *)box + sp->boff[r];

      for (PetscInt i = 0; i < sp->runlen; i++) y[i] += u[i];
    } else {
      PetscScalar       *y = (PetscScalar *)x + sp->xoff[r];
      const PetscScalar *u = (const PetscScalar *)box + sp->boff[r];

      for (PetscInt i = 0; i < sp->runlen; i++) y[i] += u[i];
    }
  }
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  PetscCall(PetscSFReduceEnd(sp->sf, NetElemMPIType(t), sp->halo, x, MPI_SUM));
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*
  Copy between a slab's dense array a (nf, sz..., c) and the sub-box at offset off of a box b (nf, big..., c): a = the
  sub-box (insert false) or the sub-box = a (insert true), entries of es bytes. Rows along the fastest dim are
  contiguous in both.
*/
static PetscErrorCode NetBoxCopy_Private(PetscInt nsd, PetscInt nf, PetscInt c, size_t es, const PetscInt64 big[], const PetscInt64 off[], const PetscInt64 sz[], PetscBool insert, void *b, void *a)
{
  const size_t len  = (size_t)(sz[nsd - 1] * c) * es;
  PetscInt64   rows = nf;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd - 1; d++) rows *= sz[d];
  for (PetscInt64 r = 0; r < rows; r++) {
    PetscInt64 q = r, idx[NET_GRID_MAX] = {0, 0, 0}, o;

    for (PetscInt d = nsd - 2; d >= 0; d--) {
      idx[d] = q % sz[d];
      q /= sz[d];
    }
    o = q; /* the field */
    for (PetscInt d = 0; d < nsd; d++) o = o * big[d] + idx[d] + off[d];
    if (insert)
      PetscCall(PetscMemcpy((char *)b + (size_t)(o * c) * es, (char *)a + (size_t)r * len, len));
    else
      PetscCall(PetscMemcpy((char *)a + (size_t)r * len, (char *)b + (size_t)(o * c) * es, len));
  }
  PetscFunctionReturn(0);
}

/* globalavgpool on the grid: y (on the group's first rank) = sum over the field / points; transpose: broadcast. The
   values are of element type t; the sums are double (a field of a million points), rounded once into y. */
static PetscErrorCode NetSpatialPool_Private(Net net, NetSpatial *sp, NetElem t, const void *x, void *y)
{
  const PetscInt    C = sp->cin, np = sp->in->npoints;
  const PetscScalar scale = 1.0 / (PetscReal)sp->total;
  PetscMPIInt       grank;

  PetscFunctionBegin;
  for (PetscInt f = 0; f < sp->nf; f++) {
    PetscScalar *w = sp->work + f * C;

    for (PetscInt c = 0; c < C; c++) w[c] = 0.0;
    if (t == NET_ELEM_FLOAT) {
      const float *a = (const float *)x + (size_t)f * np * C;

      for (PetscInt i = 0; i < np; i++, a += C)
        for (PetscInt c = 0; c < C; c++) w[c] += a[c];
    } else {
      const PetscScalar *a = (const PetscScalar *)x + (size_t)f * np * C;

      for (PetscInt i = 0; i < np; i++, a += C)
        for (PetscInt c = 0; c < C; c++) w[c] += a[c];
    }
  }
  PetscCallMPI(MPI_Comm_rank(NetSpatialNodeComm(net), &grank));
  PetscCallMPI(MPI_Reduce(grank ? sp->work : MPI_IN_PLACE, sp->work, (PetscMPIInt)(sp->nf * C), MPIU_SCALAR, MPIU_SUM, 0, NetSpatialNodeComm(net)));
  if (!grank) {
    for (PetscInt i = 0; i < sp->nf * C; i++) {
      if (t == NET_ELEM_FLOAT)
        ((float *)y)[i] = (float)(sp->work[i] * scale);
      else
        ((PetscScalar *)y)[i] = sp->work[i] * scale;
    }
  }
  PetscCall(PetscLogFlops(1.0 * sp->nf * np * C));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialPoolTranspose_Private(Net net, NetSpatial *sp, NetElem t, const void *dy, void *dx)
{
  const PetscInt    C = sp->cin, np = sp->in->npoints;
  const PetscScalar scale = 1.0 / (PetscReal)sp->total;
  PetscMPIInt       grank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(NetSpatialNodeComm(net), &grank));
  if (!grank)
    for (PetscInt i = 0; i < sp->nf * C; i++) sp->work[i] = t == NET_ELEM_FLOAT ? (PetscScalar)((const float *)dy)[i] : ((const PetscScalar *)dy)[i];
  PetscCallMPI(MPI_Bcast(sp->work, (PetscMPIInt)(sp->nf * C), MPIU_SCALAR, 0, NetSpatialNodeComm(net)));
  for (PetscInt f = 0; f < sp->nf; f++) {
    const PetscScalar *w = sp->work + f * C;

    if (t == NET_ELEM_FLOAT) {
      float *a = (float *)dx + (size_t)f * np * C;

      for (PetscInt i = 0; i < np; i++, a += C)
        for (PetscInt c = 0; c < C; c++) a[c] = (float)(w[c] * scale);
    } else {
      PetscScalar *a = (PetscScalar *)dx + (size_t)f * np * C;

      for (PetscInt i = 0; i < np; i++, a += C)
        for (PetscInt c = 0; c < C; c++) a[c] = w[c] * scale;
    }
  }
  PetscFunctionReturn(0);
}

/* A NULL array means a zero tangent (or a cotangent not wanted), but an empty block's array may be NULL too: the
   ranks of the group agree on it, since the data movements are collective */
static PetscErrorCode NetSpatialAny_Private(Net net, const void *a, PetscBool *any)
{
  PetscMPIInt mine = a ? 1 : 0, all;

  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, NetSpatialNodeComm(net)));
  *any = all ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*
  The box of x and the local forward, in element type t. Overlapped (slabs): the whole block is computed while the halo
  is in flight (the interior right; the boundary layer from the halo of an earlier forward, or zeros), then each slab
  of the boundary layer again on the complete box, and the copy forgets what its first pass kept. An identity box is
  x itself.
*/
static PetscErrorCode NetSpatialLocalForward_Private(NetSpatial *sp, NetElem t, const PetscScalar *th, const void *x, void *y)
{
  const size_t   es  = NetElemBytes(t);
  const PetscInt nsd = sp->in->nsd;
  void          *b;

  PetscFunctionBegin;
  sp->fwdelem = t;
  if (sp->identity) {
    if (sp->local) PetscCall(NetSpatialLayerForward_Private(sp->local, t, sp->nf, th, x, y));
    sp->xboxvalid = PETSC_TRUE;
    PetscFunctionReturn(0);
  }
  PetscCall(NetSpatialBoxes_Private(sp, t));
  b = sp->xbox;
  PetscCall(NetSpatialGatherBegin_Private(sp, t, x, b));
  if (sp->npart) PetscCall(NetSpatialLayerForward_Private(sp->local, t, sp->nf, th, b, y));
  PetscCall(NetSpatialGatherEnd_Private(sp, t, x, b));
  if (sp->npart) {
    PetscInt64 box[NET_GRID_MAX];

    for (PetscInt d = 0; d < nsd; d++) box[d] = sp->bhi[d] - sp->blo[d];
    for (PetscInt i = 0; i < sp->npart; i++) {
      NetSpatialPart *pt = &sp->part[i];

      pt->local->training = sp->local->training;
      pt->local->frozen   = sp->local->frozen;
      PetscCall(NetBoxCopy_Private(nsd, sp->nf, sp->cin, es, box, pt->ilo, pt->isz, PETSC_FALSE, b, sp->pin));
      PetscCall(NetSpatialLayerForward_Private(pt->local, t, sp->nf, th, sp->pin, sp->pout));
      PetscCall(NetBoxCopy_Private(nsd, sp->nf, sp->cout, es, sp->out->sz, pt->olo, pt->osz, PETSC_TRUE, y, sp->pout));
      PetscUseTypeMethod(pt->local, forget);
    }
    PetscUseTypeMethod(sp->local, forget);
  } else if (sp->local)
    PetscCall(NetSpatialLayerForward_Private(sp->local, t, sp->nf, th, b, y));
  sp->xboxvalid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* a join's inputs in input 0's ownership, of element type t: x[i] itself, or its repartition (x NULL: every tangent
   zero) */
static PetscErrorCode NetSpatialJoinInputs_Private(Net net, NetSpatial *sp, NetElem t, const void *const x[], PetscBool tangent, const void *xs[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < sp->nin; i++) {
    void     *v = tangent ? sp->dxr[i] : sp->xr[i];
    PetscBool any;

    xs[i] = x ? x[i] : NULL;
    if (!sp->jsf[i]) continue;
    PetscCall(NetSpatialAny_Private(net, xs[i], &any));
    if (!any) continue; /* a zero tangent */
    PetscCall(PetscSFBcastBegin(sp->jsf[i], NetElemMPIType(t), x[i], v, MPI_REPLACE));
    PetscCall(PetscSFBcastEnd(sp->jsf[i], NetElemMPIType(t), x[i], v, MPI_REPLACE));
    xs[i] = v ? v : (const void *)sp; /* an empty block: any non-NULL pointer, never read */
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialJoinForward_Private(Net net, PetscInt k, NetSpatial *sp, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], void *y)
{
  const void *xs[NET_MAX_STACK_INPUTS];

  PetscFunctionBegin;
  PetscCheck(sp->nin <= NET_MAX_STACK_INPUTS, PETSC_COMM_SELF, PETSC_ERR_SUP, "Node %s: a repartitioned join takes at most %d inputs", net->nodes[k].name, NET_MAX_STACK_INPUTS);
  PetscCall(NetSpatialJoinInputs_Private(net, sp, t, x, PETSC_FALSE, xs));
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerForwardArrays(net->layers[k], n, th, (const PetscScalar *const *)xs, (PetscScalar *)y));
  else
    PetscCall(LayerForwardSingle(net->layers[k], n, th, (const float *const *)xs, (float *)y));
  PetscFunctionReturn(0);
}

/* backward: the layer's cotangents in input 0's ownership, moved back by the sum-reduce of the repartition */
static PetscErrorCode NetSpatialJoinBackward_Private(Net net, PetscInt k, NetSpatial *sp, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *dy, void *const dx[], PetscScalar *dth)
{
  const void *xs[NET_MAX_STACK_INPUTS];
  void       *dxs[NET_MAX_STACK_INPUTS];
  PetscBool   want[NET_MAX_STACK_INPUTS];

  PetscFunctionBegin;
  PetscCall(NetSpatialJoinInputs_Private(net, sp, t, x, PETSC_FALSE, xs));
  for (PetscInt i = 0; i < sp->nin; i++) {
    dxs[i]  = dx[i];
    want[i] = PETSC_FALSE;
    if (!sp->jsf[i]) continue;
    PetscCall(NetSpatialAny_Private(net, dx[i], &want[i]));
    dxs[i] = want[i] ? (sp->dxr[i] ? sp->dxr[i] : (void *)sp->dxr) : NULL; /* an empty block: non-NULL, never written */
  }
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerBackwardArrays(net->layers[k], n, th, (const PetscScalar *const *)xs, (const PetscScalar *)y, (const PetscScalar *)dy, (PetscScalar *const *)dxs, dth));
  else
    PetscCall(LayerBackwardSingle(net->layers[k], n, th, (const float *const *)xs, (const float *)y, (const float *)dy, (float *const *)dxs, dth));
  for (PetscInt i = 0; i < sp->nin; i++) {
    PetscInt nroots;

    if (!want[i]) continue;
    PetscCall(PetscSFGetGraph(sp->jsf[i], &nroots, NULL, NULL, NULL));
    PetscCall(PetscMemzero(dx[i], (size_t)nroots * NetElemBytes(t)));
    PetscCall(PetscSFReduceBegin(sp->jsf[i], NetElemMPIType(t), sp->dxr[i], dx[i], MPI_SUM));
    PetscCall(PetscSFReduceEnd(sp->jsf[i], NetElemMPIType(t), sp->dxr[i], dx[i], MPI_SUM));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetSpatialJoinJVP_Private(Net net, PetscInt k, NetSpatial *sp, PetscInt n, NetElem t, const PetscScalar *th, const void *const x[], const void *y, const void *const dx[], const PetscScalar *dth, void *dy)
{
  const void *xs[NET_MAX_STACK_INPUTS], *dxs[NET_MAX_STACK_INPUTS];

  PetscFunctionBegin;
  PetscCall(NetSpatialJoinInputs_Private(net, sp, t, x, PETSC_FALSE, xs));
  PetscCall(NetSpatialJoinInputs_Private(net, sp, t, dx, PETSC_TRUE, dxs));
  if (t == NET_ELEM_DOUBLE)
    PetscCall(LayerJVPArrays(net->layers[k], n, th, (const PetscScalar *const *)xs, (const PetscScalar *)y, (const PetscScalar *const *)dxs, dth, (PetscScalar *)dy));
  else
    PetscCall(LayerJVPSingle(net->layers[k], n, th, (const float *const *)xs, (const float *)y, (const float *const *)dxs, dth, (float *)dy));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------------
   bfloat16 in slabs: a window node at -net_precision bfloat16 reads and writes the stored bfloat16 values itself
   (NetNodeStreamsBF16()), so that no whole block is widened to float: the float arrays are the box (the input with its
   halo, which the windows read) and one slab of planes of the others at a time.

    forward    xbox = widen(H x)                 y[slab] = round(f_slab(xbox[slab planes]))
    backward   dxbox[slab planes] += J_slab^T widen(dy[slab]), dtheta += ...      dx = round(H^T dxbox)
    jvp        dxbox = widen(H dx)               dy[slab] = round(J_slab (xbox[slab planes], dxbox[slab planes]))

  The halo comes in bfloat16 (a PetscSF on 16-bit units) and is widened into the box, which makes the box the same
  values as the float path's gather of widened copies; H^T adds in float and rounds once. An identity box whose windows
  tile it along the slowest dim (ext0 = s0: a pooling by its own size on blocks it divides) has no box: each slab is
  widened from x and its cotangent rounded into dx. The slabs only cut the output block, so forward and jvp are the
  float path's values (each output is the same dot product); the parameter gradient is summed slab by slab, in double.
  Not overlapped with the halo exchange (NetSetSpatialOverlap()): the slabs replace the boundary layer's parts.
*/
#define NET_SPATIAL_SLAB_ENTRIES 1048576 /* float entries of a slab's larger buffer, all the batch's fields (4 MB) */

/* node k takes the stored bfloat16 values: a window node of a kind that keeps nothing of its forward that backward
   cannot recompute (forget: convolutions, average pooling), at -net_precision bfloat16; not a node split over the
   groups by a partition (the spatial+model executor computes in double on widened values) */
PetscBool NetSpatialStreamsBF16_Private(Net net, PetscInt k)
{
  const NetSpatial *sp = (const NetSpatial *)net->nodes[k].sp;

  return (PetscBool)(net->precision == NET_PRECISION_BFLOAT16 && sp && sp->kind == NET_SPATIAL_WINDOW && !net->nodes[k].mp && net->layers[k]->ops->forget);
}

/* the box read and written in place (no float box): an identity box that the windows tile along the slowest dim */
static PetscBool NetSpatialInPlace_Private(const NetSpatial *sp)
{
  return (PetscBool)(sp->identity && sp->ext0 == sp->s0);
}

/* entries of one plane (one index along the slowest dim) of a field's box and of its output block, and the planes of
   each */
static void NetSpatialPlanes_Private(const NetSpatial *sp, PetscInt64 *bplane, PetscInt64 *oplane, PetscInt64 *bplanes, PetscInt64 *oplanes)
{
  *bplane  = sp->cin;
  *oplane  = sp->cout;
  *bplanes = sp->bhi[0] - sp->blo[0];
  *oplanes = sp->out->sz[0];
  for (PetscInt d = 1; d < sp->in->nsd; d++) {
    *bplane *= sp->bhi[d] - sp->blo[d];
    *oplane *= sp->out->sz[d];
  }
}

/* the slabs for batches of nf fields: the most output planes sm whose buffers (input and output, nf fields) fit
   NET_SPATIAL_SLAB_ENTRIES, at least 1 and at most an eighth of the block's (rounded up: the float buffers stay a
   small fraction of a block at any size), and the layer's copies on them (NULL on a rank whose block is empty) */
static PetscErrorCode NetSpatialSetUpSlabs_Private(Net net, PetscInt k, NetSpatial *sp)
{
  const PetscInt nsd = sp->in->nsd;
  PetscInt64     bplane, oplane, bplanes, oplanes, sm = 1;

  PetscFunctionBegin;
  if (sp->slabnf == sp->nf) PetscFunctionReturn(0);
  PetscCall(LayerDestroy(&sp->slab[0]));
  PetscCall(LayerDestroy(&sp->slab[1]));
  sp->slabnf = sp->nf;
  sp->sm     = 0;
  sp->nslabs = 0;
  if (!sp->local || !sp->nf) PetscFunctionReturn(0);
  NetSpatialPlanes_Private(sp, &bplane, &oplane, &bplanes, &oplanes);
  while (sm + 1 <= (oplanes + 7) / 8 && sp->nf * (sm * sp->s0 + sp->ext0) * bplane <= NET_SPATIAL_SLAB_ENTRIES && sp->nf * (sm + 1) * oplane <= NET_SPATIAL_SLAB_ENTRIES) sm++;
  sp->sm     = (PetscInt)sm;
  sp->nslabs = (PetscInt)((oplanes + sm - 1) / sm);
  for (PetscInt i = 0; i < 2; i++) {
    const PetscInt64 m = i ? oplanes % sm : sm;
    PetscInt64       isz[NET_GRID_MAX], osz[NET_GRID_MAX];

    if (!m) continue;
    isz[0] = (m - 1) * sp->s0 + sp->ext0;
    osz[0] = m;
    for (PetscInt d = 1; d < nsd; d++) {
      isz[d] = sp->bhi[d] - sp->blo[d];
      osz[d] = sp->out->sz[d];
    }
    PetscCall(NetSpatialCreateLocal_Private(net, k, sp, isz, osz, &sp->slab[i]));
  }
  PetscFunctionReturn(0);
}

/* Moves planes [p0, p0 + np) of each of nf fields of P planes of `plane` entries (field, [nf][P][plane]) to or from a
   dense slab buffer (buf, [nf][np][plane], float): widened from bfloat16, rounded to bfloat16, copied or added (float) */
typedef enum {
  NET_SLAB_WIDEN, /* buf = widen(field planes) */
  NET_SLAB_COPY,  /* buf = field planes (float) */
  NET_SLAB_ROUND, /* field planes = round(buf) */
  NET_SLAB_ADD    /* field planes += buf (float) */
} NetSlabMove;

static void NetSpatialSlabMove_Private(NetSlabMove op, PetscInt nf, PetscInt64 P, PetscInt64 plane, PetscInt64 p0, PetscInt64 np, void *field, float *buf)
{
  const size_t len = (size_t)(np * plane);

  for (PetscInt f = 0; f < nf; f++) {
    const size_t fo = (size_t)((f * P + p0) * plane);
    float       *b  = buf + (size_t)f * len;

    if (op == NET_SLAB_WIDEN) {
      const uint16_t *u = (const uint16_t *)field + fo;

      for (size_t i = 0; i < len; i++) b[i] = PetNetBF16ToFloat(u[i]);
    } else if (op == NET_SLAB_COPY) {
      const float *u = (const float *)field + fo;

      for (size_t i = 0; i < len; i++) b[i] = u[i];
    } else if (op == NET_SLAB_ROUND) {
      uint16_t *u = (uint16_t *)field + fo;

      for (size_t i = 0; i < len; i++) u[i] = PetNetFloatToBF16(b[i]);
    } else {
      float *u = (float *)field + fo;

      for (size_t i = 0; i < len; i++) u[i] += b[i];
    }
  }
}

/* box = widen(H x): the halo exchange of bfloat16 values (16-bit units: copied, not rounded) into a float box; entries
   outside the field are left as they are (the padding: zero) */
static PetscErrorCode NetSpatialGatherBF16_Private(NetSpatial *sp, const uint16_t *x, float *box)
{
  const uint16_t *h = (const uint16_t *)sp->halo;

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscCall(PetscSFBcastBegin(sp->sf, MPI_UNSIGNED_SHORT, x, sp->halo, MPI_REPLACE));
  for (PetscInt r = 0; r < sp->nruns; r++) {
    const uint16_t *u = x + sp->xoff[r];
    float          *b = box + sp->boff[r];

    for (PetscInt i = 0; i < sp->runlen; i++) b[i] = PetNetBF16ToFloat(u[i]);
  }
  PetscCall(PetscLogEventBegin(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  PetscCall(PetscSFBcastEnd(sp->sf, MPI_UNSIGNED_SHORT, x, sp->halo, MPI_REPLACE));
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO_WAIT, 0, 0, 0, 0));
  for (PetscInt i = 0; i < sp->nremote; i++) box[sp->rlocal[i]] = PetNetBF16ToFloat(h[i]);
  PetscCall(PetscLogEventEnd(NET_SPATIAL_HALO, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

/* the float boxes of this path, made on first use: xbox (zero, so the padding is zero) and dbox; boxes made in double
   by a double pass (the second-order adjoint, the per-node Jacobians) are freed first */
static PetscErrorCode NetSpatialFloatBoxes_Private(NetSpatial *sp, PetscBool wantx, PetscBool wantd)
{
  PetscFunctionBegin;
  if (sp->boxelem != NET_ELEM_FLOAT || sp->fboxgen != sp->batchgen) { /* made in double, or for another batch layout */
    PetscCall(PetscFree(sp->xbox));
    PetscCall(PetscFree(sp->dbox));
    sp->fboxes    = 0;
    sp->fboxgen   = sp->batchgen;
    sp->boxelem   = NET_ELEM_FLOAT;
    sp->xboxvalid = PETSC_FALSE;
  }
  if (wantx && !(sp->fboxes & 1)) {
    PetscCall(PetscCalloc((size_t)sp->nbox * sizeof(float), &sp->xbox));
    sp->fboxes |= 1;
    sp->xboxvalid = PETSC_FALSE;
  }
  if (wantd && !(sp->fboxes & 2)) {
    PetscCall(PetscMalloc((size_t)sp->nbox * sizeof(float), &sp->dbox));
    sp->fboxes |= 2;
  }
  sp->boxmade = (PetscBool)(sp->fboxes == 3); /* else NetSpatialBoxes_Private() makes them anew */
  PetscFunctionReturn(0);
}

/* slab j: its first output plane o0, its planes m and the copy of the layer that computes it */
static void NetSpatialSlab_Private(const NetSpatial *sp, PetscInt j, PetscInt64 oplanes, PetscInt64 *o0, PetscInt64 *m, Layer *L)
{
  *o0 = (PetscInt64)j * sp->sm;
  *m  = PetscMin((PetscInt64)sp->sm, oplanes - *o0);
  *L  = *m == sp->sm ? sp->slab[0] : sp->slab[1];
}

/* the input planes of a slab in float: from the box (in place when it holds one field), or widened from x */
static const float *NetSpatialSlabInput_Private(const NetSpatial *sp, const uint16_t *x, PetscInt64 bplane, PetscInt64 bplanes, PetscInt64 i0, PetscInt64 ni, float *buf)
{
  if (NetSpatialInPlace_Private(sp))
    NetSpatialSlabMove_Private(NET_SLAB_WIDEN, sp->nf, bplanes, bplane, i0, ni, (void *)x, buf);
  else if (sp->nf == 1)
    return (const float *)sp->xbox + i0 * bplane;
  else
    NetSpatialSlabMove_Private(NET_SLAB_COPY, sp->nf, bplanes, bplane, i0, ni, sp->xbox, buf);
  return buf;
}

/* y = f(x) slab by slab; x, y the stored bfloat16 values */
static PetscErrorCode NetSpatialForwardBF16_Private(Net net, PetscInt k, NetSpatial *sp, const PetscScalar *th, const uint16_t *x, uint16_t *y)
{
  PetscInt64 bplane, oplane, bplanes, oplanes;
  float     *in = NULL, *out = NULL;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpSlabs_Private(net, k, sp));
  NetSpatialPlanes_Private(sp, &bplane, &oplane, &bplanes, &oplanes);
  if (!NetSpatialInPlace_Private(sp)) {
    PetscCall(NetSpatialFloatBoxes_Private(sp, PETSC_TRUE, PETSC_FALSE));
    PetscCall(NetSpatialGatherBF16_Private(sp, x, (float *)sp->xbox));
  }
  if (sp->nslabs) PetscCall(PetscMalloc2((size_t)(sp->nf * ((sp->sm - 1) * sp->s0 + sp->ext0) * bplane), &in, (size_t)(sp->nf * sp->sm * oplane), &out));
  for (PetscInt j = 0; j < sp->nslabs; j++) {
    PetscInt64   o0, m;
    Layer        L;
    const float *xs;

    NetSpatialSlab_Private(sp, j, oplanes, &o0, &m, &L);
    xs          = NetSpatialSlabInput_Private(sp, x, bplane, bplanes, o0 * sp->s0, (m - 1) * sp->s0 + sp->ext0, in);
    L->training = net->layers[k]->training;
    L->frozen   = net->layers[k]->frozen;
    PetscCall(LayerForwardSingle(L, sp->nf, th, &xs, out));
    PetscUseTypeMethod(L, forget); /* the next slab's input may be at the same address (a reused buffer): conv keeps
                                      its columns by the input's address, so every slab's pass computes its own */
    NetSpatialSlabMove_Private(NET_SLAB_ROUND, sp->nf, oplanes, oplane, o0, m, y, out);
  }
  PetscCall(PetscFree2(in, out));
  sp->fwdelem   = NET_ELEM_BF16;
  sp->xboxvalid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* the box and the slabs' state of the last forward in this path, made again after another path's pass (its output
   into a scratch: the walk does not hand a spatial node its output) */
static PetscErrorCode NetSpatialEnsureBF16_Private(Net net, PetscInt k, NetSpatial *sp, const PetscScalar *th, const uint16_t *x)
{
  uint16_t *ys;

  PetscFunctionBegin;
  if (sp->xboxvalid && sp->fwdelem == NET_ELEM_BF16) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1((size_t)sp->nf * sp->out->npoints * sp->cout, &ys));
  PetscCall(NetSpatialForwardBF16_Private(net, k, sp, th, x, ys));
  PetscCall(PetscFree(ys));
  PetscFunctionReturn(0);
}

/* dx = J^T dy (when wantdx: the group agrees), dtheta += slab by slab */
static PetscErrorCode NetSpatialBackwardBF16_Private(Net net, PetscInt k, NetSpatial *sp, const PetscScalar *th, const uint16_t *x, const uint16_t *dy, uint16_t *dx, PetscBool wantdx, PetscScalar *dth)
{
  const PetscBool inplace = NetSpatialInPlace_Private(sp);
  PetscInt64      bplane, oplane, bplanes, oplanes;
  float          *in = NULL, *din = NULL, *dout = NULL;

  PetscFunctionBegin;
  PetscCall(NetSpatialEnsureBF16_Private(net, k, sp, th, x));
  NetSpatialPlanes_Private(sp, &bplane, &oplane, &bplanes, &oplanes);
  if (wantdx && !inplace) {
    PetscCall(NetSpatialFloatBoxes_Private(sp, PETSC_TRUE, PETSC_TRUE));
    PetscCall(PetscArrayzero((float *)sp->dbox, sp->nbox));
  }
  if (sp->nslabs) {
    const size_t nin = (size_t)(sp->nf * ((sp->sm - 1) * sp->s0 + sp->ext0) * bplane);

    PetscCall(PetscMalloc3(nin, &in, wantdx ? nin : 0, &din, (size_t)(sp->nf * sp->sm * oplane), &dout));
  }
  for (PetscInt j = 0; j < sp->nslabs; j++) {
    PetscInt64   o0, m, i0, ni;
    Layer        L;
    const float *xs;
    float       *dxs = wantdx ? din : NULL;

    NetSpatialSlab_Private(sp, j, oplanes, &o0, &m, &L);
    i0 = o0 * sp->s0;
    ni = (m - 1) * sp->s0 + sp->ext0;
    xs = NetSpatialSlabInput_Private(sp, x, bplane, bplanes, i0, ni, in);
    NetSpatialSlabMove_Private(NET_SLAB_WIDEN, sp->nf, oplanes, oplane, o0, m, (void *)dy, dout);
    PetscUseTypeMethod(L, forget); /* a slab's input buffer is reused by the next: no columns kept by its address */
    PetscCall(LayerBackwardSingle(L, sp->nf, th, &xs, NULL, dout, &dxs, dth));
    if (wantdx) NetSpatialSlabMove_Private(inplace ? NET_SLAB_ROUND : NET_SLAB_ADD, sp->nf, bplanes, bplane, i0, ni, inplace ? (void *)dx : sp->dbox, din);
  }
  PetscCall(PetscFree3(in, din, dout));
  if (wantdx && !inplace) { /* dx = round(H^T dxbox): the sums in float, rounded once */
    const PetscInt nloc = sp->nf * sp->in->npoints * sp->cin;
    float         *dxf;

    PetscCall(PetscMalloc1(nloc, &dxf));
    PetscCall(NetSpatialAddBack_Private(sp, NET_ELEM_FLOAT, PETSC_FALSE, sp->dbox, dxf));
    for (PetscInt i = 0; i < nloc; i++) dx[i] = PetNetFloatToBF16(dxf[i]);
    PetscCall(PetscFree(dxf));
  }
  PetscFunctionReturn(0);
}

/* dy = J (dx, dtheta) slab by slab (hasdx false: a zero input tangent; the group agrees) */
static PetscErrorCode NetSpatialJVPBF16_Private(Net net, PetscInt k, NetSpatial *sp, const PetscScalar *th, const uint16_t *x, const uint16_t *dx, PetscBool hasdx, const PetscScalar *dth, uint16_t *dy)
{
  const PetscBool inplace = NetSpatialInPlace_Private(sp);
  PetscInt64      bplane, oplane, bplanes, oplanes;
  float          *in = NULL, *din = NULL, *out = NULL;

  PetscFunctionBegin;
  PetscCall(NetSpatialEnsureBF16_Private(net, k, sp, th, x));
  NetSpatialPlanes_Private(sp, &bplane, &oplane, &bplanes, &oplanes);
  if (hasdx && !inplace) {
    PetscCall(NetSpatialFloatBoxes_Private(sp, PETSC_TRUE, PETSC_TRUE));
    if (sp->padded) PetscCall(PetscArrayzero((float *)sp->dbox, sp->nbox));
    PetscCall(NetSpatialGatherBF16_Private(sp, dx, (float *)sp->dbox));
  }
  if (sp->nslabs) {
    const size_t nin = (size_t)(sp->nf * ((sp->sm - 1) * sp->s0 + sp->ext0) * bplane);

    PetscCall(PetscMalloc3(nin, &in, hasdx ? nin : 0, &din, (size_t)(sp->nf * sp->sm * oplane), &out));
  }
  for (PetscInt j = 0; j < sp->nslabs; j++) {
    PetscInt64   o0, m, i0, ni;
    Layer        L;
    const float *xs, *dxs = NULL;

    NetSpatialSlab_Private(sp, j, oplanes, &o0, &m, &L);
    i0 = o0 * sp->s0;
    ni = (m - 1) * sp->s0 + sp->ext0;
    xs = NetSpatialSlabInput_Private(sp, x, bplane, bplanes, i0, ni, in);
    if (hasdx && inplace) {
      NetSpatialSlabMove_Private(NET_SLAB_WIDEN, sp->nf, bplanes, bplane, i0, ni, (void *)dx, din);
      dxs = din;
    } else if (hasdx && sp->nf == 1)
      dxs = (const float *)sp->dbox + i0 * bplane;
    else if (hasdx) {
      NetSpatialSlabMove_Private(NET_SLAB_COPY, sp->nf, bplanes, bplane, i0, ni, sp->dbox, din);
      dxs = din;
    }
    PetscUseTypeMethod(L, forget);
    PetscCall(LayerJVPSingle(L, sp->nf, th, &xs, NULL, &dxs, dth, out));
    NetSpatialSlabMove_Private(NET_SLAB_ROUND, sp->nf, oplanes, oplane, o0, m, dy, out);
  }
  PetscCall(PetscFree3(in, din, out));
  PetscFunctionReturn(0);
}

/* the arrays x[i], y, dx[i], dy of the following are of element type t: float when the value store is single or
   bfloat16 (NetNodeElem()), the stored bfloat16 values (NET_ELEM_BF16, above) for a window node at bfloat16, double otherwise and in the second-order adjoint and per-node Jacobians */
PetscErrorCode NetSpatialForward_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const xin[], void *y)
{
  NetSpatial *sp;
  const void *x;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  if (sp->kind == NET_SPATIAL_JOIN) {
    PetscCall(NetSpatialJoinForward_Private(net, k, sp, n, t, th, xin, y));
    PetscFunctionReturn(0);
  }
  x = xin[0];
  if (t == NET_ELEM_BF16) { /* a window node at bfloat16 (NetSpatialStreamsBF16_Private()) */
    PetscCall(NetSpatialForwardBF16_Private(net, k, sp, th, (const uint16_t *)x, (uint16_t *)y));
    PetscFunctionReturn(0);
  }
  if (sp->kind == NET_SPATIAL_GLOBAL)
    PetscCall(NetSpatialPool_Private(net, sp, t, x, y));
  else {
    if (sp->local) {
      sp->local->training = net->layers[k]->training;
      sp->local->frozen   = net->layers[k]->frozen;
    }
    PetscCall(NetSpatialLocalForward_Private(sp, t, th, x, y));
  }
  PetscFunctionReturn(0);
}

/* The box of the last forward in element type t: after a forward of another batch layout (the Jacobian shells at an
   older point are refused by the Net) or in the other type (a double pass after a float forward) it is gathered
   again; the local layer's own state (argmax of a max pool, conv's float weights) is recomputed with it */
static PetscErrorCode NetSpatialEnsureBox_Private(NetSpatial *sp, NetElem t, const PetscScalar *th, const void *x, const void *y)
{
  PetscFunctionBegin;
  if (sp->xboxvalid && sp->fwdelem == t) PetscFunctionReturn(0);
  if (y)
    PetscCall(NetSpatialLocalForward_Private(sp, t, th, x, (void *)y)); /* the same values again */
  else {                                                                /* the walk does not hand a spatial node its output (NetExecOps.needsy): a scratch for the forward's */
    void *ys;

    PetscCall(PetscMalloc((size_t)(sp->nf * sp->out->npoints * sp->cout) * NetElemBytes(t), &ys));
    PetscCall(NetSpatialLocalForward_Private(sp, t, th, x, ys));
    PetscCall(PetscFree(ys));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode NetSpatialBackward_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const xin[], const void *y, const void *dy, void *const dxin[], PetscScalar *dth)
{
  NetSpatial *sp;
  const void *x;
  void       *dx;
  PetscBool   wantdx;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  if (sp->kind == NET_SPATIAL_JOIN) {
    PetscCall(NetSpatialJoinBackward_Private(net, k, sp, n, t, th, xin, y, dy, dxin, dth));
    PetscFunctionReturn(0);
  }
  x  = xin[0];
  dx = dxin[0];
  PetscCall(NetSpatialAny_Private(net, dx, &wantdx));
  if (sp->kind == NET_SPATIAL_GLOBAL) {
    if (wantdx) PetscCall(NetSpatialPoolTranspose_Private(net, sp, t, dy, dx));
    PetscFunctionReturn(0);
  }
  if (t == NET_ELEM_BF16) {
    PetscCall(NetSpatialBackwardBF16_Private(net, k, sp, th, (const uint16_t *)x, (const uint16_t *)dy, (uint16_t *)dx, wantdx, dth));
    PetscFunctionReturn(0);
  }
  PetscCall(NetSpatialEnsureBox_Private(sp, t, th, x, y));
  if (sp->identity) { /* dx = J_local^T dy on the block itself */
    if (sp->local) PetscCall(NetSpatialLayerBackward_Private(sp->local, t, sp->nf, th, x, y, dy, wantdx ? dx : NULL, dth));
    PetscFunctionReturn(0);
  }
  if (sp->local) PetscCall(NetSpatialLayerBackward_Private(sp->local, t, sp->nf, th, sp->xbox, y, dy, wantdx ? sp->dbox : NULL, dth));
  if (wantdx) PetscCall(NetSpatialAddBack_Private(sp, t, PETSC_FALSE, sp->dbox, dx));
  PetscFunctionReturn(0);
}

PetscErrorCode NetSpatialJVP_Private(Net net, PetscInt k, PetscInt n, NetElem t, const PetscScalar *th, const void *const xin[], const void *y, const void *const dxin[], const PetscScalar *dth, void *dy)
{
  NetSpatial *sp;
  const void *x, *dx;
  PetscBool   hasdx;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  if (sp->kind == NET_SPATIAL_JOIN) {
    PetscCall(NetSpatialJoinJVP_Private(net, k, sp, n, t, th, xin, y, dxin, dth, dy));
    PetscFunctionReturn(0);
  }
  x  = xin[0];
  dx = dxin ? dxin[0] : NULL;
  PetscCall(NetSpatialAny_Private(net, dx, &hasdx));
  if (sp->kind == NET_SPATIAL_GLOBAL) {
    if (hasdx)
      PetscCall(NetSpatialPool_Private(net, sp, t, dx, dy));
    else {
      PetscMPIInt grank;

      PetscCallMPI(MPI_Comm_rank(NetSpatialNodeComm(net), &grank));
      if (!grank) PetscCall(PetscMemzero(dy, (size_t)(sp->nf * sp->cout) * NetElemBytes(t)));
    }
    PetscFunctionReturn(0);
  }
  if (t == NET_ELEM_BF16) {
    PetscCall(NetSpatialJVPBF16_Private(net, k, sp, th, (const uint16_t *)x, (const uint16_t *)dx, hasdx, dth, (uint16_t *)dy));
    PetscFunctionReturn(0);
  }
  PetscCall(NetSpatialEnsureBox_Private(sp, t, th, x, y));
  if (sp->identity) {
    if (sp->local) PetscCall(NetSpatialLayerJVP_Private(sp->local, t, sp->nf, th, x, y, hasdx ? dx : NULL, dth, dy));
    PetscFunctionReturn(0);
  }
  if (hasdx) PetscCall(NetSpatialGather_Private(sp, t, dx, sp->dbox));
  if (sp->local) PetscCall(NetSpatialLayerJVP_Private(sp->local, t, sp->nf, th, sp->xbox, y, hasdx ? sp->dbox : NULL, dth, dy));
  PetscFunctionReturn(0);
}

/* the second-order adjoint's curvature term, in double (netsecondorder.c): after a float forward the box is gathered
   again in double */
PetscErrorCode NetSpatialSOBackward_Private(Net net, PetscInt k, PetscInt n, const PetscScalar *th, const PetscScalar *x, const PetscScalar *y, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *ydot, const PetscScalar *dy,
                                            PetscScalar *dxd, PetscScalar *hv)
{
  NetSpatial  *sp;
  PetscScalar *xdotbox = NULL, *dxdotbox = NULL;
  PetscBool    hasxdot, wantdxd;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  if (sp->kind == NET_SPATIAL_GLOBAL || net->layers[k]->sozero) PetscFunctionReturn(0); /* linear, or piecewise linear */
  PetscCall(NetSpatialEnsureBox_Private(sp, NET_ELEM_DOUBLE, th, x, y));
  PetscCall(NetSpatialAny_Private(net, xdot, &hasxdot));
  PetscCall(NetSpatialAny_Private(net, dxd, &wantdxd));
  if (sp->identity) { /* dxdot += the curvature term on the block itself */
    if (sp->local) PetscCall(LayerSOBackwardArray(sp->local, sp->nf, th, x, y, hasxdot ? xdot : NULL, thd, ydot, dy, wantdxd ? dxd : NULL, hv));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscMalloc1(sp->nbox, &xdotbox));
  PetscCall(PetscCalloc1(sp->nbox, &dxdotbox));
  if (hasxdot) PetscCall(NetSpatialGather_Private(sp, NET_ELEM_DOUBLE, xdot, xdotbox));
  if (sp->local) PetscCall(LayerSOBackwardArray(sp->local, sp->nf, th, (const PetscScalar *)sp->xbox, y, hasxdot ? xdotbox : NULL, thd, ydot, dy, wantdxd ? dxdotbox : NULL, hv));
  if (wantdxd) PetscCall(NetSpatialAddBack_Private(sp, NET_ELEM_DOUBLE, PETSC_TRUE, dxdotbox, dxd));
  PetscCall(PetscFree(xdotbox));
  PetscCall(PetscFree(dxdotbox));
  PetscFunctionReturn(0);
}

/*
  A convolution of the grid whose channels are split over the spatial groups (a partition PxQ with P Q = G, the number
  of groups): the spatial executor's data movement around the model executor's (netmodel.c). The ranks that hold the
  same spatial block in the G groups (net->xcomm) hold the same box of their own fields; the box of each field is one
  "sample" of the model-parallel node, whose local layer is the convolution without padding on the box with this rank's
  channel blocks (the halo and the padding are in the box already):

    forward     xb = H x                       y = S f_local(R xb)                   (H: the halo exchange in the group;
    backward    dxb = R^T J_local^T S^T dy,    dtheta += local part;   dx = H^T dxb    R, S: netmodel.c, across groups)
    jvp         dxb = H dx;                    dy = S J_local (R xb; R dxb, dtheta)
    sobackward  xdotb = H xdot;                the local curvature term between R and S;   dxdot += H^T dxdotb

  Double values (the model executor computes in double; the value store widens and rounds). The ranks whose output
  block is empty have an empty box in every group, so the model part is skipped by the whole of their xcomm; the halo
  exchanges stay collective over the group.
*/

/* node k's box sizes (empty when its output block is) and output block sizes, for the model executor's local layer */
PetscErrorCode NetSpatialGetBox_Private(Net net, PetscInt k, PetscInt *nsd, PetscInt64 box[], PetscInt64 blk[])
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;

  PetscFunctionBegin;
  PetscCheck(sp && sp->kind == NET_SPATIAL_WINDOW, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s is not a window node of the grid", net->nodes[k].name);
  *nsd = sp->in->nsd;
  for (PetscInt d = 0; d < sp->in->nsd; d++) {
    box[d] = sp->local ? sp->bhi[d] - sp->blo[d] : 0;
    blk[d] = sp->out->sz[d];
  }
  PetscFunctionReturn(0);
}

/* xbox = H x in double (an identity box is x itself) */
static PetscErrorCode NetSpatialModelBox_Private(NetSpatial *sp, const PetscScalar *x)
{
  PetscFunctionBegin;
  sp->fwdelem = NET_ELEM_DOUBLE;
  if (!sp->identity) {
    PetscCall(NetSpatialBoxes_Private(sp, NET_ELEM_DOUBLE));
    PetscCall(NetSpatialGatherBegin_Private(sp, NET_ELEM_DOUBLE, x, sp->xbox));
    PetscCall(NetSpatialGatherEnd_Private(sp, NET_ELEM_DOUBLE, x, sp->xbox));
  }
  sp->xboxvalid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* forward: y = S f_local(R H x) */
PetscErrorCode NetSpatialModelForward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, PetscScalar *y)
{
  NetSpatial *sp;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  PetscCall(NetSpatialModelBox_Private(sp, x));
  if (sp->local) PetscCall(NetModelForward_Private(net, k, sp->nf, th, sp->identity ? x : (const PetscScalar *)sp->xbox, y));
  PetscFunctionReturn(0);
}

/* backward: dxb = R^T J_local^T S^T dy, dtheta += the local parameter part; dx = H^T dxb */
PetscErrorCode NetSpatialModelBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dth)
{
  NetSpatial *sp;
  PetscBool   wantdx;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  PetscCall(NetSpatialAny_Private(net, dx, &wantdx));
  if (!sp->xboxvalid || sp->fwdelem != NET_ELEM_DOUBLE) PetscCall(NetSpatialModelBox_Private(sp, x));
  if (sp->identity) {
    if (sp->local) PetscCall(NetModelBackward_Private(net, k, sp->nf, th, x, NULL, dy, wantdx ? dx : NULL, dth));
    PetscFunctionReturn(0);
  }
  if (sp->local) PetscCall(NetModelBackward_Private(net, k, sp->nf, th, (const PetscScalar *)sp->xbox, NULL, dy, wantdx ? (PetscScalar *)sp->dbox : NULL, dth));
  if (wantdx) PetscCall(NetSpatialAddBack_Private(sp, NET_ELEM_DOUBLE, PETSC_FALSE, sp->dbox, dx));
  PetscFunctionReturn(0);
}

/* jvp: dy = S J_local (R H x; R H dx, dtheta) (dx NULL: zero) */
PetscErrorCode NetSpatialModelJVP_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *dx, const PetscScalar *dth, PetscScalar *dy)
{
  NetSpatial        *sp;
  PetscBool          hasdx;
  const PetscScalar *db;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  PetscCall(NetSpatialAny_Private(net, dx, &hasdx));
  if (!sp->xboxvalid || sp->fwdelem != NET_ELEM_DOUBLE) PetscCall(NetSpatialModelBox_Private(sp, x));
  db = hasdx ? dx : NULL;
  if (hasdx && !sp->identity) {
    PetscCall(NetSpatialGather_Private(sp, NET_ELEM_DOUBLE, dx, sp->dbox));
    db = (const PetscScalar *)sp->dbox;
  }
  if (sp->local) PetscCall(NetModelJVP_Private(net, k, sp->nf, th, sp->identity ? x : (const PetscScalar *)sp->xbox, NULL, db, dth, dy));
  PetscFunctionReturn(0);
}

/* sobackward: the local curvature term on R H x and R H xdot, between S^T and R^T; dxdot += H^T (its input part) */
PetscErrorCode NetSpatialModelSOBackward_Private(Net net, PetscInt k, const PetscScalar *th, const PetscScalar *x, const PetscScalar *xdot, const PetscScalar *thd, const PetscScalar *dy, PetscScalar *dxd, PetscScalar *hv)
{
  NetSpatial  *sp;
  PetscScalar *xdotbox = NULL, *dxdotbox = NULL;
  PetscBool    hasxdot, wantdxd;

  PetscFunctionBegin;
  PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
  PetscCall(NetSpatialAny_Private(net, xdot, &hasxdot));
  PetscCall(NetSpatialAny_Private(net, dxd, &wantdxd));
  if (!sp->xboxvalid || sp->fwdelem != NET_ELEM_DOUBLE) PetscCall(NetSpatialModelBox_Private(sp, x));
  if (sp->identity) {
    if (sp->local) PetscCall(NetModelSOBackward_Private(net, k, sp->nf, th, x, NULL, hasxdot ? xdot : NULL, thd, NULL, dy, wantdxd ? dxd : NULL, hv));
    PetscFunctionReturn(0);
  }
  PetscCall(PetscMalloc1(sp->nbox, &xdotbox));
  PetscCall(PetscCalloc1(sp->nbox, &dxdotbox));
  if (hasxdot) PetscCall(NetSpatialGather_Private(sp, NET_ELEM_DOUBLE, xdot, xdotbox));
  if (sp->local) PetscCall(NetModelSOBackward_Private(net, k, sp->nf, th, (const PetscScalar *)sp->xbox, NULL, hasxdot ? xdotbox : NULL, thd, NULL, dy, wantdxd ? dxdotbox : NULL, hv));
  if (wantdxd) PetscCall(NetSpatialAddBack_Private(sp, NET_ELEM_DOUBLE, PETSC_TRUE, dxdotbox, dxd));
  PetscCall(PetscFree(xdotbox));
  PetscCall(PetscFree(dxdotbox));
  PetscFunctionReturn(0);
}

/*
  The adjoint identity of the halo exchange H of every window and upsampling node, in the element type the node
  computes in, on random x (the rank's block of the node's input) and w (the box):
      |<H x, w> - <x, H^T w>| / (|H x| |w|)
  with the products and sums in double over the group. H copies entries and H^T adds them (in float at low precision;
  a node that takes bfloat16 values gathers a bfloat16 x into a float box), so the identity holds to the element
  type's round-off. *err: the largest over the nodes and groups (0 when no node
  exchanges a halo). The Net must have seen a batch (it sets the layout).
*/
PetscErrorCode NetSpatialTestHalo_Private(Net net, PetscRandom rnd, PetscReal *err)
{
  PetscFunctionBegin;
  *err = 0;
  for (PetscInt k = 0; k < net->nlayers && net->vgrid; k++) {
    NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;
    NetElem     t  = NetNodeElem(net, k);
    PetscBool   bf = (PetscBool)(t == NET_ELEM_BF16); /* x in bfloat16, the box and H^T in float (NetSpatialGatherBF16_Private()) */
    size_t      es = NetElemBytes(bf ? NET_ELEM_FLOAT : t);
    PetscInt    nloc;
    void       *x, *Hx, *w, *Htw;
    uint16_t   *xb   = NULL;
    PetscReal   s[4] = {0, 0, 0, 0}, e; /* <Hx, w>, <x, H^T w>, |Hx|^2, |w|^2 */

    if (!sp || (sp->kind != NET_SPATIAL_WINDOW && sp->kind != NET_SPATIAL_SCALE)) continue;
    PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
    if (sp->identity) continue; /* no exchange: the node reads its block */
    nloc = sp->nf * sp->in->npoints * sp->cin;
    PetscCall(PetscMalloc(es * (size_t)nloc, &x));
    PetscCall(PetscMalloc(es * (size_t)nloc, &Htw));
    PetscCall(PetscMalloc(es * (size_t)sp->nbox, &Hx));
    PetscCall(PetscMalloc(es * (size_t)sp->nbox, &w));
    if (bf) {
      t = NET_ELEM_FLOAT;
      PetscCall(PetscMalloc1(nloc, &xb));
    }
    for (PetscInt i = 0; i < nloc + sp->nbox; i++) {
      PetscReal r;

      PetscCall(PetscRandomGetValueReal(rnd, &r));
      r = 2 * r - 1;
      if (bf && i < nloc) {
        xb[i]           = PetNetFloatToBF16((float)r);
        ((float *)x)[i] = PetNetBF16ToFloat(xb[i]);
      } else if (t == NET_ELEM_FLOAT) {
        if (i < nloc)
          ((float *)x)[i] = (float)r;
        else
          ((float *)w)[i - nloc] = (float)r;
      } else {
        if (i < nloc)
          ((PetscScalar *)x)[i] = r;
        else
          ((PetscScalar *)w)[i - nloc] = r;
      }
    }
    if (bf) {
      PetscCall(PetscArrayzero((float *)Hx, sp->nbox)); /* the padding */
      PetscCall(NetSpatialGatherBF16_Private(sp, xb, (float *)Hx));
    } else
      PetscCall(NetSpatialGather_Private(sp, t, x, Hx));
    PetscCall(NetSpatialAddBack_Private(sp, t, PETSC_FALSE, w, Htw));
    for (PetscInt i = 0; i < sp->nbox; i++) {
      const PetscReal a = t == NET_ELEM_FLOAT ? ((float *)Hx)[i] : ((PetscScalar *)Hx)[i], b = t == NET_ELEM_FLOAT ? ((float *)w)[i] : ((PetscScalar *)w)[i];

      s[0] += a * b;
      s[2] += a * a;
      s[3] += b * b;
    }
    for (PetscInt i = 0; i < nloc; i++) s[1] += t == NET_ELEM_FLOAT ? (PetscReal)((float *)x)[i] * ((float *)Htw)[i] : ((PetscScalar *)x)[i] * ((PetscScalar *)Htw)[i];
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, s, 4, MPIU_REAL, MPIU_SUM, NetSpatialNodeComm(net)));
    e    = PetscAbsReal(s[0] - s[1]) / PetscMax(PetscSqrtReal(s[2] * s[3]), PETSC_SMALL);
    *err = PetscMax(*err, e);
    PetscCall(PetscFree(x));
    PetscCall(PetscFree(Htw));
    PetscCall(PetscFree(Hx));
    PetscCall(PetscFree(w));
    PetscCall(PetscFree(xb));
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, err, 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)net)));
  PetscFunctionReturn(0);
}

/* NetView(): the grid a spatial node maps from and to, and this rank's box */
PetscErrorCode NetSpatialViewNode_Private(Net net, PetscInt k, PetscViewer viewer)
{
  NetSpatial *sp = (NetSpatial *)net->nodes[k].sp;
  char        gin[64], gout[64] = "one sample per field";

  PetscFunctionBegin;
  if (!sp) PetscFunctionReturn(0);
  PetscCall(NetGridToString_Private(sp->in, sizeof(gin), gin));
  if (sp->out) PetscCall(NetGridToString_Private(sp->out, sizeof(gout), gout));
  {
    char periodic[16] = "";

    for (PetscInt d = 0, n = 0; d < sp->in->nsd; d++)
      if (sp->in->periodic[d]) periodic[n++] = "zyx"[3 - sp->in->nsd + d];
    PetscCall(PetscViewerASCIIPrintf(viewer, "grid mode (%s): %s -> %s%s%s\n", NetSpatialKinds[sp->kind], gin, gout, periodic[0] ? ", periodic along " : "", periodic));
  }
  if (NetSpatialStreamsBF16_Private(net, k))
    PetscCall(PetscViewerASCIIPrintf(viewer, "bfloat16 values read and written in place: the halo exchanged in bfloat16 into a float box, the rest widened a slab of planes at a time\n"));
  else if (sp->npart)
    PetscCall(PetscViewerASCIIPrintf(viewer, "halo exchange overlapped with the interior; the boundary layer in %" PetscInt_FMT " slabs (on rank 0)\n", sp->npart));
  PetscFunctionReturn(0);
}

/*@
  NetCreateOutputLayout - the layout of a grid-mode Net's output for nf fields: the tensor (nf, [P,] N, M, c) of the
  output grid over the ranks of this rank's spatial group, each rank's block being its part of the output Vec

  Collective on the group

  Input Parameters:
+ net - the Net, in grid mode (NetSetGrid()) and set up
- nf  - the fields per group in the batch

  Output Parameter:
. layout - the layout (destroy it with PetNetLayoutDestroy()); use it with PetNetRedistributeCreate() to gather the
           output fields, or PetNetLayoutGetBlock() to know where a rank's entries lie

  Notes:
  A Net whose output left the grid (a globalavgpool) has none: its output is nf samples on the group's first rank.

  Level: intermediate

.seealso: `NetSetGrid()`, `PetNetLayoutGetBlock()`, `PetNetRedistributeCreate()`
@*/
PetscErrorCode NetCreateOutputLayout(Net net, PetscInt nf, PetNetLayout *layout)
{
  NetGrid    *g;
  PetscInt64  dims[PETNET_LAYOUT_MAX_DIM];
  PetscMPIInt gdims[NET_GRID_MAX];
  PetNetShape out;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(layout, 3);
  PetscCall(NetSetUp(net));
  PetscCheck(net->vgrid, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONGSTATE, "NetCreateOutputLayout(): the Net is not in grid mode: call NetSetGrid() first");
  g = (NetGrid *)net->vgrid[net->nlayers];
  PetscCheck(g, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONGSTATE, "NetCreateOutputLayout(): the Net's output left the grid (a globalavgpool): it is nf samples on the first rank of each group");
  PetscCheck(nf >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "NetCreateOutputLayout(): nf must be >= 0, not %" PetscInt_FMT, nf);
  PetscCall(NetGetOutputShape(net, &out));
  dims[0] = nf;
  for (PetscInt d = 0; d < g->nsd; d++) {
    dims[d + 1] = g->N[d];
    gdims[d]    = g->nr[d];
  }
  dims[g->nsd + 1] = out.dim[0];
  PetscCall(PetNetLayoutCreate(net->gcomm, layout));
  PetscCall(PetNetLayoutSetShape(*layout, g->nsd + 2, dims));
  PetscCall(PetNetLayoutSetGrid(*layout, g->nsd, gdims));
  for (PetscInt d = 0; d < g->nsd; d++) PetscCall(PetNetLayoutSetSplit(*layout, d + 1, d, g->own[d]));
  PetscCall(PetNetLayoutSetUp(*layout));
  PetscFunctionReturn(0);
}

/*
  The DMDA entry points (NetDMDASetUp()) map a field to a field of the same grid: the Net's output must lie on its
  input grid with the same ownership. caller names the entry point in the error, which names the first node that
  changes the grid.
*/
PetscErrorCode NetSpatialCheckKeepsGrid_Private(Net net, const char caller[])
{
  const NetGrid *g0, *gout;
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  char           spec[256], a[64], b[64] = "off the grid";

  PetscFunctionBegin;
  if (!net->vgrid) PetscFunctionReturn(0);
  g0   = (const NetGrid *)net->vgrid[0];
  gout = (const NetGrid *)net->vgrid[net->nlayers];
  if (gout && NetGridEqual_Private(g0, gout)) PetscFunctionReturn(0);
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetGrid *g = (const NetGrid *)net->vgrid[k + 1];

    if (g && NetGridEqual_Private(g0, g)) continue;
    PetscCall(LayerGetSpec(net->layers[k], sizeof(spec), spec));
    PetscCall(NetGridToString_Private(g0, sizeof(a), a));
    if (g) PetscCall(NetGridToString_Private(g, sizeof(b), b));
    SETERRQ(comm, PETSC_ERR_ARG_INCOMP,
            "%s maps a field of the DMDA to a field of the same grid, but node %s (%s) takes the %s grid to %s: give convolutions stride 1, dilation d and padding d (K - 1)/2 with an odd kernel K, or run the Net with NetSetGrid() and NetForward()",
            caller, net->nodes[k].name, spec, a, b);
  }
  SETERRQ(comm, PETSC_ERR_ARG_INCOMP, "%s maps a field of the DMDA to a field of the same grid, but the Net's output lies on another grid: run the Net with NetSetGrid() and NetForward()", caller);
}

/*@
  NetGetGrid - the DMDA a Net is laid out on (grid mode, NetSetGrid() or NetDMDASetUp()), or NULL in batch mode

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. da - the DMDA (owned by the Net: do not destroy it), or NULL

  Level: intermediate

.seealso: `NetSetGrid()`, `NetDMDASetUp()`
@*/
PetscErrorCode NetGetGrid(Net net, DM *da)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(da, 2);
  *da = net->grid;
  PetscFunctionReturn(0);
}

/*@C
  NetGetNodePatches - the convolution patches of a conv2d or conv3d node's input at the last NetForward(), in double,
  one row for each point of the node's output on this rank, for methods that read a network's intermediates (K-FAC's
  statistics)

  Collective (in grid mode the halo exchange of the node's input)

  Input Parameters:
+ net - the Net, after NetForward()
- k   - the node, of type conv2d or conv3d

  Output Parameters:
+ npoints - the rows: this rank's output points of node k over its fields (samples times output pixels in batch mode)
- col     - the patches, [npoints][G][kernel][Cin/G] as LayerConv2dGetPatches() and LayerConv3dGetPatches() lay them out

  Notes:
  The rows follow the node's output on this rank: sample by sample and pixel by pixel in batch mode; in grid mode
  (NetSetGrid()) field by field and over the rank's block of output points, so that row r matches row r of the
  cotangent NetGetNodeArraysRead() gives. In grid mode a patch reads the box of the input that the rank's output block
  needs, its neighbours' halos included (zero outside the field, or wrapped on a periodic DMDA). A node whose channels
  are split over the spatial groups (a partition, or -net_parallel model) is refused. Free the array with
  NetRestoreNodePatches() before any other call on the Net.

  Level: developer

.seealso: `NetRestoreNodePatches()`, `NetGetNodeArraysRead()`, `LayerConv2dGetPatches()`, `LayerConv3dGetPatches()`, `NetSetGrid()`
@*/
PetscErrorCode NetGetNodePatches(Net net, PetscInt k, PetscInt *npoints, const PetscScalar **col)
{
  Layer              layer, local;
  PetscBool          is2d, is3d;
  PetscInt           n, G, kg, P, nsamples;
  const PetscScalar *x, *src;
  PetscScalar       *c, *box = NULL;
  NetSpatial        *sp = NULL;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscCheck(k >= 0 && k < net->nlayers, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Node %" PetscInt_FMT " is not in [0, %" PetscInt_FMT "): give a node index of the Net", k, net->nlayers);
  layer = net->layers[k];
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV2D, &is2d));
  PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERCONV3D, &is3d));
  PetscCheck(is2d || is3d, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONG, "NetGetNodePatches(): node %s is a %s layer, not conv2d or conv3d: ask for the patches of a convolution", net->nodes[k].name, ((PetscObject)layer)->type_name);
  PetscCall(NetGetNodeArraysRead(net, k, &n, &x, NULL));
  local    = layer;
  src      = x;
  nsamples = n;
  if (net->nodes[k].sp) {
    PetscCheck(!net->nodes[k].mp, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP,
               "NetGetNodePatches(): node %s of the grid has its channels split over the spatial groups (a partition, or -net_parallel model), and its patches (and K-FAC's factors) would need the box of every group's channels, which the model "
               "executor's split does not gather: give the node no partition (NetSetNodePartition(), -net_parallel replicated or sharded), or train with -tao_type adam",
               net->nodes[k].name);
    PetscCall(NetSpatialSetUpBatch_Private(net, k, &sp));
    PetscCheck(sp->kind == NET_SPATIAL_WINDOW, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: a convolution of the grid is not a window node", net->nodes[k].name);
    local    = sp->local; /* the batch-mode copy on the box of one field; NULL when this rank's output block is empty */
    nsamples = local ? sp->nf : 0;
    if (!sp->identity) { /* the box of each field, [nf][box points][cin], halos from the neighbours (collective over the group) */
      PetscCall(PetscMalloc1(sp->nbox, &box));
      PetscCall(NetSpatialGather_Private(sp, NET_ELEM_DOUBLE, x, box));
      src = box;
    }
  }
  G = kg = P = 0;
  if (local) {
    if (is3d)
      PetscCall(LayerConv3dGetPatchLayout(local, &G, &kg, &P, NULL));
    else
      PetscCall(LayerConv2dGetPatchLayout(local, &G, &kg, &P, NULL));
  }
  PetscCheck(!sp || !local || P == sp->out->npoints, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Node %s: the local copy has %" PetscInt_FMT " output points, the rank's block %" PetscInt_FMT, net->nodes[k].name, P, sp->out->npoints);
  PetscCheck((PetscInt64)nsamples * P * G * kg <= PETSC_MAX_INT, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "Node %s: the patches of %" PetscInt_FMT " samples (fields) of %" PetscInt_FMT " output points on this rank hold more entries than a PetscInt counts: use fewer samples per batch", net->nodes[k].name, nsamples, P);
  PetscCall(PetscMalloc1((size_t)nsamples * P * G * kg, &c));
  if (nsamples) {
    if (is3d)
      PetscCall(LayerConv3dGetPatches(local, nsamples, src, c));
    else
      PetscCall(LayerConv2dGetPatches(local, nsamples, src, c));
  }
  PetscCall(PetscFree(box));
  PetscCall(NetRestoreNodeArraysRead(net, k, &n, &x, NULL));
  *npoints = nsamples * P;
  *col     = c;
  PetscFunctionReturn(0);
}

/*@C
  NetRestoreNodePatches - frees the patches of NetGetNodePatches()

  Not collective

  Input Parameters:
+ net - the Net
- k   - the node

  Output Parameters:
+ npoints - the rows, set to 0 (or NULL)
- col     - the patches, freed and set to NULL

  Level: developer

.seealso: `NetGetNodePatches()`
@*/
PetscErrorCode NetRestoreNodePatches(Net net, PetscInt k, PetscInt *npoints, const PetscScalar **col)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(*col));
  if (npoints) *npoints = 0;
  PetscFunctionReturn(0);
}
