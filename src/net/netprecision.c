/*
  Value stores (NetStoreOps, include/petnet/private/netimpl.h): where the values of a batch live, by precision
  (NetSetPrecision(), -net_precision double|single|bfloat16). The walk of netforward.c asks the store for each node's
  arrays in the element type the node computes in, and gives them back.

    double    act[v], dact[v], dsum[v], bar[v], bard[v]: Vecs distributed like the batch; act[0] is the caller's input
              (referenced), and every array is the Vec's own
    low       lstore[slot][v]: vlocal[v] * size_v entries of 4 bytes (single) or 2 (bfloat16), v = 0..L. A plain node
              computes in float: in single on the stored arrays themselves, in bfloat16 on float copies widened before
              and rounded (to nearest, ties to even) after, so only the stored values carry bfloat16's 8-bit
              significand; an activation gets the bfloat16 buffers themselves and widens and rounds them a chunk at a
              time (NetNodeStreamsBF16()). Spatial nodes compute in float too (their halo exchange included); a window
              node (convolution, average pooling) at bfloat16 gets the bfloat16 buffers as well, its halo exchange
              widening into its float box and its kernels run a slab of planes at a time (netspatial.c). A node
              whose executor computes in double (model-parallel; the second-order adjoint, the per-node Jacobians and
              K-FAC's statistics read double) gets double copies, widened exactly and rounded back through float. The copies live in a scratch the walk empties before each node
              (nextnode): it holds one node's arrays at most.
    double    always: the parameters (each node reads its double block, NetNodeGetParameters_Private()), the gradient (the
              kernels accumulate into the double block), the loss and optimizer, and the public Vecs: X is rounded into
              the store, the output widened into act[L] (so Y, dY, dX, dtheta are double as in double precision)

  bfloat16 keeps float's 8-bit exponent, so gradients do not underflow where float's do not: no loss scaling is needed
  (it is for IEEE half precision, whose exponent has 5 bits).
*/
#include <petnet/private/netimpl.h>

const char *const NetPrecisions[] = {"double", "single", "bfloat16", "NetPrecision", "NET_PRECISION_", NULL};

/* PetNetBF16ToFloat(), PetNetFloatToBF16(): bf16impl.h */

/* BODY on the blocks [i0, i1) of N entries, on PetNet's threads when there are several (elementwise: the same bits at
   any thread count) */
#define NET_LOW_BLOCK           16384
#define NET_LOW_BLOCKS(N, BODY) PETNET_THREAD_BLOCKS(N, NET_LOW_BLOCK, BODY)

/* ---------------------------------------------------------------------------------------------------------------
   The double store: Vecs */

/* the Vecs of slot s; the second-order adjoint's are made on their first use */
static PetscErrorCode NetStoreDoubleSlot(Net net, NetSlot s, Vec **vecs)
{
  PetscFunctionBegin;
  if ((s == NET_SLOT_BAR || s == NET_SLOT_BARD) && !net->bar) {
    PetscCall(PetscCalloc1(net->nlayers + 1, &net->bar));
    PetscCall(PetscCalloc1(net->nlayers + 1, &net->bard));
    for (PetscInt w = 0; w <= net->nlayers; w++) {
      PetscCall(VecDuplicate(net->act[w], &net->bar[w]));
      PetscCall(VecDuplicate(net->act[w], &net->bard[w]));
    }
  }
  *vecs = s == NET_SLOT_VALUE ? net->act : s == NET_SLOT_TANGENT ? net->dact : s == NET_SLOT_SUM ? net->dsum : s == NET_SLOT_BAR ? net->bar : net->bard;
  PetscFunctionReturn(0);
}

