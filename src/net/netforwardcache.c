/*
  The forward cache (NetSetForwardCache()): a Net keeps the activations of its last few forward passes, and a
  NetForward() at an input it has seen (the same bits on this rank) with the same parameters (theta's state) takes them
  back instead of computing them.

  What it is for: an adjoint that revisits the states of a forward solve. TSAdjointStep_RK asks for the right-hand
  side's Jacobian at every stage state of every step, states where the forward solve already evaluated the right-hand
  side: a neural ODE's adjoint would run every forward pass twice. With the cache the second pass is a lookup.

  Exactness: a hit hands back what the pass computed, and a pass recomputed from the same input bits and parameters
  computes the same bits (the kernels are deterministic, at any thread count), so results do not change at all.

  No copies: the cache owns sets of activations 1..L as the value store holds them (double Vecs, or float/bfloat16
  buffers: netprecision.c). A miss moves the Net's current activations into a slot (the oldest), taking that slot's
  set as the workspace the pass writes; a hit exchanges the Net's current set with the slot's. Each entry keeps a copy of its input's local entries (compared in full; a hash sorts them out first) and
  theta's state.

  Which Nets: every layer must keep its linearization in its input and output arrays alone (Layer actonly: dense and
  the elementwise kinds; not dropout's masks or batchnorm's statistics), and no node may communicate in forward
  (replicated parameters, not sharded or model-parallel nodes, not grid mode or graph layers), so that each rank
  decides hit or miss alone.
*/
#include <petnet/private/netimpl.h>

typedef struct {
  PetscBool        valid;
  uint64_t         hash;
  PetscObjectState theta; /* theta's state at that pass */
  PetscScalar     *input; /* the input's local entries */
  void           **vals;  /* the values 1..nlayers of that pass, as the value store holds them (netprecision.c); NULL
                             until the slot is first filled */
} NetForwardCacheEntry;

typedef struct {
  PetscInt              nslots, next; /* next: the slot a miss fills (round robin: the oldest) */
  PetscInt              ninput;       /* local input entries */
  PetscInt              batchgen;     /* the workspace the slots were built for */
  PetscObjectId         thetaid;      /* ... and the parameter Vec (its states are compared) */
  NetForwardCacheEntry *slot;
  NetForwardCacheEntry  cur;          /* the key of the Net's own act[] (cur.act unused) */
  PetscInt              hits, misses; /* lookups since NetSetForwardCache() */
  uint64_t              lasthash;     /* of the last lookup's input */
} NetForwardCache;

/* a hash of the bits of n scalars, word by word (a multiplicative mix, not FNV's byte loop: it runs on every pass) */
static uint64_t NetForwardCacheHash(PetscInt n, const PetscScalar *x)
{
  uint64_t h = 1469598103934665603ULL;

  for (PetscInt i = 0; i < n; i++) {
    uint64_t w;

    memcpy(&w, &x[i], sizeof(w));
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return h;
}

static PetscErrorCode NetForwardCacheFreeSlots(Net net, NetForwardCache *fc)
{
  PetscFunctionBegin;
  for (PetscInt s = 0; s < fc->nslots && fc->slot; s++) {
    PetscCall(NetStore(net)->freevalues(net, &fc->slot[s].vals));
    PetscCall(PetscFree(fc->slot[s].input));
  }
  PetscCall(PetscFree(fc->slot));
  PetscCall(PetscFree(fc->cur.input));
  fc->cur.valid = PETSC_FALSE;
  fc->ninput    = 0;
  fc->batchgen  = -1;
  PetscFunctionReturn(0);
}

/* Frees the slots (with the workspace: NetResetWorkspace_Private()); the size and the counts stay */
PetscErrorCode NetForwardCacheReset_Private(Net net)
{
  NetForwardCache *fc = (NetForwardCache *)net->fcache;

  PetscFunctionBegin;
  if (fc) PetscCall(NetForwardCacheFreeSlots(net, fc));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetForwardCacheDestroy(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetForwardCacheReset_Private(net));
  PetscCall(PetscFree(net->fcache));
  PetscFunctionReturn(0);
}

/* The Net can use the cache: see the opening comment */
static PetscErrorCode NetForwardCacheCheck(Net net)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);

  PetscFunctionBegin;
  PetscCheck(net->parallel == NET_PARALLEL_REPLICATED && !net->gathers && !net->grid, comm, PETSC_ERR_SUP,
             "The forward cache (-net_forward_cache) needs replicated parameters and batch mode (each rank decides alone whether it has seen an input): drop -net_forward_cache, or -net_parallel and the grid");
  for (PetscInt k = 0; k < net->nlayers; k++) {
    Layer layer = net->layers[k];

    PetscCheck(layer->actonly && !layer->collective && !net->nodes[k].mp && !net->nodes[k].sp, comm, PETSC_ERR_SUP,
               "The forward cache (-net_forward_cache) hands back earlier forward passes, but node %s (%s) keeps state of its own or communicates in forward: drop -net_forward_cache (it serves Nets of dense and elementwise layers)",
               net->nodes[k].name, ((PetscObject)layer)->type_name);
  }
  PetscFunctionReturn(0);
}

