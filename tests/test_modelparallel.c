static const char help[] = "Model-parallel dense and conv2d nodes (NetSetNodePartition(), -net_parallel model) against the same Net on one rank:\n"
                           "  the Net under test (-net_layers, -net_input_shape, -net_parallel, -layerN_partition from the options) runs on all\n"
                           "  ranks with its batch split unevenly by samples; the reference, the same layer list without partitions and the same\n"
                           "  parameters, runs replicated on each rank alone with the whole batch. For two batch sizes (the layouts are rebuilt\n"
                           "  in between) the outputs, the loss 0.5 |Y - T|^2, the parameter gradient, the input cotangent, a JVP in random\n"
                           "  directions (and with -test_secondorder the exact Hessian-vector product) must agree to <= 1e-12 relative.\n"
                           "Options: -nsamples N (the first batch; the second has N - 2), -expect_model K (the number of model-parallel nodes\n"
                           "  the Net must have), -test_jacobian (NetTestJacobian on the Net: dot-product tests of NetGetJacobian(),\n"
                           "  NetGetJacobianP() and every node's shells <= 1e-12, finite differences <= 1e-6), -view (NetView), -verbose,\n"
                           "  -test_memory B (needs -malloc_debug, which tests/run gives: one more forward and backward at the same point may\n"
                           "  allocate, on top of what the first left, at most B node blocks of parameters, B x 8 x the largest nplocal),\n"
                           "  -token_ids V (the inputs are token ids (7 i + 3) mod V of the global entry i, for an embedding first; no input\n"
                           "  cotangent or tangent is compared), -crossentropy (the loss is crossentropy on the output's last dimension, the\n"
                           "  labels (5 i + 1) mod C, instead of 0.5 |Y - T|^2), -test_param_ratio R (the parameters a rank computes with,\n"
                           "  its blocks of the split nodes and the whole of the others, at most R of the Net's: prints the bytes).\n";

#include <petnet.h>
#include <petnet/private/netimpl.h>

/* The samples of the batch this rank holds: as even as possible, the first ranks one more (some may hold none) */
static void SampleRange(PetscInt N, PetscMPIInt size, PetscMPIInt rank, PetscInt *start, PetscInt *n)
{
  *n     = N / size + (rank < N % size ? 1 : 0);
  *start = rank * (N / size) + PetscMin(rank, N % size);
}

/* a deterministic table: the same global values on every rank count */
static PetscScalar Table(PetscInt i, PetscInt which)
{
  return PetscSinReal(0.37 * i + 0.11 * which + 0.1) + 0.25 * PetscCosReal(1.3 * i * (which + 1));
}

static PetscInt TokenIds = 0; /* -token_ids V: the input rows are ids in [0, V) */

static PetscErrorCode FillRows(Vec v, PetscInt first, PetscInt which)
{
  PetscScalar *a;
  PetscInt     m;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(v, &m));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < m; i++) a[i] = which == 0 && TokenIds > 0 ? (PetscScalar)((7 * (first + i) + 3) % TokenIds) : Table(first + i, which);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* max over ranks of max |a_local - b[off..]| and of max |b| (b: the whole reference array on every rank) */
static PetscErrorCode RelDiffRows(MPI_Comm comm, Vec a, Vec b, PetscInt off, PetscReal *rel)
{
  const PetscScalar *x, *y;
  PetscInt           m, M;
  PetscReal          d[2] = {0, 0};

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(a, &m));
  PetscCall(VecGetLocalSize(b, &M));
  PetscCall(VecGetArrayRead(a, &x));
  PetscCall(VecGetArrayRead(b, &y));
  for (PetscInt i = 0; i < m; i++) d[0] = PetscMax(d[0], PetscAbsScalar(x[i] - y[off + i]));
  for (PetscInt i = 0; i < M; i++) d[1] = PetscMax(d[1], PetscAbsScalar(y[i]));
  PetscCall(VecRestoreArrayRead(a, &x));
  PetscCall(VecRestoreArrayRead(b, &y));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, d, 2, MPIU_REAL, MPIU_MAX, comm));
  *rel = d[0] / PetscMax(d[1], 1e-300);
  PetscFunctionReturn(0);
}

/* the distributed parameter-laid-out Vec v as a sequential Vec holding all of it, on every rank */
static PetscErrorCode GatherAll(Vec v, Vec *all)
{
  VecScatter sc;

  PetscFunctionBegin;
  PetscCall(VecScatterCreateToAll(v, &sc, all));
  PetscCall(VecScatterBegin(sc, v, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, v, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sc));
  PetscFunctionReturn(0);
}

