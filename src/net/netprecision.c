/*
  Low precision (NetSetPrecision(), -net_precision single|bfloat16): the walk of netforward.c over values held in float
  or bfloat16.

    store     lval[v], ldval[v], lsum[v]     vlocal[v] * size_v entries of 4 bytes (float) or 2 (bfloat16), v = 0..L
    compute   every node in float: LayerForwardSingle(), LayerBackwardSingle(), LayerJVPSingle() (sgemm where the kind
              has its own float kernels); in bfloat16 a node's values are widened to float scratch before and rounded
              (to nearest, ties to even) after, so only the stored values carry bfloat16's 8-bit significand
    double    the parameters (each node reads its double block, NetNodeGetParameters_Private()), the gradient (the
              kernels accumulate into the double block), the loss and optimizer, and the public Vecs: X is rounded into
              lval[0], the output widened into act[L] (so Y, dY, dX, dtheta are double as in double precision)

  bfloat16 keeps float's 8-bit exponent, so gradients do not underflow where float's do not: no loss scaling is needed
  (it is for IEEE half precision, whose exponent has 5 bits).

  Not available in low precision (refused with an error naming -net_precision): grid mode, model-parallel nodes, the
  forward cache, and what reads the double values of intermediate nodes (the per-node Jacobians, the second-order
  adjoint, K-FAC).
*/
#include <petnet/private/netimpl.h>

const char *const NetPrecisions[] = {"double", "single", "bfloat16", "NetPrecision", "NET_PRECISION_", NULL};

/* bfloat16 is the upper half of a float: widening is exact, narrowing rounds to nearest even (a NaN stays a NaN) */
static inline float NetBF16ToFloat(uint16_t b)
{
  union {
    uint32_t u;
    float    f;
  } c;

  c.u = (uint32_t)b << 16;
  return c.f;
}

static inline uint16_t NetFloatToBF16(float f)
{
  union {
    uint32_t u;
    float    f;
  } c;

  c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);
}

/* BODY on the blocks [i0, i1) of N entries, on PetNet's threads when there are several (elementwise: the same bits at
   any thread count) */
#define NET_LOW_BLOCK           16384
#define NET_LOW_BLOCKS(N, BODY) PETNET_THREAD_BLOCKS(N, NET_LOW_BLOCK, BODY)

/* the bytes of one stored entry */
PetscErrorCode NetPrecisionBytes_Private(Net net, PetscInt *bytes)
{
  PetscFunctionBegin;
  *bytes = net->precision == NET_PRECISION_DOUBLE ? (PetscInt)sizeof(PetscScalar) : net->precision == NET_PRECISION_SINGLE ? (PetscInt)sizeof(float) : (PetscInt)sizeof(uint16_t);
  PetscFunctionReturn(0);
}

/* entries of value v on this rank */
static PetscInt NetLowCount(Net net, PetscInt v)
{
  PetscInt size;

  if (v)
    size = net->layers[v - 1]->outsize;
  else
    PetscCallAbort(PETSC_COMM_SELF, PetNetShapeSize(&net->in, &size));
  return net->vlocal[v] * size;
}

/* A float view of the N entries of a stored buffer: the buffer itself in single precision; in bfloat16 a float copy in
   the next free part of the scratch lwide (read: filled from the buffer; NetLowRestoreFloat() rounds it back if asked
   to write). The walks empty the scratch before each node (NetLowNextNode()): it holds at most one node's values. */
