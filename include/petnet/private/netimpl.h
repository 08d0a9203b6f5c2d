/* Private: the Net object, a directed acyclic graph of layers. */
#pragma once

#include <petnetnet.h>
#include <petnet/private/layerimpl.h>

#define NET_INPUT            (-1) /* the input index of a node fed by the Net's input */
#define NET_MAX_DEPTH        64   /* residual blocks nest at most this deep in a layer list */
#define NET_MAX_STACK_INPUTS 8    /* joins with more inputs take their pointer arrays from the heap */
#define NET_MAX_NAME         2048 /* longest text of one entry (LayerGetSpec()) or node name in NetGetSpec() */

/*
  A node of the graph: one layer and the nodes its inputs come from. Nodes are stored in topological order (every
  input of node k is NET_INPUT or a node before k) and the last node is the Net's output.

  A layer list (NetSetLayers()) is a chain; its entry residual(F|P) becomes the nodes of F, those of P and an add node
  joining them. Names and options prefixes follow the list, so that a list keeps the tensor names and options it had
  when residual blocks were layers of their own:

    entry 2 = residual(dense:8,relu|dense:8)   nodes  "2.res.0" (-layer2_res_layer0_), "2.res.1", "2.shortcut.0", "2" (add)

  The entry transformer:H:F[:causal] (the pre-norm block) becomes two residual entries, named as entries of their own
  under the block's name, the second join taking the block's name and prefix:

    entry 3 = transformer:4:256  nodes "3.attn.res.0" layernorm (-layer3_attn_res_layer0_), "3.attn.res.1" attention:4,
                                       "3.attn" (add, -layer3_attn_),
                                       "3.mlp.res.0" layernorm (-layer3_mlp_res_layer0_), "3.mlp.res.1" dense:256:tokens,
                                       "3.mlp.res.2" gelu, "3.mlp.res.3" dense:E:tokens (E the block's width, NetNode.width), "3" (add)

  A graph (NetSetGraph()) names its nodes itself ("stem", "skip", ...) with the options prefix <name>_.
*/
/*
  One walk, two tables (netforward.c, netexec.c, netprecision.c). The walk over the graph (forward, backward, JVP, the
  second-order adjoint, the per-node Jacobians) knows no mode: for each node it asks the Net's value store for the
  node's arrays in the element type the node computes in, and hands them to the node's executor.

    value store   where the values of a batch live, chosen by the precision (NetStoreOps: double Vecs; float; bfloat16
                  widened to float for compute), per value v = 0..L and slot: the value, its tangent or cotangent, the
                  scratch of fan-out sums, and the two cotangents of the second-order adjoint
    executor      how a node runs over the ranks (NetExecOps: plain, model-parallel, spatial), given arrays of its
                  element type: plain and spatial nodes compute in the store's type, model-parallel ones in double (the
                  store widens and rounds), so every executor works at every precision
*/
typedef enum {
  NET_SLOT_VALUE,   /* the value of v (act[v]) */
  NET_SLOT_TANGENT, /* its tangent (JVP) or cotangent (backward) (dact[v]) */
  NET_SLOT_SUM,     /* fan-out: the contribution of one more consumer, added in (dsum[v]) */
  NET_SLOT_BAR,     /* second-order adjoint: the cotangent of dY (bar[v]) ... */
  NET_SLOT_BARD,    /* ... and its tangent (bard[v]) */
  NET_NUM_SLOTS
} NetSlot;
typedef enum {
  NET_ELEM_DOUBLE,
  NET_ELEM_FLOAT,
  NET_ELEM_BF16 /* the stored bfloat16 values themselves, for a node that streams them (NetNodeStreamsBF16()) */
} NetElem;
typedef enum { NET_READ = 1, NET_WRITE = 2, NET_READWRITE = 3 } NetAccess;

typedef struct {
  const char *name;                                                           /* for NetView() */
  NetElem     compute;                                                        /* the element type a node computes in when its executor can */
  PetscErrorCode (*setup)(Net);                                               /* for the batch of net->vlocal */
  PetscErrorCode (*reset)(Net);                                               /* frees what setup and get made */
  PetscErrorCode (*get)(Net, NetSlot, PetscInt, NetAccess, NetElem, void **); /* an array of slot s of value v */
  PetscErrorCode (*restore)(Net, NetSlot, PetscInt, NetAccess, NetElem, void **);
  PetscErrorCode (*fromvec)(Net, Vec, NetSlot, PetscInt); /* slot s of v = a public double Vec (rounded) */
  PetscErrorCode (*tovec)(Net, NetSlot, PetscInt, Vec);   /* the Vec = slot s of v (widened) */
  PetscErrorCode (*addsum)(Net, NetSlot, PetscInt);       /* slot s of v += NET_SLOT_SUM of v */
  PetscErrorCode (*nextnode)(Net);                        /* the arrays got for the last node are all restored */
  /* another set of the values v = 1..L, as the forward cache keeps them (netforwardcache.c): made like the store's
     own, exchanged with them, freed */
  PetscErrorCode (*newvalues)(Net, void ***);
  PetscErrorCode (*swapvalues)(Net, void **);
  PetscErrorCode (*freevalues)(Net, void ***);
} NetStoreOps;