/* the public Vecs of the batch, in either store: act[0] (the input) and act[L] (the output), and in double all */
static PetscErrorCode NetStoreCreateVecs_Private(Net net, PetscBool all)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)net);
  PetscInt insize;

  PetscFunctionBegin;
  PetscCall(NetSequenceInputRowSize_Private(net, &insize)); /* a row of the input: a sample, or a token in sequence mode */
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->act));
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->dact));
  PetscCall(PetscCalloc1(net->nlayers + 1, &net->dsum));
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    PetscInt size  = v ? net->layers[v - 1]->outsize : insize;
    PetscInt nuses = v ? net->nodes[v - 1].nuses : net->ninputuses;

    if (!all && v && v < net->nlayers) continue;
    PetscCall(VecCreateMPI(comm, NetValueEntries(net, v, size), PETSC_DETERMINE, &net->act[v]));
    if (!all) continue;
    PetscCall(VecDuplicate(net->act[v], &net->dact[v]));
    if (nuses > 1) PetscCall(VecDuplicate(net->act[v], &net->dsum[v]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreSetUp_Double(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetStoreCreateVecs_Private(net, PETSC_TRUE));
  PetscCall(NetFuseWorkspace_Private(net)); /* an activation fused into its producer shares the producer's value */
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreReset_Double(Net net)
{
  PetscFunctionBegin;
  if (net->act) {
    for (PetscInt v = 0; v <= net->nlayers; v++) {
      PetscCall(VecDestroy(&net->act[v]));
      PetscCall(VecDestroy(&net->dact[v]));
      PetscCall(VecDestroy(&net->dsum[v]));
      if (net->bar) PetscCall(VecDestroy(&net->bar[v]));
      if (net->bard) PetscCall(VecDestroy(&net->bard[v]));
    }
  }
  PetscCall(PetscFree(net->bar));
  PetscCall(PetscFree(net->bard));
  PetscCall(PetscFree(net->act));
  PetscCall(PetscFree(net->dact));
  PetscCall(PetscFree(net->dsum));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreGet_Double(Net net, NetSlot s, PetscInt v, NetAccess mode, NetElem t, void **a)
{
  Vec *vecs = NULL;

  PetscFunctionBegin;
  PetscCheck(t == NET_ELEM_DOUBLE, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The double store has no float arrays");
  PetscCall(NetStoreDoubleSlot(net, s, &vecs));
  if (mode == NET_READ)
    PetscCall(VecGetArrayRead(vecs[v], (const PetscScalar **)a));
  else if (mode == NET_WRITE)
    PetscCall(VecGetArrayWrite(vecs[v], (PetscScalar **)a));
  else
    PetscCall(VecGetArray(vecs[v], (PetscScalar **)a));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreRestore_Double(Net net, NetSlot s, PetscInt v, NetAccess mode, NetElem t, void **a)
{
  Vec *vecs = NULL;

  PetscFunctionBegin;
  PetscCall(NetStoreDoubleSlot(net, s, &vecs));
  if (mode == NET_READ)
    PetscCall(VecRestoreArrayRead(vecs[v], (const PetscScalar **)a));
  else if (mode == NET_WRITE)
    PetscCall(VecRestoreArrayWrite(vecs[v], (PetscScalar **)a));
  else
    PetscCall(VecRestoreArray(vecs[v], (PetscScalar **)a));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreFromVec_Double(Net net, Vec x, NetSlot s, PetscInt v)
{
  Vec *vecs = NULL;

  PetscFunctionBegin;
  PetscCall(NetStoreDoubleSlot(net, s, &vecs));
  if (x != vecs[v]) PetscCall(VecCopy(x, vecs[v]));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreToVec_Double(Net net, NetSlot s, PetscInt v, Vec x)
{
  Vec *vecs = NULL;

  PetscFunctionBegin;
  PetscCall(NetStoreDoubleSlot(net, s, &vecs));
  if (x != vecs[v]) PetscCall(VecCopy(vecs[v], x));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreAddSum_Double(Net net, NetSlot s, PetscInt v)
{
  Vec *vecs = NULL;

  PetscFunctionBegin;
  PetscCall(NetStoreDoubleSlot(net, s, &vecs));
  if (net->pl) { /* pipeline stages: the rows of the micro-batch at hand (netplace.c) */
    PetscScalar       *d;
    const PetscScalar *a;
    PetscInt           e0, ne;

    PetscCall(NetPlaceValueEntries_Private(net, v, v ? net->layers[v - 1]->outsize : 0, &e0, &ne));
    PetscCall(VecGetArray(vecs[v], &d));
    PetscCall(VecGetArrayRead(net->dsum[v], &a));
    for (PetscInt i = e0; i < e0 + ne; i++) d[i] += a[i];
    PetscCall(VecRestoreArrayRead(net->dsum[v], &a));
    PetscCall(VecRestoreArray(vecs[v], &d));
    PetscFunctionReturn(0);
  }
  PetscCall(VecAXPY(vecs[v], 1.0, net->dsum[v]));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreNextNode_Double(Net net)
{
  return 0;
}

/* a set of value Vecs v = 1..L like act[] (an activation fused into its producer shares the producer's, as in act[]) */
static PetscErrorCode NetStoreNewValues_Double(Net net, void ***set)
{
  Vec *vecs;

  PetscFunctionBegin;
  PetscCall(PetscCalloc1(net->nlayers + 1, &vecs));
  for (PetscInt v = 1; v <= net->nlayers; v++) {
    const PetscInt p = net->nodes[v - 1].fusedinto;

    if (p >= 0) {
      PetscCall(PetscObjectReference((PetscObject)vecs[p + 1]));
      vecs[v] = vecs[p + 1];
    } else
      PetscCall(VecDuplicate(net->act[v], &vecs[v]));
  }
  *set = (void **)vecs;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreSwapValues_Double(Net net, void **set)
{
  Vec *vecs = (Vec *)set;

  PetscFunctionBegin;
  for (PetscInt v = 1; v <= net->nlayers; v++) {
    Vec tmp     = net->act[v];
    net->act[v] = vecs[v];
    vecs[v]     = tmp;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreFreeValues_Double(Net net, void ***set)
{
  Vec *vecs = (Vec *)*set;

  PetscFunctionBegin;
  if (vecs)
    for (PetscInt v = 1; v <= net->nlayers; v++) PetscCall(VecDestroy(&vecs[v]));
  PetscCall(PetscFree(vecs));
  *set = NULL;
  PetscFunctionReturn(0);
}

const NetStoreOps NetStoreDouble = {"double",
                                    NET_ELEM_DOUBLE,
                                    NetStoreSetUp_Double,
                                    NetStoreReset_Double,
                                    NetStoreGet_Double,
                                    NetStoreRestore_Double,
                                    NetStoreFromVec_Double,
                                    NetStoreToVec_Double,
                                    NetStoreAddSum_Double,
                                    NetStoreNextNode_Double,
                                    NetStoreNewValues_Double,
                                    NetStoreSwapValues_Double,
                                    NetStoreFreeValues_Double};

/* ---------------------------------------------------------------------------------------------------------------
   The low-precision store: float or bfloat16 buffers */

/* entries of value v on this rank */
static PetscInt NetLowCount(Net net, PetscInt v)
{
  PetscInt size;

  if (v)
    size = net->layers[v - 1]->outsize;
  else
    PetscCallAbort(PETSC_COMM_SELF, NetSequenceInputRowSize_Private(net, &size));
  return NetValueEntries(net, v, size);
}

static PetscErrorCode NetStoreSetUp_Low(Net net)
{
  PetscInt es;

  PetscFunctionBegin;
  PetscCall(NetPrecisionBytes_Private(net, &es));
  PetscCall(NetStoreCreateVecs_Private(net, PETSC_FALSE)); /* the input's and the output's */
  for (PetscInt s = NET_SLOT_VALUE; s <= NET_SLOT_SUM; s++) PetscCall(PetscCalloc1(net->nlayers + 1, &net->lstore[s]));
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    const size_t bytes = (size_t)es * (size_t)NetLowCount(net, v);

    if (v && net->nodes[v - 1].fusedinto >= 0)
      net->lstore[NET_SLOT_VALUE][v] = net->lstore[NET_SLOT_VALUE][net->nodes[v - 1].fusedinto + 1]; /* in place (netfuse.c) */
    else
      PetscCall(PetscMalloc(bytes, &net->lstore[NET_SLOT_VALUE][v]));
    PetscCall(PetscMalloc(bytes, &net->lstore[NET_SLOT_TANGENT][v]));
    if ((v ? net->nodes[v - 1].nuses : net->ninputuses) > 1) PetscCall(PetscMalloc(bytes, &net->lstore[NET_SLOT_SUM][v]));
  }
  net->lwidesize = net->lwidetop = net->lwidepeak = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreNextNode_Low(Net net)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nwidemore; i++) PetscCall(PetscFree(net->lwidemore[i]));
  net->nwidemore = 0;
  if (net->lwidepeak > net->lwidesize) { /* one scratch for what the largest node asks */
    PetscCall(PetscFree(net->lwide));
    PetscCall(PetscMalloc(net->lwidepeak, &net->lwide));
    net->lwidesize = net->lwidepeak;
  }
  net->lwidetop = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreReset_Low(Net net)
{
  PetscFunctionBegin;
  if (net->lstore[NET_SLOT_VALUE]) PetscCall(NetStoreReset_Double(net)); /* the input's and output's Vecs */
  for (PetscInt s = 0; s < NET_NUM_SLOTS; s++) {
    if (!net->lstore[s]) continue;
    for (PetscInt v = 0; v <= net->nlayers; v++) {
      if (s == NET_SLOT_VALUE && v && net->nodes[v - 1].fusedinto >= 0)
        net->lstore[s][v] = NULL; /* its producer's */
      else
        PetscCall(PetscFree(net->lstore[s][v]));
    }
    PetscCall(PetscFree(net->lstore[s]));
  }
  PetscCall(NetStoreNextNode_Low(net));
  PetscCall(PetscFree(net->lwide));
  PetscCall(PetscFree(net->lwidemore));
  net->lwidesize = net->lwidetop = net->lwidepeak = 0;
  net->maxwidemore                                = 0;
  PetscFunctionReturn(0);
}

/* bytes from the node's scratch, 64-byte aligned; past its end a separate array, freed at the next node */
static PetscErrorCode NetLowScratch(Net net, size_t bytes, void **a)
{
  const size_t need = (bytes + 63) & ~(size_t)63;

  PetscFunctionBegin;
  net->lwidepeak = PetscMax(net->lwidepeak, net->lwidetop + need);
  if (net->lwidetop + need <= net->lwidesize) {
    *a = net->lwide + net->lwidetop;
    net->lwidetop += need;
    PetscFunctionReturn(0);
  }
  net->lwidetop += need; /* counted, so that the scratch grows to it at the next node */
  if (net->nwidemore == net->maxwidemore) {
    void **more;

    PetscCall(PetscMalloc1(2 * net->maxwidemore + 8, &more));
    if (net->nwidemore) PetscCall(PetscArraycpy(more, net->lwidemore, net->nwidemore));
    PetscCall(PetscFree(net->lwidemore));
    net->lwidemore   = more;
    net->maxwidemore = 2 * net->maxwidemore + 8;
  }
  PetscCall(PetscMalloc(bytes, &net->lwidemore[net->nwidemore]));
  *a = net->lwidemore[net->nwidemore++];
  PetscFunctionReturn(0);
}

/* the stored buffer of slot s of v (the second-order adjoint's allocated on first use) */
static PetscErrorCode NetLowBuffer(Net net, NetSlot s, PetscInt v, void **b)
{
  PetscFunctionBegin;
  if (!net->lstore[s]) PetscCall(PetscCalloc1(net->nlayers + 1, &net->lstore[s]));
  if (!net->lstore[s][v]) PetscCall(PetscMalloc((size_t)(net->precision == NET_PRECISION_SINGLE ? 4 : 2) * (size_t)NetLowCount(net, v), &net->lstore[s][v]));
  *b = net->lstore[s][v];
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreGet_Low(Net net, NetSlot s, PetscInt v, NetAccess mode, NetElem t, void **a)
{
  const PetscInt N = NetLowCount(net, v);
  void          *b = NULL;

  PetscFunctionBegin;
  PetscCall(NetLowBuffer(net, s, v, &b));
  if ((net->precision == NET_PRECISION_SINGLE && t == NET_ELEM_FLOAT) || t == NET_ELEM_BF16) {
    PetscCheck(t != NET_ELEM_BF16 || net->precision == NET_PRECISION_BFLOAT16, PETSC_COMM_SELF, PETSC_ERR_PLIB, "bfloat16 arrays asked of a store in single precision");
    *a = b; /* the store's own (a node streaming bfloat16 widens and rounds it itself) */
    PetscFunctionReturn(0);
  }
  PetscCall(NetLowScratch(net, (size_t)N * (t == NET_ELEM_FLOAT ? sizeof(float) : sizeof(PetscScalar)), a));
  if (!(mode & NET_READ)) PetscFunctionReturn(0);
  if (t == NET_ELEM_FLOAT) { /* bfloat16 -> float */
    const uint16_t *src = (const uint16_t *)b;
    float          *dst = (float *)*a;

    PetNetBF16Widen(N, src, dst);
  } else if (net->precision == NET_PRECISION_SINGLE) { /* float -> double */
    const float *src = (const float *)b;
    PetscScalar *dst = (PetscScalar *)*a;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dst[i] = src[i]);
  } else { /* bfloat16 -> double */
    const uint16_t *src = (const uint16_t *)b;
    PetscScalar    *dst = (PetscScalar *)*a;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dst[i] = PetNetBF16ToFloat(src[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreRestore_Low(Net net, NetSlot s, PetscInt v, NetAccess mode, NetElem t, void **a)
{
  PetscInt N = NetLowCount(net, v), e0 = 0;
  void    *b = net->lstore[s][v];

  PetscFunctionBegin;
  if (net->pl && *a != b && (mode & NET_WRITE)) { /* placed (netplace.c): a step writes the rows of its micro-batch only, the copy's others are not the values' */
    PetscCall(NetPlaceValueEntries_Private(net, v, v ? net->layers[v - 1]->outsize : 0, &e0, &N));
    b  = (char *)b + (size_t)e0 * (net->precision == NET_PRECISION_SINGLE ? 4 : 2);
    *a = (char *)*a + (size_t)e0 * (t == NET_ELEM_FLOAT ? sizeof(float) : sizeof(PetscScalar));
  }
  if (*a != b && (mode & NET_WRITE)) { /* round the copy back: double through float, as a float kernel's output */
    if (t == NET_ELEM_FLOAT) {
      const float *src = (const float *)*a;
      uint16_t    *dst = (uint16_t *)b;

      PetNetBF16Round(N, src, dst);
    } else if (net->precision == NET_PRECISION_SINGLE) {
      const PetscScalar *src = (const PetscScalar *)*a;
      float             *dst = (float *)b;

      NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dst[i] = (float)src[i]);
    } else {
      const PetscScalar *src = (const PetscScalar *)*a;
      uint16_t          *dst = (uint16_t *)b;

      NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) dst[i] = PetNetFloatToBF16((float)src[i]));
    }
  }
  *a = NULL;
  PetscFunctionReturn(0);
}

/* slot s of v = x (rounded) */
static PetscErrorCode NetStoreFromVec_Low(Net net, Vec x, NetSlot s, PetscInt v)
{
  const PetscScalar *a;
  PetscInt           N;
  void              *buf = NULL;

  PetscFunctionBegin;
  PetscCall(NetLowBuffer(net, s, v, &buf));
  PetscCall(VecGetLocalSize(x, &N));
  PetscCall(VecGetArrayRead(x, &a));
  if (net->precision == NET_PRECISION_SINGLE) {
    float *f = (float *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) f[i] = (float)a[i]);
  } else {
    uint16_t *b = (uint16_t *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) b[i] = PetNetFloatToBF16((float)a[i]));
  }
  PetscCall(VecRestoreArrayRead(x, &a));
  PetscFunctionReturn(0);
}

/* x = slot s of v (widened) */
static PetscErrorCode NetStoreToVec_Low(Net net, NetSlot s, PetscInt v, Vec x)
{
  PetscScalar *a;
  PetscInt     N;
  const void  *buf = net->lstore[s][v];

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(x, &N));
  PetscCall(VecGetArrayWrite(x, &a));
  if (net->precision == NET_PRECISION_SINGLE) {
    const float *f = (const float *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) a[i] = f[i]);
  } else {
    const uint16_t *b = (const uint16_t *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) a[i] = PetNetBF16ToFloat(b[i]));
  }
  PetscCall(VecRestoreArrayWrite(x, &a));
  PetscFunctionReturn(0);
}

/* slot s of v += its fan-out sum (a value's cotangent and the contribution of one more of its consumers) */
static PetscErrorCode NetStoreAddSum_Low(Net net, NetSlot s, PetscInt v)
{
  PetscInt N = NetLowCount(net, v), e0 = 0;

  PetscFunctionBegin;
  if (net->pl) PetscCall(NetPlaceValueEntries_Private(net, v, v ? net->layers[v - 1]->outsize : 0, &e0, &N)); /* the micro-batch's rows (netplace.c) */
  if (net->precision == NET_PRECISION_SINGLE) {
    float       *d = (float *)net->lstore[s][v] + e0;
    const float *a = (const float *)net->lstore[NET_SLOT_SUM][v] + e0;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) d[i] += a[i]);
  } else {
    uint16_t       *d = (uint16_t *)net->lstore[s][v] + e0;
    const uint16_t *a = (const uint16_t *)net->lstore[NET_SLOT_SUM][v] + e0;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) d[i] = PetNetFloatToBF16(PetNetBF16ToFloat(d[i]) + PetNetBF16ToFloat(a[i])));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreNewValues_Low(Net net, void ***set)
{
  PetscInt es;

  PetscFunctionBegin;
  PetscCall(NetPrecisionBytes_Private(net, &es));
  PetscCall(PetscCalloc1(net->nlayers + 1, set));
  for (PetscInt v = 1; v <= net->nlayers; v++) {
    const PetscInt p = net->nodes[v - 1].fusedinto;

    if (p >= 0)
      (*set)[v] = (*set)[p + 1];
    else
      PetscCall(PetscMalloc((size_t)es * (size_t)NetLowCount(net, v), &(*set)[v]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreSwapValues_Low(Net net, void **set)
{
  PetscFunctionBegin;
  for (PetscInt v = 1; v <= net->nlayers; v++) {
    void *tmp                      = net->lstore[NET_SLOT_VALUE][v];
    net->lstore[NET_SLOT_VALUE][v] = set[v];
    set[v]                         = tmp;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetStoreFreeValues_Low(Net net, void ***set)
{
  PetscFunctionBegin;
  if (*set)
    for (PetscInt v = 1; v <= net->nlayers; v++)
      if (net->nodes[v - 1].fusedinto < 0) PetscCall(PetscFree((*set)[v]));
  PetscCall(PetscFree(*set));
  PetscFunctionReturn(0);
}

const NetStoreOps NetStoreLow = {"low",
                                 NET_ELEM_FLOAT,
                                 NetStoreSetUp_Low,
                                 NetStoreReset_Low,
                                 NetStoreGet_Low,
                                 NetStoreRestore_Low,
                                 NetStoreFromVec_Low,
                                 NetStoreToVec_Low,
                                 NetStoreAddSum_Low,
                                 NetStoreNextNode_Low,
                                 NetStoreNewValues_Low,
                                 NetStoreSwapValues_Low,
                                 NetStoreFreeValues_Low};

/* the bytes of one stored entry at the Net's precision */
PetscErrorCode NetPrecisionBytes_Private(Net net, PetscInt *bytes)
{
  PetscFunctionBegin;
  *bytes = net->precision == NET_PRECISION_DOUBLE ? (PetscInt)sizeof(PetscScalar) : net->precision == NET_PRECISION_SINGLE ? (PetscInt)sizeof(float) : (PetscInt)sizeof(uint16_t);
  PetscFunctionReturn(0);
}

/*@
  NetSetPrecision - sets the precision of a Net's values and of the arithmetic of its layers

  Logically collective

  Input Parameters:
+ net       - the Net
- precision - `NET_PRECISION_DOUBLE` (default), `NET_PRECISION_SINGLE` or `NET_PRECISION_BFLOAT16`

  Options Database Key:
. -net_precision <double,single,bfloat16> - the same from the options (NetSetFromOptions())

  Notes:
  In single precision the activations, their tangents and cotangents are float, and the layers compute in float (sgemm
  for dense and convolution layers): half the activation memory of double, and about twice the GEMM rate. In bfloat16
  they are stored in bfloat16 (a quarter of double's memory) and computed in float (Debian's OpenBLAS 0.3.21 has no
  sbgemm). The master parameters, the gradient (accumulated in double), losses, optimizers and every public Vec (input,
  output, Jacobian shells, TAO, TS) stay double: only the values inside the Net change precision. A kind without its
  own float kernels runs its double kernels on double copies of its values (LayerHasSingle()). bfloat16 has float's
  exponent range, so no loss scaling is needed.

  Derivatives are exact for the low-precision computation up to its round-off: NetTestJacobian() scales its
  tolerances by the precision's unit round-off. Every executor works at every precision (include/petnet/private/
  netimpl.h): plain and grid-mode nodes compute in float (at bfloat16 an activation, and a grid-mode convolution or
  average pooling, read the stored values themselves and widen them a chunk at a time: no float copy of a whole
  block), a model-parallel node computes in double on widened copies of its stored values and its outputs are rounded
  back to the store; the second-order adjoint, the per-node Jacobians
  and K-FAC's statistics read widened copies too; the forward cache keeps stored values. Changing
  the precision after NetSetUp() forgets the last forward pass.

  Level: intermediate

.seealso: `NetGetPrecision()`, `NetForward()`, `NetTestJacobian()`, `LayerForwardSingle()`
@*/
PetscErrorCode NetSetPrecision(Net net, NetPrecision precision)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(net, precision, 2);
  PetscCheck(precision >= NET_PRECISION_DOUBLE && precision <= NET_PRECISION_BFLOAT16, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_OUTOFRANGE, "Unknown precision %d: use NET_PRECISION_DOUBLE, NET_PRECISION_SINGLE or NET_PRECISION_BFLOAT16",
             (int)precision);
  if (precision == net->precision) PetscFunctionReturn(0);
  if (net->setupcalled) PetscCall(NetResetWorkspace_Private(net));
  net->precision = precision;
  if (net->setupcalled) PetscCall(NetSetUpFusion_Private(net));  /* the fusion plan depends on the precision (netfuse.c) */
  if (net->setupcalled) PetscCall(NetSetUpBackend_Private(net)); /* and so does the layers' GEMM backend (netbackend.c) */
  PetscFunctionReturn(0);
}

/*@
  NetGetPrecision - the precision of a Net's values and of the arithmetic of its layers

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. precision - `NET_PRECISION_DOUBLE`, `NET_PRECISION_SINGLE` or `NET_PRECISION_BFLOAT16`

  Level: intermediate

.seealso: `NetSetPrecision()`
@*/
PetscErrorCode NetGetPrecision(Net net, NetPrecision *precision)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidPointer(precision, 2);
  *precision = net->precision;
  PetscFunctionReturn(0);
}

/*@
  NetSetBFloat16Kernels - chooses whether, at bfloat16 precision, the layers whose kinds have bfloat16 kernels compute
  on the stored bfloat16 values themselves (default `PETSC_TRUE`)

  Logically collective

  Input Parameters:
+ net - the Net
- on  - `PETSC_TRUE` to use them, `PETSC_FALSE` to compute on float copies of the values, widened before each node and
        rounded after, as every other plain node does

  Options Database Key:
. -net_bfloat16_kernels <bool> - the same from the options (NetSetFromOptions())

  Notes:
  maxpool has them (forward, backward with the derivative of a fused activation before it, jvp), flatten and gelu
  (elementwise on the stored values, computing in float in registers), and dense, conv2d and conv3d where the backend
  is onednn and the CPU has oneDNN's bfloat16 matmuls and convolutions (AVX-512 BF16, AMX): their inputs go to
  oneDNN as stored, with a fused relu after them. They read half the bytes and no float copy of their batch's inputs
  is made. Each entry is the float kernel's result on the widened values, rounded once, so both settings give the
  same bits (`-net_bfloat16_kernels false` is the reference the tests compare against). No effect at other
  precisions, in grid mode or on a node of a model-parallel split; it may be changed at any time.

  Level: advanced

.seealso: `NetGetBFloat16Kernels()`, `NetSetPrecision()`, `NetSetFusion()`
@*/
PetscErrorCode NetSetBFloat16Kernels(Net net, PetscBool on)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidLogicalCollectiveBool(net, on, 2);
  net->bf16kernels = on;
  PetscFunctionReturn(0);
}

/*@
  NetGetBFloat16Kernels - whether, at bfloat16 precision, the layers with bfloat16 kernels compute on the stored values

  Not collective

  Input Parameter:
. net - the Net

  Output Parameter:
. on - `PETSC_TRUE` if they do (NetSetBFloat16Kernels())

  Level: advanced

.seealso: `NetSetBFloat16Kernels()`
@*/
PetscErrorCode NetGetBFloat16Kernels(Net net, PetscBool *on)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidBoolPointer(on, 2);
  *on = net->bf16kernels;
  PetscFunctionReturn(0);
}