static PetscErrorCode NetLowGetFloat(Net net, void *buf, PetscInt N, PetscBool read, float **f)
{
  PetscFunctionBegin;
  *f = NULL;
  if (!buf) PetscFunctionReturn(0);
  if (net->precision == NET_PRECISION_SINGLE) {
    *f = (float *)buf;
    PetscFunctionReturn(0);
  }
  PetscCheck(net->lwidetop + N <= net->lwidesize, PETSC_COMM_SELF, PETSC_ERR_PLIB, "bfloat16 scratch of %" PetscInt64_FMT " entries too small for %" PetscInt64_FMT, net->lwidesize, net->lwidetop + N);
  *f = net->lwide + net->lwidetop;
  net->lwidetop += N;
  if (read) {
    const uint16_t *b = (const uint16_t *)buf;
    float          *g = *f;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) g[i] = NetBF16ToFloat(b[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetLowRestoreFloat(Net net, void *buf, PetscInt N, PetscBool write, float **f)
{
  PetscFunctionBegin;
  if (net->precision != NET_PRECISION_SINGLE && *f) {
    if (write) {
      uint16_t    *b = (uint16_t *)buf;
      const float *g = *f;

      NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) b[i] = NetFloatToBF16(g[i]));
    }
  }
  *f = NULL;
  PetscFunctionReturn(0);
}

/* buf = v (rounded), v = buf (widened): a public double Vec against a stored value */
static PetscErrorCode NetLowFromVec(Net net, Vec v, void *buf)
{
  const PetscScalar *a;
  PetscInt           N;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &N));
  PetscCall(VecGetArrayRead(v, &a));
  if (net->precision == NET_PRECISION_SINGLE) {
    float *f = (float *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) f[i] = (float)a[i]);
  } else {
    uint16_t *b = (uint16_t *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) b[i] = NetFloatToBF16((float)a[i]));
  }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetLowToVec(Net net, const void *buf, Vec v)
{
  PetscScalar *a;
  PetscInt     N;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &N));
  PetscCall(VecGetArrayWrite(v, &a));
  if (net->precision == NET_PRECISION_SINGLE) {
    const float *f = (const float *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) a[i] = f[i]);
  } else {
    const uint16_t *b = (const uint16_t *)buf;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) a[i] = NetBF16ToFloat(b[i]));
  }
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* dst += src over N stored entries (a value's cotangent and the contribution of one more of its consumers) */
static void NetLowAdd(Net net, PetscInt N, void *dst, const void *src)
{
  if (net->precision == NET_PRECISION_SINGLE) {
    float       *d = (float *)dst;
    const float *s = (const float *)src;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) d[i] += s[i]);
  } else {
    uint16_t       *d = (uint16_t *)dst;
    const uint16_t *s = (const uint16_t *)src;

    NET_LOW_BLOCKS(N, for (PetscInt i = i0; i < i1; i++) d[i] = NetFloatToBF16(NetBF16ToFloat(d[i]) + NetBF16ToFloat(s[i])));
  }
}

/* what low precision does not cover, refused where the workspace is built */
static PetscErrorCode NetLowCheck_Private(Net net)
{
  const char *name = NetPrecisions[net->precision];
  MPI_Comm    comm = PetscObjectComm((PetscObject)net);

  PetscFunctionBegin;
  PetscCheck(!net->grid, comm, PETSC_ERR_SUP, "-net_precision %s is not available in grid mode (NetSetGrid()): use -net_precision double", name);
  PetscCheck(!net->fcachesize, comm, PETSC_ERR_SUP, "-net_precision %s is not available with the forward cache (-net_forward_cache %" PetscInt_FMT "): use one of them", name, net->fcachesize);
  for (PetscInt k = 0; k < net->nlayers; k++)
    PetscCheck(!net->nodes[k].mp, comm, PETSC_ERR_SUP, "-net_precision %s is not available with model-parallel nodes (node %s, -net_parallel model): use -net_parallel replicated or sharded, or -net_precision double", name, net->nodes[k].name);
  PetscFunctionReturn(0);
}

/*
  NetCheckDoublePrecision_Private - refuse a computation that reads the double values of intermediate nodes when the
  Net holds them in low precision
*/
PetscErrorCode NetCheckDoublePrecision_Private(Net net, const char what[])
{
  PetscFunctionBegin;
  PetscCheck(net->precision == NET_PRECISION_DOUBLE, PetscObjectComm((PetscObject)net), PETSC_ERR_SUP, "%s needs the Net's values in double precision, and this Net holds them in %s (-net_precision %s): use -net_precision double", what,
             NetPrecisions[net->precision], NetPrecisions[net->precision]);
  PetscFunctionReturn(0);
}

/* before each node of a walk: its float views in bfloat16 start again at the beginning of the scratch */
static inline void NetLowNextNode(Net net)
{
  net->lwidetop = 0;
}