/* The layer list without its partition= fields */
static PetscErrorCode StripPartitions(char spec[])
{
  char *p;

  PetscFunctionBegin;
  while ((p = strstr(spec, ":partition="))) {
    size_t n = 11;

    while (p[n] && !strchr(",)|:; ", p[n])) n++;
    memmove(p, p + n, strlen(p + n) + 1);
  }
  PetscFunctionReturn(0);
}

/*
  The memory a training step's parameter traffic takes (sharded and model-parallel nodes gather their parameters just
  before they run and reduce their gradient block at once): after a forward and backward at this point, which built
  every layout and work Vec, one more allocates only the transient buffers: a node's gathered parameters, its gradient
  block, and the pieces that cross ranks. PETSc's tracing allocator counts them to the byte (deterministic: the same
  calls in the same order on every run); the high-water mark above the bytes held before, in units of the largest node
  block (8 nplocal), must be at most `blocks`: one block plus the crossing pieces when a node never holds its
  parameters and its gradient at once, at least two when it does. The high-water mark is taken by wrapping PETSc's
  allocator (PetscTrMalloc) for the step: PetscMallocPushMaximumUsage() of PETSc 3.18 does not follow it.
*/
static PetscErrorCode (*StepSavedMalloc)(size_t, PetscBool, int, const char[], const char[], void **);
static PetscErrorCode (*StepSavedRealloc)(size_t, int, const char[], const char[], void **);
static PetscLogDouble StepPeak;

static PetscErrorCode StepTrackPeak(void)
{
  PetscLogDouble now;

  PetscFunctionBegin;
  PetscCall(PetscMallocGetCurrentUsage(&now));
  StepPeak = PetscMax(StepPeak, now);
  PetscFunctionReturn(0);
}

static PetscErrorCode StepMalloc(size_t a, PetscBool clear, int line, const char func[], const char file[], void **result)
{
  PetscFunctionBegin;
  PetscCall((*StepSavedMalloc)(a, clear, line, func, file, result));
  PetscCall(StepTrackPeak());
  PetscFunctionReturn(0);
}

static PetscErrorCode StepRealloc(size_t a, int line, const char func[], const char file[], void **result)
{
  PetscFunctionBegin;
  PetscCall((*StepSavedRealloc)(a, line, func, file, result));
  PetscCall(StepTrackPeak());
  PetscFunctionReturn(0);
}