/* x[i], y, dx[i], dy: arrays of the node's n samples in element type t (double or float); th, dth: the node's
   parameters and their direction or gradient, always double, as NetNodeGetParameters_Private() hands them over;
   backward's mask: the activation node fused before this one whose derivative its dx pass applies (netfuse.c; the
   NetBackward() walk passes NetNode.fusemask), or -1 */
typedef struct {
  const char *name;    /* for NetView() */
  PetscBool   floatok; /* computes in float (else the store gives it double arrays) */
  PetscBool   needsy;  /* backward and jvp read the node's output value y; else the walk hands them NULL (a spatial node's
                          windowed kernels never read it, and at bfloat16 its widened copy is the node's largest array) */
  PetscErrorCode (*forward)(Net, PetscInt, NetElem, const PetscScalar *, const void *const[], void *);
  PetscErrorCode (*backward)(Net, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *, void *const[], PetscScalar *, PetscInt);
  PetscErrorCode (*jvp)(Net, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *const[], const PetscScalar *, void *);
  /* the curvature term of the second-order adjoint (double; see LayerSOBackwardArray()) */
  PetscErrorCode (*sobackward)(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
  PetscErrorCode (*view)(Net, PetscInt, PetscViewer);
} NetExecOps;

typedef struct {
  Layer     layer;
  char     *name;     /* state_dict module name: "3", "2.res.1", or the graph's own name */
  char     *prefix;   /* options prefix after the Net's: "layer3_", "layer2_res_layer1_", "stem_" */
  PetscInt  nin, *in; /* the input nodes (NET_INPUT: the Net's input) */
  PetscInt  owner;    /* list form: the join node of the residual block whose F or P holds this node, or -1 */
  PetscInt  branch;   /* ... 0: in F, 1: in P */
  PetscBool residual; /* list form: this node is the join of a residual(F|P) entry */
  PetscInt  block;    /* the last node of the transformer:H:F entry that holds this node (its two residual halves), or -1 */
  PetscBool width;    /* the last dense of a transformer block's MLP: its outputs are the block's width E, set at set-up */
  PetscInt  nuses;    /* edges leaving this node (+1 for the Net's output); set at set-up */

  /* Where the node's parameters come from (netparams.c). The kernels receive this rank's nplocal parameters of the
     node as one array: the entries of theta in the ascending runs [runstart[i], runstart[i] + runlen[i]) put end to
     end (nruns == 0: the whole block [poff[k], poff[k+1])), and their gradient accumulates into an array laid out the
     same way. A data-parallel node takes its whole block; a model-parallel node only its own block of it. */
  PetscInt  nplocal, nruns;
  PetscInt *runstart, *runlen;
  void     *pmap; /* the gather / reduce-scatter of these entries (netpmap.c); NULL: the node reads theta_rep */

  /* Model parallelism (netmodel.c): the P_out x P_in grid of ranks the node's weights are split over as its entry, the
     options or NetSetNodePartition() ask (0x0: none; in model mode NetSetUp() may choose one), and the state of the
     split the node runs with (NULL: data parallel; its grid, layouts, data-movement operators, the local layer) */
  PetscInt partition[2];
  void    *mp;
  void    *tblock; /* tensor parallelism: an elementwise node between the two dense nodes of an MLP pair that keeps the
                      column block (the rank's columns of all samples of its group): its copy of the layer on the block
                      (netmodel.c, executor NetExecTensorBlock); NULL otherwise */

  /* Grid mode (netspatial.c): a node whose input lies on the grid and that reads a neighbourhood (a window, an
     upsampling) or leaves the grid (globalavgpool); NULL for the nodes that act point by point */
  void *sp;

  /* Sequence parallelism (netsequence.c): a node that reads the Net's input, writes its output or mixes tokens; NULL
     for the nodes that act on each token alone (plain nodes over the rank's tokens) */
  void *sq;

  /* Fusion (netfuse.c), decided at set-up, -1 where none: fuseact, the activation node this node applies in its forward
     output pass (this node's output value then holds the activation's output, and the activation's value is the same
     Vec); fusemask, the activation node whose derivative this node applies to its dx (its backward writes the
     activation's input cotangent). fusedinto and fusedback: the other end, on the activation node. */
  PetscInt fuseact, fusemask, fusedinto, fusedback;

  /* Placement (netplace.c): the pipeline stage the node runs on (its group of ranks); stageset: the user's own
     (NetSetNodePlacement(), -<prefix>stage, entry@stage, or the ranks below), else the cost model's at set-up.
     rankn > 0: the node's own group of ranks [ranklo, ranklo + rankn) (NetSetNodeRanks(), entry@ranks=a:b), stage -1 */
  PetscInt  stage;
  PetscBool stageset;
  PetscInt  ranklo, rankn;

  const NetExecOps *exec; /* how the node runs over the ranks (netexec.c), chosen at set-up */
  PetscBool         bf16; /* its kind's bfloat16 kernels run here (NetSetUpBackend_Private(); NetNodeStreamsBF16()) */

  /* The walk's split backward of a node that gathers its parameters (netforward.c): 1 while it runs the input part
     (with the parameters), 2 the parameter part (without them, just after, same cotangent), 0 a whole backward. An
     executor may keep what the first part moved for the second (netmodel.c: dy' = S^T dy). */
  PetscInt bwdpart;
} NetNode;

struct _p_Net {
  PETSCHEADER(int);
  PetNetShape     in;
  PetscInt        nlayers, maxlayers; /* the nodes */
  NetNode        *nodes;
  Layer          *layers; /* layers[k] = nodes[k].layer */
  PetscBool       graph;  /* built by NetSetGraph(): NetGetSpec() writes the graph form */
  PetscInt       *poff;   /* poff[k] .. poff[k+1]: parameters of node k */
  PetscInt        nparams;
  PetscInt        ninputuses; /* edges leaving the Net's input */
  PetscBool       setupcalled;
  unsigned long   seed;
  NetParallelType parallel; /* replicated, sharded or model (NetSetParallel()) */

  /* Parameters: theta is distributed (each rank owns a slice); the layers read the replicated copy theta_rep,
     refreshed by the broadcast whenever theta's state changes. grad_rep collects this rank's gradient. The kernels
     receive each node's block through NetGetNodeParameters_Private(), the one place that knows this layout. */
  Vec              theta, theta_rep, dtheta_rep, grad_rep;
  Mat              bcast;
  PetscObjectState theta_state;
  PetscBool        theta_rep_valid;
  PetscBool        replicated;      /* theta_rep, grad_rep and dtheta_rep exist (some node reads them) */
  PetscBool        gathers;         /* some node gathers its parameters through its map (netpmap.c) */
  PetscObjectState theta_fwd_state; /* theta's state at the last NetForward(): nodes that gather their parameters
                                       (sharded, model) gather them again in backward and must see the same point */

  /* Workspace for a batch of nlocal samples on this rank (N in all): act[0] is the input, act[k+1] the output of node
     k; dact[.] the tangent or cotangent at the same place; dsum[.] (NULL unless a value feeds several nodes) the
     scratch where backward adds up the cotangents of a value used more than once. */
  PetscInt  nlocal, nglobal;
  PetscInt *vlocal;   /* samples of value v on this rank (nlayers + 1 entries): nlocal for every value, except in
                         grid mode, where a pooling or upsampling node changes the number of grid points and a
                         globalavgpool leaves the grid (netspatial.c) */
  PetscInt  batchgen; /* counts the workspace rebuilds: a node that caches something per batch layout compares it */
  PetscInt *ventries; /* entries of value v on this rank where they are not vlocal[v] times its size, else 0
                         (NetValueEntries()): the column block of a tensor-parallel MLP pair, kept split between
                         its two dense nodes, holds all samples of the group and the rank's block of the last dim
                         (netmodel.c); NULL when no value is */
  Vec             *act, *dact, *dsum;
  PetscBool        forwarded;
  PetscObjectState input_state; /* act[0] is the caller's input Vec (referenced, not copied): its state at NetForward */
  Mat              J, JP;
  PetscInt         nforward;   /* NetForward() calls so far: tells a cached linearization point from a stale one */
  PetscInt         fcachesize; /* NetSetForwardCache(): earlier forward passes kept (0: none) */
  void            *fcache;     /* ... and their activations, by input (netforwardcache.c) */

  /* Second order (NetSecondOrderBackward()): the last NetJVP() leaves the tangents in dact[.], tanzero[v] says which
     are zero, and dtheta_rep holds its parameter direction (tandtheta); bar[.] and bard[.] (allocated on first use)
     hold the cotangents of dY and their tangents. bar is kept for further products at the same point and the same dY. */
  PetscBool       *tanzero;
  PetscBool        tanvalid, tandtheta;
  Vec              tandthetavec; /* the last NetJVP()'s parameter direction (referenced), for nodes that gather it */
  Vec              fbdY;         /* NetForwardBackward()'s output cotangent, laid out like the output (made once a workspace) */
  Vec             *bar, *bard;
  Vec              barY;
  PetscObjectState barYstate;
  PetscInt         barforward;

  /* The per-node Jacobian shells (NetGetLayerJacobian(), NetGetLayerJacobianP()) and the distributed Vecs of each
     node's own parameters with their broadcasts; NULL until asked for */
  Mat *LJ, *LJP, *lbcast;
  Vec *ltheta, *ltheta_rep;

  /* The input normalisation x -> (scale x - mean) / std the Net was trained with (NetSetInputNormalization()),
     recorded in model files; normset PETSC_FALSE: none recorded (files of version < 3 without it) */
  PetscBool normset;
  PetscReal normscale, normmean, normstd;

  /* -net_save FILE (netsave.c): the file a program asked for; saved: a NetSave() to it happened, at theta's state
     savedstate. NetDestroy() saves a set-up Net whose requested save has not happened. */
  char             savefile[PETSC_MAX_PATH_LEN];
  PetscBool        saved;
  PetscObjectState savedstate;

  /* Low precision (NetSetPrecision(), netprecision.c): the values of the batch live in lval[v] (float or bfloat16,
     vlocal[v] * size entries, v = 0..nlayers), their tangents or cotangents in ldval[v], fan-out sums in lsum[v]; the
     Vecs act[0] (the caller's input) and act[nlayers] (the output, widened to double) remain, the others are NULL */
  NetPrecision       precision;
  NetBackend         backend;               /* the float GEMMs' backend, set on each layer (netbackend.c) */
  const NetStoreOps *store;                 /* the value store of this precision (netprecision.c) */
  void             **lstore[NET_NUM_SLOTS]; /* a low-precision store: the buffers of each slot, per value */
  char              *lwide;                 /* its scratch for the widened arrays of the node at hand */
  size_t             lwidesize, lwidetop;   /* its bytes, and how many the node at hand has taken */
  size_t             lwidepeak;             /* the most one node has asked for (the scratch grows to it) */
  void             **lwidemore;             /* arrays beyond the scratch, freed at the next node */
  PetscInt           nwidemore, maxwidemore;
  PetscBool          fuse;        /* fuse activations into neighbouring passes (NetSetFusion(), -net_fuse) */
  PetscBool          bf16kernels; /* at bfloat16, the kinds' bfloat16 kernels on the stored values (NetSetBFloat16Kernels()) */
  PetscBool          training;    /* see NetSetTraining() */
  PetscBool          testjacobian, intest;
  PetscInt           loadnparams;         /* >= 0 while a model file is read: the parameter count it declares, checked by NetSetUp() before allocating */
  const char        *loadfile, *loadspec; /* ... and that file's name and layer list, for the error */
  PetscInt64         maxnparams;          /* -1, or the most parameters allowed (an inner Net's share of the file's count) */

  /* Grid mode (netspatial.c, NetSetGrid()): the Net acts on fields of a 2-D or 3-D DMDA, a sample being a grid point;
     with G spatial groups (-net_spatial_groups) the communicator is split into G groups of ranks, each holding its own
     fields on its own copy of the grid (samples x space) */
  DM        grid;      /* the DMDA on this rank's group (referenced), or NULL: batch mode */
  PetscInt  ngroups;   /* the number of spatial groups (1: the whole communicator holds each field) */
  PetscBool spoverlap; /* overlap the halo exchanges with computation (NetSetSpatialOverlap()) */
  MPI_Comm  gcomm;     /* this rank's group communicator (MPI_COMM_NULL until NetGetSpatialComm()) */
  MPI_Comm  xcomm;     /* the ranks holding the same spatial block in every group (G ranks, in group order; made with
                          gcomm): a convolution with a partition splits its channels over them (netmodel.c) */
  void **vgrid;        /* per value (nlayers + 1): the grid it lies on, or NULL: off the grid */
  /* pipeline stages on a grid (-net_stages S with NetSetGrid(), netplace.c): this rank's stage has its own DMDA of the
     grid's sizes over the stage's ranks, on which the spatial nodes of the stage run and exchange their halos; vgrid
     then describes the stage's decomposition (the public input and output keep grid's) */
  DM       sgrid; /* the stage's DMDA, or NULL */
  MPI_Comm scomm; /* its communicator (the stage's ranks in rank order); MPI_COMM_NULL: the spatial nodes use gcomm */

  /* Tensor parallelism (netmodel.c, -net_parallel tensor): the split nodes run on groups of tensorranks consecutive
     ranks (0: all ranks), each group a data-parallel replica of the others; tcomm is this rank's group (made at the
     first split node's set-up for tcommranks ranks, MPI_COMM_NULL before) */
  PetscInt tensorranks, tcommranks;
  MPI_Comm tcomm;
  /* Sequence parallelism (netsequence.c, -net_parallel sequence): the groups of seqranks ranks (0: all) that split the
     tokens of their samples, and the state of the split (NULL unless set up in that mode) */
  PetscInt seqranks;
  void    *seq;

  /* Placement (netplace.c, -net_stages, -net_microbatches): the stages asked for, the micro-batches, the schedule, and
     the state of the pipeline (NULL: every node on every rank, one pass over the batch); repoff[k]: where node k's
     parameters sit in theta_rep when it holds only this rank's stage (-1: another stage's), NULL: at poff[k] */
  PetscInt            nstages, nmicro;
  NetPipelineSchedule schedule;
  void               *pl;
  PetscInt           *repoff;
};

/* the walks of netforward.c in parts (NetForward(), NetBackward(), NetForwardBackward()'s 1F1B schedule) */
typedef struct {
  const PetscScalar *theta, *btheta; /* the replicated parameters' arrays, of the forward and the backward walk */
  const void        *xstack[NET_MAX_STACK_INPUTS], **x;
  void              *dstack[NET_MAX_STACK_INPUTS], **dx;
  PetscScalar       *grad;
  PetscBool         *seeded, *summed;
  Vec                dX, G;
  PetscInt          *wnodes, nw; /* placed: the nodes whose parameter pass over all micro-batches waits for the walk's end */
} NetWalk;
PETSC_INTERN PetscErrorCode NetWalkForwardBegin_Private(Net, Vec, NetWalk *, PetscBool *);
PETSC_INTERN PetscErrorCode NetWalkForwardStep_Private(Net, NetWalk *, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetWalkForwardEnd_Private(Net, NetWalk *, PetscBool, Vec);
PETSC_INTERN PetscErrorCode NetWalkBackwardBegin_Private(Net, Vec, Vec, Vec, NetWalk *);
PETSC_INTERN PetscErrorCode NetWalkBackwardStep_Private(Net, NetWalk *, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetWalkBackwardEnd_Private(Net, NetWalk *);
PETSC_INTERN PetscErrorCode NetSetUpWorkspace_Private(Net, Vec);
PETSC_INTERN PetscErrorCode NetResetWorkspace_Private(Net);
PETSC_INTERN PetscErrorCode NetForwardCacheLookup_Private(Net, Vec, PetscBool *);
PETSC_INTERN PetscErrorCode NetForwardCacheRecord_Private(Net, Vec);
PETSC_INTERN PetscErrorCode NetForwardCacheReset_Private(Net);
PETSC_INTERN PetscErrorCode NetForwardCacheDestroy_Private(Net);
PETSC_INTERN PetscErrorCode NetDetachJacobian_Private(Mat *, PetscBool);
PETSC_INTERN PetscErrorCode NetCheckInputUnchanged_Private(Net);
PETSC_INTERN PetscErrorCode NetUpdateReplicatedParameters_Private(Net);
PETSC_INTERN PetscErrorCode NetNodeGetParameters_Private(Net, PetscInt, Vec, const PetscScalar *, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetNodeRestoreParameters_Private(Net, PetscInt, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetNodeGetGradient_Private(Net, PetscInt, PetscScalar *, PetscBool, PetscScalar **);
PETSC_INTERN PetscErrorCode NetNodeRestoreGradient_Private(Net, PetscInt, Vec, PetscScalar **);
PETSC_INTERN PetscErrorCode NetGetGradientArray_Private(Net, Vec, PetscScalar **);
PETSC_INTERN PetscErrorCode NetRestoreGradientArray_Private(Net, Vec, PetscScalar **);
PETSC_INTERN PetscErrorCode NetGetReplicatedArray_Private(Vec, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetRestoreReplicatedArray_Private(Vec, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetCheckParametersUnchanged_Private(Net, const char[]);
PETSC_INTERN PetscErrorCode NetSetUpParameterMaps_Private(Net);
PETSC_INTERN PetscErrorCode NetResetParameterMaps_Private(Net);
PETSC_INTERN PetscErrorCode NetGetNodeBlock_Private(Net, PetscInt, const PetscScalar *, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetRestoreNodeBlock_Private(Net, PetscInt, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetNodeJVP_Private(Net, PetscInt, Vec, Vec, Vec);
PETSC_INTERN PetscErrorCode NetGetReplicatedDirection_Private(Net, Vec, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetNodeBackwardArrays_Private(Net, PetscInt, NetElem, const PetscScalar *, const void *, void *const[], PetscScalar *, PetscInt);
PETSC_INTERN PetscErrorCode NetNodeBackward_Private(Net, PetscInt, Vec, Vec, Vec);
PETSC_INTERN PetscErrorCode NetValueCounts_Private(Net, PetscInt, PetscInt[]);
/* the arrays of node k's output size a batch keeps per sample: its value (unless an activation shares its producer's,
   netfuse.c), its tangent or cotangent, and the sum of its cotangents if several nodes use it */
static inline PetscInt NetNodeStoredArrays(Net net, PetscInt k)
{
  return (net->nodes[k].fusedinto >= 0 ? 1 : 2) + (net->nodes[k].nuses > 1 ? 1 : 0);
}
/* the entries on this rank of value v (v = 0: the Net's input, v = k + 1: node k's output) of size entries a sample, in
   64 bits (NetSetUpWorkspace_Private() checks the largest against PETSC_MAX_INT before any store is made) */
static inline PetscInt64 NetValueEntries(Net net, PetscInt v, PetscInt size)
{
  return net->ventries && net->ventries[v] ? (PetscInt64)net->ventries[v] : (PetscInt64)net->vlocal[v] * size;
}
/* the samples on this rank of node k's (first) input in the current batch */
static inline PetscInt NetNodeCount(Net net, PetscInt k)
{
  return net->vlocal[net->nodes[k].in[0] + 1];
}
PETSC_INTERN PetscErrorCode NetSpatialCheckNode_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetSpatialSetUpNode_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetSpatialSetUpInput_Private(Net);
PETSC_INTERN PetscErrorCode NetSpatialReset_Private(Net);
PETSC_INTERN PetscErrorCode NetSpatialDestroy_Private(Net);
PETSC_INTERN PetscErrorCode NetSpatialOutputCount_Private(Net, PetscInt, PetscInt, PetscInt *);
PETSC_INTERN PetscErrorCode NetSpatialFields_Private(Net, PetscInt, PetscInt *);
PETSC_INTERN PetscErrorCode NetSpatialStageUnits_Private(Net, PetscInt, PetscInt *);
PETSC_INTERN PetscErrorCode NetSpatialCreateStageSF_Private(Net, PetscBool, PetscInt, PetscInt, PetscSF *);
PETSC_INTERN PetscErrorCode NetSpatialForgetBox_Private(Net, PetscInt);
PETSC_INTERN PetscInt       NetPlaceGridFields_Private(Net);
/* spatial nodes: the values x[i], y, dx[i], dy of element type t (NetElem), the parameters double */
PETSC_INTERN PetscErrorCode NetSpatialForward_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], void *);
PETSC_INTERN PetscErrorCode NetSpatialBackward_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *, void *const[], PetscScalar *);
PETSC_INTERN PetscErrorCode NetSpatialJVP_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *const[], const PetscScalar *, void *);
PETSC_INTERN PetscErrorCode NetSpatialTestHalo_Private(Net, PetscRandom, PetscReal *);
PETSC_INTERN PetscErrorCode NetSpatialSOBackward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *,
                                                         PetscScalar *);
PETSC_INTERN PetscErrorCode NetSpatialViewNode_Private(Net, PetscInt, PetscViewer);
/* a convolution of the grid whose channels are split over the spatial groups (netspatial.c around netmodel.c): the
   spatial executor's box, the model executor's operators on it (double values) */
PETSC_INTERN PetscErrorCode    NetSpatialGetBox_Private(Net, PetscInt, PetscInt *, PetscInt64[], PetscInt64[]);
PETSC_INTERN PetscErrorCode    NetSpatialModelForward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode    NetSpatialModelBackward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode    NetSpatialModelJVP_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode    NetSpatialModelSOBackward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN const NetStoreOps NetStoreDouble, NetStoreLow;
PETSC_INTERN PetscErrorCode    NetPrecisionBytes_Private(Net, PetscInt *);
PETSC_INTERN const NetExecOps  NetExecPlain, NetExecModel, NetExecSpatial, NetExecSpatialModel, NetExecSequence, NetExecTensorBlock, NetExecPlaced, NetExecPlacedSplit, NetExecPlacedSequence, NetExecPlacedSpatial;
/* placement (netplace.c): pipeline stages and micro-batches */
PETSC_INTERN PetscErrorCode NetPlaceSetUp_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceSetFromOptions_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceReset_Private(Net);
PETSC_INTERN PetscBool      NetPlaced_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceCounts_Private(Net, PetscInt, PetscInt[], PetscBool);
PETSC_INTERN PetscErrorCode NetPlaceOwnedParameters_Private(Net, PetscInt *);
PETSC_INTERN PetscErrorCode NetPlaceLocalParameters_Private(Net, PetscInt *);
PETSC_INTERN PetscErrorCode NetPlaceParseRanks_Private(Net, const char[], const char[], PetscInt *, PetscInt *);
PETSC_INTERN PetscErrorCode NetPlaceSetUpParameters_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceView_Private(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetPlaceTestMoves_Private(Net, PetscRandom, PetscReal *);
PETSC_INTERN PetscErrorCode NetPlaceGetSchedule_Private(Net, PetscInt *, const PetscInt **);
PETSC_INTERN PetscErrorCode NetPlaceSetStep_Private(Net, PetscInt);
PETSC_INTERN PetscBool     *NetPlaceSeeded_Private(Net, PetscInt);
PETSC_INTERN PetscBool      NetPlaceCrossing_Private(Net, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetPlaceValueEntries_Private(Net, PetscInt, PetscInt, PetscInt *, PetscInt *);
PETSC_INTERN PetscErrorCode NetPlaceForwardBegin_Private(Net);
PETSC_INTERN PetscBool      NetPlaceKeepsAll_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceGetForwardBackward_Private(Net, PetscInt *, const PetscInt **);
PETSC_INTERN PetscErrorCode NetPlaceOutputStep_Private(Net, PetscInt, PetscErrorCode (*)(Net, PetscInt, PetscInt, const PetscScalar[], PetscScalar[], void *), void *, Vec);
PETSC_INTERN PetscErrorCode NetPlaceForwardBefore_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetPlaceForwardAfter_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetPlaceForwardEnd_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceBackwardBegin_Private(Net, PetscBool, PetscBool);
PETSC_INTERN PetscErrorCode NetPlaceBackwardBefore_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetPlaceBackwardAfter_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetPlaceBackwardEnd_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceJVPBegin_Private(Net, PetscBool);
PETSC_INTERN PetscErrorCode NetPlaceJVPBefore_Private(Net, PetscInt, const PetscBool[]);
PETSC_INTERN PetscErrorCode NetPlaceJVPAfter_Private(Net, PetscInt, const PetscBool[]);
PETSC_INTERN PetscErrorCode NetPlaceJVPEnd_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceSOBegin_Private(Net);
PETSC_INTERN PetscErrorCode NetPlaceSOOutput_Private(Net, NetSlot);
PETSC_INTERN PetscErrorCode NetPlaceSOSendBack_Private(Net, PetscInt, NetSlot, PetscBool, PetscBool);
PETSC_INTERN PetscErrorCode NetPlaceSOWantInput_Private(Net, PetscBool);
PETSC_INTERN PetscErrorCode NetPlaceGetNodeArrays_Private(Net, PetscInt, PetscInt *, const PetscScalar **, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetPlaceRestoreNodeArrays_Private(Net, PetscInt, const PetscScalar **, const PetscScalar **);
PETSC_INTERN PetscErrorCode NetPlaceNodeComm_Private(Net, PetscInt, MPI_Comm *);
PETSC_INTERN PetscBool      NetPlaceWanted_Private(Net);
/* the plain executor on n rows of node k (the sequence executor runs it on the rank's tokens) */
PETSC_INTERN PetscErrorCode NetExecPlainForward_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], void *);
PETSC_INTERN PetscErrorCode NetExecPlainBackward_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *, void *const[], PetscScalar *, PetscInt);
PETSC_INTERN PetscErrorCode NetExecPlainJVP_Private(Net, PetscInt, PetscInt, NetElem, const PetscScalar *, const void *const[], const void *, const void *const[], const PetscScalar *, void *);
/* sequence parallelism (netsequence.c) */
PETSC_INTERN PetscErrorCode NetSequenceSetUpInput_Private(Net);
PETSC_INTERN PetscErrorCode NetSequenceSetUpNode_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetSequenceReset_Private(Net);
PETSC_INTERN PetscErrorCode NetSequenceCounts_Private(Net, PetscInt, PetscInt[]);
PETSC_INTERN PetscErrorCode NetSequenceInputShape_Private(Net, PetNetShape *);
PETSC_INTERN PetscErrorCode NetSequenceInputRowSize_Private(Net, PetscInt *);
PETSC_INTERN PetscInt       NetSequenceTokens_Private(Net);
PETSC_INTERN PetscErrorCode NetSequenceView_Private(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetSequenceTestMoves_Private(Net, PetscRandom, PetscReal *);
PETSC_INTERN PetscErrorCode NetSequenceSetUpStage_Private(Net, MPI_Comm, PetscInt, PetscInt);
PETSC_INTERN PetscErrorCode NetSequenceStageForward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetSequenceStageBackward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *, PetscBool);
PETSC_INTERN PetscErrorCode NetSequenceStageJVP_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscBool);
PETSC_INTERN PetscErrorCode NetSequenceStageSOBackward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *,
                                                               PetscScalar *, PetscBool);
PETSC_INTERN PetscErrorCode NetSequenceStageViewNode_Private(Net, PetscInt, PetscViewer);
PETSC_INTERN PetscErrorCode NetSequenceStageSetSampleOffset_Private(Net, PetscInt64);
PETSC_INTERN PetscErrorCode NetSetUpExecutors_Private(Net);
PETSC_INTERN PetscBool      NetSpatialStreamsBF16_Private(Net, PetscInt); /* netspatial.c */
/* the value store of the Net's precision */
static inline const NetStoreOps *NetStore(Net net)
{
  return net->precision == NET_PRECISION_DOUBLE ? &NetStoreDouble : &NetStoreLow;
}
/*
  A node that takes the stored bfloat16 values themselves at bfloat16, so that no whole array of a batch is widened:
  - a plain node whose kernels act on each sample alone and read nothing of a forward pass but its input and output (an
    activation: actonly, no parameters, one input, not fused): its executor widens and rounds them a chunk of samples
    at a time (netexec.c), the same bits as whole widened copies without them (4 float copies of a 16-channel
    activation of a 128^3 grid are 256 MB a rank);
  - a plain node whose kind has bfloat16 kernels that run here (NetNode.bf16, NetSetUpBackend_Private(): maxpool;
    conv2d and conv3d where the backend is onednn and the CPU has oneDNN's bfloat16 convolutions), a fused activation
    after it (fuseact) or before it (fusemask) included, unless NetSetBFloat16Kernels(net, PETSC_FALSE): they read and
    write the stored values themselves, the same bits as on float copies;
  - a spatial window node whose kind forgets (convolutions, average pooling; NetSpatialStreamsBF16_Private()): its
    halo exchange widens into its float box and it computes its output block a slab of planes at a time (netspatial.c)
*/
static inline PetscBool NetNodeStreamsBF16(Net net, PetscInt k)
{
  const NetNode *nd = &net->nodes[k];
  const Layer    l  = net->layers[k];

  if (net->precision != NET_PRECISION_BFLOAT16) return PETSC_FALSE;
  if (nd->exec == &NetExecSpatial) return NetSpatialStreamsBF16_Private(net, k);
  if (nd->exec != &NetExecPlain || l->nin != 1 || l->collective || nd->fusedinto >= 0 || nd->fusedback >= 0) return PETSC_FALSE;
  if (nd->bf16) return net->bf16kernels;
  return (PetscBool)(l->actonly && !l->nparams && nd->fuseact < 0 && nd->fusemask < 0);
}
/* the element type node k computes in (NET_ELEM_BF16: float, streamed from the stored bfloat16 values) */
static inline NetElem NetNodeElem(Net net, PetscInt k)
{
  if (NetStore(net)->compute != NET_ELEM_FLOAT || !net->nodes[k].exec->floatok) return NET_ELEM_DOUBLE;
  return NetNodeStreamsBF16(net, k) ? NET_ELEM_BF16 : NET_ELEM_FLOAT;
}
/* the bytes of an entry of element type t */
static inline size_t NetElemBytes(NetElem t)
{
  return t == NET_ELEM_DOUBLE ? sizeof(PetscScalar) : t == NET_ELEM_FLOAT ? sizeof(float) : sizeof(uint16_t);
}
PETSC_INTERN PetscErrorCode NetStoreGetInputs_Private(Net, PetscInt, NetSlot, NetElem, const void *[]);
PETSC_INTERN PetscErrorCode NetStoreRestoreInputs_Private(Net, PetscInt, NetSlot, NetElem, const void *[]);
PETSC_INTERN PetscErrorCode NetSpatialCheckKeepsGrid_Private(Net, const char[]);
PETSC_INTERN PetscErrorCode NetSetUpFusion_Private(Net);
PETSC_INTERN PetscErrorCode NetSetUpBackend_Private(Net);
PETSC_INTERN PetscErrorCode NetBackendView_Private(Net, PetscViewer);
PETSC_INTERN PetscErrorCode NetFuseWorkspace_Private(Net);
PETSC_INTERN PetscErrorCode NetFuseViewNode_Private(Net, PetscInt, PetscViewer);
/* the value that receives the cotangent of node k's input i in NetBackward(): the input itself, or, when node k applies
   the derivative of the activation that makes that input (fusemask), the activation's own input */
static inline PetscInt NetBackwardTarget(Net net, PetscInt k, PetscInt i)
{
  const NetNode *nd = &net->nodes[k];

  return (nd->fusemask >= 0 ? net->nodes[nd->fusemask].in[0] : nd->in[i]) + 1;
}
PETSC_INTERN PetscErrorCode NetLayerListNext_Private(char **, char **);
PETSC_INTERN PetscErrorCode NetListSpec_Private(Net, PetscInt, PetscInt, size_t, char[], size_t *);
PETSC_INTERN PetscErrorCode NetNodeSpec_Private(Net, PetscInt, size_t, char[]);
PETSC_INTERN PetscErrorCode NetSetFrozen_Private(Net, PetscBool);
PETSC_INTERN PetscErrorCode NetCheckMemory_Private(Net, PetscLogDouble, PetscInt, const char[]);
PETSC_INTERN PetscErrorCode NetSetSaveFileFromOptions_Private(Net, const char[]);
PETSC_INTERN PetscErrorCode NetSaveAtDestroy_Private(Net);

/* Model-parallel nodes (netmodel.c). x, y, dx, dy are sample-split local arrays of n samples like every other node's;
   th, dth this rank's nplocal parameters of the node (dth accumulates). Collective, in the same order on every rank. */
PETSC_INTERN PetscErrorCode NetModelSetUpNode_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetParsePartition_Private(Net, const char[], const char[], PetscInt[2]);
PETSC_INTERN PetscErrorCode NetTakePartition_Private(Net, const char[], char[], PetscInt[2]);
PETSC_INTERN PetscErrorCode NetModelSetFromOptions_Private(Net);
PETSC_INTERN PetscErrorCode NetModelDestroyNode_Private(Net, PetscInt);
PETSC_INTERN PetscErrorCode NetModelForward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelBackward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelJVP_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelSOBackward_Private(Net, PetscInt, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *,
                                                       PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelViewNode_Private(Net, PetscInt, PetscViewer);
PETSC_INTERN PetscErrorCode NetModelTestOperators_Private(Net, PetscRandom, PetscReal *);
PETSC_INTERN PetscErrorCode NetModelNewRows_Private(Net, PetscInt, PetscBool);
PETSC_INTERN PetscErrorCode NetModelSetSampleOffset_Private(Net, PetscInt, PetscInt64);
PETSC_INTERN PetscErrorCode NetModelViewStageBlock_Private(Net, PetscInt, PetscViewer);
PETSC_INTERN PetscErrorCode NetModelValueEntries_Private(Net);
PETSC_INTERN PetscErrorCode NetModelBlockForward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelBlockBackward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelBlockJVP_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelBlockSOBackward_Private(Net, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *,
                                                            PetscScalar *);
PETSC_INTERN PetscErrorCode NetModelBlockView_Private(Net, PetscInt, PetscViewer);