/* the low-precision store for the batch of net->vlocal (the Vecs act[0] and act[L] are built by the caller); in
   bfloat16 also the float scratch for the values one node's kernels see at once: its inputs and their (co)tangents,
   its output and its (co)tangent */
PetscErrorCode NetLowSetUpWorkspace_Private(Net net)
{
  PetscInt es;

  PetscFunctionBegin;
  PetscCall(NetLowCheck_Private(net));
  PetscCall(NetPrecisionBytes_Private(net, &es));
  PetscCall(PetscCalloc3(net->nlayers + 1, &net->lval, net->nlayers + 1, &net->ldval, net->nlayers + 1, &net->lsum));
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    const size_t bytes = (size_t)es * (size_t)NetLowCount(net, v);

    if (v && net->nodes[v - 1].fusedinto >= 0)
      net->lval[v] = net->lval[net->nodes[v - 1].fusedinto + 1]; /* in place (netfuse.c) */
    else
      PetscCall(PetscMalloc(bytes, &net->lval[v]));
    PetscCall(PetscMalloc(bytes, &net->ldval[v]));
    if ((v ? net->nodes[v - 1].nuses : net->ninputuses) > 1) PetscCall(PetscMalloc(bytes, &net->lsum[v]));
  }
  net->lwidesize = 0;
  net->lwidetop  = 0;
  if (net->precision == NET_PRECISION_BFLOAT16) {
    for (PetscInt k = 0; k < net->nlayers; k++) {
      PetscInt64 need = 2 * (PetscInt64)NetLowCount(net, k + 1);

      for (PetscInt i = 0; i < net->nodes[k].nin; i++) need += 2 * (PetscInt64)NetLowCount(net, net->nodes[k].in[i] + 1);
      net->lwidesize = PetscMax(net->lwidesize, need);
    }
    PetscCall(PetscMalloc1((size_t)net->lwidesize, &net->lwide));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode NetLowResetWorkspace_Private(Net net)
{
  PetscFunctionBegin;
  if (!net->lval) PetscFunctionReturn(0);
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    if (v && net->nodes[v - 1].fusedinto >= 0)
      net->lval[v] = NULL; /* its producer's */
    else
      PetscCall(PetscFree(net->lval[v]));
    PetscCall(PetscFree(net->ldval[v]));
    PetscCall(PetscFree(net->lsum[v]));
  }
  PetscCall(PetscFree3(net->lval, net->ldval, net->lsum));
  PetscCall(PetscFree(net->lwide));
  net->lwidesize = net->lwidetop = 0;
  PetscFunctionReturn(0);
}

/* float views of node k's inputs in the store vals (read) */
static PetscErrorCode NetLowGetInputs(Net net, PetscInt k, void **vals, float *x[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt v = net->nodes[k].in[i] + 1;

    PetscCall(NetLowGetFloat(net, vals[v], NetLowCount(net, v), PETSC_TRUE, &x[i]));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode NetLowRestoreInputs(Net net, PetscInt k, void **vals, float *x[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < net->nodes[k].nin; i++) {
    const PetscInt v = net->nodes[k].in[i] + 1;

    PetscCall(NetLowRestoreFloat(net, vals[v], NetLowCount(net, v), PETSC_FALSE, &x[i]));
  }
  PetscFunctionReturn(0);
}

/* NetForward() in low precision: act[L] = f(X) widened; every value kept in the store */
PetscErrorCode NetLowForward_Private(Net net, Vec X)
{
  const PetscScalar *theta, *th;
  float            **x, *y;
  PetscInt           maxin = 1;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  PetscCall(PetscMalloc1(maxin, &x));
  PetscCall(NetLowFromVec(net, X, net->lval[0]));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const PetscInt p = net->nodes[k].fusedinto;

    NetLowNextNode(net);
    if (p >= 0 && net->nodes[p].fuseact == k) continue; /* an activation its producer applied (netfuse.c): the same value */
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    PetscCall(NetLowGetInputs(net, k, net->lval, x));
    PetscCall(NetLowGetFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_FALSE, &y));
    net->layers[k]->fuseact = net->nodes[k].fuseact >= 0 ? net->layers[net->nodes[k].fuseact] : NULL; /* y = f(P(x)) in its pass */
    PetscCall(LayerForwardSingle(net->layers[k], NetNodeCount(net, k), th, (const float *const *)x, y));
    net->layers[k]->fuseact = NULL;
    PetscCall(NetLowRestoreFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_TRUE, &y));
    PetscCall(NetLowRestoreInputs(net, k, net->lval, x));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(PetscFree(x));
  PetscCall(NetLowToVec(net, net->lval[net->nlayers], net->act[net->nlayers]));
  PetscFunctionReturn(0);
}