/*
  NetForward() at X, after the workspace is set up for X and theta's state is recorded (theta_fwd_state): on a hit
  act[1..L] now hold the pass at X; on a miss the Net's current activations went into a slot and act[1..L] are free for
  the pass, after which NetForwardCacheRecord_Private() records its key.
*/
PetscErrorCode NetForwardCacheLookup_Private(Net net, Vec X, PetscBool *hit)
{
  NetForwardCache   *fc = (NetForwardCache *)net->fcache;
  const PetscScalar *x;
  PetscInt           n;
  uint64_t           hash;
  PetscObjectId      thetaid;

  PetscFunctionBegin;
  *hit = PETSC_FALSE;
  PetscCall(VecGetLocalSize(X, &n));
  PetscCall(PetscObjectGetId((PetscObject)net->theta, &thetaid));
  if (fc->batchgen != net->batchgen || fc->ninput != n || !fc->slot || fc->thetaid != thetaid) {
    PetscCall(NetForwardCacheFreeSlots(net, fc));
    PetscCall(NetForwardCacheCheck(net));
    PetscCall(PetscCalloc1(fc->nslots, &fc->slot));
    for (PetscInt s = 0; s < fc->nslots; s++) PetscCall(PetscMalloc1(n, &fc->slot[s].input));
    PetscCall(PetscMalloc1(n, &fc->cur.input));
    fc->ninput   = n;
    fc->batchgen = net->batchgen;
    fc->thetaid  = thetaid;
    fc->next     = 0;
  }
  PetscCall(VecGetArrayRead(X, &x));
  hash         = NetForwardCacheHash(n, x);
  fc->lasthash = hash;
  if (fc->cur.valid && fc->cur.hash == hash && fc->cur.theta == net->theta_fwd_state && fc->thetaid == thetaid) PetscCall(PetscMemcmp(fc->cur.input, x, n * sizeof(PetscScalar), hit));
  for (PetscInt i = 0; i < fc->nslots && !*hit; i++) { /* newest first: an adjoint walks the passes backwards */
    const PetscInt        s = (fc->next - 1 - i + 2 * fc->nslots) % fc->nslots;
    NetForwardCacheEntry *e = &fc->slot[s];
    PetscBool             same;

    if (!e->valid || e->hash != hash || e->theta != net->theta_fwd_state || fc->thetaid != thetaid) continue;
    PetscCall(PetscMemcmp(e->input, x, n * sizeof(PetscScalar), &same));
    if (!same) continue;
    /* exchange the Net's activations (key cur) with the slot's */
    PetscCall(NetStore(net)->swapvalues(net, e->vals));
    {
      NetForwardCacheEntry key = fc->cur;

      fc->cur.valid = PETSC_TRUE;
      fc->cur.hash  = e->hash;
      fc->cur.theta = e->theta;
      fc->cur.input = e->input;
      e->valid      = key.valid;
      e->hash       = key.hash;
      e->theta      = key.theta;
      e->input      = key.input;
    }
    *hit = PETSC_TRUE;
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  if (*hit) {
    fc->hits++;
    PetscFunctionReturn(0);
  }
  fc->misses++;
  if (fc->cur.valid) { /* keep the current pass: into the oldest slot, whose Vecs the new pass overwrites */
    NetForwardCacheEntry *e = &fc->slot[fc->next];
    PetscScalar          *in;

    if (!e->vals) PetscCall(NetStore(net)->newvalues(net, &e->vals));
    PetscCall(NetStore(net)->swapvalues(net, e->vals));
    in            = e->input;
    e->valid      = PETSC_TRUE;
    e->hash       = fc->cur.hash;
    e->theta      = fc->cur.theta;
    e->input      = fc->cur.input;
    fc->cur.input = in;
    fc->cur.valid = PETSC_FALSE;
    fc->next      = (fc->next + 1) % fc->nslots;
  }
  PetscFunctionReturn(0);
}

/* After a pass computed at X (a miss): act[1..L] are the pass at X */
PetscErrorCode NetForwardCacheRecord_Private(Net net, Vec X)
{
  NetForwardCache   *fc = (NetForwardCache *)net->fcache;
  const PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(PetscArraycpy(fc->cur.input, x, fc->ninput));
  fc->cur.hash = fc->lasthash; /* the lookup's, of the same entries */
  PetscCall(VecRestoreArrayRead(X, &x));
  fc->cur.theta = net->theta_fwd_state;
  fc->cur.valid = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  NetSetForwardCache - keep the activations of the last few forward passes, so that NetForward() at an input seen
  before (the same values) with the same parameters hands them back instead of computing them again.

  Logically collective

  Input Parameters:
+ net    - the Net
- nslots - the earlier passes kept, besides the current one (0: no cache, the default)

  Options Database Key:
. -net_forward_cache <nslots> - the same from NetSetFromOptions()

  Notes:
  For adjoints that revisit the states of a forward solve: TSAdjoint asks for the right-hand side's Jacobian at every
  stage state the forward solve evaluated the right-hand side at, so a neural ODE's adjoint (NetTSSetRHS(), the
  spiral example) would run each forward pass twice; give nslots at least the right-hand side evaluations of one
  solve (stages times steps). A hit returns what the pass computed, and a pass is deterministic, so results are the
  same bits with or without the cache. Memory: nslots copies of the activations of a batch and of its input.

  Each rank compares its own input entries, so the Net must not communicate in forward: every layer must keep its
  linearization point in its input and output alone (dense and the elementwise kinds; not dropout, batchnorm, graph
  layers, convolutions), parameters replicated, batch mode. The first forward pass refuses other Nets.

  Level: advanced

.seealso: `NetForward()`, `NetGetForwardCacheStats()`, `NetTSSetRHS()`
@*/
PetscErrorCode NetSetForwardCache(Net net, PetscInt nslots)
{
  NetForwardCache *fc;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(net, nslots, 2);
  PetscCheck(nslots >= 0 && nslots <= 1000000, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "-net_forward_cache must be in [0, 1000000] (earlier forward passes kept), not %" PetscInt_FMT, nslots);
  if (nslots == net->fcachesize) PetscFunctionReturn(0);
  PetscCall(NetForwardCacheDestroy(net));
  net->fcachesize = nslots;
  if (!nslots) PetscFunctionReturn(0);
  PetscCall(PetscNew(&fc));
  fc->nslots   = nslots;
  fc->batchgen = -1;
  net->fcache  = fc;
  PetscFunctionReturn(0);
}

/*@
  NetGetForwardCacheSize - the earlier forward passes a Net keeps (NetSetForwardCache())

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. nslots - the passes kept besides the current one (0: no cache)

  Level: advanced

.seealso: `NetSetForwardCache()`, `NetGetForwardCacheStats()`
@*/
PetscErrorCode NetGetForwardCacheSize(Net net, PetscInt *nslots)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidIntPointer(nslots, 2);
  *nslots = net->fcachesize;
  PetscFunctionReturn(0);
}

/*@
  NetGetForwardCacheStats - how many forward passes the cache (NetSetForwardCache()) handed back and how many it did not

  Not collective

  Input Parameter:
. net - the Net

  Output Parameters:
+ hits   - passes handed back on this rank since NetSetForwardCache(), or NULL
- misses - passes computed, or NULL

  Level: advanced

.seealso: `NetSetForwardCache()`
@*/
PetscErrorCode NetGetForwardCacheStats(Net net, PetscInt *hits, PetscInt *misses)
{
  NetForwardCache *fc;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  fc = (NetForwardCache *)net->fcache;
  if (hits) *hits = fc ? fc->hits : 0;
  if (misses) *misses = fc ? fc->misses : 0;
  PetscFunctionReturn(0);
}

/* NetDestroy() */
PetscErrorCode NetForwardCacheDestroy_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetForwardCacheDestroy(net));
  net->fcachesize = 0;
  PetscFunctionReturn(0);
}