static PetscErrorCode TestStepMemory(Net net, Vec X, Vec Y, Vec dY, Vec dX, Vec G, PetscReal blocks)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  PetscLogDouble before;
  PetscReal      used[2];
  PetscInt       most = 0;
  PetscBool      tracing;

  PetscFunctionBegin;
  PetscCall(PetscMallocGetDebug(&tracing, NULL, NULL));
  PetscCheck(tracing, comm, PETSC_ERR_ARG_WRONGSTATE, "-test_memory counts the bytes of PETSc's tracing allocator: add -malloc_debug");
  for (PetscInt k = 0; k < net->nlayers; k++)
    if (net->nodes[k].pmap) most = PetscMax(most, net->nodes[k].nplocal);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &most, 1, MPIU_INT, MPI_MAX, comm));
  PetscCheck(most > 0, comm, PETSC_ERR_ARG_WRONG, "-test_memory: no node of this Net gathers its parameters (run it sharded or with a partition)");
  PetscCall(PetscMallocGetCurrentUsage(&before));
  StepPeak         = before;
  StepSavedMalloc  = PetscTrMalloc;
  StepSavedRealloc = PetscTrRealloc;
  PetscTrMalloc    = StepMalloc;
  PetscTrRealloc   = StepRealloc;
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, dX, G));
  PetscTrMalloc  = StepSavedMalloc;
  PetscTrRealloc = StepSavedRealloc;
  used[0]        = (PetscReal)(StepPeak - before);
  used[1]        = used[0] / (8.0 * most);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, used, 2, MPIU_REAL, MPIU_MAX, comm));
  PetscCall(PetscPrintf(comm, "a step's transient parameter buffers: %.0f bytes, %.3f of the largest node block (%" PetscInt_FMT " parameters); at most %g\n", (double)used[0], (double)used[1], most, (double)blocks));
  PetscCheck(used[1] <= blocks, comm, PETSC_ERR_PLIB, "A forward and backward allocated %.3f node blocks of parameters at once (> %g): some node holds its gathered parameters and its gradient block together, or a full-size send buffer",
             (double)used[1], (double)blocks);
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net         net, ref;
  MPI_Comm    comm;
  PetscMPIInt size, rank;
  PetscInt    N0 = 7, expect = -1, nmodel = 0, insize, outsize, nparams;
  PetscBool   testjac = PETSC_FALSE, view = PETSC_FALSE, verbose = PETSC_FALSE, testso = PETSC_FALSE, xent = PETSC_FALSE;
  PetscReal   worst = 0, memblocks = -1, pratio = -1;
  Loss        loss = NULL, lossref = NULL;
  char        spec[NET_MAX_NAME];
  PetNetShape in, out;
  Vec         theta, thall, reftheta;

  PetscFunctionBeginUser;
  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &N0, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-expect_model", &expect, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_jacobian", &testjac, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_secondorder", &testso, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-view", &view, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-verbose", &verbose, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_memory", &memblocks, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-token_ids", &TokenIds, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-crossentropy", &xent, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_param_ratio", &pratio, NULL));

  /* the Net under test, from the options; the reference: its layer list without partitions, on this rank alone */
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  { /* -set_node_partition k,P,Q: NetSetNodePartition() on the Net set up (it lays itself out anew), read back */
    PetscInt  kpq[3], nkpq = 3, pout, pin;
    PetscBool set;

    PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-set_node_partition", kpq, &nkpq, &set));
    if (set) {
      PetscCheck(nkpq == 3, comm, PETSC_ERR_ARG_WRONG, "-set_node_partition takes k,P,Q");
      PetscCall(NetSetNodePartition(net, kpq[0], kpq[1], kpq[2]));
      PetscCall(NetGetNodePartition(net, kpq[0], &pout, &pin));
      PetscCheck(pout == kpq[1] && pin == kpq[2], comm, PETSC_ERR_PLIB, "NetGetNodePartition() gives %" PetscInt_FMT "x%" PetscInt_FMT " for node %" PetscInt_FMT ", not the %" PetscInt_FMT "x%" PetscInt_FMT " set", pout, pin, kpq[0], kpq[1], kpq[2]);
      PetscCall(PetscPrintf(comm, "node %" PetscInt_FMT ": partition %" PetscInt_FMT "x%" PetscInt_FMT " (NetSetNodePartition() on the set-up Net)\n", kpq[0], pout, pin));
    }
  }
  for (PetscInt k = 0; k < net->nlayers; k++) nmodel += net->nodes[k].mp ? 1 : 0;
  PetscCall(PetscPrintf(comm, "model-parallel nodes: %" PetscInt_FMT "\n", nmodel));
  PetscCheck(expect < 0 || nmodel == expect, comm, PETSC_ERR_PLIB, "Expected %" PetscInt_FMT " model-parallel nodes, the Net has %" PetscInt_FMT, expect, nmodel);
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  if (view) {
    PetscCall(PetscPrintf(comm, "spec: %s\n", spec));
    PetscCall(NetView(net, NULL));
  }
  PetscCall(StripPartitions(spec));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(NetCreate(PETSC_COMM_SELF, &ref));
  PetscCall(NetSetOptionsPrefix(ref, "ref_"));
  if (strchr(spec, ';'))
    PetscCall(NetSetGraph(ref, spec));
  else
    PetscCall(NetSetLayers(ref, spec));
  PetscCall(NetSetInputShape(ref, &in));
  PetscCall(NetSetFromOptions(ref)); /* -ref_<node prefix>... for what the spec does not carry (attention dropout) */
  PetscCall(NetSetUp(ref));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(GatherAll(theta, &thall));
  PetscCall(NetCreateParameterVec(ref, &reftheta));
  PetscCall(VecCopy(thall, reftheta));
  PetscCall(NetSetParameters(ref, reftheta));
  if (pratio >= 0) { /* the parameters a rank computes with: its block of each split node, the whole of the others */
    PetscInt64 held = 0, most;
    PetscReal  ratio;

    for (PetscInt k = 0; k < net->nlayers; k++) held += net->nodes[k].mp ? net->nodes[k].nplocal : net->layers[k]->nparams;
    PetscCall(MPIU_Allreduce(&held, &most, 1, MPIU_INT64, MPI_MAX, comm));
    ratio = (PetscReal)most / (PetscReal)nparams;
    PetscCall(PetscPrintf(comm, "parameters a rank computes with: %" PetscInt64_FMT " bytes at most, of %" PetscInt64_FMT " bytes on one rank (ratio %.4f, at most %g); its slice of theta: %" PetscInt64_FMT " bytes\n", (PetscInt64)8 * most,
                          (PetscInt64)8 * nparams, (double)ratio, (double)pratio, (PetscInt64)8 * ((nparams + size - 1) / size)));
    PetscCheck(ratio <= pratio, comm, PETSC_ERR_PLIB, "A rank computes with %.4f of the Net's parameters (> %g): the split nodes do not dominate, or a node is not split", (double)ratio, (double)pratio);
  }
  if (xent) {
    PetscCall(LossCreate(comm, &loss));
    PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
    PetscCall(LossCreate(PETSC_COMM_SELF, &lossref));
    PetscCall(LossSetType(lossref, LOSSCROSSENTROPY));
  }

  for (PetscInt batch = 0; batch < 2; batch++) {
    PetscInt    N = batch ? PetscMax(N0 - 2, 1) : N0, start, n;
    Vec         X, Y, T, dY, dX, G, Gall, dXin, dth, dYj, Xr, Yr, Tr, dYr, dXr, Gr, dXinr, dthr, dYjr;
    PetscScalar lossv, lossrv;
    PetscReal   d[6];

    SampleRange(N, size, rank, &start, &n);
    PetscCall(NetCreateVecs(net, n, &X, &Y));
    PetscCall(NetCreateVecs(ref, N, &Xr, &Yr));
    PetscCall(FillRows(X, start * insize, 0));
    PetscCall(FillRows(Xr, 0, 0));
    PetscCall(VecDuplicate(Y, &T));
    PetscCall(VecDuplicate(Yr, &Tr));
    PetscCall(FillRows(T, start * outsize, 1));
    PetscCall(FillRows(Tr, 0, 1));
    /* outputs and the loss 0.5 |Y - T|^2 */
    PetscCall(NetForward(net, X, Y));
    PetscCall(NetForward(ref, Xr, Yr));
    PetscCall(RelDiffRows(comm, Y, Yr, start * outsize, &d[0]));
    PetscCall(VecDuplicate(Y, &dY));
    PetscCall(VecDuplicate(Yr, &dYr));
    if (xent) { /* crossentropy over the last dimension (C classes), a label per position: (5 i + 1) mod C */
      const PetscInt C = out.dim[out.ndim - 1], pos = outsize / C;
      Vec            L, Lr;
      PetscReal      f, fr;
      PetscScalar   *a;

      PetscCall(VecCreateMPI(comm, n * pos, PETSC_DETERMINE, &L));
      PetscCall(VecCreateSeq(PETSC_COMM_SELF, N * pos, &Lr));
      PetscCall(VecGetArrayWrite(L, &a));
      for (PetscInt i = 0; i < n * pos; i++) a[i] = (PetscScalar)((5 * (start * pos + i) + 1) % C);
      PetscCall(VecRestoreArrayWrite(L, &a));
      PetscCall(VecGetArrayWrite(Lr, &a));
      for (PetscInt i = 0; i < N * pos; i++) a[i] = (PetscScalar)((5 * i + 1) % C);
      PetscCall(VecRestoreArrayWrite(Lr, &a));
      PetscCall(LossEvaluate(loss, Y, L, &f, dY));
      PetscCall(LossEvaluate(lossref, Yr, Lr, &fr, dYr));
      lossv  = f;
      lossrv = fr;
      PetscCall(VecDestroy(&L));
      PetscCall(VecDestroy(&Lr));
    } else {
      PetscCall(VecWAXPY(dY, -1.0, T, Y));
      PetscCall(VecWAXPY(dYr, -1.0, Tr, Yr));
      PetscCall(VecDot(dY, dY, &lossv));
      PetscCall(VecDot(dYr, dYr, &lossrv));
    }
    if (verbose) PetscCall(PetscPrintf(comm, "batch of %" PetscInt_FMT ": loss %.15g (one rank %.15g)\n", N, (double)PetscRealPart(lossv), (double)PetscRealPart(lossrv)));
    d[1] = PetscAbsScalar(lossv - lossrv) / PetscMax(PetscAbsScalar(lossrv), 1e-300);
    /* the gradient and the input cotangent */
    PetscCall(VecDuplicate(X, &dX));
    PetscCall(VecDuplicate(Xr, &dXr));
    PetscCall(NetCreateParameterVec(net, &G));
    PetscCall(NetCreateParameterVec(ref, &Gr));
    PetscCall(VecZeroEntries(G));
    PetscCall(VecZeroEntries(Gr));
    PetscCall(NetBackward(net, dY, dX, G));
    PetscCall(NetBackward(ref, dYr, dXr, Gr));
    PetscCall(GatherAll(G, &Gall));
    PetscCall(RelDiffRows(PETSC_COMM_SELF, Gall, Gr, 0, &d[2]));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &d[2], 1, MPIU_REAL, MPIU_MAX, comm));
    PetscCall(RelDiffRows(comm, dX, dXr, start * insize, &d[3]));
    /* a JVP in the directions (dXin, dth) */
    PetscCall(VecDuplicate(X, &dXin));
    PetscCall(VecDuplicate(Xr, &dXinr));
    PetscCall(FillRows(dXin, start * insize, 2));
    PetscCall(FillRows(dXinr, 0, 2));
    PetscCall(NetCreateParameterVec(net, &dth));
    PetscCall(NetCreateParameterVec(ref, &dthr));
    {
      PetscInt rs;

      PetscCall(VecGetOwnershipRange(dth, &rs, NULL));
      PetscCall(FillRows(dth, rs, 3));
      PetscCall(FillRows(dthr, 0, 3));
    }
    PetscCall(VecDuplicate(Y, &dYj));
    PetscCall(VecDuplicate(Yr, &dYjr));
    PetscCall(NetJVP(net, dXin, dth, dYj));
    PetscCall(NetJVP(ref, dXinr, dthr, dYjr));
    PetscCall(RelDiffRows(comm, dYj, dYjr, start * outsize, &d[4]));
    d[5] = 0;
    if (testso) { /* after the JVP: Hv += the second-order adjoint with dYdot = dYj (Gauss-Newton-like) plus the curvature */
      Vec H, Hr, Hall;

      PetscCall(NetCreateParameterVec(net, &H));
      PetscCall(NetCreateParameterVec(ref, &Hr));
      PetscCall(VecZeroEntries(H));
      PetscCall(VecZeroEntries(Hr));
      PetscCall(NetSecondOrderBackward(net, dY, dYj, NULL, H));
      PetscCall(NetSecondOrderBackward(ref, dYr, dYjr, NULL, Hr));
      PetscCall(GatherAll(H, &Hall));
      PetscCall(RelDiffRows(PETSC_COMM_SELF, Hall, Hr, 0, &d[5]));
      PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &d[5], 1, MPIU_REAL, MPIU_MAX, comm));
      PetscCall(VecDestroy(&H));
      PetscCall(VecDestroy(&Hr));
      PetscCall(VecDestroy(&Hall));
    }
    if (verbose)
      PetscCall(PetscPrintf(comm, "batch of %" PetscInt_FMT ": relative differences output %.2e, loss %.2e, gradient %.2e, input cotangent %.2e, jvp %.2e, Hessian-vector %.2e\n", N, (double)d[0], (double)d[1], (double)d[2], (double)d[3],
                            (double)d[4], (double)d[5]));
    for (PetscInt i = 0; i < 6; i++) worst = PetscMax(worst, d[i]);
    if (memblocks >= 0 && batch == 0) PetscCall(TestStepMemory(net, X, Y, dY, dX, G, memblocks));
    if (testjac && batch == 0) {
      PetscReal dot, fd;

      PetscCall(NetTestJacobian(net, X, NULL, &dot, &fd));
      PetscCheck(dot <= 1e-12 && fd <= 1e-6, comm, PETSC_ERR_PLIB, "NetTestJacobian failed: dot-product %g, finite differences %g", (double)dot, (double)fd);
    }
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&Y));
    PetscCall(VecDestroy(&T));
    PetscCall(VecDestroy(&dY));
    PetscCall(VecDestroy(&dX));
    PetscCall(VecDestroy(&G));
    PetscCall(VecDestroy(&Gall));
    PetscCall(VecDestroy(&dXin));
    PetscCall(VecDestroy(&dth));
    PetscCall(VecDestroy(&dYj));
    PetscCall(VecDestroy(&Xr));
    PetscCall(VecDestroy(&Yr));
    PetscCall(VecDestroy(&Tr));
    PetscCall(VecDestroy(&dYr));
    PetscCall(VecDestroy(&dXr));
    PetscCall(VecDestroy(&Gr));
    PetscCall(VecDestroy(&dXinr));
    PetscCall(VecDestroy(&dthr));
    PetscCall(VecDestroy(&dYjr));
  }
  if (verbose) PetscCall(PetscPrintf(comm, "worst relative difference %.2e\n", (double)worst));
  PetscCheck(worst <= 1e-12, comm, PETSC_ERR_PLIB, "The model-parallel Net differs from the one-rank Net by %g relative (> 1e-12): run with -verbose", (double)worst);
  PetscCall(PetscPrintf(comm, "outputs, loss, gradient, input cotangent and JVP%s agree with one rank to <= 1e-12\n", testso ? ", Hessian-vector product" : ""));
  PetscCall(LossDestroy(&loss));
  PetscCall(LossDestroy(&lossref));
  PetscCall(VecDestroy(&thall));
  PetscCall(VecDestroy(&reftheta));
  PetscCall(NetDestroy(&ref));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