/* NetBackward() in low precision (arguments checked by the caller): cotangents in the store, the gradient in double */
PetscErrorCode NetLowBackward_Private(Net net, Vec dY, Vec dX, Vec G)
{
  const PetscScalar *theta, *th;
  PetscScalar       *grad = NULL, *gk;
  float            **x, **dx, *y, *dy;
  PetscBool         *seeded, *summed, *want;
  PetscInt           maxin = 1;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  PetscCall(PetscMalloc2(maxin, &x, maxin, &dx));
  PetscCall(PetscCalloc3(net->nlayers + 1, &seeded, maxin, &summed, maxin, &want));
  net->tanvalid = PETSC_FALSE;
  PetscCall(NetLowFromVec(net, dY, net->ldval[net->nlayers]));
  seeded[net->nlayers] = PETSC_TRUE;
  PetscCall(NetGetGradientArray_Private(net, G, &grad)); /* G's own on one rank, else grad_rep (netpmap.c) */
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  for (PetscInt k = net->nlayers - 1; k >= 0; k--) {
    const NetNode *nd = &net->nodes[k];

    NetLowNextNode(net);
    if (nd->fusedback >= 0) continue;                  /* a relu whose consumer did its backward (netfuse.c) */
    for (PetscInt i = 0; i < nd->nin; i++) {           /* the first consumer of a value writes its cotangent, the others lsum */
      const PetscInt v = NetBackwardTarget(net, k, i); /* the input, or the input of a fused relu before node k */

      dx[i]     = NULL;
      want[i]   = (PetscBool)(v || dX);
      summed[i] = PETSC_FALSE;
      if (!want[i]) continue;
      summed[i] = seeded[v];
      PetscCall(NetLowGetFloat(net, summed[i] ? net->lsum[v] : net->ldval[v], NetLowCount(net, v), PETSC_FALSE, &dx[i]));
      seeded[v] = PETSC_TRUE;
    }
    PetscCall(NetLowGetInputs(net, k, net->lval, x));
    PetscCall(NetLowGetFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_TRUE, &y));
    PetscCall(NetLowGetFloat(net, net->ldval[k + 1], NetLowCount(net, k + 1), PETSC_TRUE, &dy));
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    PetscCall(NetNodeGetGradient_Private(net, k, grad, (PetscBool)(G != NULL), &gk));
    net->layers[k]->fusemask = nd->fusemask >= 0 ? net->layers[nd->fusemask] : NULL; /* dx = f'(x) J^T dy in its pass */
    PetscCall(LayerBackwardSingle(net->layers[k], NetNodeCount(net, k), th, (const float *const *)x, y, dy, dx, gk));
    net->layers[k]->fusemask = NULL;
    PetscCall(NetNodeRestoreGradient_Private(net, k, G, &gk));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    PetscCall(NetLowRestoreFloat(net, net->ldval[k + 1], NetLowCount(net, k + 1), PETSC_FALSE, &dy));
    PetscCall(NetLowRestoreFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_FALSE, &y));
    PetscCall(NetLowRestoreInputs(net, k, net->lval, x));
    for (PetscInt i = 0; i < nd->nin; i++) {
      const PetscInt v = NetBackwardTarget(net, k, i);

      if (!want[i]) continue;
      PetscCall(NetLowRestoreFloat(net, summed[i] ? net->lsum[v] : net->ldval[v], NetLowCount(net, v), PETSC_TRUE, &dx[i]));
      if (summed[i]) NetLowAdd(net, NetLowCount(net, v), net->ldval[v], net->lsum[v]);
    }
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  PetscCall(PetscFree3(seeded, summed, want));
  PetscCall(PetscFree2(x, dx));
  if (dX) PetscCall(NetLowToVec(net, net->ldval[0], dX));
  PetscCall(NetRestoreGradientArray_Private(net, G, &grad));
  PetscFunctionReturn(0);
}

/* NetJVP() in low precision (arguments checked by the caller): tangents in the store, the parameter direction double */
PetscErrorCode NetLowJVP_Private(Net net, Vec dX, Vec dtheta, Vec dY)
{
  const PetscScalar *theta, *dth = NULL, *th, *dthk;
  float            **x, **dx, *y, *dy;
  PetscBool         *zero;
  PetscInt           maxin = 1;

  PetscFunctionBegin;
  for (PetscInt k = 0; k < net->nlayers; k++) maxin = PetscMax(maxin, net->nodes[k].nin);
  PetscCall(PetscMalloc2(maxin, &x, maxin, &dx));
  PetscCall(PetscMalloc1(net->nlayers + 1, &zero)); /* zero[v]: the tangent of value v is zero (NULL for the kernels) */
  if (dX) PetscCall(NetLowFromVec(net, dX, net->ldval[0]));
  zero[0] = dX ? PETSC_FALSE : PETSC_TRUE;
  PetscCall(NetGetReplicatedDirection_Private(net, dtheta, &dth));
  PetscCall(NetGetReplicatedArray_Private(net->theta_rep, &theta));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    const NetNode *nd = &net->nodes[k];

    NetLowNextNode(net);
    zero[k + 1] = (PetscBool)(!dtheta || !net->layers[k]->nparams);
    for (PetscInt i = 0; i < nd->nin; i++) {
      const PetscInt v = nd->in[i] + 1;

      dx[i] = NULL;
      if (!zero[v]) PetscCall(NetLowGetFloat(net, net->ldval[v], NetLowCount(net, v), PETSC_TRUE, &dx[i]));
      zero[k + 1] = (PetscBool)(zero[k + 1] && zero[v]);
    }
    PetscCall(NetLowGetInputs(net, k, net->lval, x));
    PetscCall(NetLowGetFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_TRUE, &y));
    PetscCall(NetLowGetFloat(net, net->ldval[k + 1], NetLowCount(net, k + 1), PETSC_FALSE, &dy));
    PetscCall(NetNodeGetParameters_Private(net, k, net->theta, theta, &th));
    PetscCall(NetNodeGetParameters_Private(net, k, dtheta, dth, &dthk));
    PetscCall(LayerJVPSingle(net->layers[k], NetNodeCount(net, k), th, (const float *const *)x, y, (const float *const *)dx, dthk, dy));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &dthk));
    PetscCall(NetNodeRestoreParameters_Private(net, k, &th));
    PetscCall(NetLowRestoreFloat(net, net->ldval[k + 1], NetLowCount(net, k + 1), PETSC_TRUE, &dy));
    PetscCall(NetLowRestoreFloat(net, net->lval[k + 1], NetLowCount(net, k + 1), PETSC_FALSE, &y));
    PetscCall(NetLowRestoreInputs(net, k, net->lval, x));
    for (PetscInt i = 0; i < nd->nin; i++) {
      const PetscInt v = nd->in[i] + 1;

      if (!zero[v]) PetscCall(NetLowRestoreFloat(net, net->ldval[v], NetLowCount(net, v), PETSC_FALSE, &dx[i]));
    }
  }
  PetscCall(NetRestoreReplicatedArray_Private(net->theta_rep, &theta));
  if (dth) PetscCall(VecRestoreArrayRead(net->dtheta_rep, &dth));
  PetscCall(PetscFree(zero));
  PetscCall(PetscFree2(x, dx));
  PetscCall(NetLowToVec(net, net->ldval[net->nlayers], dY));
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
  tolerances by the precision's unit round-off. Not available in grid mode, with model-parallel nodes or the forward
  cache; the per-node Jacobians, the second-order adjoint and K-FAC need double. Changing the precision after NetSetUp()
  forgets the last forward pass.

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
  if (net->setupcalled) PetscCall(NetSetUpFusion_Private(net)); /* the fusion plan depends on the precision (netfuse.c) */
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
